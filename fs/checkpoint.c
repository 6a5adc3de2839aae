/*
 * checkpoint.c - reading the last valid checkpoint at mount, and writing a
 * new one.
 *
 * A pack (one segment each, two packs) is: head, cp_payload blocks, orphan
 * blocks, 3 data summaries (normal; zlfs reads compact ones too), 3 node
 * summaries (clean unmount only), tail = copy of the head.  A pack is valid
 * when head and tail have good CRCs and the same version; the higher valid
 * version wins.  The pack's format is the codec's (fs/f2fs/cp_pack.c,
 * shared with fsck.zlfs); this file says what goes into it and when.
 *
 * Writing (zlfs_checkpoint), the order that makes it atomic:
 *   1. wait for data I/O in flight; write every dirty node to the node logs;
 *   2. NAT and SIT blocks to their unused copies (bitmaps flipped in memory),
 *      SSA blocks of the open segments;
 *   3. the new pack into the pack not holding the last checkpoint, all but
 *      the tail; flush;
 *   4. the tail; flush.  <- THE COMMIT POINT (marked "commit" below)
 *   5. only now: prefree sections become free and their zones are reset.
 * A crash before 4 leaves the previous checkpoint, whose blocks are all
 * still in place (nothing it references was overwritten or reset), and
 * with it the fsync chain written after it (node.c), which lies in
 * sections that are neither reset nor reused before 5.  A pack torn at any
 * block fails zf_cp_pack_read's checks (head and tail crc, equal
 * versions), so mount takes the previous one.
 * All calls need sbi->lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zlfs.h"
#include "data.h"
#include "bcache.h"
#include "checkpoint.h"
#include "segment.h"
#include "node.h"
#include "inode.h"
#include "zlfs/f2fs_cp_pack.h"

static uint32_t pack_addr(const struct zlfs_sb *sbi, int pack)
{
	return (uint32_t)zf_cp_pack_addr(zf_le32_to_cpu(sbi->sb.cp_blkaddr), pack);
}

/* The codec's I/O: the mount's block reads and metadata writes, the dispatcher's flush. */
static int io_read(void *ctx, uint64_t blkaddr, void *buf)
{
	return zlfs_read_block(ctx, (uint32_t)blkaddr, buf);
}

static int io_write(void *ctx, uint64_t blkaddr, const void *buf)
{
	return zlfs_write_meta_block(ctx, (uint32_t)blkaddr, buf);
}

static int io_flush(void *ctx)
{
	return zlfs_disp_flush(((struct zlfs_sb *)ctx)->disp);
}

static struct zf_cp_io cp_io(struct zlfs_sb *sbi)
{
	return (struct zf_cp_io){ .ctx = sbi, .read = io_read, .write = io_write, .flush = io_flush };
}

static uint8_t *cp_bitmap(struct zlfs_sb *sbi, bool nat)
{
	struct zf_checkpoint *cp = (struct zf_checkpoint *)sbi->cp_blk;

	if (sbi->cp_payload)
		return nat ? cp->sit_nat_version_bitmap : sbi->cp_blk + ZF_BLKSIZE;
	return cp->sit_nat_version_bitmap + (nat ? sbi->sit_bitmap_bytes : 0);
}

