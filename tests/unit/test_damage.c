/*
 * test_damage.c - damaged and crafted images (the filesystem as a whole):
 * "a filesystem must never crash, hang or write outside its areas because
 * an image is damaged or crafted".  In-process, without FUSE.
 *
 * Covers:
 *   - one small volume populated once by the filesystem itself (inline and
 *     multi-block directories, inline, small, large and sparse files with
 *     direct and indirect nodes, symlinks, a hard link, a FIFO, xattrs
 *     inline and in an xattr node, an ACL, a section GC may clean),
 *     unmounted clean;
 *   - rounds of seeded damage to a copy of it: random bytes, words, bit
 *     flips, blocks zeroed, filled or copied over from another block, in
 *     both superblocks, both checkpoint packs (heads, payload, summaries
 *     and their NAT/SIT journals, tails), SIT, NAT, SSA, inode, direct,
 *     indirect and xattr nodes, xattr entries, dentry blocks, inline
 *     dentries, data and symlink blocks, and the emulated device's zone
 *     state; edge values (0, 1, all ones, sign bits, the layout's limits,
 *     other nids and addresses) in the fields that steer reads, with the
 *     checkpoint and superblock checksums recomputed in most rounds so
 *     the damage gets past them; crafted orphan lists, crafted fsync
 *     chains (roll-forward) and xattr entries that run past the buffer;
 *   - each round in a child process: mount (read-write in most rounds,
 *     read-only in some, a small cache in some, background GC cleaning at
 *     once in some), walk everything as FUSE would (readdir in batches,
 *     lookup, getattr, open, read every file, readlink, list and get
 *     xattrs); read-write rounds also change what the walk found (set and
 *     remove xattrs of every inode that has some, create and remove an
 *     entry in every directory, write and truncate every larger file) and
 *     random entries (create, write, fsync, fallocate, truncate, link,
 *     unlink, rmdir, rename over and exchange), checkpoint, forget and
 *     unmount, and some mount the result again and walk it;
 *   - any error is fine; a signal (sanitizer aborts included), a non-zero
 *     exit (LeakSanitizer), a child still running after the timeout, or a
 *     write where the layout of an undamaged superblock has nothing to
 *     write (the superblock area, unused SIT and SSA blocks) fails the
 *     test, naming the seed, the round, the damage and the last step.
 *
 * Environment: ZLFS_DAMAGE_SEED (a fixed default), ZLFS_DAMAGE_ROUNDS (400),
 * ZLFS_DAMAGE_ROUND=N (that round only, to reproduce one), ZLFS_DAMAGE_TIMEOUT
 * (seconds per round, 60), ZLFS_DAMAGE_VERBOSE=1 (every round's damage),
 * ZLFS_DAMAGE_SKIP=class,... (leave classes of damage out, to look past a
 * known bug; the names are cls_name[]'s, "xattr-entry" say; rounds then
 * differ, so reproduce with the same setting).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "segment.h"
#include "gc.h"
#include "node.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "dir.h"
#include "xattr.h"
#include "testutil.h"
#include "fsutil.h"

#define DEFAULT_SEED   0x5eedda4a6e2024ull
#define DEFAULT_ROUNDS 400
#define DEFAULT_TIMEOUT 60

/* ---- seeded randomness ------------------------------------------------------------------ */

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rn(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)(rnd(s) % n) : 0;
}

/* ---- what can be damaged ------------------------------------------------------------------ */

enum {
	C_SB, C_CP, C_CPSUM, C_SIT, C_NAT, C_SSA, C_INODE, C_DNODE, C_IND, C_XNODE, C_XATTR,
	C_DENTRY, C_INLDENT, C_DATA, C_LNK, C_ZST, C_ORPHAN, C_CHAIN, C_XEND, C_NCLS
};
static const char *const cls_name[C_NCLS] = {
	"superblock", "checkpoint", "cp-summary", "SIT", "NAT", "SSA", "inode", "direct-node",
	"indirect-node", "xattr-node", "xattr-entry", "dentry-block", "inline-dentry", "data",
	"symlink-data", "zone-state", "crafted-orphans", "crafted-fsync-chain", "crafted-xattr-end",
};
/* how often each class is picked (classes without targets are skipped) */
static const unsigned int cls_weight[C_NCLS] = {
	6, 12, 6, 8, 10, 5, 14, 6, 3, 3, 5, 8, 5, 2, 2, 3, 3, 5, 2,
};

#define FL_CRC  1    /* a checkpoint head or tail: its crc may be recomputed */
#define FL_SB   2    /* a superblock: its crc may be recomputed */
#define FL_TAIL 4    /* a checkpoint head field: the same change in the tail (aux) */
#define FL_ZST  8    /* blk is a byte offset in IMAGE.zst, not a block */

enum { H_ANY = 0, H_MODE, H_BITS, H_WP, H_ZFLAGS, H_FOOTER_FLAG };

struct fld {
	uint32_t blk, aux;
	uint16_t off;
	uint8_t width, flags, hint;
	char label[48];
};

struct blkt {
	uint32_t blk, aux;
	uint8_t flags;
	char label[40];
};

struct tlist {
	struct fld *f;
	uint32_t nf, capf;
	struct blkt *b;
	uint32_t nb, capb;
};

static struct tlist tl[C_NCLS];

static struct {
	char *img, *work, *work_zst, *log, *pristine_zst;
	struct zf_super sb;
	struct zf_layout lay;
	uint32_t max_nid;
	int cur_pack;
	uint32_t pack_head[2];
	uint64_t ctxv[48];
	unsigned int nctx;
	uint32_t *inos, ninos;           /* live inode numbers */
	uint32_t *node_addr, nnodes;     /* live node blocks */
	uint32_t *reg_inode, nreg;       /* blocks of regular files' inodes */
	uint32_t *dir_inode, ndir;
	uint32_t *dnode, ndnode;         /* direct node blocks */
	uint32_t *other_nid, nother;     /* nids of nodes that are not inodes */
	/* the emulated device's zones, from IMAGE.zst */
	uint32_t nr_zones, nr_conv;
	uint64_t zone_size, zone_cap;
	uint32_t gc_candidates;          /* sections GC may clean */
	/* xattr buffers: where the last entry is, for crafted-xattr-end */
	struct { uint32_t ino, iaddr, ioff, xaddr, inl, cap, last; uint8_t last_nl; } xb[8];
	uint32_t nxb;
	/* areas a volume with this superblock never writes */
	struct { uint32_t start, n; const char *what; } keep[4];
	unsigned int nkeep;
} V;

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	ck_assert_ptr_nonnull(q);
	return q;
}

static void push32(uint32_t **a, uint32_t *n, uint32_t v)
{
	if (!(*n & (*n - 1)) || !*n)
		*a = xrealloc(*a, (size_t)(*n ? *n * 2 : 16) * sizeof(**a));
	(*a)[(*n)++] = v;
}

__attribute__((format(printf, 8, 9)))
static void add_fld(unsigned int c, uint32_t blk, uint32_t off, unsigned int width, uint8_t flags,
		    uint32_t aux, uint8_t hint, const char *fmt, ...)
{
	struct tlist *t = &tl[c];
	va_list ap;

	if (t->nf == t->capf) {
		t->capf = t->capf ? t->capf * 2 : 64;
		t->f = xrealloc(t->f, t->capf * sizeof(*t->f));
	}
	struct fld *f = &t->f[t->nf++];
	f->blk = blk;
	f->aux = aux;
	f->off = (uint16_t)off;
	f->width = (uint8_t)width;
	f->flags = flags;
	f->hint = hint;
	va_start(ap, fmt);
	vsnprintf(f->label, sizeof(f->label), fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 5, 6)))
static void add_blk(unsigned int c, uint32_t blk, uint8_t flags, uint32_t aux, const char *fmt, ...)
{
	struct tlist *t = &tl[c];
	va_list ap;

	for (uint32_t i = 0; i < t->nb; i++)
		if (t->b[i].blk == blk)
			return;
	if (t->nb == t->capb) {
		t->capb = t->capb ? t->capb * 2 : 64;
		t->b = xrealloc(t->b, t->capb * sizeof(*t->b));
	}
	struct blkt *b = &t->b[t->nb++];
	b->blk = blk;
	b->aux = aux;
	b->flags = flags;
	va_start(ap, fmt);
	vsnprintf(b->label, sizeof(b->label), fmt, ap);
	va_end(ap);
}

#define MSZ(type, member) ((unsigned int)sizeof(((type *)0)->member))
#define FLD(c, blk, base, type, member, flags, aux, hint, ...) \
	add_fld(c, blk, (base) + (uint32_t)offsetof(type, member), MSZ(type, member), flags, aux, hint, \
		__VA_ARGS__)

/* ---- image I/O ------------------------------------------------------------------------------ */

static void rd(int fd, uint32_t blk, void *buf)
{
	ssize_t n = pread(fd, buf, ZF_BLKSIZE, (off_t)blk * ZF_BLKSIZE);
	if (n != ZF_BLKSIZE)
		memset(buf, 0, ZF_BLKSIZE);
}

static void wr(int fd, uint32_t blk, const void *buf)
{
	ck_assert_int_eq(pwrite(fd, buf, ZF_BLKSIZE, (off_t)blk * ZF_BLKSIZE), ZF_BLKSIZE);
}

static uint64_t get_le(const uint8_t *p, unsigned int w)
{
	uint64_t v = 0;
	for (unsigned int i = 0; i < w; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put_le(uint8_t *p, unsigned int w, uint64_t v)
{
	for (unsigned int i = 0; i < w; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Copy a file byte for byte, holes kept as holes (the image is sparse). */
static void copy_file(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct stat st;

	ck_assert_msg(in >= 0 && out >= 0, "copy %s -> %s: %s", src, dst, strerror(errno));
	ck_assert_int_eq(fstat(in, &st), 0);
	ck_assert_int_eq(ftruncate(out, st.st_size), 0);
	off_t off = 0;
	while (off < st.st_size) {
		off_t data = lseek(in, off, SEEK_DATA);
		if (data < 0)
			break;
		off_t end = lseek(in, data, SEEK_HOLE);
		ck_assert_int_ge(end, data);
		loff_t a = data, b = data;
		while (a < end) {
			ssize_t n = copy_file_range(in, &a, out, &b, (size_t)(end - a), 0);
			if (n <= 0) {   /* no copy_file_range here: read and write */
				char buf[65536];
				ssize_t r = pread(in, buf, sizeof(buf) < (size_t)(end - a) ? sizeof(buf)
							  : (size_t)(end - a), a);
				ck_assert_int_gt(r, 0);
				ck_assert_int_eq(pwrite(out, buf, (size_t)r, b), r);
				a += r;
				b += r;
			}
		}
		off = end;
	}
	close(in);
	close(out);
}

/* A signature of the non-zero blocks of [start, start + n). */
static uint64_t region_sig(int fd, uint32_t start, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	static uint8_t buf[ZF_BLKSIZE];
	off_t off = (off_t)start * ZF_BLKSIZE, end = (off_t)(start + n) * ZF_BLKSIZE;

	while (off < end) {
		off_t data = lseek(fd, off, SEEK_DATA);
		if (data < 0 || data >= end)
			break;
		off_t hole = lseek(fd, data, SEEK_HOLE);
		if (hole > end)
			hole = end;
		for (off_t o = data & ~(off_t)(ZF_BLKSIZE - 1); o < hole; o += ZF_BLKSIZE) {
			if (pread(fd, buf, ZF_BLKSIZE, o) != ZF_BLKSIZE)
				break;
			bool zero = true;
			for (unsigned int i = 0; i < ZF_BLKSIZE && zero; i++)
				zero = !buf[i];
			if (zero)
				continue;
			h = (h ^ (uint64_t)o) * 0x100000001b3ull;
			for (unsigned int i = 0; i < ZF_BLKSIZE; i += 8)
				h = (h ^ get_le(buf + i, 8)) * 0x100000001b3ull;
		}
		off = hole;
	}
	return h;
}

/* ---- the volume ------------------------------------------------------------------------------ */

static struct zinode *mk(struct zlfs_sb *sbi, uint32_t parent, const char *name, mode_t mode,
			 const char *link)
{
	struct zlfs_cred c = { 0, 0, 0 };
	struct zinode *zi;
	int ret = zlfs_create(sbi, &c, parent, name, mode, 0, link, &zi);
	ck_assert_msg(ret == 0, "create %s: %d", name, ret);
	return zi;
}

static void put_data(struct zlfs_sb *sbi, struct zinode *zi, uint64_t off, size_t len, uint64_t seed)
{
	char *buf = malloc(len);
	ck_assert_ptr_nonnull(buf);
	tu_fill(buf, len, seed);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, buf, len, off), 0);
	free(buf);
}

static uint32_t mkfile(struct zlfs_sb *sbi, uint32_t parent, const char *name, size_t len,
		       uint64_t seed)
{
	struct zinode *zi = mk(sbi, parent, name, S_IFREG | 0644, NULL);
	uint32_t ino = zi->ino;
	if (len)
		put_data(sbi, zi, 0, len, seed);
	zlfs_iput(sbi, zi, 0);
	return ino;
}

static void setx(struct zlfs_sb *sbi, uint32_t ino, const char *name, size_t len, uint64_t seed)
{
	struct zinode *zi;
	char val[1024];

	ck_assert_uint_le(len, sizeof(val));
	tu_fill(val, len, seed);
	ck_assert_int_eq(zlfs_iget(sbi, ino, &zi), 0);
	int ret = zlfs_xattr_set(sbi, zi, name, val, len, 0);
	ck_assert_msg(ret == 0, "setxattr %s: %d", name, ret);
	zlfs_iput(sbi, zi, 0);
}

static void build_volume(const char *img)
{
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi;
	char name[128];

	zi = mk(sbi, ZF_ROOT_INO, "d", S_IFDIR | 0755, NULL);
	uint32_t d = zi->ino;
	zlfs_iput(sbi, zi, 0);
	zi = mk(sbi, d, "sub", S_IFDIR | 0700, NULL);
	uint32_t sub = zi->ino;
	zlfs_iput(sbi, zi, 0);
	zi = mk(sbi, sub, "deeper", S_IFDIR | 0755, NULL);
	uint32_t deeper = zi->ino;
	zlfs_iput(sbi, zi, 0);

	mkfile(sbi, d, "small", 100, 1);                  /* stays inline */
	uint32_t f1 = mkfile(sbi, d, "f1", 12288 + 17, 2);
	mkfile(sbi, sub, "f2", 65536, 3);
	mkfile(sbi, deeper, "empty", 0, 0);
	mkfile(sbi, ZF_ROOT_INO, "top", 5000, 4);

	/* past the inode's 923 addresses: a direct node; a block at 16 MiB: an indirect node */
	zi = mk(sbi, d, "large", S_IFREG | 0644, NULL);
	uint32_t large = zi->ino;
	put_data(sbi, zi, 0, 5u << 20, 5);
	put_data(sbi, zi, 16u << 20, 4096, 6);
	zlfs_iput(sbi, zi, 0);

	/*
	 * A section GC may pick: a file past a zone's worth, truncated, leaves
	 * the full first section of the data log mostly invalid.
	 */
	zi = mk(sbi, ZF_ROOT_INO, "filler", S_IFREG | 0644, NULL);
	for (uint32_t m = 0; m < 20; m++)
		put_data(sbi, zi, (uint64_t)m << 20, 1u << 20, 50 + m);
	ck_assert_int_eq(zlfs_file_truncate(sbi, zi, 3u << 20), 0);
	zlfs_iput(sbi, zi, 0);
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);

	zlfs_iput(sbi, mk(sbi, d, "link", S_IFLNK | 0777, "sub/f2"), 0);
	memset(name, 'p', 100);
	name[100] = 0;
	char target[400];
	snprintf(target, sizeof(target), "%s/%s/%s/x", name, name, name);
	zlfs_iput(sbi, mk(sbi, ZF_ROOT_INO, "longlink", S_IFLNK | 0777, target), 0);
	zlfs_iput(sbi, mk(sbi, sub, "fifo", S_IFIFO | 0644, NULL), 0);

	/* a hard link */
	ck_assert_int_eq(zlfs_link(sbi, f1, sub, "f1-again", &zi), 0);
	zlfs_iput(sbi, zi, 0);

	/* xattrs: inline on f1, an xattr node on x, an ACL on the directory */
	setx(sbi, f1, "user.tag", 8, 7);
	uint32_t x = mkfile(sbi, ZF_ROOT_INO, "x", 3000, 8);
	setx(sbi, x, "user.a", 5, 9);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "user.big%d", i);
		setx(sbi, x, name, 200 + (size_t)i * 7, 10 + (uint64_t)i);
	}
	setx(sbi, x, "trusted.t", 33, 30);
	setx(sbi, large, "user.l", 16, 31);
	{
		/* kernel ACL xattr form: version 2, {tag, perm, id} */
		uint8_t acl[4 + 3 * 8];
		struct { uint16_t tag, perm; uint32_t id; } e[3] = {
			{ 0x01, 7, 0xffffffff }, { 0x04, 5, 0xffffffff }, { 0x20, 5, 0xffffffff },
		};
		uint32_t ver = 2;
		memcpy(acl, &ver, 4);
		memcpy(acl + 4, e, sizeof(e));
		ck_assert_int_eq(zlfs_iget(sbi, d, &zi), 0);
		ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", acl, sizeof(acl), 0),
				 0);
		zlfs_iput(sbi, zi, 0);
	}

	/* a directory with real dentry blocks: short names, long ones (several slots), dirs */
	zi = mk(sbi, ZF_ROOT_INO, "big", S_IFDIR | 0755, NULL);
	uint32_t big = zi->ino;
	zlfs_iput(sbi, zi, 0);
	for (int i = 0; i < 260; i++) {
		if (i % 40 == 7)
			snprintf(name, sizeof(name), "long-name-%03d-%s", i,
				 "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ");
		else
			snprintf(name, sizeof(name), "e%03d", i);
		if (i % 50 == 3)
			zlfs_iput(sbi, mk(sbi, big, name, S_IFDIR | 0755, NULL), 0);
		else
			mkfile(sbi, big, name, i % 3 ? 0 : (size_t)i * 13, 40 + (uint64_t)i);
	}
	tu_fs_unmount(sbi);
}

