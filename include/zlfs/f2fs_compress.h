/*
 * f2fs_compress.h - F2FS compressed clusters: the constants of the format
 * and the codec that turns a cluster's bytes into its compressed blocks and
 * back (fs/f2fs/compress.c, in the format library: the filesystem, fsck
 * and the tests use it).  docs/f2fs-compression.md describes the format and
 * the kernel's rules this follows.
 *
 * A cluster is 2^log blocks (log 2..8).  Compressed, its first slot holds
 * ZF_COMPRESS_ADDR and the next k slots (1 <= k < 2^log) hold a 24-byte
 * header (the stream's length clen, a checksum, zeros) followed by the
 * stream, padded with zeros to whole blocks.  A cluster is stored
 * compressed only when header and stream fit in 2^log - 1 blocks: it must
 * save at least one block (the kernel's f2fs_compress_pages).
 *
 * The streams are the kernel's, made and read by Debian's libraries: LZ4
 * raw blocks (liblz4; LZ4HC for levels 3..16), one zstd frame whose window
 * is at most the cluster (libzstd), LZO1X-1 (liblzo2), and LZO-RLE (the
 * kernel's LZO with a version byte and zero runs, which liblzo2 cannot
 * read: zf_lzo1x_decode reads it, its streams are liblzo2's behind the
 * header, checked by decoding them again).
 *
 * No state is kept between calls; every function may run in any thread.
 */
#ifndef ZLFS_F2FS_COMPRESS_H
#define ZLFS_F2FS_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zlfs/f2fs_format.h"

/* i_compress_algorithm */
enum zf_compr_alg {
	ZF_COMPR_LZO = 0,
	ZF_COMPR_LZ4 = 1,
	ZF_COMPR_ZSTD = 2,
	ZF_COMPR_LZORLE = 3,
	ZF_COMPR_NR
};

/* i_log_cluster_size: ZF_COMPR_LOG_MIN..ZF_COMPR_LOG_MAX (f2fs_format.h) */
/* i_compress_flag: bit 0 the checksum, bits 8..15 the level */
#define ZF_COMPR_FLAG_CHKSUM  0x0001u
#define ZF_COMPR_LEVEL_SHIFT  8
/* (i_flags: ZF_FL_COMPR and ZF_FL_NOCOMP are in f2fs_format.h) */

/* The header at the start of a compressed cluster's first block. */
struct zf_compr_header {
	zf_le32 clen;            /* bytes of stream after the header */
	zf_le32 chksum;          /* zf_compr_chksum of the stream, or 0 without the flag */
	zf_le32 reserved[4];     /* 0 */
};
#define ZF_COMPR_HEADER_SIZE 24

/* "lzo", "lz4", "zstd", "lzo-rle"; NULL for a number past them */
const char *zf_compr_name(unsigned int alg);
/* Can this build read and write alg's streams?  false for numbers past the known ones; *why says so. */
bool zf_compr_supported(unsigned int alg, const char **why);
/* Is level valid for alg, as the kernel's inode check has it (LZ4: 0 or 3..16; zstd 0..22; LZO 0)? */
bool zf_compr_level_ok(unsigned int alg, unsigned int level);
/* The checksum of a stream: F2FS's crc32 (zf_crc32 seeded with the magic) */
uint32_t zf_compr_chksum(const void *stream, size_t clen);

/*
 * Compress one cluster of 2^log blocks at src into out (room for
 * 2^log - 1 blocks): header, stream, zero padding.  Returns k, the blocks
 * of out used (1 .. 2^log - 1); 0 when compression would not save a block
 * (the cluster is to be written as it is); -EINVAL for a bad alg, level or
 * log, -EOPNOTSUPP for an algorithm without a codec, -ENOMEM.
 */
int zf_compr_cluster(unsigned int alg, unsigned int level, bool chksum, unsigned int log,
		     const void *src, void *out);

/*
 * Decompress a cluster of 2^log blocks from its k compressed blocks at in
 * into out (2^log blocks).  0 on success; -EUCLEAN when the header or the
 * stream is damaged (clen 0 or past the k blocks, reserved words not 0 are
 * accepted as the kernel does, a stream that does not decode to exactly the
 * cluster), with why; -EBADMSG when it decoded but the checksum (chksum
 * true) does not match (out holds the data, as the kernel returns it);
 * -EINVAL / -EOPNOTSUPP / -ENOMEM as above.
 */
int zf_decompr_cluster(unsigned int alg, bool chksum, unsigned int log, const void *in,
		       unsigned int k, void *out, char *why, size_t whylen);

/*
 * Decode an LZO1X stream of in_len bytes: version 0 (plain LZO1X), or
 * version 1 (LZO-RLE: 17, 1, then LZO1X with runs of zeros) when it starts
 * so.  *out_len the bytes written (at most out_cap).  -EUCLEAN for a
 * stream that is damaged, runs past either buffer, or does not end
 * exactly at its end marker.
 */
int zf_lzo1x_decode(const void *in, size_t in_len, void *out, size_t out_cap, size_t *out_len);

#endif
