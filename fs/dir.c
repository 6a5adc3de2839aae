/*
 * dir.c - F2FS directories: multi-level hash tables of dentry blocks, and
 * inline dentries.
 *
 * A name hashes (zf_dentry_hash) to bucket hash % buckets(level) at every
 * level; level L's buckets have zf_bucket_blocks(L) blocks each and start
 * at zf_dir_block_index().  Lookups try levels 0 .. i_current_depth-1; an
 * insert takes the first level with room in the name's bucket and opens a
 * new level when none has.  '.' and '..' sit in slots 0 and 1 of block 0.
 * Each entry takes ceil(len / 8) slots; the name continues in the
 * following slots' name bytes.
 *
 * A change rewrites its dentry block in the block cache (bcache.c), which
 * writes it out of place (HOT_DATA log) at the next checkpoint.
 *
 * A directory made with INLINE_DENTRY (inode.c: the default) keeps its
 * entries in the inode's inline area, the dentry block's layout shrunk
 * (zf_inline_dentry_geom), its i_size that area's size, as the kernel's.
 * Entries are added, changed and removed there while they fit; the first
 * name that finds no room converts it (the kernel's
 * f2fs_add_inline_entry): with dir_level 0 the slots move to block 0 as
 * they are (a readdir cookie stays good), else every name is hashed in
 * anew; i_size becomes a block.  It never goes back inline.
 * readdir cookies are (block index << 16 | slot) + 1.
 * All calls need sbi->lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zlfs.h"
#include "data.h"
#include "bcache.h"
#include "node.h"
#include "file.h"
#include "dir.h"

/* A dentry area: a whole block or an inode's inline area. */
struct dview {
	unsigned int nr;
	uint8_t *bitmap;
	struct zf_dir_entry *de;
	uint8_t (*name)[ZF_SLOT_LEN];
};

static void view_block(struct dview *v, struct zf_dentry_block *b)
{
	v->nr = ZF_NR_DENTRY_IN_BLOCK;
	v->bitmap = b->bitmap;
	v->de = b->dentry;
	v->name = b->filename;
}

static bool has_inline_dentry(const struct zf_inode *ri)
{
	return ri->i_inline & ZF_INLINE_DENTRY;
}

static void view_inline(const struct zlfs_sb *sbi, struct dview *v, struct zf_inode *ri)
{
	struct zf_ishape sh;

	zf_inode_shape(ri, zlfs_feat(sbi), &sh);
	unsigned int bytes = sh.inline_max;
	unsigned int nr, bm, rsv;
	uint8_t *area = zf_inline_data(ri);

	zf_inline_dentry_geom(bytes, &nr, &bm, &rsv);
	v->nr = nr;
	v->bitmap = area;
	v->de = (struct zf_dir_entry *)(area + bm + rsv);
	v->name = (uint8_t (*)[ZF_SLOT_LEN])(area + bm + rsv + nr * ZF_DENTRY_SIZE);
}

static int view_find(const struct dview *v, const char *name, size_t len, uint32_t hash)
{
	for (unsigned int i = 0; i < v->nr; ) {
		if (!zf_le_bit_test(v->bitmap, i)) {
			i++;
			continue;
		}
		const struct zf_dir_entry *d = &v->de[i];
		unsigned int nl = zf_le16_to_cpu(d->name_len);
		if (zf_le32_to_cpu(d->hash_code) == hash && nl == len && i + zf_dentry_slots(nl) <= v->nr &&
		    !memcmp(v->name[i], name, len))
			return (int)i;
		i += nl ? zf_dentry_slots(nl) : 1;
	}
	return -ENOENT;
}

static int view_room(const struct dview *v, unsigned int slots)
{
	unsigned int run = 0;

	for (unsigned int i = 0; i < v->nr; i++) {
		if (zf_le_bit_test(v->bitmap, i)) {
			run = 0;
			continue;
		}
		if (++run == slots)
			return (int)(i + 1 - slots);
	}
	return -ENOSPC;
}

