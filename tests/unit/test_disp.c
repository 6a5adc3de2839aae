/*
 * test_disp.c - the mq-deadline dispatcher through its public API
 * (include/zlfs/disp.h, fs/blk/disp.c) on mem: devices.
 *
 * Scheduling order is observed on a device with one slot
 * (queues=1,qd=1): a "gate" write is submitted first and its end()
 * callback blocks the device's only worker thread, so whatever is
 * dispatched next (one "blocker" write) cannot complete; the requests
 * under test then pile up in the scheduler, the gate is opened, and the
 * order of their end() callbacks is the dispatch order.  Nothing here
 * depends on timing except where a deadline is the point of the test.
 *
 * Covers:
 *   - read deadline expiry (read_expire=0: FIFO order; large: LBA order;
 *     fifo_batch continuing a batch in sort order after an expired head);
 *   - writes_starved (fifo_batch=1, writes_starved=2: R R W R R W ...);
 *   - batching (fifo_batch=4, writes_starved=1: RRRRWWWWRRRRWWWW);
 *   - strict priority RT > BE > IDLE (also while a higher level only has
 *     requests in flight) and priority aging
 *     (prio_aging_expire=0, and an old BE request ahead of RT);
 *   - back and front merges up to max_req_kb (merged counter, device
 *     commands, data), front_merges=0, nomerges=1, no merge across zones
 *     nor between locked and lock-free writes, read merges;
 *   - nr_requests / async_depth: tiny limits do not deadlock, async_depth
 *     bounds asynchronous writes in flight, ZLFS_BIO_SYNC writes are not;
 *   - ZWL: one write per sequential zone in flight at qd 32 over several
 *     zones on a reordering device, writes queued out of LBA order are
 *     dispatched lowest LBA first (FIFO and sort paths);
 *   - ZWP: one write per zone, unaligned writes refused at submission
 *     with -ZLFS_EUNALIGNED (end() not called), zone append emulation
 *     (sequential bio->pos), an injected write error fails the plugged
 *     bios with EIO and marks the zone for resync until report or reset;
 *   - ZWL / NOLOCK pass zone appends to the device: bio->pos is where the
 *     data went;
 *   - NOLOCK falls back to ZWL on a device without no_zwl;
 *   - a device without zones (every mode: spans, out-of-order writes,
 *     zone commands refused) and the reset of all zones with a prefix;
 *   - zlfs_disp_opts_set / defaults / zlfs_disp_create argument checks and
 *     zlfs_disp_submit argument checks.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "zlfs/disp.h"

#define MB (1ull << 20)
#define ZS (16 * MB)
#define BLK 4096u
/* one device slot: requests wait in the scheduler while it is busy */
#define SPEC_Q1 "mem:size=256M,zone_size=16M,conv_zones=4,queues=1,qd=1,lat_us=200"
/* 32 slots on one queue, in order */
#define SPEC_Q32 "mem:size=256M,zone_size=16M,conv_zones=4,queues=1,qd=32,lat_us=50"
/* 32 slots over two queues that reorder */
#define SPEC_REORDER \
	"mem:size=256M,zone_size=16M,conv_zones=4,queues=2,qd=16,lat_us=50,reorder=0.3," \
	"hibernate_ms=1"
/* the gate and the blocker live at the top of conventional zone 3 */
#define OFF_GATE (3 * ZS + 8 * MB)
#define OFF_BLOCKER (3 * ZS + 12 * MB)
#define SEQ0 4u    /* first sequential zone */

/* ---- helpers ------------------------------------------------------------ */

struct env {
	struct zlfs_zdev *dev;
	struct zlfs_disp *d;
	const struct zlfs_zdev_geom *g;
};

/* Open spec and a dispatcher with opts "name", "val", ..., NULL. */
static void env_open(struct env *e, const char *spec, ...)
{
	struct zlfs_disp_opts o;
	va_list ap;
	const char *k;

	zlfs_disp_opts_default(&o);
	va_start(ap, spec);
	while ((k = va_arg(ap, const char *))) {
		const char *v = va_arg(ap, const char *);
		ck_assert_msg(zlfs_disp_opts_set(&o, k, v) == 0, "option %s=%s", k, v);
	}
	va_end(ap);
	ck_assert_msg(zlfs_zdev_open(spec, &e->dev) == 0, "open %s: %s", spec, zlfs_zdev_errmsg());
	e->g = zlfs_zdev_geom(e->dev);
	ck_assert_int_eq(zlfs_disp_create(e->dev, &o, &e->d), 0);
}

static void env_close(struct env *e)
{
	zlfs_disp_destroy(e->d);
	zlfs_zdev_close(e->dev);
}

static uint64_t zstart(uint32_t zone)
{
	return (uint64_t)zone * ZS;
}

/* The gate: a write whose end() holds the device worker until opened. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool entered, open;
	struct zlfs_bio bio;
	char buf[BLK];
};

static void gate_end(struct zlfs_bio *b)
{
	struct gate *g = b->priv;

	pthread_mutex_lock(&g->mu);
	g->entered = true;
	pthread_cond_broadcast(&g->cv);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

static void gate_close(struct env *e, struct gate *g)
{
	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->bio.op = ZLFS_OP_WRITE;
	g->bio.prio = ZLFS_PRIO_BE;
	g->bio.off = OFF_GATE;
	g->bio.buf = g->buf;
	g->bio.len = BLK;
	g->bio.end = gate_end;
	g->bio.priv = g;
	ck_assert_int_eq(zlfs_disp_submit(e->d, &g->bio), 0);
	pthread_mutex_lock(&g->mu);
	while (!g->entered)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
	ck_assert_int_eq(g->bio.result, 0);
}

static void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* Completion recorder. */
struct rec {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int n;
	int order[1024];
};

struct tbio {
	struct zlfs_bio bio;
	struct rec *rec;
	int id;
	int calls;
	uint64_t pos;
	char *buf;
};

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
}

static void rec_end(struct zlfs_bio *b)
{
	struct tbio *t = (struct tbio *)b;
	struct rec *r = t->rec;

	pthread_mutex_lock(&r->mu);
	t->calls++;
	t->pos = b->pos;
	if (r->n < (int)(sizeof(r->order) / sizeof(r->order[0])))
		r->order[r->n] = t->id;
	r->n++;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Wait (at most 20 s) until n end() calls were recorded. */
static void rec_wait(struct rec *r, int n)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	pthread_mutex_lock(&r->mu);
	while (r->n < n) {
		if (pthread_cond_timedwait(&r->cv, &r->mu, &ts)) {
			int got = r->n;
			pthread_mutex_unlock(&r->mu);
			ck_abort_msg("only %d of %d bios completed", got, n);
		}
	}
	pthread_mutex_unlock(&r->mu);
}

