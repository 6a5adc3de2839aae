/*
 * test_xattr.c - extended attributes and POSIX ACLs (fs/xattr.c) through
 * its public calls, in-process on volumes made by mkfs.zlfs and judged by
 * fsck.f2fs.  The FUSE-level checks (tests/fs) go through the kernel,
 * which refuses much before zlfs sees it (sizes, ACL forms) and hides
 * where an attribute lives; here every answer and every byte placement is
 * the daemon's own.
 *
 * Covers:
 *   - names: user., trusted., security. and the two ACL names, each its
 *     own namespace; an empty name after the prefix EINVAL, an unknown
 *     prefix EOPNOTSUPP, a name of 255 bytes taken and 256 ERANGE (as
 *     F2FS's F2FS_NAME_LEN), the same from zlfs_xattr_check_name;
 *   - get/list size queries (size 0), a buffer one byte short ERANGE, an
 *     exact one taken; XATTR_CREATE (EEXIST, value kept) and
 *     XATTR_REPLACE (ENODATA, nothing made);
 *   - the space F2FS gives: an inode without an inline area (zlfs's own)
 *     has the xattr node only, 4072 bytes of which the header and the end
 *     word take 28, so one 1-byte name holds 4039 bytes and not 4040 (the
 *     kernel's MIN_OFFSET rule); with the 200-byte inline area (the
 *     kernel's inodes, INLINE_XATTR) 4239 and not 4240; E2BIG past it, a
 *     replace that does not fit E2BIG with the old value kept, values past
 *     0xffff E2BIG;
 *   - inline area versus xattr node: what fits in the inline area with its
 *     end word stays there (no node), one word more takes the node, an
 *     entry across the boundary reads back whole, shrinking frees the
 *     node; removing the last attribute frees the node (nid, block,
 *     i_blocks) and the inode shows "no xattrs";
 *   - a full volume: a set that needs a new xattr node fails ENOSPC with
 *     nothing changed and no nid lost; one that fits inline still works;
 *     after space comes back the same set works;
 *   - persistence: everything (node, inline, across the boundary, ACLs)
 *     reads back the same after unmount and remount, fsck.f2fs clean;
 *   - ACLs: the kernel's xattr form (version 2, 8-byte entries) round
 *     trips through F2FS's disk form (version 1, 4-byte entries without an
 *     id), the mode follows an access ACL (group bits from the mask), an
 *     ACL equal to the mode is not stored, chmod (zlfs_acl_chmod) rewrites
 *     the ACL's base entries, a new file and directory inherit a
 *     directory's default ACL (masked by the create mode, no umask),
 *     malformed ACLs are EINVAL.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "zlfs.h"
#include "checkpoint.h"
#include "segment.h"
#include "gc.h"
#include "node.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "xattr.h"
#include "testutil.h"
#include "fsutil.h"

static const struct zlfs_cred cred = { 0, 0, 022 };

/* F2FS's space, written out from the kernel's definitions (fs/f2fs/xattr.h) */
#define HDR 24u                         /* struct f2fs_xattr_header */
#define ENT 4u                          /* struct f2fs_xattr_entry before the name */
#define INLINE_BYTES (ZF_INLINE_XATTR_ADDRS * 4u)   /* 200: DEFAULT_INLINE_XATTR_ADDRS */
/* MIN_OFFSET: the inline area and the node's 4096 - 24 (footer) bytes, less the end word */
#define MIN_OFFSET(inl) ((inl) + 4096u - 24u - 4u)
/* the largest value one entry with a name of nl bytes can have (ENTRY_SIZE = ALIGN4) */
#define MAX_VALUE(inl, nl) (MIN_OFFSET(inl) - HDR - ENT - (nl))

#define BIG 70000

static char *big_a, *big_b;

static void setup(void)
{
	big_a = malloc(BIG);
	big_b = malloc(BIG);
	ck_assert(big_a && big_b);
	tu_fill(big_a, BIG, 1);
	tu_fill(big_b, BIG, 2);
}

static void teardown(void)
{
	free(big_a);
	free(big_b);
}

static struct zinode *mkfile(struct zlfs_sb *sbi, uint32_t dir, const char *name, mode_t mode)
{
	struct zinode *zi;

	ck_assert_int_eq(zlfs_create(sbi, &cred, dir, name, mode, 0, NULL, &zi), 0);
	return zi;
}

static struct zinode *get(struct zlfs_sb *sbi, uint32_t dir, const char *name)
{
	struct zinode *zi;

	ck_assert_int_eq(zlfs_iget(sbi, tu_lookup(sbi, dir, name), &zi), 0);
	return zi;
}

/*
 * Give a new, empty file the 200-byte inline xattr area the kernel's F2FS
 * gives every inode it makes (zlfs makes none, but reads and writes them).
 */
static void inline_area_on(struct zlfs_sb *sbi, struct zinode *zi)
{
	struct zf_inode *ri = zi_raw(zi);

	ck_assert(zlfs_xattr_none(ri, zlfs_feat(sbi)));
	/* new inodes have it (inline_xattr is on by default, as the kernel's); under noinline_xattr, by hand */
	if (!(ri->i_inline & ZF_INLINE_XATTR)) {
		ck_assert(tu_noinline);
		ri->i_inline |= ZF_INLINE_XATTR;
		zlfs_inode_dirty(sbi, zi);
	}
}

static uint8_t *inline_area(struct zinode *zi)
{
	return (uint8_t *)&zi_raw(zi)->i_addr[ZF_ADDRS_PER_INODE - ZF_INLINE_XATTR_ADDRS];
}

static uint32_t xnid(struct zinode *zi)
{
	return zf_le32_to_cpu(zi_raw(zi)->i_xattr_nid);
}

static uint64_t iblocks(struct zinode *zi)
{
	return zf_le64_to_cpu(zi_raw(zi)->i_blocks);
}

/* name has exactly len bytes of val (size query first, then an exact buffer). */
static void expect(struct zlfs_sb *sbi, struct zinode *zi, const char *name, const void *val,
		   size_t len)
{
	char *buf = malloc(len + 16);
	size_t got = 99999;

	ck_assert_ptr_nonnull(buf);
	int ret = zlfs_xattr_get(sbi, zi, name, NULL, 0, &got);
	ck_assert_msg(ret == 0, "%s: size query %d", name, ret);
	ck_assert_msg(got == len, "%s: size query says %zu, not %zu", name, got, len);
	got = 99999;
	ck_assert_int_eq(zlfs_xattr_get(sbi, zi, name, buf, len ? len : 1, &got), 0);
	ck_assert_uint_eq(got, len);
	ck_assert_msg(!memcmp(buf, val, len), "%s: value differs", name);
	free(buf);
}

