/*
 * zlfs.h - the filesystem's in-memory state (the superblock, inodes, nodes,
 * logs), the lock, and the layer list.  What each file offers the others
 * is in its own header (node.h, segment.h, ...), included where used.
 *
 * Layers (top to bottom).  A file calls only files below its own line
 * (files on one line are one layer and call each other); scripts/layers
 * checks this list against the compiled objects, in scripts/test.
 *   main.c       the program: options, the mount, the FUSE loop
 *   fuse_ops.c fuse_file.c fuse_dir.c fuse_virt.c fuse_times.c fuse_ioctl.c
 *   fuse_loop.c
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
 *   cluster.c    compressed files: clusters read, written, truncated; policy
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
 * Lock order: sbi->lock -> sbi->cache_lock -> sbi->nat_lock (node.c: held
 * only around a NAT block's read) or sbi->sit_lock (segment.c: around a
 * SIT block's read back) -> sbi->wr_lock (data.c) ->
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

/* What malloc adds to each chunk (its header and rounding), for the cache_mb split. */
#define ZLFS_MALLOC_OVERHEAD 16

/* ---- in-memory inode (inode.c) ---- */
#define INO_HASH_MIN 4096        /* the inode hash's fewest buckets */

/*
 * One per inode the kernel holds looked up (millions under `find`): the
 * small fields first, so it packs into 40 bytes, a 48-byte malloc chunk.
 */
struct zinode {
	uint32_t ino;
	uint32_t nopen;          /* open file handles */
	uint32_t nwrite;         /* of those, regular files' opened for writing */
	bool orphan;             /* on the orphan list: unlinked, still referenced */
	uint8_t keep_times;      /* data operations whose mtime/ctime another keeps (the
				    FUSE layer's, under the writeback cache): zlfs_inode_touch
				    leaves them alone */
	struct zinode *hnext;
	uint64_t nlookup;        /* FUSE lookup count */
	struct znode *node;      /* its inode block, pinned */
};
_Static_assert(sizeof(struct zinode) <= 40, "struct zinode grew past a 48-byte chunk");

static inline struct zf_inode *zi_raw(struct zinode *zi)
{
	return &zi->node->blk.i;
}

/*
 * Has the inode no xattrs at all (nothing inline, no xattr node)?  Reads
 * nothing: the attribute cache records it, xattr.c skips its search.  feat:
 * the superblock's features (the inline area's size depends on them).
 */
static inline bool zlfs_xattr_none(const struct zf_inode *ri, uint32_t feat)
{
	unsigned int b = zf_inline_xattr_bytes(ri, feat), w = b / 4;

	if (ri->i_xattr_nid)
		return false;
	if (b <= sizeof(struct zf_xattr_header))
		return true;
	/* entries run on from the inline area into the (absent, so zero) node part */
	const uint8_t *first = (const uint8_t *)&ri->i_addr[ZF_ADDRS_PER_INODE - w] +
			       sizeof(struct zf_xattr_header);
	uint32_t word;
	memcpy(&word, first, sizeof(word));
	return !word;
}

/*
 * F2FS's largest-extent hint (i_ext) describes where a run of the file's
 * blocks lives; zlfs does not maintain it, so any change to the file's
 * block map drops it (fsck.f2fs checks a present extent against the map).
 */
static inline bool zlfs_ext_drop(struct zinode *zi)
{
	struct zf_inode *ri = zi_raw(zi);
	if (!ri->i_ext.len)
		return false;
	memset(&ri->i_ext, 0, sizeof(ri->i_ext));
	return true;     /* the inode block changed */
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
	uint64_t mtime;          /* seconds, as on disk (0 while free) */
	uint8_t map[ZF_SIT_VBLOCK_MAP_SIZE];
};

