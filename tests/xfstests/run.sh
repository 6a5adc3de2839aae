#!/bin/bash
# tests/xfstests/run.sh BUILD_DIR [TEST...] - run xfstests against zlfs.
#
#   XFSTESTS_DIR=/path/to/built/xfstests tests/xfstests/run.sh build/ci
#   XFSTESTS_DIR=... tests/xfstests/run.sh build/ci generic/074 generic/013
#
# TESTs are xfstests names (default: generic/074 generic/701); anything that
# starts with "-" goes to ./check as it is (e.g. -g generic/quick).  Prints one
# line per test:
#   xfstests: generic/NNN ok
#   xfstests: generic/NNN FAIL <what ./check said>; see <.out.bad/.full>
#   xfstests: generic/NNN not run: <reason>
# then "xfstests: fsck.f2fs test|scratch image ok|FAIL" for both images after
# the run.  Exit status: 0 all ran tests passed, 1 something failed, 2 usage,
# 77 skipped (XFSTESTS_DIR unset or not built, not root, no FUSE, missing
# tools), with the reason printed.
#
# xfstests is not part of zlfs: build it from its own repository
# (kdave/xfstests: `make`), with its Debian build dependencies and xfsprogs
# (xfs_io).  This script sets up everything else, in a temporary directory
# ($TMPDIR, default /tmp):
#   - two emulated zoned images (zlfs-zdev create ... + mkfs.zlfs) as TEST_DEV
#     and SCRATCH_DEV, mount points TEST_DIR and SCRATCH_MNT, and a copy of
#     BUILD_DIR/fs/zlfs as zlfs.real beside the images;
#   - the xfstests configuration, given to ./check through HOST_OPTIONS (the
#     checkout's own local.config is not touched): FSTYP=fuse,
#     FUSE_SUBTYP=.zlfs, FUSE_MOUNT_OPTIONS="-o allow_other,default_permissions",
#     WIPEFS_PROG="", RESULT_BASE in the temporary directory;
#   - MOUNT_PROG, a wrapper that sends remounts to `mount -i` (the kernel
#     remounts a FUSE filesystem by itself; mount.fuse3 would start a second
#     daemon) and everything else to /usr/bin/mount.
# System-wide changes (root; needed once, left in place, safe to share):
#   - /usr/local/sbin/zlfs, a wrapper: mount(8) runs mount.fuse3 without PATH,
#     and mount.fuse3 runs `zlfs DEV MNT -o ...` through /bin/sh, whose default
#     PATH starts with /usr/local/sbin.  The wrapper waits for DEV's lock (a
#     daemon that is still writing its final checkpoint after an unmount), runs
#     `fsck.f2fs --dry-run DEV` and refuses to mount (exit 1, message on
#     stderr and in DIR/fsck.log) when it reports [Fail]/[FAIL]/ASSERT, so
#     silent corruption between two mounts becomes a failed test.  It then
#     execs DIR/zlfs.real (DIR = the image's directory: each run uses its own
#     build), else /usr/local/sbin/zlfs.real, else /usr/local/bin/zlfs.
#   - users fsgqa, fsgqa2, 123456-fsgqa and group fsgqa (xfstests' own).
#
# Environment:
#   XFSTESTS_DIR          the built xfstests checkout (required)
#   ZLFS_XFS_SIZE         image size (8G); ZLFS_XFS_ZONE (64M); ZLFS_XFS_CONV (8)
#   ZLFS_XFS_MKFS_OPTS    extra mkfs.zlfs options (e.g. "-o 5")
#   ZLFS_XFS_MOUNT_OPTS   extra zlfs -o options, comma-separated (e.g. gc=urgent)
#   ZLFS_XFS_TIMEOUT      seconds for the whole ./check run (7200); tests left
#                         without a result when it runs out are FAIL (timeout)
#   ZLFS_XFS_KEEP=1       keep the temporary directory (images, results)
#   ZLFS_XFS_STATUS=1     sample the daemons' /.zlfs/status every 5 s into
#                         status-test.txt / status-scratch.txt (GC counters)
# On failure the results (.out.bad, .full, check.log, fsck.log, status-*.txt)
# are kept in the temporary directory, whose path is printed; the images are
# always removed unless ZLFS_XFS_KEEP=1.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

