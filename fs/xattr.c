/*
 * xattr.c - extended attributes in F2FS's format, and POSIX ACLs.
 *
 * An inode's xattrs are one buffer: the inline area (the last words of
 * i_addr: ZF_INLINE_XATTR_ADDRS with INLINE_XATTR or INLINE_DENTRY, or the
 * inode's i_inline_xattr_size on a flexible_inline_xattr volume) followed
 * by the xattr node (i_xattr_nid, ZF_XATTR_NODE_BYTES).  It starts with a
 * zf_xattr_header; entries follow, 4-byte aligned, and a zero word ends
 * them.  Names are stored without their prefix, which e_name_index gives.
 *
 * ACLs: the system.posix_acl_{access,default} values arrive from FUSE in
 * the kernel's xattr form (version 2, 8-byte entries) and are stored in
 * F2FS's (version 1, 4-byte entries for the owner/group/mask/other tags),
 * so the kernel F2FS driver and f2fs-tools read what zlfs writes.
 *
 * zlfs_xattr_set and zlfs_xattr_remove are operations: they apply the
 * immutable and append-only flags (zlfs_may_change), and setting makes
 * room first (zlfs_balance, ZLFS_BUDGET_XATTR; may drop the lock and
 * checkpoint).  The ACLs a create inherits and a chmod keeps in step are
 * stored without either, in the middle of those operations.
 * All calls need sbi->lock (exclusive, but for the reads).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "zlfs.h"
#include "data.h"
#include "gc.h"
#include "node.h"
#include "inode.h"
#include "flags.h"
#include "xattr.h"

/* the largest inline area (flexible_inline_xattr) and the node */
#define BUF_MAX (ZF_MAX_INLINE_XATTR_WORDS * 4 + ZF_XATTR_NODE_BYTES)

static const struct { const char *prefix; uint8_t index; } prefixes[] = {
	{ "user.", ZF_XATTR_INDEX_USER },
	{ "trusted.", ZF_XATTR_INDEX_TRUSTED },
	{ "security.", ZF_XATTR_INDEX_SECURITY },
};

#define ACL_ACCESS  "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"

/* Split a full name into index and stored name. */
static int split_name(const char *name, uint8_t *index, const char **suffix)
{
	if (!strcmp(name, ACL_ACCESS)) {
		*index = ZF_XATTR_INDEX_POSIX_ACL_ACCESS;
		*suffix = "";
		return 0;
	}
	if (!strcmp(name, ACL_DEFAULT)) {
		*index = ZF_XATTR_INDEX_POSIX_ACL_DEFAULT;
		*suffix = "";
		return 0;
	}
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i].prefix);
		if (!strncmp(name, prefixes[i].prefix, pl)) {
			if (!name[pl])
				return -EINVAL;
			*index = prefixes[i].index;
			*suffix = name + pl;
			return strlen(*suffix) > 255 ? -ERANGE : 0;
		}
	}
	return -EOPNOTSUPP;
}

static const char *index_prefix(uint8_t index)
{
	switch (index) {
	case ZF_XATTR_INDEX_USER: return "user.";
	case ZF_XATTR_INDEX_TRUSTED: return "trusted.";
	case ZF_XATTR_INDEX_SECURITY: return "security.";
	case ZF_XATTR_INDEX_POSIX_ACL_ACCESS: return ACL_ACCESS;
	case ZF_XATTR_INDEX_POSIX_ACL_DEFAULT: return ACL_DEFAULT;
	default: return NULL;
	}
}

/* The inline xattr area: F2FS's inline_xattr_size (flag and volume features decide it) */
static unsigned int inline_bytes(const struct zlfs_sb *sbi, const struct zf_inode *ri)
{
	return zf_inline_xattr_bytes(ri, zlfs_feat(sbi));
}

static uint8_t *inline_area(const struct zlfs_sb *sbi, struct zf_inode *ri)
{
	return zf_inline_xattr_area(ri, zlfs_feat(sbi));
}

