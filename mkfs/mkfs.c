/*
 * mkfs.c - mkfs.zlfs: make a zlfs volume (F2FS on-disk format) on a device.
 *
 *   mkfs.zlfs DEVICE [-c DEVICE]... [-l LABEL] [-o OVERPROVISION%] [-f]
 *
 * DEVICE is any device spec (README "Device specs").  With -c the volume
 * spans several devices end to end, as mkfs.f2fs -c does: the first holds
 * the metadata, the superblock lists every device's path and segment count
 * (F2FS's devs[]), and the mount finds the others there.  The layout is
 * libzlfsfmt's (fs/f2fs/layout.c); this file checks the device, resets the
 * sequential zones and writes the initial volume: both superblocks, both
 * checkpoint packs, SIT, NAT, the SSA blocks of the six logs, and the root
 * directory (inode 3 with a dentry block holding '.' and '..').
 *
 * What the filesystem finds after mkfs (and must keep true):
 *   - Checkpoint pack 1 is the newer one (version v, random and odd); pack 2
 *     is complete and valid with version v - 1 and the same content, so a
 *     torn pack 1 still leaves a mountable volume.  Summaries are "normal"
 *     (3 data + 3 node blocks, no COMPACT_SUM), CP_UMOUNT is set, journals
 *     are empty: every NAT and SIT entry is in the NAT/SIT blocks, copy 0
 *     (all version-bitmap bits clear).
 *   - The six logs sit at offset 0 of the first six main sections, node logs
 *     first (hot, warm, cold node, hot, warm, cold data).  Only the logs in
 *     the active-log mask (CP alloc_type[ZF_CP_LOGMASK_SLOT]) may be written;
 *     the root inode and its dentry block went to the effective logs for a
 *     directory inode (HOT_NODE) and a dentry block (HOT_DATA).
 *   - free_segment_count counts every main segment without valid blocks
 *     except the six logs, including segments past the zone capacity on an
 *     image (fsck.f2fs has no zone information there), excluding them on a
 *     zoned block device (fsck.f2fs reads its zones and leaves them out).  Usable-space figures (user_block_count, overprovision)
 *     count usable segments only.
 *   - Every sequential zone is empty except the zones of the logs mkfs
 *     wrote, which are closed; nothing is left open.
 *
 * Write order: the old superblocks are wiped first, so a failed mkfs never
 * leaves a superblock pointing at half-written metadata; the new ones are
 * written last, after a flush.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zlfs/f2fs_format.h"
#include "zlfs/f2fs_layout.h"
#include "zlfs/f2fs_cp_pack.h"
#include "zlfs/f2fs_feature.h"
#include "zlfs/probe.h"
#include "zlfs/zdev.h"

#ifndef ZLFS_VERSION
#define ZLFS_VERSION "unknown"
#endif

#define ZERO_CHUNK (1024 * 1024)
#define PROGRESS_MIN_ZONES 256

struct mkfs {
	const char *spec;
	const char *specs[ZF_MAX_DEVICES];  /* spec, then the -c devices */
	int nspecs;
	struct zlfs_zdev *dev;
	const struct zlfs_zdev_geom *g;
	struct zf_layout l;
	struct zf_ovp o;
	unsigned int log_mask;
	uint32_t segno[ZF_NR_LOGS];     /* each log's current segment */
	uint16_t blkoff[ZF_NR_LOGS];    /* blocks mkfs wrote into it */
	struct zf_summary sum[ZF_NR_LOGS][2];   /* entries of those blocks */
	uint64_t cp_ver;
	uint8_t uuid[16];
	zf_le16 label[ZF_MAX_VOLUME_NAME];
	const char *label_str;
	uint32_t root_blkaddr, dent_blkaddr;
	uint32_t feat;                  /* -O: F2FS features (blkzoned added from the device) */
	time_t now;
	void *blk;                      /* one aligned scratch block */
	void *zeros;                    /* ZERO_CHUNK aligned zeros */
};

/*
 * The default features: checksums on the inodes and the superblock (a torn
 * or damaged inode is then caught by its checksum, which no structural
 * check can do for the bytes that hold data or names), the extra
 * attributes they need, and the creation time.  The kernel's f2fs mounts
 * such volumes; mkfs.f2fs turns on the same with -O extra_attr,
 * inode_checksum,sb_checksum,inode_crtime.
 */
#define MKFS_DEFAULT_FEATURES "extra_attr,inode_checksum,sb_checksum,inode_crtime"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mkfs.zlfs DEVICE [-c DEVICE]... [-l LABEL] [-o OVERPROVISION%%] [-O FEATURES]\n"
		"                 [-f]\n"
		"Make a zlfs volume (F2FS on-disk format) on DEVICE.\n"
		"  DEVICE  a device spec: /dev/..., an image made by zlfs-zdev create, mem:OPTS\n"
		"  -c DEVICE\n"
		"          a further device the volume spans (up to %d in all), after the first:\n"
		"          the first holds the metadata (a device with conventional zones or\n"
		"          none), then zoned ones, e.g. a ZNS namespace\n"
		"  -l, --label LABEL\n"
		"          volume label (up to %d UTF-16 code units)\n"
		"  -o, --overprovision PERCENT\n"
		"          overprovision ratio in percent (default: only what GC needs)\n"
		"  -O, --features LIST\n"
		"          F2FS features, comma-separated, mkfs.f2fs's names: extra_attr,\n"
		"          inode_checksum, sb_checksum, flexible_inline_xattr, inode_crtime,\n"
		"          project_quota, compression; ^NAME turns one off (default: %s)\n"
		"  -f, --force\n"
		"          overwrite whatever DEVICE holds (a filesystem, a partition table,\n"
		"          a RAID/LVM member); without it mkfs.zlfs refuses and says what it found\n"
		"  -h, --help     this text\n"
		"  -V, --version  the version\n"
		"See mkfs.zlfs(8).\n",
		ZF_MAX_DEVICES, ZF_MAX_VOLUME_NAME - 1, MKFS_DEFAULT_FEATURES);
}