skip() { echo "xfstests: skipped: $*"; exit 77; }
die()  { echo "xfstests: error: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: $0 BUILD_DIR [TEST...]"
B=$(realpath "$1" 2>/dev/null) || die "no build directory $1"
shift
for f in fs/zlfs fs/zlfs-zdev mkfs/mkfs.zlfs; do
	[ -x "$B/$f" ] || die "$B/$f not built"
done

[ -n "${XFSTESTS_DIR:-}" ] || skip "XFSTESTS_DIR is not set (point it to a built xfstests checkout)"
X=$(realpath -e "$XFSTESTS_DIR" 2>/dev/null) || skip "XFSTESTS_DIR=$XFSTESTS_DIR does not exist"
[ -x "$X/check" ] || skip "$X is not an xfstests checkout (no check script)"
[ -x "$X/ltp/fsstress" ] && [ -x "$X/src/fstest" ] ||
	skip "xfstests in $X is not built (run make there)"
[ "$(id -u)" = 0 ] || skip "xfstests needs root"
[ -c /dev/fuse ] || skip "no /dev/fuse"
for t in xfs_io fsck.f2fs fusermount3 mount.fuse3 flock; do
	command -v $t >/dev/null || skip "$t not installed"
done

TESTS=()
[ $# -gt 0 ] && TESTS=("$@") || TESTS=(generic/074 generic/701)

# xfstests' users and group
getent group fsgqa >/dev/null || groupadd fsgqa || skip "cannot create group fsgqa"
for u in fsgqa fsgqa2 123456-fsgqa; do
	id "$u" >/dev/null 2>&1 || useradd -m "$u" -g fsgqa 2>/dev/null || useradd -m "$u" ||
		skip "cannot create user $u"
done

# The mount.fuse3 entry point; identical for every run, so replaced only when
# it differs (atomically: another run may be mounting right now).
install_wrapper() {
	local w=/usr/local/sbin/zlfs tmp
	tmp=$(mktemp /usr/local/sbin/.zlfs.XXXXXX) || return 1
	cat >"$tmp" <<'EOF'
#!/bin/bash
# /usr/local/sbin/zlfs - installed by zlfs's tests/xfstests/run.sh.  mount.fuse3
# runs "zlfs DEV MNT -o OPTS" here.  fsck.f2fs --dry-run DEV first (after the
# image's lock is free: a daemon that just unmounted may still be writing its
# final checkpoint); a [Fail]/[FAIL]/ASSERT refuses the mount.  Then the daemon:
# DEV's directory's zlfs.real, else /usr/local/sbin/zlfs.real, else
# /usr/local/bin/zlfs.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
dev=${1:-}
img=${dev%%\?*}
dir=$(dirname -- "$img" 2>/dev/null)
log=/dev/null
[ -n "$dir" ] && [ -w "$dir" ] && log=$dir/fsck.log
if [ -n "$img" ] && { [ -f "$img" ] || [ -b "$img" ]; }; then
	if [ -f "$img" ]; then
		out=$(flock -w 15 "$img" fsck.f2fs --dry-run "$img" </dev/null 2>&1); rc=$?
	else
		out=$(fsck.f2fs --dry-run "$img" </dev/null 2>&1); rc=$?
	fi
	{ echo "=== $(date '+%F %T') mount $*: fsck.f2fs exit $rc"; echo "$out"; } >>"$log" 2>/dev/null
	if echo "$out" | grep -qE '\[Fail\]|\[FAIL\]|ASSERT'; then
		echo "zlfs: fsck.f2fs --dry-run $img reports errors; not mounting:" >&2
		echo "$out" | grep -E '\[Fail\]|\[FAIL\]|ASSERT' | head -20 >&2
		echo "zlfs: REFUSED mount of $img (fsck errors)" >>"$log" 2>/dev/null
		exit 1
	fi
fi
for real in "$dir/zlfs.real" /usr/local/sbin/zlfs.real /usr/local/bin/zlfs; do
	[ -x "$real" ] && exec "$real" "$@"
done
echo "zlfs: no zlfs.real beside $img, in /usr/local/sbin or zlfs in /usr/local/bin" >&2
exit 1
EOF
	chmod 755 "$tmp"
	if cmp -s "$tmp" "$w"; then rm -f "$tmp"; else mv -f "$tmp" "$w"; fi
}
install_wrapper || skip "cannot install /usr/local/sbin/zlfs"

START=$(date +%s)
T=$(mktemp -d "${TMPDIR:-/tmp}/zlfs-xfstests.XXXXXX")
# the tests run programs as other users (fsgqa) inside TEST_DIR and SCRATCH_MNT
chmod 755 "$T"
SIZE=${ZLFS_XFS_SIZE:-8G}
ZONE=${ZLFS_XFS_ZONE:-64M}
CONV=${ZLFS_XFS_CONV:-8}
TMO=${ZLFS_XFS_TIMEOUT:-7200}
FAILS=0

# our daemons: the processes whose command line names one of our images
our_daemons() {
	local p cmd
	for p in /proc/[0-9]*; do
		cmd=$( (tr '\0' ' ' <"$p/cmdline") 2>/dev/null) || continue
		case $cmd in
		*zlfs.real\ "$T"/test.img\ * | *zlfs.real\ "$T"/scratch.img\ *) echo "${p#/proc/}" ;;
		esac
	done
}

unmount_all() {
	local m i
	for m in "$T/scratch" "$T/test"; do
		mountpoint -q "$m" 2>/dev/null || continue
		fusermount3 -u "$m" 2>/dev/null || umount "$m" 2>/dev/null ||
			{ sleep 2; fusermount3 -u "$m" 2>/dev/null; } ||
			fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	# the daemons exit after their final checkpoint
	for i in $(seq 100); do
		[ -z "$(our_daemons)" ] && return 0
		sleep 0.2
	done
	for i in $(our_daemons); do
		echo "xfstests: daemon $i did not exit after the unmount; killed"
		kill -9 "$i" 2>/dev/null
	done
	return 1
}

cleanup() {
	[ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null
	unmount_all
	if [ "${ZLFS_XFS_KEEP:-0}" = 1 ]; then
		echo "xfstests: kept $T"
	elif [ "$FAILS" != 0 ]; then
		rm -f "$T"/*.img "$T"/*.img.zst
		echo "xfstests: results kept in $T (check.log, results/, fsck.log)"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$T/test" "$T/scratch" "$T/results"
install -m755 "$B/fs/zlfs" "$T/zlfs.real"
for d in test scratch; do
	"$B/fs/zlfs-zdev" create "$T/$d.img" --size "$SIZE" --zone-size "$ZONE" --conv-zones "$CONV" \
		>"$T/mkfs-$d.log" 2>&1 &&
	"$B/mkfs/mkfs.zlfs" ${ZLFS_XFS_MKFS_OPTS:-} "$T/$d.img" >>"$T/mkfs-$d.log" 2>&1 ||
		{ cat "$T/mkfs-$d.log"; FAILS=1; echo "xfstests: cannot make the $d image"; exit 1; }
done

cat >"$T/mount" <<'EOF'
#!/bin/bash
# MOUNT_PROG for xfstests on FUSE: a remount goes to the kernel (mount -i),
# not to mount.fuse3, which would start a second daemon.
for a in "$@"; do
	case $a in *remount*) exec /usr/bin/mount -i "$@" ;; esac
done
exec /usr/bin/mount "$@"
EOF
chmod 755 "$T/mount"

mopts="allow_other,default_permissions"
[ -n "${ZLFS_XFS_MOUNT_OPTS:-}" ] && mopts="$mopts,$ZLFS_XFS_MOUNT_OPTS"
cat >"$T/local.config" <<EOF
export FSTYP=fuse
export FUSE_SUBTYP=.zlfs
export TEST_DEV=$T/test.img
export TEST_DIR=$T/test
export SCRATCH_DEV=$T/scratch.img
export SCRATCH_MNT=$T/scratch
export FUSE_MOUNT_OPTIONS="-o $mopts"
export MOUNT_PROG=$T/mount
export WIPEFS_PROG=""
export RESULT_BASE=$T/results
EOF

# which sources the build is of (meson records them); read-only git only
src=$(sed -n 's/.*"source": *"\([^"]*\)".*/\1/p' "$B/meson-info/meson-info.json" 2>/dev/null)
commit=$(git -C "${src:-$(dirname "$0")}" log -1 --format='%h %s' 2>/dev/null || echo 'unknown commit')
[ -n "$(GIT_OPTIONAL_LOCKS=0 git -C "${src:-$(dirname "$0")}" status --porcelain -uno 2>/dev/null)" ] &&
	commit="$commit, with uncommitted changes"
echo "xfstests: zlfs built in $B from ${src:-?} at $commit"
echo "xfstests: $X, images $SIZE (zones $ZONE, $CONV conventional) in $T, mount -o $mopts"
echo "xfstests: ./check ${TESTS[*]} (timeout ${TMO}s)"
# With ZLFS_XFS_STATUS=1, the daemons' counters (/.zlfs/status: GC, free
# sections, ...) sampled every 5 s while mounted: the last sample of each
# mount is what it ended with.  Opt-in: an unmount that races with the read
# fails with EBUSY, which a test would take for a bug.
sample_status() {
	while sleep 5; do
		for d in test scratch; do
			[ -r "$T/$d/.zlfs/status" ] &&
				cat "$T/$d/.zlfs/status" >"$T/status-$d.tmp" 2>/dev/null &&
				mv -f "$T/status-$d.tmp" "$T/status-$d.txt"
		done
	done
}
sampler=
if [ "${ZLFS_XFS_STATUS:-0}" = 1 ]; then
	sample_status </dev/null >/dev/null 2>&1 &
	sampler=$!
fi
(
	cd "$X" || exit 1
	HOST_OPTIONS=$T/local.config timeout -k 60 "$TMO" ./check "${TESTS[@]}"
) </dev/null 2>&1 | tee "$T/check.log"
rc=${PIPESTATUS[0]}
[ -z "$(tail -c 1 "$T/check.log")" ] || echo    # a test line cut short
timed_out=0
[ "$rc" = 124 ] || [ "$rc" = 137 ] && timed_out=1

[ -n "$sampler" ] && { kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; sampler=; }
unmount_all || { echo "xfstests: unmount FAIL (a daemon had to be killed)"; FAILS=$((FAILS + 1)); }

# The verdicts, from check's output: the "Ran:", "Not run:" and "Failures:"
# lines (one set per iteration with -i: a failure in any of them counts), and
# each test's own line for the details.
log=$T/check.log
ran=" $(sed -n 's/^Ran: //p' "$log" | tr '\n' ' ') "
notrun=" $(sed -n 's/^Not run: //p' "$log" | tr '\n' ' ') "
failed=" $(sed -n 's/^Failures: //p' "$log" | tr '\n' ' ') "
list=()
for t in $ran; do
	case " ${list[*]} " in *" $t "*) ;; *) list+=("$t") ;; esac
done
skipnext=0
for t in "${TESTS[@]}"; do    # named tests without a result are failures too
	[ $skipnext = 1 ] && { skipnext=0; continue; }
	case $t in
	-g|-x|-X|-e|-E|-s|-S|-i|-I|-R|-L) skipnext=1; continue ;;
	-*) continue ;;
	esac
	t=${t#tests/}
	case " ${list[*]} " in *" $t "*) ;; *) list+=("$t") ;; esac
