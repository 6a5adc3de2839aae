/*
 * check.c - sanity checks of superblocks, checkpoints, node footers and
 * inodes as read from the device (include/zlfs/f2fs_check.h).
 *
 * Invariant: every field is bounded here before any caller uses it to
 * size an allocation, index an array or compute an address; arithmetic on
 * untrusted fields is done in 64 bits so no sum or product wraps around
 * into a plausible value (a 32-bit product once let block_count = 2^62
 * through).  Pure functions: no I/O, no state, no locks.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "zlfs/f2fs_check.h"
#include "zlfs/f2fs_compress.h"

/* F2FS's limits (include/linux/f2fs_fs.h, fs/f2fs/segment.h). */
#define MIN_LOG_SECTOR_SIZE   9
#define MAX_LOG_SECTOR_SIZE   ZF_BLKSIZE_BITS
#define MIN_SEGMENTS          9        /* SB + 2 CP + 2 SIT + 2 NAT + SSA + MAIN */
#define MIN_META_SEGMENTS     8        /* 2 CP + 2 SIT + 2 NAT + SSA + reserved */
#define RESERVED_NODE_NUM     3        /* node, meta and root inodes */
#define NR_PERSIST_LOGS       6

static int fail(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -EUCLEAN;
}

uint32_t zf_super_max_nid(const struct zf_super *sb)
{
	uint64_t n = (uint64_t)(zf_le32_to_cpu(sb->segment_count_nat) / 2) * ZF_BLKS_PER_SEG *
		     ZF_NAT_ENTRY_PER_BLOCK;
	return n > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)n;
}

/* sanity_check_area_boundary: CP, SIT, NAT, SSA and main follow each other. */
static int check_areas(const struct zf_super *sb, char *why, size_t len)
{
	uint64_t seg0 = zf_le32_to_cpu(sb->segment0_blkaddr);
	uint64_t cp = zf_le32_to_cpu(sb->cp_blkaddr), sit = zf_le32_to_cpu(sb->sit_blkaddr);
	uint64_t nat = zf_le32_to_cpu(sb->nat_blkaddr), ssa = zf_le32_to_cpu(sb->ssa_blkaddr);
	uint64_t main = zf_le32_to_cpu(sb->main_blkaddr);
	uint64_t n_cp = zf_le32_to_cpu(sb->segment_count_ckpt), n_sit = zf_le32_to_cpu(sb->segment_count_sit);
	uint64_t n_nat = zf_le32_to_cpu(sb->segment_count_nat), n_ssa = zf_le32_to_cpu(sb->segment_count_ssa);
	uint64_t n_main = zf_le32_to_cpu(sb->segment_count_main);
	uint64_t seg_end = seg0 + (uint64_t)zf_le32_to_cpu(sb->segment_count) * ZF_BLKS_PER_SEG;
	uint64_t main_end = main + n_main * ZF_BLKS_PER_SEG;

	if (seg0 < 2)
		return fail(why, len, "superblock: segment0_blkaddr %llu overlaps the superblocks",
			    (unsigned long long)seg0);
	if (seg0 != cp)
		return fail(why, len, "superblock: segment0_blkaddr %llu is not cp_blkaddr %llu",
			    (unsigned long long)seg0, (unsigned long long)cp);
	if (cp + n_cp * ZF_BLKS_PER_SEG != sit)
		return fail(why, len, "superblock: the checkpoint area (%llu + %llu segments) does "
			    "not end at sit_blkaddr %llu", (unsigned long long)cp,
			    (unsigned long long)n_cp, (unsigned long long)sit);
	if (sit + n_sit * ZF_BLKS_PER_SEG != nat)
		return fail(why, len, "superblock: the SIT area (%llu + %llu segments) does not end "
			    "at nat_blkaddr %llu", (unsigned long long)sit, (unsigned long long)n_sit,
			    (unsigned long long)nat);
	if (nat + n_nat * ZF_BLKS_PER_SEG != ssa)
		return fail(why, len, "superblock: the NAT area (%llu + %llu segments) does not end "
			    "at ssa_blkaddr %llu", (unsigned long long)nat, (unsigned long long)n_nat,
			    (unsigned long long)ssa);
	if (ssa + n_ssa * ZF_BLKS_PER_SEG != main)
		return fail(why, len, "superblock: the SSA area (%llu + %llu segments) does not end "
			    "at main_blkaddr %llu", (unsigned long long)ssa, (unsigned long long)n_ssa,
			    (unsigned long long)main);
	/* the kernel accepts a main area that ends short of segment_count's end */
	if (main_end > seg_end)
		return fail(why, len, "superblock: the main area ends at block %llu, past the "
			    "%u segments from segment0 (block %llu)", (unsigned long long)main_end,
			    zf_le32_to_cpu(sb->segment_count), (unsigned long long)seg_end);
	if (seg_end > zf_le64_to_cpu(sb->block_count))
		return fail(why, len, "superblock: the segments end at block %llu, past block_count "
			    "%llu", (unsigned long long)seg_end,
			    (unsigned long long)zf_le64_to_cpu(sb->block_count));
	/* zlfs's own needs: both checkpoint packs, both copies, an entry per main segment */
	if (n_cp < ZF_CP_PACKS)
		return fail(why, len, "superblock: segment_count_ckpt %llu: two checkpoint packs "
			    "need two segments", (unsigned long long)n_cp);
	if (n_sit < 2 || n_sit % 2 || n_nat < 2 || n_nat % 2)
		return fail(why, len, "superblock: SIT (%llu) and NAT (%llu) segment counts must be "
			    "even, two copies each", (unsigned long long)n_sit,
			    (unsigned long long)n_nat);
	if (n_sit / 2 * ZF_BLKS_PER_SEG * ZF_SIT_ENTRY_PER_BLOCK < n_main)
		return fail(why, len, "superblock: a SIT copy of %llu segments cannot describe %llu "
			    "main segments", (unsigned long long)(n_sit / 2),
			    (unsigned long long)n_main);
	if (n_ssa * ZF_BLKS_PER_SEG < n_main)
		return fail(why, len, "superblock: %llu SSA segments cannot summarise %llu main "
			    "segments", (unsigned long long)n_ssa, (unsigned long long)n_main);
	return 0;
}

