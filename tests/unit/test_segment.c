/*
 * test_segment.c - segment.c's space accounting as statfs and the
 * writeback gate see it, in-process on a volume made by mkfs.zlfs: statfs
 * answers while another thread holds the filesystem lock exclusively (a
 * df never waits for a writer), its figures are those published by the
 * last release of that lock (an operation's end, or a wait for I/O), and the gate closes below the reserve and
 * opens again when space comes back.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zlfs.h"
#include "zlfs/f2fs_sit.h"
#include "checkpoint.h"
#include "segment.h"
#include "gc.h"
#include "node.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "testutil.h"
#include "fsutil.h"

static const struct zlfs_cred cred = { 0, 0, 022 };

struct statfs_call {
	struct zlfs_sb *sbi;
	struct statvfs st;
	int done;
};

static void *do_statfs(void *arg)
{
	struct statfs_call *c = arg;

	zlfs_statfs(c->sbi, &c->st);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A file of len bytes in the root; the lock is held (tu_fs_mount). */
static uint32_t make_file(struct zlfs_sb *sbi, const char *name, size_t len)
{
	struct zinode *zi;
	char *buf = malloc(len);
	uint32_t ino;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 'x', len);
	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, name, S_IFREG | 0644, 0, NULL, &zi), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, buf, len, 0), 0);
	ino = zi->ino;
	zlfs_iput(sbi, zi, 0);
	free(buf);
	return ino;
}

/* Let go of the exclusive lock and take it again: what every operation's end does. */
static void release(struct zlfs_sb *sbi)
{
	zlfs_unlock(sbi);
	zlfs_lock(sbi);
}

START_TEST(statfs_takes_no_lock)
{
	char *img = tu_fs_volume("seg-nolock");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);   /* this thread holds the lock */
	struct statfs_call c = { .sbi = sbi };
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, do_statfs, &c), 0);
	/*
	 * If statfs waited for the lock it would never finish while we hold
	 * it: wait for it (a minute is no limit a working statfs comes near;
	 * it is what stops a broken one from hanging the test).
	 */
	for (int i = 0; i < 60000 && !__atomic_load_n(&c.done, __ATOMIC_ACQUIRE); i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	ck_assert_msg(__atomic_load_n(&c.done, __ATOMIC_ACQUIRE),
		      "statfs waited for the exclusive lock");
	pthread_join(t, NULL);
	ck_assert_uint_eq(c.st.f_blocks, sbi->user_block_count);
	ck_assert_uint_eq(c.st.f_bfree, zlfs_free_blocks(sbi));
	ck_assert_uint_eq(c.st.f_bavail, c.st.f_bfree);
	ck_assert_uint_gt(c.st.f_ffree, 0);
	ck_assert_uint_eq(c.st.f_namemax, ZF_NAME_LEN);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

START_TEST(statfs_shows_the_last_release)
{
	char *img = tu_fs_volume("seg-publish");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct statvfs before, after;

	release(sbi);
	zlfs_statfs(sbi, &before);
	/* (a write that waits for I/O publishes too: the lock is let go there) */
	make_file(sbi, "f", 8 << 20);
	release(sbi);
	zlfs_statfs(sbi, &after);
	ck_assert_uint_eq(after.f_bfree, zlfs_free_blocks(sbi));
	ck_assert_uint_le(after.f_bfree + (8 << 20) / ZF_BLKSIZE, before.f_bfree);
	ck_assert_uint_lt(after.f_ffree, before.f_ffree);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

START_TEST(gate_closes_below_the_reserve)
{
	char *img = tu_fs_volume("seg-gate");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	release(sbi);
	ck_assert(!zlfs_space_low(sbi));             /* no reserve: never */
	uint64_t free0 = zlfs_free_blocks(sbi);
	/* a reserve 4 MiB below what is free: open; 16 MiB written: closed */
	zlfs_space_set_reserve(sbi, free0 - (4 << 20) / ZF_BLKSIZE);
	ck_assert(!zlfs_space_low(sbi));
	make_file(sbi, "big", 16 << 20);
	release(sbi);
	ck_assert(zlfs_space_low(sbi));
	/* the file deleted and its space freed by a checkpoint: open again */
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "big", false), 0);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	release(sbi);
	ck_assert(!zlfs_space_low(sbi));
	zlfs_space_set_reserve(sbi, 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

/*
 * Writes until ENOSPC: the volume's accounting must never pass the
 * user's share (the checkpoint of such a volume is refused at the next
 * mount: "valid_block_count past user_block_count").  Found by
 * check-enospc.sh with the writeback gate off: writeback filled the
 * volume to its last block.
 */
static void fill_to_the_end(size_t chunk)
{
	char *img = tu_fs_volume("seg-fill");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi;
	char *buf = malloc(chunk);
	uint64_t off = 0;
	int ret = 0, files = 0;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 'z', chunk);
	while (ret != -ENOSPC && files < 64) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", files++);
		ret = zlfs_create(sbi, &cred, ZF_ROOT_INO, name, S_IFREG | 0644, 0, NULL, &zi);
		if (ret == -ENOSPC)
			break;
		ck_assert_int_eq(ret, 0);
		for (off = 0; !(ret = zlfs_balance(sbi, chunk / ZF_BLKSIZE + 3)) &&
			      !(ret = zlfs_file_write(sbi, zi, buf, chunk, off)); off += chunk)
			;
		ck_assert_int_eq(ret, -ENOSPC);
		ck_assert_uint_le(sbi->valid_block_count + sbi->nr_new_nodes, sbi->user_block_count);
		zlfs_iput(sbi, zi, 0);
		release(sbi);
	}
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	ck_assert_uint_le(sbi->valid_block_count, sbi->user_block_count);
	free(buf);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	sbi = tu_fs_mount(img, 0);         /* its checkpoint is accepted */
	tu_fs_unmount(sbi);
	free(img);
}

