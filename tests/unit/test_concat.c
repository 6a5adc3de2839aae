/*
 * test_concat.c - several devices as one (fs/blk/concat.c): geometry,
 * routing of reads, writes, appends, flushes and zone management to the
 * right member at the right offset (and of zlfs_zdev_read_fd's file), the refusals (a command spanning two
 * members, conventional zones after sequential ones, unlike zones), and
 * that a member without zones takes the zoned member's zone size (with
 * none zoned, the smallest of the members': a large file alone gets larger
 * zones).  Read-
 * only (ZLFS_ZDEV_RDONLY): every member is opened so (the members say it,
 * a read-write open of each is kept out), the whole refuses writes and
 * zone management, reads what was written, and changes no member's bytes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zlfs/zdev.h"

#define MIB (1ull << 20)
#define B 4096u

/* A plain file (a device without zones) of size bytes. */
static char *plain_file(const char *name, uint64_t size)
{
	char *p = tu_path(name);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
	return p;
}

/* A zoned image with no conventional zones (a ZNS namespace). */
static char *zns_image(const char *name, uint64_t size, uint64_t zs, uint64_t cap)
{
	char *p = tu_path(name);
	struct zlfs_image_params ip = { .size = size, .zone_size = zs, .zone_cap = cap,
					.max_open = 4, .max_active = 6, .lbs = 4096 };

	ck_assert_int_eq(zlfs_image_create(p, &ip, true), 0);
	return p;
}

START_TEST(test_geometry)
{
	char *meta = plain_file("g-meta", 20 * MIB + 12345);  /* not a zone multiple */
	char *zns = zns_image("g-zns", 64 * MIB, 8 * MIB, 6 * MIB);
	const char *specs[] = { meta, zns };
	struct zlfs_zdev *dev;
	struct zlfs_zdev_member m[4];

	ck_assert_int_eq(zlfs_zdev_open_multi(specs, 2, &dev), 0);
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(dev);
	ck_assert_uint_eq(g->zone_size, 8 * MIB);        /* the plain file took it */
	ck_assert_uint_eq(g->nr_zones, 2 + 8);           /* 20 MiB -> 2 whole zones */
	ck_assert_uint_eq(g->nr_conv, 2);
	ck_assert_uint_eq(g->size, 80 * MIB);
	ck_assert_uint_eq(g->zone_cap, 6 * MIB);
	ck_assert(g->zoned);
	ck_assert_uint_eq(g->max_open, 4);
	ck_assert_uint_eq(g->max_active, 6);
	ck_assert_int_eq(zlfs_zdev_members(dev, m, 4), 2);
	ck_assert_uint_eq(m[0].start, 0);
	ck_assert_uint_eq(m[0].size, 16 * MIB);
	ck_assert_uint_eq(m[1].start, 16 * MIB);
	ck_assert_uint_eq(m[1].size, 64 * MIB);

	struct zlfs_zone z[16];
	uint32_t nr = 16;
	ck_assert_int_eq(zlfs_zdev_report(dev, 0, z, &nr), 0);
	ck_assert_uint_eq(nr, 10);
	for (uint32_t i = 0; i < nr; i++) {
		ck_assert_uint_eq(z[i].start, i * 8 * MIB);
		ck_assert_uint_eq(z[i].type, i < 2 ? ZLFS_ZONE_CONV : ZLFS_ZONE_SWR);
		if (i >= 2) {
			ck_assert_uint_eq(z[i].wp, z[i].start);
			ck_assert_uint_eq(z[i].cap, 6 * MIB);
		}
	}
	/* a report starting inside the second member */
	nr = 3;
	ck_assert_int_eq(zlfs_zdev_report(dev, 4, z, &nr), 0);
	ck_assert_uint_eq(nr, 3);
	ck_assert_uint_eq(z[0].start, 32 * MIB);
	zlfs_zdev_close(dev);
	free(meta);
	free(zns);
}
END_TEST

