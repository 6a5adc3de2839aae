/*
 * segment.c - the main area: SIT (which blocks are valid), sections (one
 * per zone), and the logs that append at zone write pointers.
 *
 * Invariants
 *   - A log owns one section at a time and fills its segments strictly in
 *     order up to the zone capacity; a block is never written twice
 *     (log-structured, no in-place update, no SSR).
 *   - A section is FREE only when its zone is empty: sections whose last
 *     valid block went away since the checkpoint are PREFREE, and become
 *     FREE (zone reset) only after the next checkpoint commits, so the
 *     previous checkpoint's blocks stay readable until then.
 *   - segs[i].valid == popcount(segs[i].map); secs[s].valid is the sum over
 *     its segments; valid_block_count the sum over all sections.
 * All calls need sbi->lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zlfs.h"
#include "data.h"
#include "segment.h"
#include "zlfs/f2fs_sit.h"

/* Open addressing, old address -> new; 0 marks an empty slot (never a main-area address). */
struct zgc_reloc {
	uint32_t cap, n;
	uint32_t *keys;          /* cap keys, then cap values */
};

static uint32_t sec_of(const struct zlfs_sb *sbi, uint32_t segno)
{
	return segno / sbi->segs_per_sec;
}

bool zlfs_sec_is_log(const struct zlfs_sb *sbi, uint32_t sec)
{
	for (int i = 0; i < ZF_NR_LOGS; i++)
		if (sec_of(sbi, sbi->logs[i].segno) == sec)
			return true;
	return false;
}

/* ---- the victim index ---------------------------------------------------------- */

#define VI_NONE UINT32_MAX

static void vi_insert(struct zlfs_sb *sbi, uint32_t sec)
{
	uint32_t v = sbi->secs[sec].valid, h = sbi->vi_head[v];

	sbi->vi_link[2 * sec] = h;
	sbi->vi_link[2 * sec + 1] = VI_NONE;
	if (h != VI_NONE)
		sbi->vi_link[2 * h + 1] = sec;
	sbi->vi_head[v] = sec;
	sbi->vi_nonempty[v / 64] |= 1ull << (v % 64);
}

static void vi_remove(struct zlfs_sb *sbi, uint32_t sec)
{
	uint32_t v = sbi->secs[sec].valid, n = sbi->vi_link[2 * sec], p = sbi->vi_link[2 * sec + 1];

	if (p != VI_NONE)
		sbi->vi_link[2 * p] = n;
	else
		sbi->vi_head[v] = n;
	if (n != VI_NONE)
		sbi->vi_link[2 * n + 1] = p;
	if (sbi->vi_head[v] == VI_NONE)
		sbi->vi_nonempty[v / 64] &= ~(1ull << (v % 64));
}

/* A section's valid count changes by d: it moves to its new list if indexed. */
static void sec_valid_add(struct zlfs_sb *sbi, uint32_t sec, int d)
{
	bool indexed = sbi->secs[sec].state == ZSEC_INUSE;

	if (indexed)
		vi_remove(sbi, sec);
	sbi->secs[sec].valid = (uint32_t)((int64_t)sbi->secs[sec].valid + d);
	if (indexed)
		vi_insert(sbi, sec);
}

uint32_t zlfs_sec_by_valid(const struct zlfs_sb *sbi, uint32_t min_valid)
{
	for (uint32_t w = min_valid / 64; w * 64 < sbi->vi_counts; w++) {
		uint64_t bits = sbi->vi_nonempty[w];
		if (w == min_valid / 64)
			bits &= ~0ull << (min_valid % 64);
		if (bits)
			return sbi->vi_head[w * 64 + (uint32_t)__builtin_ctzll(bits)];
	}
	return VI_NONE;
}

uint32_t zlfs_sec_by_valid_next(const struct zlfs_sb *sbi, uint32_t sec)
{
	uint32_t n = sbi->vi_link[2 * sec];

	return n != VI_NONE ? n : zlfs_sec_by_valid(sbi, sbi->secs[sec].valid + 1);
}

static void map_put(uint64_t *map, uint32_t i, bool on)
{
	if (on)
		map[i / 64] |= 1ull << (i % 64);
	else
		map[i / 64] &= ~(1ull << (i % 64));
}

/* The first set bit of map at or after i, below n; n if none. */
static uint32_t map_next(const uint64_t *map, uint32_t i, uint32_t n)
{
	while (i < n) {
		uint64_t bits = map[i / 64] & (~0ull << (i % 64));
		if (bits) {
			uint32_t k = (i & ~63u) + (uint32_t)__builtin_ctzll(bits);
			return k < n ? k : n;
		}
		i = (i & ~63u) + 64;
	}
	return n;
}

/* ---- the volume's devices ------------------------------------------------------ */

/* The device holding section sec (their ranges ascend, the first starts at 0). */
static unsigned int sec_member(const struct zlfs_sb *sbi, uint32_t sec)
{
	unsigned int m = sbi->nr_members - 1;

	while (m > 0 && sec < sbi->mem_sec[m])
		m--;
	return m;
}

unsigned int zlfs_sec_member(const struct zlfs_sb *sbi, uint32_t sec)
{
	return sec_member(sbi, sec);
}

/* Which sections each device holds (zf_layout_sec_from). */
static void members_build(struct zlfs_sb *sbi)
{
	struct zlfs_zdev_member m[ZF_MAX_DEVICES];
	int n = sbi->dev ? zlfs_zdev_members(sbi->dev, m, ZF_MAX_DEVICES) : 1;

	if (n < 1 || n > ZF_MAX_DEVICES)
		n = 1;
	sbi->nr_members = (uint32_t)n;
	sbi->mem_sec[0] = 0;
	for (int i = 1; i < n; i++)   /* members ascend: so do their first sections */
		sbi->mem_sec[i] = zf_layout_sec_from(&sbi->lay, m[i].start);
	sbi->mem_sec[n] = sbi->nr_secs;
	for (int i = 0; i < n; i++) {
		sbi->mem_free[i] = 0;
		sbi->mem_cursor[i] = sbi->mem_sec[i];
	}
}

/* Every change of a section's state goes through here: the counts and the index follow. */
static void set_state(struct zlfs_sb *sbi, uint32_t sec, uint8_t state)
{
	struct zsec *z = &sbi->secs[sec];

	if (z->state == state)
		return;
	if (z->state == ZSEC_FREE)
		sbi->mem_free[sec_member(sbi, sec)]--;
	else if (state == ZSEC_FREE)
		sbi->mem_free[sec_member(sbi, sec)]++;
	if (z->state == ZSEC_INUSE)
		vi_remove(sbi, sec);
	if (state == ZSEC_INUSE)
		vi_insert(sbi, sec);
	map_put(sbi->free_map, sec, state == ZSEC_FREE);
	map_put(sbi->prefree_map, sec, state == ZSEC_PREFREE);
	if (z->state == ZSEC_FREE)
		sbi->free_secs--;
	else if (z->state == ZSEC_PREFREE)
		sbi->prefree_secs--;
	if (state == ZSEC_FREE)
		sbi->free_secs++;
	else if (state == ZSEC_PREFREE)
		sbi->prefree_secs++;
	z->state = state;
}

/* A section with nothing valid that no log writes: prefree (freed by the next checkpoint). */
static void maybe_prefree(struct zlfs_sb *sbi, uint32_t sec)
{
	if (!sbi->secs[sec].valid && !zlfs_sec_is_log(sbi, sec) && sbi->secs[sec].state == ZSEC_INUSE)
		set_state(sbi, sec, ZSEC_PREFREE);
}

