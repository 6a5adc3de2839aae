/*
 * test_checkpoint.c - the checkpoint pack codec (fs/f2fs/cp_pack.c) over
 * an in-memory device, and checkpoint.c in-process on volumes made by
 * mkfs.zlfs: which pack is the checkpoint (the newer intact one; a torn
 * pack, head and tail versions differing or a crc bad, loses to the
 * older; neither intact is a clear error), and what a pack written is
 * read back the same.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "zlfs/f2fs_cp_pack.h"
#include "testutil.h"
#include "fsutil.h"

/* The codec's device: two pack segments in memory; reads of block `fail_at` fail. */
#define MEM_BLOCKS (2 * ZF_BLKS_PER_SEG)
struct mem {
	uint8_t blk[MEM_BLOCKS][ZF_BLKSIZE];
	uint64_t fail_at;
	unsigned int flushes;
};

static int mem_read(void *ctx, uint64_t a, void *buf)
{
	struct mem *m = ctx;

	if (a >= MEM_BLOCKS || a == m->fail_at)
		return -EIO;
	memcpy(buf, m->blk[a], ZF_BLKSIZE);
	return 0;
}

static int mem_write(void *ctx, uint64_t a, const void *buf)
{
	struct mem *m = ctx;

	if (a >= MEM_BLOCKS)
		return -EIO;
	memcpy(m->blk[a], buf, ZF_BLKSIZE);
	return 0;
}

static int mem_flush(void *ctx)
{
	((struct mem *)ctx)->flushes++;
	return 0;
}

static struct mem *mem_new(struct zf_cp_io *io)
{
	struct mem *m = calloc(1, sizeof(*m));

	ck_assert_ptr_nonnull(m);
	m->fail_at = UINT64_MAX;
	*io = (struct zf_cp_io){ .ctx = m, .read = mem_read, .write = mem_write, .flush = mem_flush };
	return m;
}

/* Summaries whose entries say which log and entry they are. */
static struct zf_summary_block sums[ZF_NR_LOGS];

static void fill_sums(void)
{
	memset(sums, 0, sizeof(sums));
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		for (int j = 0; j < ZF_ENTRIES_IN_SUM; j++)
			sums[i].entries[j].nid = zf_cpu_to_le32((uint32_t)(i << 16 | j));
		sums[i].footer.entry_type = zf_log_is_node((unsigned int)i) ? ZF_SUM_TYPE_NODE
									    : ZF_SUM_TYPE_DATA;
	}
}

/* A pack of version ver into slot pack, with norph orphans (ino 100 + i); the tail if `tail`. */
static void write_pack(const struct zf_cp_io *io, int pack, uint64_t ver, uint32_t norph,
		       bool umount, bool tail)
{
	uint8_t head[ZF_BLKSIZE];
	struct zf_checkpoint *cp = (struct zf_checkpoint *)head;
	uint32_t *orph = calloc(norph + 1, sizeof(*orph));
	struct zf_cp_pack_body body = { .orphans = orph, .norphans = norph, .umount = umount };

	ck_assert_ptr_nonnull(orph);
	for (uint32_t i = 0; i < norph; i++)
		orph[i] = 100 + i;
	for (int i = 0; i < ZF_NR_LOGS; i++)
		body.sums[i] = &sums[i];
	memset(head, 0, sizeof(head));
	cp->checkpoint_ver = zf_cpu_to_le64(ver);
	cp->checksum_offset = zf_cpu_to_le32(ZF_CP_CHKSUM_OFFSET);
	cp->ckpt_flags = zf_cpu_to_le32((umount ? ZF_CP_UMOUNT_FLAG : 0) |
					(norph ? ZF_CP_ORPHAN_PRESENT_FLAG : 0));
	uint64_t start = zf_cp_pack_addr(0, pack);
	ck_assert_int_eq(zf_cp_pack_write_body(io, start, head, &body), 0);
	if (tail)
		ck_assert_int_eq(zf_cp_pack_write_tail(io, start, head), 0);
	free(orph);
}

