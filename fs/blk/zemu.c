/*
 * zemu.c - the emulated zoned device (mem: and image backends).
 *
 * Life of a command: submit -> (service model queue, if any) -> exec ->
 * data transfer -> done().  exec is the moment the device "executes" the
 * command: the zone rules are checked and the write pointer advanced there
 * (zrules.c), never at submit, so commands reordered in the service model
 * meet the rules in their new order.
 *
 * Stores:
 *   mem    an anonymous mapping; data moves at exec.
 *   image  the image file through io_uring; executed writes of a zone wait
 *          on its pend list until their data has landed, and only then is
 *          the zone's persisted write pointer (IMAGE.zst) advanced over
 *          them, so a killed process never leaves a write pointer ahead of
 *          its data.  In power-cut mode image writes are done at exec
 *          (pwrite) so that every write can be undone exactly.
 *          Write-behind: once a sequential zone has WB_CHUNK landed in the
 *          host's page cache (or is full), the host is told to start
 *          writing it back (sync_file_range WRITE, asynchronous, one at a
 *          time), as a device drains its write cache while it takes more
 *          writes; a flush then finds little left to write.  Durability
 *          is still only what a flush (fdatasync) covers.  Spec option
 *          writebehind=0 turns it off.
 *          Short path: without a service model, writes and flushes run
 *          on the submitter's thread (inline_ok); shortpath=0 sends
 *          everything through io_uring.
 *
 * Power cut: once armed, each sequential zone remembers the write pointer
 * of the last completed flush and each conventional zone keeps undo
 * records of its unflushed writes.  The cut keeps a random prefix of every
 * zone's unflushed writes and fails everything afterwards with EIO.
 */
#include <assert.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zemu.h"

/* Per-command context for image I/O and for results posted through the ring. */
struct zio {
	struct zuring_req req;
	struct zemu *z;
	struct zlfs_cmd *cmd;
	uint64_t t0;               /* a flush: when it was handed on */
	int nzero;
	struct { uint64_t off, len; } zero[];  /* read: ranges past a wp, from cmd->off */
};

static void finish_cmd(struct zemu *z, struct zlfs_cmd *cmd);

/* ---- data movement ------------------------------------------------------- */

static void mem_copy_in(struct zemu *z, uint64_t pos, const struct iovec *iov, int cnt)
{
	for (int i = 0; i < cnt; i++) {
		memcpy(z->mem + pos, iov[i].iov_base, iov[i].iov_len);
		pos += iov[i].iov_len;
	}
}

/* Copy device bytes [off, off+len) into the command's iov at byte skip. */
static void iov_fill(const struct iovec *iov, int cnt, uint64_t skip, const uint8_t *src,
		     uint64_t len)
{
	for (int i = 0; i < cnt && len; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		uint64_t n = iov[i].iov_len - skip;
		if (n > len)
			n = len;
		if (src) {
			memcpy((uint8_t *)iov[i].iov_base + skip, src, n);
			src += n;
		} else {
			memset((uint8_t *)iov[i].iov_base + skip, 0, n);
		}
		len -= n;
		skip = 0;
	}
}

struct read_ctx {
	struct zemu *z;
	struct zlfs_cmd *cmd;
	struct zio *io;     /* image: zero ranges collected here */
	int cap;
};

static void read_seg(void *arg, uint64_t off, uint64_t len, bool valid)
{
	struct read_ctx *rc = arg;
	struct zlfs_cmd *cmd = rc->cmd;

	if (!rc->z->image) {
		iov_fill(cmd->iov, cmd->iovcnt, off - cmd->off, valid ? rc->z->mem + off : NULL, len);
		return;
	}
	if (!valid && rc->io->nzero < rc->cap) {
		rc->io->zero[rc->io->nzero].off = off - cmd->off;
		rc->io->zero[rc->io->nzero].len = len;
		rc->io->nzero++;
	}
}

/* Read the old bytes of [off, off+len) for an undo record. */
static struct zundo *undo_capture(struct zemu *z, uint64_t off, uint64_t len)
{
	struct zundo *u = malloc(sizeof(*u) + len);

	if (!u)
		return NULL;
	u->off = off;
	u->len = len;
	if (!z->image)
		memcpy(u->data, z->mem + off, len);
	else if (pread(z->fd, u->data, len, (off_t)off) != (ssize_t)len)
		memset(u->data, 0, len);
	return u;
}

static void discard_zone(void *arg, uint32_t zone)
{
	struct zemu *z = arg;
	struct zlfs_zone *zn = &z->zones[zone];

	if (!z->image) {
		uint8_t *p = z->mem + zn->start;
		if (zn->start % 4096 == 0 && zn->len % 4096 == 0)
			madvise(p, zn->len, MADV_DONTNEED);  /* private anon: reads zeros again */
		else
			memset(p, 0, zn->len);
	} else {
		z->zx[zone].persist_wp = zn->start;
		z->zx[zone].wb_wp = zn->start;
		zimg_persist_zone(z, zone);
		/* reads past the write pointer are zeros whatever the file holds */
		if (!z->thick)
			zimg_discard(z, zn->start, zn->len);
	}
	z->zx[zone].flushed_wp = zn->start;
}

/* ---- power cut ----------------------------------------------------------- */

static void undo_free(struct zemu_zone *x)
{
	while (x->undo) {
		struct zundo *u = x->undo;
		x->undo = u->next;
		free(u);
	}
	x->nundo = 0;
}

/* Everything executed so far is durable. Caller holds z->lock. */
static void pc_flushed(struct zemu *z)
{
	for (uint32_t i = 0; i < z->r.nr; i++) {
		z->zx[i].flushed_wp = z->zones[i].wp;
		undo_free(&z->zx[i]);
	}
}

