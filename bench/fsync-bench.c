/*
 * fsync-bench.c - the cost of a small write made durable: a loop of
 * pwrite + fsync on one file, timed pair by pair.
 *
 *   fsync-bench FILE [--size 64M] [--bs 4K] [--seconds 5] [--count N]
 *               [--warmup N] [--random] [--datasync] [--status PATH]
 *               [--blkstat PATH]
 *   fsync-bench --help | --version
 *
 * FILE is created (truncated if it exists) and laid out first: --size bytes
 * written in 1 MiB buffered writes and one fsync, not timed.  Then --warmup
 * (default 100) untimed pairs, then the timed loop: pwrite of --bs bytes at
 * the next offset (sequential, wrapping at --size; --random: a uniformly
 * random --bs-aligned offset) followed by fsync (fdatasync with
 * --datasync), until --seconds have passed or --count pairs were done,
 * whichever comes first (0 = no limit; at least one limit must be set).
 * Every write carries new contents (its sequence number), so nothing can
 * be skipped as unchanged.  The file is plain buffered I/O, as an
 * application's would be; what reaches the device is the filesystem's
 * business, fsync's contract is that it has when fsync returns.
 *
 * --status PATH: a file of key=value lines (zlfs's MNT/.zlfs/status), read
 * before and after the timed loop; the differences of checkpoints,
 * node_blocks_written, user_blocks_written, disp_dispatched (device
 * commands) and disp_retries are reported per pair, and the time line:
 * µs per pair in each stage of zlfs's WRITE and FSYNC (tl_*_us, from the
 * status file's *_ns sums; tl_outside_us is what is left of the mean pair:
 * the kernel, FUSE's round trips and requests other than those two).
 * --blkstat PATH: a block device's /sys/block/NAME/stat, read likewise; the
 * difference of its completed flush requests (field 16) per pair.
 *
 * The last line is exactly:
 *   ops=N secs=S iops=N lat_p50_us=N lat_p99_us=N lat_max_us=N lat_mean_us=N
 *   [ckpt_per_op=X node_per_op=X data_per_op=X cmd_per_op=X retry_per_op=X]
 *   [flush_per_op=X] [tl_STAGE_us=X ... tl_outside_us=X]
 * with the latency of each pwrite + fsync pair (nearest-rank percentiles).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "fsync-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* "4K", "64M", "1G" or plain bytes */