static int rec_count(struct rec *r)
{
	pthread_mutex_lock(&r->mu);
	int n = r->n;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* Prepare (not submit) t. Write data is a pattern from the offset. */
static void tb_prep(struct tbio *t, struct rec *r, int id, uint8_t op, uint8_t prio, uint64_t off,
		    uint32_t len, uint32_t flags)
{
	memset(&t->bio, 0, sizeof(t->bio));
	t->rec = r;
	t->id = id;
	t->calls = 0;
	t->buf = realloc(t->buf, len);
	ck_assert_ptr_nonnull(t->buf);
	if (op == ZLFS_OP_READ)
		memset(t->buf, 0xee, len);
	else
		tu_fill(t->buf, len, off / BLK + 77);
	t->bio.op = op;
	t->bio.prio = prio;
	t->bio.flags = flags;
	t->bio.off = off;
	t->bio.buf = t->buf;
	t->bio.len = len;
	t->bio.end = rec_end;
}

static void tb_submit(struct env *e, struct tbio *t, struct rec *r, int id, uint8_t op,
		      uint8_t prio, uint64_t off, uint32_t len, uint32_t flags)
{
	tb_prep(t, r, id, op, prio, off, len, flags);
	int ret = zlfs_disp_submit(e->d, &t->bio);
	ck_assert_msg(ret == 0, "submit id %d off %llu: %d", id, (unsigned long long)off, ret);
}

static void tb_free(struct tbio *t, int n)
{
	for (int i = 0; i < n; i++) {
		free(t[i].buf);
		t[i].buf = NULL;
	}
}

/* Read [off, off+len) through the dispatcher and compare with the write pattern. */
static void check_pattern(struct env *e, uint64_t off, uint32_t len)
{
	char *got = malloc(len), *want = malloc(BLK);

	ck_assert_int_eq(zlfs_disp_rw(e->d, ZLFS_OP_READ, got, len, off, 0, NULL), 0);
	for (uint32_t o = 0; o < len; o += BLK) {
		tu_fill(want, BLK, (off + o) / BLK + 77);
		ck_assert_msg(!memcmp(got + o, want, BLK), "block at %llu holds the wrong data",
			      (unsigned long long)(off + o));
	}
	free(got);
	free(want);
}

static struct zlfs_zone report1(struct env *e, uint32_t zone)
{
	struct zlfs_zone z;
	uint32_t nr = 1;

	ck_assert_int_eq(zlfs_disp_report(e->d, zone, &z, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	return z;
}

/*
 * Start an ordering experiment on a SPEC_Q1 device: the gate holds the
 * worker and a blocker write (recorded with id 1000) holds the only slot.
 */
static void order_begin(struct env *e, struct gate *g, struct rec *r, struct tbio *blocker)
{
	rec_init(r);
	gate_close(e, g);
	tb_submit(e, blocker, r, 1000, ZLFS_OP_WRITE, ZLFS_PRIO_BE, OFF_BLOCKER, BLK, 0);
}

/* Open the gate, wait for the blocker and n more, check the order. */
static void order_expect(struct gate *g, struct rec *r, const int *want, int n)
{
	gate_open(g);
	rec_wait(r, n + 1);
	ck_assert_int_eq(r->order[0], 1000);
	for (int i = 0; i < n; i++)
		ck_assert_msg(r->order[i + 1] == want[i], "dispatch %d: got id %d, want %d", i,
			      r->order[i + 1], want[i]);
}

/* ---- deadlines, starvation, batching ------------------------------------- */

static const int read_perm[8] = { 5, 2, 7, 0, 3, 6, 1, 4 };

/* 8 reads in zone 0 at 64K steps, submitted in read_perm order; id = LBA rank */
static void read_order_case(const char *read_expire, const char *fifo_batch, const int *want)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[9];

	memset(t, 0, sizeof(t));
	env_open(&e, SPEC_Q1, "read_expire", read_expire, "fifo_batch", fifo_batch, "nomerges", "1",
		 "nr_requests", "64", "async_depth", "64", NULL);
	order_begin(&e, &g, &r, &t[8]);
	for (int i = 0; i < 8; i++)
		tb_submit(&e, &t[i], &r, read_perm[i], ZLFS_OP_READ, ZLFS_PRIO_BE,
			  (uint64_t)read_perm[i] * 64 * 1024, BLK, 0);
	order_expect(&g, &r, want, 8);
	for (int i = 0; i < 9; i++) {
		ck_assert_int_eq(t[i].calls, 1);
		ck_assert_int_eq(t[i].bio.result, 0);
	}
	env_close(&e);
	tb_free(t, 9);
}

START_TEST(test_read_expire_fifo)
{
	/* every read has expired: with one request per batch, FIFO order wins */
	read_order_case("0", "1", read_perm);
}
END_TEST

START_TEST(test_read_expire_lba)
{
	static const int lba[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };

	/* nothing expires: sort (LBA) order, batch or not */
	read_order_case("100000", "1", lba);
	read_order_case("100000", "16", lba);
}
END_TEST

START_TEST(test_read_expire_batch)
{
	/*
	 * Expired, but a batch continues in sort order from the expired head
	 * until nothing lies above it; then the FIFO head starts the next.
	 */
	static const int want[8] = { 5, 6, 7, 2, 3, 4, 0, 1 };
	read_order_case("0", "16", want);
}
END_TEST

/* nr reads (ids 0..) and nw writes (ids 100..), LBA ascending, submitted interleaved */
static void rw_order_case(const char *fifo_batch, const char *writes_starved, int nr, int nw,
			  char *got)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[33];

	memset(t, 0, sizeof(t));
	env_open(&e, SPEC_Q1, "fifo_batch", fifo_batch, "writes_starved", writes_starved,
		 "nomerges", "1", "nr_requests", "64", "async_depth", "64", NULL);
	order_begin(&e, &g, &r, &t[32]);
	int ri = 0, wi = 0, k = 0;
	while (ri < nr || wi < nw) {
		if (wi < nw) {
			tb_submit(&e, &t[k++], &r, 100 + wi, ZLFS_OP_WRITE, ZLFS_PRIO_BE,
				  ZS + (uint64_t)wi * 64 * 1024, BLK, 0);
			wi++;
		}
		if (ri < nr) {
			tb_submit(&e, &t[k++], &r, ri, ZLFS_OP_READ, ZLFS_PRIO_BE,
				  (uint64_t)ri * 64 * 1024, BLK, 0);
			ri++;
		}
	}
	gate_open(&g);
	rec_wait(&r, nr + nw + 1);
	ck_assert_int_eq(r.order[0], 1000);
	/* directions, and LBA order within each direction */
	int lastr = -1, lastw = 99;
	for (int i = 0; i < nr + nw; i++) {
		int id = r.order[i + 1];
		got[i] = id >= 100 ? 'W' : 'R';
		if (id >= 100) {
			ck_assert_int_eq(id, lastw + 1);
			lastw = id;
		} else {
			ck_assert_int_eq(id, lastr + 1);
			lastr = id;
		}
	}
	got[nr + nw] = '\0';
	for (int i = 0; i < k; i++)
		ck_assert_int_eq(t[i].bio.result, 0);
	env_close(&e);
	tb_free(t, 33);
}

START_TEST(test_writes_starved)
{
	char got[40];

	rw_order_case("1", "2", 6, 3, got);
	ck_assert_str_eq(got, "RRWRRWRRW");
	/* once the reads are gone the writes go */
	rw_order_case("1", "2", 4, 4, got);
	ck_assert_str_eq(got, "RRWRRWWW");
	/* writes_starved=0: writes whenever any are waiting */
	rw_order_case("1", "0", 3, 3, got);
	ck_assert_str_eq(got, "WWWRRR");
}
END_TEST

START_TEST(test_batching)
{
	char got[40];

	rw_order_case("4", "1", 8, 8, got);
	ck_assert_str_eq(got, "RRRRWWWWRRRRWWWW");
	rw_order_case("2", "1", 4, 4, got);
	ck_assert_str_eq(got, "RRWWRRWW");
}
END_TEST

/* ---- priorities ---------------------------------------------------------------- */

START_TEST(test_strict_priority)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[10];
	static const uint8_t prio_of[9] = { ZLFS_PRIO_IDLE, ZLFS_PRIO_BE, ZLFS_PRIO_RT,
					    ZLFS_PRIO_IDLE, ZLFS_PRIO_BE, ZLFS_PRIO_RT,
					    ZLFS_PRIO_IDLE, ZLFS_PRIO_BE, ZLFS_PRIO_RT };

	memset(t, 0, sizeof(t));
	env_open(&e, SPEC_Q1, "nomerges", "1", "nr_requests", "64", "async_depth", "64", NULL);
	order_begin(&e, &g, &r, &t[9]);
	/* id = prio * 10 + i; reads and writes of every class, IDLE first */
	for (int i = 0; i < 9; i++) {
		uint8_t op = i % 2 ? ZLFS_OP_READ : ZLFS_OP_WRITE;
		tb_submit(&e, &t[i], &r, prio_of[i] * 10 + i, op, prio_of[i],
			  ZS + (uint64_t)i * 64 * 1024, BLK, 0);
	}
	gate_open(&g);
	rec_wait(&r, 10);
	ck_assert_int_eq(r.order[0], 1000);
	for (int i = 0; i < 9; i++)
		ck_assert_msg(r.order[i + 1] / 10 == i / 3, "dispatch %d was id %d (class %d)", i,
			      r.order[i + 1], r.order[i + 1] / 10);
	env_close(&e);
	tb_free(t, 10);
}
END_TEST

/* A level with requests in flight holds the lower ones back (dd_queued). */
START_TEST(test_strict_priority_inflight)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[3];
	struct zlfs_disp_stats st;

	memset(t, 0, sizeof(t));
	/* two device slots, the worker held: dispatched requests stay in flight */
	env_open(&e, "mem:size=256M,zone_size=16M,conv_zones=4,queues=1,qd=2,lat_us=200",
		 "nomerges", "1", NULL);
	rec_init(&r);
	gate_close(&e, &g);
	tb_submit(&e, &t[0], &r, 0, ZLFS_OP_READ, ZLFS_PRIO_RT, 0, BLK, 0);
	tb_submit(&e, &t[1], &r, 1, ZLFS_OP_READ, ZLFS_PRIO_BE, MB, BLK, 0);
	tb_submit(&e, &t[2], &r, 2, ZLFS_OP_READ, ZLFS_PRIO_IDLE, 2 * MB, BLK, 0);
	zlfs_disp_stats(e.d, &st);
	/* the gate and the RT read: a slot is free, but BE and IDLE wait */
	ck_assert_uint_eq(st.dispatched, 2);
	ck_assert_uint_eq(st.inserted, 4);
	gate_open(&g);
	rec_wait(&r, 3);
	ck_assert_int_eq(r.order[0], 0);
	ck_assert_int_eq(r.order[1], 1);
	ck_assert_int_eq(r.order[2], 2);
	env_close(&e);
	tb_free(t, 3);
}
END_TEST

