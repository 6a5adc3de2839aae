/*
 * test_inode.c - in-memory inodes (fs/inode.c) in-process on volumes made
 * by mkfs.zlfs, judged by the volume's own counters, its next mounts and
 * fsck.f2fs.  What FUSE makes of an inode's life (lookup counts, opens,
 * forgets, the kernel's cache drops) arrives here as zlfs_inode_ref /
 * zlfs_iref, nopen and zlfs_iput, which the tests call as fuse_ops.c does;
 * through a mount none of it can be watched or timed.
 *
 * Covers:
 *   - a new inode (zlfs_inode_new): links 1 (a directory 2), i_blocks 1,
 *     owner, parent, the three times now, a generation (distinct between
 *     inodes, kept on the device, reported by zlfs_inode_attr), the cold
 *     mark on non-directories' nodes, counted in valid_inode_count, hashed
 *     with no lookup; one whose last link goes while nobody holds it is
 *     freed at once (nid, node, counters), and none is made read-only;
 *   - lookup counts: zlfs_inode_ref / zlfs_iref count up, zlfs_iput counts
 *     down (clamped at 0), a linked inode leaves memory when neither
 *     lookups nor opens are left and its node is unpinned, the root never
 *     does; zlfs_iref of an inode not in memory makes an unloaded zinode
 *     that zlfs_iget loads and pins once;
 *   - unlinked while looked up and open: readable, on the orphan list,
 *     nothing freed; freed (inode, direct and xattr nodes, data: the free
 *     block counters back by exactly its i_blocks) when the last of the
 *     lookups and opens goes, in either order; a directory, a symlink and
 *     a device node likewise;
 *   - orphans across a checkpoint and a crash (the going-down ioctl's
 *     NOSYNC: nothing more reaches the device): the checkpoint lists
 *     them, a read-only mount finds them there untouched, the next
 *     read-write mount frees them (every counter back to what it was
 *     before they were made) and its checkpoint lists none; also when the
 *     orphans were freed in memory after the checkpoint, and an unlink
 *     after the last checkpoint is undone by the crash;
 *   - cache pressure (cache_mb 8, 9000 files held by lookups, some open):
 *     the trim unpins the clean inodes nobody has open (never open, dirty
 *     or orphan ones, nor the root), the node cache stays in its bound, the
 *     inode hash grows, and every file reads back its data, size and
 *     xattrs, before and after a remount; forgets of unloaded inodes drop
 *     them;
 *   - device numbers in i_addr (F2FS's old and new encodings), st_blocks,
 *     nlink through link/unlink/mkdir, zlfs_ftype, zlfs_inode_touch;
 *   - atime: relatime, strictatime, noatime, nodiratime, read-only and
 *     FS_NOATIME_FL, zlfs_inode_accessed updating only when due;
 *   - zlfs_iget and zlfs_inode_attr of numbers that name no inode (free
 *     nids, other nodes, out of range): EUCLEAN, and no read-only turn;
 *   - roll-forward of inline files, and of one grown out of its inode
 *     with the power cut in the fsync after (each seed of what the zones
 *     keep, the flush failing before or after the nodes).
 */
#include <check.h>
#include <errno.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "segment.h"
#include "shutdown.h"
#include "node.h"
#include "acache.h"
#include "inode.h"
#include "namei.h"
#include "flags.h"
#include "file.h"
#include "dir.h"
#include "xattr.h"
#include "testutil.h"
#include "fsutil.h"

static const struct zlfs_cred cred = { 0, 0, 022 };

static struct zlfs_sb *mount_with(const char *img, uint32_t cache_mb, bool ro, uint8_t atime,
				  bool nodiratime)
{
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	char err[256];

	zlfs_opts_inprocess(&o);
	o.cache_mb = cache_mb;
	o.ro = ro;
	o.atime = atime;
	o.nodiratime = nodiratime;
	ck_assert_msg(zlfs_mount(img, &o, &sbi, err, sizeof(err)) == 0, "mount: %s", err);
	pthread_mutex_lock(&sbi->lock);
	return sbi;
}

static struct zinode *mk(struct zlfs_sb *sbi, uint32_t dir, const char *name, mode_t mode)
{
	struct zinode *zi;

	ck_assert_int_eq(zlfs_create(sbi, &cred, dir, name, mode, 0, NULL, &zi), 0);
	return zi;
}

static bool present(struct zlfs_sb *sbi, uint32_t dir, const char *name)
{
	struct zinode *d;
	uint32_t ino;
	uint8_t ft;

	ck_assert_int_eq(zlfs_iget(sbi, dir, &d), 0);
	int ret = zlfs_dir_lookup(sbi, d, name, strlen(name), &ino, &ft);
	ck_assert_msg(ret == 0 || ret == -ENOENT, "lookup %s: %d", name, ret);
	return ret == 0;
}

static uint32_t links(struct zinode *zi)
{
	return zf_le32_to_cpu(zi_raw(zi)->i_links);
}

static uint64_t iblocks(struct zinode *zi)
{
	return zf_le64_to_cpu(zi_raw(zi)->i_blocks);
}

/* nid is free: no address, no inode, not to be reused before the checkpoint */
static void nid_freed(struct zlfs_sb *sbi, uint32_t nid)
{
	ck_assert_msg(zlfs_nat(sbi, nid)->blkaddr == ZF_NULL_ADDR, "nid %u still at %u", nid,
		      zlfs_nat(sbi, nid)->blkaddr);
	ck_assert_uint_eq(zlfs_nat(sbi, nid)->ino, 0);
}

static void nid_live(struct zlfs_sb *sbi, uint32_t nid, uint32_t ino)
{
	ck_assert_msg(zlfs_nat(sbi, nid)->blkaddr != ZF_NULL_ADDR, "nid %u freed", nid);
	ck_assert_uint_eq(zlfs_nat(sbi, nid)->ino, ino);
}

/* An xattr too big for the inode's inline area (200 bytes): it takes an xattr node. */
static void xattr_in_node(struct zlfs_sb *sbi, struct zinode *zi)
{
	char v[300];

	memset(v, 'x', sizeof(v));
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.x", v, sizeof(v), 0), 0);
	ck_assert_uint_ne(zf_le32_to_cpu(zi_raw(zi)->i_xattr_nid), 0);
}

/* Write n blocks of the pattern seed at block 0 of zi. */
static void fill(struct zlfs_sb *sbi, struct zinode *zi, uint32_t n, uint64_t seed, uint64_t at)
{
	size_t len = (size_t)n * ZF_BLKSIZE;
	char *buf = malloc(len);

	ck_assert_ptr_nonnull(buf);
	tu_fill(buf, len, seed);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, buf, len, at * ZF_BLKSIZE), 0);
	free(buf);
}

/* zi holds n blocks of pattern seed from block at. */
static void check_data(struct zlfs_sb *sbi, struct zinode *zi, uint32_t n, uint64_t seed,
		       uint64_t at)
{
	size_t len = (size_t)n * ZF_BLKSIZE, got = 0;
	char *want = malloc(len), *buf = malloc(len);

	ck_assert(want && buf);
	tu_fill(want, len, seed);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, buf, len, at * ZF_BLKSIZE, &got), 0);
	ck_assert_uint_eq(got, len);
	ck_assert_msg(!memcmp(want, buf, len), "inode %u: data differs", zi->ino);
	free(want);
	free(buf);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The orphan list of the checkpoint in force, sorted, is want[0..n). */
static void cp_orphans_are(struct zlfs_sb *sbi, const uint32_t *want, uint32_t n)
{
	uint32_t *inos, cnt, w[16];

	ck_assert_int_eq(zlfs_cp_orphans(sbi, &inos, &cnt), 0);
	ck_assert_uint_eq(cnt, n);
	if (!n) {
		free(inos);
		return;
	}
	memcpy(w, want, n * sizeof(*w));
	qsort(w, n, sizeof(*w), cmp_u32);
	qsort(inos, cnt, sizeof(*inos), cmp_u32);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_uint_eq(inos[i], w[i]);
	free(inos);
}

