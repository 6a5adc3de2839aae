#!/bin/bash
# bench/fuse-speed.sh BUILD_DIR [ROUNDS] [NFILES] - zlfs through FUSE side by
# side with the FUSE floor, fuse2fs and the kernel's ext4: sequential
# bandwidth, metadata operations on NFILES empty files with 1, 2 and 4
# threads, and the FUSE requests each operation costs.  Run as root (it
# mounts, sets up a loop device, drops the kernel's caches):
#
#   bash bench/fuse-speed.sh build            # 3 rounds, 100,000 files
#   bash bench/fuse-speed.sh build 1 5000     # a quick look, a few minutes
#
# Environment: FUSE_SPEED_DIR (where the disk images go, default /var/tmp;
# must not be tmpfs), FUSE_SPEED_TFILES (files of each thread-scaling pass,
# default NFILES/10, or NFILES when that is under 400), FUSE_SPEED_BATCH
# (files between cache drops, default 5000, a multiple of 100),
# FUSE_SPEED_COUNT (files of the request-counting pass, default 1000),
# FUSE_SPEED_TIMEOUT (seconds a phase may take before it counts as failed,
# default 1200), FUSE_SPEED_FS (a subset of "zdisk zshm floor floorx
# fuse2fs ext4", for trying the script out).
#
# Filesystems, each on a fresh filesystem for every run (mkfs, or an empty
# directory for the floor):
#   zdisk   zlfs, default options, on an emulated zoned image in
#           FUSE_SPEED_DIR (zlfs-zdev create --thick: 8 GiB, 64 MiB zones, 8
#           conventional, every block written when the image is made, so the
#           host allocates nothing during the runs); mkfs.zlfs per run.
#   zshm    the same on the same kind of image in /dev/shm (no disk below),
#           made for each of its runs and removed after it (8 GiB in tmpfs
#           make every full drop_caches a second slower for everyone).
#   floor   libfuse's example passthrough_ll, compiled here from
#           /usr/share/doc/libfuse3-dev/examples/passthrough_ll.c, with its
#           defaults (cache=auto: 1 s entry and attr timeouts, no writeback
#           cache, multithreaded loop) over an empty directory in /dev/shm
#           (tmpfs).  A FUSE filesystem that does nothing but forward each
#           request to tmpfs: what FUSE itself costs.
#   floorx  the same passthrough_ll with the features zlfs has and its
#           defaults lack: -o writeback (the kernel's writeback cache),
#           xattr (getxattr answered, not ENOSYS once), default_permissions
#           (the kernel checks permissions, asking for attributes it lacks).
#           These cost round trips of their own: ls -l's two GETXATTRs per
#           file, a GETATTR of the parent and a SETATTR of the ctime per
#           unlink, a GETATTR per create.  What FUSE costs a filesystem
#           that keeps xattrs and enforces permissions.
#   fuse2fs fuse2fs (e2fsprogs, libfuse 2; installed with apt-get when
#           missing) as root with its default options, on an 8 GiB ext4
#           image file in FUSE_SPEED_DIR.
#   ext4    the kernel's ext4 (defaults: data=ordered, barriers) on a loop
#           device (buffered) over that same image file.
# The ext4 image is written in full once (dd), and mkfs.ext4 runs with
# nodiscard, lazy_itable_init=0 and lazy_journal_init=0, so neither ext4
# allocates host blocks or initialises tables in the timed parts, as zlfs's
# thick image does not.
#
# Workloads, per run, in this order (bench/meta-bench.c does each and
# prints its rate; see its header for the exact system calls):
#   seq write  1 GiB in 1 MiB buffered write(2)s into a new file, fsync,
#              close: MB/s (10^6 bytes) from open to close.
#   seq read   sync, drop caches (echo 3 > /proc/sys/vm/drop_caches), read
#              the file back in 1 MiB reads (contents checked): MB/s.
#   then the main pass, one thread, NFILES files in directories of 100:
#   create     mkdir of each directory + open(O_CREAT|O_EXCL) and close of
#              each file (empty files, no data): files/s.
#   stat       lstat of every file: files/s.
#   ls -l cold `ls -lR` over the tree, 50 directories (5,000 files) per ls,
#              caches dropped before each (the first time with sync and 3,
#              then 2, as below): files/s, with the time of the ls runs only.
#   unlink     unlink of every file and rmdir of each directory: files/s.
#   then the thread-scaling passes: create, stat and unlink as above with
#   T = 1, 2 and 4 threads, FUSE_SPEED_TFILES files in all (TFILES/T per
#   thread, each thread in its own directories), a tree of its own per T;
#   the scaling ratio is rate(T) / rate(1) of this same size.  TFILES is a
#   tenth of NFILES by default to keep a default run within its time: on
#   this 2-core machine, shared with test suites, the main pass alone takes
#   about ten minutes per round (zlfs and fuse2fs create and unlink a few
#   thousand files a second).  With TFILES = NFILES the main pass serves
#   as the 1-thread run.
# Every metadata phase starts cold (sync, echo 3 > drop_caches, untimed),
# and the dentries and inodes are dropped again after every
# FUSE_SPEED_BATCH files (echo 2 > drop_caches, untimed; the threads meet at
# a barrier for it; 2 rather than 3 because dropping pages walks every
# cached page of every file, tmpfs included, a quarter of a second or more
# each time here, and the next batch's files have no pages cached anyway).
# This is for the floor: passthrough_ll keeps an open fd for every inode
# the kernel knows, and the hard limit on open files here is 20,000;
# dropping the inodes makes the kernel FORGET them, which closes those fds.
# Every filesystem gets the same drops, so all of them work from cold
# dentry and inode caches every 5,000 files.  The largest fd count of
# passthrough_ll seen at the drops is printed.
#
# Shared machines: one run at a time (a lock in /run/lock); the 1-minute
# load average at the start of each run and any drop_caches made by other
# processes during a run (/proc/vmstat drop_slab beyond our own) are
# printed, since either makes the figures noisier.
#
# Rounds are interleaved: round 1 runs every filesystem once, round 2 again,
# and so on; the tables give each filesystem's median (the mean of the two
# middle values for an even count), the per-round figures follow.  A phase
# that fails shows FAIL (and the phases that needed it "skip") in the table
# and in the list of failures at the end, and the script exits with status 1.
#
# Requests per operation: a separate pass before the rounds, on zdisk, the
# floor and fuse2fs, with the daemon in debug mode (-d, which zlfs passes
# on to libfuse like the others: libfuse prints one "unique: N, opcode:
# NAME (NUM)" line per request it receives), FUSE_SPEED_COUNT files:
# create, stat, ls -lR, rename (same directory) and unlink, each after
# sync + drop caches, with the log's lines counted between the phase's
# start and the moment the log has stopped growing (so the RELEASEs the
# kernel sends late are counted with the phase that caused them).
# Directory operations are included and divided by files; FORGET and
# BATCH_FORGET are listed but left out of the totals (eviction sends them,
# whoever caused it).  If zlfs's status file has "fuse_req OPCODE COUNT"
# lines, their per-operation differences are printed beside.
set -eu
export LC_ALL=C      # decimal points in $EPOCHREALTIME, awk and sort
B=${1:?usage: bash bench/fuse-speed.sh BUILD_DIR [ROUNDS] [NFILES]}
R=${2:-3}
N=${3:-100000}
TN=${FUSE_SPEED_TFILES:-$((N / 10 >= 400 ? N / 10 : N))}
BATCH=${FUSE_SPEED_BATCH:-5000}
NCOUNT=${FUSE_SPEED_COUNT:-1000}
PT=${FUSE_SPEED_TIMEOUT:-1200}
FSLIST=${FUSE_SPEED_FS:-zdisk zshm floor floorx fuse2fs ext4}
CMDLINE="bash bench/fuse-speed.sh $*"
T_START=$SECONDS

