#!/bin/bash
# check-mount.sh BUILD_DIR - zlfs mounted through FUSE, end to end.
#
# 1. For several geometries and write orderings: mkfs, mount, fsops (a
#    randomized differential test against a tmpfs reference directory,
#    tests/fs/fsops.c) with a fixed seed, unmount, fsck.f2fs --dry-run must
#    be clean, remount and compare the whole tree with the reference again
#    (persistence), and files extracted by dump.f2fs must match.
#    One geometry spans two devices (mkfs.zlfs -c): a file without zones for
#    the metadata and a zoned image without conventional zones (ZNS-like).
# 2. The POSIX namespace through the mount: errnos (ENOENT, EEXIST,
#    ENOTEMPTY, ENAMETOOLONG, ENOTDIR, EISDIR, EINVAL, ELOOP, EPERM; EXDEV
#    cannot happen inside one filesystem), statfs, st_blocks of a sparse
#    file, a 100,000-entry directory (removed by readdir + unlink), a sparse
#    20 GiB file (indirect and double indirect nodes), O_APPEND, O_TRUNC,
#    O_DIRECT, FIFOs and device nodes, space given back by a file unlinked
#    while open, a second mount of a mounted image refused, a remount right
#    after an unmount, a read-only mount; the mount's readahead raised to
#    1 MiB; ENOSPC on a full filesystem, which stays usable.
# 3. sload.f2fs: a tree loaded into a mkfs.f2fs image mounts under zlfs,
#    reads back identical, takes writes, and still passes fsck.f2fs.
#
# Prints "check-mount: NAME ok" or "check-mount: NAME FAIL reason" per check,
# then "check-mount: ok" (exit 0) only if every check passed, else exit 1.
# Exit 77 (skipped) without root, /dev/fuse, fuse3 or f2fs-tools.
#
# fsops comes from BUILD_DIR (tests/fsops, unless older than its source) or
# is compiled from tests/fs/fsops.c.  Environment: FSOPS_ARGS adds options
# to every fsops run (FSOPS_ARGS="--no create,open_trunc" looks past a
# known bug); FSOPS_OPS changes the operation count (default 10000);
# CHECK_MOUNT_SECTIONS picks parts (default "fsops gc posix enospc sload");
# CHECK_MOUNT_KEEP=1 keeps the images and reference trees of a failed run.
# About 2 minutes on 2 cores.
NAME=check-mount
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
NOPS=${FSOPS_OPS:-10000}
SECTIONS=" ${CHECK_MOUNT_SECTIONS:-fsops gc posix enospc sload} "
want() { [[ $SECTIONS == *" $1 "* ]]; }
START=$(date +%s)

need_fuse
need_tools fusermount3 fsck.f2fs dump.f2fs mkfs.f2fs sload.f2fs perl mountpoint
need_built "$ZDEV" "$MKFS" "$ZLFS" "$FSCK"

tmpdir
REF=$(mktemp -d /dev/shm/check-mount-ref.XXXXXX)
NCHECKS=0

on_exit() {
	if [ "${CHECK_MOUNT_KEEP:-0}" = 1 ] && [ "$FAILS" != 0 ]; then
		echo "check-mount: kept $REF"
		KEEP=1
	else
		rm -rf "$REF"
	fi
}

ok() { NCHECKS=$((NCHECKS + 1)); echo "check-mount: $1 ok${2:+ ($2)}"; }
bad() { NCHECKS=$((NCHECKS + 1)); FAILS=$((FAILS + 1)); echo "check-mount: $1 FAIL $2"; }
# check NAME FUNCTION ARGS...: the function explains a failure in WHY (and
# an optional detail in NOTE on success)
check() {
	local name=$1
	shift
	WHY="" NOTE=""
	if "$@"; then ok "$name" "$NOTE"; else bad "$name" "${WHY:-($1 failed)}"; fi
}

# ---- fsops -----------------------------------------------------------------------------

FSOPS=
for f in "$B/tests/fsops" "$B/tests/fs/fsops"; do   # built by meson, and not older than its source
	[ -x "$f" ] && ! [ "$SRC/tests/fs/fsops.c" -nt "$f" ] && FSOPS=$f && break
done
if [ -z "$FSOPS" ]; then
	FSOPS=$T/fsops
	if ! cc -O2 -Wall -Wextra -Werror -o "$FSOPS" "$SRC/tests/fs/fsops.c" 2>"$T/cc.log"; then
		cat "$T/cc.log"
		bad "build fsops" "cc failed"
		FSOPS=
	fi
fi

# ---- mounting --------------------------------------------------------------------------

# mnt IMG MNT [zlfs options...]: mount, the mount point must be a FUSE mount after.
# The daemon keeps its stderr, so it goes to a file (never a pipe that a $(...)
# would wait on until the daemon exits); the file is shown after a failure.
mnt() {
	local img=$1 m=$2 log
	shift 2
	mkdir -p "$m"
	log=$T/$(basename "$img").zlfs.log
	echo "== $ZLFS $img $m $*" >>"$log"
	if ! "$ZLFS" "$img" "$m" "$@" >>"$log" 2>&1; then
		WHY="mount failed: $(tail -3 "$log" | tr '\n' ' ')"
		return 1
	fi
	if ! mountpoint -q "$m"; then
		WHY="zlfs returned 0 but $m is not mounted: $(tail -3 "$log" | tr '\n' ' ')"
		return 1
	fi
}

# umnt MNT IMG: unmount and wait until the daemon has written its last
# checkpoint and exited.
umnt() {
	local m=$1 img=$2 i
	for i in $(seq 50); do
		fusermount3 -u "$m" 2>"$T/umount.err" && break
		sleep 0.2
	done
	if mountpoint -q "$m"; then
		WHY="fusermount3 -u $m: $(cat "$T/umount.err")"
		return 1
	fi
	for i in $(seq 600); do
		[ -z "$(daemons "$img")" ] && return 0
		sleep 0.1
	done
	WHY="the zlfs daemon of $img still runs 60 s after the unmount"
	return 1
}

# fsck_clean IMG: fsck.f2fs --dry-run exits 0 and reports nothing failed,
# and zlfs's own fsck.zlfs -f -n agrees (exit 0: two checkers, one verdict).
fsck_clean() {
	local out rc=0
	out=$(fsck.f2fs --dry-run "$1" 2>&1) || rc=$?
	if [ $rc != 0 ] || echo "$out" | grep -qE '\[(Fail|FAIL|ASSERT)\]|\[ASSERT|ASSERT:'; then
		echo "$out" | grep -E 'Fail|FAIL|ASSERT|Error|error' | head -15 | sed 's/^/    /'
		WHY="fsck.f2fs --dry-run $(basename "$1"): exit $rc, $(echo "$out" | grep -cE 'Fail|FAIL|ASSERT') failure lines"
		return 1
	fi
	out=$("$FSCK" -f -n "$1" 2>&1) || rc=$?
	if [ $rc != 0 ]; then
		echo "$out" | head -15 | sed 's/^/    /'
		WHY="fsck.zlfs -f -n $(basename "$1"): exit $rc where fsck.f2fs found nothing"
		return 1
	fi
}

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# ---- 1. fsops on each geometry ---------------------------------------------------------

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

if want fsops; then
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
fi

# ---- 1b. garbage collection ------------------------------------------------------------
#
# 1 GiB images with 16 MiB zones (about 60 sections).  Fill to 100% (buffered
# and O_DIRECT), delete, fill again: three cycles, each within 1% of the first,
# ENOSPC only once df shows (almost) nothing free.  At 80% and 90% of the
# user's capacity, five passes of random 4 KiB O_DIRECT overwrites (8 threads)
# and of whole-file rewrites, every byte checked (tests/fs/gcload.c), fsck
# clean, remount and check again.  The daemon SIGKILLed and the device's power
# cut while GC works hard (gc=urgent): remount, fsck clean, fsynced data intact.

