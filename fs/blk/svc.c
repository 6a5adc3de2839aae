/*
 * svc.c - hardware queues with service times, requeues and hibernation
 * shuffles (see svc.h).
 *
 * Each queue is a singly linked list in execution order; ready times are
 * non-decreasing along it.  A shuffle permutes the commands and leaves the
 * ready times where they were, so the device's pace is unchanged and only
 * the order is lost.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "svc.h"

struct svc_queue {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct zlfs_cmd *head, *tail;
	uint32_t n;
	uint64_t next_hib;
	uint64_t rng;
	bool stop;
	pthread_t th;
	struct svc *s;
};

#define MAX_REQUEUES 8

struct svc {
	struct svc_params p;
	pthread_mutex_t link_lock;
	uint64_t link_free_ns;      /* when the data link is next idle */
	svc_exec_fn exec;
	void *ctx;
	atomic_uint rr;
	atomic_uint_fast64_t requeues, hibernations, reordered;
	struct svc_queue q[];
};

static double rand_unit(uint64_t *rng)
{
	return (double)(zrand_next(rng) >> 11) / (double)(1ull << 53);
}

/* Shuffle the pending commands of q, keeping each position's ready time. */
static void shuffle(struct svc *s, struct svc_queue *q)
{
	struct zlfs_cmd *v[q->n ? q->n : 1], *orig[q->n ? q->n : 1];
	uint64_t t[q->n ? q->n : 1];
	uint32_t n = 0, moved = 0;

	for (struct zlfs_cmd *c = q->head; c; c = c->dnext) {
		orig[n] = v[n] = c;
		t[n++] = c->ready_ns;
	}
	if (n < 2)
		return;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(zrand_next(&q->rng) % (i + 1));
		struct zlfs_cmd *x = v[i];
		v[i] = v[j];
		v[j] = x;
	}
	for (uint32_t i = 0; i < n; i++) {
		moved += v[i] != orig[i];
		v[i]->ready_ns = t[i];
		v[i]->dnext = i + 1 < n ? v[i + 1] : NULL;
	}
	q->head = v[0];
	q->tail = v[n - 1];
	atomic_fetch_add(&s->hibernations, 1);
	atomic_fetch_add(&s->reordered, moved);
}

static void *worker(void *arg)
{
	struct svc_queue *q = arg;
	struct svc *s = q->s;

	/* service times are tens of microseconds: don't let timers slip 50 us */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	pthread_mutex_lock(&q->lock);
	for (;;) {
		if (!q->head) {
			if (q->stop)
				break;
			pthread_cond_wait(&q->cv, &q->lock);
			continue;
		}
		uint64_t now = zlfs_now_ns();
		if (s->p.hib_ns && now >= q->next_hib) {
			if (q->next_hib)
				shuffle(s, q);
			q->next_hib = now - now % s->p.hib_ns + s->p.hib_ns;
		}
		struct zlfs_cmd *c = q->head;
		if (c->ready_ns > now) {
			uint64_t until = c->ready_ns;
			if (s->p.hib_ns && q->next_hib < until)
				until = q->next_hib;
			struct timespec ts = { (time_t)(until / 1000000000ull),
					       (long)(until % 1000000000ull) };
			pthread_cond_timedwait(&q->cv, &q->lock, &ts);
			continue;
		}
		q->head = c->dnext;
		if (!q->head)
			q->tail = NULL;
		if (s->p.reorder > 0 && q->head && c->dseq < MAX_REQUEUES &&
		    rand_unit(&q->rng) < s->p.reorder) {
			/* requeued behind everything pending, as a BLK_STS_RESOURCE requeue;
			 * a bounded number of times, or reorder=1 would never execute anything */
			c->dseq++;
			c->ready_ns = q->tail->ready_ns;
			c->dnext = NULL;
			q->tail->dnext = c;
			q->tail = c;
			atomic_fetch_add(&s->requeues, 1);
			continue;
		}
		q->n--;
		pthread_mutex_unlock(&q->lock);
		s->exec(s->ctx, c);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int svc_create(const struct svc_params *p, svc_exec_fn exec, void *ctx, struct svc **out)
{
	struct svc *s = calloc(1, sizeof(*s) + p->queues * sizeof(struct svc_queue));
	pthread_condattr_t ca;
	uint32_t i;

	if (!s)
		return -ENOMEM;
	s->p = *p;
	s->exec = exec;
	s->ctx = ctx;
	pthread_mutex_init(&s->link_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	for (i = 0; i < p->queues; i++) {
		struct svc_queue *q = &s->q[i];
		pthread_mutex_init(&q->lock, NULL);
		pthread_cond_init(&q->cv, &ca);
		q->s = s;
		q->rng = (p->seed ? p->seed : 0x5eed) * 0x9e3779b97f4a7c15ull + i + 1;
		if (pthread_create(&q->th, NULL, worker, q)) {
			pthread_condattr_destroy(&ca);
			s->p.queues = i;
			svc_destroy(s);
			return -EAGAIN;
		}
	}
	pthread_condattr_destroy(&ca);
	*out = s;
	return 0;
}

void svc_destroy(struct svc *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->p.queues; i++) {
		struct svc_queue *q = &s->q[i];
		pthread_mutex_lock(&q->lock);
		q->stop = true;
		pthread_cond_signal(&q->cv);
		pthread_mutex_unlock(&q->lock);
		pthread_join(q->th, NULL);
		pthread_mutex_destroy(&q->lock);
		pthread_cond_destroy(&q->cv);
	}
	pthread_mutex_destroy(&s->link_lock);
	free(s);
}

int svc_submit(struct svc *s, struct zlfs_cmd *cmd)
{
	uint32_t start = atomic_fetch_add(&s->rr, 1);

	/* spread commands round robin; skip a full queue */
	for (uint32_t k = 0; k < s->p.queues; k++) {
		struct svc_queue *q = &s->q[(start + k) % s->p.queues];
		pthread_mutex_lock(&q->lock);
		if (q->n >= s->p.qd) {
			pthread_mutex_unlock(&q->lock);
			continue;
		}
		uint64_t now = zlfs_now_ns(), ready = now + s->p.lat_ns;
		if (s->p.mbps && cmd->len) {
			uint64_t xfer = cmd->len * 1000000000ull / (s->p.mbps << 20);
			pthread_mutex_lock(&s->link_lock);
			uint64_t t0 = s->link_free_ns > now ? s->link_free_ns : now;
			s->link_free_ns = t0 + xfer;
			if (s->link_free_ns > ready)
				ready = s->link_free_ns;
			pthread_mutex_unlock(&s->link_lock);
		}
		if (q->tail && q->tail->ready_ns > ready)
			ready = q->tail->ready_ns;
		cmd->ready_ns = ready;
		cmd->dnext = NULL;
		cmd->dseq = 0;      /* requeues so far */
		cmd->hwq = (int)(q - s->q);
		bool wake = !q->head;
		if (q->tail)
			q->tail->dnext = cmd;
		else
			q->head = cmd;
		q->tail = cmd;
		q->n++;
		if (wake)
			pthread_cond_signal(&q->cv);
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	return -EBUSY;
}

void svc_counters(struct svc *s, struct svc_counters *c)
{
	c->requeues = atomic_load(&s->requeues);
	c->hibernations = atomic_load(&s->hibernations);
	c->reordered = atomic_load(&s->reordered);
}
