/*
 * cluster.c - compressed files (F2FS's compression feature): a regular
 * file with COMPR_FL keeps its data in clusters of 2^log blocks, each
 * stored compressed (slot 0 COMPRESS_ADDR, k blocks of header and stream,
 * NEW_ADDR in the rest) when that saves a block, else raw as any file.
 * docs/f2fs-compression.md has the format and the kernel's rules; the
 * streams are made and read by fs/f2fs/compress.c.
 *
 * Invariants kept here:
 *   - a compressed cluster lies wholly below EOF (only whole clusters
 *     below EOF are compressed; a truncate into one rewrites it raw first);
 *   - every slot of a cluster this file wrote below EOF is not NULL, so a
 *     compressed cluster counts 2^log in i_blocks and in the user's share,
 *     as the kernel counts it (sbi->reserved_blocks: its NEW_ADDR and
 *     COMPRESS_ADDR slots); what it saves is physical: fewer blocks
 *     written, fewer to clean (i_compr_blocks, F2FS's GET_COMPRESS_BLOCKS);
 *   - i_compr_blocks is the sum of 2^log - k over the compressed clusters.
 * A cluster is read whole and checked before it is used: the marker only
 * in slot 0, 1..2^log-1 valid blocks after it, NULL or NEW_ADDR after
 * those; a damaged header, stream or checksum is zlfs_corrupt (EUCLEAN).
 *
 * What is written when (the kernel's writeback of a cluster): a cluster
 * wholly below EOF is compressed whenever it is written whole; a partial
 * write into it reads and merges it first when it is compressed, or when
 * it had holes (so a file written by appends ends up compressed); a
 * partial write into a raw cluster without holes, or into the cluster
 * across EOF, rewrites only the blocks written.  compress_mode=user
 * writes every cluster raw (F2FS_IOC_COMPRESS_FILE does not reach a FUSE
 * filesystem: docs say so).
 *
 * Locks: reads run under the shared lock (or the exclusive one), with the
 * lock dropped during their I/O as file.c's reads; writes and truncates
 * hold the exclusive lock through their I/O, so a cluster changes whole
 * and nothing slips between its read and its rewrite.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "zlfs.h"
#include "zlfs/f2fs_compress.h"
#include "data.h"
#include "segment.h"
#include "node.h"
#include "inode.h"
#include "cluster.h"

#define MAX_CLUSTER (1u << ZF_COMPR_LOG_MAX)

/* One cluster's slots as the node holds them. */
struct zcl {
	uint64_t start;              /* its first file block */
	unsigned int n;              /* blocks in it */
	struct znode *dn;            /* the node with its slots; NULL: none yet */
	unsigned int ofs;            /* slot of block `start` in dn */
	uint32_t slot[MAX_CLUSTER];
	bool compressed;             /* slot[0] is COMPRESS_ADDR */
	unsigned int k;              /* compressed: blocks of header and stream */
};

static bool released(struct zinode *zi)
{
	return zi_raw(zi)->i_inline & ZF_COMPRESS_RELEASED;
}

unsigned int zlfs_cluster_log(struct zlfs_sb *sbi, struct zinode *zi)
{
	return zf_cluster_log(zi_raw(zi), zlfs_feat(sbi));
}

static bool is_data(uint32_t a)
{
	return a != ZF_NULL_ADDR && a != ZF_NEW_ADDR && a != ZF_COMPRESS_ADDR;
}

/* compressed and k, from the slots: the marker, then the run of blocks after it */
static void derive(struct zcl *cl)
{
	cl->compressed = cl->slot[0] == ZF_COMPRESS_ADDR;
	cl->k = 0;
	if (cl->compressed)
		while (cl->k + 1 < cl->n && is_data(cl->slot[cl->k + 1]))
			cl->k++;
}

/*
 * Load and check the slots of the cluster from block `start`.  alloc
 * makes its node when missing (writes); without, a missing node is a
 * cluster of holes.
 */
static int load(struct zlfs_sb *sbi, struct zinode *zi, uint64_t start, unsigned int log,
		bool alloc, struct zcl *cl)
{
	unsigned int nr, i;
	int ret;

	memset(cl, 0, sizeof(*cl));
	cl->start = start;
	cl->n = 1u << log;
	ret = zlfs_get_dnode(sbi, zi, start, alloc, &cl->dn, &cl->ofs);
	if (ret == -ENOENT) {
		cl->dn = NULL;
		return 0;
	}
	if (ret)
		return ret;
	zf_le32 *a = zlfs_dnode_addrs(sbi, cl->dn, &nr);
	if (cl->ofs + cl->n > nr)    /* the shape keeps clusters whole in a node */
		return zlfs_corrupt(sbi, "inode %u: cluster at block %llu crosses its node", zi->ino,
				    (unsigned long long)start);
	for (i = 0; i < cl->n; i++)
		cl->slot[i] = zf_le32_to_cpu(a[cl->ofs + i]);
	derive(cl);
	/* F2FS's f2fs_sanity_check_cluster, and every address inside the main area and in use */
	for (i = 0; i < cl->n; i++) {
		uint32_t s = cl->slot[i];
		if (s == ZF_COMPRESS_ADDR && i)
			return zlfs_corrupt(sbi, "inode %u: compressed-cluster marker at block %llu, "
					    "not at the start of its cluster", zi->ino,
					    (unsigned long long)(start + i));
		if (cl->compressed && i > cl->k && is_data(s))
			return zlfs_corrupt(sbi, "inode %u: compressed cluster at block %llu has a "
					    "block after its unused slots", zi->ino,
					    (unsigned long long)start);
		if (is_data(s) && (ret = zlfs_block_in_use(sbi, s)) < 0)
			return ret;
		if (is_data(s) && !ret)
			return zlfs_corrupt(sbi, "block %llu of inode %u is at %u, %s",
					    (unsigned long long)(start + i), zi->ino, s,
					    zlfs_is_main_blkaddr(sbi, s) ? "which the SIT says is free" :
					    "outside the main area");
	}
	if (cl->compressed && !cl->k)
		return zlfs_corrupt(sbi, "inode %u: compressed cluster at block %llu holds no block",
				    zi->ino, (unsigned long long)start);
	return 0;
}

