/*
 * fuse_ops.c - the FUSE layer's request table (zlfs_ops), the session
 * (INIT, DESTROY and the final checkpoint), the request counters, and
 * the requests on names and inodes: LOOKUP, FORGET, GETATTR, SETATTR,
 * READLINK, MKNOD, MKDIR, SYMLINK, CREATE, UNLINK, RMDIR, LINK, RENAME,
 * STATFS and the xattrs.  The other requests are in fuse_file.c (open
 * files), fuse_dir.c (open directories) and fuse_ioctl.c; /.zlfs's own
 * inodes go to fuse_virt.c; fuse_times.c keeps a file's times under the
 * writeback cache.  The FUSE layer (these files) is the only place where
 * negative errnos become replies: the requests translate what the kernel
 * asks into calls of the layers below (namei.c, file.c, xattr.c, ...)
 * and their results into replies.
 *
 * Inode numbers: FUSE's root (1) is F2FS's root inode (3); every other
 * FUSE inode number is the F2FS inode number (nid), never 1 or 2, which
 * F2FS reserves.  Each entry reply adds one lookup to the inode (nlookup);
 * forget takes them away; an unlinked inode is freed when its lookups and
 * open handles are gone (inode.c).
 *
 * Locks.  Each request runs in the operation bracket (lock.c's
 * zlfs_op_begin / zlfs_op_end): shared for LOOKUP, GETATTR, READLINK,
 * READ, READDIR(PLUS), GETXATTR and LISTXATTR, which run at once;
 * exclusive for everything else, which may still drop the mutex while
 * it waits (file.c's data I/O, GC, the checkpoint).  STATFS takes no
 * lock (segment.c's published counters).  Permissions are checked by
 * the kernel (default_permissions); the immutable and append-only flags
 * by the layers below (flags.c), at the requests the VFS would have
 * refused.
 *
 * Times.  With the kernel's writeback cache the kernel owns a regular
 * file's mtime and ctime; the data operations keep what is stored, and
 * SETATTR stores what the kernel sends (fuse_times.c).
 *
 * What the kernel keeps.  zlfs is the only writer of its device and GC
 * moves blocks, never attributes or names, so the kernel may keep entries
 * (negative ones too), attributes, readdir's entries and symlink targets
 * for ZL_TIMEOUT (an hour), and every change reaches it through its own
 * requests; the one exception, the ".." of a directory renamed to
 * another parent, is invalidated by zl_rename.  Requests the kernel need
 * not send are refused with ENOSYS once (FLUSH, OPENDIR).  The round
 * trips left are the kernel's own (tests/fs/check-requests.sh counts
 * them).
 *
 * The end.  DESTROY writes the final checkpoint (zlfs_fuse_finish) and
 * leaves the filesystem read-only with everything flushed: for fuseblk the
 * kernel waits for that reply before umount returns.  The superblock stays
 * allocated until main frees it after the loop: a FORGET or RELEASE read
 * before DESTROY may still be running on another thread.
 *
 * The session's userdata is main's pointer to the superblock, which is set
 * before the loop starts (a fuseblk mount comes before the device is open).
 */
#include <errno.h>
#include <fuse3/fuse_lowlevel.h>
#include <stdatomic.h>
#include <stdio.h>     /* RENAME_EXCHANGE */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuse_int.h"
#include "checkpoint.h"
#include "segment.h"
#include "gc.h"
#include "stats.h"
#include "acache.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "dir.h"
#include "xattr.h"

/*
 * Session state (a daemon serves one filesystem): set by main before the
 * loop, by INIT, and by the final checkpoint.
 */
static struct {
	struct fuse_session *se;   /* for notifications (zl_inval_attr, zl_rename) */
	bool want_wb;         /* the writeback cache may be used */
	bool wb;              /* INIT: it is in use */
	bool no_opendir;      /* INIT: the kernel opens directories by itself (zl_opendir) */
	bool single;          /* one thread serves the requests (zl_write_back cannot wait) */
	unsigned int max_read;   /* the session's -o max_read, which INIT repeats */
	bool finished;        /* the final checkpoint was attempted (under sbi->lock) */
	int final_ret;        /* and its result */
} sess = { .want_wb = true };