done
# the test ./check was running when it stopped, if it stopped early
current=$(grep -E '^[a-z0-9]+/[0-9]+ ' "$log" | tail -1 | grep -vE 'unknown test|\[not run\]|\[expunged\]| [0-9]+s *$' | cut -d' ' -f1)
in_set() { case $2 in *" $1 "*) return 0 ;; esac; return 1; }
NOK=0 NNR=0 NBAD=0
for t in "${list[@]}"; do
	lines=$(grep -E "^$t( |$)" "$log")
	res=$T/results/$t
	if in_set "$t" "$failed"; then
		line=$(echo "$lines" | grep -E 'mismatch|failed|\[dumped core\]|_check_|no qualified' | tail -1)
		[ -n "$line" ] || line=$(echo "$lines" | tail -1)
		what=$(echo "$line" | sed -E "s|^$t *||; s/^[0-9]+s \.\.\. *//; s/^\.\.\. *//; s/ *\(see [^)]*\)//")
		see=""
		[ -f "$res.out.bad" ] && see="$res.out.bad"
		[ -f "$res.full" ] && see="${see:+$see, }$res.full"
		echo "xfstests: $t FAIL ${what:-failed}${see:+; see $see}"
		NBAD=$((NBAD + 1))
	elif in_set "$t" "$notrun"; then
		why=$(head -1 "$res.notrun" 2>/dev/null)
		[ -n "$why" ] || why=$(echo "$lines" | tail -1 | sed 's/.*\[not run\] *//')
		echo "xfstests: $t not run: ${why:-?}"; NNR=$((NNR + 1))
	elif echo "$lines" | grep -q '\[expunged\]'; then
		echo "xfstests: $t not run: expunged"; NNR=$((NNR + 1))
	elif in_set "$t" "$ran"; then
		echo "xfstests: $t ok"; NOK=$((NOK + 1))
	elif echo "$lines" | grep -q 'unknown test'; then
		echo "xfstests: $t FAIL unknown test (no such test in $X/tests)"
		NBAD=$((NBAD + 1))
	elif [ "$timed_out" = 1 ]; then
		if [ "$t" = "$current" ]; then
			echo "xfstests: $t FAIL timeout: ./check killed after ${TMO}s while running it"
		else
			echo "xfstests: $t FAIL timeout: ./check killed after ${TMO}s before it ran"
		fi
		NBAD=$((NBAD + 1))
	else
		what=$(echo "$lines" | tail -1 | sed -E "s|^$t *||")
		echo "xfstests: $t FAIL no result${what:+: $what} (./check exit $rc; see $T/check.log)"
		NBAD=$((NBAD + 1))
	fi
done
FAILS=$((FAILS + NBAD))

# Both images must be clean after the run (xfstests checks nothing on FUSE).
for d in test scratch; do
	out=$(flock -w 30 "$T/$d.img" fsck.f2fs --dry-run "$T/$d.img" </dev/null 2>&1); frc=$?
	echo "$out" >"$T/fsck-final-$d.txt"
	if [ $frc != 0 ] || echo "$out" | grep -qE '\[Fail\]|\[FAIL\]|ASSERT'; then
		echo "xfstests: fsck.f2fs $d image FAIL (exit $frc): $(echo "$out" |
			grep -E '\[Fail\]|\[FAIL\]|ASSERT' | head -3 | tr '\n' ' ')"
		FAILS=$((FAILS + 1))
	else
		echo "xfstests: fsck.f2fs $d image ok"
	fi
done
if grep -q 'REFUSED' "$T/fsck.log" 2>/dev/null; then
	echo "xfstests: a mount was refused because fsck.f2fs found errors (see $T/fsck.log)"
	FAILS=$((FAILS + 1))
fi
echo "xfstests: done in $(( $(date +%s) - START ))s: $NOK ok, $NBAD FAIL, $NNR not run"
[ "$FAILS" = 0 ]
