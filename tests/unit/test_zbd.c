/*
 * test_zbd.c - the block-device backend (fs/blk/dev_zbd.c).
 *
 * The device comes from $ZLFS_TEST_DEV.  A zoned one (the VM's ZNS
 * namespace or zoned null_blk) gets the zoned tests: geometry, report,
 * writes at and off the write pointer (the EIO the kernel returns must be
 * classified as unaligned), append emulation, finish/full, capacity,
 * open/close, reset of one zone and of all, concurrent io_uring writes.
 * Without $ZLFS_TEST_DEV the test builds a loop device over a scratch file
 * (root needed) and checks the plain backend: all zones conventional.
 * The sequential zones used are reset; the device's data is destroyed.
 * Both kinds: a read-only open (ZLFS_ZDEV_RDONLY) holds the device on an
 * O_RDONLY descriptor, reads what was written, refuses every write and
 * zone operation with -EROFS, flushes nothing, and (loop device) opens
 * while the device is set read-only (BLKROSET).
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "testutil.h"
#include "zlfs/zdev.h"

static char spec[512];
static char loopdev[64];
static struct zlfs_zdev *dev;
static const struct zlfs_zdev_geom *g;

static void *abuf(size_t len, uint64_t seed)
{
	void *p;
	ck_assert_int_eq(posix_memalign(&p, 4096, len), 0);
	tu_fill(p, len, seed);
	return p;
}

static void open_dev(void)
{
	int ret = zlfs_zdev_open(spec, &dev);
	if (ret)
		fprintf(stderr, "open %s: %s\n", spec, zlfs_zdev_errmsg());
	ck_assert_int_eq(ret, 0);
	g = zlfs_zdev_geom(dev);
}

static void close_dev(void)
{
	zlfs_zdev_close(dev);
	dev = NULL;
}

static struct zlfs_zone zone(uint32_t i)
{
	struct zlfs_zone z;
	uint32_t nr = 1;
	ck_assert_int_eq(zlfs_zdev_report(dev, i, &z, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	return z;
}

/* ---- zoned ---- */

START_TEST(test_geometry)
{
	ck_assert(g->zoned);
	ck_assert_uint_eq(g->kind, ZLFS_DEV_BLOCK);
	ck_assert_uint_gt(g->nr_zones - g->nr_conv, 3);
	ck_assert_uint_le(g->zone_cap, g->zone_size);
	ck_assert(g->lbs == 512 || g->lbs == 4096);
	struct zlfs_zone *zs = calloc(g->nr_zones, sizeof(*zs));
	uint32_t nr = g->nr_zones;
	ck_assert_int_eq(zlfs_zdev_report(dev, 0, zs, &nr), 0);
	ck_assert_uint_eq(nr, g->nr_zones);
	for (uint32_t i = 0; i < nr; i++) {
		ck_assert_uint_eq(zs[i].start, (uint64_t)i * g->zone_size);
		ck_assert_uint_eq(zs[i].len, g->zone_size);
		ck_assert_uint_eq(zs[i].type, i < g->nr_conv ? ZLFS_ZONE_CONV : ZLFS_ZONE_SWR);
	}
	free(zs);
	printf("zoned: %u zones of %llu (cap %llu), %u conventional, lbs %u, max open %u active %u\n",
	       g->nr_zones, (unsigned long long)g->zone_size, (unsigned long long)g->zone_cap,
	       g->nr_conv, g->lbs, g->max_open, g->max_active);
}
END_TEST

START_TEST(test_write_read_unaligned)
{
	uint32_t zi = g->nr_conv;
	struct zlfs_zone z;
	uint8_t *w = abuf(65536, 1), *r = abuf(65536, 2);

	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, zi), 0);
	z = zone(zi);
	ck_assert_uint_eq(z.cond, ZLFS_ZC_EMPTY);
	ck_assert_uint_eq(z.wp, z.start);
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 65536, z.start), 0);
	z = zone(zi);
	ck_assert_uint_eq(z.wp, z.start + 65536);
	ck_assert(z.cond == ZLFS_ZC_IMP_OPEN || z.cond == ZLFS_ZC_CLOSED);
	ck_assert_int_eq(zlfs_zdev_read(dev, r, 65536, z.start), 0);
	ck_assert_mem_eq(w, r, 65536);
	/* the kernel says EIO; the backend must say why */
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 4096, z.start), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 4096, z.start + 65536 + 4096), -ZLFS_EUNALIGNED);
	ck_assert_uint_eq(zone(zi).wp, z.start + 65536);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	free(w);
	free(r);
}
END_TEST

