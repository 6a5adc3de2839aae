/*
 * dev_zbd.c - real block devices: zoned ones through libzbd (report and
 * zone management) with data through io_uring on an O_DIRECT descriptor;
 * plain ones presented as all-conventional zones.
 *
 * Error classification.  A kernel fails every bad zoned write with EIO.
 * After a failed write to a sequential zone this backend reports that zone
 * and turns the EIO into the error the zone explains: offline, read-only,
 * full, past the capacity, or - when the zone is still writable - an
 * unaligned write (the write was not at the write pointer when the device
 * ran it).  The dispatcher's recovery queue depends on that last case.
 *
 * Zone append is emulated: one append at a time per device, written at the
 * reported write pointer (Debian's 6.1 kernel has no io_uring append).
 *
 * O_DIRECT wants memory aligned to the logical block size; commands whose
 * buffers are not aligned go through a bounce buffer.
 *
 * Locks: lock guards inflight and the counters; append_lock serialises
 * emulated appends.  The device is opened O_EXCL: one owner at a time.
 * excl=0 leaves O_EXCL out, for the one owner that cannot have it: the zlfs
 * daemon of a fuseblk mount, whose device the kernel already holds
 * exclusively (its claim would refuse ours, and keeps everyone else out).
 * Read-only (ZLFS_ZDEV_RDONLY): opened O_RDONLY (zbd_open too), so a device
 * set read-only (BLKROSET, losetup -r) opens; still O_EXCL; a flush sends
 * nothing; zdev.c refuses writes and zone management before they get here.
 */
#include <fcntl.h>
#include <libzbd/zbd.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "zdev_int.h"
#include "uring.h"

struct zbdev {
	struct zlfs_zdev base;
	int fd;
	struct zuring ur;
	pthread_mutex_t lock, append_lock;
	pthread_cond_t cv;
	uint32_t inflight;
	struct zlfs_zdev_stats stats;
};

struct zbio {
	struct zuring_req req;
	struct zbdev *d;
	struct zlfs_cmd *cmd;
	/* O_DIRECT needs block-aligned memory: a bounce buffer when the caller's isn't */
	void *bounce;
	struct iovec biov;
};

static bool iov_aligned(const struct iovec *iov, int cnt, uint32_t lbs)
{
	for (int i = 0; i < cnt; i++)
		if ((uintptr_t)iov[i].iov_base % lbs || iov[i].iov_len % lbs)
			return false;
	return true;
}

static int zbd_err(void)
{
	return errno ? -errno : -EIO;
}

static void to_zone(const struct zbd_zone *in, struct zlfs_zone *out)
{
	out->start = in->start;
	out->len = in->len;
	out->cap = in->capacity;
	out->wp = in->wp;
	out->type = in->type == ZBD_ZONE_TYPE_CNV ? ZLFS_ZONE_CONV : ZLFS_ZONE_SWR;
	out->cond = (uint8_t)in->cond;
	if (out->cond == ZLFS_ZC_FULL)
		out->wp = in->start + in->capacity;
}

static int report_one(struct zbdev *d, uint32_t zone, struct zlfs_zone *out)
{
	struct zbd_zone z;
	unsigned int nr = 1;
	uint64_t zs = d->base.geom.zone_size;

	if (zbd_report_zones(d->fd, (off_t)(zone * zs), (off_t)zs, ZBD_RO_ALL, &z, &nr) < 0)
		return zbd_err();
	if (nr != 1)
		return -EIO;
	to_zone(&z, out);
	return 0;
}

/* Explain a failed write to a sequential zone (see the file comment). */
static int classify(struct zbdev *d, struct zlfs_cmd *cmd, int res)
{
	struct zlfs_zone z;
	uint32_t zone = (uint32_t)(cmd->off / d->base.geom.zone_size);

	if (!d->base.geom.zoned || zone < d->base.geom.nr_conv || report_one(d, zone, &z))
		return res;
	if (z.type == ZLFS_ZONE_CONV)
		return res;
	switch (z.cond) {
	case ZLFS_ZC_OFFLINE: return -ZLFS_EZONEOFFLINE;
	case ZLFS_ZC_RDONLY: return -ZLFS_EZONERO;
	case ZLFS_ZC_FULL: return -ZLFS_EZONEFULL;
	default: break;
	}
	if (cmd->off + cmd->len > z.start + z.cap)
		return -ZLFS_EBOUNDARY;
	return -ZLFS_EUNALIGNED;
}

