#!/bin/bash
# check-kill.sh BUILD_DIR - the zlfs daemon killed (SIGKILL) at random
# moments, again and again on one volume: nothing fsync promised may be lost,
# every remount must succeed, fsck.f2fs must find every image clean.
#
# One long-lived killload (tests/fs/killload.c) drives random operations
# through the mount and keeps the model of what is promised: a file's content
# and size after fsync/fdatasync of it; a name after fsync of its directory,
# or after fsync of the file it was created for.  Each iteration:
#   mount (gc=urgent in some) -> killload checks every promised file byte for
#   byte and reads everything else that is there (no I/O error allowed) ->
#   random workload: creates, writes of random sizes at random offsets,
#   truncates, renames (over files too), links, unlinks, fallocate and punch
#   hole, fsync, fdatasync, fsync of directories, sync/syncfs; in some
#   iterations big files fill the volume and are overwritten, so GC runs ->
#   once killload has done a random number of operations, a random delay,
#   then SIGKILL -> wait until killload has seen the mount die and the daemon
#   is gone -> lazy unmount -> fsck.f2fs --dry-run of the image as the kill
#   left it (exit 0, no [Fail]; fsck.f2fs reads the roll-forward chain too)
#   -> next iteration (the mount runs recovery).
# In some iterations the recovered volume is also unmounted cleanly, checked
# by fsck.f2fs and mounted again; always after a crash image that fsck.f2fs
# before 1.16 cannot read (rf_bound_bug below).  Nothing waits on a sleep
# for correctness: every wait is for a real condition, with bounds only a
# hung process hits.  The image is 512 MiB with 8 MiB zones, in /dev/shm
# (else /tmp).
#
# Environment:
#   ZLFS_KILL_SEED=N    base seed (default 20261201; printed, and in every FAIL)
#   ZLFS_KILL_ITERS=N   iterations (default 50)
#   ZLFS_KILL_OPTS=...  extra mount options, e.g. fsync=checkpoint
#   ZLFS_KILL_SYNC=promise   count sync/syncfs as promising everything (FUSE
#                       does not pass them to the daemon: expected to fail)
#   ZLFS_KILL_KEEP=1    keep the image, the logs and the op log of a failure
# Ends with "check-kill: ok (N iterations, M promised files checked)" (exit
# 0) or "check-kill: FAIL ..." (exit 1).  Exit 77 without root, /dev/fuse,
# fusermount3 or fsck.f2fs.  About 2 minutes on 2 cores.
NAME=check-kill
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
SEED=${ZLFS_KILL_SEED:-20261201}
ITERS=${ZLFS_KILL_ITERS:-50}
XOPTS=${ZLFS_KILL_OPTS:-}
START=$(date +%s)

need_fuse
need_tools fusermount3 fsck.f2fs mountpoint pgrep
need_built "$ZLFS" "$ZDEV" "$MKFS"

tmpdir /dev/shm 2>/dev/null || tmpdir
IMG=$T/d.img
M=$T/mnt
LOG=$T/zlfs.log          # the daemon's messages (it detaches: little)
OPLOG=$T/ops.log         # killload: one line per operation
mkdir -p "$M"
KL_PID=
FAILED=0

# killload from BUILD_DIR (unless older than its source), else compiled here
KL=
for f in "$B/tests/killload" "$B/tests/fs/killload"; do
	[ -x "$f" ] && ! [ "$SRC/tests/fs/killload.c" -nt "$f" ] && KL=$f && break
done
if [ -z "$KL" ]; then
	KL=$T/killload
	cc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$KL" "$SRC/tests/fs/killload.c" 2>"$T/cc.log" ||
		{ cat "$T/cc.log"; die "cannot build killload"; }
fi

on_exit() {
	[ -n "$KL_PID" ] && kill "$KL_PID" 2>/dev/null
	if [ "${ZLFS_KILL_KEEP:-0}" = 1 ] && [ "$FAILED" = 1 ]; then
		echo "check-kill: keeping the image d.img as the failure left it, ops.log, zlfs.log, killload.err, fsck.out"
		KEEP=1
	fi
}

