/*
 * fuse_ioctl.c - the ioctls zlfs answers: the chattr flags (FS_IOC_GETFLAGS
 * and SETFLAGS, FS_IOC_FSGETXATTR and FSSETXATTR: flags.c), the going-down
 * ioctl (shutdown.c), FITRIM (trim.c), and F2FS's compression ioctls
 * (get/release/reserve the blocks, get/set the option, compress and
 * decompress a file: cluster.c).  Any other: ENOTTY.
 *
 * The kernel's FUSE passes an ioctl's argument in and out only as the
 * command's number says (restricted ioctls, FUSE_IOCTL_UNRESTRICTED
 * refused); the going-down ioctl's argument, numbered as written but
 * read, is fetched from the caller's memory (caller_read).  Shutdown and
 * FITRIM are for the admin (caller_is_admin).  Each takes sbi->lock
 * exclusive through the operation bracket (zlfs_op_begin), and turns the
 * layer's negative errnos into replies.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuse_int.h"
#include "shutdown.h"
#include "trim.h"
#include "inode.h"
#include "flags.h"
#include "cluster.h"

/* F2FS's compression ioctls (include/uapi/linux/f2fs.h: magic 0xf5) */
#define F2FS_IOC_GET_COMPRESS_BLOCKS     0x8008f511u   /* _IOR(.., 17, __u64) */
#define F2FS_IOC_RELEASE_COMPRESS_BLOCKS 0x8008f512u   /* _IOR(.., 18, __u64) */
#define F2FS_IOC_RESERVE_COMPRESS_BLOCKS 0x8008f513u   /* _IOR(.., 19, __u64) */
#define F2FS_IOC_GET_COMPRESS_OPTION     0x8002f515u   /* _IOR(.., 21, 2 bytes) */
#define F2FS_IOC_SET_COMPRESS_OPTION     0x4002f516u   /* _IOW(.., 22, 2 bytes) */
#define F2FS_IOC_DECOMPRESS_FILE         0x0000f517u   /* _IO(.., 23) */
#define F2FS_IOC_COMPRESS_FILE           0x0000f518u   /* _IO(.., 24) */

/* Those that give a __u64 back (a count of blocks). */
static bool gives_count(unsigned int cmd)
{
	return cmd == F2FS_IOC_GET_COMPRESS_BLOCKS || cmd == F2FS_IOC_RELEASE_COMPRESS_BLOCKS ||
	       cmd == F2FS_IOC_RESERVE_COMPRESS_BLOCKS;
}

static bool is_compr_ioctl(unsigned int cmd)
{
	return cmd == F2FS_IOC_GET_COMPRESS_BLOCKS || cmd == F2FS_IOC_RELEASE_COMPRESS_BLOCKS ||
	       cmd == F2FS_IOC_RESERVE_COMPRESS_BLOCKS || cmd == F2FS_IOC_GET_COMPRESS_OPTION ||
	       cmd == F2FS_IOC_SET_COMPRESS_OPTION || cmd == F2FS_IOC_DECOMPRESS_FILE ||
	       cmd == F2FS_IOC_COMPRESS_FILE;
}

/*
 * F2FS's compression ioctls (cluster.c has the rules).  The ones that
 * change what is stored first have the kernel write back the file's dirty
 * pages, as F2FS does (a page written after a release would be refused).
 * The option calls and the (de)compress calls need a file open for
 * writing (EBADF), as F2FS's.
 */