static void absent(struct zlfs_sb *sbi, struct zinode *zi, const char *name)
{
	char buf[64];
	size_t got;

	ck_assert_int_eq(zlfs_xattr_get(sbi, zi, name, buf, sizeof(buf), &got), -ENODATA);
	ck_assert_int_eq(zlfs_xattr_get(sbi, zi, name, NULL, 0, &got), -ENODATA);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The names listxattr gives, sorted and joined with ',' (order is not
 * promised); also checks the size query agrees and a buffer one byte
 * short is ERANGE.
 */
static const char *names(struct zlfs_sb *sbi, struct zinode *zi)
{
	static char joined[16384];
	char list[16384], *v[512];
	size_t len = 0, q = 99999;
	int n = 0;

	ck_assert_int_eq(zlfs_xattr_list(sbi, zi, NULL, 0, &q), 0);
	ck_assert_int_eq(zlfs_xattr_list(sbi, zi, list, sizeof(list), &len), 0);
	ck_assert_uint_eq(q, len);
	if (len) {
		char small[16384];
		size_t l2;
		ck_assert_int_eq(zlfs_xattr_list(sbi, zi, small, len - 1, &l2), -ERANGE);
		ck_assert_int_eq(zlfs_xattr_list(sbi, zi, small, len, &l2), 0);
		ck_assert_uint_eq(l2, len);
		ck_assert(!memcmp(small, list, len));
		ck_assert_int_eq(list[len - 1], '\0');
	}
	for (size_t o = 0; o < len; o += strlen(list + o) + 1)
		v[n++] = list + o;
	qsort(v, (size_t)n, sizeof(v[0]), cmp_str);
	joined[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(joined, ",");
		strcat(joined, v[i]);
	}
	return joined;
}

/* ---- ACLs in the kernel's xattr form ---------------------------------------------- */

#define A_USER_OBJ 0x01
#define A_USER 0x02
#define A_GROUP_OBJ 0x04
#define A_GROUP 0x08
#define A_MASK 0x10
#define A_OTHER 0x20
#define NOID 0xffffffffu

struct kent {
	uint16_t tag, perm;
	uint32_t id;
};

static size_t acl(uint8_t *out, const struct kent *e, size_t n)
{
	*(uint32_t *)out = zf_cpu_to_le32(2);
	for (size_t i = 0; i < n; i++) {
		uint8_t *p = out + 4 + 8 * i;
		*(uint16_t *)p = zf_cpu_to_le16(e[i].tag);
		*(uint16_t *)(p + 2) = zf_cpu_to_le16(e[i].perm);
		*(uint32_t *)(p + 4) = zf_cpu_to_le32(e[i].id);
	}
	return 4 + 8 * n;
}

static uint16_t mode_of(struct zinode *zi)
{
	return zf_le16_to_cpu(zi_raw(zi)->i_mode);
}

/* The raw entry (index, name) of zi's xattr buffer, read as xattr.c stored it. */
static const struct zf_xattr_entry *raw_entry(struct zlfs_sb *sbi, struct zinode *zi,
					      uint8_t index, const char *name)
{
	static uint8_t buf[INLINE_BYTES + ZF_XATTR_NODE_BYTES];
	unsigned int ib = (zi_raw(zi)->i_inline & ZF_INLINE_XATTR) ? INLINE_BYTES : 0;
	struct znode *n;

	memset(buf, 0, sizeof(buf));
	memcpy(buf, inline_area(zi), ib);
	if (xnid(zi)) {
		ck_assert_int_eq(zlfs_node_get(sbi, xnid(zi), zi->ino, ZF_NODE_KIND_XATTR, &n), 0);
		memcpy(buf + ib, n->blk.xattr, ZF_XATTR_NODE_BYTES);
	}
	ck_assert_uint_eq(zf_le32_to_cpu(((struct zf_xattr_header *)buf)->h_magic), ZF_XATTR_MAGIC);
	for (unsigned int at = HDR; at + 4 <= ib + ZF_XATTR_NODE_BYTES;) {
		const struct zf_xattr_entry *e = (const struct zf_xattr_entry *)(buf + at);
		if (!*(const uint32_t *)e)
			break;
		if (e->e_name_index == index && e->e_name_len == strlen(name) &&
		    !memcmp(e->e_name, name, e->e_name_len))
			return e;
		at += zf_xattr_entry_size(e->e_name_len, zf_le16_to_cpu(e->e_value_size));
	}
	return NULL;
}

/* ---- tests ------------------------------------------------------------------------ */

START_TEST(test_names)
{
	char *img = tu_fs_volume("xattr-names.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi = mkfile(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);
	char name[300], buf[64];
	size_t len;

	ck_assert(zlfs_xattr_none(zi_raw(zi), zlfs_feat(sbi)));
	ck_assert_str_eq(names(sbi, zi), "");
	/* one suffix in three namespaces: three attributes */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.k", "uuu", 3, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "trusted.k", "tttt", 4, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "security.k", "sssss", 5, 0), 0);
	ck_assert(!zlfs_xattr_none(zi_raw(zi), zlfs_feat(sbi)));
	expect(sbi, zi, "user.k", "uuu", 3);
	expect(sbi, zi, "trusted.k", "tttt", 4);
	expect(sbi, zi, "security.k", "sssss", 5);
	ck_assert_str_eq(names(sbi, zi), "security.k,trusted.k,user.k");
	absent(sbi, zi, "user.kk");   /* not "user.k" by a prefix */
	absent(sbi, zi, "user.j");
	/* an empty value is a value */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.empty", "", 0, 0), 0);
	expect(sbi, zi, "user.empty", "", 0);
	/* a value too big for the buffer: ERANGE; the size query says what is needed */
	ck_assert_int_eq(zlfs_xattr_get(sbi, zi, "security.k", buf, 4, &len), -ERANGE);
	ck_assert_int_eq(zlfs_xattr_get(sbi, zi, "security.k", buf, 5, &len), 0);
	/* overwrite, shorter then longer */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "trusted.k", "T", 1, 0), 0);
	expect(sbi, zi, "trusted.k", "T", 1);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "trusted.k", "0123456789", 10, 0), 0);
	expect(sbi, zi, "trusted.k", "0123456789", 10);
	expect(sbi, zi, "user.k", "uuu", 3);
	/* remove one: the others stay */
	ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, "trusted.k"), 0);
	absent(sbi, zi, "trusted.k");
	ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, "trusted.k"), -ENODATA);
	expect(sbi, zi, "user.k", "uuu", 3);
	expect(sbi, zi, "security.k", "sssss", 5);
	ck_assert_str_eq(names(sbi, zi), "security.k,user.empty,user.k");

	/* names refused, the same way by every call */
	static const struct { const char *name; int err; } bad[] = {
		{ "user.", -EINVAL }, { "trusted.", -EINVAL }, { "security.", -EINVAL },
		{ "system.foo", -EOPNOTSUPP }, { "foo", -EOPNOTSUPP }, { "", -EOPNOTSUPP },
		{ "User.k", -EOPNOTSUPP }, { "system.posix_acl_accessx", -EOPNOTSUPP },
		{ "osx.k", -EOPNOTSUPP },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(zlfs_xattr_check_name(bad[i].name), bad[i].err);
		ck_assert_int_eq(zlfs_xattr_set(sbi, zi, bad[i].name, "x", 1, 0), bad[i].err);
		ck_assert_int_eq(zlfs_xattr_get(sbi, zi, bad[i].name, buf, sizeof(buf), &len), bad[i].err);
		ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, bad[i].name), bad[i].err);
	}
	/* F2FS_NAME_LEN: 255 bytes after the prefix and no more */
	memset(name, 0, sizeof(name));
	strcpy(name, "user.");
	memset(name + 5, 'n', 255);
	ck_assert_int_eq(zlfs_xattr_check_name(name), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, name, "long", 4, 0), 0);
	expect(sbi, zi, name, "long", 4);
	ck_assert(strstr(names(sbi, zi), name));
	name[5 + 255] = 'n';
	ck_assert_int_eq(zlfs_xattr_check_name(name), -ERANGE);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, name, "long", 4, 0), -ERANGE);
	ck_assert_int_eq(zlfs_xattr_get(sbi, zi, name, buf, sizeof(buf), &len), -ERANGE);
	ck_assert_int_eq(zlfs_xattr_check_name("system.posix_acl_access"), 0);
	ck_assert_int_eq(zlfs_xattr_check_name("system.posix_acl_default"), 0);
	ck_assert_int_eq(zlfs_xattr_check_name("security.selinux"), 0);
	absent(sbi, zi, "system.posix_acl_access");
	absent(sbi, zi, "system.posix_acl_default");
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

