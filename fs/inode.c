/*
 * inode.c - in-memory inodes.
 *
 * States of an inode:
 *   linked      i_links > 0; in memory while FUSE holds lookups or opens
 *   orphan      i_links == 0 but still looked up or open; listed in every
 *               checkpoint so a crash frees it at the next mount
 *   freed       blocks, nodes and nid released (zlfs_iput / release_all)
 * A zinode pins its inode node in the node cache (pins > 0), so the inode
 * block is at hand and never dropped while dirty or in use.  To keep the
 * daemon's memory bounded while the kernel holds millions of inodes, the
 * cache trim (zlfs_inode_unload, at a moment no operation is under way)
 * unpins the clean inode nodes of inodes nobody has open; zlfs_iget pins
 * them again.  So a zinode is used only as zlfs_iget returned it in the
 * current operation (or while open).  The hash of zinodes grows with them.
 * All calls need the filesystem lock; readers (shared) call only
 * zlfs_iget, zlfs_inode_ref and zlfs_inode_stat, whose changes to the hash,
 * pins and lookup counts are under sbi->cache_lock.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "zlfs.h"
#include "data.h"
#include "bcache.h"
#include "node.h"
#include "acache.h"
#include "inode.h"

static uint32_t ihash(const struct zlfs_sb *sbi, uint32_t ino)
{
	return (ino * 2654435761u) % sbi->ino_hash_size;
}

static struct zinode *ifind(struct zlfs_sb *sbi, uint32_t ino)
{
	for (struct zinode *z = sbi->ino_hash[ihash(sbi, ino)]; z; z = z->hnext)
		if (z->ino == ino)
			return z;
	return NULL;
}

static void iunhash(struct zlfs_sb *sbi, struct zinode *zi)
{
	struct zinode **pp = &sbi->ino_hash[ihash(sbi, zi->ino)];

	while (*pp && *pp != zi)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = zi->hnext;
}

/*
 * The hash gets twice the buckets past two inodes a bucket, half when
 * under one inode in eight buckets (after `find` the kernel may let go of
 * millions), never fewer than INO_HASH_MIN; no memory: it stays as is.
 */
static void iresize(struct zlfs_sb *sbi, uint32_t size)
{
	struct zinode **h = calloc(size, sizeof(*h));

	if (!h)
		return;
	for (uint32_t b = 0; b < sbi->ino_hash_size; b++) {
		for (struct zinode *z = sbi->ino_hash[b], *next; z; z = next) {
			next = z->hnext;
			uint32_t k = (z->ino * 2654435761u) % size;
			z->hnext = h[k];
			h[k] = z;
		}
	}
	free(sbi->ino_hash);
	sbi->ino_hash = h;
	sbi->ino_hash_size = size;
	sbi->unload_cursor = 0;
}

static struct zinode *ihold(struct zlfs_sb *sbi, uint32_t ino, struct znode *n)
{
	struct zinode *zi = calloc(1, sizeof(*zi));

	if (!zi)
		return NULL;
	if (sbi->nr_inodes >= 2 * sbi->ino_hash_size)
		iresize(sbi, sbi->ino_hash_size * 2);
	zi->ino = ino;
	zi->node = n;
	if (n)
		n->pins++;
	uint32_t h = ihash(sbi, ino);
	zi->hnext = sbi->ino_hash[h];
	sbi->ino_hash[h] = zi;
	sbi->nr_inodes++;
	return zi;
}

/* The inode block of ino, checked (ino's NAT entry must say it is an inode). */
static int inode_node(struct zlfs_sb *sbi, uint32_t ino, struct znode **out)
{
	struct znode *n;
	int ret;

	/* no inode by that number (a stale file handle, or a dentry naming a freed inode) */
	if (ino < ZF_ROOT_INO || ino >= sbi->max_nid)
		return -ZLFS_EFSCORRUPTED;
	if ((ret = zlfs_nat_load(sbi, ino)))
		return ret;
	if (zlfs_nat(sbi, ino)->ino != ino)
		return -ZLFS_EFSCORRUPTED;
	if ((ret = zlfs_node_get(sbi, ino, ino, ZF_NODE_KIND_INODE, &n)))
		return ret;
	/* zlfs's own inodes pass; a bad one is refused before its fields steer anything */
	char why[200];
	if (zf_check_inode(&n->blk, sbi->max_nid, zlfs_feat(sbi), why, sizeof(why)))
		return zlfs_corrupt(sbi, "%s", why);
	*out = n;
	return 0;
}

