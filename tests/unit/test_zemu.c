/*
 * test_zemu.c - the memory-backed emulated device (mem:, fs/blk/zemu.c and
 * svc.c) through the public interface of include/zlfs/zdev.h only.
 *
 * Covered: geometry and zone report; reads past the write pointer return
 * zeros; append returns where the data went; data round trips (also with
 * several iovecs); conventional zones; zone capacity below the zone size;
 * every zone error surfaces as its own code, and bad arguments as EINVAL;
 * zone management; fault injection (Nth read/write/flush fails with EIO,
 * once or persistently, armed by call or by spec option); read-only and
 * offline zones; power cut (flushed data survives, each zone keeps a
 * prefix of its unflushed writes, the device is dead until revived, open
 * zones come back closed, cuts armed to fire by themselves); the service
 * model (in order without reordering; with requeues or hibernation
 * shuffles, writes to one zone fail as unaligned at execution and the zone
 * holds exactly what the successful ones wrote); statistics; an idle
 * device uses no CPU.
 *
 * Everything is seeded; only the service-model tests depend on thread
 * timing, and they assert what must hold in every interleaving.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "testutil.h"
#include "zlfs/zdev.h"

#define B 4096ull

/* ---- helpers ---------------------------------------------------------------- */

static struct zlfs_zdev *open_dev(const char *spec)
{
	struct zlfs_zdev *dev = NULL;
	int ret = zlfs_zdev_open(spec, &dev);

	ck_assert_msg(ret == 0, "open %s: %d %s", spec, ret, zlfs_zdev_errmsg());
	return dev;
}

static struct zlfs_zone zrep(struct zlfs_zdev *dev, uint32_t i)
{
	struct zlfs_zone z;
	uint32_t nr = 1;

