#!/bin/bash
# check-umount.sh BUILD_DIR - an unmount that returns means the device is clean.
#
# fusermount3 -u and umount return when the kernel lets go of a FUSE mount,
# before the daemon has written its last checkpoint.  zlfs-umount waits for
# the daemon to exit (fs/umount.c); umount(8) runs it as umount.fuse.zlfs
# for mounts of type fuse.zlfs; a block device is mounted as fuseblk, whose
# umount the kernel holds until the daemon has answered DESTROY, which
# comes after the final checkpoint (fs/main.c, fs/fuse_ops.c).  Each round
# mounts, checks the previous round's files, writes a few MB with copies,
# renames and deletes, unmounts and at once runs fsck.f2fs --dry-run,
# which must be clean, and checks that the device is free (the image's
# lock, the block device's exclusive open):
#   1. an emulated zoned image, zlfs-umount (ROUNDS, default 30);
#   2. the same through umount(8) and the helper, for a mount of type
#      fuse.zlfs (-o subtype=zlfs) unmounted by its image or a relative path
#      (what makes umount(8) read mountinfo and find the helper); the test
#      runs in a mount namespace of its own where an overlay on /sbin adds
#      umount.fuse.zlfs, so nothing needs installing (10 rounds);
#   3. a loop device over a plain file (a block device without zones),
#      mounted as fuseblk, plain umount (15 rounds); a second mount of it is
#      refused while it is mounted;
#   4. fusermount3 -u still unmounts (it does not wait: the lock is waited
#      for before the image is checked);
#   5. zlfs-umount waits for a process that uses the mount for a moment
#      (its cwd there for half a second) and reports one that stays
#      (exit 32, EBUSY, after its 2 s of tries);
#   6. only zlfs is unmounted: a tmpfs is refused, naming it, and stays
#      mounted (-f unmounts it); a plain directory is "not mounted" (exit
#      32); usage errors are short and name the option (exit 1); after a
#      mount with -o auto_unmount no "fusermount3: ... not mounted" line
#      follows the unmount; a mount whose daemon was killed is unmounted.
# Nothing here waits for a time: every wait is for a condition.
#
# Prints "check-umount: ok" (exit 0) or "check-umount: FAIL reason" (exit
# 1); sections it cannot run (no overlay, no loop device) say so and are
# left out.  Exit 77 (skipped) without root, /dev/fuse or fsck.f2fs.
# About a minute on 2 cores.
NAME=check-umount
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
ROUNDS=${ROUNDS:-30}
need_fuse
need_tools fusermount3 fsck.f2fs flock md5sum
need_built "$ZDEV" "$MKFS" "$ZLFS" "$UMOUNT"

# The whole test runs in a mount namespace of its own, where an overlay on
# /sbin adds umount.fuse.zlfs -> BUILD_DIR's zlfs-umount: umount(8) finds
# the helper without anything installed, and no other mount sees it.
HELPER=
if [ -z "${CHECK_UMOUNT_NS:-}" ] && unshare -m true 2>/dev/null; then
	CHECK_UMOUNT_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
tmpdir
if [ -n "${CHECK_UMOUNT_NS:-}" ] && grep -qw overlay /proc/filesystems; then
	SBIN=$(readlink -f /sbin)
	mkdir -p "$T/helper"
	ln -s "$UMOUNT" "$T/helper/umount.fuse.zlfs"
	mount -t overlay overlay -o "lowerdir=$T/helper:$SBIN" "$SBIN" 2>/dev/null &&
		[ "$(readlink -f /sbin/umount.fuse.zlfs)" = "$UMOUNT" ] && HELPER=1
fi
M=$T/mnt
LOOP=

# zlfs daemons serving a device of ours: an image under $T, or the loop device
our_daemons() { daemons; [ -z "$LOOP" ] || daemons "$LOOP"; }

