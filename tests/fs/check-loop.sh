#!/bin/bash
# check-loop.sh BUILD_DIR - zlfs's own FUSE request loop (fs/fuse_loop.c)
# through real mounts.  The loop serves with one thread while requests come
# one at a time and adds readers while they queue; these checks read its
# counters (loop_* in /.zlfs/status) and never time anything:
#   1. rescue: on a slow device (lat_us=200000: every command 0.2 s) an
#      fsync keeps its thread for three commands or more; lookups in
#      /.zlfs (no lock of the filesystem, no device) sent meanwhile are
#      answered while the fsync still runs, because the supervisor added a
#      reader (loop_rescues grew); then fsck;
#   2. queueing: six shells copy a tree and write with fsync at once; the
#      loop has started more than one thread and counted queued requests,
#      the copies are identical;
#   3. SIGTERM with those threads idle: the daemon (-f, our child) exits 0
#      with the final checkpoint written, the mount gone, both fscks clean,
#      and a remount reads the copies back;
#   4. a handler that waits for the kernel's requests: F2FS_IOC_COMPRESS_FILE
#      on a file whose pages are still dirty in the kernel makes zlfs ask
#      the kernel to write them back (zl_write_back) while it serves the
#      ioctl; the loop holds another reader for that, so the ioctl
#      succeeds with no rescue, and the file reads back compressed
#      (128 KiB: one WRITE, nothing else queued that a busy reader could
#      keep waiting, which would make a rescue right);
#   5. a file's writeback in the kernel's order: 256 MiB written with
#      buffered 1 MiB writes on a device taking 1 ms a command (the kernel
#      sends several WRITEs at once, the loop serves them on several
#      threads, each waits on the device) lands in the log in offset order:
#      read back with O_DIRECT 1 MiB reads, each 512 KiB READ is one run of
#      blocks, one device read (disp_dispatched against the READs counted,
#      at most 5% more).  Served in whatever order the threads ran, the
#      same write gave 572-627 device reads for 512 READs (fuse_loop.c's
#      WRITE order).
# Prints "check-loop: CHECK ok (note)" or "... FAIL why" per check, then the
# verdict.  Exit 77 without root, /dev/fuse, python3 or fsck.f2fs.
NAME=check-loop
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_tools python3 fsck.f2fs
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"

M=$T/m
PID=
on_exit() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null
}

# key MNT KEY: KEY's value in the mount's status
key() { sed -n "s/^$2=//p" "$1/.zlfs/status"; }

# img PATH [MKFS OPTIONS...]: a fresh zoned image of 1 GiB
img() {
	local i=$1
	shift
	rm -f "$i" "$i.zst"
	"$ZDEV" create "$i" --size 1G --zone-size 16M --conv-zones 4 >/dev/null &&
		"$MKFS" -f "$@" "$i" >/dev/null || { WHY="create/mkfs failed"; return 1; }
}

rescue() {
	local i=$T/slow.img r0 r1 out
	img "$i" || return 1
	mnt "$i?lat_us=200000" "$M" -o no_writeback_cache || return 1
	echo first >"$M/f"
	r0=$(key "$M" loop_rescues)
	cat >"$T/probe.py" <<'EOF'
import os, sys, threading, time
m = sys.argv[1]
st = {"in": False, "secs": 0.0}
# readers stay wanted 50 ms after requests queued (the mount's); then each
# request that comes alone lets one go: forty of them leave one reader
time.sleep(0.2)
for i in range(40):
    try:
        os.stat(m + "/.zlfs/alone-%d" % i)
    except FileNotFoundError:
        pass
def sync():
    fd = os.open(m + "/f", os.O_WRONLY)
    os.pwrite(fd, b"x" * 4096, 0)
    st["in"] = True
    t = time.monotonic()
    os.fsync(fd)
    st["secs"] = time.monotonic() - t
    st["in"] = False
    os.close(fd)
th = threading.Thread(target=sync)
th.start()
while not st["in"]:
    time.sleep(0.001)
time.sleep(0.05)          # the FSYNC request on its way to the daemon
n = 0
while st["in"]:
    try:
        os.stat(m + "/.zlfs/none-%d" % n)
    except FileNotFoundError:
        pass
    if st["in"]:
        n += 1
th.join()
print("%d %.2f" % (n, st["secs"]))
EOF
	out=$(python3 "$T/probe.py" "$M") || { WHY="probe: $out"; return 1; }
	r1=$(key "$M" loop_rescues)
	umnt "$M" "$i" || return 1
	fsck_clean "$i" || return 1
	set -- $out
	NOTE="$1 lookups answered during a $2 s fsync, $((r1 - r0)) rescue(s)"
	[ "$1" -ge 1 ] || { WHY="no lookup answered while the fsync ran ($2 s): $NOTE"; return 1; }
	[ "$r1" -gt "$r0" ] || { WHY="loop_rescues did not grow: $NOTE"; return 1; }
}

# the daemon in the foreground, our child, so its exit status is ours to see
mount_fg() {  # IMG
	mkdir -p "$M"
	"$ZLFS" "$1" "$M" -f >>"$T/fg.log" 2>&1 &
	PID=$!
	local k
	for ((k = 0; k < 600; k++)); do
		mountpoint -q "$M" && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	WHY="no mount: $(tail -3 "$T/fg.log" | tr '\n' ' ')"
	return 1
}

