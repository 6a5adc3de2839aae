/*
 * f2fs_format.h - the on-disk format of zlfs: F2FS's, byte for byte, for the
 * subset of features zlfs supports.  The one header the filesystem, mkfs,
 * fsck and the tests all read the disk through.
 *
 * What this header owns
 *   Every structure that is read from or written to the device, the
 *   constants that give their sizes, and the few pure helpers that only
 *   interpret bytes (bit orders, field packing).  Checksums, the dentry
 *   hash and the layout computation live in libzlfsfmt (fs/f2fs/), declared
 *   at the end of this file and in zlfs/f2fs_layout.h.
 *
 * Invariants
 *   - Every multi-byte field is little-endian on disk.  Fields are declared
 *     with the zf_le16/32/64 typedefs, which are plain integers: always go
 *     through zf_le*_to_cpu() / zf_cpu_to_le*() so that the code stays right
 *     on a big-endian host.
 *   - Structures are packed and their sizes (and the offsets fsck.f2fs and
 *     the kernel depend on) are pinned with _Static_assert below; a change
 *     that moves a byte fails to compile.
 *   - The block is 4 KiB and the segment 512 blocks (2 MiB).  F2FS allows
 *     16 KiB blocks; zlfs does not, so the block-sized structures here have
 *     fixed sizes.  Block-sized structures are exactly ZF_BLKSIZE long.
 *   - Two bitmap bit orders coexist on disk, and mixing them up is the
 *     classic bug: the SIT valid map and the checkpoint's SIT/NAT version
 *     bitmaps number bits from the most significant bit of each byte
 *     (zf_msb_*), while dentry bitmaps number them from the least
 *     significant bit (zf_le_bit_*).
 *
 * Features (superblock `feature`): which zlfs supports, which it refuses
 * and why, and which need extra_attr is one table, fs/f2fs/feature.c
 * (zf_check_features); readers refuse any bit it does not accept rather
 * than misread it.
 *
 * zlfs extension: the active-log mask.  mkfs.zlfs may choose fewer than six
 * logs when the device limits open zones.  The choice is stored in the
 * checkpoint's alloc_type[ZF_CP_LOGMASK_SLOT], a byte neither the kernel nor
 * f2fs-tools reads (they use alloc_type[0..5]); every checkpoint must carry
 * it forward.  0 there means "all six" (images from mkfs.f2fs).  WARM_NODE
 * and WARM_DATA are always active, and a block whose natural log is inactive
 * goes to the warm log of its kind (zf_log_effective) - WARM_NODE because
 * roll-forward recovery (kernel and fsck.f2fs alike) starts from it.
 */
#ifndef ZLFS_F2FS_FORMAT_H
#define ZLFS_F2FS_FORMAT_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- byte order ------------------------------------------------------------ */

typedef uint16_t zf_le16;
typedef uint32_t zf_le32;
typedef uint64_t zf_le64;

static inline uint16_t zf_le16_to_cpu(zf_le16 v) { return le16toh(v); }
static inline uint32_t zf_le32_to_cpu(zf_le32 v) { return le32toh(v); }
static inline uint64_t zf_le64_to_cpu(zf_le64 v) { return le64toh(v); }
static inline zf_le16 zf_cpu_to_le16(uint16_t v) { return htole16(v); }
static inline zf_le32 zf_cpu_to_le32(uint32_t v) { return htole32(v); }
static inline zf_le64 zf_cpu_to_le64(uint64_t v) { return htole64(v); }

#define ZF_PACKED __attribute__((packed))

/* ---- geometry ---------------------------------------------------------------- */

#define ZF_BLKSIZE_BITS     12
#define ZF_BLKSIZE          4096u
#define ZF_LOG_BLKS_PER_SEG 9
#define ZF_BLKS_PER_SEG     512u
#define ZF_SEG_BYTES        (ZF_BLKSIZE * ZF_BLKS_PER_SEG)   /* 2 MiB */

/* The superblock sits 1024 bytes into block 0, and again into block 1. */
#define ZF_SUPER_OFFSET     1024
#define ZF_SUPER_MAGIC      0xF2F52010u
/* The f2fs-tools release whose format zlfs follows (Debian 12 ships 1.15). */
#define ZF_MAJOR_VER        1
#define ZF_MINOR_VER        15
#define ZF_SB_CHKSUM_OFFSET 3068   /* crc is the superblock's last field */

#define ZF_CP_PACKS         2      /* checkpoint packs, one segment each */
/* 16 TiB in 2 MiB segments: block addresses are 32 bits wide. */
#define ZF_MAX_SEGMENTS     (16u * 1024 * 1024 / 2)
/* fsck.f2fs refuses a main area of fewer sections than F2FS's minimum of 9 segments. */
#define ZF_MIN_SECTIONS     9u

/* Block addresses with a meaning of their own (never real blocks). */
#define ZF_NULL_ADDR        0x0u
#define ZF_NEW_ADDR         0xffffffffu   /* reserved, not yet written */
#define ZF_COMPRESS_ADDR    0xfffffffeu   /* a compressed cluster's first slot */

/* Reserved inode numbers; the first free nid after mkfs is 4. */
#define ZF_NODE_INO         1u
#define ZF_META_INO         2u
#define ZF_ROOT_INO         3u
#define ZF_FIRST_FREE_NID   4u

/* Superblock feature bits. */
#define ZF_FEAT_ENCRYPT           0x0001u
#define ZF_FEAT_BLKZONED          0x0002u
#define ZF_FEAT_ATOMIC_WRITE      0x0004u
#define ZF_FEAT_EXTRA_ATTR        0x0008u
#define ZF_FEAT_PRJQUOTA          0x0010u
#define ZF_FEAT_INODE_CHKSUM      0x0020u
#define ZF_FEAT_FLEXIBLE_INLINE_XATTR 0x0040u
#define ZF_FEAT_QUOTA_INO         0x0080u
#define ZF_FEAT_INODE_CRTIME      0x0100u
#define ZF_FEAT_LOST_FOUND        0x0200u
#define ZF_FEAT_VERITY            0x0400u
#define ZF_FEAT_SB_CHKSUM         0x0800u
#define ZF_FEAT_CASEFOLD          0x1000u
#define ZF_FEAT_COMPRESSION       0x2000u
#define ZF_FEAT_RO                0x4000u

/* ---- logs (current segments) ------------------------------------------------ */

