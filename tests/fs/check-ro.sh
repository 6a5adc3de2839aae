#!/bin/bash
# check-ro.sh BUILD_DIR - read-only that writes nothing: `zlfs -o ro`,
# `fsck.zlfs -n` and `zlfs-zdev info|report` on images and devices that
# cannot be written, through FUSE.
#
# A tree (files, a directory, a symlink, an xattr) is written by a
# read-write mount first; then, each time, a ro mount must show it all
# (ls -lR; every file's bytes, the symlink and the xattr compared with
# what was written), refuse writes with EROFS, and leave the sha256 of the
# image and of IMAGE.zst (or of the loop device's file) what it was, through
# the mount, the reads, the unmount, fsck.zlfs -n and zlfs-zdev info/report:
#   a. an image of mode 0444 mounted by its owner, a user other than root
#      (root opens /dev/fuse and mounts; the daemon, run as that user, gets
#      the descriptor: /dev/fd/N, as mount.fuse3's drop_privileges does);
#      fsck.zlfs -n and zlfs-zdev as that user too;
#   b. an image made immutable (chattr +i) mounted by root, whose read-write
#      mount is refused;
#   c. a read-only loop device (losetup -r) of a formatted file: fuseblk;
#   d. a volume left needing roll-forward (kill -9 of the daemon after an
#      fsync): the ro mount says the chain is not rolled forward, shows the
#      checkpointed files, keeps a read-write mount of the same image out,
#      and writes nothing; the next read-write mount then rolls it forward.
#
# Prints "check-ro: NAME ok|FAIL ..." per check, then "check-ro: ok" (exit
# 0) or "check-ro: FAIL (N failed)" (exit 1).  Exit 77 (skipped) without root,
# /dev/fuse or a needed tool.  About 15 s.
NAME=check-ro
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_fuse
need_tools fusermount3 setpriv chattr losetup blockdev python3 flock
need_built "$ZDEV" "$MKFS" "$ZLFS" "$UMOUNT" "$FSCK"

tmpdir
chmod 755 "$T"      # the user of a. reaches the image and the mount point
M=$T/mnt
REF=$T/ref
LOOP=
USR=65534           # nobody
AS_USER=(setpriv --reuid=$USR --regid=$USR --clear-groups)
mkdir -p "$M" "$T/mnt2"

on_exit() {
	for m in "$M" "$T/mnt2"; do
		if grep -q " $m " /proc/mounts; then
			"$UMOUNT" "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || umount -l "$m"
		fi
	done
	chattr -i "$T"/img* 2>/dev/null
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
}

# The reference tree, on the host's filesystem: copied in with cp -a.
mkdir -p "$REF/dir/sub"
echo "first file" >"$REF/a"
head -c 300000 /dev/urandom >"$REF/dir/big"
head -c 5000 /dev/urandom >"$REF/dir/sub/small"
: >"$REF/dir/empty"
ln -s dir/big "$REF/link"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.note", b"kept")' "$REF/a" ||
	skip "no user xattrs on $T"

# populate MNT: the tree written through a read-write mount
populate() { cp -a "$REF/." "$1/" && sync; }