queueing() {
	local i=$T/q.img k p pids=() th qd
	img "$i" || return 1
	mount_fg "$i" || return 1
	for k in 1 2 3 4 5 6; do
		{ cp -r "$SRC/fs" "$M/copy$k" &&
			dd if=/dev/zero of="$M/zero$k" bs=64k count=64 conv=fsync status=none; } &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || { WHY="a writer failed"; return 1; }
	done
	for k in 1 2 3 4 5 6; do
		diff -r "$SRC/fs" "$M/copy$k" >/dev/null || { WHY="copy$k differs"; return 1; }
	done
	th=$(key "$M" loop_threads)
	qd=$(key "$M" loop_queued)
	NOTE="$th threads, $qd of $(key "$M" loop_requests) requests found another queued"
	[ "$th" -ge 2 ] && [ "$th" -le 64 ] || { WHY="loop_threads $th: $NOTE"; return 1; }
	[ "$qd" -ge 1 ] || { WHY="no request found another queued: $NOTE"; return 1; }
}

sigterm() {
	local i=$T/q.img rc k
	[ -n "$PID" ] && mountpoint -q "$M" || { WHY="not mounted (the check before failed)"; return 1; }
	kill -TERM "$PID"
	wait "$PID"
	rc=$?
	PID=
	[ "$rc" = 0 ] || { WHY="the daemon exited $rc on SIGTERM: $(tail -3 "$T/fg.log" | tr '\n' ' ')"; return 1; }
	mountpoint -q "$M" && { WHY="still mounted after the daemon exited"; return 1; }
	fsck_clean "$i" || return 1
	mnt "$i" "$M" || return 1
	for k in 1 2 3 4 5 6; do
		diff -r "$SRC/fs" "$M/copy$k" >/dev/null || { WHY="copy$k differs after the remount"; break; }
	done
	umnt "$M" "$i" || return 1
	[ -z "$WHY" ]
}

write_back() {
	local i=$T/c.img r0 r1 out
	img "$i" -O compression || return 1
	mnt "$i" "$M" -o compress_extension=txt,compress_mode=user || return 1
	r0=$(key "$M" loop_rescues)
	cat >"$T/wb.py" <<'EOF'
import fcntl, os, struct, sys
p = sys.argv[1] + "/a.txt"
data = b"".join(b"zone log cluster %d\n" % (i % 977) for i in range(6000))[:131072]
# written and not closed (a close writes the pages back): dirty in the kernel
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, data)
fcntl.ioctl(fd, 0xF518)       # F2FS_IOC_COMPRESS_FILE
os.close(fd)
os.sync()
fd = os.open(p, os.O_RDONLY)
saved = struct.unpack("Q", fcntl.ioctl(fd, 0x8008F511, b"\0" * 8))[0]
os.close(fd)
if saved <= 0:
    sys.exit("nothing saved after COMPRESS_FILE")
if open(p, "rb").read() != data:
    sys.exit("a.txt reads back wrong")
print(saved)
EOF
	out=$(python3 "$T/wb.py" "$M" 2>&1) || { WHY="$out"; umnt "$M" "$i"; return 1; }
	r1=$(key "$M" loop_rescues)
	umnt "$M" "$i" || return 1
	fsck_clean "$i" || return 1
	NOTE="$out blocks saved, $((r1 - r0)) rescues"
	[ "$r1" = "$r0" ] || { WHY="the ioctl's write-back needed the supervisor: $NOTE"; return 1; }
}

in_order() {
	local i=$T/o.img c0 c1 r0 r1 reads cmds
	rm -f "$i" "$i.zst"
	"$ZDEV" create "$i" --size 3G --zone-size 64M --conv-zones 4 >/dev/null &&
		"$MKFS" -f "$i" >/dev/null || { WHY="create/mkfs failed"; return 1; }
	mnt "$i?lat_us=1000" "$M" || return 1
	dd if=/dev/urandom of="$T/src" bs=1M count=256 status=none
	dd if="$T/src" of="$M/f" bs=1M conv=fsync status=none || { WHY="write failed"; umnt "$M" "$i"; return 1; }
	c0=$(key "$M" disp_dispatched)
	r0=$(sed -n 's/^fuse_req READ //p' "$M/.zlfs/status")
	dd if="$M/f" of="$T/back" bs=1M iflag=direct status=none || { WHY="read failed"; umnt "$M" "$i"; return 1; }
	c1=$(key "$M" disp_dispatched)
	r1=$(sed -n 's/^fuse_req READ //p' "$M/.zlfs/status")
	umnt "$M" "$i" || return 1
	cmp -s "$T/src" "$T/back" || { WHY="the file reads back wrong"; return 1; }
	rm -f "$T/src" "$T/back"
	fsck_clean "$i" || return 1
	reads=$((${r1:-0} - ${r0:-0}))
	cmds=$((c1 - c0))
	NOTE="$cmds device reads for $reads READs"
	[ "$reads" -ge 512 ] || { WHY="fewer READs than 512 KiB pieces: $NOTE"; return 1; }
	[ $((cmds * 100)) -le $((reads * 105)) ] || { WHY="the file's pieces out of order: $NOTE"; return 1; }
}

check "a request waits for no long one (a reader added while an fsync holds the only one)" rescue
check "readers added while requests queue (six writers at once, copies identical)" queueing
check "SIGTERM with those threads idle: exit 0, unmounted, both fscks clean, remount reads back" sigterm
check "a handler waiting for the kernel's writes holds a reader (COMPRESS_FILE on dirty pages)" write_back
check "a file's writeback lands in offset order (a device read per READ reading it back)" in_order
finish
