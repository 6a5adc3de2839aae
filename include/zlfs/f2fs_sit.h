/*
 * f2fs_sit.h - helpers over SIT entries' validity maps, shared by the
 * filesystem (fs/segment.c) and fsck.zlfs (fsck/verify.c); in libzlfsfmt
 * (fs/f2fs/sit.c).  Pure functions: no state, no locks.
 */
#ifndef ZLFS_F2FS_SIT_H
#define ZLFS_F2FS_SIT_H

#include <stdint.h>

#include "zlfs/f2fs_format.h"

/* Bits set in a segment's validity map (ZF_SIT_VBLOCK_MAP_SIZE bytes). */
unsigned int zf_sit_map_weight(const uint8_t *map);

#endif
