/*
 * test_cluster.c - compressed files (fs/cluster.c) on a volume made with
 * mkfs.zlfs -O compression, without FUSE.
 *
 * Each algorithm at the smallest, a middle and the largest cluster:
 * writes of text and random data at unaligned offsets and lengths,
 * overwrites inside clusters, truncates into a compressed cluster,
 * growth past EOF, appends; every read matches a model of the file;
 * i_compr_blocks, i_blocks and the volume's reserved slots agree with what
 * the slots hold; text saves blocks, random data never costs more than it
 * would raw; the same after a remount, and fsck.f2fs and fsck.zlfs clean.
 * Crafted clusters (a header whose length runs past its blocks, a stream
 * whose checksum does not match under compress_chksum, a marker in a file
 * that is not compressed, a marker out of its place) are refused with
 * EUCLEAN and the volume's inconsistency note, never a crash, and fsck.zlfs
 * names each; a wrong i_compr_blocks is reported and repaired.  The policy: compress_extension / nocompress_extension and
 * the directory's +c / +m, chattr's rules, the mount options' ranges.
 * F2FS's release and reserve of the blocks, compressing and decompressing
 * a file in compress_mode=user.  fsync of a compressed file checkpoints,
 * so a crash keeps it.
 */
#include <check.h>
#include <errno.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zlfs.h"
#include "zlfs/f2fs_compress.h"
#include "checkpoint.h"
#include "inode.h"
#include "namei.h"
#include "node.h"
#include "file.h"
#include "flags.h"
#include "shutdown.h"
#include "cluster.h"
#include "testutil.h"
#include "fsutil.h"

static const struct zlfs_cred cred = { 0, 0, 0 };

static struct zlfs_sb *mount_with(const char *img, const struct zlfs_compr_opts *c, char *err,
				  size_t errlen, int *ret)
{
	struct zlfs_opts o;
	struct zlfs_sb *sbi = NULL;

	zlfs_opts_inprocess(&o);
	if (c)
		o.compr = *c;
	*ret = zlfs_mount(img, &o, &sbi, err, errlen);
	if (!*ret)
		pthread_mutex_lock(&sbi->lock);
	return sbi;
}

/* Mount with compress_extension=* (every new file compressed) and alg, log. */
static struct zlfs_sb *mount_all(const char *img, unsigned int alg, unsigned int log, bool chk)
{
	struct zlfs_compr_opts c = { .given = true, .alg_given = true, .alg = (uint8_t)alg,
				     .log = (uint8_t)log, .chksum = chk, .next = 1 };
	char err[256];
	int ret;

	strcpy(c.ext[0], "*");
	struct zlfs_sb *sbi = mount_with(img, &c, err, sizeof(err), &ret);
	ck_assert_msg(!ret, "mount: %s", err);
	return sbi;
}

static char *volume(const char *name)
{
	tu_mkfs_opts = "-O compression";
	char *img = tu_fs_volume(name);
	tu_mkfs_opts = NULL;
	return img;
}

static void fsck_both(const char *img)
{
	char cmd[1200];

	tu_fsck_clean(img);
	snprintf(cmd, sizeof(cmd), "'%s' -f -n '%s' >/dev/null 2>&1", getenv("ZLFS_FSCK"), img);
	int st = system(cmd);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fsck.zlfs on %s: %d", img, st);
}

