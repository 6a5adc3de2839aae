/*
 * compress.c - F2FS compressed clusters (libzlfsfmt): the codec of
 * include/zlfs/f2fs_compress.h over Debian's liblz4, libzstd and liblzo2.
 *
 * Compression gets the kernel's budget: the stream must fit in 2^log - 1
 * blocks less the header, else the cluster saves nothing and is written
 * as it is (return 0).  LZ4 and zstd are asked to stay inside the budget
 * and fail when they cannot; LZO writes into a worst-case buffer and is
 * measured after.  zstd's one-shot call is told the cluster's size, so its
 * frame's window is at most the cluster, as the kernel's reader needs.
 *
 * LZO-RLE (the kernel's LZO "version 1": a 17, 1 header and a zero-run
 * instruction) is beyond liblzo2, so its decoder is here (zf_lzo1x_decode,
 * written from the format's description in the kernel's
 * Documentation/staging/lzo.rst); it also reads a versioned stream stored
 * as plain LZO, as the kernel's decoder does.  Its encoder is liblzo2's
 * LZO1X-1 behind that header, decoded again before it is used: a stream
 * the version-1 reading would take differently (a match the zero-run
 * escape shadows) is not stored compressed.
 *
 * Decompression trusts nothing in the blocks: clen is checked against the
 * blocks given, each library is told both buffers' sizes, and the result
 * must be exactly the cluster.  Work memory is allocated per call; there
 * is no shared state (liblzo2's lzo_init runs once, under pthread_once).
 */
#include <errno.h>
#include <lz4.h>
#include <lz4hc.h>
#include <lzo/lzo1x.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "zlfs/f2fs_compress.h"

static const char *const names[ZF_COMPR_NR] = { "lzo", "lz4", "zstd", "lzo-rle" };

const char *zf_compr_name(unsigned int alg)
{
	return alg < ZF_COMPR_NR ? names[alg] : NULL;
}

bool zf_compr_supported(unsigned int alg, const char **why)
{
	const char *w = NULL;

	if (alg >= ZF_COMPR_NR)
		w = "an algorithm number F2FS does not define";
	if (why)
		*why = w;
	return !w;
}

bool zf_compr_level_ok(unsigned int alg, unsigned int level)
{
	switch (alg) {
	case ZF_COMPR_LZ4:
		return level == 0 || (level >= 3 && level <= 16);
	case ZF_COMPR_ZSTD:
		return level <= 22;
	case ZF_COMPR_LZO:
	case ZF_COMPR_LZORLE:
		return level == 0;
	default:
		return false;
	}
}

uint32_t zf_compr_chksum(const void *stream, size_t clen)
{
	return zf_crc32(ZF_SUPER_MAGIC, stream, clen);
}

static pthread_once_t lzo_once = PTHREAD_ONCE_INIT;
static int lzo_status;

static void lzo_start(void)
{
	lzo_status = lzo_init();
}

static int check_args(unsigned int alg, unsigned int log)
{
	const char *why;

	if (log < ZF_COMPR_LOG_MIN || log > ZF_COMPR_LOG_MAX || alg >= ZF_COMPR_NR)
		return -EINVAL;
	if (!zf_compr_supported(alg, &why))
		return -EOPNOTSUPP;
	if (alg == ZF_COMPR_LZO) {
		pthread_once(&lzo_once, lzo_start);
		if (lzo_status != LZO_E_OK)
			return -ENOMEM;
	}
	return 0;
}

#define NEED_IN(n) do { if ((size_t)(ie - ip) < (size_t)(n)) return -EUCLEAN; } while (0)
#define NEED_OUT(n) do { if ((size_t)(oe - op) < (size_t)(n)) return -EUCLEAN; } while (0)

/* A length's extension: zero bytes add 255 each, then a byte that is not 0. */
static int ext_len(const uint8_t **ipp, const uint8_t *ie, size_t base, size_t limit, size_t *len)
{
	const uint8_t *ip = *ipp;
	size_t n = base;

	for (;;) {
		NEED_IN(1);
		if (*ip) {
			n += *ip++;
			break;
		}
		ip++;
		if ((n += 255) > limit)
			return -EUCLEAN;
	}
	*ipp = ip;
	*len = n;
	return 0;
}

