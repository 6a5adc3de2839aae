/*
 * fuse_int.h - what the FUSE layer's own files share: fuse_ops.c (the
 * request table, the session, the request counters), fuse_virt.c (the
 * virtual directory /.zlfs), fuse_ioctl.c (the ioctls), fuse_times.c
 * (whose mtime and ctime a file keeps under the writeback cache).  Private to the
 * zlfs executable: main.c sees fuse_ops.h only, and nothing below the FUSE
 * layer sees libfuse.  Like the rest of the FUSE layer, these turn
 * negative errnos into replies and nothing else does.
 */
#ifndef ZLFS_FUSE_INT_H
#define ZLFS_FUSE_INT_H

#include <errno.h>
#include <fuse3/fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

#include "fuse_ops.h"
#include "zlfs.h"

/*
 * How long the kernel may keep entries (negative ones too) and
 * attributes: zlfs is the only writer of its device, and every change
 * reaches the kernel through its own requests (fuse_ops.c's comment).
 */
#define ZL_TIMEOUT 3600.0

/* The superblock: the session's userdata is main's pointer to it, set before the loop. */
static inline struct zlfs_sb *SBI(fuse_req_t req)
{
	return *(struct zlfs_sb *const *)fuse_req_userdata(req);
}

/* FUSE's root (1) is F2FS's root inode (3); every other number is the F2FS one. */
static inline uint32_t to_ino(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? ZF_ROOT_INO : (uint32_t)ino;
}

static inline fuse_ino_t to_fuse(uint32_t ino)
{
	return ino == ZF_ROOT_INO ? FUSE_ROOT_ID : ino;
}

/* ---- fuse_ops.c: the session ---- */
/* INIT gave us the kernel's writeback cache (read by every request after INIT). */
bool zl_writeback(void);
/* The kernel forgets ino's attributes and asks again (no-op before the session is set). */
void zl_inval_attr(fuse_ino_t ino);

/*
 * Requests served, per FUSE opcode, named as libfuse's debug output names
 * them (fuse_ops.c counts them; /.zlfs/status prints them).
 */
#define ZREQ_LIST(X) X(INIT) X(DESTROY) X(LOOKUP) X(FORGET) X(BATCH_FORGET) X(GETATTR) \
	X(SETATTR) X(READLINK) X(SYMLINK) X(MKNOD) X(MKDIR) X(UNLINK) X(RMDIR) X(RENAME) \
	X(LINK) X(OPEN) X(READ) X(WRITE) X(STATFS) X(RELEASE) X(FSYNC) X(SETXATTR) \
	X(GETXATTR) X(LISTXATTR) X(REMOVEXATTR) X(FLUSH) X(OPENDIR) X(READDIR) \
	X(READDIRPLUS) X(RELEASEDIR) X(FSYNCDIR) X(CREATE) X(FALLOCATE) X(IOCTL)
#define ZREQ_ENUM(op) ZR_##op,
enum zreq { ZREQ_LIST(ZREQ_ENUM) ZR_NR };
/* Count a request on inode ino (one of /.zlfs's: not counted). */
void zl_count(enum zreq op, fuse_ino_t ino);
/* Every counter, named, into rc[ZR_NR]. */
void zl_req_counts(struct zlfs_req_count *rc);

/* ---- fuse_virt.c: the virtual directory /.zlfs ---- */
#define VINO_DIR ((fuse_ino_t)1 << 32)     /* its inode numbers: here and above */

static inline bool is_virt(fuse_ino_t ino)
{
	return ino >= VINO_DIR;
}

/* ".zlfs" in the root: the name is taken by the virtual directory. */
bool virt_name(fuse_ino_t parent, const char *name);

/* Refuse a request that would change one of /.zlfs's inodes (or make one). */
#define VIRT_REFUSE(req, ino) do { \
		if (is_virt(ino)) { fuse_reply_err(req, EPERM); return; } \
	} while (0)

/*
 * After a shutdown (shutdown.c) every operation fails with EIO, as the
 * kernel's filesystems answer once shut down; the virtual files stay, so
 * zlfs-umount still finds the daemon.  Not refused: FORGET, RELEASE,
 * RELEASEDIR and FLUSH, which only let go, and STATFS, which XFS and
 * F2FS answer too.
 */
#define DOWN_REFUSE(req, ino) do { \
		if (!is_virt(ino) && zlfs_is_shut_down(SBI(req))) { \
			fuse_reply_err(req, EIO); \
			return; \
		} \
	} while (0)

/*
 * The requests on /.zlfs's inodes, each replied to.  virt_lookup answers
 * a lookup of ".zlfs" in the root or of anything under it, and returns
 * false (nothing replied) for any other.
 */
bool virt_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void virt_getattr(fuse_req_t req, fuse_ino_t ino);
void virt_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void virt_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
void virt_release(fuse_req_t req, struct fuse_file_info *fi);
void virt_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void virt_readdir(fuse_req_t req, size_t size, off_t off, bool plus);
void virt_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void virt_listxattr(fuse_req_t req, size_t size);

/* ---- fuse_ioctl.c: the chattr flags, the going-down ioctl, FITRIM ---- */
void zl_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
	      struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
	      size_t out_bufsz);

/* ---- fuse_times.c: a regular file's mtime and ctime under the writeback cache ---- */
/* A regular file whose mtime and ctime the kernel owns (fuse_times.c's comment). */
bool kernel_times(struct zinode *zi);

/* A regular file's mtime and ctime as stored. */
struct cmtimes {
	zf_le64 m, c;
	zf_le32 mn, cn;
};

struct tguard;

/*
 * What a data operation keeps of the times: ztimes_begin before it
 * (sbi->lock exclusive), ztimes_end after it, which puts back what the
 * operation stamped over.
 */
struct ztimes {
	bool keep;               /* the kernel owns them */
	struct cmtimes t;        /* as they were at the start */
	struct tguard *g;        /* NULL without memory: then the start's win */
};
void ztimes_begin(struct zinode *zi, struct ztimes *zt);
void ztimes_end(struct zlfs_sb *sbi, struct zinode *zi, struct ztimes *zt);
/* A SETATTR stored times: operations in flight on the file end with these. */
void ztimes_setattr(struct zinode *zi);
/* zlfs_file_truncate between ztimes_begin and ztimes_end (a zlfs_truncate_fn). */
int ztimes_truncate(struct zlfs_sb *sbi, struct zinode *zi, uint64_t size);

#endif
