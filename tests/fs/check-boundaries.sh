#!/bin/bash
# check-boundaries.sh BUILD_DIR - logs that end exactly on a segment or
# zone boundary: a 2 MiB file fills the warm data log's segment exactly, a
# 64 MiB one its zone; through an fsync, an unmount, fsck.f2fs and a
# remount, the data read back.
#
# Prints "check-boundaries: CHECK ok" or "check-boundaries: CHECK FAIL reason"
# per check, the last that no zlfs daemon or mount of its own is left, then
# "check-boundaries: ok (N checks, S s)" (exit 0) only if every check passed,
# else exit 1. Exit 77 (skipped) without root or /dev/fuse. KEEP=1 keeps the
# images of a failed run.
NAME=check-boundaries
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"

# A 2 MiB file fills the warm data log's segment exactly, a 64 MiB one its
# zone: the checkpoint must never record a log at block 512 of its segment
# (fsck.f2fs: "Checkpoint is polluted").  Through an fsync, an unmount and
# a remount, with the data read back.
boundaries() {
	local img=$T/bound.img m=$T/bound.mnt out sums
	"$ZDEV" create "$img" --size 2G --zone-size 64M --conv-zones 8 >/dev/null &&
		"$MKFS" "$img" >/dev/null || { WHY="create/mkfs"; return 1; }
	mnt "$img" "$m" || return 1
	head -c 2M /dev/urandom > "$m/seg" && sync "$m/seg" ||
		{ WHY="2 MiB file + fsync"; fusermount3 -u "$m"; return 1; }
	head -c 62M /dev/urandom > "$m/zone" && head -c 64M /dev/urandom > "$m/zone2" ||
		{ WHY="64 MiB files"; fusermount3 -u "$m"; return 1; }
	sums=$(cd "$m" && sha1sum seg zone zone2)
	umnt "$m" "$img" || return 1
	fsck_clean "$img" || return 1
	mnt "$img" "$m" || return 1
	out=$(cd "$m" && sha1sum seg zone zone2)
	umnt "$m" "$img" || return 1
	[ "$out" = "$sums" ] || { WHY="data changed across the remount"; return 1; }
	rm -f "$img" "$img.zst"
}
check "logs ending on a segment / zone boundary: fsync, unmount, fsck.f2fs, remount" boundaries

finish
