/*
 * gc.h - what gc.c offers the other files.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_GC_H
#define ZLFS_FS_GC_H

#include "zlfs.h"

/*
 * Make room before an operation that writes up to `blocks` blocks: runs
 * foreground GC (and checkpoints) until enough sections are free.  Call at
 * the start of an operation, before it changes anything (a checkpoint may
 * be written).  0, or -ENOSPC when live data and the reserve fill the device.
 */
int zlfs_balance(struct zlfs_sb *sbi, uint64_t blocks);
/*
 * What the operations' entry points (namei.c, file.c, xattr.c) ask it
 * for: the blocks each may write before the next checkpoint, its nodes
 * included (zlfs_balance adds the nodes dirty already).
 */
/* the inode, the parent's, a dentry block and 3 nodes mapping it, a dir's block, an ACL's node */
#define ZLFS_BUDGET_CREATE 8
/* as a new name: a dentry block, the nodes mapping it, both inodes */
#define ZLFS_BUDGET_LINK 8
/* the parent's dentry block rewritten out of place, and the nodes mapping it */
#define ZLFS_BUDGET_UNLINK 8
/* two names changed (each as a link), a moved directory's "..", a whiteout */
#define ZLFS_BUDGET_RENAME 16
/* the partial last block rewritten, and the dnode holding its slot */
#define ZLFS_BUDGET_TRUNCATE 2
/* the partial blocks at the range's ends and their dnodes (holes get room per batch) */
#define ZLFS_BUDGET_FALLOCATE 4
/* the inode and a new xattr node, with room for an access ACL's mode change */
#define ZLFS_BUDGET_XATTR 4
/*
 * The background thread: GC (unless gc=off) and, as F2FS's cp_interval,
 * a checkpoint once something has been dirty ZLFS_CP_INTERVAL_MS, so what
 * was written without fsync is durable within a minute (sync(2) does not
 * reach a FUSE filesystem through libfuse 3.14: no FUSE_SYNCFS).
 */
#define ZLFS_CP_INTERVAL_MS 60000
int zlfs_gc_start(struct zlfs_sb *sbi);
void zlfs_gc_stop(struct zlfs_sb *sbi);

#endif
