/*
 * bcache.c - a cache of main-area blocks by address (directory blocks).
 *
 * Why it is simple: main-area blocks are never overwritten in place, so
 * the content at an address cannot change while the address is in use; it
 * only changes after its section is reset, and every reset clears the
 * cache (zlfs_bcache_clear, called from segment.c).  Writers put the new
 * block under its new address.  LRU, fixed capacity.
 * All calls need sbi->lock.
 */
#include <stdlib.h>
#include <string.h>

#include "zlfs.h"

#define BCACHE_BLOCKS 8192       /* 32 MiB */
#define BCACHE_HASH   16384

struct bent {
	uint32_t addr;
	struct bent *hnext;
	struct bent *prev, *next;   /* LRU, most recent first */
	uint8_t data[ZF_BLKSIZE];
};

struct zbcache {
	struct bent *hash[BCACHE_HASH];
	struct bent lru;
	uint32_t n;
};

static uint32_t bh(uint32_t addr)
{
	return (addr * 2654435761u) % BCACHE_HASH;
}

static void lru_unlink(struct bent *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void lru_push(struct zbcache *c, struct bent *e)
{
	e->next = c->lru.next;
	e->prev = &c->lru;
	c->lru.next->prev = e;
	c->lru.next = e;
}

static struct bent *find(struct zbcache *c, uint32_t addr)
{
	for (struct bent *e = c->hash[bh(addr)]; e; e = e->hnext)
		if (e->addr == addr)
			return e;
	return NULL;
}

static void drop(struct zbcache *c, struct bent *e)
{
	struct bent **pp = &c->hash[bh(e->addr)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	lru_unlink(e);
	c->n--;
	free(e);
}

int zlfs_bcache_init(struct zlfs_sb *sbi)
{
	struct zbcache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->lru.next = c->lru.prev = &c->lru;
	sbi->bcache = c;
	return 0;
}

void zlfs_bcache_clear(struct zlfs_sb *sbi)
{
	struct zbcache *c = sbi->bcache;

	while (c && c->lru.next != &c->lru)
		drop(c, c->lru.next);
}

void zlfs_bcache_destroy(struct zlfs_sb *sbi)
{
	zlfs_bcache_clear(sbi);
	free(sbi->bcache);
	sbi->bcache = NULL;
}

bool zlfs_bcache_get(struct zlfs_sb *sbi, uint32_t addr, void *buf)
{
	struct zbcache *c = sbi->bcache;
	struct bent *e = c ? find(c, addr) : NULL;

	if (!e)
		return false;
	memcpy(buf, e->data, ZF_BLKSIZE);
	lru_unlink(e);
	lru_push(c, e);
	return true;
}

void zlfs_bcache_put(struct zlfs_sb *sbi, uint32_t addr, const void *buf)
{
	struct zbcache *c = sbi->bcache;
	struct bent *e;

	if (!c)
		return;
	if ((e = find(c, addr))) {
		memcpy(e->data, buf, ZF_BLKSIZE);
		return;
	}
	if (c->n >= BCACHE_BLOCKS)
		drop(c, c->lru.prev);
	if (!(e = malloc(sizeof(*e))))
		return;
	e->addr = addr;
	memcpy(e->data, buf, ZF_BLKSIZE);
	e->hnext = c->hash[bh(addr)];
	c->hash[bh(addr)] = e;
	lru_push(c, e);
	c->n++;
}