static void view_put(struct dview *v, unsigned int slot, const char *name, size_t len,
		     uint32_t hash, uint32_t ino, uint8_t ftype)
{
	unsigned int slots = zf_dentry_slots((unsigned int)len);

	v->de[slot].hash_code = zf_cpu_to_le32(hash);
	v->de[slot].ino = zf_cpu_to_le32(ino);
	v->de[slot].name_len = zf_cpu_to_le16((uint16_t)len);
	v->de[slot].file_type = ftype;
	memset(v->name[slot], 0, (size_t)slots * ZF_SLOT_LEN);
	memcpy(v->name[slot], name, len);
	for (unsigned int k = 0; k < slots; k++)
		zf_le_bit_set(v->bitmap, slot + k);
}

static void view_del(struct dview *v, unsigned int slot)
{
	unsigned int slots = zf_dentry_slots(zf_le16_to_cpu(v->de[slot].name_len));

	for (unsigned int k = 0; k < slots && slot + k < v->nr; k++)
		zf_le_bit_clear(v->bitmap, slot + k);
}

/* ---- where a name lives ------------------------------------------------------------- */

struct dpos {
	uint64_t block;      /* file block of the directory; UINT64_MAX = inline */
	int slot;
};

static uint32_t name_hash(const char *name, size_t len)
{
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	return zf_dentry_hash((const uint8_t *)name, len);
}

/*
 * The blocks a listing walks: those below i_size that the hash table can
 * hold at the directory's depth.  Levels 0 .. depth-1 end where level
 * `depth` would start; a block past that is in no name's bucket (lookups
 * never read it, and fsck.f2fs calls an entry there misplaced), so a
 * damaged i_size (1 TiB on a directory of two blocks) bounds nothing.
 * A damaged depth is bounded too (ZF_MAX_DIR_HASH_DEPTH), and the walk
 * skips missing node subtrees, so a listing stays quick either way.
 */