static void ioctl_compr(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, struct fuse_file_info *fi,
			const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct zlfs_sb *sbi = SBI(req);
	bool query = cmd == F2FS_IOC_GET_COMPRESS_BLOCKS || cmd == F2FS_IOC_GET_COMPRESS_OPTION;
	bool writer = fi && fi->fh == ZL_FH_WRITER;     /* (the ioctl carries no open flags) */
	struct zinode *zi;
	uint64_t blocks = 0;
	uint8_t opt[2] = { 0, 0 };     /* struct f2fs_comp_option: algorithm, log_cluster_size */
	int ret = 0;

	if ((cmd == F2FS_IOC_SET_COMPRESS_OPTION && in_bufsz < sizeof(opt)) ||
	    (cmd == F2FS_IOC_GET_COMPRESS_OPTION && out_bufsz < sizeof(opt)) ||
	    (gives_count(cmd) && out_bufsz < sizeof(blocks))) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((cmd == F2FS_IOC_SET_COMPRESS_OPTION || cmd == F2FS_IOC_COMPRESS_FILE ||
	     cmd == F2FS_IOC_DECOMPRESS_FILE) && !writer) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (cmd == F2FS_IOC_SET_COMPRESS_OPTION)
		memcpy(opt, in_buf, sizeof(opt));
	if ((cmd == F2FS_IOC_RELEASE_COMPRESS_BLOCKS || cmd == F2FS_IOC_COMPRESS_FILE ||
	     cmd == F2FS_IOC_DECOMPRESS_FILE) && (ret = zl_write_back(ino))) {
		fuse_reply_err(req, -ret);
		return;
	}
	zlfs_op_begin(sbi, query);
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi))) {
		switch (cmd) {
		case F2FS_IOC_GET_COMPRESS_BLOCKS:
			ret = zlfs_cluster_saved(sbi, zi, &blocks);
			break;
		case F2FS_IOC_GET_COMPRESS_OPTION:
			if (!(zlfs_feat(sbi) & ZF_FEAT_COMPRESSION)) {
				ret = -EOPNOTSUPP;
			} else if (!zlfs_cluster_log(sbi, zi)) {
				ret = -ENODATA;     /* F2FS: not a compressed file */
			} else {
				opt[0] = zi_raw(zi)->i_compress_algorithm;
				opt[1] = (uint8_t)zlfs_cluster_log(sbi, zi);
			}
			break;
		case F2FS_IOC_SET_COMPRESS_OPTION:
			ret = zlfs_cluster_set_option(sbi, zi, opt[0], opt[1]);
			break;
		case F2FS_IOC_RELEASE_COMPRESS_BLOCKS:
		case F2FS_IOC_RESERVE_COMPRESS_BLOCKS:
			ret = zlfs_cluster_release(sbi, zi, cmd == F2FS_IOC_RESERVE_COMPRESS_BLOCKS,
						   &blocks);
			break;
		default:
			ret = zlfs_cluster_rewrite(sbi, zi, cmd == F2FS_IOC_COMPRESS_FILE);
		}
	}
	zlfs_op_end(sbi, query);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (!query)      /* ctime, and st_blocks after a release or reserve */
		zl_inval_attr(ino);
	if (gives_count(cmd))
		fuse_reply_ioctl(req, 0, &blocks, sizeof(blocks));
	else if (cmd == F2FS_IOC_GET_COMPRESS_OPTION)
		fuse_reply_ioctl(req, 0, opt, sizeof(opt));
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}

/*
 * The caller's bytes at addr, read from its memory: the kernel's FUSE
 * copies an ioctl's argument to the daemon only when the command's number
 * says the kernel writes it (_IOW), and the going-down ioctl is numbered
 * _IOR though it is read.  The caller is the ioctl's thread (ctx->pid);
 * reading it needs ptrace rights over it, which root's daemon has.
 */
