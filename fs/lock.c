/*
 * lock.c - the filesystem lock: exclusive for operations that change
 * anything, shared for lookups, getattr, readdir, reads and xattr reads,
 * which then run at once on FUSE's threads.
 *
 * Built on sbi->lock (a mutex) so the existing waits keep their meaning:
 *   exclusive  hold sbi->lock, and no reader registered (sbi->readers == 0).
 *              Every (re)acquisition waits for the readers to drain.  That
 *              wait releases the mutex (a condition wait), so readers may
 *              still register meanwhile: a steady stream of readers can
 *              delay a writer (nothing here gives writers priority yet).
 *              While an exclusive holder waits
 *              with the mutex dropped (I/O, GC, the checkpoint's wait for
 *              I/O) readers may run, as any operation could before.
 *   shared     registered in sbi->readers; the mutex is not held.  Readers
 *              change only the caches (node cache, zinode hash and lookup
 *              counts, block cache), under sbi->cache_lock, and never
 *              evict a node or unpin an inode (only exclusive holders do),
 *              so a node or zinode a reader got stays valid until it is
 *              done.  Readers keep their registration during their I/O.
 * Every release of the exclusive lock publishes the space counters
 * (zlfs_space_publish), which statfs reads with no lock at all.
 *
 * The operation bracket, zlfs_op_begin / zlfs_op_end, is what a user
 * operation (each FUSE request; the tests that act as one) takes instead
 * of the bare lock: it also tells background GC the filesystem is busy,
 * keeps the memory bound (super.c's zlfs_cache_balance, on the way in),
 * and counts the operation in sbi->ops_active (atomic, no lock), which
 * includes operations waiting with the lock dropped: the cache trim may
 * unpin inodes only when the operation running it is alone.
 * Lock order: sbi->lock, then sbi->cache_lock; wr_lock (data.c) and the
 * dispatcher's locks below both.  The dispatcher's completions take none
 * of these.
 */
#include "zlfs.h"
#include "segment.h"

/*
 * Called with the exclusive lock held, just before it is let go: every
 * counter published changes only under it, so the values are consistent
 * as of this release.  Readers (statfs) take them with atomic loads.
 */
void zlfs_space_publish(struct zlfs_sb *sbi)
{
	__atomic_store_n(&sbi->pub_free_blocks, zlfs_free_blocks(sbi), __ATOMIC_RELAXED);
	__atomic_store_n(&sbi->pub_valid_nodes, sbi->valid_node_count, __ATOMIC_RELAXED);
}

/* Is this thread a registered reader?  (Then cache changes need cache_lock.) */
static __thread bool shared_held;

void zlfs_lock(struct zlfs_sb *sbi)
{
	pthread_mutex_lock(&sbi->lock);
	while (sbi->readers)
		pthread_cond_wait(&sbi->rd_cv, &sbi->lock);
}

void zlfs_unlock(struct zlfs_sb *sbi)
{
	zlfs_space_publish(sbi);
	pthread_mutex_unlock(&sbi->lock);
}

void zlfs_wait(struct zlfs_sb *sbi, pthread_cond_t *cv)
{
	zlfs_space_publish(sbi);
	pthread_cond_wait(cv, &sbi->lock);
	while (sbi->readers)
		pthread_cond_wait(&sbi->rd_cv, &sbi->lock);
}

void zlfs_timedwait(struct zlfs_sb *sbi, pthread_cond_t *cv, const struct timespec *until)
{
	zlfs_space_publish(sbi);
	pthread_cond_timedwait(cv, &sbi->lock, until);
	while (sbi->readers)
		pthread_cond_wait(&sbi->rd_cv, &sbi->lock);
}

void zlfs_lock_shared(struct zlfs_sb *sbi)
{
	pthread_mutex_lock(&sbi->lock);
	sbi->readers++;
	pthread_mutex_unlock(&sbi->lock);
	shared_held = true;
}

void zlfs_unlock_shared(struct zlfs_sb *sbi)
{
	shared_held = false;
	pthread_mutex_lock(&sbi->lock);
	if (!--sbi->readers)
		pthread_cond_broadcast(&sbi->rd_cv);
	pthread_mutex_unlock(&sbi->lock);
}

bool zlfs_lock_is_shared(void)
{
	return shared_held;
}

void zlfs_lock_drop(struct zlfs_sb *sbi)
{
	if (!shared_held) {
		zlfs_space_publish(sbi);
		pthread_mutex_unlock(&sbi->lock);
	}
}

void zlfs_lock_retake(struct zlfs_sb *sbi)
{
	if (!shared_held)
		zlfs_lock(sbi);
}

void zlfs_cache_lock(struct zlfs_sb *sbi)
{
	if (shared_held)
		pthread_mutex_lock(&sbi->cache_lock);
}

void zlfs_cache_unlock(struct zlfs_sb *sbi)
{
	if (shared_held)
		pthread_mutex_unlock(&sbi->cache_lock);
}

void zlfs_op_begin(struct zlfs_sb *sbi, bool shared)
{
	if (shared) {
		/*
		 * Readers add clean nodes but never trim (only exclusive holders
		 * evict): past the bound, one exclusive bracket trims first.
		 * (An up-call to super.c, named in zlfs.h's layer list.)
		 */
		if (zlfs_cache_over(sbi)) {
			zlfs_op_begin(sbi, false);
			zlfs_op_end(sbi, false);
		}
		zlfs_lock_shared(sbi);
		zlfs_note_op(sbi);
		__atomic_add_fetch(&sbi->ops_active, 1, __ATOMIC_RELAXED);
		return;
	}
	zlfs_lock(sbi);
	zlfs_note_op(sbi);
	bool quiet = __atomic_add_fetch(&sbi->ops_active, 1, __ATOMIC_RELAXED) == 1 &&
		     !sbi->gc_busy && !sbi->io_inflight;
	zlfs_cache_balance(sbi, quiet);   /* up-call to super.c: the memory bound */
}

void zlfs_op_end(struct zlfs_sb *sbi, bool shared)
{
	__atomic_sub_fetch(&sbi->ops_active, 1, __ATOMIC_RELAXED);
	if (shared)
		zlfs_unlock_shared(sbi);
	else
		zlfs_unlock(sbi);
}
