/*
 * node.c - nodes: the NAT (nid -> block address), nid allocation, the
 * node block cache, writing dirty nodes to the node logs, and the mapping
 * of file blocks through F2FS's node tree.
 *
 * NAT state in memory: one entry per nid, in blocks of 455 (nat_blk) read
 * on demand (zlfs_nat_load; nat_bits tell which unread blocks hold free
 * nids), held once one of their entries is not zero.  blkaddr NULL_ADDR = free nid;
 * NEW_ADDR = allocated, its node only in the cache so far.  NAT blocks
 * changed since the checkpoint are marked in nat_dirty and written, at the
 * checkpoint, to the copy the last checkpoint does not use.
 *
 * A node is written by zlfs_node_flush (at a checkpoint) or, for the
 * dnodes of one file, by zlfs_node_fsync (the roll-forward chain): it goes
 * to a new block in its log, the old block is invalidated, the NAT entry
 * follows.  Dirty nodes are on sbi->dirty_list.
 *
 * NAT flags (in memory, redone at every checkpoint): a nid freed since the
 * checkpoint is not handed out again before the next one, as in F2FS, so
 * an inode number in the fsync chain never names two inodes (the one the
 * checkpoint has and a new one).  Node tree (get_node_path): inode addresses, 2 direct nodes,
 * 2 indirect nodes, 1 double indirect node; each node's footer records its
 * offset in that tree (F2FS's numbering).
 * All calls need the filesystem lock; readers (shared) only get nodes and
 * map blocks without allocating: zlfs_node_get's cache changes are under
 * sbi->cache_lock, and only exclusive holders evict.
 */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zlfs.h"
#include "data.h"
#include "segment.h"
#include "node.h"
#include "acache.h"
#include "zlfs/f2fs_cp_pack.h"

/* ---- NAT ----------------------------------------------------------------------- */

static void nat_mark_dirty(struct zlfs_sb *sbi, uint32_t nid)
{
	sbi->nat_dirty[nid / ZF_NAT_ENTRY_PER_BLOCK] = 1;
	sbi->dirty = true;
}

/* Block b as it is written (or read): its full and empty bits, as the kernel counts. */
static void nat_bits_set(struct zlfs_sb *sbi, uint32_t b, const struct zf_nat_block *blk)
{
	zf_nat_bits_put(sbi->nat_bits, sbi->nat_bits_bytes, b, zf_nat_block_used(blk, b));
}

/* Might block b hold a free nid?  Unread blocks answer from nat_bits. */
static bool nat_may_have_free(struct zlfs_sb *sbi, uint32_t b)
{
	return !zf_nat_bits_test(sbi->nat_bits, sbi->nat_bits_bytes, false, b);
}

int zlfs_nat_hold(struct zlfs_sb *sbi, uint32_t nid)
{
	int ret = zlfs_nat_load(sbi, nid);
	struct znat **b = &sbi->nat_blk[nid / ZF_NAT_ENTRY_PER_BLOCK];

	if (ret || *b)
		return ret;
	*b = calloc(ZF_NAT_ENTRY_PER_BLOCK, sizeof(**b));
	if (!*b)
		return -ENOMEM;
	__atomic_add_fetch(&sbi->nat_blocks_held, 1, __ATOMIC_RELAXED);
	return 0;
}

struct znat *zlfs_nat_mut(struct zlfs_sb *sbi, uint32_t nid)
{
	uint32_t b = nid / ZF_NAT_ENTRY_PER_BLOCK;

	if (!sbi->nat_in[b] || !sbi->nat_blk[b]) {
		fprintf(stderr, "zlfs: nid %u changed without room for its NAT block\n", nid);
		abort();
	}
	return &sbi->nat_blk[b][nid % ZF_NAT_ENTRY_PER_BLOCK];
}

/* A NAT block's entries, all zero (never used): it takes no room. */
static bool nat_block_empty(const struct zf_nat_block *blk)
{
	for (uint32_t k = 0; k < ZF_NAT_ENTRY_PER_BLOCK; k++) {
		const struct zf_nat_entry *e = &blk->entries[k];
		if (e->version || e->ino || e->block_addr)
			return false;
	}
	return true;
}

static void nat_set(struct znat *n, const struct zf_nat_entry *e)
{
	n->ino = zf_le32_to_cpu(e->ino);
	n->blkaddr = zf_le32_to_cpu(e->block_addr);
	n->version = e->version;
	n->flags = n->blkaddr != ZF_NULL_ADDR ? ZNAT_CKPT : 0;
}

/*
 * NAT block b as read from its live copy: checked (every address free or in
 * the main area: anything else would steer node reads and GC outside it),
 * its entries into memory unless all zero, and marked read (release: a
 * reader seeing nat_in sees the entries).
 */
static int nat_take(struct zlfs_sb *sbi, uint32_t b, const struct zf_nat_block *blk)
{
	/* (the node and meta inodes' entries, below the first free nid, say 1: not main-area blocks) */
	for (uint32_t k = b ? 0 : ZF_FIRST_FREE_NID; k < ZF_NAT_ENTRY_PER_BLOCK; k++) {
		uint32_t a = zf_le32_to_cpu(blk->entries[k].block_addr);
		if (a != ZF_NULL_ADDR && !zlfs_is_main_blkaddr(sbi, a)) {
			fprintf(stderr, "zlfs: NAT entry of nid %u points outside the main area (block %u)\n",
				b * ZF_NAT_ENTRY_PER_BLOCK + k, a);
			return -ZLFS_EFSCORRUPTED;
		}
	}
	if (!nat_block_empty(blk)) {
		struct znat *e = calloc(ZF_NAT_ENTRY_PER_BLOCK, sizeof(*e));
		if (!e)
			return -ENOMEM;
		for (uint32_t k = 0; k < ZF_NAT_ENTRY_PER_BLOCK; k++)
			nat_set(&e[k], &blk->entries[k]);
		sbi->nat_blk[b] = e;
		__atomic_add_fetch(&sbi->nat_blocks_held, 1, __ATOMIC_RELAXED);   /* (readers too) */
	}
	__atomic_store_n(&sbi->nat_in[b], 1, __ATOMIC_RELEASE);
	return 0;
}

