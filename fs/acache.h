/*
 * acache.h - what acache.c offers the other files: attributes of inodes whose block is not cached.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_ACACHE_H
#define ZLFS_FS_ACACHE_H

#include "zlfs.h"

int zlfs_acache_init(struct zlfs_sb *sbi, uint32_t cap);
void zlfs_acache_destroy(struct zlfs_sb *sbi);
/* Memory one entry takes (for the cache_mb split). */
uint32_t zlfs_acache_entry_bytes(void);
/* The inode block of a->ino leaves the node cache clean: keep its attributes. */
void zlfs_acache_put(struct zlfs_sb *sbi, const struct zattr *a);
bool zlfs_acache_get(struct zlfs_sb *sbi, uint32_t ino, struct zattr *out);
/* The node ino comes into the node cache (or the nid is freed): the node is the truth. */
void zlfs_acache_del(struct zlfs_sb *sbi, uint32_t ino);
uint32_t zlfs_acache_count(const struct zlfs_sb *sbi);
/* What stat and a lookup need, from an inode block (acache.c keeps such records). */
void zlfs_attr_from_inode(uint32_t ino, const struct zf_inode *ri, uint32_t feat, struct zattr *a);
void zlfs_attr_stat(const struct zattr *a, struct stat *st);

#endif