int zf_lzo1x_decode(const void *in, size_t in_len, void *out, size_t out_cap, size_t *out_len)
{
	const uint8_t *ip = in, *ie = ip + in_len;
	uint8_t *o0 = out, *op = o0, *oe = o0 + out_cap;
	unsigned int version = 0, state = 0;
	size_t len, dist, next;

	if (in_len >= 5 && ip[0] == 17) {
		version = ip[1];
		ip += 2;
		if (version > 1)
			return -EUCLEAN;
	}
	NEED_IN(1);
	if (*ip >= 18) {             /* the first byte: a literal run */
		len = (size_t)(*ip++ - 17);
		NEED_IN(len);
		NEED_OUT(len);
		memcpy(op, ip, len);
		op += len;
		ip += len;
		state = len < 4 ? (unsigned int)len : 4;
	}
	for (;;) {
		NEED_IN(1);
		unsigned int t = *ip++;
		if (t < 16 && state == 0) {          /* 0000LLLL: 4 or more literals */
			len = t;
			if (!len && ext_len(&ip, ie, 15, out_cap, &len))
				return -EUCLEAN;
			len += 3;
			NEED_IN(len);
			NEED_OUT(len);
			memcpy(op, ip, len);
			op += len;
			ip += len;
			state = 4;
			continue;
		}
		if (t < 16) {                        /* 0000DDSS + H: 2 bytes near, or 3 at 2 kB */
			NEED_IN(1);
			size_t h = *ip++;
			len = state == 4 ? 3 : 2;
			dist = (h << 2) + ((t >> 2) & 3) + (state == 4 ? 2049 : 1);
			next = t & 3;
		} else if (t < 32) {                 /* 0001HLLL + LE16: far, the end, or zeros */
			NEED_IN(2);
			unsigned int v = ip[0] | (unsigned int)ip[1] << 8;
			if (version == 1 && (t & 0xf8) == 0x18 && (v & 0xfffc) == 0xfffc) {
				NEED_IN(3);          /* a run of zeros (LZO-RLE) */
				len = (((size_t)ip[2] << 3) | (t & 7)) + 4;
				next = v & 3;
				ip += 3;
				NEED_OUT(len);
				memset(op, 0, len);
				op += len;
				goto literals;
			}
			len = t & 7;
			if (!len && ext_len(&ip, ie, 7, out_cap, &len))
				return -EUCLEAN;
			len += 2;
			NEED_IN(2);
			v = ip[0] | (unsigned int)ip[1] << 8;
			ip += 2;
			dist = 16384 + ((size_t)(t & 8) << 11) + (v >> 2);
			next = v & 3;
			if (dist == 16384) {         /* the end: every input byte used */
				if (ip != ie)
					return -EUCLEAN;
				*out_len = (size_t)(op - o0);
				return 0;
			}
		} else if (t < 64) {                 /* 001LLLLL + LE16: within 16 kB */
			len = t & 31;
			if (!len && ext_len(&ip, ie, 31, out_cap, &len))
				return -EUCLEAN;
			len += 2;
			NEED_IN(2);
			unsigned int v = ip[0] | (unsigned int)ip[1] << 8;
			ip += 2;
			dist = (v >> 2) + 1;
			next = v & 3;
		} else {                             /* 01LDDDSS or 1LLDDDSS + H: within 2 kB */
			NEED_IN(1);
			size_t h = *ip++;
			len = t < 128 ? 3 + ((t >> 5) & 1) : 5 + ((t >> 5) & 3);
			dist = (h << 3) + ((t >> 2) & 7) + 1;
			next = t & 3;
		}
		if (dist > (size_t)(op - o0))
			return -EUCLEAN;
		NEED_OUT(len);
		for (size_t k = 0; k < len; k++, op++)   /* may overlap itself: byte by byte */
			*op = op[-(ptrdiff_t)dist];
literals:
		NEED_IN(next);
		NEED_OUT(next);
		memcpy(op, ip, next);
		op += next;
		ip += next;
		state = (unsigned int)next;
	}
}

/* The stream into dst (cap bytes): its length, 0 when it does not fit, -errno. */
static long stream_compress(unsigned int alg, unsigned int level, const uint8_t *src, size_t len,
			    uint8_t *dst, size_t cap)
{
	if (alg == ZF_COMPR_LZ4) {
		int n = level ? LZ4_compress_HC((const char *)src, (char *)dst, (int)len, (int)cap,
						(int)level)
			      : LZ4_compress_default((const char *)src, (char *)dst, (int)len, (int)cap);
		return n > 0 ? n : 0;
	}
	if (alg == ZF_COMPR_ZSTD) {
		/* the kernel's level 0 is its default, 1 */
		size_t n = ZSTD_compress(dst, cap, src, len, level ? (int)level : 1);
		if (ZSTD_isError(n))
			return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? 0 : -ENOMEM;
		return (long)n;
	}
	/*
	 * LZO: into a worst-case buffer, then measured against the budget.
	 * LZO-RLE: the same stream behind the version-1 header, kept only if
	 * version 1's reading of it gives the input back.
	 */
	size_t hdr = alg == ZF_COMPR_LZORLE ? 2 : 0, worst = len + len / 16 + 64 + 3 + hdr;
	uint8_t *tmp = malloc(worst), *wrk = malloc(LZO1X_1_MEM_COMPRESS);
	uint8_t *chk = hdr ? malloc(len) : NULL;
	lzo_uint n = worst - hdr;
	long ret = -ENOMEM;
	if (tmp && wrk && (!hdr || chk) &&
	    lzo1x_1_compress(src, len, tmp + hdr, &n, wrk) == LZO_E_OK) {
		size_t got = 0;
		ret = 0;
		if (hdr) {
			tmp[0] = 17;
			tmp[1] = 1;
		}
		if (hdr && (zf_lzo1x_decode(tmp, n + hdr, chk, len, &got) || got != len ||
			    memcmp(chk, src, len)))
			n = worst;           /* not a version-1 stream: not stored compressed */
		if (n + hdr <= cap) {
			memcpy(dst, tmp, n + hdr);
			ret = (long)(n + hdr);
		}
	}
	free(tmp);
	free(wrk);
	free(chk);
	return ret;
}

