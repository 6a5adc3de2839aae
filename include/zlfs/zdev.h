/*
 * zdev.h - the zoned device interface every zlfs program uses.
 *
 * A zdev is one zoned block device, chosen by a device spec string (see
 * zlfs_zdev_open and README "Device specs"):
 *   /dev/...          a block device: zoned ones through libzbd, plain ones
 *                     presented with every zone conventional; data through
 *                     io_uring on an O_DIRECT descriptor.
 *   PATH              an emulated zoned image: PATH holds the logical blocks
 *                     at their own offsets, PATH.zst the zone state.
 *   mem:OPTS          a memory-backed emulated device (null_blk-like).
 * Any of them may carry options after '?' (PATH?qd=32,lat_us=100); mem:
 * takes them directly.
 *
 * Units: every offset and length in this interface is in bytes and must be
 * a multiple of the logical block size.  Zones are numbered from 0.
 *
 * Commands are asynchronous: zlfs_zdev_submit() queues a command and its
 * done() callback runs exactly once, on a device thread, with the result in
 * cmd->result.  The synchronous helpers are built on it.  Every call returns
 * 0 or a negative errno; the zone errors below are distinct so that callers
 * (the dispatcher's recovery queue above all) can tell them apart.
 *
 * Thread safety: all calls may be made from any thread at once, except
 * zlfs_zdev_close(), which the caller must order after every other call.
 */
#ifndef ZLFS_ZDEV_H
#define ZLFS_ZDEV_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * Zone errors.  Real devices report all of these as EIO; the block-device
 * backend classifies them by looking at the zone after a failure.
 */
#define ZLFS_EUNALIGNED   EILSEQ   /* write not at the zone's write pointer */
#define ZLFS_EBOUNDARY    ERANGE   /* past the zone capacity / across zones */
#define ZLFS_EZONEFULL    ENOSPC   /* zone is full */
#define ZLFS_ETOOMANYOPEN EMFILE   /* max open zones reached */
#define ZLFS_ETOOMANYACT  ENFILE   /* max active zones reached */
#define ZLFS_EZONERO      EROFS    /* zone is read-only */
#define ZLFS_EZONEOFFLINE ENXIO    /* zone is offline */
/* plain EIO: a media or transport error (or an injected one) */

/* Zone types and conditions: the kernel's (and libzbd's) values. */
enum zlfs_zone_type {
	ZLFS_ZONE_CONV = 1,
	ZLFS_ZONE_SWR  = 2,
};

enum zlfs_zone_cond {
	ZLFS_ZC_NOT_WP   = 0x0,
	ZLFS_ZC_EMPTY    = 0x1,
	ZLFS_ZC_IMP_OPEN = 0x2,
	ZLFS_ZC_EXP_OPEN = 0x3,
	ZLFS_ZC_CLOSED   = 0x4,
	ZLFS_ZC_RDONLY   = 0xd,
	ZLFS_ZC_FULL     = 0xe,
	ZLFS_ZC_OFFLINE  = 0xf,
};

struct zlfs_zone {
	uint64_t start;     /* bytes */
	uint64_t len;       /* zone size, bytes */
	uint64_t cap;       /* writable bytes from start, <= len */
	uint64_t wp;        /* absolute byte offset; start + cap when full */
	uint8_t  type;      /* enum zlfs_zone_type */
	uint8_t  cond;      /* enum zlfs_zone_cond */
};

enum zlfs_dev_kind {
	ZLFS_DEV_MEM = 1,
	ZLFS_DEV_IMAGE = 2,
	ZLFS_DEV_BLOCK = 3,   /* zoned block device through libzbd */
	ZLFS_DEV_PLAIN = 4,   /* block device without zones */
};

struct zlfs_zdev_geom {
	uint64_t size;        /* bytes, nr_zones * zone_size */
	uint64_t zone_size;   /* bytes, a power of two */
	uint64_t zone_cap;    /* bytes writable per sequential zone */
	uint32_t nr_zones;
	uint32_t nr_conv;     /* conventional zones come first */
	uint32_t max_open;    /* 0 = no limit */
	uint32_t max_active;  /* 0 = no limit */
	uint32_t lbs;         /* logical block size, bytes */
	uint32_t depth;       /* commands the device accepts at once */
	uint32_t max_io;      /* largest command the device takes whole, bytes (0 = any);
			       * a kernel splits bigger writes, and a split write can land
			       * in part, so writers to sequential zones stay below it */
	uint8_t  kind;        /* enum zlfs_dev_kind */
	bool     zoned;       /* has sequential zones */
	bool     no_zwl;      /* device flag "no zone write lock" */
	bool     rdonly;      /* opened with ZLFS_ZDEV_RDONLY: every write is -EROFS */
	bool     zs_auto;     /* no zones, zone size the opener's own choice (no zone_size
			       * option): a volume of several devices may ask another */
};

