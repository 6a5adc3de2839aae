/*
 * umount.c - zlfs-umount [-l] [-f] [-v] MOUNTPOINT, also installed as
 * /sbin/umount.fuse.zlfs, the helper umount(8) runs for mounts of type
 * fuse.zlfs.  It unmounts, then waits until the daemon has exited: the
 * daemon exits only after its final checkpoint is on the device and the
 * device (or image, with its lock) is closed, so when this returns the
 * device can be checked, copied or mounted again.  umount2() and
 * fusermount3 -u return as soon as the kernel lets go of the mount, before
 * that (a fuseblk mount aside: there the kernel waits for the daemon).
 * umount(8) runs the helper only when it reads mountinfo (given the image,
 * or a relative path): for an absolute mount point util-linux takes the
 * type from statfs, plain "fuse", and runs none.  Hence zlfs-umount.
 *
 * Only zlfs is unmounted.  The mount is looked up in /proc/self/mountinfo
 * first (a path that is no mount point, or that is the source of none:
 * "not mounted", as umount(8) says).  zlfs mounts show as type fuse.zlfs
 * (-o subtype=zlfs), fuse (the default: the source is the image or device
 * as given) or fuseblk (a block device mounted by root); a fuse or fuseblk
 * mount is zlfs when its daemon answers (below) or, a daemon that does
 * not answer or is not asked (-l), when its source holds an F2FS
 * superblock.  Anything else (tmpfs, ext4, another FUSE filesystem) is
 * refused, naming what is mounted there, unless -f: a mistyped path must
 * not unmount something else.  A fuse or fuseblk mount whose daemon is
 * gone (ENOTCONN) is unmounted whatever it was: nothing is served there
 * any more, nothing can be lost.
 *
 * The daemon is found through the mount itself: the virtual directory
 * MOUNTPOINT/.zlfs answers the xattr user.zlfs.pid (fuse_virt.c).  A pidfd
 * taken before the unmount, with the pid asked again after it was taken
 * (so a pid reused in between cannot fool us), becomes readable when the
 * process is gone, files closed.  No answer (a dead daemon): it only
 * unmounts.
 *
 * A mount made with -o auto_unmount has a fusermount3 child of the daemon
 * waiting for the daemon's end, to unmount then; finding the mount gone it
 * prints "fusermount3: MNT not mounted" on the terminal the daemon started
 * from, after we returned.  Once our unmount succeeded that helper has
 * nothing left to do, so it is killed first (through a pidfd taken before
 * the unmount: a zombie or a reused pid is never signalled).  Not with -l,
 * where the daemon is not asked.
 *
 * Not root: the unmount goes through fusermount3 -u, as for any user mount.
 * -l (lazy) does not wait: the daemon stays until the last user goes.
 * A mount still busy after 2 s of tries is reported (EBUSY, exit 32).
 * Options umount(8) passes helpers and that mean nothing here (-n, -r,
 * -t TYPE, -o OPTIONS) are accepted; -N NAMESPACE enters that mount
 * namespace first.  -h/--help, -V/--version as every zlfs program.
 * Exit status as umount(8)'s: 0, 1 usage, 2 system error, 32 unmount
 * failed (not mounted, not zlfs, busy, refused by the kernel).
 * Single-threaded: no locks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define PID_XATTR "user.zlfs.pid"

#ifndef ZLFS_VERSION
#define ZLFS_VERSION "unknown"
#endif

static const char *prog = "zlfs-umount";
static bool verbose;

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [-l] [-f] [-v] [-N NAMESPACE] MOUNTPOINT\n"
		"Unmount a zlfs filesystem and wait until its daemon has written the final\n"
		"checkpoint and let go of the device.\n"
		"  -l              lazy: detach now, do not wait for the daemon\n"
		"  -f              force (MNT_FORCE); unmount even a mount that is not zlfs\n"
		"  -v              say what happens\n"
		"  -N NAMESPACE    unmount in that mount namespace (a pid or an ns file)\n"
		"  -n, -r, -t TYPE, -o OPTIONS\n"
		"                  passed by umount(8) to its helpers: accepted, ignored\n"
		"  -h, --help      this text\n"
		"  -V, --version   the version\n"
		"Exit status: 0, 1 usage, 2 system error, 32 unmount failed.\n"
		"See zlfs-umount(8).\n", prog);
}

/* A wrong option (getopt's optopt, or the argument it stopped at): named, then the synopsis. */
static int bad_usage(int argc, char **argv)
{
	const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "?";

	if (optopt && strchr("tNo", optopt))
		fprintf(stderr, "%s: option -%c needs an argument\n", prog, optopt);
	else if (optopt)
		fprintf(stderr, "%s: unknown option -%c\n", prog, optopt);
	else
		fprintf(stderr, "%s: unknown option %s\n", prog, arg);
	fprintf(stderr, "usage: %s [-l] [-f] [-v] [-N NAMESPACE] MOUNTPOINT (--help for more)\n", prog);
	return 1;
}

