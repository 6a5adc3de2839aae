/*
 * gc.c - segment cleaning: F2FS's garbage collection on zoned devices.
 *
 * The unit is the section (one zone).  A victim's live blocks are copied
 * out and its zone is reset once the checkpoint that no longer needs it
 * has committed (invariant I2: segment.c makes an emptied section PREFREE,
 * the checkpoint turns it FREE and resets the zone).
 *
 *   live data block  the SSA names (nid, ofs_in_node, version); it is live
 *                    when NAT[nid] has that version and the node's slot
 *                    ofs_in_node still holds this address.  It is read,
 *                    written to GC's log (cold data) and the slot pointed
 *                    at the copy; the dnode goes out at the next checkpoint.
 *   live node block  NAT[nid] names this address.  The node is cached and
 *                    dirtied; the checkpoint writes it to a node log, which
 *                    empties the victim.
 *
 * Foreground GC (zlfs_balance) runs in the context of an operation about
 * to write, at its start, before it changed anything: greedy victims,
 * until the free sections cover the reserve plus what the operation and
 * the dirty nodes need, with a checkpoint whenever prefree sections are
 * what it takes.  Background GC is a thread: when the filesystem has been
 * quiet for idle_ms and at most no_gc_pct% of the sections are free (F2FS's
 * zoned threshold, 60%), it cleans cost-benefit victims; below boost_pct%
 * (25%) it passes without pausing and picks greedy ones (F2FS's boosted
 * pass).  It yields to any foreground pass and, unless urgent, to user
 * activity; gc=urgent cleans continuously, busy or not.
 *
 * GC's reads and writes go to the dispatcher at the idle priority level,
 * tagged "no zone write lock" like every write (data.c).
 *
 * Races.  GC drops sbi->lock while its I/O is in flight, like user reads
 * and writes (data.c's *_unlocked helpers), so every decision is checked
 * again after the lock is back: a block whose slot changed meanwhile
 * (overwritten, truncated) is not moved, or its copy is dropped.  A user
 * write in flight that captured the old address finds the slot moved by
 * GC: segment.c's relocation map (zlfs_seg_moved) tells it so, and the
 * user's data wins.  Only one GC pass runs at a time (gc_busy); the
 * checkpoint waits for all I/O in flight, so what it records is
 * consistent at every point where GC lets go of the lock.
 * All calls need sbi->lock, except the thread's own entry.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zlfs.h"
#include "data.h"
#include "checkpoint.h"
#include "segment.h"
#include "gc.h"
#include "node.h"

#define GC_CHUNK 128            /* blocks read and written per lock drop */
#define NO_VICTIM UINT32_MAX

struct gcb {
	uint32_t addr;          /* where the block is */
	uint32_t nid;           /* data: the dnode; node: the node itself */
	uint16_t ofs;
	uint8_t version;
	uint32_t naddr;         /* data: where it goes */
};

/* ---- options ------------------------------------------------------------------------ */

void zlfs_gc_opts_default(struct zlfs_gc_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = ZLFS_GC_ON;
	o->policy = ZLFS_GCP_AUTO;
	o->idle_ms = 200;
	o->sleep_ms = 50;
	o->no_gc_pct = 60;
	o->boost_pct = 25;
	o->cp_interval_ms = ZLFS_CP_INTERVAL_MS;
}

static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (!*s || *end || v > max)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

int zlfs_gc_opts_set(struct zlfs_gc_opts *o, const char *name, const char *val)
{
	if (!strcmp(name, "gc")) {
		if (!strcmp(val, "off"))
			o->mode = ZLFS_GC_OFF;
		else if (!strcmp(val, "on"))
			o->mode = ZLFS_GC_ON;
		else if (!strcmp(val, "urgent"))
			o->mode = ZLFS_GC_URGENT;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(name, "policy")) {
		if (!strcmp(val, "auto"))
			o->policy = ZLFS_GCP_AUTO;
		else if (!strcmp(val, "greedy"))
			o->policy = ZLFS_GCP_GREEDY;
		else if (!strcmp(val, "cb") || !strcmp(val, "cost-benefit"))
			o->policy = ZLFS_GCP_CB;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(name, "idle_ms"))
		return parse_u32(val, 3600000, &o->idle_ms);
	if (!strcmp(name, "sleep_ms"))
		return parse_u32(val, 3600000, &o->sleep_ms);
	if (!strcmp(name, "no_gc_pct"))
		return parse_u32(val, 100, &o->no_gc_pct);
	if (!strcmp(name, "boost_pct"))
		return parse_u32(val, 100, &o->boost_pct);
	if (!strcmp(name, "cp_interval_ms"))
		return parse_u32(val, 86400000, &o->cp_interval_ms);
	return -EINVAL;
}

