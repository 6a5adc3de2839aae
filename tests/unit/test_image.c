/*
 * test_image.c - emulated zoned images (fs/blk/zemu_image.c and the image
 * side of fs/blk/zemu.c): zlfs_image_create, then zlfs_zdev_open(PATH).
 *
 * Covers:
 *   - geometry comes from PATH.zst; create validates its parameters,
 *     refuses an existing image without force (-EEXIST) and an image in
 *     use (-EBUSY), and force starts over with zeros;
 *   - open refuses a damaged zone state (-EINVAL, -EUCLEAN), a short image and unknown options; a regular file without
 *     zone state is a device without zones (data at its own offsets,
 *     zone_size and service model from the options, one owner);
 *   - data and write pointers persist across close/reopen; open zones
 *     come back CLOSED (or EMPTY), full, read-only and offline zones stay so;
 *   - reset punches the data: reads give zeros, through the device and in
 *     the raw file (pread);
 *   - write-behind: 8 MiB landed in a zone (or the zone full) starts the
 *     host's write-back, a reset starts over, writebehind=0 and power-cut
 *     mode start none, the data stays intact;
 *   - a plain file larger than 65,536 zones of 2 MiB is given larger
 *     zones (only while its size stays a multiple; zone_size overrides);
 *   - a second open of an image in use fails with -EBUSY (flock);
 *   - the image file offered for reads (zlfs_zdev_read_fd) only where it
 *     holds what a read gives, and only with nothing else to do on a read;
 *   - the inline io_uring path: many concurrent asynchronous writes to
 *     different zones from several threads, completions on another thread;
 *     writes whose submitting thread exits at once still succeed;
 *   - service models on an image: reordering produces unaligned-write
 *     errors as on mem:, the dispatcher's NOLOCK recovery copes, and what
 *     is persisted is consistent after reopen (one and four queues);
 *   - kill test: a child writing stamped blocks with periodic flushes is
 *     SIGKILLed at seeded random moments; after reopen every zone's wp is
 *     at most what was written and at least what a completed flush
 *     covered, every block below it is intact, zeros above;
 *   - power-cut mode on an image: flushed data survives, each zone's wp
 *     lands in [flushed, written], zeros above it (also in the raw file);
 *   - read-only opens (ZLFS_ZDEV_RDONLY): both files opened O_RDONLY (their
 *     fdinfo says so), data, write pointers and conditions as written,
 *     every changing call -EROFS, a flush 0, and neither file's bytes nor
 *     mtime changed after close, for zoned, thick and plain images;
 *     an immutable image (chattr +i) opens read-only and only so; read-only
 *     openers share an image, a read-write one excludes them and is
 *     excluded; a short IMAGE.zst is refused, not grown; mem: refuses too.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "zlfs/disp.h"
#include "blk/zemu.h"        /* the documented IMAGE.zst layout */

#define KB 1024ull
#define MB (1024 * KB)
#define BLK 4096u
#define MAGIC 0x5a4c4653494d4147ull   /* "ZLFSIMAG" */

/* 64M image of 16 zones of 4M: zones 0-1 conventional */
static const struct zlfs_image_params std_params = {
	.size = 64 * MB, .zone_size = 4 * MB, .nr_conv = 2,
};

/* ---- helpers ------------------------------------------------------------------ */

static char *new_image(const char *name, const struct zlfs_image_params *p)
{
	char *path = tu_path(name);
	int ret = zlfs_image_create(path, p, true);

	ck_assert_msg(ret == 0, "create %s: %d %s", path, ret, zlfs_zdev_errmsg());
	return path;
}

static struct zlfs_zdev *open_dev(const char *spec)
{
	struct zlfs_zdev *dev = NULL;
	int ret = zlfs_zdev_open(spec, &dev);

	ck_assert_msg(ret == 0, "open %s: %d %s", spec, ret, zlfs_zdev_errmsg());
	return dev;
}

/*
 * Open an image whose previous owner was just killed.  Its flock lives on
 * the open file description that the dead process's in-flight io_uring
 * requests still reference until the kernel has torn the ring down, so
 * for a few milliseconds the image may still be busy.
 */
static struct zlfs_zdev *open_after_kill(const char *path, int *busy_retries)
{
	struct zlfs_zdev *dev = NULL;
	int ret;

	for (int i = 0; (ret = zlfs_zdev_open(path, &dev)) == -EBUSY && i < 2000; i++) {
		(*busy_retries)++;
		usleep(1000);
	}
	ck_assert_msg(ret == 0, "reopen %s: %d %s", path, ret, zlfs_zdev_errmsg());
	return dev;
}

static struct zlfs_zdev *open_with(const char *path, const char *opts)
{
	char spec[600];

	snprintf(spec, sizeof(spec), "%s?%s", path, opts);
	return open_dev(spec);
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

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static uint8_t *pattern(size_t len, uint64_t seed)
{
	uint8_t *p = malloc(len);

	ck_assert_ptr_nonnull(p);
	tu_fill(p, len, seed);
	return p;
}

/* Read through the device into a buffer that starts as garbage. */
static uint8_t *rd(struct zlfs_zdev *dev, uint64_t off, uint64_t len)
{
	uint8_t *p = malloc(len);

	ck_assert_ptr_nonnull(p);
	memset(p, 0xa5, len);
	ck_assert_int_eq(zlfs_zdev_read(dev, p, len, off), 0);
	return p;
}

/* Read the image file itself. */
static uint8_t *raw_rd(const char *path, uint64_t off, uint64_t len)
{
	uint8_t *p = malloc(len);
	int fd = open(path, O_RDONLY);

	ck_assert_ptr_nonnull(p);
	ck_assert_int_ge(fd, 0);
	memset(p, 0xa5, len);
	ck_assert_int_eq(pread(fd, p, len, (off_t)off), (ssize_t)len);
	close(fd);
	return p;
}

/* A stamped block: magic, LBA, a sequence number, a pattern from both. */
static void stamp(uint8_t *p, uint64_t lba, uint64_t seq)
{
	uint64_t *w = (uint64_t *)p;

	w[0] = MAGIC;
	w[1] = lba;
	w[2] = seq;
	for (uint32_t k = 3; k < BLK / 8; k++)
		w[k] = (lba * 0x9e3779b97f4a7c15ull) ^ (seq * 0xbf58476d1ce4e5b9ull) ^ k;
}

static bool stamped(const uint8_t *p, uint64_t lba, uint64_t seq)
{
	const uint64_t *w = (const uint64_t *)p;

	if (w[0] != MAGIC || w[1] != lba || w[2] != seq)
		return false;
	for (uint32_t k = 3; k < BLK / 8; k++)
		if (w[k] != ((lba * 0x9e3779b97f4a7c15ull) ^ (seq * 0xbf58476d1ce4e5b9ull) ^ k))
			return false;
	return true;
}

/* the sequence number a block gets when only its LBA decides it */
static uint64_t lba_seq(uint64_t lba)
{
	return lba * 7 + 1;
}

static void write_stamped(struct zlfs_zdev *dev, uint64_t off, uint32_t blocks)
{
	uint8_t *buf = malloc((size_t)blocks * BLK);

	for (uint32_t k = 0; k < blocks; k++)
		stamp(buf + (size_t)k * BLK, off / BLK + k, lba_seq(off / BLK + k));
	ck_assert_int_eq(zlfs_zdev_write(dev, buf, (uint64_t)blocks * BLK, off), 0);
	free(buf);
}

/* Every block of [off, off+len) carries its LBA stamp. */
static void check_stamped(struct zlfs_zdev *dev, uint64_t off, uint64_t len)
{
	for (uint64_t o = off; o < off + len; o += MB) {
		uint64_t n = off + len - o < MB ? off + len - o : MB;
		uint8_t *p = rd(dev, o, n);
		for (uint64_t k = 0; k < n; k += BLK)
			ck_assert_msg(stamped(p + k, (o + k) / BLK, lba_seq((o + k) / BLK)),
				      "block %llu is not intact", (unsigned long long)((o + k) / BLK));
		free(p);
	}
}

static void check_zero_dev(struct zlfs_zdev *dev, uint64_t off, uint64_t len)
{
	for (uint64_t o = off; o < off + len; o += MB) {
		uint64_t n = off + len - o < MB ? off + len - o : MB;
		uint8_t *p = rd(dev, o, n);
		ck_assert_msg(all_zero(p, n), "data above the write pointer near %llu",
			      (unsigned long long)o);
		free(p);
	}
}

/* ---- creation and geometry -------------------------------------------------------- */

START_TEST(test_geometry_from_zst)
{
	struct zlfs_image_params p = {
		.size = 64 * MB, .zone_size = 4 * MB, .zone_cap = 3 * MB, .nr_conv = 2,
		.max_open = 3, .max_active = 5, .lbs = 4096,
	};
	char *path = new_image("geom", &p);
	struct zlfs_zdev *dev = open_dev(path);
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(dev);
	struct stat st;

	ck_assert_uint_eq(g->size, 64 * MB);
	ck_assert_uint_eq(g->zone_size, 4 * MB);
	ck_assert_uint_eq(g->zone_cap, 3 * MB);
	ck_assert_uint_eq(g->nr_zones, 16);
	ck_assert_uint_eq(g->nr_conv, 2);
	ck_assert_uint_eq(g->max_open, 3);
	ck_assert_uint_eq(g->max_active, 5);
	ck_assert_uint_eq(g->lbs, 4096);
	ck_assert_uint_eq(g->kind, ZLFS_DEV_IMAGE);
	ck_assert(g->zoned);
	ck_assert(g->no_zwl);
	ck_assert_uint_gt(g->depth, 0);
	ck_assert_str_eq(zlfs_zdev_spec(dev), path);
	struct zlfs_zone z[16];
	uint32_t nr = 16;
	ck_assert_int_eq(zlfs_zdev_report(dev, 0, z, &nr), 0);
	ck_assert_uint_eq(nr, 16);
	for (uint32_t i = 0; i < 16; i++) {
		ck_assert_uint_eq(z[i].start, i * 4 * MB);
		ck_assert_uint_eq(z[i].len, 4 * MB);
		if (i < 2) {
			ck_assert_uint_eq(z[i].type, ZLFS_ZONE_CONV);
			ck_assert_uint_eq(z[i].cond, ZLFS_ZC_NOT_WP);
			ck_assert_uint_eq(z[i].cap, 4 * MB);
		} else {
			ck_assert_uint_eq(z[i].type, ZLFS_ZONE_SWR);
			ck_assert_uint_eq(z[i].cond, ZLFS_ZC_EMPTY);
			ck_assert_uint_eq(z[i].cap, 3 * MB);
			ck_assert_uint_eq(z[i].wp, z[i].start);
		}
	}
	zlfs_zdev_close(dev);
	/* the files: a sparse image of the device size, a zone state file */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 64 * MB);
	char zst[600];
	snprintf(zst, sizeof(zst), "%s.zst", path);
	ck_assert_int_eq(stat(zst, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, ZST_HDR_SIZE + 16 * sizeof(struct zst_zone));
	free(path);

	/* 512-byte blocks; zone_cap 0 means the zone size; lbs 0 means 4096 */
	struct zlfs_image_params q = { .size = 8 * MB, .zone_size = 1 * MB, .lbs = 512 };
	path = new_image("geom512", &q);
	dev = open_dev(path);
	g = zlfs_zdev_geom(dev);
	ck_assert_uint_eq(g->lbs, 512);
	ck_assert_uint_eq(g->zone_cap, 1 * MB);
	ck_assert_uint_eq(g->nr_zones, 8);
	ck_assert_uint_eq(g->nr_conv, 0);
	uint8_t *d = pattern(1024, 3);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, 512, 0), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d + 512, 512, 512), 0);
	ck_assert_uint_eq(zrep(dev, 0).wp, 1024);
	zlfs_zdev_close(dev);
	dev = open_dev(path);
	ck_assert_uint_eq(zrep(dev, 0).wp, 1024);
	uint8_t *b = rd(dev, 0, 1024);
	ck_assert_mem_eq(b, d, 1024);
	zlfs_zdev_close(dev);
	free(b);
	free(d);
	free(path);
	struct zlfs_image_params r = { .size = 8 * MB, .zone_size = 1 * MB };
	path = new_image("geomdef", &r);
	dev = open_dev(path);
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->lbs, 4096);
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->zone_cap, 1 * MB);
	/* options after '?' apply to images too */
	zlfs_zdev_close(dev);
	dev = open_with(path, "nozwl=0");
	ck_assert(!zlfs_zdev_geom(dev)->no_zwl);
	zlfs_zdev_close(dev);
	free(path);
}
END_TEST

