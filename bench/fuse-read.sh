#!/bin/bash
# bench/fuse-read.sh BUILD_DIR [ROUNDS] [OLD_BUILD_DIR] - cold sequential
# reads of a 1 GiB file through the mount, zlfs against the kernel's ext4
# on a loop device and fuse2fs, all on images on the same disk.  Run as
# root (it mounts, sets up a loop device and drops the page cache):
#
#   bash bench/fuse-read.sh build 7
#   bash bench/fuse-read.sh build 7 /path/to/older/build   # zlfs before and after
#
# Environment: READ_DIR (where the images go, default /var/tmp; refused if
# tmpfs), READ_MB (the file's size, default 1024), READ_IMG_MB (the images'
# size, default 4096), READ_FS (a subset of "zlfs zlfs-old ext4 fuse2fs").
#
# Setup, once: a thick emulated zoned image of 4 GiB (64 MiB zones, 8
# conventional) made by mkfs.zlfs, and an ext4 image as large (mkfs.ext4,
# no lazy init) used by both ext4-loop and fuse2fs; on each the file is
# written from /dev/urandom and fsynced.  Each round then mounts every
# filesystem in turn, drops the page cache (sync; drop_caches 3), reads the
# file with dd bs=1M (buffered) and again, caches dropped, with dd bs=1M
# iflag=direct, and unmounts: interleaved, so the machine's noise falls on
# all alike.  A zlfs-old, when given, mounts the same zlfs image with the
# older build's daemon.  Prints every figure, then the medians (min-max)
# and their ratios to ext4-loop and fuse2fs.
set -u
export LC_ALL=C
B=$(readlink -f "${1:?usage: fuse-read.sh BUILD_DIR [ROUNDS] [OLD_BUILD_DIR]}")
ROUNDS=${2:-5}
OLD=${3:+$(readlink -f "$3")}
MB=${READ_MB:-1024}
IMG_MB=${READ_IMG_MB:-4096}
FSLIST=${READ_FS:-zlfs ${OLD:+zlfs-old} ext4 fuse2fs}
[ "$(id -u)" = 0 ] || { echo "fuse-read.sh: run as root" >&2; exit 1; }
for t in fuse2fs mkfs.ext4 losetup dd python3; do
	command -v "$t" >/dev/null || { echo "fuse-read.sh: $t is missing" >&2; exit 1; }
done
ZLFS_BENCH_DIR=${READ_DIR:-/var/tmp}
[ "$(stat -f -c %T "$ZLFS_BENCH_DIR")" = tmpfs ] && { echo "fuse-read.sh: $ZLFS_BENCH_DIR is tmpfs" >&2; exit 1; }
export ZLFS_BENCH_DIR
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_scratch fuse-read
LOOP=
cleanup() {
	mountpoint -q "$MNT" && umount "$MNT" 2>/dev/null
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	bench_cleanup
}
trap cleanup EXIT

wait_mount() {
	local i
	for i in $(seq 300); do
		mountpoint -q "$MNT" && return 0
		kill -0 "$PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# mount_fs FS
mount_fs() {
	case $1 in
	zlfs | zlfs-old)
		local bd=$B
		[ "$1" = zlfs-old ] && bd=$OLD
		"$bd/fs/zlfs" "$DIR/z.img" "$MNT" -f >>"$DIR/zlfs.log" 2>&1 &
		PID=$!
		wait_mount || { echo "fuse-read.sh: zlfs did not mount" >&2; tail -5 "$DIR/zlfs.log" >&2; exit 1; }
		;;
	ext4)
		LOOP=$(losetup -f --show "$DIR/e.img") && mount "$LOOP" "$MNT" ||
			{ echo "fuse-read.sh: ext4 mount failed" >&2; exit 1; }
		;;
	fuse2fs)
		fuse2fs "$DIR/e.img" "$MNT" -f >>"$DIR/fuse2fs.log" 2>&1 &
		PID=$!
		wait_mount || { echo "fuse-read.sh: fuse2fs did not mount" >&2; exit 1; }
		;;
	esac
}

umount_fs() {
	case $1 in
	zlfs | zlfs-old) "$B/fs/zlfs-umount" "$MNT"; wait "$PID" ;;
	ext4) umount "$MNT"; losetup -d "$LOOP"; LOOP= ;;
	fuse2fs) umount "$MNT"; wait "$PID" ;;
	esac
}

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# rate FLAGS: MB/s of one cold dd read of the file
rate() {
	local s e
	drop
	s=$(date +%s.%N)
	dd if="$MNT/f" of=/dev/null bs=1M "$@" status=none || { echo "fuse-read.sh: dd $* failed" >&2; exit 1; }
	e=$(date +%s.%N)
	python3 -c "import sys; print(round($MB / ($e - $s)))"
}

"$B/fs/zlfs-zdev" create "$DIR/z.img" --size "${IMG_MB}M" --zone-size 64M --conv-zones 8 --thick --force >/dev/null &&
	"$B/mkfs/mkfs.zlfs" -f "$DIR/z.img" >/dev/null || { echo "fuse-read.sh: zlfs image failed" >&2; exit 1; }
dd if=/dev/zero of="$DIR/e.img" bs=1M count="$IMG_MB" conv=fsync status=none &&
	mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$DIR/e.img" ||
	{ echo "fuse-read.sh: ext4 image failed" >&2; exit 1; }
for fs in zlfs ext4; do
	mount_fs "$fs"
	dd if=/dev/urandom of="$MNT/f" bs=1M count="$MB" conv=fsync status=none
	umount_fs "$fs"
done

echo "fuse-read.sh: $(date -u +%FT%TZ), commit $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null), $ROUNDS rounds, $MB MiB, images in $DIR; load $(cut -d' ' -f1-3 /proc/loadavg)"
RES=$DIR/res.txt
: >"$RES"
for r in $(seq "$ROUNDS"); do
	for fs in $FSLIST; do
		mount_fs "$fs"
		b=$(rate)
		d=$(rate iflag=direct)
		umount_fs "$fs"
		echo "round $r $fs: buffered $b MB/s, O_DIRECT $d MB/s (load $(cut -d' ' -f1 /proc/loadavg))"
		echo "$fs buffered $b" >>"$RES"
		echo "$fs direct $d" >>"$RES"
	done
done
python3 - "$RES" $FSLIST <<'EOF'
import statistics, sys
res, fss = sys.argv[1], sys.argv[2:]
v = {}
for line in open(res):
    fs, kind, x = line.split()
    v.setdefault((fs, kind), []).append(int(x))
for kind in ('buffered', 'direct'):
    med = {fs: statistics.median(v[(fs, kind)]) for fs in fss}
    print('%s reads, MB/s: ' % kind + ', '.join(
        '%s %d (%d-%d)' % (fs, med[fs], min(v[(fs, kind)]), max(v[(fs, kind)])) for fs in fss))
    for fs in fss:
        if fs.startswith('zlfs'):
            print('  %s %s: ' % (fs, kind) + ', '.join('%.2fx %s' % (med[fs] / med[p], n)
                  for p, n in (('ext4', 'ext4-loop'), ('fuse2fs', 'fuse2fs')) if p in med))
    if 'zlfs-old' in med:
        print('  zlfs / zlfs-old %s: %.2fx' % (kind, med['zlfs'] / med['zlfs-old']))
EOF