static void finish(struct zbdev *d, struct zlfs_cmd *cmd)
{
	pthread_mutex_lock(&d->lock);
	if (cmd->result == -ZLFS_EUNALIGNED)
		d->stats.unaligned++;
	if (!--d->inflight)
		pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->lock);
	cmd->done(cmd);
}

static void zbio_done(struct zuring_req *r, int res)
{
	struct zbio *io = (struct zbio *)r;
	struct zlfs_cmd *cmd = io->cmd;
	struct zbdev *d = io->d;

	if (io->bounce) {
		if (cmd->op == ZLFS_OP_READ && res >= 0) {
			const uint8_t *src = io->bounce;
			for (int i = 0; i < cmd->iovcnt; i++) {
				memcpy(cmd->iov[i].iov_base, src, cmd->iov[i].iov_len);
				src += cmd->iov[i].iov_len;
			}
		}
		free(io->bounce);
	}
	free(io);
	if (cmd->op == ZLFS_OP_FLUSH || cmd->op == ZLFS_OP_APPEND)
		cmd->result = res < 0 ? res : cmd->result;
	else if (res >= 0 && (uint64_t)res != cmd->len)
		cmd->result = -EIO;     /* a short transfer on O_DIRECT: treat as failed */
	else
		cmd->result = res < 0 ? res : 0;
	if (cmd->result && cmd->op == ZLFS_OP_WRITE)
		cmd->result = classify(d, cmd, cmd->result);
	if (cmd->op == ZLFS_OP_WRITE && !cmd->result)
		cmd->pos = cmd->off;
	finish(d, cmd);
}

/* Emulated append: write at the reported write pointer, one at a time. */
static int do_append(struct zbdev *d, struct zlfs_cmd *cmd, const struct iovec *iov, int iovcnt)
{
	uint32_t zone = (uint32_t)(cmd->off / d->base.geom.zone_size);
	struct zlfs_zone z;
	int ret;

	pthread_mutex_lock(&d->append_lock);
	ret = report_one(d, zone, &z);
	if (!ret && z.type == ZLFS_ZONE_CONV)
		ret = -EINVAL;
	if (!ret && (z.cond == ZLFS_ZC_FULL || z.cond == ZLFS_ZC_RDONLY || z.cond == ZLFS_ZC_OFFLINE))
		ret = z.cond == ZLFS_ZC_FULL ? -ZLFS_EZONEFULL
		      : z.cond == ZLFS_ZC_RDONLY ? -ZLFS_EZONERO : -ZLFS_EZONEOFFLINE;
	if (!ret && z.wp + cmd->len > z.start + z.cap)
		ret = -ZLFS_EBOUNDARY;
	if (!ret) {
		ssize_t n = pwritev(d->fd, iov, iovcnt, (off_t)z.wp);
		if (n < 0)
			ret = -errno;
		else if ((uint64_t)n != cmd->len)
			ret = -EIO;
		else
			cmd->pos = z.wp;
	}
	pthread_mutex_unlock(&d->append_lock);
	return ret;
}

