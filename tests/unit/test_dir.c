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
 *     entry's next position continues the walk;
 *   - inline dentries (new directories start inline): names added, looked
 *     up, removed and changed in the inode while they fit, i_size the
 *     area's size; the first that does not fit converts the directory to a
 *     dentry block (i_size a block, a cookie taken before still good);
 *     with dir_level > 0 every name is hashed in anew; noinline_dentry
 *     makes block directories; remount and fsck.f2fs (hash placement).
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

static bool has(struct zlfs_sb *sbi, struct zinode *dir, const char *name)
{
	uint32_t ino;
	uint8_t ft;
	int ret = zlfs_dir_lookup(sbi, dir, name, strlen(name), &ino, &ft);

	ck_assert(ret == 0 || ret == -ENOENT);
	return ret == 0;
}

static uint32_t count(struct zlfs_sb *sbi, struct zinode *dir)
{
	static struct seen s;

	memset(&s, 0, sizeof(s));
	s.max = NFILES + 2;
	ck_assert_int_eq(zlfs_dir_iterate(sbi, dir, 0, collect, &s), 0);
	return s.n;
}

/*
 * Fill directory d (inline, room for nr slots, `had` 1-slot names in it
 * besides the dots) to the brim with 1-slot names, then one more.
 */
static void fill_and_convert(struct zlfs_sb *sbi, uint32_t d, unsigned int nr, unsigned int had)
{
	struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *dir, *zi;
	char name[16];

	for (unsigned int i = 0; i < nr - 2 - had; i++) {
		snprintf(name, sizeof(name), "n%05u", i);
		ck_assert_int_eq(zlfs_create(sbi, &c, d, name, S_IFREG | 0644, 0, NULL, &zi), 0);
		zlfs_iput(sbi, zi, 0);
	}
	ck_assert_int_eq(zlfs_iget(sbi, d, &dir), 0);
	ck_assert(zi_raw(dir)->i_inline & ZF_INLINE_DENTRY);
	ck_assert_uint_eq(count(sbi, dir), nr);
	ck_assert_int_eq(zlfs_create(sbi, &c, d, "one-more", S_IFREG | 0644, 0, NULL, &zi), 0);
	zlfs_iput(sbi, zi, 0);
	ck_assert(!(zi_raw(dir)->i_inline & ZF_INLINE_DENTRY));
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(dir)->i_size) % ZF_BLKSIZE, 0);
	ck_assert_uint_eq(count(sbi, dir), nr + 1);
	for (unsigned int i = 0; i < nr - 2 - had; i++) {
		snprintf(name, sizeof(name), "n%05u", i);
		ck_assert_msg(has(sbi, dir, name), "%s lost in the conversion", name);
	}
	ck_assert(has(sbi, dir, "one-more") && has(sbi, dir, ".") && has(sbi, dir, ".."));
}

