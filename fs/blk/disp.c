/*
 * disp.c - the dispatcher: mq-deadline, zone write locking, the no-lock
 * mode with its unaligned-write recovery queue, and zone write plugging.
 *
 * Structures (as block/mq-deadline.c): three priority levels, each with a
 * dispatch list (at-head inserts, recovery resubmissions, flushes), and per
 * direction an LBA-sorted list, a FIFO with deadlines and latest_pos.
 * Globally last_dir, batching, starved.  Sorted lists are doubly linked
 * lists searched from the tail: sequential streams insert in O(1) and the
 * scheduler never holds more than nr_requests requests.
 *
 * Dispatch (dd_dispatch): priority aging, then strict priority; per level
 * (dd_dispatch_level): dispatch list, batch continuation, direction choice
 * with writes_starved, sort order unless the FIFO head expired.  For
 * writes to sequential zones next_rq() and fifo_rq() are zone aware as in
 * Linux <= 6.9: they skip zones that cannot take a write now, and the FIFO
 * head is replaced by the lowest-LBA write of its zone.
 *
 * A zone cannot take a write when:
 *   ZWL     its lock bit is set (one write between dispatch and completion);
 *   NOLOCK  it is recovering: writes are parked on it or resubmitted writes
 *           are in flight (so the zone quiesces and recovery makes progress);
 *           a write without ZLFS_BIO_NO_ZWL still takes the lock.
 *   ZWP     never blocked here: the plug lets one write per zone into the
 *           scheduler at a time.
 *
 * Recovery (NOLOCK): a write that completes with ZLFS_EUNALIGNED is parked
 * on its zone, sorted by LBA.  When the zone has no writes in flight the
 * parked writes are resubmitted in LBA order at the head of the dispatch
 * list.  Budget: retry_base + the most writes the zone has had in flight.
 * If the lowest parked write is not at the write pointer (cached, then
 * re-read from the device), nothing can fill the gap: every parked write
 * fails with EIO and the zone is marked for resync.
 *
 * Locks: one mutex (d->lock) guards everything here.  It is never held
 * while a bio's end() runs or while a command is submitted to the device;
 * it is held while reporting one zone during recovery (the device never
 * calls back into the dispatcher with its own lock held).
 */
#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "zlfs/disp.h"
#include "zdev_int.h"

#define NR_LEVELS 3
#define DIR_READ 0
#define DIR_WRITE 1
#define MAX_SEGS 256

struct dnode {
	struct dnode *prev, *next;
};

static void dl_init(struct dnode *h) { h->prev = h->next = h; }
static bool dl_empty(const struct dnode *h) { return h->next == h; }
static void dl_del(struct dnode *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}
static void dl_add_after(struct dnode *pos, struct dnode *n)
{
	n->prev = pos;
	n->next = pos->next;
	pos->next->prev = n;
	pos->next = n;
}
static void dl_add_tail(struct dnode *h, struct dnode *n) { dl_add_after(h->prev, n); }
static void dl_add_head(struct dnode *h, struct dnode *n) { dl_add_after(h, n); }

#define container_of(p, T, m) ((T *)((char *)(p) - offsetof(T, m)))
#define SORT_RQ(n) container_of(n, struct drq, snode)
#define FIFO_RQ(n) container_of(n, struct drq, fnode)

struct drq {
	struct zlfs_disp *d;
	struct zlfs_bio *bio_head, *bio_tail;
	uint32_t nbios;
	uint64_t off, len;
	uint8_t op, dir, prio;
	uint32_t zone;
	bool seq_write;       /* a write to a sequential zone (not an append) */
	bool needs_lock;      /* zone write lock applies */
	bool zone_locked;
	bool nolock;          /* dispatched without the lock: unaligned -> recovery */
	bool recovery;        /* resubmitted from the recovery list */
	bool zwp;             /* holds its zone's plug */
	bool tagged;          /* counts against nr_requests */
	bool async_tag;
	bool in_sort;
	uint64_t start_ns, fifo_time;
	uint32_t retries, max_retries;
	struct dnode snode;   /* sort list */
	struct dnode fnode;   /* fifo, dispatch or recovery list */
	struct zlfs_cmd cmd;
	struct iovec *iov;
	struct iovec iov_inline[4];
};

struct dd_level {
	struct dnode dispatch;
	struct dnode sort[2];
	struct dnode fifo[2];
	uint64_t latest_pos[2];
	uint64_t inserted, merged, dispatched, completed;
};

struct dzone {
	uint64_t start, cap;
	uint64_t wp;              /* cache: where the next write must go */
	uint32_t inflight;        /* sequential writes dispatched, not completed */
	uint32_t max_inflight;
	uint32_t recov_inflight;
	uint32_t nparked;
	bool seq, locked, need_resync;
	struct dnode parked;      /* recovery list, sorted by LBA */
	/* ZWP */
	bool plugged;
	uint64_t plug_wp;         /* absolute: where the next submitted write must go */
	struct zlfs_bio *plug_head, *plug_tail;
};

struct zlfs_disp {
	struct zlfs_zdev *dev;
	struct zlfs_disp_opts o;
	const struct zlfs_zdev_geom *g;
	uint8_t mode;
	pthread_mutex_t lock;
	pthread_cond_t tag_cv, idle_cv;
	struct dd_level lv[NR_LEVELS];
	uint8_t last_dir;
	uint32_t batching, starved;
	uint32_t tags, async_tags, async_depth, nr_requests;
	uint32_t dev_inflight, dev_depth;
	uint64_t outstanding;     /* bios accepted whose end() has not run */
	uint64_t max_req;
	/*
	 * Zones past the conventional prefix (the geometry puts conventional
	 * zones first): a device without zones has none, so a 15 TiB disk of
	 * 2 MiB pseudo-zones costs nothing here.  The prefix shares conv,
	 * which nothing writes after set-up (seq false: no lock, plug or wp).
	 */
	struct dzone *zones;
	struct dzone conv;
	struct zlfs_disp_stats st;
	/* bios finished inside zlfs_disp_submit, ended by defer_th */
	struct zlfs_bio *defer_head, *defer_tail;
	pthread_cond_t defer_cv;
	pthread_t defer_th;
	bool defer_stop, defer_running;
};

