/*
 * test_file.c - file contents (fs/file.c) on a mounted volume without
 * FUSE: an image made by mkfs.zlfs (ZLFS_MKFS names the binary; meson
 * passes it).
 *
 * Covers zlfs_file_read, which reads whole blocks straight into the
 * caller's buffer and only partial first and last blocks through a bounce
 * buffer: every offset and length pattern (aligned, inside one block,
 * across blocks, ending at and past EOF, across holes) returns exactly the
 * bytes written; and a sequential run of blocks adjacent on the device is
 * read with one device command per run, not one per block (the cause of
 * slow sequential reads through the mount: issue 9).  zlfs_file_read_map
 * gives the same bytes for every pattern as pieces of the image (a hole
 * a piece of zeros, neighbours merged), and refuses (-EOPNOTSUPP) inline
 * files and more pieces than the caller can take.
 *
 * Inline data (F2FS's INLINE_DATA, which new files start with): writes
 * inside the area stay in the inode block with DATA_EXIST, i_blocks 1;
 * truncation zeroes what it cuts and truncating to 0 drops DATA_EXIST; a
 * write or truncate past the area, or a fallocate, converts, block 0
 * written only when there was data; a damaged reserved word stops a
 * conversion (EUCLEAN, read-only) instead of freeing what it names;
 * noinline_data makes block files; all across a remount, fsck.f2fs clean.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "testutil.h"
#include "fsutil.h"

#define NBLK 600u    /* past the inode's own slots: direct nodes too */

static struct zlfs_sb *mount_volume(const char *img)
{
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	char err[256];

	memset(&o, 0, sizeof(o));
	zlfs_disp_opts_default(&o.disp);
	zlfs_gc_opts_default(&o.gc);
	o.gc.mode = ZLFS_GC_OFF;
	ck_assert_msg(zlfs_mount(img, &o, &sbi, err, sizeof(err)) == 0, "mount: %s", err);
	return sbi;
}

static uint64_t dispatched(struct zlfs_sb *sbi)
{
	struct zlfs_disp_stats st;
	zlfs_disp_stats(sbi->disp, &st);
	return st.dispatched;
}

/* Byte i of the file: holes (blocks 100-109 never written) read as zeros. */
static uint8_t expect(uint64_t i)
{
	uint64_t b = i / ZF_BLKSIZE;
	if (b >= 100 && b < 110)
		return 0;
	return (uint8_t)(i * 131 + (i >> 12) * 7 + 1);
}

/* expect() for every byte of the file */
static uint8_t *model;

/* Every read of [off, off+len) gives what expect() says, cut at size. */
static void check_read(struct zlfs_sb *sbi, struct zinode *zi, uint64_t size, uint64_t off,
		       size_t len)
{
	char *got = malloc(len + 1);
	size_t n = 12345;

	/* an odd address: the reads go to whatever buffer FUSE hands over */
	ck_assert_int_eq(zlfs_file_read(sbi, zi, got + 1, len, off, &n), 0);
	size_t want = off >= size ? 0 : (size - off < len ? (size_t)(size - off) : len);
	ck_assert_msg(n == want, "read %llu+%zu: got %zu bytes, want %zu", (unsigned long long)off,
		      len, n, want);
	if (n && memcmp(got + 1, model + off, n)) {
		size_t i = 0;
		while ((uint8_t)got[1 + i] == model[off + i])
			i++;
		ck_abort_msg("read %llu+%zu: byte %zu differs", (unsigned long long)off, len, i);
	}
	/* the same read as pieces of the image (what the FUSE layer splices) */
	struct zlfs_rseg seg[64];
	unsigned int nseg = 99;
	size_t mgot = 12345, at = 0;
	ck_assert_int_eq(zlfs_file_read_map(sbi, zi, len, off, seg, 64, &nseg, &mgot), 0);
	ck_assert_uint_eq(mgot, want);
	memset(got, 0x5a, len);
	for (unsigned int k = 0; k < nseg; k++) {
		ck_assert_uint_gt(seg[k].len, 0);
		ck_assert_uint_le(at + seg[k].len, want);
		if (seg[k].fd < 0)
			memset(got + at, 0, seg[k].len);
		else
			ck_assert_int_eq(pread(seg[k].fd, got + at, seg[k].len, (off_t)seg[k].pos),
					 (ssize_t)seg[k].len);
		/* neighbours are merged where they continue each other */
		if (k)
			ck_assert(seg[k].fd != seg[k - 1].fd ||
				  (seg[k].fd >= 0 && seg[k - 1].pos + seg[k - 1].len != seg[k].pos));
		at += seg[k].len;
	}
	ck_assert_uint_eq(at, want);
	ck_assert_msg(!want || !memcmp(got, model + off, want), "mapped read %llu+%zu differs",
		      (unsigned long long)off, len);
	/* too many pieces for the caller: it must read instead */
	if (nseg > 1)
		ck_assert_int_eq(zlfs_file_read_map(sbi, zi, len, off, seg, nseg - 1, &nseg, &mgot),
				 -EOPNOTSUPP);
	free(got);
}

