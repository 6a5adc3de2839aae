/*
 * probe.c - describe what a device or image holds, through libblkid.
 *
 * Owns nothing past one call: each probe opens the path read-only, asks
 * libblkid for superblocks (filesystems, RAID/LVM members, crypto) and
 * partition tables, and closes it.  It never writes.  Used before mkfs
 * destroys anything, and by the mount and fsck to explain a refusal (with
 * zf_probe_explain, which also recognises a later device of a
 * multi-device volume by the first device's superblock beside it).
 * No locks: libblkid probes are per call.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blkid.h>

#include "zlfs/f2fs_format.h"
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

/*
 * Devices 1.. of a multi-device volume carry no superblock: only device 0's
 * lists them.  Look for that device among the files beside path (where
 * mkfs.zlfs -c users keep them), reading two blocks of each: a superblock
 * copy whose devs[] names path (the same inode) makes path its device
 * *index.  Everything read is untrusted: the magic checked, each recorded
 * path used only if NUL-terminated within its field.  At most 4096
 * entries are looked at.
 */
static int member_of(const char *path, char *owner, size_t ownerlen, int *index)
{
	char dir[4096], cand[4096];
	struct stat me, st;
	uint8_t buf[2 * ZF_BLKSIZE];
	int found = 0, seen = 0;

	if (stat(path, &me) || !S_ISREG(me.st_mode))
		return 0;
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = 0;
	else if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof(dir), ".");
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	for (struct dirent *e; !found && seen < 4096 && (e = readdir(d)); seen++) {
		if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
			continue;
		/* a bare name stays bare: "meta.img", not "./meta.img" */
		if ((size_t)snprintf(cand, sizeof(cand), "%s%s%s", slash ? dir : "",
				     slash && slash != dir ? "/" : "", e->d_name) >= sizeof(cand))
			continue;
		if (stat(cand, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(buf) ||
		    (st.st_dev == me.st_dev && st.st_ino == me.st_ino))
			continue;
		int fd = open(cand, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		ssize_t n = pread(fd, buf, sizeof(buf), 0);
		close(fd);
		for (int copy = 0; !found && n == (ssize_t)sizeof(buf) && copy < 2; copy++) {
			const struct zf_super *sb =
				(const void *)(buf + copy * ZF_BLKSIZE + ZF_SUPER_OFFSET);
			if (zf_le32_to_cpu(sb->magic) != ZF_SUPER_MAGIC)
				continue;
			for (int i = 1; i < ZF_MAX_DEVICES; i++) {
				const uint8_t *p = sb->devs[i].path;
				struct stat ms;
				if (!p[0] || !memchr(p, 0, ZF_DEVICE_PATH_LEN))
					break;
				if (!stat((const char *)p, &ms) && ms.st_dev == me.st_dev &&
				    ms.st_ino == me.st_ino) {
					snprintf(owner, ownerlen, "%s", cand);
					*index = i;
					found = 1;
					break;
				}
			}
		}
	}
	closedir(d);
	return found;
}

int zf_probe_explain(const char *spec, char *msg, size_t msglen)
{
	char path[4096], what[512], owner[4096];
	int index = 0;
	size_t n = strcspn(spec, "?");

	if (msglen)
		msg[0] = 0;
	if (!strncmp(spec, "mem:", 4) || n >= sizeof(path))
		return 0;
	memcpy(path, spec, n);
	path[n] = 0;
	if (zf_probe_path(path, what, sizeof(what)) > 0) {
		snprintf(msg, msglen, "holds %s, not F2FS", what);
		return 1;
	}
	if (member_of(path, owner, sizeof(owner), &index)) {
		snprintf(msg, msglen, "is device %d of the multi-device volume whose first "
			 "device is %s: name that one instead", index + 1, owner);
		return 1;
	}
	return 0;
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