struct zsec {
	uint64_t mtime;          /* its segments' mtimes summed (GC's age, no SIT block read) */
	uint32_t valid;          /* valid blocks in the section */
	uint16_t live;           /* its segments with a valid block (mod 2^16: gc.c's mean) */
	uint8_t state;           /* ZSEC_* (changed only by segment.c's set_state) */
	bool ssa_dirty : 1;
	bool gc_skip : 1;        /* GC found blocks it cannot account for: never a victim */
};
_Static_assert(sizeof(struct zsec) == 16, "struct zsec grew: it is kept per zone");
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
	ZNAT_DATA_FIRST = 16,    /* inline data moved to block 0: fsync flushes it first */
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
	uint64_t gc_picks, gc_pick_ns;   /* selections that found a victim, their time */
	uint64_t zones_reset;
	uint64_t fg_gc_stalls;     /* foreground GC passes that had to wait for I/O */
	/* readers too: atomic */
	uint64_t node_misses;      /* node cache misses (one device read each) */
	uint64_t node_readahead;   /* nodes those reads brought in besides the one asked for */
	uint64_t nat_reads;        /* NAT blocks read on demand (one device read each) */
	uint64_t nat_evicted;      /* NAT blocks dropped under the memory bound */
	uint64_t sit_reads;        /* SIT blocks read back after being dropped */
	uint64_t sit_evicted;      /* SIT blocks with segments in use dropped under the bound */
	uint64_t cp_sit_written;   /* SIT blocks the checkpoints wrote (only dirty ones) */
	uint64_t cp_nat_written;   /* NAT blocks likewise */
	/* compressed files (cluster.c) */
	uint64_t compr_clusters;   /* clusters written compressed */
	uint64_t compr_raw;        /* full clusters that did not compress: written raw */
	uint64_t compr_saved;      /* blocks those compressed clusters did not write */
	uint64_t compr_reads;      /* clusters decompressed (atomic: readers) */
	/* the writeback gate (fuse_file.c) */
	uint64_t wb_gate_refusals; /* buffered write(2)s refused ENOSPC (atomic: no lock) */
	uint64_t wb_lost_writes;   /* writeback WRITEs that found no room (should stay 0) */
	/*
	 * The time line of WRITE and FSYNC, sums in ns (atomic: some are
	 * added with the lock dropped).  FSYNC: from the request's arrival
	 * to the lock held, from there to its node writes' submission, the
	 * node writes, the flush, arrival to reply.  WRITE: the data's
	 * device time, arrival to reply.  bench/fsync.sh prints the means.
	 */
	uint64_t fsync_n, fsync_lock_ns, fsync_prep_ns, fsync_node_ns, fsync_flush_ns, fsync_ns;
	uint64_t write_n, write_io_ns, write_ns;
};
/* Add to one of the counters above without the lock. */
#define ZLFS_COUNT_ADD(sbi, field, v) __atomic_add_fetch(&(sbi)->st.field, (v), __ATOMIC_RELAXED)

/*
 * F2FS's compression mount options (cluster.c checks and applies them):
 * what new compressed files get, which files are made compressed.
 */
#define ZLFS_COMPR_EXT_MAX 16            /* F2FS's COMPRESS_EXT_NUM */
#define ZLFS_COMPR_EXT_LEN 8             /* F2FS_EXTENSION_LEN, the NUL included */
struct zlfs_compr_opts {
	bool given;                      /* any compress_* option was given */
	bool alg_given;
	uint8_t alg;                     /* ZF_COMPR_* (lz4 by default) */
	bool level_given;
	unsigned int level;              /* compress_algorithm=ALG:LEVEL */
	uint8_t log;                     /* compress_log_size (2 by default) */
	bool chksum;                     /* compress_chksum */
	bool user_mode;                  /* compress_mode=user: written raw unless asked */
	uint8_t next, nnoext;
	char ext[ZLFS_COMPR_EXT_MAX][ZLFS_COMPR_EXT_LEN];
	char noext[ZLFS_COMPR_EXT_MAX][ZLFS_COMPR_EXT_LEN];
};

