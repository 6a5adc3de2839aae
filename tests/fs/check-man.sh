#!/bin/bash
# check-man.sh BUILD_DIR - the manual pages (man/) and --help/--version of
# every program zlfs installs.
#
#   1. meson install --destdir puts a page NAME.8 under share/man/man8 for
#      every installed program NAME (fsck.fuse.zlfs.8, umount.fuse.zlfs.8:
#      links to their programs' pages);
#   2. every page renders without a message: mandoc -T lint -W style, groff
#      -ww -man -z, and man -l (with warnings on), nothing on stderr;
#   3. every installed program (each name it is installed as) answers
#      --help with a usage on stdout and exit 0, and --version with
#      "NAME VERSION", VERSION meson's project version;
#   3b. every other program the build makes (meson introspect: executables
#      outside tests/, i.e. the bench tools fsync-bench and meta-bench; the
#      unit tests and test helpers are not programs) answers --help and
#      --version the same way;
#   4. every option a program's --help lists (-x, --long, and zlfs's -o
#      mount options, libfuse's "-o name" lines too) is the head of a tagged
#      paragraph (.TP) of its page: not only mentioned somewhere.
# Prints "check-man: NAME ok|FAIL ..." lines and "check-man: ok" at the end
# (exit 0), or "check-man: FAIL (N failed)" (exit 1).  Needs no root.
NAME=check-man
# shellcheck source=tests/fs/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
bad() { echo "check-man: $* FAIL"; FAILS=$((FAILS + 1)); }
good() { echo "check-man: $* ok"; }

for t in mandoc groff man perl meson; do
	command -v "$t" >/dev/null || die "(no $t: scripts/deps installs it)"
done
tmpdir

VERSION=$(meson introspect --projectinfo "$B" | perl -ne 'print $1 if /"version":\s*"([^"]*)"/')
[ -n "$VERSION" ] || die "(no project version from meson introspect)"

# ---- 1. installed ------------------------------------------------------------
DEST=$T/dest
if ! meson install -C "$B" --destdir "$DEST" --no-rebuild --quiet >"$T/install.log" 2>&1; then
	cat "$T/install.log"
	die "(meson install --destdir)"