START_TEST(fill_1m)
{
	fill_to_the_end(1 << 20);
}
END_TEST

START_TEST(fill_4k)
{
	fill_to_the_end(4096);
}
END_TEST

START_TEST(fill_13k)
{
	fill_to_the_end(13 * 1024);
}
END_TEST

/*
 * The last free block, asked for by a write that also needs a new direct
 * node: the node takes it, so the data must get ENOSPC.  Before the fix
 * the write's check counted its data blocks only and the volume ended a
 * block past its user share: a checkpoint the next mount refused
 * ("valid_block_count past user_block_count"; check-enospc.sh with the
 * writeback gate off found it).
 */
START_TEST(last_block_needs_a_node)
{
	char *img = tu_fs_volume("seg-lastblk");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *a, *b;
	char blk[ZF_BLKSIZE];
	unsigned int in_inode;
	uint64_t off = 0;

	memset(blk, 'a', sizeof(blk));
	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, "a", S_IFREG | 0644, 0, NULL, &a), 0);
	zlfs_dnode_addrs(sbi, a->node, &in_inode);
	/* every slot of a's inode filled: its next block needs a direct node */
	for (unsigned int i = 0; i < in_inode; i++)
		ck_assert_int_eq(zlfs_file_write(sbi, a, blk, sizeof(blk), (uint64_t)i * ZF_BLKSIZE), 0);
	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, "b", S_IFREG | 0644, 0, NULL, &b), 0);
	/* b takes all but one block (its own nodes included) */
	while (zlfs_avail_blocks(sbi) > 1) {
		ck_assert_int_eq(zlfs_file_write(sbi, b, blk, sizeof(blk), off), 0);
		off += ZF_BLKSIZE;
	}
	ck_assert_uint_eq(zlfs_avail_blocks(sbi), 1);
	ck_assert_int_eq(zlfs_file_write(sbi, a, blk, sizeof(blk), (uint64_t)in_inode * ZF_BLKSIZE),
			 -ENOSPC);
	ck_assert_uint_le(sbi->valid_block_count + sbi->nr_new_nodes + sbi->pending_blocks,
			  sbi->user_block_count);
	zlfs_iput(sbi, a, 0);
	zlfs_iput(sbi, b, 0);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	ck_assert_uint_le(sbi->valid_block_count, sbi->user_block_count);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	sbi = tu_fs_mount(img, 0);         /* its checkpoint is accepted */
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/* The checkpoint's free segment count, one segment at a time (what zlfs_seg_free_count keeps). */
static uint32_t free_segs_counted(const struct zlfs_sb *sbi)
{
	uint32_t n = 0;

	for (uint32_t s = 0; s < sbi->nr_segs; s++) {
		bool log = false;
		for (int i = 0; i < ZF_NR_LOGS; i++)
			log |= sbi->logs[i].segno == s;
		if (sbi->lay.zones_visible && !zf_layout_usable_blocks(&sbi->lay, s))
			continue;
		n += !zlfs_seg(sbi, s)->valid && !log;
	}
	return n;
}

