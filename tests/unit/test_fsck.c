/*
 * test_fsck.c - fsck.zlfs ($ZLFS_FSCK) on volumes made by mkfs.zlfs,
 * populated in-process and then damaged on purpose.
 *
 * Covers, each judged by fsck.zlfs's exit code (fsck(8): 0 clean, 1
 * corrected, 4 left), by a second fsck.zlfs -f that must find nothing, by
 * fsck.f2fs, and by a mount that reads the repaired files:
 *   - a clean volume is clean (and skipped without -f, as fsck(8) expects:
 *     the damage below is all checked with -f);
 *   - -n reports and writes nothing (the image is unchanged);
 *   - checkpoint counts off (the mount refuses such a volume): -p repairs;
 *   - a wrong link count: -p repairs, the inode has its real count;
 *   - a dentry lost: the inode goes to /lost+found with its data (-p);
 *   - an entry with another file type than its inode's: -y removes it, the
 *     inode goes to /lost+found;
 *   - a block owned by two files: -p leaves it (exit 4: repairing loses a
 *     block), -y clears the second pointer and fixes i_blocks;
 *   - an entry naming a damaged inode: -p leaves it, -y removes it;
 *   - a wrong SSA entry (GC's back-pointer): -p repairs;
 *   - nat_bits that lie about a NAT block: reported, dropped by -p (the
 *     mount after reads the whole NAT and writes true ones);
 *   - a damaged first superblock copy: -p rewrites it from the second;
 *   - a zone no file uses written to behind zlfs's back: reported, reset
 *     by -p (the mount it runs for that does it);
 *   - usage errors exit 16; a missing device exits 8;
 *   - every kind of problem printed 20 times at most, then "... N in all"
 *     (-v prints all);
 *   - a root that is not a directory: nothing repaired, and a verdict that
 *     says so and names dump.f2fs and a backup.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zlfs.h"
#include "inode.h"
#include "file.h"
#include "dir.h"
#include "testutil.h"
#include "fsutil.h"

/* fsck.zlfs with args on img: its exit code (its output into img.log). */
static int fsck(const char *img, const char *args)
{
	const char *exe = getenv("ZLFS_FSCK");
	char cmd[2048];

	ck_assert_msg(exe && *exe, "ZLFS_FSCK not set");
	snprintf(cmd, sizeof(cmd), "'%s' %s '%s' >'%s.log' 2>&1", exe, args, img, img);
	int st = system(cmd);
	ck_assert(WIFEXITED(st));
	snprintf(cmd, sizeof(cmd), "cat '%s.log'", img);
	if (system(cmd)) {}
	return WEXITSTATUS(st);
}

/* After a repair: nothing left for fsck.zlfs or fsck.f2fs. */
static void all_clean(const char *img)
{
	ck_assert_int_eq(fsck(img, "-f -n"), 0);
	tu_fsck_clean(img);
}

/* Read inode ino's file fully in-process: 0 when every byte is z (or "tiny"). */
static void check_file(const char *img, uint32_t ino, uint64_t size)
{
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi;
	static char buf[1 << 20];
	size_t got;

	ck_assert_int_eq(zlfs_iget(sbi, ino, &zi), 0);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(zi)->i_size), size);
	for (uint64_t off = 0; off < size; off += got) {
		ck_assert_int_eq(zlfs_file_read(sbi, zi, buf, sizeof(buf), off, &got), 0);
		ck_assert_uint_gt(got, 0);
		size_t bad = tu_first_not(buf, got, 'z');
		ck_assert_msg(bad == got, "byte %llu of inode %u", (unsigned long long)(off + bad), ino);
	}
	tu_fs_unmount(sbi);
}

static char *volume(const char *name, struct tu_tree *t)
{
	char *img = tu_fs_volume(name);
	tu_make_tree(img, t);
	return img;
}