static int zbdev_submit(struct zlfs_zdev *dev, struct zlfs_cmd *cmd)
{
	struct zbdev *d = (struct zbdev *)dev;
	struct zbio *io = calloc(1, sizeof(*io));
	int ret;

	if (!io)
		return -ENOMEM;
	io->d = d;
	io->cmd = cmd;
	io->req.cb = zbio_done;
	pthread_mutex_lock(&d->lock);
	d->inflight++;
	d->stats.cmds++;
	d->stats.reads += cmd->op == ZLFS_OP_READ;
	d->stats.writes += cmd->op == ZLFS_OP_WRITE || cmd->op == ZLFS_OP_APPEND;
	d->stats.flushes += cmd->op == ZLFS_OP_FLUSH;
	pthread_mutex_unlock(&d->lock);
	const struct iovec *iov = cmd->iov;
	int iovcnt = cmd->iovcnt;
	if ((cmd->op == ZLFS_OP_READ || cmd->op == ZLFS_OP_WRITE || cmd->op == ZLFS_OP_APPEND) &&
	    !iov_aligned(cmd->iov, cmd->iovcnt, d->base.geom.lbs)) {
		if (posix_memalign(&io->bounce, 4096, cmd->len)) {
			free(io);
			pthread_mutex_lock(&d->lock);
			if (!--d->inflight)
				pthread_cond_broadcast(&d->cv);
			pthread_mutex_unlock(&d->lock);
			return -ENOMEM;
		}
		if (cmd->op != ZLFS_OP_READ) {
			uint8_t *dst = io->bounce;
			for (int i = 0; i < cmd->iovcnt; i++) {
				memcpy(dst, cmd->iov[i].iov_base, cmd->iov[i].iov_len);
				dst += cmd->iov[i].iov_len;
			}
		}
		io->biov.iov_base = io->bounce;
		io->biov.iov_len = cmd->len;
		iov = &io->biov;
		iovcnt = 1;
	}
	switch (cmd->op) {
	case ZLFS_OP_READ:
		ret = zuring_readv(&d->ur, d->fd, iov, iovcnt, cmd->off, &io->req);
		break;
	case ZLFS_OP_WRITE:
		ret = zuring_writev(&d->ur, d->fd, iov, iovcnt, cmd->off, &io->req);
		break;
	case ZLFS_OP_FLUSH:
		/* read-only: no cache flush sent to the device either, it holds nothing of ours */
		ret = d->base.geom.rdonly ? zuring_post(&d->ur, &io->req)
					  : zuring_fsync(&d->ur, d->fd, &io->req);
		break;
	case ZLFS_OP_APPEND:
		cmd->result = do_append(d, cmd, iov, iovcnt);
		ret = zuring_post(&d->ur, &io->req);
		break;
	default:
		ret = -EINVAL;
	}
	if (ret) {
		free(io->bounce);
		free(io);
		pthread_mutex_lock(&d->lock);
		if (!--d->inflight)
			pthread_cond_broadcast(&d->cv);
		pthread_mutex_unlock(&d->lock);
	}
	return ret;
}

static int zbdev_report(struct zlfs_zdev *dev, uint32_t first, struct zlfs_zone *out, uint32_t *nr)
{
	struct zbdev *d = (struct zbdev *)dev;
	const struct zlfs_zdev_geom *g = &dev->geom;

	if (!g->zoned) {
		for (uint32_t i = 0; i < *nr; i++) {
			struct zlfs_zone *z = &out[i];
			z->start = (uint64_t)(first + i) * g->zone_size;
			z->len = z->cap = g->zone_size;
			z->wp = z->start;
			z->type = ZLFS_ZONE_CONV;
			z->cond = ZLFS_ZC_NOT_WP;
		}
		return 0;
	}
	struct zbd_zone *zz = calloc(*nr ? *nr : 1, sizeof(*zz));
	unsigned int n = *nr;
	if (!zz)
		return -ENOMEM;
	if (zbd_report_zones(d->fd, (off_t)(first * g->zone_size), (off_t)(*nr * g->zone_size),
			     ZBD_RO_ALL, zz, &n) < 0) {
		int ret = zbd_err();
		free(zz);
		return ret;
	}
	for (unsigned int i = 0; i < n; i++)
		to_zone(&zz[i], &out[i]);
	*nr = n;
	free(zz);
	return 0;
}

static int zone_op(struct zbdev *d, enum zlfs_zone_mgmt op, uint64_t off, uint64_t len)
{
	static const enum zbd_zone_op map[] = {
		[ZLFS_ZM_RESET] = ZBD_OP_RESET, [ZLFS_ZM_OPEN] = ZBD_OP_OPEN,
		[ZLFS_ZM_CLOSE] = ZBD_OP_CLOSE, [ZLFS_ZM_FINISH] = ZBD_OP_FINISH,
	};
	errno = 0;
	if (zbd_zones_operation(d->fd, map[op], (off_t)off, (off_t)len) < 0)
		return zbd_err();
	return 0;
}

