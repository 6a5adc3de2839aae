#!/bin/bash
# tests/fs/check-compress.sh BUILD_DIR [PART...] - F2FS compression through
# FUSE, on zoned images made by mkfs.zlfs -O compression (parts, all by
# default):
#   algs     each algorithm (lzo, lz4, zstd, lzo-rle) with 4-block and
#            32-block clusters under compress_extension=txt: text, random
#            and mixed files, overwrites inside clusters and across their
#            edges, truncates into clusters, growth, appends, a hard link
#            written through (tests/fs/compress-load.py keeps the model);
#            contents right before and after a remount; fsck.f2fs and
#            fsck.zlfs clean; text written at least 2x smaller with zstd
#            (blocks written = logical - i_compr_blocks), random data
#            never more than raw, the .bin file not compressed; lsattr c
#   chattr   chattr +c on a directory (new files compressed), on an empty
#            file; refused on a file with data (EINVAL); -c; +m on a
#            directory; nocompress_extension wins over the directory
#   options  bad compress_* options refused with a message; without the
#            feature they are ignored (a note) and chattr +c is EOPNOTSUPP
#   ioctls   F2FS_IOC_GET/RELEASE/RESERVE_COMPRESS_BLOCKS, GET/SET_COMPRESS_
#            OPTION, COMPRESS_FILE and DECOMPRESS_FILE as the kernel answers
#            them (counts, st_blocks, EBUSY/EPERM/EINVAL/EBADF/EFBIG)
#   power    a compressed file fsynced, then the device's power cut under
#            more writes: after the remount the file is whole, fsck clean
#   gc       a tree of compressed text and random files to 80% of the
#            volume, churned by partial overwrites (twice its size) so GC
#            cleans: every byte verified, write amplification printed
# Prints "check-compress: CHECK ok (note)" or "... FAIL why" per check, then
# the verdict.  Exit 77 without root, /dev/fuse, python3, lsattr or fsck.f2fs.
NAME=check-compress
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_tools python3 lsattr chattr fsck.f2fs
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"
shift
ONLY=" $* "
sel() { [ "$ONLY" = "  " ] || [[ $ONLY == *" $1 "* ]]; }

LOAD="python3 $(dirname "$0")/compress-load.py"
M=$T/m

# img PATH [SIZE] [ZONE]: a fresh zoned image with the compression feature
img() {
	rm -f "$1" "$1.zst"
	"$ZDEV" create "$1" --size "${2:-1G}" --zone-size "${3:-16M}" --conv-zones 4 >/dev/null &&
		"$MKFS" -f -O compression "$1" >/dev/null || { WHY="create/mkfs failed"; return 1; }
}

stat_of() { sed -n "s/^$2=//p" "$1/.zlfs/status"; }

# field FILE NAME KEY: KEY=N of NAME's line in the load's report
field() { sed -n "s/^$2 .*$3=\([-0-9]*\).*/\1/p" "$1"; }

# one ALG LOG: the mixed workload with that algorithm and cluster size
one() {
	local alg=$1 log=$2 i=$T/a-$1-$2.img rep=$T/rep-$1-$2
	img "$i" || return 1
	mnt "$i" "$M" -o "compress_extension=txt,compress_algorithm=$alg,compress_log_size=$log" ||
		return 1
	if ! $LOAD write "$M" "$T/state-$alg-$log" >"$rep" 2>&1; then
		WHY="$alg/$log: $(tail -1 "$rep")"; umnt "$M" "$i"; return 1
	fi
	local fl
	fl=$(lsattr "$M/text.txt" "$M/plain.bin" | cut -d' ' -f1 | tr -d -- '-' | tr '\n' ' ')
	local tl ts tw rs pl clusters
	tl=$(field "$rep" text.txt logical) ts=$(field "$rep" text.txt saved)
	tw=$(field "$rep" text.txt written) rs=$(field "$rep" rand.txt saved)
	pl=$(field "$rep" plain.bin saved)
	clusters=$(stat_of "$M" compressed_clusters)
	umnt "$M" "$i" || return 1
	case $fl in c*\ [!c]*|c\ ) ;; *) WHY="$alg/$log: lsattr text.txt plain.bin: '$fl'"; return 1 ;; esac
	[ "$pl" = -1 ] || { WHY="$alg/$log: plain.bin is compressed ($pl saved)"; return 1; }
	[ "$rs" = 0 ] || { WHY="$alg/$log: random data saved $rs blocks"; return 1; }
	[ "${ts:-0}" -gt 0 ] && [ "${clusters:-0}" -gt 0 ] ||
		{ WHY="$alg/$log: nothing compressed ($ts saved, $clusters clusters)"; return 1; }
	if [ "$alg" = zstd ] && [ $((tw * 2)) -gt "$tl" ]; then
		WHY="zstd/$log: text written in $tw blocks of $tl: less than 2x"; return 1
	fi
	fsck_clean "$i" || { WHY="$alg/$log: $WHY"; return 1; }
	mnt "$i" "$M" || return 1
	local out
	out=$($LOAD verify "$M" "$T/state-$alg-$log" 2>&1) ||
		{ WHY="$alg/$log after remount: $out"; umnt "$M" "$i"; return 1; }
	umnt "$M" "$i" && fsck_clean "$i" || { WHY="$alg/$log: $WHY"; return 1; }
	RATIOS="$RATIOS $alg/$((1 << log)):$(awk -v l="$tl" -v w="$tw" 'BEGIN { printf "%.1fx", l / w }')"
	rm -f "$i" "$i.zst"
}

