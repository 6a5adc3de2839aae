/*
 * zrules.h - the ZBC/ZNS zone state machine the emulated devices enforce.
 *
 * Pure logic over an array of zones: no I/O, no locks (the caller, zemu,
 * holds its device lock around every call).  Semantics follow null_blk's
 * zoned model (zoned-block-layer.md c.3): implicit open on write, implicit
 * close of an implicitly open zone (round robin) at the open limit, the
 * active limit counting open + closed zones, FULL at the zone capacity.
 *
 * Invariants (checked by zrules_check, used by the tests):
 *   nr_imp/nr_exp/nr_closed equal the counts of zones in those conditions;
 *   max_open  == 0 || nr_imp + nr_exp <= max_open;
 *   max_active == 0 || nr_imp + nr_exp + nr_closed <= max_active;
 *   start <= wp <= start + cap for sequential zones.
 */
#ifndef ZLFS_ZRULES_H
#define ZLFS_ZRULES_H

#include "zlfs/zdev.h"

struct zrules {
	struct zlfs_zone *z;
	uint32_t nr, nr_conv;
	uint32_t max_open, max_active;
	uint32_t nr_imp, nr_exp, nr_closed;
	uint32_t close_rr;
};

/* zones must be laid out already (start, len, cap, type, cond, wp) */
void zrules_init(struct zrules *r, struct zlfs_zone *zones, uint32_t nr, uint32_t nr_conv,
		 uint32_t max_open, uint32_t max_active);
/* Recount after zones were loaded from disk; open zones become closed (power cycle). */
void zrules_power_cycle(struct zrules *r);

/*
 * Check and apply a write of len bytes at off (append: at the zone's wp).
 * On success the wp has advanced and *pos is where the data goes.
 * A write may span several conventional zones but not a sequential one.
 */
int zrules_write(struct zrules *r, uint64_t off, uint64_t len, bool append, uint64_t *pos);
/*
 * For a read of [off, off+len): how many bytes from off hold data (the
 * rest reads as zeros because it is past a write pointer) — returned in
 * segments through the callback.  Fails for offline zones.
 */
int zrules_read(struct zrules *r, uint64_t off, uint64_t len,
		void (*seg)(void *ctx, uint64_t off, uint64_t len, bool valid), void *ctx);
/*
 * Zone management.  For reset, *discard receives the ranges whose data
 * must be dropped (called per zone).
 */
int zrules_mgmt(struct zrules *r, enum zlfs_zone_mgmt op, uint32_t zone,
		void (*discard)(void *ctx, uint32_t zone), void *ctx);
int zrules_set_cond(struct zrules *r, uint32_t zone, uint8_t cond);
/* 0 if the invariants hold, else -EUCLEAN. */
int zrules_check(const struct zrules *r);

#endif
