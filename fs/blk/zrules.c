/*
 * zrules.c - the zone state machine of the emulated devices (see zrules.h).
 *
 * Transitions (cond before -> after, the call that makes it):
 *   EMPTY/CLOSED -> IMP_OPEN   write (after the resource checks)
 *   IMP_OPEN     -> CLOSED     implicit close, to free an open slot
 *   EMPTY/IMP/CLOSED -> EXP_OPEN  open
 *   IMP/EXP      -> CLOSED, or EMPTY if nothing written   close
 *   any writable -> FULL       write reaching the capacity, finish
 *   any SWR but RO/OFFLINE -> EMPTY   reset
 *   any -> RDONLY / OFFLINE    zrules_set_cond (fault injection)
 */
#include <string.h>

#include "zrules.h"

static bool is_open(uint8_t c)
{
	return c == ZLFS_ZC_IMP_OPEN || c == ZLFS_ZC_EXP_OPEN;
}

/* Move zone i to cond c, keeping the counters in step. */
static void set_cond(struct zrules *r, struct zlfs_zone *z, uint8_t c)
{
	switch (z->cond) {
	case ZLFS_ZC_IMP_OPEN: r->nr_imp--; break;
	case ZLFS_ZC_EXP_OPEN: r->nr_exp--; break;
	case ZLFS_ZC_CLOSED: r->nr_closed--; break;
	default: break;
	}
	switch (c) {
	case ZLFS_ZC_IMP_OPEN: r->nr_imp++; break;
	case ZLFS_ZC_EXP_OPEN: r->nr_exp++; break;
	case ZLFS_ZC_CLOSED: r->nr_closed++; break;
	default: break;
	}
	z->cond = c;
}

static void recount(struct zrules *r)
{
	r->nr_imp = r->nr_exp = r->nr_closed = 0;
	for (uint32_t i = 0; i < r->nr; i++) {
		switch (r->z[i].cond) {
		case ZLFS_ZC_IMP_OPEN: r->nr_imp++; break;
		case ZLFS_ZC_EXP_OPEN: r->nr_exp++; break;
		case ZLFS_ZC_CLOSED: r->nr_closed++; break;
		default: break;
		}
	}
}

void zrules_init(struct zrules *r, struct zlfs_zone *zones, uint32_t nr, uint32_t nr_conv,
		 uint32_t max_open, uint32_t max_active)
{
	memset(r, 0, sizeof(*r));
	r->z = zones;
	r->nr = nr;
	r->nr_conv = nr_conv;
	/* as null_blk: a limit at or above the number of sequential zones is no limit */
	r->max_open = max_open >= nr - nr_conv ? 0 : max_open;
	r->max_active = max_active >= nr - nr_conv ? 0 : max_active;
	if (r->max_active && r->max_open > r->max_active)
		r->max_open = r->max_active;
	recount(r);
}

void zrules_power_cycle(struct zrules *r)
{
	for (uint32_t i = r->nr_conv; i < r->nr; i++) {
		struct zlfs_zone *z = &r->z[i];
		if (is_open(z->cond))
			z->cond = z->wp == z->start ? ZLFS_ZC_EMPTY : ZLFS_ZC_CLOSED;
	}
	recount(r);
}

/* Room for one more active zone? */
static bool active_ok(struct zrules *r)
{
	return !r->max_active || r->nr_imp + r->nr_exp + r->nr_closed < r->max_active;
}

/* Close one implicitly open zone, round robin; false if there is none. */
static bool close_one_imp(struct zrules *r)
{
	for (uint32_t n = 0; n < r->nr - r->nr_conv; n++) {
		uint32_t i = r->nr_conv + (r->close_rr + n) % (r->nr - r->nr_conv);
		if (r->z[i].cond == ZLFS_ZC_IMP_OPEN) {
			set_cond(r, &r->z[i], ZLFS_ZC_CLOSED);
			r->close_rr = i + 1 - r->nr_conv;
			return true;
		}
	}
	return false;
}

/*
 * Resources for moving zone z (EMPTY or CLOSED, or IMP_OPEN when opening
 * explicitly) into an open condition, as null_check_zone_resources.
 */