/*
 * The six logs, in the order the checkpoint and the SIT type field use.
 * Data logs come first; node logs start at ZF_LOG_HOT_NODE.
 */
enum zf_log {
	ZF_LOG_HOT_DATA = 0,   /* dentry blocks */
	ZF_LOG_WARM_DATA,      /* ordinary file data */
	ZF_LOG_COLD_DATA,      /* data moved by GC, cold files */
	ZF_LOG_HOT_NODE,       /* direct nodes (and inodes) of directories */
	ZF_LOG_WARM_NODE,      /* direct nodes of files; fsync chains start here */
	ZF_LOG_COLD_NODE,      /* indirect nodes */
	ZF_NR_LOGS,
};
#define ZF_NR_DATA_LOGS      3
#define ZF_NR_NODE_LOGS      3
/* The checkpoint has room for 8 node and 8 data logs; F2FS uses 3 + 3. */
#define ZF_CP_MAX_NODE_LOGS  8
#define ZF_CP_MAX_DATA_LOGS  8
#define ZF_CP_MAX_LOGS       16
#define ZF_CP_UNUSED_SEGNO   0xffffffffu   /* cur_*_segno[3..7] */

/* Allocation mode recorded per log: zoned devices only ever use LFS. */
#define ZF_ALLOC_LFS         0
#define ZF_ALLOC_SSR         1

/* See the file-top comment: zlfs's active-log mask in alloc_type[15]. */
#define ZF_CP_LOGMASK_SLOT   15
#define ZF_LOGMASK_ALL       0x3fu
#define ZF_LOGMASK_REQUIRED  ((1u << ZF_LOG_WARM_DATA) | (1u << ZF_LOG_WARM_NODE))

static inline bool zf_log_is_node(unsigned int log)
{
	return log >= ZF_LOG_HOT_NODE && log < ZF_NR_LOGS;
}

/* Where a block meant for log `log` goes when only the logs in `mask` are active. */
static inline unsigned int zf_log_effective(unsigned int mask, unsigned int log)
{
	if (!mask)
		mask = ZF_LOGMASK_ALL;
	if (mask & (1u << log))
		return log;
	return zf_log_is_node(log) ? ZF_LOG_WARM_NODE : ZF_LOG_WARM_DATA;
}

/* ---- superblock ------------------------------------------------------------- */

#define ZF_MAX_VOLUME_NAME   512     /* UTF-16 code units */
#define ZF_MAX_EXTENSION     64
#define ZF_EXTENSION_LEN     8
#define ZF_VERSION_LEN       256
#define ZF_MAX_DEVICES       8
#define ZF_DEVICE_PATH_LEN   64
#define ZF_MAX_QUOTAS        3
#define ZF_MAX_STOP_REASON   32
#define ZF_MAX_ERRORS        16

struct zf_sb_device {
	uint8_t path[ZF_DEVICE_PATH_LEN];
	zf_le32 total_segments;
} ZF_PACKED;

/*
 * The superblock.  Everything is in blocks or segments except the log2
 * fields.  Areas follow each other without gaps: segment0 == cp_blkaddr,
 * then SIT, NAT, SSA and main, each area's start being the previous start
 * plus its segment count; fsck.f2fs checks exactly that chain.
 */
struct zf_super {
	zf_le32 magic;
	zf_le16 major_ver;
	zf_le16 minor_ver;
	zf_le32 log_sectorsize;
	zf_le32 log_sectors_per_block;
	zf_le32 log_blocksize;
	zf_le32 log_blocks_per_seg;
	zf_le32 segs_per_sec;
	zf_le32 secs_per_zone;
	zf_le32 checksum_offset;        /* 0, or ZF_SB_CHKSUM_OFFSET with SB_CHKSUM */
	zf_le64 block_count;            /* whole device, in blocks */
	zf_le32 section_count;          /* main area sections */
	zf_le32 segment_count;          /* from segment0 to the end of main */
	zf_le32 segment_count_ckpt;
	zf_le32 segment_count_sit;      /* both copies */
	zf_le32 segment_count_nat;      /* both copies */
	zf_le32 segment_count_ssa;
	zf_le32 segment_count_main;
	zf_le32 segment0_blkaddr;
	zf_le32 cp_blkaddr;
	zf_le32 sit_blkaddr;
	zf_le32 nat_blkaddr;
	zf_le32 ssa_blkaddr;
	zf_le32 main_blkaddr;
	zf_le32 root_ino;
	zf_le32 node_ino;
	zf_le32 meta_ino;
	uint8_t uuid[16];
	zf_le16 volume_name[ZF_MAX_VOLUME_NAME];    /* UTF-16LE, NUL padded */
	zf_le32 extension_count;
	uint8_t extension_list[ZF_MAX_EXTENSION][ZF_EXTENSION_LEN];
	zf_le32 cp_payload;             /* extra CP blocks for a large SIT bitmap */
	uint8_t version[ZF_VERSION_LEN];        /* last writer */
	uint8_t init_version[ZF_VERSION_LEN];   /* the mkfs that made it */
	zf_le32 feature;
	uint8_t encryption_level;
	uint8_t encrypt_pw_salt[16];
	struct zf_sb_device devs[ZF_MAX_DEVICES];   /* multi-device only */
	zf_le32 qf_ino[ZF_MAX_QUOTAS];
	uint8_t hot_ext_count;
	zf_le16 s_encoding;
	zf_le16 s_encoding_flags;
	uint8_t s_stop_reason[ZF_MAX_STOP_REASON];
	uint8_t s_errors[ZF_MAX_ERRORS];
	uint8_t reserved[258];
	zf_le32 crc;                    /* over bytes [0, checksum_offset) */
} ZF_PACKED;

/* ---- checkpoint ---------------------------------------------------------- */

#define ZF_CP_UMOUNT_FLAG           0x00000001u   /* clean unmount: node summaries in the pack */
#define ZF_CP_ORPHAN_PRESENT_FLAG   0x00000002u
#define ZF_CP_COMPACT_SUM_FLAG      0x00000004u
#define ZF_CP_ERROR_FLAG            0x00000008u
#define ZF_CP_FSCK_FLAG             0x00000010u
#define ZF_CP_FASTBOOT_FLAG         0x00000020u
#define ZF_CP_CRC_RECOVERY_FLAG     0x00000040u   /* node cp_ver carries the CP crc */
#define ZF_CP_NAT_BITS_FLAG         0x00000080u
#define ZF_CP_TRIMMED_FLAG          0x00000100u
#define ZF_CP_NOCRC_RECOVERY_FLAG   0x00000200u
#define ZF_CP_LARGE_NAT_BITMAP_FLAG 0x00000400u
#define ZF_CP_QUOTA_NEED_FSCK_FLAG  0x00000800u
#define ZF_CP_DISABLED_FLAG         0x00001000u
#define ZF_CP_DISABLED_QUICK_FLAG   0x00002000u
#define ZF_CP_RESIZEFS_FLAG         0x00004000u

