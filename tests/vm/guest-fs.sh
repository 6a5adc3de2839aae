#!/bin/bash
# Guest side of the filesystem VM test (run by scripts/test through
#   tests/vm/run-vm.sh tests/vm/guest-fs.sh BUILD_DIR).
# On zoned null_blk (conventional zones first: mkfs.zlfs needs them for the
# metadata; the ZNS namespace has none, so it is not formatted here):
# mkfs.zlfs, mount, the model-based fsops run against a tmpfs reference,
# unmount, fsck.f2fs on the zoned block device itself (it checks the write
# pointers there), remount and compare the trees again.
# One "vm-test: NAME ok|FAIL" line per check; last line "vm-test: all done".
set -u
build=${1:-${ZLFS_BUILD:-}}
dev=/dev/nullb0
mnt=/tmp/zlfs-mnt
ref=/tmp/zlfs-ref
failed=0
ok() { echo "vm-test: $1 ok"; }
fail() { echo "vm-test: $1 FAIL${2:+ ($2)}"; failed=1; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else fail "$n"; fi; }

echo "$dev: $(cat /sys/block/nullb0/queue/nr_zones) zones, $(cat /sys/block/nullb0/queue/zoned)"
mkdir -p "$mnt" "$ref"
check "mkfs.zlfs on zoned null_blk" "$build/mkfs/mkfs.zlfs" -f "$dev"
for mode in nolock zwl; do
	rm -rf "${ref:?}"/*
	"$build/mkfs/mkfs.zlfs" -f "$dev" > /dev/null
	if ! "$build/fs/zlfs" "$dev" "$mnt" -o mode=$mode; then
		fail "mount ($mode)"
		continue
	fi
	ok "mount ($mode)"
	# the guest tmpfs (Linux 6.1) has no user.* xattrs: leave them out of the model
	check "fsops 2000 operations ($mode)" "$build/tests/fsops" --no setxattr,getxattr,listxattr,removexattr "$mnt" "$ref" 7 2000
	fusermount3 -u "$mnt"
	sleep 0.5
	out=$(fsck.f2fs --dry-run "$dev" 2>&1)
	if echo "$out" | grep -qE '\[Fail\]|\[FAIL\]|\[ASSERT\]'; then
		echo "$out" | grep -E '\[Fail\]|\[FAIL\]|\[ASSERT\]' | head
		fail "fsck.f2fs on the zoned device ($mode)"
	else
		ok "fsck.f2fs on the zoned device ($mode)"
	fi
	if "$build/fs/zlfs" "$dev" "$mnt" -o mode=$mode; then
		check "persistent across remount ($mode)" "$build/tests/fsops" --compare "$mnt" "$ref"
		fusermount3 -u "$mnt"
	else
		fail "remount ($mode)"
	fi
done
echo "vm-test: all done"
exit $failed
