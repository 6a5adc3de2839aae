/*
 * fsops.c - randomized differential test of a mounted filesystem against a
 * reference directory (tmpfs, or any local Linux filesystem).
 *
 *   fsops [OPTIONS] FSDIR REFDIR SEED NOPS   NOPS random operations on both
 *   fsops --compare FSDIR REFDIR             only compare the two trees
 *   fsops --dio-race FSDIR [ROUNDS]          O_DIRECT reads racing rewrites
 *
 * Every operation runs on both sides with the same arguments and must give
 * the same result there, errno included; reads must return the same bytes.
 * The operations: create (O_EXCL, O_TRUNC); pwrite at random offsets (also
 * far past EOF, making holes) and O_APPEND writes; pread; truncate (grow
 * and shrink); mkdir, rmdir, unlink; rename (plain, over existing entries,
 * RENAME_NOREPLACE and RENAME_EXCHANGE through the renameat2 syscall);
 * link, symlink, readlink; chmod, chown; writes through shared mappings;
 * utimensat with nanoseconds (checked at once); set/get/list/removexattr of
 * user.* names; fallocate (0, KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE[|KEEP_SIZE],
 * the last done on the reference as a punched hole then an allocation); mknod
 * (FIFOs, character and block devices, sockets); fsync; stat; readdir;
 * batches of hundreds of entries in one directory (its hash levels);
 * descriptors kept open across operations (write, read, ftruncate, fstat
 * after the name is gone; getdents, openat, mkdirat, unlinkat, fstatat
 * relative to a directory renamed or removed since); and open, unlink,
 * write, read, close in one go.
 *
 * Every --drop-every operations (default 1000) the filesystem is synced
 * and the kernel's caches are dropped, so that later reads and lookups
 * reach the filesystem rather than the page and dentry caches.  Every
 * --compare-every operations (default 2500), and at the end, both trees
 * are compared in full: names, types, modes, owners, sizes, contents, link
 * counts, which names share an inode, symlink targets, device numbers,
 * xattrs.  At the end every entry gets the same timestamps with
 * nanoseconds on both sides (utimensat, deepest first) and mtimes are
 * compared too, so that a later --compare (after an unmount and a remount,
 * say) checks that they persisted.  Directory and file mtimes are also
 * checked after each operation that must update them: not older than the
 * operation, with 2 s of slack.
 *
 * --concurrent N: N processes, each running NOPS/N operations in its own
 * subdirectory tK on both sides, and all writing one shared file
 * ("shared") at disjoint, block-unaligned 3000-byte chunks, twice each;
 * then the shared file is checked against the expected pattern and the
 * trees are compared.
 *
 * --dio-race: one process rewrites 16 blocks of a file with O_DIRECT while
 * three read them with O_DIRECT; every read must return a whole old or new
 * block.
 *
 * Other options: --no OP[,OP...] leaves operations out (to look past a
 * known bug), -v prints every operation (with the reference's inode
 * number of its first path, to follow a file across renames).
 *
 * The first divergence is printed (op number, op, paths, both results)
 * and the exit status is 1; 0 when everything matched, 2 for usage or
 * setup errors.  Runs are deterministic for a seed (--concurrent: per
 * worker).
 *
 * Paths are relative: the process changes into the root of the side it
 * works on, so both sides see identical path strings (and identical
 * ENAMETOOLONG behaviour).  Symlink targets only point downwards, so
 * nothing resolves outside the tree.  Device nodes are never opened.
 *
 * Build: cc -O2 -Wall -Wextra -Werror -o fsops tests/fs/fsops.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define MAXIO (1u << 20)          /* largest single read or write */
#define MAXREL 4096               /* relative path buffers */
#define MAXFILE (16u << 20)       /* offsets and sizes stay below this */
#define LONGREL 1500              /* no operation builds a longer path on purpose */
#define NFDS 4                    /* descriptors kept open across operations */
#define SHARED_CHUNK 3000         /* --concurrent: bytes per chunk of the shared file */
#define SHARED_PER_WORKER 64

typedef struct {
	long ret;
	int err;
} R;

static int rootfd[2];
static const char *rootname[2];
static const char *const side[2] = { "fs", "ref" };
static uint64_t g_seed, rng;
static long cur_op = -1;
static char desc[2 * MAXREL + 256];
static char prefix[32];                 /* "" or "tK" (--concurrent) */
static int worker = -1;
static int verbose;
static long drop_every = 1000, compare_every = 2500;
static bool drop_warned;
static struct timespec t_op;            /* when the current operation began */

static uint8_t *wbuf, *rbuf[2];

/* ---- helpers ------------------------------------------------------------------------- */

static uint64_t next64(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t n)
{
	return n ? next64() % n : 0;
}

static bool chance(unsigned int pct)
{
	return rnd(100) < pct;
}

/* Deterministic bytes from a 64-bit key. */
static void fill(uint8_t *b, size_t n, uint64_t key)
{
	uint64_t x = key * 0x2545f4914f6cdd1dull + 0x1234567;
	for (size_t i = 0; i < n; i++) {
		if (!(i & 7)) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		b[i] = (uint8_t)(x >> ((i & 7) * 8));
	}
}

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

static const char *rstr(R r, char *b, size_t n)
{
	if (r.ret < 0)
		snprintf(b, n, "-1 %s (%s)", ename(r.err), strerror(r.err));
	else
		snprintf(b, n, "%ld", r.ret);
	return b;
}

static void where(FILE *f)
{
	char w[32] = "";
	if (worker >= 0)
		snprintf(w, sizeof(w), " [worker %d]", worker);
	if (cur_op >= 0)
		fprintf(f, "fsops: DIVERGENCE at op %ld%s (seed %" PRIu64 "): %s\n", cur_op, w,
			g_seed, desc);
	else
		fprintf(f, "fsops: DIVERGENCE in the tree comparison%s (seed %" PRIu64 "): %s\n", w,
			g_seed, desc);
}

static void __attribute__((noreturn, format(printf, 1, 2))) diverge(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	where(stderr);
	fprintf(stderr, "  ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n  (fs = %s, ref = %s)\n", rootname[0], rootname[1]);
	exit(1);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "fsops: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

static void enter(int s)
{
	if (fchdir(rootfd[s]))
		die("fchdir %s: %s", rootname[s], strerror(errno));
}

static R mk(long ret)
{
	R r = { ret, ret < 0 ? errno : 0 };
	return r;
}

/* A descriptor: only success or the errno count (the numbers differ). */
static R mkfd(int fd)
{
	R r = { fd < 0 ? -1 : 0, fd < 0 ? errno : 0 };
	return r;
}

static bool same(R a, R b)
{
	return a.ret == b.ret && (a.ret >= 0 || a.err == b.err);
}

/* The results of one step on both sides must agree. */
static void cmp(const char *what, R a, R b)
{
	char x[128], y[128];
	if (!same(a, b))
		diverge("%s: fs returned %s, ref returned %s", what, rstr(a, x, sizeof(x)),
			rstr(b, y, sizeof(y)));
}

static const char *P(const char *rel)
{
	return *rel ? rel : ".";
}

static void setdesc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void setdesc(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	if (verbose) {
		/* with the reference inode of the first path, to follow a file across renames */
		char rel[MAXREL];
		const char *q = strchr(desc, '\''), *e = q ? strchr(q + 1, '\'') : NULL;
		struct stat st;
		long ino = -1;
		if (e && (size_t)(e - q - 1) < sizeof(rel)) {
			memcpy(rel, q + 1, (size_t)(e - q - 1));
			rel[e - q - 1] = '\0';
			enter(1);
			if (!lstat(P(rel), &st))
				ino = (long)st.st_ino;
		}
		printf("%s%ld %s [ref ino %ld]\n", worker >= 0 ? prefix : "", cur_op, desc, ino);
	}
}

static void now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

static void parent_of(const char *rel, char *out)
{
	const char *sl = strrchr(rel, '/');
	if (!sl) {
		out[0] = '\0';
		return;
	}
	memcpy(out, rel, (size_t)(sl - rel));
	out[sl - rel] = '\0';
}

/*
 * The mtime of rel must not be older than the
 * current operation, on both sides.  The kernel stamps with a coarse
 * clock that lags CLOCK_REALTIME by a tick, more (150 ms seen) when a
 * virtual machine's CPU is descheduled: 2 s of slack.  Stale mtimes are
 * still caught, as most files carry utimensat times years away from now.
 */
static void check_recent(const char *rel, const char *why)
{
	struct timespec lim = t_op;
	struct stat st[2];
	bool old[2];
	lim.tv_sec -= 2;
	R r[2];
	for (int s = 0; s < 2; s++) {
		enter(s);
		/* following symlinks: 'l/x' may live in l's target */
		r[s] = mk(stat(P(rel), &st[s]));
	}
	cmp("stat after the operation", r[0], r[1]);
	if (r[0].ret)
		return;   /* the path went away (a symlink in it was renamed, say) */
	for (int s = 0; s < 2; s++) {
		old[s] = st[s].st_mtim.tv_sec < lim.tv_sec ||
			 (st[s].st_mtim.tv_sec == lim.tv_sec && st[s].st_mtim.tv_nsec < lim.tv_nsec);
	}
	if (old[0] || old[1])
		diverge("%s: mtime of '%s' not updated: fs %lld.%09ld%s, ref %lld.%09ld%s; the "
			"operation started at %lld.%09ld", why, P(rel),
			(long long)st[0].st_mtim.tv_sec, st[0].st_mtim.tv_nsec, old[0] ? " (old)" : "",
			(long long)st[1].st_mtim.tv_sec, st[1].st_mtim.tv_nsec, old[1] ? " (old)" : "",
			(long long)t_op.tv_sec, t_op.tv_nsec);
}

/* ---- the reference tree's entries, to pick paths that exist -------------------------- */

struct ent {
	char *rel;
	mode_t mode;
	size_t sublen;      /* directories: longest path below, relative to rel */
};
static struct ent *ents;
static size_t nents, capents;
static bool ents_dirty = true;

static size_t scan(const char *rel, int depth)
{
	DIR *d = opendir(P(rel));
	struct dirent *de;
	size_t longest = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_name[0] == 'w')   /* op_bulk's names: left to op_bulk */
			continue;
		char p[MAXREL];
		int n = snprintf(p, sizeof(p), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		if (n < 0 || n >= (int)sizeof(p))
			continue;
		struct stat st;
		if (lstat(p, &st))
			continue;
		size_t mine = strlen(de->d_name) + 1, sub = 0;
		if (S_ISDIR(st.st_mode) && depth < 64)
			sub = scan(p, depth + 1);
		if (nents == capents) {
			capents = capents ? 2 * capents : 256;
			ents = realloc(ents, capents * sizeof(*ents));
			if (!ents)
				die("out of memory");
		}
		ents[nents].rel = strdup(p);
		ents[nents].mode = st.st_mode;
		ents[nents].sublen = sub;
		nents++;
		if (mine + sub > longest)
			longest = mine + sub;
	}
	closedir(d);
	return longest;
}