ZLFS=$B/fs/zlfs MKFS=$B/mkfs/mkfs.zlfs ZDEV=$B/fs/zlfs-zdev ZUMOUNT=$B/fs/zlfs-umount
MB=$B/bench/meta-bench
for x in "$ZLFS" "$MKFS" "$ZDEV" "$ZUMOUNT" "$MB"; do
	[ -x "$x" ] || { echo "no $x: build first (meson setup $B && ninja -C $B)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "run as root (it mounts and drops caches)" >&2; exit 1; }
# one run at a time: two would share the CPUs and drop each other's caches
LOCK=/run/lock/zlfs-fuse-speed.lock
exec 7>"$LOCK"
flock -n 7 || { echo "another bench/fuse-speed.sh is running (it holds $LOCK)" >&2; exit 1; }
for v in "$R" "$N" "$TN" "$BATCH" "$NCOUNT" "$PT"; do
	case $v in '' | *[!0-9]* | 0) echo "ROUNDS, NFILES and the FUSE_SPEED_* numbers must be positive numbers" >&2; exit 1 ;; esac
done
[ "$N" -ge 4 ] && [ "$TN" -ge 4 ] || { echo "NFILES and FUSE_SPEED_TFILES must be at least 4 (one per thread)" >&2; exit 1; }
[ $((BATCH % 100)) = 0 ] || { echo "FUSE_SPEED_BATCH must be a multiple of 100" >&2; exit 1; }
for x in mkfs.ext4 losetup fusermount3 mountpoint pkg-config cc timeout dd flock; do
	command -v $x >/dev/null || { echo "$x is needed" >&2; exit 1; }
done
PLL_SRC=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
[ -r "$PLL_SRC" ] || { echo "no $PLL_SRC (apt-get install libfuse3-dev)" >&2; exit 1; }
if ! command -v fuse2fs >/dev/null; then
	echo "fuse-speed.sh: installing fuse2fs" >&2
	apt-get install -y fuse2fs >/dev/null || { echo "apt-get install fuse2fs failed" >&2; exit 1; }
fi

# passthrough_ll holds an fd per inode the kernel knows: the soft limit up
# to the hard one, which must leave room for a batch of files
ulimit -n "$(ulimit -Hn)"
NOFILE=$(ulimit -n)
[ "$NOFILE" = unlimited ] || [ "$NOFILE" -gt $((BATCH + 2000)) ] ||
	{ echo "open files limit $NOFILE is too small for batches of $BATCH (FUSE_SPEED_BATCH)" >&2; exit 1; }

