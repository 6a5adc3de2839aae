/*
 * fuse_ops.c - the FUSE low-level operations.  The only place where
 * negative errnos become replies.
 *
 * Inode numbers: FUSE's root (1) is F2FS's root inode (3); every other
 * FUSE inode number is the F2FS inode number (nid), never 1 or 2, which
 * F2FS reserves.  Each entry reply adds one lookup to the inode (nlookup);
 * forget takes them away; an unlinked inode is freed when its lookups and
 * open handles are gone (inode.c).
 *
 * Every operation runs under sbi->lock (file.c drops it while waiting for
 * data I/O).  Permissions are checked by the kernel (default_permissions).
 */
#include <errno.h>
#include <fuse3/fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zlfs.h"

#define TIMEOUT 3600.0      /* zlfs is the only writer of its device */

static struct zlfs_sb *SBI(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static uint32_t to_ino(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? ZF_ROOT_INO : (uint32_t)ino;
}

static fuse_ino_t to_fuse(uint32_t ino)
{
	return ino == ZF_ROOT_INO ? FUSE_ROOT_ID : ino;
}

static void lock(struct zlfs_sb *sbi) { pthread_mutex_lock(&sbi->lock); }
static void unlock(struct zlfs_sb *sbi) { pthread_mutex_unlock(&sbi->lock); }

static int writable(struct zlfs_sb *sbi)
{
	return zlfs_writable(sbi);
}

/* Fill an entry for zi and count the lookup the reply gives the kernel. */
static void fill_entry(struct zlfs_sb *sbi, struct zinode *zi, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = to_fuse(zi->ino);
	e->generation = zf_le32_to_cpu(zi_raw(zi)->i_generation);
	zlfs_inode_stat(sbi, zi, &e->attr);
	e->attr_timeout = TIMEOUT;
	e->entry_timeout = TIMEOUT;
	zi->nlookup++;
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
	int ret = zlfs_create(sbi, &c, to_ino(parent), name, mode, rdev, link, &zi);

	if (ret)
		return ret;
	fill_entry(sbi, zi, e);
	if (out)
		*out = zi;
	return 0;
}

static void zl_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_WRITEBACK_CACHE)
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
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
	conn->max_readahead = 1u << 20;
}

static void zl_destroy(void *userdata)
{
	struct zlfs_sb *sbi = userdata;
	pthread_mutex_lock(&sbi->lock);
	zlfs_inode_release_all(sbi);
	pthread_mutex_unlock(&sbi->lock);
}

static void zl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fuse_entry_param e;
	struct zinode *dir, *zi;
	uint32_t ino;
	uint8_t ft;
	int ret;

	if (strlen(name) > ZF_NAME_LEN) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	lock(sbi);
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
		unlock(sbi);
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
		unlock(sbi);
		memset(&e, 0, sizeof(e));
		e.entry_timeout = TIMEOUT;   /* a negative entry */
		fuse_reply_entry(req, &e);
		return;
	}
	if (!ret && !(ret = zlfs_iget(sbi, ino, &zi)))
		fill_entry(sbi, zi, &e);
	unlock(sbi);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_entry(req, &e);
}

static void forget_one(struct zlfs_sb *sbi, fuse_ino_t ino, uint64_t n)
{
	struct zinode *zi;
	if (!zlfs_iget(sbi, to_ino(ino), &zi))
		zlfs_iput(sbi, zi, n);
}

static void zl_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct zlfs_sb *sbi = SBI(req);
	lock(sbi);
	forget_one(sbi, ino, nlookup);
	unlock(sbi);
	fuse_reply_none(req);
}

static void zl_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	struct zlfs_sb *sbi = SBI(req);
	lock(sbi);
	for (size_t i = 0; i < count; i++)
		forget_one(sbi, f[i].ino, f[i].nlookup);
	unlock(sbi);
	fuse_reply_none(req);
}

static void zl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	struct stat st;
	int ret;

	(void)fi;
	lock(sbi);
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi)))
		zlfs_inode_stat(sbi, zi, &st);
	unlock(sbi);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, TIMEOUT);
}

static void set_time(zf_le64 *sec, zf_le32 *nsec, const struct timespec *ts)
{
	*sec = zf_cpu_to_le64((uint64_t)ts->tv_sec);
	*nsec = zf_cpu_to_le32((uint32_t)ts->tv_nsec);
}

