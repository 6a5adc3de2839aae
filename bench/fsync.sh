#!/bin/bash
# bench/fsync.sh BUILD_DIR [ROUNDS] - the cost of a 4 KiB write made durable
# through the mount: zlfs's fsync=rollforward against fsync=checkpoint, and
# against the kernel's ext4 on a loop device over the same disk.  Run as
# root (it mounts and sets up loop devices):
#
#   bash bench/fsync.sh build 3
#
# Environment: FSYNC_SECS (seconds per run, default 5), FSYNC_DIR (where the
# disk images go, default /var/tmp; must not be tmpfs).
#
# Workload (bench/fsync-bench.c, built as BUILD_DIR/bench/fsync-bench): one
# 64 MiB file, created and laid out first (written in full and fsynced,
# untimed, so the timed part overwrites allocated blocks and never changes
# the file's size), 100 untimed warm-up pairs, then for FSYNC_SECS seconds
# (default 5) a loop of buffered pwrite of 4 KiB at the next sequential
# offset (wrapping at 64 MiB) followed by fsync(2).  Each pair is timed:
# IOPS = pairs / seconds, p50 and p99 are of the pairs' latencies
# (nearest rank).  One writer, so IOPS = 1 / mean latency.
#
# Configurations, each on a fresh filesystem per run:
#   zlfs image: an emulated zoned image (zlfs-zdev create --thick, 4 GiB,
#     64 MiB zones, 8 conventional; thick: all blocks written at creation,
#     so the host allocates nothing during the runs, as ext4's journal and
#     laid-out file are allocated) in a directory on the real disk ($FSYNC_DIR, by
#     default under /var/tmp; refused if that is tmpfs), no service model:
#     commands go straight to the image file through io_uring.
#   zlfs UFS model: the UFS-like service model of bench/ufs-modes.sh,
#     queues=1,qd=32,lat_us=100,hibernate_ms=2 (every command, flushes
#     included, takes 100 us on one queue 32 deep; hibernation shuffles),
#     on a 2 GiB image with 64 MiB zones and 4 conventional ones in
#     /dev/shm.  A mem: device cannot be used: it lives in one process, so
#     what mkfs.zlfs writes there is gone before zlfs could mount it.  The
#     image in RAM plays the memory-backed device (its fdatasync costs
#     next to nothing), and 64 MiB zones because mkfs.zlfs refuses 256 MiB
#     ones at 4 GiB and below (GC's reserve would take every section).
#   each of them mounted -o fsync=rollforward (the default: fsync writes the
#     file's node blocks with the fsync mark and one flush, rolled forward at
#     mount) and -o fsync=checkpoint (a whole checkpoint per fsync).
#   zlfs image, shortpath=0: the same with every device command through
#     io_uring and its completion thread (the path before the short path:
#     the before-and-after of one run).
#   ext4 loop: mkfs.ext4 (defaults, inode tables and journal initialised at
#     mkfs) on a 4 GiB sparse file in the same directory, losetup (buffered,
#     the default), mount with default options (data=ordered, barriers).
#   fuse2fs: the same ext4 image made afresh, mounted by fuse2fs (Debian's,
#     libfuse 2, its defaults); its fsync ends in an fsync of the image.
#
# Durability.  zlfs: fsync returns after the device flush it issues has
# completed.  On an image the emulated device's flush (fs/blk/zemu.c,
# ZLFS_OP_FLUSH) is an io_uring fsync with IORING_FSYNC_DATASYNC on the image
# file, then zimg_sync() (fs/blk/zemu_image.c): fdatasync(2) of the image and
# msync(MS_SYNC) of its zone state IMAGE.zst, so the data reaches the disk's
# storage before the zone state that points at it (strace of the daemon on
# the image, which cannot see the io_uring fsync: one fdatasync and one msync
# per flush; a checkpoint-mode fsync issues two flushes).  ext4: the journal commit's flushes go to the loop
# device, which makes each one an fsync of its backing file (the
# flush_per_op column counts the flushes the loop device completed per
# pair, from /sys/block/loopN/stat).  Both therefore end in a host fsync or
# fdatasync of a file on the same disk.  In the UFS model the flush is the
# modelled 100 us plus an fdatasync of a tmpfs file.
#
# Rounds are interleaved (each configuration once per round, ROUNDS rounds,
# default 3); the table shows each configuration's median (the mean of the
# two middle values for an even count) and every round's IOPS; the ratios
# are of medians from this one run.  Per pair, from MNT/.zlfs/status: ckpt/op
# zlfs's checkpoints (1 while fsync checkpoints, near 0 once roll-forward
# fsync does not) and cmds/op the device commands its dispatcher issued
# (disp_dispatched; flushes included); flush/op, ext4's flushes as above.
# Expect about (5 + 2) s x 7 configurations per round.
set -eu
B=${1:?usage: bash bench/fsync.sh BUILD_DIR [ROUNDS]}
R=${2:-3}
SECS=${FSYNC_SECS:-5}
ZLFS=$B/fs/zlfs MKFS=$B/mkfs/mkfs.zlfs ZDEV=$B/fs/zlfs-zdev FSB=$B/bench/fsync-bench
for x in "$ZLFS" "$MKFS" "$ZDEV" "$FSB"; do
	[ -x "$x" ] || { echo "no $x: build first (meson setup $B && ninja -C $B)" >&2; exit 1; }
