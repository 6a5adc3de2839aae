/*
 * fuse_file.c - the requests on open files: OPEN, READ, WRITE, FSYNC,
 * FLUSH, FALLOCATE, RELEASE (the file layer, file.c, does the work), and
 * the writeback gate.
 *
 * Reads run under the shared lock, everything else exclusive, each in
 * the operation bracket (zlfs_op_begin); data operations on a file whose
 * times the kernel owns keep them (fuse_times.c).  A read that finds its
 * file's atime due updates it after, exclusive (zl_read_accessed).
 *
 * The writeback gate: ENOSPC where the writer sees it.
 *
 * Under the kernel's writeback cache a buffered write(2) lands in the
 * page cache and never asks the daemon about space; the WRITE comes
 * later, from writeback, and an ENOSPC there is lost to the writer (the
 * kernel drops the pages, keeps its own i_size, and the file ends in
 * zeros the writer never wrote).  The one request a buffered write(2)
 * does make is a GETATTR carrying the file handle (FUSE_GETATTR_FH),
 * when the kernel's attributes of the inode are invalid: it wants the
 * mode and size before it writes (fuse_cache_write_iter), and its error
 * is write(2)'s.  A stat never sends the handle; a read or lseek past
 * EOF could, but only once the attributes expire (ZL_TIMEOUT), which is
 * not how the gate invalidates them.  So:
 *   - regular files opened for writing get ZL_FH_WRITER as their handle;
 *   - while fewer than sbi->wb_reserve blocks are free, a GETATTR with
 *     that handle gets ENOSPC, and the attributes of every inode a
 *     cached WRITE reaches are invalidated after it (notify), as are
 *     those of an inode opened for writing; a new file is created with
 *     attributes that expire at once;
 *   - the WRITEs from writeback (fi->writepage) may use the reserve,
 *     which is sized (main.c) for what the kernel can hold dirty or in
 *     writeback for this mount: what write(2) accepted is stored, and a
 *     file whose writer got ENOSPC holds a prefix of what it wrote;
 *   - other WRITEs on such a mount (O_DIRECT) stop at the reserve too.
 * Space freed (a delete, a truncate) opens the gate again: the next
 * GETATTR succeeds.  Without the writeback cache every write(2) is a
 * WRITE and gets its ENOSPC directly; the reserve is then 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuse_int.h"
#include "segment.h"
#include "gc.h"
#include "inode.h"
#include "file.h"

bool zl_wb_gated(struct zlfs_sb *sbi)
{
	return zl_writeback() && zlfs_space_low(sbi);
}

void zl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	bool accessed = false, uncached = false;
	int ret;

	zl_count(ZR_OPEN, ino);
	DOWN_REFUSE(req, ino);
	if (is_virt(ino)) {
		virt_open(req, ino, fi);
		return;
	}
	zlfs_op_begin(sbi, false);
	if (!(ret = zlfs_file_open(sbi, to_ino(ino), fi->flags, ztimes_truncate, &zi))) {
		/*
		 * Reads served from the kernel's page cache never reach us, so
		 * opening read-only is the access atime counts (under relatime:
		 * the first one after a change).  A read-write open is often for
		 * writing alone (xfs_io's fsync, a database): it counts only when
		 * a READ comes (zl_read_accessed), or an fsync would carry an atime
		 * no read made (xfstests generic/392).  The kernel keeps
		 * attributes ZL_TIMEOUT long: tell it to ask.
		 *
		 * strictatime wants every read and only reads: there the kernel
		 * drops its cached pages at each read-only open (no keep_cache),
		 * so the reads come to us, and the open itself counts for nothing
		 * (generic/622: an open for fsync must not move atime).  A price
		 * only that option pays.
		 */
		bool reading = (fi->flags & O_ACCMODE) == O_RDONLY &&
			       S_ISREG(zf_le16_to_cpu(zi_raw(zi)->i_mode));
		uncached = reading && sbi->atime == ZLFS_ATIME_STRICT;
		if (reading && !uncached)
			accessed = zlfs_inode_accessed(sbi, zi) == 1;
	}
	zlfs_op_end(sbi, false);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	bool writer = (fi->flags & O_ACCMODE) != O_RDONLY;
	if (writer)
		fi->fh = ZL_FH_WRITER;
	if (accessed || (writer && zl_wb_gated(sbi)))
		zl_inval_attr(ino);
	fi->keep_cache = !uncached;
	fuse_reply_open(req, fi);
}

