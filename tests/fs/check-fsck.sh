#!/bin/bash
# check-fsck.sh BUILD_DIR - fsck.zlfs as a user and fsck(8) meet it.
#
#   1. a mounted volume is never repaired (exit 8, says it is mounted), and
#      nothing was written to it;
#   2. fsck(8) finds it through an fstab line of type fuse.zlfs with a pass
#      number (fsck -A, fsck MOUNTPOINT): it runs fsck.fuse.zlfs (installed
#      beside fsck.zlfs) and passes its exit code on.  (fsck -t zlfs DEVICE
#      is not the way: fsck(8) asks blkid, which sees F2FS, and runs
#      fsck.f2fs, which reads zlfs volumes too);
#   3. a volume whose daemon was killed right after an fsync: fsck.zlfs -n
#      finds it sound and says the next mount rolls the chain forward
#      (exit 0); the mount does, and the fsynced file is there, byte for
#      byte, and fsck.zlfs -f finds nothing afterwards;
#   4. the progress bar goes to a terminal only (under script(1)), never
#      into a pipe;
#   5. every kind of problem is printed 20 times at most, then "... N in
#      all" (a volume of 60 files whose zones were reset);
#   6. exit codes as fsck(8): 16 for usage (the option named), 8 for no
#      device (its path said once);
#   7. an image whose lock is held for a moment (a daemon letting go) is
#      waited for, saying so; one held for good is refused after 5 s (exit
#      8); SIGINT while waiting exits 32 (cancelled).
# Prints "check-fsck: NAME ok|FAIL" lines and "check-fsck: ok" at the end
# (exit 0) or exits 1.  Exit 77 without root, /dev/fuse or fsck(8).
NAME=check-fsck
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_fuse
command -v fsck >/dev/null || skip "no fsck(8)"
command -v script >/dev/null || skip "no script(1)"

tmpdir
MNT=$T/mnt
mkdir -p "$MNT" "$T/bin"
holder=
# section 7's lock holder (flock and its sleep), if a failure left it
on_exit() { [ -n "$holder" ] && kill $(pgrep -P "$holder") "$holder" 2>/dev/null; }

IMG=$T/img
"$ZDEV" create "$IMG" --size 1G --zone-size 16M --conv-zones 4 --force >/dev/null
"$MKFS" -f "$IMG" >/dev/null

# 1. mounted: refused
"$ZLFS" "$IMG" "$MNT" || exit 1
echo data >"$MNT/f"
sync -f "$MNT/f"
before=$(sha256sum "$IMG" | cut -d' ' -f1)
rc=0; out=$("$FSCK" -y "$IMG" 2>&1) || rc=$?
after=$(sha256sum "$IMG" | cut -d' ' -f1)
[ "$rc" = 8 ] && echo "$out" | grep -q mounted && [ "$before" = "$after" ]
res "a mounted volume is not repaired (exit $rc, nothing written)" $? "$out"
"$UMOUNT" "$MNT"