static void rescan(void)
{
	if (!ents_dirty)
		return;
	for (size_t i = 0; i < nents; i++)
		free(ents[i].rel);
	nents = 0;
	enter(1);
	scan(prefix, 0);
	ents_dirty = false;
}

enum { F_ANY, F_REG, F_DIR, F_LNK };

static bool type_ok(mode_t m, int f)
{
	switch (f) {
	case F_REG: return S_ISREG(m);
	case F_DIR: return S_ISDIR(m);
	case F_LNK: return S_ISLNK(m);
	default: return true;
	}
}

static const struct ent *pick_existing(int f)
{
	size_t n = 0;

	rescan();
	for (size_t i = 0; i < nents; i++)
		n += type_ok(ents[i].mode, f);
	if (!n)
		return NULL;
	size_t k = rnd(n);
	for (size_t i = 0; i < nents; i++)
		if (type_ok(ents[i].mode, f) && !k--)
			return &ents[i];
	return NULL;
}

static const struct ent *find_ent(const char *rel)
{
	rescan();
	for (size_t i = 0; i < nents; i++)
		if (!strcmp(ents[i].rel, rel))
			return &ents[i];
	return NULL;
}

static char long100[101], long255[256];
static const char *names[] = { "a", "b", "c", "d", "e", "f", "g", "h", "sub", long100, long255 };
#define NNAMES (sizeof(names) / sizeof(names[0]))

#define NWIDE 400
static char wide[NWIDE][8];    /* n000..n399: directories with hundreds of entries */

static const char *rand_name(void)
{
	if (chance(12))
		return wide[rnd(NWIDE)];
	/* the long names are rarer */
	size_t i = chance(8) ? NNAMES - 2 + rnd(2) : rnd(NNAMES - 2);
	return names[i];
}

static void join(char *out, const char *dir, const char *name)
{
	if (*dir)
		snprintf(out, MAXREL, "%s/%s", dir, name);
	else
		snprintf(out, MAXREL, "%s", name);
}

static void rand_path(char *out)
{
	unsigned int depth = 1 + (unsigned int)(chance(40) ? 0 : chance(65) ? 1 : 2);
	strcpy(out, prefix);
	for (unsigned int i = 0; i < depth; i++) {
		char t[MAXREL];
		join(t, out, rand_name());
		strcpy(out, t);
	}
}

/* An existing entry of type f (most of the time), else any path. */
static void pick(char *out, int f)
{
	const struct ent *e = NULL;
	if (chance(85))
		e = pick_existing(f);
	if (!e && f != F_ANY && chance(50))
		e = pick_existing(F_ANY);
	if (e)
		strcpy(out, e->rel);
	else
		rand_path(out);
}

/* A path for a new entry: mostly a fresh name in an existing directory. */
static void pick_new(char *out)
{
	if (chance(75)) {
		const struct ent *d = chance(80) ? pick_existing(F_DIR) : NULL;
		const char *dir = d ? d->rel : prefix;
		if (strlen(dir) < LONGREL) {
			join(out, dir, rand_name());
			return;
		}
	}
	rand_path(out);
}

/* ---- operations ---------------------------------------------------------------------- */

static unsigned int mode_bits(void)
{
	static const unsigned int m[] = { 0644, 0600, 0755, 0444, 0640, 0700, 0777, 0511, 02755 };
	return m[rnd(sizeof(m) / sizeof(m[0]))];
}

/* Opening a device node of the reference could mean a real device: never. */
static bool is_device(const char *rel)
{
	struct stat st;
	enter(1);
	if (stat(P(rel), &st))
		return false;
	return S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode);
}

static bool exists_ref(const char *rel)
{
	struct stat st;
	enter(1);
	return !lstat(P(rel), &st);
}

static uint64_t ref_size(const char *rel)
{
	struct stat st;
	enter(1);
	if (stat(P(rel), &st) || !S_ISREG(st.st_mode))
		return 0;
	return (uint64_t)st.st_size;
}

static uint64_t rand_off(uint64_t size)
{
	switch (rnd(10)) {
	case 0: case 1: case 2: case 3: case 4: case 5:
		return rnd(size + 8192);                  /* around the data */
	case 6: case 7:
		return rnd(1u << 20);
	case 8:
		return rnd(MAXFILE - MAXIO);              /* far: a hole before it */
	default:
		return size;                              /* exactly at EOF */
	}
}

static size_t rand_len(void)
{
	unsigned int k = (unsigned int)rnd(100);
	if (k < 5)
		return 1 + rnd(16);
	if (k < 70)
		return 1 + rnd(8192);
	if (k < 95)
		return 1 + rnd(128 << 10);
	return 1 + rnd(MAXIO);
}

static void op_create(void)
{
	char p[MAXREL], par[MAXREL];
	R r[2];
	int flags = O_CREAT | O_WRONLY | O_NONBLOCK;

	if (chance(80))
		pick_new(p);
	else
		pick(p, F_ANY);
	if (chance(30))
		flags |= O_EXCL;
	if (chance(20))
		flags |= O_TRUNC;
	unsigned int mode = mode_bits();
	if (is_device(p))
		return;
	bool existed = exists_ref(p);
	setdesc("create '%s' flags=%s%s mode=%o", p, flags & O_EXCL ? "O_EXCL" : "",
		flags & O_TRUNC ? "|O_TRUNC" : "", mode);
	for (int s = 0; s < 2; s++) {
		enter(s);
		int fd = open(p, flags, mode);
		r[s] = mkfd(fd);
		if (fd >= 0)
			close(fd);
	}
	cmp("open(O_CREAT)", r[0], r[1]);
	ents_dirty = true;
	if (r[0].ret >= 0 && !existed) {
		parent_of(p, par);
		check_recent(par, "create: parent directory");
	}
}

static void op_write(void)
{
	char p[MAXREL];
	R o[2], r[2];
	int fd[2] = { -1, -1 };
	bool app = chance(15);

	pick(p, F_REG);
	if (is_device(p))
		return;
	uint64_t size = ref_size(p), off = rand_off(size);
	size_t len = rand_len();
	uint64_t key = next64();
	fill(wbuf, len, key);
	setdesc("write '%s' off=%" PRIu64 " len=%zu%s", p, off, len, app ? " O_APPEND" : "");
	for (int s = 0; s < 2; s++) {
		enter(s);
		fd[s] = open(p, O_WRONLY | O_NONBLOCK | (app ? O_APPEND : 0));
		o[s] = mkfd(fd[s]);
	}
	cmp("open(O_WRONLY)", o[0], o[1]);
	if (fd[0] < 0)
		return;
	for (int s = 0; s < 2; s++)
		r[s] = mk(app ? write(fd[s], wbuf, len) : pwrite(fd[s], wbuf, len, (off_t)off));
	for (int s = 0; s < 2; s++)
		close(fd[s]);
	cmp(app ? "write(O_APPEND)" : "pwrite", r[0], r[1]);
	if (r[0].ret > 0)
		check_recent(p, "write: file");
}

static void op_read(void)
{
	char p[MAXREL];
	R o[2], r[2];
	int fd[2];

	pick(p, F_REG);
	if (is_device(p))
		return;
	uint64_t size = ref_size(p);
	uint64_t off = chance(80) ? rnd(size + 4096) : rnd(MAXFILE);
	size_t len = chance(50) ? 1 + rnd(16384) : 1 + rnd(MAXIO);
	setdesc("read '%s' off=%" PRIu64 " len=%zu", p, off, len);
	for (int s = 0; s < 2; s++) {
		enter(s);
		fd[s] = open(p, O_RDONLY | O_NONBLOCK);
		o[s] = mkfd(fd[s]);
	}
	cmp("open(O_RDONLY)", o[0], o[1]);
	if (fd[0] < 0)
		return;
	for (int s = 0; s < 2; s++) {
		r[s] = mk(pread(fd[s], rbuf[s], len, (off_t)off));
		close(fd[s]);
	}
	cmp("pread", r[0], r[1]);
	if (r[0].ret > 0 && memcmp(rbuf[0], rbuf[1], (size_t)r[0].ret)) {
		size_t i = 0;
		while (rbuf[0][i] == rbuf[1][i])
			i++;
		diverge("pread: data differ at file offset %" PRIu64 ": fs 0x%02x, ref 0x%02x",
			off + i, rbuf[0][i], rbuf[1][i]);
	}
}

static uint64_t rand_size(uint64_t size)
{
	switch (rnd(8)) {
	case 0: return 0;
	case 1: return rnd(4096);
	case 2: return size + rnd(8192);
	case 3: return size > 0 ? rnd(size) : 0;
	case 4: return rnd(MAXFILE);
	case 5: return (rnd(64) + 1) * 4096;      /* block aligned */
	default: return rnd(1u << 20);
	}
}

static void op_truncate(void)
{
	char p[MAXREL];
	R r[2];

	pick(p, F_REG);
	uint64_t size = ref_size(p), ns = rand_size(size);
	setdesc("truncate '%s' %" PRIu64 " -> %" PRIu64, p, size, ns);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(truncate(p, (off_t)ns));
	}
	cmp("truncate", r[0], r[1]);
	if (r[0].ret == 0 && ns != size)
		check_recent(p, "truncate: file");
}

static void op_mkdir(void)
{
	char p[MAXREL], par[MAXREL];
	R r[2];
	unsigned int mode = chance(80) ? 0755 : mode_bits();

	pick_new(p);
	setdesc("mkdir '%s' %o", p, mode);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(mkdir(p, mode));
	}
	cmp("mkdir", r[0], r[1]);
	ents_dirty = true;
	if (!r[0].ret) {
		parent_of(p, par);
		check_recent(par, "mkdir: parent directory");
	}
}

