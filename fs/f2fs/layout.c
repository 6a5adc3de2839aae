/*
 * layout.c - the on-disk layout of a zlfs volume (libzlfsfmt).
 *
 * The layout is mkfs.f2fs's for a zoned device, with one section per zone,
 * applied to every device (a device without zones is a row of conventional
 * zones, 64 MiB by default, and gets the same layout):
 *
 *   zone 0            superblock copies at byte 1024 of blocks 0 and 1; the
 *                     rest of the zone is unused, because segment0 must start
 *                     on a zone boundary.
 *   segment0 = CP     zone 1: 2 segments, checkpoint pack 1 then pack 2.
 *   SIT               2 copies back to back, each ceil(segments / 55) blocks
 *                     rounded up to whole segments.
 *   NAT               2 copies interleaved a segment at a time; enough blocks
 *                     for one nid per block of the space after CP and SIT,
 *                     capped so the NAT version bitmap fits the CP block
 *                     beside the SIT bitmap (past 3836 bytes of SIT bitmap,
 *                     the SIT bitmap moves to cp_payload blocks).
 *   SSA               one block per main segment (+1), then padding up to
 *                     the main area.
 *   main              from a zone boundary to the end of the device; one
 *                     section = one zone.
 *
 * All metadata must sit in conventional zones, which come first.  On a
 * device with sequential zones the main area starts at the first of them:
 * conventional zones left over after the metadata become SSA padding, so
 * every main section is a sequential zone and every log writes at a write
 * pointer (mkfs.f2fs would start main right after the metadata and let
 * conventional zones join it).  Without sequential zones main starts right
 * after the metadata.
 *
 * Zone capacity below the zone size: a segment that starts at or past the
 * capacity is unusable (never free, never allocated); one that straddles it
 * has cap - start usable blocks.  Space accounting (overprovision, user
 * blocks) uses usable segments only.
 *
 * Example, 4 GiB with 64 MiB zones, 8 of them conventional (block addresses;
 * tests/unit/test_format.c checks these):
 *   superblocks 0 and 1
 *   CP          16384 (zone 1), 2 segments
 *   SIT         17408, 2 segments (1 per copy; 37 blocks used)
 *   NAT         18432, 10 segments (5 per copy)
 *   SSA         23552, 210 segments (1792 blocks used, the rest pads zones 2-7)
 *   main        131072 (zone 8), 56 sections of 32 segments = 1792 segments
 * The same device with no sequential zones puts main at 32768 (zone 2),
 * exactly where mkfs.f2fs -s 32 puts it.
 *
 * zf_layout_from_super reads the layout back from a superblock (the mount and
 * fsck.zlfs), whoever made it.
 *
 * Reservation follows f2fs-tools 1.16's get_reserved()/get_best_overprovision()
 * (Debian 12's 1.15 reserves about twice as much and leaves far less space).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "zlfs/f2fs_check.h"
#include "zlfs/f2fs_layout.h"

#define MIB (1024ull * 1024)

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

int zf_layout_compute(struct zf_layout *l, const struct zlfs_zdev_geom *g,
		      char *err, size_t errlen)
{
	uint64_t segs_per_zone, segment_count, avail, nat_blocks, meta;
	uint32_t sit_segs, nat_segs, ssa_segs, sit_bitmap, nat_bitmap_max, meta_zones;

	memset(l, 0, sizeof(*l));
	if (!g->lbs || g->lbs > ZF_BLKSIZE || ZF_BLKSIZE % g->lbs)
		return fail(err, errlen, -EINVAL, "logical block size %u does not divide the "
			    "4096-byte filesystem block", g->lbs);
	if (!g->zone_size || g->zone_size % ZF_SEG_BYTES)
		return fail(err, errlen, -EINVAL, "zone size %llu bytes is not a multiple of 2 MiB "
			    "(one F2FS segment)", (unsigned long long)g->zone_size);
	if (!g->nr_zones || g->size < (uint64_t)g->nr_zones * g->zone_size)
		return fail(err, errlen, -EINVAL, "device reports %u zones of %llu bytes but "
			    "only %llu bytes", g->nr_zones, (unsigned long long)g->zone_size,
			    (unsigned long long)g->size);
	if (g->zoned && (!g->zone_cap || g->zone_cap > g->zone_size || g->zone_cap % ZF_BLKSIZE))
		return fail(err, errlen, -EINVAL, "zone capacity %llu is not a 4 KiB multiple "
			    "no larger than the zone size", (unsigned long long)g->zone_cap);

	l->dev_bytes = g->size;
	l->sector_size = g->lbs;
	l->nr_zones = g->nr_zones;
	l->nr_conv = g->zoned ? g->nr_conv : g->nr_zones;
	l->zoned = g->zoned;
	l->zones_visible = g->zoned && g->kind == ZLFS_DEV_BLOCK;
	l->zone_blocks = (uint32_t)(g->zone_size / ZF_BLKSIZE);
	l->zone_cap_blocks = g->zoned ? (uint32_t)(g->zone_cap / ZF_BLKSIZE) : l->zone_blocks;
	segs_per_zone = g->zone_size / ZF_SEG_BYTES;
	l->segs_per_sec = (uint32_t)segs_per_zone;
	l->secs_per_zone = 1;
	l->block_count = g->size / ZF_BLKSIZE;

	/* Block addresses are 32 bits: the whole device must be addressable. */
	segment_count = (uint64_t)(g->nr_zones - 1) * segs_per_zone;
	if ((uint64_t)g->nr_zones * l->zone_blocks > UINT32_MAX || segment_count > ZF_MAX_SEGMENTS)
		return fail(err, errlen, -EFBIG, "device too large: F2FS addresses at most 16 TiB");
	if (g->nr_zones < 2)
		return fail(err, errlen, -ENOSPC, "device too small: one zone");

	/* Zone 0 holds only the superblocks; segment0 starts at zone 1. */
	l->segment0_blkaddr = l->zone_blocks;
	l->segment_count = (uint32_t)segment_count;
	l->segment_count_ckpt = ZF_CP_PACKS;
	l->sit_blkaddr = l->segment0_blkaddr + ZF_CP_PACKS * ZF_BLKS_PER_SEG;

	sit_segs = (uint32_t)div_up(div_up(segment_count, ZF_SIT_ENTRY_PER_BLOCK), ZF_BLKS_PER_SEG);
	l->segment_count_sit = 2 * sit_segs;
	l->sit_blocks = sit_segs * ZF_BLKS_PER_SEG;
	l->nat_blkaddr = l->sit_blkaddr + l->segment_count_sit * ZF_BLKS_PER_SEG;

	/*
	 * NAT: one nid for every block after CP and SIT, but the NAT version
	 * bitmap (one bit per NAT block) must fit in the CP block with the SIT
	 * bitmap, or alone when the SIT bitmap moves to cp_payload blocks.
	 */
	avail = (segment_count - ZF_CP_PACKS - l->segment_count_sit) * ZF_BLKS_PER_SEG;
	nat_blocks = div_up(avail, ZF_NAT_ENTRY_PER_BLOCK);
	nat_segs = (uint32_t)div_up(nat_blocks, ZF_BLKS_PER_SEG);
	sit_bitmap = sit_segs * ZF_BLKS_PER_SEG / 8;
	if (sit_bitmap > ZF_CP_MAX_SIT_BITMAP_BYTES) {
		nat_bitmap_max = ZF_CP_MAX_BITMAP_BYTES;
		l->cp_payload = (uint32_t)div_up(sit_bitmap, ZF_BLKSIZE);
	} else {
		nat_bitmap_max = ZF_CP_MAX_BITMAP_BYTES - sit_bitmap;
	}
	if (nat_segs > (nat_bitmap_max * 8) >> ZF_LOG_BLKS_PER_SEG)
		nat_segs = (nat_bitmap_max * 8) >> ZF_LOG_BLKS_PER_SEG;
	l->segment_count_nat = 2 * nat_segs;
	l->sit_bitmap_bytes = sit_bitmap;
	l->nat_bitmap_bytes = nat_segs * ZF_BLKS_PER_SEG / 8;
	l->max_nid = nat_segs * ZF_BLKS_PER_SEG * ZF_NAT_ENTRY_PER_BLOCK;
	l->ssa_blkaddr = l->nat_blkaddr + l->segment_count_nat * ZF_BLKS_PER_SEG;

	/* SSA: a block per remaining segment (+1, as mkfs.f2fs), then pad to a zone. */
	avail = segment_count - ZF_CP_PACKS - l->segment_count_sit - l->segment_count_nat;
	ssa_segs = (uint32_t)div_up(avail + 1, ZF_BLKS_PER_SEG);
	meta = ZF_CP_PACKS + l->segment_count_sit + l->segment_count_nat + ssa_segs;
	meta_zones = (uint32_t)div_up(meta, segs_per_zone);
	l->main_zone = 1 + meta_zones;
	if (l->main_zone >= g->nr_zones)
		return fail(err, errlen, -ENOSPC, "device too small: the metadata alone needs "
			    "%u zones of %u", l->main_zone, g->nr_zones);
	if (g->zoned) {
		if (l->main_zone > g->nr_conv)
			return fail(err, errlen, -ENOSPC, "not enough conventional zones for the "
				    "metadata: %u needed, %u present", l->main_zone, g->nr_conv);
		/* Leftover conventional zones: the main area stays all sequential. */
		l->main_zone = g->nr_conv;
	}
	l->segment_count_ssa = (uint32_t)((uint64_t)(l->main_zone - 1) * segs_per_zone -
					  (ZF_CP_PACKS + l->segment_count_sit + l->segment_count_nat));
	l->main_blkaddr = l->main_zone * l->zone_blocks;

	l->section_count = g->nr_zones - l->main_zone;
	l->segment_count_main = l->section_count * l->segs_per_sec;
	l->ssa_needed = l->segment_count_main;
	/* segment_count must end exactly at the end of main, or fsck.f2fs "fixes" it. */
	l->segment_count = (l->main_blkaddr - l->segment0_blkaddr) / ZF_BLKS_PER_SEG +
			   l->segment_count_main;

	if (l->zoned) {
		l->usable_segs_per_sec = (uint32_t)div_up(l->zone_cap_blocks, ZF_BLKS_PER_SEG);
		l->usable_blks_last_seg = l->zone_cap_blocks -
					  (l->usable_segs_per_sec - 1) * ZF_BLKS_PER_SEG;
	} else {
		l->usable_segs_per_sec = l->segs_per_sec;
		l->usable_blks_last_seg = ZF_BLKS_PER_SEG;
	}
	l->usable_main_segs = l->section_count * l->usable_segs_per_sec;

	/* Six logs in six sections, and fsck.f2fs wants at least 9 sections. */
	if (l->section_count < ZF_MIN_SECTIONS)
		return fail(err, errlen, -ENOSPC, "device too small: %u main-area zones, "
			    "at least %u needed", l->section_count, ZF_MIN_SECTIONS);
	return 0;
}