# 2. through fsck(8), from an fstab line of type fuse.zlfs with a pass number
#    (FSTAB_FILE stands in for /etc/fstab; PATH for an install)
ln -s "$FSCK" "$T/bin/fsck.zlfs"
ln -s "$FSCK" "$T/bin/fsck.fuse.zlfs"
echo "$IMG $MNT fuse.zlfs defaults 0 2" >"$T/fstab"
fsck8() { FSTAB_FILE=$T/fstab PATH=$T/bin:$PATH fsck "$@"; }
rc=0; out=$(fsck8 -A -f -n 2>&1) || rc=$?
[ "$rc" = 0 ] && echo "$out" | grep -q ' 0 problems'
res "fsck -A runs fsck.fuse.zlfs for the fstab line (exit $rc)" $? "$out"
rc=0; out=$(fsck8 -f -n "$MNT" 2>&1) || rc=$?
[ "$rc" = 0 ] && echo "$out" | grep -q ' 0 problems'
res "fsck MOUNTPOINT finds it by the fstab line (exit $rc)" $? "$out"
# its exit code passes through: a damaged checkpoint count (-n leaves it: 4)
python3 - "$IMG" <<'EOF'
import struct, sys, zlib
img = sys.argv[1]
with open(img, "r+b") as f:
    f.seek(1024); sb = f.read(3072)
    cp_blk = struct.unpack_from("<I", sb, 76)[0]            # cp_blkaddr
    packs = []
    for k in (0, 1):
        f.seek((cp_blk + 512 * k) * 4096); b = bytearray(f.read(4096))
        packs.append((struct.unpack_from("<Q", b, 0)[0], k, b))
    ver, k, head = max(packs)
    total = struct.unpack_from("<I", head, 136)[0]         # cp_pack_total_block_count
    for at in (cp_blk + 512 * k, cp_blk + 512 * k + total - 1):
        f.seek(at * 4096); b = bytearray(f.read(4096))
        vb = struct.unpack_from("<Q", b, 16)[0]             # valid_block_count
        struct.pack_into("<Q", b, 16, vb + 3)
        off = struct.unpack_from("<I", b, 164)[0]           # checksum_offset
        crc = zlib.crc32(bytes(b[:off]), 0xF2F52010 ^ 0xffffffff) ^ 0xffffffff
        struct.pack_into("<I", b, off, crc & 0xffffffff)
        f.seek(at * 4096); f.write(b)
EOF
rc=0; out=$(fsck8 -f -n "$MNT" 2>&1) || rc=$?
[ "$rc" = 4 ] && echo "$out" | grep -q 'valid blocks'
res "fsck(8) passes exit 4 on (checkpoint counts off)" $? "$out"
rc=0; out=$(fsck8 -A -f -p 2>&1) || rc=$?
[ "$rc" = 1 ]
res "fsck -A -p repairs them (exit $rc)" $? "$out"
rc=0; "$FSCK" -f -n "$IMG" >/dev/null 2>&1 || rc=$?
res "and the volume is clean (exit $rc)" $rc

# 3. killed after an fsync: sound, the chain for the next mount
"$ZLFS" "$IMG" "$MNT" -f &
pid=$!
for ((i = 0; i < 200; i++)); do mountpoint -q "$MNT" && break; sleep 0.05; done
head -c 200000 /dev/urandom >"$T/want"
python3 - "$MNT/synced" "$T/want" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, open(sys.argv[2], "rb").read())
os.fsync(fd)
EOF
kill -9 "$pid"
wait "$pid" 2>/dev/null
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
rc=0; "$FSCK" -n "$IMG" >"$T/out" 2>&1 || rc=$?
[ "$rc" = 0 ] && grep -q 'rolls them forward' "$T/out"
res "after a SIGKILL: sound, the fsync chain left for the mount (exit $rc)" $? "$(cat "$T/out")"
"$ZLFS" "$IMG" "$MNT" && cmp -s "$MNT/synced" "$T/want"
res "the mount rolls it forward: the fsynced file is whole" $?
"$UMOUNT" "$MNT"
rc=0; "$FSCK" -f -n "$IMG" >/dev/null 2>&1 || rc=$?
res "and fsck.zlfs -f finds nothing after (exit $rc)" $rc

# 4. the progress bar: a terminal only
script -qec "$FSCK -f -n $IMG" /dev/null >"$T/tty" 2>&1
rc=0; grep -q '\[#*\.*\] *[0-9]*%' "$T/tty" || rc=1
"$FSCK" -f -n "$IMG" >"$T/pipe" 2>&1
grep -q '%' "$T/pipe" && rc=1
res "a progress bar on a terminal, none into a pipe" $rc

# 5. every kind of problem printed 20 times at most, then "... N in all": a
#    volume with 60 files whose zones were all reset (every node gone, the
#    NAT still naming them) once printed one line per node
IMG2=$T/img2
"$ZDEV" create "$IMG2" --size 1G --zone-size 16M --conv-zones 4 --force >/dev/null &&
	"$MKFS" -f "$IMG2" >/dev/null && "$ZLFS" "$IMG2" "$MNT" || exit 1
