/*
 * fuzz_volume.c - libFuzzer harness for the two readers of untrusted
 * volumes: the mount (with a walk of everything it then serves) and
 * fsck.zlfs (check, or repair and check again), both in-process.
 *
 * The volume: made once, at start, by mkfs.zlfs ($ZLFS_MKFS, else beside
 * this program in the build: ../mkfs/mkfs.zlfs) on an emulated zoned image
 * in /dev/shm, populated in-process (a directory of 300 entries, a 3 MiB
 * file with direct nodes, an inline file, an inline directory of three
 * inline files, an inline symlink, xattrs inline and in a node; on a
 * volume with the compression feature, compressed files of text with each
 * algorithm, cluster sizes of 4 to 16 blocks, checksums on one, and one of
 * random data whose clusters stay raw), unmounted.  Its allocated extents are kept in memory and put
 * back before every input, so inputs do not depend on each other.
 *
 * An input: byte 0 says what to run (bit 0: mount read-write, bit 1: fsck
 * repairs (-y) then checks again, bit 2: no mount, bit 3: no fsck); then
 * records of { u16 target, u16 offset, u8 length (1..16), bytes }: target
 * picks one of the volume's allocated blocks (superblocks, checkpoint
 * packs, SIT, NAT, SSA, nodes, dentry and data blocks; the compressed
 * clusters' blocks weighted up to about a sixth of the picks), offset a
 * byte in it.  Any error is an answer; a crash, a sanitizer report or a hang is
 * what the fuzzer looks for.
 *
 * Run it with -close_fd_mask=3 to silence the filesystem's and fsck's
 * messages (libFuzzer keeps its own).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsck.h"
#include "zlfs.h"
#include "checkpoint.h"
#include "inode.h"
#include "node.h"
#include "namei.h"
#include "file.h"
#include "dir.h"
#include "xattr.h"

static char img[256], zst[300];
static struct extent {
	off_t off;
	size_t len;
	uint8_t *data;
} *ext;
static size_t nextents, img_size;
static uint8_t *zst_data;
static size_t zst_len;
static uint32_t *targets;
static size_t ntargets;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_volume: %s: %s\n", what, strerror(errno));
	abort();
}

static void populate(void)
{
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	struct zinode *zi, *d;
	struct zlfs_cred c = { 0, 0, 0 };
	char err[256], name[32];
	static char buf[1 << 20];

	zlfs_opts_inprocess(&o);
	o.compr.given = true;
	o.compr.next = 1;
	strcpy(o.compr.ext[0], "cz");      /* *.cz files are made compressed */
	if (zlfs_mount(img, &o, &sbi, err, sizeof(err))) {
		fprintf(stderr, "fuzz_volume: mount: %s\n", err);
		abort();
	}
	zlfs_lock(sbi);
	/* compressed files: each algorithm, clusters of 4 to 16 blocks, one checksummed */
	static const char words[] = "zone log cluster checkpoint node segment f2fs the of\n";
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = words[(i * 7 + i / 13) % (sizeof(words) - 1)];
	static const struct { uint8_t alg, log; bool chk; } cf[] = {
		{ 1, 2, true }, { 2, 4, false }, { 0, 2, false }, { 3, 3, false },
	};
	for (size_t k = 0; k < sizeof(cf) / sizeof(cf[0]); k++) {
		sbi->compr.alg = cf[k].alg;
		sbi->compr.log = cf[k].log;
		sbi->compr.chksum = cf[k].chk;
		snprintf(name, sizeof(name), "c%zu.cz", k);
		if (zlfs_create(sbi, &c, ZF_ROOT_INO, name, S_IFREG | 0644, 0, NULL, &zi) ||
		    zlfs_file_write(sbi, zi, buf, 96 << 10, 0) ||
		    zlfs_file_write(sbi, zi, "partial", 7, 5000))
			abort();
	}
	for (size_t i = 0; i < 64 << 10; i++)
		buf[i] = (char)((i * 2654435761u) >> 13);
	if (zlfs_create(sbi, &c, ZF_ROOT_INO, "raw.cz", S_IFREG | 0644, 0, NULL, &zi) ||
	    zlfs_file_write(sbi, zi, buf, 64 << 10, 0))
		abort();
	memset(buf, 'z', sizeof(buf));
	if (zlfs_create(sbi, &c, ZF_ROOT_INO, "d", S_IFDIR | 0755, 0, NULL, &d))
		abort();
	uint32_t dino = d->ino;
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "entry-%d", i);
		if (zlfs_create(sbi, &c, dino, name, S_IFREG | 0644, 0, NULL, &zi) ||
		    (i % 50 == 0 && zlfs_file_write(sbi, zi, buf, 5000, 0)))
			abort();
	}
	if (zlfs_create(sbi, &c, ZF_ROOT_INO, "big", S_IFREG | 0644, 0, NULL, &zi))
		abort();
	for (int k = 0; k < 3; k++)
		if (zlfs_file_write(sbi, zi, buf, sizeof(buf), (uint64_t)k << 20))
			abort();
	if (zlfs_create(sbi, &c, ZF_ROOT_INO, "i", S_IFREG | 0644, 0, NULL, &zi) ||
	    zlfs_file_write(sbi, zi, "tiny", 4, 0) ||
	    zlfs_xattr_set(sbi, zi, "user.small", "v", 1, 0) ||
	    zlfs_xattr_set(sbi, zi, "user.large", buf, 1000, 0) ||
	    zlfs_create(sbi, &c, ZF_ROOT_INO, "l", S_IFLNK | 0777, 0, "d/entry-7", &zi))
		abort();
	if (zlfs_create(sbi, &c, ZF_ROOT_INO, "s", S_IFDIR | 0755, 0, NULL, &d))
		abort();
	dino = d->ino;
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		if (zlfs_create(sbi, &c, dino, name, S_IFREG | 0644, 0, NULL, &zi) ||
		    zlfs_file_write(sbi, zi, name, 2, 0))
			abort();
	}
	zlfs_unlock(sbi);
	if (zlfs_unmount(sbi))
		abort();
}