int zlfs_cp_load(struct zlfs_sb *sbi)
{
	struct zf_cp_io io = cp_io(sbi);
	uint32_t payload = zf_le32_to_cpu(sbi->sb.cp_payload);
	void *h[2] = { calloc(1 + payload, ZF_BLKSIZE), calloc(1 + payload, ZF_BLKSIZE) };
	struct zf_journal *nat_j = calloc(1, sizeof(*nat_j)), *sit_j = calloc(1, sizeof(*sit_j));
	struct zf_summary_block *sum = malloc(ZF_BLKSIZE);
	uint8_t *bits = NULL;
	struct zf_cp_pack_state st[2];
	int ret;

	if (!h[0] || !h[1] || !nat_j || !sit_j || !sum) {
		ret = -ENOMEM;
		goto out;
	}
	/* the newer intact pack; zf_check_cp on it alone, below */
	ret = zf_cp_packs_read(&io, zf_le32_to_cpu(sbi->sb.cp_blkaddr), payload, NULL, h, st);
	if (ret < 0) {
		fprintf(stderr, "zlfs: no valid checkpoint\n");
		ret = ret == -ENOMEM ? ret : -ZLFS_EFSCORRUPTED;
		goto out;
	}
	sbi->cp_pack = ret;
	uint8_t *head = h[sbi->cp_pack];
	struct zf_checkpoint *cp = (struct zf_checkpoint *)head;
	/* as the kernel: the newest intact pack is the checkpoint, sane or refused */
	char why[200];
	if ((ret = zf_check_cp(&sbi->sb, head, why, sizeof(why)))) {
		fprintf(stderr, "zlfs: checkpoint pack %d (version %llu) refused: %s\n",
			sbi->cp_pack + 1, (unsigned long long)zf_le64_to_cpu(cp->checkpoint_ver), why);
		goto out;
	}
	sbi->cp_ver = zf_le64_to_cpu(cp->checkpoint_ver);
	sbi->cp_payload = payload;
	sbi->cp_blk = head;   /* head and payload blocks, as read */
	h[sbi->cp_pack] = NULL;
	uint32_t start = pack_addr(sbi, sbi->cp_pack);
	uint32_t flags = zf_le32_to_cpu(cp->ckpt_flags);
	sbi->need_fsck = flags & ZF_CP_FSCK_FLAG;
	sbi->sit_bitmap_bytes = zf_le32_to_cpu(cp->sit_ver_bitmap_bytesize);
	sbi->nat_bitmap_bytes = zf_le32_to_cpu(cp->nat_ver_bitmap_bytesize);
	if (flags & ZF_CP_LARGE_NAT_BITMAP_FLAG) {
		fprintf(stderr, "zlfs: large NAT bitmaps are not supported\n");
		ret = -EOPNOTSUPP;
		goto out;
	}
	sbi->sit_bitmap = cp_bitmap(sbi, false);
	sbi->nat_bitmap = cp_bitmap(sbi, true);
	sbi->user_block_count = zf_le64_to_cpu(cp->user_block_count);
	sbi->rsvd_segs = zf_le32_to_cpu(cp->rsvd_segment_count);
	sbi->ovp_segs = zf_le32_to_cpu(cp->overprov_segment_count);
	sbi->valid_inode_count = zf_le32_to_cpu(cp->valid_inode_count);
	sbi->next_free_nid = zf_le32_to_cpu(cp->next_free_nid);
	sbi->log_mask = cp->alloc_type[ZF_CP_LOGMASK_SLOT];
	if (!sbi->log_mask)
		sbi->log_mask = ZF_LOGMASK_ALL;

	/* the logs */
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		struct zlog *l = &sbi->logs[i];
		bool node = zf_log_is_node((unsigned int)i);
		int k = node ? i - ZF_LOG_HOT_NODE : i;
		l->segno = zf_le32_to_cpu(node ? cp->cur_node_segno[k] : cp->cur_data_segno[k]);
		l->blkoff = zf_le16_to_cpu(node ? cp->cur_node_blkoff[k] : cp->cur_data_blkoff[k]);
		l->usable = zf_layout_usable_blocks(&sbi->lay, l->segno);
		if (l->blkoff > l->usable) {   /* segno and blkoff < 512: zf_check_cp */
			fprintf(stderr, "zlfs: checkpoint: log %d at block %u of segment %u, which "
				"has %u usable blocks\n", i, l->blkoff, l->segno, l->usable);
			ret = -ZLFS_EFSCORRUPTED;
			goto out;
		}
		memset(&l->sum, 0, sizeof(l->sum));
		l->sum.footer.entry_type = node ? ZF_SUM_TYPE_NODE : ZF_SUM_TYPE_DATA;
	}
	/* data summaries (and journals); node summaries after a clean unmount */
	uint32_t data_off[ZF_NR_DATA_LOGS];
	struct zf_summary_block *sums[ZF_NR_LOGS];
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		sums[i] = &sbi->logs[i].sum;
		if (!zf_log_is_node((unsigned int)i))
			data_off[i - ZF_LOG_HOT_DATA] = sbi->logs[i].blkoff;
	}
	if ((ret = zf_cp_pack_read_sums(&io, start, cp, data_off, sums, nat_j, sit_j)))
		goto out;
	/* else the node logs' summaries are in the SSA */
	for (int i = ZF_LOG_HOT_NODE; i < ZF_NR_LOGS && !(flags & ZF_CP_UMOUNT_FLAG); i++) {
		if ((ret = zlfs_read_block(sbi, zf_ssa_blkaddr(&sbi->lay, sbi->logs[i].segno), sum)))
			goto out;
		memcpy(sbi->logs[i].sum.entries, sum->entries, sizeof(sum->entries));
	}
	/* the NAT's full and empty blocks, when the pack has them: then no NAT block is read */
	uint32_t nb = zf_nat_bits_blocks(sbi->lay.max_nid / ZF_NAT_ENTRY_PER_BLOCK);
	if (!(bits = calloc(nb, ZF_BLKSIZE))) {
		ret = -ENOMEM;
		goto out;
	}
	if ((ret = zf_cp_pack_read_nat_bits(&io, start, cp, nb, bits)) < 0)
		goto out;
	if ((ret = zlfs_node_build_from(sbi, nat_j, ret ? bits : NULL)) ||
	    (ret = zlfs_seg_build(sbi, sit_j)))
		goto out;
	/*
	 * The counters the checkpoint keeps must agree with what we rebuilt:
	 * the SIT's blocks, and as many more as files have NEW_ADDR or
	 * COMPRESS_ADDR slots (F2FS counts those too; only a walk of every
	 * file could check that part, which fsck does).
	 */
	if (sbi->valid_block_count > zf_le64_to_cpu(cp->valid_block_count) ||
	    zf_le64_to_cpu(cp->valid_block_count) > sbi->user_block_count) {
		fprintf(stderr, "zlfs: checkpoint says %llu valid blocks, SIT %llu, user blocks %llu\n",
			(unsigned long long)zf_le64_to_cpu(cp->valid_block_count),
			(unsigned long long)sbi->valid_block_count,
			(unsigned long long)sbi->user_block_count);
		ret = -ZLFS_EFSCORRUPTED;
		goto out;
	}
	sbi->reserved_blocks = zf_le64_to_cpu(cp->valid_block_count) - sbi->valid_block_count;
	sbi->valid_node_count = zf_le32_to_cpu(cp->valid_node_count);
	ret = 0;