START_TEST(test_create_replace)
{
	char *img = tu_fs_volume("xattr-flags.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi = mkfile(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);

	/* REPLACE of nothing: ENODATA, and nothing made */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.a", "1", 1, XATTR_REPLACE), -ENODATA);
	absent(sbi, zi, "user.a");
	ck_assert(zlfs_xattr_none(zi_raw(zi), zlfs_feat(sbi)));
	ck_assert_uint_eq(xnid(zi), 0);
	/* CREATE of nothing makes it; again: EEXIST, the value kept */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.a", "1", 1, XATTR_CREATE), 0);
	expect(sbi, zi, "user.a", "1", 1);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.a", "22", 2, XATTR_CREATE), -EEXIST);
	expect(sbi, zi, "user.a", "1", 1);
	/* REPLACE of it: the new value */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.a", "333", 3, XATTR_REPLACE), 0);
	expect(sbi, zi, "user.a", "333", 3);
	/* the same suffix in another namespace is another attribute */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "trusted.a", "t", 1, XATTR_REPLACE), -ENODATA);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "trusted.a", "t", 1, XATTR_CREATE), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "security.a", "s", 1, XATTR_REPLACE), -ENODATA);
	/* neither flag: either */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.b", "b", 1, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.b", "bb", 2, 0), 0);
	expect(sbi, zi, "user.b", "bb", 2);
	/* a removed one is gone for both flags' purposes */
	ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, "user.a"), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.a", "x", 1, XATTR_REPLACE), -ENODATA);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.a", "x", 1, XATTR_CREATE), 0);
	expect(sbi, zi, "user.a", "x", 1);
	expect(sbi, zi, "trusted.a", "t", 1);
	ck_assert_str_eq(names(sbi, zi), "trusted.a,user.a,user.b");
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/*
 * Inodes made under noinline_xattr: no inline area, everything in the
 * xattr node; the node comes with the first attribute and goes with the
 * last.
 */