	ck_assert_int_eq(zlfs_zdev_report(dev, i, &z, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	return z;
}

static uint64_t zstart(struct zlfs_zdev *dev, uint32_t i)
{
	return (uint64_t)i * zlfs_zdev_geom(dev)->zone_size;
}

static uint8_t *pattern(size_t len, uint64_t seed)
{
	uint8_t *p = malloc(len);

	ck_assert_ptr_nonnull(p);
	tu_fill(p, len, seed);
	return p;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* Read [off, off+len) into a fresh buffer that starts out as garbage. */
static uint8_t *rd(struct zlfs_zdev *dev, uint64_t off, uint64_t len)
{
	uint8_t *p = malloc(len);

	ck_assert_ptr_nonnull(p);
	memset(p, 0xa5, len);
	ck_assert_int_eq(zlfs_zdev_read(dev, p, len, off), 0);
	return p;
}

/* The device holds exactly want[0..len) at off. */
static void expect(struct zlfs_zdev *dev, uint64_t off, const uint8_t *want, uint64_t len)
{
	if (!len)
		return;
	uint8_t *p = rd(dev, off, len);

	for (uint64_t i = 0; i < len; i++)
		if (p[i] != want[i])
			ck_abort_msg("byte %llu (device offset %llu) is %02x, want %02x",
				     (unsigned long long)i, (unsigned long long)(off + i), p[i], want[i]);
	free(p);
}

static void expect_zero(struct zlfs_zdev *dev, uint64_t off, uint64_t len)
{
	if (!len)
		return;
	uint8_t *p = rd(dev, off, len);

	ck_assert_msg(all_zero(p, len), "[%llu, +%llu) is not all zeros", (unsigned long long)off,
		      (unsigned long long)len);
	free(p);
}

static void write_ok(struct zlfs_zdev *dev, uint64_t off, uint64_t len, uint64_t seed,
		     uint8_t *shadow)
{
	uint8_t *p = pattern(len, seed);

	ck_assert_int_eq(zlfs_zdev_write(dev, p, len, off), 0);
	if (shadow)
		memcpy(shadow + off, p, len);
	free(p);
}

/* Asynchronous commands and a countdown of their completions. */
struct abatch {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int pending, seq;
};

struct acmd {
	struct zlfs_cmd cmd;
	struct iovec iov[3];
	struct abatch *b;
	int order;            /* completion order within the batch */
};

static void acmd_done(struct zlfs_cmd *c)
{
	struct acmd *a = c->priv;
	struct abatch *b = a->b;

	pthread_mutex_lock(&b->m);
	a->order = b->seq++;
	b->pending--;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->m);
}

static void abatch_init(struct abatch *b)
{
	pthread_mutex_init(&b->m, NULL);
	pthread_cond_init(&b->cv, NULL);
	b->pending = 0;
	b->seq = 0;
}

static void abatch_submit(struct zlfs_zdev *dev, struct abatch *b, struct acmd *a, uint8_t op,
			  uint64_t off, int iovcnt)
{
	a->b = b;
	a->order = -1;
	a->cmd.op = op;
	a->cmd.off = off;
	a->cmd.iov = a->iov;
	a->cmd.iovcnt = iovcnt;
	a->cmd.done = acmd_done;
	a->cmd.priv = a;
	pthread_mutex_lock(&b->m);
	b->pending++;
	pthread_mutex_unlock(&b->m);
	int ret = zlfs_zdev_submit(dev, &a->cmd);
	if (ret) {
		pthread_mutex_lock(&b->m);
		b->pending--;
		pthread_mutex_unlock(&b->m);
	}
	ck_assert_int_eq(ret, 0);
}

static void abatch_wait(struct abatch *b)
{
	pthread_mutex_lock(&b->m);
	while (b->pending)
		pthread_cond_wait(&b->cv, &b->m);
	pthread_mutex_unlock(&b->m);
}

/* ---- geometry, reads, writes ------------------------------------------------ */

START_TEST(test_geometry_report)
{
	struct zlfs_zdev *dev = open_dev("mem:size=16M,zone_size=1M,zone_capacity=768K,"
					 "conv_zones=2,max_open=3,max_active=5");
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(dev);
	struct zlfs_zone zs[20];
	uint32_t nr = 20;

	ck_assert_uint_eq(g->kind, ZLFS_DEV_MEM);
	ck_assert_uint_eq(g->nr_zones, 16);
	ck_assert_uint_eq(g->zone_cap, 768 << 10);
	ck_assert_uint_eq(g->lbs, 4096);
	ck_assert(g->zoned);
	ck_assert_int_eq(zlfs_zdev_report(dev, 0, zs, &nr), 0);
	ck_assert_uint_eq(nr, 16);
	for (uint32_t i = 0; i < 16; i++) {
		ck_assert_uint_eq(zs[i].start, (uint64_t)i << 20);
		ck_assert_uint_eq(zs[i].len, 1 << 20);
		ck_assert_uint_eq(zs[i].wp, zs[i].start);
		if (i < 2) {
			ck_assert_uint_eq(zs[i].type, ZLFS_ZONE_CONV);
			ck_assert_uint_eq(zs[i].cond, ZLFS_ZC_NOT_WP);
			ck_assert_uint_eq(zs[i].cap, 1 << 20);
		} else {
			ck_assert_uint_eq(zs[i].type, ZLFS_ZONE_SWR);
			ck_assert_uint_eq(zs[i].cond, ZLFS_ZC_EMPTY);
			ck_assert_uint_eq(zs[i].cap, 768 << 10);
		}
	}
	/* a report past the end is clipped; at the end empty; beyond it an error */
	nr = 8;
	ck_assert_int_eq(zlfs_zdev_report(dev, 14, zs, &nr), 0);
	ck_assert_uint_eq(nr, 2);
	ck_assert_uint_eq(zs[0].start, 14ull << 20);
	nr = 8;
	ck_assert_int_eq(zlfs_zdev_report(dev, 16, zs, &nr), 0);
	ck_assert_uint_eq(nr, 0);
	nr = 8;
	ck_assert_int_eq(zlfs_zdev_report(dev, 17, zs, &nr), -EINVAL);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_read_past_wp_zeros)
{
	struct zlfs_zdev *dev = open_dev("mem:size=8M,zone_size=1M,conv_zones=1");
	const uint64_t z2 = zstart(dev, 2);
	uint8_t *d = pattern(3 * B, 1);

	/* a fresh device reads as zeros everywhere */
	expect_zero(dev, 0, 8 << 20);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, 3 * B, z2), 0);
	ck_assert_uint_eq(zrep(dev, 2).wp, z2 + 3 * B);
	/* data below the wp, zeros above it, whatever the buffer held */
	expect(dev, z2, d, 3 * B);
	expect_zero(dev, z2 + 3 * B, (1 << 20) - 3 * B);
	{
		uint8_t *p = rd(dev, z2, 1 << 20);
		ck_assert_int_eq(memcmp(p, d, 3 * B), 0);
		ck_assert(all_zero(p + 3 * B, (1 << 20) - 3 * B));
		free(p);
	}
	/* straddling the wp, and across zones (conv, this one, the next) */
	{
		uint8_t *p = rd(dev, z2 + 2 * B, 2 * B);
		ck_assert_int_eq(memcmp(p, d + 2 * B, B), 0);
		ck_assert(all_zero(p + B, B));
		free(p);
		p = rd(dev, z2 - B, (1 << 20) + 2 * B);
		ck_assert(all_zero(p, B));
		ck_assert_int_eq(memcmp(p + B, d, 3 * B), 0);
		ck_assert(all_zero(p + 4 * B, (1 << 20) - 2 * B));
		free(p);
	}
	/* after a reset the old data is gone, below and above the new wp */
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 2), 0);
	expect_zero(dev, z2, 1 << 20);
	uint8_t *e = pattern(B, 2);
	ck_assert_int_eq(zlfs_zdev_write(dev, e, B, z2), 0);
	expect(dev, z2, e, B);
	expect_zero(dev, z2 + B, (1 << 20) - B);
	free(d);
	free(e);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_append)
{
	struct zlfs_zdev *dev = open_dev("mem:size=8M,zone_size=256K,conv_zones=1");
	const uint64_t zs = 256 << 10, z3 = zstart(dev, 3);
	uint8_t *shadow = calloc(1, zs);
	uint64_t pos, wp = 0;

	/* appends land at the wp, whatever offset in the zone names it */
	for (int i = 0; i < 10; i++) {
		uint64_t len = (1 + i % 3) * B;
		uint8_t *p = pattern(len, 100 + i);
		pos = 0;
		ck_assert_int_eq(zlfs_zdev_append(dev, p, len, z3 + (i * 7 % 64) * B, &pos), 0);
		ck_assert_uint_eq(pos, z3 + wp);
		memcpy(shadow + wp, p, len);
		wp += len;
		ck_assert_uint_eq(zrep(dev, 3).wp, z3 + wp);
		free(p);
	}
	ck_assert_uint_eq(zrep(dev, 3).cond, ZLFS_ZC_IMP_OPEN);
	expect(dev, z3, shadow, zs);
	/* more than the room left */
	uint8_t *big = pattern(zs, 7);
	ck_assert_int_eq(zlfs_zdev_append(dev, big, zs - wp + B, z3, &pos), -ZLFS_EBOUNDARY);
	ck_assert_uint_eq(zrep(dev, 3).wp, z3 + wp);
	/* exactly the room left: full */
	ck_assert_int_eq(zlfs_zdev_append(dev, big, zs - wp, z3 + zs - B, &pos), 0);
	ck_assert_uint_eq(pos, z3 + wp);
	memcpy(shadow + wp, big, zs - wp);
	ck_assert_uint_eq(zrep(dev, 3).cond, ZLFS_ZC_FULL);
	ck_assert_int_eq(zlfs_zdev_append(dev, big, B, z3, &pos), -ZLFS_EZONEFULL);
	expect(dev, z3, shadow, zs);
	/* conventional zones do not take appends, and nothing is written */
	ck_assert_int_eq(zlfs_zdev_append(dev, big, B, B, &pos), -EINVAL);
	expect_zero(dev, 0, zs);
	/* an asynchronous append with several iovecs */
	{
		struct abatch b;
		struct acmd a;
		uint8_t *p = pattern(4 * B, 9);
		abatch_init(&b);
		memset(&a, 0, sizeof(a));
		a.iov[0] = (struct iovec){ p, B };
		a.iov[1] = (struct iovec){ p + B, 2 * B };
		a.iov[2] = (struct iovec){ p + 3 * B, B };
		ck_assert_int_eq(zlfs_zdev_append(dev, p, B, zstart(dev, 4), &pos), 0);
		ck_assert_uint_eq(pos, zstart(dev, 4));
		abatch_submit(dev, &b, &a, ZLFS_OP_APPEND, zstart(dev, 4) + 9 * B, 3);
		abatch_wait(&b);
		ck_assert_int_eq(a.cmd.result, 0);
		ck_assert_uint_eq(a.cmd.len, 4 * B);
		ck_assert_uint_eq(a.cmd.pos, zstart(dev, 4) + B);
		expect(dev, zstart(dev, 4) + B, p, 4 * B);
		expect(dev, zstart(dev, 4), p, B);
		free(p);
	}
	free(big);
	free(shadow);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_roundtrip)
{
	struct zlfs_zdev *dev = open_dev("mem:size=8M,zone_size=512K,conv_zones=2");
	const uint64_t size = 8 << 20;
	uint8_t *shadow = calloc(1, size);
	uint64_t rng = 77;

	/* sequential zones 2..9 filled in random-sized writes, conv zones at random */
	for (uint32_t z = 2; z < 10; z++) {
		uint64_t wp = zstart(dev, z), end = wp + (z % 2 ? 512 << 10 : 100 * B);
		while (wp < end) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t len = (1 + (rng >> 33) % 16) * B;
			if (len > end - wp)
				len = end - wp;
			write_ok(dev, wp, len, rng, shadow);
			wp += len;
		}
		ck_assert_uint_eq(zrep(dev, z).cond, z % 2 ? ZLFS_ZC_FULL : ZLFS_ZC_IMP_OPEN);
	}
	for (int i = 0; i < 100; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t off = ((rng >> 20) % 256) * B;
		uint64_t len = (1 + (rng >> 40) % 32) * B;
		if (off + len > (1 << 20))
			len = (1 << 20) - off;
		write_ok(dev, off, len, rng, shadow);
	}
	expect(dev, 0, shadow, size);
	/* reads in odd pieces and through several iovecs */
	for (uint64_t off = 0; off < size; off += 77 * B)
		expect(dev, off, shadow + off, off + 77 * B <= size ? 77 * B : size - off);
	{
		struct abatch b;
		struct acmd a;
		uint8_t *p = malloc(7 * B);
		memset(p, 0xee, 7 * B);
		abatch_init(&b);
		memset(&a, 0, sizeof(a));
		/* zone 4: wp at 100 blocks; read blocks 97..103 */
		a.iov[0] = (struct iovec){ p, B };
		a.iov[1] = (struct iovec){ p + B, 5 * B };
		a.iov[2] = (struct iovec){ p + 6 * B, B };
		abatch_submit(dev, &b, &a, ZLFS_OP_READ, zstart(dev, 4) + 97 * B, 3);
		abatch_wait(&b);
		ck_assert_int_eq(a.cmd.result, 0);
		ck_assert_int_eq(memcmp(p, shadow + zstart(dev, 4) + 97 * B, 3 * B), 0);
		ck_assert(all_zero(p + 3 * B, 4 * B));
		free(p);
	}
	free(shadow);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_conv_writes)
{
	struct zlfs_zdev *dev = open_dev("mem:size=4M,zone_size=512K,conv_zones=3");
	const uint64_t zs = 512 << 10, size = 4 << 20;
	uint8_t *shadow = calloc(1, size);
	uint64_t rng = 5;

	/* anywhere, any order, overwriting, spanning conventional zones */
	for (int i = 0; i < 200; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t off = ((rng >> 20) % (3 * zs / B)) * B;
		uint64_t len = (1 + (rng >> 44) % 200) * B;
		if (off + len > 3 * zs)
			len = 3 * zs - off;
		write_ok(dev, off, len, rng, shadow);
	}
	write_ok(dev, zs - B, 2 * B, 1000, shadow);
	write_ok(dev, 0, 3 * zs, 1001, shadow);
	write_ok(dev, 2 * zs - 8 * B, 16 * B, 1002, shadow);
	for (uint32_t i = 0; i < 3; i++) {
		struct zlfs_zone z = zrep(dev, i);
		ck_assert_uint_eq(z.type, ZLFS_ZONE_CONV);
		ck_assert_uint_eq(z.cond, ZLFS_ZC_NOT_WP);
	}
	/* not into a sequential zone, not even at its wp; nothing is written */
	uint8_t *p = pattern(3 * zs + B, 9);
	ck_assert_int_eq(zlfs_zdev_write(dev, p, 2 * B, 3 * zs - B), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(zlfs_zdev_write(dev, p, 3 * zs + B, 0), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(zlfs_zdev_write(dev, p, zs + B, 2 * zs), -ZLFS_EBOUNDARY);
	ck_assert_uint_eq(zrep(dev, 3).cond, ZLFS_ZC_EMPTY);
	ck_assert_uint_eq(zrep(dev, 3).wp, 3 * zs);
	expect(dev, 0, shadow, size);
	/* management is for sequential zones only */
	for (int op = ZLFS_ZM_RESET; op <= ZLFS_ZM_FINISH; op++)
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, (enum zlfs_zone_mgmt)op, 1), -EINVAL);
	/* reset-all leaves conventional data alone */
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	expect(dev, 0, shadow, size);
	free(p);
	free(shadow);
	zlfs_zdev_close(dev);
}
END_TEST

