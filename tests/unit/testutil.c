/*
 * testutil.c - helpers shared by the Check unit tests (see testutil.h).
 *
 * The scratch directory belongs to the process that made it: Check runs
 * each test in a forked child, so a child that asks first makes its own,
 * and removes it when it exits with status 0 (a failed test's files stay
 * for a look).  A directory the parent made before forking is inherited by
 * the children and removed by the parent alone, in tu_run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static char tmp_dir[256];
static pid_t tmp_owner;

static void tmp_remove(void)
{
	char cmd[300];

	if (!tmp_dir[0] || tmp_owner != getpid())
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp_dir);
	tmp_dir[0] = 0;
}

/* on_exit: a child that passed leaves nothing behind */
static void tmp_at_exit(int status, void *arg)
{
	(void)arg;
	if (status == 0)
		tmp_remove();
}

const char *tu_tmpdir(void)
{
	if (!tmp_dir[0]) {
		const char *t = getenv("TMPDIR");

		snprintf(tmp_dir, sizeof(tmp_dir), "%s/zlfs-test.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(tmp_dir)) {
			perror("mkdtemp");
			abort();
		}
		tmp_owner = getpid();
		on_exit(tmp_at_exit, NULL);
	}
	return tmp_dir;
}

char *tu_path(const char *name)
{
	char *p = malloc(512);

	if (!p)
		abort();
	snprintf(p, 512, "%s/%s", tu_tmpdir(), name);
	return p;
}

void tu_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

size_t tu_first_not(const void *buf, size_t len, uint8_t c)
{
	const uint8_t *p = buf;
	size_t i = 0;

	while (i < len && p[i] == c)
		i++;
	return i;
}

static uint64_t hash_word(uint64_t h, uint64_t w)
{
	h ^= w;
	return ((h << 29) | (h >> 35)) * 0x100000001b3ull;
}

uint64_t tu_file_hash(const char *path)
{
	size_t bufsz = 1 << 20;
	uint64_t *buf = malloc(bufsz), h = 0xcbf29ce484222325ull;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t pos = 0;

	ck_assert_ptr_nonnull(buf);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	for (;;) {
		off_t data = lseek(fd, pos, SEEK_DATA), end;

		if (data < 0) {
			ck_assert_msg(errno == ENXIO, "%s: SEEK_DATA: %s", path, strerror(errno));
			break;
		}
		end = lseek(fd, data, SEEK_HOLE);
		ck_assert_msg(end > data, "%s: SEEK_HOLE: %s", path, strerror(errno));
		h = hash_word(h, (uint64_t)data);
		for (pos = data; pos < end;) {
			size_t want = (size_t)(end - pos) < bufsz ? (size_t)(end - pos) : bufsz;
			ssize_t n = pread(fd, buf, want, pos);

			ck_assert_msg(n > 0, "%s: read at %lld: %s", path, (long long)pos,
				      n < 0 ? strerror(errno) : "end of file");
			memset((char *)buf + n, 0, (size_t)(-n & 7));  /* a ragged tail, zero-padded */
			for (size_t i = 0; i < ((size_t)n + 7) / 8; i++)
				h = hash_word(h, buf[i]);
			pos += n;
		}
	}
	h = hash_word(h, (uint64_t)lseek(fd, 0, SEEK_END));
	close(fd);
	free(buf);
	return h;
}

int tu_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	/* leave the scratch directory if something failed, for a look */
	if (!failed)
		tmp_remove();
	return failed ? 1 : 0;
}