static uint32_t sec_usable(const struct zlfs_sb *sbi, uint32_t sec)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < sbi->segs_per_sec; i++)
		n += zf_layout_usable_blocks(&sbi->lay, sec * sbi->segs_per_sec + i);
	return n;
}

/* ---- the SIT in memory, a block at a time ------------------------------------------ */

#define SIT_PER_BLK ZF_SIT_ENTRY_PER_BLOCK

/* A segment whose entry is about to change: sit_hold made its block's room. */
static struct zseg *seg_mut(struct zlfs_sb *sbi, uint32_t segno)
{
	struct zseg *b = sbi->sit_blk[segno / SIT_PER_BLK];

	if (!b) {
		fprintf(stderr, "zlfs: BUG: segment %u changed without its SIT block in memory\n",
			segno);
		abort();
	}
	return &b[segno % SIT_PER_BLK];
}

static int sit_read_back(struct zlfs_sb *sbi, uint32_t b);

/*
 * Room for segno's SIT block before it changes: read back if it was
 * dropped with segments in use, else all free, as an absent block reads.
 */
static int sit_hold(struct zlfs_sb *sbi, uint32_t segno)
{
	uint32_t b = segno / SIT_PER_BLK;
	struct zseg *e;

	if (sbi->sit_blk[b])
		return 0;
	if (sbi->sit_out[b])
		return sit_read_back(sbi, b);
	if (!(e = calloc(SIT_PER_BLK, sizeof(struct zseg))))
		return -ENOMEM;
	__atomic_store_n(&sbi->sit_blk[b], e, __ATOMIC_RELEASE);
	__atomic_add_fetch(&sbi->sit_blocks_held, 1, __ATOMIC_RELAXED);
	return 0;
}

static void sit_mark_dirty(struct zlfs_sb *sbi, uint32_t segno)
{
	uint32_t b = segno / SIT_PER_BLK;

	if (!sbi->sit_dirty[b]) {
		sbi->sit_dirty[b] = 1;
		sbi->sit_dirty_blocks++;
	}
}

static bool sit_block_has_log(const struct zlfs_sb *sbi, uint32_t b)
{
	for (int i = 0; i < ZF_NR_LOGS; i++)
		if (sbi->logs[i].segno / SIT_PER_BLK == b)
			return true;
	return false;
}

/*
 * A clean block whose segments are all free and no log's gives its memory
 * back: read again it is all zeros, which is what the volume holds for
 * free segments (a free segment's type and mtime on disk mean nothing,
 * and are written as zeros the next time the block is).
 */
static void sit_release(struct zlfs_sb *sbi, uint32_t b)
{
	struct zseg *e = sbi->sit_blk[b];

	if (!e || sbi->sit_dirty[b] || sit_block_has_log(sbi, b))
		return;
	for (uint32_t k = 0; k < SIT_PER_BLK; k++)
		if (e[k].valid)
			return;
	free(e);
	sbi->sit_blk[b] = NULL;
	sbi->sit_blocks_held--;
}

/*
 * Under the memory bound (super.c's share of cache_mb): a clock drops
 * clean blocks that hold no log's segment down to max, those with
 * segments in use marked to be read back.  Clean means the SIT block on
 * disk (the copy sit_bitmap names) holds what memory does: every change
 * marks its block dirty (a segment's mtime is kept in seconds, as on
 * disk, and 0 once nothing in it is valid, as it reads back).
 * Exclusive holders only, at an operation's start: no entry pointer is
 * held across it.
 */
void zlfs_sit_shrink(struct zlfs_sb *sbi, uint32_t max)
{
	for (uint32_t i = 0; i < 2 * sbi->sit_blocks && sbi->sit_blocks_held > max; i++) {
		uint32_t b = sbi->sit_hand;
		sbi->sit_hand = b + 1 < sbi->sit_blocks ? b + 1 : 0;
		struct zseg *e = sbi->sit_blk[b];
		if (!e || sbi->sit_dirty[b] || sit_block_has_log(sbi, b))
			continue;
		if (sbi->sit_ref[b]) {
			sbi->sit_ref[b] = 0;
			continue;
		}
		bool used = false;
		for (uint32_t k = 0; k < SIT_PER_BLK && !used; k++)
			used = e[k].valid != 0;
		free(e);
		sbi->sit_blk[b] = NULL;
		sbi->sit_out[b] = used;
		sbi->sit_blocks_held--;
		sbi->st.sit_evicted += used;
	}
}

/* Is any block from `from` to the end of the segment valid in map? */
static bool map_any_from(const uint8_t *map, unsigned int from)
{
	for (unsigned int b = from; b < ZF_BLKS_PER_SEG; b++)
		if (zf_msb_test(map, b))
			return true;
	return false;
}

/* Check one segment's entry as read. */
static int seg_check(const struct zlfs_sb *sbi, uint32_t i, const struct zseg *s)
{
	uint32_t usable = zf_layout_usable_blocks(&sbi->lay, i);

	if (zf_sit_map_weight(s->map) != s->valid || s->valid > usable ||
	    (usable < ZF_BLKS_PER_SEG && map_any_from(s->map, usable)) ||
	    (s->valid && s->type >= ZF_NR_LOGS)) {
		fprintf(stderr, "zlfs: SIT entry of segment %u is inconsistent (%u valid, "
			"%u set, type %u, %u usable)\n", i, s->valid, zf_sit_map_weight(s->map),
			s->type, usable);
		return -ZLFS_EFSCORRUPTED;
	}
	return 0;
}

/* A segment gains (d = 1) its first valid block or loses (d = -1) its last. */
static void seg_live(struct zlfs_sb *sbi, uint32_t segno, int d)
{
	sbi->segs_in_use += (uint32_t)d;
	sbi->secs[sec_of(sbi, segno)].live += (uint16_t)d;
}

/* At mount: a segment's entry as loaded goes into (d = 1) or out of (d = -1) the counts. */
static void seg_account(struct zlfs_sb *sbi, uint32_t i, const struct zseg *s, int d)
{
	struct zsec *z = &sbi->secs[sec_of(sbi, i)];

	z->valid += (uint32_t)(d * s->valid);
	z->mtime += (uint64_t)(d * (int64_t)s->mtime);
	sbi->valid_block_count += (uint64_t)(d * s->valid);
	if (s->valid)
		seg_live(sbi, i, d);
}

/* A segment's mtime (seconds) changes: its section's sum follows. */
static void seg_set_mtime(struct zlfs_sb *sbi, uint32_t segno, struct zseg *s, uint64_t mt)
{
	struct zsec *z = &sbi->secs[sec_of(sbi, segno)];

	z->mtime = z->mtime - s->mtime + mt;
	s->mtime = mt;
}

/* ---- loading ---------------------------------------------------------------- */

/*
 * In memory a segment without valid blocks has mtime 0 (what it had on
 * disk means nothing then), so a block read back holds what was dropped
 * and the sections' sums (zsec.mtime) stay exact.
 */
static void sit_load_entry(struct zseg *s, const struct zf_sit_entry *e)
{
	s->valid = (uint16_t)zf_sit_vblocks(e);
	s->type = (uint8_t)zf_sit_type(e);
	s->mtime = s->valid ? zf_le64_to_cpu(e->mtime) : 0;
	memcpy(s->map, e->valid_map, sizeof(s->map));
}

/*
 * On a zoned volume, every zone's condition in a few reports: a section
 * whose zone is empty has nothing written, so nothing valid, and the
 * mount need not read its SIT entries (on a 15 TiB volume most of 140,000
 * SIT blocks).  The conditions are kept for zlfs_seg_fix_zones.
 */
