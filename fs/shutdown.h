/*
 * shutdown.h - what shutdown.c offers the other files: the going-down ioctl.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_SHUTDOWN_H
#define ZLFS_FS_SHUTDOWN_H

#include "zlfs.h"

/*
 * F2FS_IOC_SHUTDOWN, ext4's EXT4_IOC_SHUTDOWN and XFS's XFS_IOC_GOINGDOWN:
 * one number, _IOR('X', 125, __u32), though the argument is read, not
 * written (so the kernel's FUSE does not pass it: see zl_ioctl).
 */
#define ZLFS_IOC_SHUTDOWN _IOR('X', 125, uint32_t)
enum {
	ZLFS_GOING_DOWN_FULLSYNC = 0,    /* checkpoint, then stop */
	ZLFS_GOING_DOWN_METASYNC = 1,    /* the same (XFS's LOGFLUSH) */
	ZLFS_GOING_DOWN_NOSYNC = 2,      /* stop now (XFS's NOLOGFLUSH) */
	ZLFS_GOING_DOWN_METAFLUSH = 3,   /* checkpoint, then stop */
	ZLFS_GOING_DOWN_NEED_FSCK = 4,   /* no stop: a checkpoint asking for fsck */
};
/*
 * Stop the filesystem as a crash would (sbi->lock exclusive): after it,
 * nothing is written to the device and every operation fails with EIO;
 * no final checkpoint at unmount.  -EINVAL for an unknown mode.
 */
int zlfs_shutdown(struct zlfs_sb *sbi, uint32_t mode);

#endif
