#!/bin/bash
# check-kill.sh BUILD_DIR - the daemon killed (SIGKILL) in the middle of
# writing, several times over: every remount must succeed, what an fsync
# covered must be there byte for byte, and fsck.f2fs must find the image
# clean.  Writes made after the last checkpoint are lost (fsync writes a
# checkpoint today), and the zones they landed in must be brought back in
# line with the checkpoint at mount (regression: a log moved into a zone
# that still held such writes, and the next mount failed).
set -eu
B=$(realpath "$1")
T=$(mktemp -d)
M=$T/mnt
mkdir -p "$M" "$T/ref"
cleanup() {
	fusermount3 -uz "$M" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "check-kill: FAIL $*"; exit 1; }

daemon_pid() { pgrep -f "zlfs $T/d.img" | head -1; }

$B/fs/zlfs-zdev create "$T/d.img" --size 4G --zone-size 64M --conv-zones 8 >/dev/null
$B/mkfs/mkfs.zlfs "$T/d.img" >/dev/null
for round in 1 2 3 4 5; do
	$B/fs/zlfs "$T/d.img" "$M" || fail "round $round: mount"
	# durable: written and fsync'd
	dd if=/dev/urandom of="$T/ref/f$round" bs=64K count=$((round * 7)) status=none
	cp "$T/ref/f$round" "$M/f$round"
	sync "$M/f$round"
	# not durable: in flight when the daemon dies
	( dd if=/dev/zero of="$M/junk$round" bs=1M count=300 status=none 2>/dev/null || true ) &
	w=$!
	sleep 0.$((round + 2))
	pid=$(daemon_pid)
	[ -n "$pid" ] || fail "round $round: no daemon"
	kill -9 "$pid"
	wait "$w" 2>/dev/null || true
	fusermount3 -uz "$M" 2>/dev/null || umount -l "$M" 2>/dev/null || true
	for i in $(seq 50); do [ -z "$(daemon_pid)" ] && break; sleep 0.1; done
	out=$(fsck.f2fs --dry-run "$T/d.img" 2>&1) || true
	if echo "$out" | grep -qE '\[Fail\]|\[FAIL\]|\[ASSERT\]'; then
		echo "$out" | grep -E '\[Fail\]|\[FAIL\]|\[ASSERT\]' | head
		fail "round $round: fsck.f2fs after kill"
	fi
	$B/fs/zlfs "$T/d.img" "$M" || fail "round $round: remount after kill"
	for r in $(seq 1 $round); do
		cmp -s "$T/ref/f$r" "$M/f$r" || fail "round $round: f$r differs after kill"
	done
	rm -f "$M"/junk*
	fusermount3 -u "$M"
	for i in $(seq 50); do [ -z "$(daemon_pid)" ] && break; sleep 0.1; done
done
out=$(fsck.f2fs --dry-run "$T/d.img" 2>&1) || fail "final fsck exit"
echo "$out" | grep -qE '\[Fail\]|\[FAIL\]|\[ASSERT\]' && fail "final fsck"
echo "check-kill: ok"
