#!/bin/bash
# bench/fs-modes.sh [BUILD_DIR] [ROUNDS] - zlfs mounted through FUSE on an
# emulated image with a UFS-like service model, the three write orderings
# side by side (run as root: it mounts).
#
# Device: a 16 GiB image, 256 MiB zones (2 conventional), service model
#   queues=1,qd=32,lat_us=100,mbps=1200[,hibernate_ms=2]
# (one hardware queue 32 deep, 100 us per command, a 1200 MiB/s data link
# as a UFS 3.1 part, and with hibernate_ms the UFS legacy-mode reordering).
# The image lives in /dev/shm when it exists, so that the host's disk
# writeback does not add its own noise to the device model.
#
# 1. 4 KiB synchronous writes: fio randwrite, O_DIRECT, psync, 8 jobs x
#    32 MiB, 5 s, on a fresh filesystem per run, in zwl, nolock and zwp;
#    dispatcher merging off (sched_nomerges=1: per-command ordering, as
#    bench/ufs-modes.sh and the series' null_blk figures) and on.
# 2. Sequential 1 GiB: zlfs-bench --bs 1M --qd 32 --zones 4 (the raw
#    device), then through the mount (nolock): dd bs=1M conv=fsync into a
#    new file (buffered, the kernel's writeback cache); fio O_DIRECT 1 MiB
#    at queue depth 16 with a final fsync into a new file; and the same fio
#    job as fio runs it by default, on a file it lays out first (the timed
#    part writes the 1 GiB over it).  The kernel's FUSE turns an
#    asynchronous direct write that extends the file into a synchronous
#    one, so only the last keeps 16 writes in flight.
# Every figure is the median of ROUNDS (default 3) interleaved runs; the
# ratios are of medians from this one run.
set -eu
B=${1:-build}
R=${2:-3}
ZLFS=$B/fs/zlfs MKFS=$B/mkfs/mkfs.zlfs ZDEV=$B/fs/zlfs-zdev BENCH=$B/bench/zlfs-bench
for x in "$ZLFS" "$MKFS" "$ZDEV" "$BENCH"; do
	[ -x "$x" ] || { echo "no $x: build first (meson setup build && ninja -C build)" >&2; exit 1; }