/* The orphans inode.c holds in memory, sorted, are want[0..n). */
static void mem_orphans_are(struct zlfs_sb *sbi, const uint32_t *want, uint32_t n)
{
	uint32_t got[16], w[16];

	ck_assert_uint_eq(sbi->nr_orphans, n);
	ck_assert_uint_eq(zlfs_orphan_list(sbi, got, 16), n);
	if (!n)
		return;
	memcpy(w, want, n * sizeof(*w));
	qsort(w, n, sizeof(*w), cmp_u32);
	qsort(got, n, sizeof(*got), cmp_u32);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_uint_eq(got[i], w[i]);
}

/* ---- a new inode -------------------------------------------------------------------- */

START_TEST(test_new_inode)
{
	char *img = tu_fs_volume("inode-new.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	uint32_t inodes0 = sbi->valid_inode_count, nodes0 = sbi->valid_node_count;
	uint32_t new0 = sbi->nr_new_nodes, mem0 = sbi->nr_inodes;
	struct zinode *zi, *dz;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	ck_assert_int_eq(zlfs_inode_new(sbi, S_IFREG | 0640, 12, 34, ZF_ROOT_INO, &zi), 0);
	struct zf_inode *ri = zi_raw(zi);
	uint32_t ino = zi->ino;
	ck_assert_uint_ge(ino, ZF_FIRST_FREE_NID);
	ck_assert_uint_eq(zf_le16_to_cpu(ri->i_mode), S_IFREG | 0640);
	ck_assert_uint_eq(zf_le32_to_cpu(ri->i_uid), 12);
	ck_assert_uint_eq(zf_le32_to_cpu(ri->i_gid), 34);
	ck_assert_uint_eq(links(zi), 1);
	ck_assert_uint_eq(iblocks(zi), 1);
	ck_assert_uint_eq(zf_le64_to_cpu(ri->i_size), 0);
	ck_assert_uint_eq(zf_le32_to_cpu(ri->i_pino), ZF_ROOT_INO);
	uint64_t mt = zf_le64_to_cpu(ri->i_mtime);
	ck_assert_uint_eq(zf_le64_to_cpu(ri->i_atime), mt);
	ck_assert_uint_eq(zf_le64_to_cpu(ri->i_ctime), mt);
	ck_assert_uint_eq(zf_le32_to_cpu(ri->i_atime_nsec), zf_le32_to_cpu(ri->i_mtime_nsec));
	ck_assert_uint_eq(zf_le32_to_cpu(ri->i_ctime_nsec), zf_le32_to_cpu(ri->i_mtime_nsec));
	ck_assert_msg(mt + 5 >= (uint64_t)now.tv_sec && mt <= (uint64_t)now.tv_sec + 5,
		      "mtime %llu, now %lld", (unsigned long long)mt, (long long)now.tv_sec);
	ck_assert(zf_le32_to_cpu(zi->node->blk.footer.flag) & (1u << ZF_NODE_COLD_BIT));
	/* counted, hashed, pinned, nobody's yet */
	ck_assert_uint_eq(sbi->valid_inode_count, inodes0 + 1);
	ck_assert_uint_eq(sbi->valid_node_count, nodes0 + 1);
	ck_assert_uint_eq(sbi->nr_new_nodes, new0 + 1);
	ck_assert_uint_eq(sbi->nr_inodes, mem0 + 1);
	ck_assert_uint_eq(zlfs_nat(sbi, ino)->blkaddr, ZF_NEW_ADDR);
	nid_live(sbi, ino, ino);
	ck_assert_ptr_eq(zlfs_ifind(sbi, ino), zi);
	ck_assert_uint_eq(zi->nlookup, 0);
	ck_assert_uint_eq(zi->nopen, 0);
	ck_assert(!zi->orphan);
	ck_assert_int_eq(zi->node->pins, 1);

	ck_assert_int_eq(zlfs_inode_new(sbi, S_IFDIR | 0755, 0, 0, ZF_ROOT_INO, &dz), 0);
	uint32_t dino = dz->ino;
	ck_assert_uint_ne(dino, ino);
	ck_assert_uint_eq(links(dz), 2);
	ck_assert_uint_eq(zf_le32_to_cpu(zi_raw(dz)->i_current_depth), 1);
	ck_assert(!(zf_le32_to_cpu(dz->node->blk.footer.flag) & (1u << ZF_NODE_COLD_BIT)));
	ck_assert_uint_eq(sbi->valid_inode_count, inodes0 + 2);

	/* the last link gone with nobody holding them: freed at once */
	zi_raw(zi)->i_links = 0;
	ck_assert_int_eq(zlfs_inode_unlinked(sbi, zi), 0);
	zi_raw(dz)->i_links = 0;
	ck_assert_int_eq(zlfs_inode_unlinked(sbi, dz), 0);
	ck_assert_ptr_null(zlfs_ifind(sbi, ino));
	ck_assert_ptr_null(zlfs_ifind(sbi, dino));
	nid_freed(sbi, ino);
	nid_freed(sbi, dino);
	ck_assert(zlfs_nat(sbi, ino)->flags & ZNAT_FREED);
	ck_assert_ptr_null(zlfs_node_cached(sbi, ino));
	ck_assert_uint_eq(sbi->valid_inode_count, inodes0);
	ck_assert_uint_eq(sbi->valid_node_count, nodes0);
	ck_assert_uint_eq(sbi->nr_new_nodes, new0);
	ck_assert_uint_eq(sbi->nr_inodes, mem0);
	ck_assert_uint_eq(sbi->nr_orphans, 0);
	/* a freed nid is not handed out again before the checkpoint */
	ck_assert_int_eq(zlfs_inode_new(sbi, S_IFREG | 0600, 0, 0, ZF_ROOT_INO, &zi), 0);
	ck_assert_uint_ne(zi->ino, ino);
	ck_assert_uint_ne(zi->ino, dino);
	zi_raw(zi)->i_links = 0;
	zlfs_inode_unlinked(sbi, zi);

	/* generations: one each, distinct, as zlfs_inode_attr reports them */
	uint32_t gen[32], inos[32];
	for (int i = 0; i < 32; i++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "g%d", i);
		zi = mk(sbi, ZF_ROOT_INO, nm, S_IFREG | 0644);
		inos[i] = zi->ino;
		gen[i] = zf_le32_to_cpu(zi_raw(zi)->i_generation);
		struct zattr a;
		ck_assert_int_eq(zlfs_inode_attr(sbi, zi->ino, &a), 0);
		ck_assert_uint_eq(a.generation, gen[i]);
		ck_assert_uint_eq(a.ino, zi->ino);
		ck_assert_uint_eq(a.links, 1);
	}
	uint32_t sorted[32];
	memcpy(sorted, gen, sizeof(gen));
	qsort(sorted, 32, sizeof(sorted[0]), cmp_u32);
	for (int i = 1; i < 32; i++)
		ck_assert_msg(sorted[i] != sorted[i - 1], "two inodes with generation %u", sorted[i]);

	/* a volume gone read-only after an error makes no inode */
	int fatal = sbi->fatal;
	sbi->fatal = -EIO;
	ck_assert_int_eq(zlfs_inode_new(sbi, S_IFREG | 0600, 0, 0, ZF_ROOT_INO, &zi), -EROFS);
	sbi->fatal = fatal;
	ck_assert_uint_eq(sbi->valid_inode_count, inodes0 + 32);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	/* the generations are the device's */
	sbi = tu_fs_mount(img, 0);
	for (int i = 0; i < 32; i++) {
		struct zattr a;
		ck_assert_int_eq(zlfs_inode_attr(sbi, inos[i], &a), 0);
		ck_assert_uint_eq(a.generation, gen[i]);
		ck_assert_int_eq(zlfs_iget(sbi, inos[i], &zi), 0);
		ck_assert_uint_eq(zf_le32_to_cpu(zi_raw(zi)->i_generation), gen[i]);
	}
	ck_assert_uint_eq(sbi->valid_inode_count, inodes0 + 32);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/* ---- lookup counts ------------------------------------------------------------------- */

START_TEST(test_lookup_counts)
{
	char *img = tu_fs_volume("inode-lookup.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi = mk(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644), *z2;
	uint32_t ino = zi->ino, mem0 = sbi->nr_inodes;

	/* replies counted as fuse_ops.c counts them */
	zlfs_inode_ref(sbi, zi);
	zlfs_inode_ref(sbi, zi);
	ck_assert_int_eq(zlfs_iref(sbi, ino), 0);
	ck_assert_uint_eq(zi->nlookup, 3);
	ck_assert_uint_eq(sbi->nr_inodes, mem0);   /* the same zinode */
	zlfs_iput(sbi, zi, 1);
	ck_assert_uint_eq(zi->nlookup, 2);
	ck_assert_ptr_eq(zlfs_ifind(sbi, ino), zi);
	/* open: a forget of more than counted leaves 0 lookups, the open holds it */
	zi->nopen++;
	zlfs_iput(sbi, zi, 1000);
	ck_assert_ptr_eq(zlfs_ifind(sbi, ino), zi);
	ck_assert_uint_eq(zi->nlookup, 0);
	ck_assert_ptr_nonnull(zi->node);
	struct znode *n = zi->node;
	ck_assert_int_eq(n->pins, 1);
	/* the release: out of memory, its node unpinned, the inode itself kept */
	zi->nopen--;
	zlfs_iput(sbi, zi, 0);
	ck_assert_ptr_null(zlfs_ifind(sbi, ino));
	ck_assert_uint_eq(sbi->nr_inodes, mem0 - 1);
	ck_assert_ptr_eq(zlfs_node_cached(sbi, ino), n);
	ck_assert_int_eq(n->pins, 0);
	nid_live(sbi, ino, ino);
	ck_assert_uint_eq(zf_le32_to_cpu(n->blk.i.i_links), 1);

	/* zlfs_iref of an inode not in memory: an unloaded zinode, one lookup */
	ck_assert_int_eq(zlfs_iref(sbi, ino), 0);
	zi = zlfs_ifind(sbi, ino);
	ck_assert_ptr_nonnull(zi);
	ck_assert_ptr_null(zi->node);
	ck_assert_uint_eq(zi->nlookup, 1);
	ck_assert_int_eq(n->pins, 0);
	struct zattr a;
	ck_assert_int_eq(zlfs_inode_attr(sbi, ino, &a), 0);   /* answers without loading */
	ck_assert_uint_eq(a.mode, S_IFREG | 0644);
	ck_assert_ptr_null(zi->node);
	/* zlfs_iget loads and pins it, once however often it is asked */
	ck_assert_int_eq(zlfs_iget(sbi, ino, &z2), 0);
	ck_assert_ptr_eq(z2, zi);
	ck_assert_ptr_eq(zi->node, n);
	ck_assert_int_eq(n->pins, 1);
	ck_assert_int_eq(zlfs_iget(sbi, ino, &z2), 0);
	ck_assert_int_eq(n->pins, 1);
	ck_assert_uint_eq(zi->nlookup, 1);
	zlfs_iput(sbi, zi, 1);
	ck_assert_ptr_null(zlfs_ifind(sbi, ino));
	ck_assert_int_eq(n->pins, 0);
	/* a forget of an unloaded zinode drops it without reading anything */
	ck_assert_int_eq(zlfs_iref(sbi, ino), 0);
	ck_assert_int_eq(zlfs_iref(sbi, ino), 0);
	zi = zlfs_ifind(sbi, ino);
	ck_assert_uint_eq(zi->nlookup, 2);
	zlfs_iput(sbi, zi, 2);
	ck_assert_ptr_null(zlfs_ifind(sbi, ino));
	ck_assert_uint_eq(sbi->nr_inodes, mem0 - 1);

	/* the root stays, whatever is forgotten */
	struct zinode *root;
	ck_assert_int_eq(zlfs_iget(sbi, ZF_ROOT_INO, &root), 0);
	zlfs_inode_ref(sbi, root);
	zlfs_iput(sbi, root, UINT64_MAX);
	ck_assert_ptr_eq(zlfs_ifind(sbi, ZF_ROOT_INO), root);
	ck_assert_ptr_nonnull(root->node);
	ck_assert_int_eq(root->node->pins, 1);

	/* back in memory, unchanged */
	ck_assert_int_eq(zlfs_iget(sbi, ino, &zi), 0);
	ck_assert_uint_eq(links(zi), 1);
	ck_assert(present(sbi, ZF_ROOT_INO, "f"));
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

/* ---- unlinked while in use ------------------------------------------------------------- */

enum { LAST_RELEASE, LAST_FORGET, KINDS };

/*
 * A file with data past the inode (a direct node) and an xattr node, a
 * directory, a symlink and a device node, each looked up (and the file
 * open), unlinked: kept and readable, orphans; freed when the last user
 * goes, giving back exactly their i_blocks.
 */
START_TEST(test_unlinked_in_use)
{
	int order = _i;
	char *img = tu_fs_volume("inode-orphan.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *f = mk(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);
	struct zinode *d = mk(sbi, ZF_ROOT_INO, "d", S_IFDIR | 0755);
	struct zinode *l, *c;
	char got[512];
	size_t len;

	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, "l", S_IFLNK | 0777, 0, "target", &l),
			 0);
	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, "c", S_IFCHR | 0600, makedev(1, 3), NULL,
				     &c), 0);
	fill(sbi, f, 1000, 5, 0);
	xattr_in_node(sbi, f);
	/* the directory had entries once: dentry blocks, not just its inode */
	for (int i = 0; i < 200; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "entry-with-a-long-name-%d", i);
		(void)mk(sbi, d->ino, nm, S_IFREG | 0644);
	}
	for (int i = 0; i < 200; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "entry-with-a-long-name-%d", i);
		ck_assert_int_eq(zlfs_unlink(sbi, d->ino, nm, false), 0);
	}
	uint32_t fi = f->ino, di = d->ino, li = l->ino, ci = c->ino;
	uint32_t fx = zf_le32_to_cpu(zi_raw(f)->i_xattr_nid);
	uint32_t fd = zf_le32_to_cpu(zi_raw(f)->i_nid[0]);
	ck_assert_uint_ne(fx, 0);
	ck_assert_uint_ne(fd, 0);
	/* i_blocks: the inode, 1000 data blocks, the direct node, the xattr node */
	ck_assert_uint_eq(iblocks(f), 1003);
	ck_assert_uint_gt(iblocks(d), 1);
	ck_assert_uint_eq(iblocks(l), 1);      /* a short target: inside its inode */
	ck_assert_uint_eq(iblocks(c), 1);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	zlfs_inode_ref(sbi, f);
	zlfs_inode_ref(sbi, d);
	zlfs_inode_ref(sbi, l);
	zlfs_inode_ref(sbi, c);
	f->nopen++;
	uint64_t held = iblocks(f) + iblocks(d) + iblocks(l) + iblocks(c);
	uint64_t avail0 = zlfs_avail_blocks(sbi), valid0 = sbi->valid_block_count;
	uint32_t inodes0 = sbi->valid_inode_count, nodes0 = sbi->valid_node_count;
	uint32_t rootlinks = links(zlfs_ifind(sbi, ZF_ROOT_INO));

	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "f", false), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "d", true), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "l", false), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "c", false), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "f", false), -ENOENT);
	ck_assert(!present(sbi, ZF_ROOT_INO, "f") && !present(sbi, ZF_ROOT_INO, "d"));
	ck_assert_uint_eq(links(zlfs_ifind(sbi, ZF_ROOT_INO)), rootlinks - 1);
	/* kept: orphans, every block still theirs, still readable */
	const uint32_t all[] = { fi, di, li, ci };
	mem_orphans_are(sbi, all, 4);
	ck_assert_ptr_eq(zlfs_ifind(sbi, fi), f);
	ck_assert(f->orphan && d->orphan && l->orphan && c->orphan);
	ck_assert_uint_eq(links(f), 0);
	ck_assert_uint_eq(links(d), 0);
	ck_assert_uint_eq(zlfs_avail_blocks(sbi), avail0);
	ck_assert_uint_eq(sbi->valid_inode_count, inodes0);
	nid_live(sbi, fi, fi);
	nid_live(sbi, fx, fi);
	nid_live(sbi, fd, fi);
	check_data(sbi, f, 1000, 5, 0);
	ck_assert_int_eq(zlfs_xattr_get(sbi, f, "user.x", got, sizeof(got), &len), 0);
	ck_assert_uint_eq(len, 300);
	struct stat st;
	zlfs_inode_stat(sbi, c, &st);
	ck_assert_uint_eq(st.st_rdev, makedev(1, 3));
	ck_assert_uint_eq(st.st_nlink, 0);

	/* the other users go; the last one frees each */
	zlfs_iput(sbi, d, 1);
	zlfs_iput(sbi, l, 1);
	zlfs_iput(sbi, c, 1);
	ck_assert_ptr_null(zlfs_ifind(sbi, di));
	nid_freed(sbi, di);
	nid_freed(sbi, li);
	nid_freed(sbi, ci);
	ck_assert_uint_eq(sbi->nr_orphans, 1);
	ck_assert_uint_eq(zlfs_avail_blocks(sbi), avail0 + held - iblocks(f));
	if (order == LAST_RELEASE) {
		zlfs_iput(sbi, f, 1);          /* the forget: still open */
		ck_assert_ptr_eq(zlfs_ifind(sbi, fi), f);
		nid_live(sbi, fi, fi);
		check_data(sbi, f, 1000, 5, 0);
		f->nopen--;                    /* the release */
		zlfs_iput(sbi, f, 0);
	} else {
		f->nopen--;                    /* the release: still looked up */
		zlfs_iput(sbi, f, 0);
		ck_assert_ptr_eq(zlfs_ifind(sbi, fi), f);
		nid_live(sbi, fi, fi);
		check_data(sbi, f, 1000, 5, 0);
		zlfs_iput(sbi, f, 1);          /* the forget */
	}
	ck_assert_ptr_null(zlfs_ifind(sbi, fi));
	nid_freed(sbi, fi);
	nid_freed(sbi, fx);
	nid_freed(sbi, fd);
	mem_orphans_are(sbi, NULL, 0);
	/* everything given back: every counter by exactly what they held */
	ck_assert_uint_eq(zlfs_avail_blocks(sbi), avail0 + held);
	ck_assert_uint_eq(sbi->valid_block_count, valid0 - held);
	ck_assert_uint_eq(sbi->valid_inode_count, inodes0 - 4);
	ck_assert_uint_eq(sbi->valid_node_count, nodes0 - 4 - 2);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	cp_orphans_are(sbi, NULL, 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	sbi = tu_fs_mount(img, 0);
	ck_assert_uint_eq(sbi->valid_inode_count, inodes0 - 4);
	ck_assert(!present(sbi, ZF_ROOT_INO, "f"));
	nid_freed(sbi, fi);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/*
 * A file with two names loses one: not an orphan, nothing freed; the
 * other name still reaches it.  (i_links as namei.c keeps them; inode.c
 * acts on the 0.)
 */
START_TEST(test_links)
{
	char *img = tu_fs_volume("inode-links.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *a = mk(sbi, ZF_ROOT_INO, "a", S_IFREG | 0644), *b, *d, *s;
	struct stat st;

	ck_assert_uint_eq(links(a), 1);
	ck_assert_int_eq(zlfs_link(sbi, a->ino, ZF_ROOT_INO, "b", &b), 0);
	ck_assert_ptr_eq(b, a);
	ck_assert_uint_eq(links(a), 2);
	zlfs_inode_stat(sbi, a, &st);
	ck_assert_uint_eq(st.st_nlink, 2);
	zlfs_inode_ref(sbi, a);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "a", false), 0);
	ck_assert_uint_eq(links(a), 1);
	ck_assert(!a->orphan);
	ck_assert_uint_eq(sbi->nr_orphans, 0);
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "b"), a->ino);
	/* the last name goes while it is looked up: an orphan */
	uint32_t ino = a->ino;
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "b", false), 0);
	ck_assert(a->orphan);
	ck_assert_int_eq(zlfs_link(sbi, ino, ZF_ROOT_INO, "again", &b), -ENOENT);
	zlfs_iput(sbi, a, 1);
	nid_freed(sbi, ino);
	/* directories: 2, and one per subdirectory */
	d = mk(sbi, ZF_ROOT_INO, "d", S_IFDIR | 0755);
	ck_assert_uint_eq(links(d), 2);
	s = mk(sbi, d->ino, "s", S_IFDIR | 0755);
	ck_assert_uint_eq(links(s), 2);
	ck_assert_uint_eq(links(d), 3);
	(void)mk(sbi, d->ino, "file", S_IFREG | 0644);
	ck_assert_uint_eq(links(d), 3);
	ck_assert_int_eq(zlfs_unlink(sbi, d->ino, "s", true), 0);
	ck_assert_uint_eq(links(d), 2);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

