#!/bin/bash
# bench/scale.sh BUILD_DIR [ROUNDS=3] - what a volume's size costs before it
# holds anything: mkfs time, mount time, and the daemon's memory mounted
# empty, for 64 GiB, 1 TiB, 4 TiB and 15 TiB (F2FS's block addresses stop
# at 16 TiB).  Run as root (it mounts).
#
#   bash bench/scale.sh build 3
#
# Each volume is an emulated zoned image, sparse (zlfs-zdev create without
# --thick: only what mkfs writes takes room on the host), 256 MiB zones as
# on host-managed SMR disks, with conventional zones for the metadata as
# mkfs.zlfs needs them for that size: 8, 16, 64, 160.  Images go under
# $ZLFS_BENCH_DIR (default /var/tmp; a 15 TiB volume's metadata takes about
# 700 MB there).  Per round and size, interleaved (sizes in turn, rounds
# around them): mkfs.zlfs, then the mount until the mount point answers
# (zlfs forks once mounted), then VmRSS of the daemon and the NAT blocks it
# holds (.zlfs/status nat_blocks_in_memory of nat_blocks, and the SIT's:
# sit_blocks_in_memory of sit_blocks), then unmount.
# Prints the samples and the medians; SCALE_SIZES picks sizes ("64G 1T").
# A size ending in p ("15Tp") is a sparse plain file instead: a device
# without zones, as a conventional disk (no zone report to skip the SIT
# of empty zones: the mount reads all of it); mkfs.zlfs makes a section
# per zone the emulator presents (2 MiB, larger past 65,536 zones).
#
# Then GC's victim selection: mounted again with gc=urgent, 48 files of 16
# MiB written (three 256 MiB sections), every other one removed, and
# background GC left to clean until it stops finding victims; the mean time
# per victim selected (.zlfs/status gc_victim_pick_ns, cost-benefit: the
# background policy) and how many.  The fill is the same at every size, so
# what changes is only how many sections the volume has.
#
# Then, once per size (not per round: it takes minutes), the files:
# SCALE_FILES empty files (1,000,000 by default; 0 leaves this out) made
# in directories of 1,000 by bench/meta-bench (two threads) on a fresh
# volume (default options: cache_mb=256), the daemon's VmRSS and peak
# (VmHWM) after the creates and again after a cold stat of every file (the
# kernel's caches dropped first, so it forgets what it had looked up), with
# the inodes and nodes the daemon holds then (.zlfs/status); then
# unmounted, and the mount time and RSS of the volume holding them against
# the same volume's empty (both mounts with the host's caches dropped
# first), and fsck.zlfs -f -n's time and peak RSS; then mounted again
# (cold), `find -type f` of every file and `rm -rf` of them all, each's rate
# and the daemon's memory after it.  The ten-million-file run:
#   SCALE_SIZES=15T SCALE_FILES=10000000 bash bench/scale.sh build 1
# (about 41 GB of image, and an hour and a half.)  (Million-entry
# directories: bench/bigdir.sh.)
set -eu
B=$(cd "${1:?usage: scale.sh BUILD_DIR [ROUNDS]}" && pwd)
ROUNDS=${2:-3}
SIZES=${SCALE_SIZES:-64G 1T 4T 15T}
FILES=${SCALE_FILES:-1000000}
. "$(dirname "$0")/lib.sh"
bench_scratch scale

conv_zones() {
	case $1 in
	64G) echo 8 ;; 1T) echo 16 ;; 4T) echo 64 ;; *) echo 160 ;;
	esac
}

now() { date +%s.%N; }
# umount_wait PID: unmount $MNT and wait for its daemon PID (the final checkpoint written)
umount_wait() {
	"$B/fs/zlfs-umount" "$MNT"
	while kill -0 "$1" 2>/dev/null; do sleep 0.1; done
}
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# gc_pick IMG: prints "picks ns_per_pick" after the fill and the cleaning above
gc_pick() {
	local i picks=-1 now=0 waited=0 pid
	"$B/fs/zlfs" "$1" "$MNT" -o gc=urgent
	pid=$(pgrep -f "^$B/fs/zlfs $1 $MNT" | head -1)
	for ((i = 0; i < 48; i++)); do
		head -c 16M /dev/urandom > "$MNT/f$i"
	done
	sync -f "$MNT"
	for ((i = 0; i < 48; i += 2)); do
		rm "$MNT/f$i"
	done
	# until a few seconds pass without a new victim (a minute at most)
	while [ "$waited" -lt 60 ]; do
		sleep 2
		waited=$((waited + 2))
		now=$(sed -n 's/^gc_victim_picks=//p' "$MNT/.zlfs/status")
		[ "$now" -gt 0 ] && [ "$now" = "$picks" ] && break
		picks=$now
	done
	echo "$now $(sed -n 's/^gc_victim_pick_ns=//p' "$MNT/.zlfs/status")"
	umount_wait "$pid"
}