static void op_rmdir(void)
{
	char p[MAXREL], par[MAXREL];
	R r[2];

	pick(p, chance(85) ? F_DIR : F_ANY);
	setdesc("rmdir '%s'", p);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(rmdir(p));
	}
	cmp("rmdir", r[0], r[1]);
	ents_dirty = true;
	if (!r[0].ret) {
		parent_of(p, par);
		check_recent(par, "rmdir: parent directory");
	}
}

static void op_unlink(void)
{
	char p[MAXREL], par[MAXREL];
	R r[2];

	pick(p, F_ANY);
	setdesc("unlink '%s'", p);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(unlink(p));
	}
	cmp("unlink", r[0], r[1]);
	ents_dirty = true;
	if (!r[0].ret) {
		parent_of(p, par);
		check_recent(par, "unlink: parent directory");
	}
}

static void do_rename(unsigned int flags)
{
	char a[MAXREL], b[MAXREL], pa[MAXREL], pb[MAXREL];
	R r[2];
	const char *fl = flags == RENAME_NOREPLACE ? " RENAME_NOREPLACE" :
			 flags == RENAME_EXCHANGE ? " RENAME_EXCHANGE" : "";

	pick(a, F_ANY);
	if (flags == RENAME_EXCHANGE ? chance(85) : chance(45))
		pick(b, F_ANY);
	else
		pick_new(b);
	/* keep paths bounded: a directory moved deeper carries its subtree along */
	const struct ent *ea = find_ent(a), *eb = find_ent(b);
	size_t sa = ea ? ea->sublen : 0, sb = eb ? eb->sublen : 0;
	if (strlen(b) + sa > LONGREL || (flags == RENAME_EXCHANGE && strlen(a) + sb > LONGREL))
		return;
	setdesc("rename '%s' -> '%s'%s", a, b, fl);
	/* two names of one inode: rename does nothing at all (no mtimes either) */
	struct stat sa_st, sb_st;
	enter(1);
	bool one = !lstat(a, &sa_st) && !lstat(b, &sb_st) && sa_st.st_ino == sb_st.st_ino;
	for (int s = 0; s < 2; s++) {
		enter(s);
		if (flags)
			r[s] = mk(syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags));
		else
			r[s] = mk(rename(a, b));
	}
	cmp(flags ? "renameat2" : "rename", r[0], r[1]);
	ents_dirty = true;
	if (!r[0].ret && !one) {
		parent_of(a, pa);
		parent_of(b, pb);
		check_recent(pa, "rename: source directory");
		check_recent(pb, "rename: target directory");
	}
}

static void op_rename(void) { do_rename(0); }
static void op_rename_noreplace(void) { do_rename(RENAME_NOREPLACE); }
static void op_rename_exchange(void) { do_rename(RENAME_EXCHANGE); }

static void op_link(void)
{
	char a[MAXREL], b[MAXREL], pb[MAXREL];
	R r[2];

	pick(a, chance(80) ? F_REG : F_ANY);
	pick_new(b);
	setdesc("link '%s' -> '%s'", a, b);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(link(a, b));
	}
	cmp("link", r[0], r[1]);
	ents_dirty = true;
	if (!r[0].ret) {
		parent_of(b, pb);
		check_recent(pb, "link: target directory");
	}
}

static void op_symlink(void)
{
	char p[MAXREL], par[MAXREL], target[MAXREL];
	R r[2];

	pick_new(p);
	switch (rnd(8)) {
	case 0: {   /* a long target, up to the 4095-byte limit */
		size_t n = chance(30) ? 4095 : 1 + rnd(3000);
		for (size_t i = 0; i < n; i++)
			target[i] = (char)('a' + (i % 26));
		target[n] = '\0';
		break;
	}
	case 1:
		strcpy(target, "nonexistent");
		break;
	default: {  /* downwards only: a name, or two */
		const char *x = rand_name(), *y = rand_name();
		if (strlen(x) + strlen(y) > 300 || chance(50))
			snprintf(target, sizeof(target), "%s", x);
		else
			snprintf(target, sizeof(target), "%s/%s", x, y);
	}
	}
	setdesc("symlink '%s' -> '%.60s%s' (%zu bytes)", p, target,
		strlen(target) > 60 ? "..." : "", strlen(target));
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(symlink(target, p));
	}
	cmp("symlink", r[0], r[1]);
	ents_dirty = true;
	if (!r[0].ret) {
		parent_of(p, par);
		check_recent(par, "symlink: parent directory");
	}
}

static void op_readlink(void)
{
	char p[MAXREL], b[2][MAXREL + 1];
	R r[2];

	pick(p, F_LNK);
	setdesc("readlink '%s'", p);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(readlink(p, b[s], MAXREL));
	}
	cmp("readlink", r[0], r[1]);
	if (r[0].ret > 0 && memcmp(b[0], b[1], (size_t)r[0].ret))
		diverge("readlink: targets differ: fs '%.*s', ref '%.*s'", (int)r[0].ret, b[0],
			(int)r[1].ret, b[1]);
}

static void op_chmod(void)
{
	char p[MAXREL];
	R r[2];
	unsigned int mode = mode_bits();

	pick(p, F_ANY);
	if (chance(30))
		mode |= 01000 * (unsigned int)rnd(2) | 04000 * (unsigned int)rnd(2);
	setdesc("chmod '%s' %o", p, mode);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(chmod(p, mode));
	}
	cmp("chmod", r[0], r[1]);
	if (!r[0].ret) {
		struct stat st[2];
		for (int s = 0; s < 2; s++) {
			enter(s);
			if (stat(p, &st[s]))
				diverge("stat after chmod failed on %s: %s", side[s], strerror(errno));
		}
		if (st[0].st_mode != st[1].st_mode)
			diverge("mode after chmod: fs 0%o, ref 0%o", st[0].st_mode, st[1].st_mode);
	}
}

static void rand_time(struct timespec *ts)
{
	switch (rnd(6)) {
	case 0: ts->tv_sec = -(time_t)rnd(2000000000); break;       /* before 1970 */
	case 1: ts->tv_sec = (time_t)(4000000000ll + (long long)rnd(1000000000)); break;  /* after 2038 */
	case 2: ts->tv_sec = 0; break;
	default: ts->tv_sec = (time_t)(1000000000 + rnd(800000000)); break;
	}
	ts->tv_nsec = chance(10) ? 0 : (long)rnd(1000000000);
}

static void op_utimens(void)
{
	char p[MAXREL];
	struct timespec ts[2];
	R r[2];
	int flags = chance(50) ? AT_SYMLINK_NOFOLLOW : 0;

	pick(p, F_ANY);
	rand_time(&ts[0]);
	rand_time(&ts[1]);
	bool omit_a = chance(25);
	if (omit_a)
		ts[0].tv_nsec = UTIME_OMIT;
	setdesc("utimensat '%s' atime=%s%lld.%09ld mtime=%lld.%09ld%s", p, omit_a ? "OMIT " : "",
		(long long)ts[0].tv_sec, omit_a ? 0 : ts[0].tv_nsec, (long long)ts[1].tv_sec,
		ts[1].tv_nsec, flags ? " AT_SYMLINK_NOFOLLOW" : "");
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(utimensat(AT_FDCWD, p, ts, flags));
	}
	cmp("utimensat", r[0], r[1]);
	if (r[0].ret)
		return;
	for (int s = 0; s < 2; s++) {
		struct stat st;
		enter(s);
		if (fstatat(AT_FDCWD, p, &st, flags))
			diverge("stat after utimensat failed on %s: %s", side[s], strerror(errno));
		if (st.st_mtim.tv_sec != ts[1].tv_sec || st.st_mtim.tv_nsec != ts[1].tv_nsec)
			diverge("mtime after utimensat on %s: %lld.%09ld, set %lld.%09ld", side[s],
				(long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
				(long long)ts[1].tv_sec, ts[1].tv_nsec);
		if (!omit_a && (st.st_atim.tv_sec != ts[0].tv_sec || st.st_atim.tv_nsec != ts[0].tv_nsec))
			diverge("atime after utimensat on %s: %lld.%09ld, set %lld.%09ld", side[s],
				(long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
				(long long)ts[0].tv_sec, ts[0].tv_nsec);
	}
}

static char xlong[120];
static const char *xnames[] = { "user.a", "user.bb", "user.empty", xlong };

static const char *rand_xname(void)
{
	return xnames[rnd(4)];
}

static void op_setxattr(void)
{
	char p[MAXREL];
	R r[2];
	const char *name = rand_xname();
	int flags = (int)rnd(3);   /* 0, XATTR_CREATE, XATTR_REPLACE */
	size_t len = !strcmp(name, "user.empty") ? 0 : chance(70) ? rnd(64) : rnd(400);
	bool nofollow = chance(20);

	pick(p, F_ANY);
	uint64_t key = next64();
	fill(wbuf, len, key);
	setdesc("%ssetxattr '%s' %s len=%zu flags=%s", nofollow ? "l" : "", p, name, len,
		flags == XATTR_CREATE ? "XATTR_CREATE" : flags == XATTR_REPLACE ? "XATTR_REPLACE" : "0");
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(nofollow ? lsetxattr(p, name, wbuf, len, flags) :
				     setxattr(p, name, wbuf, len, flags));
	}
	cmp("setxattr", r[0], r[1]);
}

static void op_getxattr(void)
{
	char p[MAXREL];
	R r[2];
	const char *name = rand_xname();
	size_t size = chance(20) ? 0 : chance(10) ? 1 : 4096;

	pick(p, F_ANY);
	setdesc("getxattr '%s' %s size=%zu", p, name, size);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(getxattr(p, name, size ? rbuf[s] : NULL, size));
	}
	cmp("getxattr", r[0], r[1]);
	if (r[0].ret > 0 && size && memcmp(rbuf[0], rbuf[1], (size_t)r[0].ret))
		diverge("getxattr: values differ");
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, '\n'-joined names of a listxattr buffer. */
static void sort_list(char *buf, long len, char *out, size_t outlen)
{
	char *v[256];
	int n = 0;
	for (long i = 0; i < len && n < 256; i += (long)strlen(buf + i) + 1)
		v[n++] = buf + i;
	qsort(v, (size_t)n, sizeof(v[0]), cmpstr);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		strncat(out, v[i], outlen - strlen(out) - 2);
		strcat(out, " ");
	}
}