START_TEST(test_append_finish_full)
{
	uint32_t zi = g->nr_conv + 1;
	uint8_t *w = abuf(8192, 3), *r = abuf(8192, 4);
	uint64_t pos;

	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, zi), 0);
	uint64_t start = zone(zi).start;
	ck_assert_int_eq(zlfs_zdev_append(dev, w, 8192, start, &pos), 0);
	ck_assert_uint_eq(pos, start);
	ck_assert_int_eq(zlfs_zdev_append(dev, w, 4096, start + 12345 * 0, &pos), 0);
	ck_assert_uint_eq(pos, start + 8192);
	ck_assert_int_eq(zlfs_zdev_read(dev, r, 8192, start), 0);
	ck_assert_mem_eq(w, r, 8192);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_FINISH, zi), 0);
	struct zlfs_zone z = zone(zi);
	ck_assert_uint_eq(z.cond, ZLFS_ZC_FULL);
	ck_assert_int_eq(zlfs_zdev_append(dev, w, 4096, start, &pos), -ZLFS_EZONEFULL);
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 4096, start + 12288), -ZLFS_EZONEFULL);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, zi), 0);
	ck_assert_uint_eq(zone(zi).cond, ZLFS_ZC_EMPTY);
	free(w);
	free(r);
}
END_TEST

START_TEST(test_capacity)
{
	uint32_t zi = g->nr_conv + 2;
	const uint64_t chunk = 1 << 20;
	uint8_t *w = abuf(chunk, 5);

	if (g->zone_cap == g->zone_size)
		return;     /* capacity equals size: the kernel splits at the zone end instead */
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, zi), 0);
	uint64_t start = zone(zi).start, o;
	for (o = 0; o + chunk <= g->zone_cap - 4096; o += chunk)
		ck_assert_int_eq(zlfs_zdev_write(dev, w, chunk, start + o), 0);
	if (o < g->zone_cap - 4096)
		ck_assert_int_eq(zlfs_zdev_write(dev, w, g->zone_cap - 4096 - o, start + o), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 8192, start + g->zone_cap - 4096), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 4096, start + g->zone_cap - 4096), 0);
	ck_assert_uint_eq(zone(zi).cond, ZLFS_ZC_FULL);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, zi), 0);
	free(w);
}
END_TEST

START_TEST(test_open_close_reset_all)
{
	uint32_t zi = g->nr_conv + 3;
	uint8_t *w = abuf(4096, 6);

	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, zi), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, zi), 0);
	ck_assert_uint_eq(zone(zi).cond, ZLFS_ZC_EXP_OPEN);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_CLOSE, zi), 0);
	/* ZBC says EMPTY, QEMU's ZNS namespace says CLOSED: both are devices */
	uint8_t c = zone(zi).cond;
	ck_assert(c == ZLFS_ZC_EMPTY || c == ZLFS_ZC_CLOSED);
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 4096, zone(zi).start), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_CLOSE, zi), 0);
	ck_assert_uint_eq(zone(zi).cond, ZLFS_ZC_CLOSED);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	for (uint32_t i = g->nr_conv; i < g->nr_zones; i++)
		ck_assert_uint_eq(zone(i).cond, ZLFS_ZC_EMPTY);
	free(w);
}
END_TEST

struct done_count {
	int n, errors;
};

static void count_done(struct zlfs_cmd *c)
{
	struct done_count *dc = c->priv;
	__atomic_add_fetch(&dc->n, 1, __ATOMIC_SEQ_CST);
	if (c->result)
		__atomic_add_fetch(&dc->errors, 1, __ATOMIC_SEQ_CST);
}

