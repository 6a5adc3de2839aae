#!/bin/bash
# check-posix.sh BUILD_DIR - the POSIX namespace through the mount.
#
# errnos (ENOENT, EEXIST, ENOTEMPTY, ENAMETOOLONG, ENOTDIR, EISDIR, EINVAL,
# ELOOP, EPERM; EXDEV cannot happen inside one filesystem), statfs,
# st_blocks of a sparse file, of a small file and a new directory, a
# 100,000-entry directory (removed by readdir + unlink), a sparse 20 GiB
# file (indirect and double indirect nodes), O_APPEND, O_TRUNC, O_DIRECT
# (and reads racing rewrites), FIFOs and device nodes, POSIX ACLs and the
# umask, setgid dropped by an ACL, ctimes in order, file handles, space
# given back by a file unlinked while open, what all that left surviving a
# remount, a second mount of a mounted image refused, a remount right
# after an unmount, fsck, a read-only mount that changes nothing.
#
# Prints "check-posix: CHECK ok" or "check-posix: CHECK FAIL reason" per
# check, the last that no zlfs daemon or mount of its own is left, then
# "check-posix: ok (N checks, S s)" (exit 0) only if every check passed, else
# exit 1. Exit 77 (skipped) without root, /dev/fuse or perl. KEEP=1 keeps the
# images of a failed run.
NAME=check-posix
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
need_tools perl
# shellcheck source=tests/fs/lib-mount.sh
. "$(dirname "$0")/lib-mount.sh"

IMG=$T/posix.img
M=$T/posix.mnt
POSIX=0
if ! "$ZDEV" create "$IMG" --size 8G --zone-size 64M --conv-zones 8 >/dev/null ||
   ! "$MKFS" "$IMG" >/dev/null; then
	bad "posix mkfs" "create/mkfs failed"
elif ! mnt "$IMG" "$M" -o allow_other; then
	bad "posix mount" "$WHY"
else
	POSIX=1