BASE=${FUSE_SPEED_DIR:-/var/tmp}
[ "$(stat -f -c %T "$BASE")" != tmpfs ] || { echo "$BASE is tmpfs: the images must be on a disk (FUSE_SPEED_DIR=...)" >&2; exit 1; }
[ "$(stat -f -c %T /dev/shm)" = tmpfs ] || { echo "/dev/shm is not tmpfs" >&2; exit 1; }
PID="" LOOP="" CUR="" CHILD="" DIR="" SHM="" MNT=""

# ---- mounting ----

# The script's own stdout and stderr: a trap runs with the redirections of
# the command it interrupted (run_bg ... 2>"$DIR/err"), so it goes back to these.
exec 8>&1 9>&2
cleanup() {
	set +e
	exec 1>&8 2>&9
	if [ -n "$CHILD" ]; then
		kill "$CHILD" 2>/dev/null
		wait "$CHILD" 2>/dev/null
	fi
	if [ -n "$MNT" ] && mountpoint -q "$MNT"; then
		case $CUR in
		ext4) umount "$MNT" || umount -l "$MNT" ;;
		*) fusermount3 -u "$MNT" || umount -l "$MNT" ;;
		esac
	fi
	if [ -n "$PID" ]; then
		# let it write its last checkpoint (zlfs) or close the image (fuse2fs)
		for ((i = 0; i < 100; i++)); do
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
	fi
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	[ -n "$DIR" ] && rm -rf "$DIR"
	[ -n "$SHM" ] && rm -rf "$SHM"
}
trap cleanup EXIT
trap 'echo "fuse-speed.sh: interrupted, cleaning up" >&9; exit 130' INT TERM HUP

DIR=$(mktemp -d "$BASE/zlfs-fuse-speed.XXXXXX")
SHM=$(mktemp -d /dev/shm/zlfs-fuse-speed.XXXXXX)
MNT=$DIR/mnt FLOOR=$SHM/floor PLL=$DIR/passthrough_ll
mkdir -p "$MNT"

# 3: clean pages, dentries and inodes; 2: dentries and inodes only.  Both
# count in /proc/vmstat's drop_slab, which tells our drops from those of
# other processes (a test suite's), which would chill a measured phase.
OURDROPS=0
drop() { echo "${1:-3}" >/proc/sys/vm/drop_caches; OURDROPS=$((OURDROPS + 1)); }
slab_drops() { awk '$1 == "drop_slab" { print $2 }' /proc/vmstat; }

# A measured command, in the background so that a signal reaches the trap
# at once (bash waits for a foreground command before running traps).
run_bg() {
	local rc=0
	"$@" &
	CHILD=$!
	wait "$CHILD" || rc=$?
	CHILD=""
	return $rc
}

wait_mounted() {  # LOG
	local i
	for ((i = 0; i < 200; i++)); do
		mountpoint -q "$MNT" && return 0
		[ -z "$PID" ] || kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "fuse-speed.sh: $CUR did not mount; its log $1:" >&2
	tail -20 "$1" >&2
	return 1
}

mount_fs() {  # NAME LOG [-d]
	local fs=$1 log=$2 dbg=${3:-}
	CUR=$fs
	case $fs in
	zdisk | zshm)
		local img=$DIR/zlfs.img
		if [ "$fs" = zshm ]; then
			img=$SHM/zlfs.img
			"$ZDEV" create "$img" --size 8G --zone-size 64M --conv-zones 8 --thick --force >"$log" 2>&1 ||
				{ cat "$log" >&2; return 1; }
		fi
		"$MKFS" -f "$img" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
		sync
		"$ZLFS" "$img" "$MNT" -f $dbg >"$log" 2>&1 &
		PID=$!
		;;
	floor | floorx)
		rm -rf "$FLOOR"
		mkdir "$FLOOR"
		local feat=""
		[ "$fs" = floorx ] && feat="-o writeback,xattr,default_permissions"
		"$PLL" -f $dbg $feat -o "source=$FLOOR" "$MNT" >"$log" 2>&1 &
		PID=$!
		;;
	fuse2fs | ext4)
		mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$DIR/ext4.img" >"$log" 2>&1 ||
			{ cat "$log" >&2; return 1; }
		sync
		if [ "$fs" = fuse2fs ]; then
			fuse2fs "$DIR/ext4.img" "$MNT" -f $dbg >"$log" 2>&1 &
			PID=$!
		else
			LOOP=$(losetup --find --show "$DIR/ext4.img")
			mount -t ext4 "$LOOP" "$MNT" 2>>"$log" || { cat "$log" >&2; return 1; }
		fi
		;;
	esac
	wait_mounted "$log"
}