START_TEST(test_node_space)
{
	char *img = tu_fs_volume("xattr-node.img");
	tu_noinline = true;
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi = mkfile(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);
	char nm[32];

	ck_assert(!(zi_raw(zi)->i_inline & ZF_INLINE_XATTR));
	uint64_t blocks0 = iblocks(zi);
	uint32_t nodes0 = sbi->valid_node_count;
	uint64_t avail0 = zlfs_avail_blocks(sbi);

	/* one 1-byte name: 4039 bytes fit exactly, 4040 do not; a longer name leaves less */
	ck_assert_uint_eq(MAX_VALUE(0, 1), 4039);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.vv", big_a, MAX_VALUE(0, 1), 0), -E2BIG);
	ck_assert_uint_eq(xnid(zi), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.v", big_a, MAX_VALUE(0, 1) + 1, 0), -E2BIG);
	absent(sbi, zi, "user.v");
	ck_assert_uint_eq(xnid(zi), 0);
	ck_assert_uint_eq(sbi->valid_node_count, nodes0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.v", big_a, MAX_VALUE(0, 1), 0), 0);
	expect(sbi, zi, "user.v", big_a, MAX_VALUE(0, 1));
	uint32_t x = xnid(zi);
	ck_assert_uint_ne(x, 0);
	ck_assert_uint_eq(zlfs_nat(sbi, x)->ino, zi->ino);
	ck_assert_uint_eq(iblocks(zi), blocks0 + 1);
	ck_assert_uint_eq(sbi->valid_node_count, nodes0 + 1);
	ck_assert_uint_eq(zlfs_avail_blocks(sbi), avail0 - 1);
	/* nothing more: not even an empty value under a 1-byte name */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.w", "", 0, 0), -E2BIG);
	/* a replace reuses the old entry's room: the same size fits, one more does not */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.v", big_b, MAX_VALUE(0, 1) + 1, 0), -E2BIG);
	expect(sbi, zi, "user.v", big_a, MAX_VALUE(0, 1));
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.v", big_b, MAX_VALUE(0, 1), XATTR_REPLACE), 0);
	expect(sbi, zi, "user.v", big_b, MAX_VALUE(0, 1));
	ck_assert_uint_eq(xnid(zi), x);   /* the same node */
	/* the last one removed: the node goes, nid and block with it */
	ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, "user.v"), 0);
	ck_assert_uint_eq(xnid(zi), 0);
	ck_assert_uint_eq(zlfs_nat(sbi, x)->blkaddr, ZF_NULL_ADDR);
	ck_assert_uint_eq(iblocks(zi), blocks0);
	ck_assert_uint_eq(sbi->valid_node_count, nodes0);
	ck_assert_uint_eq(zlfs_avail_blocks(sbi), avail0);
	ck_assert(zlfs_xattr_none(zi_raw(zi), zlfs_feat(sbi)));
	ck_assert_str_eq(names(sbi, zi), "");

	/* many entries: nine of 404 bytes (2-byte names, 396-byte values) and the tenth exact */
	for (int i = 0; i < 9; i++) {
		snprintf(nm, sizeof(nm), "user.f%d", i);
		ck_assert_int_eq(zlfs_xattr_set(sbi, zi, nm, big_a + i, 396, 0), 0);
	}
	unsigned int left = MIN_OFFSET(0) - HDR - 9 * 404;   /* 408 */
	ck_assert_uint_eq(left, 408);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.f9", big_a + 9, left - ENT - 2 + 1, 0), -E2BIG);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.f9", big_a + 9, left - ENT - 2, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.x", "", 0, 0), -E2BIG);
	/* a replace that grows past the room: E2BIG, the old value kept, the others too */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.f5", big_b, 399, 0), -E2BIG);
	expect(sbi, zi, "user.f5", big_a + 5, 396);
	/* the same size (padding included) does */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.f5", big_b, 398, 0), 0);
	expect(sbi, zi, "user.f5", big_b, 398);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.f5", big_a + 5, 396, 0), 0);
	/* removing one makes its room: 404 bytes, a 399-byte value under a 1-byte name */
	ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, "user.f0"), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.x", big_b, 400, 0), -E2BIG);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.x", big_b, 399, 0), 0);
	for (int i = 1; i < 9; i++) {
		snprintf(nm, sizeof(nm), "user.f%d", i);
		expect(sbi, zi, nm, big_a + i, 396);
	}
	expect(sbi, zi, "user.f9", big_a + 9, left - ENT - 2);
	expect(sbi, zi, "user.x", big_b, 399);
	ck_assert_str_eq(names(sbi, zi),
			 "user.f1,user.f2,user.f3,user.f4,user.f5,user.f6,user.f7,user.f8,user.f9,user.x");

	/* values past what e_value_size holds: E2BIG whatever the room */
	struct zinode *z2 = mkfile(sbi, ZF_ROOT_INO, "g", S_IFREG | 0644);
	ck_assert_int_eq(zlfs_xattr_set(sbi, z2, "user.huge", big_a, 0x10000, 0), -E2BIG);
	ck_assert_int_eq(zlfs_xattr_set(sbi, z2, "user.huge", big_a, 0xffff, 0), -E2BIG);
	ck_assert(zlfs_xattr_none(zi_raw(z2), zlfs_feat(sbi)));
	ck_assert_uint_eq(xnid(z2), 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	/* read back from the device; then the last removal frees a written node */
	sbi = tu_fs_mount(img, 0);
	zi = get(sbi, ZF_ROOT_INO, "f");
	for (int i = 1; i < 9; i++) {
		snprintf(nm, sizeof(nm), "user.f%d", i);
		expect(sbi, zi, nm, big_a + i, 396);
	}
	expect(sbi, zi, "user.x", big_b, 399);
	x = xnid(zi);
	uint32_t addr = zlfs_nat(sbi, x)->blkaddr;
	ck_assert(zlfs_is_main_blkaddr(sbi, addr));
	ck_assert(zlfs_block_valid(sbi, addr));
	uint64_t valid = sbi->valid_block_count;
	for (int i = 1; i < 10; i++) {
		snprintf(nm, sizeof(nm), "user.f%d", i);
		ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, nm), 0);
		ck_assert_uint_eq(xnid(zi), x);
	}
	ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, "user.x"), 0);
	ck_assert_uint_eq(xnid(zi), 0);
	ck_assert_uint_eq(zlfs_nat(sbi, x)->blkaddr, ZF_NULL_ADDR);
	ck_assert(!zlfs_block_valid(sbi, addr));
	ck_assert_uint_eq(sbi->valid_block_count, valid - 1);
	ck_assert_uint_eq(iblocks(zi), 1);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	sbi = tu_fs_mount(img, 0);
	zi = get(sbi, ZF_ROOT_INO, "f");
	ck_assert_uint_eq(xnid(zi), 0);
	ck_assert_str_eq(names(sbi, zi), "");
	tu_fs_unmount(sbi);
	tu_noinline = false;
	free(img);
}
END_TEST

/*
 * An inode with the 200-byte inline area: what fits there with its end
 * word stays there, more takes the node, and the node goes again when
 * everything fits inline.
 */