/* Work gathered under the lock, done after it is dropped. */
struct after {
	struct drq *submit[64];
	int nsubmit;
	struct zlfs_bio *done_head, *done_tail;
	bool more;                /* submit[] filled up: run the queue again */
};

static void complete_locked(struct zlfs_disp *d, struct drq *rq, int result, struct after *a);
static int rq_build_cmd(struct drq *rq);

/* ---- options -------------------------------------------------------------- */

void zlfs_disp_opts_default(struct zlfs_disp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = ZLFS_MODE_NOLOCK;
	o->read_expire_ms = 500;
	o->write_expire_ms = 5000;
	o->writes_starved = 2;
	o->fifo_batch = 16;
	o->front_merges = 1;
	o->prio_aging_ms = 10000;
	o->max_req_kb = 512;
	o->retry_base = 4;
}

const char *zlfs_order_mode_str(uint8_t mode)
{
	switch (mode) {
	case ZLFS_MODE_ZWL: return "zwl";
	case ZLFS_MODE_NOLOCK: return "nolock";
	case ZLFS_MODE_ZWP: return "zwp";
	default: return "?";
	}
}

/* The tunables by name, each a uint32_t of struct zlfs_disp_opts. */
static const struct { const char *name; size_t off; } knobs[] = {
	{ "read_expire", offsetof(struct zlfs_disp_opts, read_expire_ms) },
	{ "write_expire", offsetof(struct zlfs_disp_opts, write_expire_ms) },
	{ "writes_starved", offsetof(struct zlfs_disp_opts, writes_starved) },
	{ "fifo_batch", offsetof(struct zlfs_disp_opts, fifo_batch) },
	{ "front_merges", offsetof(struct zlfs_disp_opts, front_merges) },
	{ "prio_aging_expire", offsetof(struct zlfs_disp_opts, prio_aging_ms) },
	{ "async_depth", offsetof(struct zlfs_disp_opts, async_depth) },
	{ "nr_requests", offsetof(struct zlfs_disp_opts, nr_requests) },
	{ "nomerges", offsetof(struct zlfs_disp_opts, nomerges) },
	{ "max_req_kb", offsetof(struct zlfs_disp_opts, max_req_kb) },
	{ "retry_base", offsetof(struct zlfs_disp_opts, retry_base) },
};

const char *zlfs_disp_knob_name(size_t i)
{
	return i < sizeof(knobs) / sizeof(knobs[0]) ? knobs[i].name : NULL;
}

int zlfs_disp_opts_set(struct zlfs_disp_opts *o, const char *name, const char *val)
{
	if (!strcmp(name, "mode")) {
		for (uint8_t m = ZLFS_MODE_ZWL; m <= ZLFS_MODE_ZWP; m++) {
			if (!strcmp(val, zlfs_order_mode_str(m))) {
				o->mode = m;
				return 0;
			}
		}
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		if (strcmp(name, knobs[i].name))
			continue;
		char *end;
		errno = 0;
		unsigned long v = strtoul(val, &end, 10);
		if (errno || end == val || *end || *val == '-' || v > UINT32_MAX)
			return -EINVAL;
		*(uint32_t *)((char *)o + knobs[i].off) = (uint32_t)v;
		return 0;
	}
	return -ENOENT;
}

/* ---- helpers ---------------------------------------------------------------- */

static struct dzone *dz(struct zlfs_disp *d, uint32_t zone)
{
	return zone < d->g->nr_conv ? &d->conv : &d->zones[zone - d->g->nr_conv];
}

static struct dzone *zone_of(struct zlfs_disp *d, uint64_t off)
{
	return dz(d, (uint32_t)(off / d->g->zone_size));
}

static uint64_t queued(const struct dd_level *l)
{
	return l->inserted - l->completed;
}

/* Could this write go to its zone now?  (reads and appends always can) */
static bool can_dispatch(struct zlfs_disp *d, struct drq *rq)
{
	if (!rq->seq_write)
		return true;
	struct dzone *z = dz(d, rq->zone);
	if (rq->recovery)
		return true;
	if (d->mode == ZLFS_MODE_NOLOCK && (z->nparked || z->recov_inflight)) {
		/* a write below every parked one may be the one they wait for */
		return z->nparked && !z->recov_inflight &&
		       rq->off < container_of(z->parked.next, struct drq, fnode)->off;
	}
	if (rq->needs_lock && z->locked)
		return false;
	return true;
}

/* First request of list `sort` at or after pos. */
static struct drq *sort_from(struct dnode *sort, uint64_t pos)
{
	struct dnode *n;

	if (dl_empty(sort) || SORT_RQ(sort->prev)->off < pos)
		return NULL;
	/* walk back from the tail: new requests are usually the highest */
	for (n = sort->prev; n->prev != sort && SORT_RQ(n->prev)->off >= pos; n = n->prev)
		;
	return SORT_RQ(n);
}

/* deadline_from_pos: sequential-zone writes start the search at the zone start */
static uint64_t from_pos(struct zlfs_disp *d, int dir, uint64_t pos)
{
	if (dir == DIR_WRITE && d->g->zoned && pos < d->g->size && zone_of(d, pos)->seq)
		return zone_of(d, pos)->start;
	return pos;
}

static struct drq *next_rq(struct zlfs_disp *d, struct dd_level *l, int dir)
{
	struct drq *rq = sort_from(&l->sort[dir], from_pos(d, dir, l->latest_pos[dir]));

	if (dir == DIR_READ || !d->g->zoned)
		return rq;
	while (rq && !can_dispatch(d, rq))
		rq = rq->snode.next == &l->sort[dir] ? NULL : SORT_RQ(rq->snode.next);
	return rq;
}