int zlfs_xattr_check_name(const char *name)
{
	const char *suffix;
	uint8_t index;

	return split_name(name, &index, &suffix);
}

/* Load the xattr buffer (zeroed if there is none); *len its capacity. */
static int load(struct zlfs_sb *sbi, struct zinode *zi, uint8_t *buf, unsigned int *cap)
{
	struct zf_inode *ri = zi_raw(zi);
	unsigned int ib = inline_bytes(sbi, ri);
	uint32_t xnid = zf_le32_to_cpu(ri->i_xattr_nid);
	int ret;

	memset(buf, 0, BUF_MAX);
	if (ib)
		memcpy(buf, inline_area(sbi, ri), ib);
	if (xnid) {
		struct znode *n;
		if ((ret = zlfs_node_get(sbi, xnid, zi->ino, ZF_NODE_KIND_XATTR, &n)))
			return ret;
		memcpy(buf + ib, n->blk.xattr, ZF_XATTR_NODE_BYTES);
	}
	*cap = ib + ZF_XATTR_NODE_BYTES;
	/* every entry whole inside the area: the walks below trust that */
	char why[160];
	if (zf_check_xattrs(buf, *cap, why, sizeof(why)))
		return zlfs_corrupt(sbi, "inode %u: %s", zi->ino, why);
	return 0;
}

struct xent {
	struct zf_xattr_entry *e;
	unsigned int off;
};

/* Entries start after the header; stop at a zero word or the end. */
static struct zf_xattr_entry *first_entry(uint8_t *buf)
{
	return (struct zf_xattr_entry *)(buf + sizeof(struct zf_xattr_header));
}

static bool is_last(const struct zf_xattr_entry *e, const uint8_t *buf, unsigned int cap)
{
	return (const uint8_t *)e + 4 > buf + cap || !*(const uint32_t *)e;
}

static struct zf_xattr_entry *next_entry(struct zf_xattr_entry *e)
{
	return (struct zf_xattr_entry *)((uint8_t *)e +
					 zf_xattr_entry_size(e->e_name_len, zf_le16_to_cpu(e->e_value_size)));
}

static struct zf_xattr_entry *find(uint8_t *buf, unsigned int cap, uint8_t index, const char *name)
{
	size_t nl = strlen(name);

	for (struct zf_xattr_entry *e = first_entry(buf); !is_last(e, buf, cap); e = next_entry(e)) {
		if (e->e_name_index == index && e->e_name_len == nl && !memcmp(e->e_name, name, nl))
			return e;
	}
	return NULL;
}

static unsigned int used_bytes(uint8_t *buf, unsigned int cap)
{
	struct zf_xattr_entry *e = first_entry(buf);
	while (!is_last(e, buf, cap))
		e = next_entry(e);
	return (unsigned int)((uint8_t *)e - buf);
}

/* Remove entry e from the buffer, closing the gap. */
static void drop_entry(uint8_t *buf, unsigned int cap, struct zf_xattr_entry *e)
{
	unsigned int esz = zf_xattr_entry_size(e->e_name_len, zf_le16_to_cpu(e->e_value_size));
	unsigned int end = used_bytes(buf, cap);
	uint8_t *p = (uint8_t *)e;

	memmove(p, p + esz, end - (unsigned int)(p - buf) - esz);
	memset(buf + end - esz, 0, esz);
}