/* fsck.zlfs -n: its exit code, and whether its report has `what` */
static int fsck_says(const char *img, const char *what, bool *found)
{
	char cmd[1200], line[512];

	snprintf(cmd, sizeof(cmd), "'%s' -f -n -v '%s' 2>&1", getenv("ZLFS_FSCK"), img);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	*found = false;
	while (fgets(line, sizeof(line), p))
		*found |= strstr(line, what) != NULL;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static struct zinode *mk(struct zlfs_sb *sbi, uint32_t dir, const char *name, mode_t mode)
{
	struct zinode *zi;

	ck_assert_int_eq(zlfs_create(sbi, &cred, dir, name, mode, 0, NULL, &zi), 0);
	return zi;
}

static struct zinode *get(struct zlfs_sb *sbi, const char *name)
{
	struct zinode *zi;

	ck_assert_int_eq(zlfs_iget(sbi, tu_lookup(sbi, ZF_ROOT_INO, name), &zi), 0);
	return zi;
}

/* Words, so the text compresses as text does (2x or better with any algorithm). */
static void text(char *buf, size_t len, unsigned int seed)
{
	static const char *w[] = { "log", "structured ", "zone ", "write ", "pointer ", "cluster ",
				   "f2fs ", "checkpoint\n", "node ", "segment ", "the ", "of " };
	size_t at = 0;

	while (at < len) {
		seed = seed * 1103515245u + 12345u;
		const char *s = w[(seed >> 16) % 12];
		size_t n = strlen(s);
		memcpy(buf + at, s, at + n <= len ? n : len - at);
		at += n;
	}
}

static void reads_as(struct zlfs_sb *sbi, struct zinode *zi, const char *want, size_t len)
{
	static char got[8 << 20];
	size_t n;

	ck_assert_uint_le(len, sizeof(got));
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(zi)->i_size), len);
	/* whole, then in odd pieces */
	ck_assert_int_eq(zlfs_file_read(sbi, zi, got, sizeof(got), 0, &n), 0);
	ck_assert_uint_eq(n, len);
	ck_assert_msg(!memcmp(got, want, len), "inode %u differs", zi->ino);
	for (size_t off = 0; off < len; off += 77777) {
		size_t k = len - off < 12345 ? len - off : 12345;
		ck_assert_int_eq(zlfs_file_read(sbi, zi, got, k, off, &n), 0);
		ck_assert_uint_eq(n, k);
		ck_assert_msg(!memcmp(got, want + off, k), "inode %u differs at %zu", zi->ino, off);
	}
}

/*
 * What the slots of zi say: i_compr_blocks (a compressed cluster's marker
 * and unused slots) checked against the inode; nothing past EOF; returns
 * its reserved slots (NEW_ADDR, COMPRESS_ADDR) for the volume's count.
 */
