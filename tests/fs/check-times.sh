#!/bin/bash
# check-times.sh BUILD_DIR - what stat shows is what zlfs stores.
#
# With the kernel's writeback cache the kernel owns the mtime and ctime of
# regular files and tells the daemon at writeback, fsync and close; the
# daemon must store exactly those (fs/fuse_ops.c, "Times").  Files are
# changed in many ways (append, overwrite, mmap, O_DIRECT, truncate both
# ways, O_TRUNC, fallocate in its modes, touch -d, chmod, xattrs, rename,
# link, a directory's entries, a symlink) and `stat -c '%n %s %y %z'`
# (nanoseconds) of every one is compared:
#   1. before an unmount (zlfs-umount, which waits) and after the remount;
#   2. after `sync` and after an unmount and remount;
#   3. after fsync (sync FILE), with the daemon then killed (SIGKILL): what
#      a fresh mount shows is what was on the device, for fsync=checkpoint
#      and for the default fsync;
#   4. without the writeback cache (-o no_writeback_cache) zlfs stamps the
#      times itself: writes, truncates and fallocate move them forward from
#      an old date, and the result survives a remount as in 1;
#   5. atime: reads move it under relatime (the default) when it is not
#      after mtime, keep it when it is (and less than a day old), always
#      under strictatime, never under noatime, and nodiratime keeps
#      directories'; every update survives an unmount; an open without a
#      read moves nothing (read-write, and under strictatime read-only too).
# Times are never compared with the clock, only with each other or with
# a date long past, so a slow machine cannot make this fail.
#
# Prints "check-times: NAME ok|FAIL ..." per check, then "check-times: ok"
# (exit 0) or "check-times: FAIL (N failed)" (exit 1).  Exit 77 (skipped)
# without root, /dev/fuse, fsck.f2fs or python3.  About 20 s.
NAME=check-times
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_fuse
need_tools fusermount3 fsck.f2fs python3 fallocate
need_built "$ZDEV" "$MKFS" "$ZLFS" "$UMOUNT"

tmpdir
IMG=$T/img
M=$T/mnt

# The daemon serving $IMG (by its image argument), not a zombie.
daemon_pid() { daemons "$IMG"; }


mnt() {
	"$ZLFS" "$IMG" "$M" "$@" || die "mount $*"
}
umnt() {
	"$UMOUNT" "$M" || die "zlfs-umount"
	local out
	out=$(fsck.f2fs --dry-run "$IMG" 2>&1)
	if [ $? != 0 ] || grep -q '\[Fail\]' <<<"$out"; then
		grep '\[Fail\]' <<<"$out" | head -5
		die "fsck.f2fs after the unmount"
	fi
}

# Every entry under the mount, with size and times (symlinks themselves).
snap() {
	(cd "$M" && find . -path ./.zlfs -prune -o -print0 | sort -z |
		xargs -0 stat -c '%n %s %y %z')
}

# compare NAME FILE1 FILE2
compare() {
	if cmp -s "$2" "$3"; then
		pass "$1"
	else
		fail "$1" "(before < > after):"
		diff "$2" "$3" | head -20
	fi
}

py() { python3 -c "$@"; }

OLD='2001-02-03 04:05:06.123456789'

