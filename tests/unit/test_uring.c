/*
 * test_uring.c - the io_uring wrapper with its completion thread
 * (fs/blk/uring.c, fs/blk/uring.h).
 *
 * Covers: readv / writev / fsync on a temporary file complete with the
 * right result (bytes or -errno) on the completion thread, not on the
 * submitter; zuring_post runs its callback on that thread with res 0;
 * callbacks may submit more requests (a chain of posts); many submitters on
 * several threads at once on a small ring (more requests in flight than the
 * ring has entries), every callback runs exactly once and the file holds
 * what each writer wrote; requests complete normally even when the thread
 * that submitted them has exited.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "blk/uring.h"

/* One request whose completion a test waits for. */
struct wreq {
	struct zuring_req r;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int res;
	int calls;
	pthread_t th;
};

static void wreq_cb(struct zuring_req *r, int res);

static void wreq_init(struct wreq *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->r.cb = wreq_cb;
}

static void wreq_cb(struct zuring_req *r, int res)
{
	struct wreq *w = (struct wreq *)r;

	pthread_mutex_lock(&w->lock);
	w->res = res;
	w->th = pthread_self();
	w->calls++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->lock);
}

/* Wait (at most 10 s) for the callback; returns its result. */
static int wreq_wait(struct wreq *w)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&w->lock);
	while (!w->calls) {
		if (pthread_cond_timedwait(&w->cv, &w->lock, &ts)) {
			pthread_mutex_unlock(&w->lock);
			ck_abort_msg("io_uring request never completed");
		}
	}
	int res = w->res;
	pthread_mutex_unlock(&w->lock);
	return res;
}

static int tmpfile_fd(const char *name)
{
	char *p = tu_path(name);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	free(p);
	return fd;
}

START_TEST(test_rw_fsync)
{
	struct zuring u;
	struct wreq w;
	char a[4096], b[8192], c[512], back[4096 + 8192 + 512];
	int fd = tmpfile_fd("rw");

	ck_assert_int_eq(zuring_init(&u, 8), 0);
	tu_fill(a, sizeof(a), 1);
	tu_fill(b, sizeof(b), 2);
	tu_fill(c, sizeof(c), 3);
	struct iovec iov[3] = { { a, sizeof(a) }, { b, sizeof(b) }, { c, sizeof(c) } };

	/* a three-segment write at an offset */
	wreq_init(&w);
	ck_assert_int_eq(zuring_writev(&u, fd, iov, 3, 4096, &w.r), 0);
	ck_assert_int_eq(wreq_wait(&w), (int)sizeof(back));
	ck_assert_int_eq(w.calls, 1);
	ck_assert(!pthread_equal(w.th, pthread_self()));
	ck_assert_int_eq(pread(fd, back, sizeof(back), 4096), (ssize_t)sizeof(back));
	ck_assert_mem_eq(back, a, sizeof(a));
	ck_assert_mem_eq(back + sizeof(a), b, sizeof(b));
	ck_assert_mem_eq(back + sizeof(a) + sizeof(b), c, sizeof(c));

	/* read it back with a differently split iovec */
	char r1[1000], r2[sizeof(back) - 1000];
	struct iovec riov[2] = { { r1, sizeof(r1) }, { r2, sizeof(r2) } };
	wreq_init(&w);
	ck_assert_int_eq(zuring_readv(&u, fd, riov, 2, 4096, &w.r), 0);
	ck_assert_int_eq(wreq_wait(&w), (int)sizeof(back));
	ck_assert(!pthread_equal(w.th, pthread_self()));
	ck_assert_mem_eq(r1, back, sizeof(r1));
	ck_assert_mem_eq(r2, back + sizeof(r1), sizeof(r2));

	/* the hole before the data reads as zeros; past EOF is a short read */
	char z[4096];
	struct iovec ziov = { z, sizeof(z) };
	memset(z, 0xff, sizeof(z));
	wreq_init(&w);
	ck_assert_int_eq(zuring_readv(&u, fd, &ziov, 1, 0, &w.r), 0);
	ck_assert_int_eq(wreq_wait(&w), 4096);
	ck_assert_uint_eq(tu_first_not(z, sizeof(z), 0), sizeof(z));
	wreq_init(&w);
	ck_assert_int_eq(zuring_readv(&u, fd, &ziov, 1, 1 << 20, &w.r), 0);
	ck_assert_int_eq(wreq_wait(&w), 0);
	wreq_init(&w);
	ck_assert_int_eq(zuring_readv(&u, fd, &ziov, 1, 4096 + sizeof(back) - 100, &w.r), 0);
	ck_assert_int_eq(wreq_wait(&w), 100);

	/* fsync */
	wreq_init(&w);
	ck_assert_int_eq(zuring_fsync(&u, fd, &w.r), 0);
	ck_assert_int_eq(wreq_wait(&w), 0);
	ck_assert(!pthread_equal(w.th, pthread_self()));

	/* errors come back as -errno through the callback */
	char *path = tu_path("rw");
	int rofd = open(path, O_RDONLY);
	free(path);
	ck_assert_int_ge(rofd, 0);
	wreq_init(&w);
	ck_assert_int_eq(zuring_writev(&u, rofd, iov, 1, 0, &w.r), 0);
	ck_assert_int_eq(wreq_wait(&w), -EBADF);
	close(rofd);

	zuring_fini(&u);
	close(fd);
}
END_TEST