START_TEST(test_read_patterns)
{
	char *img = tu_fs_volume("read.img");
	struct zlfs_sb *sbi = mount_volume(img);
	struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *zi;
	/* a size that ends inside a block */
	uint64_t size = (uint64_t)NBLK * ZF_BLKSIZE - 1000;
	uint8_t *data = malloc(size);

	for (uint64_t i = 0; i < size; i++)
		data[i] = expect(i);
	model = data;
	pthread_mutex_lock(&sbi->lock);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "f", S_IFREG | 0644, 0, NULL, &zi), 0);
	zi->nopen++;
	/* in pieces around the hole, some unaligned */
	ck_assert_int_eq(zlfs_file_write(sbi, zi, (char *)data, 100 * ZF_BLKSIZE, 0), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, (char *)data + 110 * ZF_BLKSIZE, 3333,
					 110 * ZF_BLKSIZE), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, (char *)data + 110 * ZF_BLKSIZE + 3333,
					 size - 110 * ZF_BLKSIZE - 3333, 110 * ZF_BLKSIZE + 3333), 0);
	static const struct { uint64_t off; size_t len; } pat[] = {
		{ 0, ZF_BLKSIZE }, { 0, 1 }, { 1, 1 }, { 4095, 2 }, { 100, 300 },
		{ 4096, 128 * 1024 }, { 777, 128 * 1024 }, { 0, 1 << 20 }, { 12345, 1 << 20 },
		{ 98 * 4096 + 5, 20 * 4096 }, { 100 * 4096, 10 * 4096 }, { 105 * 4096 + 1, 100 },
		{ 109 * 4096 + 4000, 200 }, { (NBLK - 2) * 4096ull, 3 * 4096 },
		{ (NBLK - 1) * 4096ull + 10, 4096 }, { (NBLK + 5) * 4096ull, 4096 },
	};
	for (size_t k = 0; k < sizeof(pat) / sizeof(pat[0]); k++)
		check_read(sbi, zi, size, pat[k].off, pat[k].len);
	/* the whole file, and again after a checkpoint moved nothing */
	check_read(sbi, zi, size, 0, size + 4096);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	check_read(sbi, zi, size, 3, size);
	zi->nopen--;
	zlfs_iput(sbi, zi, 0);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	free(data);
	free(img);
}
END_TEST

/*
 * 256 blocks written in one call land adjacent in one zone (or two, when
 * the log crosses a zone); reading them back takes one command per run.
 * Before the fix every block was its own command: 256 here.
 */
