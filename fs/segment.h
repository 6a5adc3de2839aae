/*
 * segment.h - what segment.c offers the other files.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_SEGMENT_H
#define ZLFS_FS_SEGMENT_H

#include "zlfs.h"

bool zlfs_sec_is_log(const struct zlfs_sb *sbi, uint32_t sec);
/* The volume's device (0 .. nr_members - 1) that holds section sec. */
unsigned int zlfs_sec_member(const struct zlfs_sb *sbi, uint32_t sec);
/*
 * GC's victim index: the sections in use (INUSE), fewest valid blocks
 * first.  zlfs_sec_by_valid gives the first with at least min_valid,
 * zlfs_sec_by_valid_next the one after sec; UINT32_MAX past the last.
 * Nothing may change a section between the two calls (sbi->lock held).
 */
uint32_t zlfs_sec_by_valid(const struct zlfs_sb *sbi, uint32_t min_valid);
uint32_t zlfs_sec_by_valid_next(const struct zlfs_sb *sbi, uint32_t sec);
/* Main-area section in a conventional zone: no write pointer, no reset. */
bool zlfs_sec_is_conv(const struct zlfs_sb *sbi, uint32_t sec);
/* Free sections below which only GC and the checkpoint allocate. */
uint32_t zlfs_seg_floor(const struct zlfs_sb *sbi);
/*
 * The relocation map: data blocks GC moved since the checkpoint (old ->
 * new).  A user write that captured a block's old address and finds the
 * slot changed asks whether that was GC (then its data wins).  Cleared at
 * the checkpoint, when no write is in flight.
 */
void zlfs_seg_reloc_add(struct zlfs_sb *sbi, uint32_t old, uint32_t new_addr);
bool zlfs_seg_moved(struct zlfs_sb *sbi, uint32_t old, uint32_t cur);
void zlfs_seg_reloc_clear(struct zlfs_sb *sbi);
/* Next block of GC's log (cold data), allowed below the floor. */
int zlfs_alloc_gc_block(struct zlfs_sb *sbi, uint32_t nid, uint16_t ofs, uint8_t version,
			uint32_t *blkaddr);
int zlfs_seg_build(struct zlfs_sb *sbi, const struct zf_journal *sit_j);
/*
 * Free segments as fsck.f2fs counts them (the checkpoint's
 * free_segment_count): empty, not a log's, and on a device whose zones it
 * sees not past a zone's capacity.
 */
uint32_t zlfs_seg_free_count(const struct zlfs_sb *sbi);
void zlfs_seg_destroy(struct zlfs_sb *sbi);
/*
 * The SIT's share of the memory bound: drop clean blocks no log uses
 * until at most max are held (exclusive lock, at an operation's start).
 */
void zlfs_sit_shrink(struct zlfs_sb *sbi, uint32_t max);
/* Valid blocks in segments s0 .. s1-1 (whole sections from their counts, no SIT read). */
uint64_t zlfs_segs_valid(struct zlfs_sb *sbi, uint32_t s0, uint32_t s1);
/*
 * Where log `log`'s next block will go: node logs move to their next
 * segment as soon as one fills (as F2FS's do), so this is where the next
 * node really lands, which the node footers' next_blkaddr records.
 * 0 when a node log could not move on (no free section).
 */
uint32_t zlfs_log_next_blkaddr(const struct zlfs_sb *sbi, unsigned int log);
/*
 * Roll-forward: data block blkaddr, written after the checkpoint, now
 * belongs to slot ofs of node nid: valid in the SIT, its SSA entry set.
 * -EEXIST if it is valid already; -EINVAL outside the main area.
 */
int zlfs_seg_claim_block(struct zlfs_sb *sbi, uint32_t blkaddr, uint32_t nid, uint16_t ofs,
			 uint8_t version, bool was_hole);
/* Write the SSA block zlfs_seg_claim_block keeps (end of roll-forward). */
int zlfs_seg_claim_done(struct zlfs_sb *sbi);
/* Section number of a main-area block. */
uint32_t zlfs_sec_of_blkaddr(const struct zlfs_sb *sbi, uint32_t blkaddr);
/*
 * The write-back of cached metadata blocks (bcache.c, run by every
 * checkpoint): may dip into the floor as the node logs do.  Its amount is
 * bounded by the dirty limit, and zlfs_balance keeps room for it.
 */
int zlfs_alloc_meta_block(struct zlfs_sb *sbi, unsigned int log, uint32_t nid, uint16_t ofs,
			  uint8_t version, uint32_t *blkaddr);