# verify NAME MNT DEVFILE...: the whole tree is there and readable, writes
# get EROFS, and the daemon holds each DEVFILE (image, IMAGE.zst, device)
# only on read-only descriptors (a read-only loop device opens read-write
# too: there the descriptors are what tells)
verify() {
	local name=$1 m=$2 out
	shift 2
	if ! ls -lR "$m" >/dev/null; then
		fail "$name" "(ls -lR of the ro mount failed)"
		return 1
	fi
	if ! out=$(diff -r --no-dereference "$REF" "$m" 2>&1); then
		fail "$name" "(the tree differs: $(echo "$out" | head -3 | tr '\n' ' '))"
		return 1
	fi
	# cat of every file (diff read them; cat through the symlink too)
	if ! cat "$m/link" "$m/dir/sub/small" | cmp -s - <(cat "$REF/dir/big" "$REF/dir/sub/small"); then
		fail "$name" "(cat through the symlink differs)"
		return 1
	fi
	out=$(python3 - "$m" "$@" <<'EOF'
import errno, os, sys
m = sys.argv[1]
bad = []
pid = os.getxattr(m + "/.zlfs", "user.zlfs.pid").decode()
want = {os.path.realpath(p) for p in sys.argv[2:]}
seen = set()
for fd in os.listdir("/proc/%s/fd" % pid):
    try:
        path = os.readlink("/proc/%s/fd/%s" % (pid, fd))
        if path not in want:
            continue
        with open("/proc/%s/fdinfo/%s" % (pid, fd)) as f:
            flags = int([l for l in f if l.startswith("flags:")][0].split()[1], 8)
    except (OSError, IndexError):
        continue
    seen.add(path)
    if flags & os.O_ACCMODE != os.O_RDONLY:
        bad.append("the daemon holds %s open for writing" % path)
if seen != want:
    bad.append("the daemon does not hold %s" % " ".join(sorted(want - seen)))
if os.getxattr(m + "/a", "user.note") != b"kept":
    bad.append("xattr")
def expect_erofs(what, f):
    try:
        f()
        bad.append(what + " succeeded")
    except OSError as e:
        if e.errno != errno.EROFS:
            bad.append("%s: %s" % (what, errno.errorcode.get(e.errno, e.errno)))
expect_erofs("create", lambda: os.close(os.open(m + "/new", os.O_CREAT | os.O_WRONLY, 0o644)))
expect_erofs("write", lambda: os.close(os.open(m + "/a", os.O_WRONLY)))
expect_erofs("mkdir", lambda: os.mkdir(m + "/newdir"))
expect_erofs("unlink", lambda: os.unlink(m + "/dir/empty"))
expect_erofs("rename", lambda: os.rename(m + "/a", m + "/b"))
expect_erofs("symlink", lambda: os.symlink("a", m + "/l2"))
expect_erofs("chmod", lambda: os.chmod(m + "/a", 0o600))
expect_erofs("utime", lambda: os.utime(m + "/a", (1, 1)))
expect_erofs("setxattr", lambda: os.setxattr(m + "/a", "user.x", b"1"))
expect_erofs("truncate", lambda: os.truncate(m + "/dir/big", 1))
with open(m + "/.zlfs/status") as f:
    if "read_only=1\n" not in f.read():
        bad.append("status: no read_only=1")
print(" ".join(bad))
EOF
	)
	if [ -n "$out" ]; then
		fail "$name" "(on the ro mount: $out)"
		return 1
	fi
	return 0
}

# sums FILE...: sha256 of each, one line (python's hashlib: several times
# sha256sum's speed where the CPU has SHA instructions)
sums() {
	python3 - "$@" <<'EOF'
import hashlib, sys
out = []
for p in sys.argv[1:]:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    out.append(h.hexdigest())
print(" ".join(out))
EOF
}