/*
 * Discard: conventional zones only, aligned and in bounds; afterwards the
 * range reads zeros (memory, and a sparse image, whose file gets a hole);
 * the blocks around it keep their data.
 */
static void discard_case(const char *spec, const char *img)
{
	struct zlfs_zdev *dev = open_dev(spec);
	const uint64_t zs = 512 << 10;
	uint8_t *shadow = calloc(1, 4 << 20);

	write_ok(dev, 0, 3 * zs, 77, shadow);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	ck_assert_int_eq(zlfs_zdev_discard(dev, B, zs), 0);
	memset(shadow + B, 0, zs);
	expect(dev, 0, shadow, 3 * zs);
	/* a sequential zone is emptied by a reset, never discarded */
	ck_assert_int_eq(zlfs_zdev_discard(dev, 2 * zs, zs + B), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_discard(dev, 3 * zs, B), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_discard(dev, 1, B), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_discard(dev, 0, B + 1), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_discard(dev, 4ull << 20, B), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_discard(dev, B, UINT64_MAX - B), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_discard(dev, 0, 0), 0);
	expect(dev, 0, shadow, 3 * zs);
	zlfs_zdev_close(dev);
	if (img) {
		/* the hole is in the file: reopened, the range still reads zeros */
		dev = open_dev(img);
		expect(dev, 0, shadow, 3 * zs);
		zlfs_zdev_close(dev);
	}
	free(shadow);
}

START_TEST(test_discard)
{
	discard_case("mem:size=4M,zone_size=512K,conv_zones=3", NULL);
	char *img = tu_path("discard.img");
	struct zlfs_image_params p = { 4ull << 20, 512ull << 10, 0, 3, 0, 0, 4096, false };
	ck_assert_int_eq(zlfs_image_create(img, &p, true), 0);
	discard_case(img, img);
	free(img);
}
END_TEST

START_TEST(test_zone_capacity)
{
	struct zlfs_zdev *dev = open_dev("mem:size=4M,zone_size=1M,zone_capacity=640K");
	const uint64_t zs = 1 << 20, cap = 640 << 10;
	uint8_t *d = pattern(zs, 3);
	uint64_t pos;

	ck_assert_uint_eq(zlfs_zdev_geom(dev)->zone_cap, cap);
	ck_assert_uint_eq(zrep(dev, 0).cap, cap);
	/* the zone size does not fit, the capacity does */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, zs, 0), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, cap + B, 0), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, cap - 4 * B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + cap - 4 * B, 8 * B, cap - 4 * B), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(zlfs_zdev_append(dev, d + cap - 4 * B, 5 * B, 0, &pos), -ZLFS_EBOUNDARY);
	/* the gap between capacity and zone end is never the wp */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, cap), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(zlfs_zdev_append(dev, d + cap - 4 * B, 4 * B, 0, &pos), 0);
	ck_assert_uint_eq(pos, cap - 4 * B);
	struct zlfs_zone z = zrep(dev, 0);
	ck_assert_uint_eq(z.cond, ZLFS_ZC_FULL);
	ck_assert_uint_eq(z.wp, cap);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, cap), -ZLFS_EZONEFULL);
	/* reads: data up to the capacity, zeros beyond it */
	expect(dev, 0, d, cap);
	expect_zero(dev, cap, zs - cap);
	/* finish stops at the capacity too */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, 2 * B, zs), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_FINISH, 1), 0);
	z = zrep(dev, 1);
	ck_assert_uint_eq(z.cond, ZLFS_ZC_FULL);
	ck_assert_uint_eq(z.wp, zs + cap);
	expect(dev, zs, d, 2 * B);
	expect_zero(dev, zs + 2 * B, zs - 2 * B);
	free(d);
	zlfs_zdev_close(dev);
}
END_TEST

/* ---- errors and management ---------------------------------------------------- */

START_TEST(test_errors_distinct)
{
	static const int codes[] = { ZLFS_EUNALIGNED, ZLFS_EBOUNDARY, ZLFS_EZONEFULL,
				     ZLFS_ETOOMANYOPEN, ZLFS_ETOOMANYACT, ZLFS_EZONERO,
				     ZLFS_EZONEOFFLINE, EIO, EINVAL };
	const int n = (int)(sizeof(codes) / sizeof(codes[0]));

	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			ck_assert_int_ne(codes[i], codes[j]);

	struct zlfs_zdev *dev = open_dev("mem:size=16M,zone_size=1M,conv_zones=1,max_open=2,"
					 "max_active=3");
	uint8_t *d = pattern(2 << 20, 4);
	uint64_t pos;

	ck_assert_uint_eq(zlfs_zdev_geom(dev)->max_open, 2);
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->max_active, 3);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zstart(dev, 1) + B), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, (1 << 20) + B, zstart(dev, 1)), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_FINISH, 2), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zstart(dev, 2)), -ZLFS_EZONEFULL);
	ck_assert_int_eq(zlfs_zdev_append(dev, d, B, zstart(dev, 2), &pos), -ZLFS_EZONEFULL);
	/* 1 closed + 2 explicitly open: 3 active, 2 open */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zstart(dev, 1)), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_CLOSE, 1), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 3), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 4), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zstart(dev, 5)), -ZLFS_ETOOMANYACT);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 5), -ZLFS_ETOOMANYACT);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zstart(dev, 1) + B), -ZLFS_ETOOMANYOPEN);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 1), -ZLFS_ETOOMANYOPEN);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_CLOSED);
	ck_assert_uint_eq(zrep(dev, 5).cond, ZLFS_ZC_EMPTY);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 6, ZLFS_ZC_RDONLY), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zstart(dev, 6)), -ZLFS_EZONERO);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 7, ZLFS_ZC_OFFLINE), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zstart(dev, 7)), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(zlfs_zdev_read(dev, d, B, zstart(dev, 7)), -ZLFS_EZONEOFFLINE);
	/* argument errors: nothing reaches the device */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zstart(dev, 8) + 512), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B + 512, zstart(dev, 8)), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, 0, zstart(dev, 8)), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 16 << 20), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, 2 * B, (16 << 20) - B), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_read(dev, d, B, 16 << 20), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_read(dev, d, 100, 0), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_append(dev, d, B, 0, &pos), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 16), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, (enum zlfs_zone_mgmt)7, 8), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 0), -EINVAL);
	ck_assert_uint_eq(zrep(dev, 8).cond, ZLFS_ZC_EMPTY);
	{
		struct zlfs_cmd c;
		memset(&c, 0, sizeof(c));
		c.op = 9;
		ck_assert_int_eq(zlfs_zdev_submit(dev, &c), -EINVAL);
	}
	/* the failed writes moved no write pointer */
	ck_assert_uint_eq(zrep(dev, 1).wp, zstart(dev, 1) + B);
	ck_assert_uint_eq(zrep(dev, 3).wp, zstart(dev, 3));
	ck_assert_uint_eq(zrep(dev, 5).wp, zstart(dev, 5));
	free(d);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_zone_mgmt)
{
	struct zlfs_zdev *dev = open_dev("mem:size=8M,zone_size=512K,conv_zones=1");
	const uint64_t zs = 512 << 10;
	uint8_t *d = pattern(zs, 11);

	/* explicit open / close of an empty zone */
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 1), 0);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_EXP_OPEN);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 1), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_CLOSE, 1), 0);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_EMPTY);
	/* with data: closed, then written on at its wp */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, 2 * B, zs), 0);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_IMP_OPEN);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_CLOSE, 1), 0);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_CLOSED);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + 2 * B, B, zs + 2 * B), 0);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_IMP_OPEN);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 1), 0);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_EXP_OPEN);
	/* finish: full at the capacity; data kept, the rest reads zeros */
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_FINISH, 1), 0);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_FULL);
	ck_assert_uint_eq(zrep(dev, 1).wp, 2 * zs);
	expect(dev, zs, d, 3 * B);
	expect_zero(dev, zs + 3 * B, zs - 3 * B);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_FINISH, 1), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 1), -ZLFS_EZONEFULL);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_CLOSE, 1), 0);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_FULL);
	/* reset: empty, data gone */
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 1), 0);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_EMPTY);
	ck_assert_uint_eq(zrep(dev, 1).wp, zs);
	expect_zero(dev, zs, zs);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 1), 0);

	/* the ALL forms */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 2 * zs), 0);          /* 2 imp */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 3 * zs), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_CLOSE, 3), 0);  /* 3 closed */
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 4), 0);   /* 4 exp, empty */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, zs, 5 * zs), 0);         /* 5 full */
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_CLOSE, ZLFS_ZONE_ALL), 0);
	ck_assert_uint_eq(zrep(dev, 2).cond, ZLFS_ZC_CLOSED);
	ck_assert_uint_eq(zrep(dev, 3).cond, ZLFS_ZC_CLOSED);
	ck_assert_uint_eq(zrep(dev, 4).cond, ZLFS_ZC_EMPTY);
	ck_assert_uint_eq(zrep(dev, 5).cond, ZLFS_ZC_FULL);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, ZLFS_ZONE_ALL), 0);
	ck_assert_uint_eq(zrep(dev, 2).cond, ZLFS_ZC_EXP_OPEN);
	ck_assert_uint_eq(zrep(dev, 3).cond, ZLFS_ZC_EXP_OPEN);
	ck_assert_uint_eq(zrep(dev, 4).cond, ZLFS_ZC_EMPTY);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_FINISH, ZLFS_ZONE_ALL), 0);
	ck_assert_uint_eq(zrep(dev, 2).cond, ZLFS_ZC_FULL);
	ck_assert_uint_eq(zrep(dev, 3).cond, ZLFS_ZC_FULL);
	ck_assert_uint_eq(zrep(dev, 4).cond, ZLFS_ZC_EMPTY);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	for (uint32_t i = 1; i < 16; i++) {
		struct zlfs_zone z = zrep(dev, i);
		ck_assert_uint_eq(z.cond, ZLFS_ZC_EMPTY);
		ck_assert_uint_eq(z.wp, z.start);
	}
	expect_zero(dev, zs, 15 * zs);
	free(d);
	zlfs_zdev_close(dev);
}
END_TEST

