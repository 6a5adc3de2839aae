/*
 * test_flags.c - the chattr flags (fs/flags.c) in-process, on a volume made
 * by mkfs.zlfs and judged by fsck.f2fs: what can be set on which file type,
 * the xflags form, what new inodes inherit, that the flags persist, and
 * the namespace rules immutable and append-only impose (namei.c), with the
 * errors the VFS gives.  tests/fs/check-flags.sh checks the same through
 * FUSE against the kernel's tmpfs.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zlfs.h"
#include "inode.h"
#include "namei.h"
#include "flags.h"
#include "testutil.h"
#include "fsutil.h"

static const struct zlfs_cred cred = { 0, 0, 022 };

static uint32_t make(struct zlfs_sb *sbi, uint32_t parent, const char *name, mode_t mode)
{
	struct zinode *zi;

	ck_assert_int_eq(zlfs_create(sbi, &cred, parent, name, mode, 0,
				     S_ISLNK(mode) ? "target" : NULL, &zi), 0);
	uint32_t ino = zi->ino;
	zlfs_iput(sbi, zi, 0);
	return ino;
}

static struct zinode *get(struct zlfs_sb *sbi, uint32_t ino)
{
	struct zinode *zi;

	ck_assert_int_eq(zlfs_iget(sbi, ino, &zi), 0);
	return zi;
}

/* the flags a user set: FS_INLINE_DATA_FL reports where the data is (checked below) */
static unsigned int uflags(struct zinode *zi)
{
	return zlfs_flags_get(zi) & ~(unsigned int)FS_INLINE_DATA_FL;
}

#define SETTABLE_CHECKED (FS_SYNC_FL | FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL)

START_TEST(test_set_get)
{
	char *img = tu_fs_volume("flags-set.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	uint32_t f = make(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);
	uint32_t d = make(sbi, ZF_ROOT_INO, "d", S_IFDIR | 0755);
	uint32_t l = make(sbi, ZF_ROOT_INO, "l", S_IFLNK | 0777);

	/* new files and directories start inline, and say so as the kernel's f2fs does */
	ck_assert_uint_eq(zlfs_flags_get(get(sbi, f)), FS_INLINE_DATA_FL);
	ck_assert_uint_eq(zlfs_flags_get(get(sbi, d)), FS_INLINE_DATA_FL);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, f), SETTABLE_CHECKED), 0);
	ck_assert_uint_eq(uflags(get(sbi, f)), SETTABLE_CHECKED);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, f), FS_NODUMP_FL), 0);
	ck_assert_uint_eq(uflags(get(sbi, f)), FS_NODUMP_FL);
	/* what F2FS reports but never sets comes back from chattr and is ignored */
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, f), FS_NODUMP_FL | FS_INLINE_DATA_FL | FS_NOCOW_FL), 0);
	ck_assert_uint_eq(uflags(get(sbi, f)), FS_NODUMP_FL);
	/* what this volume cannot keep: compression (no feature), casefolding, flags F2FS never has */
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, f), FS_COMPR_FL), -EOPNOTSUPP);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, d), FS_CASEFOLD_FL), -EOPNOTSUPP);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, f), FS_SECRM_FL), -EOPNOTSUPP);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, f), FS_JOURNAL_DATA_FL), -EOPNOTSUPP);
	/* directory-only flags, and the two a symlink or device may carry */
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, f), FS_DIRSYNC_FL), -EOPNOTSUPP);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, d), FS_DIRSYNC_FL | FS_PROJINHERIT_FL), 0);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, l), FS_IMMUTABLE_FL), -EOPNOTSUPP);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, l), FS_NOATIME_FL), 0);
	ck_assert_uint_eq(uflags(get(sbi, f)), FS_NODUMP_FL);   /* a refusal changes nothing */

	/* the xflags form: only the flags it can express change */
	struct fsxattr fa;
	zlfs_flags_get_x(get(sbi, d), &fa);
	ck_assert_uint_eq(fa.fsx_xflags, FS_XFLAG_PROJINHERIT);
	fa.fsx_xflags |= FS_XFLAG_NODUMP;
	ck_assert_int_eq(zlfs_flags_set_x(sbi, get(sbi, d), &fa), 0);
	ck_assert_uint_eq(uflags(get(sbi, d)), FS_DIRSYNC_FL | FS_PROJINHERIT_FL | FS_NODUMP_FL);
	fa.fsx_xflags = FS_XFLAG_DAX;
	ck_assert_int_eq(zlfs_flags_set_x(sbi, get(sbi, d), &fa), -EOPNOTSUPP);
	memset(&fa, 0, sizeof(fa));
	fa.fsx_projid = 5;          /* no project quota on zlfs images */
	ck_assert_int_eq(zlfs_flags_set_x(sbi, get(sbi, d), &fa), -EOPNOTSUPP);
	ck_assert_uint_eq(uflags(get(sbi, d)), FS_DIRSYNC_FL | FS_PROJINHERIT_FL | FS_NODUMP_FL);

	/* a change stamps ctime */
	struct zf_inode *ri = zi_raw(get(sbi, f));
	ri->i_ctime = zf_cpu_to_le64(1000);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, f), FS_NODUMP_FL | FS_IMMUTABLE_FL), 0);
	ck_assert_uint_gt(zf_le64_to_cpu(zi_raw(get(sbi, f))->i_ctime), 1000);

	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	sbi = tu_fs_mount(img, 0);
	ck_assert_uint_eq(uflags(get(sbi, f)), FS_NODUMP_FL | FS_IMMUTABLE_FL);
	ck_assert_uint_eq(uflags(get(sbi, d)), FS_DIRSYNC_FL | FS_PROJINHERIT_FL | FS_NODUMP_FL);
	ck_assert_uint_eq(uflags(get(sbi, l)), FS_NOATIME_FL);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