static void op_listxattr(void)
{
	char p[MAXREL], l[2][2048];
	R r[2];
	bool nofollow = chance(30);

	pick(p, F_ANY);
	setdesc("%slistxattr '%s'", nofollow ? "l" : "", p);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(nofollow ? llistxattr(p, (char *)rbuf[s], 4096) :
				     listxattr(p, (char *)rbuf[s], 4096));
	}
	cmp("listxattr", r[0], r[1]);
	if (r[0].ret > 0) {
		for (int s = 0; s < 2; s++)
			sort_list((char *)rbuf[s], r[s].ret, l[s], sizeof(l[s]));
		if (strcmp(l[0], l[1]))
			diverge("listxattr: fs [%s], ref [%s]", l[0], l[1]);
	}
}

static void op_removexattr(void)
{
	char p[MAXREL];
	R r[2];
	const char *name = rand_xname();

	pick(p, F_ANY);
	setdesc("removexattr '%s' %s", p, name);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(removexattr(p, name));
	}
	cmp("removexattr", r[0], r[1]);
}

static void op_fallocate(void)
{
	char p[MAXREL];
	R o[2], r[2];
	int fd[2];
	static const int modes[] = { 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				     FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE };
	static const char *const mname[] = { "0", "KEEP_SIZE", "PUNCH_HOLE|KEEP_SIZE", "ZERO_RANGE",
					     "ZERO_RANGE|KEEP_SIZE" };
	int m = (int)rnd(5);

	pick(p, F_REG);
	if (is_device(p))
		return;
	uint64_t size = ref_size(p);
	uint64_t off = chance(70) ? rnd(size + 8192) : rnd(MAXFILE);
	uint64_t len = chance(60) ? 1 + rnd(65536) : 1 + rnd(1u << 20);
	if (chance(30)) {   /* block aligned */
		off &= ~4095ull;
		len = (len + 4095) & ~4095ull;
	}
	setdesc("fallocate '%s' mode=%s off=%" PRIu64 " len=%" PRIu64 " (size %" PRIu64 ")", p,
		mname[m], off, len, size);
	for (int s = 0; s < 2; s++) {
		enter(s);
		fd[s] = open(p, O_WRONLY | O_NONBLOCK);
		o[s] = mkfd(fd[s]);
	}
	cmp("open(O_WRONLY)", o[0], o[1]);
	if (fd[0] < 0)
		return;
	for (int s = 0; s < 2; s++) {
		if (s == 1 && (modes[m] & FALLOC_FL_ZERO_RANGE)) {
			/* the reference (tmpfs) has no ZERO_RANGE: the same effect as a
			 * hole punched, then the range allocated */
			int keep = modes[m] & FALLOC_FL_KEEP_SIZE;
			r[s] = mk(fallocate(fd[s], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					    (off_t)off, (off_t)len));
			if (!r[s].ret)
				r[s] = mk(fallocate(fd[s], keep, (off_t)off, (off_t)len));
		} else {
			r[s] = mk(fallocate(fd[s], modes[m], (off_t)off, (off_t)len));
		}
		close(fd[s]);
	}
	cmp("fallocate", r[0], r[1]);
}

static void op_mknod(void)
{
	char p[MAXREL], par[MAXREL];
	R r[2];
	mode_t mode;
	dev_t dev = 0;

	pick_new(p);
	switch (rnd(5)) {
	case 0: mode = S_IFCHR | 0644; dev = makedev(1, 3); break;
	case 1: mode = S_IFCHR | 0600; dev = makedev(300, 70000); break;   /* new_encode_dev */
	case 2: mode = S_IFBLK | 0660; dev = makedev(7, 0); break;
	case 3: mode = S_IFSOCK | 0755; break;
	default: mode = S_IFIFO | 0644; break;
	}
	setdesc("mknod '%s' mode=0%o dev=%u:%u", p, mode, major(dev), minor(dev));
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(mknod(p, mode, dev));
	}
	cmp("mknod", r[0], r[1]);
	ents_dirty = true;
	if (!r[0].ret) {
		parent_of(p, par);
		check_recent(par, "mknod: parent directory");
	}
}

static void op_fsync(void)
{
	char p[MAXREL];
	R o[2], r[2];
	int fd[2];
	bool dir = chance(25), data = chance(50);

	pick(p, dir ? F_DIR : F_REG);
	if (is_device(p))
		return;
	setdesc("%s '%s'", data ? "fdatasync" : "fsync", p);
	for (int s = 0; s < 2; s++) {
		enter(s);
		fd[s] = open(P(p), O_RDONLY | O_NONBLOCK);
		o[s] = mkfd(fd[s]);
	}
	cmp("open(O_RDONLY)", o[0], o[1]);
	if (fd[0] < 0)
		return;
	for (int s = 0; s < 2; s++) {
		r[s] = mk(data ? fdatasync(fd[s]) : fsync(fd[s]));
		close(fd[s]);
	}
	/* a FIFO gives EINVAL on both */
	cmp("fsync", r[0], r[1]);
}

static void cmp_stat(const char *what, const struct stat *a, const struct stat *b);

static void op_chown(void)
{
	char p[MAXREL];
	R r[2];
	static const unsigned int ids[] = { 0, 1, 1000, 65534, 4000000000u };
	uid_t uid = chance(20) ? (uid_t)-1 : ids[rnd(5)];
	gid_t gid = chance(20) ? (gid_t)-1 : ids[rnd(5)];
	bool nofollow = chance(40);

	pick(p, F_ANY);
	setdesc("%schown '%s' %d:%d", nofollow ? "l" : "", p, (int)uid, (int)gid);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(nofollow ? lchown(p, uid, gid) : chown(p, uid, gid));
	}
	cmp("chown", r[0], r[1]);
	if (!r[0].ret) {   /* owners, and the set-id bits chown clears */
		struct stat st[2];
		for (int s = 0; s < 2; s++) {
			enter(s);
			if (fstatat(AT_FDCWD, p, &st[s], nofollow ? AT_SYMLINK_NOFOLLOW : 0))
				diverge("stat after chown failed on %s: %s", side[s], strerror(errno));
		}
		cmp_stat("stat after chown", &st[0], &st[1]);
	}
}

/* Write through a shared mapping (inside the file: a mapping does not extend it). */
static void op_mmap(void)
{
	char p[MAXREL];
	R o[2], r[2];
	int fd[2];

	pick(p, F_REG);
	if (is_device(p))
		return;
	uint64_t size = ref_size(p);
	if (!size)
		return;
	uint64_t off = rnd(size), len = 1 + rnd(size - off < 262144 ? size - off : 262144);
	uint64_t moff = off & ~4095ull;
	fill(wbuf, len, next64());
	setdesc("mmap '%s' write off=%" PRIu64 " len=%" PRIu64 " (size %" PRIu64 "), msync", p, off,
		len, size);
	for (int s = 0; s < 2; s++) {
		enter(s);
		fd[s] = open(p, O_RDWR | O_NONBLOCK);
		o[s] = mkfd(fd[s]);
	}
	cmp("open(O_RDWR)", o[0], o[1]);
	if (fd[0] < 0)
		return;
	for (int s = 0; s < 2; s++) {
		size_t maplen = (size_t)(off + len - moff);
		uint8_t *m = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd[s], (off_t)moff);
		if (m == MAP_FAILED) {
			r[s] = mk(-1);
		} else {
			memcpy(m + (off - moff), wbuf, (size_t)len);
			r[s] = mk(msync(m, maplen, MS_SYNC));
			munmap(m, maplen);
		}
		close(fd[s]);
	}
	cmp("mmap/msync", r[0], r[1]);
}

static void cmp_stat(const char *what, const struct stat *a, const struct stat *b)
{
	if ((a->st_mode & S_IFMT) != (b->st_mode & S_IFMT))
		diverge("%s: types differ: fs 0%o, ref 0%o", what, a->st_mode & S_IFMT, b->st_mode & S_IFMT);
	if (a->st_mode != b->st_mode)
		diverge("%s: modes differ: fs 0%o, ref 0%o", what, a->st_mode, b->st_mode);
	if (a->st_uid != b->st_uid || a->st_gid != b->st_gid)
		diverge("%s: owners differ: fs %u:%u, ref %u:%u", what, a->st_uid, a->st_gid,
			b->st_uid, b->st_gid);
	if (a->st_nlink != b->st_nlink)
		diverge("%s: link counts differ: fs %lu, ref %lu", what, (unsigned long)a->st_nlink,
			(unsigned long)b->st_nlink);
	if (!S_ISDIR(a->st_mode) && a->st_size != b->st_size)
		diverge("%s: sizes differ: fs %lld, ref %lld", what, (long long)a->st_size,
			(long long)b->st_size);
	if ((S_ISCHR(a->st_mode) || S_ISBLK(a->st_mode)) && a->st_rdev != b->st_rdev)
		diverge("%s: device numbers differ: fs %u:%u, ref %u:%u", what, major(a->st_rdev),
			minor(a->st_rdev), major(b->st_rdev), minor(b->st_rdev));
}

static void op_stat(void)
{
	char p[MAXREL];
	struct stat st[2];
	R r[2];
	bool follow = chance(40);

	pick(p, F_ANY);
	setdesc("%s '%s'", follow ? "stat" : "lstat", p);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(follow ? stat(p, &st[s]) : lstat(p, &st[s]));
	}
	cmp("stat", r[0], r[1]);
	if (!r[0].ret)
		cmp_stat("stat", &st[0], &st[1]);
}

struct dent {
	char *name;
	unsigned char type;
};

static int cmpdent(const void *a, const void *b)
{
	return strcmp(((const struct dent *)a)->name, ((const struct dent *)b)->name);
}

/* Entries of a directory, sorted, without . and ..; -errno on failure. */
static long list_dir(const char *rel, struct dent **out)
{
	DIR *d = opendir(P(rel));
	struct dent *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	*out = NULL;
	if (!d)
		return -errno;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				die("out of memory");
		}
		v[n].name = strdup(de->d_name);
		v[n].type = de->d_type;
		n++;
	}
	int e = errno;
	closedir(d);
	if (e) {
		for (size_t i = 0; i < n; i++)
			free(v[i].name);
		free(v);
		return -e;
	}
	qsort(v, n, sizeof(*v), cmpdent);
	*out = v;
	return (long)n;
}