/* Cut power now. Caller holds z->lock. */
static void pc_cut_conv(struct zemu *z, uint32_t i)
{
	struct zemu_zone *x = &z->zx[i];
	/* keep the oldest k unflushed writes, undo the newer ones */
	uint32_t keep = (uint32_t)(zrand_next(&z->pc_rng) % (x->nundo + 1));
	uint32_t drop = x->nundo - keep;

	for (struct zundo *u = x->undo; u && drop; u = u->next, drop--) {
		if (!z->image)
			memcpy(z->mem + u->off, u->data, u->len);
		else if (pwrite(z->fd, u->data, u->len, (off_t)u->off) < 0)
			perror("zlfs: power cut undo");
	}
	undo_free(x);
}

/*
 * Sequential zone i keeps a random block prefix of its unflushed writes.
 * A full zone may only fall back to CLOSED if an active slot is free
 * (*active counts them); otherwise it keeps everything, still a prefix.
 */
static void pc_cut_seq(struct zemu *z, uint32_t i, uint32_t *active)
{
	struct zlfs_zone *zn = &z->zones[i];
	struct zemu_zone *x = &z->zx[i];
	uint32_t max_active = z->r.max_active;

	if (zn->cond == ZLFS_ZC_OFFLINE || zn->cond == ZLFS_ZC_RDONLY)
		return;
	bool was_full = zn->cond == ZLFS_ZC_FULL;
	if (zn->wp > x->flushed_wp) {
		uint64_t blocks = (zn->wp - x->flushed_wp) / z->base.geom.lbs;
		uint64_t keep = zrand_next(&z->pc_rng) % (blocks + 1);
		uint64_t nwp = x->flushed_wp + keep * z->base.geom.lbs;
		if (was_full && nwp > zn->start && max_active && *active >= max_active)
			nwp = zn->wp;
		uint64_t lost = zn->wp - nwp;
		if (lost) {
			if (!z->image)
				memset(z->mem + nwp, 0, lost);
			zn->wp = nwp;
			if (z->image) {
				x->persist_wp = nwp;
				if (x->wb_wp > nwp)
					x->wb_wp = nwp;
				zimg_persist_zone(z, i);
				zimg_discard(z, nwp, lost);
			}
		}
	}
	/* a write pointer that moved back leaves FULL / open states */
	if (zn->wp == zn->start)
		zn->cond = ZLFS_ZC_EMPTY;
	else if (zn->wp < zn->start + zn->cap)
		zn->cond = ZLFS_ZC_CLOSED;
	else
		zn->cond = ZLFS_ZC_FULL;
	*active += zn->cond == ZLFS_ZC_CLOSED;
}

/* Cut power now. Caller holds z->lock. */
static void pc_cut(struct zemu *z)
{
	uint32_t active = 0;

	if (z->dead)
		return;
	for (uint32_t i = 0; i < z->r.nr; i++)
		z->zx[i].pc_full = z->zones[i].cond == ZLFS_ZC_FULL;
	/* zones active before the cut first: they never add to the count;
	 * then the full ones, which may fall back to CLOSED only with room */
	for (uint32_t i = 0; i < z->r.nr; i++) {
		uint8_t c = z->zones[i].cond;
		if (z->zones[i].type == ZLFS_ZONE_CONV)
			pc_cut_conv(z, i);
		else if (c == ZLFS_ZC_IMP_OPEN || c == ZLFS_ZC_EXP_OPEN || c == ZLFS_ZC_CLOSED)
			pc_cut_seq(z, i, &active);
	}
	for (uint32_t i = z->r.nr_conv; i < z->r.nr; i++) {
		/* a zone handled above is now EMPTY, CLOSED or FULL at its flushed
		 * point or later; only zones that were full before the cut remain */
		if (z->zones[i].cond == ZLFS_ZC_FULL && z->zx[i].pc_full)
			pc_cut_seq(z, i, &active);
	}
	zrules_power_cycle(&z->r);
	assert(zrules_check(&z->r) == 0);
	z->dead = true;
	z->pc_armed = false;
	if (z->image)
		zimg_sync(z);
}

/* ---- execution ----------------------------------------------------------- */

/* Deliver a command whose result is set, never on the submitter's stack. */
static void zio_posted(struct zuring_req *r, int res)
{
	struct zio *io = (struct zio *)r;
	(void)res;
	finish_cmd(io->z, io->cmd);
	free(io);
}

static void complete_later(struct zemu *z, struct zlfs_cmd *cmd)
{
	if (!z->svc) {
		struct zio *io = calloc(1, sizeof(*io));
		if (io) {
			io->z = z;
			io->cmd = cmd;
			io->req.cb = zio_posted;
			if (!zuring_post(&z->ur, &io->req))
				return;
			free(io);
		}
	}
	/* on a service-model worker (or if posting failed) completing here is safe */
	finish_cmd(z, cmd);
}

static void finish_cmd(struct zemu *z, struct zlfs_cmd *cmd)
{
	pthread_mutex_lock(&z->lock);
	if (cmd->result == -ZLFS_EUNALIGNED)
		z->stats.unaligned++;
	z->inflight--;
	if (!z->inflight)
		pthread_cond_broadcast(&z->cv);
	pthread_mutex_unlock(&z->lock);
	cmd->done(cmd);
}

/*
 * Image: advance the zone's persisted wp over writes whose data landed, in
 * wp order.  Returns them (chained through dnext) for the caller to finish
 * once the lock is dropped: a write is finished only when it leaves the
 * list, so its owner never frees a command the list still links.
 */
static struct zlfs_cmd *advance_persist(struct zemu *z, uint32_t zone)
{
	struct zemu_zone *x = &z->zx[zone];
	struct zlfs_cmd *done = NULL, **tail = &done;
	bool moved = false;

	while (x->pend_head && x->pend_head->data_done) {
		struct zlfs_cmd *c = x->pend_head;
		x->pend_head = c->dnext;
		if (!x->pend_head)
			x->pend_tail = NULL;
		if (c->result == 0) {
			x->persist_wp = c->pos + c->len;
			moved = true;
		}
		c->dnext = NULL;
		*tail = c;
		tail = &c->dnext;
	}
	if (moved)
		zimg_persist_zone(z, zone);
	return done;
}

/* Write-behind: start the host's write-back this far ahead of a flush. */
#define WB_CHUNK (8u << 20)

