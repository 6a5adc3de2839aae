#!/bin/bash
# bench/capacity.sh [BUILD_DIR] - usable capacity of mkfs.zlfs against
# mkfs.f2fs on the same geometries (run as root on Debian 12; needs
# f2fs-tools).
#
# What it measures: how much of a freshly formatted volume is left for user
# data once each mkfs has set aside its metadata, its GC reserve (reserved
# segments) and the rest of its overprovision.  Why: with big sections
# (zones) both tools reserve whole sections for the cleaner, so the reserve
# grows with the section size and can eat a large share of a small device;
# this table shows the price per geometry, next to F2FS's own choice.
#
# Geometries: image sizes 1G 2G 4G 16G x section (zone) sizes 2M, 64M, 256M
# (2 MiB segments, so 1, 32, 128 segments per section), skipping those with
# fewer than 16 sections.
#   mkfs.f2fs: a sparse plain file, `mkfs.f2fs -f -s SEGS_PER_SEC` (the
#     non-zoned layout with big sections).
#   mkfs.zlfs: an emulated zoned image, `zlfs-zdev create --size --zone-size
#     --conv-zones N`, then `mkfs.zlfs -f`.  The metadata must fit in the
#     conventional zones and zlfs starts its main area at the first
#     sequential zone, so conventional zones beyond the metadata are lost:
#     N starts at 2 and is raised to what mkfs.zlfs says it needs.
# Both images are read back with the same outside reader, `fsck.f2fs
# --dry-run -d 1` (dump.f2fs would rewrite the superblock): main-area
# segments (segment_count_main), rsvd_segment_count,
# overprov_segment_count (which includes the reserved ones) and
# user_block_count (4 KiB blocks).  "user %" is user_block_count over the
# main area's blocks.  The figures are whatever the tools do today.
set -eu
export PATH=$PATH:/usr/sbin:/sbin
B=${1:-build/ci}
MKFS=$B/mkfs/mkfs.zlfs ZDEV=$B/fs/zlfs-zdev
for x in "$MKFS" "$ZDEV"; do
	[ -x "$x" ] || { echo "no $x: build first (meson setup $B && ninja -C $B)" >&2; exit 1; }
done
for x in mkfs.f2fs fsck.f2fs; do
	command -v $x >/dev/null || { echo "$x is needed (apt-get install f2fs-tools)" >&2; exit 1; }
done

DIR=$(mktemp -d /tmp/zlfs-capacity.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
IMG=$DIR/img

# bytes SIZE: 1G, 64M, ... as a byte count
bytes() {
	local n=${1%[KMGT]}
	case $1 in
	*K) echo $((n << 10)) ;; *M) echo $((n << 20)) ;;
	*G) echo $((n << 30)) ;; *T) echo $((n << 40)) ;; *) echo "$n" ;;
	esac
}

# field NAME: the value of NAME in fsck's dump (in $DIR/fsck.out)
field() {
	sed -n "s/^$1[[:space:]]*\[.*: *\([0-9]*\)\]\$/\1/p" "$DIR/fsck.out" | head -1
}

# row GEOMETRY TOOL NOTE: read the image back and print one line
row() {
	local main rsvd ovp user
	if ! fsck.f2fs --dry-run -d 1 "$IMG" >"$DIR/fsck.out" 2>&1; then
		printf '%-10s %-9s %s\n' "$1" "$2" "fsck.f2fs cannot read the image"
		return
	fi
	main=$(field segment_count_main) rsvd=$(field rsvd_segment_count)
	ovp=$(field overprov_segment_count) user=$(field user_block_count)
	printf '%-10s %-9s %9s %9s %9s %8s %7s  %s\n' "$1" "$2" "$main" "$rsvd" "$ovp" \
		"$(awk -v u="$user" 'BEGIN { printf "%.2f", u * 4096 / 2^30 }')" \
		"$(awk -v u="$user" -v m="$main" 'BEGIN { printf "%.1f", 100 * u / (m * 512) }')" "$3"
}

# fail GEOMETRY TOOL MESSAGE
fail() {
	printf '%-10s %-9s %9s %9s %9s %8s %7s  %s\n' "$1" "$2" - - - - - "failed: $3"
}

printf '%-10s %-9s %9s %9s %9s %8s %7s  %s\n' geometry tool "main segs" "rsvd segs" \
	"ovp segs" "user GiB" "user %" note
for size in 1G 2G 4G 16G; do
	for zone in 2M 64M 256M; do
		secs=$(($(bytes $size) / $(bytes $zone)))
		[ $secs -ge 16 ] || continue
		sps=$(($(bytes $zone) >> 21))
		geo=$size/$zone

		rm -f "$IMG" "$IMG.zst"
		truncate -s $size "$IMG"
		if mkfs.f2fs -f -s $sps "$IMG" >"$DIR/mkfs.out" 2>&1; then
			row $geo mkfs.f2fs "-s $sps"
		else
			fail $geo mkfs.f2fs "$(grep -m1 Error "$DIR/mkfs.out" | sed 's/^[[:space:]]*//')"
		fi

		conv=2 ok=
		while :; do
			rm -f "$IMG" "$IMG.zst"
			"$ZDEV" create "$IMG" --size $size --zone-size $zone --conv-zones "$conv" \
				>/dev/null
			if "$MKFS" -f "$IMG" >"$DIR/mkfs.out" 2>&1; then
				ok=1
				break
			fi
			# "not enough conventional zones for the metadata: K needed, N present"
			need=$(sed -n 's/.*metadata: \([0-9]*\) needed.*/\1/p' "$DIR/mkfs.out")
			if [ -n "$need" ] && [ "$need" -gt "$conv" ] && [ "$need" -lt $secs ]; then
				conv=$need
			else
				break
			fi
		done
		if [ -n "$ok" ]; then
			row $geo mkfs.zlfs "$conv conventional zones"
		else
			fail $geo mkfs.zlfs "$(tail -1 "$DIR/mkfs.out" | sed 's/^mkfs.zlfs: [^:]*: //')"
		fi
	done
done