# The mounts of ours first (umount(8), then a lazy fusermount3), every
# daemon of ours killed and gone, the loop device, the overlay on /sbin.
on_exit() {
	local m p
	for m in $(mounts_under); do
		umount "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null
	done
	for p in $(our_daemons); do kill -9 "$p" 2>/dev/null; done
	for p in $(our_daemons); do
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	done
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	[ -n "$HELPER" ] && umount "$SBIN" 2>/dev/null
}

# fsck DEV WHEN: fsck.f2fs --dry-run must pass without a [Fail], and the
# checkpoint in force must be the final one (flagged unmount): a check run
# while the daemon is still writing mostly reads the previous checkpoint,
# consistent but stale
fsck_clean() {
	local out rc
	out=$(fsck.f2fs --dry-run "$1" 2>&1)
	rc=$?
	if [ $rc != 0 ] || grep -qE '\[(Fail|FAIL)\]|ASSERT' <<<"$out"; then
		grep -E '\[(Fail|FAIL)\]|ASSERT' <<<"$out" | head -5
		die "fsck.f2fs $1 $2: exit $rc, $(grep -cE '\[(Fail|FAIL)\]' <<<"$out") [Fail] lines"
	fi
	grep -q 'checkpoint state = .*unmount' <<<"$out" ||
		die "fsck.f2fs $1 $2: the checkpoint in force is not the final one ($(grep 'checkpoint state' <<<"$out"))"
}

# The files of the mount and their checksums.
sums() {
	(cd "$M" && find . -path ./.zlfs -prune -o -type f -print0 | sort -z | xargs -0 -r md5sum)
}

# Round r's changes: new data, a copy renamed away, small files, deletes.
work() {
	local r=$1 n=$((1 + $1 % 4))
	mkdir -p "$M/dir" "$M/small"
	dd if=/dev/urandom of="$M/big.$r" bs=1M count=$n status=none || return 1
	cp "$M/big.$r" "$M/tmp.$r" && mv "$M/tmp.$r" "$M/dir/copy.$r" || return 1
	for i in $(seq 20); do echo "$r $i" >"$M/small/$r.$i" || return 1; done
	mv "$M/small/$r.1" "$M/small/$r.renamed" &&
		rm -f "$M/big.$((r - 3))" "$M/dir/copy.$((r - 2))" "$M/small/$((r - 2))".* &&
		dd if=/dev/urandom of="$M/dir/copy.$((r - 1))" bs=4k count=3 seek=5 conv=notrunc \
			status=none 2>/dev/null
	true
}

# rounds NAME DEV N UNMOUNT-COMMAND FREE-CHECK [mount options...]
rounds() {
	local name=$1 dev=$2 n=$3 um=$4 free=$5 r
	shift 5
	rm -f "$T/expect"
	for r in $(seq "$n"); do
		"$ZLFS" "$dev" "$M" "$@" || die "$name round $r: mount"
		if [ -f "$T/expect" ]; then
			sums >"$T/got"
			cmp -s "$T/expect" "$T/got" ||
				die "$name round $r: contents after the remount differ ($(diff "$T/expect" "$T/got" | head -3 | tr '\n' ' '))"
		fi
		[ "$r" = 1 ] && { check_type "$name" "$@" || return 1; }
		work "$r" || die "$name round $r: writing"
		sums >"$T/expect"
		$um "$M" || die "$name round $r: $um $M"
		# at once: no daemon may still be writing
		$free "$dev" || die "$name round $r: $dev still held after $um returned"
		fsck_clean "$dev" "right after $um (round $r)"
	done
	echo "  $name: $n rounds clean"
}

check_type() {  # name mount options...: the type the mount shows
	local want=fuse t
	case $1 in *fuseblk*) want=fuseblk ;; *helper) want=fuse.zlfs ;; esac
	t=$(awk -v m="$M" '$2 == m {print $3}' /proc/mounts)
	[ "$t" = "$want" ] || die "$1: /proc/mounts says type '$t', expected '$want'"
}