umount_fs() {  # returns 1 when the unmount or the daemon failed
	local rc=0
	case $CUR in
	zdisk | zshm)
		# waits for the daemon's final checkpoint
		"$ZUMOUNT" "$MNT" || rc=1
		;;
	floor | floorx | fuse2fs) fusermount3 -u "$MNT" || rc=1 ;;
	ext4)
		umount "$MNT" || rc=1
		losetup -d "$LOOP" || rc=1
		LOOP=""
		;;
	esac
	if [ -n "$PID" ]; then
		wait "$PID" || { echo "fuse-speed.sh: the $CUR daemon exited with status $?" >&2; rc=1; }
		PID=""
	fi
	[ "$CUR" = floor ] || [ "$CUR" = floorx ] && rm -rf "$FLOOR"
	[ "$CUR" = zshm ] && rm -f "$SHM/zlfs.img" "$SHM/zlfs.img.zst"
	CUR=""
	return $rc
}

# ---- the measurements ----

declare -A VAL LABEL=(
	[zdisk]="zlfs, image on disk"
	[zshm]="zlfs, image in /dev/shm"
	[floor]="passthrough_ll on tmpfs (floor)"
	[floorx]="passthrough_ll on tmpfs with zlfs's features (floorx)"
	[fuse2fs]="fuse2fs, ext4 image on disk"
	[ext4]="kernel ext4, loop on disk"
)
declare -A MAXFD=() ZSTAT=()
LOADS=""             # the 1-minute load average when each run starts
FAILS=()
LAST=""

say() { printf "[%5d s] %s\n" $((SECONDS - T_START)) "$*" >&2; }
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

fail() {  # FS ROUND WHAT ERRFILE
	local msg
	msg=$(tail -3 "$4" 2>/dev/null | tr '\n' ' ')
	FAILS+=("$([ "$2" = 0 ] && echo "request-count pass" || echo "round $2"), ${LABEL[$1]}, $3: ${msg:-no message}")
	say "round $2 $1: $3 FAILED: $msg"
}

# phase FS ROUND KEY FIELD meta-bench-ARGS...: the rate in VAL[FS:KEY]
phase() {
	local fs=$1 r=$2 key=$3 fld=$4 rc=0 v
	shift 4
	run_bg timeout -k 10 "$PT" "$MB" "$@" >"$DIR/out" 2>"$DIR/err" || rc=$?
	LAST=$(tail -1 "$DIR/out" 2>/dev/null || true)
	v=$(field "$LAST" "$fld")
	if [ "$rc" != 0 ] || [ -z "$v" ]; then
		[ "$rc" = 124 ] && echo "timed out after $PT s" >>"$DIR/err"
		fail "$fs" "$r" "$key ($*)" "$DIR/err"
		VAL[$fs:$key]+=" FAIL"
		OURDROPS=-1000000     # unknown from here: no verdict on foreign drops
		return 1
	fi
	case $1 in
	create | stat | rename | unlink) OURDROPS=$((OURDROPS + 1 + $(field "$LAST" drops))) ;;
	read) OURDROPS=$((OURDROPS + 1)) ;;
	esac
	local fds
	fds=$(field "$LAST" max_fds)
	if [ -n "$fds" ] && [ "$fds" -gt "${MAXFD[$fs]:-0}" ]; then MAXFD[$fs]=$fds; fi
	VAL[$fs:$key]+=" $v"
	say "round $r $fs: $key $v ($LAST)"
}

fdcount() {  # the floor's open fds now, into MAXFD
	[ "$CUR" = floor ] || [ "$CUR" = floorx ] || return 0
	local n
	n=$(ls /proc/"$PID"/fd | wc -l)
	if [ "$n" -gt "${MAXFD[$CUR]:-0}" ]; then MAXFD[$CUR]=$n; fi
}

# ls -l cold of ROOT/t0 (made by create with one thread), 50 directories
# per ls run with the caches dropped before each; files/s of ls's time.
ls_phase() {  # FS ROUND ROOT FILES KEY
	local fs=$1 r=$2 root=$3 nf=$4 key=$5 ndirs=$((($4 + 99) / 100)) dpb=$((BATCH / 100))
	local k d t0 t1 us=0 files=0 args
	sync
	for ((k = 0; k < ndirs; k += dpb)); do
		fdcount
		if [ "$k" = 0 ]; then drop 3; else drop 2; fi
		args=()
		for ((d = k; d < k + dpb && d < ndirs; d++)); do args+=("$(printf "%s/t0/d%05d" "$root" "$d")"); done
		t0=$EPOCHREALTIME
		if ! run_bg timeout -k 10 "$PT" ls -lR "${args[@]}" >"$SHM/ls.out" 2>"$DIR/err"; then
			fail "$fs" "$r" "ls -lR" "$DIR/err"
			VAL[$fs:$key]+=" FAIL"
			return 1
		fi
		t1=$EPOCHREALTIME
		us=$((us + ${t1/./} - ${t0/./}))
		files=$((files + $(grep -c '^-' "$SHM/ls.out" || true)))
	done
	fdcount
	if [ "$files" != "$nf" ]; then
		echo "ls -lR listed $files files, expected $nf" >"$DIR/err"
		fail "$fs" "$r" "ls -lR" "$DIR/err"
		VAL[$fs:$key]+=" FAIL"
		return 1
	fi
	local v
	v=$(awk -v f="$files" -v us="$us" 'BEGIN { printf "%.1f", f / (us / 1e6) }')
	VAL[$fs:$key]+=" $v"
	say "round $r $fs: $key $v (files=$files secs=$(awk -v us="$us" 'BEGIN { print us / 1e6 }'))"
}