START_TEST(test_create_validation)
{
	static const struct { struct zlfs_image_params p; const char *why; } bad[] = {
		{ { .size = 64 * MB, .zone_size = 4 * MB, .lbs = 1024 }, "lbs" },
		{ { .size = 64 * MB, .zone_size = 3 * MB }, "zone size not a power of two" },
		{ { .size = 64 * MB, .zone_size = 0 }, "zone size 0" },
		{ { .size = 64 * MB, .zone_size = 2048, .lbs = 4096 }, "zone smaller than a block" },
		{ { .size = 64 * MB, .zone_size = 4 * MB, .zone_cap = 5 * MB }, "cap > zone" },
		{ { .size = 64 * MB, .zone_size = 4 * MB, .zone_cap = 3 * MB + 512 }, "cap not blocks" },
		{ { .size = 0, .zone_size = 4 * MB }, "size 0" },
		{ { .size = 66 * MB, .zone_size = 4 * MB }, "size not zones" },
		{ { .size = 64 * MB, .zone_size = 4 * MB, .nr_conv = 17 }, "too many conventional" },
	};
	char *path = tu_path("bad");

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(zlfs_image_create(path, &bad[i].p, true) == -EINVAL, "%s accepted",
			      bad[i].why);
		ck_assert_str_ne(zlfs_zdev_errmsg(), "no error recorded");
		ck_assert_msg(access(path, F_OK) != 0, "%s: a file was left behind", bad[i].why);
	}
	/* all zones conventional is fine: a device with no sequential zones */
	struct zlfs_image_params allconv = { .size = 16 * MB, .zone_size = 4 * MB, .nr_conv = 4 };
	ck_assert_int_eq(zlfs_image_create(path, &allconv, false), 0);
	struct zlfs_zdev *dev = open_dev(path);
	ck_assert(!zlfs_zdev_geom(dev)->zoned);
	/* in use: even force does not touch it */
	ck_assert_int_eq(zlfs_image_create(path, &allconv, true), -EBUSY);
	uint8_t *d = pattern(BLK, 1);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, BLK, 5 * MB), 0);
	zlfs_zdev_close(dev);
	/* exists: -EEXIST without force, nothing changed */
	ck_assert_int_eq(zlfs_image_create(path, &std_params, false), -EEXIST);
	dev = open_dev(path);
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->nr_zones, 4);
	uint8_t *b = rd(dev, 5 * MB, BLK);
	ck_assert_mem_eq(b, d, BLK);
	free(b);
	zlfs_zdev_close(dev);
	/* force: a new device, all zeros */
	ck_assert_int_eq(zlfs_image_create(path, &std_params, true), 0);
	dev = open_dev(path);
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->nr_zones, 16);
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->nr_conv, 2);
	b = rd(dev, 5 * MB, BLK);
	ck_assert(all_zero(b, BLK));
	free(b);
	zlfs_zdev_close(dev);
	free(d);
	/* nowhere to create it */
	ck_assert_int_eq(zlfs_image_create("/nonexistent-dir/zlfs/img", &std_params, true), -ENOENT);
	free(path);
}
END_TEST

/* Overwrite part of PATH.zst. */
static void poke_zst(const char *path, off_t off, const void *v, size_t n)
{
	char zst[600];
	snprintf(zst, sizeof(zst), "%s.zst", path);
	int fd = open(zst, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, v, n, off), (ssize_t)n);
	close(fd);
}

static int try_open(const char *spec)
{
	struct zlfs_zdev *dev = NULL;
	int ret = zlfs_zdev_open(spec, &dev);

	if (!ret)
		zlfs_zdev_close(dev);
	return ret;
}

START_TEST(test_open_validation)
{
	char *path = new_image("val", &std_params);
	char zst[600];
	snprintf(zst, sizeof(zst), "%s.zst", path);

	/* no image at all */
	char *none = tu_path("no-such-image");
	ck_assert_int_eq(try_open(none), -ENOENT);
	free(none);
	ck_assert_int_eq(try_open(path), 0);
	/* a zone state too short to hold its header */
	ck_assert_int_eq(truncate(zst, 16), 0);
	ck_assert_int_eq(try_open(path), -EINVAL);

	/* a bad magic, a bad version */
	ck_assert_int_eq(zlfs_image_create(path, &std_params, true), 0);
	poke_zst(path, 0, "NOTZLFS!", 8);
	ck_assert_int_eq(try_open(path), -EINVAL);
	ck_assert_int_eq(zlfs_image_create(path, &std_params, true), 0);
	uint32_t v = 2;
	poke_zst(path, offsetof(struct zst_hdr, version), &v, sizeof(v));
	ck_assert_int_eq(try_open(path), -EINVAL);
	/* a geometry that does not add up */
	ck_assert_int_eq(zlfs_image_create(path, &std_params, true), 0);
	uint32_t nz = 15;
	poke_zst(path, offsetof(struct zst_hdr, nr_zones), &nz, sizeof(nz));
	ck_assert_int_eq(try_open(path), -EINVAL);
	ck_assert_int_eq(zlfs_image_create(path, &std_params, true), 0);
	uint64_t zs = 3 * MB;
	poke_zst(path, offsetof(struct zst_hdr, zone_size), &zs, sizeof(zs));
	ck_assert_int_eq(try_open(path), -EINVAL);
	/* a write pointer outside its zone, or not on a block */
	static const uint64_t bad_wp[] = { 0, 4 * 4 * MB, 2 * 4 * MB + 100 };
	for (size_t i = 0; i < sizeof(bad_wp) / sizeof(bad_wp[0]); i++) {
		ck_assert_int_eq(zlfs_image_create(path, &std_params, true), 0);
		poke_zst(path, ZST_HDR_SIZE + 2 * sizeof(struct zst_zone), &bad_wp[i], sizeof(uint64_t));
		ck_assert_int_eq(try_open(path), -EUCLEAN);
		ck_assert_ptr_nonnull(strstr(zlfs_zdev_errmsg(), "zone 2"));
	}
	/* a good write pointer set by hand is taken */
	ck_assert_int_eq(zlfs_image_create(path, &std_params, true), 0);
	uint64_t wp = 3 * 4 * MB + 8 * BLK;
	poke_zst(path, ZST_HDR_SIZE + 3 * sizeof(struct zst_zone), &wp, sizeof(wp));
	struct zlfs_zdev *dev = open_dev(path);
	ck_assert_uint_eq(zrep(dev, 3).wp, wp);
	ck_assert_uint_eq(zrep(dev, 3).cond, ZLFS_ZC_CLOSED);
	zlfs_zdev_close(dev);
	/* an image shorter than the zone state says */
	ck_assert_int_eq(zlfs_image_create(path, &std_params, true), 0);
	ck_assert_int_eq(truncate(path, 32 * MB), 0);
	ck_assert_int_eq(try_open(path), -EINVAL);
	/* unknown and bad options */
	ck_assert_int_eq(zlfs_image_create(path, &std_params, true), 0);
	char spec[700];
	snprintf(spec, sizeof(spec), "%s?bogus=1", path);
	ck_assert_int_eq(try_open(spec), -EINVAL);
	ck_assert_ptr_nonnull(strstr(zlfs_zdev_errmsg(), "bogus"));
	snprintf(spec, sizeof(spec), "%s?qd=0", path);
	ck_assert_int_eq(try_open(spec), -EINVAL);
	/* and after all that, the image still opens */
	ck_assert_int_eq(try_open(path), 0);
	free(path);
}
END_TEST

/* A regular file of SIZE bytes (sparse), without zone state. */
static void make_plain(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

/* A regular file without zone state is a device without zones. */
START_TEST(test_plain_file)
{
	char *path = tu_path("plain");

	make_plain(path, 64 * MB + 12345);
	struct zlfs_zdev *dev = open_dev(path);
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(dev);
	ck_assert_uint_eq(g->kind, ZLFS_DEV_IMAGE);
	ck_assert(!g->zoned);
	ck_assert_uint_eq(g->nr_conv, g->nr_zones);
	ck_assert_uint_eq(g->size, (uint64_t)g->nr_zones * g->zone_size);
	ck_assert_uint_le(g->size, 64 * MB + 12345);
	ck_assert_uint_gt(g->size + g->zone_size, 64 * MB + 12345);
	ck_assert_uint_eq(g->lbs, 4096);
	struct zlfs_zone z = zrep(dev, g->nr_zones - 1);
	ck_assert_uint_eq(z.type, ZLFS_ZONE_CONV);
	uint64_t zs = g->zone_size;
	/* anywhere, in any order, across zone boundaries */
	uint8_t *d = pattern(3 * zs, 31);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, 3 * zs, zs / 2), 0);
	ck_assert_int_eq(zlfs_zdev_write(dev, d, BLK, 0), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 1), -EINVAL);
	uint64_t pos;
	ck_assert_int_eq(zlfs_zdev_append(dev, d, BLK, 0, &pos), -EINVAL);
	/* one owner */
	struct zlfs_zdev *dev2 = NULL;
	ck_assert_int_eq(zlfs_zdev_open(path, &dev2), -EBUSY);
	zlfs_zdev_close(dev);
	/* the data is in the file, at its own offsets */
	uint8_t *raw = raw_rd(path, zs / 2, 3 * zs);
	ck_assert_mem_eq(raw, d, 3 * zs);
	free(raw);
	char zst[600];
	snprintf(zst, sizeof(zst), "%s.zst", path);
	ck_assert_int_ne(access(zst, F_OK), 0);
	/* zone size and service model from the options */
	dev = open_with(path, "zone_size=4M,qd=8,lat_us=10");
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->zone_size, 4 * MB);
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->nr_zones, 16);
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->depth, 8);
	uint8_t *b = rd(dev, zs / 2, 3 * zs);
	ck_assert_mem_eq(b, d, 3 * zs);
	free(b);
	zlfs_zdev_close(dev);
	/* a file smaller than one zone is no device */
	ck_assert_int_eq(truncate(path, 4096), 0);
	ck_assert_int_eq(try_open(path), -EINVAL);
	free(d);
	free(path);
}
END_TEST

