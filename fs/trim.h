/*
 * trim.h - what trim.c offers the other files: FITRIM.
 * The layer list and the lock order are in zlfs.h.
 */
#ifndef ZLFS_FS_TRIM_H
#define ZLFS_FS_TRIM_H

#include "zlfs.h"

/*
 * Trim the free sections wholly inside [start, start+len) bytes of the
 * volume (sbi->lock exclusive): zone resets, discards where conventional.
 * *trimmed: bytes of free space covered.  -EINVAL for a start past the end
 * or a length under a block; -EOPNOTSUPP when the device cannot discard.
 */
int zlfs_trim(struct zlfs_sb *sbi, uint64_t start, uint64_t len, uint64_t minlen,
	      uint64_t *trimmed);

#endif
