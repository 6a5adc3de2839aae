#!/bin/bash
# bench/compress.sh BUILD_DIR [ROUNDS] [TREE_MB] - F2FS compression in zlfs:
# a mixed tree written and read with each algorithm against no compression,
# and what compression does to cleaning.  Run as root (it mounts and drops
# the kernel's caches):
#
#   bash bench/compress.sh build              # 3 rounds, a 1 GiB tree
#   bash bench/compress.sh build 1 128        # a quick look
#
# The tree (made once per run in COMPRESS_DIR, default /var/tmp): a quarter
# each of source code (the .h/.c/.py/.pm/.pl files under /usr), text (the
# manual pages under /usr/share/man, uncompressed), binaries (the ELF files
# of /usr/bin and /usr/lib) and random data (/dev/urandom), files repeated
# until each quarter is TREE_MB / 4.
# Configurations: none (a volume without the compression feature), and on
# volumes made with -O compression, mounted with compress_extension=* (every
# file compressed) and 16 KiB clusters: lzo, lz4, zstd, lzo-rle.  Each run: a
# fresh emulated zoned image (4 GiB, 64 MiB zones, 8 conventional), mkfs,
# mount; cp -a of the tree and a sync (write MB/s); the blocks written
# (valid_blocks of .zlfs/status less the empty volume's: what the device
# holds; df shows every file whole, as F2FS does); unmount, mount, caches
# dropped, the tree read back through tar (read MB/s).
# Then the cleaning: a 1 GiB image filled with the tree's files to 80% of
# what df offers, then as many bytes as that again rewritten in place, 64
# KiB at a time at random offsets of random files, each piece taken from
# another file of the same kind (the mix stays as compressible);
# write amplification = (blocks the files wrote + blocks GC moved) / blocks
# the files wrote, from .zlfs/status.
# Rounds are interleaved (every configuration once per round); the table
# gives medians and the ratio of each configuration to none.  The machines
# are shared and noisy: read the rates as a comparison made side by side.
set -eu
export LC_ALL=C
B=${1:?usage: bash bench/compress.sh BUILD_DIR [ROUNDS] [TREE_MB]}
R=${2:-3}
TREE_MB=${3:-1024}
DIR=${COMPRESS_DIR:-/var/tmp}
B=$(readlink -f "$B")
ZLFS=$B/fs/zlfs MKFS=$B/mkfs/mkfs.zlfs ZDEV=$B/fs/zlfs-zdev ZUMOUNT=$B/fs/zlfs-umount
for x in "$ZLFS" "$MKFS" "$ZDEV" "$ZUMOUNT"; do
	[ -x "$x" ] || { echo "compress: $x missing (build first)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "compress: run as root (mount, drop_caches)" >&2; exit 1; }
W=$(mktemp -d "$DIR/zlfs-compress.XXXXXX")
IMG=$W/z.img M=$W/m T=$W/tree
mkdir -p "$M"
cleanup() {
	mountpoint -q "$M" && { "$ZUMOUNT" "$M" || fusermount3 -u "$M"; }
	rm -rf "$W"
}
trap cleanup EXIT

CONFIGS="none lzo lz4 zstd lzo-rle"

# the tree: four kinds, TREE_MB / 4 each
python3 - "$T" "$TREE_MB" <<'EOF'
import gzip, os, sys
root, mb = sys.argv[1], int(sys.argv[2])
quota = mb * (1 << 20) // 4

def walk(tops, keep):
    for top in tops:
        for d, _, files in os.walk(top):
            for f in sorted(files):
                p = os.path.join(d, f)
                if os.path.isfile(p) and not os.path.islink(p) and keep(p):
                    yield p

def elf(p):
    try:
        with open(p, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False

def fill(kind, sources, read):
    os.makedirs(os.path.join(root, kind))
    total, n, srcs = 0, 0, list(sources)
    if not srcs:
        sys.exit("compress: no %s files found" % kind)
    while total < quota:
        for p in srcs:
            try:
                data = read(p)
            except OSError:
                continue
            if not data:
                continue
            data = data[:quota - total]
            d = os.path.join(root, kind, "%03d" % (n // 500))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "%06d-%s" % (n, os.path.basename(p))), "wb") as f:
                f.write(data)
            total += len(data)
            n += 1
            if total >= quota:
                break
    print("tree: %-8s %5d files, %4d MiB" % (kind, n, total >> 20))

def raw(p):
    with open(p, "rb") as f:
        return f.read(8 << 20)

fill("source", walk(["/usr/include", "/usr/share/perl5", "/usr/lib/python3"],
                    lambda p: p.endswith((".h", ".c", ".py", ".pm", ".pl"))), raw)
fill("text", walk(["/usr/share/man"], lambda p: p.endswith(".gz")),
     lambda p: gzip.open(p).read())
fill("binary", walk(["/usr/bin", "/usr/lib/x86_64-linux-gnu"], elf), raw)
rnd = os.path.join(root, "random")
os.makedirs(rnd)
with open("/dev/urandom", "rb") as u:
    for i in range(quota >> 20):
        with open(os.path.join(rnd, "%04d" % i), "wb") as f:
            f.write(u.read(1 << 20))
print("tree: random   %5d files, %4d MiB" % (quota >> 20, quota >> 20))
EOF
TREE_KB=$(du -sk --apparent-size "$T" | cut -f1)

stat_of() { sed -n "s/^$2=//p" "$1/.zlfs/status"; }
opts_of() {
	case $1 in
	none) echo "" ;;
	*) echo "-o compress_extension=*,compress_algorithm=$1" ;;
	esac
}
fresh() {  # CONFIG SIZE ZONE
	rm -f "$IMG" "$IMG.zst"
	"$ZDEV" create "$IMG" --size "$2" --zone-size "$3" --conv-zones 8 >/dev/null
	if [ "$1" = none ]; then "$MKFS" -f "$IMG" >/dev/null; else "$MKFS" -f -O compression "$IMG" >/dev/null; fi
}
mnt() {  # CONFIG
	# shellcheck disable=SC2046
	"$ZLFS" "$IMG" "$M" $(opts_of "$1")
}
umnt() { "$ZUMOUNT" "$M"; }
now() { date +%s.%N; }

# one CONFIG ROUND: write, blocks, read; then the cleaning
one() {
	local c=$1 r=$2 t0 t1 v0 v1 saved wr rd wa
	fresh "$c" 4G 64M
	mnt "$c"
	v0=$(stat_of "$M" valid_blocks)
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(now)
	cp -a "$T/." "$M/"
	sync -f "$M"
	t1=$(now)
	v1=$(stat_of "$M" valid_blocks)
	saved=$(stat_of "$M" compressed_blocks_saved)
	wr=$(awk -v k="$TREE_KB" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", k / 1024 / (b - a) }')
	umnt
	mnt "$c"
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(now)
	tar cf - -C "$M" . | cat >/dev/null
	t1=$(now)
	rd=$(awk -v k="$TREE_KB" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", k / 1024 / (b - a) }')
	umnt
	# the cleaning
	fresh "$c" 1G 16M
	mnt "$c"
	python3 - "$T" "$M" <<'EOF'
import os, random, sys
src, dst = sys.argv[1:3]
files = [os.path.join(d, f) for d, _, fs in sorted(os.walk(src)) for f in sorted(fs)]
st = os.statvfs(dst)
goal = st.f_blocks * st.f_frsize * 80 // 100
i = 0
while True:
    st = os.statvfs(dst)
    if (st.f_blocks - st.f_bfree) * st.f_frsize >= goal:
        break
    p = files[i % len(files)]
    with open(p, "rb") as f, open(os.path.join(dst, "%06d" % i), "wb") as g:
        g.write(f.read())
    i += 1
EOF
	local w0 m0 w1 m1
	w0=$(stat_of "$M" user_blocks_written) m0=$(stat_of "$M" gc_data_blocks_moved)
	python3 - "$M" <<'EOF'
import os, random, sys
root = sys.argv[1]
r = random.Random(1)
names = sorted(os.listdir(root))
sizes = {n: os.path.getsize(os.path.join(root, n)) for n in names}
names = [n for n in names if sizes[n] >= 65536]
goal = sum(sizes.values())
done = 0
while done < goal:
    a, b = r.choice(names), r.choice(names)
    off = r.randrange(0, sizes[a] - 65535) & ~4095
    boff = r.randrange(0, sizes[b] - 65535)
    with open(os.path.join(root, b), "rb") as f:
        f.seek(boff)
        piece = f.read(65536)
    with open(os.path.join(root, a), "r+b") as f:
        f.seek(off)
        f.write(piece)
    done += 65536
os.sync()
EOF
	sync -f "$M"
	w1=$(stat_of "$M" user_blocks_written) m1=$(stat_of "$M" gc_data_blocks_moved)
	wa=$(awk -v w=$((w1 - w0)) -v m=$((m1 - m0)) 'BEGIN { printf "%.2f", w ? (w + m) / w : 0 }')
	umnt
	echo "$r $c $wr $rd $((v1 - v0)) ${saved:-0} $wa"
}

echo "tree: $((TREE_KB / 1024)) MiB in $T"
echo "# round config write_MBps read_MBps blocks_written blocks_saved gc_wa"
for r in $(seq "$R"); do
	for c in $CONFIGS; do
		one "$c" "$r" | tee -a "$W/runs"
	done
done
python3 - "$W/runs" "$CONFIGS" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
configs = sys.argv[2].split()
def med(c, k):
    return statistics.median(float(x[k]) for x in rows if x[1] == c)
print()
print("%-8s %9s %9s %14s %9s %6s   %s" % ("config", "write", "read", "blocks written",
                                           "x smaller", "GC WA", "ratios to none: write, read"))
base = {k: med("none", k) for k in (2, 3, 4)}
for c in configs:
    w, r, b, wa = med(c, 2), med(c, 3), med(c, 4), med(c, 6)
    print("%-8s %5.0f MB/s %4.0f MB/s %14.0f %8.2fx %6.2f   %.2f, %.2f" % (
        c, w, r, b, base[4] / b if b else 0, wa, w / base[2], r / base[3]))
EOF