/* ---- read-only opens --------------------------------------------------------------- */

static struct zlfs_zdev *open_ro(const char *spec)
{
	struct zlfs_zdev *dev = NULL;
	int ret = zlfs_zdev_open_flags(spec, ZLFS_ZDEV_RDONLY, &dev);

	ck_assert_msg(ret == 0, "open %s read-only: %d %s", spec, ret, zlfs_zdev_errmsg());
	ck_assert(zlfs_zdev_geom(dev)->rdonly);
	return dev;
}

/* A file's bytes (FNV-1a) and its mtime: what "wrote nothing" is checked by. */
struct fsum {
	uint64_t h;
	struct timespec mtime;
	off_t size;
};

static struct fsum file_sum(const char *path)
{
	struct fsum f = { .h = tu_file_hash(path) };
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	f.mtime = st.st_mtim;
	f.size = st.st_size;
	return f;
}

static void same_sum(const char *path, struct fsum a)
{
	struct fsum b = file_sum(path);

	ck_assert_msg(a.h == b.h && a.size == b.size, "%s: its bytes changed", path);
	ck_assert_msg(a.mtime.tv_sec == b.mtime.tv_sec && a.mtime.tv_nsec == b.mtime.tv_nsec,
		      "%s: its mtime changed", path);
}

/* How many of this process's descriptors name path, and how many of them are O_RDONLY. */
static void fd_modes(const char *path, int *total, int *rdonly)
{
	char real[PATH_MAX], link[PATH_MAX], p[300];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	ck_assert_ptr_nonnull(realpath(path, real));
	ck_assert_ptr_nonnull(d);
	*total = *rdonly = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(p, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		if (strcmp(link, real))
			continue;
		snprintf(p, sizeof(p), "/proc/self/fdinfo/%s", e->d_name);
		FILE *f = fopen(p, "r");
		char line[200];
		unsigned int flags = ~0u;
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "flags: %o", &flags) == 1)
				break;
		if (f)
			fclose(f);
		(*total)++;
		*rdonly += (flags & O_ACCMODE) == O_RDONLY;
	}
	closedir(d);
}

/* Every call that changes a device fails with -EROFS; a flush has nothing to do. */
static void refuses_writes(struct zlfs_zdev *dev, uint32_t seq_zone)
{
	uint8_t *d = pattern(BLK, 5);
	uint64_t pos = 0;

	ck_assert_int_eq(zlfs_zdev_write(dev, d, BLK, 0), -EROFS);
	if (zlfs_zdev_geom(dev)->zoned) {
		ck_assert_int_eq(zlfs_zdev_write(dev, d, BLK, zrep(dev, seq_zone).wp), -EROFS);
		ck_assert_int_eq(zlfs_zdev_append(dev, d, BLK, zstart(dev, seq_zone), &pos), -EROFS);
		for (int op = ZLFS_ZM_RESET; op <= ZLFS_ZM_FINISH; op++)
			ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, op, seq_zone), -EROFS);
		ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), -EROFS);
		ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, seq_zone, ZLFS_ZC_OFFLINE), -EROFS);
	}
	ck_assert_int_eq(zlfs_zdev_discard(dev, 0, BLK), -EROFS);
	ck_assert_int_eq(zlfs_zdev_powercut_arm(dev, 0, 1), -EROFS);
	ck_assert_int_eq(zlfs_zdev_powercut(dev), -EROFS);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	free(d);
}

START_TEST(test_rdonly_open)
{
	struct zlfs_image_params p = std_params;
	p.thick = _i == 1;
	char *path = new_image(_i ? "ro-thick" : "ro", &p);
	char zst[600];
	snprintf(zst, sizeof(zst), "%s.zst", path);
	struct zlfs_zdev *dev = open_dev(path);
	write_stamped(dev, 0, 8);                     /* conventional */
	write_stamped(dev, zstart(dev, 3), 16);       /* closed at 16 blocks */
	write_stamped(dev, zstart(dev, 5), 4);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_FINISH, 5), 0);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 7, ZLFS_ZC_RDONLY), 0);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	zlfs_zdev_close(dev);
	struct fsum si = file_sum(path), sz = file_sum(zst);

	dev = open_ro(path);
	int total, ro;
	fd_modes(path, &total, &ro);
	ck_assert_int_ge(total, 1);
	ck_assert_int_eq(ro, total);
	fd_modes(zst, &total, &ro);
	ck_assert_int_eq(ro, total);
	check_stamped(dev, 0, 8 * BLK);
	check_stamped(dev, zstart(dev, 3), 16 * BLK);
	check_zero_dev(dev, zstart(dev, 3) + 16 * BLK, 16 * BLK);
	ck_assert_uint_eq(zrep(dev, 3).wp, zstart(dev, 3) + 16 * BLK);
	ck_assert_uint_eq(zrep(dev, 3).cond, ZLFS_ZC_CLOSED);
	ck_assert_uint_eq(zrep(dev, 5).cond, ZLFS_ZC_FULL);
	ck_assert_uint_eq(zrep(dev, 7).cond, ZLFS_ZC_RDONLY);
	ck_assert_uint_eq(zrep(dev, 9).cond, ZLFS_ZC_EMPTY);
	refuses_writes(dev, 9);
	/* read-only openers share it; a read-write one is kept out */
	struct zlfs_zdev *dev2 = open_ro(path), *dev3 = NULL;
	check_stamped(dev2, zstart(dev2, 3), 16 * BLK);
	ck_assert_int_eq(zlfs_zdev_open(path, &dev3), -EBUSY);
	zlfs_zdev_close(dev2);
	zlfs_zdev_close(dev);
	same_sum(path, si);
	same_sum(zst, sz);
	/* and a read-write owner keeps read-only openers out */
	dev = open_dev(path);
	ck_assert_int_eq(zlfs_zdev_open_flags(path, ZLFS_ZDEV_RDONLY, &dev2), -EBUSY);
	zlfs_zdev_close(dev);
	/* a service model and options work read-only too */
	char spec[700];
	snprintf(spec, sizeof(spec), "%s?qd=4,lat_us=5", path);
	dev = open_ro(spec);
	check_stamped(dev, zstart(dev, 3), 16 * BLK);
	refuses_writes(dev, 9);
	zlfs_zdev_close(dev);
	si = file_sum(path);
	sz = file_sum(zst);
	/* power-cut mode from the spec is refused: a cut rewrites zones */
	snprintf(spec, sizeof(spec), "%s?powercut=1", path);
	ck_assert_int_eq(zlfs_zdev_open_flags(spec, ZLFS_ZDEV_RDONLY, &dev), -EINVAL);
	/* unknown flags */
	ck_assert_int_eq(zlfs_zdev_open_flags(path, 2, &dev), -EINVAL);
	same_sum(path, si);
	same_sum(zst, sz);
	free(path);
}
END_TEST

/*
 * A large plain file is given larger zones (a record per zone, a section
 * per zone in mkfs.zlfs): 2 MiB doubled while there would be more than
 * 65,536, only while the size stays a multiple; zone_size overrides.
 */
static uint64_t plain_zone_size(const char *path, uint64_t size, const char *opts)
{
	make_plain(path, size);
	struct zlfs_zdev *dev = opts ? open_with(path, opts) : open_dev(path);
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(dev);
	uint64_t zs = g->zone_size;
	ck_assert(!g->zoned);
	ck_assert_uint_eq(g->nr_conv, g->nr_zones);
	ck_assert_uint_eq(g->size, (uint64_t)g->nr_zones * zs);
	/* doubled only past 65,536 zones, and no further than needed */
	ck_assert(zs == 2 * MB || (g->nr_zones <= 65536 && g->nr_zones > 32768));
	/* every byte 2 MiB zones would give */
	ck_assert_uint_eq(g->size, size / (2 * MB) * (2 * MB));
	if (zs > 2 * MB) {
		struct zlfs_zone z = zrep(dev, g->nr_zones - 1);
		ck_assert_uint_eq(z.type, ZLFS_ZONE_CONV);
		ck_assert_uint_eq(z.start + z.len, g->size);
	}
	zlfs_zdev_close(dev);
	return zs;
}

START_TEST(test_plain_large_zones)
{
	char *path = tu_path("plain-large");
	const uint64_t GB = 1024 * MB;

	ck_assert_uint_eq(plain_zone_size(path, 128 * GB, NULL), 2 * MB);
	ck_assert_uint_eq(plain_zone_size(path, 200 * GB, NULL), 4 * MB);
	ck_assert_uint_eq(plain_zone_size(path, 15 * 1024 * GB, NULL), 256 * MB);
	/* not a multiple of 4 MiB: 2 MiB zones keep its last 2 MiB */
	ck_assert_uint_eq(plain_zone_size(path, 200 * GB + 2 * MB + 5, NULL), 2 * MB);
	ck_assert_uint_eq(plain_zone_size(path, 200 * GB + 4 * MB, NULL), 4 * MB);
	ck_assert_uint_eq(plain_zone_size(path, 15 * 1024 * GB - 2 * MB, NULL), 2 * MB);
	free(path);
}
END_TEST

START_TEST(test_plain_large_zones_option)
{
	char *path = tu_path("plain-large-opt");

	/* a chosen zone size is kept, however many zones it makes */
	make_plain(path, 200ull << 30);
	struct zlfs_zdev *dev = open_with(path, "zone_size=2M");
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->zone_size, 2 * MB);
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->nr_zones, 102400);
	zlfs_zdev_close(dev);
	free(path);
}
END_TEST

/* A regular file without zone state, read-only. */
START_TEST(test_rdonly_plain)
{
	char *path = tu_path("ro-plain");

	make_plain(path, 16 * MB);
	struct zlfs_zdev *dev = open_dev(path);
	write_stamped(dev, 3 * MB, 16);
	zlfs_zdev_close(dev);
	struct fsum s0 = file_sum(path);
	dev = open_ro(path);
	int total, ro;
	fd_modes(path, &total, &ro);
	ck_assert_int_ge(total, 1);
	ck_assert_int_eq(ro, total);
	check_stamped(dev, 3 * MB, 16 * BLK);
	refuses_writes(dev, 0);
	zlfs_zdev_close(dev);
	same_sum(path, s0);
	free(path);
}
END_TEST

/*
 * Write-protected images: an immutable one (chattr +i; root may set it)
 * opens read-only and not read-write; a zone state shorter than its zones
 * is refused read-only (a read-write open would grow it).
 */