/* Keep the image's allocated extents, the zone state and the block list. */
static void snapshot(void)
{
	int fd = open(img, O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st))
		die(img);
	img_size = (size_t)st.st_size;
	for (off_t pos = 0;;) {
		off_t a = lseek(fd, pos, SEEK_DATA), b;
		if (a < 0)
			break;
		b = lseek(fd, a, SEEK_HOLE);
		ext = realloc(ext, (nextents + 1) * sizeof(*ext));
		struct extent *e = &ext[nextents++];
		e->off = a;
		e->len = (size_t)(b - a);
		if (!(e->data = malloc(e->len)) || pread(fd, e->data, e->len, a) != (ssize_t)e->len)
			die("snapshot");
		for (off_t blk = a / ZF_BLKSIZE; blk < b / ZF_BLKSIZE; blk++) {
			targets = realloc(targets, (ntargets + 1) * sizeof(*targets));
			targets[ntargets++] = (uint32_t)blk;
		}
		pos = b;
	}
	close(fd);
	fd = open(zst, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		die(zst);
	zst_len = (size_t)st.st_size;
	if (!(zst_data = malloc(zst_len)) || pread(fd, zst_data, zst_len, 0) != (ssize_t)zst_len)
		die("zone state");
	close(fd);
}

static void restore(void)
{
	int fd = open(img, O_WRONLY);

	if (fd < 0 || ftruncate(fd, 0) || ftruncate(fd, (off_t)img_size))
		die("restore");
	for (size_t i = 0; i < nextents; i++)
		if (pwrite(fd, ext[i].data, ext[i].len, ext[i].off) != (ssize_t)ext[i].len)
			die("restore");
	close(fd);
	fd = open(zst, O_WRONLY);
	if (fd < 0 || pwrite(fd, zst_data, zst_len, 0) != (ssize_t)zst_len)
		die("restore zone state");
	close(fd);
}

/*
 * The blocks that hold compressed clusters (the streams of the .cz files)
 * are few among the volume's, so each goes into the target list
 * CLUSTER_WEIGHT times more: about a sixth of the records then craft a
 * cluster's header or stream.  The share is said once on stderr.
 */