static struct drq *fifo_rq(struct zlfs_disp *d, struct dd_level *l, int dir)
{
	if (dl_empty(&l->fifo[dir]))
		return NULL;
	if (dir == DIR_READ || !d->g->zoned)
		return FIFO_RQ(l->fifo[dir].next);
	for (struct dnode *n = l->fifo[dir].next; n != &l->fifo[dir]; n = n->next) {
		struct drq *rq = FIFO_RQ(n);
		if (rq->seq_write) {
			/* the lowest-LBA write pending in this zone goes first */
			struct drq *low = sort_from(&l->sort[dir], dz(d, rq->zone)->start);
			if (low && low->off < rq->off)
				rq = low;
		}
		if (can_dispatch(d, rq))
			return rq;
	}
	return NULL;
}

static bool fifo_expired(struct dd_level *l, int dir, uint64_t now)
{
	return !dl_empty(&l->fifo[dir]) && FIFO_RQ(l->fifo[dir].next)->fifo_time <= now;
}

/* ---- dispatch ------------------------------------------------------------------ */

static struct drq *dd_dispatch_level(struct zlfs_disp *d, int prio, uint64_t now,
				     uint64_t latest_start)
{
	struct dd_level *l = &d->lv[prio];
	struct drq *rq = NULL;
	int dir;

	/* a: the dispatch list (requests not blocked by their zone) */
	for (struct dnode *n = l->dispatch.next; n != &l->dispatch; n = n->next) {
		struct drq *c = FIFO_RQ(n);
		if (c->start_ns > latest_start)
			return NULL;
		if (can_dispatch(d, c)) {
			dl_del(&c->fnode);
			return c;
		}
	}
	/* b: continue the current batch */
	rq = next_rq(d, l, d->last_dir);
	if (rq && d->batching < d->o.fifo_batch) {
		dir = d->last_dir;
		goto dispatch;
	}
	/* c: choose a direction */
	if (!dl_empty(&l->fifo[DIR_READ])) {
		if (fifo_rq(d, l, DIR_WRITE) && d->starved++ >= d->o.writes_starved)
			goto writes;
		dir = DIR_READ;
		goto find;
	}
	if (!dl_empty(&l->fifo[DIR_WRITE])) {
writes:
		d->starved = 0;
		dir = DIR_WRITE;
		goto find;
	}
	return NULL;
find:
	/* d: sort order, unless the oldest request has expired */
	rq = next_rq(d, l, dir);
	if (fifo_expired(l, dir, now) || !rq)
		rq = fifo_rq(d, l, dir);
	if (!rq)
		return NULL;    /* only writes to zones that can't take one */
	d->last_dir = (uint8_t)dir;
	d->batching = 0;
dispatch:
	/* e */
	if (rq->start_ns > latest_start)
		return NULL;
	d->batching++;
	dl_del(&rq->snode);
	dl_del(&rq->fnode);
	rq->in_sort = false;
	l->latest_pos[dir] = rq->off + rq->len;
	return rq;
}

static struct drq *dd_dispatch(struct zlfs_disp *d, uint64_t now)
{
	uint64_t aging = (uint64_t)d->o.prio_aging_ms * 1000000ull;
	int busy = 0;
	struct drq *rq;

	for (int p = 0; p < NR_LEVELS; p++)
		busy += queued(&d->lv[p]) > 0;
	/* 1: requests waiting longer than prio_aging_expire go first */
	if (busy >= 2 && now > aging) {
		for (int p = ZLFS_PRIO_BE; p <= ZLFS_PRIO_IDLE; p++) {
			if ((rq = dd_dispatch_level(d, p, now, now - aging)))
				return rq;
		}
	}
	/* 2: strict priority */
	for (int p = 0; p < NR_LEVELS; p++) {
		rq = dd_dispatch_level(d, p, now, UINT64_MAX);
		if (rq || queued(&d->lv[p]))
			return rq;
	}
	return NULL;
}

/* Mark rq dispatched and prepare its device command. */
static void prepare(struct zlfs_disp *d, struct drq *rq, struct after *a)
{
	struct dd_level *l = &d->lv[rq->prio];

	l->dispatched++;
	d->st.dispatched++;
	d->dev_inflight++;
	if (rq->seq_write) {
		struct dzone *z = dz(d, rq->zone);
		z->inflight++;
		if (rq->recovery)
			z->recov_inflight++;
		/* a zone that lost its write pointer fails what was queued for it */
		if (z->need_resync && !rq->zwp) {
			complete_locked(d, rq, -EIO, a);
			return;
		}
	}
	if (!rq->recovery && rq_build_cmd(rq)) {
		complete_locked(d, rq, -ENOMEM, a);
		return;
	}
	if (rq->seq_write) {
		struct dzone *z = dz(d, rq->zone);
		if (rq->needs_lock) {
			assert(!z->locked);
			z->locked = true;
			rq->zone_locked = true;
		}
		if (z->inflight > z->max_inflight)
			z->max_inflight = z->inflight;
		if (z->inflight > d->st.max_zone_inflight)
			d->st.max_zone_inflight = z->inflight;
		/* zwl and zwp: never more than one write per zone in flight */
		assert(d->mode == ZLFS_MODE_NOLOCK || z->inflight <= 1);
	}
	a->submit[a->nsubmit++] = rq;
}

/* Pick requests while the device has room. Caller holds d->lock. */
static void run_queue(struct zlfs_disp *d, struct after *a)
{
	uint64_t now = zlfs_now_ns();

	a->more = false;
	while (d->dev_inflight < d->dev_depth) {
		if (a->nsubmit == (int)(sizeof(a->submit) / sizeof(a->submit[0]))) {
			a->more = true;
			break;
		}
		struct drq *rq = dd_dispatch(d, now);
		if (!rq)
			break;
		prepare(d, rq, a);
	}
}

static void cmd_done(struct zlfs_cmd *cmd);

/* Run end() of finished bios (no lock held). */
static void end_bios(struct zlfs_disp *d, struct zlfs_bio *b)
{
	while (b) {
		struct zlfs_bio *next = b->bnext;
		b->bnext = NULL;
		b->end(b);
		pthread_mutex_lock(&d->lock);
		if (!--d->outstanding)
			pthread_cond_broadcast(&d->idle_cv);
		pthread_mutex_unlock(&d->lock);
		b = next;
	}
}

