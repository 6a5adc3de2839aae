/*
 * data.h - what data.c offers the other files: block I/O.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_DATA_H
#define ZLFS_FS_DATA_H

#include "zlfs.h"

/* A device error: read-only from now on (the first error is kept). */
void zlfs_set_fatal(struct zlfs_sb *sbi, int err);
/*
 * Something read from the device is inconsistent: print what (the
 * structure and why, printf-style), turn the volume read-only as a device
 * error does, and return -EUCLEAN for the operation to fail with.
 */
int zlfs_corrupt(struct zlfs_sb *sbi, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * A note, not a problem (what recovery replayed): on stderr, or for a
 * daemon in the background to syslog, as the kernel's filesystems note
 * such things in the kernel log, not on the terminal of whoever mounted.
 */
void zlfs_info(struct zlfs_sb *sbi, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int zlfs_read_block(struct zlfs_sb *sbi, uint32_t blkaddr, void *buf);
/*
 * n blocks from blkaddr on, in one command (the mount's table reads: one
 * command per run, not per block).  Synchronous; the lock is not dropped.
 */
int zlfs_read_run(struct zlfs_sb *sbi, uint32_t blkaddr, uint32_t n, void *buf);
/*
 * Where n blocks from blkaddr can be read from a file by the caller
 * itself (zlfs_disp_read_fd): *fd, *pos.  -EOPNOTSUPP when the device must
 * read them through a command (zlfs_read_blocks_unlocked).
 */
int zlfs_read_fd(struct zlfs_sb *sbi, uint32_t blkaddr, uint32_t n, int *fd, uint64_t *pos);
#define ZLFS_READ_RUN_MAX 512u   /* blocks a caller reads in one run at most (2 MiB) */
/* Metadata in the conventional area: written in place. */
int zlfs_write_meta_block(struct zlfs_sb *sbi, uint32_t blkaddr, const void *buf);
struct zlfs_wbatch;
/*
 * Submit n block writes (bufs[i] to addrs[i]) in array order, which
 * callers make each log's allocation order; call with sbi->lock held so no
 * other write of the same log slips in between.  NULL only without memory.
 */
struct zlfs_wbatch *zlfs_write_submit(struct zlfs_sb *sbi, void *const *bufs,
				      const uint32_t *addrs, uint32_t n, uint8_t prio);
/* Wait for a batch (the lock need not be held) and free it. */
int zlfs_write_wait(struct zlfs_sb *sbi, struct zlfs_wbatch *wb);
/* Write n blocks and wait (sbi->lock held throughout). */
int zlfs_write_blocks(struct zlfs_sb *sbi, void *const *bufs, const uint32_t *addrs, uint32_t n);
/* Read / write n blocks with sbi->lock dropped while in flight (held on entry and return). */
int zlfs_read_blocks_unlocked(struct zlfs_sb *sbi, void **bufs, const uint32_t *addrs, uint32_t n,
			      uint8_t prio);
int zlfs_write_unlocked(struct zlfs_sb *sbi, void **bufs, uint32_t *addrs, uint32_t n,
			uint8_t prio);

#endif