START_TEST(test_inherit)
{
	char *img = tu_fs_volume("flags-inherit.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	uint32_t d = make(sbi, ZF_ROOT_INO, "d", S_IFDIR | 0755);
	uint32_t all = FS_SYNC_FL | FS_NODUMP_FL | FS_NOATIME_FL | FS_DIRSYNC_FL | FS_PROJINHERIT_FL;

	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, d), all | FS_APPEND_FL), 0);
	ck_assert_uint_eq(uflags(get(sbi, make(sbi, d, "sub", S_IFDIR | 0755))), all);
	ck_assert_uint_eq(uflags(get(sbi, make(sbi, d, "f", S_IFREG | 0644))),
			  FS_SYNC_FL | FS_NODUMP_FL | FS_NOATIME_FL);
	ck_assert_uint_eq(uflags(get(sbi, make(sbi, d, "l", S_IFLNK | 0777))),
			  FS_NODUMP_FL | FS_NOATIME_FL);
	ck_assert_uint_eq(uflags(get(sbi, make(sbi, ZF_ROOT_INO, "plain", S_IFREG | 0644))), 0);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, d), 0), 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

START_TEST(test_rules)
{
	char *img = tu_fs_volume("flags-rules.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	uint32_t idir = make(sbi, ZF_ROOT_INO, "idir", S_IFDIR | 0755);
	uint32_t adir = make(sbi, ZF_ROOT_INO, "adir", S_IFDIR | 0755);
	uint32_t f = make(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);
	struct zinode *zi;

	make(sbi, idir, "in", S_IFREG | 0644);
	make(sbi, adir, "in", S_IFREG | 0644);
	make(sbi, ZF_ROOT_INO, "g", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, idir), FS_IMMUTABLE_FL), 0);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, adir), FS_APPEND_FL), 0);

	/* an immutable directory takes no new name and loses none; EEXIST first */
	ck_assert_int_eq(zlfs_create(sbi, &cred, idir, "new", S_IFREG | 0644, 0, NULL, &zi), -EPERM);
	ck_assert_int_eq(zlfs_create(sbi, &cred, idir, "in", S_IFREG | 0644, 0, NULL, &zi), -EEXIST);
	ck_assert_int_eq(zlfs_link(sbi, f, idir, "ln", &zi), -EPERM);
	ck_assert_int_eq(zlfs_unlink(sbi, idir, "in", false), -EPERM);
	ck_assert_int_eq(zlfs_rename(sbi, idir, "in", ZF_ROOT_INO, "out", 0), -EPERM);
	ck_assert_int_eq(zlfs_rename(sbi, ZF_ROOT_INO, "g", idir, "g", 0), -EPERM);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "idir", true), -EPERM);
	/* an append-only one takes names, loses none */
	make(sbi, adir, "new", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_link(sbi, f, adir, "ln", &zi), 0);
	zlfs_iput(sbi, zi, 0);
	ck_assert_int_eq(zlfs_rename(sbi, ZF_ROOT_INO, "g", adir, "g", 0), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, adir, "in", false), -EPERM);
	ck_assert_int_eq(zlfs_rename(sbi, adir, "in", ZF_ROOT_INO, "out", 0), -EPERM);
	ck_assert_int_eq(zlfs_rename(sbi, ZF_ROOT_INO, "f", adir, "in", 0), -EPERM);   /* over a name */
	ck_assert_int_eq(zlfs_rename(sbi, adir, "in", adir, "ln", RENAME_EXCHANGE), -EPERM);

	/* an immutable file, then an append-only one */
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, f), FS_IMMUTABLE_FL), 0);
	zi = get(sbi, f);
	ck_assert_int_eq(zlfs_may_open(zi, O_RDONLY), 0);
	ck_assert_int_eq(zlfs_may_open(zi, O_WRONLY | O_APPEND), -EPERM);
	ck_assert_int_eq(zlfs_may_open(zi, O_RDONLY | O_TRUNC), -EPERM);
	ck_assert_int_eq(zlfs_may_setattr(zi, ZLFS_SA_TIMES_NOW), -EPERM);
	ck_assert_int_eq(zlfs_may_setattr(zi, 0), 0);   /* the kernel's own ctime */
	ck_assert_int_eq(zlfs_may_change(zi), -EPERM);
	ck_assert_int_eq(zlfs_may_fallocate(zi, FALLOC_FL_KEEP_SIZE), -EPERM);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "f", false), -EPERM);
	ck_assert_int_eq(zlfs_link(sbi, f, ZF_ROOT_INO, "f2", &zi), -EPERM);
	ck_assert_int_eq(zlfs_rename(sbi, ZF_ROOT_INO, "f", ZF_ROOT_INO, "f3", 0), -EPERM);

	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, f), FS_APPEND_FL), 0);
	zi = get(sbi, f);
	ck_assert_int_eq(zlfs_may_open(zi, O_RDONLY), 0);
	ck_assert_int_eq(zlfs_may_open(zi, O_WRONLY | O_APPEND), 0);
	ck_assert_int_eq(zlfs_may_open(zi, O_RDWR), -EPERM);
	ck_assert_int_eq(zlfs_may_open(zi, O_WRONLY | O_APPEND | O_TRUNC), -EPERM);
	ck_assert_int_eq(zlfs_may_setattr(zi, ZLFS_SA_TIMES_NOW), 0);
	ck_assert_int_eq(zlfs_may_setattr(zi, ZLFS_SA_TIMES_SET), -EPERM);
	ck_assert_int_eq(zlfs_may_setattr(zi, ZLFS_SA_SIZE), -EPERM);
	ck_assert_int_eq(zlfs_may_setattr(zi, ZLFS_SA_OWNER), -EPERM);
	ck_assert_int_eq(zlfs_may_fallocate(zi, 0), 0);
	ck_assert_int_eq(zlfs_may_fallocate(zi, FALLOC_FL_KEEP_SIZE), 0);
	ck_assert_int_eq(zlfs_may_fallocate(zi, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE), -EPERM);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "f", false), -EPERM);

	/* cleared, everything goes again */
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, f), 0), 0);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, idir), 0), 0);
	ck_assert_int_eq(zlfs_flags_set(sbi, get(sbi, adir), 0), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, ZF_ROOT_INO, "f", false), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, idir, "in", false), 0);
	ck_assert_int_eq(zlfs_unlink(sbi, adir, "in", false), 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flags");
	TCase *tc = tcase_create("flags");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_set_get);
	tcase_add_test(tc, test_inherit);
	tcase_add_test(tc, test_rules);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