START_TEST(test_prio_aging_zero)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[6];
	static const int want[5] = { 1, 2, 10, 11, 12 };

	memset(t, 0, sizeof(t));
	/* every request counts as old: BE, then IDLE, go before RT */
	env_open(&e, SPEC_Q1, "prio_aging_expire", "0", "nomerges", "1", "nr_requests", "64",
		 "async_depth", "64", NULL);
	order_begin(&e, &g, &r, &t[5]);
	tb_submit(&e, &t[0], &r, 10, ZLFS_OP_READ, ZLFS_PRIO_RT, 0, BLK, 0);
	tb_submit(&e, &t[1], &r, 11, ZLFS_OP_READ, ZLFS_PRIO_RT, 64 * 1024, BLK, 0);
	tb_submit(&e, &t[2], &r, 1, ZLFS_OP_READ, ZLFS_PRIO_BE, 128 * 1024, BLK, 0);
	tb_submit(&e, &t[3], &r, 12, ZLFS_OP_READ, ZLFS_PRIO_RT, 192 * 1024, BLK, 0);
	tb_submit(&e, &t[4], &r, 2, ZLFS_OP_READ, ZLFS_PRIO_IDLE, 256 * 1024, BLK, 0);
	order_expect(&g, &r, want, 5);
	env_close(&e);
	tb_free(t, 6);
}
END_TEST

START_TEST(test_prio_aging_old_be)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[5];
	/* the old BE read, then RT, then the young BE read */
	static const int want[4] = { 1, 10, 11, 2 };

	memset(t, 0, sizeof(t));
	env_open(&e, SPEC_Q1, "prio_aging_expire", "300", "read_expire", "100000", "nomerges", "1",
		 "nr_requests", "64", "async_depth", "64", NULL);
	order_begin(&e, &g, &r, &t[4]);
	tb_submit(&e, &t[0], &r, 1, ZLFS_OP_READ, ZLFS_PRIO_BE, 0, BLK, 0);
	usleep(450 * 1000);
	tb_submit(&e, &t[1], &r, 10, ZLFS_OP_READ, ZLFS_PRIO_RT, ZS, BLK, 0);
	tb_submit(&e, &t[2], &r, 11, ZLFS_OP_READ, ZLFS_PRIO_RT, ZS + 64 * 1024, BLK, 0);
	tb_submit(&e, &t[3], &r, 2, ZLFS_OP_READ, ZLFS_PRIO_BE, 64 * 1024, BLK, 0);
	order_expect(&g, &r, want, 4);
	env_close(&e);
	tb_free(t, 5);
}
END_TEST

/* ---- merges --------------------------------------------------------------------- */

/*
 * Queue n 4K writes at base + order[i] * 4K behind the gate and blocker;
 * return the merged count and the device write commands they took.
 */
static void merge_case(const char *max_req_kb, const char *front, const char *nomerges,
		       const int *order, int n, uint64_t base, uint64_t *merged, uint64_t *cmds)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[65];
	struct zlfs_zdev_stats s0, s1;
	struct zlfs_disp_stats st;

	memset(t, 0, sizeof(t));
	env_open(&e, SPEC_Q1, "max_req_kb", max_req_kb, "front_merges", front, "nomerges", nomerges,
		 "nr_requests", "256", "async_depth", "256", NULL);
	zlfs_zdev_stats(e.dev, &s0);
	order_begin(&e, &g, &r, &t[64]);
	for (int i = 0; i < n; i++)
		tb_submit(&e, &t[i], &r, i, ZLFS_OP_WRITE, ZLFS_PRIO_BE, base + (uint64_t)order[i] * BLK,
			  BLK, 0);
	gate_open(&g);
	rec_wait(&r, n + 1);
	zlfs_disp_drain(e.d);
	zlfs_zdev_stats(e.dev, &s1);
	zlfs_disp_stats(e.d, &st);
	*merged = st.merged;
	*cmds = s1.writes - s0.writes - 2;   /* minus the gate and the blocker */
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(t[i].calls, 1);
		ck_assert_int_eq(t[i].bio.result, 0);
		ck_assert_uint_eq(t[i].pos, base + (uint64_t)order[i] * BLK);
	}
	for (int i = 0; i < n; i++)
		check_pattern(&e, base + (uint64_t)order[i] * BLK, BLK);
	ck_assert_uint_eq(st.failed, 0);
	env_close(&e);
	tb_free(t, 65);
}

START_TEST(test_back_merges)
{
	static const int up[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	uint64_t merged, cmds;

	merge_case("512", "1", "0", up, 8, 0, &merged, &cmds);
	ck_assert_uint_eq(merged, 7);
	ck_assert_uint_eq(cmds, 1);
	/* capped at 16K per request */
	merge_case("16", "1", "0", up, 8, 0, &merged, &cmds);
	ck_assert_uint_eq(merged, 6);
	ck_assert_uint_eq(cmds, 2);
	/* more bios than the 4 inline iovecs of a request */
	static int many[64];
	for (int i = 0; i < 64; i++)
		many[i] = i;
	merge_case("512", "1", "0", many, 64, 2 * MB, &merged, &cmds);
	ck_assert_uint_eq(merged, 63);
	ck_assert_uint_eq(cmds, 1);
}
END_TEST

START_TEST(test_front_merges)
{
	static const int down[8] = { 7, 6, 5, 4, 3, 2, 1, 0 };
	static const int mixed[8] = { 4, 3, 5, 2, 6, 1, 7, 0 };
	uint64_t merged, cmds;

	merge_case("512", "1", "0", down, 8, ZS, &merged, &cmds);
	ck_assert_uint_eq(merged, 7);
	ck_assert_uint_eq(cmds, 1);
	merge_case("512", "1", "0", mixed, 8, ZS, &merged, &cmds);
	ck_assert_uint_eq(merged, 7);
	ck_assert_uint_eq(cmds, 1);
	merge_case("8", "1", "0", down, 8, ZS, &merged, &cmds);
	ck_assert_uint_eq(merged, 4);
	ck_assert_uint_eq(cmds, 4);
	/* front_merges=0: descending bios never join */
	merge_case("512", "0", "0", down, 8, ZS, &merged, &cmds);
	ck_assert_uint_eq(merged, 0);
	ck_assert_uint_eq(cmds, 8);
}
END_TEST

START_TEST(test_nomerges)
{
	static const int up[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	uint64_t merged, cmds;

	merge_case("512", "1", "1", up, 8, 0, &merged, &cmds);
	ck_assert_uint_eq(merged, 0);
	ck_assert_uint_eq(cmds, 8);
}
END_TEST

START_TEST(test_no_merge_across_zones)
{
	/* the last block of zone 0 and the first of zone 1: adjacent, but no */
	static const int pair[2] = { 0, 1 };
	uint64_t merged, cmds;

	merge_case("512", "1", "0", pair, 2, ZS - BLK, &merged, &cmds);
	ck_assert_uint_eq(merged, 0);
	ck_assert_uint_eq(cmds, 2);
	static const int rpair[2] = { 1, 0 };
	merge_case("512", "1", "0", rpair, 2, 2 * ZS - BLK, &merged, &cmds);
	ck_assert_uint_eq(merged, 0);
	ck_assert_uint_eq(cmds, 2);
}
END_TEST

START_TEST(test_read_merges)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[7];
	struct zlfs_zdev_stats s0, s1;
	struct zlfs_disp_stats st;
	char *data = malloc(8 * BLK);

	memset(t, 0, sizeof(t));
	env_open(&e, SPEC_Q1, "nr_requests", "64", "async_depth", "64", NULL);
	tu_fill(data, 8 * BLK, 4242);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, data, 8 * BLK, 0, 0, NULL), 0);
	/* reads across a zone boundary, too */
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, data, 2 * BLK, ZS - BLK, 0, NULL), 0);
	zlfs_zdev_stats(e.dev, &s0);
	order_begin(&e, &g, &r, &t[6]);
	static const int blk[4] = { 2, 3, 1, 0 };   /* back, back, front, front */
	for (int i = 0; i < 4; i++)
		tb_submit(&e, &t[i], &r, i, ZLFS_OP_READ, ZLFS_PRIO_BE, (uint64_t)blk[i] * BLK, BLK, 0);
	tb_submit(&e, &t[4], &r, 4, ZLFS_OP_READ, ZLFS_PRIO_BE, ZS - BLK, BLK, 0);
	tb_submit(&e, &t[5], &r, 5, ZLFS_OP_READ, ZLFS_PRIO_BE, ZS, BLK, 0);
	gate_open(&g);
	rec_wait(&r, 7);
	zlfs_disp_drain(e.d);
	zlfs_zdev_stats(e.dev, &s1);
	zlfs_disp_stats(e.d, &st);
	ck_assert_uint_eq(st.merged, 3);
	ck_assert_uint_eq(s1.reads - s0.reads, 3);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(t[i].bio.result, 0);
		ck_assert_mem_eq(t[i].buf, data + blk[i] * BLK, BLK);
	}
	ck_assert_mem_eq(t[4].buf, data, BLK);
	ck_assert_mem_eq(t[5].buf, data + BLK, BLK);
	env_close(&e);
	tb_free(t, 7);
	free(data);
}
END_TEST