/* ---- gathering the targets ------------------------------------------------------------------- */

static void ctx_add(uint64_t v)
{
	if (V.nctx < sizeof(V.ctxv) / sizeof(V.ctxv[0]))
		V.ctxv[V.nctx++] = v;
}

static void gather_sb(int fd)
{
	uint8_t blk[ZF_BLKSIZE];

	for (uint32_t i = 0; i < 2; i++) {
		rd(fd, i, blk);
		if (!i)
			memcpy(&V.sb, blk + ZF_SUPER_OFFSET, sizeof(V.sb));
		add_blk(C_SB, i, FL_SB, !i, "superblock %u", i);
		uint32_t b = ZF_SUPER_OFFSET;
#define SBF(m) FLD(C_SB, i, b, struct zf_super, m, FL_SB, !i, H_ANY, "sb%u.%s", i, #m)
		SBF(magic); SBF(major_ver); SBF(minor_ver); SBF(log_sectorsize);
		SBF(log_sectors_per_block); SBF(log_blocksize); SBF(log_blocks_per_seg);
		SBF(segs_per_sec); SBF(secs_per_zone); SBF(checksum_offset); SBF(block_count);
		SBF(section_count); SBF(segment_count); SBF(segment_count_ckpt);
		SBF(segment_count_sit); SBF(segment_count_nat); SBF(segment_count_ssa);
		SBF(segment_count_main); SBF(segment0_blkaddr); SBF(cp_blkaddr); SBF(sit_blkaddr);
		SBF(nat_blkaddr); SBF(ssa_blkaddr); SBF(main_blkaddr); SBF(root_ino); SBF(node_ino);
		SBF(meta_ino); SBF(extension_count); SBF(cp_payload); SBF(devs[0].total_segments);
		SBF(devs[1].total_segments);
#undef SBF
		FLD(C_SB, i, b, struct zf_super, feature, FL_SB, !i, H_BITS, "sb%u.feature", i);
	}
}

static void gather_cp(int fd)
{
	uint8_t blk[ZF_BLKSIZE];
	const struct zf_checkpoint *cp = (const struct zf_checkpoint *)blk;
	uint32_t payload = zf_le32_to_cpu(V.sb.cp_payload);

	for (int p = 0; p < 2; p++) {
		uint32_t head = zf_le32_to_cpu(V.sb.cp_blkaddr) + (uint32_t)p * ZF_BLKS_PER_SEG;
		V.pack_head[p] = head;
		rd(fd, head, blk);
		uint32_t total = zf_le32_to_cpu(cp->cp_pack_total_block_count);
		uint32_t ss = zf_le32_to_cpu(cp->cp_pack_start_sum);
		uint32_t flags = zf_le32_to_cpu(cp->ckpt_flags);
		uint32_t sit_bytes = zf_le32_to_cpu(cp->sit_ver_bitmap_bytesize);
		ck_assert_msg(total > 2 && total <= ZF_BLKS_PER_SEG && ss < total, "pack %d", p);
		uint32_t tail = head + total - 1;
		const char *which = p == V.cur_pack ? "cur" : "old";
		add_blk(C_CP, head, FL_CRC, 0, "cp%d(%s) head", p, which);
		add_blk(C_CP, tail, FL_CRC, 0, "cp%d(%s) tail", p, which);
		for (uint32_t k = 0; k < payload; k++)
			add_blk(C_CP, head + 1 + k, 0, 0, "cp%d(%s) payload %u", p, which, k);
		for (uint32_t k = ss; k < total - 1; k++)
			add_blk(C_CPSUM, head + k, 0, 0, "cp%d(%s) summary %u", p, which, k - ss);
#define CPF(m, h) FLD(C_CP, head, 0, struct zf_checkpoint, m, FL_CRC | FL_TAIL, tail, h, \
		      "cp%d(%s).%s", p, which, #m)
		CPF(checkpoint_ver, H_ANY); CPF(user_block_count, H_ANY);
		CPF(valid_block_count, H_ANY); CPF(rsvd_segment_count, H_ANY);
		CPF(overprov_segment_count, H_ANY); CPF(free_segment_count, H_ANY);
		CPF(cur_node_segno[0], H_ANY); CPF(cur_node_segno[1], H_ANY);
		CPF(cur_node_segno[2], H_ANY); CPF(cur_node_blkoff[0], H_ANY);
		CPF(cur_node_blkoff[1], H_ANY); CPF(cur_node_blkoff[2], H_ANY);
		CPF(cur_data_segno[0], H_ANY); CPF(cur_data_segno[1], H_ANY);
		CPF(cur_data_segno[2], H_ANY); CPF(cur_data_segno[3], H_ANY);
		CPF(cur_data_blkoff[0], H_ANY); CPF(cur_data_blkoff[1], H_ANY);
		CPF(cur_data_blkoff[2], H_ANY); CPF(ckpt_flags, H_BITS);
		CPF(cp_pack_total_block_count, H_ANY); CPF(cp_pack_start_sum, H_ANY);
		CPF(valid_node_count, H_ANY); CPF(valid_inode_count, H_ANY);
		CPF(next_free_nid, H_ANY); CPF(sit_ver_bitmap_bytesize, H_ANY);
		CPF(nat_ver_bitmap_bytesize, H_ANY); CPF(checksum_offset, H_ANY);
		CPF(elapsed_time, H_ANY); CPF(alloc_type[0], H_ANY);
		CPF(alloc_type[ZF_CP_LOGMASK_SLOT], H_BITS);
#undef CPF
		add_fld(C_CP, head, ZF_CP_BITMAP_OFFSET, 1, FL_CRC | FL_TAIL, tail, H_BITS,
			"cp%d(%s) SIT version bitmap[0]", p, which);
		if (!payload)
			add_fld(C_CP, head, ZF_CP_BITMAP_OFFSET + sit_bytes, 1, FL_CRC | FL_TAIL, tail,
				H_BITS, "cp%d(%s) NAT version bitmap[0]", p, which);
		if (flags & ZF_CP_COMPACT_SUM_FLAG)
			continue;
		/* the journals: NAT in the hot data summary, SIT in the cold one */
		uint8_t s[ZF_BLKSIZE];
		uint32_t jo = ZF_SUM_ENTRIES_SIZE;
		rd(fd, head + ss + ZF_LOG_HOT_DATA, s);
		const struct zf_journal *j = (const struct zf_journal *)(s + jo);
		add_fld(C_CPSUM, head + ss, jo, 2, 0, 0, H_ANY, "cp%d(%s) NAT journal n_nats", p, which);
		for (unsigned int i = 0; i < zf_le16_to_cpu(j->n_nats) && i < ZF_NAT_JOURNAL_ENTRIES; i++) {
			uint32_t eo = jo + 2 + i * (uint32_t)sizeof(struct zf_nat_journal_entry);
			uint32_t nid = zf_le32_to_cpu(j->nat_j.entries[i].nid);
			add_fld(C_CPSUM, head + ss, eo, 4, 0, 0, H_ANY, "cp%d NAT journal[%u].nid (%u)", p, i, nid);
			add_fld(C_CPSUM, head + ss, eo + 4, 1, 0, 0, H_ANY, "cp%d NAT journal[%u].version", p, i);
			add_fld(C_CPSUM, head + ss, eo + 5, 4, 0, 0, H_ANY, "cp%d NAT journal[%u].ino", p, i);
			add_fld(C_CPSUM, head + ss, eo + 9, 4, 0, 0, H_ANY, "cp%d NAT journal[%u].block_addr", p, i);
		}
		rd(fd, head + ss + ZF_LOG_COLD_DATA, s);
		add_fld(C_CPSUM, head + ss + ZF_LOG_COLD_DATA, jo, 2, 0, 0, H_ANY,
			"cp%d(%s) SIT journal n_sits", p, which);
		for (unsigned int i = 0; i < zf_le16_to_cpu(j->n_sits) && i < ZF_SIT_JOURNAL_ENTRIES; i++) {
			uint32_t eo = jo + 2 + i * (uint32_t)sizeof(struct zf_sit_journal_entry);
			add_fld(C_CPSUM, head + ss + ZF_LOG_COLD_DATA, eo, 4, 0, 0, H_ANY,
				"cp%d SIT journal[%u].segno", p, i);
			add_fld(C_CPSUM, head + ss + ZF_LOG_COLD_DATA, eo + 4, 2, 0, 0, H_ANY,
				"cp%d SIT journal[%u].vblocks", p, i);
			add_fld(C_CPSUM, head + ss + ZF_LOG_COLD_DATA, eo + 6, 1, 0, 0, H_BITS,
				"cp%d SIT journal[%u].valid_map[0]", p, i);
		}
		/* summary entries of the logs' current segments */
		for (uint32_t k = 0; k < 6 && ss + k < total - 1; k++)
			for (uint32_t e = 0; e < 3; e++) {
				uint32_t eo = e * ZF_SUMMARY_SIZE;
				add_fld(C_CPSUM, head + ss + k, eo, 4, 0, 0, H_ANY, "cp%d sum %u entry %u nid", p, k, e);
				add_fld(C_CPSUM, head + ss + k, eo + 5, 2, 0, 0, H_ANY,
					"cp%d sum %u entry %u ofs_in_node", p, k, e);
			}
	}
}

static void gather_dentries(uint32_t ino, uint32_t addr, uint32_t off, unsigned int nr,
			    unsigned int bm, unsigned int rsv, unsigned int c, const uint8_t *blk)
{
	const uint8_t *bitmap = blk + off;
	uint32_t de = off + bm + rsv;
	unsigned int used = 0;

	add_fld(c, addr, off, 1, 0, 0, H_BITS, "dir %u@%u bitmap[0]", ino, addr);
	add_fld(c, addr, off + bm - 1, 1, 0, 0, H_BITS, "dir %u@%u bitmap[last]", ino, addr);
	for (unsigned int i = 0; i < nr && used < 12; i++) {
		if (!zf_le_bit_test(bitmap, i))
			continue;
		if (used++ % 2)
			continue;
		uint32_t o = de + i * ZF_DENTRY_SIZE;
		add_fld(c, addr, o, 4, 0, 0, H_ANY, "dir %u@%u slot %u hash", ino, addr, i);
		add_fld(c, addr, o + 4, 4, 0, 0, H_ANY, "dir %u@%u slot %u ino", ino, addr, i);
		add_fld(c, addr, o + 8, 2, 0, 0, H_ANY, "dir %u@%u slot %u name_len", ino, addr, i);
		add_fld(c, addr, o + 10, 1, 0, 0, H_ANY, "dir %u@%u slot %u file_type", ino, addr, i);
		add_fld(c, addr, de + nr * ZF_DENTRY_SIZE + i * ZF_SLOT_LEN, 1, 0, 0, H_ANY,
			"dir %u@%u slot %u name[0]", ino, addr, i);
		add_fld(c, addr, off + i / 8, 1, 0, 0, H_BITS, "dir %u@%u bitmap[%u]", ino, addr, i / 8);
	}
}

