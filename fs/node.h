/*
 * node.h - what node.c offers the other files.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_NODE_H
#define ZLFS_FS_NODE_H

#include "zlfs.h"

/*
 * The cp_ver node footers carry under the last checkpoint: its version,
 * with its crc in the high word when it has CP_CRC_RECOVERY (zlfs's always
 * do), as the kernel's fill_node_footer_blkaddr; roll-forward accepts
 * only blocks whose footer matches (zlfs_cp_node_ver_ok).
 */
uint64_t zlfs_cp_node_ver(const struct zlfs_sb *sbi);
bool zlfs_cp_node_ver_ok(const struct zlfs_sb *sbi, uint64_t footer_ver);
/* GC: node nid (whose live block was read into blk) must be rewritten: cache it, dirty. */
int zlfs_node_gc_dirty(struct zlfs_sb *sbi, uint32_t nid, const void *blk);

/*
 * The NAT at mount: with the checkpoint's nat_bits (bits, nat_bits_blocks
 * blocks, checked) no NAT block is read until asked for; without (NULL) the
 * whole NAT is read and the bits made.  Then the CP's NAT journal is laid
 * over the blocks it names.
 */
int zlfs_node_build_from(struct zlfs_sb *sbi, const struct zf_journal *nat_j, const uint8_t *bits);
void zlfs_node_destroy(struct zlfs_sb *sbi);
/* Write every dirty NAT block to its other copy (at a checkpoint). */
int zlfs_nat_flush(struct zlfs_sb *sbi);
/*
 * Get node nid into the cache (reading it if needed), checked to be of the
 * kind asked for and, unless ino is 0, of inode ino (zf_check_node_footer):
 * anything else is an inconsistency (zlfs_corrupt).
 */
int zlfs_node_get(struct zlfs_sb *sbi, uint32_t nid, uint32_t ino, enum zf_node_kind kind,
		  struct znode **out);
/* A fresh zeroed node for nid (of inode ino, at offset ofs in its tree). */
int zlfs_node_new(struct zlfs_sb *sbi, uint32_t nid, uint32_t ino, unsigned int ofs,
		  struct znode **out);
void zlfs_node_dirty(struct zlfs_sb *sbi, struct znode *n);
/* Drop node nid: its block becomes invalid, its nid free. */
void zlfs_node_remove(struct zlfs_sb *sbi, uint32_t nid);
int zlfs_nid_alloc(struct zlfs_sb *sbi, uint32_t *nid);
/*
 * nid's NAT block in memory (read if it is not yet): 0, -EUCLEAN (the block
 * is damaged: read-only now), or another negative errno from the read.
 * zlfs_nat does this itself; callers that can fail call it first.
 */
int zlfs_nat_load(struct zlfs_sb *sbi, uint32_t nid);
/*
 * Drop NAT blocks that would read back the same until at most max are held
 * (or none more can go).  Exclusive holders, with no NAT entry pointer held.
 */
void zlfs_nat_shrink(struct zlfs_sb *sbi, uint32_t max);
/* Room for nid's NAT block in memory (read, and held even if all zero): 0 or an errno. */
int zlfs_nat_hold(struct zlfs_sb *sbi, uint32_t nid);
/*
 * nid's NAT entry, to change: its block has room (zlfs_nat_hold, or the
 * entry is in use).  A block without room here is a bug, not a state of the
 * volume: it aborts rather than write into the shared zero entry.
 */
struct znat *zlfs_nat_mut(struct zlfs_sb *sbi, uint32_t nid);
/* Write every dirty node to the node logs (before a checkpoint). */
int zlfs_node_flush(struct zlfs_sb *sbi);
/*
 * fsync's node part: write inode ino's dirty dnodes (inode, direct and
 * xattr nodes) to the warm node log with the FSYNC mark, the inode with
 * the DENT mark too when its name is not in a checkpoint yet, then flush
 * the device (first too, when data_first: data and nodes may not share a
 * write pointer that proves the data landed).  Indirect nodes stay dirty:
 * roll-forward rebuilds the path to each dnode.
 */
int zlfs_node_fsync(struct zlfs_sb *sbi, uint32_t ino, bool data_first);
/* A change roll-forward cannot replay (links, names, shrinking): fsync of ino checkpoints. */
void zlfs_node_need_cp(struct zlfs_sb *sbi, uint32_t ino);
bool zlfs_nid_checkpointed(const struct zlfs_sb *sbi, uint32_t nid);
/* After a checkpoint committed: the NAT flags describe it. */
void zlfs_node_after_cp(struct zlfs_sb *sbi);
/* Is node offset ofs (F2FS's tree numbering) a dnode: inode, direct or xattr node? */
bool zlfs_node_ofs_is_dnode(unsigned int ofs);
/* First file block a dnode at tree offset ofs maps (F2FS's start_bidx_of_node). */
uint64_t zlfs_node_start_index(struct zlfs_sb *sbi, struct zinode *zi, unsigned int ofs);
/*
 * Drop clean, unpinned nodes, least recently used first, until at most max
 * are cached; inode blocks leave their attributes in the attribute cache.
 */
void zlfs_node_shrink(struct zlfs_sb *sbi, uint32_t max);
/* The cached node nid or NULL, nothing read (readers: under cache_lock). */
struct znode *zlfs_node_cached(struct zlfs_sb *sbi, uint32_t nid);
/*
 * Block mapping.  Find the slot holding file block `index` of inode zi:
 * *dn is the node (inode or direct node) and *ofs the slot in it.  With
 * alloc, missing nodes are created; without, -ENOENT for a hole.
 */
int zlfs_get_dnode(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, bool alloc,
		   struct znode **dn, unsigned int *ofs);
uint32_t *zlfs_dnode_addrs(struct zlfs_sb *sbi, struct znode *dn, unsigned int *nr);
/* Free every block and node of zi from file block `from` on. */
int zlfs_truncate_blocks(struct zlfs_sb *sbi, struct zinode *zi, uint64_t from);
uint64_t zlfs_max_file_blocks(void);

#endif
