#!/bin/bash
# check-requests.sh BUILD_DIR - the FUSE round trips zlfs saves stay saved.
#
# The daemon counts the requests it serves per opcode (MNT/.zlfs/status,
# "fuse_req OPCODE N" lines; requests on /.zlfs itself are not counted, and
# the counters are read through a descriptor of /.zlfs, so reading them
# walks no real directory).  Each check runs a few commands in a fresh
# directory and compares the counters before and after:
#   - stat of files just made (mknod, touch, echo >) sends no GETATTR for
#     them: entry replies carry attributes the kernel may keep; at most one
#     for the directory, whose attributes the kernel drops at every change
#     (it checks permissions itself: default_permissions);
#   - a second stat of a missing name sends no LOOKUP (negative entries);
#   - a write then stat of size and times, chmod then stat, utimes then stat:
#     no GETATTR (a full stat after a write may send one: the kernel drops
#     st_blocks at every close of a written file, for any FUSE filesystem);
#   - ls -l of a cold directory of 100 files: READDIRPLUS fills the kernel's
#     cache, at most a handful of LOOKUP and GETATTR; warm: no READDIRPLUS,
#     no OPENDIR (the kernel keeps readdir's entries) and one GETXATTR per
#     file at most (the kernel keeps the ACLs when no READDIRPLUS refreshes
#     the inode; ls asks for security.selinux, which no FUSE kernel caches);
#   - close sends no FLUSH, opendir no OPENDIR (after the first of each);
#   - walking through a symlink twice sends one READLINK at most;
#   - a directory renamed to another parent lists the new parent as "..";
#   - 50 write+fsync pairs on a file the checkpoint has: 50 device flushes
#     exactly (dev_flushes), no checkpoint, and their commands done on the
#     image's short path (dev_inline_cmds).
# Requests are counted, never timed.  Memory reclaim by anything else on the
# machine (drop_caches, shrinkers) can only add requests, never remove them,
# so a check that sees too many tries again in a fresh directory, up to 3
# times: a real regression fails all of them.
#
# Prints "check-requests: NAME ok|FAIL ..." per check, then
# "check-requests: ok" (exit 0) or "check-requests: FAIL (N failed)" (exit 1).
# Exit 77 (skipped) without root, /dev/fuse, fusermount3 or python3.
# About 30 s.
NAME=check-requests
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_fuse
need_tools fusermount3 python3 mountpoint
need_built "$ZDEV" "$MKFS" "$ZLFS"

tmpdir
IMG=$T/img
M=$T/mnt
ZD=
on_exit() { [ -n "$ZD" ] && eval "exec $ZD<&-"; }

mkdir -p "$M"
"$ZDEV" create "$IMG" --size 1G --zone-size 16M --conv-zones 4 >/dev/null &&
	"$MKFS" "$IMG" >/dev/null || die "create/mkfs"
"$ZLFS" "$IMG" "$M" >"$T/zlfs.log" 2>&1 || { cat "$T/zlfs.log"; die "mount"; }
mountpoint -q "$M" || die "$M is not mounted"
# every check works in its own directory under $W; made now, so the root
# does not change (and need no GETATTR) later
W=$M/w
mkdir "$W"
exec {ZD}<"$M/.zlfs"

# The counters now: "OPCODE N" lines.
counters() { sed -n 's/^fuse_req \([A-Z_0-9]*\) \([0-9]*\)$/\1 \2/p' "/proc/self/fd/$ZD/status"; }

# measure CMD: run CMD (eval), the requests it caused in DL[OPCODE].
declare -A DL
NOCTR=
measure() {
	local before after op n
	before=$(counters)
	eval "$1" >/dev/null 2>&1
	after=$(counters)
	DL=()
	NOCTR=$([ -z "$after" ] && echo 1)
	while read -r op n; do DL[$op]=$n; done <<<"$after"
	while read -r op n; do [ -n "$op" ] && DL[$op]=$((${DL[$op]:-0} - n)); done <<<"$before"
}
# req OPCODE: what the last measure counted
req() { echo "${DL[$1]:-0}"; }
# the last measure's requests, for a failure message
seen() {
	local op s=""
	for op in $(printf '%s\n' "${!DL[@]}" | sort); do
		[ "${DL[$op]}" != 0 ] && s="$s $op=${DL[$op]}"
	done
	echo "${s:- none}"
}