uint32_t zf_layout_sec_from(const struct zf_layout *l, uint64_t off)
{
	uint64_t main0 = (uint64_t)l->main_blkaddr * ZF_BLKSIZE;
	uint64_t sec_bytes = (uint64_t)l->segs_per_sec * ZF_SEG_BYTES;
	uint64_t s = off <= main0 ? 0 : (off - main0 + sec_bytes - 1) / sec_bytes;

	return s < l->section_count ? (uint32_t)s : l->section_count;
}

uint32_t zf_layout_usable_blocks(const struct zf_layout *l, uint32_t segno)
{
	uint32_t in_sec = segno % l->segs_per_sec;

	if (segno >= l->segment_count_main || in_sec >= l->usable_segs_per_sec)
		return 0;
	if (in_sec == l->usable_segs_per_sec - 1)
		return l->usable_blks_last_seg;
	return ZF_BLKS_PER_SEG;
}

/*
 * What GC needs, in sections (gc.c is the other half of this argument).
 * With L active logs, a GC pass and the checkpoint after it take at most
 * one fresh section per log (GC's log for the victim's live data, which
 * is less than a section; the node logs for the nodes it dirtied; any log
 * the checkpoint moves off a full segment), so L free sections are the
 * floor under user data, and foreground GC keeps one more free for the
 * operation about to write: reserved = L + 2, the extra one so that a
 * victim with dead blocks exists before the floor is reached.  When users
 * have filled their share and no section holds a dead block, the in-use
 * sections are the L log sections and full ones, so the free ones number
 * main - L - user share; overprovision = reserved + L keeps them at the
 * reserve.  Users get everything else.
 */
