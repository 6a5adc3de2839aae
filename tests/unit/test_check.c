/*
 * test_check.c - the sanity checks of fs/f2fs/check.c as the mount uses
 * them: crafted damage to superblocks, checkpoints, inodes, node pointers,
 * dentries and data addresses of a volume made by mkfs.zlfs, mounted
 * in-process without FUSE.
 *
 * Covers:
 *   - every superblock field the kernel's sanity_check_raw_super checks,
 *     damaged in both copies (checksum made right again), refuses the
 *     mount with a message naming the field; among them the values a user
 *     found accepted or crashing (block_count = 2^62, a huge cp_payload,
 *     extension_count or log_sectorsize, main_blkaddr inside the metadata);
 *   - a first copy that fails leaves the second in use;
 *   - checkpoint fields f2fs_sanity_check_ckpt checks, damaged in the
 *     newest pack with its checksum made right: the mount is refused (as
 *     in the kernel, not the older pack taken); a newest pack with a bad
 *     checksum leaves the older one in use;
 *   - inode blocks with bad fields (all inline flags set, i_xattr_nid or
 *     i_nid past the NAT, i_blocks 0, no file type, a symlink longer than
 *     a block, inline data in a directory), a node pointer naming another
 *     file's node, an empty dentry name, a data block outside the main
 *     area, an xattr entry running past the xattr area: the operation gets
 *     EUCLEAN, the volume turns read-only
 *     (EROFS for what follows) and unmounts without writing.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zlfs.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "dir.h"
#include "xattr.h"
#include "testutil.h"
#include "fsutil.h"

/* Mount img; 0 or the error, with the message in err. */
static int try_mount(const char *img, struct zlfs_sb **sbi, char *err, size_t len)
{
	struct zlfs_opts o;

	zlfs_opts_inprocess(&o);
	err[0] = 0;
	return zlfs_mount(img, &o, sbi, err, len);
}

/* The mount must be refused with a message containing `what`. */
static void mount_refused(const char *img, const char *what)
{
	struct zlfs_sb *sbi = NULL;
	char err[512];
	int ret = try_mount(img, &sbi, err, sizeof(err));

	if (!ret)
		zlfs_unmount(sbi);
	ck_assert_msg(ret < 0, "a volume with damaged %s mounted", what);
	ck_assert_msg(strstr(err, what), "refused (%d) with \"%s\", which does not name %s", ret,
		      err, what);
}

/* ---- superblock ------------------------------------------------------------------------ */

typedef void (*sb_edit)(struct zf_super *sb);

/* Apply edit to the superblock copies in blocks first..last, checksums made right. */
static void edit_super(const char *img, sb_edit edit, int first, int last)
{
	uint8_t blk[ZF_BLKSIZE];

	for (int b = first; b <= last; b++) {
		tu_blk_read(img, (uint64_t)b, blk);
		struct zf_super *sb = (struct zf_super *)(blk + ZF_SUPER_OFFSET);
		edit(sb);
		if (zf_le32_to_cpu(sb->feature) & ZF_FEAT_SB_CHKSUM)
			sb->crc = zf_cpu_to_le32(zf_super_crc(sb));
		tu_blk_write(img, (uint64_t)b, blk);
	}
}

