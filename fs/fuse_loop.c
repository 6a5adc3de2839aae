/*
 * fuse_loop.c - the request loop: one thread serves requests while they
 * come one at a time; more read /dev/fuse only while requests queue.
 *
 * Why not libfuse's multi-threaded loop: it keeps a thread blocked in
 * read(2) besides each busy one, and the kernel hands each request to the
 * reader that has waited longest, so requests that come one at a time (a
 * write + fsync loop) go to a different thread each time: on a 2-vCPU
 * machine that cost a write + fsync pair 15-25% against one thread
 * (bench/fsync-bench; libfuse with at most two threads is as slow as with
 * sixteen).  Here `want` threads read at once, 1 while nothing queues: a
 * thread that has received a request asks (poll, no wait) whether another
 * is already waiting before it serves it; if so `want` grows by one (a
 * parked thread woken or one started), if not it shrinks by one, once
 * ZLOOP_KEEP_NS have passed since a request last found another queued
 * (a cold sequential read has the kernel's readahead READs arrive one
 * just after another: dropping the reader at once cost it 5-10%).
 * Threads beyond `want` park; none ends before the session does.
 *
 * Two things keep a request from waiting behind a long one while nobody
 * reads.  A handler that waits for the kernel to send other requests
 * first (zl_write_back: the dirty pages' WRITEs) holds one more reader for
 * the time (zl_loop_hold_reader).  And the supervising thread (the
 * caller's: signals go to it, the servers block them) looks every
 * ZLOOP_TICK_MS while requests are being served: if every thread is busy,
 * none has taken a request since its last look and one is queued, it
 * adds a reader ("loop_rescues" in /.zlfs/status).  With nothing served
 * it sleeps until a server wakes it, looking at the session each second.
 *
 * Thread counts: `want` grows from queueing up to ZLOOP_WANT; holds and
 * rescues may start threads up to ZLOOP_THREADS, as the way out of a wait
 * on requests nobody would read.
 *
 * WRITEs of one file in the kernel's order.  Writeback sends a file's
 * dirty pages as WRITEs of up to 1 MiB, in offset order, several queued
 * at once; served by several threads, they took the filesystem lock in
 * whatever order the threads ran, and the log laid a sequentially written
 * file's pieces out of order (a third of the 512 KiB READs of a 1 GiB file
 * then spanned two runs of blocks and were copied instead of spliced, and
 * the image's readahead saw jumps: cold reads ran at half the speed of
 * the same file written by one thread).  So each WRITE received is noted
 * with its node and the kernel's request number (`unique`, increasing in
 * the order the kernel made the requests), and zl_write waits, before it
 * takes the filesystem lock, until no earlier WRITE of the same node is
 * still being served (zl_loop_write_turn).  The writes took the exclusive
 * lock one at a time already: only their order changes.  A request taken
 * by two threads in the reverse of the kernel's order, the second noted
 * before the first, can still go first: the order is a layout hint, not
 * something correctness rests on.
 *
 * Locks: l.lock, around the counts; never held while reading or serving.
 * w.lock, around the WRITEs noted; never held while serving.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuse_int.h"
#include "fuse_ops.h"

#define ZLOOP_WANT 16           /* readers at once from queueing alone */
#define ZLOOP_THREADS 64        /* threads at most, holds and rescues included */
#define ZLOOP_TICK_MS 5         /* the supervisor's look while requests are served */
#define ZLOOP_KEEP_NS (50 * 1000000ull)  /* readers stay wanted this long after a queue */

static struct {
	struct fuse_session *se;
	pthread_mutex_t lock;
	pthread_cond_t park;        /* threads not wanted as readers wait here */
	pthread_cond_t tick;        /* the supervisor waits here (monotonic clock) */
	pthread_t tids[ZLOOP_THREADS];
	unsigned nthreads;          /* started; the caller's thread only supervises */
	unsigned nreading;          /* in fuse_session_receive_buf, or just out of it */
	unsigned nserving;
	unsigned nparked;
	unsigned woken;             /* of the parked, signalled and not yet awake */
	unsigned coming;            /* readers woken or started, not yet back at the top */
	unsigned want;              /* readers wanted at once, >= 1 */
	unsigned holds;             /* zl_loop_hold_reader's, each one more reader */
	bool exiting;
	bool sup_asleep;            /* the supervisor waits for a server to wake it */
	int err;
	uint64_t received;          /* requests received: the supervisor's progress mark */
	uint64_t queued;            /* of them, found another already queued */
	uint64_t rescues;           /* readers the supervisor added */
	uint64_t last_queue_ns;     /* when a request last found another queued */
} l = { .lock = PTHREAD_MUTEX_INITIALIZER, .park = PTHREAD_COND_INITIALIZER, .want = 1 };

