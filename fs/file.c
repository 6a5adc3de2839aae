/*
 * file.c - file contents: read, write, truncate, fallocate, inline data.
 *
 * Every write goes out of place: each block written gets a new address in
 * a data log (WARM_DATA for files, HOT_DATA for directory blocks), the old
 * block is invalidated, and the direct node slot is updated in memory (the
 * node is written at the next checkpoint or by fsync).  Directory and
 * symlink blocks go to the block cache instead (bcache.c), which gives them
 * their addresses when it writes them back.  File blocks are allocated and their
 * writes submitted under sbi->lock, so each log's writes reach the
 * dispatcher in LBA order; the caller then drops the lock while waiting
 * (io_inflight keeps the checkpoint out until they complete).
 *
 * Holes are NULL_ADDR slots and read as zeros; so do NEW_ADDR slots
 * (reserved by F2FS's fallocate; zlfs writes zero blocks instead).
 * Inline data (F2FS's INLINE_DATA, which new files and symlinks start
 * with: inode.c) is read and written in place while the file fits in the
 * inode, DATA_EXIST set once anything was written; a write, truncate or
 * symlink target past the inline area, and any fallocate, converts it
 * (the kernel's f2fs_convert_inline_inode): block 0 gets the inline bytes
 * when there were any, and the file never goes back inline.
 * Compressed files (F2FS's COMPR_FL) are read, written and cut by whole
 * clusters in cluster.c; here they only take the ordinary paths for what
 * clusters do not change (fallocate's preallocation, growth).
 *
 * The operations here make room first, as F2FS's call f2fs_balance_fs:
 * zlfs_setattr, zlfs_file_open (with O_TRUNC) and zlfs_file_fallocate
 * call zlfs_balance with their ZLFS_BUDGET_* (zlfs_file_fsync with none:
 * its nodes are dirty already) before anything changed; it may run GC and
 * checkpoints and drop the lock meanwhile.  zlfs_file_write and zlfs_file_truncate do not: a
 * write's caller makes room for its length, and truncation runs inside
 * setattr and open.  zlfs_setattr, zlfs_file_open and
 * zlfs_file_fallocate also apply the immutable and append-only flags
 * (flags.c's zlfs_may_*).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zlfs.h"
#include "data.h"
#include "bcache.h"
#include "checkpoint.h"
#include "segment.h"
#include "gc.h"
#include "node.h"
#include "inode.h"
#include "flags.h"
#include "cluster.h"
#include "file.h"
#include "xattr.h"

static const uint8_t zero_block[ZF_BLKSIZE];
#define ZERO_BATCH 256   /* fallocate: zero blocks per batch */

/* ---- reads ------------------------------------------------------------------------ */

static bool is_inline(const struct zf_inode *ri)
{
	return ri->i_inline & ZF_INLINE_DATA;
}

static unsigned int inline_max(const struct zlfs_sb *sbi, const struct zf_inode *ri)
{
	struct zf_ishape sh;

	zf_inode_shape(ri, zlfs_feat(sbi), &sh);
	return sh.inline_max;
}

/* Address of file block index, NULL_ADDR for a hole. */
static int block_addr(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, uint32_t *addr)
{
	struct znode *dn;
	unsigned int ofs, nr;
	int ret = zlfs_get_dnode(sbi, zi, index, false, &dn, &ofs);

	if (ret == -ENOENT) {
		*addr = ZF_NULL_ADDR;
		return 0;
	}
	if (ret)
		return ret;
	*addr = zf_le32_to_cpu(zlfs_dnode_addrs(sbi, dn, &nr)[ofs]);
	/* as the kernel's DATA_GENERIC_ENHANCE: inside the main area and valid in the SIT */
	if (*addr == ZF_COMPRESS_ADDR && zlfs_cluster_log(sbi, zi))
		return 0;     /* a compressed cluster's: mapped (fallocate's question) */
	if (*addr == ZF_COMPRESS_ADDR)
		return zlfs_corrupt(sbi, "block %llu of inode %u is a compressed-cluster marker, but "
				    "the file is not compressed", (unsigned long long)index, zi->ino);
	if (*addr == ZF_NULL_ADDR || *addr == ZF_NEW_ADDR)
		return 0;
	if ((ret = zlfs_block_in_use(sbi, *addr)) < 0)
		return ret;
	if (!ret)
		return zlfs_corrupt(sbi, "block %llu of inode %u is at %u, %s", (unsigned long long)index,
				    zi->ino, *addr, zlfs_is_main_blkaddr(sbi, *addr) ?
				    "which the SIT says is free" : "outside the main area");
	return 0;
}

int zlfs_file_next_mapped(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, uint64_t *next)
{
	struct zf_inode *ri = zi_raw(zi);
	struct zf_ishape sh;
	zf_inode_shape(ri, zlfs_feat(sbi), &sh);
	const uint64_t A = sh.dnode_addrs, AN = A * ZF_NIDS_PER_BLOCK;
	const uint64_t direct = sh.addrs;
	/* the inode's five node pointers and the blocks under each (F2FS's get_node_path) */
	const uint64_t span[5] = { A, A, AN, AN, AN * ZF_NIDS_PER_BLOCK };
	struct znode *dn;
	unsigned int ofs;
	int ret = zlfs_get_dnode(sbi, zi, index, false, &dn, &ofs);

	*next = index;
	if (ret == -EFBIG) {
		*next = UINT64_MAX;      /* past the tree's reach: nothing more */
		return 0;
	}
	if (ret != -ENOENT)
		return ret;
	uint64_t base = direct;
	for (unsigned int r = 0; r < 5; base += span[r], r++) {
		if (index >= base + span[r])
			continue;
		uint32_t nid = zf_le32_to_cpu(ri->i_nid[r]);
		uint64_t rel = index - base;
		if (!nid || r < 2) {
			*next = base + span[r];          /* the whole subtree is missing */
		} else if (r < 4) {
			*next = base + (rel / A + 1) * A;   /* a direct node under it is */
		} else {
			/* double indirect: is the indirect node below it there? */
			struct znode *in;
			uint64_t j = rel / AN;
			if ((ret = zlfs_node_get(sbi, nid, zi->ino, ZF_NODE_KIND_INDIRECT, &in)))
				return ret;
			*next = in->blk.in.nid[j] ? base + (rel / A + 1) * A : base + (j + 1) * AN;
		}
		return 0;
	}
	*next = UINT64_MAX;
	return 0;
}