static bool main_addr(uint32_t a)
{
	return a >= V.lay.main_blkaddr && a < V.lay.block_count && a != ZF_NEW_ADDR;
}

/* File blocks of an inode's own slots and its direct nodes (not past the first indirect). */
static void file_blocks(int fd, const struct zf_inode *ri, const uint32_t *nat_addr,
			void (*cb)(int fd, uint32_t ino, uint32_t addr, uint16_t mode), uint32_t ino,
			unsigned int max)
{
	uint16_t mode = zf_le16_to_cpu(ri->i_mode);
	unsigned int n = 0;
	uint8_t blk[ZF_BLKSIZE];

	for (unsigned int k = 0; k < ZF_ADDRS_PER_INODE - ZF_INLINE_XATTR_ADDRS && n < max; k++) {
		uint32_t a = zf_le32_to_cpu(ri->i_addr[k]);
		if (main_addr(a)) {
			cb(fd, ino, a, mode);
			n++;
		}
	}
	for (int k = 0; k < 2; k++) {
		uint32_t nid = zf_le32_to_cpu(ri->i_nid[k]);
		if (!nid || nid >= V.max_nid || !main_addr(nat_addr[nid]))
			continue;
		rd(fd, nat_addr[nid], blk);
		const struct zf_direct_node *dn = (const struct zf_direct_node *)blk;
		for (unsigned int j = 0; j < ZF_ADDRS_PER_BLOCK && n < max; j += 7) {
			uint32_t a = zf_le32_to_cpu(dn->addr[j]);
			if (main_addr(a)) {
				cb(fd, ino, a, mode);
				n++;
			}
		}
	}
}

static void data_cb(int fd, uint32_t ino, uint32_t a, uint16_t mode)
{
	uint8_t blk[ZF_BLKSIZE];

	if (S_ISDIR(mode)) {
		rd(fd, a, blk);
		add_blk(C_DENTRY, a, 0, 0, "dentry block of %u", ino);
		gather_dentries(ino, a, 0, ZF_NR_DENTRY_IN_BLOCK, ZF_DENTRY_BITMAP_SIZE,
				ZF_DENTRY_RESERVED, C_DENTRY, blk);
	} else if (S_ISLNK(mode)) {
		add_blk(C_LNK, a, 0, 0, "symlink block of %u", ino);
	} else {
		add_blk(C_DATA, a, 0, 0, "data block of %u", ino);
	}
}

static void gather_xattrs(int fd, uint32_t ino, uint32_t iaddr, const struct zf_inode *ri,
			  const uint32_t *nat_addr)
{
	uint8_t buf[ZF_INLINE_XATTR_ADDRS * 4 + ZF_XATTR_NODE_BYTES], blk[ZF_BLKSIZE];
	uint32_t inl = (ri->i_inline & ZF_INLINE_XATTR) ? ZF_INLINE_XATTR_ADDRS * 4 : 0;
	uint32_t xnid = zf_le32_to_cpu(ri->i_xattr_nid), xaddr = 0, len = inl;
	uint32_t ioff = (uint32_t)offsetof(struct zf_inode, i_addr) +
			4 * (ZF_ADDRS_PER_INODE - ZF_INLINE_XATTR_ADDRS);

	memcpy(buf, (const uint8_t *)ri + ioff, inl);
	if (xnid && xnid < V.max_nid && main_addr(nat_addr[xnid])) {
		xaddr = nat_addr[xnid];
		rd(fd, xaddr, blk);
		memcpy(buf + inl, blk, ZF_XATTR_NODE_BYTES);
		len += ZF_XATTR_NODE_BYTES;
	}
	if (len < sizeof(struct zf_xattr_header) + 4)
		return;
#define XAT(o, w, h, ...) do { uint32_t o_ = (o); \
		if (o_ < inl) add_fld(C_XATTR, iaddr, ioff + o_, w, 0, 0, h, __VA_ARGS__); \
		else add_fld(C_XATTR, xaddr, o_ - inl, w, 0, 0, h, __VA_ARGS__); } while (0)
	XAT(0, 4, H_ANY, "xattrs of %u: h_magic", ino);
	uint32_t o = sizeof(struct zf_xattr_header);
	for (int n = 0; o + 4 <= len && n < 32; n++) {
		const struct zf_xattr_entry *e = (const struct zf_xattr_entry *)(buf + o);
		if (!get_le(buf + o, 4)) {
			XAT(o, 4, H_ANY, "xattrs of %u: end word after %d", ino, n);
			break;
		}
		XAT(o, 1, H_ANY, "xattrs of %u: [%d].e_name_index", ino, n);
		XAT(o + 1, 1, H_ANY, "xattrs of %u: [%d].e_name_len", ino, n);
		XAT(o + 2, 2, H_ANY, "xattrs of %u: [%d].e_value_size", ino, n);
		if (V.nxb < sizeof(V.xb) / sizeof(V.xb[0]) && xaddr) {
			V.xb[V.nxb].ino = ino;
			V.xb[V.nxb].iaddr = iaddr;
			V.xb[V.nxb].ioff = ioff;
			V.xb[V.nxb].xaddr = xaddr;
			V.xb[V.nxb].inl = inl;
			V.xb[V.nxb].cap = len;
			V.xb[V.nxb].last = o;
			V.xb[V.nxb].last_nl = e->e_name_len;
		}
		o += zf_xattr_entry_size(e->e_name_len, zf_le16_to_cpu(e->e_value_size));
	}
	if (V.nxb < sizeof(V.xb) / sizeof(V.xb[0]) && xaddr)
		V.nxb++;
#undef XAT
}

/* The fields of an inode that steer reads. */
static void inode_fields(uint32_t a, uint32_t nid, const char *t, const struct zf_inode *ri)
{
#define INF(m, h) FLD(C_INODE, a, 0, struct zf_inode, m, 0, 0, h, "%s %u %s", t, nid, #m)
	INF(i_mode, H_MODE); INF(i_advise, H_BITS); INF(i_inline, H_BITS); INF(i_uid, H_ANY);
	INF(i_links, H_ANY); INF(i_size, H_ANY); INF(i_blocks, H_ANY);
	INF(i_current_depth, H_ANY); INF(i_xattr_nid, H_ANY); INF(i_flags, H_BITS);
	INF(i_pino, H_ANY); INF(i_namelen, H_ANY); INF(i_dir_level, H_ANY);
	INF(i_ext.fofs, H_ANY); INF(i_ext.blk_addr, H_ANY); INF(i_ext.len, H_ANY);
	INF(i_extra_isize, H_ANY); INF(i_inline_xattr_size, H_ANY);
	INF(i_nid[0], H_ANY); INF(i_nid[1], H_ANY); INF(i_nid[2], H_ANY); INF(i_nid[3], H_ANY);
	INF(i_nid[4], H_ANY);
#undef INF
	unsigned int got = 0;
	for (unsigned int k = 0; k < ZF_ADDRS_PER_INODE && got < 5; k++) {
		if (!ri->i_addr[k])
			continue;
		add_fld(C_INODE, a, (uint32_t)offsetof(struct zf_inode, i_addr) + 4 * k, 4, 0, 0,
			H_ANY, "%s %u i_addr[%u]", t, nid, k);
		k += 150;
		got++;
	}
	add_fld(C_INODE, a, (uint32_t)offsetof(struct zf_inode, i_addr) + 4 * 1, 4, 0, 0, H_ANY,
		"%s %u i_addr[1]", t, nid);
}

static void gather_nodes(int fd, const struct znat *nat)
{
	uint8_t blk[ZF_BLKSIZE];
	const struct zf_node *n = (const struct zf_node *)blk;
	uint32_t *nat_addr = calloc(V.max_nid, sizeof(uint32_t));

	ck_assert_ptr_nonnull(nat_addr);
	for (uint32_t nid = 0; nid < V.max_nid; nid++)
		nat_addr[nid] = nat[nid].blkaddr;
	for (uint32_t nid = ZF_FIRST_FREE_NID - 1; nid < V.max_nid; nid++) {
		uint32_t a = nat_addr[nid];
		if (!main_addr(a))
			continue;
		rd(fd, a, blk);
		if (zf_le32_to_cpu(n->footer.nid) != nid)
			continue;
		push32(&V.node_addr, &V.nnodes, a);
		unsigned int ofs = zf_node_ofs(n);
		uint32_t ino = zf_le32_to_cpu(n->footer.ino);
		unsigned int c;
		if (!ofs && ino == nid)
			c = C_INODE;
		else if (ofs == ZF_XATTR_NODE_OFS)
			c = C_XNODE;
		else if (zlfs_node_ofs_is_dnode(ofs))
			c = C_DNODE;
		else
			c = C_IND;
		if (c != C_INODE)
			push32(&V.other_nid, &V.nother, nid);
		add_blk(c, a, 0, 0, "%s nid %u (ino %u)", cls_name[c], nid, ino);
		uint32_t fo = ZF_BLKSIZE - sizeof(struct zf_node_footer);
#define FTF(m, h) FLD(c, a, fo, struct zf_node_footer, m, 0, 0, h, "nid %u footer.%s", nid, #m)
		FTF(nid, H_ANY); FTF(ino, H_ANY); FTF(flag, H_FOOTER_FLAG); FTF(next_blkaddr, H_ANY);
		if (c == C_INODE)
			FTF(cp_ver, H_ANY);
#undef FTF
		if (c == C_DNODE || c == C_IND) {
			unsigned int got = 0;
			for (unsigned int k = 0; k < ZF_ADDRS_PER_BLOCK && got < 6; k++) {
				if (!n->dn.addr[k])
					continue;
				add_fld(c, a, 4 * k, 4, 0, 0, H_ANY, "nid %u %s[%u]", nid,
					c == C_DNODE ? "addr" : "nid", k);
				k += 97;
				got++;
			}
			add_fld(c, a, 4 * ZF_ADDRS_PER_BLOCK - 4, 4, 0, 0, H_ANY, "nid %u last slot", nid);
			if (c == C_DNODE)
				push32(&V.dnode, &V.ndnode, a);
			continue;
		}
		if (c != C_INODE)
			continue;
		const struct zf_inode *ri = &n->i;
		uint16_t mode = zf_le16_to_cpu(ri->i_mode);
		push32(&V.inos, &V.ninos, nid);
		if (S_ISREG(mode))
			push32(&V.reg_inode, &V.nreg, a);
		if (S_ISDIR(mode))
			push32(&V.dir_inode, &V.ndir, a);
		const char *t = S_ISDIR(mode) ? "dir" : S_ISREG(mode) ? "file" : S_ISLNK(mode) ? "symlink"
			      : "special";
		/* the many small files of the big directory: the fields of a few of them */
		static unsigned int small_files;
		bool few = S_ISREG(mode) && zf_le64_to_cpu(ri->i_size) < 4096 && !ri->i_xattr_nid &&
			   !(ri->i_inline & ZF_INLINE_XATTR) && small_files++ % 8;
		if (!few)
			inode_fields(a, nid, t, ri);
		if (S_ISDIR(mode) && (ri->i_inline & ZF_INLINE_DENTRY)) {
			unsigned int bytes = zf_max_inline_data(zf_extra_isize_words(ri),
							       zf_inline_xattr_words(ri, 0));
			unsigned int nr, bm, rsv;
			zf_inline_dentry_geom(bytes, &nr, &bm, &rsv);
			uint32_t off = (uint32_t)((const uint8_t *)zf_inline_data((struct zf_inode *)ri) - blk);
			gather_dentries(nid, a, off, nr, bm, rsv, C_INLDENT, blk);
		} else if (!(ri->i_inline & (ZF_INLINE_DATA | ZF_INLINE_DENTRY))) {
			uint8_t copy[ZF_BLKSIZE];
			memcpy(copy, blk, sizeof(copy));
			file_blocks(fd, (const struct zf_inode *)copy, nat_addr, data_cb, nid,
				    S_ISREG(mode) ? 40 : 64);
			memcpy(blk, copy, sizeof(copy));
		}
		if ((ri->i_inline & ZF_INLINE_XATTR) || ri->i_xattr_nid)
			gather_xattrs(fd, nid, a, ri, nat_addr);
	}
	free(nat_addr);
}