START_TEST(test_rdonly_protected)
{
	char *path = new_image("ro-prot", &std_params);
	char zst[600];
	snprintf(zst, sizeof(zst), "%s.zst", path);
	struct zlfs_zdev *dev = open_dev(path);
	write_stamped(dev, zstart(dev, 4), 8);
	zlfs_zdev_close(dev);

	int ifd = open(path, O_RDONLY), zfd = open(zst, O_RDONLY), flags = 0;
	ck_assert_int_ge(ifd, 0);
	ck_assert_int_ge(zfd, 0);
	bool immutable = ioctl(ifd, FS_IOC_GETFLAGS, &flags) == 0 &&
			 (flags |= FS_IMMUTABLE_FL, ioctl(ifd, FS_IOC_SETFLAGS, &flags) == 0);
	if (immutable) {
		/* results kept, asserted after the flag is off: a failure must not
		 * leave a file the test directory's removal cannot delete */
		int rw = zlfs_zdev_open(path, &dev), rd, wrote;
		if (!rw)
			zlfs_zdev_close(dev);
		rd = zlfs_zdev_open_flags(path, ZLFS_ZDEV_RDONLY, &dev);
		bool intact = false;
		wrote = 0;
		if (!rd) {
			uint8_t *b = malloc(8 * BLK);
			if (b && !zlfs_zdev_read(dev, b, 8 * BLK, zstart(dev, 4))) {
				intact = true;
				for (uint32_t k = 0; k < 8; k++)
					intact = intact && stamped(b + k * BLK, zstart(dev, 4) / BLK + k,
								   lba_seq(zstart(dev, 4) / BLK + k));
			}
			if (b)
				wrote = zlfs_zdev_write(dev, b, BLK, 0);
			free(b);
			zlfs_zdev_close(dev);
		}
		flags &= ~FS_IMMUTABLE_FL;
		ck_assert_int_eq(ioctl(ifd, FS_IOC_SETFLAGS, &flags), 0);
		ck_assert_msg(rw == -EPERM || rw == -EACCES, "read-write open of an immutable "
			      "image: %d", rw);
		ck_assert_msg(rd == 0, "read-only open of an immutable image: %d", rd);
		ck_assert(intact);
		ck_assert_int_eq(wrote, -EROFS);
	} else {
		fprintf(stderr, "test_rdonly_protected: no chattr +i here (%s): that part left out\n",
			strerror(errno));
	}
	close(ifd);
	close(zfd);

	/* a short zone state: refused read-only, and left as it was */
	struct stat st;
	ck_assert_int_eq(stat(zst, &st), 0);
	ck_assert_int_eq(truncate(zst, st.st_size - 16), 0);
	ck_assert_int_eq(zlfs_zdev_open_flags(path, ZLFS_ZDEV_RDONLY, &dev), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(zlfs_zdev_errmsg(), "short"));
	ck_assert_int_eq(stat(zst, &st), 0);
	ck_assert_int_eq(st.st_size, ZST_HDR_SIZE + 16 * sizeof(struct zst_zone) - 16);
	free(path);
}
END_TEST

/* mem: has no file to open read-only, but refuses writes all the same. */
START_TEST(test_rdonly_mem)
{
	struct zlfs_zdev *dev = open_ro("mem:size=64M,zone_size=4M,conv_zones=2");
	uint8_t *b = rd(dev, zstart(dev, 4), BLK);

	ck_assert(all_zero(b, BLK));
	free(b);
	refuses_writes(dev, 4);
	zlfs_zdev_close(dev);
}
END_TEST

/* ---- persistence ------------------------------------------------------------------- */

START_TEST(test_persist_reopen)
{
	char *path = new_image("persist", &std_params);
	struct zlfs_zdev *dev = open_dev(path);
	uint8_t *conv = pattern(256 * KB, 10);

	/* zone 2: partly written; 3: full; 4: explicitly opened, empty;
	 * 5: explicitly opened, written; 6: finished; 7: read-only; 8: offline */
	ck_assert_int_eq(zlfs_zdev_write(dev, conv, 256 * KB, 1 * MB + 64 * KB), 0);
	write_stamped(dev, zstart(dev, 2), 10);
	write_stamped(dev, zstart(dev, 2) + 10 * BLK, 6);
	for (uint64_t o = 0; o < 4 * MB; o += MB)
		write_stamped(dev, zstart(dev, 3) + o, MB / BLK);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 4), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_OPEN, 5), 0);
	write_stamped(dev, zstart(dev, 5), 3);
	write_stamped(dev, zstart(dev, 6), 1);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_FINISH, 6), 0);
	write_stamped(dev, zstart(dev, 7), 2);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 7, ZLFS_ZC_RDONLY), 0);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 8, ZLFS_ZC_OFFLINE), 0);
	uint64_t pos;
	uint8_t *ap = malloc(BLK);
	stamp(ap, zstart(dev, 9) / BLK, lba_seq(zstart(dev, 9) / BLK));
	ck_assert_int_eq(zlfs_zdev_append(dev, ap, BLK, zstart(dev, 9) + MB, &pos), 0);
	ck_assert_uint_eq(pos, zstart(dev, 9));
	free(ap);
	ck_assert_uint_eq(zrep(dev, 2).cond, ZLFS_ZC_IMP_OPEN);
	ck_assert_uint_eq(zrep(dev, 4).cond, ZLFS_ZC_EXP_OPEN);
	ck_assert_uint_eq(zrep(dev, 5).cond, ZLFS_ZC_EXP_OPEN);
	zlfs_zdev_close(dev);

	for (int round = 0; round < 2; round++) {
		dev = open_dev(path);
		struct zlfs_zone z;
		z = zrep(dev, 2);
		ck_assert_uint_eq(z.wp, zstart(dev, 2) + 16 * BLK);
		ck_assert_uint_eq(z.cond, ZLFS_ZC_CLOSED);
		z = zrep(dev, 3);
		ck_assert_uint_eq(z.wp, zstart(dev, 3) + 4 * MB);
		ck_assert_uint_eq(z.cond, ZLFS_ZC_FULL);
		ck_assert_uint_eq(zrep(dev, 4).cond, ZLFS_ZC_EMPTY);
		ck_assert_uint_eq(zrep(dev, 5).cond, ZLFS_ZC_CLOSED);
		ck_assert_uint_eq(zrep(dev, 5).wp, zstart(dev, 5) + 3 * BLK);
		ck_assert_uint_eq(zrep(dev, 6).cond, ZLFS_ZC_FULL);
		ck_assert_uint_eq(zrep(dev, 7).cond, ZLFS_ZC_RDONLY);
		ck_assert_uint_eq(zrep(dev, 8).cond, ZLFS_ZC_OFFLINE);
		ck_assert_uint_eq(zrep(dev, 9).wp, zstart(dev, 9) + BLK);
		ck_assert_uint_eq(zrep(dev, 9).cond, ZLFS_ZC_CLOSED);
		ck_assert_uint_eq(zrep(dev, 10).cond, ZLFS_ZC_EMPTY);
		check_stamped(dev, zstart(dev, 2), 16 * BLK);
		check_stamped(dev, zstart(dev, 3), 4 * MB);
		check_stamped(dev, zstart(dev, 5), 3 * BLK);
		check_stamped(dev, zstart(dev, 6), BLK);
		check_stamped(dev, zstart(dev, 7), 2 * BLK);
		check_stamped(dev, zstart(dev, 9), BLK);
		check_zero_dev(dev, zstart(dev, 2) + 16 * BLK, 64 * KB);
		uint8_t *b = rd(dev, 1 * MB + 64 * KB, 256 * KB);
		ck_assert_mem_eq(b, conv, 256 * KB);
		free(b);
		/* the closed zones take writes at their wp again */
		if (round == 0) {
			write_stamped(dev, zstart(dev, 2) + 16 * BLK, 4);
			ck_assert_uint_eq(zrep(dev, 2).cond, ZLFS_ZC_IMP_OPEN);
			ck_assert_int_eq(zlfs_zdev_write(dev, conv, BLK, zstart(dev, 7) + 2 * BLK),
					 -ZLFS_EZONERO);
			ck_assert_int_eq(zlfs_zdev_write(dev, conv, BLK, zstart(dev, 3) + 4 * MB - BLK),
					 -ZLFS_EZONEFULL);
			zlfs_zdev_close(dev);
			/* the extra blocks count from now on */
			dev = open_dev(path);
			ck_assert_uint_eq(zrep(dev, 2).wp, zstart(dev, 2) + 20 * BLK);
			check_stamped(dev, zstart(dev, 2), 20 * BLK);
			/* undo them for the second round's checks */
			uint8_t *keep = rd(dev, zstart(dev, 2), 16 * BLK);
			ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 2), 0);
			ck_assert_int_eq(zlfs_zdev_write(dev, keep, 16 * BLK, zstart(dev, 2)), 0);
			free(keep);
		}
		zlfs_zdev_close(dev);
	}
	free(conv);
	free(path);
}
END_TEST

START_TEST(test_reset_punches)
{
	char *path = new_image("reset", &std_params);
	struct zlfs_zdev *dev = open_dev(path);

	write_stamped(dev, zstart(dev, 4), MB / BLK);
	write_stamped(dev, zstart(dev, 5), 64);
	write_stamped(dev, zstart(dev, 6), 64);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	uint8_t *raw = raw_rd(path, zstart(dev, 4), MB);
	ck_assert(!all_zero(raw, MB));
	free(raw);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 4), 0);
	struct zlfs_zone z = zrep(dev, 4);
	ck_assert_uint_eq(z.wp, z.start);
	ck_assert_uint_eq(z.cond, ZLFS_ZC_EMPTY);
	check_zero_dev(dev, zstart(dev, 4), MB);
	raw = raw_rd(path, zstart(dev, 4), 4 * MB);
	ck_assert(all_zero(raw, 4 * MB));
	free(raw);
	/* the other zones are untouched */
	check_stamped(dev, zstart(dev, 5), 64 * BLK);
	/* written again after the reset: new data, then reset all */
	write_stamped(dev, zstart(dev, 4), 8);
	check_stamped(dev, zstart(dev, 4), 8 * BLK);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	for (uint32_t i = 4; i <= 6; i++) {
		raw = raw_rd(path, zstart(dev, i), MB);
		ck_assert_msg(all_zero(raw, MB), "zone %u still has data in the file", i);
		free(raw);
		ck_assert_uint_eq(zrep(dev, i).cond, ZLFS_ZC_EMPTY);
	}
	zlfs_zdev_close(dev);
	dev = open_dev(path);
	for (uint32_t i = 4; i <= 6; i++)
		ck_assert_uint_eq(zrep(dev, i).cond, ZLFS_ZC_EMPTY);
	check_zero_dev(dev, zstart(dev, 4), 3 * 4 * MB);
	zlfs_zdev_close(dev);
	free(path);
}
END_TEST

static uint64_t writebehinds(struct zlfs_zdev *dev)
{
	struct zlfs_zdev_stats st;
	zlfs_zdev_stats(dev, &st);
	return st.writebehinds;
}