/* SIT blocks in memory, counted. */
static uint32_t sit_held(const struct zlfs_sb *sbi)
{
	uint32_t n = 0;

	for (uint32_t b = 0; b < sbi->sit_blocks; b++)
		n += sbi->sit_blk[b] != NULL;
	return n;
}

/*
 * The SIT in memory a block at a time: only blocks with a segment in use
 * or a log's are held; a section the data leaves gives its block back
 * once the checkpoint freed it; a remount reads back exactly those
 * (zones found empty are not read); the free segment count follows.
 */
START_TEST(sit_blocks_on_demand)
{
	char *img = tu_fs_volume("seg-sit");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	const uint32_t per = ZF_SIT_ENTRY_PER_BLOCK;

	ck_assert_uint_ge(sbi->sit_blocks, 3);
	uint32_t held0 = sbi->sit_blocks_held;
	ck_assert_uint_eq(sit_held(sbi), held0);
	ck_assert_uint_lt(held0, sbi->sit_blocks);
	ck_assert_uint_eq(zlfs_seg_free_count(sbi), free_segs_counted(sbi));
	/* the next-to-last SIT block's first whole section: nothing is there yet */
	uint32_t b = sbi->sit_blocks - 2;
	uint32_t sec = (b * per + sbi->segs_per_sec - 1) / sbi->segs_per_sec;
	ck_assert_uint_lt(sec, sbi->nr_secs);
	ck_assert_ptr_null(sbi->sit_blk[b]);
	ck_assert_uint_eq(sbi->secs[sec].state, ZSEC_FREE);

	/* a file written there: the block comes into memory */
	sbi->mem_cursor[0] = sec;
	uint32_t a = make_file(sbi, "a", (size_t)sbi->sec_blocks * ZF_BLKSIZE + (1 << 20));
	ck_assert_ptr_nonnull(sbi->sit_blk[b]);
	ck_assert_uint_eq(sbi->sit_blocks_held, sit_held(sbi));
	ck_assert_uint_eq(sbi->secs[sec].state, ZSEC_INUSE);
	ck_assert_uint_eq(zlfs_seg_free_count(sbi), free_segs_counted(sbi));
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	sbi = tu_fs_mount(img, 0);
	ck_assert_ptr_nonnull(sbi->sit_blk[b]);
	ck_assert_uint_eq(sbi->sit_blocks_held, sit_held(sbi));
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "a"), a);
	ck_assert_uint_eq(zlfs_seg_free_count(sbi), free_segs_counted(sbi));
	/*
	 * b fills the rest of a's last section, then the log moves back to
	 * the low sections; then both files go
	 */
	sbi->mem_cursor[0] = 0;
	make_file(sbi, "b", (size_t)sbi->sec_blocks * ZF_BLKSIZE + (1 << 20));
	bool log_there = false;
	for (int i = 0; i < ZF_NR_LOGS; i++)
		log_there |= sbi->logs[i].segno / per == b;
	ck_assert(!log_there);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "a", false), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "b", false), 0);
	ck_assert_uint_eq(zlfs_seg_free_count(sbi), free_segs_counted(sbi));
	/* prefree until a checkpoint commits; then free, and the block is let go */
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	ck_assert_uint_eq(sbi->secs[sec].state, ZSEC_FREE);
	ck_assert_ptr_null(sbi->sit_blk[b]);
	ck_assert_uint_eq(sbi->sit_blocks_held, sit_held(sbi));
	ck_assert_uint_eq(zlfs_seg_free_count(sbi), free_segs_counted(sbi));
	for (uint32_t s = b * per; s < sbi->nr_segs && s < (b + 1) * per; s++)
		ck_assert_uint_eq(zlfs_seg(sbi, s)->valid, 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	sbi = tu_fs_mount(img, 0);
	ck_assert_ptr_null(sbi->sit_blk[b]);
	ck_assert_uint_eq(sbi->sit_blocks_held, sit_held(sbi));
	ck_assert_uint_eq(zlfs_seg_free_count(sbi), free_segs_counted(sbi));
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/*
 * A checkpoint writes the SIT and NAT blocks changed since the last one,
 * no others: none when nothing changed, a few for one small file on a
 * volume of dozens of SIT blocks and hundreds of NAT blocks.
 */
START_TEST(cp_writes_changed_tables_only)
{
	char *img = tu_fs_volume("seg-cpw");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);

	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	uint64_t sit0 = sbi->st.cp_sit_written, nat0 = sbi->st.cp_nat_written;
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);   /* nothing changed since */
	ck_assert_uint_eq(sbi->st.cp_sit_written, sit0);
	ck_assert_uint_eq(sbi->st.cp_nat_written, nat0);
	make_file(sbi, "one", 3 * ZF_BLKSIZE);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	uint64_t sit = sbi->st.cp_sit_written - sit0, nat = sbi->st.cp_nat_written - nat0;
	ck_assert_uint_ge(sit, 1);
	ck_assert_uint_le(sit, 3);
	ck_assert_uint_ge(nat, 1);
	ck_assert_uint_le(nat, 2);
	ck_assert_uint_gt(sbi->sit_blocks, 4);
	ck_assert_uint_gt(sbi->nat_blocks, 100);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

