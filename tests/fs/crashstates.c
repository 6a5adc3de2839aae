/*
 * crashstates.c - the crash-state harness: thousands of power cuts, each
 * recovered and checked.
 *
 *   crashstates MKFS WORKDIR [--states N] [--seed S] [--workload NAME]
 *               [--conventional] [--first K] [-v]
 *
 * --first K starts at the K-th state of each workload (a failure's
 * "seed" is seed * 1000003 + workload * 7919 + K, K a multiple of 40:
 * run it again alone with --states K+40 --first K).
 *
 * zlfs runs in this process (no FUSE) on an emulated zoned image in
 * power-cut mode (--conventional: an image whose zones are all
 * conventional, as a disk without zones, where no write pointer tells
 * recovery where the writes after the checkpoint end) (the device layer's zemu: every write since the last
 * flush can be undone).  For one workload and seed, a dry run counts the
 * device writes W and notes where each operation that flushed ended.  Each
 * crash state then replays the workload on a fresh copy of the freshly
 * made volume with the cut armed at write N (powercut_after=N) and a
 * seed that picks, for each zone, how many of its unflushed writes survive
 * (a prefix: what a zoned device may keep).  N runs over every flush
 * point (the state right after that flush) and random points in between.
 * After the cut: fsck.f2fs on the raw image (it must accept a crash image
 * with an fsync chain: every 4th state), mount (roll-forward runs), the
 * oracle, unmount, fsck.f2fs again (every state), clean or the state fails.
 *
 * The oracle.  Every block written carries a header (file, block, version)
 * and a body derived from it, so any block read back can be told apart:
 * the right file's block of some version, or zeros, or garbage.  The model
 * records promises: sync (a checkpoint) promises every file at its path;
 * fsync of a file promises its content and size, and its name if it was
 * created since the last sync and not renamed.  After recovery, a promised
 * file not changed since must be at its promised path with exactly the
 * promised bytes; one changed since (or whose name changed) may be at the
 * old or new path with any plausible content; every file present must read
 * without error and hold only plausible blocks.
 *
 * Workloads (CrashMonkey's and xfstests' crash tests in spirit): create /
 * write / fsync, rename over a file then fsync, link and unlink, truncate
 * up and down, fallocate and punch, directory fsync, many small files,
 * large appends, overwrites in the middle, an unlinked open file (orphan),
 * "gc": the same on a volume filled so foreground and background GC
 * move blocks while it runs, the SIT in memory held to one block (so its
 * blocks are dropped and read back all along); and "compressed": the mixed one with every
 * file compressed (F2FS's compression, each algorithm and cluster sizes of
 * 4 to 16 blocks by seed; no punching, which F2FS refuses there; fsync
 * checkpoints).  The volume has the compression feature for all of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "gc.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "dir.h"
#include "xattr.h"

#define NFILES 40
#define NDIRS 3
/*
 * Blocks per file in the model: past the inode's 923 slots, both direct
 * nodes and into the first indirect node's, so fsync chains carry direct
 * nodes and recovery rebuilds paths.  The buffers are touched only as far
 * as a file reaches.
 */
#define MAXBLK 3072
#define MAGIC 0x7a6c6373u    /* "zlcs" */

static const char *dir_names[NDIRS] = { "", "d0", "d1" };
static int verbose;
static unsigned long first_state;   /* --first */
/*
 * The "compressed" workload: mounts take compress_extension=* (every new
 * file compressed, the algorithm and cluster size from the seed), and
 * punching, which F2FS refuses on compressed files, is left out.
 */
static bool compressed;
static bool sit_small;      /* the "gc" workload: the SIT in memory held to one block */
static unsigned int compr_alg, compr_log;

/* ---- content ------------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/*
 * Block `blk` of file `id`, version `ver`: header then a derived body, in
 * runs of 64 bytes that repeat one derived word: still told apart from any
 * other block, and compressible, so the "compressed" workload's clusters
 * are stored compressed.
 */
static void gen_block(uint8_t *b, uint32_t id, uint32_t blk, uint32_t ver)
{
	uint32_t h[4] = { MAGIC, id, blk, ver };
	uint64_t s = mix(((uint64_t)id << 40) ^ ((uint64_t)blk << 20) ^ ver), w = 0;

	memcpy(b, h, sizeof(h));
	for (size_t i = sizeof(h); i < ZF_BLKSIZE; i += 8) {
		if (i % 64 == sizeof(h))
			w = mix(s + i);
		memcpy(b + i, &w, 8);
	}
}

/*
 * Is b (of which the first `len` bytes are inside the file) a plausible
 * block `blk` of some file: all zeros, or a generated block of that index
 * whose bytes match up to some point and are zero after it (a truncate
 * inside the block, then an extension)?  *id gets the file it claims.
 */
static bool plausible(const uint8_t *b, size_t len, uint32_t blk, uint32_t *id)
{
	static uint8_t ref[ZF_BLKSIZE];
	uint32_t h[4];
	size_t i = 0;

	*id = ~0u;
	while (i < len && !b[i])
		i++;
	if (i == len)
		return true;
	if (len < sizeof(h))
		return false;
	memcpy(h, b, sizeof(h));
	if (h[0] != MAGIC || h[2] != blk || h[1] >= NFILES)
		return false;
	gen_block(ref, h[1], blk, h[3]);
	for (i = 0; i < len && b[i] == ref[i]; i++)
		;
	for (; i < len; i++)
		if (b[i])
			return false;
	*id = h[1];
	return true;
}

/* ---- the model ------------------------------------------------------------------ */

struct mfile {
	bool exists;
	int dir;
	char name[32];
	uint32_t ino;
	uint8_t *data;           /* current content (MAXBLK blocks) */
	uint64_t size;
	bool open;               /* held open (an unlinked one is an orphan) */
	bool created_since_sync; /* its name is not in a checkpoint yet */
	bool renamed;            /* renamed since it was created or synced */
	/* the promise */
	bool promised;
	int pdir;
	char pname[32];
	uint8_t *pdata;
	uint64_t psize;
	bool changed;            /* content changed since the promise */
	bool moved;              /* name changed (or gone) since the promise */
	uint32_t ver;            /* versions written */
	char xattr[64], pxattr[64];   /* user.zlcs's value ("" none), now and promised */
	uint8_t zeroed[MAXBLK];  /* blocks truncated or punched since the promise */
};

struct model {
	struct mfile f[NFILES];
	uint32_t dir_ino[NDIRS];
	uint64_t rng;
};

static uint64_t rnd(struct model *m)
{
	m->rng = m->rng * 6364136223846793005ull + 1442695040888963407ull;
	return mix(m->rng);
}