K=0
newdir() { K=$((K + 1)); D=$W/d$K; mkdir "$D"; stat "$D" >/dev/null; }

# check NAME FUNCTION: the function (fresh directory each time) returns 0 or
# sets WHY; up to 3 tries (see the top)
check() {
	local name=$1 fn=$2 try first=""
	for try in 1 2 3; do
		WHY="" NOTE=""
		newdir
		if "$fn"; then
			echo "check-requests: $name ok$([ "$try" = 1 ] || echo " (try $try; try 1: $first)")${NOTE:+ $NOTE}"
			return
		fi
		[ -n "$first" ] || first=$WHY
	done
	echo "check-requests: $name FAIL $WHY"
	FAILS=$((FAILS + 1))
}
# expect OPCODE MAX: the last measure sent at most MAX of OPCODE
expect() {
	[ -z "$NOCTR" ] || { WHY="no fuse_req counters in .zlfs/status"; return 1; }
	[ "$(req "$1")" -le "$2" ] && return 0
	WHY="$1: $(req "$1") (at most $2 expected); requests:$(seen)"
	return 1
}

# ---- the checks -----------------------------------------------------------------------

t_counters() {
	local st
	st=$(counters)
	grep -q '^INIT 1$' <<<"$st" && grep -q '^MKDIR ' <<<"$st" ||
		{ WHY="no fuse_req INIT 1 / MKDIR lines: $(tr '\n' ' ' <<<"$st")"; return 1; }
	# reading the counters is not counted
	measure 'cat "$M/.zlfs/status"; cat "$M/.zlfs/status"; ls "$M/.zlfs"'
	local n=0 op
	for op in "${!DL[@]}"; do n=$((n + DL[$op])); done
	[ "$n" = 0 ] || { WHY="reading /.zlfs counted:$(seen)"; return 1; }
}

t_stat_mknod() {
	python3 -c "
import os
for i in range(1, 101): os.mknod('$D/f%d' % i, 0o644)"
	# names spelled out: a glob would read the directory, and READDIRPLUS
	# would hand the kernel fresh attributes anyway
	measure 'stat "$D"/f{1..100}'
	expect GETATTR 1 && expect LOOKUP 0
}

t_stat_touch() {
	touch "$D"/f{1..100}
	# size, times, mode, owner, links: no st_blocks (see the top)
	measure 'stat -c "%n %s %X %Y %Z %a %u %g %h" "$D"/f{1..100}'
	expect GETATTR 1 && expect LOOKUP 0
}

t_stat_written() {
	local i
	for i in $(seq 100); do echo "$i" >"$D/f$i"; done
	measure 'stat -c "%n %s %Y %Z" "$D"/f{1..100}'
	expect GETATTR 1 && expect LOOKUP 0
}

t_missing() {
	stat "$D/nope" >/dev/null 2>&1
	measure 'stat "$D/nope"; stat "$D/nope"; ls "$D/nope"'
	expect LOOKUP 0 || return 1
	# a name unlinked: one LOOKUP to learn it is gone, then none
	echo x >"$D/gone"
	rm "$D/gone"
	stat "$D/gone" >/dev/null 2>&1
	measure 'stat "$D/gone"; stat "$D/gone"'
	expect LOOKUP 0
}

t_write_stat() {
	echo hi >"$D/x"
	stat "$D/x" >/dev/null
	measure 'echo more >>"$D/x"; stat -c "%s %Y %Z" "$D/x"'
	expect GETATTR 0 || return 1
	measure 'stat "$D/x"'
	expect GETATTR 1
}