/*
 * What the SIT in memory says agrees with itself, every block read back
 * as needed: each section's valid count and mtime sum are its segments',
 * a segment's count is its map's weight, an empty segment's mtime is 0,
 * segs_in_use and valid_block_count are the sums.
 */
static void check_sit(struct zlfs_sb *sbi)
{
	uint64_t valid = 0;
	uint32_t in_use = 0;

	for (uint32_t sec = 0; sec < sbi->nr_secs; sec++) {
		uint64_t v = 0, mt = 0;
		uint32_t live = 0;
		for (uint32_t i = 0; i < sbi->segs_per_sec; i++) {
			const struct zseg *e = zlfs_seg(sbi, sec * sbi->segs_per_sec + i);
			ck_assert_uint_eq(zf_sit_map_weight(e->map), e->valid);
			ck_assert(e->valid || !e->mtime);
			v += e->valid;
			mt += e->mtime;
			live += e->valid != 0;
		}
		in_use += live;
		/* cost-benefit's mean age divides by these, not by all the segments */
		ck_assert_msg(live == sbi->secs[sec].live, "section %u: %u segments in use, counted %u",
			      sec, live, sbi->secs[sec].live);
		ck_assert_msg(v == sbi->secs[sec].valid, "section %u: %llu valid, counted %u", sec,
			      (unsigned long long)v, sbi->secs[sec].valid);
		ck_assert_msg(mt == sbi->secs[sec].mtime, "section %u: mtimes %llu, summed %llu", sec,
			      (unsigned long long)mt, (unsigned long long)sbi->secs[sec].mtime);
		valid += v;
	}
	ck_assert_uint_eq(valid, sbi->valid_block_count);
	ck_assert_uint_eq(in_use, sbi->segs_in_use);
	ck_assert(!sbi->fatal);
}

static void pattern(uint8_t *b, uint64_t blk, uint32_t gen)
{
	tu_fill(b, ZF_BLKSIZE, blk * 7919 + gen);
}

/*
 * Deletes dirty SIT blocks and no nodes (the inodes are freed, not
 * written): those blocks count toward the dirty bound with the nodes and
 * directory blocks, so files spread over several SIT blocks, unlinked one
 * per operation under a bound of two, leave no more than two dirty after
 * each operation's start (before the fix, the SIT's were not counted and
 * piled up until the 60 s checkpoint).
 */