int zlfs_nat_load(struct zlfs_sb *sbi, uint32_t nid)
{
	uint32_t b = nid / ZF_NAT_ENTRY_PER_BLOCK;
	int ret = 0;

	if (nid >= sbi->max_nid)
		return -ZLFS_EFSCORRUPTED;
	if (__atomic_load_n(&sbi->nat_in[b], __ATOMIC_ACQUIRE))
		return 0;
	struct zf_nat_block *blk = malloc(ZF_BLKSIZE);
	if (!blk)
		return -ENOMEM;
	pthread_mutex_lock(&sbi->nat_lock);
	if (!sbi->nat_in[b]) {   /* (another reader may have read it meanwhile) */
		int copy = zf_msb_test(sbi->nat_bitmap, b);
		ret = zlfs_read_block(sbi, zf_nat_blkaddr(&sbi->lay, b * ZF_NAT_ENTRY_PER_BLOCK, copy), blk);
		if (!ret)
			ret = nat_take(sbi, b, blk);
		if (!ret)
			__atomic_add_fetch(&sbi->st.nat_reads, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&sbi->nat_lock);
	free(blk);
	if (ret == -ZLFS_EFSCORRUPTED)
		ret = zlfs_corrupt(sbi, "NAT block %u is damaged (run fsck.zlfs)", b);
	return ret;
}

const struct znat *zlfs_nat_miss(struct zlfs_sb *sbi, uint32_t nid)
{
	static const struct znat none;
	int ret = zlfs_nat_load(sbi, nid);

	if (ret) {
		/* read-only from here: nothing is written on the word of this zero entry */
		zlfs_set_fatal(sbi, ret);
		return &none;
	}
	const struct znat *e = sbi->nat_blk[nid / ZF_NAT_ENTRY_PER_BLOCK];
	return e ? &e[nid % ZF_NAT_ENTRY_PER_BLOCK] : &none;
}

/*
 * Without nat_bits (a volume an older zlfs or a non-unmount kernel
 * checkpoint left), the whole NAT is read once, a run at a time, and the
 * bits made from it: the next checkpoint writes them, and the next mount
 * reads none of it.  Consecutive blocks whose live copy is the same one lie
 * side by side within a NAT segment (the copies alternate by segment), so
 * a volume's whole NAT is a few hundred reads, not one per block.
 */
static int nat_read_all(struct zlfs_sb *sbi)
{
	uint32_t nblocks = sbi->max_nid / ZF_NAT_ENTRY_PER_BLOCK;
	/* block-aligned: a device opened O_DIRECT would bounce (and copy) it */
	uint8_t *buf = aligned_alloc(ZF_BLKSIZE, (size_t)ZLFS_READ_RUN_MAX * ZF_BLKSIZE);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (uint32_t b = 0; b < nblocks && !ret;) {
		int copy = zf_msb_test(sbi->nat_bitmap, b);
		uint32_t n = 1;
		while (b + n < nblocks && n < ZLFS_READ_RUN_MAX && (b + n) % ZF_BLKS_PER_SEG &&
		       zf_msb_test(sbi->nat_bitmap, b + n) == copy)
			n++;
		if ((ret = zlfs_read_run(sbi, zf_nat_blkaddr(&sbi->lay, b * ZF_NAT_ENTRY_PER_BLOCK, copy),
					 n, buf)))
			break;
		for (uint32_t i = 0; i < n && !ret; i++, b++) {
			const struct zf_nat_block *blk = (const void *)(buf + (size_t)i * ZF_BLKSIZE);
			nat_bits_set(sbi, b, blk);
			ret = nat_take(sbi, b, blk);
		}
	}
	free(buf);
	return ret;
}

/* The checkpoint's NAT journal over the blocks: its blocks read, marked to be written. */
static int nat_journal(struct zlfs_sb *sbi, const struct zf_journal *nat_j)
{
	unsigned int cnt = zf_le16_to_cpu(nat_j->n_nats);
	int ret;

	if (cnt > ZF_NAT_JOURNAL_ENTRIES)
		return -ZLFS_EFSCORRUPTED;
	for (unsigned int i = 0; i < cnt; i++) {
		uint32_t nid = zf_le32_to_cpu(nat_j->nat_j.entries[i].nid);
		uint32_t a = zf_le32_to_cpu(nat_j->nat_j.entries[i].ne.block_addr);
		if (nid >= sbi->max_nid || (a != ZF_NULL_ADDR && !zlfs_is_main_blkaddr(sbi, a))) {
			fprintf(stderr, "zlfs: NAT journal entry %u (nid %u, block %u) is out of "
				"range\n", i, nid, a);
			return -ZLFS_EFSCORRUPTED;
		}
		if ((ret = zlfs_nat_hold(sbi, nid)))
			return ret;
		nat_set(zlfs_nat_mut(sbi, nid), &nat_j->nat_j.entries[i].ne);
		nat_mark_dirty(sbi, nid);   /* into the NAT block at the next checkpoint */
	}
	return 0;
}

int zlfs_node_build_from(struct zlfs_sb *sbi, const struct zf_journal *nat_j, const uint8_t *bits)
{
	sbi->max_nid = sbi->lay.max_nid;
	sbi->nat_blocks = (sbi->max_nid + ZF_NAT_ENTRY_PER_BLOCK - 1) / ZF_NAT_ENTRY_PER_BLOCK;
	sbi->nat_blocks_held = 0;
	sbi->nat_blk = calloc(sbi->nat_blocks, sizeof(*sbi->nat_blk));
	sbi->nat_in = calloc(sbi->nat_blocks, 1);
	sbi->nat_ref = calloc(sbi->nat_blocks, 1);
	sbi->nat_dirty = calloc(sbi->max_nid / ZF_NAT_ENTRY_PER_BLOCK + 1, 1);
	sbi->nat_bits_bytes = zf_nat_bits_bytes(sbi->lay.max_nid / ZF_NAT_ENTRY_PER_BLOCK);
	sbi->nat_bits_blocks = zf_nat_bits_blocks(sbi->lay.max_nid / ZF_NAT_ENTRY_PER_BLOCK);
	sbi->nat_bits = calloc(sbi->nat_bits_blocks, ZF_BLKSIZE);
	sbi->node_hash_size = 65536;
	sbi->node_hash = calloc(sbi->node_hash_size, sizeof(*sbi->node_hash));
	if (!sbi->nat_blk || !sbi->nat_in || !sbi->nat_ref || !sbi->nat_dirty || !sbi->nat_bits ||
	    !sbi->node_hash)
		return -ENOMEM;
	pthread_mutex_init(&sbi->nat_lock, NULL);
	sbi->lru.lru_next = sbi->lru.lru_prev = &sbi->lru;
	sbi->dirty_list.dirty_next = sbi->dirty_list.dirty_prev = &sbi->dirty_list;
	int ret;
	sbi->nat_bits_found = bits != NULL;
	if (bits)
		memcpy(sbi->nat_bits, bits, (size_t)sbi->nat_bits_blocks * ZF_BLKSIZE);
	else if ((ret = nat_read_all(sbi)))
		return ret;
	if ((ret = nat_journal(sbi, nat_j)))
		return ret;
	if (sbi->next_free_nid < ZF_FIRST_FREE_NID || sbi->next_free_nid >= sbi->max_nid)
		sbi->next_free_nid = ZF_FIRST_FREE_NID;
	return 0;
}

void zlfs_node_destroy(struct zlfs_sb *sbi)
{
	for (uint32_t h = 0; sbi->node_hash && h < sbi->node_hash_size; h++) {
		struct znode *n = sbi->node_hash[h], *next;
		for (; n; n = next) {
			next = n->hnext;
			free(n);
		}
	}
	free(sbi->node_hash);
	for (uint32_t b = 0; sbi->nat_blk && b < sbi->nat_blocks; b++)
		free(sbi->nat_blk[b]);
	if (sbi->nat_blk)
		pthread_mutex_destroy(&sbi->nat_lock);
	free(sbi->nat_blk);
	free(sbi->nat_in);
	free(sbi->nat_ref);
	free(sbi->nat_dirty);
	free(sbi->nat_bits);
	sbi->node_hash = NULL;
	sbi->nat_blk = NULL;
	sbi->nat_in = NULL;
	sbi->nat_ref = NULL;
	sbi->nat_dirty = NULL;
	sbi->nat_bits = NULL;
}

/*
 * The next free nid from next_free_nid on, round the NAT: a block at a
 * time, blocks nat_bits say are full passed unread; a nid freed since the
 * checkpoint waits for the next one (see the top).
 */
int zlfs_nid_alloc(struct zlfs_sb *sbi, uint32_t *nid)
{
	uint32_t per = ZF_NAT_ENTRY_PER_BLOCK, nblocks = sbi->nat_blocks;
	uint32_t start = sbi->next_free_nid, b0 = start / per;
	int ret;

	for (uint32_t i = 0; i <= nblocks; i++) {
		uint32_t b = (b0 + i) % nblocks;
		if (!sbi->nat_in[b] && !nat_may_have_free(sbi, b))
			continue;
		if ((ret = zlfs_nat_load(sbi, b * per)))
			return ret;
		/* the first visit starts at next_free_nid; the last, back at b0, ends there */
		uint32_t lo = b * per, hi = lo + per;
		if (i == 0)
			lo = start;
		else if (i == nblocks)
			hi = start;
		if (lo < ZF_FIRST_FREE_NID)
			lo = ZF_FIRST_FREE_NID;
		if (hi > sbi->max_nid)
			hi = sbi->max_nid;
		for (uint32_t n = lo; n < hi; n++) {
			const struct znat *e = zlfs_nat(sbi, n);
			if (e->blkaddr != ZF_NULL_ADDR || (e->flags & ZNAT_FREED))
				continue;
			if ((ret = zlfs_nat_hold(sbi, n)))
				return ret;
			zlfs_nat_mut(sbi, n)->blkaddr = ZF_NEW_ADDR;
			sbi->next_free_nid = n + 1 < sbi->max_nid ? n + 1 : ZF_FIRST_FREE_NID;
			*nid = n;
			return 0;
		}
	}
	return -ENOSPC;
}

/* ---- cache ------------------------------------------------------------------------- */

static uint32_t nhash(const struct zlfs_sb *sbi, uint32_t nid)
{
	return (nid * 2654435761u) % sbi->node_hash_size;
}

static struct znode *cache_find(struct zlfs_sb *sbi, uint32_t nid)
{
	for (struct znode *n = sbi->node_hash[nhash(sbi, nid)]; n; n = n->hnext)
		if (n->nid == nid)
			return n;
	return NULL;
}

static void lru_del(struct znode *n)
{
	n->lru_prev->lru_next = n->lru_next;
	n->lru_next->lru_prev = n->lru_prev;
}

static void lru_front(struct zlfs_sb *sbi, struct znode *n)
{
	n->lru_next = sbi->lru.lru_next;
	n->lru_prev = &sbi->lru;
	sbi->lru.lru_next->lru_prev = n;
	sbi->lru.lru_next = n;
}

static void dirty_del(struct znode *n)
{
	n->dirty_prev->dirty_next = n->dirty_next;
	n->dirty_next->dirty_prev = n->dirty_prev;
	n->dirty_next = n->dirty_prev = NULL;
}

/* A dirty node was written: clean now. */
static void mark_clean(struct zlfs_sb *sbi, struct znode *n)
{
	if (n->dirty) {
		dirty_del(n);
		n->dirty = false;
		sbi->nr_dirty_nodes--;
	}
}

static void cache_insert(struct zlfs_sb *sbi, struct znode *n)
{
	uint32_t h = nhash(sbi, n->nid);
	zlfs_acache_del(sbi, n->nid);   /* the node is the truth now */
	n->hnext = sbi->node_hash[h];
	sbi->node_hash[h] = n;
	lru_front(sbi, n);
	sbi->nr_nodes++;
}

static struct znode *cache_add(struct zlfs_sb *sbi, uint32_t nid)
{
	struct znode *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->nid = nid;
	cache_insert(sbi, n);
	return n;
}

static void cache_drop(struct zlfs_sb *sbi, struct znode *n)
{
	struct znode **pp = &sbi->node_hash[nhash(sbi, n->nid)];

	while (*pp && *pp != n)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = n->hnext;
	lru_del(n);
	if (n->dirty) {
		dirty_del(n);
		sbi->nr_dirty_nodes--;
	}
	sbi->nr_nodes--;
	free(n);
}

struct znode *zlfs_node_cached(struct zlfs_sb *sbi, uint32_t nid)
{
	return nid < sbi->max_nid ? cache_find(sbi, nid) : NULL;
}

/*
 * Node readahead.  Nodes are written in log order, so a walk in the order
 * files were made (rm -r, find -delete, a backup's scan) misses on one
 * node block after another.  A miss just past the previous one reads the
 * next blocks of the segment in the same command (up to the last valid
 * one, so never past a write pointer); the current nodes among them
 * (valid in the SIT, their NAT entry pointing there) enter the cache
 * clean.  An isolated miss reads its block alone.
 */
#define NODE_RA_BLOCKS 16

static uint32_t ra_blocks(struct zlfs_sb *sbi, uint32_t addr)
{
	uint32_t last = __atomic_exchange_n(&sbi->node_ra_last, addr, __ATOMIC_RELAXED);
	uint32_t n = 1;

	if (addr <= last || addr - last > 2 * NODE_RA_BLOCKS || !zlfs_is_main_blkaddr(sbi, addr))
		return 1;
	uint32_t in_seg = ZF_BLKS_PER_SEG - (addr - sbi->lay.main_blkaddr) % ZF_BLKS_PER_SEG;
	uint32_t max = in_seg < NODE_RA_BLOCKS ? in_seg : NODE_RA_BLOCKS;
	for (uint32_t k = 1; k < max; k++)
		if (zlfs_block_valid(sbi, addr + k))
			n = k + 1;
	return n;
}

/* The read-ahead blocks after the first: cache the current nodes among them. */
static void ra_insert(struct zlfs_sb *sbi, uint32_t addr, const struct zf_node *blks, uint32_t n)
{
	for (uint32_t k = 1; k < n; k++) {
		uint32_t nid = zf_le32_to_cpu(blks[k].footer.nid);
		/* (a NAT block not in memory is not read for a guess: the node waits its turn) */
		if (!zlfs_block_valid(sbi, addr + k) || nid < ZF_FIRST_FREE_NID - 1 ||
		    nid >= sbi->max_nid || !sbi->nat_in[nid / ZF_NAT_ENTRY_PER_BLOCK] ||
		    zlfs_nat(sbi, nid)->blkaddr != addr + k ||
		    (!sbi->csum_rewrite && !zf_inode_csum_ok(&blks[k], zlfs_feat(sbi), sbi->csum_seed)))
			continue;   /* (a bad checksum is reported when the node is asked for) */
		struct znode *rn = malloc(sizeof(*rn));
		if (!rn)
			return;
		memset(rn, 0, offsetof(struct znode, blk));
		rn->nid = nid;
		memcpy(&rn->blk, &blks[k], ZF_BLKSIZE);
		zlfs_cache_lock(sbi);
		if (cache_find(sbi, nid)) {
			free(rn);
		} else {
			cache_insert(sbi, rn);
			__atomic_add_fetch(&sbi->st.node_readahead, 1, __ATOMIC_RELAXED);
		}
		zlfs_cache_unlock(sbi);
	}
}

/* Is cached node n what the caller asked for?  0, or the volume turns read-only. */
static int node_check(struct zlfs_sb *sbi, const struct znode *n, uint32_t ino,
		      enum zf_node_kind kind)
{
	char why[160];

	if (!zf_check_node_footer(&n->blk, n->nid, ino, kind, why, sizeof(why)))
		return 0;
	return zlfs_corrupt(sbi, "%s", why);
}

/*
 * An inode block just read: its checksum (inode_checksum volumes), as the
 * kernel's f2fs_inode_chksum_verify.  Checked only when a block comes from
 * the device: a cached inode changes before its next write sets the sum.
 */
static int node_csum_check(struct zlfs_sb *sbi, const struct znode *n)
{
	if (zf_inode_csum_ok(&n->blk, zlfs_feat(sbi), sbi->csum_seed))
		return 0;
	if (sbi->csum_rewrite)   /* fsck.zlfs repairing it: the next write sets a fresh sum */
		return 0;
	return zlfs_corrupt(sbi, "inode %u: checksum 0x%08x stored, 0x%08x computed (the inode "
			    "block is damaged)", n->nid, zf_le32_to_cpu(n->blk.i.i_inode_checksum),
			    zf_inode_csum(&n->blk, sbi->csum_seed));
}

int zlfs_node_get(struct zlfs_sb *sbi, uint32_t nid, uint32_t ino, enum zf_node_kind kind,
		  struct znode **out)
{
	struct znode *n;
	int ret;

	if (nid < ZF_ROOT_INO || nid >= sbi->max_nid)
		return zlfs_corrupt(sbi, "nid %u (of inode %u) outside [%u, %u)", nid, ino,
				    ZF_ROOT_INO, sbi->max_nid);
	zlfs_cache_lock(sbi);
	if ((n = cache_find(sbi, nid))) {
		lru_del(n);
		lru_front(sbi, n);
		zlfs_cache_unlock(sbi);
		if ((ret = node_check(sbi, n, ino, kind)))
			return ret;
		*out = n;
		return 0;
	}
	zlfs_cache_unlock(sbi);
	/* readers read outside cache_lock; the NAT changes only under the exclusive lock */
	if ((ret = zlfs_nat_load(sbi, nid)))
		return ret;
	uint32_t addr = zlfs_nat(sbi, nid)->blkaddr;
	if (addr == ZF_NULL_ADDR || addr == ZF_NEW_ADDR)
		return zlfs_corrupt(sbi, "node %u (of inode %u) is not in the NAT", nid, ino);
	if ((ret = zlfs_block_in_use(sbi, addr)) < 0)
		return ret;
	if (!ret)
		return zlfs_corrupt(sbi, "node %u is at block %u, %s", nid, addr,
				    zlfs_is_main_blkaddr(sbi, addr) ? "which the SIT says is free" :
				    "outside the main area");
	if (!(n = calloc(1, sizeof(*n))))
		return -ENOMEM;
	n->nid = nid;
	uint32_t ra = ra_blocks(sbi, addr);
	__atomic_add_fetch(&sbi->st.node_misses, 1, __ATOMIC_RELAXED);
	struct zf_node *blks = NULL;
	if (ra > 1 && (blks = aligned_alloc(4096, (size_t)ra * ZF_BLKSIZE))) {
		if (!(ret = zlfs_disp_rw(sbi->disp, ZLFS_OP_READ, blks, (size_t)ra * ZF_BLKSIZE,
					 (uint64_t)addr * ZF_BLKSIZE, 0, NULL)))
			memcpy(&n->blk, &blks[0], ZF_BLKSIZE);
	} else {
		ra = 1;
		ret = zlfs_read_block(sbi, addr, &n->blk);
	}
	if (ret) {
		free(blks);
		free(n);
		return ret;
	}
	if (blks) {
		ra_insert(sbi, addr, blks, ra);
		free(blks);
	}
	if ((ret = node_check(sbi, n, ino, kind)) || (ret = node_csum_check(sbi, n))) {
		free(n);
		return ret;
	}
	zlfs_cache_lock(sbi);
	struct znode *other = cache_find(sbi, nid);   /* another reader was quicker */
	if (other) {
		free(n);
		n = other;
	} else {
		cache_insert(sbi, n);
	}
	zlfs_cache_unlock(sbi);
	*out = n;
	return 0;
}

int zlfs_node_gc_dirty(struct zlfs_sb *sbi, uint32_t nid, const void *blk)
{
	struct znode *n = cache_find(sbi, nid);

	if (!n) {
		const struct zf_node *b = blk;
		if (!b)
			return -ENOENT;
		if (zf_le32_to_cpu(b->footer.nid) != nid)
			return -ZLFS_EFSCORRUPTED;
		/* moving a damaged inode would give it a fresh, valid checksum */
		if (!sbi->csum_rewrite && !zf_inode_csum_ok(b, zlfs_feat(sbi), sbi->csum_seed))
			return zlfs_corrupt(sbi, "inode %u: checksum mismatch in the block GC moves",
					    nid);
		if (!(n = cache_add(sbi, nid)))
			return -ENOMEM;
		memcpy(&n->blk, blk, ZF_BLKSIZE);
	}
	zlfs_node_dirty(sbi, n);
	return 0;
}

void zlfs_node_dirty(struct zlfs_sb *sbi, struct znode *n)
{
	if (!n->dirty) {
		n->dirty = true;
		n->dirty_next = &sbi->dirty_list;
		n->dirty_prev = sbi->dirty_list.dirty_prev;
		sbi->dirty_list.dirty_prev->dirty_next = n;
		sbi->dirty_list.dirty_prev = n;
		sbi->nr_dirty_nodes++;
	}
	sbi->dirty = true;
}

int zlfs_node_new(struct zlfs_sb *sbi, uint32_t nid, uint32_t ino, unsigned int ofs,
		  struct znode **out)
{
	struct znode *n = cache_find(sbi, nid);

	if (n)
		return -EEXIST;
	if (!zlfs_avail_blocks(sbi))
		return -ENOSPC;   /* it takes a block of the user's share */
	if (zlfs_nat_hold(sbi, nid) || !(n = cache_add(sbi, nid)))
		return -ENOMEM;
	zf_node_set_footer(&n->blk, nid, ino, ofs, sbi->cp_ver, 0);
	struct znat *e = zlfs_nat_mut(sbi, nid);
	e->ino = ino;
	e->blkaddr = ZF_NEW_ADDR;
	e->flags = 0;
	nat_mark_dirty(sbi, nid);
	sbi->valid_node_count++;
	sbi->nr_new_nodes++;
	zlfs_node_dirty(sbi, n);
	*out = n;
	return 0;
}

void zlfs_node_remove(struct zlfs_sb *sbi, uint32_t nid)
{
	struct znode *n = cache_find(sbi, nid);

	if (n)
		cache_drop(sbi, n);
	zlfs_acache_del(sbi, nid);
	if (zlfs_nat_load(sbi, nid) || !sbi->nat_blk[nid / ZF_NAT_ENTRY_PER_BLOCK])
		return;   /* never used: nothing to free (or unreadable: read-only now) */
	struct znat *e = zlfs_nat_mut(sbi, nid);
	if (e->blkaddr != ZF_NULL_ADDR) {
		zlfs_invalidate_block(sbi, e->blkaddr);
		sbi->valid_node_count--;
		if (e->blkaddr == ZF_NEW_ADDR)
			sbi->nr_new_nodes--;
	}
	e->blkaddr = ZF_NULL_ADDR;
	e->ino = 0;
	e->version++;
	e->flags = ZNAT_FREED;
	nat_mark_dirty(sbi, nid);
}

bool zlfs_nid_checkpointed(const struct zlfs_sb *sbi, uint32_t nid)
{
	return nid < sbi->max_nid && (zlfs_nat(sbi, nid)->flags & ZNAT_CKPT);
}

void zlfs_node_need_cp(struct zlfs_sb *sbi, uint32_t ino)
{
	/* (a NAT block that cannot be read made the volume read-only: no fsync to steer) */
	if (ino < sbi->max_nid && !zlfs_nat_load(sbi, ino) &&
	    sbi->nat_blk[ino / ZF_NAT_ENTRY_PER_BLOCK])
		zlfs_nat_mut(sbi, ino)->flags |= ZNAT_NEED_CP;
}

void zlfs_node_after_cp(struct zlfs_sb *sbi)
{
	/* every node is written now: each live nid is in the checkpoint */
	for (uint32_t b = 0; b < sbi->nat_blocks; b++) {
		struct znat *e = sbi->nat_blk[b];
		for (uint32_t k = 0; e && k < ZF_NAT_ENTRY_PER_BLOCK; k++)
			e[k].flags = e[k].blkaddr != ZF_NULL_ADDR && e[k].blkaddr != ZF_NEW_ADDR ?
				     ZNAT_CKPT : 0;
	}
	sbi->rf_blocks = 0;
}

/* F2FS's IS_DNODE: inodes and direct nodes carry data addresses; indirect ones don't. */
bool zlfs_node_ofs_is_dnode(unsigned int ofs)
{
	if (ofs == 3 || ofs == 4 + ZF_NIDS_PER_BLOCK || ofs == 5 + 2 * ZF_NIDS_PER_BLOCK)
		return false;
	if (ofs >= 6 + 2 * ZF_NIDS_PER_BLOCK && ofs != ZF_XATTR_NODE_OFS)
		return (ofs - (6 + 2 * ZF_NIDS_PER_BLOCK)) % (ZF_NIDS_PER_BLOCK + 1) != 0;
	return true;
}

/* Which node log a node goes to (F2FS's placement). */
static unsigned int node_log(struct znode *n)
{
	if (!zlfs_node_ofs_is_dnode(zf_node_ofs(&n->blk)))
		return ZF_LOG_COLD_NODE;
	/* the cold mark: nodes of files go warm, of directories hot */
	return zf_node_mark(&n->blk, ZF_NODE_COLD_BIT) ? ZF_LOG_WARM_NODE : ZF_LOG_HOT_NODE;
}

static void set_mark(struct znode *n, unsigned int bit, bool on)
{
	uint32_t f = zf_le32_to_cpu(n->blk.footer.flag);
	f = on ? f | (1u << bit) : f & ~(1u << bit);
	n->blk.footer.flag = zf_cpu_to_le32(f);
}

/*
 * Give node n a new block in log `log` and fill its footer as the kernel
 * does: cp_ver of the last checkpoint (with its crc), next_blkaddr where
 * this log writes next.
 */
static int place_node(struct zlfs_sb *sbi, struct znode *n, unsigned int log)
{
	uint32_t nid = n->nid, addr;
	int ret;

	struct znat *e = zlfs_nat_mut(sbi, nid);
	if ((ret = zlfs_alloc_block(sbi, log, nid, 0, e->version, &addr)))
		return ret;
	if (e->blkaddr == ZF_NEW_ADDR)
		sbi->nr_new_nodes--;
	zlfs_invalidate_block(sbi, e->blkaddr);
	e->blkaddr = addr;
	nat_mark_dirty(sbi, nid);
	n->blk.footer.cp_ver = zf_cpu_to_le64(zlfs_cp_node_ver(sbi));
	n->blk.footer.next_blkaddr = zf_cpu_to_le32(zlfs_log_next_blkaddr(sbi, log));
	return 0;
}

/* Write n placed nodes at their NAT addresses and wait. */
static int write_nodes(struct zlfs_sb *sbi, struct znode **v, uint32_t n)
{
	void **bufs = calloc(n ? n : 1, sizeof(*bufs));
	uint32_t *addrs = calloc(n ? n : 1, sizeof(*addrs));
	int ret;

	if (!bufs || !addrs) {
		free(bufs);
		free(addrs);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		/* the footer is final now: an inode's checksum covers it */
		zf_inode_set_csum(&v[i]->blk, zlfs_feat(sbi), sbi->csum_seed);
		bufs[i] = &v[i]->blk;
		addrs[i] = zlfs_nat_mut(sbi, v[i]->nid)->blkaddr;
	}
	ret = zlfs_write_blocks(sbi, bufs, addrs, n);
	free(bufs);
	free(addrs);
	return ret;
}

int zlfs_node_flush(struct zlfs_sb *sbi)
{
	struct znode **v;
	uint32_t cnt = 0;
	int ret = 0;

	if (!sbi->nr_dirty_nodes)
		return 0;
	v = malloc(sbi->nr_dirty_nodes * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (struct znode *n = sbi->dirty_list.dirty_next; n != &sbi->dirty_list; n = n->dirty_next) {
		/* a checkpoint's nodes are not part of any fsync chain */
		set_mark(n, ZF_NODE_FSYNC_BIT, false);
		set_mark(n, ZF_NODE_DENT_BIT, false);
		if ((ret = place_node(sbi, n, node_log(n))))
			break;
		v[cnt++] = n;
	}
	if (!ret)
		ret = write_nodes(sbi, v, cnt);
	if (!ret)
		for (uint32_t i = 0; i < cnt; i++)
			mark_clean(sbi, v[i]);
	free(v);
	return ret;
}

int zlfs_node_fsync(struct zlfs_sb *sbi, uint32_t ino, bool data_first)
{
	struct znode **v;
	uint32_t cnt = 0, max = sbi->nr_dirty_nodes;
	int ret = 0;

	if (!max)
		return 0;
	v = malloc(max * sizeof(*v));
	if (!v)
		return -ENOMEM;
	/*
	 * F2FS's f2fs_need_dentry_mark: the name goes along with the first
	 * fsync of an inode the checkpoint does not have.
	 */
	bool dent = !(zlfs_nat(sbi, ino)->flags & (ZNAT_CKPT | ZNAT_FSYNCED));
	for (struct znode *n = sbi->dirty_list.dirty_next; n != &sbi->dirty_list; n = n->dirty_next) {
		if (zf_le32_to_cpu(n->blk.footer.ino) != ino ||
		    !zlfs_node_ofs_is_dnode(zf_node_ofs(&n->blk)))
			continue;
		bool inode = n->nid == ino;
		set_mark(n, ZF_NODE_FSYNC_BIT, true);
		set_mark(n, ZF_NODE_DENT_BIT, inode && dent);
		if ((ret = place_node(sbi, n, ZF_LOG_WARM_NODE)))
			goto out;
		v[cnt++] = n;
	}
	if (!cnt)
		goto out;
	/* the chain must go on where the last footer says */
	if (!zlfs_log_next_blkaddr(sbi, ZF_LOG_WARM_NODE)) {
		ret = -ENOSPC;
		goto out;
	}
	uint64_t t0 = zlfs_mono_ns(), t1;
	if (data_first && sbi->data_unflushed && (ret = zlfs_disp_flush(sbi->disp)))
		goto out;
	if ((ret = write_nodes(sbi, v, cnt)))
		goto out;
	t1 = zlfs_mono_ns();
	sbi->st.fsync_node_ns += t1 - t0;
	for (uint32_t i = 0; i < cnt; i++)
		mark_clean(sbi, v[i]);
	if ((ret = zlfs_disp_flush(sbi->disp)))
		goto out;
	sbi->st.fsync_flush_ns += zlfs_mono_ns() - t1;
	sbi->data_unflushed = false;
	/* the chain has the inode without inline data now, and block 0 landed */
	zlfs_nat_mut(sbi, ino)->flags = (uint8_t)((zlfs_nat(sbi, ino)->flags | ZNAT_FSYNCED) &
						  ~ZNAT_DATA_FIRST);
	sbi->rf_blocks += cnt;
out:
	free(v);
	if (ret && ret != -ENOMEM)
		zlfs_set_fatal(sbi, ret);
	return ret;
}

int zlfs_nat_flush(struct zlfs_sb *sbi)
{
	struct zf_nat_block *blk = calloc(1, ZF_BLKSIZE);
	uint32_t nblocks = sbi->max_nid / ZF_NAT_ENTRY_PER_BLOCK;
	int ret = 0;

	if (!blk)
		return -ENOMEM;
	for (uint32_t b = 0; b < nblocks; b++) {
		if (!sbi->nat_dirty[b])
			continue;
		memset(blk, 0, ZF_BLKSIZE);
		for (uint32_t k = 0; k < ZF_NAT_ENTRY_PER_BLOCK; k++) {
			const struct znat *e = zlfs_nat(sbi, b * ZF_NAT_ENTRY_PER_BLOCK + k);
			uint32_t a = e->blkaddr == ZF_NEW_ADDR ? ZF_NULL_ADDR : e->blkaddr;
			blk->entries[k].version = e->version;
			blk->entries[k].ino = zf_cpu_to_le32(a ? e->ino : 0);
			blk->entries[k].block_addr = zf_cpu_to_le32(a);
		}
		int copy = !zf_msb_test(sbi->nat_bitmap, b);
		if ((ret = zlfs_write_meta_block(sbi, zf_nat_blkaddr(&sbi->lay, b * ZF_NAT_ENTRY_PER_BLOCK,
								    copy), blk)))
			break;
		if (copy)
			zf_msb_set(sbi->nat_bitmap, b);
		else
			zf_msb_clear(sbi->nat_bitmap, b);
		nat_bits_set(sbi, b, blk);
		sbi->nat_dirty[b] = 0;
		sbi->st.cp_nat_written++;
	}
	free(blk);
	return ret;
}

void zlfs_node_shrink(struct zlfs_sb *sbi, uint32_t max)
{
	struct znode *n = sbi->lru.lru_prev, *prev;
	uint32_t dropped = 0;

	for (; n != &sbi->lru && sbi->nr_nodes > max; n = prev) {
		prev = n->lru_prev;
		if (!n->dirty && !n->pins) {
			const struct zf_inode *ri = &n->blk.i;
			if (zf_le32_to_cpu(n->blk.footer.ino) == n->nid && !zf_node_ofs(&n->blk) &&
			    zlfs_nat(sbi, n->nid)->ino == n->nid &&
			    !zf_check_inode(&n->blk, sbi->max_nid, zlfs_feat(sbi), NULL, 0)) {
				struct zattr a;
				zlfs_attr_from_inode(n->nid, ri, zlfs_feat(sbi), &a);
				zlfs_acache_put(sbi, &a);
			}
			cache_drop(sbi, n);
			dropped++;
		}
	}
	/* malloc keeps freed blocks for reuse; past 16 MiB of them, give the pages back */
	if (dropped >= 4096)
		malloc_trim(0);
}

/*
 * Would NAT block b read back as it is?  Written at the last checkpoint (or
 * unchanged since read), no entry with a flag a read would not give (freed,
 * fsynced, needing a checkpoint) or handed out and not written (NEW_ADDR),
 * and no node of it cached (a cached node's entry is changed in place when
 * it is written).
 */
static bool nat_block_clean(struct zlfs_sb *sbi, uint32_t b)
{
	const struct znat *e = sbi->nat_blk[b];

	if (sbi->nat_dirty[b])
		return false;
	for (uint32_t k = 0; e && k < ZF_NAT_ENTRY_PER_BLOCK; k++) {
		uint32_t a = e[k].blkaddr;
		if (a == ZF_NEW_ADDR || e[k].flags != (a != ZF_NULL_ADDR ? ZNAT_CKPT : 0))
			return false;
		if (a != ZF_NULL_ADDR && cache_find(sbi, b * ZF_NAT_ENTRY_PER_BLOCK + k))
			return false;
	}
	return true;
}

void zlfs_nat_shrink(struct zlfs_sb *sbi, uint32_t max)
{
	/* a clock: a block asked for since the hand last passed gets another turn */
	for (uint32_t i = 0; i < 2 * sbi->nat_blocks && sbi->nat_blocks_held > max; i++) {
		uint32_t b = sbi->nat_hand;
		sbi->nat_hand = b + 1 < sbi->nat_blocks ? b + 1 : 0;
		if (!sbi->nat_in[b] || !sbi->nat_blk[b] || b == ZF_ROOT_INO / ZF_NAT_ENTRY_PER_BLOCK)
			continue;
		if (sbi->nat_ref[b]) {
			sbi->nat_ref[b] = 0;
			continue;
		}
		if (!nat_block_clean(sbi, b))
			continue;
		free(sbi->nat_blk[b]);
		sbi->nat_blk[b] = NULL;
		sbi->nat_in[b] = 0;
		sbi->nat_blocks_held--;
		sbi->st.nat_evicted++;
	}
}

/* ---- block mapping ------------------------------------------------------------------ */

/*
 * Addresses slots of the inode: after extra attributes, before inline
 * xattrs; *dblks the slots used in each of its direct nodes (fewer for a
 * compressed file: whole clusters).
 */
static unsigned int inode_addrs(const struct zlfs_sb *sbi, const struct zf_inode *ri,
				unsigned int *first, unsigned int *dblks)
{
	struct zf_ishape sh;

	zf_inode_shape(ri, zlfs_feat(sbi), &sh);
	*first = sh.extra;
	if (dblks)
		*dblks = sh.dnode_addrs;
	return sh.addrs;
}

uint64_t zlfs_node_start_index(struct zlfs_sb *sbi, struct zinode *zi, unsigned int ofs)
{
	const uint64_t indirect = 2 * ZF_NIDS_PER_BLOCK + 4;
	uint64_t bidx;
	unsigned int first, dblks;

	if (ofs == 0)
		return 0;
	/* node offsets count the indirect nodes too: take them out */
	if (ofs <= 2)
		bidx = ofs - 1;
	else if (ofs <= indirect)
		bidx = ofs - 2 - (ofs - 4) / (ZF_NIDS_PER_BLOCK + 1);
	else
		bidx = ofs - 5 - (ofs - indirect - 3) / (ZF_NIDS_PER_BLOCK + 1);
	unsigned int direct = inode_addrs(sbi, zi_raw(zi), &first, &dblks);
	return bidx * dblks + direct;
}

uint32_t *zlfs_dnode_addrs(struct zlfs_sb *sbi, struct znode *dn, unsigned int *nr)
{
	if (zf_le32_to_cpu(dn->blk.footer.nid) == zf_le32_to_cpu(dn->blk.footer.ino) &&
	    zf_node_ofs(&dn->blk) == 0) {
		unsigned int first;
		*nr = inode_addrs(sbi, &dn->blk.i, &first, NULL);
		return &dn->blk.i.i_addr[first];
	}
	*nr = ZF_ADDRS_PER_BLOCK;
	return dn->blk.dn.addr;
}

uint64_t zlfs_max_file_blocks(void)
{
	return zf_max_file_bytes() / ZF_BLKSIZE;   /* the node tree's reach (check.c) */
}

/*
 * F2FS's get_node_path: for file block `block`, the slot index at each
 * level (offset[]) and the node offsets of the nodes on the way (noffset[]).
 * Returns the depth (0: in the inode), or -EFBIG.
 */
static int node_path(unsigned int direct_index, unsigned int dnode_addrs, uint64_t block,
		     unsigned int offset[4], unsigned int noffset[4])
{
	const uint64_t dblks = dnode_addrs, dptrs = ZF_NIDS_PER_BLOCK;
	const uint64_t iblks = dblks * dptrs, diblks = iblks * dptrs;

	noffset[0] = 0;
	if (block < direct_index) {
		offset[0] = (unsigned int)block;
		return 0;
	}
	block -= direct_index;
	if (block < dblks) {
		offset[0] = ZF_NODE_DIR1;
		noffset[1] = 1;
		offset[1] = (unsigned int)block;
		return 1;
	}
	block -= dblks;
	if (block < dblks) {
		offset[0] = ZF_NODE_DIR2;
		noffset[1] = 2;
		offset[1] = (unsigned int)block;
		return 1;
	}
	block -= dblks;
	if (block < iblks) {
		offset[0] = ZF_NODE_IND1;
		noffset[1] = 3;
		offset[1] = (unsigned int)(block / dblks);
		noffset[2] = 4 + offset[1];
		offset[2] = (unsigned int)(block % dblks);
		return 2;
	}
	block -= iblks;
	if (block < iblks) {
		offset[0] = ZF_NODE_IND2;
		noffset[1] = 4 + (unsigned int)dptrs;
		offset[1] = (unsigned int)(block / dblks);
		noffset[2] = 5 + (unsigned int)dptrs + offset[1];
		offset[2] = (unsigned int)(block % dblks);
		return 2;
	}
	block -= iblks;
	if (block < diblks) {
		offset[0] = ZF_NODE_DIND;
		noffset[1] = 5 + (unsigned int)(dptrs * 2);
		offset[1] = (unsigned int)(block / iblks);
		noffset[2] = 6 + (unsigned int)(dptrs * 2) + offset[1] * (unsigned int)(dptrs + 1);
		offset[2] = (unsigned int)((block / dblks) % dptrs);
		noffset[3] = 7 + (unsigned int)(dptrs * 2) + offset[1] * (unsigned int)(dptrs + 1) +
			     offset[2];
		offset[3] = (unsigned int)(block % dblks);
		return 3;
	}
	return -EFBIG;
}

/* Set the cold mark (WARM_NODE) on nodes of non-directories, as F2FS does. */
static void set_node_cold(struct znode *n, bool cold)
{
	uint32_t f = zf_le32_to_cpu(n->blk.footer.flag);
	f = cold ? f | (1u << ZF_NODE_COLD_BIT) : f & ~(1u << ZF_NODE_COLD_BIT);
	n->blk.footer.flag = zf_cpu_to_le32(f);
}

int zlfs_get_dnode(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, bool alloc,
		   struct znode **dn, unsigned int *ofs)
{
	unsigned int offset[4], noffset[4], first, dblks;
	struct zf_inode *ri = zi_raw(zi);
	unsigned int direct = inode_addrs(sbi, ri, &first, &dblks);
	int depth = node_path(direct, dblks, index, offset, noffset), ret;
	struct znode *parent = zi->node, *child;
	bool is_dir = S_ISDIR(zf_le16_to_cpu(ri->i_mode));

	if (depth < 0)
		return depth;
	if (depth == 0) {
		*dn = parent;
		*ofs = offset[0];
		return 0;
	}
	for (int level = 1; level <= depth; level++) {
		zf_le32 *slot = level == 1 ? &parent->blk.i.i_nid[offset[0]]
					   : &parent->blk.in.nid[offset[level - 1]];
		uint32_t nid = zf_le32_to_cpu(*slot);
		if (!nid) {
			if (!alloc)
				return -ENOENT;
			if ((ret = zlfs_nid_alloc(sbi, &nid)))
				return ret;
			if ((ret = zlfs_node_new(sbi, nid, zi->ino, noffset[level], &child))) {
				zlfs_nat_mut(sbi, nid)->blkaddr = ZF_NULL_ADDR;
				return ret;
			}
			set_node_cold(child, !is_dir);
			*slot = zf_cpu_to_le32(nid);
			zlfs_node_dirty(sbi, parent);
			/* i_blocks counts node blocks too */
			ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) + 1);
			zlfs_node_dirty(sbi, zi->node);
		} else if ((ret = zlfs_node_get(sbi, nid, zi->ino, level == depth ?
						ZF_NODE_KIND_DNODE : ZF_NODE_KIND_INDIRECT, &child))) {
			return ret;
		} else if (zf_node_ofs(&child->blk) != noffset[level]) {
			return zlfs_corrupt(sbi, "node %u of inode %u is at tree offset %u, not %u",
					    nid, zi->ino, zf_node_ofs(&child->blk), noffset[level]);
		}
		parent = child;
	}
	*dn = parent;
	*ofs = offset[depth];
	return 0;
}

