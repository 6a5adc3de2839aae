/*
 * flags.h - what flags.c offers the other files: the chattr flags (i_flags) and what immutable and append-only forbid.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_FLAGS_H
#define ZLFS_FS_FLAGS_H

#include "zlfs.h"

struct fsxattr;
/* The flags as FS_IOC_GETFLAGS shows them (FS_*_FL). */
uint32_t zlfs_flags_get(struct zinode *zi);
/* FS_IOC_SETFLAGS: -EOPNOTSUPP for a flag zlfs cannot keep; stamps ctime. */
int zlfs_flags_set(struct zlfs_sb *sbi, struct zinode *zi, uint32_t fl);
/* The same as xflags (FS_IOC_FSGETXATTR / FS_IOC_FSSETXATTR). */
void zlfs_flags_get_x(struct zinode *zi, struct fsxattr *fa);
int zlfs_flags_set_x(struct zlfs_sb *sbi, struct zinode *zi, const struct fsxattr *fa);
/* The flags a new inode of this mode takes from its directory. */
uint32_t zlfs_flags_inherit(struct zinode *dir, mode_t mode);
/* The project ID (i_projid, 0 without one); a new inode's under PROJINHERIT. */
uint32_t zlfs_projid(struct zinode *zi);
void zlfs_proj_inherit(struct zlfs_sb *sbi, struct zinode *dir, struct zinode *zi);
/* -EXDEV: zi may not get a name in dir, a PROJINHERIT directory of another project. */
int zlfs_may_link_proj(struct zinode *dir, struct zinode *zi);
/* Each 0 or -EPERM, as the VFS answers for an immutable or append-only inode. */
int zlfs_may_open(struct zinode *zi, int flags);        /* open(2) flags */
/* What a setattr changes, for zlfs_may_setattr. */
enum {
	ZLFS_SA_SIZE = 1,          /* truncate */
	ZLFS_SA_OWNER = 2,         /* mode, uid, gid */
	ZLFS_SA_TIMES_SET = 4,     /* times given by the caller */
	ZLFS_SA_TIMES_NOW = 8,     /* times set to now (utimes(NULL)) */
};
int zlfs_may_setattr(struct zinode *zi, unsigned int what);
int zlfs_may_change(struct zinode *zi);                 /* xattrs, link(2) of it */
int zlfs_may_add(struct zinode *dir);                   /* a new name in dir */
int zlfs_may_delete(struct zinode *dir, struct zinode *victim);
int zlfs_may_fallocate(struct zinode *zi, int mode);

#endif