struct zlfs_opts {
	uint8_t mode;                    /* dispatcher ordering */
	struct zlfs_disp_opts disp;
	struct zlfs_gc_opts gc;
	bool ro;
	bool fsync_cp;                   /* fsync writes a checkpoint (no roll-forward) */
	uint32_t cache_mb;               /* the memory bound (0: ZLFS_CACHE_MB_DEFAULT) */
	uint32_t sit_cap;                /* in-process only: the SIT's share in blocks (0: cache_mb's) */
	uint8_t atime;                   /* enum zlfs_atime: when reads update atime */
	bool nodiratime;                 /* never for directories */
	bool info_syslog;                /* notes (zlfs_info) to syslog, not stderr */
	bool norecovery;                 /* ro,norecovery: the chain left alone without a word */
	bool csum_rewrite;               /* fsck's repairs: take inodes whose checksum is
					  * wrong (fsck checked their fields), write fresh sums */
	/* F2FS's inline options, off only when asked (the kernel's defaults are on) */
	bool noinline_data;              /* new files keep their data in blocks */
	bool noinline_dentry;            /* new directories start with a dentry block */
	bool noinline_xattr;             /* new inodes keep no xattrs in the inode */
	uint16_t inline_xattr_size;      /* words (flexible_inline_xattr); 0: 50 */
	struct zlfs_compr_opts compr;
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
	uint32_t csum_seed;              /* inode checksums' seed (zf_csum_seed of sb) */
	bool csum_rewrite;               /* zlfs_opts.csum_rewrite */
	/* what new inodes start as (zlfs_opts' inline options; inode.c) */
	bool inline_data, inline_dentry, inline_xattr;
	uint16_t inline_xattr_words;     /* i_inline_xattr_size of new inodes (flexible) */
	struct zlfs_compr_opts compr;    /* what new compressed files get (cluster.c) */
	int fatal;                       /* != 0: a device error made us read-only */
	char fatal_why[256];             /* the first inconsistency found (zlfs_corrupt) */
	bool fatal_why_set;              /* fatal_why is written (atomic: readers race) */
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
	/*
	 * The NAT in memory on demand, a block's worth of entries at a time:
	 * nat_in[b] says NAT block b was read, its entries then in nat_blk[b]
	 * (NULL while every one of them is zero).  zlfs_nat reads a block the
	 * first time one of its nids is asked for, so a mount reads no NAT
	 * block it has no use for, and memory follows the nids touched.
	 * nat_bits (the kernel's layout, f2fs_cp_pack.h: a check, a "full"
	 * and an "empty" bit per block) say what every block held at the
	 * last checkpoint: exact for the blocks not read since, brought up to
	 * date for the written ones at each checkpoint, written with it;
	 * nid allocation passes full blocks without reading them.  Under the
	 * memory bound a block that would read back the same (clean, no
	 * in-memory flag, no node of it cached) is dropped (zlfs_nat_shrink,
	 * exclusive holders only, at an operation's start: no entry pointer
	 * is held across it).  Readers (shared lock) read blocks under
	 * nat_lock and publish nat_in last; entries change only under the
	 * exclusive lock (zlfs_nat_mut, after zlfs_nat_hold made the block's
	 * room).
	 */
	struct znat **nat_blk;
	uint8_t *nat_in;                 /* one byte per NAT block: read */
	uint8_t *nat_ref;                /* one byte per NAT block: asked for since the last trim */
	uint32_t nat_blocks, nat_blocks_held;
	uint32_t nat_hand;               /* where zlfs_nat_shrink goes on */
	uint8_t *nat_bits;               /* nat_bits_blocks blocks */
	uint32_t nat_bits_blocks, nat_bits_bytes;
	bool nat_bits_found;             /* the mount found them (else it read the whole NAT) */
	pthread_mutex_t nat_lock;
	uint32_t max_nid;
	uint8_t *nat_dirty;              /* one byte per NAT block */
	uint32_t next_free_nid;          /* allocation cursor */
	uint32_t valid_node_count, valid_inode_count;