static uint64_t slots_agree(struct zlfs_sb *sbi, struct zinode *zi)
{
	struct zf_inode *ri = zi_raw(zi);
	unsigned int log = zlfs_cluster_log(sbi, zi), n = 1u << log;
	uint64_t size = zf_le64_to_cpu(ri->i_size), nb = (size + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
	uint64_t saved = 0, reserved = 0;
	bool incl = false;

	for (uint64_t i = 0; i < ((nb + n - 1) / n) * n + n; i++) {
		struct znode *dn;
		unsigned int ofs, nr;
		int ret = zlfs_get_dnode(sbi, zi, i, false, &dn, &ofs);
		uint32_t a = ret ? ZF_NULL_ADDR : zf_le32_to_cpu(zlfs_dnode_addrs(sbi, dn, &nr)[ofs]);
		if (log && i % n == 0)
			incl = a == ZF_COMPRESS_ADDR;
		reserved += a == ZF_NEW_ADDR || a == ZF_COMPRESS_ADDR;
		saved += incl && (a == ZF_NEW_ADDR || a == ZF_COMPRESS_ADDR);
		if (i >= nb)   /* nothing past EOF: truncation frees it all */
			ck_assert_msg(a == ZF_NULL_ADDR, "inode %u: block %llu past EOF holds %u",
				      zi->ino, (unsigned long long)i, a);
	}
	ck_assert_uint_eq(zf_le64_to_cpu(ri->i_compr_blocks), saved);
	return reserved;
}

struct model {
	const char *name;
	char *data;
	size_t len;
};

static void mwrite(struct zlfs_sb *sbi, struct model *m, const char *src, size_t len, size_t off)
{
	struct zinode *zi = get(sbi, m->name);

	ck_assert_int_eq(zlfs_file_write(sbi, zi, src, len, off), 0);
	if (off > m->len)
		memset(m->data + m->len, 0, off - m->len);
	memcpy(m->data + off, src, len);
	if (off + len > m->len)
		m->len = off + len;
}

static void mtrunc(struct zlfs_sb *sbi, struct model *m, size_t size)
{
	ck_assert_int_eq(zlfs_file_truncate(sbi, get(sbi, m->name), size), 0);
	if (size > m->len)
		memset(m->data + m->len, 0, size - m->len);
	m->len = size;
}

#define NALG 4
static const unsigned int logs[] = { 2, 5, 8 };

START_TEST(test_round_trip)
{
	unsigned int alg = (unsigned int)_i % NALG, log = logs[_i / NALG];
	char name[64];
	snprintf(name, sizeof(name), "cluster-rt-%d.img", _i);
	char *img = volume(name);
	struct zlfs_sb *sbi = mount_all(img, alg, log, alg == ZF_COMPR_ZSTD);
	static char src[2 << 20];
	struct model m[3] = { { "text", NULL, 0 }, { "rand", NULL, 0 }, { "mix", NULL, 0 } };
	const size_t csz = (size_t)ZF_BLKSIZE << log;

	for (int k = 0; k < 3; k++) {
		m[k].data = calloc(1, 8 << 20);   /* up to 5 MiB with 1 MiB clusters */
		struct zinode *zi = mk(sbi, ZF_ROOT_INO, m[k].name, S_IFREG | 0644);
		ck_assert_msg(zlfs_cluster_log(sbi, zi) == log, "%s not compressed", m[k].name);
		ck_assert(!(zi_raw(zi)->i_inline & ZF_INLINE_DATA));
	}
	/* text in odd pieces, random whole, a mix of both */
	text(src, sizeof(src), 1);
	for (size_t off = 0; off < (1 << 20); off += 100003)
		mwrite(sbi, &m[0], src + off, off + 100003 <= (1 << 20) ? 100003 : (1 << 20) - off, off);
	tu_fill(src, sizeof(src), 7);
	mwrite(sbi, &m[1], src, 1 << 20, 0);
	for (size_t off = 0; off < (1 << 20); off += 65536) {
		if ((off / 65536) % 2)
			tu_fill(src, 65536, off);
		else
			text(src, 65536, (unsigned int)off);
		mwrite(sbi, &m[2], src, 65536, off);
	}
	struct zinode *t = get(sbi, "text"), *r = get(sbi, "rand");
	uint64_t tsaved = zf_le64_to_cpu(zi_raw(t)->i_compr_blocks);
	ck_assert_msg(tsaved * 2 >= 256, "text saved %llu of 256 blocks",
		      (unsigned long long)tsaved);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(r)->i_compr_blocks), 0);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(r)->i_blocks), 1 + 256);   /* the inode, the data */
	/* overwrites inside clusters, across cluster edges, and of a whole cluster */
	text(src, sizeof(src), 99);
	for (int k = 0; k < 3; k++) {
		mwrite(sbi, &m[k], "HELLO", 5, 3);
		mwrite(sbi, &m[k], src, 3000, csz - 1000);
		mwrite(sbi, &m[k], src + 5, csz, 4 * csz);
		mwrite(sbi, &m[k], src + 9, 10, 777777);
	}
	/* truncate into a cluster, grow past EOF, append */
	for (int k = 0; k < 3; k++) {
		mtrunc(sbi, &m[k], 500001);
		mtrunc(sbi, &m[k], 700000);
		mwrite(sbi, &m[k], src, 200000, m[k].len);
		mwrite(sbi, &m[k], src, 100, m[k].len + 5000);
	}
	uint64_t reserved = 0;
	for (int k = 0; k < 3; k++) {
		struct zinode *zi = get(sbi, m[k].name);
		reads_as(sbi, zi, m[k].data, m[k].len);
		reserved += slots_agree(sbi, zi);
	}
	ck_assert_uint_eq(sbi->reserved_blocks, reserved);
	ck_assert_uint_gt(sbi->st.compr_clusters, 0);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	tu_fs_unmount(sbi);
	fsck_both(img);
	sbi = mount_all(img, alg, log, false);
	ck_assert_uint_eq(sbi->reserved_blocks, reserved);
	for (int k = 0; k < 3; k++) {
		reads_as(sbi, get(sbi, m[k].name), m[k].data, m[k].len);
		/* emptied: every slot and the count go */
		mtrunc(sbi, &m[k], 0);
		ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(get(sbi, m[k].name))->i_compr_blocks), 0);
		free(m[k].data);
	}
	ck_assert_uint_eq(sbi->reserved_blocks, 0);
	ck_assert_int_eq(sbi->fatal, 0);
	tu_fs_unmount(sbi);
	fsck_both(img);
	unlink(img);
	free(img);
}
END_TEST

