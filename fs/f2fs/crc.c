/*
 * crc.c - F2FS checksums (libzlfsfmt).
 *
 * F2FS uses one CRC everywhere: CRC-32 with the reflected polynomial
 * 0xEDB88320, seeded with the superblock magic and with neither the usual
 * initial nor final inversion (the kernel's crc32_le as f2fs_crc32 calls it,
 * and f2fs-tools' f2fs_cal_crc32).  So it is NOT zlib's crc32(): for the
 * same bytes, zf_crc32(s, ...) == ~crc32_zlib(~s, ...).
 */
#include <string.h>
#include <zlib.h>

#include "zlfs/f2fs_format.h"

/*
 * zlib's crc32() is the same CRC with both inversions; undoing them gives
 * F2FS's.  zlib's is the fast one (several bytes per step): the inode
 * checksum of every fsync and checkpoint goes through here.
 */
uint32_t zf_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	while (len) {       /* zlib takes a uInt length */
		uInt n = len > 0x40000000u ? 0x40000000u : (uInt)len;
		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return ~crc;
}

uint32_t zf_super_crc(const struct zf_super *sb)
{
	return zf_crc32(ZF_SUPER_MAGIC, sb, ZF_SB_CHKSUM_OFFSET);
}

/*
 * The checksum covers the whole block except the crc word itself.  With the
 * usual offset (the last word) that is [0, 4092); the kernel also accepts a
 * crc right after the header (large NAT bitmaps), then it skips the word.
 */
uint32_t zf_cp_crc(const void *cp_block)
{
	const struct zf_checkpoint *cp = cp_block;
	uint32_t off = zf_le32_to_cpu(cp->checksum_offset);
	uint32_t crc;

	if (off < ZF_CP_BITMAP_OFFSET || off > ZF_CP_CHKSUM_OFFSET)
		off = ZF_CP_CHKSUM_OFFSET;
	crc = zf_crc32(ZF_SUPER_MAGIC, cp_block, off);
	if (off < ZF_CP_CHKSUM_OFFSET)
		crc = zf_crc32(crc, (const uint8_t *)cp_block + off + 4, ZF_BLKSIZE - off - 4);
	return crc;
}

void zf_cp_set_crc(void *cp_block)
{
	struct zf_checkpoint *cp = cp_block;
	uint32_t off = zf_le32_to_cpu(cp->checksum_offset);
	zf_le32 crc = zf_cpu_to_le32(zf_cp_crc(cp_block));

	if (off < ZF_CP_BITMAP_OFFSET || off > ZF_CP_CHKSUM_OFFSET)
		off = ZF_CP_CHKSUM_OFFSET;
	memcpy((uint8_t *)cp_block + off, &crc, sizeof(crc));
}

bool zf_cp_crc_ok(const void *cp_block)
{
	const struct zf_checkpoint *cp = cp_block;
	uint32_t off = zf_le32_to_cpu(cp->checksum_offset);
	zf_le32 stored;

	if (off < ZF_CP_BITMAP_OFFSET || off > ZF_CP_CHKSUM_OFFSET)
		return false;
	memcpy(&stored, (const uint8_t *)cp_block + off, sizeof(stored));
	return zf_le32_to_cpu(stored) == zf_cp_crc(cp_block);
}

uint32_t zf_csum_seed(const uint8_t uuid[16])
{
	return zf_crc32(~0u, uuid, 16);
}

uint32_t zf_inode_csum(const struct zf_node *n, uint32_t seed)
{
	const size_t at = offsetof(struct zf_inode, i_inode_checksum);
	const uint8_t *b = (const uint8_t *)n;
	const uint32_t zero = 0;
	uint32_t crc;

	crc = zf_crc32(seed, &n->footer.ino, sizeof(n->footer.ino));
	crc = zf_crc32(crc, &n->i.i_generation, sizeof(n->i.i_generation));
	crc = zf_crc32(crc, b, at);
	crc = zf_crc32(crc, &zero, sizeof(zero));
	return zf_crc32(crc, b + at + sizeof(zero), ZF_BLKSIZE - at - sizeof(zero));
}

/* F2FS's f2fs_enable_inode_chksum: the feature, an inode block, and room in its extra area */
bool zf_inode_has_csum(const struct zf_node *n, uint32_t feat)
{
	return (feat & ZF_FEAT_INODE_CHKSUM) &&
	       zf_le32_to_cpu(n->footer.nid) == zf_le32_to_cpu(n->footer.ino) &&
	       zf_node_ofs(n) == 0 && ZF_EXTRA_HAS(&n->i, i_inode_checksum);
}

void zf_inode_set_csum(struct zf_node *n, uint32_t feat, uint32_t seed)
{
	if (zf_inode_has_csum(n, feat))
		n->i.i_inode_checksum = zf_cpu_to_le32(zf_inode_csum(n, seed));
}

bool zf_inode_csum_ok(const struct zf_node *n, uint32_t feat, uint32_t seed)
{
	return !zf_inode_has_csum(n, feat) ||
	       zf_le32_to_cpu(n->i.i_inode_checksum) == zf_inode_csum(n, seed);
}