__attribute__((format(printf, 1, 2)))
static int err_msg(const char *fmt, ...)
{
	va_list ap;

	fputs("mkfs.zlfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

/* ---- device I/O ------------------------------------------------------------ */

static int write_blk(struct mkfs *m, const void *buf, uint32_t blkaddr)
{
	int ret = zlfs_zdev_write(m->dev, buf, ZF_BLKSIZE, (uint64_t)blkaddr * ZF_BLKSIZE);

	if (ret)
		err_msg("write of block %u failed: %s", blkaddr, zlfs_zdev_strerror(ret));
	return ret;
}

static int zero_range(struct mkfs *m, uint32_t blkaddr, uint32_t nblocks)
{
	uint64_t off = (uint64_t)blkaddr * ZF_BLKSIZE, left = (uint64_t)nblocks * ZF_BLKSIZE;

	while (left) {
		uint64_t n = left < ZERO_CHUNK ? left : ZERO_CHUNK;
		int ret = zlfs_zdev_write(m->dev, m->zeros, n, off);
		if (ret)
			return err_msg("zeroing at byte %llu failed: %s", (unsigned long long)off,
				       zlfs_zdev_strerror(ret));
		off += n;
		left -= n;
	}
	return 0;
}

static int flush_dev(struct mkfs *m)
{
	int ret = zlfs_zdev_flush(m->dev);

	if (ret)
		err_msg("flush failed: %s", zlfs_zdev_strerror(ret));
	return ret;
}

/* ---- sizes ------------------------------------------------------------------- */

/*
 * The smallest useful volume: beyond what GC reserves and overprovisions,
 * room for MIN_DATA_SECS sections of data, so a file system that mounts can
 * also hold files.  (mkfs.f2fs's own floor is lower, but a volume whose
 * "data" rounds to nothing is a trap, not a filesystem.)
 */
#define MIN_DATA_SECS 4

/*
 * Everything that decides whether a geometry can hold a volume: the layout,
 * the logs the zone limits allow, the reserve and overprovision, and the
 * data floor above.  Returns 0, -ENOSPC for "too small" (why says so), or
 * another negative errno for a geometry zlfs can't use at any size.
 */
static int size_check(const struct zlfs_zdev_geom *g, double ratio, struct zf_layout *l,
		      struct zf_ovp *o, unsigned int *mask, char *why, size_t whylen)
{
	int ret = zf_layout_compute(l, g, why, whylen);

	if (ret)
		return ret;
	*mask = l->zoned ? zf_log_mask_for_limits(g->max_open, g->max_active) : ZF_LOGMASK_ALL;
	if (!*mask) {
		snprintf(why, whylen, "the device allows %u open and %u active zones; zlfs needs "
			 "at least 2 (a node log and a data log)", g->max_open, g->max_active);
		return -EINVAL;
	}
	ret = zf_layout_ovp(l, (unsigned int)__builtin_popcount(*mask), ratio, o, why, whylen);
	if (ret)
		return ret;
	uint64_t floor = (uint64_t)MIN_DATA_SECS * l->usable_segs_per_sec * ZF_BLKS_PER_SEG;
	if (o->user_block_count < floor) {
		snprintf(why, whylen, "device too small: %.1f MiB left for data, less than %d "
			 "sections (%.0f MiB)", (double)o->user_block_count * ZF_BLKSIZE / (1 << 20),
			 MIN_DATA_SECS, (double)floor * ZF_BLKSIZE / (1 << 20));
		return -ENOSPC;
	}
	return 0;
}

/*
 * The smallest device of geometry g (its zone size, capacity, limits and
 * conventional zones; all zones conventional on a device without zones)
 * that size_check accepts, in bytes; 0 if none up to 64 Ki zones.
 */
static uint64_t min_size(const struct zlfs_zdev_geom *g, double ratio)
{
	struct zf_layout l;
	struct zf_ovp o;
	unsigned int mask;
	char why[256];

	for (uint32_t n = 2; n <= 65536; n++) {
		struct zlfs_zdev_geom t = *g;
		t.nr_zones = n;
		t.size = (uint64_t)n * g->zone_size;
		t.nr_conv = g->zoned ? (g->nr_conv < n ? g->nr_conv : n) : n;
		if (!size_check(&t, ratio, &l, &o, &mask, why, sizeof(why)))
			return t.size;
	}
	return 0;
}

static void fmt_size(char *buf, size_t len, uint64_t bytes)
{
	if (bytes >= (1ull << 30) && !(bytes % (1ull << 30)))
		snprintf(buf, len, "%llu GiB", (unsigned long long)(bytes >> 30));
	else
		snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes >> 20));
}

/*
 * "at least 448 MiB with 64 MiB zones and 6 logs (4 conventional); with 16
 * MiB zones 160 MiB": the fix for a too-small device, from the real layout.
 */
static void min_size_hint(const struct zlfs_zdev_geom *g, double ratio, char *buf, size_t len)
{
	uint64_t need = min_size(g, ratio);
	unsigned int mask = g->zoned ? zf_log_mask_for_limits(g->max_open, g->max_active)
				     : ZF_LOGMASK_ALL;
	char a[32], z[32];
	size_t n;

	buf[0] = 0;
	if (!need)
		return;
	fmt_size(a, sizeof(a), need);
	fmt_size(z, sizeof(z), g->zone_size);
	n = (size_t)snprintf(buf, len, "; it needs at least %s with %s zones and %d logs", a, z,
			     __builtin_popcount(mask));
	if (g->zoned && n < len)
		n += (size_t)snprintf(buf + n, len - n, " (%u conventional)", g->nr_conv);
	/* a smaller zone size makes a smaller minimum: name one */
	uint64_t alt = g->zone_size > (16u << 20) ? (16u << 20) : 0;
	if (alt && n < len) {
		struct zlfs_zdev_geom t = *g;
		t.zone_size = alt;
		t.zone_cap = g->zone_cap < alt ? g->zone_cap : alt;
		uint64_t need2 = min_size(&t, ratio);
		if (need2) {
			fmt_size(a, sizeof(a), need2);
			snprintf(buf + n, len - n, "; with 16 MiB zones %s", a);
		}
	}
}

/* ---- checks ------------------------------------------------------------------- */

/* An F2FS superblock in block 0 or 1 means a filesystem lives here. */
static int has_superblock(struct mkfs *m, bool *found)
{
	for (int b = 0; b < 2; b++) {
		const struct zf_super *sb = (const void *)((uint8_t *)m->blk + ZF_SUPER_OFFSET);
		int ret = zlfs_zdev_read(m->dev, m->blk, ZF_BLKSIZE, (uint64_t)b * ZF_BLKSIZE);
		if (ret)
			return err_msg("%s: cannot read block %d: %s", m->spec, b,
				       zlfs_zdev_strerror(ret));
		if (zf_le32_to_cpu(sb->magic) == ZF_SUPER_MAGIC) {
			*found = true;
			return 0;
		}
	}
	*found = false;
	return 0;
}

/*
 * Look at every zone: conventional zones first, then sequential zones of
 * one capacity, none offline or read-only.  Counts the zones needing a reset.
 */