# Changes of every kind; $1 tells rounds apart.
populate() {
	local r=$1
	local d=$M/r$r
	mkdir -p "$d/dir"
	for i in $(seq 20); do printf 'line %d\n' "$i" >>"$d/append"; done
	dd if=/dev/urandom of="$d/overwrite" bs=64k count=16 status=none
	dd if=/dev/urandom of="$d/overwrite" bs=64k seek=3 count=2 conv=notrunc status=none
	dd if=/dev/urandom of="$d/big" bs=1M count=8 status=none
	dd if=/dev/urandom of="$d/direct" bs=4k count=64 oflag=direct status=none
	truncate -s 1M "$d/mmap"
	py "
import mmap, os
fd = os.open('$d/mmap', os.O_RDWR)
m = mmap.mmap(fd, 1 << 20)
for off in range(0, 1 << 20, 40000):
    m[off:off + 5] = b'mmap!'
m.flush(); m.close(); os.close(fd)"
	dd if=/dev/urandom of="$d/shrink" bs=1M count=1 status=none
	truncate -s 100000 "$d/shrink"
	echo grow >"$d/grow"
	truncate -s 5M "$d/grow"
	dd if=/dev/urandom of="$d/otrunc" bs=1M count=1 status=none
	: >"$d/otrunc"
	echo small >"$d/otrunc2"
	echo again >"$d/otrunc2"          # O_TRUNC, then a write
	echo old >"$d/touched"
	touch -d "$OLD" "$d/touched"
	echo oldm >"$d/touched_m"
	touch -m -d "$OLD" "$d/touched_m"  # ctime: now
	fallocate -l 1M "$d/falloc"
	# an old date first: the kernel does not stamp these, a stamp of the
	# daemon's would show after the remount whatever the clock's grain
	echo x >"$d/falloc_keep"
	touch -d "$OLD" "$d/falloc_keep"
	fallocate -n -o 1M -l 1M "$d/falloc_keep"
	dd if=/dev/urandom of="$d/punch" bs=64k count=16 status=none
	touch -d "$OLD" "$d/punch"
	fallocate -p -o 4096 -l 65536 "$d/punch"
	dd if=/dev/urandom of="$d/zero" bs=64k count=16 status=none
	touch -d "$OLD" "$d/zero"
	fallocate -z -n -o 8192 -l 131072 "$d/zero"
	echo m >"$d/chmod"
	chmod 600 "$d/chmod"
	echo x >"$d/xattr"
	py "import os; os.setxattr('$d/xattr', 'user.k', b'v' * 100)"
	echo r >"$d/rename_src"
	mv "$d/rename_src" "$d/renamed"
	echo l >"$d/link"
	ln "$d/link" "$d/link2"
	touch "$d/dir/a" "$d/dir/b"
	rm "$d/dir/a"
	ln -s "target-$r" "$d/symlink"
	# many small files: at each close the data and the times race to the daemon
	mkdir -p "$d/small"
	for i in $(seq 40); do
		echo "a$i" >"$d/small/$i"
		echo "b$i" >>"$d/small/$i"
	done
	exec 7>"$d/open_long"              # written while open, closed after
	echo one >&7
	py "import os; os.write(7, b'two\n')"
	exec 7>&-
}

# Change again what round $1 made, in the ways the kernel stamps.
modify() {
	local d=$M/r$1
	echo more >>"$d/append"
	dd if=/dev/urandom of="$d/overwrite" bs=4k seek=7 count=3 conv=notrunc status=none
	py "
import mmap, os
fd = os.open('$d/mmap', os.O_RDWR)
m = mmap.mmap(fd, 1 << 20)
m[12345:12350] = b'again'
m.flush(); m.close(); os.close(fd)"
	truncate -s 50000 "$d/shrink"
	touch -d "$OLD" "$d/punch"
	fallocate -p -o 0 -l 4096 "$d/punch"
	: >"$d/otrunc2"
	touch -d "$OLD" "$d/touched_m"
	echo grow >>"$d/grow"
}

mkdir -p "$M"
"$ZDEV" create "$IMG" --size 2G --zone-size 32M --conv-zones 8 >/dev/null &&
	"$MKFS" "$IMG" >/dev/null || die "create/mkfs"

# ---- 1. unmount and remount ----------------------------------------------------------
mnt
populate 1
snap >"$T/s1.before"
umnt
mnt
snap >"$T/s1.after"
compare "unmount: times and sizes survive it" "$T/s1.before" "$T/s1.after"
# the kernel did stamp: a write after touch -d moves mtime off the old date
echo w >>"$M/r1/touched"
if stat -c %y "$M/r1/touched" | grep -q '^2001-'; then
	fail "writeback cache: a write moves mtime" "(still $(stat -c %y "$M/r1/touched"))"
else
	pass "writeback cache: a write moves mtime"
fi

