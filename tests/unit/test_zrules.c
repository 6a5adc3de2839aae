/*
 * test_zrules.c - the zone state machine of the emulated devices
 * (fs/blk/zrules.c), driven directly, without a device.
 *
 * Covered: zone layout and the limit clamps of zrules_init; writes at and
 * off the write pointer (EUNALIGNED), past the capacity or across a zone
 * (EBOUNDARY), into a full zone (EZONEFULL); append; implicit open and the
 * round-robin implicit close at max_open; EMFILE when only explicitly open
 * zones hold the open slots; ENFILE at max_active (open + closed); explicit
 * open/close/finish/reset with their no-op and error cases; the ALL forms
 * (reset-all, close-all, finish-all, open-all); conventional zones (writes
 * anywhere, spanning conventional zones but not into a sequential one,
 * append and management -EINVAL); read segments; read-only and offline
 * zones; capacity below the zone size; zrules_power_cycle; zrules_check
 * itself.  zrules_check() runs after every step.
 *
 * test_random_model runs thousands of random operations (fixed seeds)
 * against a small independent model of the zone rules written here from
 * the null_blk semantics in zoned-block-layer.md (c).3, comparing every
 * return code, position, write pointer and condition.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "blk/zrules.h"

#define B   4096ull                  /* a block */
#define ZS  (16 * B)                 /* zone size in the hand-written tests */

#define CHK(r) ck_assert_int_eq(zrules_check(r), 0)

/* Lay out nr zones of size zs (sequential ones with capacity cap) and init. */
static void mk(struct zrules *r, struct zlfs_zone *z, uint32_t nr, uint32_t nconv, uint64_t zs,
	       uint64_t cap, uint32_t max_open, uint32_t max_active)
{
	for (uint32_t i = 0; i < nr; i++) {
		z[i].start = i * zs;
		z[i].len = zs;
		z[i].cap = i < nconv ? zs : cap;
		z[i].wp = z[i].start;
		z[i].type = i < nconv ? ZLFS_ZONE_CONV : ZLFS_ZONE_SWR;
		z[i].cond = i < nconv ? ZLFS_ZC_NOT_WP : ZLFS_ZC_EMPTY;
	}
	zrules_init(r, z, nr, nconv, max_open, max_active);
	CHK(r);
}

/* Write len bytes at zone-relative offset rel of zone zi. */
static int wr(struct zrules *r, uint32_t zi, uint64_t rel, uint64_t len)
{
	uint64_t pos = UINT64_MAX;
	int ret = zrules_write(r, r->z[zi].start + rel, len, false, &pos);

	if (!ret)
		ck_assert_uint_eq(pos, r->z[zi].start + rel);
	CHK(r);
	return ret;
}

static int app(struct zrules *r, uint32_t zi, uint64_t rel, uint64_t len, uint64_t *pos)
{
	int ret = zrules_write(r, r->z[zi].start + rel, len, true, pos);
	CHK(r);
	return ret;
}

static uint32_t nz_discards;
static uint32_t discarded[64];

static void disc(void *ctx, uint32_t zone)
{
	ck_assert_ptr_eq(ctx, &nz_discards);
	ck_assert_uint_lt(nz_discards, 64);
	discarded[nz_discards++] = zone;
}

static int mg(struct zrules *r, enum zlfs_zone_mgmt op, uint32_t zone)
{
	int ret = zrules_mgmt(r, op, zone, disc, &nz_discards);
	CHK(r);
	return ret;
}

static int sc(struct zrules *r, uint32_t zone, uint8_t cond)
{
	int ret = zrules_set_cond(r, zone, cond);
	CHK(r);
	return ret;
}

static uint64_t rwp(const struct zrules *r, uint32_t zi)
{
	return r->z[zi].wp - r->z[zi].start;
}

#define COND(r, zi, c) ck_assert_uint_eq((r)->z[zi].cond, (c))
#define COUNTS(r, imp, exp, cl) do {                    \
		ck_assert_uint_eq((r)->nr_imp, (imp));  \
		ck_assert_uint_eq((r)->nr_exp, (exp));  \
		ck_assert_uint_eq((r)->nr_closed, (cl)); \
	} while (0)

/* A failed call must leave every zone and counter as it was. */
struct snap {
	struct zlfs_zone z[32];
	uint32_t imp, exp, closed;
};

static void snap_take(const struct zrules *r, struct snap *s)
{
	memcpy(s->z, r->z, r->nr * sizeof(r->z[0]));
	s->imp = r->nr_imp;
	s->exp = r->nr_exp;
	s->closed = r->nr_closed;
}

static void snap_same(const struct zrules *r, const struct snap *s)
{
	ck_assert_int_eq(memcmp(s->z, r->z, r->nr * sizeof(r->z[0])), 0);
	ck_assert_uint_eq(s->imp, r->nr_imp);
	ck_assert_uint_eq(s->exp, r->nr_exp);
	ck_assert_uint_eq(s->closed, r->nr_closed);
}

/* ---- layout and limits ---------------------------------------------------- */

START_TEST(test_init_limits)
{
	struct zlfs_zone z[8];
	struct zrules r;

	mk(&r, z, 8, 2, ZS, ZS, 3, 5);
	ck_assert_uint_eq(r.nr, 8);
	ck_assert_uint_eq(r.nr_conv, 2);
	ck_assert_uint_eq(r.max_open, 3);
	ck_assert_uint_eq(r.max_active, 5);
	COUNTS(&r, 0, 0, 0);
	/* a limit at or above the number of sequential zones (6) is no limit */
	mk(&r, z, 8, 2, ZS, ZS, 6, 6);
	ck_assert_uint_eq(r.max_open, 0);
	ck_assert_uint_eq(r.max_active, 0);
	mk(&r, z, 8, 2, ZS, ZS, 7, 100);
	ck_assert_uint_eq(r.max_open, 0);
	ck_assert_uint_eq(r.max_active, 0);
	mk(&r, z, 8, 2, ZS, ZS, 5, 5);
	ck_assert_uint_eq(r.max_open, 5);
	ck_assert_uint_eq(r.max_active, 5);
	/* max_open above max_active is cut down to it */
	mk(&r, z, 8, 2, ZS, ZS, 4, 3);
	ck_assert_uint_eq(r.max_open, 3);
	ck_assert_uint_eq(r.max_active, 3);
	/* only max_active */
	mk(&r, z, 8, 2, ZS, ZS, 0, 2);
	ck_assert_uint_eq(r.max_open, 0);
	ck_assert_uint_eq(r.max_active, 2);
	/* all conventional: no limits, nothing to count */
	mk(&r, z, 4, 4, ZS, ZS, 1, 1);
	ck_assert_uint_eq(r.max_open, 0);
	ck_assert_uint_eq(r.max_active, 0);

	/* zones loaded in some state: init counts them */
	mk(&r, z, 8, 2, ZS, ZS, 0, 0);
	z[2].cond = ZLFS_ZC_IMP_OPEN;
	z[2].wp += B;
	z[3].cond = ZLFS_ZC_EXP_OPEN;
	z[4].cond = ZLFS_ZC_CLOSED;
	z[4].wp += 2 * B;
	z[5].cond = ZLFS_ZC_FULL;
	z[5].wp = z[5].start + ZS;
	zrules_init(&r, z, 8, 2, 0, 0);
	CHK(&r);
	COUNTS(&r, 1, 1, 1);
}
END_TEST

/* ---- writes ---------------------------------------------------------------- */