START_TEST(test_no_merge_locked_with_lockfree)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[5];
	struct zlfs_zdev_stats s0, s1;
	struct zlfs_disp_stats st;
	uint64_t z = zstart(SEQ0);

	memset(t, 0, sizeof(t));
	env_open(&e, SPEC_Q1, "mode", "nolock", "nr_requests", "64", "async_depth", "64", NULL);
	ck_assert_uint_eq(zlfs_disp_mode(e.d), ZLFS_MODE_NOLOCK);
	zlfs_zdev_stats(e.dev, &s0);
	order_begin(&e, &g, &r, &t[4]);
	tb_submit(&e, &t[0], &r, 0, ZLFS_OP_WRITE, ZLFS_PRIO_BE, z, BLK, 0);
	tb_submit(&e, &t[1], &r, 1, ZLFS_OP_WRITE, ZLFS_PRIO_BE, z + BLK, BLK, 0);
	tb_submit(&e, &t[2], &r, 2, ZLFS_OP_WRITE, ZLFS_PRIO_BE, z + 2 * BLK, BLK, ZLFS_BIO_NO_ZWL);
	tb_submit(&e, &t[3], &r, 3, ZLFS_OP_WRITE, ZLFS_PRIO_BE, z + 3 * BLK, BLK, ZLFS_BIO_NO_ZWL);
	gate_open(&g);
	rec_wait(&r, 5);
	zlfs_disp_drain(e.d);
	zlfs_zdev_stats(e.dev, &s1);
	zlfs_disp_stats(e.d, &st);
	ck_assert_uint_eq(st.merged, 2);                 /* 0+1 and 2+3, not 1+2 */
	ck_assert_uint_eq(s1.writes - s0.writes - 2, 2);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(t[i].bio.result, 0);
	check_pattern(&e, z, 4 * BLK);
	ck_assert_uint_eq(report1(&e, SEQ0).wp, z + 4 * BLK);
	env_close(&e);
	tb_free(t, 5);
}
END_TEST

/* ---- tags: nr_requests / async_depth ---------------------------------------------- */

struct load {
	struct env *e;
	atomic_int done, bad;
	uint32_t zone;
	int kind;
	int n;
};

static void load_end(struct zlfs_bio *b)
{
	struct load *l = b->priv;

	if (b->result)
		atomic_fetch_add(&l->bad, 1);
	atomic_fetch_add(&l->done, 1);
}

static void *load_thread(void *arg)
{
	struct load *l = arg;
	struct zlfs_bio *bios = calloc((size_t)l->n, sizeof(*bios));
	char *buf = malloc(BLK), *rbuf = malloc(BLK);

	tu_fill(buf, BLK, 9);
	for (int i = 0; i < l->n; i++) {
		int ret;
		uint64_t off = zstart(l->zone) + (uint64_t)i * BLK;
		switch (l->kind) {
		case 0:   /* asynchronous lock-free writes, in order */
		case 1:   /* asynchronous writes to a conventional zone */
			bios[i].op = ZLFS_OP_WRITE;
			bios[i].prio = ZLFS_PRIO_BE;
			bios[i].flags = l->kind == 0 ? ZLFS_BIO_NO_ZWL : 0;
			bios[i].off = off;
			bios[i].buf = buf;
			bios[i].len = BLK;
			bios[i].end = load_end;
			bios[i].priv = l;
			ret = zlfs_disp_submit(l->e->d, &bios[i]);
			if (ret)
				atomic_fetch_add(&l->bad, 1000);
			break;
		case 2:   /* synchronous reads */
			ret = zlfs_disp_rw(l->e->d, ZLFS_OP_READ, rbuf, BLK, off, 0, NULL);
			if (ret)
				atomic_fetch_add(&l->bad, 1);
			atomic_fetch_add(&l->done, 1);
			break;
		default:  /* synchronous zone-locked writes */
			ret = zlfs_disp_rw(l->e->d, ZLFS_OP_WRITE, buf, BLK, off, 0, NULL);
			if (ret)
				atomic_fetch_add(&l->bad, 1);
			atomic_fetch_add(&l->done, 1);
			break;
		}
	}
	/* the async bios must outlive their completion */
	for (int ms = 0; ms < 20000 && atomic_load(&l->done) < l->n; ms++)
		usleep(1000);
	free(bios);
	free(buf);
	free(rbuf);
	return NULL;
}

