/*
 * test_gc.c - garbage collection (fs/gc.c) and the pieces it relies on:
 * option parsing, the relocation map and the victim index (segment.c), and GC on a mounted
 * volume without FUSE: random overwrites on an image made by mkfs.zlfs
 * (ZLFS_MKFS names the binary; meson passes it), foreground GC keeping the
 * writes going, every block read back, and again after a remount.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "zlfs.h"
#include "segment.h"
#include "gc.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "dir.h"
#include "testutil.h"
#include "fsutil.h"

START_TEST(test_opts)
{
	struct zlfs_gc_opts o;

	zlfs_gc_opts_default(&o);
	ck_assert_int_eq(o.mode, ZLFS_GC_ON);
	ck_assert_uint_eq(o.no_gc_pct, 60);
	ck_assert_uint_eq(o.boost_pct, 25);
	ck_assert_int_eq(zlfs_gc_opts_set(&o, "gc", "urgent"), 0);
	ck_assert_int_eq(o.mode, ZLFS_GC_URGENT);
	ck_assert_int_eq(zlfs_gc_opts_set(&o, "gc", "off"), 0);
	ck_assert_int_eq(o.mode, ZLFS_GC_OFF);
	ck_assert_int_eq(zlfs_gc_opts_set(&o, "gc", "sometimes"), -EINVAL);
	ck_assert_int_eq(zlfs_gc_opts_set(&o, "policy", "cb"), 0);
	ck_assert_int_eq(o.policy, ZLFS_GCP_CB);
	ck_assert_int_eq(zlfs_gc_opts_set(&o, "policy", "greedy"), 0);
	ck_assert_int_eq(o.policy, ZLFS_GCP_GREEDY);
	ck_assert_int_eq(zlfs_gc_opts_set(&o, "idle_ms", "1500"), 0);
	ck_assert_uint_eq(o.idle_ms, 1500);
	ck_assert_int_eq(zlfs_gc_opts_set(&o, "no_gc_pct", "101"), -EINVAL);
	ck_assert_int_eq(zlfs_gc_opts_set(&o, "boost_pct", ""), -EINVAL);
	ck_assert_int_eq(zlfs_gc_opts_set(&o, "boost_pct", "12x"), -EINVAL);
	ck_assert_int_eq(zlfs_gc_opts_set(&o, "nonsense", "1"), -EINVAL);
	ck_assert_uint_eq(o.cp_interval_ms, 60000);
	ck_assert_int_eq(zlfs_gc_opts_set(&o, "cp_interval_ms", "250"), 0);
	ck_assert_uint_eq(o.cp_interval_ms, 250);
}
END_TEST

START_TEST(test_reloc)
{
	struct zlfs_sb *sbi = calloc(1, sizeof(*sbi));

	ck_assert(!zlfs_seg_moved(sbi, 100, 200));      /* nothing recorded yet */
	zlfs_seg_reloc_add(sbi, 100, 200);
	ck_assert(zlfs_seg_moved(sbi, 100, 200));
	ck_assert(!zlfs_seg_moved(sbi, 100, 201));
	ck_assert(!zlfs_seg_moved(sbi, 200, 100));
	/* moved twice: a chain */
	zlfs_seg_reloc_add(sbi, 200, 300);
	ck_assert(zlfs_seg_moved(sbi, 100, 300));
	ck_assert(zlfs_seg_moved(sbi, 100, 200));
	/* many entries: the table grows and keeps them all */
	for (uint32_t i = 0; i < 100000; i++)
		zlfs_seg_reloc_add(sbi, 1000000 + i, 5000000 + i);
	for (uint32_t i = 0; i < 100000; i += 997)
		ck_assert(zlfs_seg_moved(sbi, 1000000 + i, 5000000 + i));
	ck_assert(zlfs_seg_moved(sbi, 100, 300));
	zlfs_seg_reloc_clear(sbi);
	ck_assert(!zlfs_seg_moved(sbi, 100, 200));
	ck_assert(!zlfs_seg_moved(sbi, 1000000, 5000000));
	zlfs_seg_destroy(sbi);
	free(sbi);
}
END_TEST

