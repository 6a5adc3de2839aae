/*
 * super.c - mount and unmount.
 *
 * Mount: open the device and a dispatcher; read the first valid
 * superblock; refuse features zlfs does not support (naming them); take
 * the layout from the superblock (so images made by mkfs.f2fs mount too);
 * load the checkpoint, NAT and SIT; free orphans; roll fsynced files
 * forward (recovery.c); make the zones agree with the SIT; checkpoint.
 * Unmount: a checkpoint with the UMOUNT flag.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zlfs.h"
#include "bcache.h"
#include "checkpoint.h"
#include "segment.h"
#include "gc.h"
#include "node.h"
#include "acache.h"
#include "inode.h"
#include "recovery.h"
#include "cluster.h"
#include "zlfs/f2fs_feature.h"
#include "zlfs/probe.h"

/* ---- superblock ------------------------------------------------------------------- */


/*
 * Open the volume's devices: spec, and when its superblock lists several
 * devices (F2FS's devs[], made by mkfs.zlfs -c), the others by the paths
 * recorded there, end to end.  The superblock is read directly, before
 * any dispatcher exists; read_super checks it properly afterwards.
 * (fsck.zlfs opens volumes this way too.)
 */
int zlfs_open_volume(const char *spec, struct zlfs_zdev **out, char *err, size_t errlen)
{
	return zlfs_open_volume_flags(spec, 0, out, err, errlen);
}

int zlfs_open_volume_flags(const char *spec, unsigned int flags, struct zlfs_zdev **out,
			   char *err, size_t errlen)
{
	struct zlfs_zdev *dev;
	uint8_t *blk = NULL;
	int ret;

	if ((ret = zlfs_zdev_open_flags(spec, flags, &dev))) {
		snprintf(err, errlen, "%s", zlfs_zdev_errmsg());
		return ret;
	}
	if (posix_memalign((void **)&blk, ZF_BLKSIZE, ZF_BLKSIZE)) {
		zlfs_zdev_close(dev);
		return -ENOMEM;
	}
	const struct zf_super *sb = (const struct zf_super *)(blk + ZF_SUPER_OFFSET);
	bool multi = false;
	for (uint32_t b = 0; b < 2 && !multi; b++) {
		if (zlfs_zdev_read(dev, blk, ZF_BLKSIZE, (uint64_t)b * ZF_BLKSIZE) ||
		    zf_le32_to_cpu(sb->magic) != ZF_SUPER_MAGIC)
			continue;
		if ((zf_le32_to_cpu(sb->feature) & ZF_FEAT_SB_CHKSUM) &&
		    zf_super_crc(sb) != zf_le32_to_cpu(sb->crc))
			continue;
		multi = sb->devs[0].path[0] != 0;
		break;
	}
	if (!multi) {
		free(blk);
		*out = dev;
		return 0;
	}
	/* spec stands for device 0 whatever path it was made with (as in F2FS) */
	char paths[ZF_MAX_DEVICES][ZF_DEVICE_PATH_LEN + 1];
	const char *specs[ZF_MAX_DEVICES] = { spec };
	uint32_t segs[ZF_MAX_DEVICES];
	int n = 0;
	for (; n < ZF_MAX_DEVICES && sb->devs[n].path[0]; n++) {
		memcpy(paths[n], sb->devs[n].path, ZF_DEVICE_PATH_LEN);
		paths[n][ZF_DEVICE_PATH_LEN] = 0;
		if (n)
			specs[n] = paths[n];
		segs[n] = zf_le32_to_cpu(sb->devs[n].total_segments);
	}
	uint64_t seg0 = (uint64_t)zf_le32_to_cpu(sb->segment0_blkaddr) * ZF_BLKSIZE;
	free(blk);
	zlfs_zdev_close(dev);
	if ((ret = zlfs_zdev_open_multi_flags(specs, n, flags, &dev))) {
		snprintf(err, errlen, "the volume spans %d devices: %s", n, zlfs_zdev_errmsg());
		return ret;
	}
	struct zlfs_zdev_member mem[ZF_MAX_DEVICES];
	int got = zlfs_zdev_members(dev, mem, ZF_MAX_DEVICES);
	for (int i = 0; i < got; i++) {
		/* members sit end to end: all but the last must be exactly their part */
		uint64_t need = (uint64_t)segs[i] * ZF_SEG_BYTES + (i ? 0 : seg0);
		if (mem[i].size < need || (i + 1 < got && mem[i].size != need)) {
			snprintf(err, errlen, "device %d (%s) is not the %llu bytes the volume "
				 "expects there", i, specs[i], (unsigned long long)need);
			zlfs_zdev_close(dev);
			return -EINVAL;
		}
	}
	*out = dev;
	return 0;
}

