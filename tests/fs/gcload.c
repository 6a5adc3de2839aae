/*
 * gcload.c - overwrite workloads that make GC work, with every byte checked.
 *
 *   gcload random STATE FILE BLOCKS PASSES THREADS
 *       FILE is laid out with BLOCKS 4 KiB blocks (if smaller), then
 *       BLOCKS*PASSES random 4 KiB O_DIRECT overwrites are made by THREADS
 *       threads (thread t owns the blocks with index % THREADS == t, so the
 *       last write of a block is known).  Then every block is read back.
 *   gcload rewrite STATE DIR FILES BLOCKS PASSES
 *       FILES files of BLOCKS blocks each in DIR, rewritten whole PASSES
 *       times (1 MiB O_DIRECT writes, files in turn), then read back.
 *   gcload verify STATE OLDROOT NEWROOT
 *       read back what STATE (written by the two above) says the files
 *       hold, with the path prefix OLDROOT replaced by NEWROOT (after a
 *       remount elsewhere, say).
 *
 * Block b of a file in generation g holds 512 64-bit words, word i =
 * mix(file, b, g, i): a stale, misplaced or zeroed block cannot pass.
 * ENOSPC or any other error is reported and fails the run (exit 1); a
 * verification failure names the first blocks that differ.  STATE is a
 * text file: "file NAME BLOCKS" then one generation per block.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BS 4096u

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void fill(uint64_t *w, uint32_t file, uint64_t b, uint32_t gen)
{
	uint64_t seed = mix(((uint64_t)file << 48) ^ (b << 16) ^ gen);
	for (unsigned i = 0; i < BS / 8; i++)
		w[i] = mix(seed + i);
}

static void *abuf(size_t n)
{
	void *p;
	if (posix_memalign(&p, BS, n)) {
		perror("posix_memalign");
		exit(1);
	}
	return p;
}

struct file {
	char path[4096];
	uint32_t id;
	uint64_t blocks;
	uint32_t *gen;
};

static int save(const char *state, struct file *f, int n)
{
	FILE *o = fopen(state, "w");
	if (!o) {
		perror(state);
		return -1;
	}
	for (int k = 0; k < n; k++) {
		fprintf(o, "file %s %llu %u\n", f[k].path, (unsigned long long)f[k].blocks, f[k].id);
		for (uint64_t b = 0; b < f[k].blocks; b++)
			fprintf(o, "%u\n", f[k].gen[b]);
	}
	if (fclose(o)) {
		perror(state);
		return -1;
	}
	return 0;
}

/* Read f back, comparing every block; the number of bad blocks. */
static uint64_t check(struct file *f)
{
	int fd = open(f->path, O_RDONLY | O_DIRECT);
	uint64_t bad = 0;
	uint8_t *buf = abuf(256 * BS);
	uint64_t *want = abuf(BS);

	if (fd < 0) {
		perror(f->path);
		return f->blocks;
	}
	for (uint64_t b = 0; b < f->blocks; b += 256) {
		uint64_t n = f->blocks - b < 256 ? f->blocks - b : 256;
		ssize_t got = pread(fd, buf, n * BS, (off_t)(b * BS));
		if (got != (ssize_t)(n * BS)) {
			fprintf(stderr, "gcload: %s: read of block %llu: %s\n", f->path,
				(unsigned long long)b, got < 0 ? strerror(errno) : "short");
			bad += n;
			continue;
		}
		for (uint64_t i = 0; i < n; i++) {
			fill(want, f->id, b + i, f->gen[b + i]);
			if (memcmp(buf + i * BS, want, BS)) {
				if (bad < 5)
					fprintf(stderr, "gcload: %s: block %llu does not hold generation %u\n",
						f->path, (unsigned long long)(b + i), f->gen[b + i]);
				bad++;
			}
		}
	}
	close(fd);
	free(buf);
	free(want);
	return bad;
}

/* Lay out blocks [0, blocks) of f in generation 0 with 1 MiB writes. */
static int write_whole(struct file *f, uint32_t gen)
{
	int fd = open(f->path, O_WRONLY | O_CREAT | O_DIRECT, 0644);
	uint8_t *buf = abuf(256 * BS);
	int ret = 0;

	if (fd < 0) {
		perror(f->path);
		free(buf);
		return -1;
	}
	for (uint64_t b = 0; b < f->blocks && !ret; b += 256) {
		uint64_t n = f->blocks - b < 256 ? f->blocks - b : 256;
		for (uint64_t i = 0; i < n; i++)
			fill((uint64_t *)(buf + i * BS), f->id, b + i, gen);
		if (pwrite(fd, buf, n * BS, (off_t)(b * BS)) != (ssize_t)(n * BS)) {
			fprintf(stderr, "gcload: %s: write at block %llu: %s\n", f->path,
				(unsigned long long)b, strerror(errno));
			ret = -1;
		}
		for (uint64_t i = 0; i < n && !ret; i++)
			f->gen[b + i] = gen;
	}
	if (close(fd) && !ret) {
		perror(f->path);
		ret = -1;
	}
	free(buf);
	return ret;
}

struct worker {
	struct file *f;
	int fd, t, nt;
	uint64_t writes;
	uint64_t rng;
	int err;
};

