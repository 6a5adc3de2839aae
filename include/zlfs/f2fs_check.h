/*
 * f2fs_check.h - the sanity checks of on-disk structures, shared by the
 * mount, fsck.zlfs and the tests (libzlfsfmt, fs/f2fs/check.c).
 *
 * Each check looks at bytes read from the device and nothing else: it
 * trusts no field before it has been bounded, never reads outside the
 * structure it was given, and answers 0 or -EUCLEAN with a sentence in
 * `why` naming the structure and the field ("superblock: segment_count_main
 * 40 is not section_count 21 x segs_per_sec 2").  The rules are the Linux
 * kernel's (sanity_check_raw_super, sanity_check_area_boundary,
 * f2fs_sanity_check_ckpt, sanity_check_inode, sanity_check_node_footer)
 * plus the bounds zlfs itself relies on; an image the kernel's F2FS
 * refuses, zlfs refuses too.
 */
#ifndef ZLFS_F2FS_CHECK_H
#define ZLFS_F2FS_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "zlfs/f2fs_format.h"

/*
 * A superblock copy: magic, checksum, sizes, every area's start and length
 * in order and inside block_count, block_count inside the device
 * (dev_blocks, 4 KiB blocks; 0: not known), segment and section counts,
 * extension counts, reserved inode numbers, the device list.  Feature bits
 * are the caller's (what zlfs supports is not a matter of damage).
 */
int zf_check_super(const struct zf_super *sb, uint64_t dev_blocks, char *why, size_t len);

/*
 * A checkpoint pack's head block (cp, and its cp_payload blocks after it:
 * ZF_BLKSIZE * (1 + cp_payload) bytes) against the checked superblock:
 * the crc, counts, the current segments, bitmap sizes and where they sit,
 * the pack's summary range and total.
 */
int zf_check_cp(const struct zf_super *sb, const void *cp, char *why, size_t len);

/* Nids the NAT of a checked superblock can map. */
uint32_t zf_super_max_nid(const struct zf_super *sb);

/* What a node block read for a purpose must be (its footer's nid and kind). */
enum zf_node_kind {
	ZF_NODE_KIND_ANY,
	ZF_NODE_KIND_INODE,        /* footer nid == ino, offset 0 */
	ZF_NODE_KIND_DNODE,        /* a direct node of a file: not an inode */
	ZF_NODE_KIND_INDIRECT,     /* an indirect or double indirect node */
	ZF_NODE_KIND_XATTR,        /* an xattr node */
};
/* Footer of node block n read for nid (and, unless 0, for inode ino). */
int zf_check_node_footer(const struct zf_node *n, uint32_t nid, uint32_t ino,
			 enum zf_node_kind kind, char *why, size_t len);

/*
 * An inode block (its footer already checked): i_blocks, mode, the inline
 * flags against the file type and size, i_xattr_nid and i_nid[] inside
 * [root_ino, max_nid), extra attributes (a feature zlfs does not have),
 * name length, directory depth, sizes.
 */
int zf_check_inode(const struct zf_node *n, uint32_t max_nid, uint32_t feat, char *why,
		   size_t len);

/*
 * An inode's xattr area (header, then entries to a zero word; the inline
 * part followed by the xattr node's, cap bytes in all): every entry lies
 * wholly inside it.  The kernel's "xattr entry exceeds boundary".
 */
int zf_check_xattrs(const uint8_t *buf, unsigned int cap, char *why, size_t len);

/* Largest file size in bytes F2FS's node tree maps (zlfs's inode layout). */
uint64_t zf_max_file_bytes(void);

#endif
