#!/bin/bash
# bench/seqwrite.sh BUILD_DIR [ROUNDS] - sequential 1 GiB buffered write
# (dd bs=1M conv=fsync of non-zero data into a new file) and the read back
# after dropping the page cache (dd bs=1M to /dev/null), through zlfs on an
# emulated zoned image on the disk, the same in /dev/shm, and the kernel's
# ext4 on a loop device over a file on the same disk.  Run as root.
#
#   bash bench/seqwrite.sh build/dev 3
#
# Environment: SEQ_DIR (where the disk images go, default /var/tmp; must
# not be tmpfs), SEQ_MB (MiB written, default 1024), SEQ_COMPARE (another
# build directory, say of the commit before a change: its zlfs runs the
# zlfs-disk and zlfs-shm configurations too, in the same rounds, as
# old-disk and old-shm), SEQ_CONFIGS (which configurations, default all).
#
# Configurations, each on a fresh filesystem per run, interleaved (each
# once per round):
#   ext4      mkfs.ext4 (inode tables and journal initialised at mkfs) on a
#             4 GiB sparse file in SEQ_DIR, losetup (buffered), default mount.
#   zlfs-disk zlfs-zdev create (sparse), 4 GiB, 64 MiB zones, 8 conventional,
#             in SEQ_DIR; mkfs.zlfs; the zlfs daemon with its defaults.
#   zlfs-thick the same image made --thick.
#   zlfs-shm  the same sparse image in /dev/shm.
#   old-disk, old-shm  zlfs-disk and zlfs-shm with SEQ_COMPARE's build.
# Prints a markdown table (median and every round, MB/s) and the ratios of
# medians to ext4; the per-round lines go to stderr.  The cleanup (trap)
# unmounts, detaches the loop device and removes the images.
# The source is a file of random bytes in /dev/shm made once.  Before each
# write and each read: sync and echo 3 > /proc/sys/vm/drop_caches.  Times
# are wall clock around dd (the write includes its fsync; the unmount is
# not timed).  MB/s = 10^6 bytes per second.  Only ratios within one run
# mean anything on a shared machine.
set -eu
B=${1:?usage: bash bench/seqwrite.sh BUILD_DIR [ROUNDS]}
R=${2:-3}
MB=${SEQ_MB:-1024}
ZLFS=$B/fs/zlfs MKFS=$B/mkfs/mkfs.zlfs ZDEV=$B/fs/zlfs-zdev
for x in "$ZLFS" "$MKFS" "$ZDEV"; do
	[ -x "$x" ] || { echo "no $x: build first (meson setup $B && ninja -C $B)" >&2; exit 1; }
done
for x in mkfs.ext4 losetup fusermount3 mountpoint dd; do
	command -v $x >/dev/null || { echo "$x is needed" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "run as root (it mounts, drops caches)" >&2; exit 1; }
case $R in '' | *[!0-9]* | 0) echo "ROUNDS must be a positive number" >&2; exit 1 ;; esac

BASE=${SEQ_DIR:-/var/tmp}
[ "$(stat -f -c %T "$BASE")" != tmpfs ] || { echo "$BASE is tmpfs: SEQ_DIR must be on a disk" >&2; exit 1; }
DIR=$(mktemp -d "$BASE/zlfs-seq.XXXXXX")
SHM=$(mktemp -d /dev/shm/zlfs-seq.XXXXXX)
MNT=$DIR/mnt
mkdir -p "$MNT"
PID="" LOOP=""