START_TEST(test_uring_many_zones)
{
	uint32_t nz = g->nr_zones - g->nr_conv;
	if (nz > 16)
		nz = 16;
	if (g->max_open && nz > g->max_open)
		nz = g->max_open;
	struct zlfs_cmd *cmds = calloc(nz, sizeof(*cmds));
	struct iovec *iov = calloc(nz, sizeof(*iov));
	struct done_count dc = { 0, 0 };
	uint8_t *w = abuf((size_t)nz * 16384, 7), *r = abuf(16384, 8);

	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	for (uint32_t i = 0; i < nz; i++) {
		iov[i].iov_base = w + (size_t)i * 16384;
		iov[i].iov_len = 16384;
		cmds[i].op = ZLFS_OP_WRITE;
		cmds[i].off = (uint64_t)(g->nr_conv + i) * g->zone_size;
		cmds[i].iov = &iov[i];
		cmds[i].iovcnt = 1;
		cmds[i].done = count_done;
		cmds[i].priv = &dc;
		ck_assert_int_eq(zlfs_zdev_submit(dev, &cmds[i]), 0);
	}
	for (int t = 0; t < 10000 && __atomic_load_n(&dc.n, __ATOMIC_SEQ_CST) < (int)nz; t++)
		usleep(1000);
	ck_assert_int_eq(dc.n, nz);
	ck_assert_int_eq(dc.errors, 0);
	for (uint32_t i = 0; i < nz; i++) {
		ck_assert_int_eq(zlfs_zdev_read(dev, r, 16384, cmds[i].off), 0);
		ck_assert_mem_eq(r, w + (size_t)i * 16384, 16384);
		ck_assert_uint_eq(zone(g->nr_conv + i).wp, cmds[i].off + 16384);
	}
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	free(cmds);
	free(iov);
	free(w);
	free(r);
}
END_TEST

START_TEST(test_exclusive)
{
	struct zlfs_zdev *d2;
	ck_assert_int_eq(zlfs_zdev_open(spec, &d2), -EBUSY);
}
END_TEST

/* ---- read-only, both kinds ---- */

/* The device's path: spec up to its options. */
static void dev_path(char *out, size_t len)
{
	snprintf(out, len, "%.*s", (int)strcspn(spec, "?"), spec);
}

/* Does this process hold path, and only on read-only descriptors? */
static bool held_rdonly(const char *path)
{
	char real[PATH_MAX], link[PATH_MAX], p[300];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int held = 0, rw = 0;

	ck_assert_ptr_nonnull(realpath(path, real));
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(p, link, sizeof(link) - 1);
		if (e->d_name[0] == '.' || n < 0)
			continue;
		link[n] = 0;
		if (strcmp(link, real))
			continue;
		snprintf(p, sizeof(p), "/proc/self/fdinfo/%s", e->d_name);
		FILE *f = fopen(p, "r");
		char line[200];
		unsigned int flags = O_RDWR;
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "flags: %o", &flags) == 1)
				break;
		if (f)
			fclose(f);
		held++;
		rw += (flags & O_ACCMODE) != O_RDONLY;
	}
	closedir(d);
	return held && !rw;
}

START_TEST(test_rdonly)
{
	uint8_t *w = abuf(65536, 11), *r = abuf(65536, 12);
	uint64_t off = 0, pos;
	char path[512];
	struct zlfs_zdev *ro;

	/* something to read back: the first sequential zone's start, or block 0 */
	if (g->zoned) {
		off = (uint64_t)g->nr_conv * g->zone_size;
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, g->nr_conv), 0);
	}
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 65536, off), 0);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	const struct zlfs_zdev_geom geo = *g;     /* g goes with dev */
	close_dev();
	dev_path(path, sizeof(path));

	/* a loop device set read-only: only a read-only open is asked for */
	int bfd = -1, one = 1, zero = 0;
	if (loopdev[0]) {
		bfd = open(path, O_RDONLY);
		ck_assert_int_ge(bfd, 0);
		ck_assert_int_eq(ioctl(bfd, BLKROSET, &one), 0);
	}
	int ret = zlfs_zdev_open_flags(spec, ZLFS_ZDEV_RDONLY, &ro);
	if (ret)
		fprintf(stderr, "open %s read-only: %s\n", spec, zlfs_zdev_errmsg());
	bool held_ro = !ret && held_rdonly(path);
	if (bfd >= 0) {
		/* set back before any assertion can end the test */
		ck_assert_int_eq(ioctl(bfd, BLKROSET, &zero), 0);
		close(bfd);
	}
	ck_assert_int_eq(ret, 0);
	ck_assert(held_ro);
	ck_assert(zlfs_zdev_geom(ro)->rdonly);
	ck_assert_int_eq(zlfs_zdev_read(ro, r, 65536, off), 0);
	ck_assert_mem_eq(w, r, 65536);
	ck_assert_int_eq(zlfs_zdev_write(ro, w, 4096, off + 65536), -EROFS);
	ck_assert_int_eq(zlfs_zdev_append(ro, w, 4096, off, &pos), -EROFS);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(ro, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), -EROFS);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(ro, ZLFS_ZM_FINISH, 0), -EROFS);
	ck_assert_int_eq(zlfs_zdev_discard(ro, 0, 4096), -EROFS);
	ck_assert_int_eq(zlfs_zdev_flush(ro), 0);
	if (geo.zoned) {
		/* the zone is as the writer left it: nothing reset or finished */
		struct zlfs_zone z;
		uint32_t nr = 1;
		ck_assert_int_eq(zlfs_zdev_report(ro, geo.nr_conv, &z, &nr), 0);
		ck_assert_uint_eq(z.wp, off + 65536);
	}
	zlfs_zdev_close(ro);
	open_dev();     /* for the fixture's close */
	free(w);
	free(r);
}
END_TEST

