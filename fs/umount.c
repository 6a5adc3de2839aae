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
 * The daemon is found through the mount itself: the virtual directory
 * MOUNTPOINT/.zlfs answers the xattr user.zlfs.pid (fuse_ops.c).  A pidfd
 * taken before the unmount, with the pid asked again after it was taken
 * (so a pid reused in between cannot fool us), becomes readable when the
 * process is gone, files closed.  No answer (a dead daemon, a mount that
 * is not zlfs): it only unmounts.
 *
 * Not root: the unmount goes through fusermount3 -u, as for any user mount.
 * -l (lazy) does not wait: the daemon stays until the last user goes.
 * A mount still busy after 2 s of tries is reported (EBUSY, exit 32).
 * Options umount(8) passes helpers and that mean nothing here (-n, -r,
 * -t TYPE, -o OPTIONS) are accepted; -N NAMESPACE enters that mount
 * namespace first.  -h/--help, -V/--version as every zlfs program.
 * Exit status as umount(8)'s: 0, 1 usage, 2 system error, 32 unmount failed.
 */
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
		"  -f              force (MNT_FORCE)\n"
		"  -v              say what happens\n"
		"  -N NAMESPACE    unmount in that mount namespace (a pid or an ns file)\n"
		"  -n, -r, -t TYPE, -o OPTIONS\n"
		"                  passed by umount(8) to its helpers: accepted, ignored\n"
		"  -h, --help      this text\n"
		"  -V, --version   the version\n"
		"Exit status: 0, 1 usage, 2 system error, 32 unmount failed.\n"
		"See zlfs-umount(8).\n", prog);
}

/* The daemon's pid as the mount tells it, or 0 (no answer: see the file comment). */
static pid_t daemon_pid(const char *mnt)
{
	char path[PATH_MAX], val[32];
	ssize_t n;

	if (snprintf(path, sizeof(path), "%s/.zlfs", mnt) >= (int)sizeof(path))
		return 0;
	n = getxattr(path, PID_XATTR, val, sizeof(val) - 1);
	if (n <= 0)
		return 0;
	val[n] = '\0';
	char *end;
	long pid = strtol(val, &end, 10);
	return *end || pid <= 0 || pid > INT_MAX ? 0 : (pid_t)pid;
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
	while ((opt = getopt_long(argc, argv, "lfvnrhVt:N:o:", lo, NULL)) != -1) {
		switch (opt) {
		case 'l': lazy = true; break;
		case 'f': force = true; break;
		case 'v': verbose = true; break;
		case 'N': ns = optarg; break;
		case 'n': case 'r': case 't': case 'o': break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("%s %s\n", prog, ZLFS_VERSION); return 0;
		default: usage(stderr); return 1;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 1;
	}
	mnt = argv[optind];
	if (ns && enter_namespace(ns))
		return 2;
	/* a dead daemon's mount point cannot be resolved (ENOTCONN): use it as given */
	if (realpath(mnt, real))
		mnt = real;

	pid = lazy ? 0 : daemon_pid(mnt);
	if (pid) {
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pidfd < 0 || daemon_pid(mnt) != pid) {
			if (pidfd >= 0)
				close(pidfd);
			pidfd = -1;
			fprintf(stderr, "%s: %s: cannot follow the daemon (pid %d): not waiting\n",
				prog, mnt, (int)pid);
		}
	} else if (!lazy && verbose) {
		fprintf(stderr, "%s: %s: no zlfs daemon answers: not waiting\n", prog, mnt);
	}

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