static int caller_read(fuse_req_t req, const void *addr, void *buf, size_t len)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct iovec local = { buf, len }, remote = { (void *)addr, len };

	if (!ctx->pid)   /* a caller in another pid namespace */
		return -EPERM;
	ssize_t n = process_vm_readv(ctx->pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return errno == ESRCH ? -EFAULT : -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/*
 * The kernel's filesystems want CAP_SYS_ADMIN for shutdown and FITRIM;
 * the daemon sees only the caller's ids, so: root, or the user the daemon
 * runs as (who mounted it).
 */
static bool caller_is_admin(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	return ctx->uid == 0 || ctx->uid == getuid();
}

/* The going-down ioctl (shutdown.c). */
static void ioctl_shutdown(fuse_req_t req, void *arg)
{
	struct zlfs_sb *sbi = SBI(req);
	uint32_t mode;
	int ret;

	if (!caller_is_admin(req))
		ret = -EPERM;
	else
		ret = caller_read(req, arg, &mode, sizeof(mode));
	if (!ret) {
		zlfs_op_begin(sbi, false);
		ret = zlfs_shutdown(sbi, mode);
		zlfs_op_end(sbi, false);
	}
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}

/* FITRIM (trim.c): the range in, the bytes trimmed back in its len. */
static void ioctl_fitrim(fuse_req_t req, const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fstrim_range r;
	uint64_t trimmed = 0;
	int ret;

	if (!caller_is_admin(req)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (in_bufsz < sizeof(r) || out_bufsz < sizeof(r)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&r, in_buf, sizeof(r));
	zlfs_op_begin(sbi, false);
	ret = zlfs_trim(sbi, r.start, r.len, r.minlen, &trimmed);
	zlfs_op_end(sbi, false);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	r.len = trimmed;
	fuse_reply_ioctl(req, 0, &r, sizeof(r));
}

/*
 * The chattr flags (flags.c).  The VFS turns chattr's FS_IOC_SETFLAGS and
 * FS_IOC_FSSETXATTR into a get (to check the owner and CAP_LINUX_IMMUTABLE)
 * and a set, which the kernel's FUSE sends as these ioctls with an int or
 * a struct fsxattr, on a handle it opens for the purpose (files and
 * directories only).  Also the going-down ioctl, FITRIM and the volume
 * label (on any file or directory of the volume).  Any other: ENOTTY.
 */
void zl_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	struct zlfs_sb *sbi = SBI(req);
	struct fsxattr fa;
	struct zinode *zi;
	uint32_t fl = 0;
	bool set = false;
	int ret;

	zl_count(ZR_IOCTL, ino);
	if (is_virt(ino) || (flags & FUSE_IOCTL_UNRESTRICTED)) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (cmd == (unsigned int)ZLFS_IOC_SHUTDOWN) {
		ioctl_shutdown(req, arg);
		return;
	}
	DOWN_REFUSE(req, ino);
	if (cmd == (unsigned int)FITRIM) {
		ioctl_fitrim(req, in_buf, in_bufsz, out_bufsz);
		return;
	}
	if (is_compr_ioctl(cmd)) {
		ioctl_compr(req, ino, cmd, fi, in_buf, in_bufsz, out_bufsz);
		return;
	}
	switch (cmd) {
	case (unsigned int)FS_IOC_GETFLAGS:
	case (unsigned int)FS_IOC32_GETFLAGS:
		ret = out_bufsz < sizeof(int) ? -EINVAL : 0;
		break;
	case (unsigned int)FS_IOC_SETFLAGS:
	case (unsigned int)FS_IOC32_SETFLAGS:
		ret = in_bufsz < sizeof(int) ? -EINVAL : 0;
		if (!ret)
			memcpy(&fl, in_buf, sizeof(int));
		set = true;
		break;
	case (unsigned int)FS_IOC_FSGETXATTR:
		ret = out_bufsz < sizeof(fa) ? -EINVAL : 0;
		break;
	case (unsigned int)FS_IOC_FSSETXATTR:
		ret = in_bufsz < sizeof(fa) ? -EINVAL : 0;
		if (!ret)
			memcpy(&fa, in_buf, sizeof(fa));
		set = true;
		break;
	default:
		ret = -ENOTTY;
	}
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	zlfs_op_begin(sbi, false);
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi))) {
		if (cmd == (unsigned int)FS_IOC_GETFLAGS || cmd == (unsigned int)FS_IOC32_GETFLAGS)
			fl = zlfs_flags_get(zi);
		else if (cmd == (unsigned int)FS_IOC_FSGETXATTR)
			zlfs_flags_get_x(zi, &fa);
		else if (cmd == (unsigned int)FS_IOC_FSSETXATTR)
			ret = zlfs_flags_set_x(sbi, zi, &fa);
		else
			ret = zlfs_flags_set(sbi, zi, fl);
	}
	zlfs_op_end(sbi, false);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	/* the change stamped ctime, which the kernel holds for ZL_TIMEOUT: tell it to ask */
	if (set)
		zl_inval_attr(ino);
	if (cmd == (unsigned int)FS_IOC_FSGETXATTR) {
		fuse_reply_ioctl(req, 0, &fa, sizeof(fa));
	} else if (!set) {
		int v = (int)fl;
		fuse_reply_ioctl(req, 0, &v, sizeof(v));
	} else {
		fuse_reply_ioctl(req, 0, NULL, 0);
	}
}