int zf_compr_cluster(unsigned int alg, unsigned int level, bool chksum, unsigned int log,
		     const void *src, void *out)
{
	size_t nblk = (size_t)1 << log, len = nblk * ZF_BLKSIZE;
	size_t cap = (nblk - 1) * ZF_BLKSIZE - ZF_COMPR_HEADER_SIZE;
	uint8_t *o = out;
	int ret;

	if ((ret = check_args(alg, log)))
		return ret;
	if (!zf_compr_level_ok(alg, level))
		return -EINVAL;
	long clen = stream_compress(alg, level, src, len, o + ZF_COMPR_HEADER_SIZE, cap);
	if (clen <= 0)
		return (int)clen;           /* 0: saves nothing, written as it is */
	struct zf_compr_header h = {
		.clen = zf_cpu_to_le32((uint32_t)clen),
		.chksum = zf_cpu_to_le32(chksum ? zf_compr_chksum(o + ZF_COMPR_HEADER_SIZE,
								  (size_t)clen) : 0),
	};
	memcpy(o, &h, sizeof(h));
	size_t used = ZF_COMPR_HEADER_SIZE + (size_t)clen;
	size_t k = (used + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
	memset(o + used, 0, k * ZF_BLKSIZE - used);
	return (int)k;
}

static int damaged(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -EUCLEAN;
}

int zf_decompr_cluster(unsigned int alg, bool chksum, unsigned int log, const void *in,
		       unsigned int k, void *out, char *why, size_t whylen)
{
	size_t nblk = (size_t)1 << log, len = nblk * ZF_BLKSIZE;
	const uint8_t *i = in;
	struct zf_compr_header h;
	int ret;

	if ((ret = check_args(alg, log)))
		return ret;
	if (!k || k >= nblk)
		return damaged(why, whylen, "%u compressed blocks in a cluster of %zu", k, nblk);
	memcpy(&h, i, sizeof(h));
	size_t clen = zf_le32_to_cpu(h.clen);
	if (!clen || clen > (size_t)k * ZF_BLKSIZE - ZF_COMPR_HEADER_SIZE)
		return damaged(why, whylen, "compressed length %zu does not fit %u blocks", clen, k);
	const uint8_t *s = i + ZF_COMPR_HEADER_SIZE;
	size_t got = 0;
	if (alg == ZF_COMPR_LZ4) {
		int n = LZ4_decompress_safe((const char *)s, out, (int)clen, (int)len);
		got = n > 0 ? (size_t)n : 0;
	} else if (alg == ZF_COMPR_ZSTD) {
		size_t n = ZSTD_decompress(out, len, s, clen);
		got = ZSTD_isError(n) ? 0 : n;
	} else if (alg == ZF_COMPR_LZORLE || (clen >= 5 && s[0] == 17)) {
		/* version 1, or a versioned stream under plain LZO (the kernel reads both) */
		if (zf_lzo1x_decode(s, clen, out, len, &got))
			got = 0;
	} else {
		lzo_uint n = len;
		got = lzo1x_decompress_safe(s, clen, out, &n, NULL) == LZO_E_OK ? n : 0;
	}
	if (got != len)
		return damaged(why, whylen, "the %s stream of %zu bytes does not decode to the "
			       "cluster's %zu bytes", names[alg], clen, len);
	if (chksum && zf_le32_to_cpu(h.chksum) != zf_compr_chksum(s, clen)) {
		if (why && whylen)
			snprintf(why, whylen, "checksum %08x, the stream's is %08x",
				 zf_le32_to_cpu(h.chksum), zf_compr_chksum(s, clen));
		return -EBADMSG;
	}
	return 0;
}