/* Blocks zlfs itself writes (dentry blocks, symlink targets): through bcache.c. */
static bool meta_file(struct zinode *zi)
{
	mode_t m = zf_le16_to_cpu(zi_raw(zi)->i_mode);
	return S_ISDIR(m) || S_ISLNK(m);
}

int zlfs_read_file_block(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, void *buf)
{
	uint32_t a;
	int ret;

	if (meta_file(zi) && zlfs_bcache_get(sbi, zi->ino, index, buf))
		return 0;
	if (zlfs_cluster_log(sbi, zi))
		return zlfs_cluster_read(sbi, zi, buf, ZF_BLKSIZE, index * ZF_BLKSIZE);
	if ((ret = block_addr(sbi, zi, index, &a)))
		return ret;
	if (a == ZF_NULL_ADDR || a == ZF_NEW_ADDR) {
		memset(buf, 0, ZF_BLKSIZE);
		return 0;
	}
	if ((ret = zlfs_read_block(sbi, a, buf)))
		return ret;
	if (meta_file(zi))
		zlfs_bcache_put(sbi, zi->ino, index, buf);
	return 0;
}

/* Read through the block cache, a block at a time (len is within i_size). */
static int read_meta(struct zlfs_sb *sbi, struct zinode *zi, char *buf, size_t len, uint64_t off,
		     size_t *got)
{
	uint8_t *blk = malloc(ZF_BLKSIZE);
	int ret = 0;

	if (!blk)
		return -ENOMEM;
	while (*got < len) {
		uint64_t pos = off + *got;
		size_t in = (size_t)(pos % ZF_BLKSIZE), k = ZF_BLKSIZE - in;
		if (k > len - *got)
			k = len - *got;
		if ((ret = zlfs_read_file_block(sbi, zi, pos / ZF_BLKSIZE, blk)))
			break;
		memcpy(buf + *got, blk + in, k);
		*got += k;
	}
	free(blk);
	return ret;
}

int zlfs_file_read(struct zlfs_sb *sbi, struct zinode *zi, char *buf, size_t len, uint64_t off,
		   size_t *got)
{
	struct zf_inode *ri = zi_raw(zi);
	uint64_t size = zf_le64_to_cpu(ri->i_size);
	int ret = 0;

	*got = 0;
	if (off >= size || !len)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	if (is_inline(ri)) {
		unsigned int max = inline_max(sbi, ri);
		const char *data = zf_inline_data(ri);
		for (size_t i = 0; i < len; i++)
			buf[i] = off + i < max ? data[off + i] : 0;
		*got = len;
		return 0;
	}
	if (meta_file(zi))   /* a symlink's target may still be in the cache only */
		return read_meta(sbi, zi, buf, len, off, got);
	if (zlfs_cluster_log(sbi, zi)) {
		if (!(ret = zlfs_cluster_read(sbi, zi, buf, len, off)))
			*got = len;
		return ret;
	}
	/*
	 * Whole blocks are read straight into buf, so a run of them adjacent
	 * on the device is one command (zlfs_read_blocks_unlocked); only a
	 * partial first or last block goes through edge[] and is copied.
	 */
	uint64_t first = off / ZF_BLKSIZE, last = (off + len - 1) / ZF_BLKSIZE;
	uint32_t n = (uint32_t)(last - first + 1);
	void **bufs = calloc(n, sizeof(*bufs));
	uint32_t *addrs = calloc(n, sizeof(*addrs));
	uint8_t *edge = malloc(2 * ZF_BLKSIZE);
	uint8_t *dst[2] = { NULL, NULL };        /* where edge[0], edge[1] go in buf */
	size_t lo[2] = { 0, 0 }, hi[2] = { 0, 0 };
	uint32_t nio = 0;
	if (!bufs || !addrs || !edge) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t bstart = (first + i) * ZF_BLKSIZE;
		size_t a = off > bstart ? (size_t)(off - bstart) : 0;
		size_t b = off + len < bstart + ZF_BLKSIZE ? (size_t)(off + len - bstart) : ZF_BLKSIZE;
		uint8_t *to;
		if (a == 0 && b == ZF_BLKSIZE) {
			to = (uint8_t *)buf + (bstart - off);
		} else {
			int e = i == 0 ? 0 : 1;
			to = edge + (size_t)e * ZF_BLKSIZE;
			dst[e] = (uint8_t *)buf + (bstart + a - off);
			lo[e] = a;
			hi[e] = b;
		}
		uint32_t addr;
		if ((ret = block_addr(sbi, zi, first + i, &addr)))
			goto out;
		if (addr == ZF_NULL_ADDR || addr == ZF_NEW_ADDR) {
			memset(to, 0, ZF_BLKSIZE);
			continue;
		}
		bufs[nio] = to;
		addrs[nio++] = addr;
	}
	if ((ret = zlfs_read_blocks_unlocked(sbi, bufs, addrs, nio, ZLFS_PRIO_BE)))
		goto out;
	for (int e = 0; e < 2; e++)
		if (dst[e])
			memcpy(dst[e], edge + (size_t)e * ZF_BLKSIZE + lo[e], hi[e] - lo[e]);
	*got = len;
out:
	free(edge);
	free(bufs);
	free(addrs);
	return ret;
}

/* Append len bytes at (fd, pos) to the pieces, merged with the last where they continue it. */
static int rseg_add(struct zlfs_rseg *seg, unsigned int max, unsigned int *n, int fd, uint64_t pos,
		    size_t len)
{
	struct zlfs_rseg *last = *n ? &seg[*n - 1] : NULL;

	if (last && last->fd == fd && (fd < 0 || last->pos + last->len == pos)) {
		last->len += len;
		return 0;
	}
	if (*n == max)
		return -EOPNOTSUPP;
	seg[(*n)++] = (struct zlfs_rseg){ fd, pos, len };
	return 0;
}

