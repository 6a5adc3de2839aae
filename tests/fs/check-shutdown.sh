#!/bin/bash
# check-shutdown.sh BUILD_DIR - the going-down ioctl and FITRIM through FUSE,
# with the tools users and xfstests use: `xfs_io -x -c shutdown` and
# `fstrim`.
#
#   1. shutdown without -f (NOSYNC): files fsynced before it are there after
#      the remount byte for byte (rolled forward, with nothing printed on the
#      terminal: the note goes to syslog), one never fsynced is
#      gone; between the ioctl and the unmount every operation fails with
#      EIO, nothing reaches the image (its bytes do not change, through a
#      write, an fsync and the unmount), zlfs-umount still finds the daemon,
#      and fsck.zlfs and fsck.f2fs find the crash image sound;
#      then mounted ro,norecovery (printing nothing) it shows the last
#      checkpoint (fstrim is refused there) and leaves the chain to the next read-write mount;
#      norecovery without ro is refused;
#   2. shutdown -f (METASYNC): what the daemon held is all there after the
#      remount, fsynced or not (a checkpoint came first);
#   3. only root or the mount's owner may shut it down: another user gets
#      EPERM and the volume goes on;
#   4. fstrim: the space a deleted file held is trimmed (fstrim -v reports
#      more than the file and no more than statfs counts free), fstrim -o past
#      the end and -l under a block are refused, and the volume is sound.
#
# Prints "check-shutdown: NAME ok|FAIL ..." per check, then
# "check-shutdown: ok" (exit 0) or "check-shutdown: FAIL (N failed)" (exit 1).  Exit 77
# (skipped) without root, /dev/fuse or a needed tool.  About 20 s.
NAME=check-shutdown
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_fuse
need_tools fusermount3 fsck.f2fs xfs_io fstrim setpriv sha256sum
need_built "$ZDEV" "$MKFS" "$ZLFS" "$UMOUNT" "$FSCK"

tmpdir
chmod 755 "$T"   # the mount point is reached by another user in 3
IMG=$T/img
M=$T/mnt
mkdir -p "$M"

fresh() {
	rm -f "$IMG" "$IMG.zst"
	"$ZDEV" create "$IMG" --size 1G --zone-size 32M --conv-zones 4 >/dev/null &&
		"$MKFS" "$IMG" >/dev/null || die "mkfs"
}
mnt() { "$ZLFS" "$IMG" "$M" -o allow_other "$@" || die "mount"; }
umnt() { "$UMOUNT" "$M" || die "zlfs-umount"; }
# Both checkers on the unmounted image; a message naming what they said.
fscks() {
	local out
	out=$("$FSCK" -f -n "$IMG" 2>&1) || { echo "fsck.zlfs: $(echo "$out" | tail -2 | tr '\n' ' ')"; return 1; }
	out=$(fsck.f2fs --dry-run "$IMG" 2>&1) || { echo "fsck.f2fs: $(echo "$out" | tail -2 | tr '\n' ' ')"; return 1; }
	return 0
}
# The image's bytes (data and zone state).
img_sum() { cat "$IMG" "$IMG.zst" 2>/dev/null | sha256sum | cut -d' ' -f1; }

# 1. NOSYNC (no timed checkpoint, which would make "lost" durable on a slow machine)
fresh
mnt -o gc_cp_interval_ms=0
head -c 300000 /dev/urandom >"$T/a.ref"
head -c 70000 /dev/urandom >"$T/b.ref"
cp "$T/a.ref" "$M/a" && xfs_io -c fsync "$M/a"
mkdir "$M/d" && cp "$T/b.ref" "$M/d/b" && xfs_io -c fsync "$M/d/b"
echo never-synced >"$M/lost"
if ! xfs_io -x -c shutdown "$M"; then
	fail "shutdown (no sync)" "(the ioctl failed)"