enum zlfs_zdev_op {
	ZLFS_OP_READ = 0,
	ZLFS_OP_WRITE = 1,
	ZLFS_OP_APPEND = 2,   /* write at the zone's wp; cmd->pos says where */
	ZLFS_OP_FLUSH = 3,
};

enum zlfs_zone_mgmt {
	ZLFS_ZM_RESET = 0,
	ZLFS_ZM_OPEN,
	ZLFS_ZM_CLOSE,
	ZLFS_ZM_FINISH,
};
#define ZLFS_ZONE_ALL UINT32_MAX

struct zlfs_zdev;

/*
 * One device command.  The submitter fills op, off, iov/iovcnt, done and
 * priv; the device fills result (0 or -errno) and, for append, pos.  The
 * command must stay valid until done() has been called.  The fields after
 * "device private" belong to the device while the command is in flight.
 */
struct zlfs_cmd {
	uint8_t op;
	uint64_t off;                  /* bytes; for append: any offset in the zone */
	const struct iovec *iov;
	int iovcnt;
	uint64_t len;                  /* total of iov; set by submit */
	int result;
	uint64_t pos;                  /* append: where the data went */
	void (*done)(struct zlfs_cmd *cmd);
	void *priv;
	/* device private */
	struct zlfs_cmd *dnext;
	uint64_t ready_ns;
	uint64_t dseq;
	int hwq;
	bool data_done;
};

/* Open a device by spec.  On success *out is set and 0 returned. */
int zlfs_zdev_open(const char *spec, struct zlfs_zdev **out);
/*
 * ZLFS_ZDEV_RDONLY: open for reading only, so that a write-protected
 * device or image (mode 0444, chattr +i, losetup -r, BLKROSET) can be
 * looked at, and nothing is ever written: the device or image is opened
 * O_RDONLY, an image's zone state (IMAGE.zst) is mapped read-only and not
 * resized, a flush syncs nothing, and writes, appends, zone management,
 * discards and the other changing calls fail with -EROFS before they reach
 * the backend.  An image is locked shared (flock LOCK_SH) instead of
 * exclusive: read-only openers may share it, a read-write opener excludes
 * them all and is excluded by any (-EBUSY either way).  A block device is
 * still opened O_EXCL.
 */
#define ZLFS_ZDEV_RDONLY 1u
int zlfs_zdev_open_flags(const char *spec, unsigned int flags, struct zlfs_zdev **out);
void zlfs_zdev_close(struct zlfs_zdev *dev);
/*
 * Open up to 8 devices as one, end to end in the order given (F2FS's
 * multi-device layout: a device for the metadata, then zoned ones).  The
 * zone size is the zoned members'; members without zones are presented
 * with it.  Conventional zones must still come first overall.  A command
 * may not span two members (-ZLFS_EBOUNDARY).  n = 1 is zlfs_zdev_open.
 */
int zlfs_zdev_open_multi(const char *const *specs, int n, struct zlfs_zdev **out);
/* The same with open flags (ZLFS_ZDEV_RDONLY), given to every member. */
int zlfs_zdev_open_multi_flags(const char *const *specs, int n, unsigned int flags,
			       struct zlfs_zdev **out);
struct zlfs_zdev_member {
	struct zlfs_zdev *dev;
	uint64_t start, size;   /* bytes, in the combined device */
};
/* The members of dev (itself alone if it is not a multi-device); returns
 * how many there are, fills at most max. */
int zlfs_zdev_members(const struct zlfs_zdev *dev, struct zlfs_zdev_member *m, int max);
const struct zlfs_zdev_geom *zlfs_zdev_geom(const struct zlfs_zdev *dev);
const char *zlfs_zdev_spec(const struct zlfs_zdev *dev);

/* Asynchronous command; 0 if queued (done() will run), else -errno. */
int zlfs_zdev_submit(struct zlfs_zdev *dev, struct zlfs_cmd *cmd);

/* Synchronous helpers (submit and wait). */
int zlfs_zdev_read(struct zlfs_zdev *dev, void *buf, uint64_t len, uint64_t off);
int zlfs_zdev_write(struct zlfs_zdev *dev, const void *buf, uint64_t len, uint64_t off);
int zlfs_zdev_append(struct zlfs_zdev *dev, const void *buf, uint64_t len,
		     uint64_t zone_off, uint64_t *pos);
int zlfs_zdev_flush(struct zlfs_zdev *dev);

/* Report up to *nr zones from zone number first; *nr is set to the count. */
int zlfs_zdev_report(struct zlfs_zdev *dev, uint32_t first, struct zlfs_zone *zones,
		     uint32_t *nr);