/*
 * Write-behind: 8 MiB landed in a sequential zone, or the zone full,
 * starts the host's write-back of it; a reset starts the count over (else
 * a refilled zone would never be written back before a flush); the data
 * is intact through the device, in the raw file and after a reopen;
 * writebehind=0 and power-cut mode start none.
 */
START_TEST(test_writebehind)
{
	/* 256M of 64M zones, zone 0 conventional */
	struct zlfs_image_params p = { .size = 256 * MB, .zone_size = 64 * MB, .nr_conv = 1 };
	char *path = new_image("wb", &p);
	struct zlfs_zdev *dev = open_dev(path);

	for (int i = 0; i < 7; i++)
		write_stamped(dev, zstart(dev, 1) + (uint64_t)i * MB, MB / BLK);
	ck_assert_uint_eq(writebehinds(dev), 0);
	/* counted before the write that crossed 8 MiB completes */
	write_stamped(dev, zstart(dev, 1) + 7 * MB, MB / BLK);
	ck_assert_uint_eq(writebehinds(dev), 1);
	/* the conventional zone never */
	write_stamped(dev, 0, 16 * MB / BLK);
	ck_assert_uint_eq(writebehinds(dev), 1);
	/* fill zone 2; the one in flight may make some chunks wait for the next */
	for (int i = 0; i < 64; i++)
		write_stamped(dev, zstart(dev, 2) + (uint64_t)i * MB, MB / BLK);
	ck_assert_uint_ge(writebehinds(dev), 2);
	check_stamped(dev, zstart(dev, 1), 8 * MB);
	check_stamped(dev, zstart(dev, 2), 64 * MB);
	uint8_t *raw = raw_rd(path, zstart(dev, 2) + 63 * MB, MB);
	for (uint64_t k = 0; k < MB; k += BLK)
		ck_assert(stamped(raw + k, (zstart(dev, 2) + 63 * MB + k) / BLK,
				  lba_seq((zstart(dev, 2) + 63 * MB + k) / BLK)));
	free(raw);
	/* 8 MiB into zone 3 and its write-behind; then reset and refill it
	 * until one is counted again (one still in flight for another zone
	 * makes a chunk wait, so each step may take a few tries) */
	for (int pass = 0; pass < 2; pass++) {
		bool seen = false;
		for (int tries = 0; tries < 100 && !seen; tries++) {
			ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 3), 0);
			uint64_t before = writebehinds(dev);
			for (int i = 0; i < 8; i++)
				write_stamped(dev, zstart(dev, 3) + (uint64_t)i * MB, MB / BLK);
			seen = writebehinds(dev) > before;
			if (!seen)
				usleep(10000);
		}
		ck_assert_msg(seen, "zone 3 (pass %d) was never written back%s", pass,
			      pass ? " after its reset" : "");
	}
	/* closed with one possibly in flight: close waits for it */
	zlfs_zdev_close(dev);
	dev = open_dev(path);
	ck_assert_uint_eq(zrep(dev, 2).cond, ZLFS_ZC_FULL);
	check_stamped(dev, zstart(dev, 1), 8 * MB);
	check_stamped(dev, zstart(dev, 2), 64 * MB);
	check_stamped(dev, zstart(dev, 3), 8 * MB);
	zlfs_zdev_close(dev);

	/* writebehind=0: none */
	dev = open_with(path, "writebehind=0");
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	for (int i = 0; i < 64; i++)
		write_stamped(dev, zstart(dev, 1) + (uint64_t)i * MB, MB / BLK);
	ck_assert_uint_eq(writebehinds(dev), 0);
	check_stamped(dev, zstart(dev, 1), 64 * MB);
	zlfs_zdev_close(dev);
	/* power-cut mode writes at exec and undoes exactly: none either */
	dev = open_with(path, "powercut");
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	for (int i = 0; i < 16; i++)
		write_stamped(dev, zstart(dev, 1) + (uint64_t)i * MB, MB / BLK);
	ck_assert_uint_eq(writebehinds(dev), 0);
	zlfs_zdev_close(dev);
	free(path);
}
END_TEST

/*
 * --thick: every block allocated at creation, a reset keeps them (reads
 * zeros all the same), the zone state is in the image itself.
 */
START_TEST(test_thick_keeps_blocks)
{
	struct zlfs_image_params p = std_params;
	p.thick = true;
	char *path = new_image("thick", &p);
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_ge((long long)st.st_blocks * 512, (long long)p.size);
	struct zlfs_zdev *dev = open_dev(path);
	write_stamped(dev, zstart(dev, 4), 64);
	ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 4), 0);
	ck_assert_uint_eq(zrep(dev, 4).cond, ZLFS_ZC_EMPTY);
	check_zero_dev(dev, zstart(dev, 4), 64 * BLK);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_ge((long long)st.st_blocks * 512, (long long)p.size);
	/* written again after the reset; the flag survives a reopen */
	write_stamped(dev, zstart(dev, 4), 8);
	check_stamped(dev, zstart(dev, 4), 8 * BLK);
	zlfs_zdev_close(dev);
	/* the write pointers live in the image's tail, not in IMAGE.zst */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_ge((long long)st.st_size, (long long)p.size + 4096);
	dev = open_dev(path);
	ck_assert_uint_eq(zrep(dev, 4).wp, zstart(dev, 4) + 8 * BLK);
	check_stamped(dev, zstart(dev, 4), 8 * BLK);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 4), 0);
	check_zero_dev(dev, zstart(dev, 4), 8 * BLK);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_ge((long long)st.st_blocks * 512, (long long)p.size);
	zlfs_zdev_close(dev);
	free(path);
}
END_TEST

/* zlfs_zdev_read_fd's range holds, in the image file, what a read through the device gives. */
static void fd_matches(struct zlfs_zdev *dev, uint64_t off, uint64_t len)
{
	int fd = -1;
	uint64_t pos = ~0ull;

	ck_assert_int_eq(zlfs_zdev_read_fd(dev, off, len, &fd, &pos), 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(pos, off);
	uint8_t *a = rd(dev, off, len), *b = malloc(len);
	ck_assert_int_eq(pread(fd, b, len, (off_t)pos), (ssize_t)len);
	ck_assert_msg(!memcmp(a, b, len), "the file differs from the device at %llu",
		      (unsigned long long)off);
	free(a);
	free(b);
}

static int try_fd(struct zlfs_zdev *dev, uint64_t off, uint64_t len)
{
	int fd;
	uint64_t pos;

	return zlfs_zdev_read_fd(dev, off, len, &fd, &pos);
}

/*
 * The file behind a read (splice's source in the FUSE layer) is offered
 * only where it holds what a read gives: data below a write pointer (a
 * thick image keeps a reset zone's old bytes in the file: never offered),
 * conventional zones, no service model, fault or power cut to act on the
 * read, no offline zone; every offer counts as a read.
 */
START_TEST(test_read_fd)
{
	struct zlfs_image_params p = std_params;
	p.thick = true;
	char *path = new_image("readfd", &p);
	struct zlfs_zdev *dev = open_dev(path);
	struct zlfs_zdev_stats st0, st1;

	write_stamped(dev, zstart(dev, 4), 16);
	ck_assert_int_eq(zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, 4), 0);
	write_stamped(dev, zstart(dev, 4), 8);
	write_stamped(dev, zstart(dev, 1) + 4 * MB - 4 * BLK, 4);
	write_stamped(dev, zstart(dev, 2), 4);
	zlfs_zdev_stats(dev, &st0);
	fd_matches(dev, zstart(dev, 4), 8 * BLK);
	fd_matches(dev, zstart(dev, 4) + 3 * BLK, BLK);
	fd_matches(dev, zstart(dev, 0), 4 * MB);                    /* conventional, unwritten */
	fd_matches(dev, zstart(dev, 1) + 4 * MB - 4 * BLK, 8 * BLK);  /* across a zone boundary */
	zlfs_zdev_stats(dev, &st1);
	ck_assert_uint_eq(st1.reads - st0.reads, 8);   /* each fd_matches: an offer and a read */
	/* the old bytes of the reset zone are in the file, past the write pointer */
	ck_assert_int_eq(try_fd(dev, zstart(dev, 4), 9 * BLK), -EOPNOTSUPP);
	ck_assert_int_eq(try_fd(dev, zstart(dev, 4) + 8 * BLK, BLK), -EOPNOTSUPP);
	ck_assert_int_eq(try_fd(dev, zstart(dev, 5), BLK), -EOPNOTSUPP);
	ck_assert_int_eq(try_fd(dev, zstart(dev, 2), 5 * BLK), -EOPNOTSUPP);
	/* bad ranges */
	ck_assert_int_eq(try_fd(dev, zstart(dev, 4), 0), -EINVAL);
	ck_assert_int_eq(try_fd(dev, zstart(dev, 4) + 1, BLK), -EINVAL);
	ck_assert_int_eq(try_fd(dev, p.size - BLK, 2 * BLK), -EINVAL);
	/* what must act on a read takes the device's own path */
	ck_assert_int_eq(zlfs_zdev_fault_arm(dev, ZLFS_FAULT_READ, 1, false), 0);
	ck_assert_int_eq(try_fd(dev, zstart(dev, 4), BLK), -EOPNOTSUPP);
	zlfs_zdev_fault_clear(dev);
	ck_assert_int_eq(try_fd(dev, zstart(dev, 4), BLK), 0);
	ck_assert_int_eq(zlfs_zdev_set_zone_cond(dev, 2, ZLFS_ZC_OFFLINE), 0);
	ck_assert_int_eq(try_fd(dev, zstart(dev, 2), BLK), -EOPNOTSUPP);
	ck_assert_int_eq(try_fd(dev, zstart(dev, 4), BLK), 0);
	ck_assert_int_eq(zlfs_zdev_powercut_arm(dev, 0, 1), 0);
	ck_assert_int_eq(try_fd(dev, zstart(dev, 4), BLK), -EOPNOTSUPP);
	ck_assert_int_eq(zlfs_zdev_powercut(dev), 0);
	ck_assert_int_eq(try_fd(dev, zstart(dev, 0), BLK), -EOPNOTSUPP);
	zlfs_zdev_close(dev);
	dev = open_with(path, "lat_us=10");
	ck_assert_int_eq(try_fd(dev, zstart(dev, 0), BLK), -EOPNOTSUPP);
	zlfs_zdev_close(dev);
	dev = open_dev("mem:size=64M,zone_size=4M,conv_zones=2");
	ck_assert_int_eq(try_fd(dev, zstart(dev, 0), BLK), -EOPNOTSUPP);
	zlfs_zdev_close(dev);
	free(path);
}
END_TEST

