/*
 * test_acache.c - the attribute cache (fs/acache.c) and zlfs_inode_attr,
 * on a volume made by mkfs.zlfs, mounted in-process without FUSE, with
 * cache_mb=8 so that a few thousand inodes overflow the node cache.
 *
 * Covers:
 *   - inode blocks the node cache drops leave their attributes behind:
 *     stat of every file from them is what it was (mode, size, blocks,
 *     times, links, owner), the "no xattrs" mark right for files with and
 *     without one, and no node is read to answer;
 *   - never stale: a file changed after its attributes were cached
 *     (truncate, chmod, an xattr set or removed) answers with the change,
 *     before and after its block is dropped again;
 *   - a file unlinked while only its attributes were cached answers no
 *     more (its nid is free);
 *   - the cache holds no more than its share of cache_mb, and with more
 *     inodes than that every answer is still right;
 *   - after a remount everything answers the same; fsck.f2fs is clean;
 *   - st_blocks of inline data and inline dentries is what the kernel's
 *     f2fs shows: the sectors the inline bytes fill.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "node.h"
#include "acache.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "xattr.h"
#include "testutil.h"
#include "fsutil.h"

#define NFILES 3000

/* Clean every node, then drop all but a few from the node cache. */
static void evict(struct zlfs_sb *sbi)
{
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	zlfs_inode_unload(sbi, UINT32_MAX);
	zlfs_node_shrink(sbi, 16);
}

static void same_stat(const struct stat *a, const struct stat *b, int i)
{
	ck_assert_msg(a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
		      a->st_nlink == b->st_nlink && a->st_uid == b->st_uid &&
		      a->st_gid == b->st_gid && a->st_size == b->st_size &&
		      a->st_blocks == b->st_blocks &&
		      a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
		      a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
		      a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
		      a->st_ctim.tv_nsec == b->st_ctim.tv_nsec &&
		      a->st_atim.tv_nsec == b->st_atim.tv_nsec,
		      "file %d: stat differs (mode %o/%o size %lld/%lld)", i, a->st_mode, b->st_mode,
		      (long long)a->st_size, (long long)b->st_size);
}

static struct stat want[NFILES];
static uint32_t inos[NFILES];

/* Every file answers as recorded, from the attribute cache when not cached as a node. */
static void check_all(struct zlfs_sb *sbi, bool from_cache)
{
	uint32_t nodes = sbi->nr_nodes;

	for (int i = 0; i < NFILES; i++) {
		struct zattr a;
		struct stat st;
		ck_assert_int_eq(zlfs_inode_attr(sbi, inos[i], &a), 0);
		zlfs_attr_stat(&a, &st);
		same_stat(&st, &want[i], i);
		ck_assert_msg(a.no_xattr == (i % 7 != 0), "file %d: no_xattr %d", i, a.no_xattr);
	}
	if (from_cache)   /* nothing read back into the node cache */
		ck_assert_uint_eq(sbi->nr_nodes, nodes);
}

/* Files 1, 2, 7 and 8, changed after their attributes were cached, answer with the change. */
static void check_changed(struct zlfs_sb *sbi)
{
	static const int changed[] = { 1, 2, 7, 8 };

	for (size_t k = 0; k < sizeof(changed) / sizeof(changed[0]); k++) {
		int i = changed[k];
		struct zattr a;
		struct stat st;
		ck_assert_int_eq(zlfs_inode_attr(sbi, inos[i], &a), 0);
		zlfs_attr_stat(&a, &st);
		same_stat(&st, &want[i], i);
		ck_assert_int_eq(a.no_xattr, i == 7 || (i != 8 && i % 7 != 0));
	}
}

