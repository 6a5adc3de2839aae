/*
 * test_bcache.c - the write-back cache of directory and symlink blocks
 * (fs/bcache.c) and the memory bound (super.c's zlfs_cache_balance), on a
 * volume made by mkfs.zlfs (ZLFS_MKFS), mounted in-process without FUSE.
 *
 * Covers:
 *   - creates, a symlink and unlinks in directories write no data block
 *     until the checkpoint; lookups, readdir and readlink see the cached
 *     blocks; stat's block count and the free space count them at once;
 *     after the checkpoint and a remount everything is there, fsck.f2fs
 *     clean;
 *   - a directory filled and removed before any write-back leaves no
 *     reservation behind (free space back where it was) and nothing on
 *     the device;
 *   - with cache_mb=8, 30,000 files held looked up (as the kernel holds
 *     them) keep the node cache and the block cache under their bounds
 *     all along; every file is found again, and after a remount.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zlfs.h"
#include "bcache.h"
#include "checkpoint.h"
#include "segment.h"
#include "gc.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "dir.h"
#include "testutil.h"
#include "fsutil.h"

static void mount_opts(struct zlfs_opts *o, uint32_t cache_mb)
{
	memset(o, 0, sizeof(*o));
	zlfs_disp_opts_default(&o->disp);
	zlfs_gc_opts_default(&o->gc);
	o->gc.mode = ZLFS_GC_OFF;
	o->gc.cp_interval_ms = 0;     /* no checkpoint but the ones the test makes */
	o->cache_mb = cache_mb;
}

static int count_entry(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t ftype,
		       uint64_t next)
{
	(void)name; (void)len; (void)ino; (void)ftype; (void)next;
	(*(uint32_t *)ctx)++;
	return 0;
}

#define NFILES 600

