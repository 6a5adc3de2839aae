/*
 * bcache.h - what bcache.c offers the other files: directory and symlink blocks by (inode, block), written back.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_BCACHE_H
#define ZLFS_FS_BCACHE_H

#include "zlfs.h"

/* Where a dirty block's slot is, and how it is written. */
struct zlfs_bslot {
	uint32_t nid;            /* the dnode holding the slot */
	uint16_t slot;           /* index into zlfs_dnode_addrs() */
	uint16_t ofs_in_node;    /* the SSA's ofs_in_node */
	uint8_t log;
	bool reserve;            /* a block the file did not have: count it as pending */
};
/* cap: entries kept (clean ones are evicted past it, dirty ones never). */
int zlfs_bcache_init(struct zlfs_sb *sbi, uint32_t cap);
/* Memory one entry takes (for the cache_mb split). */
uint32_t zlfs_bcache_entry_bytes(void);
void zlfs_bcache_destroy(struct zlfs_sb *sbi);
uint32_t zlfs_bcache_count(const struct zlfs_sb *sbi);
bool zlfs_bcache_get(struct zlfs_sb *sbi, uint32_t ino, uint64_t index, void *buf);
/* A block as read from the device (a dirty entry is newer and stays). */
void zlfs_bcache_put(struct zlfs_sb *sbi, uint32_t ino, uint64_t index, const void *buf);
/* New content of block index of ino, to be written by zlfs_bcache_writeback. */
int zlfs_bcache_dirty(struct zlfs_sb *sbi, uint32_t ino, uint64_t index, const void *buf,
		      const struct zlfs_bslot *s);
/* The inode is being freed: forget its blocks, dirty ones too. */
void zlfs_bcache_drop_ino(struct zlfs_sb *sbi, uint32_t ino);
/* Write every dirty block (sorted by inode and block), slots updated, nodes dirtied. */
int zlfs_bcache_writeback(struct zlfs_sb *sbi);

#endif
