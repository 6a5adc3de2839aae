/*
 * killload.c - the workload and the checker of tests/fs/check-kill.sh.
 *
 * The script kills the zlfs daemon (SIGKILL) at random moments; this program
 * drives random file operations through the mount meanwhile and keeps a
 * model of the tree: every file's bytes, its names, and what the filesystem
 * has promised durable.  It lives across all the kills (the script talks to
 * it on stdin and stdout), so the model carries over from mount to mount.
 *
 *   killload MNT SEED [--sync-promise] [--log FILE]
 *
 * Commands on stdin, one a line, each answered by lines on stdout; a failure
 * is one line "FAIL ..." naming the path, what was expected and what is there:
 *   setup            make the fixed directories, fsync them        -> "ok"
 *   run ITER FILL ARM [P]
 *                    random operations; with FILL > 0 big files are grown
 *                    until the volume is FILL% full and then overwritten, so
 *                    GC has work.  After ARM operations (counted once the
 *                    volume is full; with P = 1 at the first fsync, fdatasync
 *                    or fsync of a directory after them) "armed N" is
 *                    printed; the operations go on until the mount dies (the
 *                    script kills the daemon), then every descriptor is
 *                    closed                                   -> "stopped ..."
 *   check ITER       after a remount: every promised file must be there byte
 *                    for byte; then every file present is read whole (an I/O
 *                    error fails) and the model becomes what is there
 *                                                        -> "ok CHECKED ..."
 *   quit
 * FILE gets one line per operation ("ITER.OP op path ... -> result").
 *
 * What counts as promised (what F2FS and zlfs keep in either fsync mode):
 *   - a file's content and size, by fsync or fdatasync of it, until the next
 *     change of its content or size;
 *   - a name's binding to a file, by fsync of the directory holding it, or by
 *     fsync (not fdatasync) of the file while it still has the name it was
 *     created under (F2FS recovers a new file's dentry with its fsync), until
 *     the name is unlinked, renamed or renamed over.
 * A name is checked when both its binding and its file's content are
 * promised.  An operation takes back the promises it may break before it is
 * issued (a kill in the middle leaves either state), so no promise can be
 * stale.  sync(2) and syncfs(2) flush the kernel's writeback cache into the
 * daemon but promise nothing unless --sync-promise is given: the kernel
 * sends FUSE_SYNCFS only to virtiofs servers, a zlfs daemon never sees them.
 *
 * Everything random comes from SEED and ITER (the timing of the kill does
 * not), so a failing run is replayed with the same seed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MAXSZ   (4u << 20)     /* a small file's largest size */
#define BIGSZ   (48u << 20)    /* a big file's */
#define MAXFDS  12             /* descriptors kept open between operations */
#define MAXINO  256

enum { NDIR = 5, NNAME = 8, NBIG = 6, NEXTRA = 3, BIGDIR = 3 };
static const char *const dirs[NDIR] = { "", "d0", "d1", "d2", "d1/s" };
#define NSMALL (NDIR * NNAME)
#define NSLOT  (NSMALL + NBIG)

enum { OK, STOP, BAD };        /* an operation's outcome: done, mount dead, failure */

struct ino {
	unsigned id;               /* the model's number, in the log */
	unsigned char *buf;
	size_t size, cap;
	int fd;                    /* kept open, or -1 */
	int nlink;                 /* names in the model */
	int birth;                 /* the slot it was created under while it has it, or -1 */
	bool durable;              /* content and size promised */
	bool big;
	bool kept;                 /* check: verified, carried over */
	ino_t st;                  /* check: the inode number seen */
	char why[40];              /* what made the content durable */
};

struct slot {                  /* a name the workload may use */
	char rel[24];
	int dir;
	struct ino *ino;
	bool durable;              /* the binding is promised */
	char why[40];
};

static struct slot slots[NSLOT];
static struct ino *inos[MAXINO];
static bool extra[NEXTRA];     /* empty directories e0.. in the root */
static const char *mnt;
static uint64_t seed0, rs;
static bool sync_promise;
static FILE *oplog;
static unsigned cur_iter;
static unsigned long cur_op;
static unsigned next_id = 1;
static int nfds;
static unsigned long npromise; /* successful fsync, fdatasync, fsync of a directory */
static char failmsg[4096];
static unsigned char *iobuf;   /* BIGSZ bytes */

/* ---- randomness, hashing -------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rnd64(void)
{
	rs += 0x9e3779b97f4a7c15ull;
	return mix64(rs);
}

static size_t rnd(size_t n)
{
	return n ? (size_t)(rnd64() % n) : 0;
}

static bool chance(unsigned pct)
{
	return rnd(100) < pct;
}

/* 1..max, most of them small: the size of the power of two is uniform */
static size_t rnd_len(size_t max)
{
	size_t l = 1 + rnd((size_t)2 << rnd(18));
	return l > max ? max : l;
}

static void gen(unsigned char *p, size_t n)
{
	while (n) {
		uint64_t w = rnd64();
		size_t k = n < 8 ? n : 8;
		memcpy(p, &w, k);
		p += k;
		n -= k;
	}
}