static void free_list(struct dent *v, long n)
{
	for (long i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

static void cmp_lists(const char *rel, struct dent *a, long na, struct dent *b, long nb)
{
	long i = 0, j = 0;
	while (i < na || j < nb) {
		int c = i >= na ? 1 : j >= nb ? -1 : strcmp(a[i].name, b[j].name);
		if (c < 0)
			diverge("readdir '%s': '%s' only on fs (fs has %ld entries, ref %ld)", P(rel),
				a[i].name, na, nb);
		if (c > 0)
			diverge("readdir '%s': '%s' only on ref (fs has %ld entries, ref %ld)", P(rel),
				b[j].name, na, nb);
		if (a[i].type != DT_UNKNOWN && b[j].type != DT_UNKNOWN && a[i].type != b[j].type)
			diverge("readdir '%s': d_type of '%s': fs %u, ref %u", P(rel), a[i].name,
				a[i].type, b[j].type);
		i++;
		j++;
	}
}

static void op_readdir(void)
{
	char p[MAXREL];
	struct dent *v[2];
	long n[2];

	if (chance(10))
		strcpy(p, prefix);
	else
		pick(p, F_DIR);
	setdesc("readdir '%s'", P(p));
	for (int s = 0; s < 2; s++) {
		enter(s);
		n[s] = list_dir(p, &v[s]);
	}
	R a = { n[0] < 0 ? -1 : n[0], n[0] < 0 ? (int)-n[0] : 0 };
	R b = { n[1] < 0 ? -1 : n[1], n[1] < 0 ? (int)-n[1] : 0 };
	if (n[0] >= 0 && n[1] >= 0)
		cmp_lists(p, v[0], n[0], v[1], n[1]);
	cmp("opendir/readdir", a, b);
	if (n[0] >= 0)
		free_list(v[0], n[0]);
	if (n[1] >= 0)
		free_list(v[1], n[1]);
}

/* Read a whole regular file on both sides and compare; -1 if not openable (compared). */
static void compare_contents(const char *rel, const char *what)
{
	int fd[2];
	R o[2];
	for (int s = 0; s < 2; s++) {
		enter(s);
		fd[s] = open(P(rel), O_RDONLY | O_NONBLOCK);
		o[s] = mkfd(fd[s]);
	}
	cmp(what, o[0], o[1]);
	if (fd[0] < 0)
		return;
	for (uint64_t off = 0;; off += MAXIO) {
		R r[2];
		for (int s = 0; s < 2; s++)
			r[s] = mk(pread(fd[s], rbuf[s], MAXIO, (off_t)off));
		cmp(what, r[0], r[1]);
		if (r[0].ret > 0 && memcmp(rbuf[0], rbuf[1], (size_t)r[0].ret)) {
			size_t i = 0;
			while (rbuf[0][i] == rbuf[1][i])
				i++;
			size_t j = i;   /* how long the difference runs */
			while (j < (size_t)r[0].ret && rbuf[0][j] != rbuf[1][j])
				j++;
			diverge("%s '%s': contents differ at offset %" PRIu64 " (fs 0x%02x, ref 0x%02x; "
				"%zu bytes differ from there)", what, P(rel), off + i, rbuf[0][i],
				rbuf[1][i], j - i);
		}
		if (r[0].ret < (long)MAXIO)
			break;
	}
	close(fd[0]);
	close(fd[1]);
}

static void op_verify(void)
{
	char p[MAXREL];

	pick(p, F_REG);
	if (is_device(p))
		return;
	setdesc("verify contents of '%s'", p);
	compare_contents(p, "read whole file");
}

static void op_open_trunc(void)
{
	char p[MAXREL];
	R o[2], r[2];
	int fd[2];
	size_t len = chance(50) ? 0 : 1 + rnd(10000);

	pick(p, F_REG);
	if (is_device(p))
		return;
	fill(wbuf, len, next64());
	setdesc("open '%s' O_WRONLY|O_TRUNC, write %zu", p, len);
	for (int s = 0; s < 2; s++) {
		enter(s);
		fd[s] = open(p, O_WRONLY | O_TRUNC | O_NONBLOCK);
		o[s] = mkfd(fd[s]);
	}
	cmp("open(O_TRUNC)", o[0], o[1]);
	if (fd[0] < 0)
		return;
	for (int s = 0; s < 2; s++) {
		r[s] = mk(write(fd[s], wbuf, len));
		close(fd[s]);
	}
	cmp("write", r[0], r[1]);
}

/* open, write, unlink, write, read back, fstat, close: all in one op */
static void op_unlink_open(void)
{
	char p[MAXREL];
	R r[2];
	int fd[2];
	struct stat st[2];
	size_t l1 = 1 + rnd(20000), l2 = 1 + rnd(70000);

	pick(p, chance(50) ? F_REG : F_ANY);
	if (is_device(p))
		return;
	setdesc("open '%s' O_RDWR|O_CREAT, write %zu, unlink, write %zu, read, fstat, close", p, l1, l2);
	for (int s = 0; s < 2; s++) {
		enter(s);
		fd[s] = open(p, O_RDWR | O_CREAT | O_NONBLOCK, 0644);
		r[s] = mkfd(fd[s]);
	}
	cmp("open(O_RDWR|O_CREAT)", r[0], r[1]);
	ents_dirty = true;
	if (fd[0] < 0)
		return;
	uint64_t k1 = next64(), k2 = next64();
	fill(wbuf, l1, k1);
	for (int s = 0; s < 2; s++)
		r[s] = mk(pwrite(fd[s], wbuf, l1, 0));
	cmp("pwrite before unlink", r[0], r[1]);
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(unlink(p));
	}
	cmp("unlink while open", r[0], r[1]);
	fill(wbuf, l2, k2);
	for (int s = 0; s < 2; s++)
		r[s] = mk(pwrite(fd[s], wbuf, l2, (off_t)(l1 / 2)));
	cmp("pwrite after unlink", r[0], r[1]);
	for (int s = 0; s < 2; s++)
		r[s] = mk(pread(fd[s], rbuf[s], MAXIO, 0));
	cmp("pread after unlink", r[0], r[1]);
	if (r[0].ret > 0 && memcmp(rbuf[0], rbuf[1], (size_t)r[0].ret))
		diverge("pread after unlink: data differ");
	for (int s = 0; s < 2; s++)
		r[s] = mk(fstat(fd[s], &st[s]));
	cmp("fstat after unlink", r[0], r[1]);
	if (!r[0].ret)
		cmp_stat("fstat after unlink", &st[0], &st[1]);
	for (int s = 0; s < 2; s++)
		r[s] = mk(close(fd[s]));
	cmp("close", r[0], r[1]);
}

/*
 * Many entries in one directory, so that it grows past its first level of
 * hash buckets (about 400 short names): create a batch of files w0000..
 * w1499 in a directory, or unlink some, or rename some over others.  The
 * w names are not picked by the other operations.
 */
static void op_bulk(void)
{
	char d[MAXREL], a[MAXREL], b[MAXREL];
	const struct ent *e = pick_existing(F_DIR);
	unsigned int what = (unsigned int)rnd(3), n = 50 + (unsigned int)rnd(400);
	R r[2];
	bool created = false;

	strcpy(d, e && strlen(e->rel) < LONGREL ? e->rel : prefix);
	setdesc("bulk %s %u in '%s'", what == 0 ? "create" : what == 1 ? "unlink" : "rename", n, P(d));
	for (unsigned int i = 0; i < n; i++) {
		char na[16], nb[16];
		snprintf(na, sizeof(na), "w%04u", (unsigned int)rnd(1500));
		snprintf(nb, sizeof(nb), "w%04u", (unsigned int)rnd(1500));
		join(a, d, na);
		join(b, d, nb);
		for (int s = 0; s < 2; s++) {
			enter(s);
			if (what == 0) {
				int fd = open(a, O_CREAT | O_WRONLY | O_NONBLOCK, 0644);
				r[s] = mkfd(fd);
				if (fd >= 0)
					close(fd);
			} else if (what == 1) {
				r[s] = mk(unlink(a));
			} else {
				r[s] = mk(rename(a, b));
			}
		}
		snprintf(desc + strlen(desc), 64, " (at %s %s)", na, what == 2 ? nb : "");
		cmp(what == 0 ? "create" : what == 1 ? "unlink" : "rename", r[0], r[1]);
		desc[strcspn(desc, "(")] = '\0';
		created |= what == 0 && r[0].ret == 0;
	}
	if (created) {
		parent_of(a, b);
		check_recent(b, "bulk create: directory");
	}
}

/* ---- descriptors kept across operations ---------------------------------------------- */

static struct {
	int fd[2];
	char rel[MAXREL];
	bool app;
} fds[NFDS];

static void fd_close_slot(int k)
{
	R r[2];
	if (fds[k].fd[0] < 0)
		return;
	for (int s = 0; s < 2; s++)
		r[s] = mk(close(fds[k].fd[s]));
	fds[k].fd[0] = fds[k].fd[1] = -1;
	cmp("close", r[0], r[1]);
}

static int fd_any(void)
{
	int k = (int)rnd(NFDS);
	for (int i = 0; i < NFDS; i++)
		if (fds[(k + i) % NFDS].fd[0] >= 0)
			return (k + i) % NFDS;
	return -1;
}

static void op_fd_open(void)
{
	char p[MAXREL];
	R r[2];
	int k = (int)rnd(NFDS);
	int flags = O_RDWR | O_NONBLOCK | (chance(30) ? O_CREAT : 0);
	bool app = chance(15);

	pick(p, F_REG);
	if (is_device(p))
		return;
	if (app)
		flags |= O_APPEND;
	setdesc("fd[%d] = open '%s' O_RDWR%s%s", k, p, flags & O_CREAT ? "|O_CREAT" : "",
		app ? "|O_APPEND" : "");
	fd_close_slot(k);
	int fd[2];
	for (int s = 0; s < 2; s++) {
		enter(s);
		fd[s] = open(p, flags, 0600);
		r[s] = mkfd(fd[s]);
	}
	if (flags & O_CREAT)
		ents_dirty = true;
	if (!same(r[0], r[1])) {
		for (int s = 0; s < 2; s++)
			if (fd[s] >= 0)
				close(fd[s]);
	}
	cmp("open", r[0], r[1]);
	if (fd[0] < 0)
		return;
	fds[k].fd[0] = fd[0];
	fds[k].fd[1] = fd[1];
	fds[k].app = app;
	strcpy(fds[k].rel, p);
}

static void op_fd_write(void)
{
	int k = fd_any();
	R r[2];
	if (k < 0)
		return;
	struct stat st;
	uint64_t size = fstat(fds[k].fd[1], &st) ? 0 : (uint64_t)st.st_size;
	uint64_t off = rand_off(size);
	size_t len = rand_len();
	fill(wbuf, len, next64());
	setdesc("fd[%d] ('%s' when opened) pwrite off=%" PRIu64 " len=%zu%s", k, fds[k].rel, off,
		len, fds[k].app ? " (O_APPEND)" : "");
	for (int s = 0; s < 2; s++)
		r[s] = mk(pwrite(fds[k].fd[s], wbuf, len, (off_t)off));
	cmp("pwrite", r[0], r[1]);
}

static void op_fd_read(void)
{
	int k = fd_any();
	R r[2];
	if (k < 0)
		return;
	struct stat st;
	uint64_t size = fstat(fds[k].fd[1], &st) ? 0 : (uint64_t)st.st_size;
	uint64_t off = rnd(size + 4096);
	size_t len = 1 + rnd(chance(50) ? 16384 : MAXIO);
	setdesc("fd[%d] ('%s' when opened) pread off=%" PRIu64 " len=%zu", k, fds[k].rel, off, len);
	for (int s = 0; s < 2; s++)
		r[s] = mk(pread(fds[k].fd[s], rbuf[s], len, (off_t)off));
	cmp("pread", r[0], r[1]);
	if (r[0].ret > 0 && memcmp(rbuf[0], rbuf[1], (size_t)r[0].ret)) {
		size_t i = 0;
		while (rbuf[0][i] == rbuf[1][i])
			i++;
		diverge("pread: data differ at offset %" PRIu64 ": fs 0x%02x, ref 0x%02x", off + i,
			rbuf[0][i], rbuf[1][i]);
	}
}

static void op_fd_truncate(void)
{
	int k = fd_any();
	R r[2];
	if (k < 0)
		return;
	struct stat st;
	uint64_t size = fstat(fds[k].fd[1], &st) ? 0 : (uint64_t)st.st_size;
	uint64_t ns = rand_size(size);
	setdesc("fd[%d] ('%s' when opened) ftruncate %" PRIu64 " -> %" PRIu64, k, fds[k].rel, size, ns);
	for (int s = 0; s < 2; s++)
		r[s] = mk(ftruncate(fds[k].fd[s], (off_t)ns));
	cmp("ftruncate", r[0], r[1]);
}

static void op_fd_stat(void)
{
	int k = fd_any();
	R r[2];
	struct stat st[2];
	if (k < 0)
		return;
	setdesc("fd[%d] ('%s' when opened) fstat", k, fds[k].rel);
	for (int s = 0; s < 2; s++)
		r[s] = mk(fstat(fds[k].fd[s], &st[s]));
	cmp("fstat", r[0], r[1]);
	if (!r[0].ret)
		cmp_stat("fstat", &st[0], &st[1]);
}

static void op_fd_close(void)
{
	int k = fd_any();
	if (k < 0)
		return;
	setdesc("close fd[%d] ('%s' when opened)", k, fds[k].rel);
	fd_close_slot(k);
}

/* A directory descriptor in a slot: what happens relative to it after the
 * directory was renamed or removed. */
static void op_fd_opendir(void)
{
	char p[MAXREL];
	R r[2];
	int k = (int)rnd(NFDS), fd[2];

	pick(p, chance(10) ? F_ANY : F_DIR);
	setdesc("fd[%d] = open '%s' O_RDONLY|O_DIRECTORY", k, P(p));
	fd_close_slot(k);
	for (int s = 0; s < 2; s++) {
		enter(s);
		fd[s] = open(P(p), O_RDONLY | O_DIRECTORY);
		r[s] = mkfd(fd[s]);
	}
	if (!same(r[0], r[1]))
		for (int s = 0; s < 2; s++)
			if (fd[s] >= 0)
				close(fd[s]);
	cmp("open(O_DIRECTORY)", r[0], r[1]);
	if (fd[0] < 0)
		return;
	fds[k].fd[0] = fd[0];
	fds[k].fd[1] = fd[1];
	fds[k].app = false;
	strcpy(fds[k].rel, p);
}

/* Names (sorted, '/'-joined) from getdents64 on a descriptor, from offset 0. */
static long fd_names(int fd, char *out, size_t outlen)
{
	static char buf[32768];
	char *v[4096];
	static char store[4096][16];
	int n = 0;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -1;
	for (;;) {
		long got = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (got < 0)
			return -1;
		if (!got)
			break;
		for (long off = 0; off < got;) {
			struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; }
				*d = (void *)(buf + off);
			if (strcmp(d->name, ".") && strcmp(d->name, "..") && n < 4096) {
				snprintf(store[n], sizeof(store[n]), "%.15s", d->name);
				v[n] = store[n];
				n++;
			}
			off += d->reclen;
		}
	}
	qsort(v, (size_t)n, sizeof(v[0]), cmpstr);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		strncat(out, v[i], outlen - strlen(out) - 2);
		strcat(out, "/");
	}
	return n;
}

