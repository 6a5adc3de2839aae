/*
 * zdev.c - the front of the device layer: spec strings, routing of public
 * calls to a backend, and the synchronous helpers built on submit.
 *
 * Spec grammar (README "Device specs"):
 *   mem:OPTS            memory-backed emulated device
 *   PATH[?OPTS]         block device (zoned or not) or emulated image
 * OPTS is key=val[,key=val...].
 *
 * Read-only opens (ZLFS_ZDEV_RDONLY): the backends open O_RDONLY; every
 * call that would change the device is refused here with -EROFS, so a
 * read-only device writes nothing whatever its caller asks.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zdev_int.h"

int zlfs_zdev_open(const char *spec, struct zlfs_zdev **out)
{
	return zlfs_zdev_open_flags(spec, 0, out);
}

int zlfs_zdev_open_flags(const char *spec, unsigned int flags, struct zlfs_zdev **out)
{
	bool ro = flags & ZLFS_ZDEV_RDONLY;
	struct zopts o;
	struct zlfs_zdev *dev = NULL;
	char *path = NULL;
	const char *opts;
	int ret;

	zdev_set_errmsg("%s", "");
	if (flags & ~ZLFS_ZDEV_RDONLY) {
		zdev_set_errmsg("unknown open flags 0x%x", flags);
		return -EINVAL;
	}
	if (!spec || !*spec) {
		zdev_set_errmsg("empty device spec");
		return -EINVAL;
	}
	if (!strncmp(spec, "mem:", 4)) {
		opts = spec + 4;
	} else {
		const char *q = strchr(spec, '?');
		path = q ? strndup(spec, (size_t)(q - spec)) : strdup(spec);
		if (!path)
			return -ENOMEM;
		opts = q ? q + 1 : "";
	}
	ret = zopts_parse(&o, opts);
	if (ret) {
		free(path);
		return ret;
	}
	if (!path) {
		ret = zemu_open_mem(&o, &dev);
	} else {
		struct stat st;
		if (stat(path, &st) < 0) {
			ret = -errno;
			zdev_set_errmsg("%s: %s", path, strerror(errno));
		} else if (S_ISBLK(st.st_mode)) {
			ret = zbd_backend_open(path, &o, ro, &dev);
		} else if (S_ISREG(st.st_mode)) {
			ret = zemu_open_image(path, &o, ro, &dev);
		} else {
			ret = -ENODEV;
			zdev_set_errmsg("%s: neither a block device nor an image file", path);
		}
	}
	zopts_free(&o);
	free(path);
	if (ret)
		return ret;
	dev->geom.rdonly = ro;      /* mem: has nothing to open read-only, but refuses writes */
	dev->spec = strdup(spec);
	if (!dev->spec) {
		dev->ops->close(dev);
		return -ENOMEM;
	}
	*out = dev;
	return 0;
}

void zlfs_zdev_close(struct zlfs_zdev *dev)
{
	if (!dev)
		return;
	char *spec = dev->spec;
	dev->ops->close(dev);
	free(spec);
}

const struct zlfs_zdev_geom *zlfs_zdev_geom(const struct zlfs_zdev *dev)
{
	return &dev->geom;
}

const char *zlfs_zdev_spec(const struct zlfs_zdev *dev)
{
	return dev->spec;
}

int zlfs_zdev_submit(struct zlfs_zdev *dev, struct zlfs_cmd *cmd)
{
	const struct zlfs_zdev_geom *g = &dev->geom;

	cmd->len = iov_total(cmd->iov, cmd->iovcnt);
	cmd->result = 0;
	if (cmd->op > ZLFS_OP_FLUSH)
		return -EINVAL;
	/* read-only: refused here, whatever the backend would make of it */
	if (g->rdonly && (cmd->op == ZLFS_OP_WRITE || cmd->op == ZLFS_OP_APPEND))
		return -EROFS;
	if (cmd->op != ZLFS_OP_FLUSH) {
		if (cmd->len == 0 || cmd->off % g->lbs || cmd->len % g->lbs ||
		    cmd->off >= g->size || cmd->len > g->size - cmd->off)
			return -EINVAL;
	}
	return dev->ops->submit(dev, cmd);
}