int zlfs_iget(struct zlfs_sb *sbi, uint32_t ino, struct zinode **out)
{
	struct znode *n;
	int ret = 0;

	zlfs_cache_lock(sbi);
	struct zinode *zi = ifind(sbi, ino);
	bool loaded = zi && zi->node;
	zlfs_cache_unlock(sbi);
	if (loaded) {
		*out = zi;
		return 0;
	}
	if ((ret = inode_node(sbi, ino, &n)))
		return ret;
	/* readers: another may have been quicker; look again under the lock */
	zlfs_cache_lock(sbi);
	if (!(zi = ifind(sbi, ino))) {
		if (!(zi = ihold(sbi, ino, n)))
			ret = -ENOMEM;
	} else if (!zi->node) {   /* unloaded by the cache trim: pin it again */
		zi->node = n;
		n->pins++;
	}
	zlfs_cache_unlock(sbi);
	*out = zi;
	return ret;
}

/* Is n (nid ino) an inode block fit to answer for ino?  As inode_node checks. */
static bool inode_block_ok(const struct zlfs_sb *sbi, uint32_t ino, const struct znode *n)
{
	return zlfs_nat(sbi, ino)->ino == ino &&
	       !zf_check_node_footer(&n->blk, ino, ino, ZF_NODE_KIND_INODE, NULL, 0) &&
	       !zf_check_inode(&n->blk, sbi->max_nid, zlfs_feat(sbi), NULL, 0);
}

int zlfs_inode_attr(struct zlfs_sb *sbi, uint32_t ino, struct zattr *a)
{
	struct znode *n;
	int ret = 0;

	if (ino < ZF_ROOT_INO || ino >= sbi->max_nid)
		return -ZLFS_EFSCORRUPTED;
	if ((ret = zlfs_nat_load(sbi, ino)))
		return ret;
	if (zlfs_nat(sbi, ino)->ino != ino)
		return -ZLFS_EFSCORRUPTED;
	zlfs_cache_lock(sbi);
	struct zinode *zi = ifind(sbi, ino);
	if (zi && zi->node)
		zlfs_attr_from_inode(ino, zi_raw(zi), zlfs_feat(sbi), a);
	else if ((n = zlfs_node_cached(sbi, ino)) && inode_block_ok(sbi, ino, n))
		zlfs_attr_from_inode(ino, &n->blk.i, zlfs_feat(sbi), a);
	else if (n || !zlfs_acache_get(sbi, ino, a))
		ret = 1;   /* not at hand: read the block */
	zlfs_cache_unlock(sbi);
	if (ret == 1 && !(ret = inode_node(sbi, ino, &n)))
		zlfs_attr_from_inode(ino, &n->blk.i, zlfs_feat(sbi), a);   /* only exclusive holders evict n */
	return ret;
}

int zlfs_iref(struct zlfs_sb *sbi, uint32_t ino)
{
	int ret = 0;

	zlfs_cache_lock(sbi);
	struct zinode *zi = ifind(sbi, ino);
	if (!zi)
		zi = ihold(sbi, ino, NULL);   /* unloaded: zlfs_iget pins its node when needed */
	if (zi)
		zi->nlookup++;
	else
		ret = -ENOMEM;
	zlfs_cache_unlock(sbi);
	return ret;
}

struct zinode *zlfs_ifind(struct zlfs_sb *sbi, uint32_t ino)
{
	return ifind(sbi, ino);
}

void zlfs_inode_ref(struct zlfs_sb *sbi, struct zinode *zi)
{
	zlfs_cache_lock(sbi);
	zi->nlookup++;
	zlfs_cache_unlock(sbi);
}

uint32_t zlfs_inode_unload(struct zlfs_sb *sbi, uint32_t want)
{
	uint32_t done = 0;

	for (uint32_t k = 0; k < sbi->ino_hash_size && done < want; k++) {
		uint32_t b = (sbi->unload_cursor + k) % sbi->ino_hash_size;
		for (struct zinode *z = sbi->ino_hash[b]; z; z = z->hnext) {
			struct znode *n = z->node;
			if (!n || z->nopen || z->orphan || n->dirty || n->pins != 1 ||
			    z->ino == ZF_ROOT_INO)
				continue;
			n->pins--;
			z->node = NULL;
			done++;
		}
		sbi->unload_cursor = b + 1;
	}
	return done;
}