START_TEST(test_post)
{
	struct zuring u;
	struct wreq w;

	ck_assert_int_eq(zuring_init(&u, 4), 0);
	for (int i = 0; i < 20; i++) {
		wreq_init(&w);
		ck_assert_int_eq(zuring_post(&u, &w.r), 0);
		ck_assert_int_eq(wreq_wait(&w), 0);
		ck_assert_int_eq(w.calls, 1);
		ck_assert(!pthread_equal(w.th, pthread_self()));
	}
	zuring_fini(&u);
	/* fini twice is harmless (running is cleared) */
	zuring_fini(&u);
}
END_TEST

/* A callback that posts the next link of a chain from the completion thread. */
struct chain {
	struct zuring_req r;
	struct zuring *u;
	int left, ran;
	pthread_t th;
	bool other_thread;         /* or any other failure */
	struct wreq *last;
};

static void chain_cb(struct zuring_req *r, int res)
{
	struct chain *c = (struct chain *)r;

	if (res != 0)
		c->other_thread = true;   /* reported as a failure below */
	if (c->ran++ == 0)
		c->th = pthread_self();
	else if (!pthread_equal(c->th, pthread_self()))
		c->other_thread = true;
	if (--c->left > 0) {
		if (zuring_post(c->u, &c->r))
			c->other_thread = true;   /* reported as a failure below */
		return;
	}
	if (zuring_post(c->u, &c->last->r))
		c->other_thread = true;
}

START_TEST(test_post_from_callback)
{
	struct zuring u;
	struct wreq last;
	struct chain c = { .u = &u, .left = 500 };

	wreq_init(&last);
	c.last = &last;
	c.r.cb = chain_cb;
	last.r.cb = wreq_cb;
	ck_assert_int_eq(zuring_init(&u, 2), 0);
	ck_assert_int_eq(zuring_post(&u, &c.r), 0);
	ck_assert_int_eq(wreq_wait(&last), 0);
	ck_assert_int_eq(c.ran, 500);
	ck_assert(!c.other_thread);
	ck_assert(!pthread_equal(c.th, pthread_self()));
	ck_assert(pthread_equal(c.th, last.th));
	zuring_fini(&u);
}
END_TEST

/*
 * Several threads submit writes and posts at once on an 8-entry ring,
 * without waiting, so far more requests are in flight than the ring (and
 * its completion queue) holds; some callbacks submit a post themselves.
 */
#define NTHREADS 4
#define PER_THREAD 400
#define CHUNK 512

struct stress;
struct sreq {
	struct zuring_req r;
	struct stress *s;
	struct iovec iov;
	int expect;
	bool post_more;
	atomic_int calls;
};

struct stress {
	struct zuring u;
	int fd;
	atomic_int done, bad, posted_more, extra_done;
	struct sreq extra[NTHREADS * PER_THREAD];
	struct sreq reqs[NTHREADS][PER_THREAD];
	char data[NTHREADS][PER_THREAD][CHUNK];
	int tid[NTHREADS];
};