else
	before=$(img_sum)
	errs=""
	cat "$M/a" >/dev/null 2>&1 && errs="$errs read"
	ls "$M/d" >/dev/null 2>&1 && errs="$errs readdir"
	echo x 2>/dev/null >"$M/new" && errs="$errs create"
	mkdir "$M/nd" 2>/dev/null && errs="$errs mkdir"
	xfs_io -c fsync "$M/lost" 2>/dev/null && errs="$errs fsync"
	grep -q '^shut_down=1$' "$M/.zlfs/status" || errs="$errs status"
	umnt
	after=$(img_sum)
	if [ -n "$errs" ]; then
		fail "shutdown (no sync)" "(succeeded after the shutdown:$errs)"
	elif [ "$before" != "$after" ]; then
		fail "shutdown (no sync)" "(the image changed after the shutdown)"
	elif ! why=$(fscks); then
		fail "shutdown (no sync)" "(crash image: $why)"
	else
		# the mount that rolls the chain forward says so in syslog, not on
		# the terminal of whoever mounts (xfstests compares that output)
		said=$("$ZLFS" "$IMG" "$M" -o allow_other 2>&1) || die "mount"
		if [ -n "$said" ]; then
			fail "shutdown (no sync)" "(the remount printed: $said)"
		elif ! cmp -s "$T/a.ref" "$M/a" || ! cmp -s "$T/b.ref" "$M/d/b"; then
			fail "shutdown (no sync)" "(an fsynced file differs after the remount)"
		elif [ -e "$M/lost" ]; then
			fail "shutdown (no sync)" "(a file never fsynced survived)"
		else
			pass "shutdown (no sync)"
		fi
		umnt
		why=$(fscks) || fail "shutdown (no sync)" "(after the remount: $why)"
	fi
fi

# 1b. ro,norecovery after it: the last checkpoint, the chain left for the
# next read-write mount; fstrim refused there; norecovery without ro refused
fresh
mnt -o gc_cp_interval_ms=0
cp "$T/a.ref" "$M/c" && xfs_io -c fsync "$M/c"
xfs_io -x -c shutdown "$M"
umnt
if "$ZLFS" "$IMG" "$M" -o norecovery 2>/dev/null; then
	fail "norecovery" "(accepted without ro)"
	umnt
else
	# quietly: xfstests generic/537 compares what the mount prints
	out=$("$ZLFS" "$IMG" "$M" -o allow_other -o ro,norecovery 2>&1) ||
		die "mount ro,norecovery: $out"
	[ -z "$out" ] || fail "norecovery" "(ro,norecovery printed: $out)"
	seen=$([ -e "$M/c" ] && echo yes || echo no)
	fstrim "$M" 2>/dev/null && seen="$seen trimmed"
	umnt
	mnt
	if [ "$seen" != no ]; then
		fail "norecovery" "(ro,norecovery: the fsynced file: $seen)"
	elif ! cmp -s "$T/a.ref" "$M/c"; then
		fail "norecovery" "(the next read-write mount did not roll the chain forward)"
	else
		pass "norecovery"
	fi
	umnt
fi

# 2. METASYNC (-f); without the writeback cache every write reaches the
# daemon at once, so it holds all of this, none of it fsynced
fresh
mnt -o no_writeback_cache,gc_cp_interval_ms=0
cp "$T/a.ref" "$M/held"
mkdir -p "$M/x/y" && cp "$T/b.ref" "$M/x/y/z"
if ! xfs_io -x -c "shutdown -f" "$M"; then
	fail "shutdown -f" "(the ioctl failed)"
else
	umnt
	if ! why=$(fscks); then
		fail "shutdown -f" "(image: $why)"
	else
		mnt
		cmp -s "$T/a.ref" "$M/held" && cmp -s "$T/b.ref" "$M/x/y/z" &&
			pass "shutdown -f" || fail "shutdown -f" "(what the daemon held is not all there)"
		umnt
	fi
fi

# 3. who may
fresh
mnt
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups xfs_io -x -c shutdown "$M" 2>&1)
if ! echo "$out" | grep -q 'Operation not permitted'; then
	fail "shutdown by another user" "(not refused: $out)"
elif ! echo ok >"$M/still" || ! grep -q '^shut_down=0$' "$M/.zlfs/status"; then
	fail "shutdown by another user" "(the volume stopped)"
else
	pass "shutdown by another user"
fi
umnt

# 4. fstrim
fresh
mnt
dd if=/dev/urandom of="$M/big" bs=1M count=200 status=none && sync "$M/big" && rm "$M/big"
out=$(fstrim -v "$M" 2>&1)
bytes=$(echo "$out" | sed -n 's/.*(\([0-9]*\) bytes) trimmed.*/\1/p')
# statfs's free blocks (f_bfree: df's Avail leaves out the writeback reserve)
free=$(( $(stat -f -c '%f * %S' "$M") ))
if [ -z "$bytes" ]; then
	fail "fstrim" "($out)"
elif [ "$bytes" -lt $((200 << 20)) ] || [ "$bytes" -gt "$free" ]; then
	fail "fstrim" "($bytes bytes trimmed: not between the file's 200 MiB and df's $free free)"
elif fstrim -o 1T "$M" 2>/dev/null || fstrim -l 100 "$M" 2>/dev/null; then
	fail "fstrim" "(a range past the end or under a block was not refused)"
else
	umnt
	why=$(fscks) && pass "fstrim" || fail "fstrim" "(image: $why)"
	mnt
fi
umnt

verdict
