/*
 * walk.c - fsck.zlfs: the tree from the root.
 *
 * Every inode named by a dentry is checked (NAT entry, node footer,
 * zf_check_inode), then its node tree in F2FS's numbering: direct nodes,
 * indirect nodes, the double indirect node and the xattr node, each by
 * its NAT entry, footer (nid, inode, kind, tree offset), SIT bit and SSA
 * entry; every data block by range, SIT bit, SSA back-pointer {nid,
 * ofs_in_node, version} and against blocks already owned (duplicates).
 * i_blocks is counted, and the slots F2FS counts as valid without a block
 * (NEW_ADDR, a compressed cluster's marker); a compressed file's clusters
 * are followed and each compressed one decompressed and checked, its
 * i_compr_blocks counted.  Directories are queued and their dentries checked
 * (name length, slots, hash, bucket position, file type against the
 * inode's mode, "." and ".."); link counts are gathered for verify.c.
 *
 * Invariant: a block or node is owned by the first path that reaches it;
 * a second owner is a duplicate and its pointer is what gets cleared.
 * Directories are walked from a queue, not by recursion, so a deep tree
 * needs no deep stack: a directory's inode and nodes are checked when it is
 * reached, its entries when it leaves the queue (its node tree read again
 * then, collecting the blocks the first walk accepted).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsck.h"
#include "zlfs/f2fs_compress.h"
#include "zlfs.h"
#include "inode.h"

#define BIT_TEST(m, i) ((m)[(i) / 8] & (1u << ((i) % 8)))
#define BIT_SET(m, i)  ((m)[(i) / 8] |= (uint8_t)(1u << ((i) % 8)))

void fsck_tree_fix(struct fsck *f, uint32_t ino, int what, uint64_t value, uint32_t dir)
{
	if (f->ntfix == f->tfix_cap) {
		uint32_t cap = f->tfix_cap ? 2 * f->tfix_cap : 64;
		struct ftreefix *t = realloc(f->tfix, cap * sizeof(*t));
		if (!t)
			return;   /* reported already; repair will find fewer fixes */
		f->tfix = t;
		f->tfix_cap = cap;
	}
	f->tfix[f->ntfix++] = (struct ftreefix){ .ino = ino, .what = what, .value = value,
						 .dir = dir };
}

void fsck_ssa_fix(struct fsck *f, uint32_t addr, uint8_t type, uint32_t nid, uint16_t ofs,
		  uint8_t version)
{
	if (f->nssafix == f->ssafix_cap) {
		uint32_t cap = f->ssafix_cap ? 2 * f->ssafix_cap : 64;
		struct fssafix *t = realloc(f->ssafix, cap * sizeof(*t));
		if (!t)
			return;
		f->ssafix = t;
		f->ssafix_cap = cap;
	}
	struct fssafix *x = &f->ssafix[f->nssafix++];
	x->addr = addr;
	x->type = type;
	x->s.nid = zf_cpu_to_le32(nid);
	x->s.ofs_in_node = zf_cpu_to_le16(ofs);
	x->s.version = version;
}

/* One inode's walk: what it owns, and (directories) its dentry blocks in file order. */
struct iwalk {
	uint32_t ino;
	uint64_t blocks;          /* i_blocks as counted: inode, nodes, data (NEW_ADDR too) */
	bool collect;             /* directories: remember the data blocks */
	bool again;               /* a queued directory walked a second time: collect only */
	uint64_t *idx;            /* file block index ... */
	uint32_t *addr;           /* ... and its address */
	uint32_t n, cap;
	unsigned int dblks;       /* slots used per direct node (fewer for compressed files) */
	/* compressed files: the cluster walked now, and the i_compr_blocks counted */
	const struct zf_inode *ri;
	unsigned int clog;        /* log2 blocks per cluster; 0: not compressed */
	bool released;            /* COMPRESS_RELEASED: reserved slots are NULL, not counted */
	uint64_t saved;           /* i_compr_blocks as counted */
	uint64_t cl_start;        /* the cluster's first block; UINT64_MAX: none yet */
	bool cl_compr, cl_stop;   /* it starts with the marker; its run of blocks ended */
	unsigned int cl_k;
	uint32_t cl_addr[1u << ZF_COMPR_LOG_MAX];
};

/*
 * The compressed cluster just walked: its k blocks read and decompressed
 * (header, stream and, with the inode's flag, checksum), as the kernel
 * reads it.  A damaged one is reported; fsck cannot rebuild the data.
 */