static void gather_meta(struct zlfs_sb *sbi)
{
	const struct zf_layout *l = &V.lay;
	uint8_t *sitmap = sbi->sit_bitmap, *natmap = sbi->nat_bitmap;

	for (uint32_t sec = 0; sec < sbi->nr_secs; sec++)
		V.gc_candidates += sbi->secs[sec].state == ZSEC_INUSE && sbi->secs[sec].valid &&
				   sbi->secs[sec].valid < sbi->sec_blocks && !zlfs_sec_is_log(sbi, sec);
	for (uint32_t s = 0; s < sbi->nr_segs; s++) {
		bool log = false;
		for (int i = 0; i < ZF_NR_LOGS; i++)
			log |= sbi->logs[i].segno == s;
		if (!zlfs_seg(sbi, s)->valid && !log)
			continue;
		uint32_t b = s / ZF_SIT_ENTRY_PER_BLOCK;
		uint32_t a = zf_sit_blkaddr(l, s, zf_msb_test(sitmap, b));
		uint32_t eo = (s % ZF_SIT_ENTRY_PER_BLOCK) * (uint32_t)sizeof(struct zf_sit_entry);
		add_blk(C_SIT, a, 0, 0, "SIT block %u", b);
		add_fld(C_SIT, a, eo, 2, 0, 0, H_ANY, "SIT seg %u vblocks", s);
		unsigned int mb = 0;
		while (mb < ZF_SIT_VBLOCK_MAP_SIZE - 1 && !zlfs_seg(sbi, s)->map[mb])
			mb++;
		add_fld(C_SIT, a, eo + 2 + mb, 1, 0, 0, H_BITS, "SIT seg %u valid_map[%u]", s, mb);
		add_fld(C_SIT, a, eo + 2 + ZF_SIT_VBLOCK_MAP_SIZE - 1, 1, 0, 0, H_BITS,
			"SIT seg %u valid_map[63]", s);
		add_fld(C_SIT, a, eo + 2 + ZF_SIT_VBLOCK_MAP_SIZE, 8, 0, 0, H_ANY, "SIT seg %u mtime", s);
		/* its SSA block */
		uint32_t sa = zf_ssa_blkaddr(l, s);
		add_blk(C_SSA, sa, 0, 0, "SSA seg %u", s);
		add_fld(C_SSA, sa, ZF_BLKSIZE - ZF_SUM_FOOTER_SIZE, 1, 0, 0, H_ANY,
			"SSA seg %u footer.entry_type", s);
		unsigned int got = 0;
		for (unsigned int k = 0; k < ZF_BLKS_PER_SEG && got < 4; k++) {
			if (!zf_msb_test(zlfs_seg(sbi, s)->map, k))
				continue;
			uint32_t o = k * ZF_SUMMARY_SIZE;
			add_fld(C_SSA, sa, o, 4, 0, 0, H_ANY, "SSA seg %u entry %u nid", s, k);
			add_fld(C_SSA, sa, o + 4, 1, 0, 0, H_ANY, "SSA seg %u entry %u version", s, k);
			add_fld(C_SSA, sa, o + 5, 2, 0, 0, H_ANY, "SSA seg %u entry %u ofs_in_node", s, k);
			k += 60;
			got++;
		}
	}
	for (uint32_t nid = 0; nid < V.max_nid; nid++) {
		const struct znat *n = zlfs_nat(sbi, nid);
		if (!n->blkaddr && !n->ino)
			continue;
		uint32_t b = nid / ZF_NAT_ENTRY_PER_BLOCK;
		uint32_t a = zf_nat_blkaddr(l, nid, zf_msb_test(natmap, b));
		uint32_t eo = (nid % ZF_NAT_ENTRY_PER_BLOCK) * (uint32_t)sizeof(struct zf_nat_entry);
		add_blk(C_NAT, a, 0, 0, "NAT block %u", b);
		add_fld(C_NAT, a, eo, 1, 0, 0, H_ANY, "NAT nid %u version", nid);
		add_fld(C_NAT, a, eo + 1, 4, 0, 0, H_ANY, "NAT nid %u ino", nid);
		add_fld(C_NAT, a, eo + 5, 4, 0, 0, H_ANY, "NAT nid %u block_addr", nid);
	}
	/* an unused NAT entry: a nid that should be free */
	add_fld(C_NAT, zf_nat_blkaddr(l, V.max_nid - 1, zf_msb_test(natmap, (V.max_nid - 1) /
			ZF_NAT_ENTRY_PER_BLOCK)),
		((V.max_nid - 1) % ZF_NAT_ENTRY_PER_BLOCK) * 9 + 5, 4, 0, 0, H_ANY,
		"NAT nid %u (last) block_addr", V.max_nid - 1);
}

static void gather_zst(void)
{
	int fd = open(V.pristine_zst, O_RDONLY | O_CLOEXEC);
	uint8_t hdr[64];

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
	close(fd);
	/* struct zst_hdr (fs/blk/zemu.h): magic[8], version, lbs, size, zone_size, zone_cap, nr_zones, nr_conv */
	V.zone_size = get_le(hdr + 24, 8);
	V.zone_cap = get_le(hdr + 32, 8);
	V.nr_zones = (uint32_t)get_le(hdr + 40, 4);
	V.nr_conv = (uint32_t)get_le(hdr + 44, 4);
	ck_assert_uint_gt(V.zone_size, 0);
	for (uint32_t z = 0; z < V.nr_zones; z++) {
		uint32_t o = 4096 + 16 * z;   /* struct zst_zone: wp, flags, pad */
		if (z >= V.nr_conv)
			add_fld(C_ZST, o, 0, 8, FL_ZST, z, H_WP, "zone %u write pointer", z);
		add_fld(C_ZST, o + 8, 0, 4, FL_ZST, z, H_ZFLAGS, "zone %u flags", z);
	}
}

