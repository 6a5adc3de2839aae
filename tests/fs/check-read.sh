#!/bin/bash
# tests/fs/check-read.sh BUILD_DIR - reads through the mount (fs/fuse_file.c
# zl_read): answered by splice from the image (read_splices in .zlfs/status)
# or copied through a buffer, the same bytes either way:
#   - splice: a dense file of 3 MiB, a sparse one (holes, a tail ending
#     inside a block), one of 5,000 bytes, one inside the inode, and two
#     written in turns 64 KiB at a time (each in pieces on the device:
#     answers of several pieces, which are copied, not spliced); read
#     cold after a remount, buffered and O_DIRECT, with -o max_read as the
#     user sets it; equal to the copies kept in /dev/shm, read_splices up;
#   - several devices: a file on a volume of a metadata image and a zoned
#     one (mkfs.zlfs -c) read by splice, right;
#   - the copy where the device must see each read: with a service model
#     (the UFS-like one) and with a read fault armed far ahead, nothing is
#     spliced and every byte is right;
#   - while GC moves blocks: a file read O_DIRECT over and over while
#     another writer churns a small volume until GC has moved data; each
#     read equal to the copy;
#   - fsck.f2fs and fsck.zlfs clean after each part.
# Prints "check-read: CHECK ok (note)" or "... FAIL why" per check, then the
# verdict.  Exit 77 without root, /dev/fuse, python3 or fsck.f2fs.
NAME=check-read
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_tools python3 cmp
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"

M=$T/m

splices() { sed -n 's/^read_splices=//p' "$1/.zlfs/status"; }

# zimg IMG SIZE: a fresh emulated zoned image of SIZE with mkfs.zlfs on it
zimg() {
	rm -f "$1" "$1.zst"
	"$ZDEV" create "$1" --size "$2" --zone-size 4M --conv-zones 8 --force >/dev/null &&
		"$MKFS" -f "$1" >/dev/null || { WHY="create/mkfs of $1 failed"; return 1; }
}

# files DIR: the test files, written into DIR
files() {
	python3 - "$1" <<'EOF'
import os, sys
d = sys.argv[1]
def put(name, chunks, size):
    with open(os.path.join(d, name), 'wb') as f:
        for off, data in chunks:
            f.seek(off)
            f.write(data)
        f.truncate(size)
put('dense', [(0, os.urandom(3 << 20))], 3 << 20)
# holes between the pieces and at the end; the tail ends inside a block
put('sparse', [(0, os.urandom(100000)), (2 << 20, os.urandom(700001)),
               (5 << 20, os.urandom(4096 * 3 + 17))], (5 << 20) + 4096 * 3 + 17)
put('small', [(0, os.urandom(5000))], 5000)
put('tiny', [(0, os.urandom(300))], 300)
put('fa', [(0, os.urandom(4 << 20))], 4 << 20)
put('fb', [(0, os.urandom(4 << 20))], 4 << 20)
EOF
}

# copy_in MNT: the test files into MNT; fa and fb written in turns, 64 KiB
# at a time, O_DIRECT, so that each is in pieces on the device
copy_in() {
	cp "$REF"/dense "$REF"/sparse "$REF"/small "$REF"/tiny "$1"/ &&
		python3 - "$REF" "$1" <<'EOF' && sync
import mmap, os, sys
ref, d = sys.argv[1], sys.argv[2]
src = [open(os.path.join(ref, n), 'rb').read() for n in ('fa', 'fb')]
fds = [os.open(os.path.join(d, n), os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644) for n in ('fa', 'fb')]
buf = mmap.mmap(-1, 64 << 10)
for k in range(0, 4 << 20, 64 << 10):
    for fd, data in zip(fds, src):
        buf[:] = data[k:k + (64 << 10)]
        os.pwrite(fd, buf, k)
for fd in fds:
    os.close(fd)
EOF
}

# same DIR [dd flags]: every test file in DIR equal to its copy in REF
same() {
	local f
	for f in dense sparse small tiny fa fb; do
		if [ -n "${2:-}" ] && [ "$f" != tiny ] && [ "$f" != small ]; then
			dd if="$1/$f" of="$T/got" bs=1M "$2" status=none || { WHY="dd $2 $f failed"; return 1; }
			cmp -s "$T/got" "$REF/$f" || { WHY="$f read $2 differs from its copy"; return 1; }
		else
			cmp -s "$1/$f" "$REF/$f" || { WHY="$f differs from its copy"; return 1; }
		fi
	done
}

spliced() {
	local img=$T/s.img s0 s1 s2
	zimg "$img" 256M || return 1
	mnt "$img" "$M" || return 1
	copy_in "$M" || { WHY="copy in failed"; umnt "$M" "$img"; return 1; }
	umnt "$M" "$img" || return 1
	mnt "$img" "$M" || return 1
	same "$M" || { umnt "$M" "$img"; return 1; }
	s0=$(splices "$M")
	drop_caches
	same "$M" iflag=direct || { umnt "$M" "$img"; return 1; }
	s1=$(splices "$M")
	umnt "$M" "$img" || return 1
	[ "${s0:-0}" -gt 0 ] && [ "${s1:-0}" -gt "$s0" ] ||
		{ WHY="read_splices $s0 after buffered reads, $s1 after O_DIRECT: nothing spliced"; return 1; }
	# the user's max_read: READs that size, still spliced, still right
	mnt "$img" "$M" -o max_read=131072 || return 1
	grep -q "max_read=131072" /proc/mounts || { WHY="max_read=131072 not in /proc/mounts"; umnt "$M" "$img"; return 1; }
	same "$M" || { umnt "$M" "$img"; return 1; }
	s2=$(splices "$M")
	umnt "$M" "$img" || return 1
	[ "${s2:-0}" -gt 0 ] || { WHY="nothing spliced under max_read=131072"; return 1; }
	fsck_clean "$img" || return 1
	NOTE="$s0 READs spliced buffered, $((s1 - s0)) O_DIRECT, $s2 at max_read=131072"
}

