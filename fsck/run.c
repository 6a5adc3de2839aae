/*
 * run.c - fsck.zlfs: one run on an opened volume (fsck_run), and the
 * reporting every pass uses.
 *
 * Order: load (load.c), walk (walk.c), verify (verify.c); when repairing,
 * repair (repair.c) and the whole check once more, in up to three rounds
 * while each fixes something (a repair can bring the next to light: an
 * entry removed leaves its inode unreachable); the last check's verdict is
 * the exit code.  The fuzzers call fsck_run too.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* One whole check: load, walk, verify.  0, or a negative errno (operational). */
static int check(struct fsck *f)
{
	int ret;

	if ((ret = fsck_load(f)))
		return ret;
	/* a checkpoint with CP_FSCK_FLAG (the kernel's f2fs, or a shutdown's need-fsck) asks for one */
	bool asked = f->cp_flags & ZF_CP_FSCK_FLAG;
	if (asked && !f->force)
		printf("%s: the checkpoint asks for a check (CP_FSCK_FLAG): checking\n", f->spec);
	if (f->clean_unmount && !f->force && !f->problems && !asked) {
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

int fsck_run(struct fsck *f)
{
	int ret = check(f);

	if (ret == 1) {   /* clean, skipped */
		fsck_unload(f);
		return FSCK_OK;
	}
	if (ret < 0) {
		fprintf(stderr, "fsck.zlfs: %s: %s\n", f->spec, strerror(-ret));
		fsck_unload(f);
		return FSCK_OPERROR;
	}
	uint64_t found = f->problems;
	for (int round = 0; round < 3 && f->problems && f->mode != FSCK_MODE_CHECK; round++) {
		uint64_t before = f->fixed;
		if ((ret = fsck_repair(f)) < 0) {
			fprintf(stderr, "fsck.zlfs: %s: repair stopped: %s\n", f->spec, strerror(-ret));
			fsck_unload(f);
			return FSCK_OPERROR | FSCK_UNCORRECTED;
		}
		printf("%s: checking again after the repair\n", f->spec);
		reset(f);
		if ((ret = check(f)) < 0) {
			fprintf(stderr, "fsck.zlfs: %s: %s\n", f->spec, strerror(-ret));
			fsck_unload(f);
			return FSCK_OPERROR;
		}
		if (f->fixed == before)
			break;
	}
	printf("%s: %llu inodes (%llu files, %llu directories), %llu nodes, %llu data blocks; "
	       "%llu problems%s\n", f->spec, (unsigned long long)f->walk_inodes,
	       (unsigned long long)f->walk_files, (unsigned long long)f->walk_dirs,
	       (unsigned long long)f->walk_nodes, (unsigned long long)f->walk_blocks,
	       (unsigned long long)f->problems, found && f->mode != FSCK_MODE_CHECK ? " left" : "");
	int code = !found ? FSCK_OK : f->problems ? FSCK_UNCORRECTED : FSCK_CORRECTED;
	fsck_unload(f);
	return code;
}