static int report_all_zones(struct zlfs_sb *sbi)
{
	enum { BATCH = 1024 };
	struct zlfs_zone *z;
	int ret = 0;

	if (!sbi->lay.zoned)
		return 0;
	sbi->mount_zcond = malloc(sbi->nr_secs);
	z = malloc(BATCH * sizeof(*z));
	if (!sbi->mount_zcond || !z) {
		free(z);
		return -ENOMEM;
	}
	for (uint32_t s = 0; s < sbi->nr_secs && !ret;) {
		uint32_t nr = sbi->nr_secs - s < BATCH ? sbi->nr_secs - s : BATCH;
		if ((ret = zlfs_disp_report(sbi->disp, sbi->lay.main_zone + s, z, &nr)))
			break;
		if (!nr)
			ret = -EIO;
		for (uint32_t i = 0; i < nr; i++)
			sbi->mount_zcond[s + i] = z[i].cond;
		s += nr;
	}
	free(z);
	return ret;
}

/* Must the mount read SIT block b?  Not when all its segments lie in empty zones. */
static bool sit_block_needed(const struct zlfs_sb *sbi, uint32_t b)
{
	uint32_t first = b * SIT_PER_BLK;
	uint32_t end = first + SIT_PER_BLK < sbi->nr_segs ? first + SIT_PER_BLK : sbi->nr_segs;

	if (!sbi->mount_zcond || sit_block_has_log(sbi, b))
		return true;
	for (uint32_t sec = sec_of(sbi, first); sec <= sec_of(sbi, end - 1); sec++)
		if (zlfs_sec_is_conv(sbi, sec) || sbi->mount_zcond[sec] != ZLFS_ZC_EMPTY)
			return true;
	return false;
}

/*
 * One SIT block as read at mount: checked and counted, and held only if
 * a segment of it is in use or a log's.  A valid bit under a zero count
 * is refused as any inconsistent entry.
 */
static int sit_load_block(struct zlfs_sb *sbi, uint32_t b, const struct zf_sit_block *blk)
{
	uint32_t first = b * SIT_PER_BLK;
	bool used = sit_block_has_log(sbi, b);
	struct zseg e;
	int ret;

	for (uint32_t k = 0; k < SIT_PER_BLK && first + k < sbi->nr_segs; k++) {
		/* most of a large volume: nothing valid, nothing to check (seg_check) */
		if (!zf_sit_vblocks(&blk->entries[k]) && !zf_sit_map_weight(blk->entries[k].valid_map))
			continue;
		sit_load_entry(&e, &blk->entries[k]);
		if ((ret = seg_check(sbi, first + k, &e)))
			return ret;
		used |= e.valid != 0;
	}
	if (!used)
		return 0;
	if ((ret = sit_hold(sbi, first)))
		return ret;
	for (uint32_t k = 0; k < SIT_PER_BLK && first + k < sbi->nr_segs; k++) {
		sit_load_entry(&sbi->sit_blk[b][k], &blk->entries[k]);
		seg_account(sbi, first + k, &sbi->sit_blk[b][k], 1);
	}
	return 0;
}

/*
 * A block dropped under the bound, read back from the copy the last
 * checkpoint named (what it held when dropped: it was clean) and checked
 * again.  Readers (shared lock) come here too: the read is under
 * sit_lock and the pointer is published last.
 */
static int sit_read_back(struct zlfs_sb *sbi, uint32_t b)
{
	struct zf_sit_block *blk = malloc(ZF_BLKSIZE);
	struct zseg *e = calloc(SIT_PER_BLK, sizeof(*e));
	uint32_t first = b * SIT_PER_BLK;
	int ret = 0;

	if (!blk || !e) {
		free(blk);
		free(e);
		return -ENOMEM;
	}
	pthread_mutex_lock(&sbi->sit_lock);
	if (!sbi->sit_blk[b]) {   /* (another reader may have read it meanwhile) */
		int copy = zf_msb_test(sbi->sit_bitmap, b);
		ret = zlfs_read_block(sbi, zf_sit_blkaddr(&sbi->lay, first, copy), blk);
		for (uint32_t k = 0; !ret && k < SIT_PER_BLK && first + k < sbi->nr_segs; k++) {
			sit_load_entry(&e[k], &blk->entries[k]);
			ret = seg_check(sbi, first + k, &e[k]);
		}
		if (!ret) {
			/* the pointer first: a reader that sees sit_out clear then finds it */
			__atomic_store_n(&sbi->sit_blk[b], e, __ATOMIC_RELEASE);
			__atomic_store_n(&sbi->sit_out[b], 0, __ATOMIC_RELEASE);
			/* just asked for: not the clock's next to go (readers' hint: atomic) */
			__atomic_store_n(&sbi->sit_ref[b], 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&sbi->sit_blocks_held, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&sbi->st.sit_reads, 1, __ATOMIC_RELAXED);
			e = NULL;
		}
	}
	pthread_mutex_unlock(&sbi->sit_lock);
	free(e);
	free(blk);
	if (ret == -ZLFS_EFSCORRUPTED)
		ret = zlfs_corrupt(sbi, "SIT block %u is damaged (run fsck.zlfs)", b);
	return ret;
}

/* zlfs_seg_err's, for a block not in memory: its segments are free, or it is read back. */
const struct zseg *zlfs_seg_miss(struct zlfs_sb *sbi, uint32_t segno, int *err)
{
	static const struct zseg none;
	uint32_t b = segno / SIT_PER_BLK;

	if (!__atomic_load_n(&sbi->sit_out[b], __ATOMIC_ACQUIRE)) {
		/* every segment of it free, unless another reader just read it back */
		const struct zseg *e = __atomic_load_n(&sbi->sit_blk[b], __ATOMIC_ACQUIRE);
		return e ? &e[segno % SIT_PER_BLK] : &none;
	}
	if ((*err = sit_read_back(sbi, b))) {
		/* read-only from here: nothing is written or freed on the word of this entry */
		zlfs_set_fatal(sbi, *err);
		return &none;
	}
	return &sbi->sit_blk[b][segno % SIT_PER_BLK];
}

/*
 * Read the SIT blocks the volume uses (the live copy of each, a run of
 * blocks per read) and overlay the CP's SIT journal.
 */
static int sit_load(struct zlfs_sb *sbi, const struct zf_journal *sit_j)
{
	/* block-aligned: a device opened O_DIRECT would bounce (and copy) it */
	uint8_t *buf = aligned_alloc(ZF_BLKSIZE, (size_t)ZLFS_READ_RUN_MAX * ZF_BLKSIZE);
	int ret;

	if (!buf)
		return -ENOMEM;
	if ((ret = report_all_zones(sbi))) {
		free(buf);
		return ret;
	}
	for (uint32_t b = 0; b < sbi->sit_blocks && !ret;) {
		if (!sit_block_needed(sbi, b)) {
			b++;
			continue;
		}
		int copy = zf_msb_test(sbi->sit_bitmap, b);
		uint32_t n = 1;
		while (b + n < sbi->sit_blocks && n < ZLFS_READ_RUN_MAX &&
		       zf_msb_test(sbi->sit_bitmap, b + n) == copy && sit_block_needed(sbi, b + n))
			n++;
		if ((ret = zlfs_read_run(sbi, zf_sit_blkaddr(&sbi->lay, b * SIT_PER_BLK, copy), n, buf)))
			break;
		for (uint32_t i = 0; i < n && !ret; i++, b++)
			ret = sit_load_block(sbi, b, (const void *)(buf + (size_t)i * ZF_BLKSIZE));
		/* a full volume's SIT passes through, its share stays */
		if (sbi->sit_blocks_held > sbi->sit_cap)
			zlfs_sit_shrink(sbi, sbi->sit_cap - sbi->sit_cap / 8);
	}
	free(buf);
	if (ret)
		return ret;
	unsigned int n = zf_le16_to_cpu(sit_j->n_sits);
	if (n > ZF_SIT_JOURNAL_ENTRIES)
		return -ZLFS_EFSCORRUPTED;
	for (unsigned int i = 0; i < n; i++) {
		uint32_t segno = zf_le32_to_cpu(sit_j->sit_j.entries[i].segno);
		struct zseg e;
		if (segno >= sbi->nr_segs)
			return -ZLFS_EFSCORRUPTED;
		sit_load_entry(&e, &sit_j->sit_j.entries[i].se);
		if ((ret = seg_check(sbi, segno, &e)) || (ret = sit_hold(sbi, segno)))
			return ret;
		struct zseg *s = seg_mut(sbi, segno);
		seg_account(sbi, segno, s, -1);
		*s = e;
		seg_account(sbi, segno, s, 1);
		sit_mark_dirty(sbi, segno);   /* written back to the SIT at the next CP */
	}
	return 0;
}

