#!/bin/bash
# check-fsops.sh BUILD_DIR - fsops on each geometry, through FUSE.
#
# For several geometries and write orderings: mkfs, mount, fsops (a
# randomized differential test against a tmpfs reference directory,
# tests/fs/fsops.c) with a fixed seed, unmount, fsck.f2fs --dry-run (and
# fsck.zlfs -f -n, which must agree) must be clean, remount and compare the
# whole tree with the reference again (persistence), and files extracted by
# dump.f2fs must match.  One geometry spans two devices (mkfs.zlfs -c): a
# file without zones for the metadata and a zoned image without
# conventional zones (ZNS-like); three (gc-urgent-*) run with gc=urgent,
# GC moving the blocks under the operations, in the three orderings.
#
# check-fsops.sh BUILD_DIR GEOMETRY... runs the geometries named only
# (nolimits maxopen8-zwl capacity48-zwp mkfs.f2fs-plain concurrent4
# two-devices-zns gc-urgent-nolock gc-urgent-zwl gc-urgent-zwp).
# fsops comes from BUILD_DIR (tests/fsops, unless older than its source) or
# is compiled from tests/fs/fsops.c.  Environment: FSOPS_ARGS adds options
# to every fsops run (FSOPS_ARGS="--no create,open_trunc" looks past a
# known bug); FSOPS_OPS changes the operation count (default 10000); KEEP=1
# keeps the images and reference trees of a failed run.
#
# Prints "check-fsops: CHECK ok" or "check-fsops: CHECK FAIL reason" per check
# (the last: no zlfs daemon or mount of its own left), then "check-fsops: ok
# (N checks, S s)" (exit 0) only if every check passed, else exit 1. Exit 77
# (skipped) without root, /dev/fuse, dump.f2fs or mkfs.f2fs.
NAME=check-fsops
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_tools dump.f2fs mkfs.f2fs
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"
NOPS=${FSOPS_OPS:-10000}
GEOMETRIES="nolimits maxopen8-zwl capacity48-zwp mkfs.f2fs-plain concurrent4 two-devices-zns
	gc-urgent-nolock gc-urgent-zwl gc-urgent-zwp"
shift
ONLY=" $* "
for g in $ONLY; do
	[[ " $(echo $GEOMETRIES) " == *" $g "* ]] || die "no geometry $g (there are: $(echo $GEOMETRIES))"
done
# want GEOMETRY: named on the command line, or none named
want() { [ "$ONLY" = "  " ] || [[ $ONLY == *" $1 "* ]]; }

# Files to extract with dump.f2fs later: "INO REL" lines in $T/NAME.dump
pick_dump_files() {
	local name=$1 m=$2 ref=$3 rel
	: >"$T/$name.dump"
	(cd "$ref" && find . -type f -links 1 -size +0 -size -20M | sed 's|^\./||' | LC_ALL=C sort |
		awk 'NR % 7 == 1' | head -4) | while IFS= read -r rel; do
		echo "$(stat -c %i "$m/$rel") $rel" >>"$T/$name.dump"
	done
}

# dump_match NAME IMG REF: each picked file, extracted by dump.f2fs -i, equals the reference.
dump_match() {
	local name=$1 img=$2 ref=$3 ino rel d n=0
	while read -r ino rel; do
		d=$T/dump.$name.$ino
		mkdir -p "$d"
		(cd "$d" && echo y | dump.f2fs -i "$(printf 0x%x "$ino")" "$img" >dump.log 2>&1)
		local got
		got=$(find "$d/lost_found" -type f 2>/dev/null | head -1)
		if [ -z "$got" ]; then
			WHY="dump.f2fs -i $ino extracted nothing (for $rel)"
			return 1
		fi
		if ! cmp -s "$got" "$ref/$rel"; then
			WHY="dump.f2fs -i $ino: $(basename "$got") differs from the reference $rel: $(cmp "$got" "$ref/$rel" 2>&1 | head -1)"
			return 1
		fi
		n=$((n + 1))
	done <"$T/$name.dump"
	if [ $n = 0 ]; then
		WHY="no file to extract"
		return 1
	fi
	NOTE="$n files"
}

run_fsops() {  # NAME MNT REF SEED [OPTIONS...]
	local name=$1 m=$2 ref=$3 seed=$4 out rc=0
	shift 4
	[ -n "$FSOPS" ] || { WHY="no fsops"; return 1; }
	# shellcheck disable=SC2086
	out=$("$FSOPS" ${FSOPS_ARGS:-} "$@" "$m" "$ref" "$seed" "$NOPS" 2>&1) || rc=$?
	echo "$out" >"$T/$name.fsops.log"
	if [ $rc != 0 ]; then
		echo "$out" | tail -6 | cut -c1-600 | sed 's/^/    /'
		WHY="fsops exit $rc: $(echo "$out" | grep -m1 DIVERGENCE | cut -c1-300)"
		return 1
	fi
	NOTE=$(echo "$out" | tail -1 | sed -n 's/^fsops: \([0-9]* operations[^:]*\):.*/\1/p')
}