static void pattern(uint8_t *b, uint64_t blk, uint32_t gen)
{
	tu_fill(b, ZF_BLKSIZE, blk * 7919 + gen);
}

/* Written without fsync, it is checkpointed by the background thread (gc=off too). */
START_TEST(test_periodic_checkpoint)
{
	char *img = tu_fs_volume("cp.img");
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	struct zinode *zi;
	struct zlfs_cred c = { 0, 0, 022 };
	char err[256];
	static char buf[ZF_BLKSIZE];

	memset(&o, 0, sizeof(o));
	zlfs_disp_opts_default(&o.disp);
	zlfs_gc_opts_default(&o.gc);
	o.gc.mode = ZLFS_GC_OFF;
	o.gc.cp_interval_ms = 300;
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), 0);
	pthread_mutex_lock(&sbi->lock);
	uint64_t cps = sbi->cp_count;
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "f", S_IFREG | 0644, 0, NULL, &zi), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, buf, sizeof(buf), 0), 0);
	ck_assert(sbi->dirty);
	/* no deadline: the thread runs when it runs; a hung one fails on the test timeout */
	while (sbi->dirty) {
		pthread_mutex_unlock(&sbi->lock);
		usleep(20000);
		pthread_mutex_lock(&sbi->lock);
	}
	ck_assert_uint_gt(sbi->cp_count, cps);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	free(img);
}
END_TEST

/*
 * segment.c's victim index against the sections: every section in use is
 * on it exactly once, in order of valid blocks, and nothing else is; the
 * free and prefree maps have a section's bit exactly when it is in that state.
 */
static void check_victim_index(const struct zlfs_sb *sbi)
{
	uint8_t *seen = calloc(sbi->nr_secs, 1);
	uint32_t n = 0, inuse = 0, last = 0;

	ck_assert_ptr_nonnull(seen);
	for (uint32_t s = zlfs_sec_by_valid(sbi, 0); s != UINT32_MAX; s = zlfs_sec_by_valid_next(sbi, s)) {
		ck_assert_uint_lt(s, sbi->nr_secs);
		ck_assert_msg(!seen[s], "section %u twice in the index", s);
		seen[s] = 1;
		ck_assert_uint_eq(sbi->secs[s].state, ZSEC_INUSE);
		ck_assert_uint_ge(sbi->secs[s].valid, last);
		last = sbi->secs[s].valid;
		n++;
	}
	for (uint32_t s = 0; s < sbi->nr_secs; s++) {
		inuse += sbi->secs[s].state == ZSEC_INUSE;
		/* and the free and prefree maps the allocator and the checkpoint use */
		ck_assert_int_eq(!!(sbi->free_map[s / 64] & (1ull << (s % 64))),
				 sbi->secs[s].state == ZSEC_FREE);
		ck_assert_int_eq(!!(sbi->prefree_map[s / 64] & (1ull << (s % 64))),
				 sbi->secs[s].state == ZSEC_PREFREE);
	}
	ck_assert_uint_eq(n, inuse);
	free(seen);
}

