/*
 * sit.c - helpers over SIT validity maps (include/zlfs/f2fs_sit.h): one
 * definition for the filesystem and fsck.zlfs, which must count alike.
 * Pure functions: no state, no locks.
 */
#include <string.h>

#include "zlfs/f2fs_sit.h"

/*
 * Bits set in a 64-bit word, by adding neighbours (pairs, nibbles, bytes):
 * without -mpopcnt __builtin_popcount is a call into libgcc, and the mount
 * of a volume without zones weighs every segment's map (7.8 million at
 * 15 TiB), which made it the mount's largest cost.
 */
static unsigned int weight64(uint64_t w)
{
	w -= (w >> 1) & 0x5555555555555555ull;
	w = (w & 0x3333333333333333ull) + ((w >> 2) & 0x3333333333333333ull);
	w = (w + (w >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (unsigned int)((w * 0x0101010101010101ull) >> 56);
}

_Static_assert(ZF_SIT_VBLOCK_MAP_SIZE % 8 == 0, "the map is read a word at a time");

unsigned int zf_sit_map_weight(const uint8_t *map)
{
	unsigned int n = 0;

	for (int i = 0; i < ZF_SIT_VBLOCK_MAP_SIZE; i += 8) {
		uint64_t w;
		memcpy(&w, map + i, sizeof(w));   /* the count is the same in any byte order */
		if (w)
			n += weight64(w);
	}
	return n;
}