compare_again() {  # MNT REF
	local out
	if ! out=$("$FSOPS" --compare "$1" "$2" 2>&1); then
		echo "$out" | tail -5 | cut -c1-600 | sed 's/^/    /'
		WHY="after the remount: $(echo "$out" | grep -m1 -A1 DIVERGENCE | tail -1 | cut -c1-300)"
		return 1
	fi
}

# geometry NAME SEED MOUNT-OPTS FSOPS-OPTS CREATE: CREATE is "zdev ARGS...", "plain SIZE"
# (mkfs.f2fs on a file without zones) or "multi SIZE ARGS..." (a SIZE file without zones
# for the metadata, then a zoned image made with ARGS: mkfs.zlfs -c, as for a ZNS namespace)
geometry() {
	want "$1" || return 0
	local name=$1 seed=$2 mopts=$3 fopts=$4 kind=$5
	shift 5
	local img=$T/$name.img m=$T/$name.mnt ref=$REF/$name out
	mkdir -p "$ref"
	if [ "$kind" = plain ]; then
		truncate -s "$1" "$img" && out=$(mkfs.f2fs -f -q "$img" 2>&1) ||
			{ bad "$name mkfs.f2fs" "$out"; return; }
	elif [ "$kind" = multi ]; then
		local size=$1
		shift
		truncate -s "$size" "$img" && out=$("$ZDEV" create "$T/$name.zns" "$@" 2>&1) &&
			out=$("$MKFS" -c "$T/$name.zns" "$img" 2>&1) ||
			{ bad "$name mkfs -c" "$out"; return; }
	else
		out=$("$ZDEV" create "$img" "$@" 2>&1) && out=$("$MKFS" "$img" 2>&1) ||
			{ bad "$name mkfs" "$out"; return; }
	fi
	WHY=""
	# shellcheck disable=SC2086
	if ! mnt "$img" "$m" $mopts; then
		bad "$name mount" "$WHY"
		return
	fi
	local fsops_ok=1
	# shellcheck disable=SC2086
	check "$name fsops seed $seed${mopts:+ $mopts}" run_fsops "$name" "$m" "$ref" "$seed" $fopts
	grep -q 'no divergence' "$T/$name.fsops.log" 2>/dev/null || fsops_ok=0
	[ $fsops_ok = 1 ] && pick_dump_files "$name" "$m" "$ref"
	check "$name unmount" umnt "$m" "$img"
	check "$name fsck" fsck_clean "$img"
	if [ $fsops_ok = 1 ]; then
		if mnt "$img" "$m" $mopts; then
			check "$name remount compare" compare_again "$m" "$ref"
			check "$name unmount again" umnt "$m" "$img"
		else
			bad "$name remount" "$WHY"
		fi
		check "$name dump.f2fs files" dump_match "$name" "$img" "$ref"
		check "$name fsck after remount" fsck_clean "$img"
	fi
	rm -f "$img" "$img.zst" "$T/$name.zns" "$T/$name.zns.zst"
	rm -rf "${ref:?}" "$T"/dump."$name".*
}

geometry nolimits 1 "" "" zdev --size 4G --zone-size 64M --conv-zones 8
geometry maxopen8-zwl 2 "-o mode=zwl" "" zdev --size 4G --zone-size 64M --conv-zones 8 --max-open 8
geometry capacity48-zwp 3 "-o mode=zwp" "" zdev --size 4G --zone-size 64M --conv-zones 8 --zone-capacity 48M
geometry mkfs.f2fs-plain 4 "" "" plain 4G
geometry concurrent4 5 "" "--concurrent 4" zdev --size 4G --zone-size 64M --conv-zones 8
geometry two-devices-zns 6 "" "" multi 256M --size 2G --zone-size 64M --zone-capacity 62M \
	--conv-zones 0 --max-open 14 --max-active 14
# GC moving the blocks under the operations, in the three orderings; small
# zones so that many sections hold dead blocks; the device allows exactly
# as many open and active zones as there are logs (GC's log is one of them)
for mode in nolock zwl zwp; do
	geometry gc-urgent-$mode 7 "-o mode=$mode,gc=urgent" "" zdev --size 2G --zone-size 16M \
		--conv-zones 4 --max-open 6 --max-active 6
done

finish