START_TEST(test_write_wp)
{
	struct zlfs_zone z[6];
	struct zrules r;
	struct snap s;

	mk(&r, z, 6, 1, ZS, ZS, 0, 0);
	/* EMPTY: only the zone start is the wp */
	snap_take(&r, &s);
	ck_assert_int_eq(wr(&r, 1, B, B), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(wr(&r, 1, ZS - B, B), -ZLFS_EUNALIGNED);
	snap_same(&r, &s);
	/* at the wp: implicit open, wp advances */
	ck_assert_int_eq(wr(&r, 1, 0, 2 * B), 0);
	COND(&r, 1, ZLFS_ZC_IMP_OPEN);
	ck_assert_uint_eq(rwp(&r, 1), 2 * B);
	COUNTS(&r, 1, 0, 0);
	ck_assert_int_eq(wr(&r, 1, 2 * B, B), 0);
	ck_assert_uint_eq(rwp(&r, 1), 3 * B);
	/* behind, ahead of, and far from the wp */
	snap_take(&r, &s);
	ck_assert_int_eq(wr(&r, 1, 0, B), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(wr(&r, 1, 2 * B, B), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(wr(&r, 1, 4 * B, B), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(wr(&r, 1, 3 * B + 512, B), -ZLFS_EUNALIGNED);
	snap_same(&r, &s);
	/* past the capacity from the wp */
	ck_assert_int_eq(wr(&r, 1, 3 * B, ZS - 2 * B), -ZLFS_EBOUNDARY);
	/* across into the next zone */
	ck_assert_int_eq(wr(&r, 1, 3 * B, ZS), -ZLFS_EBOUNDARY);
	snap_same(&r, &s);
	/* exactly to the capacity: FULL, out of the open count */
	ck_assert_int_eq(wr(&r, 1, 3 * B, ZS - 3 * B), 0);
	COND(&r, 1, ZLFS_ZC_FULL);
	ck_assert_uint_eq(rwp(&r, 1), ZS);
	COUNTS(&r, 0, 0, 0);
	/* a full zone takes nothing, wherever the write is aimed */
	snap_take(&r, &s);
	ck_assert_int_eq(wr(&r, 1, 0, B), -ZLFS_EZONEFULL);
	ck_assert_int_eq(wr(&r, 1, ZS - B, B), -ZLFS_EZONEFULL);
	uint64_t pos;
	ck_assert_int_eq(app(&r, 1, 0, B, &pos), -ZLFS_EZONEFULL);
	snap_same(&r, &s);
	/* a write filling a whole empty zone at once goes straight to FULL */
	ck_assert_int_eq(wr(&r, 2, 0, ZS), 0);
	COND(&r, 2, ZLFS_ZC_FULL);
	COUNTS(&r, 0, 0, 0);
	/* EMPTY zone, write larger than the zone */
	snap_take(&r, &s);
	ck_assert_int_eq(wr(&r, 3, 0, ZS + B), -ZLFS_EBOUNDARY);
	snap_same(&r, &s);
	COND(&r, 3, ZLFS_ZC_EMPTY);
}
END_TEST

START_TEST(test_append)
{
	struct zlfs_zone z[4];
	struct zrules r;
	uint64_t pos;

	mk(&r, z, 4, 1, ZS, ZS, 0, 0);
	/* any offset inside the zone names the zone; data goes to the wp */
	ck_assert_int_eq(app(&r, 2, 5 * B, B, &pos), 0);
	ck_assert_uint_eq(pos, z[2].start);
	COND(&r, 2, ZLFS_ZC_IMP_OPEN);
	ck_assert_int_eq(app(&r, 2, 0, 3 * B, &pos), 0);
	ck_assert_uint_eq(pos, z[2].start + B);
	ck_assert_int_eq(app(&r, 2, ZS - B, 2 * B, &pos), 0);
	ck_assert_uint_eq(pos, z[2].start + 4 * B);
	ck_assert_uint_eq(rwp(&r, 2), 6 * B);
	/* more than the room left */
	ck_assert_int_eq(app(&r, 2, 0, ZS - 5 * B, &pos), -ZLFS_EBOUNDARY);
	ck_assert_uint_eq(rwp(&r, 2), 6 * B);
	/* exactly the room left: FULL */
	ck_assert_int_eq(app(&r, 2, 0, ZS - 6 * B, &pos), 0);
	ck_assert_uint_eq(pos, z[2].start + 6 * B);
	COND(&r, 2, ZLFS_ZC_FULL);
	ck_assert_int_eq(app(&r, 2, 0, B, &pos), -ZLFS_EZONEFULL);
	/* conventional zones have no wp to append at */
	ck_assert_int_eq(app(&r, 0, 0, B, &pos), -EINVAL);
	/* appends and writes mix */
	ck_assert_int_eq(wr(&r, 3, 0, B), 0);
	ck_assert_int_eq(app(&r, 3, 0, B, &pos), 0);
	ck_assert_uint_eq(pos, z[3].start + B);
	ck_assert_int_eq(wr(&r, 3, 2 * B, B), 0);
	ck_assert_int_eq(wr(&r, 3, B, B), -ZLFS_EUNALIGNED);
}
END_TEST

/* ---- open limits ----------------------------------------------------------- */

START_TEST(test_implicit_close_rr)
{
	struct zlfs_zone z[7];
	struct zrules r;

	/* zones 1..6 sequential, 3 may be open */
	mk(&r, z, 7, 1, ZS, ZS, 3, 0);
	ck_assert_int_eq(wr(&r, 1, 0, B), 0);
	ck_assert_int_eq(wr(&r, 2, 0, B), 0);
	ck_assert_int_eq(wr(&r, 3, 0, B), 0);
	COUNTS(&r, 3, 0, 0);
	/* the 4th open closes the first implicitly open zone */
	ck_assert_int_eq(wr(&r, 4, 0, B), 0);
	COND(&r, 1, ZLFS_ZC_CLOSED);
	COND(&r, 4, ZLFS_ZC_IMP_OPEN);
	COUNTS(&r, 3, 0, 1);
	/* ... and the next one the following zone, round robin */
	ck_assert_int_eq(wr(&r, 5, 0, B), 0);
	COND(&r, 2, ZLFS_ZC_CLOSED);
	COUNTS(&r, 3, 0, 2);
	/* a write to an open zone needs no slot */
	ck_assert_int_eq(wr(&r, 4, B, B), 0);
	COUNTS(&r, 3, 0, 2);
	/* reopening a closed zone implicitly closes the next in turn (3) */
	ck_assert_int_eq(wr(&r, 1, B, B), 0);
	COND(&r, 1, ZLFS_ZC_IMP_OPEN);
	COND(&r, 3, ZLFS_ZC_CLOSED);
	COUNTS(&r, 3, 0, 2);
	ck_assert_uint_eq(rwp(&r, 1), 2 * B);
	/* next in turn after 3 is 4 */
	ck_assert_int_eq(wr(&r, 6, 0, B), 0);
	COND(&r, 4, ZLFS_ZC_CLOSED);
	/* then 5; the search wraps to 1 after that */
	ck_assert_int_eq(wr(&r, 2, B, B), 0);
	COND(&r, 5, ZLFS_ZC_CLOSED);
	ck_assert_int_eq(wr(&r, 3, B, B), 0);
	COND(&r, 6, ZLFS_ZC_CLOSED);
	ck_assert_int_eq(wr(&r, 4, 2 * B, B), 0);
	COND(&r, 1, ZLFS_ZC_CLOSED);
	COUNTS(&r, 3, 0, 3);
	/* explicitly open zones are never closed implicitly: zone 3 is skipped */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 3), 0);
	COUNTS(&r, 2, 1, 3);
	ck_assert_int_eq(wr(&r, 5, B, B), 0);    /* closes 2 (next from 2) */
	COND(&r, 2, ZLFS_ZC_CLOSED);
	COND(&r, 3, ZLFS_ZC_EXP_OPEN);
	ck_assert_int_eq(wr(&r, 6, B, B), 0);    /* skips 3, closes 4 */
	COND(&r, 3, ZLFS_ZC_EXP_OPEN);
	COND(&r, 4, ZLFS_ZC_CLOSED);
	COUNTS(&r, 2, 1, 3);
}
END_TEST

START_TEST(test_too_many_open)
{
	struct zlfs_zone z[6];
	struct zrules r;
	struct snap s;
	uint64_t pos;

	mk(&r, z, 6, 0, ZS, ZS, 2, 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 0), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 1), 0);
	COUNTS(&r, 0, 2, 0);
	/* both slots held by explicitly open zones: nothing can be closed */
	snap_take(&r, &s);
	ck_assert_int_eq(wr(&r, 2, 0, B), -ZLFS_ETOOMANYOPEN);
	ck_assert_int_eq(app(&r, 2, 0, B, &pos), -ZLFS_ETOOMANYOPEN);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 2), -ZLFS_ETOOMANYOPEN);
	snap_same(&r, &s);
	/* writes to the explicitly open zones go on, and keep them EXP_OPEN */
	ck_assert_int_eq(wr(&r, 0, 0, B), 0);
	COND(&r, 0, ZLFS_ZC_EXP_OPEN);
	/* a closed zone cannot be reopened either */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 0), 0);
	COND(&r, 0, ZLFS_ZC_CLOSED);
	ck_assert_int_eq(wr(&r, 2, 0, B), 0);       /* slot freed by the close */
	COND(&r, 2, ZLFS_ZC_IMP_OPEN);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 2), 0); /* imp -> exp needs no slot */
	COUNTS(&r, 0, 2, 1);
	snap_take(&r, &s);
	ck_assert_int_eq(wr(&r, 0, B, B), -ZLFS_ETOOMANYOPEN);
	ck_assert_int_eq(wr(&r, 3, 0, B), -ZLFS_ETOOMANYOPEN);
	snap_same(&r, &s);
	/* a zone becoming FULL frees its slot */
	ck_assert_int_eq(wr(&r, 1, 0, ZS), 0);
	COND(&r, 1, ZLFS_ZC_FULL);
	ck_assert_int_eq(wr(&r, 0, B, B), 0);
	COND(&r, 0, ZLFS_ZC_IMP_OPEN);
	COUNTS(&r, 1, 1, 0);
	/* one imp + one exp: a new zone closes the imp one */
	ck_assert_int_eq(wr(&r, 3, 0, B), 0);
	COND(&r, 0, ZLFS_ZC_CLOSED);
	COND(&r, 2, ZLFS_ZC_EXP_OPEN);
	COUNTS(&r, 1, 1, 1);
}
END_TEST