void zlfs_fuse_set_writeback(bool on)
{
	sess.want_wb = on;
}

void zlfs_fuse_set_session(struct fuse_session *se)
{
	sess.se = se;
}

void zlfs_fuse_set_max_read(unsigned int bytes)
{
	sess.max_read = bytes;
}

void zlfs_fuse_set_single_threaded(bool on)
{
	sess.single = on;
}

/*
 * The kernel's writeback cache may hold dirty pages of ino: have them
 * written now.  An invalidation of the inode's pages does it (the kernel
 * writes each dirty page back first: WRITE requests, which another thread
 * serves: the request loop holds one more reader meanwhile) and returns
 * once they are done.  With one thread (-s) that would wait on itself:
 * -EBUSY.
 */
int zl_write_back(fuse_ino_t ino)
{
	int ret;

	if (!sess.se || !sess.wb)
		return 0;
	if (sess.single)
		return -EBUSY;
	zl_loop_hold_reader(true);
	ret = fuse_lowlevel_notify_inval_inode(sess.se, ino, 0, 0);
	zl_loop_hold_reader(false);
	return ret == -ENOENT ? 0 : ret;     /* not in the kernel's cache: nothing dirty */
}

bool zl_writeback(void)
{
	return sess.wb;
}

bool zl_no_opendir(void)
{
	return sess.no_opendir;
}

void zl_inval_attr(fuse_ino_t ino)
{
	if (sess.se)
		fuse_lowlevel_notify_inval_inode(sess.se, ino, -1, 0);
}

/*
 * Requests served, per FUSE opcode (.zlfs/status prints them as
 * "fuse_req OPCODE N"), named as libfuse's debug output names them;
 * RENAME counts RENAME2 too (libfuse hands both to one operation).
 * Requests on /.zlfs's own inodes are left out, so reading the counters
 * does not change them, and so are those libfuse answers by itself
 * (INTERRUPT, opcodes without an operation here).  Relaxed atomics,
 * outside sbi->lock: each counter is exact, a snapshot of all of them is
 * not taken at one instant.
 */
#define ZREQ_NAME(op) #op,
static const char *const zreq_names[ZR_NR] = { ZREQ_LIST(ZREQ_NAME) };
static _Atomic uint64_t zreqs[ZR_NR];

static void count_op(enum zreq op)
{
	atomic_fetch_add_explicit(&zreqs[op], 1, memory_order_relaxed);
}

void zl_count(enum zreq op, fuse_ino_t ino)
{
	if (!is_virt(ino))
		count_op(op);
}

void zl_req_counts(struct zlfs_req_count *rc)
{
	for (int i = 0; i < ZR_NR; i++) {
		rc[i].op = zreq_names[i];
		rc[i].n = atomic_load_explicit(&zreqs[i], memory_order_relaxed);
	}
}

void zl_entry_from_attr(const struct zattr *a, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = to_fuse(a->ino);
	e->generation = a->generation;
	zlfs_attr_stat(a, &e->attr);
	e->attr_timeout = ZL_TIMEOUT;
	e->entry_timeout = ZL_TIMEOUT;
}

/* Fill an entry for zi and count the lookup the reply gives the kernel. */
static void fill_entry(struct zlfs_sb *sbi, struct zinode *zi, struct fuse_entry_param *e)
{
	struct zattr a;

	zlfs_attr_from_inode(zi->ino, zi_raw(zi), zlfs_feat(sbi), &a);
	zl_entry_from_attr(&a, e);
	zlfs_inode_ref(sbi, zi);
}

/*
 * The same for inode ino found by name, from its attributes wherever they
 * are (zlfs_inode_attr): a cold lookup of an inode whose block left the
 * node cache reads nothing and pins nothing.
 */