uint8_t zlfs_ftype(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return ZF_FT_REG_FILE;
	case S_IFDIR: return ZF_FT_DIR;
	case S_IFCHR: return ZF_FT_CHRDEV;
	case S_IFBLK: return ZF_FT_BLKDEV;
	case S_IFIFO: return ZF_FT_FIFO;
	case S_IFSOCK: return ZF_FT_SOCK;
	case S_IFLNK: return ZF_FT_SYMLINK;
	default: return ZF_FT_UNKNOWN;
	}
}

/* Set one on-disk time; true if it changed. */
static bool stamp(zf_le64 *sec, zf_le32 *nsec, const struct timespec *ts)
{
	zf_le64 s = zf_cpu_to_le64((uint64_t)ts->tv_sec);
	zf_le32 ns = zf_cpu_to_le32((uint32_t)ts->tv_nsec);

	if (*sec == s && *nsec == ns)
		return false;
	*sec = s;
	*nsec = ns;
	return true;
}

bool zlfs_inode_touch(struct zinode *zi, bool m, bool c, bool a)
{
	struct timespec ts;
	struct zf_inode *ri = zi_raw(zi);
	bool changed = false;

	/* the kernel stamps FUSE writes with its coarse clock: use the same one,
	 * or a later change could carry an earlier time than an earlier one */
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	if (m && !zi->keep_times)
		changed |= stamp(&ri->i_mtime, &ri->i_mtime_nsec, &ts);
	if (c && !zi->keep_times)
		changed |= stamp(&ri->i_ctime, &ri->i_ctime_nsec, &ts);
	if (a)
		changed |= stamp(&ri->i_atime, &ri->i_atime_nsec, &ts);
	return changed;
}

/* a <= b for on-disk times */
static bool time_le(uint64_t as, uint32_t ans, uint64_t bs, uint32_t bns)
{
	return as < bs || (as == bs && ans <= bns);
}

bool zlfs_atime_due(const struct zlfs_sb *sbi, struct zinode *zi)
{
	const struct zf_inode *ri = zi_raw(zi);
	uint64_t at = zf_le64_to_cpu(ri->i_atime);
	uint32_t atn = zf_le32_to_cpu(ri->i_atime_nsec);
	struct timespec now;

	if (sbi->ro || sbi->fatal || sbi->atime == ZLFS_ATIME_NOATIME || zlfs_flags_noatime(zi) ||
	    (sbi->nodiratime && S_ISDIR(zf_le16_to_cpu(ri->i_mode))))
		return false;
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	/* the kernel's rule too: no update that would not change atime */
	if (at == (uint64_t)now.tv_sec && atn == (uint32_t)now.tv_nsec)
		return false;
	if (sbi->atime == ZLFS_ATIME_STRICT)
		return true;
	/* relatime: after a change since the last access, or once a day */
	return time_le(at, atn, zf_le64_to_cpu(ri->i_mtime), zf_le32_to_cpu(ri->i_mtime_nsec)) ||
	       time_le(at, atn, zf_le64_to_cpu(ri->i_ctime), zf_le32_to_cpu(ri->i_ctime_nsec)) ||
	       (int64_t)((uint64_t)now.tv_sec - at) >= 24 * 60 * 60;
}

int zlfs_inode_accessed(struct zlfs_sb *sbi, struct zinode *zi)
{
	if (!zlfs_atime_due(sbi, zi) || zlfs_writable(sbi))
		return 0;
	zlfs_inode_touch(zi, false, false, true);
	zlfs_inode_dirty(sbi, zi);
	return 1;
}

/*
 * A new inode's generation, random as the kernel's get_random_u32: an
 * inode number comes back after a crash or a wrap of the nid cursor, and
 * an NFS-style file handle naming the old one must then be stale, so
 * every daemon run must draw differently (random() unseeded did not).
 */
static uint32_t new_generation(void)
{
	uint32_t g;

	if (getrandom(&g, sizeof(g), GRND_NONBLOCK) == (ssize_t)sizeof(g))
		return g;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);   /* no entropy yet: still differs per run */
	return (uint32_t)random() ^ (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16);
}