/* ---- space ------------------------------------------------------------------------- */

/*
 * Free sections foreground GC keeps: the floor (one per active log, what a
 * GC pass and its checkpoint may take: layout.c's zf_layout_ovp gives the
 * argument) plus one for the operation about to write.  Whatever the
 * checkpoint's rsvd_segment_count says (mkfs.f2fs reserves far more), this
 * is what zlfs needs; enough_free adds the operation's own blocks and the
 * nodes the next checkpoint writes.
 */
static uint32_t rsvd_secs(const struct zlfs_sb *sbi)
{
	return zlfs_seg_floor(sbi) + 1;
}

static uint32_t secs_for(const struct zlfs_sb *sbi, uint64_t blocks)
{
	uint64_t per = sbi->sec_blocks ? sbi->sec_blocks : 1;
	return (uint32_t)((blocks + per - 1) / per);
}

/* Free sections needed: the reserve, the operation, the nodes the next checkpoint writes. */
static uint32_t need_secs(const struct zlfs_sb *sbi, uint64_t blocks)
{
	return rsvd_secs(sbi) + secs_for(sbi, blocks + sbi->nr_dirty_nodes);
}

static bool enough_free(const struct zlfs_sb *sbi, uint64_t blocks)
{
	return sbi->free_secs >= need_secs(sbi, blocks);
}

/* ---- liveness ------------------------------------------------------------------------ */

/*
 * The slot that should hold data block b, or NULL if b is dead (or its
 * owner cannot be read: then *err).  *dn gets the dnode.
 */
static zf_le32 *data_slot(struct zlfs_sb *sbi, const struct gcb *b, struct znode **dn, int *err)
{
	*err = 0;
	if (b->nid < ZF_ROOT_INO || b->nid >= sbi->max_nid)
		return NULL;
	/* a dnode not written yet (NEW_ADDR) is in the cache: its slots count */
	const struct znat *na = zlfs_nat(sbi, b->nid);
	if (na->blkaddr == ZF_NULL_ADDR || na->version != b->version)
		return NULL;
	if ((*err = zlfs_node_get(sbi, b->nid, 0, ZF_NODE_KIND_ANY, dn)))
		return NULL;
	struct zf_node *n = &(*dn)->blk;
	if (zf_le32_to_cpu(n->footer.nid) == zf_le32_to_cpu(n->footer.ino) && zf_node_ofs(n) == 0) {
		if (n->i.i_inline & (ZF_INLINE_DATA | ZF_INLINE_DENTRY))
			return NULL;
		/* the SSA counts inode slots from the first address, past the extra attributes */
		struct zf_ishape sh;
		zf_inode_shape(&n->i, zlfs_feat(sbi), &sh);
		if (b->ofs >= sh.addrs)
			return NULL;
		return &n->i.i_addr[sh.extra + b->ofs];
	}
	if (b->ofs >= ZF_ADDRS_PER_BLOCK)
		return NULL;
	return &n->dn.addr[b->ofs];
}

static bool data_live(struct zlfs_sb *sbi, const struct gcb *b, zf_le32 **slot, struct znode **dn,
		      int *err)
{
	*slot = data_slot(sbi, b, dn, err);
	return *slot && zf_le32_to_cpu(**slot) == b->addr;
}