int zf_layout_ovp(const struct zf_layout *l, unsigned int nlogs, double ratio, struct zf_ovp *o,
		  char *err, size_t errlen)
{
	uint32_t usable = l->usable_main_segs;
	uint32_t per = l->usable_segs_per_sec;
	uint32_t rsvd_secs = nlogs + 2, ovp_secs = rsvd_secs + nlogs;

	memset(o, 0, sizeof(*o));
	if (ratio < 0 || ratio >= 100)
		return fail(err, errlen, -EINVAL, "overprovision ratio %.2f%% is not in (0, 100)",
			    ratio);
	if (!nlogs || nlogs > ZF_NR_LOGS || !per)
		return fail(err, errlen, -EINVAL, "no logs to reserve for");
	/* a ratio asks for more dead space (less write amplification), never less */
	if (ratio > 0) {
		uint32_t want = (uint32_t)div_up((uint64_t)(usable * ratio / 100), per);
		if (want > ovp_secs)
			ovp_secs = want;
	}
	if (ovp_secs >= l->section_count)
		return fail(err, errlen, -ENOSPC, "device too small: GC needs %u of its %u sections "
			    "(%u logs)", ovp_secs, l->section_count, nlogs);
	o->reserved_segs = rsvd_secs * per;
	o->ovp_segs = ovp_secs * per;
	o->ratio = 100.0 * o->ovp_segs / usable;
	o->user_block_count = (uint64_t)(usable - o->ovp_segs) * ZF_BLKS_PER_SEG;
	return 0;
}