/*
 * The daemon's pid as the mount tells it, or 0 (no answer: see the file
 * comment); *gone (if given) says the mount has no daemon at all (ENOTCONN).
 */
static pid_t daemon_pid(const char *mnt, bool *gone)
{
	char path[PATH_MAX], val[32];
	ssize_t n;

	if (snprintf(path, sizeof(path), "%s/.zlfs", mnt) >= (int)sizeof(path))
		return 0;
	n = getxattr(path, PID_XATTR, val, sizeof(val) - 1);
	if (n < 0 && errno == ENOTCONN && gone)
		*gone = true;
	if (n <= 0)
		return 0;
	val[n] = '\0';
	char *end;
	long pid = strtol(val, &end, 10);
	return *end || pid <= 0 || pid > INT_MAX ? 0 : (pid_t)pid;
}

/* What mountinfo says of one mount. */
struct mount_entry {
	char dir[PATH_MAX];       /* the mount point */
	char type[128];
	char source[PATH_MAX];
};

/* mountinfo's octal escapes (\040 for a space...) undone in place. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/*
 * The mount at path (resolved): the topmost one mounted there, else the
 * topmost one whose source is path (umount(8) takes either).  0, -ENOENT
 * (not mounted), or another negative errno.
 */
static int find_mount(const char *path, struct mount_entry *out)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	bool by_dir = false, by_src = false;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
		char *save = NULL, *tok, *dir = NULL, *type = NULL, *src = NULL;
		int n = 0;
		bool dash = false;
		for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), n++) {
			if (n == 4)
				dir = tok;
			else if (n > 5 && !dash && !strcmp(tok, "-"))
				dash = true;
			else if (dash && !type)
				type = tok;
			else if (dash && !src)
				src = tok;
		}
		if (!dir || !type || !src)
			continue;
		unescape(dir);
		unescape(src);
		bool d = !strcmp(dir, path), s = !d && !by_dir && !strcmp(src, path);
		if (!d && !s)
			continue;
		by_dir |= d;
		by_src |= s;
		snprintf(out->dir, sizeof(out->dir), "%s", dir);
		snprintf(out->type, sizeof(out->type), "%s", type);
		snprintf(out->source, sizeof(out->source), "%s", src);
	}
	free(line);
	fclose(f);
	return by_dir || by_src ? 0 : -ENOENT;
}

/*
 * path made absolute without symlinks, into out.  A dead daemon's mount
 * point cannot be resolved itself (ENOTCONN): its directory is, and the
 * last component appended.  As given when neither works.
 */
static void resolve(const char *path, char *out, size_t len)
{
	char tmp[PATH_MAX], dir[PATH_MAX];

	if (realpath(path, tmp)) {
		snprintf(out, len, "%s", tmp);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : dir;
	if (slash == dir)
		snprintf(tmp, sizeof(tmp), "/");
	else if (!(slash ? (*slash = '\0', realpath(dir, tmp)) : realpath(".", tmp))) {
		snprintf(out, len, "%s", path);
		return;
	}
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		snprintf(out, len, "%s", path);
		return;
	}
	if (strlen(tmp) + 1 + strlen(base) >= len) {
		snprintf(out, len, "%s", path);
		return;
	}
	strcpy(out, tmp);
	if (strcmp(tmp, "/"))
		strcat(out, "/");
	strcat(out, base);
}