algs() {
	local a l
	RATIOS=""
	for l in 2 5; do
		for a in lzo lz4 zstd lzo-rle; do
			one "$a" "$l" || return 1
		done
	done
	NOTE="text written smaller by:$RATIOS"
}

chattrs() {
	local i=$T/chattr.img fail="" out
	img "$i" || return 1
	mnt "$i" "$M" -o nocompress_extension=log || return 1
	mkdir "$M/d" "$M/n"
	chattr +c "$M/d" 2>/dev/null || fail="$fail chattr +c dir;"
	chattr +m "$M/n" 2>/dev/null || fail="$fail chattr +m dir;"
	python3 -c 'import sys; open(sys.argv[1], "wb").write(b"abc " * 100000)' "$M/d/file"
	cp "$M/d/file" "$M/d/x.log"
	cp "$M/d/file" "$M/n/file"
	touch "$M/empty"
	chattr +c "$M/empty" 2>/dev/null || fail="$fail chattr +c on an empty file;"
	cp "$M/d/file" "$M/full"
	out=$(chattr +c "$M/full" 2>&1) && fail="$fail +c on a file with data accepted;"
	[[ $out == *"Invalid argument"* ]] || [ -z "$out" ] || fail="$fail +c said: $out;"
	touch "$M/e2" && chattr +c "$M/e2" && chattr -c "$M/e2" 2>/dev/null || fail="$fail -c on empty;"
	sync
	for f in d/file empty; do
		[[ $(lsattr -d "$M/$f" | cut -d' ' -f1) == *c* ]] || fail="$fail $f not c;"
	done
	for f in d/x.log n/file full e2; do
		[[ $(lsattr -d "$M/$f" | cut -d' ' -f1) == *c* ]] && fail="$fail $f is c;"
	done
	[[ $(lsattr -d "$M/n/file" | cut -d' ' -f1) == *m* ]] || fail="$fail n/file not m;"
	umnt "$M" "$i" || return 1
	[ -z "$fail" ] || { WHY=$fail; return 1; }
	fsck_clean "$i"
}

# refused OPTION TEXT: mounting with OPTION fails, saying TEXT
refused() {
	local out
	if out=$("$ZLFS" "$T/o.img" "$M" -o "$1" 2>&1); then
		fusermount3 -u "$M"; WHY="-o $1 accepted"; return 1
	fi
	[[ $out == *"$2"* ]] || { WHY="-o $1 said: $out"; return 1; }
}

options() {
	mkdir -p "$M"
	img "$T/o.img" || return 1
	refused compress_log_size=9 "compress_log_size" &&
	refused compress_algorithm=lzo:3 "no level" &&
	refused compress_algorithm=zstd:23 "1 .. 22" &&
	refused compress_algorithm=brotli "lzo, lz4, zstd, lzo-rle" &&
	refused nocompress_extension='*' "not allowed" &&
	refused compress_extension=txt,nocompress_extension=txt "both" || return 1
	# without the feature: accepted with a note, and +c is not supported
	rm -f "$T/p.img" "$T/p.img.zst"
	"$ZDEV" create "$T/p.img" --size 1G --zone-size 16M --conv-zones 4 >/dev/null &&
		"$MKFS" -f "$T/p.img" >/dev/null || { WHY="mkfs"; return 1; }
	mnt "$T/p.img" "$M" -o compress_extension=txt,compress_algorithm=zstd || return 1
	touch "$M/a.txt"
	local out
	out=$(chattr +c "$M/a.txt" 2>&1)
	local fl
	fl=$(lsattr "$M/a.txt" | cut -d' ' -f1)
	umnt "$M" "$T/p.img" || return 1
	[[ $out == *"Operation not supported"* ]] || { WHY="chattr +c without the feature: '$out'"; return 1; }
	[[ $fl != *c* ]] || { WHY="a.txt compressed without the feature"; return 1; }
	grep -q "compress options are ignored" "$T/p.img.zlfs.log" ||
		{ WHY="no note that the options are ignored"; return 1; }
}