static void end_cluster(struct fsck *f, struct iwalk *w)
{
	char why[160] = "";
	unsigned int n = 1u << w->clog;
	int ret = 0;

	if (!w->clog || w->cl_start == UINT64_MAX || !w->cl_compr)
		return;
	if (!w->cl_k) {
		fsck_problem(f, FIX_MANUAL, "inode %u: compressed cluster at block %llu holds no block",
			     w->ino, (unsigned long long)w->cl_start);
		return;
	}
	if (!f->cl_in && (!(f->cl_in = malloc((size_t)ZF_BLKSIZE << ZF_COMPR_LOG_MAX)) ||
			  !(f->cl_out = malloc((size_t)ZF_BLKSIZE << ZF_COMPR_LOG_MAX))))
		return;
	for (unsigned int j = 0; j < w->cl_k && !ret; j++)
		ret = fsck_read_block(f, w->cl_addr[j], f->cl_in + (size_t)j * ZF_BLKSIZE);
	if (ret) {
		fsck_problem(f, FIX_MANUAL, "inode %u: compressed cluster at block %llu unreadable",
			     w->ino, (unsigned long long)w->cl_start);
		return;
	}
	bool chk = zf_le16_to_cpu(w->ri->i_compress_flag) & ZF_COMPR_FLAG_CHKSUM;
	ret = zf_decompr_cluster(w->ri->i_compress_algorithm, chk, w->clog, f->cl_in, w->cl_k,
				 f->cl_out, why, sizeof(why));
	f->walk_clusters++;
	if (ret)
		fsck_problem(f, FIX_MANUAL, "inode %u: compressed cluster at block %llu (%u blocks for "
			     "%u): %s", w->ino, (unsigned long long)w->cl_start, w->cl_k, n,
			     why[0] ? why : "cannot be decompressed");
}

/*
 * A compressed file's slot at block idx: the cluster it belongs to is
 * followed (F2FS's rules: the marker at the cluster's start, then its
 * blocks, then only NULL or NEW_ADDR; NEW_ADDR after a marker counts in
 * i_compr_blocks).
 */
static void cluster_slot(struct fsck *f, struct iwalk *w, uint64_t idx, uint32_t addr)
{
	uint64_t n = 1ull << w->clog, pos = idx & (n - 1);

	if (idx - pos != w->cl_start) {
		end_cluster(f, w);
		w->cl_start = idx - pos;
		w->cl_compr = false;
		w->cl_stop = false;
		w->cl_k = 0;
	}
	if (!pos) {
		w->cl_compr = addr == ZF_COMPRESS_ADDR;
		return;
	}
	if (!w->cl_compr)
		return;
	if (addr == ZF_NULL_ADDR || addr == ZF_NEW_ADDR) {
		w->cl_stop = true;
		w->saved += addr == ZF_NEW_ADDR && !w->released;
	} else if (addr != ZF_COMPRESS_ADDR && w->cl_stop) {
		fsck_problem(f, FIX_MANUAL, "inode %u: compressed cluster at block %llu has a block "
			     "after its unused slots", w->ino, (unsigned long long)w->cl_start);
	} else if (addr != ZF_COMPRESS_ADDR) {
		w->cl_addr[w->cl_k++] = addr;
	}
}

static void collect(struct iwalk *w, uint64_t idx, uint32_t addr)
{
	if (!w->collect)
		return;
	if (w->n == w->cap) {
		uint32_t cap = w->cap ? 2 * w->cap : 16;
		uint64_t *i = realloc(w->idx, cap * sizeof(*i));
		uint32_t *a = i ? realloc(w->addr, cap * sizeof(*a)) : NULL;
		if (i)
			w->idx = i;
		if (!a)
			return;
		w->addr = a;
		w->cap = cap;
	}
	w->idx[w->n] = idx;
	w->addr[w->n++] = addr;
}