out:
	free(h[0]);
	free(h[1]);
	free(nat_j);
	free(sit_j);
	free(sum);
	free(bits);
	return ret;
}

int zlfs_cp_orphans(struct zlfs_sb *sbi, uint32_t **inos, uint32_t *n)
{
	struct zf_checkpoint *cp = (struct zf_checkpoint *)sbi->cp_blk;
	struct zf_orphan_block *ob;
	uint32_t start = pack_addr(sbi, sbi->cp_pack);
	uint32_t first = ZF_CP_PACK_HEAD_BLOCKS + sbi->cp_payload;
	uint32_t nblk = zf_cp_pack_orphan_blocks(cp, sbi->cp_payload);
	int ret = 0;

	*inos = NULL;
	*n = 0;
	if (!nblk)
		return 0;
	ob = malloc(ZF_BLKSIZE);
	*inos = calloc((size_t)nblk * ZF_ORPHANS_PER_BLOCK, sizeof(uint32_t));
	if (!ob || !*inos) {
		free(ob);
		return -ENOMEM;
	}
	for (uint32_t b = 0; b < nblk; b++) {
		if ((ret = zlfs_read_block(sbi, start + first + b, ob)))
			break;
		uint32_t cnt;
		if ((ret = zf_cp_orphan_count(ob, &cnt)))
			break;
		for (uint32_t i = 0; i < cnt; i++)
			(*inos)[(*n)++] = zf_le32_to_cpu(ob->ino[i]);
	}
	free(ob);
	return ret;
}

uint32_t zlfs_cp_chain_start(const struct zlfs_sb *sbi)
{
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)sbi->cp_blk;
	uint32_t segno = zf_le32_to_cpu(cp->cur_node_segno[ZF_LOG_WARM_NODE - ZF_LOG_HOT_NODE]);
	uint32_t off = zf_le16_to_cpu(cp->cur_node_blkoff[ZF_LOG_WARM_NODE - ZF_LOG_HOT_NODE]);

	if (segno >= sbi->lay.segment_count_main || off >= ZF_BLKS_PER_SEG)
		return ZF_NULL_ADDR;
	return zf_seg_blkaddr(&sbi->lay, segno) + off;
}

