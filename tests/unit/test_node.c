/*
 * test_node.c - the node cache's read path (fs/node.c): readahead of node
 * blocks on misses in log order, on a volume made by mkfs.zlfs, mounted
 * in-process without FUSE.
 *
 * Covers:
 *   - inodes read back in the order they were made cost a fraction of a
 *     device read each (node_readahead counts the blocks brought in);
 *   - readahead never caches an old copy: inodes rewritten elsewhere by a
 *     later checkpoint leave stale blocks inside the read window, and
 *     every inode still reads as last written (a stale one would show its
 *     old mode);
 *   - misses far apart read one block each (no readahead);
 *   - fsck.f2fs is clean afterwards;
 *   - the NAT in memory holds only the blocks with a nid ever used: a fresh
 *     volume one, a nid handed out in an unused block adds its block, which
 *     comes back after a remount (from the NAT block or the checkpoint's
 *     journal), and stays when the nid is freed (its version is kept).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "node.h"
#include "segment.h"
#include "inode.h"
#include "namei.h"
#include "testutil.h"
#include "fsutil.h"

#define NFILES 2000

static void evict_all(struct zlfs_sb *sbi)
{
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	zlfs_inode_unload(sbi, UINT32_MAX);
	zlfs_node_shrink(sbi, 0);
}

static mode_t want_mode(int i, bool changed)
{
	return S_IFREG | (changed && i % 3 == 0 ? 0700 : 0644);
}

START_TEST(test_readahead)
{
	char *img = tu_fs_volume("ra.img");
	struct zlfs_sb *sbi;
	struct zinode *zi, *d;
	struct zlfs_cred c = { 0, 0, 0 };
	static uint32_t inos[NFILES];
	char name[64];

	sbi = tu_fs_mount(img, 0);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "d", S_IFDIR | 0755, 0, NULL, &d), 0);
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(zlfs_create(sbi, &c, d->ino, name, want_mode(i, false), 0, NULL, &zi),
				 0);
		inos[i] = zi->ino;
		zlfs_iput(sbi, zi, 0);
	}
	evict_all(sbi);

	/* in the order made: a read per readahead window, not per inode */
	uint64_t m0 = sbi->st.node_misses, r0 = sbi->st.node_readahead;
	for (int i = 0; i < NFILES; i++) {
		ck_assert_int_eq(zlfs_iget(sbi, inos[i], &zi), 0);
		ck_assert_uint_eq(zf_le16_to_cpu(zi_raw(zi)->i_mode), want_mode(i, false));
		zlfs_iput(sbi, zi, 0);
	}
	uint64_t misses = sbi->st.node_misses - m0;
	ck_assert_msg(misses < NFILES / 4, "%llu misses for %d inodes", (unsigned long long)misses,
		      NFILES);
	ck_assert_uint_ge(sbi->st.node_readahead - r0, NFILES / 2);

	/* every third inode rewritten by the next checkpoint: stale copies in the windows */
	for (int i = 0; i < NFILES; i += 3) {
		ck_assert_int_eq(zlfs_iget(sbi, inos[i], &zi), 0);
		zi_raw(zi)->i_mode = zf_cpu_to_le16(want_mode(i, true));
		zlfs_inode_dirty(sbi, zi);
		zlfs_iput(sbi, zi, 0);
	}
	evict_all(sbi);
	r0 = sbi->st.node_readahead;
	for (int i = 0; i < NFILES; i++) {
		ck_assert_int_eq(zlfs_iget(sbi, inos[i], &zi), 0);
		ck_assert_msg(zf_le16_to_cpu(zi_raw(zi)->i_mode) == want_mode(i, true),
			      "inode %d: mode %o, want %o", i, zf_le16_to_cpu(zi_raw(zi)->i_mode),
			      want_mode(i, true));
		zlfs_iput(sbi, zi, 0);
	}
	ck_assert_uint_gt(sbi->st.node_readahead, r0);

	/* misses far apart (each below the one before): one block each */
	evict_all(sbi);
	m0 = sbi->st.node_misses;
	r0 = sbi->st.node_readahead;
	int far = 0;
	for (uint32_t below = UINT32_MAX;; far++) {
		uint32_t best = 0, pick = 0;
		for (int i = 0; i < NFILES; i++) {   /* the highest address well below `below` */
			uint32_t a = zlfs_nat(sbi, inos[i])->blkaddr;
			if (a + 64 < below && a > best) {
				best = a;
				pick = inos[i];
			}
		}
		if (!pick)
			break;
		ck_assert_int_eq(zlfs_iget(sbi, pick, &zi), 0);
		zlfs_iput(sbi, zi, 0);
		below = best;
	}
	ck_assert_int_gt(far, 10);
	ck_assert_uint_eq(sbi->st.node_readahead, r0);
	ck_assert_uint_eq(sbi->st.node_misses - m0, far);

	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

START_TEST(test_nat_blocks)
{
	char *img = tu_fs_volume("nat.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zlfs_cred c = { 0, 0, 0 };
	struct zinode *zi;
	const uint32_t per = ZF_NAT_ENTRY_PER_BLOCK, want = 10 * per + 3;

	ck_assert_uint_gt(sbi->nat_blocks, 12);
	ck_assert_uint_eq(sbi->nat_blocks_held, 1);    /* the root and the reserved nids */
	ck_assert_ptr_null(sbi->nat_blk[10]);
	ck_assert_uint_eq(zlfs_nat(sbi, want)->blkaddr, ZF_NULL_ADDR);
	ck_assert_uint_eq(zlfs_nat(sbi, sbi->max_nid - 1)->ino, 0);

	/* the allocator's next nid is in block 10: the file's inode takes it */
	sbi->next_free_nid = want;
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "f", S_IFREG | 0644, 0, NULL, &zi), 0);
	ck_assert_uint_eq(zi->ino, want);
	zlfs_iput(sbi, zi, 0);
	ck_assert_uint_eq(sbi->nat_blocks_held, 2);
	ck_assert_ptr_nonnull(sbi->nat_blk[10]);
	tu_fs_unmount(sbi);

	sbi = tu_fs_mount(img, 0);
	ck_assert_uint_eq(sbi->nat_blocks_held, 2);
	ck_assert_uint_eq(zlfs_nat(sbi, want)->ino, want);
	ck_assert(zlfs_is_main_blkaddr(sbi, zlfs_nat(sbi, want)->blkaddr));
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "f"), want);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "f", false), 0);
	ck_assert_uint_eq(zlfs_nat(sbi, want)->blkaddr, ZF_NULL_ADDR);
	ck_assert_uint_eq(zlfs_nat(sbi, want)->version, 1);
	tu_fs_unmount(sbi);

	/* freed, its version kept: the block is not all zeros, so it is held */
	sbi = tu_fs_mount(img, 0);
	ck_assert_uint_eq(sbi->nat_blocks_held, 2);
	ck_assert_uint_eq(zlfs_nat(sbi, want)->version, 1);
	ck_assert_uint_eq(zlfs_nat(sbi, want)->blkaddr, ZF_NULL_ADDR);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("node");
	TCase *tc = tcase_create("readahead");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_readahead);
	tcase_add_test(tc, test_nat_blocks);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
