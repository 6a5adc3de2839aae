#!/bin/bash
# check-sload.sh BUILD_DIR - an image zlfs did not make: a tree loaded into
# a mkfs.f2fs image by sload.f2fs passes fsck, mounts under zlfs, reads back
# identical (data, types, sizes, modes, mtimes, link counts), takes writes
# (new files, an overwrite, a deletion, a rename, a new directory, inline
# data, a truncate), still passes both fscks, and a remount shows it all.
#
# Prints "check-sload: CHECK ok" or "check-sload: CHECK FAIL reason" per
# check, the last that no zlfs daemon or mount of its own is left, then
# "check-sload: ok (N checks, S s)" (exit 0) only if every check passed, else
# exit 1. Exit 77 (skipped) without root, /dev/fuse, mkfs.f2fs or sload.f2fs.
# KEEP=1 keeps the images of a failed run.
NAME=check-sload
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_tools mkfs.f2fs sload.f2fs
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"

# meta DIR: one line per entry: path, type, size, mode, mtime in seconds (size and mtime
# not for directories), links
meta() {
	(cd "$1" && find . -printf '%p\t%y\t%s\t%m\t%T@\t%n\n' |
		awk -F'\t' -v OFS='\t' '{ if ($2 == "d") $3 = $5 = "-"; sub(/\..*/, "", $5); print }' | LC_ALL=C sort)
}
sload() {
	local r=0
	sload_body || r=1
	mountpoint -q "$T/sload.mnt" && fusermount3 -u "$T/sload.mnt"
	return $r
}
sload_body() {
	local s=$T/sload.src img=$T/sload.img m=$T/sload.mnt out i
	mkdir -p "$s/dir/deeper/deepest" "$s/empty dir" "$s/many"
	echo hello >"$s/small"
	: >"$s/empty"
	head -c 3000 /dev/urandom >"$s/dir/3000"            # fits inline
	head -c 5000 /dev/urandom >"$s/dir/5000"
	head -c 1048576 /dev/urandom >"$s/dir/deeper/1m"
	head -c 3333333 /dev/urandom >"$s/dir/deeper/deepest/3m"
	for i in $(seq 300); do echo "file $i" >"$s/many/file-$i"; done
	echo spaces >"$s/name with spaces"
	ln -s dir/5000 "$s/link"
	ln -s "$(printf 'x%.0s' $(seq 200))" "$s/longlink"
	chmod 0600 "$s/small"
	truncate -s 2G "$img"
	out=$(mkfs.f2fs -f -q "$img" 2>&1) || { WHY="mkfs.f2fs: $out"; return 1; }
	out=$(sload.f2fs -f "$s" "$img" 2>&1) || { WHY="sload.f2fs: $(echo "$out" | tail -2)"; return 1; }
	fsck_clean "$img" || { WHY="before zlfs: $WHY"; return 1; }
	mnt "$img" "$m" || return 1
	out=$(diff -r --no-dereference "$s" "$m" 2>&1) || { WHY="diff -r: $(echo "$out" | head -3)"; return 1; }
	# types, sizes, modes, mtimes (sload.f2fs keeps files' whole seconds, and stamps
	# directories with its own clock: theirs are left out) and link counts
	out=$(diff <(meta "$s") <(meta "$m") 2>&1) || { WHY="metadata: $(echo "$out" | head -3 | tr '\n' ' ')"; return 1; }
	# writes: new files, an overwrite, a deletion, a rename, a new directory
	mkdir "$m/new dir" "$s/new dir"
	head -c 200000 /dev/urandom | tee "$m/new dir/file" >"$s/new dir/file"
	printf 'changed' | dd of="$m/dir/5000" bs=1 seek=100 conv=notrunc status=none
	printf 'changed' | dd of="$s/dir/5000" bs=1 seek=100 conv=notrunc status=none
	rm "$m/many/file-7" "$s/many/file-7"
	mv "$m/dir/3000" "$m/many/3000" && mv "$s/dir/3000" "$s/many/3000"
	echo more >>"$m/small" && echo more >>"$s/small"                  # inline data
	echo new >"$m/dir/deeper/new" && echo new >"$s/dir/deeper/new"     # a small directory
	truncate -s 500000 "$m/dir/deeper/1m" "$s/dir/deeper/1m"           # a file sload mapped by an extent
	out=$(diff -r --no-dereference "$s" "$m" 2>&1) || { WHY="diff after writes: $(echo "$out" | head -3)"; return 1; }
	umnt "$m" "$img" || return 1
	fsck_clean "$img" || { WHY="after zlfs: $WHY"; return 1; }
	mnt "$img" "$m" || return 1
	out=$(diff -r --no-dereference "$s" "$m" 2>&1) || { WHY="diff after remount: $(echo "$out" | head -3)"; return 1; }
	out=$(diff <(meta "$s" | cut -f1-4,6) <(meta "$m" | cut -f1-4,6) 2>&1) ||
		{ WHY="metadata after remount: $(echo "$out" | head -3 | tr '\n' ' ')"; return 1; }
	umnt "$m" "$img" || return 1
	rm -f "$img"
}
check "sload.f2fs image mounts, reads back, takes writes, passes fsck" sload

finish