static void e_block_count(struct zf_super *sb) { sb->block_count = zf_cpu_to_le64(1ull << 62); }
static void e_cp_payload(struct zf_super *sb) { sb->cp_payload = zf_cpu_to_le32(0x7fffffff); }
static void e_ext_count(struct zf_super *sb) { sb->extension_count = zf_cpu_to_le32(100000); }
static void e_hot_ext(struct zf_super *sb) { sb->hot_ext_count = 60; sb->extension_count = zf_cpu_to_le32(10); }
static void e_log_sector(struct zf_super *sb) { sb->log_sectorsize = zf_cpu_to_le32(40); }
static void e_log_spb(struct zf_super *sb) { sb->log_sectors_per_block = zf_cpu_to_le32(1); }
static void e_main_in_meta(struct zf_super *sb)
{
	sb->main_blkaddr = sb->sit_blkaddr;
}
static void e_main_count(struct zf_super *sb)
{
	sb->segment_count_main = zf_cpu_to_le32(zf_le32_to_cpu(sb->segment_count_main) + 1);
}
static void e_sections(struct zf_super *sb) { sb->section_count = 0; }
static void e_segs_per_sec(struct zf_super *sb) { sb->segs_per_sec = 0; }
static void e_secs_per_zone(struct zf_super *sb) { sb->secs_per_zone = zf_cpu_to_le32(1u << 30); }
static void e_segment_count(struct zf_super *sb) { sb->segment_count = zf_cpu_to_le32(3); }
static void e_root_ino(struct zf_super *sb) { sb->root_ino = zf_cpu_to_le32(7); }
static void e_sit_chain(struct zf_super *sb)
{
	sb->sit_blkaddr = zf_cpu_to_le32(zf_le32_to_cpu(sb->sit_blkaddr) + 1);
}
static void e_nat_count(struct zf_super *sb)
{
	sb->segment_count_nat = zf_cpu_to_le32(zf_le32_to_cpu(sb->segment_count_nat) + 2);
}
static void e_seg0(struct zf_super *sb)
{
	sb->segment0_blkaddr = zf_cpu_to_le32(zf_le32_to_cpu(sb->segment0_blkaddr) + 512);
}
static void e_devices(struct zf_super *sb)
{
	memcpy(sb->devs[0].path, "/dev/null", 10);
	sb->devs[0].total_segments = zf_cpu_to_le32(1);
}
static void e_magic(struct zf_super *sb) { sb->magic = zf_cpu_to_le32(0x12345678); }

static const struct {
	sb_edit edit;
	const char *what;
} sb_cases[] = {
	{ e_block_count, "block_count" },
	{ e_cp_payload, "cp_payload" },
	{ e_ext_count, "extension counts" },
	{ e_hot_ext, "extension counts" },
	{ e_log_sector, "log_sectorsize" },
	{ e_log_spb, "log_sectors_per_block" },
	{ e_main_in_meta, "main_blkaddr" },
	{ e_main_count, "segment_count_main" },
	{ e_sections, "section_count" },
	{ e_segs_per_sec, "segs_per_sec" },
	{ e_secs_per_zone, "secs_per_zone" },
	{ e_segment_count, "segment_count" },
	{ e_root_ino, "reserved inode numbers" },
	{ e_sit_chain, "sit_blkaddr" },
	{ e_nat_count, "NAT area" },
	{ e_seg0, "segment0_blkaddr" },
	{ e_devices, "devices" },
	{ e_magic, "no F2FS superblock" },
};

START_TEST(test_super_damage)
{
	char name[32];
	snprintf(name, sizeof(name), "sb%d.img", _i);
	char *img = tu_fs_volume(name);

	edit_super(img, sb_cases[_i].edit, 0, 1);
	mount_refused(img, sb_cases[_i].what);
	unlink(img);
	free(img);
}
END_TEST

/* A bad first copy: the second is used, and the volume works. */
START_TEST(test_super_fallback)
{
	char *img = tu_fs_volume("sbfb.img");
	struct zlfs_sb *sbi;
	char err[512];

	edit_super(img, e_main_in_meta, 0, 0);
	ck_assert_msg(try_mount(img, &sbi, err, sizeof(err)) == 0, "mount: %s", err);
	ck_assert_uint_eq(zf_le32_to_cpu(sbi->sb.main_blkaddr), sbi->lay.main_blkaddr);
	ck_assert_int_ne(zf_le32_to_cpu(sbi->sb.main_blkaddr), zf_le32_to_cpu(sbi->sb.sit_blkaddr));
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	edit_super(img, e_main_in_meta, 1, 1);
	mount_refused(img, "main_blkaddr");
	free(img);
}
END_TEST

/* ---- checkpoint ---------------------------------------------------------------------- */

typedef void (*cp_edit)(struct zf_checkpoint *cp);