unsigned int zf_log_mask_for_limits(uint32_t max_open, uint32_t max_active)
{
	uint32_t lim = max_open;

	if (max_active && (!lim || max_active < lim))
		lim = max_active;
	if (!lim || lim >= ZF_NR_LOGS)
		return ZF_LOGMASK_ALL;
	if (lim >= 4)
		return ZF_LOGMASK_REQUIRED | (1u << ZF_LOG_HOT_NODE) | (1u << ZF_LOG_COLD_DATA);
	if (lim == 3)
		return ZF_LOGMASK_REQUIRED | (1u << ZF_LOG_COLD_DATA);
	if (lim == 2)
		return ZF_LOGMASK_REQUIRED;
	return 0;
}

void zf_layout_cursegs(const struct zf_layout *l, uint32_t segno[ZF_NR_LOGS])
{
	static const uint8_t order[ZF_NR_LOGS] = {
		ZF_LOG_HOT_NODE, ZF_LOG_WARM_NODE, ZF_LOG_COLD_NODE,
		ZF_LOG_HOT_DATA, ZF_LOG_WARM_DATA, ZF_LOG_COLD_DATA,
	};

	for (uint32_t i = 0; i < ZF_NR_LOGS; i++)
		segno[order[i]] = i * l->segs_per_sec;
}