done
command -v fio >/dev/null || { echo "fio is needed (apt-get install fio)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "run as root (it mounts)" >&2; exit 1; }

DIR=$(mktemp -d "$([ -d /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")/zlfs-bench.XXXXXX")
IMG=$DIR/fs.img
MNT=$DIR/mnt
mkdir -p "$MNT"
cleanup() {
	mountpoint -q "$MNT" && fusermount3 -u "$MNT"
	sleep 0.5
	rm -rf "$DIR"
}
trap cleanup EXIT

MODEL="queues=1,qd=32,lat_us=100,mbps=1200"
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

fresh() {  # a new image and filesystem
	rm -f "$IMG" "$IMG.zst"
	"$ZDEV" create "$IMG" --size 16G --zone-size 256M --conv-zones 2 >/dev/null
	"$MKFS" "$IMG" >/dev/null
}
mount_fs() {  # SPEC-OPTS ZLFS-OPTS
	"$ZLFS" "$IMG?$1" "$MNT" -o "$2"
}
umount_fs() {
	fusermount3 -u "$MNT"
	# the daemon writes its last checkpoint after the unmount returns
	while pgrep -f "$ZLFS $IMG" >/dev/null; do sleep 0.1; done
}

# fio write IOPS (terse v3 field 49) / bandwidth in KiB/s (field 48)
fio_iops() { fio --minimal "$@" | awk -F';' '{print $49}'; }
fio_kibs() { fio --minimal "$@" | awk -F';' '{print $48}'; }

sync_table() {  # MODEL-OPTS MERGE-OPT LABEL
	local model=$1 mopt=$2 label=$3
	declare -A iops
	local modes=(zwl nolock zwp)
	for ((r = 1; r <= R; r++)); do
		for m in "${modes[@]}"; do
			fresh
			mount_fs "$model" "mode=$m${mopt:+,$mopt}"
			iops[$m]+=" $(fio_iops --name=w --directory="$MNT" --size=32M --numjobs=8 \
				--rw=randwrite --bs=4k --direct=1 --ioengine=psync --time_based \
				--runtime=5 --group_reporting)"
			umount_fs
		done
	done
	echo "== 4 KiB O_DIRECT random writes, 8 jobs, $label"
	printf "%-8s %10s   %s\n" mode iops "iops per round"
	for m in "${modes[@]}"; do
		printf "%-8s %10s  %s\n" "$m" "$(echo "${iops[$m]}" | median)" "${iops[$m]}"
	done
	awk -v z="$(echo "${iops[zwl]}" | median)" -v n="$(echo "${iops[nolock]}" | median)" \
		-v p="$(echo "${iops[zwp]}" | median)" \
		'BEGIN { printf "nolock/zwl = %.2fx   nolock/zwp = %.2fx\n\n", n / z, n / p }'
}

seq_table() {  # MODEL-OPTS LABEL
	local model=$1 label=$2 raw="" dd="" dio="" pre=""
	for ((r = 1; r <= R; r++)); do
		rm -f "$IMG" "$IMG.zst"
		"$ZDEV" create "$IMG" --size 16G --zone-size 256M --conv-zones 2 >/dev/null
		local line
		line=$("$BENCH" --device "$IMG?$model" --mode nolock --zones 4 --bs 1M --qd 32 \
			--ios 1024 | tail -1)
		# 1 MiB commands: iops = MiB/s
		raw+=" $(echo "$line" | tr ' ' '\n' | sed -n 's/^iops=//p')"
		"$MKFS" -f "$IMG" >/dev/null
		mount_fs "$model" mode=nolock
		local t0 t1
		t0=$(date +%s.%N)
		dd if=/dev/zero of="$MNT/seq" bs=1M count=1024 conv=fsync status=none
		t1=$(date +%s.%N)
		dd+=" $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", 1024 / (b - a) }')"
		rm -f "$MNT/seq"
		dio+=" $(fio_kibs --name=s --filename="$MNT/dio" --size=1G --rw=write --bs=1M \
			--direct=1 --ioengine=libaio --iodepth=16 --end_fsync=1 --fallocate=none |
			awk '{ printf "%.0f", $1 / 1024 }')"
		rm -f "$MNT/dio"
		touch "$MNT/cp" && sync "$MNT/cp"    # a checkpoint: dio's zones become free
		pre+=" $(fio_kibs --name=s --filename="$MNT/pre" --size=1G --rw=write --bs=1M \
			--direct=1 --ioengine=libaio --iodepth=16 --end_fsync=1 |
			awk '{ printf "%.0f", $1 / 1024 }')"
		umount_fs
	done
	local r0 d0 f0 p0
	r0=$(echo "$raw" | median) d0=$(echo "$dd" | median) f0=$(echo "$dio" | median)
	p0=$(echo "$pre" | median)
	echo "== sequential 1 GiB, nolock, $label (MiB/s)"
	printf "%-52s %8s   %s\n" "zlfs-bench 1 MiB QD 32 (raw device)" "$r0" "$raw"
	printf "%-52s %8s   %s\n" "mount: dd bs=1M conv=fsync, new file" "$d0" "$dd"
	printf "%-52s %8s   %s\n" "mount: fio O_DIRECT 1 MiB QD 16 + fsync, new file" "$f0" "$dio"
	printf "%-52s %8s   %s\n" "mount: fio O_DIRECT 1 MiB QD 16 + fsync, laid out" "$p0" "$pre"
	awk -v r="$r0" -v d="$d0" -v f="$f0" -v p="$p0" \
		'BEGIN { printf "dd/raw = %.0f%%   fio-new/raw = %.0f%%   fio-laid-out/raw = %.0f%%\n\n", 100 * d / r, 100 * f / r, 100 * p / r }'
}

echo "zlfs through FUSE, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, image in $DIR"
sync_table "$MODEL,hibernate_ms=2" sched_nomerges=1 "$MODEL,hibernate_ms=2, merges off"
sync_table "$MODEL,hibernate_ms=2" "" "$MODEL,hibernate_ms=2, merges on"
seq_table "$MODEL" "$MODEL"
seq_table "$MODEL,hibernate_ms=2" "$MODEL,hibernate_ms=2"