/* zf_cp_packs_read over the memory device, without zf_check_cp. */
static int read_packs(const struct zf_cp_io *io, struct zf_cp_pack_state st[2], uint8_t h[2][ZF_BLKSIZE])
{
	void *p[2] = { h[0], h[1] };

	return zf_cp_packs_read(io, 0, 0, NULL, p, st);
}

START_TEST(pack_counts_are_named)
{
	/* head, payload, orphans, 3 data summaries, 3 node summaries (umount), tail */
	ck_assert_uint_eq(zf_cp_pack_start_sum(2, 1), 4);
	ck_assert_uint_eq(zf_cp_pack_total(2, 1, false), 4 + 3 + 1);
	ck_assert_uint_eq(zf_cp_pack_total(0, 0, true), 1 + 3 + 3 + 1);
	ck_assert_uint_eq(zf_cp_orphan_blocks(0), 0);
	ck_assert_uint_eq(zf_cp_orphan_blocks(ZF_ORPHANS_PER_BLOCK), 1);
	ck_assert_uint_eq(zf_cp_orphan_blocks(ZF_ORPHANS_PER_BLOCK + 1), 2);
	ck_assert_uint_eq(zf_cp_pack_addr(1000, 1), 1000 + ZF_BLKS_PER_SEG);
}
END_TEST

START_TEST(choice_rule)
{
	struct zf_cp_pack_state st[2] = { { .err = 0, .ver = 5 }, { .err = 0, .ver = 6 } };

	ck_assert_int_eq(zf_cp_pack_choose(st), 1);
	st[0].ver = 7;
	ck_assert_int_eq(zf_cp_pack_choose(st), 0);
	st[1].ver = 7;                     /* a tie: pack 0 */
	ck_assert_int_eq(zf_cp_pack_choose(st), 0);
	st[0].err = -EUCLEAN;              /* an invalid pack never wins, however new */
	st[0].ver = 99;
	ck_assert_int_eq(zf_cp_pack_choose(st), 1);
	st[1].err = -EIO;
	ck_assert_int_eq(zf_cp_pack_choose(st), -1);
}
END_TEST

START_TEST(round_trip)
{
	struct zf_cp_io io;
	struct mem *m = mem_new(&io);
	struct zf_cp_pack_state st[2];
	static uint8_t h[2][ZF_BLKSIZE];
	uint32_t norph = ZF_ORPHANS_PER_BLOCK + 5;   /* two orphan blocks */

	fill_sums();
	write_pack(&io, 1, 9, norph, true, true);
	ck_assert_uint_eq(m->flushes, 2);           /* the body's before the tail, the tail's */
	ck_assert_int_eq(read_packs(&io, st, h), 1);
	ck_assert_int_eq(st[0].err, -EUCLEAN);      /* pack 0: never written */
	ck_assert_int_eq(st[1].err, 0);
	ck_assert_uint_eq(st[1].ver, 9);
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)h[1];
	ck_assert_uint_eq(zf_le32_to_cpu(cp->cp_pack_start_sum), 1 + 2);
	ck_assert_uint_eq(zf_le32_to_cpu(cp->cp_pack_total_block_count), 3 + 3 + 3 + 1);

	/* summaries: every log's, the node logs' because it was a clean unmount */
	static struct zf_summary_block back[ZF_NR_LOGS];
	struct zf_summary_block *bp[ZF_NR_LOGS];
	struct zf_journal nat_j, sit_j;
	uint32_t off[ZF_NR_DATA_LOGS] = { 0, 0, 0 };
	memset(back, 0, sizeof(back));
	for (int i = 0; i < ZF_NR_LOGS; i++)
		bp[i] = &back[i];
	ck_assert_int_eq(zf_cp_pack_read_sums(&io, zf_cp_pack_addr(0, 1), cp, off, bp, &nat_j, &sit_j), 0);
	for (int i = 0; i < ZF_NR_LOGS; i++)
		ck_assert_mem_eq(back[i].entries, sums[i].entries, sizeof(sums[i].entries));
	ck_assert_uint_eq(zf_le16_to_cpu(nat_j.n_nats), 0);    /* journals empty */
	ck_assert_uint_eq(zf_le16_to_cpu(sit_j.n_sits), 0);

	/* orphans: two blocks, every inode number in order, checksummed */
	ck_assert_uint_eq(zf_cp_pack_orphan_blocks(cp, 0), 2);
	uint32_t seen = 0;
	for (uint32_t b = 0; b < 2; b++) {
		const struct zf_orphan_block *ob =
			(const struct zf_orphan_block *)m->blk[zf_cp_pack_addr(0, 1) + 1 + b];
		uint32_t cnt;
		ck_assert_int_eq(zf_cp_orphan_count(ob, &cnt), 0);
		ck_assert_uint_eq(zf_le16_to_cpu(ob->blk_addr), b + 1);
		ck_assert_uint_eq(zf_le16_to_cpu(ob->blk_count), 2);
		ck_assert_uint_eq(zf_le32_to_cpu(ob->check_sum),
				  zf_crc32(ZF_SUPER_MAGIC, ob, offsetof(struct zf_orphan_block, check_sum)));
		for (uint32_t i = 0; i < cnt; i++, seen++)
			ck_assert_uint_eq(zf_le32_to_cpu(ob->ino[i]), 100 + seen);
	}
	ck_assert_uint_eq(seen, norph);
	free(m);
}
END_TEST