/* ---- faults ------------------------------------------------------------------ */

START_TEST(test_fault_once)
{
	struct zlfs_zdev *dev = open_dev("mem:size=4M,zone_size=512K,conv_zones=1");
	struct zlfs_zdev_stats st;
	uint8_t *d = pattern(8 * B, 12), buf[B];
	uint64_t pos;

	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_READ, 0, false), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_NKINDS, 1, false), -EINVAL);
	/* counting starts at the arm */
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_READ, 3, false), 0);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 0), 0);     /* writes don't count */
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), -EIO);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), 0);
	/* nth = 1: the very next one */
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_READ, 1, false), 0);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), -EIO);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), 0);
	/* writes: the failed one changes nothing, the zone goes on at its wp */
	const uint64_t z1 = 512 << 10;
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_WRITE, 2, false), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, z1), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + B, B, z1 + B), -EIO);
	ck_assert_uint_eq(zrep(dev, 1).wp, z1 + B);
	expect_zero(dev, z1 + B, B);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + B, B, z1 + B), 0);
	expect(dev, z1, d, 2 * B);
	/* appends count as writes; conventional data is untouched by a failed write */
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_WRITE, 1, false), 0);
	ck_assert_int_eq(zlfs_zdev_append(dev, d, B, z1, &pos), -EIO);
	ck_assert_int_eq(zlfs_zdev_append(dev, d + 2 * B, B, z1, &pos), 0);
	ck_assert_uint_eq(pos, z1 + 2 * B);
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_WRITE, 1, false), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + 4 * B, B, 0), -EIO);
	expect(dev, 0, d, B);
	/* flush */
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_FLUSH, 2, false), 0);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	ck_assert_int_eq(zlfs_zdev_flush(dev), -EIO);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	zlfs_zdev_stats(dev, &st);
	ck_assert_uint_eq(st.injected, 6);
	free(d);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_fault_persistent)
{
	struct zlfs_zdev *dev = open_dev("mem:size=4M,zone_size=512K");
	struct zlfs_zdev_stats st;
	uint8_t *d = pattern(8 * B, 13), buf[B];
	uint64_t pos;

	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_WRITE, 2, true), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 0), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(zlfs_zdev_write(dev, d + B, B, B), -EIO);
		ck_assert_int_eq(zlfs_zdev_append(dev, d + B, B, 0, &pos), -EIO);
	}
	/* other kinds are not affected */
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	ck_assert_uint_eq(zrep(dev, 0).wp, B);
	zlfs_zdev_fault_clear(dev);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + B, B, B), 0);
	expect(dev, 0, d, 2 * B);
	/* reads and flushes, persistent from the first */
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_READ, 1, true), 0);
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_FLUSH, 1, true), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), -EIO);
		ck_assert_int_eq(zlfs_zdev_flush(dev), -EIO);
	}
	ck_assert_int_eq(zlfs_zdev_write(dev, d + 2 * B, B, 2 * B), 0);
	/* re-arming one kind once turns its persistence off */
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_READ, 2, false), 0);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), -EIO);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_flush(dev), -EIO);
	zlfs_zdev_fault_clear(dev);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	expect(dev, 0, d, 3 * B);
	zlfs_zdev_stats(dev, &st);
	ck_assert_uint_eq(st.injected, 8 + 6 + 2);
	free(d);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_fault_spec)
{
	struct zlfs_zdev *dev;
	uint8_t *d = pattern(8 * B, 14), buf[B];

	dev = open_dev("mem:size=4M,zone_size=512K,fail_write=2");
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + B, B, B), -EIO);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + B, B, B), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + 2 * B, B, 2 * B), 0);
	zlfs_zdev_close(dev);

	dev = open_dev("mem:size=4M,zone_size=512K,fail_write=2,fail_always=1");
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 0), 0);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(zlfs_zdev_write(dev, d + B, B, B), -EIO);
	ck_assert_uint_eq(zrep(dev, 0).wp, B);
	zlfs_zdev_close(dev);

	dev = open_dev("mem:size=4M,zone_size=512K,fail_read=1,fail_flush=2");
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), -EIO);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	ck_assert_int_eq(zlfs_zdev_flush(dev), -EIO);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	zlfs_zdev_close(dev);

	dev = open_dev("mem:size=4M,zone_size=512K,fail_read=2,fail_always=1,qd=4,lat_us=10");
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), -EIO);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 0), 0);
	zlfs_zdev_close(dev);
	free(d);
}
END_TEST

START_TEST(test_set_zone_cond)
{
	struct zlfs_zdev *dev = open_dev("mem:size=4M,zone_size=512K,conv_zones=1");
	const uint64_t zs = 512 << 10;
	uint8_t *d = pattern(4 * B, 15), buf[B];
	uint64_t pos;

	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 1, ZLFS_ZC_EMPTY), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 1, ZLFS_ZC_FULL), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 8, ZLFS_ZC_RDONLY), -EINVAL);
	/* read-only: data stays readable, nothing else works */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, 2 * B, zs), 0);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 1, ZLFS_ZC_RDONLY), 0);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_RDONLY);
	expect(dev, zs, d, 2 * B);
	expect_zero(dev, zs + 2 * B, B);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zs + 2 * B), -ZLFS_EZONERO);
	ck_assert_int_eq(zlfs_zdev_append(dev, d, B, zs, &pos), -ZLFS_EZONERO);
	for (int op = ZLFS_ZM_RESET; op <= ZLFS_ZM_FINISH; op++)
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, (enum zlfs_zone_mgmt)op, 1), -ZLFS_EZONERO);
	/* offline: nothing works */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 2 * zs), 0);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 2, ZLFS_ZC_OFFLINE), 0);
	ck_assert_uint_eq(zrep(dev, 2).cond, ZLFS_ZC_OFFLINE);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 2 * zs), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 2 * zs + B), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 2 * zs), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 2 * zs + B), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(zlfs_zdev_append(dev, d, B, 2 * zs, &pos), -ZLFS_EZONEOFFLINE);
	for (int op = ZLFS_ZM_RESET; op <= ZLFS_ZM_FINISH; op++)
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, (enum zlfs_zone_mgmt)op, 2),
				 -ZLFS_EZONEOFFLINE);
	/* a read that only touches the offline zone partly fails too */
	{
		uint8_t *p = malloc(2 * B);
		ck_assert_int_eq(zlfs_zdev_read(dev, p, 2 * B, 2 * zs - B), -ZLFS_EZONEOFFLINE);
		free(p);
	}
	/* the ALL forms pass over them */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 3 * zs), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	ck_assert_uint_eq(zrep(dev, 1).cond, ZLFS_ZC_RDONLY);
	ck_assert_uint_eq(zrep(dev, 2).cond, ZLFS_ZC_OFFLINE);
	ck_assert_uint_eq(zrep(dev, 3).cond, ZLFS_ZC_EMPTY);
	expect(dev, zs, d, 2 * B);
	/* conventional zones */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 0, ZLFS_ZC_RDONLY), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + B, B, B), -ZLFS_EZONERO);
	expect(dev, 0, d, B);
	expect_zero(dev, B, B);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 0, ZLFS_ZC_OFFLINE), 0);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), -ZLFS_EZONEOFFLINE);
	free(d);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_stats)
{
	struct zlfs_zdev *dev = open_dev("mem:size=4M,zone_size=512K,conv_zones=1");
	struct zlfs_zdev_stats st;
	uint8_t *d = pattern(4 * B, 16), buf[B];
	uint64_t pos;

	zlfs_zdev_stats(dev, &st);
	ck_assert_uint_eq(st.cmds + st.reads + st.writes + st.flushes + st.unaligned +
			  st.reordered + st.hibernations + st.requeues + st.injected, 0);
	const uint64_t z1 = 512 << 10;
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, z1), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, z1 + B), 0);
	ck_assert_int_eq(zlfs_zdev_append(dev, d, B, z1, &pos), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, z1 + B), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, z1 + 9 * B), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, z1), 0);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_READ, 1, false), 0);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), -EIO);
	/* rejected at submit or not a command: not counted */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, 100, 0), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_append(dev, d, B, 0, &pos), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_FINISH, 1), 0);
	zlfs_zdev_stats(dev, &st);
	ck_assert_uint_eq(st.writes, 5);
	ck_assert_uint_eq(st.reads, 3);
	ck_assert_uint_eq(st.flushes, 1);
	ck_assert_uint_eq(st.cmds, 9);
	ck_assert_uint_eq(st.unaligned, 2);
	ck_assert_uint_eq(st.injected, 1);
	ck_assert_uint_eq(st.requeues + st.reordered + st.hibernations, 0);
	free(d);
	zlfs_zdev_close(dev);
}
END_TEST

