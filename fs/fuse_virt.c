/*
 * fuse_virt.c - the virtual directory /.zlfs: status and zones (their
 * text is stats.c's), and the daemon's pid as an xattr for zlfs-umount.
 *
 * Reached by name (".zlfs" in the root), left out of readdir, read-only.
 * Its inode numbers lie at VINO_DIR (2^32) and above, where no F2FS inode
 * number can be, so no operation on a real inode mistakes them; fuse_ops.c
 * hands each request on one of them here, or refuses it (VIRT_REFUSE).
 * Requests on them are not counted in the request counters, so reading
 * the counters does not change them, and a shutdown leaves them working,
 * so zlfs-umount still finds the daemon.
 *
 * A file's text is a snapshot taken at open, under sbi->lock exclusive
 * (the only lock taken here), and kept in the handle until release: its
 * reads are direct I/O on that snapshot, and stat shows size 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuse_int.h"
#include "stats.h"

#define VIRT_NAME ".zlfs"
#define VINO_STATUS (VINO_DIR + 1)
#define VINO_ZONES (VINO_DIR + 2)

bool virt_name(fuse_ino_t parent, const char *name)
{
	return parent == FUSE_ROOT_ID && !strcmp(name, VIRT_NAME);
}

static void virt_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = ino == VINO_DIR ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_nlink = ino == VINO_DIR ? 2 : 1;
	st->st_blksize = ZF_BLKSIZE;
}

static void virt_entry(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = ino;
	virt_stat(ino, &e.attr);
	/*
	 * The attributes never change (size 0: reads are direct I/O on a
	 * snapshot taken at open), so the kernel may keep them: no GETATTR at
	 * every open of a file whose text changes all the time.
	 */
	e.attr_timeout = ZL_TIMEOUT;
	e.entry_timeout = ZL_TIMEOUT;
	fuse_reply_entry(req, &e);
}

bool virt_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (virt_name(parent, name) || (parent == VINO_DIR && !strcmp(name, "."))) {
		virt_entry(req, VINO_DIR);
		return true;
	}
	if (parent == VINO_DIR) {
		if (!strcmp(name, "status"))
			virt_entry(req, VINO_STATUS);
		else if (!strcmp(name, "zones"))
			virt_entry(req, VINO_ZONES);
		else
			fuse_reply_err(req, ENOENT);   /* ".." too: the kernel knows the parent */
		return true;
	}
	if (is_virt(parent)) {    /* a lookup in one of its files */
		fuse_reply_err(req, EPERM);
		return true;
	}
	return false;
}

void virt_getattr(fuse_req_t req, fuse_ino_t ino)
{
	struct stat st;

	virt_stat(ino, &st);
	fuse_reply_attr(req, &st, ZL_TIMEOUT);
}

/* A snapshot of a virtual file's text, taken at open. */
struct vfile {
	char *text;
	size_t len;
};

/* The request loop's counts as status lines (fuse_loop.c; all 0 with -s). */
static void loop_status(char *buf, size_t size)
{
	struct zl_loop_stats ls;

	zl_loop_stats(&ls);
	snprintf(buf, size, "loop_threads=%u\nloop_requests=%llu\nloop_queued=%llu\nloop_rescues=%llu\n"
		 "read_splices=%llu\n",
		 ls.threads, (unsigned long long)ls.requests, (unsigned long long)ls.queued,
		 (unsigned long long)ls.rescues, (unsigned long long)zl_read_splices());
}

void virt_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zlfs_req_count rc[ZR_NR];
	char loop[192];
	struct vfile *v;
	int ret;

	if (ino == VINO_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if (!(v = calloc(1, sizeof(*v)))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	zl_req_counts(rc);
	loop_status(loop, sizeof(loop));
	zlfs_lock(sbi);    /* reading counters is no user activity */
	ret = ino == VINO_STATUS ? zlfs_stats_status(sbi, loop, rc, ZR_NR, &v->text, &v->len)
				 : zlfs_stats_zones(sbi, &v->text, &v->len);
	zlfs_unlock(sbi);
	if (ret) {
		free(v);
		fuse_reply_err(req, -ret);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)v;
	fi->direct_io = 1;     /* size 0 in stat: reads must reach us */
	fi->nonseekable = 0;
	fuse_reply_open(req, fi);
}

void virt_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct vfile *v = (struct vfile *)(uintptr_t)fi->fh;

	if (!v || off < 0 || (size_t)off >= v->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	size_t n = v->len - (size_t)off < size ? v->len - (size_t)off : size;
	/*
	 * Replied from a copy: once the kernel has the reply it may send
	 * RELEASE, which another thread serves (freeing v) while this one is
	 * still returning from the reply's writev (where ASan reads the
	 * buffer again).
	 */
	char *copy = malloc(n);
	if (!copy) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memcpy(copy, v->text + off, n);
	fuse_reply_buf(req, copy, n);
	free(copy);
}

void virt_release(fuse_req_t req, struct fuse_file_info *fi)
{
	struct vfile *v = (struct vfile *)(uintptr_t)fi->fh;
	if (v) {
		free(v->text);
		free(v);
	}
	fuse_reply_err(req, 0);
}

void virt_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == VINO_DIR)
		fuse_reply_open(req, fi);
	else
		fuse_reply_err(req, ENOTDIR);
}

void virt_readdir(fuse_req_t req, size_t size, off_t off, bool plus)
{
	static const struct { const char *name; fuse_ino_t ino; } ents[] = {
		{ ".", VINO_DIR }, { "..", FUSE_ROOT_ID }, { "status", VINO_STATUS },
		{ "zones", VINO_ZONES },
	};
	char *buf = malloc(size ? size : 1);
	size_t used = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (off_t i = off; i >= 0 && (size_t)i < sizeof(ents) / sizeof(ents[0]); i++) {
		size_t n;
		if (plus) {
			struct fuse_entry_param e;
			memset(&e, 0, sizeof(e));
			/* entries beyond . and .. carry a lookup the kernel will forget */
			if (i >= 2) {
				e.ino = ents[i].ino;
				e.entry_timeout = e.attr_timeout = ZL_TIMEOUT;
			}
			virt_stat(ents[i].ino, &e.attr);
			if (ents[i].ino == FUSE_ROOT_ID)
				e.attr.st_mode = S_IFDIR;
			n = fuse_add_direntry_plus(req, buf + used, size - used, ents[i].name, &e, i + 1);
		} else {
			struct stat st;
			virt_stat(ents[i].ino, &st);
			n = fuse_add_direntry(req, buf + used, size - used, ents[i].name, &st, i + 1);
		}
		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

/*
 * The virtual directory's one attribute, user.zlfs.pid: the daemon's pid, so
 * that zlfs-umount can wait for the daemon to exit after the unmount (the
 * daemon exits only after its final checkpoint and closing the device).
 */
#define VIRT_PID_XATTR "user.zlfs.pid"

void virt_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char val[32];
	int n;

	if (ino != VINO_DIR || strcmp(name, VIRT_PID_XATTR)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	n = snprintf(val, sizeof(val), "%ld", (long)getpid());
	if (!size)
		fuse_reply_xattr(req, (size_t)n);
	else if (size < (size_t)n)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, val, (size_t)n);
}

/* No names listed (the pid is for whoever knows to ask). */
void virt_listxattr(fuse_req_t req, size_t size)
{
	if (size)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_xattr(req, 0);
}