# lookers NAME CMD-PREFIX... DEV: fsck.zlfs -n and zlfs-zdev info/report work
lookers() {
	local name=$1 out
	shift
	local dev=${!#}
	local pre=("${@:1:$#-1}")
	if ! out=$("${pre[@]}" "$FSCK" -n -f "$dev" 2>&1); then
		fail "$name" "(fsck.zlfs -n: $(echo "$out" | tail -2 | tr '\n' ' '))"
		return 1
	fi
	if ! out=$("${pre[@]}" "$ZDEV" info "$dev" 2>&1) || ! echo "$out" | grep -q '^zones:'; then
		fail "$name" "(zlfs-zdev info: $out)"
		return 1
	fi
	if ! out=$("${pre[@]}" "$ZDEV" report "$dev" 2>&1) || ! echo "$out" | grep -q '^Zone 000000'; then
		fail "$name" "(zlfs-zdev report: $(echo "$out" | tail -1))"
		return 1
	fi
	return 0
}

# image NAME: a fresh zoned image with the tree on it, unmounted
image() {
	IMG=$T/$1
	"$ZDEV" create "$IMG" --size 256M --zone-size 8M --conv-zones 4 >/dev/null &&
		"$MKFS" "$IMG" >/dev/null || die "$1: create/mkfs"
	"$ZLFS" "$IMG" "$M" || die "$1: read-write mount"
	populate "$M" || die "$1: populating"
	"$UMOUNT" "$M" || die "$1: zlfs-umount"
}

# ---- a. mode 0444, mounted by its owner (not root) --------------------------------------
image img-a
chown $USR:$USR "$IMG" "$IMG.zst" "$M"
chmod 0444 "$IMG" "$IMG.zst"
before=$(sums "$IMG" "$IMG.zst")
if "${AS_USER[@]}" sh -c ': >>"$1"' sh "$IMG" 2>/dev/null; then
	die "a: the 0444 image is writable by its owner: the check proves nothing"
fi
# root makes the FUSE mount on a /dev/fuse descriptor; the daemon runs as the owner
exec {FD}<>/dev/fuse
if ! mount -i -t fuse.zlfs -o "ro,fd=$FD,rootmode=40000,user_id=$USR,group_id=$USR,default_permissions,allow_other" \
	"$IMG" "$M"; then
	exec {FD}>&-
	die "a: mount(8) of the FUSE descriptor"
fi
if ! out=$("${AS_USER[@]}" "$ZLFS" "$IMG" "/dev/fd/$FD" -o ro 2>&1); then
	exec {FD}>&-
	umount -l "$M"
	fail "0444 image, its owner" "(the ro mount failed: $out)"
else
	exec {FD}>&-
	ok=1
	verify "0444 image, its owner" "$M" "$IMG" "$IMG.zst" || ok=
	"$UMOUNT" "$M" || die "a: zlfs-umount"
	mid=$(sums "$IMG" "$IMG.zst")
	lookers "0444 image, its owner" "${AS_USER[@]}" "$IMG" || ok=
	after=$(sums "$IMG" "$IMG.zst")
	if [ "$before" != "$mid" ]; then
		fail "0444 image, its owner" "(the ro mount changed the image or its IMAGE.zst)"
	elif [ "$before" != "$after" ]; then
		fail "0444 image, its owner" "(fsck.zlfs -n or zlfs-zdev changed the image or IMAGE.zst)"
	elif [ -n "$ok" ]; then
		pass "0444 image, its owner"
	fi
fi
rm -f "$IMG" "$IMG.zst"
chown root:root "$M"

# ---- b. chattr +i, root ---------------------------------------------------------------
image img-b
chattr +i "$IMG" "$IMG.zst" || die "b: chattr +i"
before=$(sums "$IMG" "$IMG.zst")
if "$ZLFS" "$IMG" "$T/mnt2" 2>/dev/null; then
	"$UMOUNT" "$T/mnt2"
	fail "immutable image, root" "(a read-write mount of the immutable image was accepted)"
elif ! out=$("$ZLFS" "$IMG" "$M" -o ro 2>&1); then
	fail "immutable image, root" "(the ro mount failed: $out)"
else
	ok=1
	verify "immutable image, root" "$M" "$IMG" "$IMG.zst" || ok=
	"$UMOUNT" "$M" || die "b: zlfs-umount"
	# immutable: the kernel itself keeps every byte; a. and d. compare the sums
	lookers "immutable image, root" "$IMG" || ok=
	after=$(sums "$IMG" "$IMG.zst")
	if [ "$before" != "$after" ]; then
		fail "immutable image, root" "(the image or its IMAGE.zst changed)"
	elif [ -n "$ok" ]; then
		pass "immutable image, root"
	fi
fi
chattr -i "$IMG" "$IMG.zst"
rm -f "$IMG" "$IMG.zst"

# ---- c. read-only loop device ------------------------------------------------------------
# A loop device has no zones: the volume is made on it (8 MiB zones, all
# conventional: small and quick), then it is attached again read-only.
RAW=$T/img-c.raw
truncate -s 256M "$RAW"
if ! LOOP=$(losetup -f --show "$RAW" 2>/dev/null) || [ ! -b "$LOOP" ]; then
	LOOP=
	echo "check-ro: no loop device here: c. left out"
else
	"$MKFS" "$LOOP?zone_size=8M" >/dev/null || die "c: mkfs.zlfs $LOOP"
	"$ZLFS" "$LOOP?zone_size=8M" "$M" || die "c: read-write mount of $LOOP"
	populate "$M" || die "c: populating"
	umount "$M" || die "c: umount"
	# fuseblk's umount waits for the daemon's final checkpoint; detach, reattach read-only
	for i in $(seq 50); do losetup -d "$LOOP" 2>/dev/null && break; sleep 0.1; done
	LOOP=
	before=$(sums "$RAW")
	LOOP=$(losetup -r -f --show "$RAW") || die "c: losetup -r"
	[ "$(blockdev --getro "$LOOP")" = 1 ] || die "c: $LOOP is not read-only"
	if ! out=$("$ZLFS" "$LOOP?zone_size=8M" "$M" -o ro 2>&1); then
		fail "read-only loop device" "(the ro mount failed: $out)"
	else
		ok=1
		verify "read-only loop device" "$M" "$LOOP" || ok=
		umount "$M" || die "c: umount"
		lookers "read-only loop device" "$LOOP?zone_size=8M" || ok=
		losetup -d "$LOOP"
		LOOP=
		after=$(sums "$RAW")
		if [ "$before" != "$after" ]; then
			fail "read-only loop device" "(the device's bytes changed)"
		elif [ -n "$ok" ]; then
			pass "read-only loop device"
		fi
	fi
fi
if [ -n "$LOOP" ]; then losetup -d "$LOOP"; LOOP=; fi
rm -f "$RAW"

# ---- d. a volume that needs roll-forward, mounted ro ---------------------------------------
image img-d
"$ZLFS" "$IMG" "$M" -o gc_cp_interval_ms=0 || die "d: mount"
head -c 20000 /dev/urandom >"$T/fsynced"
cp "$T/fsynced" "$M/fsynced" && python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR); os.fsync(fd); os.close(fd)' "$M/fsynced" || die "d: fsync"
# the daemon's pid: the virtual directory's xattr (what zlfs-umount reads)
pid=$(python3 -c 'import os, sys; print(os.getxattr(sys.argv[1], "user.zlfs.pid").decode())' \
	"$M/.zlfs") || die "d: no daemon pid"