static int open_resources(struct zrules *r, struct zlfs_zone *z)
{
	if (z->cond == ZLFS_ZC_EMPTY && !active_ok(r))
		return -ZLFS_ETOOMANYACT;
	if (is_open(z->cond) || !r->max_open || r->nr_imp + r->nr_exp < r->max_open)
		return 0;
	/* Closing a zone keeps it active, so it frees an open slot only. */
	if (close_one_imp(r))
		return 0;
	return -ZLFS_ETOOMANYOPEN;
}

static int writable(const struct zlfs_zone *z)
{
	switch (z->cond) {
	case ZLFS_ZC_OFFLINE: return -ZLFS_EZONEOFFLINE;
	case ZLFS_ZC_RDONLY: return -ZLFS_EZONERO;
	case ZLFS_ZC_FULL: return -ZLFS_EZONEFULL;
	default: return 0;
	}
}

int zrules_write(struct zrules *r, uint64_t off, uint64_t len, bool append, uint64_t *pos)
{
	uint64_t zs = r->z[0].len;
	uint32_t zi = (uint32_t)(off / zs);
	struct zlfs_zone *z = &r->z[zi];
	int ret;

	if (z->type == ZLFS_ZONE_CONV) {
		if (append)
			return -EINVAL;
		/* conventional zones are plain LBAs: a write may span several */
		uint32_t last = (uint32_t)((off + len - 1) / zs);
		for (uint32_t j = zi; j <= last; j++) {
			if (j >= r->nr || r->z[j].type != ZLFS_ZONE_CONV)
				return -ZLFS_EBOUNDARY;
			if (r->z[j].cond == ZLFS_ZC_OFFLINE)
				return -ZLFS_EZONEOFFLINE;
			if (r->z[j].cond == ZLFS_ZC_RDONLY)
				return -ZLFS_EZONERO;
		}
		*pos = off;
		return 0;
	}
	if ((ret = writable(z)))
		return ret;
	if (append)
		off = z->wp;
	else if (off != z->wp)
		return -ZLFS_EUNALIGNED;
	if (off + len > z->start + z->cap)
		return -ZLFS_EBOUNDARY;
	if (z->cond == ZLFS_ZC_EMPTY || z->cond == ZLFS_ZC_CLOSED) {
		if ((ret = open_resources(r, z)))
			return ret;
		set_cond(r, z, ZLFS_ZC_IMP_OPEN);
	}
	z->wp = off + len;
	if (z->wp == z->start + z->cap)
		set_cond(r, z, ZLFS_ZC_FULL);
	*pos = off;
	return 0;
}

int zrules_read(struct zrules *r, uint64_t off, uint64_t len,
		void (*seg)(void *ctx, uint64_t off, uint64_t len, bool valid), void *ctx)
{
	uint64_t zs = r->z[0].len, end = off + len;

	for (uint64_t o = off; o < end; ) {
		struct zlfs_zone *z = &r->z[o / zs];
		if (z->cond == ZLFS_ZC_OFFLINE)
			return -ZLFS_EZONEOFFLINE;
		o = z->start + zs < end ? z->start + zs : end;
	}
	for (uint64_t o = off; o < end; ) {
		struct zlfs_zone *z = &r->z[o / zs];
		uint64_t zend = z->start + zs < end ? z->start + zs : end;
		uint64_t vend = z->type == ZLFS_ZONE_CONV ? zend : (z->wp < zend ? z->wp : zend);
		if (vend > o)
			seg(ctx, o, vend - o, true);
		if (zend > (vend > o ? vend : o))
			seg(ctx, vend > o ? vend : o, zend - (vend > o ? vend : o), false);
		o = zend;
	}
	return 0;
}