/* Read n blocks: with the lock dropped meanwhile, or (keep) held throughout. */
static int read_addrs(struct zlfs_sb *sbi, void **bufs, const uint32_t *addrs, uint32_t n, bool keep)
{
	if (!keep)
		return zlfs_read_blocks_unlocked(sbi, bufs, addrs, n, ZLFS_PRIO_BE);
	for (uint32_t i = 0; i < n; i++) {
		int ret = zlfs_read_block(sbi, addrs[i], bufs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* Decompress cluster cl from its k blocks at in into out (cl->n blocks). */
static int decompress(struct zlfs_sb *sbi, struct zinode *zi, const struct zcl *cl, const void *in,
		      void *out)
{
	const struct zf_inode *ri = zi_raw(zi);
	bool chk = zf_le16_to_cpu(ri->i_compress_flag) & ZF_COMPR_FLAG_CHKSUM;
	unsigned int log = (unsigned int)__builtin_ctz(cl->n);
	char why[160] = "";
	int ret = zf_decompr_cluster(ri->i_compress_algorithm, chk, log, in, cl->k, out, why,
				     sizeof(why));

	__atomic_add_fetch(&sbi->st.compr_reads, 1, __ATOMIC_RELAXED);
	if (ret == -EUCLEAN || ret == -EBADMSG)
		return zlfs_corrupt(sbi, "inode %u: compressed cluster at block %llu: %s", zi->ino,
				    (unsigned long long)cl->start, why[0] ? why : "damaged");
	return ret;
}

/* The whole cluster's data into out (cl->n blocks): holes and NEW_ADDR read as zeros. */
static int read_whole(struct zlfs_sb *sbi, struct zinode *zi, const struct zcl *cl, uint8_t *out,
		      bool keep)
{
	void *bufs[MAX_CLUSTER];
	uint32_t addrs[MAX_CLUSTER], n = 0;
	int ret;

	if (cl->compressed) {
		uint8_t *in = malloc((size_t)cl->k * ZF_BLKSIZE);
		if (!in)
			return -ENOMEM;
		for (unsigned int j = 0; j < cl->k; j++) {
			bufs[j] = in + (size_t)j * ZF_BLKSIZE;
			addrs[j] = cl->slot[1 + j];
		}
		ret = read_addrs(sbi, bufs, addrs, cl->k, keep);
		if (!ret)
			ret = decompress(sbi, zi, cl, in, out);
		free(in);
		return ret;
	}
	for (unsigned int i = 0; i < cl->n; i++) {
		uint8_t *b = out + (size_t)i * ZF_BLKSIZE;
		if (!is_data(cl->slot[i])) {
			memset(b, 0, ZF_BLKSIZE);
			continue;
		}
		bufs[n] = b;
		addrs[n++] = cl->slot[i];
	}
	return read_addrs(sbi, bufs, addrs, n, keep);
}

/* ---- reads ------------------------------------------------------------------------ */

int zlfs_cluster_read(struct zlfs_sb *sbi, struct zinode *zi, char *buf, size_t len, uint64_t off)
{
	unsigned int log = zlfs_cluster_log(sbi, zi);
	const uint64_t csz = (uint64_t)ZF_BLKSIZE << log;
	uint64_t c0 = off / csz, c1 = (off + len - 1) / csz;
	size_t ncl = (size_t)(c1 - c0 + 1), cbytes = (size_t)csz;
	int ret = 0;

	if (!len)
		return 0;
	/*
	 * Every cluster's blocks are read in one batch (adjacent ones merge
	 * into one command): raw clusters straight into out, compressed ones
	 * into in, then decompressed into out; the range is copied from out.
	 */
	struct zcl *cl = malloc(ncl * sizeof(*cl));
	uint8_t *out = malloc(ncl * cbytes);
	size_t nin = 0, nio = 0, cap = ncl << log;
	void **bufs = calloc(cap, sizeof(*bufs));
	uint32_t *addrs = calloc(cap, sizeof(*addrs));
	uint8_t *in = NULL;
	if (!cl || !out || !bufs || !addrs) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t c = 0; c < ncl; c++) {
		if ((ret = load(sbi, zi, (c0 + c) << log, log, false, &cl[c])))
			goto out;
		nin += cl[c].compressed ? cl[c].k : 0;
	}
	if (nin && !(in = malloc(nin * ZF_BLKSIZE))) {
		ret = -ENOMEM;
		goto out;
	}
	size_t at = 0;
	for (size_t c = 0; c < ncl; c++) {
		uint8_t *o = out + c * cbytes;
		if (cl[c].compressed) {
			for (unsigned int j = 0; j < cl[c].k; j++) {
				bufs[nio] = in + (at + j) * ZF_BLKSIZE;
				addrs[nio++] = cl[c].slot[1 + j];
			}
			at += cl[c].k;
			continue;
		}
		for (unsigned int i = 0; i < cl[c].n; i++) {
			uint8_t *b = o + (size_t)i * ZF_BLKSIZE;
			if (!is_data(cl[c].slot[i])) {
				memset(b, 0, ZF_BLKSIZE);
				continue;
			}
			bufs[nio] = b;
			addrs[nio++] = cl[c].slot[i];
		}
	}
	if ((ret = zlfs_read_blocks_unlocked(sbi, bufs, addrs, (uint32_t)nio, ZLFS_PRIO_BE)))
		goto out;
	at = 0;
	for (size_t c = 0; c < ncl; c++) {
		if (!cl[c].compressed)
			continue;
		if ((ret = decompress(sbi, zi, &cl[c], in + at * ZF_BLKSIZE, out + c * cbytes)))
			goto out;
		at += cl[c].k;
	}
	memcpy(buf, out + (off - c0 * csz), len);
out:
	free(in);
	free(bufs);
	free(addrs);
	free(out);
	free(cl);
	return ret;
}

/* ---- writes ----------------------------------------------------------------------- */

static uint64_t compr_contrib(const struct zcl *cl, bool rel)
{
	return cl->compressed && !rel ? cl->n - cl->k : 0;
}

/*
 * Make cl's slots ns[]: the nw blocks wbufs[j] are written first, to new
 * addresses for slots widx[j]; then each slot changes with its
 * accounting (i_blocks counts every slot that is not NULL; reserved
 * slots, NEW_ADDR and COMPRESS_ADDR, count in sbi->reserved_blocks; old
 * blocks are invalidated) and i_compr_blocks follows.
 */
static int commit(struct zlfs_sb *sbi, struct zinode *zi, struct zcl *cl, uint32_t *ns,
		  void **wbufs, const unsigned int *widx, unsigned int nw)
{
	uint32_t addrs[MAX_CLUSTER];
	uint64_t need = 0;
	unsigned int j;
	int ret;

	for (unsigned int i = 0; i < cl->n; i++)
		need += cl->slot[i] == ZF_NULL_ADDR && ns[i] != ZF_NULL_ADDR;
	for (j = 0; j < nw; j++)
		need += cl->slot[widx[j]] == ZF_NULL_ADDR && ns[widx[j]] == ZF_NULL_ADDR;
	if (need > zlfs_avail_blocks(sbi))
		return -ENOSPC;
	if (!cl->dn) {
		if ((ret = zlfs_get_dnode(sbi, zi, cl->start, true, &cl->dn, &cl->ofs)))
			return ret;
		if (need > zlfs_avail_blocks(sbi))   /* the node took a block of the share */
			return -ENOSPC;
	}
	for (j = 0; j < nw; j++) {
		uint16_t o = (uint16_t)(cl->ofs + widx[j]);
		if ((ret = zlfs_alloc_block(sbi, ZF_LOG_WARM_DATA, cl->dn->nid, o,
					    zlfs_nat(sbi, cl->dn->nid)->version, &addrs[j])))
			break;
	}
	if (j == nw)
		ret = zlfs_write_blocks(sbi, wbufs, addrs, nw);
	if (ret) {
		while (j--)
			zlfs_invalidate_block(sbi, addrs[j]);
		return ret;
	}
	for (j = 0; j < nw; j++)
		ns[widx[j]] = addrs[j];

	struct zf_inode *ri = zi_raw(zi);
	bool rel = released(zi);
	uint64_t blocks = zf_le64_to_cpu(ri->i_blocks);
	uint64_t saved = zf_le64_to_cpu(ri->i_compr_blocks) - compr_contrib(cl, rel);
	unsigned int nr;
	zf_le32 *a = zlfs_dnode_addrs(sbi, cl->dn, &nr) + cl->ofs;
	for (unsigned int i = 0; i < cl->n; i++) {
		uint32_t old = cl->slot[i], nv = ns[i];
		if (old == nv)
			continue;
		if (old == ZF_NULL_ADDR)
			blocks++;
		else if (nv == ZF_NULL_ADDR)
			blocks--;
		if (zlfs_addr_reserved(old))
			zlfs_reserved_drop(sbi, 1);
		else if (old != ZF_NULL_ADDR)
			zlfs_invalidate_block(sbi, old);
		if (zlfs_addr_reserved(nv))
			sbi->reserved_blocks++;
		a[i] = zf_cpu_to_le32(nv);
		cl->slot[i] = nv;
	}
	derive(cl);
	ri = zi_raw(zi);
	ri->i_blocks = zf_cpu_to_le64(blocks);
	ri->i_compr_blocks = zf_cpu_to_le64(saved + compr_contrib(cl, rel));
	zlfs_ext_drop(zi);
	zlfs_node_dirty(sbi, cl->dn);
	zlfs_node_dirty(sbi, zi->node);
	return 0;
}

/*
 * Store nblk blocks of data (contiguous) as the cluster's first blocks,
 * the rest of its slots emptied: compressed when compress says so and
 * it saves a block, else raw.
 */
static int put_whole(struct zlfs_sb *sbi, struct zinode *zi, struct zcl *cl, const uint8_t *data,
		     unsigned int nblk, bool compress)
{
	const struct zf_inode *ri = zi_raw(zi);
	uint32_t ns[MAX_CLUSTER];
	void *wbufs[MAX_CLUSTER];
	unsigned int widx[MAX_CLUSTER], i;
	int ret;

	if (compress) {
		unsigned int flag = zf_le16_to_cpu(ri->i_compress_flag);
		unsigned int log = (unsigned int)__builtin_ctz(cl->n);
		uint8_t *out = malloc((size_t)(cl->n - 1) * ZF_BLKSIZE);
		if (!out)
			return -ENOMEM;
		int k = zf_compr_cluster(ri->i_compress_algorithm, flag >> ZF_COMPR_LEVEL_SHIFT,
					 flag & ZF_COMPR_FLAG_CHKSUM, log, data, out);
		if (k > 0) {
			ns[0] = ZF_COMPRESS_ADDR;
			for (i = 1; i < cl->n; i++)
				ns[i] = ZF_NEW_ADDR;
			for (i = 0; i < (unsigned int)k; i++) {
				wbufs[i] = out + (size_t)i * ZF_BLKSIZE;
				widx[i] = 1 + i;
			}
			ret = commit(sbi, zi, cl, ns, wbufs, widx, (unsigned int)k);
			if (!ret) {
				sbi->st.compr_clusters++;
				sbi->st.compr_saved += cl->n - (unsigned int)k;
			}
			free(out);
			return ret;
		}
		free(out);
		if (k < 0)
			return k;
		sbi->st.compr_raw++;
	}
	for (i = 0; i < cl->n; i++)
		ns[i] = ZF_NULL_ADDR;
	for (i = 0; i < nblk; i++) {
		wbufs[i] = (void *)(data + (size_t)i * ZF_BLKSIZE);
		widx[i] = i;
	}
	return commit(sbi, zi, cl, ns, wbufs, widx, nblk);
}

/* A raw cluster: blocks [first, first + cnt) from data, the others as they are. */
static int put_blocks(struct zlfs_sb *sbi, struct zinode *zi, struct zcl *cl, unsigned int first,
		      unsigned int cnt, const uint8_t *data)
{
	uint32_t ns[MAX_CLUSTER];
	void *wbufs[MAX_CLUSTER];
	unsigned int widx[MAX_CLUSTER];

	memcpy(ns, cl->slot, sizeof(ns[0]) * cl->n);
	for (unsigned int i = 0; i < cnt; i++) {
		wbufs[i] = (void *)(data + (size_t)i * ZF_BLKSIZE);
		widx[i] = first + i;
		ns[first + i] = ZF_NULL_ADDR;
	}
	return commit(sbi, zi, cl, ns, wbufs, widx, cnt);
}

/* Every slot of a raw cluster holds a block: nothing for a merge to fill. */
static bool raw_complete(const struct zcl *cl)
{
	if (cl->compressed)
		return false;
	for (unsigned int i = 0; i < cl->n; i++)
		if (!is_data(cl->slot[i]))
			return false;
	return true;
}

int zlfs_cluster_write(struct zlfs_sb *sbi, struct zinode *zi, const char *buf, size_t len,
		       uint64_t off)
{
	struct zf_inode *ri = zi_raw(zi);
	unsigned int log = zlfs_cluster_log(sbi, zi);
	const uint64_t csz = (uint64_t)ZF_BLKSIZE << log;
	const unsigned int n = 1u << log;
	uint64_t size = zf_le64_to_cpu(ri->i_size);
	uint64_t end = off + len, nsize = end > size ? end : size;
	uint64_t eofb = (nsize + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
	bool compress = !sbi->compr.user_mode;
	int ret = 0;

	if (released(zi))
		return -EPERM;     /* F2FS: reserve the blocks again first */
	if (!len)
		return 0;
	struct zcl *cl = malloc(sizeof(*cl));
	uint8_t *cbuf = malloc((size_t)csz);
	if (!cl || !cbuf) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint64_t c = off / csz; c <= (end - 1) / csz; c++) {
		uint64_t cb = c * csz, start = c << log;
		uint64_t lo = off > cb ? off - cb : 0;
		uint64_t hi = end < cb + csz ? end - cb : csz;
		unsigned int nblk = eofb - start < n ? (unsigned int)(eofb - start) : n;
		/* the bytes the cluster keeps: up to EOF, or all of it */
		uint64_t keep = nsize - cb < csz ? nsize - cb : csz;
		const uint8_t *src = (const uint8_t *)buf + (cb + lo - off);
		if ((ret = load(sbi, zi, start, log, false, cl)))
			goto out;
		if (cl->compressed || (lo == 0 && hi >= keep) || (nblk == n && !raw_complete(cl))) {
			/* the cluster whole: what it had, what is written over it, zeros past EOF */
			if (lo == 0 && hi == csz) {
				ret = put_whole(sbi, zi, cl, src, nblk, compress && nblk == n);
			} else {
				if (!(lo == 0 && hi >= keep) && (ret = read_whole(sbi, zi, cl, cbuf, true)))
					goto out;
				if (lo == 0 && hi >= keep)
					memset(cbuf, 0, (size_t)csz);
				memcpy(cbuf + lo, src, (size_t)(hi - lo));
				if (keep < csz)
					memset(cbuf + keep, 0, (size_t)(csz - keep));
				ret = put_whole(sbi, zi, cl, cbuf, nblk, compress && nblk == n);
			}
		} else {
			/* raw and either whole already or across EOF: only the blocks written */
			unsigned int b0 = (unsigned int)(lo / ZF_BLKSIZE);
			unsigned int b1 = (unsigned int)((hi - 1) / ZF_BLKSIZE);
			uint8_t *blk = cbuf + (size_t)b0 * ZF_BLKSIZE;
			for (unsigned int b = b0; b <= b1; b++) {
				uint8_t *p = cbuf + (size_t)b * ZF_BLKSIZE;
				uint64_t bs = (uint64_t)b * ZF_BLKSIZE;
				if (lo <= bs && hi >= bs + ZF_BLKSIZE)
					continue;      /* written whole */
				if (!is_data(cl->slot[b]))
					memset(p, 0, ZF_BLKSIZE);
				else if ((ret = zlfs_read_block(sbi, cl->slot[b], p)))
					goto out;
			}
			memcpy(cbuf + lo, src, (size_t)(hi - lo));
			if (keep < csz)
				memset(cbuf + keep, 0, (size_t)(csz - keep));
			ret = put_blocks(sbi, zi, cl, b0, b1 - b0 + 1, blk);
		}
		if (ret)
			goto out;
	}
	ri = zi_raw(zi);
	if (end > zf_le64_to_cpu(ri->i_size))
		ri->i_size = zf_cpu_to_le64(end);
	zlfs_inode_touch(zi, true, true, false);
	zlfs_node_dirty(sbi, zi->node);
out:
	free(cbuf);
	free(cl);
	return ret;
}

int zlfs_cluster_truncate(struct zlfs_sb *sbi, struct zinode *zi, uint64_t size)
{
	unsigned int log = zlfs_cluster_log(sbi, zi);
	const uint64_t csz = (uint64_t)ZF_BLKSIZE << log;
	const unsigned int n = 1u << log;
	uint64_t nb = (size + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
	int ret;

	if (!nb)
		return 0;
	/* the cluster of the last block kept */
	uint64_t c = (nb - 1) >> log, keep = size - c * csz;
	unsigned int nblk = (unsigned int)(nb - (c << log));
	struct zcl *cl = malloc(sizeof(*cl));
	uint8_t *cbuf = malloc((size_t)csz);
	if (!cl || !cbuf) {
		ret = -ENOMEM;
		goto out;
	}
	if ((ret = load(sbi, zi, c << log, log, false, cl)) || keep == csz)
		goto out;           /* the cluster stays whole */
	if (cl->compressed) {
		/* decompressed, cut at the new EOF, stored again (compressed if still whole) */
		if ((ret = read_whole(sbi, zi, cl, cbuf, true)))
			goto out;
		memset(cbuf + keep, 0, (size_t)(csz - keep));
		ret = put_whole(sbi, zi, cl, cbuf, nblk, nblk == n && !sbi->compr.user_mode);
	} else if (size % ZF_BLKSIZE && is_data(cl->slot[nblk - 1])) {
		/* raw: the last block's tail zeroed, out of place */
		uint8_t *p = cbuf + (size_t)(nblk - 1) * ZF_BLKSIZE;
		if ((ret = zlfs_read_block(sbi, cl->slot[nblk - 1], p)))
			goto out;
		memset(p + size % ZF_BLKSIZE, 0, ZF_BLKSIZE - size % ZF_BLKSIZE);
		ret = put_blocks(sbi, zi, cl, nblk - 1, 1, p);
	}
out:
	free(cbuf);
	free(cl);
	return ret;
}

/* Does the regular file hold data (F2FS_HAS_BLOCKS, what chattr +c / -c refuse)? */
static bool has_data(const struct zf_inode *ri, uint32_t feat)
{
	struct zf_ishape sh;

	if (zf_le64_to_cpu(ri->i_size))
		return true;
	if (ri->i_inline & ZF_INLINE_DATA)
		return false;
	for (int k = 0; k < ZF_NIDS_PER_INODE; k++)
		if (ri->i_nid[k])
			return true;
	zf_inode_shape(ri, feat, &sh);
	for (unsigned int i = 0; i < sh.addrs; i++)
		if (ri->i_addr[sh.extra + i])
			return true;
	return false;
}

/* ---- F2FS's compression ioctls ------------------------------------------------------- */

/* Is zi a compressed file these may act on?  -EOPNOTSUPP without the feature, -EINVAL not one. */
static int ioctl_ok(struct zlfs_sb *sbi, struct zinode *zi)
{
	int ret;

	if (!(zlfs_feat(sbi) & ZF_FEAT_COMPRESSION))
		return -EOPNOTSUPP;
	if ((ret = zlfs_writable(sbi)))
		return ret;
	return zlfs_cluster_log(sbi, zi) ? 0 : -EINVAL;
}

/*
 * Every cluster of zi below EOF that has a node, in order: fn(cl) for
 * each (a missing node's clusters are holes, skipped whole).
 */
static int each_cluster(struct zlfs_sb *sbi, struct zinode *zi, struct zcl *cl,
			int (*fn)(struct zlfs_sb *, struct zinode *, struct zcl *, void *), void *arg)
{
	unsigned int log = zlfs_cluster_log(sbi, zi), n = 1u << log;
	uint64_t size = zf_le64_to_cpu(zi_raw(zi)->i_size);
	uint64_t nb = (size + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
	struct zf_ishape sh;
	int ret;

	zf_inode_shape(zi_raw(zi), zlfs_feat(sbi), &sh);
	for (uint64_t start = 0; start < nb; start += n) {
		if ((ret = load(sbi, zi, start, log, false, cl)))
			return ret;
		if (!cl->dn) {
			/* no direct node here: on past its span (whole clusters: the shape's) */
			uint64_t d = (start - sh.addrs) / sh.dnode_addrs;
			start = sh.addrs + (d + 1) * sh.dnode_addrs - n;
			continue;
		}
		if ((ret = fn(sbi, zi, cl, arg)))
			return ret;
	}
	return 0;
}

/* Set one slot of a loaded cluster (accounting is the caller's). */
static void set_slot(struct zlfs_sb *sbi, struct zcl *cl, unsigned int i, uint32_t v)
{
	unsigned int nr;

	zlfs_dnode_addrs(sbi, cl->dn, &nr)[cl->ofs + i] = zf_cpu_to_le32(v);
	cl->slot[i] = v;
	zlfs_node_dirty(sbi, cl->dn);
}

struct relres {
	bool reserve;
	bool count_only;
	uint64_t blocks;
};

/*
 * A compressed cluster released (F2FS's release_compress_blocks: its
 * NEW_ADDR slots become NULL, the marker stays but no longer counts) or
 * reserved again (the reverse).  Either way 2^log - k blocks.
 */
static int relres_one(struct zlfs_sb *sbi, struct zinode *zi, struct zcl *cl, void *arg)
{
	struct relres *r = arg;
	struct zf_inode *ri = zi_raw(zi);
	uint64_t d = cl->n - cl->k;

	if (!cl->compressed)
		return 0;
	r->blocks += d;
	if (r->count_only)
		return 0;
	for (unsigned int i = cl->k + 1; i < cl->n; i++)
		set_slot(sbi, cl, i, r->reserve ? ZF_NEW_ADDR : ZF_NULL_ADDR);
	if (r->reserve) {
		sbi->reserved_blocks += d;
		ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) + d);
	} else {
		zlfs_reserved_drop(sbi, d);
		ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) - d);
	}
	return 0;
}

