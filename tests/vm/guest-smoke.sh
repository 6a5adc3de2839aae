#!/bin/bash
# Guest-side smoke test of the VM harness: run it with
#   tests/vm/run-vm.sh tests/vm/guest-smoke.sh
# It checks that both zoned devices exist and are host-managed, that the
# I/O scheduler can be switched both ways (tests choose it per device), that
# a direct write lands at a zone's write pointer, and that FUSE and the
# repository are reachable. One "vm-test: NAME ok|FAIL" line per check;
# exits 1 if any check failed.
# shellcheck disable=SC2317 # the test functions are called through check()
set -eu

failed=0
ok() { echo "vm-test: $1 ok"; }
fail() { echo "vm-test: $1 FAIL${2:+ ($2)}"; failed=1; }
check() { # check NAME COMMAND...: ok if COMMAND succeeds
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}

echo "kernel $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime)s, $(nproc) cpus"

has() { command -v "$1" > /dev/null; }

# set_sched DEV NAME: select the scheduler and confirm the kernel took it.
set_sched() {
	echo "$2" > "/sys/block/$1/queue/scheduler" &&
		grep -q "\[$2\]" "/sys/block/$1/queue/scheduler"
}

# zone_write DEV: reset zone 0, write one 4 KiB block with O_DIRECT, expect
# the write pointer 8 sectors further, reset again.
zone_write() {
	local dev=$1 wp
	blkzone reset -o 0 -c 1 "$dev" || return 1
	dd if=/dev/urandom of="$dev" bs=4096 count=1 oflag=direct status=none || return 1
	wp=$(blkzone report -o 0 -c 1 "$dev" | sed -n 's/.*wptr 0x\([0-9a-f]*\).*/\1/p')
	echo "  zone 0 write pointer after one 4 KiB write: 0x$wp"
	blkzone reset -o 0 -c 1 "$dev" || return 1
	[ "$((16#${wp:-0}))" = 8 ]
}

for name in nvme0n1 nullb0; do
	dev=/dev/$name q=/sys/block/$name/queue
	if [ ! -b "$dev" ]; then
		fail "$name present" "no $dev"
		continue
	fi
	ok "$name present"
	model=$(cat "$q/zoned")
	echo "$name: zoned=$model nr_zones=$(cat "$q/nr_zones") zone_sectors=$(cat "$q/chunk_sectors")" \
		"lbs=$(cat "$q/logical_block_size") max_open=$(cat "$q/max_open_zones")" \
		"max_active=$(cat "$q/max_active_zones") scheduler: $(cat "$q/scheduler")"
	if [ "$model" != host-managed ]; then
		fail "$name host-managed" "zoned=$model"
		continue
	fi
	ok "$name host-managed"
	echo "--- blkzone report -c 2 $dev"
	blkzone report -c 2 "$dev" || fail "$name blkzone"
	echo "--- zbd report -i $dev (first lines)"
	# Read the whole report (no head): an early-closed pipe would fail zbd.
	zbd report -i "$dev" | sed -n '1,12p' || fail "$name zbd"
	check "$name scheduler mq-deadline" set_sched "$name" mq-deadline
	check "$name zone write (mq-deadline)" zone_write "$dev"
	check "$name scheduler none" set_sched "$name" none
	check "$name zone write (none)" zone_write "$dev"
done

check "fuse device" test -c /dev/fuse
check "fusermount3 available" has fusermount3
check "repository visible at $ZLFS_REPO" test -f "$ZLFS_REPO/tests/vm/run-vm.sh"
if [ -d "$ZLFS_BUILD" ]; then
	ok "build directory visible at $ZLFS_BUILD"
else
	echo "vm-test: build directory $ZLFS_BUILD absent (not built on the host?)"
fi
check "work directory writable" touch "$ZLFS_VM_WORKDIR/.smoke"
[ $# -eq 0 ] || echo "arguments: $(printf '[%s] ' "$@")"

echo "done at uptime $(cut -d' ' -f1 /proc/uptime)s"
exit $failed