static uint64_t hash(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* ---- reporting ------------------------------------------------------------------------ */

static void logop(const char *fmt, ...)
{
	va_list ap;

	if (!oplog)
		return;
	fprintf(oplog, "%u.%lu ", cur_iter, cur_op);
	va_start(ap, fmt);
	vfprintf(oplog, fmt, ap);
	va_end(ap);
	fputc('\n', oplog);
	fflush(oplog);
}

static int fail(const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(failmsg, sizeof(failmsg), "seed=%llu iter=%u op=%lu: ",
		     (unsigned long long)seed0, cur_iter, cur_op);
	va_start(ap, fmt);
	vsnprintf(failmsg + n, sizeof(failmsg) - n, fmt, ap);
	va_end(ap);
	logop("FAIL %s", failmsg);
	return BAD;
}

static void full(char *out, size_t n, const char *rel)
{
	snprintf(out, n, "%s/%s", mnt, rel);
}

/* the mount answers: the daemon is alive */
static bool alive(void)
{
	struct statvfs s;
	return statvfs(mnt, &s) == 0;
}

/* An error: the end of the run if the mount died, else a failure. */
static int err_of(const char *what, const char *rel, int e)
{
	logop("%s %s -> %s", what, rel, strerror(e));
	if (e == ENOTCONN || e == ECONNABORTED || !alive())
		return STOP;
	return fail("%s path=%s: %s (the daemon is alive)", what, rel, strerror(e));
}

/* ---- the model ------------------------------------------------------------------------ */

static struct ino *ino_new(bool big)
{
	for (int i = 0; i < MAXINO; i++) {
		if (inos[i])
			continue;
		struct ino *in = calloc(1, sizeof(*in));
		if (!in) {
			perror("calloc");
			exit(2);
		}
		in->id = next_id++;
		in->fd = -1;
		in->birth = -1;
		in->big = big;
		inos[i] = in;
		return in;
	}
	return NULL;
}

/* forget a file that has no name left and no descriptor */
static void ino_put(struct ino *in)
{
	if (in->nlink > 0 || in->fd >= 0)
		return;
	for (int i = 0; i < MAXINO; i++)
		if (inos[i] == in)
			inos[i] = NULL;
	free(in->buf);
	free(in);
}

static void ino_reserve(struct ino *in, size_t n)
{
	if (n <= in->cap)
		return;
	size_t c = in->cap ? in->cap : 4096;
	while (c < n)
		c *= 2;
	in->buf = realloc(in->buf, c);
	if (!in->buf) {
		perror("realloc");
		exit(2);
	}
	in->cap = c;
}

/* new size, zeros after the old end */
static void ino_resize(struct ino *in, size_t n)
{
	ino_reserve(in, n);
	if (n > in->size)
		memset(in->buf + in->size, 0, n - in->size);
	in->size = n;
}

static void ino_write(struct ino *in, size_t off, const unsigned char *p, size_t n)
{
	if (off + n > in->size)
		ino_resize(in, off + n);
	memcpy(in->buf + off, p, n);
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* a slot's name is gone from the model */
static void slot_clear(int s)
{
	struct ino *in = slots[s].ino;

	slots[s].ino = NULL;
	slots[s].durable = false;
	if (!in)
		return;
	if (in->birth == s)
		in->birth = -1;
	in->nlink--;
	ino_put(in);
}

static void slot_set(int s, struct ino *in)
{
	slots[s].ino = in;
	slots[s].durable = false;
	in->nlink++;
}

static bool slot_big(int s)
{
	return s >= NSMALL;
}

/* a random slot (uniform): used (want 1), free (want 0) or either (want -1), of a kind */
static int pick_slot(bool big, int want)
{
	int cand[NSLOT], n = 0;

	for (int s = big ? NSMALL : 0; s < (big ? NSLOT : NSMALL); s++)
		if (want < 0 || (want == 1) == (slots[s].ino != NULL))
			cand[n++] = s;
	return n ? cand[rnd(n)] : -1;
}

/* a random file (uniform) of a kind (big: 1, small: 0, any: -1), named or
 * not; hot: only the hot third (by model number) */
static struct ino *pick_in(int big, bool hot)
{
	struct ino *cand[MAXINO];
	int n = 0;

	for (int i = 0; i < MAXINO; i++) {
		struct ino *in = inos[i];
		if (in && (big < 0 || in->big == (big == 1)) && (!hot || in->id % 3 == 0))
			cand[n++] = in;
	}
	return n ? cand[rnd(n)] : NULL;
}

static struct ino *pick_ino(int big)
{
	return pick_in(big, false);
}

/* A small file to change: mostly one of the hot third, so the others keep
 * their promises for a while and get checked. */
static struct ino *pick_mod(void)
{
	struct ino *in = chance(85) ? pick_in(0, true) : NULL;
	return in ? in : pick_in(0, false);
}

/* a random name of a file, or NULL (open only by descriptor) */
static const char *ino_name(struct ino *in)
{
	int cand[NSLOT], n = 0;

	for (int s = 0; s < NSLOT; s++)
		if (slots[s].ino == in)
			cand[n++] = s;
	return n ? slots[cand[rnd(n)]].rel : NULL;
}

static const char *ino_label(struct ino *in)
{
	static char b[64];
	const char *nm = ino_name(in);

	snprintf(b, sizeof(b), "%s#%u", nm ? nm : "(unlinked)", in->id);
	return b;
}

/* ---- descriptors ---------------------------------------------------------------------- */

/* A file's descriptor: its kept one, or a new one (kept, or closed by
 * fd_done).  -1 and errno on failure. */
static int fd_get(struct ino *in, bool *tmp)
{
	char p[PATH_MAX];
	const char *nm;
	int fd;

	*tmp = false;
	if (in->fd >= 0)
		return in->fd;
	nm = ino_name(in);        /* a file without a name always has a descriptor */
	full(p, sizeof(p), nm);
	fd = open(p, O_RDWR);
	if (fd < 0)
		return -1;
	if (nfds < MAXFDS && chance(50)) {
		in->fd = fd;
		nfds++;
	} else {
		*tmp = true;
	}
	return fd;
}

static int discard(struct ino *in);

/* An operation on a file failed with e: ENOSPC leaves its content unknown
 * (the writeback cache reports it late), so the file goes; else err_of. */
static int failed(const char *what, struct ino *in, int e)
{
	if (e == ENOSPC) {
		logop("%s %s -> ENOSPC, the file goes", what, ino_label(in));
		return discard(in);
	}
	return err_of(what, ino_label(in), e);
}

/* close a descriptor fd_get made for one operation */
static int fd_done(struct ino *in, int fd, bool tmp, int ret)
{
	if (!tmp)
		return ret;
	if (close(fd) && ret == OK)
		return failed("close", in, errno);
	return ret;
}

static int drop_fd(struct ino *in)
{
	int e = 0;

	if (in->fd < 0)
		return OK;
	if (close(in->fd))
		e = errno;
	in->fd = -1;
	nfds--;
	if (e && e != ENOSPC) {
		int r = err_of("close", ino_label(in), e);
		ino_put(in);
		return r;
	}
	if (e)
		return discard(in);
	ino_put(in);
	return OK;
}

/* remove a file whose content is unknown: every name, the descriptor */
static int discard(struct ino *in)
{
	char p[PATH_MAX];

	in->durable = false;
	in->nlink++;               /* held while the names go */
	if (in->fd >= 0) {
		close(in->fd);
		in->fd = -1;
		nfds--;
	}
	for (int s = 0; s < NSLOT; s++) {
		if (slots[s].ino != in)
			continue;
		slots[s].durable = false;
		full(p, sizeof(p), slots[s].rel);
		if (unlink(p) && errno != ENOENT) {
			int e = errno;
			in->nlink--;
			return err_of("unlink (discard)", slots[s].rel, e);
		}
		slot_clear(s);
	}
	in->nlink--;
	ino_put(in);
	return OK;
}

/* ---- I/O helpers ---------------------------------------------------------------------- */

static int pwrite_all(int fd, const unsigned char *p, size_t n, size_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		off += (size_t)w;
	}
	return 0;
}

/* up to n bytes from off; the count, or -1 and errno */
static ssize_t pread_all(int fd, unsigned char *p, size_t n, size_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, p + got, n - got, (off_t)(off + got));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* a whole file into *buf (malloc'd), its size in *n; 0, or an errno */
static int slurp(const char *path, unsigned char **buf, size_t *n, struct stat *st)
{
	int fd = open(path, O_RDONLY);
	size_t cap, got = 0;
	unsigned char *b;

	*buf = NULL;
	*n = 0;
	if (fd < 0)
		return errno;
	if (fstat(fd, st)) {
		int e = errno;
		close(fd);
		return e;
	}
	cap = (size_t)st->st_size + 4096;
	b = malloc(cap);
	if (!b) {
		perror("malloc");
		exit(2);
	}
	for (;;) {
		if (got == cap) {
			cap *= 2;
			b = realloc(b, cap);
			if (!b) {
				perror("realloc");
				exit(2);
			}
		}
		ssize_t r = read(fd, b + got, cap - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(b);
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*buf = b;
	*n = got;
	return 0;
}

/* ---- operations ----------------------------------------------------------------------- */

/* write len random bytes at off (the content promise goes first) */
static int write_at(struct ino *in, size_t off, size_t len, const char *how)
{
	bool tmp;
	int fd, r = OK;

	if (!len)
		return OK;
	fd = fd_get(in, &tmp);
	if (fd < 0)
		return failed("open", in, errno);
	in->durable = false;
	gen(iobuf, len);
	if (pwrite_all(fd, iobuf, len, off)) {
		r = failed("write", in, errno);
		if (tmp)
			close(fd);
		return r;
	}
	ino_write(in, off, iobuf, len);
	logop("write %s %s off=%zu len=%zu size=%zu", ino_label(in), how, off, len, in->size);
	return fd_done(in, fd, tmp, r);
}

static int op_write(void)
{
	struct ino *in = pick_mod();
	size_t off, len;
	const char *how;

	if (!in)
		return OK;
	switch (rnd(10)) {
	case 0: case 1: case 2:
		how = "append";
		off = in->size;
		break;
	case 3: case 4: case 5: case 6:
		how = "overwrite";
		off = rnd(in->size + 1);
		break;
	case 7:
		how = "past-eof";
		off = in->size + rnd_len(256 << 10);
		break;
	default:
		how = "at-0";
		off = 0;
		break;
	}
	if (chance(30))
		off &= ~(size_t)4095;
	if (off >= MAXSZ)
		off = rnd(MAXSZ / 2);
	len = rnd_len(256 << 10);
	if (off + len > MAXSZ)
		len = MAXSZ - off;
	return write_at(in, off, len, how);
}

static int op_create(void)
{
	char p[PATH_MAX];
	int s = pick_slot(false, 0), fd;
	struct ino *in;

	if (s < 0 || !(in = ino_new(false)))
		return OK;
	full(p, sizeof(p), slots[s].rel);
	fd = open(p, O_CREAT | O_EXCL | O_RDWR, 0644);
	if (fd < 0) {
		int e = errno;
		ino_put(in);
		return err_of("create", slots[s].rel, e);
	}
	slot_set(s, in);
	in->birth = s;
	if (nfds < MAXFDS && chance(60)) {
		in->fd = fd;
		nfds++;
	} else if (close(fd)) {
		return failed("close", in, errno);
	}
	logop("create %s", ino_label(in));
	return chance(60) ? write_at(in, 0, rnd_len(512 << 10), "first") : OK;
}

static int op_read(void)
{
	struct ino *in = pick_ino(-1);
	struct stat st;
	size_t off, len, want;
	ssize_t got;
	bool tmp;
	int fd;

	if (!in)
		return OK;
	fd = fd_get(in, &tmp);
	if (fd < 0)
		return failed("open", in, errno);
	off = rnd(in->size + 8192);
	len = rnd_len(1 << 20);
	want = off >= in->size ? 0 : (in->size - off < len ? in->size - off : len);
	got = pread_all(fd, iobuf, len, off);
	if (got < 0) {
		int e = errno;
		if (tmp)
			close(fd);
		return failed("read", in, e);
	}
	if (fstat(fd, &st)) {
		int e = errno;
		if (tmp)
			close(fd);
		return failed("fstat", in, e);
	}
	if ((size_t)got != want || memcmp(iobuf, in->buf + off, want) ||
	    (size_t)st.st_size != in->size) {
		size_t d = 0;
		while (d < want && d < (size_t)got && iobuf[d] == in->buf[off + d])
			d++;
		if (tmp)
			close(fd);
		logop("read %s off=%zu len=%zu -> differs", ino_label(in), off, len);
		if (!alive())
			return STOP;
		return fail("read while mounted path=%s off=%zu len=%zu: got %zd bytes (expected %zu), "
			    "first difference at offset %zu; st_size=%lld, expected size=%zu",
			    ino_label(in), off, len, got, want, off + d, (long long)st.st_size, in->size);
	}
	logop("read %s off=%zu len=%zu ok", ino_label(in), off, len);
	return fd_done(in, fd, tmp, OK);
}

static int op_truncate(void)
{
	struct ino *in = pick_mod();
	char p[PATH_MAX];
	const char *nm;
	size_t n;
	bool tmp = false;
	int fd = -1, ret;

	if (!in)
		return OK;
	if (chance(50))
		n = rnd(in->size + 1);
	else
		n = in->size + rnd_len(1 << 20);
	if (n > MAXSZ)
		n = MAXSZ;
	if (n == in->size)
		return OK;
	nm = in->fd < 0 && chance(40) ? ino_name(in) : NULL;
	in->durable = false;
	if (nm) {
		full(p, sizeof(p), nm);
		ret = truncate(p, (off_t)n);
	} else {
		fd = fd_get(in, &tmp);
		if (fd < 0)
			return failed("open", in, errno);
		ret = ftruncate(fd, (off_t)n);
	}
	if (ret) {
		int e = errno;
		if (tmp)
			close(fd);
		return failed(nm ? "truncate" : "ftruncate", in, e);
	}
	logop("%s %s %zu -> %zu", nm ? "truncate" : "ftruncate", ino_label(in), in->size, n);
	ino_resize(in, n);
	return nm ? OK : fd_done(in, fd, tmp, OK);
}

static int op_fallocate(void)
{
	static const int modes[] = {
		0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE,
		FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
	};
	struct ino *in = pick_mod();
	size_t off, len, end, zend;
	bool tmp, grows, changes;
	int mode, fd;

	if (!in)
		return OK;
	mode = modes[rnd(sizeof(modes) / sizeof(modes[0]))];
	off = rnd(in->size + (256 << 10));
	len = rnd_len(512 << 10);
	if (chance(50)) {
		off &= ~(size_t)4095;
		len = (len + 4095) & ~(size_t)4095;
	}
	if (off >= MAXSZ)
		off = rnd(MAXSZ / 2);
	if (off + len > MAXSZ)
		len = MAXSZ - off;
	end = off + len;
	grows = !(mode & FALLOC_FL_KEEP_SIZE) && end > in->size;
	zend = end < in->size ? end : in->size;
	changes = grows || ((mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) && off < zend &&
			    !all_zero(in->buf + off, zend - off));
	fd = fd_get(in, &tmp);
	if (fd < 0)
		return failed("open", in, errno);
	if (changes)
		in->durable = false;
	if (fallocate(fd, mode, (off_t)off, (off_t)len)) {
		int e = errno;
		if (tmp)
			close(fd);
		return failed("fallocate", in, e);
	}
	if ((mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) && off < zend)
		memset(in->buf + off, 0, zend - off);
	if (grows)
		ino_resize(in, end);
	logop("fallocate %s mode=%#x off=%zu len=%zu size=%zu%s", ino_label(in), mode, off, len,
	      in->size, changes ? "" : " (content unchanged)");
	return fd_done(in, fd, tmp, OK);
}

static int do_rename(bool big)
{
	char p1[PATH_MAX], p2[PATH_MAX];
	int s = pick_slot(big, 1), d = pick_slot(big, -1);
	struct ino *in;

	if (s < 0 || d < 0 || d == s)
		return OK;
	in = slots[s].ino;
	full(p1, sizeof(p1), slots[s].rel);
	full(p2, sizeof(p2), slots[d].rel);
	if (slots[d].ino == in) {   /* two links of one file: rename does nothing */
		if (rename(p1, p2))
			return err_of("rename (same file)", slots[s].rel, errno);
		logop("rename %s -> %s (links of #%u: nothing happens)", slots[s].rel, slots[d].rel, in->id);
		return OK;
	}
	slots[s].durable = false;
	slots[d].durable = false;
	if (rename(p1, p2))
		return err_of("rename", slots[s].rel, errno);
	logop("rename %s#%u -> %s%s", slots[s].rel, in->id, slots[d].rel,
	      slots[d].ino ? " (over a file)" : "");
	in->nlink++;                /* held across the two changes */
	slot_clear(s);
	slot_clear(d);
	slot_set(d, in);
	in->nlink--;
	return OK;
}

static int op_rename(void)
{
	return do_rename(false);
}

static int op_link(void)
{
	char p1[PATH_MAX], p2[PATH_MAX];
	int s = pick_slot(false, 1), d = pick_slot(false, 0);

	if (s < 0 || d < 0)
		return OK;
	full(p1, sizeof(p1), slots[s].rel);
	full(p2, sizeof(p2), slots[d].rel);
	if (link(p1, p2))
		return err_of("link", slots[s].rel, errno);
	logop("link %s#%u -> %s", slots[s].rel, slots[s].ino->id, slots[d].rel);
	slot_set(d, slots[s].ino);
	return OK;
}

static int do_unlink(int s)
{
	char p[PATH_MAX];

	if (s < 0)
		return OK;
	full(p, sizeof(p), slots[s].rel);
	slots[s].durable = false;
	if (unlink(p))
		return err_of("unlink", slots[s].rel, errno);
	logop("unlink %s#%u%s", slots[s].rel, slots[s].ino->id,
	      slots[s].ino->nlink == 1 && slots[s].ino->fd >= 0 ? " (still open)" : "");
	slot_clear(s);
	return OK;
}

static int op_unlink(void)
{
	return do_unlink(pick_slot(false, 1));
}

static void promise_content(struct ino *in, const char *how)
{
	in->durable = true;
	snprintf(in->why, sizeof(in->why), "%s at %u.%lu", how, cur_iter, cur_op);
}

static void promise_name(int s, const char *how)
{
	slots[s].durable = true;
	snprintf(slots[s].why, sizeof(slots[s].why), "%s at %u.%lu", how, cur_iter, cur_op);
}

static int do_fsync(struct ino *in, bool data)
{
	bool tmp;
	int fd;

	if (!in)
		return OK;
	fd = fd_get(in, &tmp);
	if (fd < 0)
		return failed("open", in, errno);
	if (data ? fdatasync(fd) : fsync(fd)) {
		int e = errno;
		if (tmp)
			close(fd);
		return failed(data ? "fdatasync" : "fsync", in, e);
	}
	promise_content(in, data ? "fdatasync" : "fsync");
	npromise++;
	if (!data && in->birth >= 0)
		promise_name(in->birth, "fsync of the new file");
	logop("%s %s size=%zu%s", data ? "fdatasync" : "fsync", ino_label(in), in->size,
	      !data && in->birth >= 0 ? " (its name too)" : "");
	return fd_done(in, fd, tmp, OK);
}

static int op_fsync(void)
{
	return do_fsync(pick_ino(-1), false);
}

static int op_fdatasync(void)
{
	return do_fsync(pick_ino(-1), true);
}

static int op_fsyncdir(void)
{
	char p[PATH_MAX];
	int d = (int)rnd(NDIR), fd;

	full(p, sizeof(p), dirs[d]);
	fd = open(p, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return err_of("open dir", dirs[d], errno);
	if (fsync(fd)) {
		int e = errno;
		close(fd);
		return err_of("fsync dir", dirs[d], e);
	}
	close(fd);
	npromise++;
	for (int s = 0; s < NSLOT; s++)
		if (slots[s].dir == d && slots[s].ino)
			promise_name(s, "fsync of its directory");
	logop("fsync dir /%s", dirs[d]);
	return OK;
}

static int op_sync(void)
{
	if (chance(20)) {
		sync();
		logop("sync");
	} else {
		int fd = open(mnt, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			return err_of("open", "/", errno);
		if (syncfs(fd)) {
			int e = errno;
			close(fd);
			return err_of("syncfs", "/", e);
		}
		close(fd);
		logop("syncfs");
	}
	if (!alive())
		return STOP;
	if (sync_promise) {
		for (int s = 0; s < NSLOT; s++)
			if (slots[s].ino)
				promise_name(s, "sync");
		for (int i = 0; i < MAXINO; i++)
			if (inos[i])
				promise_content(inos[i], "sync");
	}
	return OK;
}

static int op_close(void)
{
	struct ino *cand[MAXINO];
	int n = 0;

	for (int i = 0; i < MAXINO; i++)
		if (inos[i] && inos[i]->fd >= 0)
			cand[n++] = inos[i];
	if (!n)
		return OK;
	struct ino *in = cand[rnd(n)];
	logop("close %s", ino_label(in));
	return drop_fd(in);
}

static int op_xdir(void)
{
	char rel[8], p[PATH_MAX];
	int e = (int)rnd(NEXTRA);

	snprintf(rel, sizeof(rel), "e%d", e);
	full(p, sizeof(p), rel);
	if (extra[e] ? rmdir(p) : mkdir(p, 0755))
		return err_of(extra[e] ? "rmdir" : "mkdir", rel, errno);
	logop("%s %s", extra[e] ? "rmdir" : "mkdir", rel);
	extra[e] = !extra[e];
	return OK;
}

/* overwrite a random stretch of a big file */
static int big_overwrite(void)
{
	struct ino *in = pick_ino(1);
	size_t off, len;

	if (!in || in->size < (1 << 20))
		return OK;
	len = (1 + rnd(64)) * 4096;
	off = rnd((in->size - len) / 4096 + 1) * 4096;
	return write_at(in, off, len, "big-overwrite");
}

/* Grow the big files until the volume is pct% full; 1 once it is (or
 * cannot be: the big names are full). */
static int fill_step(unsigned pct, bool *full_now)
{
	struct statvfs sv;
	struct ino *in = NULL;
	int s;

	if (statvfs(mnt, &sv))
		return err_of("statvfs", "/", errno);
	if (sv.f_blocks == 0 || (sv.f_blocks - sv.f_bfree) * 100 >= (uint64_t)pct * sv.f_blocks) {
		*full_now = true;
		return OK;
	}
	for (s = NSMALL; s < NSLOT; s++)
		if (slots[s].ino && slots[s].ino->size + (1 << 20) <= BIGSZ) {
			in = slots[s].ino;
			break;
		}
	if (!in) {
		char p[PATH_MAX];
		int fd;
		if ((s = pick_slot(true, 0)) < 0 || !(in = ino_new(true))) {
			*full_now = true;
			return OK;
		}
		full(p, sizeof(p), slots[s].rel);
		fd = open(p, O_CREAT | O_EXCL | O_RDWR, 0644);
		if (fd < 0) {
			int e = errno;
			ino_put(in);
			return err_of("create", slots[s].rel, e);
		}
		slot_set(s, in);
		in->birth = s;
		if (close(fd))
			return failed("close", in, errno);
		logop("create %s (big)", ino_label(in));
	}
	size_t len = (1 + rnd(4)) << 20;
	if (in->size + len > BIGSZ)
		len = BIGSZ - in->size;
	int r = write_at(in, in->size, len, "big-append");
	if (r == OK && chance(35))
		r = do_fsync(in, chance(30));
	return r;
}

/* big-file work outside the filling: overwrites, renames, fsyncs, unlinks */
static int op_big(void)
{
	switch (rnd(8)) {
	case 0: case 1:
		return do_unlink(pick_slot(true, 1));
	case 2: case 3: case 4:
		return big_overwrite();
	case 5:
		return do_rename(true);
	default:
		return do_fsync(pick_ino(1), chance(40));
	}
}

struct opw {
	int (*fn)(void);
	unsigned w;
	bool sync;                 /* an fsync of some kind */
};

static const struct opw optab[] = {
	{ op_create, 8, 0 }, { op_write, 24, 0 }, { op_read, 8, 0 }, { op_truncate, 6, 0 },
	{ op_fallocate, 6, 0 }, { op_rename, 6, 0 }, { op_link, 3, 0 }, { op_unlink, 4, 0 },
	{ op_fsync, 12, 1 }, { op_fdatasync, 6, 1 }, { op_fsyncdir, 8, 1 }, { op_sync, 2, 0 },
	{ op_close, 5, 0 }, { op_xdir, 2, 0 }, { op_big, 3, 0 },
};

/* 4 in the iterations where fsyncs are rarer (longer stretches between
 * them, which a kill can fall into), else 1 */
static unsigned sync_div = 1;

static unsigned op_weight(size_t i)
{
	return optab[i].sync ? (optab[i].w + sync_div - 1) / sync_div : optab[i].w;
}

static int one_op(void)
{
	unsigned tot = 0, r;

	for (size_t i = 0; i < sizeof(optab) / sizeof(optab[0]); i++)
		tot += op_weight(i);
	r = (unsigned)rnd(tot);
	for (size_t i = 0; i < sizeof(optab) / sizeof(optab[0]); i++) {
		if (r < op_weight(i))
			return optab[i].fn();
		r -= op_weight(i);
	}
	return OK;
}

static void close_all(void)
{
	for (int i = 0; i < MAXINO; i++) {
		struct ino *in = inos[i];
		if (in && in->fd >= 0) {
			close(in->fd);     /* the mount is dead: errors say nothing */
			in->fd = -1;
			nfds--;
			ino_put(in);
		}
	}
}

static void seed_iter(unsigned iter, uint64_t salt)
{
	rs = mix64(seed0 * 0x100000001b3ull + iter * 0x9e3779b97f4a7c15ull + salt);
}

static void cmd_run(unsigned iter, unsigned fill, unsigned long arm, bool on_promise)
{
	unsigned long n, after = 0;
	bool full_now = fill == 0, armed = false;
	int r;

	cur_iter = iter;
	seed_iter(iter, 1);
	sync_div = chance(40) ? 4 : 1;
	logop("run: fill=%u arm=%lu on_promise=%d fsyncs%s", fill, arm, on_promise,
	      sync_div > 1 ? " rarer" : "");
	for (n = 0;; n++) {
		unsigned long p0 = npromise;

		cur_op = n;
		if (!full_now && chance(60))
			r = fill_step(fill, &full_now);
		else if (fill && full_now && chance(25))
			r = big_overwrite();
		else
			r = one_op();
		if (r != OK)
			break;
		if (full_now && !armed && after++ >= arm && (!on_promise || npromise != p0)) {
			armed = true;
			printf("armed %lu\n", n + 1);
			fflush(stdout);
		}
	}
	close_all();
	if (r == BAD) {
		printf("FAIL %s\n", failmsg);
	} else {
		unsigned dn = 0, dc = 0;
		for (int s = 0; s < NSLOT; s++)
			if (slots[s].ino && slots[s].durable && slots[s].ino->durable)
				dn++;
		for (int i = 0; i < MAXINO; i++)
			if (inos[i] && inos[i]->durable)
				dc++;
		printf("stopped ops=%lu%s promised_names=%u promised_contents=%u\n", n,
		       sync_div > 1 ? " (fsyncs rarer)" : "", dn, dc);
	}
	fflush(stdout);
}

/* ---- setup and check ------------------------------------------------------------------ */

static int cmd_setup(void)
{
	char p[PATH_MAX];

	cur_iter = 0;
	for (int d = 1; d < NDIR; d++) {
		full(p, sizeof(p), dirs[d]);
		if (mkdir(p, 0755) && errno != EEXIST)
			return fail("mkdir %s: %s", dirs[d], strerror(errno));
	}
	for (int d = 0; d < NDIR; d++) {
		full(p, sizeof(p), dirs[d]);
		int fd = open(p, O_RDONLY | O_DIRECTORY);
		if (fd < 0 || fsync(fd))
			return fail("fsync dir /%s: %s", dirs[d], strerror(errno));
		close(fd);
	}
	return OK;
}

/* first offset where two byte strings differ, or the shorter length */
static size_t first_diff(const unsigned char *a, size_t na, const unsigned char *b, size_t nb)
{
	size_t i = 0, n = na < nb ? na : nb;
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

static int verify(int s, struct ino *in)
{
	char p[PATH_MAX];
	unsigned char *b;
	size_t n;
	struct stat st;
	int e;

	full(p, sizeof(p), slots[s].rel);
	if (lstat(p, &st))
		return fail("promised file path=%s is missing: %s; expected size=%zu hash=%016llx "
			    "(model #%u; content: %s; name: %s)", slots[s].rel, strerror(errno), in->size,
			    (unsigned long long)hash(in->buf, in->size), in->id, in->why, slots[s].why);
	if (!S_ISREG(st.st_mode))
		return fail("promised file path=%s is not a regular file (mode %o)", slots[s].rel, st.st_mode);
	if ((e = slurp(p, &b, &n, &st)))
		return fail("promised file path=%s cannot be read: %s; expected size=%zu", slots[s].rel,
			    strerror(e), in->size);
	if (n != in->size || n != (size_t)st.st_size || memcmp(b, in->buf, n)) {
		size_t d = first_diff(b, n, in->buf, in->size);
		fail("promised file path=%s differs: expected size=%zu hash=%016llx, actual size=%zu "
		     "(st_size %lld) hash=%016llx, first difference at offset %zu (model #%u; content: %s; "
		     "name: %s)", slots[s].rel, in->size, (unsigned long long)hash(in->buf, in->size), n,
		     (long long)st.st_size, (unsigned long long)hash(b, n), d, in->id, in->why, slots[s].why);
		free(b);
		return BAD;
	}
	free(b);
	if (in->kept && in->st != st.st_ino)
		return fail("promised names of one file are different inodes now: path=%s is inode %llu, "
			    "another name of model #%u is inode %llu", slots[s].rel,
			    (unsigned long long)st.st_ino, in->id, (unsigned long long)in->st);
	in->kept = true;
	in->st = st.st_ino;
	return OK;
}

/* the slot a directory entry is, or -1; *known set for fixed and extra dirs */
static int entry_slot(int d, const char *name, bool *isdir)
{
	char rel[320];

	*isdir = false;
	snprintf(rel, sizeof(rel), "%s%s%s", dirs[d], *dirs[d] ? "/" : "", name);
	for (int s = 0; s < NSLOT; s++)
		if (slots[s].dir == d && !strcmp(slots[s].rel, rel))
			return s;
	for (int k = 1; k < NDIR; k++)
		if (!strcmp(dirs[k], rel))
			*isdir = true;
	if (d == 0 && name[0] == 'e' && name[1] >= '0' && name[1] < '0' + NEXTRA && !name[2]) {
		*isdir = true;
		extra[name[1] - '0'] = true;
	}
	return -1;
}

static int cmd_check(unsigned iter, unsigned long *checked_out)
{
	struct ino *next[MAXINO] = { 0 };
	struct ino *nslot[NSLOT] = { 0 };
	bool keepname[NSLOT] = { 0 };
	bool present[NSLOT] = { 0 };
	unsigned long checked = 0, files = 0;
	unsigned long long bytes = 0;
	int nn = 0, r;

	cur_iter = iter;
	cur_op = 0;
	for (int i = 0; i < MAXINO; i++)
		if (inos[i]) {
			inos[i]->kept = false;
			inos[i]->st = 0;
		}
	/* 1. what was promised */
	for (int s = 0; s < NSLOT; s++) {
		struct ino *in = slots[s].ino;
		if (!in || !slots[s].durable || !in->durable)
			continue;
		if ((r = verify(s, in)) != OK)
			return r;
		keepname[s] = true;
		checked++;
	}
	/* 2. what is there: known names only, every file readable */
	memset(extra, 0, sizeof(extra));
	for (int d = 0; d < NDIR; d++) {
		char p[PATH_MAX];
		DIR *dir;
		struct dirent *de;

		full(p, sizeof(p), dirs[d]);
		if (!(dir = opendir(p)))
			return fail("directory /%s (made and fsync'd at the start) cannot be opened: %s",
				    dirs[d], strerror(errno));
		errno = 0;
		while ((de = readdir(dir))) {
			bool isdir;
			struct stat st;
			int s;

			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			s = entry_slot(d, de->d_name, &isdir);
			snprintf(p, sizeof(p), "%s/%s%s%s", mnt, dirs[d], *dirs[d] ? "/" : "", de->d_name);
			if (lstat(p, &st)) {
				int e = errno;
				closedir(dir);
				return fail("entry /%s%s%s listed but lstat fails: %s", dirs[d],
					    *dirs[d] ? "/" : "", de->d_name, strerror(e));
			}
			if (s < 0 && !isdir) {
				closedir(dir);
				return fail("unexpected entry /%s%s%s (mode %o): the workload never made that name",
					    dirs[d], *dirs[d] ? "/" : "", de->d_name, st.st_mode);
			}
			if ((s < 0) != !!S_ISDIR(st.st_mode) || (s >= 0 && !S_ISREG(st.st_mode))) {
				closedir(dir);
				return fail("entry /%s%s%s has the wrong type (mode %o)", dirs[d],
					    *dirs[d] ? "/" : "", de->d_name, st.st_mode);
			}
			if (s >= 0)
				present[s] = true;
			errno = 0;
		}
		if (errno) {
			int e = errno;
			closedir(dir);
			return fail("readdir /%s: %s", dirs[d], strerror(e));
		}
		closedir(dir);
	}
	for (int s = 0; s < NSLOT; s++) {
		if (keepname[s] && !present[s])
			return fail("promised file path=%s was read but readdir does not list it", slots[s].rel);
		if (!present[s])
			continue;
		files++;
		if (keepname[s]) {
			nslot[s] = slots[s].ino;
			bytes += slots[s].ino->size;
			continue;
		}
		char p[PATH_MAX];
		unsigned char *b;
		size_t n;
		struct stat st;
		int e;

		full(p, sizeof(p), slots[s].rel);
		if ((e = slurp(p, &b, &n, &st)))
			return fail("file path=%s (not promised) cannot be read: %s", slots[s].rel, strerror(e));
		if (n != (size_t)st.st_size) {
			free(b);
			return fail("file path=%s (not promised): read %zu bytes, st_size %lld", slots[s].rel, n,
				    (long long)st.st_size);
		}
		bytes += n;
		struct ino *in = NULL;
		for (int i = 0; i < MAXINO && !in; i++)     /* a link of a checked file */
			if (inos[i] && inos[i]->kept && inos[i]->st == st.st_ino)
				in = inos[i];
		if (in && (n != in->size || memcmp(b, in->buf, n))) {
			size_t d = first_diff(b, n, in->buf, in->size);
			free(b);
			return fail("file path=%s is inode %llu like a promised file of model #%u but differs: "
				    "size %zu vs %zu, first difference at offset %zu", slots[s].rel,
				    (unsigned long long)st.st_ino, in->id, n, in->size, d);
		}
		for (int i = 0; i < nn && !in; i++)         /* a link of one just found */
			if (next[i]->st == st.st_ino)
				in = next[i];
		if (in) {
			free(b);
		} else {
			if (!(in = calloc(1, sizeof(*in)))) {
				perror("calloc");
				exit(2);
			}
			in->id = next_id++;
			in->fd = -1;
			in->birth = -1;
			in->big = slot_big(s);
			in->st = st.st_ino;
			in->buf = b;
			in->size = n;
			in->cap = n;
			next[nn++] = in;
		}
		nslot[s] = in;
	}
	/* 3. the model is what is there now */
	for (int i = 0; i < MAXINO; i++) {
		struct ino *in = inos[i];
		if (in && in->kept) {
			in->nlink = 0;
			in->birth = -1;
			next[nn++] = in;
		} else if (in) {
			free(in->buf);
			free(in);
		}
		inos[i] = NULL;
	}
	for (int i = 0; i < nn; i++)
		inos[i] = next[i];
	for (int s = 0; s < NSLOT; s++) {
		slots[s].ino = nslot[s];
		slots[s].durable = keepname[s];
		if (nslot[s])
			nslot[s]->nlink++;
	}
	nfds = 0;
	logop("check: %lu promised files verified, %lu files, %llu bytes", checked, files, bytes);
	printf("ok %lu files=%lu bytes=%llu\n", checked, files, bytes);
	fflush(stdout);
	*checked_out = checked;
	return OK;
}

int main(int argc, char **argv)
{
	char line[256];

	if (argc < 3) {
		fprintf(stderr, "usage: killload MNT SEED [--sync-promise] [--log FILE]\n");
		return 2;
	}
	mnt = argv[1];
	seed0 = strtoull(argv[2], NULL, 0);
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--sync-promise")) {
			sync_promise = true;
		} else if (!strcmp(argv[i], "--log") && i + 1 < argc) {
			if (!(oplog = fopen(argv[++i], "a"))) {
				perror(argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "killload: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	if (!(iobuf = malloc(BIGSZ))) {
		perror("malloc");
		return 2;
	}
	for (int d = 0; d < NDIR; d++)
		for (int k = 0; k < NNAME; k++) {
			struct slot *sl = &slots[d * NNAME + k];
			snprintf(sl->rel, sizeof(sl->rel), "%s%sf%d", dirs[d], *dirs[d] ? "/" : "", k);
			sl->dir = d;
		}
	for (int k = 0; k < NBIG; k++) {
		struct slot *sl = &slots[NSMALL + k];
		snprintf(sl->rel, sizeof(sl->rel), "%s/big%d", dirs[BIGDIR], k);
		sl->dir = BIGDIR;
	}
	while (fgets(line, sizeof(line), stdin)) {
		unsigned iter = 0, fill = 0;
		unsigned long arm = 0, checked = 0;
		unsigned onp = 0;

		if (!strncmp(line, "setup", 5)) {
			if (cmd_setup() == OK)
				printf("ok\n");
			else
				printf("FAIL %s\n", failmsg);
		} else if (sscanf(line, "run %u %u %lu %u", &iter, &fill, &arm, &onp) >= 3) {
			cmd_run(iter, fill, arm, onp != 0);
		} else if (sscanf(line, "check %u", &iter) == 1) {
			if (cmd_check(iter, &checked) != OK)
				printf("FAIL %s\n", failmsg);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("FAIL unknown command %s", line);
		}
		fflush(stdout);
	}
	return 0;
}