/* A data block of node nid, slot ofs: owned by nobody else, valid, summarised right. */
static bool data_block(struct fsck *f, struct iwalk *w, uint32_t nid, uint32_t ofs, uint32_t addr,
		       uint64_t idx)
{
	if (w->clog && !w->again)
		cluster_slot(f, w, idx, addr);
	if (addr == ZF_NULL_ADDR)
		return true;
	if (addr == ZF_COMPRESS_ADDR) {
		/* fsck.f2fs's rule: only at a compressed file's cluster start */
		if (!w->clog || (idx & ((1ull << w->clog) - 1))) {
			if (!w->again) {
				fsck_problem(f, FIX_TREE, "inode %u: block %llu is a compressed-cluster "
					     "marker %s", w->ino, (unsigned long long)idx, w->clog ?
					     "not at the start of its cluster" :
					     "in a file that is not compressed");
				fsck_tree_fix(f, nid, TF_SLOT, ofs, w->ino);
			}
			return false;
		}
		if (!w->again && !w->released) {
			w->blocks++;
			w->saved++;
			f->walk_reserved++;
		}
		return true;
	}
	if (w->again) {   /* what the first walk refused is not collected */
		uint32_t r = addr - f->lay.main_blkaddr;
		if (fsck_is_main(f, addr) && BIT_TEST(f->reach, r))
			collect(w, idx, addr);
		return true;
	}
	w->blocks++;
	if (addr == ZF_NEW_ADDR) {
		f->walk_reserved++;
		return true;
	}
	if (!fsck_is_main(f, addr)) {
		fsck_problem(f, FIX_TREE, "inode %u: block %llu at %u, outside the main area", w->ino,
			     (unsigned long long)idx, addr);
		fsck_tree_fix(f, nid, TF_SLOT, ofs, w->ino);
		w->blocks--;
		return false;
	}
	uint32_t rel = addr - f->lay.main_blkaddr;
	if (BIT_TEST(f->reach, rel)) {
		fsck_problem(f, FIX_TREE, "inode %u: block %llu at %u is owned twice", w->ino,
			     (unsigned long long)idx, addr);
		fsck_tree_fix(f, nid, TF_SLOT, ofs, w->ino);
		w->blocks--;
		return false;
	}
	fsck_reach(f, rel);
	f->walk_blocks++;
	if (!fsck_sit_valid(f, addr))
		fsck_problem(f, FIX_META, "inode %u: block %llu at %u is free in the SIT", w->ino,
			     (unsigned long long)idx, addr);
	uint8_t type;
	const struct zf_summary *s = fsck_ssa(f, addr, &type);
	if (type != ZF_SUM_TYPE_DATA || zf_le32_to_cpu(s->nid) != nid ||
	    zf_le16_to_cpu(s->ofs_in_node) != ofs || s->version != f->nat_ver[nid]) {
		fsck_problem(f, FIX_META, "inode %u: the SSA entry of block %u says node %u slot %u "
			     "version %u (type %u), not node %u slot %u version %u", w->ino, addr,
			     zf_le32_to_cpu(s->nid), zf_le16_to_cpu(s->ofs_in_node), s->version, type,
			     nid, ofs, f->nat_ver[nid]);
		fsck_ssa_fix(f, addr, ZF_SUM_TYPE_DATA, nid, (uint16_t)ofs, f->nat_ver[nid]);
	}
	collect(w, idx, addr);
	return true;
}

/*
 * Node nid of inode ino, expected of `kind` at tree offset `ofs`: into
 * blk, owned and counted.  false (reported) when it cannot be used.
 */