START_TEST(test_inline_area)
{
	char *img = tu_fs_volume("xattr-inline.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi = mkfile(sbi, ZF_ROOT_INO, "f", S_IFREG | 0644);
	uint32_t nodes0 = sbi->valid_node_count;
	char nm[32];

	inline_area_on(sbi, zi);
	/* 200 bytes: header 24, end word 4, so one entry of 172: a 167-byte value, 1-byte name */
	unsigned int fit = INLINE_BYTES - HDR - 4 - ENT - 1;
	ck_assert_uint_eq(fit, 167);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.i", big_a, fit, 0), 0);
	ck_assert_uint_eq(xnid(zi), 0);
	ck_assert_uint_eq(sbi->valid_node_count, nodes0);
	ck_assert_uint_eq(iblocks(zi), 1);
	ck_assert(!zlfs_xattr_none(zi_raw(zi), zlfs_feat(sbi)));
	/* the bytes are where F2FS has them: header, then the entry, in i_addr's last words */
	const uint8_t *area = inline_area(zi);
	ck_assert_uint_eq(zf_le32_to_cpu(*(const uint32_t *)area), ZF_XATTR_MAGIC);
	const struct zf_xattr_entry *e = (const struct zf_xattr_entry *)(area + HDR);
	ck_assert_uint_eq(e->e_name_index, ZF_XATTR_INDEX_USER);
	ck_assert_uint_eq(e->e_name_len, 1);
	ck_assert_uint_eq(zf_le16_to_cpu(e->e_value_size), fit);
	ck_assert_int_eq(e->e_name[0], 'i');
	ck_assert(!memcmp(e->e_name + 1, big_a, fit));
	expect(sbi, zi, "user.i", big_a, fit);
	/* one byte more: the entry takes 176, its end word does not fit; the node comes */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.i", big_a, fit + 1, 0), 0);
	uint32_t x = xnid(zi);
	ck_assert_uint_ne(x, 0);
	ck_assert_uint_eq(sbi->valid_node_count, nodes0 + 1);
	ck_assert_uint_eq(iblocks(zi), 2);
	expect(sbi, zi, "user.i", big_a, fit + 1);
	/* back to what fits: the node goes */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.i", big_b, fit, 0), 0);
	ck_assert_uint_eq(xnid(zi), 0);
	ck_assert_uint_eq(zlfs_nat(sbi, x)->blkaddr, ZF_NULL_ADDR);
	ck_assert_uint_eq(sbi->valid_node_count, nodes0);
	ck_assert_uint_eq(iblocks(zi), 1);
	expect(sbi, zi, "user.i", big_b, fit);
	ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, "user.i"), 0);
	ck_assert(zlfs_xattr_none(zi_raw(zi), zlfs_feat(sbi)));

	/* the whole space: 200 + 4072 - 28, one 1-byte name holds 4239 and not 4240 */
	ck_assert_uint_eq(MAX_VALUE(INLINE_BYTES, 1), 4239);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.v", big_a, MAX_VALUE(INLINE_BYTES, 1) + 1, 0),
			 -E2BIG);
	ck_assert_uint_eq(xnid(zi), 0);
	ck_assert(zlfs_xattr_none(zi_raw(zi), zlfs_feat(sbi)));
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.v", big_a, MAX_VALUE(INLINE_BYTES, 1), 0), 0);
	expect(sbi, zi, "user.v", big_a, MAX_VALUE(INLINE_BYTES, 1));
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.w", "", 0, 0), -E2BIG);
	ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, "user.v"), 0);
	ck_assert_uint_eq(xnid(zi), 0);

	/* small entries of 20 bytes (2-byte names, 14-byte values): eight fit inline */
	for (int i = 0; i < 8; i++) {
		snprintf(nm, sizeof(nm), "user.%02d", i);
		ck_assert_int_eq(zlfs_xattr_set(sbi, zi, nm, big_a + 100 * i, 14, 0), 0);
		ck_assert_msg(xnid(zi) == 0, "entry %d: xattr node %u", i, xnid(zi));
	}
	/* one across the boundary: from byte 184 of the inline area into the node */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "user.across", big_b, 300, 0), 0);
	ck_assert_uint_ne(xnid(zi), 0);
	e = (const struct zf_xattr_entry *)(inline_area(zi) + HDR + 8 * 20);
	ck_assert_uint_eq(e->e_name_len, 6);
	ck_assert(!memcmp(e->e_name, "across", 6));
	for (int i = 8; i < 12; i++) {
		snprintf(nm, sizeof(nm), "user.%02d", i);
		ck_assert_int_eq(zlfs_xattr_set(sbi, zi, nm, big_a + 100 * i, 14, 0), 0);
	}
	for (int i = 0; i < 12; i++) {
		snprintf(nm, sizeof(nm), "user.%02d", i);
		expect(sbi, zi, nm, big_a + 100 * i, 14);
	}
	expect(sbi, zi, "user.across", big_b, 300);
	/* a file with inline xattrs takes data in its other slots: 900 blocks, a direct node */
	char *data = malloc(900 * ZF_BLKSIZE);
	size_t got;
	tu_fill(data, 900 * ZF_BLKSIZE, 77);
	ck_assert_int_eq(zlfs_file_write(sbi, zi, data, 900 * ZF_BLKSIZE, 0), 0);
	expect(sbi, zi, "user.across", big_b, 300);
	expect(sbi, zi, "user.11", big_a + 1100, 14);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	sbi = tu_fs_mount(img, 0);
	zi = get(sbi, ZF_ROOT_INO, "f");
	ck_assert(zi_raw(zi)->i_inline & ZF_INLINE_XATTR);
	for (int i = 0; i < 12; i++) {
		snprintf(nm, sizeof(nm), "user.%02d", i);
		expect(sbi, zi, nm, big_a + 100 * i, 14);
	}
	expect(sbi, zi, "user.across", big_b, 300);
	char *back = malloc(900 * ZF_BLKSIZE);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, back, 900 * ZF_BLKSIZE, 0, &got), 0);
	ck_assert_uint_eq(got, 900 * ZF_BLKSIZE);
	ck_assert(!memcmp(back, data, got));
	/* shrink until everything fits inline again: the node goes */
	x = xnid(zi);
	ck_assert_uint_ne(x, 0);
	ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, "user.across"), 0);
	ck_assert_uint_ne(xnid(zi), 0);
	/* 24 + 20 n + 4 > 200 while n > 8 entries are left */
	for (int i = 11; i >= 8; i--) {
		ck_assert_uint_ne(xnid(zi), 0);
		snprintf(nm, sizeof(nm), "user.%02d", i);
		ck_assert_int_eq(zlfs_xattr_remove(sbi, zi, nm), 0);
	}
	ck_assert_uint_eq(xnid(zi), 0);
	ck_assert_uint_eq(zlfs_nat(sbi, x)->blkaddr, ZF_NULL_ADDR);
	for (int i = 0; i < 8; i++) {
		snprintf(nm, sizeof(nm), "user.%02d", i);
		expect(sbi, zi, nm, big_a + 100 * i, 14);
	}
	ck_assert_str_eq(names(sbi, zi),
			 "user.00,user.01,user.02,user.03,user.04,user.05,user.06,user.07");
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	sbi = tu_fs_mount(img, 0);
	zi = get(sbi, ZF_ROOT_INO, "f");
	ck_assert_uint_eq(xnid(zi), 0);
	expect(sbi, zi, "user.07", big_a + 700, 14);
	ck_assert_int_eq(zlfs_file_read(sbi, zi, back, 900 * ZF_BLKSIZE, 0, &got), 0);
	ck_assert(!memcmp(back, data, 900 * ZF_BLKSIZE));
	tu_fs_unmount(sbi);
	free(data);
	free(back);
	free(img);
}
END_TEST

/* The ACL form every test below uses: owner rwx, user 1000 rw, group r, mask rwx, other r. */
static size_t acl_named(uint8_t *out, uint16_t mask)
{
	const struct kent e[] = {
		{ A_USER_OBJ, 7, NOID }, { A_USER, 6, 1000 }, { A_GROUP_OBJ, 4, NOID },
		{ A_GROUP, 5, 2000 }, { A_MASK, mask, NOID }, { A_OTHER, 4, NOID },
	};
	return acl(out, e, 6);
}