/* The slot of zi's file block blk. */
static uint32_t slot_of(struct zlfs_sb *sbi, struct zinode *zi, uint64_t blk)
{
	struct znode *dn;
	unsigned int ofs, nr;

	ck_assert_int_eq(zlfs_get_dnode(sbi, zi, blk, false, &dn, &ofs), 0);
	return zf_le32_to_cpu(zlfs_dnode_addrs(sbi, dn, &nr)[ofs]);
}

enum { BAD_CLEN, BAD_CHKSUM, BAD_STREAM, MARKER_PLAIN, MARKER_MIDDLE, NCRAFT };
static const char *craft_says[NCRAFT] = {
	"does not fit", "checksum", "does not decode", "not compressed", "not at the start",
};

START_TEST(test_crafted)
{
	char name[64];
	snprintf(name, sizeof(name), "cluster-craft-%d.img", _i);
	tu_mkfs_opts = "-O compression";
	char *img = tu_fs_volume_flat(name);    /* flat: blocks rewritten in place */
	tu_mkfs_opts = NULL;
	struct zlfs_sb *sbi = mount_all(img, ZF_COMPR_LZ4, 2, true);
	static char src[1 << 16], got[1 << 16];
	uint8_t blk[ZF_BLKSIZE];
	size_t n;

	text(src, sizeof(src), 3);
	struct zinode *zi = mk(sbi, ZF_ROOT_INO, "c", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, src, sizeof(src), 0), 0);
	uint32_t ino = zi->ino, data = slot_of(sbi, zi, 1), node = 0;
	ck_assert_uint_eq(slot_of(sbi, zi, 0), ZF_COMPRESS_ADDR);
	/* a file that is not compressed, for the marker crafts */
	sbi->compr.next = 0;
	struct zinode *p = mk(sbi, ZF_ROOT_INO, "plain", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_cluster_log(sbi, p), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, p, src, sizeof(src), 0), 0);
	uint32_t pino = p->ino;
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	tu_fs_unmount(sbi);
	node = tu_node_addr(img, _i == MARKER_PLAIN ? pino : ino);

	switch (_i) {
	case BAD_CLEN:        /* the stream's length runs past the cluster's blocks */
		tu_blk_read(img, data, blk);
		blk[2] = 0x7f;
		tu_blk_write(img, data, blk);
		break;
	case BAD_CHKSUM:      /* the stored checksum does not match the stream */
		tu_blk_read(img, data, blk);
		blk[4] ^= 1;
		tu_blk_write(img, data, blk);
		break;
	case BAD_STREAM:      /* garbage in the stream itself */
		tu_blk_read(img, data, blk);
		memset(blk + 24, 0xff, 64);
		tu_blk_write(img, data, blk);
		break;
	case MARKER_PLAIN:    /* a compressed-cluster marker in a file that is not compressed */
	case MARKER_MIDDLE: { /* ... or in slot 1 of one that is */
		struct zf_node nb;
		tu_blk_read(img, node, &nb);
		struct zf_ishape sh;
		uint8_t sbb[ZF_BLKSIZE];
		tu_blk_read(img, 0, sbb);
		const struct zf_super *sb = (const struct zf_super *)(sbb + ZF_SUPER_OFFSET);
		uint32_t feat = zf_le32_to_cpu(sb->feature);
		zf_inode_shape(&nb.i, feat, &sh);
		nb.i.i_addr[sh.extra + (_i == MARKER_PLAIN ? 0 : 1)] = zf_cpu_to_le32(ZF_COMPRESS_ADDR);
		zf_inode_set_csum(&nb, feat, zf_csum_seed(sb->uuid));
		tu_blk_write(img, node, &nb);
		break;
	}
	}
	bool found;
	int code = fsck_says(img, craft_says[_i], &found);
	ck_assert_msg(code == 4 && found, "craft %d: fsck.zlfs exit %d, %s", _i, code,
		      found ? "found" : "said nothing of it");

	int ret;
	char err[256];
	sbi = mount_with(img, NULL, err, sizeof(err), &ret);
	if (ret) {
		/* a damaged inode checksum would refuse it here: not what this tests */
		ck_abort_msg("craft %d: mount refused: %s", _i, err);
	}
	ck_assert_int_eq(zlfs_iget(sbi, _i == MARKER_PLAIN ? pino : ino, &zi), 0);
	ret = zlfs_file_read(sbi, zi, got, sizeof(got), 0, &n);
	ck_assert_msg(ret == -ZLFS_EFSCORRUPTED, "craft %d: read gave %d", _i, ret);
	ck_assert_int_ne(sbi->fatal, 0);
	ck_assert_msg(strstr(sbi->fatal_why, "inode"), "craft %d: %s", _i, sbi->fatal_why);
	tu_fs_unmount(sbi);
	unlink(img);
	free(img);
}
END_TEST