static void wb_done(struct zuring_req *r, int res)
{
	struct zemu *z = (struct zemu *)((char *)r - offsetof(struct zemu, wb_req));

	(void)res;   /* an error shows again at the next flush's fdatasync */
	pthread_mutex_lock(&z->lock);
	z->wb_busy = false;
	if (!--z->inflight)
		pthread_cond_broadcast(&z->cv);
	pthread_mutex_unlock(&z->lock);
}

/*
 * Should zone's landed data be written back now?  Then *off, *len say
 * what, and the caller calls wb_start once z->lock is dropped.  Caller
 * holds z->lock.
 */
static bool wb_due(struct zemu *z, uint32_t zone, uint64_t *off, uint32_t *len)
{
	struct zemu_zone *x = &z->zx[zone];
	const struct zlfs_zone *zn = &z->zones[zone];

	if (!z->wb_on || z->wb_busy || z->pc_armed || x->persist_wp <= x->wb_wp)
		return false;
	if (x->persist_wp - x->wb_wp < WB_CHUNK && x->persist_wp < zn->start + zn->cap)
		return false;
	*off = x->wb_wp;
	*len = x->persist_wp - x->wb_wp > UINT32_MAX ? UINT32_MAX / z->base.geom.lbs * z->base.geom.lbs
						     : (uint32_t)(x->persist_wp - x->wb_wp);
	x->wb_wp += *len;
	z->wb_busy = true;
	z->inflight++;
	z->stats.writebehinds++;
	return true;
}

static void wb_start(struct zemu *z, uint64_t off, uint32_t len)
{
	z->wb_req.cb = wb_done;
	if (zuring_sync_range(&z->ur, z->fd, off, len, SYNC_FILE_RANGE_WRITE, &z->wb_req))
		wb_done(&z->wb_req, 0);
}

static void zio_done(struct zuring_req *r, int res)
{
	struct zio *io = (struct zio *)r;
	struct zemu *z = io->z;
	struct zlfs_cmd *cmd = io->cmd;

	if (cmd->op == ZLFS_OP_FLUSH) {
		if (res >= 0)   /* the image's fdatasync is done: now the zone state */
			res = zimg_sync_state(z);
		cmd->result = res < 0 ? res : 0;
		uint64_t t = zlfs_now_ns() - io->t0;
		pthread_mutex_lock(&z->lock);
		z->stats.host_sync_ns += t;
		pthread_mutex_unlock(&z->lock);
	} else if (res < 0 || (uint64_t)res != cmd->len) {
		cmd->result = res < 0 ? res : -EIO;
	} else if (cmd->op == ZLFS_OP_READ) {
		for (int i = 0; i < io->nzero; i++)
			iov_fill(cmd->iov, cmd->iovcnt, io->zero[i].off, NULL, io->zero[i].len);
	}
	if (cmd->op == ZLFS_OP_WRITE || cmd->op == ZLFS_OP_APPEND) {
		uint32_t zone = (uint32_t)(cmd->pos / z->base.geom.zone_size);
		pthread_mutex_lock(&z->lock);
		if (z->zones[zone].type != ZLFS_ZONE_CONV) {
			if (cmd->result) {
				/* the data did not land: the zone can't be trusted past here */
				zrules_set_cond(&z->r, zone, ZLFS_ZC_RDONLY);
				zimg_persist_zone(z, zone);
			}
			cmd->data_done = true;
			struct zlfs_cmd *done = advance_persist(z, zone);
			uint64_t wb_off;
			uint32_t wb_len;
			bool wb = wb_due(z, zone, &wb_off, &wb_len);
			pthread_mutex_unlock(&z->lock);
			if (wb)
				wb_start(z, wb_off, wb_len);
			free(io);
			while (done) {
				struct zlfs_cmd *next = done->dnext;
				finish_cmd(z, done);
				done = next;
			}
			return;
		}
		pthread_mutex_unlock(&z->lock);
	}
	free(io);
	finish_cmd(z, cmd);
}

/* Returns true if an injected fault hits this command. Caller holds lock. */
static bool fault_hit(struct zemu *z, enum zlfs_fault_kind k)
{
	if (!z->fault_nth[k])
		return false;
	z->fault_count[k]++;
	if (z->fault_count[k] == z->fault_nth[k] ||
	    (z->fault_pers[k] && z->fault_count[k] > z->fault_nth[k])) {
		z->stats.injected++;
		if (!z->fault_pers[k])
			z->fault_nth[k] = 0;
		return true;
	}
	return false;
}

/*
 * On a service-model worker, transfers up to this size move with a plain
 * preadv/pwritev instead of a round trip through the ring thread: a small
 * copy into the page cache costs a few microseconds, the two thread
 * wake-ups it replaces cost more, and the worker is the "device" anyway.
 * Bigger transfers stay on io_uring so that they overlap.
 */
#define SYNC_XFER_MAX (64u << 10)

/*
 * The short path, without a service model: writes and flushes are done on
 * the submitter's own thread and completed there, so a write the caller
 * waits for costs a pwritev, not hand-offs to the ring thread, to
 * io_uring's worker and back (a flush: the fdatasync the caller would wait
 * for anyway).  Large writes too: the copy into the host's page cache is
 * the same work on either thread, and io_uring's workers writing one file
 * at once only spin on its inode lock (a 1 GiB sequential write went
 * 1.1-1.25x faster here).  Never on the ring thread (it would stall every
 * other completion behind a host sync), and never nested: a completion
 * that submits the next queued command sends it through the ring, so a
 * queue never becomes a deep recursion.  Reads stay on io_uring: several
 * runs of one request go to the disk together (measured: no faster
 * inline).
 */
static __thread int inline_depth;

static bool inline_ok(struct zemu *z, const struct zlfs_cmd *cmd)
{
	if (!z->inline_on || z->svc || inline_depth || (z->have_ur && pthread_equal(pthread_self(), z->ur.th)))
		return false;
	return cmd->op == ZLFS_OP_FLUSH || cmd->op == ZLFS_OP_WRITE || cmd->op == ZLFS_OP_APPEND;
}