kill -9 "$pid"
fusermount3 -uz "$M" 2>/dev/null
# the killed daemon's lock goes with its io_uring, a moment later
for i in $(seq 100); do flock -n "$IMG" true && break; sleep 0.1; done
before=$(sums "$IMG" "$IMG.zst")
name="needs roll-forward, ro"
if ! said=$("$ZLFS" "$IMG" "$M" -o ro 2>&1); then
	fail "$name" "(the ro mount failed: $said)"
else
	ok=1
	if ! echo "$said" | grep -q "not rolled forward"; then
		fail "$name" "(the mount did not say the chain is not rolled forward: '$said')"
		ok=
	fi
	# the checkpointed tree is all there; the fsynced file is not (yet)
	verify "$name" "$M" "$IMG" "$IMG.zst" || ok=
	if [ -e "$M/fsynced" ]; then
		fail "$name" "(the fsynced file shows: rolled forward on a ro mount?)"
		ok=
	fi
	# mutual exclusion: no read-write mount beside it
	if "$ZLFS" "$IMG" "$T/mnt2" 2>/dev/null; then
		"$UMOUNT" "$T/mnt2"
		fail "$name" "(a read-write mount was accepted beside the ro one)"
		ok=
	fi
	"$UMOUNT" "$M" || die "d: zlfs-umount"
	mid=$(sums "$IMG" "$IMG.zst")
	out=$("$FSCK" -n "$IMG" 2>&1) || { fail "$name" "(fsck.zlfs -n: $out)"; ok=; }
	lookers "$name" "$IMG" || ok=
	after=$(sums "$IMG" "$IMG.zst")
	if [ "$before" != "$mid" ]; then
		fail "$name" "(the ro mount changed the image or its IMAGE.zst)"
	elif [ "$before" != "$after" ]; then
		fail "$name" "(fsck.zlfs -n or zlfs-zdev changed the image or IMAGE.zst)"
	elif [ -n "$ok" ]; then
		# the chain was left whole: a read-write mount rolls it forward now
		"$ZLFS" "$IMG" "$M" || die "d: read-write mount"
		if ! cmp -s "$T/fsynced" "$M/fsynced"; then
			fail "$name" "(the read-write mount after it did not roll the file forward)"
		else
			pass "$name"
		fi
		"$UMOUNT" "$M" || die "d: zlfs-umount"
	fi
fi

verdict
