/*
 * load.c - fsck.zlfs: read and check the metadata areas: both superblock
 * copies, both checkpoint packs, the NAT and SIT with the checkpoint's
 * journals over them, the SSA, the orphan list, and the roll-forward chain
 * fsync left after the checkpoint.
 *
 * The SSA is read segment by segment as the walk needs it (fsck_ssa_block).
 * The first superblock copy that passes zf_check_super is used; of the
 * two packs, the newest intact one, unless it fails zf_check_cp and the
 * older passes (reported: repair then writes from the older).  The packs
 * are read by the codec the filesystem uses too (fs/f2fs/cp_pack.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"
#include "zlfs/f2fs_feature.h"
#include "zlfs/probe.h"
#include "zlfs/f2fs_cp_pack.h"

/*
 * Reads go through a direct-mapped cache of aligned runs of RA_BLOCKS
 * blocks: the metadata areas are read front to back, and nodes written one
 * after another (a directory's inodes, say) sit together in their log, so
 * one command serves many blocks.  A run the device will not read whole
 * (past a zone's write pointer on some devices, across two devices of a
 * volume) is read a block at a time.  fsck_unload and repair's writes
 * drop what they make stale.
 */
#define RA_BLOCKS 128
#define RA_SLOTS 64
static struct ra_slot {
	uint64_t run;             /* blkaddr / RA_BLOCKS, or UINT64_MAX: empty */
	uint8_t *buf;
	uint8_t *ok;              /* per block: read (a run read block by block may have holes) */
} ra[RA_SLOTS];
static uint8_t *bounce;

static int ra_fill(struct fsck *f, struct ra_slot *s, uint64_t run)
{
	uint64_t first = run * RA_BLOCKS, n = RA_BLOCKS;

	if (!s->buf && (!(s->buf = aligned_alloc(ZF_BLKSIZE, (size_t)RA_BLOCKS * ZF_BLKSIZE)) ||
			!(s->ok = malloc(RA_BLOCKS))))
		return -ENOMEM;
	if (f->lay.block_count && first + n > f->lay.block_count)
		n = f->lay.block_count - first;
	s->run = run;
	memset(s->ok, 0, RA_BLOCKS);
	if (!zlfs_zdev_read(f->dev, s->buf, n * ZF_BLKSIZE, first * ZF_BLKSIZE)) {
		memset(s->ok, 1, n);
		return 0;
	}
	return 0;   /* nothing cached: fsck_read_block reads the block alone */
}

void fsck_read_drop(uint64_t blkaddr)
{
	struct ra_slot *s = &ra[(blkaddr / RA_BLOCKS) % RA_SLOTS];
	if (s->run == blkaddr / RA_BLOCKS)
		s->run = UINT64_MAX;
}

int fsck_read_block(struct fsck *f, uint64_t blkaddr, void *buf)
{
	if (f->lay.block_count && blkaddr >= f->lay.block_count)
		return -ERANGE;
	uint64_t run = blkaddr / RA_BLOCKS;
	struct ra_slot *s = &ra[run % RA_SLOTS];
	int ret;
	if (f->lay.block_count && (!s->buf || s->run != run) && (ret = ra_fill(f, s, run)))
		return ret;
	if (f->lay.block_count && s->run == run && s->ok[blkaddr % RA_BLOCKS]) {
		memcpy(buf, s->buf + (blkaddr % RA_BLOCKS) * ZF_BLKSIZE, ZF_BLKSIZE);
		return 0;
	}
	if (!bounce && !(bounce = aligned_alloc(ZF_BLKSIZE, ZF_BLKSIZE)))
		return -ENOMEM;
	if ((ret = zlfs_zdev_read(f->dev, bounce, ZF_BLKSIZE, blkaddr * ZF_BLKSIZE)))
		return ret;
	memcpy(buf, bounce, ZF_BLKSIZE);
	return 0;
}

bool fsck_is_main(const struct fsck *f, uint64_t blkaddr)
{
	return blkaddr >= f->lay.main_blkaddr &&
	       blkaddr < f->lay.main_blkaddr + (uint64_t)f->nr_segs * ZF_BLKS_PER_SEG;
}