START_TEST(deletes_dirty_sit_blocks_count)
{
	char *img = tu_fs_volume("seg-dsit");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	const uint32_t per = ZF_SIT_ENTRY_PER_BLOCK;
	char name[16];
	uint32_t n = 0;

	for (uint32_t b = 0; b + 1 < sbi->sit_blocks && n < 4; b++) {
		uint32_t sec = (b * per + sbi->segs_per_sec - 1) / sbi->segs_per_sec;
		if (sec >= sbi->nr_secs || sbi->secs[sec].state != ZSEC_FREE)
			continue;
		sbi->mem_cursor[0] = sec;
		snprintf(name, sizeof(name), "f%u", n++);
		make_file(sbi, name, (size_t)sbi->sec_blocks * ZF_BLKSIZE + (1 << 20));
	}
	ck_assert_uint_ge(n, 3);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	ck_assert_uint_eq(sbi->sit_dirty_blocks, 0);
	uint64_t cps = sbi->cp_count;
	uint32_t most_sit = 0;
	sbi->dirty_cap = 2;
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, name, false), 0);
		if (sbi->sit_dirty_blocks > most_sit)
			most_sit = sbi->sit_dirty_blocks;
		zlfs_cache_balance(sbi, false);     /* as the next operation starts */
		uint32_t dirty = sbi->nr_dirty_nodes + sbi->nr_dirty_meta + sbi->sit_dirty_blocks;
		ck_assert_msg(dirty <= sbi->dirty_cap, "after unlink %u: %u dirty (%u SIT), cap %u",
			      i, dirty, sbi->sit_dirty_blocks, sbi->dirty_cap);
	}
	ck_assert_uint_ge(most_sit, 2);            /* each unlink dirtied SIT blocks of its own */
	ck_assert_uint_gt(sbi->cp_count, cps);
	check_sit(sbi);                            /* sections partly emptied count right */
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

/*
 * The SIT under a bound of one block: random overwrites of a file 70% of
 * the volume, with foreground GC and checkpoints, drop clean blocks with
 * segments in use and read them back when a block of theirs dies, when GC
 * takes a victim there and when a log comes back to them; the counts
 * stay exact, the data whole, both fscks clean, and a mount under the
 * same bound reads the whole SIT through its share.
 */
START_TEST(sit_paging)
{
	char *img = tu_fs_volume("seg-page");
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	struct zinode *zi;
	char err[256];
	uint8_t *buf = malloc(ZF_BLKSIZE), *got = malloc(ZF_BLKSIZE);

	zlfs_opts_inprocess(&o);
	o.sit_cap = 1;
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), 0);
	pthread_mutex_lock(&sbi->lock);
	ck_assert_uint_eq(sbi->sit_cap, 1);
	ck_assert_uint_ge(sbi->sit_blocks, 4);
	uint64_t nblk = sbi->user_block_count * 7 / 10;
	uint32_t *gen = calloc(nblk, sizeof(*gen));
	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, "f", S_IFREG | 0644, 0, NULL, &zi), 0);
	uint32_t ino = zi->ino;
	zi->nopen++;
	for (uint64_t b = 0; b < nblk; b++) {
		pattern(buf, b, 0);
		zlfs_cache_balance(sbi, false);   /* as every operation starts */
		ck_assert_int_eq(zlfs_balance(sbi, 4), 0);
		ck_assert_int_eq(zlfs_file_write(sbi, zi, (char *)buf, ZF_BLKSIZE, b * ZF_BLKSIZE), 0);
	}
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	zlfs_cache_balance(sbi, false);
	ck_assert_uint_gt(sbi->st.sit_evicted, 0);
	uint64_t x = 777;
	for (uint64_t k = 0; k < 2 * nblk; k++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t b = (x >> 20) % nblk;
		pattern(buf, b, ++gen[b]);
		zlfs_cache_balance(sbi, false);
		ck_assert_int_eq(zlfs_balance(sbi, 4), 0);
		ck_assert_int_eq(zlfs_file_write(sbi, zi, (char *)buf, ZF_BLKSIZE, b * ZF_BLKSIZE), 0);
		if (k % (nblk / 3) == 0) {
			check_sit(sbi);
			zlfs_cache_balance(sbi, false);
		}
	}
	/* blocks were dropped with segments in use and read back, GC ran among them */
	ck_assert_uint_gt(sbi->st.sit_reads, 0);
	ck_assert_uint_gt(sbi->st.gc_data_moved, 0);
	ck_assert_uint_gt(sbi->st.zones_reset, 0);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	zlfs_cache_balance(sbi, false);
	/* the bound holds but for the logs' blocks, which stay */
	ck_assert_uint_le(sbi->sit_blocks_held, 1 + ZF_NR_LOGS);
	check_sit(sbi);
	for (uint64_t b = 0; b < nblk; b++) {
		size_t n;
		pattern(buf, b, gen[b]);
		ck_assert_int_eq(zlfs_file_read(sbi, zi, (char *)got, ZF_BLKSIZE, b * ZF_BLKSIZE, &n), 0);
		ck_assert_msg(n == ZF_BLKSIZE && !memcmp(buf, got, ZF_BLKSIZE), "block %llu",
			      (unsigned long long)b);
	}
	zi->nopen--;
	zlfs_iput(sbi, zi, 0);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	tu_fsck_clean(img);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "'%s' -f -n '%s' >/dev/null 2>&1", getenv("ZLFS_FSCK"), img);
	ck_assert_int_eq(system(cmd), 0);

	/* the mount passes the whole SIT through a share of one block */
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), 0);
	pthread_mutex_lock(&sbi->lock);
	ck_assert_uint_le(sbi->sit_blocks_held, 1 + ZF_NR_LOGS);
	check_sit(sbi);
	ck_assert_int_eq(zlfs_iget(sbi, ino, &zi), 0);
	for (uint64_t b = 0; b < nblk; b++) {
		size_t n;
		pattern(buf, b, gen[b]);
		ck_assert_int_eq(zlfs_file_read(sbi, zi, (char *)got, ZF_BLKSIZE, b * ZF_BLKSIZE, &n), 0);
		ck_assert_msg(!memcmp(buf, got, ZF_BLKSIZE), "block %llu after remount",
			      (unsigned long long)b);
	}
	zlfs_iput(sbi, zi, 0);
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	tu_fsck_clean(img);
	free(gen);
	free(buf);
	free(got);
	free(img);
}
END_TEST