/* zlfs_disp_submit calls on this thread's stack (a device that completes inline) */
static __thread int in_submit;

/*
 * Submit what run_queue picked and complete finished bios.  No lock held.
 * With defer (we are inside zlfs_disp_submit), end() of finished bios runs
 * on the dispatcher's completion thread instead: a caller may hold its own
 * lock around zlfs_disp_submit, and end() may want that lock.  Bios marked
 * ZLFS_BIO_END_INLINE end here all the same.
 */
static void do_after(struct zlfs_disp *d, struct after *a, bool defer)
{
	while (a->nsubmit || a->done_head || a->more) {
		struct drq *batch[sizeof(a->submit) / sizeof(a->submit[0])];
		int n = a->nsubmit;
		bool failed = false;

		memcpy(batch, a->submit, (size_t)n * sizeof(batch[0]));
		a->nsubmit = 0;
		for (int i = 0; i < n; i++) {
			int ret = zlfs_zdev_submit(d->dev, &batch[i]->cmd);
			if (ret) {
				pthread_mutex_lock(&d->lock);
				complete_locked(d, batch[i], ret, a);
				pthread_mutex_unlock(&d->lock);
				failed = true;
			}
		}
		struct zlfs_bio *done = a->done_head;
		a->done_head = a->done_tail = NULL;
		if (done && defer) {
			/* those that may end here do; the rest go to the completion thread */
			struct zlfs_bio *now = NULL, **nt = &now, **dt = &done;
			for (struct zlfs_bio *b = done, *next; b; b = next) {
				next = b->bnext;
				b->bnext = NULL;
				if (b->flags & ZLFS_BIO_END_INLINE) {
					*nt = b;
					nt = &b->bnext;
				} else {
					*dt = b;
					dt = &b->bnext;
				}
			}
			*dt = NULL;
			end_bios(d, now);
		}
		if (done && defer) {
			pthread_mutex_lock(&d->lock);
			struct zlfs_bio *t = done;
			while (t->bnext)
				t = t->bnext;
			if (d->defer_tail)
				d->defer_tail->bnext = done;
			else
				d->defer_head = done;
			d->defer_tail = t;
			pthread_cond_signal(&d->defer_cv);
			pthread_mutex_unlock(&d->lock);
		} else {
			end_bios(d, done);
		}
		if (failed || a->more) {
			pthread_mutex_lock(&d->lock);
			run_queue(d, a);
			pthread_mutex_unlock(&d->lock);
		}
	}
}

