/*
 * fsutil.h - helpers shared by the unit tests of filesystem modules (the
 * ones linked with the filesystem library): a fresh volume made by
 * mkfs.zlfs ($ZLFS_MKFS) and fsck.f2fs as the outside judge.
 */
#ifndef ZLFS_FSUTIL_H
#define ZLFS_FSUTIL_H

/* A 512 MiB emulated zoned image (16 MiB zones, 4 conventional), mkfs.zlfs'd: tu_path(name), freed by the caller. */
char *tu_fs_volume(const char *name);
/* fsck.f2fs --dry-run on img must find nothing. */
void tu_fsck_clean(const char *img);

#endif