/* A wrong i_compr_blocks: fsck.zlfs reports it, -y repairs it, both fscks clean after. */
START_TEST(test_fsck_repair)
{
	tu_mkfs_opts = "-O compression";
	char *img = tu_fs_volume_flat("cluster-fsck.img");
	tu_mkfs_opts = NULL;
	struct zlfs_sb *sbi = mount_all(img, ZF_COMPR_ZSTD, 3, false);
	static char src[200000];
	char cmd[1200];
	bool found;

	text(src, sizeof(src), 8);
	struct zinode *zi = mk(sbi, ZF_ROOT_INO, "r", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, src, sizeof(src), 0), 0);
	uint64_t saved = zf_le64_to_cpu(zi_raw(zi)->i_compr_blocks);
	ck_assert_uint_gt(saved, 0);
	uint32_t ino = zi->ino;
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	tu_fs_unmount(sbi);
	uint32_t at = tu_node_addr(img, ino);
	struct zf_node nb;
	uint8_t sbb[ZF_BLKSIZE];
	tu_blk_read(img, 0, sbb);
	const struct zf_super *sb = (const struct zf_super *)(sbb + ZF_SUPER_OFFSET);
	tu_blk_read(img, at, &nb);
	nb.i.i_compr_blocks = zf_cpu_to_le64(saved - 1);
	zf_inode_set_csum(&nb, zf_le32_to_cpu(sb->feature), zf_csum_seed(sb->uuid));
	tu_blk_write(img, at, &nb);
	ck_assert_int_eq(fsck_says(img, "i_compr_blocks", &found), 4);
	ck_assert(found);
	snprintf(cmd, sizeof(cmd), "'%s' -f -y '%s' >/dev/null 2>&1", getenv("ZLFS_FSCK"), img);
	int st = system(cmd);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "fsck.zlfs -y: %d", st);
	fsck_both(img);
	sbi = mount_all(img, ZF_COMPR_ZSTD, 3, false);
	zi = get(sbi, "r");
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(zi)->i_compr_blocks), saved);
	reads_as(sbi, zi, src, sizeof(src));
	tu_fs_unmount(sbi);
	unlink(img);
	free(img);
}
END_TEST

