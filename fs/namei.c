/*
 * namei.c - the namespace: create (files, directories, symlinks, device
 * nodes), link, unlink, rmdir, rename (NOREPLACE, EXCHANGE).
 *
 * Callers pass inode numbers as F2FS knows them (the root is 3) and the
 * caller's credentials; permissions were checked by the kernel, but not
 * the immutable and append-only flags, which the kernel's FUSE never sets
 * on its inodes: those rules are applied here (flags.c's zlfs_may_*).  Link
 * counts follow POSIX: a directory has 2 + its subdirectories; a name that
 * goes away drops a link, and the last one hands the inode to inode.c
 * (freed now, or as an orphan when still open).
 *
 * Each operation makes room first, as F2FS's call f2fs_balance_fs:
 * zlfs_balance with the operation's ZLFS_BUDGET_*, before anything
 * changed, which may run GC and checkpoints and drop the lock meanwhile.
 * Inside an operation (rename's whiteout) and where no GC may run
 * (roll-forward at mount: zlfs_unlink_nobalance), the bodies are called
 * without it.
 * All calls need sbi->lock, exclusive.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "zlfs.h"
#include "gc.h"
#include "node.h"
#include "inode.h"
#include "namei.h"
#include "flags.h"
#include "cluster.h"
#include "file.h"
#include "dir.h"
#include "xattr.h"

int zlfs_dir_iget(struct zlfs_sb *sbi, uint32_t ino, struct zinode **out)
{
	int ret = zlfs_iget(sbi, ino, out);
	if (!ret && !S_ISDIR(zf_le16_to_cpu(zi_raw(*out)->i_mode)))
		ret = -ENOTDIR;
	return ret;
}

static void set_name(struct zinode *zi, const char *name)
{
	struct zf_inode *ri = zi_raw(zi);
	size_t len = strlen(name);
	ri->i_namelen = zf_cpu_to_le32((uint32_t)len);
	memset(ri->i_name, 0, sizeof(ri->i_name));
	memcpy(ri->i_name, name, len);
}

/* zlfs_create without making room: a whiteout, inside a rename that changed things already. */
static int create(struct zlfs_sb *sbi, const struct zlfs_cred *ctx, uint32_t parent,
		  const char *name, mode_t mode, dev_t rdev, const char *link, struct zinode **out)
{
	struct zinode *dir, *zi;
	uint32_t ino;
	uint8_t ft;
	int ret;

	if (strlen(name) > ZF_NAME_LEN)
		return -ENAMETOOLONG;
	if ((ret = zlfs_writable(sbi)) || (ret = zlfs_dir_iget(sbi, parent, &dir)))
		return ret;
	if (!zf_le32_to_cpu(zi_raw(dir)->i_links))
		return -ENOENT;
	ret = zlfs_dir_lookup(sbi, dir, name, strlen(name), &ino, &ft);
	if (!ret)
		return -EEXIST;
	if (ret != -ENOENT || (ret = zlfs_may_add(dir)))
		return ret;
	if (S_ISDIR(mode) && zf_le32_to_cpu(zi_raw(dir)->i_links) >= 0xffff)
		return -EMLINK;
	gid_t gid = ctx->gid;
	struct zf_inode *pri = zi_raw(dir);
	if (zf_le16_to_cpu(pri->i_mode) & S_ISGID) {   /* BSD group semantics under setgid dirs */
		gid = zf_le32_to_cpu(pri->i_gid);
		if (S_ISDIR(mode))
			mode |= S_ISGID;
	}
	if ((ret = zlfs_inode_new(sbi, mode, ctx->uid, gid, dir->ino, &zi)))
		return ret;
	set_name(zi, name);
	zi_raw(zi)->i_flags = zf_cpu_to_le32(zlfs_flags_inherit(dir, mode));
	zlfs_cluster_new_inode(sbi, dir, zi, name, strlen(name));
	zlfs_proj_inherit(sbi, dir, zi);
	if (!S_ISLNK(mode)) {
		mode_t m = mode;
		ret = zlfs_acl_inherit(sbi, dir, zi, &m);
		if (ret == 1) {   /* no default ACL: the umask applies (the kernel left it to us) */
			m = mode & ~(mode_t)(ctx->umask & 0777);
			zi_raw(zi)->i_mode = zf_cpu_to_le16((uint16_t)m);
			ret = 0;
		}
		mode = m;
	}
	if (ret)
		;
	else if (S_ISDIR(mode))
		ret = zlfs_dir_init(sbi, zi, dir->ino);
	else if (S_ISLNK(mode))
		ret = zlfs_file_symlink(sbi, zi, link);
	else if (S_ISCHR(mode) || S_ISBLK(mode))
		zlfs_inode_set_rdev(zi, rdev);
	if (!ret)
		ret = zlfs_dir_add(sbi, dir, name, strlen(name), zi->ino, zlfs_ftype(mode));
	if (ret) {
		zi_raw(zi)->i_links = 0;
		zlfs_inode_unlinked(sbi, zi);
		return ret;
	}
	if (S_ISDIR(mode))
		pri->i_links = zf_cpu_to_le32(zf_le32_to_cpu(pri->i_links) + 1);
	zlfs_inode_touch(dir, true, true, false);
	zlfs_inode_dirty(sbi, dir);
	*out = zi;
	return 0;
}

