/*
 * inode.h - what inode.c offers the other files.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_INODE_H
#define ZLFS_FS_INODE_H

#include "zlfs.h"

int zlfs_iget(struct zlfs_sb *sbi, uint32_t ino, struct zinode **out);
/*
 * The attributes of inode ino, from wherever they are at hand: its zinode,
 * the node cache, the attribute cache, else its block read and checked.
 * Readers too (no zinode is made or pinned).
 */
int zlfs_inode_attr(struct zlfs_sb *sbi, uint32_t ino, struct zattr *a);
/* Count one FUSE lookup of ino, making an unloaded zinode if it has none (readers too). */
int zlfs_iref(struct zlfs_sb *sbi, uint32_t ino);
/* The zinode of ino if it is in memory, loaded or not (exclusive holders: no node read). */
struct zinode *zlfs_ifind(struct zlfs_sb *sbi, uint32_t ino);
/* Count one FUSE lookup of zi (readers too). */
void zlfs_inode_ref(struct zlfs_sb *sbi, struct zinode *zi);
/* New inode: allocates a nid, fills mode/uid/gid/times, links 1 (2 for dirs). */
int zlfs_inode_new(struct zlfs_sb *sbi, mode_t mode, uid_t uid, gid_t gid, uint32_t pino,
		   struct zinode **out);
void zlfs_inode_dirty(struct zlfs_sb *sbi, struct zinode *zi);
void zlfs_inode_stat(struct zlfs_sb *sbi, struct zinode *zi, struct stat *st);
/*
 * Stamp the times asked for with the coarse clock (m and c not while
 * zi->keep_times); true if the inode block changed (within one tick of the
 * clock a stamp changes nothing, and the inode need not be written again).
 */
bool zlfs_inode_touch(struct zinode *zi, bool m, bool c, bool a);
/*
 * A read of zi (file data, directory entries): does its atime need an
 * update under the mount's atime rule?  Reads the inode only (shared
 * holders may ask); the update itself, zlfs_inode_accessed, needs the
 * exclusive lock and returns 1 when it changed atime, else 0.
 */
bool zlfs_atime_due(const struct zlfs_sb *sbi, struct zinode *zi);
int zlfs_inode_accessed(struct zlfs_sb *sbi, struct zinode *zi);
/* Drop `n` lookups; the inode is freed when unlinked and unused. */
void zlfs_iput(struct zlfs_sb *sbi, struct zinode *zi, uint64_t n);
/* The last link went away: free now or when the last user goes. */
int zlfs_inode_unlinked(struct zlfs_sb *sbi, struct zinode *zi);
void zlfs_inode_release_all(struct zlfs_sb *sbi);
/*
 * The cache trim: unpin the clean inode nodes of up to `want` inodes nobody
 * has open (zlfs_iget pins them again).  Only when no operation is under
 * way: a zinode held across a dropped lock would lose its node.
 */
uint32_t zlfs_inode_unload(struct zlfs_sb *sbi, uint32_t want);
int zlfs_orphan_recover(struct zlfs_sb *sbi, const uint32_t *inos, uint32_t n);
uint32_t zlfs_orphan_list(struct zlfs_sb *sbi, uint32_t *inos, uint32_t max);
uint8_t zlfs_ftype(mode_t mode);
void zlfs_inode_set_rdev(struct zinode *zi, dev_t rdev);

#endif