for i in $(seq 60); do echo "$i" >"$MNT/f$i"; done
"$UMOUNT" "$MNT"
"$ZDEV" reset "$IMG2" >/dev/null
rc=0; "$FSCK" -f -n "$IMG2" >"$T/out" 2>&1 || rc=$?
# kinds: numbers as N; a summary line counts with its kind
kinds=$(sed -E 's/^\.\.\. [0-9]+ in all like "(.*)" \(-v shows every one\)$/\1/; s/[0-9]+/N/g' "$T/out" |
	sort | uniq -c | sort -rn)
most=$(head -1 <<<"$kinds" | awk '{print $1}')
[ "$rc" = 4 ] && [ "$most" -le 21 ] && grep -q '^\.\.\. [0-9]* in all like "node [0-9]*: its footer' "$T/out" &&
	[ "$(wc -l <"$T/out")" -lt 100 ]
res "zones reset under 60 files: at most 20 lines a kind, then \"... N in all\" (exit $rc, $(wc -l <"$T/out") lines)" $? "$(head -3 <<<"$kinds")"

# 6. exit codes as fsck(8): 16 usage (and the option named), 8 no device
rc=0; out=$("$FSCK" 2>&1) || rc=$?
[ "$rc" = 16 ] && [ "$(wc -l <<<"$out")" -le 2 ]
res "no device: exit 16, two lines (exit $rc)" $? "$out"
rc=0; out=$("$FSCK" -Q "$IMG" 2>&1) || rc=$?
[ "$rc" = 16 ] && grep -q -- "-Q" <<<"$out"
res "an unknown option: exit 16, named (exit $rc)" $? "$out"
rc=0; "$FSCK" -n -y "$IMG" >/dev/null 2>&1 || rc=$?
res "-n with -y: exit 16 (exit $rc)" $([ $rc = 16 ]; echo $?)
rc=0; out=$("$FSCK" -n "$T/none" 2>&1) || rc=$?
[ "$rc" = 8 ] && [ "$(grep -o "$T/none" <<<"$out" | wc -l)" = 1 ]
res "no such device: exit 8, its path said once (exit $rc)" $? "$out"

# 7. an image still held for a moment (a daemon letting go) is waited for,
#    and said; one held longer than 5 s is refused (exit 8); SIGINT while
#    waiting is fsck(8)'s "cancelled" (exit 32).  -p: a read-write open.
#    The holder lets go once fsck.zlfs has said it waits: no fixed delay.
rm -f "$T/err"
flock "$IMG" sh -c "while ! grep -q waiting '$T/err' 2>/dev/null; do sleep 0.05; done; sleep 0.3" &
holder=$!
for ((i = 0; i < 600; i++)); do flock -n "$IMG" true || break; sleep 0.05; done
rc=0; "$FSCK" -f -p "$IMG" >"$T/out" 2>"$T/err" || rc=$?
wait $holder
[ "$rc" = 0 ] && grep -q "waiting for $IMG to be released" "$T/err"
res "a lock let go after a moment: waited for, said (exit $rc)" $? "$(cat "$T/err" "$T/out")"
flock "$IMG" sleep 600 &
holder=$!
for ((i = 0; i < 600; i++)); do flock -n "$IMG" true || break; sleep 0.05; done
rc=0; "$FSCK" -f -p "$IMG" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 8 ] && grep -q "in use by another process" "$T/err"
res "a lock held for good: refused after the wait (exit $rc)" $? "$(cat "$T/err")"
rm -f "$T/err"
"$FSCK" -f -p "$IMG" >"$T/out" 2>"$T/err" &
fpid=$!
for ((i = 0; i < 600; i++)); do grep -q waiting "$T/err" 2>/dev/null && break; sleep 0.05; done
kill -INT $fpid
rc=0; wait $fpid || rc=$?
[ "$rc" = 32 ]
res "SIGINT while waiting: cancelled (exit $rc)" $? "$(cat "$T/err")"
kill $(pgrep -P $holder) $holder 2>/dev/null; wait $holder 2>/dev/null

verdict
