/*
 * uring.h - one io_uring with a completion thread, shared by the image and
 * block-device backends.
 *
 * Requests may be made from any thread, but only the ring's own thread
 * submits them to the kernel: io_uring cancels (ECANCELED) requests still
 * queued in its workers when the task that submitted them exits, and the
 * threads that call us (FUSE workers, test threads) come and go.  A caller
 * queues its request and, if the ring thread is not already due to look,
 * wakes it with a NOP (which completes inline and cannot be cancelled).
 * The ring thread blocks in io_uring_wait_cqe, so an idle device costs no
 * CPU, and runs each request's callback with the CQE result (bytes or
 * -errno).  Callbacks may make more requests.
 */
#ifndef ZLFS_URING_H
#define ZLFS_URING_H

#include <liburing.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

struct zuring_req {
	void (*cb)(struct zuring_req *r, int res);
	/* private */
	struct zuring_req *qnext;
	uint8_t op;
	int fd;
	const struct iovec *iov;
	int cnt;
	uint32_t len;                  /* sync_range */
	unsigned flags;                /* sync_range: SYNC_FILE_RANGE_* */
	uint64_t off;
};

struct zuring {
	struct io_uring ring;
	pthread_mutex_t sq_lock;       /* the SQ ring */
	pthread_mutex_t q_lock;        /* the request queue below */
	struct zuring_req *q_head, *q_tail;
	bool wake_pending;
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
/* sync_file_range(2) of [off, off+len) with flags (SYNC_FILE_RANGE_*). */
int zuring_sync_range(struct zuring *u, int fd, uint64_t off, uint32_t len, unsigned flags,
		      struct zuring_req *r);
/* Runs r->cb(r, 0) on the completion thread (never inline). */
int zuring_post(struct zuring *u, struct zuring_req *r);

#endif