static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end) {
		fprintf(stderr, "fsync-bench: bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

/* xorshift64*, for offsets and buffer contents */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void fill(unsigned char *buf, size_t len, uint64_t seq)
{
	uint64_t s = seq * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v = rng_next(&s);
		memcpy(buf + i, &v, 8);
	}
	memcpy(buf, &seq, sizeof(seq));
}

/* one pair: the write, then fsync (or fdatasync) */
static void write_sync(int fd, const unsigned char *buf, uint64_t bs, uint64_t off, bool datasync)
{
	if (pwrite(fd, buf, bs, (off_t)off) != (ssize_t)bs)
		die("pwrite");
	if ((datasync ? fdatasync(fd) : fsync(fd)) < 0)
		die("fsync");
}

/* zlfs's WRITE and FSYNC time line: sums in ns in its status file */
static const char *const tl_keys[] = {
	"write_total_ns", "write_data_io_ns", "fsync_total_ns", "fsync_lock_ns",
	"fsync_prep_ns", "fsync_node_io_ns", "fsync_flush_ns", "dev_host_sync_ns",
};
static const char *const tl_names[] = {
	"write", "write_io", "fsync", "fsync_lock", "fsync_prep", "fsync_node_io",
	"fsync_flush", "host_sync",
};
#define NR_TL (sizeof(tl_keys) / sizeof(tl_keys[0]))

struct counters {
	bool ok;
	uint64_t ckpt, node, data, cmds, retries;
	uint64_t tl[NR_TL];
	bool have_tl;
};

static void read_status(const char *path, struct counters *c)
{
	char line[256];
	FILE *f;

	memset(c, 0, sizeof(*c));
	if (!path || !(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		if (sscanf(line, "checkpoints=%llu", &v) == 1)
			c->ckpt = v, c->ok = true;
		else if (sscanf(line, "node_blocks_written=%llu", &v) == 1)
			c->node = v;
		else if (sscanf(line, "user_blocks_written=%llu", &v) == 1)
			c->data = v;
		else if (sscanf(line, "disp_dispatched=%llu", &v) == 1)
			c->cmds = v;
		else if (sscanf(line, "disp_retries=%llu", &v) == 1)
			c->retries = v;
		for (size_t k = 0; k < NR_TL; k++) {
			size_t kl = strlen(tl_keys[k]);
			if (!strncmp(line, tl_keys[k], kl) && line[kl] == '=') {
				c->tl[k] = strtoull(line + kl + 1, NULL, 10);
				c->have_tl = true;
			}
		}
	}
	fclose(f);
}

/* completed flush requests of a block device (field 16 of its stat file), -1 if unknown */
static long long read_flushes(const char *path)
{
	unsigned long long f[17];
	FILE *fp;
	int n;

	if (!path || !(fp = fopen(path, "r")))
		return -1;
	n = fscanf(fp, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10],
		   &f[11], &f[12], &f[13], &f[14], &f[15], &f[16]);
	fclose(fp);
	return n == 17 ? (long long)f[15] : -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* nearest rank: the smallest value with at least q of the samples at or below it */
static uint64_t pct(const uint64_t *v, size_t n, double q)
{
	size_t k = (size_t)(q * (double)n + 0.999999);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

#ifndef ZLFS_VERSION
#define ZLFS_VERSION "unknown"
#endif

/* The usage text: on stdout with exit 0 when asked for (--help), on stderr
 * with exit 2 after a bad command line. */
static void usage_to(FILE *f, int status)
{
	fprintf(f, "usage: fsync-bench FILE [--size 64M] [--bs 4K] [--seconds 5] [--count N]\n"
		   "                   [--warmup N] [--random] [--datasync] [--status PATH]\n"
		   "                   [--blkstat PATH]\n"
		   "       fsync-bench --help | --version\n");
	exit(status);
}

static void usage(void)
{
	usage_to(stderr, 2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "bs", required_argument, NULL, 'b' },
		{ "seconds", required_argument, NULL, 't' },
		{ "count", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "random", no_argument, NULL, 'r' },
		{ "datasync", no_argument, NULL, 'd' },
		{ "status", required_argument, NULL, 'S' },
		{ "blkstat", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t size = 64ull << 20, bs = 4096, count = 0, warmup = 100;
	double seconds = 5;
	bool random_off = false, datasync = false;
	const char *status = NULL, *blkstat = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': size = parse_size(optarg); break;
		case 'b': bs = parse_size(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'n': count = strtoull(optarg, NULL, 0); break;
		case 'w': warmup = strtoull(optarg, NULL, 0); break;
		case 'r': random_off = true; break;
		case 'd': datasync = true; break;
		case 'S': status = optarg; break;
		case 'B': blkstat = optarg; break;
		case 'h': usage_to(stdout, 0); break;
		case 'V': printf("fsync-bench %s\n", ZLFS_VERSION); return 0;
		default: usage();
		}
	}
	if (optind != argc - 1 || !bs || size < bs || size % bs || (seconds <= 0 && !count))
		usage();
	const char *path = argv[optind];
	uint64_t blocks = size / bs;

	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(path);

	/* lay the file out: every block allocated and written once */
	size_t chunk = 1u << 20;
	unsigned char *big = malloc(chunk), *buf = malloc(bs);
	if (!big || !buf)
		die("malloc");
	for (uint64_t off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
		fill(big, n, off);
		if (pwrite(fd, big, n, (off_t)off) != (ssize_t)n)
			die("layout write");
	}
	if (fsync(fd) < 0)
		die("layout fsync");
	free(big);

	uint64_t seq = 0, rng = 0x5eedull, next = 0;
	size_t cap = 1u << 16, n = 0;
	uint64_t *lat = malloc(cap * sizeof(*lat));
	if (!lat)
		die("malloc");

	for (uint64_t i = 0; i < warmup; i++) {
		uint64_t blk = random_off ? rng_next(&rng) % blocks : next++ % blocks;
		fill(buf, bs, ++seq);
		write_sync(fd, buf, bs, blk * bs, datasync);
	}

	struct counters before, after;
	read_status(status, &before);
	long long fl0 = read_flushes(blkstat);
	uint64_t start = now_ns(), limit = seconds > 0 ? (uint64_t)(seconds * 1e9) : UINT64_MAX;
	uint64_t end = start;
	while (!count || n < count) {
		uint64_t blk = random_off ? rng_next(&rng) % blocks : next++ % blocks;
		fill(buf, bs, ++seq);
		uint64_t t0 = now_ns();
		write_sync(fd, buf, bs, blk * bs, datasync);
		end = now_ns();
		if (n == cap) {
			cap *= 2;
			lat = realloc(lat, cap * sizeof(*lat));
			if (!lat)
				die("realloc");
		}
		lat[n++] = end - t0;
		if (end - start >= limit)
			break;
	}
	read_status(status, &after);
	long long fl1 = read_flushes(blkstat);
	if (close(fd) < 0)
		die("close");

	double secs = (double)(end - start) / 1e9, sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)lat[i];
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("ops=%zu secs=%.2f iops=%.0f lat_p50_us=%.0f lat_p99_us=%.0f lat_max_us=%.0f "
	       "lat_mean_us=%.0f",
	       n, secs, (double)n / secs, (double)pct(lat, n, 0.50) / 1e3,
	       (double)pct(lat, n, 0.99) / 1e3, (double)lat[n - 1] / 1e3, sum / (double)n / 1e3);
	if (before.ok && after.ok)
		printf(" ckpt_per_op=%.3f node_per_op=%.3f data_per_op=%.3f cmd_per_op=%.3f"
		       " retry_per_op=%.3f",
		       (double)(after.ckpt - before.ckpt) / (double)n,
		       (double)(after.node - before.node) / (double)n,
		       (double)(after.data - before.data) / (double)n,
		       (double)(after.cmds - before.cmds) / (double)n,
		       (double)(after.retries - before.retries) / (double)n);
	if (fl0 >= 0 && fl1 >= 0)
		printf(" flush_per_op=%.3f", (double)(fl1 - fl0) / (double)n);
	if (before.have_tl && after.have_tl) {
		/* the time line: µs per pair in each stage; fuse_us is the rest of a
		 * pair's mean, spent outside zlfs's WRITE and FSYNC handlers */
		double in = 0;
		for (size_t k = 0; k < NR_TL; k++) {
			double us = (double)(after.tl[k] - before.tl[k]) / (double)n / 1e3;
			printf(" tl_%s_us=%.1f", tl_names[k], us);
			if (k == 0 || k == 2)
				in += us;
		}
		printf(" tl_outside_us=%.1f", sum / (double)n / 1e3 - in);
	}
	printf("\n");
	free(lat);
	free(buf);
	return 0;
}