START_TEST(test_policy)
{
	char *img = volume("cluster-policy.img");
	struct zlfs_compr_opts c = { .given = true, .next = 2, .nnoext = 1 };
	char err[256];
	int ret;

	strcpy(c.ext[0], "txt");
	strcpy(c.ext[1], "LOG");
	strcpy(c.noext[0], "jpg");
	struct zlfs_sb *sbi = mount_with(img, &c, err, sizeof(err), &ret);
	ck_assert_msg(!ret, "%s", err);
	/* by extension, any case; not a hidden file's dot; nocompress wins over a +c directory */
	ck_assert_uint_eq(zlfs_cluster_log(sbi, mk(sbi, ZF_ROOT_INO, "a.TXT", S_IFREG | 0644)), 2);
	ck_assert_uint_eq(zlfs_cluster_log(sbi, mk(sbi, ZF_ROOT_INO, "b.log", S_IFREG | 0644)), 2);
	ck_assert_uint_eq(zlfs_cluster_log(sbi, mk(sbi, ZF_ROOT_INO, ".txt", S_IFREG | 0644)), 0);
	ck_assert_uint_eq(zlfs_cluster_log(sbi, mk(sbi, ZF_ROOT_INO, "c.txt2", S_IFREG | 0644)), 0);
	struct zinode *d = mk(sbi, ZF_ROOT_INO, "d", S_IFDIR | 0755);
	ck_assert_int_eq(zlfs_flags_set(sbi, d, FS_COMPR_FL), 0);
	ck_assert_uint_eq(zlfs_flags_get(d) & FS_COMPR_FL, FS_COMPR_FL);
	ck_assert_uint_eq(zlfs_cluster_log(sbi, mk(sbi, d->ino, "any", S_IFREG | 0644)), 2);
	ck_assert_uint_eq(zlfs_cluster_log(sbi, mk(sbi, d->ino, "p.jpg", S_IFREG | 0644)), 0);
	struct zinode *sub = mk(sbi, d->ino, "sub", S_IFDIR | 0755);
	ck_assert_uint_eq(zlfs_flags_get(sub) & FS_COMPR_FL, FS_COMPR_FL);
	ck_assert_uint_eq(zlfs_cluster_log(sbi, mk(sbi, sub->ino, "deep", S_IFREG | 0644)), 2);
	/* +m on a directory: its files are not compressed, and +c with +m is refused */
	struct zinode *e = mk(sbi, ZF_ROOT_INO, "e", S_IFDIR | 0755);
	ck_assert_int_eq(zlfs_flags_set(sbi, e, FS_NOCOMP_FL), 0);
	struct zinode *ef = mk(sbi, e->ino, "f", S_IFREG | 0644);
	ck_assert_uint_eq(zlfs_cluster_log(sbi, ef), 0);
	ck_assert_uint_eq(zlfs_flags_get(ef) & FS_NOCOMP_FL, FS_NOCOMP_FL);
	ck_assert_int_eq(zlfs_flags_set(sbi, ef, FS_COMPR_FL | FS_NOCOMP_FL), -EINVAL);
	/* chattr +c on an empty file (inline too); not once it holds data; -c likewise */
	struct zinode *f = mk(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);
	ck_assert(zi_raw(f)->i_inline & ZF_INLINE_DATA);
	ck_assert_int_eq(zlfs_flags_set(sbi, f, FS_COMPR_FL), 0);
	ck_assert_uint_eq(zlfs_cluster_log(sbi, f), 2);
	ck_assert(!(zi_raw(f)->i_inline & ZF_INLINE_DATA));
	ck_assert_int_eq(zlfs_file_write(sbi, f, "x", 1, 0), 0);
	ck_assert_int_eq(zlfs_flags_set(sbi, f, 0), -EINVAL);
	struct zinode *g = mk(sbi, ZF_ROOT_INO, "g", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_file_write(sbi, g, "y", 1, 0), 0);
	ck_assert_int_eq(zlfs_flags_set(sbi, g, FS_COMPR_FL), -EINVAL);
	ck_assert_int_eq(zlfs_file_truncate(sbi, f, 0), 0);
	ck_assert_int_eq(zlfs_flags_set(sbi, f, 0), 0);
	ck_assert_uint_eq(zlfs_cluster_log(sbi, f), 0);
	struct zinode *l;
	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, "l", S_IFLNK | 0777, 0, "f", &l), 0);
	ck_assert_int_eq(zlfs_flags_set(sbi, l, FS_COMPR_FL), -EOPNOTSUPP);
	/* compressed files refuse punching and zeroing, as F2FS */
	struct zinode *h = mk(sbi, ZF_ROOT_INO, "h.txt", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_file_write(sbi, h, "abc", 3, 0), 0);
	ck_assert_int_eq(zlfs_file_fallocate(sbi, h, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
					     4096), -EOPNOTSUPP);
	ck_assert_int_eq(zlfs_file_fallocate(sbi, h, FALLOC_FL_ZERO_RANGE, 0, 4096), -EOPNOTSUPP);
	ck_assert_int_eq(zlfs_file_fallocate(sbi, h, 0, 0, 65536), 0);
	tu_fs_unmount(sbi);
	fsck_both(img);

	/* the options' rules, each refused with a message */
	struct { struct zlfs_compr_opts o; const char *says; } bad[] = {
		{ { .given = true, .log = 9 }, "compress_log_size" },
		{ { .given = true, .alg_given = true, .alg = ZF_COMPR_LZO, .level_given = true,
		    .level = 3 }, "no level" },
		{ { .given = true, .alg_given = true, .alg = ZF_COMPR_ZSTD, .level_given = true,
		    .level = 23 }, "1 .. 22" },
		{ { .given = true, .alg_given = true, .alg = ZF_COMPR_LZ4, .level_given = true,
		    .level = 2 }, "3 .. 16" },
		{ { .given = true, .nnoext = 1, .noext = { "*" } }, "nocompress_extension=*" },
		{ { .given = true, .next = 1, .ext = { "txt" }, .nnoext = 1, .noext = { "TXT" } },
		  "both" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		sbi = mount_with(img, &bad[i].o, err, sizeof(err), &ret);
		ck_assert_msg(ret == -EINVAL && strstr(err, bad[i].says), "option %zu: %d %s", i, ret,
			      err);
	}
	unlink(img);
	free(img);

	/* without the feature: the options are ignored (as F2FS), +c is EOPNOTSUPP */
	img = tu_fs_volume("cluster-nofeat.img");
	c.nnoext = 0;
	sbi = mount_with(img, &c, err, sizeof(err), &ret);
	ck_assert_msg(!ret, "%s", err);
	struct zinode *x = mk(sbi, ZF_ROOT_INO, "x.txt", S_IFREG | 0644);
	ck_assert_uint_eq(zlfs_cluster_log(sbi, x), 0);
	ck_assert_int_eq(zlfs_flags_set(sbi, x, FS_COMPR_FL), -EOPNOTSUPP);
	tu_fs_unmount(sbi);
	unlink(img);
	free(img);
}
END_TEST