START_TEST(test_too_many_active)
{
	struct zlfs_zone z[7];
	struct zrules r;
	struct snap s;

	mk(&r, z, 7, 1, ZS, ZS, 2, 3);
	ck_assert_int_eq(wr(&r, 1, 0, B), 0);
	ck_assert_int_eq(wr(&r, 2, 0, B), 0);
	ck_assert_int_eq(wr(&r, 3, 0, B), 0);      /* closes 1 */
	COUNTS(&r, 2, 0, 1);
	/* 3 active (2 open + 1 closed): an empty zone cannot become active */
	snap_take(&r, &s);
	ck_assert_int_eq(wr(&r, 4, 0, B), -ZLFS_ETOOMANYACT);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 4), -ZLFS_ETOOMANYACT);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_FINISH, 4), -ZLFS_ETOOMANYACT);
	snap_same(&r, &s);
	/* a closed zone is already active: it may reopen (closing another) */
	ck_assert_int_eq(wr(&r, 1, B, B), 0);
	COND(&r, 1, ZLFS_ZC_IMP_OPEN);
	COND(&r, 2, ZLFS_ZC_CLOSED);
	COUNTS(&r, 2, 0, 1);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 2), 0);   /* closes 3 */
	COND(&r, 2, ZLFS_ZC_EXP_OPEN);
	COND(&r, 3, ZLFS_ZC_CLOSED);
	/* finishing an active zone frees an active slot */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_FINISH, 3), 0);
	COUNTS(&r, 1, 1, 0);
	ck_assert_int_eq(wr(&r, 4, 0, B), 0);       /* closes 1, 3 active */
	COND(&r, 1, ZLFS_ZC_CLOSED);
	COUNTS(&r, 1, 1, 1);
	ck_assert_int_eq(wr(&r, 5, 0, B), -ZLFS_ETOOMANYACT);
	/* closing keeps the zone active; closing an empty one does not */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 4), 0);
	ck_assert_int_eq(wr(&r, 5, 0, B), -ZLFS_ETOOMANYACT);
	/* a zone filled by writes frees its slot */
	ck_assert_int_eq(wr(&r, 1, 2 * B, ZS - 2 * B), 0);
	COND(&r, 1, ZLFS_ZC_FULL);
	ck_assert_int_eq(wr(&r, 5, 0, B), 0);
	ck_assert_int_eq(wr(&r, 6, 0, B), -ZLFS_ETOOMANYACT);
	/* reset frees one */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_RESET, 5), 0);
	ck_assert_int_eq(wr(&r, 6, 0, B), 0);

	/* max_active alone (no open limit) */
	mk(&r, z, 7, 1, ZS, ZS, 0, 2);
	ck_assert_int_eq(wr(&r, 1, 0, B), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 2), 0);
	ck_assert_int_eq(wr(&r, 3, 0, B), -ZLFS_ETOOMANYACT);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 3), -ZLFS_ETOOMANYACT);
	/* an explicitly opened empty zone closed again gives back its slot */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 2), 0);
	COND(&r, 2, ZLFS_ZC_EMPTY);
	ck_assert_int_eq(wr(&r, 3, 0, B), 0);
	COUNTS(&r, 2, 0, 0);
}
END_TEST

/* ---- explicit management ---------------------------------------------------- */

START_TEST(test_explicit_open)
{
	struct zlfs_zone z[6];
	struct zrules r;

	mk(&r, z, 6, 1, ZS, ZS, 0, 0);
	/* EMPTY -> EXP_OPEN, wp unchanged */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 1), 0);
	COND(&r, 1, ZLFS_ZC_EXP_OPEN);
	ck_assert_uint_eq(rwp(&r, 1), 0);
	COUNTS(&r, 0, 1, 0);
	/* EXP_OPEN again: no-op */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 1), 0);
	COUNTS(&r, 0, 1, 0);
	/* writes keep it explicitly open */
	ck_assert_int_eq(wr(&r, 1, 0, B), 0);
	COND(&r, 1, ZLFS_ZC_EXP_OPEN);
	/* IMP_OPEN -> EXP_OPEN */
	ck_assert_int_eq(wr(&r, 2, 0, B), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 2), 0);
	COND(&r, 2, ZLFS_ZC_EXP_OPEN);
	COUNTS(&r, 0, 2, 0);
	/* CLOSED -> EXP_OPEN */
	ck_assert_int_eq(wr(&r, 3, 0, B), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 3), 0);
	COND(&r, 3, ZLFS_ZC_CLOSED);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 3), 0);
	COND(&r, 3, ZLFS_ZC_EXP_OPEN);
	ck_assert_uint_eq(rwp(&r, 3), B);
	/* FULL: error */
	ck_assert_int_eq(wr(&r, 4, 0, ZS), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 4), -ZLFS_EZONEFULL);
	COND(&r, 4, ZLFS_ZC_FULL);
	/* an explicitly open zone that fills leaves the open count */
	ck_assert_int_eq(wr(&r, 3, B, ZS - B), 0);
	COND(&r, 3, ZLFS_ZC_FULL);
	COUNTS(&r, 0, 2, 0);

	/* at max_open, explicit open of an empty zone closes an imp one */
	mk(&r, z, 6, 1, ZS, ZS, 2, 0);
	ck_assert_int_eq(wr(&r, 1, 0, B), 0);
	ck_assert_int_eq(wr(&r, 2, 0, B), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 3), 0);
	COND(&r, 1, ZLFS_ZC_CLOSED);
	COND(&r, 3, ZLFS_ZC_EXP_OPEN);
	/* opening an imp zone at the limit needs no slot */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 2), 0);
	COUNTS(&r, 0, 2, 1);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 1), -ZLFS_ETOOMANYOPEN);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 4), -ZLFS_ETOOMANYOPEN);
	COND(&r, 1, ZLFS_ZC_CLOSED);
	COND(&r, 4, ZLFS_ZC_EMPTY);
}
END_TEST

START_TEST(test_close)
{
	struct zlfs_zone z[6];
	struct zrules r;

	mk(&r, z, 6, 1, ZS, ZS, 0, 0);
	/* IMP with data -> CLOSED */
	ck_assert_int_eq(wr(&r, 1, 0, 2 * B), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 1), 0);
	COND(&r, 1, ZLFS_ZC_CLOSED);
	ck_assert_uint_eq(rwp(&r, 1), 2 * B);
	COUNTS(&r, 0, 0, 1);
	/* CLOSED: no-op */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 1), 0);
	COND(&r, 1, ZLFS_ZC_CLOSED);
	/* EXP without data -> EMPTY */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 2), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 2), 0);
	COND(&r, 2, ZLFS_ZC_EMPTY);
	COUNTS(&r, 0, 0, 1);
	/* EXP with data -> CLOSED */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 3), 0);
	ck_assert_int_eq(wr(&r, 3, 0, B), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 3), 0);
	COND(&r, 3, ZLFS_ZC_CLOSED);
	COUNTS(&r, 0, 0, 2);
	/* EMPTY and FULL: no-op */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 4), 0);
	COND(&r, 4, ZLFS_ZC_EMPTY);
	ck_assert_int_eq(wr(&r, 5, 0, ZS), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 5), 0);
	COND(&r, 5, ZLFS_ZC_FULL);
	ck_assert_uint_eq(rwp(&r, 5), ZS);
	/* a closed zone is written at its wp */
	ck_assert_int_eq(wr(&r, 1, 0, B), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(wr(&r, 1, 2 * B, B), 0);
	COND(&r, 1, ZLFS_ZC_IMP_OPEN);
}
END_TEST

START_TEST(test_finish)
{
	struct zlfs_zone z[7];
	struct zrules r;
	const uint64_t cap = 12 * B;

	mk(&r, z, 7, 1, ZS, cap, 0, 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_FINISH, 1), 0);          /* EMPTY */
	ck_assert_int_eq(wr(&r, 2, 0, B), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_FINISH, 2), 0);          /* IMP */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 3), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_FINISH, 3), 0);          /* EXP */
	ck_assert_int_eq(wr(&r, 4, 0, 3 * B), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 4), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_FINISH, 4), 0);          /* CLOSED */
	for (uint32_t i = 1; i <= 4; i++) {
		COND(&r, i, ZLFS_ZC_FULL);
		ck_assert_uint_eq(rwp(&r, i), cap);   /* the capacity, not the zone size */
	}
	COUNTS(&r, 0, 0, 0);
	/* FULL: no-op */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_FINISH, 4), 0);
	COND(&r, 4, ZLFS_ZC_FULL);
	/* finished zones take no writes */
	ck_assert_int_eq(wr(&r, 2, B, B), -ZLFS_EZONEFULL);
	ck_assert_int_eq(wr(&r, 2, cap, B), -ZLFS_EZONEFULL);
}
END_TEST

START_TEST(test_reset)
{
	struct zlfs_zone z[7];
	struct zrules r;

	mk(&r, z, 7, 1, ZS, ZS, 0, 0);
	ck_assert_int_eq(wr(&r, 1, 0, B), 0);                         /* IMP */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 2), 0);                 /* EXP, empty */
	ck_assert_int_eq(wr(&r, 3, 0, B), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 3), 0);                /* CLOSED */
	ck_assert_int_eq(wr(&r, 4, 0, ZS), 0);                        /* FULL */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 5), 0);
	ck_assert_int_eq(wr(&r, 5, 0, 2 * B), 0);                     /* EXP, data */
	COUNTS(&r, 1, 2, 1);
	nz_discards = 0;
	for (uint32_t i = 1; i <= 6; i++) {
		ck_assert_int_eq(mg(&r, ZLFS_ZM_RESET, i), 0);
		COND(&r, i, ZLFS_ZC_EMPTY);
		ck_assert_uint_eq(rwp(&r, i), 0);
	}
	COUNTS(&r, 0, 0, 0);
	/* data dropped for every zone that was not empty: 1..5, not 6 */
	ck_assert_uint_eq(nz_discards, 5);
	for (uint32_t i = 0; i < 5; i++)
		ck_assert_uint_eq(discarded[i], i + 1);
	/* reset of an empty zone: nothing */
	nz_discards = 0;
	ck_assert_int_eq(mg(&r, ZLFS_ZM_RESET, 1), 0);
	ck_assert_uint_eq(nz_discards, 0);
	/* a reset zone is written from its start again */
	ck_assert_int_eq(wr(&r, 4, 0, B), 0);
	/* discard may be NULL */
	ck_assert_int_eq(zrules_mgmt(&r, ZLFS_ZM_RESET, 4, NULL, NULL), 0);
	CHK(&r);
	COND(&r, 4, ZLFS_ZC_EMPTY);
}
END_TEST