START_TEST(test_second_open_busy)
{
	char *path = new_image("busy", &std_params);
	struct zlfs_zdev *dev = open_dev(path), *dev2 = NULL;

	ck_assert_int_eq(zlfs_zdev_open(path, &dev2), -EBUSY);
	ck_assert_ptr_null(dev2);
	ck_assert_ptr_nonnull(strstr(zlfs_zdev_errmsg(), "in use"));
	char spec[600];
	snprintf(spec, sizeof(spec), "%s?qd=4,lat_us=10", path);
	ck_assert_int_eq(zlfs_zdev_open(spec, &dev2), -EBUSY);
	/* another process is refused too */
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct zlfs_zdev *d3;
		_exit(zlfs_zdev_open(path, &d3) == -EBUSY ? 0 : 1);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* the first one is unaffected */
	write_stamped(dev, zstart(dev, 2), 4);
	check_stamped(dev, zstart(dev, 2), 4 * BLK);
	zlfs_zdev_close(dev);
	dev = open_dev(path);
	check_stamped(dev, zstart(dev, 2), 4 * BLK);
	zlfs_zdev_close(dev);
	free(path);
}
END_TEST

/* ---- the io_uring path ------------------------------------------------------------------- */

struct acmd {
	struct zlfs_cmd cmd;
	struct iovec iov;
	uint8_t *buf;
	struct azone *az;
	bool busy;
};

struct azone {
	struct zlfs_zdev *dev;
	uint32_t zone;
	uint32_t nblocks, per_cmd, qd;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	uint32_t inflight;
	uint32_t done, bad, other_thread;
	pthread_t submitter;
};

static void acmd_done(struct zlfs_cmd *c)
{
	struct acmd *a = (struct acmd *)c;
	struct azone *az = a->az;

	pthread_mutex_lock(&az->lock);
	if (c->result || c->pos != c->off)
		az->bad++;
	if (!pthread_equal(pthread_self(), az->submitter))
		az->other_thread++;
	a->busy = false;
	az->inflight--;
	az->done++;
	pthread_cond_broadcast(&az->cv);
	pthread_mutex_unlock(&az->lock);
}

/* One thread per zone: stamped writes in LBA order, qd of them in flight. */
static void *zone_writer(void *arg)
{
	struct azone *az = arg;
	struct acmd *slots = calloc(az->qd, sizeof(*slots));
	uint64_t start = zstart(az->dev, az->zone);
	uint32_t ncmds = az->nblocks / az->per_cmd;

	az->submitter = pthread_self();
	for (uint32_t s = 0; s < az->qd; s++) {
		slots[s].buf = malloc((size_t)az->per_cmd * BLK);
		slots[s].az = az;
	}
	for (uint32_t i = 0; i < ncmds; i++) {
		struct acmd *a = &slots[i % az->qd];
		pthread_mutex_lock(&az->lock);
		while (a->busy)
			pthread_cond_wait(&az->cv, &az->lock);
		a->busy = true;
		az->inflight++;
		pthread_mutex_unlock(&az->lock);
		uint64_t off = start + (uint64_t)i * az->per_cmd * BLK;
		for (uint32_t k = 0; k < az->per_cmd; k++)
			stamp(a->buf + (size_t)k * BLK, off / BLK + k, lba_seq(off / BLK + k));
		memset(&a->cmd, 0, sizeof(a->cmd));
		a->iov.iov_base = a->buf;
		a->iov.iov_len = (size_t)az->per_cmd * BLK;
		a->cmd.op = ZLFS_OP_WRITE;
		a->cmd.off = off;
		a->cmd.iov = &a->iov;
		a->cmd.iovcnt = 1;
		a->cmd.done = acmd_done;
		if (zlfs_zdev_submit(az->dev, &a->cmd)) {
			pthread_mutex_lock(&az->lock);
			az->bad++;
			a->busy = false;
			az->inflight--;
			az->done++;
			pthread_mutex_unlock(&az->lock);
		}
	}
	pthread_mutex_lock(&az->lock);
	while (az->done < ncmds)
		pthread_cond_wait(&az->cv, &az->lock);
	pthread_mutex_unlock(&az->lock);
	for (uint32_t s = 0; s < az->qd; s++)
		free(slots[s].buf);
	free(slots);
	return NULL;
}

struct reader {
	struct zlfs_zdev *dev;
	atomic_int stop, bad, reads;
};

static void *conv_reader(void *arg)
{
	struct reader *r = arg;
	uint8_t *want = pattern(64 * KB, 77), *got = malloc(64 * KB);

	while (!atomic_load(&r->stop)) {
		memset(got, 0, 64 * KB);
		if (zlfs_zdev_read(r->dev, got, 64 * KB, 3 * MB) || memcmp(got, want, 64 * KB))
			atomic_fetch_add(&r->bad, 1);
		atomic_fetch_add(&r->reads, 1);
	}
	free(want);
	free(got);
	return NULL;
}

/*
 * _i 0: shortpath=0, every write through io_uring, completed on the ring
 * thread; _i 1: the default short path, where writes this small run and
 * complete on the thread that submits them (zemu.c, inline_ok).
 */
START_TEST(test_uring_concurrent_zones)
{
	char *path = new_image("uring", &std_params);
	char *spec;
	ck_assert_int_ge(asprintf(&spec, "%s%s", path, _i ? "" : "?shortpath=0"), 0);
	struct zlfs_zdev *dev = open_dev(spec);
	free(spec);
	struct azone az[8];
	pthread_t th[8], rth;
	struct reader rd_ctx = { .dev = dev };
	uint8_t *cdata = pattern(64 * KB, 77);
	struct zlfs_zdev_stats st;

	ck_assert_int_eq(zlfs_zdev_write(dev, cdata, 64 * KB, 3 * MB), 0);
	ck_assert_int_eq(pthread_create(&rth, NULL, conv_reader, &rd_ctx), 0);
	/*
	 * The writers start once the reader is reading: on a loaded machine
	 * they could otherwise all finish before its first read, and the
	 * test would check nothing concurrent (it failed so, reads == 0).
	 */
	while (!atomic_load(&rd_ctx.reads))
		usleep(1000);
	for (int i = 0; i < 8; i++) {
		memset(&az[i], 0, sizeof(az[i]));
		az[i].dev = dev;
		az[i].zone = 2 + (uint32_t)i;
		az[i].nblocks = i % 2 ? 1024 : 768;     /* full zones and partial ones */
		az[i].per_cmd = 1u << (i % 3);          /* 4K, 8K, 16K commands */
		az[i].qd = 16;
		pthread_mutex_init(&az[i].lock, NULL);
		pthread_cond_init(&az[i].cv, NULL);
		ck_assert_int_eq(pthread_create(&th[i], NULL, zone_writer, &az[i]), 0);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	atomic_store(&rd_ctx.stop, 1);
	pthread_join(rth, NULL);
	ck_assert_int_eq(atomic_load(&rd_ctx.bad), 0);
	ck_assert_int_gt(atomic_load(&rd_ctx.reads), 0);
	zlfs_zdev_stats(dev, &st);
	ck_assert_uint_eq(st.unaligned, 0);
	for (int i = 0; i < 8; i++) {
		ck_assert_uint_eq(az[i].bad, 0);
		ck_assert_uint_eq(az[i].other_thread, _i ? 0 : az[i].done);
		struct zlfs_zone z = zrep(dev, az[i].zone);
		ck_assert_uint_eq(z.wp, z.start + (uint64_t)az[i].nblocks * BLK);
		ck_assert_uint_eq(z.cond, az[i].nblocks == 1024 ? ZLFS_ZC_FULL : ZLFS_ZC_IMP_OPEN);
		check_stamped(dev, z.start, (uint64_t)az[i].nblocks * BLK);
	}
	zlfs_zdev_close(dev);
	/* and all of it was persisted */
	dev = open_dev(path);
	for (int i = 0; i < 8; i++) {
		struct zlfs_zone z = zrep(dev, az[i].zone);
		ck_assert_uint_eq(z.wp, z.start + (uint64_t)az[i].nblocks * BLK);
		check_stamped(dev, z.start, (uint64_t)az[i].nblocks * BLK);
	}
	zlfs_zdev_close(dev);
	free(cdata);
	free(path);
}
END_TEST

/*
 * Without a service model a command executes on the thread that submits
 * it.  Threads that submit writes and exit at once (as short-lived worker
 * threads do): every write must still succeed, and no zone may end up
 * read-only.
 */
struct exw {
	struct zlfs_cmd cmd;
	struct iovec iov;
	uint8_t buf[BLK];
};

static atomic_int exw_done, exw_bad, exw_errno;

static void exw_end(struct zlfs_cmd *c)
{
	if (c->result) {
		atomic_fetch_add(&exw_bad, 1);
		atomic_store(&exw_errno, c->result);
	}
	atomic_fetch_add(&exw_done, 1);
}

struct exwt {
	struct zlfs_zdev *dev;
	uint32_t zone;
	uint32_t first, n;
	struct exw *w;
};

static void *exw_thread(void *arg)
{
	struct exwt *t = arg;
	uint64_t start = zstart(t->dev, t->zone);

	for (uint32_t i = t->first; i < t->first + t->n; i++) {
		struct exw *w = &t->w[i];
		uint64_t off = start + (uint64_t)i * BLK;
		stamp(w->buf, off / BLK, lba_seq(off / BLK));
		memset(&w->cmd, 0, sizeof(w->cmd));
		w->iov.iov_base = w->buf;
		w->iov.iov_len = BLK;
		w->cmd.op = ZLFS_OP_WRITE;
		w->cmd.off = off;
		w->cmd.iov = &w->iov;
		w->cmd.iovcnt = 1;
		w->cmd.done = exw_end;
		if (zlfs_zdev_submit(t->dev, &w->cmd))
			atomic_fetch_add(&exw_bad, 1000);
	}
	return NULL;   /* at once, writes still in flight */
}

START_TEST(test_submitter_thread_exits)
{
	char *path = new_image("exits", &std_params);
	struct zlfs_zdev *dev = open_dev(path);
	struct exwt t[4];
	pthread_t th[4];
	uint32_t per = 256, rounds = 4;

	atomic_store(&exw_done, 0);
	atomic_store(&exw_bad, 0);
	for (int i = 0; i < 4; i++) {
		t[i].dev = dev;
		t[i].zone = 2 + (uint32_t)i;
		t[i].n = per;
		t[i].w = calloc(per * rounds, sizeof(struct exw));
	}
	for (uint32_t r = 0; r < rounds; r++) {
		for (int i = 0; i < 4; i++) {
			t[i].first = r * per;
			ck_assert_int_eq(pthread_create(&th[i], NULL, exw_thread, &t[i]), 0);
		}
		for (int i = 0; i < 4; i++)
			pthread_join(th[i], NULL);
		for (int ms = 0; ms < 20000 && atomic_load(&exw_done) < (int)((r + 1) * 4 * per); ms++)
			usleep(1000);
		ck_assert_int_eq(atomic_load(&exw_done), (int)((r + 1) * 4 * per));
	}
	for (int i = 0; i < 4; i++)
		ck_assert_msg(zrep(dev, 2 + (uint32_t)i).cond == ZLFS_ZC_FULL,
			      "zone %d is %s after its writer threads exited", 2 + i,
			      zlfs_zone_cond_str(zrep(dev, 2 + (uint32_t)i).cond));
	ck_assert_msg(atomic_load(&exw_bad) == 0, "%d writes failed (%s) after their submitting "
		      "thread exited", atomic_load(&exw_bad),
		      zlfs_zdev_strerror(atomic_load(&exw_errno)));
	for (int i = 0; i < 4; i++)
		check_stamped(dev, zstart(dev, 2 + (uint32_t)i), (uint64_t)per * rounds * BLK);
	zlfs_zdev_close(dev);
	dev = open_dev(path);
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(zrep(dev, 2 + (uint32_t)i).cond, ZLFS_ZC_FULL);
		free(t[i].w);
	}
	zlfs_zdev_close(dev);
	free(path);
}
END_TEST

