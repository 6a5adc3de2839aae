/*
 * bcache.c - the block cache of the blocks zlfs writes for itself:
 * directory (dentry) blocks and symlink targets, by (inode, file block).
 *
 * Write-back: a change to such a block only changes the cached copy
 * (zlfs_bcache_dirty); the block reaches the device later, when
 * zlfs_bcache_writeback runs: first in every checkpoint (before the nodes
 * that point at the blocks), and before that when the dirty amount passes
 * its bound (super.c's zlfs_cache_balance).  So no create, unlink, rename,
 * mkdir or rmdir waits for the device, as F2FS keeps dirty dentry pages in
 * the page cache.  Nothing is lost by waiting: a directory's blocks are
 * only reachable through its dnodes, which only a checkpoint writes
 * (directories are never rolled forward; a file's fsync restores its name
 * from the inode's DENT mark, as F2FS does).
 *
 * Invariants:
 *  - An entry holds the current content of block `index` of inode `ino`.
 *    Every writer of these blocks goes through the cache; GC moves a
 *    block's content unchanged; an inode's entries go when the inode is
 *    freed (zlfs_bcache_drop_ino), so a reused nid finds none.
 *  - A dirty entry's slot (node nid, slot ofs) holds either the block's
 *    old address or NEW_ADDR: a block the file did not have yet is
 *    reserved at once (slot NEW_ADDR, i_blocks counted, sbi->pending_blocks
 *    kept out of the free space) so stat and statfs are right and the
 *    write-back cannot run out of room.  NEW_ADDR never reaches the device
 *    from zlfs: the checkpoint writes these blocks before any node.
 *  - Dirty entries are never evicted; clean ones go in LRU order once the
 *    cache holds its capacity (a share of the cache_mb budget).
 * All calls need the filesystem lock; readers (shared) only get and put,
 * under sbi->cache_lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zlfs.h"
#include "data.h"
#include "bcache.h"
#include "segment.h"
#include "node.h"

#define BCACHE_HASH    16384
#define WB_BATCH       256       /* blocks per write batch in the write-back */

struct bent {
	uint32_t ino;
	uint32_t nid;             /* dirty: the dnode holding the block's slot */
	uint64_t index;
	struct bent *hnext;       /* chain of hash(ino, index) */
	struct bent *inext;       /* chain of hash(ino) */
	struct bent *prev, *next; /* LRU (clean), or the dirty list */
	uint16_t slot;            /* dirty: index into zlfs_dnode_addrs() */
	uint16_t ofs_in_node;     /* dirty: the SSA's ofs_in_node */
	uint8_t log;              /* dirty: the log it goes to */
	bool dirty;
	bool reserved;            /* dirty: counted in sbi->pending_blocks */
	uint8_t data[ZF_BLKSIZE] __attribute__((aligned(16)));
};

struct zbcache {
	struct bent *hash[BCACHE_HASH];
	struct bent *ihash[BCACHE_HASH];
	struct bent lru;          /* clean entries, most recent first */
	struct bent dirty;        /* dirty entries, oldest first */
	uint32_t n, cap;
};

static uint32_t bh(uint32_t ino, uint64_t index)
{
	uint64_t k = ((uint64_t)ino << 20) ^ index;
	return (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> 40) % BCACHE_HASH;
}

static uint32_t ih(uint32_t ino)
{
	return (ino * 2654435761u) % BCACHE_HASH;
}