done
for x in mkfs.ext4 losetup fusermount3 mountpoint; do
	command -v $x >/dev/null || { echo "$x is needed" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "run as root (it mounts)" >&2; exit 1; }
case $R in '' | *[!0-9]* | 0) echo "ROUNDS must be a positive number" >&2; exit 1 ;; esac

BASE=${FSYNC_DIR:-/var/tmp}
[ "$(stat -f -c %T "$BASE")" != tmpfs ] || { echo "$BASE is tmpfs: the image must be on a disk (FSYNC_DIR=...)" >&2; exit 1; }
DIR=$(mktemp -d "$BASE/zlfs-fsync.XXXXXX")
SHM=$(mktemp -d /dev/shm/zlfs-fsync.XXXXXX)
MNT=$DIR/mnt
mkdir -p "$MNT"
PID="" LOOP=""

umount_zlfs() {
	fusermount3 -u "$MNT" || true
	# the daemon writes its last checkpoint after the unmount returns: the
	# image is free only once that process has exited
	if [ -n "$PID" ]; then
		wait "$PID" || echo "fsync.sh: zlfs exited with status $? (log: $DIR/zlfs.log)" >&2
	fi
	PID=""
}
umount_ext4() {
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=""
}
cleanup() {
	set +e
	if [ -n "$PID" ]; then
		mountpoint -q "$MNT" && fusermount3 -u "$MNT"
		# give it 10 s to write its last checkpoint, then stop it
		for ((i = 0; i < 100; i++)); do
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
	fi
	if [ -n "$LOOP" ]; then
		mountpoint -q "$MNT" && umount "$MNT"
		losetup -d "$LOOP"
	fi
	rm -rf "$DIR" "$SHM"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
median() {
	tr ' ' '\n' | grep -v '^$' | sort -g |
		awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else if (NR) printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

UFS="queues=1,qd=32,lat_us=100,hibernate_ms=2"
NAMES=(rf-img ring-img cp-img rf-ufs cp-ufs ext4 fuse2fs)
declare -A LABEL=(
	[rf-img]="zlfs fsync=rollforward | image on disk"
	[ring-img]="zlfs fsync=rollforward, shortpath=0 | image on disk"
	[cp-img]="zlfs fsync=checkpoint | image on disk"
	[rf-ufs]="zlfs fsync=rollforward | UFS model"
	[cp-ufs]="zlfs fsync=checkpoint | UFS model"
	[ext4]="kernel ext4 | loop on a file on disk"
	[fuse2fs]="fuse2fs | ext4 image file on disk"
)
TL_STAGES="write write_io fsync fsync_node_io fsync_flush host_sync outside"
declare -A IOPS P50 P99 CKPT CMDS FLUSH TL

# The images are made once (the one on disk --thick: every block written,
# so the host filesystem allocates nothing while zlfs writes, as ext4's
# journal and laid-out file are allocated before its timed part); each run
# gets a fresh filesystem from mkfs.zlfs, whose zone resets keep the blocks.
make_image() {  # IMAGE-DIR SIZE ZONE CONV [--thick]
	"$ZDEV" create "$1/zlfs.img" --size "$2" --zone-size "$3" --conv-zones "$4" ${5:-} --force >/dev/null
}
run_zlfs() {  # IMAGE-DIR SIZE ZONE CONV SPEC-SUFFIX FSYNC-MODE
	local img=$1/zlfs.img
	"$MKFS" -f "$img" >/dev/null
	sync
	"$ZLFS" "$img$5" "$MNT" -o "fsync=$6" -f >"$DIR/zlfs.log" 2>&1 &
	PID=$!
	local i
	for ((i = 0; i < 100; i++)); do
		mountpoint -q "$MNT" && break
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	mountpoint -q "$MNT" || { echo "fsync.sh: zlfs did not mount:" >&2; cat "$DIR/zlfs.log" >&2; exit 1; }
	"$FSB" "$MNT/f" --seconds "$SECS" --status "$MNT/.zlfs/status" | tail -1 >"$DIR/line"
	umount_zlfs
}

run_fuse2fs() {
	local img=$DIR/ext4.img
	rm -f "$img"
	truncate -s 4G "$img"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img"
	sync
	fuse2fs "$img" "$MNT" -f >"$DIR/fuse2fs.log" 2>&1 &
	PID=$!
	local i
	for ((i = 0; i < 100; i++)); do
		mountpoint -q "$MNT" && break
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	mountpoint -q "$MNT" || { echo "fsync.sh: fuse2fs did not mount:" >&2; cat "$DIR/fuse2fs.log" >&2; exit 1; }
	"$FSB" "$MNT/f" --seconds "$SECS" | tail -1 >"$DIR/line"
	umount_zlfs
	rm -f "$img"
}

run_ext4() {
	local img=$DIR/ext4.img
	rm -f "$img"
	truncate -s 4G "$img"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img"
	LOOP=$(losetup --find --show "$img")
	mount -t ext4 "$LOOP" "$MNT"
	sync
	"$FSB" "$MNT/f" --seconds "$SECS" --blkstat "/sys/block/${LOOP#/dev/}/stat" | tail -1 >"$DIR/line"
	umount_ext4
	rm -f "$img"
}

echo "bench/fsync.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, kernel $(uname -r)," \
	"disk directory $DIR ($(findmnt -no FSTYPE,SOURCE -T "$BASE")), $R round(s) of ${SECS} s" >&2
make_image "$DIR" 4G 64M 8 --thick
make_image "$SHM" 2G 64M 4
for ((r = 1; r <= R; r++)); do
	for n in "${NAMES[@]}"; do
		# not in $(...): the trap must see the daemon and the loop device
		rm -f "$DIR/line"
		case $n in
		rf-img) run_zlfs "$DIR" 4G 64M 8 "" rollforward ;;
		ring-img) run_zlfs "$DIR" 4G 64M 8 "?shortpath=0" rollforward ;;
		cp-img) run_zlfs "$DIR" 4G 64M 8 "" checkpoint ;;
		rf-ufs) run_zlfs "$SHM" 2G 64M 4 "?$UFS" rollforward ;;
		cp-ufs) run_zlfs "$SHM" 2G 64M 4 "?$UFS" checkpoint ;;
		ext4) run_ext4 ;;
		fuse2fs) run_fuse2fs ;;
		esac
		line=$(cat "$DIR/line")
		[ -n "$(field "$line" iops)" ] || { echo "fsync.sh: $n: no result" >&2; exit 1; }
		echo "round $r $n: $line" >&2
		IOPS[$n]+=" $(field "$line" iops)"
		P50[$n]+=" $(field "$line" lat_p50_us)"
		P99[$n]+=" $(field "$line" lat_p99_us)"
		CKPT[$n]+=" $(field "$line" ckpt_per_op)"
		CMDS[$n]+=" $(field "$line" cmd_per_op)"
		FLUSH[$n]+=" $(field "$line" flush_per_op)"
		for st in $TL_STAGES; do TL[$n.$st]+=" $(field "$line" "tl_${st}_us")"; done
	done
