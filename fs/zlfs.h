/*
 * zlfs.h - the filesystem's in-memory state and the calls between its files.
 *
 * Layers (top to bottom).  A file calls only files below its own line
 * (files on one line are one layer and call each other); scripts/layers
 * checks this list against the compiled objects, in scripts/test.
 *   main.c       the program: options, the mount, the FUSE loop
 *   fuse_ops.c fuse_file.c fuse_dir.c fuse_virt.c fuse_times.c fuse_ioctl.c
 *                the FUSE layer: requests into calls below, results into
 *                replies; the only place errors become replies
 *   super.c      mount and unmount (calls every layer's load and teardown)
 *   stats.c      the counters and zone map of /.zlfs
 *   shutdown.c   the going-down ioctl: stop as a power cut would
 *   trim.c       FITRIM: free sections reset or discarded
 *   recovery.c   roll-forward of fsynced files at mount (called by super.c)
 *   namei.c      create, link, unlink, rename, mkdir, rmdir, symlink, mknod
 *   dir.c        F2FS hashed directories (and inline dentries), readdir;
 *                directory blocks are file blocks (file.c)
 *   file.c       read, write, truncate, fallocate on file blocks; setattr, open
 *   xattr.c      extended attributes and POSIX ACLs in F2FS's formats
 *   flags.c      the chattr flags and what immutable and append-only forbid
 *   gc.c         segment cleaning: foreground (zlfs_balance) and background;
 *                namespace, file and xattr operations make their room first
 *   checkpoint.c checkpoint read and write (writes back bcache.c's and
 *                node.c's dirty state first, takes inode.c's orphan list)
 *   inode.c      in-memory inodes: lookup counts, orphans, eviction
 *   bcache.c     directory and symlink blocks by (inode, block), written back
 *   node.c       NAT, nid allocation, node block cache, block mapping
 *   acache.c     attributes of inodes whose block is not cached
 *   segment.c    SIT, the logs (multi-head logging at zone write pointers), SSA
 *   data.c       block I/O: reads, metadata writes, batches of log writes
 *   lock.c       the filesystem lock and the operation bracket
 *   blk/, f2fs/  the dispatcher and the zoned device; the on-disk format
 * Up-calls (each one said at its call):
 *   lock.c -> super.c: zlfs_cache_balance, zlfs_cache_over (the operation
 *                bracket keeps the memory bound as each operation starts)
 *
 * Locking (lock.c has the details).  The filesystem lock is taken
 * exclusive by every operation that changes anything (and by GC and the
 * checkpoint), shared by lookup, getattr, readdir, readlink, read, getxattr
 * and listxattr, which run at once (statfs takes none).  User operations
 * take it through zlfs_op_begin / zlfs_op_end.  Exclusive means holding the
 * mutex sbi->lock with no reader registered.  Readers change only the
 * caches, under sbi->cache_lock; only exclusive holders evict nodes, free
 * or unpin inodes.  An exclusive holder drops the mutex only while waiting
 * (data I/O in file.c and gc.c, GC's turn, the checkpoint's wait for I/O):
 * safe because main-area blocks are never reused before the next
 * checkpoint, and the checkpoint waits for every write in flight
 * (sbi->io_inflight) and, being exclusive, for every reader.  Writes are
 * allocated and submitted under the mutex, so each log's writes reach the
 * dispatcher in LBA order.
 * Lock order: sbi->lock -> sbi->cache_lock -> sbi->wr_lock (data.c) ->
 * the dispatcher's own locks.  The dispatcher's completion path takes no
 * filesystem lock (it signals the waiter's own batch lock).
 *
 * Units: block addresses are 4 KiB blocks from the start of the device
 * (F2FS's blkaddr); segment numbers count main-area segments from 0.
 */
#ifndef ZLFS_FS_H
#define ZLFS_FS_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "zlfs/disp.h"
#include "zlfs/f2fs_check.h"
#include "zlfs/f2fs_format.h"
#include "zlfs/f2fs_layout.h"
#include "zlfs/zdev.h"

#define ZLFS_EFSCORRUPTED EUCLEAN

struct zlfs_sb;

/* ---- node cache (node.c) ---- */
struct znode {
	uint32_t nid;
	struct znode *hnext;
	struct znode *lru_prev, *lru_next;
	struct znode *dirty_prev, *dirty_next;   /* on sbi->dirty_list while dirty */
	bool dirty;
	int pins;                /* >0: must stay cached (inode nodes of live inodes) */
	/* aligned, so pointers to its packed little-endian words are aligned too */
	struct zf_node blk __attribute__((aligned(16)));
};

/*
 * What stat and a lookup need of an inode, taken from its inode block
 * (zlfs_attr_from_inode); the attribute cache (acache.c) keeps these for
 * inodes whose block left the node cache.
 */
struct zattr {
	uint32_t ino, generation;
	uint32_t links, uid, gid;
	uint16_t mode;
	bool no_xattr;           /* no inline xattr entries and no xattr node */
	bool inline_data;        /* a file with inline data or a dir with inline dentries */
	uint64_t size, blocks;   /* blocks: F2FS's i_blocks, the inode block included */
	uint64_t atime, mtime, ctime;
	uint32_t atime_ns, mtime_ns, ctime_ns;
	uint64_t rdev;
};

/* ---- in-memory inode (inode.c) ---- */
struct zinode {
	uint32_t ino;
	struct zinode *hnext;
	uint64_t nlookup;        /* FUSE lookup count */
	uint32_t nopen;          /* open file handles */
	bool orphan;             /* on the orphan list: unlinked, still referenced */
	struct znode *node;      /* its inode block, pinned */
};

static inline struct zf_inode *zi_raw(struct zinode *zi)
{
	return &zi->node->blk.i;
}

/*
 * Has the inode no xattrs at all (nothing inline, no xattr node)?  Reads
 * nothing: the attribute cache records it, xattr.c skips its search.
 */
static inline bool zlfs_xattr_none(const struct zf_inode *ri)
{
	const uint8_t *first = (const uint8_t *)&ri->i_addr[ZF_ADDRS_PER_INODE - ZF_INLINE_XATTR_ADDRS] +
			       sizeof(struct zf_xattr_header);

	if (ri->i_xattr_nid)
		return false;
	if (!(ri->i_inline & ZF_INLINE_XATTR))
		return true;
	/* entries run on from the inline area into the (absent, so zero) node part */
	return !*(const uint32_t *)first;
}

/*
 * F2FS's largest-extent hint (i_ext) describes where a run of the file's
 * blocks lives; zlfs does not maintain it, so any change to the file's
 * block map drops it (fsck.f2fs checks a present extent against the map).
 */
static inline void zlfs_ext_drop(struct zinode *zi)
{
	struct zf_inode *ri = zi_raw(zi);
	if (ri->i_ext.len)
		memset(&ri->i_ext, 0, sizeof(ri->i_ext));
}

/* ---- logs (segment.c) ---- */
struct zlog {
	uint32_t segno;          /* current segment, main-relative */
	uint32_t blkoff;         /* next block in it */
	uint32_t usable;         /* usable blocks in this segment */
	struct zf_summary_block sum;   /* summary of the current segment */
};

struct zseg {
	uint16_t valid;          /* valid blocks */
	uint8_t type;            /* log that wrote it */
	bool dirty;              /* SIT entry to write at the next checkpoint */
	uint64_t mtime;
	uint8_t map[ZF_SIT_VBLOCK_MAP_SIZE];
};

