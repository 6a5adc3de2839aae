/*
 * test_shutdown.c - the going-down ioctl's work (fs/shutdown.c) in-process,
 * on volumes made by mkfs.zlfs and judged by fsck.f2fs: after a stop
 * nothing reaches the device (the image's bytes stay as they were when the
 * call returned, through later operations and the unmount), every
 * operation fails with EIO, and the next mount finds exactly a crash
 * state: what was fsynced (NOSYNC) or what the daemon held (METASYNC,
 * which checkpoints first), nothing else.  NEED_FSCK leaves the volume
 * working with CP_FSCK_FLAG in every later checkpoint, and fsck.zlfs
 * checks such a volume without -f.  tests/xfstests runs the xfstests that
 * use the ioctl through FUSE (godown, xfs_io -c shutdown).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "shutdown.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "dir.h"
#include "testutil.h"
#include "fsutil.h"

static const struct zlfs_cred cred = { 0, 0, 022 };

/* A new file name in the root with len bytes of pattern c; fsynced if asked. */
static void make_file(struct zlfs_sb *sbi, const char *name, size_t len, char c, bool fsync)
{
	struct zinode *zi;
	char *buf = malloc(len);

	ck_assert_ptr_nonnull(buf);
	memset(buf, c, len);
	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, name, S_IFREG | 0644, 0, NULL, &zi), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, buf, len, 0), 0);
	if (fsync)
		ck_assert_int_eq(zlfs_file_fsync(sbi, zi, false), 0);
	zlfs_iput(sbi, zi, 0);
	free(buf);
}

/* name exists in the root with len bytes of c. */
static void expect_file(struct zlfs_sb *sbi, const char *name, size_t len, char c)
{
	struct zinode *zi;
	char *buf = malloc(len + 1);
	size_t got = 0;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(zlfs_iget(sbi, tu_lookup(sbi, ZF_ROOT_INO, name), &zi), 0);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(zi)->i_size), len);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, buf, len + 1, 0, &got), 0);
	ck_assert_uint_eq(got, len);
	size_t i = tu_first_not(buf, len, (uint8_t)c);
	ck_assert_msg(i == len, "%s: byte %zu is %d, not %d", name, i, buf[i], c);
	free(buf);
}

static bool present(struct zlfs_sb *sbi, const char *name)
{
	struct zinode *d;
	uint32_t ino;
	uint8_t ft;

	ck_assert_int_eq(zlfs_iget(sbi, ZF_ROOT_INO, &d), 0);
	int ret = zlfs_dir_lookup(sbi, d, name, strlen(name), &ino, &ft);
	ck_assert_msg(ret == 0 || ret == -ENOENT, "lookup %s: %d", name, ret);
	return ret == 0;
}

/* The whole image, to compare before and after. */
static char *slurp(const char *img, size_t *len)
{
	int fd = open(img, O_RDONLY);
	struct stat st;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	char *buf = malloc((size_t)st.st_size);
	ck_assert_ptr_nonnull(buf);
	size_t done = 0;
	while (done < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + done, (size_t)st.st_size - done, (off_t)done);
		ck_assert_int_gt(n, 0);
		done += (size_t)n;
	}
	close(fd);
	*len = done;
	return buf;
}