GCLOAD=$B/tests/gcload
gc_img() {  # IMG: a fresh 1 GiB image, 16 MiB zones
	rm -f "$1" "$1.zst"
	"$ZDEV" create "$1" --size 1G --zone-size 16M --conv-zones 4 >/dev/null &&
		"$MKFS" "$1" >/dev/null || { WHY="create/mkfs failed"; return 1; }
}
avail_kb() { df -k --output=avail "$1" | tail -1 | tr -d ' '; }
size_kb() { df -k --output=size "$1" | tail -1 | tr -d ' '; }

# fill MNT KIND: write one file until ENOSPC; prints the KiB it holds.
# Buffered fills write 64 MiB more than the capacity: the writeback gate
# (fuse_ops.c) fails write(2) once df shows nothing available.
fill() {
	local m=$1 kind=$2 flags="conv=fsync" count=""
	[ "$kind" = direct ] && flags="oflag=direct conv=fsync"
	[ "$kind" = buffered ] && count="count=$(( $(size_kb "$m") / 1024 + 64 ))"
	# shellcheck disable=SC2086
	dd if=/dev/zero of="$m/fill" bs=1M $count $flags status=none 2>"$T/fill.err" && {
		echo "dd did not run out of space" >"$T/fill.err"; echo 0; return; }
	grep -q 'No space left' "$T/fill.err" || { echo 0; return; }
	du -k "$m/fill" | cut -f1
}

gc_fill_cycles() {  # KIND
	local img=$T/gcfill.img m=$T/gcfill.mnt kind=$1 first=0 got c avail0
	gc_img "$img" || return 1
	mnt "$img" "$m" || return 1
	avail0=$(avail_kb "$m")   # df's Avail leaves out the writeback gate's reserve
	for c in 1 2 3; do
		got=$(fill "$m" "$kind")
		[ "$got" -gt 0 ] || { WHY="cycle $c: $(cat "$T/fill.err")"; umnt "$m" "$img"; return 1; }
		local left total
		left=$(avail_kb "$m")
		total=$(size_kb "$m")
		if [ "$left" -gt $((total / 100)) ]; then
			WHY="cycle $c: ENOSPC with $left KiB of $total shown free"
			umnt "$m" "$img"
			return 1
		fi
		[ $c = 1 ] && first=$got
		if [ $((got * 100)) -lt $((first * 99)) ]; then
			WHY="cycle $c filled $got KiB, the first $first KiB"
			umnt "$m" "$img"
			return 1
		fi
		rm -f "$m/fill" || { WHY="rm failed"; umnt "$m" "$img"; return 1; }
		# the space is back at once
		left=$(avail_kb "$m")
		if [ "$left" -lt $((avail0 * 99 / 100)) ]; then
			WHY="cycle $c: after rm only $left KiB of $avail0 available"
			umnt "$m" "$img"
			return 1
		fi
	done
	NOTE="$((first / 1024)) MiB each cycle of $(( $(size_kb "$m") / 1024)) MiB"
	umnt "$m" "$img" && fsck_clean "$img"
}

# The last blocks taken by directories and small files (nodes, dentry blocks,
# inline conversions): ENOSPC comes before the checkpoint records more valid
# blocks than the user's share (the kernel refuses such a volume: "Wrong
# valid_user_blocks"), and the volume stays fsck-clean.
gc_fill_small() {
	local img=$T/gcsmall.img m=$T/gcsmall.mnt d=0 f n=0
	gc_img "$img" || return 1
	# without the writeback cache: every write reaches zlfs, so the files
	# reach the last blocks (under it the writeback gate stops buffered
	# writes at its reserve; check-enospc.sh covers that)
	mnt "$img" "$m" -o no_writeback_cache || return 1
	dd if=/dev/zero of="$m/big" bs=1M count=$(( $(size_kb "$m") / 1024 - 12 )) oflag=direct \
		status=none || { WHY="big file"; umnt "$m" "$img"; return 1; }
	while [ $d -lt 2000 ]; do
		mkdir "$m/d$d" 2>/dev/null || break
		for f in 1 2 3 4 5 6 7 8; do
			{ head -c 9000 /dev/zero >"$m/d$d/f$f"; } 2>/dev/null || break 2
			n=$((n + 1))
		done
		d=$((d + 1))
	done
	sync "$m/big"
	local valid user
	valid=$(sed -n 's/^valid_blocks=//p' "$m/.zlfs/status")
	user=$(sed -n 's/^user_block_count=//p' "$m/.zlfs/status")
	umnt "$m" "$img" || return 1
	if [ "$d" -ge 2000 ] || [ -z "$valid" ] || [ "$valid" -gt "$user" ]; then
		WHY="$d directories, $n files: $valid valid blocks, user_block_count $user"
		return 1
	fi
	NOTE="ENOSPC after $d directories and $n files; $valid of $user blocks valid"
	fsck_clean "$img"
}

# gc_overwrite PCT MODE: MODE random or rewrite, five passes at PCT% of the capacity
gc_overwrite() {
	local pct=$1 mode=$2 img=$T/gcow.img m=$T/gcow.mnt out
	gc_img "$img" || return 1
	mnt "$img" "$m" || return 1
	local blocks=$(( $(size_kb "$m") * pct / 100 / 4 ))
	if [ "$mode" = random ]; then
		out=$("$GCLOAD" random "$T/gcow.state" "$m/f" $blocks 5 8 2>&1)
	else
		out=$("$GCLOAD" rewrite "$T/gcow.state" "$m" 8 $((blocks / 8)) 5 2>&1)
	fi
	local rc=$?
	local wa
	wa=$(sed -n 's/^gc_write_amplification=//p' "$m/.zlfs/status")
	if [ $rc != 0 ]; then
		WHY="$(echo "$out" | tail -3 | tr '\n' ' ')"
		umnt "$m" "$img"
		return 1
	fi
	umnt "$m" "$img" || return 1
	fsck_clean "$img" || return 1
	mnt "$img" "$m" || return 1
	out=$("$GCLOAD" verify "$T/gcow.state" "$m" "$m" 2>&1) ||
		{ WHY="after remount: $(echo "$out" | tail -3 | tr '\n' ' ')"; umnt "$m" "$img"; return 1; }
	NOTE="$blocks blocks, GC write amplification $wa"
	umnt "$m" "$img" && fsck_clean "$img"
}

# gc_crash KIND: kill (SIGKILL of the daemon) or power (the device's power cut)
gc_crash() {
	local kind=$1 img=$T/gccrash.img m=$T/gccrash.mnt round
	gc_img "$img" || return 1
	mnt "$img" "$m" || return 1
	# durable: 200 MiB written and fsynced, checked after every crash
	"$GCLOAD" rewrite "$T/gccrash.state" "$m" 2 25600 0 >/dev/null 2>&1 ||
		{ WHY="durable files"; umnt "$m" "$img"; return 1; }
	umnt "$m" "$img" || return 1
	for round in 1 2 3; do
		local spec=$img
		[ "$kind" = power ] && spec="$img?powercut_after=$((20000 * round)),powercut_seed=$round"
		mnt "$spec" "$m" -o gc=urgent || return 1
		# churn: 60% of the space overwritten at random while GC moves everything
		"$GCLOAD" random "$T/gccrash.junk" "$m/junk" $(( $(size_kb "$m") * 45 / 100 / 4 )) 3 4 \
			>/dev/null 2>&1 &
		local w=$!
		# kill: after a while; power: the cut ends the load by itself
		if [ "$kind" = kill ]; then
			sleep $((round + 2))
			kill -9 $(daemons "$img") 2>/dev/null
		fi
		local wrc=0
		wait $w 2>/dev/null || wrc=$?
		# the cut must have come while the volume was in use: the device
		# error is in the status, and the load saw its writes fail
		if [ "$kind" = power ]; then
			local derr
			derr=$(sed -n 's/^device_error=//p' "$m/.zlfs/status" 2>/dev/null)
			if [ "$wrc" = 0 ] || [ -z "$derr" ] || [ "$derr" = 0 ]; then
				WHY="round $round: the power was never cut (load exit $wrc, device_error '$derr')"
				fusermount3 -u "$m" 2>/dev/null
				return 1
			fi
		fi
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null
		local i
		for i in $(seq 300); do [ -z "$(daemons "$img")" ] && break; sleep 0.1; done
		fsck_clean "$img" || { WHY="round $round, after the crash: $WHY"; return 1; }
		mnt "$img" "$m" || { WHY="round $round remount: $WHY"; return 1; }
		local out
		out=$("$GCLOAD" verify "$T/gccrash.state" "$m" "$m" 2>&1) ||
			{ WHY="round $round: $(echo "$out" | tail -2 | tr '\n' ' ')"; umnt "$m" "$img"; return 1; }
		rm -f "$m/junk"
		umnt "$m" "$img" || return 1
		fsck_clean "$img" || { WHY="round $round, after cleanup: $WHY"; return 1; }
	done
	NOTE="3 rounds"
}

