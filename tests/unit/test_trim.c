/*
 * test_trim.c - FITRIM (fs/trim.c) in-process on volumes made by
 * mkfs.zlfs, judged by fsck.f2fs: F2FS's range rules (EINVAL past the end
 * or under a block, nothing before the main area, nothing under minlen),
 * that what a deleted file held is trimmed (the checkpoint first frees its
 * sections), that every free section in the range is empty afterwards (a
 * sequential zone reset; a conventional one discarded, so the image reads
 * zeros there), that a section the range only touches is left alone, and
 * that the figure reported never exceeds what statfs counts free.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "segment.h"
#include "trim.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "testutil.h"
#include "fsutil.h"

static const struct zlfs_cred cred = { 0, 0, 022 };

/* A file of len bytes of c in the root. */
static void make_file(struct zlfs_sb *sbi, const char *name, size_t len, char c)
{
	struct zinode *zi;
	char *buf = malloc(len);

	ck_assert_ptr_nonnull(buf);
	memset(buf, c, len);
	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, name, S_IFREG | 0644, 0, NULL, &zi), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, buf, len, 0), 0);
	zlfs_iput(sbi, zi, 0);
	free(buf);
}

static uint64_t sec_bytes(const struct zlfs_sb *sbi)
{
	return (uint64_t)sbi->sec_blocks * ZF_BLKSIZE;
}

static uint64_t sec_start(const struct zlfs_sb *sbi, uint32_t s)
{
	return (uint64_t)zf_seg_blkaddr(&sbi->lay, s * sbi->segs_per_sec) * ZF_BLKSIZE;
}

/* Every free section wholly inside [lo, hi) bytes holds nothing the device keeps. */
static void expect_trimmed(struct zlfs_sb *sbi, const char *img, uint64_t lo, uint64_t hi)
{
	uint8_t *blk = malloc(ZF_BLKSIZE), zero[ZF_BLKSIZE] = { 0 };

	for (uint32_t s = 0; s < sbi->nr_secs; s++) {
		uint64_t a = sec_start(sbi, s);
		if (a < lo || a + (uint64_t)sbi->segs_per_sec * ZF_BLKS_PER_SEG * ZF_BLKSIZE > hi ||
		    sbi->secs[s].state != ZSEC_FREE || zlfs_sec_is_log(sbi, s))
			continue;
		if (!zlfs_sec_is_conv(sbi, s)) {
			struct zlfs_zone z;
			uint32_t nr = 1;
			ck_assert_int_eq(zlfs_zdev_report(sbi->dev, sbi->lay.main_zone + s, &z, &nr), 0);
			ck_assert_msg(z.cond == ZLFS_ZC_EMPTY, "free section %u: zone not empty (%u)",
				      s, z.cond);
			continue;
		}
		/* conventional: the image reads zeros there now */
		for (uint64_t b = 0; b < sbi->sec_blocks; b += 97) {
			tu_blk_read(img, a / ZF_BLKSIZE + b, blk);
			ck_assert_msg(!memcmp(blk, zero, ZF_BLKSIZE),
				      "free section %u block %llu not discarded", s,
				      (unsigned long long)b);
		}
	}
	free(blk);
}

static void trim_case(const char *img)
{
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	uint64_t vol = zf_le64_to_cpu(sbi->sb.block_count) * ZF_BLKSIZE, got;

	/* F2FS's range rules */
	ck_assert_int_eq(zlfs_trim(sbi, vol, UINT64_MAX, 0, &got), -EINVAL);
	ck_assert_int_eq(zlfs_trim(sbi, UINT64_MAX, 1 << 20, 0, &got), -EINVAL);
	ck_assert_int_eq(zlfs_trim(sbi, 0, 0, 0, &got), -EINVAL);
	ck_assert_int_eq(zlfs_trim(sbi, 0, 100, 0, &got), -EINVAL);
	ck_assert_int_eq(zlfs_trim(sbi, 0, (uint64_t)sbi->lay.main_blkaddr * ZF_BLKSIZE, 0, &got), 0);
	ck_assert_uint_eq(got, 0);
	ck_assert_int_eq(zlfs_trim(sbi, 0, UINT64_MAX, sec_bytes(sbi) + 1, &got), 0);
	ck_assert_uint_eq(got, 0);

	/* a big file, checkpointed, then deleted: its sections are prefree */
	make_file(sbi, "big", 3 * sec_bytes(sbi), 'b');
	make_file(sbi, "keep", 5 * ZF_BLKSIZE, 'k');
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "big", false), 0);
	ck_assert_int_eq(zlfs_trim(sbi, 0, UINT64_MAX, 0, &got), 0);
	ck_assert_uint_gt(got, 3 * sec_bytes(sbi));
	ck_assert_uint_le(got, zlfs_free_blocks(sbi) * ZF_BLKSIZE);
	expect_trimmed(sbi, img, 0, UINT64_MAX);

	/* a range of exactly one free section, and one a block short of it */
	uint32_t fs = UINT32_MAX;
	for (uint32_t s = sbi->nr_secs; s-- > 0;)
		if (sbi->secs[s].state == ZSEC_FREE && !zlfs_sec_is_log(sbi, s)) {
			fs = s;
			break;
		}
	ck_assert_uint_ne(fs, UINT32_MAX);
	uint64_t span = (uint64_t)sbi->segs_per_sec * ZF_BLKS_PER_SEG * ZF_BLKSIZE;
	ck_assert_int_eq(zlfs_trim(sbi, sec_start(sbi, fs), span, 0, &got), 0);
	ck_assert_uint_eq(got, sec_bytes(sbi));
	ck_assert_int_eq(zlfs_trim(sbi, sec_start(sbi, fs), span - ZF_BLKSIZE, 0, &got), 0);
	ck_assert_uint_eq(got, 0);
	ck_assert_int_eq(zlfs_trim(sbi, sec_start(sbi, fs) + ZF_BLKSIZE, span, 0, &got), 0);
	ck_assert_uint_eq(got, 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	/* what was kept is intact */
	sbi = tu_fs_mount(img, 0);
	struct zinode *zi;
	char buf[5 * ZF_BLKSIZE];
	size_t n = 0;
	ck_assert_int_eq(zlfs_iget(sbi, tu_lookup(sbi, ZF_ROOT_INO, "keep"), &zi), 0);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, buf, sizeof(buf), 0, &n), 0);
	ck_assert_uint_eq(n, sizeof(buf));
	ck_assert_uint_eq(tu_first_not(buf, n, 'k'), n);
	tu_fs_unmount(sbi);
}

START_TEST(test_trim_zoned)
{
	char *img = tu_fs_volume("trim-zoned.img");
	trim_case(img);
	free(img);
}
END_TEST

/* A device without zones: the main area is conventional, free sections are discarded. */
START_TEST(test_trim_conventional)
{
	char *img = tu_fs_volume_flat("trim-conv.img");

	trim_case(img);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trim");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_trim_zoned);
	tcase_add_test(tc, test_trim_conventional);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
