/*
 * f2fs_cp_pack.h - the checkpoint pack codec (fs/f2fs/cp_pack.c), shared by
 * the filesystem (fs/checkpoint.c) and fsck.zlfs (fsck/load.c, repair.c).
 *
 * A pack is one segment of the checkpoint area, two packs in all:
 *   head (struct zf_checkpoint) | cp_payload blocks | orphan blocks |
 *   data summaries | node summaries (clean unmount only) | tail (= head)
 * F2FS's rules: a pack is intact when head and tail have good crcs and the
 * same version; of two intact packs the newer is the checkpoint.  A pack
 * written head first and tail last is, torn anywhere, not intact.
 *
 * The codec does its I/O through struct zf_cp_io, so the callers keep
 * their own caches, locks and accounting.  Everything read is bounded here
 * before use.  No state, no locks.
 */
#ifndef ZLFS_F2FS_CP_PACK_H
#define ZLFS_F2FS_CP_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zlfs/f2fs_format.h"

/* Blocks of a pack besides its payload, orphans and summaries. */
#define ZF_CP_PACK_HEAD_BLOCKS 1
#define ZF_CP_PACK_TAIL_BLOCKS 1
/* Summary blocks in the normal (not compact) form: one per data log ... */
#define ZF_CP_PACK_DATA_SUMS   ZF_NR_DATA_LOGS
/* ... and one per node log after a clean unmount. */
#define ZF_CP_PACK_NODE_SUMS   ZF_NR_NODE_LOGS

/* Block I/O for the codec: each returns 0 or a negative errno. */
struct zf_cp_io {
	void *ctx;
	int (*read)(void *ctx, uint64_t blkaddr, void *buf);
	int (*write)(void *ctx, uint64_t blkaddr, const void *buf);
	int (*flush)(void *ctx);   /* what was written is durable */
};

/* Where pack `pack` (0 or 1) starts, the checkpoint area starting at cp_blkaddr. */
static inline uint64_t zf_cp_pack_addr(uint64_t cp_blkaddr, int pack)
{
	return cp_blkaddr + (uint64_t)pack * ZF_BLKS_PER_SEG;
}

/* Orphan blocks holding n inode numbers. */
static inline uint32_t zf_cp_orphan_blocks(uint32_t n)
{
	return (n + ZF_ORPHANS_PER_BLOCK - 1) / ZF_ORPHANS_PER_BLOCK;
}

/* The pack's first summary block (cp_pack_start_sum). */
static inline uint32_t zf_cp_pack_start_sum(uint32_t payload, uint32_t orphan_blocks)
{
	return ZF_CP_PACK_HEAD_BLOCKS + payload + orphan_blocks;
}

/* The pack's block count (cp_pack_total_block_count), summaries in the normal form. */
static inline uint32_t zf_cp_pack_total(uint32_t payload, uint32_t orphan_blocks, bool umount)
{
	return zf_cp_pack_start_sum(payload, orphan_blocks) + ZF_CP_PACK_DATA_SUMS +
	       (umount ? ZF_CP_PACK_NODE_SUMS : 0) + ZF_CP_PACK_TAIL_BLOCKS;
}

/*
 * Read pack `start` (its first block): the head and payload blocks into
 * head (ZF_BLKSIZE * (1 + payload) bytes), the tail checked against the
 * head.  0 and *ver: intact.  -EUCLEAN: not intact, `why` says how
 * ("bad checksum", "head and tail differ (torn)").  Another negative errno:
 * unreadable ("unreadable").  Nothing but the crcs, the total and the
 * versions is checked: zf_check_cp is the caller's.
 */
int zf_cp_pack_read(const struct zf_cp_io *io, uint64_t start, uint32_t payload, void *head,
		    uint64_t *ver, char *why, size_t len);

/* One pack as zf_cp_packs_read found it. */
#define ZF_CP_WHY_LEN 200
struct zf_cp_pack_state {
	int err;                 /* 0: intact (and sane, if asked); else a negative errno */
	uint64_t ver;            /* its version when intact */
	char why[ZF_CP_WHY_LEN]; /* what is wrong with it when not */
};

/*
 * The newer of two packs by F2FS's rule: the one with err 0 and the higher
 * version; pack 0 on a tie.  -1 when neither is intact.
 */
int zf_cp_pack_choose(const struct zf_cp_pack_state st[2]);

/*
 * Both packs of the area at cp_blkaddr read into head[0] and head[1]
 * (1 + payload blocks each) and the newer intact one chosen.  With sb, a
 * pack must pass zf_check_cp(sb) too to count (fsck: an insane newer pack
 * loses to a sane older one); without, the caller checks the winner (the
 * mount: as the kernel, the newest intact pack is the checkpoint).
 * Returns the pack chosen (0 or 1); -ENOMEM if a pack could not be judged
 * for memory; else -EUCLEAN when neither counts (st[] says why).
 */
int zf_cp_packs_read(const struct zf_cp_io *io, uint64_t cp_blkaddr, uint32_t payload,
		     const struct zf_super *sb, void *head[2], struct zf_cp_pack_state st[2]);

/*
 * The current segments' summaries of the pack at start, whose (checked)
 * head is cp: the data logs' (compact or normal form, with the NAT and SIT
 * journals) into sums[ZF_LOG_HOT_DATA..COLD_DATA] entries and the
 * journals; after a clean unmount the node logs' too.  data_blkoff[i] is
 * data log i's next block (entries a compact summary holds), each below
 * ZF_ENTRIES_IN_SUM.  Footers are left as they are.
 */