static int check_zones(struct mkfs *m, struct zlfs_zone *zones, uint32_t *to_reset)
{
	const struct zlfs_zdev_geom *g = m->g;

	*to_reset = 0;
	for (uint32_t first = 0; first < g->nr_zones;) {
		uint32_t n = g->nr_zones - first;
		int ret = zlfs_zdev_report(m->dev, first, zones + first, &n);
		if (ret || !n)
			return err_msg("%s: zone report failed: %s", m->spec,
				       zlfs_zdev_strerror(ret ? ret : -EIO));
		first += n;
	}
	for (uint32_t i = 0; i < g->nr_zones; i++) {
		const struct zlfs_zone *z = &zones[i];
		bool conv = z->type == ZLFS_ZONE_CONV;

		if (conv != (i < g->nr_conv))
			return err_msg("%s: zone %u is %s; zlfs needs the conventional zones "
				       "first", m->spec, i, conv ? "conventional" : "sequential");
		if (z->cond == ZLFS_ZC_OFFLINE || z->cond == ZLFS_ZC_RDONLY)
			return err_msg("%s: zone %u is %s", m->spec, i, zlfs_zone_cond_str(z->cond));
		if (conv)
			continue;
		if (z->cap != g->zone_cap)
			return err_msg("%s: zone %u has capacity %llu, others %llu: zlfs needs one "
				       "zone capacity", m->spec, i, (unsigned long long)z->cap,
				       (unsigned long long)g->zone_cap);
		if (z->cond != ZLFS_ZC_EMPTY)
			(*to_reset)++;
	}
	return 0;
}

static int reset_zones(struct mkfs *m, const struct zlfs_zone *zones, uint32_t to_reset)
{
	bool progress = to_reset >= PROGRESS_MIN_ZONES;
	bool tty = isatty(STDOUT_FILENO);
	uint32_t done = 0, shown = 101;

	for (uint32_t i = m->g->nr_conv; i < m->g->nr_zones; i++) {
		int ret;
		if (zones[i].cond == ZLFS_ZC_EMPTY)
			continue;
		ret = zlfs_zdev_zone_mgmt(m->dev, ZLFS_ZM_RESET, i);
		if (ret)
			return err_msg("%s: reset of zone %u failed: %s", m->spec, i,
				       zlfs_zdev_strerror(ret));
		done++;
		if (progress && tty && done * 100 / to_reset != shown) {
			shown = done * 100 / to_reset;
			printf("\rresetting %u zones: %3u%%", to_reset, shown);
			fflush(stdout);
		}
	}
	if (progress)
		printf("%sreset %u zones\n", tty ? "\r" : "", to_reset);
	return 0;
}

/* ---- building blocks --------------------------------------------------------------- */

/* Allocate the next block of a log (as its effective log for this mask). */
static uint32_t log_alloc(struct mkfs *m, unsigned int log, uint32_t nid, uint16_t ofs_in_node)
{
	unsigned int eff = zf_log_effective(m->log_mask, log);
	uint16_t off = m->blkoff[eff]++;

	m->sum[eff][off].nid = zf_cpu_to_le32(nid);
	m->sum[eff][off].version = 0;
	m->sum[eff][off].ofs_in_node = zf_cpu_to_le16(ofs_in_node);
	return zf_seg_blkaddr(&m->l, m->segno[eff]) + off;
}

static void fill_dentry_block(struct zf_dentry_block *d)
{
	static const char *const names[2] = { ".", ".." };

	memset(d, 0, sizeof(*d));
	for (unsigned int i = 0; i < 2; i++) {
		size_t len = strlen(names[i]);
		d->dentry[i].hash_code = zf_cpu_to_le32(zf_dentry_hash((const uint8_t *)names[i], len));
		d->dentry[i].ino = zf_cpu_to_le32(ZF_ROOT_INO);
		d->dentry[i].name_len = zf_cpu_to_le16((uint16_t)len);
		d->dentry[i].file_type = ZF_FT_DIR;
		memcpy(d->filename[i], names[i], len);
		zf_le_bit_set(d->bitmap, i);
	}
}

static void fill_root_inode(struct mkfs *m, struct zf_node *n)
{
	struct zf_inode *ri = &n->i;

	memset(n, 0, sizeof(*n));
	ri->i_mode = zf_cpu_to_le16(040755);
	ri->i_uid = zf_cpu_to_le32((uint32_t)getuid());
	ri->i_gid = zf_cpu_to_le32((uint32_t)getgid());
	ri->i_links = zf_cpu_to_le32(2);
	ri->i_size = zf_cpu_to_le64(ZF_BLKSIZE);
	ri->i_blocks = zf_cpu_to_le64(2);           /* the inode and one dentry block */
	ri->i_atime = ri->i_ctime = ri->i_mtime = zf_cpu_to_le64((uint64_t)m->now);
	ri->i_current_depth = zf_cpu_to_le32(1);
	ri->i_pino = zf_cpu_to_le32(ZF_ROOT_INO);   /* the root is its own parent */
	if (m->feat & ZF_FEAT_EXTRA_ATTR) {   /* as the kernel makes inodes: the whole area */
		ri->i_inline = ZF_EXTRA_ATTR;
		ri->i_extra_isize = zf_cpu_to_le16(ZF_EXTRA_ATTR_SIZE);
		if (m->feat & ZF_FEAT_INODE_CRTIME)
			ri->i_crtime = ri->i_mtime;
	}
	ri->i_addr[zf_extra_isize_words(ri)] = zf_cpu_to_le32(m->dent_blkaddr);
	/* Written under checkpoint v, not part of any fsync chain. */
	zf_node_set_footer(n, ZF_ROOT_INO, ZF_ROOT_INO, 0, m->cp_ver, m->root_blkaddr + 1);
	zf_inode_set_csum(n, m->feat, zf_csum_seed(m->uuid));
}