int zlfs_file_read_map(struct zlfs_sb *sbi, struct zinode *zi, size_t len, uint64_t off,
		       struct zlfs_rseg *seg, unsigned int max, unsigned int *nseg, size_t *got)
{
	struct zf_inode *ri = zi_raw(zi);
	uint64_t size = zf_le64_to_cpu(ri->i_size);
	int ret = 0;

	*nseg = 0;
	*got = 0;
	if (is_inline(ri) || meta_file(zi) || zlfs_cluster_log(sbi, zi))
		return -EOPNOTSUPP;
	if (off >= size || !len)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	/*
	 * Blocks adjacent on the device are asked for as one range (one
	 * piece, one read counted); a hole is a piece of zeros.
	 */
	uint64_t first = off / ZF_BLKSIZE, last = (off + len - 1) / ZF_BLKSIZE;
	for (uint64_t i = first; i <= last; ) {
		uint32_t addr, a2;
		uint32_t k = 1;
		if ((ret = block_addr(sbi, zi, i, &addr)))
			return ret;
		bool hole = addr == ZF_NULL_ADDR || addr == ZF_NEW_ADDR;
		while (!hole && i + k <= last && k < ZLFS_READ_RUN_MAX) {
			if ((ret = block_addr(sbi, zi, i + k, &a2)))
				return ret;
			if (a2 != addr + k)
				break;
			k++;
		}
		/* the bytes of blocks [i, i + k) the read wants */
		uint64_t from = i == first ? off : i * ZF_BLKSIZE;
		uint64_t to = (i + k) * ZF_BLKSIZE < off + len ? (i + k) * ZF_BLKSIZE : off + len;
		int fd = -1;
		uint64_t pos = 0;
		if (!hole) {
			if ((ret = zlfs_read_fd(sbi, addr, k, &fd, &pos)))
				return ret;
			pos += from - i * ZF_BLKSIZE;
		}
		if ((ret = rseg_add(seg, max, nseg, fd, pos, (size_t)(to - from))))
			return ret;
		i += k;
	}
	*got = len;
	return 0;
}

/* ---- writes ----------------------------------------------------------------------- */

static unsigned int data_log(struct zinode *zi)
{
	return S_ISDIR(zf_le16_to_cpu(zi_raw(zi)->i_mode)) ? ZF_LOG_HOT_DATA : ZF_LOG_WARM_DATA;
}

/*
 * Give file block `index` a new address (old one invalidated) and return
 * it.  Caller writes the block there before anything reads it.
 */
static int remap_block(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, unsigned int log,
		       uint32_t *addr)
{
	struct znode *dn;
	unsigned int ofs, nr;
	int ret;

	if ((ret = zlfs_get_dnode(sbi, zi, index, true, &dn, &ofs)))
		return ret;
	zf_le32 *slot = &zlfs_dnode_addrs(sbi, dn, &nr)[ofs];
	uint32_t old = zf_le32_to_cpu(*slot);
	uint16_t ofs_in_node = (uint16_t)ofs;
	if ((old == ZF_NULL_ADDR || old == ZF_NEW_ADDR) && !zlfs_avail_blocks(sbi))
		return -ENOSPC;   /* a new block: from the user's share */
	if ((ret = zlfs_alloc_block(sbi, log, dn->nid, ofs_in_node, zlfs_nat(sbi, dn->nid)->version, addr)))
		return ret;
	if (old == ZF_NULL_ADDR) {
		struct zf_inode *ri = zi_raw(zi);
		ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) + 1);
	} else if (zlfs_addr_reserved(old)) {
		zlfs_reserved_drop(sbi, 1);      /* the reservation becomes this block */
	} else {
		zlfs_invalidate_block(sbi, old);
	}
	*slot = zf_cpu_to_le32(*addr);
	zlfs_node_dirty(sbi, dn);
	/* the inode block only if it changed: an fsync then writes the direct node alone */
	if (zlfs_ext_drop(zi) || old == ZF_NULL_ADDR)
		zlfs_node_dirty(sbi, zi->node);
	return 0;
}

/* A new address for file block `index`; the slot itself is not touched yet. */
static int alloc_for(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, uint32_t *old,
		     uint32_t *addr)
{
	struct znode *dn;
	unsigned int ofs, nr;
	int ret;

	if ((ret = zlfs_get_dnode(sbi, zi, index, true, &dn, &ofs)))
		return ret;
	*old = zf_le32_to_cpu(zlfs_dnode_addrs(sbi, dn, &nr)[ofs]);
	/*
	 * A new block comes from the user's share, which the direct node just
	 * made for it may have taken: the caller's check counted data only.
	 * (A rewrite's block frees the old one when it commits.)
	 */
	if ((*old == ZF_NULL_ADDR || *old == ZF_NEW_ADDR) && !zlfs_avail_blocks(sbi))
		return -ENOSPC;
	uint16_t ofs_in_node = (uint16_t)ofs;
	return zlfs_alloc_block(sbi, ZF_LOG_WARM_DATA, dn->nid, ofs_in_node,
				zlfs_nat(sbi, dn->nid)->version, addr);
}

/*
 * The data of blocks [first, first+n) is on the device: point the slots at
 * it.  A slot that changed meanwhile (another write, a truncate) keeps its
 * new value and our block is dropped; one that GC moved takes ours.
 */