static void tags_case(const char *nr_requests, const char *async_depth)
{
	struct env e;
	struct load l[4];
	pthread_t th[4];

	env_open(&e, "mem:size=256M,zone_size=16M,conv_zones=4,queues=2,qd=4,lat_us=20",
		 "mode", "nolock", "nr_requests", nr_requests, "async_depth", async_depth, NULL);
	for (int i = 0; i < 4; i++) {
		memset(&l[i], 0, sizeof(l[i]));
		l[i].e = &e;
		l[i].kind = i;
		l[i].n = 150;
		l[i].zone = i == 0 ? SEQ0 : i == 1 ? 1 : i == 2 ? 2 : SEQ0 + 1;
		ck_assert_int_eq(pthread_create(&th[i], NULL, load_thread, &l[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++) {
		ck_assert_msg(atomic_load(&l[i].done) == l[i].n, "load %d: %d of %d done", i,
			      atomic_load(&l[i].done), l[i].n);
		ck_assert_int_eq(atomic_load(&l[i].bad), 0);
	}
	ck_assert_uint_eq(report1(&e, SEQ0).wp, zstart(SEQ0) + 150 * BLK);
	ck_assert_uint_eq(report1(&e, SEQ0 + 1).wp, zstart(SEQ0 + 1) + 150 * BLK);
	env_close(&e);
}

START_TEST(test_tiny_tag_limits)
{
	tags_case("1", "1");
	tags_case("2", "1");
	tags_case("3", "0");
}
END_TEST

struct subm {
	struct env *e;
	struct tbio *t;
	struct rec *r;
	int n;
	uint32_t flags;
};

static void *submit_thread(void *arg)
{
	struct subm *s = arg;

	for (int i = 0; i < s->n; i++) {
		tb_prep(&s->t[i], s->r, i, ZLFS_OP_WRITE, ZLFS_PRIO_BE, zstart(SEQ0) + (uint64_t)i * BLK,
			BLK, s->flags);
		if (zlfs_disp_submit(s->e->d, &s->t[i].bio))
			abort();
	}
	return NULL;
}

START_TEST(test_async_depth_bounds_writes)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[8];
	struct zlfs_disp_stats st;
	pthread_t th;

	/* asynchronous writes get async_depth=2 of the 16 tags */
	memset(t, 0, sizeof(t));
	env_open(&e, SPEC_Q32, "mode", "nolock", "nomerges", "1", "nr_requests", "16", "async_depth",
		 "2", NULL);
	rec_init(&r);
	gate_close(&e, &g);
	struct subm s = { &e, t, &r, 8, ZLFS_BIO_NO_ZWL };
	ck_assert_int_eq(pthread_create(&th, NULL, submit_thread, &s), 0);
	usleep(50 * 1000);   /* let the submitter block on a tag */
	ck_assert_int_eq(rec_count(&r), 0);
	gate_open(&g);
	pthread_join(th, NULL);
	rec_wait(&r, 8);
	zlfs_disp_stats(e.d, &st);
	ck_assert_uint_le(st.max_zone_inflight, 2);
	ck_assert_uint_eq(st.failed, 0);
	check_pattern(&e, zstart(SEQ0), 8 * BLK);
	env_close(&e);

	/* ZLFS_BIO_SYNC writes are not throttled by async_depth */
	env_open(&e, SPEC_Q32, "mode", "nolock", "nomerges", "1", "nr_requests", "16", "async_depth",
		 "2", NULL);
	rec_init(&r);
	gate_close(&e, &g);
	s.flags = ZLFS_BIO_NO_ZWL | ZLFS_BIO_SYNC;
	submit_thread(&s);
	gate_open(&g);
	rec_wait(&r, 8);
	zlfs_disp_stats(e.d, &st);
	ck_assert_uint_eq(st.max_zone_inflight, 8);
	ck_assert_uint_eq(st.failed, 0);
	check_pattern(&e, zstart(SEQ0), 8 * BLK);
	env_close(&e);
	tb_free(t, 8);
}
END_TEST

/* ---- zone write locking ---------------------------------------------------------- */

/*
 * nz zones x per writes of 4K, submitted asynchronously in LBA order per
 * zone, round robin over the zones, all with flags.
 */
static void stream_writes(struct env *e, struct rec *r, struct tbio *t, int nz, int per,
			  uint32_t flags)
{
	int k = 0;

	for (int i = 0; i < per; i++)
		for (int z = 0; z < nz; z++, k++)
			tb_submit(e, &t[k], r, k, ZLFS_OP_WRITE, ZLFS_PRIO_BE,
				  zstart(SEQ0 + (uint32_t)z) + (uint64_t)i * BLK, BLK, flags);
	rec_wait(r, nz * per);
	for (int i = 0; i < nz * per; i++) {
		ck_assert_int_eq(t[i].calls, 1);
		ck_assert_msg(t[i].bio.result == 0, "write %d failed: %d", i, t[i].bio.result);
	}
	for (int z = 0; z < nz; z++) {
		struct zlfs_zone zz = report1(e, SEQ0 + (uint32_t)z);
		ck_assert_uint_eq(zz.wp, zstart(SEQ0 + (uint32_t)z) + (uint64_t)per * BLK);
		check_pattern(e, zstart(SEQ0 + (uint32_t)z), (uint32_t)per * BLK);
	}
}

static void one_write_per_zone_case(const char *mode, uint32_t flags, uint8_t want_mode)
{
	struct env e;
	struct rec r;
	struct tbio *t = calloc(6 * 100, sizeof(*t));
	struct zlfs_disp_stats st;
	struct zlfs_zdev_stats ds;

	env_open(&e, SPEC_REORDER, "mode", mode, "nomerges", "1", NULL);
	ck_assert_uint_eq(zlfs_disp_mode(e.d), want_mode);
	ck_assert_uint_eq(e.g->depth, 32);
	rec_init(&r);
	stream_writes(&e, &r, t, 6, 100, flags);
	zlfs_disp_stats(e.d, &st);
	zlfs_zdev_stats(e.dev, &ds);
	ck_assert_uint_eq(st.max_zone_inflight, 1);
	ck_assert_uint_eq(st.unaligned, 0);
	ck_assert_uint_eq(st.failed, 0);
	ck_assert_uint_eq(ds.unaligned, 0);
	/* the device did reorder: only the lock kept the writes valid */
	ck_assert_uint_gt(ds.requeues + ds.reordered, 0);
	if (want_mode == ZLFS_MODE_ZWP)
		ck_assert_uint_gt(st.plugged, 0);
	env_close(&e);
	tb_free(t, 600);
	free(t);
}

START_TEST(test_zwl_one_write_per_zone)
{
	one_write_per_zone_case("zwl", 0, ZLFS_MODE_ZWL);
	/* ZWL ignores the request flag */
	one_write_per_zone_case("zwl", ZLFS_BIO_NO_ZWL, ZLFS_MODE_ZWL);
	/* in NOLOCK mode a write without ZLFS_BIO_NO_ZWL still takes the lock */
	one_write_per_zone_case("nolock", 0, ZLFS_MODE_NOLOCK);
}
END_TEST

/*
 * Writes queued to zones out of LBA order (the first of each zone is in
 * flight and holds the lock): each zone gets them lowest LBA first.
 */
static void zwl_out_of_order_case(const char *write_expire, const char *fifo_batch)
{
	static const int blk[5] = { 0, 3, 1, 4, 2 };
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[15];
	struct zlfs_disp_stats st;

	memset(t, 0, sizeof(t));
	env_open(&e, SPEC_Q32, "mode", "zwl", "nomerges", "1", "write_expire", write_expire,
		 "fifo_batch", fifo_batch, NULL);
	rec_init(&r);
	gate_close(&e, &g);
	/* id = zone * 10 + block */
	for (int i = 0; i < 5; i++)
		for (int z = 0; z < 3; z++)
			tb_submit(&e, &t[i * 3 + z], &r, z * 10 + blk[i], ZLFS_OP_WRITE, ZLFS_PRIO_BE,
				  zstart(SEQ0 + (uint32_t)z) + (uint64_t)blk[i] * BLK, BLK, 0);
	gate_open(&g);
	rec_wait(&r, 15);
	for (int i = 0; i < 15; i++)
		ck_assert_msg(t[i].bio.result == 0, "id %d: %d", t[i].id, t[i].bio.result);
	/* per zone, completion (= dispatch) order is LBA order */
	int next[3] = { 0, 0, 0 };
	for (int i = 0; i < 15; i++) {
		int id = r.order[i];
		ck_assert_int_eq(id % 10, next[id / 10]);
		next[id / 10]++;
	}
	zlfs_disp_stats(e.d, &st);
	ck_assert_uint_eq(st.max_zone_inflight, 1);
	ck_assert_uint_eq(st.failed, 0);
	for (int z = 0; z < 3; z++) {
		ck_assert_uint_eq(report1(&e, SEQ0 + (uint32_t)z).wp,
				  zstart(SEQ0 + (uint32_t)z) + 5 * BLK);
		check_pattern(&e, zstart(SEQ0 + (uint32_t)z), 5 * BLK);
	}
	env_close(&e);
	tb_free(t, 15);
}

START_TEST(test_zwl_lowest_lba_first)
{
	zwl_out_of_order_case("0", "1");       /* expired: the FIFO path */
	zwl_out_of_order_case("100000", "1");  /* the sort path */
	zwl_out_of_order_case("100000", "16");
}
END_TEST

START_TEST(test_zwl_merges_in_seq_zone)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[8];
	struct zlfs_zdev_stats s0, s1;
	struct zlfs_disp_stats st;
	uint64_t z = zstart(SEQ0);

	memset(t, 0, sizeof(t));
	env_open(&e, SPEC_Q32, "mode", "zwl", NULL);
	zlfs_zdev_stats(e.dev, &s0);
	rec_init(&r);
	gate_close(&e, &g);
	/* the first write takes the lock; the other 7 merge into one request */
	for (int i = 0; i < 8; i++)
		tb_submit(&e, &t[i], &r, i, ZLFS_OP_WRITE, ZLFS_PRIO_BE, z + (uint64_t)i * BLK, BLK, 0);
	gate_open(&g);
	rec_wait(&r, 8);
	zlfs_disp_drain(e.d);
	zlfs_zdev_stats(e.dev, &s1);
	zlfs_disp_stats(e.d, &st);
	ck_assert_uint_eq(st.merged, 6);
	ck_assert_uint_eq(s1.writes - s0.writes - 1, 2);
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(t[i].bio.result, 0);
		ck_assert_uint_eq(t[i].pos, z + (uint64_t)i * BLK);
	}
	check_pattern(&e, z, 8 * BLK);
	env_close(&e);
	tb_free(t, 8);
}
END_TEST

/* ---- zone write plugging ---------------------------------------------------------- */

START_TEST(test_zwp_one_write_per_zone)
{
	one_write_per_zone_case("zwp", ZLFS_BIO_NO_ZWL, ZLFS_MODE_ZWP);
	one_write_per_zone_case("zwp", 0, ZLFS_MODE_ZWP);
}
END_TEST

static int end_calls;
static void count_end(struct zlfs_bio *b)
{
	(void)b;
	__atomic_add_fetch(&end_calls, 1, __ATOMIC_SEQ_CST);
}

