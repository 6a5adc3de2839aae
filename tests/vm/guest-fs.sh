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
# Each of these ends with the kernel cross-mount (cross_mount): zlfs's tree
# is recorded (stat fields: mode, owner, links, size, inode, st_blocks,
# mtime, ctime, and the atimes left after reading every file; md5 of
# every file), zlfs unmounted, the
# kernel's f2fs mounts the volume read-write and must show the same tree,
# then creates, appends to, removes and renames files; fsck.f2fs; zlfs
# mounts what the kernel left and must show exactly the kernel's tree; the
# kernel log must stay clean.
# On null_blk also a volume made by mkfs.f2fs -m (main area starting in
# conventional zones): the kernel's f2fs writes, zlfs reads and writes, the
# kernel reads again, the kernel log stays clean.
# Compression (compress): volumes made by mkfs.f2fs -O extra_attr,compression
# (on ZNS by mkfs.zlfs -O compression) written with compressed files by the
# kernel's f2fs (lzo and lz4 on null_blk, zstd and lzo-rle on ZNS), read
# identical by zlfs with the
# kernel's i_compr_blocks, changed and added to by zlfs, read identical by
# the kernel with zlfs's i_compr_blocks; and a mkfs.zlfs volume the other
# way round (zstd:3, checksums); fsck.f2fs and fsck.zlfs after each writer.
# Last on each, the crash test (crash): files written and fsync'd (new ones,
# an older one overwritten and appended, one fdatasync'd), zlfs killed with
# SIGKILL right after the fsyncs returned; the kernel's f2fs mounts the
# volume read-write (its roll-forward recovery) and must find every fsync'd
# file whole, fsck.f2fs, then zlfs finds them too. Again with zlfs mounting
# first (its own recovery), fsck.f2fs (write pointers included), the kernel.
#
# Several devices (multi, in the ZNS VM): three zoned null_blk devices made
# through configfs with the ZNS namespace's zone size and capacity join the
# conventional and the ZNS namespaces in one volume of five devices
# (mkfs.zlfs META -c ZNS -c NB...): the volume test in nolock, the logs
# spread over the devices (status), then a volume of the same five made by
# mkfs.f2fs: the kernel's f2fs writes a tree, zlfs reads it identical and
# writes, the kernel reads what zlfs wrote.
#
# ZLFS_VM_FS_ONLY (pass it with ZLFS_VM_PASSENV=ZLFS_VM_FS_ONLY) runs a part
# only: keys separated by blanks or commas, from three groups: parts
# (volume gc kernel features compress crash enospc multi), devices (nullblk zns),
# volume modes (nolock zwl).
# A group none of whose keys is given is not filtered: ZLFS_VM_FS_ONLY=crash
# is the crash test on both devices, "volume zwl nullblk" one volume test.
# Unset or empty: everything.
# One "vm-test: NAME ok|FAIL" line per check; last line "vm-test: all done".
# shellcheck disable=SC2317 # functions called through check()
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