static void extra_cb(struct zuring_req *r, int res)
{
	struct sreq *q = (struct sreq *)r;

	if (res != 0 || atomic_fetch_add(&q->calls, 1) != 0)
		atomic_fetch_add(&q->s->bad, 1);
	atomic_fetch_add(&q->s->extra_done, 1);
}

static void stress_cb(struct zuring_req *r, int res)
{
	struct sreq *q = (struct sreq *)r;
	struct stress *s = q->s;

	if (res != q->expect || atomic_fetch_add(&q->calls, 1) != 0)
		atomic_fetch_add(&s->bad, 1);
	if (q->post_more) {
		int i = atomic_fetch_add(&s->posted_more, 1);
		s->extra[i].s = s;
		s->extra[i].r.cb = extra_cb;
		if (zuring_post(&s->u, &s->extra[i].r))
			atomic_fetch_add(&s->bad, 1);
	}
	atomic_fetch_add(&s->done, 1);
}

static struct stress *g_stress;

static void *stress_thread(void *arg)
{
	struct stress *s = g_stress;
	int t = *(int *)arg;

	for (int i = 0; i < PER_THREAD; i++) {
		struct sreq *q = &s->reqs[t][i];
		int ret;
		q->s = s;
		q->r.cb = stress_cb;
		q->post_more = i % 7 == 3;
		if (i % 5 == 4) {
			q->expect = 0;
			ret = zuring_post(&s->u, &q->r);
		} else {
			tu_fill(s->data[t][i], CHUNK, (uint64_t)(t * PER_THREAD + i) + 1000);
			q->iov.iov_base = s->data[t][i];
			q->iov.iov_len = CHUNK;
			q->expect = CHUNK;
			ret = zuring_writev(&s->u, s->fd, &q->iov, 1,
					    (uint64_t)(t * PER_THREAD + i) * CHUNK, &q->r);
		}
		if (ret)
			atomic_fetch_add(&s->bad, 1000000);
	}
	/*
	 * Stay alive until everything completed: what happens to requests whose
	 * submitter exits is test_submitter_exits' business.
	 */
	for (int ms = 0; ms < 20000 && atomic_load(&s->done) < NTHREADS * PER_THREAD; ms++)
		usleep(1000);
	return NULL;
}

START_TEST(test_concurrent_submitters)
{
	struct stress *s = calloc(1, sizeof(*s));
	pthread_t th[NTHREADS];

	ck_assert_ptr_nonnull(s);
	g_stress = s;
	s->fd = tmpfile_fd("stress");
	ck_assert_int_eq(ftruncate(s->fd, (off_t)NTHREADS * PER_THREAD * CHUNK), 0);
	ck_assert_int_eq(zuring_init(&s->u, 8), 0);
	for (int t = 0; t < NTHREADS; t++) {
		s->tid[t] = t;
		ck_assert_int_eq(pthread_create(&th[t], NULL, stress_thread, &s->tid[t]), 0);
	}
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	/* wait for every callback, the extra posts included */
	for (int ms = 0; ms < 20000; ms++) {
		if (atomic_load(&s->done) == NTHREADS * PER_THREAD &&
		    atomic_load(&s->extra_done) == atomic_load(&s->posted_more))
			break;
		usleep(1000);
	}
	ck_assert_int_eq(atomic_load(&s->done), NTHREADS * PER_THREAD);
	ck_assert_int_gt(atomic_load(&s->posted_more), 0);
	ck_assert_int_eq(atomic_load(&s->extra_done), atomic_load(&s->posted_more));
	ck_assert_int_eq(atomic_load(&s->bad), 0);
	zuring_fini(&s->u);

	/* each writer's chunk is where it wrote it */
	char buf[CHUNK], zero[CHUNK];
	memset(zero, 0, sizeof(zero));
	for (int t = 0; t < NTHREADS; t++) {
		for (int i = 0; i < PER_THREAD; i++) {
			ck_assert_int_eq(pread(s->fd, buf, CHUNK, (off_t)(t * PER_THREAD + i) * CHUNK),
					 CHUNK);
			if (i % 5 == 4)
				ck_assert_mem_eq(buf, zero, CHUNK);
			else
				ck_assert_mem_eq(buf, s->data[t][i], CHUNK);
		}
	}
	close(s->fd);
	free(s);
}
END_TEST

