/*
 * test_file.c - file contents (fs/file.c) on a mounted volume without
 * FUSE: an image made by mkfs.zlfs (ZLFS_MKFS names the binary; meson
 * passes it).
 *
 * Covers zlfs_file_read, which reads whole blocks straight into the
 * caller's buffer and only partial first and last blocks through a bounce
 * buffer: every offset and length pattern (aligned, inside one block,
 * across blocks, ending at and past EOF, across holes) returns exactly the
 * bytes written; and a sequential run of blocks adjacent on the device is
 * read with one device command per run, not one per block (the cause of
 * slow sequential reads through the mount: issue 9).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "testutil.h"
#include "fsutil.h"

#define NBLK 600u    /* past the inode's own slots: direct nodes too */

static struct zlfs_sb *mount_volume(const char *img)
{
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	char err[256];

	memset(&o, 0, sizeof(o));
	zlfs_disp_opts_default(&o.disp);
	zlfs_gc_opts_default(&o.gc);
	o.gc.mode = ZLFS_GC_OFF;
	ck_assert_msg(zlfs_mount(img, &o, &sbi, err, sizeof(err)) == 0, "mount: %s", err);
	return sbi;
}

static uint64_t dispatched(struct zlfs_sb *sbi)
{
	struct zlfs_disp_stats st;
	zlfs_disp_stats(sbi->disp, &st);
	return st.dispatched;
}

/* Byte i of the file: holes (blocks 100-109 never written) read as zeros. */
static uint8_t expect(uint64_t i)
{
	uint64_t b = i / ZF_BLKSIZE;
	if (b >= 100 && b < 110)
		return 0;
	return (uint8_t)(i * 131 + (i >> 12) * 7 + 1);
}

/* expect() for every byte of the file */
static uint8_t *model;

/* Every read of [off, off+len) gives what expect() says, cut at size. */
static void check_read(struct zlfs_sb *sbi, struct zinode *zi, uint64_t size, uint64_t off,
		       size_t len)
{
	char *got = malloc(len + 1);
	size_t n = 12345;

	/* an odd address: the reads go to whatever buffer FUSE hands over */
	ck_assert_int_eq(zlfs_file_read(sbi, zi, got + 1, len, off, &n), 0);
	size_t want = off >= size ? 0 : (size - off < len ? (size_t)(size - off) : len);
	ck_assert_msg(n == want, "read %llu+%zu: got %zu bytes, want %zu", (unsigned long long)off,
		      len, n, want);
	if (n && memcmp(got + 1, model + off, n)) {
		size_t i = 0;
		while ((uint8_t)got[1 + i] == model[off + i])
			i++;
		ck_abort_msg("read %llu+%zu: byte %zu differs", (unsigned long long)off, len, i);
	}
	free(got);
}

START_TEST(test_read_patterns)
{
	char *img = tu_fs_volume("read.img");
	struct zlfs_sb *sbi = mount_volume(img);
	struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *zi;
	/* a size that ends inside a block */
	uint64_t size = (uint64_t)NBLK * ZF_BLKSIZE - 1000;
	uint8_t *data = malloc(size);

	for (uint64_t i = 0; i < size; i++)
		data[i] = expect(i);
	model = data;
	pthread_mutex_lock(&sbi->lock);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "f", S_IFREG | 0644, 0, NULL, &zi), 0);
	zi->nopen++;
	/* in pieces around the hole, some unaligned */
	ck_assert_int_eq(zlfs_file_write(sbi, zi, (char *)data, 100 * ZF_BLKSIZE, 0), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, (char *)data + 110 * ZF_BLKSIZE, 3333,
					 110 * ZF_BLKSIZE), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, (char *)data + 110 * ZF_BLKSIZE + 3333,
					 size - 110 * ZF_BLKSIZE - 3333, 110 * ZF_BLKSIZE + 3333), 0);
	static const struct { uint64_t off; size_t len; } pat[] = {
		{ 0, ZF_BLKSIZE }, { 0, 1 }, { 1, 1 }, { 4095, 2 }, { 100, 300 },
		{ 4096, 128 * 1024 }, { 777, 128 * 1024 }, { 0, 1 << 20 }, { 12345, 1 << 20 },
		{ 98 * 4096 + 5, 20 * 4096 }, { 100 * 4096, 10 * 4096 }, { 105 * 4096 + 1, 100 },
		{ 109 * 4096 + 4000, 200 }, { (NBLK - 2) * 4096ull, 3 * 4096 },
		{ (NBLK - 1) * 4096ull + 10, 4096 }, { (NBLK + 5) * 4096ull, 4096 },
	};
	for (size_t k = 0; k < sizeof(pat) / sizeof(pat[0]); k++)
		check_read(sbi, zi, size, pat[k].off, pat[k].len);
	/* the whole file, and again after a checkpoint moved nothing */
	check_read(sbi, zi, size, 0, size + 4096);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	check_read(sbi, zi, size, 3, size);
	zi->nopen--;
	zlfs_iput(sbi, zi, 0);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	free(data);
	free(img);
}
END_TEST

/*
 * 256 blocks written in one call land adjacent in one zone (or two, when
 * the log crosses a zone); reading them back takes one command per run.
 * Before the fix every block was its own command: 256 here.
 */
START_TEST(test_read_one_command_per_run)
{
	char *img = tu_fs_volume("runs.img");
	struct zlfs_sb *sbi = mount_volume(img);
	struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *zi;
	size_t len = 256 * ZF_BLKSIZE;
	char *data = malloc(len), *got = malloc(len);
	size_t n;

	tu_fill(data, len, 9);
	pthread_mutex_lock(&sbi->lock);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "f", S_IFREG | 0644, 0, NULL, &zi), 0);
	zi->nopen++;
	ck_assert_int_eq(zlfs_file_write(sbi, zi, data, len, 0), 0);
	uint64_t before = dispatched(sbi);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, got, len, 0, &n), 0);
	uint64_t cmds = dispatched(sbi) - before;
	ck_assert_uint_eq(n, len);
	ck_assert(!memcmp(data, got, len));
	ck_assert_msg(cmds >= 1 && cmds <= 2, "256 adjacent blocks read with %llu commands",
		      (unsigned long long)cmds);
	/* an unaligned read of the same: the edges bounce, the middle is one run */
	before = dispatched(sbi);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, got, len - 8192, 4000, &n), 0);
	cmds = dispatched(sbi) - before;
	ck_assert_uint_eq(n, len - 8192);
	ck_assert(!memcmp(data + 4000, got, len - 8192));
	/* the edges are commands of their own: 3, 4 across a zone */
	ck_assert_msg(cmds >= 3 && cmds <= 4, "unaligned read of 255 blocks took %llu commands",
		      (unsigned long long)cmds);
	zi->nopen--;
	zlfs_iput(sbi, zi, 0);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	free(data);
	free(got);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("file");
	TCase *tc = tcase_create("read");

	tcase_add_test(tc, test_read_patterns);
	tcase_add_test(tc, test_read_one_command_per_run);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
