/*
 * fuse_ops.h - what main.c needs of the FUSE layer (fuse_ops.c): the
 * operations table, the session settings made before the session starts,
 * and the final checkpoint at the end.  Only main.c and the FUSE layer
 * (fuse_*.c, through fuse_int.h) include it; nothing below the FUSE layer
 * sees libfuse.
 */
#ifndef ZLFS_FUSE_OPS_H
#define ZLFS_FUSE_OPS_H

#include <fuse3/fuse_lowlevel.h>
#include <stdbool.h>

#include "zlfs.h"

/* The kernel's readahead the mount asks for, in KiB (zl_init's conn->max_readahead). */
#define ZLFS_READAHEAD_KB 4096
/*
 * The largest READ, unless -o max_read= says otherwise: an answer of this
 * much fits a pipe of the default pipe-max-size (1 MiB) with room for its
 * header, so reads can be spliced by any user (fuse_file.c).
 */
#define ZLFS_READ_MAX (512u << 10)

extern const struct fuse_lowlevel_ops zlfs_ops;

/* Before the session starts: may the kernel's writeback cache be used (-o no_writeback_cache). */
void zlfs_fuse_set_writeback(bool on);
/* The session, for the notifications (cache invalidations) the operations send. */
void zlfs_fuse_set_session(struct fuse_session *se);
/* Before the session starts: the max_read the session was made with (INIT must repeat it). */
void zlfs_fuse_set_max_read(unsigned int bytes);
/* Before the session starts: one thread serves every request (-s). */
void zlfs_fuse_set_single_threaded(bool on);
/* Serve the session's requests until it ends (fuse_loop.c): 0 or a negative errno. */
int zl_loop_run(struct fuse_session *se);
/* The final checkpoint, at DESTROY or after the session ends: 0 or a negative errno. */
int zlfs_fuse_finish(struct zlfs_sb *sbi);

#endif
