/*
 * fhandle.c - file handles through a zlfs mount, for tests/fs/check-mount.sh.
 *
 *   fhandle save PATH HANDLEFILE   name_to_handle_at(PATH) into HANDLEFILE
 *   fhandle open MOUNTDIR HANDLEFILE
 *                                  open_by_handle_at and print the first
 *                                  line of the file; exit 1 on failure,
 *                                  2 if the handle is stale (ESTALE)
 *
 * Needs CAP_DAC_READ_SEARCH (root).  The handle is opaque: zlfs's inode
 * number and generation, which the kernel turns back into an inode by
 * looking up "." in it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} h;
	int mnt_id;

	if (argc != 4) {
		fprintf(stderr, "usage: fhandle save PATH HANDLEFILE | open MOUNTDIR HANDLEFILE\n");
		return 1;
	}
	if (!strcmp(argv[1], "save")) {
		h.fh.handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(AT_FDCWD, argv[2], &h.fh, &mnt_id, 0) < 0) {
			perror("name_to_handle_at");
			return 1;
		}
		FILE *f = fopen(argv[3], "wb");
		if (!f || fwrite(&h, sizeof(h.fh) + h.fh.handle_bytes, 1, f) != 1 || fclose(f)) {
			perror(argv[3]);
			return 1;
		}
		return 0;
	}
	FILE *f = fopen(argv[3], "rb");
	if (!f || fread(&h, 1, sizeof(h), f) < sizeof(h.fh)) {
		perror(argv[3]);
		return 1;
	}
	fclose(f);
	int mfd = open(argv[2], O_RDONLY | O_DIRECTORY);
	if (mfd < 0) {
		perror(argv[2]);
		return 1;
	}
	int fd = open_by_handle_at(mfd, &h.fh, O_RDONLY);
	if (fd < 0) {
		int e = errno;
		perror("open_by_handle_at");
		return e == ESTALE ? 2 : 1;
	}
	char line[256];
	ssize_t n = read(fd, line, sizeof(line) - 1);
	if (n < 0) {
		perror("read");
		return 1;
	}
	line[n] = 0;
	line[strcspn(line, "\n")] = 0;
	puts(line);
	close(fd);
	close(mfd);
	return 0;
}