int zlfs_create(struct zlfs_sb *sbi, const struct zlfs_cred *ctx, uint32_t parent,
		const char *name, mode_t mode, dev_t rdev, const char *link, struct zinode **out)
{
	/* a symlink's target takes a block more */
	int ret = zlfs_balance(sbi, ZLFS_BUDGET_CREATE + (link ? 1 : 0));

	return ret ? ret : create(sbi, ctx, parent, name, mode, rdev, link, out);
}

static void drop_link(struct zlfs_sb *sbi, struct zinode *zi)
{
	struct zf_inode *ri = zi_raw(zi);
	uint32_t links = zf_le32_to_cpu(ri->i_links);

	if (S_ISDIR(zf_le16_to_cpu(ri->i_mode)))
		links = 0;
	else if (links)
		links--;
	ri->i_links = zf_cpu_to_le32(links);
	zlfs_inode_touch(zi, false, true, false);
	zlfs_inode_dirty(sbi, zi);
	zlfs_node_need_cp(sbi, zi->ino);   /* roll-forward restores no unlink */
}

int zlfs_unlink(struct zlfs_sb *sbi, uint32_t parent, const char *name, bool rmdir)
{
	/* removing frees space: it goes ahead even when GC found none to make */
	int ret = zlfs_balance(sbi, ZLFS_BUDGET_UNLINK);

	return ret && ret != -ENOSPC ? ret : zlfs_unlink_nobalance(sbi, parent, name, rmdir);
}

int zlfs_unlink_nobalance(struct zlfs_sb *sbi, uint32_t parent, const char *name, bool rmdir)
{
	struct zinode *dir, *zi;
	uint32_t ino;
	uint8_t ft;
	int ret;

	if ((ret = zlfs_writable(sbi)) || (ret = zlfs_dir_iget(sbi, parent, &dir)))
		return ret;
	if ((ret = zlfs_dir_lookup(sbi, dir, name, strlen(name), &ino, &ft)) ||
	    (ret = zlfs_iget(sbi, ino, &zi)))
		return ret;
	if ((ret = zlfs_may_delete(dir, zi)))
		return ret;
	bool isdir = S_ISDIR(zf_le16_to_cpu(zi_raw(zi)->i_mode));
	if (rmdir && !isdir)
		return -ENOTDIR;
	if (!rmdir && isdir)
		return -EISDIR;
	if (rmdir && !zlfs_dir_is_empty(sbi, zi))
		return -ENOTEMPTY;
	if ((ret = zlfs_dir_remove(sbi, dir, name, strlen(name))))
		return ret;
	if (isdir) {
		struct zf_inode *pri = zi_raw(dir);
		pri->i_links = zf_cpu_to_le32(zf_le32_to_cpu(pri->i_links) - 1);
	}
	zlfs_inode_touch(dir, true, true, false);
	zlfs_inode_dirty(sbi, dir);
	drop_link(sbi, zi);
	return zlfs_inode_unlinked(sbi, zi);
}

int zlfs_link(struct zlfs_sb *sbi, uint32_t ino, uint32_t newparent, const char *newname,
	      struct zinode **out)
{
	struct zinode *dir, *zi;
	uint32_t x;
	uint8_t ft;
	int ret;

