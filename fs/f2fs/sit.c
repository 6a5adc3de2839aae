/*
 * sit.c - helpers over SIT validity maps (include/zlfs/f2fs_sit.h): one
 * definition for the filesystem and fsck.zlfs, which must count alike.
 * Pure functions: no state, no locks.
 */
#include "zlfs/f2fs_sit.h"

unsigned int zf_sit_map_weight(const uint8_t *map)
{
	unsigned int n = 0;

	for (int i = 0; i < ZF_SIT_VBLOCK_MAP_SIZE; i++)
		n += (unsigned int)__builtin_popcount(map[i]);
	return n;
}
