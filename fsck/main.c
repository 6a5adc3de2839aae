/*
 * main.c - fsck.zlfs [-n|-p|-a|-y] [-f] [-v] DEVICE: check a zlfs (F2FS
 * format) volume and, asked to, repair it.  Also fsck.fuse.zlfs (a link);
 * -h/--help and -V/--version as every zlfs program (man/fsck.zlfs.8).
 *
 * Modes and exit codes follow fsck(8): 0 clean, 1 errors corrected, 4
 * errors left uncorrected, 8 operational error, 16 usage, 32 cancelled
 * (SIGINT, SIGTERM); 2 (reboot) never applies.  A device held by a daemon
 * that is still letting go is waited for (up to 5 s, said on stderr).
 * -n checks and writes nothing; -p and -a repair what loses nothing (metadata
 * bookkeeping, link counts, i_blocks, unreachable inodes into /lost+found);
 * -y repairs everything, removing entries that name damaged or missing
 * inodes too.  A volume whose last checkpoint says it was unmounted cleanly
 * is skipped unless -f.  A mounted volume is never repaired.
 * The passes and their order are run.c's (fsck_run); this file is the
 * command line.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsck.h"
#include "zlfs.h"

#ifndef ZLFS_VERSION
#define ZLFS_VERSION "unknown"
#endif

/* Is spec (or the file it names) the source of a mounted filesystem? */
static bool mounted(const char *spec)
{
	char want[PATH_MAX], have[PATH_MAX], src[4096], dir[4096], type[256];
	FILE *m = fopen("/proc/self/mounts", "r");
	bool found = false;

	if (!m)
		return false;
	if (!realpath(spec, want))
		snprintf(want, sizeof(want), "%s", spec);
	while (!found && fscanf(m, "%4095s %4095s %255s %*[^\n]", src, dir, type) == 3) {
		if (!realpath(src, have))
			snprintf(have, sizeof(have), "%s", src);
		found = !strcmp(have, want);
	}
	fclose(m);
	return found;
}

static const char *prog = "fsck.zlfs";

/* A wrong option (getopt's optopt, or the argument it stopped at): named, then the synopsis. */
static int bad_usage(int argc, char **argv)
{
	if (optopt)
		fprintf(stderr, "%s: unknown option -%c\n", prog, optopt);
	else
		fprintf(stderr, "%s: unknown option %s\n", prog,
			optind > 0 && optind <= argc ? argv[optind - 1] : "?");
	fprintf(stderr, "usage: %s [-n|-p|-a|-y] [-f] [-v] DEVICE (--help for more)\n", prog);
	return FSCK_USAGE;
}

/*
 * SIGINT, SIGTERM: fsck(8)'s "cancelled" (32).  While nothing is being
 * written, at once; during a repair, once the step in progress is done
 * (run.c), so the volume is not left half rewritten.
 */
static void cancel(int sig)
{
	static const char msg[] = "\nfsck.zlfs: cancelled\n";

	(void)sig;
	if (fsck_writing) {
		fsck_cancelled = 1;
		return;
	}
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {}
	_exit(FSCK_CANCELLED);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-n|-p|-a|-y] [-f] [-v] DEVICE\n"
		"Check a zlfs volume and, asked to, repair it.\n"
		"  -n     check only: answer no to every repair, write nothing (the default)\n"
		"  -p -a  repair what loses nothing, without asking\n"
		"  -y     repair everything (entries naming damaged inodes are removed)\n"
		"  -f     check even a volume that was unmounted cleanly\n"
		"  -v     say more\n"
		"  -h, --help     this text\n"
		"  -V, --version  the version\n"
		"exit: 0 clean, 1 errors corrected, 4 errors left, 8 operational error, 16 usage,\n"
		"      32 cancelled\n"
		"See fsck.zlfs(8).\n", prog);
}

int main(int argc, char **argv)
{
	struct fsck f;
	char err[256];
	int c, ret;

	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};

	/* also installed as fsck.fuse.zlfs, what fsck(8) runs for type fuse.zlfs */
	if (argv[0] && strstr(argv[0], "fsck.fuse.zlfs"))
		prog = "fsck.fuse.zlfs";
	memset(&f, 0, sizeof(f));
	f.mode = FSCK_MODE_CHECK;
	bool chosen = false;
	opterr = 0;   /* bad_usage says it, naming the option */
	while ((c = getopt_long(argc, argv, "npayfvhV", lo, NULL)) != -1) {
		enum fsck_mode m = FSCK_MODE_CHECK;
		switch (c) {
		case 'n': m = FSCK_MODE_CHECK; break;
		case 'p': case 'a': m = FSCK_MODE_PREEN; break;
		case 'y': m = FSCK_MODE_YES; break;
		case 'f': f.force = true; continue;
		case 'v': f.verbose = true; continue;
		case 'h': usage(stdout); return FSCK_OK;
		case 'V': printf("%s %s\n", prog, ZLFS_VERSION); return FSCK_OK;
		default: return bad_usage(argc, argv);
		}
		if (chosen && m != f.mode) {
			fprintf(stderr, "%s: -n, -p/-a and -y exclude each other\n", prog);
			return FSCK_USAGE;
		}
		chosen = true;
		f.mode = m;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "%s: %s\nusage: %s [-n|-p|-a|-y] [-f] [-v] DEVICE (--help for more)\n",
			prog, optind < argc ? "one device only" : "no device given", prog);
		return FSCK_USAGE;
	}
	f.spec = argv[optind];
	f.progress = isatty(STDERR_FILENO);
	if (mounted(f.spec) && f.mode != FSCK_MODE_CHECK) {
		fprintf(stderr, "%s: %s is mounted: not repairing a mounted volume\n", prog, f.spec);
		return FSCK_OPERROR;
	}
	signal(SIGINT, cancel);
	signal(SIGTERM, cancel);
	/*
	 * Held (EBUSY: an image's lock, a block device's exclusive open) but
	 * not mounted: a daemon just unmounted or killed is still letting go
	 * (io_uring's teardown outlives the process for a moment).  Waited for
	 * as the daemon's mount waits (fs/main.c): up to 5 s, then refused.
	 */
	for (int tries = 0;; tries++) {
		/* -n: read-only, so a write-protected image or device can be checked */
		ret = zlfs_open_volume_flags(f.spec, f.mode == FSCK_MODE_CHECK ? ZLFS_ZDEV_RDONLY : 0,
					     &f.dev, err, sizeof(err));
		if ((ret != -EBUSY && ret != -EWOULDBLOCK) || tries >= 50 || mounted(f.spec))
			break;
		if (!tries)
			fprintf(stderr, "%s: waiting for %s to be released...\n", prog, f.spec);
		usleep(100000);
	}
	if (ret) {
		fsck_error(f.spec, err[0] ? err : strerror(-ret),
			   ret == -EBUSY || ret == -EWOULDBLOCK ? " (is it mounted?)" : "");
		return FSCK_OPERROR;
	}
	int code = fsck_run(&f);
	if (f.dev)
		zlfs_zdev_close(f.dev);
	return code;
}
