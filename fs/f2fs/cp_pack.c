/*
 * cp_pack.c - the checkpoint pack codec (include/zlfs/f2fs_cp_pack.h):
 * reading a pack and choosing between the two, its summaries and orphan
 * blocks, and writing one head first and tail last.
 *
 * Invariant: a field read from a pack bounds every read it leads to (the
 * total inside a segment, entry counts inside their block) before it is
 * used; what the pack means beyond that is zf_check_cp's.  A pack is
 * written so that a crash at any block leaves it not intact: the tail,
 * the head's copy, goes last, after a flush.
 * No state, no locks: the caller's io does the I/O under its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zlfs/f2fs_check.h"
#include "zlfs/f2fs_cp_pack.h"

int zf_cp_pack_read(const struct zf_cp_io *io, uint64_t start, uint32_t payload, void *head,
		    uint64_t *ver, char *why, size_t len)
{
	const struct zf_checkpoint *h = head;
	uint8_t *tail = malloc(ZF_BLKSIZE);
	int ret;

	snprintf(why, len, "unreadable");
	if (!tail)
		return -ENOMEM;
	if ((ret = io->read(io->ctx, start, head)))
		goto out;
	ret = -EUCLEAN;
	if (!zf_cp_crc_ok(head)) {
		snprintf(why, len, "bad checksum");
		goto out;
	}
	snprintf(why, len, "head and tail differ (torn)");
	uint32_t total = zf_le32_to_cpu(h->cp_pack_total_block_count);
	if (total <= ZF_CP_PACK_HEAD_BLOCKS + ZF_CP_PACK_TAIL_BLOCKS || total > ZF_BLKS_PER_SEG)
		goto out;
	if ((ret = io->read(io->ctx, start + total - 1, tail)))
		goto out;
	ret = -EUCLEAN;
	if (!zf_cp_crc_ok(tail) || ((struct zf_checkpoint *)tail)->checkpoint_ver != h->checkpoint_ver)
		goto out;
	snprintf(why, len, "unreadable");
	for (uint32_t i = 0; i < payload; i++)
		if ((ret = io->read(io->ctx, start + 1 + i, (uint8_t *)head + (size_t)(i + 1) * ZF_BLKSIZE)))
			goto out;
	*ver = zf_le64_to_cpu(h->checkpoint_ver);
	why[0] = '\0';
	ret = 0;
out:
	free(tail);
	return ret;
}

int zf_cp_pack_choose(const struct zf_cp_pack_state st[2])
{
	if (st[0].err && st[1].err)
		return -1;
	return (!st[0].err && (st[1].err || st[0].ver >= st[1].ver)) ? 0 : 1;
}

int zf_cp_packs_read(const struct zf_cp_io *io, uint64_t cp_blkaddr, uint32_t payload,
		     const struct zf_super *sb, void *head[2], struct zf_cp_pack_state st[2])
{
	for (int k = 0; k < 2; k++) {
		struct zf_cp_pack_state *s = &st[k];
		s->ver = 0;
		s->err = zf_cp_pack_read(io, zf_cp_pack_addr(cp_blkaddr, k), payload, head[k], &s->ver,
					 s->why, sizeof(s->why));
		if (!s->err && sb)
			s->err = zf_check_cp(sb, head[k], s->why, sizeof(s->why));
	}
	int pack = zf_cp_pack_choose(st);
	if (pack >= 0)
		return pack;
	return st[0].err == -ENOMEM || st[1].err == -ENOMEM ? -ENOMEM : -EUCLEAN;
}

/* Compact summaries: NAT journal, SIT journal, then the data logs' entries back to back. */
static int read_compact(const struct zf_cp_io *io, uint64_t addr, uint8_t *blk,
			const uint32_t data_blkoff[ZF_NR_DATA_LOGS],
			struct zf_summary_block *const sums[ZF_NR_LOGS],
			struct zf_journal *nat_j, struct zf_journal *sit_j)
{
	size_t off = 2 * ZF_SUM_JOURNAL_SIZE;
	int ret;

	if ((ret = io->read(io->ctx, addr++, blk)))
		return ret;
	memcpy(nat_j, blk, ZF_SUM_JOURNAL_SIZE);
	memcpy(sit_j, blk + ZF_SUM_JOURNAL_SIZE, ZF_SUM_JOURNAL_SIZE);
	for (int log = ZF_LOG_HOT_DATA; log <= ZF_LOG_COLD_DATA; log++) {
		for (uint32_t j = 0; j < data_blkoff[log - ZF_LOG_HOT_DATA] && j < ZF_ENTRIES_IN_SUM; j++) {
			if (off + ZF_SUMMARY_SIZE > ZF_BLKSIZE - ZF_SUM_FOOTER_SIZE) {
				if ((ret = io->read(io->ctx, addr++, blk)))
					return ret;
				off = 0;
			}
			memcpy(&sums[log]->entries[j], blk + off, ZF_SUMMARY_SIZE);
			off += ZF_SUMMARY_SIZE;
		}
	}
	return 0;
}

