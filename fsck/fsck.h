/*
 * fsck.h - fsck.zlfs: the state of one check of a volume, and the calls
 * between its files.
 *
 *   main.c    the command line: options, modes, the mounted-device refusal
 *   run.c     one run (fsck_run): the order of the passes, the rounds of
 *             repair, the exit code (fsck(8))
 *   report.c  problems (FSCK_SHOWN of each kind printed), -v, errors and
 *             the progress bar: what every other file calls to speak
 *   load.c    superblocks, checkpoint packs, NAT, SIT and SSA read and
 *             checked (zf_check_super / zf_check_cp); the roll-forward chain
 *   walk.c    the tree from the root: nodes, data blocks, xattrs, dentries,
 *             link counts, i_blocks; what every block belongs to
 *   verify.c  the global checks: SIT against what the walk reached,
 *             unreachable nodes, counts against the checkpoint, orphans,
 *             zones' write pointers
 *   repair.c  what -p / -y write: SIT, NAT, SSA and checkpoint in place;
 *             then, through the filesystem itself, link counts, sizes,
 *             bad entries and lost+found
 *
 * Invariant: nothing read from the device is used before it is bounded;
 * a problem is reported with fsck_problem(), counted, never fatal to the
 * check (only a volume without a valid superblock or checkpoint stops it).
 * Single-threaded: no locks.
 */
#ifndef ZLFS_FSCK_H
#define ZLFS_FSCK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "zlfs/f2fs_check.h"
#include "zlfs/f2fs_format.h"
#include "zlfs/f2fs_layout.h"
#include "zlfs/zdev.h"

/* fsck(8) exit codes */
#define FSCK_OK          0
#define FSCK_CORRECTED   1
#define FSCK_UNCORRECTED 4
#define FSCK_OPERROR     8
#define FSCK_USAGE       16
#define FSCK_CANCELLED   32

/* SIGINT/SIGTERM during a repair step: set by main.c's handler, seen after the step (run.c). */
extern volatile sig_atomic_t fsck_writing, fsck_cancelled;

enum fsck_mode {
	FSCK_MODE_CHECK,   /* -n: report, write nothing */
	FSCK_MODE_PREEN,   /* -p / -a: repair what is safe without asking */
	FSCK_MODE_YES,     /* -y: repair everything */
};

/* What a problem needs to be repaired. */
enum fsck_fix {
	FIX_NONE = 0,      /* informational */
	FIX_META,          /* SIT, NAT, SSA, counts: rewritten in place (repair.c) */
	FIX_TREE,          /* an inode's fields or a dentry: through the filesystem */
	FIX_MANUAL,        /* nothing fsck can do safely */
};

/* One inode the walk met. */
struct fino {
	uint32_t links;        /* dentries naming it (directories: the subdirectories) */
	uint32_t disk_links;   /* i_links */
	uint32_t parent;       /* directory that named it first (directories' ".." check) */
	uint8_t  state;        /* FINO_* */
	bool dir;
	uint8_t ftype;         /* the file type its mode gives (zlfs_ftype) */
};
enum { FINO_NONE = 0, FINO_QUEUED, FINO_DONE, FINO_BAD };

/* A repair to make through the filesystem (repair.c), found by walk.c. */
enum {
	TF_LINKS,              /* i_links := value */
	TF_BLOCKS,             /* i_blocks := value */
	TF_DENTRY,             /* remove the entry at value in directory dir */
	TF_LOSTFOUND,          /* link the unreachable inode into /lost+found */
	TF_SLOT,               /* clear the block pointer at slot value of node ino */
	TF_XATTR,              /* drop the damaged xattrs */
	TF_CSUM,               /* write the inode back with a fresh checksum */
	TF_COMPR,              /* i_compr_blocks := value */
};
struct ftreefix {
	uint32_t ino;
	int what;              /* TF_* */
	uint64_t value;        /* the right value; dentries: block << 16 | slot */
	uint32_t dir;          /* dentries: the directory */
};

/* An SSA entry to correct (repair.c), found by walk.c. */
struct fssafix {
	uint32_t addr;
	uint8_t type;          /* ZF_SUM_TYPE_* */
	struct zf_summary s;
};

