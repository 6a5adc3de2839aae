#!/bin/bash
# bench/memory.sh BUILD_DIR [NFILES=1000000] [CACHE_MB=256] - the daemon's
# memory through a large create run.
#
# zlfs on an emulated zoned image on disk (sparse, 16 GiB, 64 MiB zones;
# under $ZLFS_BENCH_DIR or /var/tmp), NFILES empty files created in
# directories of 1,000 by four processes at once, then every file stat'ed.
# The kernel keeps every inode it was told about (no memory pressure on this
# machine), so the daemon is asked to remember all of them.  The daemon's
# resident set (VmRSS, and its peak VmHWM) is sampled every 2 s, with the
# cache counters of MNT/.zlfs/status.  What bounds it: cache_mb for nodes
# and directory blocks (clean and dirty), plus per inode the kernel holds
# a small record (struct zinode), plus the NAT and SIT tables, which grow
# with the device, not the files.  Prints a table of samples and the peak.
set -eu
B=$(cd "${1:?usage: memory.sh BUILD_DIR [NFILES] [CACHE_MB]}" && pwd)
N=${2:-1000000}
CMB=${3:-256}
BASE=${ZLFS_BENCH_DIR:-/var/tmp}
DIR=$(mktemp -d "$BASE/zlfs-mem.XXXXXX")
MNT=$DIR/mnt
mkdir -p "$MNT"
PID=
cleanup() {
	mountpoint -q "$MNT" && "$B/fs/zlfs-umount" "$MNT" 2>/dev/null
	[ -n "$PID" ] && kill "$PID" 2>/dev/null
	rm -rf "$DIR"
}
trap cleanup EXIT

"$B/fs/zlfs-zdev" create "$DIR/img" --size 16G --zone-size 64M --conv-zones 8 --force >/dev/null
"$B/mkfs/mkfs.zlfs" -f "$DIR/img" >/dev/null
"$B/fs/zlfs" "$DIR/img" "$MNT" -f -o "cache_mb=$CMB" >"$DIR/zlfs.log" 2>&1 &
PID=$!
for ((i = 0; i < 100; i++)); do mountpoint -q "$MNT" && break; sleep 0.1; done
mountpoint -q "$MNT" || { cat "$DIR/zlfs.log"; exit 1; }

sample() {  # PHASE
	local rss hwm st
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status")
	hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PID/status")
	st=$(grep -E '^(cached_nodes|cached_dir_blocks|cached_attrs|dirty_nodes|inodes_in_memory|checkpoints)=' \
		"$MNT/.zlfs/status" | tr '\n' ' ')
	printf '| %s | %s | %d | %d | %s |\n' "$(date +%T)" "$1" $((rss / 1024)) $((hwm / 1024)) "$st"
}

echo "# bench/memory.sh: $N files, cache_mb=$CMB, $(date -u +%F), $(uname -r), $(nproc) cores"
echo
echo "| time | phase | VmRSS MiB | VmHWM MiB | status |"
echo "| --- | --- | ---: | ---: | --- |"
python3 - "$MNT" "$N" >"$DIR/create.out" 2>&1 <<'EOF' &
import os, sys
from concurrent.futures import ProcessPoolExecutor
root, n = sys.argv[1], int(sys.argv[2])
per = 1000
def part(w):
    for d in range(w, (n + per - 1) // per, 4):
        os.mkdir(f"{root}/d{d}")
        for i in range(min(per, n - d * per)):
            os.close(os.open(f"{root}/d{d}/f{i}", os.O_CREAT | os.O_WRONLY, 0o644))
    return 0
with ProcessPoolExecutor(4) as ex:
    list(ex.map(part, range(4)))
print("created")
EOF
CPID=$!
t0=$(date +%s)
k=0
while kill -0 "$CPID" 2>/dev/null; do
	sleep 2
	k=$((k + 1))
	[ $((k % 10)) = 0 ] && sample create
done
wait "$CPID" || { cat "$DIR/create.out"; exit 1; }
t1=$(date +%s)
sample "created $N in $((t1 - t0)) s"
python3 - "$MNT" "$N" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for d in range((n + 999) // 1000):
    for i in range(min(1000, n - d * 1000)):
        os.stat(f"{root}/d{d}/f{i}")
EOF
sample "stat of every file"
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PID/status")
echo
echo "peak resident set: $((hwm / 1024)) MiB (cache_mb=$CMB; files $N)"
"$B/fs/zlfs-umount" "$MNT"
wait "$PID" || true
PID=
fsck.f2fs --dry-run "$DIR/img" >"$DIR/fsck.out" 2>&1 && echo "fsck.f2fs: clean" ||
	{ tail -20 "$DIR/fsck.out"; echo "fsck.f2fs: NOT clean"; }
