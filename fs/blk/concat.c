/*
 * concat.c - several devices presented as one: F2FS's multi-device layout
 * (a conventional device for the metadata followed by a ZNS namespace
 * without conventional zones, say).
 *
 * The members are laid end to end in the order given, zone after zone:
 * member i's byte 0 is the combined device's byte start[i].  Every member
 * has the same zone size (members without zones and without a zone_size
 * option are reopened with the others'), the same logical block size
 * and, among the zoned ones, the same zone capacity.  The combined device
 * keeps the rule of every zdev that conventional zones come first, so a
 * member with sequential zones may only be followed by members without
 * conventional ones.
 *
 * A command never spans two members (-ERANGE, as a write across zones):
 * each is passed to its member on a small wrapper command whose done()
 * translates the result back.  A flush goes to every member and finishes
 * when the last one has.  The members do their own locking; this file
 * keeps no mutable state except per-command wrappers.  Open flags
 * (ZLFS_ZDEV_RDONLY) are given to every member alike.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zdev_int.h"

#define CONCAT_MAX 8

struct concat {
	struct zlfs_zdev base;
	int n;
	struct zlfs_zdev *sub[CONCAT_MAX];
	uint64_t start[CONCAT_MAX];     /* bytes */
	uint32_t zstart[CONCAT_MAX];    /* first zone number */
};

struct ccmd {
	struct zlfs_cmd c;
	struct zlfs_cmd *orig;
	uint64_t base;                  /* start of the member, bytes */
	int *left;                      /* flush: members still flushing */
	int *err;
	pthread_mutex_t *lock;
};

static int member_of(const struct concat *c, uint64_t off)
{
	int i = c->n - 1;

	while (i > 0 && off < c->start[i])
		i--;
	return i;
}

static void ccmd_done(struct zlfs_cmd *sub)
{
	struct ccmd *w = (struct ccmd *)sub;
	struct zlfs_cmd *orig = w->orig;

	orig->result = sub->result;
	if (orig->op == ZLFS_OP_APPEND && !sub->result)
		orig->pos = sub->pos + w->base;
	free(w);
	orig->done(orig);
}

struct flush_all {
	pthread_mutex_t lock;
	int left, err;
	struct zlfs_cmd *orig;
};

static void flush_done(struct zlfs_cmd *sub)
{
	struct flush_all *f = sub->priv;
	bool last;

	pthread_mutex_lock(&f->lock);
	if (sub->result && !f->err)
		f->err = sub->result;
	last = --f->left == 0;
	pthread_mutex_unlock(&f->lock);
	free(sub);
	if (last) {
		struct zlfs_cmd *orig = f->orig;
		orig->result = f->err;
		pthread_mutex_destroy(&f->lock);
		free(f);
		orig->done(orig);
	}
}

static int concat_flush(struct concat *c, struct zlfs_cmd *cmd)
{
	struct flush_all *f = calloc(1, sizeof(*f));
	struct zlfs_cmd *subs[CONCAT_MAX];
	int i;

	if (!f)
		return -ENOMEM;
	for (i = 0; i < c->n; i++) {
		if (!(subs[i] = calloc(1, sizeof(*subs[i])))) {
			while (i--)
				free(subs[i]);
			free(f);
			return -ENOMEM;
		}
	}
	pthread_mutex_init(&f->lock, NULL);
	f->left = c->n;
	f->orig = cmd;
	for (i = 0; i < c->n; i++) {
		subs[i]->op = ZLFS_OP_FLUSH;
		subs[i]->done = flush_done;
		subs[i]->priv = f;
		int ret = zlfs_zdev_submit(c->sub[i], subs[i]);
		if (ret) {
			/* finish it here, as if the member had failed it */
			subs[i]->result = ret;
			flush_done(subs[i]);
		}
	}
	return 0;
}

