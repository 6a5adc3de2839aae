#!/bin/bash
# Guest side of the block-layer VM tests (run by scripts/test through
#   tests/vm/run-vm.sh tests/vm/guest-blk.sh BUILD_DIR).
# On the ZNS namespace and on zoned null_blk:
#   - the libzbd backend's unit tests (tests/unit/test_zbd.c);
#   - zlfs-bench in zwl, nolock and zwp with the kernel scheduler set to
#     mq-deadline (the kernel then serialises each zone itself), and again
#     with `none`, where Debian's 6.1 kernel may reorder several writes per
#     zone in flight: there nolock's unaligned errors and retries are the
#     recovery queue at work.  verify=ok and failed=0 are required.
# One "vm-test: NAME ok|FAIL" line per check; the last line is
# "vm-test: all done".
set -u
build=${1:-${ZLFS_BUILD:-}}
[ -d "$build" ] || { echo "vm-test: build dir FAIL (no $build)"; exit 1; }
bench=$build/bench/zlfs-bench
failed=0
ok() { echo "vm-test: $1 ok"; }
fail() { echo "vm-test: $1 FAIL${2:+ ($2)}"; failed=1; }

echo "kernel $(uname -r), $(nproc) cpus"
for name in nvme0n1 nullb0; do
	dev=/dev/$name
	if [ ! -b "$dev" ] || [ "$(cat /sys/block/$name/queue/zoned)" != host-managed ]; then
		fail "$name present and zoned"
		continue
	fi
	echo "== $name: $(cat /sys/block/$name/queue/nr_zones) zones, lbs $(cat /sys/block/$name/queue/logical_block_size)"
	echo mq-deadline > /sys/block/$name/queue/scheduler
	if ZLFS_TEST_DEV=$dev CK_DEFAULT_TIMEOUT=300 "$build/tests/test_zbd" > /tmp/zbd.log 2>&1; then
		ok "$name libzbd backend unit tests"
	else
		cat /tmp/zbd.log
		fail "$name libzbd backend unit tests"
	fi
	grep '^zoned:' /tmp/zbd.log
	for sched in mq-deadline none; do
		echo "$sched" > /sys/block/$name/queue/scheduler
		for mode in zwl nolock zwp; do
			out=$("$bench" --device "$dev?qd=32" --mode $mode --zones 1 --bs 4K --qd 32 --ios 4000 2>&1)
			last=$(echo "$out" | tail -1)
			echo "== $name sched=$sched mode=$mode"
			echo "$out" | grep -E '^(elapsed|device:|first)' | sed 's/^/   /'
			echo "$last"
			case "$last" in
			iops=*" failed=0 verify=ok") ok "$name $sched $mode bench verify" ;;
			*) fail "$name $sched $mode bench verify" ;;
			esac
		done
	done
done
echo "vm-test: all done"
exit $failed
