/*
 * recovery.c - roll-forward at mount: replaying what fsync wrote after the
 * last checkpoint (F2FS's recovery.c, in the same on-disk format, so the
 * kernel's f2fs and zlfs roll the same chains forward).
 *
 * The chain: fsync (node.c) writes a file's dnodes to the warm node log
 * with the FSYNC mark, the inode also with DENT when its name is not in a
 * checkpoint yet; every footer carries the checkpoint's cp_ver (with its
 * crc) and next_blkaddr, where that log writes next.  The chain starts at
 * the warm node position the checkpoint recorded and ends at the first
 * block that cannot be read, lies past its zone's write pointer, is seen a
 * second time, or has another cp_ver (zeros, or an older block).
 *
 * Pass 1 (zlfs_recover_scan) walks it and lists the inodes with an FSYNC
 * block: one the checkpoint has, or one a DENT inode block creates (as the
 * kernel's recover_inode_page does).  For each, the position of its last
 * FSYNC block: nothing after that is replayed (an fsync cut short).
 * Pass 2 walks again and replays each listed inode's blocks in chain order:
 * inode fields (recover_inode), inline data and xattrs, then every address
 * slot against the node the inode has now (rebuilding the path to it):
 * dest NULL frees, dest an address claims that block (SIT, SSA) and frees
 * what the slot held.  An address past its zone's write pointer is a data
 * write that never landed (a crash before fsync's flush): the slot keeps
 * its old block.  Names to restore (DENT) wait in the list for
 * zlfs_recover_dentries, which writes directory blocks and so runs once
 * the zones are in order (super.c: scan, fix zones, dentries, checkpoint).
 *
 * Nothing here writes to the device but directory blocks and SSA blocks
 * of blocks the old checkpoint does not count; a crash during recovery
 * leaves the old checkpoint and its chain in force (segment.c resets no
 * zone before the new checkpoint commits).  Called with sbi->lock held
 * (or before anything else runs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zlfs.h"
#include "data.h"
#include "checkpoint.h"
#include "segment.h"
#include "node.h"
#include "inode.h"
#include "recovery.h"
#include "namei.h"
#include "dir.h"

struct zrec_ino {
	uint32_t ino;
	uint32_t last;           /* chain position of its last FSYNC block */
	uint32_t last_dentry;    /* position of its last DENT inode block, or ~0 */
	bool done;               /* pass 2 went past `last` */
};

struct zrec_dent {
	uint32_t dir, ino;
	uint8_t ftype;
	uint8_t len;
	char name[ZF_NAME_LEN + 1];
};

struct zrecovery {
	struct zrec_ino *inos;
	uint32_t ninos, cap;
	struct zrec_dent *dents;
	uint32_t ndents, dcap;
	uint32_t len;            /* blocks in the chain */
	uint64_t *wp;            /* per section: its zone's write pointer, in blocks; ~0 unknown */
	uint32_t replayed, claimed, skipped;
};

static struct zrec_ino *find_ino(struct zrecovery *rc, uint32_t ino)
{
	for (uint32_t i = 0; i < rc->ninos; i++)
		if (rc->inos[i].ino == ino)
			return &rc->inos[i];
	return NULL;
}

static struct zrec_ino *add_ino(struct zrecovery *rc, uint32_t ino)
{
	if (rc->ninos == rc->cap) {
		uint32_t cap = rc->cap ? rc->cap * 2 : 16;
		void *p = realloc(rc->inos, cap * sizeof(*rc->inos));
		if (!p)
			return NULL;
		rc->inos = p;
		rc->cap = cap;
	}
	struct zrec_ino *e = &rc->inos[rc->ninos++];
	e->ino = ino;
	e->last = 0;
	e->last_dentry = ~0u;
	e->done = false;
	return e;
}

/*
 * Did a block at blkaddr land?  On a zoned device, below its zone's write
 * pointer is exactly what the device kept; conventional zones cannot say,
 * and there fsync flushed the data before the nodes (node.c).
 */