static bool node_block(struct fsck *f, struct iwalk *w, uint32_t nid, enum zf_node_kind kind,
		       unsigned int ofs, struct zf_node *blk)
{
	char why[200];
	uint32_t ino = w->ino;

	if (nid < ZF_ROOT_INO || nid >= f->max_nid) {
		fsck_problem(f, FIX_TREE, "inode %u: node pointer %u outside the NAT", ino, nid);
		return false;
	}
	uint32_t addr = f->nat_addr[nid];
	if (w->again)   /* the first walk checked and owned it, or refused it */
		return BIT_TEST(f->node_seen, nid) && !fsck_read_block(f, addr, blk) &&
		       !zf_check_node_footer(blk, nid, ino, kind, NULL, 0) && zf_node_ofs(blk) == ofs;
	if (BIT_TEST(f->node_seen, nid)) {
		fsck_problem(f, FIX_TREE, "inode %u: node %u is reached twice", ino, nid);
		return false;
	}
	if (!fsck_is_main(f, addr) || f->nat_ino[nid] != ino) {
		fsck_problem(f, FIX_TREE, "inode %u: node %u: the NAT has inode %u at block %u", ino,
			     nid, f->nat_ino[nid], addr);
		return false;
	}
	uint32_t rel = addr - f->lay.main_blkaddr;
	if (BIT_TEST(f->reach, rel)) {
		fsck_problem(f, FIX_TREE, "inode %u: node %u's block %u is owned twice", ino, nid,
			     addr);
		return false;
	}
	if (fsck_read_block(f, addr, blk)) {
		fsck_problem(f, FIX_TREE, "inode %u: node %u's block %u cannot be read", ino, nid, addr);
		return false;
	}
	if (zf_check_node_footer(blk, nid, ino, kind, why, sizeof(why))) {
		fsck_problem(f, FIX_TREE, "%s", why);
		return false;
	}
	if (zf_node_ofs(blk) != ofs) {
		fsck_problem(f, FIX_TREE, "node %u of inode %u: tree offset %u, not %u", nid, ino,
			     zf_node_ofs(blk), ofs);
		return false;
	}
	BIT_SET(f->node_seen, nid);
	fsck_reach(f, rel);
	f->walk_nodes++;
	w->blocks++;
	if (!fsck_sit_valid(f, addr))
		fsck_problem(f, FIX_META, "node %u (inode %u) at %u is free in the SIT", nid, ino, addr);
	uint8_t type;
	const struct zf_summary *s = fsck_ssa(f, addr, &type);
	if (type != ZF_SUM_TYPE_NODE || zf_le32_to_cpu(s->nid) != nid) {
		fsck_problem(f, FIX_META, "the SSA entry of node %u at %u says node %u (type %u)", nid,
			     addr, zf_le32_to_cpu(s->nid), type);
		fsck_ssa_fix(f, addr, ZF_SUM_TYPE_NODE, nid, 0, 0);
	}
	return true;
}

static void walk_dnode(struct fsck *f, struct iwalk *w, uint32_t nid, unsigned int ofs, uint64_t base,
		       uint32_t parent, unsigned int slot)
{
	struct zf_node *b = malloc(sizeof(*b));

	if (b && node_block(f, w, nid, ZF_NODE_KIND_DNODE, ofs, b)) {
		for (unsigned int i = 0; i < ZF_ADDRS_PER_BLOCK; i++) {
			uint32_t a = zf_le32_to_cpu(b->dn.addr[i]);
			if (i < w->dblks) {
				data_block(f, w, nid, i, a, base + i);
			} else if (a && !w->again) {
				/* a compressed file's node ends at its last whole cluster */
				fsck_problem(f, FIX_TREE, "inode %u: node %u slot %u past the node's last "
					     "cluster holds %u", w->ino, nid, i, a);
				fsck_tree_fix(f, nid, TF_SLOT, i, w->ino);
			}
		}
	} else if (b && !w->again) {
		fsck_tree_fix(f, parent, TF_SLOT, ZF_ADDRS_PER_INODE + slot, w->ino);
	}
	free(b);
}

/* An indirect node at tree offset ofs whose first child dnode has offset cofs. */
static void walk_indirect(struct fsck *f, struct iwalk *w, uint32_t nid, unsigned int ofs,
			  unsigned int cofs, uint64_t base, uint32_t parent, unsigned int slot)
{
	struct zf_node *b = malloc(sizeof(*b));

	if (b && node_block(f, w, nid, ZF_NODE_KIND_INDIRECT, ofs, b)) {
		for (unsigned int i = 0; i < ZF_NIDS_PER_BLOCK; i++) {
			uint32_t c = zf_le32_to_cpu(b->in.nid[i]);
			if (c)
				walk_dnode(f, w, c, cofs + i, base + (uint64_t)i * w->dblks, nid,
					   i + ZF_ADDRS_PER_BLOCK);
		}
	} else if (b && !w->again) {
		fsck_tree_fix(f, parent, TF_SLOT, ZF_ADDRS_PER_INODE + slot, w->ino);
	}
	free(b);
}

static void walk_dindirect(struct fsck *f, struct iwalk *w, uint32_t nid, uint64_t base)
{
	const unsigned int ofs = 5 + 2 * ZF_NIDS_PER_BLOCK;
	const uint64_t span = (uint64_t)w->dblks * ZF_NIDS_PER_BLOCK;
	struct zf_node *b = malloc(sizeof(*b));

	if (b && node_block(f, w, nid, ZF_NODE_KIND_INDIRECT, ofs, b)) {
		for (unsigned int k = 0; k < ZF_NIDS_PER_BLOCK; k++) {
			uint32_t c = zf_le32_to_cpu(b->in.nid[k]);
			unsigned int cofs = ofs + 1 + k * (ZF_NIDS_PER_BLOCK + 1);
			if (c)
				walk_indirect(f, w, c, cofs, cofs + 1, base + k * span, nid,
					      k + ZF_ADDRS_PER_BLOCK);
		}
	} else if (b && !w->again) {
		fsck_tree_fix(f, w->ino, TF_SLOT, ZF_ADDRS_PER_INODE + ZF_NODE_DIND, w->ino);
	}
	free(b);
}