/* ---- plain (loop device) ---- */

START_TEST(test_plain)
{
	uint8_t *w = abuf(65536, 9), *r = abuf(65536, 10);
	uint64_t pos;

	ck_assert(!g->zoned);
	ck_assert_uint_eq(g->kind, ZLFS_DEV_PLAIN);
	ck_assert_uint_eq(g->nr_conv, g->nr_zones);
	ck_assert_uint_eq(g->zone_size, 1 << 20);
	struct zlfs_zone z = zone(1);
	ck_assert_uint_eq(z.type, ZLFS_ZONE_CONV);
	ck_assert_uint_eq(z.cond, ZLFS_ZC_NOT_WP);
	/* anywhere, in any order, across zone boundaries */
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 65536, (1 << 20) - 32768), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 4096, 0), 0);
	ck_assert_int_eq(zlfs_zdev_read(dev, r, 65536, (1 << 20) - 32768), 0);
	ck_assert_mem_eq(w, r, 65536);
	ck_assert_int_eq(zlfs_zdev_append(dev, w, 4096, 0, &pos), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 1), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	free(w);
	free(r);
}
END_TEST

static void teardown_loop(void)
{
	if (loopdev[0]) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "losetup -d %s", loopdev);
		if (system(cmd))
			fprintf(stderr, "could not detach %s\n", loopdev);
	}
}

int main(void)
{
	const char *env = getenv("ZLFS_TEST_DEV");
	Suite *s = suite_create("zbd");
	TCase *tc = tcase_create("core");

	if (env && *env) {
		snprintf(spec, sizeof(spec), "%s", env);
	} else {
		if (geteuid() != 0) {
			fprintf(stderr, "test_zbd: needs root for a loop device\n");
			return 77;
		}
		char *img = tu_path("loop.img");
		char cmd[700];
		int fd = open(img, O_CREAT | O_RDWR, 0600);
		if (fd < 0 || ftruncate(fd, 16 << 20) < 0) {
			perror(img);
			return 1;
		}
		close(fd);
		snprintf(cmd, sizeof(cmd), "losetup -f --show %s", img);
		FILE *p = popen(cmd, "r");
		if (!p || !fgets(loopdev, sizeof(loopdev), p)) {
			fprintf(stderr, "test_zbd: losetup failed\n");
			return 1;
		}
		pclose(p);
		loopdev[strcspn(loopdev, "\n")] = '\0';
		snprintf(spec, sizeof(spec), "%s?zone_size=1M", loopdev);
		free(img);
	}
	/* probe the kind once, outside the forked test cases */
	int ret = zlfs_zdev_open(spec, &dev);
	if (ret) {
		fprintf(stderr, "test_zbd: open %s: %s\n", spec, zlfs_zdev_errmsg());
		teardown_loop();
		return 1;
	}
	bool zoned = zlfs_zdev_geom(dev)->zoned;
	zlfs_zdev_close(dev);
	tcase_add_checked_fixture(tc, open_dev, close_dev);
	tcase_set_timeout(tc, 120);
	if (zoned) {
		tcase_add_test(tc, test_geometry);
		tcase_add_test(tc, test_write_read_unaligned);
		tcase_add_test(tc, test_append_finish_full);
		tcase_add_test(tc, test_capacity);
		tcase_add_test(tc, test_open_close_reset_all);
		tcase_add_test(tc, test_uring_many_zones);
	} else {
		tcase_add_test(tc, test_plain);
	}
	tcase_add_test(tc, test_exclusive);
	tcase_add_test(tc, test_rdonly);
	suite_add_tcase(s, tc);
	int rc = tu_run(s);
	teardown_loop();
	return rc;
}