/* Block address of pack `pack`'s head, its version (0: invalid). */
static uint64_t pack_head(const char *img, int pack, uint64_t *ver)
{
	uint8_t blk[ZF_BLKSIZE];
	tu_blk_read(img, 0, blk);
	const struct zf_super *sb = (const struct zf_super *)(blk + ZF_SUPER_OFFSET);
	uint64_t at = zf_le32_to_cpu(sb->cp_blkaddr) + (uint64_t)pack * ZF_BLKS_PER_SEG;
	tu_blk_read(img, at, blk);
	*ver = zf_cp_crc_ok(blk) ? zf_le64_to_cpu(((struct zf_checkpoint *)blk)->checkpoint_ver) : 0;
	return at;
}

/* Edit the newest pack's head and tail; with crc, their checksums made right. */
static uint64_t edit_newest_cp(const char *img, cp_edit edit, bool crc)
{
	uint64_t v0, v1, h0 = pack_head(img, 0, &v0), h1 = pack_head(img, 1, &v1);
	uint64_t head = v0 >= v1 ? h0 : h1;
	uint8_t blk[ZF_BLKSIZE];

	tu_blk_read(img, head, blk);
	uint32_t total = zf_le32_to_cpu(((struct zf_checkpoint *)blk)->cp_pack_total_block_count);
	uint64_t at[2] = { head, head + total - 1 };
	for (int k = 0; k < 2; k++) {
		tu_blk_read(img, at[k], blk);
		edit((struct zf_checkpoint *)blk);
		if (crc)
			zf_cp_set_crc(blk);
		tu_blk_write(img, at[k], blk);
	}
	return v0 >= v1 ? v0 : v1;
}

static void c_start_sum(struct zf_checkpoint *cp) { cp->cp_pack_start_sum = zf_cpu_to_le32(600); }
static void c_user(struct zf_checkpoint *cp) { cp->user_block_count = 0; }
static void c_valid(struct zf_checkpoint *cp)
{
	cp->valid_block_count = zf_cpu_to_le64(zf_le64_to_cpu(cp->user_block_count) + 1);
}
static void c_segno(struct zf_checkpoint *cp) { cp->cur_data_segno[1] = zf_cpu_to_le32(0x7fffffff); }
static void c_same(struct zf_checkpoint *cp) { cp->cur_node_segno[1] = cp->cur_data_segno[0]; }
static void c_blkoff(struct zf_checkpoint *cp) { cp->cur_node_blkoff[0] = zf_cpu_to_le16(512); }
static void c_bitmap(struct zf_checkpoint *cp)
{
	cp->sit_ver_bitmap_bytesize = zf_cpu_to_le32(zf_le32_to_cpu(cp->sit_ver_bitmap_bytesize) + 8);
}
static void c_rsvd(struct zf_checkpoint *cp) { cp->rsvd_segment_count = 0; }
static void c_nodes(struct zf_checkpoint *cp) { cp->valid_node_count = zf_cpu_to_le32(0xfffffff0u); }
static void c_free(struct zf_checkpoint *cp) { cp->free_segment_count = zf_cpu_to_le32(0x7fffffff); }
static void c_mask(struct zf_checkpoint *cp) { cp->alloc_type[ZF_CP_LOGMASK_SLOT] = 0x01; }

static const struct {
	cp_edit edit;
	const char *what;
} cp_cases[] = {
	{ c_start_sum, "cp_pack_start_sum" },
	{ c_user, "user_block_count" },
	{ c_valid, "valid_block_count" },
	{ c_segno, "current data segment" },
	{ c_same, "share segment" },
	{ c_blkoff, "current node segment" },
	{ c_bitmap, "bitmap sizes" },
	{ c_rsvd, "reserved" },
	{ c_nodes, "valid_node_count" },
	{ c_free, "free_segment_count" },
	{ c_mask, "active-log mask" },
};

START_TEST(test_cp_damage)
{
	char name[32];
	snprintf(name, sizeof(name), "cp%d.img", _i);
	char *img = tu_fs_volume(name);

	edit_newest_cp(img, cp_cases[_i].edit, true);
	/* refused, the reason on stderr: the mount's message names the checkpoint */
	mount_refused(img, "checkpoint");
	unlink(img);
	free(img);
}
END_TEST

