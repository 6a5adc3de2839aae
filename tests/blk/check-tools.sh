#!/bin/bash
# check-tools.sh BUILD_DIR - zlfs-zdev end to end: create an image, info,
# report, write through zlfs-bench, reset one zone and all, refusals.
set -eu
B=$1
Z=$B/fs/zlfs-zdev
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "check-tools: $*" >&2; exit 1; }

$Z create "$T/d.img" --size 256M --zone-size 16M --zone-capacity 12M --conv-zones 2 \
	--max-open 4 --max-active 6 >/dev/null
[ "$(stat -c %s "$T/d.img")" = 268435456 ] || fail "image size"
[ -f "$T/d.img.zst" ] || fail "no zone state"
$Z create "$T/d.img" --size 256M --zone-size 16M 2>/dev/null && fail "create over an existing image"
$Z create "$T/x.img" --size 100M --zone-size 16M 2>/dev/null && fail "size not a zone multiple"
$Z create "$T/x.img" --size 64M --zone-size 3M 2>/dev/null && fail "zone size not a power of two"
info=$($Z info "$T/d.img")
echo "$info" | grep -q "zones: *16 (2 conventional)" || fail "info zones: $info"
echo "$info" | grep -q "zone capacity: 12582912" || fail "info capacity"
echo "$info" | grep -q "max open: *4" || fail "info max open"
rep=$($Z report "$T/d.img")
[ "$(echo "$rep" | grep -c '^Zone')" = 16 ] || fail "report count"
[ "$(echo "$rep" | grep -c 'conv, not-wp')" = 2 ] || fail "report conv"
[ "$(echo "$rep" | grep -c 'swr, empty')" = 14 ] || fail "report empty"
# write 8 MiB into zone 2 and 3 through the dispatcher, then look
$B/bench/zlfs-bench --device "$T/d.img" --mode nolock --zones 2 --bs 64K --qd 8 --ios 256 >/dev/null
rep=$($Z report "$T/d.img" --first 2 --count 2)
echo "$rep" | grep -q "Zone 000002:.*wp 0x000800000, swr, closed" || fail "zone 2 after bench: $rep"
echo "$rep" | grep -q "Zone 000003:.*wp 0x000800000, swr, closed" || fail "zone 3 after bench"
$Z reset "$T/d.img" 2
$Z report "$T/d.img" --first 2 --count 1 | grep -q "wp 0x000000000, swr, empty" || fail "reset one"
$Z report "$T/d.img" --first 3 --count 1 | grep -q "swr, closed" || fail "reset one touched another"
$Z reset "$T/d.img"
[ "$($Z report "$T/d.img" | grep -c 'swr, empty')" = 14 ] || fail "reset all"
$Z reset "$T/d.img" 1 2>/dev/null && fail "reset of a conventional zone"
$Z info "mem:size=64M,zone_size=16M,qd=4" | grep -q "queue depth: *4" || fail "mem info"
$Z info "mem:size=64M,zone_size=16M,typo=1" 2>&1 | grep -q "unknown device option 'typo'" || fail "typo message"
$Z info "$T/none.img" 2>/dev/null && fail "missing image"
# messages: the path and the errno said once; usage errors name what is
# wrong (exit 1) and open nothing
out=$($Z info "$T/none.img" 2>&1) || true
[ "$out" = "zlfs-zdev: $T/none.img: No such file or directory" ] || fail "missing image says: $out"
out=$(flock "$T/d.img" $Z reset "$T/d.img" 2>&1) && fail "reset of a held image"
[ "$(grep -o "$T/d.img" <<<"$out" | wc -l)" = 1 ] || fail "held image, path not once: $out"
for args in "create $T/y.img --size 1Q --zone-size 16M:--size" "create $T/y.img -s:--size needs" \
	    "create $T/y.img --bogus:--bogus" "create $T/y.img --size 64M:--zone-size" \
	    "report $T/d.img --first x:--first" "reset $T/d.img zone7:zone7" "frob $T/d.img:frob"; do
	rc=0; out=$($Z ${args%%:*} 2>&1) || rc=$?
	[ $rc = 1 ] && grep -q -- "${args#*:}" <<<"$out" && [ "$(wc -l <<<"$out")" -le 2 ] ||
		fail "zlfs-zdev ${args%%:*}: exit $rc, '$out'"
done
[ ! -e "$T/y.img" ] || fail "a refused create made an image"
echo "check-tools: ok"
