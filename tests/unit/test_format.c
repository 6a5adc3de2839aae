/*
 * test_format.c - the on-disk format (include/zlfs/f2fs_format.h) and
 * libzlfsfmt (fs/f2fs/): structure sizes, the F2FS CRC, the dentry hash,
 * the SIT map weight and the layout for several geometries.
 *
 * Known values come from f2fs-tools 1.15 (Debian 12): hashes were read back
 * from dentries sload.f2fs wrote, layouts are what mkfs.f2fs -s N writes
 * for the same size, and the CRC matches the checksums in the superblocks
 * and checkpoints mkfs.f2fs writes.
 */
#include <errno.h>
#include <string.h>

#include "testutil.h"
#include "zlfs/f2fs_format.h"
#include "zlfs/f2fs_layout.h"
#include "zlfs/f2fs_check.h"
#include "zlfs/f2fs_feature.h"
#include "zlfs/f2fs_cp_pack.h"
#include "zlfs/f2fs_sit.h"

#define MiB (1024ull * 1024)
#define GiB (1024 * MiB)

static struct zlfs_zdev_geom geom(uint64_t size, uint64_t zone, uint64_t cap, uint32_t conv)
{
	struct zlfs_zdev_geom g = { 0 };

	g.size = size;
	g.zone_size = zone;
	g.zone_cap = cap ? cap : zone;
	g.nr_zones = (uint32_t)(size / zone);
	g.nr_conv = conv;
	g.lbs = 4096;
	g.zoned = conv < g.nr_zones;
	g.kind = ZLFS_DEV_IMAGE;
	return g;
}

/* zf_sit_map_weight against a bit-by-bit count: single bits, full words, random maps. */
static unsigned int weight_slow(const uint8_t *map)
{
	unsigned int n = 0;

	for (int i = 0; i < ZF_SIT_VBLOCK_MAP_SIZE * 8; i++)
		n += (map[i / 8] >> (i % 8)) & 1;
	return n;
}

START_TEST(test_sit_map_weight)
{
	uint8_t map[ZF_SIT_VBLOCK_MAP_SIZE];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	memset(map, 0, sizeof(map));
	ck_assert_uint_eq(zf_sit_map_weight(map), 0);
	for (int i = 0; i < ZF_SIT_VBLOCK_MAP_SIZE * 8; i++) {
		memset(map, 0, sizeof(map));
		map[i / 8] = (uint8_t)(1u << (i % 8));
		ck_assert_uint_eq(zf_sit_map_weight(map), 1);
	}
	memset(map, 0xff, sizeof(map));
	ck_assert_uint_eq(zf_sit_map_weight(map), ZF_SIT_VBLOCK_MAP_SIZE * 8);
	for (int r = 0; r < 2000; r++) {
		for (int i = 0; i < ZF_SIT_VBLOCK_MAP_SIZE; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* some bytes empty, some full, the rest random */
			map[i] = (x >> 60) < 3 ? 0 : (x >> 60) < 6 ? 0xff : (uint8_t)x;
		}
		ck_assert_uint_eq(zf_sit_map_weight(map), weight_slow(map));
	}
}
END_TEST

START_TEST(test_sizes)
{
	/* the compile-time asserts pin most of this; these are the numbers people quote */
	ck_assert_uint_eq(sizeof(struct zf_super), 3072);
	ck_assert_uint_eq(sizeof(struct zf_checkpoint), 192);
	ck_assert_uint_eq(sizeof(struct zf_orphan_block), ZF_BLKSIZE);
	ck_assert_uint_eq(sizeof(struct zf_summary_block), ZF_BLKSIZE);
	ck_assert_uint_eq(sizeof(struct zf_sit_entry), 74);
	ck_assert_uint_eq(sizeof(struct zf_nat_entry), 9);
	ck_assert_uint_eq(sizeof(struct zf_node), ZF_BLKSIZE);
	ck_assert_uint_eq(sizeof(struct zf_dentry_block), ZF_BLKSIZE);
	ck_assert_uint_eq(sizeof(struct zf_inline_dentry), 3488);
	ck_assert_uint_eq(offsetof(struct zf_node, footer), 4072);
	ck_assert_uint_eq(offsetof(struct zf_inode, i_addr), 360);
	ck_assert_uint_eq(offsetof(struct zf_inode, i_nid), 4052);
	ck_assert_uint_eq(offsetof(struct zf_summary_block, journal), 3584);
	ck_assert_uint_eq(offsetof(struct zf_summary_block, footer), 4091);
	ck_assert_uint_eq(offsetof(struct zf_dentry_block, dentry), 30);
	ck_assert_uint_eq(offsetof(struct zf_dentry_block, filename), 30 + 214 * 11);
	ck_assert_uint_eq(offsetof(struct zf_orphan_block, check_sum), 4092);
	ck_assert_uint_eq(ZF_NAT_JOURNAL_ENTRIES, 38);
	ck_assert_uint_eq(ZF_SIT_JOURNAL_ENTRIES, 6);
	ck_assert_uint_eq(ZF_DEF_MAX_INLINE_DATA, 3488);
	ck_assert_uint_eq(ZF_XATTR_NODE_BYTES, 4072);
	ck_assert_uint_eq(zf_xattr_entry_size(4, 5), 16);   /* 4 + 4 + 5, rounded to 4 */
}
END_TEST