bool fsck_sit_valid(const struct fsck *f, uint32_t blkaddr)
{
	if (!fsck_is_main(f, blkaddr))
		return false;
	uint32_t rel = blkaddr - f->lay.main_blkaddr;
	return zf_msb_test(fsck_sit(f, rel / ZF_BLKS_PER_SEG)->valid_map, rel % ZF_BLKS_PER_SEG);
}

/*
 * The SSA block of main segment segno, read when first asked for (only
 * segments that hold something are): a current segment's summary is the
 * checkpoint's (data logs; node logs after a clean unmount), as the kernel
 * keeps it there.  An unreadable block reads as zeros, which every owner
 * then disagrees with.  NULL only without memory.
 */
struct zf_summary_block *fsck_ssa_block(struct fsck *f, uint32_t segno)
{
	struct zf_summary_block *s;

	if (fsck_bit(f->ssa_set, segno))
		return f->ssa[segno];
	if (!(s = calloc(1, sizeof(*s))))
		return NULL;
	if (fsck_read_block(f, zf_ssa_blkaddr(&f->lay, segno), s))
		memset(s, 0, sizeof(*s));
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		bool node = zf_log_is_node((unsigned int)i);
		if (f->cur_seg[i] != segno || (node && !f->clean_unmount))
			continue;
		memcpy(s->entries, f->sums[i].entries, sizeof(s->entries));
		s->footer.entry_type = node ? ZF_SUM_TYPE_NODE : ZF_SUM_TYPE_DATA;
	}
	f->ssa[segno] = s;
	fsck_bit_set(f->ssa_set, segno);
	return s;
}

const struct zf_summary *fsck_ssa(struct fsck *f, uint32_t blkaddr, uint8_t *type)
{
	static const struct zf_summary none;
	uint32_t rel = blkaddr - f->lay.main_blkaddr;
	const struct zf_summary_block *s = fsck_ssa_block(f, rel / ZF_BLKS_PER_SEG);

	*type = s ? s->footer.entry_type : 0xff;
	return s ? &s->entries[rel % ZF_BLKS_PER_SEG] : &none;
}

static int load_super(struct fsck *f)
{
	uint8_t blk[ZF_BLKSIZE];
	uint64_t dev_blocks = zlfs_zdev_geom(f->dev)->size / ZF_BLKSIZE;
	char why[200];
	int used = -1;

	for (int b = 0; b < 2; b++) {
		const struct zf_super *sb = (const struct zf_super *)(blk + ZF_SUPER_OFFSET);
		int ret = zlfs_zdev_read(f->dev, blk, ZF_BLKSIZE, (uint64_t)b * ZF_BLKSIZE);
		if (ret)
			snprintf(why, sizeof(why), "cannot read it: %s", zlfs_zdev_strerror(ret));
		if (ret || zf_check_super(sb, dev_blocks, why, sizeof(why))) {
			f->sb_bad[b] = true;
			fsck_problem(f, FIX_META, "superblock copy %d: %s", b + 1, why);
			continue;
		}
		if (used < 0) {
			memcpy(&f->sb, sb, sizeof(*sb));
			used = b;
		} else if (memcmp(&f->sb, sb, offsetof(struct zf_super, crc))) {
			fsck_info(f, "the superblock copies differ (copy 1 is used)");
		}
	}
	if (used < 0) {
		char what[400];
		if (zf_probe_explain(f->spec, what, sizeof(what)))
			fprintf(stderr, "fsck.zlfs: %s %s\n", f->spec, what);
		else
			fprintf(stderr, "fsck.zlfs: %s: no valid superblock\n", f->spec);
		return -EUCLEAN;
	}
	char err[300];
	int ret = zf_check_features(zf_le32_to_cpu(f->sb.feature), err, sizeof(err));
	if (ret) {
		fprintf(stderr, "fsck.zlfs: %s: %s\n", f->spec, err);
		return ret;
	}
	if (zf_layout_from_super(&f->lay, &f->sb, zlfs_zdev_geom(f->dev), err, sizeof(err))) {
		fprintf(stderr, "fsck.zlfs: %s: %s\n", f->spec, err);
		return -EINVAL;
	}
	f->nr_segs = f->lay.segment_count_main;
	f->max_nid = f->lay.max_nid;
	return 0;
}

/* The codec's reads: through the cache; it writes nothing here. */
static int io_read(void *ctx, uint64_t blkaddr, void *buf)
{
	return fsck_read_block(ctx, blkaddr, buf);
}