static void exec_cmd(void *arg, struct zlfs_cmd *cmd)
{
	struct zemu *z = arg;
	struct zio *io = NULL;
	int ret = 0;

	pthread_mutex_lock(&z->lock);
	z->stats.cmds++;
	if (z->dead) {
		ret = -EIO;
		goto out_now;
	}
	switch (cmd->op) {
	case ZLFS_OP_READ: {
		z->stats.reads++;
		if (fault_hit(z, ZLFS_FAULT_READ)) {
			ret = -EIO;
			break;
		}
		struct read_ctx rc = { z, cmd, NULL, 0 };
		if (z->image) {
			rc.cap = (int)(cmd->len / z->base.geom.zone_size) + 2;
			io = calloc(1, sizeof(*io) + (size_t)rc.cap * sizeof(io->zero[0]));
			if (!io) {
				ret = -ENOMEM;
				break;
			}
			rc.io = io;
		}
		ret = zrules_read(&z->r, cmd->off, cmd->len, read_seg, &rc);
		break;
	}
	case ZLFS_OP_WRITE:
	case ZLFS_OP_APPEND: {
		z->stats.writes++;
		if (z->pc_armed && z->pc_after && ++z->pc_writes >= z->pc_after) {
			pc_cut(z);
			ret = -EIO;
			break;
		}
		if (fault_hit(z, ZLFS_FAULT_WRITE)) {
			ret = -EIO;
			break;
		}
		uint64_t zs = z->base.geom.zone_size;
		uint32_t zone = (uint32_t)(cmd->off / zs);
		bool conv = z->zones[zone].type == ZLFS_ZONE_CONV;
		/* power cut: one undo record per conventional zone the write touches,
		 * so each zone can keep its own prefix */
		struct zundo *undo[2] = { NULL, NULL };
		uint32_t nundo = 0, last = (uint32_t)((cmd->off + cmd->len - 1) / zs);
		if (z->pc_armed && conv && cmd->op == ZLFS_OP_WRITE && last < zone + 2) {
			for (uint32_t j = zone; j <= last; j++) {
				uint64_t a = j == zone ? cmd->off : (uint64_t)j * zs;
				uint64_t e = (uint64_t)(j + 1) * zs < cmd->off + cmd->len ?
					     (uint64_t)(j + 1) * zs : cmd->off + cmd->len;
				if (!(undo[nundo++] = undo_capture(z, a, e - a)))
					ret = -ENOMEM;
			}
		} else if (z->pc_armed && conv && cmd->op == ZLFS_OP_WRITE) {
			ret = -EINVAL;   /* power-cut mode: at most two conventional zones per write */
		}
		if (!ret)
			ret = zrules_write(&z->r, cmd->off, cmd->len, cmd->op == ZLFS_OP_APPEND,
					   &cmd->pos);
		if (ret) {
			free(undo[0]);
			free(undo[1]);
			break;
		}
		for (uint32_t k = 0; k < nundo; k++) {
			struct zemu_zone *ux = &z->zx[undo[k]->off / zs];
			undo[k]->next = ux->undo;
			ux->undo = undo[k];
			ux->nundo++;
		}
		if (!z->image) {
			mem_copy_in(z, cmd->pos, cmd->iov, cmd->iovcnt);
		} else if (z->pc_armed) {
			ssize_t n = pwritev(z->fd, cmd->iov, cmd->iovcnt, (off_t)cmd->pos);
			if (n != (ssize_t)cmd->len)
				ret = -EIO;
			else if (!conv) {
				z->zx[zone].persist_wp = cmd->pos + cmd->len;
				zimg_persist_zone(z, zone);
			}
		} else {
			io = calloc(1, sizeof(*io));
			if (!io) {
				ret = -ENOMEM;  /* wp moved: the zone is now damaged */
				zrules_set_cond(&z->r, zone, ZLFS_ZC_RDONLY);
				break;
			}
			if (!conv) {
				cmd->data_done = false;
				cmd->dnext = NULL;
				if (z->zx[zone].pend_tail)
					z->zx[zone].pend_tail->dnext = cmd;
				else
					z->zx[zone].pend_head = cmd;
				z->zx[zone].pend_tail = cmd;
			}
		}
		break;
	}
	case ZLFS_OP_FLUSH:
		z->stats.flushes++;
		if (fault_hit(z, ZLFS_FAULT_FLUSH)) {
			ret = -EIO;
			break;
		}
		if (z->pc_armed)
			pc_flushed(z);
		/* read-only: nothing was written, nothing to make durable */
		if (z->image && !z->base.geom.rdonly) {
			io = calloc(1, sizeof(*io));
			if (!io)
				ret = -ENOMEM;
		}
		break;
	default:
		ret = -EINVAL;
	}
	if (ret || !io) {
		free(io);
		goto out_now;
	}
	/* image data transfer: small ones on a service-model worker are done
	 * right here (see SYNC_XFER_MAX), the rest through io_uring */
	z->inflight++;
	bool inl = inline_ok(z, cmd);
	if (inl)
		z->stats.inline_cmds++;
	pthread_mutex_unlock(&z->lock);
	io->z = z;
	io->cmd = cmd;
	io->req.cb = zio_done;
	io->t0 = zlfs_now_ns();
	if (inl) {
		ssize_t n = cmd->op == ZLFS_OP_FLUSH ? fdatasync(z->fd) :
			    pwritev(z->fd, cmd->iov, cmd->iovcnt, (off_t)cmd->pos);
		int res = n < 0 ? -errno : (int)n;
		inline_depth++;
		zio_done(&io->req, res);
		inline_depth--;
		return;
	}
	if (z->svc && cmd->op != ZLFS_OP_FLUSH && cmd->len <= SYNC_XFER_MAX) {
		ssize_t n = cmd->op == ZLFS_OP_READ ?
				    preadv(z->fd, cmd->iov, cmd->iovcnt, (off_t)cmd->off) :
				    pwritev(z->fd, cmd->iov, cmd->iovcnt, (off_t)cmd->pos);
		zio_done(&io->req, n < 0 ? -errno : (int)n);
		return;
	}
	if (cmd->op == ZLFS_OP_FLUSH)
		ret = zuring_fsync(&z->ur, z->fd, &io->req);
	else if (cmd->op == ZLFS_OP_READ)
		ret = zuring_readv(&z->ur, z->fd, cmd->iov, cmd->iovcnt, cmd->off, &io->req);
	else
		ret = zuring_writev(&z->ur, z->fd, cmd->iov, cmd->iovcnt, cmd->pos, &io->req);
	if (ret)
		zio_done(&io->req, ret);
	return;
out_now:
	cmd->result = ret;
	z->inflight++;
	pthread_mutex_unlock(&z->lock);
	complete_later(z, cmd);
}