image_free() { flock -n "$1" true; }
# nobody holds the block device exclusively (the kernel's mount, a daemon)
bdev_free() {
	perl -e 'use Fcntl; sysopen(my $f, $ARGV[0], O_RDONLY | O_EXCL) or exit 1' "$1"
}

mkdir -p "$M"
IMG=$T/img
"$ZDEV" create "$IMG" --size 2G --zone-size 32M --conv-zones 8 >/dev/null &&
	"$MKFS" "$IMG" >/dev/null || die "create/mkfs of the image"

# ---- 1. image, zlfs-umount -------------------------------------------------------------
rounds "image, zlfs-umount" "$IMG" "$ROUNDS" "$UMOUNT" image_free

# ---- 2. image, umount(8) with the helper ---------------------------------------------------
# umount(8) runs /sbin/umount.fuse.zlfs for a mount of type fuse.zlfs only
# when it reads mountinfo: given the device, or a relative path.  For an
# absolute mount point it asks statfs, which says "fuse", and runs no helper.
umount_source() { umount "$IMG"; }
umount_relative() { (cd "$T" && umount mnt); }
if [ -n "$HELPER" ]; then
	rounds "image, umount IMAGE + helper" "$IMG" 6 umount_source image_free -o subtype=zlfs
	rounds "image, umount ./MNT + helper" "$IMG" 4 umount_relative image_free -o subtype=zlfs
else
	echo "  image, umount(8) + helper: left out (no mount namespace or overlay for /sbin)"
fi

# ---- 3. block device (loop, no zones): fuseblk, plain umount ---------------------------------
if truncate -s 2G "$T/blk.raw" && LOOP=$(losetup -f --show "$T/blk.raw" 2>/dev/null) &&
   [ -b "$LOOP" ]; then
	"$MKFS" "$LOOP" >/dev/null || die "mkfs.zlfs $LOOP"
	rounds "loop device, fuseblk, umount" "$LOOP" 15 umount bdev_free
	# a second mount of a mounted device is refused and leaves the first alone
	"$ZLFS" "$LOOP" "$M" || die "fuseblk: mount for the second-mount check"
	sums >"$T/expect"
	mkdir -p "$T/mnt2"
	"$ZLFS" "$LOOP" "$T/mnt2" 2>/dev/null && die "fuseblk: a second mount of $LOOP was accepted"
	sums >"$T/got"
	cmp -s "$T/expect" "$T/got" || die "fuseblk: the refused second mount disturbed the first"
	umount "$M" || die "fuseblk: umount"
	fsck_clean "$LOOP" "after the second-mount check"
	losetup -d "$LOOP"
	LOOP=
else
	LOOP=
	echo "  loop device, fuseblk: left out (no free loop device)"
fi

# ---- 4. fusermount3 -u still unmounts (and does not wait) ----------------------------------
"$ZLFS" "$IMG" "$M" || die "fusermount3: mount"
work 100 || die "fusermount3: writing"
sums >"$T/expect"
fusermount3 -u "$M" || die "fusermount3 -u"
flock "$IMG" true            # the daemon lets go of the image after its checkpoint
fsck_clean "$IMG" "after fusermount3 -u and the daemon's exit"
"$ZLFS" "$IMG" "$M" || die "fusermount3: remount"
sums >"$T/got"
cmp -s "$T/expect" "$T/got" || die "fusermount3: contents after the remount differ"
"$UMOUNT" "$M" || die "zlfs-umount at the end"
echo "  fusermount3 -u: unmounts"