static int load_cp(struct fsck *f, struct zf_journal *nat_j, struct zf_journal *sit_j)
{
	size_t bytes = (size_t)(1 + f->lay.cp_payload) * ZF_BLKSIZE;
	void *p[2] = { calloc(1, bytes), calloc(1, bytes) };
	struct zf_cp_io io = { .ctx = f, .read = io_read };
	struct zf_cp_pack_state st[2];

	if (!p[0] || !p[1]) {
		free(p[0]);
		free(p[1]);
		return -ENOMEM;
	}
	/* a pack counts only if zf_check_cp passes it too: repair writes from the older */
	int pack = zf_cp_packs_read(&io, f->lay.segment0_blkaddr, f->lay.cp_payload, &f->sb, p, st);
	if (pack < 0) {
		fprintf(stderr, "fsck.zlfs: %s: no valid checkpoint (pack 1: %s; pack 2: %s)\n",
			f->spec, st[0].why, st[1].why);
		free(p[0]);
		free(p[1]);
		return pack == -ENOMEM ? pack : -EUCLEAN;
	}
	f->cp_pack = pack;
	f->cp_other_ok = !st[!f->cp_pack].err;
	/* a pack that is intact but insane, and newer, is a problem of its own */
	if (st[!f->cp_pack].err && strncmp(st[!f->cp_pack].why, "bad checksum", 12) &&
	    strncmp(st[!f->cp_pack].why, "head and tail", 13))
		fsck_problem(f, FIX_META, "checkpoint pack %d refused: %s", !f->cp_pack + 1,
			     st[!f->cp_pack].why);
	f->cp = p[f->cp_pack];
	free(p[!f->cp_pack]);
	f->cp_ver = st[f->cp_pack].ver;

	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)f->cp;
	f->cp_flags = zf_le32_to_cpu(cp->ckpt_flags);
	f->clean_unmount = f->cp_flags & ZF_CP_UMOUNT_FLAG;
	uint32_t sit_bytes = zf_le32_to_cpu(cp->sit_ver_bitmap_bytesize);
	f->nat_bitmap = f->lay.cp_payload ? (uint8_t *)cp->sit_nat_version_bitmap
					  : (uint8_t *)cp->sit_nat_version_bitmap + sit_bytes;
	f->sit_bitmap = f->lay.cp_payload ? f->cp + ZF_BLKSIZE : (uint8_t *)cp->sit_nat_version_bitmap;
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		bool node = zf_log_is_node((unsigned int)i);
		int k = node ? i - ZF_LOG_HOT_NODE : i;
		f->cur_seg[i] = zf_le32_to_cpu(node ? cp->cur_node_segno[k] : cp->cur_data_segno[k]);
		f->cur_off[i] = zf_le16_to_cpu(node ? cp->cur_node_blkoff[k] : cp->cur_data_blkoff[k]);
		f->sums[i].footer.entry_type = node ? ZF_SUM_TYPE_NODE : ZF_SUM_TYPE_DATA;
	}

	uint64_t start = zf_cp_pack_addr(f->lay.segment0_blkaddr, f->cp_pack);
	uint32_t data_off[ZF_NR_DATA_LOGS];
	struct zf_summary_block *sums[ZF_NR_LOGS];
	uint8_t blk[ZF_BLKSIZE];
	int ret;
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		sums[i] = &f->sums[i];
		if (!zf_log_is_node((unsigned int)i))
			data_off[i - ZF_LOG_HOT_DATA] = f->cur_off[i];
	}
	if ((ret = zf_cp_pack_read_sums(&io, start, cp, data_off, sums, nat_j, sit_j)))
		return ret;
	/*
	 * nat_bits: the mount trusts their "full" bits to pass NAT blocks by,
	 * the kernel both kinds; load_nat holds them against the blocks.  Stale
	 * ones (another version's stamp) are not a problem: nobody uses them.
	 */
	uint32_t nat_blocks = f->max_nid / ZF_NAT_ENTRY_PER_BLOCK;
	uint32_t nbb = zf_nat_bits_blocks(nat_blocks);
	if (f->cp_flags & ZF_CP_NAT_BITS_FLAG) {
		if (!(f->nat_bits = calloc(nbb, ZF_BLKSIZE)))
			return -ENOMEM;
		if ((ret = zf_cp_pack_read_nat_bits(&io, start, cp, nbb, f->nat_bits)) < 0)
			return ret;
		if (!ret) {
			free(f->nat_bits);
			f->nat_bits = NULL;
		}
		f->nat_bits_bytes = zf_nat_bits_bytes(nat_blocks);
	}

	/* orphans: blocks 1 + payload .. start_sum - 1 of the pack */
	if (f->cp_flags & ZF_CP_ORPHAN_PRESENT_FLAG) {
		uint32_t first = ZF_CP_PACK_HEAD_BLOCKS + f->lay.cp_payload;
		uint32_t nblk = zf_cp_pack_orphan_blocks(cp, f->lay.cp_payload);
		f->orphans = calloc((size_t)nblk * ZF_ORPHANS_PER_BLOCK + 1, sizeof(uint32_t));
		if (!f->orphans)
			return -ENOMEM;
		for (uint32_t b = 0; b < nblk; b++) {
			const struct zf_orphan_block *ob = (const struct zf_orphan_block *)blk;
			if ((ret = fsck_read_block(f, start + first + b, blk)))
				return ret;
			uint32_t cnt;
			if (zf_cp_orphan_count(ob, &cnt)) {
				fsck_problem(f, FIX_META, "orphan block %u: %u entries", b, cnt);
				cnt = 0;
			}
			for (uint32_t i = 0; i < cnt; i++)
				f->orphans[f->nr_orphans++] = zf_le32_to_cpu(ob->ino[i]);
		}
	}
	return 0;
}

