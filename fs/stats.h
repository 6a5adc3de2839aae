/*
 * stats.h - what stats.c offers the other files: the text of /.zlfs/status and /.zlfs/zones (malloc()ed).
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_STATS_H
#define ZLFS_FS_STATS_H

#include "zlfs.h"

/* How many requests of one FUSE opcode were served (fuse_ops.c counts them). */
struct zlfs_req_count {
	const char *op;          /* the opcode's name: LOOKUP, GETATTR, ... */
	uint64_t n;
};
/*
 * The status text; the FUSE layer hands down its own key=value lines
 * (extra, put after the rest) and its request counts (nreqs of them).
 */
int zlfs_stats_status(struct zlfs_sb *sbi, const char *extra, const struct zlfs_req_count *reqs,
		      size_t nreqs, char **out, size_t *len);
int zlfs_stats_zones(struct zlfs_sb *sbi, char **out, size_t *len);

#endif