# /.zlfs: reached by name, not listed, read-only; status and zones parse
gc_virtual() {
	local img=$T/gcvirt.img m=$T/gcvirt.mnt
	gc_img "$img" || return 1
	mnt "$img" "$m" || return 1
	touch "$m/file"
	local fail=""
	ls -a "$m" | grep -qx .zlfs && fail="$fail listed by readdir;"
	[ "$(ls "$m/.zlfs" | tr '\n' ' ')" = "status zones " ] || fail="$fail ls .zlfs: $(ls "$m/.zlfs" | tr '\n' ' ');"
	for k in user_blocks_written gc_data_blocks_moved gc_write_amplification fg_gc_runs bg_gc_runs \
		 zones_reset checkpoints free_sections prefree_sections dirty_sections disp_dispatched \
		 disp_unaligned disp_retries disp_failed device_error; do
		grep -q "^$k=" "$m/.zlfs/status" || fail="$fail no $k;"
	done
	[ "$(head -1 "$m/.zlfs/zones")" = "# zone type cond wp valid cap log" ] || fail="$fail zones header;"
	# 1 GiB of 16 MiB zones
	[ "$(grep -vc '^#' "$m/.zlfs/zones")" = 64 ] || fail="$fail $(grep -vc '^#' "$m/.zlfs/zones") zone lines, not 64;"
	grep -q ' warm_data$' "$m/.zlfs/zones" || fail="$fail no warm_data log marked;"
	{ echo x >"$m/.zlfs/status"; } 2>/dev/null && fail="$fail status writable;"
	rm -rf "$m/.zlfs" 2>/dev/null
	[ -e "$m/.zlfs/status" ] || fail="$fail removed;"
	mkdir "$m/.zlfs" 2>/dev/null && fail="$fail mkdir .zlfs worked;"
	mv "$m/file" "$m/.zlfs" 2>/dev/null && fail="$fail rename onto .zlfs worked;"
	touch "$m/.zlfs/new" 2>/dev/null && fail="$fail created in .zlfs;"
	umnt "$m" "$img" || return 1
	[ -z "$fail" ] || { WHY=$fail; return 1; }
	fsck_clean "$img"
}

if want gc; then
	check "/.zlfs: hidden, read-only, status and zones" gc_virtual
	if [ ! -x "$GCLOAD" ]; then
		bad "gc" "$GCLOAD missing (build first)"
	else
		check "gc: fill to 100% buffered, delete, fill again (3 cycles)" gc_fill_cycles buffered
		check "gc: fill to 100% O_DIRECT, delete, fill again (3 cycles)" gc_fill_cycles direct
		check "gc: the last blocks go to directories and small files" gc_fill_small
		check "gc: 80% full, 5x random 4K O_DIRECT overwrites" gc_overwrite 80 random
		check "gc: 90% full, 5x random 4K O_DIRECT overwrites" gc_overwrite 90 random
		check "gc: 80% full, 5x whole-file rewrites" gc_overwrite 80 rewrite
		check "gc: 90% full, 5x whole-file rewrites" gc_overwrite 90 rewrite
		check "gc: daemon SIGKILLed during GC" gc_crash kill
		check "gc: power cut during GC" gc_crash power
	fi
fi

# ---- 2. the POSIX namespace ------------------------------------------------------------

IMG=$T/posix.img
M=$T/posix.mnt
POSIX=0
if want posix; then
	if ! "$ZDEV" create "$IMG" --size 8G --zone-size 64M --conv-zones 8 >/dev/null ||
	   ! "$MKFS" "$IMG" >/dev/null; then
		bad "posix mkfs" "create/mkfs failed"
	elif ! mnt "$IMG" "$M" -o allow_other; then
		bad "posix mount" "$WHY"
	else
		POSIX=1
	fi