static void op_fd_dirop(void)
{
	int k = fd_any();
	R r[2];
	if (k < 0)
		return;
	const char *name = rand_name();
	unsigned int what = (unsigned int)rnd(5);
	int uflags = chance(30) ? AT_REMOVEDIR : 0;   /* drawn once: both sides alike */
	static const char *const wn[] = { "getdents", "openat(O_CREAT)", "mkdirat", "unlinkat", "fstatat" };
	setdesc("fd[%d] ('%s' when opened): %s '%s'%s", k, fds[k].rel, wn[what], what ? name : "",
		what == 3 && uflags ? " AT_REMOVEDIR" : "");
	if (what == 0) {
		static char l[2][65536];
		for (int s = 0; s < 2; s++) {
			long n = fd_names(fds[k].fd[s], l[s], sizeof(l[s]));
			r[s] = mk(n);
		}
		cmp("getdents64", r[0], r[1]);
		if (r[0].ret >= 0 && strcmp(l[0], l[1]))
			diverge("getdents64: fs [%.300s], ref [%.300s]", l[0], l[1]);
		return;
	}
	if (what == 1) {   /* never open a device node (the reference may allow it) */
		struct stat st;
		if (!fstatat(fds[k].fd[1], name, &st, 0) && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
			return;
	}
	for (int s = 0; s < 2; s++) {
		int dfd = fds[k].fd[s];
		switch (what) {
		case 1: {
			int fd = openat(dfd, name, O_CREAT | O_WRONLY | O_NONBLOCK, 0644);
			r[s] = mkfd(fd);
			if (fd >= 0)
				close(fd);
			break;
		}
		case 2: r[s] = mk(mkdirat(dfd, name, 0755)); break;
		case 3: r[s] = mk(unlinkat(dfd, name, uflags)); break;
		default: {
			struct stat st;
			r[s] = mk(fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW));
		}
		}
	}
	ents_dirty = true;
	cmp(wn[what], r[0], r[1]);
}

/* ---- the table ----------------------------------------------------------------------- */

struct op {
	const char *name;
	unsigned int weight;
	void (*fn)(void);
	bool off;
	long runs;
};

static struct op ops[] = {
	{ "create", 8, op_create, false, 0 },
	{ "write", 14, op_write, false, 0 },
	{ "read", 5, op_read, false, 0 },
	{ "truncate", 5, op_truncate, false, 0 },
	{ "mkdir", 6, op_mkdir, false, 0 },
	{ "rmdir", 4, op_rmdir, false, 0 },
	{ "unlink", 5, op_unlink, false, 0 },
	{ "rename", 6, op_rename, false, 0 },
	{ "rename_noreplace", 2, op_rename_noreplace, false, 0 },
	{ "rename_exchange", 3, op_rename_exchange, false, 0 },
	{ "link", 3, op_link, false, 0 },
	{ "symlink", 3, op_symlink, false, 0 },
	{ "readlink", 2, op_readlink, false, 0 },
	{ "chmod", 2, op_chmod, false, 0 },
	{ "chown", 1, op_chown, false, 0 },
	{ "mmap", 2, op_mmap, false, 0 },
	{ "utimens", 3, op_utimens, false, 0 },
	{ "setxattr", 4, op_setxattr, false, 0 },
	{ "getxattr", 2, op_getxattr, false, 0 },
	{ "listxattr", 1, op_listxattr, false, 0 },
	{ "removexattr", 2, op_removexattr, false, 0 },
	{ "fallocate", 4, op_fallocate, false, 0 },
	{ "mknod", 1, op_mknod, false, 0 },
	{ "fsync", 1, op_fsync, false, 0 },
	{ "stat", 4, op_stat, false, 0 },
	{ "readdir", 3, op_readdir, false, 0 },
	{ "verify", 2, op_verify, false, 0 },
	{ "open_trunc", 1, op_open_trunc, false, 0 },
	{ "unlink_open", 2, op_unlink_open, false, 0 },
	{ "bulk", 1, op_bulk, false, 0 },
	{ "fd_open", 2, op_fd_open, false, 0 },
	{ "fd_write", 3, op_fd_write, false, 0 },
	{ "fd_read", 2, op_fd_read, false, 0 },
	{ "fd_truncate", 1, op_fd_truncate, false, 0 },
	{ "fd_stat", 1, op_fd_stat, false, 0 },
	{ "fd_close", 2, op_fd_close, false, 0 },
	{ "fd_opendir", 1, op_fd_opendir, false, 0 },
	{ "fd_dirop", 2, op_fd_dirop, false, 0 },
};
#define NOPS_T (sizeof(ops) / sizeof(ops[0]))

/* ---- whole-tree comparison ------------------------------------------------------------ */

