/*
 * test_zopts.c - device spec options and size parsing (fs/blk/zopts.c, zdev.c).
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zlfs/zdev.h"

START_TEST(test_sizes)
{
	uint64_t v;

	ck_assert_int_eq(zlfs_parse_size("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(zlfs_parse_size("4K", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(zlfs_parse_size("64M", &v), 0);
	ck_assert_uint_eq(v, 64ull << 20);
	ck_assert_int_eq(zlfs_parse_size("2GiB", &v), 0);
	ck_assert_uint_eq(v, 2ull << 30);
	ck_assert_int_eq(zlfs_parse_size("1t", &v), 0);
	ck_assert_uint_eq(v, 1ull << 40);
	ck_assert_int_eq(zlfs_parse_size("", &v), -EINVAL);
	ck_assert_int_eq(zlfs_parse_size("-1", &v), -EINVAL);
	ck_assert_int_eq(zlfs_parse_size("12Q", &v), -EINVAL);
	ck_assert_int_eq(zlfs_parse_size("99999999999999999999", &v), -EINVAL);
	ck_assert_int_eq(zlfs_parse_size("100000000000T", &v), -EINVAL);
}
END_TEST

START_TEST(test_mem_spec)
{
	struct zlfs_zdev *dev;
	const struct zlfs_zdev_geom *g;

	ck_assert_int_eq(zlfs_zdev_open("mem:size=256M,zone_size=16M,zone_capacity=12M,conv_zones=2,"
					"max_open=3,max_active=5,queues=2,qd=8,lat_us=5", &dev), 0);
	g = zlfs_zdev_geom(dev);
	ck_assert_uint_eq(g->size, 256ull << 20);
	ck_assert_uint_eq(g->zone_size, 16ull << 20);
	ck_assert_uint_eq(g->zone_cap, 12ull << 20);
	ck_assert_uint_eq(g->nr_zones, 16);
	ck_assert_uint_eq(g->nr_conv, 2);
	ck_assert_uint_eq(g->max_open, 3);
	ck_assert_uint_eq(g->max_active, 5);
	ck_assert_uint_eq(g->depth, 16);
	ck_assert(g->zoned);
	ck_assert(g->no_zwl);
	ck_assert_uint_eq(g->kind, ZLFS_DEV_MEM);
	ck_assert_str_eq(zlfs_zdev_spec(dev), "mem:size=256M,zone_size=16M,zone_capacity=12M,"
			 "conv_zones=2,max_open=3,max_active=5,queues=2,qd=8,lat_us=5");
	zlfs_zdev_close(dev);
	ck_assert_int_eq(zlfs_zdev_open("mem:size=64M,zone_size=16M,nozwl=0", &dev), 0);
	ck_assert(!zlfs_zdev_geom(dev)->no_zwl);
	zlfs_zdev_close(dev);
}
END_TEST

START_TEST(test_bad_specs)
{
	struct zlfs_zdev *dev;

	ck_assert_int_eq(zlfs_zdev_open("mem:size=64M,zone_size=16M,bogus=1", &dev), -EINVAL);
	ck_assert_ptr_nonnull(strstr(zlfs_zdev_errmsg(), "bogus"));
	ck_assert_int_eq(zlfs_zdev_open("mem:size=64M,zone_size=3M", &dev), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_open("mem:size=65M,zone_size=16M", &dev), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_open("mem:size=64M,zone_size=16M,zone_capacity=20M", &dev), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_open("mem:size=64M,zone_size=16M,conv_zones=5", &dev), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_open("mem:size=64M,zone_size=16M,reorder=2", &dev), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_open("mem:size=64M,zone_size=16M,qd=0", &dev), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_open("mem:size=64M,zone_size=16M,lat_us=abc", &dev), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_open("", &dev), -EINVAL);
	ck_assert_int_eq(zlfs_zdev_open("/nonexistent/zlfs/image", &dev), -ENOENT);
	ck_assert_int_eq(zlfs_zdev_open("/dev/null", &dev), -ENODEV);
}
END_TEST

START_TEST(test_strerror)
{
	ck_assert_ptr_nonnull(strstr(zlfs_zdev_strerror(-ZLFS_EUNALIGNED), "write pointer"));
	ck_assert_ptr_nonnull(strstr(zlfs_zdev_strerror(-ZLFS_ETOOMANYOPEN), "open zones"));
	ck_assert_ptr_nonnull(strstr(zlfs_zdev_strerror(-ZLFS_ETOOMANYACT), "active zones"));
	ck_assert_str_eq(zlfs_zone_cond_str(ZLFS_ZC_IMP_OPEN), "imp-open");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zopts");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_mem_spec);
	tcase_add_test(tc, test_bad_specs);
	tcase_add_test(tc, test_strerror);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
