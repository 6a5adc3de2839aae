#!/bin/bash
# Run a test script as root inside a QEMU VM that has real zoned block devices:
#   /dev/nvme0n1  QEMU NVMe ZNS namespace: 64 MiB zones, 62 MiB capacity,
#                 14 open / 14 active zones, 4 KiB blocks, 4 GiB
#   /dev/nvme0n2  a conventional namespace on the same controller, 256 MiB:
#                 the metadata device of a zlfs volume on the ZNS namespace
#   /dev/nullb0   zoned null_blk (parameters: ZLFS_VM_NULLBLK)
# The guest runs Debian's stock kernel on the host's own /usr, /etc, /opt, so
# binaries built on the host run there unchanged.
#
# usage: tests/vm/run-vm.sh GUEST_SCRIPT [ARGS...]
#
# GUEST_SCRIPT runs under bash with ARGS, as root, in the work directory.
# It sees these variables:
#   ZLFS_VM=1
#   ZLFS_REPO        repository root, same path as on the host; read-only
#                    unless ZLFS_VM_REPO_RW=1
#   ZLFS_BUILD       build directory (host's $ZLFS_BUILD, default $ZLFS_REPO/build)
#   ZLFS_VM_WORKDIR  the work directory (read-write, same path as on the host)
#   ZLFS_VM_SCRIPT   path of the script itself
#   ZLFS_VM_STALL    the host's stall limit (below), 0 when off
# A script inside the repository runs in place (so "$(dirname "$0")" works);
# one outside is copied into the work directory first.
#
# Exit status: the script's own, 77 included (meson's "skipped"). 124 if the
# VM was killed for making no progress or for reaching the hard time limit,
# 125 if the VM could not be started or recorded no status.
#
# Time limits: a loaded build machine can make a run several times slower
# than usual, so the limit is on time without progress, not on the run's
# length. Progress is the guest's output (out.log, what the script prints)
# growing. A C program's stdout to a file is block-buffered and $(...)
# holds its output back, so the guest's run.sh adds a "vm-progress:" line
# every ZLFS_VM_STALL/4 s (at most 30 s) in which the guest did work (1 s
# of busy CPU or any block I/O); a guest that is stuck and idle stays
# silent and is killed after ZLFS_VM_STALL s. A guest that is stuck but
# spinning is only stopped by the hard limit, ZLFS_VM_TIMEOUT.
#
# Environment (all optional):
#   ZLFS_VM_CACHE     kernel/initramfs cache (/var/cache/zlfs-vm); setup.sh
#                     is run when it is missing or stale
#   ZLFS_VM_STALL     seconds without guest output before the VM is killed
#                     (300; checked every 5 s; 0: no limit)
#   ZLFS_VM_TIMEOUT   hard limit on the whole run in seconds, a last resort
#                     against a guest busy without end (5400)
#   ZLFS_VM_MEM       guest memory in MiB (3072)
#   ZLFS_VM_SMP       vCPUs (2)
#   ZLFS_VM_ZNS_SIZE  size of the sparse ZNS backing file (4G)
#   ZLFS_VM_NULLBLK   null_blk parameters, comma-separated; "none" for no null_blk
#   ZLFS_VM_BIND      more host paths (space-separated) to expose read-only
#   ZLFS_VM_PASSENV   names of host variables to pass into the guest
#   ZLFS_VM_REPO_RW   1: the repository is writable from the guest
#   ZLFS_VM_WORKDIR   use this work directory (created if needed, not deleted),
#                     e.g. to hand the guest files prepared beforehand
#   ZLFS_VM_KEEP      1: keep the work directory (with zns.img) afterwards
#   ZLFS_VM_VERBOSE   1: also stream the guest console (kernel, /init)
#   ZLFS_VM_APPEND    extra kernel command line
#   ZLFS_VM_SHELL     1: interactive shell on this terminal instead of the script
set -eu

here=$(cd "$(dirname "$0")" && pwd -P)
say() { echo "run-vm: $*" >&2; }
die() { echo "run-vm: error: $*" >&2; exit 125; }

