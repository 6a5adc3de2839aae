#!/bin/bash
# check-bench.sh BUILD_DIR - zlfs-bench verifies in every mode on the
# UFS-like emulated device, with the reordering on, and on an image; the
# figures are printed, not judged (that is bench/ufs-modes.sh's job), but
# nolock must have met and recovered from unaligned writes.
set -eu
B=$1
D="mem:size=1G,zone_size=64M,conv_zones=4,queues=1,qd=32,lat_us=100,hibernate_ms=2"
fail() { echo "check-bench: $*" >&2; exit 1; }
for mode in zwl nolock zwp; do
	out=$($B/bench/zlfs-bench --device "$D" --mode $mode --zones 2 --bs 4K --qd 32 --ios 4000) ||
		fail "$mode: $(echo "$out" | tail -3)"
	last=$(echo "$out" | tail -1)
	echo "$mode: $last"
	case "$last" in *" failed=0 verify=ok") ;; *) fail "$mode: $last" ;; esac
	if [ $mode = nolock ]; then
		r=$(echo "$last" | sed 's/.* retries=\([0-9]*\).*/\1/')
		[ "$r" -gt 0 ] || fail "nolock met no reordering: $last"
	fi
done
out=$($B/bench/zlfs-bench --device "$D" --mode nolock --zones 1 --bs 4K --qd 32 --ios 4000 --conv)
echo "conv: $(echo "$out" | tail -1)"
echo "$out" | tail -1 | grep -q "failed=0 verify=ok$" || fail "conv"
# several hardware queues also reorder (commands race across queues)
out=$($B/bench/zlfs-bench --device "mem:size=1G,zone_size=64M,queues=4,qd=8,lat_us=50" \
	--mode nolock --zones 3 --bs 8K --qd 32 --ios 6000 --merges)
echo "4 queues: $(echo "$out" | tail -1)"
echo "$out" | tail -1 | grep -q "failed=0 verify=ok$" || fail "4 queues"
# an image with the service model
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$B/fs/zlfs-zdev create "$T/i.img" --size 512M --zone-size 32M --conv-zones 2 >/dev/null
out=$($B/bench/zlfs-bench --device "$T/i.img?qd=16,lat_us=20,hibernate_ms=1" --mode nolock \
	--zones 2 --bs 16K --qd 16 --ios 2000)
echo "image: $(echo "$out" | tail -1)"
echo "$out" | tail -1 | grep -q "failed=0 verify=ok$" || fail "image"
echo "check-bench: ok"