/*
 * After a read of ino under the shared lock found its atime due: the
 * update, under the exclusive lock (rare under relatime: once per change
 * of the file).  Before the reply: the kernel forgets its atime after a
 * READ or READDIR and asks again.
 */
void zl_read_accessed(struct zlfs_sb *sbi, fuse_ino_t ino)
{
	struct zinode *zi;

	zlfs_op_begin(sbi, false);
	if (!zlfs_iget(sbi, to_ino(ino), &zi))
		zlfs_inode_accessed(sbi, zi);
	zlfs_op_end(sbi, false);
}

void zl_release_handle(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;

	if (is_virt(ino)) {
		virt_release(req, fi);
		return;
	}
	zlfs_op_begin(sbi, false);
	if (!zlfs_iget(sbi, to_ino(ino), &zi)) {
		if (zi->nopen)
			zi->nopen--;
		if (fi && fi->fh == ZL_FH_WRITER && zi->nwrite)
			zi->nwrite--;
		zlfs_iput(sbi, zi, 0);
	}
	zlfs_op_end(sbi, false);
	fuse_reply_err(req, 0);
}

void zl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	zl_count(ZR_RELEASE, ino);
	zl_release_handle(req, ino, fi);
}

/*
 * Each worker thread keeps its READ buffer (up to the largest READ, 1 MiB)
 * for its next READ.  A fresh malloc of 1 MiB comes from mmap or from heap
 * pages malloc_trim gave back (node.c): every page of it then faults as
 * the data is copied in, and sequential reads ran at a third of their
 * speed once a big write had churned the heap.  Freed at thread exit.
 */
static pthread_key_t rbuf_key;
static pthread_once_t rbuf_once = PTHREAD_ONCE_INIT;
static __thread char *rbuf;
static __thread size_t rbuf_cap;

static void rbuf_key_make(void)
{
	(void)pthread_key_create(&rbuf_key, free);
}

static char *read_buf(size_t size)
{
	if (size > 1u << 20)       /* larger than any READ the kernel sends: not kept */
		return malloc(size);
	if (size > rbuf_cap) {
		pthread_once(&rbuf_once, rbuf_key_make);
		free(rbuf);
		rbuf_cap = size < 128u << 10 ? 128u << 10 : 1u << 20;
		rbuf = malloc(rbuf_cap);
		if (!rbuf)
			rbuf_cap = 0;
		(void)pthread_setspecific(rbuf_key, rbuf);
	}
	return rbuf;
}

static void read_buf_done(char *buf)
{
	if (buf != rbuf)
		free(buf);
}

/*
 * Reads answered by splice: a plain file's blocks on an image go from the
 * image's page cache through a pipe to the kernel's FUSE pages, without
 * being read into a buffer here and copied out again (fuse_reply_data
 * with the image's descriptor: libfuse splices it, and the kernel copies
 * once, into the reading file's pages).  With READs of 512 KiB
 * (ZLFS_READ_MAX) and a 4 MiB readahead, cold sequential reads of 1 GiB
 * ran 1.5 times as fast (bench/fuse-read.sh).
 *
 * Only an answer that is one piece of the image is spliced: a run of
 * blocks adjacent on the device, no hole.  Answers of several pieces (a
 * hole and data, two runs) came back wrong after the first piece, sent
 * with fuse_reply_data by libfuse 3.14 on kernel 6.18 (check-read found
 * it; whether libfuse or the kernel's splice into /dev/fuse is at fault
 * was not found), so they are copied, as are reads below two pages
 * (libfuse would copy those itself).
 * libfuse needs a pipe as big as the answer and falls back to a fresh
 * buffer per READ otherwise (its slow copy); so splice is used only when
 * a pipe could be grown that far here, at INIT.
 */