/*
 * The first superblock copy that passes every check (zf_check_super) is
 * the one used, as in F2FS; a copy that fails is named with the reason.
 */
static int read_super(struct zlfs_sb *sbi, char *err, size_t errlen)
{
	uint8_t *blk = malloc(ZF_BLKSIZE);
	uint64_t dev_blocks = zlfs_zdev_geom(sbi->dev)->size / ZF_BLKSIZE;
	char why[2][200] = { "", "" };
	int ret = -ZLFS_EFSCORRUPTED;

	if (!blk)
		return -ENOMEM;
	for (uint32_t b = 0; b < 2; b++) {
		int r = zlfs_disp_rw(sbi->disp, ZLFS_OP_READ, blk, ZF_BLKSIZE,
				     (uint64_t)b * ZF_BLKSIZE, 0, NULL);
		if (r) {
			snprintf(why[b], sizeof(why[b]), "cannot read it: %s", zlfs_zdev_strerror(r));
			continue;
		}
		const struct zf_super *sb = (const struct zf_super *)(blk + ZF_SUPER_OFFSET);
		if (zf_check_super(sb, dev_blocks, why[b], sizeof(why[b])))
			continue;
		if (b)
			fprintf(stderr, "zlfs: first superblock refused (%s): using the second\n",
				why[0]);
		memcpy(&sbi->sb, sb, sizeof(*sb));
		sbi->csum_seed = zf_csum_seed(sb->uuid);
		ret = 0;
		break;
	}
	free(blk);
	if (ret) {
		if (!strncmp(why[0], "superblock: bad magic", 21) &&
		    !strncmp(why[1], "superblock: bad magic", 21))
		{
			/* say what is there instead, if anything: advising mkfs
			 * over an ext4 volume would invite destroying it */
			char what[400];
			if (zf_probe_explain(zlfs_zdev_spec(sbi->dev), what, sizeof(what)))
				snprintf(err, errlen, "%s", what);
			else
				snprintf(err, errlen, "no F2FS superblock (run mkfs.zlfs)");
		}
		else
			snprintf(err, errlen, "no valid superblock: first copy: %s; second copy: %s",
				 why[0], why[1]);
		return ret;
	}
	if ((ret = zf_check_features(zf_le32_to_cpu(sbi->sb.feature), err, errlen)))
		return ret;
	return 0;
}

/*
 * Is the root inode there and a directory?  Read only, and checked as
 * inode.c checks an inode block (NAT entry, footer, fields), but with the
 * reason in the mount's error rather than a "read-only from now on".
 */
static int check_root(struct zlfs_sb *sbi, char *err, size_t errlen)
{
	const uint32_t root = ZF_ROOT_INO;
	struct znode *n;
	char why[200] = "";
	int ret;

	if (root < sbi->max_nid && (ret = zlfs_nat_load(sbi, root))) {
		snprintf(err, errlen, "the NAT block of the root directory (inode %u) cannot be "
			 "read (%s): run fsck.zlfs", root, zlfs_zdev_strerror(ret));
		return ret;
	}
	if (root >= sbi->max_nid || zlfs_nat(sbi, root)->ino != root) {
		snprintf(err, errlen, "the root directory (inode %u) is missing: its NAT entry names "
			 "no inode: run fsck.zlfs", root);
		return -ZLFS_EFSCORRUPTED;
	}
	if ((ret = zlfs_node_get(sbi, root, root, ZF_NODE_KIND_INODE, &n))) {
		snprintf(err, errlen, "the root directory (inode %u) cannot be read (%s): run fsck.zlfs",
			 root, zlfs_zdev_strerror(ret));
		return ret;
	}
	if (zf_check_inode(&n->blk, sbi->max_nid, zlfs_feat(sbi), why, sizeof(why))) {
		snprintf(err, errlen, "the root directory (inode %u) is damaged (%s): run fsck.zlfs",
			 root, why);
		return -ZLFS_EFSCORRUPTED;
	}
	uint16_t m = zf_le16_to_cpu(n->blk.i.i_mode);
	if (!S_ISDIR(m)) {
		snprintf(err, errlen, "the root inode %u is not a directory (mode 0%o): run fsck.zlfs",
			 root, (unsigned int)m);
		return -ZLFS_EFSCORRUPTED;
	}
	return 0;
}