fi
if [ $POSIX = 1 ]; then

	# perr CODE ARGS...: run a Perl expression on ARGS (in @ARGV); prints OK if
	# it returned true, else the errno's name.
	perr() {
		perl -e 'use strict; use Fcntl; use POSIX (); my $c = shift;
			my $r = eval $c; die $@ if $@;
			if ($r) { print "OK"; exit 0 }
			my ($n) = grep { $!{$_} } keys %!; print $n // "errno-$!";' "$@"
	}
	# expect WANT CODE ARGS...: the result must be WANT; failures go to WHY
	expect() {
		local want=$1 got
		shift
		got=$(perr "$@" 2>&1)
		if [ "$got" != "$want" ]; then
			WHY="${WHY:+$WHY; }'$(echo "$1" | cut -c1-40)' on ${2#"$M"/}: expected $want, got $got"
			return 1
		fi
	}

	D=$M/ns
	mkdir -p "$D/dir/sub" "$D/empty" && echo data >"$D/file" && echo x >"$D/dir/sub/f"
	LONG255=$(printf 'n%.0s' $(seq 255))
	LONG256=$(printf 'n%.0s' $(seq 256))
	MKDIR='mkdir($ARGV[0], 0755)'
	OPEN_RD='sysopen(my $f, $ARGV[0], O_RDONLY)'
	OPEN_WR='sysopen(my $f, $ARGV[0], O_WRONLY)'
	CREATE='sysopen(my $f, $ARGV[0], O_WRONLY|O_CREAT, 0644)'
	EXCL='sysopen(my $f, $ARGV[0], O_WRONLY|O_CREAT|O_EXCL, 0644)'

	e_enoent() {
		local r=0
		expect ENOENT 'lstat($ARGV[0])' "$D/nope" || r=1
		expect ENOENT "$OPEN_RD" "$D/nope" || r=1
		expect ENOENT 'unlink($ARGV[0])' "$D/nope" || r=1
		expect ENOENT 'rmdir($ARGV[0])' "$D/nope" || r=1
		expect ENOENT 'rename($ARGV[0], $ARGV[1])' "$D/nope" "$D/nope2" || r=1
		expect ENOENT "$MKDIR" "$D/nope/x" || r=1
		expect ENOENT "$CREATE" "$D/nope/x" || r=1
		expect ENOENT 'link($ARGV[0], $ARGV[1])' "$D/nope" "$D/x" || r=1
		expect ENOENT 'opendir(my $d, $ARGV[0])' "$D/nope" || r=1
		expect ENOENT 'chmod(0600, $ARGV[0])' "$D/nope" || r=1
		return $r
	}
	e_eexist() {
		local r=0
		expect EEXIST "$MKDIR" "$D/dir" || r=1
		expect EEXIST "$MKDIR" "$D/file" || r=1
		expect EEXIST "$EXCL" "$D/file" || r=1
		expect EEXIST "$EXCL" "$D/dir" || r=1
		expect EEXIST 'link($ARGV[0], $ARGV[1])' "$D/file" "$D/dir" || r=1
		expect EEXIST 'symlink("x", $ARGV[0])' "$D/file" || r=1
		expect EEXIST 'POSIX::mkfifo($ARGV[0], 0644)' "$D/file" || r=1
		return $r
	}
	e_enotempty() {
		local r=0
		expect ENOTEMPTY 'rmdir($ARGV[0])' "$D/dir" || r=1
		expect ENOTEMPTY 'rename($ARGV[0], $ARGV[1])' "$D/empty" "$D/dir" || r=1
		expect ENOTEMPTY 'rmdir($ARGV[0])' "$D/dir/sub/.." || r=1
		return $r
	}
	e_enametoolong() {
		local r=0
		expect ENAMETOOLONG "$MKDIR" "$D/$LONG256" || r=1
		expect ENAMETOOLONG "$CREATE" "$D/$LONG256" || r=1
		expect ENAMETOOLONG 'lstat($ARGV[0])' "$D/$LONG256" || r=1
		expect ENAMETOOLONG 'rename($ARGV[0], $ARGV[1])' "$D/file" "$D/$LONG256" || r=1
		expect ENAMETOOLONG 'symlink("x", $ARGV[0])' "$D/$LONG256" || r=1
		expect ENAMETOOLONG 'link($ARGV[0], $ARGV[1])' "$D/file" "$D/$LONG256" || r=1
		# 255 is allowed, and readdir shows the whole name
		expect OK "$CREATE" "$D/$LONG255" || r=1
		expect OK 'lstat($ARGV[0])' "$D/$LONG255" || r=1
		[ -n "$(find "$D" -maxdepth 1 -name "$LONG255")" ] ||
			{ WHY="${WHY:+$WHY; }the 255-byte name is not listed"; r=1; }
		expect OK 'unlink($ARGV[0])' "$D/$LONG255" || r=1
		return $r
	}
	e_enotdir() {
		local r=0
		expect ENOTDIR "$MKDIR" "$D/file/x" || r=1
		expect ENOTDIR 'lstat($ARGV[0])' "$D/file/x" || r=1
		expect ENOTDIR "$CREATE" "$D/file/x" || r=1
		expect ENOTDIR 'rmdir($ARGV[0])' "$D/file" || r=1
		expect ENOTDIR 'opendir(my $d, $ARGV[0])' "$D/file" || r=1
		expect ENOTDIR 'rename($ARGV[0], $ARGV[1])' "$D/empty" "$D/file" || r=1
		expect ENOTDIR 'sysopen(my $f, $ARGV[0], O_RDONLY|O_DIRECTORY)' "$D/file" || r=1
		return $r
	}
	e_eisdir() {
		local r=0
		expect EISDIR "$OPEN_WR" "$D/dir" || r=1
		expect EISDIR 'sysopen(my $f, $ARGV[0], O_RDWR)' "$D/dir" || r=1
		expect EISDIR 'unlink($ARGV[0])' "$D/dir" || r=1
		expect EISDIR 'rename($ARGV[0], $ARGV[1])' "$D/file" "$D/empty" || r=1
		expect EISDIR 'truncate($ARGV[0], 0)' "$D/dir" || r=1
		expect EISDIR 'sysopen(my $f, $ARGV[0], O_RDONLY) or die; defined(sysread($f, my $b, 10))' "$D/dir" || r=1
		return $r
	}
	e_einval() {
		local r=0
		expect EINVAL 'rmdir($ARGV[0])' "$D/dir/." || r=1
		expect EINVAL 'chdir($ARGV[0]) && rmdir(".")' "$D/empty" || r=1
		expect EINVAL 'rename($ARGV[0], $ARGV[1])' "$D/dir" "$D/dir/sub/inside" || r=1
		expect EINVAL 'readlink($ARGV[0])' "$D/file" || r=1
		return $r
	}
	e_misc() {
		local r=0
		ln -s loop1 "$D/loop2" && ln -s loop2 "$D/loop1"
		expect ELOOP "$OPEN_RD" "$D/loop1" || r=1
		expect EPERM 'link($ARGV[0], $ARGV[1])' "$D/dir" "$D/dirlink" || r=1
		return $r
	}
	check "errno ENOENT" e_enoent
	check "errno EEXIST (mkdir, O_EXCL, link, symlink, mkfifo)" e_eexist
	check "errno ENOTEMPTY" e_enotempty
	check "errno ENAMETOOLONG (256 bytes; 255 works)" e_enametoolong
	check "errno ENOTDIR" e_enotdir
	check "errno EISDIR" e_eisdir
	check "errno EINVAL (rmdir ., rename into itself)" e_einval
	check "errno ELOOP, EPERM (link to a directory)" e_misc

	# statfs: sane numbers, and they move with the data
	statfs_sane() {
		local bs blocks free avail files ffree namelen f0 f1
		read -r bs blocks free avail files ffree namelen < <(stat -f -c '%S %b %f %a %c %d %l' "$M")
		[ "$bs" = 4096 ] || { WHY="block size $bs"; return 1; }
		[ "$blocks" -gt 0 ] && [ "$free" -le "$blocks" ] && [ "$avail" -le "$free" ] ||
			{ WHY="blocks $blocks free $free avail $avail"; return 1; }
		[ "$files" -gt 0 ] && [ "$ffree" -le "$files" ] || { WHY="files $files ffree $ffree"; return 1; }
		[ "$namelen" = 255 ] || { WHY="namelen $namelen"; return 1; }
		# the image is 8 GiB: at least half of it for data
		[ $((blocks * 4096)) -gt $((4 << 30)) ] || { WHY="only $blocks blocks on an 8 GiB image"; return 1; }
		df -P "$M" >/dev/null || { WHY="df failed"; return 1; }
		f0=$free
		dd if=/dev/urandom of="$M/statfs.64m" bs=1M count=64 conv=fsync status=none
		f1=$(stat -f -c %f "$M")
		[ $((f0 - f1)) -ge 16384 ] && [ $((f0 - f1)) -lt 40000 ] ||
			{ WHY="writing 64 MiB took $((f0 - f1)) free blocks (16384 expected)"; return 1; }
		rm -f "$M/statfs.64m"
		NOTE="$blocks blocks of $bs, $free free, $files inodes"
	}
	check "statfs" statfs_sane

	sparse_blocks() {
		local f=$M/sparse s b
		truncate -s 1G "$f"
		printf 'middle' | dd of="$f" bs=1 seek=$((512 << 20)) conv=notrunc status=none
		drop_caches
		read -r s b < <(stat -c '%s %b' "$f")
		[ "$s" = $((1 << 30)) ] || { WHY="size $s"; return 1; }
		[ $((b * 512)) -ge 4096 ] && [ $((b * 512)) -lt $((1 << 20)) ] ||
			{ WHY="st_blocks $b for 1 GiB with one 4 KiB block written"; return 1; }
		[ "$(dd if="$f" bs=1 skip=$((512 << 20)) count=6 status=none)" = middle ] || { WHY="data"; return 1; }
		NOTE="size 1 GiB, st_blocks $b"
	}
	check "st_blocks of a sparse file" sparse_blocks

	# st_blocks of a small file and a new directory: zlfs writes both in
	# blocks (8 sectors); a file or directory kept inline would show the
	# sectors its bytes fill, (size + 511) / 512, as the kernel's f2fs
	# shows it.  The inline case itself is tested where inline inodes
	# exist: test_acache's test_inline_blocks and the VM's kernel
	# cross-mount, which compares st_blocks of the kernel's inline files.
	inline_blocks() {
		local f=$M/inline.small d=$M/inline.dir s b ds db
		printf 'small' >"$f"
		mkdir "$d"
		sync
		drop_caches
		read -r s b < <(stat -c '%s %b' "$f")
		read -r ds db < <(stat -c '%s %b' "$d")
		# zlfs writes a file's data in data blocks (one here); the kernel
		# may keep it inline (1 sector), which the VM tests compare
		[ "$s" = 5 ] && { [ "$b" = 8 ] || [ "$b" = 1 ]; } ||
			{ WHY="a 5-byte file: size $s, st_blocks $b (8 or 1 expected)"; return 1; }
		[ "$db" = $(((ds + 511) / 512)) ] && [ "$db" -gt 0 ] ||
			{ WHY="a new directory: size $ds, st_blocks $db"; return 1; }
		rm -rf "$f" "$d"
		NOTE="file 5 B: $b sector; directory $ds B: $db sectors"
	}
	check "st_blocks of a small file and a new directory" inline_blocks

	bigdir() {
		local d=$M/bigdir n t0=$SECONDS i0 i1 i2
		i0=$(stat -f -c %d "$M")
		mkdir "$d" || { WHY="mkdir"; return 1; }
		perl -e 'use Fcntl; my $d = shift; for my $i (0 .. 99999) {
			sysopen(my $f, sprintf("%s/f%06d", $d, $i), O_CREAT|O_EXCL|O_WRONLY, 0644)
				or die "create $i: $!\n"; close $f }' "$d" 2>"$T/bigdir.err" ||
			{ WHY="create: $(cat "$T/bigdir.err")"; return 1; }
		for n in 000000 000001 049999 077777 099999; do
			[ -f "$d/f$n" ] || { WHY="stat f$n"; return 1; }
		done
		[ ! -e "$d/f100000" ] || { WHY="f100000 exists"; return 1; }
		n=$(perl -e 'opendir(my $d, shift) or die; print scalar(grep { !/^\.\.?$/ } readdir $d)' "$d")
		[ "$n" = 100000 ] || { WHY="readdir lists $n entries, not 100000"; return 1; }
		[ "$(stat -c %h "$d")" = 2 ] || { WHY="link count $(stat -c %h "$d")"; return 1; }
		i1=$(stat -f -c %d "$M")
		[ $((i0 - i1)) -ge 100001 ] || { WHY="statfs free inodes went from $i0 to $i1 for 100,001 new inodes"; return 1; }
		drop_caches
		[ -f "$d/f054321" ] || { WHY="stat f054321 after dropping caches"; return 1; }
		# remove as rm -r does: unlink each entry as readdir returns it; every
		# name must come back exactly once although the directory shrinks under
		# the readdir cookies
		n=$(perl -e 'my $d = shift; opendir(my $h, $d) or die "opendir: $!\n"; my (%seen, $n);
			while (defined(my $e = readdir $h)) { next if $e =~ /^\.\.?$/;
				die "readdir returned $e twice\n" if $seen{$e}++;
				unlink("$d/$e") or die "unlink $e: $!\n"; $n++ }
			print $n' "$d" 2>"$T/bigdir.err") || { WHY="readdir+unlink: $(cat "$T/bigdir.err")"; return 1; }
		[ "$n" = 100000 ] || { WHY="readdir+unlink saw $n entries, not 100000"; return 1; }
		n=$(ls -A "$d" | wc -l)
		[ "$n" = 0 ] || { WHY="$n entries left"; return 1; }
		rmdir "$d" || { WHY="rmdir"; return 1; }
		i2=$(stat -f -c %d "$M")
		[ "$i2" -ge "$i0" ] || { WHY="statfs free inodes: $i0 before, $i2 after removing everything"; return 1; }
		NOTE="$((SECONDS - t0)) s"
	}
	check "100,000-entry directory" bigdir

	# marks in a sparse file: past 4 GiB (indirect nodes), past ~8.5 GiB
	# (double indirect nodes), at the end of 20 GiB
	BIGMARKS="$(((4 << 30) + 12388)) $((9 << 30)) $(((16 << 30) + 4095)) $(((20 << 30) - 10))"
	check_big5() {
		local f=$M/big20 off e
		[ "$(stat -c %s "$f")" = $((20 << 30)) ] || { WHY="size $(stat -c %s "$f")"; return 1; }
		for off in $BIGMARKS; do
			e=$(dd if="$f" iflag=skip_bytes bs=64K skip="$off" count=1 status=none | head -c 10)
			[ "$e" = "$(printf '%010x' "$off")" ] || { WHY="at $off: '$e'"; return 1; }
		done
		e=$(dd if="$f" iflag=skip_bytes bs=64K skip=$((3 << 30)) count=1 status=none | tr -d '\0' | wc -c)
		[ "$e" = 0 ] || { WHY="a hole reads $e non-zero bytes"; return 1; }
		[ $(($(stat -c %b "$f") * 512)) -lt $((1 << 20)) ] || { WHY="st_blocks $(stat -c %b "$f")"; return 1; }
	}
	big5() {
		local f=$M/big20 off
		truncate -s 20G "$f" || { WHY="truncate -s 20G"; return 1; }
		for off in $BIGMARKS; do
			printf '%010x' "$off" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none ||
				{ WHY="write at $off"; return 1; }
		done
		check_big5 || return 1
		drop_caches
		check_big5
	}
	check "sparse 20 GiB file (writes past 4 GiB, 9 GiB, 16 GiB)" big5

	appendtrunc() {
		local f=$M/app
		printf a >"$f" && printf b >>"$f" && printf c >>"$f"
		# O_APPEND writes go to the end whatever the offset
		perl -e 'use Fcntl; sysopen(my $f, shift, O_WRONLY|O_APPEND) or die; sysseek($f, 0, 0); syswrite($f, "d")' "$f"
		drop_caches
		[ "$(cat "$f")" = abcd ] || { WHY="O_APPEND: '$(cat "$f")', expected 'abcd'"; return 1; }
		# O_TRUNC on a file whose pages are not in the page cache (as after a remount)
		head -c 10000 /dev/urandom >"$M/trunc"
		head -c 10000 /dev/urandom >"$M/trunc0"
		drop_caches
		printf xyz >"$M/trunc"   # O_WRONLY|O_CREAT|O_TRUNC
		: >"$M/trunc0"
		drop_caches
		[ "$(stat -c %s "$M/trunc")" = 3 ] && [ "$(stat -c %s "$M/trunc0")" = 0 ] ||
			{ WHY="open(O_TRUNC) did not truncate: sizes $(stat -c %s "$M/trunc") and $(stat -c %s "$M/trunc0") after dropping caches, expected 3 and 0"; return 1; }
		[ "$(cat "$M/trunc")" = xyz ] || { WHY="O_TRUNC: contents"; return 1; }
	}
	check "O_APPEND, O_TRUNC" appendtrunc

	direct_io() {
		head -c 1M /dev/urandom >"$T/dio.src"
		dd if="$T/dio.src" of="$M/dio" bs=64K oflag=direct status=none || { WHY="O_DIRECT write"; return 1; }
		# 512-byte direct writes inside a 4 KiB block
		dd if="$T/dio.src" of="$M/dio" bs=512 skip=100 seek=7 count=3 oflag=direct conv=notrunc status=none ||
			{ WHY="512-byte O_DIRECT write"; return 1; }
		cp "$T/dio.src" "$T/dio.exp"
		dd if="$T/dio.src" of="$T/dio.exp" bs=512 skip=100 seek=7 count=3 conv=notrunc status=none
		drop_caches
		dd if="$M/dio" of="$T/dio.back" bs=64K iflag=direct status=none || { WHY="O_DIRECT read"; return 1; }
		cmp -s "$T/dio.back" "$T/dio.exp" || { WHY="O_DIRECT data: $(cmp "$T/dio.back" "$T/dio.exp" 2>&1)"; return 1; }
		cmp -s "$M/dio" "$T/dio.exp" || { WHY="buffered read after O_DIRECT writes"; return 1; }
	}
	check "O_DIRECT writes and reads" direct_io

	dio_race() {
		local out
		[ -n "$FSOPS" ] || { WHY="no fsops"; return 1; }
		if ! out=$("$FSOPS" --dio-race "$M" 3000 2>&1); then
			WHY="$(echo "$out" | grep -c 'not a whole') torn reads, e.g. $(echo "$out" | grep -m1 'not a whole' | sed 's/^fsops: dio-race: //')"
			return 1
		fi
		NOTE=$(echo "$out" | awk '/reads,/ {r += $5} END {print r " reads"}')
	}
	check "O_DIRECT reads racing rewrites see whole old or new blocks" dio_race

	special() {
		mkfifo "$M/fifo" && mknod "$M/null" c 1 3 && mknod "$M/blk" b 7 200 && mknod "$M/bigdev" c 300 70000 ||
			{ WHY="mkfifo/mknod failed"; return 1; }
		check_special || return 1
		# the FIFO works through the mount (the kernel handles it)
		timeout 10 sh -c 'echo through-fifo >"$1"' sh "$M/fifo" &
		[ "$(timeout 10 cat "$M/fifo")" = through-fifo ] || { WHY="the FIFO does not pass data"; return 1; }
	}
	check_special() {
		local got
		got=$(stat -c '%F %t:%T' "$M/fifo" "$M/null" "$M/blk" "$M/bigdev" | tr '\n' ,)
		[ "$got" = "fifo 0:0,character special file 1:3,block special file 7:c8,character special file 12c:11170," ] ||
			{ WHY="stat: $got"; return 1; }
	}
	check "mknod FIFO, char and block devices" special

	# POSIX ACLs: a default ACL is inherited and the umask then does not apply
	# (the kernel must leave the umask to zlfs: FUSE_CAP_DONT_MASK); without a
	# default ACL the umask applies; an access ACL entry is kept (the kernel
	# enforces it: FUSE_CAP_POSIX_ACL).
	acls() {
		local got
		mkdir "$M/acl" && setfacl -m d:u::r-x,d:g::r--,d:o::--- "$M/acl" ||
			{ WHY="setfacl -d failed"; return 1; }
		(umask 722 && touch "$M/acl/f" && mkdir "$M/acl/d") || { WHY="create under the ACL"; return 1; }
		got=$(stat -c %A "$M/acl/f" "$M/acl/d" | tr '\n' ,)
		[ "$got" = "-r--r-----,dr-xr-----," ] || { WHY="modes under a default ACL with umask 722: $got"; return 1; }
		getfacl -cp "$M/acl/d" 2>/dev/null | grep -q '^default:other::---' ||
			{ WHY="the new directory did not inherit the default ACL"; return 1; }
		(umask 027 && touch "$M/acl-f" && mkdir "$M/acl-d") || { WHY="create"; return 1; }
		got=$(stat -c %A "$M/acl-f" "$M/acl-d" | tr '\n' ,)
		[ "$got" = "-rw-r-----,drwxr-x---," ] || { WHY="modes with umask 027 and no ACL: $got"; return 1; }
		setfacl -m u:nobody:r "$M/acl-f" && getfacl -cp "$M/acl-f" | grep -q '^user:nobody:r--$' &&
			[ "$(stat -c %A "$M/acl-f")" = "-rw-r-----" ] ||
			{ WHY="an access ACL entry: $(getfacl -cp "$M/acl-f" | tr '\n' ' ')"; return 1; }
		rm -rf "$M/acl" "$M/acl-f" "$M/acl-d"
	}
	check "POSIX ACLs: default ACL inherited without the umask, umask without one, access ACL kept" acls

	# Setting an access ACL drops setgid unless the caller is in the file's
	# group (as chmod does); the mount has allow_other for this.
	acl_sgid() {
		local got
		chmod o+x "$T" && chmod 777 "$M" && touch "$M/sg" && chown 100:100 "$M/sg" && chmod 2755 "$M/sg" ||
			{ WHY="setup"; return 1; }
		setpriv --reuid=100 --regid=101 --clear-groups setfacl -m u::rwx,g::rwx,o::rwx "$M/sg" ||
			{ WHY="setfacl as the owner"; return 1; }
		got=$(stat -c %A "$M/sg")
		[ "$got" = "-rwxrwxrwx" ] || { WHY="not in the group: $got, setgid should be gone"; return 1; }
		chmod 2755 "$M/sg"
		setpriv --reuid=100 --regid=100 --clear-groups setfacl -m u::rwx,g::rwx,o::rwx "$M/sg"
		got=$(stat -c %A "$M/sg")
		[ "$got" = "-rwxrwsrwx" ] || { WHY="in the group: $got, setgid should stay"; return 1; }
		rm -f "$M/sg"
		chmod 755 "$M"
	}
	check "an access ACL set by a non-member of the file's group drops setgid" acl_sgid

	# The kernel stamps writes with its coarse clock; zlfs's own stamps must
	# not run ahead of it, or a file changed later shows an earlier ctime.
	ctime_order() {
		local bad
		echo a > "$M/tsf" || return 1
		bad=$(cd "$M" && perl -MTime::HiRes=stat -e 'my $bad = 0;
			for my $i (1..200) {
				open(my $r, ">", "tsr") or die; close $r;
				open(my $w, ">>", "tsf") or die; print $w "x"; close $w;
				my @r = stat("tsr"); my @f = stat("tsf");
				$bad++ if $f[10] < $r[10]; unlink "tsr";
			}
			print $bad')
		rm -f "$M/tsf"
		[ "$bad" = 0 ] || { WHY="$bad of 200 later writes carried an earlier ctime"; return 1; }
	}
	check "timestamps: a later change never carries an earlier ctime" ctime_order

	# File handles (open_by_handle_at, what NFS export needs): a handle opens
	# its file after the kernel forgot the inode and after a remount, and is
	# stale once the file is gone.  Kept for after the remount below.
	handles() {
		echo handle-data > "$M/fh" && "$B/tests/fhandle" save "$M/fh" "$T/fh.handle" ||
			{ WHY="name_to_handle_at"; return 1; }
		echo gone > "$M/fh-gone" && "$B/tests/fhandle" save "$M/fh-gone" "$T/fh-gone.handle" ||
			{ WHY="name_to_handle_at"; return 1; }
		rm "$M/fh-gone"
		echo 2 > /proc/sys/vm/drop_caches
		local got
		got=$("$B/tests/fhandle" open "$M" "$T/fh.handle") && [ "$got" = handle-data ] ||
			{ WHY="open_by_handle_at after the caches were dropped: $got"; return 1; }
		"$B/tests/fhandle" open "$M" "$T/fh-gone.handle" >/dev/null 2>&1
		[ $? = 2 ] || { WHY="a removed file's handle is not stale (ESTALE)"; return 1; }
	}
	check "file handles: open_by_handle_at after the kernel forgot the inode; ESTALE once removed" handles

	# unlink while open: the space comes back once the file is closed (at the latest
	# after an unmount and a remount)
	unlink_open() {
		local f0 f1 f2 f3
		sync
		f0=$(stat -f -c %f "$M")
		dd if=/dev/urandom of="$M/ul" bs=1M count=200 conv=fsync status=none || { WHY="write"; return 1; }
		f1=$(stat -f -c %f "$M")
		[ $((f0 - f1)) -ge 51200 ] || { WHY="200 MiB written but only $((f0 - f1)) blocks used"; return 1; }
		exec 7<"$M/ul"
		rm "$M/ul"
		[ ! -e "$M/ul" ] || { WHY="still there after rm"; exec 7<&-; return 1; }
		local n
		n=$(head -c 1M <&7 | wc -c)
		[ "$n" = 1048576 ] || { WHY="reading the unlinked file gave $n bytes"; exec 7<&-; return 1; }
		f2=$(stat -f -c %f "$M")
		exec 7<&-
		sleep 0.2
		umnt "$M" "$IMG" || return 1
		fsck_clean "$IMG" || return 1
		mnt "$IMG" "$M" || return 1
		f3=$(stat -f -c %f "$M")
		[ "$f3" -ge $((f0 - 256)) ] ||
			{ WHY="free blocks: $f0 before, $f1 written, $f2 unlinked while open, $f3 after close+remount"; return 1; }
		NOTE="free blocks $f0 -> $f1 -> $f2 (unlinked, open) -> $f3 (closed, remounted)"
	}
	check "unlink while open gives the space back" unlink_open
	mountpoint -q "$M" || mnt "$IMG" "$M" || bad "posix remount" "$WHY"

	persisted() {  # after the remount above
		check_big5 || { WHY="after remount: $WHY"; return 1; }
		check_special || { WHY="after remount: $WHY"; return 1; }
		[ "$(cat "$M/app")" = abcd ] || { WHY="O_APPEND file after remount"; return 1; }
		[ "$(cat "$M/trunc" 2>/dev/null)" = xyz ] && [ "$(stat -c %s "$M/trunc0")" = 0 ] ||
			{ WHY="O_TRUNC files after remount: sizes $(stat -c %s "$M/trunc") and $(stat -c %s "$M/trunc0"), expected 3 and 0"; return 1; }
		[ "$(cat "$M/ns/file")" = data ] || { WHY="ns/file after remount"; return 1; }
		local got
		got=$("$B/tests/fhandle" open "$M" "$T/fh.handle") && [ "$got" = handle-data ] ||
			{ WHY="a file handle from before the remount: $got"; return 1; }
	}
	check "big, special, O_APPEND/O_TRUNC files, a file handle after remount" persisted

	second_mount() {
		local out rc=0 t0=$SECONDS
		mkdir -p "$T/second.mnt"
		"$ZLFS" "$IMG" "$T/second.mnt" >"$T/second.out" 2>&1 || rc=$?
		out=$(cat "$T/second.out")
		if [ $rc = 0 ] || mountpoint -q "$T/second.mnt"; then
			WHY="a second mount of a mounted image succeeded"
			fusermount3 -u "$T/second.mnt" 2>/dev/null
			return 1
		fi
		echo "$out" | grep -qiE 'lock|busy|in use|already' || { WHY="unclear message: '$out'"; return 1; }
		[ "$(cat "$M/ns/file")" = data ] || { WHY="the first mount no longer works"; return 1; }
		NOTE="exit $rc after $((SECONDS - t0)) s: $(echo "$out" | head -1)"
	}
	check "second mount refused" second_mount

	remount_now() {
		echo again >"$M/again"
		fusermount3 -u "$M" || { WHY="unmount"; return 1; }
		# no waiting for the old daemon to exit
		mnt "$IMG" "$M" || return 1
		[ "$(cat "$M/again")" = again ] || { WHY="data written before the unmount"; return 1; }
	}
	check "remount right after unmount" remount_now
	check "posix unmount" umnt "$M" "$IMG"
	check "posix fsck" fsck_clean "$IMG"

	# -o ro: reads work, writes give EROFS, and the image is not touched (its
	# metadata zones and zone state)
	read_only() {
		local before after
		before=$({ head -c 512M "$IMG"; cat "$IMG.zst"; } | md5sum)
		mnt "$IMG" "$M" -o ro || return 1
		[ "$(cat "$M/ns/file")" = data ] || { WHY="read"; fusermount3 -u "$M"; return 1; }
		expect EROFS "$CREATE" "$M/ns/new" || { fusermount3 -u "$M"; return 1; }
		expect EROFS 'unlink($ARGV[0])' "$M/ns/file" || { fusermount3 -u "$M"; return 1; }
		umnt "$M" "$IMG" || return 1
		after=$({ head -c 512M "$IMG"; cat "$IMG.zst"; } | md5sum)
		[ "$before" = "$after" ] || { WHY="a read-only mount changed the image"; return 1; }
	}
	check "read-only mount" read_only
	rm -f "$IMG" "$IMG.zst"
fi

finish