/* Zones 2..10 in every condition; 0 and 1 conventional. */
static void all_conds(struct zrules *r, struct zlfs_zone *z, uint32_t max_open, uint32_t max_active)
{
	mk(r, z, 12, 2, ZS, ZS, max_open, max_active);
	/* 2 EMPTY */
	ck_assert_int_eq(wr(r, 3, 0, B), 0);                          /* 3 IMP */
	ck_assert_int_eq(mg(r, ZLFS_ZM_OPEN, 4), 0);
	ck_assert_int_eq(wr(r, 4, 0, 2 * B), 0);                      /* 4 EXP, data */
	ck_assert_int_eq(wr(r, 5, 0, 3 * B), 0);
	ck_assert_int_eq(mg(r, ZLFS_ZM_CLOSE, 5), 0);                 /* 5 CLOSED */
	ck_assert_int_eq(wr(r, 6, 0, ZS), 0);                         /* 6 FULL */
	ck_assert_int_eq(wr(r, 7, 0, 4 * B), 0);
	ck_assert_int_eq(sc(r, 7, ZLFS_ZC_RDONLY), 0);   /* 7 RO */
	CHK(r);
	ck_assert_int_eq(wr(r, 8, 0, B), 0);
	ck_assert_int_eq(sc(r, 8, ZLFS_ZC_OFFLINE), 0);  /* 8 OFFLINE */
	CHK(r);
	ck_assert_int_eq(mg(r, ZLFS_ZM_OPEN, 9), 0);                  /* 9 EXP, empty */
	ck_assert_int_eq(wr(r, 10, 0, 5 * B), 0);
	ck_assert_int_eq(mg(r, ZLFS_ZM_CLOSE, 10), 0);                /* 10 CLOSED */
	/* 11 EMPTY */
	COUNTS(r, 1, 2, 2);
}

START_TEST(test_all_ops)
{
	struct zlfs_zone z[12];
	struct zrules r;

	/* close-all: open zones only; conventional zones are not an error */
	all_conds(&r, z, 0, 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, ZLFS_ZONE_ALL), 0);
	COND(&r, 2, ZLFS_ZC_EMPTY);
	COND(&r, 3, ZLFS_ZC_CLOSED);
	COND(&r, 4, ZLFS_ZC_CLOSED);
	COND(&r, 5, ZLFS_ZC_CLOSED);
	COND(&r, 6, ZLFS_ZC_FULL);
	COND(&r, 7, ZLFS_ZC_RDONLY);
	COND(&r, 8, ZLFS_ZC_OFFLINE);
	COND(&r, 9, ZLFS_ZC_EMPTY);
	COND(&r, 10, ZLFS_ZC_CLOSED);
	COUNTS(&r, 0, 0, 4);

	/* open-all: closed zones only */
	all_conds(&r, z, 0, 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, ZLFS_ZONE_ALL), 0);
	COND(&r, 2, ZLFS_ZC_EMPTY);
	COND(&r, 3, ZLFS_ZC_IMP_OPEN);
	COND(&r, 4, ZLFS_ZC_EXP_OPEN);
	COND(&r, 5, ZLFS_ZC_EXP_OPEN);
	COND(&r, 6, ZLFS_ZC_FULL);
	COND(&r, 7, ZLFS_ZC_RDONLY);
	COND(&r, 8, ZLFS_ZC_OFFLINE);
	COND(&r, 9, ZLFS_ZC_EXP_OPEN);
	COND(&r, 10, ZLFS_ZC_EXP_OPEN);
	COND(&r, 11, ZLFS_ZC_EMPTY);
	COUNTS(&r, 1, 4, 0);
	ck_assert_uint_eq(rwp(&r, 5), 3 * B);

	/* finish-all: open and closed zones; empty ones stay empty */
	all_conds(&r, z, 0, 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_FINISH, ZLFS_ZONE_ALL), 0);
	COND(&r, 2, ZLFS_ZC_EMPTY);
	for (uint32_t i = 3; i <= 6; i++) {
		COND(&r, i, ZLFS_ZC_FULL);
		ck_assert_uint_eq(rwp(&r, i), ZS);
	}
	COND(&r, 7, ZLFS_ZC_RDONLY);
	ck_assert_uint_eq(rwp(&r, 7), 4 * B);
	COND(&r, 8, ZLFS_ZC_OFFLINE);
	COND(&r, 9, ZLFS_ZC_FULL);
	COND(&r, 10, ZLFS_ZC_FULL);
	COND(&r, 11, ZLFS_ZC_EMPTY);
	COUNTS(&r, 0, 0, 0);

	/* reset-all: every sequential zone that is not empty, read-only or offline */
	all_conds(&r, z, 0, 0);
	nz_discards = 0;
	ck_assert_int_eq(mg(&r, ZLFS_ZM_RESET, ZLFS_ZONE_ALL), 0);
	for (uint32_t i = 2; i <= 11; i++) {
		if (i == 7 || i == 8)
			continue;
		COND(&r, i, ZLFS_ZC_EMPTY);
		ck_assert_uint_eq(rwp(&r, i), 0);
	}
	COND(&r, 7, ZLFS_ZC_RDONLY);
	ck_assert_uint_eq(rwp(&r, 7), 4 * B);
	COND(&r, 8, ZLFS_ZC_OFFLINE);
	COUNTS(&r, 0, 0, 0);
	{
		/* discards: 3 4 5 6 9 10 */
		static const uint32_t want[] = { 3, 4, 5, 6, 9, 10 };
		ck_assert_uint_eq(nz_discards, 6);
		for (uint32_t i = 0; i < 6; i++)
			ck_assert_uint_eq(discarded[i], want[i]);
	}
	/* on an all-empty device every ALL op is a no-op */
	for (int op = ZLFS_ZM_RESET; op <= ZLFS_ZM_FINISH; op++)
		ck_assert_int_eq(mg(&r, (enum zlfs_zone_mgmt)op, ZLFS_ZONE_ALL), 0);
	COND(&r, 2, ZLFS_ZC_EMPTY);
	COND(&r, 11, ZLFS_ZC_EMPTY);
	ck_assert_int_eq(mg(&r, (enum zlfs_zone_mgmt)9, ZLFS_ZONE_ALL), -EINVAL);
	ck_assert_int_eq(mg(&r, (enum zlfs_zone_mgmt)9, 2), -EINVAL);

	/* open-all with one open slot for two closed zones */
	all_conds(&r, z, 4, 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 3), 0);   /* 3 explicitly open, 2 closed */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, ZLFS_ZONE_ALL), -ZLFS_ETOOMANYOPEN);
	ck_assert_uint_eq(r.nr_imp + r.nr_exp, 4);
	COND(&r, 3, ZLFS_ZC_EXP_OPEN);
	COND(&r, 4, ZLFS_ZC_EXP_OPEN);
	COND(&r, 9, ZLFS_ZC_EXP_OPEN);
	COND(&r, 10, ZLFS_ZC_CLOSED);
	/* with an implicitly open zone to close it goes through */
	all_conds(&r, z, 4, 0);     /* 1 imp + 2 exp + 2 closed */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, ZLFS_ZONE_ALL), 0);
	COND(&r, 3, ZLFS_ZC_CLOSED);
	COND(&r, 5, ZLFS_ZC_EXP_OPEN);
	COND(&r, 10, ZLFS_ZC_EXP_OPEN);
	COUNTS(&r, 0, 4, 1);
}
END_TEST

/* ---- conventional zones ------------------------------------------------------ */

