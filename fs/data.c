/*
 * data.c - block I/O between the filesystem and the dispatcher: single
 * block reads, in-place metadata writes, batches of asynchronous log
 * writes, and the read/write helpers that drop sbi->lock while I/O is in
 * flight.
 *
 * Every write zlfs issues carries ZLFS_BIO_NO_ZWL (the request flag of the
 * series, set here where the filesystem makes its write requests); GC's
 * I/O goes at the idle priority level (ZLFS_PRIO_IDLE), everything else at
 * best effort.
 *
 * Locks: the *_unlocked helpers are called with sbi->lock held, drop it
 * while the I/O is in flight (counted in sbi->io_inflight, which the
 * checkpoint waits for) and hold it again on return.  A device error makes
 * the filesystem read-only (zlfs_set_fatal).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "zlfs.h"
#include "data.h"
#include "segment.h"

void zlfs_set_fatal(struct zlfs_sb *sbi, int err)
{
	int none = 0;

	/* as zlfs_corrupt: readers come here too, and the first error is the one kept */
	if (__atomic_compare_exchange_n(&sbi->fatal, &none, err ? err : -EIO, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		struct zlfs_disp_stats st;
		zlfs_disp_stats(sbi->disp, &st);
		fprintf(stderr, "zlfs: %s: device error (%s): read-only from now on\n"
			"zlfs: dispatcher: %llu dispatched, %llu unaligned, %llu retries, %llu recovered, "
			"%llu failed, %llu zones to resync, most in flight in a zone %u\n",
			zlfs_zdev_spec(sbi->dev), zlfs_zdev_strerror(err),
			(unsigned long long)st.dispatched, (unsigned long long)st.unaligned,
			(unsigned long long)st.retries, (unsigned long long)st.recovered,
			(unsigned long long)st.failed, (unsigned long long)st.resyncs, st.max_zone_inflight);
	}
}