static int block_landed(struct zlfs_sb *sbi, struct zrecovery *rc, uint32_t blkaddr, bool *landed)
{
	uint32_t sec = zlfs_sec_of_blkaddr(sbi, blkaddr);

	*landed = true;
	if (!sbi->lay.zoned || zlfs_sec_is_conv(sbi, sec))
		return 0;
	if (rc->wp[sec] == ~0ull) {
		struct zlfs_zone z;
		uint32_t nr = 1;
		int ret = zlfs_disp_report(sbi->disp, sbi->lay.main_zone + sec, &z, &nr);
		if (ret)
			return ret;
		if (nr != 1)
			return -EIO;
		rc->wp[sec] = (z.cond == ZLFS_ZC_FULL) ? ~1ull : z.wp / ZF_BLKSIZE;
	}
	*landed = rc->wp[sec] == ~1ull || blkaddr < rc->wp[sec];
	return 0;
}

static bool is_inode_block(const struct zf_node *b)
{
	return zf_le32_to_cpu(b->footer.nid) == zf_le32_to_cpu(b->footer.ino) && zf_node_ofs(b) == 0;
}

/* The next chain block at *addr, or false when the chain ends there. */
static bool chain_read(struct zlfs_sb *sbi, struct zrecovery *rc, uint8_t *seen, uint32_t addr,
		       struct zf_node *blk)
{
	bool landed;

	if (!zlfs_is_main_blkaddr(sbi, addr))
		return false;
	uint32_t rel = addr - sbi->lay.main_blkaddr;
	if (rel % ZF_BLKS_PER_SEG >= zf_layout_usable_blocks(&sbi->lay, rel / ZF_BLKS_PER_SEG))
		return false;
	if (seen) {
		if (seen[rel / 8] & (1u << (rel % 8)))
			return false;          /* a loop: the chain ends */
		seen[rel / 8] |= (uint8_t)(1u << (rel % 8));
	}
	if (block_landed(sbi, rc, addr, &landed) || !landed)
		return false;
	if (zlfs_read_block(sbi, addr, blk))
		return false;
	if (!zlfs_cp_node_ver_ok(sbi, zf_le64_to_cpu(blk->footer.cp_ver)))
		return false;
	uint32_t nid = zf_le32_to_cpu(blk->footer.nid), ino = zf_le32_to_cpu(blk->footer.ino);
	if (nid >= sbi->max_nid || ino >= sbi->max_nid || ino < ZF_ROOT_INO)
		return false;
	/* an inode block is checked before any of its fields steer the replay */
	char why[200];
	if (is_inode_block(blk) && zf_check_inode(blk, sbi->max_nid, zlfs_feat(sbi), why, sizeof(why))) {
		fprintf(stderr, "zlfs: roll-forward: the chain ends at block %u: %s\n", addr, why);
		return false;
	}
	/* a torn or damaged fsynced inode is where the chain ends, not what it replays */
	if (is_inode_block(blk) && !zf_inode_csum_ok(blk, zlfs_feat(sbi), sbi->csum_seed)) {
		fprintf(stderr, "zlfs: roll-forward: the chain ends at block %u: inode %u's "
			"checksum does not match\n", addr, nid);
		return false;
	}
	return true;
}

/*
 * The kernel's f2fs_recover_inode_page: inode ino, new since the
 * checkpoint, made from its fsynced block: the header fields, no blocks
 * yet (the replay adds them), one link.
 */
static int create_inode(struct zlfs_sb *sbi, const struct zf_node *src)
{
	uint32_t ino = zf_le32_to_cpu(src->footer.ino);
	const struct zf_inode *si = &src->i;
	struct znode *n;
	int ret;

	if (zlfs_nat(sbi, ino)->blkaddr != ZF_NULL_ADDR)
		return -ZLFS_EFSCORRUPTED;   /* the checkpoint has another inode there */
	if (!S_ISREG(zf_le16_to_cpu(si->i_mode)))
		return -ZLFS_EFSCORRUPTED;   /* only regular files roll forward */
	if ((ret = zlfs_node_new(sbi, ino, ino, 0, &n)))
		return ret;
	struct zf_inode *di = &n->blk.i;
	memcpy(di, si, offsetof(struct zf_inode, i_ext));
	di->i_size = 0;
	di->i_blocks = zf_cpu_to_le64(1);
	di->i_links = zf_cpu_to_le32(1);
	di->i_xattr_nid = 0;
	di->i_inline = si->i_inline & (ZF_INLINE_XATTR | ZF_EXTRA_ATTR);
	if (si->i_inline & ZF_EXTRA_ATTR) {
		unsigned int w = zf_extra_isize_words(si);
		if (w > ZF_ADDRS_PER_INODE / 2)
			return -ZLFS_EFSCORRUPTED;
		memcpy(di->i_addr, si->i_addr, (size_t)w * 4);
	}
	n->blk.footer.flag |= zf_cpu_to_le32(1u << ZF_NODE_COLD_BIT);
	sbi->valid_inode_count++;
	return 0;
}