static void zl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	struct stat st;
	struct timespec now;
	int ret;

	(void)fi;
	clock_gettime(CLOCK_REALTIME_COARSE, &now);   /* as zlfs_inode_touch */
	lock(sbi);
	if ((ret = zlfs_iget(sbi, to_ino(ino), &zi)) || (ret = writable(sbi)))
		goto out;
	struct zf_inode *ri = zi_raw(zi);
	mode_t mode = zf_le16_to_cpu(ri->i_mode);
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (S_ISDIR(mode)) {
			ret = -EISDIR;
			goto out;
		}
		if (!S_ISREG(mode)) {
			ret = -EINVAL;
			goto out;
		}
		if ((ret = zlfs_file_truncate(sbi, zi, (uint64_t)attr->st_size)))
			goto out;
		ri = zi_raw(zi);
	}
	if (to_set & FUSE_SET_ATTR_MODE) {
		ri->i_mode = zf_cpu_to_le16((uint16_t)((mode & S_IFMT) | (attr->st_mode & 07777)));
		if ((ret = zlfs_acl_chmod(sbi, zi, attr->st_mode & 07777)))
			goto out;
		ri = zi_raw(zi);
	}
	if (to_set & FUSE_SET_ATTR_UID)
		ri->i_uid = zf_cpu_to_le32(attr->st_uid);
	if (to_set & FUSE_SET_ATTR_GID)
		ri->i_gid = zf_cpu_to_le32(attr->st_gid);
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		set_time(&ri->i_atime, &ri->i_atime_nsec, &now);
	else if (to_set & FUSE_SET_ATTR_ATIME)
		set_time(&ri->i_atime, &ri->i_atime_nsec, &attr->st_atim);
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		set_time(&ri->i_mtime, &ri->i_mtime_nsec, &now);
	else if (to_set & FUSE_SET_ATTR_MTIME)
		set_time(&ri->i_mtime, &ri->i_mtime_nsec, &attr->st_mtim);
	if (to_set & FUSE_SET_ATTR_CTIME)
		set_time(&ri->i_ctime, &ri->i_ctime_nsec, &attr->st_ctim);
	else
		set_time(&ri->i_ctime, &ri->i_ctime_nsec, &now);
	zlfs_inode_dirty(sbi, zi);
	zlfs_inode_stat(sbi, zi, &st);
out:
	unlock(sbi);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, TIMEOUT);
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

	if (!S_ISREG(mode) && !S_ISCHR(mode) && !S_ISBLK(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	lock(sbi);
	ret = do_create(sbi, req, parent, name, mode, rdev, NULL, &e, NULL);
	unlock(sbi);
	reply_entry_or_err(req, ret, &e);
}

static void zl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fuse_entry_param e;
	int ret;

	lock(sbi);
	ret = do_create(sbi, req, parent, name, S_IFDIR | (mode & 07777), 0, NULL, &e, NULL);
	unlock(sbi);
	reply_entry_or_err(req, ret, &e);
}

static void zl_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fuse_entry_param e;
	int ret;

	if (strlen(link) >= ZF_BLKSIZE) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	lock(sbi);
	ret = do_create(sbi, req, parent, name, S_IFLNK | 0777, 0, link, &e, NULL);
	unlock(sbi);
	reply_entry_or_err(req, ret, &e);
}

static void zl_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fuse_entry_param e;
	struct zinode *zi;
	int ret;

	lock(sbi);
	ret = do_create(sbi, req, parent, name, S_IFREG | (mode & 07777), 0, NULL, &e, &zi);
	if (!ret)
		zi->nopen++;
	unlock(sbi);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	fi->keep_cache = 1;
	fuse_reply_create(req, &e, fi);
}

static void zl_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct zlfs_sb *sbi = SBI(req);
	char buf[ZF_BLKSIZE + 1];
	struct zinode *zi;
	size_t got = 0;
	int ret;

	lock(sbi);
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi))) {
		if (!S_ISLNK(zf_le16_to_cpu(zi_raw(zi)->i_mode)))
			ret = -EINVAL;
		else
			ret = zlfs_file_read(sbi, zi, buf, ZF_BLKSIZE, 0, &got);
	}
	unlock(sbi);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	buf[got] = '\0';
	fuse_reply_readlink(req, buf);
}

static void zl_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zlfs_sb *sbi = SBI(req);
	lock(sbi);
	int ret = zlfs_unlink(sbi, to_ino(parent), name, false);
	unlock(sbi);
	fuse_reply_err(req, -ret);
}

static void zl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zlfs_sb *sbi = SBI(req);
	lock(sbi);
	int ret = zlfs_unlink(sbi, to_ino(parent), name, true);
	unlock(sbi);
	fuse_reply_err(req, -ret);
}

static void zl_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fuse_entry_param e;
	struct zinode *zi;
	int ret;

	lock(sbi);
	if (!(ret = zlfs_link(sbi, to_ino(ino), to_ino(newparent), newname, &zi)))
		fill_entry(sbi, zi, &e);
	unlock(sbi);
	reply_entry_or_err(req, ret, &e);
}

