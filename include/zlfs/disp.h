/*
 * disp.h - the I/O dispatcher: an mq-deadline equivalent in front of a zdev.
 *
 * Everything zlfs reads or writes goes through a dispatcher.  A caller
 * builds a zlfs_bio and submits it; the dispatcher queues it per priority
 * level and direction (LBA-sorted list + FIFO with deadlines), merges it
 * with neighbours, and dispatches requests to the device while the device
 * has free slots.  bio->end() runs exactly once, on a device thread or, for
 * a bio that fails before it is queued, on the submitting thread.
 *
 * Writes to sequential zones are ordered by one of three modes:
 *   ZWL     zone write locking (Linux <= 6.9 mq-deadline): one write per
 *           sequential zone between dispatch and completion.
 *   NOLOCK  the series' mode: a write with ZLFS_BIO_NO_ZWL on a device that
 *           declares no_zwl is dispatched without the lock, so many writes
 *           per zone are in flight; one rejected as unaligned is parked on
 *           its zone's recovery list and resubmitted in LBA order once the
 *           zone has no writes in flight.  Any other write gets ZWL.
 *   ZWP     zone write plugging (Linux >= 6.10): a per-zone plug ahead of
 *           the scheduler tracks the write pointer, fails writes that are
 *           not at it when they are submitted, holds all but one write per
 *           zone, and emulates zone append.
 *
 * Zone management (zlfs_disp_zone_mgmt) must not race with writes to the
 * same zone; the caller orders them (as the kernel leaves it to the user).
 */
#ifndef ZLFS_DISP_H
#define ZLFS_DISP_H

#include <stdint.h>
#include <stdbool.h>
#include <sys/uio.h>

#include "zlfs/zdev.h"

enum zlfs_order_mode {
	ZLFS_MODE_ZWL = 0,
	ZLFS_MODE_NOLOCK,
	ZLFS_MODE_ZWP,
};

/* I/O priority classes, as the kernel's (NONE maps to BE). */
enum zlfs_prio {
	ZLFS_PRIO_RT = 0,
	ZLFS_PRIO_BE = 1,
	ZLFS_PRIO_IDLE = 2,
};

/* bio flags */
#define ZLFS_BIO_NO_ZWL   (1u << 0)  /* request flag "no zone write lock" */
#define ZLFS_BIO_SYNC     (1u << 1)  /* a synchronous write (not throttled by async_depth) */
#define ZLFS_BIO_AT_HEAD  (1u << 2)  /* insert at the head of the dispatch list */
/*
 * end() may run inside zlfs_disp_submit, on the submitter's thread, when
 * the device completes the command there (an image's short path): the
 * submitter holds no lock that end() takes.  Without it such an end() is
 * handed to the dispatcher's completion thread, as end() of a bio that
 * fails at submission always is.
 */
#define ZLFS_BIO_END_INLINE (1u << 3)

struct zlfs_bio {
	uint8_t op;                 /* ZLFS_OP_READ / WRITE / APPEND / FLUSH */
	uint8_t prio;               /* enum zlfs_prio */
	uint32_t flags;
	uint64_t off;               /* bytes; append: any offset in the zone */
	void *buf;
	uint32_t len;               /* bytes */
	int result;                 /* 0 or -errno, set before end() */
	uint64_t pos;               /* where an append (or write) landed */
	void (*end)(struct zlfs_bio *bio);
	void *priv;
	/* dispatcher private */
	struct zlfs_bio *bnext;
	uint64_t submit_ns;
};

struct zlfs_disp_opts {
	uint8_t mode;               /* enum zlfs_order_mode */
	/* mq-deadline tunables, kernel defaults from zlfs_disp_opts_default() */
	uint32_t read_expire_ms;    /* 500 */
	uint32_t write_expire_ms;   /* 5000 */
	uint32_t writes_starved;    /* 2 */
	uint32_t fifo_batch;        /* 16 */
	uint32_t front_merges;      /* 1 */
	uint32_t prio_aging_ms;     /* 10000 */
	uint32_t async_depth;       /* 0 = 3/4 of nr_requests */
	uint32_t nr_requests;       /* scheduler tags; 0 = 2 * device depth */
	uint32_t nomerges;          /* 1 = no merging at all (sysfs nomerges=2) */
	uint32_t max_req_kb;        /* largest merged request, 512 */
	uint32_t retry_base;        /* recovery retries before writes in flight, 4 */
};