struct zsec {
	uint32_t valid;          /* valid blocks in the section */
	uint8_t state;           /* ZSEC_* (changed only by segment.c's set_state) */
	bool ssa_dirty;
	bool gc_skip;            /* GC found blocks it cannot account for: never a victim */
};
enum { ZSEC_FREE = 0, ZSEC_INUSE, ZSEC_PREFREE };

/* ---- NAT (node.c) ---- */
struct znat {
	uint32_t ino;
	uint32_t blkaddr;
	uint8_t version;
	uint8_t flags;           /* ZNAT_*: in memory only, reset at each checkpoint */
};
enum {
	ZNAT_CKPT = 1,           /* the last checkpoint has this nid at a real address */
	ZNAT_FREED = 2,          /* freed since the checkpoint: not reused before the next */
	ZNAT_FSYNCED = 4,        /* its inode block went out with fsync since the checkpoint */
	ZNAT_NEED_CP = 8,        /* links or names changed: fsync must checkpoint */
};

/* ---- GC (gc.c) ---- */
enum { ZLFS_GC_OFF = 0, ZLFS_GC_ON, ZLFS_GC_URGENT };
enum { ZLFS_GCP_AUTO = 0, ZLFS_GCP_GREEDY, ZLFS_GCP_CB };

struct zlfs_gc_opts {
	uint8_t mode;            /* background GC: ZLFS_GC_* (foreground GC always runs) */
	uint8_t policy;          /* victims: auto = greedy in the foreground, cost-benefit
				    in the background; or greedy / cost-benefit for both */
	uint32_t idle_ms;        /* quiet time before background GC starts (200) */
	uint32_t sleep_ms;       /* between background passes (50; urgent: 0) */
	uint32_t no_gc_pct;      /* no background GC above this % free sections (60) */
	uint32_t boost_pct;      /* below this % free: clean without waiting for idle (25) */
	uint32_t cp_interval_ms; /* checkpoint what has been dirty this long (60000; 0: never) */
};
void zlfs_gc_opts_default(struct zlfs_gc_opts *o);
/* One "gc=..." style setting (name without "gc_" for the tunables); 0 or -EINVAL. */
int zlfs_gc_opts_set(struct zlfs_gc_opts *o, const char *name, const char *val);

/* Counters for .zlfs/status; under sbi->lock. */
struct zlfs_counters {
	uint64_t data_blocks;      /* data blocks allocated (user + GC) */
	uint64_t node_blocks;      /* node blocks written */
	uint64_t gc_data_moved;    /* data blocks GC copied */
	uint64_t gc_node_moved;    /* live nodes GC sent to be rewritten */
	uint64_t fg_gc_runs, bg_gc_runs;   /* victims cleaned */
	uint64_t gc_ns;            /* time spent in GC */
	uint64_t zones_reset;
	uint64_t fg_gc_stalls;     /* foreground GC passes that had to wait for I/O */
	/* readers too: atomic */
	uint64_t node_misses;      /* node cache misses (one device read each) */
	uint64_t node_readahead;   /* nodes those reads brought in besides the one asked for */
	/* the writeback gate (fuse_file.c) */
	uint64_t wb_gate_refusals; /* buffered write(2)s refused ENOSPC (atomic: no lock) */
	uint64_t wb_lost_writes;   /* writeback WRITEs that found no room (should stay 0) */
};

struct zlfs_opts {
	uint8_t mode;                    /* dispatcher ordering */
	struct zlfs_disp_opts disp;
	struct zlfs_gc_opts gc;
	bool ro;
	bool fsync_cp;                   /* fsync writes a checkpoint (no roll-forward) */
	uint32_t cache_mb;               /* the memory bound (0: ZLFS_CACHE_MB_DEFAULT) */
	uint8_t atime;                   /* enum zlfs_atime: when reads update atime */
	bool nodiratime;                 /* never for directories */
	bool info_syslog;                /* notes (zlfs_info) to syslog, not stderr */
	bool norecovery;                 /* ro,norecovery: the chain left alone without a word */
};
#define ZLFS_CACHE_MB_DEFAULT 256

/*
 * When a read updates atime, as the kernel's mount options say: relatime
 * (its default: when atime is not after mtime or ctime, or a day old),
 * noatime, strictatime (every read).  The update only dirties the inode
 * block, which the next checkpoint writes: never a write of its own.
 */
enum zlfs_atime { ZLFS_ATIME_RELATIME = 0, ZLFS_ATIME_NOATIME, ZLFS_ATIME_STRICT };

struct zlfs_sb {
	pthread_mutex_t lock;            /* lock.c: exclusive = this, and no readers */
	pthread_cond_t rd_cv;            /* the last reader left */
	uint32_t readers;                /* registered shared holders (under lock) */
	pthread_mutex_t cache_lock;      /* readers' changes to the caches */
	struct zlfs_zdev *dev;
	struct zlfs_disp *disp;
	struct zf_layout lay;
	struct zf_super sb;
	int fatal;                       /* != 0: a device error made us read-only */
	bool ro;
	bool shutdown;                   /* shutdown.c: stopped, every operation fails */
	bool need_fsck;                  /* checkpoints carry CP_FSCK_FLAG (until fsck) */
	bool fsync_cp;                   /* fsync=checkpoint */
	uint8_t atime;                   /* enum zlfs_atime */
	bool nodiratime;
	bool info_syslog;                /* zlfs_opts.info_syslog */

	/* checkpoint */
	uint64_t cp_ver;                 /* version of the last committed checkpoint */
	int cp_pack;                     /* 0 or 1: where the last one lives */
	uint8_t *cp_blk;                 /* head block (+ payload) of the last checkpoint */
	uint32_t cp_payload;
	uint8_t *sit_bitmap, *nat_bitmap;/* which copy of each SIT / NAT block is live */
	uint32_t sit_bitmap_bytes, nat_bitmap_bytes;
	uint64_t user_block_count;
	uint32_t rsvd_segs, ovp_segs;
	unsigned int log_mask;
	bool dirty;                      /* anything changed since the checkpoint */

	/* NAT */
	struct znat *nat;
	uint32_t max_nid;
	uint8_t *nat_dirty;              /* one byte per NAT block */
	uint32_t next_free_nid;          /* allocation cursor */
	uint32_t valid_node_count, valid_inode_count;

	/* SIT, sections, logs */
	struct zseg *segs;
	struct zsec *secs;
	uint32_t nr_segs, nr_secs, segs_per_sec;
	uint32_t free_secs, prefree_secs;
	uint32_t sec_blocks;             /* usable blocks of a section (zone capacity) */
	uint64_t valid_block_count;
	struct zlog logs[ZF_NR_LOGS];
	uint32_t alloc_cursor;           /* where to look for the next free section */

	/* node cache */
	struct znode **node_hash;
	uint32_t node_hash_size, nr_nodes, nr_dirty_nodes;
	uint32_t nr_new_nodes;           /* nodes never written yet (NAT: NEW_ADDR) */
	struct znode lru;                /* list head, most recent first */
	struct znode dirty_list;         /* list head of the dirty nodes */

	/* roll-forward (node.c writes the chain, recovery.c replays it) */
	uint32_t rf_blocks;              /* nodes fsync wrote since the checkpoint */
	bool data_unflushed;             /* data landed since the last device flush */

