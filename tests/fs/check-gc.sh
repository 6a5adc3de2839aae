#!/bin/bash
# check-gc.sh BUILD_DIR - garbage collection through FUSE, on 1 GiB images
# with 16 MiB zones (about 60 sections).
#
# Fill to 100% (buffered and O_DIRECT), delete, fill again: three cycles,
# each within 1% of the first, ENOSPC only once df shows (almost) nothing
# free.  The last blocks taken by directories and small files: never more
# valid blocks than the user's share.  At 80% and 90% of the user's
# capacity, five passes of random 4 KiB O_DIRECT overwrites (8 threads) and
# of whole-file rewrites, every byte checked (tests/fs/gcload.c), fsck
# clean, remount and check again.  The daemon SIGKILLed and the device's
# power cut while GC works hard (gc=urgent): remount, fsck clean, fsynced
# data intact.  And /.zlfs: reached by name, not listed, read-only; its
# status and zones files parse.
#
# check-gc.sh BUILD_DIR PART... runs those parts only: virtual,
# fill-buffered, fill-direct, fill-small, random-80, random-90, rewrite-80,
# rewrite-90, kill, power.
#
# Prints "check-gc: CHECK ok" or "check-gc: CHECK FAIL reason" per check, the
# last that no zlfs daemon or mount of its own is left, then "check-gc: ok (N
# checks, S s)" (exit 0) only if every check passed, else exit 1. Exit 77
# (skipped) without root or /dev/fuse. KEEP=1 keeps the images of a failed run.
NAME=check-gc
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"

PARTS="virtual fill-buffered fill-direct fill-small random-80 random-90 rewrite-80 rewrite-90 kill power"
shift
ONLY=" $* "
for k in $ONLY; do
	[[ " $PARTS " == *" $k "* ]] || die "no part $k (there are: $PARTS)"
done
# sel PART: named on the command line, or none named
sel() { [ "$ONLY" = "  " ] || [[ $ONLY == *" $1 "* ]]; }

GCLOAD=$B/tests/gcload
gc_img() {  # IMG: a fresh 1 GiB image, 16 MiB zones
	rm -f "$1" "$1.zst"
	"$ZDEV" create "$1" --size 1G --zone-size 16M --conv-zones 4 >/dev/null &&
		"$MKFS" "$1" >/dev/null || { WHY="create/mkfs failed"; return 1; }
}
avail_kb() { df -k --output=avail "$1" | tail -1 | tr -d ' '; }
inodes() { sed -n 's/^inodes_in_memory=//p' "$1/.zlfs/status"; }
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
		local nin i
		nin=$(inodes "$m")
		rm -f "$m/fill" || { WHY="rm failed"; umnt "$m" "$img"; return 1; }
		# The kernel tells zlfs that the file is gone (FORGET) once its last
		# reference goes, which may be after rm returned: writeback of its
		# pages holds one, and on a busy machine that lasts.  Once zlfs has
		# dropped the inode, the space is back at once.
		for i in $(seq 600); do
			[ "$(inodes "$m")" -lt "$nin" ] && break
			sleep 0.1
		done
		left=$(avail_kb "$m")
		if [ "$left" -lt $((avail0 * 99 / 100)) ]; then
			WHY="cycle $c: after rm only $left KiB of $avail0 available (zlfs's inodes in memory: $nin before the rm, $(inodes "$m") now)"
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
	[ "$(head -1 "$m/.zlfs/zones")" = "# zone type cond wp valid cap log dev" ] || fail="$fail zones header;"
	# 1 GiB of 16 MiB zones
	[ "$(grep -vc '^#' "$m/.zlfs/zones")" = 64 ] || fail="$fail $(grep -vc '^#' "$m/.zlfs/zones") zone lines, not 64;"
	grep -q ' warm_data 0$' "$m/.zlfs/zones" || fail="$fail no warm_data log marked on device 0;"
	grep -qx 'devices=1' "$m/.zlfs/status" || fail="$fail no devices=1;"
	grep -q "^device0=$img\$" "$m/.zlfs/status" || fail="$fail device0 is not $img;"
	grep -q '^device0_logs=.*warm_data' "$m/.zlfs/status" || fail="$fail warm_data not on device0;"
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

sel virtual && check "/.zlfs: hidden, read-only, status and zones" gc_virtual
if [ ! -x "$GCLOAD" ]; then
	bad "gc" "$GCLOAD missing (build first)"
else
	sel fill-buffered && check "gc: fill to 100% buffered, delete, fill again (3 cycles)" gc_fill_cycles buffered
	sel fill-direct && check "gc: fill to 100% O_DIRECT, delete, fill again (3 cycles)" gc_fill_cycles direct
	sel fill-small && check "gc: the last blocks go to directories and small files" gc_fill_small
	sel random-80 && check "gc: 80% full, 5x random 4K O_DIRECT overwrites" gc_overwrite 80 random
	sel random-90 && check "gc: 90% full, 5x random 4K O_DIRECT overwrites" gc_overwrite 90 random
	sel rewrite-80 && check "gc: 80% full, 5x whole-file rewrites" gc_overwrite 80 rewrite
	sel rewrite-90 && check "gc: 90% full, 5x whole-file rewrites" gc_overwrite 90 rewrite
	sel kill && check "gc: daemon SIGKILLed during GC" gc_crash kill
	sel power && check "gc: power cut during GC" gc_crash power
fi
finish