static bool splice_reads;
static uint64_t nsplices;       /* atomic */

uint64_t zl_read_splices(void)
{
	return __atomic_load_n(&nsplices, __ATOMIC_RELAXED);
}

void zl_read_splice_init(struct fuse_conn_info *conn)
{
	int p[2];
	/* libfuse's own estimate of the pipe an answer needs: three pages and the header more */
	long need = (long)getpagesize() * 3 + 64 +
		    (conn->max_read && conn->max_read < (1u << 20) ? (long)conn->max_read : 1l << 20);

	splice_reads = false;
	if (!(conn->capable & FUSE_CAP_SPLICE_WRITE) || pipe(p))
		return;
	if (fcntl(p[0], F_SETPIPE_SZ, need) >= need) {
		conn->want |= FUSE_CAP_SPLICE_WRITE;
		splice_reads = true;
	}
	close(p[0]);
	close(p[1]);
}

/*
 * The answer to a READ as one piece of the image (zlfs_file_read_map),
 * sent from within the caller's operation: its blocks may not be freed
 * and reused until it ends.  true if the read was taken here: answered,
 * or failed with *err for the caller to answer; false if it must be
 * copied.
 */
static bool read_spliced(fuse_req_t req, struct zlfs_sb *sbi, struct zinode *zi, size_t size,
			 off_t off, int *err)
{
	struct zlfs_rseg seg;
	unsigned int n;
	size_t got;
	int ret;

	if (!splice_reads || size < 2 * (size_t)getpagesize())
		return false;
	ret = zlfs_file_read_map(sbi, zi, size, (uint64_t)off, &seg, 1, &n, &got);
	/* nothing (at EOF) or a hole: the copy answers that as well */
	if (ret == -EOPNOTSUPP || (!ret && (n != 1 || seg.fd < 0)))
		return false;
	*err = ret;
	if (ret)
		return true;
	struct fuse_bufvec v = FUSE_BUFVEC_INIT(got);
	v.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	v.buf[0].fd = seg.fd;
	v.buf[0].pos = (off_t)seg.pos;
	__atomic_add_fetch(&nsplices, 1, __ATOMIC_RELAXED);
	fuse_reply_data(req, &v, FUSE_BUF_SPLICE_MOVE);
	return true;
}

void zl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	size_t got = 0;
	char *buf = read_buf(size ? size : 1);
	bool due, spliced = false;
	int ret;

	zl_count(ZR_READ, ino);
	DOWN_REFUSE(req, ino);
	if (is_virt(ino)) {
		read_buf_done(buf);
		virt_read(req, size, off, fi);
		return;
	}
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	zlfs_op_begin(sbi, true);
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi)) &&
	    !(spliced = read_spliced(req, sbi, zi, size, off, &ret)))
		ret = zlfs_file_read(sbi, zi, buf, size, (uint64_t)off, &got);
	due = !ret && zlfs_atime_due(sbi, zi);
	zlfs_op_end(sbi, true);
	if (due)
		zl_read_accessed(sbi, ino);
	if (ret)
		fuse_reply_err(req, -ret);
	else if (!spliced)
		fuse_reply_buf(req, buf, got);
	read_buf_done(buf);
}