/* The owner inode's largest-extent hint no longer holds once its map changed. */
static void drop_extent(struct zlfs_sb *sbi, struct znode *dn)
{
	uint32_t ino = zf_le32_to_cpu(dn->blk.footer.ino);
	struct znode *in;

	if (ino < ZF_ROOT_INO || ino >= sbi->max_nid || zlfs_nat(sbi, ino)->ino != ino ||
	    zlfs_node_get(sbi, ino, ino, ZF_NODE_KIND_INODE, &in))
		return;
	if (in->blk.i.i_ext.len) {
		memset(&in->blk.i.i_ext, 0, sizeof(in->blk.i.i_ext));
		zlfs_node_dirty(sbi, in);
	}
}

/* ---- moving -------------------------------------------------------------------------- */

/* Copy n live data blocks to GC's log.  *moved counts the ones that made it. */
static int move_data(struct zlfs_sb *sbi, struct gcb *v, uint32_t n, uint8_t *buf,
		     uint32_t *moved)
{
	void *bufs[GC_CHUNK];
	uint32_t addrs[GC_CHUNK], idx[GC_CHUNK], m = 0;
	struct znode *dn;
	zf_le32 *slot;
	int ret, err;

	for (uint32_t i = 0; i < n; i++) {
		bufs[i] = buf + (size_t)i * ZF_BLKSIZE;
		addrs[i] = v[i].addr;
	}
	if ((ret = zlfs_read_blocks_unlocked(sbi, bufs, addrs, n, ZLFS_PRIO_IDLE)))
		return ret;
	if (sbi->fatal)
		return -EROFS;
	/* the lock was dropped: only what is still live moves */
	for (uint32_t i = 0; i < n; i++) {
		if (!data_live(sbi, &v[i], &slot, &dn, &err)) {
			if (err)
				return err;
			continue;
		}
		if ((ret = zlfs_alloc_gc_block(sbi, v[i].nid, v[i].ofs, v[i].version, &v[i].naddr)))
			break;
		bufs[m] = buf + (size_t)i * ZF_BLKSIZE;
		addrs[m] = v[i].naddr;
		idx[m++] = i;
	}
	if (!m)
		return ret;
	int wret = zlfs_write_unlocked(sbi, bufs, addrs, m, ZLFS_PRIO_IDLE);
	if (wret) {
		for (uint32_t k = 0; k < m; k++)
			zlfs_invalidate_block(sbi, addrs[k]);
		return wret;
	}
	/* the copies are on the device: point the slots at them, unless changed meanwhile */
	for (uint32_t k = 0; k < m; k++) {
		struct gcb *b = &v[idx[k]];
		if (!data_live(sbi, b, &slot, &dn, &err)) {
			zlfs_invalidate_block(sbi, b->naddr);
			if (err)
				return err;
			continue;
		}
		*slot = zf_cpu_to_le32(b->naddr);
		zlfs_invalidate_block(sbi, b->addr);
		zlfs_seg_reloc_add(sbi, b->addr, b->naddr);
		zlfs_node_dirty(sbi, dn);
		drop_extent(sbi, dn);
		sbi->st.gc_data_moved++;
		(*moved)++;
	}
	return ret;
}

/* Send n live nodes to be rewritten by the next checkpoint. */
static int move_nodes(struct zlfs_sb *sbi, struct gcb *v, uint32_t n, uint8_t *buf,
		      uint32_t *moved)
{
	void *bufs[GC_CHUNK];
	uint32_t addrs[GC_CHUNK], r = 0;
	int ret;

	for (uint32_t i = 0; i < n; i++) {
		if (zlfs_node_gc_dirty(sbi, v[i].nid, NULL) == 0) {   /* cached: dirty it */
			sbi->st.gc_node_moved++;
			(*moved)++;
			v[i].addr = 0;
			continue;
		}
		bufs[r] = buf + (size_t)r * ZF_BLKSIZE;
		addrs[r++] = v[i].addr;
	}
	if (!r)
		return 0;
	if ((ret = zlfs_read_blocks_unlocked(sbi, bufs, addrs, r, ZLFS_PRIO_IDLE)))
		return ret;
	r = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!v[i].addr)
			continue;
		uint8_t *b = buf + (size_t)r++ * ZF_BLKSIZE;
		if (zlfs_nat(sbi, v[i].nid)->blkaddr != v[i].addr)
			continue;    /* rewritten or removed meanwhile */
		if ((ret = zlfs_node_gc_dirty(sbi, v[i].nid, b))) {
			if (ret != -ZLFS_EFSCORRUPTED)
				return ret;
			fprintf(stderr, "zlfs: gc: block %u does not hold node %u\n", v[i].addr,
				v[i].nid);
			continue;
		}
		sbi->st.gc_node_moved++;
		(*moved)++;
	}
	return 0;
}

