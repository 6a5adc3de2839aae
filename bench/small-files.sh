#!/bin/bash
# bench/small-files.sh BUILD_DIR [ROUNDS] [NFILES] - what keeping small
# files, directories and xattrs inside the inode (F2FS's inline_data,
# inline_dentry, inline_xattr: zlfs's defaults, as the kernel's) does to
# creating and removing small files through FUSE: zlfs with its default
# options side by side with zlfs -o noinline_data,noinline_dentry,
# noinline_xattr (the layout zlfs wrote before it made inline files), for
# files of 0, 100 and 4096 bytes.  Run as root (it mounts and drops the
# kernel's caches):
#
#   bash bench/small-files.sh build            # 3 rounds, 10,000 files
#   bash bench/small-files.sh build 1 2000     # a quick look
#
# Each run: a fresh emulated zoned image (zlfs-zdev create --thick: 2 GiB,
# 64 MiB zones, 8 conventional) in SMALL_FILES_DIR (default /var/tmp),
# mkfs.zlfs, mount; bench/meta-bench.c creates NFILES files of SIZE bytes
# in directories of 100 (create: mkdir, open O_CREAT|O_EXCL, one write(2)
# of SIZE, close; cold caches at the start), then an fsync of the root
# directory (untimed), which zlfs answers with a checkpoint, so everything
# the creates made is on the device; then unlink of every file and rmdir.
# Figures per run:
#   create/s, unlink/s   meta-bench's rates (files per second);
#   blocks/file          valid blocks after the creates and the checkpoint,
#                        less those of the empty volume, per file (what the
#                        files and their directories take on the device);
#   writes/file          blocks zlfs wrote to its logs for them
#                        (user_blocks_written + node_blocks_written of
#                        .zlfs/status, from mount to the checkpoint) per
#                        file.
# SMALL_FILES_OLD=BUILD_DIR adds a third configuration, "old": that
# build's zlfs, mkfs.zlfs and zlfs-umount with their defaults (a build from
# before inline files, to compare with what users had).
# Rounds are interleaved (every configuration once per round); the table
# gives medians (the mean of the middle two for an even count) and the
# ratio inline / noinline of each figure; per-round figures follow.  The
# machines are shared and noisy: read the rates as a comparison made side
# by side, not as absolutes.
set -eu
export LC_ALL=C
B=${1:?usage: bash bench/small-files.sh BUILD_DIR [ROUNDS] [NFILES]}
R=${2:-3}
N=${3:-10000}
DIR=${SMALL_FILES_DIR:-/var/tmp}
B=$(readlink -f "$B")
ZLFS=$B/fs/zlfs MKFS=$B/mkfs/mkfs.zlfs ZDEV=$B/fs/zlfs-zdev ZUMOUNT=$B/fs/zlfs-umount
MB=$B/bench/meta-bench
for x in "$ZLFS" "$MKFS" "$ZDEV" "$ZUMOUNT" "$MB"; do
	[ -x "$x" ] || { echo "small-files: $x missing (build first)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "small-files: run as root (mount, drop_caches)" >&2; exit 1; }
W=$(mktemp -d "$DIR/zlfs-small-files.XXXXXX")
IMG=$W/z.img M=$W/m
mkdir -p "$M"
cleanup() {
	mountpoint -q "$M" && { "$ZUMOUNT" "$M" || fusermount3 -u "$M"; }
	rm -rf "$W"
}
trap cleanup EXIT

NOINLINE=noinline_data,noinline_dentry,noinline_xattr
SIZES=(0 100 4096)
MODES=(inline noinline)
OLD=${SMALL_FILES_OLD:+$(readlink -f "$SMALL_FILES_OLD")}
if [ -n "$OLD" ]; then
	for x in fs/zlfs mkfs/mkfs.zlfs fs/zlfs-umount; do
		[ -x "$OLD/$x" ] || { echo "small-files: $OLD/$x missing" >&2; exit 1; }
	done
	MODES+=(old)
fi
stat_of() { sed -n "s/^$1=//p" "$M/.zlfs/status"; }
written() { echo $(($(stat_of user_blocks_written) + $(stat_of node_blocks_written))); }

# run SIZE MODE: one run; prints "create/s unlink/s blocks/file writes/file"
run() {
	local size=$1 mode=$2 v0 w0 v1 w1 c u
	local zlfs=$ZLFS mkfs=$MKFS umount=$ZUMOUNT
	[ "$mode" != old ] || zlfs=$OLD/fs/zlfs mkfs=$OLD/mkfs/mkfs.zlfs umount=$OLD/fs/zlfs-umount
	"$ZDEV" create "$IMG" --size 2G --zone-size 64M --conv-zones 8 --thick --force >/dev/null
	"$mkfs" -f "$IMG" >/dev/null
	if [ "$mode" = noinline ]; then "$zlfs" "$IMG" "$M" -o "$NOINLINE"; else "$zlfs" "$IMG" "$M"; fi
	mkdir "$M/t"
	v0=$(stat_of valid_blocks) w0=$(written)
	c=$("$MB" create "$M/t" --files "$N" --size "$size" | tail -1 | sed -n 's/.* ops_per_s=\([0-9.]*\).*/\1/p')
	python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$M"
	v1=$(stat_of valid_blocks) w1=$(written)
	u=$("$MB" unlink "$M/t" --files "$N" | tail -1 | sed -n 's/.* ops_per_s=\([0-9.]*\).*/\1/p')
	"$umount" "$M"
	awk -v c="$c" -v u="$u" -v v="$((v1 - v0))" -v w="$((w1 - w0))" -v n="$N" \
		'BEGIN { printf "%s %s %.3f %.3f\n", c, u, v / n, w / n }'
}

echo "== bench/small-files.sh: $N files per run, $R rounds, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
declare -A RES
for ((r = 1; r <= R; r++)); do
	for size in "${SIZES[@]}"; do
		for mode in "${MODES[@]}"; do
			out=$(run "$size" "$mode")
			RES[$size,$mode]+="$out"$'\n'
			echo "round $r: size $size, $mode: create/s unlink/s blocks/file writes/file = $out"
		done
	done
done

# median COLUMN: of the lines on stdin
median() {
	awk -v k="$1" 'NF { print $k }' | sort -g | awk '{ v[NR] = $1 } END { n = NR;
		if (n % 2) printf "%.3f", v[(n + 1) / 2]; else printf "%.3f", (v[n / 2] + v[n / 2 + 1]) / 2 }'
}
echo
printf '%-6s %-9s %10s %10s %12s %12s\n' size mode create/s unlink/s blocks/file writes/file
for size in "${SIZES[@]}"; do
	for mode in "${MODES[@]}"; do
		printf '%-6s %-9s' "$size" "$mode"
		for k in 1 2 3 4; do
			printf ' %*s' $((k < 3 ? 10 : 12)) "$(printf '%s' "${RES[$size,$mode]}" | median $k)"
		done
		echo
	done
	printf '%-6s %-9s' "$size" "ratio"
	for k in 1 2 3 4; do
		a=$(printf '%s' "${RES[$size,inline]}" | median $k)
		b=$(printf '%s' "${RES[$size,noinline]}" | median $k)
		printf ' %*s' $((k < 3 ? 10 : 12)) "$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }')"
	done
	echo "   (inline / noinline)"
	[ -n "$OLD" ] || continue
	printf '%-6s %-9s' "$size" "ratio"
	for k in 1 2 3 4; do
		a=$(printf '%s' "${RES[$size,inline]}" | median $k)
		b=$(printf '%s' "${RES[$size,old]}" | median $k)
		printf ' %*s' $((k < 3 ? 10 : 12)) "$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }')"
	done
	echo "   (inline / old)"
done
