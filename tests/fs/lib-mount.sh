# shellcheck shell=bash
# tests/fs/lib-mount.sh - what the checks of a mounted volume share (they
# were one script, check-mount.sh, before): check-fsops, check-gc,
# check-posix, check-mountinfo, check-boundaries, check-full, check-sload.
# Sourced after lib.sh; needs root, /dev/fuse, fusermount3, fsck.f2fs,
# mountpoint and the programs (else exit 77 or 1, as lib.sh says).
#
#   check CHECK FUNCTION ARGS...: the function explains a failure in WHY
#     (and an optional detail in NOTE on success); "NAME: CHECK ok (NOTE)"
#     or "NAME: CHECK FAIL WHY", counted in NCHECKS and FAILS;
#   mnt IMG MNT [zlfs options...], umnt MNT IMG (waits for the daemon's
#     exit), fsck_clean IMG (fsck.f2fs and fsck.zlfs -f -n), drop_caches;
#   FSOPS: tests/fs/fsops.c's binary (from B, or compiled into T);
#   REF: a directory in /dev/shm for reference trees;
#   finish: the last check, that no zlfs daemon of ours and no mount under
#     T is left, then "NAME: ok (N checks, S s)" (exit 0) or, after what
#     the daemons said, "NAME: FAIL (F of N checks failed, S s)" (exit 1).
# KEEP=1 keeps T and REF after a failure.
START=$(date +%s)
NCHECKS=0
need_fuse
need_tools fusermount3 fsck.f2fs mountpoint
need_built "$ZDEV" "$MKFS" "$ZLFS" "$FSCK"
tmpdir
REF=$(mktemp -d "/dev/shm/$NAME-ref.XXXXXX")
on_exit() {
	if [ "${KEEP:-0}" != 0 ] && [ "$FAILS" != 0 ]; then
		echo "$NAME: kept $REF"
	else
		rm -rf "$REF"
		KEEP=0
	fi
}

ok() { NCHECKS=$((NCHECKS + 1)); echo "$NAME: $1 ok${2:+ ($2)}"; }
bad() { NCHECKS=$((NCHECKS + 1)); FAILS=$((FAILS + 1)); echo "$NAME: $1 FAIL $2"; }
check() {  # CHECK FUNCTION ARGS...
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

# ---- nothing left behind, the verdict ---------------------------------------------------

leftover() {
	local p i
	for i in $(seq 100); do   # daemons of the last unmounts may still be writing
		[ -z "$(daemons)" ] && break
		sleep 0.1
	done
	p=$(daemons)
	[ -z "$p" ] || { WHY="zlfs daemons still running: $p"; return 1; }
	p=$(mounts_under)
	[ -z "$p" ] || { WHY="still mounted: $p"; return 1; }
}

finish() {
	local f
	check "no zlfs process or mount left" leftover
	if [ "$FAILS" = 0 ]; then
		echo "$NAME: ok ($NCHECKS checks, $(($(date +%s) - START)) s)"
		exit 0
	fi
	for f in "$T"/*.zlfs.log; do   # what the daemons said (device errors, crashes)
		[ -f "$f" ] && grep -v '^== ' "$f" | grep -q . && { echo "  $(basename "$f"):"; grep -v '^== ' "$f" | head -20 | sed 's/^/    /'; }
	done
	echo "$NAME: FAIL ($FAILS of $NCHECKS checks failed, $(($(date +%s) - START)) s)"
	exit 1
}
