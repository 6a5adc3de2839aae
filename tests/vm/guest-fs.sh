#!/bin/bash
# Guest side of the filesystem VM test (run by scripts/test through
#   tests/vm/run-vm.sh tests/vm/guest-fs.sh BUILD_DIR).
# Two volumes on real kernel zoned devices:
#   - zoned null_blk (conventional zones first: the metadata lives there);
#   - the ZNS namespace, which has no conventional zones, with the
#     conventional namespace beside it as the metadata device
#     (mkfs.zlfs -c ZNS META: an F2FS multi-device volume).
# On each, in nolock and in zwl: mkfs.zlfs, mount, the model-based fsops
# run against a tmpfs reference, 320 MiB of large files, unmount, fsck.f2fs
# on the block devices themselves (it checks the write pointers there),
# remount, the large files' checksums, then the trees compared again.
# One "vm-test: NAME ok|FAIL" line per check; last line "vm-test: all done".
set -u
build=${1:-${ZLFS_BUILD:-}}
mnt=/tmp/zlfs-mnt
ref=/tmp/zlfs-ref
failed=0
ok() { echo "vm-test: $1 ok"; }
fail() { echo "vm-test: $1 FAIL${2:+ ($2)}"; failed=1; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else fail "$n"; fi; }

# the NVMe namespaces by what they are, not by their names
zns='' meta=''
for b in /sys/block/nvme0n*; do
	[ -e "$b" ] || continue
	if [ "$(cat "$b/queue/zoned")" = host-managed ]; then zns=/dev/${b##*/}; else meta=/dev/${b##*/}; fi
done

fsck_dev() {  # NAME DEV
	local out
	out=$(fsck.f2fs --dry-run "$2" 2>&1)
	if [ $? -ne 0 ] || echo "$out" | grep -qE '\[Fail\]|\[FAIL\]|\[ASSERT\]'; then
		echo "$out" | grep -E '\[Fail\]|\[FAIL\]|\[ASSERT\]|rror' | head
		fail "fsck.f2fs on the zoned device ($1)"
	else
		ok "fsck.f2fs on the zoned device ($1)"
	fi
}

# big_files MNT: N files of 64 MiB of random data; their checksums in /tmp/sums
big_files() {
	local i
	for i in 1 2 3 4 5; do
		head -c 64M /dev/urandom > "$1/big$i" || return 1
	done
	(cd "$1" && sha1sum big*) > /tmp/sums
}

# volume NAME MOUNT-DEV MKFS-ARGS...
volume() {
	local name=$1 dev=$2 mode
	shift 2
	check "mkfs.zlfs ($name)" "$build/mkfs/mkfs.zlfs" -f "$@"
	fsck_dev "$name, fresh from mkfs" "$dev"
	for mode in nolock zwl; do
		local t="$name, $mode"
		rm -rf "${ref:?}"/*
		"$build/mkfs/mkfs.zlfs" -f "$@" > /dev/null
		if ! "$build/fs/zlfs" "$dev" "$mnt" -o mode=$mode; then
			fail "mount ($t)"
			continue
		fi
		ok "mount ($t)"
		# the guest tmpfs (Linux 6.1) has no user.* xattrs: leave them out of the model
		check "fsops 2000 operations ($t)" "$build/tests/fsops" \
			--no setxattr,getxattr,listxattr,removexattr "$mnt" "$ref" 7 2000
		check "320 MiB in large files ($t)" big_files "$mnt"
		fusermount3 -u "$mnt"
		sleep 0.5
		echo "kernel write errors so far (unaligned writes the recovery queue resubmits in nolock):" \
			"$(dmesg | grep -c 'I/O Error')"
		fsck_dev "$t" "$dev"
		if "$build/fs/zlfs" "$dev" "$mnt" -o mode=$mode; then
			# the large files are outside the model: check, remove, and give
			# the root back the reference's mtime before comparing the trees
			check "large files intact after remount ($t)" \
				bash -c "cd '$mnt' && sha1sum -c --quiet /tmp/sums && rm big* &&
					touch -m -r '$ref' '$mnt'"
			check "persistent across remount ($t)" "$build/tests/fsops" --compare "$mnt" "$ref"
			fusermount3 -u "$mnt"
			sleep 0.5
		else
			fail "remount ($t)"
		fi
	done
}

mkdir -p "$mnt" "$ref"
echo "/dev/nullb0: $(cat /sys/block/nullb0/queue/nr_zones) zones, $(cat /sys/block/nullb0/queue/zoned)"
volume "zoned null_blk" /dev/nullb0 /dev/nullb0
if [ -z "$zns" ] || [ -z "$meta" ]; then
	fail "ZNS and conventional NVMe namespaces present" "zns='$zns' meta='$meta'"
else
	echo "$zns: $(cat /sys/block/${zns#/dev/}/queue/nr_zones) zones, metadata on $meta"
	volume "ZNS + metadata namespace" "$meta" -c "$zns" "$meta"
fi
echo "vm-test: all done"
exit $failed