/* A newest pack torn (bad checksum): the older one is the checkpoint. */
START_TEST(test_cp_fallback)
{
	char *img = tu_fs_volume("cpfb.img");
	struct zlfs_sb *sbi;
	char err[512];

	tu_fs_unmount(tu_fs_mount(img, 0));   /* both packs hold a checkpoint */
	uint64_t newest = edit_newest_cp(img, c_user, false);
	ck_assert_msg(try_mount(img, &sbi, err, sizeof(err)) == 0, "mount: %s", err);
	/* the older pack was loaded: the mount's own checkpoint took the next version */
	ck_assert_uint_eq(sbi->cp_ver, newest);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

/* ---- damage met while mounted ------------------------------------------------------------- */

/* A checksum of blocks [0, n) of img: the metadata areas when n is main_blkaddr. */
static uint64_t sum_blocks(const char *img, uint32_t n)
{
	uint8_t blk[ZF_BLKSIZE];
	uint64_t h = 1469598103934665603ull;

	for (uint32_t b = 0; b < n; b++) {
		tu_blk_read(img, b, blk);
		for (size_t i = 0; i < sizeof(blk); i++)
			h = (h ^ blk[i]) * 1099511628211ull;
	}
	return h;
}

enum op { OP_IGET, OP_READ, OP_READDIR };

static int count_entry(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t ftype,
		       uint64_t next)
{
	(void)name, (void)len, (void)ino, (void)ftype, (void)next;
	++*(int *)ctx;
	return 0;
}

/*
 * Mount the damaged img (the mount itself must succeed: nothing it reads
 * is damaged), run op on ino, which must fail with EUCLEAN; from then on
 * the volume is read-only, and neither that nor the unmount writes.
 */
static void op_corrupt(const char *img, uint32_t ino, enum op op, uint64_t off)
{
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi = NULL;
	int ret = zlfs_iget(sbi, ino, &zi);
	static char buf[8192];
	size_t got;
	int n = 0;

	if (!ret && op == OP_READ)
		ret = zlfs_file_read(sbi, zi, buf, sizeof(buf), off, &got);
	if (!ret && op == OP_READDIR)
		ret = zlfs_dir_iterate(sbi, zi, 0, count_entry, &n);
	ck_assert_int_eq(ret, -EUCLEAN);
	ck_assert_int_eq(zlfs_writable(sbi), -EROFS);
	struct zlfs_cred c = { 0, 0, 0 };
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "new", S_IFREG | 0644, 0, NULL, &zi),
			 -EROFS);
	uint32_t meta = sbi->lay.main_blkaddr;
	uint64_t before = sum_blocks(img, meta);
	tu_fs_unmount(sbi);
	ck_assert_msg(sum_blocks(img, meta) == before, "metadata written after the damage was found");
}

typedef void (*node_edit)(struct zf_node *n, const struct tu_tree *t, uint32_t max_nid);

static void n_inline_all(struct zf_node *n, const struct tu_tree *t, uint32_t m)
{
	(void)t, (void)m;
	n->i.i_inline = 0xff;
}
static void n_xattr_nid(struct zf_node *n, const struct tu_tree *t, uint32_t m)
{
	(void)t;
	n->i.i_xattr_nid = zf_cpu_to_le32(m + 1000);
}
static void n_blocks0(struct zf_node *n, const struct tu_tree *t, uint32_t m)
{
	(void)t, (void)m;
	n->i.i_blocks = 0;
}
static void n_mode0(struct zf_node *n, const struct tu_tree *t, uint32_t m)
{
	(void)t, (void)m;
	n->i.i_mode = 0;
}
static void n_long_link(struct zf_node *n, const struct tu_tree *t, uint32_t m)
{
	(void)t, (void)m;
	n->i.i_size = zf_cpu_to_le64(5000);
}
static void n_dir_inline_data(struct zf_node *n, const struct tu_tree *t, uint32_t m)
{
	(void)t, (void)m;
	n->i.i_inline |= ZF_INLINE_DATA;
}
static void n_nid_past(struct zf_node *n, const struct tu_tree *t, uint32_t m)
{
	(void)t;
	n->i.i_nid[ZF_NODE_DIR1] = zf_cpu_to_le32(m);
}
static void n_nid_other(struct zf_node *n, const struct tu_tree *t, uint32_t m)
{
	(void)m;
	n->i.i_nid[ZF_NODE_DIR1] = zf_cpu_to_le32(t->file);   /* another file's inode */
}
static void n_addr_meta(struct zf_node *n, const struct tu_tree *t, uint32_t m)
{
	(void)t, (void)m;
	n->i.i_addr[0] = zf_cpu_to_le32(5);
}
static void n_huge_size(struct zf_node *n, const struct tu_tree *t, uint32_t m)
{
	(void)t, (void)m;
	n->i.i_size = zf_cpu_to_le64(1ull << 62);
}