/* ---- truncation ------------------------------------------------------------------- */

/*
 * Free one data slot.  saved: it is a compressed cluster's marker or
 * unused slot, counted in i_compr_blocks (which loses it).
 */
static void free_data_slot(struct zlfs_sb *sbi, struct zinode *zi, zf_le32 *slot, bool saved)
{
	uint32_t a = zf_le32_to_cpu(*slot);
	struct zf_inode *ri = zi_raw(zi);

	if (a == ZF_NULL_ADDR)
		return;
	if (a == ZF_COMPRESS_ADDR && (ri->i_inline & ZF_COMPRESS_RELEASED)) {
		*slot = 0;      /* a released cluster's marker: counted nowhere (F2FS's rule) */
		return;
	}
	if (saved && zlfs_addr_reserved(a) && zf_le64_to_cpu(ri->i_compr_blocks))
		ri->i_compr_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_compr_blocks) - 1);
	if (!zlfs_addr_reserved(a))
		zlfs_invalidate_block(sbi, a);
	else if (S_ISREG(zf_le16_to_cpu(ri->i_mode)))
		zlfs_reserved_drop(sbi, 1);      /* a directory's NEW_ADDR is the block cache's */
	*slot = 0;
	zlfs_ext_drop(zi);
	ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) - 1);
}