static void model_init(struct model *m, uint64_t seed)
{
	memset(m, 0, sizeof(*m));
	m->rng = seed * 2654435761u + 1;
	for (int i = 0; i < NFILES; i++) {
		m->f[i].data = calloc(MAXBLK, ZF_BLKSIZE);
		m->f[i].pdata = calloc(MAXBLK, ZF_BLKSIZE);
		if (!m->f[i].data || !m->f[i].pdata)
			abort();
	}
}

static void model_free(struct model *m)
{
	for (int i = 0; i < NFILES; i++) {
		free(m->f[i].data);
		free(m->f[i].pdata);
	}
}

static void promise(struct mfile *f, bool name)
{
	f->promised = true;
	memcpy(f->pdata, f->data, f->size > f->psize ? f->size : f->psize);
	f->psize = f->size;
	memcpy(f->pxattr, f->xattr, sizeof(f->xattr));
	memset(f->zeroed, 0, sizeof(f->zeroed));
	f->changed = false;
	if (name) {
		f->pdir = f->dir;
		memcpy(f->pname, f->name, sizeof(f->name));
		f->moved = false;
	}
}

/* sync: everything as it is now */
static void model_sync(struct model *m)
{
	for (int i = 0; i < NFILES; i++) {
		struct mfile *f = &m->f[i];
		if (f->exists) {
			promise(f, true);
			f->created_since_sync = f->renamed = false;
		} else {
			f->promised = false;
		}
	}
}

/* ---- the filesystem side ----------------------------------------------------------- */

struct fs {
	struct zlfs_sb *sbi;
	struct model *m;
	bool dead;               /* the device is gone: stop */
	char why[256];           /* a failure not caused by the cut */
};

static bool dev_dead(struct fs *fs)
{
	return fs->sbi->fatal || zlfs_zdev_is_dead(fs->sbi->dev);
}

/* An operation's result: 0 goes on; an error after the cut stops the run. */
static int check(struct fs *fs, int ret, const char *what)
{
	if (!ret)
		return 0;
	if (dev_dead(fs)) {
		fs->dead = true;
		return ret;
	}
	if (ret == -ENOSPC)
		return ret;      /* a full volume: the operation changed nothing */
	if (!fs->why[0])
		snprintf(fs->why, sizeof(fs->why), "%s: %s (device alive)", what, strerror(-ret));
	fs->dead = true;
	return ret;
}

static const struct zlfs_cred cred = { 0, 0, 022 };


/*
 * What every operation does first (zlfs_op_begin): the memory bound kept
 * (SIT blocks dropped under the "gc" workload's bound), then room made.
 */
static int room(struct fs *fs, uint64_t blocks)
{
	zlfs_cache_balance(fs->sbi, false);
	return zlfs_balance(fs->sbi, blocks);
}
static int op_write(struct fs *fs, int i, uint32_t first, uint32_t n)
{
	struct mfile *f = &fs->m->f[i];
	struct zinode *zi;
	uint8_t *buf = malloc((size_t)n * ZF_BLKSIZE);
	int ret;

	if (!buf)
		return -ENOMEM;
	if (first + n > MAXBLK)
		n = MAXBLK - first;
	f->ver++;
	for (uint32_t k = 0; k < n; k++)
		gen_block(buf + (size_t)k * ZF_BLKSIZE, (uint32_t)i, first + k, f->ver);
	f->changed = true;        /* before: a cut in the middle changes it too */
	if (!(ret = room(fs, n + 8)) && !(ret = zlfs_iget(fs->sbi, f->ino, &zi)))
		ret = zlfs_file_write(fs->sbi, zi, (char *)buf, (size_t)n * ZF_BLKSIZE,
				      (uint64_t)first * ZF_BLKSIZE);
	if (!ret) {
		memcpy(f->data + (size_t)first * ZF_BLKSIZE, buf, (size_t)n * ZF_BLKSIZE);
		uint64_t end = (uint64_t)(first + n) * ZF_BLKSIZE;
		if (end > f->size)
			f->size = end;
	}
	free(buf);
	return check(fs, ret, "write");
}

static int op_create(struct fs *fs, int i, int dir)
{
	struct mfile *f = &fs->m->f[i];
	struct zinode *zi;
	int ret;

	snprintf(f->name, sizeof(f->name), "f%d.%u", i, f->ver);
	f->dir = dir;
	memset(f->data, 0, f->size);
	f->size = 0;
	f->xattr[0] = 0;
	if (!(ret = room(fs, 4)))
		ret = zlfs_create(fs->sbi, &cred, fs->m->dir_ino[dir], f->name, S_IFREG | 0644, 0,
				  NULL, &zi);
	if (check(fs, ret, "create"))
		return ret;
	f->exists = true;
	f->ino = zi->ino;
	f->created_since_sync = true;
	f->renamed = false;
	f->promised = false;
	return 0;
}

static int op_fsync(struct fs *fs, int i, bool datasync)
{
	struct mfile *f = &fs->m->f[i];
	struct zinode *zi;
	int ret;

	if (!(ret = zlfs_iget(fs->sbi, f->ino, &zi)))
		ret = zlfs_file_fsync(fs->sbi, zi, datasync);
	if (check(fs, ret, "fsync"))
		return ret;
	if (!f->exists)
		return 0;          /* an unlinked file: nothing to find afterwards */
	/* its data and size; its name too if new and not renamed (F2FS and ext4 do) */
	bool name = f->created_since_sync && !f->renamed;
	if (f->promised && !f->moved)
		name = true;       /* the promised name still holds */
	if (!name && !f->promised)
		return 0;          /* no name to find it by */
	promise(f, name);
	return 0;
}

static int op_sync(struct fs *fs)
{
	int ret = zlfs_checkpoint(fs->sbi, false);
	if (check(fs, ret, "sync"))
		return ret;
	model_sync(fs->m);
	return 0;
}

static int op_truncate(struct fs *fs, int i, uint64_t size)
{
	struct mfile *f = &fs->m->f[i];
	struct zinode *zi;
	int ret;

	f->changed = true;
	for (uint64_t b = size / ZF_BLKSIZE; b < MAXBLK; b++)
		f->zeroed[b] = 1;
	if (!(ret = room(fs, 4)) && !(ret = zlfs_iget(fs->sbi, f->ino, &zi)))
		ret = zlfs_file_truncate(fs->sbi, zi, size);
	if (check(fs, ret, "truncate"))
		return ret;
	if (size < f->size)
		memset(f->data + size, 0, f->size - size);
	f->size = size;
	return 0;
}

