/*
 * test_compress.c - the compressed-cluster codec (fs/f2fs/compress.c,
 * include/zlfs/f2fs_compress.h), against the format the kernel's f2fs
 * writes (docs/f2fs-compression.md).
 *
 * Covers, for LZO, LZ4 (and LZ4HC), zstd, LZO-RLE and every cluster size 4..256
 * blocks: text-like data compresses into k < 2^log blocks whose first 24
 * bytes are the header (clen, the F2FS crc32 of the stream when asked, 16
 * zero bytes), the rest of the last block zero, k = ceil((clen + 24) /
 * 4096); it decompresses to the same bytes; random data saves no block and
 * is left to be written as it is (0); the budget rule is the kernel's
 * (compression must save a whole block).  Damage: a clen of 0 or past the
 * blocks, a k out of range, a changed stream byte, a stream cut short are
 * EUCLEAN with a reason, never a crash (the unit tests run under ASan); a
 * wrong checksum is EBADMSG with the data decoded; levels as the kernel
 * allows them.  The LZO1X decoder written here (for LZO-RLE, which liblzo2
 * cannot read): liblzo2's streams decode to their input, hand-made
 * version-1 streams with runs of zeros (4 and 2051 bytes, with trailing
 * literals) decode as the format says, a versioned stream under plain LZO
 * is read as the kernel reads it, and damaged or random input is an error
 * or bytes, never a read or write outside the buffers.
 */
#include <errno.h>
#include <lz4.h>
#include <lzo/lzo1x.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "testutil.h"
#include "zlfs/f2fs_format.h"
#include "zlfs/f2fs_compress.h"

static const unsigned int algs[] = { ZF_COMPR_LZO, ZF_COMPR_LZ4, ZF_COMPR_ZSTD, ZF_COMPR_LZORLE };
#define NALGS 4

