/*
 * repair.c - fsck.zlfs: writing what the check found right.
 *
 * Two stages, each only when there is something for it:
 *   1. metadata, in place (the metadata areas are random-write space,
 *      conventional zones or the metadata device): a bad superblock copy
 *      from the good one; the SIT rebuilt from what the walk owns; NAT
 *      entries of nodes nothing reaches freed; SSA entries corrected; the
 *      checkpoint pack in use rewritten with the counts recounted, the
 *      orphans that are orphans, empty journals (their entries are in the
 *      NAT and SIT blocks now) and NOCRC_RECOVERY set, so the roll-forward
 *      chain fsync left still matches its version (as fsck.f2fs does);
 *   2. through the filesystem (an in-process mount, whose own recovery
 *      rolls the chain forward and resets or finishes zones as they need,
 *      which is all some repairs take): link counts,
 *      i_blocks, entries naming damaged inodes, pointers to blocks owned
 *      twice or outside the main area, damaged xattrs, and inodes no
 *      directory names, linked into /lost+found as "#<ino>".  Preen mode
 *      (-p, -a) leaves the fixes that lose a name, a block or xattrs.
 * A crash during stage 1 can leave a pack that fails its checksum: the
 * other pack is then the checkpoint and a new fsck repairs again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"
#include "zlfs/f2fs_cp_pack.h"
#include "zlfs.h"
#include "node.h"
#include "inode.h"
#include "namei.h"
#include "dir.h"

#define BIT_TEST(m, i) ((m)[(i) / 8] & (1u << ((i) % 8)))

static int write_block(struct fsck *f, uint64_t blkaddr, const void *buf)
{
	static uint8_t *b;

	/* stage 1 writes the superblocks and the metadata areas, nothing else */
	if (blkaddr >= 2 && (blkaddr < f->lay.segment0_blkaddr || blkaddr >= f->lay.main_blkaddr))
		return -EINVAL;
	if (!b && !(b = aligned_alloc(ZF_BLKSIZE, ZF_BLKSIZE)))
		return -ENOMEM;
	memcpy(b, buf, ZF_BLKSIZE);
	fsck_read_drop(blkaddr);
	return zlfs_zdev_write(f->dev, b, ZF_BLKSIZE, blkaddr * ZF_BLKSIZE);
}

static int fix_super(struct fsck *f)
{
	uint8_t blk[ZF_BLKSIZE];

	memset(blk, 0, sizeof(blk));
	memcpy(blk + ZF_SUPER_OFFSET, &f->sb, sizeof(f->sb));
	for (int b = 0; b < 2; b++) {
		if (!f->sb_bad[b])
			continue;
		int ret = write_block(f, (uint64_t)b, blk);
		if (ret)
			return ret;
		printf("%s: superblock copy %d rewritten\n", f->spec, b + 1);
		f->fixed++;
	}
	return 0;
}

/* Write blk at `at` unless that is what the device holds there (old). */
static int rewrite(struct fsck *f, uint32_t at, const uint8_t *blk, const uint8_t *old)
{
	if (!memcmp(blk, old, ZF_BLKSIZE))
		return 0;
	int ret = write_block(f, at, blk);
	if (!ret)
		f->fixed++;
	return ret;
}

