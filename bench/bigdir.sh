#!/bin/bash
# bench/bigdir.sh BUILD_DIR [NFILES=1000000] [ROUNDS=1] - one directory of
# NFILES entries against the same number of files in directories of 1,000:
# create, stat (lookup) and unlink rates.
#
#   bash bench/bigdir.sh build 1000000 1
#
# zlfs on an emulated zoned image on disk (sparse, 16 GiB, 64 MiB zones;
# under $ZLFS_BENCH_DIR or /var/tmp), made afresh for each run; the load is
# bench/meta-bench (one thread, empty files, cold start: the kernel's
# dentry and inode caches dropped every 5,000 files, so each stat is a
# FUSE lookup and each create a negative lookup first).  "wide" puts
# directories of 1,000 under one root, "one" puts every file in one
# directory: F2FS's multi-level hash directory then has its full depth
# (a lookup reads one bucket, 2 or 4 blocks, per level).  Between stat and
# unlink, readdir: every entry listed (find -mindepth 3, the host's caches
# dropped first) and the daemon's VmRSS before and after it, so a
# directory of a million entries is seen to stream (the daemon keeps no
# per-directory state; the kernel keeps the listing in its page cache).
# Rounds alternate the two shapes; prints the samples and, per shape and
# phase, the median rate, then one / wide.  Run as root (it mounts).
set -eu
B=$(cd "${1:?usage: bigdir.sh BUILD_DIR [NFILES] [ROUNDS]}" && pwd)
N=${2:-1000000}
ROUNDS=${3:-1}
. "$(dirname "$0")/lib.sh"
bench_scratch bigdir

rss_of() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# readdir_phase SHAPE PID: "SHAPE readdir entries_per_s" and
# "SHAPE readdir_rss_kib before after"
readdir_phase() {
	local t0 t1 n r0
	sync
	echo 3 > /proc/sys/vm/drop_caches
	r0=$(rss_of "$2")
	t0=$(date +%s.%N)
	n=$(find "$MNT" -mindepth 3 | wc -l)
	t1=$(date +%s.%N)
	[ "$n" -eq "$N" ] || { echo "readdir listed $n entries of $N" >&2; exit 1; }
	echo "$1 readdir $(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')"
	echo "$1 readdir_rss_kib $r0 $(rss_of "$2")"
}

# run SHAPE PER_DIR: "SHAPE phase ops_per_s" for create, stat, readdir, unlink
run() {
	local pid phase
	"$B/fs/zlfs-zdev" create "$DIR/img" --size 16G --zone-size 64M --conv-zones 8 \
		--force >/dev/null
	"$B/mkfs/mkfs.zlfs" -f "$DIR/img" >/dev/null
	"$B/fs/zlfs" "$DIR/img" "$MNT"
	pid=$(pgrep -f "^$B/fs/zlfs $DIR/img $MNT" | head -1)
	for phase in create stat readdir unlink; do
		if [ "$phase" = readdir ]; then
			readdir_phase "$1" "$pid"
			continue
		fi
		echo "$1 $phase $("$B/bench/meta-bench" "$phase" "$MNT" --files "$N" --per-dir "$2" |
			sed -n 's/.* ops_per_s=\([0-9.]*\).*/\1/p')"
	done
	"$B/fs/zlfs-umount" "$MNT"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	rm -f "$DIR/img"
}

echo "# bench/bigdir.sh: $N files, $ROUNDS rounds, $(date -u +%F), $(nproc) cores"
echo "samples: shape phase ops_per_s"
for ((r = 1; r <= ROUNDS; r++)); do
	run wide 1000 | tee -a "$DIR/samples"
	run one "$N" | tee -a "$DIR/samples"
done
echo
median() { awk -v s="$1" -v p="$2" '$1 == s && $2 == p {print $3}' "$DIR/samples" | sort -n |
	awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "| phase | directories of 1,000 (ops/s) | one directory of $N (ops/s) | one / wide |"
echo "|---|---:|---:|---:|"
for p in create stat readdir unlink; do
	w=$(median wide "$p")
	o=$(median one "$p")
	printf "| %s | %.0f | %.0f | %.2f |\n" "$p" "$w" "$o" "$(awk -v a="$o" -v b="$w" 'BEGIN { print a / b }')"
done
echo
echo "daemon VmRSS before and after readdir (KiB), per round:"
awk '$2 == "readdir_rss_kib" { print "  " $1 ": " $3 " -> " $4 }' "$DIR/samples"