skip() {  # FS KEY...
	local fs=$1 k
	shift
	for k in "$@"; do VAL[$fs:$k]+=" skip"; done
}

MKEYS=(wr rd mcr mst mls mul)
TKEYS=(cr1 st1 ul1 cr2 st2 ul2 cr4 st4 ul4)
KEYS=("${MKEYS[@]}" "${TKEYS[@]}")

# create, stat, [ls -l,] unlink of FILES files by THREADS threads in MNT/NAME;
# the rates go to VAL[FS:cr KEY], [st KEY], [ls KEY], [ul KEY]
meta_pass() {  # FS ROUND THREADS FILES NAME KEY WITH-LS
	local fs=$1 r=$2 t=$3 nf=$4 root=$MNT/$5 k=$6 withls=$7
	local common=(--files "$nf" --threads "$t" --batch "$BATCH" "${watch[@]}") ok=1
	local c=cr$k s=st$k l=ls$k u=ul$k
	[ "$k" = m ] && c=mcr s=mst l=mls u=mul
	if ! mkdir "$root" 2>"$DIR/err"; then
		fail "$fs" "$r" "mkdir $root" "$DIR/err"
		VAL[$fs:$c]+=" FAIL"
		ok=0
	elif ! phase "$fs" "$r" "$c" ops_per_s create "$root" "${common[@]}"; then
		ok=0
	fi
	if [ $ok = 1 ]; then
		phase "$fs" "$r" "$s" ops_per_s stat "$root" "${common[@]}" || true
		if [ "$withls" = 1 ]; then ls_phase "$fs" "$r" "$root" "$nf" "$l" || true; fi
		phase "$fs" "$r" "$u" ops_per_s unlink "$root" "${common[@]}" || true
	else
		skip "$fs" "$s" "$u"
		if [ "$withls" = 1 ]; then skip "$fs" "$l"; fi
	fi
}

run_fs() {  # FS ROUND
	local fs=$1 r=$2 t watch=() k s0
	LOADS+=" $(cut -d' ' -f1 /proc/loadavg)"
	s0=$(slab_drops)
	OURDROPS=0
	if ! mount_fs "$fs" "$DIR/log.$fs.r$r"; then
		echo "see above" >"$DIR/err"
		fail "$fs" "$r" mount "$DIR/err"
		skip "$fs" "${KEYS[@]}"
		umount_fs 2>/dev/null || true
		return
	fi
	[ "$fs" = floor ] || [ "$fs" = floorx ] && watch=(--watch-pid "$PID")
	if phase "$fs" "$r" wr mb_per_s write "$MNT/seq"; then
		phase "$fs" "$r" rd mb_per_s read "$MNT/seq" || true
	else
		skip "$fs" rd
	fi
	rm -f "$MNT/seq" || true
	meta_pass "$fs" "$r" 1 "$N" main m 1
	for t in 1 2 4; do
		if [ "$t" = 1 ] && [ "$TN" = "$N" ]; then
			# the same work as the main pass: its figures serve
			for k in cr st ul; do VAL[$fs:${k}1]+=" $(echo "${VAL[$fs:m$k]}" | awk '{ print $NF }')"; done
			continue
		fi
		meta_pass "$fs" "$r" "$t" "$TN" "t$t" "$t" 0
	done
	if [ "$fs" = zdisk ] || [ "$fs" = zshm ]; then
		# whether GC or checkpoints had a hand in the figures
		local st
		st=$(cat "$MNT/.zlfs/status" 2>/dev/null | grep -E '^(checkpoints|fg_gc_runs|bg_gc_runs|gc_data_blocks_moved|gc_node_blocks_moved|zones_reset)=' | tr '\n' ' ')
		ZSTAT[$fs]+="round $r: ${st:-no status} | "
	fi
	if ! umount_fs; then
		echo "see the messages above; log $DIR/log.$fs.r$r" >"$DIR/err"
		fail "$fs" "$r" unmount "$DIR/err"
	fi
	foreign "round $r ${LABEL[$fs]}" "$s0"
}

FOREIGN=""
foreign() {  # WHAT DROP_SLAB-AT-START: note cache drops that were not ours
	local n
	[ "$OURDROPS" -ge 0 ] || return 0
	n=$(($(slab_drops) - $2 - OURDROPS))
	if [ "$n" -gt 0 ]; then
		FOREIGN+="${FOREIGN:+; }$1: $n"
		say "$1: $n cache drop(s) by other processes"
	fi
}

# ---- requests per operation ----