/* The completion thread for bios finished inside zlfs_disp_submit. */
static void *defer_worker(void *arg)
{
	struct zlfs_disp *d = arg;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		while (!d->defer_head && !d->defer_stop)
			pthread_cond_wait(&d->defer_cv, &d->lock);
		if (!d->defer_head && d->defer_stop)
			break;
		struct zlfs_bio *b = d->defer_head;
		d->defer_head = d->defer_tail = NULL;
		pthread_mutex_unlock(&d->lock);
		end_bios(d, b);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static void bio_done_later(struct after *a, struct zlfs_bio *b, int result)
{
	b->result = result;
	b->bnext = NULL;
	if (a->done_tail)
		a->done_tail->bnext = b;
	else
		a->done_head = b;
	a->done_tail = b;
}

/* ---- requests ------------------------------------------------------------------ */

static void tag_put(struct zlfs_disp *d, struct drq *rq)
{
	if (rq->tagged) {
		d->tags--;
		if (rq->async_tag)
			d->async_tags--;
		rq->tagged = false;
		pthread_cond_broadcast(&d->tag_cv);
	}
}

static void rq_free(struct drq *rq)
{
	if (rq->iov != rq->iov_inline)
		free(rq->iov);
	free(rq);
}

static struct drq *rq_alloc(struct zlfs_disp *d, struct zlfs_bio *b)
{
	struct drq *rq = calloc(1, sizeof(*rq));

	if (!rq)
		return NULL;
	rq->d = d;
	rq->bio_head = rq->bio_tail = b;
	rq->nbios = 1;
	rq->off = b->off;
	rq->len = b->len;
	rq->op = b->op;
	rq->dir = b->op == ZLFS_OP_READ ? DIR_READ : DIR_WRITE;
	rq->prio = b->prio < NR_LEVELS ? b->prio : ZLFS_PRIO_BE;
	rq->zone = (uint32_t)(b->off / d->g->zone_size);
	rq->seq_write = b->op == ZLFS_OP_WRITE && dz(d, rq->zone)->seq;
	if (rq->seq_write) {
		bool nolock = d->mode == ZLFS_MODE_NOLOCK && (b->flags & ZLFS_BIO_NO_ZWL);
		rq->nolock = nolock;
		rq->needs_lock = d->mode != ZLFS_MODE_ZWP && !nolock;
	}
	rq->iov = rq->iov_inline;
	dl_init(&rq->snode);
	dl_init(&rq->fnode);
	return rq;
}

/* Build the device command from the request's bios. */
static int rq_build_cmd(struct drq *rq)
{
	if (rq->nbios > sizeof(rq->iov_inline) / sizeof(rq->iov_inline[0])) {
		/* built once, at the first dispatch; merges end there */
		if (rq->iov == rq->iov_inline) {
			struct iovec *v = calloc(rq->nbios, sizeof(*v));
			if (!v)
				return -ENOMEM;
			rq->iov = v;
		}
	}
	int i = 0;
	for (struct zlfs_bio *b = rq->bio_head; b; b = b->bnext, i++) {
		rq->iov[i].iov_base = b->buf;
		rq->iov[i].iov_len = b->len;
	}
	memset(&rq->cmd, 0, sizeof(rq->cmd));
	rq->cmd.op = rq->op;
	rq->cmd.off = rq->off;
	rq->cmd.iov = rq->iov;
	rq->cmd.iovcnt = rq->op == ZLFS_OP_FLUSH ? 0 : i;
	rq->cmd.done = cmd_done;
	rq->cmd.priv = rq;
	return 0;
}

/* Insert into the scheduler. Caller holds d->lock. */
static void rq_insert(struct zlfs_disp *d, struct drq *rq, bool at_head)
{
	struct dd_level *l = &d->lv[rq->prio];
	uint64_t now = zlfs_now_ns();

	l->inserted++;
	d->st.inserted++;
	rq->start_ns = now;
	if (at_head || rq->op == ZLFS_OP_FLUSH) {
		rq->fifo_time = now;
		if (at_head)
			dl_add_head(&l->dispatch, &rq->fnode);
		else
			dl_add_tail(&l->dispatch, &rq->fnode);
		return;
	}
	rq->fifo_time = now + (uint64_t)(rq->dir == DIR_READ ? d->o.read_expire_ms
							  : d->o.write_expire_ms) * 1000000ull;
	/* sort list: from the tail, sequential inserts stop at once */
	struct dnode *s = &l->sort[rq->dir], *n = s->prev;
	while (n != s && SORT_RQ(n)->off > rq->off)
		n = n->prev;
	dl_add_after(n, &rq->snode);
	rq->in_sort = true;
	/* fifo: a sequential-zone write goes ahead of later-LBA writes of its zone */
	struct dnode *f = &l->fifo[rq->dir], *pos = f->prev;
	if (rq->seq_write && d->mode != ZLFS_MODE_ZWP) {
		struct dnode *first = NULL;
		for (struct dnode *x = f->next; x != f; x = x->next) {
			struct drq *o = FIFO_RQ(x);
			if (o->seq_write && o->zone == rq->zone && o->off > rq->off) {
				first = x;
				break;
			}
		}
		if (first) {
			rq->fifo_time = FIFO_RQ(first)->fifo_time;
			pos = first->prev;
		}
	}
	dl_add_after(pos, &rq->fnode);
}

/* Try to merge bio b into a queued request. Caller holds d->lock. */
static bool try_merge(struct zlfs_disp *d, struct zlfs_bio *b)
{
	struct dd_level *l;
	int dir;

	if (d->o.nomerges || (b->op != ZLFS_OP_READ && b->op != ZLFS_OP_WRITE))
		return false;
	dir = b->op == ZLFS_OP_READ ? DIR_READ : DIR_WRITE;
	l = &d->lv[b->prio < NR_LEVELS ? b->prio : ZLFS_PRIO_BE];
	uint32_t zone = (uint32_t)(b->off / d->g->zone_size);
	bool nolock = dir == DIR_WRITE && d->mode == ZLFS_MODE_NOLOCK && dz(d, zone)->seq &&
		      (b->flags & ZLFS_BIO_NO_ZWL);
	for (struct dnode *n = l->sort[dir].prev; n != &l->sort[dir]; n = n->prev) {
		struct drq *rq = SORT_RQ(n);
		if (rq->off + d->max_req < b->off)
			break;     /* too far below to end where b starts */
		if (rq->op != b->op || rq->nbios >= MAX_SEGS || rq->len + b->len > d->max_req)
			continue;
		/* never merge across a zone, nor mix locked and lock-free writes */
		if (rq->zone != zone || rq->nolock != nolock)
			continue;
		if (rq->off + rq->len == b->off) {            /* back merge */
			rq->bio_tail->bnext = b;
			rq->bio_tail = b;
			b->bnext = NULL;
		} else if (d->o.front_merges && b->off + b->len == rq->off) {   /* front merge */
			b->bnext = rq->bio_head;
			rq->bio_head = b;
			rq->off = b->off;
			/* keep the sort list ordered even if something overlapped b */
			dl_del(&rq->snode);
			struct dnode *s = &l->sort[dir], *p = s->prev;
			while (p != s && SORT_RQ(p)->off > rq->off)
				p = p->prev;
			dl_add_after(p, &rq->snode);
		} else {
			continue;
		}
		rq->len += b->len;
		rq->nbios++;
		l->merged++;
		d->st.merged++;
		return true;
	}
	return false;
}

/* ---- submission ------------------------------------------------------------------ */

/* ZWP: check the bio against its zone's plug. 1 = plugged, 0 = go on, <0 = refuse. */
static int zwp_plug(struct zlfs_disp *d, struct zlfs_bio *b)
{
	struct dzone *z = zone_of(d, b->off);

	if (!z->seq || (b->op != ZLFS_OP_WRITE && b->op != ZLFS_OP_APPEND))
		return 0;
	if (z->need_resync)
		return -EIO;
	uint64_t off = b->off;
	if (b->op == ZLFS_OP_APPEND)
		off = z->plug_wp;     /* zone append emulation: a write at the plug's wp */
	else if (off != z->plug_wp)
		return -ZLFS_EUNALIGNED;
	if (off + b->len > z->start + z->cap)
		return -ZLFS_EBOUNDARY;
	/* accepted: only now change the bio, so a refused one comes back intact */
	b->off = off;
	b->op = ZLFS_OP_WRITE;
	z->plug_wp += b->len;
	if (!z->plugged) {
		z->plugged = true;
		return 0;
	}
	b->bnext = NULL;
	if (z->plug_tail)
		z->plug_tail->bnext = b;
	else
		z->plug_head = b;
	z->plug_tail = b;
	d->st.plugged++;
	return 1;
}

int zlfs_disp_submit(struct zlfs_disp *d, struct zlfs_bio *b)
{
	const struct zlfs_zdev_geom *g = d->g;
	struct after a = { .nsubmit = 0 };
	struct drq *rq;
	int ret;

	b->bnext = NULL;
	b->result = 0;
	b->submit_ns = zlfs_now_ns();
	if (b->op > ZLFS_OP_FLUSH)
		return -EINVAL;
	if (b->op != ZLFS_OP_FLUSH) {
		if (!b->len || b->off % g->lbs || b->len % g->lbs || b->off >= g->size ||
		    b->len > g->size - b->off)
			return -EINVAL;
		uint64_t zs = g->zone_size;
		bool conv_span = !dz(d, (uint32_t)(b->off / zs))->seq &&
				 !dz(d, (uint32_t)((b->off + b->len - 1) / zs))->seq;
		if (b->op != ZLFS_OP_READ && !conv_span && b->off / zs != (b->off + b->len - 1) / zs)
			return -ZLFS_EBOUNDARY;
	}
	pthread_mutex_lock(&d->lock);
	if (b->op == ZLFS_OP_WRITE && zone_of(d, b->off)->seq && zone_of(d, b->off)->need_resync &&
	    d->mode != ZLFS_MODE_ZWP) {
		pthread_mutex_unlock(&d->lock);
		return -EIO;
	}
	if (d->mode == ZLFS_MODE_ZWP && b->op != ZLFS_OP_FLUSH) {
		ret = zwp_plug(d, b);
		if (ret) {
			if (ret > 0)
				d->outstanding++;
			pthread_mutex_unlock(&d->lock);
			return ret > 0 ? 0 : ret;
		}
	}
	d->outstanding++;
	if (!(d->mode == ZLFS_MODE_ZWP && b->op == ZLFS_OP_WRITE) && try_merge(d, b))
		goto run;
	/* a scheduler tag: asynchronous writes may use only async_depth of them */
	bool async = b->op != ZLFS_OP_READ && !(b->flags & ZLFS_BIO_SYNC);
	while (d->tags >= d->nr_requests || (async && d->async_tags >= d->async_depth))
		pthread_cond_wait(&d->tag_cv, &d->lock);
	rq = rq_alloc(d, b);
	if (!rq) {
		d->outstanding--;
		pthread_mutex_unlock(&d->lock);
		return -ENOMEM;
	}
	rq->tagged = true;
	rq->async_tag = async;
	d->tags++;
	if (async)
		d->async_tags++;
	rq->zwp = d->mode == ZLFS_MODE_ZWP && rq->seq_write;
	rq_insert(d, rq, b->flags & ZLFS_BIO_AT_HEAD);
run:
	run_queue(d, &a);
	pthread_mutex_unlock(&d->lock);
	in_submit++;
	do_after(d, &a, true);
	in_submit--;
	return 0;
}

/* ---- completion ------------------------------------------------------------------ */

/* Fail every bio of rq (and free it). Caller holds d->lock. */
static void rq_end(struct zlfs_disp *d, struct drq *rq, int result, struct after *a)
{
	uint64_t off = rq->op == ZLFS_OP_APPEND ? rq->cmd.pos : rq->off;
	struct zlfs_bio *b = rq->bio_head, *next;

	d->lv[rq->prio].completed++;
	d->st.completed++;
	for (; b; b = next) {
		next = b->bnext;
		b->pos = result ? 0 : off;
		off += b->len;
		if (result)
			d->st.failed++;
		else if (rq->recovery)
			d->st.recovered++;
		bio_done_later(a, b, result);
	}
	tag_put(d, rq);
	rq_free(rq);
}

/* Re-read zone's write pointer from the device. Caller holds d->lock. */
static int zone_reread(struct zlfs_disp *d, struct dzone *z)
{
	struct zlfs_zone rep;
	uint32_t nr = 1;
	int ret = zlfs_zdev_report(d->dev, (uint32_t)(z->start / d->g->zone_size), &rep, &nr);

	if (ret || nr != 1)
		return ret ? ret : -EIO;
	if (rep.cond == ZLFS_ZC_OFFLINE || rep.cond == ZLFS_ZC_RDONLY)
		return -EIO;
	z->wp = rep.cond == ZLFS_ZC_FULL ? rep.start + rep.cap : rep.wp;
	return 0;
}

/* Is a write to zone z below `off` still waiting in the scheduler? */
static bool queued_below(struct zlfs_disp *d, struct dzone *z, uint64_t off)
{
	for (int p = 0; p < NR_LEVELS; p++) {
		struct dnode *h = &d->lv[p].sort[DIR_WRITE];
		for (struct dnode *n = h->next; n != h; n = n->next) {
			struct drq *rq = SORT_RQ(n);
			if (rq->off >= z->start && rq->off < off)
				return true;
			if (rq->off >= off)
				break;
		}
	}
	return false;
}

/* The zone is quiet and has parked writes: resubmit them or fail them. */
static void recover_zone(struct zlfs_disp *d, struct dzone *z, struct after *a)
{
	struct drq *low = FIFO_RQ(z->parked.next);

	if (low->off != z->wp && (zone_reread(d, z) || low->off != z->wp)) {
		/* a write still queued below them may fill the gap: let it go first
		 * (can_dispatch lets it through); recovery runs again when it is done */
		if (queued_below(d, z, low->off))
			return;
		/* a hole nothing can fill: give up on all of them */
		while (!dl_empty(&z->parked)) {
			struct drq *rq = FIFO_RQ(z->parked.next);
			dl_del(&rq->fnode);
			z->nparked--;
			rq_end(d, rq, -EIO, a);
		}
		z->need_resync = true;
		d->st.resyncs++;
		return;
	}
	/* highest first at the head leaves the lowest LBA at the front */
	while (!dl_empty(&z->parked)) {
		struct drq *rq = FIFO_RQ(z->parked.prev);
		dl_del(&rq->fnode);
		z->nparked--;
		rq->retries++;
		rq->recovery = true;
		d->st.retries++;
		rq_build_cmd(rq);   /* iov already sized at the first dispatch */
		dl_add_head(&d->lv[rq->prio].dispatch, &rq->fnode);
	}
}

static void park(struct zlfs_disp *d, struct dzone *z, struct drq *rq)
{
	struct dnode *n = z->parked.prev;

	while (n != &z->parked && FIFO_RQ(n)->off > rq->off)
		n = n->prev;
	dl_add_after(n, &rq->fnode);
	z->nparked++;
	if (z->nparked > d->st.max_parked)
		d->st.max_parked = z->nparked;
}

/* ZWP: after a write of zone z completed, let the next plugged bio in. */
static void zwp_unplug(struct zlfs_disp *d, struct dzone *z, int result, struct after *a)
{
	if (result) {
		/* abort everything plugged; the write pointer is unknown now */
		while (z->plug_head) {
			struct zlfs_bio *b = z->plug_head;
			z->plug_head = b->bnext;
			d->st.failed++;
			bio_done_later(a, b, -EIO);
		}
		z->plug_tail = NULL;
		z->plugged = false;
		z->need_resync = true;
		d->st.resyncs++;
		return;
	}
	struct zlfs_bio *b = z->plug_head;
	if (!b) {
		z->plugged = false;
		return;
	}
	z->plug_head = b->bnext;
	if (!z->plug_head)
		z->plug_tail = NULL;
	b->bnext = NULL;
	/* plugged bios hold no tag; the unplugged request takes none either */
	struct drq *rq = rq_alloc(d, b);
	if (!rq) {
		d->st.failed++;
		bio_done_later(a, b, -ENOMEM);
		zwp_unplug(d, z, -ENOMEM, a);
		return;
	}
	rq->zwp = true;
	rq_insert(d, rq, false);
}


/*
 * A request finished (or failed before reaching the device). Caller holds
 * d->lock; bios to end and requests to submit are gathered in a.
 */
static void complete_locked(struct zlfs_disp *d, struct drq *rq, int result, struct after *a)
{
	d->dev_inflight--;
	if (rq->seq_write) {
		struct dzone *z = dz(d, rq->zone);
		z->inflight--;
		if (rq->recovery)
			z->recov_inflight--;
		if (rq->zone_locked) {
			z->locked = false;
			rq->zone_locked = false;
		}
		if (!result) {
			uint64_t end = rq->off + rq->len;
			if (end > z->wp)
				z->wp = end;
		}
		if (result == -ZLFS_EUNALIGNED)
			d->st.unaligned++;
		bool parked = false;
		if (result == -ZLFS_EUNALIGNED && rq->nolock) {
			if (!rq->max_retries)
				rq->max_retries = d->o.retry_base + z->max_inflight;
			if (rq->retries < rq->max_retries) {
				park(d, z, rq);
				parked = true;
			} else {
				result = -EIO;
			}
		}
		if (rq->zwp)
			zwp_unplug(d, z, result, a);
		if (!z->inflight && z->nparked)
			recover_zone(d, z, a);
		if (parked)
			return;
	}
	rq_end(d, rq, result, a);
}

static void cmd_done(struct zlfs_cmd *cmd)
{
	struct drq *rq = cmd->priv;
	struct zlfs_disp *d = rq->d;
	struct after a = { .nsubmit = 0 };

	pthread_mutex_lock(&d->lock);
	complete_locked(d, rq, cmd->result, &a);
	run_queue(d, &a);
	pthread_mutex_unlock(&d->lock);
	/* completed inside zlfs_disp_submit (the device did it inline): as there */
	do_after(d, &a, in_submit > 0);
}

/* ---- set-up and the rest of the API -------------------------------------------- */

/* Load the write pointers of zones [first, first+nr) from the device. */
static int resync_zones(struct zlfs_disp *d, uint32_t first, uint32_t nr)
{
	struct zlfs_zone rep[256];

	while (nr) {
		uint32_t n = nr < 256 ? nr : 256;
		int ret = zlfs_zdev_report(d->dev, first, rep, &n);
		if (ret)
			return ret;
		if (!n)
			return -EIO;
		pthread_mutex_lock(&d->lock);
		for (uint32_t i = 0; i < n; i++) {
			if (first + i < d->g->nr_conv)
				continue;     /* the shared record of the prefix */
			struct dzone *z = dz(d, first + i);
			z->seq = rep[i].type != ZLFS_ZONE_CONV;
			z->start = rep[i].start;
			z->cap = rep[i].cap;
			if (!z->seq)
				continue;
			z->wp = rep[i].cond == ZLFS_ZC_FULL ? rep[i].start + rep[i].cap : rep[i].wp;
			/* a plug with writes queued keeps its own idea of the wp */
			if (!z->plugged)
				z->plug_wp = z->wp;
			z->need_resync = false;
		}
		pthread_mutex_unlock(&d->lock);
		first += n;
		nr -= n;
	}
	return 0;
}

int zlfs_disp_create(struct zlfs_zdev *dev, const struct zlfs_disp_opts *o, struct zlfs_disp **out)
{
	struct zlfs_disp *d = calloc(1, sizeof(*d));
	int ret;

	if (!d)
		return -ENOMEM;
	d->dev = dev;
	d->g = zlfs_zdev_geom(dev);
	if (o)
		d->o = *o;
	else
		zlfs_disp_opts_default(&d->o);
	if (d->o.mode > ZLFS_MODE_ZWP || !d->o.fifo_batch || !d->o.max_req_kb) {
		free(d);
		return -EINVAL;
	}
	d->mode = d->o.mode;
	/* both flags, as in the series: the device must declare it too */
	if (d->mode == ZLFS_MODE_NOLOCK && !d->g->no_zwl)
		d->mode = ZLFS_MODE_ZWL;
	d->dev_depth = d->g->depth ? d->g->depth : 1;
	d->nr_requests = d->o.nr_requests ? d->o.nr_requests : 2 * d->dev_depth;
	d->async_depth = d->o.async_depth ? d->o.async_depth : (3 * d->nr_requests + 3) / 4;
	if (d->async_depth > d->nr_requests)
		d->async_depth = d->nr_requests;
	d->max_req = (uint64_t)d->o.max_req_kb * 1024;
	if (d->g->max_io && d->max_req > d->g->max_io)
		d->max_req = d->g->max_io;   /* merges must not make requests a kernel splits */
	if (d->max_req < d->g->lbs)
		d->max_req = d->g->lbs;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->tag_cv, NULL);
	pthread_cond_init(&d->idle_cv, NULL);
	pthread_cond_init(&d->defer_cv, NULL);
	if (pthread_create(&d->defer_th, NULL, defer_worker, d)) {
		zlfs_disp_destroy(d);
		return -EAGAIN;
	}
	d->defer_running = true;
	for (int p = 0; p < NR_LEVELS; p++) {
		dl_init(&d->lv[p].dispatch);
		for (int dir = 0; dir < 2; dir++) {
			dl_init(&d->lv[p].sort[dir]);
			dl_init(&d->lv[p].fifo[dir]);
		}
	}
	uint32_t nr_seq = d->g->nr_zones - d->g->nr_conv;
	d->zones = calloc(nr_seq ? nr_seq : 1, sizeof(*d->zones));
	if (!d->zones) {
		zlfs_disp_destroy(d);
		return -ENOMEM;
	}
	dl_init(&d->conv.parked);
	for (uint32_t i = 0; i < nr_seq; i++)
		dl_init(&d->zones[i].parked);
	/* the prefix needs no report: conventional zones have no write pointer */
	if ((ret = resync_zones(d, d->g->nr_conv, nr_seq))) {
		zlfs_disp_destroy(d);
		return ret;
	}
	*out = d;
	return 0;
}