/* ---- orphans, checkpoint and crash ------------------------------------------------------ */

enum { CRASH_HELD, CRASH_FREED, CRASH_UNLINK_AFTER_CP, CRASHES };

START_TEST(test_orphan_crash)
{
	int how = _i;
	char *img = tu_fs_volume("inode-crash.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *f, *d, *l, *c;

	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	uint32_t inodes_b = sbi->valid_inode_count, nodes_b = sbi->valid_node_count;
	uint64_t valid_b = sbi->valid_block_count;
	f = mk(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);
	d = mk(sbi, ZF_ROOT_INO, "d", S_IFDIR | 0755);
	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, "l", S_IFLNK | 0777, 0, "target", &l),
			 0);
	/*
	 * A FIFO, not a device node: fsck.f2fs checks an orphan's i_addr as
	 * block addresses whatever its mode (its orphan walk passes no file
	 * type), so the device number in a device node's would be "not valid".
	 */
	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, "c", S_IFIFO | 0600, 0, NULL, &c), 0);
	fill(sbi, f, 1000, 9, 0);
	xattr_in_node(sbi, f);
	uint32_t fi = f->ino, di = d->ino, li = l->ino, ci = c->ino;
	uint32_t fx = zf_le32_to_cpu(zi_raw(f)->i_xattr_nid);
	uint32_t fd = zf_le32_to_cpu(zi_raw(f)->i_nid[0]);
	const uint32_t all[] = { fi, di, li, ci };
	struct zinode *zs[] = { f, d, l, c };
	for (int i = 0; i < 4; i++)
		zlfs_inode_ref(sbi, zs[i]);
	f->nopen++;
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);

	if (how == CRASH_UNLINK_AFTER_CP)
		ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "f", false), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "d", true), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "l", false), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "c", false), 0);
	mem_orphans_are(sbi, all, 4);
	if (how != CRASH_UNLINK_AFTER_CP) {
		/* an open orphan takes writes; a checkpoint lists the orphans and frees none */
		fill(sbi, f, 20, 10, 1000);
		ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
		cp_orphans_are(sbi, all, 4);
		check_data(sbi, f, 1000, 9, 0);
		check_data(sbi, f, 20, 10, 1000);
		for (int i = 0; i < 4; i++)
			nid_live(sbi, all[i], all[i]);
		nid_live(sbi, fx, fi);
		/* another checkpoint: listed again */
		ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
		cp_orphans_are(sbi, all, 4);
	} else {
		cp_orphans_are(sbi, NULL, 0);
	}
	if (how == CRASH_FREED) {
		/* the users go after the checkpoint: freed in memory only */
		f->nopen--;
		for (int i = 0; i < 4; i++)
			zlfs_iput(sbi, zs[i], 1);
		for (int i = 0; i < 4; i++)
			nid_freed(sbi, all[i]);
		mem_orphans_are(sbi, NULL, 0);
	}
	/* the crash: nothing more reaches the device */
	ck_assert_int_eq(zlfs_shutdown(sbi, ZLFS_GOING_DOWN_NOSYNC), 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	/* read-only: the orphans are there as the checkpoint left them */
	sbi = mount_with(img, 0, true, ZLFS_ATIME_RELATIME, false);
	if (how == CRASH_UNLINK_AFTER_CP) {
		cp_orphans_are(sbi, NULL, 0);
	} else {
		cp_orphans_are(sbi, all, 4);
		ck_assert(!present(sbi, ZF_ROOT_INO, "f"));
	}
	for (int i = 0; i < 4; i++)
		nid_live(sbi, all[i], all[i]);
	nid_live(sbi, fx, fi);
	tu_fs_unmount(sbi);

	sbi = tu_fs_mount(img, 0);
	cp_orphans_are(sbi, NULL, 0);
	ck_assert_uint_eq(sbi->nr_orphans, 0);
	if (how == CRASH_UNLINK_AFTER_CP) {
		/* the unlinks never reached a checkpoint: all four are back, whole */
		ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "f"), fi);
		ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "d"), di);
		ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "l"), li);
		ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "c"), ci);
		ck_assert_int_eq(zlfs_iget(sbi, fi, &f), 0);
		ck_assert_uint_eq(links(f), 1);
		check_data(sbi, f, 1000, 9, 0);
		ck_assert_int_eq(zlfs_iget(sbi, di, &d), 0);
		ck_assert_uint_eq(links(d), 2);
		ck_assert_uint_eq(sbi->valid_inode_count, inodes_b + 4);
	} else {
		/* freed by the mount: every counter where it was before they were made */
		ck_assert(!present(sbi, ZF_ROOT_INO, "f"));
		for (int i = 0; i < 4; i++)
			nid_freed(sbi, all[i]);
		nid_freed(sbi, fx);
		nid_freed(sbi, fd);
		ck_assert_uint_eq(sbi->valid_inode_count, inodes_b);
		ck_assert_uint_eq(sbi->valid_node_count, nodes_b);
		ck_assert_uint_eq(sbi->valid_block_count, valid_b);
	}
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	/* and once more: nothing left to do */
	sbi = tu_fs_mount(img, 0);
	cp_orphans_are(sbi, NULL, 0);
	ck_assert_uint_eq(sbi->valid_inode_count, inodes_b + (how == CRASH_UNLINK_AFTER_CP ? 4 : 0));
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/* ---- cache pressure ------------------------------------------------------------------------ */