/* NAT block b against its nat_bits: full when every entry has an address (nid 0 counts). */
static void check_nat_bits(struct fsck *f, uint32_t b, const struct zf_nat_block *nb)
{
	uint32_t used = zf_nat_block_used(nb, b);

	if (b >= f->nat_bits_bytes * 8)
		return;
	bool says_full = zf_nat_bits_test(f->nat_bits, f->nat_bits_bytes, false, b);
	bool says_empty = zf_nat_bits_test(f->nat_bits, f->nat_bits_bytes, true, b);
	if ((used == ZF_NAT_ENTRY_PER_BLOCK) != says_full || (used == 0) != says_empty)
		fsck_problem(f, FIX_META, "nat_bits: NAT block %u has %u of %u nids in use, but the "
			     "checkpoint's nat_bits say it is %s", b, used, ZF_NAT_ENTRY_PER_BLOCK,
			     says_full ? "full" : says_empty ? "empty" : "neither full nor empty");
}

static int load_nat(struct fsck *f, const struct zf_journal *nat_j)
{
	uint8_t blk[ZF_BLKSIZE];
	uint32_t nblocks = f->max_nid / ZF_NAT_ENTRY_PER_BLOCK;
	int ret;

	f->nat_addr = calloc(f->max_nid, sizeof(uint32_t));
	f->nat_ino = calloc(f->max_nid, sizeof(uint32_t));
	f->nat_ver = calloc(f->max_nid, 1);
	f->nat_from_journal = calloc(f->max_nid / 8 + 1, 1);
	/* a bit per NAT block holding an entry: the nids in use are found in those */
	uint8_t *nat_set = calloc(nblocks / 8 + 1, 1);
	if (!f->nat_addr || !f->nat_ino || !f->nat_ver || !f->nat_from_journal || !nat_set) {
		free(nat_set);
		return -ENOMEM;
	}
	for (uint32_t b = 0; b < nblocks; b++) {
		int copy = zf_msb_test(f->nat_bitmap, b);
		if ((ret = fsck_read_block(f, zf_nat_blkaddr(&f->lay, b * ZF_NAT_ENTRY_PER_BLOCK, copy),
					   blk))) {
			free(nat_set);
			return ret;
		}
		/* as the SIT: all-zero entries (never used) leave their pages untouched */
		const struct zf_nat_block *nb = (const struct zf_nat_block *)blk;
		if (f->nat_bits)
			check_nat_bits(f, b, nb);
		for (uint32_t k = 0; k < ZF_NAT_ENTRY_PER_BLOCK; k++) {
			uint32_t nid = b * ZF_NAT_ENTRY_PER_BLOCK + k;
			if (!nb->entries[k].block_addr && !nb->entries[k].ino && !nb->entries[k].version)
				continue;
			f->nat_addr[nid] = zf_le32_to_cpu(nb->entries[k].block_addr);
			f->nat_ino[nid] = zf_le32_to_cpu(nb->entries[k].ino);
			f->nat_ver[nid] = nb->entries[k].version;
			fsck_bit_set(nat_set, b);
		}
		fsck_progress(f, "NAT", b + 1, nblocks);
	}
	unsigned int n = zf_le16_to_cpu(nat_j->n_nats);
	if (n > ZF_NAT_JOURNAL_ENTRIES) {
		fsck_problem(f, FIX_META, "NAT journal: %u entries (at most %u)", n,
			     ZF_NAT_JOURNAL_ENTRIES);
		n = 0;
	}
	for (unsigned int i = 0; i < n; i++) {
		uint32_t nid = zf_le32_to_cpu(nat_j->nat_j.entries[i].nid);
		if (nid >= f->max_nid) {
			fsck_problem(f, FIX_META, "NAT journal entry %u: nid %u past the NAT", i, nid);
			continue;
		}
		f->nat_addr[nid] = zf_le32_to_cpu(nat_j->nat_j.entries[i].ne.block_addr);
		f->nat_ino[nid] = zf_le32_to_cpu(nat_j->nat_j.entries[i].ne.ino);
		f->nat_ver[nid] = nat_j->nat_j.entries[i].ne.version;
		f->nat_from_journal[nid / 8] |= (uint8_t)(1u << (nid % 8));
		fsck_bit_set(nat_set, nid / ZF_NAT_ENTRY_PER_BLOCK);
	}
	/* the nids in use: what verify.c goes through instead of the whole NAT */
	uint32_t used = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t b = 0; b < nblocks; b++) {
			if (!fsck_bit(nat_set, b))
				continue;
			for (uint32_t k = 0; k < ZF_NAT_ENTRY_PER_BLOCK; k++) {
				uint32_t nid = b * ZF_NAT_ENTRY_PER_BLOCK + k;
				if (nid < ZF_ROOT_INO || !f->nat_addr[nid])
					continue;
				if (pass)
					f->nids[f->nr_nids++] = nid;
				else
					used++;
			}
		}
		if (!pass && !(f->nids = malloc(((size_t)used + 1) * sizeof(uint32_t)))) {
			free(nat_set);
			return -ENOMEM;
		}
	}
	free(nat_set);
	/* reserved nids: the node and meta inodes hold the marker address 1, if anything */
	for (uint32_t nid = 0; nid < ZF_ROOT_INO && nid < f->max_nid; nid++)
		if (f->nat_addr[nid] > 1 || (!nid && f->nat_addr[nid]))
			fsck_problem(f, FIX_META, "NAT: reserved nid %u has block %u", nid,
				     f->nat_addr[nid]);
	return 0;
}