/* --- synchronous helpers ------------------------------------------------ */

struct sync_wait {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool done;
};

static void sync_done(struct zlfs_cmd *cmd)
{
	struct sync_wait *w = cmd->priv;

	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->lock);
}

static int sync_cmd(struct zlfs_zdev *dev, uint8_t op, void *buf, uint64_t len, uint64_t off,
		    uint64_t *pos)
{
	struct sync_wait w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	struct iovec iov = { buf, len };
	struct zlfs_cmd cmd;
	int ret;

	memset(&cmd, 0, sizeof(cmd));
	cmd.op = op;
	cmd.off = off;
	cmd.iov = &iov;
	cmd.iovcnt = op == ZLFS_OP_FLUSH ? 0 : 1;
	cmd.done = sync_done;
	cmd.priv = &w;
	ret = zlfs_zdev_submit(dev, &cmd);
	if (ret)
		return ret;
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cv, &w.lock);
	pthread_mutex_unlock(&w.lock);
	if (pos)
		*pos = cmd.pos;
	return cmd.result;
}

int zlfs_zdev_read(struct zlfs_zdev *dev, void *buf, uint64_t len, uint64_t off)
{
	return sync_cmd(dev, ZLFS_OP_READ, buf, len, off, NULL);
}

int zlfs_zdev_write(struct zlfs_zdev *dev, const void *buf, uint64_t len, uint64_t off)
{
	return sync_cmd(dev, ZLFS_OP_WRITE, (void *)buf, len, off, NULL);
}

int zlfs_zdev_append(struct zlfs_zdev *dev, const void *buf, uint64_t len, uint64_t zone_off,
		     uint64_t *pos)
{
	return sync_cmd(dev, ZLFS_OP_APPEND, (void *)buf, len, zone_off, pos);
}

int zlfs_zdev_flush(struct zlfs_zdev *dev)
{
	return sync_cmd(dev, ZLFS_OP_FLUSH, NULL, 0, 0, NULL);
}

int zlfs_zdev_report(struct zlfs_zdev *dev, uint32_t first, struct zlfs_zone *zones,
		     uint32_t *nr)
{
	if (first >= dev->geom.nr_zones) {
		*nr = 0;
		return first == dev->geom.nr_zones ? 0 : -EINVAL;
	}
	if (*nr > dev->geom.nr_zones - first)
		*nr = dev->geom.nr_zones - first;
	return dev->ops->report(dev, first, zones, nr);
}

int zlfs_zdev_zone_mgmt(struct zlfs_zdev *dev, enum zlfs_zone_mgmt op, uint32_t zone)
{
	if (op > ZLFS_ZM_FINISH)
		return -EINVAL;
	if (zone != ZLFS_ZONE_ALL && zone >= dev->geom.nr_zones)
		return -EINVAL;
	if (dev->geom.rdonly)
		return -EROFS;     /* even open and close: a device keeps their state */
	return dev->ops->mgmt(dev, op, zone);
}

/* --- optional operations ------------------------------------------------- */

int zlfs_zdev_discard(struct zlfs_zdev *dev, uint64_t off, uint64_t len)
{
	const struct zlfs_zdev_geom *g = &dev->geom;

	if (!len)
		return 0;
	if (off % g->lbs || len % g->lbs || off > g->size || len > g->size - off)
		return -EINVAL;
	/* a read-only open changes nothing, whatever the zones (as every op here) */
	if (g->rdonly)
		return -EROFS;
	/* conventional zones come first (nr_conv of them) */
	if (g->zoned && off + len > (uint64_t)g->nr_conv * g->zone_size)
		return -EINVAL;
	if (!dev->ops->discard)
		return -EOPNOTSUPP;
	return dev->ops->discard(dev, off, len);
}

int zlfs_zdev_read_fd(struct zlfs_zdev *dev, uint64_t off, uint64_t len, int *fd, uint64_t *pos)
{
	const struct zlfs_zdev_geom *g = &dev->geom;

	if (!len || off % g->lbs || len % g->lbs || off > g->size || len > g->size - off)
		return -EINVAL;
	if (!dev->ops->read_fd)
		return -EOPNOTSUPP;
	return dev->ops->read_fd(dev, off, len, fd, pos);
}