START_TEST(test_acl)
{
	char *img = tu_fs_volume("xattr-acl.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi = mkfile(sbi, ZF_ROOT_INO, "f", S_IFREG | 0600);
	uint8_t a[256], b[256];
	size_t alen, len;

	ck_assert_uint_eq(mode_of(zi), S_IFREG | 0600);
	/* a full ACL: stored, the same bytes back, the mode follows (group bits: the mask) */
	alen = acl_named(a, 5);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", a, alen, 0), 0);
	ck_assert_uint_eq(mode_of(zi), S_IFREG | 0754);
	expect(sbi, zi, "system.posix_acl_access", a, alen);
	ck_assert_str_eq(names(sbi, zi), "system.posix_acl_access");
	/* on disk in F2FS's form: version 1, 4-byte entries except the named ones */
	const struct zf_xattr_entry *e = raw_entry(sbi, zi, ZF_XATTR_INDEX_POSIX_ACL_ACCESS, "");
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(zf_le16_to_cpu(e->e_value_size), 4 + 4 * 4 + 2 * 8);
	const uint8_t *v = (const uint8_t *)e->e_name;
	ck_assert_uint_eq(zf_le32_to_cpu(*(const uint32_t *)v), 1);
	ck_assert_uint_eq(zf_le16_to_cpu(*(const uint16_t *)(v + 4)), A_USER_OBJ);
	ck_assert_uint_eq(zf_le16_to_cpu(*(const uint16_t *)(v + 6)), 7);
	ck_assert_uint_eq(zf_le16_to_cpu(*(const uint16_t *)(v + 8)), A_USER);
	ck_assert_uint_eq(zf_le32_to_cpu(*(const uint32_t *)(v + 12)), 1000);
	ck_assert_uint_eq(zf_le16_to_cpu(*(const uint16_t *)(v + 16)), A_GROUP_OBJ);
	/* too small a buffer: ERANGE, the size query gives the kernel form's size */
	ck_assert_int_eq(zlfs_xattr_get(sbi, zi, "system.posix_acl_access", b, alen - 1, &len),
			 -ERANGE);
	ck_assert_int_eq(zlfs_xattr_get(sbi, zi, "system.posix_acl_access", NULL, 0, &len), 0);
	ck_assert_uint_eq(len, alen);
	/* without a mask the group entry gives the group bits */
	const struct kent nomask[] = {
		{ A_USER_OBJ, 6, NOID }, { A_USER, 7, 1000 }, { A_GROUP_OBJ, 2, NOID },
		{ A_OTHER, 1, NOID },
	};
	alen = acl(a, nomask, 4);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", a, alen, 0), 0);
	ck_assert_uint_eq(mode_of(zi), S_IFREG | 0621);
	expect(sbi, zi, "system.posix_acl_access", a, alen);

	/* chmod: owner, mask and other follow the mode; named entries stay */
	alen = acl_named(a, 7);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", a, alen, 0), 0);
	ck_assert_uint_eq(mode_of(zi), S_IFREG | 0774);
	ck_assert_int_eq(zlfs_acl_chmod(sbi, zi, 0541), 0);
	const struct kent chm[] = {
		{ A_USER_OBJ, 5, NOID }, { A_USER, 6, 1000 }, { A_GROUP_OBJ, 4, NOID },
		{ A_GROUP, 5, 2000 }, { A_MASK, 4, NOID }, { A_OTHER, 1, NOID },
	};
	alen = acl(a, chm, 6);
	expect(sbi, zi, "system.posix_acl_access", a, alen);

	/* an ACL that says no more than the mode: the mode takes it, nothing is stored */
	const struct kent base[] = {
		{ A_USER_OBJ, 6, NOID }, { A_GROUP_OBJ, 0, NOID }, { A_OTHER, 0, NOID },
	};
	alen = acl(a, base, 3);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", a, alen, 0), 0);
	ck_assert_uint_eq(mode_of(zi), S_IFREG | 0600);
	absent(sbi, zi, "system.posix_acl_access");
	ck_assert(zlfs_xattr_none(zi_raw(zi), zlfs_feat(sbi)));
	ck_assert_uint_eq(xnid(zi), 0);
	/* chmod without an ACL changes nothing of the xattrs */
	ck_assert_int_eq(zlfs_acl_chmod(sbi, zi, 0755), 0);
	ck_assert(zlfs_xattr_none(zi_raw(zi), zlfs_feat(sbi)));

	/* malformed: EINVAL, nothing stored, the mode left alone */
	const struct kent noowner[] = { { A_GROUP_OBJ, 7, NOID }, { A_OTHER, 7, NOID } };
	alen = acl(a, noowner, 2);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", a, alen, 0), -EINVAL);
	alen = acl_named(a, 5);
	*(uint32_t *)a = zf_cpu_to_le32(1);   /* F2FS's version is not the kernel's form */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", a, alen, 0), -EINVAL);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_default", a, alen, 0), -EINVAL);
	alen = acl_named(a, 5);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", a, alen - 3, 0), -EINVAL);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", a, 2, 0), -EINVAL);
	ck_assert_uint_eq(mode_of(zi), S_IFREG | 0600);
	ck_assert(zlfs_xattr_none(zi_raw(zi), zlfs_feat(sbi)));

	/* a default ACL on a directory: kept as given, the mode untouched */
	struct zinode *d = mkfile(sbi, ZF_ROOT_INO, "d", S_IFDIR | 0755);
	uint16_t dmode = mode_of(d);
	alen = acl_named(a, 5);
	ck_assert_int_eq(zlfs_xattr_set(sbi, d, "system.posix_acl_default", a, alen, 0), 0);
	ck_assert_uint_eq(mode_of(d), dmode);
	expect(sbi, d, "system.posix_acl_default", a, alen);
	ck_assert_str_eq(names(sbi, d), "system.posix_acl_default");

	/*
	 * New inodes in it: the access ACL is the default masked by the create
	 * mode, the mode its base entries (the umask, 022 here, does not apply:
	 * the directory below is 0754, not 0755); a directory takes the
	 * default ACL too.
	 */
	struct zinode *f = mkfile(sbi, d->ino, "g", S_IFREG | 0640);
	const struct kent inh[] = {
		{ A_USER_OBJ, 6, NOID }, { A_USER, 6, 1000 }, { A_GROUP_OBJ, 4, NOID },
		{ A_GROUP, 5, 2000 }, { A_MASK, 4, NOID }, { A_OTHER, 0, NOID },
	};
	alen = acl(a, inh, 6);
	ck_assert_uint_eq(mode_of(f), S_IFREG | 0640);
	expect(sbi, f, "system.posix_acl_access", a, alen);
	absent(sbi, f, "system.posix_acl_default");
	struct zinode *sd = mkfile(sbi, d->ino, "sd", S_IFDIR | 0777);
	const struct kent inhd[] = {
		{ A_USER_OBJ, 7, NOID }, { A_USER, 6, 1000 }, { A_GROUP_OBJ, 4, NOID },
		{ A_GROUP, 5, 2000 }, { A_MASK, 5, NOID }, { A_OTHER, 4, NOID },
	};
	alen = acl(a, inhd, 6);
	ck_assert_uint_eq(mode_of(sd), S_IFDIR | 0754);
	expect(sbi, sd, "system.posix_acl_access", a, alen);
	alen = acl_named(a, 5);
	expect(sbi, sd, "system.posix_acl_default", a, alen);
	ck_assert_str_eq(names(sbi, sd), "system.posix_acl_access,system.posix_acl_default");
	/* outside it: the umask */
	struct zinode *h = mkfile(sbi, ZF_ROOT_INO, "h", S_IFREG | 0666);
	ck_assert_uint_eq(mode_of(h), S_IFREG | 0644);
	ck_assert(zlfs_xattr_none(zi_raw(h), zlfs_feat(sbi)));
	/* the default removed: new files take the umask again */
	ck_assert_int_eq(zlfs_xattr_remove(sbi, d, "system.posix_acl_default"), 0);
	struct zinode *k = mkfile(sbi, d->ino, "k", S_IFREG | 0666);
	ck_assert_uint_eq(mode_of(k), S_IFREG | 0644);
	ck_assert(zlfs_xattr_none(zi_raw(k), zlfs_feat(sbi)));
	ck_assert_int_eq(zlfs_xattr_set(sbi, d, "system.posix_acl_default", a, alen, 0), 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	/* all of it from the device */
	sbi = tu_fs_mount(img, 0);
	d = get(sbi, ZF_ROOT_INO, "d");
	expect(sbi, d, "system.posix_acl_default", a, alen);
	f = get(sbi, d->ino, "g");
	alen = acl(a, inh, 6);
	expect(sbi, f, "system.posix_acl_access", a, alen);
	ck_assert_uint_eq(mode_of(f), S_IFREG | 0640);
	sd = get(sbi, d->ino, "sd");
	ck_assert_uint_eq(mode_of(sd), S_IFDIR | 0754);
	alen = acl(a, inhd, 6);
	expect(sbi, sd, "system.posix_acl_access", a, alen);
	tu_fs_unmount(sbi);
	free(img);
}
END_TEST