t_setattr_stat() {
	echo hi >"$D/x"
	stat "$D/x" >/dev/null
	# (not chown: without FUSE_HANDLE_KILLPRIV, which libfuse 3.14 does not
	# pass on, the kernel refreshes the mode with a GETATTR to drop setuid)
	measure 'chmod 600 "$D/x"; stat "$D/x"; chmod 640 "$D/x"; stat "$D/x"'
	expect GETATTR 0 && expect LOOKUP 0 || return 1
	measure 'touch -d "2001-02-03 04:05:06" "$D/x"; stat -c "%X %Y %Z %a" "$D/x"'
	expect GETATTR 0 && expect LOOKUP 0
}

t_ls_cold() {
	local i
	for i in $(seq 100); do echo "$i" >"$D/f$i"; done
	sync
	echo 3 >/proc/sys/vm/drop_caches
	measure 'ls -l "$D"'
	[ "$(req READDIRPLUS)" -ge 1 ] || { WHY="no READDIRPLUS:$(seen)"; return 1; }
	# the directory's own lookup and attributes, never one per file
	expect LOOKUP 3 && expect GETATTR 3 && expect READDIR 0 && expect OPENDIR 1
}

t_ls_warm() {
	local i
	for i in $(seq 100); do echo "$i" >"$D/f$i"; done
	ls -l "$D" >/dev/null
	ls -l "$D" >/dev/null
	# GETATTR: reading a directory drops its atime, which ls -l's stat of it
	# asks for, and a GETATTR drops the directory's cached ACLs (3 GETXATTR)
	measure 'ls -l "$D"'
	expect READDIRPLUS 0 && expect READDIR 0 && expect OPENDIR 0 && expect LOOKUP 0 &&
		expect GETATTR 1 && expect GETXATTR 105 || return 1
	measure 'ls "$D"; ls -a "$D"'
	expect READDIRPLUS 0 && expect READDIR 0 && expect OPENDIR 0 && expect GETATTR 1
}

t_flush() {
	local i
	echo first >"$D/x"     # the first FLUSH, if this mount has not had one yet
	measure 'for i in $(seq 20); do echo $i >"$D/f$i"; cat "$D/f$i"; done'
	expect FLUSH 0 && expect RELEASEDIR 0
}

t_symlink() {
	echo hi >"$D/x"
	ln -s x "$D/l"
	measure 'cat "$D/l"; cat "$D/l"; stat -L "$D/l"'
	expect READLINK 1 || return 1
	measure 'cat "$D/l"'
	expect READLINK 0
}

# dotdot DIR: the inode number getdents64 gives "..", without a stat of DIR
# first (a stat would refresh its attributes and might hide a stale cache)
dotdot() {
	python3 -c "
import ctypes, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
buf = ctypes.create_string_buffer(65536)
n = ctypes.CDLL(None, use_errno=True).syscall(217, fd, buf, 65536)   # getdents64
off = 0
while off < n:
    ino, _, reclen, _ = struct.unpack_from('QqHB', buf.raw, off)
    if buf.raw[off + 19:off + reclen].split(b'\\0')[0] == b'..':
        print(ino)
    off += reclen" "$1"
}

# drop_caches so far on this machine (pages dropped, a stale cache with them)
drops() { awk '$1 == "drop_pagecache" {print $2}' /proc/vmstat; }

# The kernel caches a directory's entries, ".." included; a rename to
# another parent must not leave the old ".." there.  The directories stay
# open throughout, so memory reclaim cannot evict their inodes (which would
# hide a stale cache); a drop_caches on the machine meanwhile could, and
# makes the try inconclusive (tried again).
t_rename_dotdot() {
	[ "$(uname -m)" = x86_64 ] || { NOTE="(getdents64 number known on x86_64 only)"; return 0; }
	mkdir -p "$D/a/sub" "$D/b" "$D/c"
	touch "$D/a/sub/f"
	local fs fc r0 want got gb gc ret=1
	exec {fs}<"$D/a/sub" {fc}<"$D/c"
	ls -a "$D/a/sub" "$D/c" >/dev/null
	ls -a "$D/a/sub" "$D/c" >/dev/null
	r0=$(drops)
	want=$(stat -c %i "$D/b")
	mv "$D/a/sub" "$D/b/sub"
	got=$(dotdot "$D/b/sub")
	# an exchange across parents moves both ".."
	ls -a "$D/b/sub" >/dev/null
	python3 -c "
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, b'$D/b/sub', -100, b'$D/c', 2):
    sys.exit(os.strerror(ctypes.get_errno()))" || WHY="renameat2 RENAME_EXCHANGE failed"
	gb=$(dotdot "$D/b/sub")
	gc=$(dotdot "$D/c")
	exec {fs}<&- {fc}<&-
	if [ -n "$WHY" ]; then
		:
	elif [ "$(drops)" != "$r0" ]; then
		WHY="drop_caches on the machine meanwhile: inconclusive"
	elif [ "$got" != "$want" ]; then
		WHY="getdents of b/sub after mv a/sub b/sub: .. is $got, b is $want"
	elif [ "$gb" != "$want" ]; then
		WHY="after the exchange: .. of b/sub is $gb, b is $want"
	elif [ "$gc" != "$(stat -c %i "$D")" ]; then
		WHY="after the exchange: .. of c is $gc, its parent is $(stat -c %i "$D")"
	else
		ret=0
	fi
	return $ret
}