/* ---- backend ops ---------------------------------------------------------- */

static int zemu_submit(struct zlfs_zdev *dev, struct zlfs_cmd *cmd)
{
	struct zemu *z = (struct zemu *)dev;

	if (cmd->op == ZLFS_OP_APPEND &&
	    z->zones[cmd->off / dev->geom.zone_size].type == ZLFS_ZONE_CONV)
		return -EINVAL;
	if (z->svc)
		return svc_submit(z->svc, cmd);
	exec_cmd(z, cmd);
	return 0;
}

static int zemu_report(struct zlfs_zdev *dev, uint32_t first, struct zlfs_zone *out, uint32_t *nr)
{
	struct zemu *z = (struct zemu *)dev;

	pthread_mutex_lock(&z->lock);
	memcpy(out, &z->zones[first], *nr * sizeof(*out));
	pthread_mutex_unlock(&z->lock);
	return 0;
}

static int zemu_mgmt(struct zlfs_zdev *dev, enum zlfs_zone_mgmt op, uint32_t zone)
{
	struct zemu *z = (struct zemu *)dev;
	int ret;

	pthread_mutex_lock(&z->lock);
	if (z->dead) {
		pthread_mutex_unlock(&z->lock);
		return -EIO;
	}
	uint32_t lo = zone == ZLFS_ZONE_ALL ? z->r.nr_conv : zone;
	uint32_t hi = zone == ZLFS_ZONE_ALL ? z->r.nr : zone + 1;
	if (op == ZLFS_ZM_FINISH)
		for (uint32_t i = lo; i < hi; i++)
			z->zx[i].pc_full = z->zones[i].cond == ZLFS_ZC_FULL;
	ret = zrules_mgmt(&z->r, op, zone, discard_zone, z);
	if (op == ZLFS_ZM_FINISH) {
		/* finish is durable at once, like reset: nothing before it can be lost */
		for (uint32_t i = lo; i < hi; i++) {
			if (z->zones[i].type == ZLFS_ZONE_CONV || z->zx[i].pc_full ||
			    z->zones[i].cond != ZLFS_ZC_FULL || z->zx[i].pend_head)
				continue;
			z->zx[i].persist_wp = z->zones[i].wp;
			z->zx[i].flushed_wp = z->zones[i].wp;
			if (z->image)
				zimg_persist_zone(z, i);
		}
	}
	pthread_mutex_unlock(&z->lock);
	return ret;
}

/*
 * Discard in conventional zones: memory reads zeros again; a sparse image
 * punches the range out of its file.  A thick image keeps its blocks (its
 * point is that the host never allocates again), so there the discard
 * changes nothing, as a device that ignores discards.  Undo records of
 * unflushed writes in the range stay: a power cut may bring old bytes
 * back, as it may on a device whose discard was not yet flushed.
 */
static int zemu_discard(struct zlfs_zdev *dev, uint64_t off, uint64_t len)
{
	struct zemu *z = (struct zemu *)dev;
	int ret = 0;

	pthread_mutex_lock(&z->lock);
	if (z->dead) {
		ret = -EIO;
	} else if (!z->image) {
		uint8_t *p = z->mem + off;
		if (off % 4096 == 0 && len % 4096 == 0)
			madvise(p, len, MADV_DONTNEED);  /* private anon: reads zeros again */
		else
			memset(p, 0, len);
	} else if (!z->thick) {
		ret = zimg_discard(z, off, len);
	}
	pthread_mutex_unlock(&z->lock);
	return ret;
}

static void zemu_close(struct zlfs_zdev *dev)
{
	struct zemu *z = (struct zemu *)dev;

	svc_destroy(z->svc);
	pthread_mutex_lock(&z->lock);
	while (z->inflight)
		pthread_cond_wait(&z->cv, &z->lock);
	pthread_mutex_unlock(&z->lock);
	if (z->have_ur)
		zuring_fini(&z->ur);
	if (z->image) {
		if (!z->base.geom.rdonly)
			zimg_sync(z);
		zimg_unmap_state(z);
		if (z->fd >= 0)
			close(z->fd);
	}
	if (z->mem)
		munmap(z->mem, z->mem_len);
	for (uint32_t i = 0; z->zx && i < z->r.nr; i++)
		undo_free(&z->zx[i]);
	free(z->zx);
	free(z->zones);
	free(z->path);
	pthread_mutex_destroy(&z->lock);
	pthread_cond_destroy(&z->cv);
	free(z);
}

static int zemu_fault_arm(struct zlfs_zdev *dev, enum zlfs_fault_kind k, uint64_t nth, bool pers)
{
	struct zemu *z = (struct zemu *)dev;

	pthread_mutex_lock(&z->lock);
	z->fault_count[k] = 0;
	z->fault_nth[k] = nth;
	z->fault_pers[k] = pers;
	pthread_mutex_unlock(&z->lock);
	return 0;
}

static void zemu_fault_clear(struct zlfs_zdev *dev)
{
	struct zemu *z = (struct zemu *)dev;

	pthread_mutex_lock(&z->lock);
	memset(z->fault_nth, 0, sizeof(z->fault_nth));
	memset(z->fault_count, 0, sizeof(z->fault_count));
	pthread_mutex_unlock(&z->lock);
}