/*
 * One kind of problem, for the cap on what is printed: FSCK_SHOWN lines of
 * each kind, then one "... N in all" line (fsck_problems_summary).  The
 * kind is fsck_problem's format; a bare "%s" (a reason from zf_check_*)
 * is told apart by its text with every number as N.  Kinds are few (one
 * per call site or reason), whatever the damage.
 */
#define FSCK_SHOWN 20
struct fkind {
	char key[128];
	char first[192];       /* the first one, shown in the summary */
	FILE *out;             /* where its lines go */
	uint64_t n;
};

struct fsck {
	const char *spec;
	enum fsck_mode mode;
	bool force, verbose, progress;

	struct zlfs_zdev *dev;
	struct zf_super sb;             /* the copy in use */
	bool sb_bad[2];                 /* copy i failed its checks */
	struct zf_layout lay;
	uint32_t nr_segs;               /* main segments */

	/* the checkpoint in use */
	int cp_pack;
	bool cp_other_ok;               /* the other pack holds a valid checkpoint too */
	uint8_t *cp;                    /* head + payload blocks */
	uint64_t cp_ver;
	uint32_t cp_flags;
	uint8_t *sit_bitmap, *nat_bitmap;
	uint8_t *nat_bits;              /* the checkpoint's nat_bits when it has good ones, else NULL */
	uint32_t nat_bits_bytes;
	struct zf_summary_block sums[ZF_NR_LOGS];   /* current segments' summaries */
	uint32_t cur_seg[ZF_NR_LOGS], cur_off[ZF_NR_LOGS];
	uint32_t *orphans;
	uint32_t nr_orphans;

	/* NAT, after its journal */
	uint32_t max_nid;
	uint32_t *nat_addr, *nat_ino;
	uint8_t *nat_ver;
	uint8_t *nat_from_journal;      /* bit per nid */
	/* SIT, after its journal */
	/*
	 * Per main segment; only entries that are not all zero are ever
	 * written (sit_set has their bits), so that the pages of a large
	 * volume's free segments are never touched: on this machine a read
	 * of an untouched page costs a page too, so the passes ask sit_set,
	 * reach_seg and ssa_set before they read sit, reach or ssa.
	 */
	struct zf_sit_entry *sit;
	uint8_t *sit_set;               /* bit per segment */
	uint8_t *sit_from_journal;      /* byte per segment */
	struct zf_summary_block **ssa;  /* per main segment, read when needed (fsck_ssa_block) */
	uint8_t *ssa_set;               /* bit per segment: ssa[s] read */
	uint32_t *nids, nr_nids;        /* nids the NAT maps to a block, ascending */

	/* what the walk found */
	uint8_t *reach;                 /* bit per main block: some file owns it */
	uint8_t *reach_seg;             /* bit per segment: a block of it was marked in reach */
	uint8_t *node_seen;             /* bit per nid */
	struct fino *ino;               /* per nid (inodes only) */
	uint64_t walk_blocks, walk_nodes, walk_inodes, walk_files, walk_dirs;
	uint64_t walk_reserved;         /* NEW_ADDR and COMPRESS_ADDR slots: F2FS counts them valid */
	uint64_t walk_clusters;         /* compressed clusters decompressed and checked */
	uint8_t *cl_in, *cl_out;        /* their blocks, and what they decompress to */
	uint32_t *queue;                /* directories to walk */
	uint32_t qlen, qcap;
	struct ftreefix *tfix;
	uint32_t ntfix, tfix_cap;
	struct fssafix *ssafix;
	uint32_t nssafix, ssafix_cap;
	uint64_t owned;                 /* main blocks the walk owns (verify.c) */
	uint32_t free_segs;             /* as fsck.f2fs counts them (verify.c) */
	bool zones_fix;                 /* zones to reset or finish: repair mounts the volume */

	/* roll-forward chain after the checkpoint */
	uint32_t chain_nodes;

	/* the verdict */
	uint64_t problems;              /* inconsistencies found */
	uint64_t need_meta, need_tree, need_manual;
	uint64_t fixed;
	bool clean_unmount;
	bool root_bad;                  /* the root inode is missing, damaged or no directory */
	struct fkind *kinds;            /* what was reported, by kind (the cap) */
	uint32_t nkinds, kinds_cap;
};