#define NDIRS 9
#define PER_DIR 1000
#define NF (NDIRS * PER_DIR)

static uint32_t *fino;
static uint64_t *fseed;

static void check_file(struct zlfs_sb *sbi, int i)
{
	struct zinode *zi;
	char v[32], want[32];
	size_t len;

	ck_assert_int_eq(zlfs_iget(sbi, fino[i], &zi), 0);
	ck_assert_ptr_nonnull(zi->node);
	ck_assert_int_eq(zi->node->pins, 1);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(zi)->i_size), ZF_BLKSIZE);
	check_data(sbi, zi, 1, fseed[i], 0);
	snprintf(want, sizeof(want), "v%llu", (unsigned long long)fseed[i]);
	if (i % 10 == 0) {
		ck_assert_int_eq(zlfs_xattr_get(sbi, zi, "user.k", v, sizeof(v), &len), 0);
		ck_assert_uint_eq(len, strlen(want));
		ck_assert(!memcmp(v, want, len));
	} else {
		ck_assert_int_eq(zlfs_xattr_get(sbi, zi, "user.k", v, sizeof(v), &len), -ENODATA);
	}
}

START_TEST(test_eviction)
{
	char *img = tu_fs_volume("inode-evict.img");
	struct zlfs_sb *sbi = mount_with(img, 8, false, ZLFS_ATIME_RELATIME, false);
	uint32_t dirs[NDIRS], mem0 = sbi->nr_inodes;   /* 0: not even the root yet */
	struct zinode *zi;

	fino = calloc(NF, sizeof(*fino));
	fseed = calloc(NF, sizeof(*fseed));
	ck_assert(fino && fseed);
	for (int k = 0; k < NDIRS; k++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "d%d", k);
		dirs[k] = mk(sbi, ZF_ROOT_INO, nm, S_IFDIR | 0755)->ino;
		ck_assert_int_eq(zlfs_iref(sbi, dirs[k]), 0);
	}
	for (int i = 0; i < NF; i++) {
		char nm[16], v[32];
		snprintf(nm, sizeof(nm), "f%d", i);
		zi = mk(sbi, dirs[i / PER_DIR], nm, S_IFREG | 0644);
		zlfs_inode_ref(sbi, zi);   /* the kernel's lookup count from the create */
		fino[i] = zi->ino;
		fseed[i] = 1000 + (uint64_t)i;
		fill(sbi, zi, 1, fseed[i], 0);
		if (i % 10 == 0) {
			snprintf(v, sizeof(v), "v%llu", (unsigned long long)fseed[i]);
			ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.k", v, strlen(v), 0), 0);
		}
		if (i % 100 == 0)
			zi->nopen++;           /* open, as some are */
		zlfs_cache_balance(sbi, true);   /* as every FUSE operation starts */
	}
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	zlfs_cache_balance(sbi, true);
	/* within bounds: the hash grew with the inodes, the node cache did not */
	ck_assert_uint_ge(sbi->nr_inodes, mem0 + NF + NDIRS);
	ck_assert_uint_gt(sbi->ino_hash_size, 4096);
	ck_assert_uint_le(sbi->nr_nodes, sbi->node_cap);
	int unloaded = 0;
	for (int i = 0; i < NF; i++) {
		zi = zlfs_ifind(sbi, fino[i]);
		ck_assert_ptr_nonnull(zi);
		ck_assert_uint_eq(zi->ino, fino[i]);
		ck_assert_uint_eq(zi->nlookup, 1);
		if (i % 100 == 0)
			ck_assert_msg(zi->node, "open file %d unloaded", i);
		unloaded += !zi->node;
	}
	ck_assert_msg(unloaded > NF / 2, "only %d of %d inodes unloaded", unloaded, NF);
	ck_assert_ptr_nonnull(zlfs_ifind(sbi, ZF_ROOT_INO)->node);

	/* every file whole, under pressure all along */
	for (int i = 0; i < NF; i++) {
		check_file(sbi, i);
		if (i % 50 == 0)
			zlfs_cache_balance(sbi, true);
	}
	/* changes to unloaded inodes: rewritten data and new xattrs */
	for (int i = 3; i < NF; i += 7) {
		ck_assert_int_eq(zlfs_iget(sbi, fino[i], &zi), 0);
		fseed[i] = 500000 + (uint64_t)i;
		fill(sbi, zi, 1, fseed[i], 0);
		if (i % 10 == 0) {
			char v[32];
			snprintf(v, sizeof(v), "v%llu", (unsigned long long)fseed[i]);
			ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.k", v, strlen(v), 0), 0);
		}
		zlfs_cache_balance(sbi, true);
	}
	/* a dirty inode is never unloaded; nor an orphan */
	int dirty = 3;
	ck_assert_int_eq(zlfs_iget(sbi, fino[dirty], &zi), 0);
	zlfs_inode_touch(zi, true, true, false);
	zlfs_inode_dirty(sbi, zi);
	zlfs_inode_unload(sbi, UINT32_MAX);
	ck_assert_ptr_nonnull(zlfs_ifind(sbi, fino[dirty])->node);
	int gone = 11;   /* neither open nor with an xattr */
	uint32_t gino = fino[gone];
	ck_assert_int_eq(zlfs_iget(sbi, gino, &zi), 0);
	char nm[16];
	snprintf(nm, sizeof(nm), "f%d", gone);
	ck_assert_int_eq(zlfs_unlink(sbi, dirs[0], nm, false), 0);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);   /* its node clean */
	zlfs_inode_unload(sbi, UINT32_MAX);
	zi = zlfs_ifind(sbi, gino);
	ck_assert(zi->orphan);
	ck_assert_ptr_nonnull(zi->node);
	check_data(sbi, zi, 1, fseed[gone], 0);
	zlfs_cache_balance(sbi, true);
	zlfs_iput(sbi, zi, 1);
	nid_freed(sbi, gino);
	for (int i = 0; i < NF; i++) {
		if (i != gone)
			check_file(sbi, i);
		if (i % 50 == 0)
			zlfs_cache_balance(sbi, true);
	}
	/* the kernel forgets them all, loaded or not */
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	zlfs_cache_balance(sbi, true);
	for (int i = 0; i < NF; i++) {
		if (i == gone)
			continue;
		zi = zlfs_ifind(sbi, fino[i]);
		ck_assert_ptr_nonnull(zi);
		if (zi->nopen)
			zi->nopen--;
		zlfs_iput(sbi, zi, 1);
		ck_assert_ptr_null(zlfs_ifind(sbi, fino[i]));
		/* the hash shrinks as they go: the ones still held stay found */
		if (i + 1 < NF && i % 7 == 0)
			ck_assert_ptr_nonnull(zlfs_ifind(sbi, fino[NF - 1]));
	}
	for (int k = 0; k < NDIRS; k++)
		zlfs_iput(sbi, zlfs_ifind(sbi, dirs[k]), 1);
	ck_assert_uint_eq(sbi->nr_inodes, 1);   /* the root, and nothing else */
	ck_assert_uint_eq(sbi->ino_hash_size, INO_HASH_MIN);
	ck_assert_ptr_nonnull(zlfs_ifind(sbi, ZF_ROOT_INO));
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	sbi = mount_with(img, 8, false, ZLFS_ATIME_RELATIME, false);
	for (int i = 0; i < NF; i++) {
		if (i == gone)
			continue;
		check_file(sbi, i);
		zlfs_cache_balance(sbi, true);
	}
	ck_assert_uint_le(sbi->nr_nodes, sbi->node_cap);
	tu_fs_unmount(sbi);
	free(fino);
	free(fseed);
	free(img);
}
END_TEST