/* Everything set, unmounted, remounted: the same answers, fsck.f2fs clean. */
START_TEST(test_persist)
{
	char *img = tu_fs_volume("xattr-persist.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *a = mkfile(sbi, ZF_ROOT_INO, "a", S_IFREG | 0644);
	struct zinode *b = mkfile(sbi, ZF_ROOT_INO, "b", S_IFREG | 0644);
	struct zinode *d = mkfile(sbi, ZF_ROOT_INO, "d", S_IFDIR | 0755);
	struct zinode *l = NULL;
	uint8_t acl_a[256];
	size_t alen = acl_named(acl_a, 6);

	ck_assert_int_eq(zlfs_create(sbi, &cred, ZF_ROOT_INO, "l", S_IFLNK | 0777, 0, "target", &l), 0);
	inline_area_on(sbi, b);
	ck_assert_int_eq(zlfs_xattr_set(sbi, a, "user.one", big_a, 1000, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, a, "trusted.two", big_a + 1, 2000, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, a, "security.selinux", "system_u:object_r:t:s0", 23, 0),
			 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, a, "system.posix_acl_access", acl_a, alen, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, b, "user.small", "s", 1, 0), 0);           /* inline */
	ck_assert_int_eq(zlfs_xattr_set(sbi, b, "user.across", big_b, 3000, 0), 0);     /* both */
	ck_assert_int_eq(zlfs_xattr_set(sbi, d, "user.dir", "dv", 2, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, d, "system.posix_acl_default", acl_a, alen, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, l, "trusted.overlay.opaque", "y", 1, 0), 0);
	uint32_t ia = a->ino, ib = b->ino, id = d->ino, il = l->ino;
	/* a checkpoint in between, then more changes on top of it */
	ck_assert_int_eq(zlfs_checkpoint(sbi, false), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, a, "user.one", big_b, 999, XATTR_REPLACE), 0);
	ck_assert_int_eq(zlfs_xattr_remove(sbi, a, "trusted.two"), 0);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);

	for (int round = 0; round < 2; round++) {
		sbi = tu_fs_mount(img, 0);
		ck_assert_int_eq(zlfs_iget(sbi, ia, &a), 0);
		ck_assert_int_eq(zlfs_iget(sbi, ib, &b), 0);
		ck_assert_int_eq(zlfs_iget(sbi, id, &d), 0);
		ck_assert_int_eq(zlfs_iget(sbi, il, &l), 0);
		expect(sbi, a, "user.one", big_b, 999);
		absent(sbi, a, "trusted.two");
		expect(sbi, a, "security.selinux", "system_u:object_r:t:s0", 23);
		expect(sbi, a, "system.posix_acl_access", acl_a, alen);
		ck_assert_uint_eq(mode_of(a), S_IFREG | 0764);
		ck_assert_str_eq(names(sbi, a), "security.selinux,system.posix_acl_access,user.one");
		ck_assert(b->node->blk.i.i_inline & ZF_INLINE_XATTR);
		expect(sbi, b, "user.small", "s", 1);
		expect(sbi, b, "user.across", big_b, 3000);
		expect(sbi, d, "user.dir", "dv", 2);
		expect(sbi, d, "system.posix_acl_default", acl_a, alen);
		expect(sbi, l, "trusted.overlay.opaque", "y", 1);
		ck_assert_str_eq(names(sbi, l), "trusted.overlay.opaque");
		/* the attribute cache's "no xattrs" mark agrees */
		struct zattr at;
		ck_assert_int_eq(zlfs_inode_attr(sbi, ia, &at), 0);
		ck_assert(!at.no_xattr);
		tu_fs_unmount(sbi);
	}
	tu_fsck_clean(img);
	free(img);
}
END_TEST

/*
 * A full volume: an attribute that needs a new xattr node cannot have it
 * (ENOSPC) and nothing changes; one that needs no new block still goes in.
 */