# one_round SIZE: prints "SIZE mkfs_s mount_s rss_kib nat_held nat_blocks sit_held sit_blocks
# gc_picks ns_per_pick"
one_round() {
	local img=$DIR/$1.img t0 t1 t2 pid rss held all sheld sall
	if [ -f "$img" ]; then
		:
	elif [ "${1%p}" != "$1" ]; then
		truncate -s "${1%p}" "$img"
	else
		"$B/fs/zlfs-zdev" create "$img" --size "$1" --zone-size 256M \
			--conv-zones "$(conv_zones "$1")" --force >/dev/null
	fi
	t0=$(now)
	"$B/mkfs/mkfs.zlfs" -f "$img" >/dev/null
	t1=$(now)
	"$B/fs/zlfs" "$img" "$MNT"
	t2=$(now)
	pid=$(pgrep -f "^$B/fs/zlfs $img $MNT" | head -1)
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
	held=$(sed -n 's/^nat_blocks_in_memory=//p' "$MNT/.zlfs/status")
	all=$(sed -n 's/^nat_blocks=//p' "$MNT/.zlfs/status")
	sheld=$(sed -n 's/^sit_blocks_in_memory=//p' "$MNT/.zlfs/status")
	sall=$(sed -n 's/^sit_blocks=//p' "$MNT/.zlfs/status")
	umount_wait "$pid"
	echo "$1 $(secs "$t0" "$t1") $(secs "$t1" "$t2") $rss $held $all $sheld $sall $(gc_pick "$img")"
}

# rate N T0 T1: N per second
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }

# files_run SIZE: prints "SIZE files empty_mount_s create_per_s rss_kib hwm_kib inodes nodes
# stat_per_s rss_kib hwm_kib inodes nodes mount_s rss_kib fsck_s fsck_kib find_per_s rss_kib
# hwm_kib inodes nodes rm_per_s rss_kib hwm_kib inodes nodes"; the mounts timed with the
# host's caches dropped first
files_run() {
	local img=$DIR/$1.img pid t0 t1 e c s m f n fd rr
	"$B/mkfs/mkfs.zlfs" -f "$img" >/dev/null
	e=$(cold_mount "$img")
	pid=$(pgrep -f "^$B/fs/zlfs $img $MNT" | head -1)
	c=$("$B/bench/meta-bench" create "$MNT" --files "$FILES" --per-dir 1000 --threads 2 |
		sed -n 's/.*ops_per_s=\([0-9.]*\).*/\1/p')
	c="$c $(mem_of "$pid")"
	s=$("$B/bench/meta-bench" stat "$MNT" --files "$FILES" --per-dir 1000 --threads 2 |
		sed -n 's/.*ops_per_s=\([0-9.]*\).*/\1/p')
	s="$s $(mem_of "$pid")"
	umount_wait "$pid"
	m=$(cold_mount "$img")
	pid=$(pgrep -f "^$B/fs/zlfs $img $MNT" | head -1)
	m="${m%% *} $(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")"
	umount_wait "$pid"
	sync
	echo 3 > /proc/sys/vm/drop_caches
	t0=$(now)
	f=$( { /usr/bin/time -f "%M" "$B/fsck/fsck.zlfs" -f -n "$img" >/dev/null; } 2>&1 | tail -1)
	t1=$(now)
	f="$(secs "$t0" "$t1") $f"
	cold_mount "$img" >/dev/null
	pid=$(pgrep -f "^$B/fs/zlfs $img $MNT" | head -1)
	t0=$(now)
	n=$(find "$MNT" -mindepth 1 -type f | wc -l)
	t1=$(now)
	[ "$n" -eq "$FILES" ] || { echo "find saw $n files of $FILES" >&2; exit 1; }
	fd="$(rate "$n" "$t0" "$t1") $(mem_of "$pid")"
	t0=$(now)
	rm -rf "$MNT"/t*
	t1=$(now)
	rr="$(rate "$n" "$t0" "$t1") $(mem_of "$pid")"
	umount_wait "$pid"
	echo "$1 $FILES ${e%% *} $c $s $m $f $fd $rr"
}
# cold_mount IMG: the host's caches dropped, mounted; prints the seconds it took
cold_mount() {
	local t0 t1
	sync
	echo 3 > /proc/sys/vm/drop_caches
	t0=$(now)
	"$B/fs/zlfs" "$1" "$MNT"
	t1=$(now)
	secs "$t0" "$t1"
}
# mem_of PID: "VmRSS VmHWM inodes_in_memory cached_nodes" (KiB, KiB, counts)
mem_of() {
	echo "$(awk '/^VmRSS/ {r = $2} /^VmHWM/ {h = $2} END {print r, h}' "/proc/$1/status")" \
		"$(sed -n 's/^inodes_in_memory=//p' "$MNT/.zlfs/status")" \
		"$(sed -n 's/^cached_nodes=//p' "$MNT/.zlfs/status")"
}