static void commit_blocks(struct zlfs_sb *sbi, struct zinode *zi, uint64_t first,
			  const uint32_t *olds, const uint32_t *addrs, uint32_t n)
{
	bool grew = false;

	for (uint32_t i = 0; i < n; i++) {
		struct znode *dn;
		unsigned int ofs, nr;
		if (zlfs_get_dnode(sbi, zi, first + i, false, &dn, &ofs)) {
			zlfs_invalidate_block(sbi, addrs[i]);
			continue;
		}
		zf_le32 *slot = &zlfs_dnode_addrs(sbi, dn, &nr)[ofs];
		uint32_t cur = zf_le32_to_cpu(*slot);
		/* GC moving the old block meanwhile is no reason to drop ours */
		if (cur != olds[i] && !zlfs_seg_moved(sbi, olds[i], cur)) {
			zlfs_invalidate_block(sbi, addrs[i]);
			continue;
		}
		struct zf_inode *ri = zi_raw(zi);
		if (cur == ZF_NULL_ADDR) {
			ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) + 1);
			grew = true;
		} else if (zlfs_addr_reserved(cur)) {
			zlfs_reserved_drop(sbi, 1);
		} else {
			zlfs_invalidate_block(sbi, cur);
		}
		*slot = zf_cpu_to_le32(addrs[i]);
		zlfs_node_dirty(sbi, dn);
	}
	/*
	 * The inode block only if it changed (its block count, the extent
	 * hint): an overwrite past the inode's own slots then leaves it clean,
	 * and an fsync writes the direct nodes alone, as F2FS's does.
	 */
	if (zlfs_ext_drop(zi) || grew)
		zlfs_node_dirty(sbi, zi->node);
}

/*
 * A dentry or symlink block changes in the cache only (bcache.c writes it
 * back).  A block the file did not have is reserved now: its slot becomes
 * NEW_ADDR and counts in i_blocks, so stat and the free space are right
 * before the block is written.
 */
static int defer_block(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, const void *buf,
		       unsigned int log)
{
	struct znode *dn;
	unsigned int ofs, nr;
	int ret;

	if ((ret = zlfs_get_dnode(sbi, zi, index, true, &dn, &ofs)))
		return ret;
	zf_le32 *slot = &zlfs_dnode_addrs(sbi, dn, &nr)[ofs];
	uint32_t old = zf_le32_to_cpu(*slot);
	struct zlfs_bslot bs = {
		.nid = dn->nid,
		.slot = (uint16_t)ofs,
		.ofs_in_node = (uint16_t)ofs,
		.log = (uint8_t)log,
		.reserve = old == ZF_NULL_ADDR || old == ZF_NEW_ADDR,
	};
	if (old == ZF_NULL_ADDR) {
		if (!zlfs_avail_blocks(sbi))
			return -ENOSPC;   /* a new block: from the user's share */
		if ((ret = zlfs_bcache_dirty(sbi, zi->ino, index, buf, &bs)))
			return ret;
		struct zf_inode *ri = zi_raw(zi);
		ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) + 1);
		*slot = zf_cpu_to_le32(ZF_NEW_ADDR);
		zlfs_node_dirty(sbi, dn);
	} else if ((ret = zlfs_bcache_dirty(sbi, zi->ino, index, buf, &bs))) {
		return ret;
	}
	zlfs_ext_drop(zi);
	zlfs_node_dirty(sbi, zi->node);
	return 0;
}

int zlfs_write_file_block(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index,
			  const void *buf, unsigned int log)
{
	uint32_t a;
	int ret;

	if (sbi->fatal)
		return -EROFS;
	if (meta_file(zi))
		return defer_block(sbi, zi, index, buf, log);
	if ((ret = remap_block(sbi, zi, index, log, &a)))
		return ret;
	void *b = (void *)buf;
	return zlfs_write_blocks(sbi, &b, &a, 1);
}

int zlfs_inline_reserved_ok(struct zlfs_sb *sbi, struct zinode *zi)
{
	struct zf_inode *ri = zi_raw(zi);
	unsigned int at = zf_extra_isize_words(ri);

	if (!ri->i_addr[at])
		return 0;
	return zlfs_corrupt(sbi, "inode %u: inline, but the reserved word before its inline area "
			    "(block 0's slot) is %u, not 0", zi->ino, zf_le32_to_cpu(ri->i_addr[at]));
}

/*
 * Inline data -> block 0.  The kernel writes the block only with
 * DATA_EXIST; bytes that are not zero count too (a writer that forgot the
 * flag), and without either the file is a hole there, as it read.
 */
int zlfs_convert_inline(struct zlfs_sb *sbi, struct zinode *zi)
{
	struct zf_inode *ri = zi_raw(zi);
	uint8_t *blk;
	int ret = 0;

	if (!is_inline(ri))
		return 0;
	if ((ret = zlfs_inline_reserved_ok(sbi, zi)))
		return ret;
	blk = calloc(1, ZF_BLKSIZE);
	if (!blk)
		return -ENOMEM;
	unsigned int max = inline_max(sbi, ri);
	uint64_t size = zf_le64_to_cpu(ri->i_size);
	size_t n = size < max ? (size_t)size : max;
	memcpy(blk, zf_inline_data(ri), n);
	bool data = (ri->i_inline & ZF_DATA_EXIST) != 0;
	for (size_t i = 0; i < n && !data; i++)
		data = blk[i] != 0;
	memset(zf_inline_data(ri), 0, max);
	ri->i_inline &= (uint8_t)~(ZF_INLINE_DATA | ZF_DATA_EXIST);
	zlfs_node_dirty(sbi, zi->node);
	if (n && data) {
		ret = zlfs_write_file_block(sbi, zi, 0, blk, data_log(zi));
		/*
		 * The inode that goes out next no longer holds the bytes; if it
		 * landed in an fsync chain and block 0 did not, roll-forward
		 * would keep the slot's old value (none) and the bytes an
		 * earlier fsync promised would read as zeros.
		 */
		zlfs_nat_mut(sbi, zi->ino)->flags |= ZNAT_DATA_FIRST;
	}
	free(blk);
	return ret;
}

/* A write that fits in the inline area: in place, in the inode block. */
static void write_inline(struct zlfs_sb *sbi, struct zinode *zi, const char *buf, size_t len,
			 uint64_t off)
{
	struct zf_inode *ri = zi_raw(zi);

	memcpy((char *)zf_inline_data(ri) + off, buf, len);
	ri->i_inline |= ZF_DATA_EXIST;
	if (off + len > zf_le64_to_cpu(ri->i_size))
		ri->i_size = zf_cpu_to_le64(off + len);
	zlfs_inode_touch(zi, true, true, false);
	zlfs_node_dirty(sbi, zi->node);
}

