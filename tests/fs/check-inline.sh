#!/bin/bash
# tests/fs/check-inline.sh BUILD_DIR - small files, directories, symlinks
# and xattrs inside the inode, as the kernel's f2fs keeps them under its
# default mount options (inline_data, inline_dentry, inline_xattr), through
# FUSE on images made by mkfs.zlfs:
#   - space: 10,000 files of 100 bytes (in 100 directories of 100), then
#     1,000 directories of three entries each (hard links, so the entries
#     cost no inode), each at most 1.05 blocks apiece (valid_blocks of
#     .zlfs/status, read after a directory fsync's checkpoint); the same
#     under noinline_data,noinline_dentry,noinline_xattr for the figure
#     without inline (printed, about 2 blocks each);
#   - growth: 300 of the files appended past the inline area, 20 of the
#     directories given 200 more names (converted to dentry blocks), some
#     files truncated up past the area and down again; contents and
#     listings right before and after a remount;
#   - flags and layout: lsattr shows N (inline) on a new small file and a
#     new directory, not after growth or under noinline_*; st_blocks of an
#     inline file is its size in sectors; a short symlink's target and a
#     small xattr stay in the inode (dump.f2fs: i_blocks 1, i_xattr_nid 0);
#     st_blocks follows an xattr node made and freed at once;
#   - options: inline_xattr_size=N on a flexible_inline_xattr volume gives
#     new inodes N words (dump.f2fs), and is refused without the feature,
#     with noinline_xattr, and out of range, each with a message;
#   - fsck.f2fs and fsck.zlfs clean after each part.
# Prints "check-inline: CHECK ok (note)" or "... FAIL why" per check, then
# the verdict.  Exit 77 without root, /dev/fuse, python3, lsattr,
# dump.f2fs or fsck.f2fs.
NAME=check-inline
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_tools python3 lsattr dump.f2fs
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"

IMG=$T/i.img
M=$T/m
NOINLINE=noinline_data,noinline_dentry,noinline_xattr

# valid MNT: the volume's valid blocks, after a checkpoint (fsync of the root)
valid() {
	python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$1" &&
		sed -n 's/^valid_blocks=//p' "$1/.zlfs/status"
}

# fill MNT: 100 directories s00..s99 of 100 files of 100 bytes (f00..f99)
fill() {
	python3 - "$1" <<'EOF'
import os, sys
root = sys.argv[1]
for d in range(100):
    p = os.path.join(root, 's%02d' % d)
    os.mkdir(p)
    for f in range(100):
        with open(os.path.join(p, 'f%02d' % f), 'wb') as fh:
            fh.write(('%02d/%02d:' % (d, f)).encode().ljust(100, b'x'))
EOF
}

# dirs MNT: 1,000 directories t/d000..d999, each with three names linked to t/target
dirs() {
	python3 - "$1" <<'EOF'
import os, sys
root = os.path.join(sys.argv[1], 't')
os.mkdir(root)
target = os.path.join(root, 'target')
open(target, 'wb').close()
for d in range(1000):
    p = os.path.join(root, 'd%03d' % d)
    os.mkdir(p)
    for e in ('a', 'b', 'c'):
        os.link(target, os.path.join(p, e))
EOF
}

# space OPTS...: blocks per small file and per small directory
FILE_BLOCKS=() DIR_BLOCKS=()
space() {
	local v0 v1 v2 pf pd
	truncate -s 0 "$IMG" && truncate -s 1G "$IMG"
	"$MKFS" -f "$IMG" >/dev/null || { WHY="mkfs.zlfs failed"; return 1; }
	mnt "$IMG" "$M" "$@" || return 1
	v0=$(valid "$M") && fill "$M" && v1=$(valid "$M") && dirs "$M" && v2=$(valid "$M") ||
		{ WHY="filling failed"; umnt "$M" "$IMG"; return 1; }
	umnt "$M" "$IMG" || return 1
	fsck_clean "$IMG" || return 1
	pf=$(awk -v a="$v0" -v b="$v1" 'BEGIN { printf "%.3f", (b - a) / 10000 }')
	pd=$(awk -v a="$v1" -v b="$v2" 'BEGIN { printf "%.3f", (b - a) / 1000 }')
	FILE_BLOCKS+=("$pf") DIR_BLOCKS+=("$pd")
	NOTE="$pf blocks per 100-byte file, $pd per directory of three entries"
}

inline_space() {
	space || return 1
	awk -v f="${FILE_BLOCKS[-1]}" -v d="${DIR_BLOCKS[-1]}" 'BEGIN { exit !(f <= 1.05 && d <= 1.05) }' ||
		{ WHY="over 1.05: $NOTE"; return 1; }
}
noinline_space() {
	space -o "$NOINLINE" || return 1
	# the comparison: without inline each costs an inode block and a data or dentry block
	awk -v f="${FILE_BLOCKS[-1]}" -v d="${DIR_BLOCKS[-1]}" 'BEGIN { exit !(f >= 1.9 && d >= 1.9) }' ||
		{ WHY="expected about 2 blocks each without inline: $NOTE"; return 1; }
}

