/*
 * zdev_tool.c - zlfs-zdev: create emulated zoned images and look at or
 * reset the zones of any device spec.
 *
 *   zlfs-zdev create IMAGE --size SIZE --zone-size SIZE [--zone-capacity SIZE]
 *             [--conv-zones N] [--max-open N] [--max-active N] [--lbs N] [--force]
 *             [--thick]   (every block written now: no host allocation later)
 *   zlfs-zdev report DEVICE [--first N] [--count N]
 *   zlfs-zdev reset DEVICE [ZONE]
 *   zlfs-zdev info DEVICE
 *   zlfs-zdev --help | --version   (also -h, -V)
 * Usage errors name what was wrong and exit 1, as any failure (util-linux's
 * convention, blkzone's); the device layer's messages name the path, said
 * once.
 * report and info open the device read-only (ZLFS_ZDEV_RDONLY): they work
 * on write-protected images and devices and change nothing, IMAGE.zst
 * included.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zlfs/zdev.h"

#ifndef ZLFS_VERSION
#define ZLFS_VERSION "unknown"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zlfs-zdev create IMAGE --size SIZE --zone-size SIZE [--zone-capacity SIZE]\n"
		"                 [--conv-zones N] [--max-open N] [--max-active N] [--lbs 512|4096] [--force]\n"
		"                 [--thick]\n"
		"       zlfs-zdev report DEVICE [--first N] [--count N]\n"
		"       zlfs-zdev reset DEVICE [ZONE]\n"
		"       zlfs-zdev info DEVICE\n"
		"       zlfs-zdev --help | --version\n"
		"DEVICE is a device spec: /dev/..., an image path, or mem:OPTS (see zlfs-zdev(8)).\n"
		"create options (SIZE in bytes or with K, M, G, T):\n"
		"  -s, --size SIZE            the device's size\n"
		"  -z, --zone-size SIZE       the zone size\n"
		"  -c, --zone-capacity SIZE   the writable part of each zone (default: all)\n"
		"  -n, --conv-zones N         conventional zones at the start (default 0)\n"
		"  -o, --max-open N           open zone limit (default 0: none)\n"
		"  -a, --max-active N         active zone limit (default 0: none)\n"
		"  -l, --lbs N                logical block size, 512 or 4096 (default 4096)\n"
		"  -f, --force                replace an existing IMAGE\n"
		"  -T, --thick                write every block now: no host allocation later\n"
		"report options:\n"
		"  --first N                  the first zone shown (default 0)\n"
		"  --count N                  how many zones (default: all)\n"
		"  -h, --help                 this text\n"
		"  -V, --version              the version\n");
}

static int parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long x = strtoul(s, &end, 0);
	if (!*s || *end || x > UINT32_MAX || *s == '-')
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/* The device layer's message, its leading "PATH: " dropped: the caller names the path once. */
static const char *unnamed(const char *path, const char *msg)
{
	size_t n = strlen(path);
	return !strncmp(msg, path, n) && msg[n] == ':' && msg[n + 1] == ' ' ? msg + n + 2 : msg;
}

/* --NAME of the option whose short letter is c. */
static const char *long_name(const struct option *lo, int c)
{
	static char name[40];

	for (; lo->name; lo++)
		if (lo->val == c) {
			snprintf(name, sizeof(name), "--%s", lo->name);
			return name;
		}
	snprintf(name, sizeof(name), "-%c", c);
	return name;
}

/* A usage error: what was wrong (naming the option), then where the whole usage is. */
static int __attribute__((format(printf, 1, 2))) bad_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "zlfs-zdev: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(zlfs-zdev --help for the usage)\n");
	return 1;
}

static int open_dev(const char *spec, unsigned int flags, struct zlfs_zdev **dev)
{
	int ret = zlfs_zdev_open_flags(spec, flags, dev);
	if (ret) {
		/* the errno only when the message does not say it already */
		const char *msg = unnamed(spec, zlfs_zdev_errmsg()), *e = strerror(-ret);
		fprintf(stderr, "zlfs-zdev: %s: %s%s%s%s\n", spec, msg, strstr(msg, e) ? "" : " (",
			strstr(msg, e) ? "" : e, strstr(msg, e) ? "" : ")");
	}
	return ret;
}