/* The SIT from what the walk owns; every block of both journals' entries too. */
static int fix_sit(struct fsck *f)
{
	uint8_t blk[ZF_BLKSIZE], old[ZF_BLKSIZE];
	struct zf_sit_block *sb = (struct zf_sit_block *)blk;
	uint32_t nblocks = (f->nr_segs + ZF_SIT_ENTRY_PER_BLOCK - 1) / ZF_SIT_ENTRY_PER_BLOCK;
	int ret;

	for (uint32_t s = 0; s < f->nr_segs; s++) {
		struct zf_sit_entry *e = &f->sit[s];
		unsigned int n = 0, type = zf_sit_type(e);
		for (unsigned int b = 0; b < ZF_BLKS_PER_SEG; b++) {
			bool r = BIT_TEST(f->reach, (uint64_t)s * ZF_BLKS_PER_SEG + b);
			if (r)
				zf_msb_set(e->valid_map, b);
			else
				zf_msb_clear(e->valid_map, b);
			n += r;
		}
		for (int i = 0; i < ZF_NR_LOGS; i++)
			if (f->cur_seg[i] == s)
				type = (unsigned int)i;
		if (type >= ZF_NR_LOGS)
			type = fsck_ssa_block(f, s) && fsck_ssa_block(f, s)->footer.entry_type ==
				ZF_SUM_TYPE_NODE ? ZF_LOG_WARM_NODE : ZF_LOG_WARM_DATA;
		zf_sit_set(e, type, n);
		fsck_bit_set(f->sit_set, s);
	}
	for (uint32_t b = 0; b < nblocks; b++) {
		uint32_t at = zf_sit_blkaddr(&f->lay, b * ZF_SIT_ENTRY_PER_BLOCK,
					     zf_msb_test(f->sit_bitmap, b));
		if ((ret = fsck_read_block(f, at, old)))
			return ret;
		memcpy(blk, old, sizeof(blk));
		for (uint32_t k = 0; k < ZF_SIT_ENTRY_PER_BLOCK; k++)
			if (b * ZF_SIT_ENTRY_PER_BLOCK + k < f->nr_segs)
				sb->entries[k] = f->sit[b * ZF_SIT_ENTRY_PER_BLOCK + k];
		if ((ret = rewrite(f, at, blk, old)))
			return ret;
	}
	return 0;
}

/* NAT entries of nodes nothing reaches freed; journal entries into their blocks. */
static int fix_nat(struct fsck *f)
{
	uint8_t blk[ZF_BLKSIZE], old[ZF_BLKSIZE];
	struct zf_nat_block *nb = (struct zf_nat_block *)blk;
	uint32_t nblocks = f->max_nid / ZF_NAT_ENTRY_PER_BLOCK;
	int ret;

	for (uint32_t nid = 0; nid < f->max_nid; nid++) {
		if (nid < ZF_ROOT_INO ? f->nat_addr[nid] > 1 || (!nid && f->nat_addr[nid])
				      : f->nat_addr[nid] && !BIT_TEST(f->node_seen, nid)) {
			if (f->nat_addr[nid] || f->nat_ino[nid])
				f->nat_ver[nid]++;
			f->nat_addr[nid] = 0;
			f->nat_ino[nid] = 0;
		}
	}
	for (uint32_t b = 0; b < nblocks; b++) {
		uint32_t at = zf_nat_blkaddr(&f->lay, b * ZF_NAT_ENTRY_PER_BLOCK,
					     zf_msb_test(f->nat_bitmap, b));
		if ((ret = fsck_read_block(f, at, old)))
			return ret;
		memcpy(blk, old, sizeof(blk));
		for (uint32_t k = 0; k < ZF_NAT_ENTRY_PER_BLOCK; k++) {
			uint32_t nid = b * ZF_NAT_ENTRY_PER_BLOCK + k;
			nb->entries[k].block_addr = zf_cpu_to_le32(f->nat_addr[nid]);
			nb->entries[k].ino = zf_cpu_to_le32(f->nat_ino[nid]);
			nb->entries[k].version = f->nat_ver[nid];
		}
		if ((ret = rewrite(f, at, blk, old)))
			return ret;
	}
	return 0;
}