static int fill_entry_ino(struct zlfs_sb *sbi, uint32_t ino, struct fuse_entry_param *e)
{
	struct zattr a;
	int ret;

	if ((ret = zlfs_inode_attr(sbi, ino, &a)) || (ret = zlfs_iref(sbi, ino)))
		return ret;
	zl_entry_from_attr(&a, e);
	return 0;
}

static int get_dir(struct zlfs_sb *sbi, fuse_ino_t ino, struct zinode **out)
{
	return zlfs_dir_iget(sbi, to_ino(ino), out);
}

/* The caller's credentials, for the namespace calls. */
static struct zlfs_cred cred_of(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct zlfs_cred c = { ctx->uid, ctx->gid, ctx->umask };
	return c;
}

/* Make a new inode; on success reply material in e (one lookup counted). */
static int do_create(struct zlfs_sb *sbi, fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev, const char *link, struct fuse_entry_param *e,
		     struct zinode **out)
{
	struct zlfs_cred c = cred_of(req);
	struct zinode *zi;
	int ret;

	if (is_virt(parent))
		return -EPERM;
	if (virt_name(parent, name))
		return -EEXIST;
	if ((ret = zlfs_create(sbi, &c, to_ino(parent), name, mode, rdev, link, &zi)))
		return ret;
	fill_entry(sbi, zi, e);
	if (out)
		*out = zi;
	return 0;
}