static int cmd_create(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "zone-size", required_argument, NULL, 'z' },
		{ "zone-capacity", required_argument, NULL, 'c' },
		{ "conv-zones", required_argument, NULL, 'n' },
		{ "max-open", required_argument, NULL, 'o' },
		{ "max-active", required_argument, NULL, 'a' },
		{ "lbs", required_argument, NULL, 'l' },
		{ "force", no_argument, NULL, 'f' },
		{ "thick", no_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	struct zlfs_image_params p = { 0 };
	bool force = false;
	int c, bad = 0;

	optind = 1;
	opterr = 0;   /* said below, naming the option */
	while ((c = getopt_long(argc, argv, ":s:z:c:n:o:a:l:fT", lo, NULL)) != -1) {
		int was = bad;
		switch (c) {
		case 's': bad |= zlfs_parse_size(optarg, &p.size); break;
		case 'z': bad |= zlfs_parse_size(optarg, &p.zone_size); break;
		case 'c': bad |= zlfs_parse_size(optarg, &p.zone_cap); break;
		case 'n': bad |= parse_u32(optarg, &p.nr_conv); break;
		case 'o': bad |= parse_u32(optarg, &p.max_open); break;
		case 'a': bad |= parse_u32(optarg, &p.max_active); break;
		case 'l': bad |= parse_u32(optarg, &p.lbs); break;
		case 'f': force = true; break;
		case 'T': p.thick = true; break;
		case ':': return bad_usage("create: %s needs a value", long_name(lo, optopt));
		default:
			return bad_usage("create: unknown option %s", optopt ? (char[]){ '-', (char)optopt, 0 }
								    : argv[optind - 1]);
		}
		if (bad != was)
			return bad_usage("create: %s: not a number or size", long_name(lo, c));
	}
	if (optind != argc - 1)
		return bad_usage("create: %s", optind < argc ? "one IMAGE only" : "no IMAGE given");
	if (!p.size || !p.zone_size)
		return bad_usage("create: %s", !p.size ? "--size SIZE is needed (not 0)" :
				 "--zone-size SIZE is needed (not 0)");
	int ret = zlfs_image_create(argv[optind], &p, force);
	if (ret) {
		fprintf(stderr, "zlfs-zdev: create %s: %s%s\n", argv[optind],
			unnamed(argv[optind], zlfs_zdev_errmsg()),
			ret == -EEXIST ? " (--force replaces it)" : "");
		return 1;
	}
	printf("created %s: %llu bytes, %llu zones of %llu bytes (capacity %llu), %u conventional\n",
	       argv[optind], (unsigned long long)p.size,
	       (unsigned long long)(p.size / p.zone_size), (unsigned long long)p.zone_size,
	       (unsigned long long)(p.zone_cap ? p.zone_cap : p.zone_size), p.nr_conv);
	return 0;
}

static void print_info(struct zlfs_zdev *dev)
{
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(dev);

	printf("device:        %s\n", zlfs_zdev_spec(dev));
	printf("kind:          %s\n", zlfs_zdev_kind_str(g->kind));
	printf("zoned:         %s\n", g->zoned ? "host-managed" : "no");
	printf("size:          %llu bytes\n", (unsigned long long)g->size);
	printf("block size:    %u\n", g->lbs);
	printf("zone size:     %llu\n", (unsigned long long)g->zone_size);
	printf("zone capacity: %llu\n", (unsigned long long)g->zone_cap);
	printf("zones:         %u (%u conventional)\n", g->nr_zones, g->nr_conv);
	printf("max open:      %u%s\n", g->max_open, g->max_open ? "" : " (no limit)");
	printf("max active:    %u%s\n", g->max_active, g->max_active ? "" : " (no limit)");
	printf("queue depth:   %u\n", g->depth);
	printf("no zone write lock: %s\n", g->no_zwl ? "yes" : "no");
}