int zlfs_corrupt(struct zlfs_sb *sbi, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	int none = 0;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* readers find inconsistencies too: the first one found is the one kept */
	if (__atomic_compare_exchange_n(&sbi->fatal, &none, -ZLFS_EFSCORRUPTED, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		/* kept for /.zlfs/status; a daemon's stderr is /dev/null, so syslog too */
		snprintf(sbi->fatal_why, sizeof(sbi->fatal_why), "%s", what);
		__atomic_store_n(&sbi->fatal_why_set, true, __ATOMIC_RELEASE);
		fprintf(stderr, "zlfs: %s: inconsistent filesystem: %s: read-only from now on "
			"(run fsck.zlfs)\n", zlfs_zdev_spec(sbi->dev), what);
		if (sbi->info_syslog)
			syslog(LOG_ERR, "%s: inconsistent filesystem: %s: read-only from now on "
			       "(run fsck.zlfs)", zlfs_zdev_spec(sbi->dev), what);
	} else
		fprintf(stderr, "zlfs: %s: inconsistent filesystem: %s\n",
			zlfs_zdev_spec(sbi->dev), what);
	return -ZLFS_EFSCORRUPTED;
}

void zlfs_info(struct zlfs_sb *sbi, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (sbi->info_syslog)
		syslog(LOG_INFO, "%s: %s", zlfs_zdev_spec(sbi->dev), what);
	else
		fprintf(stderr, "zlfs: %s\n", what);
}

int zlfs_read_block(struct zlfs_sb *sbi, uint32_t blkaddr, void *buf)
{
	if ((uint64_t)blkaddr >= zf_le64_to_cpu(sbi->sb.block_count))
		return -ZLFS_EFSCORRUPTED;
	return zlfs_disp_rw(sbi->disp, ZLFS_OP_READ, buf, ZF_BLKSIZE,
			    (uint64_t)blkaddr * ZF_BLKSIZE, 0, NULL);
}

int zlfs_read_run(struct zlfs_sb *sbi, uint32_t blkaddr, uint32_t n, void *buf)
{
	if ((uint64_t)blkaddr + n > zf_le64_to_cpu(sbi->sb.block_count))
		return -ZLFS_EFSCORRUPTED;
	return n ? zlfs_disp_rw(sbi->disp, ZLFS_OP_READ, buf, n * ZF_BLKSIZE,
				(uint64_t)blkaddr * ZF_BLKSIZE, 0, NULL) : 0;
}

int zlfs_read_fd(struct zlfs_sb *sbi, uint32_t blkaddr, uint32_t n, int *fd, uint64_t *pos)
{
	if (!n || (uint64_t)blkaddr + n > zf_le64_to_cpu(sbi->sb.block_count))
		return -ZLFS_EFSCORRUPTED;
	return zlfs_disp_read_fd(sbi->disp, (uint64_t)blkaddr * ZF_BLKSIZE, (uint64_t)n * ZF_BLKSIZE,
				 fd, pos);
}

/* Metadata in the conventional area: written in place. */
int zlfs_write_meta_block(struct zlfs_sb *sbi, uint32_t blkaddr, const void *buf)
{
	int ret;

	if (sbi->fatal)
		return -EROFS;
	/* the checkpoint, SIT, NAT and SSA areas, nothing else (not the superblocks) */
	if (blkaddr < sbi->lay.segment0_blkaddr || blkaddr >= sbi->lay.main_blkaddr)
		return zlfs_corrupt(sbi, "a metadata write to block %u, outside [%u, %u)", blkaddr,
				    sbi->lay.segment0_blkaddr, sbi->lay.main_blkaddr);
	ret = zlfs_disp_rw(sbi->disp, ZLFS_OP_WRITE, (void *)buf, ZF_BLKSIZE,
			   (uint64_t)blkaddr * ZF_BLKSIZE, ZLFS_BIO_NO_ZWL, NULL);
	if (ret)
		zlfs_set_fatal(sbi, ret);
	return ret;
}

/* ---- batches of asynchronous writes --------------------------------------------- */

struct batch {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	uint32_t left;
	int err;
	struct zlfs_sb *sbi;
};

/*
 * The zone-open barrier.  A log that fills its zone moves to a fresh one;
 * if the first write there lands while the old zone's last writes are
 * still in flight, the device briefly counts one more active zone than
 * there are logs.  On a device whose open/active limit leaves no room for
 * that (sbi->open_barrier), the first write into a sequential zone waits
 * until every log write submitted before it has completed.  Zones open
 * once per zone's worth of writes per log, so the wait is rare.
 */
static void wr_start(struct zlfs_sb *sbi, uint32_t n)
{
	pthread_mutex_lock(&sbi->wr_lock);
	sbi->wr_inflight += n;
	pthread_mutex_unlock(&sbi->wr_lock);
}

static void wr_done(struct zlfs_sb *sbi, uint32_t n)
{
	pthread_mutex_lock(&sbi->wr_lock);
	sbi->wr_inflight -= n;
	if (!sbi->wr_inflight)
		pthread_cond_broadcast(&sbi->wr_cv);
	pthread_mutex_unlock(&sbi->wr_lock);
}

static void wr_barrier(struct zlfs_sb *sbi)
{
	pthread_mutex_lock(&sbi->wr_lock);
	while (sbi->wr_inflight)
		pthread_cond_wait(&sbi->wr_cv, &sbi->wr_lock);
	pthread_mutex_unlock(&sbi->wr_lock);
}

static bool opens_zone(const struct zlfs_sb *sbi, const struct zlfs_zdev_geom *g, uint64_t off)
{
	return sbi->open_barrier && off % g->zone_size == 0 && off / g->zone_size >= g->nr_conv;
}

struct batch_bio {
	struct zlfs_bio bio;
	struct batch *b;
};

/*
 * How many blocks from i on go in one device command: a run adjacent on
 * the device and in memory, never across a zone (each zone is written on
 * its own, and a multi-device's members meet at zone boundaries), and no
 * bigger than the device takes whole (max_io) or 1 MiB.
 */
static uint32_t io_run(const struct zlfs_sb *sbi, void *const *bufs, const uint32_t *addrs,
		       uint32_t i, uint32_t n)
{
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(sbi->dev);
	uint64_t zone_blocks = g->zone_size / ZF_BLKSIZE;
	uint32_t max_run = g->max_io && g->max_io / ZF_BLKSIZE < 256 ? g->max_io / ZF_BLKSIZE : 256;
	uint32_t j = i + 1;

	if (!max_run)
		max_run = 1;
	while (j < n && addrs[j] == addrs[j - 1] + 1 && addrs[j] % zone_blocks &&
	       (uint8_t *)bufs[j] == (uint8_t *)bufs[j - 1] + ZF_BLKSIZE && j - i < max_run)
		j++;
	return j - i;
}

static void batch_end(struct zlfs_bio *bio)
{
	struct batch_bio *bb = (struct batch_bio *)bio;
	struct batch *b = bb->b;
	struct zlfs_sb *sbi = b->sbi;   /* b may be gone once left reaches 0 */

	if (sbi->open_barrier)
		wr_done(sbi, 1);
	pthread_mutex_lock(&b->lock);
	if (bio->result && !b->err)
		b->err = bio->result;
	if (!--b->left)
		pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->lock);
}