START_TEST(test_clean)
{
	struct tu_tree t;
	char *img = volume("clean.img", &t);

	ck_assert_int_eq(fsck(img, "-n"), 0);       /* unmounted cleanly: skipped */
	ck_assert_int_eq(fsck(img, "-f -n"), 0);
	ck_assert_int_eq(fsck(img, "-f -y"), 0);    /* nothing to repair: nothing written */
	ck_assert_int_eq(fsck(img, "-n -y"), 16);
	ck_assert_int_eq(fsck(img, "-f -q"), 16);
	char *none = tu_path("none.img");   /* no such device */
	ck_assert_int_eq(fsck(none, "-n"), 8);
	free(none);
	free(img);
}
END_TEST

static void cp_plus_one(struct zf_checkpoint *cp)
{
	cp->valid_block_count = zf_cpu_to_le64(zf_le64_to_cpu(cp->valid_block_count) + 1);
	cp->valid_inode_count = zf_cpu_to_le32(zf_le32_to_cpu(cp->valid_inode_count) + 1);
}

/* Where the newest checkpoint pack starts. */
static uint64_t newest_pack(const char *img)
{
	uint8_t blk[ZF_BLKSIZE];
	uint64_t at[2], ver[2];

	tu_blk_read(img, 0, blk);
	uint32_t cp0 = zf_le32_to_cpu(((struct zf_super *)(blk + ZF_SUPER_OFFSET))->cp_blkaddr);
	for (int k = 0; k < 2; k++) {
		at[k] = cp0 + (uint64_t)k * ZF_BLKS_PER_SEG;
		tu_blk_read(img, at[k], blk);
		ver[k] = zf_cp_crc_ok(blk) ? zf_le64_to_cpu(((struct zf_checkpoint *)blk)->checkpoint_ver)
					   : 0;
	}
	return at[ver[1] > ver[0]];
}

/* Edit the newest checkpoint pack (head and tail), checksum made right. */
static void edit_cp(const char *img, void (*edit)(struct zf_checkpoint *))
{
	uint8_t blk[ZF_BLKSIZE];
	uint64_t head = newest_pack(img);

	tu_blk_read(img, head, blk);
	uint64_t tail = head + zf_le32_to_cpu(((struct zf_checkpoint *)blk)->cp_pack_total_block_count) - 1;
	uint64_t where[2] = { head, tail };
	for (int k = 0; k < 2; k++) {
		tu_blk_read(img, where[k], blk);
		edit((struct zf_checkpoint *)blk);
		zf_cp_set_crc(blk);
		tu_blk_write(img, where[k], blk);
	}
}

START_TEST(test_counts)
{
	struct tu_tree t;
	char *img = volume("counts.img", &t);

	edit_cp(img, cp_plus_one);
	uint64_t before = tu_file_hash(img);
	ck_assert_int_eq(fsck(img, "-f -n"), 4);
	ck_assert_msg(tu_file_hash(img) == before, "fsck -n wrote");
	ck_assert_int_eq(fsck(img, "-f -p"), 1);
	all_clean(img);
	check_file(img, t.big, 6 << 20);
	free(img);
}
END_TEST

/*
 * nat_bits that lie (NAT block 0 said to be empty): reported, and a repair
 * drops them (the checkpoint rewritten without CP_NAT_BITS_FLAG); the next
 * mount reads the whole NAT and its checkpoint writes true ones.
 */
START_TEST(test_nat_bits)
{
	struct tu_tree t;
	char *img = volume("natbits.img", &t);
	uint8_t blk[ZF_BLKSIZE];
	uint64_t bits = newest_pack(img) + ZF_BLKS_PER_SEG - 1;   /* one block on this volume */

	ck_assert_int_eq(fsck(img, "-f -n"), 0);
	tu_blk_read(img, bits, blk);
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	ck_assert(sbi->nat_bits_found);
	uint32_t bytes = sbi->nat_bits_bytes;
	ck_assert_uint_eq(sbi->nat_bits_blocks, 1);
	tu_fs_unmount(sbi);
	blk[8 + bytes] |= 1;   /* block 0's empty bit */
	bits = newest_pack(img) + ZF_BLKS_PER_SEG - 1;
	uint8_t now[ZF_BLKSIZE];
	tu_blk_read(img, bits, now);
	memcpy(now + 8, blk + 8, 2 * bytes);   /* the new stamp, the lie */
	tu_blk_write(img, bits, now);
	ck_assert_int_eq(fsck(img, "-f -n"), 4);
	ck_assert_int_eq(fsck(img, "-f -p"), 1);
	all_clean(img);
	sbi = tu_fs_mount(img, 0);
	ck_assert(!sbi->nat_bits_found);
	tu_fs_unmount(sbi);
	all_clean(img);
	sbi = tu_fs_mount(img, 0);
	ck_assert(sbi->nat_bits_found);
	tu_fs_unmount(sbi);
	check_file(img, t.big, 6 << 20);
	free(img);
}
END_TEST