/* Background passes give way to a foreground pass and, unless urgent, to users. */
static bool bg_should_yield(struct zlfs_sb *sbi)
{
	if (sbi->gc_fg_waiting || sbi->gc_stop)
		return true;
	if (sbi->gco.mode == ZLFS_GC_URGENT)
		return false;
	return zlfs_now_ms() - sbi->last_op_ms < sbi->gco.idle_ms;
}

/*
 * Move every live block of section sec.  bg: a background pass, which
 * returns -EAGAIN when it should yield (the section is left part-cleaned,
 * consistent).  *moved: blocks moved (nodes: sent for rewriting).
 */
static int gc_section(struct zlfs_sb *sbi, uint32_t sec, bool bg, uint32_t *moved)
{
	struct zf_summary_block *sum = malloc(ZF_BLKSIZE);
	uint8_t *buf = malloc((size_t)GC_CHUNK * ZF_BLKSIZE);
	struct gcb v[GC_CHUNK];
	int ret = 0;

	*moved = 0;
	if (!sum || !buf) {
		free(sum);
		free(buf);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < sbi->segs_per_sec && !ret; i++) {
		uint32_t segno = sec * sbi->segs_per_sec + i;
		uint32_t usable = zf_layout_usable_blocks(&sbi->lay, segno);
		if (!zlfs_seg(sbi, segno)->valid || !usable)
			continue;
		if ((ret = zlfs_read_block(sbi, zf_ssa_blkaddr(&sbi->lay, segno), sum)))
			break;
		bool node = zf_log_is_node(zlfs_seg(sbi, segno)->type);
		if (sum->footer.entry_type != (node ? ZF_SUM_TYPE_NODE : ZF_SUM_TYPE_DATA)) {
			fprintf(stderr, "zlfs: gc: segment %u: summary type %u does not match its SIT "
				"type %u\n", segno, sum->footer.entry_type, zlfs_seg(sbi, segno)->type);
			ret = -ZLFS_EFSCORRUPTED;     /* the caller leaves the section alone */
			break;
		}
		uint32_t base = zf_seg_blkaddr(&sbi->lay, segno);
		for (uint32_t off = 0; off < usable && !ret; ) {
			uint32_t n = 0;
			for (; off < usable && n < GC_CHUNK; off++) {
				if (!zf_msb_test(zlfs_seg(sbi, segno)->map, off))
					continue;
				const struct zf_summary *e = &sum->entries[off];
				struct gcb *b = &v[n];
				b->addr = base + off;
				b->nid = zf_le32_to_cpu(e->nid);
				b->ofs = zf_le16_to_cpu(e->ofs_in_node);
				b->version = e->version;
				if (node) {
					if (b->nid >= sbi->max_nid || zlfs_nat(sbi, b->nid)->blkaddr != b->addr)
						continue;
				} else {
					struct znode *dn;
					zf_le32 *slot;
					int err;
					if (!data_live(sbi, b, &slot, &dn, &err)) {
						if ((ret = err))
							break;
						continue;
					}
				}
				n++;
			}
			if (ret || !n)
				break;
			ret = node ? move_nodes(sbi, v, n, buf, moved) : move_data(sbi, v, n, buf, moved);
			if (!ret && bg && bg_should_yield(sbi))
				ret = -EAGAIN;
			if (sbi->fatal && !ret)
				ret = -EROFS;
		}
	}
	free(sum);
	free(buf);
	return ret;
}

/* ---- victims --------------------------------------------------------------------------- */

static bool candidate(const struct zlfs_sb *sbi, uint32_t s)
{
	const struct zsec *z = &sbi->secs[s];
	return z->state == ZSEC_INUSE && z->valid && z->valid < sbi->sec_blocks && !z->gc_skip &&
	       !zlfs_sec_is_log(sbi, s);
}

