/*
 * run.c - fsck.zlfs: one run on an opened volume (fsck_run), the driver
 * of the passes; what they report goes through report.c.
 *
 * Order: load (load.c), walk (walk.c), verify (verify.c); when repairing,
 * repair (repair.c) and the whole check once more, in up to three rounds
 * while each fixes something (a repair can bring the next to light: an
 * entry removed leaves its inode unreachable); the last check's verdict is
 * the exit code.  The fuzzers call fsck_run too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"
#include "zlfs.h"

volatile sig_atomic_t fsck_writing, fsck_cancelled;

/* One whole check: load, walk, verify.  0, or a negative errno (operational). */
static int check_passes(struct fsck *f)
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

/* The end of one check: the summary of what the cap left out, everything freed. */
static void unload(struct fsck *f)
{
	fsck_problems_summary(f);
	free(f->kinds);
	f->kinds = NULL;
	f->kinds_cap = 0;
	free(f->cl_in);
	free(f->cl_out);
	f->cl_in = f->cl_out = NULL;
	fsck_unload(f);
}

/* A check, and what its cap left out summed up before anything else is said. */
static int check(struct fsck *f)
{
	int ret = check_passes(f);

	fsck_problems_summary(f);
	return ret;
}

static void reset(struct fsck *f)
{
	struct fsck keep = *f;

	unload(f);
	memset(f, 0, sizeof(*f));
	f->spec = keep.spec;
	f->mode = keep.mode;
	f->force = true;
	f->verbose = keep.verbose;
	f->progress = keep.progress;
	f->dev = keep.dev;
	f->fixed = keep.fixed;
}

/*
 * No root directory: nothing hangs from the tree, so there is nothing a
 * repair could attach lost files to, and freeing what the root does not
 * reach (the other repairs) would destroy what can still be copied out.
 * Said plainly, with what the user can do instead.
 */
static void root_verdict(struct fsck *f)
{
	uint32_t intact = 0, first = 0;

	for (uint32_t k = 0; k < f->ntfix; k++)
		if (f->tfix[k].what == TF_LOSTFOUND && !intact++)
			first = f->tfix[k].ino;
	printf("%s: the root directory is missing or not a directory: fsck.zlfs cannot rebuild it, "
	       "and the volume cannot be mounted%s.\n", f->spec, f->mode == FSCK_MODE_CHECK ? "" :
	       "; nothing was repaired (a repair would free what the root no longer reaches)");
	if (intact)
		printf("%s: %u inodes are intact but in no directory (\"inode N is not in any "
		       "directory\" above; -v lists all): copy them out one by one with dump.f2fs "
		       "(f2fs-tools), e.g. \"dump.f2fs -i 0x%x %s\" (the inode number in hex; it "
		       "asks, then writes ./lost_found/), or restore the volume from a backup.\n",
		       f->spec, intact, first, f->spec);
	else
		printf("%s: no file is left intact to copy out: restore the volume from a backup "
		       "(mkfs.zlfs, then copy the files back).\n", f->spec);
}

int fsck_run(struct fsck *f)
{
	int ret = check(f);

	if (ret == 1) {   /* clean, skipped */
		unload(f);
		return FSCK_OK;
	}
	if (ret < 0) {
		/* no superblock, no checkpoint, a layout refused: load.c said which already */
		if (ret != -EUCLEAN && ret != -EINVAL && ret != -EOPNOTSUPP)
			fprintf(stderr, "fsck.zlfs: %s: %s\n", f->spec, strerror(-ret));
		unload(f);
		return FSCK_OPERROR;
	}
	uint64_t found = f->problems;
	for (int round = 0; round < 3 && f->problems && f->mode != FSCK_MODE_CHECK && !f->root_bad;
	     round++) {
		uint64_t before = f->fixed;
		fsck_writing = 1;
		ret = fsck_repair(f);
		fsck_writing = 0;
		if (fsck_cancelled) {
			fprintf(stderr, "fsck.zlfs: %s: cancelled after a repair step; run fsck.zlfs "
				"again to finish\n", f->spec);
			unload(f);
			return FSCK_CANCELLED;
		}
		if (ret < 0) {
			fprintf(stderr, "fsck.zlfs: %s: repair stopped: %s\n", f->spec, strerror(-ret));
			unload(f);
			return FSCK_OPERROR | FSCK_UNCORRECTED;
		}
		printf("%s: checking again after the repair\n", f->spec);
		reset(f);
		if ((ret = check(f)) < 0) {
			fprintf(stderr, "fsck.zlfs: %s: %s\n", f->spec, strerror(-ret));
			unload(f);
			return FSCK_OPERROR;
		}
		if (f->fixed == before)
			break;
	}
	printf("%s: %llu inodes (%llu files, %llu directories), %llu nodes, %llu data blocks",
	       f->spec, (unsigned long long)f->walk_inodes,
	       (unsigned long long)f->walk_files, (unsigned long long)f->walk_dirs,
	       (unsigned long long)f->walk_nodes, (unsigned long long)f->walk_blocks);
	if (f->walk_clusters)
		printf(" (%llu compressed clusters checked)", (unsigned long long)f->walk_clusters);
	printf("; %llu problems%s\n", (unsigned long long)f->problems,
	       found && f->mode != FSCK_MODE_CHECK ? " left" : "");
	if (f->root_bad)
		root_verdict(f);
	int code = !found ? FSCK_OK : f->problems ? FSCK_UNCORRECTED : FSCK_CORRECTED;
	unload(f);
	return code;
}
