/*
 * verify.c - fsck.zlfs: the global checks after the walk from the root.
 *
 *   orphans     each on the checkpoint's list: an inode with no links that
 *               no dentry names (its blocks are walked: still owned);
 *   unreachable inodes the NAT holds but no dentry names are walked and
 *               marked for /lost+found; other nodes no walk reached are
 *               NAT entries to free;
 *   link counts i_links against the dentries found;
 *   SIT         every block's bit against what the walk owns, counts
 *               against the bits, segment types against the SSA;
 *   counts      valid blocks, nodes and inodes against the checkpoint;
 *   zones       (zoned devices) blocks owned past a zone's write pointer
 *               are lost; a zone to reset (nothing in use, not empty) is a
 *               problem after a clean unmount, which repair mounts the
 *               volume for; zones to finish (in use, still open), logs not
 *               at their write pointers and, after a crash, zones to reset
 *               are the next mount's work (it does what the kernel does).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"
#include "zlfs/f2fs_sit.h"

#define BIT_TEST(m, i) ((m)[(i) / 8] & (1u << ((i) % 8)))

static void check_orphans(struct fsck *f)
{
	for (uint32_t k = 0; k < f->nr_orphans; k++) {
		uint32_t ino = f->orphans[k];
		bool ok;
		if (ino < ZF_ROOT_INO || ino >= f->max_nid || f->ino[ino].state != FINO_NONE) {
			fsck_problem(f, FIX_META, "orphan %u: %s", ino, ino < ZF_ROOT_INO ||
				     ino >= f->max_nid ? "no such inode" : "a dentry names it");
			continue;
		}
		if (fsck_walk_inode(f, ino, 0, &ok) || !ok || f->ino[ino].state == FINO_BAD) {
			fsck_problem(f, FIX_META, "orphan %u cannot be read as an inode", ino);
			continue;
		}
		f->ino[ino].links = 0;
		if (f->ino[ino].disk_links)
			fsck_problem(f, FIX_META, "orphan %u has %u links", ino, f->ino[ino].disk_links);
		f->ino[ino].disk_links = 0;   /* judged; not a link count problem */
	}
	fsck_walk_queue(f);
}

static bool is_orphan(const struct fsck *f, uint32_t ino)
{
	for (uint32_t k = 0; k < f->nr_orphans; k++)
		if (f->orphans[k] == ino)
			return true;
	return false;
}

static void check_unreachable(struct fsck *f)
{
	/* inodes first: walking one owns its nodes, which are then not unreachable */
	for (uint32_t k = 0; k < f->nr_nids; k++) {
		uint32_t nid = f->nids[k];
		bool ok;
		if (!f->nat_addr[nid] || BIT_TEST(f->node_seen, nid) || f->nat_ino[nid] != nid)
			continue;
		if (fsck_walk_inode(f, nid, 0, &ok) || !ok || f->ino[nid].state == FINO_BAD)
			continue;   /* freed with the nodes below */
		fsck_problem(f, FIX_TREE, "inode %u is not in any directory", nid);
		fsck_tree_fix(f, nid, TF_LOSTFOUND, 0, 0);
		fsck_walk_queue(f);
	}
	for (uint32_t k = 0; k < f->nr_nids; k++) {
		uint32_t nid = f->nids[k];
		if (!f->nat_addr[nid] || BIT_TEST(f->node_seen, nid))
			continue;
		fsck_problem(f, FIX_META, "node %u (inode %u, block %u) is not reached", nid,
			     f->nat_ino[nid], f->nat_addr[nid]);
	}
}

static void check_links(struct fsck *f)
{
	for (uint32_t k = 0; k < f->nr_nids; k++) {
		uint32_t ino = f->nids[k];
		const struct fino *fi = &f->ino[ino];
		if (fi->state != FINO_DONE || is_orphan(f, ino) || (fi->parent == ino && ino != ZF_ROOT_INO))
			continue;   /* unreachable ones get their link in /lost+found */
		uint32_t want = fi->dir ? 2 + fi->links : fi->links;
		if (fi->disk_links != want) {
			fsck_problem(f, FIX_TREE, "inode %u: i_links %u, counted %u", ino, fi->disk_links,
				     want);
			fsck_tree_fix(f, ino, TF_LINKS, want, ino);
		}
	}
}