/*
 * A new inode's extra attributes and inline flags, as the kernel's
 * f2fs_new_inode makes them.  With extra_attr: all the extra attributes
 * (i_extra_isize 36, the area the kernel knows), project 0 until the
 * caller inherits one, the creation time the same as the mtime.  Under
 * the inline options (all on by default): INLINE_XATTR on every inode,
 * INLINE_DENTRY on a directory, INLINE_DATA on a regular file or a
 * symlink (which the first write or a long target converts).  The
 * inline xattr area is i_inline_xattr_size words on a
 * flexible_inline_xattr volume (the mount's inline_xattr_size, 0 without
 * INLINE_XATTR), else 50 words with INLINE_XATTR or INLINE_DENTRY
 * (zf_inline_xattr_words).  The checksum is set when the block is written.
 */
static void new_inode_shape(struct zlfs_sb *sbi, struct zf_inode *ri, mode_t mode)
{
	if (sbi->inline_xattr)
		ri->i_inline |= ZF_INLINE_XATTR;
	if (sbi->inline_dentry && S_ISDIR(mode))
		ri->i_inline |= ZF_INLINE_DENTRY;
	if (sbi->inline_data && (S_ISREG(mode) || S_ISLNK(mode)))
		ri->i_inline |= ZF_INLINE_DATA;
	if (!(zlfs_feat(sbi) & ZF_FEAT_EXTRA_ATTR))
		return;
	ri->i_inline |= ZF_EXTRA_ATTR;
	ri->i_extra_isize = zf_cpu_to_le16(ZF_EXTRA_ATTR_SIZE);
	ri->i_inline_xattr_size = 0;
	if ((zlfs_feat(sbi) & ZF_FEAT_FLEXIBLE_INLINE_XATTR) && sbi->inline_xattr)
		ri->i_inline_xattr_size = zf_cpu_to_le16(sbi->inline_xattr_words);
	ri->i_projid = 0;
	if (zlfs_feat(sbi) & ZF_FEAT_INODE_CRTIME) {
		ri->i_crtime = ri->i_mtime;
		ri->i_crtime_nsec = ri->i_mtime_nsec;
	}
}

int zlfs_inode_new(struct zlfs_sb *sbi, mode_t mode, uid_t uid, gid_t gid, uint32_t pino,
		   struct zinode **out)
{
	struct znode *n;
	struct zinode *zi;
	uint32_t nid;
	int ret;

	if (sbi->fatal)
		return -EROFS;
	if ((ret = zlfs_nid_alloc(sbi, &nid)))
		return ret;
	if ((ret = zlfs_node_new(sbi, nid, nid, 0, &n))) {
		zlfs_nat_mut(sbi, nid)->blkaddr = ZF_NULL_ADDR;
		return ret;
	}
	struct zf_inode *ri = &n->blk.i;
	ri->i_mode = zf_cpu_to_le16((uint16_t)mode);
	ri->i_uid = zf_cpu_to_le32(uid);
	ri->i_gid = zf_cpu_to_le32(gid);
	ri->i_links = zf_cpu_to_le32(S_ISDIR(mode) ? 2 : 1);
	ri->i_blocks = zf_cpu_to_le64(1);
	ri->i_generation = zf_cpu_to_le32(new_generation());
	ri->i_pino = zf_cpu_to_le32(pino);
	if (S_ISDIR(mode))
		ri->i_current_depth = zf_cpu_to_le32(1);
	else   /* F2FS: nodes of non-directories carry the cold mark (WARM_NODE log) */
		n->blk.footer.flag |= zf_cpu_to_le32(1u << ZF_NODE_COLD_BIT);
	if (!(zi = ihold(sbi, nid, n))) {
		zlfs_node_remove(sbi, nid);
		return -ENOMEM;
	}
	zlfs_inode_touch(zi, true, true, true);
	new_inode_shape(sbi, ri, mode);
	sbi->valid_inode_count++;
	*out = zi;
	return 0;
}

void zlfs_inode_dirty(struct zlfs_sb *sbi, struct zinode *zi)
{
	zlfs_node_dirty(sbi, zi->node);
}

void zlfs_inode_set_rdev(struct zinode *zi, dev_t rdev)
{
	struct zf_inode *ri = zi_raw(zi);
	unsigned int first = zf_extra_isize_words(ri), ma = major(rdev), mi = minor(rdev);

	if (ma < 256 && mi < 256) {
		ri->i_addr[first] = zf_cpu_to_le32((ma << 8) | mi);
		ri->i_addr[first + 1] = 0;
	} else {
		ri->i_addr[first] = 0;
		ri->i_addr[first + 1] = zf_cpu_to_le32((mi & 0xff) | (ma << 8) | ((mi & ~0xffu) << 12));
	}
}