void zl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	uint64_t nblk = (size + ZF_BLKSIZE - 1) / ZF_BLKSIZE;
	/* a compressed file may rewrite whole clusters at both ends (cluster.c) */
	uint64_t more = (zlfs_feat(sbi) & ZF_FEAT_COMPRESSION) ? 2u << ZF_COMPR_LOG_MAX : 0;
	bool low = false;
	uint64_t t0 = zlfs_mono_ns();
	int ret;

	zl_count(ZR_WRITE, ino);
	DOWN_REFUSE(req, ino);
	VIRT_REFUSE(req, ino);
	zl_loop_write_turn();       /* a file's WRITEs in the kernel's order (fuse_loop.c) */
	zlfs_op_begin(sbi, false);
	/*
	 * room first: the blocks, maybe a new dnode and an inline conversion;
	 * a write that is not writeback's leaves the reserve to writeback
	 */
	if (!(ret = zlfs_writable(sbi)) && zl_writeback() && !fi->writepage && sbi->wb_reserve &&
	    zlfs_free_blocks(sbi) < sbi->wb_reserve + nblk)
		ret = -ENOSPC;
	else if (!ret &&
	    !(ret = zlfs_balance(sbi, nblk + 3 + more)) &&
	    !(ret = zlfs_iget(sbi, to_ino(ino), &zi))) {
		struct ztimes t;
		ztimes_begin(zi, &t);
		/* the kernel computed the offset, O_APPEND included */
		ret = zlfs_file_write(sbi, zi, buf, size, (uint64_t)off);
		ztimes_end(sbi, zi, &t);
	}
	if (ret == -ENOSPC && fi->writepage)
		sbi->st.wb_lost_writes++;   /* the reserve fell short: README says when */
	low = fi->writepage && zl_wb_gated(sbi);
	zlfs_op_end(sbi, false);
	ZLFS_COUNT_ADD(sbi, write_n, 1);
	ZLFS_COUNT_ADD(sbi, write_ns, zlfs_mono_ns() - t0);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, size);
	if (low)    /* its next buffered write(2) asks (GETATTR) */
		zl_inval_attr(ino);
}

void zl_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	uint64_t t0 = zlfs_mono_ns();
	int ret;

	(void)fi;
	zl_count(ZR_FSYNC, ino);
	DOWN_REFUSE(req, ino);
	if (is_virt(ino)) {
		fuse_reply_err(req, 0);
		return;
	}
	zlfs_op_begin(sbi, false);
	sbi->st.fsync_lock_ns += zlfs_mono_ns() - t0;
	if (!(ret = zlfs_iget(sbi, to_ino(ino), &zi)))
		ret = zlfs_file_fsync(sbi, zi, datasync != 0);
	zlfs_op_end(sbi, false);
	ZLFS_COUNT_ADD(sbi, fsync_n, 1);
	ZLFS_COUNT_ADD(sbi, fsync_ns, zlfs_mono_ns() - t0);
	fuse_reply_err(req, ret ? (ret == -ENOSPC ? ENOSPC : EIO) : 0);
}

/*
 * zlfs has nothing to do at close(): it keeps no locks, and data reaches
 * it by writeback and fsync.  Without FLUSH the kernel still writes the
 * file's dirty pages and its times at close and reports their errors
 * there (fuse_flush), so ENOSYS, which makes the kernel send no FLUSH
 * again, saves a round trip per close.
 */
void zl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	zl_count(ZR_FLUSH, ino);
	fuse_reply_err(req, ENOSYS);
}

void zl_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct zlfs_sb *sbi = SBI(req);
	struct zinode *zi;
	int ret;

	(void)fi;
	zl_count(ZR_FALLOCATE, ino);
	DOWN_REFUSE(req, ino);
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	VIRT_REFUSE(req, ino);
	zlfs_op_begin(sbi, false);
	if (!(ret = zlfs_writable(sbi)) && !(ret = zlfs_iget(sbi, to_ino(ino), &zi))) {
		/* the kernel stamps fallocate's times (and sends them) itself */
		struct ztimes t;
		ztimes_begin(zi, &t);
		ret = zlfs_file_fallocate(sbi, zi, mode, (uint64_t)off, (uint64_t)len);
		ztimes_end(sbi, zi, &t);
	}
	zlfs_op_end(sbi, false);
	fuse_reply_err(req, -ret);
}