/*
 * A dropped SIT block that cannot be read back when a read needs it: the
 * read fails with the device's error (EIO), the volume goes read-only
 * with that error, and nothing calls the block "free in the SIT" (before
 * the fix the read said EUCLEAN, an inconsistency that was not there).
 */
START_TEST(sit_read_back_error_is_eio)
{
	char *img = tu_fs_volume("seg-sit-eio");
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	struct zinode *zi;
	char err[256];
	const size_t len = 160u << 20, chunk = 1u << 20;
	char *buf = malloc(chunk);

	zlfs_opts_inprocess(&o);
	o.sit_cap = 1;
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), 0);
	pthread_mutex_lock(&sbi->lock);
	memset(buf, 'y', chunk);
	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, "f", S_IFREG | 0644, 0, NULL, &zi), 0);
	zi->nopen++;
	for (size_t off = 0; off < len; off += chunk) {
		zlfs_cache_balance(sbi, false);
		ck_assert_int_eq(zlfs_file_write(sbi, zi, buf, chunk, off), 0);
	}
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	zlfs_cache_balance(sbi, false);
	/* a block of the file whose SIT block was dropped (its node is cached) */
	uint64_t idx = UINT64_MAX;
	for (uint64_t i = 0; i < len / ZF_BLKSIZE && idx == UINT64_MAX; i += 64) {
		struct znode *dn;
		unsigned int ofs, nr;
		ck_assert_int_eq(zlfs_get_dnode(sbi, zi, i, false, &dn, &ofs), 0);
		uint32_t a = zf_le32_to_cpu(zlfs_dnode_addrs(sbi, dn, &nr)[ofs]);
		uint32_t seg = (a - sbi->lay.main_blkaddr) / ZF_BLKS_PER_SEG;
		if (sbi->sit_out[seg / ZF_SIT_ENTRY_PER_BLOCK])
			idx = i;
	}
	ck_assert(idx != UINT64_MAX);
	ck_assert_int_eq(zlfs_zdev_fault_arm(sbi->dev, ZLFS_FAULT_READ, 1, true), 0);
	size_t n;
	ck_assert_int_eq(zlfs_file_read(sbi, zi, buf, ZF_BLKSIZE, idx * ZF_BLKSIZE, &n), -EIO);
	ck_assert_int_eq(sbi->fatal, -EIO);
	ck_assert(!sbi->fatal_why_set);           /* no inconsistency was reported */
	zi->nopen--;
	zlfs_iput(sbi, zi, 0);
	pthread_mutex_unlock(&sbi->lock);
	zlfs_unmount(sbi);
	tu_fsck_clean(img);                       /* the last checkpoint is whole */
	free(buf);
	free(img);
}
END_TEST

/*
 * A SIT block the mount reads (a disk without zones: all of them) whose
 * counts are all zero but one valid map has a bit: the entry is
 * inconsistent and the mount refuses the volume, as it did when it kept
 * every block; it must not pass for a block with nothing in use.
 */