/* Store the buffer back: inline part, then the xattr node (made or freed). */
static int store(struct zlfs_sb *sbi, struct zinode *zi, uint8_t *buf, unsigned int cap)
{
	struct zf_inode *ri = zi_raw(zi);
	unsigned int ib = inline_bytes(sbi, ri);
	uint32_t xnid = zf_le32_to_cpu(ri->i_xattr_nid);
	bool empty = is_last(first_entry(buf), buf, cap);
	struct znode *n;
	int ret;

	struct zf_xattr_header *h = (struct zf_xattr_header *)buf;
	h->h_magic = zf_cpu_to_le32(ZF_XATTR_MAGIC);
	h->h_refcount = zf_cpu_to_le32(1);
	bool need_node = !empty && used_bytes(buf, cap) + 4 > ib;
	if (need_node) {
		if (!xnid) {
			if ((ret = zlfs_nid_alloc(sbi, &xnid)))
				return ret;
			if ((ret = zlfs_node_new(sbi, xnid, zi->ino, ZF_XATTR_NODE_OFS, &n))) {
				zlfs_nat_mut(sbi, xnid)->blkaddr = ZF_NULL_ADDR;
				return ret;
			}
			ri->i_xattr_nid = zf_cpu_to_le32(xnid);
			ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) + 1);
		} else if ((ret = zlfs_node_get(sbi, xnid, zi->ino, ZF_NODE_KIND_XATTR, &n))) {
			return ret;
		}
		memcpy(n->blk.xattr, buf + ib, ZF_XATTR_NODE_BYTES);
		zlfs_node_dirty(sbi, n);
	} else if (xnid) {
		zlfs_node_remove(sbi, xnid);
		ri->i_xattr_nid = 0;
		ri->i_blocks = zf_cpu_to_le64(zf_le64_to_cpu(ri->i_blocks) - 1);
	}
	/* the inline part last: a node that could not be had changes nothing */
	if (ib)
		memcpy(inline_area(sbi, ri), buf, ib);
	zlfs_node_dirty(sbi, zi->node);
	return 0;
}

/* ---- ACL conversion ------------------------------------------------------------------ */

#define VFS_ACL_VERSION 2
#define F2FS_ACL_VERSION 1
#define ACL_USER_OBJ 0x01
#define ACL_USER     0x02
#define ACL_GROUP_OBJ 0x04
#define ACL_GROUP    0x08
#define ACL_MASK     0x10
#define ACL_OTHER    0x20

static bool tag_has_id(uint16_t tag)
{
	return tag == ACL_USER || tag == ACL_GROUP;
}

/* Kernel xattr form -> F2FS form. */
static int acl_to_disk(const void *in, size_t len, uint8_t *out, size_t *olen)
{
	const uint8_t *p = in;
	size_t o = 4;

	if (len < 4 || (len - 4) % 8 || zf_le32_to_cpu(*(const uint32_t *)p) != VFS_ACL_VERSION)
		return -EINVAL;
	*(uint32_t *)out = zf_cpu_to_le32(F2FS_ACL_VERSION);
	for (size_t i = 4; i < len; i += 8) {
		uint16_t tag = zf_le16_to_cpu(*(const uint16_t *)(p + i));
		if (!(tag & (ACL_USER_OBJ | ACL_USER | ACL_GROUP_OBJ | ACL_GROUP | ACL_MASK | ACL_OTHER)))
			return -EINVAL;
		memcpy(out + o, p + i, 4);   /* tag, perm */
		o += 4;
		if (tag_has_id(tag)) {
			memcpy(out + o, p + i + 4, 4);
			o += 4;
		}
	}
	*olen = o;
	return 0;
}

/* F2FS form -> kernel xattr form; *olen the needed size. */
static int acl_from_disk(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *olen)
{
	size_t o = 4;

	if (len < 4 || zf_le32_to_cpu(*(const uint32_t *)in) != F2FS_ACL_VERSION)
		return -ZLFS_EFSCORRUPTED;
	for (size_t i = 4; i < len; ) {
		if (i + 4 > len)
			return -ZLFS_EFSCORRUPTED;
		uint16_t tag = zf_le16_to_cpu(*(const uint16_t *)(in + i));
		if (out && o + 8 <= cap) {
			memcpy(out + o, in + i, 4);
			if (tag_has_id(tag) && i + 8 <= len)
				memcpy(out + o + 4, in + i + 4, 4);
			else
				*(uint32_t *)(out + o + 4) = zf_cpu_to_le32(0xffffffffu);
		}
		i += tag_has_id(tag) ? 8 : 4;
		o += 8;
	}
	if (out && cap >= 4)
		*(uint32_t *)out = zf_cpu_to_le32(VFS_ACL_VERSION);
	*olen = o;
	return 0;
}

