# bench/lib.sh - what the bench scripts that mount zlfs share; sourced
# after B (the build directory, absolute) is set.
#
# bench_scratch NAME: a scratch directory DIR under $ZLFS_BENCH_DIR (default
# /var/tmp, a disk, not tmpfs) with a mount point MNT in it; on exit,
# whatever is still mounted there is unmounted and DIR removed.
bench_scratch() {
	DIR=$(mktemp -d "${ZLFS_BENCH_DIR:-/var/tmp}/zlfs-$1.XXXXXX")
	MNT=$DIR/mnt
	mkdir -p "$MNT"
	trap bench_cleanup EXIT
}

bench_cleanup() {
	mountpoint -q "$MNT" && "$B/fs/zlfs-umount" "$MNT" 2>/dev/null
	rm -rf "$DIR"
}