START_TEST(test_deferred)
{
	char *img = tu_fs_volume("wb.img");
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	struct zinode *zi, *d;
	struct zlfs_cred c = { 0, 0, 022 };
	char err[256], name[64];

	mount_opts(&o, 0);
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), 0);
	pthread_mutex_lock(&sbi->lock);
	uint64_t data0 = sbi->st.data_blocks, avail0 = zlfs_avail_blocks(sbi);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "d", S_IFDIR | 0755, 0, NULL, &d), 0);
	uint32_t dino = d->ino;
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "file-%05d-with-a-longer-name", i);
		ck_assert_int_eq(zlfs_create(sbi, &c, dino, name, S_IFREG | 0644, 0, NULL, &zi), 0);
		zlfs_iput(sbi, zi, 0);
	}
	/* a target too long for the inode: a block, deferred as dentry blocks are */
	char target[3600];
	memset(target, 't', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	ck_assert_int_eq(zlfs_create(sbi, &c, dino, "link", S_IFLNK | 0777, 0, target, &zi), 0);
	zlfs_iput(sbi, zi, 0);
	for (int i = 0; i < NFILES; i += 3) {
		snprintf(name, sizeof(name), "file-%05d-with-a-longer-name", i);
		ck_assert_int_eq(zlfs_unlink(sbi, dino, name, false), 0);
	}
	/* nothing written to a data log yet: the blocks wait in the cache */
	ck_assert_uint_eq(sbi->st.data_blocks, data0);
	ck_assert_uint_gt(sbi->nr_dirty_meta, 1);
	/* all new blocks but the root's, which mkfs wrote */
	ck_assert_uint_eq(sbi->pending_blocks + 1, sbi->nr_dirty_meta);
	/* but they are counted: stat's blocks and the free space */
	ck_assert_int_eq(zlfs_iget(sbi, dino, &d), 0);
	struct stat st;
	zlfs_inode_stat(sbi, d, &st);
	/* its blocks: all dirty ones but the root's and the symlink's */
	ck_assert_uint_eq((uint64_t)st.st_blocks, ((uint64_t)sbi->nr_dirty_meta - 2) * 8);
	ck_assert_uint_lt(zlfs_avail_blocks(sbi), avail0 - sbi->nr_dirty_meta);
	uint32_t n = 0;
	ck_assert_int_eq(zlfs_dir_iterate(sbi, d, 0, count_entry, &n), 0);
	ck_assert_uint_eq(n, 2 + NFILES - (NFILES + 2) / 3 + 1);
	for (int i = 1; i < NFILES; i += 3) {
		snprintf(name, sizeof(name), "file-%05d-with-a-longer-name", i);
		tu_lookup(sbi, dino, name);
	}
	uint32_t lino = tu_lookup(sbi, dino, "link");
	char buf[4096];
	size_t got;
	ck_assert_int_eq(zlfs_iget(sbi, lino, &zi), 0);
	ck_assert(!(zi_raw(zi)->i_inline & ZF_INLINE_DATA));
	ck_assert_int_eq(zlfs_file_read(sbi, zi, buf, sizeof(buf), 0, &got), 0);
	ck_assert_uint_eq(got, strlen(target));
	ck_assert(!memcmp(buf, target, got));
	zlfs_iput(sbi, zi, 0);

	/* the checkpoint writes them, before the nodes */
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	ck_assert_uint_eq(sbi->nr_dirty_meta, 0);
	ck_assert_uint_eq(sbi->pending_blocks, 0);
	ck_assert_uint_gt(sbi->st.data_blocks, data0);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	tu_fsck_clean(img);

	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), 0);
	pthread_mutex_lock(&sbi->lock);
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "file-%05d-with-a-longer-name", i);
		struct zinode *dd;
		uint32_t ino;
		uint8_t ft;
		ck_assert_int_eq(zlfs_iget(sbi, dino, &dd), 0);
		int ret = zlfs_dir_lookup(sbi, dd, name, strlen(name), &ino, &ft);
		ck_assert_int_eq(ret, i % 3 ? 0 : -ENOENT);
	}
	ck_assert_int_eq(zlfs_iget(sbi, tu_lookup(sbi, dino, "link"), &zi), 0);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, buf, sizeof(buf), 0, &got), 0);
	ck_assert(got == strlen(target) && !memcmp(buf, target, got));
	zlfs_iput(sbi, zi, 0);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

/* A directory made, filled and removed between checkpoints costs nothing. */
START_TEST(test_gone_before_writeback)
{
	char *img = tu_fs_volume("gone.img");
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	struct zinode *zi, *d;
	struct zlfs_cred c = { 0, 0, 022 };
	char err[256], name[64];

	mount_opts(&o, 0);
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), 0);
	pthread_mutex_lock(&sbi->lock);
	uint64_t data0 = sbi->st.data_blocks, avail0 = zlfs_avail_blocks(sbi);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "tmp", S_IFDIR | 0755, 0, NULL, &d), 0);
	uint32_t dino = d->ino;
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		ck_assert_int_eq(zlfs_create(sbi, &c, dino, name, S_IFREG | 0644, 0, NULL, &zi), 0);
		zlfs_iput(sbi, zi, 0);
	}
	ck_assert_uint_gt(sbi->pending_blocks, 1);
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		ck_assert_int_eq(zlfs_unlink(sbi, dino, name, false), 0);
	}
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "tmp", true), 0);
	/* the root's own block stays dirty; the directory's are gone with it */
	ck_assert_uint_le(sbi->pending_blocks, 1);
	ck_assert_uint_le(sbi->nr_dirty_meta, 1);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	ck_assert_uint_eq(sbi->pending_blocks, 0);
	ck_assert_uint_le(sbi->st.data_blocks, data0 + 1);
	ck_assert_uint_ge(zlfs_avail_blocks(sbi) + 1, avail0);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

#define BIG 30000
#define PER_DIR 100

