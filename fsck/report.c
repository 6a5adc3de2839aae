/*
 * report.c - fsck.zlfs: what every pass says.  Problems are counted by the
 * fix they need and printed, FSCK_SHOWN of each kind (struct fkind: the
 * format, or a bare "%s"'s text with its numbers as N), all with -v; then
 * one summary line per kind past the cap.  Also -v's messages, the
 * progress bar, and errors naming the volume once.
 *
 * Invariant: a problem is always counted, whether printed or not; without
 * memory for a new kind it is printed (one line too many, never a problem
 * unsaid).  Single-threaded, as all of fsck: no locks.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"

const char *fsck_unnamed(const char *spec, const char *msg)
{
	size_t n = strlen(spec);

	return !strncmp(msg, spec, n) && msg[n] == ':' && msg[n + 1] == ' ' ? msg + n + 2 : msg;
}

void fsck_error(const char *spec, const char *msg, const char *suffix)
{
	fprintf(stderr, "fsck.zlfs: %s: %s%s\n", spec, fsck_unnamed(spec, msg), suffix ? suffix : "");
}

/* The kind of a message (struct fkind): its format, or a bare "%s"'s text with numbers as N. */
static void kind_key(const char *fmt, const char *text, char *key, size_t len)
{
	bool bare = !strcmp(fmt, "%s");
	const char *p = bare ? text : fmt;
	size_t k = 0;

	for (; *p && k + 1 < len; p++) {
		key[k++] = bare && isdigit((unsigned char)*p) ? 'N' : *p;
		while (bare && isdigit((unsigned char)*p) && isdigit((unsigned char)p[1]))
			p++;
	}
	key[k] = '\0';
}

/*
 * Count msg under its kind; true if it is to be printed (the kind's first
 * FSCK_SHOWN, or every one with -v).  Without memory for a new kind it is
 * printed: better one line too many than a problem unsaid.
 */
static bool kind_count(struct fsck *f, FILE *out, const char *fmt, const char *msg)
{
	char key[sizeof(f->kinds->key)];
	uint32_t i;

	kind_key(fmt, msg, key, sizeof(key));
	for (i = 0; i < f->nkinds && strcmp(f->kinds[i].key, key); i++)
		;
	if (i == f->nkinds) {
		if (f->nkinds == f->kinds_cap) {
			uint32_t cap = f->kinds_cap ? 2 * f->kinds_cap : 16;
			struct fkind *k = realloc(f->kinds, cap * sizeof(*k));
			if (!k)
				return true;
			f->kinds = k;
			f->kinds_cap = cap;
		}
		struct fkind *k = &f->kinds[f->nkinds++];
		snprintf(k->key, sizeof(k->key), "%s", key);
		snprintf(k->first, sizeof(k->first), "%.*s", (int)sizeof(k->first) - 1, msg);
		k->out = out;
		k->n = 0;
	}
	return ++f->kinds[i].n <= FSCK_SHOWN || f->verbose;
}

static void __attribute__((format(printf, 3, 0))) report(struct fsck *f, FILE *out,
							const char *fmt, va_list ap)
{
	char msg[1024];

	if (!fmt)   /* never; said so for the sanitizers' builds, which warn otherwise */
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (!kind_count(f, out, fmt, msg))
		return;
	if (f->progress)
		fputs("\r\033[K", stderr);
	fprintf(out, "%s\n", msg);
}

void fsck_problem(struct fsck *f, enum fsck_fix fix, const char *fmt, ...)
{
	va_list ap;

	f->problems++;
	if (fix == FIX_META)
		f->need_meta++;
	else if (fix == FIX_TREE)
		f->need_tree++;
	else if (fix == FIX_MANUAL)
		f->need_manual++;
	va_start(ap, fmt);
	report(f, stdout, fmt, ap);
	va_end(ap);
}

void fsck_note(struct fsck *f, FILE *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report(f, out, fmt, ap);
	va_end(ap);
}

void fsck_problems_summary(struct fsck *f)
{
	for (uint32_t i = 0; i < f->nkinds; i++) {
		const struct fkind *k = &f->kinds[i];
		if (k->n > FSCK_SHOWN && !f->verbose)
			fprintf(k->out, "... %llu in all like \"%s\" (-v shows every one)\n",
				(unsigned long long)k->n, k->first);
	}
	f->nkinds = 0;
}

void fsck_info(struct fsck *f, const char *fmt, ...)
{
	va_list ap;

	if (!f->verbose)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

void fsck_progress(struct fsck *f, const char *what, uint64_t done, uint64_t total)
{
	if (!f->progress || !total || (done % 1024 && done != total))
		return;
	unsigned int pct = (unsigned int)(done >= total ? 100 : done * 100 / total);
	char bar[41];
	memset(bar, '#', pct * 40 / 100);
	memset(bar + pct * 40 / 100, '.', 40 - pct * 40 / 100);
	bar[40] = 0;
	fprintf(stderr, "\r%-8s [%s] %3u%%", what, bar, pct);
	if (done >= total)
		fputs("\r\033[K", stderr);
}