int zlfs_file_symlink(struct zlfs_sb *sbi, struct zinode *zi, const char *link)
{
	struct zf_inode *ri = zi_raw(zi);
	size_t len = strlen(link);
	uint8_t *blk;
	int ret;

	if (len >= ZF_BLKSIZE)
		return -ENAMETOOLONG;
	/* the kernel writes the target with its NUL: inline when both fit */
	if (is_inline(ri) && len + 1 <= inline_max(sbi, ri)) {
		write_inline(sbi, zi, link, len, 0);
		return 0;
	}
	ri->i_inline &= (uint8_t)~(ZF_INLINE_DATA | ZF_DATA_EXIST);   /* nothing to move yet */
	if (!(blk = calloc(1, ZF_BLKSIZE)))
		return -ENOMEM;
	memcpy(blk, link, len);
	if (!(ret = zlfs_write_file_block(sbi, zi, 0, blk, ZF_LOG_WARM_DATA)))
		zi_raw(zi)->i_size = zf_cpu_to_le64(len);
	free(blk);
	return ret;
}

int zlfs_file_write(struct zlfs_sb *sbi, struct zinode *zi, const char *buf, size_t len,
		    uint64_t off)
{
	struct zf_inode *ri = zi_raw(zi);
	int ret;

	if (sbi->fatal)
		return -EROFS;
	if (!len)
		return 0;
	if ((off + len + ZF_BLKSIZE - 1) / ZF_BLKSIZE > zlfs_max_file_blocks())
		return -EFBIG;
	if (is_inline(ri) && off + len <= inline_max(sbi, ri)) {
		write_inline(sbi, zi, buf, len, off);
		return 0;
	}
	if ((ret = zlfs_convert_inline(sbi, zi)))
		return ret;
	if (zlfs_cluster_log(sbi, zi))
		return zlfs_cluster_write(sbi, zi, buf, len, off);
	uint64_t first = off / ZF_BLKSIZE, last = (off + len - 1) / ZF_BLKSIZE;
	uint32_t n = (uint32_t)(last - first + 1);
	if (zlfs_avail_blocks(sbi) < n)
		return -ENOSPC;
	void **bufs = calloc(n, sizeof(*bufs));
	uint32_t *addrs = calloc(n, sizeof(*addrs)), *olds = NULL;
	uint8_t *edge = malloc(2 * ZF_BLKSIZE);   /* partial first and last blocks */
	if (!bufs || !addrs || !edge) {
		ret = -ENOMEM;
		goto out;
	}
	/* read what partial blocks keep, before anything moves */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t idx = first + i;
		uint64_t bstart = idx * ZF_BLKSIZE;
		size_t lo = off > bstart ? (size_t)(off - bstart) : 0;
		size_t hi = off + len < bstart + ZF_BLKSIZE ? (size_t)(off + len - bstart) : ZF_BLKSIZE;
		if (lo == 0 && hi == ZF_BLKSIZE) {
			bufs[i] = (void *)(buf + (bstart - off));
			continue;
		}
		uint8_t *e = edge + (i == 0 ? 0 : ZF_BLKSIZE);
		if ((ret = zlfs_read_file_block(sbi, zi, idx, e)))
			goto out;
		memcpy(e + lo, buf + (bstart + lo - off), hi - lo);
		bufs[i] = e;
	}
	/*
	 * Allocate in order; the writes go out in the same order.  The node
	 * slots keep the old addresses until the data has landed, so a reader
	 * running meanwhile (the lock is dropped) sees the old block whole.
	 */
	olds = calloc(n, sizeof(*olds));
	if (!olds) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		if ((ret = alloc_for(sbi, zi, first + i, &olds[i], &addrs[i]))) {
			if (i) {
				zlfs_write_unlocked(sbi, bufs, addrs, i, ZLFS_PRIO_BE);
				commit_blocks(sbi, zi, first, olds, addrs, i);
			}
			goto out;
		}
	}
	ret = zlfs_write_unlocked(sbi, bufs, addrs, n, ZLFS_PRIO_BE);
	if (ret) {
		for (uint32_t i = 0; i < n; i++)
			zlfs_invalidate_block(sbi, addrs[i]);
		goto out;
	}
	commit_blocks(sbi, zi, first, olds, addrs, n);
	ri = zi_raw(zi);
	bool changed = zlfs_inode_touch(zi, true, true, false);
	if (off + len > zf_le64_to_cpu(ri->i_size)) {
		ri->i_size = zf_cpu_to_le64(off + len);
		changed = true;
	}
	if (changed)
		zlfs_node_dirty(sbi, zi->node);
out:
	free(bufs);
	free(addrs);
	free(olds);
	free(edge);
	return ret;
}

/* Zero [from, to) inside file block index (a partial block), out of place. */
static int zero_partial(struct zlfs_sb *sbi, struct zinode *zi, uint64_t index, size_t from, size_t to)
{
	uint8_t *blk = malloc(ZF_BLKSIZE);
	uint32_t a;
	int ret;

	if (!blk)
		return -ENOMEM;
	if ((ret = block_addr(sbi, zi, index, &a)) || a == ZF_NULL_ADDR) {
		free(blk);
		return ret;
	}
	if (!(ret = zlfs_read_file_block(sbi, zi, index, blk))) {
		memset(blk + from, 0, to - from);
		ret = zlfs_write_file_block(sbi, zi, index, blk, data_log(zi));
	}
	free(blk);
	return ret;
}

