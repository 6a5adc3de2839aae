#!/bin/bash
# check-enospc.sh BUILD_DIR - a full volume as a writer meets it, and df
# beside writers, through FUSE:
#
#   1. dd bs=1M with no count on a 512 MiB volume (writeback cache, the
#      default) ends with ENOSPC from write(2), having been accepted at
#      least what df showed available (which leaves out the writeback
#      reserve) and at most that plus the reserve: the overshoot past df's
#      Avail is printed; the file reads back as written (zeros), its size is the
#      same after the kernel drops it (drop_caches) and after a remount,
#      and writeback lost nothing (wb_lost_writes=0);
#   2. a writer that keeps trying after ENOSPC (200 more 1 MiB writes)
#      grows neither the file, the daemon's memory, nor the page cache;
#   3. cp of a file larger than the free space fails with ENOSPC and
#      leaves a prefix of the source, the same size before and after
#      drop_caches and a remount;
#   4. space comes back on delete, and three fill/delete cycles end alike
#      (the same free space after each delete, fills within the reserve
#      of each other);
#   5. without the writeback cache dd stops at the volume's end;
#   6. statfs beside writers and GC (2 GiB written over a 1 GiB volume)
#      answers at once: the maximum latency is printed; a statfs that
#      waits for the filesystem lock takes as long as a writer holds it
#      (hundreds of ms under GC), so more than 1% of calls over 100 ms, or
#      any over 5 s, fails;
#   7. 50 unmounts (umount(8), no retry) each right after a df succeed.
#   Both checkers find the image sound at the end of each part.
#
# Prints "check-enospc: NAME ok|FAIL ..." per check, then
# "check-enospc: ok" (exit 0) or "check-enospc: FAIL (N failed)" (exit 1).  Exit 77
# (skipped) without root, /dev/fuse or a needed tool.  About 2 minutes.
NAME=check-enospc
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_fuse
need_tools fusermount3 fsck.f2fs python3 cmp df
need_built "$ZDEV" "$MKFS" "$ZLFS" "$UMOUNT" "$FSCK"

tmpdir
IMG=$T/img
M=$T/mnt
mkdir -p "$M"
on_exit() { [ -n "${LOADPID:-}" ] && kill "$LOADPID" 2>/dev/null; }