int zf_layout_from_super(struct zf_layout *l, const struct zf_super *sb,
			 const struct zlfs_zdev_geom *g, char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	l->dev_bytes = g->size;
	l->sector_size = g->lbs;
	l->nr_zones = g->nr_zones;
	l->nr_conv = g->nr_conv;
	l->zone_blocks = (uint32_t)(g->zone_size / ZF_BLKSIZE);
	l->zone_cap_blocks = (uint32_t)(g->zone_cap / ZF_BLKSIZE);
	l->segs_per_sec = zf_le32_to_cpu(sb->segs_per_sec);
	l->secs_per_zone = zf_le32_to_cpu(sb->secs_per_zone);
	l->block_count = zf_le64_to_cpu(sb->block_count);
	l->segment0_blkaddr = zf_le32_to_cpu(sb->segment0_blkaddr);
	l->sit_blkaddr = zf_le32_to_cpu(sb->sit_blkaddr);
	l->nat_blkaddr = zf_le32_to_cpu(sb->nat_blkaddr);
	l->ssa_blkaddr = zf_le32_to_cpu(sb->ssa_blkaddr);
	l->main_blkaddr = zf_le32_to_cpu(sb->main_blkaddr);
	l->segment_count = zf_le32_to_cpu(sb->segment_count);
	l->segment_count_ckpt = zf_le32_to_cpu(sb->segment_count_ckpt);
	l->segment_count_sit = zf_le32_to_cpu(sb->segment_count_sit);
	l->segment_count_nat = zf_le32_to_cpu(sb->segment_count_nat);
	l->segment_count_ssa = zf_le32_to_cpu(sb->segment_count_ssa);
	l->segment_count_main = zf_le32_to_cpu(sb->segment_count_main);
	l->section_count = zf_le32_to_cpu(sb->section_count);
	l->cp_payload = zf_le32_to_cpu(sb->cp_payload);
	l->sit_blocks = l->segment_count_sit / 2 * ZF_BLKS_PER_SEG;
	l->max_nid = zf_super_max_nid(sb);
	/* the areas' order and bounds were checked with the superblock (zf_check_super) */
	bool blkzoned = zf_le32_to_cpu(sb->feature) & ZF_FEAT_BLKZONED;
	l->zoned = blkzoned && g->zoned;
	l->zones_visible = l->zoned && g->kind == ZLFS_DEV_BLOCK;
	if (blkzoned && g->zoned) {
		uint64_t sec_bytes = (uint64_t)l->segs_per_sec * ZF_SEG_BYTES;
		if (sec_bytes != g->zone_size || (uint64_t)l->main_blkaddr * ZF_BLKSIZE % g->zone_size) {
			snprintf(err, errlen, "sections do not match the device's zones");
			return -EINVAL;
		}
		/*
		 * mkfs.f2fs -m starts the main area right after the metadata, so
		 * its first sections may be conventional zones: ordinary log
		 * sections without a write pointer or a reset (zlfs_sec_is_conv).
		 */
		l->main_zone = (uint32_t)((uint64_t)l->main_blkaddr * ZF_BLKSIZE / g->zone_size);
		l->usable_segs_per_sec = (l->zone_cap_blocks + ZF_BLKS_PER_SEG - 1) / ZF_BLKS_PER_SEG;
		l->usable_blks_last_seg = l->zone_cap_blocks - (l->usable_segs_per_sec - 1) * ZF_BLKS_PER_SEG;
	} else if (g->zoned && (uint64_t)l->main_blkaddr * ZF_BLKSIZE >=
			       (uint64_t)g->nr_conv * g->zone_size) {
		snprintf(err, errlen, "an F2FS volume without the blkzoned feature on a zoned device");
		return -EINVAL;
	} else {
		l->usable_segs_per_sec = l->segs_per_sec;
		l->usable_blks_last_seg = ZF_BLKS_PER_SEG;
	}
	l->usable_main_segs = l->section_count * l->usable_segs_per_sec;
	return 0;
}