/* Text-like bytes: words from a small vocabulary, so every compressor saves a lot. */
static void text(uint8_t *buf, size_t len, unsigned int seed)
{
	static const char *const words[] = { "zone ", "write ", "pointer ", "log ", "cluster ",
					     "f2fs ", "checkpoint ", "node ", "\n" };
	size_t i = 0;
	uint32_t x = seed * 2654435761u + 1;

	while (i < len) {
		x = x * 1103515245u + 12345u;
		const char *w = words[(x >> 16) % 9];
		for (size_t k = 0; w[k] && i < len; k++)
			buf[i++] = (uint8_t)w[k];
	}
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

START_TEST(test_round_trip)
{
	unsigned int alg = algs[_i % NALGS], log = ZF_COMPR_LOG_MIN + (unsigned int)_i / NALGS;
	size_t n = (size_t)1 << log, len = n * ZF_BLKSIZE;
	uint8_t *src = malloc(len), *out = malloc(len), *back = malloc(len);
	char why[200];

	ck_assert_ptr_nonnull(src);
	for (int chk = 0; chk < 2; chk++) {
		text(src, len, log + 7 * alg);
		memset(out, 0xa5, len);
		int k = zf_compr_cluster(alg, 0, chk, log, src, out);
		ck_assert_msg(k >= 1 && (size_t)k < n, "%s, %zu blocks: k = %d", zf_compr_name(alg), n, k);
		uint32_t clen = le32(out);
		ck_assert_uint_eq((uint32_t)k, (clen + ZF_COMPR_HEADER_SIZE + ZF_BLKSIZE - 1) / ZF_BLKSIZE);
		ck_assert_uint_eq(le32(out + 4), chk ? zf_crc32(ZF_SUPER_MAGIC, out + 24, clen) : 0);
		for (int w = 8; w < 24; w++)
			ck_assert_uint_eq(out[w], 0);
		for (size_t p = 24 + clen; p < (size_t)k * ZF_BLKSIZE; p++)
			ck_assert_msg(out[p] == 0, "padding byte %zu", p);
		memset(back, 0, len);
		ck_assert_int_eq(zf_decompr_cluster(alg, chk, log, out, (unsigned int)k, back, why,
						    sizeof(why)), 0);
		ck_assert(!memcmp(src, back, len));
		/* handed more blocks than the stream needs (the kernel reads them the same) */
		if ((size_t)k + 1 < n)
			ck_assert_int_eq(zf_decompr_cluster(alg, chk, log, out, (unsigned int)k + 1, back,
							    why, sizeof(why)), 0);
	}
	/* random bytes save nothing: left to be written as they are */
	tu_fill(src, len, 5 + _i);
	ck_assert_int_eq(zf_compr_cluster(alg, 0, true, log, src, out), 0);
	free(src);
	free(out);
	free(back);
}
END_TEST

/* The budget: a cluster whose stream would need all 2^log blocks less the header is not compressed. */
START_TEST(test_budget)
{
	const unsigned int log = 2;
	size_t len = 4 * ZF_BLKSIZE;
	uint8_t *src = malloc(len), *out = malloc(len), *back = malloc(len);
	char why[200];

	/* three blocks of random bytes and one of zeros: about 3 blocks of stream, must not fit */
	tu_fill(src, len, 9);
	memset(src + 3 * ZF_BLKSIZE, 0, ZF_BLKSIZE);
	for (unsigned int a = 0; a < NALGS; a++)
		ck_assert_int_eq(zf_compr_cluster(algs[a], 0, false, log, src, out), 0);
	/* two blocks random, two of zeros: fits in three blocks with the header */
	memset(src + 2 * ZF_BLKSIZE, 0, 2 * ZF_BLKSIZE);
	for (unsigned int a = 0; a < NALGS; a++) {
		int k = zf_compr_cluster(algs[a], 0, false, log, src, out);
		ck_assert_int_eq(k, 3);
		ck_assert_int_eq(zf_decompr_cluster(algs[a], false, log, out, 3, back, why, sizeof(why)), 0);
		ck_assert(!memcmp(src, back, len));
	}
	free(src);
	free(out);
	free(back);
}
END_TEST

START_TEST(test_damage)
{
	unsigned int alg = algs[_i], log = 4;
	size_t len = 16 * ZF_BLKSIZE;
	uint8_t *src = malloc(len), *out = malloc(len), *back = malloc(len), *bad = malloc(len);
	char why[200];

	text(src, len, 3);
	int k = zf_compr_cluster(alg, 0, true, log, src, out);
	ck_assert_int_gt(k, 0);
	uint32_t clen = le32(out);
	/* clen 0, clen past the blocks, no blocks, a whole cluster of them */
	memcpy(bad, out, len);
	memset(bad, 0, 4);
	ck_assert_int_eq(zf_decompr_cluster(alg, true, log, bad, (unsigned int)k, back, why, sizeof(why)),
			 -EUCLEAN);
	uint32_t past = (uint32_t)k * ZF_BLKSIZE - ZF_COMPR_HEADER_SIZE + 1;
	memcpy(bad, &past, 4);
	ck_assert_int_eq(zf_decompr_cluster(alg, true, log, bad, (unsigned int)k, back, why, sizeof(why)),
			 -EUCLEAN);
	ck_assert(strstr(why, "does not fit"));
	ck_assert_int_eq(zf_decompr_cluster(alg, true, log, out, 0, back, why, sizeof(why)), -EUCLEAN);
	ck_assert_int_eq(zf_decompr_cluster(alg, true, log, out, 16, back, why, sizeof(why)), -EUCLEAN);
	/* the stream cut short by one byte: it no longer decodes to the whole cluster */
	memcpy(bad, out, len);
	uint32_t shorter = clen - 1;
	memcpy(bad, &shorter, 4);
	ck_assert_int_eq(zf_decompr_cluster(alg, false, log, bad, (unsigned int)k, back, why, sizeof(why)),
			 -EUCLEAN);
	/* every single byte of the stream changed: an error or other bytes, never a crash */
	for (uint32_t p = 0; p < clen; p += 7) {
		memcpy(bad, out, (size_t)k * ZF_BLKSIZE);
		bad[24 + p] ^= 0x5a;
		int r = zf_decompr_cluster(alg, false, log, bad, (unsigned int)k, back, why, sizeof(why));
		ck_assert_msg(r == 0 || r == -EUCLEAN, "byte %u: %d", p, r);
	}
	/* a wrong checksum: EBADMSG, the data still decoded (the kernel only warns) */
	memcpy(bad, out, len);
	bad[4] ^= 1;
	memset(back, 0, len);
	ck_assert_int_eq(zf_decompr_cluster(alg, true, log, bad, (unsigned int)k, back, why, sizeof(why)),
			 -EBADMSG);
	ck_assert(!memcmp(src, back, len));
	ck_assert_int_eq(zf_decompr_cluster(alg, false, log, bad, (unsigned int)k, back, why, sizeof(why)),
			 0);
	free(src);
	free(out);
	free(back);
	free(bad);
}
END_TEST

/* What the kernel writes is read: a raw LZ4 block and a streaming zstd frame without a size. */
START_TEST(test_kernel_streams)
{
	const unsigned int log = 2;
	size_t len = 4 * ZF_BLKSIZE;
	uint8_t *src = malloc(len), *blk = calloc(4, ZF_BLKSIZE), *back = malloc(len);
	char why[200];

	text(src, len, 11);
	int n = LZ4_compress_default((const char *)src, (char *)blk + 24, (int)len, 3 * ZF_BLKSIZE - 24);
	ck_assert_int_gt(n, 0);
	uint32_t c = (uint32_t)n;
	memcpy(blk, &c, 4);
	ck_assert_int_eq(zf_decompr_cluster(ZF_COMPR_LZ4, false, log, blk, 3, back, why, sizeof(why)), 0);
	ck_assert(!memcmp(src, back, len));
	/* zstd as the kernel streams it: no content size in the frame, window = the cluster */
	memset(blk, 0, 4 * ZF_BLKSIZE);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ck_assert_ptr_nonnull(cc);
	ck_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, 14)));
	ck_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0)));
	ZSTD_inBuffer ib = { src, len, 0 };
	ZSTD_outBuffer ob = { blk + 24, 3 * ZF_BLKSIZE - 24, 0 };
	ck_assert_uint_eq(ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_end), 0);
	ZSTD_freeCCtx(cc);
	c = (uint32_t)ob.pos;
	memcpy(blk, &c, 4);
	ck_assert_int_eq(zf_decompr_cluster(ZF_COMPR_ZSTD, false, log, blk, 3, back, why, sizeof(why)), 0);
	ck_assert(!memcmp(src, back, len));
	free(src);
	free(blk);
	free(back);
}
END_TEST