/* ---- power cut ----------------------------------------------------------------- */

/* What a sequential zone must look like after a cut and revive. */
struct pcz {
	uint64_t flushed, old;     /* relative wps: last flushed, at the cut */
};

static void check_seq_after_cut(struct zlfs_zdev *dev, uint32_t zi, const struct pcz *e,
				const uint8_t *shadow, uint64_t *wp_out)
{
	const uint64_t zs = zlfs_zdev_geom(dev)->zone_size;
	struct zlfs_zone z = zrep(dev, zi);
	uint64_t wp = z.wp - z.start;

	ck_assert_msg(wp >= e->flushed && wp <= e->old,
		      "zone %u: wp %llu outside [flushed %llu, old %llu]", zi,
		      (unsigned long long)wp, (unsigned long long)e->flushed,
		      (unsigned long long)e->old);
	ck_assert_uint_eq(wp % zlfs_zdev_geom(dev)->lbs, 0);
	if (wp == 0)
		ck_assert_uint_eq(z.cond, ZLFS_ZC_EMPTY);
	else if (wp == z.cap)
		ck_assert_uint_eq(z.cond, ZLFS_ZC_FULL);
	else
		ck_assert_uint_eq(z.cond, ZLFS_ZC_CLOSED);
	uint8_t *p = rd(dev, z.start, zs);
	for (uint64_t i = 0; i < wp; i++)
		if (p[i] != shadow[z.start + i])
			ck_abort_msg("zone %u: byte %llu below wp %llu lost", zi,
				     (unsigned long long)i, (unsigned long long)wp);
	ck_assert_msg(all_zero(p + wp, zs - wp), "zone %u: data above the wp", zi);
	free(p);
	*wp_out = wp;
}

START_TEST(test_powercut_seq)
{
	const uint64_t zs = 512 << 10, size = 8 << 20;
	uint8_t *shadow = malloc(size);
	int lost_some = 0, kept_unflushed = 0;
	uint64_t z6_wps[64];
	int nz6 = 0;

	for (uint64_t seed = 1; seed <= 24; seed++) {
		struct zlfs_zdev *dev = open_dev("mem:size=8M,zone_size=512K,conv_zones=1");
		struct pcz e[16];
		uint64_t pos, wp;

		memset(shadow, 0, size);
		memset(e, 0, sizeof(e));
#define W(z, rel, nb, sd) write_ok(dev, (z) * zs + (rel) * B, (nb) * B, (sd), shadow)
		/* before arming: all durable */
		W(1, 0, 10, seed * 100 + 1);
		for (int i = 0; i < 8; i++)
			W(2, i * 16, 16, seed * 100 + 2 + i);
		e[1].flushed = 10 * B;
		e[2].flushed = e[2].old = zs;
		ck_assert_int_eq(zlfs_zdev_powercut_arm(dev, 0, seed), 0);
		ck_assert(!zlfs_zdev_is_dead(dev));
		W(3, 0, 5, seed * 100 + 20);
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 5), 0);
		W(5, 0, 3, seed * 100 + 21);
		W(6, 0, 100, seed * 100 + 22);
		W(8, 0, 4, seed * 100 + 23);
		ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
		e[3].flushed = 5 * B;
		e[5].flushed = e[5].old = 3 * B;
		e[6].flushed = 100 * B;
		/* a reset is durable at once */
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 8), 0);
		memset(shadow + 8 * zs, 0, zs);
		/* unflushed */
		W(3, 5, 7, seed * 100 + 30);
		e[3].old = 12 * B;
		wp = 0;
		for (int i = 0; i < 9; i++) {
			uint64_t n = 1 + (seed + i) % 4;
			uint8_t *p = pattern(n * B, seed * 100 + 40 + i);
			ck_assert_int_eq(zlfs_zdev_append(dev, p, n * B, 4 * zs, &pos), 0);
			ck_assert_uint_eq(pos, 4 * zs + wp);
			memcpy(shadow + 4 * zs + wp, p, n * B);
			wp += n * B;
			free(p);
		}
		e[4].old = wp;
		W(6, 100, 28, seed * 100 + 50);           /* fills it */
		ck_assert_uint_eq(zrep(dev, 6).cond, ZLFS_ZC_FULL);
		e[6].old = zs;
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 7), 0);
		W(1, 10, 6, seed * 100 + 51);
		e[1].old = 16 * B;
		W(8, 0, 2, seed * 100 + 52);
		e[8].old = 2 * B;
		W(9, 0, 1, seed * 100 + 53);
		e[9].old = B;
#undef W
		ck_assert_int_eq(zlfs_zdev_powercut(dev), 0);
		ck_assert(zlfs_zdev_is_dead(dev));
		ck_assert_int_eq(zlfs_zdev_revive(dev), 0);
		ck_assert(!zlfs_zdev_is_dead(dev));
		int lost = 0, kept = 0;
		for (uint32_t zi = 1; zi < 16; zi++) {
			check_seq_after_cut(dev, zi, &e[zi], shadow, &wp);
			lost += wp < e[zi].old;
			kept += wp > e[zi].flushed;
			if (zi == 6 && nz6 < 64)
				z6_wps[nz6++] = wp;
		}
		lost_some += lost > 0;
		kept_unflushed += kept > 0;
		/* the device works again; the explicitly opened zone came back closed */
		ck_assert_uint_eq(zrep(dev, 7).cond, ZLFS_ZC_EMPTY);
		ck_assert_uint_eq(zrep(dev, 5).cond, ZLFS_ZC_CLOSED);
		struct zlfs_zone z3 = zrep(dev, 3);
		uint8_t *p = pattern(B, seed);
		ck_assert_int_eq(zlfs_zdev_write(dev, p, B, z3.wp), 0);
		expect(dev, z3.wp, p, B);
		free(p);
		zlfs_zdev_close(dev);
	}
	/* the cut is random: across seeds some data was lost and some kept */
	ck_assert_int_gt(lost_some, 0);
	ck_assert_int_gt(kept_unflushed, 0);
	int distinct = 0;
	for (int i = 0; i < nz6; i++) {
		int seen = 0;
		for (int j = 0; j < i; j++)
			seen |= z6_wps[j] == z6_wps[i];
		distinct += !seen;
	}
	ck_assert_int_ge(distinct, 4);
	free(shadow);
}
END_TEST

/*
 * Conventional zones: the state after the cut must be the flushed state
 * plus the first k unflushed writes of the zone, for some k.
 */
struct cw { uint64_t off, len, seed; };

static int match_prefix(struct zlfs_zdev *dev, uint64_t zoff, uint64_t zs, const uint8_t *base,
			const struct cw *w, int n)
{
	uint8_t *state = malloc(zs), *got = rd(dev, zoff, zs);
	int match = -1;

	memcpy(state, base, zs);
	for (int k = 0; k <= n; k++) {
		if (k) {
			uint8_t *p = pattern(w[k - 1].len, w[k - 1].seed);
			memcpy(state + w[k - 1].off - zoff, p, w[k - 1].len);
			free(p);
		}
		if (!memcmp(state, got, zs)) {
			ck_assert_int_eq(match, -1);   /* the candidates differ */
			match = k;
		}
	}
	free(state);
	free(got);
	return match;
}