START_TEST(test_attrs)
{
	char *img = tu_fs_volume("attrs.img");
	struct zlfs_sb *sbi;
	struct zinode *zi, *d;
	struct zlfs_cred c = { 0, 0, 022 };
	char name[64];

	sbi = tu_fs_mount(img, 8);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "d", S_IFDIR | 0755, 0, NULL, &d), 0);
	uint32_t dino = d->ino;
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(zlfs_create(sbi, &c, dino, name, S_IFREG | 0600 | (i % 8), 0, NULL,
					     &zi), 0);
		inos[i] = zi->ino;
		if (i % 5 == 0)
			ck_assert_int_eq(zlfs_file_truncate(sbi, zi, (uint64_t)i * 1000 + 1), 0);
		if (i % 7 == 0)
			ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.k", "v", 1, 0), 0);
		zlfs_inode_stat(sbi, zi, &want[i]);
		zlfs_iput(sbi, zi, 0);
	}
	evict(sbi);
	uint32_t cap = 8u * 1024 * 1024 / 8 / zlfs_acache_entry_bytes();
	ck_assert_uint_ge(zlfs_acache_count(sbi), NFILES - 16);   /* 16 nodes stay */
	ck_assert_uint_le(zlfs_acache_count(sbi), cap);
	check_all(sbi, true);

	/* changes after caching: the node comes back, the cached attributes go */
	uint32_t before = zlfs_acache_count(sbi);
	ck_assert_int_eq(zlfs_iget(sbi, inos[1], &zi), 0);
	ck_assert_uint_eq(zlfs_acache_count(sbi), before - 1);
	ck_assert_int_eq(zlfs_file_truncate(sbi, zi, 12345), 0);
	zlfs_inode_stat(sbi, zi, &want[1]);
	zlfs_iput(sbi, zi, 0);
	ck_assert_int_eq(zlfs_iget(sbi, inos[2], &zi), 0);
	zi_raw(zi)->i_mode = zf_cpu_to_le16(S_IFREG | 0751);
	zlfs_inode_touch(zi, false, true, false);
	zlfs_inode_dirty(sbi, zi);
	zlfs_inode_stat(sbi, zi, &want[2]);
	zlfs_iput(sbi, zi, 0);
	ck_assert_int_eq(zlfs_iget(sbi, inos[7], &zi), 0);     /* had user.k */
	ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, "user.k"), 0);
	zlfs_inode_stat(sbi, zi, &want[7]);
	zlfs_iput(sbi, zi, 0);
	ck_assert_int_eq(zlfs_iget(sbi, inos[8], &zi), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.k", "w", 1, 0), 0);
	zlfs_inode_stat(sbi, zi, &want[8]);
	zlfs_iput(sbi, zi, 0);
	check_changed(sbi);
	/* and again once their blocks are dropped: 7 lost its xattr, 8 got one */
	evict(sbi);
	check_changed(sbi);

	/* unlinked while only its attributes were cached */
	snprintf(name, sizeof(name), "f%d", 3);
	ck_assert_int_eq(zlfs_unlink(sbi, dino, name, false), 0);
	struct zattr gone;
	ck_assert_int_ne(zlfs_inode_attr(sbi, inos[3], &gone), 0);
	ck_assert_uint_le(zlfs_acache_count(sbi), cap);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	/* after a remount: the blocks on the device say the same */
	sbi = tu_fs_mount(img, 8);
	for (int i = 0; i < NFILES; i++) {
		if (i == 3)
			continue;
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_uint_eq(tu_lookup(sbi, dino, name), inos[i]);
		struct zattr a;
		struct stat st;
		ck_assert_int_eq(zlfs_inode_attr(sbi, inos[i], &a), 0);
		zlfs_attr_stat(&a, &st);
		same_stat(&st, &want[i], i);
		bool has = (i % 7 == 0 && i != 7) || i == 8;
		ck_assert_msg(a.no_xattr == !has, "file %d after remount: no_xattr %d", i, a.no_xattr);
	}
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

/* More inodes than the cache holds: the oldest go, every answer stays right. */
#define NBIG 12000

START_TEST(test_overflow)
{
	char *img = tu_fs_volume("over.img");
	struct zlfs_sb *sbi;
	struct zinode *zi, *d;
	struct zlfs_cred c = { 0, 0, 022 };
	static struct stat big[NBIG];
	static uint32_t bino[NBIG];
	char name[64];

	sbi = tu_fs_mount(img, 8);
	uint32_t cap = 8u * 1024 * 1024 / 8 / zlfs_acache_entry_bytes();
	ck_assert_uint_lt(cap, NBIG);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "d", S_IFDIR | 0755, 0, NULL, &d), 0);
	uint32_t dino = d->ino;
	for (int i = 0; i < NBIG; i++) {
		snprintf(name, sizeof(name), "g%d", i);
		zlfs_cache_balance(sbi, true);   /* as every FUSE operation starts */
		ck_assert_int_eq(zlfs_create(sbi, &c, dino, name, S_IFREG | 0644, 0, NULL, &zi), 0);
		bino[i] = zi->ino;
		if (i % 3 == 0)
			ck_assert_int_eq(zlfs_file_truncate(sbi, zi, (uint64_t)i + 7), 0);
		zlfs_inode_stat(sbi, zi, &big[i]);
		zlfs_iput(sbi, zi, 0);
		ck_assert_uint_le(zlfs_acache_count(sbi), cap);
	}
	evict(sbi);
	ck_assert_uint_le(zlfs_acache_count(sbi), cap);
	ck_assert_uint_ge(zlfs_acache_count(sbi), cap - 16);
	for (int round = 0; round < 2; round++) {   /* twice: the first refills it */
		for (int i = 0; i < NBIG; i++) {
			struct zattr a;
			struct stat st;
			zlfs_cache_balance(sbi, true);
			ck_assert_int_eq(zlfs_inode_attr(sbi, bino[i], &a), 0);
			zlfs_attr_stat(&a, &st);
			same_stat(&st, &big[i], i);
			ck_assert_uint_le(zlfs_acache_count(sbi), cap);
		}
	}
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