/*
 * Check (and in PREEN / YES mode repair) the volume f->dev holds, opened
 * from f->spec.  Returns the fsck(8) exit code; f->dev may have been
 * closed and opened again (repairs of the tree mount the volume).
 */
int fsck_run(struct fsck *f);

/* report.c */
/*
 * Report one inconsistency (printf-style); counted by the fix it needs.
 * Printed only while its kind has had fewer than FSCK_SHOWN (all with -v).
 */
void fsck_problem(struct fsck *f, enum fsck_fix fix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Another message that may come once per inode (repairs): capped as problems are. */
void fsck_note(struct fsck *f, FILE *out, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "... N in all like "FIRST"" for each kind past the cap; the kinds forgotten. */
void fsck_problems_summary(struct fsck *f);
/* msg past a leading "SPEC: " (the device layer's messages name the path themselves). */
const char *fsck_unnamed(const char *spec, const char *msg);
/* "fsck.zlfs: SPEC: MSG SUFFIX" on stderr, the path said once (fsck_unnamed). */
void fsck_error(const char *spec, const char *msg, const char *suffix);
/* -v output. */
void fsck_info(struct fsck *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The progress bar (stderr, a terminal only): done of total in the pass `what`. */
void fsck_progress(struct fsck *f, const char *what, uint64_t done, uint64_t total);

/* load.c: 0, or a negative errno when there is nothing to check (no superblock or checkpoint). */
int fsck_load(struct fsck *f);
void fsck_unload(struct fsck *f);
int fsck_read_block(struct fsck *f, uint64_t blkaddr, void *buf);
/* Block blkaddr was written: a cached copy goes. */
void fsck_read_drop(uint64_t blkaddr);
bool fsck_is_main(const struct fsck *f, uint64_t blkaddr);
/* Is blkaddr valid in the SIT as loaded? */
bool fsck_sit_valid(const struct fsck *f, uint32_t blkaddr);
/* The SSA entry of blkaddr (in the main area), and its block's type. */
const struct zf_summary *fsck_ssa(struct fsck *f, uint32_t blkaddr, uint8_t *type);
struct zf_summary_block *fsck_ssa_block(struct fsck *f, uint32_t segno);
/* Bit i of a byte-addressed bitmap (reach, reach_seg, sit_set, ssa_set, node_seen). */
static inline bool fsck_bit(const uint8_t *m, uint64_t i)
{
	return (m[i / 8] >> (i % 8)) & 1;
}
static inline void fsck_bit_set(uint8_t *m, uint64_t i)
{
	m[i / 8] |= (uint8_t)(1u << (i % 8));
}
/* Main block rel (from the main area's start) is owned: reach and reach_seg. */
static inline void fsck_reach(struct fsck *f, uint64_t rel)
{
	fsck_bit_set(f->reach, rel);
	fsck_bit_set(f->reach_seg, rel / ZF_BLKS_PER_SEG);
}
/* Segment s's SIT entry (all zero unless sit_set). */
static inline const struct zf_sit_entry *fsck_sit(const struct fsck *f, uint32_t s)
{
	static const struct zf_sit_entry zero;

	return fsck_bit(f->sit_set, s) ? &f->sit[s] : &zero;
}

/* walk.c */
int fsck_walk(struct fsck *f);
void fsck_tree_fix(struct fsck *f, uint32_t ino, int what, uint64_t value, uint32_t dir);
void fsck_ssa_fix(struct fsck *f, uint32_t addr, uint8_t type, uint32_t nid, uint16_t ofs,
		  uint8_t version);
/* Walk inode ino (met through a dentry of parent, or 0 when unreachable). */
int fsck_walk_inode(struct fsck *f, uint32_t ino, uint32_t parent, bool *ok);
/* The directories fsck_walk_inode queued, and the ones they queue, walked. */
int fsck_walk_queue(struct fsck *f);

/* verify.c */
int fsck_verify(struct fsck *f);

/* repair.c: 0, or a negative errno (nothing more could be repaired). */
int fsck_repair(struct fsck *f);

#endif