START_TEST(test_nosync)
{
	char *img = tu_fs_volume("shutdown-nosync.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	make_file(sbi, "old", 5000, 'o', false);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	make_file(sbi, "kept", 3 * ZF_BLKSIZE + 17, 'k', true);
	make_file(sbi, "lost", 2 * ZF_BLKSIZE, 'l', false);

	ck_assert(!zlfs_is_shut_down(sbi));
	ck_assert_int_eq(zlfs_shutdown(sbi, ZLFS_GOING_DOWN_NOSYNC), 0);
	ck_assert(zlfs_is_shut_down(sbi));
	ck_assert_int_eq(zlfs_writable(sbi), -EIO);
	ck_assert_int_eq(zlfs_shutdown(sbi, ZLFS_GOING_DOWN_METASYNC), 0);   /* once is enough */
	size_t len0, len1;
	char *before = slurp(img, &len0);
	/* what would write now finds the device closed to it */
	ck_assert_int_ne(zlfs_checkpoint(sbi, false), 0);
	struct zinode *zi;
	ck_assert_int_eq(zlfs_iget(sbi, tu_lookup(sbi, ZF_ROOT_INO, "lost"), &zi), 0);
	ck_assert_int_ne(zlfs_file_fsync(sbi, zi, false), 0);
	tu_fs_unmount(sbi);   /* no final checkpoint: 0 all the same */
	char *after = slurp(img, &len1);
	ck_assert_uint_eq(len0, len1);
	ck_assert_msg(!memcmp(before, after, len0), "the device changed after the shutdown");
	free(before);
	free(after);

	tu_fsck_clean(img);   /* a crash state with its fsync chain */
	sbi = tu_fs_mount(img, 0);   /* rolls the chain forward */
	expect_file(sbi, "old", 5000, 'o');
	expect_file(sbi, "kept", 3 * ZF_BLKSIZE + 17, 'k');
	ck_assert(!present(sbi, "lost"));
	ck_assert(!zlfs_is_shut_down(sbi));
	ck_assert_int_eq(zlfs_writable(sbi), 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

START_TEST(test_metasync)
{
	char *img = tu_fs_volume("shutdown-metasync.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	make_file(sbi, "held", 70000, 'h', false);   /* never fsynced: the checkpoint carries it */
	ck_assert_int_eq(zlfs_shutdown(sbi, ZLFS_GOING_DOWN_METASYNC), 0);
	ck_assert(zlfs_is_shut_down(sbi));
	ck_assert_int_eq(zlfs_writable(sbi), -EIO);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	sbi = tu_fs_mount(img, 0);
	expect_file(sbi, "held", 70000, 'h');
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/*
 * A volume without zones: its logs have no write pointer to say where the
 * writes after the checkpoint end, so the mount that rolls an fsync chain
 * forward must not let a log go on at the checkpoint's position, over the
 * data and nodes the chain claimed (found by xfstests generic/388 on a
 * loop device).  The fsynced file must survive what is written after.
 */
START_TEST(test_conventional_rollforward)
{
	char *img = tu_fs_volume_flat("shutdown-conv.img");

	for (int round = 0; round < 3; round++) {
		char name[32];
		struct zlfs_sb *sbi = tu_fs_mount(img, 0);
		snprintf(name, sizeof(name), "synced%d", round);
		make_file(sbi, name, 300 * 1024 + round, (char)('a' + round), true);
		ck_assert_int_eq(zlfs_shutdown(sbi, ZLFS_GOING_DOWN_NOSYNC), 0);
		tu_fs_unmount(sbi);
		tu_fsck_clean(img);

		sbi = tu_fs_mount(img, 0);   /* rolls it forward and checkpoints */
		snprintf(name, sizeof(name), "after%d", round);
		make_file(sbi, name, 2 << 20, 'z', true);   /* more than the chain held */
		ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
		for (int r = 0; r <= round; r++) {
			snprintf(name, sizeof(name), "synced%d", r);
			expect_file(sbi, name, 300 * 1024 + r, (char)('a' + r));
		}
		tu_fs_unmount(sbi);
		tu_fsck_clean(img);
	}
	free(img);
}
END_TEST

/* fsck.zlfs -n (no -f) on img: its exit status, and whether it walked the tree. */
static int fsck_n(const char *img, bool *walked)
{
	const char *exe = getenv("ZLFS_FSCK");
	char cmd[4096], line[512];

	ck_assert_msg(exe && *exe, "ZLFS_FSCK not set");
	snprintf(cmd, sizeof(cmd), "'%s' -n '%s' 2>&1", exe, img);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	*walked = false;
	while (fgets(line, sizeof(line), p))
		if (strstr(line, " problems"))
			*walked = true;
	int st = pclose(p);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

START_TEST(test_need_fsck)
{
	char *img = tu_fs_volume("shutdown-fsck.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	bool walked;

	tu_fs_unmount(sbi);
	ck_assert_int_eq(fsck_n(img, &walked), 0);
	ck_assert_msg(!walked, "a clean volume was checked without -f");

	sbi = tu_fs_mount(img, 0);
	ck_assert(!sbi->need_fsck);
	ck_assert_int_eq(zlfs_shutdown(sbi, 7), -EINVAL);
	ck_assert_int_eq(zlfs_shutdown(sbi, ZLFS_GOING_DOWN_NEED_FSCK), 0);
	ck_assert(!zlfs_is_shut_down(sbi));   /* it asks for fsck, it does not stop */
	ck_assert_int_eq(zlfs_writable(sbi), 0);
	make_file(sbi, "after", 100, 'a', false);
	tu_fs_unmount(sbi);
	/* the flag survives later checkpoints, the unmount's included */
	sbi = tu_fs_mount(img, 0);
	ck_assert(sbi->need_fsck);
	expect_file(sbi, "after", 100, 'a');
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	tu_fs_unmount(sbi);
	ck_assert_int_eq(fsck_n(img, &walked), 0);
	ck_assert_msg(walked, "fsck.zlfs skipped a volume whose checkpoint asks for a check");
	tu_fsck_clean(img);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shutdown");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_nosync);
	tcase_add_test(tc, test_metasync);
	tcase_add_test(tc, test_need_fsck);
	tcase_add_test(tc, test_conventional_rollforward);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