int zf_cp_pack_read_sums(const struct zf_cp_io *io, uint64_t start, const struct zf_checkpoint *cp,
			 const uint32_t data_blkoff[ZF_NR_DATA_LOGS],
			 struct zf_summary_block *const sums[ZF_NR_LOGS],
			 struct zf_journal *nat_j, struct zf_journal *sit_j)
{
	uint32_t flags = zf_le32_to_cpu(cp->ckpt_flags);
	uint64_t at = start + zf_le32_to_cpu(cp->cp_pack_start_sum);
	uint32_t total = zf_le32_to_cpu(cp->cp_pack_total_block_count);
	uint8_t *blk = malloc(ZF_BLKSIZE);
	const struct zf_summary_block *s = (const struct zf_summary_block *)blk;
	int ret = 0;

	if (!blk)
		return -ENOMEM;
	if (flags & ZF_CP_COMPACT_SUM_FLAG) {
		if ((ret = read_compact(io, at, blk, data_blkoff, sums, nat_j, sit_j)))
			goto out;
	} else {
		for (int i = ZF_LOG_HOT_DATA; i <= ZF_LOG_COLD_DATA; i++) {
			if ((ret = io->read(io->ctx, at + (uint32_t)(i - ZF_LOG_HOT_DATA), blk)))
				goto out;
			memcpy(sums[i]->entries, s->entries, sizeof(s->entries));
			if (i == ZF_LOG_HOT_DATA)
				memcpy(nat_j, &s->journal, sizeof(*nat_j));
			else if (i == ZF_LOG_COLD_DATA)
				memcpy(sit_j, &s->journal, sizeof(*sit_j));
		}
	}
	/* node summaries: the blocks before the tail (zf_check_cp: they fit) */
	if (!(flags & ZF_CP_UMOUNT_FLAG))
		goto out;
	uint64_t node_at = start + total - ZF_CP_PACK_TAIL_BLOCKS - ZF_CP_PACK_NODE_SUMS;
	for (int i = ZF_LOG_HOT_NODE; i < ZF_NR_LOGS; i++) {
		if ((ret = io->read(io->ctx, node_at + (uint32_t)(i - ZF_LOG_HOT_NODE), blk)))
			goto out;
		memcpy(sums[i]->entries, s->entries, sizeof(s->entries));
	}
out:
	free(blk);
	return ret;
}

uint32_t zf_cp_pack_orphan_blocks(const struct zf_checkpoint *cp, uint32_t payload)
{
	uint32_t start_sum = zf_le32_to_cpu(cp->cp_pack_start_sum);
	uint32_t first = ZF_CP_PACK_HEAD_BLOCKS + payload;

	if (!(zf_le32_to_cpu(cp->ckpt_flags) & ZF_CP_ORPHAN_PRESENT_FLAG) || start_sum < first)
		return 0;
	return start_sum - first;
}

int zf_cp_orphan_count(const struct zf_orphan_block *ob, uint32_t *cnt)
{
	*cnt = zf_le32_to_cpu(ob->entry_count);
	return *cnt > ZF_ORPHANS_PER_BLOCK ? -EUCLEAN : 0;
}

/* Orphan block b of nblocks, from the list orph[0..n). */
static void fill_orphan_block(struct zf_orphan_block *ob, const uint32_t *orph, uint32_t n,
			      uint32_t b, uint32_t nblocks)
{
	uint32_t cnt = n - b * ZF_ORPHANS_PER_BLOCK;

	memset(ob, 0, sizeof(*ob));
	if (cnt > ZF_ORPHANS_PER_BLOCK)
		cnt = ZF_ORPHANS_PER_BLOCK;
	for (uint32_t i = 0; i < cnt; i++)
		ob->ino[i] = zf_cpu_to_le32(orph[b * ZF_ORPHANS_PER_BLOCK + i]);
	ob->blk_addr = zf_cpu_to_le16((uint16_t)(b + 1));   /* 1-based, as the kernel's */
	ob->blk_count = zf_cpu_to_le16((uint16_t)nblocks);
	ob->entry_count = zf_cpu_to_le32(cnt);
	ob->check_sum = zf_cpu_to_le32(zf_crc32(ZF_SUPER_MAGIC, ob,
						offsetof(struct zf_orphan_block, check_sum)));
}