[ $# -ge 1 ] || { sed -n '2,/^set -eu/{/^set -eu/d; s/^# \{0,1\}//; p}' "$0" >&2; exit 2; }
script=$1
shift
[ -f "$script" ] || die "no such guest script: $script"
script=$(realpath "$script")

cache=${ZLFS_VM_CACHE:-/var/cache/zlfs-vm}
repo=$(realpath "${ZLFS_REPO:-$here/../..}")
build=$(realpath -m "${ZLFS_BUILD:-$repo/build}")
tmo=${ZLFS_VM_TIMEOUT:-5400}
stall=${ZLFS_VM_STALL:-300}
case $stall in '' | *[!0-9]*) die "ZLFS_VM_STALL must be a number of seconds: $stall" ;; esac
nullblk=${ZLFS_VM_NULLBLK:-zoned=1,zone_size=64,gb=1,memory_backed=1,zone_max_open=14,zone_max_active=14,bs=4096}
[ "$nullblk" = none ] && nullblk=

# ---------------------------------------------------------------- kernel
# The initramfs key must match what setup.sh computes; a mismatch means
# init or setup.sh changed since the image was built.
key=$(cat "$here/init" "$here/setup.sh" | sha256sum | cut -d' ' -f1)
kdir=$cache/current
if [ ! -f "$kdir/initrd.gz" ] || [ "$(cat "$kdir/initrd.key" 2>/dev/null)" != "$key" ] ||
	{ [ ! -f "$kdir/vmlinux" ] && [ ! -f "$kdir/vmlinuz" ]; }; then
	say "preparing $cache (tests/vm/setup.sh)"
	bash "$here/setup.sh" "$cache" >&2 || die "setup.sh failed"
fi
kdir=$(realpath "$cache/current")
kernel=$kdir/vmlinux
[ -f "$kernel" ] || kernel=$kdir/vmlinuz
kmods=$kdir/tree/lib/modules/$(basename "$kdir")
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing (run tests/vm/setup.sh)"

# ---------------------------------------------------------------- work dir
if [ -n "${ZLFS_VM_WORKDIR:-}" ]; then
	mkdir -p "$ZLFS_VM_WORKDIR"
	work=$(realpath "$ZLFS_VM_WORKDIR")
	own_work=
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/zlfs-vm.XXXXXX")
	work=$(realpath "$work")
	own_work=1