	if ((ret = zlfs_balance(sbi, ZLFS_BUDGET_LINK)))
		return ret;
	if (strlen(newname) > ZF_NAME_LEN)
		return -ENAMETOOLONG;
	if ((ret = zlfs_writable(sbi)) || (ret = zlfs_dir_iget(sbi, newparent, &dir)) ||
	    (ret = zlfs_iget(sbi, ino, &zi)))
		return ret;
	struct zf_inode *ri = zi_raw(zi);
	if (S_ISDIR(zf_le16_to_cpu(ri->i_mode)))
		return -EPERM;
	if (zf_le32_to_cpu(ri->i_links) >= 0xffff)
		return -EMLINK;
	if (!zf_le32_to_cpu(ri->i_links))
		return -ENOENT;
	ret = zlfs_dir_lookup(sbi, dir, newname, strlen(newname), &x, &ft);
	if (!ret)
		return -EEXIST;
	if (ret != -ENOENT || (ret = zlfs_may_add(dir)) || (ret = zlfs_may_change(zi)) ||
	    (ret = zlfs_may_link_proj(dir, zi)) ||
	    (ret = zlfs_dir_add(sbi, dir, newname, strlen(newname), zi->ino,
						  zlfs_ftype(zf_le16_to_cpu(ri->i_mode)))))
		return ret;
	ri = zi_raw(zi);
	ri->i_links = zf_cpu_to_le32(zf_le32_to_cpu(ri->i_links) + 1);
	zlfs_node_need_cp(sbi, zi->ino);
	zlfs_inode_touch(zi, false, true, false);
	zlfs_inode_dirty(sbi, zi);
	zlfs_inode_touch(dir, true, true, false);
	zlfs_inode_dirty(sbi, dir);
	*out = zi;
	return 0;
}

/* Is `anc` an ancestor of (or equal to) directory d?  Walks '..'. */
static int is_ancestor(struct zlfs_sb *sbi, uint32_t anc, uint32_t d)
{
	for (int depth = 0; depth < 4096; depth++) {
		if (d == anc)
			return 1;
		if (d == ZF_ROOT_INO)
			return 0;
		struct zinode *zi;
		uint32_t up;
		uint8_t ft;
		int ret = zlfs_iget(sbi, d, &zi);
		if (ret)
			return ret;
		if ((ret = zlfs_dir_lookup(sbi, zi, "..", 2, &up, &ft)))
			return ret;
		d = up;
	}
	return -ELOOP;
}

