#!/bin/bash
# bench/vm-modes.sh [BUILD_DIR] - the three orderings on the VM's real kernel
# zoned devices (tests/vm/guest-blk.sh), as a table: device, kernel
# scheduler, mode, IOPS, unaligned errors, retries, failed, verify.
set -eu
B=$(realpath "${1:-build}")
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(bash "$here/tests/vm/run-vm.sh" "$here/tests/vm/guest-blk.sh" "$B" 2>&1) || {
	echo "$out" | tail -40; exit 1; }
echo "$out" | grep -E '^kernel'
printf "%-9s %-12s %-7s %8s %10s %8s %7s %7s\n" device scheduler mode iops unaligned retries failed verify
echo "$out" | grep -E '^== .*sched=|^iops=' | paste - - |
	sed -E 's/^== ([^ ]+) sched=([^ ]+) mode=([^\t]+)\tiops=([0-9]+) .*unaligned=([0-9]+) retries=([0-9]+) failed=([0-9]+) verify=([a-zA-Z]+)/\1 \2 \3 \4 \5 \6 \7 \8/' |
	while read -r d s m i u r f v; do
		printf "%-9s %-12s %-7s %8s %10s %8s %7s %7s\n" "$d" "$s" "$m" "$i" "$u" "$r" "$f" "$v"
	done