static void zl_init(void *userdata, struct fuse_conn_info *conn)
{
	count_op(ZR_INIT);
	if (sess.want_wb && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* read by every request after this one, which the kernel sends only after INIT's reply */
	sess.wb = (conn->want & FUSE_CAP_WRITEBACK_CACHE) != 0;
	/* every write(2) reaches us and gets its ENOSPC: no gate, nothing kept aside */
	if (!sess.wb && userdata && *(struct zlfs_sb **)userdata)
		zlfs_space_set_reserve(*(struct zlfs_sb **)userdata, 0);
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/*
	 * No atomic O_TRUNC: with it the daemon truncates inside OPEN, before
	 * the kernel has cut its page cache and size, and a reader whose READ
	 * lands in between gets a short reply, which the writeback cache fills
	 * with zeros: the reader sees the old size in zeros (check-parallel
	 * found it).  Without it the kernel truncates through SETATTR under its
	 * own protocol; it costs that one request per O_TRUNC open.
	 */
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	sess.no_opendir = (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) != 0;
	/*
	 * A symlink's target never changes, and its inode number is not
	 * reused while the kernel still knows the inode (the nid is freed
	 * only after the last FORGET): the kernel may keep targets in its
	 * page cache, no READLINK at every walk through a link.
	 */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* the kernel enforces ACLs; zlfs inherits default ACLs and applies the umask */
	if (conn->capable & FUSE_CAP_POSIX_ACL)
		conn->want |= FUSE_CAP_POSIX_ACL;
	/* without it the kernel applies the umask itself, even under a default ACL */
	if (conn->capable & FUSE_CAP_DONT_MASK)
		conn->want |= FUSE_CAP_DONT_MASK;
	/* file handles (open_by_handle_at, NFS export): lookups of "." and ".." */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	conn->max_write = 1u << 20;
	conn->max_read = sess.max_read;     /* as the session's -o max_read (libfuse checks) */
	zl_read_splice_init(conn);
	conn->max_readahead = ZLFS_READAHEAD_KB * 1024;
}

/*
 * The final checkpoint, once: background GC stopped, every inode let go
 * (unlinked ones freed), a checkpoint with the umount flag, flushed; then
 * read-only, so nothing after it (a straggling request, zlfs_unmount)
 * writes to the device again.  Called by DESTROY and by main after the
 * loop (for a session that never got that far); the result of the one
 * that ran.
 */
int zlfs_fuse_finish(struct zlfs_sb *sbi)
{
	int ret;

	zlfs_gc_stop(sbi);
	zlfs_lock(sbi);
	if (!sess.finished) {
		zlfs_inode_release_all(sbi);
		sess.final_ret = !sbi->ro && !sbi->fatal ? zlfs_checkpoint(sbi, true) : 0;
		sbi->ro = true;
		sess.finished = true;
	}
	ret = sess.final_ret;
	zlfs_unlock(sbi);
	return ret;
}

static void zl_destroy(void *userdata)
{
	struct zlfs_sb *sbi = *(struct zlfs_sb **)userdata;

	count_op(ZR_DESTROY);
	/* also called by fuse_session_destroy when DESTROY never came: main unmounts after it */
	if (sbi)
		zlfs_fuse_finish(sbi);
}

static void zl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zlfs_sb *sbi = SBI(req);
	fuse_ino_t at = virt_name(parent, name) ? VINO_DIR : parent;   /* ".zlfs": /.zlfs's */
	struct fuse_entry_param e;
	struct zinode *dir, *zi;
	uint32_t ino;
	uint8_t ft;
	int ret;

	zl_count(ZR_LOOKUP, at);
	DOWN_REFUSE(req, at);
	if (strlen(name) > ZF_NAME_LEN) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (virt_lookup(req, parent, name))
		return;
	zlfs_op_begin(sbi, true);
	if (!strcmp(name, ".")) {
		/*
		 * Export support: the kernel turns a file handle back into an
		 * inode by looking up "." in it, whatever its type.  Inode
		 * numbers are stable; the kernel checks the generation.
		 */
		if (!(ret = zlfs_iget(sbi, to_ino(parent), &zi)) && !zi_raw(zi)->i_links &&
		    !zi->nopen)
			ret = -ESTALE;
		if (!ret)
			fill_entry(sbi, zi, &e);
		zlfs_op_end(sbi, true);
		/* the number came from a file handle: one that names no inode is stale */
		if (ret == -ENOENT || ret == -ZLFS_EFSCORRUPTED)
			ret = -ESTALE;
		if (ret)
			fuse_reply_err(req, -ret);
		else
			fuse_reply_entry(req, &e);
		return;
	}
	if (!(ret = get_dir(sbi, parent, &dir)))
		ret = zlfs_dir_lookup(sbi, dir, name, strlen(name), &ino, &ft);
	if (ret == -ENOENT) {
		zlfs_op_end(sbi, true);
		memset(&e, 0, sizeof(e));
		e.entry_timeout = ZL_TIMEOUT;   /* a negative entry */
		fuse_reply_entry(req, &e);
		return;
	}
	if (!ret)
		ret = fill_entry_ino(sbi, ino, &e);
	zlfs_op_end(sbi, true);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_entry(req, &e);
}

/*
 * A forget only counts down: it finds the zinode without loading its node
 * (an unloaded one is dropped as it is), or a batch of forgets after the
 * kernel's cache drop would read back every inode block it lets go of.
 */
static void forget_one(struct zlfs_sb *sbi, fuse_ino_t ino, uint64_t n)
{
	struct zinode *zi;
	if (!is_virt(ino) && (zi = zlfs_ifind(sbi, to_ino(ino))))
		zlfs_iput(sbi, zi, n);
}

static void zl_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct zlfs_sb *sbi = SBI(req);
	zl_count(ZR_FORGET, ino);
	zlfs_op_begin(sbi, false);
	forget_one(sbi, ino, nlookup);
	zlfs_op_end(sbi, false);
	fuse_reply_none(req);
}

static void zl_forget_multi(fuse_req_t req, size_t n, struct fuse_forget_data *f)
{
	struct zlfs_sb *sbi = SBI(req);
	for (size_t i = 0; i < n; i++)
		if (!is_virt(f[i].ino)) {
			count_op(ZR_BATCH_FORGET);
			break;
		}
	zlfs_op_begin(sbi, false);
	for (size_t i = 0; i < n; i++)
		forget_one(sbi, f[i].ino, f[i].nlookup);
	zlfs_op_end(sbi, false);
	fuse_reply_none(req);
}