CFS=()
declare -A REQ=() ZREQ=()
settle() {  # wait until the debug log has not grown for 0.5 s
	local a b
	b=$(stat -c %s "$1")
	while :; do
		sleep 0.5
		a=$b
		b=$(stat -c %s "$1")
		[ "$a" = "$b" ] && break
	done
}
zlfs_reqs() {  # fuse_req lines of zlfs's status, if it has them
	grep '^fuse_req ' "$MNT/.zlfs/status" 2>/dev/null || true
}
count_fs() {  # FS
	local fs=$1 log=$DIR/debug.$fs.log root=$MNT/c ph a b s0
	s0=$(slab_drops)
	OURDROPS=0
	mount_fs "$fs" "$log" -d || { echo "see above" >"$DIR/err"; fail "$fs" 0 "mount -d" "$DIR/err"; umount_fs 2>/dev/null || true; return; }
	CFS+=("$fs")
	mkdir "$root"
	for ph in create stat ls rename unlink; do
		sync
		drop
		local zb="" za=""
		[ "$fs" = zdisk ] && zb=$(zlfs_reqs)
		settle "$log"
		a=$(wc -l <"$log")
		local rc=0
		case $ph in
		ls) run_bg ls -lR "$root/t0" >"$SHM/ls.out" 2>"$DIR/err" || rc=$? ;;
		unlink) run_bg "$MB" unlink "$root" --files "$NCOUNT" --renamed --no-cold >"$DIR/out" 2>"$DIR/err" || rc=$? ;;
		*) run_bg "$MB" "$ph" "$root" --files "$NCOUNT" --no-cold >"$DIR/out" 2>"$DIR/err" || rc=$? ;;
		esac
		settle "$log"
		b=$(wc -l <"$log")
		if [ "$rc" != 0 ]; then
			fail "$fs" 0 "request count $ph" "$DIR/err"
			REQ[$fs:$ph]=FAIL
			continue
		fi
		# per opcode, per file; libfuse 3.14 has no name for STATX (52)
		REQ[$fs:$ph]=$(sed -n "$((a + 1)),${b}p" "$log" |
			awk -v n="$NCOUNT" '/^unique: [0-9]+, opcode: / {
				op = $4; num = $5; gsub(/[()]/, "", num)
				if (op == "???") op = (num == 52 ? "STATX" : "op" num)
				c[op]++
				if (op != "FORGET" && op != "BATCH_FORGET") tot++ }
			END { printf "%.3f", tot / n
				for (k in c) printf " %s=%.4f", k, c[k] / n }')
		if [ "$fs" = zdisk ]; then
			za=$(zlfs_reqs)
			if [ -n "$za" ]; then
				ZREQ[$ph]=$( (echo "$zb" | sed 's/^/- /'; echo "$za" | sed 's/^/+ /') |
					awk -v n="$NCOUNT" 'NF == 4 { d[$3] += ($1 == "+" ? $4 : -$4) }
					END { for (k in d) if (d[k]) { printf " %s=%.4f", k, d[k] / n
						if (k != "FORGET" && k != "BATCH_FORGET") t += d[k] }
						printf " total=%.3f", t / n }')
			fi
		fi
	done
	rmdir "$root" 2>/dev/null || true
	umount_fs || { echo "log $log" >"$DIR/err"; fail "$fs" 0 "unmount after counting" "$DIR/err"; }
	foreign "request counts, ${LABEL[$fs]}" "$s0"
}

# ---- setup ----

echo "fuse-speed.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, kernel $(uname -r), disk directory $DIR" \
	"($(findmnt -no FSTYPE,SOURCE -T "$BASE")), $R round(s), $N files, open files $(ulimit -Sn)/$(ulimit -Hn)" >&2
cc -O2 -Wall -o "$PLL" "$PLL_SRC" $(pkg-config --cflags --libs fuse3) 2>"$DIR/cc.log" ||
	{ cat "$DIR/cc.log" >&2; echo "cannot build passthrough_ll" >&2; exit 1; }
for fs in $FSLIST; do
	case $fs in
	zdisk) "$ZDEV" create "$DIR/zlfs.img" --size 8G --zone-size 64M --conv-zones 8 --thick --force >/dev/null ;;
	zshm) ;;     # made for each of its runs: 8 GiB in tmpfs make every drop_caches 1 s slower
	fuse2fs | ext4)
		[ -e "$DIR/ext4.img" ] || dd if=/dev/zero of="$DIR/ext4.img" bs=1M count=8192 conv=fsync status=none ;;
	floor | floorx) ;;
	*) echo "unknown filesystem $fs (FUSE_SPEED_FS)" >&2; exit 1 ;;
	esac
done
sync
echo "fuse-speed.sh: images ready after $((SECONDS - T_START)) s" >&2

for fs in $FSLIST; do
	case $fs in zdisk | floor | floorx | fuse2fs) count_fs "$fs" ;; esac
done
echo "fuse-speed.sh: request counts done after $((SECONDS - T_START)) s" >&2

for ((r = 1; r <= R; r++)); do
	for fs in $FSLIST; do
		run_fs "$fs" "$r"
	done
	echo "fuse-speed.sh: round $r done after $((SECONDS - T_START)) s" >&2
done

# ---- the report ----