/*
 * F2FS's release and reserve: the unused slots of compressed clusters go
 * back to the share and return, i_blocks and the reserved count follow,
 * writes are refused between; (de)compressing a file in user mode; a
 * released file truncated to 0 is writable again.  Both fscks after each.
 */
START_TEST(test_release)
{
	char *img = volume("cluster-release.img");
	struct zlfs_compr_opts c = { .given = true, .alg_given = true, .alg = ZF_COMPR_LZ4,
				     .user_mode = true, .next = 1, .ext = { "*" } };
	char err[256];
	int ret;
	static char src[400000];
	uint64_t n;

	text(src, sizeof(src), 9);
	struct zlfs_sb *sbi = mount_with(img, &c, err, sizeof(err), &ret);
	ck_assert_msg(!ret, "%s", err);
	struct zinode *zi = mk(sbi, ZF_ROOT_INO, "r", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, src, sizeof(src), 0), 0);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(zi)->i_compr_blocks), 0);   /* user mode: raw */
	ck_assert_int_eq(zlfs_cluster_release(sbi, zi, false, &n), 0);       /* nothing to give */
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(zlfs_cluster_release(sbi, zi, true, &n), 0);
	ck_assert_int_eq(zlfs_cluster_rewrite(sbi, zi, true), 0);
	uint64_t saved = zf_le64_to_cpu(zi_raw(zi)->i_compr_blocks);
	uint64_t blocks = zf_le64_to_cpu(zi_raw(zi)->i_blocks), rsv = sbi->reserved_blocks;
	ck_assert_uint_gt(saved, 0);
	ck_assert_uint_eq(rsv, saved);
	reads_as(sbi, zi, src, sizeof(src));
	ck_assert_int_eq(zlfs_cluster_release(sbi, zi, false, &n), 0);
	ck_assert_uint_eq(n, saved);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(zi)->i_blocks), blocks - saved);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(zi)->i_compr_blocks), 0);
	ck_assert_uint_eq(sbi->reserved_blocks, 0);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, "x", 1, 0), -EPERM);
	ck_assert_int_eq(zlfs_file_truncate(sbi, zi, 100), -EPERM);
	ck_assert_int_eq(zlfs_cluster_release(sbi, zi, false, &n), -EINVAL);
	reads_as(sbi, zi, src, sizeof(src));
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	tu_fs_unmount(sbi);
	fsck_both(img);
	sbi = mount_with(img, &c, err, sizeof(err), &ret);
	ck_assert_msg(!ret, "%s", err);
	zi = get(sbi, "r");
	reads_as(sbi, zi, src, sizeof(src));
	ck_assert_int_eq(zlfs_cluster_release(sbi, zi, true, &n), 0);
	ck_assert_uint_eq(n, saved);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(zi)->i_blocks), blocks);
	ck_assert_uint_eq(sbi->reserved_blocks, rsv);
	ck_assert_int_eq(zlfs_cluster_rewrite(sbi, zi, false), 0);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(zi)->i_compr_blocks), 0);
	ck_assert_uint_eq(sbi->reserved_blocks, 0);
	reads_as(sbi, zi, src, sizeof(src));
	ck_assert_int_eq(zlfs_cluster_rewrite(sbi, zi, true), 0);
	ck_assert_int_eq(zlfs_cluster_release(sbi, zi, false, &n), 0);
	ck_assert_int_eq(zlfs_file_truncate(sbi, zi, 0), 0);   /* emptied: writable again */
	ck_assert(!(zi_raw(zi)->i_inline & ZF_COMPRESS_RELEASED));
	ck_assert_int_eq(zlfs_file_write(sbi, zi, src, 70000, 0), 0);
	ck_assert_int_eq(zlfs_cluster_rewrite(sbi, zi, true), 0);
	reads_as(sbi, zi, src, 70000);
	ck_assert_int_eq(sbi->fatal, 0);
	tu_fs_unmount(sbi);
	fsck_both(img);
	unlink(img);
	free(img);
}
END_TEST

