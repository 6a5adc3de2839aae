# shellcheck shell=bash
# tests/fs/lib.sh - what the check scripts of tests/fs have in common.
# A script names itself, then sources this with its arguments:
#
#     NAME=check-foo
#     . "$(dirname "$0")/lib.sh" "$@"
#
# and gets:
#   - set -u, LC_ALL=C, /usr/sbin and /sbin on PATH;
#   - B, the build directory (the first argument, made absolute; "usage:
#     NAME.sh BUILD_DIR" without it), SRC, the repository, and the programs
#     ZDEV, MKFS, ZLFS, UMOUNT, FSCK under B;
#   - skip MESSAGE: "NAME: MESSAGE, skipped" and exit 77 (a prerequisite is
#     absent); need_fuse: skip without root or /dev/fuse; need_tools
#     TOOL...: skip when one is not installed; need_built PROGRAM...: exit 1
#     ("NAME: FAIL PROGRAM missing (build first)") when one is not built;
#   - die MESSAGE: "NAME: FAIL MESSAGE", exit 1;
#   - pass CHECK [NOTE] and fail CHECK WHY: the lines "NAME: CHECK ok (NOTE)"
#     and "NAME: CHECK FAIL WHY"; fail counts in FAILS; res CHECK STATUS
#     [WHY]: pass when STATUS is 0, else fail;
#   - tmpdir [BASE]: T, a fresh directory NAME.XXXXXX under BASE (else
#     $ZLFS_TEST_TMP, else /tmp);
#     when the script exits, the cleanup calls the script's on_exit
#     function if it has one, unmounts whatever is mounted under T, waits
#     for (then kills) the zlfs daemons serving a device under T, and
#     removes T (kept when KEEP=1);
#   - daemons [DEV]: the zlfs daemons (pids) serving a device under T (or
#     DEV itself), zombies left out;
#   - verdict: "NAME: ok" and exit 0 when FAILS is 0, else "NAME: FAIL (N
#     failed)" and exit 1.
set -u
export LC_ALL=C
export PATH=$PATH:/usr/sbin:/sbin
: "${NAME:?set NAME before sourcing tests/fs/lib.sh}"
B=$(readlink -f "${1:?usage: $NAME.sh BUILD_DIR}")
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
ZDEV=$B/fs/zlfs-zdev
MKFS=$B/mkfs/mkfs.zlfs
ZLFS=$B/fs/zlfs
UMOUNT=$B/fs/zlfs-umount
FSCK=$B/fsck/fsck.zlfs
FAILS=0
T=

skip() { echo "$NAME: $*, skipped"; exit 77; }
die() { echo "$NAME: FAIL $*"; exit 1; }
need_fuse() {
	[ "$(id -u)" = 0 ] || skip "not root"
	[ -c /dev/fuse ] || skip "no /dev/fuse"
}
need_tools() {
	local t
	for t; do command -v "$t" >/dev/null || skip "$t not installed"; done
}
need_built() {
	local f
	for f; do [ -x "$f" ] || die "$f missing (build first)"; done
}

pass() { echo "$NAME: $1 ok${2:+ ($2)}"; }
fail() { echo "$NAME: $1 FAIL $2"; FAILS=$((FAILS + 1)); }
res() {  # CHECK STATUS [WHY]
	if [ "$2" = 0 ]; then pass "$1"; else fail "$1" "${3:-}"; fi
}
verdict() {
	if [ "$FAILS" = 0 ]; then echo "$NAME: ok"; exit 0; fi
	echo "$NAME: FAIL ($FAILS failed)"
	exit 1
}

# The zlfs daemons serving a device under $T, or DEV (its spec's options
# after "?" left out), by the device argument of their command lines.
daemons() {  # [DEV]
	local p dev
	[ -n "$T" ] || [ -n "${1:-}" ] || return 0
	for p in $(pgrep -x zlfs); do
		dev=$({ tr '\0' '\n' <"/proc/$p/cmdline"; } 2>/dev/null | sed -n 2p)
		dev=${dev%%\?*}
		if [ -n "${1:-}" ]; then
			[ "$dev" = "$1" ] || continue
		else
			case $dev in "$T"/*) ;; *) continue ;; esac
		fi
		[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = Z ] && continue
		echo "$p"
	done
}
# Whatever is mounted under $T, deepest first.
mounts_under() {
	[ -n "$T" ] || return 0
	awk -v t="$T/" 'index($2, t) == 1 {print $2}' /proc/mounts | sort -r
}

tmpdir() {  # [BASE]
	T=$(mktemp -d "${1:-${ZLFS_TEST_TMP:-/tmp}}/$NAME.XXXXXX")
}
lib_cleanup() {
	local m p i
	set +e
	declare -F on_exit >/dev/null && on_exit
	[ -n "$T" ] || return 0
	for m in $(mounts_under); do
		"$UMOUNT" "$m" >/dev/null 2>&1 || fusermount3 -u "$m" 2>/dev/null ||
			fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	for i in $(seq 100); do   # their last checkpoints
		[ -z "$(daemons)" ] && break
		sleep 0.1
	done
	for p in $(daemons); do kill -9 "$p" 2>/dev/null; done   # ours, stuck
	if [ "${KEEP:-0}" != 0 ]; then
		echo "$NAME: kept $T"
	else
		rm -rf "$T"
	fi
}
trap lib_cleanup EXIT
trap 'exit 1' INT TERM