/* Next block of log `log` for a block owned by (nid, ofs); 0 or -ENOSPC. */
int zlfs_alloc_block(struct zlfs_sb *sbi, unsigned int log, uint32_t nid, uint16_t ofs,
		     uint8_t version, uint32_t *blkaddr);
/* The block at blkaddr no longer holds anything. */
void zlfs_invalidate_block(struct zlfs_sb *sbi, uint32_t blkaddr);
/* Inside the main area?  (data.c checks every address it is given.) */
static inline bool zlfs_is_main_blkaddr(const struct zlfs_sb *sbi, uint32_t blkaddr)
{
	return blkaddr >= sbi->lay.main_blkaddr &&
	       blkaddr < sbi->lay.main_blkaddr + sbi->lay.segment_count_main * ZF_BLKS_PER_SEG;
}
/* A slot that F2FS counts as a block though it names none (sbi->reserved_blocks). */
static inline bool zlfs_addr_reserved(uint32_t a)
{
	return a == ZF_NEW_ADDR || a == ZF_COMPRESS_ADDR;
}
/*
 * n such slots go.  The count came from the checkpoint (its valid blocks
 * less the SIT's), which a damaged volume may have too low: it stops at 0
 * rather than wrap (fsck.zlfs counts the slots and repairs the checkpoint).
 */
static inline void zlfs_reserved_drop(struct zlfs_sb *sbi, uint64_t n)
{
	sbi->reserved_blocks = sbi->reserved_blocks > n ? sbi->reserved_blocks - n : 0;
}
/* Is blkaddr a valid (in use) block of the main area, by the SIT? */
bool zlfs_block_valid(const struct zlfs_sb *sbi, uint32_t blkaddr);
/*
 * The same, for a reader that stands on the answer: 1 valid, 0 free or
 * outside the main area, or the error of reading its dropped SIT block
 * back (-EIO, -ENOMEM, a damaged block's), which made the volume
 * read-only: the caller reports that, not "free in the SIT".
 */
int zlfs_block_in_use(const struct zlfs_sb *sbi, uint32_t blkaddr);
/* Write the SIT, SSA of open segments; free and reset prefree sections (at CP). */
int zlfs_seg_flush(struct zlfs_sb *sbi);
/* Move every active log off a full segment (before a checkpoint records them). */
int zlfs_seg_settle_logs(struct zlfs_sb *sbi);
void zlfs_seg_after_cp(struct zlfs_sb *sbi);
/*
 * The user's share left: user_block_count less the valid blocks and the
 * nodes not written yet (each takes a block at the next checkpoint).
 * Every new block or node is checked against it, so no checkpoint records
 * more valid blocks than user_block_count (the kernel refuses such a
 * volume: "Wrong valid_user_blocks").  Inline: lock.c publishes it at
 * every release, below the segment layer.
 */
static inline uint64_t zlfs_avail_blocks(const struct zlfs_sb *sbi)
{
	uint64_t used = sbi->valid_block_count + sbi->reserved_blocks + sbi->nr_new_nodes +
			sbi->pending_blocks;
	return used >= sbi->user_block_count ? 0 : sbi->user_block_count - used;
}
/*
 * What statfs shows free (f_bfree, f_bavail): zlfs_avail_blocks less the
 * direct nodes a single file would need to take it all.
 */
static inline uint64_t zlfs_free_blocks(const struct zlfs_sb *sbi)
{
	uint64_t a = zlfs_avail_blocks(sbi);
	return a - a / (ZF_ADDRS_PER_BLOCK + 1);
}
/* What statfs shows, from the published counters: takes no lock. */
void zlfs_statfs(struct zlfs_sb *sbi, struct statvfs *st);
/* The writeback gate's reserve, in blocks (main.c sizes it for the mount's dirty limit). */
void zlfs_space_set_reserve(struct zlfs_sb *sbi, uint64_t blocks);
/* The user's share of the volume, in bytes (statfs's f_blocks). */
uint64_t zlfs_user_bytes(const struct zlfs_sb *sbi);
/* Free blocks (published) below the writeback reserve: buffered writes must stop. */
bool zlfs_space_low(struct zlfs_sb *sbi);
/*
 * Roll-forward found a chain block at blkaddr: a free section holding it
 * turns prefree, so no log writes over it before the mount's checkpoint
 * commits (a conventional section has no write pointer to tell).
 */
void zlfs_seg_hold(struct zlfs_sb *sbi, uint32_t blkaddr);
/* Reset zones that hold nothing and fix logs after mount. */
int zlfs_seg_fix_zones(struct zlfs_sb *sbi);

#endif