/* Edit inode ino's block on img. */
static void edit_inode(const char *img, uint32_t ino, void (*edit)(struct zf_inode *ri, uint32_t arg),
		       uint32_t arg)
{
	uint8_t blk[ZF_BLKSIZE];
	uint32_t at = tu_node_addr(img, ino);

	tu_blk_read(img, at, blk);
	edit(&((struct zf_node *)blk)->i, arg);
	tu_blk_write(img, at, blk);
}

static void set_links(struct zf_inode *ri, uint32_t n) { ri->i_links = zf_cpu_to_le32(n); }

START_TEST(test_links)
{
	struct tu_tree t;
	char *img = volume("links.img", &t);

	edit_inode(img, t.file, set_links, 5);
	ck_assert_int_eq(fsck(img, "-f -n"), 4);
	ck_assert_int_eq(fsck(img, "-f -p"), 1);
	all_clean(img);
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi;
	ck_assert_int_eq(zlfs_iget(sbi, t.file, &zi), 0);
	ck_assert_uint_eq(zf_le32_to_cpu(zi_raw(zi)->i_links), 1);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/*
 * Clear the bitmap bit of `name` in the root directory (inline, or its
 * first blocks), or, with ftype, give its entry that file type instead.
 */
static void edit_root_entry(const char *img, const char *name, uint8_t ftype)
{
	uint8_t blk[ZF_BLKSIZE], db[ZF_BLKSIZE];
	uint32_t at = tu_node_addr(img, ZF_ROOT_INO);
	struct zf_inode *ri = &((struct zf_node *)blk)->i;
	size_t len = strlen(name);

	tu_blk_read(img, at, blk);
	if (ri->i_inline & ZF_INLINE_DENTRY) {
		struct zf_inline_dentry *d = (struct zf_inline_dentry *)&ri->i_addr[ZF_INLINE_RESERVED];
		for (unsigned int i = 0; i < ZF_NR_INLINE_DENTRY; i++)
			if (zf_le_bit_test(d->bitmap, i) && zf_le16_to_cpu(d->dentry[i].name_len) == len &&
			    !memcmp(d->filename[i], name, len)) {
				if (ftype)
					d->dentry[i].file_type = ftype;
				else
					zf_le_bit_clear(d->bitmap, i);
				tu_blk_write(img, at, blk);
				return;
			}
	} else {
		for (unsigned int b = 0; b < 8 && ri->i_addr[b]; b++) {
			struct zf_dentry_block *d = (struct zf_dentry_block *)db;
			tu_blk_read(img, zf_le32_to_cpu(ri->i_addr[b]), db);
			for (unsigned int i = 0; i < ZF_NR_DENTRY_IN_BLOCK; i++)
				if (zf_le_bit_test(d->bitmap, i) &&
				    zf_le16_to_cpu(d->dentry[i].name_len) == len &&
				    !memcmp(d->filename[i], name, len)) {
					if (ftype)
						d->dentry[i].file_type = ftype;
					else
						zf_le_bit_clear(d->bitmap, i);
					tu_blk_write(img, zf_le32_to_cpu(ri->i_addr[b]), db);
					return;
				}
		}
	}
	ck_abort_msg("no entry %s in the root", name);
}

START_TEST(test_lost_found)
{
	struct tu_tree t;
	char *img = volume("lost.img", &t);
	char name[32];

	edit_root_entry(img, "big", 0);
	ck_assert_int_eq(fsck(img, "-f -n"), 4);
	ck_assert_int_eq(fsck(img, "-f -p"), 1);
	all_clean(img);
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	uint32_t lf = tu_lookup(sbi, ZF_ROOT_INO, "lost+found");
	snprintf(name, sizeof(name), "#%u", t.big);
	ck_assert_uint_eq(tu_lookup(sbi, lf, name), t.big);
	tu_fs_unmount(sbi);
	check_file(img, t.big, 6 << 20);
	free(img);
}
END_TEST

/* An entry whose file type is not its inode's: -y removes it, the inode goes to /lost+found. */
START_TEST(test_ftype)
{
	struct tu_tree t;
	char *img = volume("ftype.img", &t);
	char name[32];

	edit_root_entry(img, "f", ZF_FT_SYMLINK);
	ck_assert_int_eq(fsck(img, "-f -n"), 4);
	ck_assert_int_eq(fsck(img, "-f -y"), 1);
	all_clean(img);
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	snprintf(name, sizeof(name), "#%u", t.file);
	ck_assert_uint_eq(tu_lookup(sbi, tu_lookup(sbi, ZF_ROOT_INO, "lost+found"), name), t.file);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

static void take_addr(struct zf_inode *ri, uint32_t addr) { ri->i_addr[0] = zf_cpu_to_le32(addr); }

START_TEST(test_duplicate)
{
	struct tu_tree t;
	char *img = volume("dup.img", &t);
	uint8_t blk[ZF_BLKSIZE];

	tu_blk_read(img, tu_node_addr(img, t.file), blk);
	uint32_t shared = zf_le32_to_cpu(((struct zf_node *)blk)->i.i_addr[0]);
	tu_blk_read(img, tu_node_addr(img, t.big), blk);
	uint32_t lost = zf_le32_to_cpu(((struct zf_node *)blk)->i.i_addr[0]);
	ck_assert_uint_ne(shared, 0);
	ck_assert_uint_ne(lost, 0);
	edit_inode(img, t.big, take_addr, shared);   /* big's first block is now f's too */
	ck_assert_int_eq(fsck(img, "-f -p"), 4);        /* clearing a pointer loses a block */
	ck_assert_int_eq(fsck(img, "-f -y"), 1);
	all_clean(img);
	check_file(img, t.file, 65536);
	free(img);
}
END_TEST

static void zero_blocks(struct zf_inode *ri, uint32_t unused)
{
	(void)unused;
	ri->i_blocks = 0;
}

START_TEST(test_bad_inode)
{
	struct tu_tree t;
	char *img = volume("bad.img", &t);

	edit_inode(img, t.link, zero_blocks, 0);
	ck_assert_int_eq(fsck(img, "-f -p"), 4);   /* removing the entry loses a name */
	ck_assert_int_eq(fsck(img, "-f -y"), 1);
	all_clean(img);
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *root;
	uint32_t ino;
	uint8_t ft;
	ck_assert_int_eq(zlfs_iget(sbi, ZF_ROOT_INO, &root), 0);
	ck_assert_int_eq(zlfs_dir_lookup(sbi, root, "l", 1, &ino, &ft), -ENOENT);
	tu_fs_unmount(sbi);
	check_file(img, t.file, 65536);
	free(img);
}
END_TEST

static void set_reserved(struct zf_inode *ri, uint32_t v)
{
	ri->i_addr[zf_extra_isize_words(ri)] = zf_cpu_to_le32(v);
}

/*
 * An inline file whose reserved word (block 0's slot once converted) is
 * not 0: reported, cleared by -y (fsck.f2fs's "wrong inline reserve
 * blkaddr"); the file then reads and converts as any other.
 */
START_TEST(test_inline_reserved)
{
	struct tu_tree t;
	char *img = volume("inline-reserved.img", &t);
	char buf[16];
	size_t got;

	edit_inode(img, t.inl, set_reserved, 4242);
	ck_assert_int_eq(fsck(img, "-f -n"), 4);
	ck_assert_int_eq(fsck(img, "-f -y"), 1);
	all_clean(img);
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi;
	ck_assert_int_eq(zlfs_iget(sbi, t.inl, &zi), 0);
	ck_assert(zi_raw(zi)->i_inline & ZF_INLINE_DATA);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, buf, sizeof(buf), 0, &got), 0);
	ck_assert(got == 4 && !memcmp(buf, "tiny", 4));
	static char big[8192];
	ck_assert_int_eq(zlfs_file_write(sbi, zi, big, sizeof(big), 4), 0);   /* converts */
	ck_assert_int_eq(sbi->fatal, 0);
	tu_fs_unmount(sbi);
	all_clean(img);
	free(img);
}
END_TEST