/* Zone management on one zone, or on all with ZLFS_ZONE_ALL. */
int zlfs_zdev_zone_mgmt(struct zlfs_zdev *dev, enum zlfs_zone_mgmt op, uint32_t zone);
/*
 * Discard [off, off+len) (logical-block aligned, conventional zones only:
 * a sequential zone is emptied by a reset): the device may drop those
 * blocks, which then read as zeros or as their old content.  Synchronous;
 * no command may be in flight to the range.  -EOPNOTSUPP where the
 * backend or the device cannot discard, -EINVAL for a range that is out
 * of bounds, unaligned or touches a sequential zone.
 */
int zlfs_zdev_discard(struct zlfs_zdev *dev, uint64_t off, uint64_t len);
/*
 * Where the device's bytes [off, off+len) lie in a file the caller may
 * read itself (to splice them to the kernel with no copy here): *fd and
 * *pos.  Only a backend that keeps its data in a file at fixed offsets
 * and has nothing to do on a read offers it (an image with no service
 * model, no read fault or power cut armed, not cut), and only for bytes
 * that read as data: below a sequential zone's write pointer, in one
 * member of a volume.  The range is counted as one read.  -EOPNOTSUPP
 * otherwise, and the caller reads through a command as usual.
 */
int zlfs_zdev_read_fd(struct zlfs_zdev *dev, uint64_t off, uint64_t len, int *fd, uint64_t *pos);

static inline uint32_t zlfs_zdev_zone_of(const struct zlfs_zdev_geom *g, uint64_t off)
{
	return (uint32_t)(off / g->zone_size);
}

/*
 * Create an emulated zoned image (the file and its zone state).  Sizes in
 * bytes; zone_cap 0 means zone_size.  Fails with -EEXIST if it exists and
 * !force.
 */
struct zlfs_image_params {
	uint64_t size, zone_size, zone_cap;
	uint32_t nr_conv, max_open, max_active, lbs;
	bool thick;              /* write every block now (no host allocation later) */
};
int zlfs_image_create(const char *path, const struct zlfs_image_params *p, bool force);

/*
 * Fault injection (emulated devices only; -EOPNOTSUPP elsewhere).
 * Counting starts when the fault is armed: nth = 1 fails the next command.
 */
enum zlfs_fault_kind {
	ZLFS_FAULT_READ = 0,
	ZLFS_FAULT_WRITE,     /* writes and appends */
	ZLFS_FAULT_FLUSH,
	ZLFS_FAULT_NKINDS,
};
int zlfs_zdev_fault_arm(struct zlfs_zdev *dev, enum zlfs_fault_kind kind, uint64_t nth,
			bool persistent);
void zlfs_zdev_fault_clear(struct zlfs_zdev *dev);
/* Make a zone read-only or offline (its write pointer becomes invalid). */
int zlfs_zdev_set_zone_cond(struct zlfs_zdev *dev, uint32_t zone, enum zlfs_zone_cond cond);
/*
 * Power-cut mode.  Once armed, every write keeps what is needed to undo
 * it until a flush covers it.  zlfs_zdev_powercut() then cuts power: each
 * zone keeps a random prefix of its unflushed writes (chosen from seed),
 * the rest is lost, and the device fails every later command with EIO.
 * arm with after_writes > 0 cuts power by itself instead of executing the
 * after_writes-th write from now.
 */
int zlfs_zdev_powercut_arm(struct zlfs_zdev *dev, uint64_t after_writes, uint64_t seed);
int zlfs_zdev_powercut(struct zlfs_zdev *dev);
bool zlfs_zdev_is_dead(struct zlfs_zdev *dev);
/* After a power cut: the device comes back as from a power cycle (open
 * zones closed), keeping only what survived the cut. */
int zlfs_zdev_revive(struct zlfs_zdev *dev);

/* Counters the emulated devices keep (all zero for real devices). */
struct zlfs_zdev_stats {
	uint64_t cmds, reads, writes, flushes;
	uint64_t unaligned, reordered, hibernations, requeues;
	uint64_t injected;
	uint64_t writebehinds;     /* image: host write-backs started ahead of a flush */
	uint64_t host_sync_ns;     /* image: time its flushes took, submission to completion */
	uint64_t inline_cmds;      /* image: commands done on the submitter's thread */
};
void zlfs_zdev_stats(struct zlfs_zdev *dev, struct zlfs_zdev_stats *st);

const char *zlfs_zone_cond_str(uint8_t cond);
const char *zlfs_zdev_kind_str(uint8_t kind);
/* Human text for the zone errors above and ordinary errnos. */
const char *zlfs_zdev_strerror(int err);

/* Why the last failed zlfs_zdev_open / zlfs_image_create failed (per thread). */
const char *zlfs_zdev_errmsg(void);

/* "4K" "64M" "1G" and plain byte counts; 0 or -EINVAL. */
int zlfs_parse_size(const char *s, uint64_t *out);

#endif