#define IMAP 65536
static uint64_t imap_k[2][IMAP], imap_v[2][IMAP];
static bool imap_used[2][IMAP];

/* Same inode on one side <=> same inode on the other: map both ways. */
static void ino_pair(const char *rel, uint64_t fsino, uint64_t refino)
{
	uint64_t k[2] = { refino, fsino }, v[2] = { fsino, refino };
	for (int m = 0; m < 2; m++) {
		size_t h = (size_t)((k[m] * 0x9e3779b97f4a7c15ull) >> 48) % IMAP;
		for (size_t i = 0; i < IMAP; i++, h = (h + 1) % IMAP) {
			if (!imap_used[m][h]) {
				imap_used[m][h] = true;
				imap_k[m][h] = k[m];
				imap_v[m][h] = v[m];
				break;
			}
			if (imap_k[m][h] == k[m]) {
				if (imap_v[m][h] != v[m])
					diverge("'%s': hard links differ: on %s it is inode %" PRIu64
						", which on %s belongs to another inode", P(rel),
						m ? "fs" : "ref", k[m], m ? "ref" : "fs");
				break;
			}
		}
	}
}

static void cmp_xattrs(const char *rel)
{
	static char lb[2][8192];
	char sl[2][4096];
	R r[2];

	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(llistxattr(P(rel), lb[s], sizeof(lb[s])));
	}
	cmp("llistxattr", r[0], r[1]);
	if (r[0].ret <= 0)
		return;
	for (int s = 0; s < 2; s++)
		sort_list(lb[s], r[s].ret, sl[s], sizeof(sl[s]));
	if (strcmp(sl[0], sl[1]))
		diverge("xattr names of '%s': fs [%s], ref [%s]", P(rel), sl[0], sl[1]);
	for (long i = 0; i < r[1].ret; i += (long)strlen(lb[1] + i) + 1) {
		const char *name = lb[1] + i;
		R g[2];
		for (int s = 0; s < 2; s++) {
			enter(s);
			g[s] = mk(lgetxattr(P(rel), name, rbuf[s], 65536));
		}
		cmp("lgetxattr", g[0], g[1]);
		if (g[0].ret > 0 && memcmp(rbuf[0], rbuf[1], (size_t)g[0].ret))
			diverge("xattr %s of '%s': values differ", name, P(rel));
	}
}

static void compare_tree(const char *rel, bool times, bool top)
{
	struct stat st[2];
	R r[2];

	snprintf(desc, sizeof(desc), "comparing '%s'", P(rel));
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(lstat(P(rel), &st[s]));
	}
	cmp("lstat", r[0], r[1]);
	if (r[0].ret)
		return;
	if (top) {   /* the roots' own modes may differ (mktemp -d makes 0700) */
		st[0].st_mode = (st[0].st_mode & S_IFMT) | (st[1].st_mode & 07777);
	}
	cmp_stat("lstat", &st[0], &st[1]);
	ino_pair(rel, st[0].st_ino, st[1].st_ino);
	if (times && (st[0].st_mtim.tv_sec != st[1].st_mtim.tv_sec ||
		      st[0].st_mtim.tv_nsec != st[1].st_mtim.tv_nsec))
		diverge("mtime of '%s': fs %lld.%09ld, ref %lld.%09ld", P(rel),
			(long long)st[0].st_mtim.tv_sec, st[0].st_mtim.tv_nsec,
			(long long)st[1].st_mtim.tv_sec, st[1].st_mtim.tv_nsec);
	if (S_ISREG(st[0].st_mode))
		compare_contents(rel, "read whole file");
	if (S_ISLNK(st[0].st_mode)) {
		char b[2][MAXREL + 1];
		for (int s = 0; s < 2; s++) {
			enter(s);
			r[s] = mk(readlink(rel, b[s], MAXREL));
		}
		cmp("readlink", r[0], r[1]);
		if (r[0].ret > 0 && memcmp(b[0], b[1], (size_t)r[0].ret))
			diverge("symlink '%s': targets differ: fs '%.*s', ref '%.*s'", rel,
				(int)r[0].ret, b[0], (int)r[1].ret, b[1]);
	}
	if (S_ISREG(st[0].st_mode) || S_ISDIR(st[0].st_mode))
		cmp_xattrs(rel);
	if (!S_ISDIR(st[0].st_mode))
		return;
	struct dent *v[2];
	long n[2];
	for (int s = 0; s < 2; s++) {
		enter(s);
		n[s] = list_dir(rel, &v[s]);
		if (n[s] < 0)
			diverge("readdir '%s' failed on %s: %s", P(rel), side[s], strerror((int)-n[s]));
	}
	cmp_lists(rel, v[0], n[0], v[1], n[1]);
	for (long i = 0; i < n[1]; i++) {
		char c[MAXREL];
		join(c, rel, v[1][i].name);
		if (strlen(c) < MAXREL - 1)
			compare_tree(c, times, false);
	}
	free_list(v[0], n[0]);
	free_list(v[1], n[1]);
}

static void compare_all(const char *rel, bool times)
{
	memset(imap_used, 0, sizeof(imap_used));
	long save = cur_op;
	cur_op = -1;
	compare_tree(rel, times, !*rel);
	cur_op = save;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

/* The same timestamps everywhere on both sides, deepest entries first. */
static void stamp(const char *rel)
{
	struct stat st;
	enter(1);
	if (lstat(P(rel), &st))
		return;
	if (S_ISDIR(st.st_mode)) {
		struct dent *v;
		long n = list_dir(rel, &v);
		for (long i = 0; i < n; i++) {
			char c[MAXREL];
			join(c, rel, v[i].name);
			if (strlen(c) < MAXREL - 1)
				stamp(c);
		}
		if (n > 0)
			free_list(v, n);
	}
	uint64_t h = hash_str(rel) ^ g_seed;
	struct timespec ts[2] = {
		{ (time_t)(1500000000 + h % 100000000), (long)((h >> 20) % 1000000000) },
		{ (time_t)(1600000000 + (h >> 7) % 100000000), (long)((h >> 33) % 1000000000) },
	};
	R r[2];
	snprintf(desc, sizeof(desc), "utimensat '%s' (final timestamps)", P(rel));
	for (int s = 0; s < 2; s++) {
		enter(s);
		r[s] = mk(utimensat(AT_FDCWD, P(rel), ts, AT_SYMLINK_NOFOLLOW));
	}
	cmp("utimensat", r[0], r[1]);
}

/* ---- the run -------------------------------------------------------------------------- */

static void drop_caches(void)
{
	int fd = open(rootname[0], O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		syncfs(fd);
		close(fd);
	}
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0 || write(fd, "3", 1) != 1) {
		if (!drop_warned)
			fprintf(stderr, "fsops: cannot drop caches (not root?): reads may come from the page cache\n");
		drop_warned = true;
	}
	if (fd >= 0)
		close(fd);
}

/* --concurrent: this worker's chunks of the shared file, two passes */
static int shfd[2] = { -1, -1 };
static long *sh_plan;
static long sh_n, sh_next;

static void shared_step(void)
{
	if (sh_next >= sh_n)
		return;
	long chunk = sh_plan[sh_next];
	int pass = sh_next >= sh_n / 2;
	uint8_t b[SHARED_CHUNK];
	R r[2];
	fill(b, sizeof(b), (uint64_t)chunk * 2 + (uint64_t)pass + 77);
	setdesc("shared: pwrite chunk %ld (pass %d) at %ld len %d", chunk, pass,
		chunk * SHARED_CHUNK, SHARED_CHUNK);
	for (int s = 0; s < 2; s++)
		r[s] = mk(pwrite(shfd[s], b, sizeof(b), (off_t)chunk * SHARED_CHUNK));
	cmp("pwrite (shared)", r[0], r[1]);
	sh_next++;
}

static void run_ops(long nops, long first)
{
	unsigned int total = 0;
	for (size_t i = 0; i < NOPS_T; i++)
		if (!ops[i].off)
			total += ops[i].weight;
	if (!total)
		die("every operation is left out");
	for (int k = 0; k < NFDS; k++)
		fds[k].fd[0] = fds[k].fd[1] = -1;
	for (long i = 0; i < nops; i++) {
		cur_op = first + i;
		desc[0] = '\0';
		if (drop_every && i && i % drop_every == 0 && worker <= 0) {
			setdesc("sync and drop caches");
			drop_caches();
		}
		if (compare_every && i && i % compare_every == 0) {
			for (int k = 0; k < NFDS; k++)
				fd_close_slot(k);
			setdesc("compare the trees");
			compare_all(prefix, false);
		}
		if (shfd[0] >= 0 && chance(100 * 2 * SHARED_PER_WORKER / (unsigned int)(nops + 1) + 1))
			shared_step();
		unsigned int w = (unsigned int)rnd(total);
		size_t j = 0;
		for (;; j++) {
			if (ops[j].off)
				continue;
			if (w < ops[j].weight)
				break;
			w -= ops[j].weight;
		}
		now(&t_op);
		ops[j].runs++;
		ops[j].fn();
	}
	cur_op = first + nops;
	while (shfd[0] >= 0 && sh_next < sh_n)
		shared_step();
	for (int k = 0; k < NFDS; k++)
		fd_close_slot(k);
}

static void open_root(int s, const char *path)
{
	rootname[s] = path;
	rootfd[s] = open(path, O_RDONLY | O_DIRECTORY);
	if (rootfd[s] < 0)
		die("cannot open %s: %s", path, strerror(errno));
}