/*
 * The checkpoint block: a 192-byte header followed by the SIT and NAT
 * version bitmaps, with a CRC at checksum_offset (normally the block's last
 * four bytes).  Without cp_payload the SIT bitmap comes first and the NAT
 * bitmap right after it; with cp_payload > 0 the NAT bitmap is here and the
 * SIT bitmap fills the payload blocks that follow the head block.
 *
 * A pack is: head, cp_payload blocks, orphan blocks, data summaries (1-3
 * compact blocks, or 3 normal ones), node summaries (3, clean unmount
 * only), and the tail, an exact copy of the head.  cp_pack_start_sum
 * counts from the head.
 */
struct zf_checkpoint {
	zf_le64 checkpoint_ver;
	zf_le64 user_block_count;
	zf_le64 valid_block_count;
	zf_le32 rsvd_segment_count;
	zf_le32 overprov_segment_count;
	zf_le32 free_segment_count;
	zf_le32 cur_node_segno[ZF_CP_MAX_NODE_LOGS];
	zf_le16 cur_node_blkoff[ZF_CP_MAX_NODE_LOGS];
	zf_le32 cur_data_segno[ZF_CP_MAX_DATA_LOGS];
	zf_le16 cur_data_blkoff[ZF_CP_MAX_DATA_LOGS];
	zf_le32 ckpt_flags;
	zf_le32 cp_pack_total_block_count;
	zf_le32 cp_pack_start_sum;
	zf_le32 valid_node_count;
	zf_le32 valid_inode_count;
	zf_le32 next_free_nid;
	zf_le32 sit_ver_bitmap_bytesize;
	zf_le32 nat_ver_bitmap_bytesize;
	zf_le32 checksum_offset;
	zf_le64 elapsed_time;
	uint8_t alloc_type[ZF_CP_MAX_LOGS];   /* [0..5] per log; [15] zlfs log mask */
	uint8_t sit_nat_version_bitmap[];
} ZF_PACKED;

#define ZF_CP_CHKSUM_OFFSET         (ZF_BLKSIZE - 4)   /* 4092 */
#define ZF_CP_BITMAP_OFFSET         192
#define ZF_CP_MIN_NAT_BITMAP        64
/* Room for bitmaps in the head block: past it, cp_payload blocks are needed. */
#define ZF_CP_MAX_BITMAP_BYTES      (ZF_CP_CHKSUM_OFFSET - ZF_CP_BITMAP_OFFSET)
#define ZF_CP_MAX_SIT_BITMAP_BYTES  (ZF_CP_MAX_BITMAP_BYTES - ZF_CP_MIN_NAT_BITMAP)

/* Orphan block: unlinked-but-open inodes, stored inside the CP pack. */
#define ZF_ORPHANS_PER_BLOCK 1020

struct zf_orphan_block {
	zf_le32 ino[ZF_ORPHANS_PER_BLOCK];
	zf_le32 reserved;
	zf_le16 blk_addr;       /* index of this block among the orphan blocks */
	zf_le16 blk_count;      /* orphan blocks in this pack */
	zf_le32 entry_count;    /* orphan inodes in this pack */
	zf_le32 check_sum;
} ZF_PACKED;

/* ---- SIT ---------------------------------------------------------------------- */

#define ZF_SIT_VBLOCK_MAP_SIZE 64          /* 512 bits, one per block of the segment */
#define ZF_SIT_ENTRY_PER_BLOCK 55
#define ZF_SIT_VBLOCKS_SHIFT   10
#define ZF_SIT_VBLOCKS_MASK    ((1u << ZF_SIT_VBLOCKS_SHIFT) - 1)

/*
 * One segment's validity.  vblocks packs the valid count (bits 0-9) and the
 * log type (bits 10-15).  valid_map is MSB-first (zf_msb_*).  mtime is the
 * segment's age for cost-benefit GC.
 */
struct zf_sit_entry {
	zf_le16 vblocks;
	uint8_t valid_map[ZF_SIT_VBLOCK_MAP_SIZE];
	zf_le64 mtime;
} ZF_PACKED;

struct zf_sit_block {
	struct zf_sit_entry entries[ZF_SIT_ENTRY_PER_BLOCK];
	uint8_t pad[ZF_BLKSIZE - ZF_SIT_ENTRY_PER_BLOCK * sizeof(struct zf_sit_entry)];
} ZF_PACKED;

static inline unsigned int zf_sit_vblocks(const struct zf_sit_entry *e)
{
	return zf_le16_to_cpu(e->vblocks) & ZF_SIT_VBLOCKS_MASK;
}

static inline unsigned int zf_sit_type(const struct zf_sit_entry *e)
{
	return zf_le16_to_cpu(e->vblocks) >> ZF_SIT_VBLOCKS_SHIFT;
}

static inline void zf_sit_set(struct zf_sit_entry *e, unsigned int type, unsigned int vblocks)
{
	e->vblocks = zf_cpu_to_le16((uint16_t)((type << ZF_SIT_VBLOCKS_SHIFT) |
					       (vblocks & ZF_SIT_VBLOCKS_MASK)));
}

/* ---- NAT ---------------------------------------------------------------------- */

#define ZF_NAT_ENTRY_PER_BLOCK 455

/* nid -> {inode it belongs to, block address, version (bumped on free)}. */
struct zf_nat_entry {
	uint8_t version;
	zf_le32 ino;
	zf_le32 block_addr;
} ZF_PACKED;

struct zf_nat_block {
	struct zf_nat_entry entries[ZF_NAT_ENTRY_PER_BLOCK];
	uint8_t pad[ZF_BLKSIZE - ZF_NAT_ENTRY_PER_BLOCK * sizeof(struct zf_nat_entry)];
} ZF_PACKED;