# sums MNT: md5 of every file under s*/ and listings of t/, sorted
sums() {
	(cd "$1" && find s?? t -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum &&
		find t -print | LC_ALL=C sort | md5sum)
}

# growth: the volume space() left (inline): files and directories past the area
growth() {
	local before after
	mnt "$IMG" "$M" || return 1
	python3 - "$M" <<'EOF' || { WHY="growing failed"; umnt "$M" "$IMG"; return 1; }
import os, sys
root = sys.argv[1]
for k in range(300):                          # appended past the inline area
    p = os.path.join(root, 's%02d' % (k % 100), 'f%02d' % (k // 100))
    with open(p, 'ab') as fh:
        fh.write(bytes((k + i) % 251 for i in range(4000)))
for k in range(20):                           # 3 + 200 names: dentry blocks
    p = os.path.join(root, 't', 'd%03d' % k)
    for e in range(200):
        os.link(os.path.join(root, 't', 'target'), os.path.join(p, 'grown-name-%03d' % e))
for k in range(20):                           # up past the area and down again
    p = os.path.join(root, 's50', 'f%02d' % k)
    os.truncate(p, 10000)
    os.truncate(p, 50)
EOF
	before=$(sums "$M")
	# an inline file, a grown one, a truncated one; an inline and a grown directory
	local want="s99/f99:N s00/f00:- s50/f00:- t/d999:N t/d000:-" got="" p fl
	for p in s99/f99 s00/f00 s50/f00 t/d999 t/d000; do
		fl=$(lsattr -d "$M/$p" 2>&1 | awk '{ print $1 }')
		case $fl in *N*) got="$got $p:N" ;; *) got="$got $p:-" ;; esac
	done
	[ "${got# }" = "$want" ] || { WHY="lsattr's N: $got (want $want)"; umnt "$M" "$IMG"; return 1; }
	umnt "$M" "$IMG" || return 1
	fsck_clean "$IMG" || return 1
	mnt "$IMG" "$M" || return 1
	after=$(sums "$M")
	umnt "$M" "$IMG" || return 1
	[ "$before" = "$after" ] || { WHY="contents or listings changed across the remount"; return 1; }
	NOTE="300 files and 20 directories converted, $(echo "$before" | wc -l) sums equal after a remount"
}

# layout: what the inode block holds, by dump.f2fs
layout() {
	local ino out blocks
	truncate -s 0 "$IMG" && truncate -s 1G "$IMG"
	"$MKFS" -f "$IMG" >/dev/null || { WHY="mkfs.zlfs failed"; return 1; }
	mnt "$IMG" "$M" || return 1
	printf '%0100d' 7 > "$M/small" && ln -s /a/short/target "$M/link" &&
		python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.k", b"v" * 40)' "$M/small" ||
		{ WHY="making the files failed"; umnt "$M" "$IMG"; return 1; }
	blocks=$(stat -c %b "$M/small")
	[ "$blocks" = 1 ] || { WHY="st_blocks of a 100-byte inline file: $blocks, not 1"; umnt "$M" "$IMG"; return 1; }
	# an xattr too big for the inode's area takes a node: st_blocks says so at once, and
	# again when it goes (the kernel keeps attributes an hour unless told)
	python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.big", b"b" * 300)' "$M/small"
	blocks=$(stat -c %b "$M/small")
	python3 -c 'import os, sys; os.removexattr(sys.argv[1], "user.big")' "$M/small"
	blocks="$blocks $(stat -c %b "$M/small")"
	[ "$blocks" = "9 1" ] || { WHY="st_blocks with an xattr node, then without: $blocks, not 9 1"; umnt "$M" "$IMG"; return 1; }
	ino=$(stat -c %i "$M/small")
	umnt "$M" "$IMG" || return 1
	out=$(dump.f2fs -i "$ino" "$IMG" 2>&1)
	echo "$out" | grep -qE '^i_blocks[[:space:]]+\[0x +1 : 1\]' && echo "$out" | grep -qE '^i_xattr_nid[[:space:]]+\[0x +0 : 0\]' &&
		echo "$out" | grep -qE '^i_inline[[:space:]]+\[0x +2b : 43\]' ||
		{ WHY="dump.f2fs of the small file: $(echo "$out" | grep -E '^i_(blocks|xattr_nid|inline) ' | tr -s ' \t' ' ' | tr '\n' ';')"; return 1; }
	fsck_clean "$IMG" || return 1
	mnt "$IMG" "$M" || return 1
	[ "$(readlink "$M/link")" = /a/short/target ] && [ "$(stat -c %b "$M/link")" = 0 ] &&
		[ "$(python3 -c 'import os, sys; print(os.getxattr(sys.argv[1], "user.k").decode(), end="")' "$M/small")" = "$(printf 'v%.0s' $(seq 40))" ] ||
		{ WHY="symlink target, its st_blocks or the xattr after a remount"; umnt "$M" "$IMG"; return 1; }
	umnt "$M" "$IMG"
	NOTE="i_inline 0x2b (inline xattrs, inline data, data exists, extra attributes), i_blocks 1, no xattr node"
}