/* The kernel's recover_inode: what fsync recorded of the inode itself. */
static void recover_inode(struct zinode *zi, const struct zf_inode *si)
{
	struct zf_inode *ri = zi_raw(zi);

	ri->i_mode = si->i_mode;
	ri->i_uid = si->i_uid;
	ri->i_gid = si->i_gid;
	ri->i_size = si->i_size;
	ri->i_atime = si->i_atime;
	ri->i_ctime = si->i_ctime;
	ri->i_mtime = si->i_mtime;
	ri->i_atime_nsec = si->i_atime_nsec;
	ri->i_ctime_nsec = si->i_ctime_nsec;
	ri->i_mtime_nsec = si->i_mtime_nsec;
	ri->i_advise = si->i_advise;
	ri->i_flags = si->i_flags;
	if (ZF_EXTRA_HAS(si, i_projid) && ZF_EXTRA_HAS(ri, i_projid))
		ri->i_projid = si->i_projid;     /* FS_IOC_FSSETXATTR then fsync */
}

/* Inline xattrs and inline data of the fsynced inode (recover_inline_*). */
static int recover_inline(struct zlfs_sb *sbi, struct zinode *zi, const struct zf_inode *si,
			  bool *inline_data)
{
	struct zf_inode *ri = zi_raw(zi);
	unsigned int xw = zf_inline_xattr_words(si, zlfs_feat(sbi));
	int ret;

	*inline_data = false;
	if (si->i_inline & ZF_INLINE_XATTR) {
		memcpy(&ri->i_addr[ZF_ADDRS_PER_INODE - xw], &si->i_addr[ZF_ADDRS_PER_INODE - xw],
		       (size_t)xw * 4);
		ri->i_inline |= ZF_INLINE_XATTR;
	}
	if (si->i_inline & ZF_INLINE_DATA) {
		if (!(ri->i_inline & ZF_INLINE_DATA) && (ret = zlfs_truncate_blocks(sbi, zi, 0)))
			return ret;
		unsigned int max = zf_max_inline_data(zf_extra_isize_words(si), xw);
		memcpy(zf_inline_data(ri), zf_inline_data((struct zf_inode *)si), max);
		ri->i_inline |= ZF_INLINE_DATA;
		ri->i_inline = (uint8_t)((ri->i_inline & ~ZF_DATA_EXIST) | (si->i_inline & ZF_DATA_EXIST));
		*inline_data = true;
	} else if (ri->i_inline & ZF_INLINE_DATA) {
		struct zf_ishape sh;
		zf_inode_shape(ri, zlfs_feat(sbi), &sh);
		unsigned int max = sh.inline_max;
		memset(zf_inline_data(ri), 0, max);
		ri->i_inline &= (uint8_t)~(ZF_INLINE_DATA | ZF_DATA_EXIST);
	}
	zlfs_node_dirty(sbi, zi->node);
	return 0;
}

/* An xattr node: the inode's (made if it has none) takes the fsynced contents. */
static int recover_xattr_node(struct zlfs_sb *sbi, struct zinode *zi, const struct zf_node *src)
{
	struct zf_inode *ri = zi_raw(zi);
	uint32_t xnid = zf_le32_to_cpu(ri->i_xattr_nid);
	struct znode *xn;
	int ret;

	if (xnid) {
		if ((ret = zlfs_node_get(sbi, xnid, zi->ino, ZF_NODE_KIND_XATTR, &xn)))
			return ret;
	} else {
		if ((ret = zlfs_nid_alloc(sbi, &xnid)))
			return ret;
		if ((ret = zlfs_node_new(sbi, xnid, zi->ino, ZF_XATTR_NODE_OFS, &xn))) {
			zlfs_nat_mut(sbi, xnid)->blkaddr = ZF_NULL_ADDR;
			return ret;
		}
		xn->blk.footer.flag |= zf_cpu_to_le32(1u << ZF_NODE_COLD_BIT);
		ri->i_xattr_nid = zf_cpu_to_le32(xnid);
		ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) + 1);
		zlfs_node_dirty(sbi, zi->node);
	}
	memcpy(&xn->blk, src, offsetof(struct zf_node, footer));
	zlfs_node_dirty(sbi, xn);
	return 0;
}

