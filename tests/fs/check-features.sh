#!/bin/bash
# check-features.sh BUILD_DIR - F2FS volumes as people make them today:
# extra attributes, inode and superblock checksums, flexible inline xattrs,
# creation times, project IDs, lost+found.
#
# For each feature set (none; extra_attr; extra_attr,inode_checksum,
# sb_checksum; and those with flexible_inline_xattr, inode_crtime,
# project_quota and lost_found too): mkfs.f2fs -O SET, a tree loaded by
# sload.f2fs (small and large files, a 255-byte name, symlinks, hard links,
# an empty file; for the flexible_inline_xattr set the tree is copied in
# through zlfs instead: Debian's sload.f2fs writes inline_xattr_size 0 there
# and its own fsck.f2fs then complains); zlfs mounts it read-write and the
# tree compares equal (content, types, modes, owners, sizes, mtimes, link
# counts), zlfs changes it the same way as a reference copy (creates,
# appends, truncates, renames, removes, xattrs), unmount, fsck.f2fs and
# fsck.zlfs clean, and a second mount shows exactly the changes.  The same
# for mkfs.zlfs -O volumes, filled through zlfs.
#
# Then on checksummed volumes: an inode with one byte flipped (its checksum
# left) reads as EUCLEAN ("Structure needs cleaning"), the mount goes
# read-only, fsck.zlfs -n reports it (exit 4) and -p repairs it (exit 1),
# after which both fscks are clean and the file reads; a damaged first
# superblock copy is skipped for the second.  Project IDs: chattr -p and +P
# on a project_quota volume, inherited, kept across a remount, EXDEV for a
# link from another project, EOPNOTSUPP without the feature.
#
# Prints "check-features: CHECK ok" or "check-features: CHECK FAIL reason"
# per check, then "check-features: ok (N checks, S s)" (exit 0) only if
# every check passed, else exit 1.  Exit 77 (skipped) without root,
# /dev/fuse, mkfs.f2fs, sload.f2fs, chattr or python3.  KEEP=1 keeps the
# images of a failed run.
NAME=check-features
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_tools mkfs.f2fs sload.f2fs chattr lsattr python3
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"

# (mkfs.f2fs turns on quota with project_quota: that volume is the refusal below)
SETS=("" "extra_attr" "extra_attr,inode_checksum,sb_checksum"
	"extra_attr,inode_checksum,sb_checksum,flexible_inline_xattr,inode_crtime,lost_found")

# meta DIR: path, type, size, mode, owner, mtime (whole seconds; not for
# directories, whose times the loaders stamp with their own clocks), links
meta() {
	(cd "$1" && find . -path ./lost+found -prune -o -printf '%p\t%y\t%s\t%m\t%U:%G\t%T@\t%n\n' |
		awk -F'\t' -v OFS='\t' '{ if ($2 == "d") $3 = $6 = "-"; sub(/\..*/, "", $6); print }' |
		LC_ALL=C sort)
}
# xattrs DIR: every user xattr of every file, sorted
xattrs() {
	python3 - "$1" <<'EOF'
import os, sys
root = sys.argv[1]
out = []
for d, dirs, files in os.walk(root):
    dirs[:] = [x for x in dirs if not (d == root and x == 'lost+found')]
    for n in dirs + files:
        p = os.path.join(d, n)
        try:
            for a in sorted(os.listxattr(p, follow_symlinks=False)):
                out.append('%s %s=%s' % (os.path.relpath(p, root), a,
                                         os.getxattr(p, a, follow_symlinks=False).hex()))
        except OSError as e:
            out.append('%s error %s' % (os.path.relpath(p, root), e.strerror))
print('\n'.join(sorted(out)))
EOF
}
same_tree() {  # REF MNT WHAT
	local out
	out=$(diff -r --no-dereference -x lost+found "$1" "$2" 2>&1) ||
		{ WHY="$3: diff -r: $(echo "$out" | head -3 | tr '\n' ' ')"; return 1; }
	out=$(diff <(meta "$1") <(meta "$2") 2>&1) ||
		{ WHY="$3: metadata: $(echo "$out" | head -4 | tr '\n' ' ')"; return 1; }
	out=$(diff <(xattrs "$1") <(xattrs "$2") 2>&1) ||
		{ WHY="$3: xattrs: $(echo "$out" | head -4 | tr '\n' ' ')"; return 1; }
}

