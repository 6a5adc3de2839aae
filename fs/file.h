/*
 * file.h - what file.c offers the other files.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_FILE_H
#define ZLFS_FS_FILE_H

#include "zlfs.h"

int zlfs_file_read(struct zlfs_sb *sbi, struct zinode *zi, char *buf, size_t len, uint64_t off,
		   size_t *got);
/* A piece of a read's answer: len bytes of file fd from pos, or zeros (fd < 0). */
struct zlfs_rseg {
	int fd;
	uint64_t pos;
	size_t len;
};
/*
 * A read of a plain file as pieces of the device's files, for the caller
 * to splice to the kernel with no copy through memory here: at most max
 * pieces in seg, *nseg of them, *got bytes in all (as zlfs_file_read).
 * -EOPNOTSUPP when the bytes must be read into memory instead (inline,
 * compressed or cached files, a device that does not offer its file, more
 * pieces than max): then zlfs_file_read.  The pieces hold only until the
 * caller's operation ends (zlfs_op_end): afterwards a checkpoint may free
 * their blocks for reuse.
 */
int zlfs_file_read_map(struct zlfs_sb *sbi, struct zinode *zi, size_t len, uint64_t off,
		       struct zlfs_rseg *seg, unsigned int max, unsigned int *nseg, size_t *got);
int zlfs_file_write(struct zlfs_sb *sbi, struct zinode *zi, const char *buf, size_t len,
		    uint64_t off);
/* No room made (the caller's), no flags checked: zlfs_setattr and zlfs_file_open call it. */
int zlfs_file_truncate(struct zlfs_sb *sbi, struct zinode *zi, uint64_t size);
/*
 * An operation (room made first: ZLFS_BUDGET_FALLOCATE, exclusive, may
 * drop the lock and checkpoint); -EPERM as zlfs_may_fallocate says.
 */
int zlfs_file_fallocate(struct zlfs_sb *sbi, struct zinode *zi, int mode, uint64_t off,
			uint64_t len);
/*
 * How a setattr or an O_TRUNC open changes the size: zlfs_file_truncate
 * (NULL), or the caller's wrapper of it (the FUSE layer keeps the
 * kernel's times around it: fuse_times.c).
 */
typedef int (*zlfs_truncate_fn)(struct zlfs_sb *sbi, struct zinode *zi, uint64_t size);
/* What a setattr changes (zlfs_iattr.valid). */
enum {
	ZLFS_ATTR_MODE = 1 << 0,         /* the permission bits (07777) */
	ZLFS_ATTR_UID = 1 << 1,
	ZLFS_ATTR_GID = 1 << 2,
	ZLFS_ATTR_SIZE = 1 << 3,         /* truncate (regular files only) */
	ZLFS_ATTR_ATIME = 1 << 4,        /* to atime, or with _NOW to now */
	ZLFS_ATTR_MTIME = 1 << 5,
	ZLFS_ATTR_ATIME_NOW = 1 << 6,
	ZLFS_ATTR_MTIME_NOW = 1 << 7,
	ZLFS_ATTR_CTIME = 1 << 8,        /* to ctime; without it, now (unless kernel_times) */
};
struct zlfs_iattr {
	unsigned int valid;              /* ZLFS_ATTR_* */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint64_t size;
	struct timespec atime, mtime, ctime;
	struct timespec now;             /* the request's time, for *_NOW and the ctime stamp */
	/*
	 * mtime and ctime are the caller's (FUSE's writeback cache): ctime is
	 * stamped only when given, and an mtime alone is no "set" time for
	 * the append-only and immutable rule (zlfs_may_setattr).
	 */
	bool kernel_times;
};
/*
 * chmod, chown, truncate, utimes: the inode's fields as ia says, ACLs in
 * step with a new mode.  An operation: -EROFS once read-only, room made
 * for a truncate (ZLFS_BUDGET_TRUNCATE; exclusive, may drop the lock and
 * checkpoint), the immutable and append-only rule (zlfs_may_setattr).
 */
int zlfs_setattr(struct zlfs_sb *sbi, struct zinode *zi, const struct zlfs_iattr *ia,
		 zlfs_truncate_fn truncate);
/*
 * open(2) of inode ino with these flags: room made first for O_TRUNC with
 * write access (ZLFS_BUDGET_TRUNCATE), the checks (read-only volume,
 * zlfs_may_open, -EISDIR), a regular file's O_TRUNC, and one more open
 * handle on *out (zi->nopen).
 */
int zlfs_file_open(struct zlfs_sb *sbi, uint32_t ino, int flags, zlfs_truncate_fn truncate,
		   struct zinode **out);
/*
 * fsync / fdatasync: on return what was written to zi is durable.  A
 * regular file F2FS's rules allow is made so by writing its nodes to the
 * warm node log with the FSYNC mark and one device flush (rolled forward
 * at the next mount); anything else, and fsync=checkpoint, checkpoints.
 */
int zlfs_file_fsync(struct zlfs_sb *sbi, struct zinode *zi, bool datasync);
/* Read block `index` of a file (directories too) into buf (zeros for a hole). */
int zlfs_read_file_block(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, void *buf);
/*
 * The first file block at or after index that zi's node tree can map:
 * index itself when the direct node holding it exists, else the first
 * block past the missing node's subtree (UINT64_MAX past the tree's
 * reach).  Walks over holes step with it, so a sparse file or a damaged
 * i_size costs a step per missing node, never one per block.
 */
int zlfs_file_next_mapped(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, uint64_t *next);
/* Write a whole block of a file at a new address (directory blocks). */
int zlfs_write_file_block(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index,
			  const void *buf, unsigned int log);
/*
 * 0 when the word before zi's inline area (block 0's slot once converted)
 * is 0, as an inline inode's must be; else the damage, reported.
 */
int zlfs_inline_reserved_ok(struct zlfs_sb *sbi, struct zinode *zi);
/* Inline data to block 0 (nothing if the file is not inline); it stays a block file. */
int zlfs_convert_inline(struct zlfs_sb *sbi, struct zinode *zi);
/*
 * A new symlink's target (len < 4096): inside the inode when it starts
 * inline and the target and its NUL fit, else in block 0.
 */
int zlfs_file_symlink(struct zlfs_sb *sbi, struct zinode *zi, const char *link);

#endif