/*
 * Greedy: fewest valid blocks, the first candidate segment.c's index
 * gives.  Cost-benefit (F2FS's get_cb_cost): the section's age (its
 * segments' mean mtime against the oldest candidate weighed and now)
 * weighed against its utilisation, cost = -(100-u)*age/(100+u), over the
 * CB_SCAN least utilised candidates: a bounded search, as F2FS bounds its
 * own (max_victim_search), so a victim costs the same on a volume of a
 * thousand sections or sixty thousand.
 */
#define CB_SCAN 256

/*
 * The mean mtime (seconds) of the section's segments that hold valid
 * blocks: their sum and count are kept, no SIT read.  An emptied segment's
 * mtime is 0 in memory, so it must not count: a section half emptied now
 * would look twice as old as its data.  (A section of more than 65,535
 * segments, which no zone has, divides by its usable ones instead.)
 */
static uint64_t sec_mtime(const struct zlfs_sb *sbi, uint32_t s)
{
	uint32_t nseg = sbi->secs[s].live;

	if (sbi->segs_per_sec > UINT16_MAX) {
		nseg = 0;
		for (uint32_t i = 0; i < sbi->segs_per_sec; i++)
			nseg += zf_layout_usable_blocks(&sbi->lay, s * sbi->segs_per_sec + i) != 0;
	}
	return nseg ? sbi->secs[s].mtime / nseg : 0;
}

static uint32_t pick_victim_in(const struct zlfs_sb *sbi, bool cb)
{
	uint32_t cand[CB_SCAN], n = 0;
	uint64_t mts[CB_SCAN], min_mt = UINT64_MAX, max_mt = zlfs_now_ms() / 1000, best = UINT64_MAX;
	uint32_t victim = NO_VICTIM;

	for (uint32_t s = zlfs_sec_by_valid(sbi, 1); s != NO_VICTIM && n < CB_SCAN;
	     s = zlfs_sec_by_valid_next(sbi, s)) {
		if (sbi->secs[s].valid >= sbi->sec_blocks)
			break;              /* full from here on */
		if (!candidate(sbi, s))
			continue;
		if (!cb)
			return s;
		cand[n] = s;
		mts[n] = sec_mtime(sbi, s);
		min_mt = mts[n] < min_mt ? mts[n] : min_mt;
		max_mt = mts[n] > max_mt ? mts[n] : max_mt;
		n++;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t u = (uint64_t)sbi->secs[cand[i]].valid * 100 / sbi->sec_blocks;
		uint64_t age = 0;
		if (max_mt > min_mt)
			age = 100 - 100 * (mts[i] - min_mt) / (max_mt - min_mt);
		uint64_t cost = UINT32_MAX - 100 * (100 - u) * age / (100 + u);
		if (cost < best) {
			best = cost;
			victim = cand[i];
		}
	}
	return victim;
}

/* The victim; a selection that found one is timed for status. */
static uint32_t pick_victim(struct zlfs_sb *sbi, bool cb)
{
	uint64_t t0 = zlfs_mono_ns();
	uint32_t v = pick_victim_in(sbi, cb);

	if (v != NO_VICTIM) {
		sbi->st.gc_picks++;
		sbi->st.gc_pick_ns += zlfs_mono_ns() - t0;
	}
	return v;
}

/* ---- foreground ---------------------------------------------------------------------- */

static void gc_begin(struct zlfs_sb *sbi, bool fg)
{
	if (fg)
		sbi->gc_fg_waiting++;
	while (sbi->gc_busy)
		zlfs_wait(sbi, &sbi->gc_cv);
	if (fg)
		sbi->gc_fg_waiting--;
	sbi->gc_busy = true;
}

static void gc_end(struct zlfs_sb *sbi, uint64_t t0)
{
	sbi->st.gc_ns += zlfs_mono_ns() - t0;
	sbi->gc_busy = false;
	pthread_cond_broadcast(&sbi->gc_cv);
}

