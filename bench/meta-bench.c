/*
 * meta-bench.c - the load generator of bench/fuse-speed.sh: metadata
 * operations on many empty files, by one or more threads, and a sequential
 * write and read of one big file.  Every call is checked; the first failure
 * ends the process with status 1 and a message naming the path.
 *
 *   meta-bench create|stat|rename|unlink ROOT [--files N] [--threads T]
 *              [--per-dir 100] [--batch 5000] [--size BYTES] [--renamed]
 *              [--no-cold] [--watch-pid PID]
 *   meta-bench write|read FILE [--mib 1024] [--no-cold]
 *   meta-bench --help | --version
 *
 * Tree: thread t works in ROOT/t<t>/, on its share of the N files (N/T,
 * the last thread also takes the remainder), file i of a thread being
 * ROOT/t<t>/d<i/per-dir>/f<i%per-dir> (r<...> once renamed), so
 * directories hold --per-dir files and no two threads touch the same
 * directory.  Paths are whole paths from ROOT, as an application's are.
 *   create: mkdir of each directory as its first file comes, then
 *           open(O_CREAT|O_EXCL|O_WRONLY, 0644) + close of each file (empty
 *           files: no data is written; with --size, a write(2) of BYTES,
 *           at most 65536, of a non-zero pattern before the close).
 *           ROOT/t<t> are made before the clock starts.
 *   stat:   lstat of each file (checked: a regular file of size 0, or
 *           --size's).
 *   rename: rename f<k> -> r<k> in the same directory.
 *   unlink: unlink of each file (r<k> with --renamed), rmdir of each
 *           directory after its last file; ROOT/t<t> are removed after the
 *           clock stops.
 * The directory operations are timed with the files (one per --per-dir
 * files) but ops are files only.
 *
 * Cold start and batches: unless --no-cold, the phase starts with sync(2)
 * and "3" written to /proc/sys/vm/drop_caches (both untimed), so every
 * filesystem starts with no cached dentries, inodes or pages.  The work is
 * cut into ceil(N / --batch) chunks (every thread does its part of a
 * chunk); between chunks all threads meet at a barrier, "2" is written to
 * drop_caches (unused dentries and inodes: the kernel FORGETs the FUSE
 * inodes it had; "3" would also walk every cached page of every file,
 * tmpfs included, which takes a second or more here and changes nothing
 * for files not touched yet), and they go on.  The drops are not timed:
 * secs is the sum of the chunks' wall-clock times.  They exist for
 * libfuse's passthrough_ll, which holds an open fd per inode the kernel
 * knows and would otherwise run out of fds; every filesystem gets the same
 * drops.  --watch-pid PID: count the entries of /proc/PID/fd just before
 * each drop and at the end (untimed) and report the largest count
 * (max_fds; -1 without --watch-pid), to show how close that daemon came
 * to its limit.
 *
 * write: (after a sync(2), untimed, unless --no-cold) FILE created
 *        (truncated), --mib MiB written in 1 MiB write(2)s, then fsync,
 *        then close; timed from open to close.  Each 4 KiB
 *        page starts with its own byte offset, the rest a fixed non-zero
 *        pattern (nothing a filesystem could skip as zeros).
 * read:  (after the cold start) FILE read in 1 MiB read(2)s to EOF; the
 *        size and the offset stamped in every page are checked.
 *
 * The last line of output is exactly:
 *   phase=P files=N dirs=D threads=T secs=S ops_per_s=X drops=K drop_secs=S max_fds=M
 * or, for write and read:
 *   phase=P bytes=N secs=S mb_per_s=X
 * (MB = 10^6 bytes).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum phase { P_CREATE, P_STAT, P_RENAME, P_UNLINK, P_WRITE, P_READ };
static const char *const phase_name[] = { "create", "stat", "rename", "unlink", "write", "read" };

static struct {
	enum phase phase;
	const char *root;
	long files, per_dir, batch, mib, size;
	int threads;
	bool renamed, cold;
	long watch_pid;
} cfg = { .files = 1000, .per_dir = 100, .batch = 5000, .mib = 1024, .threads = 1, .cold = true };

/* --size's data: not zeros, which a filesystem could keep as a hole */
static char pattern[65536];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "meta-bench: %s %s: %s\n", what, path ? path : "", strerror(errno));
	exit(1);
}