int zf_cp_pack_write_body(const struct zf_cp_io *io, uint64_t start, void *head,
			  const struct zf_cp_pack_body *body)
{
	struct zf_checkpoint *cp = head;
	uint32_t oblocks = zf_cp_orphan_blocks(body->norphans);
	uint32_t start_sum = zf_cp_pack_start_sum(body->payload, oblocks);
	uint32_t total = zf_cp_pack_total(body->payload, oblocks, body->umount);
	uint64_t a = start;
	uint8_t *blk;
	int ret;

	if (total > ZF_BLKS_PER_SEG)
		return -ENOSPC;
	if (!(blk = malloc(ZF_BLKSIZE)))
		return -ENOMEM;
	uint32_t nb = body->nat_bits ? body->nat_bits_blocks : 0;
	bool bits = zf_nat_bits_fit(total, body->payload, nb);
	uint32_t flags = zf_le32_to_cpu(cp->ckpt_flags) & ~ZF_CP_NAT_BITS_FLAG;
	cp->ckpt_flags = zf_cpu_to_le32(flags | (bits ? ZF_CP_NAT_BITS_FLAG : 0));
	cp->cp_pack_start_sum = zf_cpu_to_le32(start_sum);
	cp->cp_pack_total_block_count = zf_cpu_to_le32(total);
	zf_cp_set_crc(cp);
	if ((ret = io->write(io->ctx, a++, cp)))
		goto out;
	for (uint32_t i = 0; i < body->payload; i++)
		if ((ret = io->write(io->ctx, a++, body->payload_blks + (size_t)i * ZF_BLKSIZE)))
			goto out;
	for (uint32_t b = 0; b < oblocks; b++) {
		fill_orphan_block((struct zf_orphan_block *)blk, body->orphans, body->norphans, b, oblocks);
		if ((ret = io->write(io->ctx, a++, blk)))
			goto out;
	}
	/* normal summaries, journals empty: NAT and SIT are in their blocks */
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		struct zf_summary_block *s = (struct zf_summary_block *)blk;
		if (zf_log_is_node((unsigned int)i) && !body->umount)
			break;
		memset(blk, 0, ZF_BLKSIZE);
		memcpy(s->entries, body->sums[i]->entries, sizeof(s->entries));
		s->footer.entry_type = body->sums[i]->footer.entry_type;
		if ((ret = io->write(io->ctx, a++, blk)))
			goto out;
	}
	/* the nat_bits, stamped with this pack's version and crc, in the segment's last blocks */
	if (bits) {
		uint64_t check = zf_cpu_to_le64(zf_cp_nat_bits_check(cp));
		memcpy(body->nat_bits, &check, sizeof(check));
		for (uint32_t i = 0; i < nb; i++)
			if ((ret = io->write(io->ctx, start + ZF_BLKS_PER_SEG - nb + i,
					     body->nat_bits + (size_t)i * ZF_BLKSIZE)))
				goto out;
	}
	/* everything the tail vouches for is durable before it */
	ret = io->flush(io->ctx);
out:
	free(blk);
	return ret;
}

uint32_t zf_nat_block_used(const struct zf_nat_block *blk, uint32_t b)
{
	uint32_t used = 0;

	for (uint32_t k = 0; k < ZF_NAT_ENTRY_PER_BLOCK; k++)
		if ((b == 0 && k == 0) || blk->entries[k].block_addr)
			used++;
	return used;
}

void zf_nat_bits_put(uint8_t *bits, uint32_t bytes, uint32_t b, uint32_t used)
{
	uint8_t m = (uint8_t)(1u << (b % 8));
	uint8_t *full = bits + 8 + b / 8, *empty = full + bytes;

	if (b >= bytes * 8)
		return;
	*full = used == ZF_NAT_ENTRY_PER_BLOCK ? *full | m : *full & (uint8_t)~m;
	*empty = used == 0 ? *empty | m : *empty & (uint8_t)~m;
}

uint64_t zf_cp_nat_bits_check(const struct zf_checkpoint *cp)
{
	uint32_t off = zf_le32_to_cpu(cp->checksum_offset), crc = 0;

	if (off <= ZF_BLKSIZE - sizeof(crc))
		memcpy(&crc, (const uint8_t *)cp + off, sizeof(crc));
	return zf_le64_to_cpu(cp->checkpoint_ver) | (uint64_t)zf_le32_to_cpu(crc) << 32;
}

int zf_cp_pack_read_nat_bits(const struct zf_cp_io *io, uint64_t start,
			     const struct zf_checkpoint *cp, uint32_t nblocks, uint8_t *buf)
{
	uint32_t total = zf_le32_to_cpu(cp->cp_pack_total_block_count);
	int ret;

	if (!(zf_le32_to_cpu(cp->ckpt_flags) & ZF_CP_NAT_BITS_FLAG) || total > ZF_BLKS_PER_SEG ||
	    !zf_nat_bits_fit(total, 0, nblocks))
		return 0;
	for (uint32_t i = 0; i < nblocks; i++)
		if ((ret = io->read(io->ctx, start + ZF_BLKS_PER_SEG - nblocks + i,
				    buf + (size_t)i * ZF_BLKSIZE)))
			return ret;
	uint64_t check;
	memcpy(&check, buf, sizeof(check));
	return zf_le64_to_cpu(check) == zf_cp_nat_bits_check(cp);
}

int zf_cp_pack_write_tail(const struct zf_cp_io *io, uint64_t start, const void *head)
{
	const struct zf_checkpoint *cp = head;
	uint32_t total = zf_le32_to_cpu(cp->cp_pack_total_block_count);
	int ret;

	if (total <= ZF_CP_PACK_HEAD_BLOCKS || total > ZF_BLKS_PER_SEG)
		return -EINVAL;
	if ((ret = io->write(io->ctx, start + total - ZF_CP_PACK_TAIL_BLOCKS, head)))
		return ret;
	return io->flush(io->ctx);
}