static void gather(void)
{
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	char err[256];
	int fd = open(V.img, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	gather_sb(fd);
	zlfs_opts_inprocess(&o);
	o.ro = true;
	ck_assert_msg(zlfs_mount(V.img, &o, &sbi, err, sizeof(err)) == 0, "mount: %s", err);
	V.lay = sbi->lay;
	V.max_nid = sbi->max_nid;
	V.cur_pack = sbi->cp_pack;
	gather_cp(fd);
	gather_meta(sbi);
	struct znat *nat = malloc((size_t)V.max_nid * sizeof(*nat));
	ck_assert_ptr_nonnull(nat);
	for (uint32_t nid = 0; nid < V.max_nid; nid++)
		nat[nid] = *zlfs_nat(sbi, nid);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
	gather_nodes(fd, nat);
	free(nat);
	gather_zst();
	close(fd);

	const struct zf_layout *l = &V.lay;
	uint64_t cv[] = {
		V.max_nid, V.max_nid - 1, V.max_nid + 1, l->segment_count_main, l->segment_count_main - 1,
		l->segment_count_main + 1, l->main_blkaddr, l->main_blkaddr - 1, l->block_count,
		l->block_count - 1, l->block_count + 1, l->section_count, l->section_count + 1,
		l->segment_count, l->segment0_blkaddr, l->sit_blkaddr, l->nat_blkaddr, l->ssa_blkaddr,
		l->sit_blocks, ZF_ROOT_INO, ZF_NODE_INO, ZF_BLKS_PER_SEG, ZF_BLKS_PER_SEG + 1,
		ZF_ADDRS_PER_INODE, ZF_ADDRS_PER_BLOCK, ZF_ADDRS_PER_BLOCK + 1, ZF_BLKSIZE,
		ZF_BLKSIZE - 1, ZF_NAME_LEN, ZF_NAME_LEN + 1, ZF_DEF_MAX_INLINE_DATA,
		ZF_MAX_DIR_HASH_DEPTH, ZF_MAX_DIR_HASH_DEPTH + 1, ZF_XATTR_NODE_OFS, 0xffff, 0x10000,
		(uint64_t)l->block_count * ZF_BLKSIZE, 1ull << 40, ZF_NEW_ADDR, ZF_COMPRESS_ADDR,
		/* about F2FS's largest file, in bytes: a directory that size has a billion blocks */
		((uint64_t)ZF_ADDRS_PER_INODE - ZF_INLINE_XATTR_ADDRS + 2ull * ZF_ADDRS_PER_BLOCK +
		 2ull * ZF_NIDS_PER_BLOCK * ZF_ADDRS_PER_BLOCK +
		 (uint64_t)ZF_NIDS_PER_BLOCK * ZF_NIDS_PER_BLOCK * ZF_ADDRS_PER_BLOCK) * ZF_BLKSIZE,
	};
	for (size_t i = 0; i < sizeof(cv) / sizeof(cv[0]); i++)
		ctx_add(cv[i]);
	/* what a volume with this superblock never writes */
	uint32_t sit_used = (l->segment_count_main + ZF_SIT_ENTRY_PER_BLOCK - 1) / ZF_SIT_ENTRY_PER_BLOCK;
	V.keep[V.nkeep].start = 0;
	V.keep[V.nkeep].n = l->segment0_blkaddr;
	V.keep[V.nkeep++].what = "superblock area";
	for (uint32_t c = 0; c < 2; c++) {
		V.keep[V.nkeep].start = l->sit_blkaddr + c * l->sit_blocks + sit_used;
		V.keep[V.nkeep].n = l->sit_blocks - sit_used;
		V.keep[V.nkeep++].what = c ? "unused SIT blocks (copy 1)" : "unused SIT blocks (copy 0)";
	}
	V.keep[V.nkeep].start = l->ssa_blkaddr + l->segment_count_main;
	V.keep[V.nkeep].n = l->main_blkaddr - V.keep[V.nkeep].start;
	V.keep[V.nkeep++].what = "unused SSA blocks";
}

/* ---- damage ------------------------------------------------------------------------------------ */

struct dlog {
	char text[8192];
	size_t len;
	bool sb_touched;        /* the layout may differ: no check of where writes went */
};

__attribute__((format(printf, 2, 3)))
static void dlog(struct dlog *d, const char *fmt, ...)
{
	va_list ap;

	if (d->len + 2 >= sizeof(d->text))
		return;
	d->text[d->len++] = ' ';
	d->text[d->len++] = ' ';
	va_start(ap, fmt);
	int n = vsnprintf(d->text + d->len, sizeof(d->text) - d->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		d->len += (size_t)n < sizeof(d->text) - d->len ? (size_t)n : sizeof(d->text) - d->len - 1;
	if (d->len + 1 < sizeof(d->text))
		d->text[d->len++] = '\n';
	d->text[d->len] = 0;
}

/* An edge value for a field of `width` bytes that held `old`. */
static uint64_t edge(uint64_t *rs, unsigned int width, uint64_t old)
{
	uint64_t mask = width >= 8 ? ~0ull : (1ull << (8 * width)) - 1, v;

	switch (rn(rs, 18)) {
	case 0: v = 0; break;
	case 1: v = 1; break;
	case 2: v = ~0ull; break;
	case 3: v = mask >> 1; break;                 /* 0x7f.. */
	case 4: v = (mask >> 1) + 1; break;           /* 0x80.. */
	case 5: v = old + 1; break;
	case 6: v = old - 1; break;
	case 7: v = old ^ (1ull << rn(rs, 8 * width)); break;
	case 8: v = rnd(rs); break;
	case 9: v = V.ctxv[rn(rs, V.nctx)] + rn(rs, 3) - 1; break;
	case 10: v = V.ninos ? V.inos[rn(rs, V.ninos)] : 3; break;
	case 11: v = V.nnodes ? V.node_addr[rn(rs, V.nnodes)] : 0; break;
	case 12: v = V.lay.main_blkaddr + rn(rs, V.lay.segment_count_main * ZF_BLKS_PER_SEG); break;
	case 13: v = V.nother ? V.other_nid[rn(rs, V.nother)] : 2; break;
	case 14: v = old << 8 | 0xff; break;
	default: v = V.ctxv[rn(rs, V.nctx)]; break;
	}
	return v & mask;
}

static uint64_t field_value(uint64_t *rs, const struct fld *f, uint64_t old)
{
	uint64_t mask = f->width >= 8 ? ~0ull : (1ull << (8 * f->width)) - 1;

	if (rn(rs, 10) < 6)
		switch (f->hint) {
		case H_MODE: {
			static const uint16_t modes[] = {
				S_IFDIR | 0755, S_IFREG | 0644, S_IFLNK | 0777, S_IFIFO | 0644,
				S_IFCHR | 0644, S_IFSOCK | 0644, 0, 0xffff, 0170000, 0777,
			};
			return modes[rn(rs, sizeof(modes) / sizeof(modes[0]))];
		}
		case H_BITS:
			return (old ^ (1ull << rn(rs, 8 * f->width))) & mask;
		case H_FOOTER_FLAG: {
			static const uint32_t ofs[] = { 0, 1, 2, 3, 4, 1021, 1022, 1023, 2041, 2042,
							ZF_XATTR_NODE_OFS, 0x7ffffff };
			if (rn(rs, 2))
				return (old ^ (1u << rn(rs, 3))) & mask;   /* cold, fsync, dent marks */
			return ((uint64_t)ofs[rn(rs, sizeof(ofs) / sizeof(ofs[0]))] << ZF_NODE_OFS_SHIFT |
				(old & 7)) & mask;
		}
		case H_WP: {
			uint64_t start = (uint64_t)f->aux * V.zone_size;
			return start + (uint64_t)rn(rs, (uint32_t)(V.zone_cap / ZF_BLKSIZE) + 1) * ZF_BLKSIZE;
		}
		case H_ZFLAGS:
			return 1 + rn(rs, 3);    /* read-only, offline, both */
		default:
			break;
		}
	return edge(rs, f->width, old);
}

static void fix_crc(uint8_t *blk, uint8_t flags)
{
	if (flags & FL_CRC) {
		zf_cp_set_crc(blk);
	} else if (flags & FL_SB) {
		struct zf_super sb;
		memcpy(&sb, blk + ZF_SUPER_OFFSET, sizeof(sb));
		if (zf_le32_to_cpu(sb.feature) & ZF_FEAT_SB_CHKSUM) {
			uint32_t c = zf_cpu_to_le32(zf_super_crc(&sb));
			memcpy(blk + ZF_SUPER_OFFSET + ZF_SB_CHKSUM_OFFSET, &c, 4);
		}
	}
}

static void damage_field(int fd, int zfd, uint64_t *rs, const struct fld *f, struct dlog *d)
{
	uint8_t blk[ZF_BLKSIZE], other[ZF_BLKSIZE];

	if (f->flags & FL_ZST) {
		uint8_t b[8];
		ck_assert_int_eq(pread(zfd, b, f->width, f->blk), f->width);
		uint64_t old = get_le(b, f->width), v = field_value(rs, f, old);
		put_le(b, f->width, v);
		ck_assert_int_eq(pwrite(zfd, b, f->width, f->blk), f->width);
		dlog(d, "%s: %#llx -> %#llx", f->label, (unsigned long long)old, (unsigned long long)v);
		return;
	}
	rd(fd, f->blk, blk);
	uint64_t old = get_le(blk + f->off, f->width), v = old;
	for (int i = 0; i < 4 && v == old; i++)
		v = field_value(rs, f, old);
	put_le(blk + f->off, f->width, v);
	bool fix = (f->flags & (FL_CRC | FL_SB)) && rn(rs, 10) < 7;
	if (fix)
		fix_crc(blk, f->flags);
	wr(fd, f->blk, blk);
	bool mirror = (f->flags & FL_TAIL) || ((f->flags & FL_SB) && rn(rs, 10) < 2);
	if (mirror) {
		/* the checkpoint's tail (a copy of the head), or the other superblock */
		rd(fd, f->aux, other);
		put_le(other + f->off, f->width, v);
		if (fix)
			fix_crc(other, f->flags);
		wr(fd, f->aux, other);
	}
	dlog(d, "field %s (blk %u + %u, %u bytes): %#llx -> %#llx%s%s", f->label, f->blk, f->off,
	     f->width, (unsigned long long)old, (unsigned long long)v, fix ? ", crc recomputed" : "",
	     mirror ? (f->flags & FL_SB ? ", both superblocks" : ", tail too") : "");
}

static void damage_block(int fd, uint64_t *rs, const struct tlist *t, const struct blkt *b,
			 struct dlog *d)
{
	uint8_t blk[ZF_BLKSIZE];
	uint32_t lo = (b->flags & FL_SB) ? ZF_SUPER_OFFSET : 0;
	uint32_t span = ZF_BLKSIZE - lo;
	unsigned int k = rn(rs, 100);
	char what[96];

	rd(fd, b->blk, blk);
	if (k < 30) {
		unsigned int n = 1 + rn(rs, 8);
		int w = snprintf(what, sizeof(what), "%u random bytes at", n);
		for (unsigned int i = 0; i < n; i++) {
			uint32_t o = lo + rn(rs, span);
			blk[o] = (uint8_t)rnd(rs);
			if (w > 0 && (size_t)w < sizeof(what))
				w += snprintf(what + w, sizeof(what) - (size_t)w, " %u", o);
		}
	} else if (k < 55) {
		uint32_t o = lo + 4 * rn(rs, span / 4);
		uint64_t old = get_le(blk + o, 4), v = edge(rs, 4, old);
		put_le(blk + o, 4, v);
		snprintf(what, sizeof(what), "word at %u: %#llx -> %#llx", o, (unsigned long long)old,
			 (unsigned long long)v);
	} else if (k < 75) {
		unsigned int n = 1 + rn(rs, 4);
		int w = snprintf(what, sizeof(what), "%u bit flips at", n);
		for (unsigned int i = 0; i < n; i++) {
			uint32_t bit = rn(rs, span * 8);
			blk[lo + bit / 8] ^= (uint8_t)(1u << (bit % 8));
			if (w > 0 && (size_t)w < sizeof(what))
				w += snprintf(what + w, sizeof(what) - (size_t)w, " %u.%u", lo + bit / 8, bit % 8);
		}
	} else if (k < 80) {
		memset(blk + lo, 0, span);
		snprintf(what, sizeof(what), "zeroed");
	} else if (k < 84) {
		memset(blk + lo, 0xff, span);
		snprintf(what, sizeof(what), "filled with 0xff");
	} else if (k < 88) {
		for (uint32_t i = lo; i < ZF_BLKSIZE; i += 8)
			put_le(blk + i, 8, rnd(rs));
		snprintf(what, sizeof(what), "random");
	} else {
		const struct blkt *o = &t->b[rn(rs, t->nb)];
		if (o->blk == b->blk) {
			memset(blk + lo, 0, span);
			snprintf(what, sizeof(what), "zeroed");
		} else {
			rd(fd, o->blk, blk);
			snprintf(what, sizeof(what), "replaced by a copy of %s (blk %u)", o->label, o->blk);
		}
	}
	bool fix = (b->flags & (FL_CRC | FL_SB)) && rn(rs, 10) < 6;
	if (fix)
		fix_crc(blk, b->flags);
	wr(fd, b->blk, blk);
	dlog(d, "block %s (blk %u): %s%s", b->label, b->blk, what, fix ? ", crc recomputed" : "");
}

/* An orphan block inserted into a checkpoint pack, listing live, reserved or bogus inodes. */
static void craft_orphans(int fd, uint64_t *rs, struct dlog *d)
{
	int p = rn(rs, 5) ? V.cur_pack : !V.cur_pack;
	uint32_t head = V.pack_head[p];
	uint8_t h[ZF_BLKSIZE], b[ZF_BLKSIZE];
	struct zf_checkpoint *cp = (struct zf_checkpoint *)h;
	struct zf_orphan_block *ob = (struct zf_orphan_block *)b;
	char what[256];
	int w = 0;

	rd(fd, head, h);
	uint32_t total = zf_le32_to_cpu(cp->cp_pack_total_block_count);
	uint32_t ss = zf_le32_to_cpu(cp->cp_pack_start_sum);
	if (total < 3 || total >= ZF_BLKS_PER_SEG || ss >= total)
		return;
	for (uint32_t k = total; k-- > ss;) {
		rd(fd, head + k, b);
		wr(fd, head + k + 1, b);
	}
	memset(b, 0, sizeof(b));
	unsigned int n = 1 + rn(rs, 6);
	for (unsigned int i = 0; i < n; i++) {
		uint32_t ino;
		switch (rn(rs, 8)) {
		case 0: case 1: ino = V.inos[rn(rs, V.ninos)]; break;
		case 2: ino = ZF_ROOT_INO; break;
		case 3: ino = rn(rs, 3); break;
		case 4: ino = V.max_nid - rn(rs, 2); break;
		case 5: ino = V.nother ? V.other_nid[rn(rs, V.nother)] : 7; break;
		case 6: ino = (uint32_t)rnd(rs); break;
		default: ino = i ? zf_le32_to_cpu(ob->ino[i - 1]) : ZF_ROOT_INO; break;
		}
		ob->ino[i] = zf_cpu_to_le32(ino);
		if (w >= 0 && (size_t)w < sizeof(what))
			w += snprintf(what + w, sizeof(what) - (size_t)w, " %u", ino);
	}
	uint32_t cnt = rn(rs, 5) ? n : (uint32_t)edge(rs, 4, n);
	ob->entry_count = zf_cpu_to_le32(cnt);
	ob->blk_count = zf_cpu_to_le16(rn(rs, 5) ? 1 : (uint16_t)edge(rs, 2, 1));
	ob->blk_addr = 0;
	wr(fd, head + ss, b);
	cp->cp_pack_total_block_count = zf_cpu_to_le32(total + 1);
	cp->cp_pack_start_sum = zf_cpu_to_le32(ss + 1);
	cp->ckpt_flags = zf_cpu_to_le32(zf_le32_to_cpu(cp->ckpt_flags) | ZF_CP_ORPHAN_PRESENT_FLAG);
	zf_cp_set_crc(h);
	wr(fd, head, h);
	wr(fd, head + total, h);
	dlog(d, "crafted orphan block in pack %d (%s), entry_count %u, inos%s", p,
	     p == V.cur_pack ? "current" : "old", cnt, what);
}

/*
 * A crafted fsync chain at the warm node log's position: copies of live
 * inodes and direct nodes with the FSYNC (and DENT) marks and the
 * checkpoint's cp_ver, the zone's write pointer moved past them, some of
 * them damaged further.
 */
static void craft_chain(int fd, int zfd, uint64_t *rs, struct dlog *d)
{
	uint32_t head = V.pack_head[V.cur_pack];
	uint8_t h[ZF_BLKSIZE], b[ZF_BLKSIZE];
	struct zf_checkpoint *cp = (struct zf_checkpoint *)h;
	struct zf_node *n = (struct zf_node *)b;
	char what[512];
	int w = 0;

	rd(fd, head, h);
	uint32_t crc;
	memcpy(&crc, h + ZF_CP_CHKSUM_OFFSET, 4);
	uint64_t ver = zf_le64_to_cpu(cp->checkpoint_ver);
	if (zf_le32_to_cpu(cp->ckpt_flags) & ZF_CP_CRC_RECOVERY_FLAG)
		ver |= (uint64_t)zf_le32_to_cpu(crc) << 32;
	uint32_t segno = zf_le32_to_cpu(cp->cur_node_segno[ZF_LOG_WARM_NODE - ZF_LOG_HOT_NODE]);
	uint32_t off = zf_le16_to_cpu(cp->cur_node_blkoff[ZF_LOG_WARM_NODE - ZF_LOG_HOT_NODE]);
	uint32_t start = V.lay.main_blkaddr + segno * ZF_BLKS_PER_SEG + off;
	uint64_t zone = (uint64_t)start * ZF_BLKSIZE / V.zone_size;
	uint32_t len = 1 + rn(rs, 4);
	if (zone >= V.nr_zones || ((uint64_t)start + len) * ZF_BLKSIZE > zone * V.zone_size + V.zone_cap)
		return;
	for (uint32_t k = 0; k < len; k++) {
		unsigned int pick = rn(rs, 10);
		uint32_t src = pick < 6 && V.nreg ? V.reg_inode[rn(rs, V.nreg)]
			       : pick < 9 && V.ndnode ? V.dnode[rn(rs, V.ndnode)]
			       : V.dir_inode[rn(rs, V.ndir)];
		rd(fd, src, b);
		uint32_t flag = zf_le32_to_cpu(n->footer.flag) | (1u << ZF_NODE_FSYNC_BIT);
		if (!zf_node_ofs(n) && rn(rs, 2))
			flag |= 1u << ZF_NODE_DENT_BIT;
		n->footer.flag = zf_cpu_to_le32(flag);
		n->footer.cp_ver = zf_cpu_to_le64(rn(rs, 10) ? ver : edge(rs, 8, ver));
		uint32_t next;
		switch (rn(rs, 10)) {
		case 0: next = start; break;                       /* back to the start: a loop */
		case 1: next = start + k; break;                   /* itself */
		case 2: next = (uint32_t)edge(rs, 4, start + k + 1); break;
		default: next = start + k + 1; break;
		}
		n->footer.next_blkaddr = zf_cpu_to_le32(next);
		if (w >= 0 && (size_t)w < sizeof(what))
			w += snprintf(what + w, sizeof(what) - (size_t)w, " [copy of blk %u, nid %u, flag %#x, next %u",
				      src, zf_le32_to_cpu(n->footer.nid), flag, next);
		/* and a field or two damaged: sizes, addresses, names */
		for (unsigned int e = rn(rs, 3); e; e--) {
			uint32_t o = 4 * rn(rs, (ZF_BLKSIZE - sizeof(struct zf_node_footer)) / 4);
			if (!zf_node_ofs(n) && rn(rs, 2)) {
				static const uint16_t io[] = {
					offsetof(struct zf_inode, i_size), offsetof(struct zf_inode, i_links),
					offsetof(struct zf_inode, i_namelen), offsetof(struct zf_inode, i_pino),
					offsetof(struct zf_inode, i_xattr_nid), offsetof(struct zf_inode, i_nid),
					offsetof(struct zf_inode, i_addr), offsetof(struct zf_inode, i_mode),
					offsetof(struct zf_inode, i_inline),
				};
				o = io[rn(rs, sizeof(io) / sizeof(io[0]))];
			}
			uint64_t v = edge(rs, 4, get_le(b + o, 4));
			put_le(b + o, 4, v);
			if (w >= 0 && (size_t)w < sizeof(what))
				w += snprintf(what + w, sizeof(what) - (size_t)w, ", word %u = %#llx", o,
					      (unsigned long long)v);
		}
		if (w >= 0 && (size_t)w < sizeof(what))
			w += snprintf(what + w, sizeof(what) - (size_t)w, "]");
		wr(fd, start + k, b);
	}
	uint8_t wp[8];
	uint32_t zo = 4096 + 16 * (uint32_t)zone;
	ck_assert_int_eq(pread(zfd, wp, 8, zo), 8);
	uint64_t nwp = ((uint64_t)start + len) * ZF_BLKSIZE;
	if (get_le(wp, 8) < nwp) {
		put_le(wp, 8, nwp);
		ck_assert_int_eq(pwrite(zfd, wp, 8, zo), 8);
	}
	dlog(d, "crafted fsync chain of %u at blk %u (zone %llu, wp -> %llu):%s", len, start,
	     (unsigned long long)zone, (unsigned long long)nwp, what);
}

/* Write `w` bytes of v at offset o of an inode's xattr buffer (inline area, then node). */
static void xbuf_put(int fd, unsigned int i, uint32_t o, unsigned int w, uint64_t v)
{
	uint8_t blk[ZF_BLKSIZE];
	uint32_t a = o < V.xb[i].inl ? V.xb[i].iaddr : V.xb[i].xaddr;
	uint32_t off = o < V.xb[i].inl ? V.xb[i].ioff + o : o - V.xb[i].inl;

	rd(fd, a, blk);
	put_le(blk + off, w, v);
	wr(fd, a, blk);
}

/*
 * The last xattr entry made to reach to a crafted entry in the last words
 * of the buffer, whose name and value run past its end.
 */
static void craft_xattr_end(int fd, uint64_t *rs, struct dlog *d)
{
	if (!V.nxb)
		return;
	unsigned int i = rn(rs, V.nxb);
	uint32_t last = V.xb[i].last, cap = V.xb[i].cap;
	uint32_t t = cap - 4 * (1 + rn(rs, 8));
	uint32_t from = last + 4 + V.xb[i].last_nl;
	if (t < ((from + 3) & ~3u) + 4)
		return;
	uint32_t vs = t - from;          /* the last entry now ends at t */
	uint8_t nl = (uint8_t)(1 + rn(rs, 255));
	uint16_t evs = (uint16_t)rn(rs, 65536);
	xbuf_put(fd, i, last + 2, 2, vs);
	xbuf_put(fd, i, t, 4, (uint64_t)ZF_XATTR_INDEX_USER | (uint64_t)nl << 8 | (uint64_t)evs << 16);
	dlog(d, "crafted xattr entry of %u at buffer offset %u of %u (name_len %u, value_size %u), "
	     "the entry at %u made to reach it (value_size %u)", V.xb[i].ino, t, cap, nl, evs, last, vs);
}

/* Classes left out (ZLFS_DAMAGE_SKIP): to look past a known bug. */
static bool skip_cls[C_NCLS];

static bool cls_usable(unsigned int c)
{
	return !skip_cls[c] && (tl[c].nf || tl[c].nb || c == C_ORPHAN || c == C_CHAIN ||
				(c == C_XEND && V.nxb));
}

static void damage_one(int fd, int zfd, uint64_t *rs, struct dlog *d)
{
	unsigned int sum = 0, c;

	for (c = 0; c < C_NCLS; c++)
		if (cls_usable(c))
			sum += cls_weight[c];
	if (!sum)
		return;
	unsigned int r = rn(rs, sum);
	for (c = 0; c < C_NCLS; c++) {
		if (!cls_usable(c))
			continue;
		if (r < cls_weight[c])
			break;
		r -= cls_weight[c];
	}
	if (c == C_ORPHAN) {
		craft_orphans(fd, rs, d);
		return;
	}
	if (c == C_CHAIN) {
		craft_chain(fd, zfd, rs, d);
		return;
	}
	if (c == C_XEND) {
		craft_xattr_end(fd, rs, d);
		return;
	}
	if (c == C_SB)
		d->sb_touched = true;
	const struct tlist *t = &tl[c];
	if (t->nf && (!t->nb || rn(rs, 100) < 60))
		damage_field(fd, zfd, rs, &t->f[rn(rs, t->nf)], d);
	else
		damage_block(fd, rs, t, &t->b[rn(rs, t->nb)], d);
}

static void damage_image(uint64_t *rs, struct dlog *d)
{
	int fd = open(V.work, O_RDWR | O_CLOEXEC), zfd = open(V.work_zst, O_RDWR | O_CLOEXEC);
	unsigned int k = rn(rs, 100), nops = k < 45 ? 1 : k < 75 ? 2 : 3 + rn(rs, 4);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(zfd, 0);
	for (unsigned int i = 0; i < nops; i++)
		damage_one(fd, zfd, rs, d);
	close(fd);
	close(zfd);
}

/* ---- the child: mount and use the damaged volume ----------------------------------------------- */

/* What a child did, for the parent (shared memory). */
struct shared {
	uint32_t mounted, refused, ops, errs, loops, unmount_err, remounted, remount_refused;
	uint32_t gc_runs;          /* sections background GC cleaned */
	char phase[200];
	char mount_err[200];
};

static struct shared *SH;

/* A check inside the child: a report and an abort, which the parent counts as a crash. */
#define CHILD_CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "check failed: " __VA_ARGS__); \
		fprintf(stderr, " (%s:%d, %s)\n", __FILE__, __LINE__, SH->phase); abort(); } } while (0)