START_TEST(test_fsync_crash)
{
	char *img = volume("cluster-fsync.img");
	struct zlfs_sb *sbi = mount_all(img, ZF_COMPR_ZSTD, 4, false);
	static char src[300000];

	text(src, sizeof(src), 5);
	struct zinode *zi = mk(sbi, ZF_ROOT_INO, "s", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, src, sizeof(src), 0), 0);
	uint64_t cps = sbi->cp_count;
	ck_assert_int_eq(zlfs_file_fsync(sbi, zi, false), 0);
	ck_assert_uint_eq(sbi->cp_count, cps + 1);      /* the kernel's CP_COMPRESSED */
	ck_assert_int_eq(zlfs_file_write(sbi, zi, "lost", 4, 10), 0);   /* not fsynced */
	ck_assert_int_eq(zlfs_shutdown(sbi, ZLFS_GOING_DOWN_NOSYNC), 0);
	tu_fs_unmount(sbi);
	sbi = mount_all(img, ZF_COMPR_ZSTD, 4, false);
	reads_as(sbi, get(sbi, "s"), src, sizeof(src));
	ck_assert_uint_gt(zf_le64_to_cpu(zi_raw(get(sbi, "s"))->i_compr_blocks), 0);
	tu_fs_unmount(sbi);
	fsck_both(img);
	unlink(img);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_round_trip, 0, NALG * 3);
	tcase_add_loop_test(tc, test_crafted, 0, NCRAFT);
	tcase_add_test(tc, test_fsck_repair);
	tcase_add_test(tc, test_release);
	tcase_add_test(tc, test_policy);
	tcase_add_test(tc, test_fsync_crash);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
