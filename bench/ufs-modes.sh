#!/bin/bash
# bench/ufs-modes.sh [BUILD_DIR] [ROUNDS] - the three write orderings and
# the conventional-zone ceiling, side by side on the same UFS-like device:
#   mem:size=4G,zone_size=256M,conv_zones=4,queues=1,qd=32,lat_us=100,hibernate_ms=2
# one zone, 4 KiB writes, QD 32.  The modes run interleaved, ROUNDS times
# (default 3), and the table shows each mode's median; ratios are of
# medians from this one run.  A second table repeats it with dispatcher
# merging on, which a purely sequential stream benefits from in every mode.
set -eu
B=${1:-build}
R=${2:-3}
BENCH=$B/bench/zlfs-bench
DEV="mem:size=4G,zone_size=256M,conv_zones=4,queues=1,qd=32,lat_us=100,hibernate_ms=2"
[ -x "$BENCH" ] || { echo "no $BENCH: build first (meson setup build && ninja -C build)" >&2; exit 1; }

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run_table() {  # extra-bench-args label
	local extra=$1 label=$2
	declare -A iops p50 p99 una ret fai ver
	local names=(zwl nolock zwp conv)
	for ((r = 1; r <= R; r++)); do
		for n in "${names[@]}"; do
			case $n in
			conv) args=(--mode nolock --conv --ios 60000) ;;
			nolock) args=(--mode nolock --ios 60000) ;;
			*) args=(--mode $n --ios 8000) ;;
			esac
			line=$($BENCH --device "$DEV" --zones 1 --bs 4K --qd 32 $extra "${args[@]}" | tail -1)
			iops[$n]+=" $(field "$line" iops)"
			p50[$n]+=" $(field "$line" lat_p50_us)"
			p99[$n]+=" $(field "$line" lat_p99_us)"
			una[$n]=$(( ${una[$n]:-0} + $(field "$line" unaligned) ))
			ret[$n]=$(( ${ret[$n]:-0} + $(field "$line" retries) ))
			fai[$n]=$(( ${fai[$n]:-0} + $(field "$line" failed) ))
			[ "$(field "$line" verify)" = ok ] || ver[$n]=FAIL
		done
	done
	echo "== $label: $DEV, 1 zone, 4 KiB, QD 32, median of $R rounds"
	printf "%-8s %10s %10s %10s %10s %8s %7s %7s   %s\n" mode iops p50_us p99_us unaligned retries failed verify "iops per round"
	for n in "${names[@]}"; do
		printf "%-8s %10s %10s %10s %10s %8s %7s %7s  %s\n" "$n" "$(echo "${iops[$n]}" | median)" \
			"$(echo "${p50[$n]}" | median)" "$(echo "${p99[$n]}" | median)" "${una[$n]}" \
			"${ret[$n]}" "${fai[$n]}" "${ver[$n]:-ok}" "${iops[$n]}"
	done
	local z=$(echo "${iops[zwl]}" | median) n=$(echo "${iops[nolock]}" | median)
	local p=$(echo "${iops[zwp]}" | median) c=$(echo "${iops[conv]}" | median)
	awk -v z="$z" -v n="$n" -v p="$p" -v c="$c" 'BEGIN {
		printf "nolock/zwl = %.2fx   nolock/zwp = %.2fx   nolock/conv = %.0f%%\n", n / z, n / p, 100 * n / c }'
	echo
}

echo "zlfs-bench, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
run_table "" "merges off (per-command IOPS, as sysfs nomerges=2)"
run_table "--merges" "merges on (adjacent queued writes merged up to 512 KiB)"