done

# 12345.6 -> 12,346; anything else as it is
commas() {
	case $1 in
	'' | *[!0-9.]*) echo "$1" ;;
	*) printf "%.0f" "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta' ;;
	esac
}
med() { local m; m=$(echo "$1" | median); [ -n "$m" ] && echo "$m" || echo "-"; }

echo
echo "\`bash bench/fsync.sh $B $R\` ($(date -u +%Y-%m-%d), $(nproc) cores, kernel $(uname -r);" \
	"4 KiB pwrite + fsync, sequential overwrite of a laid-out 64 MiB file, ${SECS} s per run," \
	"median of $R interleaved round(s)):"
echo
echo "| filesystem | device | IOPS | p50 µs | p99 µs | ckpt/op | cmds/op | flush/op | IOPS per round |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
declare -A MED
for n in "${NAMES[@]}"; do
	MED[$n]=$(med "${IOPS[$n]}")
	rounds=""
	for v in ${IOPS[$n]}; do rounds+="${rounds:+ / }$(commas "$v")"; done
	printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n" "${LABEL[$n]}" "$(commas "${MED[$n]}")" \
		"$(commas "$(med "${P50[$n]}")")" "$(commas "$(med "${P99[$n]}")")" \
		"$(med "${CKPT[$n]}")" "$(med "${CMDS[$n]}")" "$(med "${FLUSH[$n]}")" "$rounds"
