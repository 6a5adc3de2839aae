#!/bin/bash
# check-full.sh BUILD_DIR - a full filesystem: 400 MiB written into a 160
# MiB volume fails with ENOSPC (from write, fsync or close: the writeback
# cache may accept the write itself); then the space comes back, files and
# directories can be made, what was there before is intact, fsck is clean
# and a remount shows it all.  (check-enospc.sh looks closer at ENOSPC
# under the writeback cache and at statfs beside writers.)
#
# Prints "check-full: CHECK ok" or "check-full: CHECK FAIL reason" per check,
# the last that no zlfs daemon or mount of its own is left, then "check-full:
# ok (N checks, S s)" (exit 0) only if every check passed, else exit 1. Exit
# 77 (skipped) without root, /dev/fuse or perl. KEEP=1 keeps the images of a
# failed run.
NAME=check-full
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_tools perl
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"

# Writing more than fits must fail with ENOSPC (with the kernel's writeback
# cache in front of zlfs, write() itself may succeed: fsync or close must
# report it); then everything keeps working, the space comes back, and
# fsck is clean.
enospc() {
	local r=0
	enospc_body || r=1
	mountpoint -q "$T/full.mnt" && fusermount3 -u "$T/full.mnt"
	return $r
}
enospc_body() {
	local img=$T/full.img m=$T/full.mnt out
	"$ZDEV" create "$img" --size 1G --zone-size 32M --conv-zones 8 >/dev/null &&
		"$MKFS" "$img" >/dev/null || { WHY="create/mkfs"; return 1; }
	mnt "$img" "$m" || return 1
	echo before >"$m/before"
	out=$(perl -e 'use Fcntl; use IO::Handle;
		sysopen(my $f, shift, O_WRONLY|O_CREAT|O_TRUNC, 0644) or die "open: $!\n";
		my $b = "z" x (1 << 20); my $n = 0;
		for (1 .. 400) { my $w = syswrite($f, $b); if (!defined $w) { print "write:", ($!{ENOSPC} ? 1 : 0); exit } $n += $w }
		if (!$f->sync) { print "fsync:", ($!{ENOSPC} ? 1 : 0); exit }
		if (!close($f)) { print "close:", ($!{ENOSPC} ? 1 : 0); exit }
		print "none"' "$m/huge" 2>&1)
	case $out in
	write:1 | fsync:1 | close:1) NOTE="ENOSPC from ${out%%:*}" ;;
	*) WHY="400 MiB into a 160 MiB filesystem: '$out' (ENOSPC expected by close at the latest)"; return 1 ;;
	esac
	rm -f "$m/huge"
	sync
	dd if=/dev/urandom of="$m/after" bs=1M count=50 conv=fsync status=none ||
		{ WHY="50 MiB after freeing the space: failed"; return 1; }
	mkdir "$m/dir" && echo x >"$m/dir/x" || { WHY="mkdir/create after ENOSPC"; return 1; }
	[ "$(cat "$m/before")" = before ] || { WHY="a file written before is damaged"; return 1; }
	umnt "$m" "$img" || return 1
	fsck_clean "$img" || return 1
	mnt "$img" "$m" || return 1
	[ "$(stat -c %s "$m/after")" = $((50 << 20)) ] && [ "$(cat "$m/dir/x")" = x ] ||
		{ WHY="after the remount"; return 1; }
	umnt "$m" "$img" || return 1
	rm -f "$img" "$img.zst"
}
check "ENOSPC on a full filesystem, then usable again" enospc

finish
