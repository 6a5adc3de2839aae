/*
 * recovery.h - what recovery.c offers the other files: roll-forward at mount.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_RECOVERY_H
#define ZLFS_FS_RECOVERY_H

#include "zlfs.h"

/*
 * Pass 1 and 2 of F2FS's recovery: walk the fsync chain from the
 * checkpoint's warm node position and replay the fsynced inodes and
 * dnodes into memory.  Writes nothing (names to restore are kept for
 * zlfs_recover_dentries, which runs once the zones are in order); the
 * checkpoint after it makes the result durable.
 */
struct zrecovery;
int zlfs_recover_scan(struct zlfs_sb *sbi, struct zrecovery **out);
int zlfs_recover_dentries(struct zlfs_sb *sbi, struct zrecovery *rc);
void zlfs_recover_free(struct zrecovery *rc);

#endif