static void sb_free(struct zlfs_sb *sbi)
{
	zlfs_inode_release_all(sbi);
	zlfs_node_destroy(sbi);
	zlfs_seg_destroy(sbi);
	zlfs_bcache_destroy(sbi);
	zlfs_acache_destroy(sbi);
	free(sbi->cp_blk);
	free(sbi->ino_hash);
	if (sbi->disp)
		zlfs_disp_destroy(sbi->disp);
	if (sbi->dev)
		zlfs_zdev_close(sbi->dev);
	pthread_mutex_destroy(&sbi->lock);
	pthread_cond_destroy(&sbi->io_cv);
	pthread_cond_destroy(&sbi->rd_cv);
	pthread_mutex_destroy(&sbi->cache_lock);
	pthread_cond_destroy(&sbi->gc_cv);
	pthread_mutex_destroy(&sbi->wr_lock);
	pthread_mutex_destroy(&sbi->sit_lock);
	pthread_cond_destroy(&sbi->wr_cv);
	free(sbi);
}

/*
 * cache_mb splits as: a quarter for dentry and symlink blocks (bcache.c),
 * an eighth for the attributes of inodes whose blocks are not cached
 * (acache.c: about 40 times as many inodes as the same memory of inode
 * blocks), a sixteenth for NAT blocks (node.c: 455 nids each, in
 * NAT_BLOCK_BYTES), a thirty-second for SIT blocks (segment.c: 55
 * segments each, in SIT_BLOCK_BYTES), the rest for nodes, each share counted with its
 * entries' headers and malloc's own (about 2% of a block); at most an
 * eighth of it dirty (nodes, directory blocks and SIT blocks) before a
 * checkpoint (the checkpoint's writes of that
 * much go through the dispatcher at once, which costs memory of its own
 * while in flight).
 */
#define NAT_BLOCK_BYTES (ZF_NAT_ENTRY_PER_BLOCK * sizeof(struct znat) + ZLFS_MALLOC_OVERHEAD)
#define NODE_BYTES (sizeof(struct znode) + ZLFS_MALLOC_OVERHEAD)   /* the block and its header */
#define SIT_BLOCK_BYTES (ZF_SIT_ENTRY_PER_BLOCK * sizeof(struct zseg) + ZLFS_MALLOC_OVERHEAD)

static void set_cache_bound(struct zlfs_sb *sbi, uint32_t mb)
{
	if (mb < 8)
		mb = 8;
	if (mb > 1u << 20)
		mb = 1u << 20;
	sbi->cache_blocks = mb * (1024 * 1024 / ZF_BLKSIZE);
	sbi->node_cap = (uint32_t)((uint64_t)sbi->cache_blocks / 32 * 17 * ZF_BLKSIZE / NODE_BYTES);
	sbi->nat_cap = (uint32_t)((uint64_t)sbi->cache_blocks / 16 * ZF_BLKSIZE / NAT_BLOCK_BYTES);
	sbi->sit_cap = (uint32_t)((uint64_t)sbi->cache_blocks / 32 * ZF_BLKSIZE / SIT_BLOCK_BYTES);
	sbi->dirty_cap = sbi->cache_blocks / 8;
}

bool zlfs_cache_over(const struct zlfs_sb *sbi)
{
	uint32_t n = __atomic_load_n(&sbi->nr_nodes, __ATOMIC_RELAXED);
	uint32_t nat = __atomic_load_n(&sbi->nat_blocks_held, __ATOMIC_RELAXED);
	uint32_t sit = __atomic_load_n(&sbi->sit_blocks_held, __ATOMIC_RELAXED);
	return (n > sbi->node_cap && n >= __atomic_load_n(&sbi->trim_retry, __ATOMIC_RELAXED)) ||
	       (nat > sbi->nat_cap && nat >= __atomic_load_n(&sbi->nat_retry, __ATOMIC_RELAXED)) ||
	       (sit > sbi->sit_cap && sit >= __atomic_load_n(&sbi->sit_retry, __ATOMIC_RELAXED));
}