/*
 * Does the file or block device at src hold an F2FS superblock (the first
 * copy)?  A relative src (the daemon's spec as given) is tried from our
 * working directory, likely the one the mount was made from: a guess that
 * only ever lets a zlfs unmount go ahead, the source being F2FS.
 */
static bool source_is_f2fs(const char *src)
{
	unsigned char magic[4];
	struct stat st;
	bool yes = false;

	if (stat(src, &st) || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
		return false;
	int fd = open(src, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	/* F2FS_SUPER_MAGIC 0xF2F52010, little-endian, at byte 1024 */
	if (pread(fd, magic, sizeof(magic), 1024) == (ssize_t)sizeof(magic))
		yes = magic[0] == 0x10 && magic[1] == 0x20 && magic[2] == 0xf5 && magic[3] == 0xf2;
	close(fd);
	return yes;
}

/*
 * The auto_unmount helper of daemon pid (see the file comment), as a
 * pidfd, or -1: a child of the daemon named fusermount3 whose command line
 * holds auto_unmount.  The pidfd is taken, then the parent checked again,
 * so it cannot name a process that replaced the helper.
 */
static bool helper_of(pid_t child, pid_t daemon)
{
	char path[64], buf[512];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* PID (COMM) STATE PPID ...: the comm may hold spaces and parentheses */
	char *r = strrchr(buf, ')');
	int ppid;
	if (!r || !strstr(buf, "(fusermount3)") || sscanf(r + 1, " %*c %d", &ppid) != 1 ||
	    ppid != daemon)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)child);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = '\0';
	return strstr(buf, "auto_unmount") != NULL;
}

static int auto_unmount_helper(pid_t daemon)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int pidfd = -1;

	if (!d)
		return -1;
	while (pidfd < 0 && (e = readdir(d))) {
		char *end;
		long p = strtol(e->d_name, &end, 10);
		if (*end || p <= 0 || p > INT_MAX || !helper_of((pid_t)p, daemon))
			continue;
		pidfd = (int)syscall(SYS_pidfd_open, (pid_t)p, 0);
		if (pidfd >= 0 && !helper_of((pid_t)p, daemon)) {
			close(pidfd);
			pidfd = -1;
		}
	}
	closedir(d);
	return pidfd;
}

static const char *article(const char *word)
{
	return strchr("aeiouAEIOU", word[0]) && word[0] ? "an" : "a";
}

/* fusermount3 -u [-z] MNT, for a user who may not call umount2(). 0 or 32. */
static int run_fusermount(const char *mnt, bool lazy)
{
	pid_t p = fork();
	int st;

	if (p < 0) {
		perror(prog);
		return 32;
	}
	if (!p) {
		if (lazy)
			execlp("fusermount3", "fusermount3", "-u", "-z", "--", mnt, (char *)NULL);
		else
			execlp("fusermount3", "fusermount3", "-u", "--", mnt, (char *)NULL);
		fprintf(stderr, "%s: fusermount3: %s\n", prog, strerror(errno));
		_exit(32);
	}
	while (waitpid(p, &st, 0) < 0)
		if (errno != EINTR)
			return 32;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 32;
}