cleanup() {
	set +e
	if [ -n "$PID" ]; then
		mountpoint -q "$MNT" && fusermount3 -u "$MNT"
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

now() { date +%s.%N; }
mbps() { awk -v s="$1" -v e="$2" -v mb="$MB" 'BEGIN { printf "%.0f\n", mb * 1048576 / 1e6 / (e - s) }'; }
median() {
	tr ' ' '\n' | grep -v '^$' | sort -g |
		awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else if (NR) printf "%.0f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
dropcaches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# the timed part, on whatever is mounted at MNT: sets W and RD (MB/s)
measure() {
	dropcaches
	local s e
	s=$(now)
	dd if="$SHM/src" of="$MNT/f" bs=1M count="$MB" conv=fsync status=none
	e=$(now)
	W=$(mbps "$s" "$e")
	dropcaches
	s=$(now)
	dd if="$MNT/f" of=/dev/null bs=1M status=none
	e=$(now)
	RD=$(mbps "$s" "$e")
	cmp -n $((MB << 20)) "$SHM/src" "$MNT/f" || { echo "seqwrite.sh: data read back differs" >&2; exit 1; }
}

run_zlfs() {  # BUILD-DIR IMAGE-DIR [--thick]
	local img=$2/zlfs.img
	"$1/fs/zlfs-zdev" create "$img" --size 4G --zone-size 64M --conv-zones 8 ${3:-} --force >/dev/null
	"$1/mkfs/mkfs.zlfs" -f "$img" >/dev/null
	"$1/fs/zlfs" "$img" "$MNT" -f >"$DIR/zlfs.log" 2>&1 &
	PID=$!
	local i
	for ((i = 0; i < 100; i++)); do
		mountpoint -q "$MNT" && break
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	mountpoint -q "$MNT" || { echo "seqwrite.sh: zlfs did not mount:" >&2; cat "$DIR/zlfs.log" >&2; exit 1; }
	measure
	fusermount3 -u "$MNT"
	# the daemon writes its last checkpoint after the unmount returns
	wait "$PID" || echo "seqwrite.sh: zlfs exited with status $? (log: $DIR/zlfs.log)" >&2
	PID=""
	rm -f "$img" "$img.zst"
}

run_ext4() {
	local img=$DIR/ext4.img
	rm -f "$img"
	truncate -s 4G "$img"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img"
	LOOP=$(losetup --find --show "$img")
	mount -t ext4 "$LOOP" "$MNT"
	measure
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=""
	rm -f "$img"
}

echo "bench/seqwrite.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, kernel $(uname -r)," \
	"disk directory $DIR ($(findmnt -no FSTYPE,SOURCE -T "$BASE")), $R round(s) of $MB MiB" >&2
dd if=/dev/urandom of="$SHM/src" bs=1M count="$MB" status=none

OLD=${SEQ_COMPARE:-}
if [ -n "$OLD" ]; then
	[ -x "$OLD/fs/zlfs" ] || { echo "SEQ_COMPARE: no $OLD/fs/zlfs" >&2; exit 1; }
	NAMES=(ext4 zlfs-disk old-disk zlfs-thick zlfs-shm old-shm)
else
	NAMES=(ext4 zlfs-disk zlfs-thick zlfs-shm)
fi
[ -n "${SEQ_CONFIGS:-}" ] && read -r -a NAMES <<<"$SEQ_CONFIGS"
declare -A LABEL=(
	[ext4]="kernel ext4, loop on a file on disk"
	[zlfs-disk]="zlfs, image on disk"
	[zlfs-thick]="zlfs, --thick image on disk"
	[zlfs-shm]="zlfs, image in /dev/shm"
	[old-disk]="zlfs ($OLD), image on disk"
	[old-shm]="zlfs ($OLD), image in /dev/shm"
)
declare -A WS RS
for ((r = 1; r <= R; r++)); do
	for n in "${NAMES[@]}"; do
		case $n in
		ext4) run_ext4 ;;
		zlfs-disk) run_zlfs "$B" "$DIR" ;;
		zlfs-thick) run_zlfs "$B" "$DIR" --thick ;;
		zlfs-shm) run_zlfs "$B" "$SHM" ;;
		old-disk) run_zlfs "$OLD" "$DIR" ;;
		old-shm) run_zlfs "$OLD" "$SHM" ;;
		*) echo "seqwrite.sh: no configuration $n" >&2; exit 1 ;;
		esac
		echo "round $r $n: write $W MB/s, read $RD MB/s" >&2
		WS[$n]+=" $W"
		RS[$n]+=" $RD"
	done
done

echo
echo "\`bash bench/seqwrite.sh $B $R\` ($(date -u +%Y-%m-%d), $(nproc) cores, kernel $(uname -r);" \
	"dd bs=1M of $MB MiB of random data, conv=fsync, then read back after drop_caches;" \
	"median of $R interleaved round(s), MB/s):"
echo
echo "| filesystem | write MB/s | read MB/s | write per round | read per round |"
echo "| --- | ---: | ---: | --- | --- |"
declare -A MW MR
for n in "${NAMES[@]}"; do
	MW[$n]=$(echo "${WS[$n]}" | median)
	MR[$n]=$(echo "${RS[$n]}" | median)
	printf "| %s | %s | %s | %s | %s |\n" "${LABEL[$n]}" "${MW[$n]}" "${MR[$n]}" \
		"$(echo ${WS[$n]} | sed 's# # / #g')" "$(echo ${RS[$n]} | sed 's# # / #g')"
done
echo
ratio() { awk -v a="$2" -v b="$3" -v l="$1" 'BEGIN { if (a != "" && b > 0) printf "- %s = %.2fx\n", l, a / b }'; }
if [ -n "${MW[ext4]:-}" ]; then
	for n in "${NAMES[@]}"; do
		[ "$n" = ext4 ] && continue
		ratio "write $n/ext4" "${MW[$n]}" "${MW[ext4]}"
		ratio "read $n/ext4" "${MR[$n]}" "${MR[ext4]}"
	done
fi