#define CLUSTER_WEIGHT 24
static void count_cluster_targets(void)
{
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	char err[256];
	size_t n = 0;

	zlfs_opts_inprocess(&o);
	o.ro = true;
	if (zlfs_mount(img, &o, &sbi, err, sizeof(err)))
		return;
	zlfs_lock(sbi);
	static const char *names[] = { "c0.cz", "c1.cz", "c2.cz", "c3.cz" };
	for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
		struct zinode *d, *zi;
		uint32_t ino;
		uint8_t ft;
		if (zlfs_dir_iget(sbi, ZF_ROOT_INO, &d) ||
		    zlfs_dir_lookup(sbi, d, names[f], strlen(names[f]), &ino, &ft) ||
		    zlfs_iget(sbi, ino, &zi))
			continue;
		bool in = false;
		for (uint64_t b = 0; b < 32; b++) {
			struct znode *dn;
			unsigned int ofs, nr;
			if (zlfs_get_dnode(sbi, zi, b, false, &dn, &ofs))
				break;
			uint32_t a = zf_le32_to_cpu(zlfs_dnode_addrs(sbi, dn, &nr)[ofs]);
			if (!(b & ((1u << zf_cluster_log(zi_raw(zi), zlfs_feat(sbi))) - 1)))
				in = a == ZF_COMPRESS_ADDR;
			if (!in || a == ZF_COMPRESS_ADDR || a == ZF_NEW_ADDR || a == ZF_NULL_ADDR)
				continue;
			targets = realloc(targets, (ntargets + CLUSTER_WEIGHT) * sizeof(*targets));
			if (!targets)
				die("targets");
			for (int w = 0; w < CLUSTER_WEIGHT; w++)
				targets[ntargets++] = a;
			n += CLUSTER_WEIGHT;
		}
	}
	zlfs_unlock(sbi);
	zlfs_unmount(sbi);
	fprintf(stderr, "fuzz_volume: %zu targets to craft, %zu of them compressed clusters' "
		"blocks (%.1f%% of the records)\n", ntargets, n,
		ntargets ? 100.0 * (double)n / (double)ntargets : 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char mkfs[512], self[512], dir[] = "/dev/shm/zlfs-fuzz.XXXXXX", cmd[1400];
	(void)argc;
	(void)argv;

	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(img, sizeof(img), "%s/vol.img", dir);
	snprintf(zst, sizeof(zst), "%s.zst", img);
	const char *env = getenv("ZLFS_MKFS");
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		die("/proc/self/exe");
	self[n] = 0;
	if (env && *env)
		snprintf(mkfs, sizeof(mkfs), "%s", env);
	else
		snprintf(mkfs, sizeof(mkfs), "%s/../mkfs/mkfs.zlfs", dirname(self));
	struct zlfs_image_params p = { 512ull << 20, 16ull << 20, 0, 4, 0, 0, 4096, false };
	if (zlfs_image_create(img, &p, true))
		die("image");
	snprintf(cmd, sizeof(cmd), "'%s' -f -O compression '%s' >/dev/null", mkfs, img);
	if (system(cmd))
		die("mkfs.zlfs");
	populate();
	snapshot();
	count_cluster_targets();
	return 0;
}

/* ---- the mount: everything a FUSE client could ask ------------------------------------ */

struct walk {
	struct zlfs_sb *sbi;
	uint32_t dirs[64];
	unsigned int ndirs;
	unsigned int entries;
};

static int see(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t ftype, uint64_t next)
{
	struct walk *w = ctx;
	struct zattr a;
	(void)next;

	if (++w->entries > 5000)
		return 1;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	if (zlfs_inode_attr(w->sbi, ino, &a))
		return 0;
	if (ftype == ZF_FT_DIR && w->ndirs < 64)
		w->dirs[w->ndirs++] = ino;
	return 0;
}