START_TEST(test_ssa)
{
	struct tu_tree t;
	char *img = volume("ssa.img", &t);
	uint8_t blk[ZF_BLKSIZE];

	/* big's first block, in a segment no log holds any more (6 MiB spans segments) */
	tu_blk_read(img, tu_node_addr(img, t.big), blk);
	uint32_t addr = zf_le32_to_cpu(((struct zf_node *)blk)->i.i_addr[0]);
	tu_blk_read(img, 0, blk);
	const struct zf_super *sb = (const struct zf_super *)(blk + ZF_SUPER_OFFSET);
	uint32_t rel = addr - zf_le32_to_cpu(sb->main_blkaddr);
	uint64_t ssa = zf_le32_to_cpu(sb->ssa_blkaddr) + rel / ZF_BLKS_PER_SEG;
	tu_blk_read(img, ssa, blk);
	struct zf_summary_block *s = (struct zf_summary_block *)blk;
	s->entries[rel % ZF_BLKS_PER_SEG].nid = zf_cpu_to_le32(t.file);
	tu_blk_write(img, ssa, blk);
	ck_assert_int_eq(fsck(img, "-f -n"), 4);
	ck_assert_int_eq(fsck(img, "-f -p"), 1);
	all_clean(img);
	free(img);
}
END_TEST