START_TEST(test_zwp_refuses_unaligned)
{
	struct env e;
	struct zlfs_bio b;
	char buf[2 * BLK];
	uint64_t z = zstart(SEQ0);

	env_open(&e, SPEC_Q32, "mode", "zwp", NULL);
	tu_fill(buf, sizeof(buf), 5);
	end_calls = 0;
	memset(&b, 0, sizeof(b));
	b.op = ZLFS_OP_WRITE;
	b.off = z + BLK;
	b.buf = buf;
	b.len = BLK;
	b.end = count_end;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, z + BLK, 0, NULL),
			 -ZLFS_EUNALIGNED);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, 2 * BLK, z, 0, NULL), 0);
	/* the plug's write pointer moved: the old position is refused now */
	b.off = z;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), -ZLFS_EUNALIGNED);
	b.off = z + 2 * BLK;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), 0);
	zlfs_disp_drain(e.d);
	ck_assert_int_eq(b.result, 0);
	ck_assert_int_eq(__atomic_load_n(&end_calls, __ATOMIC_SEQ_CST), 1);
	ck_assert_uint_eq(report1(&e, SEQ0).wp, z + 3 * BLK);
	/* conventional zones are not plugged */
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, 5 * BLK, 0, NULL), 0);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, 2 * BLK, 0, NULL), 0);
	env_close(&e);
}
END_TEST

START_TEST(test_zwp_append)
{
	struct env e;
	struct rec r;
	struct tbio t[64];
	uint64_t z0 = zstart(SEQ0), z1 = zstart(SEQ0 + 1);
	uint64_t pos;
	char buf[BLK];

	memset(t, 0, sizeof(t));
	env_open(&e, SPEC_REORDER, "mode", "zwp", NULL);
	rec_init(&r);
	/* zone 1 starts with two plain writes */
	tu_fill(buf, BLK, 1);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, z1, 0, NULL), 0);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, z1 + BLK, 0, NULL), 0);
	/* appends name any offset in their zone */
	for (int i = 0; i < 32; i++) {
		tb_prep(&t[2 * i], &r, 2 * i, ZLFS_OP_APPEND, ZLFS_PRIO_BE, z0 + 5 * MB, BLK, 0);
		tu_fill(t[2 * i].buf, BLK, 1000 + (uint64_t)i);
		ck_assert_int_eq(zlfs_disp_submit(e.d, &t[2 * i].bio), 0);
		tb_prep(&t[2 * i + 1], &r, 2 * i + 1, ZLFS_OP_APPEND, ZLFS_PRIO_BE, z1 + ZS - BLK, BLK, 0);
		tu_fill(t[2 * i + 1].buf, BLK, 2000 + (uint64_t)i);
		ck_assert_int_eq(zlfs_disp_submit(e.d, &t[2 * i + 1].bio), 0);
	}
	rec_wait(&r, 64);
	for (int i = 0; i < 32; i++) {
		ck_assert_int_eq(t[2 * i].bio.result, 0);
		ck_assert_int_eq(t[2 * i + 1].bio.result, 0);
		/* in submission order, one after the other */
		ck_assert_uint_eq(t[2 * i].pos, z0 + (uint64_t)i * BLK);
		ck_assert_uint_eq(t[2 * i + 1].pos, z1 + (uint64_t)(i + 2) * BLK);
	}
	/* the data went where bio->pos says */
	for (int i = 0; i < 32; i++) {
		char want[BLK];
		ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_READ, buf, BLK, t[2 * i].pos, 0, NULL), 0);
		tu_fill(want, BLK, 1000 + (uint64_t)i);
		ck_assert_mem_eq(buf, want, BLK);
		ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_READ, buf, BLK, t[2 * i + 1].pos, 0, NULL), 0);
		tu_fill(want, BLK, 2000 + (uint64_t)i);
		ck_assert_mem_eq(buf, want, BLK);
	}
	ck_assert_uint_eq(report1(&e, SEQ0).wp, z0 + 32 * BLK);
	ck_assert_uint_eq(report1(&e, SEQ0 + 1).wp, z1 + 34 * BLK);
	/* the synchronous helper reports the position too; writes follow on */
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_APPEND, buf, BLK, z0, 0, &pos), 0);
	ck_assert_uint_eq(pos, z0 + 32 * BLK);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, z0 + 33 * BLK, 0, NULL), 0);
	env_close(&e);
	tb_free(t, 64);
}
END_TEST

/* ZWL and NOLOCK pass appends to the device: bio->pos is where it put them. */
static void device_append_case(const char *mode)
{
	struct env e;
	struct rec r;
	struct tbio t[64];
	uint64_t z = zstart(SEQ0);
	bool seen[64];

	memset(t, 0, sizeof(t));
	memset(seen, 0, sizeof(seen));
	env_open(&e, SPEC_REORDER, "mode", mode, NULL);
	rec_init(&r);
	for (int i = 0; i < 64; i++) {
		tb_prep(&t[i], &r, i, ZLFS_OP_APPEND, ZLFS_PRIO_BE, z + 3 * MB, BLK, 0);
		tu_fill(t[i].buf, BLK, 5000 + (uint64_t)i);
		ck_assert_int_eq(zlfs_disp_submit(e.d, &t[i].bio), 0);
	}
	rec_wait(&r, 64);
	char buf[BLK], want[BLK];
	for (int i = 0; i < 64; i++) {
		ck_assert_int_eq(t[i].bio.result, 0);
		ck_assert_uint_ge(t[i].pos, z);
		ck_assert_uint_lt(t[i].pos, z + 64 * BLK);
		ck_assert_uint_eq((t[i].pos - z) % BLK, 0);
		uint64_t k = (t[i].pos - z) / BLK;
		ck_assert_msg(!seen[k], "two appends at block %llu", (unsigned long long)k);
		seen[k] = true;
		ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_READ, buf, BLK, t[i].pos, 0, NULL), 0);
		tu_fill(want, BLK, 5000 + (uint64_t)i);
		ck_assert_mem_eq(buf, want, BLK);
	}
	ck_assert_uint_eq(report1(&e, SEQ0).wp, z + 64 * BLK);
	env_close(&e);
	tb_free(t, 64);
}

START_TEST(test_device_append)
{
	device_append_case("zwl");
	device_append_case("nolock");
}
END_TEST

START_TEST(test_zwp_write_error_needs_resync)
{
	struct env e;
	struct gate g;
	struct rec r;
	struct tbio t[6];
	struct zlfs_bio b;
	struct zlfs_disp_stats st;
	char buf[BLK];
	uint64_t z = zstart(SEQ0);

	memset(t, 0, sizeof(t));
	tu_fill(buf, BLK, 3);
	env_open(&e, SPEC_Q32, "mode", "zwp", NULL);
	rec_init(&r);
	gate_close(&e, &g);
	/* the next write the device executes fails */
	ck_assert_int_eq(zlfs_zdev_fault_arm(e.dev, ZLFS_FAULT_WRITE, 1, false), 0);
	for (int i = 0; i < 6; i++)
		tb_submit(&e, &t[i], &r, i, ZLFS_OP_WRITE, ZLFS_PRIO_BE, z + (uint64_t)i * BLK, BLK, 0);
	zlfs_disp_stats(e.d, &st);
	ck_assert_uint_eq(st.plugged, 5);
	gate_open(&g);
	rec_wait(&r, 6);
	for (int i = 0; i < 6; i++) {
		ck_assert_int_eq(t[i].calls, 1);
		ck_assert_int_eq(t[i].bio.result, -EIO);
	}
	zlfs_disp_stats(e.d, &st);
	ck_assert_uint_eq(st.failed, 6);
	ck_assert_uint_eq(st.resyncs, 1);
	ck_assert(zlfs_disp_zone_needs_resync(e.d, SEQ0));
	ck_assert(!zlfs_disp_zone_needs_resync(e.d, SEQ0 + 1));
	/* refused at submission until the write pointer is re-read */
	end_calls = 0;
	memset(&b, 0, sizeof(b));
	b.op = ZLFS_OP_WRITE;
	b.off = z;
	b.buf = buf;
	b.len = BLK;
	b.end = count_end;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), -EIO);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, z, 0, NULL), -EIO);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_APPEND, buf, BLK, z, 0, NULL), -EIO);
	ck_assert_int_eq(__atomic_load_n(&end_calls, __ATOMIC_SEQ_CST), 0);
	ck_assert(zlfs_disp_zone_needs_resync(e.d, SEQ0));
	/* other zones and reads are fine */
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, zstart(SEQ0 + 1), 0, NULL), 0);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_READ, buf, BLK, z, 0, NULL), 0);
	/* a report clears the mark */
	struct zlfs_zone zz = report1(&e, SEQ0);
	ck_assert_uint_eq(zz.wp, z);
	ck_assert(!zlfs_disp_zone_needs_resync(e.d, SEQ0));
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, z, 0, NULL), 0);
	ck_assert_uint_eq(report1(&e, SEQ0).wp, z + BLK);

	/* again, cleared by a reset this time */
	ck_assert_int_eq(zlfs_zdev_fault_arm(e.dev, ZLFS_FAULT_WRITE, 1, false), 0);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, z + BLK, 0, NULL), -EIO);
	ck_assert(zlfs_disp_zone_needs_resync(e.d, SEQ0));
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, z + BLK, 0, NULL), -EIO);
	ck_assert_int_eq(zlfs_disp_zone_mgmt(e.d, ZLFS_ZM_RESET, SEQ0), 0);
	ck_assert(!zlfs_disp_zone_needs_resync(e.d, SEQ0));
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, z, 0, NULL), 0);
	ck_assert_uint_eq(report1(&e, SEQ0).wp, z + BLK);
	env_close(&e);
	tb_free(t, 6);
}
END_TEST

