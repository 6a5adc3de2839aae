/*
 * zdev_int.h - what the device backends share behind include/zlfs/zdev.h.
 *
 * A backend embeds struct zlfs_zdev first and fills ops.  zdev.c routes
 * public calls through ops; optional ops may be NULL (-EOPNOTSUPP).
 */
#ifndef ZLFS_ZDEV_INT_H
#define ZLFS_ZDEV_INT_H

#include <stdarg.h>
#include <stdint.h>
#include <time.h>

#include "zlfs/zdev.h"

struct zdev_ops {
	int (*submit)(struct zlfs_zdev *dev, struct zlfs_cmd *cmd);
	int (*report)(struct zlfs_zdev *dev, uint32_t first, struct zlfs_zone *z, uint32_t *nr);
	int (*mgmt)(struct zlfs_zdev *dev, enum zlfs_zone_mgmt op, uint32_t zone);
	void (*close)(struct zlfs_zdev *dev);
	/* optional */
	int (*fault_arm)(struct zlfs_zdev *dev, enum zlfs_fault_kind k, uint64_t nth, bool pers);
	void (*fault_clear)(struct zlfs_zdev *dev);
	int (*set_cond)(struct zlfs_zdev *dev, uint32_t zone, enum zlfs_zone_cond cond);
	int (*powercut_arm)(struct zlfs_zdev *dev, uint64_t after, uint64_t seed);
	int (*powercut)(struct zlfs_zdev *dev);
	int (*revive)(struct zlfs_zdev *dev);
	bool (*is_dead)(struct zlfs_zdev *dev);
	void (*stats)(struct zlfs_zdev *dev, struct zlfs_zdev_stats *st);
	/* range checked by zdev.c: in bounds, aligned, conventional zones only */
	int (*discard)(struct zlfs_zdev *dev, uint64_t off, uint64_t len);
	/* range checked by zdev.c: in bounds, aligned to the logical block */
	int (*read_fd)(struct zlfs_zdev *dev, uint64_t off, uint64_t len, int *fd, uint64_t *pos);
};

struct zlfs_zdev {
	const struct zdev_ops *ops;
	struct zlfs_zdev_geom geom;
	char *spec;
};

/* key=value list parsed from a spec's option part */
struct zopts {
	int n;
	struct { char *key; char *val; bool used; } kv[32];
};
int zopts_parse(struct zopts *o, const char *s);
void zopts_free(struct zopts *o);
/* Look up a key (marks it used); NULL if absent. */
const char *zopts_get(struct zopts *o, const char *key);
int zopts_u64(struct zopts *o, const char *key, uint64_t *v);     /* plain number */
int zopts_size(struct zopts *o, const char *key, uint64_t *v);    /* K/M/G suffixes */
int zopts_double(struct zopts *o, const char *key, double *v);
/* -EINVAL (and errmsg) if an option was not used by the backend. */
int zopts_check_unused(struct zopts *o);

/* Service model options, shared by mem: and images. */
struct svc_params {
	uint32_t queues, qd;
	uint64_t lat_ns;
	uint64_t mbps;          /* data link bandwidth in MiB/s, 0 = unlimited */
	double reorder;
	uint64_t hib_ns;
	uint64_t seed;
	bool enabled;
};
int svc_params_parse(struct zopts *o, struct svc_params *p);

/* Backends; ro: open read-only (ZLFS_ZDEV_RDONLY) and set geom.rdonly */
int zemu_open_mem(struct zopts *o, struct zlfs_zdev **out);
int zemu_open_image(const char *path, struct zopts *o, bool ro, struct zlfs_zdev **out);
int zbd_backend_open(const char *path, struct zopts *o, bool ro, struct zlfs_zdev **out);

void zdev_set_errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline uint64_t zlfs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: the emulator's one source of randomness, seeded per device */
static inline uint64_t zrand_next(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static inline uint64_t iov_total(const struct iovec *iov, int cnt)
{
	uint64_t t = 0;
	for (int i = 0; i < cnt; i++)
		t += iov[i].iov_len;
	return t;
}

#endif
