/*
 * feature.c - F2FS feature bits by name, what zlfs does with each, and
 * the rules between them (libzlfsfmt; see include/zlfs/f2fs_feature.h).
 *
 * One table says it all: mkfs.f2fs's name, whether zlfs reads and writes
 * volumes with the feature, why not when it does not, and whether the
 * feature lives in the inode's extra attributes (then extra_attr must be
 * on too, as mkfs.f2fs requires).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "zlfs/f2fs_format.h"
#include "zlfs/f2fs_feature.h"

static const struct {
	uint32_t bit;
	const char *name;
	const char *refused;     /* NULL: supported */
	bool needs_extra;        /* stored in the inode's extra attributes */
} features[] = {
	{ ZF_FEAT_ENCRYPT, "encrypt", "encrypted names and data need the kernel's fscrypt keys",
	  false },
	{ ZF_FEAT_BLKZONED, "blkzoned", NULL, false },
	{ ZF_FEAT_ATOMIC_WRITE, "atomic_write", "Android's atomic-write bookkeeping is not kept",
	  false },
	{ ZF_FEAT_EXTRA_ATTR, "extra_attr", NULL, false },
	{ ZF_FEAT_PRJQUOTA, "project_quota", NULL, true },
	{ ZF_FEAT_INODE_CHKSUM, "inode_checksum", NULL, true },
	{ ZF_FEAT_FLEXIBLE_INLINE_XATTR, "flexible_inline_xattr", NULL, true },
	{ ZF_FEAT_QUOTA_INO, "quota", "its quota files would go stale: zlfs keeps no quota "
	  "accounting (project IDs are kept, usage is not counted)", false },
	{ ZF_FEAT_INODE_CRTIME, "inode_crtime", NULL, true },
	{ ZF_FEAT_LOST_FOUND, "lost_found", NULL, false },
	{ ZF_FEAT_VERITY, "verity", "fs-verity's Merkle trees are not read or checked", true },
	{ ZF_FEAT_SB_CHKSUM, "sb_checksum", NULL, false },
	{ ZF_FEAT_CASEFOLD, "casefold", "case-insensitive names need the kernel's Unicode tables",
	  false },
	{ ZF_FEAT_COMPRESSION, "compression", NULL, true },
	{ ZF_FEAT_RO, "ro", "read-only images (mkfs.f2fs -O ro) are laid out for no writes",
	  false },
};
#define NFEAT (sizeof(features) / sizeof(features[0]))

const char *zf_feature_name(uint32_t bit)
{
	for (size_t i = 0; i < NFEAT; i++)
		if (features[i].bit == bit)
			return features[i].name;
	return NULL;
}

int zf_check_features(uint32_t feat, char *why, size_t len)
{
	uint32_t known = 0;

	for (size_t i = 0; i < NFEAT; i++) {
		known |= features[i].bit;
		if ((feat & features[i].bit) && features[i].refused) {
			snprintf(why, len, "the filesystem uses the F2FS feature '%s', which zlfs does "
				 "not support (%s)", features[i].name, features[i].refused);
			return -EOPNOTSUPP;
		}
	}
	if (feat & ~known) {
		snprintf(why, len, "the filesystem uses unknown F2FS features 0x%x", feat & ~known);
		return -EOPNOTSUPP;
	}
	for (size_t i = 0; i < NFEAT; i++)
		if ((feat & features[i].bit) && features[i].needs_extra &&
		    !(feat & ZF_FEAT_EXTRA_ATTR)) {
			snprintf(why, len, "the F2FS feature '%s' needs 'extra_attr', which is off",
				 features[i].name);
			return -EINVAL;
		}
	return 0;
}

int zf_parse_features(const char *list, uint32_t *feat, char *why, size_t len)
{
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ",");
		bool off = false;
		const char *w = p;
		if (n && *w == '^') {
			off = true;
			w++;
			n--;
		} else if (n > 3 && !strncmp(w, "no_", 3)) {
			off = true;
			w += 3;
			n -= 3;
		}
		size_t i;
		for (i = 0; i < NFEAT; i++)
			if (strlen(features[i].name) == n && !strncmp(features[i].name, w, n))
				break;
		if (n && i == NFEAT) {
			snprintf(why, len, "unknown feature '%.*s' (F2FS's names: extra_attr, "
				 "inode_checksum, sb_checksum, flexible_inline_xattr, inode_crtime, "
				 "project_quota, lost_found, compression, ...)", (int)n, w);
			return -EINVAL;
		}
		if (n)
			*feat = off ? *feat & ~features[i].bit : *feat | features[i].bit;
		p += (w - p) + n;
		if (*p == ',')
			p++;
	}
	return 0;
}

void zf_feature_list(uint32_t feat, char *buf, size_t len)
{
	size_t at = 0;

	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < NFEAT && at < len; i++)
		if (feat & features[i].bit) {
			int k = snprintf(buf + at, len - at, "%s%s", at ? "," : "", features[i].name);
			if (k < 0)
				break;
			at += (size_t)k;
		}
}