/* SIT and NAT copy 0 zeroed, then the entries mkfs made. */
static int write_sit_nat(struct mkfs *m)
{
	const struct zf_layout *l = &m->l;
	struct zf_nat_block *nat = m->blk;
	int ret;

	if ((ret = zero_range(m, l->sit_blkaddr, l->sit_blocks)))
		return ret;
	for (uint32_t s = 0; s < l->segment_count_nat / 2; s++)
		if ((ret = zero_range(m, zf_nat_blkaddr(l, s * ZF_BLKS_PER_SEG *
							ZF_NAT_ENTRY_PER_BLOCK, 0),
				      ZF_BLKS_PER_SEG)))
			return ret;

	/*
	 * The node and meta inodes are not nodes but own their nids; blkaddr 1
	 * marks them in use, as mkfs.f2fs and fsck.f2fs expect.
	 */
	memset(nat, 0, sizeof(*nat));
	nat->entries[ZF_NODE_INO].ino = zf_cpu_to_le32(ZF_NODE_INO);
	nat->entries[ZF_NODE_INO].block_addr = zf_cpu_to_le32(1);
	nat->entries[ZF_META_INO].ino = zf_cpu_to_le32(ZF_META_INO);
	nat->entries[ZF_META_INO].block_addr = zf_cpu_to_le32(1);
	nat->entries[ZF_ROOT_INO].ino = zf_cpu_to_le32(ZF_ROOT_INO);
	nat->entries[ZF_ROOT_INO].block_addr = zf_cpu_to_le32(m->root_blkaddr);
	if ((ret = write_blk(m, nat, zf_nat_blkaddr(l, ZF_ROOT_INO, 0))))
		return ret;

	/* Every log's segment carries its type, written blocks or not. */
	for (unsigned int log = 0; log < ZF_NR_LOGS; log++) {
		struct zf_sit_block *sit = m->blk;
		uint32_t blk = zf_sit_blkaddr(l, m->segno[log], 0);

		if ((ret = zlfs_zdev_read(m->dev, sit, ZF_BLKSIZE, (uint64_t)blk * ZF_BLKSIZE)))
			return err_msg("read of SIT block %u failed: %s", blk,
				       zlfs_zdev_strerror(ret));
		struct zf_sit_entry *e = &sit->entries[m->segno[log] % ZF_SIT_ENTRY_PER_BLOCK];
		zf_sit_set(e, log, m->blkoff[log]);
		for (unsigned int b = 0; b < m->blkoff[log]; b++)
			zf_msb_set(e->valid_map, b);
		if ((ret = write_blk(m, sit, blk)))
			return ret;
	}
	return 0;
}

static void fill_summary(struct mkfs *m, struct zf_summary_block *s, unsigned int log)
{
	memset(s, 0, sizeof(*s));
	for (unsigned int b = 0; b < m->blkoff[log]; b++)
		s->entries[b] = m->sum[log][b];
	s->footer.entry_type = zf_log_is_node(log) ? ZF_SUM_TYPE_NODE : ZF_SUM_TYPE_DATA;
}

/* The logs' summaries also go to the SSA, so GC never reads stale ones. */
static int write_ssa(struct mkfs *m)
{
	for (unsigned int log = 0; log < ZF_NR_LOGS; log++) {
		int ret;
		fill_summary(m, m->blk, log);
		if ((ret = write_blk(m, m->blk, zf_ssa_blkaddr(&m->l, m->segno[log]))))
			return ret;
	}
	return 0;
}

static void fill_checkpoint(struct mkfs *m, struct zf_checkpoint *cp, uint64_t ver)
{
	const struct zf_layout *l = &m->l;
	uint32_t total = 1 + l->cp_payload + ZF_NR_DATA_LOGS + ZF_NR_NODE_LOGS + 1;

	memset(cp, 0, ZF_BLKSIZE);
	cp->checkpoint_ver = zf_cpu_to_le64(ver);
	cp->user_block_count = zf_cpu_to_le64(m->o.user_block_count);
	cp->valid_block_count = zf_cpu_to_le64(2);
	cp->rsvd_segment_count = zf_cpu_to_le32(m->o.reserved_segs);
	cp->overprov_segment_count = zf_cpu_to_le32(m->o.ovp_segs);
	cp->free_segment_count = zf_cpu_to_le32((l->zones_visible ? l->usable_main_segs :
						  l->segment_count_main) - ZF_NR_LOGS);
	for (unsigned int i = 0; i < ZF_CP_MAX_NODE_LOGS; i++) {
		cp->cur_node_segno[i] = zf_cpu_to_le32(ZF_CP_UNUSED_SEGNO);
		cp->cur_data_segno[i] = zf_cpu_to_le32(ZF_CP_UNUSED_SEGNO);
	}
	for (unsigned int i = 0; i < ZF_NR_NODE_LOGS; i++) {
		cp->cur_node_segno[i] = zf_cpu_to_le32(m->segno[ZF_LOG_HOT_NODE + i]);
		cp->cur_node_blkoff[i] = zf_cpu_to_le16(m->blkoff[ZF_LOG_HOT_NODE + i]);
		cp->cur_data_segno[i] = zf_cpu_to_le32(m->segno[ZF_LOG_HOT_DATA + i]);
		cp->cur_data_blkoff[i] = zf_cpu_to_le16(m->blkoff[ZF_LOG_HOT_DATA + i]);
	}
	/* nat_bits behind the pack when they fit (write_cp_pack), as mkfs.f2fs */
	uint32_t nb = zf_nat_bits_blocks(l->max_nid / ZF_NAT_ENTRY_PER_BLOCK);
	cp->ckpt_flags = zf_cpu_to_le32(ZF_CP_UMOUNT_FLAG |
					(zf_nat_bits_fit(total, l->cp_payload, nb) ?
					 ZF_CP_NAT_BITS_FLAG : 0));
	cp->cp_pack_total_block_count = zf_cpu_to_le32(total);
	cp->cp_pack_start_sum = zf_cpu_to_le32(1 + l->cp_payload);
	cp->valid_node_count = zf_cpu_to_le32(1);
	cp->valid_inode_count = zf_cpu_to_le32(1);
	cp->next_free_nid = zf_cpu_to_le32(ZF_FIRST_FREE_NID);
	cp->sit_ver_bitmap_bytesize = zf_cpu_to_le32(l->sit_bitmap_bytes);
	cp->nat_ver_bitmap_bytesize = zf_cpu_to_le32(l->nat_bitmap_bytes);
	cp->checksum_offset = zf_cpu_to_le32(ZF_CP_CHKSUM_OFFSET);
	for (unsigned int i = 0; i < ZF_NR_LOGS; i++)
		cp->alloc_type[i] = ZF_ALLOC_LFS;
	cp->alloc_type[ZF_CP_LOGMASK_SLOT] = (uint8_t)m->log_mask;
	/* all version bitmap bits clear: copy 0 of every SIT and NAT block */
	zf_cp_set_crc(cp);
}

/*
 * The pack's nat_bits (f2fs_cp_pack.h), in the last blocks of its segment:
 * its stamp, no NAT block full, every one empty but the first (nid 0, the
 * node and meta inodes, the root).
 */
static int write_nat_bits(struct mkfs *m, uint32_t pack_start, const struct zf_checkpoint *cp)
{
	uint32_t nat_blocks = m->l.max_nid / ZF_NAT_ENTRY_PER_BLOCK;
	uint32_t nb = zf_nat_bits_blocks(nat_blocks), bytes = zf_nat_bits_bytes(nat_blocks);
	uint8_t *bits = aligned_alloc(ZF_BLKSIZE, (size_t)nb * ZF_BLKSIZE);
	int ret = 0;

	if (!bits)
		return -ENOMEM;
	memset(bits, 0, (size_t)nb * ZF_BLKSIZE);
	uint64_t check = zf_cpu_to_le64(zf_cp_nat_bits_check(cp));
	memcpy(bits, &check, sizeof(check));
	memset(bits + 8 + bytes, 0xff, bytes);
	zf_nat_bits_put(bits, bytes, 0, ZF_FIRST_FREE_NID);   /* nid 0, node, meta, root */
	for (uint32_t i = 0; i < nb && !ret; i++)
		ret = write_blk(m, bits + (size_t)i * ZF_BLKSIZE, pack_start + ZF_BLKS_PER_SEG - nb + i);
	free(bits);
	return ret;
}