int zf_cp_pack_read_sums(const struct zf_cp_io *io, uint64_t start, const struct zf_checkpoint *cp,
			 const uint32_t data_blkoff[ZF_NR_DATA_LOGS],
			 struct zf_summary_block *const sums[ZF_NR_LOGS],
			 struct zf_journal *nat_j, struct zf_journal *sit_j);

/* The orphan blocks a checked head says its pack holds (0 without ORPHAN_PRESENT). */
uint32_t zf_cp_pack_orphan_blocks(const struct zf_checkpoint *cp, uint32_t payload);

/* An orphan block's entry count into *cnt; -EUCLEAN if past ZF_ORPHANS_PER_BLOCK. */
int zf_cp_orphan_count(const struct zf_orphan_block *ob, uint32_t *cnt);

/*
 * nat_bits (CP_NAT_BITS_FLAG), as the kernel keeps them: the last
 * zf_nat_bits_blocks() blocks of a pack's segment hold an 8-byte check
 * (the pack's version, with the crc of its head in the high word), then a
 * "full" bit per NAT block (every entry has an address; nid 0 counts as
 * used), then an "empty" bit per NAT block (no entry has one): bit b is
 * bit b % 8 of byte b / 8.  nat_blocks is one NAT copy's blocks.  They say
 * what the NAT blocks held when that pack was written, journals empty, so
 * a mount need read no NAT block to know which hold free nids.
 */
static inline uint32_t zf_nat_bits_bytes(uint32_t nat_blocks)
{
	return nat_blocks / 8;
}
static inline uint32_t zf_nat_bits_blocks(uint32_t nat_blocks)
{
	return (2 * zf_nat_bits_bytes(nat_blocks) + 8 + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
}
/*
 * May a pack of total blocks with payload blocks carry nblocks of nat_bits?
 * They go behind it in its segment, and the kernel's sanity check refuses
 * the flag unless payload, both packs' heads, the six logs and the bits stay
 * under a segment.
 */
static inline bool zf_nat_bits_fit(uint32_t total, uint32_t payload, uint32_t nblocks)
{
	return nblocks && total + nblocks <= ZF_BLKS_PER_SEG &&
	       (uint64_t)payload + ZF_CP_PACKS + ZF_NR_LOGS + nblocks < ZF_BLKS_PER_SEG;
}
/* NAT block b's entries in use as nat_bits count them: with an address, nid 0 always. */
uint32_t zf_nat_block_used(const struct zf_nat_block *blk, uint32_t b);
/*
 * NAT block b's full or empty bit in nat_bits (bytes a kind: zf_nat_bits_bytes);
 * false for a block past the bits (a NAT copy not a multiple of 8 blocks).
 */
static inline bool zf_nat_bits_test(const uint8_t *bits, uint32_t bytes, bool empty, uint32_t b)
{
	return b < bytes * 8 && (bits[8 + (empty ? bytes : 0) + b / 8] & (1u << (b % 8)));
}
/* Set block b's full and empty bits for `used` entries in use (none past the bits). */
void zf_nat_bits_put(uint8_t *bits, uint32_t bytes, uint32_t b, uint32_t used);
/* The check a pack's nat_bits start with: its version | crc << 32. */
uint64_t zf_cp_nat_bits_check(const struct zf_checkpoint *cp);
/*
 * The nat_bits of the pack at start whose (checked) head is cp, into buf
 * (nblocks blocks): 1 when the pack has them (the flag, room after the
 * pack, the check matching); 0 when not (absent, or stale: written for
 * another version, as after a checkpoint that did not rewrite them); or a
 * negative errno from the read.
 */
int zf_cp_pack_read_nat_bits(const struct zf_cp_io *io, uint64_t start,
			     const struct zf_checkpoint *cp, uint32_t nblocks, uint8_t *buf);

/* What zf_cp_pack_write writes besides the head. */
struct zf_cp_pack_body {
	const uint8_t *payload_blks;   /* payload blocks (the head's followers) */
	uint32_t payload;
	const uint32_t *orphans;       /* inode numbers */
	uint32_t norphans;
	/* current segments' summaries: the data logs', and the node logs' when umount */
	const struct zf_summary_block *sums[ZF_NR_LOGS];
	bool umount;
	/*
	 * nat_bits to write (nat_bits_blocks blocks, the check filled in
	 * here), or NULL: the head gets CP_NAT_BITS_FLAG only when they are
	 * written, which needs room behind the pack in its segment.
	 */
	uint8_t *nat_bits;
	uint32_t nat_bits_blocks;
};

/*
 * Write the pack at start but its tail: fills the head's cp_pack_start_sum
 * and cp_pack_total_block_count and its crc (every other field is the
 * caller's, ORPHAN_PRESENT and UMOUNT among them; NAT_BITS is set or cleared
 * here), then writes head, payload, orphan blocks, summaries (journals
 * empty, footers as given) and the nat_bits, and flushes.  -ENOSPC (nothing written) if it does not fit a segment.
 */
int zf_cp_pack_write_body(const struct zf_cp_io *io, uint64_t start, void *head,
			  const struct zf_cp_pack_body *body);

/*
 * Write the tail of the pack whose head zf_cp_pack_write_body wrote, and
 * flush.  When this returns 0 the pack is the checkpoint in force.
 */
int zf_cp_pack_write_tail(const struct zf_cp_io *io, uint64_t start, const void *head);

#endif