__attribute__((format(printf, 1, 2)))
static void phase(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(SH->phase, sizeof(SH->phase), fmt, ap);
	va_end(ap);
}

static int counted(int ret)
{
	SH->ops++;
	if (ret)
		SH->errs++;
	return ret;
}

struct ent {
	uint32_t dir, ino;
	uint16_t mode;
	char name[ZF_NAME_LEN + 1];
};

struct walk {
	uint64_t rng;
	struct ent *e;             /* entries kept for the read-write operations */
	uint32_t ne;
	uint32_t seen_dirs;
	uint32_t *look;            /* lookups counted (the kernel's references), to forget */
	uint64_t *nlook;
	uint32_t nl;
	char *buf;                 /* scratch for reads and xattrs */
	/* for the read-write part: every inode with xattrs, directory and larger file seen */
	struct { uint32_t ino; char name[64]; } x[16];
	uint32_t nx;
	struct { uint32_t ino, child; uint16_t mode; char name[ZF_NAME_LEN + 1]; } d[16];
	uint32_t nd;
	struct { uint32_t ino; uint64_t size; } f[12];
	uint32_t nf;
};

#define MAX_KEEP 400
#define MAX_DIRS 400
#define MAX_DIRENTS 3000
#define MAX_READ (24u << 20)
#define CHUNK (256u << 10)

static void note_lookup(struct walk *w, uint32_t ino)
{
	for (uint32_t i = 0; i < w->nl; i++)
		if (w->look[i] == ino) {
			w->nlook[i]++;
			return;
		}
	if (w->nl < 8192) {
		w->look[w->nl] = ino;
		w->nlook[w->nl++] = 1;
	}
}

static void keep_entry(struct walk *w, uint32_t dir, uint32_t ino, uint16_t mode, const char *name)
{
	uint32_t i = w->ne < MAX_KEEP ? w->ne++ : rn(&w->rng, MAX_KEEP * 2);
	if (i >= MAX_KEEP)
		return;
	w->e[i].dir = dir;
	w->e[i].ino = ino;
	w->e[i].mode = mode;
	snprintf(w->e[i].name, sizeof(w->e[i].name), "%s", name);
}

struct dent {
	uint32_t ino;
	uint8_t ft;
	uint16_t len;
	char name[ZF_NAME_LEN + 1];
};

struct rdc {
	struct dent *d;
	uint32_t n, max;
	uint64_t next;
};

static int rd_emit(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t ft, uint64_t next)
{
	struct rdc *c = ctx;

	if (c->n >= c->max)
		return 1;
	struct dent *d = &c->d[c->n++];
	d->ino = ino;
	d->ft = ft;
	d->len = (uint16_t)(len > ZF_NAME_LEN ? ZF_NAME_LEN : len);
	memcpy(d->name, name, d->len);
	d->name[d->len] = 0;
	c->next = next;
	return 0;
}

/* readdir as the kernel does it: batches, each going on from the last cookie. */
static uint32_t read_dir(struct zlfs_sb *sbi, struct walk *w, uint32_t dino, struct dent *out)
{
	uint64_t pos = 0;
	uint32_t n = 0;
	struct dent batch[48];

	for (;;) {
		struct rdc c = { batch, 0, 1 + rn(&w->rng, 48), 0 };
		struct zinode *dir;
		int ret;
		phase("readdir of %u from %#llx", dino, (unsigned long long)pos);
		zlfs_op_begin(sbi, true);
		if (!(ret = zlfs_dir_iget(sbi, dino, &dir)))
			ret = zlfs_dir_iterate(sbi, dir, pos, rd_emit, &c);
		zlfs_op_end(sbi, true);
		if (counted(ret) || !c.n)
			break;
		for (uint32_t i = 0; i < c.n && n < MAX_DIRENTS; i++)
			out[n++] = batch[i];
		if (n >= MAX_DIRENTS) {
			SH->loops++;      /* more entries than the volume has: the cookies go round */
			break;
		}
		if (c.next <= pos && pos) {
			SH->loops++;
			break;
		}
		pos = c.next;
		if (c.n < c.max)
			break;
	}
	return n;
}

static void read_file(struct zlfs_sb *sbi, struct walk *w, uint32_t ino, uint64_t size)
{
	uint64_t offs[4] = { size > 4096 ? size - 4096 : 0, size, size + 4096, 1ull << 40 };

	for (uint64_t off = 0; off < size && off < MAX_READ; off += CHUNK) {
		struct zinode *zi;
		size_t got = 0;
		int ret;
		phase("read %u at %llu (size %llu)", ino, (unsigned long long)off, (unsigned long long)size);
		zlfs_op_begin(sbi, true);
		if (!(ret = zlfs_iget(sbi, ino, &zi)))
			ret = zlfs_file_read(sbi, zi, w->buf, CHUNK, off, &got);
		zlfs_op_end(sbi, true);
		if (counted(ret))
			break;
		CHILD_CHECK(got <= CHUNK, "read returned %zu bytes", got);
	}
	for (int i = 0; i < 4; i++) {
		struct zinode *zi;
		size_t got = 0;
		int ret;
		phase("read %u at %llu (size %llu)", ino, (unsigned long long)offs[i],
		      (unsigned long long)size);
		zlfs_op_begin(sbi, true);
		if (!(ret = zlfs_iget(sbi, ino, &zi)))
			ret = zlfs_file_read(sbi, zi, w->buf, 8192, offs[i], &got);
		zlfs_op_end(sbi, true);
		counted(ret);
	}
}

static void read_link(struct zlfs_sb *sbi, struct walk *w, uint32_t ino)
{
	struct zinode *zi;
	size_t got = 0;
	int ret;

	phase("readlink %u", ino);
	zlfs_op_begin(sbi, true);
	if (!(ret = zlfs_iget(sbi, ino, &zi))) {
		if (!S_ISLNK(zf_le16_to_cpu(zi_raw(zi)->i_mode)))
			ret = -EINVAL;
		else
			ret = zlfs_file_read(sbi, zi, w->buf, ZF_BLKSIZE, 0, &got);
	}
	zlfs_op_end(sbi, true);
	counted(ret);
	CHILD_CHECK(got <= ZF_BLKSIZE, "readlink returned %zu bytes", got);
}

#define XBUF 65536

static void read_xattrs(struct zlfs_sb *sbi, struct walk *w, uint32_t ino)
{
	struct zinode *zi;
	struct zattr a;
	size_t len = 0, vlen;
	int ret;
	char *list = w->buf + XBUF, *val = w->buf;

	phase("listxattr %u", ino);
	zlfs_op_begin(sbi, true);
	if (!(ret = zlfs_inode_attr(sbi, ino, &a)) && !a.no_xattr &&
	    !(ret = zlfs_iget(sbi, ino, &zi))) {
		if (!(ret = zlfs_xattr_list(sbi, zi, NULL, 0, &len)))
			ret = zlfs_xattr_list(sbi, zi, list, XBUF, &len);
	}
	zlfs_op_end(sbi, true);
	if (counted(ret) || !len)
		return;
	CHILD_CHECK(len <= XBUF, "listxattr returned %zu bytes", len);
	list[len < XBUF ? len : XBUF - 1] = 0;
	if (w->nx < sizeof(w->x) / sizeof(w->x[0])) {
		w->x[w->nx].ino = ino;
		snprintf(w->x[w->nx++].name, sizeof(w->x[0].name), "%s", list);
	}
	int n = 0;
	for (size_t o = 0; o < len && n < 64; n++) {
		const char *name = list + o;
		size_t nl = strnlen(name, len - o);
		o += nl + 1;
		char nm[300];
		snprintf(nm, sizeof(nm), "%.*s", (int)nl, name);
		phase("getxattr %u %s", ino, nm);
		zlfs_op_begin(sbi, true);
		if (!(ret = zlfs_iget(sbi, ino, &zi)) && !(ret = zlfs_xattr_get(sbi, zi, nm, NULL, 0, &vlen)))
			ret = zlfs_xattr_get(sbi, zi, nm, val, XBUF, &vlen);
		zlfs_op_end(sbi, true);
		counted(ret);
	}
	/* a name it does not have: ENODATA, not counted as an error */
	zlfs_op_begin(sbi, true);
	if (!zlfs_iget(sbi, ino, &zi))
		(void)zlfs_xattr_get(sbi, zi, "user.not-there", val, XBUF, &vlen);
	zlfs_op_end(sbi, true);
}

static void walk(struct zlfs_sb *sbi, struct walk *w)
{
	uint32_t *stack = malloc(MAX_DIRS * sizeof(uint32_t)), *seen = malloc(MAX_DIRS * sizeof(uint32_t));
	struct dent *de = malloc(MAX_DIRENTS * sizeof(*de));
	uint32_t nstack = 0, nseen = 0;

	CHILD_CHECK(stack && seen && de, "no memory");
	stack[nstack++] = ZF_ROOT_INO;
	seen[nseen++] = ZF_ROOT_INO;
	while (nstack) {
		uint32_t d = stack[--nstack];
		uint32_t n = read_dir(sbi, w, d, de);
		if (w->nd < sizeof(w->d) / sizeof(w->d[0])) {
			w->d[w->nd].ino = d;
			w->d[w->nd++].child = 0;
		}
		w->seen_dirs++;
		for (uint32_t i = 0; i < n; i++) {
			struct dent *e = &de[i];
			bool dots = (e->len == 1 && e->name[0] == '.') ||
				    (e->len == 2 && e->name[0] == '.' && e->name[1] == '.');
			struct zinode *dir, *zi;
			struct zattr a;
			uint32_t ino = 0;
			uint8_t ft;
			int ret;
			/* lookup, as the kernel's: the entry's attributes and a reference */
			phase("lookup %u/%s", d, e->name);
			zlfs_op_begin(sbi, true);
			if (!(ret = zlfs_dir_iget(sbi, d, &dir)) &&
			    !(ret = zlfs_dir_lookup(sbi, dir, e->name, e->len, &ino, &ft)) &&
			    !(ret = zlfs_inode_attr(sbi, ino, &a)) && !dots && !(ret = zlfs_iref(sbi, ino)))
				note_lookup(w, ino);
			zlfs_op_end(sbi, true);
			if (counted(ret) || dots)
				continue;
			if (ino != e->ino) {   /* readdirplus's view: the entry's own inode */
				phase("getattr %u (%s in %u)", e->ino, e->name, d);
				zlfs_op_begin(sbi, true);
				counted(zlfs_inode_attr(sbi, e->ino, &a));
				zlfs_op_end(sbi, true);
				continue;
			}
			/* open */
			phase("open %u (%s in %u)", ino, e->name, d);
			zlfs_op_begin(sbi, true);
			ret = zlfs_iget(sbi, ino, &zi);
			zlfs_op_end(sbi, true);
			if (counted(ret))
				continue;
			keep_entry(w, d, ino, a.mode, e->name);
			/* one entry of each directory (the last seen), each larger file */
			if (w->nd && w->d[w->nd - 1].ino == d) {
				w->d[w->nd - 1].child = ino;
				w->d[w->nd - 1].mode = a.mode;
				snprintf(w->d[w->nd - 1].name, sizeof(w->d[0].name), "%s", e->name);
			}
			if (S_ISREG(a.mode) && a.size >= ZF_BLKSIZE && w->nf < sizeof(w->f) / sizeof(w->f[0])) {
				w->f[w->nf].ino = ino;
				w->f[w->nf++].size = a.size;
			}
			if (S_ISREG(a.mode))
				read_file(sbi, w, ino, a.size);
			else if (S_ISLNK(a.mode))
				read_link(sbi, w, ino);
			read_xattrs(sbi, w, ino);
			if (S_ISDIR(a.mode) && nseen < MAX_DIRS) {
				bool dup = false;
				for (uint32_t k = 0; k < nseen && !dup; k++)
					dup = seen[k] == ino;
				if (!dup) {
					seen[nseen++] = ino;
					stack[nstack++] = ino;
				}
			}
		}
	}
	free(stack);
	free(seen);
	free(de);
}

/* A random directory seen by the walk (the root if none). */
static uint32_t some_dir(struct walk *w)
{
	for (int t = 0; t < 8 && w->ne; t++) {
		struct ent *e = &w->e[rn(&w->rng, w->ne)];
		if (S_ISDIR(e->mode))
			return e->ino;
	}
	return ZF_ROOT_INO;
}

static uint32_t do_create(struct zlfs_sb *sbi, struct walk *w, uint32_t dir, const char *name,
			  mode_t mode, const char *link)
{
	struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *zi;
	uint32_t ino = 0;
	int ret;

	phase("create %s in %u", name, dir);
	zlfs_op_begin(sbi, false);
	if (!(ret = zlfs_create(sbi, &c, dir, name, mode, 0, link, &zi))) {
		zlfs_inode_ref(sbi, zi);
		note_lookup(w, zi->ino);
		ino = zi->ino;
	}
	zlfs_op_end(sbi, false);
	counted(ret);
	return ino;
}

/* A truncate as SETATTR makes it (zlfs_setattr: room, the flags, ctime). */
static void do_truncate(struct zlfs_sb *sbi, uint32_t ino, uint64_t size)
{
	struct zlfs_iattr ia = { .valid = ZLFS_ATTR_SIZE, .size = size };
	struct zinode *zi;
	int ret;

	phase("truncate %u to %llu", ino, (unsigned long long)size);
	clock_gettime(CLOCK_REALTIME_COARSE, &ia.now);
	zlfs_op_begin(sbi, false);
	if (!(ret = zlfs_iget(sbi, ino, &zi)))
		ret = zlfs_setattr(sbi, zi, &ia, NULL);
	zlfs_op_end(sbi, false);
	counted(ret);
}