/*
 * One checkpoint pack: head, payload (the SIT bitmap when it does not fit
 * the head; all zeros), 3 data summaries, 3 node summaries, tail; and its
 * nat_bits.
 */
static int write_cp_pack(struct mkfs *m, int pack, uint64_t ver)
{
	uint32_t blk = m->l.segment0_blkaddr + (uint32_t)pack * ZF_BLKS_PER_SEG;
	uint8_t head[ZF_BLKSIZE] __attribute__((aligned(ZF_BLKSIZE)));
	int ret;

	fill_checkpoint(m, (struct zf_checkpoint *)head, ver);
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)head;
	if ((zf_le32_to_cpu(cp->ckpt_flags) & ZF_CP_NAT_BITS_FLAG) &&
	    (ret = write_nat_bits(m, blk, cp)))
		return ret;
	if ((ret = write_blk(m, head, blk++)))
		return ret;
	if (m->l.cp_payload && (ret = zero_range(m, blk, m->l.cp_payload)))
		return ret;
	blk += m->l.cp_payload;
	for (unsigned int log = 0; log < ZF_NR_LOGS; log++) {
		/* data summaries first: enum zf_log already lists them first */
		fill_summary(m, m->blk, log);
		if ((ret = write_blk(m, m->blk, blk++)))
			return ret;
	}
	return write_blk(m, head, blk);
}

/* The bare path of a spec (options after '?' dropped) into out; -1 if too long. */
static int spec_path(const char *spec, char *out, size_t outlen)
{
	size_t n = strcspn(spec, "?");

	if (n >= outlen)
		return -1;
	memcpy(out, spec, n);
	out[n] = 0;
	return 0;
}

/*
 * Multi-device volumes: devs[i] = { path, segments on device i }.  Device
 * 0's segments start at segment0 (the superblock zone is not counted), as
 * mkfs.f2fs and the kernel count them; their sum is segment_count.
 */
static void fill_devs(struct mkfs *m, struct zf_super *sb)
{
	struct zlfs_zdev_member mem[ZF_MAX_DEVICES];
	uint32_t left = m->l.segment_count;

	if (m->nspecs < 2)
		return;
	int n = zlfs_zdev_members(m->dev, mem, ZF_MAX_DEVICES);
	for (int i = 0; i < n; i++) {
		uint64_t bytes = mem[i].size;
		if (i == 0)
			bytes -= (uint64_t)m->l.segment0_blkaddr * ZF_BLKSIZE;
		uint32_t segs = (uint32_t)(bytes / ZF_SEG_BYTES);
		if (i == n - 1 || segs > left)
			segs = left;
		left -= segs;
		spec_path(m->specs[i], (char *)sb->devs[i].path, sizeof(sb->devs[i].path));
		sb->devs[i].total_segments = zf_cpu_to_le32(segs);
	}
}

static void fill_super(struct mkfs *m, struct zf_super *sb)
{
	const struct zf_layout *l = &m->l;
	char ver[ZF_VERSION_LEN];
	unsigned int log_sector = m->g->lbs == 512 ? 9 : ZF_BLKSIZE_BITS;

	memset(sb, 0, sizeof(*sb));
	sb->magic = zf_cpu_to_le32(ZF_SUPER_MAGIC);
	sb->major_ver = zf_cpu_to_le16(ZF_MAJOR_VER);
	sb->minor_ver = zf_cpu_to_le16(ZF_MINOR_VER);
	sb->log_sectorsize = zf_cpu_to_le32(log_sector);
	sb->log_sectors_per_block = zf_cpu_to_le32(ZF_BLKSIZE_BITS - log_sector);
	sb->log_blocksize = zf_cpu_to_le32(ZF_BLKSIZE_BITS);
	sb->log_blocks_per_seg = zf_cpu_to_le32(ZF_LOG_BLKS_PER_SEG);
	sb->segs_per_sec = zf_cpu_to_le32(l->segs_per_sec);
	sb->secs_per_zone = zf_cpu_to_le32(l->secs_per_zone);
	sb->block_count = zf_cpu_to_le64(l->block_count);
	sb->section_count = zf_cpu_to_le32(l->section_count);
	sb->segment_count = zf_cpu_to_le32(l->segment_count);
	sb->segment_count_ckpt = zf_cpu_to_le32(l->segment_count_ckpt);
	sb->segment_count_sit = zf_cpu_to_le32(l->segment_count_sit);
	sb->segment_count_nat = zf_cpu_to_le32(l->segment_count_nat);
	sb->segment_count_ssa = zf_cpu_to_le32(l->segment_count_ssa);
	sb->segment_count_main = zf_cpu_to_le32(l->segment_count_main);
	sb->segment0_blkaddr = zf_cpu_to_le32(l->segment0_blkaddr);
	sb->cp_blkaddr = zf_cpu_to_le32(l->segment0_blkaddr);
	sb->sit_blkaddr = zf_cpu_to_le32(l->sit_blkaddr);
	sb->nat_blkaddr = zf_cpu_to_le32(l->nat_blkaddr);
	sb->ssa_blkaddr = zf_cpu_to_le32(l->ssa_blkaddr);
	sb->main_blkaddr = zf_cpu_to_le32(l->main_blkaddr);
	sb->root_ino = zf_cpu_to_le32(ZF_ROOT_INO);
	sb->node_ino = zf_cpu_to_le32(ZF_NODE_INO);
	sb->meta_ino = zf_cpu_to_le32(ZF_META_INO);
	memcpy(sb->uuid, m->uuid, sizeof(sb->uuid));
	memcpy(sb->volume_name, m->label, sizeof(sb->volume_name));
	sb->cp_payload = zf_cpu_to_le32(l->cp_payload);
	snprintf(ver, sizeof(ver), "zlfs %s (mkfs.zlfs)", ZLFS_VERSION);
	memcpy(sb->version, ver, strlen(ver));
	memcpy(sb->init_version, ver, strlen(ver));
	sb->feature = zf_cpu_to_le32(m->feat | (l->zoned ? ZF_FEAT_BLKZONED : 0));
	fill_devs(m, sb);
	if (m->feat & ZF_FEAT_SB_CHKSUM) {
		sb->checksum_offset = zf_cpu_to_le32(ZF_SB_CHKSUM_OFFSET);
		sb->crc = zf_cpu_to_le32(zf_super_crc(sb));
	}
}