START_TEST(node_summaries_only_at_umount)
{
	struct zf_cp_io io;
	struct mem *m = mem_new(&io);
	struct zf_cp_pack_state st[2];
	static uint8_t h[2][ZF_BLKSIZE];

	fill_sums();
	write_pack(&io, 0, 3, 0, false, true);
	ck_assert_int_eq(read_packs(&io, st, h), 0);
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)h[0];
	ck_assert_uint_eq(zf_le32_to_cpu(cp->cp_pack_total_block_count), 1 + 3 + 1);
	ck_assert_uint_eq(zf_cp_pack_orphan_blocks(cp, 0), 0);
	static struct zf_summary_block back[ZF_NR_LOGS];
	struct zf_summary_block *bp[ZF_NR_LOGS];
	struct zf_journal nat_j, sit_j;
	uint32_t off[ZF_NR_DATA_LOGS] = { 0, 0, 0 };
	memset(back, 0, sizeof(back));
	for (int i = 0; i < ZF_NR_LOGS; i++)
		bp[i] = &back[i];
	ck_assert_int_eq(zf_cp_pack_read_sums(&io, 0, cp, off, bp, &nat_j, &sit_j), 0);
	ck_assert_mem_eq(back[ZF_LOG_WARM_DATA].entries, sums[ZF_LOG_WARM_DATA].entries,
			 sizeof(sums[0].entries));
	ck_assert_uint_eq(back[ZF_LOG_HOT_NODE].entries[5].nid, 0);   /* left alone */
	free(m);
}
END_TEST

START_TEST(compact_summaries_read)
{
	struct zf_cp_io io;
	struct mem *m = mem_new(&io);
	uint8_t head[ZF_BLKSIZE];
	struct zf_checkpoint *cp = (struct zf_checkpoint *)head;
	uint32_t off[ZF_NR_DATA_LOGS] = { 300, 0, 400 };   /* 700 entries: three blocks */

	/* journals, then entries back to back, a block's footer bytes skipped */
	memset(head, 0, sizeof(head));
	cp->ckpt_flags = zf_cpu_to_le32(ZF_CP_COMPACT_SUM_FLAG);
	cp->cp_pack_start_sum = zf_cpu_to_le32(1);
	cp->cp_pack_total_block_count = zf_cpu_to_le32(1 + 3 + 1);
	m->blk[1][0] = 7;                                  /* n_nats, low byte */
	m->blk[1][ZF_SUM_JOURNAL_SIZE] = 2;                /* n_sits, low byte */
	uint64_t a = 1;
	size_t pos = 2 * ZF_SUM_JOURNAL_SIZE;
	for (int log = 0; log < ZF_NR_DATA_LOGS; log++)
		for (uint32_t j = 0; j < off[log]; j++) {
			if (pos + ZF_SUMMARY_SIZE > ZF_BLKSIZE - ZF_SUM_FOOTER_SIZE) {
				a++;
				pos = 0;
			}
			struct zf_summary e = { .nid = zf_cpu_to_le32((uint32_t)(log << 16 | j)) };
			memcpy(&m->blk[a][pos], &e, ZF_SUMMARY_SIZE);
			pos += ZF_SUMMARY_SIZE;
		}
	static struct zf_summary_block back[ZF_NR_LOGS];
	struct zf_summary_block *bp[ZF_NR_LOGS];
	struct zf_journal nat_j, sit_j;
	memset(back, 0, sizeof(back));
	for (int i = 0; i < ZF_NR_LOGS; i++)
		bp[i] = &back[i];
	ck_assert_int_eq(zf_cp_pack_read_sums(&io, 0, cp, off, bp, &nat_j, &sit_j), 0);
	ck_assert_uint_eq(zf_le16_to_cpu(nat_j.n_nats), 7);
	ck_assert_uint_eq(zf_le16_to_cpu(sit_j.n_sits), 2);
	for (int log = 0; log < ZF_NR_DATA_LOGS; log++)
		for (uint32_t j = 0; j < off[log]; j++)
			ck_assert_uint_eq(zf_le32_to_cpu(back[log].entries[j].nid), (uint32_t)(log << 16 | j));
	free(m);
}
END_TEST