IT=0
OPTS=
fail() {
	FAILED=1
	echo "check-kill: FAIL iteration $IT/$ITERS: $*"
	echo "check-kill: reproduce: ZLFS_KILL_SEED=$SEED ZLFS_KILL_OPTS='$XOPTS' ZLFS_KILL_ITERS=$ITERS${ZLFS_KILL_SYNC:+ ZLFS_KILL_SYNC=$ZLFS_KILL_SYNC}" \
		"bash tests/fs/check-kill.sh BUILD_DIR  (iteration $IT's operations follow from the seed;" \
		"the kill's moment does not)"
	echo "check-kill: this iteration mounted with '${OPTS:-}'; the daemon's log: $LOG"
	local path id
	path=$(echo "$*" | sed -n 's/.*path=\([^ :;#]*\).*/\1/p' | head -1)
	id=$(echo "$*" | sed -n 's/.*model #\([0-9]*\).*/\1/p' | head -1)
	if [ -n "$path" ] && [ -s "$OPLOG" ]; then
		echo "check-kill: the last operations on $path${id:+ or on file #$id under any name} (ITER.OP):"
		grep -E -- " $path[# ]${id:+|#$id( |\$)}" "$OPLOG" | grep -v ' FAIL ' | tail -30 | sed 's/^/    /'
	fi
	if [ -s "$OPLOG" ]; then
		echo "check-kill: the last operations of the run:"
		tail -8 "$OPLOG" | sed 's/^/    /'
	fi
	[ -s "$T/killload.err" ] && sed 's/^/    killload: /' "$T/killload.err" | tail -5
	[ -s "$LOG" ] && grep -v '^== ' "$LOG" | tail -5 | sed 's/^/    zlfs: /'
	exit 1
}

# rf_bound_bug: the crash image's fsck failure is f2fs-tools' own bug, fixed
# upstream by "f2fs-tools: fix # of total segments" (2023-02, after 1.15.0):
# its MAX_BLKADDR counts only the main segments from segment0, so a
# roll-forward dnode pointing at a block in the last (segment_count -
# segment_count_main) segments of the volume makes record_fsync_data fail
# (exit 255, nothing [Fail]).  True only for such an fsck, with that message,
# when the dnode it stopped at does point into that range.
rf_bound_bug() {
	local out=$1 node
	echo "$out" | grep -q 'record_fsync_data failed' || return 1
	case $(fsck.f2fs -V 2>&1) in *" 1.1"[0-5].*|*" 1."[0-9].*) ;; *) return 1 ;; esac
	command -v python3 >/dev/null || return 1
	node=$(fsck.f2fs --dry-run -d 1 "$IMG" 2>&1 | sed -n 's/^do_record_fsync_data: \[node\].*blkaddr = \([0-9]*\)$/\1/p' | tail -1)
	[ -n "$node" ] || return 1
	python3 - "$IMG" "$node" <<-'EOF'
	import struct, sys
	f = open(sys.argv[1], 'rb')
	f.seek(1024)
	sb = f.read(256)
	lbps, = struct.unpack_from('<I', sb, 20)            # log_blocks_per_seg
	segs, = struct.unpack_from('<I', sb, 48)            # segment_count
	main_segs, = struct.unpack_from('<I', sb, 68)       # segment_count_main
	seg0, = struct.unpack_from('<I', sb, 72)            # segment0_blkaddr
	lo, hi = seg0 + (main_segs << lbps), seg0 + (segs << lbps)
	f.seek(int(sys.argv[2]) * 4096)
	b = f.read(4096)
	nid, ino = struct.unpack_from('<II', b, 4096 - 24)
	addrs = struct.unpack_from('<923I', b, 360) if nid == ino else struct.unpack_from('<1018I', b, 0)
	sys.exit(0 if any(lo <= a < hi for a in addrs) else 1)
	EOF
}

RFBUG=0
FORCE_CLEAN=0
# fsck_clean WHEN [crash]: fsck.f2fs --dry-run exits 0 and reports nothing
# failed.  For a crash image, f2fs-tools' roll-forward bound bug (above) is
# let through: the recovered volume is then checked by fsck after a clean
# unmount in the next iteration instead.
fsck_clean() {
	local out rc=0
	out=$(fsck.f2fs --dry-run "$IMG" 2>&1) || rc=$?
	if [ "${2:-}" = crash ] && [ $rc = 255 ] && ! echo "$out" | grep -qE '\[(Fail|FAIL)\]|ASSERT' &&
	   rf_bound_bug "$out"; then
		RFBUG=$((RFBUG + 1))
		FORCE_CLEAN=1
		echo "check-kill: iteration $IT: fsck.f2fs cannot read the roll-forward chain (its pre-1.16 block bound);" \
			"the recovered volume gets fsck after a clean unmount"
		return 0
	fi
	if [ $rc != 0 ] || echo "$out" | grep -qE '\[(Fail|FAIL)\]|ASSERT'; then
		echo "$out" >"$T/fsck.out"
		{ echo "$out" | grep -E 'Fail|FAIL|ASSERT|rror' | head -15; echo "$out" | tail -12; } |
			sed 's/^/    fsck: /'
		fail "fsck.f2fs --dry-run $1: exit $rc, $(echo "$out" | grep -cE '\[(Fail|FAIL)\]|ASSERT') failure lines"
	fi
}

