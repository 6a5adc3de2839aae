#!/bin/bash
# check-mkfs.sh BUILD_DIR - mkfs.zlfs end to end, with f2fs-tools as the
# outside judge: for images of several geometries, mkfs.zlfs then
# fsck.f2fs --dry-run must pass (exit 0, no [Fail]/[FAIL]/[ASSERT]) and
# dump.f2fs must show the root inode; the zones mkfs leaves behind must be
# empty except the logs it wrote; refusals exit 1 and leave the image alone;
# formatting twice with -f gives a checkable image.  Exit 77 without f2fs-tools.
NAME=check-mkfs
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
set -e
Z=$ZDEV
M=$MKFS
BENCH=$B/bench/zlfs-bench
fail() { echo "check-mkfs: $*" >&2; exit 1; }
need_tools fsck.f2fs dump.f2fs mkfs.f2fs mkfs.ext4 sha256sum
tmpdir

# fsck_ok IMG WHAT: fsck.f2fs --dry-run passes and dump.f2fs shows inode 3 as the root.
fsck_ok() {
	local img=$1 what=$2 out rc=0
	out=$(fsck.f2fs --dry-run "$img" 2>&1) || rc=$?
	if [ $rc != 0 ] || echo "$out" | grep -qE '\[(Fail|FAIL|ASSERT)\]|\[ASSERT'; then
		echo "$out" >&2
		fail "$what: fsck.f2fs exit $rc"
	fi
	echo "$out" | grep -q 'free segment_count matched with CP *\[Ok' || fail "$what: fsck summary"
	out=$(cd "$T" && dump.f2fs -i 3 "$img" 2>&1) || fail "$what: dump.f2fs -i 3 failed"
	echo "$out" | grep -q 'Node ID \[0x3:3\] is inode' || fail "$what: no root inode: $out"
	echo "$out" | grep -qE 'i_mode[[:space:]]+\[0x +41ed ' || fail "$what: root is not a 0755 directory"
	echo "$out" | grep -qE 'i_links[[:space:]]+\[0x +2 ' || fail "$what: root links"
}

# zones_written IMG: sequential zones that are not empty (mkfs leaves its logs closed).
zones_written() {
	$Z report "$1" | grep 'swr' | grep -vc 'swr, empty' || true
}

# mkfs_geom NAME EXPECT_LOGS ZONES_WRITTEN CREATE-ARGS...: create, format, check.
mkfs_geom() {
	local name=$1 logs=$2 written=$3 img=$T/$1.img out
	shift 3
	$Z create "$img" "$@" >/dev/null || fail "$name: create $*"
	out=$($M "$img" -l zlfs-test 2>&1) || { echo "$out" >&2; fail "$name: mkfs.zlfs failed"; }
	echo "$out" | grep -qE "^  logs: +$logs " || fail "$name: expected $logs logs: $out"
	fsck_ok "$img" "$name"
	[ "$(zones_written "$img")" = "$written" ] || fail "$name: $(zones_written "$img") zones written, not $written"
	$Z report "$img" | grep 'swr' | grep -q 'imp-open\|exp-open' && fail "$name: mkfs left a zone open"
	echo "check-mkfs: $name ok ($(echo "$out" | sed -n 's/^  main area: *//p'))"
}

mkfs_geom nolimits 6 2 --size 4G --zone-size 64M --conv-zones 8
mkfs_geom maxopen8 6 2 --size 4G --zone-size 64M --conv-zones 8 --max-open 8
mkfs_geom capacity 6 2 --size 4G --zone-size 64M --zone-capacity 48M --conv-zones 8
mkfs_geom capacity-straddle 6 2 --size 2G --zone-size 64M --zone-capacity 49M --conv-zones 4
mkfs_geom plain 6 0 --size 2G --zone-size 64M --conv-zones 32
mkfs_geom maxopen4 4 2 --size 2G --zone-size 32M --conv-zones 4 --max-open 4
mkfs_geom maxopen2 2 2 --size 1G --zone-size 16M --conv-zones 4 --max-open 2 --max-active 3
mkfs_geom zone2m-lbs512 6 2 --size 1G --zone-size 2M --conv-zones 24 --lbs 512