START_TEST(test_conv)
{
	struct zlfs_zone z[6];
	struct zrules r;
	uint64_t pos;
	struct snap s;

	mk(&r, z, 6, 3, ZS, ZS, 1, 1);
	/* anywhere, any order, again and again */
	ck_assert_int_eq(wr(&r, 0, 5 * B, B), 0);
	ck_assert_int_eq(wr(&r, 0, 0, B), 0);
	ck_assert_int_eq(wr(&r, 0, 5 * B, 3 * B), 0);
	ck_assert_int_eq(wr(&r, 1, ZS - B, B), 0);
	ck_assert_int_eq(wr(&r, 2, 0, ZS), 0);
	ck_assert_int_eq(wr(&r, 2, 0, ZS), 0);
	for (uint32_t i = 0; i < 3; i++) {
		COND(&r, i, ZLFS_ZC_NOT_WP);
		ck_assert_uint_eq(rwp(&r, i), 0);
	}
	COUNTS(&r, 0, 0, 0);
	/* conventional zones are plain LBAs: a write spans them */
	ck_assert_int_eq(wr(&r, 0, ZS - B, 2 * B), 0);
	ck_assert_int_eq(wr(&r, 0, 3 * B, 2 * ZS), 0);
	ck_assert_int_eq(wr(&r, 0, 0, 3 * ZS), 0);
	/* but not into a sequential zone */
	snap_take(&r, &s);
	ck_assert_int_eq(wr(&r, 2, ZS - B, 2 * B), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(wr(&r, 1, 0, 2 * ZS + B), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(wr(&r, 0, 0, 4 * ZS), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(wr(&r, 0, 0, 6 * ZS), -ZLFS_EBOUNDARY);
	snap_same(&r, &s);
	COND(&r, 3, ZLFS_ZC_EMPTY);
	/* append: no wp */
	ck_assert_int_eq(app(&r, 1, 0, B, &pos), -EINVAL);
	/* management: not for conventional zones */
	for (int op = ZLFS_ZM_RESET; op <= ZLFS_ZM_FINISH; op++)
		ck_assert_int_eq(mg(&r, (enum zlfs_zone_mgmt)op, 1), -EINVAL);
	snap_same(&r, &s);
	/* ... but the ALL forms skip them */
	for (int op = ZLFS_ZM_RESET; op <= ZLFS_ZM_FINISH; op++)
		ck_assert_int_eq(mg(&r, (enum zlfs_zone_mgmt)op, ZLFS_ZONE_ALL), 0);
	/* a conventional zone only becomes read-only or offline */
	ck_assert_int_eq(sc(&r, 0, ZLFS_ZC_EMPTY), -EINVAL);
	ck_assert_int_eq(sc(&r, 0, ZLFS_ZC_IMP_OPEN), -EINVAL);
	ck_assert_int_eq(sc(&r, 0, ZLFS_ZC_FULL), -EINVAL);
	snap_same(&r, &s);
	ck_assert_int_eq(sc(&r, 0, ZLFS_ZC_RDONLY), 0);
	CHK(&r);
	ck_assert_int_eq(wr(&r, 0, 0, B), -ZLFS_EZONERO);
	ck_assert_int_eq(sc(&r, 1, ZLFS_ZC_OFFLINE), 0);
	CHK(&r);
	ck_assert_int_eq(wr(&r, 1, 2 * B, B), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(wr(&r, 2, 0, B), 0);
	/* a span starting in a read-only / offline zone */
	ck_assert_int_eq(wr(&r, 0, ZS - B, 2 * B), -ZLFS_EZONERO);
	ck_assert_int_eq(wr(&r, 1, 0, 2 * ZS), -ZLFS_EZONEOFFLINE);
	COUNTS(&r, 0, 0, 0);
}
END_TEST

/*
 * A conventional write that starts in a good zone and runs into a read-only
 * or offline one must fail like one that starts there.
 */
START_TEST(test_conv_span_into_bad_zone)
{
	struct zlfs_zone z[6];
	struct zrules r;

	mk(&r, z, 6, 3, ZS, ZS, 0, 0);
	ck_assert_int_eq(sc(&r, 1, ZLFS_ZC_RDONLY), 0);
	ck_assert_int_eq(sc(&r, 2, ZLFS_ZC_OFFLINE), 0);
	CHK(&r);
	/* spans covering a whole zone step: these reach zone 1 in the loop */
	ck_assert_int_eq(wr(&r, 0, 0, 2 * ZS), -ZLFS_EZONERO);
	ck_assert_int_eq(wr(&r, 0, ZS - B, ZS + B), -ZLFS_EZONERO);
	/* a span from the middle of zone 0 into the start of zone 1 */
	ck_assert_int_eq(wr(&r, 0, ZS / 2, ZS), -ZLFS_EZONERO);
	ck_assert_int_eq(wr(&r, 0, ZS - B, 2 * B), -ZLFS_EZONERO);
	/* the same into an offline zone */
	mk(&r, z, 6, 3, ZS, ZS, 0, 0);
	ck_assert_int_eq(sc(&r, 2, ZLFS_ZC_OFFLINE), 0);
	ck_assert_int_eq(wr(&r, 1, ZS - B, 2 * B), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(wr(&r, 1, 8 * B, ZS), -ZLFS_EZONEOFFLINE);
}
END_TEST

/* ---- reads -------------------------------------------------------------------- */

struct seg { uint64_t off, len; bool valid; };
struct segs { int n; struct seg s[64]; };

static void seg_cb(void *ctx, uint64_t off, uint64_t len, bool valid)
{
	struct segs *ss = ctx;

	ck_assert_int_lt(ss->n, 64);
	ss->s[ss->n].off = off;
	ss->s[ss->n].len = len;
	ss->s[ss->n].valid = valid;
	ss->n++;
}

/*
 * Read [off, off+len) and check the segments tile it in order, then return
 * how many bytes from off are valid before the first invalid byte, and the
 * total valid bytes.
 */
static int rd(struct zrules *r, uint64_t off, uint64_t len, struct segs *ss)
{
	memset(ss, 0, sizeof(*ss));
	int ret = zrules_read(r, off, len, seg_cb, ss);
	CHK(r);
	if (ret) {
		ck_assert_int_eq(ss->n, 0);   /* nothing delivered for a failed read */
		return ret;
	}
	uint64_t o = off;
	for (int i = 0; i < ss->n; i++) {
		ck_assert_uint_eq(ss->s[i].off, o);
		ck_assert_uint_gt(ss->s[i].len, 0);
		o += ss->s[i].len;
	}
	ck_assert_uint_eq(o, off + len);
	return 0;
}

/* Is byte at absolute offset a reported valid? */
static bool seg_valid(const struct segs *ss, uint64_t a)
{
	for (int i = 0; i < ss->n; i++)
		if (a >= ss->s[i].off && a < ss->s[i].off + ss->s[i].len)
			return ss->s[i].valid;
	ck_abort_msg("offset %llu not covered", (unsigned long long)a);
	return false;
}

START_TEST(test_read_segments)
{
	struct zlfs_zone z[8];
	struct zrules r;
	struct segs ss;
	const uint64_t cap = 12 * B;

	mk(&r, z, 8, 2, ZS, cap, 0, 0);
	ck_assert_int_eq(wr(&r, 2, 0, 3 * B), 0);
	/* whole zone: valid below the wp, invalid from it */
	ck_assert_int_eq(rd(&r, z[2].start, ZS, &ss), 0);
	ck_assert_int_eq(ss.n, 2);
	ck_assert(ss.s[0].valid);
	ck_assert_uint_eq(ss.s[0].len, 3 * B);
	ck_assert(!ss.s[1].valid);
	ck_assert_uint_eq(ss.s[1].len, ZS - 3 * B);
	/* fully below / fully above the wp */
	ck_assert_int_eq(rd(&r, z[2].start + B, 2 * B, &ss), 0);
	ck_assert_int_eq(ss.n, 1);
	ck_assert(ss.s[0].valid);
	ck_assert_int_eq(rd(&r, z[2].start + 4 * B, 2 * B, &ss), 0);
	ck_assert_int_eq(ss.n, 1);
	ck_assert(!ss.s[0].valid);
	/* straddling the wp */
	ck_assert_int_eq(rd(&r, z[2].start + 2 * B, 2 * B, &ss), 0);
	ck_assert_int_eq(ss.n, 2);
	ck_assert(ss.s[0].valid && !ss.s[1].valid);
	ck_assert_uint_eq(ss.s[1].off, z[2].start + 3 * B);
	/* empty zone: all invalid */
	ck_assert_int_eq(rd(&r, z[3].start, ZS, &ss), 0);
	ck_assert_int_eq(ss.n, 1);
	ck_assert(!ss.s[0].valid);
	/* conventional zones: all valid, also across zones */
	ck_assert_int_eq(rd(&r, B, 2 * ZS - 2 * B, &ss), 0);
	for (uint64_t a = B; a < 2 * ZS - B; a += B)
		ck_assert(seg_valid(&ss, a));
	/* conv -> seq -> seq with a full zone of capacity < size */
	ck_assert_int_eq(wr(&r, 3, 0, cap), 0);
	COND(&r, 3, ZLFS_ZC_FULL);
	ck_assert_int_eq(rd(&r, ZS - B, 3 * ZS + 2 * B, &ss), 0);
	ck_assert(seg_valid(&ss, ZS - B));                  /* conv */
	for (uint64_t a = z[2].start; a < z[2].start + 3 * B; a += B)
		ck_assert(seg_valid(&ss, a));
	for (uint64_t a = z[2].start + 3 * B; a < z[3].start; a += B)
		ck_assert(!seg_valid(&ss, a));
	for (uint64_t a = z[3].start; a < z[3].start + cap; a += B)
		ck_assert(seg_valid(&ss, a));
	for (uint64_t a = z[3].start + cap; a < z[4].start; a += B)
		ck_assert(!seg_valid(&ss, a));               /* past the capacity */
	ck_assert(!seg_valid(&ss, z[4].start));
	/* sub-block reads */
	ck_assert_int_eq(rd(&r, z[2].start + 3 * B - 512, 1024, &ss), 0);
	ck_assert_int_eq(ss.n, 2);
	ck_assert_uint_eq(ss.s[0].len, 512);
	/* read-only zone: data below the wp stays readable */
	ck_assert_int_eq(sc(&r, 2, ZLFS_ZC_RDONLY), 0);
	ck_assert_int_eq(rd(&r, z[2].start, ZS, &ss), 0);
	ck_assert_int_eq(ss.n, 2);
	ck_assert_uint_eq(ss.s[0].len, 3 * B);
	ck_assert(ss.s[0].valid);
	/* offline: the read fails, also when only part of it is offline */
	ck_assert_int_eq(sc(&r, 4, ZLFS_ZC_OFFLINE), 0);
	ck_assert_int_eq(rd(&r, z[4].start, B, &ss), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(rd(&r, z[3].start, 2 * ZS, &ss), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(rd(&r, z[4].start - B, 2 * B, &ss), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(rd(&r, z[3].start, ZS, &ss), 0);
	ck_assert_int_eq(sc(&r, 0, ZLFS_ZC_OFFLINE), 0);
	ck_assert_int_eq(rd(&r, 0, B, &ss), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(rd(&r, ZS, B, &ss), 0);
}
END_TEST

/* ---- faults, capacity, power cycle ----------------------------------------- */

START_TEST(test_ro_offline)
{
	struct zlfs_zone z[6];
	struct zrules r;
	uint64_t pos;

	mk(&r, z, 6, 1, ZS, ZS, 2, 3);
	ck_assert_int_eq(wr(&r, 1, 0, 2 * B), 0);
	ck_assert_int_eq(wr(&r, 2, 0, B), 0);
	ck_assert_int_eq(wr(&r, 3, 0, B), 0);     /* closes 1 */
	COUNTS(&r, 2, 0, 1);
	/* read-only: leaves the open count, keeps its wp */
	ck_assert_int_eq(sc(&r, 2, ZLFS_ZC_RDONLY), 0);
	CHK(&r);
	COND(&r, 2, ZLFS_ZC_RDONLY);
	ck_assert_uint_eq(rwp(&r, 2), B);
	COUNTS(&r, 1, 0, 1);
	ck_assert_int_eq(wr(&r, 2, B, B), -ZLFS_EZONERO);
	ck_assert_int_eq(wr(&r, 2, 0, B), -ZLFS_EZONERO);
	ck_assert_int_eq(app(&r, 2, 0, B, &pos), -ZLFS_EZONERO);
	for (int op = ZLFS_ZM_RESET; op <= ZLFS_ZM_FINISH; op++)
		ck_assert_int_eq(mg(&r, (enum zlfs_zone_mgmt)op, 2), -ZLFS_EZONERO);
	COND(&r, 2, ZLFS_ZC_RDONLY);
	ck_assert_uint_eq(rwp(&r, 2), B);
	/* offline: leaves the active count, wp no longer valid */
	ck_assert_int_eq(sc(&r, 1, ZLFS_ZC_OFFLINE), 0);
	CHK(&r);
	COUNTS(&r, 1, 0, 0);
	ck_assert_uint_eq(rwp(&r, 1), 0);
	ck_assert_int_eq(wr(&r, 1, 0, B), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(wr(&r, 1, 2 * B, B), -ZLFS_EZONEOFFLINE);
	ck_assert_int_eq(app(&r, 1, 0, B, &pos), -ZLFS_EZONEOFFLINE);
	for (int op = ZLFS_ZM_RESET; op <= ZLFS_ZM_FINISH; op++)
		ck_assert_int_eq(mg(&r, (enum zlfs_zone_mgmt)op, 1), -ZLFS_EZONEOFFLINE);
	/* the freed slots are usable */
	ck_assert_int_eq(wr(&r, 4, 0, B), 0);
	ck_assert_int_eq(wr(&r, 5, 0, B), 0);     /* closes 3: active 3 */
	COUNTS(&r, 2, 0, 1);
	/* a full zone and an empty one can be taken offline / read-only too */
	mk(&r, z, 6, 1, ZS, ZS, 0, 0);
	ck_assert_int_eq(wr(&r, 1, 0, ZS), 0);
	ck_assert_int_eq(sc(&r, 1, ZLFS_ZC_RDONLY), 0);
	CHK(&r);
	ck_assert_int_eq(sc(&r, 2, ZLFS_ZC_OFFLINE), 0);
	CHK(&r);
	ck_assert_int_eq(wr(&r, 1, 0, B), -ZLFS_EZONERO);
	COUNTS(&r, 0, 0, 0);
	/* power cycle leaves them alone */
	zrules_power_cycle(&r);
	CHK(&r);
	COND(&r, 1, ZLFS_ZC_RDONLY);
	COND(&r, 2, ZLFS_ZC_OFFLINE);
}
END_TEST

START_TEST(test_capacity)
{
	struct zlfs_zone z[4];
	struct zrules r;
	const uint64_t cap = 10 * B;
	uint64_t pos;

	mk(&r, z, 4, 0, ZS, cap, 0, 0);
	ck_assert_int_eq(wr(&r, 0, 0, 8 * B), 0);
	/* crossing the capacity, even well inside the zone */
	ck_assert_int_eq(wr(&r, 0, 8 * B, 3 * B), -ZLFS_EBOUNDARY);
	ck_assert_int_eq(app(&r, 0, 0, 3 * B, &pos), -ZLFS_EBOUNDARY);
	/* between capacity and zone end: never the wp */
	ck_assert_int_eq(wr(&r, 0, cap, B), -ZLFS_EUNALIGNED);
	ck_assert_int_eq(wr(&r, 0, 8 * B, 2 * B), 0);
	COND(&r, 0, ZLFS_ZC_FULL);
	ck_assert_uint_eq(rwp(&r, 0), cap);
	ck_assert_int_eq(wr(&r, 0, cap, B), -ZLFS_EZONEFULL);
	/* one write of exactly the capacity */
	ck_assert_int_eq(app(&r, 1, 3 * B, cap, &pos), 0);
	ck_assert_uint_eq(pos, z[1].start);
	COND(&r, 1, ZLFS_ZC_FULL);
	/* a write of the zone size does not fit */
	ck_assert_int_eq(wr(&r, 2, 0, ZS), -ZLFS_EBOUNDARY);
	COND(&r, 2, ZLFS_ZC_EMPTY);
	/* finish and reset */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_FINISH, 2), 0);
	ck_assert_uint_eq(rwp(&r, 2), cap);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_RESET, 2), 0);
	ck_assert_uint_eq(rwp(&r, 2), 0);
}
END_TEST

START_TEST(test_power_cycle)
{
	struct zlfs_zone z[10];
	struct zrules r;

	mk(&r, z, 10, 1, ZS, ZS, 0, 0);
	ck_assert_int_eq(wr(&r, 1, 0, B), 0);                      /* IMP, data */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 2), 0);              /* EXP, empty */
	ck_assert_int_eq(mg(&r, ZLFS_ZM_OPEN, 3), 0);
	ck_assert_int_eq(wr(&r, 3, 0, 2 * B), 0);                  /* EXP, data */
	ck_assert_int_eq(wr(&r, 4, 0, B), 0);
	ck_assert_int_eq(mg(&r, ZLFS_ZM_CLOSE, 4), 0);             /* CLOSED */
	ck_assert_int_eq(wr(&r, 5, 0, ZS), 0);                     /* FULL */
	ck_assert_int_eq(wr(&r, 6, 0, B), 0);
	ck_assert_int_eq(sc(&r, 6, ZLFS_ZC_RDONLY), 0);
	ck_assert_int_eq(sc(&r, 7, ZLFS_ZC_OFFLINE), 0);
	/* 8, 9 EMPTY */
	COUNTS(&r, 1, 2, 1);
	zrules_power_cycle(&r);
	CHK(&r);
	COND(&r, 0, ZLFS_ZC_NOT_WP);
	COND(&r, 1, ZLFS_ZC_CLOSED);
	COND(&r, 2, ZLFS_ZC_EMPTY);
	COND(&r, 3, ZLFS_ZC_CLOSED);
	COND(&r, 4, ZLFS_ZC_CLOSED);
	COND(&r, 5, ZLFS_ZC_FULL);
	COND(&r, 6, ZLFS_ZC_RDONLY);
	COND(&r, 7, ZLFS_ZC_OFFLINE);
	COND(&r, 8, ZLFS_ZC_EMPTY);
	ck_assert_uint_eq(rwp(&r, 1), B);
	ck_assert_uint_eq(rwp(&r, 3), 2 * B);
	COUNTS(&r, 0, 0, 3);
	/* write pointers survive: writing goes on at them */
	ck_assert_int_eq(wr(&r, 3, 2 * B, B), 0);
	COND(&r, 3, ZLFS_ZC_IMP_OPEN);
	/* counters are rebuilt from the zones, whatever they held */
	r.nr_imp = 77;
	r.nr_closed = 0;
	ck_assert_int_eq(zrules_check(&r), -EUCLEAN);
	zrules_power_cycle(&r);
	CHK(&r);
	COUNTS(&r, 0, 0, 3);
}
END_TEST

/* zrules_check is the oracle of the other tests: it must see breakage. */
START_TEST(test_check_detects)
{
	struct zlfs_zone z[6];
	struct zrules r;

	mk(&r, z, 6, 1, ZS, 12 * B, 2, 3);
	ck_assert_int_eq(wr(&r, 1, 0, B), 0);
	ck_assert_int_eq(wr(&r, 2, 0, B), 0);
	CHK(&r);
	z[3].wp = z[3].start + 13 * B;                 /* past the capacity */
	ck_assert_int_eq(zrules_check(&r), -EUCLEAN);
	z[3].wp = z[3].start + B;                      /* EMPTY with data */
	ck_assert_int_eq(zrules_check(&r), -EUCLEAN);
	z[3].wp = z[3].start;
	CHK(&r);
	z[3].cond = ZLFS_ZC_FULL;                      /* FULL below capacity */
	ck_assert_int_eq(zrules_check(&r), -EUCLEAN);
	z[3].wp = z[3].start + 12 * B;
	CHK(&r);
	z[3].cond = ZLFS_ZC_IMP_OPEN;                  /* counter mismatch */
	ck_assert_int_eq(zrules_check(&r), -EUCLEAN);
	r.nr_imp++;                                    /* 3 open > max_open 2 */
	ck_assert_int_eq(zrules_check(&r), -EUCLEAN);
	z[3].cond = ZLFS_ZC_CLOSED;
	r.nr_imp--;
	r.nr_closed++;
	CHK(&r);
	z[4].cond = ZLFS_ZC_CLOSED;                    /* 4 active > max_active 3 */
	z[4].wp += B;
	r.nr_closed++;
	ck_assert_int_eq(zrules_check(&r), -EUCLEAN);
	z[1].wp = z[1].start - 1;                      /* below the start */
	ck_assert_int_eq(zrules_check(&r), -EUCLEAN);
}
END_TEST

/* ---- randomized, against a model -------------------------------------------- */

/*
 * The model: each zone is (type, cond, relative wp, cap); the device has the
 * (clamped) limits and the round-robin position of the implicit close.
 * Written from the rules, not from zrules.c.
 */
#define MNZ 12

struct mzone { uint8_t type, cond; uint64_t wp, cap; };
struct model {
	struct mzone z[MNZ];
	uint32_t nz, nconv, max_open, max_active;
	uint32_t rr;          /* sequential-zone index the next implicit close looks at first */
	uint64_t zs;
};

static bool m_open(uint8_t c)
{
	return c == ZLFS_ZC_IMP_OPEN || c == ZLFS_ZC_EXP_OPEN;
}

static uint32_t m_nopen(const struct model *m)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < m->nz; i++)
		n += m_open(m->z[i].cond);
	return n;
}

static uint32_t m_nactive(const struct model *m)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < m->nz; i++)
		n += m_open(m->z[i].cond) || m->z[i].cond == ZLFS_ZC_CLOSED;
	return n;
}