/* ---- mode fallback and options -------------------------------------------------------- */

START_TEST(test_nolock_fallback)
{
	static const struct { const char *spec, *mode; uint8_t want; } cases[] = {
		{ "mem:size=64M,zone_size=16M", "nolock", ZLFS_MODE_NOLOCK },
		{ "mem:size=64M,zone_size=16M,nozwl=1", "nolock", ZLFS_MODE_NOLOCK },
		{ "mem:size=64M,zone_size=16M,nozwl=0", "nolock", ZLFS_MODE_ZWL },
		{ "mem:size=64M,zone_size=16M,nozwl=0", "zwl", ZLFS_MODE_ZWL },
		{ "mem:size=64M,zone_size=16M,nozwl=0", "zwp", ZLFS_MODE_ZWP },
		{ "mem:size=64M,zone_size=16M", "zwp", ZLFS_MODE_ZWP },
		{ "mem:size=64M,zone_size=16M", "zwl", ZLFS_MODE_ZWL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct env e;
		env_open(&e, cases[i].spec, "mode", cases[i].mode, NULL);
		ck_assert_msg(zlfs_disp_mode(e.d) == cases[i].want, "%s mode %s: got %s", cases[i].spec,
			      cases[i].mode, zlfs_order_mode_str(zlfs_disp_mode(e.d)));
		env_close(&e);
	}

	/* the fallback behaves as ZWL: lock-free writes still go one at a time */
	struct env e;
	struct rec r;
	struct tbio *t = calloc(400, sizeof(*t));
	struct zlfs_disp_stats st;
	env_open(&e, SPEC_REORDER ",nozwl=0", "mode", "nolock", "nomerges", "1", NULL);
	ck_assert_uint_eq(zlfs_disp_mode(e.d), ZLFS_MODE_ZWL);
	rec_init(&r);
	stream_writes(&e, &r, t, 4, 100, ZLFS_BIO_NO_ZWL);
	zlfs_disp_stats(e.d, &st);
	ck_assert_uint_eq(st.max_zone_inflight, 1);
	ck_assert_uint_eq(st.unaligned, 0);
	ck_assert_uint_eq(st.retries, 0);
	env_close(&e);
	tb_free(t, 400);
	free(t);
}
END_TEST

START_TEST(test_opts)
{
	struct zlfs_disp_opts o;

	zlfs_disp_opts_default(&o);
	ck_assert_uint_eq(o.mode, ZLFS_MODE_NOLOCK);
	ck_assert_uint_eq(o.read_expire_ms, 500);
	ck_assert_uint_eq(o.write_expire_ms, 5000);
	ck_assert_uint_eq(o.writes_starved, 2);
	ck_assert_uint_eq(o.fifo_batch, 16);
	ck_assert_uint_eq(o.front_merges, 1);
	ck_assert_uint_eq(o.prio_aging_ms, 10000);
	ck_assert_uint_eq(o.async_depth, 0);
	ck_assert_uint_eq(o.nr_requests, 0);
	ck_assert_uint_eq(o.nomerges, 0);
	ck_assert_uint_eq(o.max_req_kb, 512);
	ck_assert_uint_eq(o.retry_base, 4);

	static const struct { const char *name; size_t off; } knobs[] = {
		{ "read_expire", offsetof(struct zlfs_disp_opts, read_expire_ms) },
		{ "write_expire", offsetof(struct zlfs_disp_opts, write_expire_ms) },
		{ "writes_starved", offsetof(struct zlfs_disp_opts, writes_starved) },
		{ "fifo_batch", offsetof(struct zlfs_disp_opts, fifo_batch) },
		{ "front_merges", offsetof(struct zlfs_disp_opts, front_merges) },
		{ "prio_aging_expire", offsetof(struct zlfs_disp_opts, prio_aging_ms) },
		{ "async_depth", offsetof(struct zlfs_disp_opts, async_depth) },
		{ "nr_requests", offsetof(struct zlfs_disp_opts, nr_requests) },
		{ "nomerges", offsetof(struct zlfs_disp_opts, nomerges) },
		{ "max_req_kb", offsetof(struct zlfs_disp_opts, max_req_kb) },
		{ "retry_base", offsetof(struct zlfs_disp_opts, retry_base) },
	};
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		struct zlfs_disp_opts before;
		char val[16];
		zlfs_disp_opts_default(&o);
		snprintf(val, sizeof(val), "%zu", 1000 + i);
		ck_assert_int_eq(zlfs_disp_opts_set(&o, knobs[i].name, val), 0);
		ck_assert_uint_eq(*(uint32_t *)((char *)&o + knobs[i].off), 1000 + i);
		/* only that field changed */
		zlfs_disp_opts_default(&before);
		*(uint32_t *)((char *)&before + knobs[i].off) = (uint32_t)(1000 + i);
		ck_assert_mem_eq(&o, &before, sizeof(o));
		ck_assert_int_eq(zlfs_disp_opts_set(&o, knobs[i].name, "4294967295"), 0);
		ck_assert_uint_eq(*(uint32_t *)((char *)&o + knobs[i].off), UINT32_MAX);
		/* bad values are refused and leave the field alone */
		static const char *const bad[] = { "", "-1", "12x", "x", "4294967296",
						   "99999999999999999999999", "1.5", "0x" };
		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			ck_assert_msg(zlfs_disp_opts_set(&o, knobs[i].name, bad[j]) == -EINVAL,
				      "%s=%s accepted", knobs[i].name, bad[j]);
			ck_assert_uint_eq(*(uint32_t *)((char *)&o + knobs[i].off), UINT32_MAX);
		}
	}
	zlfs_disp_opts_default(&o);
	ck_assert_int_eq(zlfs_disp_opts_set(&o, "mode", "zwl"), 0);
	ck_assert_uint_eq(o.mode, ZLFS_MODE_ZWL);
	ck_assert_int_eq(zlfs_disp_opts_set(&o, "mode", "zwp"), 0);
	ck_assert_uint_eq(o.mode, ZLFS_MODE_ZWP);
	ck_assert_int_eq(zlfs_disp_opts_set(&o, "mode", "nolock"), 0);
	ck_assert_uint_eq(o.mode, ZLFS_MODE_NOLOCK);
	ck_assert_int_eq(zlfs_disp_opts_set(&o, "mode", "ZWL"), -EINVAL);
	ck_assert_int_eq(zlfs_disp_opts_set(&o, "mode", "deadline"), -EINVAL);
	ck_assert_int_eq(zlfs_disp_opts_set(&o, "mode", ""), -EINVAL);
	ck_assert_uint_eq(o.mode, ZLFS_MODE_NOLOCK);
	ck_assert_int_eq(zlfs_disp_opts_set(&o, "bogus", "1"), -ENOENT);
	ck_assert_int_eq(zlfs_disp_opts_set(&o, "read_expire_ms", "1"), -ENOENT);
	ck_assert_int_eq(zlfs_disp_opts_set(&o, "", "1"), -ENOENT);
	ck_assert_str_eq(zlfs_order_mode_str(ZLFS_MODE_ZWL), "zwl");
	ck_assert_str_eq(zlfs_order_mode_str(ZLFS_MODE_NOLOCK), "nolock");
	ck_assert_str_eq(zlfs_order_mode_str(ZLFS_MODE_ZWP), "zwp");

	/* zlfs_disp_create refuses what cannot work */
	struct zlfs_zdev *dev;
	struct zlfs_disp *d = NULL;
	ck_assert_int_eq(zlfs_zdev_open("mem:size=64M,zone_size=16M", &dev), 0);
	zlfs_disp_opts_default(&o);
	o.fifo_batch = 0;
	ck_assert_int_eq(zlfs_disp_create(dev, &o, &d), -EINVAL);
	zlfs_disp_opts_default(&o);
	o.max_req_kb = 0;
	ck_assert_int_eq(zlfs_disp_create(dev, &o, &d), -EINVAL);
	zlfs_disp_opts_default(&o);
	o.mode = 3;
	ck_assert_int_eq(zlfs_disp_create(dev, &o, &d), -EINVAL);
	ck_assert_ptr_null(d);
	/* NULL options: the defaults */
	ck_assert_int_eq(zlfs_disp_create(dev, NULL, &d), 0);
	ck_assert_uint_eq(zlfs_disp_mode(d), ZLFS_MODE_NOLOCK);
	ck_assert_ptr_eq(zlfs_disp_dev(d), dev);
	zlfs_disp_destroy(d);
	zlfs_disp_destroy(NULL);
	zlfs_zdev_close(dev);
}
END_TEST