/* ---- service models on an image --------------------------------------------------------- */

struct dw {
	struct zlfs_bio bio;
	uint8_t buf[BLK];
	struct dwrun *r;
};

struct dwrun {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	uint32_t inflight, done, failed;
};

static void dw_end(struct zlfs_bio *b)
{
	struct dw *w = (struct dw *)b;
	struct dwrun *r = w->r;

	pthread_mutex_lock(&r->lock);
	if (b->result || b->pos != b->off)
		r->failed++;
	r->inflight--;
	r->done++;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->lock);
}

/*
 * Through a NOLOCK dispatcher: nz zones x per stamped 4K writes with
 * ZLFS_BIO_NO_ZWL, in LBA order per zone, 32 in flight.
 */
static void nolock_run(struct zlfs_zdev *dev, uint32_t nz, uint32_t per, struct zlfs_disp_stats *st)
{
	struct zlfs_disp_opts o;
	struct zlfs_disp *d;
	struct dwrun r = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 };
	struct dw *w = calloc((size_t)nz * per, sizeof(*w));

	zlfs_disp_opts_default(&o);
	o.mode = ZLFS_MODE_NOLOCK;
	o.nomerges = 1;
	ck_assert_int_eq(zlfs_disp_create(dev, &o, &d), 0);
	for (uint32_t i = 0; i < nz; i++)
		ck_assert_int_eq(zlfs_disp_zone_mgmt(d, ZLFS_ZM_RESET, 2 + i), 0);
	for (uint32_t k = 0; k < nz * per; k++) {
		uint32_t z = 2 + k % nz;
		uint64_t off = zstart(dev, z) + (uint64_t)(k / nz) * BLK;
		pthread_mutex_lock(&r.lock);
		while (r.inflight >= 32)
			pthread_cond_wait(&r.cv, &r.lock);
		r.inflight++;
		pthread_mutex_unlock(&r.lock);
		stamp(w[k].buf, off / BLK, lba_seq(off / BLK));
		w[k].r = &r;
		w[k].bio.op = ZLFS_OP_WRITE;
		w[k].bio.flags = ZLFS_BIO_NO_ZWL;
		w[k].bio.off = off;
		w[k].bio.buf = w[k].buf;
		w[k].bio.len = BLK;
		w[k].bio.end = dw_end;
		ck_assert_int_eq(zlfs_disp_submit(d, &w[k].bio), 0);
	}
	pthread_mutex_lock(&r.lock);
	while (r.done < nz * per)
		pthread_cond_wait(&r.cv, &r.lock);
	pthread_mutex_unlock(&r.lock);
	zlfs_disp_drain(d);
	zlfs_disp_stats(d, st);
	ck_assert_uint_eq(r.failed, 0);
	ck_assert_uint_eq(st->failed, 0);
	for (uint32_t i = 0; i < nz; i++) {
		struct zlfs_zone z = zrep(dev, 2 + i);
		ck_assert_uint_eq(z.wp, z.start + (uint64_t)per * BLK);
		check_stamped(dev, z.start, (uint64_t)per * BLK);
	}
	zlfs_disp_destroy(d);
	free(w);
}

static void image_svc_case(const char *name, const char *opts)
{
	char *path = new_image(name, &std_params);
	struct zlfs_zdev *dev;
	struct zlfs_disp_stats st;
	struct zlfs_zdev_stats ds;

	/* without a service model (inline io_uring) too */
	dev = open_dev(path);
	nolock_run(dev, 4, 512, &st);
	zlfs_zdev_close(dev);

	dev = open_with(path, opts);
	ck_assert_uint_eq(zlfs_zdev_geom(dev)->kind, ZLFS_DEV_IMAGE);
	uint64_t unaligned = 0;
	for (int round = 0; round < 6 && !unaligned; round++) {
		nolock_run(dev, 4, 1024, &st);
		unaligned += st.unaligned;
		if (st.unaligned)
			ck_assert_uint_gt(st.retries, 0);
	}
	zlfs_zdev_stats(dev, &ds);
	ck_assert_msg(unaligned > 0, "%s: no unaligned write errors", opts);
	ck_assert_uint_gt(ds.unaligned, 0);
	ck_assert_uint_gt(ds.hibernations + ds.requeues, 0);
	zlfs_zdev_close(dev);
	/* the persisted state agrees with what the writes did */
	dev = open_dev(path);
	for (uint32_t i = 0; i < 4; i++) {
		struct zlfs_zone z = zrep(dev, 2 + i);
		ck_assert_uint_eq(z.wp, z.start + 1024ull * BLK);
		ck_assert_uint_eq(z.cond, ZLFS_ZC_FULL);
		check_stamped(dev, z.start, 1024ull * BLK);
	}
	zlfs_zdev_close(dev);
	free(path);
}

START_TEST(test_image_service_model)
{
	image_svc_case("svc1", "qd=16,lat_us=20,hibernate_ms=1");
}
END_TEST

START_TEST(test_image_service_model_four_queues)
{
	image_svc_case("svc4", "queues=4,qd=8,lat_us=20,hibernate_ms=1");
}
END_TEST

/* ---- kill test ------------------------------------------------------------------------ */

#define KZONES 4
#define KZ0 2u          /* first zone the child writes */
#define KFLUSH 4u       /* a flush every KFLUSH rounds */
/* 128M image of 8 zones of 16M: zones 0-1 conventional */
static const struct zlfs_image_params kill_params = {
	.size = 128 * MB, .zone_size = 16 * MB, .nr_conv = 2,
};
#define KBLOCKS 4u      /* blocks per write */
#define KQD 4u          /* writes in flight per zone */

struct krec {
	uint32_t type;      /* 1: about to submit up to wp; 2: a flush covered wp */
	uint32_t zone;
	uint64_t wp;
};

struct kslot {
	struct zlfs_cmd cmd;
	struct iovec iov;
	uint8_t buf[KBLOCKS * BLK];
};

static pthread_mutex_t k_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t k_cv = PTHREAD_COND_INITIALIZER;
static uint32_t k_inflight, k_errors;

static void kslot_done(struct zlfs_cmd *c)
{
	pthread_mutex_lock(&k_lock);
	if (c->result)
		k_errors++;
	k_inflight--;
	pthread_cond_broadcast(&k_cv);
	pthread_mutex_unlock(&k_lock);
}

static void kput(int fd, uint32_t type, uint32_t zone, uint64_t wp)
{
	struct krec r = { type, zone, wp };

	if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(3);
}

/* The child: write until killed (or the zones are full). Never returns. */
static void kill_child(const char *path, int fd)
{
	struct zlfs_zdev *dev;
	static struct kslot slots[KZONES][KQD];
	uint64_t next[KZONES];

	if (zlfs_zdev_open(path, &dev))
		_exit(2);
	uint64_t zs = zlfs_zdev_geom(dev)->zone_size;
	for (uint32_t z = 0; z < KZONES; z++)
		next[z] = (KZ0 + z) * zs;
	for (uint32_t round = 0;; round++) {
		bool any = false;
		for (uint32_t q = 0; q < KQD; q++) {
			for (uint32_t z = 0; z < KZONES; z++) {
				uint64_t off = next[z];
				if (off + KBLOCKS * BLK > (KZ0 + z + 1) * zs)
					continue;
				struct kslot *s = &slots[z][q];
				for (uint32_t k = 0; k < KBLOCKS; k++)
					stamp(s->buf + k * BLK, off / BLK + k, lba_seq(off / BLK + k));
				memset(&s->cmd, 0, sizeof(s->cmd));
				s->iov.iov_base = s->buf;
				s->iov.iov_len = sizeof(s->buf);
				s->cmd.op = ZLFS_OP_WRITE;
				s->cmd.off = off;
				s->cmd.iov = &s->iov;
				s->cmd.iovcnt = 1;
				s->cmd.done = kslot_done;
				next[z] = off + sizeof(s->buf);
				kput(fd, 1, KZ0 + z, next[z]);
				pthread_mutex_lock(&k_lock);
				k_inflight++;
				pthread_mutex_unlock(&k_lock);
				if (zlfs_zdev_submit(dev, &s->cmd))
					_exit(4);
				any = true;
			}
		}
		pthread_mutex_lock(&k_lock);
		while (k_inflight)
			pthread_cond_wait(&k_cv, &k_lock);
		bool err = k_errors;
		pthread_mutex_unlock(&k_lock);
		if (err)
			_exit(5);
		if (!any)
			break;
		if (round % KFLUSH == KFLUSH - 1) {
			if (zlfs_zdev_flush(dev))
				_exit(6);
			/* everything completed before the flush is covered by it */
			for (uint32_t z = 0; z < KZONES; z++)
				kput(fd, 2, KZ0 + z, next[z]);
		}
	}
	zlfs_zdev_flush(dev);
	zlfs_zdev_close(dev);
	_exit(0);
}