/* ---- what stat shows ------------------------------------------------------------------------ */

START_TEST(test_stat)
{
	char *img = tu_fs_volume("inode-stat.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	static const struct { unsigned int ma, mi; uint32_t old, nw; } dev[] = {
		{ 1, 3, 0x0103, 0 },            /* both under 256: the old encoding */
		{ 255, 255, 0xffff, 0 },
		{ 0, 7, 0x0007, 0 },
		{ 256, 0, 0, 256u << 8 },       /* the new: minor low byte, major, minor high bits */
		{ 8, 256, 0, (8u << 8) | (1u << 20) },
		{ 259, 70000, 0, (70000u & 0xff) | (259u << 8) | ((70000u & ~0xffu) << 12) },
		{ 4095, 0xfffff, 0, 0xff | (4095u << 8) | (0xfff00u << 12) },
	};
	uint32_t dino[7];
	struct stat st;
	struct zinode *zi;

	for (int i = 0; i < 7; i++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "dev%d", i);
		ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, nm, (i & 1 ? S_IFBLK : S_IFCHR) | 0600,
					     makedev(dev[i].ma, dev[i].mi), NULL, &zi), 0);
		dino[i] = zi->ino;
		unsigned int x = zf_extra_isize_words(zi_raw(zi));   /* the numbers follow */
		ck_assert_uint_eq(zf_le32_to_cpu(zi_raw(zi)->i_addr[x]), dev[i].old);
		ck_assert_uint_eq(zf_le32_to_cpu(zi_raw(zi)->i_addr[x + 1]), dev[i].nw);
		zlfs_inode_stat(sbi, zi, &st);
		ck_assert_uint_eq(major(st.st_rdev), dev[i].ma);
		ck_assert_uint_eq(minor(st.st_rdev), dev[i].mi);
		ck_assert_uint_eq(st.st_blocks, 0);
		/* a new number over an old one */
		zlfs_inode_set_rdev(zi, makedev(dev[6 - i].ma, dev[6 - i].mi));
		zlfs_inode_stat(sbi, zi, &st);
		ck_assert_uint_eq(st.st_rdev, makedev(dev[6 - i].ma, dev[6 - i].mi));
		zlfs_inode_set_rdev(zi, makedev(dev[i].ma, dev[i].mi));
	}
	/* st_blocks: 512-byte sectors of the blocks besides the inode */
	zi = mk(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);
	uint32_t fi = zi->ino;
	zlfs_inode_stat(sbi, zi, &st);
	ck_assert_uint_eq(st.st_blocks, 0);
	ck_assert_uint_eq(st.st_size, 0);
	ck_assert_uint_eq(st.st_blksize, ZF_BLKSIZE);
	ck_assert_uint_eq(st.st_ino, fi);
	fill(sbi, zi, 3, 1, 0);
	zlfs_inode_stat(sbi, zi, &st);
	ck_assert_uint_eq(st.st_blocks, 3 * 8);
	ck_assert_uint_eq(st.st_size, 3 * ZF_BLKSIZE);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0644);
	ck_assert_uint_eq(st.st_nlink, 1);
	/* touch: each time alone */
	struct zf_inode *ri = zi_raw(zi);
	ri->i_atime = ri->i_mtime = ri->i_ctime = 0;
	zlfs_inode_touch(zi, true, false, false);
	ck_assert_uint_ne(zf_le64_to_cpu(ri->i_mtime), 0);
	ck_assert_uint_eq(zf_le64_to_cpu(ri->i_ctime), 0);
	ck_assert_uint_eq(zf_le64_to_cpu(ri->i_atime), 0);
	zlfs_inode_touch(zi, false, true, false);
	ck_assert_uint_ne(zf_le64_to_cpu(ri->i_ctime), 0);
	ck_assert_uint_eq(zf_le64_to_cpu(ri->i_atime), 0);
	zlfs_inode_touch(zi, false, false, true);
	ck_assert_uint_ne(zf_le64_to_cpu(ri->i_atime), 0);
	zlfs_inode_stat(sbi, zi, &st);
	ck_assert_uint_eq(st.st_atim.tv_sec, zf_le64_to_cpu(ri->i_atime));
	ck_assert_uint_eq(st.st_mtim.tv_nsec, zf_le32_to_cpu(ri->i_mtime_nsec));
	zlfs_inode_dirty(sbi, zi);
	/* file types */
	ck_assert_uint_eq(zlfs_ftype(S_IFREG), ZF_FT_REG_FILE);
	ck_assert_uint_eq(zlfs_ftype(S_IFDIR | 0755), ZF_FT_DIR);
	ck_assert_uint_eq(zlfs_ftype(S_IFCHR), ZF_FT_CHRDEV);
	ck_assert_uint_eq(zlfs_ftype(S_IFBLK), ZF_FT_BLKDEV);
	ck_assert_uint_eq(zlfs_ftype(S_IFIFO), ZF_FT_FIFO);
	ck_assert_uint_eq(zlfs_ftype(S_IFSOCK), ZF_FT_SOCK);
	ck_assert_uint_eq(zlfs_ftype(S_IFLNK), ZF_FT_SYMLINK);
	ck_assert_uint_eq(zlfs_ftype(0), ZF_FT_UNKNOWN);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	/* the same from the device, through zlfs_inode_attr too */
	sbi = tu_fs_mount(img, 0);
	for (int i = 0; i < 7; i++) {
		struct zattr a;
		ck_assert_int_eq(zlfs_inode_attr(sbi, dino[i], &a), 0);
		zlfs_attr_stat(&a, &st);
		ck_assert_uint_eq(st.st_rdev, makedev(dev[i].ma, dev[i].mi));
		ck_assert(i & 1 ? S_ISBLK(st.st_mode) : S_ISCHR(st.st_mode));
	}
	ck_assert_int_eq(zlfs_iget(sbi, fi, &zi), 0);
	zlfs_inode_stat(sbi, zi, &st);
	ck_assert_uint_eq(st.st_blocks, 3 * 8);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/* ---- atime ---------------------------------------------------------------------------------- */