/* The inode's own slots and node tree; xattrs. */
static void walk_tree(struct fsck *f, struct iwalk *w, const struct zf_node *in)
{
	const struct zf_inode *ri = &in->i;
	uint32_t feat = zf_le32_to_cpu(f->sb.feature);
	struct zf_ishape sh;
	zf_inode_shape(ri, feat, &sh);
	unsigned int direct = sh.addrs;
	w->dblks = sh.dnode_addrs;
	w->ri = ri;
	w->clog = sh.cluster_log;
	w->released = (ri->i_inline & ZF_COMPRESS_RELEASED) != 0;
	w->cl_start = UINT64_MAX;

	/* device nodes keep their number in i_addr (F2FS's old and new encodings), not blocks */
	unsigned int mode = zf_le16_to_cpu(ri->i_mode);
	bool blocks = S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode);
	if (blocks && !(ri->i_inline & (ZF_INLINE_DATA | ZF_INLINE_DENTRY)))
		for (unsigned int i = 0; i < direct; i++)
			data_block(f, w, w->ino, i, zf_le32_to_cpu(ri->i_addr[sh.extra + i]), i);
	/* inline: the word before the area is block 0's slot-to-be, 0 (fsck.f2fs's check too) */
	if (blocks && (ri->i_inline & (ZF_INLINE_DATA | ZF_INLINE_DENTRY)) && ri->i_addr[sh.extra]) {
		fsck_problem(f, FIX_TREE, "inode %u: inline, but the reserved word before its inline "
			     "area is %u, not 0", w->ino, zf_le32_to_cpu(ri->i_addr[sh.extra]));
		fsck_tree_fix(f, w->ino, TF_SLOT, 0, w->ino);
	}
	uint64_t base = direct;
	const uint64_t dspan = sh.dnode_addrs, ispan = dspan * ZF_NIDS_PER_BLOCK;
	for (int k = 0; k < ZF_NIDS_PER_INODE; k++) {
		uint32_t nid = zf_le32_to_cpu(ri->i_nid[k]);
		if (nid) {
			switch (k) {
			case ZF_NODE_DIR1: case ZF_NODE_DIR2:
				walk_dnode(f, w, nid, (unsigned int)k + 1, base, w->ino, (unsigned int)k);
				break;
			case ZF_NODE_IND1:
				walk_indirect(f, w, nid, 3, 4, base, w->ino, (unsigned int)k);
				break;
			case ZF_NODE_IND2:
				walk_indirect(f, w, nid, 4 + ZF_NIDS_PER_BLOCK, 5 + ZF_NIDS_PER_BLOCK, base,
					      w->ino, (unsigned int)k);
				break;
			case ZF_NODE_DIND:
				walk_dindirect(f, w, nid, base);
				break;
			}
		}
		base += k < ZF_NODE_IND1 ? dspan : ispan;
	}
	if (w->again)
		return;
	end_cluster(f, w);
	if (w->clog && zf_le64_to_cpu(ri->i_compr_blocks) != w->saved) {
		fsck_problem(f, FIX_TREE, "inode %u: i_compr_blocks %llu, counted %llu", w->ino,
			     (unsigned long long)zf_le64_to_cpu(ri->i_compr_blocks),
			     (unsigned long long)w->saved);
		fsck_tree_fix(f, w->ino, TF_COMPR, w->saved, w->ino);
	}
	/* xattrs: the inline part, then the node's, every entry inside (zf_check_xattrs) */
	uint32_t xnid = zf_le32_to_cpu(ri->i_xattr_nid);
	unsigned int ib = zf_inline_xattr_bytes(ri, feat);
	uint8_t *xbuf = calloc(1, ib + ZF_BLKSIZE);
	struct zf_node *xb = xnid ? malloc(sizeof(*xb)) : NULL;
	char why[200];
	if (!xbuf || (xnid && !xb)) {
		free(xbuf);
		free(xb);
		return;
	}
	memcpy(xbuf, &ri->i_addr[ZF_ADDRS_PER_INODE - sh.xattr], ib);
	if (xb && !node_block(f, w, xnid, ZF_NODE_KIND_XATTR, ZF_XATTR_NODE_OFS, xb)) {
		fsck_tree_fix(f, w->ino, TF_XATTR, 0, w->ino);
	} else {
		if (xb)
			memcpy(xbuf + ib, xb->xattr, ZF_XATTR_NODE_BYTES);
		if (zf_check_xattrs(xbuf, ib + ZF_XATTR_NODE_BYTES, why, sizeof(why))) {
			fsck_problem(f, FIX_TREE, "inode %u: %s", w->ino, why);
			fsck_tree_fix(f, w->ino, TF_XATTR, 0, w->ino);
		}
	}
	free(xbuf);
	free(xb);
}