/*
 * Build segment state from the SIT and the CP's SIT journal; the logs
 * were already placed by checkpoint.c.
 */
int zlfs_seg_build(struct zlfs_sb *sbi, const struct zf_journal *sit_j)
{
	int ret;

	sbi->nr_segs = sbi->lay.segment_count_main;
	sbi->segs_per_sec = sbi->lay.segs_per_sec;
	sbi->nr_secs = sbi->lay.section_count;
	sbi->sit_blocks = (sbi->nr_segs + SIT_PER_BLK - 1) / SIT_PER_BLK;
	sbi->sit_blocks_held = 0;
	sbi->sit_hand = 0;
	sbi->sit_blk = calloc(sbi->sit_blocks, sizeof(*sbi->sit_blk));
	sbi->sit_dirty = calloc(sbi->sit_blocks, 1);
	sbi->sit_out = calloc(sbi->sit_blocks, 1);
	sbi->sit_ref = calloc(sbi->sit_blocks, 1);
	sbi->secs = calloc(sbi->nr_secs, sizeof(*sbi->secs));
	if (!sbi->sit_blk || !sbi->sit_dirty || !sbi->sit_out || !sbi->sit_ref || !sbi->secs)
		return -ENOMEM;
	for (int i = 0; i < ZF_NR_LOGS; i++)
		if (sbi->logs[i].segno >= sbi->nr_segs)
			return -ZLFS_EFSCORRUPTED;   /* checkpoint.c placed them in range */
	sbi->valid_block_count = 0;
	sbi->segs_in_use = 0;
	if ((ret = sit_load(sbi, sit_j)))
		return ret;
	/* what the checkpoint's free segment count leaves out when empty */
	sbi->countable_segs = 0;
	for (uint32_t i = 0; i < sbi->nr_segs; i++)
		sbi->countable_segs += !sbi->lay.zones_visible ||
				       zf_layout_usable_blocks(&sbi->lay, i) != 0;
	/*
	 * F2FS's sanity_check_curseg: a log's segment holds blocks of its own
	 * type only, and nothing valid at or after its next block.
	 */
	for (unsigned int i = 0; i < ZF_NR_LOGS; i++) {
		const struct zlog *l = &sbi->logs[i];
		const struct zseg *s = zlfs_seg(sbi, l->segno);
		if ((s->valid && s->type != i) || map_any_from(s->map, l->blkoff)) {
			fprintf(stderr, "zlfs: log %u's segment %u (type %u) has valid blocks at or "
				"after its next block %u\n", i, l->segno, s->type, l->blkoff);
			return -ZLFS_EFSCORRUPTED;
		}
	}
	sbi->free_secs = 0;
	sbi->prefree_secs = 0;
	members_build(sbi);
	sbi->vi_counts = sbi->segs_per_sec * ZF_BLKS_PER_SEG + 1;
	sbi->vi_link = malloc(2 * (size_t)sbi->nr_secs * sizeof(uint32_t));
	sbi->vi_head = malloc(sbi->vi_counts * sizeof(uint32_t));
	sbi->vi_nonempty = calloc((sbi->vi_counts + 63) / 64, sizeof(uint64_t));
	sbi->free_map = calloc((sbi->nr_secs + 63) / 64, sizeof(uint64_t));
	sbi->prefree_map = calloc((sbi->nr_secs + 63) / 64, sizeof(uint64_t));
	if (!sbi->vi_link || !sbi->vi_head || !sbi->vi_nonempty || !sbi->free_map ||
	    !sbi->prefree_map)
		return -ENOMEM;
	memset(sbi->vi_head, 0xff, sbi->vi_counts * sizeof(uint32_t));   /* VI_NONE */
	/* from the last section down: each list then starts in section order */
	for (uint32_t s = sbi->nr_secs; s-- > 0;) {
		if (sbi->secs[s].valid || zlfs_sec_is_log(sbi, s)) {
			sbi->secs[s].state = ZSEC_INUSE;
			vi_insert(sbi, s);
		} else {
			sbi->secs[s].state = ZSEC_FREE;
			map_put(sbi->free_map, s, true);
			sbi->free_secs++;
			sbi->mem_free[sec_member(sbi, s)]++;
		}
	}
	sbi->sec_blocks = sec_usable(sbi, 0);   /* every section has the zone capacity */
	return 0;
}

uint32_t zlfs_seg_free_count(const struct zlfs_sb *sbi)
{
	uint32_t used = sbi->segs_in_use;

	/* empty log segments are not free; a segment two logs share counts once */
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		uint32_t segno = sbi->logs[i].segno;
		bool seen = false;
		for (int j = 0; j < i; j++)
			seen |= sbi->logs[j].segno == segno;
		if (!seen && !zlfs_seg(sbi, segno)->valid &&
		    (!sbi->lay.zones_visible || zf_layout_usable_blocks(&sbi->lay, segno)))
			used++;
	}
	return sbi->countable_segs > used ? sbi->countable_segs - used : 0;
}

void zlfs_seg_destroy(struct zlfs_sb *sbi)
{
	free(sbi->claim);
	sbi->claim = NULL;
	if (sbi->reloc) {
		free(sbi->reloc->keys);
		free(sbi->reloc);
		sbi->reloc = NULL;
	}
	for (uint32_t b = 0; sbi->sit_blk && b < sbi->sit_blocks; b++)
		free(sbi->sit_blk[b]);
	free(sbi->sit_blk);
	free(sbi->sit_dirty);
	free(sbi->sit_out);
	free(sbi->sit_ref);
	sbi->sit_out = sbi->sit_ref = NULL;
	free(sbi->secs);
	free(sbi->mount_zcond);
	free(sbi->vi_link);
	free(sbi->vi_head);
	free(sbi->vi_nonempty);
	free(sbi->free_map);
	free(sbi->prefree_map);
	sbi->vi_link = sbi->vi_head = NULL;
	sbi->vi_nonempty = sbi->free_map = sbi->prefree_map = NULL;
	sbi->sit_blk = NULL;
	sbi->sit_dirty = NULL;
	sbi->secs = NULL;
	sbi->mount_zcond = NULL;
}

/* ---- allocation ---------------------------------------------------------------- */

static int write_ssa(struct zlfs_sb *sbi, struct zlog *l)
{
	return zlfs_write_meta_block(sbi, zf_ssa_blkaddr(&sbi->lay, l->segno), &l->sum);
}