static bool m_close_imp(struct model *m)
{
	uint32_t nseq = m->nz - m->nconv;

	for (uint32_t k = 0; k < nseq; k++) {
		uint32_t s = (m->rr + k) % nseq;
		struct mzone *z = &m->z[m->nconv + s];
		if (z->cond == ZLFS_ZC_IMP_OPEN) {
			z->cond = ZLFS_ZC_CLOSED;
			m->rr = (s + 1) % nseq;
			return true;
		}
	}
	return false;
}

/* Make room to open zone i (EMPTY or CLOSED or already open). */
static int m_resources(struct model *m, uint32_t i)
{
	struct mzone *z = &m->z[i];

	if (z->cond == ZLFS_ZC_EMPTY && m->max_active && m_nactive(m) >= m->max_active)
		return -ZLFS_ETOOMANYACT;
	if (m_open(z->cond) || !m->max_open || m_nopen(m) < m->max_open)
		return 0;
	return m_close_imp(m) ? 0 : -ZLFS_ETOOMANYOPEN;
}

static int m_write(struct model *m, uint64_t off, uint64_t len, bool append, uint64_t *pos)
{
	uint32_t zi = (uint32_t)(off / m->zs);
	struct mzone *z = &m->z[zi];
	uint64_t start = zi * m->zs;
	int ret;

	if (z->type == ZLFS_ZONE_CONV) {
		if (append)
			return -EINVAL;
		for (uint64_t j = zi; j <= (off + len - 1) / m->zs; j++) {
			if (j >= m->nz || m->z[j].type != ZLFS_ZONE_CONV)
				return -ZLFS_EBOUNDARY;
			if (m->z[j].cond == ZLFS_ZC_OFFLINE)
				return -ZLFS_EZONEOFFLINE;
			if (m->z[j].cond == ZLFS_ZC_RDONLY)
				return -ZLFS_EZONERO;
		}
		*pos = off;
		return 0;
	}
	if (z->cond == ZLFS_ZC_OFFLINE)
		return -ZLFS_EZONEOFFLINE;
	if (z->cond == ZLFS_ZC_RDONLY)
		return -ZLFS_EZONERO;
	if (z->cond == ZLFS_ZC_FULL)
		return -ZLFS_EZONEFULL;
	uint64_t rel = append ? z->wp : off - start;
	if (rel != z->wp)
		return -ZLFS_EUNALIGNED;
	if (rel + len > z->cap)
		return -ZLFS_EBOUNDARY;
	if (z->cond == ZLFS_ZC_EMPTY || z->cond == ZLFS_ZC_CLOSED) {
		if ((ret = m_resources(m, zi)))
			return ret;
		z->cond = ZLFS_ZC_IMP_OPEN;
	}
	z->wp += len;
	if (z->wp == z->cap)
		z->cond = ZLFS_ZC_FULL;
	*pos = start + rel;
	return 0;
}