/* Wait until no I/O of anyone's is in flight (their commits are done). */
static void wait_io(struct zlfs_sb *sbi)
{
	while (sbi->io_inflight)
		zlfs_wait(sbi, &sbi->io_cv);
}

int zlfs_balance(struct zlfs_sb *sbi, uint64_t blocks)
{
	int ret = 0;

	if (sbi->fatal || sbi->ro || enough_free(sbi, blocks))
		return 0;
	gc_begin(sbi, true);
	uint64_t t0 = zlfs_mono_ns();
	uint32_t stalls = 0, passes = 0;
	while (!enough_free(sbi, blocks)) {
		if (sbi->fatal) {
			ret = -EROFS;
			break;
		}
		/*
		 * Never clean into the floor (the checkpoint needs it), and never
		 * loop without end: each pass frees a section less what it moves,
		 * so as many passes as sections, four times over, is far more than
		 * any reachable state needs.  Either way: ENOSPC, not a dead volume.
		 */
		if ((sbi->free_secs < zlfs_seg_floor(sbi) && !sbi->prefree_secs) ||
		    ++passes > 4 * sbi->nr_secs + 16) {
			fprintf(stderr, "zlfs: gc: cannot make room (%u free, %u prefree sections)\n",
				sbi->free_secs, sbi->prefree_secs);
			ret = -ENOSPC;
			break;
		}
		/* prefree sections are one checkpoint away from free */
		if (sbi->prefree_secs &&
		    (sbi->free_secs + sbi->prefree_secs >= need_secs(sbi, blocks) ||
		     sbi->free_secs <= zlfs_seg_floor(sbi) + 2)) {
			if ((ret = zlfs_checkpoint(sbi, false)))
				break;
			continue;
		}
		uint32_t v = pick_victim(sbi, sbi->gco.policy == ZLFS_GCP_CB);
		if (v == NO_VICTIM) {
			if (sbi->prefree_secs || sbi->nr_dirty_nodes) {
				uint32_t before = sbi->free_secs;
				if ((ret = zlfs_checkpoint(sbi, false)))
					break;
				if (sbi->free_secs > before)
					continue;
			}
			ret = -ENOSPC;
			break;
		}
		uint32_t moved;
		uint32_t valid0 = sbi->secs[v].valid;
		ret = gc_section(sbi, v, false, &moved);
		if (ret == -ZLFS_EFSCORRUPTED) {
			/* a summary or node that does not add up: leave the section alone */
			fprintf(stderr, "zlfs: gc: section %u holds damaged metadata; not cleaned "
				"until the next mount\n", v);
			sbi->secs[v].gc_skip = true;
			ret = 0;
			continue;
		}
		if (ret)
			break;
		if (moved) {
			stalls = 0;
			sbi->st.fg_gc_runs++;
			/* nodes (and the moved data's dnodes) go out with a checkpoint */
			if (sbi->secs[v].valid || !enough_free(sbi, blocks))
				if ((ret = zlfs_checkpoint(sbi, false)))
					break;
			continue;
		}
		if (sbi->secs[v].valid < valid0)
			continue;    /* blocks died meanwhile: progress of a kind */
		/*
		 * Nothing live to move, yet blocks counted valid: either user
		 * writes in flight not committed yet (wait for them), or blocks
		 * nothing references (a leak): leave that section alone.
		 */
		sbi->st.fg_gc_stalls++;
		if (sbi->io_inflight && stalls++ < 16) {
			wait_io(sbi);
			continue;
		}
		fprintf(stderr, "zlfs: gc: section %u counts %u valid blocks no node references; "
			"left alone until the next mount\n", v, sbi->secs[v].valid);
		sbi->secs[v].gc_skip = true;
	}
	gc_end(sbi, t0);
	return ret;
}

/* ---- background ---------------------------------------------------------------------- */