/* The kernel's do_recover_data for the address slots of one dnode. */
static int recover_slots(struct zlfs_sb *sbi, struct zrecovery *rc, struct zinode *zi,
			 const struct zf_node *src, unsigned int ofs)
{
	struct zf_inode *ri = zi_raw(zi);
	struct znode *dn, tmp;
	unsigned int o, ncur, nsrc;
	int ret;

	if (ofs == 0) {
		dn = zi->node;
	} else {
		uint64_t start = zlfs_node_start_index(sbi, zi, ofs);
		if ((ret = zlfs_get_dnode(sbi, zi, start, true, &dn, &o)))
			return ret;
		if (o != 0 || zf_node_ofs(&dn->blk) != ofs) {
			fprintf(stderr, "zlfs: recovery: node offset %u of inode %u does not match "
				"its path; left alone\n", ofs, zi->ino);
			return 0;
		}
	}
	zf_le32 *cur = zlfs_dnode_addrs(sbi, dn, &ncur);
	memcpy(&tmp.blk, src, ZF_BLKSIZE);
	const zf_le32 *from = zlfs_dnode_addrs(sbi, &tmp, &nsrc);
	unsigned int n = ncur < nsrc ? ncur : nsrc;
	for (unsigned int i = 0; i < n; i++) {
		uint32_t was = zf_le32_to_cpu(cur[i]), dest = zf_le32_to_cpu(from[i]);
		if (was == dest)
			continue;
		/* a compressed cluster is never replayed (the kernel's is_valid_blkaddr skips it) */
		if (dest == ZF_COMPRESS_ADDR || was == ZF_COMPRESS_ADDR)
			continue;
		if (dest != ZF_NULL_ADDR && dest != ZF_NEW_ADDR) {
			bool landed;
			if (!zlfs_is_main_blkaddr(sbi, dest)) {
				fprintf(stderr, "zlfs: recovery: inode %u: address %u outside the main "
					"area; slot left alone\n", zi->ino, dest);
				continue;
			}
			if ((ret = block_landed(sbi, rc, dest, &landed)))
				return ret;
			if (!landed) {
				rc->skipped++;     /* the data write never reached the device */
				continue;
			}
			/* the SSA's ofs_in_node counts from the first address, as F2FS's */
			ret = zlfs_seg_claim_block(sbi, dest, dn->nid, (uint16_t)i,
						   zlfs_nat(sbi, dn->nid)->version, was == ZF_NULL_ADDR);
			if (ret == -EEXIST || ret == -EINVAL) {
				fprintf(stderr, "zlfs: recovery: inode %u: block %u is not free; slot "
					"left alone\n", zi->ino, dest);
				continue;
			}
			if (ret)
				return ret;
			rc->claimed++;
			/* the kernel's do_recover_data: a block past i_size extends it,
			 * unless fallocate kept the size (FADVISE_KEEP_SIZE) */
			uint64_t at = (zlfs_node_start_index(sbi, zi, ofs) + i) * ZF_BLKSIZE;
			if (!(ri->i_advise & ZF_FADVISE_KEEP_SIZE) && zf_le64_to_cpu(ri->i_size) <= at)
				ri->i_size = zf_cpu_to_le64(at + ZF_BLKSIZE);
		}
		if (was == ZF_NULL_ADDR)
			ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) + 1);
		else if (dest == ZF_NULL_ADDR)
			ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) - 1);
		if (zlfs_addr_reserved(was))
			zlfs_reserved_drop(sbi, 1);
		else if (was != ZF_NULL_ADDR)
			zlfs_invalidate_block(sbi, was);
		if (dest == ZF_NEW_ADDR)
			sbi->reserved_blocks++;      /* the kernel's f2fs_reserve_new_block */
		cur[i] = zf_cpu_to_le32(dest);
		zlfs_node_dirty(sbi, dn);
	}
	zlfs_ext_drop(zi);
	zlfs_node_dirty(sbi, zi->node);
	return 0;
}