START_TEST(test_read_one_command_per_run)
{
	char *img = tu_fs_volume("runs.img");
	struct zlfs_sb *sbi = mount_volume(img);
	struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *zi;
	size_t len = 256 * ZF_BLKSIZE;
	char *data = malloc(len), *got = malloc(len);
	size_t n;

	tu_fill(data, len, 9);
	pthread_mutex_lock(&sbi->lock);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "f", S_IFREG | 0644, 0, NULL, &zi), 0);
	zi->nopen++;
	ck_assert_int_eq(zlfs_file_write(sbi, zi, data, len, 0), 0);
	uint64_t before = dispatched(sbi);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, got, len, 0, &n), 0);
	uint64_t cmds = dispatched(sbi) - before;
	ck_assert_uint_eq(n, len);
	ck_assert(!memcmp(data, got, len));
	ck_assert_msg(cmds >= 1 && cmds <= 2, "256 adjacent blocks read with %llu commands",
		      (unsigned long long)cmds);
	/* an unaligned read of the same: the edges bounce, the middle is one run */
	before = dispatched(sbi);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, got, len - 8192, 4000, &n), 0);
	cmds = dispatched(sbi) - before;
	ck_assert_uint_eq(n, len - 8192);
	ck_assert(!memcmp(data + 4000, got, len - 8192));
	/* the edges are commands of their own: 3, 4 across a zone */
	ck_assert_msg(cmds >= 3 && cmds <= 4, "unaligned read of 255 blocks took %llu commands",
		      (unsigned long long)cmds);
	zi->nopen--;
	zlfs_iput(sbi, zi, 0);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	free(data);
	free(got);
	free(img);
}
END_TEST

static uint64_t iblocks(struct zinode *zi)
{
	return zf_le64_to_cpu(zi_raw(zi)->i_blocks);
}

static uint64_t isize(struct zinode *zi)
{
	return zf_le64_to_cpu(zi_raw(zi)->i_size);
}

static unsigned int inl(struct zinode *zi)
{
	return zi_raw(zi)->i_inline & (ZF_INLINE_DATA | ZF_DATA_EXIST);
}

/* The file reads exactly want[0, size). */
static void reads(struct zlfs_sb *sbi, struct zinode *zi, const char *want, size_t size)
{
	char *got = malloc(size + 100);
	size_t n;

	ck_assert_int_eq(zlfs_file_read(sbi, zi, got, size + 100, 0, &n), 0);
	ck_assert_uint_eq(n, size);
	ck_assert(!memcmp(got, want, size));
	/* inline data is in the inode, not in a block of its own: never mapped */
	if (inl(zi)) {
		struct zlfs_rseg seg[4];
		unsigned int nseg;
		ck_assert_int_eq(zlfs_file_read_map(sbi, zi, size + 100, 0, seg, 4, &nseg, &n),
				 -EOPNOTSUPP);
	}
	free(got);
}

static struct zinode *mkf(struct zlfs_sb *sbi, const char *name)
{
	struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *zi;

	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, name, S_IFREG | 0644, 0, NULL, &zi), 0);
	zi->nopen++;
	return zi;
}

/*
 * An overwrite of a block a direct node holds changes that node, not the
 * inode block: the inode stays clean (an fsync then writes one node, as
 * F2FS's does).  Within one tick of the coarse clock the times stamp
 * nothing new; keep_times (the FUSE layer's, under the writeback cache)
 * leaves them alone at any tick.  A new block (i_blocks), a longer file
 * (i_size) or a dropped extent hint dirty the inode.
 */
START_TEST(test_overwrite_leaves_inode_clean)
{
	char *img = tu_fs_volume("clean.img");
	struct zlfs_sb *sbi = mount_volume(img);
	struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *zi;
	size_t len = 2 * ZF_ADDRS_PER_INODE * (size_t)ZF_BLKSIZE;   /* direct nodes beyond the inode */
	char *data = malloc(len);

	tu_fill(data, len, 3);
	pthread_mutex_lock(&sbi->lock);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "f", S_IFREG | 0644, 0, NULL, &zi), 0);
	zi->nopen++;
	ck_assert_int_eq(zlfs_file_write(sbi, zi, data, len, 0), 0);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	ck_assert(!zi->node->dirty);
	zi->keep_times++;
	struct zf_inode before = *zi_raw(zi);
	uint64_t past = len - 10 * ZF_BLKSIZE;     /* in a direct node */
	ck_assert_int_eq(zlfs_file_write(sbi, zi, data, ZF_BLKSIZE, past), 0);
	ck_assert_msg(!zi->node->dirty, "an overwrite in a direct node dirtied the inode");
	ck_assert(!memcmp(&before, zi_raw(zi), sizeof(before)));
	/* the file's first blocks are the inode's own slots: it is their node */
	ck_assert_int_eq(zlfs_file_write(sbi, zi, data, ZF_BLKSIZE, 0), 0);
	ck_assert(zi->node->dirty);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	/* growing the file changes the inode */
	ck_assert_int_eq(zlfs_file_write(sbi, zi, data, 100, len), 0);
	ck_assert(zi->node->dirty);
	zi->keep_times--;
	zi->nopen--;
	zlfs_iput(sbi, zi, 0);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	free(data);
	free(img);
}
END_TEST

