/*
 * fuse_times.c - whose mtime and ctime a regular file keeps under the
 * kernel's writeback cache: the FUSE layer's time policy.
 *
 * With the writeback cache the kernel owns a regular file's mtime and
 * ctime: it stamps them at write(), mmap write, truncate, O_TRUNC and
 * fallocate, shows its own values whatever getattr answers, and sends
 * them in a SETATTR at writeback, fsync, close and after namespace and
 * xattr changes.  The WRITE that carries the data may reach us after that
 * SETATTR, so the file layer's own stamps (zlfs_inode_touch) would store a
 * time nobody saw.  With the cache on, the data operations keep the stored
 * mtime/ctime of regular files (ztimes_begin .. ztimes_end) and SETATTR
 * stores what the kernel sends.  Without the cache (-o no_writeback_cache)
 * the kernel asks us, and zlfs stamps them: ztimes_* then do nothing.
 *
 * Invariant: a tguard exists for an inode exactly while a data operation
 * on it is between ztimes_begin and ztimes_end.  Everything here runs
 * under sbi->lock, exclusive (the tguard list included).
 */
#include <stdlib.h>
#include <sys/stat.h>

#include "fuse_int.h"
#include "inode.h"
#include "file.h"

bool kernel_times(struct zinode *zi)
{
	return zl_writeback() && S_ISREG(zf_le16_to_cpu(zi_raw(zi)->i_mode));
}

static void get_times(struct zinode *zi, struct cmtimes *t)
{
	struct zf_inode *ri = zi_raw(zi);
	t->m = ri->i_mtime;
	t->mn = ri->i_mtime_nsec;
	t->c = ri->i_ctime;
	t->cn = ri->i_ctime_nsec;
}

/*
 * Data operations on files whose times the kernel owns, in flight: file.c
 * drops sbi->lock while the I/O runs, and a SETATTR with the kernel's
 * times may be stored meanwhile, which the operation's end must keep
 * rather than what it saw at its start.  A few at a time.
 */
struct tguard {
	uint32_t ino;
	uint32_t users;
	bool set;                /* a SETATTR stored times since the first user began */
	struct cmtimes t;        /* and these were the times it left */
	struct tguard *next;
};
static struct tguard *tguards;

static struct tguard *tguard_find(uint32_t ino)
{
	struct tguard *g = tguards;
	while (g && g->ino != ino)
		g = g->next;
	return g;
}

void ztimes_begin(struct zinode *zi, struct ztimes *zt)
{
	zt->keep = kernel_times(zi);
	zt->g = NULL;
	if (!zt->keep)
		return;
	get_times(zi, &zt->t);
	zi->keep_times++;      /* file.c stamps nothing meanwhile (zlfs_inode_touch) */
	if (!(zt->g = tguard_find(zi->ino)) && (zt->g = calloc(1, sizeof(*zt->g)))) {
		zt->g->ino = zi->ino;
		zt->g->next = tguards;
		tguards = zt->g;
	}
	if (zt->g)
		zt->g->users++;
}

/* Put back the times file.c stamped over: the start's, or a SETATTR's since. */
void ztimes_end(struct zlfs_sb *sbi, struct zinode *zi, struct ztimes *zt)
{
	if (!zt->keep)
		return;
	zi->keep_times--;
	struct tguard *g = zt->g;
	const struct cmtimes *t = g && g->set ? &g->t : &zt->t;
	struct zf_inode *ri = zi_raw(zi);   /* again: the inode block may have moved */
	if (ri->i_mtime != t->m || ri->i_mtime_nsec != t->mn || ri->i_ctime != t->c ||
	    ri->i_ctime_nsec != t->cn) {
		ri->i_mtime = t->m;
		ri->i_mtime_nsec = t->mn;
		ri->i_ctime = t->c;
		ri->i_ctime_nsec = t->cn;
		zlfs_inode_dirty(sbi, zi);
	}
	if (g && !--g->users) {
		struct tguard **pp = &tguards;
		while (*pp != g)
			pp = &(*pp)->next;
		*pp = g->next;
		free(g);
	}
}

void ztimes_setattr(struct zinode *zi)
{
	struct tguard *g = tguard_find(zi->ino);
	if (g) {
		g->set = true;
		get_times(zi, &g->t);
	}
}

/*
 * A truncate's own stamps: the kernel stamps truncate and O_TRUNC itself
 * and sends its times along (in the same SETATTR, or later).
 */
int ztimes_truncate(struct zlfs_sb *sbi, struct zinode *zi, uint64_t size)
{
	struct ztimes t;
	ztimes_begin(zi, &t);
	int ret = zlfs_file_truncate(sbi, zi, size);
	ztimes_end(sbi, zi, &t);
	return ret;
}
