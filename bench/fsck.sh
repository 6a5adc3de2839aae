#!/bin/bash
# bench/fsck.sh BUILD_DIR [NFILES=1000000] [ROUNDS=3] - fsck.zlfs against
# fsck.f2fs on the same volume: time and peak memory.
#
# A zlfs volume on an emulated zoned image on disk (sparse, 16 GiB, 64 MiB
# zones; under $ZLFS_BENCH_DIR or /var/tmp) gets NFILES files through the
# mount, in directories of 1,000 by four processes at once; every tenth
# file holds 6 KiB (a data block and a tail), the rest are empty.  Then, in
# ROUNDS interleaved rounds, the page cache dropped before each run:
#   fsck.zlfs -f -n IMG          (full check, writes nothing)
#   fsck.f2fs --dry-run -f IMG   (Debian's f2fs-tools, full check)
# each under /usr/bin/time (elapsed seconds, peak resident set).  Both must
# find the volume clean.  Prints the rounds, the medians and the ratios.
set -eu
B=$(cd "${1:?usage: fsck.sh BUILD_DIR [NFILES] [ROUNDS]}" && pwd)
N=${2:-1000000}
R=${3:-3}
. "$(dirname "$0")/lib.sh"
bench_scratch fsck
command -v /usr/bin/time >/dev/null || { echo "bench/fsck.sh: /usr/bin/time missing (Debian package time)"; exit 1; }

"$B/fs/zlfs-zdev" create "$DIR/img" --size 16G --zone-size 64M --conv-zones 8 --force >/dev/null
"$B/mkfs/mkfs.zlfs" -f "$DIR/img" >/dev/null
"$B/fs/zlfs" "$DIR/img" "$MNT"
t0=$(date +%s)
python3 - "$MNT" "$N" <<'EOF'
import os, sys
from concurrent.futures import ProcessPoolExecutor
root, n = sys.argv[1], int(sys.argv[2])
per = 1000
data = b"z" * 6144
def part(w):
    for d in range(w, (n + per - 1) // per, 4):
        os.mkdir(f"{root}/d{d}")
        for i in range(min(per, n - d * per)):
            fd = os.open(f"{root}/d{d}/f{i}", os.O_CREAT | os.O_WRONLY, 0o644)
            if i % 10 == 0:
                os.write(fd, data)
            os.close(fd)
    return 0
with ProcessPoolExecutor(4) as ex:
    list(ex.map(part, range(4)))
EOF
"$B/fs/zlfs-umount" "$MNT"
t1=$(date +%s)
echo "# bench/fsck.sh: $N files made through the mount in $((t1 - t0)) s; $(date -u +%F), $(uname -r), $(nproc) cores"
echo "# image: $(du -h "$DIR/img" | cut -f1) allocated of 16 GiB; fsck.f2fs $(fsck.f2fs -V 2>&1 | head -1)"
echo
echo "| round | checker | seconds | peak MiB | exit |"
echo "| ---: | --- | ---: | ---: | ---: |"

run() {  # ROUND NAME CMD...
	local r=$1 name=$2 rc=0 secs kib
	shift 2
	sync
	echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
	/usr/bin/time -o "$DIR/time" -f '%e %M' "$@" >/dev/null 2>"$DIR/err" || rc=$?
	[ "$rc" = 0 ] || { echo "$name exited $rc:"; head "$DIR/err"; exit 1; }
	read -r secs kib <"$DIR/time"
	printf '| %d | %s | %s | %d | %d |\n' "$r" "$name" "$secs" $((kib / 1024)) "$rc"
	echo "$name $secs $((kib / 1024))" >>"$DIR/results"
}

for ((r = 1; r <= R; r++)); do
	if ((r % 2)); then
		run "$r" fsck.zlfs "$B/fsck/fsck.zlfs" -f -n "$DIR/img"
		run "$r" fsck.f2fs fsck.f2fs --dry-run -f "$DIR/img"
	else
		run "$r" fsck.f2fs fsck.f2fs --dry-run -f "$DIR/img"
		run "$r" fsck.zlfs "$B/fsck/fsck.zlfs" -f -n "$DIR/img"
	fi
done

median() {  # NAME FIELD
	awk -v n="$1" -v f="$2" '$1 == n { print $f }' "$DIR/results" | sort -n |
		awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
zt=$(median fsck.zlfs 2) ft=$(median fsck.f2fs 2)
zm=$(median fsck.zlfs 3) fm=$(median fsck.f2fs 3)
echo
echo "median: fsck.zlfs $zt s, $zm MiB; fsck.f2fs $ft s, $fm MiB"
awk -v a="$zt" -v b="$ft" 'BEGIN { printf "time fsck.zlfs/fsck.f2fs = %.2fx\n", (b > 0 ? a / b : 0) }'
awk -v a="$zm" -v b="$fm" 'BEGIN { printf "memory fsck.zlfs/fsck.f2fs = %.2fx\n", (b > 0 ? a / b : 0) }'