/* Which level and bucket file block b of a directory belongs to; false past depth. */
static bool dir_block_bucket(uint64_t b, unsigned int depth, unsigned int dl, unsigned int *level,
			     unsigned int *bucket)
{
	uint64_t start = 0;

	for (unsigned int l = 0; l < depth && l < ZF_MAX_DIR_HASH_DEPTH; l++) {
		uint64_t n = (uint64_t)zf_dir_buckets(l, dl) * zf_bucket_blocks(l);
		if (b < start + n) {
			*level = l;
			*bucket = (unsigned int)((b - start) / zf_bucket_blocks(l));
			return true;
		}
		start += n;
	}
	return false;
}

static void dentry_bad(struct fsck *f, uint32_t dir, uint64_t blk, unsigned int slot,
		       const char *fmt, const char *name, uint32_t ino)
{
	char what[512];

	snprintf(what, sizeof(what), fmt, name, ino);
	fsck_problem(f, FIX_TREE, "directory %u, block %lld slot %u: %s", dir,
		     blk == UINT64_MAX ? -1ll : (long long)blk, slot, what);
	fsck_tree_fix(f, dir, TF_DENTRY, (blk == UINT64_MAX ? 0xffffffffffffull : blk) << 16 | slot,
		      dir);
}

/* The entries of one dentry area (a block, or inline with blk == UINT64_MAX). */
static void check_dentries(struct fsck *f, uint32_t dir, const struct zf_inode *dri, uint64_t blk,
			   const uint8_t *bitmap, const struct zf_dir_entry *de,
			   const uint8_t (*names)[ZF_SLOT_LEN], unsigned int nr, bool *dots)
{
	unsigned int level = 0, bucket = 0;
	bool placed = blk == UINT64_MAX ||
		      dir_block_bucket(blk, zf_le32_to_cpu(dri->i_current_depth), dri->i_dir_level,
				       &level, &bucket);
	char name[ZF_NAME_LEN + 1];

	for (unsigned int i = 0; i < nr; ) {
		if (!zf_le_bit_test(bitmap, i)) {
			i++;
			continue;
		}
		unsigned int nl = zf_le16_to_cpu(de[i].name_len);
		uint32_t ino = zf_le32_to_cpu(de[i].ino);
		if (!nl || nl > ZF_NAME_LEN || i + zf_dentry_slots(nl) > nr) {
			dentry_bad(f, dir, blk, i, "name length%s of entry for inode %u", "", ino);
			i++;
			continue;
		}
		memcpy(name, names[i], nl);
		name[nl] = 0;
		unsigned int slots = zf_dentry_slots(nl);
		bool dot = nl == 1 && name[0] == '.', dotdot = nl == 2 && !strcmp(name, "..");
		uint32_t hash = dot || dotdot ? 0 : zf_dentry_hash((const uint8_t *)name, nl);
		if (memchr(name, '/', nl) || memchr(name, 0, nl)) {
			dentry_bad(f, dir, blk, i, "name \"%s\" (inode %u) holds '/' or NUL", name, ino);
		} else if (zf_le32_to_cpu(de[i].hash_code) != hash) {
			dentry_bad(f, dir, blk, i, "\"%s\" (inode %u): wrong hash", name, ino);
		} else if (!placed || (!dot && !dotdot && blk != UINT64_MAX &&
				       hash % zf_dir_buckets(level, dri->i_dir_level) != bucket)) {
			dentry_bad(f, dir, blk, i, "\"%s\" (inode %u) is in the wrong bucket", name, ino);
		} else if (dot || dotdot) {
			uint32_t want = dot ? dir : f->ino[dir].parent;
			if ((blk != 0 && blk != UINT64_MAX) || i != (dot ? 0u : 1u) || ino != want ||
			    dots[dotdot])
				dentry_bad(f, dir, blk, i, "\"%s\" names inode %u", name, ino);
			else
				dots[dotdot] = true;
		} else {
			bool ok;
			uint8_t ft = de[i].file_type;
			if (fsck_walk_inode(f, ino, dir, &ok) || !ok) {
				dentry_bad(f, dir, blk, i, "\"%s\" names inode %u, which is unusable",
					   name, ino);
			} else if (f->ino[ino].state == FINO_BAD) {
				dentry_bad(f, dir, blk, i, "\"%s\" names damaged inode %u", name, ino);
			} else {
				struct fino *c = &f->ino[ino];
				if (c->dir && c->parent != dir) {
					dentry_bad(f, dir, blk, i, "\"%s\" is a second link to directory %u",
						   name, ino);
				} else {
					if (c->dir)
						f->ino[dir].links++;   /* its ".." */
					else
						c->links++;
					if (ft != c->ftype)
						dentry_bad(f, dir, blk, i, "\"%s\" (inode %u): wrong file type",
							   name, ino);
				}
			}
		}
		i += slots;
	}
}

