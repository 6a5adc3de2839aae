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
 *     journal), and stays when the nid is freed (its version is kept);
 *   - nat_bits: mkfs.zlfs and every checkpoint write them (fsck.f2fs checks
 *     them) and a mount with them reads a NAT block only when one of its
 *     nids is asked for;
 *   - nid allocation passes a block nat_bits say is full without reading
 *     it, and a block that has a freed nid again is not full after the next
 *     checkpoint: the freed nid is handed out;
 *   - stale nat_bits (a check that does not match the checkpoint) are not
 *     trusted: the mount reads the whole NAT, and the next checkpoint
 *     writes good ones (fsck.f2fs clean again);
 *   - under cache_mb the NAT blocks in memory stay within their share: clean
 *     blocks without cached nodes are dropped and read again when asked
 *     for (same entries), a block changed since the checkpoint or with a
 *     node in the cache stays.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zlfs.h"
#include "zlfs/f2fs_cp_pack.h"
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

static uint32_t mk(struct zlfs_sb *sbi, const char *name)
{
	struct zlfs_cred c = { 0, 0, 0 };
	struct zinode *zi;

	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, name, S_IFREG | 0644, 0, NULL, &zi), 0);
	uint32_t ino = zi->ino;
	zlfs_iput(sbi, zi, 0);
	return ino;
}

START_TEST(test_nat_blocks)
{
	char *img = tu_fs_volume("nat.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	const uint32_t per = ZF_NAT_ENTRY_PER_BLOCK, want = 10 * per + 3;

	/* mkfs wrote nat_bits: this mount read only the root's NAT block */
	ck_assert(sbi->nat_bits_found);
	ck_assert_uint_eq(sbi->st.nat_reads, 1);
	ck_assert_uint_gt(sbi->nat_blocks, 12);
	ck_assert_uint_eq(sbi->nat_blocks_held, 1);    /* the root and the reserved nids */
	ck_assert_ptr_null(sbi->nat_blk[10]);
	ck_assert_uint_eq(zlfs_nat(sbi, want)->blkaddr, ZF_NULL_ADDR);
	ck_assert_uint_eq(zlfs_nat(sbi, sbi->max_nid - 1)->ino, 0);

	/* the allocator's next nid is in block 10: the file's inode takes it */
	sbi->next_free_nid = want;
	ck_assert_uint_eq(mk(sbi, "f"), want);
	ck_assert_uint_eq(sbi->nat_blocks_held, 2);
	ck_assert_ptr_nonnull(sbi->nat_blk[10]);
	tu_fs_unmount(sbi);

	/* the unmount's checkpoint wrote nat_bits: only what is asked for is read */
	sbi = tu_fs_mount(img, 0);
	ck_assert(sbi->nat_bits_found);
	ck_assert_uint_eq(sbi->nat_blocks_held, 1);    /* the root's, which the mount checks */
	ck_assert(!sbi->nat_in[10]);
	uint64_t r0 = sbi->st.nat_reads;
	ck_assert_uint_eq(zlfs_nat(sbi, want)->ino, want);
	ck_assert_uint_eq(sbi->st.nat_reads, r0 + 1);
	ck_assert_uint_eq(sbi->nat_blocks_held, 2);
	ck_assert(zlfs_is_main_blkaddr(sbi, zlfs_nat(sbi, want)->blkaddr));
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "f"), want);
	ck_assert_uint_eq(sbi->st.nat_reads, r0 + 1);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "f", false), 0);
	ck_assert_uint_eq(zlfs_nat(sbi, want)->blkaddr, ZF_NULL_ADDR);
	ck_assert_uint_eq(zlfs_nat(sbi, want)->version, 1);
	tu_fs_unmount(sbi);

	/* freed, its version kept: the block is not all zeros, so it is held once read */
	sbi = tu_fs_mount(img, 0);
	ck_assert_uint_eq(zlfs_nat(sbi, want)->version, 1);
	ck_assert_uint_eq(zlfs_nat(sbi, want)->blkaddr, ZF_NULL_ADDR);
	ck_assert_uint_eq(sbi->nat_blocks_held, 2);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

static bool nat_full(const struct zlfs_sb *sbi, uint32_t b)
{
	return zf_nat_bits_test(sbi->nat_bits, sbi->nat_bits_bytes, false, b);
}

static bool nat_empty(const struct zlfs_sb *sbi, uint32_t b)
{
	return zf_nat_bits_test(sbi->nat_bits, sbi->nat_bits_bytes, true, b);
}