START_TEST(test_powercut_conv)
{
	const uint64_t zs = 256 << 10;
	/*
	 * Overlapping writes, each overwriting part of older ones and keeping
	 * a part of its own to the end, so that every subset of them leaves a
	 * different image and only prefixes are accepted.
	 */
	const struct cw w0[] = {
		{ 0, 4 * B, 11 }, { 2 * B, 4 * B, 12 }, { 4 * B, 4 * B, 13 },
		{ 6 * B, 4 * B, 14 }, { B, 2 * B, 15 }, { 9 * B, 3 * B, 16 },
	};
	const struct cw w1[] = { { zs, 4 * B, 21 }, { zs + 2 * B, 6 * B, 22 }, { zs + B, B, 23 } };
	int seen0[7] = { 0 }, seen1[4] = { 0 };

	for (uint64_t seed = 1; seed <= 32; seed++) {
		struct zlfs_zdev *dev = open_dev("mem:size=2M,zone_size=256K,conv_zones=2");
		uint8_t *base0 = calloc(1, zs), *base1 = calloc(1, zs), *p;

		/* durable: before arming, and flushed after it */
		p = pattern(16 * B, 1);
		ck_assert_int_eq(zlfs_zdev_write(dev, p, 16 * B, 0), 0);
		memcpy(base0, p, 16 * B);
		free(p);
		ck_assert_int_eq(zlfs_zdev_powercut_arm(dev, 0, seed), 0);
		p = pattern(8 * B, 2);
		ck_assert_int_eq(zlfs_zdev_write(dev, p, 8 * B, 4 * B), 0);
		memcpy(base0 + 4 * B, p, 8 * B);
		free(p);
		ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
		/* unflushed, interleaved between the zones */
		for (int i = 0; i < 6; i++) {
			write_ok(dev, w0[i].off, w0[i].len, w0[i].seed, NULL);
			if (i < 3)
				write_ok(dev, w1[i].off, w1[i].len, w1[i].seed, NULL);
		}
		ck_assert_int_eq(zlfs_zdev_powercut(dev), 0);
		uint8_t buf[B];
		ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), -EIO);
		ck_assert_int_eq(zlfs_zdev_revive(dev), 0);
		int k0 = match_prefix(dev, 0, zs, base0, w0, 6);
		int k1 = match_prefix(dev, zs, zs, base1, w1, 3);
		ck_assert_msg(k0 >= 0, "seed %llu: zone 0 is no prefix of its writes",
			      (unsigned long long)seed);
		ck_assert_msg(k1 >= 0, "seed %llu: zone 1 is no prefix of its writes",
			      (unsigned long long)seed);
		seen0[k0]++;
		seen1[k1]++;
		free(base0);
		free(base1);
		zlfs_zdev_close(dev);
	}
	/* different seeds keep different prefixes, from none to all */
	int d0 = 0, d1 = 0;
	for (int k = 0; k < 7; k++)
		d0 += seen0[k] > 0;
	for (int k = 0; k < 4; k++)
		d1 += seen1[k] > 0;
	ck_assert_int_ge(d0, 3);
	ck_assert_int_ge(d1, 2);
}
END_TEST

/*
 * A conventional write may span two conventional zones.  After a cut each
 * zone must still hold a prefix of the writes that touched it.
 */
START_TEST(test_powercut_conv_spanning)
{
	const uint64_t zs = 256 << 10;
	/* W0 in zone 1, W1 across the boundary, W2 in zone 1 partly over W1 */
	const struct cw w[] = { { zs, 8 * B, 31 }, { zs - 8 * B, 16 * B, 32 },
				{ zs + 4 * B, 8 * B, 33 } };

	for (uint64_t seed = 1; seed <= 32; seed++) {
		struct zlfs_zdev *dev = open_dev("mem:size=2M,zone_size=256K,conv_zones=2");
		uint8_t *zero = calloc(1, zs);

		ck_assert_int_eq(zlfs_zdev_powercut_arm(dev, 0, seed), 0);
		for (int i = 0; i < 3; i++)
			write_ok(dev, w[i].off, w[i].len, w[i].seed, NULL);
		ck_assert_int_eq(zlfs_zdev_powercut(dev), 0);
		ck_assert_int_eq(zlfs_zdev_revive(dev), 0);
		/* zone 0 saw only W1's first half: nothing or that */
		uint8_t *w1 = pattern(16 * B, w[1].seed);
		uint8_t *state0 = calloc(1, zs), *got0 = rd(dev, 0, zs);
		memcpy(state0 + zs - 8 * B, w1, 8 * B);
		bool ok0 = !memcmp(got0, zero, zs) || !memcmp(got0, state0, zs);
		/* zone 1 saw W0, W1's second half, W2: nothing, W0, W0+W1, all */
		uint8_t *st = calloc(1, zs), *got1 = rd(dev, zs, zs), *p;
		bool ok1 = !memcmp(got1, st, zs);
		p = pattern(8 * B, w[0].seed);
		memcpy(st, p, 8 * B);
		free(p);
		ok1 |= !memcmp(got1, st, zs);
		memcpy(st, w1 + 8 * B, 8 * B);
		ok1 |= !memcmp(got1, st, zs);
		p = pattern(8 * B, w[2].seed);
		memcpy(st + 4 * B, p, 8 * B);
		free(p);
		ok1 |= !memcmp(got1, st, zs);
		ck_assert_msg(ok0, "seed %llu: zone 0 is no prefix of its writes",
			      (unsigned long long)seed);
		ck_assert_msg(ok1, "seed %llu: zone 1 is no prefix of its writes "
			      "(W1 undone over the newer W2?)", (unsigned long long)seed);
		free(w1);
		free(state0);
		free(got0);
		free(st);
		free(got1);
		free(zero);
		zlfs_zdev_close(dev);
	}
}
END_TEST

START_TEST(test_powercut_dead_revive)
{
	struct zlfs_zdev *dev = open_dev("mem:size=4M,zone_size=512K,conv_zones=1");
	const uint64_t zs = 512 << 10;
	uint8_t *d = pattern(8 * B, 17), buf[B];
	uint64_t pos;

	/* nothing to cut before arming */
	ck_assert_int_eq(zlfs_zdev_powercut(dev), -EINVAL);
	ck_assert(!zlfs_zdev_is_dead(dev));
	ck_assert_int_eq(zlfs_zdev_write(dev, d, 2 * B, zs), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 2), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 2 * zs), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 3), 0);
	ck_assert_int_eq(zlfs_zdev_powercut_arm(dev, 0, 99), 0);
	ck_assert_int_eq(zlfs_zdev_powercut(dev), 0);
	ck_assert(zlfs_zdev_is_dead(dev));
	/* everything fails with EIO, synchronous or not */
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, 0), -EIO);
	ck_assert_int_eq(zlfs_zdev_read(dev, buf, B, zs), -EIO);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 0), -EIO);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zs + 2 * B), -EIO);
	ck_assert_int_eq(zlfs_zdev_append(dev, d, B, zs, &pos), -EIO);
	ck_assert_int_eq(zlfs_zdev_flush(dev), -EIO);
	for (int op = ZLFS_ZM_RESET; op <= ZLFS_ZM_FINISH; op++) {
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, (enum zlfs_zone_mgmt)op, 4), -EIO);
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, (enum zlfs_zone_mgmt)op, ZLFS_ZONE_ALL),
				 -EIO);
	}
	{
		struct abatch b;
		struct acmd a[2];
		abatch_init(&b);
		memset(a, 0, sizeof(a));
		a[0].iov[0] = (struct iovec){ d, B };
		a[1].iov[0] = (struct iovec){ buf, B };
		abatch_submit(dev, &b, &a[0], ZLFS_OP_WRITE, zs + 2 * B, 1);
		abatch_submit(dev, &b, &a[1], ZLFS_OP_READ, zs, 1);
		abatch_wait(&b);
		ck_assert_int_eq(a[0].cmd.result, -EIO);
		ck_assert_int_eq(a[1].cmd.result, -EIO);
	}
	ck_assert(zlfs_zdev_is_dead(dev));
	/* revive: written before arming, so all there; open zones closed */
	ck_assert_int_eq(zlfs_zdev_revive(dev), 0);
	ck_assert(!zlfs_zdev_is_dead(dev));
	struct zlfs_zone zones[8];
	uint32_t nr = 8;
	ck_assert_int_eq(zlfs_zdev_report(dev, 0, zones, &nr), 0);
	for (uint32_t i = 0; i < nr; i++)
		ck_assert(zones[i].cond != ZLFS_ZC_IMP_OPEN && zones[i].cond != ZLFS_ZC_EXP_OPEN);
	ck_assert_uint_eq(zones[1].cond, ZLFS_ZC_CLOSED);
	ck_assert_uint_eq(zones[1].wp, zs + 2 * B);
	ck_assert_uint_eq(zones[2].cond, ZLFS_ZC_CLOSED);
	ck_assert_uint_eq(zones[3].cond, ZLFS_ZC_EMPTY);
	expect(dev, zs, d, 2 * B);
	expect(dev, 2 * zs, d, B);
	/* and it takes commands again, not armed any more */
	ck_assert_int_eq(zlfs_zdev_write(dev, d + 2 * B, B, zs + 2 * B), 0);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	ck_assert_int_eq(zlfs_zdev_powercut(dev), -EINVAL);
	expect(dev, zs, d, 3 * B);
	/* a second arm/cut cycle */
	ck_assert_int_eq(zlfs_zdev_powercut_arm(dev, 0, 5), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + 3 * B, 5 * B, zs + 3 * B), 0);
	ck_assert_int_eq(zlfs_zdev_powercut(dev), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zs + 8 * B), -EIO);
	ck_assert_int_eq(zlfs_zdev_revive(dev), 0);
	struct zlfs_zone z1 = zrep(dev, 1);
	ck_assert_uint_ge(z1.wp, zs + 3 * B);
	ck_assert_uint_le(z1.wp, zs + 8 * B);
	expect(dev, zs, d, z1.wp - zs);
	free(d);
	zlfs_zdev_close(dev);
}
END_TEST