static void set_times(struct zinode *zi, uint64_t a, uint64_t m, uint64_t c)
{
	struct zf_inode *ri = zi_raw(zi);

	ri->i_atime = zf_cpu_to_le64(a);
	ri->i_mtime = zf_cpu_to_le64(m);
	ri->i_ctime = zf_cpu_to_le64(c);
	ri->i_atime_nsec = ri->i_mtime_nsec = ri->i_ctime_nsec = 0;
}

START_TEST(test_atime)
{
	char *img = tu_fs_volume("inode-atime.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *f = mk(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);
	struct zinode *d = mk(sbi, ZF_ROOT_INO, "d", S_IFDIR | 0755);
	uint32_t fi = f->ino, di = d->ino;
	uint64_t now = (uint64_t)time(NULL);

	/* relatime (the default): after a change since the last access ... */
	set_times(f, now - 100, now - 50, now - 200);
	ck_assert(zlfs_atime_due(sbi, f));
	ck_assert_int_eq(zlfs_inode_accessed(sbi, f), 1);
	uint64_t at = zf_le64_to_cpu(zi_raw(f)->i_atime);
	ck_assert_uint_ge(at, now - 1);
	ck_assert(f->node->dirty);
	/* ... then not again until the next change ... */
	ck_assert(!zlfs_atime_due(sbi, f));
	ck_assert_int_eq(zlfs_inode_accessed(sbi, f), 0);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(f)->i_atime), at);
	set_times(f, now - 100, now - 200, now - 50);   /* a ctime change counts too */
	ck_assert(zlfs_atime_due(sbi, f));
	/* ... or a day later */
	set_times(f, now - 100, now - 300, now - 300);
	ck_assert(!zlfs_atime_due(sbi, f));
	set_times(f, now - 24 * 3600 - 5, now - 30 * 3600, now - 30 * 3600);
	ck_assert(zlfs_atime_due(sbi, f));
	/* FS_NOATIME_FL: never */
	ck_assert_int_eq(zlfs_flags_set(sbi, f, FS_NOATIME_FL), 0);
	ck_assert(!zlfs_atime_due(sbi, f));
	ck_assert_int_eq(zlfs_inode_accessed(sbi, f), 0);
	ck_assert_int_eq(zlfs_flags_set(sbi, f, 0), 0);
	set_times(d, now - 100, now - 50, now - 50);
	ck_assert(zlfs_atime_due(sbi, d));
	tu_fs_unmount(sbi);

	/* strictatime: every read (that changes atime) */
	sbi = mount_with(img, 0, false, ZLFS_ATIME_STRICT, false);
	ck_assert_int_eq(zlfs_iget(sbi, fi, &f), 0);
	set_times(f, now - 10, now - 300, now - 300);
	ck_assert(zlfs_atime_due(sbi, f));
	ck_assert_int_eq(zlfs_inode_accessed(sbi, f), 1);
	tu_fs_unmount(sbi);

	/* noatime: never */
	sbi = mount_with(img, 0, false, ZLFS_ATIME_NOATIME, false);
	ck_assert_int_eq(zlfs_iget(sbi, fi, &f), 0);
	set_times(f, now - 100, now - 50, now - 50);
	ck_assert(!zlfs_atime_due(sbi, f));
	ck_assert_int_eq(zlfs_inode_accessed(sbi, f), 0);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(f)->i_atime), now - 100);
	tu_fs_unmount(sbi);

	/* nodiratime: files yes, directories no */
	sbi = mount_with(img, 0, false, ZLFS_ATIME_RELATIME, true);
	ck_assert_int_eq(zlfs_iget(sbi, fi, &f), 0);
	ck_assert_int_eq(zlfs_iget(sbi, di, &d), 0);
	set_times(f, now - 100, now - 50, now - 50);
	set_times(d, now - 100, now - 50, now - 50);
	ck_assert(zlfs_atime_due(sbi, f));
	ck_assert(!zlfs_atime_due(sbi, d));
	ck_assert_int_eq(zlfs_inode_accessed(sbi, d), 0);
	tu_fs_unmount(sbi);

	/* read-only: never */
	sbi = mount_with(img, 0, true, ZLFS_ATIME_STRICT, false);
	ck_assert_int_eq(zlfs_iget(sbi, fi, &f), 0);
	set_times(f, now - 100, now - 50, now - 50);
	ck_assert(!zlfs_atime_due(sbi, f));
	ck_assert_int_eq(zlfs_inode_accessed(sbi, f), 0);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/* ---- numbers that name no inode ---------------------------------------------------------------- */