static void shuffle(long *v, long n)
{
	for (long i = n - 1; i > 0; i--) {
		long j = (long)rnd((uint64_t)i + 1), t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

static int run_concurrent(int n, long nops)
{
	long chunks = (long)n * SHARED_PER_WORKER;
	R r[2];

	cur_op = 0;
	setdesc("concurrent setup");
	for (int w = 0; w < n; w++) {
		char d[32];
		snprintf(d, sizeof(d), "t%d", w);
		for (int s = 0; s < 2; s++) {
			enter(s);
			r[s] = mk(mkdir(d, 0755));
		}
		cmp("mkdir", r[0], r[1]);
	}
	for (int s = 0; s < 2; s++) {
		enter(s);
		int fd = open("shared", O_CREAT | O_EXCL | O_RDWR, 0644);
		r[s] = mkfd(fd);
		if (fd >= 0)
			close(fd);
	}
	cmp("create shared", r[0], r[1]);
	fflush(stdout);
	pid_t *pids = calloc((size_t)n, sizeof(*pids));
	for (int w = 0; w < n; w++) {
		pids[w] = fork();
		if (pids[w] < 0)
			die("fork: %s", strerror(errno));
		if (pids[w] == 0) {
			worker = w;
			snprintf(prefix, sizeof(prefix), "t%d", w);
			rng = g_seed * 1000003 + (uint64_t)w + 1;
			for (int s = 0; s < 2; s++) {
				enter(s);
				shfd[s] = open("shared", O_RDWR);
				if (shfd[s] < 0)
					die("open shared: %s", strerror(errno));
			}
			sh_n = 2 * SHARED_PER_WORKER;
			sh_plan = calloc((size_t)sh_n, sizeof(*sh_plan));
			for (long i = 0; i < SHARED_PER_WORKER; i++)
				sh_plan[i] = sh_plan[SHARED_PER_WORKER + i] = w + i * n;
			shuffle(sh_plan, SHARED_PER_WORKER);
			shuffle(sh_plan + SHARED_PER_WORKER, SHARED_PER_WORKER);
			run_ops(nops / n, 0);
			close(shfd[0]);
			close(shfd[1]);
			fflush(stdout);
			_exit(0);
		}
	}
	int bad = 0;
	for (int w = 0; w < n; w++) {
		int st;
		if (waitpid(pids[w], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "fsops: worker %d failed (status 0x%x)\n", w, st);
			bad = 1;
		}
	}
	free(pids);
	if (bad)
		return 1;
	/* the shared file: every chunk holds its second pass, on both sides */
	cur_op = nops;
	setdesc("verify the shared file");
	drop_caches();
	uint8_t b[SHARED_CHUNK];
	for (int s = 0; s < 2; s++) {
		struct stat st;
		enter(s);
		int fd = open("shared", O_RDONLY);
		if (fd < 0 || fstat(fd, &st))
			diverge("shared file on %s: %s", side[s], strerror(errno));
		if (st.st_size != chunks * SHARED_CHUNK)
			diverge("shared file on %s: size %lld, expected %ld", side[s],
				(long long)st.st_size, chunks * SHARED_CHUNK);
		for (long k = 0; k < chunks; k++) {
			fill(b, sizeof(b), (uint64_t)k * 2 + 1 + 77);
			ssize_t got = pread(fd, rbuf[0], SHARED_CHUNK, (off_t)k * SHARED_CHUNK);
			if (got != SHARED_CHUNK || memcmp(rbuf[0], b, SHARED_CHUNK)) {
				size_t i = 0;
				while (got == SHARED_CHUNK && i < SHARED_CHUNK && rbuf[0][i] == b[i])
					i++;
				diverge("shared file on %s: chunk %ld (written by worker %ld) wrong at "
					"offset %ld (read %zd)", side[s], k, k % n,
					k * SHARED_CHUNK + (long)i, got);
			}
		}
		close(fd);
	}
	return 0;
}

/* ---- --dio-race: O_DIRECT reads racing O_DIRECT rewrites of the same blocks ---------- */

#define RACE_BLOCKS 16

static void race_pat(uint8_t *b, unsigned int blk, unsigned int round)
{
	for (unsigned int i = 0; i < 4096; i += 8) {
		b[i] = 0xa5;
		b[i + 1] = (uint8_t)blk;
		b[i + 2] = (uint8_t)round;
		b[i + 3] = (uint8_t)(round >> 8);
		memset(b + i + 4, 0x5a, 4);
	}
}

/*
 * A writer rewrites 16 blocks of DIR/dio-race round after round (whole
 * 4 KiB blocks, O_DIRECT); three readers read them with O_DIRECT.  Every
 * block read must hold one whole round's pattern (the old or the new
 * data), never zeros or a mix.  Exit 1 if any read did not.
 */
static int dio_race(const char *dir, unsigned int rounds)
{
	char path[MAXREL];
	uint8_t *b, *e;
	int fd;

	snprintf(path, sizeof(path), "%s/dio-race", dir);
	if (posix_memalign((void **)&b, 4096, 4096) || posix_memalign((void **)&e, 4096, 4096))
		die("out of memory");
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_DIRECT, 0644);
	if (fd < 0)
		die("open %s with O_DIRECT: %s", path, strerror(errno));
	for (unsigned int k = 0; k < RACE_BLOCKS; k++) {
		race_pat(b, k, 0);
		if (pwrite(fd, b, 4096, (off_t)k * 4096) != 4096)
			die("pwrite: %s", strerror(errno));
	}
	close(fd);
	int pfd[2];
	if (pipe(pfd))
		die("pipe: %s", strerror(errno));
	pid_t rd[3];
	for (int i = 0; i < 3; i++) {
		rd[i] = fork();
		if (rd[i] == 0) {   /* reader: until the writer closes the pipe */
			close(pfd[1]);
			fcntl(pfd[0], F_SETFL, O_NONBLOCK);
			int f = open(path, O_RDONLY | O_DIRECT);
			long bad = 0, reads = 0;
			uint64_t r = (uint64_t)i * 7919 + 1;
			char c;
			while (read(pfd[0], &c, 1) < 0 && errno == EAGAIN) {
				r = r * 6364136223846793005ull + 1442695040888963407ull;
				unsigned int k = (unsigned int)(r >> 33) % RACE_BLOCKS;
				ssize_t n = pread(f, b, 4096, (off_t)k * 4096);
				reads++;
				if (n == 4096) {
					race_pat(e, k, (unsigned int)(b[2] | b[3] << 8));
					if (!memcmp(b, e, 4096))
						continue;
				}
				if (bad++ < 3) {
					size_t z = 0;
					while (z < 4096 && !b[z])
						z++;
					fprintf(stderr, "fsops: dio-race: block %u read %zd bytes, not a whole "
						"round's data (%s; first bytes %02x %02x %02x %02x)\n", k, n,
						z == 4096 ? "all zeros" : "mixed", b[0], b[1], b[2], b[3]);
				}
			}
			printf("fsops: dio-race reader %d: %ld reads, %ld bad\n", i, reads, bad);
			fflush(stdout);
			_exit(bad ? 1 : 0);
		}
	}
	close(pfd[0]);
	fd = open(path, O_WRONLY | O_DIRECT);
	for (unsigned int r = 1; r <= rounds; r++) {
		unsigned int k = r % RACE_BLOCKS;
		race_pat(b, k, r);
		if (pwrite(fd, b, 4096, (off_t)k * 4096) != 4096)
			die("pwrite: %s", strerror(errno));
	}
	close(fd);
	close(pfd[1]);
	int ret = 0;
	for (int i = 0; i < 3; i++) {
		int st;
		waitpid(rd[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			ret = 1;
	}
	unlink(path);
	free(b);
	free(e);
	return ret;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fsops [--concurrent N] [--drop-every N] [--compare-every N] [--no OP,...] [-v]\n"
		"             FSDIR REFDIR SEED NOPS\n"
		"       fsops --compare FSDIR REFDIR\n"
		"       fsops --dio-race FSDIR [ROUNDS]\n"
		"operations:");
	for (size_t i = 0; i < NOPS_T; i++)
		fprintf(stderr, " %s", ops[i].name);
	fprintf(stderr, "\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int conc = 0;
	bool compare_only = false;
	int i;

	if (argc >= 3 && !strcmp(argv[1], "--dio-race"))
		return dio_race(argv[2], argc > 3 ? (unsigned int)atoi(argv[3]) : 3000);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--concurrent") && i + 1 < argc)
			conc = atoi(argv[++i]);
		else if (!strcmp(a, "--compare"))
			compare_only = true;
		else if (!strcmp(a, "--drop-every") && i + 1 < argc)
			drop_every = atol(argv[++i]);
		else if (!strcmp(a, "--compare-every") && i + 1 < argc)
			compare_every = atol(argv[++i]);
		else if (!strcmp(a, "-v"))
			verbose = 1;
		else if (!strcmp(a, "--no") && i + 1 < argc) {
			char *list = strdup(argv[++i]), *save = NULL;
			for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				size_t j;
				for (j = 0; j < NOPS_T && strcmp(ops[j].name, t); j++)
					;
				if (j == NOPS_T)
					die("unknown operation %s", t);
				ops[j].off = true;
			}
			free(list);
		} else
			usage();
	}
	if (argc - i != (compare_only ? 2 : 4))
		usage();
	open_root(0, argv[i]);
	open_root(1, argv[i + 1]);
	umask(0);
	setvbuf(stdout, NULL, _IOLBF, 0);

	memset(long100, 'm', 100);
	memset(long255, 'L', 255);
	for (int k = 0; k < NWIDE; k++)
		snprintf(wide[k], sizeof(wide[k]), "n%03d", k);
	snprintf(xlong, sizeof(xlong), "user.%0100d", 7);
	wbuf = malloc(MAXIO);
	rbuf[0] = malloc(MAXIO + 1);
	rbuf[1] = malloc(MAXIO + 1);
	if (!wbuf || !rbuf[0] || !rbuf[1])
		die("out of memory");

	if (compare_only) {
		drop_caches();
		compare_all("", true);
		printf("fsops: trees identical (%s, %s)\n", rootname[0], rootname[1]);
		return 0;
	}
	g_seed = strtoull(argv[i + 2], NULL, 0);
	long nops = atol(argv[i + 3]);
	rng = g_seed;
	struct timespec t0, t1;
	now(&t0);
	if (conc > 0) {
		if (run_concurrent(conc, nops))
			return 1;
	} else {
		run_ops(nops, 0);
	}
	cur_op = nops;
	stamp("");
	drop_caches();
	compare_all("", true);
	now(&t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (conc > 0)
		printf("fsops: %ld operations in %d processes, seed %" PRIu64 ", %.1f s: no divergence\n",
		       nops, conc, g_seed, secs);
	else {
		printf("fsops: %ld operations, seed %" PRIu64 ", %.1f s: no divergence (", nops, g_seed, secs);
		for (size_t j = 0; j < NOPS_T; j++)
			printf("%s%s %ld", j ? ", " : "", ops[j].name, ops[j].runs);
		printf(")\n");
	}
	return 0;
}