/* ---- summaries (SSA blocks and the CP's summary blocks) ------------------------ */

#define ZF_ENTRIES_IN_SUM      512
#define ZF_SUMMARY_SIZE        7
#define ZF_SUM_FOOTER_SIZE     5
#define ZF_SUM_ENTRIES_SIZE    (ZF_SUMMARY_SIZE * ZF_ENTRIES_IN_SUM)                    /* 3584 */
#define ZF_SUM_JOURNAL_SIZE    (ZF_BLKSIZE - ZF_SUM_FOOTER_SIZE - ZF_SUM_ENTRIES_SIZE)  /* 507 */
#define ZF_NAT_JOURNAL_ENTRIES ((ZF_SUM_JOURNAL_SIZE - 2) / 13)    /* 38 */
#define ZF_NAT_JOURNAL_RESERVED ((ZF_SUM_JOURNAL_SIZE - 2) % 13)   /* 11 */
#define ZF_SIT_JOURNAL_ENTRIES ((ZF_SUM_JOURNAL_SIZE - 2) / 78)    /* 6 */
#define ZF_SIT_JOURNAL_RESERVED ((ZF_SUM_JOURNAL_SIZE - 2) % 78)   /* 37 */
#define ZF_EXTRA_INFO_RESERVED (ZF_SUM_JOURNAL_SIZE - 2 - 8)       /* 497 */

#define ZF_SUM_TYPE_DATA 0
#define ZF_SUM_TYPE_NODE 1

/*
 * Who owns a block of the main area.  Node block: nid is the node itself.
 * Data block: nid is the direct node (or inode) pointing at it, and
 * ofs_in_node the slot there; version is that node's NAT version.
 */
struct zf_summary {
	zf_le32 nid;
	uint8_t version;
	zf_le16 ofs_in_node;
} ZF_PACKED;

struct zf_summary_footer {
	uint8_t entry_type;     /* ZF_SUM_TYPE_* */
	zf_le32 check_sum;      /* unused by F2FS; written as 0 */
} ZF_PACKED;

struct zf_nat_journal_entry {
	zf_le32 nid;
	struct zf_nat_entry ne;
} ZF_PACKED;

struct zf_sit_journal_entry {
	zf_le32 segno;
	struct zf_sit_entry se;
} ZF_PACKED;

/*
 * The journal in each summary block of the CP pack: recently changed NAT
 * entries ride in the HOT_DATA summary, SIT entries in the COLD_DATA one,
 * so a checkpoint need not rewrite whole NAT/SIT blocks.
 */
struct zf_journal {
	union {
		zf_le16 n_nats;
		zf_le16 n_sits;
	};
	union {
		struct {
			struct zf_nat_journal_entry entries[ZF_NAT_JOURNAL_ENTRIES];
			uint8_t reserved[ZF_NAT_JOURNAL_RESERVED];
		} ZF_PACKED nat_j;
		struct {
			struct zf_sit_journal_entry entries[ZF_SIT_JOURNAL_ENTRIES];
			uint8_t reserved[ZF_SIT_JOURNAL_RESERVED];
		} ZF_PACKED sit_j;
		struct {
			zf_le64 kbytes_written;
			uint8_t reserved[ZF_EXTRA_INFO_RESERVED];
		} ZF_PACKED info;
	};
} ZF_PACKED;

struct zf_summary_block {
	struct zf_summary entries[ZF_ENTRIES_IN_SUM];
	struct zf_journal journal;
	struct zf_summary_footer footer;
} ZF_PACKED;

/* ---- nodes --------------------------------------------------------------------- */

#define ZF_NAME_LEN            255
#define ZF_ADDRS_PER_INODE     923     /* (4096 - 360 - 20 - 24) / 4 */
#define ZF_NIDS_PER_INODE      5       /* 2 direct, 2 indirect, 1 double indirect */
#define ZF_ADDRS_PER_BLOCK     1018    /* (4096 - 24) / 4 */
#define ZF_NIDS_PER_BLOCK      1018
#define ZF_INLINE_XATTR_ADDRS  50      /* 200 bytes of inline xattrs by default */
#define ZF_INLINE_RESERVED     1       /* words before inline data */
#define ZF_EXTRA_ATTR_SIZE     36      /* i_extra_isize .. i_compress_flag */

/* Indices into i_nid[], named after the file block ranges they cover. */
#define ZF_NODE_DIR1           0
#define ZF_NODE_DIR2           1
#define ZF_NODE_IND1           2
#define ZF_NODE_IND2           3
#define ZF_NODE_DIND           4

/* i_inline */
#define ZF_INLINE_XATTR        0x01
#define ZF_INLINE_DATA         0x02
#define ZF_INLINE_DENTRY       0x04
#define ZF_DATA_EXIST          0x08
#define ZF_INLINE_DOTS         0x10
#define ZF_EXTRA_ATTR          0x20
#define ZF_PIN_FILE            0x40
#define ZF_COMPRESS_RELEASED   0x80

/* i_advise */
#define ZF_FADVISE_COLD        0x01
#define ZF_FADVISE_LOST_PINO   0x02
#define ZF_FADVISE_ENCRYPT     0x04
#define ZF_FADVISE_ENC_NAME    0x08
#define ZF_FADVISE_KEEP_SIZE   0x10
#define ZF_FADVISE_HOT         0x20
#define ZF_FADVISE_VERITY      0x40

/* i_flags (the chattr flags F2FS stores) */
#define ZF_FL_COMPR            0x00000004u
#define ZF_FL_NOCOMP           0x00000400u
#define ZF_FL_SYNC             0x00000008u
#define ZF_FL_IMMUTABLE        0x00000010u
#define ZF_FL_APPEND           0x00000020u
#define ZF_FL_NODUMP           0x00000040u
#define ZF_FL_NOATIME          0x00000080u
#define ZF_FL_INDEX            0x00001000u
#define ZF_FL_DIRSYNC          0x00010000u
#define ZF_FL_PROJINHERIT      0x20000000u
#define ZF_FL_CASEFOLD         0x40000000u

struct zf_extent {
	zf_le32 fofs;
	zf_le32 blk_addr;
	zf_le32 len;
} ZF_PACKED;

/*
 * Node footer: the last 24 bytes of every node block.  flag packs the
 * node's offset in its file's node tree (bits 3-31) with three marks;
 * cp_ver is the checkpoint version the node was written under (with
 * CP_CRC_RECOVERY, OR'd with the CP crc << 32); next_blkaddr is the log's
 * next address when it was written, the link roll-forward follows.
 */
