/*
 * fsutil.c - helpers of the filesystem modules' unit tests (see fsutil.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "zlfs.h"
#include "fsutil.h"
#include "testutil.h"

char *tu_fs_volume(const char *name)
{
	const char *mkfs = getenv("ZLFS_MKFS");
	char *img = tu_path(name), cmd[1200];
	/* 512 MiB, 16 MiB zones, 4 conventional: 28 sections */
	struct zlfs_image_params p = { 512ull << 20, 16ull << 20, 0, 4, 0, 0, 4096 };

	ck_assert_msg(mkfs && *mkfs, "ZLFS_MKFS not set");
	ck_assert_int_eq(zlfs_image_create(img, &p, true), 0);
	snprintf(cmd, sizeof(cmd), "'%s' -f '%s' >/dev/null", mkfs, img);
	ck_assert_int_eq(system(cmd), 0);
	return img;
}

void tu_fsck_clean(const char *img)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "fsck.f2fs --dry-run '%s' >/dev/null 2>&1", img);
	int st = system(cmd);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fsck.f2fs on %s: %d", img, st);
}