static int queue_dentry(struct zrecovery *rc, const struct zf_inode *si, uint32_t ino)
{
	uint32_t len = zf_le32_to_cpu(si->i_namelen);

	if (!len || len > ZF_NAME_LEN || memchr(si->i_name, '/', len) ||
	    (si->i_name[0] == '.' && (len == 1 || (len == 2 && si->i_name[1] == '.')))) {
		fprintf(stderr, "zlfs: recovery: inode %u has no usable name\n", ino);
		return 0;
	}
	if (rc->ndents == rc->dcap) {
		uint32_t cap = rc->dcap ? rc->dcap * 2 : 16;
		void *p = realloc(rc->dents, cap * sizeof(*rc->dents));
		if (!p)
			return -ENOMEM;
		rc->dents = p;
		rc->dcap = cap;
	}
	struct zrec_dent *d = &rc->dents[rc->ndents++];
	d->dir = zf_le32_to_cpu(si->i_pino);
	d->ino = ino;
	d->ftype = zlfs_ftype(zf_le16_to_cpu(si->i_mode));
	d->len = (uint8_t)len;
	memcpy(d->name, si->i_name, len);
	d->name[len] = '\0';
	return 0;
}

/* Replay one chain block of a listed inode. */
static int replay_block(struct zlfs_sb *sbi, struct zrecovery *rc, const struct zf_node *blk,
			bool dentry)
{
	uint32_t ino = zf_le32_to_cpu(blk->footer.ino);
	unsigned int ofs = zf_node_ofs(blk);
	struct zinode *zi;
	bool inline_data = false;
	int ret;

	if ((ret = zlfs_iget(sbi, ino, &zi))) {
		fprintf(stderr, "zlfs: recovery: inode %u: %s; its fsync is not replayed\n", ino,
			zlfs_zdev_strerror(ret));
		return ret == -ENOMEM ? ret : 0;
	}
	if (!S_ISREG(zf_le16_to_cpu(zi_raw(zi)->i_mode)))
		return 0;      /* only regular files roll forward */
	if (ofs == ZF_XATTR_NODE_OFS)
		return recover_xattr_node(sbi, zi, blk);
	if (!zlfs_node_ofs_is_dnode(ofs))
		return 0;
	if (is_inode_block(blk)) {
		recover_inode(zi, &blk->i);
		if (dentry && (ret = queue_dentry(rc, &blk->i, ino)))
			return ret;
		if ((ret = recover_inline(sbi, zi, &blk->i, &inline_data)))
			return ret;
		if (inline_data)
			return 0;
	} else if (zi_raw(zi)->i_inline & ZF_INLINE_DATA) {
		return 0;      /* a dnode of a file that is inline now: nothing to map */
	}
	return recover_slots(sbi, rc, zi, blk, ofs);
}