done
echo
echo "Image on disk: zlfs-zdev 4 GiB --thick, 64 MiB zones, 8 conventional, in $BASE (no service model)." \
	"UFS model: $UFS on a 2 GiB image in /dev/shm, 64 MiB zones, 4 conventional." \
	"ext4: mkfs.ext4 defaults on a 4 GiB sparse file in $BASE, loop device (buffered)." \
	"Per write+fsync: ckpt/op zlfs checkpoints, cmds/op device commands zlfs's dispatcher issued," \
	"flush/op flushes the loop device completed."
echo
echo "zlfs's time line, µs per write+fsync pair (medians; from MNT/.zlfs/status: the WRITE and FSYNC"
echo "handlers from arrival to reply, inside them the data write, the node writes and the flush;"
echo "host sync: the device's flushes as the image backend timed them; outside: the rest of a pair,"
echo "in the kernel, FUSE's round trips and other requests):"
echo
echo "| configuration | WRITE | data write | FSYNC | node writes | flush | host sync | outside |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in rf-img ring-img rf-ufs; do
	row="| ${LABEL[$n]%% |*}, ${LABEL[$n]#*| }"
	for st in $TL_STAGES; do row+=" | $(med "${TL[$n.$st]}")"; done
	echo "$row |"
done
echo
ratio() { awk -v a="$2" -v b="$3" -v l="$1" 'BEGIN { printf "%s = %.2fx\n", l, a / b }'; }
ratio "IOPS rollforward/checkpoint, image on disk" "${MED[rf-img]}" "${MED[cp-img]}"
ratio "IOPS rollforward/ext4-loop, image on disk" "${MED[rf-img]}" "${MED[ext4]}"
ratio "IOPS rollforward/fuse2fs, image on disk" "${MED[rf-img]}" "${MED[fuse2fs]}"
ratio "IOPS rollforward shortpath=1/shortpath=0, image on disk" "${MED[rf-img]}" "${MED[ring-img]}"
awk -v a="$(med "${P50[rf-img]}")" -v b="$(med "${P50[ext4]}")" \
	'BEGIN { printf "p50 latency rollforward/ext4-loop, image on disk = %.2fx\n", a / b }'
ratio "IOPS rollforward/checkpoint, UFS model" "${MED[rf-ufs]}" "${MED[cp-ufs]}"
