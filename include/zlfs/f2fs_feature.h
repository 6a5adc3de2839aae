/*
 * f2fs_feature.h - the superblock's F2FS feature bits by name: which zlfs
 * reads and writes, which it refuses and why, which need which
 * (mkfs.f2fs's rules), and the list mkfs.zlfs -O takes.  Shared by the
 * filesystem's mount, fsck.zlfs and mkfs.zlfs (libzlfsfmt, fs/f2fs/feature.c).
 */
#ifndef ZLFS_F2FS_FEATURE_H
#define ZLFS_F2FS_FEATURE_H

#include <stddef.h>
#include <stdint.h>

/* mkfs.f2fs's name of one feature bit ("extra_attr", ...), or NULL. */
const char *zf_feature_name(uint32_t bit);

/*
 * Can zlfs use a volume with these features?  0, or -EOPNOTSUPP with why
 * naming the first feature zlfs refuses (and its reason), or -EINVAL
 * when a feature lacks one it needs (inode_checksum without extra_attr).
 */
int zf_check_features(uint32_t feat, char *why, size_t len);

/*
 * mkfs.zlfs -O LIST: comma-separated names, each adding its bit to *feat
 * ("^name" or "no_name" removes one).  0, or -EINVAL with why.  The result
 * still goes through zf_check_features.
 */
int zf_parse_features(const char *list, uint32_t *feat, char *why, size_t len);

/* "extra_attr,inode_checksum,..." for feat (what mkfs prints, what tests read). */
void zf_feature_list(uint32_t feat, char *buf, size_t len);

#endif
