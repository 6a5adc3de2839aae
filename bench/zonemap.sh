#!/bin/bash
# bench/zonemap.sh MOUNTPOINT OUT.png [--title T] - snapshot the zone
# table of a mounted zlfs (MOUNTPOINT/.zlfs/zones) into a temporary file
# and draw it with bench/zonemap.py (one cell per zone, coloured by valid
# fraction, metadata / offline / read-only zones and the logs' current
# zones marked).  The title defaults to the mount point and the time.
# Needs python3-matplotlib; set PYTHON to choose the interpreter.
set -eu
usage() {
	echo "usage: $0 MOUNTPOINT OUT.png [--title TITLE]" >&2
	echo "  draws MOUNTPOINT/.zlfs/zones of a mounted zlfs as a zone map PNG" >&2
	exit 2
}
[ $# -ge 2 ] || usage
case "$1" in -h|--help) usage ;; esac
MNT=$1 OUT=$2
shift 2
TITLE="zlfs zones: $MNT ($(date '+%F %T'))"
case $# in
0) ;;
2) [ "$1" = --title ] || usage; TITLE=$2 ;;
*) usage ;;
esac
ZONES=$MNT/.zlfs/zones
if [ ! -e "$ZONES" ]; then
	echo "$0: $ZONES: not found (is a zlfs mounted at $MNT?)" >&2
	exit 1
fi

# Copy first: the table is read in one go, and the plot is of a single
# moment even if the filesystem keeps writing while we draw.
TMP=$(mktemp "${TMPDIR:-/tmp}/zlfs-zones.XXXXXX")
trap 'rm -f "$TMP"' EXIT
cat "$ZONES" >"$TMP"
if [ ! -s "$TMP" ]; then
	echo "$0: $ZONES read as empty (a FUSE file whose size reads as 0" >&2
	echo "  needs direct_io for its reads to return data)" >&2
	exit 1
fi

# The python3 on PATH may not be the one python3-matplotlib is installed
# for (pyenv, a venv): fall back to Debian's.
PY=${PYTHON:-}
if [ -z "$PY" ]; then
	PY=python3
	if ! "$PY" -c 'import matplotlib' 2>/dev/null && [ -x /usr/bin/python3 ]; then
		PY=/usr/bin/python3
	fi
fi
# (Not exec: the EXIT trap removes the copy afterwards.)
rc=0
"$PY" "$(dirname "$0")/zonemap.py" "$TMP" "$OUT" --title "$TITLE" || rc=$?
[ $rc = 0 ] || echo "$0: (the zones file above is a copy of $ZONES)" >&2
exit $rc