START_TEST(test_memory_bound)
{
	char *img = tu_fs_volume("bound.img");
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	struct zinode *zi, *d;
	struct zlfs_cred c = { 0, 0, 022 };
	char err[256], name[64];
	uint32_t dirs[BIG / PER_DIR];

	mount_opts(&o, 8);
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), 0);
	pthread_mutex_lock(&sbi->lock);
	uint32_t bcap = sbi->cache_blocks / 4, max_nodes = 0, max_dirty = 0, max_blocks = 0;
	uint64_t cps = sbi->cp_count;
	for (int i = 0; i < BIG; i++) {
		if (i % PER_DIR == 0) {
			snprintf(name, sizeof(name), "dir%d", i / PER_DIR);
			zlfs_cache_balance(sbi, true);
			ck_assert_int_eq(zlfs_balance(sbi, 8), 0);
			ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, name, S_IFDIR | 0755, 0,
						     NULL, &d), 0);
			d->nlookup++;              /* the kernel holds it */
			dirs[i / PER_DIR] = d->ino;
		}
		snprintf(name, sizeof(name), "f%d", i);
		zlfs_cache_balance(sbi, true);      /* as every FUSE operation starts */
		ck_assert_int_eq(zlfs_balance(sbi, 8), 0);
		ck_assert_int_eq(zlfs_create(sbi, &c, dirs[i / PER_DIR], name, S_IFREG | 0644, 0,
					     NULL, &zi), 0);
		zi->nlookup++;
		if (sbi->nr_nodes > max_nodes)
			max_nodes = sbi->nr_nodes;
		if (sbi->nr_dirty_nodes + sbi->nr_dirty_meta > max_dirty)
			max_dirty = sbi->nr_dirty_nodes + sbi->nr_dirty_meta;
		if (zlfs_bcache_count(sbi) > max_blocks)
			max_blocks = zlfs_bcache_count(sbi);
	}
	/* an operation may add a few nodes past the bound before the next trim */
	ck_assert_msg(max_nodes <= sbi->node_cap + sbi->node_cap / 32 + 16,
		      "nodes %u, cap %u", max_nodes, sbi->node_cap);
	ck_assert_msg(max_dirty <= sbi->dirty_cap + 16, "dirty %u, cap %u", max_dirty, sbi->dirty_cap);
	ck_assert_msg(max_blocks <= bcap, "blocks %u, cap %u", max_blocks, bcap);
	ck_assert_uint_gt(sbi->cp_count, cps);     /* the dirty bound wrote checkpoints */
	ck_assert_uint_gt(sbi->nr_inodes, BIG);    /* every inode still known */
	/* every file found again, its inode reloaded where it was unpinned */
	for (int i = 0; i < BIG; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		zlfs_cache_balance(sbi, true);
		uint32_t ino = tu_lookup(sbi, dirs[i / PER_DIR], name);
		ck_assert_int_eq(zlfs_iget(sbi, ino, &zi), 0);
		ck_assert(S_ISREG(zf_le16_to_cpu(zi_raw(zi)->i_mode)));
		ck_assert_uint_eq(zf_le32_to_cpu(zi_raw(zi)->i_pino), dirs[i / PER_DIR]);
		zlfs_iput(sbi, zi, 1);                  /* the kernel forgets it */
	}
	ck_assert_uint_le(sbi->nr_nodes, sbi->node_cap + sbi->node_cap / 32 + 16);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	tu_fsck_clean(img);

	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), 0);
	pthread_mutex_lock(&sbi->lock);
	for (int i = 0; i < BIG; i += 7) {
		snprintf(name, sizeof(name), "f%d", i);
		tu_lookup(sbi, dirs[i / PER_DIR], name);
	}
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bcache");
	TCase *t = tcase_create("writeback");

	tcase_add_test(t, test_deferred);
	tcase_add_test(t, test_gone_before_writeback);
	tcase_add_test(t, test_memory_bound);
	suite_add_tcase(s, t);
	return tu_run(s);
}