START_TEST(test_names_levels)
{
	const char *why = NULL;

	ck_assert_str_eq(zf_compr_name(ZF_COMPR_LZO), "lzo");
	ck_assert_str_eq(zf_compr_name(ZF_COMPR_LZ4), "lz4");
	ck_assert_str_eq(zf_compr_name(ZF_COMPR_ZSTD), "zstd");
	ck_assert_str_eq(zf_compr_name(ZF_COMPR_LZORLE), "lzo-rle");
	ck_assert_ptr_null(zf_compr_name(4));
	ck_assert(zf_compr_supported(ZF_COMPR_ZSTD, &why) && !why);
	ck_assert(zf_compr_supported(ZF_COMPR_LZORLE, &why) && !why);
	ck_assert(!zf_compr_supported(9, &why) && why);
	uint8_t buf[4 * ZF_BLKSIZE] = { 0 }, out[4 * ZF_BLKSIZE];
	ck_assert_int_eq(zf_compr_cluster(9, 0, false, 2, buf, out), -EINVAL);
	ck_assert_int_eq(zf_compr_cluster(ZF_COMPR_LZ4, 0, false, 1, buf, out), -EINVAL);
	ck_assert_int_eq(zf_compr_cluster(ZF_COMPR_LZ4, 0, false, 9, buf, out), -EINVAL);
	/* levels: LZ4 0 or 3..16 (LZ4HC), zstd up to 22, LZO none */
	ck_assert(zf_compr_level_ok(ZF_COMPR_LZ4, 0) && !zf_compr_level_ok(ZF_COMPR_LZ4, 2) &&
		  zf_compr_level_ok(ZF_COMPR_LZ4, 16) && !zf_compr_level_ok(ZF_COMPR_LZ4, 17));
	ck_assert(zf_compr_level_ok(ZF_COMPR_ZSTD, 22) && !zf_compr_level_ok(ZF_COMPR_ZSTD, 23));
	ck_assert(zf_compr_level_ok(ZF_COMPR_LZO, 0) && !zf_compr_level_ok(ZF_COMPR_LZO, 1));
	ck_assert_int_eq(zf_compr_cluster(ZF_COMPR_LZ4, 2, false, 2, buf, out), -EINVAL);
	/* LZ4HC and a zstd level: the same format, read back */
	char why2[100];
	uint8_t back[4 * ZF_BLKSIZE];
	int k = zf_compr_cluster(ZF_COMPR_LZ4, 9, false, 2, buf, out);
	ck_assert_int_eq(k, 1);
	ck_assert_int_eq(zf_decompr_cluster(ZF_COMPR_LZ4, false, 2, out, 1, back, why2, sizeof(why2)), 0);
	k = zf_compr_cluster(ZF_COMPR_ZSTD, 19, false, 2, buf, out);
	ck_assert_int_eq(k, 1);
	ck_assert_int_eq(zf_decompr_cluster(ZF_COMPR_ZSTD, false, 2, out, 1, back, why2, sizeof(why2)), 0);
	ck_assert(!memcmp(buf, back, sizeof(buf)));
}
END_TEST