enum target { T_ROOT, T_DIR, T_FILE, T_BIG, T_LINK, T_INLINE };

static const struct {
	node_edit edit;
	enum target target;
	enum op op;
	uint64_t off;
} inode_cases[] = {
	{ n_inline_all, T_ROOT, OP_IGET, 0 },
	{ n_inline_all, T_INLINE, OP_IGET, 0 },
	{ n_xattr_nid, T_FILE, OP_IGET, 0 },
	{ n_blocks0, T_FILE, OP_IGET, 0 },
	{ n_mode0, T_FILE, OP_IGET, 0 },
	{ n_long_link, T_LINK, OP_IGET, 0 },
	{ n_dir_inline_data, T_DIR, OP_IGET, 0 },
	{ n_nid_past, T_BIG, OP_IGET, 0 },
	{ n_nid_other, T_BIG, OP_READ, 1000ull * ZF_BLKSIZE },
	{ n_addr_meta, T_FILE, OP_READ, 0 },
	{ n_huge_size, T_FILE, OP_IGET, 0 },
};

static uint32_t target_ino(const struct tu_tree *t, enum target w)
{
	switch (w) {
	case T_ROOT: return ZF_ROOT_INO;
	case T_DIR: return t->dir;
	case T_FILE: return t->file;
	case T_BIG: return t->big;
	case T_LINK: return t->link;
	case T_INLINE: return t->inl;
	}
	return 0;
}

START_TEST(test_inode_damage)
{
	char name[32];
	struct tu_tree t;
	uint8_t blk[ZF_BLKSIZE];

	snprintf(name, sizeof(name), "in%d.img", _i);
	char *img = tu_fs_volume(name);
	tu_make_tree(img, &t);
	uint32_t ino = target_ino(&t, inode_cases[_i].target);
	uint32_t at = tu_node_addr(img, ino);
	tu_blk_read(img, 0, blk);
	uint32_t max_nid = zf_super_max_nid((const struct zf_super *)(blk + ZF_SUPER_OFFSET));
	tu_blk_read(img, at, blk);
	inode_cases[_i].edit((struct zf_node *)blk, &t, max_nid);
	tu_blk_write(img, at, blk);
	if (inode_cases[_i].target == T_ROOT) {
		/* a damaged root is refused at mount (super.c), before anything is written */
		struct zlfs_opts o;
		struct zlfs_sb *sbi = NULL;
		char err[256] = "";
		zlfs_opts_inprocess(&o);
		ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), -EUCLEAN);
		ck_assert_msg(strstr(err, "fsck.zlfs"), "the refusal does not name fsck.zlfs: %s", err);
	} else {
		op_corrupt(img, ino, inode_cases[_i].op, inode_cases[_i].off);
	}
	unlink(img);
	free(img);
}
END_TEST

