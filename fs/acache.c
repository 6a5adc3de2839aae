/*
 * acache.c - the attribute cache: what stat and a lookup need of an inode
 * (struct zattr, about a hundred bytes) for inodes whose 4 KiB inode block
 * has left the node cache.
 *
 * Why: under the cache_mb bound the node cache holds some tens of
 * thousands of inode blocks; a tree larger than that made every stat,
 * lookup and `ls -l` of an inode read its block back through the
 * dispatcher (several thread handoffs each), and the stat rate fell with
 * the size of the tree.  The attributes alone are 40 times smaller.
 *
 * Invariant: an entry exists only for an inode whose node is not in the
 * node cache, and holds that node's content as it was when the node cache
 * dropped it.  So it is never stale: only clean nodes are dropped (their
 * content is on the device), every change to an inode goes through its
 * node in the cache, and putting a node into the cache removes the entry
 * (node.c's cache_insert calls zlfs_acache_del); freeing a nid removes it
 * too.  Entries go in LRU order past their share of cache_mb.
 *
 * Locks: zlfs_acache_put runs only under the exclusive filesystem lock
 * (node.c's shrink); get and del run under the exclusive lock or, for
 * readers, with sbi->cache_lock held by the caller.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "zlfs.h"
#include "acache.h"

struct aent {
	struct aent *hnext;
	struct aent *prev, *next;        /* LRU, most recent first */
	struct zattr a;
};

struct zacache {
	struct aent **hash;
	uint32_t hsize, nr, cap;
	struct aent lru;                 /* list head */
};

#define HASH_MIN 4096

static uint32_t ahash(uint32_t ino, uint32_t size)
{
	return (ino * 2654435761u) & (size - 1);
}