static int fix_ssa(struct fsck *f)
{
	uint8_t *dirty = calloc(f->nr_segs, 1);
	int ret = 0;

	if (!dirty)
		return -ENOMEM;
	for (uint32_t k = 0; k < f->nssafix && !ret; k++) {
		uint32_t rel = f->ssafix[k].addr - f->lay.main_blkaddr, s = rel / ZF_BLKS_PER_SEG;
		struct zf_summary_block *b = fsck_ssa_block(f, s);
		if (!b) {
			ret = -ENOMEM;
			break;
		}
		b->entries[rel % ZF_BLKS_PER_SEG] = f->ssafix[k].s;
		b->footer.entry_type = f->ssafix[k].type;
		dirty[s] = 1;
	}
	for (uint32_t s = 0; s < f->nr_segs && !ret; s++) {
		uint8_t want = zf_log_is_node(zf_sit_type(fsck_sit(f, s))) ? ZF_SUM_TYPE_NODE
								       : ZF_SUM_TYPE_DATA;
		struct zf_summary_block *b = zf_sit_vblocks(fsck_sit(f, s)) ? fsck_ssa_block(f, s) : NULL;
		if (b && b->footer.entry_type != want) {
			b->footer.entry_type = want;
			dirty[s] = 1;
		}
	}
	for (int i = 0; i < ZF_NR_LOGS && !ret; i++) {   /* the pack carries these */
		struct zf_summary_block *b = fsck_ssa_block(f, f->cur_seg[i]);
		if (!b)
			ret = -ENOMEM;
		else
			memcpy(f->sums[i].entries, b->entries, sizeof(f->sums[i].entries));
	}
	for (uint32_t s = 0; s < f->nr_segs && !ret; s++)
		if (dirty[s] && !(ret = write_block(f, zf_ssa_blkaddr(&f->lay, s), f->ssa[s])))
			f->fixed++;
	free(dirty);
	return ret;
}

/* The codec's I/O: the checked writes (write_block), the device's flush. */
static int io_write(void *ctx, uint64_t blkaddr, const void *buf)
{
	return write_block(ctx, blkaddr, buf);
}

static int io_flush(void *ctx)
{
	return zlfs_zdev_flush(((struct fsck *)ctx)->dev);
}

/* The pack in use, rewritten in place with the recounted state. */
static int fix_cp(struct fsck *f)
{
	struct zf_checkpoint *cp = (struct zf_checkpoint *)f->cp;
	uint64_t start = zf_cp_pack_addr(f->lay.segment0_blkaddr, f->cp_pack);
	uint32_t *orph = calloc(f->nr_orphans + 1, sizeof(uint32_t)), norph = 0;
	struct zf_cp_io io = { .ctx = f, .write = io_write, .flush = io_flush };
	int ret;

	if (!orph)
		return -ENOMEM;
	for (uint32_t k = 0; k < f->nr_orphans; k++) {
		uint32_t ino = f->orphans[k];
		if (ino >= ZF_ROOT_INO && ino < f->max_nid && BIT_TEST(f->node_seen, ino) &&
		    f->ino[ino].parent == ino && !f->ino[ino].disk_links)
			orph[norph++] = ino;
	}
	bool umount = f->cp_flags & ZF_CP_UMOUNT_FLAG;
	if (zf_cp_pack_total(f->lay.cp_payload, zf_cp_orphan_blocks(norph), umount) > ZF_BLKS_PER_SEG) {
		free(orph);
		return -ENOSPC;
	}
	cp->valid_block_count = zf_cpu_to_le64(f->owned + f->walk_reserved);
	cp->valid_node_count = zf_cpu_to_le32((uint32_t)f->walk_nodes);
	cp->valid_inode_count = zf_cpu_to_le32((uint32_t)f->walk_inodes);
	cp->free_segment_count = zf_cpu_to_le32(f->free_segs);
	uint32_t flags = f->cp_flags & ~(ZF_CP_COMPACT_SUM_FLAG | ZF_CP_ORPHAN_PRESENT_FLAG |
					 ZF_CP_FSCK_FLAG | ZF_CP_ERROR_FLAG);
	flags |= ZF_CP_NOCRC_RECOVERY_FLAG | (norph ? ZF_CP_ORPHAN_PRESENT_FLAG : 0);
	cp->ckpt_flags = zf_cpu_to_le32(flags);

	/* everything but the tail, then the tail: a torn rewrite fails its checks */
	struct zf_cp_pack_body body = {
		.payload_blks = f->cp + ZF_BLKSIZE,
		.payload = f->lay.cp_payload,
		.orphans = orph,
		.norphans = norph,
		.umount = umount,
	};
	for (int i = 0; i < ZF_NR_LOGS; i++)
		body.sums[i] = &f->sums[i];
	if ((ret = zf_cp_pack_write_body(&io, start, cp, &body)) ||
	    (ret = zf_cp_pack_write_tail(&io, start, cp)))
		goto out;
	printf("%s: checkpoint rewritten: %llu blocks, %llu nodes, %llu inodes, %u orphans\n",
	       f->spec, (unsigned long long)f->owned, (unsigned long long)f->walk_nodes,
	       (unsigned long long)f->walk_inodes, norph);
	f->fixed++;
out:
	free(orph);
	return ret;
}