void zlfs_inode_stat(struct zlfs_sb *sbi, struct zinode *zi, struct stat *st)
{
	struct zattr a;

	(void)sbi;
	zlfs_attr_from_inode(zi->ino, zi_raw(zi), zlfs_feat(sbi), &a);
	zlfs_attr_stat(&a, st);
}

/* The inode's xattr node goes with it. */
static void xattr_free(struct zlfs_sb *sbi, struct zinode *zi)
{
	struct zf_inode *ri = zi_raw(zi);
	uint32_t xnid = zf_le32_to_cpu(ri->i_xattr_nid);

	if (xnid) {
		zlfs_node_remove(sbi, xnid);
		ri->i_xattr_nid = 0;
	}
}

/* Give back everything the inode holds on disk. */
static int inode_free(struct zlfs_sb *sbi, struct zinode *zi)
{
	struct zf_inode *ri = zi_raw(zi);
	mode_t mode = zf_le16_to_cpu(ri->i_mode);
	int ret = 0;

	zlfs_bcache_drop_ino(sbi, zi->ino);   /* before its slots go: they hold NEW_ADDR */
	if (!S_ISCHR(mode) && !S_ISBLK(mode))
		ret = zlfs_truncate_blocks(sbi, zi, 0);
	xattr_free(sbi, zi);
	zi->node->pins--;
	zlfs_node_remove(sbi, zi->ino);
	zi->node = NULL;
	sbi->valid_inode_count--;
	return ret;
}

static void idrop(struct zlfs_sb *sbi, struct zinode *zi)
{
	iunhash(sbi, zi);
	sbi->nr_inodes--;
	if (zi->orphan) {
		sbi->nr_orphans--;
		inode_free(sbi, zi);
	} else if (zi->node) {
		zi->node->pins--;
	}
	free(zi);
}

void zlfs_iput(struct zlfs_sb *sbi, struct zinode *zi, uint64_t n)
{
	zi->nlookup = n > zi->nlookup ? 0 : zi->nlookup - n;
	if (zi->nlookup || zi->nopen || zi->ino == ZF_ROOT_INO)
		return;
	idrop(sbi, zi);
	/* (not in idrop: zlfs_inode_release_all walks the buckets while dropping) */
	if (sbi->ino_hash_size > INO_HASH_MIN && sbi->nr_inodes < sbi->ino_hash_size / 8)
		iresize(sbi, sbi->ino_hash_size / 2);
	/*
	 * The records are small and come and go by the million (`find`, then
	 * the kernel's forgets): malloc keeps the pages they freed unless told.
	 */
	if (++sbi->inodes_freed >= 65536) {
		sbi->inodes_freed = 0;
		malloc_trim(0);
	}
}

int zlfs_inode_unlinked(struct zlfs_sb *sbi, struct zinode *zi)
{
	if (zf_le32_to_cpu(zi_raw(zi)->i_links))
		return 0;
	if (!zi->orphan) {
		zi->orphan = true;
		sbi->nr_orphans++;
	}
	if (!zi->nlookup && !zi->nopen)
		idrop(sbi, zi);
	return 0;
}

void zlfs_inode_release_all(struct zlfs_sb *sbi)
{
	if (!sbi->ino_hash)
		return;
	for (uint32_t h = 0; h < sbi->ino_hash_size; h++) {
		while (sbi->ino_hash[h])
			idrop(sbi, sbi->ino_hash[h]);
	}
}

uint32_t zlfs_orphan_list(struct zlfs_sb *sbi, uint32_t *inos, uint32_t max)
{
	uint32_t n = 0;

	for (uint32_t h = 0; h < sbi->ino_hash_size; h++)
		for (struct zinode *z = sbi->ino_hash[h]; z; z = z->hnext)
			if (z->orphan && n < max)
				inos[n++] = z->ino;
	return n;
}

/* Inodes a crash left unlinked but in use: free them now. */
int zlfs_orphan_recover(struct zlfs_sb *sbi, const uint32_t *inos, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct zinode *zi;
		int ret = zlfs_iget(sbi, inos[i], &zi);
		if (ret)
			return ret;
		if (zf_le32_to_cpu(zi_raw(zi)->i_links)) {
			fprintf(stderr, "zlfs: orphan inode %u still has links\n", inos[i]);
			return -ZLFS_EFSCORRUPTED;
		}
		zi->orphan = true;
		sbi->nr_orphans++;
		idrop(sbi, zi);
	}
	return 0;
}