/* Directory dir (its inode block in in): every dentry block and entry. */
static void walk_dir(struct fsck *f, uint32_t dir, const struct zf_node *in, struct iwalk *w)
{
	const struct zf_inode *ri = &in->i;
	bool dots[2] = { false, false };

	if (ri->i_inline & ZF_INLINE_DENTRY) {
		struct zf_ishape sh;
		zf_inode_shape(ri, zf_le32_to_cpu(f->sb.feature), &sh);
		unsigned int bytes = sh.inline_max;
		unsigned int nr, bm, rsv;
		const uint8_t *area = (const uint8_t *)&ri->i_addr[sh.extra + ZF_INLINE_RESERVED];
		zf_inline_dentry_geom(bytes, &nr, &bm, &rsv);
		check_dentries(f, dir, ri, UINT64_MAX, area,
			       (const struct zf_dir_entry *)(area + bm + rsv),
			       (const uint8_t (*)[ZF_SLOT_LEN])(area + bm + rsv + nr * ZF_DENTRY_SIZE),
			       nr, dots);
	} else {
		struct zf_dentry_block *b = malloc(sizeof(*b));
		for (uint32_t k = 0; b && k < w->n; k++) {
			if (fsck_read_block(f, w->addr[k], b)) {
				fsck_problem(f, FIX_MANUAL, "directory %u: block %u unreadable", dir,
					     w->addr[k]);
				continue;
			}
			check_dentries(f, dir, ri, w->idx[k], b->bitmap, b->dentry,
				       (const uint8_t (*)[ZF_SLOT_LEN])b->filename,
				       ZF_NR_DENTRY_IN_BLOCK, dots);
		}
		free(b);
	}
	if (!dots[0] || !dots[1])
		fsck_problem(f, FIX_MANUAL, "directory %u: no \"%s\" entry", dir, dots[0] ? ".." : ".");
}

