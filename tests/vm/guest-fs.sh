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
# Then on each, a volume 80% (ZNS: 60%) full rewritten several times over,
# so GC cleans throughout, every byte checked, fsck.f2fs on the device.
# On null_blk also a volume made by mkfs.f2fs -m (main area starting in
# conventional zones): the kernel's f2fs writes, zlfs reads and writes, the
# kernel reads again, the kernel log stays clean.
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

# gc_load NAME DEV PCT PASSES MKFS-ARGS...: a fresh volume PCT% full of files
# rewritten whole PASSES times (GC must clean all along), every byte checked,
# fsck.f2fs on the device, remount, checked again
gc_load() {
	local name=$1 dev=$2 pct=$3 passes=$4 t="$1, GC under overwrites"
	shift 4
	"$build/mkfs/mkfs.zlfs" -f "$@" > /dev/null || { fail "mkfs.zlfs ($t)"; return; }
	"$build/fs/zlfs" "$dev" "$mnt" || { fail "mount ($t)"; return; }
	local kb blocks out
	kb=$(df -k --output=size "$mnt" | tail -1)
	blocks=$((kb * pct / 100 / 4 / 8))
	if out=$("$build/tests/gcload" rewrite /tmp/gc.state "$mnt" 8 $blocks "$passes" 2>&1); then
		ok "$pct% full, ${passes}x rewritten, data verified ($t: $(grep -E '^(gc_write_amp|zones_reset)' "$mnt/.zlfs/status" | tr '\n' ' '))"
	else
		fail "$pct% full, ${passes}x rewritten ($t)" "$(echo "$out" | tail -2 | tr '\n' ' ')"
	fi
	# and random 4 KiB overwrites of one more such file (the volume is then
	# 90% full): GC must copy live data out of every victim
	if [ -n "${random:-}" ]; then
		if out=$("$build/tests/gcload" random /tmp/gcr.state "$mnt/rnd" $blocks 3 4 2>&1); then
			ok "random 4 KiB overwrites, data verified ($t: $(grep -E '^(gc_data_blocks_moved|gc_write_amp)' "$mnt/.zlfs/status" | tr '\n' ' '))"
		else
			fail "random 4 KiB overwrites ($t)" "$(echo "$out" | tail -2 | tr '\n' ' ')"
		fi
	fi
	fusermount3 -u "$mnt"
	sleep 0.5
	fsck_dev "$t" "$dev"
	if "$build/fs/zlfs" "$dev" "$mnt"; then
		check "data intact after remount ($t)" "$build/tests/gcload" verify /tmp/gc.state "$mnt" "$mnt"
		[ -z "${random:-}" ] ||
			check "random overwrites intact after remount ($t)" "$build/tests/gcload" verify /tmp/gcr.state "$mnt" "$mnt"
		fusermount3 -u "$mnt"
		sleep 0.5
	else
		fail "remount ($t)"
	fi
}

# kernel_f2fs_m DEV: mkfs.f2fs -m puts the main area right after the metadata,
# in conventional zones; the kernel's f2fs writes a tree there, zlfs reads it
# back identical and writes, and the kernel mounts the result again cleanly.
kernel_f2fs_m() {
	local dev=$1 t="mkfs.f2fs -m volume" src=/tmp/ktree
	modprobe f2fs 2>/dev/null
	grep -qw f2fs /proc/filesystems || { fail "kernel f2fs module ($t)"; return; }
	mkfs.f2fs -q -f -m "$dev" > /tmp/mkfs-m.log 2>&1 || { fail "mkfs.f2fs -m ($t)" "$(tail -2 /tmp/mkfs-m.log)"; return; }
	rm -rf "$src" && mkdir -p "$src"
	cp -a /usr/share/doc/bash /usr/share/doc/util-linux /usr/lib/os-release "$src" 2>/dev/null
	# small: mkfs.f2fs leaves users about 0.1 GiB of a 2 GiB device with 64 MiB zones
	head -c 8M /dev/urandom > "$src/big" && mkdir -p "$src/d" && for i in $(seq 200); do echo "$i" > "$src/d/f$i"; done
	dmesg -C
	mount -t f2fs "$dev" "$mnt" || { fail "kernel mount ($t)"; return; }
	cp -a "$src" "$mnt/tree" && umount "$mnt" || { fail "kernel writes a tree ($t)"; umount "$mnt" 2>/dev/null; return; }
	ok "kernel f2fs writes a tree ($t)"
	"$build/fs/zlfs" "$dev" "$mnt" || { fail "zlfs mounts it ($t)"; return; }
	ok "zlfs mounts it ($t, main area from zone $(awk '!/^#/ && $5 != "-" {print $1; exit}' "$mnt/.zlfs/zones"), $(grep -c ' conv ' "$mnt/.zlfs/zones") conventional zones)"
	check "zlfs reads the kernel's tree back identical ($t)" diff -r "$src" "$mnt/tree"
	check "zlfs writes there ($t)" bash -c "cp -a '$src' '$mnt/tree2' && rm -rf '$mnt/tree/d' &&
		head -c 4M /dev/urandom > '$mnt/zbig' && sync -f '$mnt' && diff -r '$src' '$mnt/tree2' &&
		cd '$mnt' && sha1sum zbig > /tmp/zsum"
	fusermount3 -u "$mnt"
	sleep 0.5
	fsck_dev "$t, after zlfs" "$dev"
	if mount -t f2fs "$dev" "$mnt"; then
		check "kernel reads what zlfs wrote ($t)" bash -c "diff -r '$src' '$mnt/tree2' && [ ! -e '$mnt/tree/d' ] && cd '$mnt' && sha1sum -c --quiet /tmp/zsum"
		umount "$mnt"
	else
		fail "kernel mounts the result ($t)"
		dmesg | grep -i f2fs | tail -15
	fi
	if dmesg | grep -iE 'f2fs.*(error|inconsistent|fsck|corrupt|wrong|invalid|fail|mismatch)|BUG|Oops'; then
		fail "clean kernel log ($t)"
	else
		ok "clean kernel log ($t)"
	fi
}

mkdir -p "$mnt" "$ref"
if [ "${ZLFS_VM_FS_ONLY:-}" = kernel ]; then   # for a quick look at one part
	kernel_f2fs_m /dev/nullb0
	echo "vm-test: all done"
	exit $failed
fi
echo "/dev/nullb0: $(cat /sys/block/nullb0/queue/nr_zones) zones, $(cat /sys/block/nullb0/queue/zoned)"
volume "zoned null_blk" /dev/nullb0 /dev/nullb0
random=1 gc_load "zoned null_blk" /dev/nullb0 80 4 /dev/nullb0
kernel_f2fs_m /dev/nullb0
if [ -z "$zns" ] || [ -z "$meta" ]; then
	fail "ZNS and conventional NVMe namespaces present" "zns='$zns' meta='$meta'"
else
	echo "$zns: $(cat /sys/block/${zns#/dev/}/queue/nr_zones) zones, metadata on $meta"
	volume "ZNS + metadata namespace" "$meta" -c "$zns" "$meta"
	gc_load "ZNS + metadata namespace" "$meta" 60 2 -c "$zns" "$meta"
fi
echo "vm-test: all done"
exit $failed