static void read_all(struct zlfs_sb *sbi, struct zinode *zi)
{
	static char buf[256 << 10];
	size_t got;

	for (uint64_t off = 0; off < (4u << 20); off += got)
		if (zlfs_file_read(sbi, zi, buf, sizeof(buf), off, &got) || !got)
			break;
	char list[4096];
	size_t len;
	if (zlfs_xattr_list(sbi, zi, list, sizeof(list), &len) || len > sizeof(list))
		return;
	for (size_t at = 0; at < len; at += strnlen(list + at, len - at) + 1) {
		if (strnlen(list + at, len - at) == len - at)
			break;
		zlfs_xattr_get(sbi, zi, list + at, buf, sizeof(buf), &got);
	}
}

static void mount_walk(bool rw)
{
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	char err[256];

	zlfs_opts_inprocess(&o);
	o.ro = !rw;
	o.cache_mb = 8;
	if (zlfs_mount(img, &o, &sbi, err, sizeof(err)))
		return;
	zlfs_lock(sbi);
	struct walk w = { .sbi = sbi, .dirs = { ZF_ROOT_INO }, .ndirs = 1 };
	for (unsigned int k = 0; k < w.ndirs; k++) {
		struct zinode *dir;
		if (zlfs_dir_iget(sbi, w.dirs[k], &dir))
			continue;
		zlfs_dir_iterate(sbi, dir, 0, see, &w);
	}
	/* every inode the NAT names as an inode: what a file handle could reach */
	for (uint32_t ino = ZF_ROOT_INO; ino < sbi->max_nid && ino < 4096; ino++) {
		struct zinode *zi;
		if (zlfs_nat(sbi, ino)->ino != ino || zlfs_iget(sbi, ino, &zi))
			continue;
		mode_t m = zf_le16_to_cpu(zi_raw(zi)->i_mode);
		if (S_ISREG(m) || S_ISLNK(m))
			read_all(sbi, zi);
	}
	if (rw && !zlfs_writable(sbi)) {
		struct zlfs_cred c = { 0, 0, 0 };
		struct zinode *zi;
		static char buf[8192];
		if (!zlfs_create(sbi, &c, ZF_ROOT_INO, "new", S_IFREG | 0644, 0, NULL, &zi)) {
			zlfs_file_write(sbi, zi, buf, sizeof(buf), 0);
			zlfs_file_fsync(sbi, zi, false);
		}
		zlfs_unlink(sbi, ZF_ROOT_INO, "i", false);
		zlfs_rename(sbi, ZF_ROOT_INO, "big", ZF_ROOT_INO, "big2", 0);
		zlfs_checkpoint(sbi, false);
	}
	zlfs_unlock(sbi);
	zlfs_unmount(sbi);
}

/* ---- fsck ------------------------------------------------------------------------------- */

static void fsck_once(enum fsck_mode mode)
{
	struct fsck f;
	char err[256];

	memset(&f, 0, sizeof(f));
	f.spec = img;
	f.mode = mode;
	f.force = true;
	if (zlfs_open_volume(img, &f.dev, err, sizeof(err)))
		return;
	fsck_run(&f);
	if (f.dev)
		zlfs_zdev_close(f.dev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	uint8_t what = data[0];
	restore();
	int fd = open(img, O_RDWR);
	if (fd < 0)
		die(img);
	for (size_t at = 1; at + 5 <= size; ) {
		uint16_t t = (uint16_t)(data[at] | data[at + 1] << 8);
		uint16_t off = (uint16_t)((data[at + 2] | data[at + 3] << 8) % ZF_BLKSIZE);
		size_t len = (size_t)(data[at + 4] % 16) + 1;
		at += 5;
		if (at + len > size)
			len = size - at;
		if (!len)
			break;
		if (off + len > ZF_BLKSIZE)
			len = ZF_BLKSIZE - off;
		uint64_t pos = (uint64_t)targets[t % ntargets] * ZF_BLKSIZE + off;
		if (pwrite(fd, data + at, len, (off_t)pos) != (ssize_t)len)
			die("patch");
		at += len;
	}
	close(fd);
	if (!(what & 4))
		mount_walk(what & 1);
	if (!(what & 8)) {
		if (what & 2) {
			fsck_once(FSCK_MODE_YES);
			fsck_once(FSCK_MODE_CHECK);
		} else {
			fsck_once(FSCK_MODE_CHECK);
		}
	}
	return 0;
}