devices() {
	local meta=$T/meta.img zns=$T/zns.img n
	rm -f "$meta" "$zns" "$zns.zst"
	truncate -s 64M "$meta" &&
		"$ZDEV" create "$zns" --size 256M --zone-size 4M --force >/dev/null &&
		"$MKFS" -f -c "$zns" "$meta" >/dev/null || { WHY="mkfs.zlfs -c failed"; return 1; }
	mnt "$meta" "$M" || return 1
	copy_in "$M" || { WHY="copy in failed"; umnt "$M" "$meta"; return 1; }
	umnt "$M" "$meta" || return 1
	mnt "$meta" "$M" || return 1
	same "$M" || { umnt "$M" "$meta"; return 1; }
	n=$(splices "$M")
	umnt "$M" "$meta" || return 1
	[ "${n:-0}" -gt 0 ] || { WHY="nothing spliced on two devices"; return 1; }
	fsck_clean "$meta" || return 1
	NOTE="$n READs spliced"
}

# copied SPEC_OPTIONS: mounted with the image's spec options, nothing spliced, all right
copied() {
	local img=$T/c.img n
	zimg "$img" 256M || return 1
	mnt "$img" "$M" || return 1
	copy_in "$M" || { WHY="copy in failed"; umnt "$M" "$img"; return 1; }
	umnt "$M" "$img" || return 1
	mnt "$img?$1" "$M" || return 1
	same "$M" && same "$M" iflag=direct || { umnt "$M" "$img"; return 1; }
	n=$(splices "$M")
	umnt "$M" "$img" || return 1
	[ "${n:-1}" = 0 ] || { WHY="$n READs spliced with $1: the device would not see them"; return 1; }
	fsck_clean "$img"
}

# under_gc: a file read O_DIRECT again and again while a writer makes GC move blocks
under_gc() {
	local img=$T/g.img moved bad lost
	zimg "$img" 160M || return 1
	mnt "$img" "$M" -o gc=urgent || return 1
	cp "$REF/dense" "$M/keep" && sync || { WHY="copy in failed"; umnt "$M" "$img"; return 1; }
	python3 - "$M" <<'EOF' &
import os, sys
d = sys.argv[1]
# 20 files of 2 MiB in turn on a 160 MiB volume (df: 54 MiB available; with
# keep, 43 MiB live: a fuller volume can meet ENOSPC, as it should), each
# rewritten in 64 KiB pieces so sections fill with mixed live and dead
# blocks: GC must copy
data = os.urandom(2 << 20)
for r in range(18):
    for i in range(20):
        p = os.path.join(d, 'c%02d' % i)
        with open(p, 'r+b' if os.path.exists(p) else 'wb') as f:
            for k in range(0, 2 << 20, 128 << 10):
                f.seek(k + (r % 2) * (64 << 10))
                f.write(data[k:k + (64 << 10)])
            os.fsync(f.fileno())
EOF
	local w=$! i=0
	bad=0
	while kill -0 "$w" 2>/dev/null; do
		dd if="$M/keep" of="$T/got" bs=1M iflag=direct status=none || bad=1
		cmp -s "$T/got" "$REF/dense" || bad=1
		i=$((i + 1))
	done
	wait "$w" || { WHY="the churning writer failed"; umnt "$M" "$img"; return 1; }
	moved=$(sed -n 's/^gc_data_blocks_moved=//p' "$M/.zlfs/status")
	lost=$(sed -n 's/^wb_lost_writes=//p' "$M/.zlfs/status")
	umnt "$M" "$img" || return 1
	[ "$lost" = 0 ] || { WHY="wb_lost_writes=$lost: writeback found no room"; return 1; }
	[ "$bad" = 0 ] || { WHY="a read of keep differed from its copy while GC ran"; return 1; }
	[ "${moved:-0}" -gt 0 ] || { WHY="GC moved no data block: the check proved nothing"; return 1; }
	fsck_clean "$img" || return 1
	NOTE="$i reads, $moved data blocks moved by GC"
}

files "$REF" || die "cannot write the reference files"
check "spliced: dense, sparse, 5,000-byte, inline and fragmented files, cold, buffered and O_DIRECT, max_read" spliced
check "spliced on a volume of two devices (mkfs.zlfs -c)" devices
check "copied under a service model (UFS-like): nothing spliced, all right" copied "queues=1,qd=32,lat_us=20"
check "copied with a read fault armed: nothing spliced, all right" copied "fail_read=1000000000"
check "reads right while GC moves blocks" under_gc
finish
