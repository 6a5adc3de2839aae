/*
 * main.c - the zlfs daemon: zlfs DEVICE MOUNTPOINT [-o OPTIONS] [-f] [-d]
 *
 * The mount options, zlfs's own and those it passes on to FUSE and the
 * kernel, are described in zlfs(8) (man/zlfs.8), briefly by --help
 * (usage below); opt_fixed is the table of zlfs's own.
 *
 * Order of events: (fork, unless -f) -> open and mount the device -> FUSE
 * session and kernel mount -> tell the parent it worked -> serve -> on
 * unmount: final checkpoint, close the device, exit.  The fork comes first
 * because the device layer starts threads, which a fork would lose; the
 * parent waits for the child's verdict so errors reach the terminal and
 * the exit status.  A device still held by a daemon that is exiting (an
 * unmount just before) is retried for a few seconds.
 *
 * A block device is mounted as fuseblk (when root, unless -o nofuseblk):
 * then the kernel sends DESTROY at umount and waits for its reply, which
 * comes after the final checkpoint (fuse_ops.c), so umount returns with
 * the device clean.  The kernel holds the device exclusively for such a
 * mount, and would refuse to if we held it O_EXCL already, so the order
 * changes: the kernel mount first (its claim keeps any other owner out
 * from then on), then the device opened without O_EXCL (the spec option
 * excl=0).  Images, plain files and nofuseblk block devices are mounted
 * as fuse; zlfs-umount waits for those (umount.c).
 *
 * Readahead: the kernel's FUSE takes the max_readahead INIT asks for
 * (fuse_ops.c, 1 MiB) only up to the mount's backing-device readahead,
 * which starts at the kernel's default of 128 KiB, so sequential reads
 * came as 128 KiB requests.  As root, the daemon raises the mount's
 * read_ahead_kb (sysfs) to ZLFS_READAHEAD_KB before serving: INIT's reply
 * then leaves it there.  Without root it stays at the kernel's default.
 */
#include <errno.h>
#include <fcntl.h>
#include <fuse3/fuse_lowlevel.h>
#include <malloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "fuse_ops.h"
#include "zlfs.h"
#include "segment.h"

/* Exit statuses as mount(8)'s: bad usage, and a mount that failed. */
enum { EX_USAGE_ = 1, EX_FAIL_ = 32 };

/* A mountinfo field with its octal escapes (\040 for a space) decoded, in place. */
static char *mi_unescape(char *f)
{
	char *r = f, *w = f;

	while (*r) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return f;
}

/*
 * The sysfs directory of the FUSE mount at mnt's backing device (its
 * bdi: readahead, dirty limits) into dir; false if not found.  The
 * mount's device number comes from /proc/self/mountinfo: a stat() of the
 * mount point would wait for a daemon that is not serving yet.
 */
static bool mount_bdi(const char *mnt, char *dir, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], dev[32] = "";
	bool blk = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE ... */
		char *save, *fld[5], *t;
		int i;
		for (i = 0, t = strtok_r(line, " ", &save); t && i < 5; t = strtok_r(NULL, " ", &save))
			fld[i++] = t;
		if (i < 5 || strcmp(mi_unescape(fld[4]), mnt))
			continue;
		while ((t = strtok_r(NULL, " ", &save)) && strcmp(t, "-"))
			;
		if (!t || !(t = strtok_r(NULL, " ", &save)) || strncmp(t, "fuse", 4))
			continue;
		/* the last one listed is the newest mount there: ours */
		snprintf(dev, sizeof(dev), "%s", fld[2]);
		blk = !strcmp(t, "fuseblk") || !strncmp(t, "fuseblk.", 8);
	}
	fclose(f);
	if (!dev[0])
		return false;
	snprintf(dir, len, "/sys/class/bdi/%s%s", dev, blk ? "-fuseblk" : "");
	return true;
}

/* Raise the readahead of the FUSE mount at mnt (see the top of this file); best effort. */
static void set_readahead(const char *mnt)
{
	char path[160];

	if (!mount_bdi(mnt, path, sizeof(path) - 16))
		return;
	strcat(path, "/read_ahead_kb");
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char val[16];
	int n = snprintf(val, sizeof(val), "%d", ZLFS_READAHEAD_KB);
	if (write(fd, val, (size_t)n) != n && geteuid() == 0)
		fprintf(stderr, "zlfs: warning: cannot set %s: %s\n", path, strerror(errno));
	close(fd);
}

/* A number from a one-line file (sysfs, procfs); def if it cannot be read. */
static uint64_t read_u64(const char *path, uint64_t def)
{
	FILE *f = fopen(path, "re");
	unsigned long long v;

	if (!f)
		return def;
	if (fscanf(f, "%llu", &v) != 1)
		v = def;
	fclose(f);
	return v;
}

