/*
 * hash.c - the F2FS dentry name hash (libzlfsfmt).
 *
 * F2FS places a name in a directory by a 32-bit hash: the name is cut into
 * 16-byte chunks, each chunk is packed into four 32-bit words (big-endian
 * within a word, the unused tail filled with a pad byte made from the
 * remaining length), and the words are mixed into a 4-word state with 16
 * rounds of TEA.  The first state word is the hash.  '.' and '..' are not
 * hashed: they are 0.  The kernel (fs/f2fs/hash.c) and fsck.f2fs must agree
 * with this to the bit, or fsck reports every dentry as misplaced.
 */
#include "zlfs/f2fs_format.h"

#define TEA_DELTA  0x9E3779B9u
#define TEA_ROUNDS 16

/* Mix one 16-byte chunk (as four words) into the first two state words. */
static void tea_mix(uint32_t st[4], const uint32_t in[4])
{
	uint32_t x = st[0], y = st[1], sum = 0;

	for (int r = 0; r < TEA_ROUNDS; r++) {
		sum += TEA_DELTA;
		x += ((y << 4) + in[0]) ^ (y + sum) ^ ((y >> 5) + in[1]);
		y += ((x << 4) + in[2]) ^ (x + sum) ^ ((x >> 5) + in[3]);
	}
	st[0] += x;
	st[1] += y;
}

/*
 * Pack up to 16 bytes of name into four words.  `left` is how much of the
 * name remains from p on (it may exceed 16); it also seeds the pad, so two
 * names sharing a prefix still differ in every chunk.
 */
static void pack_chunk(const uint8_t *p, size_t left, uint32_t w[4])
{
	uint32_t pad = (uint32_t)left | ((uint32_t)left << 8);
	size_t n = left < 16 ? left : 16;
	size_t i;

	pad |= pad << 16;
	for (int k = 0; k < 4; k++)
		w[k] = pad;
	for (i = 0; i < n; i++) {
		uint32_t *word = &w[i / 4];
		if (i % 4 == 0)
			*word = pad;
		*word = (*word << 8) + p[i];
	}
}

uint32_t zf_dentry_hash(const uint8_t *name, size_t len)
{
	uint32_t st[4] = { 0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u };
	uint32_t w[4];

	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return ZF_DOT_HASH;
	for (;;) {
		pack_chunk(name, len, w);
		tea_mix(st, w);
		if (len <= 16)
			break;
		name += 16;
		len -= 16;
	}
	return st[0];
}