/* Inode ino: checked, its tree walked; *ok false when it cannot be used at all. */
int fsck_walk_inode(struct fsck *f, uint32_t ino, uint32_t parent, bool *ok)
{
	struct zf_node *in;
	char why[200];
	struct iwalk w = { .ino = ino };

	*ok = false;
	if (ino < ZF_ROOT_INO || ino >= f->max_nid)
		return 0;
	struct fino *fi = &f->ino[ino];
	if (fi->state != FINO_NONE) {
		*ok = fi->state != FINO_BAD;
		return 0;
	}
	if (!(in = malloc(sizeof(*in))))
		return -ENOMEM;
	fi->parent = parent ? parent : ino;
	if (!node_block(f, &w, ino, ZF_NODE_KIND_INODE, 0, in)) {
		free(in);
		return 0;   /* reported; the entry naming it goes */
	}
	f->walk_inodes++;
	fsck_progress(f, "inodes", f->walk_inodes,
		      zf_le32_to_cpu(((struct zf_checkpoint *)f->cp)->valid_inode_count));
	if (zf_check_inode(in, f->max_nid, zf_le32_to_cpu(f->sb.feature), why, sizeof(why))) {
		/* not owned after all: its NAT entry is freed with the entries naming it */
		uint32_t rel = f->nat_addr[ino] - f->lay.main_blkaddr;
		f->reach[rel / 8] &= (uint8_t)~(1u << (rel % 8));
		f->node_seen[ino / 8] &= (uint8_t)~(1u << (ino % 8));
		f->walk_nodes--;
		f->walk_inodes--;
		fsck_problem(f, FIX_TREE, "%s", why);
		fi->state = FINO_BAD;
		*ok = true;   /* it exists: the entry is removed as naming a damaged inode */
		free(in);
		return 0;
	}
	/* inode_checksum: the fields passed, so the sum is what is wrong (as fsck.f2fs sees it) */
	uint32_t feat = zf_le32_to_cpu(f->sb.feature);
	if (!zf_inode_csum_ok(in, feat, zf_csum_seed(f->sb.uuid))) {
		fsck_problem(f, FIX_TREE, "inode %u: checksum 0x%08x stored, 0x%08x computed", ino,
			     zf_le32_to_cpu(in->i.i_inode_checksum),
			     zf_inode_csum(in, zf_csum_seed(f->sb.uuid)));
		fsck_tree_fix(f, ino, TF_CSUM, 0, ino);
	}
	unsigned int mode = zf_le16_to_cpu(in->i.i_mode);
	fi->dir = S_ISDIR(mode);
	fi->ftype = zlfs_ftype(mode);
	fi->disk_links = zf_le32_to_cpu(in->i.i_links);
	fi->state = FINO_DONE;
	w.collect = fi->dir;
	walk_tree(f, &w, in);
	if (w.blocks != zf_le64_to_cpu(in->i.i_blocks)) {
		fsck_problem(f, FIX_TREE, "inode %u: i_blocks %llu, counted %llu", ino,
			     (unsigned long long)zf_le64_to_cpu(in->i.i_blocks),
			     (unsigned long long)w.blocks);
		fsck_tree_fix(f, ino, TF_BLOCKS, w.blocks, ino);
	}
	free(w.idx);
	free(w.addr);
	free(in);
	*ok = true;
	if (!fi->dir) {
		f->walk_files++;
		return 0;
	}
	f->walk_dirs++;
	if (f->qlen == f->qcap) {
		uint32_t cap = f->qcap ? 2 * f->qcap : 1024;
		uint32_t *q = realloc(f->queue, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		f->queue = q;
		f->qcap = cap;
	}
	f->queue[f->qlen++] = ino;
	fi->state = FINO_QUEUED;
	return 0;
}

/* A queued directory: its blocks found again (collect only), then its entries. */
static int dir_entries(struct fsck *f, uint32_t dir)
{
	struct zf_node *in = malloc(sizeof(*in));
	struct iwalk w = { .ino = dir, .collect = true, .again = true };

	if (!in)
		return -ENOMEM;
	if (!fsck_read_block(f, f->nat_addr[dir], in)) {
		walk_tree(f, &w, in);
		walk_dir(f, dir, in, &w);
	}
	f->ino[dir].state = FINO_DONE;
	free(w.idx);
	free(w.addr);
	free(in);
	return 0;
}

/* Directories queued by fsck_walk_inode, until none is left. */
int fsck_walk_queue(struct fsck *f)
{
	int ret = 0;

	while (f->qlen && !ret)
		ret = dir_entries(f, f->queue[--f->qlen]);
	return ret;
}

int fsck_walk(struct fsck *f)
{
	uint64_t main_blocks = (uint64_t)f->nr_segs * ZF_BLKS_PER_SEG;
	bool ok;

	f->reach = calloc(main_blocks / 8 + 1, 1);
	f->reach_seg = calloc(f->nr_segs / 8 + 1, 1);
	f->node_seen = calloc(f->max_nid / 8 + 1, 1);
	f->ino = calloc(f->max_nid, sizeof(*f->ino));
	if (!f->reach || !f->reach_seg || !f->node_seen || !f->ino)
		return -ENOMEM;
	int ret = fsck_walk_inode(f, ZF_ROOT_INO, ZF_ROOT_INO, &ok);
	if (!ret && (!ok || f->ino[ZF_ROOT_INO].state == FINO_BAD || !f->ino[ZF_ROOT_INO].dir)) {
		fsck_problem(f, FIX_MANUAL, "the root directory is missing or damaged");
		f->root_bad = true;   /* run.c: no repair, and the verdict says what can be done */
	}
	return ret ? ret : fsck_walk_queue(f);
}