# fsck_dev NAME DEV [wp]: fsck.f2fs --dry-run must find nothing; with wp the
# write pointers must have been checked too where fsck.f2fs can (it checks
# them only when the first device is zoned); fsck.zlfs -f -n must find
# nothing either
fsck_dev() {
	local out rc note=
	out=$(fsck.f2fs --dry-run "$2" 2>&1 < /dev/null)
	rc=$?
	echo "$out" > /tmp/fsck-last.out   # valid_blocks_last reads it
	if [ -n "${3:-}" ]; then
		if echo "$out" | grep -qE 'Write pointers consistency.*\[Ok'; then
			note=", write pointers consistent"
		elif [ "$(cat "/sys/block/${2#/dev/}/queue/zoned")" = none ]; then
			note=", no write pointer check behind a conventional first device"
		else
			echo "$out" | grep -iE 'write pointer|curseg' | head
			fail "fsck.f2fs on the zoned device ($1)" "no write pointer check in its output"
			return
		fi
	fi
	if [ $rc -ne 0 ] || echo "$out" | grep -qE '\[Fail\]|\[FAIL\]|\[ASSERT\]'; then
		echo "$out" | grep -E '\[Fail\]|\[FAIL\]|\[ASSERT\]|rror|[Ww]rite pointer' | head
		fail "fsck.f2fs on the zoned device ($1)"
	else
		ok "fsck.f2fs on the zoned device ($1$note)"
	fi
	# zlfs's own checker must agree (zones' write pointers against the SIT too)
	out=$("$build/fsck/fsck.zlfs" -f -n "$2" 2>&1 < /dev/null)
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "$out" | head -15
		fail "fsck.zlfs on the zoned device ($1)" "exit $rc"
	else
		ok "fsck.zlfs on the zoned device ($1)"
	fi
}

# ---------------------------------------------------------------- devices, unmount
# vol_devs DEV: the devices of the volume whose first device is DEV;
# zoned_devs DEV: its zoned ones.  (vdevs, when set, lists the devices of
# the volume under test: the multi-device part's.)
vol_devs() {
	if [ -n "${vdevs:-}" ]; then echo "$vdevs"
	elif [ -n "$meta" ] && [ "$1" = "$meta" ]; then echo "$1 $zns"
	else echo "$1"; fi
}
zoned_devs() {
	local d
	for d in $(vol_devs "$1"); do
		[ "$(cat "/sys/block/${d#/dev/}/queue/zoned")" = none ] || echo "$d"
	done
}

# dev_free DEV: no one holds DEV exclusively (a mounted filesystem, a zlfs daemon)
dev_free() { perl -MFcntl -e 'sysopen(my $f, $ARGV[0], O_RDONLY | O_EXCL) or exit 1' "$1" 2> /dev/null; }
# released DEV...: wait up to 240 s for that (a killed process's io_uring
# may let go of its files a little after the process is gone).  The bounds
# here are for a hang only: the VM shares the host with other tests and may
# get little CPU for a while.
released() {
	local d i
	for d; do
		for ((i = 0; i < 2400; i++)); do
			dev_free "$d" && break
			sleep 0.1
		done
		dev_free "$d" || { echo "$d still held 240 s on"; return 1; }
	done
}
# zlfs_pid MNT: the zlfs daemon serving MNT (by its command line)
zlfs_pid() {
	local p x a
	for p in /proc/[0-9]*; do
		mapfile -d '' -t a < "$p/cmdline" 2> /dev/null || continue
		[ "${a[0]:-}" = "$build/fs/zlfs" ] || continue
		for x in "${a[@]:1}"; do
			[ "$x" = "$1" ] && { echo "${p#/proc/}"; return 0; }
		done
	done
	return 1
}
# gone PID: wait up to 240 s for PID to exit
gone() {
	local i st
	for ((i = 0; i < 2400; i++)); do
		st=$(cat "/proc/$1/stat" 2> /dev/null) || return 0
		st=${st##*) }
		[ "${st%% *}" = Z ] && return 0
		sleep 0.1
	done
	return 1
}
# zlfs_umount MNT DEV: unmount zlfs and wait until its daemon has exited (the
# final checkpoint written) and let go of the volume's devices
zlfs_umount() {
	local pid
	pid=$(zlfs_pid "$1")
	fusermount3 -u "$1" || return 1
	if [ -n "$pid" ] && ! gone "$pid"; then
		echo "zlfs daemon $pid still running 240 s after the unmount"
		return 1
	fi
	# shellcheck disable=SC2046 # one word per device
	released $(vol_devs "$2")
}

# ---------------------------------------------------------------- the kernel's f2fs
# klog_mark WHAT: a mark in the kernel log; klog prints what came after it
kmark=0
klog_mark() { kmark=$((kmark + 1)); echo "zlfs-vm: mark $kmark: $1" > /dev/kmsg; }
klog() { dmesg -r | awk -v m="zlfs-vm: mark $kmark: " 'index($0, m) { p = 1; next } p'; }
# klog_check NAME [strict]: show the kernel's messages since the mark
# ("kernel: <level>[time] text"). FAIL on error level and worse (f2fs_err,
# I/O errors), WARN_ON traces (what f2fs_bug_on prints), BUG, Oops,
# "inconsistent", failed roll-forward steps ("err = -N"). Notices such as
# "Mounted with checkpoint version" are normal, and after a crash so are
# the zone repairs at mount ("Unaligned curseg ... with write pointer",
# "Assign new section to curseg"); strict (after a clean unmount) fails on
# those too: the kernel must find every log at its zone's write pointer.
klog_check() {
	local log bad pat='^<[0-3]>|f2fs_bug_on|BUG|Oops|WARNING:|cut here|Call Trace|[Ii]nconsistent|err = -[0-9]'
	[ -z "${2:-}" ] || pat="$pat|[Ww]rite pointer|Assign new section|curseg|Not successfully unmounted"
	log=$(klog)
	# shellcheck disable=SC2001 # a prefix on every line
	[ -z "$log" ] || echo "$log" | sed 's/^/  kernel: /'
	bad=$(echo "$log" | grep -E "$pat")
	if [ -n "$bad" ]; then
		fail "kernel log clean ($1)" "$(echo "$bad" | head -3 | tr '\n' ' ')"
	else
		ok "kernel log clean ($1${2:+, no zone repairs})"
	fi
}
# kernel_mount DEV [OPTIONS]: the kernel's f2fs mounts the volume read-write
# on $mnt (the devices listed in its superblock come along), every zoned
# device on mq-deadline, on 6.1 the scheduler that keeps each zone's writes
# in order; kernel_umount puts the old schedulers back (ksched: "FILE
# SCHEDULER" pairs)
ksched=''
kernel_mount() {
	local z f
	ksched=
	for z in $(zoned_devs "$1"); do
		f=/sys/block/${z#/dev/}/queue/scheduler
		ksched="$ksched $f $(sed -n 's/.*\[\(.*\)\].*/\1/p' "$f")"
		echo mq-deadline > "$f"
	done
	modprobe f2fs 2> /dev/null
	mount -t f2fs ${2:+-o "$2"} "$1" "$mnt" && return 0
	ksched_restore
	return 1
}
ksched_restore() {
	# shellcheck disable=SC2086 # the pairs split into words
	set -- $ksched
	while [ $# -ge 2 ]; do
		echo "$2" > "$1"
		shift 2
	done
	ksched=
}
kernel_umount() {
	local r=0
	umount "$mnt" || r=1
	ksched_restore
	return $r
}

# ---------------------------------------------------------------- tree records
# tree_meta DIR: one line per entry, sorted: quoted path (symlinks: and
# target), mode, owner, links, size, device numbers, inode number, blocks
# (st_blocks: inline data and dentries count as the kernel counts them),
# mtime and ctime in ns. zlfs's virtual /.zlfs and a /lost+found (fsck's)
# are left out.
tree_meta() {
	(cd "$1" && find . \( -path ./.zlfs -o -path ./lost+found \) -prune -o -print0 |
		xargs -0r stat -c '%N %A %u:%g links=%h size=%s dev=%t:%T ino=%i blocks=%b mtime=%.9Y ctime=%.9Z' |
		LC_ALL=C sort)
}
# tree_atimes DIR: path and atime in ns of every regular file and
# directory, taken after tree_sums read them all: relatime on both sides
# (zlfs's default and the kernel's) must leave the same atimes.  Symlinks
# are left out: the kernel's readlink (stat %N) touches theirs, FUSE's
# cached one does not.
tree_atimes() {
	(cd "$1" && find . \( -path ./.zlfs -o -path ./lost+found \) -prune -o \
		\( -type f -o -type d \) -print0 |
		xargs -0r stat -c '%n atime=%.9X' | LC_ALL=C sort)
}
# tree_sums DIR: the md5 of every regular file, sorted by path.  md5, not
# sha256: the sums only tell corrupted data from what was written, and under
# TCG md5sum reads nearly three times as fast; two at a time, one per vCPU,
# each line written whole (stdbuf -oL: a line is one write, atomic in a pipe).
tree_sums() {
	(cd "$1" && find . \( -path ./.zlfs -o -path ./lost+found \) -prune -o -type f -print0 |
		xargs -0r -P 2 -n 16 stdbuf -oL md5sum | LC_ALL=C sort -k2)
}
# tree_record DIR OUT: OUT.meta and OUT.sums
tree_record() {
	tree_meta "$1" > "$2.meta" && tree_sums "$1" > "$2.sums" && tree_atimes "$1" > "$2.atimes"
}
# same_tree A B: two records agree; the lines that differ are shown
same_tree() {
	local f r=0
	for f in meta sums atimes; do
		[ -e "$1.$f" ] && [ -e "$2.$f" ] || continue
		cmp -s "$1.$f" "$2.$f" && continue
		echo "  $f: $(diff "$1.$f" "$2.$f" | grep -c '^[<>]') lines differ (< ${1##*/}, > ${2##*/}):"
		diff "$1.$f" "$2.$f" | grep '^[<>]' | head -20 | sed 's/^/    /'
		r=1
	done
	return "$r"
}
# tree_size RECORD: "N entries, M files, X MiB"
tree_size() {
	echo "$(wc -l < "$1.meta") entries, $(wc -l < "$1.sums") files, $(grep -E "' -[-rwxsStT]{9} [0-9]+:[0-9]+ links=" "$1.meta" |
		sed 's/.* size=\([0-9]*\) dev=.*/\1/' | awk '{ s += $1 } END { printf "%.0f", s / 1048576 }') MiB"
}

# kernel_changes D: on the kernel's mount: a new file, a new directory with a
# small (inline) file, 5000 bytes appended to a file, one removed, one
# renamed into the new directory (the first three files of one link, by
# path). D.sums, the record from before, edited to match, goes to
# D-after.sums (only the files changed are read again). Prints what it did.
kernel_changes() {
	local d=$1 app rmf mvf files list
	# (no process substitution: the guest has no /dev/fd)
	list=$(cd "$mnt" && find . -path ./lost+found -prune -o -type f -links 1 -size +0 -print | LC_ALL=C sort | head -3)
	mapfile -t files <<< "$list"
	app=${files[0]:-} rmf=${files[1]:-} mvf=${files[2]:-}
	if ! (cd "$mnt" && head -c 100013 /dev/urandom > kernel-new && mkdir kernel-dir &&
		echo "written by the kernel's f2fs" > kernel-dir/small &&
		{ [ -z "$app" ] || head -c 5000 /dev/urandom >> "$app"; } &&
		{ [ -z "$rmf" ] || rm "$rmf"; } &&
		{ [ -z "$mvf" ] || mv "$mvf" kernel-dir/renamed; }); then
		echo "a change failed"
		return 1
	fi
	{
		awk -v app="$app" -v rmf="$rmf" -v mvf="$mvf" '{ p = substr($0, 35) }
			p == app || p == rmf { next }
			p == mvf { print substr($0, 1, 34) "./kernel-dir/renamed"; next }
			{ print }' "$d.sums"
		(cd "$mnt" && md5sum ./kernel-new ./kernel-dir/small ${app:+"$app"})
	} | LC_ALL=C sort -k2 > "$d-after.sums" || { echo "md5sum failed"; return 1; }
	echo "created kernel-new, kernel-dir/small${app:+; appended to $app}${rmf:+; removed $rmf}${mvf:+; renamed $mvf to kernel-dir/renamed}"
}

# cross_mount NAME DEV [ZLFS-OPTIONS...]: zlfs has DEV's volume mounted on
# $mnt. Its tree is recorded and zlfs unmounted; the kernel's f2fs mounts
# the volume read-write, must show the same tree, and changes it
# (kernel_changes); fsck.f2fs; zlfs mounts again (with ZLFS-OPTIONS) and
# must show exactly the kernel's tree; unmounted at the end.
cross_mount() {
	local name=$1 t="$1, kernel cross-mount" dev=$2 d=/tmp/cross s=$SECONDS what r0 r1 r2
	shift 2
	rm -rf "$d" && mkdir -p "$d"
	tree_record "$mnt" "$d/zlfs"
	r0=$((SECONDS - s))
	zlfs_umount "$mnt" "$dev" || { fail "zlfs unmount ($t)"; return; }
	klog_mark "$t"
	if ! kernel_mount "$dev"; then
		fail "kernel f2fs mounts the volume read-write ($t)" "$(klog | tail -3 | tr '\n' ' ')"
		return
	fi
	ok "kernel f2fs mounts the volume read-write ($t)"
	r1=$SECONDS
	tree_record "$mnt" "$d/kernel"
	r1=$((SECONDS - r1))
	check "kernel f2fs sees zlfs's tree, stat fields included ($t: $(tree_size "$d/zlfs"))" same_tree "$d/zlfs" "$d/kernel"
	if what=$(kernel_changes "$d/kernel") && tree_meta "$mnt" > "$d/kernel-after.meta"; then
		ok "kernel f2fs changes the tree ($t: $what)"
	else
		fail "kernel f2fs changes the tree ($t)" "$what"
	fi
	kernel_umount || fail "kernel unmount ($t)"
	klog_check "$t" strict
	fsck_dev "$t, after the kernel" "$dev"
	if ! "$build/fs/zlfs" "$dev" "$mnt" "$@"; then
		fail "zlfs mounts what the kernel left ($t)"
		return
	fi
	r2=$SECONDS
	tree_record "$mnt" "$d/zlfs-after"
	r2=$((SECONDS - r2))
	check "zlfs sees exactly the kernel's changes, stat fields included (inline file and dentries: st_blocks) ($t)" same_tree "$d/kernel-after" "$d/zlfs-after"
	zlfs_umount "$mnt" "$dev" || fail "zlfs unmount ($t)"
	echo "kernel cross-mount ($name): $((SECONDS - s)) s; the tree records (stat, md5sum):" \
		"zlfs $r0 s, kernel $r1 s, zlfs after the kernel $r2 s"
}

# big_files MNT: five files of 64 MiB of random data; their checksums in
# /tmp/sums.  The random bytes are made once (/dev/urandom is slow under
# TCG): file i is the pool rotated by i * 4097 bytes, so no 4 KiB block of
# one file equals a block of another (a block written to the wrong place
# still shows).  Written 1 MiB at a time: under TCG each write(2) costs
# milliseconds, and head's 8 KiB writes made this step take minutes (what
# reaches zlfs is the same: the writeback cache sends whole pages).
big_files() {
	local i n
	[ -s /tmp/pool ] || head -c 64M /dev/urandom > /tmp/pool || return 1
	for i in 1 2 3 4 5; do
		n=$((i * 4097))
		{ dd if=/tmp/pool bs=1M iflag=skip_bytes skip=$n status=none &&
			dd if=/tmp/pool bs=1M iflag=count_bytes count=$n status=none; } |
			dd of="$1/big$i" bs=1M iflag=fullblock status=none || return 1
	done
	(cd "$1" && md5sum big*) > /tmp/sums
}

# volume NAME MOUNT-DEV MKFS-ARGS...
volume() {
	local name=$1 dev=$2 mode
	shift 2
	check "mkfs.zlfs ($name)" "$build/mkfs/mkfs.zlfs" -f "$@"
	fsck_dev "$name, fresh from mkfs" "$dev"
	local fresh=1   # the first mode gets that volume, the next a new one
	for mode in ${vol_modes:-nolock zwl}; do
		sel "$modes" $mode || continue
		local t="$name, $mode"
		rm -rf "${ref:?}"/*
		[ -n "$fresh" ] || "$build/mkfs/mkfs.zlfs" -f "$@" > /dev/null
		fresh=
		if ! "$build/fs/zlfs" "$dev" "$mnt" -o mode=$mode; then
			fail "mount ($t)"
			continue
		fi
		ok "mount ($t)"
		# the guest tmpfs (Linux 6.1) has no user.* xattrs: leave them out of the model
		check "fsops 2000 operations ($t)" "$build/tests/fsops" \
			--no setxattr,getxattr,listxattr,removexattr "$mnt" "$ref" 7 2000
		check "320 MiB in large files ($t)" big_files "$mnt"
		zlfs_umount "$mnt" "$dev" || fail "unmount ($t)"
		echo "kernel write errors so far (unaligned writes the recovery queue resubmits in nolock):" \
			"$(dmesg | grep -c 'I/O Error')"
		fsck_dev "$t" "$dev"
		if "$build/fs/zlfs" "$dev" "$mnt" -o mode=$mode; then
			# the large files are outside the model: check, remove, and give
			# the root back the reference's mtime before comparing the trees
			check "large files intact after remount ($t)" \
				bash -c "cd '$mnt' && md5sum -c --quiet /tmp/sums && rm big* &&
					touch -m -r '$ref' '$mnt'"
			check "persistent across remount ($t)" "$build/tests/fsops" --compare "$mnt" "$ref"
			cross_mount "$t" "$dev" -o mode=$mode
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
	# 90% full): GC must copy live data out of every victim.  Two passes:
	# the first fits in the free space (no copy; measured on a 2 GiB image
	# of this geometry), the second cannot, so GC copies live blocks, which
	# the check below insists on (each pass is ~8 minutes under TCG)
	if [ -n "${random:-}" ]; then
		local moved0 moved1
		moved0=$(sed -n 's/^gc_data_blocks_moved=//p' "$mnt/.zlfs/status")
		if out=$("$build/tests/gcload" random /tmp/gcr.state "$mnt/rnd" $blocks 2 4 2>&1); then
			ok "random 4 KiB overwrites, data verified ($t: $(grep -E '^(gc_data_blocks_moved|gc_write_amp)' "$mnt/.zlfs/status" | tr '\n' ' '))"
			moved1=$(sed -n 's/^gc_data_blocks_moved=//p' "$mnt/.zlfs/status")
			if [ "$moved1" -gt "$moved0" ]; then
				ok "GC copied live blocks during the random overwrites ($t: $((moved1 - moved0)))"
			else
				fail "GC copied no live block during the random overwrites ($t)" \
					"gc_data_blocks_moved $moved0 before, $moved1 after"
			fi
		else
			fail "random 4 KiB overwrites ($t)" "$(echo "$out" | tail -2 | tr '\n' ' ')"
		fi
	fi
	zlfs_umount "$mnt" "$dev" || fail "unmount ($t)"
	fsck_dev "$t" "$dev"
	if "$build/fs/zlfs" "$dev" "$mnt"; then
		check "data intact after remount ($t)" "$build/tests/gcload" verify /tmp/gc.state "$mnt" "$mnt"
		[ -z "${random:-}" ] ||
			check "random overwrites intact after remount ($t)" "$build/tests/gcload" verify /tmp/gcr.state "$mnt" "$mnt"
		cross_mount "$t" "$dev"
	else
		fail "remount ($t)"
	fi
}

# zlfs_on_kernel_tree NAME SRC SIZE FROM: zlfs (mounted on $mnt) must show the
# kernel's copy of SRC in tree/ identical, then copy SRC to tree2/, remove
# tree/d and write zbig (SIZE bytes of FROM, its md5 in /tmp/zsum);
# kernel_sees_zlfs SRC: the kernel (mounted on $mnt) sees all of that
zlfs_on_kernel_tree() {
	check "zlfs reads the kernel's tree back identical ($1)" diff -r "$2" "$mnt/tree"
	check "zlfs writes there ($1)" bash -c "cp -a '$2' '$mnt/tree2' && rm -rf '$mnt/tree/d' &&
		head -c $3 '$4' > '$mnt/zbig' && sync -f '$mnt' && diff -r '$2' '$mnt/tree2' &&
		cd '$mnt' && md5sum zbig > /tmp/zsum"
}
kernel_sees_zlfs() {
	diff -r "$1" "$mnt/tree2" && [ ! -e "$mnt/tree/d" ] && (cd "$mnt" && md5sum -c --quiet /tmp/zsum)
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
	zlfs_on_kernel_tree "$t" "$src" 4M /dev/urandom
	zlfs_umount "$mnt" "$dev" || fail "unmount ($t)"
	fsck_dev "$t, after zlfs" "$dev"
	if mount -t f2fs "$dev" "$mnt"; then
		check "kernel reads what zlfs wrote ($t)" kernel_sees_zlfs "$src"
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

# ---------------------------------------------------------------- F2FS features
# The feature sets people make F2FS with, on null_blk (features DEV).  For
# each: the kernel-made volume (mkfs.f2fs -m -O SET): the kernel's f2fs
# writes feat_tree; zlfs mounts it and must show the same tree (stat fields
# with inode numbers and st_blocks, md5 of every file, atimes), changes it
# (feat_changes: inline files grown past the inode, new inline files and
# directories, removes, renames, xattrs); fsck.f2fs and fsck.zlfs; the
# kernel mounts again and must show zlfs's tree exactly.  Then the
# zlfs-made one (mkfs.zlfs -O SET): zlfs writes feat_tree, and the
# kernel-side round trip of cross_mount.  The blocks the tree takes
# (fsck.f2fs's valid blocks after, less those of the empty volume) on the
# zlfs-made volume must be within 2% of the kernel-made one's: inline
# files, directories and xattrs as the kernel keeps them.  The kernel round
# trip of zlfs's volume (cross_mount) runs for the first and the last set;
# the two between are parts of mkfs.zlfs's default set, whose round trip
# runs after every volume test above (under TCG each costs a minute).
feat_sets=("" extra_attr extra_attr,inode_checksum,sb_checksum
	extra_attr,inode_checksum,sb_checksum,flexible_inline_xattr,inode_crtime)
# feat_tree DIR: 300 files of 100 bytes in six directories, 30 directories
# of three hard links, short (inline) and long symlinks, small (inline) and
# large (xattr node) xattrs, a 10000-byte and a 1 MiB file, a hard link
feat_tree() {
	python3 - "$1" <<'EOF2'
import os, sys
r = sys.argv[1]
for d in range(6):
    p = os.path.join(r, 'small%d' % d)
    os.mkdir(p)
    for f in range(50):
        with open(os.path.join(p, 'f%02d' % f), 'wb') as fh:
            fh.write(('%d/%02d ' % (d, f)).encode().ljust(100, b'.'))
os.mkdir(os.path.join(r, 'links'))
with open(os.path.join(r, 'links', 'target'), 'wb') as fh:
    fh.write(b'one inode, many names\n')
for d in range(30):
    p = os.path.join(r, 'links', 'd%02d' % d)
    os.mkdir(p)
    for e in 'abc':
        os.link(os.path.join(r, 'links', 'target'), os.path.join(p, e))
os.symlink('small0/f00', os.path.join(r, 'short-link'))
os.symlink('x' * 3900, os.path.join(r, 'long-link'))
with open(os.path.join(r, 'mid'), 'wb') as fh:
    fh.write(bytes(i % 253 for i in range(10000)))
with open(os.path.join(r, 'big'), 'wb') as fh:
    fh.write(os.urandom(1 << 20))
os.link(os.path.join(r, 'mid'), os.path.join(r, 'mid-link'))
os.setxattr(os.path.join(r, 'small1', 'f01'), 'user.small', b'inline value')
os.setxattr(os.path.join(r, 'small1', 'f02'), 'user.large', b'L' * 1500)
os.setxattr(os.path.join(r, 'small2'), 'user.dir', b'on a directory')
EOF2
}
# feat_changes DIR: what the second writer does
feat_changes() {
	python3 - "$1" <<'EOF2'
import os, sys
r = sys.argv[1]
with open(os.path.join(r, 'small0', 'f03'), 'ab') as fh:      # past the inline area
    fh.write(bytes(i % 251 for i in range(5000)))
with open(os.path.join(r, 'small0', 'f04'), 'r+b') as fh:     # inside it
    fh.seek(50); fh.write(b'changed in place')
os.truncate(os.path.join(r, 'small0', 'f05'), 10)
os.mkdir(os.path.join(r, 'new-dir'))
for f in range(5):
    with open(os.path.join(r, 'new-dir', 'n%d' % f), 'wb') as fh:
        fh.write(b'new, small\n')
for f in range(150):                                          # small3 outgrows its inode
    with open(os.path.join(r, 'small3', 'grown-%03d' % f), 'wb') as fh:
        fh.write(b'g')
os.remove(os.path.join(r, 'small4', 'f00'))
os.rename(os.path.join(r, 'small4', 'f01'), os.path.join(r, 'new-dir', 'moved'))
os.unlink(os.path.join(r, 'links', 'd00', 'a'))
os.setxattr(os.path.join(r, 'small1', 'f01'), 'user.more', b'x' * 300)
os.removexattr(os.path.join(r, 'small1', 'f02'), 'user.large')
EOF2
}
# xattr_record DIR OUT: every user xattr, sorted (the tree records leave them out)
xattr_record() {
	python3 - "$1" > "$2" <<'EOF2'
import os, sys
r = sys.argv[1]
out = []
for d, dirs, files in os.walk(r):
    dirs[:] = [x for x in dirs if not (d == r and x in ('.zlfs', 'lost+found'))]
    for n in dirs + files:
        p = os.path.join(d, n)
        for a in sorted(os.listxattr(p, follow_symlinks=False)):
            if a.startswith('user.'):
                out.append('%s %s %s' % (os.path.relpath(p, r), a,
                                         os.getxattr(p, a, follow_symlinks=False).hex()[:64]))
print('\n'.join(sorted(out)))
EOF2
}
# valid_blocks DEV: fsck.f2fs's count of the volume's valid blocks;
# valid_blocks_last: the same from the last fsck_dev's fsck.f2fs
valid_count() {
	local h
	h=$(sed -n 's/.*valid_block_count matching with CP.*\[0x\([0-9a-fA-F]*\)\].*/\1/p' | head -1)
	[ -n "$h" ] && echo $((16#$h))
}
valid_blocks() { fsck.f2fs --dry-run "$1" 2>&1 < /dev/null | valid_count; }
valid_blocks_last() { valid_count < /tmp/fsck-last.out; }
# feat_same A B: tree records and xattr records agree
feat_same() { same_tree "$1" "$2" && cmp -s "$1.xattrs" "$2.xattrs" || { diff "$1.xattrs" "$2.xattrs" | head -5; return 1; }; }
feat_record() { tree_record "$1" "$2" && xattr_record "$1" "$2.xattrs"; }

features() {
	local dev=$1 set t d=/tmp/feat e0 k1 z0 z1 kd zd plain
	plain=^extra_attr,^inode_checksum,^inode_crtime,^sb_checksum
	modprobe f2fs 2> /dev/null
	local n=0 s
	for set in "${feat_sets[@]}"; do
		t="features ${set:-none}" s=$SECONDS n=$((n + 1))
		rm -rf "$d" && mkdir -p "$d"
		# the kernel's volume, zlfs reads and writes it
		if ! mkfs.f2fs -q -f -m ${set:+-O "$set"} "$dev" > "$d/mkfs.log" 2>&1; then
			fail "mkfs.f2fs -m ($t)" "$(tail -2 "$d/mkfs.log")"
			continue
		fi
		e0=$(valid_blocks "$dev")
		klog_mark "$t, kernel-made"
		kernel_mount "$dev" || { fail "kernel mounts ($t)"; continue; }
		check "kernel f2fs writes the tree ($t)" feat_tree "$mnt"
		feat_record "$mnt" "$d/kernel"
		kernel_umount || fail "kernel unmount ($t)"
		klog_check "$t, kernel-made" strict
		fsck_dev "$t, kernel-made" "$dev"
		k1=$(valid_blocks_last)
		"$build/fs/zlfs" "$dev" "$mnt" || { fail "zlfs mounts the kernel's volume ($t)"; continue; }
		feat_record "$mnt" "$d/zlfs"
		check "zlfs sees the kernel's tree: stat fields, data, xattrs ($t)" feat_same "$d/kernel" "$d/zlfs"
		check "zlfs changes it ($t)" feat_changes "$mnt"
		feat_record "$mnt" "$d/zlfs-after"
		zlfs_umount "$mnt" "$dev" || fail "zlfs unmount ($t)"
		fsck_dev "$t, kernel-made, after zlfs" "$dev"
		klog_mark "$t, after zlfs"
		if kernel_mount "$dev"; then
			feat_record "$mnt" "$d/kernel-after"
			check "kernel f2fs sees zlfs's changes exactly ($t)" feat_same "$d/zlfs-after" "$d/kernel-after"
			kernel_umount || fail "kernel unmount ($t)"
			klog_check "$t, after zlfs" strict
		else
			fail "kernel mounts what zlfs left ($t)"
		fi
		# zlfs's volume with the same features: the kernel round trip
		if ! "$build/mkfs/mkfs.zlfs" -f -O "${set:-$plain}" "$dev" > "$d/mkfs.log" 2>&1; then
			fail "mkfs.zlfs -O ($t)" "$(tail -2 "$d/mkfs.log")"
			continue
		fi
		z0=$(valid_blocks "$dev")
		"$build/fs/zlfs" "$dev" "$mnt" || { fail "zlfs mounts its volume ($t)"; continue; }
		check "zlfs writes the tree ($t)" feat_tree "$mnt"
		zlfs_umount "$mnt" "$dev" || fail "zlfs unmount ($t)"
		fsck_dev "$t, zlfs-made" "$dev"
		z1=$(valid_blocks_last)
		kd=$((k1 - e0)) zd=$((z1 - z0))
		echo "valid blocks of the tree ($t): kernel $kd (empty $e0, after $k1), zlfs $zd (empty $z0, after $z1)"
		check "zlfs's blocks for the tree within 2% of the kernel's ($t: $zd vs $kd)" \
			test $((100 * (zd > kd ? zd - kd : kd - zd))) -le $((2 * kd))
		if [ "$n" = 1 ] || [ "$n" = "${#feat_sets[@]}" ]; then
			if "$build/fs/zlfs" "$dev" "$mnt"; then
				cross_mount "$t, zlfs-made" "$dev"
			else
				fail "zlfs mounts its volume again ($t)"
			fi
		fi
		echo "features ($t): $((SECONDS - s)) s"
	done
}

# ---------------------------------------------------------------- compression
# compr_tree DIR TAG: files for a compressed volume mounted with
# compress_extension=txt: TAG-text.txt (2 MiB of text), TAG-rand.txt
# (random), TAG-plain.bin (text, not compressed), TAG-tail.txt (its last
# cluster partial), TAG-cdir (chattr +c through FS_IOC_SETFLAGS) with a
# text file in it, TAG-falloc.bin (1 MiB preallocated, 10,000 bytes written
# in it); written 256 KiB at a time
compr_tree() {
	python3 - "$1" "$2" <<'EOF2'
import fcntl, os, random, struct, sys
r, tag = sys.argv[1], sys.argv[2]
W = [b"zone ", b"log ", b"cluster ", b"f2fs ", b"checkpoint\n", b"node ", b"the ", b"of "]
def text(n, s):
    g = random.Random(s)
    b = bytearray()
    while len(b) < n:
        b += b"".join(g.choice(W) for _ in range(512))
    return bytes(b[:n])
def put(p, data):
    with open(os.path.join(r, p), "wb") as f:
        for i in range(0, len(data), 262144):
            f.write(data[i:i + 262144])
put(tag + "-text.txt", text(2 << 20, 1))
put(tag + "-rand.txt", random.Random(2).randbytes(512 << 10))
put(tag + "-plain.bin", text(512 << 10, 3))
put(tag + "-tail.txt", text(100000, 4))
d = os.path.join(r, tag + "-cdir")
os.mkdir(d)
fd = os.open(d, os.O_RDONLY)
fl = struct.unpack("i", fcntl.ioctl(fd, 0x80086601, b"\0" * 4))[0]     # FS_IOC_GETFLAGS
fcntl.ioctl(fd, 0x40086602, struct.pack("i", fl | 0x4))                 # SETFLAGS +c
os.close(fd)
put(tag + "-cdir/inside", text(1 << 20, 5))
# preallocated (the kernel's fallocate leaves NEW_ADDR slots, counted as valid blocks), then
# partly written
fd = os.open(os.path.join(r, tag + "-falloc.bin"), os.O_CREAT | os.O_WRONLY, 0o644)
os.posix_fallocate(fd, 0, 1 << 20)
os.pwrite(fd, text(10000, 6), 100000)
os.close(fd)
EOF2
}
# compr_changes DIR TAG: the second writer: overwrites inside clusters of
# TAG's text files, an append, a truncate into a cluster
compr_changes() {
	python3 - "$1" "$2" <<'EOF2'
import os, sys
r, tag = sys.argv[1], sys.argv[2]
with open(os.path.join(r, tag + "-text.txt"), "r+b") as f:
    for off in (3, 16384 - 10, 200001, 1 << 20):
        f.seek(off)
        f.write(b"changed by the other side " * 3)
with open(os.path.join(r, tag + "-tail.txt"), "ab") as f:
    f.write(b"appended " * 4000)
os.truncate(os.path.join(r, tag + "-cdir", "inside"), 500001)
EOF2
}
# compr_record DIR OUT: per file: path, md5, st_blocks, i_compr_blocks
# (F2FS's GET_COMPRESS_BLOCKS; -1 when the file is not compressed), after a sync:
# both compress a cluster when it is written back, not at write(2)
compr_record() {
	sync
	python3 - "$1" > "$2" <<'EOF2'
import fcntl, hashlib, os, struct, sys
r = sys.argv[1]
for d, dirs, files in sorted(os.walk(r)):
    dirs[:] = sorted(x for x in dirs if not (d == r and x in (".zlfs", "lost+found")))
    for n in sorted(files):
        p = os.path.join(d, n)
        with open(p, "rb") as f:
            h = hashlib.md5(f.read()).hexdigest()
        fd = os.open(p, os.O_RDONLY)
        try:
            c = struct.unpack("Q", fcntl.ioctl(fd, 0x8008F511, b"\0" * 8))[0]
        except OSError:
            c = -1
        os.close(fd)
        print(os.path.relpath(p, r), h, "blocks=%d" % os.stat(p).st_blocks, "saved=%d" % c)
EOF2
}
# compr_same A B: two records agree
compr_same() { cmp -s "$1" "$2" || { diff "$1" "$2" | head -8; return 1; }; }
# compr_saved REC TAG: TAG's text files were compressed, its random and .bin not
compr_saved() {
	grep -q "^$2-text.txt .* saved=[1-9]" "$1" && grep -q "^$2-cdir/inside .* saved=[1-9]" "$1" &&
		grep -q "^$2-rand.txt .* saved=0$" "$1" && grep -q "^$2-plain.bin .* saved=-1$" "$1" ||
		{ grep "^$2-" "$1"; return 1; }
}

# compress DEV [MKFS-DEVICE-ARGS...]: for each algorithm ($compr_algs, by
# default all four), a volume made by mkfs.f2fs -O extra_attr,compression
# (compr_mkfs=zlfs: by mkfs.zlfs -O compression): the kernel's f2fs (compress_extension
# =txt, compress_algorithm=ALG) writes compr_tree; fsck.f2fs and fsck.zlfs
# (which decompresses every cluster); zlfs reads every file identical with
# the kernel's i_compr_blocks, changes them and writes its own with the same
# algorithm; both fscks; the kernel reads zlfs's files identical with zlfs's
# i_compr_blocks.  Then a volume made by mkfs.zlfs -O compression: zlfs
# writes with zstd:3, 16-block clusters and checksums; the kernel reads it
# identical (checking every checksum), changes it with lz4; zlfs reads the
# kernel's changes.  The kernel log stays clean throughout.
compress() {
	local dev=$1 alg t d=/tmp/compr s k
	shift
	for alg in ${compr_algs:-lzo lz4 zstd lzo-rle}; do
		t="compression $alg${1:+, ZNS}" s=$SECONDS
		k="compress_algorithm=$alg,compress_extension=txt"
		rm -rf "$d" && mkdir -p "$d"
		if [ "${compr_mkfs:-f2fs}" = zlfs ]; then
			"$build/mkfs/mkfs.zlfs" -f -O compression "$@" "$dev" > "$d/mkfs.log" 2>&1
		else
			mkfs.f2fs -q -f -m -O extra_attr,compression "$@" "$dev" > "$d/mkfs.log" 2>&1
		fi || { fail "mkfs.${compr_mkfs:-f2fs} with compression ($t)" "$(tail -2 "$d/mkfs.log")"; continue; }
		klog_mark "$t, kernel-made"
		kernel_mount "$dev" "$k" || { fail "kernel mounts with $k ($t)"; continue; }
		check "kernel f2fs writes compressed files ($t)" compr_tree "$mnt" k
		compr_record "$mnt" "$d/kernel"
		kernel_umount || fail "kernel unmount ($t)"
		klog_check "$t, kernel-made" strict
		check "the kernel compressed its text files, not the random or .bin ones ($t)" \
			compr_saved "$d/kernel" k
		fsck_dev "$t, kernel-made (fsck.zlfs decompresses every cluster)" "$dev"
		"$build/fs/zlfs" "$dev" "$mnt" -o "$k" || { fail "zlfs mounts the kernel's volume ($t)"; continue; }
		compr_record "$mnt" "$d/zlfs"
		check "zlfs reads the kernel's compressed files identical, same i_compr_blocks ($t)" \
			compr_same "$d/kernel" "$d/zlfs"
		check "zlfs changes the kernel's files and writes its own ($t)" \
			eval 'compr_changes "$mnt" k && compr_tree "$mnt" z'
		compr_record "$mnt" "$d/zlfs-after"
		zlfs_umount "$mnt" "$dev" || fail "zlfs unmount ($t)"
		check "zlfs compressed its text files, not the random or .bin ones ($t)" \
			compr_saved "$d/zlfs-after" z
		fsck_dev "$t, after zlfs" "$dev"
		klog_mark "$t, after zlfs"
		if kernel_mount "$dev" "$k"; then
			compr_record "$mnt" "$d/kernel-after"
			check "kernel f2fs reads zlfs's compressed files identical, same i_compr_blocks ($t)" \
				compr_same "$d/zlfs-after" "$d/kernel-after"
			kernel_umount || fail "kernel unmount ($t)"
			klog_check "$t, after zlfs" strict
		else
			fail "kernel mounts what zlfs left ($t)"
		fi
		echo "$t: $((SECONDS - s)) s; $(grep -- '-text.txt' "$d/kernel-after" 2>/dev/null | tr '\n' ' ')"
	done
	# zlfs's own volume
	t="compression, mkfs.zlfs${1:+, ZNS}" s=$SECONDS
	local z="compress_algorithm=zstd:3,compress_log_size=4,compress_chksum,compress_extension=txt"
	rm -rf "$d" && mkdir -p "$d"
	if ! "$build/mkfs/mkfs.zlfs" -f -O compression "$@" "$dev" > "$d/mkfs.log" 2>&1; then
		fail "mkfs.zlfs -O compression ($t)" "$(tail -2 "$d/mkfs.log")"
		return
	fi
	"$build/fs/zlfs" "$dev" "$mnt" -o "$z" || { fail "zlfs mounts its volume ($t)"; return; }
	check "zlfs writes compressed files ($t)" compr_tree "$mnt" z
	compr_record "$mnt" "$d/zlfs"
	zlfs_umount "$mnt" "$dev" || fail "zlfs unmount ($t)"
	check "zlfs compressed its text files ($t)" compr_saved "$d/zlfs" z
	fsck_dev "$t" "$dev"
	klog_mark "$t"
	if kernel_mount "$dev" "compress_algorithm=lz4,compress_extension=txt"; then
		compr_record "$mnt" "$d/kernel"
		check "kernel f2fs reads zlfs's volume identical, checksums and i_compr_blocks ($t)" \
			compr_same "$d/zlfs" "$d/kernel"
		check "kernel f2fs changes zlfs's files and writes its own ($t)" \
			eval 'compr_changes "$mnt" z && compr_tree "$mnt" k'
		compr_record "$mnt" "$d/kernel-after"
		kernel_umount || fail "kernel unmount ($t)"
		klog_check "$t" strict
		fsck_dev "$t, after the kernel" "$dev"
		if "$build/fs/zlfs" "$dev" "$mnt"; then
			compr_record "$mnt" "$d/zlfs-after"
			check "zlfs reads the kernel's changes identical ($t)" compr_same "$d/kernel-after" "$d/zlfs-after"
			zlfs_umount "$mnt" "$dev" || fail "zlfs unmount ($t)"
		else
			fail "zlfs mounts what the kernel left ($t)"
		fi
	else
		fail "kernel mounts zlfs's compressed volume ($t)"
	fi
	echo "$t: $((SECONDS - s)) s"
}

# ---------------------------------------------------------------- crash
# The files of the crash test: in the checkpoint before (older), then
# written and fsync'd right before the SIGKILL.
crash_files="old old2 keep dir/keep2 tiny-old new1 dir/new2 newdir/new3 tiny-new"
ckpts() { sed -n 's/^checkpoints=//p' "$mnt/.zlfs/status"; }
# crash_put FILE SRC SYNC [DD-ARGS...]: dd SRC into FILE on $mnt (SYNC:
# fsync, fdatasync or "": conv=SYNC, the call after the last write) and the
# same into the expected copy in $cexp
crash_put() {
	local f=$1 src=$2 sy=$3
	shift 3
	dd if="$src" of="$mnt/$f" bs=64k conv=notrunc${sy:+,$sy} "$@" status=none &&
		dd if="$src" of="$cexp/$f" bs=64k conv=notrunc "$@" status=none
}
# crash_write: the volume on $mnt gets the older files and a checkpoint
# (sync: their data reaches zlfs; sync on the root directory: zlfs's fsync
# of a directory checkpoints), one file written and not fsync'd, then new
# files each fsync'd (in the root, in an older directory, in a new one, a
# small inline one), an older file overwritten in the middle and appended
# then fsync'd, another the same then fdatasync'd, the small older one
# appended and fsync'd. $cexp gets the same writes. Sets cp0, cp1, cp2:
# zlfs's checkpoint count before the sync, after it, after the fsyncs.
cexp=/tmp/crash-exp
crash_write() {
	local c=/tmp/crash-src
	rm -rf "$cexp" "$c" && mkdir -p "$cexp/dir" "$cexp/newdir" "$c" || return 1
	head -c $((3 * 1048576 + 100)) /dev/urandom > "$cexp/old"
	head -c $((2 * 1048576 + 5)) /dev/urandom > "$cexp/old2"
	head -c 1048576 /dev/urandom > "$cexp/keep"
	head -c 10000 /dev/urandom > "$cexp/dir/keep2"
	echo "a small file: its data is inline, in the inode" > "$cexp/tiny-old"
	head -c 12305 /dev/urandom > "$c/new1"
	head -c $((1048576 + 123)) /dev/urandom > "$c/new2"
	head -c 70000 /dev/urandom > "$c/new3"
	echo "small, new, fsync'd" > "$c/tiny"
	head -c 65536 /dev/urandom > "$c/mid"
	head -c 102407 /dev/urandom > "$c/tail"
	head -c 5000 /dev/urandom > "$c/mid2"
	head -c 33333 /dev/urandom > "$c/tail2"
	echo "appended, fsync'd" > "$c/tiny2"
	head -c 262144 /dev/urandom > "$c/unsynced"
	cp0=$(ckpts)
	mkdir "$mnt/dir" && cp "$cexp/old" "$cexp/old2" "$cexp/keep" "$cexp/tiny-old" "$mnt/" &&
		cp "$cexp/dir/keep2" "$mnt/dir/" && sync && sync "$mnt" || return 1
	cp1=$(ckpts)
	[ "$cp1" -gt "$cp0" ] || { echo "no checkpoint after sync $mnt"; return 1; }
	cp "$c/unsynced" "$mnt/unsynced" &&
		crash_put new1 "$c/new1" fsync &&
		crash_put dir/new2 "$c/new2" fsync &&
		mkdir "$mnt/newdir" && crash_put newdir/new3 "$c/new3" fsync &&
		crash_put tiny-new "$c/tiny" fsync &&
		crash_put old "$c/mid" "" oflag=seek_bytes seek=$((1048576 + 1000)) &&
		crash_put old "$c/tail" fsync oflag=append &&
		crash_put old2 "$c/mid2" "" oflag=seek_bytes seek=$((409600 + 10)) &&
		crash_put old2 "$c/tail2" fdatasync oflag=append &&
		crash_put tiny-old "$c/tiny2" fsync oflag=append || return 1
	cp2=$(ckpts)
}
# crash_check MNT: every file of $crash_files has the expected size and bytes;
# what differs is shown
crash_check() {
	local f a b r=0
	for f in $crash_files; do
		if [ ! -f "$1/$f" ]; then
			echo "  $f: missing"
			r=1
			continue
		fi
		a=$(stat -c %s "$1/$f") b=$(stat -c %s "$cexp/$f")
		[ "$a" = "$b" ] || { echo "  $f: $a bytes, expected $b"; r=1; }
		cmp "$cexp/$f" "$1/$f" > /tmp/cmp.out 2>&1 || { echo "  $f: $(head -1 /tmp/cmp.out)"; r=1; }
	done
	return "$r"
}
# unsynced MNT: what became of the file written and not fsync'd (no check)
unsynced() {
	local n
	[ -e "$1/unsynced" ] || { echo "absent"; return; }
	n=$(stat -c %s "$1/unsynced")
	if cmp -s -n "$n" "$1/unsynced" /tmp/crash-src/unsynced; then
		echo "$n of 262144 bytes, as written"
	else
		echo "$n of 262144 bytes, content differs"
	fi
}
# crash_run NAME DEV FIRST MKFS-ARGS...: a fresh volume, crash_write, SIGKILL;
# FIRST (kernel or zlfs) mounts it, then the other
crash_run() {
	local t=$1 dev=$2 first=$3 pid cp0 cp1 cp2 s=$SECONDS
	shift 3
	"$build/mkfs/mkfs.zlfs" -f "$@" > /dev/null || { fail "mkfs.zlfs ($t)"; return; }
	"$build/fs/zlfs" "$dev" "$mnt" || { fail "mount ($t)"; return; }
	pid=$(zlfs_pid "$mnt") || { fail "zlfs daemon found ($t)"; zlfs_umount "$mnt" "$dev"; return; }
	if ! crash_write; then
		fail "writes and fsyncs ($t)"
		zlfs_umount "$mnt" "$dev"
		return
	fi
	kill -9 "$pid"
	# shellcheck disable=SC2046 # one word per device
	if ! gone "$pid" || ! umount -l "$mnt" || ! released $(vol_devs "$dev"); then
		fail "zlfs killed with SIGKILL, devices released ($t)"
		return
	fi
	ok "zlfs killed with SIGKILL right after the fsyncs returned ($t: 6 files fsync'd, 1 fdatasync'd, 2 older ones untouched; checkpoints: $((cp1 - cp0)) by sync on the root, $((cp2 - cp1)) during the fsyncs)"
	echo "fsck.f2fs --dry-run before any recovery (information only): $(fsck.f2fs --dry-run "$dev" 2>&1 < /dev/null |
		grep -E 'checkpoint state|[Ww]rite pointer|curseg|\[Fail\]|\[FAIL\]' | tr -s ' ' | tr '\n' ';')"
	if [ "$first" = kernel ]; then
		klog_mark "$t"
		if kernel_mount "$dev"; then
			ok "kernel f2fs mounts the crashed volume read-write ($t)"
			check "fsync'd files intact under the kernel's roll-forward ($t)" crash_check "$mnt"
			echo "not fsync'd, under the kernel: $(unsynced "$mnt")"
			kernel_umount || fail "kernel unmount ($t)"
		else
			fail "kernel f2fs mounts the crashed volume read-write ($t)" "$(klog | tail -3 | tr '\n' ' ')"
		fi
		klog_check "$t"
		fsck_dev "$t, after the kernel" "$dev" wp
		if "$build/fs/zlfs" "$dev" "$mnt"; then
			check "fsync'd files intact under zlfs after the kernel ($t)" crash_check "$mnt"
			zlfs_umount "$mnt" "$dev" || fail "unmount ($t)"
		else
			fail "zlfs mounts what the kernel recovered ($t)"
		fi
	else
		if "$build/fs/zlfs" "$dev" "$mnt"; then
			check "fsync'd files intact after zlfs's own recovery ($t)" crash_check "$mnt"
			echo "not fsync'd, under zlfs: $(unsynced "$mnt")"
			zlfs_umount "$mnt" "$dev" || fail "unmount ($t)"
		else
			fail "zlfs mounts the crashed volume ($t)"
			return
		fi
		fsck_dev "$t, after zlfs's recovery" "$dev" wp
		klog_mark "$t"
		if kernel_mount "$dev"; then
			ok "kernel f2fs mounts what zlfs recovered read-write ($t)"
			check "fsync'd files intact under the kernel after zlfs's recovery ($t)" crash_check "$mnt"
			kernel_umount || fail "kernel unmount ($t)"
		else
			fail "kernel f2fs mounts what zlfs recovered read-write ($t)" "$(klog | tail -3 | tr '\n' ' ')"
		fi
		klog_check "$t" strict
		fsck_dev "$t, after the kernel" "$dev"
	fi
	echo "crash test ($t): $((SECONDS - s)) s"
}
# crash NAME DEV MKFS-ARGS...: both orders
crash() {
	local name=$1 dev=$2
	shift 2
	crash_run "$name, crash, kernel first" "$dev" kernel "$@"
	crash_run "$name, crash, zlfs first" "$dev" zlfs "$@"
}

# ---------------------------------------------------------------- a full volume
# ENOSPC through the writeback cache on this kernel (Debian's, older than
# the host's): the writeback gate (fuse_ops.c) rests on how FUSE asks
# before a buffered write (a GETATTR with the file handle once the
# attributes are invalid), so it is checked here too.  An emulated 512 MiB
# image in the guest's RAM: dd with no end must stop with ENOSPC within the
# reserve past df's Avail, the file the same size after drop_caches and
# reading back as written, nothing lost at writeback, fsck.f2fs clean.
enospc_wb() {
	local img=/tmp/enospc.img out rc avail res sz
	rm -f "$img" "$img.zst"
	"$build/fs/zlfs-zdev" create "$img" --size 512M --zone-size 16M --conv-zones 4 >/dev/null &&
		"$build/mkfs/mkfs.zlfs" "$img" >/dev/null && "$build/fs/zlfs" "$img" "$mnt" ||
		{ echo "cannot make or mount $img"; return 1; }
	avail=$(( $(stat -f -c '%a * %S' "$mnt") ))
	res=$(( $(sed -n 's/^wb_reserve_blocks=//p' "$mnt/.zlfs/status") * 4096 ))
	out=$(dd if=/dev/zero of="$mnt/fill" bs=1M count=1024 2>&1)
	rc=$?
	sz=$(stat -c %s "$mnt/fill")
	echo "ENOSPC: $((sz >> 10)) KiB accepted with $((avail >> 10)) KiB available, reserve $((res >> 10)) KiB"
	sync
	echo 2 > /proc/sys/vm/drop_caches
	local bad=
	if [ $rc = 0 ] || ! echo "$out" | grep -q "No space left"; then
		bad="dd: exit $rc: $(echo "$out" | tail -1)"
	elif [ "$sz" -lt $((avail - (4 << 20))) ] || [ "$sz" -gt $((avail + res)) ]; then
		bad="$sz bytes accepted"
	elif [ "$(stat -c %s "$mnt/fill")" != "$sz" ]; then
		bad="size $sz, after drop_caches $(stat -c %s "$mnt/fill")"
	elif ! cmp -s -n "$sz" "$mnt/fill" /dev/zero; then
		bad="the file does not read back as written"
	elif [ "$(sed -n 's/^wb_lost_writes=//p' "$mnt/.zlfs/status")" != 0 ]; then
		bad="writeback lost writes"
	fi
	fusermount3 -u "$mnt" || bad="${bad:-unmount failed}"
	# the daemon lets go of the image after its final checkpoint
	local i
	for i in $(seq 2400); do
		pgrep -f "zlfs $img" >/dev/null || break
		sleep 0.1
	done
	out=$(fsck.f2fs --dry-run "$img" 2>&1 < /dev/null) || bad="${bad:-fsck.f2fs: $(echo "$out" | tail -2 | tr '\n' ' ')}"
	rm -f "$img" "$img.zst"
	[ -z "$bad" ] || { echo "$bad"; return 1; }
}

# ---------------------------------------------------------------- several devices
# nullb_make NAME: a zoned null_blk device made through configfs with the
# ZNS namespace's geometry (64 MiB zones, 62 MiB capacity, 14 open and
# active), 256 MiB in memory; prints its /dev path
nullb_make() {
	local d=/sys/kernel/config/nullb/$1 kv
	[ -d /sys/kernel/config/nullb ] || {
		modprobe configfs 2> /dev/null
		mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
		modprobe null_blk nr_devices=0 || return 1
	}
	mkdir "$d" || return 1
	for kv in size=256 blocksize=4096 memory_backed=1 zoned=1 zone_size=64 zone_capacity=62 \
		  zone_nr_conv=0 zone_max_open=14 zone_max_active=14 power=1; do
		echo "${kv#*=}" > "$d/${kv%%=*}" || { echo "null_blk $1: ${kv%%=*} refused"; return 1; }
	done
	# named after the configfs directory (Linux 5.19 on), nullbINDEX before
	if [ -e "/sys/block/$1" ]; then echo "/dev/$1"; else echo "/dev/nullb$(cat "$d/index")"; fi
}

# multi: a volume of five devices: the conventional namespace (metadata),
# the ZNS namespace and three zoned null_blk devices
multi() {
	local nb=() d t="five devices" i out
	for i in 1 2 3; do
		d=$(nullb_make "zlfsm$i") || { fail "zoned null_blk device $i through configfs" "$d"; return; }
		nb+=("$d")
	done
	udevadm settle 2> /dev/null
	for d in "${nb[@]}"; do [ -b "$d" ] || { fail "null_blk devices ($t)" "no $d"; return; }; done
	echo "$t: $meta (conventional), $zns (ZNS), ${nb[*]} (null_blk): $(for d in "$zns" "${nb[@]}"; do
		echo -n "$(cat "/sys/block/${d#/dev/}/queue/nr_zones") "; done)zones"
	local vdevs="$meta $zns ${nb[*]}"
	local mk=("$meta" -c "$zns" -c "${nb[0]}" -c "${nb[1]}" -c "${nb[2]}")
	# the volume test, one mode (the ZNS + metadata volume above runs both)
	vol_modes=nolock volume "$t" "$meta" "${mk[@]}"
	# the logs spread: on a fresh volume the six logs write to the four zoned
	# devices (the first holds only metadata), and still do after 320 MiB of
	# data moved the data log on five times (to the device with the most free
	# sections among those with the fewest other logs: the ZNS namespace)
	"$build/mkfs/mkfs.zlfs" -f "${mk[@]}" > /dev/null || { fail "mkfs.zlfs ($t)"; return; }
	"$build/fs/zlfs" "$meta" "$mnt" || { fail "mount ($t, spread)"; return; }
	out=$(grep -c '^device[1-4]_logs=[a-z]' "$mnt/.zlfs/status")
	if [ "$out" = 4 ] && big_files "$mnt" && sync -f "$mnt" &&
		[ "$(grep -c '^device[1-4]_logs=[a-z]' "$mnt/.zlfs/status")" = 4 ]; then
		ok "the logs spread over the zoned devices ($t: $(grep -E '^device[0-9]_(logs|valid_blocks)=' "$mnt/.zlfs/status" | tr '\n' ' '))"
	else
		fail "the logs spread over the devices ($t)" "$(grep -E '^device' "$mnt/.zlfs/status" | tr '\n' ' ')"
	fi
	zlfs_umount "$mnt" "$meta" || fail "unmount ($t, spread)"
	multi_kernel "$t" "${mk[@]}"
}

# fsck_known NAME DEV: fsck.zlfs -f -n finds nothing, and fsck.f2fs nothing
# but the free segment count of a mkfs.f2fs multi-device volume on a zone
# capacity below the zone size, which f2fs-tools 1.15 counts unlike the
# kernel's checkpoint (on the kernel's own volume before zlfs touched it)
fsck_known() {
	local out bad
	out=$(fsck.f2fs --dry-run "$2" 2>&1 < /dev/null)
	bad=$(echo "$out" | grep -E '\[Fail\]|\[FAIL\]|\[ASSERT\]' | grep -v 'free segment_count matched with CP')
	if [ -n "$bad" ]; then
		echo "$bad" | head
		fail "fsck.f2fs, its free segment count aside ($1)"
	else
		ok "fsck.f2fs, its free segment count aside ($1)"
	fi
	if out=$("$build/fsck/fsck.zlfs" -f -n "$2" 2>&1 < /dev/null); then
		ok "fsck.zlfs ($1)"
	else
		echo "$out" | head -15
		fail "fsck.zlfs ($1)"
	fi
}

# multi_kernel NAME DEVS...: mkfs.f2fs makes the volume of the same devices;
# the kernel's f2fs writes a tree, zlfs reads it back identical and writes,
# the kernel reads zlfs's files and the kernel log stays clean
multi_kernel() {
	local t="$1, made by mkfs.f2fs" dev=$2 src=/tmp/mtree
	shift
	# mkfs.f2fs -c DEV... FIRST: the first device last
	local args=() first=$1
	shift
	while [ $# -ge 2 ]; do args+=(-c "$2"); shift 2; done
	mkfs.f2fs -q -f -m "${args[@]}" "$first" > /tmp/mkfs-multi.log 2>&1 ||
		{ fail "mkfs.f2fs ($t)" "$(tail -2 /tmp/mkfs-multi.log)"; return; }
	rm -rf "$src" && mkdir -p "$src/d"
	cp -a /usr/share/doc/bash /usr/lib/os-release "$src" 2> /dev/null
	head -c 96M /tmp/pool > "$src/big" && for i in $(seq 200); do echo "$i" > "$src/d/f$i"; done
	klog_mark "$t"
	if ! kernel_mount "$dev"; then
		fail "kernel f2fs mounts ($t)" "$(klog | tail -3 | tr '\n' ' ')"
		return
	fi
	if cp -a "$src" "$mnt/tree" && sync -f "$mnt"; then
		ok "kernel f2fs writes a tree ($t)"
	else
		fail "kernel f2fs writes a tree ($t)"
	fi
	kernel_umount || { fail "kernel unmount ($t)"; return; }
	klog_check "$t, kernel-made" strict
	fsck_known "$t, kernel-made" "$dev"
	"$build/fs/zlfs" "$dev" "$mnt" || { fail "zlfs mounts it ($t)"; return; }
	ok "zlfs mounts it ($t: $(sed -n 's/^devices=//p' "$mnt/.zlfs/status") devices)"
	zlfs_on_kernel_tree "$t" "$src" 64M /tmp/pool
	zlfs_umount "$mnt" "$dev" || fail "unmount ($t)"
	fsck_known "$t, after zlfs" "$dev"
	klog_mark "$t, after zlfs"
	if kernel_mount "$dev"; then
		check "kernel reads what zlfs wrote ($t)" kernel_sees_zlfs "$src"
		kernel_umount || fail "kernel unmount ($t, after zlfs)"
	else
		fail "kernel mounts what zlfs wrote ($t)" "$(klog | tail -3 | tr '\n' ' ')"
	fi
	klog_check "$t, after zlfs" strict
}

# ---------------------------------------------------------------- which parts
parts="volume gc kernel features compress crash enospc multi" devs="nullblk zns" modes="nolock zwl"
only=" $(echo "${ZLFS_VM_FS_ONLY:-}" | tr ',' ' ' | xargs) "
for k in $only; do
	case " $parts $devs $modes " in
	*" $k "*) ;;
	*) echo "vm-test: ZLFS_VM_FS_ONLY key '$k' FAIL (keys: $parts $devs $modes)"; exit 1 ;;
	esac
done
[ "$only" = "  " ] || echo "ZLFS_VM_FS_ONLY:$only"
# sel GROUP KEY: does KEY run? Yes when the filter names it or no key of GROUP.
sel() {
	local k
	for k in $1; do
		case $only in *" $k "*)
			case $only in *" $2 "*) return 0 ;; *) return 1 ;; esac ;;
		esac
	done
	return 0
}

mkdir -p "$mnt" "$ref"
# (on an emulated image, no device: in the ZNS VM, whose tests take less time)
if sel "$parts" enospc && sel "$devs" zns; then
	check "ENOSPC from write(2) under the writeback cache, nothing lost (an emulated image)" enospc_wb
fi
if sel "$devs" nullblk; then
	echo "/dev/nullb0: $(cat /sys/block/nullb0/queue/nr_zones) zones, $(cat /sys/block/nullb0/queue/zoned)"
	if sel "$parts" volume; then volume "zoned null_blk" /dev/nullb0 /dev/nullb0; fi
	if sel "$parts" gc; then random=1 gc_load "zoned null_blk" /dev/nullb0 80 4 /dev/nullb0; fi
	if sel "$parts" kernel; then kernel_f2fs_m /dev/nullb0; fi
	if sel "$parts" features; then features /dev/nullb0; fi
	# two algorithms here, the other two on ZNS (the null_blk VM is the longer)
	if sel "$parts" compress; then compr_algs="lzo lz4" compress /dev/nullb0; fi
	if sel "$parts" crash; then crash "zoned null_blk" /dev/nullb0 /dev/nullb0; fi
fi
if sel "$devs" zns && { sel "$parts" volume || sel "$parts" gc || sel "$parts" crash ||
			 sel "$parts" compress || sel "$parts" multi; }; then
	if [ -z "$zns" ] || [ -z "$meta" ]; then
		fail "ZNS and conventional NVMe namespaces present" "zns='$zns' meta='$meta'"
	else
		echo "$zns: $(cat /sys/block/${zns#/dev/}/queue/nr_zones) zones, metadata on $meta"
		if sel "$parts" volume; then volume "ZNS + metadata namespace" "$meta" -c "$zns" "$meta"; fi
		if sel "$parts" gc; then gc_load "ZNS + metadata namespace" "$meta" 60 2 -c "$zns" "$meta"; fi
		if sel "$parts" crash; then crash "ZNS + metadata namespace" "$meta" -c "$zns" "$meta"; fi
		# (the volumes made by mkfs.zlfs: on a mkfs.f2fs -c volume of ZNS, fsck.f2fs
		# 1.15 counts free segments unlike the kernel's own checkpoint)
		if sel "$parts" compress; then
			compr_algs="zstd lzo-rle" compr_mkfs=zlfs compress "$meta" -c "$zns"
		fi
		if sel "$parts" multi; then multi; fi
	fi
fi
echo "vm-test: all done"
exit $failed