fi
MAN8=$(find "$DEST" -type d -path '*/share/man/man8' | head -1)
[ -n "$MAN8" ] || die "(no share/man/man8 in the install)"
# the programs, under the names they are installed as: NAME PATH (links resolved in DEST)
mkdir -p "$T/run"
: >"$T/progs"
while IFS= read -r f; do
	name=$(basename "$f")
	target=$f
	if [ -L "$f" ]; then
		l=$(readlink "$f")
		case $l in
		/*) target=$DEST$l ;;
		*) target=$(dirname "$f")/$l ;;
		esac
	fi
	[ -x "$target" ] || { bad "installed $name (link to nothing: $target)"; continue; }
	ln -sf "$target" "$T/run/$name"   # run by its own name (fsck.fuse.zlfs, umount.fuse.zlfs)
	echo "$name" >>"$T/progs"
done < <(find "$DEST" \( -type f -o -type l \) \( -path '*/bin/*' -o -path '*/sbin/*' \) | sort)
[ -s "$T/progs" ] || die "(no programs installed)"
for name in $(cat "$T/progs"); do
	if [ -e "$MAN8/$name.8" ]; then
		good "installed $name.8"
	else
		bad "installed $name.8 (man8 has: $(ls "$MAN8" | tr '\n' ' '))"
	fi
done

# ---- 2. lint -------------------------------------------------------------------
for page in "$MAN8"/*.8; do
	p=$(basename "$page")
	{
		mandoc -T lint -W style "$page" 2>&1
		groff -ww -man -z "$page" 2>&1 >/dev/null
		MANWIDTH=80 man --warnings -l "$page" 2>&1 >"$T/$p.txt" || echo "man -l: exit $?"
		[ -s "$T/$p.txt" ] || echo "man -l: nothing rendered"
	} >"$T/$p.lint"
	if [ ! -s "$T/$p.lint" ]; then
		good "lint $p"
	else
		head -20 "$T/$p.lint"
		bad "lint $p"
	fi
done

# ---- 3. --help and --version -----------------------------------------------------
for name in $(cat "$T/progs"); do
	"$T/run/$name" --help >"$T/$name.help" 2>"$T/$name.help.err"
	rc=$?
	if [ "$rc" = 0 ] && grep -qi '^usage:' "$T/$name.help"; then
		good "$name --help"
	else
		head -5 "$T/$name.help" "$T/$name.help.err"
		bad "$name --help (exit $rc, usage on stdout expected)"
	fi
	out=$("$T/run/$name" --version 2>&1)
	rc=$?
	if [ "$rc" = 0 ] && printf '%s\n' "$out" | head -1 | grep -qE "^$name ${VERSION//./\\.}([ ,]|\$)"; then
		good "$name --version: $(printf '%s\n' "$out" | head -1)"
	else
		bad "$name --version (exit $rc, said '$out', want '$name $VERSION')"
	fi
done

# ---- 3b. the programs built but not installed ------------------------------------
# Executables whose meson.build is not under tests/; those not installed
# (the installed ones were run above under their installed names).
meson introspect --targets "$B" | SRC=$SRC perl -MJSON::PP -e '
	local $/; my $t = decode_json(<STDIN>);
	for (@$t) {
		next unless $_->{type} eq "executable" && !$_->{installed};
		next if index($_->{defined_in}, "$ENV{SRC}/tests/") == 0;
		print "$_->{name}\t$_->{filename}[0]\n";
	}' >"$T/built" || bad "meson introspect --targets"
nbuilt=0
while IFS=$'\t' read -r name path; do
	nbuilt=$((nbuilt + 1))
	if [ ! -x "$path" ]; then
		bad "$name (not built: $path)"
		continue
	fi
	"$path" --help >"$T/$name.bhelp" 2>"$T/$name.bhelp.err"
	rc=$?
	if [ "$rc" = 0 ] && grep -qi '^usage:' "$T/$name.bhelp"; then
		good "$name --help (built, not installed)"
	else
		head -5 "$T/$name.bhelp" "$T/$name.bhelp.err"
		bad "$name --help (exit $rc, usage on stdout expected)"
	fi
	out=$("$path" --version 2>&1)
	rc=$?
	if [ "$rc" = 0 ] && printf '%s\n' "$out" | head -1 | grep -qE "^$name ${VERSION//./\\.}([ ,]|\$)"; then
		good "$name --version: $(printf '%s\n' "$out" | head -1) (built, not installed)"
	else
		bad "$name --version (exit $rc, said '$out', want '$name $VERSION')"
	fi
done <"$T/built"
[ "$nbuilt" -ge 1 ] || bad "no built-only programs found by meson introspect (expected the bench tools)"

# ---- 4. every option of --help in its page ----------------------------------------
# The options a usage text lists, one per line: -x and --long after a blank,
# bracket, bar, comma or parenthesis; "-o name" lines (libfuse's); and the
# names of a "... (-o):" section, whose lines start "  name[=...][, name...]".
help_opts() {
	perl -ne '
		while (/(?:^|[\s\[|,(])(--?[A-Za-z][-A-Za-z0-9]*)/g) { print "$1\n" }
		while (/^\s+-o ([a-z][a-z0-9_]+)/g) { print "$1\n" }
		if (/\(-o\):\s*$/) { $o = 1; next }
		if ($o) {
			if (/^  [a-z]/) {
				for my $t (split " ") {
					(my $n = $t) =~ s/[=,].*//;
					print "$n\n";
					last unless $t =~ /,$/;
				}
			} elsif (!/^   /) {
				$o = 0;
			}
		}' | sort -u
}
# The words heading a page's tagged paragraphs (.TP: <dt> in mandoc's HTML),
# each cut at "=", one per line.
page_tags() {
	mandoc -T html -O fragment "$1" | perl -0777 -ne '
		while (/<dt\b[^>]*>(.*?)<\/dt>/gs) {
			my $t = $1;
			$t =~ s/<[^>]*>//g;
			$t =~ s/&#x2212;|&#8722;/-/g;
			$t =~ s/&amp;/&/g;
			for my $w (split /[\s,|\[\]]+/, $t) {
				$w =~ s/=.*//;
				print "$w\n" if length $w;
			}
		}' | sort -u
}
for name in $(cat "$T/progs"); do
	page=$MAN8/$name.8
	[ -e "$page" ] || continue   # reported above
	help_opts <"$T/$name.help" >"$T/$name.opts"
	page_tags "$page" >"$T/$name.tags"
	n=$(wc -l <"$T/$name.opts")
	if [ "$n" -lt 2 ]; then
		bad "$name: options in --help (found only $n: is the usage parsed?)"
		continue
	fi
	missing=$(comm -23 "$T/$name.opts" "$T/$name.tags" | tr '\n' ' ')
	if [ -z "$missing" ]; then
		good "$name: its $n options of --help are in $name.8"
	else
		bad "$name: $name.8 lacks an entry for option(s) --help lists: $missing"
	fi
done

verdict