static int op_fallocate(struct fs *fs, int i, int mode, uint64_t off, uint64_t len)
{
	struct mfile *f = &fs->m->f[i];
	struct zinode *zi;
	int ret;

	f->changed = true;
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		for (uint64_t b = off / ZF_BLKSIZE; b < MAXBLK && b * ZF_BLKSIZE < off + len; b++)
			f->zeroed[b] = 1;
	if (!(ret = room(fs, len / ZF_BLKSIZE + 4)) &&
	    !(ret = zlfs_iget(fs->sbi, f->ino, &zi)))
		ret = zlfs_file_fallocate(fs->sbi, zi, mode, off, len);
	if (check(fs, ret, "fallocate"))
		return ret;
	uint64_t end = off + len;
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
		uint64_t e = end < f->size ? end : f->size;
		if (off < e)
			memset(f->data + off, 0, e - off);
	}
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > f->size)
		f->size = end;
	return 0;
}

static void mark_moved(struct mfile *f)
{
	f->moved = true;
	f->renamed = true;
}

static int op_unlink(struct fs *fs, int i)
{
	struct mfile *f = &fs->m->f[i];
	int ret;

	mark_moved(f);
	if (!(ret = room(fs, 4)))
		ret = zlfs_unlink(fs->sbi, fs->m->dir_ino[f->dir], f->name, false);
	if (check(fs, ret, "unlink"))
		return ret;
	f->exists = false;
	return 0;
}

/* rename i over j's name (j goes away) or to a fresh name */
static int op_rename(struct fs *fs, int i, int j, int dir)
{
	struct mfile *f = &fs->m->f[i];
	char name[32];
	int ndir, ret;

	mark_moved(f);
	if (j >= 0) {
		mark_moved(&fs->m->f[j]);
		ndir = fs->m->f[j].dir;
		memcpy(name, fs->m->f[j].name, sizeof(name));
	} else {
		ndir = dir;
		snprintf(name, sizeof(name), "r%d.%u", i, f->ver++);
	}
	if (!(ret = room(fs, 8)))
		ret = zlfs_rename(fs->sbi, fs->m->dir_ino[f->dir], f->name, fs->m->dir_ino[ndir], name, 0);
	if (check(fs, ret, "rename"))
		return ret;
	if (j >= 0)
		fs->m->f[j].exists = false;
	f->dir = ndir;
	memcpy(f->name, name, sizeof(name));
	return 0;
}

/* a second name, then the first goes: a rename through link + unlink */
static int op_link_unlink(struct fs *fs, int i)
{
	struct mfile *f = &fs->m->f[i];
	struct zinode *zi;
	char name[32];
	int ret;

	mark_moved(f);
	snprintf(name, sizeof(name), "l%d.%u", i, f->ver++);
	int ndir = (f->dir + 1) % NDIRS;
	if (!(ret = room(fs, 8)))
		ret = zlfs_link(fs->sbi, f->ino, fs->m->dir_ino[ndir], name, &zi);
	if (check(fs, ret, "link") || (ret = op_unlink(fs, i)))
		return ret;
	f->exists = true;
	f->dir = ndir;
	memcpy(f->name, name, sizeof(name));
	return 0;
}

/* A short file: its data inline in the inode (F2FS's INLINE_DATA). */
static int op_write_small(struct fs *fs, int i, uint32_t len)
{
	struct mfile *f = &fs->m->f[i];
	struct zinode *zi;
	uint8_t *buf = malloc(ZF_BLKSIZE);
	int ret;

	if (!buf)
		return -ENOMEM;
	gen_block(buf, (uint32_t)i, 0, ++f->ver);
	f->changed = true;
	if (!(ret = room(fs, 4)) && !(ret = zlfs_iget(fs->sbi, f->ino, &zi)))
		ret = zlfs_file_write(fs->sbi, zi, (char *)buf, len, 0);
	if (!ret) {
		memcpy(f->data, buf, len);
		if (len > f->size)
			f->size = len;
	}
	free(buf);
	return check(fs, ret, "small write");
}

static int op_setxattr(struct fs *fs, int i)
{
	struct mfile *f = &fs->m->f[i];
	struct zinode *zi;
	char v[64];
	int ret;

	snprintf(v, sizeof(v), "value %d.%u", i, ++f->ver);
	f->changed = true;
	if (!(ret = room(fs, 4)) && !(ret = zlfs_iget(fs->sbi, f->ino, &zi)))
		ret = zlfs_xattr_set(fs->sbi, zi, "user.zlcs", v, strlen(v), 0);
	if (check(fs, ret, "setxattr"))
		return ret;
	memcpy(f->xattr, v, sizeof(v));
	return 0;
}

/* open, unlink (an orphan while open), write to it */
static int op_orphan(struct fs *fs, int i)
{
	struct mfile *f = &fs->m->f[i];
	struct zinode *zi;
	int ret;

	if ((ret = zlfs_iget(fs->sbi, f->ino, &zi)))
		return check(fs, ret, "iget");
	zi->nopen++;
	f->open = true;
	if ((ret = op_unlink(fs, i)))
		return ret;
	return op_write(fs, i, 0, 4);
}

/* ---- workloads -------------------------------------------------------------------- */

static int pick(struct model *m, bool exists)
{
	for (int tries = 0; tries < 4 * NFILES; tries++) {
		int i = (int)(rnd(m) % NFILES);
		if (m->f[i].exists == exists && !m->f[i].open)
			return i;
	}
	return -1;
}