START_TEST(test_enospc)
{
	char *img = tu_fs_volume("xattr-full.img");
	tu_noinline = true;      /* every xattr takes a node */
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *x[64], *big, *in;
	size_t chunk = 1 << 20;
	char *buf = malloc(chunk);
	uint64_t off = 0;
	int ret, n;

	for (int i = 0; i < 64; i++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "x%d", i);
		x[i] = mkfile(sbi, ZF_ROOT_INO, nm, S_IFREG | 0644);
	}
	in = mkfile(sbi, ZF_ROOT_INO, "in", S_IFREG | 0644);
	inline_area_on(sbi, in);
	big = mkfile(sbi, ZF_ROOT_INO, "big", S_IFREG | 0644);
	memset(buf, 'z', chunk);
	/* fill: big writes, then blocks, until nothing more goes in */
	while (!(ret = zlfs_balance(sbi, chunk / ZF_BLKSIZE + 3)) &&
	       !(ret = zlfs_file_write(sbi, big, buf, chunk, off)))
		off += chunk;
	ck_assert_int_eq(ret, -ENOSPC);
	while (!(ret = zlfs_file_write(sbi, big, buf, ZF_BLKSIZE, off)))
		off += ZF_BLKSIZE;
	ck_assert_int_eq(ret, -ENOSPC);
	/* four data blocks given back: room for four xattr nodes and no more */
	ck_assert_int_eq(zlfs_file_truncate(sbi, big, off - 4 * ZF_BLKSIZE), 0);
	uint64_t room = zlfs_avail_blocks(sbi);
	ck_assert_uint_ge(room, 4);
	ck_assert_uint_lt(room, 64);
	/* each new xattr node takes a block, until one cannot */
	for (n = 0; n < 64; n++) {
		uint32_t cursor = sbi->next_free_nid;
		ret = zlfs_xattr_set(sbi, x[n], "user.n", "v", 1, 0);
		if (ret) {
			ck_assert_int_eq(ret, -ENOSPC);
			/* nothing changed: no entry, no node, the nid it took given back */
			ck_assert_uint_eq(xnid(x[n]), 0);
			ck_assert_uint_eq(iblocks(x[n]), 1);
			ck_assert(zlfs_xattr_none(zi_raw(x[n]), zlfs_feat(sbi)));
			absent(sbi, x[n], "user.n");
			ck_assert_uint_eq(zlfs_nat(sbi, cursor)->blkaddr, ZF_NULL_ADDR);
			ck_assert_uint_eq(zlfs_nat(sbi, cursor)->ino, 0);
			break;
		}
	}
	ck_assert_uint_eq((uint64_t)n, room);
	ck_assert_uint_eq(zlfs_avail_blocks(sbi), 0);
	/* one that replaces in a node it has: no new block, so it goes in */
	ck_assert_int_eq(zlfs_xattr_set(sbi, x[0], "user.n", "w", 1, 0), 0);
	ck_assert_int_eq(zlfs_xattr_set(sbi, x[0], "user.m", "m", 1, 0), 0);
	/* one that fits the inline area: no node needed */
	ck_assert_int_eq(zlfs_xattr_set(sbi, in, "user.s", "s", 1, 0), 0);
	expect(sbi, in, "user.s", "s", 1);
	ck_assert_uint_eq(xnid(in), 0);
	/*
	 * One that spills from the inline area into a node it cannot have:
	 * ENOSPC, and nothing of it stays inline (regression: store() copied
	 * the inline part before the node allocation failed).
	 */
	ck_assert_int_eq(zlfs_xattr_set(sbi, in, "user.spill", big_b, 300, 0), -ENOSPC);
	absent(sbi, in, "user.spill");
	ck_assert_str_eq(names(sbi, in), "user.s");
	expect(sbi, in, "user.s", "s", 1);
	ck_assert_uint_eq(xnid(in), 0);
	/* space back (x[0]'s node goes): the set that failed now works */
	ck_assert_int_eq(zlfs_xattr_remove(sbi, x[0], "user.n"), 0);
	ck_assert_int_eq(zlfs_xattr_remove(sbi, x[0], "user.m"), 0);
	ck_assert_uint_eq(zlfs_avail_blocks(sbi), 1);
	ck_assert_int_eq(zlfs_xattr_set(sbi, x[n], "user.n", "v", 1, 0), 0);
	expect(sbi, x[n], "user.n", "v", 1);
	free(buf);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	tu_noinline = false;
	free(img);
}
END_TEST

/*
 * A set of system.posix_acl_access that fails changes no mode
 * (regression: the mode was written before the size and flag checks).
 */
START_TEST(test_acl_fail)
{
	char *img = tu_fs_volume("xattr-aclfail.img");
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zinode *zi = mkfile(sbi, ZF_ROOT_INO, "f", S_IFREG | 0600);
	enum { NAMED = 600 };
	struct kent *e = calloc(NAMED + 4, sizeof(*e));
	uint8_t *a = malloc(4 + 8 * (NAMED + 4));
	size_t n = 0, alen;

	ck_assert(e && a);
	e[n++] = (struct kent){ A_USER_OBJ, 7, NOID };
	for (uint32_t i = 0; i < NAMED; i++)
		e[n++] = (struct kent){ A_USER, 7, 1000 + i };
	e[n++] = (struct kent){ A_GROUP_OBJ, 7, NOID };
	e[n++] = (struct kent){ A_MASK, 7, NOID };
	e[n++] = (struct kent){ A_OTHER, 7, NOID };
	alen = acl(a, e, n);
	/* too big for the xattr space: E2BIG, the mode as it was */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", a, alen, 0), -E2BIG);
	ck_assert_uint_eq(mode_of(zi), S_IFREG | 0600);
	absent(sbi, zi, "system.posix_acl_access");
	/* XATTR_REPLACE with no ACL there: ENODATA, the mode as it was */
	alen = acl_named(a, 7);
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", a, alen, XATTR_REPLACE),
			 -ENODATA);
	ck_assert_uint_eq(mode_of(zi), S_IFREG | 0600);
	/* and one that goes in still moves the mode with it */
	ck_assert_int_eq(zlfs_xattr_set(sbi, zi, "system.posix_acl_access", a, alen, 0), 0);
	ck_assert_uint_eq(mode_of(zi), S_IFREG | 0774);
	free(a);
	free(e);
	tu_fs_unmount(sbi);
	tu_fsck_clean(img);
	free(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xattr");
	TCase *tc = tcase_create("xattr");

	tcase_set_timeout(tc, 600);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_create_replace);
	tcase_add_test(tc, test_node_space);
	tcase_add_test(tc, test_inline_area);
	tcase_add_test(tc, test_acl);
	tcase_add_test(tc, test_acl_fail);
	tcase_add_test(tc, test_persist);
	tcase_add_test(tc, test_enospc);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