DPID=
# mnt OPTS: mount, and find the one daemon serving it
mnt() {
	local o=$1
	echo "== iteration $IT: zlfs $IMG $M ${o:+-o $o}" >>"$LOG"
	"$B/fs/zlfs" "$IMG" "$M" ${o:+-o "$o"} >>"$LOG" 2>&1 ||
		fail "mount ${o:+-o $o} failed: $(tail -2 "$LOG" | tr '\n' ' ')"
	mountpoint -q "$M" || fail "zlfs returned 0 but $M is not mounted"
	DPID=$(daemons)
	[ "$(echo "$DPID" | wc -w)" = 1 ] || fail "expected one zlfs daemon for the image, found: '$DPID'"
}

# gone: the daemon has exited (a bound only a hang reaches)
gone() {
	local i st
	for i in $(seq 1200); do
		st=$(awk '{print $3}' "/proc/$DPID/stat" 2>/dev/null)
		[ -z "$st" ] || [ "$st" = Z ] && return 0
		sleep 0.05
	done
	fail "zlfs daemon $DPID still there 60 s after $1"
}

# clean unmount: the final checkpoint, the daemon exits
umnt() {
	local i
	for i in $(seq 50); do
		fusermount3 -u "$M" 2>"$T/umount.err" && break
		sleep 0.2
	done
	mountpoint -q "$M" && fail "fusermount3 -u: $(cat "$T/umount.err")"
	gone "the unmount"
}

# killload: a coprocess, commands on its stdin, one answer line each
KL_ARGS=()
[ "${ZLFS_KILL_SYNC:-}" = promise ] && KL_ARGS+=(--sync-promise)
coproc KLP { exec "$KL" "$M" "$SEED" --log "$OPLOG" "${KL_ARGS[@]}" 2>"$T/killload.err"; }
KL_PID=$KLP_PID
KL_IN=${KLP[1]}
KL_OUT=${KLP[0]}
ANS=
kl_send() { echo "$*" >&"$KL_IN" || fail "killload is gone (sending '$*')"; }
# kl_read TIMEOUT WHAT: the next answer in ANS
kl_read() {
	ANS=
	read -r -t "$1" -u "$KL_OUT" ANS ||
		fail "no answer from killload in $1 s ($2): $(tail -2 "$T/killload.err" 2>/dev/null)"
	case $ANS in FAIL*) fail "${ANS#FAIL }" ;; esac
}

RANDOM=$((SEED % 32768))
echo "check-kill: seed $SEED, $ITERS iterations, mount options '${XOPTS}'${ZLFS_KILL_SYNC:+, ZLFS_KILL_SYNC=$ZLFS_KILL_SYNC}, killload $KL"
"$B/fs/zlfs-zdev" create "$IMG" --size 512M --zone-size 8M --conv-zones 8 >/dev/null ||
	fail "zlfs-zdev create"
"$B/mkfs/mkfs.zlfs" "$IMG" >"$T/mkfs.log" 2>&1 || { cat "$T/mkfs.log"; fail "mkfs.zlfs"; }

CHECKED=0
GCMOVED=0
GCRUNS=0
RESETS=0
NFILL=0
NGC=0
NCLEAN=0
st() { echo "$gcs" | sed -n "s/^$1=//p"; }   # a counter of the status file read last
opts_for() {   # gc=urgent or not, then the extra options
	local o=
	[ "$1" = 1 ] && o=gc=urgent
	[ -n "$XOPTS" ] && o=${o:+$o,}$XOPTS
	echo "$o"
}