/* One step of the mixed workload; 0 to go on. */
static int step_mixed(struct fs *fs, int k, bool small)
{
	struct model *m = fs->m;
	uint64_t r = rnd(m) % 100;
	int i = pick(m, true), j;

	if (i < 0 || r < 12) {
		if ((j = pick(m, false)) < 0)
			return 0;
		int ret = op_create(fs, j, (int)(rnd(m) % NDIRS));
		if (ret)
			return ret;
		if (rnd(m) % 3 == 0)
			ret = op_write_small(fs, j, 16 + (uint32_t)(rnd(m) % 3000));
		else
			ret = op_write(fs, j, 0, small ? 1 : 1 + (uint32_t)(rnd(m) % 24));
		if (ret || (rnd(m) % 4 == 0 && (ret = op_setxattr(fs, j))))
			return ret;
		return (rnd(m) % 3) ? op_fsync(fs, j, false) : 0;
	}
	struct mfile *f = &m->f[i];
	uint32_t blocks = (uint32_t)((f->size + ZF_BLKSIZE - 1) / ZF_BLKSIZE);
	if (r < 40) {          /* overwrite in the middle, or append */
		uint32_t first = blocks && (rnd(m) & 1) ? (uint32_t)(rnd(m) % blocks) : blocks;
		if (first >= MAXBLK - 1)
			first = (uint32_t)(rnd(m) % (MAXBLK / 2));
		int ret = op_write(fs, i, first, 1 + (uint32_t)(rnd(m) % (small ? 2 : 16)));
		return ret ? ret : (rnd(m) % 2 ? op_fsync(fs, i, rnd(m) & 1) : 0);
	}
	if (r < 46) {          /* far into the file: direct and indirect nodes */
		static const uint32_t at[3] = { 923, 1941, 2959 };
		uint32_t first = at[rnd(m) % 3] + (uint32_t)(rnd(m) % 60);
		int ret = op_write(fs, i, first, 1 + (uint32_t)(rnd(m) % 4));
		return ret ? ret : op_fsync(fs, i, rnd(m) & 1);
	}
	if (r < 52)
		return op_fsync(fs, i, rnd(m) & 1);
	if (r < 55) {
		int ret = op_setxattr(fs, i);
		return ret ? ret : op_fsync(fs, i, false);
	}
	if (r < 62) {          /* truncate down or up */
		uint64_t size = rnd(m) % ((uint64_t)MAXBLK / 2 * ZF_BLKSIZE);
		int ret = op_truncate(fs, i, size);
		return ret ? ret : op_fsync(fs, i, false);
	}
	if (r < 68) {          /* fallocate, or punch */
		/* whole blocks: a block punched at its start could not be told from garbage */
		uint64_t off = rnd(m) % (MAXBLK / 2) * ZF_BLKSIZE;
		uint64_t len = (1 + rnd(m) % 32) * ZF_BLKSIZE;
		int mode = (rnd(m) & 1) ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
					: ((rnd(m) & 1) ? FALLOC_FL_KEEP_SIZE : 0);
		if (compressed)
			mode &= ~FALLOC_FL_PUNCH_HOLE;
		int ret = op_fallocate(fs, i, mode, off, len);
		return ret ? ret : op_fsync(fs, i, false);
	}
	if (r < 76) {          /* rename over another file, or to a new name; then fsync */
		j = pick(m, true);
		int ret = op_rename(fs, i, j != i ? j : -1, (int)(rnd(m) % NDIRS));
		return ret ? ret : op_fsync(fs, i, false);
	}
	if (r < 80)
		return op_link_unlink(fs, i);
	if (r < 85)
		return op_unlink(fs, i);
	if (r < 87 && k > 4)
		return op_orphan(fs, i);
	if (r < 94)
		return op_sync(fs);   /* sync or directory fsync: both checkpoint */
	/* a large append */
	uint32_t first = blocks < MAXBLK - 200 ? blocks : 0;
	int ret = op_write(fs, i, first, 64 + (uint32_t)(rnd(m) % 128));
	return ret ? ret : op_fsync(fs, i, false);
}

struct workload {
	const char *name;
	int steps;
	bool small;              /* small files only */
	bool gc;                 /* fill first; GC on */
	bool overwrite;          /* overwrites in the middle of big synced files, fsync each */
	bool compressed;         /* every new file compressed (compress_extension=*) */
};

static const struct workload workloads[] = {
	{ "mixed", 60, false, false, false, false },
	{ "small", 120, true, false, false, false },
	{ "gc", 50, false, true, false, false },
	{ "overwrite", 60, false, false, true, false },
	{ "compressed", 60, false, false, false, true },
};

/* "overwrite": files 0..NBIG-1 of BIGBLK blocks (version 1), made and synced by setup */
#define NBIG 4
#define BIGBLK 1100

static void big_content(uint8_t *buf, int i, uint32_t first, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		gen_block(buf + (size_t)k * ZF_BLKSIZE, (uint32_t)i, first + k, 1);
}

/* The model of what setup made for "overwrite". */
static int model_big(struct model *m, struct zlfs_sb *sbi)
{
	struct zinode *root;
	uint8_t ft;
	int ret;

	if ((ret = zlfs_iget(sbi, ZF_ROOT_INO, &root)))
		return ret;
	for (int i = 0; i < NBIG; i++) {
		struct mfile *f = &m->f[i];
		snprintf(f->name, sizeof(f->name), "big%d", i);
		if ((ret = zlfs_dir_lookup(sbi, root, f->name, strlen(f->name), &f->ino, &ft)))
			return ret;
		f->exists = true;
		f->dir = 0;
		f->ver = 1;
		big_content(f->data, i, 0, BIGBLK);
		f->size = (uint64_t)BIGBLK * ZF_BLKSIZE;
		promise(f, true);
	}
	return 0;
}

/* One step of "overwrite": a few blocks anywhere in a big file, then fsync. */
static int step_overwrite(struct fs *fs)
{
	struct model *m = fs->m;
	int i = (int)(rnd(m) % NBIG);
	int ret = op_write(fs, i, (uint32_t)(rnd(m) % (BIGBLK - 8)), 1 + (uint32_t)(rnd(m) % 8));
	return ret ? ret : op_fsync(fs, i, rnd(m) & 1);
}

/* The volume filled for "gc": a file of about 70% of the user's share, synced. */
static int gc_fill(struct fs *fs)
{
	struct zinode *zi;
	uint8_t *buf = calloc(256, ZF_BLKSIZE);
	int ret;

	if (!buf)
		return -ENOMEM;
	uint64_t n = fs->sbi->user_block_count * 7 / 10;
	ret = zlfs_create(fs->sbi, &cred, ZF_ROOT_INO, "fill", S_IFREG | 0644, 0, NULL, &zi);
	for (uint64_t b = 0; !ret && b < n; b += 256) {
		uint32_t k = (uint32_t)(n - b < 256 ? n - b : 256);
		memset(buf, (int)(b / 256 + 1), (size_t)k * ZF_BLKSIZE);
		if (!(ret = room(fs, k + 8)))
			ret = zlfs_file_write(fs->sbi, zi, (char *)buf, (size_t)k * ZF_BLKSIZE, b * ZF_BLKSIZE);
	}
	/* punch every other 1 MiB so the sections are half valid: GC has work */
	for (uint64_t b = 0; !ret && b + 512 < n; b += 512)
		ret = zlfs_file_fallocate(fs->sbi, zi, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					  b * ZF_BLKSIZE, 256 * ZF_BLKSIZE);
	free(buf);
	return ret ? ret : zlfs_checkpoint(fs->sbi, false);
}