static void *gc_main(void *arg)
{
	struct zlfs_sb *sbi = arg;

	zlfs_lock(sbi);
	while (!sbi->gc_stop) {
		bool urgent = sbi->gco.mode == ZLFS_GC_URGENT;
		bool boosted = (sbi->free_secs + sbi->prefree_secs) * 100 <
			       sbi->gco.boost_pct * sbi->nr_secs;
		uint32_t ms = urgent || boosted ? 1 : sbi->gco.sleep_ms ? sbi->gco.sleep_ms : 1;
		if (sbi->gco.mode == ZLFS_GC_OFF)   /* only the periodic checkpoint to watch for */
			ms = sbi->gco.cp_interval_ms && sbi->gco.cp_interval_ms < 4000
				     ? sbi->gco.cp_interval_ms / 4 + 1 : 1000;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(ms % 1000) * 1000000;
		ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		zlfs_timedwait(sbi, &sbi->gc_cv, &ts);
		if (sbi->gc_stop)
			break;
		if (sbi->gc_busy || sbi->fatal || sbi->ro)
			continue;
		if (sbi->dirty && sbi->gco.cp_interval_ms &&
		    zlfs_now_ms() - sbi->last_cp_ms >= sbi->gco.cp_interval_ms) {
			gc_begin(sbi, false);
			uint64_t t0 = zlfs_mono_ns();
			zlfs_checkpoint(sbi, false);   /* the periodic one (F2FS's cp_interval) */
			gc_end(sbi, t0);
			continue;
		}
		if (sbi->gco.mode == ZLFS_GC_OFF)
			continue;
		uint32_t free_pct = (sbi->free_secs + sbi->prefree_secs) * 100 / sbi->nr_secs;
		bool pressed = free_pct < sbi->gco.boost_pct;
		/* as F2FS: only when quiet (copies made under load cost users twice) */
		if (!urgent) {
			if (free_pct > sbi->gco.no_gc_pct)
				continue;
			if (zlfs_now_ms() - sbi->last_op_ms < sbi->gco.idle_ms)
				continue;
		}
		uint32_t v = sbi->gc_bg_victim;
		/* pressed for space while users write, F2FS's boosted pass: greedy */
		bool cb = sbi->gco.policy == ZLFS_GCP_CB ||
			  (sbi->gco.policy == ZLFS_GCP_AUTO && !pressed);
		if (v == NO_VICTIM || !candidate(sbi, v))
			v = pick_victim(sbi, cb);
		if (v == NO_VICTIM) {
			sbi->gc_bg_victim = NO_VICTIM;
			if (sbi->prefree_secs) {
				gc_begin(sbi, false);
				uint64_t t0 = zlfs_mono_ns();
				zlfs_checkpoint(sbi, false);
				gc_end(sbi, t0);
			}
			continue;
		}
		gc_begin(sbi, false);
		uint64_t t0 = zlfs_mono_ns();
		uint32_t moved;
		int ret = gc_section(sbi, v, true, &moved);
		if (ret == -EAGAIN) {
			sbi->gc_bg_victim = v;   /* go on with it next time */
		} else {
			if (ret == -ZLFS_EFSCORRUPTED)
				sbi->secs[v].gc_skip = true;
			sbi->gc_bg_victim = NO_VICTIM;
			if (!ret && moved) {
				sbi->st.bg_gc_runs++;
				zlfs_checkpoint(sbi, false);   /* victim's zone reset, nodes out */
			}
		}
		gc_end(sbi, t0);
		/* let the operations that queued up meanwhile in */
		zlfs_unlock(sbi);
		sched_yield();
		zlfs_lock(sbi);
	}
	zlfs_unlock(sbi);
	return NULL;
}

int zlfs_gc_start(struct zlfs_sb *sbi)
{
	sbi->gc_bg_victim = NO_VICTIM;
	if (sbi->ro)
		return 0;
	sbi->gc_stop = false;
	int ret = pthread_create(&sbi->gc_thread, NULL, gc_main, sbi);
	if (ret)
		return -ret;
	sbi->gc_thread_on = true;
	return 0;
}

/* Call without sbi->lock. */
void zlfs_gc_stop(struct zlfs_sb *sbi)
{
	if (!sbi->gc_thread_on)
		return;
	zlfs_lock(sbi);
	sbi->gc_stop = true;
	pthread_cond_broadcast(&sbi->gc_cv);
	zlfs_unlock(sbi);
	pthread_join(sbi->gc_thread, NULL);
	sbi->gc_thread_on = false;
}