	/* SIT, sections, logs */
	/*
	 * The SIT in memory a block's worth of segments at a time, as the
	 * NAT: sit_blk[b] holds segments b*55 .. b*55+54, or is NULL while
	 * every one of them is free (no valid block, no log) and its SIT block
	 * is clean, or while it is clean and was dropped under the memory
	 * bound (sit_out[b]: read it back), so a volume costs memory for the
	 * segments recently used, not for its size.  Read with zlfs_seg (a
	 * dropped block is read back, by readers too: under sit_lock, the
	 * pointer published last); segment.c changes them under the exclusive
	 * lock; zlfs_sit_shrink drops blocks only at an operation's start.
	 */
	struct zseg **sit_blk;
	uint8_t *sit_dirty;              /* one byte per SIT block: write at the next CP */
	uint8_t *sit_out;                /* one byte per SIT block: dropped with segments in use */
	uint8_t *sit_ref;                /* one byte per SIT block: asked for since the last trim */
	uint32_t sit_blocks, sit_blocks_held;
	uint32_t sit_dirty_blocks;       /* how many sit_dirty bytes are set */
	uint32_t sit_cap, sit_retry, sit_hand;   /* the bound (super.c), the trim's clock */
	pthread_mutex_t sit_lock;
	uint32_t segs_in_use;            /* segments with a valid block */
	uint32_t countable_segs;         /* segments the CP's free count counts when empty */
	/*
	 * GC's victim index (segment.c): every INUSE section is on the list
	 * of its valid block count (vi_head[valid], links vi_link[2s] next,
	 * [2s+1] prev; UINT32_MAX ends), vi_nonempty a bit per count, so the
	 * emptiest sections are found without walking the volume.
	 */
	uint32_t *vi_link, *vi_head;
	uint64_t *vi_nonempty;
	uint32_t vi_counts;              /* valid counts 0 .. segs_per_sec * 512 */
	/* a bit per section: FREE, PREFREE (the allocator and the checkpoint find them by word) */
	uint64_t *free_map, *prefree_map;
	struct zsec *secs;
	uint32_t nr_segs, nr_secs, segs_per_sec;
	uint32_t free_secs, prefree_secs;
	uint32_t sec_blocks;             /* usable blocks of a section (zone capacity) */
	uint64_t valid_block_count;
	/*
	 * Slots of regular files that hold NEW_ADDR (kernel fallocate's
	 * reservation, a compressed cluster's unused slots) or COMPRESS_ADDR:
	 * F2FS counts them in the checkpoint's valid_block_count as if they
	 * were blocks, so the checkpoint records valid_block_count plus these.
	 * (Directory and symlink NEW_ADDR slots are the block cache's, in
	 * pending_blocks, and never reach the device.)
	 */
	uint64_t reserved_blocks;
	struct zlog logs[ZF_NR_LOGS];
	/*
	 * The volume's devices (F2FS's devs[]; one for most volumes): device
	 * m holds the sections mem_sec[m] .. mem_sec[m + 1] - 1, none for a
	 * device of metadata only.  The allocator spreads the logs over them
	 * and searches each from its own cursor (segment.c).
	 */
	uint32_t nr_members;
	uint32_t mem_sec[ZF_MAX_DEVICES + 1];
	uint32_t mem_free[ZF_MAX_DEVICES];     /* FREE sections of each */
	uint32_t mem_cursor[ZF_MAX_DEVICES];   /* where the next search there starts */

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
	uint32_t ino_hash_size, nr_inodes;   /* buckets: INO_HASH_MIN or more (inode.c) */
	uint32_t unload_cursor;          /* where zlfs_inode_unload goes on */
	uint32_t inodes_freed;           /* zinodes freed since malloc was last trimmed */
	uint32_t node_ra_last;           /* address of the last node cache miss (node.c) */