/*
 * "Submission may come from any thread": a request must complete with its
 * real result even if the thread that submitted it has exited meanwhile
 * (zemu's inline image path submits from whatever thread calls
 * zlfs_zdev_submit, the dispatcher's callers included).  Several threads
 * write to one file at once, so that io_uring hands writes to its workers,
 * and exit right after submitting.
 */
struct exreq {
	struct zuring_req r;
	struct iovec iov;
	atomic_int *done, *bad, *canceled;
};

static void exreq_cb(struct zuring_req *r, int res)
{
	struct exreq *q = (struct exreq *)r;

	if (res == -ECANCELED)
		atomic_fetch_add(q->canceled, 1);
	else if (res != (int)q->iov.iov_len)
		atomic_fetch_add(q->bad, 1);
	atomic_fetch_add(q->done, 1);
}

struct exthread {
	struct zuring *u;
	int fd, t;
	struct exreq *reqs;
	char *data;
};

static void *exit_at_once(void *arg)
{
	struct exthread *x = arg;

	for (int i = 0; i < PER_THREAD; i++) {
		struct exreq *q = &x->reqs[i];
		q->iov.iov_base = x->data + (size_t)i * CHUNK;
		q->iov.iov_len = CHUNK;
		if (zuring_writev(x->u, x->fd, &q->iov, 1, ((uint64_t)x->t * PER_THREAD + i) * CHUNK,
				  &q->r))
			atomic_fetch_add(q->bad, 1000000);
	}
	return NULL;   /* at once, requests still in flight */
}

START_TEST(test_submitter_exits)
{
	struct zuring u;
	atomic_int done = 0, bad = 0, canceled = 0;
	int fd = tmpfile_fd("exits");
	struct exthread x[NTHREADS];
	pthread_t th[NTHREADS];

	ck_assert_int_eq(zuring_init(&u, 8), 0);
	for (int t = 0; t < NTHREADS; t++) {
		x[t].u = &u;
		x[t].fd = fd;
		x[t].t = t;
		x[t].reqs = calloc(PER_THREAD, sizeof(*x[t].reqs));
		x[t].data = malloc((size_t)PER_THREAD * CHUNK);
		tu_fill(x[t].data, (size_t)PER_THREAD * CHUNK, 50 + (uint64_t)t);
		for (int i = 0; i < PER_THREAD; i++) {
			x[t].reqs[i].r.cb = exreq_cb;
			x[t].reqs[i].done = &done;
			x[t].reqs[i].bad = &bad;
			x[t].reqs[i].canceled = &canceled;
		}
	}
	for (int round = 0; round < 5; round++) {
		atomic_store(&done, 0);
		for (int t = 0; t < NTHREADS; t++)
			ck_assert_int_eq(pthread_create(&th[t], NULL, exit_at_once, &x[t]), 0);
		for (int t = 0; t < NTHREADS; t++)
			pthread_join(th[t], NULL);
		for (int ms = 0; ms < 20000 && atomic_load(&done) < NTHREADS * PER_THREAD; ms++)
			usleep(1000);
		ck_assert_int_eq(atomic_load(&done), NTHREADS * PER_THREAD);
	}
	ck_assert_int_eq(atomic_load(&bad), 0);
	ck_assert_msg(atomic_load(&canceled) == 0,
		      "%d writes failed with ECANCELED because their submitting thread exited",
		      atomic_load(&canceled));
	zuring_fini(&u);
	char buf[CHUNK];
	for (int t = 0; t < NTHREADS; t++) {
		for (int i = 0; i < PER_THREAD; i++) {
			ck_assert_int_eq(pread(fd, buf, CHUNK, ((off_t)t * PER_THREAD + i) * CHUNK), CHUNK);
			ck_assert_mem_eq(buf, x[t].data + (size_t)i * CHUNK, CHUNK);
		}
		free(x[t].reqs);
		free(x[t].data);
	}
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("uring");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_rw_fsync);
	tcase_add_test(tc, test_post);
	tcase_add_test(tc, test_post_from_callback);
	tcase_add_test(tc, test_concurrent_submitters);
	tcase_add_test(tc, test_submitter_exits);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