START_TEST(sit_bit_under_zero_count_refused)
{
	char *img = tu_fs_volume_flat("seg-sitbit");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	uint32_t b = sbi->sit_blocks - 1, addr;
	struct zf_sit_block blk;

	for (int i = 0; i < ZF_NR_LOGS; i++)
		ck_assert_uint_ne(sbi->logs[i].segno / ZF_SIT_ENTRY_PER_BLOCK, b);
	ck_assert_ptr_null(sbi->sit_blk[b]);
	addr = zf_sit_blkaddr(&sbi->lay, b * ZF_SIT_ENTRY_PER_BLOCK, zf_msb_test(sbi->sit_bitmap, b));
	tu_fs_unmount(sbi);
	tu_blk_read(img, addr, &blk);
	for (int k = 0; k < ZF_SIT_ENTRY_PER_BLOCK; k++)
		ck_assert_uint_eq(zf_sit_vblocks(&blk.entries[k]), 0);
	blk.entries[0].valid_map[0] = 0x80;
	tu_blk_write(img, addr, &blk);

	struct zlfs_opts o;
	char err[256];
	zlfs_opts_inprocess(&o);
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), -ZLFS_EFSCORRUPTED);
	free(img);
}
END_TEST

/* Logs on device m (active ones, each counted once per log). */
static unsigned int logs_on(const struct zlfs_sb *sbi, unsigned int m)
{
	unsigned int n = 0;

	for (int i = 0; i < ZF_NR_LOGS; i++)
		n += (sbi->log_mask & (1u << i)) &&
		     zlfs_sec_member(sbi, sbi->logs[i].segno / sbi->segs_per_sec) == m;
	return n;
}

/* Each device's free count against its sections; the logs no more than one apart. */
static void check_members(const struct zlfs_sb *sbi)
{
	unsigned int lo = ZF_NR_LOGS, hi = 0;

	for (unsigned int m = 0; m < sbi->nr_members; m++) {
		uint32_t n = 0;
		for (uint32_t s = sbi->mem_sec[m]; s < sbi->mem_sec[m + 1]; s++) {
			ck_assert_uint_eq(zlfs_sec_member(sbi, s), m);
			n += sbi->secs[s].state == ZSEC_FREE;
		}
		ck_assert_uint_eq(sbi->mem_free[m], n);
		unsigned int l = logs_on(sbi, m);
		lo = l < lo ? l : lo;
		hi = l > hi ? l : hi;
	}
	ck_assert_uint_le(hi, lo + 1);
}

/*
 * A volume of n devices made by mkfs.zlfs -c (F2FS's multi-device layout,
 * up to eight): the logs start spread over them (one each while there are
 * six logs for at most six devices), stay spread as they move on, and the
 * data lands on three devices or more; each device's free sections are
 * counted right; fsck.f2fs passes and a remount reads the data back.
 */
static void spread_check(char *const *img, int n)
{
	struct zlfs_sb *sbi = tu_fs_mount(img[0], 0);
	ck_assert_uint_eq(sbi->nr_members, (unsigned int)n);
	for (int m = 0; m < n; m++) {
		ck_assert_uint_lt(sbi->mem_sec[m], sbi->mem_sec[m + 1]);
		if (n <= ZF_NR_LOGS)
			ck_assert_uint_ge(logs_on(sbi, m), 1);      /* mkfs spread them */
	}
	ck_assert_uint_eq(sbi->mem_sec[n], sbi->nr_secs);
	check_members(sbi);
	/* six sections of file data: the data log moves on five times */
	for (int f = 0; f < 6; f++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", f);
		make_file(sbi, name, (size_t)sbi->sec_blocks * ZF_BLKSIZE);
		check_members(sbi);
	}
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	uint64_t valid[ZF_MAX_DEVICES] = { 0 };
	for (uint32_t s = 0; s < sbi->nr_secs; s++)
		valid[zlfs_sec_member(sbi, s)] += sbi->secs[s].valid;
	/* the six sections of data over three devices or more */
	unsigned int with_data = 0, with_any = 0;
	for (int m = 0; m < n; m++) {
		with_any += valid[m] > 0;
		with_data += valid[m] >= sbi->sec_blocks / 2;
	}
	ck_assert_uint_ge(with_data, 3);
	if (n <= ZF_NR_LOGS)
		ck_assert_uint_eq(with_any, (unsigned int)n);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img[0]);

	sbi = tu_fs_mount(img[0], 0);
	ck_assert_uint_eq(sbi->nr_members, (unsigned int)n);
	check_members(sbi);
	for (int f = 0; f < 6; f++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", f);
		struct zinode *zi;
		ck_assert_int_eq(zlfs_iget(sbi, tu_lookup(sbi, ZF_ROOT_INO, name), &zi), 0);
		uint64_t size = zf_le64_to_cpu(zi_raw(zi)->i_size);
		ck_assert_uint_eq(size, (uint64_t)sbi->sec_blocks * ZF_BLKSIZE);
		char buf[4096];
		size_t got = 0;
		ck_assert_int_eq(zlfs_file_read(sbi, zi, buf, sizeof(buf), size - sizeof(buf),
						&got), 0);
		ck_assert_uint_eq(got, sizeof(buf));
		ck_assert_uint_eq(tu_first_not(buf, sizeof(buf), 'x'), sizeof(buf));
		zlfs_iput(sbi, zi, 0);
	}
	tu_fs_unmount(sbi);
}