START_TEST(test_superblock)
{
	struct tu_tree t;
	char *img = volume("sb.img", &t);
	uint8_t b0[ZF_BLKSIZE], b1[ZF_BLKSIZE];

	tu_blk_read(img, 0, b0);
	((struct zf_super *)(b0 + ZF_SUPER_OFFSET))->segment_count_main = zf_cpu_to_le32(12345);
	tu_blk_write(img, 0, b0);
	ck_assert_int_eq(fsck(img, "-f -n"), 4);
	ck_assert_int_eq(fsck(img, "-f -p"), 1);
	all_clean(img);
	tu_blk_read(img, 0, b0);
	tu_blk_read(img, 1, b1);
	ck_assert(!memcmp(b0 + ZF_SUPER_OFFSET, b1 + ZF_SUPER_OFFSET, sizeof(struct zf_super)));
	free(img);
}
END_TEST

/* A zone no file uses, written to behind zlfs's back: -n reports it, -p has it reset. */
START_TEST(test_zone_reset)
{
	struct tu_tree t;
	char *img = volume("zone.img", &t);
	struct zlfs_zdev *dev;
	struct zlfs_zone z;
	uint32_t nr = 1;
	void *buf = aligned_alloc(ZF_BLKSIZE, ZF_BLKSIZE);

	ck_assert_int_eq(zlfs_zdev_open(img, &dev), 0);
	uint32_t last = zlfs_zdev_geom(dev)->nr_zones - 1;
	ck_assert_int_eq(zlfs_zdev_report(dev, last, &z, &nr), 0);
	ck_assert_int_eq(z.cond, ZLFS_ZC_EMPTY);
	memset(buf, 0x5a, ZF_BLKSIZE);
	ck_assert_int_eq(zlfs_zdev_write(dev, buf, ZF_BLKSIZE, z.start), 0);
	zlfs_zdev_close(dev);
	ck_assert_int_eq(fsck(img, "-f -n"), 4);
	ck_assert_int_eq(fsck(img, "-f -p"), 1);
	all_clean(img);
	ck_assert_int_eq(zlfs_zdev_open(img, &dev), 0);
	nr = 1;
	ck_assert_int_eq(zlfs_zdev_report(dev, last, &z, &nr), 0);
	ck_assert_int_eq(z.cond, ZLFS_ZC_EMPTY);
	zlfs_zdev_close(dev);
	free(buf);
	free(img);
}
END_TEST