static void do_write(struct zlfs_sb *sbi, struct walk *w, uint32_t ino, uint64_t off, size_t len)
{
	struct zinode *zi;
	int ret;

	tu_fill(w->buf, len, off ^ ino);
	phase("write %u at %llu, %zu bytes", ino, (unsigned long long)off, len);
	zlfs_op_begin(sbi, false);
	if (!(ret = zlfs_writable(sbi)) &&
	    !(ret = zlfs_balance(sbi, (len + ZF_BLKSIZE - 1) / ZF_BLKSIZE + 3)) &&
	    !(ret = zlfs_iget(sbi, ino, &zi)))
		ret = zlfs_file_write(sbi, zi, w->buf, len, off);
	zlfs_op_end(sbi, false);
	counted(ret);
}

static void modify(struct zlfs_sb *sbi, struct walk *w)
{
	struct zinode *zi;
	char name[64];
	int ret;

	uint32_t f = do_create(sbi, w, ZF_ROOT_INO, "dmg-new", S_IFREG | 0644, NULL);
	if (f) {
		do_write(sbi, w, f, 0, 8192);
		do_write(sbi, w, f, (1u << 20) + 100, 4096);
		read_file(sbi, w, f, (1u << 20) + 4196);
		if (rn(&w->rng, 2)) {
			phase("fsync %u", f);
			zlfs_op_begin(sbi, false);
			if (!(ret = zlfs_iget(sbi, f, &zi)))
				ret = zlfs_file_fsync(sbi, zi, false);
			zlfs_op_end(sbi, false);
			counted(ret);
		}
	}
	/* the xattrs, directories and files the walk found, each changed */
	for (uint32_t i = 0; i < w->nx; i++) {
		static const size_t sizes[] = { 24, 900, 0 };
		for (int k = 0; k < 3; k++) {
			const char *nm = k == 2 ? w->x[i].name : "user.dmg";
			phase("%sxattr %u %s", k == 2 ? "remove" : "set", w->x[i].ino, nm);
			tu_fill(w->buf, sizes[k], i);
			zlfs_op_begin(sbi, false);
			if (!(ret = zlfs_writable(sbi)) && !(ret = zlfs_iget(sbi, w->x[i].ino, &zi)))
				ret = k == 2 ? zlfs_xattr_remove(sbi, zi, nm)
					     : zlfs_xattr_set(sbi, zi, nm, w->buf, sizes[k], 0);
			zlfs_op_end(sbi, false);
			counted(ret);
		}
	}
	for (uint32_t i = 0; i < w->nd; i++) {
		snprintf(name, sizeof(name), "dmg-c%u", i);
		do_create(sbi, w, w->d[i].ino, name, i % 2 ? S_IFREG | 0644 : S_IFLNK | 0777, i % 2 ? NULL : "t");
		if (!w->d[i].child)
			continue;
		bool isdir = S_ISDIR(w->d[i].mode);
		phase("%s %u/%s", isdir ? "rmdir" : "unlink", w->d[i].ino, w->d[i].name);
		zlfs_op_begin(sbi, false);
		ret = zlfs_unlink(sbi, w->d[i].ino, w->d[i].name, isdir);
		zlfs_op_end(sbi, false);
		counted(ret);
	}
	for (uint32_t i = 0; i < w->nf; i++) {
		uint64_t sz = w->f[i].size;
		do_write(sbi, w, w->f[i].ino, rnd(&w->rng) % (sz < (64u << 20) ? sz : (64u << 20)), 4096);
		if (rn(&w->rng, 3))
			continue;
		do_truncate(sbi, w->f[i].ino, sz / 2);
	}

	uint32_t d = some_dir(w);
	uint32_t nd = do_create(sbi, w, d, "dmg-dir", S_IFDIR | 0755, NULL);
	if (nd) {
		uint32_t g = do_create(sbi, w, nd, "g", S_IFREG | 0644, NULL);
		if (g)
			do_write(sbi, w, g, 0, 100);
		do_create(sbi, w, nd, "l", S_IFLNK | 0777, "g");
	}
	for (unsigned int k = 4 + rn(&w->rng, 6); k && w->ne; k--) {
		struct ent *e = &w->e[rn(&w->rng, w->ne)];
		bool isdir = S_ISDIR(e->mode), isreg = S_ISREG(e->mode);
		unsigned int op = rn(&w->rng, 9);
		switch (op) {
		case 0:   /* unlink or rmdir */
			phase("%s %u/%s", isdir ? "rmdir" : "unlink", e->dir, e->name);
			zlfs_op_begin(sbi, false);
			ret = zlfs_unlink(sbi, e->dir, e->name, isdir);
			zlfs_op_end(sbi, false);
			counted(ret);
			break;
		case 1: { /* rename, maybe over or exchanging with another entry */
			struct ent *o = &w->e[rn(&w->rng, w->ne)];
			unsigned int fl = 0;
			uint32_t to = some_dir(w);
			const char *nn = name;
			snprintf(name, sizeof(name), "dmg-ren-%u", k);
			switch (rn(&w->rng, 4)) {
			case 0: to = o->dir; nn = o->name; break;
			case 1: to = o->dir; nn = o->name; fl = RENAME_EXCHANGE; break;
			case 2: fl = RENAME_NOREPLACE; break;
			default: break;
			}
			phase("rename %u/%s -> %u/%s (%#x)", e->dir, e->name, to, nn, fl);
			zlfs_op_begin(sbi, false);
			ret = zlfs_rename(sbi, e->dir, e->name, to, nn, fl);
			zlfs_op_end(sbi, false);
			counted(ret);
			break;
		}
		case 2:   /* write into it */
			if (isreg)
				do_write(sbi, w, e->ino, (uint64_t)rn(&w->rng, 6u << 20), 1 + rn(&w->rng, 20000));
			break;
		case 3:   /* truncate */
			if (isreg) {
				uint64_t sz = rn(&w->rng, 3) ? rn(&w->rng, 8u << 20) : (uint64_t)rn(&w->rng, 64) << 20;
				do_truncate(sbi, e->ino, sz);
			}
			break;
		case 4:   /* fallocate */
			if (isreg) {
				static const int modes[] = { 0, FALLOC_FL_KEEP_SIZE,
					FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE };
				int m = modes[rn(&w->rng, 4)];
				uint64_t off = rn(&w->rng, 6u << 20), len = 1 + rn(&w->rng, 1u << 20);
				phase("fallocate %u mode %#x %llu+%llu", e->ino, m, (unsigned long long)off,
				      (unsigned long long)len);
				zlfs_op_begin(sbi, false);
				if (!(ret = zlfs_writable(sbi)) && !(ret = zlfs_balance(sbi, len / ZF_BLKSIZE + 4)) &&
				    !(ret = zlfs_iget(sbi, e->ino, &zi)))
					ret = zlfs_file_fallocate(sbi, zi, m, off, len);
				zlfs_op_end(sbi, false);
				counted(ret);
			}
			break;
		case 5: { /* set an xattr: small (inline) or large (the xattr node) */
			size_t len = rn(&w->rng, 2) ? 24 : 900;
			tu_fill(w->buf, len, k);
			phase("setxattr %u user.dmg (%zu bytes)", e->ino, len);
			zlfs_op_begin(sbi, false);
			if (!(ret = zlfs_writable(sbi)) && !(ret = zlfs_iget(sbi, e->ino, &zi)))
				ret = zlfs_xattr_set(sbi, zi, "user.dmg", w->buf, len, 0);
			zlfs_op_end(sbi, false);
			counted(ret);
			break;
		}
		case 6: { /* remove one */
			static const char *const names[] = { "user.a", "user.big3", "user.tag",
							     "system.posix_acl_access", "user.dmg" };
			const char *nm = names[rn(&w->rng, 5)];
			phase("removexattr %u %s", e->ino, nm);
			zlfs_op_begin(sbi, false);
			if (!(ret = zlfs_writable(sbi)) && !(ret = zlfs_balance(sbi, 4)) &&
			    !(ret = zlfs_iget(sbi, e->ino, &zi)))
				ret = zlfs_xattr_remove(sbi, zi, nm);
			zlfs_op_end(sbi, false);
			counted(ret);
			break;
		}
		case 7:   /* a hard link */
			if (!isdir) {
				snprintf(name, sizeof(name), "dmg-link-%u", k);
				phase("link %u as %u/%s", e->ino, ZF_ROOT_INO, name);
				zlfs_op_begin(sbi, false);
				if (!(ret = zlfs_link(sbi, e->ino, some_dir(w), name, &zi))) {
					zlfs_inode_ref(sbi, zi);
					note_lookup(w, zi->ino);
				}
				zlfs_op_end(sbi, false);
				counted(ret);
			}
			break;
		default:  /* a new entry in a directory seen */
			snprintf(name, sizeof(name), "dmg-%u-%u", k, rn(&w->rng, 1000));
			if (isdir)
				do_create(sbi, w, e->ino, name, rn(&w->rng, 2) ? S_IFREG | 0600 : S_IFDIR | 0700,
					  NULL);
			break;
		}
	}
	phase("checkpoint");
	zlfs_op_begin(sbi, false);
	counted(zlfs_checkpoint(sbi, false));
	zlfs_op_end(sbi, false);
}

/* The kernel forgets every reference it held (orphans are freed here). */
static void forget_all(struct zlfs_sb *sbi, struct walk *w)
{
	phase("forget");
	zlfs_op_begin(sbi, false);
	for (uint32_t i = 0; i < w->nl; i++) {
		struct zinode *zi = zlfs_ifind(sbi, w->look[i]);
		if (zi)
			zlfs_iput(sbi, zi, w->nlook[i]);
	}
	zlfs_op_end(sbi, false);
	w->nl = 0;
}

static int mount_it(bool ro, uint32_t cache_mb, bool gc, struct zlfs_sb **sbi)
{
	struct zlfs_opts o;

	memset(&o, 0, sizeof(o));
	zlfs_disp_opts_default(&o.disp);
	zlfs_gc_opts_default(&o.gc);
	/* GC cleans at once, while the walk runs (the one nondeterministic part) */
	o.gc.mode = gc ? ZLFS_GC_URGENT : ZLFS_GC_OFF;
	o.gc.idle_ms = 0;
	o.gc.cp_interval_ms = 0;
	o.ro = ro;
	o.cache_mb = cache_mb;
	return zlfs_mount(V.work, &o, sbi, SH->mount_err, sizeof(SH->mount_err));
}

static void child(uint64_t seed, bool ro, uint32_t cache_mb, bool remount, bool gc)
{
	struct zlfs_sb *sbi;
	struct walk w;

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY);   /* gdb may look at a hang */
	memset(&w, 0, sizeof(w));
	w.rng = seed;
	w.e = calloc(MAX_KEEP, sizeof(*w.e));
	w.look = calloc(8192, sizeof(*w.look));
	w.nlook = calloc(8192, sizeof(*w.nlook));
	w.buf = malloc(2 * XBUF > CHUNK ? 2 * XBUF : CHUNK);
	CHILD_CHECK(w.e && w.look && w.nlook && w.buf, "no memory");
	phase("mount");
	if (mount_it(ro, cache_mb, gc, &sbi)) {
		SH->refused = 1;
		goto out;
	}
	SH->mounted = 1;
	walk(sbi, &w);
	if (!ro)
		modify(sbi, &w);
	forget_all(sbi, &w);
	zlfs_lock(sbi);
	SH->gc_runs += (uint32_t)sbi->st.bg_gc_runs;
	zlfs_unlock(sbi);
	phase("unmount");
	if (zlfs_unmount(sbi))
		SH->unmount_err = 1;
	if (!ro && remount) {
		/* what the filesystem wrote itself on top of the damage */
		phase("second mount");
		if (mount_it(false, cache_mb, gc, &sbi)) {
			SH->remount_refused = 1;
			goto out;
		}
		SH->remounted = 1;
		w.ne = w.nx = w.nd = w.nf = 0;
		walk(sbi, &w);
		forget_all(sbi, &w);
		phase("second unmount");
		if (zlfs_unmount(sbi))
			SH->unmount_err = 1;
	}
out:
	phase("exit");
	free(w.e);
	free(w.look);
	free(w.nlook);
	free(w.buf);
	exit(0);    /* not _exit: LeakSanitizer runs at exit */
}

/* ---- the parent: rounds ------------------------------------------------------------------------ */

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	return s && *s ? strtoull(s, NULL, 0) : def;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The child's log (its stderr: sanitizer reports, the filesystem's messages), at most `max` lines. */
static void print_log(unsigned int max)
{
	FILE *f = fopen(V.log, "r");
	char line[1024];
	unsigned int n = 0;

	if (!f)
		return;
	bool shadow = false;
	while (fgets(line, sizeof(line), f)) {
		/* ASan's shadow byte map says nothing here */
		if (!strncmp(line, "Shadow bytes around", 19))
			shadow = true;
		if (shadow && strstr(line, "==ABORTING"))
			shadow = false;
		if (!shadow && n++ < max)
			fputs(line, stderr);
	}
	if (n > max)
		fprintf(stderr, "[... %u more lines in %s]\n", n - max, V.log);
	fclose(f);
}

struct totals {
	uint32_t rounds, mounted, mounted_ro, refused, remounted, remount_refused, unmount_err, loops;
	uint32_t gc_runs;
	uint64_t ops, errs;
	uint32_t failed;
	uint32_t refused_by_class[C_NCLS];
};