/* ---- API ------------------------------------------------------------------------------ */

int zlfs_xattr_get(struct zlfs_sb *sbi, struct zinode *zi, const char *name, void *out,
		   size_t size, size_t *len)
{
	uint8_t *buf = malloc(BUF_MAX);
	const char *suffix;
	uint8_t index;
	unsigned int cap;
	int ret;

	if (!buf)
		return -ENOMEM;
	if ((ret = split_name(name, &index, &suffix)) || (ret = load(sbi, zi, buf, &cap)))
		goto out;
	struct zf_xattr_entry *e = find(buf, cap, index, suffix);
	if (!e) {
		ret = -ENODATA;
		goto out;
	}
	const uint8_t *val = (const uint8_t *)e->e_name + e->e_name_len;
	size_t vlen = zf_le16_to_cpu(e->e_value_size);
	if (index == ZF_XATTR_INDEX_POSIX_ACL_ACCESS || index == ZF_XATTR_INDEX_POSIX_ACL_DEFAULT) {
		if ((ret = acl_from_disk(val, vlen, size ? out : NULL, size, len)))
			goto out;
		if (size && *len > size)
			ret = -ERANGE;
		goto out;
	}
	*len = vlen;
	if (size) {
		if (vlen > size)
			ret = -ERANGE;
		else
			memcpy(out, val, vlen);
	}
out:
	free(buf);
	return ret;
}

static bool acl_mode_only(const uint8_t *acl, size_t len);
static int acl_mode(const uint8_t *acl, size_t len, mode_t *mode);
static int xattr_remove(struct zlfs_sb *sbi, struct zinode *zi, const char *name);

/* zlfs_xattr_set without room made or flags checked: an ACL inherited or kept in step. */
static int xattr_set(struct zlfs_sb *sbi, struct zinode *zi, const char *name,
		     const void *value, size_t size, int flags)
{
	uint8_t *buf = malloc(BUF_MAX), *acl = NULL;
	const char *suffix;
	uint8_t index;
	unsigned int cap;
	mode_t new_mode = 0;
	bool set_mode = false;
	int ret;

	if (!buf)
		return -ENOMEM;
	if ((ret = split_name(name, &index, &suffix)) || (ret = load(sbi, zi, buf, &cap)))
		goto out;
	if (index == ZF_XATTR_INDEX_POSIX_ACL_ACCESS) {
		/*
		 * The mode carries the ACL's base entries (the kernel looks at the
		 * ACL only when the mode's group bits are set); an ACL that says no
		 * more than the mode is not stored (posix_acl_update_mode).
		 */
		/* The mode changes only with the ACL: a set that fails leaves both. */
		new_mode = zf_le16_to_cpu(zi_raw(zi)->i_mode);
		if ((ret = acl_mode(value, size, &new_mode)))
			goto out;
		set_mode = true;
		if (acl_mode_only(value, size)) {
			free(buf);
			ret = xattr_remove(sbi, zi, name);
			if (ret == -ENODATA)
				ret = 0;
			if (!ret) {
				zi_raw(zi)->i_mode = zf_cpu_to_le16((uint16_t)new_mode);
				zlfs_node_dirty(sbi, zi->node);
				zlfs_inode_touch(zi, false, true, false);
			}
			return ret;
		}
	}
	if (index == ZF_XATTR_INDEX_POSIX_ACL_ACCESS || index == ZF_XATTR_INDEX_POSIX_ACL_DEFAULT) {
		size_t alen;
		acl = malloc(size + 4);
		if (!acl) {
			ret = -ENOMEM;
			goto out;
		}
		if ((ret = acl_to_disk(value, size, acl, &alen)))
			goto out;
		value = acl;
		size = alen;
	}
	if (size > 0xffff) {
		ret = -E2BIG;
		goto out;
	}
	struct zf_xattr_entry *e = find(buf, cap, index, suffix);
	if (e && (flags & XATTR_CREATE)) {
		ret = -EEXIST;
		goto out;
	}
	if (!e && (flags & XATTR_REPLACE)) {
		ret = -ENODATA;
		goto out;
	}
	if (e)
		drop_entry(buf, cap, e);
	size_t nl = strlen(suffix);
	unsigned int need = zf_xattr_entry_size((unsigned int)nl, (unsigned int)size);
	unsigned int end = used_bytes(buf, cap);
	if (end + need + 4 > cap) {
		ret = -E2BIG;      /* what F2FS answers when the xattr space is full */
		goto out;
	}
	e = (struct zf_xattr_entry *)(buf + end);
	e->e_name_index = index;
	e->e_name_len = (uint8_t)nl;
	e->e_value_size = zf_cpu_to_le16((uint16_t)size);
	memcpy(e->e_name, suffix, nl);
	memcpy(e->e_name + nl, value, size);
	ret = store(sbi, zi, buf, cap);
	if (!ret) {
		if (set_mode) {
			zi_raw(zi)->i_mode = zf_cpu_to_le16((uint16_t)new_mode);
			zlfs_node_dirty(sbi, zi->node);
		}
		zlfs_inode_touch(zi, false, true, false);
	}
out:
	free(acl);
	free(buf);
	return ret;
}