static void zl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zattr a;
	struct stat st;
	int ret;

	zl_count(ZR_GETATTR, ino);
	DOWN_REFUSE(req, ino);
	if (is_virt(ino)) {
		virt_getattr(req, ino);
		return;
	}
	if (fi && fi->fh == ZL_FH_WRITER && zl_wb_gated(sbi)) {
		/* a buffered write(2) asking before it writes: the gate's refusal */
		__atomic_add_fetch(&sbi->st.wb_gate_refusals, 1, __ATOMIC_RELAXED);
		fuse_reply_err(req, ENOSPC);
		return;
	}
	zlfs_op_begin(sbi, true);
	if (!(ret = zlfs_inode_attr(sbi, to_ino(ino), &a)))
		zlfs_attr_stat(&a, &st);
	zlfs_op_end(sbi, true);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, ZL_TIMEOUT);
}

/* SETATTR's request as the file layer takes it (zlfs_setattr). */
static void iattr_of(const struct stat *attr, int to_set, struct zlfs_iattr *ia)
{
	static const struct { int fuse; unsigned int zlfs; } bits[] = {
		{ FUSE_SET_ATTR_MODE, ZLFS_ATTR_MODE }, { FUSE_SET_ATTR_UID, ZLFS_ATTR_UID },
		{ FUSE_SET_ATTR_GID, ZLFS_ATTR_GID }, { FUSE_SET_ATTR_SIZE, ZLFS_ATTR_SIZE },
		{ FUSE_SET_ATTR_ATIME, ZLFS_ATTR_ATIME }, { FUSE_SET_ATTR_MTIME, ZLFS_ATTR_MTIME },
		{ FUSE_SET_ATTR_ATIME_NOW, ZLFS_ATTR_ATIME_NOW },
		{ FUSE_SET_ATTR_MTIME_NOW, ZLFS_ATTR_MTIME_NOW }, { FUSE_SET_ATTR_CTIME, ZLFS_ATTR_CTIME },
	};

	memset(ia, 0, sizeof(*ia));
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (to_set & bits[i].fuse)
			ia->valid |= bits[i].zlfs;
	ia->mode = attr->st_mode;
	ia->uid = attr->st_uid;
	ia->gid = attr->st_gid;
	ia->size = (uint64_t)attr->st_size;
	ia->atime = attr->st_atim;
	ia->mtime = attr->st_mtim;
	ia->ctime = attr->st_ctim;
	clock_gettime(CLOCK_REALTIME_COARSE, &ia->now);   /* as zlfs_inode_touch */
}

static void zl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zlfs_iattr ia;
	struct zinode *zi;
	struct stat st;
	int ret;

	(void)fi;
	zl_count(ZR_SETATTR, ino);
	DOWN_REFUSE(req, ino);
	VIRT_REFUSE(req, ino);
	iattr_of(attr, to_set, &ia);
	zlfs_op_begin(sbi, false);
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi))) {
		/* the kernel's times: sent along when it changed them, a truncate's kept */
		ia.kernel_times = kernel_times(zi);
		if (!(ret = zlfs_setattr(sbi, zi, &ia, ztimes_truncate))) {
			if (ia.kernel_times)
				ztimes_setattr(zi);
			zlfs_inode_stat(sbi, zi, &st);
		}
	}
	zlfs_op_end(sbi, false);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, ZL_TIMEOUT);
}

/* ---- namespace ------------------------------------------------------------------------ */

static void reply_entry_or_err(fuse_req_t req, int ret, struct fuse_entry_param *e)
{
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_entry(req, e);
}

