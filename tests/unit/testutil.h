/*
 * testutil.h - helpers shared by the Check unit tests.
 */
#ifndef ZLFS_TESTUTIL_H
#define ZLFS_TESTUTIL_H

#include <check.h>
#include <stdint.h>

/* A fresh directory under $TMPDIR (or /tmp) for this test run. */
const char *tu_tmpdir(void);
/* tu_tmpdir()/name, malloc()ed: the caller frees it. */
char *tu_path(const char *name);
/* Fill buf with a pattern derived from seed. */
void tu_fill(void *buf, size_t len, uint64_t seed);
/* Run a suite; returns the process exit code (0 if all passed). */
int tu_run(Suite *s);

#endif