bool zlfs_cp_chain_pending(struct zlfs_sb *sbi)
{
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)sbi->cp_blk;
	uint32_t start = zlfs_cp_chain_start(sbi);
	bool pending = false;

	/* a clean unmount leaves no chain; a merged warm node log writes none */
	if ((zf_le32_to_cpu(cp->ckpt_flags) & ZF_CP_UMOUNT_FLAG) || start == ZF_NULL_ADDR ||
	    !(sbi->log_mask & (1u << ZF_LOG_WARM_NODE)) || !zlfs_is_main_blkaddr(sbi, start))
		return false;
	struct zf_node *blk = malloc(ZF_BLKSIZE);
	if (!blk)
		return false;
	/* past a zone's write pointer a block reads as zeros: cp_ver 0, no match */
	if (!zlfs_read_block(sbi, start, blk))
		pending = zlfs_cp_node_ver_ok(sbi, zf_le64_to_cpu(blk->footer.cp_ver));
	free(blk);
	return pending;
}

/* Steps 1 and 2: what the checkpoint points at, written to the logs, NAT, SIT and SSA. */
static int flush_dependents(struct zlfs_sb *sbi)
{
	while (sbi->io_inflight)
		zlfs_wait(sbi, &sbi->io_cv);
	/* no user write is between its allocation and its commit now */
	zlfs_seg_reloc_clear(sbi);
	/* dentry and symlink blocks first: the nodes written next point at them */
	int ret;
	if ((ret = zlfs_bcache_writeback(sbi)) ||
	    (ret = zlfs_node_flush(sbi)) || (ret = zlfs_seg_settle_logs(sbi)) ||
	    (ret = zlfs_nat_flush(sbi)) || (ret = zlfs_seg_flush(sbi)))
		return ret;
	return 0;
}

/*
 * For step 3: the head of checkpoint version ver in sbi->cp_blk (the
 * bitmaps there were updated by the flushes).  The pack's extent and the crc are
 * the codec's, when it writes the pack.
 */
static void fill_head(struct zlfs_sb *sbi, uint64_t ver, bool umount, uint32_t norph)
{
	struct zf_checkpoint *cp = (struct zf_checkpoint *)sbi->cp_blk;

	cp->checkpoint_ver = zf_cpu_to_le64(ver);
	cp->user_block_count = zf_cpu_to_le64(sbi->user_block_count);
	cp->valid_block_count = zf_cpu_to_le64(sbi->valid_block_count + sbi->reserved_blocks);
	cp->free_segment_count = zf_cpu_to_le32(zlfs_seg_free_count(sbi));
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		bool node = zf_log_is_node((unsigned int)i);
		int k = node ? i - ZF_LOG_HOT_NODE : i;
		if (node) {
			cp->cur_node_segno[k] = zf_cpu_to_le32(sbi->logs[i].segno);
			cp->cur_node_blkoff[k] = zf_cpu_to_le16((uint16_t)sbi->logs[i].blkoff);
		} else {
			cp->cur_data_segno[k] = zf_cpu_to_le32(sbi->logs[i].segno);
			cp->cur_data_blkoff[k] = zf_cpu_to_le16((uint16_t)sbi->logs[i].blkoff);
		}
		cp->alloc_type[i] = ZF_ALLOC_LFS;
	}
	cp->alloc_type[ZF_CP_LOGMASK_SLOT] = (uint8_t)(sbi->log_mask == ZF_LOGMASK_ALL ? 0 : sbi->log_mask);
	uint32_t flags = zf_le32_to_cpu(cp->ckpt_flags);
	flags &= ~(ZF_CP_UMOUNT_FLAG | ZF_CP_ORPHAN_PRESENT_FLAG | ZF_CP_COMPACT_SUM_FLAG |
		   ZF_CP_FSCK_FLAG | ZF_CP_CRC_RECOVERY_FLAG | ZF_CP_NAT_BITS_FLAG |
		   ZF_CP_TRIMMED_FLAG | ZF_CP_NOCRC_RECOVERY_FLAG);
	/* fsync chains after this checkpoint carry its crc in their cp_ver */
	flags |= ZF_CP_CRC_RECOVERY_FLAG;
	if (umount)
		flags |= ZF_CP_UMOUNT_FLAG;
	if (sbi->need_fsck)   /* the kernel's or a shutdown's request, kept until fsck */
		flags |= ZF_CP_FSCK_FLAG;
	if (norph)
		flags |= ZF_CP_ORPHAN_PRESENT_FLAG;
	cp->ckpt_flags = zf_cpu_to_le32(flags);
	cp->valid_node_count = zf_cpu_to_le32(sbi->valid_node_count);
	cp->valid_inode_count = zf_cpu_to_le32(sbi->valid_inode_count);
	cp->next_free_nid = zf_cpu_to_le32(sbi->next_free_nid);
	cp->elapsed_time = zf_cpu_to_le64((uint64_t)time(NULL));
	cp->checksum_offset = zf_cpu_to_le32(ZF_CP_CHKSUM_OFFSET);
}