START_TEST(newer_intact_pack_wins)
{
	struct zf_cp_io io;
	struct mem *m = mem_new(&io);
	struct zf_cp_pack_state st[2];
	static uint8_t h[2][ZF_BLKSIZE];

	fill_sums();
	write_pack(&io, 0, 5, 0, false, true);
	write_pack(&io, 1, 6, 0, false, true);
	ck_assert_int_eq(read_packs(&io, st, h), 1);
	ck_assert_uint_eq(st[0].ver, 5);
	ck_assert_uint_eq(st[1].ver, 6);
	write_pack(&io, 0, 7, 0, false, true);
	ck_assert_int_eq(read_packs(&io, st, h), 0);
	ck_assert_uint_eq(zf_le64_to_cpu(((struct zf_checkpoint *)h[0])->checkpoint_ver), 7);
	free(m);
}
END_TEST

START_TEST(torn_pack_loses)
{
	struct zf_cp_io io;
	struct mem *m = mem_new(&io);
	struct zf_cp_pack_state st[2];
	static uint8_t h[2][ZF_BLKSIZE];

	fill_sums();
	write_pack(&io, 0, 5, 0, false, true);
	write_pack(&io, 1, 6, 0, false, true);
	/* version 7 into pack 0, cut before its tail: the old tail (5) is there */
	write_pack(&io, 0, 7, 0, false, false);
	ck_assert_int_eq(read_packs(&io, st, h), 1);
	ck_assert_int_eq(st[0].err, -EUCLEAN);
	ck_assert_str_eq(st[0].why, "head and tail differ (torn)");
	ck_assert_uint_eq(st[1].ver, 6);

	/* the tail written: 7 wins; then a bad crc in its tail loses to 6 */
	write_pack(&io, 0, 7, 0, false, true);
	ck_assert_int_eq(read_packs(&io, st, h), 0);
	m->blk[4][100] ^= 1;                     /* pack 0: 1 + 3 summaries, tail at 4 */
	ck_assert_int_eq(read_packs(&io, st, h), 1);
	ck_assert_str_eq(st[0].why, "head and tail differ (torn)");

	/* a bad crc in the head */
	m->blk[4][100] ^= 1;
	m->blk[0][200] ^= 1;
	ck_assert_int_eq(read_packs(&io, st, h), 1);
	ck_assert_str_eq(st[0].why, "bad checksum");

	/* a total past the segment is not followed */
	m->blk[0][200] ^= 1;
	ck_assert_int_eq(read_packs(&io, st, h), 0);
	struct zf_checkpoint *cp = (struct zf_checkpoint *)m->blk[0];
	cp->cp_pack_total_block_count = zf_cpu_to_le32(ZF_BLKS_PER_SEG + 1);
	zf_cp_set_crc(cp);
	ck_assert_int_eq(read_packs(&io, st, h), 1);
	ck_assert_int_eq(st[0].err, -EUCLEAN);
	free(m);
}
END_TEST