static void check_sit(struct fsck *f, uint64_t *owned)
{
	*owned = 0;
	for (uint32_t s = 0; s < f->nr_segs; s++) {
		/* an all-zero entry of a segment nothing reached: nothing to compare */
		if (!fsck_bit(f->sit_set, s) && !fsck_bit(f->reach_seg, s))
			continue;
		const struct zf_sit_entry *e = fsck_sit(f, s);
		unsigned int v = zf_sit_vblocks(e), usable = zf_layout_usable_blocks(&f->lay, s);
		if (zf_sit_map_weight(e->valid_map) != v)
			fsck_problem(f, FIX_META, "SIT of segment %u: %u valid blocks, %u bits set", s, v,
				     zf_sit_map_weight(e->valid_map));
		unsigned int reached = 0;
		for (unsigned int b = 0; b < ZF_BLKS_PER_SEG; b++) {
			uint64_t rel = (uint64_t)s * ZF_BLKS_PER_SEG + b;
			bool r = BIT_TEST(f->reach, rel), valid = zf_msb_test(e->valid_map, b);
			reached += r;
			if (r && b >= usable)
				fsck_problem(f, FIX_MANUAL, "segment %u: block %u past the zone capacity is "
					     "in use", s, b);
			if (r == valid)
				continue;
			fsck_problem(f, FIX_META, "SIT: block %llu (segment %u) is %s in the SIT but %s",
				     (unsigned long long)(f->lay.main_blkaddr + rel), s,
				     valid ? "valid" : "free", r ? "in use" : "owned by nothing");
		}
		*owned += reached;
		if (reached && zf_sit_type(e) >= ZF_NR_LOGS)
			fsck_problem(f, FIX_META, "SIT of segment %u: type %u", s, zf_sit_type(e));
		else if (reached && fsck_ssa_block(f, s) &&
			 zf_log_is_node(zf_sit_type(e)) !=
				 (fsck_ssa_block(f, s)->footer.entry_type == ZF_SUM_TYPE_NODE))
			fsck_problem(f, FIX_META, "segment %u: SIT type %u, SSA type %u", s,
				     zf_sit_type(e), fsck_ssa_block(f, s)->footer.entry_type);
	}
	/* each log's segment: nothing owned at or after its next block */
	for (int i = 0; i < ZF_NR_LOGS; i++)
		for (unsigned int b = f->cur_off[i]; b < ZF_BLKS_PER_SEG; b++)
			if (BIT_TEST(f->reach, (uint64_t)f->cur_seg[i] * ZF_BLKS_PER_SEG + b)) {
				fsck_problem(f, FIX_MANUAL, "log %d: block %u of its segment %u is in use, "
					     "past its next block %u", i, b, f->cur_seg[i], f->cur_off[i]);
				break;
			}
}

static void check_counts(struct fsck *f, uint64_t owned)
{
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)f->cp;

	/* as fsck.f2fs counts: empty segments no log holds (past a visible zone's capacity: none) */
	f->free_segs = 0;
	for (uint32_t s = 0; s < f->nr_segs; s++) {
		bool cur = false, used = false;
		if (f->lay.zones_visible && !zf_layout_usable_blocks(&f->lay, s))
			continue;
		for (int i = 0; i < ZF_NR_LOGS; i++)
			cur |= f->cur_seg[i] == s;
		for (unsigned int b = 0; b < ZF_BLKS_PER_SEG / 8 && !used && fsck_bit(f->reach_seg, s); b++)
			used = f->reach[((uint64_t)s * ZF_BLKS_PER_SEG) / 8 + b];
		f->free_segs += !used && !cur;
	}
	if (zf_le32_to_cpu(cp->free_segment_count) != f->free_segs)
		fsck_problem(f, FIX_META, "checkpoint: %u free segments, %u counted",
			     zf_le32_to_cpu(cp->free_segment_count), f->free_segs);
	f->owned = owned;

	/* F2FS counts NEW_ADDR and COMPRESS_ADDR slots as valid blocks too */
	if (zf_le64_to_cpu(cp->valid_block_count) != owned + f->walk_reserved)
		fsck_problem(f, FIX_META, "checkpoint: %llu valid blocks, %llu in use (%llu of "
			     "them reserved slots)",
			     (unsigned long long)zf_le64_to_cpu(cp->valid_block_count),
			     (unsigned long long)(owned + f->walk_reserved),
			     (unsigned long long)f->walk_reserved);
	if (zf_le32_to_cpu(cp->valid_node_count) != f->walk_nodes)
		fsck_problem(f, FIX_META, "checkpoint: %u valid nodes, %llu in use",
			     zf_le32_to_cpu(cp->valid_node_count), (unsigned long long)f->walk_nodes);
	if (zf_le32_to_cpu(cp->valid_inode_count) != f->walk_inodes)
		fsck_problem(f, FIX_META, "checkpoint: %u valid inodes, %llu in use",
			     zf_le32_to_cpu(cp->valid_inode_count), (unsigned long long)f->walk_inodes);
}