# F2FS's compression ioctls through the mount, each as the kernel answers it
ioctls() {
	local i=$T/ioc.img out
	img "$i" || return 1
	mnt "$i" "$M" -o compress_extension=txt,compress_mode=user || return 1
	cat >"$T/ioctls.py" <<'EOF'
import errno, fcntl, os, struct, sys
m = sys.argv[1]
GET, REL, RES, GOPT, SOPT, DEC, COM = (0x8008F511, 0x8008F512, 0x8008F513, 0x8002F515,
                                      0x4002F516, 0xF517, 0xF518)
W = [b"zone ", b"log ", b"cluster ", b"f2fs\n"]
data = b"".join(W[(i * 7) % 4] for i in range(200000))
def io(p, cmd, mode=os.O_RDONLY, arg=None):
    fd = os.open(p, mode)
    try:
        if cmd in (GET, REL, RES):
            return struct.unpack("Q", fcntl.ioctl(fd, cmd, b"\0" * 8))[0]
        if cmd == GOPT:
            return tuple(fcntl.ioctl(fd, cmd, b"\0\0"))
        if arg is not None:
            fcntl.ioctl(fd, cmd, arg)     # (gives the buffer back)
            return 0
        return fcntl.ioctl(fd, cmd)
    except OSError as e:
        return errno.errorcode[e.errno]
    finally:
        os.close(fd)
def want(what, got, exp):
    if got != exp:
        sys.exit("%s: %r, not %r" % (what, got, exp))
p = os.path.join(m, "a.txt")
with open(p, "wb") as f:
    f.write(data)
os.sync()
want("saved under compress_mode=user", io(p, GET), 0)
want("COMPRESS_FILE read-only", io(p, COM), "EBADF")
want("COMPRESS_FILE", io(p, COM, os.O_RDWR), 0)
os.sync()
saved = io(p, GET)
if not isinstance(saved, int) or saved <= 0:
    sys.exit("nothing saved after COMPRESS_FILE: %r" % saved)
blocks = os.stat(p).st_blocks
fd = os.open(p, os.O_WRONLY)
want("RELEASE with a writer open", io(p, REL), "EBUSY")
os.close(fd)
want("RELEASE", io(p, REL), saved)
want("st_blocks after RELEASE", os.stat(p).st_blocks, blocks - 8 * saved)
try:
    open(p, "r+b")
    sys.exit("a released file opened for writing")
except PermissionError:
    pass
want("read after RELEASE", open(p, "rb").read() == data, True)
want("RELEASE again", io(p, REL), "EINVAL")
want("RESERVE", io(p, RES), saved)
want("st_blocks after RESERVE", os.stat(p).st_blocks, blocks)
want("DECOMPRESS_FILE", io(p, DEC, os.O_RDWR), 0)
os.sync()
want("saved after DECOMPRESS_FILE", io(p, GET), 0)
want("read after DECOMPRESS_FILE", open(p, "rb").read() == data, True)
want("COMPRESS_FILE again", io(p, COM, os.O_RDWR), 0)
os.sync()
want("RELEASE once more", io(p, REL), saved)
os.truncate(p, 0)
with open(p, "wb") as f:
    f.write(b"writable once emptied")
q = os.path.join(m, "b.txt")
open(q, "wb").close()
want("GET_COMPRESS_OPTION", io(q, GOPT), (1, 2))
want("SET_COMPRESS_OPTION", io(q, SOPT, os.O_RDWR, bytes([2, 4])), 0)
want("GET_COMPRESS_OPTION after", io(q, GOPT), (2, 4))
with open(q, "wb") as f:
    f.write(data)
want("SET_COMPRESS_OPTION with data", io(q, SOPT, os.O_RDWR, bytes([1, 2])), "EFBIG")
r = os.path.join(m, "plain.bin")
with open(r, "wb") as f:
    f.write(b"not compressed")
want("GET_COMPRESS_BLOCKS of a plain file", io(r, GET), "EINVAL")
EOF
	out=$(python3 "$T/ioctls.py" "$M" 2>&1) || { WHY=$out; umnt "$M" "$i"; return 1; }
	umnt "$M" "$i" && fsck_clean "$i"
}