static int repair_meta(struct fsck *f)
{
	int ret;

	if ((ret = fix_super(f)) || (ret = fix_sit(f)) || (ret = fix_nat(f)) || (ret = fix_ssa(f)) ||
	    (ret = fix_cp(f)))
		return ret;
	return zlfs_zdev_flush(f->dev);
}

/* Does this fix lose something (a name, a block, xattrs)?  Preen leaves those. */
static bool lossy(int what)
{
	return what == TF_DENTRY || what == TF_SLOT || what == TF_XATTR;
}

/* /lost+found, made when missing. */
static int lost_found(struct zlfs_sb *sbi, struct zinode **out)
{
	struct zinode *root;
	struct zlfs_cred c = { 0, 0, 0 };
	uint32_t ino;
	uint8_t ft;
	int ret;

	if ((ret = zlfs_iget(sbi, ZF_ROOT_INO, &root)))
		return ret;
	ret = zlfs_dir_lookup(sbi, root, "lost+found", 10, &ino, &ft);
	if (!ret)
		return ft == ZF_FT_DIR ? zlfs_dir_iget(sbi, ino, out) : -ENOTDIR;
	if (ret != -ENOENT)
		return ret;
	return zlfs_create(sbi, &c, ZF_ROOT_INO, "lost+found", S_IFDIR | 0700, 0, NULL, out);
}

/* No xattrs left, inline or in a node (the node, unreached now, is freed next round). */
static void drop_xattrs(struct zf_inode *ri, uint32_t feat)
{
	memset(zf_inline_xattr_area(ri, feat), 0, zf_inline_xattr_bytes(ri, feat));
	ri->i_xattr_nid = 0;
}

static int tree_fix(struct zlfs_sb *sbi, const struct ftreefix *t)
{
	struct zinode *zi, *dir;
	struct znode *n;
	int ret;

	switch (t->what) {
	case TF_LINKS:
	case TF_BLOCKS:
	case TF_XATTR:
	case TF_CSUM:
	case TF_COMPR:
		if ((ret = zlfs_iget(sbi, t->ino, &zi)))
			return ret;
		if (t->what == TF_LINKS)
			zi_raw(zi)->i_links = zf_cpu_to_le32((uint32_t)t->value);
		else if (t->what == TF_BLOCKS)
			zi_raw(zi)->i_blocks = zf_cpu_to_le64(t->value);
		else if (t->what == TF_XATTR)
			drop_xattrs(zi_raw(zi), zlfs_feat(sbi));
		else if (t->what == TF_COMPR)
			zi_raw(zi)->i_compr_blocks = zf_cpu_to_le64(t->value);
		/* TF_CSUM: only dirty, the write sets the sum */
		zlfs_inode_dirty(sbi, zi);
		return 0;
	case TF_DENTRY: {
		uint64_t b = t->value >> 16;
		if ((ret = zlfs_dir_iget(sbi, t->dir, &dir)))
			return ret;
		return zlfs_dir_drop_slot(sbi, dir, b == 0xffffffffffffull ? UINT64_MAX : b,
					  (unsigned int)(t->value & 0xffff));
	}
	case TF_SLOT: {
		if ((ret = zlfs_node_get(sbi, t->ino, t->dir, ZF_NODE_KIND_ANY, &n)))
			return ret;
		uint64_t s = t->value;
		if (zf_le32_to_cpu(n->blk.footer.nid) == zf_le32_to_cpu(n->blk.footer.ino)) {
			/* slots count from the first address, as the SSA's ofs_in_node */
			struct zf_ishape sh;
			zf_inode_shape(&n->blk.i, zlfs_feat(sbi), &sh);
			if (s < sh.addrs)
				n->blk.i.i_addr[sh.extra + s] = 0;
			else if (s - ZF_ADDRS_PER_INODE < ZF_NIDS_PER_INODE)
				n->blk.i.i_nid[s - ZF_ADDRS_PER_INODE] = 0;
		} else if (zlfs_node_ofs_is_dnode(zf_node_ofs(&n->blk)) && s < ZF_ADDRS_PER_BLOCK) {
			n->blk.dn.addr[s] = 0;
		} else if (s >= ZF_ADDRS_PER_BLOCK && s - ZF_ADDRS_PER_BLOCK < ZF_NIDS_PER_BLOCK) {
			n->blk.in.nid[s - ZF_ADDRS_PER_BLOCK] = 0;
		}
		zlfs_node_dirty(sbi, n);
		return 0;
	}
	case TF_LOSTFOUND: {
		char name[32];
		if ((ret = lost_found(sbi, &dir)) || (ret = zlfs_iget(sbi, t->ino, &zi)))
			return ret;
		struct zf_inode *ri = zi_raw(zi);
		mode_t mode = zf_le16_to_cpu(ri->i_mode);
		int len = snprintf(name, sizeof(name), "#%u", t->ino);
		if ((ret = zlfs_dir_add(sbi, dir, name, (size_t)len, t->ino, zlfs_ftype(mode))))
			return ret;
		if (S_ISDIR(mode)) {
			if ((ret = zlfs_dir_set(sbi, zi, "..", 2, dir->ino, ZF_FT_DIR)))
				return ret;
			zi_raw(dir)->i_links = zf_cpu_to_le32(zf_le32_to_cpu(zi_raw(dir)->i_links) + 1);
			zlfs_inode_dirty(sbi, dir);
		} else {
			ri->i_links = zf_cpu_to_le32(1);
		}
		ri->i_pino = zf_cpu_to_le32(dir->ino);
		zlfs_inode_dirty(sbi, zi);
		return 0;
	}
	}
	return -EINVAL;
}