static void zl_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct zlfs_sb *sbi = SBI(req);
	lock(sbi);
	int ret = zlfs_rename(sbi, to_ino(parent), name, to_ino(newparent), newname, flags);
	unlock(sbi);
	fuse_reply_err(req, -ret);
}

/* ---- files ------------------------------------------------------------------------------ */

static void zl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	int ret;

	lock(sbi);
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi))) {
		if ((fi->flags & O_ACCMODE) != O_RDONLY && (ret = writable(sbi)))
			;
		else if (S_ISDIR(zf_le16_to_cpu(zi_raw(zi)->i_mode)))
			ret = -EISDIR;
		else if ((fi->flags & O_TRUNC) && S_ISREG(zf_le16_to_cpu(zi_raw(zi)->i_mode)) &&
			 (ret = zlfs_file_truncate(sbi, zi, 0)))
			;   /* atomic_o_trunc: the kernel leaves O_TRUNC to us */
		else
			zi->nopen++;
	}
	unlock(sbi);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void zl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;

	(void)fi;
	lock(sbi);
	if (!zlfs_iget(sbi, to_ino(ino), &zi)) {
		if (zi->nopen)
			zi->nopen--;
		zlfs_iput(sbi, zi, 0);
	}
	unlock(sbi);
	fuse_reply_err(req, 0);
}

static void zl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	size_t got = 0;
	char *buf = malloc(size ? size : 1);
	int ret;

	(void)fi;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	lock(sbi);
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi)))
		ret = zlfs_file_read(sbi, zi, buf, size, (uint64_t)off, &got);
	unlock(sbi);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, buf, got);
	free(buf);
}

static void zl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	int ret;

	(void)fi;
	lock(sbi);
	if (!(ret = writable(sbi)) && !(ret = zlfs_iget(sbi, to_ino(ino), &zi))) {
		/* the kernel computed the offset, O_APPEND included */
		ret = zlfs_file_write(sbi, zi, buf, size, (uint64_t)off);
	}
	unlock(sbi);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, size);
}

static void do_sync(fuse_req_t req)
{
	struct zlfs_sb *sbi = SBI(req);
	int ret = 0;

	lock(sbi);
	if (sbi->fatal)
		ret = -EIO;
	else if (sbi->dirty)
		ret = zlfs_checkpoint(sbi, false);   /* durable when fsync returns */
	unlock(sbi);
	fuse_reply_err(req, ret ? EIO : 0);
}

static void zl_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	do_sync(req);
}

static void zl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void zl_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	int ret;

	(void)fi;
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	lock(sbi);
	if (!(ret = writable(sbi)) && !(ret = zlfs_iget(sbi, to_ino(ino), &zi)))
		ret = zlfs_file_fallocate(sbi, zi, mode, (uint64_t)off, (uint64_t)len);
	unlock(sbi);
	fuse_reply_err(req, -ret);
}

/* ---- directories ------------------------------------------------------------------------ */

static void zl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	int ret;

	lock(sbi);
	if (!(ret = get_dir(sbi, ino, &zi)))
		zi->nopen++;
	unlock(sbi);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_open(req, fi);
}

static void zl_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	zl_release(req, ino, fi);
}

struct rd {
	fuse_req_t req;
	struct zlfs_sb *sbi;
	char *buf;
	size_t size, used;
	bool plus;
	int err;
};

static int rd_emit(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t ftype,
		   uint64_t next)
{
	struct rd *r = ctx;
	static const mode_t types[] = { 0, S_IFREG, S_IFDIR, S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK, S_IFLNK };
	bool dots = (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
	size_t n;

	if (!r->plus) {
		struct stat st = { 0 };
		st.st_ino = ino;
		st.st_mode = ftype < ZF_FT_MAX ? types[ftype] : 0;
		n = fuse_add_direntry(r->req, r->buf + r->used, r->size - r->used, name, &st, (off_t)next);
	} else {
		struct fuse_entry_param e;
		struct zinode *zi;
		memset(&e, 0, sizeof(e));
		if (dots) {
			e.attr.st_ino = ino;
			e.attr.st_mode = S_IFDIR;
		} else {
			int ret = zlfs_iget(r->sbi, ino, &zi);
			if (ret) {
				r->err = ret;
				return 1;
			}
			memset(&e, 0, sizeof(e));
			e.ino = to_fuse(zi->ino);
			e.generation = zf_le32_to_cpu(zi_raw(zi)->i_generation);
			zlfs_inode_stat(r->sbi, zi, &e.attr);
			e.attr_timeout = e.entry_timeout = TIMEOUT;
		}
		n = fuse_add_direntry_plus(r->req, r->buf + r->used, r->size - r->used, name, &e,
					   (off_t)next);
		if (n <= r->size - r->used && !dots)
			zi->nlookup++;   /* the kernel now holds a lookup on it */
	}
	if (n > r->size - r->used)
		return 1;
	r->used += n;
	return 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *dir;
	struct rd r = { req, sbi, malloc(size), size, 0, plus, 0 };
	int ret;

	if (!r.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	lock(sbi);
	if (!(ret = get_dir(sbi, ino, &dir)))
		ret = zlfs_dir_iterate(sbi, dir, (uint64_t)off, rd_emit, &r);
	unlock(sbi);
	if (!ret)
		ret = r.err;
	if (ret && !r.used)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, r.buf, r.used);
	free(r.buf);
}

static void zl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, false);
}