/* liblzo2's LZO1X-1 streams read back by the decoder written here */
START_TEST(test_lzo_decoder_v0)
{
	static uint8_t src[1 << 18], enc[(1 << 18) + (1 << 14) + 67], back[1 << 18];
	static lzo_align_t wrk[(LZO1X_1_MEM_COMPRESS + sizeof(lzo_align_t) - 1) / sizeof(lzo_align_t)];
	size_t sizes[] = { 1, 3, 4, 17, 100, 4096, 16384, 65536, sizeof(src) };

	ck_assert_int_eq(lzo_init(), LZO_E_OK);
	for (int seed = 0; seed < 6; seed++)
		for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
			size_t len = sizes[z], got = 0;
			/* text, random, runs, and a mix with far repeats (long distances) */
			if (seed % 3 == 0) {
				text(src, len, (unsigned int)seed);
			} else if (seed % 3 == 1) {
				tu_fill(src, len, (uint64_t)seed);
			} else {
				tu_fill(src, len, (uint64_t)seed);
				for (size_t p = 0; p + 64 < len; p += 700)
					memset(src + p, p & 1 ? 0 : 'a', 40);
				if (len > 40000)
					memcpy(src + len - 20000, src + 1000, 15000);
			}
			lzo_uint n = sizeof(enc);
			ck_assert_int_eq(lzo1x_1_compress(src, len, enc, &n, wrk), LZO_E_OK);
			ck_assert_int_eq(zf_lzo1x_decode(enc, n, back, len, &got), 0);
			ck_assert_uint_eq(got, len);
			ck_assert(!memcmp(src, back, len));
			/* one byte short of room, one byte of stream missing, one byte too many */
			if (len > 1)
				ck_assert_int_eq(zf_lzo1x_decode(enc, n, back, len - 1, &got), -EUCLEAN);
			ck_assert_int_eq(zf_lzo1x_decode(enc, n - 1, back, len, &got), -EUCLEAN);
			enc[n] = 0;
			ck_assert_int_eq(zf_lzo1x_decode(enc, n + 1, back, len, &got), -EUCLEAN);
		}
}
END_TEST