static int load_sit(struct fsck *f, const struct zf_journal *sit_j)
{
	uint8_t blk[ZF_BLKSIZE];
	int ret;

	f->sit = calloc(f->nr_segs, sizeof(*f->sit));
	f->sit_set = calloc(f->nr_segs / 8 + 1, 1);
	f->sit_from_journal = calloc(f->nr_segs, 1);
	if (!f->sit || !f->sit_set || !f->sit_from_journal)
		return -ENOMEM;
	uint32_t nblocks = (f->nr_segs + ZF_SIT_ENTRY_PER_BLOCK - 1) / ZF_SIT_ENTRY_PER_BLOCK;
	for (uint32_t b = 0; b < nblocks; b++) {
		int copy = zf_msb_test(f->sit_bitmap, b);
		if ((ret = fsck_read_block(f, zf_sit_blkaddr(&f->lay, b * ZF_SIT_ENTRY_PER_BLOCK, copy),
					   blk)))
			return ret;
		/*
		 * All-zero entries (free segments: most of a large volume) are
		 * left as calloc made them, their pages never touched (fsck.h).
		 */
		static const struct zf_sit_entry zero;
		const struct zf_sit_block *sb = (const struct zf_sit_block *)blk;
		for (uint32_t k = 0; k < ZF_SIT_ENTRY_PER_BLOCK; k++) {
			uint32_t s = b * ZF_SIT_ENTRY_PER_BLOCK + k;
			if (s < f->nr_segs && memcmp(&sb->entries[k], &zero, sizeof(zero))) {
				f->sit[s] = sb->entries[k];
				fsck_bit_set(f->sit_set, s);
			}
		}
	}
	unsigned int n = zf_le16_to_cpu(sit_j->n_sits);
	if (n > ZF_SIT_JOURNAL_ENTRIES) {
		fsck_problem(f, FIX_META, "SIT journal: %u entries (at most %u)", n,
			     ZF_SIT_JOURNAL_ENTRIES);
		n = 0;
	}
	for (unsigned int i = 0; i < n; i++) {
		uint32_t segno = zf_le32_to_cpu(sit_j->sit_j.entries[i].segno);
		if (segno >= f->nr_segs) {
			fsck_problem(f, FIX_META, "SIT journal entry %u: segment %u past the main area",
				     i, segno);
			continue;
		}
		f->sit[segno] = sit_j->sit_j.entries[i].se;
		fsck_bit_set(f->sit_set, segno);
		f->sit_from_journal[segno] = 1;
	}
	return 0;
}