# the tree every volume gets
make_tree() {  # DIR
	local s=$1 i
	mkdir -p "$s/dir/deeper" "$s/many"
	echo hello >"$s/small"
	: >"$s/empty"
	head -c 3000 /dev/urandom >"$s/dir/3000"
	head -c 5000 /dev/urandom >"$s/dir/5000"
	head -c 2000000 /dev/urandom >"$s/dir/deeper/2m"
	for i in $(seq 120); do echo "file $i" >"$s/many/file-$i"; done
	echo long >"$s/$(printf 'n%.0s' $(seq 255))"
	ln -s dir/5000 "$s/link"
	ln -s "$(printf 'x%.0s' $(seq 300))" "$s/longlink"
	ln "$s/dir/5000" "$s/hard"
	chmod 0600 "$s/small"
	touch -d '2021-02-03 04:05:06' "$s/dir/5000" "$s/many/file-9"
}
# the same changes in both trees (zlfs's and the reference)
change() {  # DIR
	local d=$1
	mkdir "$d/new dir"
	head -c 70000 "$SEED" >"$d/new dir/file"
	echo appended >>"$d/small"
	truncate -s 1000000 "$d/dir/deeper/2m"
	truncate -s 8000 "$d/dir/3000"
	mv "$d/dir/5000" "$d/many/moved"
	rm "$d/many/file-7" "$d/empty"
	echo new >"$d/dir/deeper/new"
	python3 -c 'import os, sys
os.setxattr(sys.argv[1] + "/small", "user.one", b"1" * 40)
os.setxattr(sys.argv[1] + "/many/moved", "user.big", b"b" * 3000)
os.setxattr(sys.argv[1] + "/dir", "user.dir", b"d")' "$d"
	chown 1234:5678 "$d/dir/3000"
	# the two trees are changed seconds apart: the same mtime for what changed
	touch -d '2022-01-01 00:00:00' "$d/small" "$d/dir/deeper/2m" "$d/dir/3000" \
		"$d/new dir/file" "$d/dir/deeper/new" "$d/many/moved"
}

# volume IMG MAKER SET LOADER: make IMG with MAKER (mkfs.f2fs, mkfs.zlfs) and
# features SET, fill it with LOADER (sload, zlfs), check it all
volume() {
	local r=0
	volume_body "$@" || r=1
	mountpoint -q "$T/mnt" && umnt "$T/mnt" "$1"
	return $r
}
volume_body() {
	local img=$1 maker=$2 set=$3 loader=$4 m=$T/mnt ref=$T/ref out
	rm -rf "$ref" && cp -a "$T/src" "$ref"
	case $set in *lost_found*) mkdir "$ref/lost+found" ;; esac   # mkfs.f2fs makes it
	truncate -s 0 "$img" && truncate -s 1G "$img"
	if [ "$maker" = mkfs.f2fs ]; then
		out=$(mkfs.f2fs -f ${set:+-O "$set"} "$img" 2>&1) ||
			{ WHY="mkfs.f2fs: $(echo "$out" | tail -2 | tr '\n' ' ')"; return 1; }
	else
		out=$("$MKFS" -f -O "${set:-^extra_attr,^inode_checksum,^inode_crtime,^sb_checksum}" \
			"$img" 2>&1) || { WHY="mkfs.zlfs: $out"; return 1; }
	fi
	if [ "$loader" = sload ]; then
		out=$(sload.f2fs -f "$T/src" "$img" 2>&1) || { WHY="sload.f2fs: $(echo "$out" | tail -2)"; return 1; }
		fsck_clean "$img" || { WHY="as loaded: $WHY"; return 1; }
		mnt "$img" "$m" || return 1
	else
		mnt "$img" "$m" || return 1
		cp -a "$T/src/." "$m/" || { WHY="cp -a into zlfs failed"; return 1; }
	fi
	# sload.f2fs stamps the root with its clock, cp -a with the source's: the root's
	# times and mode are not the tree's
	touch -r "$ref" "$m" && chmod --reference="$ref" "$m"
	same_tree "$ref" "$m" "as loaded" || return 1
	change "$m" && change "$ref" || { WHY="changes failed"; return 1; }
	same_tree "$ref" "$m" "after the changes" || return 1
	umnt "$m" "$img" || return 1
	fsck_clean "$img" || { WHY="after zlfs: $WHY"; return 1; }
	mnt "$img" "$m" || return 1
	same_tree "$ref" "$m" "after a remount" || return 1
	umnt "$m" "$img" || return 1
	NOTE=$(fsck.f2fs --dry-run "$img" 2>&1 | sed -n 's/^Info: superblock features = [0-9a-f]* : *//p')
}

# unmounting FUNCTION: run it; whatever it left mounted is unmounted after
unmounting() {
	local r=0
	"$@" || r=1
	mountpoint -q "$T/mnt" && umnt "$T/mnt" "$T/z.img"
	return $r
}

