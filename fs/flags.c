/*
 * flags.c - the chattr flags: what lsattr and chattr read and set
 * (FS_IOC_GETFLAGS / FS_IOC_SETFLAGS, and their xflags form
 * FS_IOC_FSGETXATTR / FS_IOC_FSSETXATTR), kept where F2FS keeps them, in
 * the inode's i_flags, with the same values (FS_*_FL), and the rules the
 * immutable and append-only flags impose.
 *
 * Why the rules are here: the kernel's FUSE passes the flags to us (the
 * VFS has already checked the caller owns the inode, and CAP_LINUX_IMMUTABLE
 * for a change of +i or +a), but it never sets S_IMMUTABLE or S_APPEND on
 * its own inodes, so none of the VFS's own checks of those flags happens:
 * the daemon makes them, at the requests the VFS would have refused, with
 * the errors the VFS gives (EPERM).
 *
 * As F2FS: only the flags F2FS can set are settable (casefolding needs a
 * feature zlfs never mounts: EOPNOTSUPP; compression, +c and +m, needs
 * the compression feature and cluster.c's rules: an empty file, never
 * both); a flag a
 * file type cannot carry is EOPNOTSUPP; a change stamps ctime.  New inodes
 * inherit sync, nodump, noatime, dirsync and projinherit from their
 * directory (directory-only ones only by directories).  Project IDs
 * (project_quota volumes: i_projid in the extra attributes) are shown and
 * set through the xflags calls and inherited under PROJINHERIT, where a
 * link or rename from another project is EXDEV, as F2FS does; usage is not
 * counted (zlfs keeps no quota files).  noatime is honoured
 * (inode.c's zlfs_atime_due); sync and dirsync are kept and shown but do not
 * make writes synchronous: with the kernel's writeback cache a write(2)
 * returns before zlfs sees it.
 *
 * All calls need sbi->lock (exclusive for the changes).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/stat.h>

#include "zlfs.h"
#include "inode.h"
#include "flags.h"
#include "cluster.h"

_Static_assert(ZF_FL_SYNC == FS_SYNC_FL && ZF_FL_IMMUTABLE == FS_IMMUTABLE_FL &&
	       ZF_FL_APPEND == FS_APPEND_FL && ZF_FL_NODUMP == FS_NODUMP_FL &&
	       ZF_FL_NOATIME == FS_NOATIME_FL && ZF_FL_DIRSYNC == FS_DIRSYNC_FL &&
	       ZF_FL_PROJINHERIT == FS_PROJINHERIT_FL && ZF_FL_COMPR == FS_COMPR_FL &&
	       ZF_FL_INDEX == FS_INDEX_FL && ZF_FL_CASEFOLD == FS_CASEFOLD_FL,
	       "F2FS keeps the chattr flags with their FS_*_FL values");

/* What F2FS reports (F2FS_GETTABLE_FS_FL) and what it lets chattr set. */
#define GETTABLE (ZF_FL_COMPR | ZF_FL_SYNC | ZF_FL_IMMUTABLE | ZF_FL_APPEND | ZF_FL_NODUMP | \
		  ZF_FL_NOATIME | ZF_FL_NOCOMP | ZF_FL_INDEX | ZF_FL_DIRSYNC | \
		  ZF_FL_PROJINHERIT | FS_ENCRYPT_FL | FS_INLINE_DATA_FL | FS_NOCOW_FL | \
		  FS_VERITY_FL | ZF_FL_CASEFOLD)
#define SETTABLE (ZF_FL_SYNC | ZF_FL_IMMUTABLE | ZF_FL_APPEND | ZF_FL_NODUMP | ZF_FL_NOATIME | \
		  ZF_FL_DIRSYNC | ZF_FL_PROJINHERIT)
/* needs a feature zlfs never mounts (casefolding) */
#define UNSUPPORTED ZF_FL_CASEFOLD
/* compression's: need the feature, and cluster.c's rules */
#define COMPR_FLAGS (ZF_FL_COMPR | ZF_FL_NOCOMP)
/* what a directory passes on to what is made in it (F2FS_FL_INHERITED) */
#define INHERITED (ZF_FL_SYNC | ZF_FL_NODUMP | ZF_FL_NOATIME | ZF_FL_DIRSYNC | ZF_FL_PROJINHERIT)
/* the flags the xflags of FS_IOC_FSSETXATTR can express (the VFS's FS_COMMON_FL) */
#define COMMON (ZF_FL_SYNC | ZF_FL_IMMUTABLE | ZF_FL_APPEND | ZF_FL_NODUMP | ZF_FL_NOATIME | \
		ZF_FL_PROJINHERIT)