static int repair_tree(struct fsck *f)
{
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	char err[256];
	int ret, done = 0, left = 0;

	zlfs_opts_inprocess(&o);
	o.csum_rewrite = true;   /* TF_CSUM: inodes with a wrong sum are read, then rewritten */
	zlfs_zdev_close(f->dev);   /* the mount opens the volume itself */
	f->dev = NULL;
	if ((ret = zlfs_mount(f->spec, &o, &sbi, err, sizeof(err)))) {
		fprintf(stderr, "fsck.zlfs: %s: cannot mount to repair the tree: %s\n", f->spec,
			err[0] ? fsck_unnamed(f->spec, err) : strerror(-ret));
		return 0;   /* what is left stays reported */
	}
	zlfs_lock(sbi);
	/* lost+found last: the other fixes may have freed names it could clash with */
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t k = 0; k < f->ntfix; k++) {
			const struct ftreefix *t = &f->tfix[k];
			if ((t->what == TF_LOSTFOUND) != pass)
				continue;
			if (f->mode == FSCK_MODE_PREEN && lossy(t->what)) {
				left++;
				continue;
			}
			/* one line per inode at most: capped as problems are (run.c) */
			if ((ret = tree_fix(sbi, t))) {
				fsck_note(f, stderr, "fsck.zlfs: %s: repair of inode %u failed: %s", f->spec,
					  t->ino, strerror(-ret));
				left++;
			} else {
				done++;
				if (t->what == TF_LOSTFOUND)
					fsck_note(f, stdout, "%s: inode %u linked as /lost+found/#%u", f->spec,
						  t->ino, t->ino);
			}
		}
	zlfs_unlock(sbi);
	ret = zlfs_unmount(sbi);
	f->fixed += (uint64_t)done;
	if (left)
		printf("%s: %d repairs left%s\n", f->spec, left,
		       f->mode == FSCK_MODE_PREEN ? " (they lose data: run fsck.zlfs -y)" : "");
	return ret;
}

int fsck_repair(struct fsck *f)
{
	char err[256];
	int ret = 0;

	if (f->need_meta || f->need_tree) {
		if ((ret = repair_meta(f)))
			return ret;
	}
	if ((f->ntfix || f->zones_fix) && (ret = repair_tree(f)))
		return ret;
	if (!f->dev && (ret = zlfs_open_volume(f->spec, &f->dev, err, sizeof(err))))
		fsck_error(f->spec, err[0] ? err : strerror(-ret), NULL);
	return ret;
}
