/*
 * dir.h - what dir.c offers the other files.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_DIR_H
#define ZLFS_FS_DIR_H

#include "zlfs.h"

int zlfs_dir_lookup(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		    uint32_t *ino, uint8_t *ftype);
int zlfs_dir_add(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		 uint32_t ino, uint8_t ftype);
int zlfs_dir_remove(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len);
/* Point an existing entry at another inode (rename over a target). */
int zlfs_dir_set(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		 uint32_t ino, uint8_t ftype);
int zlfs_dir_init(struct zlfs_sb *sbi, struct zinode *dir, uint32_t parent);
/*
 * fsck.zlfs's repair: clear the entry at slot of dir's file block `block`
 * (UINT64_MAX: the inline area), whatever it holds.
 */
int zlfs_dir_drop_slot(struct zlfs_sb *sbi, struct zinode *dir, uint64_t block, unsigned int slot);
bool zlfs_dir_is_empty(struct zlfs_sb *sbi, struct zinode *dir);
/*
 * Entries from position pos (an opaque cookie, 0 = start): emit returns
 * non-zero to stop (the entry is then not consumed).
 */
int zlfs_dir_iterate(struct zlfs_sb *sbi, struct zinode *dir, uint64_t pos,
		     int (*emit)(void *ctx, const char *name, size_t len, uint32_t ino,
				 uint8_t ftype, uint64_t next_pos), void *ctx);

#endif
