/*
 * testutil.c - helpers shared by the Check unit tests (see testutil.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

const char *tu_tmpdir(void)
{
	static char dir[256];

	if (!dir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(dir, sizeof(dir), "%s/zlfs-test.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			abort();
		}
	}
	return dir;
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
	if (!failed) {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tu_tmpdir());
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tu_tmpdir());
	}
	return failed ? 1 : 0;
}