static void zl_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fuse_entry_param e;
	int ret;

	zl_count(ZR_MKNOD, parent);
	DOWN_REFUSE(req, parent);
	if (!S_ISREG(mode) && !S_ISCHR(mode) && !S_ISBLK(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	zlfs_op_begin(sbi, false);
	ret = do_create(sbi, req, parent, name, mode, rdev, NULL, &e, NULL);
	zlfs_op_end(sbi, false);
	reply_entry_or_err(req, ret, &e);
}

static void zl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fuse_entry_param e;
	int ret;

	zl_count(ZR_MKDIR, parent);
	DOWN_REFUSE(req, parent);
	zlfs_op_begin(sbi, false);
	ret = do_create(sbi, req, parent, name, S_IFDIR | (mode & 07777), 0, NULL, &e, NULL);
	zlfs_op_end(sbi, false);
	reply_entry_or_err(req, ret, &e);
}

static void zl_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fuse_entry_param e;
	int ret;

	zl_count(ZR_SYMLINK, parent);
	DOWN_REFUSE(req, parent);
	if (strlen(link) >= ZF_BLKSIZE) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	zlfs_op_begin(sbi, false);
	ret = do_create(sbi, req, parent, name, S_IFLNK | 0777, 0, link, &e, NULL);
	zlfs_op_end(sbi, false);
	reply_entry_or_err(req, ret, &e);
}

static void zl_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fuse_entry_param e;
	struct zinode *zi;
	int ret;

	zl_count(ZR_CREATE, parent);
	DOWN_REFUSE(req, parent);
	zlfs_op_begin(sbi, false);
	ret = do_create(sbi, req, parent, name, S_IFREG | (mode & 07777), 0, NULL, &e, &zi);
	if (!ret) {
		zi->nopen++;
		if ((fi->flags & O_ACCMODE) != O_RDONLY)
			zi->nwrite++;     /* as zlfs_file_open counts writers */
	}
	zlfs_op_end(sbi, false);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	fi->keep_cache = 1;
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fi->fh = ZL_FH_WRITER;
		/* the inode is not the kernel's yet: no notify, attributes that expire now */
		if (zl_wb_gated(sbi))
			e.attr_timeout = 0;
	}
	fuse_reply_create(req, &e, fi);
}

static void zl_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct zlfs_sb *sbi = SBI(req);
	char buf[ZF_BLKSIZE + 1];
	struct zinode *zi;
	size_t got = 0;
	int ret;

	zl_count(ZR_READLINK, ino);
	DOWN_REFUSE(req, ino);
	VIRT_REFUSE(req, ino);
	zlfs_op_begin(sbi, true);
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi))) {
		if (!S_ISLNK(zf_le16_to_cpu(zi_raw(zi)->i_mode)))
			ret = -EINVAL;
		else
			ret = zlfs_file_read(sbi, zi, buf, ZF_BLKSIZE, 0, &got);
	}
	zlfs_op_end(sbi, true);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	buf[got] = '\0';
	fuse_reply_readlink(req, buf);
}

/*
 * UNLINK and RMDIR differ only in the type the name must have (and the
 * counter they count in).  libfuse hands both the same arguments and no
 * opcode, so each has a one-line entry that says which it is.
 */
static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, bool rmdir)
{
	struct zlfs_sb *sbi = SBI(req);
	zl_count(rmdir ? ZR_RMDIR : ZR_UNLINK, parent);
	DOWN_REFUSE(req, parent);
	if (is_virt(parent) || virt_name(parent, name)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	zlfs_op_begin(sbi, false);
	int ret = zlfs_unlink(sbi, to_ino(parent), name, rmdir);
	zlfs_op_end(sbi, false);
	fuse_reply_err(req, -ret);
}

static void zl_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, false);
}

static void zl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, true);
}

static void zl_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fuse_entry_param e;
	struct zinode *zi;
	int ret;

	zl_count(ZR_LINK, ino);
	DOWN_REFUSE(req, ino);
	if (is_virt(ino) || is_virt(newparent) || virt_name(newparent, newname)) {
		fuse_reply_err(req, is_virt(ino) || is_virt(newparent) ? EPERM : EEXIST);
		return;
	}
	zlfs_op_begin(sbi, false);
	if (!(ret = zlfs_link(sbi, to_ino(ino), to_ino(newparent), newname, &zi)))
		fill_entry(sbi, zi, &e);
	zlfs_op_end(sbi, false);
	reply_entry_or_err(req, ret, &e);
}

