/*
 * uring.h - one io_uring with a completion thread, shared by the image and
 * block-device backends.
 *
 * Submission may come from any thread (a mutex guards the SQ).  The
 * completion thread blocks in io_uring_wait_cqe, so an idle device costs
 * no CPU, and runs each request's callback with the CQE result (bytes or
 * -errno).  Callbacks may submit more requests.
 */
#ifndef ZLFS_URING_H
#define ZLFS_URING_H

#include <liburing.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

struct zuring_req {
	void (*cb)(struct zuring_req *r, int res);
};

struct zuring {
	struct io_uring ring;
	pthread_mutex_t sq_lock;
	pthread_t th;
	bool running;
};

int zuring_init(struct zuring *u, unsigned entries);
void zuring_fini(struct zuring *u);
int zuring_readv(struct zuring *u, int fd, const struct iovec *iov, int cnt, uint64_t off,
		 struct zuring_req *r);
int zuring_writev(struct zuring *u, int fd, const struct iovec *iov, int cnt, uint64_t off,
		  struct zuring_req *r);
int zuring_fsync(struct zuring *u, int fd, struct zuring_req *r);
/* Runs r->cb(r, 0) on the completion thread (never inline). */
int zuring_post(struct zuring *u, struct zuring_req *r);

#endif