fresh() {  # MiB
	VOL_MB=$1
	rm -f "$IMG" "$IMG.zst"
	"$ZDEV" create "$IMG" --size "$1M" --zone-size 16M --conv-zones 4 >/dev/null &&
		"$MKFS" "$IMG" >/dev/null || die mkfs
}
mnt() { "$ZLFS" "$IMG" "$M" "$@" || die mount; }
umnt() { "$UMOUNT" "$M" || die zlfs-umount; }
fscks() {  # NAME: both checkers on the unmounted image
	local out
	out=$("$FSCK" -f -n "$IMG" 2>&1) || { fail "$1" "fsck.zlfs: $(echo "$out" | tail -2 | tr '\n' ' ')"; return; }
	out=$(fsck.f2fs --dry-run "$IMG" 2>&1) || { fail "$1" "fsck.f2fs: $(echo "$out" | tail -2 | tr '\n' ' ')"; return; }
	pass "$1"
}
status() { sed -n "s/^$1=//p" "$M/.zlfs/status"; }
free_bytes() { python3 -c 'import os,sys; s=os.statvfs(sys.argv[1]); print(s.f_bavail*s.f_frsize)' "$M"; }
size_of() { stat -c %s "$1"; }
drop() { sync; echo 2 >/proc/sys/vm/drop_caches; }
daemon_pid() { pgrep -f -x "$ZLFS $IMG $M.*" | head -1; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# dd until it stops, or until it has written 4 times the volume (what a
# volume without the gate accepts without end); exit status and message in
# DD_RC / DD_ERR
fill() {  # FILE
	DD_ERR=$(dd if=/dev/zero of="$1" bs=1M count=$((4 * VOL_MB)) 2>&1 >/dev/null)
	DD_RC=$?
}

# ---- 1, 2: dd to a full volume, then a writer that keeps trying -------------------------------
fresh 512
mnt
free0=$(free_bytes)
res=$(( $(status wb_reserve_blocks) * 4096 ))
t0=$(date +%s)
fill "$M/fill"
t1=$(date +%s)
sz=$(size_of "$M/fill")
if [ "$DD_RC" = 0 ] || ! grep -q "No space left on device" <<<"$DD_ERR"; then
	fail dd-enospc "dd exit $DD_RC: $(tail -1 <<<"$DD_ERR")"
elif [ "$sz" -gt $((free0 + res)) ] || [ "$sz" -lt $((free0 - (4 << 20))) ]; then
	fail dd-enospc "$sz bytes accepted with $free0 available and a reserve of $res"
else
	pass dd-enospc "$((sz >> 20)) MiB accepted with $((free0 >> 20)) MiB available, in $((t1 - t0)) s: overshoot $(( (sz - free0) >> 10 )) KiB, reserve $((res >> 20)) MiB"
fi
drop
if [ "$(size_of "$M/fill")" != "$sz" ]; then
	fail dd-size "size $sz before drop_caches, $(size_of "$M/fill") after"
elif ! cmp -s -n "$sz" "$M/fill" /dev/zero; then
	fail dd-size "the file does not read back as written"
elif [ "$(status wb_lost_writes)" != 0 ]; then
	fail dd-size "wb_lost_writes=$(status wb_lost_writes)"
else
	pass dd-size
fi

pid=$(daemon_pid)
rss0=$(rss_kb "$pid")
cache0=$(awk '/^Cached:/ {print $2}' /proc/meminfo)
refused=$(python3 - "$M/fill" <<'EOF'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
buf = b"y" * (1 << 20)
refused = 0
for _ in range(200):
    try:
        os.write(fd, buf)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        refused += 1
os.close(fd)
print(refused)
EOF
)
rss1=$(rss_kb "$pid")
cache1=$(awk '/^Cached:/ {print $2}' /proc/meminfo)
sz2=$(size_of "$M/fill")
# the file may take what the reserve had left (a write accepted is stored); never 200 MiB
if [ "$sz2" -gt $((sz + res)) ]; then
	fail keeps-trying "the file grew from $sz to $sz2"
elif [ $((rss1 - rss0)) -gt 65536 ]; then
	fail keeps-trying "the daemon grew from $rss0 to $rss1 KiB"
elif [ $((cache1 - cache0)) -gt 131072 ]; then
	fail keeps-trying "the page cache grew from $cache0 to $cache1 KiB"
else
	pass keeps-trying "$refused of 200 writes refused, file +$(( (sz2 - sz) >> 10 )) KiB, daemon RSS $rss0 -> $rss1 KiB"
fi
umnt
mnt
[ "$(size_of "$M/fill")" = "$sz2" ] || fail dd-remount "size $sz2 before the remount, $(size_of "$M/fill") after"

# ---- 3: cp of a file larger than the free space ----------------------------------------------
rm -f "$M/fill"
head -c $((600 << 20)) /dev/urandom >"$T/src"
if cp "$T/src" "$M/copy" 2>"$T/cp.err"; then
	fail cp "cp of 600 MiB into $(( $(free_bytes) >> 20 )) MiB succeeded"
else
	c1=$(size_of "$M/copy")
	drop
	c2=$(size_of "$M/copy")
	if ! grep -q "No space left on device" "$T/cp.err"; then
		fail cp "cp said: $(cat "$T/cp.err")"
	elif [ "$c1" != "$c2" ]; then
		fail cp "size $c1 before drop_caches, $c2 after"
	elif ! cmp -s -n "$c1" "$T/src" "$M/copy"; then
		fail cp "the copy is not a prefix of the source"
	else
		umnt
		mnt
		if [ "$(size_of "$M/copy")" != "$c1" ] || ! cmp -s -n "$c1" "$T/src" "$M/copy"; then
			fail cp "after the remount: size $(size_of "$M/copy"), or not the prefix"
		else
			pass cp "$((c1 >> 20)) MiB prefix kept"
		fi
	fi
fi
rm -f "$T/src"

# ---- 4: space comes back; three cycles alike -------------------------------------------------
rm -f "$M/copy"
sync
sizes=() frees=()
for i in 1 2 3; do
	fill "$M/fill"
	[ "$DD_RC" != 0 ] || fail cycles "dd $i ended without an error"
	sizes+=("$(size_of "$M/fill")")
	rm -f "$M/fill"
	sync
	frees+=("$(free_bytes)")
done
lo=${sizes[0]} hi=${sizes[0]}
for s in "${sizes[@]}"; do
	[ "$s" -lt "$lo" ] && lo=$s
	[ "$s" -gt "$hi" ] && hi=$s
done
if [ "${frees[0]}" != "${frees[1]}" ] || [ "${frees[1]}" != "${frees[2]}" ]; then
	fail cycles "free after each delete: ${frees[*]}"
elif [ "${frees[0]}" -lt $((free0 - (1 << 20))) ]; then
	fail cycles "free after delete ${frees[0]}, at first $free0"
elif [ $((hi - lo)) -gt "$res" ]; then
	fail cycles "fills of ${sizes[*]} bytes"
else
	pass cycles "fills of $(( lo >> 20 ))..$(( hi >> 20 )) MiB, $(( frees[0] >> 20 )) MiB free after each delete"
fi
umnt
fscks fsck-wb

# ---- 5: without the writeback cache ----------------------------------------------------------
mnt -o no_writeback_cache
free0=$(free_bytes)
fill "$M/fill"
sz=$(size_of "$M/fill")
if [ "$DD_RC" = 0 ] || ! grep -q "No space left on device" <<<"$DD_ERR"; then
	fail direct "dd exit $DD_RC: $(tail -1 <<<"$DD_ERR")"
elif [ "$sz" -gt "$free0" ] || [ "$sz" -lt $((free0 - (8 << 20))) ]; then
	fail direct "$sz bytes accepted with $free0 free"
elif [ "$(status wb_reserve_blocks)" != 0 ]; then
	fail direct "a reserve of $(status wb_reserve_blocks) blocks without the writeback cache"
else
	pass direct "$((sz >> 20)) MiB of $((free0 >> 20)) MiB"
fi
umnt
fscks fsck-direct

# ---- 6: statfs beside writers and GC ---------------------------------------------------------
fresh 1024
mnt
# 2 GiB in all: a 384 MiB file, then 1 MiB pieces of it rewritten at random
# places, which leaves sections partly valid: GC runs
python3 - "$M/load" <<'EOF' &
import os, random, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
buf = os.urandom(1 << 20)
for i in range(384):
    os.pwrite(fd, buf, i << 20)
rnd = random.Random(1)
for i in range(2048 - 384):
    os.pwrite(fd, buf, rnd.randrange(384) << 20)
os.fsync(fd)
os.close(fd)
EOF
LOADPID=$!
lat=$(python3 - "$M" "$LOADPID" <<'EOF'
import os, sys, time
mnt, pid = sys.argv[1], int(sys.argv[2])
lat = []
while True:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    t = time.monotonic()
    os.statvfs(mnt)
    lat.append(time.monotonic() - t)
    time.sleep(0.01)
lat.sort()
n = len(lat)
over = sum(1 for x in lat if x > 0.1)
print(n, over, "%.1f" % (1000 * lat[-1]) if n else "0", "%.1f" % (1000 * lat[n // 2]) if n else "0")
EOF
)
wait "$LOADPID"
lrc=$?
LOADPID=
read -r n over max med <<<"$lat"
gcruns=$(( $(status fg_gc_runs) + $(status bg_gc_runs) ))
if [ "$lrc" != 0 ]; then
	fail statfs "the writer failed"
elif [ "$n" -lt 20 ]; then
	fail statfs "only $n statfs calls"
elif [ $((over * 100)) -gt "$n" ] || python3 -c "import sys; sys.exit(not $max > 5000)"; then
	fail statfs "$over of $n calls over 100 ms, the longest $max ms"
else
	pass statfs "$n calls beside 2 GiB of writes and $gcruns GC runs: median $med ms, max $max ms, $over over 100 ms"
fi

# ---- 7: an unmount right after a df ----------------------------------------------------------
bad=0
for i in $(seq 50); do
	dd if=/dev/zero of="$M/f$i" bs=1M count=4 2>/dev/null
	df "$M" >/dev/null
	if ! umount "$M" 2>"$T/umount.err"; then
		bad=$((bad + 1))
		echo "  umount $i: $(cat "$T/umount.err")"
		"$UMOUNT" "$M" 2>/dev/null
	fi
	mnt
done
if [ "$bad" = 0 ]; then pass umount-after-df "50 of 50"; else fail umount-after-df "$bad of 50 failed"; fi
umnt
fscks fsck-statfs

verdict