/* The NAT's share: down to 7/8 of it, blocks of cached nodes staying (node shrink first). */
static void nat_balance(struct zlfs_sb *sbi)
{
	if (sbi->nat_blocks_held <= sbi->nat_cap || sbi->nat_blocks_held < sbi->nat_retry)
		return;
	zlfs_nat_shrink(sbi, sbi->nat_cap - sbi->nat_cap / 8);
	sbi->nat_retry = sbi->nat_blocks_held > sbi->nat_cap ?
			 sbi->nat_blocks_held + sbi->nat_cap / 32 : 0;
}

/* The SIT's share likewise: dirty blocks and the logs' stay until the checkpoint. */
static void sit_balance(struct zlfs_sb *sbi)
{
	if (sbi->sit_blocks_held <= sbi->sit_cap || sbi->sit_blocks_held < sbi->sit_retry)
		return;
	zlfs_sit_shrink(sbi, sbi->sit_cap - sbi->sit_cap / 8);
	sbi->sit_retry = sbi->sit_blocks_held > sbi->sit_cap ?
			 sbi->sit_blocks_held + sbi->sit_cap / 32 : 0;
}

void zlfs_cache_balance(struct zlfs_sb *sbi, bool quiet)
{
	if (!sbi->ro && !sbi->fatal &&
	    sbi->nr_dirty_nodes + sbi->nr_dirty_meta + sbi->sit_dirty_blocks > sbi->dirty_cap)
		(void)zlfs_checkpoint(sbi, false);   /* a failure made the volume read-only */
	sit_balance(sbi);
	if (sbi->nr_nodes <= sbi->node_cap || sbi->nr_nodes < sbi->trim_retry) {
		nat_balance(sbi);
		return;
	}
	/* down to 7/8 of the cap, so trims do not run at every operation */
	uint32_t target = sbi->node_cap - sbi->node_cap / 8;
	zlfs_node_shrink(sbi, target);
	if (sbi->nr_nodes > target && quiet) {
		zlfs_inode_unload(sbi, sbi->nr_nodes - target);
		zlfs_node_shrink(sbi, target);
	}
	/* what is left is pinned or dirty: no new walk before it grows a bit */
	sbi->trim_retry = sbi->nr_nodes > sbi->node_cap ? sbi->nr_nodes + sbi->node_cap / 32 : 0;
	nat_balance(sbi);
}

void zlfs_opts_inprocess(struct zlfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	zlfs_disp_opts_default(&o->disp);
	zlfs_gc_opts_default(&o->gc);
	o->gc.mode = ZLFS_GC_OFF;
	o->gc.cp_interval_ms = 0;
}

/*
 * What new inodes start as: F2FS's inline_data, inline_dentry and
 * inline_xattr (on unless turned off, as the kernel's defaults), and
 * inline_xattr_size=, which F2FS allows only on a volume with
 * flexible_inline_xattr, with inline xattrs on, between the xattr
 * header's 6 words and ZF_MAX_INLINE_XATTR_WORDS.
 */
static int inline_opts(struct zlfs_sb *sbi, const struct zlfs_opts *o, char *err, size_t errlen)
{
	const unsigned int min = sizeof(struct zf_xattr_header) / 4;

	sbi->inline_data = !(o && o->noinline_data);
	sbi->inline_dentry = !(o && o->noinline_dentry);
	sbi->inline_xattr = !(o && o->noinline_xattr);
	sbi->inline_xattr_words = ZF_INLINE_XATTR_ADDRS;
	if (!o || !o->inline_xattr_size)
		return 0;
	if (!(zlfs_feat(sbi) & ZF_FEAT_FLEXIBLE_INLINE_XATTR)) {
		snprintf(err, errlen, "inline_xattr_size= needs the F2FS feature "
			 "flexible_inline_xattr, which this volume does not have");
		return -EINVAL;
	}
	if (!sbi->inline_xattr) {
		snprintf(err, errlen, "inline_xattr_size= sizes inline xattrs, which "
			 "noinline_xattr turns off");
		return -EINVAL;
	}
	if (o->inline_xattr_size < min || o->inline_xattr_size > ZF_MAX_INLINE_XATTR_WORDS) {
		snprintf(err, errlen, "inline_xattr_size=%u is out of range: %u .. %u words",
			 o->inline_xattr_size, min, ZF_MAX_INLINE_XATTR_WORDS);
		return -EINVAL;
	}
	sbi->inline_xattr_words = o->inline_xattr_size;
	return 0;
}