/* Setup: directories, synced (the state every crash starts from). */
static int setup(struct fs *fs, const struct workload *w)
{
	struct zinode *zi;
	int ret;

	fs->m->dir_ino[0] = ZF_ROOT_INO;
	for (int d = 1; d < NDIRS; d++) {
		if ((ret = zlfs_create(fs->sbi, &cred, ZF_ROOT_INO, dir_names[d], S_IFDIR | 0755, 0,
				       NULL, &zi)))
			return ret;
		fs->m->dir_ino[d] = zi->ino;
	}
	if (w->gc && (ret = gc_fill(fs)))
		return ret;
	for (int i = 0; w->overwrite && i < NBIG; i++) {
		uint8_t *buf = malloc((size_t)BIGBLK * ZF_BLKSIZE);
		char name[16];
		if (!buf)
			return -ENOMEM;
		snprintf(name, sizeof(name), "big%d", i);
		big_content(buf, i, 0, BIGBLK);
		if (!(ret = room(fs, BIGBLK + 8)) &&
		    !(ret = zlfs_create(fs->sbi, &cred, ZF_ROOT_INO, name, S_IFREG | 0644, 0, NULL, &zi)))
			ret = zlfs_file_write(fs->sbi, zi, (char *)buf, (size_t)BIGBLK * ZF_BLKSIZE, 0);
		free(buf);
		if (ret)
			return ret;
	}
	return zlfs_checkpoint(fs->sbi, false);
}

/* ---- one run --------------------------------------------------------------------- */

static int mount_spec(const char *spec, bool gc, struct zlfs_sb **sbi, char *err, size_t len)
{
	struct zlfs_opts o;

	memset(&o, 0, sizeof(o));
	zlfs_disp_opts_default(&o.disp);
	zlfs_gc_opts_default(&o.gc);
	o.fsync_cp = getenv("CRASHSTATES_FSYNC_CP") != NULL;   /* compare with checkpoints */
	if (compressed) {
		o.compr.given = o.compr.alg_given = true;
		o.compr.alg = (uint8_t)compr_alg;
		o.compr.log = (uint8_t)compr_log;
		o.compr.chksum = compr_alg & 1;
		o.compr.next = 1;
		strcpy(o.compr.ext[0], "*");
	}
	if (gc) {
		o.gc.mode = ZLFS_GC_URGENT;
		o.gc.idle_ms = 0;
	} else {
		o.gc.mode = ZLFS_GC_OFF;
	}
	/*
	 * the SIT held to one block besides the logs': the cuts land while
	 * SIT blocks are dropped and read back, by GC too, and recovery runs
	 * under the same bound
	 */
	if (sit_small)
		o.sit_cap = 1;
	return zlfs_mount(spec, &o, sbi, err, len);
}

static int lookup_dirs(struct zlfs_sb *sbi, uint32_t *dino)
{
	struct zinode *root;
	uint8_t ft;
	int ret;

	dino[0] = ZF_ROOT_INO;
	if ((ret = zlfs_iget(sbi, ZF_ROOT_INO, &root)))
		return ret;
	for (int d = 1; d < NDIRS; d++)
		if ((ret = zlfs_dir_lookup(sbi, root, dir_names[d], strlen(dir_names[d]), &dino[d], &ft)))
			return ret;
	return 0;
}

/* Make the workload's starting volume: the directories (and the fill), synced. */
static int prepare(const char *img, const struct workload *w, char *why, size_t whylen)
{
	struct model m;
	struct fs fs = { .m = &m };
	char err[256];
	int ret;

	model_init(&m, 0);
	if ((ret = mount_spec(img, false, &fs.sbi, err, sizeof(err)))) {
		snprintf(why, whylen, "setup mount: %s", err);
		model_free(&m);
		return -1;
	}
	pthread_mutex_lock(&fs.sbi->lock);
	ret = setup(&fs, w);
	pthread_mutex_unlock(&fs.sbi->lock);
	model_free(&m);
	if (ret || (ret = zlfs_unmount(fs.sbi))) {
		snprintf(why, whylen, "setup: %s", strerror(-ret));
		return -1;
	}
	return 0;
}

/*
 * Run workload w (seed) on img with the power cut armed at device write
 * `cut` (0: only at the end); fills the model.  Dry run: *writes the
 * device writes, flush_pts the write count after each operation that
 * flushed.  Write counts are from the device's opening, the mount's own
 * writes included, as powercut_after counts.
 */
static int run(const char *img, const struct workload *w, uint64_t seed, uint64_t cut,
	       uint64_t pcseed, struct model *m, uint64_t *writes, uint64_t *flush_pts,
	       uint32_t *nflush, uint64_t *gc_moved, uint64_t *sit_reads, char *why,
	       size_t whylen)
{
	char spec[512], err[256];
	struct fs fs = { .m = m };
	int ret;

	model_init(m, seed);
	if (cut)
		snprintf(spec, sizeof(spec), "%s?powercut_after=%llu,powercut_seed=%llu", img,
			 (unsigned long long)cut, (unsigned long long)pcseed);
	else
		snprintf(spec, sizeof(spec), "%s?powercut", img);
	if ((ret = mount_spec(spec, w->gc, &fs.sbi, err, sizeof(err)))) {
		if (cut && ret == -EIO) {
			*writes = 0;
			return 0;        /* the power went during the mount: a state too */
		}
		snprintf(why, whylen, "mount: %s", err);
		return -1;
	}
	struct zlfs_zdev_stats st;
	pthread_mutex_lock(&fs.sbi->lock);
	if ((ret = lookup_dirs(fs.sbi, m->dir_ino)) || (w->overwrite && (ret = model_big(m, fs.sbi)))) {
		/*
		 * the power went right after the mount (background GC writes at
		 * once under the gc workload): a state too, with nothing promised
		 * since the setup's sync
		 */
		if (cut && ret == -EIO && zlfs_zdev_is_dead(fs.sbi->dev))
			fs.dead = true;
		else
			snprintf(fs.why, sizeof(fs.why), "setup's files: %s", strerror(-ret));
	}
	zlfs_zdev_stats(fs.sbi->dev, &st);
	uint64_t last_flushes = st.flushes;
	for (int k = 0; k < w->steps && !fs.dead && !ret; k++) {
		if (w->overwrite)
			step_overwrite(&fs);
		else
			step_mixed(&fs, k, w->small);
		if (!flush_pts)
			continue;
		zlfs_zdev_stats(fs.sbi->dev, &st);
		if (st.flushes != last_flushes && *nflush < 4096)
			flush_pts[(*nflush)++] = st.writes;
		last_flushes = st.flushes;
	}
	zlfs_zdev_stats(fs.sbi->dev, &st);
	*writes = st.writes;
	if (gc_moved)
		*gc_moved = fs.sbi->st.gc_data_moved + fs.sbi->st.gc_node_moved;
	if (sit_reads)
		*sit_reads = fs.sbi->st.sit_reads;
	/* the power goes now if it has not yet (what is unflushed is partly lost) */
	if (!zlfs_zdev_is_dead(fs.sbi->dev))
		zlfs_zdev_powercut(fs.sbi->dev);
	fs.sbi->fatal = -EIO;     /* no final checkpoint: the machine is off */
	pthread_mutex_unlock(&fs.sbi->lock);
	zlfs_unmount(fs.sbi);
	if (fs.why[0]) {
		snprintf(why, whylen, "%s", fs.why);
		return -1;
	}
	return 0;
}

