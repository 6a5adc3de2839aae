/*
 * test_namei.c - the namespace (fs/namei.c) where the FUSE-level checks
 * (tests/fs/check-mount.sh, the POSIX suite) cannot reach: calls made
 * in-process on a volume made by mkfs.zlfs, judged by fsck.f2fs.
 *
 * Covers:
 *   - rename with RENAME_WHITEOUT (overlayfs over zlfs, xfstests generic/078):
 *     the file moves, a whiteout (character device 0:0, mode 0, the
 *     caller's) takes the old name, with and without a target to replace,
 *     and both survive a remount; with RENAME_EXCHANGE it is EINVAL and
 *     nothing changes.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "zlfs.h"
#include "inode.h"
#include "namei.h"
#include "testutil.h"
#include "fsutil.h"

static void create(struct zlfs_sb *sbi, const char *name, uint32_t *ino)
{
	struct zlfs_cred c = { 0, 0, 022 };
	struct zinode *zi;

	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, name, S_IFREG | 0644, 0, NULL, &zi), 0);
	*ino = zi->ino;
	zlfs_iput(sbi, zi, 0);
}

static void is_whiteout(struct zlfs_sb *sbi, const char *name, uid_t uid)
{
	struct zinode *zi;
	struct stat st;

	ck_assert_int_eq(zlfs_iget(sbi, tu_lookup(sbi, ZF_ROOT_INO, name), &zi), 0);
	zlfs_inode_stat(sbi, zi, &st);
	ck_assert_msg(S_ISCHR(st.st_mode) && (st.st_mode & 07777) == 0 && st.st_rdev == makedev(0, 0) &&
		      st.st_uid == uid && st.st_nlink == 1,
		      "%s: mode %o rdev %lx uid %u links %lu", name, st.st_mode,
		      (unsigned long)st.st_rdev, st.st_uid, (unsigned long)st.st_nlink);
}

START_TEST(test_whiteout)
{
	char *img = tu_fs_volume("whiteout.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zlfs_cred c = { 1234, 99, 022 };
	uint32_t a, x, y;

	create(sbi, "a", &a);
	create(sbi, "x", &x);
	create(sbi, "y", &y);
	/* to a new name */
	ck_assert_int_eq(zlfs_rename_as(sbi, &c, ZF_ROOT_INO, "a", ZF_ROOT_INO, "b", RENAME_WHITEOUT), 0);
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "b"), a);
	is_whiteout(sbi, "a", 1234);
	/* over an existing file, which goes */
	ck_assert_int_eq(zlfs_rename_as(sbi, &c, ZF_ROOT_INO, "x", ZF_ROOT_INO, "y", RENAME_WHITEOUT), 0);
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "y"), x);
	is_whiteout(sbi, "x", 1234);
	/* not with RENAME_EXCHANGE: nothing moves */
	ck_assert_int_eq(zlfs_rename_as(sbi, &c, ZF_ROOT_INO, "b", ZF_ROOT_INO, "y",
					RENAME_WHITEOUT | RENAME_EXCHANGE), -EINVAL);
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "b"), a);
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "y"), x);
	/* NOREPLACE still refuses */
	ck_assert_int_eq(zlfs_rename_as(sbi, &c, ZF_ROOT_INO, "b", ZF_ROOT_INO, "y",
					RENAME_WHITEOUT | RENAME_NOREPLACE), -EEXIST);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	sbi = tu_fs_mount(img, 0);
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "b"), a);
	ck_assert_uint_eq(tu_lookup(sbi, ZF_ROOT_INO, "y"), x);
	is_whiteout(sbi, "a", 1234);
	is_whiteout(sbi, "x", 1234);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("namei");
	TCase *tc = tcase_create("rename");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_whiteout);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