/* n images, the first with the metadata, made into one volume and checked; past eight, refused. */
static void spread_over(int n)
{
	const char *mkfs = getenv("ZLFS_MKFS");
	char *img[ZF_MAX_DEVICES + 1], cmd[8192];
	struct zlfs_image_params p = { 256ull << 20, 16ull << 20, 0, 4, 0, 0, 4096 };
	int len;

	ck_assert_msg(mkfs && *mkfs, "ZLFS_MKFS not set");
	ck_assert_int_le(n, ZF_MAX_DEVICES + 1);
	len = snprintf(cmd, sizeof(cmd), "'%s' -f", mkfs);
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "multi%d.img", i);
		img[i] = tu_path(name);
		p.nr_conv = i ? 0 : 4;   /* the metadata on the first, the others all sequential */
		ck_assert_int_eq(zlfs_image_create(img[i], &p, true), 0);
		len += snprintf(cmd + len, sizeof(cmd) - (size_t)len, " %s'%s'", i ? "-c " : "",
				img[i]);
	}
	if (n > ZF_MAX_DEVICES) {
		/* one past F2FS's limit: refused for that, and said so */
		char out[512] = "";
		snprintf(cmd + len, sizeof(cmd) - (size_t)len, " 2>&1");
		FILE *f = popen(cmd, "r");
		ck_assert_ptr_nonnull(f);
		size_t got = fread(out, 1, sizeof(out) - 1, f);
		out[got] = 0;
		ck_assert_int_ne(pclose(f), 0);
		ck_assert_msg(strstr(out, "at most 8 devices"), "mkfs.zlfs said: %s", out);
	} else {
		snprintf(cmd + len, sizeof(cmd) - (size_t)len, " >/dev/null");
		ck_assert_int_eq(system(cmd), 0);
		spread_check(img, n);
	}
	for (int i = 0; i < n; i++) {
		unlink(img[i]);
		free(img[i]);
	}
}

START_TEST(logs_spread_over_devices)
{
	spread_over(4);
}
END_TEST

/* F2FS's limit: eight devices in one volume, and a ninth refused. */
START_TEST(eight_devices)
{
	spread_over(8);
	spread_over(9);
}
END_TEST

static Suite *segment_suite(void)
{
	Suite *s = suite_create("segment");
	TCase *tc = tcase_create("space");

	tcase_set_timeout(tc, 600);

	tcase_add_test(tc, statfs_takes_no_lock);
	tcase_add_test(tc, statfs_shows_the_last_release);
	tcase_add_test(tc, gate_closes_below_the_reserve);
	tcase_add_test(tc, fill_1m);
	tcase_add_test(tc, fill_4k);
	tcase_add_test(tc, fill_13k);
	tcase_add_test(tc, last_block_needs_a_node);
	tcase_add_test(tc, sit_blocks_on_demand);
	tcase_add_test(tc, sit_paging);
	tcase_add_test(tc, sit_read_back_error_is_eio);
	tcase_add_test(tc, cp_writes_changed_tables_only);
	tcase_add_test(tc, deletes_dirty_sit_blocks_count);
	tcase_add_test(tc, sit_bit_under_zero_count_refused);
	tcase_add_test(tc, logs_spread_over_devices);
	tcase_add_test(tc, eight_devices);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(segment_suite());
}