# the volume label lands in the superblock as UTF-16LE
[ "$(od -An -c -j $((1024 + 124)) -N 18 "$T/plain.img" | tr -d ' \n')" = 'z\0l\0f\0s\0-\0t\0e\0s\0t\0' ] ||
	fail "label not in the superblock"

# a memory device formats too (nothing to fsck afterwards)
$M "mem:size=1G,zone_size=16M,conv_zones=4,max_open=6" >/dev/null || fail "mem: device"

# state IMG: what a refused mkfs must not change - the zone state and the
# first 256 MiB (superblocks and all metadata; images are sparse, hashing
# all of them is slow)
state() {
	{ head -c 256M "$1"; cat "$1.zst"; } | md5sum
}

# refusals: exit 1, a message, the image untouched
refuse() {  # WHAT MESSAGE-REGEX IMG [ARGS...]
	local what=$1 re=$2 img=$3 out rc=0 before
	shift 3
	before=$(state "$img")
	out=$($M "$img" "$@" 2>&1) || rc=$?
	[ $rc = 1 ] || fail "$what: exit $rc, expected 1: $out"
	echo "$out" | grep -qE "$re" || fail "$what: message: $out"
	[ "$(state "$img")" = "$before" ] || fail "$what: the image was modified"
}
$Z create "$T/r1.img" --size 4G --zone-size 64M --conv-zones 1 >/dev/null
refuse "one conventional zone" "not enough conventional zones.*2 needed, 1 present" "$T/r1.img"
$Z create "$T/r2.img" --size 1G --zone-size 1M --conv-zones 64 >/dev/null
refuse "1 MiB zones" "not a multiple of 2 MiB" "$T/r2.img"
$Z create "$T/r3.img" --size 1G --zone-size 16M --conv-zones 4 --max-open 1 >/dev/null
refuse "one open zone" "needs at least 2" "$T/r3.img"
$Z create "$T/r4.img" --size 512M --zone-size 64M --conv-zones 2 >/dev/null
refuse "too small" "too small" "$T/r4.img"
refuse "existing filesystem" "contains an f2fs filesystem, label .zlfs-test., UUID .*\(use -f to overwrite it\)" "$T/nolimits.img"
refuse "bad overprovision" "overprovision" "$T/nolimits.img" -f -o 150

# Detect before destroying: what libblkid finds (a filesystem, a partition
# table, F2FS made by mkfs.f2fs) is refused without -f, named, and the image
# left byte for byte as it was; with -f it is formatted and fsck.f2fs-clean.
foreign() {  # WHAT MESSAGE-REGEX IMG
	local what=$1 re=$2 img=$3 out rc=0 before
	before=$(sha256sum <"$img")
	out=$($M "$img" 2>&1) || rc=$?
	[ $rc = 1 ] || fail "$what: exit $rc, expected 1: $out"
	echo "$out" | grep -qE "^mkfs.zlfs: $img contains $re \(use -f to overwrite it\)$" ||
		fail "$what: message: $out"
	[ "$(sha256sum <"$img")" = "$before" ] || fail "$what: the image was modified"
	[ ! -e "$img.zst" ] || fail "$what: a zone state file appeared"
	$M -f "$img" >/dev/null || fail "$what: mkfs -f failed"
	fsck_ok "$img" "$what, -f"
	echo "check-mkfs: $what refused, then formatted with -f"
}
truncate -s 256M "$T/ext4.img" && mkfs.ext4 -q -F -L data "$T/ext4.img" || fail "mkfs.ext4"
cp --sparse=always "$T/ext4.img" "$T/ext4-keep.img"
foreign "ext4 image" "an ext4 filesystem, label 'data', UUID [0-9a-f-]{36}" "$T/ext4.img"
# a dos (MBR) partition table, written by hand (no fdisk needed): one Linux
# partition from sector 2048 to the end, and the 0x55AA signature
truncate -s 256M "$T/dos.img"
printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\xf8\x07\x00' |
	dd of="$T/dos.img" bs=1 seek=446 conv=notrunc status=none