START_TEST(test_dentry_geometry)
{
	unsigned int nr, bitmap, reserved;

	/* a dentry block is the same formula at 4096 bytes */
	zf_inline_dentry_geom(ZF_BLKSIZE, &nr, &bitmap, &reserved);
	ck_assert_uint_eq(nr, ZF_NR_DENTRY_IN_BLOCK);
	ck_assert_uint_eq(bitmap, ZF_DENTRY_BITMAP_SIZE);
	ck_assert_uint_eq(reserved, ZF_DENTRY_RESERVED);
	zf_inline_dentry_geom(ZF_DEF_MAX_INLINE_DATA, &nr, &bitmap, &reserved);
	ck_assert_uint_eq(nr, ZF_NR_INLINE_DENTRY);
	ck_assert_uint_eq(bitmap, ZF_INLINE_DENTRY_BITMAP);
	ck_assert_uint_eq(reserved, ZF_INLINE_DENTRY_RESERVED);
	/* with extra attributes (36 bytes = 9 words) the inline area shrinks */
	ck_assert_uint_eq(zf_max_inline_data(9, ZF_INLINE_XATTR_ADDRS), 3452);
	ck_assert_uint_eq(zf_dentry_slots(1), 1);
	ck_assert_uint_eq(zf_dentry_slots(8), 1);
	ck_assert_uint_eq(zf_dentry_slots(9), 2);
	ck_assert_uint_eq(zf_dentry_slots(255), 32);
	ck_assert_uint_eq(zf_dir_buckets(0, 0), 1);
	ck_assert_uint_eq(zf_dir_buckets(3, 1), 16);
	ck_assert_uint_eq(zf_dir_buckets(40, 0), ZF_MAX_DIR_BUCKETS);
	ck_assert_uint_eq(zf_bucket_blocks(30), 2);
	ck_assert_uint_eq(zf_bucket_blocks(31), 4);
	/* level 0: 1 bucket x 2 blocks, level 1: 2 x 2, so level 2 bucket 1 is at 2 + 4 + 2 */
	ck_assert_uint_eq(zf_dir_block_index(2, 0, 1), 8);
}
END_TEST

START_TEST(test_bitmaps)
{
	uint8_t map[4] = { 0 };

	zf_msb_set(map, 0);
	zf_msb_set(map, 9);
	ck_assert_uint_eq(map[0], 0x80);
	ck_assert_uint_eq(map[1], 0x40);
	ck_assert(zf_msb_test(map, 9));
	ck_assert(!zf_msb_test(map, 1));
	zf_msb_clear(map, 0);
	ck_assert_uint_eq(map[0], 0);
	memset(map, 0, sizeof(map));
	zf_le_bit_set(map, 0);
	zf_le_bit_set(map, 9);
	ck_assert_uint_eq(map[0], 0x01);
	ck_assert_uint_eq(map[1], 0x02);
	ck_assert(zf_le_bit_test(map, 9));
	zf_le_bit_clear(map, 9);
	ck_assert_uint_eq(map[1], 0);
}
END_TEST

START_TEST(test_fields)
{
	struct zf_sit_entry se = { 0 };
	struct zf_node n;

	zf_sit_set(&se, ZF_LOG_WARM_NODE, 511);
	ck_assert_uint_eq(zf_le16_to_cpu(se.vblocks), (4u << 10) | 511);
	ck_assert_uint_eq(zf_sit_type(&se), ZF_LOG_WARM_NODE);
	ck_assert_uint_eq(zf_sit_vblocks(&se), 511);

	memset(&n, 0, sizeof(n));
	zf_node_set_footer(&n, 7, 3, 1022, 0x1234, 99);
	n.footer.flag |= zf_cpu_to_le32(1u << ZF_NODE_FSYNC_BIT);
	ck_assert_uint_eq(zf_node_ofs(&n), 1022);
	ck_assert(zf_node_mark(&n, ZF_NODE_FSYNC_BIT));
	ck_assert(!zf_node_mark(&n, ZF_NODE_DENT_BIT));
	ck_assert_uint_eq(ZF_XATTR_NODE_OFS, 0x1fffffff);

	ck_assert_uint_eq(zf_inline_xattr_words(&n.i, 0), 0);
	n.i.i_inline = ZF_INLINE_DENTRY;
	ck_assert_uint_eq(zf_inline_xattr_words(&n.i, 0), ZF_INLINE_XATTR_ADDRS);
	ck_assert_ptr_eq(zf_inline_data(&n.i), &n.i.i_addr[1]);
	n.i.i_inline |= ZF_EXTRA_ATTR;
	n.i.i_extra_isize = zf_cpu_to_le16(ZF_EXTRA_ATTR_SIZE);
	ck_assert_ptr_eq(zf_inline_data(&n.i), &n.i.i_addr[10]);

	/* flexible_inline_xattr: the inode's own size, read only inside its extra area */
	struct zf_ishape sh;
	n.i.i_inline = ZF_EXTRA_ATTR | ZF_INLINE_XATTR;
	n.i.i_inline_xattr_size = zf_cpu_to_le16(100);
	zf_inode_shape(&n.i, ZF_FEAT_EXTRA_ATTR | ZF_FEAT_FLEXIBLE_INLINE_XATTR, &sh);
	ck_assert_uint_eq(sh.extra, 9);
	ck_assert_uint_eq(sh.xattr, 100);
	ck_assert_uint_eq(sh.addrs, ZF_ADDRS_PER_INODE - 109);
	ck_assert_uint_eq(sh.inline_max, 4 * (ZF_ADDRS_PER_INODE - 110));
	zf_inode_shape(&n.i, ZF_FEAT_EXTRA_ATTR, &sh);     /* not flexible: the flag's 50 */
	ck_assert_uint_eq(sh.xattr, ZF_INLINE_XATTR_ADDRS);
	n.i.i_extra_isize = zf_cpu_to_le16(4);              /* just covers i_inline_xattr_size */
	zf_inode_shape(&n.i, ZF_FEAT_EXTRA_ATTR | ZF_FEAT_FLEXIBLE_INLINE_XATTR, &sh);
	ck_assert_uint_eq(sh.extra, 1);
	ck_assert_uint_eq(sh.xattr, 100);
	ck_assert(ZF_EXTRA_HAS(&n.i, i_inline_xattr_size) && !ZF_EXTRA_HAS(&n.i, i_projid));
	n.i.i_extra_isize = zf_cpu_to_le16(0);              /* not inside */
	zf_inode_shape(&n.i, ZF_FEAT_EXTRA_ATTR | ZF_FEAT_FLEXIBLE_INLINE_XATTR, &sh);
	ck_assert_uint_eq(sh.extra, 0);
	ck_assert_uint_eq(sh.xattr, 0);
	/* damaged sizes are clamped: nothing addresses past i_addr */
	n.i.i_extra_isize = zf_cpu_to_le16(0xfffc);
	n.i.i_inline_xattr_size = zf_cpu_to_le16(0xffff);
	zf_inode_shape(&n.i, ZF_FEAT_EXTRA_ATTR | ZF_FEAT_FLEXIBLE_INLINE_XATTR, &sh);
	ck_assert_uint_le(sh.extra, ZF_MAX_EXTRA_WORDS);
	ck_assert_uint_le(sh.extra + sh.xattr + ZF_INLINE_RESERVED, ZF_ADDRS_PER_INODE);
	n.i.i_extra_isize = zf_cpu_to_le16(ZF_EXTRA_ATTR_SIZE);
	zf_inode_shape(&n.i, ZF_FEAT_EXTRA_ATTR | ZF_FEAT_FLEXIBLE_INLINE_XATTR, &sh);
	ck_assert_uint_eq(sh.xattr, ZF_MAX_INLINE_XATTR_WORDS);
	ck_assert_uint_eq(sh.inline_max, 4 * ZF_MIN_INLINE_DATA_WORDS);
}
END_TEST