#define ZF_NODE_COLD_BIT    0
#define ZF_NODE_FSYNC_BIT   1
#define ZF_NODE_DENT_BIT    2
#define ZF_NODE_OFS_SHIFT   3
#define ZF_XATTR_NODE_OFS   (0xffffffffu >> ZF_NODE_OFS_SHIFT)

struct zf_node_footer {
	zf_le32 nid;
	zf_le32 ino;
	zf_le32 flag;
	zf_le64 cp_ver;
	zf_le32 next_blkaddr;
} ZF_PACKED;

/*
 * The inode.  With the EXTRA_ATTR inline flag, the first i_extra_isize
 * bytes of i_addr hold the extra attributes and the block pointers start
 * after them; without it (zlfs today) i_addr is all block pointers, or
 * inline data/dentries when INLINE_DATA/INLINE_DENTRY is set.  The inline
 * xattr area, when present, is the last ZF_INLINE_XATTR_ADDRS words of i_addr.
 */
struct zf_inode {
	zf_le16 i_mode;
	uint8_t i_advise;
	uint8_t i_inline;
	zf_le32 i_uid;
	zf_le32 i_gid;
	zf_le32 i_links;
	zf_le64 i_size;
	zf_le64 i_blocks;       /* 4 KiB blocks, counting the inode itself */
	zf_le64 i_atime;
	zf_le64 i_ctime;
	zf_le64 i_mtime;
	zf_le32 i_atime_nsec;
	zf_le32 i_ctime_nsec;
	zf_le32 i_mtime_nsec;
	zf_le32 i_generation;
	union {
		zf_le32 i_current_depth;    /* directories: hash levels in use */
		zf_le16 i_gc_failures;      /* pinned regular files */
	};
	zf_le32 i_xattr_nid;
	zf_le32 i_flags;
	zf_le32 i_pino;         /* parent, for roll-forward of the dentry */
	zf_le32 i_namelen;
	uint8_t i_name[ZF_NAME_LEN];
	uint8_t i_dir_level;
	struct zf_extent i_ext;
	union {
		struct {
			zf_le16 i_extra_isize;
			zf_le16 i_inline_xattr_size;
			zf_le32 i_projid;
			zf_le32 i_inode_checksum;
			zf_le64 i_crtime;
			zf_le32 i_crtime_nsec;
			zf_le64 i_compr_blocks;
			uint8_t i_compress_algorithm;
			uint8_t i_log_cluster_size;
			zf_le16 i_compress_flag;
		} ZF_PACKED;
		zf_le32 i_addr[ZF_ADDRS_PER_INODE];
	};
	zf_le32 i_nid[ZF_NIDS_PER_INODE];
} ZF_PACKED;

struct zf_direct_node {
	zf_le32 addr[ZF_ADDRS_PER_BLOCK];
} ZF_PACKED;

struct zf_indirect_node {
	zf_le32 nid[ZF_NIDS_PER_BLOCK];
} ZF_PACKED;

/* Every node block: inode, direct node, indirect node, or xattr node. */
struct zf_node {
	union {
		struct zf_inode i;
		struct zf_direct_node dn;
		struct zf_indirect_node in;
		uint8_t xattr[ZF_BLKSIZE - sizeof(struct zf_node_footer)];
	};
	struct zf_node_footer footer;
} ZF_PACKED;

static inline unsigned int zf_node_ofs(const struct zf_node *n)
{
	return zf_le32_to_cpu(n->footer.flag) >> ZF_NODE_OFS_SHIFT;
}

static inline bool zf_node_mark(const struct zf_node *n, unsigned int bit)
{
	return (zf_le32_to_cpu(n->footer.flag) >> bit) & 1;
}

static inline void zf_node_set_footer(struct zf_node *n, uint32_t nid, uint32_t ino,
				      unsigned int ofs, uint64_t cp_ver, uint32_t next_blkaddr)
{
	n->footer.nid = zf_cpu_to_le32(nid);
	n->footer.ino = zf_cpu_to_le32(ino);
	n->footer.flag = zf_cpu_to_le32(ofs << ZF_NODE_OFS_SHIFT);
	n->footer.cp_ver = zf_cpu_to_le64(cp_ver);
	n->footer.next_blkaddr = zf_cpu_to_le32(next_blkaddr);
}

/*
 * The shape of an inode's i_addr, in 4-byte words: extra attributes first
 * (EXTRA_ATTR: i_extra_isize bytes), then block pointers (or inline data
 * or inline dentries after one reserved word), then the inline xattr area
 * at the end.  The xattr area's size is the inode's i_inline_xattr_size
 * when the volume has flexible_inline_xattr (every inode then has extra
 * attributes); otherwise ZF_INLINE_XATTR_ADDRS with INLINE_XATTR or
 * INLINE_DENTRY, else none (F2FS's get_inline_xattr_addrs).  Everything
 * that addresses i_addr goes through zf_inode_shape(); it clamps what it
 * reads, so a damaged inode can never steer an access outside i_addr
 * (zf_check_inode refuses such inodes by name first).
 */
#define ZF_MAX_EXTRA_WORDS     (ZF_EXTRA_ATTR_SIZE / 4)
/* F2FS's MIN_INLINE_DENTRY_SIZE: 40 bytes, room for the two slots of . and .. */
#define ZF_MIN_INLINE_DATA_WORDS 10
/* F2FS's MAX_INLINE_XATTR_SIZE (903): room left for the reserved word and that */
#define ZF_MAX_INLINE_XATTR_WORDS \
	(ZF_ADDRS_PER_INODE - ZF_MAX_EXTRA_WORDS - ZF_INLINE_RESERVED - ZF_MIN_INLINE_DATA_WORDS)
#define ZF_MIN_INLINE_XATTR_WORDS 1

struct zf_ishape {
	unsigned int extra;      /* words of extra attributes */
	unsigned int xattr;      /* words of inline xattrs, at the end of i_addr */
	unsigned int addrs;      /* block pointers: i_addr[extra .. extra + addrs) */
	unsigned int inline_max; /* bytes of inline data or dentries (past the reserved word) */
	unsigned int dnode_addrs;/* block pointers used in each direct node */
	unsigned int cluster_log;/* a compressed file's log2 blocks per cluster; 0 if not */
};