# fsync's short path (fs/blk/zemu.c, node.c): a roll-forward fsync costs the
# device one flush, never more, done on the submitting thread
st_key() { sed -n "s/^$1=//p" "/proc/self/fd/$ZD/status"; }
t_fsync_flush() {
	python3 -c "
import os
fd = os.open('$D/f', os.O_CREAT | os.O_WRONLY, 0o644)
os.pwrite(fd, b'x' * 65536, 0); os.fsync(fd); os.close(fd)
d = os.open('$D', os.O_RDONLY); os.fsync(d); os.close(d)" || { WHY="setting up"; return 1; }
	local f0 i0 c0 f1 i1 c1
	f0=$(st_key dev_flushes) i0=$(st_key dev_inline_cmds) c0=$(st_key checkpoints)
	python3 -c "
import os
fd = os.open('$D/f', os.O_WRONLY)
for i in range(50):
    os.pwrite(fd, bytes([i]) * 4096, 4096 * (i % 16)); os.fsync(fd)
os.close(fd)" || { WHY="the fsyncs failed"; return 1; }
	f1=$(st_key dev_flushes) i1=$(st_key dev_inline_cmds) c1=$(st_key checkpoints)
	[ -n "$f0" ] && [ -n "$i0" ] || { WHY="no dev_flushes / dev_inline_cmds in .zlfs/status"; return 1; }
	[ "$c1" = "$c0" ] || { WHY="$((c1 - c0)) checkpoints (roll-forward fsyncs expected)"; return 1; }
	[ $((f1 - f0)) = 50 ] || { WHY="$((f1 - f0)) device flushes for 50 fsyncs"; return 1; }
	# each pair: its data write, its node write, its flush, all on the short path
	[ $((i1 - i0)) -ge 150 ] || { WHY="$((i1 - i0)) commands on the short path for 50 pairs"; return 1; }
}

check "fuse_req counters in .zlfs/status, reading them not counted" t_counters
check "stat of 100 files made by mknod: no GETATTR for them" t_stat_mknod
check "stat (no st_blocks) of 100 files made by touch: no GETATTR for them" t_stat_touch
check "stat of size and times of 100 files just written: no GETATTR for them" t_stat_written
check "a missing name looked up again: no LOOKUP (negative entries)" t_missing
check "write then stat: no GETATTR" t_write_stat
check "chmod, utimes then stat: no GETATTR" t_setattr_stat
check "ls -l of a cold directory of 100 files: READDIRPLUS, no LOOKUP or GETATTR per file" t_ls_cold
check "ls -l of a warm directory: no READDIRPLUS, OPENDIR or LOOKUP, one GETXATTR per file" t_ls_warm
check "close and opendir: no FLUSH, no RELEASEDIR after the first" t_flush
check "a walk through a symlink: one READLINK" t_symlink
check "a directory renamed to another parent lists it as .." t_rename_dotdot
check "fsync: one device flush each, on the short path" t_fsync_flush

exec {ZD}<&-
ZD=
fusermount3 -u "$M" || die "unmount"
verdict