static int log_start_segment(struct zlfs_sb *sbi, unsigned int log, uint32_t segno)
{
	struct zlog *l = &sbi->logs[log];
	int ret;

	if ((ret = sit_hold(sbi, segno)))
		return ret;
	l->segno = segno;
	l->blkoff = 0;
	l->usable = zf_layout_usable_blocks(&sbi->lay, segno);
	memset(&l->sum, 0, sizeof(l->sum));
	l->sum.footer.entry_type = zf_log_is_node(log) ? ZF_SUM_TYPE_NODE : ZF_SUM_TYPE_DATA;
	seg_mut(sbi, segno)->type = (uint8_t)log;
	sit_mark_dirty(sbi, segno);
	return 0;
}

/*
 * The floor under the user's data logs: below it only GC's log and the
 * node logs (the checkpoint) take sections.  Each active log may need one
 * fresh section to get through one GC pass and the checkpoint after it
 * (the checkpoint moves logs off full segments, nodes go to the node logs,
 * GC's data to its log), so the floor is one section per active log.
 * Foreground GC (gc.c) keeps free sections above the reserve, which is
 * larger, so users meet this floor only when the device is really full.
 */
uint32_t zlfs_seg_floor(const struct zlfs_sb *sbi)
{
	return (uint32_t)__builtin_popcount(sbi->log_mask);
}

/*
 * The device the next section of `log` comes from, or -1 if none has a
 * free section.  Of several, the one where the fewest other logs write,
 * then the one with the most free sections: the logs spread over the
 * devices, so that their writes go to several at once, and the devices
 * fill evenly.  (Each device's open and active zone limits hold: the
 * volume's are the smallest of its devices', and mkfs sized the logs to
 * them, so no device ever has more zones open than that.)
 */
static int pick_member(const struct zlfs_sb *sbi, unsigned int log)
{
	int best = -1;
	unsigned int best_logs = 0;

	for (unsigned int m = 0; m < sbi->nr_members; m++) {
		if (!sbi->mem_free[m])
			continue;
		unsigned int logs = 0;
		for (unsigned int i = 0; i < ZF_NR_LOGS; i++)
			logs += i != log && (sbi->log_mask & (1u << i)) &&
				sec_member(sbi, sec_of(sbi, sbi->logs[i].segno)) == m;
		if (best < 0 || logs < best_logs ||
		    (logs == best_logs && sbi->mem_free[m] > sbi->mem_free[best])) {
			best = (int)m;
			best_logs = logs;
		}
	}
	return best;
}

/* Give log `log` a new free section (its zone is empty); force: dip into the floor. */
static int log_new_section(struct zlfs_sb *sbi, unsigned int log, bool force)
{
	struct zlog *l = &sbi->logs[log];

	if (!force && !zf_log_is_node(log) && sbi->free_secs <= zlfs_seg_floor(sbi))
		return -ENOSPC;
	int m = pick_member(sbi, log);
	if (m < 0)
		return -ENOSPC;
	/* that device's next free section from its cursor on, wrapping once */
	uint32_t lo = sbi->mem_sec[m], hi = sbi->mem_sec[m + 1];
	uint32_t cur = sbi->mem_cursor[m] >= lo && sbi->mem_cursor[m] < hi ? sbi->mem_cursor[m] : lo;
	uint32_t s = map_next(sbi->free_map, cur, hi);
	if (s == hi && (s = map_next(sbi->free_map, lo, cur)) == cur)
		s = hi;
	if (s < hi && sbi->secs[s].state == ZSEC_FREE) {
		uint32_t old_sec = sec_of(sbi, l->segno);
		int ret = log_start_segment(sbi, log, s * sbi->segs_per_sec);
		if (ret)
			return ret;
		set_state(sbi, s, ZSEC_INUSE);
		sbi->mem_cursor[m] = s + 1;
		/* the old section may have emptied while it was the log's */
		maybe_prefree(sbi, old_sec);
		return 0;
	}
	return -ENOSPC;
}

/* Move log `log` to its next segment, or a new free section. */
static int log_next_segment(struct zlfs_sb *sbi, unsigned int log, bool force)
{
	struct zlog *l = &sbi->logs[log];
	int ret;

	if ((ret = write_ssa(sbi, l)))
		return ret;
	uint32_t next = l->segno + 1;
	if (next < sbi->nr_segs && sec_of(sbi, next) == sec_of(sbi, l->segno) &&
	    zf_layout_usable_blocks(&sbi->lay, next))
		return log_start_segment(sbi, log, next);
	return log_new_section(sbi, log, force);
}

static int alloc_in(struct zlfs_sb *sbi, unsigned int log, bool force, uint32_t nid, uint16_t ofs,
		    uint8_t version, uint32_t *blkaddr)
{
	struct zlog *l;
	int ret;

	log = zf_log_effective(sbi->log_mask, log);
	l = &sbi->logs[log];
	if (l->blkoff >= l->usable && (ret = log_next_segment(sbi, log, force)))
		return ret;
	struct zseg *s = seg_mut(sbi, l->segno);
	uint32_t off = l->blkoff++;
	*blkaddr = zf_seg_blkaddr(&sbi->lay, l->segno) + off;
	l->sum.entries[off].nid = zf_cpu_to_le32(nid);
	l->sum.entries[off].version = version;
	l->sum.entries[off].ofs_in_node = zf_cpu_to_le16(ofs);
	zf_msb_set(s->map, off);
	if (!s->valid++)
		seg_live(sbi, l->segno, 1);
	s->type = (uint8_t)log;
	seg_set_mtime(sbi, l->segno, s, zlfs_now_ms() / 1000);
	sit_mark_dirty(sbi, l->segno);
	sec_valid_add(sbi, sec_of(sbi, l->segno), 1);
	sbi->valid_block_count++;
	sbi->dirty = true;
	if (zf_log_is_node(log))
		sbi->st.node_blocks++;
	else
		sbi->st.data_blocks++;
	/*
	 * Node logs move on as soon as a segment fills, so the footer of the
	 * node just placed can name where the next one goes (next_blkaddr,
	 * which the fsync chain follows).  If no section is free the log
	 * stays full; zlfs_log_next_blkaddr then says 0.
	 */
	if (zf_log_is_node(log) && l->blkoff >= l->usable)
		(void)log_next_segment(sbi, log, true);
	return 0;
}

uint32_t zlfs_log_next_blkaddr(const struct zlfs_sb *sbi, unsigned int log)
{
	const struct zlog *l = &sbi->logs[zf_log_effective(sbi->log_mask, log)];

	if (l->blkoff >= l->usable)
		return 0;
	return zf_seg_blkaddr(&sbi->lay, l->segno) + l->blkoff;
}

int zlfs_alloc_block(struct zlfs_sb *sbi, unsigned int log, uint32_t nid, uint16_t ofs,
		     uint8_t version, uint32_t *blkaddr)
{
	return alloc_in(sbi, log, false, nid, ofs, version, blkaddr);
}

int zlfs_alloc_meta_block(struct zlfs_sb *sbi, unsigned int log, uint32_t nid, uint16_t ofs,
			  uint8_t version, uint32_t *blkaddr)
{
	return alloc_in(sbi, log, true, nid, ofs, version, blkaddr);
}

int zlfs_alloc_gc_block(struct zlfs_sb *sbi, uint32_t nid, uint16_t ofs, uint8_t version,
			uint32_t *blkaddr)
{
	return alloc_in(sbi, ZF_LOG_COLD_DATA, true, nid, ofs, version, blkaddr);
}