static int write_supers(struct mkfs *m)
{
	int ret;

	memset(m->blk, 0, ZF_BLKSIZE);
	fill_super(m, (struct zf_super *)((uint8_t *)m->blk + ZF_SUPER_OFFSET));
	for (uint32_t b = 0; b < 2; b++)
		if ((ret = write_blk(m, m->blk, b)))
			return ret;
	return 0;
}

/* ---- the sequence ---------------------------------------------------------------------- */

static int format(struct mkfs *m, const struct zlfs_zone *zones, uint32_t to_reset)
{
	struct zf_node *root;
	int ret;

	/* 1. No superblock while the rest is half written. */
	memset(m->blk, 0, ZF_BLKSIZE);
	if ((ret = write_blk(m, m->blk, 0)) || (ret = write_blk(m, m->blk, 1)) ||
	    (ret = flush_dev(m)))
		return ret;
	if ((ret = reset_zones(m, zones, to_reset)))
		return ret;

	/* 2. The root directory, at the heads of its logs' zones (their write pointers). */
	m->dent_blkaddr = log_alloc(m, ZF_LOG_HOT_DATA, ZF_ROOT_INO, 0);
	m->root_blkaddr = log_alloc(m, ZF_LOG_HOT_NODE, ZF_ROOT_INO, 0);
	fill_dentry_block(m->blk);
	if ((ret = write_blk(m, m->blk, m->dent_blkaddr)))
		return ret;
	root = m->blk;
	fill_root_inode(m, root);
	if ((ret = write_blk(m, root, m->root_blkaddr)))
		return ret;
	/*
	 * Without zones, stale blocks from an earlier filesystem could be read
	 * as a roll-forward chain; zero every log's next block.  (Past a
	 * write pointer a zone reads as zeros anyway.)
	 */
	if (!m->l.zoned) {
		memset(m->blk, 0, ZF_BLKSIZE);
		for (unsigned int log = 0; log < ZF_NR_LOGS; log++)
			if ((ret = write_blk(m, m->blk, zf_seg_blkaddr(&m->l, m->segno[log]) +
					     m->blkoff[log])))
				return ret;
	}

	/* 3. Metadata in the conventional zones. */
	if ((ret = write_sit_nat(m)) || (ret = write_ssa(m)))
		return ret;
	if ((ret = write_cp_pack(m, 1, m->cp_ver - 1)) || (ret = write_cp_pack(m, 0, m->cp_ver)))
		return ret;
	if ((ret = flush_dev(m)))
		return ret;

	/* 4. The superblocks make it a filesystem. */
	if ((ret = write_supers(m)) || (ret = flush_dev(m)))
		return ret;

	/* Leave no zone open: the filesystem opens what it writes. */
	if (m->l.zoned) {
		for (unsigned int log = 0; log < ZF_NR_LOGS; log++) {
			uint32_t zone = m->l.main_zone + m->segno[log] / m->l.segs_per_sec;
			if (m->blkoff[log] && (ret = zlfs_zdev_zone_mgmt(m->dev, ZLFS_ZM_CLOSE, zone)))
				return err_msg("%s: close of zone %u failed: %s", m->spec, zone,
					       zlfs_zdev_strerror(ret));
		}
		if ((ret = flush_dev(m)))
			return ret;
	}
	return 0;
}

/*
 * On a volume of several devices the logs start spread over the devices
 * holding main-area sections, round robin (the logs in use first, node
 * logs before data logs), each in the first section its device
 * has left: their writes reach several devices from the first one on,
 * and the mount's allocator keeps them spread (fs/segment.c).  With a
 * device too small for its share, the layout stays as it was.
 */
static void spread_logs(struct mkfs *m)
{
	static const uint8_t order[ZF_NR_LOGS] = {
		ZF_LOG_HOT_NODE, ZF_LOG_WARM_NODE, ZF_LOG_COLD_NODE,
		ZF_LOG_HOT_DATA, ZF_LOG_WARM_DATA, ZF_LOG_COLD_DATA,
	};
	struct zlfs_zdev_member mem[ZF_MAX_DEVICES];
	uint32_t first[ZF_MAX_DEVICES], end[ZF_MAX_DEVICES], segno[ZF_NR_LOGS];
	int n = zlfs_zdev_members(m->dev, mem, ZF_MAX_DEVICES), k = 0;

	if (n < 2 || n > ZF_MAX_DEVICES)
		return;
	for (int i = 0; i < n; i++) {
		uint32_t a = zf_layout_sec_from(&m->l, mem[i].start);
		uint32_t b = zf_layout_sec_from(&m->l, mem[i].start + mem[i].size);
		if (a < b) {
			first[k] = a;
			end[k++] = b;
		}
	}
	if (k < 2)
		return;
	/* the logs in use first (fewer than six under a device's zone limits) */
	uint8_t seq[ZF_NR_LOGS];
	int n_seq = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < ZF_NR_LOGS; i++)
			if ((!(m->log_mask & (1u << order[i]))) == pass)
				seq[n_seq++] = order[i];
	for (int i = 0; i < ZF_NR_LOGS; i++) {
		int d = i % k;
		uint32_t sec = first[d] + (uint32_t)(i / k);
		if (sec >= end[d])
			return;
		segno[seq[i]] = sec * m->l.segs_per_sec;
	}
	memcpy(m->segno, segno, sizeof(segno));
}

/* ---- options ------------------------------------------------------------------------------ */

/* UTF-8 label to UTF-16LE, NUL padded. */
static int set_label(struct mkfs *m, const char *s)
{
	const uint8_t *p = (const uint8_t *)s;
	unsigned int n = 0;

	memset(m->label, 0, sizeof(m->label));
	while (*p) {
		uint32_t cp;
		int more;

		if (*p < 0x80) {
			cp = *p;
			more = 0;
		} else if ((*p & 0xe0) == 0xc0) {
			cp = *p & 0x1f;
			more = 1;
		} else if ((*p & 0xf0) == 0xe0) {
			cp = *p & 0x0f;
			more = 2;
		} else if ((*p & 0xf8) == 0xf0) {
			cp = *p & 0x07;
			more = 3;
		} else {
			return err_msg("-l: the label is not valid UTF-8");
		}
		p++;
		for (int i = 0; i < more; i++, p++) {
			if ((*p & 0xc0) != 0x80)
				return err_msg("-l: the label is not valid UTF-8");
			cp = (cp << 6) | (*p & 0x3f);
		}
		if (cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
			return err_msg("-l: the label is not valid UTF-8");
		if (n + (cp >= 0x10000 ? 2 : 1) > ZF_MAX_VOLUME_NAME - 1)
			return err_msg("-l: the label is too long (at most %d UTF-16 code units)",
				       ZF_MAX_VOLUME_NAME - 1);
		if (cp >= 0x10000) {
			cp -= 0x10000;
			m->label[n++] = zf_cpu_to_le16((uint16_t)(0xd800 | (cp >> 10)));
			m->label[n++] = zf_cpu_to_le16((uint16_t)(0xdc00 | (cp & 0x3ff)));
		} else {
			m->label[n++] = zf_cpu_to_le16((uint16_t)cp);
		}
	}
	m->label_str = s;
	return 0;
}

static int parse_ratio(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || (*end && strcmp(end, "%")) || !(v > 0 && v < 100))
		return err_msg("-o: overprovision '%s' is not a percentage in (0, 100)", s);
	*out = v;
	return 0;
}