static int zbdev_mgmt(struct zlfs_zdev *dev, enum zlfs_zone_mgmt op, uint32_t zone)
{
	struct zbdev *d = (struct zbdev *)dev;
	const struct zlfs_zdev_geom *g = &dev->geom;
	struct zlfs_zone z;
	int ret;

	if (!g->zoned)
		return -EINVAL;
	if (zone != ZLFS_ZONE_ALL) {
		if ((ret = report_one(d, zone, &z)))
			return ret;
		if (z.type == ZLFS_ZONE_CONV)
			return -EINVAL;
		if (z.cond == ZLFS_ZC_OFFLINE)
			return -ZLFS_EZONEOFFLINE;
		if (z.cond == ZLFS_ZC_RDONLY)
			return -ZLFS_EZONERO;
		ret = zone_op(d, op, z.start, z.len);
		if (ret == -EIO && op == ZLFS_ZM_OPEN)
			ret = -ZLFS_ETOOMANYOPEN;   /* the usual cause of a refused open */
		return ret;
	}
	if (op == ZLFS_ZM_RESET)
		return zone_op(d, op, (uint64_t)g->nr_conv * g->zone_size,
			       (uint64_t)(g->nr_zones - g->nr_conv) * g->zone_size);
	/* other "all" operations: the zones they apply to, as the emulator does */
	for (uint32_t i = g->nr_conv; i < g->nr_zones; i++) {
		if ((ret = report_one(d, i, &z)))
			return ret;
		bool open = z.cond == ZLFS_ZC_IMP_OPEN || z.cond == ZLFS_ZC_EXP_OPEN;
		bool apply = op == ZLFS_ZM_OPEN ? z.cond == ZLFS_ZC_CLOSED
			   : op == ZLFS_ZM_CLOSE ? open : open || z.cond == ZLFS_ZC_CLOSED;
		if (z.type != ZLFS_ZONE_CONV && apply && (ret = zone_op(d, op, z.start, z.len)))
			return ret;
	}
	return 0;
}

static void zbdev_close(struct zlfs_zdev *dev)
{
	struct zbdev *d = (struct zbdev *)dev;

	pthread_mutex_lock(&d->lock);
	while (d->inflight)
		pthread_cond_wait(&d->cv, &d->lock);
	pthread_mutex_unlock(&d->lock);
	zuring_fini(&d->ur);
	if (dev->geom.kind == ZLFS_DEV_BLOCK)
		zbd_close(d->fd);
	else
		close(d->fd);
	pthread_mutex_destroy(&d->lock);
	pthread_mutex_destroy(&d->append_lock);
	pthread_cond_destroy(&d->cv);
	free(d);
}

static void zbdev_stats(struct zlfs_zdev *dev, struct zlfs_zdev_stats *st)
{
	struct zbdev *d = (struct zbdev *)dev;

	pthread_mutex_lock(&d->lock);
	*st = d->stats;
	pthread_mutex_unlock(&d->lock);
}

/*
 * Discard: BLKDISCARD on a block device (EOPNOTSUPP where it has no
 * discard), a punched hole in a plain file.
 */
static int zbdev_discard(struct zlfs_zdev *dev, uint64_t off, uint64_t len)
{
	struct zbdev *d = (struct zbdev *)dev;
	struct stat st;

	if (fstat(d->fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		if (fallocate(d->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			      (off_t)len) < 0)
			return errno == ENOSYS ? -EOPNOTSUPP : -errno;
		return 0;
	}
	uint64_t range[2] = { off, len };
	if (ioctl(d->fd, BLKDISCARD, range) < 0)
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	return 0;
}

static const struct zdev_ops zbdev_ops = {
	.submit = zbdev_submit,
	.report = zbdev_report,
	.mgmt = zbdev_mgmt,
	.close = zbdev_close,
	.stats = zbdev_stats,
	.discard = zbdev_discard,
};

/* The kernel's limit for one request (queue/max_sectors_kb), 0 if unknown. */
static uint32_t max_io_bytes(int fd)
{
	struct stat st;
	char path[128];
	unsigned long kb = 0;

	if (fstat(fd, &st) < 0)
		return 0;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/max_sectors_kb",
		 major(st.st_rdev), minor(st.st_rdev));
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu", &kb) != 1)
		kb = 0;
	fclose(f);
	return kb > 4096 ? 4u << 20 : (uint32_t)(kb * 1024) & ~4095u;
}