int zlfs_recover_scan(struct zlfs_sb *sbi, struct zrecovery **out)
{
	struct zrecovery *rc = calloc(1, sizeof(*rc));
	uint64_t main_blocks = (uint64_t)sbi->lay.segment_count_main * ZF_BLKS_PER_SEG;
	uint8_t *seen = NULL;
	struct zf_node *blk = NULL;
	int ret = 0;

	*out = rc;
	if (!rc)
		return -ENOMEM;
	uint32_t start = zlfs_cp_chain_start(sbi);
	/* a volume whose warm node log is merged into another has no chain */
	if (start == ZF_NULL_ADDR || !(sbi->log_mask & (1u << ZF_LOG_WARM_NODE)))
		return 0;
	rc->wp = malloc(sbi->nr_secs * sizeof(*rc->wp));
	seen = calloc((size_t)(main_blocks + 7) / 8, 1);
	blk = malloc(ZF_BLKSIZE);
	if (!rc->wp || !seen || !blk) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t s = 0; s < sbi->nr_secs; s++)
		rc->wp[s] = ~0ull;

	/* pass 1: which inodes, up to where */
	uint32_t addr = start, pos = 0;
	for (; chain_read(sbi, rc, seen, addr, blk); pos++, addr = zf_le32_to_cpu(blk->footer.next_blkaddr)) {
		/* the chain must stay readable until the mount's checkpoint commits */
		zlfs_seg_hold(sbi, addr);
		if (!zf_node_mark(blk, ZF_NODE_FSYNC_BIT))
			continue;
		uint32_t ino = zf_le32_to_cpu(blk->footer.ino);
		bool dent = is_inode_block(blk) && zf_node_mark(blk, ZF_NODE_DENT_BIT);
		struct zrec_ino *e = find_ino(rc, ino);
		if (!e) {
			if (dent) {
				if ((ret = create_inode(sbi, blk))) {
					fprintf(stderr, "zlfs: recovery: cannot restore inode %u: %s\n", ino,
						zlfs_zdev_strerror(ret));
					if (ret == -ENOMEM)
						goto out;
					ret = 0;
					continue;
				}
			} else if (!zlfs_nid_checkpointed(sbi, ino)) {
				continue;   /* an inode the checkpoint does not have, no name: skip */
			}
			if (!(e = add_ino(rc, ino))) {
				ret = -ENOMEM;
				goto out;
			}
		}
		e->last = pos;
		if (dent)
			e->last_dentry = pos;
	}
	rc->len = pos;
	if (!rc->ninos)
		goto out;

	/* pass 2: replay in chain order */
	addr = start;
	for (pos = 0; pos < rc->len; pos++, addr = zf_le32_to_cpu(blk->footer.next_blkaddr)) {
		if (!chain_read(sbi, rc, NULL, addr, blk)) {
			ret = -EIO;      /* it read a moment ago */
			goto out;
		}
		struct zrec_ino *e = find_ino(rc, zf_le32_to_cpu(blk->footer.ino));
		if (!e || e->done)
			continue;
		if ((ret = replay_block(sbi, rc, blk, pos == e->last_dentry)))
			goto out;
		if (pos == e->last)
			e->done = true;
		rc->replayed++;
	}
	if ((ret = zlfs_seg_claim_done(sbi)))
		goto out;
	zlfs_info(sbi, "roll-forward: %u chain blocks, %u inodes, %u replayed, "
		  "%u data blocks, %u not landed", rc->len, rc->ninos, rc->replayed, rc->claimed,
		  rc->skipped);
out:
	free(seen);
	free(blk);
	return ret;
}

int zlfs_recover_dentries(struct zlfs_sb *sbi, struct zrecovery *rc)
{
	for (uint32_t i = 0; rc && i < rc->ndents; i++) {
		struct zrec_dent *d = &rc->dents[i];
		struct zinode *dir, *zi;
		uint32_t cur;
		uint8_t ft;
		int ret;

		if ((ret = zlfs_dir_iget(sbi, d->dir, &dir)) || (ret = zlfs_iget(sbi, d->ino, &zi))) {
			fprintf(stderr, "zlfs: recovery: no directory %u for '%s' (inode %u): %s\n",
				d->dir, d->name, d->ino, zlfs_zdev_strerror(ret));
			if (ret == -ENOMEM)
				return ret;
			continue;
		}
		ret = zlfs_dir_lookup(sbi, dir, d->name, d->len, &cur, &ft);
		if (!ret && cur == d->ino)
			continue;
		if (!ret) {
			/* the kernel's recover_dentry: the fsynced file takes the name */
			if (ft == ZF_FT_DIR) {
				fprintf(stderr, "zlfs: recovery: '%s' in directory %u is a directory; "
					"inode %u keeps no name\n", d->name, d->dir, d->ino);
				continue;
			}
			/*
			 * no room made first (zlfs_unlink's balance): this is
			 * mid-mount, before the checkpoint that commits the
			 * roll-forward, which GC's checkpoints would commit half done
			 */
			if ((ret = zlfs_unlink_nobalance(sbi, d->dir, d->name, false)))
				return ret;
		} else if (ret != -ENOENT) {
			return ret;
		}
		if ((ret = zlfs_dir_add(sbi, dir, d->name, d->len, d->ino, d->ftype)))
			return ret;
		zlfs_inode_touch(dir, true, true, false);
		zlfs_node_dirty(sbi, dir->node);
	}
	return 0;
}

void zlfs_recover_free(struct zrecovery *rc)
{
	if (!rc)
		return;
	free(rc->inos);
	free(rc->dents);
	free(rc->wp);
	free(rc);
}