static void region_sigs(uint64_t *sig)
{
	int fd = open(V.work, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	for (unsigned int i = 0; i < V.nkeep; i++)
		sig[i] = region_sig(fd, V.keep[i].start, V.keep[i].n);
	close(fd);
}

/* One round: damage a fresh copy, mount and use it in a child.  false: it failed. */
static bool run_round(uint64_t seed, uint32_t round, unsigned int timeout, bool verbose,
		      struct totals *t)
{
	uint64_t rs = seed ^ ((uint64_t)round * 0xd1b54a32d192ed03ull);
	struct dlog d;
	uint64_t before[4], after[4];

	rnd(&rs);
	memset(&d, 0, sizeof(d));
	copy_file(V.img, V.work);
	copy_file(V.pristine_zst, V.work_zst);
	damage_image(&rs, &d);
	bool ro = rn(&rs, 4) == 0;
	uint32_t cache_mb = rn(&rs, 3) ? 0 : 8;
	bool remount = !ro && rn(&rs, 3) == 0;
	uint64_t cseed = rnd(&rs);
	bool gc = !ro && rn(&rs, 3) == 0;
	if (!d.sb_touched)
		region_sigs(before);

	memset(SH, 0, sizeof(*SH));
	fflush(NULL);
	double t0 = now_s();
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		int lf = open(V.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (lf >= 0) {
			dup2(lf, 1);
			dup2(lf, 2);
		}
		child(cseed, ro, cache_mb, remount, gc);
	}
	int st = 0;
	bool hung = false;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		ck_assert_int_eq(r, 0);
		if (now_s() - t0 > timeout) {
			/* every thread's stack, then kill it */
			char cmd[1200];
			snprintf(cmd, sizeof(cmd), "timeout 120 gdb -p %d -batch -nx -ex 'set pagination off' "
				 "-ex 'thread apply all bt' >>'%s' 2>&1", (int)pid, V.log);
			if (system(cmd) != 0)
				fprintf(stderr, "(gdb could not show the hung child's stacks)\n");
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			hung = true;
			break;
		}
		usleep(pid ? 5000 : 0);
	}
	double secs = now_s() - t0;

	const char *why = NULL;
	char whybuf[128];
	if (hung) {
		snprintf(whybuf, sizeof(whybuf), "still running after %u s (a hang)", timeout);
		why = whybuf;
	} else if (WIFSIGNALED(st)) {
		snprintf(whybuf, sizeof(whybuf), "killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
		why = whybuf;
	} else if (WEXITSTATUS(st)) {
		snprintf(whybuf, sizeof(whybuf), "exit status %d (a sanitizer's report?)", WEXITSTATUS(st));
		why = whybuf;
	} else if (!d.sb_touched) {
		region_sigs(after);
		for (unsigned int i = 0; i < V.nkeep && !why; i++)
			if (before[i] != after[i]) {
				snprintf(whybuf, sizeof(whybuf), "wrote outside its areas: %s (blocks %u..%u)",
					 V.keep[i].what, V.keep[i].start, V.keep[i].start + V.keep[i].n - 1);
				why = whybuf;
			}
	}

	t->rounds++;
	t->mounted += SH->mounted;
	t->mounted_ro += SH->mounted && ro;
	t->refused += SH->refused;
	t->remounted += SH->remounted;
	t->remount_refused += SH->remount_refused;
	t->unmount_err += SH->unmount_err;
	t->loops += SH->loops;
	t->gc_runs += SH->gc_runs;
	t->ops += SH->ops;
	t->errs += SH->errs;
	/* also worth a look: what zlfs wrote itself and then refused to mount */
	if (verbose || why || SH->loops || SH->remount_refused) {
		fprintf(stderr, "round %u: %s%s%s, %s%s%s, %u ops, %u errors%s%s%s, %.2f s\n%s", round,
			ro ? "read-only" : "read-write", cache_mb ? ", 8 MiB cache" : "", gc ? ", GC" : "",
			SH->mounted ? "mounted" : "refused", SH->refused ? ": " : "",
			SH->refused ? SH->mount_err : "", SH->ops, SH->errs,
			SH->loops ? ", READDIR DID NOT END" : "",
			SH->remount_refused ? ", ITS OWN RESULT REFUSED AT THE SECOND MOUNT: " : "",
			SH->remount_refused ? SH->mount_err : "", secs, d.text);
	}
	if (!why)
		return true;
	t->failed++;
	fprintf(stderr, "\n==== FAILED: round %u of seed %#llx: %s\n"
		"==== last step: %s\n==== damage:\n%s==== child's output:\n", round,
		(unsigned long long)seed, why, SH->phase, d.text);
	print_log(250);
	const char *skip = getenv("ZLFS_DAMAGE_SKIP");
	fprintf(stderr, "==== reproduce: ZLFS_DAMAGE_SEED=%#llx ZLFS_DAMAGE_ROUND=%u %s%s%s"
		"ZLFS_DAMAGE_VERBOSE=1 meson test -C <build> damage --print-errorlogs\n\n",
		(unsigned long long)seed, round, skip && *skip ? "ZLFS_DAMAGE_SKIP='" : "",
		skip && *skip ? skip : "", skip && *skip ? "' " : "");
	return false;
}

START_TEST(test_damage)
{
	uint64_t seed = env_u64("ZLFS_DAMAGE_SEED", DEFAULT_SEED);
	uint32_t rounds = (uint32_t)env_u64("ZLFS_DAMAGE_ROUNDS", DEFAULT_ROUNDS);
	unsigned int timeout = (unsigned int)env_u64("ZLFS_DAMAGE_TIMEOUT", DEFAULT_TIMEOUT);
	bool verbose = env_u64("ZLFS_DAMAGE_VERBOSE", 0) != 0;
	uint32_t first = 0, last = rounds;
	struct totals t;

	if (getenv("ZLFS_DAMAGE_ROUND") && *getenv("ZLFS_DAMAGE_ROUND")) {
		first = (uint32_t)env_u64("ZLFS_DAMAGE_ROUND", 0);
		last = first + 1;
	}
	const char *skip = getenv("ZLFS_DAMAGE_SKIP");
	for (int c = 0; skip && c < C_NCLS; c++) {
		size_t n = strlen(cls_name[c]);
		for (const char *p = strstr(skip, cls_name[c]); p; p = strstr(p + 1, cls_name[c]))
			if ((p == skip || p[-1] == ',') && (!p[n] || p[n] == ','))
				skip_cls[c] = true;
	}
	memset(&t, 0, sizeof(t));
	SH = mmap(NULL, sizeof(*SH), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(SH, MAP_FAILED);
	double t0 = now_s();
	V.img = tu_fs_volume("pristine.img");
	build_volume(V.img);
	tu_fsck_clean(V.img);
	if (asprintf(&V.pristine_zst, "%s.zst", V.img) < 0)
		ck_abort();
	V.work = tu_path("work.img");
	if (asprintf(&V.work_zst, "%s.zst", V.work) < 0)
		ck_abort();
	V.log = tu_path("child.log");
	gather();
	fprintf(stderr, "damage: seed %#llx, rounds %u..%u, timeout %u s; volume: main at %u, "
		"%u segments, max_nid %u, %u inodes, %u nodes, %u sections for GC; targets:",
		(unsigned long long)seed, first, last - 1, timeout, V.lay.main_blkaddr,
		V.lay.segment_count_main, V.max_nid, V.ninos, V.nnodes, V.gc_candidates);
	for (int c = 0; c < C_NCLS; c++)
		if (tl[c].nf || tl[c].nb)
			fprintf(stderr, " %s %u/%u", cls_name[c], tl[c].nf, tl[c].nb);
	fprintf(stderr, " (fields/blocks); made in %.1f s\n", now_s() - t0);

	for (uint32_t r = first; r < last; r++)
		run_round(seed, r, timeout, verbose, &t);

	fprintf(stderr, "damage: %u rounds in %.1f s (seed %#llx): %u mounted (%u read-only), %u refused; "
		"second mounts %u (%u refused); %u unmounts failed; %llu operations, %llu hit an error; "
		"%u sections cleaned by GC; %u readdirs did not end; %u failed\n", t.rounds,
		now_s() - t0, (unsigned long long)seed, t.mounted, t.mounted_ro, t.refused, t.remounted,
		t.remount_refused, t.unmount_err, (unsigned long long)t.ops, (unsigned long long)t.errs,
		t.gc_runs, t.loops, t.failed);
	ck_assert_msg(t.failed == 0, "%u of %u rounds crashed, hung or wrote outside the areas "
		      "(seed %#llx; see above)", t.failed, t.rounds, (unsigned long long)seed);
	munmap(SH, sizeof(*SH));
	free(V.img);
	free(V.pristine_zst);
	free(V.work);
	free(V.work_zst);
	free(V.log);
}
END_TEST

/* ---- crafted images: three the seeded rounds found hangs on ---------------------------------- */

/* Set inode ino's i_mode and/or i_size in its block on img (NULL: leave it). */
static void craft_inode(const char *img, uint32_t ino, const uint16_t *mode, const uint64_t *size,
			const uint32_t *depth)
{
	uint32_t a = tu_node_addr(img, ino);
	struct zf_node *n = malloc(ZF_BLKSIZE);

	ck_assert_ptr_nonnull(n);
	tu_blk_read(img, a, n);
	ck_assert_uint_eq(zf_le32_to_cpu(n->footer.nid), ino);
	if (mode)
		n->i.i_mode = zf_cpu_to_le16(*mode);
	if (size)
		n->i.i_size = zf_cpu_to_le64(*size);
	if (depth)
		n->i.i_current_depth = zf_cpu_to_le32(*depth);
	tu_blk_write(img, a, n);
	free(n);
}

/*
 * The root inode crafted to i_mode: refused at mount (read-write, the
 * mount that would checkpoint), the reason naming fsck.zlfs, and neither
 * the image nor its zone state changed by the refusal.  (The daemon
 * served such a volume and failed every request; with mode 0100644 or 0
 * it also wrote a checkpoint first.)
 */
static void root_refused(uint16_t mode, const char *want)
{
	char *img = tu_fs_volume("root.img"), *zst;
	struct zlfs_opts o;
	struct zlfs_sb *sbi = NULL;
	char err[256] = "";

	ck_assert_int_ge(asprintf(&zst, "%s.zst", img), 0);
	craft_inode(img, ZF_ROOT_INO, &mode, NULL, NULL);
	uint64_t before = tu_file_hash(img), zbefore = tu_file_hash(zst);
	zlfs_opts_inprocess(&o);
	int ret = zlfs_mount(img, &o, &sbi, err, sizeof(err));
	ck_assert_msg(ret == -ZLFS_EFSCORRUPTED, "root mode 0%o: mount gave %d (%s)",
		      (unsigned int)mode, ret, err);
	ck_assert_ptr_null(sbi);
	ck_assert_msg(strstr(err, "fsck.zlfs") && strstr(err, want),
		      "root mode 0%o: the reason \"%s\" must say \"%s\" and fsck.zlfs",
		      (unsigned int)mode, err, want);
	ck_assert_msg(tu_file_hash(img) == before, "the refused mount wrote to the image");
	ck_assert_msg(tu_file_hash(zst) == zbefore, "the refused mount changed the zone state");
	/* read-only is refused the same way */
	o.ro = true;
	ck_assert_int_eq(zlfs_mount(img, &o, &sbi, err, sizeof(err)), -ZLFS_EFSCORRUPTED);
	unlink(img);
	unlink(zst);
	free(zst);
	free(img);
}

START_TEST(test_root_regular)
{
	root_refused(S_IFREG | 0644, "not a directory");
}
END_TEST

START_TEST(test_root_mode0)
{
	root_refused(0, "root");
}
END_TEST

static int count_emit(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t ft,
		      uint64_t next)
{
	(void)name;
	(void)len;
	(void)ino;
	(void)ft;
	(void)next;
	(*(uint32_t *)ctx)++;
	return 0;
}

/*
 * The walks of a directory whose i_size says 1 TiB (268 million blocks,
 * a few of them real) at its depth (1), and the largest i_size an inode
 * may have (3.9 TiB) with its depth crafted to the most F2FS allows (63,
 * where the hash table reaches past the node tree): a listing returns
 * every entry and a lookup answers, each in a fraction of a second (as a
 * punch of a sparse file that large does).  The walks visited every block
 * index (`ls -lR` of such a mount did not return: here 2 and 17 minutes);
 * run in a child so a hang fails the test after a generous limit (a
 * thousand times what the walk takes) rather than stopping the suite.
 */
static void dir_walks(const char *img, uint32_t dir)
{
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		struct zlfs_sb *sbi = tu_fs_mount(img, 0);
		struct zinode *d;
		uint32_t n = 0, ino;
		uint8_t ft;
		if (zlfs_iget(sbi, dir, &d) || zlfs_dir_iterate(sbi, d, 0, count_emit, &n))
			_exit(2);
		if (n != 302)              /* 300 entries, . and .. */
			_exit(3);
		if (zlfs_dir_lookup(sbi, d, "no-such-name", 12, &ino, &ft) != -ENOENT ||
		    zlfs_dir_lookup(sbi, d, "entry-299", 9, &ino, &ft))
			_exit(4);
		_exit(0);
	}
	int st;
	double t0 = now_s();
	pid_t r;
	while (!(r = waitpid(pid, &st, WNOHANG)) && now_s() - t0 < 120)
		usleep(20000);
	if (!r) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		ck_abort_msg("listing a directory with a crafted i_size did not end in 120 s");
	}
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the walk failed (status %#x)", st);
}

START_TEST(test_dir_1tib)
{
	char *img = tu_fs_volume("bigdir.img");
	struct tu_tree t;
	const uint64_t tib = 1ull << 40, most = zf_max_file_bytes() / ZF_BLKSIZE * ZF_BLKSIZE;
	const uint32_t deep = ZF_MAX_DIR_HASH_DEPTH;
	double t0;

	tu_make_tree(img, &t);
	craft_inode(img, t.dir, NULL, &tib, NULL);
	t0 = now_s();
	dir_walks(img, t.dir);
	fprintf(stderr, "dir_1tib: depth 1: %.2f s\n", now_s() - t0);
	craft_inode(img, t.dir, NULL, &most, &deep);
	t0 = now_s();
	dir_walks(img, t.dir);
	fprintf(stderr, "dir_1tib: %llu bytes, depth %u: %.2f s\n", (unsigned long long)most, deep,
		now_s() - t0);

	/* a punch across all those holes, on a sparse file that is not damaged at all */
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *f;
	ck_assert_int_eq(zlfs_iget(sbi, t.big, &f), 0);
	ck_assert_int_eq(zlfs_file_truncate(sbi, f, most), 0);
	ck_assert_int_eq(zlfs_file_write(sbi, f, "end", 3, most - 3), 0);
	t0 = now_s();
	ck_assert_int_eq(zlfs_file_fallocate(sbi, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
					     most), 0);
	fprintf(stderr, "dir_1tib: punch of %llu bytes: %.2f s\n", (unsigned long long)most,
		now_s() - t0);
	ck_assert_uint_eq(zf_le64_to_cpu(zi_raw(f)->i_size), most);
	zlfs_iput(sbi, f, 0);
	tu_fs_unmount(sbi);
	unlink(img);
	free(img);
}
END_TEST

int main(void)
{
	tu_mkfs_opts = TU_PLAIN_FEATURES;   /* the damage is made at raw inode offsets */
	Suite *s = suite_create("damage");
	/* first: quick, and CK_RUN_CASE=crafted runs them alone */
	TCase *cr = tcase_create("crafted");
	tcase_set_timeout(cr, 900);
	tcase_add_test(cr, test_root_regular);
	tcase_add_test(cr, test_root_mode0);
	tcase_add_test(cr, test_dir_1tib);
	suite_add_tcase(s, cr);
	TCase *tc = tcase_create("damage");
	tcase_set_timeout(tc, 880);
	tcase_add_test(tc, test_damage);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