	/* the memory bound (super.c's zlfs_cache_balance), in 4 KiB blocks */
	uint32_t cache_blocks;           /* nodes + cached blocks, clean and dirty */
	uint32_t node_cap;               /* nodes kept after a trim or checkpoint */
	uint32_t dirty_cap;              /* dirty nodes + blocks: a checkpoint past this */
	uint32_t ops_active;             /* operations between zlfs_op_begin and _end (lock.c) */
	uint32_t trim_retry;             /* no trim below this many nodes (0: any time) */
	uint32_t nat_cap;                /* NAT blocks kept after a trim (node.c's zlfs_nat_shrink) */
	uint32_t nat_retry;              /* no NAT trim below this many blocks (0: any time) */
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
	uint8_t *mount_zcond;            /* each section's zone condition as the mount found
					    it (zoned volumes; until zlfs_seg_fix_zones) */

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

/* Monotonic nanoseconds (GC's time, the WRITE and FSYNC time line). */
static inline uint64_t zlfs_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Note a user operation (background GC waits for quiet). */
static inline void zlfs_note_op(struct zlfs_sb *sbi)
{
	__atomic_store_n(&sbi->last_op_ms, zlfs_now_ms(), __ATOMIC_RELAXED);   /* readers too */
}

/* ---- the mount's state, asked by every layer (inline: no calls up) ---- */
/* The superblock's F2FS feature bits (what inode shapes and checks depend on). */
/*
 * nid's NAT entry (nid < max_nid); a block never used reads as zeros.  A
 * block not in memory yet is read (zlfs_nat_miss, node.c): the NAT in
 * memory is a cache, so a const caller may fill it.  A read that fails
 * turns the volume read-only and gives zeros (a free nid), so nothing is
 * written on its word; entry points that can report the error call
 * zlfs_nat_load first.
 */
const struct znat *zlfs_nat_miss(struct zlfs_sb *sbi, uint32_t nid);
static inline const struct znat *zlfs_nat(const struct zlfs_sb *sbi, uint32_t nid)
{
	static const struct znat none;
	uint32_t b = nid / ZF_NAT_ENTRY_PER_BLOCK;

	if (!__atomic_load_n(&sbi->nat_in[b], __ATOMIC_ACQUIRE))
		return zlfs_nat_miss((struct zlfs_sb *)sbi, nid);
	if (!__atomic_load_n(&sbi->nat_ref[b], __ATOMIC_RELAXED))   /* (readers race: a hint) */
		__atomic_store_n(&sbi->nat_ref[b], 1, __ATOMIC_RELAXED);
	const struct znat *e = sbi->nat_blk[b];
	return e ? &e[nid % ZF_NAT_ENTRY_PER_BLOCK] : &none;
}

const struct zseg *zlfs_seg_miss(struct zlfs_sb *sbi, uint32_t segno, int *err);

/*
 * A segment's SIT entry: zeros (free) for a block not in memory whose
 * segments are all free; a dropped block is read back (segment.c; on a
 * device error or a damaged block the volume goes read-only, *err says
 * why and the entry reads as free).  Valid until the operation ends.
 */
static inline const struct zseg *zlfs_seg_err(const struct zlfs_sb *sbi, uint32_t segno,
					      int *err)
{
	uint32_t b = segno / ZF_SIT_ENTRY_PER_BLOCK;
	const struct zseg *e = __atomic_load_n(&sbi->sit_blk[b], __ATOMIC_ACQUIRE);

	*err = 0;
	if (!e)
		return zlfs_seg_miss((struct zlfs_sb *)sbi, segno, err);
	if (!__atomic_load_n(&sbi->sit_ref[b], __ATOMIC_RELAXED))   /* (readers race: a hint) */
		__atomic_store_n(&sbi->sit_ref[b], 1, __ATOMIC_RELAXED);
	return &e[segno % ZF_SIT_ENTRY_PER_BLOCK];
}

/* The same, for a reader to whom a failed read-back and a free segment are alike. */
static inline const struct zseg *zlfs_seg(const struct zlfs_sb *sbi, uint32_t segno)
{
	int err;

	return zlfs_seg_err(sbi, segno, &err);
}

static inline uint32_t zlfs_feat(const struct zlfs_sb *sbi)
{
	return zf_le32_to_cpu(sbi->sb.feature);
}

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

#endif