fi
if [ $POSIX = 1 ]; then

	# perr CODE ARGS...: run a Perl expression on ARGS (in @ARGV); prints OK if
	# it returned true, else the errno's name.
	perr() {
		perl -e 'use strict; use Fcntl; use POSIX (); my $c = shift;
			my $r = eval $c; die $@ if $@;
			if ($r) { print "OK"; exit 0 }
			my ($n) = grep { $!{$_} } keys %!; print $n // "errno-$!";' "$@"
	}
	# expect WANT CODE ARGS...: the result must be WANT; failures go to WHY
	expect() {
		local want=$1 got
		shift
		got=$(perr "$@" 2>&1)
		if [ "$got" != "$want" ]; then
			WHY="${WHY:+$WHY; }'$(echo "$1" | cut -c1-40)' on ${2#"$M"/}: expected $want, got $got"
			return 1
		fi
	}

	D=$M/ns
	mkdir -p "$D/dir/sub" "$D/empty" && echo data >"$D/file" && echo x >"$D/dir/sub/f"
	LONG255=$(printf 'n%.0s' $(seq 255))
	LONG256=$(printf 'n%.0s' $(seq 256))
	MKDIR='mkdir($ARGV[0], 0755)'
	OPEN_RD='sysopen(my $f, $ARGV[0], O_RDONLY)'
	OPEN_WR='sysopen(my $f, $ARGV[0], O_WRONLY)'
	CREATE='sysopen(my $f, $ARGV[0], O_WRONLY|O_CREAT, 0644)'
	EXCL='sysopen(my $f, $ARGV[0], O_WRONLY|O_CREAT|O_EXCL, 0644)'

	e_enoent() {
		local r=0
		expect ENOENT 'lstat($ARGV[0])' "$D/nope" || r=1
		expect ENOENT "$OPEN_RD" "$D/nope" || r=1
		expect ENOENT 'unlink($ARGV[0])' "$D/nope" || r=1
		expect ENOENT 'rmdir($ARGV[0])' "$D/nope" || r=1
		expect ENOENT 'rename($ARGV[0], $ARGV[1])' "$D/nope" "$D/nope2" || r=1
		expect ENOENT "$MKDIR" "$D/nope/x" || r=1
		expect ENOENT "$CREATE" "$D/nope/x" || r=1
		expect ENOENT 'link($ARGV[0], $ARGV[1])' "$D/nope" "$D/x" || r=1
		expect ENOENT 'opendir(my $d, $ARGV[0])' "$D/nope" || r=1
		expect ENOENT 'chmod(0600, $ARGV[0])' "$D/nope" || r=1
		return $r
	}
	e_eexist() {
		local r=0
		expect EEXIST "$MKDIR" "$D/dir" || r=1
		expect EEXIST "$MKDIR" "$D/file" || r=1
		expect EEXIST "$EXCL" "$D/file" || r=1
		expect EEXIST "$EXCL" "$D/dir" || r=1
		expect EEXIST 'link($ARGV[0], $ARGV[1])' "$D/file" "$D/dir" || r=1
		expect EEXIST 'symlink("x", $ARGV[0])' "$D/file" || r=1
		expect EEXIST 'POSIX::mkfifo($ARGV[0], 0644)' "$D/file" || r=1
		return $r
	}
	e_enotempty() {
		local r=0
		expect ENOTEMPTY 'rmdir($ARGV[0])' "$D/dir" || r=1
		expect ENOTEMPTY 'rename($ARGV[0], $ARGV[1])' "$D/empty" "$D/dir" || r=1
		expect ENOTEMPTY 'rmdir($ARGV[0])' "$D/dir/sub/.." || r=1
		return $r
	}
	e_enametoolong() {
		local r=0
		expect ENAMETOOLONG "$MKDIR" "$D/$LONG256" || r=1
		expect ENAMETOOLONG "$CREATE" "$D/$LONG256" || r=1
		expect ENAMETOOLONG 'lstat($ARGV[0])' "$D/$LONG256" || r=1
		expect ENAMETOOLONG 'rename($ARGV[0], $ARGV[1])' "$D/file" "$D/$LONG256" || r=1
		expect ENAMETOOLONG 'symlink("x", $ARGV[0])' "$D/$LONG256" || r=1
		expect ENAMETOOLONG 'link($ARGV[0], $ARGV[1])' "$D/file" "$D/$LONG256" || r=1
		# 255 is allowed, and readdir shows the whole name
		expect OK "$CREATE" "$D/$LONG255" || r=1
		expect OK 'lstat($ARGV[0])' "$D/$LONG255" || r=1
		[ -n "$(find "$D" -maxdepth 1 -name "$LONG255")" ] ||
			{ WHY="${WHY:+$WHY; }the 255-byte name is not listed"; r=1; }
		expect OK 'unlink($ARGV[0])' "$D/$LONG255" || r=1
		return $r
	}
	e_enotdir() {
		local r=0
		expect ENOTDIR "$MKDIR" "$D/file/x" || r=1
		expect ENOTDIR 'lstat($ARGV[0])' "$D/file/x" || r=1
		expect ENOTDIR "$CREATE" "$D/file/x" || r=1
		expect ENOTDIR 'rmdir($ARGV[0])' "$D/file" || r=1
		expect ENOTDIR 'opendir(my $d, $ARGV[0])' "$D/file" || r=1
		expect ENOTDIR 'rename($ARGV[0], $ARGV[1])' "$D/empty" "$D/file" || r=1
		expect ENOTDIR 'sysopen(my $f, $ARGV[0], O_RDONLY|O_DIRECTORY)' "$D/file" || r=1
		return $r
	}
	e_eisdir() {
		local r=0
		expect EISDIR "$OPEN_WR" "$D/dir" || r=1
		expect EISDIR 'sysopen(my $f, $ARGV[0], O_RDWR)' "$D/dir" || r=1
		expect EISDIR 'unlink($ARGV[0])' "$D/dir" || r=1
		expect EISDIR 'rename($ARGV[0], $ARGV[1])' "$D/file" "$D/empty" || r=1
		expect EISDIR 'truncate($ARGV[0], 0)' "$D/dir" || r=1
		expect EISDIR 'sysopen(my $f, $ARGV[0], O_RDONLY) or die; defined(sysread($f, my $b, 10))' "$D/dir" || r=1
		return $r
	}
	e_einval() {
		local r=0
		expect EINVAL 'rmdir($ARGV[0])' "$D/dir/." || r=1
		expect EINVAL 'chdir($ARGV[0]) && rmdir(".")' "$D/empty" || r=1
		expect EINVAL 'rename($ARGV[0], $ARGV[1])' "$D/dir" "$D/dir/sub/inside" || r=1
		expect EINVAL 'readlink($ARGV[0])' "$D/file" || r=1
		return $r
	}
	e_misc() {
		local r=0
		ln -s loop1 "$D/loop2" && ln -s loop2 "$D/loop1"
		expect ELOOP "$OPEN_RD" "$D/loop1" || r=1
		expect EPERM 'link($ARGV[0], $ARGV[1])' "$D/dir" "$D/dirlink" || r=1
		return $r
	}
	check "errno ENOENT" e_enoent
	check "errno EEXIST (mkdir, O_EXCL, link, symlink, mkfifo)" e_eexist
	check "errno ENOTEMPTY" e_enotempty
	check "errno ENAMETOOLONG (256 bytes; 255 works)" e_enametoolong
	check "errno ENOTDIR" e_enotdir
	check "errno EISDIR" e_eisdir
	check "errno EINVAL (rmdir ., rename into itself)" e_einval
	check "errno ELOOP, EPERM (link to a directory)" e_misc

	# statfs: sane numbers, and they move with the data
	statfs_sane() {
		local bs blocks free avail files ffree namelen f0 f1
		read -r bs blocks free avail files ffree namelen < <(stat -f -c '%S %b %f %a %c %d %l' "$M")
		[ "$bs" = 4096 ] || { WHY="block size $bs"; return 1; }
		[ "$blocks" -gt 0 ] && [ "$free" -le "$blocks" ] && [ "$avail" -le "$free" ] ||
			{ WHY="blocks $blocks free $free avail $avail"; return 1; }
		[ "$files" -gt 0 ] && [ "$ffree" -le "$files" ] || { WHY="files $files ffree $ffree"; return 1; }
		[ "$namelen" = 255 ] || { WHY="namelen $namelen"; return 1; }
		# the image is 8 GiB: at least half of it for data
		[ $((blocks * 4096)) -gt $((4 << 30)) ] || { WHY="only $blocks blocks on an 8 GiB image"; return 1; }
		df -P "$M" >/dev/null || { WHY="df failed"; return 1; }
		f0=$free
		dd if=/dev/urandom of="$M/statfs.64m" bs=1M count=64 conv=fsync status=none
		f1=$(stat -f -c %f "$M")
		[ $((f0 - f1)) -ge 16384 ] && [ $((f0 - f1)) -lt 40000 ] ||
			{ WHY="writing 64 MiB took $((f0 - f1)) free blocks (16384 expected)"; return 1; }
		rm -f "$M/statfs.64m"
		NOTE="$blocks blocks of $bs, $free free, $files inodes"
	}
	check "statfs" statfs_sane

	sparse_blocks() {
		local f=$M/sparse s b
		truncate -s 1G "$f"
		printf 'middle' | dd of="$f" bs=1 seek=$((512 << 20)) conv=notrunc status=none
		drop_caches
		read -r s b < <(stat -c '%s %b' "$f")
		[ "$s" = $((1 << 30)) ] || { WHY="size $s"; return 1; }
		[ $((b * 512)) -ge 4096 ] && [ $((b * 512)) -lt $((1 << 20)) ] ||
			{ WHY="st_blocks $b for 1 GiB with one 4 KiB block written"; return 1; }
		[ "$(dd if="$f" bs=1 skip=$((512 << 20)) count=6 status=none)" = middle ] || { WHY="data"; return 1; }
		NOTE="size 1 GiB, st_blocks $b"
	}
	check "st_blocks of a sparse file" sparse_blocks

	# st_blocks of a small file and a new directory: zlfs writes both in
	# blocks (8 sectors); a file or directory kept inline would show the
	# sectors its bytes fill, (size + 511) / 512, as the kernel's f2fs
	# shows it.  The inline case itself is tested where inline inodes
	# exist: test_acache's test_inline_blocks and the VM's kernel
	# cross-mount, which compares st_blocks of the kernel's inline files.
	inline_blocks() {
		local f=$M/inline.small d=$M/inline.dir s b ds db
		printf 'small' >"$f"
		mkdir "$d"
		sync
		drop_caches
		read -r s b < <(stat -c '%s %b' "$f")
		read -r ds db < <(stat -c '%s %b' "$d")
		# zlfs writes a file's data in data blocks (one here); the kernel
		# may keep it inline (1 sector), which the VM tests compare
		[ "$s" = 5 ] && { [ "$b" = 8 ] || [ "$b" = 1 ]; } ||
			{ WHY="a 5-byte file: size $s, st_blocks $b (8 or 1 expected)"; return 1; }
		[ "$db" = $(((ds + 511) / 512)) ] && [ "$db" -gt 0 ] ||
			{ WHY="a new directory: size $ds, st_blocks $db"; return 1; }
		rm -rf "$f" "$d"
		NOTE="file 5 B: $b sector; directory $ds B: $db sectors"
	}
	check "st_blocks of a small file and a new directory" inline_blocks

	bigdir() {
		local d=$M/bigdir n t0=$SECONDS i0 i1 i2
		i0=$(stat -f -c %d "$M")
		mkdir "$d" || { WHY="mkdir"; return 1; }
		perl -e 'use Fcntl; my $d = shift; for my $i (0 .. 99999) {
			sysopen(my $f, sprintf("%s/f%06d", $d, $i), O_CREAT|O_EXCL|O_WRONLY, 0644)
				or die "create $i: $!\n"; close $f }' "$d" 2>"$T/bigdir.err" ||
			{ WHY="create: $(cat "$T/bigdir.err")"; return 1; }
		for n in 000000 000001 049999 077777 099999; do
			[ -f "$d/f$n" ] || { WHY="stat f$n"; return 1; }
		done
		[ ! -e "$d/f100000" ] || { WHY="f100000 exists"; return 1; }
		n=$(perl -e 'opendir(my $d, shift) or die; print scalar(grep { !/^\.\.?$/ } readdir $d)' "$d")
		[ "$n" = 100000 ] || { WHY="readdir lists $n entries, not 100000"; return 1; }
		[ "$(stat -c %h "$d")" = 2 ] || { WHY="link count $(stat -c %h "$d")"; return 1; }
		i1=$(stat -f -c %d "$M")
		[ $((i0 - i1)) -ge 100001 ] || { WHY="statfs free inodes went from $i0 to $i1 for 100,001 new inodes"; return 1; }
		drop_caches
		[ -f "$d/f054321" ] || { WHY="stat f054321 after dropping caches"; return 1; }
		# remove as rm -r does: unlink each entry as readdir returns it; every
		# name must come back exactly once although the directory shrinks under
		# the readdir cookies
		n=$(perl -e 'my $d = shift; opendir(my $h, $d) or die "opendir: $!\n"; my (%seen, $n);
			while (defined(my $e = readdir $h)) { next if $e =~ /^\.\.?$/;
				die "readdir returned $e twice\n" if $seen{$e}++;
				unlink("$d/$e") or die "unlink $e: $!\n"; $n++ }
			print $n' "$d" 2>"$T/bigdir.err") || { WHY="readdir+unlink: $(cat "$T/bigdir.err")"; return 1; }
		[ "$n" = 100000 ] || { WHY="readdir+unlink saw $n entries, not 100000"; return 1; }
		n=$(ls -A "$d" | wc -l)
		[ "$n" = 0 ] || { WHY="$n entries left"; return 1; }
		rmdir "$d" || { WHY="rmdir"; return 1; }
		i2=$(stat -f -c %d "$M")
		[ "$i2" -ge "$i0" ] || { WHY="statfs free inodes: $i0 before, $i2 after removing everything"; return 1; }
		NOTE="$((SECONDS - t0)) s"
	}
	check "100,000-entry directory" bigdir

	# marks in a sparse file: past 4 GiB (indirect nodes), past ~8.5 GiB
	# (double indirect nodes), at the end of 20 GiB
	BIGMARKS="$(((4 << 30) + 12388)) $((9 << 30)) $(((16 << 30) + 4095)) $(((20 << 30) - 10))"
	check_big5() {
		local f=$M/big20 off e
		[ "$(stat -c %s "$f")" = $((20 << 30)) ] || { WHY="size $(stat -c %s "$f")"; return 1; }
		for off in $BIGMARKS; do
			e=$(dd if="$f" iflag=skip_bytes bs=64K skip="$off" count=1 status=none | head -c 10)
			[ "$e" = "$(printf '%010x' "$off")" ] || { WHY="at $off: '$e'"; return 1; }
		done
		e=$(dd if="$f" iflag=skip_bytes bs=64K skip=$((3 << 30)) count=1 status=none | tr -d '\0' | wc -c)
		[ "$e" = 0 ] || { WHY="a hole reads $e non-zero bytes"; return 1; }
		[ $(($(stat -c %b "$f") * 512)) -lt $((1 << 20)) ] || { WHY="st_blocks $(stat -c %b "$f")"; return 1; }
	}
	big5() {
		local f=$M/big20 off
		truncate -s 20G "$f" || { WHY="truncate -s 20G"; return 1; }
		for off in $BIGMARKS; do
			printf '%010x' "$off" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none ||
				{ WHY="write at $off"; return 1; }
		done
		check_big5 || return 1
		drop_caches
		check_big5
	}
	check "sparse 20 GiB file (writes past 4 GiB, 9 GiB, 16 GiB)" big5

	appendtrunc() {
		local f=$M/app
		printf a >"$f" && printf b >>"$f" && printf c >>"$f"
		# O_APPEND writes go to the end whatever the offset
		perl -e 'use Fcntl; sysopen(my $f, shift, O_WRONLY|O_APPEND) or die; sysseek($f, 0, 0); syswrite($f, "d")' "$f"
		drop_caches
		[ "$(cat "$f")" = abcd ] || { WHY="O_APPEND: '$(cat "$f")', expected 'abcd'"; return 1; }
		# O_TRUNC on a file whose pages are not in the page cache (as after a remount)
		head -c 10000 /dev/urandom >"$M/trunc"
		head -c 10000 /dev/urandom >"$M/trunc0"
		drop_caches
		printf xyz >"$M/trunc"   # O_WRONLY|O_CREAT|O_TRUNC
		: >"$M/trunc0"
		drop_caches
		[ "$(stat -c %s "$M/trunc")" = 3 ] && [ "$(stat -c %s "$M/trunc0")" = 0 ] ||
			{ WHY="open(O_TRUNC) did not truncate: sizes $(stat -c %s "$M/trunc") and $(stat -c %s "$M/trunc0") after dropping caches, expected 3 and 0"; return 1; }
		[ "$(cat "$M/trunc")" = xyz ] || { WHY="O_TRUNC: contents"; return 1; }
	}
	check "O_APPEND, O_TRUNC" appendtrunc

	direct_io() {
		head -c 1M /dev/urandom >"$T/dio.src"
		dd if="$T/dio.src" of="$M/dio" bs=64K oflag=direct status=none || { WHY="O_DIRECT write"; return 1; }
		# 512-byte direct writes inside a 4 KiB block
		dd if="$T/dio.src" of="$M/dio" bs=512 skip=100 seek=7 count=3 oflag=direct conv=notrunc status=none ||
			{ WHY="512-byte O_DIRECT write"; return 1; }
		cp "$T/dio.src" "$T/dio.exp"
		dd if="$T/dio.src" of="$T/dio.exp" bs=512 skip=100 seek=7 count=3 conv=notrunc status=none
		drop_caches
		dd if="$M/dio" of="$T/dio.back" bs=64K iflag=direct status=none || { WHY="O_DIRECT read"; return 1; }
		cmp -s "$T/dio.back" "$T/dio.exp" || { WHY="O_DIRECT data: $(cmp "$T/dio.back" "$T/dio.exp" 2>&1)"; return 1; }
		cmp -s "$M/dio" "$T/dio.exp" || { WHY="buffered read after O_DIRECT writes"; return 1; }
	}
	check "O_DIRECT writes and reads" direct_io

	dio_race() {
		local out
		[ -n "$FSOPS" ] || { WHY="no fsops"; return 1; }
		if ! out=$("$FSOPS" --dio-race "$M" 3000 2>&1); then
			WHY="$(echo "$out" | grep -c 'not a whole') torn reads, e.g. $(echo "$out" | grep -m1 'not a whole' | sed 's/^fsops: dio-race: //')"
			return 1
		fi
		NOTE=$(echo "$out" | awk '/reads,/ {r += $5} END {print r " reads"}')
	}
	check "O_DIRECT reads racing rewrites see whole old or new blocks" dio_race

	special() {
		mkfifo "$M/fifo" && mknod "$M/null" c 1 3 && mknod "$M/blk" b 7 200 && mknod "$M/bigdev" c 300 70000 ||
			{ WHY="mkfifo/mknod failed"; return 1; }
		check_special || return 1
		# the FIFO works through the mount (the kernel handles it)
		timeout 10 sh -c 'echo through-fifo >"$1"' sh "$M/fifo" &
		[ "$(timeout 10 cat "$M/fifo")" = through-fifo ] || { WHY="the FIFO does not pass data"; return 1; }
	}
	check_special() {
		local got
		got=$(stat -c '%F %t:%T' "$M/fifo" "$M/null" "$M/blk" "$M/bigdev" | tr '\n' ,)
		[ "$got" = "fifo 0:0,character special file 1:3,block special file 7:c8,character special file 12c:11170," ] ||
			{ WHY="stat: $got"; return 1; }
	}
	check "mknod FIFO, char and block devices" special

	# POSIX ACLs: a default ACL is inherited and the umask then does not apply
	# (the kernel must leave the umask to zlfs: FUSE_CAP_DONT_MASK); without a
	# default ACL the umask applies; an access ACL entry is kept (the kernel
	# enforces it: FUSE_CAP_POSIX_ACL).
	acls() {
		local got
		mkdir "$M/acl" && setfacl -m d:u::r-x,d:g::r--,d:o::--- "$M/acl" ||
			{ WHY="setfacl -d failed"; return 1; }
		(umask 722 && touch "$M/acl/f" && mkdir "$M/acl/d") || { WHY="create under the ACL"; return 1; }
		got=$(stat -c %A "$M/acl/f" "$M/acl/d" | tr '\n' ,)
		[ "$got" = "-r--r-----,dr-xr-----," ] || { WHY="modes under a default ACL with umask 722: $got"; return 1; }
		getfacl -cp "$M/acl/d" 2>/dev/null | grep -q '^default:other::---' ||
			{ WHY="the new directory did not inherit the default ACL"; return 1; }
		(umask 027 && touch "$M/acl-f" && mkdir "$M/acl-d") || { WHY="create"; return 1; }
		got=$(stat -c %A "$M/acl-f" "$M/acl-d" | tr '\n' ,)
		[ "$got" = "-rw-r-----,drwxr-x---," ] || { WHY="modes with umask 027 and no ACL: $got"; return 1; }
		setfacl -m u:nobody:r "$M/acl-f" && getfacl -cp "$M/acl-f" | grep -q '^user:nobody:r--$' &&
			[ "$(stat -c %A "$M/acl-f")" = "-rw-r-----" ] ||
			{ WHY="an access ACL entry: $(getfacl -cp "$M/acl-f" | tr '\n' ' ')"; return 1; }
		rm -rf "$M/acl" "$M/acl-f" "$M/acl-d"
	}
	check "POSIX ACLs: default ACL inherited without the umask, umask without one, access ACL kept" acls

	# Setting an access ACL drops setgid unless the caller is in the file's
	# group (as chmod does); the mount has allow_other for this.
	acl_sgid() {
		local got
		chmod o+x "$T" && chmod 777 "$M" && touch "$M/sg" && chown 100:100 "$M/sg" && chmod 2755 "$M/sg" ||
			{ WHY="setup"; return 1; }
		setpriv --reuid=100 --regid=101 --clear-groups setfacl -m u::rwx,g::rwx,o::rwx "$M/sg" ||
			{ WHY="setfacl as the owner"; return 1; }
		got=$(stat -c %A "$M/sg")
		[ "$got" = "-rwxrwxrwx" ] || { WHY="not in the group: $got, setgid should be gone"; return 1; }
		chmod 2755 "$M/sg"
		setpriv --reuid=100 --regid=100 --clear-groups setfacl -m u::rwx,g::rwx,o::rwx "$M/sg"
		got=$(stat -c %A "$M/sg")
		[ "$got" = "-rwxrwsrwx" ] || { WHY="in the group: $got, setgid should stay"; return 1; }
		rm -f "$M/sg"
		chmod 755 "$M"
	}
	check "an access ACL set by a non-member of the file's group drops setgid" acl_sgid

	# The kernel stamps writes with its coarse clock; zlfs's own stamps must
	# not run ahead of it, or a file changed later shows an earlier ctime.
	ctime_order() {
		local bad
		echo a > "$M/tsf" || return 1
		bad=$(cd "$M" && perl -MTime::HiRes=stat -e 'my $bad = 0;
			for my $i (1..200) {
				open(my $r, ">", "tsr") or die; close $r;
				open(my $w, ">>", "tsf") or die; print $w "x"; close $w;
				my @r = stat("tsr"); my @f = stat("tsf");
				$bad++ if $f[10] < $r[10]; unlink "tsr";
			}
			print $bad')
		rm -f "$M/tsf"
		[ "$bad" = 0 ] || { WHY="$bad of 200 later writes carried an earlier ctime"; return 1; }
	}
	check "timestamps: a later change never carries an earlier ctime" ctime_order

	# File handles (open_by_handle_at, what NFS export needs): a handle opens
	# its file after the kernel forgot the inode and after a remount, and is
	# stale once the file is gone.  Kept for after the remount below.
	handles() {
		echo handle-data > "$M/fh" && "$B/tests/fhandle" save "$M/fh" "$T/fh.handle" ||
			{ WHY="name_to_handle_at"; return 1; }
		echo gone > "$M/fh-gone" && "$B/tests/fhandle" save "$M/fh-gone" "$T/fh-gone.handle" ||
			{ WHY="name_to_handle_at"; return 1; }
		rm "$M/fh-gone"
		echo 2 > /proc/sys/vm/drop_caches
		local got
		got=$("$B/tests/fhandle" open "$M" "$T/fh.handle") && [ "$got" = handle-data ] ||
			{ WHY="open_by_handle_at after the caches were dropped: $got"; return 1; }
		"$B/tests/fhandle" open "$M" "$T/fh-gone.handle" >/dev/null 2>&1
		[ $? = 2 ] || { WHY="a removed file's handle is not stale (ESTALE)"; return 1; }
	}
	check "file handles: open_by_handle_at after the kernel forgot the inode; ESTALE once removed" handles

	# unlink while open: the space comes back once the file is closed (at the latest
	# after an unmount and a remount)
	unlink_open() {
		local f0 f1 f2 f3
		sync
		f0=$(stat -f -c %f "$M")
		dd if=/dev/urandom of="$M/ul" bs=1M count=200 conv=fsync status=none || { WHY="write"; return 1; }
		f1=$(stat -f -c %f "$M")
		[ $((f0 - f1)) -ge 51200 ] || { WHY="200 MiB written but only $((f0 - f1)) blocks used"; return 1; }
		exec 7<"$M/ul"
		rm "$M/ul"
		[ ! -e "$M/ul" ] || { WHY="still there after rm"; exec 7<&-; return 1; }
		local n
		n=$(head -c 1M <&7 | wc -c)
		[ "$n" = 1048576 ] || { WHY="reading the unlinked file gave $n bytes"; exec 7<&-; return 1; }
		f2=$(stat -f -c %f "$M")
		exec 7<&-
		sleep 0.2
		umnt "$M" "$IMG" || return 1
		fsck_clean "$IMG" || return 1
		mnt "$IMG" "$M" || return 1
		f3=$(stat -f -c %f "$M")
		[ "$f3" -ge $((f0 - 256)) ] ||
			{ WHY="free blocks: $f0 before, $f1 written, $f2 unlinked while open, $f3 after close+remount"; return 1; }
		NOTE="free blocks $f0 -> $f1 -> $f2 (unlinked, open) -> $f3 (closed, remounted)"
	}
	check "unlink while open gives the space back" unlink_open
	mountpoint -q "$M" || mnt "$IMG" "$M" || bad "posix remount" "$WHY"

	persisted() {  # after the remount above
		check_big5 || { WHY="after remount: $WHY"; return 1; }
		check_special || { WHY="after remount: $WHY"; return 1; }
		[ "$(cat "$M/app")" = abcd ] || { WHY="O_APPEND file after remount"; return 1; }
		[ "$(cat "$M/trunc" 2>/dev/null)" = xyz ] && [ "$(stat -c %s "$M/trunc0")" = 0 ] ||
			{ WHY="O_TRUNC files after remount: sizes $(stat -c %s "$M/trunc") and $(stat -c %s "$M/trunc0"), expected 3 and 0"; return 1; }
		[ "$(cat "$M/ns/file")" = data ] || { WHY="ns/file after remount"; return 1; }
		local got
		got=$("$B/tests/fhandle" open "$M" "$T/fh.handle") && [ "$got" = handle-data ] ||
			{ WHY="a file handle from before the remount: $got"; return 1; }
	}
	check "big, special, O_APPEND/O_TRUNC files, a file handle after remount" persisted

	second_mount() {
		local out rc=0 t0=$SECONDS
		mkdir -p "$T/second.mnt"
		"$ZLFS" "$IMG" "$T/second.mnt" >"$T/second.out" 2>&1 || rc=$?
		out=$(cat "$T/second.out")
		if [ $rc = 0 ] || mountpoint -q "$T/second.mnt"; then
			WHY="a second mount of a mounted image succeeded"
			fusermount3 -u "$T/second.mnt" 2>/dev/null
			return 1
		fi
		echo "$out" | grep -qiE 'lock|busy|in use|already' || { WHY="unclear message: '$out'"; return 1; }
		[ "$(cat "$M/ns/file")" = data ] || { WHY="the first mount no longer works"; return 1; }
		NOTE="exit $rc after $((SECONDS - t0)) s: $(echo "$out" | head -1)"
	}
	check "second mount refused" second_mount

	remount_now() {
		echo again >"$M/again"
		fusermount3 -u "$M" || { WHY="unmount"; return 1; }
		# no waiting for the old daemon to exit
		mnt "$IMG" "$M" || return 1
		[ "$(cat "$M/again")" = again ] || { WHY="data written before the unmount"; return 1; }
	}
	check "remount right after unmount" remount_now
	check "posix unmount" umnt "$M" "$IMG"
	check "posix fsck" fsck_clean "$IMG"

	# -o ro: reads work, writes give EROFS, and the image is not touched (its
	# metadata zones and zone state)
	read_only() {
		local before after
		before=$({ head -c 512M "$IMG"; cat "$IMG.zst"; } | md5sum)
		mnt "$IMG" "$M" -o ro || return 1
		[ "$(cat "$M/ns/file")" = data ] || { WHY="read"; fusermount3 -u "$M"; return 1; }
		expect EROFS "$CREATE" "$M/ns/new" || { fusermount3 -u "$M"; return 1; }
		expect EROFS 'unlink($ARGV[0])' "$M/ns/file" || { fusermount3 -u "$M"; return 1; }
		umnt "$M" "$IMG" || return 1
		after=$({ head -c 512M "$IMG"; cat "$IMG.zst"; } | md5sum)
		[ "$before" = "$after" ] || { WHY="a read-only mount changed the image"; return 1; }
	}
	check "read-only mount" read_only
	rm -f "$IMG" "$IMG.zst"
fi

# ---- /proc/mounts ----------------------------------------------------------------------

# The mount's source is the spec as given and its type plain "fuse": libfuse
# adds subtype=zlfs when no fsname precedes its command-line parsing, and
# tools such as xfstests with FSTYP=fuse look for "fuse".  (mount -t
# fuse.zlfs gives the same once zlfs is installed where mount.fuse3 finds it;
# mount(8) does not pass PATH on, so that is not tested here.)
proc_mounts() {
	local img=$T/pm.img m=$T/pm.mnt got
	"$ZDEV" create "$img" --size 1G --zone-size 32M --conv-zones 8 >/dev/null &&
		"$MKFS" "$img" >/dev/null || { WHY="create/mkfs"; return 1; }
	mkdir -p "$m"
	for spec in "$img" "$img?qd=8"; do
		"$ZLFS" "$spec" "$m" -o mode=zwl || { WHY="mount $spec"; return 1; }
		got=$(awk -v m="$m" '$2 == m {print $1, $3}' /proc/mounts)
		umnt "$m" "$img" || return 1
		[ "$got" = "$spec fuse" ] || { WHY="/proc/mounts says '$got', expected '$spec fuse'"; return 1; }
	done
	rm -f "$img" "$img.zst"
}
want posix && check "/proc/mounts: the spec as given, type fuse" proc_mounts

# The kernel's FUSE keeps the readahead INIT asks for (1 MiB) only up to
# the mount's backing-device readahead, 128 KiB unless raised: the daemon
# (root here) raises it, so a sequential read comes in 1 MiB requests.
readahead() {
	local img=$T/ra.img m=$T/ra.mnt dev ra
	"$ZDEV" create "$img" --size 1G --zone-size 32M --conv-zones 8 >/dev/null &&
		"$MKFS" "$img" >/dev/null || { WHY="create/mkfs"; return 1; }
	mnt "$img" "$m" || return 1
	dev=$(mountpoint -d "$m")
	ra=$(cat "/sys/class/bdi/$dev/read_ahead_kb" 2>/dev/null)
	umnt "$m" "$img" || return 1
	rm -f "$img" "$img.zst"
	[ "$ra" = 1024 ] || { WHY="read_ahead_kb of bdi $dev is '$ra', expected 1024"; return 1; }
}
want posix && check "readahead of the mount raised to max_readahead (1 MiB)" readahead

# ---- logs that end exactly on a segment or zone boundary --------------------------------

# A 2 MiB file fills the warm data log's segment exactly, a 64 MiB one its
# zone: the checkpoint must never record a log at block 512 of its segment
# (fsck.f2fs: "Checkpoint is polluted").  Through an fsync, an unmount and
# a remount, with the data read back.
boundaries() {
	local img=$T/bound.img m=$T/bound.mnt out sums
	"$ZDEV" create "$img" --size 2G --zone-size 64M --conv-zones 8 >/dev/null &&
		"$MKFS" "$img" >/dev/null || { WHY="create/mkfs"; return 1; }
	mnt "$img" "$m" || return 1
	head -c 2M /dev/urandom > "$m/seg" && sync "$m/seg" ||
		{ WHY="2 MiB file + fsync"; fusermount3 -u "$m"; return 1; }
	head -c 62M /dev/urandom > "$m/zone" && head -c 64M /dev/urandom > "$m/zone2" ||
		{ WHY="64 MiB files"; fusermount3 -u "$m"; return 1; }
	sums=$(cd "$m" && sha1sum seg zone zone2)
	umnt "$m" "$img" || return 1
	fsck_clean "$img" || return 1
	mnt "$img" "$m" || return 1
	out=$(cd "$m" && sha1sum seg zone zone2)
	umnt "$m" "$img" || return 1
	[ "$out" = "$sums" ] || { WHY="data changed across the remount"; return 1; }
	rm -f "$img" "$img.zst"
}
want posix && check "logs ending on a segment / zone boundary: fsync, unmount, fsck.f2fs, remount" boundaries

# ---- a full filesystem ------------------------------------------------------------------

# Writing more than fits must fail with ENOSPC (with the kernel's writeback
# cache in front of zlfs, write() itself may succeed: fsync or close must
# report it); then everything keeps working, the space comes back, and
# fsck is clean.
enospc() {
	local r=0
	enospc_body || r=1
	mountpoint -q "$T/full.mnt" && fusermount3 -u "$T/full.mnt"
	return $r
}
enospc_body() {
	local img=$T/full.img m=$T/full.mnt out
	"$ZDEV" create "$img" --size 1G --zone-size 32M --conv-zones 8 >/dev/null &&
		"$MKFS" "$img" >/dev/null || { WHY="create/mkfs"; return 1; }
	mnt "$img" "$m" || return 1
	echo before >"$m/before"
	out=$(perl -e 'use Fcntl; use IO::Handle;
		sysopen(my $f, shift, O_WRONLY|O_CREAT|O_TRUNC, 0644) or die "open: $!\n";
		my $b = "z" x (1 << 20); my $n = 0;
		for (1 .. 400) { my $w = syswrite($f, $b); if (!defined $w) { print "write:", ($!{ENOSPC} ? 1 : 0); exit } $n += $w }
		if (!$f->sync) { print "fsync:", ($!{ENOSPC} ? 1 : 0); exit }
		if (!close($f)) { print "close:", ($!{ENOSPC} ? 1 : 0); exit }
		print "none"' "$m/huge" 2>&1)
	case $out in
	write:1 | fsync:1 | close:1) NOTE="ENOSPC from ${out%%:*}" ;;
	*) WHY="400 MiB into a 160 MiB filesystem: '$out' (ENOSPC expected by close at the latest)"; return 1 ;;
	esac
	rm -f "$m/huge"
	sync
	dd if=/dev/urandom of="$m/after" bs=1M count=50 conv=fsync status=none ||
		{ WHY="50 MiB after freeing the space: failed"; return 1; }
	mkdir "$m/dir" && echo x >"$m/dir/x" || { WHY="mkdir/create after ENOSPC"; return 1; }
	[ "$(cat "$m/before")" = before ] || { WHY="a file written before is damaged"; return 1; }
	umnt "$m" "$img" || return 1
	fsck_clean "$img" || return 1
	mnt "$img" "$m" || return 1
	[ "$(stat -c %s "$m/after")" = $((50 << 20)) ] && [ "$(cat "$m/dir/x")" = x ] ||
		{ WHY="after the remount"; return 1; }
	umnt "$m" "$img" || return 1
	rm -f "$img" "$img.zst"
}
want enospc && check "ENOSPC on a full filesystem, then usable again" enospc