/*
 * The roll-forward chain: nodes fsync wrote after the checkpoint, from the
 * warm node log's position on, each footer carrying this checkpoint's
 * version and the next address.  Recorded so they are not taken for
 * garbage; the next mount replays them.
 */
static void find_chain(struct fsck *f)
{
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)f->cp;
	uint64_t want = f->cp_ver;
	uint32_t crc;
	uint8_t blk[ZF_BLKSIZE];

	memcpy(&crc, f->cp + zf_le32_to_cpu(cp->checksum_offset), sizeof(crc));
	if (f->cp_flags & ZF_CP_CRC_RECOVERY_FLAG)
		want |= (uint64_t)zf_le32_to_cpu(crc) << 32;
	uint32_t addr = f->lay.main_blkaddr + f->cur_seg[ZF_LOG_WARM_NODE] * ZF_BLKS_PER_SEG +
			f->cur_off[ZF_LOG_WARM_NODE];
	/* no chain is longer than the main area; a loop ends it there */
	for (uint64_t n = 0; n < (uint64_t)f->nr_segs * ZF_BLKS_PER_SEG && fsck_is_main(f, addr); n++) {
		const struct zf_node *nd = (const struct zf_node *)blk;
		if (fsck_read_block(f, addr, blk))
			break;
		uint64_t v = zf_le64_to_cpu(nd->footer.cp_ver);
		if ((f->cp_flags & ZF_CP_NOCRC_RECOVERY_FLAG) ? (uint32_t)v != (uint32_t)want : v != want)
			break;
		f->chain_nodes++;
		addr = zf_le32_to_cpu(nd->footer.next_blkaddr);
	}
}

int fsck_load(struct fsck *f)
{
	struct zf_journal nat_j, sit_j;
	int ret;

	memset(&nat_j, 0, sizeof(nat_j));
	memset(&sit_j, 0, sizeof(sit_j));
	if ((ret = load_super(f)) || (ret = load_cp(f, &nat_j, &sit_j)) ||
	    (ret = load_nat(f, &nat_j)) || (ret = load_sit(f, &sit_j)))
		return ret;
	if (!(f->ssa = calloc(f->nr_segs, sizeof(*f->ssa))) ||
	    !(f->ssa_set = calloc(f->nr_segs / 8 + 1, 1)))
		return -ENOMEM;
	if (!f->clean_unmount)
		find_chain(f);
	return 0;
}

void fsck_unload(struct fsck *f)
{
	free(f->cp);
	free(f->nat_bits);
	free(f->orphans);
	free(f->nat_addr);
	free(f->nat_ino);
	free(f->nat_ver);
	free(f->nat_from_journal);
	free(f->sit);
	free(f->sit_set);
	free(f->sit_from_journal);
	for (uint32_t i = 0; f->ssa && f->ssa_set && i < f->nr_segs; i++)
		if (fsck_bit(f->ssa_set, i))
			free(f->ssa[i]);
	free(f->ssa);
	free(f->ssa_set);
	free(f->nids);
	free(f->reach);
	free(f->reach_seg);
	free(f->node_seen);
	free(f->ino);
	free(f->queue);
	free(f->tfix);
	free(f->ssafix);
	free(bounce);
	bounce = NULL;
	for (int i = 0; i < RA_SLOTS; i++) {
		free(ra[i].buf);
		free(ra[i].ok);
		ra[i].buf = ra[i].ok = NULL;
		ra[i].run = UINT64_MAX;
	}
}
