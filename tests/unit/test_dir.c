/*
 * test_dir.c - directory entries (fs/dir.c) in-process, on a volume made
 * by mkfs.zlfs and judged by fsck.f2fs.
 *
 * Covers:
 *   - readdir from any position: a cookie comes from the caller's telldir or
 *     lseek and may point into the middle of a long name; every position up
 *     to past the end must give whole entries or nothing, never an error and
 *     never read-only (a seekdir to such a position made zlfs read-only:
 *     xfstests generic/676);
 *   - a walk from position 0 returns every name exactly once, and each
 *     entry's next position continues the walk.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zlfs.h"
#include "inode.h"
#include "namei.h"
#include "dir.h"
#include "testutil.h"
#include "fsutil.h"

#define NFILES 300

struct seen {
	char names[NFILES + 2][ZF_NAME_LEN + 1];
	uint64_t next[NFILES + 2];
	unsigned int n, max;
};

static int collect(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t ft,
		   uint64_t next)
{
	struct seen *s = ctx;

	(void)ino;
	(void)ft;
	if (s->n == s->max)
		return 1;
	ck_assert_uint_le(len, ZF_NAME_LEN);
	memcpy(s->names[s->n], name, len);
	s->names[s->n][len] = '\0';
	s->next[s->n] = next;
	s->n++;
	return 0;
}

/* file i's name: 3 to 200 characters, so most take several slots; unique by its first three */
static void name_of(unsigned int i, char *buf)
{
	unsigned int len = 3 + (i * 37) % 198;

	snprintf(buf, 4, "%03u", i);
	for (unsigned int k = 3; k < len; k++)
		buf[k] = (char)('a' + (i + k) % 26);
	buf[len] = '\0';
}

START_TEST(test_any_position)
{
	char *img = tu_fs_volume("dir-positions.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *dir, *zi;
	char name[ZF_NAME_LEN + 1];
	static struct seen s;

	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "d", S_IFDIR | 0755, 0, NULL, &dir), 0);
	uint32_t d = dir->ino;
	zlfs_iput(sbi, dir, 0);
	for (unsigned int i = 0; i < NFILES; i++) {
		name_of(i, name);
		ck_assert_int_eq(zlfs_create(sbi, &c, d, name, S_IFREG | 0644, 0, NULL, &zi), 0);
		zlfs_iput(sbi, zi, 0);
	}
	ck_assert_int_eq(zlfs_iget(sbi, d, &dir), 0);

	/* the whole walk: ".", "..", every name once */
	memset(&s, 0, sizeof(s));
	s.max = NFILES + 2;
	ck_assert_int_eq(zlfs_dir_iterate(sbi, dir, 0, collect, &s), 0);
	ck_assert_uint_eq(s.n, NFILES + 2);
	for (unsigned int i = 0; i < NFILES; i++) {
		name_of(i, name);
		unsigned int found = 0;
		for (unsigned int k = 0; k < s.n; k++)
			found += !strcmp(s.names[k], name);
		ck_assert_msg(found == 1, "%s seen %u times", name, found);
	}
	/* one entry at a time, from each entry's next position, is the same walk */
	static struct seen one;
	uint64_t pos = 0;
	for (unsigned int k = 0; k < s.n; k++) {
		memset(&one, 0, sizeof(one));
		one.max = 1;
		ck_assert_int_eq(zlfs_dir_iterate(sbi, dir, pos, collect, &one), 0);
		ck_assert_uint_eq(one.n, 1);
		ck_assert_str_eq(one.names[0], s.names[k]);
		pos = one.next[0];
	}

	/* every position up to well past the end: whole entries or nothing, never an error */
	uint64_t last = s.next[s.n - 1];
	uint64_t blocks = ((last - 1) >> 16) + 2;
	for (uint64_t b = 0; b < blocks; b++)
		for (uint64_t slot = 0; slot < 220; slot++) {
			memset(&one, 0, sizeof(one));
			one.max = 1;
			pos = ((b << 16) | slot) + 1;
			ck_assert_int_eq(zlfs_dir_iterate(sbi, dir, pos, collect, &one), 0);
			if (!one.n)
				continue;
			unsigned int found = 0;
			for (unsigned int k = 0; k < s.n; k++)
				found += !strcmp(s.names[k], one.names[0]);
			ck_assert_msg(found == 1, "position %llu gave \"%s\"", (unsigned long long)pos,
				      one.names[0]);
		}
	ck_assert_int_eq(sbi->fatal, 0);
	ck_assert_int_eq(zlfs_writable(sbi), 0);
	zlfs_iput(sbi, dir, 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dir");
	TCase *tc = tcase_create("readdir");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_any_position);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