/*
 * Members all without zones: each alone may be given larger zones (a
 * large file), together they take the smallest zone size of theirs, or
 * the one a member was given (zone_size=, a mem: device's own).
 */
START_TEST(test_plain_members)
{
	char *meta = plain_file("p-meta", 64 * MIB);
	char *big = plain_file("p-big", 200ull << 30);
	const char *specs[] = { meta, big };
	struct zlfs_zdev *dev;

	ck_assert_int_eq(zlfs_zdev_open(big, &dev), 0);
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->zone_size, 4 * MIB);
	zlfs_zdev_close(dev);
	ck_assert_int_eq(zlfs_zdev_open_multi(specs, 2, &dev), 0);
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(dev);
	ck_assert(!g->zoned);
	ck_assert_uint_eq(g->zone_size, 2 * MIB);
	ck_assert_uint_eq(g->nr_zones, 32 + 102400);
	ck_assert_uint_eq(g->nr_conv, g->nr_zones);
	ck_assert_uint_eq(g->size, (64 * MIB) + (200ull << 30));
	zlfs_zdev_close(dev);

	/* a zone size the user gave decides, and is never replaced */
	char *big4 = NULL, *meta8 = NULL;
	ck_assert_int_gt(asprintf(&big4, "%s?zone_size=4M", big), 0);
	ck_assert_int_gt(asprintf(&meta8, "%s?zone_size=8M", meta), 0);
	const char *given[] = { meta, big4 };
	ck_assert_int_eq(zlfs_zdev_open_multi(given, 2, &dev), 0);
	g = zlfs_zdev_geom(dev);
	ck_assert_uint_eq(g->zone_size, 4 * MIB);
	ck_assert_uint_eq(g->nr_zones, 16 + 51200);
	zlfs_zdev_close(dev);
	const char *both[] = { meta8, big4 };
	ck_assert_int_eq(zlfs_zdev_open_multi(both, 2, &dev), -EINVAL);
	/* a memory device keeps its zones: all conventional stays without zones */
	const char *withmem[] = { "mem:size=64M,zone_size=16M,conv_zones=4", big };
	ck_assert_int_eq(zlfs_zdev_open_multi(withmem, 2, &dev), 0);
	g = zlfs_zdev_geom(dev);
	ck_assert(!g->zoned);
	ck_assert_uint_eq(g->zone_size, 16 * MIB);
	ck_assert_uint_eq(g->nr_zones, 4 + 12800);
	ck_assert_uint_eq(g->nr_conv, g->nr_zones);
	zlfs_zdev_close(dev);
	/* zone_size=0 is not "choose": it is refused */
	char *zero = NULL;
	ck_assert_int_gt(asprintf(&zero, "%s?zone_size=0", meta), 0);
	ck_assert_int_eq(zlfs_zdev_open(zero, &dev), -EINVAL);
	free(zero);
	free(big4);
	free(meta8);
	unlink(meta);
	unlink(big);
	free(meta);
	free(big);
}
END_TEST