static inline unsigned int zf_extra_isize_words(const struct zf_inode *i)
{
	unsigned int w = (i->i_inline & ZF_EXTRA_ATTR) ? zf_le16_to_cpu(i->i_extra_isize) / 4 : 0;

	return w < ZF_MAX_EXTRA_WORDS ? w : ZF_MAX_EXTRA_WORDS;
}

/* Is `field` (at byte offset off, size sz within the inode) inside the extra area? */
static inline bool zf_extra_has(const struct zf_inode *i, size_t off, size_t sz)
{
	size_t start = offsetof(struct zf_inode, i_extra_isize);

	return (i->i_inline & ZF_EXTRA_ATTR) &&
	       off + sz <= start + (size_t)zf_le16_to_cpu(i->i_extra_isize) &&
	       zf_le16_to_cpu(i->i_extra_isize) <= ZF_EXTRA_ATTR_SIZE;
}
#define ZF_EXTRA_HAS(i, field) \
	zf_extra_has((i), offsetof(struct zf_inode, field), sizeof(((struct zf_inode *)0)->field))

/* Words of i_addr given to inline xattrs, on a volume with superblock features `feat`. */
static inline unsigned int zf_inline_xattr_words(const struct zf_inode *i, uint32_t feat)
{
	unsigned int w;

	if (feat & ZF_FEAT_FLEXIBLE_INLINE_XATTR)
		w = ZF_EXTRA_HAS(i, i_inline_xattr_size) ? zf_le16_to_cpu(i->i_inline_xattr_size) : 0;
	else
		w = (i->i_inline & (ZF_INLINE_XATTR | ZF_INLINE_DENTRY)) ? ZF_INLINE_XATTR_ADDRS : 0;
	return w < ZF_MAX_INLINE_XATTR_WORDS ? w : ZF_MAX_INLINE_XATTR_WORDS;
}

/* Bytes of inline data (or inline dentry area) left by extra and xattr words. */
static inline unsigned int zf_max_inline_data(unsigned int extra_words, unsigned int xattr_words)
{
	return 4 * (ZF_ADDRS_PER_INODE - extra_words - xattr_words - ZF_INLINE_RESERVED);
}

/*
 * Is this a compressed file, as the kernel's do_read_inode decides: a
 * regular file with COMPR_FL on a volume with the feature, whose extra
 * attributes reach i_log_cluster_size.  Its cluster log is clamped to
 * 2..8 here (zf_check_inode refuses others by name).
 */
#define ZF_COMPR_LOG_MIN 2
#define ZF_COMPR_LOG_MAX 8
static inline unsigned int zf_cluster_log(const struct zf_inode *i, uint32_t feat)
{
	unsigned int log;

	if (!(feat & ZF_FEAT_COMPRESSION) || !(zf_le32_to_cpu(i->i_flags) & ZF_FL_COMPR) ||
	    (zf_le16_to_cpu(i->i_mode) & 0170000) != 0100000 || !ZF_EXTRA_HAS(i, i_log_cluster_size))
		return 0;
	log = i->i_log_cluster_size;
	return log < ZF_COMPR_LOG_MIN ? ZF_COMPR_LOG_MIN : log > ZF_COMPR_LOG_MAX ? ZF_COMPR_LOG_MAX : log;
}

/*
 * A compressed file's slots per inode and per direct node are rounded
 * down to whole clusters (F2FS's addrs_per_inode / addrs_per_block), so
 * no cluster straddles two nodes; the node tree's shape is otherwise the
 * same.
 */
static inline void zf_inode_shape(const struct zf_inode *i, uint32_t feat, struct zf_ishape *s)
{
	s->extra = zf_extra_isize_words(i);
	s->xattr = zf_inline_xattr_words(i, feat);
	s->addrs = ZF_ADDRS_PER_INODE - s->extra - s->xattr;
	s->inline_max = zf_max_inline_data(s->extra, s->xattr);
	s->dnode_addrs = ZF_ADDRS_PER_BLOCK;
	s->cluster_log = zf_cluster_log(i, feat);
	if (s->cluster_log) {
		unsigned int mask = (1u << s->cluster_log) - 1;
		s->addrs &= ~mask;
		s->dnode_addrs &= ~mask;
	}
}

/* Inline data starts one reserved word past the extra attributes. */
static inline void *zf_inline_data(struct zf_inode *i)
{
	return &i->i_addr[zf_extra_isize_words(i) + ZF_INLINE_RESERVED];
}

/* The inline xattr area (zf_inline_xattr_words(i, feat) words). */
static inline void *zf_inline_xattr_area(struct zf_inode *i, uint32_t feat)
{
	return &i->i_addr[ZF_ADDRS_PER_INODE - zf_inline_xattr_words(i, feat)];
}

/*
 * Bytes of that area that hold xattrs: all of it with INLINE_XATTR, none
 * without (F2FS's inline_xattr_size).  An inline directory of a volume
 * without flexible_inline_xattr keeps the area reserved even so, and a
 * mount with noinline_xattr makes such inodes: the words are then unused.
 */
static inline unsigned int zf_inline_xattr_bytes(const struct zf_inode *i, uint32_t feat)
{
	return (i->i_inline & ZF_INLINE_XATTR) ? 4 * zf_inline_xattr_words(i, feat) : 0;
}

/* 3488: no extra attributes, 200 bytes of inline xattrs. */
#define ZF_DEF_MAX_INLINE_DATA (4 * (ZF_ADDRS_PER_INODE - ZF_INLINE_XATTR_ADDRS - ZF_INLINE_RESERVED))

/* ---- directories --------------------------------------------------------------- */

enum zf_file_type {
	ZF_FT_UNKNOWN = 0,
	ZF_FT_REG_FILE,
	ZF_FT_DIR,
	ZF_FT_CHRDEV,
	ZF_FT_BLKDEV,
	ZF_FT_FIFO,
	ZF_FT_SOCK,
	ZF_FT_SYMLINK,
	ZF_FT_MAX,
};

#define ZF_SLOT_LEN            8       /* a name takes ceil(len / 8) slots */
#define ZF_DENTRY_SIZE         11
#define ZF_DOT_HASH            0       /* '.' and '..' hash to 0 */
#define ZF_MAX_DIR_HASH_DEPTH  63
#define ZF_MAX_DIR_BUCKETS     (1u << ((ZF_MAX_DIR_HASH_DEPTH / 2) - 1))

