#!/bin/bash
# check-readme.sh BUILD_DIR - every example in README.md runs, and every
# link in README.md and docs/*.md leads somewhere.
#
#   1. Each fenced block opened with ```sh is run as written, in order, by
#      one bash (set -e, so every command must succeed) per block, all in
#      one fresh temporary directory, with the build's programs first on
#      PATH (zlfs, zlfs-umount, zlfs-zdev, mkfs.zlfs, fsck.zlfs): the
#      tour and the multi-device example, mounts through FUSE included.
#      A block fails when a command exits nonzero; its output is shown.
#   2. A block opened with ```sh norun (the two top-level commands, which
#      install packages and take most of an hour) is not run: it must parse
#      (bash -n), and the first word of each command must be an executable
#      of the checkout.
#   3. There are at least 4 run blocks (so a README whose fences changed
#      cannot pass with nothing run), and README.md is at most 200 lines.
#   4. Every relative link [text](path) in README.md and docs/*.md names a
#      file or directory of the checkout (an #anchor after it is ignored).
# Mounts left by a failed block are unmounted at exit.  Prints
# "check-readme: NAME ok|FAIL ..." lines, then "check-readme: ok" (exit 0)
# or "check-readme: FAIL (N failed)" (exit 1).  Exit 77 (skipped)
# without root, /dev/fuse, fusermount3 or fsck.f2fs.  About 10 s.
NAME=check-readme
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
README=${CHECK_README:-$SRC/README.md}   # another file: to see the check fail

need_fuse
need_tools fusermount3 fsck.f2fs perl
need_built "$ZLFS" "$UMOUNT" "$ZDEV" "$MKFS" "$FSCK"

tmpdir

# ---- the blocks ------------------------------------------------------------
# Split README's ```sh blocks into $T/blocks/NN.sh (run) and NN.norun.
mkdir -p "$T/blocks" "$T/work"
perl -e '
	my ($dir, $in, $n, $fh) = ($ARGV[0], 0, 0, undef);
	open(my $r, "<", $ARGV[1]) or die "README: $!";
	while (<$r>) {
		if (!$in && /^```sh(\s+norun)?\s*$/) {
			$n++;
			my $name = sprintf("%s/%02d.%s", $dir, $n, $1 ? "norun" : "sh");
			open($fh, ">", $name) or die "$name: $!";
			$in = 1;
		} elsif ($in && /^```\s*$/) {
			close($fh);
			$in = 0;
		} elsif ($in) {
			print $fh $_;
		}
	}
	die "README: a ```sh block is not closed\n" if $in;
' "$T/blocks" "$README" || die "(cannot split README.md)"

nrun=$(ls "$T/blocks" | grep -c '\.sh$')
nnorun=$(ls "$T/blocks" | grep -c '\.norun$')
if [ "$nrun" -ge 4 ]; then
	pass "README has $nrun blocks to run and $nnorun not to run"
else
	fail "README blocks" "(only $nrun \`\`\`sh blocks to run; the tour has at least 4)"
fi
lines=$(wc -l <"$README")
if [ "$lines" -le 200 ]; then
	pass "README is $lines lines"
else
	fail "README length" "($lines lines, at most 200)"
fi

# The programs as an installed system has them, from the build.
export PATH=$B/fs:$B/mkfs:$B/fsck:$B/bench:$PATH
for f in "$T"/blocks/*; do
	name=$(basename "$f")
	first=$(grep -v '^\s*\(#\|$\)' "$f" | head -1 | cut -c1-60)
	case $f in
	*.norun)
		if ! bash -n "$f" 2>"$T/err"; then
			fail "block $name (not run: $first)" "(does not parse: $(head -2 "$T/err" | tr '\n' ' '))"
			continue
		fi
		missing=
		for w in $(grep -v '^\s*\(#\|$\)' "$f" | awk '{ print $1 }'); do
			[ -x "$SRC/$w" ] || missing="$missing $w"
		done
		if [ -z "$missing" ]; then
			pass "block $name (not run, its programs exist: $first)"
		else
			fail "block $name" "(programs not in the checkout:$missing)"
		fi
		;;
	*.sh)
		# The working directory (images, mounts) carries over from block
		# to block, as for a reader typing them one after another; set -e
		# ends a block at its first failing command.
		if (cd "$T/work" && bash -e "$f") >"$T/out" 2>&1; then
			pass "block $name ($first)"
		else
			rc=$?
			tail -15 "$T/out" | sed 's/^/    /'
			fail "block $name ($first)" "(exit $rc)"
		fi
		;;
	esac
done

# ---- the links ---------------------------------------------------------------
nlinks=0
for md in "$README" "$SRC"/docs/*.md "$SRC"/bench/results/*.md; do
	[ -e "$md" ] || continue
	dir=$(dirname "$md")
	rel=${md#"$SRC"/}
	while IFS= read -r target; do
		nlinks=$((nlinks + 1))
		path=${target%%#*}
		[ -n "$path" ] || continue   # an anchor in the same file
		if [ ! -e "$dir/$path" ]; then
			fail "link in $rel" "($target: no such file)"
		fi
	done < <(perl -ne 'while (/\]\(([^)\s]+)\)/g) { my $t = $1; print "$t\n" unless $t =~ m{^[a-z]+:}i }' "$md")
done
echo "check-readme: $nlinks relative links looked at"

verdict