START_TEST(test_kill_child)
{
	char *path = tu_path("kill");
	uint64_t rng = 0x2545f4914f6cdd1dull;
	int finished_early = 0, with_flush = 0, busy_retries = 0;

	for (int iter = 0; iter < 10; iter++) {
		ck_assert_int_eq(zlfs_image_create(path, &kill_params, true), 0);
		int pfd[2];
		ck_assert_int_eq(pipe(pfd), 0);
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			close(pfd[0]);
			kill_child(path, pfd[1]);
		}
		close(pfd[1]);
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		useconds_t delay = (useconds_t)(5000 + rng % 150000);
		usleep(delay);
		kill(pid, SIGKILL);
		int status;
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		if (WIFEXITED(status)) {
			ck_assert_msg(WEXITSTATUS(status) == 0, "child failed with %d", WEXITSTATUS(status));
			finished_early++;
		}
		uint64_t written[16], flushed[16];
		for (uint32_t z = 0; z < 16; z++)
			written[z] = flushed[z] = z * kill_params.zone_size;
		struct krec r;
		ssize_t n;
		while ((n = read(pfd[0], &r, sizeof(r))) == (ssize_t)sizeof(r)) {
			ck_assert_uint_lt(r.zone, 16);
			if (r.type == 1 && r.wp > written[r.zone])
				written[r.zone] = r.wp;
			if (r.type == 2 && r.wp > flushed[r.zone])
				flushed[r.zone] = r.wp;
		}
		ck_assert_int_eq(n, 0);
		close(pfd[0]);

		struct zlfs_zdev *dev = open_after_kill(path, &busy_retries);
		for (uint32_t z = KZ0; z < KZ0 + KZONES; z++) {
			struct zlfs_zone zz = zrep(dev, z);
			if (flushed[z] > zz.start)
				with_flush++;
			ck_assert_msg(zz.wp <= written[z], "iter %d zone %u: wp %llu beyond what was "
				      "written (%llu)", iter, z, (unsigned long long)(zz.wp - zz.start),
				      (unsigned long long)(written[z] - zz.start));
			ck_assert_msg(zz.wp >= flushed[z], "iter %d zone %u: wp %llu, but a flush "
				      "covered %llu", iter, z, (unsigned long long)(zz.wp - zz.start),
				      (unsigned long long)(flushed[z] - zz.start));
			ck_assert(zz.cond == ZLFS_ZC_EMPTY || zz.cond == ZLFS_ZC_CLOSED ||
				  zz.cond == ZLFS_ZC_FULL);
			check_stamped(dev, zz.start, zz.wp - zz.start);
			if (written[z] > zz.wp)
				check_zero_dev(dev, zz.wp, written[z] - zz.wp);
		}
		/* the image is usable: the zones take writes at their wp */
		struct zlfs_zone zz = zrep(dev, KZ0);
		if (zz.wp < zz.start + zz.cap)
			write_stamped(dev, zz.wp, 1);
		zlfs_zdev_close(dev);
	}
	if (getenv("ZLFS_TEST_VERBOSE"))
		fprintf(stderr, "kill test: %d of 10 children finished before the kill, %d zones had "
			"a completed flush, %d EBUSY retries on reopen\n", finished_early, with_flush,
			busy_retries);
	/* the kills did land in the middle of things */
	ck_assert_int_lt(finished_early, 10);
	ck_assert_int_gt(with_flush, 0);
	free(path);
}
END_TEST

/*
 * The short path completes a write on the thread that submits it, inside
 * zlfs_disp_submit.  A submitter that holds its own lock around the call,
 * with an end() that takes the same lock (zlfs-bench does), must not
 * deadlock: without ZLFS_BIO_END_INLINE end() runs on another thread.
 * With the flag, end() runs on the submitter's thread.  (A hang found by
 * tests/blk/check-tools.sh.)
 */
struct lockd {
	struct zlfs_bio bio;
	pthread_mutex_t *lock;
	pthread_t submitter;
	atomic_int ended, same_thread;
};

static void lockd_end(struct zlfs_bio *bio)
{
	struct lockd *l = (struct lockd *)bio;

	pthread_mutex_lock(l->lock);
	if (pthread_equal(pthread_self(), l->submitter))
		atomic_fetch_add(&l->same_thread, 1);
	atomic_fetch_add(&l->ended, 1);
	pthread_mutex_unlock(l->lock);
}

static void sp_end(struct zlfs_bio *bio)
{
	struct lockd *l = (struct lockd *)bio;

	if (pthread_equal(pthread_self(), l->submitter))
		atomic_fetch_add(&l->same_thread, 1);
	atomic_fetch_add(&l->ended, 1);
}

START_TEST(test_shortpath_end_thread)
{
	char *path = new_image("shortend", &std_params);
	struct zlfs_zdev *dev = open_dev(path);
	struct zlfs_disp_opts o;
	struct zlfs_disp *d;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	uint8_t *buf = pattern(BLK, 9);
	struct zlfs_zdev_stats st;

	zlfs_disp_opts_default(&o);
	ck_assert_int_eq(zlfs_disp_create(dev, &o, &d), 0);
	struct lockd *l = calloc(16, sizeof(*l));
	for (int i = 0; i < 16; i++) {
		l[i].lock = &lock;
		l[i].submitter = pthread_self();
		l[i].bio.op = ZLFS_OP_WRITE;
		l[i].bio.prio = ZLFS_PRIO_BE;
		l[i].bio.flags = ZLFS_BIO_NO_ZWL | (i >= 8 ? ZLFS_BIO_END_INLINE : 0);
		l[i].bio.off = zstart(dev, 4) + (uint64_t)i * BLK;
		l[i].bio.buf = buf;
		l[i].bio.len = BLK;
		l[i].bio.end = i >= 8 ? sp_end : lockd_end;
		/* the submitter's lock held around the call, as zlfs-bench holds it */
		pthread_mutex_lock(&lock);
		ck_assert_int_eq(zlfs_disp_submit(d, &l[i].bio), 0);
		pthread_mutex_unlock(&lock);
	}
	zlfs_disp_drain(d);
	for (int i = 0; i < 16; i++) {
		ck_assert_int_eq(atomic_load(&l[i].ended), 1);
		ck_assert_int_eq(l[i].bio.result, 0);
		/* without the flag never inside the call; with it, done there */
		ck_assert_int_eq(atomic_load(&l[i].same_thread), i >= 8 ? 1 : 0);
	}
	zlfs_zdev_stats(dev, &st);
	ck_assert_uint_ge(st.inline_cmds, 16);
	zlfs_disp_destroy(d);
	zlfs_zdev_close(dev);
	free(l);
	free(buf);
	free(path);
}
END_TEST

/* ---- power cut on an image -------------------------------------------------------------- */

/*
 * _i 1: the default short path (the flush done on this thread, as fsync's
 * is); _i 0: shortpath=0, the flush through io_uring.  Either way what the
 * flush covered survives the cut.
 */
START_TEST(test_image_powercut)
{
	char *path = tu_path("pcut"), *spec;

	ck_assert_int_ge(asprintf(&spec, "%s%s", path, _i ? "" : "?shortpath=0"), 0);
	for (uint64_t seed = 1; seed <= 6; seed++) {
		ck_assert_int_eq(zlfs_image_create(path, &std_params, true), 0);
		struct zlfs_zdev *dev = open_dev(spec);
		struct zlfs_zdev_stats st;
		/* some history before arming can never be lost */
		write_stamped(dev, zstart(dev, 5), 8);
		ck_assert_int_eq(zlfs_zdev_powercut_arm(dev, 0, seed), 0);
		uint64_t flushed[3], written[3];
		for (uint32_t i = 0; i < 3; i++) {
			/* zone 5 already holds 8 blocks from before arming */
			uint64_t from = zstart(dev, 4 + i) + (i == 1 ? 8 * BLK : 0);
			write_stamped(dev, from, 16 + 8 * i);
			flushed[i] = from + (16 + 8 * i) * BLK;
		}
		/* conventional: one block before the flush, one after */
		uint8_t *c1 = pattern(BLK, 100 + seed), *c2 = pattern(BLK, 200 + seed);
		ck_assert_int_eq(zlfs_zdev_write(dev, c1, BLK, 1 * MB), 0);
		zlfs_zdev_stats(dev, &st);
		uint64_t inl = st.inline_cmds;
		ck_assert_int_eq(zlfs_zdev_flush(dev), 0);
		zlfs_zdev_stats(dev, &st);
		ck_assert_uint_eq(st.inline_cmds - inl, _i ? 1 : 0);
		ck_assert_int_eq(zlfs_zdev_write(dev, c2, BLK, 1 * MB), 0);
		for (uint32_t i = 0; i < 3; i++) {
			write_stamped(dev, flushed[i], 20 + (uint32_t)seed * 3);
			written[i] = flushed[i] + (20 + seed * 3) * BLK;
		}
		ck_assert_int_eq(zlfs_zdev_powercut(dev), 0);
		ck_assert(zlfs_zdev_is_dead(dev));
		uint8_t *tmp = malloc(BLK);
		ck_assert_int_eq(zlfs_zdev_write(dev, tmp, BLK, 0), -EIO);
		ck_assert_int_eq(zlfs_zdev_read(dev, tmp, BLK, 0), -EIO);
		free(tmp);
		zlfs_zdev_close(dev);

		dev = open_dev(path);
		ck_assert(!zlfs_zdev_is_dead(dev));
		for (uint32_t i = 0; i < 3; i++) {
			struct zlfs_zone z = zrep(dev, 4 + i);
			ck_assert_msg(z.wp >= flushed[i] && z.wp <= written[i],
				      "seed %llu zone %u: wp %llu outside [%llu, %llu]",
				      (unsigned long long)seed, 4 + i, (unsigned long long)(z.wp - z.start),
				      (unsigned long long)(flushed[i] - z.start),
				      (unsigned long long)(written[i] - z.start));
			ck_assert_uint_eq(z.cond, ZLFS_ZC_CLOSED);
			check_stamped(dev, z.start, z.wp - z.start);
			check_zero_dev(dev, z.wp, written[i] - z.wp);
			uint8_t *raw = raw_rd(path, z.wp, written[i] - z.wp);
			ck_assert_msg(all_zero(raw, written[i] - z.wp),
				      "seed %llu zone %u: the lost writes are still in the image",
				      (unsigned long long)seed, 4 + i);
			free(raw);
		}
		/* the zone written before arming */
		ck_assert_uint_eq(zrep(dev, 5).wp >= zstart(dev, 5) + 8 * BLK, 1);
		check_stamped(dev, zstart(dev, 5), 8 * BLK);
		/* conventional block: the flushed version or the later one */
		uint8_t *b = rd(dev, 1 * MB, BLK);
		ck_assert(!memcmp(b, c1, BLK) || !memcmp(b, c2, BLK));
		free(b);
		zlfs_zdev_close(dev);
		free(c1);
		free(c2);
	}
	free(path);
	free(spec);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("image");
	TCase *tc = tcase_create("files");

	tcase_add_test(tc, test_geometry_from_zst);
	tcase_add_test(tc, test_read_fd);
	tcase_add_test(tc, test_create_validation);
	tcase_add_test(tc, test_open_validation);
	tcase_add_test(tc, test_plain_file);
	tcase_add_test(tc, test_plain_large_zones);
	tcase_add_test(tc, test_plain_large_zones_option);
	tcase_add_test(tc, test_persist_reopen);
	tcase_add_test(tc, test_reset_punches);
	tcase_add_test(tc, test_thick_keeps_blocks);
	tcase_add_test(tc, test_writebehind);
	tcase_add_test(tc, test_second_open_busy);
	tcase_add_loop_test(tc, test_rdonly_open, 0, 2);
	tcase_add_test(tc, test_rdonly_plain);
	tcase_add_test(tc, test_rdonly_protected);
	tcase_add_test(tc, test_rdonly_mem);
	suite_add_tcase(s, tc);

	tc = tcase_create("io");
	tcase_add_loop_test(tc, test_uring_concurrent_zones, 0, 2);
	tcase_add_test(tc, test_image_service_model);
	tcase_add_test(tc, test_submitter_thread_exits);
	suite_add_tcase(s, tc);

	/* a broken pend list can hang the device: fail in 15 s, not 120 */
	tc = tcase_create("io-mq");
	tcase_set_timeout(tc, 15);
	tcase_add_test(tc, test_image_service_model_four_queues);
	suite_add_tcase(s, tc);

	tc = tcase_create("crash");
	tcase_add_test(tc, test_kill_child);
	tcase_add_loop_test(tc, test_image_powercut, 0, 2);
	tcase_add_test(tc, test_shortpath_end_thread);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