int zlfs_zdev_fault_arm(struct zlfs_zdev *dev, enum zlfs_fault_kind kind, uint64_t nth,
			bool persistent)
{
	if (kind >= ZLFS_FAULT_NKINDS || nth == 0)
		return -EINVAL;
	return dev->ops->fault_arm ? dev->ops->fault_arm(dev, kind, nth, persistent) : -EOPNOTSUPP;
}

void zlfs_zdev_fault_clear(struct zlfs_zdev *dev)
{
	if (dev->ops->fault_clear)
		dev->ops->fault_clear(dev);
}

int zlfs_zdev_set_zone_cond(struct zlfs_zdev *dev, uint32_t zone, enum zlfs_zone_cond cond)
{
	if (zone >= dev->geom.nr_zones || (cond != ZLFS_ZC_RDONLY && cond != ZLFS_ZC_OFFLINE))
		return -EINVAL;
	if (dev->geom.rdonly)
		return -EROFS;     /* an image would persist the condition */
	return dev->ops->set_cond ? dev->ops->set_cond(dev, zone, cond) : -EOPNOTSUPP;
}

int zlfs_zdev_powercut_arm(struct zlfs_zdev *dev, uint64_t after_writes, uint64_t seed)
{
	if (dev->geom.rdonly)
		return -EROFS;     /* a cut rewrites zones and their state */
	return dev->ops->powercut_arm ? dev->ops->powercut_arm(dev, after_writes, seed)
				      : -EOPNOTSUPP;
}

int zlfs_zdev_powercut(struct zlfs_zdev *dev)
{
	if (dev->geom.rdonly)
		return -EROFS;
	return dev->ops->powercut ? dev->ops->powercut(dev) : -EOPNOTSUPP;
}

int zlfs_zdev_revive(struct zlfs_zdev *dev)
{
	if (dev->geom.rdonly)
		return -EROFS;
	return dev->ops->revive ? dev->ops->revive(dev) : -EOPNOTSUPP;
}

bool zlfs_zdev_is_dead(struct zlfs_zdev *dev)
{
	return dev->ops->is_dead ? dev->ops->is_dead(dev) : false;
}

void zlfs_zdev_stats(struct zlfs_zdev *dev, struct zlfs_zdev_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (dev->ops->stats)
		dev->ops->stats(dev, st);
}

/* --- names --------------------------------------------------------------- */

const char *zlfs_zone_cond_str(uint8_t cond)
{
	switch (cond) {
	case ZLFS_ZC_NOT_WP: return "not-wp";
	case ZLFS_ZC_EMPTY: return "empty";
	case ZLFS_ZC_IMP_OPEN: return "imp-open";
	case ZLFS_ZC_EXP_OPEN: return "exp-open";
	case ZLFS_ZC_CLOSED: return "closed";
	case ZLFS_ZC_RDONLY: return "read-only";
	case ZLFS_ZC_FULL: return "full";
	case ZLFS_ZC_OFFLINE: return "offline";
	default: return "unknown";
	}
}

const char *zlfs_zdev_kind_str(uint8_t kind)
{
	switch (kind) {
	case ZLFS_DEV_MEM: return "mem";
	case ZLFS_DEV_IMAGE: return "image";
	case ZLFS_DEV_BLOCK: return "zoned block device";
	case ZLFS_DEV_PLAIN: return "block device (no zones)";
	default: return "unknown";
	}
}

const char *zlfs_zdev_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case ZLFS_EUNALIGNED: return "unaligned write (not at the write pointer)";
	case ZLFS_EBOUNDARY: return "write past the zone capacity or across a zone boundary";
	case ZLFS_EZONEFULL: return "zone is full";
	case ZLFS_ETOOMANYOPEN: return "too many open zones";
	case ZLFS_ETOOMANYACT: return "too many active zones";
	case ZLFS_EZONERO: return "zone is read-only";
	case ZLFS_EZONEOFFLINE: return "zone is offline";
	default: return strerror(err);
	}
}