static const struct { uint32_t fl, xfl; } xmap[] = {
	{ ZF_FL_SYNC, FS_XFLAG_SYNC },
	{ ZF_FL_IMMUTABLE, FS_XFLAG_IMMUTABLE },
	{ ZF_FL_APPEND, FS_XFLAG_APPEND },
	{ ZF_FL_NODUMP, FS_XFLAG_NODUMP },
	{ ZF_FL_NOATIME, FS_XFLAG_NOATIME },
	{ ZF_FL_PROJINHERIT, FS_XFLAG_PROJINHERIT },
};

/* The flags a file of this type may carry (F2FS's f2fs_mask_flags). */
static uint32_t type_mask(mode_t mode)
{
	if (S_ISDIR(mode))
		return ~0u;
	if (S_ISREG(mode))
		return ~(ZF_FL_DIRSYNC | ZF_FL_PROJINHERIT | ZF_FL_CASEFOLD);
	return ZF_FL_NODUMP | ZF_FL_NOATIME;
}

static uint32_t stored(struct zinode *zi)
{
	return zf_le32_to_cpu(zi_raw(zi)->i_flags);
}

uint32_t zlfs_flags_get(struct zinode *zi)
{
	const struct zf_inode *ri = zi_raw(zi);
	uint32_t fl = stored(zi) & GETTABLE;

	if (ri->i_inline & (ZF_INLINE_DATA | ZF_INLINE_DENTRY))
		fl |= FS_INLINE_DATA_FL;
	if (ri->i_inline & ZF_PIN_FILE)
		fl |= FS_NOCOW_FL;
	if (ri->i_advise & ZF_FADVISE_ENCRYPT)
		fl |= FS_ENCRYPT_FL;
	if (ri->i_advise & ZF_FADVISE_VERITY)
		fl |= FS_VERITY_FL;
	return fl;
}

/*
 * Set the flags under mask to fl's (the rest stay).  What chattr read and
 * sends back unchanged (inline data, nocow, ...) is accepted and ignored,
 * as F2FS does; what F2FS never reports is EOPNOTSUPP.
 */
static int set_masked(struct zlfs_sb *sbi, struct zinode *zi, uint32_t fl, uint32_t mask)
{
	struct zf_inode *ri = zi_raw(zi);
	uint32_t old = stored(zi);
	int ret;

	if ((ret = zlfs_writable(sbi)))
		return ret;
	if (fl & ~GETTABLE)
		return -EOPNOTSUPP;
	if (fl & UNSUPPORTED)
		return -EOPNOTSUPP;
	uint32_t cfl = fl & COMPR_FLAGS & mask;
	if (cfl != (old & COMPR_FLAGS & mask)) {
		/* F2FS's f2fs_setflags_common: +c and +m exclude each other */
		if (!(zlfs_feat(sbi) & ZF_FEAT_COMPRESSION) ||
		    (cfl & type_mask(zf_le16_to_cpu(ri->i_mode))) != cfl)
			return -EOPNOTSUPP;
		if (cfl == COMPR_FLAGS)
			return -EINVAL;
	}
	fl &= SETTABLE & mask;
	if ((fl & type_mask(zf_le16_to_cpu(ri->i_mode))) != fl)
		return -EOPNOTSUPP;
	if (cfl != (old & COMPR_FLAGS & mask)) {
		if ((ret = zlfs_cluster_set(sbi, zi, (cfl & ZF_FL_COMPR) != 0)))
			return ret;
		ri = zi_raw(zi);
		old = (stored(zi) & ~ZF_FL_NOCOMP) | (cfl & ZF_FL_NOCOMP);
	}
	ri->i_flags = zf_cpu_to_le32((old & ~(SETTABLE & mask)) | fl);
	zlfs_inode_touch(zi, false, true, false);
	zlfs_inode_dirty(sbi, zi);
	return 0;
}

int zlfs_flags_set(struct zlfs_sb *sbi, struct zinode *zi, uint32_t fl)
{
	return set_masked(sbi, zi, fl, ~0u);
}

uint32_t zlfs_projid(struct zinode *zi)
{
	const struct zf_inode *ri = zi_raw(zi);

	return ZF_EXTRA_HAS(ri, i_projid) ? zf_le32_to_cpu(ri->i_projid) : 0;
}

void zlfs_flags_get_x(struct zinode *zi, struct fsxattr *fa)
{
	uint32_t fl = zlfs_flags_get(zi);

	memset(fa, 0, sizeof(*fa));
	for (size_t i = 0; i < sizeof(xmap) / sizeof(xmap[0]); i++)
		if (fl & xmap[i].fl)
			fa->fsx_xflags |= xmap[i].xfl;
	fa->fsx_projid = zlfs_projid(zi);
}