tmpdir
SEED=$T/seed
head -c 1000000 /dev/urandom >"$SEED"
mkdir -p "$T/src"
make_tree "$T/src"
for set in "${SETS[@]}"; do
	loader=sload
	case $set in *flexible_inline_xattr*) loader=zlfs ;; esac
	check "mkfs.f2fs -O '${set:-}' + $loader: mounted, equal, changed, both fscks, remounted" \
		volume "$T/f.img" mkfs.f2fs "$set" "$loader"
done
for set in "" "extra_attr" "extra_attr,inode_checksum,sb_checksum" \
	"extra_attr,inode_checksum,sb_checksum,flexible_inline_xattr,inode_crtime,project_quota"; do
	check "mkfs.zlfs -O '${set:-(none)}': filled, changed, both fscks, remounted" \
		volume "$T/z.img" mkfs.zlfs "$set" zlfs
done

# mkfs.f2fs -O project_quota adds quota (quota files, which zlfs would leave stale)
quota_refused() {
	local out
	truncate -s 0 "$T/f.img" && truncate -s 1G "$T/f.img"
	mkfs.f2fs -f -O extra_attr,project_quota "$T/f.img" >/dev/null 2>&1 || { WHY="mkfs.f2fs failed"; return 1; }
	if out=$("$ZLFS" "$T/f.img" "$T/mnt" 2>&1); then
		fusermount3 -u "$T/mnt"; WHY="mounted"; return 1
	fi
	case $out in *"'quota'"*"no quota accounting"*) ;; *) WHY="said: $out"; return 1 ;; esac
}
check "a mkfs.f2fs project_quota volume (quota files) is refused, saying why" quota_refused

# mkfs.zlfs's refusals name the feature and the reason
refusals() {
	local out
	for bad in encrypt quota casefold verity lost_found "inode_checksum,^extra_attr" bogus; do
		if out=$("$MKFS" -f -O "$bad" "$T/z.img" 2>&1); then
			WHY="-O $bad accepted"; return 1
		fi
		case $out in *"${bad%%,*}"*) ;; *) WHY="-O $bad: the message does not name it: $out"; return 1 ;; esac
	done
}
check "mkfs.zlfs -O refuses what zlfs cannot write, naming it" refusals

# the volume mkfs.zlfs makes by default has checksums, and the kernel's format for them
defaults() {
	local out
	out=$("$MKFS" -f "$T/z.img" 2>&1) || { WHY="mkfs.zlfs: $out"; return 1; }
	echo "$out" | grep -q 'features: .*extra_attr.*inode_checksum.*sb_checksum' ||
		{ WHY="mkfs.zlfs printed: $(echo "$out" | grep features)"; return 1; }
	out=$(fsck.f2fs --dry-run "$T/z.img" 2>&1)
	echo "$out" | grep -q 'superblock features = .*extra_attr inode_checksum' ||
		{ WHY="fsck.f2fs: $(echo "$out" | grep 'features')"; return 1; }
	fsck_clean "$T/z.img"
}
check "mkfs.zlfs makes extra_attr, inode_checksum, sb_checksum by default" defaults