static int zemu_set_cond(struct zlfs_zdev *dev, uint32_t zone, enum zlfs_zone_cond cond)
{
	struct zemu *z = (struct zemu *)dev;
	int ret;

	pthread_mutex_lock(&z->lock);
	ret = zrules_set_cond(&z->r, zone, (uint8_t)cond);
	if (!ret && z->image)
		zimg_persist_zone(z, zone);
	pthread_mutex_unlock(&z->lock);
	return ret;
}

static int zemu_pc_arm(struct zlfs_zdev *dev, uint64_t after, uint64_t seed)
{
	struct zemu *z = (struct zemu *)dev;

	pthread_mutex_lock(&z->lock);
	if (z->image) {
		/* power-cut mode does image writes at exec: wait out the async ones */
		while (z->inflight)
			pthread_cond_wait(&z->cv, &z->lock);
	}
	if (!z->pc_armed)
		pc_flushed(z);   /* nothing before arming can be lost */
	z->pc_armed = true;
	z->pc_after = after;
	z->pc_writes = 0;
	z->pc_rng = seed ? seed : 1;
	pthread_mutex_unlock(&z->lock);
	return 0;
}

static int zemu_powercut(struct zlfs_zdev *dev)
{
	struct zemu *z = (struct zemu *)dev;

	pthread_mutex_lock(&z->lock);
	if (!z->pc_armed && !z->dead) {
		pthread_mutex_unlock(&z->lock);
		return -EINVAL;
	}
	pc_cut(z);
	pthread_mutex_unlock(&z->lock);
	return 0;
}

static int zemu_revive(struct zlfs_zdev *dev)
{
	struct zemu *z = (struct zemu *)dev;

	pthread_mutex_lock(&z->lock);
	z->dead = false;
	z->pc_armed = false;
	zrules_power_cycle(&z->r);
	for (uint32_t i = 0; i < z->r.nr; i++)
		undo_free(&z->zx[i]);
	pthread_mutex_unlock(&z->lock);
	return 0;
}

static bool zemu_is_dead(struct zlfs_zdev *dev)
{
	struct zemu *z = (struct zemu *)dev;

	pthread_mutex_lock(&z->lock);
	bool d = z->dead;
	pthread_mutex_unlock(&z->lock);
	return d;
}

static void zemu_stats(struct zlfs_zdev *dev, struct zlfs_zdev_stats *st)
{
	struct zemu *z = (struct zemu *)dev;
	struct svc_counters c = { 0, 0, 0 };

	if (z->svc)
		svc_counters(z->svc, &c);
	pthread_mutex_lock(&z->lock);
	*st = z->stats;
	pthread_mutex_unlock(&z->lock);
	st->requeues = c.requeues;
	st->hibernations = c.hibernations;
	st->reordered = c.reordered;
}

static void all_valid(void *arg, uint64_t off, uint64_t len, bool valid)
{
	(void)off;
	(void)len;
	if (!valid)
		*(bool *)arg = false;
}

/*
 * The caller reads the image file itself (zlfs_zdev_read_fd) only where a
 * command would have done nothing but preadv: no service model to delay
 * it, no read fault or power cut to act on it, and every byte data, not
 * past a write pointer (those read as zeros whatever the file holds).
 * Anything else, an offline zone included, takes the command path, which
 * gives it its own answer.
 */
static int zemu_read_fd(struct zlfs_zdev *dev, uint64_t off, uint64_t len, int *fd,
			uint64_t *pos)
{
	struct zemu *z = (struct zemu *)dev;
	bool all = true;
	int ret = -EOPNOTSUPP;

	if (!z->image || z->svc)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&z->lock);
	if (!z->dead && !z->pc_armed && !z->fault_nth[ZLFS_FAULT_READ] &&
	    !zrules_read(&z->r, off, len, all_valid, &all) && all) {
		z->stats.cmds++;
		z->stats.reads++;
		*fd = z->fd;
		*pos = off;
		ret = 0;
	}
	pthread_mutex_unlock(&z->lock);
	return ret;
}

static const struct zdev_ops zemu_ops = {
	.submit = zemu_submit,
	.report = zemu_report,
	.mgmt = zemu_mgmt,
	.close = zemu_close,
	.fault_arm = zemu_fault_arm,
	.fault_clear = zemu_fault_clear,
	.set_cond = zemu_set_cond,
	.powercut_arm = zemu_pc_arm,
	.powercut = zemu_powercut,
	.revive = zemu_revive,
	.is_dead = zemu_is_dead,
	.stats = zemu_stats,
	.discard = zemu_discard,
	.read_fd = zemu_read_fd,
};

/* ---- construction --------------------------------------------------------- */

static int check_geometry(uint64_t size, uint64_t zs, uint64_t cap, uint64_t nr_conv, uint32_t lbs)
{
	if (lbs != 512 && lbs != 4096) {
		zdev_set_errmsg("logical block size must be 512 or 4096");
		return -EINVAL;
	}
	if (!zs || (zs & (zs - 1)) || zs < lbs) {
		zdev_set_errmsg("zone size must be a power of two, at least one block");
		return -EINVAL;
	}
	if (!cap || cap > zs || cap % lbs) {
		zdev_set_errmsg("zone capacity must be a block multiple no larger than the zone size");
		return -EINVAL;
	}
	if (!size || size % zs || size / zs > UINT32_MAX - 1) {
		zdev_set_errmsg("device size must be a whole number of zones");
		return -EINVAL;
	}
	if (nr_conv > size / zs) {
		zdev_set_errmsg("more conventional zones than zones");
		return -EINVAL;
	}
	return 0;
}