fi
img=$work/zns.img
meta=$work/meta.img
qpid='' tpid='' wpid=''
# shellcheck disable=SC2317 # reached through the trap
cleanup() {
	# timeout passes the signal on to QEMU.
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null
	[ -n "$tpid" ] && kill "$tpid" 2>/dev/null
	[ -n "$wpid" ] && kill "$wpid" 2>/dev/null
	if [ "${ZLFS_VM_KEEP:-0}" = 1 ]; then
		say "kept $work"
	elif [ -n "$own_work" ]; then
		rm -rf "$work"
	else
		rm -f "$img" "$meta"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Guest paths travel on the kernel command line, split at blanks and commas.
binds=
for p in $build ${ZLFS_VM_BIND:-}; do
	[ -e "$p" ] || { [ "$p" = "$build" ] && continue; die "ZLFS_VM_BIND: no such path: $p"; }
	p=$(realpath "$p")
	case $p/ in "$repo"/* | "$work"/*) continue ;; esac # visible already
	binds=${binds:+$binds,}$p
done
for p in "$repo" "$work" "$kmods" "$script" $(echo "$binds" | tr ',' ' '); do
	case $p in *[[:space:],]*) die "path unusable in the guest (blank or comma): $p" ;; esac
done

case $script in
"$repo"/* | "$work"/*) guest_script=$script ;;
*) guest_script=$work/guest.sh; cp "$script" "$guest_script" ;;
esac

# The guest's run.sh: fixed text; the variable parts are in env and args,
# written with quoting that survives any argument.
: > "$work/args"
[ $# -eq 0 ] || printf '%s\0' "$@" > "$work/args"   # printf would emit one empty one
{
	printf 'export ZLFS_VM=1\n'
	printf 'export ZLFS_REPO=%q\n' "$repo"
	printf 'export ZLFS_BUILD=%q\n' "$build"
	printf 'export ZLFS_VM_WORKDIR=%q\n' "$work"
	printf 'export ZLFS_VM_SCRIPT=%q\n' "$guest_script"
	printf 'export ZLFS_VM_STALL=%q\n' "$stall"
	for v in ${ZLFS_VM_PASSENV:-}; do
		if [ -n "${!v+set}" ]; then printf 'export %s=%q\n' "$v" "${!v}"; fi
	done
} > "$work/env"
cat > "$work/run.sh" <<'EOF'
# Generated by tests/vm/run-vm.sh; /init runs it in the work directory.
set -eu
. ./env
args=()
[ -s ./args ] && mapfile -d '' -t args < ./args

# Heartbeat for the host's stall watchdog, which watches out.log (this
# script's stdout): a step may work for minutes without printing. A line
# is printed only when the guest did work since the last one, at least 1 s
# of busy CPU (USER_HZ is 100) or any block I/O, so that a guest stuck
# idle (a deadlock, a lost request) stays silent and the host stops it.
# Builtins only, apart from sleep: the loop itself must not look busy.
every=30
[ "$ZLFS_VM_STALL" -gt 0 ] && [ $((ZLFS_VM_STALL / 4)) -lt $every ] && every=$((ZLFS_VM_STALL / 4))
[ $every -ge 1 ] || every=1
(
	set +e
	sample() { # sets cpu (busy ticks) and ios (block I/Os completed)
		local us ni sy irq si rest f r w
		read -r _ us ni sy _ _ irq si rest < /proc/stat
		cpu=$((us + ni + sy + irq + si)) ios=0
		for f in /sys/block/*/stat; do
			read -r r _ _ _ w rest < "$f" && ios=$((ios + r + w))
		done
	}
	# The sleep is killed with the loop: left behind it would hold the work
	# share (its current directory) busy when /init unmounts it.
	sp=
	trap '[ -n "$sp" ] && kill "$sp" 2>/dev/null; exit 0' TERM
	sample
	while :; do
		sleep "$every" > /dev/null 2>&1 &
		sp=$!
		wait "$sp"
		sp=
		cpu0=$cpu ios0=$ios
		sample
		if [ $((cpu - cpu0)) -ge 100 ] || [ "$ios" != "$ios0" ]; then
			read -r up rest < /proc/uptime
			d=$((cpu - cpu0))
			echo "vm-progress: ${up%.*} s up; in the last $every s" \
				"$((d / 100)).$((d % 100 / 10)) s of busy CPU, $((ios - ios0)) block I/Os"
		fi
	done
) < /dev/null &
hb=$!
rc=0
bash "$ZLFS_VM_SCRIPT" "${args[@]}" || rc=$?
kill "$hb" 2>/dev/null || true
wait "$hb" || true
exit "$rc"
EOF
rm -f "$work/rc" "$work/stalled"
: > "$work/out.log"
: > "$work/console.log"

# Sparse: only the zones a test writes take host disk space.
rm -f "$img" "$meta"
truncate -s "${ZLFS_VM_ZNS_SIZE:-4G}" "$img"
truncate -s 256M "$meta"

# ---------------------------------------------------------------- boot
append="console=ttyS0 panic=-1 quiet loglevel=4 zlfs.work=$work zlfs.repo=$repo zlfs.kmods=$kmods"
[ "${ZLFS_VM_REPO_RW:-0}" = 1 ] && append="$append zlfs.repo_rw=1"
[ -n "$binds" ] && append="$append zlfs.bind=$binds"
[ -n "$nullblk" ] && append="$append zlfs.nullblk=$nullblk"
[ "${ZLFS_VM_SHELL:-0}" = 1 ] && append="$append zlfs.shell=1"
append="$append ${ZLFS_VM_APPEND:-}"

