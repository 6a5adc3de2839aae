/*
 * f2fs_layout.h - where each F2FS area of a zlfs volume lives, computed from
 * the device geometry (libzlfsfmt, fs/f2fs/layout.c; the layout rules are
 * documented at the top of that file).
 *
 * Units: block addresses and counts are in 4 KiB blocks, segment counts in
 * 2 MiB segments; byte quantities say so in their names.  A section is one
 * zone (segs_per_sec = zone size / 2 MiB, secs_per_zone = 1) on every
 * device, zoned or not, so the same code serves both.
 */
#ifndef ZLFS_F2FS_LAYOUT_H
#define ZLFS_F2FS_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zlfs/f2fs_format.h"
#include "zlfs/zdev.h"

struct zf_layout {
	/* from the device */
	uint64_t dev_bytes;
	uint32_t sector_size;           /* the device's logical block size */
	uint32_t nr_zones;
	uint32_t nr_conv;
	uint32_t zone_blocks;
	uint32_t zone_cap_blocks;       /* sequential zones; = zone_blocks otherwise */
	bool zoned;                     /* main area in sequential zones, BLKZONED set */
	/*
	 * Other tools see the zones (a real zoned block device, not an image
	 * file): fsck.f2fs then leaves segments past a zone's capacity out of
	 * its free-segment count, and so must the checkpoint.
	 */
	bool zones_visible;

	/* superblock geometry */
	uint32_t segs_per_sec;
	uint32_t secs_per_zone;
	uint64_t block_count;
	uint32_t segment0_blkaddr;      /* = cp_blkaddr */
	uint32_t sit_blkaddr;
	uint32_t nat_blkaddr;
	uint32_t ssa_blkaddr;
	uint32_t main_blkaddr;
	uint32_t segment_count;         /* segment0 .. end of main */
	uint32_t segment_count_ckpt;
	uint32_t segment_count_sit;     /* both copies */
	uint32_t segment_count_nat;     /* both copies */
	uint32_t segment_count_ssa;     /* includes the padding to main */
	uint32_t segment_count_main;
	uint32_t section_count;
	uint32_t cp_payload;

	/* derived */
	uint32_t main_zone;             /* device zone where the main area starts */
	uint32_t sit_blocks;            /* blocks per SIT copy */
	uint32_t sit_bitmap_bytes;      /* CP sit_ver_bitmap_bytesize */
	uint32_t nat_bitmap_bytes;      /* CP nat_ver_bitmap_bytesize */
	uint32_t max_nid;               /* nids the NAT can map */
	uint32_t ssa_needed;            /* SSA blocks actually used: one per main segment */
	uint32_t usable_segs_per_sec;   /* segments that start below the zone capacity */
	uint32_t usable_blks_last_seg;  /* usable blocks of the last usable segment */
	uint32_t usable_main_segs;
};

/*
 * Space reservation, F2FS's way: reserved segments keep GC able to run,
 * overprovision segments are withheld from users.
 */
struct zf_ovp {
	double ratio;                   /* overprovision, percent of usable space */
	uint32_t reserved_segs;         /* CP rsvd_segment_count */
	uint32_t ovp_segs;              /* CP overprov_segment_count */
	uint64_t user_block_count;      /* CP user_block_count */
};

/*
 * Compute the layout for a device.  Returns 0, or -EINVAL (geometry zlfs
 * cannot use), -ENOSPC (too small, or not enough conventional zones for the
 * metadata) or -EFBIG (too large for 32-bit block addresses); on error a
 * sentence saying why is left in err.
 */
int zf_layout_compute(struct zf_layout *l, const struct zlfs_zdev_geom *g,
		      char *err, size_t errlen);

/*
 * Reserved and overprovision space for a volume with nlogs active logs:
 * what GC provably needs (layout.c says why), or more when an
 * overprovision ratio in percent is given (0: none asked for).  -ENOSPC
 * with a reason in err when the main area cannot hold the reservation.
 */
int zf_layout_ovp(const struct zf_layout *l, unsigned int nlogs, double ratio, struct zf_ovp *o,
		  char *err, size_t errlen);

/*
 * How many logs a device with these open/active zone limits can keep open
 * (0 = no limit), as an active-log mask (see f2fs_format.h): all six from 6
 * open zones up, {hot, warm node; warm, cold data} from 4, {warm node; warm,
 * cold data} from 3, {warm node; warm data} from 2.  0 if fewer than 2.
 */
unsigned int zf_log_mask_for_limits(uint32_t max_open, uint32_t max_active);

/*
 * Where mkfs puts the six current segments: one section each, the first
 * six sections of the main area, node logs first (as mkfs.f2fs on a zoned
 * device), so no two logs ever share a zone.  segno[] is indexed by enum zf_log.
 */
void zf_layout_cursegs(const struct zf_layout *l, uint32_t segno[ZF_NR_LOGS]);

/*
 * The first main-area section that starts at or after byte `off` of the
 * device (section_count past the end): where a device of a multi-device
 * volume starting at `off` begins, counted in sections, and where one
 * ending there ends.  Devices start and end on zone boundaries and a
 * section is a zone, so no section spans two.
 */
uint32_t zf_layout_sec_from(const struct zf_layout *l, uint64_t off);

/* Blocks writable in main-area segment `segno` (0 past the zone capacity). */
uint32_t zf_layout_usable_blocks(const struct zf_layout *l, uint32_t segno);

/*
 * The layout a superblock records (mkfs.f2fs's choices included) on device
 * geometry g; sb must have passed zf_check_super.  -EINVAL with err set
 * when its sections do not match the device's zones.
 */
int zf_layout_from_super(struct zf_layout *l, const struct zf_super *sb,
			 const struct zlfs_zdev_geom *g, char *err, size_t errlen);

/* Address of the SIT block holding segment `segno`, in copy `copy` (0 or 1). */
static inline uint32_t zf_sit_blkaddr(const struct zf_layout *l, uint32_t segno, int copy)
{
	return l->sit_blkaddr + segno / ZF_SIT_ENTRY_PER_BLOCK + (copy ? l->sit_blocks : 0);
}

/*
 * Address of the NAT block holding `nid`, in copy `copy`.  The two copies
 * are interleaved a segment at a time: copy 0 of NAT segment i, then copy 1.
 */
static inline uint32_t zf_nat_blkaddr(const struct zf_layout *l, uint32_t nid, int copy)
{
	uint32_t blk = nid / ZF_NAT_ENTRY_PER_BLOCK;
	uint32_t seg = blk >> ZF_LOG_BLKS_PER_SEG;

	return l->nat_blkaddr + (seg << (ZF_LOG_BLKS_PER_SEG + 1)) +
	       (blk & (ZF_BLKS_PER_SEG - 1)) + (copy ? ZF_BLKS_PER_SEG : 0);
}

/* Address of the SSA block summarising main-area segment `segno`. */
static inline uint32_t zf_ssa_blkaddr(const struct zf_layout *l, uint32_t segno)
{
	return l->ssa_blkaddr + segno;
}

/* First block of main-area segment `segno`. */
static inline uint32_t zf_seg_blkaddr(const struct zf_layout *l, uint32_t segno)
{
	return l->main_blkaddr + segno * ZF_BLKS_PER_SEG;
}

#endif
