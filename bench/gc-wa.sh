#!/bin/bash
# bench/gc-wa.sh BUILD_DIR [PASSES] - what garbage collection costs.
#
# 1. Write amplification of 4 KiB O_DIRECT random overwrites (fio) at 70, 80
#    and 90% of the user's capacity (after a warm-up pass), uniform and hot/cold (80% of the writes
#    to 20% of the data), with greedy and with cost-benefit victims
#    (background GC off, so every victim is chosen by the policy under test).
#    WA = (user blocks + GC's copies) / user blocks over the overwrite phase,
#    from /.zlfs/status; the greedy model (bench/wa-model.py) at the
#    physical utilisation (live blocks / blocks of the sections that are not
#    kept free) is printed beside the uniform runs.
# 2. Throughput over time during a long uniform overwrite run at 80%
#    (fio's IOPS log, one point a second), drawn as gc-throughput.png, with
#    the fresh-filesystem rate (a tenth of the file overwritten before GC is
#    needed) and the rate it implies once GC copies (fresh / WA).
# 3. p99 latency of 4 KiB random reads (QD 1) with GC off, and while GC
#    cleans continuously (gc=urgent on a volume full of dead blocks),
#    interleaved rounds.
# The device: an emulated zoned image in /dev/shm (2 GiB, 16 MiB zones,
# the UFS-like service model: 1 queue, QD 32, 100 us, 1200 MiB/s).
# PASSES (default 2): overwrites per run, in multiples of the file's size.
# GC_WA_PARTS picks parts (default "wa long lat"); GC_WA_OUT where the plot goes.
set -u
B=$(readlink -f "${1:?usage: bench/gc-wa.sh BUILD_DIR [PASSES]}")
PASSES=${2:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
ZDEV=$B/fs/zlfs-zdev MKFS=$B/mkfs/mkfs.zlfs ZLFS=$B/fs/zlfs
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
T=$(mktemp -d /dev/shm/gc-wa.XXXXXX)
OUT=${GC_WA_OUT:-$PWD}
IMG=$T/d.img
M=$T/mnt
MODEL="queues=1,qd=32,lat_us=100,mbps=1200"
mkdir -p "$M"
cleanup() {
	pkill -9 -f -- "--filename=$M/" 2>/dev/null   # a fio still running there
	sleep 0.5
	fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" 2>/dev/null
	sleep 1
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

st() { sed -n "s/^$1=//p" "$M/.zlfs/status"; }
fresh() {  # mount options...
	fusermount3 -u "$M" 2>/dev/null
	for _ in $(seq 50); do pgrep -f "zlfs $IMG" >/dev/null || break; sleep 0.1; done
	rm -f "$IMG" "$IMG.zst"
	"$ZDEV" create "$IMG" --size 2G --zone-size 16M --conv-zones 4 >/dev/null &&
		"$MKFS" "$IMG" >/dev/null && "$ZLFS" "$IMG?$MODEL" "$M" "$@" ||
		{ echo "gc-wa: cannot make the volume"; exit 1; }
}
cap_blocks() { df -k --output=size "$M" | tail -1 | awk '{print int($1 / 4)}'; }

# overwrite PCT PATTERN: lay out PCT% of the capacity, then PASSES x its size of
# random 4 KiB overwrites; prints "WA IOPS u_phys"
overwrite() {
	local pct=$1 pattern=$2 blocks dist=""
	blocks=$(( $(cap_blocks) * pct / 100 ))
	fio --name=lay --filename="$M/f" --size=$((blocks * 4))k --rw=write --bs=1M --direct=1 \
		--ioengine=libaio --iodepth=8 >/dev/null 2>&1 || { echo "fio layout failed"; return 1; }
	[ "$pattern" = hotcold ] && dist="--random_distribution=zoned:80/20:20/80"
	# warm-up: one pass, until the free space of the fresh volume is used up
	# and GC runs at its steady state; measured: the PASSES after it
	# shellcheck disable=SC2086
	fio --name=warm --filename="$M/f" --size=$((blocks * 4))k --rw=randwrite --bs=4k \
		--direct=1 --ioengine=libaio --iodepth=16 --io_size=$((blocks * 4))k \
		--norandommap --randrepeat=0 $dist >/dev/null 2>&1 || { echo "fio warm-up failed"; return 1; }
	local u0 g0 u1 g1
	u0=$(st user_blocks_written) g0=$(st gc_data_blocks_moved)
	# shellcheck disable=SC2086
	local json
	json=$(fio --name=ow --filename="$M/f" --size=$((blocks * 4))k --rw=randwrite --bs=4k \
		--direct=1 --ioengine=libaio --iodepth=16 --io_size=$((blocks * 4 * PASSES))k \
		--norandommap --randrepeat=0 $dist --output-format=json 2>/dev/null) ||
		{ echo "fio overwrite failed"; return 1; }
	u1=$(st user_blocks_written) g1=$(st gc_data_blocks_moved)
	local iops secs sb
	iops=$(echo "$json" | $PY -c 'import json,sys; print(int(json.load(sys.stdin)["jobs"][0]["write"]["iops"]))')
	secs=$(st sections) sb=$(st section_blocks)
	# physical utilisation: live blocks over the sections not kept free (2L + 2 = 14)
	$PY -c "
u=$((u1 - u0)); g=$((g1 - g0))
print('%.3f %s %.3f' % ((u + g) / u if u else 1, $iops, $blocks / (($secs - 14) * $sb)))"
}

PARTS=" ${GC_WA_PARTS:-wa long lat} "
part() { [[ $PARTS == *" $1 "* ]]; }

part wa && echo "== write amplification, 4 KiB O_DIRECT random overwrites, 1 + $PASSES x the data (gc=off)"
part wa && printf '%-5s %-8s %-7s %8s %8s %8s %8s\n' util pattern policy WA IOPS u_phys model
part wa && for pct in 70 80 90; do
	for pattern in uniform hotcold; do
		for pol in greedy cb; do
			fresh -o gc=off,gc_policy=$pol
			read -r wa iops uphys < <(overwrite $pct $pattern)
			model=-
			[ "$pattern" = uniform ] && model=$($PY "$HERE/wa-model.py" --u "$uphys" --blocks "$(st section_blocks)")
			printf '%-5s %-8s %-7s %8s %8s %8s %8s\n' "$pct%" $pattern $pol "$wa" "$iops" "$uphys" "$model"
		done
	done
done

if part long; then
echo
echo "== throughput over time, uniform overwrites at 80% ($((PASSES * 2)) x the data, gc=on)"
fresh
blocks=$(( $(cap_blocks) * 80 / 100 ))
# the fresh rate: a tenth of the file overwritten at random, before any GC
# (the free space covers it); the file itself laid out first
fio --name=lay --filename="$M/f" --size=$((blocks * 4))k --rw=write --bs=1M --direct=1 \
	--ioengine=libaio --iodepth=8 >/dev/null 2>&1
fresh_iops=$(fio --name=fr --filename="$M/f" --size=$((blocks * 4))k --rw=randwrite --bs=4k \
	--direct=1 --ioengine=libaio --iodepth=16 --io_size=$((blocks * 4 / 10))k --norandommap \
	--randrepeat=0 --output-format=json 2>/dev/null |
	$PY -c 'import json,sys; print(int(json.load(sys.stdin)["jobs"][0]["write"]["iops"]))')
u0=$(st user_blocks_written) g0=$(st gc_data_blocks_moved)
( cd "$T" && fio --name=long --filename="$M/f" --size=$((blocks * 4))k --rw=randwrite --bs=4k \
	--direct=1 --ioengine=libaio --iodepth=16 --io_size=$((blocks * 4 * PASSES * 2))k \
	--norandommap --randrepeat=0 --write_iops_log=long --log_avg_msec=1000 >/dev/null 2>&1 )
u1=$(st user_blocks_written) g1=$(st gc_data_blocks_moved)
read -r wa long_iops < <($PY - "$T"/long_iops.1.log "$((u1 - u0))" "$((g1 - g0))" <<'EOF'
import sys
vals = [int(l.split(',')[1]) for l in open(sys.argv[1]) if l.strip()]
u, g = int(sys.argv[2]), int(sys.argv[3])
half = vals[len(vals) // 2:] or vals          # the second half: GC at its steady state
print('%.3f %d' % ((u + g) / u if u else 1, sum(half) / len(half)))
EOF
)
echo "fresh filesystem (no GC yet): $fresh_iops IOPS; long run: WA $wa, second half $long_iops IOPS"
$PY -c "f=$fresh_iops; w=$wa; l=$long_iops; print('sustained / (fresh / WA) = %.2f' % (l / (f / w)))"
$PY - "$T"/long_iops.1.log "$OUT/gc-throughput.png" "$fresh_iops" "$wa" <<'EOF'
import sys
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
rows = [l.split(',') for l in open(sys.argv[1]) if l.strip()]
t = [int(r[0]) / 1000 for r in rows]
v = [int(r[1]) for r in rows]
fresh, wa = float(sys.argv[3]), float(sys.argv[4])
plt.figure(figsize=(9, 4))
plt.plot(t, v, lw=0.8, label='4 KiB random overwrites, IOPS (1 s means)')
plt.axhline(fresh, color='grey', ls='--', lw=0.8, label='fresh filesystem')
plt.axhline(fresh / wa, color='red', ls=':', lw=1, label='fresh / WA (%.2f)' % wa)
plt.xlabel('s'); plt.ylabel('IOPS'); plt.ylim(bottom=0)
plt.title('zlfs, 80% full, uniform random overwrites with GC')
plt.legend(loc='upper right', fontsize=8); plt.tight_layout()
plt.savefig(sys.argv[2], dpi=110)
EOF
echo "plot: $OUT/gc-throughput.png"
fi

part lat || exit 0
echo
echo "== 4 KiB random read latency (QD 1), GC off against GC cleaning (gc=urgent), 3 rounds"
p99() {
	fio --name=rd --filename="$M/f" --size=$((blocks * 4))k --rw=randread --bs=4k --direct=1 \
		--ioengine=psync --runtime=8 --time_based --output-format=json 2>/dev/null |
		$PY -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]["clat_ns"]["percentile"]; print(int(j["99.000000"]) // 1000)'
}
for round in 1 2 3; do
	for gc in off urgent; do
		fresh -o gc=$gc
		blocks=$(( $(cap_blocks) * 70 / 100 ))
		fio --name=lay --filename="$M/f" --size=$((blocks * 4))k --rw=write --bs=1M --direct=1 \
			--ioengine=libaio --iodepth=8 >/dev/null 2>&1
		# dead blocks everywhere: half the file overwritten at random
		fio --name=dirty --filename="$M/f" --size=$((blocks * 4))k --rw=randwrite --bs=4k \
			--direct=1 --ioengine=libaio --iodepth=16 --io_size=$((blocks * 2))k \
			--norandommap --randrepeat=0 >/dev/null 2>&1
		m0=$(st gc_data_blocks_moved)
		p=$(p99)
		m1=$(st gc_data_blocks_moved)
		echo "round $round gc=$gc: read p99 $p us (GC moved $((m1 - m0)) blocks meanwhile)"
	done
done