START_TEST(test_inline)
{
	char *img = tu_fs_volume("inline.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	static char want[8192], buf[8192];
	struct zf_ishape sh;

	/* a new file: inline, nothing written yet */
	struct zinode *a = mkf(sbi, "a");
	zf_inode_shape(zi_raw(a), zlfs_feat(sbi), &sh);
	const unsigned int max = sh.inline_max;
	ck_assert_uint_eq(max, 4 * (ZF_ADDRS_PER_INODE - ZF_MAX_EXTRA_WORDS - ZF_INLINE_XATTR_ADDRS - 1));
	ck_assert_uint_eq(inl(a), ZF_INLINE_DATA);
	ck_assert_uint_eq(iblocks(a), 1);
	/* writes inside the area: in the inode, DATA_EXIST, a hole between reads zeros */
	tu_fill(want, 100, 1);
	ck_assert_int_eq(zlfs_file_write(sbi, a, want, 100, 0), 0);
	ck_assert_uint_eq(inl(a), ZF_INLINE_DATA | ZF_DATA_EXIST);
	tu_fill(want + 3000, 10, 2);
	ck_assert_int_eq(zlfs_file_write(sbi, a, want + 3000, 10, 3000), 0);
	ck_assert_uint_eq(isize(a), 3010);
	ck_assert_uint_eq(iblocks(a), 1);
	reads(sbi, a, want, 3010);
	tu_fill(want + max - 10, 10, 3);          /* the very end of the area */
	ck_assert_int_eq(zlfs_file_write(sbi, a, want + max - 10, 10, max - 10), 0);
	ck_assert_uint_eq(inl(a), ZF_INLINE_DATA | ZF_DATA_EXIST);
	reads(sbi, a, want, max);
	/* truncation inside: what is cut reads zeros when the size comes back */
	ck_assert_int_eq(zlfs_file_truncate(sbi, a, 50), 0);
	ck_assert_int_eq(zlfs_file_truncate(sbi, a, 3010), 0);
	memset(want + 50, 0, sizeof(want) - 50);
	reads(sbi, a, want, 3010);
	ck_assert_int_eq(zlfs_file_truncate(sbi, a, 0), 0);
	ck_assert_uint_eq(inl(a), ZF_INLINE_DATA);

	/* sized but never written, then written far away: no block 0 (a hole, as the kernel) */
	ck_assert_int_eq(zlfs_file_truncate(sbi, a, 1000), 0);
	ck_assert_uint_eq(inl(a), ZF_INLINE_DATA);
	tu_fill(want + 5000, 100, 4);
	memset(want, 0, 5000);
	ck_assert_int_eq(zlfs_file_write(sbi, a, want + 5000, 100, 5000), 0);
	ck_assert_uint_eq(inl(a), 0);
	ck_assert_uint_eq(iblocks(a), 2);          /* the inode and block 1 */
	reads(sbi, a, want, 5100);

	/* one byte past the area converts: block 0 has the old bytes */
	struct zinode *b = mkf(sbi, "b");
	tu_fill(buf, max + 1, 5);
	ck_assert_int_eq(zlfs_file_write(sbi, b, buf, max, 0), 0);
	ck_assert_uint_eq(inl(b), ZF_INLINE_DATA | ZF_DATA_EXIST);
	ck_assert_int_eq(zlfs_file_write(sbi, b, buf + max, 1, max), 0);
	ck_assert_uint_eq(inl(b), 0);
	ck_assert_uint_eq(iblocks(b), 2);
	reads(sbi, b, buf, max + 1);
	/* it stays a block file when it shrinks again */
	ck_assert_int_eq(zlfs_file_truncate(sbi, b, 10), 0);
	ck_assert_uint_eq(inl(b), 0);
	reads(sbi, b, buf, 10);

	/* a truncate past the area converts; so does any fallocate */
	struct zinode *c = mkf(sbi, "c");
	ck_assert_int_eq(zlfs_file_write(sbi, c, "hello", 5, 0), 0);
	ck_assert_int_eq(zlfs_file_truncate(sbi, c, max + 1), 0);
	ck_assert_uint_eq(inl(c), 0);
	memset(want, 0, sizeof(want));
	memcpy(want, "hello", 5);
	reads(sbi, c, want, max + 1);
	struct zinode *d = mkf(sbi, "d");
	ck_assert_int_eq(zlfs_file_write(sbi, d, "hello", 5, 0), 0);
	ck_assert_int_eq(zlfs_file_fallocate(sbi, d, FALLOC_FL_KEEP_SIZE, 0, 100), 0);
	ck_assert_uint_eq(inl(d), 0);
	reads(sbi, d, want, 5);

	/* the persistent state: a remount reads the same, fsck.f2fs agrees */
	uint32_t ib = b->ino, ic = c->ino;
	struct zinode *e = mkf(sbi, "e");
	ck_assert_int_eq(zlfs_file_write(sbi, e, "inline, remounted", 17, 0), 0);
	uint32_t ie = e->ino;
	struct zinode *all[] = { a, b, c, d, e };
	for (int i = 0; i < 5; i++) {
		all[i]->nopen--;
		zlfs_iput(sbi, all[i], 0);
	}
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	sbi = tu_fs_mount(img, 0);
	ck_assert_int_eq(zlfs_iget(sbi, ie, &e), 0);
	ck_assert_uint_eq(inl(e), ZF_INLINE_DATA | ZF_DATA_EXIST);
	reads(sbi, e, "inline, remounted", 17);
	ck_assert_int_eq(zlfs_iget(sbi, ib, &b), 0);
	reads(sbi, b, buf, 10);
	ck_assert_int_eq(zlfs_iget(sbi, ic, &c), 0);
	reads(sbi, c, want, max + 1);

	/* a damaged reserved word is never taken for block 0's address */
	zi_raw(e)->i_addr[zf_extra_isize_words(zi_raw(e))] = zf_cpu_to_le32(1234);
	uint64_t valid = sbi->valid_block_count;
	ck_assert_int_eq(zlfs_file_write(sbi, e, buf, 5000, 0), -EUCLEAN);
	ck_assert_int_ne(sbi->fatal, 0);
	ck_assert_uint_eq(sbi->valid_block_count, valid);
	ck_assert(strstr(sbi->fatal_why, "reserved word"));
	zi_raw(e)->i_addr[zf_extra_isize_words(zi_raw(e))] = 0;
	tu_fs_unmount(sbi);

	/* noinline_data: new files are block files from the start */
	tu_noinline = true;
	sbi = tu_fs_mount(img, 0);
	struct zinode *f = mkf(sbi, "f");
	ck_assert_uint_eq(inl(f), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, f, "x", 1, 0), 0);
	ck_assert_uint_eq(iblocks(f), 2);
	f->nopen--;
	zlfs_iput(sbi, f, 0);
	tu_fs_unmount(sbi);
	tu_noinline = false;
	tu_fsck_clean(img);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("file");
	TCase *tc = tcase_create("read");

	tcase_add_test(tc, test_read_patterns);
	tcase_add_test(tc, test_read_one_command_per_run);
	tcase_add_test(tc, test_inline);
	tcase_add_test(tc, test_overwrite_leaves_inode_clean);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