/*
 * The dispatcher keeps a record per zone only past the conventional
 * prefix (a disk without zones has none); the prefix shares one.  On a
 * device without zones, in every mode: writes span its pseudo-zones, 64
 * queued out of order all land, zone commands are the device's refusals
 * and change nothing.  On a device with a prefix, a reset of every zone
 * re-reads the write pointers of the sequential ones only.
 */
static void no_zones_case(const char *mode)
{
	struct env e;
	struct rec r;
	struct tbio t[64];
	char *buf = malloc(8 * MB), *back = malloc(8 * MB);

	memset(t, 0, sizeof(t));
	env_open(&e, "mem:size=64M,zone_size=2M,conv_zones=32,queues=2,qd=16,reorder=0.3", "mode",
		 mode, NULL);
	ck_assert(!e.g->zoned);
	ck_assert_uint_eq(e.g->nr_conv, e.g->nr_zones);
	tu_fill(buf, 8 * MB, 5);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, 8 * MB, 3 * MB, 0, NULL), 0);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_READ, back, 8 * MB, 3 * MB, 0, NULL), 0);
	ck_assert_mem_eq(back, buf, 8 * MB);
	rec_init(&r);
	for (int i = 0; i < 64; i++)
		tb_submit(&e, &t[i], &r, i, ZLFS_OP_WRITE, ZLFS_PRIO_BE,
			  32 * MB + (uint64_t)(63 - i) * 64 * BLK, BLK, ZLFS_BIO_NO_ZWL);
	rec_wait(&r, 64);
	for (int i = 0; i < 64; i++) {
		ck_assert_msg(t[i].bio.result == 0, "%s: write %d: %d", mode, i, t[i].bio.result);
		check_pattern(&e, t[i].bio.off, BLK);
	}
	ck_assert_int_eq(zlfs_disp_zone_mgmt(e.d, ZLFS_ZM_RESET, 3), -EINVAL);
	zlfs_disp_zone_mgmt(e.d, ZLFS_ZM_RESET, ZLFS_ZONE_ALL);
	ck_assert(!zlfs_disp_zone_needs_resync(e.d, 3));
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_READ, back, 8 * MB, 3 * MB, 0, NULL), 0);
	ck_assert_mem_eq(back, buf, 8 * MB);
	env_close(&e);
	tb_free(t, 64);

	env_open(&e, SPEC_Q32, "mode", mode, NULL);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, 2 * BLK, zstart(SEQ0), 0, NULL), 0);
	ck_assert_int_eq(zlfs_disp_zone_mgmt(e.d, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	ck_assert_uint_eq(report1(&e, SEQ0).wp, zstart(SEQ0));
	/* the dispatcher learnt the reset: a write at the start is aligned again */
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, zstart(SEQ0), 0, NULL), 0);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, zstart(SEQ0) + BLK, 0, NULL), 0);
	ck_assert_int_eq(zlfs_disp_zone_mgmt(e.d, ZLFS_ZM_RESET, 1), -EINVAL);
	ck_assert(!zlfs_disp_zone_needs_resync(e.d, 1));
	env_close(&e);
	free(buf);
	free(back);
}

START_TEST(test_no_zones)
{
	no_zones_case("zwl");
	no_zones_case("nolock");
	no_zones_case("zwp");
}
END_TEST

START_TEST(test_submit_checks)
{
	struct env e;
	struct zlfs_bio b;
	char *buf = calloc(1, 2 * MB);
	uint64_t z = zstart(SEQ0);

	env_open(&e, SPEC_Q32, "mode", "zwl", NULL);
	end_calls = 0;
	memset(&b, 0, sizeof(b));
	b.op = ZLFS_OP_WRITE;
	b.buf = buf;
	b.end = count_end;
	b.off = z;
	b.len = 0;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), -EINVAL);
	b.len = 100;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), -EINVAL);
	b.len = BLK;
	b.off = z + 512;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), -EINVAL);
	b.off = e.g->size;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), -EINVAL);
	b.off = e.g->size - BLK;
	b.len = 2 * BLK;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), -EINVAL);
	b.op = 7;
	b.off = z;
	b.len = BLK;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), -EINVAL);
	/* a write may not cross a sequential zone's end ... */
	b.op = ZLFS_OP_WRITE;
	b.off = zstart(SEQ0 + 1) - BLK;
	b.len = 2 * BLK;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), -ZLFS_EBOUNDARY);
	/* ... nor leave the conventional zones */
	b.off = zstart(SEQ0) - BLK;
	ck_assert_int_eq(zlfs_disp_submit(e.d, &b), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(__atomic_load_n(&end_calls, __ATOMIC_SEQ_CST), 0);
	/* but may span conventional zones, and reads may span anything */
	tu_fill(buf, 2 * MB, 8);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, 2 * MB, ZS - MB, 0, NULL), 0);
	char *back = malloc(2 * MB);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_READ, back, 2 * MB, ZS - MB, 0, NULL), 0);
	ck_assert_mem_eq(back, buf, 2 * MB);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_READ, back, 2 * BLK, zstart(SEQ0) - BLK, 0, NULL),
			 0);
	ck_assert_int_eq(zlfs_disp_flush(e.d), 0);
	/* zone errors from the device come back through end() */
	ck_assert_int_eq(zlfs_disp_zone_mgmt(e.d, ZLFS_ZM_FINISH, SEQ0), 0);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, zstart(SEQ0 + 1) - BLK, 0, NULL),
			 -ZLFS_EZONEFULL);
	ck_assert_int_eq(zlfs_disp_rw(e.d, ZLFS_OP_WRITE, buf, BLK, zstart(SEQ0 + 1) + BLK, 0, NULL),
			 -ZLFS_EUNALIGNED);
	env_close(&e);
	free(buf);
	free(back);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("disp");
	TCase *tc = tcase_create("sched");

	tcase_add_test(tc, test_read_expire_fifo);
	tcase_add_test(tc, test_read_expire_lba);
	tcase_add_test(tc, test_read_expire_batch);
	tcase_add_test(tc, test_writes_starved);
	tcase_add_test(tc, test_batching);
	tcase_add_test(tc, test_strict_priority);
	tcase_add_test(tc, test_strict_priority_inflight);
	tcase_add_test(tc, test_prio_aging_zero);
	tcase_add_test(tc, test_prio_aging_old_be);
	suite_add_tcase(s, tc);

	tc = tcase_create("merge");
	tcase_add_test(tc, test_back_merges);
	tcase_add_test(tc, test_front_merges);
	tcase_add_test(tc, test_nomerges);
	tcase_add_test(tc, test_no_merge_across_zones);
	tcase_add_test(tc, test_read_merges);
	tcase_add_test(tc, test_no_merge_locked_with_lockfree);
	suite_add_tcase(s, tc);

	tc = tcase_create("tags");
	tcase_add_test(tc, test_tiny_tag_limits);
	tcase_add_test(tc, test_async_depth_bounds_writes);
	suite_add_tcase(s, tc);

	tc = tcase_create("zones");
	tcase_add_test(tc, test_zwl_one_write_per_zone);
	tcase_add_test(tc, test_zwl_lowest_lba_first);
	tcase_add_test(tc, test_zwl_merges_in_seq_zone);
	tcase_add_test(tc, test_zwp_one_write_per_zone);
	tcase_add_test(tc, test_zwp_refuses_unaligned);
	tcase_add_test(tc, test_zwp_append);
	tcase_add_test(tc, test_zwp_write_error_needs_resync);
	tcase_add_test(tc, test_device_append);
	tcase_add_test(tc, test_nolock_fallback);
	suite_add_tcase(s, tc);

	tc = tcase_create("api");
	tcase_add_test(tc, test_opts);
	tcase_add_test(tc, test_submit_checks);
	tcase_add_test(tc, test_no_zones);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