/* Version 1 as the format describes it: 17, 1, literals, runs of zeros, the end marker */
START_TEST(test_lzo_decoder_rle)
{
	uint8_t back[4096];
	size_t got;
	/* "ABCD", 4 zeros, end */
	const uint8_t a[] = { 17, 1, 21, 'A', 'B', 'C', 'D', 0x18, 0xfc, 0xff, 0x00, 0x11, 0, 0 };
	ck_assert_int_eq(zf_lzo1x_decode(a, sizeof(a), back, sizeof(back), &got), 0);
	ck_assert_uint_eq(got, 8);
	ck_assert(!memcmp(back, "ABCD\0\0\0\0", 8));
	/* "AB", 2051 zeros (L = 2047: 7 in the opcode, 255 in the fourth byte), two literals, end */
	const uint8_t b[] = { 17, 1, 19, 'A', 'B', 0x1f, 0xfe, 0xff, 0xff, 'x', 'y', 0x11, 0, 0 };
	ck_assert_int_eq(zf_lzo1x_decode(b, sizeof(b), back, sizeof(back), &got), 0);
	ck_assert_uint_eq(got, 2 + 2051 + 2);
	ck_assert(back[0] == 'A' && back[1] == 'B' && back[2053] == 'x' && back[2054] == 'y');
	for (int i = 2; i < 2053; i++)
		ck_assert_uint_eq(back[i], 0);
	/* the same run with too little room: an error */
	ck_assert_int_eq(zf_lzo1x_decode(b, sizeof(b), back, 2000, &got), -EUCLEAN);
	/* version 0 reads that escape as a far copy from before the start: an error */
	uint8_t c[sizeof(a)];
	memcpy(c, a, sizeof(a));
	c[1] = 0;
	ck_assert_int_eq(zf_lzo1x_decode(c, sizeof(c), back, sizeof(back), &got), -EUCLEAN);
	/* a version past 1 */
	c[1] = 2;
	ck_assert_int_eq(zf_lzo1x_decode(c, sizeof(c), back, sizeof(back), &got), -EUCLEAN);
	/* a versioned stream stored as plain LZO is read as the kernel reads it */
	uint8_t blk[4 * ZF_BLKSIZE] = { 0 }, out[4 * ZF_BLKSIZE];
	char why[100];
	const uint8_t d[] = { 17, 1, 21, 'A', 'B', 'C', 'D', 0x1f, 0xfc, 0xff, 0xff, 0x11, 0, 0 };
	/* 4 + 2051 zeros is not a cluster: a cluster of them ends the stream short */
	uint32_t clen = sizeof(d);
	memcpy(blk, &clen, 4);
	memcpy(blk + 24, d, sizeof(d));
	ck_assert_int_eq(zf_decompr_cluster(ZF_COMPR_LZO, false, 2, blk, 1, out, why, sizeof(why)),
			 -EUCLEAN);
	ck_assert(strstr(why, "does not decode"));
	/* random input: an error or bytes, never outside the buffers (ASan watches) */
	static uint8_t junk[512];
	for (int seed = 0; seed < 3000; seed++) {
		tu_fill(junk, sizeof(junk), (uint64_t)seed + 100);
		junk[0] = seed & 1 ? 17 : junk[0];
		junk[1] = seed & 2 ? 1 : junk[1];
		int r = zf_lzo1x_decode(junk, sizeof(junk), back, sizeof(back), &got);
		ck_assert(r == 0 || r == -EUCLEAN);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compress");
	TCase *tc = tcase_create("codec");

	tcase_add_loop_test(tc, test_round_trip, 0, NALGS * (ZF_COMPR_LOG_MAX - ZF_COMPR_LOG_MIN + 1));
	tcase_add_test(tc, test_budget);
	tcase_add_loop_test(tc, test_damage, 0, NALGS);
	tcase_add_test(tc, test_lzo_decoder_v0);
	tcase_add_test(tc, test_lzo_decoder_rle);
	tcase_add_test(tc, test_kernel_streams);
	tcase_add_test(tc, test_names_levels);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