/* Random uuid (version 4) and an odd random checkpoint version > 1. */
static int make_ids(struct mkfs *m)
{
	uint32_t r;

	if (getrandom(m->uuid, sizeof(m->uuid), 0) != sizeof(m->uuid) ||
	    getrandom(&r, sizeof(r), 0) != sizeof(r))
		return err_msg("getrandom: %s", strerror(errno));
	m->uuid[6] = (uint8_t)((m->uuid[6] & 0x0f) | 0x40);
	m->uuid[8] = (uint8_t)((m->uuid[8] & 0x3f) | 0x80);
	/*
	 * A fresh random version per mkfs: node blocks left by an earlier
	 * filesystem carry other versions, so roll-forward never takes them.
	 */
	m->cp_ver = ((uint64_t)(r & 0x7fffffff) | 1) + 2;
	return 0;
}

static const char *log_names(unsigned int mask)
{
	static char buf[96];
	static const char *const name[ZF_NR_LOGS] = {
		"hot data", "warm data", "cold data", "hot node", "warm node", "cold node",
	};

	/* node logs first, as they sit on the device */
	static const uint8_t order[ZF_NR_LOGS] = {
		ZF_LOG_HOT_NODE, ZF_LOG_WARM_NODE, ZF_LOG_COLD_NODE,
		ZF_LOG_HOT_DATA, ZF_LOG_WARM_DATA, ZF_LOG_COLD_DATA,
	};

	buf[0] = 0;
	for (unsigned int k = 0; k < ZF_NR_LOGS; k++) {
		unsigned int i = order[k];
		if (!(mask & (1u << i)))
			continue;
		if (buf[0])
			strcat(buf, ", ");
		strcat(buf, name[i]);
	}
	return buf;
}

static void print_summary(struct mkfs *m)
{
	const struct zf_layout *l = &m->l;
	const struct zlfs_zdev_geom *g = m->g;
	unsigned int nlogs = (unsigned int)__builtin_popcount(m->log_mask);

	printf("mkfs.zlfs: %s formatted\n", m->spec);
	printf("  device:        %s, %llu bytes (%.2f GiB), %u-byte sectors\n",
	       zlfs_zdev_kind_str(g->kind), (unsigned long long)g->size,
	       (double)g->size / (1 << 30), g->lbs);
	if (m->nspecs > 1) {
		struct zlfs_zdev_member mem[ZF_MAX_DEVICES];
		int n = zlfs_zdev_members(m->dev, mem, ZF_MAX_DEVICES);
		for (int i = 0; i < n; i++)
			printf("  device %d:      %s, %llu MiB from byte %llu, %u zones (%u conventional)\n",
			       i, m->specs[i], (unsigned long long)(mem[i].size >> 20),
			       (unsigned long long)mem[i].start, zlfs_zdev_geom(mem[i].dev)->nr_zones,
			       zlfs_zdev_geom(mem[i].dev)->nr_conv);
	}
	printf("  zones:         %u x %llu MiB, capacity %llu MiB, %u conventional%s\n",
	       g->nr_zones, (unsigned long long)(g->zone_size >> 20),
	       (unsigned long long)((g->zoned ? g->zone_cap : g->zone_size) >> 20),
	       l->nr_conv, l->zoned ? ", host-managed (blkzoned)" : ", not zoned");
	if (g->max_open || g->max_active)
		printf("  zone limits:   max open %u, max active %u (0 = none)\n",
		       g->max_open, g->max_active);
	printf("  metadata:      CP %u, SIT %u (%u segs), NAT %u (%u segs), SSA %u (%u segs)\n",
	       l->segment0_blkaddr, l->sit_blkaddr, l->segment_count_sit, l->nat_blkaddr,
	       l->segment_count_nat, l->ssa_blkaddr, l->segment_count_ssa);
	printf("  main area:     block %u (zone %u), %u sections of %u segments, "
	       "%u usable segments\n", l->main_blkaddr, l->main_zone, l->section_count,
	       l->segs_per_sec, l->usable_main_segs);
	printf("  logs:          %u (%s)\n", nlogs, log_names(m->log_mask));
	char fl[300];
	zf_feature_list(m->feat | (m->l.zoned ? ZF_FEAT_BLKZONED : 0), fl, sizeof(fl));
	printf("  features:      %s\n", fl[0] ? fl : "none");
	printf("  overprovision: %.2f%% (%u segments, %u reserved for GC), %.2f GiB for data\n",
	       m->o.ratio, m->o.ovp_segs, m->o.reserved_segs,
	       (double)m->o.user_block_count * ZF_BLKSIZE / (1 << 30));
	if (m->label_str)
		printf("  label:         %s\n", m->label_str);
}

/*
 * A device that would not open.  The path and the errno are said once (the
 * device layer's message may already hold either).  A plain file smaller
 * than a zone gets the size it needs, as a too-small device does.
 */
static void open_error(const struct mkfs *m, int err, double ratio)
{
	const char *msg = zlfs_zdev_errmsg();
	char path[4096], hint[256] = "";
	struct stat st;

	spec_path(m->spec, path, sizeof(path));
	if (err == -EINVAL && m->nspecs == 1 && !strchr(m->spec, '?') &&
	    strncmp(m->spec, "mem:", 4) && !stat(path, &st) && S_ISREG(st.st_mode) &&
	    st.st_size < (2 << 20)) {
		char zst[4200];
		snprintf(zst, sizeof(zst), "%s.zst", path);
		if (access(zst, F_OK)) {
			/* a plain file: 2 MiB zones, all conventional (fs/blk/zemu.c) */
			struct zlfs_zdev_geom g = { .zone_size = 2 << 20, .zone_cap = 2 << 20,
						    .lbs = 4096, .kind = ZLFS_DEV_IMAGE };
			min_size_hint(&g, ratio, hint, sizeof(hint));
			err_msg("%s: device too small: %lld bytes, less than one 2 MiB zone%s",
				path, (long long)st.st_size, hint);
			return;
		}
	}
	if (!msg || !*msg)
		err_msg("%s: %s", m->spec, strerror(-err));
	else if (strstr(msg, path) || strstr(msg, m->spec))
		err_msg("%s", msg);
	else
		err_msg("%s: %s", m->spec, msg);
}