# options: inline_xattr_size= and its refusals
options() {
	local out ino
	truncate -s 0 "$IMG" && truncate -s 1G "$IMG"
	"$MKFS" -f "$IMG" >/dev/null || { WHY="mkfs.zlfs failed"; return 1; }
	out=$("$ZLFS" "$IMG" "$M" -o inline_xattr_size=100 2>&1) && { umnt "$M" "$IMG"; WHY="inline_xattr_size= accepted without flexible_inline_xattr"; return 1; }
	echo "$out" | grep -q flexible_inline_xattr || { WHY="refusal without the feature: $out"; return 1; }
	"$MKFS" -f -O extra_attr,flexible_inline_xattr "$IMG" >/dev/null || { WHY="mkfs.zlfs -O flexible_inline_xattr failed"; return 1; }
	out=$("$ZLFS" "$IMG" "$M" -o inline_xattr_size=100,noinline_xattr 2>&1) && { umnt "$M" "$IMG"; WHY="inline_xattr_size= with noinline_xattr accepted"; return 1; }
	echo "$out" | grep -q noinline_xattr || { WHY="refusal with noinline_xattr: $out"; return 1; }
	out=$("$ZLFS" "$IMG" "$M" -o inline_xattr_size=5 2>&1) && { umnt "$M" "$IMG"; WHY="inline_xattr_size=5 accepted"; return 1; }
	echo "$out" | grep -q "out of range" || { WHY="refusal of 5 words: $out"; return 1; }
	out=$("$ZLFS" "$IMG" "$M" -o inline_xattr_size=904 2>&1) && { umnt "$M" "$IMG"; WHY="inline_xattr_size=904 accepted"; return 1; }
	echo "$out" | grep -q "out of range: 6 .. 903" || { WHY="refusal of 904 words: $out"; return 1; }
	# the largest leaves 40 bytes inline: a new directory's . and .. still fit (F2FS's rule)
	mnt "$IMG" "$M" -o inline_xattr_size=903 || return 1
	mkdir "$M/d" && echo x > "$M/d/x" && [ "$(ls -a "$M/d" | tr '\n' ' ')" = ". .. x " ] ||
		{ WHY="a directory under inline_xattr_size=903: $(ls -a "$M/d" 2>&1 | tr '\n' ' ')"; umnt "$M" "$IMG"; return 1; }
	umnt "$M" "$IMG" || return 1
	fsck_clean "$IMG" || return 1
	mnt "$IMG" "$M" -o inline_xattr_size=100 || return 1
	echo x > "$M/x" || { WHY="create failed"; umnt "$M" "$IMG"; return 1; }
	ino=$(stat -c %i "$M/x")
	umnt "$M" "$IMG" || return 1
	out=$(dump.f2fs -i "$ino" "$IMG" 2>&1 | grep -E '^i_inline_xattr_size')
	echo "$out" | grep -qE '\[0x +64 : 100\]' || { WHY="dump.f2fs: $out"; return 1; }
	fsck_clean "$IMG" || return 1
	NOTE="100 words on a new inode, 903 with a directory; refused without the feature, with noinline_xattr, below 6, above 903"
}

# noinline: under the noinline options nothing new is inline
noinline() {
	truncate -s 0 "$IMG" && truncate -s 1G "$IMG"
	"$MKFS" -f "$IMG" >/dev/null || { WHY="mkfs.zlfs failed"; return 1; }
	mnt "$IMG" "$M" -o "$NOINLINE" || return 1
	echo small > "$M/f" && mkdir "$M/d" || { WHY="create failed"; umnt "$M" "$IMG"; return 1; }
	local fl
	fl=$(lsattr -d "$M/f" "$M/d" 2>&1 | awk '{ print $1 }' | tr '\n' ' ')
	umnt "$M" "$IMG" || return 1
	case $fl in *N*) WHY="inline flag under $NOINLINE: $fl"; return 1 ;; esac
	fsck_clean "$IMG"
}

check "10,000 small files and 1,000 small directories inline: at most 1.05 blocks each" inline_space
check "files and directories grow past the inode: converted, contents right, remount" growth
check "without inline ($NOINLINE): the figure to compare" noinline_space
check "inline file, symlink and xattr in the inode block (dump.f2fs)" layout
check "inline_xattr_size= as F2FS's, and its refusals" options
check "noinline_data, noinline_dentry: new files and directories not inline" noinline
echo "$NAME: blocks per 100-byte file: ${FILE_BLOCKS[0]:-?} inline, ${FILE_BLOCKS[1]:-?} without;" \
	"per directory of three entries: ${DIR_BLOCKS[0]:-?} inline, ${DIR_BLOCKS[1]:-?} without"
finish