/*
 * Before a checkpoint: no active log may sit on a full segment.  F2FS
 * moves a log on as soon as its segment fills, so a checkpoint never
 * records cur_*_blkoff == 512, and fsck.f2fs and the kernel refuse one
 * that does ("Checkpoint is polluted").  zlfs moves lazily, on the next
 * allocation; here the move is made, the full segment's summary written.
 */
int zlfs_seg_settle_logs(struct zlfs_sb *sbi)
{
	for (unsigned int i = 0; i < ZF_NR_LOGS; i++) {
		int ret;
		if (!(sbi->log_mask & (1u << i)) || sbi->logs[i].blkoff < ZF_BLKS_PER_SEG)
			continue;
		if ((ret = log_next_segment(sbi, i, true)))
			return ret;
		sbi->dirty = true;
	}
	return 0;
}

uint64_t zlfs_segs_valid(struct zlfs_sb *sbi, uint32_t s0, uint32_t s1)
{
	uint64_t valid = 0;

	for (uint32_t s = s0; s < s1 && s < sbi->nr_segs;) {
		if (s % sbi->segs_per_sec == 0 && s + sbi->segs_per_sec <= s1) {
			valid += sbi->secs[sec_of(sbi, s)].valid;
			s += sbi->segs_per_sec;
		} else {
			valid += zlfs_seg(sbi, s++)->valid;
		}
	}
	return valid;
}

int zlfs_block_in_use(const struct zlfs_sb *sbi, uint32_t blkaddr)
{
	int err;

	if (!zlfs_is_main_blkaddr(sbi, blkaddr))
		return 0;
	uint32_t rel = blkaddr - sbi->lay.main_blkaddr;
	const struct zseg *e = zlfs_seg_err(sbi, rel / ZF_BLKS_PER_SEG, &err);
	return err ? err : zf_msb_test(e->map, rel % ZF_BLKS_PER_SEG);
}

bool zlfs_block_valid(const struct zlfs_sb *sbi, uint32_t blkaddr)
{
	return zlfs_block_in_use(sbi, blkaddr) > 0;
}

void zlfs_invalidate_block(struct zlfs_sb *sbi, uint32_t blkaddr)
{
	if (blkaddr == ZF_NULL_ADDR || blkaddr == ZF_NEW_ADDR || !zlfs_is_main_blkaddr(sbi, blkaddr))
		return;
	uint32_t rel = blkaddr - sbi->lay.main_blkaddr;
	uint32_t segno = rel / ZF_BLKS_PER_SEG, off = rel % ZF_BLKS_PER_SEG;
	if (!zf_msb_test(zlfs_seg(sbi, segno)->map, off)) {   /* (reads a dropped block back) */
		if (!sbi->fatal)
			fprintf(stderr, "zlfs: freeing block %u twice\n", blkaddr);
		return;
	}
	struct zseg *s = seg_mut(sbi, segno);   /* a valid block's: in memory */
	zf_msb_clear(s->map, off);
	if (!--s->valid) {
		seg_live(sbi, segno, -1);
		seg_set_mtime(sbi, segno, s, 0);
	}
	sit_mark_dirty(sbi, segno);
	uint32_t sec = sec_of(sbi, segno);
	sec_valid_add(sbi, sec, -1);
	sbi->valid_block_count--;
	sbi->dirty = true;
	maybe_prefree(sbi, sec);
}

/*
 * statfs without the filesystem lock: a df must not wait behind a writer
 * (and hold the mount meanwhile, failing an umount with EBUSY).  The
 * figures are those of the last release of the exclusive lock;
 * user_block_count and max_nid do not change while mounted.
 * f_bavail leaves out the writeback gate's reserve.
 */
void zlfs_statfs(struct zlfs_sb *sbi, struct statvfs *st)
{
	uint64_t bfree = __atomic_load_n(&sbi->pub_free_blocks, __ATOMIC_RELAXED);
	uint32_t nodes = __atomic_load_n(&sbi->pub_valid_nodes, __ATOMIC_RELAXED);
	uint32_t usable_nids = sbi->max_nid - ZF_FIRST_FREE_NID;

	memset(st, 0, sizeof(*st));
	st->f_bsize = ZF_BLKSIZE;
	st->f_frsize = ZF_BLKSIZE;
	st->f_blocks = sbi->user_block_count;
	/*
	 * What can be written now: the user's share less what is valid and
	 * the nodes not written yet.  Dead blocks and prefree sections count
	 * as free: a write that needs them runs GC and the checkpoint first.
	 */
	st->f_bfree = bfree;
	/*
	 * Under the writeback gate a buffered write gets ENOSPC once less
	 * than the reserve is free (fuse_file.c): what is available to the
	 * user is what lies above it, as ext4 shows its root reserve.
	 */
	uint64_t reserve = __atomic_load_n(&sbi->wb_reserve, __ATOMIC_RELAXED);
	st->f_bavail = bfree > reserve ? bfree - reserve : 0;
	st->f_files = usable_nids;
	st->f_ffree = usable_nids > nodes ? usable_nids - nodes : 0;
	if (st->f_ffree > st->f_bfree)
		st->f_ffree = st->f_bfree;   /* every inode needs a block */
	st->f_favail = st->f_ffree;
	st->f_namemax = ZF_NAME_LEN;
}

void zlfs_space_set_reserve(struct zlfs_sb *sbi, uint64_t blocks)
{
	__atomic_store_n(&sbi->wb_reserve, blocks, __ATOMIC_RELAXED);
}

uint64_t zlfs_user_bytes(const struct zlfs_sb *sbi)
{
	return sbi->user_block_count * ZF_BLKSIZE;
}

bool zlfs_space_low(struct zlfs_sb *sbi)
{
	uint64_t reserve = __atomic_load_n(&sbi->wb_reserve, __ATOMIC_RELAXED);

	return reserve && __atomic_load_n(&sbi->pub_free_blocks, __ATOMIC_RELAXED) < reserve;
}

uint32_t zlfs_sec_of_blkaddr(const struct zlfs_sb *sbi, uint32_t blkaddr)
{
	return sec_of(sbi, (blkaddr - sbi->lay.main_blkaddr) / ZF_BLKS_PER_SEG);
}

/* ---- roll-forward: blocks written after the checkpoint become valid ---------------- */

/*
 * One SSA block kept between claims (sbi->claim: roll-forward claims
 * blocks mostly in log order); written back when another segment's is
 * needed and at the end.  The SSA is metadata written in place: an entry
 * of a block the checkpoint does not count as valid means nothing to it,
 * so writing it before the checkpoint that makes the block valid is safe.
 */
struct zclaim {
	uint32_t segno;          /* ~0: none loaded */
	bool dirty;
	struct zf_summary_block sum;
};

int zlfs_seg_claim_done(struct zlfs_sb *sbi)
{
	struct zclaim *c = sbi->claim;
	int ret = 0;

	if (!c)
		return 0;
	if (c->segno != ~0u && c->dirty)
		ret = zlfs_write_meta_block(sbi, zf_ssa_blkaddr(&sbi->lay, c->segno), &c->sum);
	free(c);
	sbi->claim = NULL;
	return ret;
}