# inode_block IMG NAME: the block of the newest inode block named NAME
inode_block() {
	python3 - "$1" "$2" <<'EOF'
import struct, sys
name = sys.argv[2].encode()
best = None
with open(sys.argv[1], 'rb') as f:
    b = 0
    while True:
        blk = f.read(4096)
        if len(blk) < 4096:
            break
        nid, ino, flag = struct.unpack_from('<III', blk, 4096 - 24)
        ver = struct.unpack_from('<Q', blk, 4096 - 12)[0]
        namelen = struct.unpack_from('<I', blk, 88)[0]
        if nid == ino and nid > 3 and flag >> 3 == 0 and blk[92:92 + namelen] == name:
            if best is None or ver >= best[1]:
                best = (b, ver)
        b += 1
print(best[0] if best else -1)
EOF
}
# flip IMG BYTE: one byte of IMG inverted
flip() {
	python3 -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); c = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([c[0] ^ 0xff]))' "$1" "$2"
}
damaged_inode() {
	local img=$T/z.img m=$T/mnt out rc blk
	"$MKFS" -f "$img" >/dev/null || { WHY="mkfs.zlfs failed"; return 1; }
	mnt "$img" "$m" || return 1
	head -c 10000 "$SEED" >"$m/victim" && echo ok >"$m/bystander"
	umnt "$m" "$img" || return 1
	blk=$(inode_block "$img" victim)
	[ "$blk" -gt 0 ] || { WHY="victim's inode block not found"; return 1; }
	flip "$img" $((blk * 4096 + 92 + 2))     # a byte of its name copy: no field check sees it
	mnt "$img" "$m" || return 1
	out=$(cat "$m/victim" 2>&1 >/dev/null) && { WHY="the damaged inode read"; return 1; }
	case $out in *"Structure needs cleaning"*) ;; *) WHY="reading it: $out"; return 1 ;; esac
	touch "$m/after" 2>/dev/null && { WHY="still writable after the damage"; return 1; }
	out=$(grep '^inconsistency=' "$m/.zlfs/status")
	case $out in *"inode $(stat -c %i "$m/bystander" 2>/dev/null)"*) WHY="names the wrong inode: $out"; return 1 ;; esac
	echo "$out" | grep -q '^inconsistency=inode [0-9]*: checksum' ||
		{ WHY="/.zlfs/status does not say which inode: $out"; return 1; }
	umnt "$m" "$img" || return 1
	rc=0; out=$("$FSCK" -f -n "$img" 2>&1) || rc=$?
	[ $rc = 4 ] && echo "$out" | grep -q 'checksum' ||
		{ WHY="fsck.zlfs -n: exit $rc: $(echo "$out" | head -2)"; return 1; }
	rc=0; out=$("$FSCK" -f -p "$img" 2>&1) || rc=$?
	[ $rc = 1 ] || { WHY="fsck.zlfs -p: exit $rc: $(echo "$out" | tail -2)"; return 1; }
	fsck_clean "$img" || return 1
	mnt "$img" "$m" || return 1
	cmp -s <(head -c 10000 "$SEED") "$m/victim" || { WHY="the repaired file differs"; return 1; }
	umnt "$m" "$img"
}
check "a damaged inode on a checksummed volume: EUCLEAN, read-only, fsck.zlfs finds and repairs it" \
	unmounting damaged_inode

damaged_super() {
	local img=$T/z.img m=$T/mnt
	"$MKFS" -f "$img" >/dev/null || { WHY="mkfs.zlfs failed"; return 1; }
	flip "$img" $((1024 + 200))        # the first copy's volume name: only its checksum notices
	mnt "$img" "$m" || return 1
	grep -q 'first superblock refused (superblock: checksum mismatch)' "$T/z.img.zlfs.log" ||
		{ WHY="no word of the bad copy: $(tail -2 "$T/z.img.zlfs.log")"; return 1; }
	echo x >"$m/x" || { WHY="write failed"; return 1; }
	umnt "$m" "$img"
}
check "a damaged superblock copy (sb_checksum): the other is used" unmounting damaged_super

projects() {
	local img=$T/z.img m=$T/mnt out
	"$MKFS" -f -O extra_attr,inode_checksum,sb_checksum,project_quota "$img" >/dev/null ||
		{ WHY="mkfs.zlfs failed"; return 1; }
	mnt "$img" "$m" || return 1
	mkdir "$m/p" "$m/other" && echo a >"$m/other/f"
	chattr -p 42 "$m/p" && chattr +P "$m/p" || { WHY="chattr -p/+P failed"; return 1; }
	mkdir "$m/p/sub" && echo b >"$m/p/sub/g"
	out=$(lsattr -pd "$m/p/sub" "$m/p/sub/g" | awk '{print $1}' | tr '\n' ' ')
	[ "$out" = "42 42 " ] || { WHY="inherited projects: $out"; return 1; }
	out=$(ln "$m/other/f" "$m/p/f" 2>&1) && { WHY="link into another project allowed"; return 1; }
	case $out in *"cross-device"*) ;; *) WHY="link: $out"; return 1 ;; esac
	umnt "$m" "$img" || return 1
	fsck_clean "$img" || return 1
	mnt "$img" "$m" || return 1
	out=$(lsattr -pd "$m/p/sub/g" | awk '{print $1}')
	[ "$out" = 42 ] || { WHY="after a remount: project $out"; return 1; }
	umnt "$m" "$img" || return 1
	"$MKFS" -f "$img" >/dev/null && mnt "$img" "$m" || return 1
	echo c >"$m/h"
	out=$(chattr -p 7 "$m/h" 2>&1) && { WHY="a project set without project_quota"; return 1; }
	case $out in *"not supported"*) ;; *) WHY="without project_quota: $out"; return 1 ;; esac
	umnt "$m" "$img"
}
check "project IDs: chattr -p, +P inheritance, EXDEV, remount; EOPNOTSUPP without project_quota" \
	unmounting projects

finish