/* Zoned devices: blocks owned past a write pointer were never written. */
static void check_zones(struct fsck *f)
{
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(f->dev);
	uint32_t per = f->lay.segs_per_sec;
	struct zlfs_zone z;

	if (!f->lay.zoned)
		return;
	for (uint32_t sec = 0; sec < f->lay.section_count; sec++) {
		uint32_t zone = f->lay.main_zone + sec, nr = 1;
		if (zone < g->nr_conv)
			continue;
		if (zlfs_zdev_report(f->dev, zone, &z, &nr) || nr != 1) {
			fsck_problem(f, FIX_MANUAL, "zone %u: no report", zone);
			continue;
		}
		if (z.cond == ZLFS_ZC_OFFLINE || z.cond == ZLFS_ZC_RDONLY) {
			fsck_problem(f, FIX_MANUAL, "zone %u is %s", zone, zlfs_zone_cond_str(z.cond));
			continue;
		}
		uint64_t wp = (z.wp - z.start) / ZF_BLKSIZE;   /* blocks written */
		uint64_t first = (uint64_t)sec * per * ZF_BLKS_PER_SEG;
		uint64_t lost = 0, used = 0;
		bool any = false;
		for (uint32_t k = 0; k < per; k++)
			any |= fsck_bit(f->reach_seg, (uint64_t)sec * per + k);
		for (uint64_t b = 0; any && b < (uint64_t)per * ZF_BLKS_PER_SEG; b++)
			if (BIT_TEST(f->reach, first + b)) {
				used++;
				lost += b >= wp;
			}
		if (lost)
			fsck_problem(f, FIX_MANUAL, "zone %u: %llu blocks in use past its write pointer "
				     "(block %llu): never written", zone, (unsigned long long)lost,
				     (unsigned long long)wp);
		bool log = false;
		for (int i = 0; i < ZF_NR_LOGS; i++)
			log |= f->cur_seg[i] / per == sec;
		/*
		 * A zone no file uses but written to: after a clean unmount a
		 * problem (its reset is due at the checkpoint that freed it),
		 * after a crash the next mount's work.  A zone in use left open
		 * (not a log's) is normal: the kernel's F2FS leaves the data logs'
		 * old zones so after its recovery, and the next mount finishes
		 * them (zlfs_seg_fix_zones, the kernel's check_zone_write_pointer).
		 */
		if (!log && !used && z.cond != ZLFS_ZC_EMPTY) {
			if (f->clean_unmount) {
				fsck_problem(f, FIX_TREE, "zone %u (%s) holds nothing in use: to reset",
					     zone, zlfs_zone_cond_str(z.cond));
				f->zones_fix = true;
			} else {
				fsck_info(f, "zone %u (%s) to reset: the next mount does it", zone,
					  zlfs_zone_cond_str(z.cond));
			}
		} else if (!log && used && z.cond != ZLFS_ZC_FULL) {
			fsck_info(f, "zone %u (%s, %llu blocks in use) to finish: the next mount does it",
				  zone, zlfs_zone_cond_str(z.cond), (unsigned long long)used);
		}
		fsck_progress(f, "zones", sec + 1, f->lay.section_count);
	}
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		uint32_t sec = f->cur_seg[i] / per, nr = 1;
		uint32_t zone = f->lay.main_zone + sec;
		if (zone < g->nr_conv || zlfs_zdev_report(f->dev, zone, &z, &nr) || nr != 1)
			continue;
		uint64_t at = (uint64_t)(f->cur_seg[i] % per) * ZF_BLKS_PER_SEG + f->cur_off[i];
		if ((z.wp - z.start) / ZF_BLKSIZE != at)
			fsck_info(f, "log %d at block %llu of zone %u, its write pointer at %llu: the "
				  "next mount moves the log on", i, (unsigned long long)at, zone,
				  (unsigned long long)((z.wp - z.start) / ZF_BLKSIZE));
	}
}

int fsck_verify(struct fsck *f)
{
	uint64_t owned;

	check_orphans(f);
	check_unreachable(f);
	check_links(f);
	check_sit(f, &owned);
	check_counts(f, owned);
	check_zones(f);
	return 0;
}
