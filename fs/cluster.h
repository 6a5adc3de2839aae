/*
 * cluster.h - what cluster.c offers: compressed files (F2FS's
 * compression), their clusters read, written and truncated, and the
 * policy that makes a file compressed.  The layer list and the lock order
 * are in zlfs.h.
 */
#ifndef ZLFS_FS_CLUSTER_H
#define ZLFS_FS_CLUSTER_H
#include "zlfs.h"

/* log2 of zi's blocks per cluster when it is a compressed file, else 0. */
unsigned int zlfs_cluster_log(struct zlfs_sb *sbi, struct zinode *zi);

/*
 * Read [off, off + len) of a compressed file (len within i_size) into buf:
 * compressed clusters are read whole and decompressed.  Shared or
 * exclusive lock.  A damaged cluster is -EUCLEAN (zlfs_corrupt).
 */
int zlfs_cluster_read(struct zlfs_sb *sbi, struct zinode *zi, char *buf, size_t len, uint64_t off);

/*
 * Write buf to [off, off + len) of a compressed file and grow i_size to
 * cover it.  Each cluster touched is written whole when it lies below EOF
 * (compressed if that saves a block; a partial write reads, merges and
 * recompresses it), as the kernel writes back a cluster; a cluster across
 * EOF is written raw.  Exclusive lock, held through the I/O.
 */
int zlfs_cluster_write(struct zlfs_sb *sbi, struct zinode *zi, const char *buf, size_t len,
		       uint64_t off);

/*
 * Before a compressed file shrinks to size: the cluster the new EOF falls
 * in is cut there (a compressed one decompressed, zeroed past EOF and
 * stored again, compressed only if still whole; a raw one's last block
 * has its tail zeroed), so file.c may then free every slot from the new
 * EOF's block on: no compressed cluster is cut.
 */
int zlfs_cluster_truncate(struct zlfs_sb *sbi, struct zinode *zi, uint64_t size);

/*
 * A new inode in dir, named name (not NUL-terminated, len bytes): made
 * compressed or not as the kernel's set_compress_new_inode decides (the
 * mount's nocompress_extension, then compress_extension, then the
 * directory's COMPR_FL / NOCOMP_FL).  Call before anything is written.
 */
void zlfs_cluster_new_inode(struct zlfs_sb *sbi, struct zinode *dir, struct zinode *zi,
			    const char *name, size_t len);

/*
 * chattr +c / -c (on true / false), with F2FS's rules: the feature is
 * needed (-EOPNOTSUPP); a regular file must have no data (-EINVAL); a
 * directory only passes the flag on.  Sets or clears COMPR_FL and the
 * inode's compression fields; the caller stamps ctime and dirties it.
 */
int zlfs_cluster_set(struct zlfs_sb *sbi, struct zinode *zi, bool on);

/*
 * F2FS_IOC_RELEASE_COMPRESS_BLOCKS (reserve false): the file is marked
 * released, its compressed clusters' unused slots emptied and given back
 * to the user's share (*blocks of them); it is read-only until emptied or
 * reserved again.  F2FS_IOC_RESERVE_COMPRESS_BLOCKS (true): the reverse,
 * -ENOSPC when the share cannot take them all.  -EINVAL for a file not
 * compressed, or not in the state the call needs.  The caller has the
 * kernel's dirty pages of the file written first (F2FS writes them back).
 */
int zlfs_cluster_release(struct zlfs_sb *sbi, struct zinode *zi, bool reserve, uint64_t *blocks);

/*
 * F2FS_IOC_COMPRESS_FILE (compress true) / DECOMPRESS_FILE: every whole
 * cluster below EOF stored again, compressed (where it saves a block) or
 * raw.  Only under compress_mode=user (-EOPNOTSUPP otherwise), as F2FS.
 */
int zlfs_cluster_rewrite(struct zlfs_sb *sbi, struct zinode *zi, bool compress);

/* F2FS_IOC_SET_COMPRESS_OPTION on an empty compressed file (-EFBIG with data). */
int zlfs_cluster_set_option(struct zlfs_sb *sbi, struct zinode *zi, unsigned int alg,
			    unsigned int log);

/* F2FS_IOC_GET_COMPRESS_BLOCKS: i_compr_blocks of a compressed file. */
int zlfs_cluster_saved(struct zlfs_sb *sbi, struct zinode *zi, uint64_t *blocks);

/*
 * Check the mount's compression options against the volume (compress_*
 * need the compression feature: ignored with a note otherwise, as the
 * kernel does) and take them.  -EINVAL with err set for a bad one.
 */
int zlfs_cluster_opts(struct zlfs_sb *sbi, const struct zlfs_compr_opts *o, char *err,
		      size_t errlen);
#endif