void zlfs_disp_opts_default(struct zlfs_disp_opts *o);
/*
 * Set one tunable by name ("mode", "read_expire", "write_expire",
 * "writes_starved", "fifo_batch", "front_merges", "prio_aging_expire",
 * "async_depth", "nr_requests", "nomerges", "max_req_kb", "retry_base").
 * Times are in ms; mode is zwl, nolock or zwp.
 */
int zlfs_disp_opts_set(struct zlfs_disp_opts *o, const char *name, const char *val);
/* The name of tunable i (besides "mode"), in the order above; NULL past the last. */
const char *zlfs_disp_knob_name(size_t i);
const char *zlfs_order_mode_str(uint8_t mode);

struct zlfs_disp;

/* The dispatcher does not own dev; close dev after destroying it. */
int zlfs_disp_create(struct zlfs_zdev *dev, const struct zlfs_disp_opts *o,
		     struct zlfs_disp **out);
/* Waits for everything submitted to finish. */
void zlfs_disp_destroy(struct zlfs_disp *d);
struct zlfs_zdev *zlfs_disp_dev(struct zlfs_disp *d);
/* The mode actually in force (nolock falls back to zwl without no_zwl). */
uint8_t zlfs_disp_mode(const struct zlfs_disp *d);

/*
 * Asynchronous.  Returns 0 if the bio was accepted: bio->end() will run
 * exactly once, on another thread (or, with ZLFS_BIO_END_INLINE, possibly
 * on this one before the call returns).  Returns -errno if it was refused at
 * submission (ZWP: not at the write pointer; a zone needing resync; bad
 * arguments): end() will not run.
 */
int zlfs_disp_submit(struct zlfs_disp *d, struct zlfs_bio *bio);
/* Synchronous helpers. */
int zlfs_disp_rw(struct zlfs_disp *d, uint8_t op, void *buf, uint32_t len, uint64_t off,
		 uint32_t flags, uint64_t *pos);
int zlfs_disp_flush(struct zlfs_disp *d);
/* Wait until nothing is queued or in flight. */
void zlfs_disp_drain(struct zlfs_disp *d);

/* Zone management and report that keep the plugs / write pointer cache
 * in step (and clear a zone's resync mark). */
int zlfs_disp_zone_mgmt(struct zlfs_disp *d, enum zlfs_zone_mgmt op, uint32_t zone);
int zlfs_disp_report(struct zlfs_disp *d, uint32_t first, struct zlfs_zone *zones, uint32_t *nr);
/*
 * Discard a range of conventional zones (zlfs_zdev_discard); the caller
 * guarantees nothing is queued or in flight to it (free space).
 */
int zlfs_disp_discard(struct zlfs_disp *d, uint64_t off, uint64_t len);
/*
 * Where a read of [off, off+len) may be made from a file by the caller
 * (zlfs_zdev_read_fd), or -EOPNOTSUPP.  Nothing is queued: the caller
 * guarantees, as for any read, that no write to the range is in flight.
 */
int zlfs_disp_read_fd(struct zlfs_disp *d, uint64_t off, uint64_t len, int *fd, uint64_t *pos);
/* True if the zone's write pointer must be re-read before writes succeed. */
bool zlfs_disp_zone_needs_resync(struct zlfs_disp *d, uint32_t zone);

struct zlfs_disp_stats {
	uint64_t inserted, dispatched, completed, merged;
	uint64_t unaligned;        /* unaligned-write errors seen */
	uint64_t retries;          /* parked writes resubmitted */
	uint64_t recovered;        /* parked writes that then succeeded */
	uint64_t failed;           /* bios completed with an error */
	uint64_t resyncs;          /* zones marked for write-pointer resync */
	uint64_t plugged;          /* ZWP: bios held in a zone plug */
	uint32_t max_zone_inflight;/* most writes one zone had in flight */
	uint32_t max_parked;       /* deepest recovery list */
};
void zlfs_disp_stats(struct zlfs_disp *d, struct zlfs_disp_stats *st);

#endif
