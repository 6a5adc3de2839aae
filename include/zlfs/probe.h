/*
 * probe.h - what does a device or image already hold?  (fs/f2fs/probe.c)
 *
 * A thin wrapper over libblkid's low-level probe, shared by mkfs.zlfs (which
 * refuses to overwrite what it finds unless forced), the daemon and fsck.zlfs
 * (which say what a non-F2FS device holds instead of advising mkfs).  The
 * probe only reads; it never writes to the device.  No state, no locks.
 */
#ifndef ZLFS_PROBE_H
#define ZLFS_PROBE_H

#include <stddef.h>

/*
 * Probe the file or block device at path.  Returns 1 and a description in
 * desc ("an ext4 filesystem, label 'data', UUID ...", "a gpt partition
 * table", "a linux_raid_member RAID member") when a filesystem, partition
 * table, RAID/LVM or other known signature is there; 0 when nothing is
 * found (desc empty); a negative errno when the path cannot be probed.
 */
int zf_probe_path(const char *path, char *desc, size_t desclen);

/*
 * The same for a device spec (PATH?OPTS, /dev/...?OPTS, mem:OPTS): the options
 * are dropped, mem: devices hold nothing and give 0, a path that does not
 * exist gives 0 (the caller's open reports it).
 */
int zf_probe_spec(const char *spec, char *desc, size_t desclen);

/*
 * Why a device without an F2FS superblock is not a volume, for the mount's
 * and fsck's refusal: "holds an ext4 filesystem, label 'data', UUID ...,
 * not F2FS", or, for a later device of a multi-device volume (which holds
 * no superblock), "is device 2 of the multi-device volume whose first
 * device is /x/meta.img: name that one instead" (found among the files
 * beside it).  Returns 1 with msg set, 0 when nothing is known (msg empty:
 * the caller's own advice, e.g. to run mkfs.zlfs, stands).
 */
int zf_probe_explain(const char *spec, char *msg, size_t msglen);

#endif