/*
 * what 1: forget clean cached pages; 2: unused dentries and inodes (and
 * with them their pages); 3: both (root only).
 */
static void drop_caches(int what)
{
	char v[3] = { (char)('0' + what), '\n', '\0' };
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	if (fd < 0)
		die("open", "/proc/sys/vm/drop_caches");
	if (write(fd, v, 2) != 2)
		die("write", "/proc/sys/vm/drop_caches");
	close(fd);
}

static long max_fds;

static void count_fds(void)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	long n = 0;

	if (!cfg.watch_pid)
		return;
	snprintf(path, sizeof(path), "/proc/%ld/fd", cfg.watch_pid);
	d = opendir(path);
	if (!d)
		die("opendir", path);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	if (n > max_fds)
		max_fds = n;
}

/* ---- the metadata phases ---- */

struct worker {
	pthread_t tid;
	int t;
	long first, count;     /* this thread's files: [0, count) of its own numbering */
};

static pthread_barrier_t bar;
static long nchunks, ndirs, drops;
static uint64_t timed_ns, drop_ns, seg_start;

static void file_path(char *buf, size_t len, int t, long i, bool renamed)
{
	snprintf(buf, len, "%s/t%d/d%05ld/%c%ld", cfg.root, t, i / cfg.per_dir,
		 renamed ? 'r' : 'f', i % cfg.per_dir);
}

static void dir_path(char *buf, size_t len, int t, long i)
{
	snprintf(buf, len, "%s/t%d/d%05ld", cfg.root, t, i / cfg.per_dir);
}

static void do_one(const struct worker *w, long i)
{
	char path[PATH_MAX], to[PATH_MAX];
	struct stat st;
	int fd;

	switch (cfg.phase) {
	case P_CREATE:
		if (i % cfg.per_dir == 0) {
			dir_path(path, sizeof(path), w->t, i);
			if (mkdir(path, 0755) < 0)
				die("mkdir", path);
		}
		file_path(path, sizeof(path), w->t, i, false);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			die("create", path);
		if (cfg.size && write(fd, pattern, (size_t)cfg.size) != (ssize_t)cfg.size)
			die("write", path);
		if (close(fd) < 0)
			die("close", path);
		break;
	case P_STAT:
		file_path(path, sizeof(path), w->t, i, cfg.renamed);
		if (lstat(path, &st) < 0)
			die("stat", path);
		if (!S_ISREG(st.st_mode) || st.st_size != cfg.size) {
			errno = EUCLEAN;
			die("stat (not a regular file of the size written)", path);
		}
		break;
	case P_RENAME:
		file_path(path, sizeof(path), w->t, i, false);
		file_path(to, sizeof(to), w->t, i, true);
		if (rename(path, to) < 0)
			die("rename", path);
		break;
	case P_UNLINK:
		file_path(path, sizeof(path), w->t, i, cfg.renamed);
		if (unlink(path) < 0)
			die("unlink", path);
		if (i % cfg.per_dir == cfg.per_dir - 1 || i == w->count - 1) {
			dir_path(path, sizeof(path), w->t, i);
			if (rmdir(path) < 0)
				die("rmdir", path);
		}
		break;
	default:
		abort();
	}
}

/*
 * Between chunks: the last thread to arrive closes the timed segment,
 * drops the caches and opens the next one; nobody works meanwhile.
 */
enum boundary { B_START, B_BETWEEN, B_END };