START_TEST(test_io_routing)
{
	char *meta = plain_file("r-meta", 16 * MIB);
	char *zns = zns_image("r-zns", 32 * MIB, 4 * MIB, 4 * MIB);
	const char *specs[] = { meta, zns };
	struct zlfs_zdev *dev;
	uint8_t *w = malloc(2 * B), *r = malloc(2 * B);
	uint64_t pos;

	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(zlfs_zdev_open_multi(specs, 2, &dev), 0);
	/* conventional member: anywhere; the sequential one: at the write pointer */
	tu_fill(w, 2 * B, 1);
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 2 * B, 5 * B), 0);
	uint64_t z5 = 16 * MIB + 5 * 4 * MIB;    /* zone 9: the second member's zone 5 */
	ck_assert_int_eq(zlfs_zdev_write(dev, w, B, z5 + B), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(zlfs_zdev_write(dev, w, 2 * B, z5), 0);
	ck_assert_int_eq(zlfs_zdev_append(dev, w, B, z5, &pos), 0);
	ck_assert_uint_eq(pos, z5 + 2 * B);      /* in the combined device's numbers */
	ck_assert_int_eq(zlfs_zdev_read(dev, r, 2 * B, z5), 0);
	ck_assert_mem_eq(r, w, 2 * B);
	ck_assert_int_eq(zlfs_zdev_read(dev, r, 2 * B, 5 * B), 0);
	ck_assert_mem_eq(r, w, 2 * B);
	/* across the members' boundary: refused, as a write across zones */
	ck_assert_int_eq(zlfs_zdev_read(dev, r, 2 * B, 16 * MIB - B), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	/* the file behind a read: the member's, at the member's offset; one member only */
	int fd0 = -1, fd1 = -1;
	uint64_t p0, p1;
	ck_assert_int_eq(zlfs_zdev_read_fd(dev, 5 * B, 2 * B, &fd0, &p0), 0);
	ck_assert_uint_eq(p0, 5 * B);
	ck_assert_int_eq(pread(fd0, r, 2 * B, (off_t)p0), 2 * B);
	ck_assert_mem_eq(r, w, 2 * B);
	ck_assert_int_eq(zlfs_zdev_read_fd(dev, z5, 2 * B, &fd1, &p1), 0);
	ck_assert_uint_eq(p1, z5 - 16 * MIB);
	ck_assert_int_ne(fd0, fd1);
	ck_assert_int_eq(pread(fd1, r, 2 * B, (off_t)p1), 2 * B);
	ck_assert_mem_eq(r, w, 2 * B);
	ck_assert_int_eq(zlfs_zdev_read_fd(dev, 16 * MIB - B, 2 * B, &fd0, &p0), -EOPNOTSUPP);
	ck_assert_int_eq(zlfs_zdev_read_fd(dev, z5, 4 * B, &fd1, &p1), -EOPNOTSUPP);  /* past the wp */

	struct zlfs_zone z;
	uint32_t nr = 1;
	ck_assert_int_eq(zlfs_zdev_report(dev, 9, &z, &nr), 0);
	ck_assert_uint_eq(z.wp, z5 + 3 * B);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 9), 0);
	nr = 1;
	ck_assert_int_eq(zlfs_zdev_report(dev, 9, &z, &nr), 0);
	ck_assert_uint_eq(z.wp, z5);
	ck_assert_uint_eq(z.cond, ZLFS_ZC_EMPTY);
	/* reset all: the sequential zones, the conventional data stays */
	ck_assert_int_eq(zlfs_zdev_write(dev, w, B, 16 * MIB), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	nr = 1;
	ck_assert_int_eq(zlfs_zdev_report(dev, 4, &z, &nr), 0);
	ck_assert_uint_eq(z.wp, z.start);
	ck_assert_int_eq(zlfs_zdev_read(dev, r, 2 * B, 5 * B), 0);
	ck_assert_mem_eq(r, w, 2 * B);
	zlfs_zdev_close(dev);

	/* the data is where the members keep it: reopen the zoned one alone */
	ck_assert_int_eq(zlfs_zdev_open(meta, &dev), 0);
	ck_assert_int_eq(zlfs_zdev_read(dev, r, 2 * B, 5 * B), 0);
	ck_assert_mem_eq(r, w, 2 * B);
	zlfs_zdev_close(dev);
	free(w);
	free(r);
	free(meta);
	free(zns);
}
END_TEST