int zlfs_file_truncate(struct zlfs_sb *sbi, struct zinode *zi, uint64_t size)
{
	struct zf_inode *ri = zi_raw(zi);
	uint64_t old = zf_le64_to_cpu(ri->i_size);
	int ret;

	if (sbi->fatal)
		return -EROFS;
	if (size / ZF_BLKSIZE > zlfs_max_file_blocks())
		return -EFBIG;
	bool compr = zlfs_cluster_log(sbi, zi) != 0;
	bool rel = compr && (ri->i_inline & ZF_COMPRESS_RELEASED);
	if (is_inline(ri)) {
		unsigned int max = inline_max(sbi, ri);
		if (size > max) {
			if ((ret = zlfs_convert_inline(sbi, zi)))
				return ret;
		} else {
			if (size < old)
				memset((char *)zf_inline_data(ri) + size, 0, (old < max ? old : max) - size);
			if (!size)
				ri->i_inline &= (uint8_t)~ZF_DATA_EXIST;
			goto done;
		}
	}
	/* F2FS: a released file is read-only until emptied (or reserved again) */
	if (rel && size)
		return size == old ? 0 : -EPERM;
	if (size < old) {
		/* whole nodes may go: roll-forward replays no removal of nodes */
		zlfs_node_need_cp(sbi, zi->ino);
		/* a compressed file's cluster at the new EOF is cut first (cluster.c) */
		if (compr && (ret = zlfs_cluster_truncate(sbi, zi, size)))
			return ret;
		if ((ret = zlfs_truncate_blocks(sbi, zi, (size + ZF_BLKSIZE - 1) / ZF_BLKSIZE)))
			return ret;
		if (!compr && size % ZF_BLKSIZE &&
		    (ret = zero_partial(sbi, zi, size / ZF_BLKSIZE, size % ZF_BLKSIZE, ZF_BLKSIZE)))
			return ret;
	}
done:
	ri = zi_raw(zi);
	if (rel)      /* emptied: writable again, its markers gone uncounted (node.c) */
		ri->i_inline &= (uint8_t)~ZF_COMPRESS_RELEASED;
	ri->i_size = zf_cpu_to_le64(size);
	zlfs_inode_touch(zi, true, true, false);
	zlfs_node_dirty(sbi, zi->node);
	return 0;
}

/* Free file blocks [from, to) (whole blocks only). */
static int punch_blocks(struct zlfs_sb *sbi, struct zinode *zi, uint64_t from, uint64_t to)
{
	for (uint64_t idx = from; idx < to; idx++) {
		struct znode *dn;
		unsigned int ofs, nr;
		int ret = zlfs_get_dnode(sbi, zi, idx, false, &dn, &ofs);
		if (ret == -ENOENT) {
			/* a missing node maps nothing: on past its whole subtree */
			uint64_t nx;
			if ((ret = zlfs_file_next_mapped(sbi, zi, idx, &nx)))
				return ret;
			if (nx > idx)
				idx = nx - 1;
			continue;
		}
		if (ret)
			return ret;
		zf_le32 *slot = &zlfs_dnode_addrs(sbi, dn, &nr)[ofs];
		uint32_t a = zf_le32_to_cpu(*slot);
		if (a == ZF_NULL_ADDR)
			continue;
		if (zlfs_addr_reserved(a))
			zlfs_reserved_drop(sbi, 1);
		else
			zlfs_invalidate_block(sbi, a);
		*slot = 0;
		zlfs_ext_drop(zi);
		struct zf_inode *ri = zi_raw(zi);
		ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) - 1);
		zlfs_node_dirty(sbi, dn);
	}
	return 0;
}

/* Zero [off, end) inside the file's size: partial blocks rewritten, whole ones freed. */
static int punch_range(struct zlfs_sb *sbi, struct zinode *zi, uint64_t off, uint64_t end)
{
	uint64_t size = zf_le64_to_cpu(zi_raw(zi)->i_size);
	int ret;

	if (end > size)
		end = size;
	if (off >= end)
		return 0;
	uint64_t fb = (off + ZF_BLKSIZE - 1) / ZF_BLKSIZE, lb = end / ZF_BLKSIZE;
	if (fb > lb)   /* inside one block */
		return zero_partial(sbi, zi, off / ZF_BLKSIZE, off % ZF_BLKSIZE, end % ZF_BLKSIZE);
	if (off % ZF_BLKSIZE &&
	    (ret = zero_partial(sbi, zi, off / ZF_BLKSIZE, off % ZF_BLKSIZE, ZF_BLKSIZE)))
		return ret;
	if (end % ZF_BLKSIZE && lb * ZF_BLKSIZE < end &&
	    (ret = zero_partial(sbi, zi, lb, 0, end % ZF_BLKSIZE)))
		return ret;
	return punch_blocks(sbi, zi, fb, lb);
}

/* Zero blocks for file blocks [first, first+n), all holes now: written as one batch. */
static int zero_run(struct zlfs_sb *sbi, struct zinode *zi, uint64_t first, uint32_t n)
{
	void *bufs[ZERO_BATCH];
	uint32_t addrs[ZERO_BATCH], olds[ZERO_BATCH];
	int ret = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		bufs[i] = (void *)zero_block;
		if ((ret = alloc_for(sbi, zi, first + i, &olds[i], &addrs[i])))
			break;
	}
	if (!i)
		return ret;
	int wret = zlfs_write_unlocked(sbi, bufs, addrs, i, ZLFS_PRIO_BE);
	if (wret) {
		for (uint32_t k = 0; k < i; k++)
			zlfs_invalidate_block(sbi, addrs[k]);
		return wret;
	}
	commit_blocks(sbi, zi, first, olds, addrs, i);
	return ret;
}

/*
 * Give every hole of [off, end) a zero block (zlfs writes no NEW_ADDR), in
 * batches; between batches the state is whole (blocks past i_size are
 * allowed), so foreground GC may run there.
 */