/* A dentry whose name length is 0: readdir fails, the volume turns read-only. */
START_TEST(test_dentry_damage)
{
	char *img = tu_fs_volume("dent.img");
	struct tu_tree t;
	uint8_t blk[ZF_BLKSIZE];

	tu_make_tree(img, &t);
	tu_blk_read(img, tu_node_addr(img, t.dir), blk);
	const struct zf_node *n = (const struct zf_node *)blk;
	ck_assert(!(n->i.i_inline & ZF_INLINE_DENTRY));
	uint32_t db = zf_le32_to_cpu(n->i.i_addr[0]);
	ck_assert_uint_ne(db, 0);
	tu_blk_read(img, db, blk);
	struct zf_dentry_block *d = (struct zf_dentry_block *)blk;
	ck_assert(zf_le_bit_test(d->bitmap, 2));   /* the first entry after . and .. */
	d->dentry[2].name_len = 0;
	tu_blk_write(img, db, blk);
	op_corrupt(img, t.dir, OP_READDIR, 0);
	free(img);
}
END_TEST

/*
 * An xattr entry whose lengths run past the xattr area (found by
 * test_damage: removing it read 20 KiB past the buffer): EUCLEAN for list,
 * get and remove alike, read-only after.
 */
START_TEST(test_xattr_damage)
{
	char *img = tu_fs_volume("xattr.img");
	struct tu_tree t;
	uint8_t blk[ZF_BLKSIZE];
	struct zinode *zi;
	char list[256];
	size_t len;

	tu_make_tree(img, &t);
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	ck_assert_int_eq(zlfs_iget(sbi, t.file, &zi), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.a", "1", 1, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.b", "2", 1, 0), 0);
	tu_fs_unmount(sbi);
	/* the area starts inline when the inode has room there, else in the xattr node */
	uint32_t at = tu_node_addr(img, t.file);
	tu_blk_read(img, at, blk);
	struct zf_inode *ri = &((struct zf_node *)blk)->i;
	uint8_t *area = (uint8_t *)&ri->i_addr[ZF_ADDRS_PER_INODE - ZF_INLINE_XATTR_ADDRS];
	if (!(ri->i_inline & ZF_INLINE_XATTR)) {
		ck_assert_uint_ne(zf_le32_to_cpu(ri->i_xattr_nid), 0);
		at = tu_node_addr(img, zf_le32_to_cpu(ri->i_xattr_nid));
		tu_blk_read(img, at, blk);
		area = blk;
	}
	struct zf_xattr_entry *e = (struct zf_xattr_entry *)(area + sizeof(struct zf_xattr_header));
	ck_assert_int_eq(e->e_name_len, 1);
	e->e_name_len = 0xff;
	e->e_value_size = zf_cpu_to_le16(0x7fff);
	tu_blk_write(img, at, blk);

	sbi = tu_fs_mount(img, 0);
	ck_assert_int_eq(zlfs_iget(sbi, t.file, &zi), 0);
	ck_assert_int_eq(zlfs_xattr_list(sbi, zi, list, sizeof(list), &len), -EUCLEAN);
	ck_assert_int_eq(zlfs_xattr_get(sbi, zi, "user.b", list, sizeof(list), &len), -EUCLEAN);
	ck_assert_int_eq(zlfs_writable(sbi), -EROFS);
	ck_assert_int_ne(zlfs_xattr_remove(sbi, zi, "user.a"), 0);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

static Suite *check_suite(void)
{
	Suite *s = suite_create("check");
	TCase *tc = tcase_create("super");
	tcase_add_loop_test(tc, test_super_damage, 0, (int)(sizeof(sb_cases) / sizeof(sb_cases[0])));
	tcase_add_test(tc, test_super_fallback);
	suite_add_tcase(s, tc);
	tc = tcase_create("checkpoint");
	tcase_add_loop_test(tc, test_cp_damage, 0, (int)(sizeof(cp_cases) / sizeof(cp_cases[0])));
	tcase_add_test(tc, test_cp_fallback);
	suite_add_tcase(s, tc);
	tc = tcase_create("mounted");
	tcase_add_loop_test(tc, test_inode_damage, 0,
			    (int)(sizeof(inode_cases) / sizeof(inode_cases[0])));
	tcase_add_test(tc, test_dentry_damage);
	tcase_add_test(tc, test_xattr_damage);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	tu_mkfs_opts = TU_PLAIN_FEATURES;   /* the damage is made at raw inode offsets */
	return tu_run(check_suite());
}