static int cmd_report(struct zlfs_zdev *dev, uint32_t first, uint32_t count)
{
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(dev);
	struct zlfs_zone zs[128];

	if (first > g->nr_zones)
		first = g->nr_zones;
	if (!count || count > g->nr_zones - first)
		count = g->nr_zones - first;
	printf("Device %s: %u zones\n", zlfs_zdev_spec(dev), g->nr_zones);
	while (count) {
		uint32_t n = count < 128 ? count : 128;
		int ret = zlfs_zdev_report(dev, first, zs, &n);
		if (ret || !n) {
			fprintf(stderr, "zlfs-zdev: report: %s\n", zlfs_zdev_strerror(ret ? ret : -EIO));
			return 1;
		}
		for (uint32_t i = 0; i < n; i++) {
			const struct zlfs_zone *z = &zs[i];
			printf("Zone %06u: start 0x%012llx, len 0x%09llx, cap 0x%09llx, wp 0x%09llx, "
			       "%s, %s\n", first + i, (unsigned long long)z->start,
			       (unsigned long long)z->len, (unsigned long long)z->cap,
			       (unsigned long long)(z->type == ZLFS_ZONE_CONV ? 0 : z->wp - z->start),
			       z->type == ZLFS_ZONE_CONV ? "conv" : "swr", zlfs_zone_cond_str(z->cond));
		}
		first += n;
		count -= n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct zlfs_zdev *dev;
	int ret;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf("zlfs-zdev %s\n", ZLFS_VERSION);
		return 0;
	}
	if (argc < 2)
		return bad_usage("%s", "no command given (create, report, reset or info)");
	if (!strcmp(argv[1], "create"))
		return cmd_create(argc - 1, argv + 1);
	if (strcmp(argv[1], "report") && strcmp(argv[1], "reset") && strcmp(argv[1], "info"))
		return bad_usage("unknown command %s (create, report, reset or info)", argv[1]);
	if (argc < 3)
		return bad_usage("%s: no DEVICE given", argv[1]);
	/* the arguments first: nothing is opened for a command that cannot run */
	uint32_t first = 0, count = 0, zone = ZLFS_ZONE_ALL;
	for (int i = 3; i < argc; i++) {
		bool report = !strcmp(argv[1], "report");
		if (report && (!strcmp(argv[i], "--first") || !strcmp(argv[i], "--count"))) {
			if (i + 1 == argc)
				return bad_usage("report: %s needs a number", argv[i]);
			if (parse_u32(argv[i + 1], argv[i][2] == 'f' ? &first : &count))
				return bad_usage("report: %s: not a number", argv[i]);
			i++;
		} else if (!strcmp(argv[1], "reset") && i == 3) {
			if (parse_u32(argv[i], &zone))
				return bad_usage("reset: ZONE %s: not a zone number", argv[i]);
		} else {
			return bad_usage("%s: unexpected argument %s", argv[1], argv[i]);
		}
	}
	/* info and report only look: read-only, so write-protected images open */
	if (open_dev(argv[2], strcmp(argv[1], "reset") ? ZLFS_ZDEV_RDONLY : 0, &dev))
		return 1;
	if (!strcmp(argv[1], "info")) {
		print_info(dev);
		ret = 0;
	} else if (!strcmp(argv[1], "report")) {
		ret = cmd_report(dev, first, count);
	} else {
		ret = zlfs_zdev_zone_mgmt(dev, ZLFS_ZM_RESET, zone);
		if (ret)
			fprintf(stderr, "zlfs-zdev: reset: %s\n", zlfs_zdev_strerror(ret));
		else if ((ret = zlfs_zdev_flush(dev)))
			fprintf(stderr, "zlfs-zdev: flush: %s\n", zlfs_zdev_strerror(ret));
		ret = ret ? 1 : 0;
	}
	zlfs_zdev_close(dev);
	return ret;
}