/* The inode number of directory `name` in parent, or 0 (not there, not a directory). */
static uint32_t dir_named(struct zlfs_sb *sbi, fuse_ino_t parent, const char *name)
{
	struct zinode *dir;
	uint32_t ino;
	uint8_t ft;

	if (get_dir(sbi, parent, &dir) || zlfs_dir_lookup(sbi, dir, name, strlen(name), &ino, &ft) ||
	    ft != ZF_FT_DIR)
		return 0;
	return ino;
}

static void zl_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct zlfs_sb *sbi = SBI(req);
	uint32_t moved[2] = { 0, 0 };
	zl_count(ZR_RENAME, parent);
	DOWN_REFUSE(req, parent);
	if (is_virt(parent) || is_virt(newparent) || virt_name(parent, name) ||
	    virt_name(newparent, newname)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	zlfs_op_begin(sbi, false);
	struct zlfs_cred c = cred_of(req);
	int ret = zlfs_rename_as(sbi, &c, to_ino(parent), name, to_ino(newparent), newname, flags);
	if (!ret && parent != newparent) {
		/* a directory moved: now at the new name (exchanged: at the old one too) */
		moved[0] = dir_named(sbi, newparent, newname);
		if (flags & RENAME_EXCHANGE)
			moved[1] = dir_named(sbi, parent, name);
	}
	zlfs_op_end(sbi, false);
	fuse_reply_err(req, -ret);
	/*
	 * A directory moved to another parent has a new "..", which the
	 * kernel's cache of its entries (zl_opendir) does not know: drop that
	 * (and its attributes; -ENOENT when the kernel has none cached).
	 */
	for (int i = 0; i < 2 && !ret; i++)
		if (moved[i] && sess.se)
			fuse_lowlevel_notify_inval_inode(sess.se, to_fuse(moved[i]), 0, 0);
}

static void zl_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;

	zl_count(ZR_STATFS, ino);
	/* no filesystem lock: a df never waits for a writer (segment.c) */
	zlfs_statfs(SBI(req), &st);
	fuse_reply_statfs(req, &st);
}

/* ---- xattrs -------------------------------------------------------------------------------- */

/*
 * An xattr change that made or freed the xattr node changed st_blocks,
 * which the kernel keeps for ZL_TIMEOUT (its setxattr invalidates only
 * ctime, which it owns under the writeback cache): tell it to ask.
 */
static uint64_t xattr_blocks(struct zinode *zi)
{
	return zi ? zf_le64_to_cpu(zi_raw(zi)->i_blocks) : 0;
}

static void zl_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct zlfs_sb *sbi = SBI(req);
	bool acl = !strcmp(name, "system.posix_acl_access");
	gid_t groups[256];
	int ngroups = 0;
	struct zinode *zi = NULL;
	int ret;

	zl_count(ZR_SETXATTR, ino);
	DOWN_REFUSE(req, ino);
	VIRT_REFUSE(req, ino);
	if (acl) {   /* read from /proc: before the lock is taken */
		ngroups = fuse_req_getgroups(req, 256, groups);
		ngroups = ngroups < 0 ? 0 : ngroups > 256 ? 256 : ngroups;
	}
	uint64_t blocks = 0;
	zlfs_op_begin(sbi, false);
	if (!(ret = zlfs_writable(sbi)) && !(ret = zlfs_iget(sbi, to_ino(ino), &zi))) {
		blocks = xattr_blocks(zi);
		ret = zlfs_xattr_set(sbi, zi, name, value, size, flags);
	}
	if (!ret && acl) {
		const struct fuse_ctx *ctx = fuse_req_ctx(req);
		zlfs_acl_drop_sgid(sbi, zi, ctx->uid, ctx->gid, groups, ngroups);
	}
	bool moved = !ret && xattr_blocks(zi) != blocks;
	zlfs_op_end(sbi, false);
	fuse_reply_err(req, -ret);
	if (moved)
		zl_inval_attr(ino);
}