/*
 * The writeback gate's reserve (fuse_file.c): room for everything the
 * kernel may hold for this mount, dirty or under writeback, when the gate
 * closes.  The kernel bounds that per mount: FUSE's backing device has a
 * strict limit of max_ratio percent (1) of the dirty threshold, which
 * kernels since 6.2 also show in bytes (max_bytes); older ones are
 * estimated from MemTotal and vm.dirty_ratio / dirty_bytes (an upper
 * bound).  The reserve is twice that, plus 8 MiB for requests in flight:
 * the limit is enforced by throttling, which lets writers run a little
 * past it.  As root the mount's limit is first lowered to a 64th of the
 * volume (at least 8 MiB; never raised), so a small volume keeps little
 * aside; a user's mount cannot, and its reserve is capped at a quarter of
 * the volume, with what writeback then could not store counted
 * (wb_lost_writes in .zlfs/status).
 */
static void set_wb_reserve(const char *mnt, struct zlfs_sb *sbi)
{
	char dir[160], path[200];
	uint64_t limit, user = zlfs_user_bytes(sbi);

	if (!mount_bdi(mnt, dir, sizeof(dir)))
		return;
	snprintf(path, sizeof(path), "%s/max_bytes", dir);
	limit = read_u64(path, 0);
	if (!limit) {
		uint64_t dirty = read_u64("/proc/sys/vm/dirty_bytes", 0);
		FILE *f = fopen("/proc/meminfo", "re");
		unsigned long long kb = 0;
		if (f) {
			if (fscanf(f, "MemTotal: %llu kB", &kb) != 1)
				kb = 0;
			fclose(f);
		}
		if (!dirty)
			dirty = kb * 1024 / 100 * read_u64("/proc/sys/vm/dirty_ratio", 20);
		snprintf(path, sizeof(path), "%s/max_ratio", dir);
		limit = dirty / 100 * read_u64(path, 1);
	}
	uint64_t lim = user / 64 > (8u << 20) ? user / 64 : (8u << 20);
	if (geteuid() == 0 && lim < limit) {
		snprintf(path, sizeof(path), "%s/max_bytes", dir);
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			char val[32];
			int n = snprintf(val, sizeof(val), "%llu", (unsigned long long)lim);
			if (write(fd, val, (size_t)n) == n)
				limit = lim;
			close(fd);
		}
	}
	uint64_t want = 2 * limit + (8u << 20);
	if (want > user / 4)
		want = user / 4;
	zlfs_space_set_reserve(sbi, want / ZF_BLKSIZE);
}

struct cli {
	const char *device;
	const char *mnt;           /* as given (fuse_parse_cmdline resolves it) */
	struct zlfs_opts o;
	int no_wb;                 /* ints: the option table stores them (fuse_opt) */
	int norecovery;
	int nofuseblk;
	unsigned int max_read;     /* -o max_read=, else ZLFS_READ_MAX */
	int nonopt;
	int err;
};

/*
 * zlfs's mount options (zlfs(8) says what each does), each named in the
 * option table: it hands most to opt_proc by key, and stores the two
 * plain flags (no_writeback_cache, nofuseblk) itself.  What the table
 * does not name goes to opt_proc as FUSE_OPT_KEY_OPT: the unknown
 * members of the sched_ and gc_ families are refused there, naming the
 * option, and the rest is left for libfuse, which refuses what it does
 * not know when the session is made.
 */
enum {
	KEY_MODE, KEY_SCHED, KEY_GC, KEY_FSYNC, KEY_CACHE_MB, KEY_ATIME, KEY_RELATIME,
	KEY_STRICTATIME, KEY_DIRATIME, KEY_RO, KEY_NORECOVERY, KEY_INLINE, KEY_INLINE_XSIZE,
	KEY_COMPR,
};

