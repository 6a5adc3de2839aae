/*
 * testutil.h - helpers shared by the Check unit tests.
 */
#ifndef ZLFS_TESTUTIL_H
#define ZLFS_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

/* A fresh directory under $TMPDIR (or /tmp) for this test run. */
const char *tu_tmpdir(void);
/* tu_tmpdir()/name, malloc()ed: the caller frees it. */
char *tu_path(const char *name);
/* Fill buf with a pattern derived from seed. */
void tu_fill(void *buf, size_t len, uint64_t seed);
/*
 * A 64-bit hash of a file's bytes and of where its holes are: what "wrote
 * nothing" is checked by.  Only the data extents are read (SEEK_DATA), a
 * word at a time, so a sparse 512 MiB image costs what it holds.
 */
uint64_t tu_file_hash(const char *path);
/*
 * Index of the first byte of buf that is not c, or len if all are: a check
 * of a whole buffer is one assertion (Check writes a record down a pipe for
 * every ck_assert, so a check per byte costs a system call per byte).
 */
size_t tu_first_not(const void *buf, size_t len, uint8_t c);
/* Run a suite; returns the process exit code (0 if all passed). */
int tu_run(Suite *s);

#endif