/*
 * A dentry block holds n = 214 slots: each costs 11 bytes of entry, 8 bytes
 * of name and one bitmap bit, n = floor(4096 * 8 / (19 * 8 + 1)).
 */
#define ZF_NR_DENTRY_IN_BLOCK  214
#define ZF_DENTRY_BITMAP_SIZE  27
#define ZF_DENTRY_RESERVED     3

/* A name longer than one slot continues in the following slots' name bytes. */
struct zf_dir_entry {
	zf_le32 hash_code;
	zf_le32 ino;
	zf_le16 name_len;
	uint8_t file_type;      /* enum zf_file_type */
} ZF_PACKED;

struct zf_dentry_block {
	uint8_t bitmap[ZF_DENTRY_BITMAP_SIZE];      /* LSB-first: zf_le_bit_* */
	uint8_t reserved[ZF_DENTRY_RESERVED];
	struct zf_dir_entry dentry[ZF_NR_DENTRY_IN_BLOCK];
	uint8_t filename[ZF_NR_DENTRY_IN_BLOCK][ZF_SLOT_LEN];
} ZF_PACKED;

/*
 * Inline dentries: the same layout shrunk to fit the inode's inline area
 * (ZF_DEF_MAX_INLINE_DATA bytes with zlfs's inodes: 182 slots).  For other
 * inline sizes use zf_inline_dentry_geom().
 */
#define ZF_NR_INLINE_DENTRY        182
#define ZF_INLINE_DENTRY_BITMAP    23
#define ZF_INLINE_DENTRY_RESERVED  7

struct zf_inline_dentry {
	uint8_t bitmap[ZF_INLINE_DENTRY_BITMAP];
	uint8_t reserved[ZF_INLINE_DENTRY_RESERVED];
	struct zf_dir_entry dentry[ZF_NR_INLINE_DENTRY];
	uint8_t filename[ZF_NR_INLINE_DENTRY][ZF_SLOT_LEN];
} ZF_PACKED;

/* Slots, bitmap bytes and reserved bytes of an inline dentry area of `bytes`. */
static inline void zf_inline_dentry_geom(unsigned int bytes, unsigned int *nr,
					 unsigned int *bitmap, unsigned int *reserved)
{
	unsigned int n = bytes * 8 / ((ZF_DENTRY_SIZE + ZF_SLOT_LEN) * 8 + 1);
	unsigned int b = (n + 7) / 8;

	*nr = n;
	*bitmap = b;
	*reserved = bytes - (ZF_DENTRY_SIZE + ZF_SLOT_LEN) * n - b;
}

static inline unsigned int zf_dentry_slots(unsigned int name_len)
{
	return (name_len + ZF_SLOT_LEN - 1) / ZF_SLOT_LEN;
}

/* Buckets at hash level `level` of a directory with i_dir_level `dir_level`. */
static inline unsigned int zf_dir_buckets(unsigned int level, unsigned int dir_level)
{
	if (level + dir_level < ZF_MAX_DIR_HASH_DEPTH / 2)
		return 1u << (level + dir_level);
	return ZF_MAX_DIR_BUCKETS;
}

/* Dentry blocks per bucket at `level`. */
static inline unsigned int zf_bucket_blocks(unsigned int level)
{
	return level < ZF_MAX_DIR_HASH_DEPTH / 2 ? 2 : 4;
}

/* The directory's file block where bucket `idx` of `level` starts. */
static inline uint64_t zf_dir_block_index(unsigned int level, unsigned int dir_level,
					  unsigned int idx)
{
	uint64_t b = 0;

	for (unsigned int i = 0; i < level; i++)
		b += (uint64_t)zf_dir_buckets(i, dir_level) * zf_bucket_blocks(i);
	return b + (uint64_t)idx * zf_bucket_blocks(level);
}

/* ---- extended attributes ------------------------------------------------------- */

#define ZF_XATTR_MAGIC          0xF2F52011u
#define ZF_XATTR_INDEX_USER              1
#define ZF_XATTR_INDEX_POSIX_ACL_ACCESS  2
#define ZF_XATTR_INDEX_POSIX_ACL_DEFAULT 3
#define ZF_XATTR_INDEX_TRUSTED           4
#define ZF_XATTR_INDEX_LUSTRE            5
#define ZF_XATTR_INDEX_SECURITY          6
#define ZF_XATTR_INDEX_ADVISE            7
#define ZF_XATTR_INDEX_ENCRYPTION        9
#define ZF_XATTR_INDEX_VERITY            11

/*
 * Xattrs of an inode live in one logical buffer: the inline area
 * (ZF_INLINE_XATTR_ADDRS words at the end of i_addr) followed by the xattr
 * node (i_xattr_nid, its first 4072 bytes).  The buffer starts with the
 * header; entries follow, each padded to 4 bytes; a zero word ends them.
 */
struct zf_xattr_header {
	zf_le32 h_magic;
	zf_le32 h_refcount;
	zf_le32 h_reserved[4];
} ZF_PACKED;

struct zf_xattr_entry {
	uint8_t e_name_index;   /* ZF_XATTR_INDEX_*: the prefix, not stored in e_name */
	uint8_t e_name_len;
	zf_le16 e_value_size;
	char e_name[];          /* name, then the value */
} ZF_PACKED;

static inline unsigned int zf_xattr_entry_size(unsigned int name_len, unsigned int value_len)
{
	return (unsigned int)(sizeof(struct zf_xattr_entry) + name_len + value_len + 3) & ~3u;
}

#define ZF_XATTR_NODE_BYTES     (ZF_BLKSIZE - sizeof(struct zf_node_footer))   /* 4072 */

/* ---- bitmaps ------------------------------------------------------------------ */

/* MSB-first (SIT valid maps, CP version bitmaps): bit 0 is 0x80 of byte 0. */
static inline bool zf_msb_test(const uint8_t *map, unsigned int nr)
{
	return (map[nr >> 3] >> (7 - (nr & 7))) & 1;
}

static inline void zf_msb_set(uint8_t *map, unsigned int nr)
{
	map[nr >> 3] |= (uint8_t)(0x80u >> (nr & 7));
}

static inline void zf_msb_clear(uint8_t *map, unsigned int nr)
{
	map[nr >> 3] &= (uint8_t)~(0x80u >> (nr & 7));
}