/*
 * Can zi's project become projid?  As F2FS's f2fs_ioc_setproject: without
 * project_quota only project 0 exists; the inode must have extra
 * attributes that reach i_projid (EOVERFLOW for an old, short area).
 */
static int projid_settable(struct zlfs_sb *sbi, struct zinode *zi, uint32_t projid)
{
	const struct zf_inode *ri = zi_raw(zi);

	if (projid == zlfs_projid(zi))
		return 0;
	if (!(zlfs_feat(sbi) & ZF_FEAT_PRJQUOTA) || !(ri->i_inline & ZF_EXTRA_ATTR))
		return -EOPNOTSUPP;
	if (!ZF_EXTRA_HAS(ri, i_projid))
		return -EOVERFLOW;
	return 0;
}

int zlfs_flags_set_x(struct zlfs_sb *sbi, struct zinode *zi, const struct fsxattr *fa)
{
	uint32_t fl = 0, x = fa->fsx_xflags;

	for (size_t i = 0; i < sizeof(xmap) / sizeof(xmap[0]); i++)
		if (x & xmap[i].xfl) {
			fl |= xmap[i].fl;
			x &= ~xmap[i].xfl;
		}
	if (x || fa->fsx_extsize || fa->fsx_cowextsize)
		return -EOPNOTSUPP;
	int ret = projid_settable(sbi, zi, fa->fsx_projid);
	if (ret || (ret = set_masked(sbi, zi, fl, COMMON)))
		return ret;
	if (fa->fsx_projid != zlfs_projid(zi)) {
		zi_raw(zi)->i_projid = zf_cpu_to_le32(fa->fsx_projid);
		zlfs_inode_dirty(sbi, zi);   /* (set_masked stamped ctime) */
	}
	return 0;
}

void zlfs_proj_inherit(struct zlfs_sb *sbi, struct zinode *dir, struct zinode *zi)
{
	struct zf_inode *ri = zi_raw(zi);

	if ((zlfs_feat(sbi) & ZF_FEAT_PRJQUOTA) && (stored(dir) & ZF_FL_PROJINHERIT) &&
	    ZF_EXTRA_HAS(ri, i_projid))
		ri->i_projid = zf_cpu_to_le32(zlfs_projid(dir));
}

int zlfs_may_link_proj(struct zinode *dir, struct zinode *zi)
{
	if ((stored(dir) & ZF_FL_PROJINHERIT) && zlfs_projid(dir) != zlfs_projid(zi))
		return -EXDEV;
	return 0;
}

uint32_t zlfs_flags_inherit(struct zinode *dir, mode_t mode)
{
	return stored(dir) & INHERITED & type_mask(mode);
}

static bool locked(struct zinode *zi)
{
	return stored(zi) & (ZF_FL_IMMUTABLE | ZF_FL_APPEND);
}

int zlfs_may_open(struct zinode *zi, int flags)
{
	bool wr = (flags & O_ACCMODE) != O_RDONLY;

	if ((stored(zi) & ZF_FL_IMMUTABLE) && (wr || (flags & O_TRUNC)))
		return -EPERM;
	if ((stored(zi) & ZF_FL_APPEND) && ((wr && !(flags & O_APPEND)) || (flags & O_TRUNC)))
		return -EPERM;
	return 0;
}

int zlfs_may_setattr(struct zinode *zi, unsigned int what)
{
	uint32_t fl = stored(zi);

	if ((fl & ZF_FL_IMMUTABLE) && what)
		return -EPERM;
	if ((fl & ZF_FL_APPEND) && (what & ~ZLFS_SA_TIMES_NOW))
		return -EPERM;
	return 0;
}

int zlfs_may_change(struct zinode *zi)
{
	return locked(zi) ? -EPERM : 0;
}

int zlfs_may_add(struct zinode *dir)
{
	return (stored(dir) & ZF_FL_IMMUTABLE) ? -EPERM : 0;
}

int zlfs_may_delete(struct zinode *dir, struct zinode *victim)
{
	return locked(dir) || locked(victim) ? -EPERM : 0;
}

int zlfs_may_fallocate(struct zinode *zi, int mode)
{
	if (stored(zi) & ZF_FL_IMMUTABLE)
		return -EPERM;
	/* only a pure preallocation, which changes no byte and no size */
	if ((stored(zi) & ZF_FL_APPEND) && (mode & ~FALLOC_FL_KEEP_SIZE))
		return -EPERM;
	return 0;
}