int zf_check_super(const struct zf_super *sb, uint64_t dev_blocks, char *why, size_t len)
{
	uint32_t feat = zf_le32_to_cpu(sb->feature);

	if (zf_le32_to_cpu(sb->magic) != ZF_SUPER_MAGIC)
		return fail(why, len, "superblock: bad magic 0x%08x", zf_le32_to_cpu(sb->magic));
	if (feat & ZF_FEAT_SB_CHKSUM) {
		if (zf_le32_to_cpu(sb->checksum_offset) != ZF_SB_CHKSUM_OFFSET)
			return fail(why, len, "superblock: checksum_offset %u, not %u",
				    zf_le32_to_cpu(sb->checksum_offset), ZF_SB_CHKSUM_OFFSET);
		if (zf_super_crc(sb) != zf_le32_to_cpu(sb->crc))
			return fail(why, len, "superblock: checksum mismatch");
	}
	if (zf_le32_to_cpu(sb->log_blocksize) != ZF_BLKSIZE_BITS)
		return fail(why, len, "superblock: log_blocksize %u (only 4 KiB blocks)",
			    zf_le32_to_cpu(sb->log_blocksize));
	if (zf_le32_to_cpu(sb->log_blocks_per_seg) != ZF_LOG_BLKS_PER_SEG)
		return fail(why, len, "superblock: log_blocks_per_seg %u (only 512)",
			    zf_le32_to_cpu(sb->log_blocks_per_seg));
	uint32_t lss = zf_le32_to_cpu(sb->log_sectorsize);
	uint32_t lspb = zf_le32_to_cpu(sb->log_sectors_per_block);
	if (lss < MIN_LOG_SECTOR_SIZE || lss > MAX_LOG_SECTOR_SIZE)
		return fail(why, len, "superblock: log_sectorsize %u outside [%u, %u]", lss,
			    MIN_LOG_SECTOR_SIZE, MAX_LOG_SECTOR_SIZE);
	if ((uint64_t)lss + lspb != MAX_LOG_SECTOR_SIZE)
		return fail(why, len, "superblock: log_sectors_per_block %u + log_sectorsize %u is "
			    "not %u", lspb, lss, MAX_LOG_SECTOR_SIZE);

	uint64_t segs = zf_le32_to_cpu(sb->segment_count);
	uint64_t main = zf_le32_to_cpu(sb->segment_count_main);
	uint64_t secs = zf_le32_to_cpu(sb->section_count);
	uint64_t sps = zf_le32_to_cpu(sb->segs_per_sec), spz = zf_le32_to_cpu(sb->secs_per_zone);
	uint64_t blocks = zf_le64_to_cpu(sb->block_count);
	if (segs > ZF_MAX_SEGMENTS || segs < MIN_SEGMENTS)
		return fail(why, len, "superblock: segment_count %llu outside [%u, %u]",
			    (unsigned long long)segs, MIN_SEGMENTS, ZF_MAX_SEGMENTS);
	if (secs < 1 || secs > main || !sps || sps > segs)
		return fail(why, len, "superblock: section_count %llu, segment_count_main %llu, "
			    "segs_per_sec %llu do not fit", (unsigned long long)secs,
			    (unsigned long long)main, (unsigned long long)sps);
	if (main != secs * sps)
		return fail(why, len, "superblock: segment_count_main %llu is not section_count "
			    "%llu x segs_per_sec %llu", (unsigned long long)main,
			    (unsigned long long)secs, (unsigned long long)sps);
	if (segs / sps < secs)
		return fail(why, len, "superblock: segment_count %llu holds fewer than %llu sections",
			    (unsigned long long)segs, (unsigned long long)secs);
	if (segs > blocks >> ZF_LOG_BLKS_PER_SEG)
		return fail(why, len, "superblock: segment_count %llu is more than block_count "
			    "%llu holds", (unsigned long long)segs, (unsigned long long)blocks);
	if (dev_blocks && blocks > dev_blocks)
		return fail(why, len, "superblock: block_count %llu is past the device's %llu "
			    "blocks", (unsigned long long)blocks, (unsigned long long)dev_blocks);
	if (sb->devs[0].path[0]) {
		uint64_t sum = 0;
		for (int i = 0; i < ZF_MAX_DEVICES && sb->devs[i].path[0]; i++)
			sum += zf_le32_to_cpu(sb->devs[i].total_segments);
		if (sum != segs)
			return fail(why, len, "superblock: the devices' %llu segments are not "
				    "segment_count %llu", (unsigned long long)sum,
				    (unsigned long long)segs);
	}
	if (!spz || spz > secs)
		return fail(why, len, "superblock: secs_per_zone %llu outside [1, section_count "
			    "%llu]", (unsigned long long)spz, (unsigned long long)secs);
	uint64_t ext = zf_le32_to_cpu(sb->extension_count);
	if (ext > ZF_MAX_EXTENSION || sb->hot_ext_count > ZF_MAX_EXTENSION ||
	    ext + sb->hot_ext_count > ZF_MAX_EXTENSION)
		return fail(why, len, "superblock: extension counts %llu + %u past %u",
			    (unsigned long long)ext, sb->hot_ext_count, ZF_MAX_EXTENSION);
	if (zf_le32_to_cpu(sb->cp_payload) >= ZF_BLKS_PER_SEG - ZF_CP_PACKS - NR_PERSIST_LOGS)
		return fail(why, len, "superblock: cp_payload %u is more than a pack holds",
			    zf_le32_to_cpu(sb->cp_payload));
	if (zf_le32_to_cpu(sb->node_ino) != ZF_NODE_INO || zf_le32_to_cpu(sb->meta_ino) != ZF_META_INO ||
	    zf_le32_to_cpu(sb->root_ino) != ZF_ROOT_INO)
		return fail(why, len, "superblock: reserved inode numbers node %u meta %u root %u, "
			    "not 1 2 3", zf_le32_to_cpu(sb->node_ino), zf_le32_to_cpu(sb->meta_ino),
			    zf_le32_to_cpu(sb->root_ino));
	return check_areas(sb, why, len);
}

