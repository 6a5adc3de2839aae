/*
 * trim.c - FITRIM (fstrim): give the device back the main area's free
 * sections in a byte range of the volume.
 *
 * zlfs frees space a section at a time (a section is one zone), so that is
 * the unit here: a free section wholly inside the range is trimmed, one
 * the range only touches is not.  In a sequential zone the trim is a zone
 * reset: zlfs resets the zones of sections it frees anyway (segment.c,
 * after each checkpoint), so this mostly finds them empty already and
 * only resets what is not; a conventional zone (or a device without
 * zones) has its section discarded (zlfs_disp_discard: BLKDISCARD, or a
 * hole punched in an image).  A checkpoint comes first, as in F2FS: it
 * turns the sections freed since the last one free, resetting them.
 *
 * What is reported trimmed is the capacity of every free section the call
 * covered, whether this call or an earlier reset emptied it (as XFS
 * reports its free extents each time; F2FS remembers what it discarded
 * and reports only the rest), but never more than statfs counts free: the
 * sections zlfs holds in reserve for GC are trimmed too, yet df counts
 * them neither in the size nor in the free space, and fstrim's figure
 * should not claim more free space than df shows.
 *
 * The range checks are F2FS's (f2fs_trim_fs): a start past the end of the
 * volume or a length below one block is EINVAL, a range that ends before
 * the main area trims nothing.  Locks: sbi->lock exclusive throughout; free
 * sections get no writes, so nothing is in flight to what is trimmed.
 */
#include <errno.h>
#include <stdio.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "segment.h"
#include "trim.h"

/* Trim free section sec: reset its zone unless empty, or discard it. */
static int trim_section(struct zlfs_sb *sbi, uint32_t sec)
{
	uint64_t off = (uint64_t)zf_seg_blkaddr(&sbi->lay, sec * sbi->segs_per_sec) * ZF_BLKSIZE;

	if (zlfs_sec_is_conv(sbi, sec))
		return zlfs_disp_discard(sbi->disp, off, (uint64_t)sbi->sec_blocks * ZF_BLKSIZE);
	uint32_t zone = sbi->lay.main_zone + sec, nr = 1;
	struct zlfs_zone z;
	int ret = zlfs_disp_report(sbi->disp, zone, &z, &nr);
	if (ret || nr != 1)
		return ret ? ret : -EIO;
	if (z.cond == ZLFS_ZC_EMPTY)
		return 0;
	if ((ret = zlfs_disp_zone_mgmt(sbi->disp, ZLFS_ZM_RESET, zone)))
		return ret;
	sbi->st.zones_reset++;
	return 0;
}

int zlfs_trim(struct zlfs_sb *sbi, uint64_t start, uint64_t len, uint64_t minlen,
	      uint64_t *trimmed)
{
	uint64_t nblocks = zf_le64_to_cpu(sbi->sb.block_count);
	int ret;

	*trimmed = 0;
	if (start / ZF_BLKSIZE >= nblocks || len < ZF_BLKSIZE)
		return -EINVAL;
	if ((ret = zlfs_writable(sbi)))
		return ret;
	uint64_t first = start / ZF_BLKSIZE;
	/* the last block, without overflow: fstrim's default length is ULLONG_MAX */
	uint64_t last = len / ZF_BLKSIZE - 1 >= nblocks - first ? nblocks - 1
								   : first + len / ZF_BLKSIZE - 1;
	if (last < sbi->lay.main_blkaddr)
		return 0;
	/* sections are all one size: one smaller than minlen means none is trimmed */
	if (minlen > (uint64_t)sbi->sec_blocks * ZF_BLKSIZE)
		return 0;
	if (sbi->dirty && (ret = zlfs_checkpoint(sbi, false)))
		return ret;
	bool none_discards = true, tried = false;
	for (uint32_t s = 0; s < sbi->nr_secs; s++) {
		uint64_t lo = zf_seg_blkaddr(&sbi->lay, s * sbi->segs_per_sec);
		uint64_t hi = lo + (uint64_t)sbi->segs_per_sec * ZF_BLKS_PER_SEG - 1;
		if (lo < first || hi > last || sbi->secs[s].state != ZSEC_FREE ||
		    zlfs_sec_is_log(sbi, s))
			continue;
		tried = true;
		ret = trim_section(sbi, s);
		if (ret == -EOPNOTSUPP)
			continue;     /* a device that cannot discard: nothing trimmed there */
		if (ret) {
			fprintf(stderr, "zlfs: trim of section %u failed: %s\n", s,
				zlfs_zdev_strerror(ret));
			return ret;
		}
		none_discards = false;
		*trimmed += (uint64_t)sbi->sec_blocks * ZF_BLKSIZE;
	}
	uint64_t avail = zlfs_free_blocks(sbi) * ZF_BLKSIZE;
	if (*trimmed > avail)
		*trimmed = avail;
	/* as the kernel's filesystems on a device without discard */
	return tried && none_discards ? -EOPNOTSUPP : 0;
}
