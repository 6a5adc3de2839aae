/*
 * zopts.c - parsing of device spec options ("key=val,key=val") and sizes.
 *
 * Every backend takes its options from one zopts list and must use each
 * key; zopts_check_unused() turns a misspelt option into a clear error
 * instead of a silently ignored one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zdev_int.h"

static __thread char errmsg[256];

void zdev_set_errmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
}

const char *zlfs_zdev_errmsg(void)
{
	return errmsg[0] ? errmsg : "no error recorded";
}

int zlfs_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 't': case 'T': mul = 1ull << 40; end++; break;
	default: break;
	}
	if (*end == 'i' && mul > 1)     /* accept KiB, MiB too */
		end++;
	if ((*end == 'b' || *end == 'B') && mul > 1)
		end++;
	if (*end)
		return -EINVAL;
	if (v && mul > UINT64_MAX / v)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

int zopts_parse(struct zopts *o, const char *s)
{
	memset(o, 0, sizeof(*o));
	if (!s || !*s)
		return 0;
	char *dup = strdup(s);
	if (!dup)
		return -ENOMEM;
	char *save = NULL;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->n == (int)(sizeof(o->kv) / sizeof(o->kv[0]))) {
			zdev_set_errmsg("too many device options");
			free(dup);
			zopts_free(o);
			return -EINVAL;
		}
		char *eq = strchr(tok, '=');
		if (eq)
			*eq = '\0';
		o->kv[o->n].key = strdup(tok);
		o->kv[o->n].val = strdup(eq ? eq + 1 : "1");
		if (!o->kv[o->n].key || !o->kv[o->n].val) {
			o->n++;
			free(dup);
			zopts_free(o);
			return -ENOMEM;
		}
		o->n++;
	}
	free(dup);
	return 0;
}

void zopts_free(struct zopts *o)
{
	for (int i = 0; i < o->n; i++) {
		free(o->kv[i].key);
		free(o->kv[i].val);
	}
	o->n = 0;
}

const char *zopts_get(struct zopts *o, const char *key)
{
	const char *v = NULL;

	/* the last occurrence wins, as with mount options */
	for (int i = 0; i < o->n; i++) {
		if (!strcmp(o->kv[i].key, key)) {
			o->kv[i].used = true;
			v = o->kv[i].val;
		}
	}
	return v;
}

int zopts_u64(struct zopts *o, const char *key, uint64_t *v)
{
	const char *s = zopts_get(o, key);
	char *end;

	if (!s)
		return 0;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-') {
		zdev_set_errmsg("option %s: '%s' is not a number", key, s);
		return -EINVAL;
	}
	*v = x;
	return 0;
}

int zopts_size(struct zopts *o, const char *key, uint64_t *v)
{
	const char *s = zopts_get(o, key);

	if (!s)
		return 0;
	if (zlfs_parse_size(s, v)) {
		zdev_set_errmsg("option %s: '%s' is not a size", key, s);
		return -EINVAL;
	}
	return 0;
}

int zopts_double(struct zopts *o, const char *key, double *v)
{
	const char *s = zopts_get(o, key);
	char *end;

	if (!s)
		return 0;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || end == s || *end || x < 0) {
		zdev_set_errmsg("option %s: '%s' is not a non-negative number", key, s);
		return -EINVAL;
	}
	*v = x;
	return 0;
}

int zopts_check_unused(struct zopts *o)
{
	for (int i = 0; i < o->n; i++) {
		if (!o->kv[i].used) {
			zdev_set_errmsg("unknown device option '%s'", o->kv[i].key);
			return -EINVAL;
		}
	}
	return 0;
}

int svc_params_parse(struct zopts *o, struct svc_params *p)
{
	uint64_t lat_us = 0, hib_ms = 0, mbps = 0;
	uint64_t q = p->queues, qd = p->qd;
	int ret;

	p->enabled = p->enabled || zopts_get(o, "queues") || zopts_get(o, "qd") ||
		     zopts_get(o, "lat_us") || zopts_get(o, "reorder") ||
		     zopts_get(o, "hibernate_ms") || zopts_get(o, "mbps");
	if ((ret = zopts_u64(o, "queues", &q)) || (ret = zopts_u64(o, "qd", &qd)) ||
	    (ret = zopts_u64(o, "lat_us", &lat_us)) || (ret = zopts_u64(o, "mbps", &mbps)) ||
	    (ret = zopts_double(o, "reorder", &p->reorder)) ||
	    (ret = zopts_u64(o, "hibernate_ms", &hib_ms)) ||
	    (ret = zopts_u64(o, "seed", &p->seed)))
		return ret;
	if (q < 1 || q > 64 || qd < 1 || qd > 4096) {
		zdev_set_errmsg("queues must be 1..64 and qd 1..4096");
		return -EINVAL;
	}
	if (p->reorder > 1.0) {
		zdev_set_errmsg("reorder is a probability (0..1)");
		return -EINVAL;
	}
	p->queues = (uint32_t)q;
	p->qd = (uint32_t)qd;
	p->lat_ns = lat_us * 1000;
	p->mbps = mbps;
	p->hib_ns = hib_ms * 1000000;
	return 0;
}