/* ---- checking -------------------------------------------------------------------- */

/*
 * fsck.f2fs --dry-run: 0 clean, -1 not.  1: fsck.f2fs before 1.16 stopped
 * at "record_fsync_data failed" with nothing else wrong: its bound for
 * block addresses leaves out the last segments of the main area (fixed
 * upstream in 2023, "f2fs-tools: fix # of total segments"), so a chain
 * pointing there cannot be judged by it (raw crash images only).
 */
static int fsck(const char *img, char *why, size_t whylen)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "fsck.f2fs --dry-run '%s' 2>&1", img);
	FILE *p = popen(cmd, "r");
	char line[512], bad[512] = "";
	if (!p) {
		snprintf(why, whylen, "cannot run fsck.f2fs");
		return -1;
	}
	bool chain_bound = false;
	while (fgets(line, sizeof(line), p)) {
		if (!bad[0] && (strstr(line, "[Fail]") || strstr(line, "[FAIL]") ||
				strstr(line, "ASSERT")))
			snprintf(bad, sizeof(bad), "%s", line);
		chain_bound |= strstr(line, "record_fsync_data failed") != NULL;
	}
	int st = pclose(p);
	if (st != 0 && !bad[0] && chain_bound)
		return 1;
	if (st != 0 || bad[0]) {
		snprintf(why, whylen, "fsck.f2fs: exit %d %s", WIFEXITED(st) ? WEXITSTATUS(st) : -1, bad);
		return -1;
	}
	return 0;
}

/* fsck.zlfs, beside mkfs.zlfs in the build (set by main). */
static char fsck_zlfs_path[600];

/*
 * fsck.zlfs -f -n: 0 clean, -1 not.  A crash image is a checkpoint plus
 * what was written after it, which no metadata names yet: fsck.zlfs must
 * find nothing wrong in it (the chain fsync left is for the next mount).
 */
static int fsck_zlfs(const char *img, char *why, size_t whylen)
{
	char cmd[1400], line[512], first[512] = "";
	snprintf(cmd, sizeof(cmd), "'%s' -f -n '%s' 2>&1", fsck_zlfs_path, img);
	FILE *p = popen(cmd, "r");
	if (!p) {
		snprintf(why, whylen, "cannot run fsck.zlfs");
		return -1;
	}
	while (fgets(line, sizeof(line), p))
		if (!first[0] && !strstr(line, " inodes (") && !strstr(line, "rolls them forward"))
			snprintf(first, sizeof(first), "%s", line);
	int st = pclose(p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(why, whylen, "fsck.zlfs: exit %d %s", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
			 first);
		return -1;
	}
	return 0;
}

/* Read a whole file; *buf is malloc()ed. */
static int read_file(struct zlfs_sb *sbi, uint32_t ino, uint8_t **buf, uint64_t *size)
{
	struct zinode *zi;
	size_t got;
	int ret = zlfs_iget(sbi, ino, &zi);

	if (ret)
		return ret;
	*size = zf_le64_to_cpu(zi_raw(zi)->i_size);
	if (*size > (uint64_t)4 * MAXBLK * ZF_BLKSIZE)
		return -EFBIG;
	*buf = calloc(1, *size + ZF_BLKSIZE);
	if (!*buf)
		return -ENOMEM;
	if (*size && (ret = zlfs_file_read(sbi, zi, (char *)*buf, *size, 0, &got)))
		return ret;
	return *size && got != *size ? -EIO : 0;
}

static char implausible[160];   /* what all_plausible found last */

/* Every block plausible; *id the file its first non-zero block claims. */
static bool all_plausible(const uint8_t *d, uint64_t size, uint32_t *id)
{
	*id = ~0u;
	for (uint64_t b = 0; b * ZF_BLKSIZE < size; b++) {
		uint32_t bid, h[4];
		uint64_t len = size - b * ZF_BLKSIZE;
		if (!plausible(d + b * ZF_BLKSIZE, len < ZF_BLKSIZE ? len : ZF_BLKSIZE, (uint32_t)b, &bid)) {
			memcpy(h, d + b * ZF_BLKSIZE, sizeof(h));
			snprintf(implausible, sizeof(implausible), "block %llu: header %08x file %u "
				 "block %u version %u", (unsigned long long)b, h[0], h[1], h[2], h[3]);
			return false;
		}
		if (*id == ~0u)
			*id = bid;
		else if (bid != ~0u && bid != *id)
			return false;    /* blocks of two files in one */
	}
	return true;
}

struct found {
	uint32_t ino;
	uint8_t *data;
	uint64_t size;
	uint32_t id;
};

static int emit_collect(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t ftype,
			uint64_t next)
{
	(void)next;
	if (ftype != ZF_FT_REG_FILE || len >= 32)
		return 0;
	char (*names)[40] = ctx;
	for (int k = 0; k < 256; k++) {
		if (!names[k][0]) {
			memcpy(names[k], name, len);
			names[k][len] = 0;
			memcpy(&names[k][36], &ino, 4);
			return 0;
		}
	}
	return 0;
}