struct zlfs_wbatch {
	struct batch b;
	uint32_t n;
	struct batch_bio v[];
};

/*
 * Submit n block writes (bufs[i] to addrs[i]) in array order, which
 * callers make each log's allocation order; call with sbi->lock held so no
 * other write of the same log slips in between.  NULL only without memory.
 */
struct zlfs_wbatch *zlfs_write_submit(struct zlfs_sb *sbi, void *const *bufs,
				      const uint32_t *addrs, uint32_t n, uint8_t prio)
{
	struct zlfs_wbatch *wb = calloc(1, sizeof(*wb) + n * sizeof(struct batch_bio));

	if (!wb)
		return NULL;
	pthread_mutex_init(&wb->b.lock, NULL);
	pthread_cond_init(&wb->b.cv, NULL);
	wb->b.sbi = sbi;
	wb->n = n;
	wb->b.left = n;
	bool outside = false;
	for (uint32_t i = 0; i < n; i++)
		outside |= !zlfs_is_main_blkaddr(sbi, addrs[i]);
	if (outside)   /* log writes go to the main area only, whatever went wrong */
		zlfs_corrupt(sbi, "a log write outside the main area");
	if (sbi->fatal) {
		wb->b.err = -EROFS;
		wb->b.left = 0;
		return wb;
	}
	/* one bio per run (io_run) */
	uint32_t nbio = 0;
	for (uint32_t i = 0; i < n; ) {
		uint32_t j = i + io_run(sbi, bufs, addrs, i, n);
		struct zlfs_bio *bio = &wb->v[nbio].bio;
		wb->v[nbio].b = &wb->b;
		bio->op = ZLFS_OP_WRITE;
		bio->prio = prio;
		bio->flags = ZLFS_BIO_NO_ZWL | ZLFS_BIO_END_INLINE;   /* batch_end: its own locks */
		bio->off = (uint64_t)addrs[i] * ZF_BLKSIZE;
		bio->buf = bufs[i];
		bio->len = (j - i) * ZF_BLKSIZE;
		bio->end = batch_end;
		nbio++;
		i = j;
	}
	pthread_mutex_lock(&wb->b.lock);
	wb->b.left = nbio;
	pthread_mutex_unlock(&wb->b.lock);
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(sbi->dev);
	for (uint32_t k = 0; k < nbio; k++) {
		if (opens_zone(sbi, g, wb->v[k].bio.off))
			wr_barrier(sbi);
		if (sbi->open_barrier)
			wr_start(sbi, 1);
		int ret = zlfs_disp_submit(sbi->disp, &wb->v[k].bio);
		if (ret && sbi->open_barrier)
			wr_done(sbi, 1);   /* refused: it never ends */
		if (ret) {
			pthread_mutex_lock(&wb->b.lock);
			if (!wb->b.err)
				wb->b.err = ret;
			wb->b.left -= nbio - k;
			pthread_mutex_unlock(&wb->b.lock);
			break;
		}
	}
	return wb;
}

/* Wait for a batch (the lock need not be held) and free it. */
int zlfs_write_wait(struct zlfs_sb *sbi, struct zlfs_wbatch *wb)
{
	int err;

	if (!wb)
		return -ENOMEM;
	pthread_mutex_lock(&wb->b.lock);
	while (wb->b.left)
		pthread_cond_wait(&wb->b.cv, &wb->b.lock);
	err = wb->b.err;
	pthread_mutex_unlock(&wb->b.lock);
	pthread_mutex_destroy(&wb->b.lock);
	pthread_cond_destroy(&wb->b.cv);
	free(wb);
	if (err)
		zlfs_set_fatal(sbi, err);
	return err;
}