static const struct fuse_opt opt_fixed[] = {
	/*
	 * mount(8)'s own options, which fstab lines carry and mount passes
	 * on (mount(8), fstab(5)): accepted and ignored, as a kernel
	 * filesystem never sees them (libfuse would refuse them as unknown);
	 * x-* too (opt_proc: a template cannot match a prefix without '=').
	 */
	FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("owner", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("group", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("comment=", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("mode=", KEY_MODE),
	/* the dispatcher's sched_NAME= follow, from its own table (opt_table) */
	FUSE_OPT_KEY("gc=", KEY_GC),
	FUSE_OPT_KEY("gc_policy=", KEY_GC),
	FUSE_OPT_KEY("gc_idle_ms=", KEY_GC),
	FUSE_OPT_KEY("gc_sleep_ms=", KEY_GC),
	FUSE_OPT_KEY("gc_no_gc_pct=", KEY_GC),
	FUSE_OPT_KEY("gc_boost_pct=", KEY_GC),
	FUSE_OPT_KEY("gc_cp_interval_ms=", KEY_GC),
	FUSE_OPT_KEY("fsync=", KEY_FSYNC),
	FUSE_OPT_KEY("cache_mb=", KEY_CACHE_MB),
	/*
	 * atime: the kernel leaves it to FUSE filesystems, so its mount
	 * options are ours (zlfs.h).  noatime and atime also go on to
	 * libfuse, which knows them as mount flags.
	 */
	FUSE_OPT_KEY("atime", KEY_ATIME),
	FUSE_OPT_KEY("noatime", KEY_ATIME),
	FUSE_OPT_KEY("relatime", KEY_RELATIME),
	FUSE_OPT_KEY("nostrictatime", KEY_RELATIME),
	FUSE_OPT_KEY("strictatime", KEY_STRICTATIME),
	FUSE_OPT_KEY("norelatime", KEY_STRICTATIME),
	FUSE_OPT_KEY("diratime", KEY_DIRATIME),
	FUSE_OPT_KEY("nodiratime", KEY_DIRATIME),
	/* lazytime: what zlfs does anyway (a checkpoint carries atime) */
	FUSE_OPT_KEY("lazytime", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nolazytime", FUSE_OPT_KEY_DISCARD),
	/* F2FS's: what new files, directories and inodes keep inside the inode */
	FUSE_OPT_KEY("inline_data", KEY_INLINE),
	FUSE_OPT_KEY("noinline_data", KEY_INLINE),
	FUSE_OPT_KEY("inline_dentry", KEY_INLINE),
	FUSE_OPT_KEY("noinline_dentry", KEY_INLINE),
	FUSE_OPT_KEY("inline_xattr", KEY_INLINE),
	FUSE_OPT_KEY("noinline_xattr", KEY_INLINE),
	FUSE_OPT_KEY("inline_xattr_size=", KEY_INLINE_XSIZE),
	/* F2FS's compression options (compr_opt; cluster.c checks them against the volume) */
	FUSE_OPT_KEY("compress_algorithm=", KEY_COMPR),
	FUSE_OPT_KEY("compress_log_size=", KEY_COMPR),
	FUSE_OPT_KEY("compress_extension=", KEY_COMPR),
	FUSE_OPT_KEY("nocompress_extension=", KEY_COMPR),
	FUSE_OPT_KEY("compress_chksum", KEY_COMPR),
	FUSE_OPT_KEY("compress_mode=", KEY_COMPR),
	FUSE_OPT_KEY("compress_cache", KEY_COMPR),
	{ "no_writeback_cache", offsetof(struct cli, no_wb), 1 },
	/* a block device as plain fuse, as a user's mount (see main) */
	{ "nofuseblk", offsetof(struct cli, nofuseblk), 1 },
	{ "max_read=%u", offsetof(struct cli, max_read), 0 },
	/*
	 * F2FS's norecovery: no roll-forward, and only read-only, which a
	 * zlfs ro mount is already (it never rolls forward)
	 */
	FUSE_OPT_KEY("norecovery", KEY_NORECOVERY),
	/* read-only for zlfs, and for libfuse a mount flag */
	FUSE_OPT_KEY("ro", KEY_RO),
};

/*
 * The whole table: opt_fixed, a sched_NAME= for each of the dispatcher's
 * tunables (zlfs_disp_knob_name), the end.  malloc()ed, freed by
 * opt_table_free; NULL without memory.
 */
static struct fuse_opt *opt_table(void)
{
	size_t nf = sizeof(opt_fixed) / sizeof(opt_fixed[0]), nk = 0;
	struct fuse_opt *t;

	while (zlfs_disp_knob_name(nk))
		nk++;
	if (!(t = calloc(nf + nk + 1, sizeof(*t))))     /* zeros: FUSE_OPT_END */
		return NULL;
	memcpy(t, opt_fixed, sizeof(opt_fixed));
	for (size_t k = 0; k < nk; k++) {
		char *templ;
		if (asprintf(&templ, "sched_%s=", zlfs_disp_knob_name(k)) < 0) {
			t[nf + k].templ = NULL;
			while (k--)
				free((char *)t[nf + k].templ);
			free(t);
			return NULL;
		}
		t[nf + k] = (struct fuse_opt)FUSE_OPT_KEY(templ, KEY_SCHED);
	}
	return t;
}

static void opt_table_free(struct fuse_opt *t)
{
	size_t nf = sizeof(opt_fixed) / sizeof(opt_fixed[0]);

	for (struct fuse_opt *o = t + nf; o->templ; o++)
		free((char *)o->templ);
	free(t);
}

/* sched_NAME=VALUE, a dispatcher tunable (zlfs_disp_opts_set): 0, or -errno, said on stderr. */
static int opt_sched(struct cli *c, const char *arg)
{
	char name[64];
	const char *eq = strchr(arg, '=');
	int r = -ENOENT;

	if (eq && (size_t)(eq - arg - 6) < sizeof(name)) {
		memcpy(name, arg + 6, (size_t)(eq - arg - 6));
		name[eq - arg - 6] = '\0';
		r = strcmp(name, "mode") ? zlfs_disp_opts_set(&c->o.disp, name, eq + 1) : -ENOENT;
		/* what zlfs_disp_create would refuse later, unnamed */
		if (!r && (!strcmp(name, "fifo_batch") || !strcmp(name, "max_req_kb")) &&
		    !strtoul(eq + 1, NULL, 10))
			r = -ERANGE;
	}
	if (r == -ENOENT) {
		fprintf(stderr, "zlfs: option %s: unknown dispatcher setting: sched_NAME=N "
			"with NAME one of ", arg);
		for (size_t k = 0; zlfs_disp_knob_name(k); k++)
			fprintf(stderr, "%s%s", k ? ", " : "", zlfs_disp_knob_name(k));
		fprintf(stderr, "\n");
	} else if (r == -ERANGE) {
		fprintf(stderr, "zlfs: option %s: must be at least 1\n", arg);
	} else if (r) {
		fprintf(stderr, "zlfs: option %s: the value must be a whole number "
			"(0 .. 4294967295)\n", arg);
	}
	return r;
}

/* gc=MODE, gc_NAME=VALUE: background GC (zlfs_gc_opts_set): 0, or -errno, said on stderr. */
static int opt_gc(struct cli *c, const char *arg)
{
	char name[64];
	const char *eq = strchr(arg, '=');
	const char *n0 = arg[2] == '=' ? arg : arg + 3;
	int r = -EINVAL;

	if (eq && (size_t)(eq - n0) < sizeof(name)) {
		memcpy(name, n0, (size_t)(eq - n0));
		name[eq - n0] = '\0';
		r = zlfs_gc_opts_set(&c->o.gc, name, eq + 1);
	}
	if (r)
		fprintf(stderr, "zlfs: option %s: allowed are gc=off|on|urgent, "
			"gc_policy=auto|greedy|cb and gc_idle_ms, gc_sleep_ms, "
			"gc_cp_interval_ms, gc_no_gc_pct, gc_boost_pct =N\n", arg);
	return r;
}

/*
 * One of F2FS's compression options into o (ranges that depend on the
 * volume are cluster.c's to check).  -1 after a message for a bad one.
 */
static int compr_opt(struct zlfs_compr_opts *o, const char *arg)
{
	const char *v = strchr(arg, '=');
	char *end;

	o->given = true;
	if (!strcmp(arg, "compress_chksum")) {
		o->chksum = true;
		return 0;
	}
	if (!strcmp(arg, "compress_cache"))
		return 0;    /* the kernel's cache of compressed pages: zlfs reads through its own */
	v = v ? v + 1 : "";
	if (!strncmp(arg, "compress_algorithm=", 19)) {
		static const char *names[] = { "lzo", "lz4", "zstd", "lzo-rle" };
		size_t n = strcspn(v, ":");
		unsigned int a;
		for (a = 0; a < 4; a++)
			if (strlen(names[a]) == n && !strncmp(v, names[a], n))
				break;
		if (a == 4) {
			fprintf(stderr, "zlfs: option %s: the algorithms are lzo, lz4, zstd, lzo-rle\n",
				arg);
			return -1;
		}
		o->alg = (uint8_t)a;
		o->alg_given = true;
		o->level_given = v[n] == ':';
		o->level = 0;
		if (o->level_given) {
			unsigned long l = strtoul(v + n + 1, &end, 10);
			if (*end || end == v + n + 1 || l > 255) {
				fprintf(stderr, "zlfs: option %s: the level is a number\n", arg);
				return -1;
			}
			o->level = (unsigned int)l;
		}
		return 0;
	}
	if (!strncmp(arg, "compress_log_size=", 18)) {
		unsigned long l = strtoul(v, &end, 10);
		if (*end || end == v || l < ZF_COMPR_LOG_MIN || l > ZF_COMPR_LOG_MAX) {
			fprintf(stderr, "zlfs: option %s: clusters of 2^%u .. 2^%u blocks\n", arg,
				ZF_COMPR_LOG_MIN, ZF_COMPR_LOG_MAX);
			return -1;
		}
		o->log = (uint8_t)l;
		return 0;
	}
	if (!strncmp(arg, "compress_mode=", 14)) {
		if (strcmp(v, "fs") && strcmp(v, "user")) {
			fprintf(stderr, "zlfs: option %s: compress_mode is fs or user\n", arg);
			return -1;
		}
		o->user_mode = !strcmp(v, "user");
		return 0;
	}
	/* compress_extension= / nocompress_extension=: F2FS's 16 of at most 7 bytes */
	bool no = arg[0] == 'n';
	uint8_t *nr = no ? &o->nnoext : &o->next;
	char (*list)[ZLFS_COMPR_EXT_LEN] = no ? o->noext : o->ext;
	if (!*v || strlen(v) >= ZLFS_COMPR_EXT_LEN || strchr(v, '.')) {
		fprintf(stderr, "zlfs: option %s: an extension of 1 .. %d bytes, without the dot\n",
			arg, ZLFS_COMPR_EXT_LEN - 1);
		return -1;
	}
	if (*nr >= ZLFS_COMPR_EXT_MAX) {
		fprintf(stderr, "zlfs: option %s: at most %d extensions\n", arg, ZLFS_COMPR_EXT_MAX);
		return -1;
	}
	snprintf(list[(*nr)++], ZLFS_COMPR_EXT_LEN, "%s", v);
	return 0;
}

/*
 * The options the table hands over by key; 0 when used up, 1 when
 * libfuse is to see them too.  A bad value is reported, naming the
 * option, and the parse goes on (every bad option is named), ending in
 * c->err.
 */
static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cli *c = data;

	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT) {
		if (c->nonopt++ == 0) {
			c->device = arg;
			return 0;      /* not for FUSE */
		}
		if (c->nonopt == 2)
			c->mnt = arg;
		return 1;          /* the mount point */
	}
	if (key == FUSE_OPT_KEY_OPT) {
		/* the families the table names member by member: the rest are refused here */
		if (!strncmp(arg, "sched_", 6))
			key = KEY_SCHED;
		else if (!strncmp(arg, "gc_", 3))
			key = KEY_GC;
		else if (!strncmp(arg, "x-", 2))
			return 0;      /* mount(8)'s, as opt_fixed's first entries */
		else
			return 1;
	}
	switch (key) {
	case KEY_MODE:
		if (zlfs_disp_opts_set(&c->o.disp, "mode", arg + 5)) {
			fprintf(stderr, "zlfs: option %s: mode must be zwl, nolock or zwp\n", arg);
			c->err = 1;
		}
		return 0;
	case KEY_SCHED:
		if (opt_sched(c, arg))
			c->err = 1;
		return 0;
	case KEY_GC:
		if (opt_gc(c, arg))
			c->err = 1;
		return 0;
	case KEY_FSYNC:
		if (!strcmp(arg + 6, "checkpoint")) {
			c->o.fsync_cp = true;
		} else if (!strcmp(arg + 6, "rollforward")) {
			c->o.fsync_cp = false;
		} else {
			fprintf(stderr, "zlfs: option %s: fsync must be rollforward or checkpoint\n", arg);
			c->err = 1;
		}
		return 0;
	case KEY_CACHE_MB: {
		char *end;
		unsigned long v = strtoul(arg + 9, &end, 10);
		if (*end || end == arg + 9 || v < 8 || v > (1ul << 20)) {
			fprintf(stderr, "zlfs: option %s: cache_mb must be a number of MiB, "
				"8 .. 1048576\n", arg);
			c->err = 1;
		} else {
			c->o.cache_mb = (uint32_t)v;
		}
		return 0;
	}
	case KEY_ATIME:
		c->o.atime = arg[0] == 'n' ? ZLFS_ATIME_NOATIME : ZLFS_ATIME_RELATIME;
		return 1;
	case KEY_RELATIME:
		c->o.atime = ZLFS_ATIME_RELATIME;
		return 0;
	case KEY_STRICTATIME:
		c->o.atime = ZLFS_ATIME_STRICT;
		return 0;
	case KEY_DIRATIME:
		c->o.nodiratime = arg[0] == 'n';
		return 0;
	case KEY_NORECOVERY:
		c->norecovery = 1;
		c->o.norecovery = true;
		return 0;
	case KEY_RO:
		c->o.ro = true;
		return 1;
	case KEY_INLINE: {
		bool off = !strncmp(arg, "no", 2);
		const char *what = arg + (off ? 9 : 7);     /* past "[no]inline_" */
		if (!strcmp(what, "data"))
			c->o.noinline_data = off;
		else if (!strcmp(what, "dentry"))
			c->o.noinline_dentry = off;
		else
			c->o.noinline_xattr = off;
		return 0;
	}
	case KEY_COMPR:
		if (compr_opt(&c->o.compr, arg))
			c->err = 1;
		return 0;
	case KEY_INLINE_XSIZE: {
		char *end;
		unsigned long v = strtoul(arg + 18, &end, 10);
		if (*end || end == arg + 18 || !v || v > 0xffff) {
			fprintf(stderr, "zlfs: option %s: inline_xattr_size must be a number of "
				"4-byte words, 6 .. %u\n", arg, ZF_MAX_INLINE_XATTR_WORDS);
			c->err = 1;
		} else {
			c->o.inline_xattr_size = (uint16_t)v;
		}
		return 0;
	}
	}
	return 1;
}

/* Is spec the source of a mount already?  (/proc/mounts escapes blanks as octal.) */
static bool spec_is_mounted(const char *spec)
{
	FILE *f = fopen("/proc/mounts", "r");
	char line[4096], src[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t j = 0;
		for (size_t i = 0; line[i] && line[i] != ' ' && j + 1 < sizeof(src); i++) {
			if (line[i] == '\\' && line[i + 1] >= '0' && line[i + 1] <= '3') {
				src[j++] = (char)((line[i + 1] - '0') * 64 + (line[i + 2] - '0') * 8 +
						  (line[i + 3] - '0'));
				i += 3;
			} else {
				src[j++] = line[i];
			}
		}
		src[j] = '\0';
		found = !strcmp(src, spec) && strstr(line, " fuse");
	}
	fclose(f);
	return found;
}

static void usage(const char *prog)
{
	printf("usage: %s DEVICE MOUNTPOINT [-o OPTION[,OPTION]...] [-f] [-d] [-s]\n"
	       "Mount the zlfs volume on DEVICE at MOUNTPOINT through FUSE.  DEVICE is a\n"
	       "device spec: /dev/..., an image path (IMAGE?OPTS), or mem:OPTS (zlfs(8)).\n"
	       "  -f                  stay in the foreground, messages on the terminal\n"
	       "  -d                  print every FUSE request (implies -f)\n"
	       "  -s                  serve requests with one thread\n"
	       "  -o OPTIONS          comma-separated mount options, below\n"
	       "  -h, --help          this text\n"
	       "  -V, --version       the version\n"
	       "zlfs mount options (-o):\n"
	       "  mode=zwl|nolock|zwp write ordering (default nolock; zwl on a device\n"
	       "                      without the \"no zone write lock\" flag)\n"
	       "  sched_NAME=VALUE    a dispatcher tunable, e.g. sched_fifo_batch=16\n"
	       "  gc=off|on|urgent    background GC (default on; foreground GC always runs)\n"
	       "  gc_policy=auto|greedy|cb  GC victim choice (default auto)\n"
	       "  gc_idle_ms=N, gc_sleep_ms=N, gc_no_gc_pct=N, gc_boost_pct=N\n"
	       "                      background GC tunables (200, 50, 60, 25)\n"
	       "  gc_cp_interval_ms=N checkpoint what has been dirty N ms (60000; 0: never)\n"
	       "  fsync=rollforward|checkpoint  what fsync writes (default rollforward)\n"
	       "  cache_mb=N          memory for cached nodes and directory blocks (256)\n"
	       "  no_writeback_cache  no kernel writeback cache: writes reach zlfs at once\n"
	       "  ro                  read-only\n"
	       "  norecovery          with ro only: no roll-forward (ro never rolls forward)\n"
	       "  nofuseblk           a block device mounted by root as plain fuse, as a\n"
	       "                      user's is (umount returns before the final\n"
	       "                      checkpoint: zlfs-umount waits for it)\n"
	       "  relatime, atime, nostrictatime\n"
	       "                      atime updated on a read when not later than mtime\n"
	       "                      or ctime, or a day old (the default, the kernel's)\n"
	       "  noatime             atime never updated on reads\n"
	       "  strictatime, norelatime  atime updated on every read\n"
	       "  nodiratime, diratime  directories' atime never updated / by the rule\n"
	       "  lazytime, nolazytime  accepted: timestamps go with the next checkpoint,\n"
	       "                      never in a write of their own, in every mode\n"
	       "  noinline_data, noinline_dentry, noinline_xattr\n"
	       "                      new small files, new directories, new inodes' xattrs\n"
	       "                      not kept inside the inode (default: they are, as\n"
	       "                      F2FS's inline_data, inline_dentry, inline_xattr)\n"
	       "  inline_xattr_size=N words of xattrs inside new inodes (flexible_inline_\n"
	       "                      xattr volumes only; 6 .. 903, default 50)\n"
	       "  compress_algorithm=lzo|lz4[:3..16]|zstd[:1..22]|lzo-rle\n"
	       "                      what new compressed files use (default lz4)\n"
	       "  compress_log_size=N clusters of 2^N blocks, 2 .. 8 (default 2: 16 KiB)\n"
	       "  compress_extension=EXT, nocompress_extension=EXT\n"
	       "                      new files named *.EXT are made compressed / not\n"
	       "                      (\"*\": every new file; up to 16 of each)\n"
	       "  compress_chksum     new compressed files checksum their clusters\n"
	       "  compress_mode=fs|user  fs: compress as written (default); user: write raw\n"
	       "  compress_cache      accepted, no effect (the kernel's compressed-page cache)\n"
	       "                      (these need a volume with the compression feature)\n"
	       "Other -o options go to FUSE and the kernel: allow_other, allow_root,\n"
	       "auto_unmount, nosuid, nodev, noexec, ... (mount.fuse3(8), mount(8)).\n"
	       "Unmount with zlfs-umount MOUNTPOINT: it returns once the final checkpoint\n"
	       "is written.  See zlfs(8).\n",
	       prog);
}

/* The one-line usage: for a command line that is wrong. */
static void short_usage(const char *prog)
{
	fprintf(stderr, "usage: %s DEVICE MOUNTPOINT [-o OPTION[,OPTION]...] [-f] [-d] [-s] "
		"(see %s --help)\n", prog, prog);
}

/*
 * The device layer's message starts with the spec it could not open: say
 * the spec once ("cannot mount X: X: No such file..." before).
 */
static void mount_error(const char *spec, const char *err, int ret, const char *extra)
{
	size_t n = strlen(spec);

	if (err[0] && !strncmp(err, spec, n) && !strncmp(err + n, ": ", 2))
		err += n + 2;
	fprintf(stderr, "zlfs: cannot mount %s: %s%s\n", spec, err[0] ? err : zlfs_zdev_strerror(ret),
		extra);
}

/*
 * The mount point must be a directory: checked before anything is opened
 * or mounted (the kernel's FUSE mount takes a file too, and every access
 * then failed with EIO).  0 or -errno, with the message printed.
 */
static int check_mountpoint(const char *mnt)
{
	struct stat st;
	unsigned int fd;
	char end;

	/* /dev/fd/N: a /dev/fuse descriptor the caller mounted already (libfuse's convention) */
	if (sscanf(mnt, "/dev/fd/%u%c", &fd, &end) == 1)
		return 0;
	if (stat(mnt, &st) < 0) {
		int e = errno;
		fprintf(stderr, "zlfs: mount point %s: %s\n", mnt, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "zlfs: mount point %s is not a directory\n", mnt);
		return -ENOTDIR;
	}
	return 0;
}

/* The path of a spec that names a block device (malloc()ed), else NULL. */
static char *blockdev_path(const char *spec)
{
	const char *q = strchr(spec, '?');
	struct stat st;
	char *path;

	if (!strncmp(spec, "mem:", 4))
		return NULL;
	path = q ? strndup(spec, (size_t)(q - spec)) : strdup(spec);
	if (path && (stat(path, &st) < 0 || !S_ISBLK(st.st_mode))) {
		free(path);
		path = NULL;
	}
	return path;
}

/* The spec with excl=0 added: the kernel holds the device (fuseblk). */
static char *shared_spec(const char *spec)
{
	char *s;
	if (asprintf(&s, "%s%sexcl=0", spec, strchr(spec, '?') ? "," : "?") < 0)
		return NULL;
	return s;
}

/* Does someone hold path exclusively (a daemon still exiting, mkfs)? 0 or -errno. */
static int probe_excl(const char *path)
{
	int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* fsname for /proc/mounts: the spec as given, commas escaped for -o. */
static char *fsname_opt(const char *spec)
{
	size_t n = strlen(spec);
	char *s = malloc(2 * n + 16), *p;

	if (!s)
		return NULL;
	p = s + sprintf(s, "fsname=");
	for (size_t i = 0; i < n; i++) {
		if (spec[i] == ',' || spec[i] == '\\')
			*p++ = '\\';
		*p++ = spec[i];
	}
	*p = '\0';
	return s;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts fopts;
	struct cli c;
	struct zlfs_sb *sbi = NULL;
	struct fuse_session *se = NULL;
	int status_fd = -1, ret = 1;
	char err[256] = "";
	char *blkpath = NULL, *mspec = NULL;
	bool blk = false;

	/*
	 * The caches are bounded (cache_mb), but glibc gives each thread that
	 * allocates its own arena, and every arena keeps what it freed: with
	 * FUSE's threads taking turns, the daemon would hold the caches' high
	 * water mark many times over.  Two arenas: little contention (most
	 * allocations are made under the filesystem lock anyway).
	 */
	mallopt(M_ARENA_MAX, 2);
	memset(&c, 0, sizeof(c));
	zlfs_disp_opts_default(&c.o.disp);
	zlfs_gc_opts_default(&c.o.gc);
	struct fuse_opt *table = opt_table();
	if (!table)
		return 1;
	ret = fuse_opt_parse(&args, &c, table, opt_proc);
	opt_table_free(table);
	if (ret || c.err)
		return EX_USAGE_;
	ret = 1;
	if (c.norecovery && !c.o.ro) {
		fprintf(stderr, "zlfs: option norecovery: needs ro (as F2FS's)\n");
		return EX_USAGE_;
	}
	zlfs_fuse_set_writeback(!c.no_wb);
	if (c.device && (blkpath = blockdev_path(c.device)) && !c.nofuseblk) {
		if (geteuid() == 0)
			blk = true;
		else
			fprintf(stderr, "zlfs: warning: %s mounted as plain fuse (fuseblk needs root): "
				"umount returns before the final checkpoint; use zlfs-umount\n",
				blkpath);
	}
	/*
	 * fsname before fuse_parse_cmdline: without it libfuse adds
	 * subtype=zlfs and the mount's type becomes "fuse.zlfs" even when
	 * mounted as plain "fuse" (xfstests' FSTYP=fuse checks it).
	 * mount -t fuse.zlfs (mount.fuse3 3.14) passes no subtype either;
	 * -o subtype=zlfs asks for one.  fuseblk: the source is the device
	 * itself (the kernel opens it), so no options; its block size is
	 * the filesystem's.
	 */
	if (c.device) {
		char *fsn = fsname_opt(blk ? blkpath : c.device);
		if (!fsn || fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, fsn))
			return 1;
		free(fsn);
		if (blk && (fuse_opt_add_arg(&args, "-oblkdev") ||
			    fuse_opt_add_arg(&args, "-oblksize=4096") ||
			    !(mspec = shared_spec(c.device))))
			return 1;
	}
	/*
	 * Before fuse_parse_cmdline, whose "bad mount point" comes with no
	 * exit status of its own: a mount point that is missing or not a
	 * directory is a failed mount (32), said in one line.
	 */
	if (c.mnt && check_mountpoint(c.mnt))
		return EX_FAIL_;
	if (fuse_parse_cmdline(&args, &fopts)) {
		short_usage(argv[0]);
		return EX_USAGE_;
	}
	if (fopts.show_help) {
		usage(argv[0]);
		fuse_lowlevel_help();
		return 0;
	}
	if (fopts.show_version) {
		printf("zlfs %s, FUSE %s\n", ZLFS_VERSION, fuse_pkgversion());
		return 0;
	}
	if (!c.device || !fopts.mountpoint) {
		fprintf(stderr, "zlfs: %s\n", c.device ? "no mount point given" : "no device given");
		short_usage(argv[0]);
		return EX_USAGE_;
	}
	if (fuse_opt_add_arg(&args, "-odefault_permissions"))
		return EX_FAIL_;
	/*
	 * READs of at most ZLFS_READ_MAX (fuse_ops.h: small enough to
	 * splice), unless the user set max_read, which libfuse must be told
	 * here and INIT again (zlfs_fuse_set_max_read).
	 */
	char mr[32];
	if (!c.max_read)
		c.max_read = ZLFS_READ_MAX;
	snprintf(mr, sizeof(mr), "-omax_read=%u", c.max_read);
	if (fuse_opt_add_arg(&args, mr))
		return EX_FAIL_;
	zlfs_fuse_set_max_read(c.max_read);
	/*
	 * The FUSE session now, before anything is opened or forked: libfuse
	 * refuses the options it does not know here ("fuse: unknown
	 * option(s)"), which must not cost a mount and a checkpoint first.
	 * It opens nothing (fuse_session_mount does), so the fork is safe.
	 */
	se = fuse_session_new(&args, &zlfs_ops, sizeof(zlfs_ops), &sbi);
	if (!se) {
		fprintf(stderr, "zlfs: unknown option: zlfs's are mode=, sched_NAME=, gc=, gc_policy=, "
			"gc_NAME=, fsync=, cache_mb=, ro, norecovery, no_writeback_cache, nofuseblk "
			"and the atime ones (zlfs --help); FUSE's are in mount.fuse3(8)\n");
		ret = EX_USAGE_;
		goto out;
	}

	if (!fopts.foreground) {
		int pfd[2];
		/* notes go where a daemon's go; errors still reach the terminal (main's verdict) */
		c.o.info_syslog = true;
		openlog("zlfs", LOG_PID, LOG_DAEMON);
		if (pipe(pfd) < 0) {
			perror("zlfs: pipe");
			ret = EX_FAIL_;
			goto out;
		}
		pid_t pid = fork();
		if (pid < 0) {
			perror("zlfs: fork");
			ret = EX_FAIL_;
			goto out;
		}
		if (pid > 0) {
			char st = EX_FAIL_;
			close(pfd[1]);
			if (read(pfd[0], &st, 1) != 1)
				st = EX_FAIL_;
			fuse_session_destroy(se);
			free(fopts.mountpoint);
			free(blkpath);
			free(mspec);
			fuse_opt_free_args(&args);
			return st;
		}
		close(pfd[0]);
		status_fd = pfd[1];
		setsid();
	}

	for (int tries = 0;; tries++) {
		/* fuseblk: only whether the kernel mount will get the device */
		ret = blk ? probe_excl(blkpath) : zlfs_mount(c.device, &c.o, &sbi, err, sizeof(err));
		/* mounted now: refuse; just unmounted: its daemon is still exiting */
		if (ret != -EBUSY || tries >= 50 || spec_is_mounted(blk ? blkpath : c.device))
			break;
		usleep(100000);    /* the previous daemon is still letting go */
	}
	if (ret) {
		mount_error(c.device, err, ret, "");
		ret = EX_FAIL_;
		goto out;
	}
	zlfs_fuse_set_session(se);
	if (fuse_set_signal_handlers(se)) {
		ret = EX_FAIL_;
		goto out_unmount;
	}
	if (fuse_session_mount(se, fopts.mountpoint)) {
		ret = EX_FAIL_;
		goto out_signals;
	}
	set_readahead(fopts.mountpoint);
	if (blk && (ret = zlfs_mount(mspec, &c.o, &sbi, err, sizeof(err)))) {
		mount_error(c.device, err, ret,
			    ret == -EBUSY ? " (does the kernel refuse writes to mounted devices? "
					    "bdev_allow_write_mounted)" : "");
		ret = EX_FAIL_;
		goto out_kunmount;
	}
	if (!c.no_wb)
		set_wb_reserve(fopts.mountpoint, sbi);
	if (status_fd >= 0) {
		char st = 0;
		if (write(status_fd, &st, 1) != 1)
			perror("zlfs: status");
		close(status_fd);
		status_fd = -1;
		/*
		 * Let go of the terminal entirely: a caller reading our output (a
		 * script's $(...), mount run from a service) must see it end when
		 * the parent exits.  Run with -f to keep error messages in view.
		 */
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
			close(nul);
		}
		if (chdir("/"))
			perror("zlfs: chdir");
	}
	if (fopts.singlethread) {
		zlfs_fuse_set_single_threaded(true);
		ret = fuse_session_loop(se);
	} else {
		ret = zl_loop_run(se);
	}
	/*
	 * Written already if DESTROY came (fuseblk).  A signal ends the loop
	 * with the kernel still holding a fuseblk device: the checkpoint goes
	 * first, so no other mount can have the device before it is clean.
	 */
	zlfs_fuse_finish(sbi);
out_kunmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_unmount:
	/*
	 * The session goes first: fuse_session_destroy runs DESTROY's
	 * handler when the kernel never sent it (a plain fuse mount), and
	 * that handler needs the volume still mounted.
	 */
	fuse_session_destroy(se);
	se = NULL;
	/* written already unless the session never ran; zlfs_unmount then only lets go */
	if (sbi) {
		int fin = zlfs_fuse_finish(sbi);
		if (zlfs_unmount(sbi) || fin) {
			fprintf(stderr, "zlfs: the final checkpoint failed\n");
			ret = EX_FAIL_;
		}
	}
	sbi = NULL;
out:
	if (status_fd >= 0) {
		char st = (char)(ret ? ret : EX_FAIL_);
		if (write(status_fd, &st, 1) != 1)
			perror("zlfs: status");
		close(status_fd);
	}
	if (se)
		fuse_session_destroy(se);
	free(fopts.mountpoint);
	free(blkpath);
	free(mspec);
	fuse_opt_free_args(&args);
	/* a failure after serving (the final checkpoint): mount(8)'s 32 too */
	return ret ? (ret == EX_USAGE_ ? EX_USAGE_ : EX_FAIL_) : 0;
}