START_TEST(no_intact_pack)
{
	struct zf_cp_io io;
	struct mem *m = mem_new(&io);
	struct zf_cp_pack_state st[2];
	static uint8_t h[2][ZF_BLKSIZE];

	fill_sums();
	write_pack(&io, 0, 5, 0, false, true);
	write_pack(&io, 1, 6, 0, false, true);
	m->blk[0][10] ^= 1;
	m->fail_at = ZF_BLKS_PER_SEG;            /* pack 1's head unreadable */
	ck_assert_int_eq(read_packs(&io, st, h), -EUCLEAN);
	ck_assert_str_eq(st[0].why, "bad checksum");
	ck_assert_int_eq(st[1].err, -EIO);
	ck_assert_str_eq(st[1].why, "unreadable");
	free(m);
}
END_TEST

START_TEST(pack_too_big)
{
	struct zf_cp_io io;
	struct mem *m = mem_new(&io);
	uint8_t head[ZF_BLKSIZE];
	struct zf_cp_pack_body body = { .norphans = ZF_ORPHANS_PER_BLOCK * (ZF_BLKS_PER_SEG - 4) };

	fill_sums();
	for (int i = 0; i < ZF_NR_LOGS; i++)
		body.sums[i] = &sums[i];
	memset(head, 0, sizeof(head));
	ck_assert_int_eq(zf_cp_pack_write_body(&io, 0, head, &body), -ENOSPC);
	ck_assert_uint_eq(m->flushes, 0);
	free(m);
}
END_TEST

/* ---- checkpoint.c on a volume ---- */

static void read_super(const char *img, struct zf_super *sb)
{
	uint8_t blk[ZF_BLKSIZE];

	tu_blk_read(img, 0, blk);
	memcpy(sb, blk + ZF_SUPER_OFFSET, sizeof(*sb));
}

/* Pack k's head of img; its version. */
static uint64_t pack_ver(const char *img, int k, uint8_t *head)
{
	struct zf_super sb;

	read_super(img, &sb);
	tu_blk_read(img, zf_cp_pack_addr(zf_le32_to_cpu(sb.cp_blkaddr), k), head);
	return zf_le64_to_cpu(((struct zf_checkpoint *)head)->checkpoint_ver);
}

/* img mounted read-only: the checkpoint as loaded, no new one written by the mount. */
static struct zlfs_sb *mount_ro(const char *img)
{
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	char err[256];

	zlfs_opts_inprocess(&o);
	o.ro = true;
	ck_assert_msg(zlfs_mount(img, &o, &sbi, err, sizeof(err)) == 0, "mount: %s", err);
	pthread_mutex_lock(&sbi->lock);
	return sbi;
}

static uint32_t make_file(struct zlfs_sb *sbi, const char *name)
{
	static const struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *zi;
	char buf[10000];

	memset(buf, 'c', sizeof(buf));
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, name, S_IFREG | 0644, 0, NULL, &zi), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, buf, sizeof(buf), 0), 0);
	uint32_t ino = zi->ino;
	zlfs_iput(sbi, zi, 0);
	return ino;
}