/* Write n blocks and wait (sbi->lock held throughout). */
int zlfs_write_blocks(struct zlfs_sb *sbi, void *const *bufs, const uint32_t *addrs, uint32_t n)
{
	if (!n)
		return 0;
	sbi->data_unflushed = true;   /* until a flush: see zlfs_node_fsync */
	return zlfs_write_wait(sbi, zlfs_write_submit(sbi, bufs, addrs, n, ZLFS_PRIO_BE));
}

/* ---- reads and writes with the lock dropped ------------------------------------- */

struct rbatch {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	uint32_t left;
	int err;
};

struct rbio {
	struct zlfs_bio bio;
	struct rbatch *b;
};

static void rbio_end(struct zlfs_bio *bio)
{
	struct rbio *r = (struct rbio *)bio;

	pthread_mutex_lock(&r->b->lock);
	if (bio->result && !r->b->err)
		r->b->err = bio->result;
	if (!--r->b->left)
		pthread_cond_signal(&r->b->cv);
	pthread_mutex_unlock(&r->b->lock);
}

/*
 * Read n blocks with sbi->lock dropped while they are in flight.  Caller
 * holds the lock; it is held again on return.
 */
int zlfs_read_blocks_unlocked(struct zlfs_sb *sbi, void **bufs, const uint32_t *addrs, uint32_t n,
			      uint8_t prio)
{
	struct rbatch b = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
	struct rbio *v;
	uint32_t nbio = 0;

	if (!n)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	/*
	 * One bio per run (io_run): a file read sequentially is one command
	 * per zone or MiB, not one per block (each command costs a trip
	 * through the dispatcher and the device's threads).
	 */
	for (uint32_t i = 0; i < n; nbio++) {
		uint32_t k = io_run(sbi, (void *const *)bufs, addrs, i, n);
		v[nbio].b = &b;
		v[nbio].bio.op = ZLFS_OP_READ;
		v[nbio].bio.prio = prio;
		v[nbio].bio.flags = ZLFS_BIO_SYNC | ZLFS_BIO_END_INLINE;   /* rbio_end: b's lock */
		v[nbio].bio.off = (uint64_t)addrs[i] * ZF_BLKSIZE;
		v[nbio].bio.buf = bufs[i];
		v[nbio].bio.len = k * ZF_BLKSIZE;
		v[nbio].bio.end = rbio_end;
		i += k;
	}
	b.left = nbio;
	/* a reader keeps its registration: no checkpoint can start meanwhile */
	bool shared = zlfs_lock_is_shared();
	if (!shared)
		sbi->io_inflight++;
	for (uint32_t i = 0; i < nbio; i++) {
		int ret = zlfs_disp_submit(sbi->disp, &v[i].bio);
		if (ret) {
			pthread_mutex_lock(&b.lock);
			b.err = b.err ? b.err : ret;
			b.left -= nbio - i;
			pthread_mutex_unlock(&b.lock);
			break;
		}
	}
	zlfs_lock_drop(sbi);
	pthread_mutex_lock(&b.lock);
	while (b.left)
		pthread_cond_wait(&b.cv, &b.lock);
	pthread_mutex_unlock(&b.lock);
	zlfs_lock_retake(sbi);
	if (!shared && !--sbi->io_inflight)
		pthread_cond_broadcast(&sbi->io_cv);
	free(v);
	return b.err;
}

/* Submit under the lock (LBA order per log), wait with it dropped. */
int zlfs_write_unlocked(struct zlfs_sb *sbi, void **bufs, uint32_t *addrs, uint32_t n,
			uint8_t prio)
{
	uint64_t t0 = zlfs_mono_ns();
	int ret;

	struct zlfs_wbatch *wb = zlfs_write_submit(sbi, bufs, addrs, n, prio);
	sbi->io_inflight++;
	zlfs_unlock(sbi);
	ret = zlfs_write_wait(sbi, wb);
	zlfs_lock(sbi);
	if (prio == ZLFS_PRIO_BE)    /* a user's write (GC's go at idle priority) */
		sbi->st.write_io_ns += zlfs_mono_ns() - t0;
	sbi->data_unflushed = true;
	if (!--sbi->io_inflight)
		pthread_cond_broadcast(&sbi->io_cv);
	return ret;
}