/* WRITEs received and not yet served, by node and the kernel's request number */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t done;        /* a WRITE noted here was served */
	unsigned n;
	struct { uint64_t node, unique; } e[ZLOOP_THREADS];
} w = { .lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER };

/* The WRITE this thread serves (0: none, or not from this loop). */
static __thread uint64_t cur_node, cur_unique;

static void *serve(void *arg);

/*
 * One more reader: a parked thread woken, or one started.  Until a thread
 * comes to the top of serve()'s loop (whichever: it reads, since fewer
 * read than are wanted) `coming` counts it, so that the supervisor does
 * not take a thread slow to be scheduled for a stuck one.  l.lock held.
 */
static void add_reader(unsigned cap)
{
	if (l.nparked > l.woken) {      /* (a second signal could wake nobody new) */
		pthread_cond_signal(&l.park);
		l.woken++;
		l.coming++;
		return;
	}
	if (l.nthreads >= cap)
		return;
	/* signals go to the supervising thread: servers block them all */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (!pthread_create(&l.tids[l.nthreads], NULL, serve, NULL)) {
		l.nthreads++;
		l.coming++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Note the request in buf if it is a WRITE (cur_node, cur_unique and w). */
static void write_note(const struct fuse_buf *buf)
{
	const struct fuse_in_header *h = buf->mem;

	cur_node = cur_unique = 0;
	if ((buf->flags & FUSE_BUF_IS_FD) || buf->size < sizeof(*h) || h->opcode != FUSE_WRITE)
		return;
	pthread_mutex_lock(&w.lock);
	if (w.n < ZLOOP_THREADS) {
		w.e[w.n].node = cur_node = h->nodeid;
		w.e[w.n].unique = cur_unique = h->unique;
		w.n++;
	}
	pthread_mutex_unlock(&w.lock);
}

/* This thread's WRITE served: its note goes, and those waiting on it look again. */
static void write_done(void)
{
	if (!cur_unique)
		return;
	pthread_mutex_lock(&w.lock);
	for (unsigned i = 0; i < w.n; i++) {
		if (w.e[i].unique == cur_unique && w.e[i].node == cur_node) {
			w.e[i] = w.e[--w.n];
			break;
		}
	}
	pthread_cond_broadcast(&w.done);
	pthread_mutex_unlock(&w.lock);
	cur_node = cur_unique = 0;
}

/* An earlier WRITE of this thread's node still noted?  w.lock held. */
static bool write_before(void)
{
	for (unsigned i = 0; i < w.n; i++)
		if (w.e[i].node == cur_node && w.e[i].unique < cur_unique)
			return true;
	return false;
}

void zl_loop_write_turn(void)
{
	if (!cur_unique)
		return;
	pthread_mutex_lock(&w.lock);
	while (write_before())
		pthread_cond_wait(&w.done, &w.lock);
	pthread_mutex_unlock(&w.lock);
}

/* Is a request waiting in /dev/fuse that no thread has read? */
static bool queued(void)
{
	struct pollfd p = { .fd = fuse_session_fd(l.se), .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void free_buf(void *buf)
{
	free(((struct fuse_buf *)buf)->mem);
}

static void *serve(void *arg)
{
	struct fuse_buf buf;

	(void)arg;
	memset(&buf, 0, sizeof(buf));
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cleanup_push(free_buf, &buf);
	pthread_mutex_lock(&l.lock);
	for (;;) {
		for (;;) {
			if (l.coming)
				l.coming--;
			if (l.exiting || l.nreading < l.want + l.holds)
				break;
			l.nparked++;
			pthread_cond_wait(&l.park, &l.lock);
			l.nparked--;
			if (l.woken)
				l.woken--;
		}
		if (l.exiting)
			break;
		l.nreading++;
		pthread_mutex_unlock(&l.lock);
		/* only blocked in read(2) may a server be cancelled, at the end */
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		int res = fuse_session_receive_buf(l.se, &buf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		/* asked before serving: after, it would see the next request of the caller it answered */
		bool more = res > 0 && queued();
		pthread_mutex_lock(&l.lock);
		l.nreading--;
		/* ENOENT: the request was interrupted and answered in transit (libfuse: restart) */
		if (res == -EINTR || res == -EAGAIN || res == -ENOENT) {
			if (fuse_session_exited(l.se))
				break;
			continue;
		}
		if (res <= 0) {         /* 0: the kernel ended the session (unmount) */
			if (res < 0 && !l.err)
				l.err = res;
			break;
		}
		l.received++;
		l.nserving++;
		if (more) {
			l.queued++;
			l.last_queue_ns = zlfs_mono_ns();
			if (l.want < ZLOOP_WANT) {
				l.want++;
				add_reader(ZLOOP_WANT);
			}
		} else if (l.want > 1 && zlfs_mono_ns() - l.last_queue_ns > ZLOOP_KEEP_NS) {
			l.want--;
		}
		if (l.sup_asleep) {
			l.sup_asleep = false;
			pthread_cond_signal(&l.tick);
		}
		pthread_mutex_unlock(&l.lock);
		write_note(&buf);
		fuse_session_process_buf(l.se, &buf);
		write_done();
		pthread_mutex_lock(&l.lock);
		l.nserving--;
		if (fuse_session_exited(l.se))
			break;
	}
	l.exiting = true;
	pthread_cond_broadcast(&l.park);
	pthread_cond_signal(&l.tick);
	pthread_mutex_unlock(&l.lock);
	fuse_session_exit(l.se);
	pthread_cleanup_pop(1);
	return NULL;
}

/* Wait on l.tick for ms milliseconds at most.  l.lock held. */
static void wait_tick(long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	(void)pthread_cond_timedwait(&l.tick, &l.lock, &t);
}

/* The supervisor: rescue requests queued behind busy threads, until the session ends. */
static void supervise(void)
{
	uint64_t seen;

	pthread_mutex_lock(&l.lock);
	seen = l.received;
	while (!l.exiting && !fuse_session_exited(l.se)) {
		bool stuck = !l.nreading && !l.coming && l.nserving && l.received == seen;
		bool busy = l.nserving || l.received != seen;

		seen = l.received;
		if (stuck) {
			pthread_mutex_unlock(&l.lock);
			bool q = queued();
			pthread_mutex_lock(&l.lock);
			if (q && !l.nreading && !l.coming && l.received == seen) {
				l.rescues++;
				if (l.want < ZLOOP_THREADS)
					l.want++;
				add_reader(ZLOOP_THREADS);
			}
		}
		if (busy) {
			wait_tick(ZLOOP_TICK_MS);
		} else {
			/* a signal ends the session without waking anyone: look each second */
			l.sup_asleep = true;
			wait_tick(1000);
			l.sup_asleep = false;
		}
	}
	l.exiting = true;
	pthread_cond_broadcast(&l.park);
	pthread_mutex_unlock(&l.lock);
}

int zl_loop_run(struct fuse_session *se)
{
	pthread_condattr_t ca;
	unsigned n;

	l.se = se;
	if (pthread_condattr_init(&ca) || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) ||
	    pthread_cond_init(&l.tick, &ca))
		return -ENOMEM;
	pthread_condattr_destroy(&ca);
	pthread_mutex_lock(&l.lock);
	add_reader(ZLOOP_WANT);
	n = l.nthreads;
	pthread_mutex_unlock(&l.lock);
	if (n)
		supervise();
	pthread_mutex_lock(&l.lock);
	n = l.nthreads;
	pthread_mutex_unlock(&l.lock);
	/* those blocked in read(2): a signal ended the session, not an unmount */
	for (unsigned i = 0; i < n; i++)
		pthread_cancel(l.tids[i]);
	for (unsigned i = 0; i < n; i++)
		pthread_join(l.tids[i], NULL);
	pthread_cond_destroy(&l.tick);
	return n ? l.err : -EAGAIN;
}

void zl_loop_hold_reader(bool on)
{
	pthread_mutex_lock(&l.lock);
	if (on) {
		l.holds++;
		if (l.nreading + l.coming < l.want + l.holds)
			add_reader(ZLOOP_THREADS);
	} else {
		l.holds--;
	}
	pthread_mutex_unlock(&l.lock);
}

void zl_loop_stats(struct zl_loop_stats *st)
{
	pthread_mutex_lock(&l.lock);
	st->threads = l.nthreads;
	st->requests = l.received;
	st->queued = l.queued;
	st->rescues = l.rescues;
	pthread_mutex_unlock(&l.lock);
}