static void chunk_boundary(enum boundary b)
{
	int r = pthread_barrier_wait(&bar);

	if (r == PTHREAD_BARRIER_SERIAL_THREAD) {
		uint64_t t = now_ns();
		if (b != B_START) {
			timed_ns += t - seg_start;
			count_fds();
		}
		if (b == B_BETWEEN) {
			drop_caches(2);
			drops++;
		}
		seg_start = now_ns();
		if (b == B_BETWEEN)
			drop_ns += seg_start - t;
	} else if (r != 0) {
		errno = r;
		die("pthread_barrier_wait", NULL);
	}
	r = pthread_barrier_wait(&bar);
	if (r != 0 && r != PTHREAD_BARRIER_SERIAL_THREAD) {
		errno = r;
		die("pthread_barrier_wait", NULL);
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;

	chunk_boundary(B_START);       /* all threads running: the clock starts */
	for (long c = 0; c < nchunks; c++) {
		long lo = w->count * c / nchunks, hi = w->count * (c + 1) / nchunks;
		for (long i = lo; i < hi; i++)
			do_one(w, i);
		chunk_boundary(c == nchunks - 1 ? B_END : B_BETWEEN);
	}
	return NULL;
}

static int run_meta(void)
{
	struct worker *w = calloc((size_t)cfg.threads, sizeof(*w));
	char path[PATH_MAX];
	int r;

	if (!w)
		die("calloc", NULL);
	for (int t = 0; t < cfg.threads; t++) {
		w[t].t = t;
		w[t].count = cfg.files / cfg.threads + (t == cfg.threads - 1 ? cfg.files % cfg.threads : 0);
		ndirs += (w[t].count + cfg.per_dir - 1) / cfg.per_dir;
		if (cfg.phase == P_CREATE) {
			snprintf(path, sizeof(path), "%s/t%d", cfg.root, t);
			if (mkdir(path, 0755) < 0)
				die("mkdir", path);
		}
	}
	nchunks = (cfg.files + cfg.batch - 1) / cfg.batch;
	if (cfg.cold) {
		sync();
		drop_caches(3);
	}
	if ((r = pthread_barrier_init(&bar, NULL, (unsigned)cfg.threads))) {
		errno = r;
		die("pthread_barrier_init", NULL);
	}
	seg_start = now_ns();
	for (int t = 0; t < cfg.threads; t++)
		if ((r = pthread_create(&w[t].tid, NULL, work, &w[t]))) {
			errno = r;
			die("pthread_create", NULL);
		}
	for (int t = 0; t < cfg.threads; t++)
		pthread_join(w[t].tid, NULL);
	if (cfg.phase == P_UNLINK)
		for (int t = 0; t < cfg.threads; t++) {
			snprintf(path, sizeof(path), "%s/t%d", cfg.root, t);
			if (rmdir(path) < 0)
				die("rmdir", path);
		}
	double secs = (double)timed_ns / 1e9;
	printf("phase=%s files=%ld dirs=%ld threads=%d secs=%.6f ops_per_s=%.1f drops=%ld drop_secs=%.3f max_fds=%ld\n",
	       phase_name[cfg.phase], cfg.files, ndirs, cfg.threads, secs, (double)cfg.files / secs,
	       drops, (double)drop_ns / 1e9, cfg.watch_pid ? max_fds : -1);
	free(w);
	return 0;
}

/* ---- sequential write and read ---- */

#define CHUNK (1L << 20)
#define PAGE 4096L

static int run_seq(void)
{
	char *buf = aligned_alloc(PAGE, CHUNK);
	long total = cfg.mib * CHUNK, done = 0;
	uint64_t t0, t1;
	int fd;

	if (!buf)
		die("aligned_alloc", NULL);
	for (long k = 0; k < CHUNK; k++)
		buf[k] = (char)(0x5a ^ (k * 7));
	if (cfg.phase == P_WRITE) {
		if (cfg.cold)
			sync();
		t0 = now_ns();
		fd = open(cfg.root, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			die("open", cfg.root);
		while (done < total) {
			for (long p = 0; p < CHUNK; p += PAGE) {
				int64_t off = done + p;
				memcpy(buf + p, &off, sizeof(off));
			}
			ssize_t n = write(fd, buf, CHUNK);
			if (n != CHUNK) {
				if (n >= 0)
					errno = EIO;
				die("write", cfg.root);
			}
			done += n;
		}
		if (fsync(fd) < 0)
			die("fsync", cfg.root);
		if (close(fd) < 0)
			die("close", cfg.root);
		t1 = now_ns();
	} else {
		if (cfg.cold) {
			sync();
			drop_caches(3);
		}
		t0 = now_ns();
		fd = open(cfg.root, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die("open", cfg.root);
		for (;;) {
			ssize_t n = read(fd, buf, CHUNK);
			if (n < 0)
				die("read", cfg.root);
			if (n == 0)
				break;
			/* the stamp of every page that starts in this buffer */
			for (long p = (PAGE - done % PAGE) % PAGE; p + (long)sizeof(int64_t) <= n; p += PAGE) {
				int64_t off;
				memcpy(&off, buf + p, sizeof(off));
				if (off != done + p) {
					fprintf(stderr, "meta-bench: read %s: wrong data at offset %ld\n",
						cfg.root, done + p);
					exit(1);
				}
			}
			done += n;
		}
		close(fd);
		t1 = now_ns();
		if (done != total) {
			fprintf(stderr, "meta-bench: read %s: %ld bytes, expected %ld\n", cfg.root, done, total);
			exit(1);
		}
	}
	double secs = (double)(t1 - t0) / 1e9;
	printf("phase=%s bytes=%ld secs=%.6f mb_per_s=%.1f\n", phase_name[cfg.phase], done, secs,
	       (double)done / 1e6 / secs);
	free(buf);
	return 0;
}

static long num(const char *s, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min) {
		fprintf(stderr, "meta-bench: bad number %s (at least %ld)\n", s, min);
		exit(2);
	}
	return v;
}

#ifndef ZLFS_VERSION
#define ZLFS_VERSION "unknown"
#endif

/* The usage text: on stdout with exit 0 when asked for (--help), on stderr
 * with exit 2 after a bad command line. */
static void usage_to(FILE *f, int status)
{
	fprintf(f,
		"usage: meta-bench create|stat|rename|unlink ROOT [--files N] [--threads T] [--per-dir N]\n"
		"                  [--batch N] [--size BYTES] [--renamed] [--no-cold] [--watch-pid PID]\n"
		"       meta-bench write|read FILE [--mib N] [--no-cold]\n"
		"       meta-bench --help | --version\n");
	exit(status);
}

static void usage(void)
{
	usage_to(stderr, 2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "files", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' },
		{ "per-dir", required_argument, NULL, 'p' },
		{ "batch", required_argument, NULL, 'b' },
		{ "mib", required_argument, NULL, 'm' },
		{ "renamed", no_argument, NULL, 'r' },
		{ "no-cold", no_argument, NULL, 'c' },
		{ "watch-pid", required_argument, NULL, 'w' },
		{ "size", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int c, k;

	/* --help and --version stand alone, before the phase argument. */
	if (argc == 2 && !strcmp(argv[1], "--help"))
		usage_to(stdout, 0);
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("meta-bench %s\n", ZLFS_VERSION);
		return 0;
	}
	if (argc < 3)
		usage();
	for (k = 0; k < (int)(sizeof(phase_name) / sizeof(phase_name[0])); k++)
		if (!strcmp(argv[1], phase_name[k]))
			break;
	if (k == (int)(sizeof(phase_name) / sizeof(phase_name[0])))
		usage();
	cfg.phase = (enum phase)k;
	cfg.root = argv[2];
	optind = 3;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n': cfg.files = num(optarg, 1); break;
		case 't': cfg.threads = (int)num(optarg, 1); break;
		case 'p': cfg.per_dir = num(optarg, 1); break;
		case 'b': cfg.batch = num(optarg, 1); break;
		case 'm': cfg.mib = num(optarg, 1); break;
		case 'r': cfg.renamed = true; break;
		case 'c': cfg.cold = false; break;
		case 'w': cfg.watch_pid = num(optarg, 1); break;
		case 's': cfg.size = num(optarg, 0); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	if (cfg.size > (long)sizeof(pattern)) {
		fprintf(stderr, "meta-bench: --size is at most %zu\n", sizeof(pattern));
		exit(2);
	}
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (char)('a' + i % 26);
	if (cfg.threads > 256 || cfg.files < cfg.threads) {
		fprintf(stderr, "meta-bench: need 1..256 threads and at least one file per thread\n");
		exit(2);
	}
	return cfg.phase >= P_WRITE ? run_seq() : run_meta();
}
