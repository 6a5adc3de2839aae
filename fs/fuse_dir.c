/*
 * fuse_dir.c - the requests on open directories: OPENDIR, READDIR and
 * READDIRPLUS (dir.c's entries as the kernel takes them), RELEASEDIR and
 * FSYNCDIR.
 *
 * Readdir runs under the shared lock; a READDIRPLUS entry gives the
 * kernel a lookup, counted as it is added (zlfs_iref), not for "." and
 * "..".  Everything else is exclusive, in the operation bracket
 * (zlfs_op_begin).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuse_int.h"
#include "checkpoint.h"
#include "inode.h"
#include "namei.h"
#include "dir.h"

/*
 * Directory handles carry nothing (readdir works from the inode number,
 * and the kernel's lookup keeps an open directory's inode alive), so when
 * the kernel can do without OPENDIR, ENOSYS says so: it sends no OPENDIR
 * or RELEASEDIR again, and keeps what readdir returned in its page cache
 * (FOPEN_CACHE_DIR | FOPEN_KEEP_CACHE), to use until the directory
 * changes (its mtime or i_version).  Otherwise the reply asks for the
 * same cache.  Every change to a directory's entries comes through the
 * kernel except the ".." a cross-directory rename moves: zl_rename
 * invalidates that.
 */
void zl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	int ret;

	zl_count(ZR_OPENDIR, ino);
	DOWN_REFUSE(req, ino);
	if (zl_no_opendir()) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	if (is_virt(ino)) {
		virt_opendir(req, ino, fi);
		return;
	}
	zlfs_op_begin(sbi, false);
	if (!(ret = zlfs_dir_iget(sbi, to_ino(ino), &zi)))
		zi->nopen++;
	zlfs_op_end(sbi, false);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_open(req, fi);
}

void zl_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	zl_count(ZR_RELEASEDIR, ino);
	if (is_virt(ino)) {
		fuse_reply_err(req, 0);
		return;
	}
	zl_release_handle(req, ino, fi);
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
		memset(&e, 0, sizeof(e));
		if (dots) {
			e.attr.st_ino = ino;
			e.attr.st_mode = S_IFDIR;
		} else {
			struct zattr a;
			int ret = zlfs_inode_attr(r->sbi, ino, &a);
			if (ret) {
				r->err = ret;
				return 1;
			}
			zl_entry_from_attr(&a, &e);
		}
		n = fuse_add_direntry_plus(r->req, r->buf + r->used, r->size - r->used, name, &e,
					   (off_t)next);
		/* the kernel now holds a lookup on it */
		if (n <= r->size - r->used && !dots && (r->err = zlfs_iref(r->sbi, ino)))
			return 1;
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
	bool due;
	int ret;

	if (is_virt(ino)) {
		free(r.buf);
		virt_readdir(req, size, off, plus);
		return;
	}
	if (!r.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	zlfs_op_begin(sbi, true);
	if (!(ret = zlfs_dir_iget(sbi, to_ino(ino), &dir)))
		ret = zlfs_dir_iterate(sbi, dir, (uint64_t)off, rd_emit, &r);
	due = !ret && zlfs_atime_due(sbi, dir);
	zlfs_op_end(sbi, true);
	if (due)
		zl_read_accessed(sbi, ino);
	if (!ret)
		ret = r.err;
	if (ret && !r.used)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, r.buf, r.used);
	free(r.buf);
}

void zl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	zl_count(ZR_READDIR, ino);
	DOWN_REFUSE(req, ino);
	do_readdir(req, ino, size, off, false);
}

void zl_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	zl_count(ZR_READDIRPLUS, ino);
	DOWN_REFUSE(req, ino);
	do_readdir(req, ino, size, off, true);
}

static void do_sync(fuse_req_t req)
{
	struct zlfs_sb *sbi = SBI(req);
	int ret = 0;

	zlfs_op_begin(sbi, false);
	if (sbi->fatal)
		ret = -EIO;
	else if (sbi->dirty)
		ret = zlfs_checkpoint(sbi, false);   /* durable when fsync returns */
	zlfs_op_end(sbi, false);
	fuse_reply_err(req, ret ? EIO : 0);
}

void zl_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	zl_count(ZR_FSYNCDIR, ino);
	DOWN_REFUSE(req, ino);
	do_sync(req);
}
