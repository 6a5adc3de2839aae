/*
 * shutdown.c - the going-down ioctl (F2FS_IOC_SHUTDOWN, the number ext4's
 * and XFS's XFS_IOC_GOINGDOWN share): the filesystem stops as if the power
 * had been cut, and the next mount finds what a crash at that moment
 * leaves (the last checkpoint and the fsync chain after it).  xfstests'
 * crash tests (godown, `xfs_io -c shutdown`) and anyone who wants a crash
 * without a power cut use it.
 *
 * The modes are F2FS's: FULLSYNC and METASYNC write a checkpoint first,
 * METAFLUSH too (zlfs's metadata goes out only in checkpoints); NOSYNC
 * stops at once; NEED_FSCK does not stop, it writes a checkpoint that
 * asks for fsck (CP_FSCK_FLAG, kept until fsck repairs).  Data the
 * kernel's page cache still holds (the writeback cache) never reached the
 * daemon and is lost, as a crash loses it: FULLSYNC cannot freeze the
 * kernel's side as the kernel's f2fs freezes its block device.
 *
 * After a stop every device write is refused (sbi->fatal, which data.c,
 * bcache.c and the checkpoint test) and every operation fails with EIO
 * (zlfs_is_shut_down, which the FUSE layer asks); no final checkpoint is
 * written at unmount.  Writes in flight when the stop comes are waited
 * for, so the device holds a crash state that no later write changes.
 *
 * Locks: zlfs_shutdown runs with sbi->lock exclusive; sbi->shutdown is set
 * under it and read with an atomic load by readers that hold it shared.
 */
#include <errno.h>
#include <stdio.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "shutdown.h"

static const char *const mode_name[] = {
	[ZLFS_GOING_DOWN_FULLSYNC] = "full sync",
	[ZLFS_GOING_DOWN_METASYNC] = "metadata sync",
	[ZLFS_GOING_DOWN_NOSYNC] = "no sync",
	[ZLFS_GOING_DOWN_METAFLUSH] = "metadata flush",
	[ZLFS_GOING_DOWN_NEED_FSCK] = "need fsck",
};

int zlfs_shutdown(struct zlfs_sb *sbi, uint32_t mode)
{
	int ret = 0;

	if (mode > ZLFS_GOING_DOWN_NEED_FSCK)
		return -EINVAL;
	if (zlfs_is_shut_down(sbi))
		return 0;
	if (mode == ZLFS_GOING_DOWN_NEED_FSCK) {
		if (sbi->ro || sbi->fatal)
			return sbi->fatal ? -EIO : -EROFS;
		sbi->need_fsck = true;
		sbi->dirty = true;
		return zlfs_checkpoint(sbi, false);
	}
	/* a read-only or failed volume has nothing to write: it just stops */
	if (mode != ZLFS_GOING_DOWN_NOSYNC && !sbi->ro && !sbi->fatal && sbi->dirty)
		ret = zlfs_checkpoint(sbi, false);
	/* as F2FS: a checkpoint that failed for a reason other than I/O stops nothing */
	if (ret && ret != -EIO && ret != -EROFS)
		return ret;
	while (sbi->io_inflight)
		zlfs_wait(sbi, &sbi->io_cv);
	int none = 0;   /* (a reader may set its own error meanwhile: the first is kept) */
	__atomic_compare_exchange_n(&sbi->fatal, &none, -EIO, false, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
	__atomic_store_n(&sbi->shutdown, true, __ATOMIC_RELEASE);
	fprintf(stderr, "zlfs: %s: shut down (%s): every operation fails with EIO until the "
		"next mount\n", zlfs_zdev_spec(sbi->dev), mode_name[mode]);
	return 0;
}