static int alloc_range(struct zlfs_sb *sbi, struct zinode *zi, uint64_t off, uint64_t end)
{
	uint64_t fb = off / ZF_BLKSIZE, lb = (end + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
	uint64_t holes = 0;
	int ret;

	for (uint64_t idx = fb; idx < lb; idx++) {
		uint32_t a;
		uint64_t nx;
		/* a missing node's subtree is holes all through: counted at once */
		if ((ret = zlfs_file_next_mapped(sbi, zi, idx, &nx)))
			return ret;
		if (nx > idx) {
			uint64_t e = nx < lb ? nx : lb;
			holes += e - idx;
			idx = e - 1;
			continue;
		}
		if ((ret = block_addr(sbi, zi, idx, &a)))
			return ret;
		holes += a == ZF_NULL_ADDR;
	}
	if (zlfs_avail_blocks(sbi) < holes)
		return -ENOSPC;
	for (uint64_t idx = fb; idx < lb; ) {
		uint32_t a;
		if ((ret = block_addr(sbi, zi, idx, &a)))
			return ret;
		if (a != ZF_NULL_ADDR) {
			idx++;
			continue;
		}
		uint32_t n = 1;
		while (n < ZERO_BATCH && idx + n < lb) {
			if ((ret = block_addr(sbi, zi, idx + n, &a)))
				return ret;
			if (a != ZF_NULL_ADDR)
				break;
			n++;
		}
		if ((ret = zlfs_balance(sbi, n + 2)) || (ret = zero_run(sbi, zi, idx, n)))
			return ret;
		idx += n;
	}
	return 0;
}

/*
 * Modes: 0 and KEEP_SIZE (allocate), PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE
 * [|KEEP_SIZE] (punch, then allocate: the range reads zeros and has its
 * blocks).  COLLAPSE_RANGE, INSERT_RANGE, UNSHARE: EOPNOTSUPP.
 */
int zlfs_file_fallocate(struct zlfs_sb *sbi, struct zinode *zi, int mode, uint64_t off,
			uint64_t len)
{
	struct zf_inode *ri;
	uint64_t end = off + len;
	int ret;

	if ((ret = zlfs_balance(sbi, ZLFS_BUDGET_FALLOCATE)) || (ret = zlfs_may_fallocate(zi, mode)))
		return ret;
	if (sbi->fatal)
		return -EROFS;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	if (end < off || (end + ZF_BLKSIZE - 1) / ZF_BLKSIZE > zlfs_max_file_blocks())
		return -EFBIG;
	if (zlfs_cluster_log(sbi, zi)) {
		/* F2FS: a compressed file is only preallocated, and not once released */
		if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
			return -EOPNOTSUPP;
		if (zi_raw(zi)->i_inline & ZF_COMPRESS_RELEASED)
			return -EPERM;
	}
	if ((ret = zlfs_convert_inline(sbi, zi)))
		return ret;
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		zlfs_node_need_cp(sbi, zi->ino);   /* punching may free whole nodes */
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		if (!(ret = punch_range(sbi, zi, off, end))) {
			zlfs_inode_touch(zi, true, true, false);
			zlfs_node_dirty(sbi, zi->node);
		}
		return ret;
	}
	if ((mode & FALLOC_FL_ZERO_RANGE) && (ret = punch_range(sbi, zi, off, end)))
		return ret;
	if ((ret = alloc_range(sbi, zi, off, end)))
		return ret;
	ri = zi_raw(zi);
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > zf_le64_to_cpu(ri->i_size))
		ri->i_size = zf_cpu_to_le64(end);
	else if (end > zf_le64_to_cpu(ri->i_size))
		ri->i_advise |= ZF_FADVISE_KEEP_SIZE;   /* roll-forward keeps i_size (F2FS's rule) */
	/* allocation alone changes no data; zeroing does */
	zlfs_inode_touch(zi, (mode & FALLOC_FL_ZERO_RANGE) != 0, true, false);
	zlfs_node_dirty(sbi, zi->node);
	return 0;
}

/* ---- setattr and open ------------------------------------------------------------- */

static void set_time(zf_le64 *sec, zf_le32 *nsec, const struct timespec *ts)
{
	*sec = zf_cpu_to_le64((uint64_t)ts->tv_sec);
	*nsec = zf_cpu_to_le32((uint32_t)ts->tv_nsec);
}

/*
 * What a setattr changes, as flags.c judges it against immutable and
 * append-only.  Times the caller gave are "set", "now" ones not.  When
 * the caller owns mtime and ctime (FUSE's writeback cache), even
 * utimes(NULL)'s mtime comes as a time of the caller's (only atime says
 * NOW), and an mtime alone is its own stamp of a write, sent at writeback
 * and close, which the VFS never judges: so there only an explicit atime
 * counts as "set" (and `touch -m -d`, which cannot be told from the
 * stamp, gets through).
 */
static unsigned int setattr_what(const struct zlfs_iattr *ia)
{
	unsigned int v = ia->valid, what = 0;

	if (v & ZLFS_ATTR_SIZE)
		what |= ZLFS_SA_SIZE;
	if (v & (ZLFS_ATTR_MODE | ZLFS_ATTR_UID | ZLFS_ATTR_GID))
		what |= ZLFS_SA_OWNER;
	if (v & (ZLFS_ATTR_ATIME_NOW | ZLFS_ATTR_MTIME_NOW))
		what |= ZLFS_SA_TIMES_NOW;
	if (((v & ZLFS_ATTR_ATIME) && !(v & ZLFS_ATTR_ATIME_NOW)) ||
	    ((v & ZLFS_ATTR_MTIME) && !(v & ZLFS_ATTR_MTIME_NOW) && !ia->kernel_times))
		what |= ZLFS_SA_TIMES_SET;
	return what;
}