/* Common options: device flag and faults armed from the spec. */
static int common_opts(struct zemu *z, struct zopts *o)
{
	uint64_t v = 1, fr = 0, fw = 0, ff = 0, pers = 0, pc = 0, pcseed = 1;
	int ret;

	if ((ret = zopts_u64(o, "nozwl", &v)) || (ret = zopts_u64(o, "fail_read", &fr)) ||
	    (ret = zopts_u64(o, "fail_write", &fw)) || (ret = zopts_u64(o, "fail_flush", &ff)) ||
	    (ret = zopts_u64(o, "fail_always", &pers)) ||
	    (ret = zopts_u64(o, "powercut_after", &pc)) ||
	    (ret = zopts_u64(o, "powercut_seed", &pcseed)))
		return ret;
	z->base.geom.no_zwl = v != 0;
	if (z->base.geom.rdonly && (pc || zopts_get(o, "powercut"))) {
		zdev_set_errmsg("powercut needs a device opened for writing");
		return -EINVAL;
	}
	if (fr)
		zemu_fault_arm(&z->base, ZLFS_FAULT_READ, fr, pers);
	if (fw)
		zemu_fault_arm(&z->base, ZLFS_FAULT_WRITE, fw, pers);
	if (ff)
		zemu_fault_arm(&z->base, ZLFS_FAULT_FLUSH, ff, pers);
	if (pc || zopts_get(o, "powercut"))
		zemu_pc_arm(&z->base, pc, pcseed);
	return 0;
}

static struct zemu *zemu_alloc(uint64_t size, uint64_t zs, uint64_t cap, uint32_t nr_conv,
			       uint32_t max_open, uint32_t max_active, uint32_t lbs)
{
	struct zemu *z = calloc(1, sizeof(*z));
	uint32_t nr = (uint32_t)(size / zs);

	if (!z)
		return NULL;
	z->fd = -1;
	z->stfd = -1;
	z->zones = calloc(nr, sizeof(*z->zones));
	z->zx = calloc(nr, sizeof(*z->zx));
	if (!z->zones || !z->zx) {
		free(z->zones);
		free(z->zx);
		free(z);
		return NULL;
	}
	for (uint32_t i = 0; i < nr; i++) {
		struct zlfs_zone *zn = &z->zones[i];
		zn->start = (uint64_t)i * zs;
		zn->len = zs;
		zn->cap = i < nr_conv ? zs : cap;
		zn->wp = zn->start;
		zn->type = i < nr_conv ? ZLFS_ZONE_CONV : ZLFS_ZONE_SWR;
		zn->cond = i < nr_conv ? ZLFS_ZC_NOT_WP : ZLFS_ZC_EMPTY;
		z->zx[i].persist_wp = zn->start;
		z->zx[i].flushed_wp = zn->start;
	}
	pthread_mutex_init(&z->lock, NULL);
	pthread_cond_init(&z->cv, NULL);
	z->base.ops = &zemu_ops;
	struct zlfs_zdev_geom *g = &z->base.geom;
	g->size = size;
	g->zone_size = zs;
	g->zone_cap = cap;
	g->nr_zones = nr;
	g->nr_conv = nr_conv;
	g->lbs = lbs;
	g->zoned = nr_conv < nr;
	zrules_init(&z->r, z->zones, nr, nr_conv, max_open, max_active);
	g->max_open = z->r.max_open;
	g->max_active = z->r.max_active;
	return z;
}

int zemu_open_mem(struct zopts *o, struct zlfs_zdev **out)
{
	uint64_t size = 1ull << 30, zs = 64ull << 20, cap = 0, conv = 0, mo = 0, ma = 0, lbs = 4096;
	struct svc_params sp = { .queues = 1, .qd = 64, .enabled = true };
	struct zemu *z;
	int ret;

	if ((ret = zopts_size(o, "size", &size)) || (ret = zopts_size(o, "zone_size", &zs)) ||
	    (ret = zopts_size(o, "zone_capacity", &cap)) ||
	    (ret = zopts_u64(o, "conv_zones", &conv)) || (ret = zopts_u64(o, "max_open", &mo)) ||
	    (ret = zopts_u64(o, "max_active", &ma)) || (ret = zopts_u64(o, "lbs", &lbs)) ||
	    (ret = svc_params_parse(o, &sp)))
		return ret;
	if (!cap)
		cap = zs;
	if ((ret = check_geometry(size, zs, cap, conv, (uint32_t)lbs)))
		return ret;
	z = zemu_alloc(size, zs, cap, (uint32_t)conv, (uint32_t)mo, (uint32_t)ma, (uint32_t)lbs);
	if (!z)
		return -ENOMEM;
	z->base.geom.kind = ZLFS_DEV_MEM;
	z->base.geom.depth = sp.queues * sp.qd;
	z->mem_len = size;
	z->mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		      -1, 0);
	if (z->mem == MAP_FAILED) {
		z->mem = NULL;
		zdev_set_errmsg("cannot map %llu bytes for mem:", (unsigned long long)size);
		ret = -ENOMEM;
		goto fail;
	}
	if ((ret = common_opts(z, o)) || (ret = zopts_check_unused(o)))
		goto fail;
	if ((ret = svc_create(&sp, exec_cmd, z, &z->svc)))
		goto fail;
	*out = &z->base;
	return 0;
fail:
	zemu_close(&z->base);
	return ret;
}

/*
 * Hold the image: for this process alone, or read-only shared with other
 * read-only openers (a read-write opener's exclusive lock keeps them out,
 * and theirs keep it out).  flock needs no write access to the file.
 */