/* The rename itself, room made (zlfs_rename, zlfs_rename_as). */
static int rename_names(struct zlfs_sb *sbi, uint32_t parent, const char *name,
			uint32_t newparent, const char *newname, unsigned int flags)
{
	struct zinode *od, *nd, *src, *dst = NULL;
	uint32_t sino, dino;
	uint8_t sft, dft;
	int ret;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if (strlen(newname) > ZF_NAME_LEN)
		return -ENAMETOOLONG;
	if ((ret = zlfs_writable(sbi)) || (ret = zlfs_dir_iget(sbi, parent, &od)) ||
	    (ret = zlfs_dir_iget(sbi, newparent, &nd)))
		return ret;
	if ((ret = zlfs_dir_lookup(sbi, od, name, strlen(name), &sino, &sft)) ||
	    (ret = zlfs_iget(sbi, sino, &src)))
		return ret;
	ret = zlfs_dir_lookup(sbi, nd, newname, strlen(newname), &dino, &dft);
	if (ret && ret != -ENOENT)
		return ret;
	bool exists = !ret;
	if (exists && (ret = zlfs_iget(sbi, dino, &dst)))
		return ret;
	if (exists && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (!exists && (flags & RENAME_EXCHANGE))
		return -ENOENT;
	if (exists && dst == src)
		return 0;    /* the same inode: POSIX says do nothing */
	/* the VFS's may_delete of the source, and of the target or may_create */
	if ((ret = zlfs_may_delete(od, src)) ||
	    (ret = exists ? zlfs_may_delete(nd, dst) : zlfs_may_add(nd)))
		return ret;
	/* F2FS: no name in a PROJINHERIT directory for another project's inode */
	if ((ret = zlfs_may_link_proj(nd, src)) ||
	    ((flags & RENAME_EXCHANGE) && (ret = zlfs_may_link_proj(od, dst))))
		return ret;
	bool sdir = S_ISDIR(zf_le16_to_cpu(zi_raw(src)->i_mode));
	bool ddir = exists && S_ISDIR(zf_le16_to_cpu(zi_raw(dst)->i_mode));
	/* no directory into itself */
	if (sdir && od != nd && (ret = is_ancestor(sbi, src->ino, nd->ino)) != 0)
		return ret < 0 ? ret : -EINVAL;
	if ((flags & RENAME_EXCHANGE) && ddir && od != nd &&
	    (ret = is_ancestor(sbi, dst->ino, od->ino)) != 0)
		return ret < 0 ? ret : -EINVAL;

	if (flags & RENAME_EXCHANGE) {
		if ((ret = zlfs_dir_set(sbi, od, name, strlen(name), dst->ino, dft)) ||
		    (ret = zlfs_dir_set(sbi, nd, newname, strlen(newname), src->ino, sft)))
			return ret;
		if (od != nd && sdir != ddir) {
			struct zf_inode *o = zi_raw(od), *n = zi_raw(nd);
			int d = sdir ? 1 : -1;   /* a directory moved from od to nd */
			n->i_links = zf_cpu_to_le32(zf_le32_to_cpu(n->i_links) + (uint32_t)d);
			o->i_links = zf_cpu_to_le32(zf_le32_to_cpu(o->i_links) - (uint32_t)d);
		}
		if (sdir && od != nd && (ret = zlfs_dir_set(sbi, src, "..", 2, nd->ino, ZF_FT_DIR)))
			return ret;
		if (ddir && od != nd && (ret = zlfs_dir_set(sbi, dst, "..", 2, od->ino, ZF_FT_DIR)))
			return ret;
		zi_raw(src)->i_pino = zf_cpu_to_le32(nd->ino);
		zi_raw(dst)->i_pino = zf_cpu_to_le32(od->ino);
		set_name(src, newname);
		set_name(dst, name);
		zlfs_node_need_cp(sbi, src->ino);   /* names move only with a checkpoint */
		zlfs_node_need_cp(sbi, dst->ino);
		zlfs_inode_touch(src, false, true, false);
		zlfs_inode_touch(dst, false, true, false);
		zlfs_inode_dirty(sbi, src);
		zlfs_inode_dirty(sbi, dst);
	} else {
		if (exists) {
			if (sdir && !ddir)
				return -ENOTDIR;
			if (!sdir && ddir)
				return -EISDIR;
			if (ddir && !zlfs_dir_is_empty(sbi, dst))
				return -ENOTEMPTY;
			if ((ret = zlfs_dir_set(sbi, nd, newname, strlen(newname), src->ino, sft)))
				return ret;
			if (ddir) {
				struct zf_inode *n = zi_raw(nd);
				n->i_links = zf_cpu_to_le32(zf_le32_to_cpu(n->i_links) - 1);
			}
			drop_link(sbi, dst);
		} else if ((ret = zlfs_dir_add(sbi, nd, newname, strlen(newname), src->ino, sft))) {
			return ret;
		}
		if ((ret = zlfs_dir_remove(sbi, od, name, strlen(name))))
			return ret;
		if (sdir && od != nd) {
			struct zf_inode *o = zi_raw(od), *n = zi_raw(nd);
			o->i_links = zf_cpu_to_le32(zf_le32_to_cpu(o->i_links) - 1);
			n->i_links = zf_cpu_to_le32(zf_le32_to_cpu(n->i_links) + 1);
			if ((ret = zlfs_dir_set(sbi, src, "..", 2, nd->ino, ZF_FT_DIR)))
				return ret;
		}
		zi_raw(src)->i_pino = zf_cpu_to_le32(nd->ino);
		set_name(src, newname);
		zlfs_node_need_cp(sbi, src->ino);   /* names move only with a checkpoint */
		zlfs_inode_touch(src, false, true, false);
		zlfs_inode_dirty(sbi, src);
	}
	zlfs_inode_touch(od, true, true, false);
	zlfs_inode_touch(nd, true, true, false);
	zlfs_inode_dirty(sbi, od);
	zlfs_inode_dirty(sbi, nd);
	if (exists && !(flags & RENAME_EXCHANGE))
		return zlfs_inode_unlinked(sbi, dst);
	return 0;
}

int zlfs_rename(struct zlfs_sb *sbi, uint32_t parent, const char *name, uint32_t newparent,
		const char *newname, unsigned int flags)
{
	int ret = zlfs_balance(sbi, ZLFS_BUDGET_RENAME);

	return ret ? ret : rename_names(sbi, parent, name, newparent, newname, flags);
}

int zlfs_rename_as(struct zlfs_sb *sbi, const struct zlfs_cred *ctx, uint32_t parent,
		   const char *name, uint32_t newparent, const char *newname, unsigned int flags)
{
	struct zlfs_cred wc = *ctx;
	struct zinode *w;
	int ret;

	if ((ret = zlfs_balance(sbi, ZLFS_BUDGET_RENAME)))
		return ret;
	if (!(flags & RENAME_WHITEOUT))
		return rename_names(sbi, parent, name, newparent, newname, flags);
	if (flags & RENAME_EXCHANGE)
		return -EINVAL;
	if ((ret = rename_names(sbi, parent, name, newparent, newname, flags & ~RENAME_WHITEOUT)))
		return ret;
	/*
	 * The whiteout, as the kernel's F2FS makes it: a character device
	 * 0:0 of mode 0, the caller's, in the old name's place.  Both names
	 * change only with the next checkpoint, so they go together.
	 */
	wc.umask = 07777;
	if ((ret = create(sbi, &wc, parent, name, S_IFCHR, makedev(0, 0), NULL, &w)))
		return ret;
	zlfs_iput(sbi, w, 0);
	return 0;
}