static void *random_writer(void *arg)
{
	struct worker *w = arg;
	uint64_t *buf = abuf(BS);
	uint64_t mine = (w->f->blocks - (uint64_t)w->t + (uint64_t)w->nt - 1) / (uint64_t)w->nt;

	for (uint64_t k = 0; k < w->writes && mine; k++) {
		w->rng = mix(w->rng);
		uint64_t b = (w->rng % mine) * (uint64_t)w->nt + (uint64_t)w->t;
		uint32_t g = w->f->gen[b] + 1;
		fill(buf, w->f->id, b, g);
		if (pwrite(w->fd, buf, BS, (off_t)(b * BS)) != (ssize_t)BS) {
			fprintf(stderr, "gcload: %s: overwrite of block %llu (write %llu): %s\n",
				w->f->path, (unsigned long long)b, (unsigned long long)k, strerror(errno));
			w->err = 1;
			break;
		}
		w->f->gen[b] = g;   /* only this thread touches block b */
	}
	free(buf);
	return NULL;
}

static int do_random(const char *state, const char *path, uint64_t blocks, unsigned passes,
		     int threads)
{
	struct file f = { .id = 1, .blocks = blocks };
	snprintf(f.path, sizeof(f.path), "%s", path);
	f.gen = calloc(blocks, sizeof(uint32_t));
	if (!f.gen || threads < 1 || threads > 64)
		return 1;
	if (write_whole(&f, 0))
		return 1;
	int fd = open(path, O_WRONLY | O_DIRECT);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	pthread_t th[64];
	struct worker w[64];
	int err = 0;
	for (int t = 0; t < threads; t++) {
		w[t] = (struct worker){ &f, fd, t, threads, blocks * passes / (uint64_t)threads,
					mix((uint64_t)t + 77), 0 };
		pthread_create(&th[t], NULL, random_writer, &w[t]);
	}
	for (int t = 0; t < threads; t++) {
		pthread_join(th[t], NULL);
		err |= w[t].err;
	}
	if (fsync(fd) || close(fd)) {
		perror(path);
		err = 1;
	}
	uint64_t bad = check(&f);
	if (save(state, &f, 1))
		err = 1;
	printf("gcload: random %llu blocks x %u passes, %d threads: %llu bad blocks\n",
	       (unsigned long long)blocks, passes, threads, (unsigned long long)bad);
	return err || bad;
}

static int do_rewrite(const char *state, const char *dir, int files, uint64_t blocks,
		      unsigned passes)
{
	struct file *f = calloc((size_t)files, sizeof(*f));
	int err = 0;

	if (!f || files < 1)
		return 1;
	for (int k = 0; k < files; k++) {
		snprintf(f[k].path, sizeof(f[k].path), "%s/rw.%d", dir, k);
		f[k].id = (uint32_t)k + 100;
		f[k].blocks = blocks;
		if (!(f[k].gen = calloc(blocks, sizeof(uint32_t))))
			return 1;
	}
	for (unsigned p = 0; p <= passes && !err; p++)
		for (int k = 0; k < files && !err; k++)
			err = write_whole(&f[k], p) != 0;
	uint64_t bad = 0;
	for (int k = 0; k < files; k++) {
		int fd = open(f[k].path, O_RDONLY);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
		bad += check(&f[k]);
	}
	if (save(state, f, files))
		err = 1;
	printf("gcload: rewrite %d files of %llu blocks x %u passes: %llu bad blocks\n", files,
	       (unsigned long long)blocks, passes, (unsigned long long)bad);
	return err || bad;
}

/* Check what STATE says; PATH (file or directory) replaces the recorded mount point prefix. */
static int do_verify(const char *state, const char *oldroot, const char *newroot)
{
	FILE *in = fopen(state, "r");
	char line[4200];
	uint64_t bad = 0, nblk = 0;
	int nfiles = 0;

	if (!in) {
		perror(state);
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		struct file f;
		char p[4096];
		unsigned long long blocks;
		if (sscanf(line, "file %4095s %llu %u", p, &blocks, &f.id) != 3) {
			fprintf(stderr, "gcload: %s: bad line\n", state);
			return 1;
		}
		size_t ol = strlen(oldroot);
		if (!strncmp(p, oldroot, ol))
			snprintf(f.path, sizeof(f.path), "%s%s", newroot, p + ol);
		else
			snprintf(f.path, sizeof(f.path), "%s", p);
		f.blocks = blocks;
		f.gen = calloc(blocks ? blocks : 1, sizeof(uint32_t));
		for (uint64_t b = 0; b < blocks; b++) {
			if (!fgets(line, sizeof(line), in)) {
				fprintf(stderr, "gcload: %s: truncated\n", state);
				return 1;
			}
			f.gen[b] = (uint32_t)strtoul(line, NULL, 10);
		}
		bad += check(&f);
		nblk += blocks;
		nfiles++;
		free(f.gen);
	}
	fclose(in);
	printf("gcload: verify %d files, %llu blocks: %llu bad blocks\n", nfiles,
	       (unsigned long long)nblk, (unsigned long long)bad);
	return bad != 0;
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "random"))
		return do_random(argv[2], argv[3], strtoull(argv[4], NULL, 10),
				 (unsigned)atoi(argv[5]), atoi(argv[6]));
	if (argc == 7 && !strcmp(argv[1], "rewrite"))
		return do_rewrite(argv[2], argv[3], atoi(argv[4]), strtoull(argv[5], NULL, 10),
				  (unsigned)atoi(argv[6]));
	if (argc == 5 && !strcmp(argv[1], "verify"))
		return do_verify(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: gcload random STATE FILE BLOCKS PASSES THREADS\n"
			"       gcload rewrite STATE DIR FILES BLOCKS PASSES\n"
			"       gcload verify STATE OLDROOT NEWROOT\n");
	return 2;
}
