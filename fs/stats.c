/*
 * stats.c - the text of the read-only files under /.zlfs: `status` (the
 * filesystem's and the dispatcher's counters, key=value lines, then the
 * FUSE requests served as "fuse_req OPCODE N" lines, which fuse_ops.c
 * counts and hands down) and `zones` (one line per device zone).  Formats
 * are documented in README ("Counters and the zone map"); bench/ scripts
 * parse them, so keys are only ever added.
 *
 * Each call builds a snapshot under sbi->lock into a malloc()ed buffer;
 * the caller frees it.  The zone report goes to the device through the
 * dispatcher (the lock is held meanwhile: the report is short and rare).
 */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zlfs.h"
#include "bcache.h"
#include "segment.h"
#include "stats.h"
#include "acache.h"

struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void put(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;

	if (b->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if (b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

static int finish(struct sbuf *b, char **out, size_t *len)
{
	if (b->err) {
		free(b->p);
		return b->err;
	}
	*out = b->p;
	*len = b->len;
	return 0;
}

static const char *const log_names[ZF_NR_LOGS] = {
	"hot_data", "warm_data", "cold_data", "hot_node", "warm_node", "cold_node",
};

/*
 * The volume's devices (one for most): deviceN= its spec, then its zones,
 * its main-area sections, how many are free, the valid blocks on it and
 * the logs writing there ("-" for none).
 */
static void devices_status(struct zlfs_sb *sbi, struct sbuf *b)
{
	struct zlfs_zdev_member m[ZF_MAX_DEVICES];
	int n = zlfs_zdev_members(sbi->dev, m, ZF_MAX_DEVICES);
	uint64_t valid[ZF_MAX_DEVICES] = { 0 };

	if (n > ZF_MAX_DEVICES)
		n = ZF_MAX_DEVICES;
	for (uint32_t s = 0; s < sbi->nr_secs; s++)
		valid[zlfs_sec_member(sbi, s)] += sbi->secs[s].valid;
	put(b, "devices=%d\n", n);
	for (int i = 0; i < n; i++) {
		const struct zlfs_zdev_geom *g = zlfs_zdev_geom(m[i].dev);
		bool in = i < (int)sbi->nr_members;
		uint32_t lo = in ? sbi->mem_sec[i] : 0, hi = in ? sbi->mem_sec[i + 1] : 0;
		put(b, "device%d=%s\n", i, zlfs_zdev_spec(m[i].dev));
		put(b, "device%d_zones=%u\n", i, g->nr_zones);
		put(b, "device%d_sections=%u\n", i, hi - lo);
		put(b, "device%d_free_sections=%u\n", i, in ? sbi->mem_free[i] : 0);
		put(b, "device%d_valid_blocks=%llu\n", i, (unsigned long long)(in ? valid[i] : 0));
		put(b, "device%d_logs=", i);
		const char *sep = "";
		for (int l = 0; l < ZF_NR_LOGS; l++) {
			if (!(sbi->log_mask & (1u << l)) || !in)
				continue;
			uint32_t sec = sbi->logs[l].segno / sbi->segs_per_sec;
			if (sec >= lo && sec < hi) {
				put(b, "%s%s", sep, log_names[l]);
				sep = ",";
			}
		}
		put(b, "%s\n", *sep ? "" : "-");
	}
}

int zlfs_stats_status(struct zlfs_sb *sbi, const char *extra, const struct zlfs_req_count *reqs,
		      size_t nreqs, char **out, size_t *len)
{
	struct sbuf b = { malloc(4096), 0, 4096, 0 };
	struct zlfs_disp_stats ds;
	const struct zlfs_counters *c = &sbi->st;

	if (!b.p)
		return -ENOMEM;
	b.p[0] = 0;
	zlfs_disp_stats(sbi->disp, &ds);
	uint64_t user = c->data_blocks > c->gc_data_moved ? c->data_blocks - c->gc_data_moved : 0;
	uint64_t all = c->data_blocks + c->node_blocks;
	uint32_t dirty = 0;
	for (uint32_t s = 0; s < sbi->nr_secs; s++)
		dirty += sbi->secs[s].state == ZSEC_INUSE && sbi->secs[s].valid < sbi->sec_blocks &&
			 !zlfs_sec_is_log(sbi, s);
	put(&b, "user_blocks_written=%llu\n", (unsigned long long)user);
	put(&b, "node_blocks_written=%llu\n", (unsigned long long)c->node_blocks);
	put(&b, "gc_data_blocks_moved=%llu\n", (unsigned long long)c->gc_data_moved);
	put(&b, "gc_node_blocks_moved=%llu\n", (unsigned long long)c->gc_node_moved);
	/* (user + GC's copies) / user: what the cleaning models predict */
	put(&b, "gc_write_amplification=%.3f\n",
	    user ? (double)(user + c->gc_data_moved) / (double)user : 1.0);
	/* every main-area block written / user data blocks: nodes included */
	put(&b, "write_amplification=%.3f\n", user ? (double)all / (double)user : 1.0);
	put(&b, "fg_gc_runs=%llu\n", (unsigned long long)c->fg_gc_runs);
	put(&b, "bg_gc_runs=%llu\n", (unsigned long long)c->bg_gc_runs);
	put(&b, "fg_gc_stalls=%llu\n", (unsigned long long)c->fg_gc_stalls);
	put(&b, "gc_time_ms=%llu\n", (unsigned long long)(c->gc_ns / 1000000));
	/* victim selections and their mean time (segment.c's index; bench/scale.sh) */
	put(&b, "gc_victim_picks=%llu\n", (unsigned long long)c->gc_picks);
	put(&b, "gc_victim_pick_ns=%llu\n",
	    (unsigned long long)(c->gc_picks ? c->gc_pick_ns / c->gc_picks : 0));
	put(&b, "zones_reset=%llu\n", (unsigned long long)c->zones_reset);
	put(&b, "checkpoints=%llu\n", (unsigned long long)sbi->cp_count);
	/* the table blocks they wrote: only those changed since (of sit_blocks, nat_blocks) */
	put(&b, "cp_sit_blocks_written=%llu\n", (unsigned long long)sbi->st.cp_sit_written);
	put(&b, "cp_nat_blocks_written=%llu\n", (unsigned long long)sbi->st.cp_nat_written);
	put(&b, "sections=%u\n", sbi->nr_secs);
	put(&b, "section_blocks=%u\n", sbi->sec_blocks);
	put(&b, "free_sections=%u\n", sbi->free_secs);
	put(&b, "prefree_sections=%u\n", sbi->prefree_secs);
	put(&b, "dirty_sections=%u\n", dirty);
	put(&b, "reserved_segments=%u\n", sbi->rsvd_segs);
	put(&b, "overprovision_segments=%u\n", sbi->ovp_segs);
	put(&b, "user_block_count=%llu\n", (unsigned long long)sbi->user_block_count);
	put(&b, "valid_blocks=%llu\n", (unsigned long long)sbi->valid_block_count);
	/* NEW_ADDR and COMPRESS_ADDR slots: counted as used, as F2FS counts them, never written */
	put(&b, "reserved_blocks=%llu\n", (unsigned long long)sbi->reserved_blocks);
	put(&b, "available_blocks=%llu\n", (unsigned long long)zlfs_avail_blocks(sbi));
	/* compression (cluster.c): clusters written compressed, blocks they did not write */
	put(&b, "compressed_clusters=%llu\n", (unsigned long long)c->compr_clusters);
	put(&b, "compressed_blocks_saved=%llu\n", (unsigned long long)c->compr_saved);
	put(&b, "uncompressible_clusters=%llu\n", (unsigned long long)c->compr_raw);
	put(&b, "clusters_decompressed=%llu\n",
	    (unsigned long long)__atomic_load_n(&c->compr_reads, __ATOMIC_RELAXED));
	put(&b, "dirty_nodes=%u\n", sbi->nr_dirty_nodes);
	/* the memory bound (cache_mb): what the caches hold against it */
	put(&b, "cache_blocks_max=%u\n", sbi->cache_blocks);
	put(&b, "cached_nodes=%u\n", sbi->nr_nodes);
	put(&b, "cached_dir_blocks=%u\n", zlfs_bcache_count(sbi));
	put(&b, "dirty_dir_blocks=%u\n", sbi->nr_dirty_meta);
	put(&b, "inodes_in_memory=%u\n", sbi->nr_inodes);
	/*
	 * the NAT's blocks in memory (node.c): read on demand, held when a nid
	 * of theirs was ever used, dropped past nat_blocks_max; of all.
	 * nat_bits: "found" (the mount read none of the NAT) or "made" (it read
	 * all of it, the checkpoint had none).
	 */
	put(&b, "nat_blocks_in_memory=%u\n", sbi->nat_blocks_held);
	put(&b, "nat_blocks_max=%u\n", sbi->nat_cap);
	put(&b, "nat_blocks=%u\n", sbi->nat_blocks);
	put(&b, "nat_blocks_read=%llu\n",
	    (unsigned long long)__atomic_load_n(&sbi->st.nat_reads, __ATOMIC_RELAXED));
	put(&b, "nat_blocks_evicted=%llu\n", (unsigned long long)sbi->st.nat_evicted);
	put(&b, "nat_bits=%s\n", sbi->nat_bits_found ? "found" : "made");
	/* the SIT's (segment.c): those with a segment in use or a log's, of all */
	put(&b, "sit_blocks_in_memory=%u\n", sbi->sit_blocks_held);
	put(&b, "sit_blocks=%u\n", sbi->sit_blocks);
	put(&b, "dirty_sit_blocks=%u\n", sbi->sit_dirty_blocks);   /* for the next checkpoint */
	/* the SIT's share of cache_mb; blocks read back after being dropped, and dropped */
	put(&b, "sit_blocks_max=%u\n", sbi->sit_cap);
	put(&b, "sit_blocks_read=%llu\n",
	    (unsigned long long)__atomic_load_n(&sbi->st.sit_reads, __ATOMIC_RELAXED));
	put(&b, "sit_blocks_evicted=%llu\n", (unsigned long long)sbi->st.sit_evicted);
	put(&b, "cached_attrs=%u\n", zlfs_acache_count(sbi));
	/*
	 * the daemon's heap (glibc's mallinfo2, every arena and mmap()ed
	 * chunk): what is allocated, and what malloc keeps free for reuse, so
	 * RSS beyond the caches can be told from the allocator's own.
	 */
	struct mallinfo2 mi = mallinfo2();
	put(&b, "heap_in_use_kib=%zu\n", (mi.uordblks + mi.hblkhd) / 1024);
	put(&b, "heap_free_kib=%zu\n", mi.fordblks / 1024);
	put(&b, "node_cache_misses=%llu\n", (unsigned long long)sbi->st.node_misses);
	put(&b, "node_readahead=%llu\n", (unsigned long long)sbi->st.node_readahead);
	/* the writeback gate (fuse_file.c): its reserve, refusals, and writeback that found no room */
	put(&b, "wb_reserve_blocks=%llu\n", (unsigned long long)sbi->wb_reserve);
	put(&b, "wb_gate_refusals=%llu\n",
	    (unsigned long long)__atomic_load_n(&c->wb_gate_refusals, __ATOMIC_RELAXED));
	put(&b, "wb_lost_writes=%llu\n", (unsigned long long)c->wb_lost_writes);
	/* the WRITE and FSYNC time line (zlfs.h): sums in ns */
#define TL(key, f) put(&b, key "=%llu\n", (unsigned long long)__atomic_load_n(&c->f, __ATOMIC_RELAXED))
	TL("fsync_reqs", fsync_n);
	TL("fsync_lock_ns", fsync_lock_ns);
	TL("fsync_prep_ns", fsync_prep_ns);
	TL("fsync_node_io_ns", fsync_node_ns);
	TL("fsync_flush_ns", fsync_flush_ns);
	TL("fsync_total_ns", fsync_ns);
	TL("write_reqs", write_n);
	TL("write_data_io_ns", write_io_ns);
	TL("write_total_ns", write_ns);
#undef TL
	/* 0, or the negative errno of the device error that made the volume read-only */
	put(&b, "device_error=%d\n", zlfs_is_shut_down(sbi) ? 0 : sbi->fatal);
	put(&b, "read_only=%d\n", sbi->ro || sbi->fatal);
	if (__atomic_load_n(&sbi->fatal_why_set, __ATOMIC_ACQUIRE))
		put(&b, "inconsistency=%s\n", sbi->fatal_why);
	/* the going-down ioctl stopped it (shutdown.c) */
	put(&b, "shut_down=%d\n", zlfs_is_shut_down(sbi));
	put(&b, "gc=%s\n", sbi->gco.mode == ZLFS_GC_OFF ? "off" :
			   sbi->gco.mode == ZLFS_GC_URGENT ? "urgent" : "on");
	put(&b, "gc_policy=%s\n", sbi->gco.policy == ZLFS_GCP_GREEDY ? "greedy" :
				  sbi->gco.policy == ZLFS_GCP_CB ? "cb" : "auto");
	put(&b, "disp_dispatched=%llu\n", (unsigned long long)ds.dispatched);
	put(&b, "disp_merged=%llu\n", (unsigned long long)ds.merged);
	put(&b, "disp_unaligned=%llu\n", (unsigned long long)ds.unaligned);
	put(&b, "disp_retries=%llu\n", (unsigned long long)ds.retries);
	put(&b, "disp_recovered=%llu\n", (unsigned long long)ds.recovered);
	put(&b, "disp_failed=%llu\n", (unsigned long long)ds.failed);
	/* the device's own: flushes, the time they took (an image: host syncs), short-path commands */
	struct zlfs_zdev_stats zs;
	zlfs_zdev_stats(sbi->dev, &zs);
	put(&b, "dev_flushes=%llu\n", (unsigned long long)zs.flushes);
	put(&b, "dev_host_sync_ns=%llu\n", (unsigned long long)zs.host_sync_ns);
	put(&b, "dev_inline_cmds=%llu\n", (unsigned long long)zs.inline_cmds);
	devices_status(sbi, &b);
	put(&b, "%s", extra);
	/* not key=value: one line per opcode seen, so the set of lines grows with use */
	for (size_t i = 0; i < nreqs; i++)
		if (reqs[i].n)
			put(&b, "fuse_req %s %llu\n", reqs[i].op, (unsigned long long)reqs[i].n);
	return finish(&b, out, len);
}

static const char *cond_name(uint8_t cond)
{
	switch (cond) {
	case ZLFS_ZC_NOT_WP: return "nowp";
	case ZLFS_ZC_EMPTY: return "empty";
	case ZLFS_ZC_IMP_OPEN: return "iopen";
	case ZLFS_ZC_EXP_OPEN: return "eopen";
	case ZLFS_ZC_CLOSED: return "closed";
	case ZLFS_ZC_RDONLY: return "rdonly";
	case ZLFS_ZC_FULL: return "full";
	case ZLFS_ZC_OFFLINE: return "offline";
	default: return "unknown";
	}
}

int zlfs_stats_zones(struct zlfs_sb *sbi, char **out, size_t *len)
{
	struct sbuf b = { malloc(65536), 0, 65536, 0 };
	enum { BATCH = 256 };
	struct zlfs_zone *z = calloc(BATCH, sizeof(*z));
	const struct zlfs_zdev_geom *g = zlfs_zdev_geom(sbi->dev);
	uint64_t main0 = (uint64_t)sbi->lay.main_blkaddr * ZF_BLKSIZE;
	uint64_t main_end = main0 + (uint64_t)sbi->nr_segs * ZF_SEG_BYTES;
	int ret = 0;

	if (!b.p || !z) {
		free(b.p);
		free(z);
		return -ENOMEM;
	}
	b.p[0] = 0;
	struct zlfs_zdev_member m[ZF_MAX_DEVICES];
	int nm = zlfs_zdev_members(sbi->dev, m, ZF_MAX_DEVICES);
	if (nm > ZF_MAX_DEVICES)
		nm = ZF_MAX_DEVICES;
	put(&b, "# zone type cond wp valid cap log dev\n");
	for (uint32_t first = 0; first < g->nr_zones && !ret; ) {
		uint32_t nr = g->nr_zones - first < BATCH ? g->nr_zones - first : BATCH;
		if ((ret = zlfs_disp_report(sbi->disp, first, z, &nr)))
			break;
		if (!nr) {
			ret = -EIO;
			break;
		}
		for (uint32_t i = 0; i < nr; i++) {
			const struct zlfs_zone *q = &z[i];
			bool conv = q->type == ZLFS_ZONE_CONV;
			put(&b, "%u %s %s ", first + i, conv ? "conv" : "seq", cond_name(q->cond));
			if (conv)
				put(&b, "- ");
			else
				put(&b, "%llu ", (unsigned long long)((q->wp - q->start) / ZF_BLKSIZE));
			/* valid blocks: zones wholly in the main area (sections, or segments
			 * of a device without zones); "-" for metadata */
			const char *log = "-";
			if (q->start >= main0 && q->start + q->len <= main_end) {
				uint32_t s0 = (uint32_t)((q->start - main0) / ZF_SEG_BYTES);
				uint32_t s1 = (uint32_t)((q->start + q->len - main0) / ZF_SEG_BYTES);
				uint64_t valid = zlfs_segs_valid(sbi, s0, s1);
				for (int l = 0; l < ZF_NR_LOGS; l++)
					if ((sbi->log_mask & (1u << l)) && sbi->logs[l].segno >= s0 &&
					    sbi->logs[l].segno < s1)
						log = log_names[l];
				put(&b, "%llu ", (unsigned long long)valid);
			} else {
				put(&b, "- ");
			}
			int dev = nm - 1;
			while (dev > 0 && q->start < m[dev].start)
				dev--;
			put(&b, "%llu %s %d\n", (unsigned long long)(q->cap / ZF_BLKSIZE), log, dev);
		}
		first += nr;
	}
	free(z);
	if (ret) {
		free(b.p);
		return ret;
	}
	return finish(&b, out, len);
}
