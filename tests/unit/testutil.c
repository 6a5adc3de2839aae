/*
 * testutil.c - helpers shared by the Check unit tests (see testutil.h).
 *
 * The scratch directory belongs to the process that made it: Check runs
 * each test in a forked child, so a child that asks first makes its own,
 * and removes it when it exits with status 0 (a failed test's files stay
 * for a look).  A directory the parent made before forking is inherited by
 * the children and removed by the parent alone, in tu_run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static char tmp_dir[256];
static pid_t tmp_owner;

static void tmp_remove(void)
{
	char cmd[300];

	if (!tmp_dir[0] || tmp_owner != getpid())
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp_dir);
	tmp_dir[0] = 0;
}

/* on_exit: a child that passed leaves nothing behind */
static void tmp_at_exit(int status, void *arg)
{
	(void)arg;
	if (status == 0)
		tmp_remove();
}

const char *tu_tmpdir(void)
{
	if (!tmp_dir[0]) {
		const char *t = getenv("TMPDIR");

		snprintf(tmp_dir, sizeof(tmp_dir), "%s/zlfs-test.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(tmp_dir)) {
			perror("mkdtemp");
			abort();
		}
		tmp_owner = getpid();
		on_exit(tmp_at_exit, NULL);
	}
	return tmp_dir;
}

char *tu_path(const char *name)
{
	char *p = malloc(512);

	if (!p)
		abort();
	snprintf(p, 512, "%s/%s", tu_tmpdir(), name);
	return p;
}

void tu_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

int tu_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	/* leave the scratch directory if something failed, for a look */
	if (!failed)
		tmp_remove();
	return failed ? 1 : 0;
}