static int concat_submit(struct zlfs_zdev *dev, struct zlfs_cmd *cmd)
{
	struct concat *c = (struct concat *)dev;

	if (cmd->op == ZLFS_OP_FLUSH)
		return concat_flush(c, cmd);
	int i = member_of(c, cmd->off);
	uint64_t end = i + 1 < c->n ? c->start[i + 1] : dev->geom.size;
	if (cmd->len > end - cmd->off)
		return -ZLFS_EBOUNDARY;
	struct ccmd *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->c.op = cmd->op;
	w->c.off = cmd->off - c->start[i];
	w->c.iov = cmd->iov;
	w->c.iovcnt = cmd->iovcnt;
	w->c.done = ccmd_done;
	w->orig = cmd;
	w->base = c->start[i];
	int ret = zlfs_zdev_submit(c->sub[i], &w->c);
	if (ret)
		free(w);
	return ret;
}

static int concat_report(struct zlfs_zdev *dev, uint32_t first, struct zlfs_zone *z,
			 uint32_t *nr)
{
	struct concat *c = (struct concat *)dev;
	uint32_t want = *nr, got = 0;

	while (got < want) {
		uint32_t zn = first + got;
		int i = member_of(c, (uint64_t)zn * dev->geom.zone_size);
		uint32_t k = want - got;
		int ret = zlfs_zdev_report(c->sub[i], zn - c->zstart[i], z + got, &k);
		if (ret)
			return ret;
		if (!k)
			break;
		for (uint32_t j = 0; j < k; j++) {
			z[got + j].start += c->start[i];
			z[got + j].wp += c->start[i];
		}
		got += k;
	}
	*nr = got;
	return 0;
}

static int concat_mgmt(struct zlfs_zdev *dev, enum zlfs_zone_mgmt op, uint32_t zone)
{
	struct concat *c = (struct concat *)dev;

	if (zone == ZLFS_ZONE_ALL) {
		for (int i = 0; i < c->n; i++) {
			/* members without sequential zones have nothing to manage */
			if (zlfs_zdev_geom(c->sub[i])->nr_conv == zlfs_zdev_geom(c->sub[i])->nr_zones)
				continue;
			int ret = zlfs_zdev_zone_mgmt(c->sub[i], op, ZLFS_ZONE_ALL);
			if (ret)
				return ret;
		}
		return 0;
	}
	int i = member_of(c, (uint64_t)zone * dev->geom.zone_size);
	return zlfs_zdev_zone_mgmt(c->sub[i], op, zone - c->zstart[i]);
}

static int concat_set_cond(struct zlfs_zdev *dev, uint32_t zone, enum zlfs_zone_cond cond)
{
	struct concat *c = (struct concat *)dev;
	int i = member_of(c, (uint64_t)zone * dev->geom.zone_size);

	return zlfs_zdev_set_zone_cond(c->sub[i], zone - c->zstart[i], cond);
}

static void concat_stats(struct zlfs_zdev *dev, struct zlfs_zdev_stats *st)
{
	struct concat *c = (struct concat *)dev;

	for (int i = 0; i < c->n; i++) {
		struct zlfs_zdev_stats s;
		zlfs_zdev_stats(c->sub[i], &s);
		st->cmds += s.cmds;
		st->reads += s.reads;
		st->writes += s.writes;
		st->flushes += s.flushes;
		st->unaligned += s.unaligned;
		st->reordered += s.reordered;
		st->hibernations += s.hibernations;
		st->requeues += s.requeues;
		st->injected += s.injected;
		st->writebehinds += s.writebehinds;
	}
}

static void concat_close(struct zlfs_zdev *dev)
{
	struct concat *c = (struct concat *)dev;

	for (int i = 0; i < c->n; i++)
		zlfs_zdev_close(c->sub[i]);
	free(c);
}

/* A discard may span members: each gets its part. */
static int concat_discard(struct zlfs_zdev *dev, uint64_t off, uint64_t len)
{
	struct concat *c = (struct concat *)dev;

	while (len) {
		int i = member_of(c, off);
		uint64_t end = i + 1 < c->n ? c->start[i + 1] : dev->geom.size;
		uint64_t n = end - off < len ? end - off : len;
		int ret = zlfs_zdev_discard(c->sub[i], off - c->start[i], n);
		if (ret)
			return ret;
		off += n;
		len -= n;
	}
	return 0;
}