repo_ro=,readonly=on
[ "${ZLFS_VM_REPO_RW:-0}" = 1 ] && repo_ro=
zns=zoned=true,zoned.zone_size=64M,zoned.zone_capacity=62M,zoned.max_open=14,zoned.max_active=14
# shellcheck disable=SC2054 # the commas belong to QEMU option values
qemu=(
	qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
	# No KVM on the build machines: full emulation, all CPU features.
	-accel tcg -cpu max -smp "${ZLFS_VM_SMP:-2}" -m "${ZLFS_VM_MEM:-3072}"
	-kernel "$kernel" -initrd "$kdir/initrd.gz" -append "$append"
	-drive "file=$img,id=zns,format=raw,if=none"
	-device nvme,serial=zlfszns0,id=nvme0
	-device "nvme-ns,drive=zns,bus=nvme0,nsid=1,logical_block_size=4096,physical_block_size=4096,$zns"
	-drive "file=$meta,id=meta,format=raw,if=none"
	-device "nvme-ns,drive=meta,bus=nvme0,nsid=2,logical_block_size=4096,physical_block_size=4096"
	# security_model=none: files keep their host owners and modes, which is
	# what running host binaries needs (QEMU runs as root here).
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap
	-virtfs "local,path=$repo,mount_tag=repo,security_model=none,multidevs=remap$repo_ro"
	-virtfs "local,path=$work,mount_tag=work,security_model=none,multidevs=remap"
)

start=$(date +%s.%N)
if [ "${ZLFS_VM_SHELL:-0}" = 1 ]; then
	"${qemu[@]}" -serial mon:stdio
	exit 0
fi

# The hard limit: timeout kills QEMU after $tmo s whatever happens.
timeout -k 10 "$tmo" "${qemu[@]}" -serial "file:$work/console.log" < /dev/null &
qpid=$!
# The stall watchdog: stop QEMU (through timeout, which passes the signal
# on and still sends KILL 10 s later) when out.log has not grown for
# $stall s, and leave a note for the verdict below. Only the script's
# output counts, not the kernel console: a stuck kernel keeps printing
# there (soft lockup, hung task and RCU stall reports).
if [ "$stall" -gt 0 ]; then
	(
		# As in run.sh: no sleep left behind when this loop is stopped.
		sp=
		trap '[ -n "$sp" ] && kill "$sp" 2>/dev/null; exit 0' TERM
		last=-1 since=$SECONDS
		while kill -0 "$qpid" 2>/dev/null; do
			sleep 5 &
			sp=$!
			wait "$sp"
			sp=
			size=$(stat -c %s "$work/out.log" 2>/dev/null) || size=0
			if [ "$size" != "$last" ]; then
				last=$size since=$SECONDS
			elif [ $((SECONDS - since)) -ge "$stall" ]; then
				echo "$((SECONDS - since))" > "$work/stalled"
				kill "$qpid" 2>/dev/null
				break
			fi
		done
	) < /dev/null > /dev/null 2>&1 &
	wpid=$!
fi
# Follow the guest's output while it runs (the work share has no page cache
# in the guest, so the host sees each write); tail ends shortly after QEMU.
follow=("$work/out.log")
[ "${ZLFS_VM_VERBOSE:-0}" = 1 ] && follow+=("$work/console.log")
tail -q -s 0.3 -n +1 -F --pid="$qpid" "${follow[@]}" 2>/dev/null &
tpid=$!
qrc=0
wait "$qpid" || qrc=$?
qpid=
wait "$tpid" || true
tpid=
if [ -n "$wpid" ]; then
	kill "$wpid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	wpid=
fi
secs=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')

console_tail() {
	say "last lines of the guest console ($work/console.log):"
	tail -n 40 "$work/console.log" 2>/dev/null | sed 's/^/  | /' >&2 || true
}
if [ -s "$work/stalled" ]; then
	say "no progress for $(cat "$work/stalled") s: the guest printed nothing" \
		"(ZLFS_VM_STALL=$stall); VM killed after ${secs}s"
	say "last lines of the guest's output ($work/out.log):"
	tail -n 10 "$work/out.log" 2>/dev/null | sed 's/^/  | /' >&2 || true
	console_tail
	exit 124
fi
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	say "timed out after ${tmo}s (the hard limit, ZLFS_VM_TIMEOUT)"
	console_tail
	exit 124
fi
if [ ! -s "$work/rc" ]; then
	say "VM ended (qemu status $qrc, ${secs}s) without recording the script's status"
	console_tail
	exit 125
fi
rc=$(cat "$work/rc")
say "guest script exited with $rc after ${secs}s"
[ "$rc" = 0 ] || [ "$rc" = 77 ] || console_tail
exit "$rc"