/*
 * Walking a compressed file's slots in order (clusters start at slot
 * multiples of 2^clog in the inode and in every direct node): is slot i
 * in a compressed cluster?  *in carries the answer from the cluster's
 * first slot, which decides it.
 */
static bool in_compressed(const zf_le32 *addrs, unsigned int i, unsigned int clog, bool *in)
{
	if (!clog)
		return false;
	if (!(i & ((1u << clog) - 1)))
		*in = zf_le32_to_cpu(addrs[i]) == ZF_COMPRESS_ADDR;
	return *in;
}

/* The cluster log truncation counts i_compr_blocks by: 0 when it is not counted. */
static unsigned int trunc_clog(struct zlfs_sb *sbi, struct zinode *zi)
{
	const struct zf_inode *ri = zi_raw(zi);

	return (ri->i_inline & ZF_COMPRESS_RELEASED) ? 0 : zf_cluster_log(ri, zlfs_feat(sbi));
}

/*
 * Free what node `nid` (at tree depth `depth`: 0 = direct node) maps from
 * file block `from` on; `base` is the node's first file block.  Frees the
 * node itself when nothing below it stays.  *gone says whether it did.
 */
static int trunc_node(struct zlfs_sb *sbi, struct zinode *zi, uint32_t nid, int depth,
		      unsigned int dblks, uint64_t base, uint64_t from, bool *gone)
{
	struct znode *n;
	uint64_t span = dblks;
	bool all = from <= base, keep = false;
	int ret;

	*gone = false;
	if ((ret = zlfs_node_get(sbi, nid, zi->ino, depth ? ZF_NODE_KIND_INDIRECT : ZF_NODE_KIND_DNODE,
				 &n)))
		return ret;
	n->pins++;
	for (int d = 0; d < depth; d++)
		span *= ZF_NIDS_PER_BLOCK;
	if (depth == 0) {
		/* past dblks a compressed file's slots are unused: freed with the node */
		unsigned int clog = trunc_clog(sbi, zi);
		bool in = false;
		for (unsigned int i = 0; i < ZF_ADDRS_PER_BLOCK; i++) {
			bool saved = i < dblks && in_compressed(n->blk.dn.addr, i, clog, &in);
			if ((i >= dblks || base + i >= from) && n->blk.dn.addr[i]) {
				free_data_slot(sbi, zi, &n->blk.dn.addr[i], saved);
				zlfs_node_dirty(sbi, n);
			}
			keep |= n->blk.dn.addr[i] != 0;
		}
	} else {
		uint64_t child_span = span / ZF_NIDS_PER_BLOCK;
		for (unsigned int i = 0; i < ZF_NIDS_PER_BLOCK; i++) {
			uint32_t c = zf_le32_to_cpu(n->blk.in.nid[i]);
			uint64_t cbase = base + i * child_span;
			if (c && cbase + child_span > from) {
				bool cgone;
				if ((ret = trunc_node(sbi, zi, c, depth - 1, dblks, cbase, from, &cgone))) {
					n->pins--;
					return ret;
				}
				if (cgone) {
					n->blk.in.nid[i] = 0;
					zlfs_node_dirty(sbi, n);
				}
			}
			keep |= n->blk.in.nid[i] != 0;
		}
	}
	n->pins--;
	if (all || !keep) {
		struct zf_inode *ri = zi_raw(zi);
		zlfs_node_remove(sbi, nid);
		ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) - 1);
		*gone = true;
	}
	return 0;
}