int zbd_backend_open(const char *path, struct zopts *o, bool ro, struct zlfs_zdev **out)
{
	uint64_t qd = 64, nozwl = 1, zs = 0, excl = 1;
	struct zlfs_zdev_geom *g;
	struct zbdev *d;
	int ret, zoned;

	if ((ret = zopts_u64(o, "qd", &qd)) || (ret = zopts_u64(o, "nozwl", &nozwl)) ||
	    (ret = zopts_size(o, "zone_size", &zs)) || (ret = zopts_u64(o, "excl", &excl)) ||
	    (ret = zopts_check_unused(o)))
		return ret;
	int oexcl = excl ? O_EXCL : 0;
	int omode = ro ? O_RDONLY : O_RDWR;
	if (qd < 1 || qd > 4096) {
		zdev_set_errmsg("qd must be 1..4096");
		return -EINVAL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->base.ops = &zbdev_ops;
	g = &d->base.geom;
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->append_lock, NULL);
	pthread_cond_init(&d->cv, NULL);
	zoned = zbd_device_is_zoned(path);
	if (zoned > 0) {
		struct zbd_info info;
		d->fd = zbd_open(path, omode | O_DIRECT | oexcl, &info);
		if (d->fd < 0) {
			ret = zbd_err();
			zdev_set_errmsg("%s: %s", path, strerror(-ret));
			goto fail_free;
		}
		g->kind = ZLFS_DEV_BLOCK;
		g->zoned = true;
		g->zone_size = info.zone_size;
		g->nr_zones = info.nr_zones;
		g->size = (uint64_t)info.nr_zones * info.zone_size;
		g->lbs = info.lblock_size;
		g->max_open = info.max_nr_open_zones;
		g->max_active = info.max_nr_active_zones;
		g->zone_cap = info.zone_size;
		/* conventional zones first, then the first sequential zone's capacity */
		for (uint32_t i = 0; i < g->nr_zones; i++) {
			struct zlfs_zone z;
			if ((ret = report_one(d, i, &z))) {
				zbd_close(d->fd);
				goto fail_free;
			}
			if (z.type != ZLFS_ZONE_CONV) {
				g->zone_cap = z.cap;
				break;
			}
			g->nr_conv++;
		}
		g->zoned = g->nr_conv < g->nr_zones;
	} else {
		uint64_t bytes = 0;
		int lbs = 512;
		d->fd = open(path, omode | O_DIRECT | oexcl | O_CLOEXEC);
		if (d->fd < 0) {
			ret = -errno;
			zdev_set_errmsg("%s: %s", path, strerror(errno));
			goto fail_free;
		}
		if (ioctl(d->fd, BLKGETSIZE64, &bytes) < 0 || ioctl(d->fd, BLKSSZGET, &lbs) < 0) {
			ret = -errno;
			close(d->fd);
			goto fail_free;
		}
		g->zs_auto = !zopts_get(o, "zone_size");
		if (g->zs_auto)
			zs = 64ull << 20;
		if (!zs || (zs & (zs - 1)) || zs < (uint64_t)lbs || bytes < zs) {
			zdev_set_errmsg("%s: zone_size must be a power of two no larger than the device",
					path);
			ret = -EINVAL;
			close(d->fd);
			goto fail_free;
		}
		g->kind = ZLFS_DEV_PLAIN;
		g->zone_size = g->zone_cap = zs;
		g->nr_zones = (uint32_t)(bytes / zs);
		g->nr_conv = g->nr_zones;
		g->size = (uint64_t)g->nr_zones * zs;
		g->lbs = (uint32_t)lbs;
	}
	g->depth = (uint32_t)qd;
	g->no_zwl = nozwl != 0;
	g->rdonly = ro;
	g->max_io = max_io_bytes(d->fd);
	if ((ret = zuring_init(&d->ur, 2 * g->depth + 16))) {
		if (g->kind == ZLFS_DEV_BLOCK)
			zbd_close(d->fd);
		else
			close(d->fd);
		goto fail_free;
	}
	*out = &d->base;
	return 0;
fail_free:
	pthread_mutex_destroy(&d->lock);
	pthread_mutex_destroy(&d->append_lock);
	pthread_cond_destroy(&d->cv);
	free(d);
	return ret;
}