START_TEST(test_nat_bits)
{
	char *img = tu_fs_volume("natbits.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	const uint32_t per = ZF_NAT_ENTRY_PER_BLOCK, full = 20;
	char name[32];

	/* block 20 filled, every one of its nids an inode; one more in block 21 */
	sbi->next_free_nid = full * per;
	for (uint32_t k = 0; k <= per; k++) {
		snprintf(name, sizeof(name), "f%u", k);
		ck_assert_uint_eq(mk(sbi, name), full * per + k);
	}
	uint32_t cp_blkaddr = zf_le32_to_cpu(sbi->sb.cp_blkaddr);
	ck_assert_uint_eq(sbi->nat_bits_blocks, 1);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	sbi = tu_fs_mount(img, 0);
	ck_assert(sbi->nat_bits_found);
	ck_assert(nat_full(sbi, full) && !nat_empty(sbi, full));
	ck_assert(!nat_full(sbi, full + 1) && !nat_empty(sbi, full + 1));
	ck_assert(!nat_full(sbi, 0) && !nat_empty(sbi, 0));
	ck_assert(!nat_full(sbi, full + 2) && nat_empty(sbi, full + 2));
	/* the allocator passes the full block unread: the next nid is in block 21 */
	sbi->next_free_nid = full * per;
	ck_assert_uint_eq(mk(sbi, "g"), (full + 1) * per + 1);
	ck_assert(!sbi->nat_in[full]);
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "f7"), full * per + 7);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "f7", false), 0);
	ck_assert(sbi->nat_in[full]);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	/* one nid free again: not full any more, and that nid is handed out */
	sbi = tu_fs_mount(img, 0);
	ck_assert(!nat_full(sbi, full) && !nat_empty(sbi, full));
	sbi->next_free_nid = full * per;
	ck_assert_uint_eq(mk(sbi, "h"), full * per + 7);
	tu_fs_unmount(sbi);

	/* stale bits: the check of both packs' nat_bits no longer matches */
	uint8_t blk[ZF_BLKSIZE];
	for (int pack = 0; pack < 2; pack++) {
		uint64_t at = cp_blkaddr + (uint64_t)(pack + 1) * ZF_BLKS_PER_SEG - 1;
		tu_blk_read(img, at, blk);
		blk[0] ^= 0xff;
		tu_blk_write(img, at, blk);
	}
	sbi = tu_fs_mount(img, 0);
	ck_assert(!sbi->nat_bits_found);
	ck_assert(sbi->nat_in[full] && sbi->nat_in[full + 1] && sbi->nat_in[full + 2]);
	ck_assert(nat_full(sbi, full) && nat_empty(sbi, full + 2));
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "h"), full * per + 7);
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "g"), (full + 1) * per + 1);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	sbi = tu_fs_mount(img, 0);
	ck_assert(sbi->nat_bits_found);
	ck_assert(!sbi->nat_in[full]);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

START_TEST(test_nat_bound)
{
	char *img = tu_fs_volume("natbound.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 8);
	const uint32_t per = ZF_NAT_ENTRY_PER_BLOCK, nfiles = 300;
	uint32_t ino[300], addr[300];
	char name[32];

	ck_assert_uint_lt(sbi->nat_cap, nfiles);
	ck_assert_uint_gt(sbi->nat_blocks, nfiles + 10);
	/* a file in each of 300 NAT blocks */
	for (uint32_t k = 0; k < nfiles; k++) {
		snprintf(name, sizeof(name), "f%u", k);
		sbi->next_free_nid = (k + 1) * per + k % per;
		ino[k] = mk(sbi, name);
		ck_assert_uint_eq(ino[k], (k + 1) * per + k % per);
	}
	ck_assert_uint_ge(sbi->nat_blocks_held, nfiles + 1);
	/* dirty until the checkpoint: nothing can go */
	zlfs_nat_shrink(sbi, 0);
	ck_assert_uint_ge(sbi->nat_blocks_held, nfiles + 1);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	for (uint32_t k = 0; k < nfiles; k++)
		addr[k] = zlfs_nat(sbi, ino[k])->blkaddr;
	/* clean now, but their inodes are cached: still nothing */
	zlfs_nat_shrink(sbi, 0);
	ck_assert_uint_ge(sbi->nat_blocks_held, nfiles + 1);
	/* the nodes dropped: the bound holds, the root's block stays */
	zlfs_node_shrink(sbi, 0);
	zlfs_cache_balance(sbi, true);
	ck_assert_uint_le(sbi->nat_blocks_held, sbi->nat_cap);
	ck_assert_uint_gt(sbi->st.nat_evicted, 0);
	ck_assert(sbi->nat_in[0]);
	uint64_t r0 = sbi->st.nat_reads;
	for (uint32_t k = 0; k < nfiles; k++) {
		ck_assert_uint_eq(zlfs_nat(sbi, ino[k])->ino, ino[k]);
		ck_assert_uint_eq(zlfs_nat(sbi, ino[k])->blkaddr, addr[k]);
		ck_assert_uint_eq(zlfs_nat(sbi, ino[k])->flags, ZNAT_CKPT);
	}
	ck_assert_uint_ge(sbi->st.nat_reads, r0 + nfiles - sbi->nat_cap);
	/* one changed since the checkpoint stays through a trim */
	zlfs_node_shrink(sbi, 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "f5", false), 0);
	zlfs_node_shrink(sbi, 0);
	zlfs_nat_shrink(sbi, 0);
	ck_assert(sbi->nat_in[ino[5] / per]);
	ck_assert_uint_eq(zlfs_nat(sbi, ino[5])->blkaddr, ZF_NULL_ADDR);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	sbi = tu_fs_mount(img, 8);
	for (uint32_t k = 0; k < nfiles; k++) {
		snprintf(name, sizeof(name), "f%u", k);
		if (k == 5)
			continue;
		ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, name), ino[k]);
		ck_assert_uint_eq(zlfs_nat(sbi, ino[k])->blkaddr, addr[k]);
	}
	tu_fs_unmount(sbi);
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
	tcase_add_test(tc, test_nat_bits);
	tcase_add_test(tc, test_nat_bound);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