/* Durable at once, whatever the cut keeps: reset and finish. */
START_TEST(test_powercut_mgmt_durable)
{
	const uint64_t zs = 512 << 10;

	for (uint64_t seed = 1; seed <= 8; seed++) {
		struct zlfs_zdev *dev = open_dev("mem:size=4M,zone_size=512K");
		uint8_t *d = pattern(zs, 18);
		ck_assert_int_eq(zlfs_zdev_write(dev, d, 8 * B, 0), 0);
		ck_assert_int_eq(zlfs_zdev_powercut_arm(dev, 0, seed), 0);
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 0), 0);
		ck_assert_int_eq(zlfs_zdev_write(dev, d, 8 * B, zs), 0);
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_FINISH, 1), 0);
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_FINISH, 2), 0);
		ck_assert_int_eq(zlfs_zdev_powercut(dev), 0);
		ck_assert_int_eq(zlfs_zdev_revive(dev), 0);
		ck_assert_uint_eq(zrep(dev, 0).cond, ZLFS_ZC_EMPTY);
		expect_zero(dev, 0, zs);
		for (uint32_t i = 1; i <= 2; i++) {
			struct zlfs_zone z = zrep(dev, i);
			ck_assert_uint_eq(z.cond, ZLFS_ZC_FULL);
			ck_assert_uint_eq(z.wp, z.start + zs);
		}
		expect(dev, zs, d, 8 * B);
		free(d);
		zlfs_zdev_close(dev);
	}
}
END_TEST

START_TEST(test_powercut_after)
{
	uint8_t *d = pattern(8 * B, 19);
	struct zlfs_zdev_stats st;
	uint64_t pos;

	/* armed by call: the 3rd write from now cuts power instead of executing */
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct zlfs_zdev *dev = open_dev("mem:size=4M,zone_size=512K");
		ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 0), 0);
		ck_assert_int_eq(zlfs_zdev_powercut_arm(dev, 3, seed), 0);
		ck_assert_int_eq(zlfs_zdev_write(dev, d + B, B, B), 0);
		ck_assert_int_eq(zlfs_zdev_flush(dev), 0);             /* not a write */
		ck_assert_int_eq(zlfs_zdev_append(dev, d + 2 * B, B, 0, &pos), 0);
		ck_assert(!zlfs_zdev_is_dead(dev));
		ck_assert_int_eq(zlfs_zdev_write(dev, d + 3 * B, B, 3 * B), -EIO);
		ck_assert(zlfs_zdev_is_dead(dev));
		ck_assert_int_eq(zlfs_zdev_write(dev, d + 3 * B, B, 3 * B), -EIO);
		ck_assert_int_eq(zlfs_zdev_revive(dev), 0);
		struct zlfs_zone z = zrep(dev, 0);
		/* flushed 2 blocks; the append may or may not have survived; never the 3rd */
		ck_assert_uint_ge(z.wp, 2 * B);
		ck_assert_uint_le(z.wp, 3 * B);
		expect(dev, 0, d, z.wp);
		expect_zero(dev, z.wp, 4 * B - z.wp);
		zlfs_zdev_stats(dev, &st);
		ck_assert_uint_eq(st.writes, 4);   /* the one after the cut never executed */
		zlfs_zdev_close(dev);
	}
	/* armed by the spec */
	struct zlfs_zdev *dev = open_dev("mem:size=4M,zone_size=512K,conv_zones=1,"
					 "powercut_after=4,powercut_seed=7");
	const uint64_t zs = 512 << 10;
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zs), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + B, B, zs + B), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, 2 * B, 0), 0);
	ck_assert(!zlfs_zdev_is_dead(dev));
	ck_assert_int_eq(zlfs_zdev_write(dev, d + 2 * B, B, zs + 2 * B), -EIO);
	ck_assert(zlfs_zdev_is_dead(dev));
	ck_assert_int_eq(zlfs_zdev_revive(dev), 0);
	struct zlfs_zone z = zrep(dev, 1);
	ck_assert_uint_le(z.wp, zs + 2 * B);
	expect(dev, zs, d, z.wp - zs);
	zlfs_zdev_close(dev);
	/* "powercut" alone arms without a count: the cut is by call */
	dev = open_dev("mem:size=4M,zone_size=512K,powercut");
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(zlfs_zdev_write(dev, d + i * B, B, i * B), 0);
	ck_assert(!zlfs_zdev_is_dead(dev));
	ck_assert_int_eq(zlfs_zdev_powercut(dev), 0);
	ck_assert(zlfs_zdev_is_dead(dev));
	zlfs_zdev_close(dev);
	free(d);
}
END_TEST

/*
 * A cut that moves the wp of a zone filled by unflushed writes back leaves
 * it CLOSED, i.e. active.  The device must still respect its max_active
 * (zrules.h: open + closed <= max_active) after the cut.
 */
START_TEST(test_powercut_active_limit)
{
	const uint64_t zs = 256 << 10;
	uint8_t *d = pattern(zs, 20);

	for (uint64_t seed = 1; seed <= 8; seed++) {
		struct zlfs_zdev *dev = open_dev("mem:size=2M,zone_size=256K,max_open=2,max_active=2");
		ck_assert_int_eq(zlfs_zdev_powercut_arm(dev, 0, seed), 0);
		ck_assert_int_eq(zlfs_zdev_write(dev, d, zs, 0), 0);       /* zone 0 full */
		ck_assert_int_eq(zlfs_zdev_write(dev, d, B, zs), 0);       /* 1 and 2 open */
		ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 2 * zs), 0);
		ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 3 * zs), -ZLFS_ETOOMANYACT);
		ck_assert_int_eq(zlfs_zdev_powercut(dev), 0);
		ck_assert_int_eq(zlfs_zdev_revive(dev), 0);
		struct zlfs_zone zones[8];
		uint32_t nr = 8, active = 0;
		ck_assert_int_eq(zlfs_zdev_report(dev, 0, zones, &nr), 0);
		for (uint32_t i = 0; i < nr; i++)
			active += zones[i].cond == ZLFS_ZC_IMP_OPEN ||
				  zones[i].cond == ZLFS_ZC_EXP_OPEN || zones[i].cond == ZLFS_ZC_CLOSED;
		ck_assert_msg(active <= 2, "seed %llu: %u active zones after the cut (max 2); "
			      "zone 0 %s wp +%llu", (unsigned long long)seed, active,
			      zlfs_zone_cond_str(zones[0].cond),
			      (unsigned long long)(zones[0].wp - zones[0].start));
		zlfs_zdev_close(dev);
	}
	free(d);
}
END_TEST

/* ---- service model ------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Submit n one-block writes to zone zi at consecutive offsets from its
 * start, all at once, and wait.  Whatever the order of execution, write i
 * can only succeed with the wp at block i, so the successful writes are
 * exactly 0..k-1 and the zone holds their data and nothing else.  Returns
 * the number that failed (all with EUNALIGNED); *in_order is set if they
 * completed in submission order.
 */