# ---- 2. sync, then unmount ------------------------------------------------------------
# sync while files are open with dirty pages: writeback sends the data and
# then the kernel's times without waiting for the data's replies, so a
# WRITE may reach the daemon after the SETATTR; the close that follows
# has nothing left to send
modify 1
populate 2
for i in $(seq 8); do
	eval "exec {fd$i}>'$M/r2/open_sync$i'"
	eval "dd if=/dev/urandom bs=1M count=4 status=none >&\$fd$i"
done
py "
import mmap, os
fd = os.open('$M/r2/mmap_sync', os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 4 << 20)
m = mmap.mmap(fd, 4 << 20)
m[:] = os.urandom(4 << 20)
os.system('sync')
m.close(); os.close(fd)"
sync
for i in $(seq 8); do eval "exec {fd$i}>&-"; done
sync
snap >"$T/s2.sync"
umnt
mnt
snap >"$T/s2.after"
compare "sync: what stat showed after sync survives the unmount" "$T/s2.sync" "$T/s2.after"

# ---- 3. fsync, then the daemon killed ----------------------------------------------------
crash_check() {  # name mount-options...
	local name=$1 p
	shift
	mnt "$@"
	modify 1
	modify 2
	populate 3
	# every file fsync'd (sync FILE), and its directory: that is what is on the device
	(cd "$M" && find . -path ./.zlfs -prune -o -type f -print0 | xargs -0 sync)
	sync "$M"
	snap >"$T/s3.$name.fsync"
	p=$(daemon_pid)
	[ -n "$p" ] || die "no daemon for $IMG"
	kill -9 $p
	while kill -0 $p 2>/dev/null && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ]; do
		sleep 0.05      # until the kernel has closed its files (image lock)
	done
	fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
	mnt "$@"
	snap >"$T/s3.$name.after"
	compare "fsync + SIGKILL ($name): a fresh mount shows what stat showed" \
		"$T/s3.$name.fsync" "$T/s3.$name.after"
	rm -rf "$M/r3"
	umnt
}
umnt
crash_check checkpoint -o fsync=checkpoint
crash_check default

# ---- 4. without the writeback cache: zlfs stamps ---------------------------------------
mnt -o no_writeback_cache
d=$M/r4
mkdir -p "$d"
for f in append write trunc otrunc punch falloc; do
	dd if=/dev/urandom of="$d/$f" bs=64k count=4 status=none
	touch -d "$OLD" "$d/$f"
done
echo more >>"$d/append"
dd if=/dev/urandom of="$d/write" bs=4k seek=2 count=1 conv=notrunc status=none
truncate -s 1000 "$d/trunc"
: >"$d/otrunc"
fallocate -p -o 0 -l 65536 "$d/punch"
fallocate -o 0 -l 1M "$d/falloc"
# allocation changes no data: fallocate's mode 0 moves only ctime
stale=
for f in append:%y write:%y trunc:%y otrunc:%y punch:%y append:%z write:%z trunc:%z \
	 otrunc:%z punch:%z falloc:%z; do
	stat -c "${f#*:}" "$d/${f%:*}" | grep -q '^2001-' && stale="$stale $f"
done
[ -z "$stale" ] && pass "no writeback cache: zlfs moves mtime and ctime" ||
	fail "no writeback cache: zlfs moves mtime and ctime" "(still old:$stale)"
populate 5
snap >"$T/s4.before"
umnt
mnt -o no_writeback_cache
snap >"$T/s4.after"
compare "no writeback cache: times survive the unmount" "$T/s4.before" "$T/s4.after"
umnt