/* LSB-first (dentry bitmaps): bit 0 is 0x01 of byte 0. */
static inline bool zf_le_bit_test(const uint8_t *map, unsigned int nr)
{
	return (map[nr >> 3] >> (nr & 7)) & 1;
}

static inline void zf_le_bit_set(uint8_t *map, unsigned int nr)
{
	map[nr >> 3] |= (uint8_t)(1u << (nr & 7));
}

static inline void zf_le_bit_clear(uint8_t *map, unsigned int nr)
{
	map[nr >> 3] &= (uint8_t)~(1u << (nr & 7));
}

/* ---- sizes and offsets the other tools depend on --------------------------------- */

_Static_assert(sizeof(struct zf_sb_device) == 68, "sb device");
_Static_assert(sizeof(struct zf_super) == 3072, "superblock");
_Static_assert(offsetof(struct zf_super, block_count) == 36, "sb block_count");
_Static_assert(offsetof(struct zf_super, uuid) == 108, "sb uuid");
_Static_assert(offsetof(struct zf_super, cp_payload) == 1664, "sb cp_payload");
_Static_assert(offsetof(struct zf_super, feature) == 2180, "sb feature");
_Static_assert(offsetof(struct zf_super, devs) == 2201, "sb devs");
_Static_assert(offsetof(struct zf_super, crc) == ZF_SB_CHKSUM_OFFSET, "sb crc");
_Static_assert(sizeof(struct zf_checkpoint) == ZF_CP_BITMAP_OFFSET, "checkpoint header");
_Static_assert(offsetof(struct zf_checkpoint, ckpt_flags) == 132, "cp flags");
_Static_assert(offsetof(struct zf_checkpoint, alloc_type) == 176, "cp alloc_type");
_Static_assert(sizeof(struct zf_orphan_block) == ZF_BLKSIZE, "orphan block");
_Static_assert(sizeof(struct zf_sit_entry) == 74, "sit entry");
_Static_assert(sizeof(struct zf_sit_block) == ZF_BLKSIZE, "sit block");
_Static_assert(sizeof(struct zf_nat_entry) == 9, "nat entry");
_Static_assert(sizeof(struct zf_nat_block) == ZF_BLKSIZE, "nat block");
_Static_assert(sizeof(struct zf_summary) == ZF_SUMMARY_SIZE, "summary");
_Static_assert(sizeof(struct zf_summary_footer) == ZF_SUM_FOOTER_SIZE, "summary footer");
_Static_assert(sizeof(struct zf_nat_journal_entry) == 13, "nat journal entry");
_Static_assert(sizeof(struct zf_sit_journal_entry) == 78, "sit journal entry");
_Static_assert(sizeof(struct zf_journal) == ZF_SUM_JOURNAL_SIZE, "journal");
_Static_assert(sizeof(struct zf_summary_block) == ZF_BLKSIZE, "summary block");
_Static_assert(sizeof(struct zf_extent) == 12, "extent");
_Static_assert(sizeof(struct zf_node_footer) == 24, "node footer");
_Static_assert(offsetof(struct zf_inode, i_ext) == 348, "inode i_ext");
_Static_assert(offsetof(struct zf_inode, i_addr) == 360, "inode i_addr");
_Static_assert(offsetof(struct zf_inode, i_compress_flag) + 2 -
	       offsetof(struct zf_inode, i_extra_isize) == ZF_EXTRA_ATTR_SIZE, "extra attrs");
_Static_assert(offsetof(struct zf_inode, i_nid) == 4052, "inode i_nid");
_Static_assert(sizeof(struct zf_inode) == ZF_BLKSIZE - 24, "inode");
_Static_assert(sizeof(struct zf_direct_node) == ZF_BLKSIZE - 24, "direct node");
_Static_assert(sizeof(struct zf_node) == ZF_BLKSIZE, "node block");
_Static_assert(sizeof(struct zf_dir_entry) == ZF_DENTRY_SIZE, "dir entry");
_Static_assert(sizeof(struct zf_dentry_block) == ZF_BLKSIZE, "dentry block");
_Static_assert(sizeof(struct zf_inline_dentry) == ZF_DEF_MAX_INLINE_DATA, "inline dentry");
_Static_assert(sizeof(struct zf_xattr_header) == 24, "xattr header");
_Static_assert(sizeof(struct zf_xattr_entry) == 4, "xattr entry");

/* ---- libzlfsfmt (fs/f2fs/): checksums and names ----------------------------------- */

/*
 * F2FS's CRC32: the reflected CRC-32 polynomial (0xEDB88320) with no
 * pre- or post-inversion, continuing from `crc`.  Every F2FS checksum seeds
 * it with ZF_SUPER_MAGIC.
 */
uint32_t zf_crc32(uint32_t crc, const void *buf, size_t len);

/* Superblock crc over [0, ZF_SB_CHKSUM_OFFSET). */
uint32_t zf_super_crc(const struct zf_super *sb);
/* Checkpoint crc over the block minus the crc word at checksum_offset. */
uint32_t zf_cp_crc(const void *cp_block);
/* Stores zf_cp_crc() at the block's checksum_offset. */
void zf_cp_set_crc(void *cp_block);
/* True if checksum_offset is sane and the stored crc matches. */
bool zf_cp_crc_ok(const void *cp_block);

/*
 * inode_checksum.  The seed is the crc of the volume's uuid from ~0
 * (F2FS's s_chksum_seed); an inode's checksum continues it over the
 * footer's ino and the inode's i_generation, then over the whole 4 KiB
 * node block with the i_inode_checksum word taken as zero.  Only inodes
 * whose extra attributes reach i_inode_checksum carry one, on a volume
 * with the feature (zf_inode_has_csum).
 */
uint32_t zf_csum_seed(const uint8_t uuid[16]);
uint32_t zf_inode_csum(const struct zf_node *n, uint32_t seed);
bool zf_inode_has_csum(const struct zf_node *n, uint32_t feat);
/* Stores the checksum when the inode carries one. */
void zf_inode_set_csum(struct zf_node *n, uint32_t feat, uint32_t seed);
/* True when the inode carries no checksum or the stored one matches. */
bool zf_inode_csum_ok(const struct zf_node *n, uint32_t feat, uint32_t seed);

/* The dentry hash of a name (TEA-based); '.' and '..' hash to 0. */
uint32_t zf_dentry_hash(const uint8_t *name, size_t len);

#endif
