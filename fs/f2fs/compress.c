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
	else if (alg == ZF_COMPR_LZORLE)
		w = "LZO-RLE has no codec in zlfs yet (liblzo2 cannot read it)";
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

	if (log < ZF_COMPR_MIN_LOG || log > ZF_COMPR_MAX_LOG || alg >= ZF_COMPR_NR)
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
	/* LZO: into a worst-case buffer, then measured against the budget */
	size_t worst = len + len / 16 + 64 + 3;
	uint8_t *tmp = malloc(worst), *wrk = malloc(LZO1X_1_MEM_COMPRESS);
	lzo_uint n = worst;
	long ret = -ENOMEM;
	if (tmp && wrk && lzo1x_1_compress(src, len, tmp, &n, wrk) == LZO_E_OK) {
		ret = 0;
		if (n <= cap) {
			memcpy(dst, tmp, n);
			ret = (long)n;
		}
	}
	free(tmp);
	free(wrk);
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