START_TEST(test_crc)
{
	static const uint8_t check[] = "123456789";
	static uint8_t zeros[ZF_BLKSIZE];
	uint8_t cp_blk[ZF_BLKSIZE];
	struct zf_checkpoint *cp = (struct zf_checkpoint *)cp_blk;
	struct zf_super sb;

	/* the standard CRC-32 check value, once the missing inversions are added */
	ck_assert_uint_eq(zf_crc32(0xffffffffu, check, 9) ^ 0xffffffffu, 0xCBF43926u);
	ck_assert_uint_eq(zf_crc32(ZF_SUPER_MAGIC, check, 9), 0x1657a0c3u);
	ck_assert_uint_eq(zf_crc32(0, check, 9), 0x2dfd2d88u);
	ck_assert_uint_eq(zf_crc32(ZF_SUPER_MAGIC, check, 0), ZF_SUPER_MAGIC);
	ck_assert_uint_eq(zf_crc32(ZF_SUPER_MAGIC, zeros, sizeof(zeros)), 0xa6ae8badu);
	/* continuing a crc equals one pass */
	ck_assert_uint_eq(zf_crc32(zf_crc32(ZF_SUPER_MAGIC, check, 4), check + 4, 5), 0x1657a0c3u);

	memset(cp_blk, 0, sizeof(cp_blk));
	cp->checkpoint_ver = zf_cpu_to_le64(77);
	cp->checksum_offset = zf_cpu_to_le32(ZF_CP_CHKSUM_OFFSET);
	zf_cp_set_crc(cp_blk);
	ck_assert(zf_cp_crc_ok(cp_blk));
	ck_assert_uint_eq(zf_cp_crc(cp_blk), zf_crc32(ZF_SUPER_MAGIC, cp_blk, ZF_CP_CHKSUM_OFFSET));
	cp_blk[100] ^= 1;
	ck_assert(!zf_cp_crc_ok(cp_blk));
	cp_blk[100] ^= 1;
	cp->checksum_offset = zf_cpu_to_le32(ZF_BLKSIZE);
	ck_assert(!zf_cp_crc_ok(cp_blk));
	/* a crc right after the header covers the rest of the block too */
	cp->checksum_offset = zf_cpu_to_le32(ZF_CP_BITMAP_OFFSET);
	zf_cp_set_crc(cp_blk);
	ck_assert(zf_cp_crc_ok(cp_blk));
	cp_blk[4000] ^= 1;
	ck_assert(!zf_cp_crc_ok(cp_blk));

	memset(&sb, 0, sizeof(sb));
	sb.magic = zf_cpu_to_le32(ZF_SUPER_MAGIC);
	ck_assert_uint_eq(zf_super_crc(&sb), zf_crc32(ZF_SUPER_MAGIC, &sb, ZF_SB_CHKSUM_OFFSET));
}
END_TEST

