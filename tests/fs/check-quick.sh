#!/bin/bash
# check-quick.sh BUILD_DIR - the quick tier's mount check (scripts/test
# --quick): the shortest run through FUSE that still shows a working volume.
# The full run covers all of this and more (check-fsops.sh, check-umount.sh,
# check-fsck.sh); this one exists so a change can be tried in minutes.
#
#   1. mkfs.zlfs on an emulated zoned image, mount;
#   2. create: a small file, an 8 MiB file of random bytes, a directory of
#      200 small files, a symlink, a hard link, a rename; read every byte
#      back through the mount (cmp against the copies kept in /tmp);
#   3. remove: half of the directory, the hard link's first name, the big
#      file; what is gone is gone, what stays reads back;
#   4. zlfs-umount (it returns once the final checkpoint is written), mount
#      again: the same tree, byte for byte; unmount;
#   5. one fsck: fsck.zlfs -f -n and fsck.f2fs --dry-run on the image, both
#      clean.
# Nothing waits for a time: every step waits for its command.
#
# Prints "check-quick: NAME ok|FAIL ..." per step, then "check-quick: ok"
# (exit 0) or "check-quick: FAIL (N failed)" (exit 1).  Exit 77 (skipped) without
# root, /dev/fuse, fusermount3 or fsck.f2fs.  A few seconds.
NAME=check-quick
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_fuse
need_tools fusermount3 fsck.f2fs cmp
need_built "$ZDEV" "$MKFS" "$ZLFS" "$UMOUNT" "$FSCK"

tmpdir
IMG=$T/img
M=$T/mnt
REF=$T/ref     # what the mount should hold, kept outside it
mkdir -p "$M" "$REF"

mnt() { "$ZLFS" "$IMG" "$M" || die "mount"; }
umnt() { "$UMOUNT" "$M" || die "zlfs-umount"; }

# The mount holds exactly REF's tree: same names, same bytes, same links.
same_tree() {
	local d
	d=$(diff <(cd "$REF" && find . -mindepth 1 | sort) \
		<(cd "$M" && find . -mindepth 1 ! -path './.zlfs*' ! -path './lost+found*' | sort)) ||
		{ echo "names differ: $(echo "$d" | head -4 | tr '\n' ' ')"; return 1; }
	(cd "$REF" && find . -type f) | while read -r f; do
		cmp -s "$REF/$f" "$M/$f" || { echo "$f differs"; return 1; }
	done || return 1
	[ "$(readlink "$M/link")" = "$(readlink "$REF/link")" ] || { echo "symlink target"; return 1; }
	[ "$(stat -c %h "$M/hard2")" = "$(stat -c %h "$REF/hard2")" ] || { echo "link count of hard2"; return 1; }
}

# 1. a fresh volume
"$ZDEV" create "$IMG" --size 1G --zone-size 32M --conv-zones 4 >/dev/null &&
	"$MKFS" "$IMG" >/dev/null || die "mkfs"
mnt
pass mkfs-mount

# 2. create, then read back; REF gets the same operations
make_tree() {  # root
	local r=$1 i
	echo "hello, zlfs" >"$r/small" &&
		head -c $((8 << 20)) "$T/random" >"$r/big" &&
		mkdir "$r/dir" &&
		for i in $(seq 1 200); do echo "file $i" >"$r/dir/f$i" || return 1; done &&
		ln -s dir/f1 "$r/link" &&
		echo "linked" >"$r/hard1" && ln "$r/hard1" "$r/hard2" &&
		echo "moved" >"$r/before" && mv "$r/before" "$r/after"
}
head -c $((8 << 20)) /dev/urandom >"$T/random"
make_tree "$REF" || die "the reference tree in $T"
if make_tree "$M" && out=$(same_tree); then pass create-read; else fail create-read "${out:-a create failed}"; fi

# 3. remove, on both sides
remove() {  # root
	local r=$1 i
	for i in $(seq 1 2 200); do rm "$r/dir/f$i" || return 1; done &&
		rm "$r/hard1" "$r/big"
}
remove "$REF" || die "remove in the reference tree"
if remove "$M" && out=$(same_tree) && [ ! -e "$M/big" ] && [ ! -e "$M/dir/f1" ]; then
	pass remove
else
	fail remove "${out:-a remove failed or a removed name is still there}"
fi

# 4. unmount, mount again: the same tree
umnt
mnt
if out=$(same_tree); then pass remount; else fail remount "$out"; fi
umnt

# 5. one fsck: ours and the outside oracle
if out=$("$FSCK" -f -n "$IMG" 2>&1); then pass fsck.zlfs; else fail fsck.zlfs "$(echo "$out" | tail -3 | tr '\n' ' ')"; fi
if out=$(fsck.f2fs --dry-run "$IMG" 2>&1); then pass fsck.f2fs; else fail fsck.f2fs "$(echo "$out" | tail -3 | tr '\n' ' ')"; fi

verdict