printf '\x55\xaa' | dd of="$T/dos.img" bs=1 seek=510 conv=notrunc status=none
foreign "partitioned image" "a dos partition table" "$T/dos.img"
truncate -s 256M "$T/f2fs.img" && mkfs.f2fs -q -l other "$T/f2fs.img" >/dev/null ||
	fail "mkfs.f2fs"
foreign "mkfs.f2fs image" "an f2fs filesystem, label 'other', UUID [0-9a-f-]{36}" "$T/f2fs.img"
# an image spec with options is probed by its path
before=$(sha256sum <"$T/ext4-keep.img")
out=$($M "$T/ext4-keep.img?qd=4" 2>&1) && fail "IMAGE?OPTS: formatted an ext4 image"
echo "$out" | grep -q "ext4-keep.img contains an ext4 filesystem" || fail "IMAGE?OPTS: $out"
# every member of a multi-device volume is probed
truncate -s 256M "$T/meta.img"
out=$($M -c "$T/ext4-keep.img" "$T/meta.img" 2>&1) && fail "-c: formatted over an ext4 member"
echo "$out" | grep -q "ext4-keep.img contains an ext4 filesystem" || fail "-c member: $out"
[ "$(sha256sum <"$T/ext4-keep.img")" = "$before" ] || fail "-c: the ext4 member was modified"
# the daemon and fsck.zlfs say what a non-F2FS device holds (and mount nothing)
mkdir -p "$T/mnt"
out=$("$B/fs/zlfs" "$T/ext4-keep.img" "$T/mnt" 2>&1) && fail "zlfs mounted an ext4 image"
echo "$out" | grep -q "holds an ext4 filesystem, label 'data', UUID .*, not F2FS" || fail "zlfs: $out"
echo "${out//"$T"/}" | grep -q "mkfs" && fail "zlfs advises mkfs over ext4: $out"   # ($T says check-mkfs)
out=$("$B/fsck/fsck.zlfs" "$T/ext4-keep.img" 2>&1) && fail "fsck.zlfs passed an ext4 image"
echo "$out" | grep -q "ext4-keep.img holds an ext4 filesystem, label 'data', UUID .*, not F2FS" ||
	fail "fsck.zlfs: $out"
[ "$(sha256sum <"$T/ext4-keep.img")" = "$before" ] || fail "zlfs/fsck.zlfs modified the ext4 image"
truncate -s 256M "$T/zero.img"
out=$("$B/fs/zlfs" "$T/zero.img" "$T/mnt" 2>&1) && fail "zlfs mounted a zeroed image"
echo "$out" | grep -q "no F2FS superblock (run mkfs.zlfs)" || fail "zlfs on zeros: $out"
# a later device of a multi-device volume holds no superblock: the mount and
# fsck.zlfs name the first device (found beside it) instead of advising mkfs
mkdir -p "$T/multi"
truncate -s 256M "$T/multi/meta.img"
$Z create "$T/multi/zns.img" --size 1G --zone-size 16M >/dev/null &&
	$M "$T/multi/meta.img" -c "$T/multi/zns.img" >/dev/null || fail "mkfs -c for the member check"
out=$("$B/fs/zlfs" "$T/multi/zns.img" "$T/mnt" 2>&1) && fail "zlfs mounted a later member"
echo "$out" | grep -q "zns.img: is device 2 of the multi-device volume whose first device is $T/multi/meta.img: name that one instead" ||
	fail "zlfs on a member: $out"
out=$("$B/fsck/fsck.zlfs" "$T/multi/zns.img" 2>&1) && fail "fsck.zlfs passed a later member"
echo "$out" | grep -q "zns.img is device 2 of the multi-device volume whose first device is $T/multi/meta.img" ||
	fail "fsck.zlfs on a member: $out"

