/*
 * zlfs-bench.c - drives a device through the dispatcher, like fio.
 *
 *   zlfs-bench --device SPEC --mode zwl|nolock|zwp --zones N --bs SIZE --qd N --ios N
 *              [--conv] [--merges] [--set KEY=VAL]...
 *   zlfs-bench --help | --version
 *
 * It resets the zones, writes sequentially into N sequential zones (or N
 * conventional ones with --conv: the ceiling with no ordering constraint),
 * keeping qd writes in flight, round robin over the zones; then reads back
 * everything and checks every block.  Each logical block carries a header
 * (magic, its LBA, the sequence number of the write) and a pattern derived
 * from both, so a block written twice, written in the wrong place or lost
 * is found.  Writes carry ZLFS_BIO_NO_ZWL, as the filesystem's do.
 *
 * By default the dispatcher does not merge (as sysfs nomerges=2), so IOPS
 * count device commands; --merges lets it merge adjacent writes.
 *
 * The last line is exactly:
 *   iops=N lat_p50_us=N lat_p99_us=N unaligned=N retries=N failed=N verify=ok|FAIL
 *
 * Locks: b.lock orders submissions, so each zone receives its writes in
 * LBA order (ZWP refuses anything else), and guards the counters.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zlfs/disp.h"

#ifndef ZLFS_VERSION
#define ZLFS_VERSION "unknown"
#endif

#define BLK_MAGIC 0x5a4c4653424e4348ull   /* "ZLFSBNCH" */

struct slot {
	struct zlfs_bio bio;
	void *buf;
	uint64_t seq;
};

struct bench {
	struct zlfs_disp *d;
	const struct zlfs_zdev_geom *g;
	uint32_t *zones;          /* zone numbers written */
	uint32_t nzones, bs, qd;
	uint64_t ios, next, done, failed;
	uint64_t *lat_ns;
	int submit_err;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool conv;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Where write number i goes: zone i % N, the (i / N)-th bs of that zone. */
static uint64_t io_offset(struct bench *b, uint64_t i)
{
	uint32_t z = b->zones[i % b->nzones];
	return (uint64_t)z * b->g->zone_size + (i / b->nzones) * b->bs;
}

static uint64_t pattern(uint64_t lba, uint64_t seq, uint64_t k)
{
	uint64_t x = (lba * 0x9e3779b97f4a7c15ull) ^ (seq + 1) ^ (k * 0xbf58476d1ce4e5b9ull);
	x ^= x >> 31;
	return x * 0x94d049bb133111ebull;
}

static void fill_block(uint8_t *p, uint32_t lbs, uint64_t lba, uint64_t seq)
{
	uint64_t *w = (uint64_t *)p;
	w[0] = BLK_MAGIC;
	w[1] = lba;
	w[2] = seq;
	for (uint32_t k = 3; k < lbs / 8; k++)
		w[k] = pattern(lba, seq, k);
}

static bool check_block(const uint8_t *p, uint32_t lbs, uint64_t lba, uint64_t seq)
{
	const uint64_t *w = (const uint64_t *)p;
	if (w[0] != BLK_MAGIC || w[1] != lba || w[2] != seq)
		return false;
	for (uint32_t k = 3; k < lbs / 8; k++)
		if (w[k] != pattern(lba, seq, k))
			return false;
	return true;
}

static void issue_locked(struct bench *b, struct slot *s);

static void write_end(struct zlfs_bio *bio)
{
	struct slot *s = (struct slot *)bio;
	struct bench *b = bio->priv;
	uint64_t t = now_ns();

	pthread_mutex_lock(&b->lock);
	b->lat_ns[s->seq] = t - bio->submit_ns;
	if (bio->result)
		b->failed++;
	b->done++;
	if (b->next < b->ios)
		issue_locked(b, s);
	if (b->done == b->ios)
		pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->lock);
}