static uint32_t m_ndisc;
static uint32_t m_disc[MNZ];

static int m_mgmt_one(struct model *m, enum zlfs_zone_mgmt op, uint32_t i)
{
	struct mzone *z = &m->z[i];
	int ret;

	if (z->type == ZLFS_ZONE_CONV)
		return -EINVAL;
	if (z->cond == ZLFS_ZC_OFFLINE)
		return -ZLFS_EZONEOFFLINE;
	if (z->cond == ZLFS_ZC_RDONLY)
		return -ZLFS_EZONERO;
	switch (op) {
	case ZLFS_ZM_RESET:
		if (z->cond != ZLFS_ZC_EMPTY)
			m_disc[m_ndisc++] = i;
		z->cond = ZLFS_ZC_EMPTY;
		z->wp = 0;
		return 0;
	case ZLFS_ZM_OPEN:
		if (z->cond == ZLFS_ZC_FULL)
			return -ZLFS_EZONEFULL;
		if ((ret = m_resources(m, i)))
			return ret;
		z->cond = ZLFS_ZC_EXP_OPEN;
		return 0;
	case ZLFS_ZM_CLOSE:
		if (m_open(z->cond))
			z->cond = z->wp ? ZLFS_ZC_CLOSED : ZLFS_ZC_EMPTY;
		return 0;
	case ZLFS_ZM_FINISH:
		if (z->cond == ZLFS_ZC_EMPTY && m->max_active && m_nactive(m) >= m->max_active)
			return -ZLFS_ETOOMANYACT;
		z->cond = ZLFS_ZC_FULL;
		z->wp = z->cap;
		return 0;
	}
	return -EINVAL;
}