/* Data summary blocks of a compact pack, as the kernel's npages_for_summary_flush. */
static uint32_t compact_sum_blocks(uint64_t entries)
{
	const uint64_t first = (ZF_BLKSIZE - 2 * ZF_SUM_JOURNAL_SIZE - ZF_SUM_FOOTER_SIZE) /
			       ZF_SUMMARY_SIZE;
	const uint64_t more = (ZF_BLKSIZE - ZF_SUM_FOOTER_SIZE) / ZF_SUMMARY_SIZE;

	if (entries <= first)
		return 1;
	return entries - first <= more ? 2 : 3;
}

int zf_check_cp(const struct zf_super *sb, const void *cpblk, char *why, size_t len)
{
	const struct zf_checkpoint *cp = cpblk;

	if (!zf_cp_crc_ok(cp))
		return fail(why, len, "checkpoint: bad checksum (or checksum_offset %u)",
			    zf_le32_to_cpu(cp->checksum_offset));
	uint64_t segs = zf_le32_to_cpu(sb->segment_count);
	uint64_t n_sit = zf_le32_to_cpu(sb->segment_count_sit);
	uint64_t n_nat = zf_le32_to_cpu(sb->segment_count_nat);
	uint64_t main = zf_le32_to_cpu(sb->segment_count_main);
	uint64_t rsvd = zf_le32_to_cpu(cp->rsvd_segment_count);
	uint64_t ovp = zf_le32_to_cpu(cp->overprov_segment_count);
	uint64_t fsmeta = zf_le32_to_cpu(sb->segment_count_ckpt) + n_sit + n_nat + rsvd +
			  zf_le32_to_cpu(sb->segment_count_ssa);
	if (fsmeta >= segs)
		return fail(why, len, "checkpoint: metadata and %llu reserved segments fill all %llu "
			    "segments", (unsigned long long)rsvd, (unsigned long long)segs);
	if (fsmeta < MIN_META_SEGMENTS || !ovp || !rsvd)
		return fail(why, len, "checkpoint: wrong layout (reserved %llu, overprovision %llu "
			    "segments)", (unsigned long long)rsvd, (unsigned long long)ovp);
	uint64_t user = zf_le64_to_cpu(cp->user_block_count);
	if (!user || user >= main * ZF_BLKS_PER_SEG)
		return fail(why, len, "checkpoint: user_block_count %llu outside (0, %llu)",
			    (unsigned long long)user, (unsigned long long)(main * ZF_BLKS_PER_SEG));
	if (zf_le64_to_cpu(cp->valid_block_count) > user)
		return fail(why, len, "checkpoint: valid_block_count %llu past user_block_count %llu",
			    (unsigned long long)zf_le64_to_cpu(cp->valid_block_count),
			    (unsigned long long)user);
	uint64_t max_nid = zf_super_max_nid(sb);
	if (zf_le32_to_cpu(cp->valid_node_count) > max_nid - RESERVED_NODE_NUM)
		return fail(why, len, "checkpoint: valid_node_count %u past the NAT's %llu nodes",
			    zf_le32_to_cpu(cp->valid_node_count),
			    (unsigned long long)(max_nid - RESERVED_NODE_NUM));
	if (zf_le32_to_cpu(cp->valid_inode_count) > zf_le32_to_cpu(cp->valid_node_count))
		return fail(why, len, "checkpoint: valid_inode_count %u past valid_node_count %u",
			    zf_le32_to_cpu(cp->valid_inode_count), zf_le32_to_cpu(cp->valid_node_count));
	if (zf_le32_to_cpu(cp->free_segment_count) > main)
		return fail(why, len, "checkpoint: free_segment_count %u past the %llu main segments",
			    zf_le32_to_cpu(cp->free_segment_count), (unsigned long long)main);

	/* the six current segments: inside main, offsets inside a segment, all different */
	uint64_t seg[NR_PERSIST_LOGS];
	for (int i = 0; i < NR_PERSIST_LOGS; i++) {
		bool node = i >= ZF_NR_DATA_LOGS;
		int k = node ? i - ZF_NR_DATA_LOGS : i;
		seg[i] = zf_le32_to_cpu(node ? cp->cur_node_segno[k] : cp->cur_data_segno[k]);
		uint32_t off = zf_le16_to_cpu(node ? cp->cur_node_blkoff[k] : cp->cur_data_blkoff[k]);
		if (seg[i] >= main || off >= ZF_BLKS_PER_SEG)
			return fail(why, len, "checkpoint: current %s segment %d at %llu+%u, outside "
				    "the %llu main segments", node ? "node" : "data", k,
				    (unsigned long long)seg[i], off, (unsigned long long)main);
		for (int j = 0; j < i; j++)
			if (seg[j] == seg[i])
				return fail(why, len, "checkpoint: two logs share segment %llu",
					    (unsigned long long)seg[i]);
	}
	uint32_t mask = cp->alloc_type[ZF_CP_LOGMASK_SLOT];
	if (mask && ((mask & ~ZF_LOGMASK_ALL) || (mask & ZF_LOGMASK_REQUIRED) != ZF_LOGMASK_REQUIRED))
		return fail(why, len, "checkpoint: active-log mask 0x%x lacks the warm logs", mask);

	/* version bitmaps: exactly one bit per SIT / NAT block, where the pack has room */
	uint64_t sit_bytes = zf_le32_to_cpu(cp->sit_ver_bitmap_bytesize);
	uint64_t nat_bytes = zf_le32_to_cpu(cp->nat_ver_bitmap_bytesize);
	if (sit_bytes != n_sit / 2 * ZF_BLKS_PER_SEG / 8 || nat_bytes != n_nat / 2 * ZF_BLKS_PER_SEG / 8)
		return fail(why, len, "checkpoint: bitmap sizes SIT %llu NAT %llu bytes, not %llu "
			    "and %llu", (unsigned long long)sit_bytes, (unsigned long long)nat_bytes,
			    (unsigned long long)(n_sit / 2 * ZF_BLKS_PER_SEG / 8),
			    (unsigned long long)(n_nat / 2 * ZF_BLKS_PER_SEG / 8));
	uint64_t payload = zf_le32_to_cpu(sb->cp_payload);
	uint64_t room = zf_le32_to_cpu(cp->checksum_offset) - ZF_CP_BITMAP_OFFSET;
	if (payload ? (nat_bytes > room || sit_bytes > payload * ZF_BLKSIZE)
		    : sit_bytes + nat_bytes > room)
		return fail(why, len, "checkpoint: version bitmaps of %llu + %llu bytes do not fit "
			    "(cp_payload %llu)", (unsigned long long)sit_bytes,
			    (unsigned long long)nat_bytes, (unsigned long long)payload);
	uint32_t flags = zf_le32_to_cpu(cp->ckpt_flags);
	if (flags & ZF_CP_LARGE_NAT_BITMAP_FLAG &&
	    zf_le32_to_cpu(cp->checksum_offset) != ZF_CP_BITMAP_OFFSET)
		return fail(why, len, "checkpoint: large NAT bitmap with the deprecated layout");

	/* the pack: head, payload, orphans, data summaries, node summaries, tail */
	uint64_t total = zf_le32_to_cpu(cp->cp_pack_total_block_count);
	uint64_t start_sum = zf_le32_to_cpu(cp->cp_pack_start_sum);
	if (start_sum < payload + 1 || start_sum > ZF_BLKS_PER_SEG - 1 - NR_PERSIST_LOGS)
		return fail(why, len, "checkpoint: cp_pack_start_sum %llu outside [%llu, %u]",
			    (unsigned long long)start_sum, (unsigned long long)(payload + 1),
			    ZF_BLKS_PER_SEG - 1 - NR_PERSIST_LOGS);
	uint64_t entries = 0;
	for (int i = 0; i < ZF_NR_DATA_LOGS; i++)
		entries += zf_le16_to_cpu(cp->cur_data_blkoff[i]);
	uint64_t sums = (flags & ZF_CP_COMPACT_SUM_FLAG) ? compact_sum_blocks(entries) : 3;
	if (flags & ZF_CP_UMOUNT_FLAG)
		sums += ZF_NR_NODE_LOGS;
	if (total > ZF_BLKS_PER_SEG || start_sum + sums + 1 > total)
		return fail(why, len, "checkpoint: cp_pack_total_block_count %llu does not hold "
			    "summaries from block %llu and the tail", (unsigned long long)total,
			    (unsigned long long)start_sum);
	if (flags & ZF_CP_NAT_BITS_FLAG) {
		uint64_t nat_bits = (n_nat * ZF_BLKS_PER_SEG / 8 * 2 + 8 + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
		if (payload + ZF_CP_PACKS + NR_PERSIST_LOGS + nat_bits >= ZF_BLKS_PER_SEG)
			return fail(why, len, "checkpoint: cp_payload %llu leaves no room for %llu "
				    "nat_bits blocks", (unsigned long long)payload,
				    (unsigned long long)nat_bits);
	}
	return 0;
}

int zf_check_node_footer(const struct zf_node *n, uint32_t nid, uint32_t ino,
			 enum zf_node_kind kind, char *why, size_t len)
{
	uint32_t fnid = zf_le32_to_cpu(n->footer.nid), fino = zf_le32_to_cpu(n->footer.ino);
	unsigned int ofs = zf_node_ofs(n);
	bool inode = fnid == fino;   /* F2FS's IS_INODE */

	if (fnid != nid)
		return fail(why, len, "node %u: its footer names nid %u", nid, fnid);
	if (ino && fino != ino)
		return fail(why, len, "node %u: its footer names inode %u, not %u", nid, fino, ino);
	switch (kind) {
	case ZF_NODE_KIND_INODE:
		if (!inode || ofs)
			return fail(why, len, "node %u: not an inode (footer ino %u, offset %u)", nid,
				    fino, ofs);
		break;
	case ZF_NODE_KIND_XATTR:
		if (inode || ofs != ZF_XATTR_NODE_OFS)
			return fail(why, len, "node %u: not an xattr node (footer ino %u, offset %u)",
				    nid, fino, ofs);
		break;
	case ZF_NODE_KIND_DNODE:
	case ZF_NODE_KIND_INDIRECT:
		if (inode || !ofs || ofs == ZF_XATTR_NODE_OFS)
			return fail(why, len, "node %u: not a %s node of inode %u (footer ino %u, "
				    "offset %u)", nid, kind == ZF_NODE_KIND_DNODE ? "direct" : "indirect",
				    ino, fino, ofs);
		break;
	case ZF_NODE_KIND_ANY:
		break;
	}
	return 0;
}

uint64_t zf_max_file_bytes(void)
{
	uint64_t b = ZF_ADDRS_PER_INODE - ZF_INLINE_XATTR_ADDRS;
	b += 2ull * ZF_ADDRS_PER_BLOCK;
	b += 2ull * ZF_ADDRS_PER_BLOCK * ZF_NIDS_PER_BLOCK;
	b += (uint64_t)ZF_ADDRS_PER_BLOCK * ZF_NIDS_PER_BLOCK * ZF_NIDS_PER_BLOCK;
	return b * ZF_BLKSIZE;
}

static bool nid_ok(uint32_t nid, uint32_t max_nid)
{
	return nid >= ZF_ROOT_INO && nid < max_nid;
}

int zf_check_inode(const struct zf_node *n, uint32_t max_nid, uint32_t feat, char *why,
		   size_t len)
{
	const struct zf_inode *ri = &n->i;
	uint32_t ino = zf_le32_to_cpu(n->footer.ino);
	unsigned int mode = zf_le16_to_cpu(ri->i_mode), inl = ri->i_inline;
	uint64_t size = zf_le64_to_cpu(ri->i_size);

	if (ino != zf_le32_to_cpu(n->footer.nid))
		return fail(why, len, "inode %u: footer nid %u", ino, zf_le32_to_cpu(n->footer.nid));
	if (!zf_le64_to_cpu(ri->i_blocks))
		return fail(why, len, "inode %u: i_blocks is 0", ino);
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR: case S_IFBLK: case S_IFIFO:
	case S_IFSOCK:
		break;
	default:
		return fail(why, len, "inode %u: i_mode 0%o is no file type", ino, mode);
	}
	uint32_t xnid = zf_le32_to_cpu(ri->i_xattr_nid);
	if (xnid == ino || (xnid && !nid_ok(xnid, max_nid)))
		return fail(why, len, "inode %u: i_xattr_nid %u outside [%u, %u)", ino, xnid,
			    ZF_ROOT_INO, max_nid);
	if ((inl & ZF_EXTRA_ATTR) && !(feat & ZF_FEAT_EXTRA_ATTR))
		return fail(why, len, "inode %u: has extra attributes, but the extra_attr feature "
			    "is off", ino);
	if (inl & ZF_EXTRA_ATTR) {
		/* F2FS's sanity_check_inode: a whole number of words, no more than it knows */
		unsigned int ex = zf_le16_to_cpu(ri->i_extra_isize);
		if (ex % 4 || ex > ZF_EXTRA_ATTR_SIZE || ex < 4)
			return fail(why, len, "inode %u: i_extra_isize %u (a multiple of 4 from 4 to "
				    "%u)", ino, ex, ZF_EXTRA_ATTR_SIZE);
	}
	if (feat & ZF_FEAT_FLEXIBLE_INLINE_XATTR) {
		if (!(inl & ZF_EXTRA_ATTR))
			return fail(why, len, "inode %u: no extra attributes on a volume with "
				    "flexible_inline_xattr", ino);
		unsigned int xs = ZF_EXTRA_HAS(ri, i_inline_xattr_size) ?
				  zf_le16_to_cpu(ri->i_inline_xattr_size) : 0;
		if (xs > ZF_MAX_INLINE_XATTR_WORDS ||
		    ((inl & ZF_INLINE_XATTR) && xs < ZF_MIN_INLINE_XATTR_WORDS))
			return fail(why, len, "inode %u: i_inline_xattr_size %u (from %u to %u words%s)",
				    ino, xs, ZF_MIN_INLINE_XATTR_WORDS, ZF_MAX_INLINE_XATTR_WORDS,
				    (inl & ZF_INLINE_XATTR) ? ", with inline xattrs" : "");
	}
	struct zf_ishape sh;
	zf_inode_shape(ri, feat, &sh);
	if (zf_le32_to_cpu(ri->i_flags) & ZF_FL_CASEFOLD)
		return fail(why, len, "inode %u: casefolded, but the casefold feature is off", ino);
	if ((zf_le32_to_cpu(ri->i_flags) & ZF_FL_COMPR) && !(feat & ZF_FEAT_COMPRESSION))
		return fail(why, len, "inode %u: compressed, but the compression feature is off", ino);
	if (sh.cluster_log) {
		/* F2FS's sanity_check_compress_inode */
		unsigned int alg = ri->i_compress_algorithm, log = ri->i_log_cluster_size;
		unsigned int flag = zf_le16_to_cpu(ri->i_compress_flag);
		unsigned int level = flag >> ZF_COMPR_LEVEL_SHIFT;
		if (alg >= ZF_COMPR_NR)
			return fail(why, len, "inode %u: compression algorithm %u", ino, alg);
		if (log < ZF_COMPR_LOG_MIN || log > ZF_COMPR_LOG_MAX)
			return fail(why, len, "inode %u: compressed in clusters of 2^%u blocks (2^%u to "
				    "2^%u)", ino, log, ZF_COMPR_LOG_MIN, ZF_COMPR_LOG_MAX);
		if (!zf_compr_level_ok(alg, level))
			return fail(why, len, "inode %u: %s level %u", ino, zf_compr_name(alg), level);
		if (zf_le64_to_cpu(ri->i_compr_blocks) > zf_le64_to_cpu(ri->i_blocks))
			return fail(why, len, "inode %u: i_compr_blocks %llu past i_blocks %llu", ino,
				    (unsigned long long)zf_le64_to_cpu(ri->i_compr_blocks),
				    (unsigned long long)zf_le64_to_cpu(ri->i_blocks));
		if (inl & ZF_INLINE_DATA)
			return fail(why, len, "inode %u: compressed and inline", ino);
	}
	if (inl & ZF_INLINE_DATA) {
		if (!S_ISREG(mode) && !S_ISLNK(mode))
			return fail(why, len, "inode %u (mode 0%o): inline data in no regular file "
				    "or symlink", ino, mode);
		if (inl & ZF_INLINE_DENTRY)
			return fail(why, len, "inode %u: both inline data and inline dentries", ino);
		unsigned int max = sh.inline_max;
		if (size > max)
			return fail(why, len, "inode %u: i_size %llu past its %u bytes of inline data",
				    ino, (unsigned long long)size, max);
	}
	if ((inl & ZF_INLINE_DENTRY) && !S_ISDIR(mode))
		return fail(why, len, "inode %u (mode 0%o): inline dentries in no directory", ino, mode);
	if (inl & ZF_INLINE_DENTRY) {
		unsigned int nr, bm, rsv;
		zf_inline_dentry_geom(sh.inline_max, &nr, &bm, &rsv);
		if (nr < 1)
			return fail(why, len, "inode %u: inline dentries in %u bytes, room for none",
				    ino, sh.inline_max);
	}
	if (zf_le32_to_cpu(ri->i_namelen) > ZF_NAME_LEN)
		return fail(why, len, "inode %u: i_namelen %u", ino, zf_le32_to_cpu(ri->i_namelen));
	if (S_ISDIR(mode) && zf_le32_to_cpu(ri->i_current_depth) > ZF_MAX_DIR_HASH_DEPTH)
		return fail(why, len, "inode %u: directory depth %u past %u", ino,
			    zf_le32_to_cpu(ri->i_current_depth), ZF_MAX_DIR_HASH_DEPTH);
	if (S_ISLNK(mode) && size >= ZF_BLKSIZE)
		return fail(why, len, "inode %u: symlink of %llu bytes", ino, (unsigned long long)size);
	/* zlfs sizes a file up to the end of its last mappable block's 4 KiB */
	if (size / ZF_BLKSIZE > zf_max_file_bytes() / ZF_BLKSIZE)
		return fail(why, len, "inode %u: i_size %llu past the largest file", ino,
			    (unsigned long long)size);
	if (!(inl & (ZF_INLINE_DATA | ZF_INLINE_DENTRY)))
		for (int k = 0; k < ZF_NIDS_PER_INODE; k++) {
			uint32_t c = zf_le32_to_cpu(ri->i_nid[k]);
			if (c && (!nid_ok(c, max_nid) || c == ino))
				return fail(why, len, "inode %u: i_nid[%d] %u outside [%u, %u)", ino, k, c,
					    ZF_ROOT_INO, max_nid);
		}
	return 0;
}

int zf_check_xattrs(const uint8_t *buf, unsigned int cap, char *why, size_t len)
{
	unsigned int at = sizeof(struct zf_xattr_header);

	/* entries until a zero word, or the end, each wholly inside the area */
	while (at + sizeof(struct zf_xattr_entry) <= cap) {
		const struct zf_xattr_entry *e = (const struct zf_xattr_entry *)(buf + at);
		uint32_t word;
		memcpy(&word, e, sizeof(word));
		if (!word)
			return 0;
		unsigned int size = zf_xattr_entry_size(e->e_name_len, zf_le16_to_cpu(e->e_value_size));
		if (at + size > cap)
			return fail(why, len, "xattr entry at byte %u (name %u, value %u bytes) runs past "
				    "the %u-byte xattr area", at, e->e_name_len,
				    zf_le16_to_cpu(e->e_value_size), cap);
		at += size;
	}
	return 0;
}