int zlfs_setattr(struct zlfs_sb *sbi, struct zinode *zi, const struct zlfs_iattr *ia,
		 zlfs_truncate_fn truncate)
{
	unsigned int v = ia->valid;
	int ret;

	if ((ret = zlfs_writable(sbi)) ||
	    ((v & ZLFS_ATTR_SIZE) && (ret = zlfs_balance(sbi, ZLFS_BUDGET_TRUNCATE))))
		return ret;
	struct zf_inode *ri = zi_raw(zi);
	mode_t mode = zf_le16_to_cpu(ri->i_mode);
	if ((ret = zlfs_may_setattr(zi, setattr_what(ia))))
		return ret;
	if (v & ZLFS_ATTR_SIZE) {
		if (S_ISDIR(mode))
			return -EISDIR;
		if (!S_ISREG(mode))
			return -EINVAL;
		if ((ret = (truncate ? truncate : zlfs_file_truncate)(sbi, zi, ia->size)))
			return ret;
		ri = zi_raw(zi);
	}
	if (v & ZLFS_ATTR_MODE) {
		ri->i_mode = zf_cpu_to_le16((uint16_t)((mode & S_IFMT) | (ia->mode & 07777)));
		if ((ret = zlfs_acl_chmod(sbi, zi, ia->mode & 07777)))
			return ret;
		ri = zi_raw(zi);
	}
	if (v & ZLFS_ATTR_UID)
		ri->i_uid = zf_cpu_to_le32(ia->uid);
	if (v & ZLFS_ATTR_GID)
		ri->i_gid = zf_cpu_to_le32(ia->gid);
	if (v & ZLFS_ATTR_ATIME_NOW)
		set_time(&ri->i_atime, &ri->i_atime_nsec, &ia->now);
	else if (v & ZLFS_ATTR_ATIME)
		set_time(&ri->i_atime, &ri->i_atime_nsec, &ia->atime);
	if (v & ZLFS_ATTR_MTIME_NOW)
		set_time(&ri->i_mtime, &ri->i_mtime_nsec, &ia->now);
	else if (v & ZLFS_ATTR_MTIME)
		set_time(&ri->i_mtime, &ri->i_mtime_nsec, &ia->mtime);
	if (v & ZLFS_ATTR_CTIME)
		set_time(&ri->i_ctime, &ri->i_ctime_nsec, &ia->ctime);
	else if (!ia->kernel_times)   /* the caller kept its ctime: so do we */
		set_time(&ri->i_ctime, &ri->i_ctime_nsec, &ia->now);
	zlfs_inode_dirty(sbi, zi);
	return 0;
}

int zlfs_file_open(struct zlfs_sb *sbi, uint32_t ino, int flags, zlfs_truncate_fn truncate,
		   struct zinode **out)
{
	bool write = (flags & O_ACCMODE) != O_RDONLY;
	struct zinode *zi;
	int ret;

	if ((flags & O_TRUNC) && write && (ret = zlfs_balance(sbi, ZLFS_BUDGET_TRUNCATE)))
		return ret;
	if ((ret = zlfs_iget(sbi, ino, &zi)) || (write && (ret = zlfs_writable(sbi))) ||
	    (ret = zlfs_may_open(zi, flags)))
		return ret;
	mode_t mode = zf_le16_to_cpu(zi_raw(zi)->i_mode);
	if (S_ISDIR(mode))
		return -EISDIR;
	if ((flags & O_TRUNC) && S_ISREG(mode) &&
	    (ret = (truncate ? truncate : zlfs_file_truncate)(sbi, zi, 0)))
		return ret;
	/*
	 * A released compressed file takes no writes (F2FS: EPERM at write).
	 * Under the kernel's writeback cache a write(2) never reaches us, and
	 * one refused at writeback would be lost: so the open is refused.
	 */
	if (write && S_ISREG(mode) && zlfs_cluster_log(sbi, zi) &&
	    (zi_raw(zi)->i_inline & ZF_COMPRESS_RELEASED))
		return -EPERM;
	zi->nopen++;
	if (write && S_ISREG(mode))
		zi->nwrite++;
	*out = zi;
	return 0;
}

/*
 * F2FS's need_do_checkpoint, as zlfs keeps it: roll-forward restores a
 * regular file's data, size, times, mode, owner and xattrs, and the name
 * of a file created since the checkpoint in a directory the checkpoint
 * has; links, renames, unlinks and nodes freed by shrinking go only
 * through a checkpoint.  The chain is bounded so recovery stays short.
 */
#define RF_MAX_BLOCKS 4096

static bool fsync_needs_cp(struct zlfs_sb *sbi, struct zinode *zi)
{
	const struct zf_inode *ri = zi_raw(zi);

	/* compressed clusters are never rolled forward (the kernel's CP_COMPRESSED) */
	return sbi->fsync_cp || !S_ISREG(zf_le16_to_cpu(ri->i_mode)) || zlfs_cluster_log(sbi, zi) ||
	       zf_le32_to_cpu(ri->i_links) != 1 || (zlfs_nat(sbi, zi->ino)->flags & ZNAT_NEED_CP) ||
	       !zlfs_nid_checkpointed(sbi, zf_le32_to_cpu(ri->i_pino)) ||
	       !(sbi->log_mask & (1u << ZF_LOG_WARM_NODE)) || sbi->rf_blocks >= RF_MAX_BLOCKS;
}

int zlfs_file_fsync(struct zlfs_sb *sbi, struct zinode *zi, bool datasync)
{
	int ret;

	(void)datasync;     /* the inode goes too: size and block count may have changed */
	uint64_t t0 = zlfs_mono_ns();
	if (sbi->fatal)
		return -EIO;
	if (sbi->ro || !sbi->dirty)
		return 0;
	/* room for the nodes (an operation boundary: GC may checkpoint here) */
	if ((ret = zlfs_balance(sbi, 0)))
		return ret;
	if (fsync_needs_cp(sbi, zi))
		return sbi->dirty ? zlfs_checkpoint(sbi, false) : 0;
	/*
	 * On a zoned device a data block below its zone's write pointer has
	 * landed, which recovery checks, and a slot whose block did not keeps
	 * its old one; elsewhere the data must be flushed before the nodes
	 * that point at it.  Data converted from inline has no old block to
	 * fall back on: it goes first everywhere.
	 */
	bool data_first = !sbi->lay.zoned || sbi->lay.main_zone < sbi->lay.nr_conv ||
			  (zlfs_nat(sbi, zi->ino)->flags & ZNAT_DATA_FIRST);
	sbi->st.fsync_prep_ns += zlfs_mono_ns() - t0;
	return zlfs_node_fsync(sbi, zi->ino, data_first);
}