void zlfs_disp_drain(struct zlfs_disp *d)
{
	pthread_mutex_lock(&d->lock);
	while (d->outstanding)
		pthread_cond_wait(&d->idle_cv, &d->lock);
	pthread_mutex_unlock(&d->lock);
}

void zlfs_disp_destroy(struct zlfs_disp *d)
{
	if (!d)
		return;
	zlfs_disp_drain(d);
	if (d->defer_running) {
		pthread_mutex_lock(&d->lock);
		d->defer_stop = true;
		pthread_cond_signal(&d->defer_cv);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->defer_th, NULL);
	}
	pthread_cond_destroy(&d->defer_cv);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->tag_cv);
	pthread_cond_destroy(&d->idle_cv);
	free(d->zones);
	free(d);
}

struct zlfs_zdev *zlfs_disp_dev(struct zlfs_disp *d)
{
	return d->dev;
}

uint8_t zlfs_disp_mode(const struct zlfs_disp *d)
{
	return d->mode;
}

struct sync_bio {
	struct zlfs_bio bio;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool done;
};

static void sync_end(struct zlfs_bio *b)
{
	struct sync_bio *s = (struct sync_bio *)b;

	pthread_mutex_lock(&s->lock);
	s->done = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->lock);
}

int zlfs_disp_rw(struct zlfs_disp *d, uint8_t op, void *buf, uint32_t len, uint64_t off,
		 uint32_t flags, uint64_t *pos)
{
	struct sync_bio s;
	int ret;

	memset(&s, 0, sizeof(s));
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cv, NULL);
	s.bio.op = op;
	s.bio.prio = ZLFS_PRIO_BE;
	s.bio.flags = flags | ZLFS_BIO_SYNC | ZLFS_BIO_END_INLINE;   /* sync_end: s's lock */
	s.bio.off = off;
	s.bio.buf = buf;
	s.bio.len = len;
	s.bio.end = sync_end;
	ret = zlfs_disp_submit(d, &s.bio);
	if (!ret) {
		pthread_mutex_lock(&s.lock);
		while (!s.done)
			pthread_cond_wait(&s.cv, &s.lock);
		pthread_mutex_unlock(&s.lock);
		ret = s.bio.result;
		if (pos)
			*pos = s.bio.pos;
	}
	pthread_mutex_destroy(&s.lock);
	pthread_cond_destroy(&s.cv);
	return ret;
}

