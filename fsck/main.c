/*
 * main.c - fsck.zlfs [-n|-p|-a|-y] [-f] [-v] DEVICE: check a zlfs (F2FS
 * format) volume and, asked to, repair it.
 *
 * Modes and exit codes follow fsck(8): 0 clean, 1 errors corrected, 4
 * errors left uncorrected, 8 operational error, 16 usage.  -n checks and
 * writes nothing; -p and -a repair what loses nothing (metadata
 * bookkeeping, link counts, i_blocks, unreachable inodes into /lost+found);
 * -y repairs everything, removing entries that name damaged or missing
 * inodes too.  A volume whose last checkpoint says it was unmounted cleanly
 * is skipped unless -f.  A mounted volume is never repaired.
 * Order: load (load.c), walk (walk.c), verify (verify.c), then, when
 * repairing, repair (repair.c) and the whole check once more, whose verdict
 * is the exit code.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsck.h"
#include "zlfs.h"

void fsck_problem(struct fsck *f, enum fsck_fix fix, const char *fmt, ...)
{
	va_list ap;

	f->problems++;
	if (fix == FIX_META)
		f->need_meta++;
	else if (fix == FIX_TREE)
		f->need_tree++;
	else if (fix == FIX_MANUAL)
		f->need_manual++;
	if (f->progress)
		fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

void fsck_info(struct fsck *f, const char *fmt, ...)
{
	va_list ap;

	if (!f->verbose)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

void fsck_progress(struct fsck *f, const char *what, uint64_t done, uint64_t total)
{
	if (!f->progress || !total || (done % 1024 && done != total))
		return;
	unsigned int pct = (unsigned int)(done >= total ? 100 : done * 100 / total);
	char bar[41];
	memset(bar, '#', pct * 40 / 100);
	memset(bar + pct * 40 / 100, '.', 40 - pct * 40 / 100);
	bar[40] = 0;
	fprintf(stderr, "\r%-8s [%s] %3u%%", what, bar, pct);
	if (done >= total)
		fputs("\r\033[K", stderr);
}

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

static void usage(void)
{
	fprintf(stderr,
		"usage: fsck.zlfs [-n|-p|-a|-y] [-f] [-v] DEVICE\n"
		"  -n     check only: answer no to every repair, write nothing\n"
		"  -p -a  repair what loses nothing, without asking\n"
		"  -y     repair everything (entries naming damaged inodes are removed)\n"
		"  -f     check even a volume that was unmounted cleanly\n"
		"  -v     say more\n"
		"exit: 0 clean, 1 errors corrected, 4 errors left, 8 operational error\n");
}

/* One whole check: load, walk, verify.  0, or a negative errno (operational). */
static int check(struct fsck *f)
{
	int ret;

	if ((ret = fsck_load(f)))
		return ret;
	if (f->clean_unmount && !f->force && !f->problems) {
		printf("%s: clean (unmounted cleanly; -f checks anyway)\n", f->spec);
		return 1;
	}
	if ((ret = fsck_walk(f)) || (ret = fsck_verify(f)))
		return ret;
	if (f->chain_nodes)
		printf("%s: %u nodes written by fsync after the last checkpoint: the next mount "
		       "rolls them forward\n", f->spec, f->chain_nodes);
	return 0;
}

static void reset(struct fsck *f)
{
	struct fsck keep = *f;

	fsck_unload(f);
	memset(f, 0, sizeof(*f));
	f->spec = keep.spec;
	f->mode = keep.mode;
	f->force = true;
	f->verbose = keep.verbose;
	f->progress = keep.progress;
	f->dev = keep.dev;
	f->fixed = keep.fixed;
}

int main(int argc, char **argv)
{
	struct fsck f;
	char err[256];
	int c, ret;

	memset(&f, 0, sizeof(f));
	f.mode = FSCK_MODE_CHECK;
	bool chosen = false;
	while ((c = getopt(argc, argv, "npayfvh")) != -1) {
		enum fsck_mode m = FSCK_MODE_CHECK;
		switch (c) {
		case 'n': m = FSCK_MODE_CHECK; break;
		case 'p': case 'a': m = FSCK_MODE_PREEN; break;
		case 'y': m = FSCK_MODE_YES; break;
		case 'f': f.force = true; continue;
		case 'v': f.verbose = true; continue;
		case 'h': usage(); return FSCK_OK;
		default: usage(); return FSCK_USAGE;
		}
		if (chosen && m != f.mode) {
			fprintf(stderr, "fsck.zlfs: -n, -p/-a and -y exclude each other\n");
			return FSCK_USAGE;
		}
		chosen = true;
		f.mode = m;
	}
	if (optind != argc - 1) {
		usage();
		return FSCK_USAGE;
	}
	f.spec = argv[optind];
	f.progress = isatty(STDERR_FILENO);
	if (mounted(f.spec) && f.mode != FSCK_MODE_CHECK) {
		fprintf(stderr, "fsck.zlfs: %s is mounted: not repairing a mounted volume\n", f.spec);
		return FSCK_OPERROR;
	}
	if ((ret = zlfs_open_volume(f.spec, &f.dev, err, sizeof(err)))) {
		fprintf(stderr, "fsck.zlfs: %s: %s%s\n", f.spec, err,
			ret == -EBUSY || ret == -EWOULDBLOCK ? " (is it mounted?)" : "");
		return FSCK_OPERROR;
	}
	ret = check(&f);
	if (ret == 1) {   /* clean, skipped */
		fsck_unload(&f);
		zlfs_zdev_close(f.dev);
		return FSCK_OK;
	}
	if (ret < 0) {
		fprintf(stderr, "fsck.zlfs: %s: %s\n", f.spec, strerror(-ret));
		fsck_unload(&f);
		zlfs_zdev_close(f.dev);
		return FSCK_OPERROR;
	}
	uint64_t found = f.problems;
	/*
	 * A repair can bring the next to light (an entry removed leaves its
	 * inode unreachable): a few rounds, while each fixes something; the
	 * verdict is a whole new check of what is on the device then.
	 */
	for (int round = 0; round < 3 && f.problems && f.mode != FSCK_MODE_CHECK; round++) {
		uint64_t before = f.fixed;
		if ((ret = fsck_repair(&f)) < 0) {
			fprintf(stderr, "fsck.zlfs: %s: repair stopped: %s\n", f.spec, strerror(-ret));
			fsck_unload(&f);
			if (f.dev)
				zlfs_zdev_close(f.dev);
			return FSCK_OPERROR | FSCK_UNCORRECTED;
		}
		printf("%s: checking again after the repair\n", f.spec);
		reset(&f);
		if ((ret = check(&f)) < 0) {
			fprintf(stderr, "fsck.zlfs: %s: %s\n", f.spec, strerror(-ret));
			fsck_unload(&f);
			zlfs_zdev_close(f.dev);
			return FSCK_OPERROR;
		}
		if (f.fixed == before)
			break;
	}
	printf("%s: %llu inodes (%llu files, %llu directories), %llu nodes, %llu data blocks; "
	       "%llu problems%s\n", f.spec, (unsigned long long)f.walk_inodes,
	       (unsigned long long)f.walk_files, (unsigned long long)f.walk_dirs,
	       (unsigned long long)f.walk_nodes, (unsigned long long)f.walk_blocks,
	       (unsigned long long)f.problems, found && f.mode != FSCK_MODE_CHECK ? " left" : "");
	int code = !found ? FSCK_OK : f.problems ? FSCK_UNCORRECTED : FSCK_CORRECTED;
	fsck_unload(&f);
	zlfs_zdev_close(f.dev);
	return code;
}