int zlfs_xattr_set(struct zlfs_sb *sbi, struct zinode *zi, const char *name,
		   const void *value, size_t size, int flags)
{
	int ret;

	if ((ret = zlfs_balance(sbi, ZLFS_BUDGET_XATTR)) || (ret = zlfs_may_change(zi)))
		return ret;
	return xattr_set(sbi, zi, name, value, size, flags);
}

static int xattr_remove(struct zlfs_sb *sbi, struct zinode *zi, const char *name)
{
	uint8_t *buf = malloc(BUF_MAX);
	const char *suffix;
	uint8_t index;
	unsigned int cap;
	int ret;

	if (!buf)
		return -ENOMEM;
	if ((ret = split_name(name, &index, &suffix)) || (ret = load(sbi, zi, buf, &cap)))
		goto out;
	struct zf_xattr_entry *e = find(buf, cap, index, suffix);
	if (!e) {
		ret = -ENODATA;
		goto out;
	}
	drop_entry(buf, cap, e);
	ret = store(sbi, zi, buf, cap);
	if (!ret)
		zlfs_inode_touch(zi, false, true, false);
out:
	free(buf);
	return ret;
}

int zlfs_xattr_remove(struct zlfs_sb *sbi, struct zinode *zi, const char *name)
{
	int ret = zlfs_may_change(zi);

	return ret ? ret : xattr_remove(sbi, zi, name);
}

int zlfs_xattr_list(struct zlfs_sb *sbi, struct zinode *zi, char *out, size_t size, size_t *len)
{
	uint8_t *buf = malloc(BUF_MAX);
	unsigned int cap;
	size_t n = 0;
	int ret;

	if (!buf)
		return -ENOMEM;
	if ((ret = load(sbi, zi, buf, &cap)))
		goto out;
	for (struct zf_xattr_entry *e = first_entry(buf); !is_last(e, buf, cap); e = next_entry(e)) {
		const char *pre = index_prefix(e->e_name_index);
		if (!pre)
			continue;
		bool acl = e->e_name_index == ZF_XATTR_INDEX_POSIX_ACL_ACCESS ||
			   e->e_name_index == ZF_XATTR_INDEX_POSIX_ACL_DEFAULT;
		size_t pl = strlen(pre), nl = acl ? 0 : e->e_name_len;
		if (size && n + pl + nl + 1 <= size) {
			memcpy(out + n, pre, pl);
			memcpy(out + n + pl, e->e_name, nl);
			out[n + pl + nl] = '\0';
		}
		n += pl + nl + 1;
	}
	*len = n;
	if (size && n > size)
		ret = -ERANGE;
out:
	free(buf);
	return ret;
}