static struct zf_summary *claim_entry(struct zlfs_sb *sbi, uint32_t segno, uint32_t off,
				      int *err)
{
	struct zclaim *c = sbi->claim;

	for (int i = 0; i < ZF_NR_LOGS; i++)
		if (sbi->logs[i].segno == segno)
			return &sbi->logs[i].sum.entries[off];   /* written with the log's SSA */
	if (c && c->segno != segno) {
		if ((*err = zlfs_seg_claim_done(sbi)))
			return NULL;
		c = NULL;
	}
	if (!c) {
		if (!(c = sbi->claim = calloc(1, sizeof(*c)))) {
			*err = -ENOMEM;
			return NULL;
		}
		c->segno = ~0u;
		if ((*err = zlfs_read_block(sbi, zf_ssa_blkaddr(&sbi->lay, segno), &c->sum)))
			return NULL;
		c->segno = segno;
		if (!zlfs_seg(sbi, segno)->valid) {
			/* a segment the checkpoint has empty: its old summary means nothing */
			memset(&c->sum, 0, sizeof(c->sum));
			c->sum.footer.entry_type = ZF_SUM_TYPE_DATA;
		}
	}
	c->dirty = true;
	return &c->sum.entries[off];
}

int zlfs_seg_claim_block(struct zlfs_sb *sbi, uint32_t blkaddr, uint32_t nid, uint16_t ofs,
			 uint8_t version, bool was_hole)
{
	int err = 0;

	if (!zlfs_is_main_blkaddr(sbi, blkaddr))
		return -EINVAL;
	uint32_t rel = blkaddr - sbi->lay.main_blkaddr;
	uint32_t segno = rel / ZF_BLKS_PER_SEG, off = rel % ZF_BLKS_PER_SEG;
	const struct zseg *cur = zlfs_seg(sbi, segno);
	if (off >= zf_layout_usable_blocks(&sbi->lay, segno))
		return -EINVAL;
	if (zf_msb_test(cur->map, off))
		return -EEXIST;
	if (cur->valid && zf_log_is_node(cur->type))
		return -EINVAL;     /* a node segment: not where file data was written */
	if ((err = sit_hold(sbi, segno)))
		return err;
	struct zseg *s = seg_mut(sbi, segno);
	struct zf_summary *e = claim_entry(sbi, segno, off, &err);
	if (!e)
		return err;
	e->nid = zf_cpu_to_le32(nid);
	e->version = version;
	e->ofs_in_node = zf_cpu_to_le16(ofs);
	if (!s->valid)   /* as the kernel's __f2fs_replace_block in recovery */
		s->type = was_hole ? ZF_LOG_COLD_DATA : ZF_LOG_WARM_DATA;
	zf_msb_set(s->map, off);
	if (!s->valid++)
		seg_live(sbi, segno, 1);
	seg_set_mtime(sbi, segno, s, zlfs_now_ms() / 1000);
	sit_mark_dirty(sbi, segno);
	uint32_t sec = sec_of(sbi, segno);
	sec_valid_add(sbi, sec, 1);
	set_state(sbi, sec, ZSEC_INUSE);
	sbi->valid_block_count++;
	sbi->dirty = true;
	return 0;
}

/* ---- the relocation map ------------------------------------------------------------- */

static uint32_t *reloc_slot(struct zgc_reloc *r, uint32_t key)
{
	uint32_t i = (key * 2654435761u) & (r->cap - 1);
	while (r->keys[i] && r->keys[i] != key)
		i = (i + 1) & (r->cap - 1);
	return &r->keys[i];
}

static int reloc_grow(struct zlfs_sb *sbi)
{
	struct zgc_reloc *r = sbi->reloc, nr;

	nr.cap = r && r->cap ? r->cap * 2 : 1024;
	nr.n = 0;
	nr.keys = calloc(2 * (size_t)nr.cap, sizeof(uint32_t));
	if (!nr.keys)
		return -ENOMEM;
	if (!r) {
		if (!(r = sbi->reloc = calloc(1, sizeof(*r)))) {
			free(nr.keys);
			return -ENOMEM;
		}
	}
	for (uint32_t i = 0; i < r->cap; i++) {
		if (!r->keys[i])
			continue;
		uint32_t *k = reloc_slot(&nr, r->keys[i]);
		*k = r->keys[i];
		k[nr.cap] = r->keys[i + r->cap];
		nr.n++;
	}
	free(r->keys);
	*r = nr;
	return 0;
}

void zlfs_seg_reloc_add(struct zlfs_sb *sbi, uint32_t old, uint32_t new_addr)
{
	/* without memory the move is simply not recorded: a user write racing
	 * it then loses to GC's copy, as to any concurrent overwrite */
	if ((!sbi->reloc || 2 * (sbi->reloc->n + 1) > sbi->reloc->cap) && reloc_grow(sbi))
		return;
	struct zgc_reloc *r = sbi->reloc;
	uint32_t *k = reloc_slot(r, old);
	if (!*k)
		r->n++;
	*k = old;
	k[r->cap] = new_addr;
}

bool zlfs_seg_moved(struct zlfs_sb *sbi, uint32_t old, uint32_t cur)
{
	struct zgc_reloc *r = sbi->reloc;

	/* follow old -> its copy -> the copy's copy ...: GC may have moved it twice */
	for (int hop = 0; r && r->n && hop < 64 && old; hop++) {
		uint32_t *k = reloc_slot(r, old);
		if (!*k)
			return false;
		old = k[r->cap];
		if (old == cur)
			return true;
	}
	return false;
}

void zlfs_seg_reloc_clear(struct zlfs_sb *sbi)
{
	struct zgc_reloc *r = sbi->reloc;
	if (r && r->n) {
		memset(r->keys, 0, 2 * (size_t)r->cap * sizeof(uint32_t));
		r->n = 0;
	}
}

/* ---- checkpoint support ------------------------------------------------------------ */

static void sit_fill_entry(const struct zlfs_sb *sbi, uint32_t segno, struct zf_sit_entry *e)
{
	const struct zseg *s = zlfs_seg(sbi, segno);
	zf_sit_set(e, s->type, s->valid);
	memcpy(e->valid_map, s->map, sizeof(s->map));
	e->mtime = zf_cpu_to_le64(s->mtime);
}

int zlfs_seg_flush(struct zlfs_sb *sbi)
{
	struct zf_sit_block *blk;
	int ret = 0;

	/* summaries of the open segments: the SSA is what fsck and GC read */
	for (int i = 0; i < ZF_NR_LOGS; i++)
		if ((ret = write_ssa(sbi, &sbi->logs[i])))
			return ret;
	blk = calloc(1, ZF_BLKSIZE);
	if (!blk)
		return -ENOMEM;
	for (uint32_t b = 0; b < sbi->sit_blocks; b++) {
		uint32_t first = b * SIT_PER_BLK;
		if (!sbi->sit_dirty[b])
			continue;
		memset(blk, 0, ZF_BLKSIZE);
		for (uint32_t k = 0; k < SIT_PER_BLK && first + k < sbi->nr_segs; k++)
			sit_fill_entry(sbi, first + k, &blk->entries[k]);
		/* write the copy the last checkpoint does not use, then point at it */
		int copy = !zf_msb_test(sbi->sit_bitmap, b);
		if ((ret = zlfs_write_meta_block(sbi, zf_sit_blkaddr(&sbi->lay, first, copy), blk)))
			break;
		if (copy)
			zf_msb_set(sbi->sit_bitmap, b);
		else
			zf_msb_clear(sbi->sit_bitmap, b);
		sbi->sit_dirty[b] = 0;
		sbi->sit_dirty_blocks--;
		sbi->st.cp_sit_written++;
	}
	free(blk);
	return ret;
}

/* Is main-area section sec in a conventional zone (no write pointer, no reset)? */
bool zlfs_sec_is_conv(const struct zlfs_sb *sbi, uint32_t sec)
{
	return !sbi->lay.zoned || sbi->lay.main_zone + sec < sbi->lay.nr_conv;
}

