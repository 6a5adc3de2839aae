#!/bin/bash
# check-flags.sh BUILD_DIR - the chattr flags through a real FUSE mount.
#
#   1. the kernel as the oracle: tests/fs/flags-ops.py (immutable and
#      append-only files and directories, every operation the VFS judges
#      by them, noatime, who may set them) on zlfs and on the kernel's
#      tmpfs; every line must be the same;
#   2. chattr and lsattr themselves, and xfs_io's xflags form: set, shown,
#      +c refused on a volume made without -O compression;
#   3. what new files, directories and symlinks inherit from a directory
#      (F2FS's rule: s, d, A to all; D and P to directories only; d and A
#      to symlinks);
#   4. everything survives an unmount (zlfs-umount) and remount, with a
#      file's ctime moved by chattr; both fsck.f2fs and fsck.zlfs find the
#      image clean.
# Prints "check-flags: NAME ok|FAIL ..." per check, then "check-flags: ok"
# (exit 0) or "check-flags: FAIL (N failed)" (exit 1).  Exit 77 (skipped)
# without root, /dev/fuse or a tool it needs.  About 10 s.
NAME=check-flags
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
need_fuse
need_tools fusermount3 fsck.f2fs python3 chattr lsattr xfs_io

tmpdir /dev/shm   # tmpfs, the oracle's home too
M=$T/mnt
# the oracle's tree may still hold flags that forbid removing it
on_exit() { chattr -R -ia "$T/tmpfs" 2>/dev/null; }
check() {  # NAME CONDITION-RESULT [DETAIL]
	if [ "$2" = 0 ]; then
		echo "check-flags: $1 ok"
	else
		echo "check-flags: $1 FAIL${3:+: $3}"
		FAILS=$((FAILS + 1))
	fi
}
mount_zlfs() {
	"$B/fs/zlfs" "$T/img" "$M" -o allow_other 2>>"$T/zlfs.log" || { cat "$T/zlfs.log"; return 1; }
}

"$B/fs/zlfs-zdev" create "$T/img" --size 2G --zone-size 64M --conv-zones 8 --force >/dev/null &&
	"$B/mkfs/mkfs.zlfs" -f "$T/img" >/dev/null || die "cannot make the image"
mkdir -p "$M" "$T/tmpfs"
mount_zlfs || die mount

# 1. against the kernel
mkdir "$M/ops"
python3 "$HERE/flags-ops.py" "$M/ops" >"$T/zlfs.txt" 2>&1; zrc=$?
python3 "$HERE/flags-ops.py" "$T/tmpfs" >"$T/tmpfs.txt" 2>&1; trc=$?
n=$(wc -l <"$T/tmpfs.txt")
if [ $zrc = 0 ] && [ $trc = 0 ] && [ "$n" -gt 60 ] && cmp -s "$T/tmpfs.txt" "$T/zlfs.txt"; then
	check "immutable, append-only, noatime and who sets them: $n results as tmpfs gives" 0
else
	check "the same results as tmpfs" 1 "exit $zrc (tmpfs $trc); $(diff "$T/tmpfs.txt" "$T/zlfs.txt" | head -20)"
fi

# 2. the tools
echo data >"$M/f"
chattr +i +d "$M/f" && out=$(lsattr "$M/f")
check "chattr +i +d, lsattr" $([[ "${out:-}" == ----i-d* ]] && echo 0 || echo 1) "${out:-chattr failed}"
{ echo more >>"$M/f"; } 2>/dev/null
check "the append chattr +i forbids" $([ "$(cat "$M/f")" = data ] && echo 0 || echo 1)
out=$(xfs_io -r -c lsattr "$M/f" 2>&1)
check "xfs_io lsattr (FS_IOC_FSGETXATTR)" $([[ "$out" == *i*d*" $M/f"* ]] && echo 0 || echo 1) "$out"
xfs_io -r -c "chattr -i" "$M/f" && echo more >>"$M/f"
check "xfs_io chattr -i (FS_IOC_FSSETXATTR)" $([ "$(cat "$M/f")" = "data
more" ] && echo 0 || echo 1) "$(lsattr "$M/f" 2>&1)"
out=$(chattr +c "$M/f" 2>&1)
check "chattr +c refused (a volume without the compression feature)" \
	$([[ "$out" == *"Operation not supported"* ]] && echo 0 || echo 1) "$out"

# 3. inheritance
mkdir "$M/inh"
chattr +S +d +A +D +P "$M/inh"
mkdir "$M/inh/sub"
touch "$M/inh/file"
ln -s file "$M/inh/link"
fl() { lsattr -d "$1" 2>/dev/null | cut -d' ' -f1 | tr -d -- '-e'; }
got="sub=$(fl "$M/inh/sub") file=$(fl "$M/inh/file")"   # in lsattr's order
# (N: inline data or dentries, which new files and directories start with, as on the kernel's f2fs)
check "a new directory takes S d A D P, a file S d A (both N)" \
	$([ "$got" = "sub=SDdANP file=SdAN" ] && echo 0 || echo 1) "$got"
# symlinks: lsattr cannot open them; the flags show in the unit test (test_flags)

# 4. persistence
sleep 1
ct1=$(stat -c %Z "$M/f")
chattr +a "$M/f"
chattr +i "$M/inh"
before="$(lsattr -d "$M/f" "$M/inh" "$M/inh/sub" "$M/inh/file")"
"$B/fs/zlfs-umount" "$M" || check "unmount" 1
out=$(fsck.f2fs --dry-run "$T/img" 2>&1)
check "fsck.f2fs" $? "$(echo "$out" | tail -5)"
out=$("$B/fsck/fsck.zlfs" -f -n "$T/img" 2>&1)
check "fsck.zlfs" $? "$(echo "$out" | tail -5)"
mount_zlfs || die remount
after="$(lsattr -d "$M/f" "$M/inh" "$M/inh/sub" "$M/inh/file")"
check "the flags after a remount" $([ "$before" = "$after" ] && echo 0 || echo 1) "$before / $after"
ct2=$(stat -c %Z "$M/f")
check "the ctime chattr set, after a remount" $([ "$ct2" -gt "$ct1" ] && echo 0 || echo 1) "$ct1 -> $ct2"
{ touch "$M/inh/new"; } 2>/dev/null
check "an immutable directory still refuses a new name after a remount" \
	$([ -e "$M/inh/new" ] && echo 1 || echo 0)
chattr -R -ia "$M" 2>/dev/null
rm -rf "$M/f" "$M/inh" "$M/ops"
check "everything removable once the flags are cleared" $([ -z "$(ls -A "$M")" ] && echo 0 || echo 1) \
	"$(ls -A "$M")"
"$B/fs/zlfs-umount" "$M" || check "unmount" 1

verdict