int zlfs_truncate_blocks(struct zlfs_sb *sbi, struct zinode *zi, uint64_t from)
{
	struct zf_inode *ri = zi_raw(zi);
	unsigned int first, dblks, direct = inode_addrs(sbi, ri, &first, &dblks);
	uint64_t base = direct;
	static const int depth[ZF_NIDS_PER_INODE] = { 0, 0, 1, 1, 2 };
	int ret;

	if (!(ri->i_inline & ZF_INLINE_DATA) && !(ri->i_inline & ZF_INLINE_DENTRY)) {
		unsigned int clog = trunc_clog(sbi, zi);
		bool in = false;
		for (unsigned int i = 0; i < direct; i++) {
			bool saved = in_compressed(&ri->i_addr[first], i, clog, &in);
			if (i >= from && ri->i_addr[first + i])
				free_data_slot(sbi, zi, &ri->i_addr[first + i], saved);
		}
	}
	for (int k = 0; k < ZF_NIDS_PER_INODE; k++) {
		uint64_t span = dblks;
		for (int d = 0; d < depth[k]; d++)
			span *= ZF_NIDS_PER_BLOCK;
		uint32_t nid = zf_le32_to_cpu(ri->i_nid[k]);
		if (nid && base + span > from) {
			bool gone;
			if ((ret = trunc_node(sbi, zi, nid, depth[k], dblks, base, from, &gone)))
				return ret;
			if (gone)
				ri->i_nid[k] = 0;
		}
		base += span;
	}
	zlfs_node_dirty(sbi, zi->node);
	return 0;
}

