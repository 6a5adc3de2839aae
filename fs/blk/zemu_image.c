/*
 * zemu_image.c - the files behind an emulated zoned image.
 *
 * IMAGE      the device's logical blocks at their own offsets (sparse), so
 *            any tool that reads a flat image (f2fs-tools) can read it.
 * IMAGE.zst  a 4 KiB header (geometry) followed by one zst_zone per zone:
 *            the persisted write pointer and the read-only/offline flags.
 *            It is mapped shared and read-only; updates are pwrite()s into
 *            the same page cache, so each survives the process being
 *            killed at once; zimg_sync() makes it durable after the data.
 * Conditions are not stored: on open a zone is EMPTY at its start, FULL at
 * its capacity, CLOSED in between (what a device reports after a power
 * cycle), unless flagged read-only or offline.
 *
 * A regular file without IMAGE.zst is a device without zones (an image
 * made by mkfs.f2fs, say): every zone conventional, nothing to persist.
 * The image file is locked (flock) while open, so one process owns it.
 *
 * Read-only (rdwr false, ZLFS_ZDEV_RDONLY): IMAGE.zst is opened O_RDONLY,
 * mapped PROT_READ and never resized; nothing here writes to it then (the
 * callers that would, persist and sync, are reached only by writes, zone
 * management and flushes, which a read-only device refuses or skips).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zemu.h"

int zimg_map_state(struct zemu *z, const char *path, bool rdwr)
{
	const struct zlfs_zdev_geom *g = &z->base.geom;
	char *stpath;
	int ret;

	if (asprintf(&stpath, "%s.zst", path) < 0)
		return -ENOMEM;
	z->stfd = open(stpath, (rdwr ? O_RDWR : O_RDONLY | O_NOATIME) | O_CLOEXEC);
	if (z->stfd < 0 && !rdwr && errno == EPERM)     /* O_NOATIME: owner only */
		z->stfd = open(stpath, O_RDONLY | O_CLOEXEC);
	if (z->stfd < 0) {
		ret = -errno;
		zdev_set_errmsg("%s: %s", stpath, strerror(errno));
		free(stpath);
		return ret;
	}
	z->st_len = ZST_HDR_SIZE + (size_t)g->nr_zones * sizeof(struct zst_zone);
	/*
	 * Read-write: sized to the zones (a short file grows, zeros).  Read-
	 * only: never changed, so it must hold them all already - a mapping
	 * past its end would fault on the first look at a zone.
	 */
	struct stat ssb;
	if (rdwr ? ftruncate(z->stfd, (off_t)z->st_len) < 0 : fstat(z->stfd, &ssb) < 0) {
		ret = -errno;
		zdev_set_errmsg("%s: %s", stpath, strerror(errno));
		free(stpath);
		return ret;
	}
	if (!rdwr && (uint64_t)ssb.st_size < z->st_len) {
		zdev_set_errmsg("%s: %llu bytes, short of the %zu its %u zones need", stpath,
				(unsigned long long)ssb.st_size, z->st_len, g->nr_zones);
		free(stpath);
		return -EUCLEAN;
	}
	free(stpath);
	z->st = mmap(NULL, z->st_len, PROT_READ, MAP_SHARED, z->stfd, 0);
	if (z->st == MAP_FAILED) {
		z->st = NULL;
		return -errno;
	}
	z->thick = ((const struct zst_hdr *)z->st)->flags & ZST_HDR_THICK;
	z->stz = (struct zst_zone *)((char *)z->st + ZST_HDR_SIZE);
	if (z->thick) {
		size_t len = (size_t)g->nr_zones * sizeof(struct zst_zone);
		z->stz_len = (len + 4095) & ~(size_t)4095;
		struct stat sb;
		if (fstat(z->fd, &sb) < 0 || (uint64_t)sb.st_size < g->size + z->stz_len) {
			zdev_set_errmsg("%s: a thick image without its zone state", path);
			return -EUCLEAN;
		}
		void *m = mmap(NULL, z->stz_len, PROT_READ, MAP_SHARED, z->fd, (off_t)g->size);
		if (m == MAP_FAILED)
			return -errno;
		z->stz = m;
	}
	struct zst_zone *sz = z->stz;
	for (uint32_t i = g->nr_conv; i < g->nr_zones; i++) {
		struct zlfs_zone *zn = &z->zones[i];
		uint64_t wp = sz[i].wp;
		if (wp < zn->start || wp > zn->start + zn->cap || (wp - zn->start) % g->lbs) {
			zdev_set_errmsg("%s: zone %u has a bad write pointer", path, i);
			return -EUCLEAN;
		}
		zn->wp = wp;
		z->zx[i].persist_wp = wp;
		z->zx[i].wb_wp = wp;
		z->zx[i].flushed_wp = wp;
		if (sz[i].flags & ZST_OFFLINE)
			zn->cond = ZLFS_ZC_OFFLINE;
		else if (sz[i].flags & ZST_RDONLY)
			zn->cond = ZLFS_ZC_RDONLY;
		else if (wp == zn->start)
			zn->cond = ZLFS_ZC_EMPTY;
		else if (wp == zn->start + zn->cap)
			zn->cond = ZLFS_ZC_FULL;
		else
			zn->cond = ZLFS_ZC_CLOSED;
	}
	for (uint32_t i = 0; i < g->nr_conv; i++) {
		if (sz[i].flags & ZST_OFFLINE)
			z->zones[i].cond = ZLFS_ZC_OFFLINE;
		else if (sz[i].flags & ZST_RDONLY)
			z->zones[i].cond = ZLFS_ZC_RDONLY;
	}
	return 0;
}

