/*
 * fsutil.h - helpers shared by the unit tests of filesystem modules (the
 * ones linked with the filesystem library): a fresh volume made by
 * mkfs.zlfs ($ZLFS_MKFS) and fsck.f2fs as the outside judge.
 */
#ifndef ZLFS_FSUTIL_H
#define ZLFS_FSUTIL_H

#include <stdbool.h>
#include <stdint.h>

struct zlfs_sb;

/*
 * mkfs.zlfs options the volumes below are made with (NULL: none, the
 * default features).  Tests that craft damage at raw inode offsets set
 * TU_PLAIN_FEATURES: inodes without extra attributes or checksums, as
 * volumes made before those were the default.
 */
extern const char *tu_mkfs_opts;
#define TU_PLAIN_FEATURES "-O ^extra_attr,^inode_checksum,^inode_crtime"
/*
 * tu_fs_mount with noinline_data, noinline_dentry and noinline_xattr:
 * new inodes keep nothing inside the inode block (tests of the node
 * and block paths that inline files would bypass).
 */
extern bool tu_noinline;

/*
 * A 512 MiB emulated zoned image (16 MiB zones, 4 conventional), made by
 * mkfs.zlfs: tu_path(name), freed by the caller.
 */
char *tu_fs_volume(const char *name);
/* The same size with every zone conventional: a disk without zones. */
char *tu_fs_volume_flat(const char *name);
/* fsck.f2fs --dry-run on img must find nothing. */
void tu_fsck_clean(const char *img);
/*
 * Mount img in-process, GC off, no timed checkpoints (cache_mb 0: the
 * default), with the filesystem lock taken as an operation would.
 */
struct zlfs_sb *tu_fs_mount(const char *img, uint32_t cache_mb);
/* Drop the lock and unmount, which must succeed. */
void tu_fs_unmount(struct zlfs_sb *sbi);
/* The inode number of name in directory dir, which must exist. */
uint32_t tu_lookup(struct zlfs_sb *sbi, uint32_t dir, const char *name);

/* Read or write 4 KiB block blk of a flat image. */
void tu_blk_read(const char *img, uint64_t blk, void *buf);
void tu_blk_write(const char *img, uint64_t blk, const void *buf);

/*
 * A small tree on img, checkpointed and unmounted: directory /d with 300
 * files (dentry blocks, not inline), /f with 64 KiB, /big with 6 MiB
 * (direct nodes), the symlink /l -> target, /i with 4 bytes inline, the
 * device nodes /c and /b (device numbers in i_addr, old and new encoding).
 */
struct tu_tree {
	uint32_t dir, file, big, link, inl;
};
void tu_make_tree(const char *img, struct tu_tree *t);
/* Where node nid lives on img after a clean unmount. */
uint32_t tu_node_addr(const char *img, uint32_t nid);

#endif