static int mgmt_one(struct zrules *r, enum zlfs_zone_mgmt op, struct zlfs_zone *z,
		    void (*discard)(void *, uint32_t), void *ctx)
{
	int ret;

	if (z->type == ZLFS_ZONE_CONV)
		return -EINVAL;
	if (z->cond == ZLFS_ZC_OFFLINE)
		return -ZLFS_EZONEOFFLINE;
	if (z->cond == ZLFS_ZC_RDONLY)
		return -ZLFS_EZONERO;
	switch (op) {
	case ZLFS_ZM_RESET:
		if (z->cond != ZLFS_ZC_EMPTY || z->wp != z->start) {
			set_cond(r, z, ZLFS_ZC_EMPTY);
			z->wp = z->start;
			if (discard)
				discard(ctx, (uint32_t)(z - r->z));
		}
		return 0;
	case ZLFS_ZM_OPEN:
		if (z->cond == ZLFS_ZC_EXP_OPEN)
			return 0;
		if (z->cond == ZLFS_ZC_FULL)
			return -ZLFS_EZONEFULL;
		if ((ret = open_resources(r, z)))
			return ret;
		set_cond(r, z, ZLFS_ZC_EXP_OPEN);
		return 0;
	case ZLFS_ZM_CLOSE:
		if (is_open(z->cond))
			set_cond(r, z, z->wp == z->start ? ZLFS_ZC_EMPTY : ZLFS_ZC_CLOSED);
		return 0;       /* EMPTY, CLOSED, FULL: nothing to do (ZBC) */
	case ZLFS_ZM_FINISH:
		if (z->cond == ZLFS_ZC_FULL)
			return 0;
		if (z->cond == ZLFS_ZC_EMPTY && !active_ok(r))
			return -ZLFS_ETOOMANYACT;
		set_cond(r, z, ZLFS_ZC_FULL);
		z->wp = z->start + z->cap;
		return 0;
	}
	return -EINVAL;
}

int zrules_mgmt(struct zrules *r, enum zlfs_zone_mgmt op, uint32_t zone,
		void (*discard)(void *, uint32_t), void *ctx)
{
	if (zone != ZLFS_ZONE_ALL)
		return mgmt_one(r, op, &r->z[zone], discard, ctx);
	/* "all" applies to the zones the operation makes sense for (ZBC ALL bit) */
	for (uint32_t i = r->nr_conv; i < r->nr; i++) {
		struct zlfs_zone *z = &r->z[i];
		uint8_t c = z->cond;
		bool apply;
		if (c == ZLFS_ZC_RDONLY || c == ZLFS_ZC_OFFLINE)
			continue;
		switch (op) {
		case ZLFS_ZM_RESET: apply = c != ZLFS_ZC_EMPTY; break;
		case ZLFS_ZM_OPEN: apply = c == ZLFS_ZC_CLOSED; break;
		case ZLFS_ZM_CLOSE: apply = is_open(c); break;
		case ZLFS_ZM_FINISH: apply = is_open(c) || c == ZLFS_ZC_CLOSED; break;
		default: return -EINVAL;
		}
		if (apply) {
			int ret = mgmt_one(r, op, z, discard, ctx);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int zrules_set_cond(struct zrules *r, uint32_t zone, uint8_t cond)
{
	struct zlfs_zone *z = &r->z[zone];

	if (z->type == ZLFS_ZONE_CONV && cond != ZLFS_ZC_RDONLY && cond != ZLFS_ZC_OFFLINE)
		return -EINVAL;
	set_cond(r, z, cond);
	/* a read-only or offline zone has no valid write pointer */
	if (z->type != ZLFS_ZONE_CONV && cond == ZLFS_ZC_OFFLINE)
		z->wp = z->start;
	return 0;
}

int zrules_check(const struct zrules *r)
{
	uint32_t imp = 0, exp = 0, closed = 0;

	for (uint32_t i = 0; i < r->nr; i++) {
		const struct zlfs_zone *z = &r->z[i];
		if (z->type == ZLFS_ZONE_CONV)
			continue;
		if (z->wp < z->start || z->wp > z->start + z->cap)
			return -EUCLEAN;
		if (z->cond == ZLFS_ZC_EMPTY && z->wp != z->start)
			return -EUCLEAN;
		if (z->cond == ZLFS_ZC_FULL && z->wp != z->start + z->cap)
			return -EUCLEAN;
		imp += z->cond == ZLFS_ZC_IMP_OPEN;
		exp += z->cond == ZLFS_ZC_EXP_OPEN;
		closed += z->cond == ZLFS_ZC_CLOSED;
	}
	if (imp != r->nr_imp || exp != r->nr_exp || closed != r->nr_closed)
		return -EUCLEAN;
	if (r->max_open && imp + exp > r->max_open)
		return -EUCLEAN;
	if (r->max_active && imp + exp + closed > r->max_active)
		return -EUCLEAN;
	return 0;
}
