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
# (a lookup reads one bucket, 2 or 4 blocks, per level). Rounds alternate
# the two shapes; prints the samples and, per shape and phase, the median
# rate, then one / wide.  Run as root (it mounts).
set -eu
B=$(cd "${1:?usage: bigdir.sh BUILD_DIR [NFILES] [ROUNDS]}" && pwd)
N=${2:-1000000}
ROUNDS=${3:-1}
. "$(dirname "$0")/lib.sh"
bench_scratch bigdir

# run SHAPE PER_DIR: "SHAPE phase ops_per_s" for create, stat, unlink
run() {
	local pid phase
	"$B/fs/zlfs-zdev" create "$DIR/img" --size 16G --zone-size 64M --conv-zones 8 \
		--force >/dev/null
	"$B/mkfs/mkfs.zlfs" -f "$DIR/img" >/dev/null
	"$B/fs/zlfs" "$DIR/img" "$MNT"
	pid=$(pgrep -f "^$B/fs/zlfs $DIR/img $MNT" | head -1)
	for phase in create stat unlink; do
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
for p in create stat unlink; do
	w=$(median wide "$p")
	o=$(median one "$p")
	printf "| %s | %.0f | %.0f | %.2f |\n" "$p" "$w" "$o" "$(awk -v a="$o" -v b="$w" 'BEGIN { print a / b }')"
done
