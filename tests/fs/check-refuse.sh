#!/bin/bash
# check-refuse.sh BUILD_DIR - what the zlfs daemon refuses, how it says so,
# and with which exit status (mount(8)'s: 1 for bad usage, 32 for a mount
# that failed):
#
#   1. a mount point that is a file, or missing: refused before anything is
#      opened, one line, 32;
#   2. a volume whose root inode is a regular file (i_mode 0100644), has
#      i_mode 0, or whose NAT entry points at a block that is no inode (the
#      block zeroed): refused with a message naming fsck.zlfs, 32, nothing
#      mounted, and the image (data and zone state) byte for byte unchanged;
#   3. a missing device: 32, its path said once;
#   4. no mount point given: 1, one line of usage naming --help, not the help;
#   5. unknown and misspelled options (mod=zwl, gc=of, cache_mb=x,
#      sched_foo=1) and a dispatcher value it cannot run with
#      (sched_fifo_batch=0): 1, the option named, nothing mounted;
#   6. mount(8)'s generic options (defaults,noauto,_netdev,nofail,x-*) are
#      accepted and ignored: the mount works.
#
# Prints "check-refuse: NAME ok|FAIL ..." per check, then "check-refuse: ok"
# (exit 0) or "check-refuse: FAIL (N failed)" (exit 1).  Exit 77 (skipped) without
# root, /dev/fuse or a needed tool.  A few seconds.
NAME=check-refuse
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_fuse
need_tools fusermount3 dump.f2fs sha256sum
need_built "$ZDEV" "$MKFS" "$ZLFS" "$UMOUNT"

tmpdir
IMG=$T/img
M=$T/mnt
mkdir -p "$M"

# Whatever got mounted under $T: a mount point that was a file was mounted over too.
mounts() { awk -v t="$T/" 'index($2, t) == 1 { print $2 }' /proc/mounts; }
on_exit() {
	local p
	for p in $(mounts); do
		"$UMOUNT" -f "$p" >/dev/null 2>&1 || fusermount3 -uz "$p" 2>/dev/null
	done
}
mounted() { [ -n "$(mounts)" ]; }
img_sum() { cat "$IMG" "$IMG.zst" 2>/dev/null | sha256sum | cut -d' ' -f1; }

"$ZDEV" create "$T/pristine" --size 256M --zone-size 8M --conv-zones 4 >/dev/null &&
	"$MKFS" "$T/pristine" >/dev/null || die "mkfs"
fresh() {
	cp --sparse=always "$T/pristine" "$IMG" && cp "$T/pristine.zst" "$IMG.zst" ||
		die "copy"
}
# The root inode's block (dump.f2fs -n writes ./dump_nat: "nid: 3 ino: 3 ... blkaddr: N").
ROOT_BLK=$(cd "$T" && dump.f2fs -n 3~4 pristine >/dev/null 2>&1 &&
	awk '$1 == "nid:" && $2 == 3 { print $8 }' dump_nat)
case "$ROOT_BLK" in
''|*[!0-9]*|0) die "cannot find the root inode's block (dump.f2fs -n)" ;;
esac

# run NAME WANT_STATUS PATTERN ARGS...: zlfs ARGS must exit WANT_STATUS, say
# PATTERN (grep -E) in at most MAXLINES lines (default 2), and mount nothing.
MAXLINES=2
run() {
	local name=$1 want=$2 pat=$3 st out n
	shift 3
	out=$("$ZLFS" "$@" 2>&1)
	st=$?
	n=$(printf '%s\n' "$out" | grep -c .)
	if mounted; then
		fail "$name" "mounted (status $st): $out"
		for p in $(mounts); do "$UMOUNT" -f "$p" >/dev/null 2>&1 || fusermount3 -uz "$p"; done
	elif [ "$st" != "$want" ]; then
		fail "$name" "exit status $st, not $want: $out"
	elif ! printf '%s\n' "$out" | grep -Eq -- "$pat"; then
		fail "$name" "the message does not say /$pat/: $out"
	elif [ "$n" -gt "$MAXLINES" ]; then
		fail "$name" "$n lines, not at most $MAXLINES: $out"
	else
		pass "$name"
	fi
}

# 1. mount points
fresh
touch "$T/file"
run "mount point a file" 32 "mount point $T/file is not a directory" "$IMG" "$T/file"
run "mount point missing" 32 "mount point $T/nodir: No such file" "$IMG" "$T/nodir"

# 2. a destroyed root: refused, run fsck.zlfs, the image untouched
root_case() {
	local name=$1
	fresh
	case $name in
	mode-file) printf '\xa4\x81' | dd of="$IMG" bs=1 seek=$((ROOT_BLK * 4096)) conv=notrunc status=none ;;
	mode-0) printf '\x00\x00' | dd of="$IMG" bs=1 seek=$((ROOT_BLK * 4096)) conv=notrunc status=none ;;
	nowhere) dd if=/dev/zero of="$IMG" bs=4096 seek="$ROOT_BLK" count=1 conv=notrunc status=none ;;
	esac
	local before after
	before=$(img_sum)
	# the inconsistency itself may be reported on a line of its own
	MAXLINES=3 run "root $name refused" 32 "cannot mount $IMG: .*root.*run fsck.zlfs" "$IMG" "$M"
	after=$(img_sum)
	[ "$before" = "$after" ] && pass "root $name: image unchanged" ||
		fail "root $name: image unchanged" "the refused mount wrote to it"
	MAXLINES=3 run "root $name refused read-only" 32 "root.*run fsck.zlfs" "$IMG" "$M" -o ro
}
root_case mode-file
root_case mode-0
root_case nowhere

# 3. a missing device: its path once
fresh
out=$("$ZLFS" "$T/nodev" "$M" 2>&1); st=$?
if [ $st != 32 ] || [ "$(printf '%s\n' "$out" | grep -o "$T/nodev" | wc -l)" != 1 ] ||
   ! printf '%s\n' "$out" | grep -q "No such file"; then
	fail "missing device" "status $st: $out"
else
	pass "missing device"
fi

# 4. no mount point: one line of usage, not the help
run "no mount point" 1 "usage: .*see .*--help" "$IMG"

# 5. options: each named, with what is allowed where zlfs knows the option
run "unknown option named" 1 "mod=zwl" "$IMG" "$M" -o mod=zwl
run "unknown option: what is allowed" 1 "zlfs's are mode=.*zlfs --help" "$IMG" "$M" -o mod=zwl
run "misspelled gc" 1 "option gc=of: .*gc=off\|on\|urgent" "$IMG" "$M" -o gc=of
run "cache_mb not a number" 1 "option cache_mb=x: .*8 \.\. 1048576" "$IMG" "$M" -o cache_mb=x
run "unknown dispatcher setting" 1 "option sched_foo=1: .*fifo_batch" "$IMG" "$M" -o sched_foo=1
run "dispatcher value 0" 1 "option sched_fifo_batch=0: must be at least 1" "$IMG" "$M" \
	-o sched_fifo_batch=0
run "norecovery without ro" 1 "option norecovery: needs ro" "$IMG" "$M" -o norecovery

# 6. mount(8)'s generic options: accepted, ignored
if out=$("$ZLFS" "$IMG" "$M" -o defaults,noauto,_netdev,nofail,auto,user,nouser,users,x-systemd.x=1 2>&1) &&
   mounted && echo hello >"$M/f" && [ "$(cat "$M/f")" = hello ] && "$UMOUNT" "$M" && ! mounted; then
	pass "generic mount options"
else
	fail "generic mount options" "$out"
fi

verdict