for IT in $(seq 1 "$ITERS"); do
	FILL=0
	[ $((RANDOM % 4)) = 0 ] && FILL=$((60 + RANDOM % 21))
	[ $((IT % 10)) = 5 ] && FILL=$((65 + RANDOM % 16))   # at least every 10th
	URGENT=0
	{ [ "$FILL" != 0 ] || [ $((RANDOM % 5)) = 0 ]; } && URGENT=1
	ARM=$((5 + RANDOM % 400))
	ONP=$((RANDOM % 2))   # 1: armed by an fsync, so the kill often comes soon after one
	case $((RANDOM % 4)) in   # milliseconds between "armed" and the kill
	0) DMS=$((RANDOM % 5)) ;;
	1) DMS=$((RANDOM % 30)) ;;
	2) DMS=$((RANDOM % 100)) ;;
	*) DMS=$((RANDOM % 400)) ;;
	esac
	DELAY=$(printf '0.%03d' $DMS)
	CLEAN=0
	[ "$IT" -gt 1 ] && [ $((RANDOM % 6)) = 0 ] && CLEAN=1
	[ "$FORCE_CLEAN" = 1 ] && CLEAN=1
	FORCE_CLEAN=0
	OPTS=$(opts_for $URGENT)
	[ "$FILL" != 0 ] && NFILL=$((NFILL + 1))
	[ "$URGENT" = 1 ] && NGC=$((NGC + 1))

	mnt "$OPTS"
	note=
	if [ "$IT" = 1 ]; then
		kl_send setup
		kl_read 120 setup
	else
		kl_send "check $IT"
		kl_read 600 "check after the remount"
		n=${ANS#ok }
		CHECKED=$((CHECKED + ${n%% *}))
		note="recovered: ${ANS#ok }"
		if [ "$CLEAN" = 1 ]; then   # the recovered volume, cleanly unmounted
			NCLEAN=$((NCLEAN + 1))
			umnt
			fsck_clean "after the recovery and a clean unmount"
			mnt "$OPTS"
			kl_send "check $IT"
			kl_read 600 "check after a clean remount"
			n=${ANS#ok }
			CHECKED=$((CHECKED + ${n%% *}))
			note="$note; clean cycle ok"
		fi
	fi

	kl_send "run $IT $FILL $ARM $ONP"
	kl_read 600 "run: $ARM operations (after filling to $FILL%, if not 0)"
	case $ANS in
	armed*) ;;
	stopped*) fail "the mount died by itself before the kill (daemon $DPID): killload $ANS" ;;
	*) fail "killload: unexpected answer '$ANS'" ;;
	esac
	sleep "$DELAY"
	# what GC did in this mount (the counters are the daemon's, per mount)
	gcs=$(cat "$M/.zlfs/status" 2>/dev/null)
	[ -n "$gcs" ] || fail "cannot read $M/.zlfs/status (the daemon died by itself?)"
	moved=$(( $(st gc_data_blocks_moved) + $(st gc_node_blocks_moved) ))
	GCMOVED=$((GCMOVED + moved))
	GCRUNS=$((GCRUNS + $(st fg_gc_runs) + $(st bg_gc_runs)))
	RESETS=$((RESETS + $(st zones_reset)))
	[ -d "/proc/$DPID" ] || fail "daemon $DPID died by itself before the kill"
	kill -9 "$DPID"
	kl_read 120 "operations ending after the kill"
	case $ANS in stopped*) ;; *) fail "killload: unexpected answer '$ANS'" ;; esac
	gone "SIGKILL"
	fusermount3 -uz "$M" 2>/dev/null || umount -l "$M" 2>/dev/null
	mountpoint -q "$M" && fail "$M still mounted after the lazy unmount"
	fsck_clean "of the image the kill left" crash
	fnote=
	[ "$FILL" != 0 ] && fnote=", filled to $FILL%"
	echo "check-kill: iteration $IT ok: ${OPTS:-defaults}$fnote, armed after $ARM ops$([ $ONP = 1 ] && echo " and an fsync") + ${DELAY}s, ${ANS#stopped } gc_moved=$moved${note:+; $note}"
done

# the last kill's recovery, checked; then a clean unmount, fsck, once more
IT=$((ITERS + 1))
mnt "$(opts_for 0)"
kl_send "check $IT"
kl_read 600 "final check after the remount"
n=${ANS#ok }
CHECKED=$((CHECKED + ${n%% *}))
umnt
fsck_clean "after the final clean unmount"
mnt "$(opts_for 0)"
kl_send "check $IT"
kl_read 600 "final check after a clean remount"
n=${ANS#ok }
CHECKED=$((CHECKED + ${n%% *}))
umnt
fsck_clean "at the end"
kl_send quit
wait "$KL_PID" 2>/dev/null
KL_PID=
echo "check-kill: $NFILL iterations filled the volume, $NGC ran gc=urgent, $NCLEAN clean cycles;" \
	"GC: $GCRUNS runs moved $GCMOVED blocks, $RESETS zone resets;" \
	"$RFBUG crash images fsck.f2fs could not read (its roll-forward bound bug); $(( $(date +%s) - START )) s"
echo "check-kill: ok ($ITERS iterations, $CHECKED promised files checked)"