static void lru_unlink(struct aent *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void lru_push(struct zacache *c, struct aent *e)
{
	e->next = c->lru.next;
	e->prev = &c->lru;
	c->lru.next->prev = e;
	c->lru.next = e;
}

static struct aent **slot_of(struct zacache *c, uint32_t ino)
{
	struct aent **pp = &c->hash[ahash(ino, c->hsize)];

	while (*pp && (*pp)->a.ino != ino)
		pp = &(*pp)->hnext;
	return pp;
}

static void remove_at(struct zacache *c, struct aent **pp)
{
	struct aent *e = *pp;

	*pp = e->hnext;
	lru_unlink(e);
	c->nr--;
	free(e);
}

/* Twice the buckets past two entries per bucket; without memory, stay. */
static void grow(struct zacache *c)
{
	uint32_t size = c->hsize * 2;
	struct aent **h = calloc(size, sizeof(*h));

	if (!h)
		return;
	for (uint32_t b = 0; b < c->hsize; b++) {
		for (struct aent *e = c->hash[b], *next; e; e = next) {
			next = e->hnext;
			uint32_t k = ahash(e->a.ino, size);
			e->hnext = h[k];
			h[k] = e;
		}
	}
	free(c->hash);
	c->hash = h;
	c->hsize = size;
}

int zlfs_acache_init(struct zlfs_sb *sbi, uint32_t cap)
{
	struct zacache *c = calloc(1, sizeof(*c));

	if (!c || !(c->hash = calloc(HASH_MIN, sizeof(*c->hash)))) {
		free(c);
		return -ENOMEM;
	}
	c->hsize = HASH_MIN;
	c->cap = cap ? cap : 1;
	c->lru.next = c->lru.prev = &c->lru;
	sbi->acache = c;
	return 0;
}

void zlfs_acache_destroy(struct zlfs_sb *sbi)
{
	struct zacache *c = sbi->acache;

	if (!c)
		return;
	for (struct aent *e = c->lru.next, *next; e != &c->lru; e = next) {
		next = e->next;
		free(e);
	}
	free(c->hash);
	free(c);
	sbi->acache = NULL;
}

uint32_t zlfs_acache_entry_bytes(void)
{
	/* malloc's header and rounding, and a share of the hash's buckets */
	return sizeof(struct aent) + ZLFS_MALLOC_OVERHEAD + 4;
}

void zlfs_acache_put(struct zlfs_sb *sbi, const struct zattr *a)
{
	struct zacache *c = sbi->acache;
	struct aent **pp = slot_of(c, a->ino), *e = *pp;

	if (e) {   /* cannot happen while the invariant holds; replace to be safe */
		e->a = *a;
		lru_unlink(e);
		lru_push(c, e);
		return;
	}
	while (c->nr >= c->cap && c->lru.prev != &c->lru) {
		struct aent *old = c->lru.prev;
		remove_at(c, slot_of(c, old->a.ino));
	}
	if (!(e = malloc(sizeof(*e))))
		return;   /* only a cache: without memory the inode block is read again */
	if (c->nr >= 2 * c->hsize)
		grow(c);
	pp = slot_of(c, a->ino);   /* again: the evictions or the growth moved the chain */
	e->a = *a;
	e->hnext = *pp;
	*pp = e;
	lru_push(c, e);
	c->nr++;
}

bool zlfs_acache_get(struct zlfs_sb *sbi, uint32_t ino, struct zattr *out)
{
	struct zacache *c = sbi->acache;
	struct aent *e = *slot_of(c, ino);

	if (!e)
		return false;
	lru_unlink(e);
	lru_push(c, e);
	*out = e->a;
	return true;
}

void zlfs_acache_del(struct zlfs_sb *sbi, uint32_t ino)
{
	struct zacache *c = sbi->acache;
	struct aent **pp;

	if (c && c->nr && *(pp = slot_of(c, ino)))
		remove_at(c, pp);
}

uint32_t zlfs_acache_count(const struct zlfs_sb *sbi)
{
	return sbi->acache ? sbi->acache->nr : 0;
}

/* ---- attributes from an inode block, and as stat shows them ---- */

static dev_t inode_rdev(const struct zf_inode *ri)
{
	unsigned int first = zf_extra_isize_words(ri);
	uint32_t old = zf_le32_to_cpu(ri->i_addr[first]);

	if (old)   /* the kernel's old_encode_dev */
		return makedev((old >> 8) & 0xff, old & 0xff);
	uint32_t nw = zf_le32_to_cpu(ri->i_addr[first + 1]);   /* new_encode_dev */
	return makedev((nw & 0xfff00) >> 8, (nw & 0xff) | ((nw >> 12) & 0xfff00));
}

void zlfs_attr_from_inode(uint32_t ino, const struct zf_inode *ri, uint32_t feat, struct zattr *a)
{
	mode_t mode = zf_le16_to_cpu(ri->i_mode);

	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->generation = zf_le32_to_cpu(ri->i_generation);
	a->mode = (uint16_t)mode;
	a->links = zf_le32_to_cpu(ri->i_links);
	a->uid = zf_le32_to_cpu(ri->i_uid);
	a->gid = zf_le32_to_cpu(ri->i_gid);
	a->size = zf_le64_to_cpu(ri->i_size);
	a->blocks = zf_le64_to_cpu(ri->i_blocks);
	a->atime = zf_le64_to_cpu(ri->i_atime);
	a->atime_ns = zf_le32_to_cpu(ri->i_atime_nsec);
	a->mtime = zf_le64_to_cpu(ri->i_mtime);
	a->mtime_ns = zf_le32_to_cpu(ri->i_mtime_nsec);
	a->ctime = zf_le64_to_cpu(ri->i_ctime);
	a->ctime_ns = zf_le32_to_cpu(ri->i_ctime_nsec);
	if (S_ISCHR(mode) || S_ISBLK(mode))
		a->rdev = inode_rdev(ri);
	a->no_xattr = zlfs_xattr_none(ri, feat);
	a->inline_data = (S_ISREG(mode) && (ri->i_inline & ZF_INLINE_DATA)) ||
			 (ri->i_inline & ZF_INLINE_DENTRY);
}

void zlfs_attr_stat(const struct zattr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->links;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	/*
	 * i_blocks counts 4 KiB blocks and the inode block itself.  Data kept
	 * inline in the inode block shows as the sectors it fills, as the
	 * kernel's f2fs_getattr shows it: du agrees on both sides.
	 */
	st->st_blocks = (blkcnt_t)((a->blocks ? a->blocks - 1 : 0) * (ZF_BLKSIZE / 512));
	if (a->inline_data)
		st->st_blocks += (blkcnt_t)((a->size + 511) >> 9);
	st->st_blksize = ZF_BLKSIZE;
	st->st_atim.tv_sec = (time_t)a->atime;
	st->st_atim.tv_nsec = a->atime_ns;
	st->st_mtim.tv_sec = (time_t)a->mtime;
	st->st_mtim.tv_nsec = a->mtime_ns;
	st->st_ctim.tv_sec = (time_t)a->ctime;
	st->st_ctim.tv_nsec = a->ctime_ns;
	st->st_rdev = (dev_t)a->rdev;
}