/* A range in one member only: one file, one position. */
static int concat_read_fd(struct zlfs_zdev *dev, uint64_t off, uint64_t len, int *fd,
			  uint64_t *pos)
{
	struct concat *c = (struct concat *)dev;
	int i = member_of(c, off);
	uint64_t end = i + 1 < c->n ? c->start[i + 1] : dev->geom.size;

	if (len > end - off)
		return -EOPNOTSUPP;
	return zlfs_zdev_read_fd(c->sub[i], off - c->start[i], len, fd, pos);
}

static const struct zdev_ops concat_ops = {
	.submit = concat_submit,
	.report = concat_report,
	.mgmt = concat_mgmt,
	.close = concat_close,
	.set_cond = concat_set_cond,
	.stats = concat_stats,
	.discard = concat_discard,
	.read_fd = concat_read_fd,
};

static uint32_t min_limit(uint32_t a, uint32_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

/* spec with zone_size=zs added to its options (a mem: spec can't be reopened). */
static char *with_zone_size(const char *spec, uint64_t zs)
{
	char *s = NULL;
	const char *sep = strncmp(spec, "mem:", 4) ? (strchr(spec, '?') ? "," : "?") : ",";

	if (asprintf(&s, "%s%szone_size=%llu", spec, sep, (unsigned long long)zs) < 0)
		return NULL;
	return s;
}

int zlfs_zdev_open_multi(const char *const *specs, int n, struct zlfs_zdev **out)
{
	return zlfs_zdev_open_multi_flags(specs, n, 0, out);
}

int zlfs_zdev_open_multi_flags(const char *const *specs, int n, unsigned int flags,
			       struct zlfs_zdev **out)
{
	struct concat *c;
	uint64_t zs = 0, cap = 0;
	int i, ret;

	if (n == 1)
		return zlfs_zdev_open_flags(specs[0], flags, out);
	if (n < 1 || n > CONCAT_MAX) {
		zdev_set_errmsg("%d devices: a filesystem spans 1 to %d", n, CONCAT_MAX);
		return -EINVAL;
	}
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if ((ret = zlfs_zdev_open_flags(specs[i], flags, &c->sub[i])))
			goto fail;
		c->n = i + 1;
		const struct zlfs_zdev_geom *g = zlfs_zdev_geom(c->sub[i]);
		if (g->zoned) {
			if (zs && (g->zone_size != zs || g->zone_cap != cap)) {
				zdev_set_errmsg("%s: zones of %llu bytes (capacity %llu) unlike the "
						"other zoned device's", specs[i],
						(unsigned long long)g->zone_size,
						(unsigned long long)g->zone_cap);
				ret = -EINVAL;
				goto fail;
			}
			zs = g->zone_size;
			cap = g->zone_cap;
		}
	}
	/*
	 * Members whose zone size was their opener's choice (no zones, no
	 * zone_size option: zs_auto) take the zoned members' zone size; with
	 * none zoned, that of a member whose size was given, else the smallest
	 * of theirs (a large file is given larger zones).  A size the user
	 * gave is never replaced: a mismatch is refused below.
	 */
	for (i = 0; i < n && !cap; i++) {
		const struct zlfs_zdev_geom *g = zlfs_zdev_geom(c->sub[i]);
		if (!g->zs_auto) {
			zs = g->zone_size;
			break;
		}
		zs = !zs || g->zone_size < zs ? g->zone_size : zs;
	}
	for (i = 0; zs && i < n; i++) {
		const struct zlfs_zdev_geom *g = zlfs_zdev_geom(c->sub[i]);
		if (!g->zs_auto || g->zone_size == zs)
			continue;
		char *s = with_zone_size(specs[i], zs);
		if (!s) {
			ret = -ENOMEM;
			goto fail;
		}
		zlfs_zdev_close(c->sub[i]);
		c->sub[i] = NULL;
		ret = zlfs_zdev_open_flags(s, flags, &c->sub[i]);
		free(s);
		if (ret) {
			/* keep the later members closable */
			for (int j = i; j + 1 < c->n; j++)
				c->sub[j] = c->sub[j + 1];
			c->n--;
			goto fail;
		}
	}
	struct zlfs_zdev_geom *cg = &c->base.geom;
	const struct zlfs_zdev_geom *g0 = zlfs_zdev_geom(c->sub[0]);
	bool seq_seen = false;
	*cg = *g0;
	cg->size = 0;
	cg->nr_zones = cg->nr_conv = 0;
	cg->zoned = false;
	cg->zs_auto = false;
	cg->no_zwl = true;
	for (i = 0; i < n; i++) {
		const struct zlfs_zdev_geom *g = zlfs_zdev_geom(c->sub[i]);
		if (g->zone_size != g0->zone_size || g->lbs != g0->lbs) {
			zdev_set_errmsg("%s: zone size %llu / block size %u unlike %s's", specs[i],
					(unsigned long long)g->zone_size, g->lbs, specs[0]);
			ret = -EINVAL;
			goto fail;
		}
		if (seq_seen && g->nr_conv) {
			zdev_set_errmsg("%s has conventional zones but follows a device with "
					"sequential ones: list the conventional devices first", specs[i]);
			ret = -EINVAL;
			goto fail;
		}
		c->start[i] = cg->size;
		c->zstart[i] = cg->nr_zones;
		cg->size += (uint64_t)g->nr_zones * g->zone_size;
		cg->nr_zones += g->nr_zones;
		cg->nr_conv += g->nr_conv;
		if (g->zoned) {
			seq_seen = true;
			cg->zoned = true;
			cg->zone_cap = g->zone_cap;
			cg->kind = g->kind;
			cg->no_zwl = cg->no_zwl && g->no_zwl;
			cg->max_open = min_limit(cg->max_open, g->max_open);
			cg->max_active = min_limit(cg->max_active, g->max_active);
		}
		/* the dispatcher must never hand a member more than it takes */
		cg->depth = g->depth < cg->depth ? g->depth : cg->depth;
		cg->max_io = min_limit(cg->max_io, g->max_io);
	}
	if (!cg->zoned) {
		cg->zone_cap = cg->zone_size;
		cg->no_zwl = g0->no_zwl;
	}
	/* every member was opened with the same flags: the whole is as they are */
	cg->rdonly = (flags & ZLFS_ZDEV_RDONLY) != 0;
	c->base.ops = &concat_ops;
	size_t len = 1;
	for (i = 0; i < n; i++)
		len += strlen(specs[i]) + 1;
	if (!(c->base.spec = malloc(len))) {
		ret = -ENOMEM;
		goto fail;
	}
	c->base.spec[0] = 0;
	for (i = 0; i < n; i++) {
		strcat(c->base.spec, specs[i]);
		if (i + 1 < n)
			strcat(c->base.spec, "+");
	}
	*out = &c->base;
	return 0;
fail:
	for (i = 0; i < c->n; i++)
		zlfs_zdev_close(c->sub[i]);
	free(c);
	return ret;
}

int zlfs_zdev_members(const struct zlfs_zdev *dev, struct zlfs_zdev_member *m, int max)
{
	if (dev->ops != &concat_ops) {
		if (max > 0) {
			m[0].dev = (struct zlfs_zdev *)dev;
			m[0].start = 0;
			m[0].size = dev->geom.size;
		}
		return 1;
	}
	const struct concat *c = (const struct concat *)dev;
	for (int i = 0; i < c->n && i < max; i++) {
		m[i].dev = c->sub[i];
		m[i].start = c->start[i];
		m[i].size = zlfs_zdev_geom(c->sub[i])->size;
	}
	return c->n;
}