void zimg_unmap_state(struct zemu *z)
{
	if (z->thick && z->stz)
		munmap(z->stz, z->stz_len);
	z->stz = NULL;
	if (z->st)
		munmap(z->st, z->st_len);
	if (z->stfd >= 0)
		close(z->stfd);
	z->st = NULL;
	z->stfd = -1;
}

/*
 * Record zone's persisted wp and flags. Caller holds z->lock.
 *
 * With pwrite, not through the mapping: after each flush the page is
 * clean and write-protected again, and a store into it then takes a page
 * fault (and the host filesystem's page_mkwrite) - on a VM, more than
 * the write itself.  A pwrite lands in the same page cache, so the record
 * still survives the process being killed at once, and the mapping still
 * reads what it says.  A failed write is kept for the next flush to
 * report (zimg_sync_state): the zone state would not be durable.
 */
void zimg_persist_zone(struct zemu *z, uint32_t zone)
{
	struct zst_zone sz;

	if (!z->stz)
		return;
	sz = z->stz[zone];
	if (z->zones[zone].type != ZLFS_ZONE_CONV)
		sz.wp = z->zx[zone].persist_wp;
	sz.flags = (z->zones[zone].cond == ZLFS_ZC_OFFLINE ? ZST_OFFLINE : 0) |
		   (z->zones[zone].cond == ZLFS_ZC_RDONLY ? ZST_RDONLY : 0);
	if (!memcmp(&sz, &z->stz[zone], sizeof(sz)))
		return;
	int fd = z->thick ? z->fd : z->stfd;
	off_t off = (off_t)((z->thick ? z->base.geom.size : ZST_HDR_SIZE) + zone * sizeof(sz));
	if (pwrite(fd, &sz, sizeof(sz), off) != (ssize_t)sizeof(sz))
		__atomic_store_n(&z->st_err, -EIO, __ATOMIC_RELAXED);
}

/* Data first, then the zone state that points at it. */
int zimg_sync(struct zemu *z)
{
	if (fdatasync(z->fd) < 0)
		return -errno;
	return zimg_sync_state(z);
}

int zimg_sync_state(struct zemu *z)
{
	int err = __atomic_load_n(&z->st_err, __ATOMIC_RELAXED);   /* z->lock may be held */
	if (err)
		return err;
	if (z->thick)
		return 0;      /* in the image: its fdatasync took the zone state too */
	if (z->stfd >= 0 && fdatasync(z->stfd) < 0)
		return -errno;
	return 0;
}