/* The kernel's f2fs_getattr adds the inline bytes' sectors to i_blocks' count. */
START_TEST(test_inline_blocks)
{
	static struct zf_inode ri;
	struct zattr a;
	struct stat st;

	memset(&ri, 0, sizeof(ri));
	ri.i_mode = zf_cpu_to_le16(S_IFREG | 0644);
	ri.i_size = zf_cpu_to_le64(5);
	ri.i_blocks = zf_cpu_to_le64(1);
	ri.i_inline = ZF_INLINE_DATA;
	zlfs_attr_from_inode(9, &ri, 0, &a);
	zlfs_attr_stat(&a, &st);
	ck_assert_int_eq((int)st.st_blocks, 1);
	ri.i_size = zf_cpu_to_le64(3000);
	zlfs_attr_from_inode(9, &ri, 0, &a);
	zlfs_attr_stat(&a, &st);
	ck_assert_int_eq((int)st.st_blocks, 6);
	ri.i_inline = 0;                        /* the same file in a data block */
	ri.i_blocks = zf_cpu_to_le64(2);
	zlfs_attr_from_inode(9, &ri, 0, &a);
	zlfs_attr_stat(&a, &st);
	ck_assert_int_eq((int)st.st_blocks, 8);
	ri.i_mode = zf_cpu_to_le16(S_IFDIR | 0755);   /* an inline dentry directory */
	ri.i_inline = ZF_INLINE_DENTRY;
	ri.i_blocks = zf_cpu_to_le64(1);
	ri.i_size = zf_cpu_to_le64(3488);
	zlfs_attr_from_inode(9, &ri, 0, &a);
	zlfs_attr_stat(&a, &st);
	ck_assert_int_eq((int)st.st_blocks, 7);
	ri.i_mode = zf_cpu_to_le16(S_IFLNK | 0777);  /* inline data counts for files only */
	ri.i_inline = ZF_INLINE_DATA;
	ri.i_size = zf_cpu_to_le64(20);
	zlfs_attr_from_inode(9, &ri, 0, &a);
	zlfs_attr_stat(&a, &st);
	ck_assert_int_eq((int)st.st_blocks, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acache");
	TCase *tc = tcase_create("attrs");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_attrs);
	tcase_add_test(tc, test_overflow);
	tcase_add_test(tc, test_inline_blocks);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