int zlfs_cluster_release(struct zlfs_sb *sbi, struct zinode *zi, bool reserve, uint64_t *blocks)
{
	struct zf_inode *ri = zi_raw(zi);
	struct relres r = { .reserve = reserve };
	int ret;

	*blocks = 0;
	if ((ret = ioctl_ok(sbi, zi)))
		return ret;
	if (released(zi) != reserve)
		return -EINVAL;     /* F2FS: release once, reserve only what was released */
	/*
	 * F2FS refuses writes to a released file at write(2); under FUSE's
	 * writeback cache they would be lost at writeback instead, so no
	 * handle may be open for writing (zlfs_file_open refuses new ones).
	 */
	if (!reserve && zi->nwrite)
		return -EBUSY;
	struct zcl *cl = malloc(sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	if (reserve) {
		/* the blocks come back into the user's share: all of them, or none */
		r.count_only = true;
		if ((ret = each_cluster(sbi, zi, cl, relres_one, &r)))
			goto out;
		if (r.blocks > zlfs_avail_blocks(sbi)) {
			ret = -ENOSPC;
			goto out;
		}
		r.count_only = false;
		r.blocks = 0;
	} else if (!zf_le64_to_cpu(ri->i_compr_blocks)) {
		r.count_only = true;     /* nothing to release: only the mark (F2FS's rule) */
	}
	if ((ret = each_cluster(sbi, zi, cl, relres_one, &r)))
		goto out;
	ri = zi_raw(zi);
	if (reserve) {
		ri->i_inline &= (uint8_t)~ZF_COMPRESS_RELEASED;
		ri->i_compr_blocks = zf_cpu_to_le64(r.blocks);
	} else {
		ri->i_inline |= ZF_COMPRESS_RELEASED;
		ri->i_compr_blocks = 0;
		if (r.count_only)
			r.blocks = 0;
	}
	*blocks = r.blocks;
	zlfs_ext_drop(zi);
	zlfs_inode_touch(zi, false, true, false);
	zlfs_node_dirty(sbi, zi->node);
out:
	free(cl);
	return ret;
}

/* A whole cluster below EOF stored again, compressed or not (F2FS_IOC_(DE)COMPRESS_FILE). */
static int rewrite_one(struct zlfs_sb *sbi, struct zinode *zi, struct zcl *cl, void *arg)
{
	bool compress = *(bool *)arg;
	uint64_t nb = (zf_le64_to_cpu(zi_raw(zi)->i_size) + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
	unsigned int i;
	int ret;

	if (cl->start + cl->n > nb || cl->compressed == compress)
		return 0;        /* across EOF: raw by rule; or already as asked */
	for (i = 0; i < cl->n && !is_data(cl->slot[i]); i++)
		;
	if (i == cl->n)
		return 0;        /* holes stay holes */
	uint8_t *buf = malloc((size_t)cl->n * ZF_BLKSIZE);
	if (!buf)
		return -ENOMEM;
	if (!(ret = read_whole(sbi, zi, cl, buf, true)))
		ret = put_whole(sbi, zi, cl, buf, cl->n, compress);
	free(buf);
	return ret;
}

int zlfs_cluster_rewrite(struct zlfs_sb *sbi, struct zinode *zi, bool compress)
{
	int ret;

	if ((ret = ioctl_ok(sbi, zi)))
		return ret;
	if (!sbi->compr.user_mode)
		return -EOPNOTSUPP;     /* F2FS: only under compress_mode=user */
	if (released(zi))
		return -EINVAL;
	struct zcl *cl = malloc(sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	ret = each_cluster(sbi, zi, cl, rewrite_one, &compress);
	free(cl);
	return ret;
}

int zlfs_cluster_set_option(struct zlfs_sb *sbi, struct zinode *zi, unsigned int alg,
			    unsigned int log)
{
	struct zf_inode *ri = zi_raw(zi);
	int ret;

	if ((ret = ioctl_ok(sbi, zi)))
		return ret;
	if (has_data(ri, zlfs_feat(sbi)))
		return -EFBIG;          /* F2FS: only an empty file changes */
	if (log < ZF_COMPR_LOG_MIN || log > ZF_COMPR_LOG_MAX || alg >= ZF_COMPR_NR)
		return -EINVAL;
	ri->i_compress_algorithm = (uint8_t)alg;
	ri->i_log_cluster_size = (uint8_t)log;
	/* the level is the mount's for its own algorithm, else the default */
	unsigned int flag = zf_le16_to_cpu(ri->i_compress_flag) & ZF_COMPR_FLAG_CHKSUM;
	if (alg == sbi->compr.alg && (alg == ZF_COMPR_LZ4 || alg == ZF_COMPR_ZSTD))
		flag |= sbi->compr.level << ZF_COMPR_LEVEL_SHIFT;
	ri->i_compress_flag = zf_cpu_to_le16((uint16_t)flag);
	zlfs_inode_touch(zi, false, true, false);
	zlfs_node_dirty(sbi, zi->node);
	return 0;
}

/* ---- policy ----------------------------------------------------------------------- */

/* F2FS's set_compress_context: COMPR_FL and the mount's algorithm, cluster and flags. */
static void set_context(struct zlfs_sb *sbi, struct zf_inode *ri)
{
	const struct zlfs_compr_opts *o = &sbi->compr;
	unsigned int flag = o->chksum ? ZF_COMPR_FLAG_CHKSUM : 0;

	if (o->alg == ZF_COMPR_LZ4 || o->alg == ZF_COMPR_ZSTD)
		flag |= o->level << ZF_COMPR_LEVEL_SHIFT;
	ri->i_flags = zf_cpu_to_le32((zf_le32_to_cpu(ri->i_flags) | ZF_FL_COMPR) & ~ZF_FL_NOCOMP);
	ri->i_compress_algorithm = o->alg;
	ri->i_log_cluster_size = o->log;
	ri->i_compress_flag = zf_cpu_to_le16((uint16_t)flag);
	ri->i_compr_blocks = 0;
	/* compressed files are never inline (F2FS's f2fs_may_inline_data) */
	ri->i_inline &= (uint8_t)~(ZF_INLINE_DATA | ZF_DATA_EXIST);
}

static void clear_context(struct zf_inode *ri)
{
	ri->i_flags = zf_cpu_to_le32(zf_le32_to_cpu(ri->i_flags) & ~ZF_FL_COMPR);
	ri->i_compress_algorithm = 0;
	ri->i_log_cluster_size = 0;
	ri->i_compress_flag = 0;
	ri->i_compr_blocks = 0;
}

/* Can this inode carry the compression fields (the feature, extra attributes reaching them)? */
static bool can_compress(struct zlfs_sb *sbi, const struct zf_inode *ri)
{
	return (zlfs_feat(sbi) & ZF_FEAT_COMPRESSION) && ZF_EXTRA_HAS(ri, i_compress_flag);
}

/* F2FS's is_extension_exist: the name's last extension, any case; "*" matches all. */
static bool ext_match(const char *name, size_t len, const char (*list)[ZLFS_COMPR_EXT_LEN],
		      unsigned int nr)
{
	const char *dot = NULL;

	for (size_t i = len; i-- > 1;)     /* a leading dot is a hidden file's, no extension */
		if (name[i] == '.') {
			dot = name + i + 1;
			break;
		}
	for (unsigned int i = 0; i < nr; i++) {
		if (!strcmp(list[i], "*"))
			return true;
		size_t el = strlen(list[i]);
		if (dot && (size_t)(name + len - dot) == el && !strncasecmp(dot, list[i], el))
			return true;
	}
	return false;
}

void zlfs_cluster_new_inode(struct zlfs_sb *sbi, struct zinode *dir, struct zinode *zi,
			    const char *name, size_t len)
{
	struct zf_inode *ri = zi_raw(zi);
	uint32_t dfl = zf_le32_to_cpu(zi_raw(dir)->i_flags);
	mode_t mode = zf_le16_to_cpu(ri->i_mode);

	if (!can_compress(sbi, ri) || !(S_ISREG(mode) || S_ISDIR(mode)))
		return;
	if (S_ISREG(mode)) {
		if (ext_match(name, len, sbi->compr.noext, sbi->compr.nnoext))
			return;
		if (ext_match(name, len, sbi->compr.ext, sbi->compr.next)) {
			set_context(sbi, ri);
			return;
		}
	}
	if (dfl & ZF_FL_NOCOMP)
		ri->i_flags = zf_cpu_to_le32(zf_le32_to_cpu(ri->i_flags) | ZF_FL_NOCOMP);
	else if (dfl & ZF_FL_COMPR)
		set_context(sbi, ri);
}

int zlfs_cluster_set(struct zlfs_sb *sbi, struct zinode *zi, bool on)
{
	struct zf_inode *ri = zi_raw(zi);
	mode_t mode = zf_le16_to_cpu(ri->i_mode);
	bool is = zf_le32_to_cpu(ri->i_flags) & ZF_FL_COMPR;

	if (!(zlfs_feat(sbi) & ZF_FEAT_COMPRESSION))
		return -EOPNOTSUPP;
	if (on == is)
		return 0;
	if (!S_ISREG(mode) && !S_ISDIR(mode))
		return -EINVAL;
	if (S_ISREG(mode) && has_data(ri, zlfs_feat(sbi)))
		return -EINVAL;     /* F2FS: only an empty file changes */
	if (!on) {
		clear_context(ri);
		return 0;
	}
	if (!ZF_EXTRA_HAS(ri, i_compress_flag))
		return -EOPNOTSUPP;
	set_context(sbi, ri);
	return 0;
}

int zlfs_cluster_saved(struct zlfs_sb *sbi, struct zinode *zi, uint64_t *blocks)
{
	if (!(zlfs_feat(sbi) & ZF_FEAT_COMPRESSION))
		return -EOPNOTSUPP;
	if (!zlfs_cluster_log(sbi, zi))
		return -EINVAL;
	*blocks = zf_le64_to_cpu(zi_raw(zi)->i_compr_blocks);
	return 0;
}

int zlfs_cluster_opts(struct zlfs_sb *sbi, const struct zlfs_compr_opts *o, char *err,
		      size_t errlen)
{
	struct zlfs_compr_opts *c = &sbi->compr;
	const char *why = NULL;

	memset(c, 0, sizeof(*c));
	c->alg = ZF_COMPR_LZ4;           /* F2FS's defaults */
	c->log = ZF_COMPR_LOG_MIN;
	if (!o || !o->given)
		return 0;
	if (!(zlfs_feat(sbi) & ZF_FEAT_COMPRESSION)) {
		/* the kernel's "Image doesn't support compression": a warning, the mount goes on */
		fprintf(stderr, "zlfs: %s: the volume does not have the compression feature: the "
			"compress options are ignored\n", zlfs_zdev_spec(sbi->dev));
		return 0;
	}
	*c = *o;
	if (!o->alg_given)
		c->alg = ZF_COMPR_LZ4;
	if (!o->log)
		c->log = ZF_COMPR_LOG_MIN;
	if (c->log < ZF_COMPR_LOG_MIN || c->log > ZF_COMPR_LOG_MAX) {
		snprintf(err, errlen, "compress_log_size=%u is out of range: %u .. %u", c->log,
			 ZF_COMPR_LOG_MIN, ZF_COMPR_LOG_MAX);
		return -EINVAL;
	}
	if (!zf_compr_supported(c->alg, &why)) {
		snprintf(err, errlen, "compress_algorithm: %s", why ? why : "not supported");
		return -EINVAL;
	}
	if (o->level_given) {
		/* F2FS: lz4 3..16 (LZ4HC), zstd 1..22, none for lzo and lzo-rle */
		bool ok = (c->alg == ZF_COMPR_LZ4 && c->level >= 3 && c->level <= 16) ||
			  (c->alg == ZF_COMPR_ZSTD && c->level >= 1 && c->level <= 22);
		if (!ok) {
			snprintf(err, errlen, "compress_algorithm=%s:%u: %s", zf_compr_name(c->alg),
				 c->level, c->alg == ZF_COMPR_LZ4 ? "lz4 levels are 3 .. 16" :
				 c->alg == ZF_COMPR_ZSTD ? "zstd levels are 1 .. 22" :
				 "this algorithm takes no level");
			return -EINVAL;
		}
	} else {
		c->level = 0;    /* the algorithm's default (zstd's is 1) */
	}
	for (unsigned int i = 0; i < c->nnoext; i++) {
		if (!strcmp(c->noext[i], "*")) {
			snprintf(err, errlen, "nocompress_extension=*: not allowed (F2FS's rule)");
			return -EINVAL;
		}
		for (unsigned int j = 0; j < c->next; j++)
			if (!strcasecmp(c->noext[i], c->ext[j])) {
				snprintf(err, errlen, "extension '%s' is in both compress_extension "
					 "and nocompress_extension", c->ext[j]);
				return -EINVAL;
			}
	}
	return 0;
}