START_TEST(test_not_inodes)
{
	char *img = tu_fs_volume("inode-not.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *f = mk(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644), *zi;
	struct zattr a;

	fill(sbi, f, 1000, 3, 0);
	xattr_in_node(sbi, f);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	uint32_t fi = f->ino, mem0 = sbi->nr_inodes;
	uint32_t bad[] = {
		0, 1, 2, sbi->max_nid, sbi->max_nid + 1, UINT32_MAX,
		zf_le32_to_cpu(zi_raw(f)->i_xattr_nid),   /* an xattr node */
		zf_le32_to_cpu(zi_raw(f)->i_nid[0]),      /* a direct node */
		fi + 100,                                 /* a free nid */
	};
	nid_freed(sbi, fi + 100);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(zlfs_iget(sbi, bad[i], &zi) == -EUCLEAN, "iget %u", bad[i]);
		ck_assert_msg(zlfs_inode_attr(sbi, bad[i], &a) == -EUCLEAN, "attr %u", bad[i]);
		ck_assert_ptr_null(zlfs_ifind(sbi, bad[i]));
	}
	ck_assert_uint_eq(sbi->nr_inodes, mem0);
	/* a stale number is the caller's error: the volume stays writable */
	ck_assert_int_eq(zlfs_writable(sbi), 0);
	ck_assert_int_eq(zlfs_iget(sbi, fi, &zi), 0);
	ck_assert_ptr_eq(zi, f);
	/* once freed, its number names nothing */
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "f", false), 0);
	ck_assert_int_eq(zlfs_iget(sbi, fi, &zi), -EUCLEAN);
	ck_assert_int_eq(zlfs_inode_attr(sbi, fi, &a), -EUCLEAN);
	ck_assert_int_eq(zlfs_writable(sbi), 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

/*
 * Two daemons that start from the same state draw different generations
 * (regression: an unseeded random() gave every run the same sequence, so
 * an inode number reused after a crash came back with its old generation
 * and a stale file handle was not stale).  Two children forked from one
 * mount each make an inode: with one shared random() state they agree.
 */
static uint32_t gen_in_child(struct zlfs_sb *sbi)
{
	int fd[2];
	uint32_t g = 0;

	ck_assert_int_eq(pipe(fd), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct zinode *zi;
		uint32_t v = 0;
		if (!zlfs_inode_new(sbi, S_IFREG | 0600, 0, 0, ZF_ROOT_INO, &zi))
			v = zf_le32_to_cpu(zi_raw(zi)->i_generation);
		_exit(write(fd[1], &v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : 1);
	}
	close(fd[1]);
	ck_assert_int_eq(read(fd[0], &g, sizeof(g)), (ssize_t)sizeof(g));
	close(fd[0]);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return g;
}

START_TEST(test_generation_per_run)
{
	char *img = tu_fs_volume("inode-gen.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	uint32_t a = gen_in_child(sbi), b = gen_in_child(sbi), c = gen_in_child(sbi);

	/* three draws of 32 bits agreeing by chance: 2^-64 */
	ck_assert_msg(!(a == b && b == c), "every run draws generation %u", a);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/*
 * inode_checksum and roll-forward: a fsynced new file whose inode block is
 * damaged on the device (one byte of its name copy, the checksum left) is
 * where the chain ends, not what the mount replays; undamaged, the same
 * file comes back (so the damage is what made the difference).
 */
START_TEST(test_fsync_chain_csum)
{
	bool damage = _i;
	char *img = tu_fs_volume("inode-csum.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *g;

	ck_assert(zlfs_feat(sbi) & ZF_FEAT_INODE_CHKSUM);   /* mkfs.zlfs's default */
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	g = mk(sbi, ZF_ROOT_INO, "g", S_IFREG | 0644);
	fill(sbi, g, 3, 5, 0);
	ck_assert_int_eq(zlfs_file_fsync(sbi, g, false), 0);
	uint32_t at = zlfs_nat(sbi, g->ino)->blkaddr;
	ck_assert_int_eq(zlfs_shutdown(sbi, ZLFS_GOING_DOWN_NOSYNC), 0);   /* the crash */
	tu_fs_unmount(sbi);
	if (damage) {
		uint8_t blk[ZF_BLKSIZE];
		tu_blk_read(img, at, blk);
		ck_assert_uint_eq(zf_le32_to_cpu(((struct zf_node *)blk)->footer.nid),
				  zf_le32_to_cpu(((struct zf_node *)blk)->footer.ino));
		blk[offsetof(struct zf_inode, i_name) + 1] ^= 0x40;
		tu_blk_write(img, at, blk);
	}
	sbi = tu_fs_mount(img, 0);
	ck_assert(present(sbi, ZF_ROOT_INO, "g") == !damage);
	ck_assert_int_eq(sbi->fatal, 0);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	unlink(img);
	free(img);
}
END_TEST

/* The file at name reads exactly want[0, len). */
static void reads_as(struct zlfs_sb *sbi, const char *name, const char *want, size_t len)
{
	struct zinode *zi;
	static char got[16384];
	size_t n;

	ck_assert_int_eq(zlfs_iget(sbi, tu_lookup(sbi, ZF_ROOT_INO, name), &zi), 0);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, got, sizeof(got), 0, &n), 0);
	ck_assert_msg(n == len && !memcmp(got, want, len), "%s: %zu bytes back, %zu written", name, n,
		      len);
}

/*
 * Roll-forward of inline files (the kernel's recover_inline_data): a new
 * file written inside its inode and fsynced (with an inline xattr), a
 * checkpointed inline file appended inside the area, one grown past it
 * (converted to a block) each come back after the crash as fsync left them.
 */
START_TEST(test_fsync_inline)
{
	char *img = tu_fs_volume("inode-inline-rf.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	static char data[8192];
	struct zinode *a, *b, *c;
	char v[16];
	size_t len;

	tu_fill(data, sizeof(data), 11);
	b = mk(sbi, ZF_ROOT_INO, "b", S_IFREG | 0644);
	c = mk(sbi, ZF_ROOT_INO, "c", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_file_write(sbi, b, data, 100, 0), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, c, data, 100, 0), 0);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	a = mk(sbi, ZF_ROOT_INO, "a", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_file_write(sbi, a, data, 300, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, a, "user.k", "value", 5, 0), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, b, data + 100, 200, 100), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, c, data + 100, 6000, 100), 0);
	ck_assert(zi_raw(a)->i_inline & ZF_INLINE_DATA);
	ck_assert(zi_raw(b)->i_inline & ZF_INLINE_DATA);
	ck_assert(!(zi_raw(c)->i_inline & ZF_INLINE_DATA));
	ck_assert_int_eq(zlfs_file_fsync(sbi, a, false), 0);
	ck_assert_int_eq(zlfs_file_fsync(sbi, b, false), 0);
	ck_assert_int_eq(zlfs_file_fsync(sbi, c, false), 0);
	ck_assert_int_eq(zlfs_shutdown(sbi, ZLFS_GOING_DOWN_NOSYNC), 0);   /* the crash */
	tu_fs_unmount(sbi);
	sbi = tu_fs_mount(img, 0);
	reads_as(sbi, "a", data, 300);
	reads_as(sbi, "b", data, 300);
	reads_as(sbi, "c", data, 6100);
	ck_assert_int_eq(zlfs_iget(sbi, tu_lookup(sbi, ZF_ROOT_INO, "a"), &a), 0);
	ck_assert(zi_raw(a)->i_inline & ZF_INLINE_DATA);
	ck_assert_int_eq(zlfs_xattr_get(sbi, a, "user.k", v, sizeof(v), &len), 0);
	ck_assert(len == 5 && !memcmp(v, "value", 5));
	ck_assert_int_eq(sbi->fatal, 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	unlink(img);
	free(img);
}
END_TEST

/*
 * A file grown out of its inode, cut during the fsync that follows: block
 * 0 holds the bytes the inode held, and the inode going out no longer has
 * them.  Had that inode landed in the chain and block 0 not (a zoned
 * device keeps any prefix of each zone's unflushed writes), the bytes the
 * first fsync promised would read as zeros after roll-forward (found by
 * the crash states' gc workload under load).  For each seed of the cut
 * and a flush failing first or second in that fsync, the cut keeps them.
 */
START_TEST(test_fsync_inline_converted_cut)
{
	static char data[4096], got[4096];
	const uint64_t far = 977ull * ZF_BLKSIZE;    /* in the first direct node */
	uint32_t seed = 1 + (uint32_t)_i / 2, nth = 1 + (uint32_t)_i % 2;
	char *img = tu_fs_volume("inode-inline-cut.img"), spec[1200];
	struct zinode *f;
	size_t n;

	tu_fill(data, sizeof(data), 13);
	snprintf(spec, sizeof(spec), "%s?powercut,powercut_seed=%u", img, seed);
	struct zlfs_sb *sbi = tu_fs_mount(spec, 0);
	f = mk(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_file_write(sbi, f, data, 100, 0), 0);
	ck_assert_int_eq(zlfs_file_fsync(sbi, f, false), 0);
	ck_assert(zi_raw(f)->i_inline & ZF_INLINE_DATA);
	ck_assert_int_eq(zlfs_file_write(sbi, f, data, sizeof(data), far), 0);
	ck_assert(!(zi_raw(f)->i_inline & ZF_INLINE_DATA));
	ck_assert_int_eq(zlfs_zdev_fault_arm(sbi->dev, ZLFS_FAULT_FLUSH, nth, true), 0);
	int synced = zlfs_file_fsync(sbi, f, false) == 0;
	ck_assert_int_eq(zlfs_zdev_powercut(sbi->dev), 0);
	sbi->fatal = -EIO;         /* the machine is off: no checkpoint at unmount */
	pthread_mutex_unlock(&sbi->lock);
	zlfs_unmount(sbi);

	sbi = tu_fs_mount(img, 0);
	ck_assert_int_eq(zlfs_iget(sbi, tu_lookup(sbi, ZF_ROOT_INO, "f"), &f), 0);
	uint64_t size = zf_le64_to_cpu(zi_raw(f)->i_size);
	ck_assert_msg(size == 100 || size == far + sizeof(data), "seed %u: size %llu", seed,
		      (unsigned long long)size);
	ck_assert(!synced || size == far + sizeof(data));
	ck_assert_int_eq(zlfs_file_read(sbi, f, got, 100, 0, &n), 0);
	ck_assert_msg(n == 100 && !memcmp(got, data, 100),
		      "seed %u, flush %u failing: the fsynced bytes did not come back", seed, nth);
	ck_assert_int_eq(sbi->fatal, 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	unlink(img);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("inode");
	TCase *tc = tcase_create("inode");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_new_inode);
	tcase_add_test(tc, test_generation_per_run);
	tcase_add_test(tc, test_lookup_counts);
	tcase_add_loop_test(tc, test_unlinked_in_use, 0, KINDS);
	tcase_add_test(tc, test_links);
	tcase_add_loop_test(tc, test_orphan_crash, 0, CRASHES);
	tcase_add_test(tc, test_eviction);
	tcase_add_test(tc, test_stat);
	tcase_add_loop_test(tc, test_fsync_chain_csum, 0, 2);
	tcase_add_test(tc, test_fsync_inline);
	tcase_add_loop_test(tc, test_fsync_inline_converted_cut, 0, 32);
	tcase_add_test(tc, test_atime);
	tcase_add_test(tc, test_not_inodes);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
