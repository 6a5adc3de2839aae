#!/bin/bash
# check-mountinfo.sh BUILD_DIR - what the kernel shows of a zlfs mount:
# /proc/mounts gives the spec as given (options after "?" included) as the
# source and plain "fuse" as the type; the mount's backing-device
# readahead is raised to the 4 MiB zlfs asks for; READs are at most the
# 512 KiB of its max_read.
#
# Prints "check-mountinfo: CHECK ok" or "check-mountinfo: CHECK FAIL reason"
# per check, the last that no zlfs daemon or mount of its own is left, then
# "check-mountinfo: ok (N checks, S s)" (exit 0) only if every check passed,
# else exit 1. Exit 77 (skipped) without root or /dev/fuse. KEEP=1 keeps the
# images of a failed run.
NAME=check-mountinfo
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"

# The mount's source is the spec as given and its type plain "fuse": libfuse
# adds subtype=zlfs when no fsname precedes its command-line parsing, and
# tools such as xfstests with FSTYP=fuse look for "fuse".  (mount -t
# fuse.zlfs gives the same once zlfs is installed where mount.fuse3 finds it;
# mount(8) does not pass PATH on, so that is not tested here.)
proc_mounts() {
	local img=$T/pm.img m=$T/pm.mnt got
	"$ZDEV" create "$img" --size 1G --zone-size 32M --conv-zones 8 >/dev/null &&
		"$MKFS" "$img" >/dev/null || { WHY="create/mkfs"; return 1; }
	mkdir -p "$m"
	for spec in "$img" "$img?qd=8"; do
		"$ZLFS" "$spec" "$m" -o mode=zwl || { WHY="mount $spec"; return 1; }
		got=$(awk -v m="$m" '$2 == m {print $1, $3}' /proc/mounts)
		umnt "$m" "$img" || return 1
		[ "$got" = "$spec fuse" ] || { WHY="/proc/mounts says '$got', expected '$spec fuse'"; return 1; }
	done
	rm -f "$img" "$img.zst"
}
check "/proc/mounts: the spec as given, type fuse" proc_mounts

# The kernel's FUSE keeps the readahead INIT asks for (4 MiB) only up to
# the mount's backing-device readahead, 128 KiB unless raised: the daemon
# (root here) raises it, so a sequential read keeps several 512 KiB READs
# in flight (max_read=524288 in the mount's options: small enough to be
# spliced through a pipe any user may have).
readahead() {
	local img=$T/ra.img m=$T/ra.mnt dev ra mr
	"$ZDEV" create "$img" --size 1G --zone-size 32M --conv-zones 8 >/dev/null &&
		"$MKFS" "$img" >/dev/null || { WHY="create/mkfs"; return 1; }
	mnt "$img" "$m" || return 1
	dev=$(mountpoint -d "$m")
	ra=$(cat "/sys/class/bdi/$dev/read_ahead_kb" 2>/dev/null)
	mr=$(awk -v m="$m" '$2 == m { print $4 }' /proc/mounts)
	umnt "$m" "$img" || return 1
	rm -f "$img" "$img.zst"
	[ "$ra" = 4096 ] || { WHY="read_ahead_kb of bdi $dev is '$ra', expected 4096"; return 1; }
	case ,$mr, in *,max_read=524288,*) ;; *) WHY="no max_read=524288 in the options: $mr"; return 1 ;; esac
}
check "readahead of the mount raised to max_readahead (4 MiB), READs of 512 KiB" readahead

finish
