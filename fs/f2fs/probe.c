/*
 * probe.c - describe what a device or image holds, through libblkid.
 *
 * Owns nothing past one call: each probe opens the path read-only, asks
 * libblkid for superblocks (filesystems, RAID/LVM members, crypto) and
 * partition tables, and closes it.  It never writes.  Used before mkfs
 * destroys anything, and by the mount and fsck to explain a refusal.
 * No locks: libblkid probes are per call.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <blkid.h>

#include "zlfs/probe.h"

/* A value of the probe, or NULL when it is absent or empty. */
static const char *val(blkid_probe pr, const char *name)
{
	const char *v = NULL;

	if (blkid_probe_lookup_value(pr, name, &v, NULL) || !v || !*v)
		return NULL;
	return v;
}

/*
 * "an ext4", "an f2fs", "a gpt", "an LVM2_member": the article as the type is
 * spoken (lower case read as a word, f and x spelt; upper case spelt).
 */
static const char *article(const char *type)
{
	return type[0] && strchr("aeioufxAEFHILMNORSX", type[0]) ? "an" : "a";
}

static void describe(blkid_probe pr, char *desc, size_t desclen)
{
	const char *type = val(pr, "TYPE"), *usage = val(pr, "USAGE");
	const char *label = val(pr, "LABEL"), *uuid = val(pr, "UUID");
	const char *pttype = val(pr, "PTTYPE");
	size_t n = 0;

	desc[0] = 0;
	if (type) {
		const char *what = "signature";
		if (usage && !strcmp(usage, "filesystem"))
			what = "filesystem";
		else if (usage && !strcmp(usage, "raid"))
			what = "RAID/LVM member";
		else if (usage && !strcmp(usage, "crypto"))
			what = "encrypted volume";
		n = (size_t)snprintf(desc, desclen, "%s %s %s", article(type), type, what);
		if (label && n < desclen)
			n += (size_t)snprintf(desc + n, desclen - n, ", label '%s'", label);
		if (uuid && n < desclen)
			n += (size_t)snprintf(desc + n, desclen - n, ", UUID %s", uuid);
	} else if (pttype) {
		snprintf(desc, desclen, "%s %s partition table", article(pttype), pttype);
	} else {
		snprintf(desc, desclen, "an unknown signature");
	}
}

int zf_probe_path(const char *path, char *desc, size_t desclen)
{
	struct stat st;
	int ret;

	if (desclen)
		desc[0] = 0;
	if (stat(path, &st))
		return -errno;
	/* an empty file holds nothing (and libblkid refuses size 0) */
	if (S_ISREG(st.st_mode) && st.st_size == 0)
		return 0;
	blkid_probe pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return errno ? -errno : -EIO;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE |
					  BLKID_SUBLKS_LABEL | BLKID_SUBLKS_UUID);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_ENTRY_DETAILS);
	int r = blkid_do_safeprobe(pr);
	if (r == 0) {
		describe(pr, desc, desclen);
		ret = 1;
	} else if (r == 1) {
		ret = 0;
	} else if (r == -2) {
		/* several signatures that contradict each other: still not empty */
		snprintf(desc, desclen, "several conflicting signatures (see wipefs -n)");
		ret = 1;
	} else {
		ret = -EIO;
	}
	blkid_free_probe(pr);
	return ret;
}

int zf_probe_spec(const char *spec, char *desc, size_t desclen)
{
	char path[4096];
	size_t n = strcspn(spec, "?");

	if (desclen)
		desc[0] = 0;
	if (!strncmp(spec, "mem:", 4))
		return 0;
	if (n >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, spec, n);
	path[n] = 0;
	int ret = zf_probe_path(path, desc, desclen);
	return ret == -ENOENT ? 0 : ret;
}