echo "samples: size mkfs_s mount_s rss_kib nat_blocks_in_memory nat_blocks" \
	"sit_blocks_in_memory sit_blocks gc_victim_picks gc_victim_pick_ns"
for ((r = 1; r <= ROUNDS; r++)); do
	for s in $SIZES; do
		one_round "$s" | tee -a "$DIR/samples"
	done
done
echo
# median COLUMN SIZE; range COLUMN SIZE: over the rounds of one size
median() { awk -v s="$2" -v c="$1" '$1 == s {print $c}' "$DIR/samples" | sort -n |
	awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
range() { awk -v s="$2" -v c="$1" '$1 == s {print $c}' "$DIR/samples" | sort -n |
	awk '{ v[NR] = $1 } END { print v[1] "-" v[NR] }'; }
echo "| volume | mkfs s | mount s (range) | RSS mounted, empty (range) | NAT blocks held |" \
	"SIT blocks held | GC victim selection µs (range ns; victims) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for s in $SIZES; do
	printf "| %s | %s | %s (%s) | %s MiB (%s KiB) | %s of %s | %s of %s | %s (%s; %s) |\n" "$s" \
		"$(median 2 "$s")" \
		"$(median 3 "$s")" "$(range 3 "$s")" \
		"$(awk -v k="$(median 4 "$s")" 'BEGIN { printf "%.1f", k / 1024 }')" "$(range 4 "$s")" \
		"$(median 5 "$s")" "$(median 6 "$s")" "$(median 7 "$s")" "$(median 8 "$s")" \
		"$(awk -v n="$(median 10 "$s")" 'BEGIN { printf "%.1f", n / 1000 }')" \
		"$(range 10 "$s")" "$(median 9 "$s")"
done
[ "$FILES" -gt 0 ] || exit 0
echo
echo "files: size files empty_mount_s create_per_s rss_kib hwm_kib inodes nodes" \
	"stat_per_s rss_kib hwm_kib inodes nodes mount_s rss_kib fsck_s fsck_peak_kib" \
	"find_per_s rss_kib hwm_kib inodes nodes rm_per_s rss_kib hwm_kib inodes nodes"
for s in $SIZES; do
	files_run "$s" | tee -a "$DIR/files"
done
echo
echo "| volume | files | create/s | RSS after (peak; inodes, nodes held) | cold stat/s |" \
	"RSS after (peak; inodes, nodes) | mount s (empty) | RSS mounted | fsck.zlfs s | fsck.zlfs peak |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
while read -r sz n e c r h i nd st r2 h2 i2 nd2 m mr fs fk rest; do
	awk -v sz="$sz" -v n="$n" -v e="$e" -v c="$c" -v r="$r" -v h="$h" -v i="$i" -v nd="$nd" \
		-v st="$st" -v r2="$r2" -v h2="$h2" -v i2="$i2" -v nd2="$nd2" -v m="$m" -v mr="$mr" \
		-v fs="$fs" -v fk="$fk" 'BEGIN {
		printf "| %s | %d | %.0f | %.1f MiB (%.1f; %d, %d) | %.0f | %.1f MiB (%.1f; %d, %d) | %s (%s) | %.1f MiB | %s | %.1f MiB |\n",
			sz, n, c, r / 1024, h / 1024, i, nd, st, r2 / 1024, h2 / 1024, i2, nd2, m, e,
			mr / 1024, fs, fk / 1024 }'
done < "$DIR/files"
echo
echo "| volume | files | find -type f /s | RSS after (peak; inodes, nodes) | rm -rf files/s |" \
	"RSS after (peak; inodes, nodes) |"
echo "|---|---:|---:|---:|---:|---:|"
awk '{ printf "| %s | %d | %.0f | %.1f MiB (%.1f; %d, %d) | %.0f | %.1f MiB (%.1f; %d, %d) |\n",
	$1, $2, $18, $19 / 1024, $20 / 1024, $21, $22, $23, $24 / 1024, $25 / 1024, $26, $27 }' \
	"$DIR/files"