/* Lines of img.log holding what (a substring). */
static int log_lines(const char *img, const char *what)
{
	char path[1024], line[4096];
	int n = 0;

	snprintf(path, sizeof(path), "%s.log", img);
	FILE *fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	while (fgets(line, sizeof(line), fp))
		n += strstr(line, what) != NULL;
	fclose(fp);
	return n;
}

/*
 * Every kind of problem is printed 20 times at most, then "... N in all":
 * 300 wrong link counts (every file of /d) give 20 lines and the count;
 * -v gives all 300; -p repairs all 300 (the cap is on lines, not repairs).
 */
START_TEST(test_cap)
{
	struct tu_tree t;
	char *img = volume("cap.img", &t);
	uint32_t ino[300];
	char name[32];

	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "entry-%d", i);
		ino[i] = tu_lookup(sbi, t.dir, name);
	}
	tu_fs_unmount(sbi);
	for (int i = 0; i < 300; i++)
		edit_inode(img, ino[i], set_links, 5);
	ck_assert_int_eq(fsck(img, "-f -n"), 4);
	ck_assert_int_eq(log_lines(img, ": i_links 5, counted 1"), 21);
	ck_assert_int_eq(log_lines(img, "... 300 in all like \"inode "), 1);
	ck_assert_int_eq(fsck(img, "-f -n -v"), 4);
	ck_assert_int_eq(log_lines(img, ": i_links 5, counted 1"), 300);
	ck_assert_int_eq(log_lines(img, " in all like "), 0);
	ck_assert_int_eq(fsck(img, "-f -p"), 1);
	all_clean(img);
	free(img);
}
END_TEST

static void set_mode(struct zf_inode *ri, uint32_t mode) { ri->i_mode = zf_cpu_to_le16((uint16_t)mode); }

/*
 * A root that is not a directory (i_mode a regular file's, or 0): no
 * repair (exit 4 with -y, nothing written: a repair would free what only
 * dump.f2fs can still copy out), and the verdict says so and what to do.
 */
START_TEST(test_root_gone)
{
	static const uint32_t modes[] = { 0100644, 0 };
	struct tu_tree t;
	char buf[64];

	for (int k = 0; k < 2; k++) {
		snprintf(buf, sizeof(buf), "root%d.img", k);
		char *img = volume(buf, &t);
		edit_inode(img, ZF_ROOT_INO, set_mode, modes[k]);
		uint64_t before = tu_file_hash(img);
		ck_assert_int_eq(fsck(img, "-f -n"), 4);
		ck_assert_int_eq(log_lines(img, "the root directory is missing or not a directory: "
					   "fsck.zlfs cannot rebuild it"), 1);
		ck_assert_int_eq(fsck(img, "-f -y"), 4);
		ck_assert_int_eq(log_lines(img, "nothing was repaired"), 1);
		ck_assert_int_eq(log_lines(img, "restore the volume from a backup"), 1);
		/* the files of the root's tree are intact: dump.f2fs is named for them */
		ck_assert_int_eq(log_lines(img, "inodes are intact but in no directory"), 1);
		ck_assert_int_eq(log_lines(img, "\"dump.f2fs -i 0x"), 1);
		ck_assert_msg(tu_file_hash(img) == before, "fsck -y wrote to a volume without a root");
		free(img);
	}
}
END_TEST

static Suite *fsck_suite(void)
{
	Suite *s = suite_create("fsck");
	TCase *tc = tcase_create("fsck");
	tcase_add_test(tc, test_clean);
	tcase_add_test(tc, test_nat_bits);
	tcase_add_test(tc, test_counts);
	tcase_add_test(tc, test_links);
	tcase_add_test(tc, test_lost_found);
	tcase_add_test(tc, test_ftype);
	tcase_add_test(tc, test_duplicate);
	tcase_add_test(tc, test_bad_inode);
	tcase_add_test(tc, test_inline_reserved);
	tcase_add_test(tc, test_ssa);
	tcase_add_test(tc, test_superblock);
	tcase_add_test(tc, test_zone_reset);
	tcase_add_test(tc, test_cap);
	tcase_add_test(tc, test_root_gone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	tu_mkfs_opts = TU_PLAIN_FEATURES;   /* the damage is made at raw inode offsets */
	return tu_run(fsck_suite());
}