static int lock_image(int fd, const char *path, bool ro)
{
	if (flock(fd, (ro ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		int ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		zdev_set_errmsg("%s: in use by another process%s", path,
				ro ? " that writes to it" : "");
		return ret;
	}
	return 0;
}

/*
 * Open the image file.  Read-only: O_NOATIME too where we may (the owner,
 * or CAP_FOWNER), so that looking at an image does not even change its
 * access time; without that right, plainly.
 */
static int open_image_file(const char *path, bool ro)
{
	if (!ro)
		return open(path, O_RDWR | O_CLOEXEC);
	int fd = open(path, O_RDONLY | O_NOATIME | O_CLOEXEC);
	if (fd < 0 && errno == EPERM)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd;
}

/*
 * A regular file with no zone state: a device without zones, presented as
 * conventional zones of 2 MiB (what mkfs.f2fs images are), doubled while
 * there would be more than ZEMU_PLAIN_ZONES of them.  Every zone costs a
 * record here (and mkfs.zlfs makes a section per zone), so a 15 TiB file
 * of 2 MiB zones cost 7.86 million records; it gets 256 MiB zones.  A
 * size that is not a multiple of the larger zone keeps the smaller, so a
 * volume made before still finds every block.  The zone_size option
 * overrides.
 */
#define ZEMU_PLAIN_ZONES 65536u
static int open_plain_file(const char *path, struct zopts *o, struct svc_params *sp, bool ro,
			   struct zlfs_zdev **out)
{
	uint64_t zs = 0, lbs = 4096, inl = 1;
	struct zemu *z;
	struct stat st;
	int fd, ret;

	if ((ret = zopts_size(o, "zone_size", &zs)) || (ret = zopts_u64(o, "lbs", &lbs)) ||
	    (ret = zopts_u64(o, "shortpath", &inl)))
		return ret;
	fd = open_image_file(path, ro);
	if (fd < 0) {
		ret = -errno;
		zdev_set_errmsg("%s: %s", path, strerror(errno));
		return ret;
	}
	if ((ret = lock_image(fd, path, ro)) || fstat(fd, &st) < 0) {
		close(fd);
		return ret ? ret : -errno;
	}
	bool zs_auto = !zopts_get(o, "zone_size");
	if (!zs_auto && !zs) {
		zdev_set_errmsg("%s: zone_size must be a power of two", path);
		close(fd);
		return -EINVAL;
	}
	if (zs_auto) {
		/* only while the device keeps every byte 2 MiB zones give it */
		uint64_t whole = (uint64_t)st.st_size / (2ull << 20) * (2ull << 20);
		for (zs = 2ull << 20; whole / zs > ZEMU_PLAIN_ZONES && !(whole % (zs << 1)); zs <<= 1)
			;
	}
	uint64_t size = (uint64_t)st.st_size / zs * zs;
	if ((ret = check_geometry(size, zs, zs, size / zs, (uint32_t)lbs))) {
		close(fd);
		return ret;
	}
	z = zemu_alloc(size, zs, zs, (uint32_t)(size / zs), 0, 0, (uint32_t)lbs);
	if (!z) {
		close(fd);
		return -ENOMEM;
	}
	z->image = true;
	z->inline_on = inl != 0;
	z->fd = fd;
	z->base.geom.kind = ZLFS_DEV_IMAGE;
	z->base.geom.rdonly = ro;
	z->base.geom.zs_auto = zs_auto;
	z->base.geom.depth = sp->enabled ? sp->queues * sp->qd : sp->qd;
	z->path = strdup(path);
	if (!z->path || (ret = zuring_init(&z->ur, 2 * z->base.geom.depth + 16))) {
		ret = ret ? ret : -ENOMEM;
		goto fail;
	}
	z->have_ur = true;
	if ((ret = common_opts(z, o)) || (ret = zopts_check_unused(o)))
		goto fail;
	if (sp->enabled && (ret = svc_create(sp, exec_cmd, z, &z->svc)))
		goto fail;
	*out = &z->base;
	return 0;
fail:
	zemu_close(&z->base);
	return ret;
}

int zemu_open_image(const char *path, struct zopts *o, bool ro, struct zlfs_zdev **out)
{
	struct svc_params sp = { .queues = 1, .qd = 64 };
	struct zst_hdr h;
	struct zemu *z;
	char *stpath;
	int fd, ret;

	uint64_t wb = 1, inl = 1;
	if ((ret = svc_params_parse(o, &sp)) || (ret = zopts_u64(o, "writebehind", &wb)) ||
	    (ret = zopts_u64(o, "shortpath", &inl)))
		return ret;
	if (asprintf(&stpath, "%s.zst", path) < 0)
		return -ENOMEM;
	fd = open(stpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		free(stpath);
		return open_plain_file(path, o, &sp, ro, out);
	}
	if (fd < 0) {
		ret = -errno;
		zdev_set_errmsg("%s: %s", stpath, strerror(errno));
		free(stpath);
		return ret;
	}
	ssize_t n = pread(fd, &h, sizeof(h), 0);
	close(fd);
	if (n != (ssize_t)sizeof(h) || memcmp(h.magic, ZST_MAGIC, 8) || h.version != 1) {
		zdev_set_errmsg("%s: not a zlfs zone state file", stpath);
		free(stpath);
		return -EINVAL;
	}
	free(stpath);
	if ((ret = check_geometry(h.size, h.zone_size, h.zone_cap, h.nr_conv, h.lbs)) ||
	    h.nr_zones != h.size / h.zone_size) {
		zdev_set_errmsg("%s: zone state has a bad geometry", path);
		return -EINVAL;
	}
	z = zemu_alloc(h.size, h.zone_size, h.zone_cap, h.nr_conv, h.max_open, h.max_active, h.lbs);
	if (!z)
		return -ENOMEM;
	z->image = true;
	z->wb_on = wb != 0;
	z->inline_on = inl != 0;
	z->base.geom.kind = ZLFS_DEV_IMAGE;
	z->base.geom.rdonly = ro;
	z->base.geom.depth = sp.enabled ? sp.queues * sp.qd : sp.qd;
	z->path = strdup(path);
	z->fd = open_image_file(path, ro);
	if (!z->path || z->fd < 0) {
		ret = z->path ? -errno : -ENOMEM;
		zdev_set_errmsg("%s: %s", path, strerror(-ret));
		goto fail;
	}
	if ((ret = lock_image(z->fd, path, ro)))
		goto fail;
	struct stat st;
	if (fstat(z->fd, &st) < 0 || (uint64_t)st.st_size < h.size) {
		zdev_set_errmsg("%s: image is smaller than its zone state says", path);
		ret = -EINVAL;
		goto fail;
	}
	if ((ret = zimg_map_state(z, path, !ro)))
		goto fail;
	zrules_power_cycle(&z->r);
	if ((ret = zuring_init(&z->ur, 2 * z->base.geom.depth + 16)))
		goto fail;
	z->have_ur = true;
	if ((ret = common_opts(z, o)) || (ret = zopts_check_unused(o)))
		goto fail;
	if (sp.enabled && (ret = svc_create(&sp, exec_cmd, z, &z->svc)))
		goto fail;
	*out = &z->base;
	return 0;
fail:
	zemu_close(&z->base);
	return ret;
}