static void zl_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

static void zl_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	do_sync(req);
}

static void zl_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct zlfs_sb *sbi = SBI(req);
	struct statvfs st;

	(void)ino;
	memset(&st, 0, sizeof(st));
	lock(sbi);
	st.f_bsize = ZF_BLKSIZE;
	st.f_frsize = ZF_BLKSIZE;
	st.f_blocks = sbi->user_block_count;
	/* dirty nodes take a block each at the next checkpoint: count them as used */
	uint64_t bfree = zlfs_free_user_blocks(sbi);
	bfree = bfree > sbi->nr_dirty_nodes ? bfree - sbi->nr_dirty_nodes : 0;
	st.f_bfree = bfree;
	st.f_bavail = st.f_bfree;
	uint32_t usable_nids = sbi->max_nid - ZF_FIRST_FREE_NID;
	st.f_files = usable_nids;
	st.f_ffree = usable_nids > sbi->valid_node_count ? usable_nids - sbi->valid_node_count : 0;
	if (st.f_ffree > st.f_bfree)
		st.f_ffree = st.f_bfree;   /* every inode needs a block */
	st.f_favail = st.f_ffree;
	st.f_namemax = ZF_NAME_LEN;
	unlock(sbi);
	fuse_reply_statfs(req, &st);
}

/* ---- xattrs -------------------------------------------------------------------------------- */

/*
 * Setting an access ACL drops setgid unless the caller is privileged or in
 * the file's group, as chmod does (the kernel's posix_acl_update_mode).
 * The caller's groups are read before the lock is taken (from /proc).
 */
static void acl_drop_sgid(fuse_req_t req, struct zinode *zi, const gid_t *groups, int ngroups)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct zf_inode *ri = zi_raw(zi);
	uint16_t mode = zf_le16_to_cpu(ri->i_mode);
	gid_t gid = zf_le32_to_cpu(ri->i_gid);

	if (ctx->uid == 0 || !(mode & S_ISGID) || ctx->gid == gid)
		return;
	for (int i = 0; i < ngroups; i++)
		if (groups[i] == gid)
			return;
	ri->i_mode = zf_cpu_to_le16(mode & (uint16_t)~S_ISGID);
	zlfs_node_dirty(SBI(req), zi->node);
}

static void zl_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct zlfs_sb *sbi = SBI(req);
	bool acl = !strcmp(name, "system.posix_acl_access");
	gid_t groups[256];
	int ngroups = 0;
	struct zinode *zi;
	int ret;

	if (acl) {
		ngroups = fuse_req_getgroups(req, 256, groups);
		ngroups = ngroups < 0 ? 0 : ngroups > 256 ? 256 : ngroups;
	}
	lock(sbi);
	if (!(ret = writable(sbi)) && !(ret = zlfs_iget(sbi, to_ino(ino), &zi)))
		ret = zlfs_xattr_set(sbi, zi, name, value, size, flags);
	if (!ret && acl)
		acl_drop_sgid(req, zi, groups, ngroups);
	unlock(sbi);
	fuse_reply_err(req, -ret);
}

static void zl_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	char *buf = size ? malloc(size) : NULL;
	size_t len = 0;
	int ret;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	lock(sbi);
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi)))
		ret = zlfs_xattr_get(sbi, zi, name, buf, size, &len);
	unlock(sbi);
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
	char *buf = size ? malloc(size) : NULL;
	size_t len = 0;
	int ret;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	lock(sbi);
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi)))
		ret = zlfs_xattr_list(sbi, zi, buf, size, &len);
	unlock(sbi);
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
	struct zinode *zi;
	int ret;

	lock(sbi);
	if (!(ret = writable(sbi)) && !(ret = zlfs_iget(sbi, to_ino(ino), &zi)))
		ret = zlfs_xattr_remove(sbi, zi, name);
	unlock(sbi);
	fuse_reply_err(req, -ret);
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
};
