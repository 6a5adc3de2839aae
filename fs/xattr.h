/*
 * xattr.h - what xattr.c offers the other files.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_XATTR_H
#define ZLFS_FS_XATTR_H

#include "zlfs.h"

int zlfs_xattr_get(struct zlfs_sb *sbi, struct zinode *zi, const char *name, void *buf,
		   size_t size, size_t *len);
/*
 * Set and remove: -EPERM for an immutable or append-only inode
 * (zlfs_may_change); set makes room first (ZLFS_BUDGET_XATTR), at an
 * operation's start (exclusive; may drop the lock and checkpoint).
 */
int zlfs_xattr_set(struct zlfs_sb *sbi, struct zinode *zi, const char *name,
		   const void *value, size_t size, int flags);
int zlfs_xattr_list(struct zlfs_sb *sbi, struct zinode *zi, char *buf, size_t size,
		    size_t *len);
int zlfs_xattr_remove(struct zlfs_sb *sbi, struct zinode *zi, const char *name);
/* 0, or the error zlfs_xattr_get gives for this name whatever the inode holds. */
int zlfs_xattr_check_name(const char *name);
/*
 * A new inode zi in dir takes dir's default ACL: 1 when dir has none (the
 * caller applies the umask), else 0 with *mode the resulting mode.
 */
int zlfs_acl_inherit(struct zlfs_sb *sbi, struct zinode *dir, struct zinode *zi, mode_t *mode);
/* chmod: keep the access ACL's entries in step with the new mode. */
int zlfs_acl_chmod(struct zlfs_sb *sbi, struct zinode *zi, mode_t mode);
/*
 * After a caller (uid, gid, its supplementary groups) set zi's access
 * ACL: setgid goes unless the caller is root or in the file's group, as
 * chmod's rule has it (the kernel's posix_acl_update_mode).
 */
void zlfs_acl_drop_sgid(struct zlfs_sb *sbi, struct zinode *zi, uid_t uid, gid_t gid,
			const gid_t *groups, int ngroups);

#endif