static void zl_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	struct zattr a;
	char *buf = size ? malloc(size) : NULL;
	size_t len = 0;
	int ret;

	zl_count(ZR_GETXATTR, ino);
	DOWN_REFUSE(req, ino);
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (is_virt(ino)) {
		free(buf);
		virt_getxattr(req, ino, name, size);
		return;
	}
	zlfs_op_begin(sbi, true);
	/* ls -l asks every file for two names: answer "none" from the attributes */
	if (!(ret = zlfs_inode_attr(sbi, to_ino(ino), &a)) && a.no_xattr)
		ret = zlfs_xattr_check_name(name) ?: -ENODATA;
	else if (!ret && !(ret = zlfs_iget(sbi, to_ino(ino), &zi)))
		ret = zlfs_xattr_get(sbi, zi, name, buf, size, &len);
	zlfs_op_end(sbi, true);
	if (ret)
		fuse_reply_err(req, -ret);
	else if (!size)
		fuse_reply_xattr(req, len);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

static void zl_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	struct zattr a;
	char *buf = size ? malloc(size) : NULL;
	size_t len = 0;
	int ret;

	zl_count(ZR_LISTXATTR, ino);
	DOWN_REFUSE(req, ino);
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (is_virt(ino)) {
		free(buf);
		virt_listxattr(req, size);
		return;
	}
	zlfs_op_begin(sbi, true);
	if (!(ret = zlfs_inode_attr(sbi, to_ino(ino), &a)) && !a.no_xattr &&
	    !(ret = zlfs_iget(sbi, to_ino(ino), &zi)))
		ret = zlfs_xattr_list(sbi, zi, buf, size, &len);
	zlfs_op_end(sbi, true);
	if (ret)
		fuse_reply_err(req, -ret);
	else if (!size)
		fuse_reply_xattr(req, len);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

static void zl_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi = NULL;
	int ret;

	zl_count(ZR_REMOVEXATTR, ino);
	DOWN_REFUSE(req, ino);
	if (is_virt(ino)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	uint64_t blocks = 0;
	zlfs_op_begin(sbi, false);
	if (!(ret = zlfs_writable(sbi)) && !(ret = zlfs_iget(sbi, to_ino(ino), &zi))) {
		blocks = xattr_blocks(zi);
		ret = zlfs_xattr_remove(sbi, zi, name);
	}
	bool moved = !ret && xattr_blocks(zi) != blocks;
	zlfs_op_end(sbi, false);
	fuse_reply_err(req, -ret);
	if (moved)
		zl_inval_attr(ino);
}

const struct fuse_lowlevel_ops zlfs_ops = {
	.init = zl_init,
	.destroy = zl_destroy,
	.lookup = zl_lookup,
	.forget = zl_forget,
	.forget_multi = zl_forget_multi,
	.getattr = zl_getattr,
	.setattr = zl_setattr,
	.readlink = zl_readlink,
	.mknod = zl_mknod,
	.mkdir = zl_mkdir,
	.unlink = zl_unlink,
	.rmdir = zl_rmdir,
	.symlink = zl_symlink,
	.rename = zl_rename,
	.link = zl_link,
	.open = zl_open,
	.read = zl_read,
	.write = zl_write,
	.flush = zl_flush,
	.release = zl_release,
	.fsync = zl_fsync,
	.opendir = zl_opendir,
	.readdir = zl_readdir,
	.readdirplus = zl_readdirplus,
	.releasedir = zl_releasedir,
	.fsyncdir = zl_fsyncdir,
	.statfs = zl_statfs,
	.setxattr = zl_setxattr,
	.getxattr = zl_getxattr,
	.listxattr = zl_listxattr,
	.removexattr = zl_removexattr,
	.create = zl_create,
	.fallocate = zl_fallocate,
	.ioctl = zl_ioctl,
};