/* Random overwrites of a file 80% of the capacity, GC only in the foreground. */
START_TEST(test_overwrite)
{
	char *img = tu_fs_volume("gc.img");
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	struct zinode *zi;
	struct zlfs_cred c = { 0, 0, 022 };
	char err[256];
	uint8_t *buf = malloc(ZF_BLKSIZE), *got = malloc(ZF_BLKSIZE);

	memset(&o, 0, sizeof(o));
	zlfs_disp_opts_default(&o.disp);
	zlfs_gc_opts_default(&o.gc);
	o.gc.mode = ZLFS_GC_OFF;
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), 0);
	pthread_mutex_lock(&sbi->lock);
	uint64_t nblk = sbi->user_block_count * 8 / 10;
	uint32_t *gen = calloc(nblk, sizeof(*gen));
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "f", S_IFREG | 0644, 0, NULL, &zi), 0);
	zi->nopen++;
	for (uint64_t b = 0; b < nblk; b++) {
		pattern(buf, b, 0);
		ck_assert_int_eq(zlfs_balance(sbi, 4), 0);
		ck_assert_int_eq(zlfs_file_write(sbi, zi, (char *)buf, ZF_BLKSIZE, b * ZF_BLKSIZE), 0);
	}
	uint64_t x = 12345;
	for (uint64_t k = 0; k < 3 * nblk; k++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t b = (x >> 20) % nblk;
		pattern(buf, b, ++gen[b]);
		ck_assert_int_eq(zlfs_balance(sbi, 4), 0);
		int ret = zlfs_file_write(sbi, zi, (char *)buf, ZF_BLKSIZE, b * ZF_BLKSIZE);
		ck_assert_msg(ret == 0, "overwrite %llu: %d (avail %llu)", (unsigned long long)k, ret,
			      (unsigned long long)zlfs_avail_blocks(sbi));
		if (k % (nblk / 4) == 0)
			check_victim_index(sbi);
	}
	/* GC ran and freed zones, and never copied more than the model allows */
	ck_assert_uint_gt(sbi->st.gc_data_moved, 0);
	ck_assert_uint_gt(sbi->st.zones_reset, 0);
	ck_assert_uint_gt(sbi->st.fg_gc_runs, 0);
	ck_assert_uint_lt(sbi->st.gc_data_moved, 3 * 3 * nblk);
	for (uint64_t b = 0; b < nblk; b++) {
		size_t n;
		pattern(buf, b, gen[b]);
		ck_assert_int_eq(zlfs_file_read(sbi, zi, (char *)got, ZF_BLKSIZE, b * ZF_BLKSIZE, &n), 0);
		ck_assert_msg(n == ZF_BLKSIZE && !memcmp(buf, got, ZF_BLKSIZE), "block %llu",
			      (unsigned long long)b);
	}
	/* the counts segment.c keeps agree with the sections */
	uint32_t free_secs = 0, prefree = 0;
	uint64_t valid = 0;
	for (uint32_t s = 0; s < sbi->nr_secs; s++) {
		free_secs += sbi->secs[s].state == ZSEC_FREE;
		prefree += sbi->secs[s].state == ZSEC_PREFREE;
		valid += sbi->secs[s].valid;
	}
	ck_assert_uint_eq(free_secs, sbi->free_secs);
	ck_assert_uint_eq(prefree, sbi->prefree_secs);
	ck_assert_uint_eq(valid, sbi->valid_block_count);
	check_victim_index(sbi);
	zi->nopen--;
	zlfs_iput(sbi, zi, 0);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);

	/* and after a remount */
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), 0);
	pthread_mutex_lock(&sbi->lock);
	struct zinode *root;
	uint32_t ino;
	uint8_t ft;
	ck_assert_int_eq(zlfs_iget(sbi, ZF_ROOT_INO, &root), 0);
	ck_assert_int_eq(zlfs_dir_lookup(sbi, root, "f", 1, &ino, &ft), 0);
	ck_assert_int_eq(zlfs_iget(sbi, ino, &zi), 0);
	check_victim_index(sbi);
	for (uint64_t b = 0; b < nblk; b++) {
		size_t n;
		pattern(buf, b, gen[b]);
		ck_assert_int_eq(zlfs_file_read(sbi, zi, (char *)got, ZF_BLKSIZE, b * ZF_BLKSIZE, &n), 0);
		ck_assert_msg(!memcmp(buf, got, ZF_BLKSIZE), "block %llu after remount",
			      (unsigned long long)b);
	}
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	free(gen);
	free(buf);
	free(got);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gc");
	TCase *tc = tcase_create("gc");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_opts);
	tcase_add_test(tc, test_reloc);
	tcase_add_test(tc, test_overwrite);
	tcase_add_test(tc, test_periodic_checkpoint);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