# Too small: every refusal gives the smallest device for the geometry, taken
# from mkfs.zlfs itself (the layout code), never hard-coded here.  Plain files
# have 2 MiB zones, all conventional.  At the minimum: formats, fsck.f2fs
# passes, it mounts; one zone less: refused with the same minimum.
small() {  # SIZE REGEX: refused with exit 1, the message matches and gives the minimum
	local img=$T/small-$1.img out rc=0
	truncate -s "$1" "$img"
	out=$($M "$img" 2>&1) || rc=$?
	[ $rc = 1 ] || fail "size $1: exit $rc, expected 1: $out"
	echo "$out" | grep -qE "$2" || fail "size $1: message: $out"
	echo "$out" | grep -qE "it needs at least [0-9]+ MiB with 2 MiB zones and 6 logs$" ||
		fail "size $1: no minimum in: $out"
	echo "$out" | grep -qE "$img.*$img" && fail "size $1: the path twice: $out"
	MIN_MB=$(echo "$out" | sed -nE 's/.*it needs at least ([0-9]+) MiB.*/\1/p')
}
small 0 "less than one 2 MiB zone"
min0=$MIN_MB
small 1M "less than one 2 MiB zone"
small 10M "the metadata alone needs"
small 40M "GC needs"
[ "$MIN_MB" = "$min0" ] || fail "minimum differs: $min0 and $MIN_MB MiB"
small "$((MIN_MB - 2))M" "left for data"
truncate -s "${MIN_MB}M" "$T/min.img"
out=$($M "$T/min.img" 2>&1) || fail "at the minimum ($MIN_MB MiB): $out"
fsck_ok "$T/min.img" "minimum size"
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	mkdir -p "$T/min.mnt"
	"$B/fs/zlfs" "$T/min.img" "$T/min.mnt" || fail "minimum size: mount failed"
	echo hello >"$T/min.mnt/f" && sync -f "$T/min.mnt" || { fusermount3 -u "$T/min.mnt"; fail "minimum size: write"; }
	fusermount3 -u "$T/min.mnt" || fail "minimum size: unmount"
	for _ in $(seq 600); do pgrep -f "zlfs $T/min.img" >/dev/null || break; sleep 0.1; done
	fsck_ok "$T/min.img" "minimum size, after a mount"
fi
echo "check-mkfs: sizes ok (minimum $MIN_MB MiB with 2 MiB zones)"
# exit codes: 1 for every error, usage included
for args in "" "a b" "-q x" "-o abc x" "-o 150 x" "-c"; do
	rc=0; $M $args >/dev/null 2>&1 || rc=$?
	[ $rc = 1 ] || fail "mkfs.zlfs $args: exit $rc, expected 1"
done
out=$($M -o abc x 2>&1 || true); echo "$out" | grep -q "^mkfs.zlfs: -o: " || fail "-o error: $out"
$M --help >/dev/null || fail "--help: nonzero exit"

# -f over an existing volume whose zones hold data: every zone is reset first,
# and formatting twice in a row gives a checkable image each time
$BENCH --device "$T/nolimits.img" --mode zwl --zones 6 --bs 64K --qd 4 --ios 300 >/dev/null ||
	fail "zlfs-bench could not dirty zones"
[ "$(zones_written "$T/nolimits.img")" -ge 6 ] || fail "bench did not write zones"
$M -f "$T/nolimits.img" >/dev/null || fail "mkfs -f"
fsck_ok "$T/nolimits.img" "mkfs -f"
[ "$(zones_written "$T/nolimits.img")" = 2 ] || fail "mkfs -f did not reset the zones"
$M "$T/nolimits.img" -f -o 5 >/dev/null || fail "second mkfs -f"
fsck_ok "$T/nolimits.img" "mkfs -f twice"
$M -f "$T/maxopen2.img" >/dev/null && $M -f "$T/maxopen2.img" >/dev/null || fail "mkfs -f twice (2 logs)"
fsck_ok "$T/maxopen2.img" "mkfs -f twice (2 logs)"

echo "check-mkfs: ok"
