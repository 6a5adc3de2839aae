/*
 * uring.c - io_uring submission and the ring thread (see uring.h).
 *
 * A NOP whose user_data is NULL tells the completion thread to stop.  A NOP
 * may complete before earlier reads and writes, so the owner must have
 * seen every request complete before it calls zuring_fini.
 * zuring_post is a NOP too: the callback gets res 0 and the owner keeps
 * the real result in its own request.
 */
#include <errno.h>
#include <string.h>

#include "uring.h"

enum { Q_READV = 1, Q_WRITEV, Q_FSYNC, Q_SYNC_RANGE };

/* user_data of the NOP that tells the ring thread to look at the queue */
static struct zuring_req wake_marker;

static struct io_uring_sqe *get_sqe(struct zuring *u);
static int submit_locked(struct zuring *u);

/* Ring thread: put the queued requests into the SQ and submit them. */
static void drain_queue(struct zuring *u)
{
	struct zuring_req *r;

	pthread_mutex_lock(&u->q_lock);
	r = u->q_head;
	u->q_head = u->q_tail = NULL;
	u->wake_pending = false;
	pthread_mutex_unlock(&u->q_lock);
	if (!r)
		return;
	pthread_mutex_lock(&u->sq_lock);
	for (struct zuring_req *next; r; r = next) {
		next = r->qnext;
		struct io_uring_sqe *sqe = get_sqe(u);
		if (!sqe) {
			pthread_mutex_unlock(&u->sq_lock);
			r->cb(r, -EBUSY);
			pthread_mutex_lock(&u->sq_lock);
			continue;
		}
		if (r->op == Q_READV)
			io_uring_prep_readv(sqe, r->fd, r->iov, (unsigned)r->cnt, r->off);
		else if (r->op == Q_WRITEV)
			io_uring_prep_writev(sqe, r->fd, r->iov, (unsigned)r->cnt, r->off);
		else if (r->op == Q_SYNC_RANGE)
			io_uring_prep_sync_file_range(sqe, r->fd, r->len, r->off, (int)r->flags);
		else
			io_uring_prep_fsync(sqe, r->fd, IORING_FSYNC_DATASYNC);
		io_uring_sqe_set_data(sqe, r);
	}
	submit_locked(u);
	pthread_mutex_unlock(&u->sq_lock);
}

static void *completer(void *arg)
{
	struct zuring *u = arg;

	for (;;) {
		struct io_uring_cqe *cqe;
		int ret = io_uring_wait_cqe(&u->ring, &cqe);
		if (ret == -EINTR || ret == -EAGAIN)
			continue;
		if (ret < 0)
			break;
		struct zuring_req *r = io_uring_cqe_get_data(cqe);
		int res = cqe->res;
		io_uring_cqe_seen(&u->ring, cqe);
		if (!r)
			break;
		if (r == &wake_marker) {
			drain_queue(u);
			continue;
		}
		r->cb(r, res);
	}
	return NULL;
}

int zuring_init(struct zuring *u, unsigned entries)
{
	int ret;

	memset(u, 0, sizeof(*u));
	ret = io_uring_queue_init(entries, &u->ring, 0);
	if (ret < 0)
		return ret;
	pthread_mutex_init(&u->sq_lock, NULL);
	pthread_mutex_init(&u->q_lock, NULL);
	if (pthread_create(&u->th, NULL, completer, u)) {
		io_uring_queue_exit(&u->ring);
		return -EAGAIN;
	}
	u->running = true;
	return 0;
}

/* Get an SQE, submitting to make room if the SQ is full. Caller holds sq_lock. */
static struct io_uring_sqe *get_sqe(struct zuring *u)
{
	struct io_uring_sqe *sqe;

	while (!(sqe = io_uring_get_sqe(&u->ring))) {
		int ret = io_uring_submit(&u->ring);
		if (ret < 0 && ret != -EAGAIN && ret != -EBUSY && ret != -EINTR)
			return NULL;
	}
	return sqe;
}

static int submit_locked(struct zuring *u)
{
	int ret;

	do {
		ret = io_uring_submit(&u->ring);
	} while (ret == -EINTR || ret == -EAGAIN || ret == -EBUSY);
	return ret < 0 ? ret : 0;
}

/* Queue r for the ring thread; wake it unless a wake is already on its way. */
static int enqueue(struct zuring *u, struct zuring_req *r)
{
	bool wake;

	r->qnext = NULL;
	pthread_mutex_lock(&u->q_lock);
	if (u->q_tail)
		u->q_tail->qnext = r;
	else
		u->q_head = r;
	u->q_tail = r;
	wake = !u->wake_pending;
	u->wake_pending = true;
	pthread_mutex_unlock(&u->q_lock);
	if (!wake)
		return 0;
	pthread_mutex_lock(&u->sq_lock);
	struct io_uring_sqe *sqe = get_sqe(u);
	int ret = -EBUSY;
	if (sqe) {
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, &wake_marker);
		ret = submit_locked(u);
	}
	pthread_mutex_unlock(&u->sq_lock);
	return ret;
}

int zuring_readv(struct zuring *u, int fd, const struct iovec *iov, int cnt, uint64_t off,
		 struct zuring_req *r)
{
	r->op = Q_READV;
	r->fd = fd;
	r->iov = iov;
	r->cnt = cnt;
	r->off = off;
	return enqueue(u, r);
}

int zuring_writev(struct zuring *u, int fd, const struct iovec *iov, int cnt, uint64_t off,
		  struct zuring_req *r)
{
	r->op = Q_WRITEV;
	r->fd = fd;
	r->iov = iov;
	r->cnt = cnt;
	r->off = off;
	return enqueue(u, r);
}

int zuring_fsync(struct zuring *u, int fd, struct zuring_req *r)
{
	r->op = Q_FSYNC;
	r->fd = fd;
	return enqueue(u, r);
}

int zuring_sync_range(struct zuring *u, int fd, uint64_t off, uint32_t len, unsigned flags,
		      struct zuring_req *r)
{
	r->op = Q_SYNC_RANGE;
	r->fd = fd;
	r->off = off;
	r->len = len;
	r->flags = flags;
	return enqueue(u, r);
}

int zuring_post(struct zuring *u, struct zuring_req *r)
{
	pthread_mutex_lock(&u->sq_lock);
	struct io_uring_sqe *sqe = get_sqe(u);
	if (!sqe) {
		pthread_mutex_unlock(&u->sq_lock);
		return -EBUSY;
	}
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data(sqe, r);
	int ret = submit_locked(u);
	pthread_mutex_unlock(&u->sq_lock);
	return ret;
}

void zuring_fini(struct zuring *u)
{
	if (!u->running)
		return;
	pthread_mutex_lock(&u->sq_lock);
	struct io_uring_sqe *sqe = get_sqe(u);
	if (sqe) {
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, NULL);
		submit_locked(u);
	}
	pthread_mutex_unlock(&u->sq_lock);
	pthread_join(u->th, NULL);
	io_uring_queue_exit(&u->ring);
	pthread_mutex_destroy(&u->sq_lock);
	pthread_mutex_destroy(&u->q_lock);
	u->running = false;
}