static int check_state(const char *img, struct model *m, char *why, size_t whylen)
{
	struct zlfs_sb *sbi;
	char err[256];
	int ret, bad = 0;

	if ((ret = mount_spec(img, false, &sbi, err, sizeof(err)))) {
		snprintf(why, whylen, "recovery mount: %s", err);
		return -1;
	}
	pthread_mutex_lock(&sbi->lock);
	/* every file present: readable, plausible */
	uint32_t dino[NDIRS];
	if ((ret = lookup_dirs(sbi, dino))) {
		snprintf(why, whylen, "directories: %s", strerror(-ret));
		bad = 1;
	}
	for (int d = 0; d < NDIRS && !bad; d++) {
		static char names[256][40];
		struct zinode *dir;
		memset(names, 0, sizeof(names));
		if ((ret = zlfs_iget(sbi, dino[d], &dir)) ||
		    (ret = zlfs_dir_iterate(sbi, dir, 0, emit_collect, names))) {
			snprintf(why, whylen, "readdir %s: %s", dir_names[d], strerror(-ret));
			bad = 1;
			break;
		}
		for (int k = 0; k < 256 && names[k][0] && !bad; k++) {
			uint32_t ino, id;
			uint8_t *data = NULL;
			uint64_t size;
			memcpy(&ino, &names[k][36], 4);
			if (!strcmp(names[k], "fill")) {
				continue;
			}
			if ((ret = read_file(sbi, ino, &data, &size))) {
				snprintf(why, whylen, "read %s/%.32s: %s", dir_names[d], names[k], strerror(-ret));
				bad = 1;
			} else if (!all_plausible(data, size, &id)) {
				snprintf(why, whylen, "%s/%.32s: a block that no write put there (size %llu, %s)",
					 dir_names[d], names[k], (unsigned long long)size, implausible);
				bad = 1;
			}
			free(data);
		}
	}
	/* every promise */
	for (int i = 0; i < NFILES && !bad; i++) {
		struct mfile *f = &m->f[i];
		if (!f->promised)
			continue;
		struct { int dir; const char *name; } cand[2] = { { f->pdir, f->pname }, { f->dir, f->name } };
		int ncand = f->moved ? (f->exists ? 2 : 1) : 1;
		bool seen = false;
		for (int c = 0; c < ncand && !seen && !bad; c++) {
			struct zinode *dir;
			uint32_t ino, id;
			uint8_t ft, *data = NULL;
			uint64_t size;
			if ((ret = zlfs_iget(sbi, dino[cand[c].dir], &dir)))
				break;
			ret = zlfs_dir_lookup(sbi, dir, cand[c].name, strlen(cand[c].name), &ino, &ft);
			if (ret)
				continue;
			if ((ret = read_file(sbi, ino, &data, &size))) {
				free(data);
				continue;
			}
			all_plausible(data, size, &id);
			if (id != ~0u && id != (uint32_t)i) {
				free(data);
				continue;     /* another file took the name */
			}
			seen = true;
			char xv[64] = "";
			size_t xl = 0;
			struct zinode *xzi;
			if (!f->changed && !f->moved && !zlfs_iget(sbi, ino, &xzi)) {
				int xr = zlfs_xattr_get(sbi, xzi, "user.zlcs", xv, sizeof(xv) - 1, &xl);
				xv[xr ? 0 : xl] = 0;
				if (strcmp(xv, f->pxattr)) {
					snprintf(why, whylen, "%s/%s (file %d): xattr '%s', fsynced '%s'",
						 dir_names[cand[c].dir], cand[c].name, i, xv, f->pxattr);
					bad = 1;
				}
			}
			/* changed since: no block the promise had may turn to zeros unless
			 * truncated or punched since (a lost write must leave the old data) */
			for (uint64_t b = 0; !bad && f->changed && b * ZF_BLKSIZE < size &&
			     b * ZF_BLKSIZE < f->psize && b < MAXBLK; b++) {
				static const uint8_t zero[ZF_BLKSIZE];
				uint64_t len = size - b * ZF_BLKSIZE;
				if (len > ZF_BLKSIZE)
					len = ZF_BLKSIZE;
				if (!f->zeroed[b] && !memcmp(data + b * ZF_BLKSIZE, zero, len) &&
				    memcmp(f->pdata + b * ZF_BLKSIZE, zero, len)) {
					snprintf(why, whylen, "%s/%s (file %d): block %llu was fsynced, reads "
						 "zeros now", dir_names[cand[c].dir], cand[c].name, i,
						 (unsigned long long)b);
					bad = 1;
				}
			}
			if (!bad && !f->changed && !f->moved &&
			    (size != f->psize || memcmp(data, f->pdata, size))) {
				uint64_t b = 0;
				while (b < size && b < f->psize && data[b] == f->pdata[b])
					b++;
				snprintf(why, whylen, "%s/%s (file %d): fsynced %llu bytes, found %llu, "
					 "first difference at %llu", dir_names[cand[c].dir], cand[c].name, i,
					 (unsigned long long)f->psize, (unsigned long long)size,
					 (unsigned long long)b);
				bad = 1;
			}
			free(data);
		}
		if (!seen && !bad && !f->moved) {
			snprintf(why, whylen, "%s/%s (file %d, %llu bytes promised): gone",
				 dir_names[f->pdir], f->pname, i, (unsigned long long)f->psize);
			bad = 1;
		}
	}
	pthread_mutex_unlock(&sbi->lock);
	if ((ret = zlfs_unmount(sbi)) && !bad) {
		snprintf(why, whylen, "unmount after recovery: %s", strerror(-ret));
		bad = 1;
	}
	return bad ? -1 : 0;
}

/* ---- driver ----------------------------------------------------------------------- */

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct stat st;
	static char buf[1 << 20];
	int ret = 0;

	if (in < 0 || out < 0 || fstat(in, &st)) {
		ret = -errno;
		goto out;
	}
	if (ftruncate(out, st.st_size)) {
		ret = -errno;
		goto out;
	}
	/* only the data: the images are mostly holes */
	for (off_t pos = 0; pos < st.st_size;) {
		off_t d = lseek(in, pos, SEEK_DATA);
		if (d < 0)
			break;
		off_t h = lseek(in, d, SEEK_HOLE);
		for (off_t p = d; p < h;) {
			ssize_t n = pread(in, buf, (size_t)(h - p < (off_t)sizeof(buf) ? h - p : (off_t)sizeof(buf)), p);
			if (n <= 0 || pwrite(out, buf, (size_t)n, p) != n) {
				ret = -EIO;
				goto out;
			}
			p += n;
		}
		pos = h;
	}
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ret;
}

static int copy_image(const char *from, const char *to)
{
	char a[600], b[600];
	int ret = copy_file(from, to);
	snprintf(a, sizeof(a), "%s.zst", from);
	snprintf(b, sizeof(b), "%s.zst", to);
	return ret ? ret : copy_file(a, b);
}