/* Step 3: the pack into slot `pack`, all but its tail, flushed. */
static int write_pack(struct zlfs_sb *sbi, int pack, const uint32_t *orphans, uint32_t norph,
		      bool umount)
{
	struct zf_cp_io io = cp_io(sbi);
	struct zf_cp_pack_body body = {
		.payload_blks = sbi->cp_blk + ZF_BLKSIZE,
		.payload = sbi->cp_payload,
		.orphans = orphans,
		.norphans = norph,
		.umount = umount,
		/* node.c brought them up to date as it wrote the NAT blocks */
		.nat_bits = sbi->nat_bits,
		.nat_bits_blocks = sbi->nat_bits_blocks,
	};

	for (int i = 0; i < ZF_NR_LOGS; i++)
		body.sums[i] = &sbi->logs[i].sum;
	return zf_cp_pack_write_body(&io, pack_addr(sbi, pack), sbi->cp_blk, &body);
}

/* Step 5: the new checkpoint is in force; what waited for it goes on. */
static void after_commit(struct zlfs_sb *sbi, int pack, uint64_t ver)
{
	sbi->cp_pack = pack;
	sbi->cp_ver = ver;
	sbi->dirty = false;
	sbi->data_unflushed = false;
	sbi->cp_count++;
	sbi->last_cp_ms = zlfs_now_ms();
	zlfs_node_after_cp(sbi);
	zlfs_seg_after_cp(sbi);
	zlfs_node_shrink(sbi, sbi->node_cap);
	sbi->trim_retry = 0;   /* what was dirty is clean: a trim may free it now */
	sbi->sit_retry = sbi->nat_retry = 0;   /* likewise the SIT's and NAT's shares */
}

int zlfs_checkpoint(struct zlfs_sb *sbi, bool umount)
{
	uint32_t *orphans = NULL, norph = 0;
	int ret;

	if (sbi->fatal)
		return -EROFS;
	if (sbi->ro)
		return 0;
	if ((ret = flush_dependents(sbi)))
		goto fail;
	if (sbi->nr_orphans) {
		orphans = calloc(sbi->nr_orphans, sizeof(*orphans));
		if (!orphans) {
			ret = -ENOMEM;
			goto fail;
		}
		norph = zlfs_orphan_list(sbi, orphans, sbi->nr_orphans);
	}
	uint64_t ver = sbi->cp_ver + 1;
	int pack = !sbi->cp_pack;   /* the slot not holding the checkpoint in force */
	fill_head(sbi, ver, umount, norph);
	if ((ret = write_pack(sbi, pack, orphans, norph, umount)))
		goto fail;
	/* step 4, commit: the tail block, flushed, makes this checkpoint the one in force */
	struct zf_cp_io io = cp_io(sbi);
	if ((ret = zf_cp_pack_write_tail(&io, pack_addr(sbi, pack), sbi->cp_blk)))
		goto fail;
	after_commit(sbi, pack, ver);
	free(orphans);
	return 0;
fail:
	free(orphans);
	zlfs_set_fatal(sbi, ret);
	return ret;
}