static int enter_namespace(const char *ns)
{
	char path[PATH_MAX];
	const char *p = ns;
	int fd;

	if (strspn(ns, "0123456789") == strlen(ns)) {
		snprintf(path, sizeof(path), "/proc/%s/ns/mnt", ns);
		p = path;
	}
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0 || setns(fd, CLONE_NEWNS) < 0) {
		fprintf(stderr, "%s: namespace %s: %s\n", prog, ns, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	bool lazy = false, force = false;
	const char *ns = NULL;
	char *mnt = NULL, real[PATH_MAX];
	int opt, pidfd = -1;
	pid_t pid;

	if (argv[0] && strstr(argv[0], "umount.fuse"))
		prog = "umount.fuse.zlfs";
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};

	/* umount(8) puts the mount point first, options after: getopt permutes */
	opterr = 0;   /* bad_usage says it, naming the option */
	while ((opt = getopt_long(argc, argv, "lfvnrhVt:N:o:", lo, NULL)) != -1) {
		switch (opt) {
		case 'l': lazy = true; break;
		case 'f': force = true; break;
		case 'v': verbose = true; break;
		case 'N': ns = optarg; break;
		case 'n': case 'r': case 't': case 'o': break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("%s %s\n", prog, ZLFS_VERSION); return 0;
		default: return bad_usage(argc, argv);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "%s: %s\n", prog, optind < argc ? "one mount point only" :
			"no mount point given");
		fprintf(stderr, "usage: %s [-l] [-f] [-v] [-N NAMESPACE] MOUNTPOINT (--help for more)\n",
			prog);
		return 1;
	}
	mnt = argv[optind];
	if (ns && enter_namespace(ns))
		return 2;
	resolve(mnt, real, sizeof(real));
	struct mount_entry me;
	int err = find_mount(real, &me);
	if (err == -ENOENT) {
		struct stat st;
		/* a dead daemon's mount point fails its stat (ENOTCONN) but is in mountinfo */
		if (lstat(real, &st) < 0)
			fprintf(stderr, "%s: %s: %s\n", prog, mnt, strerror(errno));
		else
			fprintf(stderr, "%s: %s: not mounted\n", prog, mnt);
		return 32;
	}
	if (err) {
		fprintf(stderr, "%s: /proc/self/mountinfo: %s\n", prog, strerror(-err));
		return 2;
	}
	mnt = me.dir;

	/* zlfs or not (file comment); the daemon is asked only on a FUSE mount of ours */
	bool fuse = !strcmp(me.type, "fuse") || !strcmp(me.type, "fuseblk");
	bool zlfs = !strcmp(me.type, "fuse.zlfs");
	bool gone = false;
	pid = !lazy && (fuse || zlfs) ? daemon_pid(mnt, &gone) : 0;
	zlfs = zlfs || pid || (fuse && (gone || source_is_f2fs(me.source)));
	if (!zlfs && !force) {
		fprintf(stderr, "%s: %s is %s %s mount%s%s, not zlfs (use -f to unmount it anyway)\n",
			prog, mnt, article(me.type), me.type, me.source[0] == '/' ? " of " : "",
			me.source[0] == '/' ? me.source : "");
		return 32;
	}
	if (pid) {
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pidfd < 0 || daemon_pid(mnt, NULL) != pid) {
			if (pidfd >= 0)
				close(pidfd);
			pidfd = -1;
			fprintf(stderr, "%s: %s: cannot follow the daemon (pid %d): not waiting\n",
				prog, mnt, (int)pid);
		}
	} else if (!lazy && zlfs && verbose) {
		fprintf(stderr, "%s: %s: no zlfs daemon answers: not waiting\n", prog, mnt);
	}
	int helper = pidfd >= 0 ? auto_unmount_helper(pid) : -1;

	/*
	 * EBUSY also comes from a reference held only for a moment: another
	 * process's statfs or path walk in the mount (df of every mount, which
	 * waits for a busy daemon's answer and so holds it longer on a loaded
	 * machine).  Tried again for 2 s; a user that stays is reported.
	 */
	int tries = 0, rc;
	while ((rc = umount2(mnt, (lazy ? MNT_DETACH : 0) | (force ? MNT_FORCE : 0))) < 0 &&
	       errno == EBUSY && ++tries <= 20)
		usleep(100000);
	if (rc < 0) {
		int e = errno;
		if (e == EPERM && getuid() != 0) {
			if (run_fusermount(mnt, lazy))
				return 32;
		} else {
			fprintf(stderr, "%s: %s: %s\n", prog, mnt, strerror(e));
			return 32;
		}
	}
	if (verbose)
		fprintf(stderr, "%s: %s unmounted\n", prog, mnt);
	if (helper >= 0) {
		/* the auto_unmount helper would only say "not mounted" now (file comment) */
		if (syscall(SYS_pidfd_send_signal, helper, SIGKILL, NULL, 0) == 0 && verbose)
			fprintf(stderr, "%s: its auto_unmount helper stopped\n", prog);
		close(helper);
	}
	if (pidfd < 0)
		return 0;
	/* readable once the daemon has exited: final checkpoint written, device closed */
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	while (poll(&pfd, 1, -1) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "%s: waiting for the daemon: %s\n", prog, strerror(errno));
			return 2;
		}
	}
	close(pidfd);
	if (verbose)
		fprintf(stderr, "%s: daemon %d has exited\n", prog, (int)pid);
	return 0;
}