	/* inodes */
	struct zinode **ino_hash;
	uint32_t ino_hash_size, nr_inodes;
	uint32_t unload_cursor;          /* where zlfs_inode_unload goes on */
	uint32_t node_ra_last;           /* address of the last node cache miss (node.c) */

	/* the memory bound (super.c's zlfs_cache_balance), in 4 KiB blocks */
	uint32_t cache_blocks;           /* nodes + cached blocks, clean and dirty */
	uint32_t node_cap;               /* nodes kept after a trim or checkpoint */
	uint32_t dirty_cap;              /* dirty nodes + blocks: a checkpoint past this */
	uint32_t ops_active;             /* operations between zlfs_op_begin and _end (lock.c) */
	uint32_t trim_retry;             /* no trim below this many nodes (0: any time) */
	uint32_t nr_orphans;

	/* I/O in flight with the lock dropped (file.c) */
	uint32_t io_inflight;
	pthread_cond_t io_cv;
	/* the zone-open barrier (data.c): log writes in flight, under wr_lock */
	bool open_barrier;
	pthread_mutex_t wr_lock;
	pthread_cond_t wr_cv;
	uint64_t wr_inflight;

	uint64_t cp_count;
	uint64_t last_cp_ms;             /* when the last checkpoint committed */
	struct zbcache *bcache;          /* directory and symlink blocks (bcache.c) */
	struct zacache *acache;          /* attributes of inodes not in the node cache */
	uint32_t nr_dirty_meta;          /* dirty blocks in it */
	uint32_t pending_blocks;         /* of those, blocks the files did not have yet */

	/* GC (gc.c) */
	struct zlfs_gc_opts gco;
	struct zlfs_counters st;
	bool gc_busy;                    /* a GC pass owns the cleaning (one at a time) */
	uint32_t gc_fg_waiting;          /* foreground passes waiting for gc_busy */
	pthread_cond_t gc_cv;            /* gc_busy cleared; background thread's wake-up */
	uint32_t gc_bg_victim;           /* section the background pass works on, or ~0 */
	bool gc_stop, gc_thread_on;
	pthread_t gc_thread;
	uint64_t last_op_ms;             /* when a user operation last ran (idle detection) */
	struct zgc_reloc *reloc;         /* blocks GC moved since the checkpoint */
	struct zclaim *claim;            /* roll-forward's SSA block (segment.c) */

	/*
	 * Space as statfs and the writeback gate see it, published by every
	 * release of the exclusive lock (lock.c -> zlfs_space_publish) and
	 * read with atomic loads and no lock: a df never waits for a writer.
	 */
	uint64_t pub_free_blocks;        /* zlfs_free_blocks at the last release */
	uint32_t pub_valid_nodes;        /* valid_node_count likewise */
	/*
	 * The writeback gate (fuse_file.c, README "A full volume"): with the
	 * kernel's writeback cache, writes the kernel has taken but not sent
	 * yet need this many blocks; new buffered writes are refused with
	 * ENOSPC while fewer are free.  0: no gate (no writeback cache).
	 */
	uint64_t wb_reserve;
};

/* Wall-clock milliseconds, coarse (GC's idle and age tests, the timed checkpoint). */
static inline uint64_t zlfs_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the mount's state, asked by every layer (inline: no calls up) ---- */
/* Stopped by the going-down ioctl (shutdown.c)?  Every operation then fails. */
static inline bool zlfs_is_shut_down(const struct zlfs_sb *sbi)
{
	return __atomic_load_n(&sbi->shutdown, __ATOMIC_ACQUIRE);
}

/* 0, or why nothing may change: -EIO after a shutdown, -EROFS once read-only. */
static inline int zlfs_writable(const struct zlfs_sb *sbi)
{
	if (zlfs_is_shut_down(sbi))
		return -EIO;
	if (sbi->fatal || sbi->ro)
		return -EROFS;
	return 0;
}

/* The chattr no-atime flag (FS_NOATIME_FL), stored in i_flags (flags.c). */
static inline bool zlfs_flags_noatime(struct zinode *zi)
{
	return zf_le32_to_cpu(zi_raw(zi)->i_flags) & ZF_FL_NOATIME;
}

/* ---- lock.c: the filesystem lock ---- */
/* Publish the counters statfs reads (at every release of the exclusive lock). */
void zlfs_space_publish(struct zlfs_sb *sbi);
void zlfs_lock(struct zlfs_sb *sbi);                 /* exclusive */
void zlfs_unlock(struct zlfs_sb *sbi);
void zlfs_lock_shared(struct zlfs_sb *sbi);          /* a reader */
void zlfs_unlock_shared(struct zlfs_sb *sbi);
/* Exclusive holder: wait on cv (mutex dropped), exclusive again on return. */
void zlfs_wait(struct zlfs_sb *sbi, pthread_cond_t *cv);
void zlfs_timedwait(struct zlfs_sb *sbi, pthread_cond_t *cv, const struct timespec *until);
bool zlfs_lock_is_shared(void);                      /* this thread is a reader */
/* Around a wait for I/O: exclusive holders drop the mutex, readers keep going. */
void zlfs_lock_drop(struct zlfs_sb *sbi);
void zlfs_lock_retake(struct zlfs_sb *sbi);
/* Around readers' changes to the caches (nothing to do when exclusive). */
void zlfs_cache_lock(struct zlfs_sb *sbi);
void zlfs_cache_unlock(struct zlfs_sb *sbi);
/*
 * A user operation's bracket: the lock (shared for lookups and reads,
 * else exclusive), the note to background GC that the filesystem is
 * busy, the memory bound kept, sbi->ops_active counted.
 */
void zlfs_op_begin(struct zlfs_sb *sbi, bool shared);
void zlfs_op_end(struct zlfs_sb *sbi, bool shared);

/* ---- super.c ---- */
/*
 * Open the volume's devices: spec, and the others its superblock lists
 * (F2FS's devs[]), end to end as one device.  err gets the reason.
 */
int zlfs_open_volume(const char *spec, struct zlfs_zdev **out, char *err, size_t errlen);
/* The same with zdev open flags: ZLFS_ZDEV_RDONLY for every device (ro, fsck -n). */
int zlfs_open_volume_flags(const char *spec, unsigned int flags, struct zlfs_zdev **out,
			   char *err, size_t errlen);
int zlfs_mount(const char *spec, const struct zlfs_opts *o, struct zlfs_sb **out, char *err,
	       size_t errlen);
/*
 * Options for a mount inside another program (fsck.zlfs's repairs, the
 * fuzzer, the tests): the defaults, no background GC and no timed
 * checkpoint, so nothing runs but what the caller does.
 */
void zlfs_opts_inprocess(struct zlfs_opts *o);
int zlfs_unmount(struct zlfs_sb *sbi);
/*
 * The memory bound, checked as an operation starts (sbi->lock held): past
 * the dirty bound a checkpoint writes what is dirty; past the cache bound
 * clean blocks and nodes go, and, when quiet (no other operation under
 * way, no GC pass, no I/O in flight), the inode nodes of inodes not open.
 */
void zlfs_cache_balance(struct zlfs_sb *sbi, bool quiet);
/* Would zlfs_cache_balance trim now?  (Readers ask before they register.) */
bool zlfs_cache_over(const struct zlfs_sb *sbi);

