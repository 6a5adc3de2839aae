/*
 * checkpoint.h - what checkpoint.c offers the other files.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_CHECKPOINT_H
#define ZLFS_FS_CHECKPOINT_H

#include "zlfs.h"

int zlfs_cp_load(struct zlfs_sb *sbi);
int zlfs_checkpoint(struct zlfs_sb *sbi, bool umount);
/* Warm node log position the checkpoint recorded: where the fsync chain starts. */
uint32_t zlfs_cp_chain_start(const struct zlfs_sb *sbi);
/*
 * Does an fsync chain follow the checkpoint (a crash after an fsync)?  Its
 * first block only, read and matched, nothing written: what a read-only
 * mount, which never rolls forward, uses to say so.
 */
bool zlfs_cp_chain_pending(struct zlfs_sb *sbi);
/* Orphan inodes of the loaded checkpoint (inode.c frees them); *inos malloc()ed. */
int zlfs_cp_orphans(struct zlfs_sb *sbi, uint32_t **inos, uint32_t *n);

#endif