START_TEST(test_refusals)
{
	char *meta = plain_file("x-meta", 16 * MIB);
	char *zns = zns_image("x-zns", 32 * MIB, 4 * MIB, 4 * MIB);
	char *zns2 = zns_image("x-zns2", 32 * MIB, 8 * MIB, 8 * MIB);
	struct zlfs_zdev *dev;

	/* conventional zones after sequential ones */
	const char *bad_order[] = { zns, meta };
	ck_assert_int_eq(zlfs_zdev_open_multi(bad_order, 2, &dev), -EINVAL);
	ck_assert_ptr_nonnull(strstr(zlfs_zdev_errmsg(), "conventional"));
	/* zoned members with unlike zones */
	const char *unlike[] = { meta, zns, zns2 };
	ck_assert_int_eq(zlfs_zdev_open_multi(unlike, 3, &dev), -EINVAL);
	/* every member was closed again: each opens alone now (images are locked) */
	ck_assert_int_eq(zlfs_zdev_open(zns, &dev), 0);
	zlfs_zdev_close(dev);
	ck_assert_int_eq(zlfs_zdev_open(meta, &dev), 0);
	zlfs_zdev_close(dev);
	/* a member that does not exist */
	const char *missing[] = { meta, "/nonexistent/zns.img" };
	ck_assert_int_lt(zlfs_zdev_open_multi(missing, 2, &dev), 0);
	ck_assert_int_eq(zlfs_zdev_open(meta, &dev), 0);
	zlfs_zdev_close(dev);
	free(meta);
	free(zns);
	free(zns2);
}
END_TEST

/* A file's bytes, FNV-1a: enough to see that nothing was written. */
static uint64_t file_hash(const char *path)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint8_t buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ buf[i]) * 0x100000001b3ull;
	close(fd);
	return h;
}

START_TEST(test_rdonly)
{
	char *meta = plain_file("r-meta", 16 * MIB);
	char *zns = zns_image("r-zns", 32 * MIB, 4 * MIB, 4 * MIB);
	char zst[600];
	const char *specs[] = { meta, zns };
	struct zlfs_zdev *dev, *one;
	struct zlfs_zdev_member m[4];
	uint8_t w[B], r[B];
	uint64_t pos;

	snprintf(zst, sizeof(zst), "%s.zst", zns);
	ck_assert_int_eq(zlfs_zdev_open_multi(specs, 2, &dev), 0);
	memset(w, 0x5a, sizeof(w));
	ck_assert_int_eq(zlfs_zdev_write(dev, w, B, 4 * MIB), 0);           /* meta */
	ck_assert_int_eq(zlfs_zdev_append(dev, w, B, 16 * MIB + 4 * MIB, &pos), 0);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	zlfs_zdev_close(dev);
	uint64_t hm = file_hash(meta), hz = file_hash(zns), hs = file_hash(zst);

	ck_assert_int_eq(zlfs_zdev_open_multi_flags(specs, 2, ZLFS_ZDEV_RDONLY, &dev), 0);
	ck_assert(zlfs_zdev_geom(dev)->rdonly);
	ck_assert_int_eq(zlfs_zdev_members(dev, m, 4), 2);
	ck_assert(zlfs_zdev_geom(m[0].dev)->rdonly && zlfs_zdev_geom(m[1].dev)->rdonly);
	ck_assert_int_eq(zlfs_zdev_read(dev, r, B, 4 * MIB), 0);
	ck_assert_mem_eq(r, w, B);
	ck_assert_int_eq(zlfs_zdev_read(dev, r, B, pos), 0);
	ck_assert_mem_eq(r, w, B);
	ck_assert_int_eq(zlfs_zdev_write(dev, w, B, 0), -EROFS);
	ck_assert_int_eq(zlfs_zdev_append(dev, w, B, 16 * MIB, &pos), -EROFS);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), -EROFS);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	/* each member is held shared: a writer is kept out of both */
	ck_assert_int_eq(zlfs_zdev_open(meta, &one), -EBUSY);
	ck_assert_int_eq(zlfs_zdev_open(zns, &one), -EBUSY);
	zlfs_zdev_close(dev);
	ck_assert_uint_eq(file_hash(meta), hm);
	ck_assert_uint_eq(file_hash(zns), hz);
	ck_assert_uint_eq(file_hash(zst), hs);
	free(meta);
	free(zns);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("concat");
	TCase *tc = tcase_create("concat");

	tcase_add_test(tc, test_geometry);
	tcase_add_test(tc, test_plain_members);
	tcase_add_test(tc, test_io_routing);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_rdonly);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