/* What -O asked for: features zlfs writes, with what they need. */
static int check_features(uint32_t feat)
{
	char why[300];

	if (feat & ZF_FEAT_BLKZONED)
		return err_msg("-O blkzoned: set from the device (a zoned device has it), not by -O");
	if (feat & ZF_FEAT_LOST_FOUND)
		return err_msg("-O lost_found: mkfs.zlfs makes no /lost+found (fsck.zlfs makes it "
			       "when it has something to put there); zlfs mounts volumes that have it");
	if (zf_check_features(feat, why, sizeof(why)))
		return err_msg("-O: %s", strstr(why, "zlfs does not support") ?
			       why + strlen("the filesystem uses ") : why);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "label", required_argument, NULL, 'l' },
		{ "overprovision", required_argument, NULL, 'o' },
		{ "features", required_argument, NULL, 'O' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct mkfs m = { 0 };
	struct zlfs_zone *zones = NULL;
	double ratio = 0;
	bool force = false, found;
	uint32_t to_reset;
	char why[256];
	int c, rc = 1;

	if (zf_parse_features(MKFS_DEFAULT_FEATURES, &m.feat, why, sizeof(why)))
		return 1;
	while ((c = getopt_long(argc, argv, "c:l:o:O:fhV", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (m.nspecs + 1 >= ZF_MAX_DEVICES) {
				err_msg("-c: at most %d devices in all", ZF_MAX_DEVICES);
				return 1;
			}
			m.specs[1 + m.nspecs++] = optarg;
			break;
		case 'l':
			if (set_label(&m, optarg))
				return 1;
			break;
		case 'o':
			if (parse_ratio(optarg, &ratio))
				return 1;
			break;
		case 'O':
			if (zf_parse_features(optarg, &m.feat, why, sizeof(why))) {
				err_msg("-O %s: %s", optarg, why);
				return 1;
			}
			break;
		case 'f':
			force = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("mkfs.zlfs %s\n", ZLFS_VERSION);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind != argc - 1) {
		if (optind == argc)
			err_msg("no DEVICE given (see mkfs.zlfs --help)");
		else
			err_msg("one DEVICE expected, not %d (the others take -c; see mkfs.zlfs --help)",
				argc - optind);
		return 1;
	}
	if (check_features(m.feat))
		return 1;
	m.spec = argv[optind];
	m.specs[0] = m.spec;
	m.nspecs++;
	m.now = time(NULL);
	/* the mount finds devices 1.. by their recorded paths: make those absolute
	 * (device 0 is whatever the mount is given; fsck.f2fs wants it as made) */
	static char abs_specs[ZF_MAX_DEVICES][4096];
	for (int i = 1; i < m.nspecs; i++) {
		char cwd[2048];
		if (m.specs[i][0] == '/' || !strncmp(m.specs[i], "mem:", 4))
			continue;
		if (!getcwd(cwd, sizeof(cwd))) {
			err_msg("cannot find the current directory: %s", strerror(errno));
			return 1;
		}
		snprintf(abs_specs[i], sizeof(abs_specs[i]), "%s/%s", cwd, m.specs[i]);
		m.specs[i] = abs_specs[i];
	}
	for (int i = 0; m.nspecs > 1 && i < m.nspecs; i++) {
		char p[ZF_DEVICE_PATH_LEN];
		if (!strncmp(m.specs[i], "mem:", 4)) {
			err_msg("%s: a volume of several devices records their paths: mem: "
				"devices can't be part of one", m.specs[i]);
			return 1;
		}
		if (spec_path(m.specs[i], p, sizeof(p))) {
			err_msg("%s: the superblock holds device paths of at most %d bytes",
				m.specs[i], ZF_DEVICE_PATH_LEN - 1);
			return 1;
		}
	}

	/* Detect before destroying: nothing is opened for writing until every
	 * member has been probed (read-only) and found empty, or -f given. */
	for (int i = 0; !force && i < m.nspecs; i++) {
		char what[512];
		int r = zf_probe_spec(m.specs[i], what, sizeof(what));
		if (r < 0) {
			err_msg("%s: cannot check what it holds: %s", m.specs[i], strerror(-r));
			return 1;
		}
		if (r > 0) {
			char p[4096];
			spec_path(m.specs[i], p, sizeof(p));
			err_msg("%s contains %s (use -f to overwrite it)", p, what);
			return 1;
		}
	}

	if (posix_memalign(&m.blk, ZF_BLKSIZE, ZF_BLKSIZE) ||
	    posix_memalign(&m.zeros, ZF_BLKSIZE, ZERO_CHUNK)) {
		err_msg("out of memory");
		goto out;
	}
	memset(m.zeros, 0, ZERO_CHUNK);

	if ((c = zlfs_zdev_open_multi(m.specs, m.nspecs, &m.dev))) {
		open_error(&m, c, ratio);
		m.dev = NULL;
		goto out;
	}
	m.g = zlfs_zdev_geom(m.dev);

	/* Everything is checked before the first write. */
	if ((c = size_check(m.g, ratio, &m.l, &m.o, &m.log_mask, why, sizeof(why)))) {
		char hint[256] = "";
		if (c == -ENOSPC)
			min_size_hint(m.g, ratio, hint, sizeof(hint));
		err_msg("%s: %s%s", m.spec, why, hint);
		goto out;
	}
	zones = calloc(m.g->nr_zones, sizeof(*zones));
	if (!zones) {
		err_msg("out of memory");
		goto out;
	}
	if (check_zones(&m, zones, &to_reset))
		goto out;
	if (has_superblock(&m, &found))
		goto out;
	if (found && !force) {
		err_msg("%s already holds an F2FS/zlfs filesystem; use -f to overwrite it", m.spec);
		goto out;
	}
	zf_layout_cursegs(&m.l, m.segno);
	spread_logs(&m);
	if (make_ids(&m))
		goto out;

	if (format(&m, zones, to_reset)) {
		err_msg("%s: format failed; the device holds no filesystem", m.spec);
		goto out;
	}
	print_summary(&m);
	rc = 0;
out:
	if (m.dev)
		zlfs_zdev_close(m.dev);
	free(zones);
	free(m.blk);
	free(m.zeros);
	return rc;
}