/* ---- the checkpoint version node footers carry (roll-forward's match) ---- */

static uint32_t cp_crc(const struct zlfs_sb *sbi)
{
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)sbi->cp_blk;
	uint32_t off = zf_le32_to_cpu(cp->checksum_offset), crc;

	if (off > ZF_BLKSIZE - sizeof(crc))
		return 0;     /* read_pack checked it for loaded ones */
	memcpy(&crc, sbi->cp_blk + off, sizeof(crc));
	return zf_le32_to_cpu(crc);
}

uint64_t zlfs_cp_node_ver(const struct zlfs_sb *sbi)
{
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)sbi->cp_blk;
	uint64_t v = zf_le64_to_cpu(cp->checkpoint_ver);

	if (zf_le32_to_cpu(cp->ckpt_flags) & ZF_CP_CRC_RECOVERY_FLAG)
		v |= (uint64_t)cp_crc(sbi) << 32;
	return v;
}

bool zlfs_cp_node_ver_ok(const struct zlfs_sb *sbi, uint64_t footer_ver)
{
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)sbi->cp_blk;

	/* fsck.f2fs may set NOCRC: then only the version part counts (kernel's rule) */
	if (zf_le32_to_cpu(cp->ckpt_flags) & ZF_CP_NOCRC_RECOVERY_FLAG)
		return (uint32_t)footer_ver == (uint32_t)zf_le64_to_cpu(cp->checkpoint_ver);
	return footer_ver == zlfs_cp_node_ver(sbi);
}