median() {
	tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -g |
		awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else if (NR) printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
# 12345.6 -> 12,346; anything else as it is
commas() {
	case $1 in
	'' | *[!0-9.]*) echo "$1" ;;
	*) printf "%.0f" "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta' ;;
	esac
}
declare -A MED=()
for fs in $FSLIST; do
	for k in "${KEYS[@]}"; do
		MED[$fs:$k]=$(echo "${VAL[$fs:$k]:-}" | median)
	done
done
# the median, marked when some rounds gave no number
cell() {  # FS KEY
	local v=${VAL[$1:$2]:-} m=${MED[$1:$2]}
	local bad
	bad=$(echo "$v" | tr ' ' '\n' | grep -cE '^(FAIL|skip)$' || true)
	if [ -z "$m" ]; then
		echo "$v" | grep -q FAIL && echo "FAIL" || echo "skip"
	elif [ "$bad" != 0 ]; then
		echo "$(commas "$m") ($bad of $R failed)"
	else
		commas "$m"
	fi
}
ratio() {  # A B: A/B of two numbers, or -
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2fx\n", a / b }'
}

echo
echo "\`$CMDLINE\` ($(date -u +%Y-%m-%d), $(nproc) cores, kernel $(uname -r), libfuse $(pkg-config --modversion fuse3)," \
	"$N files in directories of 100, caches dropped every $BATCH files, median of $R interleaved round(s)):"
echo
echo "| filesystem | seq write MB/s | seq read MB/s | create/s | stat/s | ls -l cold files/s | unlink/s |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for fs in $FSLIST; do
	printf "| %s | %s | %s | %s | %s | %s | %s |\n" "${LABEL[$fs]}" "$(cell "$fs" wr)" "$(cell "$fs" rd)" \
		"$(cell "$fs" mcr)" "$(cell "$fs" mst)" "$(cell "$fs" mls)" "$(cell "$fs" mul)"
done
echo
echo "Threads: $TN files in all (FUSE_SPEED_TFILES), split over T threads, each in its own directories" \
	"$([ "$TN" = "$N" ] && echo "(1T is the run above)" || echo "(a pass of its own for each T, 1T included)");" \
	"(x) = rate / 1-thread rate:"
echo
echo "| filesystem | create 1T | create 2T | create 4T | stat 1T | stat 2T | stat 4T | unlink 1T | unlink 2T | unlink 4T |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for fs in $FSLIST; do
	line="| ${LABEL[$fs]} |"
	for op in cr st ul; do
		line+=" $(cell "$fs" "${op}1") |"
		for t in 2 4; do
			line+=" $(cell "$fs" "$op$t") ($(ratio "${MED[$fs:$op$t]}" "${MED[$fs:${op}1]}")) |"
		done
	done
	echo "$line"
done
echo
echo "Per round (round 1 / round 2 / ...):"
echo
hdr="| metric |" sep="| --- |"
for fs in $FSLIST; do hdr+=" ${LABEL[$fs]} |"; sep+=" --- |"; done
echo "$hdr"
echo "$sep"
declare -A KLABEL=([wr]="seq write MB/s" [rd]="seq read MB/s" [mcr]="create/s" [mst]="stat/s"
	[mls]="ls -l cold files/s" [mul]="unlink/s" [cr1]="create/s 1T" [st1]="stat/s 1T" [ul1]="unlink/s 1T"
	[cr2]="create/s 2T" [st2]="stat/s 2T" [ul2]="unlink/s 2T"
	[cr4]="create/s 4T" [st4]="stat/s 4T" [ul4]="unlink/s 4T")
for k in "${KEYS[@]}"; do
	line="| ${KLABEL[$k]} |"
	for fs in $FSLIST; do
		rounds=""
		for v in ${VAL[$fs:$k]:-}; do rounds+="${rounds:+ / }$(commas "$v")"; done
		line+=" $rounds |"
	done
	echo "$line"
done

echo
echo "FUSE requests per operation (debug-mode pass, $NCOUNT files in directories of 100, each phase" \
	"after sync + drop caches; directory operations included; ls -l = ls -lR per file listed; FORGET and" \
	"BATCH_FORGET are in the breakdown below but not in these totals: they follow the eviction of" \
	"inodes, which cache drops, ours or other processes', cause as much as the operation does):"
echo
echo "| filesystem | create | stat | ls -l cold | rename | unlink |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
PHS=(create stat ls rename unlink)
for fs in "${CFS[@]}"; do
	line="| ${LABEL[$fs]} |"
	for ph in "${PHS[@]}"; do line+=" ${REQ[$fs:$ph]%% *} |"; done
	echo "$line"
done
echo
echo "By opcode (requests per file):"
echo
echo "| filesystem | operation | opcodes |"
echo "| --- | --- | --- |"
for fs in "${CFS[@]}"; do
	for ph in "${PHS[@]}"; do
		ops=$(echo "${REQ[$fs:$ph]}" | tr ' ' '\n' | tail -n +2 | sort -t= -k2 -gr |
			awk -F= '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, ($2 >= 0.1 ? sprintf("%.2f", $2) : sprintf("%.3f", $2)) }')
		echo "| ${LABEL[$fs]} | $ph | ${ops:-${REQ[$fs:$ph]}} |"
	done