int zlfs_disp_flush(struct zlfs_disp *d)
{
	return zlfs_disp_rw(d, ZLFS_OP_FLUSH, NULL, 0, 0, 0, NULL);
}

int zlfs_disp_zone_mgmt(struct zlfs_disp *d, enum zlfs_zone_mgmt op, uint32_t zone)
{
	int ret = zlfs_zdev_zone_mgmt(d->dev, op, zone);
	int r2;

	/* whatever happened, learn where the write pointers are now */
	if (zone == ZLFS_ZONE_ALL)
		r2 = resync_zones(d, d->g->nr_conv, d->g->nr_zones - d->g->nr_conv);
	else if (zone < d->g->nr_conv)
		r2 = 0;
	else
		r2 = resync_zones(d, zone, 1);
	return ret ? ret : r2;
}

/* Conventional zones keep no write pointer: nothing here to keep in step. */
int zlfs_disp_discard(struct zlfs_disp *d, uint64_t off, uint64_t len)
{
	return zlfs_zdev_discard(d->dev, off, len);
}

/* Reads keep no order with anything here: the device answers alone. */
int zlfs_disp_read_fd(struct zlfs_disp *d, uint64_t off, uint64_t len, int *fd, uint64_t *pos)
{
	return zlfs_zdev_read_fd(d->dev, off, len, fd, pos);
}

int zlfs_disp_report(struct zlfs_disp *d, uint32_t first, struct zlfs_zone *zones, uint32_t *nr)
{
	int ret = zlfs_zdev_report(d->dev, first, zones, nr);

	if (ret)
		return ret;
	pthread_mutex_lock(&d->lock);
	for (uint32_t i = 0; i < *nr; i++) {
		struct dzone *z = dz(d, first + i);
		if (!z->seq || z->inflight || z->nparked || z->plugged)
			continue;
		z->wp = zones[i].cond == ZLFS_ZC_FULL ? zones[i].start + zones[i].cap : zones[i].wp;
		z->plug_wp = z->wp;
		z->need_resync = false;
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}

bool zlfs_disp_zone_needs_resync(struct zlfs_disp *d, uint32_t zone)
{
	pthread_mutex_lock(&d->lock);
	bool r = zone < d->g->nr_zones && dz(d, zone)->need_resync;
	pthread_mutex_unlock(&d->lock);
	return r;
}

void zlfs_disp_stats(struct zlfs_disp *d, struct zlfs_disp_stats *st)
{
	pthread_mutex_lock(&d->lock);
	*st = d->st;
	pthread_mutex_unlock(&d->lock);
}