# ---- 3. sload.f2fs ---------------------------------------------------------------------

# meta DIR: one line per entry: path, type, size, mode, mtime in seconds (size and mtime
# not for directories), links
meta() {
	(cd "$1" && find . -printf '%p\t%y\t%s\t%m\t%T@\t%n\n' |
		awk -F'\t' -v OFS='\t' '{ if ($2 == "d") $3 = $5 = "-"; sub(/\..*/, "", $5); print }' | LC_ALL=C sort)
}
sload() {
	local r=0
	sload_body || r=1
	mountpoint -q "$T/sload.mnt" && fusermount3 -u "$T/sload.mnt"
	return $r
}
sload_body() {
	local s=$T/sload.src img=$T/sload.img m=$T/sload.mnt out i
	mkdir -p "$s/dir/deeper/deepest" "$s/empty dir" "$s/many"
	echo hello >"$s/small"
	: >"$s/empty"
	head -c 3000 /dev/urandom >"$s/dir/3000"            # fits inline
	head -c 5000 /dev/urandom >"$s/dir/5000"
	head -c 1048576 /dev/urandom >"$s/dir/deeper/1m"
	head -c 3333333 /dev/urandom >"$s/dir/deeper/deepest/3m"
	for i in $(seq 300); do echo "file $i" >"$s/many/file-$i"; done
	echo spaces >"$s/name with spaces"
	ln -s dir/5000 "$s/link"
	ln -s "$(printf 'x%.0s' $(seq 200))" "$s/longlink"
	chmod 0600 "$s/small"
	truncate -s 2G "$img"
	out=$(mkfs.f2fs -f -q "$img" 2>&1) || { WHY="mkfs.f2fs: $out"; return 1; }
	out=$(sload.f2fs -f "$s" "$img" 2>&1) || { WHY="sload.f2fs: $(echo "$out" | tail -2)"; return 1; }
	fsck_clean "$img" || { WHY="before zlfs: $WHY"; return 1; }
	mnt "$img" "$m" || return 1
	out=$(diff -r --no-dereference "$s" "$m" 2>&1) || { WHY="diff -r: $(echo "$out" | head -3)"; return 1; }
	# types, sizes, modes, mtimes (sload.f2fs keeps files' whole seconds, and stamps
	# directories with its own clock: theirs are left out) and link counts
	out=$(diff <(meta "$s") <(meta "$m") 2>&1) || { WHY="metadata: $(echo "$out" | head -3 | tr '\n' ' ')"; return 1; }
	# writes: new files, an overwrite, a deletion, a rename, a new directory
	mkdir "$m/new dir" "$s/new dir"
	head -c 200000 /dev/urandom | tee "$m/new dir/file" >"$s/new dir/file"
	printf 'changed' | dd of="$m/dir/5000" bs=1 seek=100 conv=notrunc status=none
	printf 'changed' | dd of="$s/dir/5000" bs=1 seek=100 conv=notrunc status=none
	rm "$m/many/file-7" "$s/many/file-7"
	mv "$m/dir/3000" "$m/many/3000" && mv "$s/dir/3000" "$s/many/3000"
	echo more >>"$m/small" && echo more >>"$s/small"                  # inline data
	echo new >"$m/dir/deeper/new" && echo new >"$s/dir/deeper/new"     # a small directory
	truncate -s 500000 "$m/dir/deeper/1m" "$s/dir/deeper/1m"           # a file sload mapped by an extent
	out=$(diff -r --no-dereference "$s" "$m" 2>&1) || { WHY="diff after writes: $(echo "$out" | head -3)"; return 1; }
	umnt "$m" "$img" || return 1
	fsck_clean "$img" || { WHY="after zlfs: $WHY"; return 1; }
	mnt "$img" "$m" || return 1
	out=$(diff -r --no-dereference "$s" "$m" 2>&1) || { WHY="diff after remount: $(echo "$out" | head -3)"; return 1; }
	out=$(diff <(meta "$s" | cut -f1-4,6) <(meta "$m" | cut -f1-4,6) 2>&1) ||
		{ WHY="metadata after remount: $(echo "$out" | head -3 | tr '\n' ' ')"; return 1; }
	umnt "$m" "$img" || return 1
	rm -f "$img"
}
want sload && check "sload.f2fs image mounts, reads back, takes writes, passes fsck" sload

# ---- nothing left behind ---------------------------------------------------------------

leftover() {
	local p i
	for i in $(seq 100); do   # daemons of the last unmounts may still be writing
		[ -z "$(daemons)" ] && break
		sleep 0.1
	done
	p=$(daemons)
	[ -z "$p" ] || { WHY="zlfs daemons still running: $p"; return 1; }
	p=$(awk -v t="$T/" 'index($2, t) == 1 {print $2}' /proc/mounts)
	[ -z "$p" ] || { WHY="still mounted: $p"; return 1; }
}
check "no zlfs process or mount left" leftover

if [ $FAILS = 0 ]; then
	echo "check-mount: ok ($NCHECKS checks, $(($(date +%s) - START)) s)"
	exit 0
fi
for f in "$T"/*.zlfs.log; do   # what the daemons said (device errors, crashes)
	[ -f "$f" ] && grep -v '^== ' "$f" | grep -q . && { echo "  $(basename "$f"):"; grep -v '^== ' "$f" | head -20 | sed 's/^/    /'; }
done
echo "check-mount: FAIL ($FAILS of $NCHECKS checks failed, $(($(date +%s) - START)) s)"
exit 1
