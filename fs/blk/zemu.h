/*
 * zemu.h - the emulated zoned device shared by mem: and image backends.
 *
 * Locks: zemu.lock guards the zone state (rules), the fault and power-cut
 * state, the per-zone persistence lists and the counters.  It is never
 * held while a command's done() runs, nor while waiting for io_uring.
 */
#ifndef ZLFS_ZEMU_H
#define ZLFS_ZEMU_H

#include <pthread.h>

#include "zdev_int.h"
#include "zrules.h"
#include "svc.h"
#include "uring.h"

/* Undo record of a conventional-zone write not yet covered by a flush. */
struct zundo {
	struct zundo *next;        /* older record */
	uint64_t off, len;
	uint8_t data[];
};

struct zemu_zone {
	/* image: the write pointer whose data has all landed in the file */
	uint64_t persist_wp;
	/* image: write-back of the data below persist_wp was started up to here */
	uint64_t wb_wp;
	/* image: executed writes whose data is in flight, in wp order */
	struct zlfs_cmd *pend_head, *pend_tail;
	/* power cut: what the last completed flush covers */
	uint64_t flushed_wp;
	struct zundo *undo;        /* newest first */
	uint32_t nundo;
	bool pc_full;              /* scratch: full before a power cut / a finish */
};

/* On-disk zone state of an image, in IMAGE.zst (little-endian host only). */
#define ZST_MAGIC "ZLFSZST1"
#define ZST_HDR_SIZE 4096
#define ZST_RDONLY  1u
#define ZST_OFFLINE 2u
struct zst_hdr {
	char magic[8];
	uint32_t version, lbs;
	uint64_t size, zone_size, zone_cap;
	uint32_t nr_zones, nr_conv, max_open, max_active;
	uint32_t flags;            /* ZST_HDR_*; 0 in images made before it existed */
};
/*
 * Thick images: every block written at creation, resets keep them, and
 * the zones' state lives after the device's blocks in IMAGE itself (the
 * array in IMAGE.zst is only its initial copy), so one fdatasync of the
 * image makes data and write pointers durable: a flush costs the host one
 * sync, not two.
 */
#define ZST_HDR_THICK 1u
struct zst_zone {
	uint64_t wp;               /* absolute byte offset; data below it is in the image */
	uint32_t flags;            /* ZST_RDONLY / ZST_OFFLINE */
	uint32_t pad;
};

struct zemu {
	struct zlfs_zdev base;
	pthread_mutex_t lock;
	pthread_cond_t cv;         /* inflight reached 0 */
	struct zrules r;
	struct zlfs_zone *zones;
	struct zemu_zone *zx;
	bool image;
	bool thick;                /* image made --thick: zone resets do not punch holes */
	/* mem store */
	uint8_t *mem;
	size_t mem_len;
	/* image store */
	int fd;
	char *path;
	int stfd;
	void *st;                  /* mmap of the state file */
	size_t st_len;
	struct zst_zone *stz;      /* the persisted zones: in st, or (thick) IMAGE's tail;
				      read through the mapping, written with pwrite */
	int st_err;                /* a zone state write failed: the next flush fails */
	size_t stz_len;            /* thick: length of that mapping of IMAGE */
	struct zuring ur;
	bool have_ur;
	bool wb_on;                /* write-behind (zemu.c); spec option writebehind */
	bool inline_on;            /* the short path (zemu.c); spec option shortpath */
	struct zuring_req wb_req;  /* the write-behind in flight */
	bool wb_busy;
	uint32_t inflight;         /* commands executed whose completion is pending */
	struct svc *svc;
	/* faults */
	uint64_t fault_count[ZLFS_FAULT_NKINDS], fault_nth[ZLFS_FAULT_NKINDS];
	bool fault_pers[ZLFS_FAULT_NKINDS];
	/* power cut */
	bool pc_armed, dead;
	uint64_t pc_after, pc_writes, pc_rng;
	struct zlfs_zdev_stats stats;
};

/* zemu_image.c */
int zimg_map_state(struct zemu *z, const char *path, bool rdwr);
void zimg_unmap_state(struct zemu *z);
void zimg_persist_zone(struct zemu *z, uint32_t zone);
int zimg_sync(struct zemu *z);
/* After the image's own fdatasync (a flush through io_uring): the zone state. */
int zimg_sync_state(struct zemu *z);
int zimg_discard(struct zemu *z, uint64_t off, uint64_t len);

#endif