power() {
	local i=$T/pw.img
	img "$i" || return 1
	mnt "$i" "$M" -o compress_extension=txt,compress_algorithm=zstd || return 1
	python3 - "$M/kept.txt" <<'EOF' || { WHY="write kept.txt"; umnt "$M" "$i"; return 1; }
import os, sys
words = [b"alpha ", b"beta ", b"gamma ", b"delta\n"]
data = b"".join(words[(i * 7) % 4] for i in range(600000))
with open(sys.argv[1], "wb") as f:
    f.write(data)
    f.flush()
    os.fsync(f.fileno())
open(sys.argv[1] + ".ref", "wb").close()
EOF
	cp "$M/kept.txt" "$T/kept.ref"
	umnt "$M" "$i" || return 1
	mnt "$i?powercut_after=3000,powercut_seed=5" "$M" -o compress_extension=txt || return 1
	# more compressed writes until the power goes
	python3 - "$M" <<'EOF' >/dev/null 2>&1
import os, sys
for n in range(1000):
    try:
        with open(os.path.join(sys.argv[1], "more%d.txt" % n), "wb") as f:
            f.write((b"lost words %d " % n) * 20000)
            os.fsync(f.fileno())
        with open(os.path.join(sys.argv[1], "kept.txt"), "r+b") as f:
            f.seek(n * 4096 + 5)
            f.write(b"CHANGED")
    except OSError:
        break
EOF
	local derr
	derr=$(stat_of "$M" device_error)
	fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" 2>/dev/null
	for _ in $(seq 300); do [ -z "$(daemons "$i")" ] && break; sleep 0.1; done
	[ -n "$derr" ] && [ "$derr" != 0 ] || { WHY="the power was never cut (device_error '$derr')"; return 1; }
	fsck_clean "$i" || return 1
	mnt "$i" "$M" || return 1
	# fsynced before the cut: whole, as written or with whole CHANGED marks of later fsyncs
	local ok=0
	python3 - "$M/kept.txt" "$T/kept.ref" <<'EOF' || ok=1
import sys
got, ref = open(sys.argv[1], "rb").read(), bytearray(open(sys.argv[2], "rb").read())
if len(got) != len(ref):
    sys.exit("size %d, %d fsynced" % (len(got), len(ref)))
for n in range(1000):
    at = n * 4096 + 5
    if got[at:at + 7] == b"CHANGED":
        ref[at:at + 7] = b"CHANGED"
if got != bytes(ref):
    sys.exit("contents differ")
EOF
	umnt "$M" "$i" || return 1
	[ $ok = 0 ] || { WHY="kept.txt is not what was fsynced"; return 1; }
	fsck_clean "$i"
}

gc() {
	local i=$T/gc.img out
	img "$i" 512M 8M || return 1
	mnt "$i" "$M" -o compress_extension=txt,compress_algorithm=lz4,gc=on || return 1
	out=$($LOAD fill "$M" "$T/gc.state" 80 2>&1) || { WHY="fill: $out"; umnt "$M" "$i"; return 1; }
	local w0 m0
	w0=$(stat_of "$M" user_blocks_written) m0=$(stat_of "$M" gc_data_blocks_moved)
	out=$($LOAD churn "$M" "$T/gc.state" 2 2>&1) || { WHY="churn: $out"; umnt "$M" "$i"; return 1; }
	out=$($LOAD verify "$M" "$T/gc.state" 2>&1) || { WHY="verify: $out"; umnt "$M" "$i"; return 1; }
	local w1 m1 saved
	w1=$(stat_of "$M" user_blocks_written) m1=$(stat_of "$M" gc_data_blocks_moved)
	saved=$(stat_of "$M" compressed_blocks_saved)
	umnt "$M" "$i" || return 1
	fsck_clean "$i" || return 1
	mnt "$i" "$M" || return 1
	out=$($LOAD verify "$M" "$T/gc.state" 2>&1) || { WHY="after remount: $out"; umnt "$M" "$i"; return 1; }
	umnt "$M" "$i" && fsck_clean "$i" || return 1
	[ $((m1 - m0)) -gt 0 ] || { WHY="GC moved nothing during the churn"; return 1; }
	NOTE="GC moved $((m1 - m0)) blocks for $((w1 - w0)) written: write amplification $(awk -v w=$((w1 - w0)) -v m=$((m1 - m0)) 'BEGIN { printf "%.2f", (w + m) / w }'); compression saved $saved blocks"
}

sel algs && check "each algorithm, 4- and 32-block clusters: contents, fsck, blocks saved" algs
sel chattr && check "chattr +c / -c / +m with F2FS's rules, nocompress_extension" chattrs
sel options && check "bad compress options refused; ignored without the feature" options
sel ioctls && check "F2FS's compression ioctls: get/release/reserve blocks, get/set option, (de)compress a file" ioctls
sel power && check "a fsynced compressed file survives a power cut" power
sel gc && check "GC at 80% on a compressed tree: every byte right" gc
finish