/* ---- POSIX ACL semantics (the kernel enforces, zlfs keeps mode and ACL in step) -------- */

/* Kernel-form ACL entries: 4-byte header, then {tag, perm, id} of 8 bytes. */
struct kacl_ent {
	zf_le16 tag;
	zf_le16 perm;
	zf_le32 id;
} ZF_PACKED;

static struct kacl_ent *kacl_find(uint8_t *acl, size_t len, uint16_t tag)
{
	for (size_t o = 4; o + 8 <= len; o += 8) {
		struct kacl_ent *e = (struct kacl_ent *)(acl + o);
		if (zf_le16_to_cpu(e->tag) == tag)
			return e;
	}
	return NULL;
}

/* Only the three base entries: the ACL says no more than the mode does. */
static bool kacl_is_mode_only(const uint8_t *acl, size_t len)
{
	for (size_t o = 4; o + 8 <= len; o += 8) {
		uint16_t tag = zf_le16_to_cpu(((const struct kacl_ent *)(acl + o))->tag);
		if (tag != ACL_USER_OBJ && tag != ACL_GROUP_OBJ && tag != ACL_OTHER)
			return false;
	}
	return true;
}

/*
 * New inode zi in dir: with a default ACL on dir, zi's access ACL is that
 * ACL masked by the create mode (posix_acl_create's rule) and *mode takes
 * the ACL's base permissions; a new directory also inherits the default
 * ACL.  Returns 1 if dir has no default ACL (the caller applies the umask).
 */
int zlfs_acl_inherit(struct zlfs_sb *sbi, struct zinode *dir, struct zinode *zi, mode_t *mode)
{
	size_t len = 0;
	int ret;

	if (zlfs_xattr_none(zi_raw(dir), zlfs_feat(sbi)))   /* most directories: no buffer, no search */
		return 1;
	uint8_t *acl = malloc(BUF_MAX);
	if (!acl)
		return -ENOMEM;
	ret = zlfs_xattr_get(sbi, dir, ACL_DEFAULT, acl, BUF_MAX, &len);
	if (ret == -ENODATA) {
		free(acl);
		return 1;
	}
	if (ret)
		goto out;
	if (S_ISDIR(*mode) && (ret = xattr_set(sbi, zi, ACL_DEFAULT, acl, len, 0)))
		goto out;
	mode_t m = *mode;
	struct kacl_ent *uo = kacl_find(acl, len, ACL_USER_OBJ), *go = kacl_find(acl, len, ACL_GROUP_OBJ);
	struct kacl_ent *mk = kacl_find(acl, len, ACL_MASK), *ot = kacl_find(acl, len, ACL_OTHER);
	if (!uo || !go || !ot) {
		ret = -ZLFS_EFSCORRUPTED;
		goto out;
	}
	uint16_t up = zf_le16_to_cpu(uo->perm) & ((m >> 6) & 7);
	uint16_t op = zf_le16_to_cpu(ot->perm) & (m & 7);
	uo->perm = zf_cpu_to_le16(up);
	ot->perm = zf_cpu_to_le16(op);
	uint16_t gp;
	if (mk) {
		gp = zf_le16_to_cpu(mk->perm) & ((m >> 3) & 7);
		mk->perm = zf_cpu_to_le16(gp);
	} else {
		gp = zf_le16_to_cpu(go->perm) & ((m >> 3) & 7);
		go->perm = zf_cpu_to_le16(gp);
	}
	*mode = (m & ~(mode_t)0777) | (mode_t)(up << 6) | (mode_t)(gp << 3) | op;
	zi_raw(zi)->i_mode = zf_cpu_to_le16((uint16_t)*mode);
	zlfs_node_dirty(sbi, zi->node);
	if (!kacl_is_mode_only(acl, len))
		ret = xattr_set(sbi, zi, ACL_ACCESS, acl, len, 0);
out:
	free(acl);
	return ret;
}