/* Caller holds b->lock: the next write number goes out now, in order. */
static void issue_locked(struct bench *b, struct slot *s)
{
	uint64_t i = b->next++;
	uint64_t off = io_offset(b, i);
	uint32_t lbs = b->g->lbs;

	s->seq = i;
	for (uint32_t k = 0; k < b->bs / lbs; k++)
		fill_block((uint8_t *)s->buf + (size_t)k * lbs, lbs, off / lbs + k, i);
	memset(&s->bio, 0, sizeof(s->bio));
	s->bio.op = ZLFS_OP_WRITE;
	s->bio.prio = ZLFS_PRIO_BE;
	s->bio.flags = ZLFS_BIO_NO_ZWL;
	s->bio.off = off;
	s->bio.buf = s->buf;
	s->bio.len = b->bs;
	s->bio.end = write_end;
	s->bio.priv = b;
	int ret = zlfs_disp_submit(b->d, &s->bio);
	if (ret) {
		/* refused at submission: counts as done and failed */
		b->lat_ns[i] = 0;
		b->failed++;
		b->done++;
		if (!b->submit_err)
			b->submit_err = ret;
		if (b->next < b->ios)
			issue_locked(b, s);
		else if (b->done == b->ios)
			pthread_cond_broadcast(&b->cv);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Read back every zone and check each block; returns mismatching blocks. */
static uint64_t verify(struct bench *b, uint64_t *read_err)
{
	uint32_t lbs = b->g->lbs, per_io = b->bs / lbs;
	const uint32_t chunk = 1u << 20;
	uint64_t bad = 0;
	uint8_t *buf;

	if (posix_memalign((void **)&buf, 4096, chunk))
		return UINT64_MAX;
	for (uint32_t zi = 0; zi < b->nzones; zi++) {
		uint64_t zstart = (uint64_t)b->zones[zi] * b->g->zone_size;
		uint64_t nios = b->ios / b->nzones + (zi < b->ios % b->nzones);
		uint64_t bytes = nios * b->bs;
		for (uint64_t o = 0; o < bytes; o += chunk) {
			uint32_t n = bytes - o < chunk ? (uint32_t)(bytes - o) : chunk;
			int ret = zlfs_disp_rw(b->d, ZLFS_OP_READ, buf, n, zstart + o, 0, NULL);
			if (ret) {
				(*read_err)++;
				bad += n / lbs;
				continue;
			}
			for (uint32_t k = 0; k < n / lbs; k++) {
				uint64_t blk = (o / lbs) + k;              /* block within zone */
				uint64_t seq = (blk / per_io) * b->nzones + zi;
				if (!check_block(buf + (size_t)k * lbs, lbs, (zstart / lbs) + blk, seq))
					bad++;
			}
		}
		if (!b->conv) {
			/* nothing may have landed past what was written */
			struct zlfs_zone z;
			uint32_t nr = 1;
			if (zlfs_disp_report(b->d, b->zones[zi], &z, &nr) || nr != 1 ||
			    z.wp != zstart + bytes)
				bad++;
		}
	}
	free(buf);
	return bad;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zlfs-bench --device SPEC --mode zwl|nolock|zwp --zones N --bs SIZE --qd N --ios N\n"
		"                  [--conv] [--merges] [--set KEY=VAL]...\n"
		"Write N zones through the dispatcher, read them back and check every block.\n"
		"  -d, --device SPEC     the device (a device spec, as zlfs-zdev takes)\n"
		"  -m, --mode MODE       write ordering: zwl, nolock or zwp\n"
		"  -z, --zones N         zones written round robin (default 1)\n"
		"  -b, --bs SIZE         size of each write (default 4096)\n"
		"  -q, --qd N            writes in flight (default 32)\n"
		"  -n, --ios N           writes in all (default 10000)\n"
		"  -c, --conv            conventional zones instead of sequential ones\n"
		"  -M, --merges          let the dispatcher merge adjacent writes\n"
		"  -s, --set KEY=VAL     a dispatcher tunable (repeatable)\n"
		"  -h, --help            this text\n"
		"  -V, --version         the version\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "mode", required_argument, NULL, 'm' },
		{ "zones", required_argument, NULL, 'z' },
		{ "bs", required_argument, NULL, 'b' },
		{ "qd", required_argument, NULL, 'q' },
		{ "ios", required_argument, NULL, 'n' },
		{ "conv", no_argument, NULL, 'c' },
		{ "merges", no_argument, NULL, 'M' },
		{ "set", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct zlfs_disp_opts o;
	struct bench b;
	const char *spec = NULL;
	uint64_t bs = 4096, nz = 1, qd = 32, ios = 10000;
	bool merges = false;
	int c, ret;

	memset(&b, 0, sizeof(b));
	zlfs_disp_opts_default(&o);
	while ((c = getopt_long(argc, argv, "d:m:z:b:q:n:cMs:hV", lo, NULL)) != -1) {
		switch (c) {
		case 'd': spec = optarg; break;
		case 'm':
			if (zlfs_disp_opts_set(&o, "mode", optarg)) {
				fprintf(stderr, "zlfs-bench: mode is zwl, nolock or zwp\n");
				return 2;
			}
			break;
		case 'z': nz = strtoull(optarg, NULL, 0); break;
		case 'b':
			if (zlfs_parse_size(optarg, &bs)) {
				usage(stderr);
				return 2;
			}
			break;
		case 'q': qd = strtoull(optarg, NULL, 0); break;
		case 'n': ios = strtoull(optarg, NULL, 0); break;
		case 'c': b.conv = true; break;
		case 'M': merges = true; break;
		case 's': {
			char *eq = strchr(optarg, '=');
			if (!eq) {
				usage(stderr);
				return 2;
			}
			*eq = '\0';
			if (zlfs_disp_opts_set(&o, optarg, eq + 1)) {
				fprintf(stderr, "zlfs-bench: bad dispatcher setting %s\n", optarg);
				return 2;
			}
			break;
		}
		case 'h': usage(stdout); return 0;
		case 'V': printf("zlfs-bench %s\n", ZLFS_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!spec || !nz || !qd || !ios || optind != argc) {
		usage(stderr);
		return 2;
	}
	o.nomerges = !merges;

	struct zlfs_zdev *dev;
	if ((ret = zlfs_zdev_open(spec, &dev))) {
		fprintf(stderr, "zlfs-bench: %s: %s (%s)\n", spec, zlfs_zdev_errmsg(), strerror(-ret));
		return 1;
	}
	b.g = zlfs_zdev_geom(dev);
	if (bs % b.g->lbs || bs > (1u << 30) || bs > b.g->zone_cap) {
		fprintf(stderr, "zlfs-bench: bs must be a multiple of %u within a zone\n", b.g->lbs);
		return 2;
	}
	uint32_t avail = b.conv ? b.g->nr_conv : b.g->nr_zones - b.g->nr_conv;
	if (nz > avail) {
		fprintf(stderr, "zlfs-bench: the device has only %u %s zones\n", avail,
			b.conv ? "conventional" : "sequential");
		return 2;
	}
	uint64_t cap = b.conv ? b.g->zone_size : b.g->zone_cap;
	if (ios > nz * (cap / bs)) {
		fprintf(stderr, "zlfs-bench: %" PRIu64 " writes of %" PRIu64 " bytes do not fit in %"
			PRIu64 " zones (at most %" PRIu64 ")\n", ios, bs, nz, nz * (cap / bs));
		return 2;
	}
	if (o.nr_requests < 2 * qd)
		o.nr_requests = (uint32_t)(2 * qd);
	if ((ret = zlfs_disp_create(dev, &o, &b.d))) {
		fprintf(stderr, "zlfs-bench: dispatcher: %s\n", strerror(-ret));
		return 1;
	}
	b.bs = (uint32_t)bs;
	b.qd = (uint32_t)qd;
	b.ios = ios;
	b.nzones = (uint32_t)nz;
	b.zones = calloc(nz, sizeof(*b.zones));
	b.lat_ns = calloc(ios, sizeof(*b.lat_ns));
	struct slot *slots = calloc(qd, sizeof(*slots));
	if (!b.zones || !b.lat_ns || !slots)
		return 1;
	for (uint32_t i = 0; i < nz; i++) {
		b.zones[i] = b.conv ? i : b.g->nr_conv + i;
		if (!b.conv && (ret = zlfs_disp_zone_mgmt(b.d, ZLFS_ZM_RESET, b.zones[i]))) {
			fprintf(stderr, "zlfs-bench: reset zone %u: %s\n", b.zones[i],
				zlfs_zdev_strerror(ret));
			return 1;
		}
	}
	for (uint64_t i = 0; i < qd; i++)
		if (posix_memalign(&slots[i].buf, 4096, bs))
			return 1;
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cv, NULL);

	printf("device %s mode=%s zones=%u%s bs=%u qd=%u ios=%" PRIu64 " merges=%s\n", spec,
	       zlfs_order_mode_str(zlfs_disp_mode(b.d)), b.nzones, b.conv ? " (conventional)" : "",
	       b.bs, b.qd, b.ios, merges ? "on" : "off");
	uint64_t t0 = now_ns();
	pthread_mutex_lock(&b.lock);
	for (uint64_t i = 0; i < qd && b.next < ios; i++)
		issue_locked(&b, &slots[i]);
	while (b.done < b.ios)
		pthread_cond_wait(&b.cv, &b.lock);
	pthread_mutex_unlock(&b.lock);
	uint64_t t1 = now_ns();
	zlfs_disp_drain(b.d);

	struct zlfs_disp_stats st;
	struct zlfs_zdev_stats ds;
	zlfs_disp_stats(b.d, &st);
	zlfs_zdev_stats(dev, &ds);
	uint64_t read_err = 0;
	uint64_t bad = verify(&b, &read_err);

	qsort(b.lat_ns, ios, sizeof(*b.lat_ns), cmp_u64);
	double secs = (double)(t1 - t0) / 1e9;
	uint64_t iops = (uint64_t)((double)ios / secs);
	printf("elapsed_s=%.3f MBps=%.1f dispatched=%" PRIu64 " merged=%" PRIu64
	       " max_zone_inflight=%u max_parked=%u recovered=%" PRIu64 " resyncs=%" PRIu64
	       " plugged=%" PRIu64 "\n", secs, (double)ios * (double)bs / secs / 1e6, st.dispatched,
	       st.merged, st.max_zone_inflight, st.max_parked, st.recovered, st.resyncs, st.plugged);
	printf("device: cmds=%" PRIu64 " unaligned=%" PRIu64 " requeues=%" PRIu64
	       " hibernations=%" PRIu64 " reordered=%" PRIu64 "\n", ds.cmds, ds.unaligned,
	       ds.requeues, ds.hibernations, ds.reordered);
	if (b.submit_err)
		printf("first refusal at submission: %s\n", zlfs_zdev_strerror(b.submit_err));
	if (bad)
		printf("verify: %" PRIu64 " bad blocks, %" PRIu64 " read errors\n", bad, read_err);
	printf("iops=%" PRIu64 " lat_p50_us=%" PRIu64 " lat_p99_us=%" PRIu64 " unaligned=%" PRIu64
	       " retries=%" PRIu64 " failed=%" PRIu64 " verify=%s\n", iops,
	       b.lat_ns[ios / 2] / 1000, b.lat_ns[(ios * 99) / 100] / 1000, st.unaligned, st.retries,
	       b.failed, bad ? "FAIL" : "ok");

	zlfs_disp_destroy(b.d);
	zlfs_zdev_close(dev);
	for (uint64_t i = 0; i < qd; i++)
		free(slots[i].buf);
	free(slots);
	free(b.zones);
	free(b.lat_ns);
	return bad || b.failed ? 1 : 0;
}