int main(int argc, char **argv)
{
	bool conventional = false;
	const char *mkfs, *dir, *only = NULL;
	unsigned long states = 700;
	unsigned long long seed = 1;
	char base[512], img[512], cmd[1200], why[512];

	if (argc < 3) {
		fprintf(stderr, "usage: %s MKFS WORKDIR [--states N] [--seed S] [--workload NAME] "
			"[--conventional] [-v]\n", argv[0]);
		return 2;
	}
	mkfs = argv[1];
	/* build/X/mkfs/mkfs.zlfs -> build/X/fsck/fsck.zlfs */
	snprintf(fsck_zlfs_path, sizeof(fsck_zlfs_path), "%s", mkfs);
	char *slash = strrchr(fsck_zlfs_path, '/');
	if (slash)
		snprintf(slash + 1, sizeof(fsck_zlfs_path) - (size_t)(slash + 1 - fsck_zlfs_path),
			 "../fsck/fsck.zlfs");
	else
		snprintf(fsck_zlfs_path, sizeof(fsck_zlfs_path), "../fsck/fsck.zlfs");
	dir = argv[2];
	for (int a = 3; a < argc; a++) {
		if (!strcmp(argv[a], "--states") && a + 1 < argc)
			states = strtoul(argv[++a], NULL, 0);
		else if (!strcmp(argv[a], "--seed") && a + 1 < argc)
			seed = strtoull(argv[++a], NULL, 0);
		else if (!strcmp(argv[a], "--workload") && a + 1 < argc)
			only = argv[++a];
		else if (!strcmp(argv[a], "-v"))
			verbose = 1;
		else if (!strcmp(argv[a], "--conventional"))
			conventional = true;
		else if (!strcmp(argv[a], "--first") && a + 1 < argc)
			first_state = strtoul(argv[++a], NULL, 0);
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "crashstates: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	snprintf(base, sizeof(base), "%s/base.img", dir);
	snprintf(img, sizeof(img), "%s/state.img", dir);
	/* 512 MiB, 16 MiB zones, 4 conventional: 28 sections (or all 32 conventional) */
	struct zlfs_image_params p = { 512ull << 20, 16ull << 20, 0, conventional ? 32 : 4, 0, 0,
				       4096 };
	if (zlfs_image_create(base, &p, true)) {
		fprintf(stderr, "crashstates: cannot create %s: %s\n", base, zlfs_zdev_errmsg());
		return 1;
	}
	/* the compression feature: the "compressed" workload's files (the rest have none) */
	snprintf(cmd, sizeof(cmd), "'%s' -f -O compression '%s' >/dev/null", mkfs, base);
	if (system(cmd)) {
		fprintf(stderr, "crashstates: mkfs failed\n");
		return 1;
	}
	unsigned long total = 0, failed = 0, fscked = 0, chain_bound = 0;
	struct model m;
	char wbase[512];
	snprintf(wbase, sizeof(wbase), "%s/wbase.img", dir);
	for (size_t w = 0; w < sizeof(workloads) / sizeof(workloads[0]); w++) {
		const struct workload *wl = &workloads[w];
		if (only && strcmp(only, wl->name))
			continue;
		compressed = wl->compressed;
		sit_small = wl->gc;
		compr_alg = 1;
		compr_log = 2;
		if (copy_image(base, wbase) || prepare(wbase, wl, why, sizeof(why))) {
			printf("crashstates: FAIL %s: cannot prepare the volume: %s\n", wl->name, why);
			return 1;
		}
		unsigned long per = only ? states : states / (sizeof(workloads) / sizeof(workloads[0]));
		uint64_t moved_total = 0, sreads_total = 0;
		for (unsigned long s = first_state; s < per; ) {
			/* one seed: a dry run, then its crash states */
			uint64_t wseed = seed * 1000003 + w * 7919 + s, writes = 0, moved = 0, sreads = 0;
			compr_alg = (unsigned int)(wseed % 4);          /* lzo, lz4, zstd, lzo-rle */
			compr_log = 2 + (unsigned int)(wseed / 4 % 3);  /* 4, 8 or 16 blocks */
			static uint64_t flush_pts[4096];
			uint32_t nflush = 0;
			if (copy_image(wbase, img)) {
				fprintf(stderr, "crashstates: copy failed\n");
				return 1;
			}
			if (run(img, wl, wseed, 0, 0, &m, &writes, flush_pts, &nflush, &moved, &sreads, why,
				sizeof(why))) {
				printf("crashstates: FAIL %s seed %llu dry run: %s\n", wl->name,
				       (unsigned long long)wseed, why);
				failed++;
				model_free(&m);
				s += 10;
				continue;
			}
			moved_total += moved;
			sreads_total += sreads;
			model_free(&m);
			/*
			 * 40 states per seed: right after up to 14 flushes; at the last
			 * write before up to 12 flushes (an fsync's last node: the ones
			 * before it may survive without the data, in another zone); and
			 * random cuts.
			 */
			uint32_t stride = nflush > 14 ? nflush / 14 : 1;
			for (int k = 0; k < 40 && s < per; k++, s++) {
				uint64_t cut, w2;
				uint32_t fp = (uint32_t)(k < 14 ? k : k - 14) * stride;
				if (k < 14 && fp < nflush)
					cut = flush_pts[fp] + 1;
				else if (k >= 14 && k < 26 && fp < nflush && flush_pts[fp] > 1)
					cut = flush_pts[fp];
				else
					cut = 1 + mix(wseed * 131 + (uint64_t)k) % (writes ? writes : 1);
				uint64_t pcs = mix(wseed + (uint64_t)k * 17);
				why[0] = 0;
				int r = copy_image(wbase, img);
				if (!r)
					r = run(img, wl, wseed, cut, pcs, &m, &w2, NULL, NULL, NULL, NULL, why,
						sizeof(why));
				if (!r && total % 4 == 0) {
					r = fsck(img, why, sizeof(why));
					if (r == 1) {
						chain_bound++;    /* judged after recovery instead */
						r = 0;
					}
					if (!r)
						r = fsck_zlfs(img, why, sizeof(why));
					if (r)
						strncat(why, " (crash image, before recovery)", sizeof(why) - strlen(why) - 1);
					fscked++;
				}
				if (!r)
					r = check_state(img, &m, why, sizeof(why));
				if (!r) {
					r = fsck(img, why, sizeof(why)) ? -1 : 0;
					fscked++;
				}
				total++;
				if (r) {
					failed++;
					printf("crashstates: FAIL %s seed %llu cut %llu pcseed %llu: %s\n", wl->name,
					       (unsigned long long)wseed, (unsigned long long)cut,
					       (unsigned long long)pcs, why);
					fflush(stdout);
					if (failed > 20) {
						model_free(&m);
						goto done;
					}
				} else if (verbose) {
					printf("crashstates: ok %s seed %llu cut %llu/%llu\n", wl->name,
					       (unsigned long long)wseed, (unsigned long long)cut,
					       (unsigned long long)writes);
				}
				model_free(&m);
			}
		}
		printf("crashstates: %s: GC moved %llu blocks in the dry runs, %llu SIT blocks read "
		       "back\n", wl->name, (unsigned long long)moved_total,
		       (unsigned long long)sreads_total);
	}
done:
	printf("crashstates: %lu states, %lu failed, %lu fsck.f2fs runs (%lu crash images past "
	       "fsck.f2fs's pre-1.16 chain bound)\n", total, failed, fscked, chain_bound);
	return failed ? 1 : 0;
}