START_TEST(checkpoints_alternate_packs)
{
	char *img = tu_fs_volume_flat("alt.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	uint64_t v = sbi->cp_ver;
	int pack = sbi->cp_pack;

	make_file(sbi, "a");
	for (int i = 1; i <= 3; i++) {
		ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
		ck_assert_uint_eq(sbi->cp_ver, v + (uint64_t)i);
		ck_assert_int_eq(sbi->cp_pack, (pack + i) % 2);
	}
	uint64_t last = sbi->cp_ver;
	int last_pack = sbi->cp_pack;
	tu_fs_unmount(sbi);                      /* the unmount's checkpoint: last + 1 */
	tu_fsck_clean(img);

	uint8_t head[ZF_BLKSIZE];
	ck_assert_uint_eq(pack_ver(img, !last_pack, head), last + 1);
	ck_assert_uint_eq(zf_le32_to_cpu(((struct zf_checkpoint *)head)->ckpt_flags) & ZF_CP_UMOUNT_FLAG,
			  ZF_CP_UMOUNT_FLAG);
	ck_assert_uint_eq(pack_ver(img, last_pack, head), last);
	sbi = mount_ro(img);
	ck_assert_uint_eq(sbi->cp_ver, last + 1);
	ck_assert_int_eq(sbi->cp_pack, !last_pack);
	tu_lookup(sbi, ZF_ROOT_INO, "a");
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/*
 * The unmount's checkpoint in img torn by `tear` (0: its tail's version
 * differs, crc redone; 1: a byte of its tail flipped); the mount then
 * takes the one before, which nothing changed since.
 */
static void torn_umount_cp(int tear)
{
	char *img = tu_fs_volume_flat(tear ? "torn-crc.img" : "torn-ver.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zf_super sb;

	make_file(sbi, "kept");
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	uint64_t before = sbi->cp_ver;
	int before_pack = sbi->cp_pack;
	tu_fs_unmount(sbi);

	read_super(img, &sb);
	uint8_t head[ZF_BLKSIZE], tail[ZF_BLKSIZE];
	ck_assert_uint_eq(pack_ver(img, !before_pack, head), before + 1);
	uint32_t total = zf_le32_to_cpu(((struct zf_checkpoint *)head)->cp_pack_total_block_count);
	uint64_t at = zf_cp_pack_addr(zf_le32_to_cpu(sb.cp_blkaddr), !before_pack) + total - 1;
	tu_blk_read(img, at, tail);
	if (tear == 0) {
		((struct zf_checkpoint *)tail)->checkpoint_ver = zf_cpu_to_le64(before + 2);
		zf_cp_set_crc(tail);
	} else {
		tail[300] ^= 0x40;
	}
	tu_blk_write(img, at, tail);

	sbi = mount_ro(img);
	ck_assert_uint_eq(sbi->cp_ver, before);
	ck_assert_int_eq(sbi->cp_pack, before_pack);
	tu_lookup(sbi, ZF_ROOT_INO, "kept");
	tu_fs_unmount(sbi);
	sbi = tu_fs_mount(img, 0);               /* its checkpoint goes over the torn pack */
	ck_assert_int_eq(sbi->cp_pack, !before_pack);
	tu_lookup(sbi, ZF_ROOT_INO, "kept");
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}

START_TEST(torn_version_takes_the_older)
{
	torn_umount_cp(0);
}
END_TEST

START_TEST(torn_crc_takes_the_older)
{
	torn_umount_cp(1);
}
END_TEST

START_TEST(no_valid_checkpoint_refuses_the_mount)
{
	char *img = tu_fs_volume_flat("nocp.img");
	struct zf_super sb;
	uint8_t blk[ZF_BLKSIZE];
	struct zlfs_opts o;
	struct zlfs_sb *sbi = NULL;
	char err[256] = "";

	read_super(img, &sb);
	for (int k = 0; k < 2; k++) {
		uint64_t a = zf_cp_pack_addr(zf_le32_to_cpu(sb.cp_blkaddr), k);
		tu_blk_read(img, a, blk);
		blk[64] ^= 1;
		tu_blk_write(img, a, blk);
	}
	zlfs_opts_inprocess(&o);
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), -EUCLEAN);
	free(img);
}
END_TEST

static Suite *checkpoint_suite(void)
{
	Suite *s = suite_create("checkpoint");
	TCase *codec = tcase_create("codec");
	TCase *fs = tcase_create("checkpoint.c");

	tcase_add_test(codec, pack_counts_are_named);
	tcase_add_test(codec, choice_rule);
	tcase_add_test(codec, round_trip);
	tcase_add_test(codec, node_summaries_only_at_umount);
	tcase_add_test(codec, compact_summaries_read);
	tcase_add_test(codec, newer_intact_pack_wins);
	tcase_add_test(codec, torn_pack_loses);
	tcase_add_test(codec, no_intact_pack);
	tcase_add_test(codec, pack_too_big);
	suite_add_tcase(s, codec);
	tcase_set_timeout(fs, 600);
	tcase_add_test(fs, checkpoints_alternate_packs);
	tcase_add_test(fs, torn_version_takes_the_older);
	tcase_add_test(fs, torn_crc_takes_the_older);
	tcase_add_test(fs, no_valid_checkpoint_refuses_the_mount);
	suite_add_tcase(s, fs);
	return s;
}

int main(void)
{
	return tu_run(checkpoint_suite());
}