int zimg_discard(struct zemu *z, uint64_t off, uint64_t len)
{
	if (fallocate(z->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		return 0;
	/* no hole punching here: write zeros instead */
	static const char zeros[65536];
	while (len) {
		size_t n = len < sizeof(zeros) ? len : sizeof(zeros);
		if (pwrite(z->fd, zeros, n, (off_t)off) != (ssize_t)n)
			return -EIO;
		off += n;
		len -= n;
	}
	return 0;
}

int zlfs_image_create(const char *path, const struct zlfs_image_params *p, bool force)
{
	uint64_t cap = p->zone_cap ? p->zone_cap : p->zone_size;
	uint32_t lbs = p->lbs ? p->lbs : 4096;
	struct zst_hdr h;
	char *stpath = NULL;
	int fd = -1, sfd = -1, ret;

	zdev_set_errmsg("%s", "");
	if (lbs != 512 && lbs != 4096) {
		zdev_set_errmsg("logical block size must be 512 or 4096");
		return -EINVAL;
	}
	if (!p->zone_size || (p->zone_size & (p->zone_size - 1)) || p->zone_size < lbs) {
		zdev_set_errmsg("zone size must be a power of two, at least one block");
		return -EINVAL;
	}
	if (cap > p->zone_size || cap % lbs) {
		zdev_set_errmsg("zone capacity must be a block multiple no larger than the zone size");
		return -EINVAL;
	}
	if (!p->size || p->size % p->zone_size || p->size / p->zone_size > UINT32_MAX - 1) {
		zdev_set_errmsg("size must be a whole number of zones");
		return -EINVAL;
	}
	if (p->nr_conv > p->size / p->zone_size) {
		zdev_set_errmsg("more conventional zones than zones");
		return -EINVAL;
	}
	if (asprintf(&stpath, "%s.zst", path) < 0)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | (force ? 0 : O_EXCL), 0644);
	if (fd < 0) {
		ret = -errno;
		zdev_set_errmsg("%s: %s", path, strerror(errno));
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ret = -EBUSY;
		zdev_set_errmsg("%s: in use by another process", path);
		goto out;
	}
	/* a new device reads as zeros: drop whatever the file held */
	if (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)p->size) < 0) {
		ret = -errno;
		zdev_set_errmsg("%s: %s", path, strerror(errno));
		goto out;
	}
	/*
	 * Thick: every block written now, so the host filesystem allocates
	 * nothing later and an fdatasync of the image carries no metadata
	 * (a sparse image allocates on every log write, and each flush then
	 * commits the host's journal).  Zone resets keep the blocks.
	 */
	if (p->thick) {
		size_t chunk = 1 << 20;
		char *zero = calloc(1, chunk);
		if (!zero) {
			ret = -ENOMEM;
			goto out;
		}
		for (uint64_t off = 0; off < p->size; off += chunk) {
			size_t n = p->size - off < chunk ? (size_t)(p->size - off) : chunk;
			if (pwrite(fd, zero, n, (off_t)off) != (ssize_t)n) {
				ret = -errno;
				zdev_set_errmsg("%s: %s", path, strerror(errno));
				free(zero);
				goto out;
			}
		}
		free(zero);
	}
	sfd = open(stpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (sfd < 0) {
		ret = -errno;
		zdev_set_errmsg("%s: %s", stpath, strerror(errno));
		goto out;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, ZST_MAGIC, 8);
	h.version = 1;
	h.lbs = lbs;
	h.size = p->size;
	h.zone_size = p->zone_size;
	h.zone_cap = cap;
	h.nr_zones = (uint32_t)(p->size / p->zone_size);
	h.nr_conv = p->nr_conv;
	h.max_open = p->max_open;
	h.max_active = p->max_active;
	h.flags = p->thick ? ZST_HDR_THICK : 0;
	size_t len = ZST_HDR_SIZE + (size_t)h.nr_zones * sizeof(struct zst_zone);
	char *buf = calloc(1, len);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(buf, &h, sizeof(h));
	struct zst_zone *sz = (struct zst_zone *)(buf + ZST_HDR_SIZE);
	for (uint32_t i = 0; i < h.nr_zones; i++)
		sz[i].wp = (uint64_t)i * p->zone_size;
	ret = pwrite(sfd, buf, len, 0) == (ssize_t)len ? 0 : -EIO;
	/* thick: the zones' state proper goes after the device's blocks */
	if (!ret && p->thick) {
		size_t zl = len - ZST_HDR_SIZE, zlen = (zl + 4095) & ~(size_t)4095;
		char *t = calloc(1, zlen);
		if (!t)
			ret = -ENOMEM;
		else {
			memcpy(t, buf + ZST_HDR_SIZE, zl);
			ret = pwrite(fd, t, zlen, (off_t)p->size) == (ssize_t)zlen ? 0 : -EIO;
			free(t);
		}
	}
	free(buf);
	if (!ret && (fsync(sfd) < 0 || fsync(fd) < 0))
		ret = -errno;
out:
	if (sfd >= 0)
		close(sfd);
	if (fd >= 0)
		close(fd);
	free(stpath);
	return ret;
}