static uint64_t dir_blocks(const struct zf_inode *ri)
{
	uint64_t n = (zf_le64_to_cpu(ri->i_size) + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
	unsigned int depth = zf_le32_to_cpu(ri->i_current_depth);

	if (depth > ZF_MAX_DIR_HASH_DEPTH)
		depth = ZF_MAX_DIR_HASH_DEPTH;
	if (!depth)
		depth = 1;       /* as zlfs_dir_add takes it */
	uint64_t cap = zf_dir_block_index(depth, ri->i_dir_level, 0);
	return n < cap ? n : cap;
}

/* Find name; on success *pos says where and blk holds its block. */
static int dir_find(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		    struct zf_dentry_block *blk, struct dpos *pos)
{
	struct zf_inode *ri = zi_raw(dir);
	uint32_t hash = name_hash(name, len);
	struct dview v;
	int ret;

	if (has_inline_dentry(ri)) {
		view_inline(sbi, &v, ri);
		int s = view_find(&v, name, len, hash);
		if (s < 0)
			return s;
		pos->block = UINT64_MAX;
		pos->slot = s;
		return 0;
	}
	unsigned int depth = zf_le32_to_cpu(ri->i_current_depth), dl = ri->i_dir_level;
	if (depth > ZF_MAX_DIR_HASH_DEPTH)
		return -ZLFS_EFSCORRUPTED;
	uint64_t nblocks = (zf_le64_to_cpu(ri->i_size) + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
	for (unsigned int level = 0; level < depth; level++) {
		unsigned int nb = zf_dir_buckets(level, dl);
		uint64_t b0 = zf_dir_block_index(level, dl, hash % nb);
		for (unsigned int k = 0; k < zf_bucket_blocks(level); k++) {
			if (b0 + k >= nblocks)
				break;
			if ((ret = zlfs_read_file_block(sbi, dir, b0 + k, blk)))
				return ret;
			view_block(&v, blk);
			int s = view_find(&v, name, len, hash);
			if (s >= 0) {
				pos->block = b0 + k;
				pos->slot = s;
				return 0;
			}
		}
	}
	return -ENOENT;
}

int zlfs_dir_lookup(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		    uint32_t *ino, uint8_t *ftype)
{
	struct zf_dentry_block *blk = malloc(ZF_BLKSIZE);
	struct dpos pos;
	int ret;

	if (!blk)
		return -ENOMEM;
	ret = dir_find(sbi, dir, name, len, blk, &pos);
	if (!ret) {
		struct dview v;
		if (pos.block == UINT64_MAX)
			view_inline(sbi, &v, zi_raw(dir));
		else
			view_block(&v, blk);
		*ino = zf_le32_to_cpu(v.de[pos.slot].ino);
		*ftype = v.de[pos.slot].file_type;
	}
	free(blk);
	return ret;
}

static void grow_size(struct zinode *dir, uint64_t block)
{
	struct zf_inode *ri = zi_raw(dir);
	if ((block + 1) * ZF_BLKSIZE > zf_le64_to_cpu(ri->i_size))
		ri->i_size = zf_cpu_to_le64((block + 1) * ZF_BLKSIZE);
}

static int add_block(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		     uint32_t hash, uint32_t ino, uint8_t ftype);

/* The inline area's entries, hashed into blocks one by one (dir_level > 0). */
static int rehash_inline(struct zlfs_sb *sbi, struct zinode *dir, struct dview *iv)
{
	for (unsigned int i = 0; i < iv->nr; ) {
		unsigned int nl = zf_le16_to_cpu(iv->de[i].name_len);
		if (!zf_le_bit_test(iv->bitmap, i) || !nl) {
			i++;
			continue;
		}
		if (nl > ZF_NAME_LEN || i + zf_dentry_slots(nl) > iv->nr)
			return zlfs_corrupt(sbi, "directory %u: inline entry %u: name length %u",
					    dir->ino, i, nl);
		int ret = add_block(sbi, dir, (const char *)iv->name[i], nl,
				    zf_le32_to_cpu(iv->de[i].hash_code), zf_le32_to_cpu(iv->de[i].ino),
				    iv->de[i].file_type);
		if (ret)
			return ret;
		i += zf_dentry_slots(nl);
	}
	return 0;
}

/*
 * Inline dentries -> dentry blocks.  With dir_level 0 the level-0 bucket
 * is block 0 alone and holds any hash, so the slots move as they are;
 * else each name goes where its hash says.  The inline area is copied
 * first and put back if the blocks could not be had (ENOSPC), so a
 * failed conversion changes nothing.
 */
static int convert_inline_dir(struct zlfs_sb *sbi, struct zinode *dir)
{
	struct zf_inode *ri = zi_raw(dir);
	struct zf_ishape sh;
	zf_inode_shape(ri, zlfs_feat(sbi), &sh);
	struct zf_dentry_block *blk = calloc(1, ZF_BLKSIZE);
	uint8_t *old = malloc(sh.inline_max);
	uint8_t flags = ri->i_inline;
	uint64_t size = zf_le64_to_cpu(ri->i_size);
	uint32_t depth = zf_le32_to_cpu(ri->i_current_depth);
	struct dview iv, bv;
	int ret = -ENOMEM;

	if (!blk || !old || (ret = zlfs_inline_reserved_ok(sbi, dir))) {
		free(blk);
		free(old);
		return ret;
	}
	memcpy(old, zf_inline_data(ri), sh.inline_max);
	memset(zf_inline_data(ri), 0, sh.inline_max);
	ri->i_inline &= (uint8_t)~(ZF_INLINE_DENTRY | ZF_INLINE_DOTS);
	ri->i_current_depth = zf_cpu_to_le32(1);
	ri->i_size = 0;
	zlfs_node_dirty(sbi, dir->node);
	/* the view of the copy: the same geometry as the area it came from */
	struct zf_inode shadow;
	memcpy(&shadow, ri, sizeof(shadow));
	shadow.i_inline = flags;
	memcpy(zf_inline_data(&shadow), old, sh.inline_max);
	view_inline(sbi, &iv, &shadow);
	if (!ri->i_dir_level) {
		view_block(&bv, blk);
		for (unsigned int i = 0; i < iv.nr; i++) {
			if (!zf_le_bit_test(iv.bitmap, i))
				continue;
			bv.de[i] = iv.de[i];
			memcpy(bv.name[i], iv.name[i], ZF_SLOT_LEN);
			zf_le_bit_set(bv.bitmap, i);
		}
		if (!(ret = zlfs_write_file_block(sbi, dir, 0, blk, ZF_LOG_HOT_DATA)))
			grow_size(dir, 0);
	} else {
		ret = rehash_inline(sbi, dir, &iv);
	}
	if (ret) {
		/* back as it was: blocks given so far go, the area returns */
		zlfs_bcache_drop_ino(sbi, dir->ino);   /* cached blocks first: NEW_ADDR slots */
		int tret = zlfs_truncate_blocks(sbi, dir, 0);
		ri = zi_raw(dir);
		if (!tret) {
			memcpy(zf_inline_data(ri), old, sh.inline_max);
			ri->i_inline = flags;
			ri->i_size = zf_cpu_to_le64(size);
			ri->i_current_depth = zf_cpu_to_le32(depth);
			zlfs_node_dirty(sbi, dir->node);
		}
	}
	free(blk);
	free(old);
	return ret;
}

int zlfs_dir_add(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		 uint32_t ino, uint8_t ftype)
{
	struct zf_inode *ri = zi_raw(dir);
	uint32_t hash = name_hash(name, len);
	unsigned int slots = zf_dentry_slots((unsigned int)len);
	struct dview v;
	int ret;

	if (len > ZF_NAME_LEN)
		return -ENAMETOOLONG;
	if (has_inline_dentry(ri)) {
		view_inline(sbi, &v, ri);
		int s = view_room(&v, slots);
		if (s >= 0) {
			view_put(&v, (unsigned int)s, name, len, hash, ino, ftype);
			zlfs_node_dirty(sbi, dir->node);
			return 0;
		}
		if ((ret = convert_inline_dir(sbi, dir)))
			return ret;
	}
	return add_block(sbi, dir, name, len, hash, ino, ftype);
}

/* Add to the hash table of dentry blocks: the first level with room in the name's bucket. */
static int add_block(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		     uint32_t hash, uint32_t ino, uint8_t ftype)
{
	struct zf_inode *ri = zi_raw(dir);
	struct zf_dentry_block *blk;
	unsigned int slots = zf_dentry_slots((unsigned int)len);
	struct dview v;
	int ret;

	blk = malloc(ZF_BLKSIZE);
	if (!blk)
		return -ENOMEM;
	ri = zi_raw(dir);
	unsigned int depth = zf_le32_to_cpu(ri->i_current_depth), dl = ri->i_dir_level;
	uint64_t nblocks = (zf_le64_to_cpu(ri->i_size) + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
	if (!depth)
		depth = 1;
	for (unsigned int level = 0; level < ZF_MAX_DIR_HASH_DEPTH; level++) {
		unsigned int nb = zf_dir_buckets(level, dl);
		uint64_t b0 = zf_dir_block_index(level, dl, hash % nb);
		for (unsigned int k = 0; k < zf_bucket_blocks(level); k++) {
			if (b0 + k < nblocks) {
				if ((ret = zlfs_read_file_block(sbi, dir, b0 + k, blk)))
					goto out;
			} else {
				memset(blk, 0, ZF_BLKSIZE);
			}
			view_block(&v, blk);
			int s = view_room(&v, slots);
			if (s < 0)
				continue;
			view_put(&v, (unsigned int)s, name, len, hash, ino, ftype);
			if ((ret = zlfs_write_file_block(sbi, dir, b0 + k, blk, ZF_LOG_HOT_DATA)))
				goto out;
			ri = zi_raw(dir);
			grow_size(dir, b0 + k);
			if (level + 1 > zf_le32_to_cpu(ri->i_current_depth))
				ri->i_current_depth = zf_cpu_to_le32(level + 1);
			zlfs_node_dirty(sbi, dir->node);
			goto out;
		}
	}
	ret = -ENOSPC;
out:
	free(blk);
	return ret;
}

int zlfs_dir_remove(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len)
{
	struct zf_dentry_block *blk;
	struct dpos pos;
	struct dview v;
	int ret;

	blk = malloc(ZF_BLKSIZE);
	if (!blk)
		return -ENOMEM;
	if ((ret = dir_find(sbi, dir, name, len, blk, &pos)))
		goto out;
	if (pos.block == UINT64_MAX) {   /* inline: the inode block is the change */
		view_inline(sbi, &v, zi_raw(dir));
		view_del(&v, (unsigned int)pos.slot);
		zlfs_node_dirty(sbi, dir->node);
		goto out;
	}
	view_block(&v, blk);
	view_del(&v, (unsigned int)pos.slot);
	/* an emptied block stays (a hole would do too; this keeps buckets simple) */
	ret = zlfs_write_file_block(sbi, dir, pos.block, blk, ZF_LOG_HOT_DATA);
	zlfs_node_dirty(sbi, dir->node);
out:
	free(blk);
	return ret;
}

int zlfs_dir_drop_slot(struct zlfs_sb *sbi, struct zinode *dir, uint64_t block, unsigned int slot)
{
	struct zf_inode *ri = zi_raw(dir);
	struct zf_dentry_block *blk = NULL;
	struct dview v;
	int ret = 0;

	if (block == UINT64_MAX) {
		if (!has_inline_dentry(ri))
			return -EINVAL;
		view_inline(sbi, &v, ri);
	} else {
		if (has_inline_dentry(ri) || !(blk = malloc(ZF_BLKSIZE)))
			return blk ? -EINVAL : -ENOMEM;
		if ((ret = zlfs_read_file_block(sbi, dir, block, blk)))
			goto out;
		view_block(&v, blk);
	}
	if (slot >= v.nr) {
		ret = -EINVAL;
		goto out;
	}
	/* the entry's own slot count, unless its length is what is wrong */
	unsigned int nl = zf_le16_to_cpu(v.de[slot].name_len), n = 1;
	if (nl && nl <= ZF_NAME_LEN && slot + zf_dentry_slots(nl) <= v.nr)
		n = zf_dentry_slots(nl);
	for (unsigned int k = 0; k < n; k++)
		zf_le_bit_clear(v.bitmap, slot + k);
	if (blk)
		ret = zlfs_write_file_block(sbi, dir, block, blk, ZF_LOG_HOT_DATA);
	zlfs_node_dirty(sbi, dir->node);
out:
	free(blk);
	return ret;
}

int zlfs_dir_set(struct zlfs_sb *sbi, struct zinode *dir, const char *name, size_t len,
		 uint32_t ino, uint8_t ftype)
{
	struct zf_dentry_block *blk;
	struct dpos pos;
	struct dview v;
	int ret;

	blk = malloc(ZF_BLKSIZE);
	if (!blk)
		return -ENOMEM;
	if (!(ret = dir_find(sbi, dir, name, len, blk, &pos))) {
		bool inl = pos.block == UINT64_MAX;
		if (inl)
			view_inline(sbi, &v, zi_raw(dir));
		else
			view_block(&v, blk);
		v.de[pos.slot].ino = zf_cpu_to_le32(ino);
		v.de[pos.slot].file_type = ftype;
		if (inl)
			zlfs_node_dirty(sbi, dir->node);
		else
			ret = zlfs_write_file_block(sbi, dir, pos.block, blk, ZF_LOG_HOT_DATA);
	}
	free(blk);
	return ret;
}

int zlfs_dir_init(struct zlfs_sb *sbi, struct zinode *dir, uint32_t parent)
{
	struct zf_inode *ri = zi_raw(dir);
	struct zf_dentry_block *blk;
	struct dview v;
	int ret;

	if (has_inline_dentry(ri)) {   /* the kernel's f2fs_make_empty_inline_dir */
		struct zf_ishape sh;
		zf_inode_shape(ri, zlfs_feat(sbi), &sh);
		view_inline(sbi, &v, ri);
		view_put(&v, 0, ".", 1, 0, dir->ino, ZF_FT_DIR);
		view_put(&v, 1, "..", 2, 0, parent, ZF_FT_DIR);
		ri->i_size = zf_cpu_to_le64(sh.inline_max);
		ri->i_current_depth = zf_cpu_to_le32(1);
		zlfs_node_dirty(sbi, dir->node);
		return 0;
	}
	if (!(blk = calloc(1, ZF_BLKSIZE)))
		return -ENOMEM;
	view_block(&v, blk);
	view_put(&v, 0, ".", 1, 0, dir->ino, ZF_FT_DIR);
	view_put(&v, 1, "..", 2, 0, parent, ZF_FT_DIR);
	ret = zlfs_write_file_block(sbi, dir, 0, blk, ZF_LOG_HOT_DATA);
	if (!ret) {
		ri = zi_raw(dir);
		ri->i_size = zf_cpu_to_le64(ZF_BLKSIZE);
		ri->i_current_depth = zf_cpu_to_le32(1);
		zlfs_node_dirty(sbi, dir->node);
	}
	free(blk);
	return ret;
}

int zlfs_dir_iterate(struct zlfs_sb *sbi, struct zinode *dir, uint64_t pos,
		     int (*emit)(void *ctx, const char *name, size_t len, uint32_t ino,
				 uint8_t ftype, uint64_t next_pos), void *ctx)
{
	struct zf_inode *ri = zi_raw(dir);
	struct zf_dentry_block *blk = malloc(ZF_BLKSIZE);
	uint64_t start_block = pos ? (pos - 1) >> 16 : 0;
	unsigned int start_slot = pos ? (unsigned int)((pos - 1) & 0xffff) : 0;
	struct dview v;
	int ret = 0;
	char name[ZF_NAME_LEN + 1];
	/*
	 * pos comes from the caller's telldir/lseek and may point into the
	 * middle of a long name: until the first whole entry, the slots of
	 * that name's tail (bit set, name length 0) are skipped, as the
	 * kernel's F2FS skips them (f2fs_fill_dentries), rather than taken
	 * for damage (a seekdir to any offset made the filesystem read-only:
	 * xfstests generic/676).
	 */
	bool lead = pos != 0;

	if (!blk)
		return -ENOMEM;
	bool inl = has_inline_dentry(ri);
	uint64_t nblocks = inl ? 1 : dir_blocks(ri);
	for (uint64_t b = start_block; b < nblocks; b++) {
		if (inl) {
			view_inline(sbi, &v, ri);
		} else {
			/* holes: on past a missing node's subtree at once */
			uint64_t nx;
			if ((ret = zlfs_file_next_mapped(sbi, dir, b, &nx)))
				break;
			if (nx > b) {
				b = nx - 1;
				continue;
			}
			if ((ret = zlfs_read_file_block(sbi, dir, b, blk)))
				break;
			view_block(&v, blk);
		}
		for (unsigned int i = b == start_block ? start_slot : 0; i < v.nr; ) {
			if (!zf_le_bit_test(v.bitmap, i)) {
				i++;
				continue;
			}
			unsigned int nl = zf_le16_to_cpu(v.de[i].name_len);
			unsigned int slots = nl ? zf_dentry_slots(nl) : 1;
			uint32_t eino = zf_le32_to_cpu(v.de[i].ino);
			if (!nl && lead && b == start_block) {
				i++;
				continue;
			}
			lead = false;
			if (!nl || nl > ZF_NAME_LEN || i + slots > v.nr || eino < ZF_ROOT_INO ||
			    eino >= sbi->max_nid) {
				ret = zlfs_corrupt(sbi, "directory %u: entry %u of block %llu: name length "
						   "%u, inode %u", dir->ino, i, inl ? 0ull :
						   (unsigned long long)b, nl, eino);
				goto out;
			}
			memcpy(name, v.name[i], nl);
			name[nl] = '\0';
			uint64_t next = ((b << 16) | (i + slots)) + 1;
			if (emit(ctx, name, nl, zf_le32_to_cpu(v.de[i].ino), v.de[i].file_type, next))
				goto out;
			i += slots;
		}
	}
out:
	free(blk);
	return ret;
}

static int not_empty_cb(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t ft,
			uint64_t next)
{
	(void)ino;
	(void)ft;
	(void)next;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	*(bool *)ctx = false;
	return 1;
}

bool zlfs_dir_is_empty(struct zlfs_sb *sbi, struct zinode *dir)
{
	bool empty = true;

	if (zlfs_dir_iterate(sbi, dir, 0, not_empty_cb, &empty))
		return false;
	return empty;
}