/*
 * After a checkpoint committed: prefree sections are free; reset their
 * zones.  Nothing can be in flight to them: they hold no valid block, no
 * log writes there, and the checkpoint waited for every I/O in flight.
 */
void zlfs_seg_after_cp(struct zlfs_sb *sbi)
{
	for (uint32_t s = map_next(sbi->prefree_map, 0, sbi->nr_secs); s < sbi->nr_secs;
	     s = map_next(sbi->prefree_map, s + 1, sbi->nr_secs)) {
		if (sbi->secs[s].valid || zlfs_sec_is_log(sbi, s)) {
			set_state(sbi, s, ZSEC_INUSE);
			continue;
		}
		uint32_t zone = sbi->lay.main_zone + s;
		if (!zlfs_sec_is_conv(sbi, s)) {
			int ret = zlfs_disp_zone_mgmt(sbi->disp, ZLFS_ZM_RESET, zone);
			if (ret) {
				fprintf(stderr, "zlfs: reset of zone %u failed: %s\n", zone,
					zlfs_zdev_strerror(ret));
				continue;     /* stays prefree; tried again next time */
			}
			sbi->st.zones_reset++;
		}
		/* (its segments' mtimes are 0 already: nothing valid in them) */
		uint32_t first = s * sbi->segs_per_sec, last = first + sbi->segs_per_sec - 1;
		for (uint32_t b = first / SIT_PER_BLK; b <= last / SIT_PER_BLK; b++)
			sit_release(sbi, b);
		set_state(sbi, s, ZSEC_FREE);
	}
}

/*
 * At mount: make every zone agree with the SIT.  A log whose zone's write
 * pointer is not where the checkpoint says (writes after the checkpoint,
 * an unclean stop) moves to a fresh section; the old zone is finished.
 * Zones with nothing valid that are not empty become PREFREE: reset only
 * after the mount's checkpoint commits, because until then the previous
 * checkpoint is in force and its fsync chain (in such zones) must stay
 * readable, should the mount itself be cut short.  Zones with data that
 * are still open are finished, so no zone stays active without a log.
 * Writes nothing but zone finishes; called after roll-forward's scan.
 */
static int report_zone(struct zlfs_sb *sbi, uint32_t sec, struct zlfs_zone *z)
{
	uint32_t nr = 1;
	int ret = zlfs_disp_report(sbi->disp, sbi->lay.main_zone + sec, z, &nr);
	return ret ? ret : (nr == 1 ? 0 : -EIO);
}

static uint64_t log_wp(const struct zlfs_sb *sbi, const struct zlog *l)
{
	return (uint64_t)(zf_seg_blkaddr(&sbi->lay, l->segno) + l->blkoff) * ZF_BLKSIZE;
}

static bool zone_settled(const struct zlfs_zone *z)
{
	return z->cond == ZLFS_ZC_EMPTY || z->cond == ZLFS_ZC_FULL || z->cond == ZLFS_ZC_OFFLINE ||
	       z->cond == ZLFS_ZC_RDONLY;
}

void zlfs_seg_hold(struct zlfs_sb *sbi, uint32_t blkaddr)
{
	if (!zlfs_is_main_blkaddr(sbi, blkaddr))
		return;
	uint32_t sec = zlfs_sec_of_blkaddr(sbi, blkaddr);
	if (sbi->secs[sec].state == ZSEC_FREE)
		set_state(sbi, sec, ZSEC_PREFREE);
}

int zlfs_seg_fix_zones(struct zlfs_sb *sbi)
{
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)sbi->cp_blk;
	bool clean = zf_le32_to_cpu(cp->ckpt_flags) & ZF_CP_UMOUNT_FLAG;
	struct zlfs_zone z;
	int ret;

	/*
	 * 0: a log in a conventional section after an unclean stop starts
	 *    over in a fresh section: writes after the checkpoint may follow
	 *    its position there (data and nodes roll-forward just claimed), and
	 *    without a write pointer nothing says how far.  Chain blocks in
	 *    free sections were held (zlfs_seg_hold), so the fresh one has none.
	 */
	for (int i = 0; i < ZF_NR_LOGS && !clean; i++) {
		struct zlog *l = &sbi->logs[i];
		if (!zlfs_sec_is_conv(sbi, sec_of(sbi, l->segno)) || !(sbi->log_mask & (1u << i)))
			continue;
		if ((ret = write_ssa(sbi, l)) || (ret = log_new_section(sbi, (unsigned int)i, true)))
			return ret;
	}
	if (!sbi->lay.zoned)
		return 0;
	/* 1: free sections must have empty zones before anything is allocated
	 *    there (writes after the checkpoint may be there): else prefree.
	 *    The conditions the mount's report found still hold for sections
	 *    free now: only a log writes a zone, and a log's section is not
	 *    free (a zone reset since then only makes this too careful). */
	for (uint32_t s = 0; s < sbi->nr_secs; s++) {
		if (sbi->secs[s].state != ZSEC_FREE || zlfs_sec_is_conv(sbi, s))
			continue;
		uint8_t cond;
		if (sbi->mount_zcond) {
			cond = sbi->mount_zcond[s];
		} else {
			if ((ret = report_zone(sbi, s, &z)))
				return ret;
			cond = z.cond;
		}
		if (cond != ZLFS_ZC_EMPTY && cond != ZLFS_ZC_OFFLINE && cond != ZLFS_ZC_RDONLY)
			set_state(sbi, s, ZSEC_PREFREE);
	}
	free(sbi->mount_zcond);
	sbi->mount_zcond = NULL;
	/* 2: a log whose zone's write pointer is not where the checkpoint says
	 *    (writes landed after it) starts over in a fresh, empty section */
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		struct zlog *l = &sbi->logs[i];
		uint32_t sec = sec_of(sbi, l->segno);
		if (zlfs_sec_is_conv(sbi, sec))
			continue;    /* no write pointer: step 0 */
		if ((ret = report_zone(sbi, sec, &z)))
			return ret;
		uint64_t expect = log_wp(sbi, l);
		if (z.wp == expect && z.cond != ZLFS_ZC_FULL)
			continue;
		/* (the old section turns prefree there if nothing in it is valid) */
		if ((ret = write_ssa(sbi, l)) || (ret = log_new_section(sbi, (unsigned int)i, true)))
			return ret;
	}
	/* 3: no zone stays open (active) without a log: finish the rest */
	for (uint32_t s = 0; s < sbi->nr_secs; s++) {
		if (sbi->secs[s].state == ZSEC_FREE || zlfs_sec_is_log(sbi, s) || zlfs_sec_is_conv(sbi, s))
			continue;
		if ((ret = report_zone(sbi, s, &z)))
			return ret;
		if (!zone_settled(&z) &&
		    (ret = zlfs_disp_zone_mgmt(sbi->disp, ZLFS_ZM_FINISH, sbi->lay.main_zone + s)))
			return ret;
	}
	/* 4: every log now writes at its zone's write pointer */
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		struct zlog *l = &sbi->logs[i];
		if (zlfs_sec_is_conv(sbi, sec_of(sbi, l->segno)))
			continue;
		if ((ret = report_zone(sbi, sec_of(sbi, l->segno), &z)))
			return ret;
		if (z.wp != log_wp(sbi, l)) {
			fprintf(stderr, "zlfs: log %d: zone %u write pointer 0x%llx, expected 0x%llx\n", i,
				sbi->lay.main_zone + sec_of(sbi, l->segno), (unsigned long long)z.wp,
				(unsigned long long)log_wp(sbi, l));
			return -ZLFS_EFSCORRUPTED;
		}
	}
	return 0;
}