/* chmod: the access ACL's owner, group (or mask) and other entries follow the mode. */
int zlfs_acl_chmod(struct zlfs_sb *sbi, struct zinode *zi, mode_t mode)
{
	uint8_t *acl = malloc(BUF_MAX);
	size_t len = 0;
	int ret;

	if (!acl)
		return -ENOMEM;
	ret = zlfs_xattr_get(sbi, zi, ACL_ACCESS, acl, BUF_MAX, &len);
	if (ret == -ENODATA) {
		free(acl);
		return 0;
	}
	if (!ret) {
		struct kacl_ent *uo = kacl_find(acl, len, ACL_USER_OBJ);
		struct kacl_ent *gx = kacl_find(acl, len, ACL_MASK);
		struct kacl_ent *ot = kacl_find(acl, len, ACL_OTHER);
		if (!gx)
			gx = kacl_find(acl, len, ACL_GROUP_OBJ);
		if (uo && gx && ot) {
			uo->perm = zf_cpu_to_le16((mode >> 6) & 7);
			gx->perm = zf_cpu_to_le16((mode >> 3) & 7);
			ot->perm = zf_cpu_to_le16(mode & 7);
			ret = xattr_set(sbi, zi, ACL_ACCESS, acl, len, 0);
		}
	}
	free(acl);
	return ret;
}

void zlfs_acl_drop_sgid(struct zlfs_sb *sbi, struct zinode *zi, uid_t uid, gid_t gid,
			const gid_t *groups, int ngroups)
{
	struct zf_inode *ri = zi_raw(zi);
	uint16_t mode = zf_le16_to_cpu(ri->i_mode);
	gid_t fgid = zf_le32_to_cpu(ri->i_gid);

	if (uid == 0 || !(mode & S_ISGID) || gid == fgid)
		return;
	for (int i = 0; i < ngroups; i++)
		if (groups[i] == fgid)
			return;
	ri->i_mode = zf_cpu_to_le16(mode & (uint16_t)~S_ISGID);
	zlfs_node_dirty(sbi, zi->node);
}

static bool acl_mode_only(const uint8_t *acl, size_t len)
{
	return len >= 4 && kacl_is_mode_only(acl, len);
}

/* The mode bits an access ACL (kernel form) implies. */
static int acl_mode(const uint8_t *acl, size_t len, mode_t *mode)
{
	if (len < 4 || (len - 4) % 8 || zf_le32_to_cpu(*(const uint32_t *)acl) != VFS_ACL_VERSION)
		return -EINVAL;
	struct kacl_ent *uo = kacl_find((uint8_t *)acl, len, ACL_USER_OBJ);
	struct kacl_ent *gx = kacl_find((uint8_t *)acl, len, ACL_MASK);
	struct kacl_ent *ot = kacl_find((uint8_t *)acl, len, ACL_OTHER);
	if (!gx)
		gx = kacl_find((uint8_t *)acl, len, ACL_GROUP_OBJ);
	if (!uo || !gx || !ot)
		return -EINVAL;
	*mode = (*mode & ~(mode_t)0777) | (mode_t)((zf_le16_to_cpu(uo->perm) & 7) << 6) |
		(mode_t)((zf_le16_to_cpu(gx->perm) & 7) << 3) | (mode_t)(zf_le16_to_cpu(ot->perm) & 7);
	return 0;
}