done
if [ "${#ZREQ[@]}" != 0 ]; then
	echo
	echo "zlfs's own request counters (fuse_req lines of MNT/.zlfs/status, same pass, per file; total without forgets):"
	echo
	for ph in "${PHS[@]}"; do echo "- $ph:${ZREQ[$ph]:- none}"; done
elif [[ " ${CFS[*]} " == *" zdisk "* ]]; then
	echo
	echo "(zlfs's status file has no fuse_req lines: only the debug log was counted.)"
fi

echo
echo "Ratios of medians (rates: above 1 zlfs on disk is faster; requests: above 1 zlfs sends more):"
echo
echo "| ratio | seq write | seq read | create | stat | ls -l cold | unlink | create 1T | stat 1T | unlink 1T | create 2T | stat 2T | unlink 2T | create 4T | stat 4T | unlink 4T |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for other in floor floorx ext4; do
	line="| zlfs (disk) / ${LABEL[$other]} |"
	for k in "${KEYS[@]}"; do line+=" $(ratio "${MED[zdisk:$k]:-}" "${MED[$other:$k]:-}") |"; done
	echo "$line"
done
for other in floor floorx; do
	[[ " ${CFS[*]} " == *" zdisk "* && " ${CFS[*]} " == *" $other "* ]] || continue
	echo
	line="Requests per operation, zlfs / ${LABEL[$other]}:"
	for ph in "${PHS[@]}"; do
		a=${REQ[zdisk:$ph]%% *} b=${REQ[$other:$ph]%% *}
		[ "$a" = FAIL ] && a="" ; [ "$b" = FAIL ] && b=""
		line+=" $ph $(ratio "$a" "$b"),"
	done
	echo "${line%,}"
done

echo
echo "How: zlfs with its default options (writeback cache, readdirplus, nolock, gc=on) on a thick 8 GiB" \
	"zlfs-zdev image, 64 MiB zones, 8 conventional, in $BASE or /dev/shm, mkfs.zlfs per run." \
	"The floor is libfuse's example passthrough_ll ($PLL_SRC, built here with cc -O2) with its defaults" \
	"(cache=auto, timeout 1 s, no writeback cache) over an empty tmpfs directory; it keeps an open fd per" \
	"inode the kernel knows, so every metadata phase starts with sync + drop_caches 3 and drop_caches 2" \
	"(dentries and inodes: the kernel FORGETs them) follows every $BATCH files, for every filesystem alike," \
	"untimed; the floor's largest open-fd count seen was ${MAXFD[floor]:-not measured}, the other floor's" \
	"${MAXFD[floorx]:-not measured} (limit $NOFILE). The other floor is the same passthrough_ll with" \
	"-o writeback,xattr,default_permissions: zlfs's writeback cache, xattrs and kernel permission checks." \
	"fuse2fs $(dpkg-query -W -f '${Version}' fuse2fs 2>/dev/null) as root with its defaults (libfuse 2;" \
	"it adds kernel_cache,use_ino,attr_timeout=0,big_writes)" \
	"and kernel ext4 (loop device, buffered) on the same fully written 8 GiB image file in $BASE," \
	"mkfs.ext4 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 per run." \
	"create = mkdir per 100 files + open(O_CREAT|O_EXCL)+close of empty files; stat = lstat; ls -l cold =" \
	"ls -lR of $BATCH files per run of ls, cold; unlink = unlink + rmdir per 100 files; rates per file," \
	"cache drops not timed. seq = 1 GiB in 1 MiB buffered writes + fsync, read back after drop caches."
for fs in zdisk zshm; do
	[ -n "${ZSTAT[$fs]:-}" ] && echo "zlfs status at the end of each run, ${LABEL[$fs]}: ${ZSTAT[$fs]% | }"
done
echo "The floor's caveats: passthrough_ll's defaults have no xattr support (its first GETXATTR answers ENOSYS and" \
	"the kernel asks no more, while zlfs and fuse2fs answer the two getxattr calls ls -l makes per file), and it" \
	"finds inodes in one linked list under one mutex (lo_find), so each LOOKUP walks up to a batch of live inodes."
LMIN=$(echo "$LOADS" | tr ' ' '\n' | grep . | sort -g | head -1)
LMAX=$(echo "$LOADS" | tr ' ' '\n' | grep . | sort -g | tail -1)
echo "Load average (1 min) when the runs started: ${LMIN:-?} to ${LMAX:-?} on $(nproc) cores$(awk -v m="${LMAX:-0}" -v c="$(nproc)" \
	'BEGIN { if (m > c / 2) print " (other processes were running: expect noise; compare the rounds)" }')."
echo "Cache drops by other processes while a filesystem was measured (they chill caches mid-phase):" \
	"${FOREIGN:-none seen}."
echo "Took $(((SECONDS - T_START) / 60)) min $(((SECONDS - T_START) % 60)) s."
if [ "${#FAILS[@]}" != 0 ]; then
	echo
	echo "FAILURES (${#FAILS[@]}):"
	for f in "${FAILS[@]}"; do echo "- $f"; done
	exit 1
fi