/* Hash codes sload.f2fs 1.15 wrote into dentries for these names. */
static const struct {
	const char *name;
	uint32_t hash;
} sload_hashes[] = {
	{ ".", 0 },
	{ "..", 0 },
	{ "...", 0xd96dc3e1u },
	{ ".hidden", 0x395fc5b0u },
	{ "a", 0x6d0ea4c1u },
	{ "ab", 0xd27d8659u },
	{ "abc", 0xb1435ec5u },
	{ "abcd", 0x5a24112eu },
	{ "hello.txt", 0x5107c3f3u },
	{ "lost+found", 0x2dbf9e80u },
	{ "sp ace", 0xb1d8bfd0u },
	{ "0123456789abcdef", 0x5a0788b2u },                     /* one whole chunk */
	{ "0123456789abcdefg", 0xfb1a23ecu },                    /* one byte into the next */
	{ "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 0xaeca7925u },    /* 33 */
	{ "\xc3\xa9-\xc3\xbcn\xc3\xaf" "code", 0x426bc1aau }, /* bytes, not characters */
};

START_TEST(test_hash)
{
	char longname[ZF_NAME_LEN];

	for (size_t i = 0; i < sizeof(sload_hashes) / sizeof(sload_hashes[0]); i++) {
		const char *n = sload_hashes[i].name;
		ck_assert_msg(zf_dentry_hash((const uint8_t *)n, strlen(n)) == sload_hashes[i].hash,
			      "hash of '%s'", n);
	}
	memset(longname, 'L', sizeof(longname));
	ck_assert_uint_eq(zf_dentry_hash((const uint8_t *)longname, sizeof(longname)), 0xadb21a7eu);
	/* only the exact names '.' and '..' are special */
	ck_assert_uint_ne(zf_dentry_hash((const uint8_t *)".a", 2), 0);
}
END_TEST

START_TEST(test_layout_4g)
{
	struct zlfs_zdev_geom g = geom(4 * GiB, 64 * MiB, 0, 8);
	struct zf_layout l;
	struct zf_ovp o;
	uint32_t segno[ZF_NR_LOGS];
	char err[256];

	ck_assert_int_eq(zf_layout_compute(&l, &g, err, sizeof(err)), 0);
	ck_assert(l.zoned);
	ck_assert_uint_eq(l.segs_per_sec, 32);
	ck_assert_uint_eq(l.secs_per_zone, 1);
	ck_assert_uint_eq(l.block_count, 1048576);
	ck_assert_uint_eq(l.segment0_blkaddr, 16384);
	ck_assert_uint_eq(l.sit_blkaddr, 17408);
	ck_assert_uint_eq(l.nat_blkaddr, 18432);
	ck_assert_uint_eq(l.ssa_blkaddr, 23552);
	ck_assert_uint_eq(l.main_blkaddr, 131072);
	ck_assert_uint_eq(l.main_zone, 8);
	ck_assert_uint_eq(l.segment_count, 2016);
	ck_assert_uint_eq(l.segment_count_ckpt, 2);
	ck_assert_uint_eq(l.segment_count_sit, 2);
	ck_assert_uint_eq(l.segment_count_nat, 10);
	ck_assert_uint_eq(l.segment_count_ssa, 210);
	ck_assert_uint_eq(l.segment_count_main, 1792);
	ck_assert_uint_eq(l.section_count, 56);
	ck_assert_uint_eq(l.cp_payload, 0);
	ck_assert_uint_eq(l.sit_bitmap_bytes, 64);
	ck_assert_uint_eq(l.nat_bitmap_bytes, 320);
	ck_assert_uint_eq(l.max_nid, 5 * 512 * 455);
	ck_assert_uint_eq(l.usable_main_segs, 1792);
	/* the areas chain without gaps, as fsck.f2fs checks */
	ck_assert_uint_eq(l.ssa_blkaddr + l.segment_count_ssa * 512, l.main_blkaddr);
	ck_assert_uint_eq(l.segment0_blkaddr + l.segment_count * 512,
			  l.main_blkaddr + l.segment_count_main * 512);
	ck_assert_uint_ge(l.segment_count_ssa * 512, l.ssa_needed);

	/* what GC needs with 6 logs: reserve 6 + 2 sections, overprovision reserve + 6 */
	ck_assert_int_eq(zf_layout_ovp(&l, 6, 0, &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.reserved_segs, 8 * 32);
	ck_assert_uint_eq(o.ovp_segs, 14 * 32);
	ck_assert_uint_eq(o.user_block_count, (1792 - 448) * 512);
	ck_assert(o.ratio > 24.9 && o.ratio < 25.1);
	/* a ratio below that changes nothing; above it, whole sections more */
	ck_assert_int_eq(zf_layout_ovp(&l, 6, 5, &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.ovp_segs, 14 * 32);
	ck_assert_int_eq(zf_layout_ovp(&l, 6, 30, &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.reserved_segs, 8 * 32);
	ck_assert_uint_eq(o.ovp_segs, 17 * 32);        /* 537.6 segments, rounded up */
	/* fewer logs (small open-zone limits) need less */
	ck_assert_int_eq(zf_layout_ovp(&l, 2, 0, &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.reserved_segs, 4 * 32);
	ck_assert_uint_eq(o.ovp_segs, 6 * 32);

	zf_layout_cursegs(&l, segno);
	ck_assert_uint_eq(segno[ZF_LOG_HOT_NODE], 0);
	ck_assert_uint_eq(segno[ZF_LOG_WARM_NODE], 32);
	ck_assert_uint_eq(segno[ZF_LOG_COLD_NODE], 64);
	ck_assert_uint_eq(segno[ZF_LOG_HOT_DATA], 96);
	ck_assert_uint_eq(segno[ZF_LOG_WARM_DATA], 128);
	ck_assert_uint_eq(segno[ZF_LOG_COLD_DATA], 160);

	ck_assert_uint_eq(zf_nat_blkaddr(&l, ZF_ROOT_INO, 0), 18432);
	ck_assert_uint_eq(zf_nat_blkaddr(&l, ZF_ROOT_INO, 1), 18432 + 512);
	ck_assert_uint_eq(zf_nat_blkaddr(&l, 455, 0), 18433);
	ck_assert_uint_eq(zf_nat_blkaddr(&l, 512 * 455, 0), 18432 + 1024);
	ck_assert_uint_eq(zf_sit_blkaddr(&l, 54, 0), 17408);
	ck_assert_uint_eq(zf_sit_blkaddr(&l, 55, 1), 17408 + 1 + 512);
	ck_assert_uint_eq(zf_ssa_blkaddr(&l, 96), 23552 + 96);
	ck_assert_uint_eq(zf_seg_blkaddr(&l, 96), 131072 + 96 * 512);
}
END_TEST

/* Without sequential zones the layout is mkfs.f2fs -s 32's to the block. */
START_TEST(test_layout_plain)
{
	struct zlfs_zdev_geom g = geom(2 * GiB, 64 * MiB, 0, 32);
	struct zf_layout l;
	struct zf_ovp o;

	ck_assert_int_eq(zf_layout_compute(&l, &g, NULL, 0), 0);
	ck_assert(!l.zoned);
	ck_assert_uint_eq(l.sit_blkaddr, 17408);
	ck_assert_uint_eq(l.nat_blkaddr, 18432);
	ck_assert_uint_eq(l.ssa_blkaddr, 21504);
	ck_assert_uint_eq(l.main_blkaddr, 32768);
	ck_assert_uint_eq(l.segment_count, 992);
	ck_assert_uint_eq(l.segment_count_nat, 6);
	ck_assert_uint_eq(l.segment_count_ssa, 22);
	ck_assert_uint_eq(l.segment_count_main, 960);
	ck_assert_uint_eq(l.section_count, 30);
	ck_assert_uint_eq(l.nat_bitmap_bytes, 192);
	ck_assert_int_eq(zf_layout_ovp(&l, 6, 0, &o, NULL, 0), 0);
	ck_assert_uint_eq(o.user_block_count, (960 - 448) * 512);

	/* 4 GiB: main right after the metadata, at zone 2 */
	g = geom(4 * GiB, 64 * MiB, 0, 64);
	ck_assert_int_eq(zf_layout_compute(&l, &g, NULL, 0), 0);
	ck_assert_uint_eq(l.ssa_blkaddr, 23552);
	ck_assert_uint_eq(l.segment_count_ssa, 18);
	ck_assert_uint_eq(l.main_blkaddr, 32768);
	ck_assert_uint_eq(l.section_count, 62);

	/* 8 TiB, 256 MiB zones: the SIT bitmap needs 3 cp_payload blocks */
	g = geom(8192 * GiB, 256 * MiB, 0, 32768);
	ck_assert_int_eq(zf_layout_compute(&l, &g, NULL, 0), 0);
	ck_assert_uint_eq(l.segment0_blkaddr, 65536);
	ck_assert_uint_eq(l.sit_blkaddr, 66560);
	ck_assert_uint_eq(l.segment_count_sit, 298);
	ck_assert_uint_eq(l.nat_blkaddr, 219136);
	ck_assert_uint_eq(l.segment_count_nat, 120);
	ck_assert_uint_eq(l.ssa_blkaddr, 280576);
	ck_assert_uint_eq(l.segment_count_ssa, 8284);
	ck_assert_uint_eq(l.main_blkaddr, 4521984);
	ck_assert_uint_eq(l.section_count, 32699);
	ck_assert_uint_eq(l.segment_count, 4194176);
	ck_assert_uint_eq(l.cp_payload, 3);
	ck_assert_uint_eq(l.sit_bitmap_bytes, 9536);
	ck_assert_uint_eq(l.nat_bitmap_bytes, 3840);
}
END_TEST

START_TEST(test_layout_capacity)
{
	struct zlfs_zdev_geom g = geom(4 * GiB, 64 * MiB, 48 * MiB, 8);
	struct zf_layout l;
	struct zf_ovp o;

	ck_assert_int_eq(zf_layout_compute(&l, &g, NULL, 0), 0);
	ck_assert_uint_eq(l.main_blkaddr, 131072);        /* capacity does not move areas */
	ck_assert_uint_eq(l.zone_cap_blocks, 12288);
	ck_assert_uint_eq(l.usable_segs_per_sec, 24);
	ck_assert_uint_eq(l.usable_main_segs, 56 * 24);
	ck_assert_uint_eq(zf_layout_usable_blocks(&l, 0), 512);
	ck_assert_uint_eq(zf_layout_usable_blocks(&l, 23), 512);
	ck_assert_uint_eq(zf_layout_usable_blocks(&l, 24), 0);
	ck_assert_uint_eq(zf_layout_usable_blocks(&l, 31), 0);
	ck_assert_uint_eq(zf_layout_usable_blocks(&l, 32), 512);
	ck_assert_uint_eq(zf_layout_usable_blocks(&l, 1792), 0);
	ck_assert_int_eq(zf_layout_ovp(&l, 6, 0, &o, NULL, 0), 0);
	ck_assert_uint_eq(o.reserved_segs, 8 * 24);       /* sections of usable segments */
	ck_assert_uint_eq(o.user_block_count, (uint64_t)(1344 - 14 * 24) * 512);

	/* a segment straddling the capacity keeps what lies below it */
	g = geom(4 * GiB, 64 * MiB, 49 * MiB, 8);
	ck_assert_int_eq(zf_layout_compute(&l, &g, NULL, 0), 0);
	ck_assert_uint_eq(l.usable_segs_per_sec, 25);
	ck_assert_uint_eq(zf_layout_usable_blocks(&l, 23), 512);
	ck_assert_uint_eq(zf_layout_usable_blocks(&l, 24), 256);
	ck_assert_uint_eq(zf_layout_usable_blocks(&l, 25), 0);
}
END_TEST

START_TEST(test_layout_small_zones)
{
	struct zlfs_zdev_geom g = geom(2 * GiB, 2 * MiB, 0, 40);
	struct zf_layout l;

	g.lbs = 512;
	ck_assert_int_eq(zf_layout_compute(&l, &g, NULL, 0), 0);
	ck_assert_uint_eq(l.segs_per_sec, 1);
	ck_assert_uint_eq(l.sector_size, 512);
	ck_assert_uint_eq(l.segment0_blkaddr, 512);
	ck_assert_uint_eq(l.main_zone, 40);
	ck_assert_uint_eq(l.section_count, 984);
	/* not enough conventional zones for 2 MiB zones: zone 0 + CP (2) + SIT + NAT + SSA */
	g.nr_conv = 8;
	ck_assert_int_eq(zf_layout_compute(&l, &g, NULL, 0), -ENOSPC);
}
END_TEST

START_TEST(test_layout_refusals)
{
	struct zlfs_zdev_geom g;
	struct zf_layout l;
	struct zf_ovp o;
	char err[256];

	g = geom(4 * GiB, 64 * MiB, 0, 1);
	ck_assert_int_eq(zf_layout_compute(&l, &g, err, sizeof(err)), -ENOSPC);
	ck_assert_ptr_nonnull(strstr(err, "conventional zones"));
	ck_assert_ptr_nonnull(strstr(err, "2 needed, 1 present"));
	g = geom(4 * GiB, 64 * MiB, 0, 0);
	ck_assert_int_eq(zf_layout_compute(&l, &g, err, sizeof(err)), -ENOSPC);
	g = geom(1 * GiB, 1 * MiB, 0, 64);
	ck_assert_int_eq(zf_layout_compute(&l, &g, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "2 MiB"));
	g = geom(1 * GiB, 3 * MiB, 0, 4);            /* not a power of two, still refused */
	ck_assert_int_eq(zf_layout_compute(&l, &g, err, sizeof(err)), -EINVAL);
	g = geom(1 * GiB, 64 * MiB, 0, 2);            /* 14 main zones: fits, but no GC room */
	ck_assert_int_eq(zf_layout_compute(&l, &g, err, sizeof(err)), 0);
	ck_assert_int_eq(zf_layout_ovp(&l, 6, 0, &o, err, sizeof(err)), -ENOSPC);
	ck_assert_ptr_nonnull(strstr(err, "GC needs 14 of its 14 sections"));
	ck_assert_int_eq(zf_layout_ovp(&l, 2, 0, &o, err, sizeof(err)), 0);   /* with 2 logs */
	g = geom(512 * MiB, 64 * MiB, 0, 2);          /* 6 main zones */
	ck_assert_int_eq(zf_layout_compute(&l, &g, err, sizeof(err)), -ENOSPC);
	ck_assert_ptr_nonnull(strstr(err, "too small"));
	g = geom(32768 * GiB, 256 * MiB, 0, 64);
	ck_assert_int_eq(zf_layout_compute(&l, &g, err, sizeof(err)), -EFBIG);
	g = geom(4 * GiB, 64 * MiB, 0, 8);
	g.lbs = 8192;
	ck_assert_int_eq(zf_layout_compute(&l, &g, err, sizeof(err)), -EINVAL);
	g = geom(4 * GiB, 64 * MiB, 0, 8);
	ck_assert_int_eq(zf_layout_compute(&l, &g, err, sizeof(err)), 0);
	ck_assert_int_eq(zf_layout_ovp(&l, 6, 100, &o, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(test_logs)
{
	const unsigned int four = ZF_LOGMASK_REQUIRED | (1u << ZF_LOG_HOT_NODE) |
				  (1u << ZF_LOG_COLD_DATA);

	ck_assert_uint_eq(zf_log_mask_for_limits(0, 0), ZF_LOGMASK_ALL);
	ck_assert_uint_eq(zf_log_mask_for_limits(14, 14), ZF_LOGMASK_ALL);
	ck_assert_uint_eq(zf_log_mask_for_limits(6, 0), ZF_LOGMASK_ALL);
	ck_assert_uint_eq(zf_log_mask_for_limits(5, 0), four);
	ck_assert_uint_eq(zf_log_mask_for_limits(0, 4), four);
	ck_assert_uint_eq(zf_log_mask_for_limits(8, 3), ZF_LOGMASK_REQUIRED | (1u << ZF_LOG_COLD_DATA));
	ck_assert_uint_eq(zf_log_mask_for_limits(2, 0), ZF_LOGMASK_REQUIRED);
	ck_assert_uint_eq(zf_log_mask_for_limits(1, 0), 0);
	ck_assert_uint_eq(zf_log_mask_for_limits(8, 1), 0);

	ck_assert_uint_eq(zf_log_effective(0, ZF_LOG_HOT_NODE), ZF_LOG_HOT_NODE);
	ck_assert_uint_eq(zf_log_effective(ZF_LOGMASK_ALL, ZF_LOG_COLD_DATA), ZF_LOG_COLD_DATA);
	ck_assert_uint_eq(zf_log_effective(ZF_LOGMASK_REQUIRED, ZF_LOG_HOT_NODE), ZF_LOG_WARM_NODE);
	ck_assert_uint_eq(zf_log_effective(ZF_LOGMASK_REQUIRED, ZF_LOG_COLD_NODE), ZF_LOG_WARM_NODE);
	ck_assert_uint_eq(zf_log_effective(ZF_LOGMASK_REQUIRED, ZF_LOG_HOT_DATA), ZF_LOG_WARM_DATA);
	ck_assert_uint_eq(zf_log_effective(four, ZF_LOG_HOT_NODE), ZF_LOG_HOT_NODE);
	ck_assert_uint_eq(zf_log_effective(four, ZF_LOG_HOT_DATA), ZF_LOG_WARM_DATA);
}
END_TEST

/* A small sound inode (a regular file) with extra attributes, for the checks below. */
static void extra_inode(struct zf_node *n)
{
	memset(n, 0, sizeof(*n));
	zf_node_set_footer(n, 7, 7, 0, 1, 0);
	n->i.i_mode = zf_cpu_to_le16(0100644);
	n->i.i_blocks = zf_cpu_to_le64(1);
	n->i.i_links = zf_cpu_to_le32(1);
	n->i.i_inline = ZF_EXTRA_ATTR;
	n->i.i_extra_isize = zf_cpu_to_le16(ZF_EXTRA_ATTR_SIZE);
}

/* Crafted extra attributes are refused by name, never used to address i_addr. */
START_TEST(test_extra_attr_checks)
{
	const uint32_t ex = ZF_FEAT_EXTRA_ATTR, flex = ex | ZF_FEAT_FLEXIBLE_INLINE_XATTR;
	struct zf_node n;
	char why[200];

	extra_inode(&n);
	ck_assert_int_eq(zf_check_inode(&n, 100, ex, NULL, 0), 0);
	ck_assert_int_eq(zf_check_inode(&n, 100, 0, why, sizeof(why)), -EUCLEAN);
	ck_assert_msg(strstr(why, "extra_attr feature is off"), "%s", why);
	static const uint16_t bad_isize[] = { 0, 2, 6, 40, 0xfffc };
	for (size_t k = 0; k < sizeof(bad_isize) / sizeof(bad_isize[0]); k++) {
		n.i.i_extra_isize = zf_cpu_to_le16(bad_isize[k]);
		ck_assert_int_eq(zf_check_inode(&n, 100, ex, why, sizeof(why)), -EUCLEAN);
		ck_assert_msg(strstr(why, "i_extra_isize"), "%u: %s", bad_isize[k], why);
	}
	extra_inode(&n);
	n.i.i_inline |= ZF_INLINE_XATTR;
	n.i.i_inline_xattr_size = 0;                       /* inline xattrs in no words */
	ck_assert_int_eq(zf_check_inode(&n, 100, flex, why, sizeof(why)), -EUCLEAN);
	ck_assert_msg(strstr(why, "i_inline_xattr_size"), "%s", why);
	n.i.i_inline_xattr_size = zf_cpu_to_le16(ZF_MAX_INLINE_XATTR_WORDS + 1);
	ck_assert_int_eq(zf_check_inode(&n, 100, flex, why, sizeof(why)), -EUCLEAN);
	n.i.i_inline_xattr_size = zf_cpu_to_le16(200);
	ck_assert_int_eq(zf_check_inode(&n, 100, flex, NULL, 0), 0);
	n.i.i_inline = ZF_INLINE_XATTR;                    /* flexible, but no extra attributes */
	ck_assert_int_eq(zf_check_inode(&n, 100, flex, why, sizeof(why)), -EUCLEAN);
	ck_assert_msg(strstr(why, "no extra attributes"), "%s", why);
	/* inline data past what the shape leaves */
	extra_inode(&n);
	n.i.i_inline |= ZF_INLINE_DATA;
	n.i.i_size = zf_cpu_to_le64(zf_max_inline_data(ZF_MAX_EXTRA_WORDS, 0) + 1);
	ck_assert_int_eq(zf_check_inode(&n, 100, ex, why, sizeof(why)), -EUCLEAN);
	ck_assert_msg(strstr(why, "inline data"), "%s", why);
}
END_TEST

/* inode_checksum: which inodes carry one, and that any changed byte shows. */
START_TEST(test_inode_csum)
{
	const uint32_t feat = ZF_FEAT_EXTRA_ATTR | ZF_FEAT_INODE_CHKSUM;
	uint8_t uuid[16] = { 1, 2, 3 };
	uint32_t seed = zf_csum_seed(uuid);
	struct zf_node n;

	extra_inode(&n);
	ck_assert(zf_inode_has_csum(&n, feat));
	ck_assert(!zf_inode_has_csum(&n, ZF_FEAT_EXTRA_ATTR));
	zf_inode_set_csum(&n, feat, seed);
	ck_assert(zf_inode_csum_ok(&n, feat, seed));
	ck_assert(!zf_inode_csum_ok(&n, feat, seed + 1));      /* another volume's seed */
	for (size_t at = 0; at < ZF_BLKSIZE; at += 97) {
		if (at >= offsetof(struct zf_inode, i_inode_checksum) &&
		    at < offsetof(struct zf_inode, i_inode_checksum) + 4)
			continue;
		/* the footer's nid, ino and flag say it is an inode at all (footer checks) */
		if (at >= offsetof(struct zf_node, footer) &&
		    at < offsetof(struct zf_node, footer) + 12)
			continue;
		((uint8_t *)&n)[at] ^= 0x10;
		ck_assert_msg(!zf_inode_csum_ok(&n, feat, seed), "byte %zu not covered", at);
		((uint8_t *)&n)[at] ^= 0x10;
	}
	n.i.i_extra_isize = zf_cpu_to_le16(8);   /* too short to hold it: no checksum */
	ck_assert(!zf_inode_has_csum(&n, feat));
	ck_assert(zf_inode_csum_ok(&n, feat, seed));
	extra_inode(&n);
	zf_node_set_footer(&n, 9, 7, 1, 1, 0);   /* a direct node: never one */
	ck_assert(!zf_inode_has_csum(&n, feat));
}
END_TEST

START_TEST(test_features)
{
	uint32_t f = 0;
	char why[300];

	ck_assert_int_eq(zf_parse_features("extra_attr,inode_checksum,sb_checksum", &f, why,
					   sizeof(why)), 0);
	ck_assert_uint_eq(f, ZF_FEAT_EXTRA_ATTR | ZF_FEAT_INODE_CHKSUM | ZF_FEAT_SB_CHKSUM);
	ck_assert_int_eq(zf_check_features(f, why, sizeof(why)), 0);
	ck_assert_int_eq(zf_parse_features("^extra_attr", &f, why, sizeof(why)), 0);
	ck_assert_int_eq(zf_check_features(f, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "'inode_checksum' needs 'extra_attr'"), "%s", why);
	ck_assert_int_eq(zf_parse_features("no_inode_checksum", &f, why, sizeof(why)), 0);
	ck_assert_uint_eq(f, ZF_FEAT_SB_CHKSUM);
	ck_assert_int_eq(zf_parse_features("extra_attr,bogus", &f, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "'bogus'"), "%s", why);
	/* compression is read and written (cluster.c), and lives in the extra attributes */
	ck_assert_int_eq(zf_check_features(ZF_FEAT_COMPRESSION | ZF_FEAT_EXTRA_ATTR, why,
					   sizeof(why)), 0);
	ck_assert_int_eq(zf_check_features(ZF_FEAT_COMPRESSION, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "'compression' needs 'extra_attr'"), "%s", why);
	ck_assert_int_eq(zf_check_features(ZF_FEAT_ENCRYPT, why, sizeof(why)), -EOPNOTSUPP);
	ck_assert_msg(strstr(why, "'encrypt'"), "%s", why);
	ck_assert_int_eq(zf_check_features(1u << 20, why, sizeof(why)), -EOPNOTSUPP);
	ck_assert_msg(strstr(why, "unknown"), "%s", why);
	zf_feature_list(ZF_FEAT_EXTRA_ATTR | ZF_FEAT_SB_CHKSUM, why, sizeof(why));
	ck_assert_str_eq(why, "extra_attr,sb_checksum");
}
END_TEST

/* nat_bits: their size in blocks, and when a pack may carry them (the kernel's rules). */
START_TEST(test_nat_bits_room)
{
	/* 15 TiB's NAT: 30,720 blocks a copy -> 3,840 bytes a kind, 2 blocks with the stamp */
	ck_assert_uint_eq(zf_nat_bits_bytes(30720), 3840);
	ck_assert_uint_eq(zf_nat_bits_blocks(30720), 2);
	ck_assert_uint_eq(zf_nat_bits_blocks(1024), 1);
	ck_assert(zf_nat_bits_fit(11, 0, 1));
	ck_assert(!zf_nat_bits_fit(11, 0, 0));
	ck_assert(zf_nat_bits_fit(ZF_BLKS_PER_SEG - 2, 0, 2));
	ck_assert(!zf_nat_bits_fit(ZF_BLKS_PER_SEG - 1, 0, 2));   /* no room behind the pack */
	/* payload + 2 packs + 6 logs + bits must stay under a segment */
	ck_assert(zf_nat_bits_fit(200, ZF_BLKS_PER_SEG - 11, 2));
	ck_assert(!zf_nat_bits_fit(200, ZF_BLKS_PER_SEG - 10, 2));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("format");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_dentry_geometry);
	tcase_add_test(tc, test_bitmaps);
	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_crc);
	tcase_add_test(tc, test_hash);
	tcase_add_test(tc, test_layout_4g);
	tcase_add_test(tc, test_layout_plain);
	tcase_add_test(tc, test_layout_capacity);
	tcase_add_test(tc, test_layout_small_zones);
	tcase_add_test(tc, test_layout_refusals);
	tcase_add_test(tc, test_logs);
	tcase_add_test(tc, test_extra_attr_checks);
	tcase_add_test(tc, test_inode_csum);
	tcase_add_test(tc, test_features);
	tcase_add_test(tc, test_nat_bits_room);
	tcase_add_test(tc, test_sit_map_weight);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