/* ---- data.c: block I/O ---- */
/* A device error: read-only from now on (the first error is kept). */
void zlfs_set_fatal(struct zlfs_sb *sbi, int err);
/*
 * Something read from the device is inconsistent: print what (the
 * structure and why, printf-style), turn the volume read-only as a device
 * error does, and return -EUCLEAN for the operation to fail with.
 */
int zlfs_corrupt(struct zlfs_sb *sbi, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * A note, not a problem (what recovery replayed): on stderr, or for a
 * daemon in the background to syslog, as the kernel's filesystems note
 * such things in the kernel log, not on the terminal of whoever mounted.
 */
void zlfs_info(struct zlfs_sb *sbi, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int zlfs_read_block(struct zlfs_sb *sbi, uint32_t blkaddr, void *buf);
/* Metadata in the conventional area: written in place. */
int zlfs_write_meta_block(struct zlfs_sb *sbi, uint32_t blkaddr, const void *buf);
struct zlfs_wbatch;
/*
 * Submit n block writes (bufs[i] to addrs[i]) in array order, which
 * callers make each log's allocation order; call with sbi->lock held so no
 * other write of the same log slips in between.  NULL only without memory.
 */
struct zlfs_wbatch *zlfs_write_submit(struct zlfs_sb *sbi, void *const *bufs,
				      const uint32_t *addrs, uint32_t n, uint8_t prio);
/* Wait for a batch (the lock need not be held) and free it. */
int zlfs_write_wait(struct zlfs_sb *sbi, struct zlfs_wbatch *wb);
/* Write n blocks and wait (sbi->lock held throughout). */
int zlfs_write_blocks(struct zlfs_sb *sbi, void *const *bufs, const uint32_t *addrs, uint32_t n);
/* Write nodes to the addresses their NAT entries name (sbi->lock held). */
int zlfs_write_nodes(struct zlfs_sb *sbi, struct znode **v, uint32_t n);
/* Read / write n blocks with sbi->lock dropped while in flight (held on entry and return). */
int zlfs_read_blocks_unlocked(struct zlfs_sb *sbi, void **bufs, const uint32_t *addrs, uint32_t n,
			      uint8_t prio);
int zlfs_write_unlocked(struct zlfs_sb *sbi, void **bufs, uint32_t *addrs, uint32_t n,
			uint8_t prio);

/* ---- bcache.c: directory and symlink blocks by (inode, block), written back ---- */
/* Where a dirty block's slot is, and how it is written. */
struct zlfs_bslot {
	uint32_t nid;            /* the dnode holding the slot */
	uint16_t slot;           /* index into zlfs_dnode_addrs() */
	uint16_t ofs_in_node;    /* the SSA's ofs_in_node */
	uint8_t log;
	bool reserve;            /* a block the file did not have: count it as pending */
};
/* cap: entries kept (clean ones are evicted past it, dirty ones never). */
int zlfs_bcache_init(struct zlfs_sb *sbi, uint32_t cap);
void zlfs_bcache_destroy(struct zlfs_sb *sbi);
uint32_t zlfs_bcache_count(const struct zlfs_sb *sbi);
bool zlfs_bcache_get(struct zlfs_sb *sbi, uint32_t ino, uint64_t index, void *buf);
/* A block as read from the device (a dirty entry is newer and stays). */
void zlfs_bcache_put(struct zlfs_sb *sbi, uint32_t ino, uint64_t index, const void *buf);
/* New content of block index of ino, to be written by zlfs_bcache_writeback. */
int zlfs_bcache_dirty(struct zlfs_sb *sbi, uint32_t ino, uint64_t index, const void *buf,
		      const struct zlfs_bslot *s);
/* The inode is being freed: forget its blocks, dirty ones too. */
void zlfs_bcache_drop_ino(struct zlfs_sb *sbi, uint32_t ino);
/* Write every dirty block (sorted by inode and block), slots updated, nodes dirtied. */
int zlfs_bcache_writeback(struct zlfs_sb *sbi);

/* ---- checkpoint.c ---- */
int zlfs_cp_load(struct zlfs_sb *sbi);
int zlfs_checkpoint(struct zlfs_sb *sbi, bool umount);
/* Warm node log position the checkpoint recorded: where the fsync chain starts. */
uint32_t zlfs_cp_chain_start(const struct zlfs_sb *sbi);
/*
 * Does an fsync chain follow the checkpoint (a crash after an fsync)?  Its
 * first block only, read and matched, nothing written: what a read-only
 * mount, which never rolls forward, uses to say so.
 */
bool zlfs_cp_chain_pending(struct zlfs_sb *sbi);
/* Orphan inodes of the loaded checkpoint (inode.c frees them); *inos malloc()ed. */
int zlfs_cp_orphans(struct zlfs_sb *sbi, uint32_t **inos, uint32_t *n);

/* ---- segment.c ---- */
bool zlfs_sec_is_log(const struct zlfs_sb *sbi, uint32_t sec);
/* Main-area section in a conventional zone: no write pointer, no reset. */
bool zlfs_sec_is_conv(const struct zlfs_sb *sbi, uint32_t sec);
/* Free sections below which only GC and the checkpoint allocate. */
uint32_t zlfs_seg_floor(const struct zlfs_sb *sbi);
/*
 * The relocation map: data blocks GC moved since the checkpoint (old ->
 * new).  A user write that captured a block's old address and finds the
 * slot changed asks whether that was GC (then its data wins).  Cleared at
 * the checkpoint, when no write is in flight.
 */
void zlfs_seg_reloc_add(struct zlfs_sb *sbi, uint32_t old, uint32_t new_addr);
bool zlfs_seg_moved(struct zlfs_sb *sbi, uint32_t old, uint32_t cur);
void zlfs_seg_reloc_clear(struct zlfs_sb *sbi);
/* Next block of GC's log (cold data), allowed below the floor. */
int zlfs_alloc_gc_block(struct zlfs_sb *sbi, uint32_t nid, uint16_t ofs, uint8_t version,
			uint32_t *blkaddr);
int zlfs_seg_build(struct zlfs_sb *sbi, const struct zf_journal *sit_j);
void zlfs_seg_destroy(struct zlfs_sb *sbi);
/*
 * Where log `log`'s next block will go: node logs move to their next
 * segment as soon as one fills (as F2FS's do), so this is where the next
 * node really lands, which the node footers' next_blkaddr records.
 * 0 when a node log could not move on (no free section).
 */
uint32_t zlfs_log_next_blkaddr(const struct zlfs_sb *sbi, unsigned int log);
/*
 * Roll-forward: data block blkaddr, written after the checkpoint, now
 * belongs to slot ofs of node nid: valid in the SIT, its SSA entry set.
 * -EEXIST if it is valid already; -EINVAL outside the main area.
 */
int zlfs_seg_claim_block(struct zlfs_sb *sbi, uint32_t blkaddr, uint32_t nid, uint16_t ofs,
			 uint8_t version, bool was_hole);
/* Write the SSA block zlfs_seg_claim_block keeps (end of roll-forward). */
int zlfs_seg_claim_done(struct zlfs_sb *sbi);
/* Section number of a main-area block. */
uint32_t zlfs_sec_of_blkaddr(const struct zlfs_sb *sbi, uint32_t blkaddr);
/*
 * The write-back of cached metadata blocks (bcache.c, run by every
 * checkpoint): may dip into the floor as the node logs do.  Its amount is
 * bounded by the dirty limit, and zlfs_balance keeps room for it.
 */
int zlfs_alloc_meta_block(struct zlfs_sb *sbi, unsigned int log, uint32_t nid, uint16_t ofs,
			  uint8_t version, uint32_t *blkaddr);
/* Next block of log `log` for a block owned by (nid, ofs); 0 or -ENOSPC. */
int zlfs_alloc_block(struct zlfs_sb *sbi, unsigned int log, uint32_t nid, uint16_t ofs,
		     uint8_t version, uint32_t *blkaddr);
/* The block at blkaddr no longer holds anything. */
void zlfs_invalidate_block(struct zlfs_sb *sbi, uint32_t blkaddr);
/* Inside the main area?  (data.c checks every address it is given.) */
static inline bool zlfs_is_main_blkaddr(const struct zlfs_sb *sbi, uint32_t blkaddr)
{
	return blkaddr >= sbi->lay.main_blkaddr &&
	       blkaddr < sbi->lay.main_blkaddr + sbi->lay.segment_count_main * ZF_BLKS_PER_SEG;
}
/* Is blkaddr a valid (in use) block of the main area, by the SIT? */
bool zlfs_block_valid(const struct zlfs_sb *sbi, uint32_t blkaddr);
/* Write the SIT, SSA of open segments; free and reset prefree sections (at CP). */
int zlfs_seg_flush(struct zlfs_sb *sbi);
/* Move every active log off a full segment (before a checkpoint records them). */
int zlfs_seg_settle_logs(struct zlfs_sb *sbi);
void zlfs_seg_after_cp(struct zlfs_sb *sbi);
/*
 * The user's share left: user_block_count less the valid blocks and the
 * nodes not written yet (each takes a block at the next checkpoint).
 * Every new block or node is checked against it, so no checkpoint records
 * more valid blocks than user_block_count (the kernel refuses such a
 * volume: "Wrong valid_user_blocks").  Inline: lock.c publishes it at
 * every release, below the segment layer.
 */
static inline uint64_t zlfs_avail_blocks(const struct zlfs_sb *sbi)
{
	uint64_t used = sbi->valid_block_count + sbi->nr_new_nodes + sbi->pending_blocks;
	return used >= sbi->user_block_count ? 0 : sbi->user_block_count - used;
}
/*
 * What statfs shows free (f_bfree, f_bavail): zlfs_avail_blocks less the
 * direct nodes a single file would need to take it all.
 */
static inline uint64_t zlfs_free_blocks(const struct zlfs_sb *sbi)
{
	uint64_t a = zlfs_avail_blocks(sbi);
	return a - a / (ZF_ADDRS_PER_BLOCK + 1);
}
/* What statfs shows, from the published counters: takes no lock. */
void zlfs_statfs(struct zlfs_sb *sbi, struct statvfs *st);
/* The writeback gate's reserve, in blocks (main.c sizes it for the mount's dirty limit). */
void zlfs_space_set_reserve(struct zlfs_sb *sbi, uint64_t blocks);
/* The user's share of the volume, in bytes (statfs's f_blocks). */
uint64_t zlfs_user_bytes(const struct zlfs_sb *sbi);
/* Free blocks (published) below the writeback reserve: buffered writes must stop. */
bool zlfs_space_low(struct zlfs_sb *sbi);
/*
 * Roll-forward found a chain block at blkaddr: a free section holding it
 * turns prefree, so no log writes over it before the mount's checkpoint
 * commits (a conventional section has no write pointer to tell).
 */
void zlfs_seg_hold(struct zlfs_sb *sbi, uint32_t blkaddr);
/* Reset zones that hold nothing and fix logs after mount. */
int zlfs_seg_fix_zones(struct zlfs_sb *sbi);

/* ---- gc.c ---- */
/*
 * Make room before an operation that writes up to `blocks` blocks: runs
 * foreground GC (and checkpoints) until enough sections are free.  Call at
 * the start of an operation, before it changes anything (a checkpoint may
 * be written).  0, or -ENOSPC when live data and the reserve fill the device.
 */
int zlfs_balance(struct zlfs_sb *sbi, uint64_t blocks);
/*
 * What the operations' entry points (namei.c, file.c, xattr.c) ask it
 * for: the blocks each may write before the next checkpoint, its nodes
 * included (zlfs_balance adds the nodes dirty already).
 */
/* the inode, the parent's, a dentry block and 3 nodes mapping it, a dir's block, an ACL's node */
#define ZLFS_BUDGET_CREATE 8
/* as a new name: a dentry block, the nodes mapping it, both inodes */
#define ZLFS_BUDGET_LINK 8
/* the parent's dentry block rewritten out of place, and the nodes mapping it */
#define ZLFS_BUDGET_UNLINK 8
/* two names changed (each as a link), a moved directory's "..", a whiteout */
#define ZLFS_BUDGET_RENAME 16
/* the partial last block rewritten, and the dnode holding its slot */
#define ZLFS_BUDGET_TRUNCATE 2
/* the partial blocks at the range's ends and their dnodes (holes get room per batch) */
#define ZLFS_BUDGET_FALLOCATE 4
/* the inode and a new xattr node, with room for an access ACL's mode change */
#define ZLFS_BUDGET_XATTR 4
/*
 * The background thread: GC (unless gc=off) and, as F2FS's cp_interval,
 * a checkpoint once something has been dirty ZLFS_CP_INTERVAL_MS, so what
 * was written without fsync is durable within a minute (sync(2) does not
 * reach a FUSE filesystem through libfuse 3.14: no FUSE_SYNCFS).
 */
#define ZLFS_CP_INTERVAL_MS 60000
int zlfs_gc_start(struct zlfs_sb *sbi);
void zlfs_gc_stop(struct zlfs_sb *sbi);
/* ---- shutdown.c: the going-down ioctl ---- */
/*
 * F2FS_IOC_SHUTDOWN, ext4's EXT4_IOC_SHUTDOWN and XFS's XFS_IOC_GOINGDOWN:
 * one number, _IOR('X', 125, __u32), though the argument is read, not
 * written (so the kernel's FUSE does not pass it: see zl_ioctl).
 */
#define ZLFS_IOC_SHUTDOWN _IOR('X', 125, uint32_t)
enum {
	ZLFS_GOING_DOWN_FULLSYNC = 0,    /* checkpoint, then stop */
	ZLFS_GOING_DOWN_METASYNC = 1,    /* the same (XFS's LOGFLUSH) */
	ZLFS_GOING_DOWN_NOSYNC = 2,      /* stop now (XFS's NOLOGFLUSH) */
	ZLFS_GOING_DOWN_METAFLUSH = 3,   /* checkpoint, then stop */
	ZLFS_GOING_DOWN_NEED_FSCK = 4,   /* no stop: a checkpoint asking for fsck */
};
/*
 * Stop the filesystem as a crash would (sbi->lock exclusive): after it,
 * nothing is written to the device and every operation fails with EIO;
 * no final checkpoint at unmount.  -EINVAL for an unknown mode.
 */
int zlfs_shutdown(struct zlfs_sb *sbi, uint32_t mode);

/* ---- trim.c: FITRIM ---- */
/*
 * Trim the free sections wholly inside [start, start+len) bytes of the
 * volume (sbi->lock exclusive): zone resets, discards where conventional.
 * *trimmed: bytes of free space covered.  -EINVAL for a start past the end
 * or a length under a block; -EOPNOTSUPP when the device cannot discard.
 */
int zlfs_trim(struct zlfs_sb *sbi, uint64_t start, uint64_t len, uint64_t minlen,
	      uint64_t *trimmed);

/* Note a user operation (background GC waits for quiet). */
static inline void zlfs_note_op(struct zlfs_sb *sbi)
{
	__atomic_store_n(&sbi->last_op_ms, zlfs_now_ms(), __ATOMIC_RELAXED);   /* readers too */
}

/* ---- stats.c: the text of /.zlfs/status and /.zlfs/zones (malloc()ed) ---- */
/* How many requests of one FUSE opcode were served (fuse_ops.c counts them). */
struct zlfs_req_count {
	const char *op;          /* the opcode's name: LOOKUP, GETATTR, ... */
	uint64_t n;
};
/* The status text; the FUSE layer hands down its request counts (nreqs of them). */
int zlfs_stats_status(struct zlfs_sb *sbi, const struct zlfs_req_count *reqs, size_t nreqs,
		      char **out, size_t *len);
int zlfs_stats_zones(struct zlfs_sb *sbi, char **out, size_t *len);

/* ---- node.c ---- */
/*
 * The cp_ver node footers carry under the last checkpoint: its version,
 * with its crc in the high word when it has CP_CRC_RECOVERY (zlfs's always
 * do), as the kernel's fill_node_footer_blkaddr; roll-forward accepts
 * only blocks whose footer matches (zlfs_cp_node_ver_ok).
 */
uint64_t zlfs_cp_node_ver(const struct zlfs_sb *sbi);
bool zlfs_cp_node_ver_ok(const struct zlfs_sb *sbi, uint64_t footer_ver);
/* GC: node nid (whose live block was read into blk) must be rewritten: cache it, dirty. */
int zlfs_node_gc_dirty(struct zlfs_sb *sbi, uint32_t nid, const void *blk);

/* Load the NAT (the live copy of each block) and overlay the CP's NAT journal. */
int zlfs_node_build_from(struct zlfs_sb *sbi, const struct zf_journal *nat_j);
void zlfs_node_destroy(struct zlfs_sb *sbi);
/* Write every dirty NAT block to its other copy (at a checkpoint). */
int zlfs_nat_flush(struct zlfs_sb *sbi);
/*
 * Get node nid into the cache (reading it if needed), checked to be of the
 * kind asked for and, unless ino is 0, of inode ino (zf_check_node_footer):
 * anything else is an inconsistency (zlfs_corrupt).
 */
int zlfs_node_get(struct zlfs_sb *sbi, uint32_t nid, uint32_t ino, enum zf_node_kind kind,
		  struct znode **out);
/* A fresh zeroed node for nid (of inode ino, at offset ofs in its tree). */
int zlfs_node_new(struct zlfs_sb *sbi, uint32_t nid, uint32_t ino, unsigned int ofs,
		  struct znode **out);
void zlfs_node_dirty(struct zlfs_sb *sbi, struct znode *n);
/* Drop node nid: its block becomes invalid, its nid free. */
void zlfs_node_remove(struct zlfs_sb *sbi, uint32_t nid);
int zlfs_nid_alloc(struct zlfs_sb *sbi, uint32_t *nid);
/* Write every dirty node to the node logs (before a checkpoint). */
int zlfs_node_flush(struct zlfs_sb *sbi);
/*
 * fsync's node part: write inode ino's dirty dnodes (inode, direct and
 * xattr nodes) to the warm node log with the FSYNC mark, the inode with
 * the DENT mark too when its name is not in a checkpoint yet, then flush
 * the device (first too, when data_first: data and nodes may not share a
 * write pointer that proves the data landed).  Indirect nodes stay dirty:
 * roll-forward rebuilds the path to each dnode.
 */
int zlfs_node_fsync(struct zlfs_sb *sbi, uint32_t ino, bool data_first);
/* A change roll-forward cannot replay (links, names, shrinking): fsync of ino checkpoints. */
void zlfs_node_need_cp(struct zlfs_sb *sbi, uint32_t ino);
bool zlfs_nid_checkpointed(const struct zlfs_sb *sbi, uint32_t nid);
/* After a checkpoint committed: the NAT flags describe it. */
void zlfs_node_after_cp(struct zlfs_sb *sbi);
/* Is node offset ofs (F2FS's tree numbering) a dnode: inode, direct or xattr node? */
bool zlfs_node_ofs_is_dnode(unsigned int ofs);
/* First file block a dnode at tree offset ofs maps (F2FS's start_bidx_of_node). */
uint64_t zlfs_node_start_index(struct zinode *zi, unsigned int ofs);
/*
 * Drop clean, unpinned nodes, least recently used first, until at most max
 * are cached; inode blocks leave their attributes in the attribute cache.
 */
void zlfs_node_shrink(struct zlfs_sb *sbi, uint32_t max);
/* The cached node nid or NULL, nothing read (readers: under cache_lock). */
struct znode *zlfs_node_cached(struct zlfs_sb *sbi, uint32_t nid);
/*
 * Block mapping.  Find the slot holding file block `index` of inode zi:
 * *dn is the node (inode or direct node) and *ofs the slot in it.  With
 * alloc, missing nodes are created; without, -ENOENT for a hole.
 */
int zlfs_get_dnode(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, bool alloc,
		   struct znode **dn, unsigned int *ofs);
uint32_t *zlfs_dnode_addrs(struct znode *dn, unsigned int *nr);
/* Free every block and node of zi from file block `from` on. */
int zlfs_truncate_blocks(struct zlfs_sb *sbi, struct zinode *zi, uint64_t from);
uint64_t zlfs_max_file_blocks(void);

/* ---- acache.c: attributes of inodes whose block is not cached ---- */
int zlfs_acache_init(struct zlfs_sb *sbi, uint32_t cap);
void zlfs_acache_destroy(struct zlfs_sb *sbi);
/* Memory one entry takes (for the cache_mb split). */
uint32_t zlfs_acache_entry_bytes(void);
/* The inode block of a->ino leaves the node cache clean: keep its attributes. */
void zlfs_acache_put(struct zlfs_sb *sbi, const struct zattr *a);
bool zlfs_acache_get(struct zlfs_sb *sbi, uint32_t ino, struct zattr *out);
/* The node ino comes into the node cache (or the nid is freed): the node is the truth. */
void zlfs_acache_del(struct zlfs_sb *sbi, uint32_t ino);
uint32_t zlfs_acache_count(const struct zlfs_sb *sbi);
/* What stat and a lookup need, from an inode block (acache.c keeps such records). */
void zlfs_attr_from_inode(uint32_t ino, const struct zf_inode *ri, struct zattr *a);
void zlfs_attr_stat(const struct zattr *a, struct stat *st);

/* ---- inode.c ---- */
int zlfs_iget(struct zlfs_sb *sbi, uint32_t ino, struct zinode **out);
/*
 * The attributes of inode ino, from wherever they are at hand: its zinode,
 * the node cache, the attribute cache, else its block read and checked.
 * Readers too (no zinode is made or pinned).
 */
int zlfs_inode_attr(struct zlfs_sb *sbi, uint32_t ino, struct zattr *a);
/* Count one FUSE lookup of ino, making an unloaded zinode if it has none (readers too). */
int zlfs_iref(struct zlfs_sb *sbi, uint32_t ino);
/* The zinode of ino if it is in memory, loaded or not (exclusive holders: no node read). */
struct zinode *zlfs_ifind(struct zlfs_sb *sbi, uint32_t ino);
/* Count one FUSE lookup of zi (readers too). */
void zlfs_inode_ref(struct zlfs_sb *sbi, struct zinode *zi);
/* New inode: allocates a nid, fills mode/uid/gid/times, links 1 (2 for dirs). */
int zlfs_inode_new(struct zlfs_sb *sbi, mode_t mode, uid_t uid, gid_t gid, uint32_t pino,
		   struct zinode **out);
void zlfs_inode_dirty(struct zlfs_sb *sbi, struct zinode *zi);
void zlfs_inode_stat(struct zlfs_sb *sbi, struct zinode *zi, struct stat *st);
void zlfs_inode_touch(struct zinode *zi, bool m, bool c, bool a);
/*
 * A read of zi (file data, directory entries): does its atime need an
 * update under the mount's atime rule?  Reads the inode only (shared
 * holders may ask); the update itself, zlfs_inode_accessed, needs the
 * exclusive lock and returns 1 when it changed atime, else 0.
 */
bool zlfs_atime_due(const struct zlfs_sb *sbi, struct zinode *zi);
int zlfs_inode_accessed(struct zlfs_sb *sbi, struct zinode *zi);
/* Drop `n` lookups; the inode is freed when unlinked and unused. */
void zlfs_iput(struct zlfs_sb *sbi, struct zinode *zi, uint64_t n);
/* The last link went away: free now or when the last user goes. */
int zlfs_inode_unlinked(struct zlfs_sb *sbi, struct zinode *zi);
void zlfs_inode_release_all(struct zlfs_sb *sbi);
/*
 * The cache trim: unpin the clean inode nodes of up to `want` inodes nobody
 * has open (zlfs_iget pins them again).  Only when no operation is under
 * way: a zinode held across a dropped lock would lose its node.
 */
uint32_t zlfs_inode_unload(struct zlfs_sb *sbi, uint32_t want);
int zlfs_orphan_recover(struct zlfs_sb *sbi, const uint32_t *inos, uint32_t n);
uint32_t zlfs_orphan_list(struct zlfs_sb *sbi, uint32_t *inos, uint32_t max);
uint8_t zlfs_ftype(mode_t mode);
void zlfs_inode_set_rdev(struct zinode *zi, dev_t rdev);

/* ---- recovery.c: roll-forward at mount ---- */
/*
 * Pass 1 and 2 of F2FS's recovery: walk the fsync chain from the
 * checkpoint's warm node position and replay the fsynced inodes and
 * dnodes into memory.  Writes nothing (names to restore are kept for
 * zlfs_recover_dentries, which runs once the zones are in order); the
 * checkpoint after it makes the result durable.
 */
struct zrecovery;
int zlfs_recover_scan(struct zlfs_sb *sbi, struct zrecovery **out);
int zlfs_recover_dentries(struct zlfs_sb *sbi, struct zrecovery *rc);
void zlfs_recover_free(struct zrecovery *rc);

/* ---- namei.c ---- */
struct zlfs_cred {
	uid_t uid;
	gid_t gid;
	mode_t umask;
};
/* zlfs_iget, and -ENOTDIR unless a directory. */
int zlfs_dir_iget(struct zlfs_sb *sbi, uint32_t ino, struct zinode **out);
/*
 * The operations below make room first (zlfs_balance with their
 * ZLFS_BUDGET_*): call them as an operation starts, exclusive, before
 * anything changed; the lock may be dropped and a checkpoint written.
 */
/* A new inode `name` in parent (link: a symlink's target); *out has no lookup counted. */
int zlfs_create(struct zlfs_sb *sbi, const struct zlfs_cred *c, uint32_t parent,
		const char *name, mode_t mode, dev_t rdev, const char *link, struct zinode **out);
/* Goes ahead when GC finds no room to make: removing frees space. */
int zlfs_unlink(struct zlfs_sb *sbi, uint32_t parent, const char *name, bool rmdir);
/* zlfs_unlink without making room: roll-forward's, mid-mount, where no GC may run. */
int zlfs_unlink_nobalance(struct zlfs_sb *sbi, uint32_t parent, const char *name, bool rmdir);
int zlfs_link(struct zlfs_sb *sbi, uint32_t ino, uint32_t newparent, const char *newname,
	      struct zinode **out);
/* flags: RENAME_NOREPLACE, RENAME_EXCHANGE. */
int zlfs_rename(struct zlfs_sb *sbi, uint32_t parent, const char *name, uint32_t newparent,
		const char *newname, unsigned int flags);
/* zlfs_rename for a caller: RENAME_WHITEOUT too (leaves a whiteout owned by ctx). */
int zlfs_rename_as(struct zlfs_sb *sbi, const struct zlfs_cred *ctx, uint32_t parent,
		   const char *name, uint32_t newparent, const char *newname, unsigned int flags);

/* ---- flags.c: the chattr flags (i_flags) and what immutable and append-only forbid ---- */
struct fsxattr;
/* The flags as FS_IOC_GETFLAGS shows them (FS_*_FL). */
uint32_t zlfs_flags_get(struct zinode *zi);
/* FS_IOC_SETFLAGS: -EOPNOTSUPP for a flag zlfs cannot keep; stamps ctime. */
int zlfs_flags_set(struct zlfs_sb *sbi, struct zinode *zi, uint32_t fl);
/* The same as xflags (FS_IOC_FSGETXATTR / FS_IOC_FSSETXATTR). */
void zlfs_flags_get_x(struct zinode *zi, struct fsxattr *fa);
int zlfs_flags_set_x(struct zlfs_sb *sbi, struct zinode *zi, const struct fsxattr *fa);
/* The flags a new inode of this mode takes from its directory. */
uint32_t zlfs_flags_inherit(struct zinode *dir, mode_t mode);
/* Each 0 or -EPERM, as the VFS answers for an immutable or append-only inode. */
int zlfs_may_open(struct zinode *zi, int flags);        /* open(2) flags */
/* What a setattr changes, for zlfs_may_setattr. */
enum {
	ZLFS_SA_SIZE = 1,          /* truncate */
	ZLFS_SA_OWNER = 2,         /* mode, uid, gid */
	ZLFS_SA_TIMES_SET = 4,     /* times given by the caller */
	ZLFS_SA_TIMES_NOW = 8,     /* times set to now (utimes(NULL)) */
};
int zlfs_may_setattr(struct zinode *zi, unsigned int what);
int zlfs_may_change(struct zinode *zi);                 /* xattrs, link(2) of it */
int zlfs_may_add(struct zinode *dir);                   /* a new name in dir */
int zlfs_may_delete(struct zinode *dir, struct zinode *victim);
int zlfs_may_fallocate(struct zinode *zi, int mode);

/* ---- file.c ---- */
int zlfs_file_read(struct zlfs_sb *sbi, struct zinode *zi, char *buf, size_t len, uint64_t off,
		   size_t *got);
int zlfs_file_write(struct zlfs_sb *sbi, struct zinode *zi, const char *buf, size_t len,
		    uint64_t off);
/* No room made (the caller's), no flags checked: zlfs_setattr and zlfs_file_open call it. */
int zlfs_file_truncate(struct zlfs_sb *sbi, struct zinode *zi, uint64_t size);
/*
 * An operation (room made first: ZLFS_BUDGET_FALLOCATE, exclusive, may
 * drop the lock and checkpoint); -EPERM as zlfs_may_fallocate says.
 */
int zlfs_file_fallocate(struct zlfs_sb *sbi, struct zinode *zi, int mode, uint64_t off,
			uint64_t len);
/*
 * How a setattr or an O_TRUNC open changes the size: zlfs_file_truncate
 * (NULL), or the caller's wrapper of it (the FUSE layer keeps the
 * kernel's times around it: fuse_times.c).
 */
typedef int (*zlfs_truncate_fn)(struct zlfs_sb *sbi, struct zinode *zi, uint64_t size);
/* What a setattr changes (zlfs_iattr.valid). */
enum {
	ZLFS_ATTR_MODE = 1 << 0,         /* the permission bits (07777) */
	ZLFS_ATTR_UID = 1 << 1,
	ZLFS_ATTR_GID = 1 << 2,
	ZLFS_ATTR_SIZE = 1 << 3,         /* truncate (regular files only) */
	ZLFS_ATTR_ATIME = 1 << 4,        /* to atime, or with _NOW to now */
	ZLFS_ATTR_MTIME = 1 << 5,
	ZLFS_ATTR_ATIME_NOW = 1 << 6,
	ZLFS_ATTR_MTIME_NOW = 1 << 7,
	ZLFS_ATTR_CTIME = 1 << 8,        /* to ctime; without it, now (unless kernel_times) */
};
struct zlfs_iattr {
	unsigned int valid;              /* ZLFS_ATTR_* */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint64_t size;
	struct timespec atime, mtime, ctime;
	struct timespec now;             /* the request's time, for *_NOW and the ctime stamp */
	/*
	 * mtime and ctime are the caller's (FUSE's writeback cache): ctime is
	 * stamped only when given, and an mtime alone is no "set" time for
	 * the append-only and immutable rule (zlfs_may_setattr).
	 */
	bool kernel_times;
};
/*
 * chmod, chown, truncate, utimes: the inode's fields as ia says, ACLs in
 * step with a new mode.  An operation: -EROFS once read-only, room made
 * for a truncate (ZLFS_BUDGET_TRUNCATE; exclusive, may drop the lock and
 * checkpoint), the immutable and append-only rule (zlfs_may_setattr).
 */
int zlfs_setattr(struct zlfs_sb *sbi, struct zinode *zi, const struct zlfs_iattr *ia,
		 zlfs_truncate_fn truncate);
/*
 * open(2) of inode ino with these flags: room made first for O_TRUNC with
 * write access (ZLFS_BUDGET_TRUNCATE), the checks (read-only volume,
 * zlfs_may_open, -EISDIR), a regular file's O_TRUNC, and one more open
 * handle on *out (zi->nopen).
 */
int zlfs_file_open(struct zlfs_sb *sbi, uint32_t ino, int flags, zlfs_truncate_fn truncate,
		   struct zinode **out);
/*
 * fsync / fdatasync: on return what was written to zi is durable.  A
 * regular file F2FS's rules allow is made so by writing its nodes to the
 * warm node log with the FSYNC mark and one device flush (rolled forward
 * at the next mount); anything else, and fsync=checkpoint, checkpoints.
 */
int zlfs_file_fsync(struct zlfs_sb *sbi, struct zinode *zi, bool datasync);
/* Read block `index` of a file (directories too) into buf (zeros for a hole). */
int zlfs_read_file_block(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, void *buf);
/*
 * The first file block at or after index that zi's node tree can map:
 * index itself when the direct node holding it exists, else the first
 * block past the missing node's subtree (UINT64_MAX past the tree's
 * reach).  Walks over holes step with it, so a sparse file or a damaged
 * i_size costs a step per missing node, never one per block.
 */
int zlfs_file_next_mapped(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, uint64_t *next);
/* Write a whole block of a file at a new address (directory blocks). */
int zlfs_write_file_block(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index,
			  const void *buf, unsigned int log);
int zlfs_convert_inline(struct zlfs_sb *sbi, struct zinode *zi);

/* ---- dir.c ---- */
int zlfs_dir_lookup(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		    uint32_t *ino, uint8_t *ftype);
int zlfs_dir_add(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		 uint32_t ino, uint8_t ftype);
int zlfs_dir_remove(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len);
/* Point an existing entry at another inode (rename over a target). */
int zlfs_dir_set(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		 uint32_t ino, uint8_t ftype);
int zlfs_dir_init(struct zlfs_sb *sbi, struct zinode *dir, uint32_t parent);
/*
 * fsck.zlfs's repair: clear the entry at slot of dir's file block `block`
 * (UINT64_MAX: the inline area), whatever it holds.
 */
int zlfs_dir_drop_slot(struct zlfs_sb *sbi, struct zinode *dir, uint64_t block, unsigned int slot);
bool zlfs_dir_is_empty(struct zlfs_sb *sbi, struct zinode *dir);
/*
 * Entries from position pos (an opaque cookie, 0 = start): emit returns
 * non-zero to stop (the entry is then not consumed).
 */
int zlfs_dir_iterate(struct zlfs_sb *sbi, struct zinode *dir, uint64_t pos,
		     int (*emit)(void *ctx, const char *name, size_t len, uint32_t ino,
				 uint8_t ftype, uint64_t next_pos), void *ctx);

/* ---- xattr.c ---- */
int zlfs_xattr_get(struct zlfs_sb *sbi, struct zinode *zi, const char *name, void *buf,
		   size_t size, size_t *len);
/*
 * Set and remove: -EPERM for an immutable or append-only inode
 * (zlfs_may_change); set makes room first (ZLFS_BUDGET_XATTR), at an
 * operation's start (exclusive; may drop the lock and checkpoint).
 */
int zlfs_xattr_set(struct zlfs_sb *sbi, struct zinode *zi, const char *name,
		   const void *value, size_t size, int flags);
int zlfs_xattr_list(struct zlfs_sb *sbi, struct zinode *zi, char *buf, size_t size,
		    size_t *len);
int zlfs_xattr_remove(struct zlfs_sb *sbi, struct zinode *zi, const char *name);
/* 0, or the error zlfs_xattr_get gives for this name whatever the inode holds. */
int zlfs_xattr_check_name(const char *name);
/*
 * A new inode zi in dir takes dir's default ACL: 1 when dir has none (the
 * caller applies the umask), else 0 with *mode the resulting mode.
 */
int zlfs_acl_inherit(struct zlfs_sb *sbi, struct zinode *dir, struct zinode *zi, mode_t *mode);
/* chmod: keep the access ACL's entries in step with the new mode. */
int zlfs_acl_chmod(struct zlfs_sb *sbi, struct zinode *zi, mode_t mode);
/*
 * After a caller (uid, gid, its supplementary groups) set zi's access
 * ACL: setgid goes unless the caller is root or in the file's group, as
 * chmod's rule has it (the kernel's posix_acl_update_mode).
 */
void zlfs_acl_drop_sgid(struct zlfs_sb *sbi, struct zinode *zi, uid_t uid, gid_t gid,
			const gid_t *groups, int ngroups);

#endif
