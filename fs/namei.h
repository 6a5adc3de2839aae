/*
 * namei.h - what namei.c offers the other files.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_NAMEI_H
#define ZLFS_FS_NAMEI_H

#include "zlfs.h"

struct zlfs_cred {
	uid_t uid;
	gid_t gid;
	mode_t umask;
};
/* zlfs_iget, and -ENOTDIR unless a directory. */
int zlfs_dir_iget(struct zlfs_sb *sbi, uint32_t ino, struct zinode **out);
/*
 * The operations below make room first (zlfs_balance with their
 * ZLFS_BUDGET_*): call them as an operation starts, exclusive, before
 * anything changed; the lock may be dropped and a checkpoint written.
 */
/* A new inode `name` in parent (link: a symlink's target); *out has no lookup counted. */
int zlfs_create(struct zlfs_sb *sbi, const struct zlfs_cred *c, uint32_t parent,
		const char *name, mode_t mode, dev_t rdev, const char *link, struct zinode **out);
/* Goes ahead when GC finds no room to make: removing frees space. */
int zlfs_unlink(struct zlfs_sb *sbi, uint32_t parent, const char *name, bool rmdir);
/* zlfs_unlink without making room: roll-forward's, mid-mount, where no GC may run. */
int zlfs_unlink_nobalance(struct zlfs_sb *sbi, uint32_t parent, const char *name, bool rmdir);
int zlfs_link(struct zlfs_sb *sbi, uint32_t ino, uint32_t newparent, const char *newname,
	      struct zinode **out);
/* flags: RENAME_NOREPLACE, RENAME_EXCHANGE. */
int zlfs_rename(struct zlfs_sb *sbi, uint32_t parent, const char *name, uint32_t newparent,
		const char *newname, unsigned int flags);
/* zlfs_rename for a caller: RENAME_WHITEOUT too (leaves a whiteout owned by ctx). */
int zlfs_rename_as(struct zlfs_sb *sbi, const struct zlfs_cred *ctx, uint32_t parent,
		   const char *name, uint32_t newparent, const char *newname, unsigned int flags);

#endif