# ---- 5. a user of the mount for a moment is waited for; one that stays is reported ---------
"$ZLFS" "$IMG" "$M" || die "busy: mount"
rm -f "$T/held"
(cd "$M" && touch "$T/held" && sleep 0.5) &
holder=$!
while [ ! -e "$T/held" ] && kill -0 "$holder" 2>/dev/null; do sleep 0.05; done
"$UMOUNT" "$M" || die "zlfs-umount gave up on a mount used for half a second"
wait "$holder"
"$ZLFS" "$IMG" "$M" || die "busy: remount"
rm -f "$T/held"
(cd "$M" && touch "$T/held" && exec sleep 600) &
holder=$!
while [ ! -e "$T/held" ] && kill -0 "$holder" 2>/dev/null; do sleep 0.05; done
"$UMOUNT" "$M" 2>/dev/null; rc=$?
kill "$holder"; wait "$holder" 2>/dev/null
[ $rc = 32 ] || die "zlfs-umount of a mount a process stays in: exit $rc, not 32 (EBUSY)"
"$UMOUNT" "$M" || die "zlfs-umount once the user left"
echo "  busy: a moment's user waited for, one that stays reported (exit 32)"

# ---- 6. only zlfs is unmounted; "not mounted"; no stray line after auto_unmount -----------
mkdir -p "$T/tmpfs" "$T/plain"
mount -t tmpfs tmpfs "$T/tmpfs" || die "tmpfs: mount"
out=$("$UMOUNT" "$T/tmpfs" 2>&1); rc=$?
[ $rc = 32 ] || die "zlfs-umount of a tmpfs: exit $rc, not 32 ($out)"
grep -q "is a tmpfs mount, not zlfs (use -f" <<<"$out" || die "zlfs-umount of a tmpfs says: $out"
mountpoint -q "$T/tmpfs" || die "zlfs-umount unmounted a tmpfs it refused"
"$UMOUNT" -f "$T/tmpfs" || die "zlfs-umount -f of a tmpfs"
mountpoint -q "$T/tmpfs" && die "zlfs-umount -f left the tmpfs mounted"
out=$("$UMOUNT" "$T/plain" 2>&1); rc=$?
[ $rc = 32 ] && [ "$out" = "zlfs-umount: $T/plain: not mounted" ] ||
	die "zlfs-umount of a plain directory: exit $rc, '$out'"
out=$("$UMOUNT" 2>&1); rc=$?
[ $rc = 1 ] && [ "$(wc -l <<<"$out")" -le 2 ] || die "zlfs-umount without a mount point: exit $rc, '$out'"
out=$("$UMOUNT" -Q "$M" 2>&1); rc=$?
[ $rc = 1 ] && grep -q -- "-Q" <<<"$out" || die "zlfs-umount -Q: exit $rc, '$out'"
# auto_unmount: fusermount3 waits beside the daemon; finding the mount gone it
# said "not mounted" on the daemon's stderr, after zlfs-umount had returned
"$ZLFS" "$IMG" "$M" -o auto_unmount 2>"$T/daemon.err" || die "auto_unmount: mount"
pgrep -f "auto_unmount.* -- $M\$" >/dev/null || die "auto_unmount: no fusermount3 helper"
"$UMOUNT" "$M" || die "auto_unmount: zlfs-umount"
while pgrep -f "auto_unmount.* -- $M\$" >/dev/null; do sleep 0.05; done   # the helper is done
[ -s "$T/daemon.err" ] && die "auto_unmount: after zlfs-umount: $(head -2 "$T/daemon.err")"
fsck_clean "$IMG" "after the auto_unmount mount"
# a mount whose daemon is gone, its source relative (fsname as given) and so
# not found from elsewhere: nothing is served there, it is unmounted
(cd "$T" && "$ZLFS" img "$M") || die "dead daemon: mount"
dpid=$(pgrep -f -- " img $M\$") || die "dead daemon: no daemon found"
kill -9 $dpid
while kill -0 $dpid 2>/dev/null; do sleep 0.05; done
(cd / && "$UMOUNT" "$M") || die "zlfs-umount of a mount whose daemon was killed"
mountpoint -q "$M" && die "zlfs-umount left a dead daemon's mount"
echo "  not zlfs: refused (tmpfs kept, -f unmounts it); a directory: not mounted; auto_unmount: silent; a dead daemon's mount: unmounted"

echo "check-umount: ok"
exit 0