static int m_mgmt(struct model *m, enum zlfs_zone_mgmt op, uint32_t zone)
{
	if (zone != ZLFS_ZONE_ALL)
		return m_mgmt_one(m, op, zone);
	for (uint32_t i = m->nconv; i < m->nz; i++) {
		uint8_t c = m->z[i].cond;
		bool apply = false;
		switch (op) {
		case ZLFS_ZM_RESET: apply = c == ZLFS_ZC_FULL || c == ZLFS_ZC_CLOSED || m_open(c); break;
		case ZLFS_ZM_OPEN: apply = c == ZLFS_ZC_CLOSED; break;
		case ZLFS_ZM_CLOSE: apply = m_open(c); break;
		case ZLFS_ZM_FINISH: apply = c == ZLFS_ZC_CLOSED || m_open(c); break;
		}
		if (apply) {
			int ret = m_mgmt_one(m, op, i);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static void m_power_cycle(struct model *m)
{
	for (uint32_t i = m->nconv; i < m->nz; i++)
		if (m_open(m->z[i].cond))
			m->z[i].cond = m->z[i].wp ? ZLFS_ZC_CLOSED : ZLFS_ZC_EMPTY;
}

static void m_compare(const struct model *m, const struct zrules *r, uint64_t step)
{
	ck_assert_msg(zrules_check(r) == 0, "invariants broken at step %llu",
		      (unsigned long long)step);
	for (uint32_t i = 0; i < m->nz; i++) {
		const struct zlfs_zone *z = &r->z[i];
		ck_assert_msg(z->cond == m->z[i].cond && (z->type == ZLFS_ZONE_CONV ||
							  z->wp == z->start + m->z[i].wp),
			      "step %llu zone %u: cond %s wp %llu, model %s wp %llu",
			      (unsigned long long)step, i, zlfs_zone_cond_str(z->cond),
			      (unsigned long long)(z->wp - z->start),
			      zlfs_zone_cond_str(m->z[i].cond), (unsigned long long)m->z[i].wp);
	}
	if (m->max_open)
		ck_assert_uint_le(r->nr_imp + r->nr_exp, m->max_open);
	if (m->max_active)
		ck_assert_uint_le(r->nr_imp + r->nr_exp + r->nr_closed, m->max_active);
}

static uint64_t rng_state;

static uint64_t rnd(uint64_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return n ? rng_state % n : 0;
}

struct rvalid { uint8_t *v; uint64_t off; int err; };

static void rvalid_cb(void *ctx, uint64_t off, uint64_t len, bool valid)
{
	struct rvalid *rv = ctx;

	for (uint64_t a = off; a < off + len; a += B) {
		uint8_t *p = &rv->v[(a - rv->off) / B];
		if (*p)
			rv->err = 1;      /* covered twice */
		*p = valid ? 1 : 2;
	}
}

/* The error codes the walk must have met, and a tally of them. */
static const int walk_errs[] = { EINVAL, ZLFS_EUNALIGNED, ZLFS_EBOUNDARY, ZLFS_EZONEFULL,
				 ZLFS_ETOOMANYOPEN, ZLFS_ETOOMANYACT, ZLFS_EZONERO,
				 ZLFS_EZONEOFFLINE };
static uint64_t walk_seen[8];

static void walk_tally(int ret)
{
	for (int i = 0; i < 8; i++)
		if (ret == -walk_errs[i])
			walk_seen[i]++;
}

struct rcfg { uint32_t nz, nconv, max_open, max_active; uint64_t cap_blocks; uint64_t seed; };

static void run_random(const struct rcfg *c, uint64_t nops, uint64_t *stats)
{
	const uint64_t zb = 16;              /* blocks per zone */
	const uint64_t zs = zb * B;
	struct zlfs_zone z[MNZ];
	struct zrules r;
	struct model m;

	rng_state = c->seed;
	mk(&r, z, c->nz, c->nconv, zs, c->cap_blocks * B, c->max_open, c->max_active);
	memset(&m, 0, sizeof(m));
	m.nz = c->nz;
	m.nconv = c->nconv;
	m.zs = zs;
	/* the null_blk clamps */
	uint32_t nseq = c->nz - c->nconv;
	m.max_open = c->max_open >= nseq ? 0 : c->max_open;
	m.max_active = c->max_active >= nseq ? 0 : c->max_active;
	if (m.max_active && m.max_open > m.max_active)
		m.max_open = m.max_active;
	for (uint32_t i = 0; i < c->nz; i++) {
		m.z[i].type = i < c->nconv ? ZLFS_ZONE_CONV : ZLFS_ZONE_SWR;
		m.z[i].cond = i < c->nconv ? ZLFS_ZC_NOT_WP : ZLFS_ZC_EMPTY;
		m.z[i].cap = i < c->nconv ? zs : c->cap_blocks * B;
	}

	for (uint64_t step = 0; step < nops; step++) {
		uint64_t dice = rnd(1000);
		uint32_t zi = (uint32_t)rnd(c->nz);
		struct mzone *mz = &m.z[zi];
		int want, got;

		if (step % 1000 == 999) {
			/* new epoch: heal faulty zones, reload (counters from the zones) */
			for (uint32_t i = c->nconv; i < c->nz; i++) {
				if (z[i].cond == ZLFS_ZC_RDONLY || z[i].cond == ZLFS_ZC_OFFLINE) {
					z[i].cond = ZLFS_ZC_EMPTY;
					z[i].wp = z[i].start;
					m.z[i].cond = ZLFS_ZC_EMPTY;
					m.z[i].wp = 0;
				}
			}
			zrules_init(&r, z, c->nz, c->nconv, c->max_open, c->max_active);
			m.rr = 0;
			stats[5]++;
		} else if (dice < 550) {
			/* write (or append) */
			bool append = dice >= 470;
			uint64_t off, len = (1 + rnd(rnd(8) ? 3 : 20)) * B, rel;
			if (mz->type == ZLFS_ZONE_CONV) {
				rel = rnd(zb) * B;
				if (!rnd(3))
					len = (1 + rnd(3 * zb)) * B;
			} else {
				uint64_t k = rnd(10);
				rel = k < 7 ? mz->wp : k == 7 ? rnd(zb) * B :
				      k == 8 ? 0 : mz->wp + (rnd(2) ? B : -B);
				if (rel >= zs)
					rel = zs - B;
			}
			off = zi * zs + rel;
			if (off + len > c->nz * zs)
				len = c->nz * zs - off;
			uint64_t mpos = 0, rpos = 0;
			want = m_write(&m, off, len, append, &mpos);
			got = zrules_write(&r, off, len, append, &rpos);
			ck_assert_msg(got == want, "step %llu: %s zone %u +%llu len %llu: got %d want %d",
				      (unsigned long long)step, append ? "append" : "write", zi,
				      (unsigned long long)rel, (unsigned long long)len, got, want);
			if (!got)
				ck_assert_uint_eq(rpos, mpos);
			walk_tally(got);
			stats[got ? 1 : 0]++;
		} else if (dice < 650) {
			/* read */
			uint64_t off = rnd(c->nz * zb) * B;
			uint64_t len = (1 + rnd(2 * zb)) * B;
			if (off + len > c->nz * zs)
				len = c->nz * zs - off;
			uint8_t v[4 * 16];
			struct rvalid rv = { v, off, 0 };
			memset(v, 0, sizeof(v));
			want = 0;
			for (uint64_t a = off; a < off + len; a += zs - a % zs)
				if (m.z[a / zs].cond == ZLFS_ZC_OFFLINE)
					want = -ZLFS_EZONEOFFLINE;
			got = zrules_read(&r, off, len, rvalid_cb, &rv);
			ck_assert_int_eq(got, want);
			ck_assert_int_eq(rv.err, 0);
			walk_tally(got);
			for (uint64_t a = off; a < off + len && !got; a += B) {
				const struct mzone *q = &m.z[a / zs];
				bool valid = q->type == ZLFS_ZONE_CONV || a % zs < q->wp;
				ck_assert_msg(v[(a - off) / B] == (valid ? 1 : 2),
					      "step %llu: read validity at %llu", (unsigned long long)step,
					      (unsigned long long)a);
			}
			stats[2]++;
		} else if (dice < 985) {
			enum zlfs_zone_mgmt op = (enum zlfs_zone_mgmt)rnd(4);
			uint32_t zone = rnd(12) ? zi : ZLFS_ZONE_ALL;
			m_ndisc = 0;
			nz_discards = 0;
			want = m_mgmt(&m, op, zone);
			got = zrules_mgmt(&r, op, zone, disc, &nz_discards);
			ck_assert_msg(got == want, "step %llu: mgmt %d zone %d: got %d want %d",
				      (unsigned long long)step, (int)op, (int)zone, got, want);
			ck_assert_uint_eq(nz_discards, m_ndisc);
			for (uint32_t i = 0; i < m_ndisc; i++)
				ck_assert_uint_eq(discarded[i], m_disc[i]);
			walk_tally(got);
			stats[got ? 4 : 3]++;
		} else if (dice < 993) {
			zrules_power_cycle(&r);
			m_power_cycle(&m);
			stats[6]++;
		} else if (dice < 996 && mz->type == ZLFS_ZONE_SWR) {
			/* (conventional zones' faults have their own tests) */
			uint8_t cond = rnd(2) ? ZLFS_ZC_RDONLY : ZLFS_ZC_OFFLINE;
			ck_assert_int_eq(zrules_set_cond(&r, zi, cond), 0);
			mz->cond = cond;
			if (cond == ZLFS_ZC_OFFLINE)
				mz->wp = 0;
			stats[7]++;
		}
		m_compare(&m, &r, step);
	}
}

START_TEST(test_random_model)
{
	static const struct rcfg cfgs[] = {
		{ 12, 2, 3, 5, 16, 0x1234 },     /* both limits */
		{ 12, 2, 3, 5, 11, 0xbeef },     /* capacity below the zone size */
		{ 10, 0, 2, 0, 16, 0x5eed },     /* open limit only */
		{ 10, 1, 0, 3, 13, 0xf00d },     /* active limit only */
		{ 8, 1, 4, 3, 16, 0xc0de },      /* max_open cut to max_active */
		{ 6, 2, 0, 0, 7, 0xabcd },       /* no limits */
	};
	uint64_t stats[8] = { 0 };

	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++)
		run_random(&cfgs[i], 20000, stats);
	/* the walk must have exercised every kind of step, failures included */
	for (int i = 0; i < 8; i++)
		ck_assert_msg(stats[i] > 20, "step kind %d ran %llu times", i,
			      (unsigned long long)stats[i]);
	/* ... and met every error */
	for (int i = 0; i < 8; i++)
		ck_assert_msg(walk_seen[i] > 5, "%s returned %llu times",
			      zlfs_zdev_strerror(walk_errs[i]), (unsigned long long)walk_seen[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zrules");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_init_limits);
	tcase_add_test(tc, test_write_wp);
	tcase_add_test(tc, test_append);
	tcase_add_test(tc, test_implicit_close_rr);
	tcase_add_test(tc, test_too_many_open);
	tcase_add_test(tc, test_too_many_active);
	tcase_add_test(tc, test_explicit_open);
	tcase_add_test(tc, test_close);
	tcase_add_test(tc, test_finish);
	tcase_add_test(tc, test_reset);
	tcase_add_test(tc, test_all_ops);
	tcase_add_test(tc, test_conv);
	tcase_add_test(tc, test_conv_span_into_bad_zone);
	tcase_add_test(tc, test_read_segments);
	tcase_add_test(tc, test_ro_offline);
	tcase_add_test(tc, test_capacity);
	tcase_add_test(tc, test_power_cycle);
	tcase_add_test(tc, test_check_detects);
	tcase_add_test(tc, test_random_model);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
