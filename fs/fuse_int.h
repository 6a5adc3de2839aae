/*
 * fuse_int.h - what the FUSE layer's own files share:
 *   fuse_ops.c    the request table, the session, the request counters,
 *                 the requests on names and inodes
 *   fuse_file.c   the requests on open files, the writeback gate
 *   fuse_dir.c    the requests on open directories
 *   fuse_ioctl.c  the ioctls
 *   fuse_virt.c   the virtual directory /.zlfs
 *   fuse_times.c  whose mtime and ctime a file keeps under the writeback cache
 * Private to the zlfs executable: main.c sees fuse_ops.h only, and
 * nothing below the FUSE layer sees libfuse.  These files are the only
 * place where negative errnos become replies.
 */
#ifndef ZLFS_FUSE_INT_H
#define ZLFS_FUSE_INT_H

#include <errno.h>
#include <fuse3/fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

#include "fuse_ops.h"
#include "zlfs.h"
#include "stats.h"

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
/* INIT: the kernel can do without OPENDIR (fuse_dir.c's zl_opendir). */
bool zl_no_opendir(void);
/* The kernel forgets ino's attributes and asks again (no-op before the session is set). */
void zl_inval_attr(fuse_ino_t ino);
/*
 * The kernel's dirty pages of ino written back through us, waited for:
 * call from a request, without the filesystem lock.  0, or -EBUSY when
 * one thread serves everything (-s), or a negative errno.
 */
int zl_write_back(fuse_ino_t ino);
/*
 * A handler about to wait for requests the kernel sends first (the dirty
 * pages' WRITEs): one more thread reads /dev/fuse (on) until it lets go.
 */
void zl_loop_hold_reader(bool on);
/*
 * Called by zl_write before it takes the filesystem lock: returns once no
 * WRITE of the same node that the kernel made earlier is still being
 * served, so a file's writeback lands in the log in offset order.  Returns
 * at once outside zlfs's request loop.
 */
void zl_loop_write_turn(void);
/* The request loop's counts, for /.zlfs/status (fuse_loop.c). */
struct zl_loop_stats {
	unsigned threads;        /* started to serve requests */
	uint64_t requests;       /* received */
	uint64_t queued;         /* of them, found another waiting: one more reader wanted */
	uint64_t rescues;        /* readers added for requests queued behind busy threads */
};
void zl_loop_stats(struct zl_loop_stats *st);
/* An entry reply (lookup, readdirplus) for the inode with these attributes. */
void zl_entry_from_attr(const struct zattr *a, struct fuse_entry_param *e);

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

/* ---- fuse_file.c: the requests on open files, and the writeback gate ---- */
void zl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
/* At INIT, conn->max_read set: answer reads by splice where the kernel and a pipe's size allow it. */
void zl_read_splice_init(struct fuse_conn_info *conn);
/* READs answered by splice so far (read_splices in /.zlfs/status). */
uint64_t zl_read_splices(void);
void zl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi);
void zl_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void zl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zl_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		  struct fuse_file_info *fi);
void zl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* RELEASE and RELEASEDIR, uncounted: one open handle of ino let go. */
void zl_release_handle(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/*
 * A read (READ, READDIR) under the shared lock found ino's atime due:
 * the update, exclusive, before the reply (the kernel forgets its atime
 * after a READ or READDIR and asks again).
 */
void zl_read_accessed(struct zlfs_sb *sbi, fuse_ino_t ino);
/* The handle of a regular file opened for writing (fuse_file.c's comment). */
#define ZL_FH_WRITER 1
/* The gate is closed: GETATTR with ZL_FH_WRITER refused, new writers' attributes short-lived. */
bool zl_wb_gated(struct zlfs_sb *sbi);

/* ---- fuse_dir.c: the requests on open directories ---- */
void zl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void zl_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void zl_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zl_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);

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