int zlfs_mount(const char *spec, const struct zlfs_opts *o, struct zlfs_sb **out, char *err,
	       size_t errlen)
{
	struct zlfs_sb *sbi = calloc(1, sizeof(*sbi));
	struct zlfs_disp_opts dopts;
	uint32_t *orph = NULL, norph = 0;
	int ret;

	if (!sbi)
		return -ENOMEM;
	/* held for microseconds by many FUSE threads on few cores: spin a
	 * little before sleeping, a futex sleep and wake-up costs more */
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&sbi->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_cond_init(&sbi->io_cv, NULL);
	pthread_cond_init(&sbi->rd_cv, NULL);
	pthread_mutex_init(&sbi->cache_lock, NULL);
	pthread_cond_init(&sbi->gc_cv, NULL);
	pthread_mutex_init(&sbi->wr_lock, NULL);
	pthread_mutex_init(&sbi->sit_lock, NULL);
	pthread_cond_init(&sbi->wr_cv, NULL);
	sbi->ro = o && o->ro;
	sbi->csum_rewrite = o && o->csum_rewrite && !sbi->ro;
	sbi->fsync_cp = o && o->fsync_cp;
	sbi->atime = o ? o->atime : ZLFS_ATIME_RELATIME;
	sbi->nodiratime = o && o->nodiratime;
	sbi->info_syslog = o && o->info_syslog;
	if (o)
		sbi->gco = o->gc;
	else
		zlfs_gc_opts_default(&sbi->gco);
	sbi->last_op_ms = zlfs_now_ms();
	/* ro: the devices read-only too, so nothing below can write (and a
	 * write-protected image or device mounts) */
	if ((ret = zlfs_open_volume_flags(spec, sbi->ro ? ZLFS_ZDEV_RDONLY : 0, &sbi->dev, err,
					  errlen))) {
		sbi->dev = NULL;
		goto fail;
	}
	if (o)
		dopts = o->disp;
	else
		zlfs_disp_opts_default(&dopts);
	if ((ret = zlfs_disp_create(sbi->dev, &dopts, &sbi->disp))) {
		snprintf(err, errlen, "cannot start the I/O dispatcher: %s", strerror(-ret));
		goto fail;
	}
	if (zlfs_zdev_geom(sbi->dev)->lbs > ZF_BLKSIZE) {
		snprintf(err, errlen, "logical block size above 4096");
		ret = -EINVAL;
		goto fail;
	}
	if ((ret = read_super(sbi, err, errlen)) || (ret = zf_layout_from_super(&sbi->lay, &sbi->sb, zlfs_zdev_geom(sbi->dev),
						      err, errlen)) ||
	    (ret = inline_opts(sbi, o, err, errlen)) ||
	    (ret = zlfs_cluster_opts(sbi, o ? &o->compr : NULL, err, errlen)))
		goto fail;
	sbi->ino_hash_size = INO_HASH_MIN;
	sbi->ino_hash = calloc(sbi->ino_hash_size, sizeof(*sbi->ino_hash));
	set_cache_bound(sbi, o && o->cache_mb ? o->cache_mb : ZLFS_CACHE_MB_DEFAULT);
	if (o && o->sit_cap)
		sbi->sit_cap = o->sit_cap;   /* (tests: paging on a small volume) */
	uint64_t attrs = (uint64_t)sbi->cache_blocks / 8 * ZF_BLKSIZE / zlfs_acache_entry_bytes();
	uint64_t dblks = (uint64_t)sbi->cache_blocks / 4 * ZF_BLKSIZE / zlfs_bcache_entry_bytes();
	if (!sbi->ino_hash || zlfs_bcache_init(sbi, (uint32_t)dblks) ||
	    zlfs_acache_init(sbi, (uint32_t)(attrs < UINT32_MAX ? attrs : UINT32_MAX))) {
		ret = -ENOMEM;
		goto fail;
	}
	if ((ret = zlfs_cp_load(sbi))) {
		snprintf(err, errlen, "cannot load the checkpoint: %s", zlfs_zdev_strerror(ret));
		goto fail;
	}
	/*
	 * The root must be a directory before anything is written: a volume
	 * whose root is gone or is not a directory cannot be used (every
	 * request would fail), and a refused volume is left exactly as it was
	 * (no orphan freed, no roll-forward, no checkpoint, no zone changed).
	 */
	if ((ret = check_root(sbi, err, errlen)))
		goto fail;
	/*
	 * A device whose open or active zone limit leaves less than a zone per
	 * log to spare: a log must not open its next zone while its last one
	 * still has writes in flight (data.c's zone-open barrier).
	 */
	const struct zlfs_zdev_geom *geo = zlfs_zdev_geom(sbi->dev);
	uint32_t lim = geo->max_open;
	if (geo->max_active && (!lim || geo->max_active < lim))
		lim = geo->max_active;
	sbi->open_barrier = sbi->lay.zoned && lim &&
			    lim < 2 * (uint32_t)__builtin_popcount(sbi->log_mask);
	if (!sbi->ro) {
		/*
		 * After a crash, in F2FS's order: free the orphans, roll the
		 * fsync chain forward (reads only), bring the zones in line
		 * (logs to fresh sections; nothing reset before the checkpoint
		 * below commits), restore fsynced names, checkpoint.
		 */
		struct zrecovery *rc = NULL;
		if ((ret = zlfs_cp_orphans(sbi, &orph, &norph)) ||
		    (ret = zlfs_orphan_recover(sbi, orph, norph))) {
			snprintf(err, errlen, "cannot free orphan inodes: %s", zlfs_zdev_strerror(ret));
			free(orph);
			goto fail;
		}
		free(orph);
		if ((ret = zlfs_recover_scan(sbi, &rc))) {
			snprintf(err, errlen, "roll-forward recovery failed: %s", zlfs_zdev_strerror(ret));
			zlfs_recover_free(rc);
			goto fail;
		}
		if ((ret = zlfs_seg_fix_zones(sbi))) {
			snprintf(err, errlen, "cannot bring the zones in line with the checkpoint: %s",
				 zlfs_zdev_strerror(ret));
			zlfs_recover_free(rc);
			goto fail;
		}
		ret = zlfs_recover_dentries(sbi, rc);
		zlfs_recover_free(rc);
		if (ret) {
			snprintf(err, errlen, "roll-forward recovery of names failed: %s",
				 zlfs_zdev_strerror(ret));
			goto fail;
		}
		/* a new checkpoint, not flagged clean: a crash from here on is unclean */
		if ((ret = zlfs_checkpoint(sbi, false))) {
			snprintf(err, errlen, "cannot write a checkpoint: %s", zlfs_zdev_strerror(ret));
			goto fail;
		}
	} else if (!(o && o->norecovery) && zlfs_cp_chain_pending(sbi)) {
		/*
		 * Read-only never rolls forward (that writes): the user looking
		 * at the volume must know it shows the last checkpoint, so this
		 * goes to the terminal even for a daemon, not to syslog.
		 */
		fprintf(stderr, "zlfs: %s: read-only: the fsync chain after the last checkpoint is "
			"not rolled forward; files fsynced since show their checkpointed state "
			"(a read-write mount recovers them)\n", spec);
	}
	zlfs_space_publish(sbi);         /* what statfs shows before the first operation */
	if ((ret = zlfs_gc_start(sbi))) {
		snprintf(err, errlen, "cannot start the GC thread: %s", strerror(-ret));
		goto fail;
	}
	*out = sbi;
	return 0;
fail:
	sb_free(sbi);
	return ret;
}

int zlfs_unmount(struct zlfs_sb *sbi)
{
	int ret = 0;

	zlfs_gc_stop(sbi);
	zlfs_lock(sbi);
	zlfs_inode_release_all(sbi);
	if (!sbi->ro && !sbi->fatal)
		ret = zlfs_checkpoint(sbi, true);
	zlfs_unlock(sbi);
	sb_free(sbi);
	return ret;
}