# 5. atime: reads update it as the mount option says (relatime by default),
# and the update survives an unmount (carried by the final checkpoint).
# Times are set far in the past or future, so the clock never decides.
# "cat" after a remount reads through zlfs (READ); right after a write it
# reads the kernel's page cache, where the open is what zlfs sees.
atime_of() { stat -c %X "$1"; }
A_OLD=$(date -d 2001-01-01 +%s)
atime_case() {  # NAME EXPECT(moved|kept) PREP(old|future) MOUNT-OPTIONS...
	local name=$1 want=$2 prep=$3 f before after
	shift 3
	mnt "$@"
	f=$M/atime.$RANDOM
	echo data >"$f"
	mkdir -p "$f.d"
	if [ "$prep" = old ]; then
		touch -m -d 2002-01-01 "$f" "$f.d"
		touch -a -d 2001-01-01 "$f" "$f.d"
	else   # after mtime and ctime, and less than a day old: relatime keeps it
		touch -a -d '+3 hours' "$f" "$f.d"
	fi
	before=$(atime_of "$f")
	umnt
	mnt "$@"
	cat "$f" >/dev/null; cat "$f" >/dev/null
	ls "$f.d" >/dev/null
	after=$(atime_of "$f")
	dafter=$(atime_of "$f.d")
	umnt
	mnt "$@"
	local again dagain
	again=$(atime_of "$f"); dagain=$(atime_of "$f.d")
	umnt
	if [ "$again" != "$after" ] || [ "$dagain" != "$dafter" ]; then
		fail "atime $name" "(not kept by the unmount: file $after -> $again, dir $dafter -> $dagain)"
	elif [ "$want" = moved ] && [ "$after" = "$before" ]; then
		fail "atime $name" "(a read left the file's atime at $before)"
	elif [ "$want" = kept ] && [ "$after" != "$before" ]; then
		fail "atime $name" "(a read moved the file's atime $before -> $after)"
	elif [ "$want" = moved ] && [ "$dafter" = "$before" ] && [ "$name" != nodiratime ]; then
		fail "atime $name" "(listing left the directory's atime at $before)"
	elif [ "$name" = nodiratime ] && [ "$dafter" != "$A_OLD" ]; then
		fail "atime $name" "(listing moved the directory's atime: $dafter)"
	else
		pass "atime $name"
	fi
}
atime_case "relatime (default), older than mtime" moved old
atime_case "relatime, newer than mtime and ctime" kept future
atime_case "relatime option" kept future -o relatime
atime_case "strictatime" moved future -o strictatime
atime_case "noatime" kept old -o noatime
atime_case nodiratime moved old -o nodiratime
atime_case lazytime moved old -o lazytime

# Right after a write, the read comes from the page cache: only the open
# reaches zlfs, and must count (xfstests generic/192).
mnt
f=$M/atime.cached
echo data >"$f"
touch -m -d 2002-01-01 "$f"; touch -a -d 2001-01-01 "$f"
cat "$f" >/dev/null
after=$(atime_of "$f")
umnt
[ "$after" != "$A_OLD" ] && pass "atime of a read from the page cache" ||
	fail "atime of a read from the page cache" "(still $after)"

# A read-write open that reads nothing is no access: xfs_io opens so for
# its fsync, and the fsync must not carry an atime no read made (xfstests
# generic/392 compares stat before the fsync with stat after a crash).
mnt
f=$M/atime.rdwr
echo data >"$f"
touch -m -d 2002-01-01 "$f"; touch -a -d 2001-01-01 "$f"
umnt
mnt
xfs_io -c fsync "$f"
after=$(atime_of "$f")
umnt
[ "$after" = "$A_OLD" ] && pass "atime of a read-write open without a read" ||
	fail "atime of a read-write open without a read" "(moved to $after)"

# Under strictatime an open is no read either, read-only included
# (xfstests generic/622), and a read right after a write still counts:
# the kernel's cached pages are dropped at the open, so the read comes.
mnt -o strictatime
f=$M/atime.strict
echo data >"$f"
touch -a -d 2001-01-01 "$f"
xfs_io -r -c fsync "$f"
after=$(atime_of "$f")
cat "$f" >/dev/null
read_after=$(atime_of "$f")
umnt
if [ "$after" != "$A_OLD" ]; then
	fail "atime under strictatime" "(a read-only open without a read moved it to $after)"
elif [ "$read_after" = "$A_OLD" ]; then
	fail "atime under strictatime" "(a read of cached pages did not move it)"
else
	pass "atime under strictatime"
fi

verdict