static int write_round(struct zlfs_zdev *dev, uint32_t zi, int n, uint64_t seed, bool *in_order)
{
	const uint64_t start = zstart(dev, zi);
	struct abatch b;
	struct acmd *a = calloc((size_t)n, sizeof(*a));
	uint8_t *data = pattern((size_t)n * B, seed);
	int ok = 0;

	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, zi), 0);
	abatch_init(&b);
	for (int i = 0; i < n; i++) {
		a[i].iov[0] = (struct iovec){ data + (size_t)i * B, B };
		abatch_submit(dev, &b, &a[i], ZLFS_OP_WRITE, start + (uint64_t)i * B, 1);
	}
	abatch_wait(&b);
	*in_order = true;
	for (int i = 0; i < n; i++) {
		ck_assert_msg(a[i].cmd.result == 0 || a[i].cmd.result == -ZLFS_EUNALIGNED,
			      "write %d: %d", i, a[i].cmd.result);
		ok += a[i].cmd.result == 0;
		*in_order &= a[i].order == i;
	}
	for (int i = 0; i < n; i++)
		ck_assert_msg((a[i].cmd.result == 0) == (i < ok),
			      "write %d %s, but %d succeeded: not a prefix", i,
			      a[i].cmd.result ? "failed" : "succeeded", ok);
	struct zlfs_zone z = zrep(dev, zi);
	ck_assert_uint_eq(z.wp, start + (uint64_t)ok * B);
	ck_assert_uint_eq(z.cond, ok ? ZLFS_ZC_IMP_OPEN : ZLFS_ZC_EMPTY);
	expect(dev, start, data, (uint64_t)ok * B);
	expect_zero(dev, start + (uint64_t)ok * B, (uint64_t)(n - ok) * B);
	free(a);
	free(data);
	return n - ok;
}

START_TEST(test_svc_in_order)
{
	struct zlfs_zdev *dev = open_dev("mem:size=16M,zone_size=1M,qd=32,lat_us=50");
	struct zlfs_zdev_stats st;
	bool in_order;

	ck_assert_uint_eq(zlfs_zdev_geom(dev)->depth, 32);
	for (int r = 0; r < 20; r++) {
		ck_assert_int_eq(write_round(dev, (uint32_t)(r % 4), 32, 1000 + r, &in_order), 0);
		ck_assert(in_order);
	}
	zlfs_zdev_stats(dev, &st);
	ck_assert_uint_eq(st.unaligned, 0);
	ck_assert_uint_eq(st.requeues, 0);
	ck_assert_uint_eq(st.reordered, 0);
	ck_assert_uint_ge(st.writes, 20 * 32);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_svc_reorder)
{
	struct zlfs_zdev *dev = open_dev("mem:size=16M,zone_size=1M,qd=32,lat_us=50,reorder=0.3");
	struct zlfs_zdev_stats st;
	int failed = 0, rounds = 0;
	bool in_order;

	/* a requeue makes the next write execute before it: some must fail */
	for (; rounds < 20 && (rounds < 5 || !failed); rounds++)
		failed += write_round(dev, (uint32_t)(rounds % 4), 32, 2000 + rounds, &in_order);
	zlfs_zdev_stats(dev, &st);
	ck_assert_int_gt(failed, 0);
	ck_assert_uint_gt(st.requeues, 0);
	ck_assert_uint_eq(st.unaligned, (uint64_t)failed);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_svc_hibernate)
{
	struct zlfs_zdev_stats st;
	int failed = 0, rounds = 0;
	bool in_order;

	/*
	 * Commands wait 3 ms, so at least two 1 ms hibernation boundaries
	 * pass with all of a round's writes pending on the queue.
	 */
	struct zlfs_zdev *dev = open_dev("mem:size=16M,zone_size=1M,qd=32,lat_us=3000,"
					 "hibernate_ms=1");
	for (; rounds < 20 && (rounds < 3 || !failed); rounds++)
		failed += write_round(dev, (uint32_t)(rounds % 4), 32, 3000 + rounds, &in_order);
	zlfs_zdev_stats(dev, &st);
	ck_assert_int_gt(failed, 0);
	ck_assert_uint_gt(st.hibernations, 0);
	ck_assert_uint_gt(st.reordered, 0);
	ck_assert_uint_eq(st.requeues, 0);
	ck_assert_uint_eq(st.unaligned, (uint64_t)failed);
	zlfs_zdev_close(dev);

	/*
	 * The brief's settings: 50 us of service, a shuffle at each 1 ms
	 * boundary that finds commands pending.  Run rounds for at least
	 * 200 ms (at most 5 s) and until one has failed.
	 */
	dev = open_dev("mem:size=16M,zone_size=1M,qd=32,lat_us=50,hibernate_ms=1");
	failed = rounds = 0;
	uint64_t t0 = now_ns();
	for (; now_ns() - t0 < 5000000000ull && (now_ns() - t0 < 200000000ull || !failed); rounds++)
		failed += write_round(dev, (uint32_t)(rounds % 4), 32, 4000 + rounds, &in_order);
	zlfs_zdev_stats(dev, &st);
	ck_assert_int_gt(failed, 0);
	ck_assert_uint_gt(st.hibernations, 0);
	ck_assert_uint_eq(st.unaligned, (uint64_t)failed);
	ck_assert_uint_eq(st.requeues, 0);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_svc_bandwidth)
{
	/* 8 MiB over a 50 MiB/s link take at least 160 ms, whatever the queues */
	struct zlfs_zdev *dev = open_dev("mem:size=16M,zone_size=1M,queues=4,qd=8,mbps=50");
	uint32_t mib = 1u << 20;
	uint8_t *d = pattern(mib, 77), *r = malloc(mib);

	ck_assert_ptr_nonnull(r);
	uint64_t t0 = now_ns();
	for (uint32_t z = 0; z < 8; z++)
		ck_assert_int_eq(zlfs_zdev_write(dev, d, mib, (uint64_t)z * mib), 0);
	uint64_t el = now_ns() - t0;
	ck_assert_msg(el >= 152000000ull, "8 MiB at 50 MiB/s took only %llu us",
		      (unsigned long long)(el / 1000));
	for (uint32_t z = 0; z < 8; z++) {
		ck_assert_int_eq(zlfs_zdev_read(dev, r, mib, (uint64_t)z * mib), 0);
		ck_assert_mem_eq(r, d, mib);
	}
	free(d);
	free(r);
	zlfs_zdev_close(dev);
}
END_TEST

/* ---- idle ------------------------------------------------------------------------ */

static uint64_t cpu_us(void)
{
	struct rusage ru;

	ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000ull +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void idle_check(const char *spec)
{
	struct zlfs_zdev *dev = open_dev(spec);
	uint8_t *d = pattern(B, 21);

	/* let the workers run once */
	ck_assert_int_eq(zlfs_zdev_write(dev, d, B, 0), 0);
	ck_assert_int_eq(zlfs_zdev_read(dev, d, B, 0), 0);
	uint64_t c0 = cpu_us();
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	while (nanosleep(&ts, &ts) != 0)
		;
	uint64_t used = cpu_us() - c0;
	ck_assert_msg(used < 20000, "%s: %llu us of CPU while idle for 300 ms", spec,
		      (unsigned long long)used);
	free(d);
	zlfs_zdev_close(dev);
}

START_TEST(test_idle_cpu)
{
	idle_check("mem:size=16M,zone_size=1M,lat_us=100");
}
END_TEST

START_TEST(test_idle_cpu_hibernate)
{
	idle_check("mem:size=16M,zone_size=1M,lat_us=100,queues=4,hibernate_ms=1,reorder=0.1");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zemu");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_geometry_report);
	tcase_add_test(tc, test_read_past_wp_zeros);
	tcase_add_test(tc, test_append);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_conv_writes);
	tcase_add_test(tc, test_discard);
	tcase_add_test(tc, test_zone_capacity);
	tcase_add_test(tc, test_errors_distinct);
	tcase_add_test(tc, test_zone_mgmt);
	tcase_add_test(tc, test_fault_once);
	tcase_add_test(tc, test_fault_persistent);
	tcase_add_test(tc, test_fault_spec);
	tcase_add_test(tc, test_set_zone_cond);
	tcase_add_test(tc, test_stats);
	tcase_add_test(tc, test_powercut_seq);
	tcase_add_test(tc, test_powercut_conv);
	tcase_add_test(tc, test_powercut_conv_spanning);
	tcase_add_test(tc, test_powercut_dead_revive);
	tcase_add_test(tc, test_powercut_mgmt_durable);
	tcase_add_test(tc, test_powercut_after);
	tcase_add_test(tc, test_powercut_active_limit);
	tcase_add_test(tc, test_svc_in_order);
	tcase_add_test(tc, test_svc_reorder);
	tcase_add_test(tc, test_svc_hibernate);
	tcase_add_test(tc, test_svc_bandwidth);
	tcase_add_test(tc, test_idle_cpu);
	tcase_add_test(tc, test_idle_cpu_hibernate);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