static void list_del(struct bent *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void list_front(struct bent *head, struct bent *e)
{
	e->next = head->next;
	e->prev = head;
	head->next->prev = e;
	head->next = e;
}

static void list_back(struct bent *head, struct bent *e)
{
	e->prev = head->prev;
	e->next = head;
	head->prev->next = e;
	head->prev = e;
}

static struct bent *find(struct zbcache *c, uint32_t ino, uint64_t index)
{
	for (struct bent *e = c->hash[bh(ino, index)]; e; e = e->hnext)
		if (e->ino == ino && e->index == index)
			return e;
	return NULL;
}

/* A dirty entry becomes clean (written, or dropped with its inode). */
static void undirty(struct zlfs_sb *sbi, struct bent *e)
{
	if (!e->dirty)
		return;
	if (e->reserved) {
		sbi->pending_blocks--;
		e->reserved = false;
	}
	e->dirty = false;
	sbi->nr_dirty_meta--;
	list_del(e);
	list_front(&sbi->bcache->lru, e);
}

static void drop(struct zlfs_sb *sbi, struct bent *e)
{
	struct zbcache *c = sbi->bcache;
	struct bent **pp = &c->hash[bh(e->ino, e->index)];

	undirty(sbi, e);
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	pp = &c->ihash[ih(e->ino)];
	while (*pp != e)
		pp = &(*pp)->inext;
	*pp = e->inext;
	list_del(e);
	c->n--;
	free(e);
}

/* Room for one more entry: the least recently used clean one goes. */
static void make_room(struct zlfs_sb *sbi)
{
	struct zbcache *c = sbi->bcache;

	while (c->n >= c->cap && c->lru.prev != &c->lru)
		drop(sbi, c->lru.prev);
}

static struct bent *insert(struct zlfs_sb *sbi, uint32_t ino, uint64_t index)
{
	struct zbcache *c = sbi->bcache;
	struct bent *e;

	make_room(sbi);
	if (!(e = malloc(sizeof(*e))))
		return NULL;
	memset(e, 0, offsetof(struct bent, data));
	e->ino = ino;
	e->index = index;
	uint32_t h = bh(ino, index);
	e->hnext = c->hash[h];
	c->hash[h] = e;
	h = ih(ino);
	e->inext = c->ihash[h];
	c->ihash[h] = e;
	list_front(&c->lru, e);
	c->n++;
	return e;
}

int zlfs_bcache_init(struct zlfs_sb *sbi, uint32_t cap)
{
	struct zbcache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->lru.next = c->lru.prev = &c->lru;
	c->dirty.next = c->dirty.prev = &c->dirty;
	c->cap = cap ? cap : 1;
	sbi->bcache = c;
	return 0;
}

void zlfs_bcache_destroy(struct zlfs_sb *sbi)
{
	struct zbcache *c = sbi->bcache;

	if (!c)
		return;
	while (c->dirty.next != &c->dirty)
		drop(sbi, c->dirty.next);
	while (c->lru.next != &c->lru)
		drop(sbi, c->lru.next);
	free(c);
	sbi->bcache = NULL;
}

uint32_t zlfs_bcache_entry_bytes(void)
{
	return sizeof(struct bent) + ZLFS_MALLOC_OVERHEAD;   /* the block with its header */
}

uint32_t zlfs_bcache_count(const struct zlfs_sb *sbi)
{
	return sbi->bcache ? sbi->bcache->n : 0;
}

bool zlfs_bcache_get(struct zlfs_sb *sbi, uint32_t ino, uint64_t index, void *buf)
{
	struct zbcache *c = sbi->bcache;

	if (!c)
		return false;
	zlfs_cache_lock(sbi);
	struct bent *e = find(c, ino, index);
	if (e) {
		memcpy(buf, e->data, ZF_BLKSIZE);
		if (!e->dirty) {
			list_del(e);
			list_front(&c->lru, e);
		}
	}
	zlfs_cache_unlock(sbi);
	return e != NULL;
}

/* Readers come here too (under cache_lock): only clean entries are evicted. */
void zlfs_bcache_put(struct zlfs_sb *sbi, uint32_t ino, uint64_t index, const void *buf)
{
	struct bent *e;

	if (!sbi->bcache)
		return;
	zlfs_cache_lock(sbi);
	if ((e = find(sbi->bcache, ino, index))) {
		if (!e->dirty)   /* a dirty entry is newer than what the device has */
			memcpy(e->data, buf, ZF_BLKSIZE);
	} else if ((e = insert(sbi, ino, index))) {
		memcpy(e->data, buf, ZF_BLKSIZE);
	}
	zlfs_cache_unlock(sbi);
}

int zlfs_bcache_dirty(struct zlfs_sb *sbi, uint32_t ino, uint64_t index, const void *buf,
		      const struct zlfs_bslot *s)
{
	struct zbcache *c = sbi->bcache;
	struct bent *e = find(c, ino, index);

	if (!e && !(e = insert(sbi, ino, index)))
		return -ENOMEM;
	memcpy(e->data, buf, ZF_BLKSIZE);
	e->nid = s->nid;
	e->slot = s->slot;
	e->ofs_in_node = s->ofs_in_node;
	e->log = s->log;
	if (!e->dirty) {
		e->dirty = true;
		sbi->nr_dirty_meta++;
		list_del(e);
		list_back(&c->dirty, e);
	}
	if (s->reserve && !e->reserved) {
		e->reserved = true;
		sbi->pending_blocks++;
	}
	sbi->dirty = true;
	return 0;
}

void zlfs_bcache_drop_ino(struct zlfs_sb *sbi, uint32_t ino)
{
	struct zbcache *c = sbi->bcache;

	if (!c)
		return;
	for (struct bent *e = c->ihash[ih(ino)], *next; e; e = next) {
		next = e->inext;
		if (e->ino == ino)
			drop(sbi, e);
	}
}

static int by_ino_index(const void *a, const void *b)
{
	const struct bent *x = *(struct bent *const *)a, *y = *(struct bent *const *)b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * Give entry e its new address: allocated in its log, the slot pointed at
 * it, the old block (if any) invalidated.  The caller writes the block.
 */
static int place(struct zlfs_sb *sbi, struct bent *e, uint32_t *addr)
{
	struct znode *dn;
	unsigned int nr;
	int ret;

	if ((ret = zlfs_node_get(sbi, e->nid, 0, ZF_NODE_KIND_ANY, &dn)))
		return ret;
	zf_le32 *addrs = zlfs_dnode_addrs(sbi, dn, &nr);
	if (e->slot >= nr)
		return -ZLFS_EFSCORRUPTED;
	uint32_t old = zf_le32_to_cpu(addrs[e->slot]);
	if ((ret = zlfs_alloc_meta_block(sbi, e->log, e->nid, e->ofs_in_node,
					 zlfs_nat(sbi, e->nid)->version, addr)))
		return ret;
	if (old != ZF_NULL_ADDR && old != ZF_NEW_ADDR)
		zlfs_invalidate_block(sbi, old);
	addrs[e->slot] = zf_cpu_to_le32(*addr);
	zlfs_node_dirty(sbi, dn);
	return 0;
}

int zlfs_bcache_writeback(struct zlfs_sb *sbi)
{
	struct zbcache *c = sbi->bcache;
	struct bent **v;
	uint32_t n = 0;
	int ret = 0;

	if (!c || !sbi->nr_dirty_meta)
		return 0;
	if (sbi->fatal)
		return -EROFS;
	if (!(v = malloc(sbi->nr_dirty_meta * sizeof(*v))))
		return -ENOMEM;
	for (struct bent *e = c->dirty.next; e != &c->dirty && n < sbi->nr_dirty_meta; e = e->next)
		v[n++] = e;
	/* a directory's blocks side by side in its log */
	qsort(v, n, sizeof(*v), by_ino_index);
	for (uint32_t i = 0; i < n && !ret; i += WB_BATCH) {
		uint32_t k = n - i < WB_BATCH ? n - i : WB_BATCH;
		void *bufs[WB_BATCH];
		uint32_t addrs[WB_BATCH], placed = 0;
		for (; placed < k; placed++) {
			if ((ret = place(sbi, v[i + placed], &addrs[placed])))
				break;
			bufs[placed] = v[i + placed]->data;
		}
		/* allocated in this order, so written in it: each log in LBA order */
		if (placed) {
			int wret = zlfs_write_blocks(sbi, bufs, addrs, placed);
			if (wret && !ret)
				ret = wret;
		}
		if (ret)
			break;
		for (uint32_t j = 0; j < placed; j++)
			undirty(sbi, v[i + j]);
	}
	free(v);
	return ret;
}