START_TEST(test_inline_dentries)
{
	char *img = tu_fs_volume("dir-inline.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *dir, *zi;
	struct zf_ishape sh;
	static struct seen s, one;
	unsigned int nr, bm, rsv;

	/* a new directory: . and .. in the inode, i_size the inline area */
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "d", S_IFDIR | 0755, 0, NULL, &dir), 0);
	uint32_t d = dir->ino;
	struct zf_inode *ri = zi_raw(dir);
	zf_inode_shape(ri, zlfs_feat(sbi), &sh);
	zf_inline_dentry_geom(sh.inline_max, &nr, &bm, &rsv);
	ck_assert(ri->i_inline & ZF_INLINE_DENTRY);
	ck_assert_uint_eq(zf_le64_to_cpu(ri->i_size), sh.inline_max);
	ck_assert_uint_eq(zf_le64_to_cpu(ri->i_blocks), 1);
	ck_assert_uint_eq(count(sbi, dir), 2);
	/* add, remove, change in place */
	ck_assert_int_eq(zlfs_create(sbi, &c, d, "x", S_IFREG | 0644, 0, NULL, &zi), 0);
	uint32_t xi = zi->ino;
	zlfs_iput(sbi, zi, 0);
	ck_assert(has(sbi, dir, "x"));
	ck_assert_int_eq(zlfs_dir_set(sbi, dir, "x", 1, ZF_ROOT_INO, ZF_FT_DIR), 0);
	uint32_t ino;
	uint8_t ft;
	ck_assert_int_eq(zlfs_dir_lookup(sbi, dir, "x", 1, &ino, &ft), 0);
	ck_assert(ino == ZF_ROOT_INO && ft == ZF_FT_DIR);
	ck_assert_int_eq(zlfs_dir_set(sbi, dir, "x", 1, xi, ZF_FT_REG_FILE), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, d, "x", false), 0);
	ck_assert(!has(sbi, dir, "x"));
	ck_assert(zi_raw(dir)->i_inline & ZF_INLINE_DENTRY);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(dir)->i_blocks), 1);
	zlfs_iput(sbi, dir, 0);

	/* full, then one more: converted; a cookie from before the conversion still continues */
	for (unsigned int i = 0; i < 10; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%05u", 100000 + i);
		ck_assert_int_eq(zlfs_create(sbi, &c, d, name, S_IFREG | 0644, 0, NULL, &zi), 0);
		zlfs_iput(sbi, zi, 0);
	}
	ck_assert_int_eq(zlfs_iget(sbi, d, &dir), 0);
	memset(&s, 0, sizeof(s));
	s.max = 6;
	ck_assert_int_eq(zlfs_dir_iterate(sbi, dir, 0, collect, &s), 0);
	for (unsigned int i = 0; i < 10; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%05u", 100000 + i);
		ck_assert_int_eq(zlfs_unlink(sbi, d, name, false), 0);
	}
	/* the same names again, in the same slots (first fit) */
	for (unsigned int i = 0; i < 10; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%05u", 100000 + i);
		ck_assert_int_eq(zlfs_create(sbi, &c, d, name, S_IFREG | 0644, 0, NULL, &zi), 0);
		zlfs_iput(sbi, zi, 0);
	}
	fill_and_convert(sbi, d, nr, 10);
	memset(&one, 0, sizeof(one));
	one.max = 1;
	ck_assert_int_eq(zlfs_dir_iterate(sbi, dir, s.next[4], collect, &one), 0);
	ck_assert_str_eq(one.names[0], s.names[5]);

	/* dir_level 3 (the kernel's dir_level= option): the conversion hashes each name in */
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "e", S_IFDIR | 0755, 0, NULL, &dir), 0);
	uint32_t e = dir->ino;
	zi_raw(dir)->i_dir_level = 3;
	zlfs_inode_dirty(sbi, dir);
	zlfs_iput(sbi, dir, 0);
	fill_and_convert(sbi, e, nr, 0);
	ck_assert_int_eq(zlfs_iget(sbi, e, &dir), 0);
	ck_assert_uint_gt(zf_le64_to_cpu(zi_raw(dir)->i_size), ZF_BLKSIZE);   /* 8 buckets at level 0 */
	zlfs_iput(sbi, dir, 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	/* a remount finds every name; noinline_dentry makes a block directory */
	tu_noinline = true;
	sbi = tu_fs_mount(img, 0);
	ck_assert_int_eq(zlfs_iget(sbi, e, &dir), 0);
	ck_assert_uint_eq(count(sbi, dir), nr + 1);
	ck_assert_int_eq(zlfs_iget(sbi, d, &dir), 0);
	ck_assert_uint_eq(count(sbi, dir), nr + 1);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "f", S_IFDIR | 0755, 0, NULL, &dir), 0);
	ck_assert(!(zi_raw(dir)->i_inline & ZF_INLINE_DENTRY));
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(dir)->i_size), ZF_BLKSIZE);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(dir)->i_blocks), 2);
	zlfs_iput(sbi, dir, 0);
	tu_fs_unmount(sbi);
	tu_noinline = false;
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
	tcase_add_test(tc, test_inline_dentries);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
