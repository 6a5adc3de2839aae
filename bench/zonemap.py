#!/usr/bin/env python3
# bench/zonemap.py ZONES_FILE OUT.png [--title T] - draw a zone map of a
# zlfs filesystem from a copy of MOUNTPOINT/.zlfs/zones (see
# bench/zonemap.sh): one cell per device zone, row-major in a square-ish
# grid, coloured by the zone's valid fraction (valid/cap, white = empty to
# dark blue = full); metadata zones (valid "-") grey hatched, offline zones
# black with a red cross, read-only zones gold; the logs' current zones
# outlined in the log's colour and labelled (HD WD CD HN WN CN GC).  Title
# with the zone counts, a colour bar and a legend.  Headless (Agg).  Maps
# of more than 1024 zones are a single image, one element per zone, with
# no per-cell labels or hatching (the logs' zones get hollow squares), so
# that ~100k zones draw in about 2 s.  ZONES_FILE "-" reads stdin.
# Needs python3-matplotlib (apt-get install python3-matplotlib); under
# another python3 (pyenv, venv) without it, re-runs with /usr/bin/python3.
import argparse
import math
import os
import sys

try:
    import matplotlib
except ImportError:
    # A python3 on PATH other than Debian's (pyenv, a venv) does not see
    # python3-matplotlib: retry once with /usr/bin/python3.
    if (os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3")
            and os.access("/usr/bin/python3", os.X_OK)
            and not os.environ.get("ZONEMAP_REEXEC")):
        os.environ["ZONEMAP_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit("zonemap.py: needs matplotlib: apt-get install python3-matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import colors as mcolors  # noqa: E402
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

HEADER = "# zone type cond wp valid cap log dev"
OLD_HEADER = "# zone type cond wp valid cap log"  # before the dev column
TYPES = ("conv", "seq")
CONDS = ("nowp", "empty", "iopen", "eopen", "closed", "full", "rdonly", "offline")
# log name -> (label, outline colour); the colours stay clear of the
# blue colour scale and of the grey / black / gold special zones.
LOGS = {
    "hot_data": ("HD", "#e41a1c"),
    "warm_data": ("WD", "#ff7f00"),
    "cold_data": ("CD", "#a65628"),
    "hot_node": ("HN", "#984ea3"),
    "warm_node": ("WN", "#f781bf"),
    "cold_node": ("CN", "#4daf4a"),
    "gc": ("GC", "#00e5e5"),
}
CMAP = "Blues"
META_COLOR = "#b0b0b0"
OFFLINE_COLOR = "#000000"
RDONLY_COLOR = "#ffd700"
SEP_COLOR = "#c8c8c8"  # cell borders (small maps)
MISSING_COLOR = "#c0c0c0"  # dots on zone numbers absent from the file
LABEL_MAX_ZONES = 1024  # per-cell patches and labels up to this many zones


class Zone:
    __slots__ = ("no", "type", "cond", "wp", "valid", "cap", "log")


def parse(f, name):
    zones = {}
    first = True
    for lineno, line in enumerate(f, 1):
        line = line.strip()
        if first and line and line not in (HEADER, OLD_HEADER):
            print(f"zonemap.py: {name}:1: warning: header is not {HEADER!r}",
                  file=sys.stderr)
        if line:
            first = False
        if not line or line.startswith("#"):
            continue

        def bad(why):
            sys.exit(f"zonemap.py: {name}:{lineno}: {why}: {line!r}")

        fld = line.split()
        if len(fld) not in (7, 8):
            bad(f"{len(fld)} fields, expected 8 (zone type cond wp valid cap log dev) "
                "or the older 7")
        z = Zone()
        try:
            z.no = int(fld[0])
            z.wp = None if fld[3] == "-" else int(fld[3])
            z.valid = None if fld[4] == "-" else int(fld[4])
            z.cap = int(fld[5])
        except ValueError:
            bad("zone, wp, valid and cap must be integers (wp and valid may be -)")
        z.type, z.cond, z.log = fld[1], fld[2], fld[6]
        if len(fld) == 8 and not fld[7].isdigit():
            bad("dev must be a device number")
        if z.no < 0:
            bad("negative zone number")
        if z.type not in TYPES:
            bad(f"type {z.type!r} not one of {' '.join(TYPES)}")
        if z.cond not in CONDS:
            bad(f"cond {z.cond!r} not one of {' '.join(CONDS)}")
        if z.log != "-" and z.log not in LOGS:
            bad(f"log {z.log!r} not - or one of {' '.join(LOGS)}")
        if z.no in zones:
            bad(f"zone {z.no} listed twice")
        zones[z.no] = z
    if not zones:
        sys.exit(f"zonemap.py: {name}: no zones")
    return zones


def frac(z):
    if z.valid is None:
        return None
    return min(max(z.valid / z.cap, 0.0), 1.0) if z.cap > 0 else 0.0


def summary(zones, n):
    zs = list(zones.values())
    seq = sum(z.type == "seq" for z in zs)
    free = sum(z.type == "seq" and z.cond == "empty" and z.valid == 0 for z in zs)
    full = sum(z.cond == "full" for z in zs)
    opened = sum(z.cond in ("iopen", "eopen", "closed") for z in zs)
    meta = sum(z.valid is None for z in zs)
    fr = [frac(z) for z in zs if z.valid is not None]
    mean = sum(fr) / len(fr) if fr else 0.0
    parts = [f"{len(zs)} zone{'s' if len(zs) != 1 else ''} "
             f"({len(zs) - seq} conv, {seq} seq)",
             f"free {free}", f"full {full}", f"open/closed {opened}",
             f"metadata {meta}", f"mean valid {100 * mean:.1f}%"]
    bad = [(c, sum(z.cond == c for z in zs)) for c in ("rdonly", "offline")]
    parts += [f"{c} {k}" for c, k in bad if k]
    if len(zs) != n:
        parts.append(f"not listed {n - len(zs)}")
    return " \u00b7 ".join(parts)


def nice_ticks(k, most=10):
    """Tick positions 0, step, 2*step, ... below k, step 1/2/5 x 10^e."""
    step = 1
    while k / step > most:
        for m in (2, 2.5, 2):  # 1 -> 2 -> 5 -> 10 -> 20 -> 50 ...
            step = int(step * m)
            if k / step <= most:
                break
    return np.arange(0, k, step)


def draw(zones, out, title):
    n = max(zones) + 1
    ncols = math.ceil(math.sqrt(n))
    nrows = math.ceil(n / ncols)
    small = n <= LABEL_MAX_ZONES

    # Base layer, one pixel per zone: RGBA from the colour scale, then the
    # special zones; zone numbers not listed (and the tail of the last
    # row) stay transparent.
    cmap = plt.get_cmap(CMAP)
    norm = mcolors.Normalize(0.0, 1.0)
    nos = np.fromiter(zones.keys(), dtype=np.int64, count=len(zones))
    fr = np.array([np.nan if frac(z) is None else frac(z) for z in zones.values()])
    cond = np.array([z.cond for z in zones.values()])
    rgba = np.zeros((nrows * ncols, 4))
    rgba[nos] = cmap(norm(np.nan_to_num(fr)))
    rgba[nos[np.isnan(fr)]] = mcolors.to_rgba(META_COLOR)
    rgba[nos[cond == "rdonly"]] = mcolors.to_rgba(RDONLY_COLOR)
    rgba[nos[cond == "offline"]] = mcolors.to_rgba(OFFLINE_COLOR)
    rgba = rgba.reshape(nrows, ncols, 4)

    # Figure: cells of ~0.3 in up to 1024 zones; above that a fixed size
    # with enough pixels for at least ~2 per zone.
    grid_w = min(max(ncols * 0.32, 5.0), 11.0) if small else 11.0
    grid_h = grid_w * nrows / ncols
    dpi = 110 if small else max(110, min(300, math.ceil(2.2 * ncols / grid_w)))
    fig = plt.figure(figsize=(grid_w + 3.6, grid_h + 1.6), dpi=dpi)
    ax = fig.add_axes([0.9 / (grid_w + 3.6), 0.5 / (grid_h + 1.6),
                       grid_w / (grid_w + 3.6), grid_h / (grid_h + 1.6)])
    ax.imshow(rgba, interpolation="nearest", aspect="equal",
              extent=(0, ncols, nrows, 0))
    ax.set_xlim(0, ncols)
    ax.set_ylim(nrows, 0)

    # Axis ticks: column offset along x, first zone of the row along y.
    xt = nice_ticks(ncols)
    yt = nice_ticks(nrows)
    ax.set_xticks(xt + 0.5, [f"+{c}" for c in xt], fontsize=8)
    ax.set_yticks(yt + 0.5, [str(r * ncols) for r in yt], fontsize=8)
    ax.tick_params(length=2)
    ax.set_xlabel("zone offset in row", fontsize=9)
    ax.set_ylabel("first zone of row", fontsize=9)

    logs = {}  # zone -> list of log names
    for no, z in sorted(zones.items()):
        if z.log != "-":
            logs.setdefault(no, []).append(z.log)
    for no, names in logs.items():
        if len(names) > 1:
            print(f"zonemap.py: warning: zone {no} holds several logs: "
                  f"{' '.join(names)}", file=sys.stderr)

    # Cell size in points, for line widths and label font size.
    cell_pt = grid_w * 72.0 / ncols
    if small:
        # Cell borders, hatching of the special zones, log outlines and
        # labels.
        sep = min(1.0, cell_pt / 25)
        ax.add_collection(PatchCollection(
            [Rectangle((no % ncols, no // ncols), 1, 1) for no in range(n)],
            facecolor="none", edgecolor=SEP_COLOR, lw=sep, zorder=2))
        for no in range(n):
            r, c = divmod(no, ncols)
            z = zones.get(no)
            if z is None:
                hatch, hc = "....", MISSING_COLOR
            elif z.cond == "offline":
                hatch, hc = "xx", "#ff3030"
            elif z.cond == "rdonly":
                hatch, hc = "..", "#806000"
            elif z.valid is None:
                hatch, hc = "////", "#6a6a6a"
            else:
                continue
            ax.add_patch(Rectangle((c, r), 1, 1, fill=False, hatch=hatch,
                                   edgecolor=hc, lw=0, zorder=3))
        lw = min(3.0, max(1.2, cell_pt / 8))
        fs = min(9.0, max(5.0, cell_pt * 0.42))
        for no, names in logs.items():
            r, c = divmod(no, ncols)
            col = LOGS[names[0]][1]
            ax.add_patch(Rectangle((c + 0.04, r + 0.04), 0.92, 0.92, fill=False,
                                   edgecolor=col, lw=lw, zorder=5))
            ax.text(c + 0.5, r + 0.5, "/".join(LOGS[x][0] for x in names),
                    ha="center", va="center", fontsize=fs, fontweight="bold",
                    color="black", zorder=6,
                    bbox=dict(boxstyle="round,pad=0.12", fc="white", ec=col,
                              lw=0.8, alpha=0.9))
    else:
        # One pixel-ish per zone: hollow squares a few points wide, so
        # that the log zones stand out whatever the zone count.
        ms = max(7.0, cell_pt)
        for no, names in logs.items():
            r, c = divmod(no, ncols)
            col = LOGS[names[0]][1]
            ax.plot(c + 0.5, r + 0.5, marker="s", ms=ms, mfc="none", mec="white",
                    mew=3.2, zorder=5)
            ax.plot(c + 0.5, r + 0.5, marker="s", ms=ms, mfc="none", mec=col,
                    mew=1.8, zorder=6)
    if n % ncols:
        # The end of the map in a short last row: outline the cells past
        # the last zone, which would otherwise read as empty zones.
        k = n % ncols
        ax.plot([k, k, ncols], [nrows, nrows - 1, nrows - 1], color="#808080",
                lw=0.8, zorder=4, solid_joinstyle="miter")
    for s in ax.spines.values():
        s.set_color("#808080")

    # Colour bar.
    fw, fh = grid_w + 3.6, grid_h + 1.6
    cb_h = min(grid_h, 4.0)
    cax = fig.add_axes([(0.9 + grid_w + 0.25) / fw, (0.5 + grid_h - cb_h) / fh,
                        0.18 / fw, cb_h / fh])
    cb = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), cax=cax)
    cb.set_label("valid / cap", fontsize=9)
    cb.ax.tick_params(labelsize=8)
    cb.set_ticks([0, 0.25, 0.5, 0.75, 1.0], labels=["0", "25%", "50%", "75%", "100%"])

    # Legend: the special zones, then each log with its current zone.
    hs = small
    handles = [
        Patch(fc=cmap(0.0), ec="#808080", lw=0.6, label="empty (valid 0)"),
        Patch(fc=cmap(1.0), ec="#808080", lw=0.6, label="full (valid = cap)"),
        Patch(fc=META_COLOR, ec="#6a6a6a", hatch="////" if hs else None,
              lw=0.6, label="metadata (valid -)"),
    ]
    if (cond == "offline").any():
        handles.append(Patch(fc=OFFLINE_COLOR, ec="#ff3030",
                             hatch="xx" if hs else None, lw=0.6, label="offline"))
    if (cond == "rdonly").any():
        handles.append(Patch(fc=RDONLY_COLOR, ec="#806000",
                             hatch=".." if hs else None, lw=0.6, label="read-only"))
    if len(zones) < n:
        handles.append(Patch(fc="white", ec=MISSING_COLOR if hs else "#808080",
                             hatch="...." if hs else None, lw=0.6,
                             label="zone number not listed"))
    where = {}
    for no, names in logs.items():
        for x in names:
            where.setdefault(x, []).append(no)
    for name, (lab, col) in LOGS.items():
        if name not in where:
            continue
        zl = ",".join(str(no) for no in where[name][:3])
        if len(where[name]) > 3:
            zl += ",\u2026"
        if small:
            h = Patch(fc="white", ec=col, lw=2.0, label=f"{lab} {name}: zone {zl}")
        else:
            h = Line2D([], [], ls="none", marker="s", ms=8, mfc="none", mec=col,
                       mew=1.8, label=f"{lab} {name}: zone {zl}")
        handles.append(h)
    fig.legend(handles=handles, loc="upper left", fontsize=8, frameon=False,
               bbox_to_anchor=((0.9 + grid_w + 1.2) / fw, (0.5 + grid_h) / fh),
               handlelength=1.6, handleheight=1.2, borderaxespad=0)

    sub = summary(zones, n)
    fig.text(0.5, 1 - 0.25 / (grid_h + 1.6), title or "zlfs zone map",
             ha="center", va="top", fontsize=12, fontweight="bold")
    fig.text(0.5, 1 - 0.62 / (grid_h + 1.6), sub, ha="center", va="top",
             fontsize=8.5, wrap=True)
    try:
        fig.savefig(out, dpi=dpi, bbox_inches="tight", pad_inches=0.15)
    except OSError as e:
        sys.exit(f"zonemap.py: {e}")
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(
        description="Draw a zone map PNG from a zlfs .zlfs/zones file.")
    ap.add_argument("zones_file", metavar="ZONES_FILE",
                    help="copy of MOUNTPOINT/.zlfs/zones, or - for stdin")
    ap.add_argument("out", metavar="OUT.png")
    ap.add_argument("--title", default=None, help="title line")
    a = ap.parse_args()
    if a.zones_file == "-":
        zones = parse(sys.stdin, "<stdin>")
    else:
        try:
            with open(a.zones_file) as f:
                zones = parse(f, a.zones_file)
        except OSError as e:
            sys.exit(f"zonemap.py: {e}")
    draw(zones, a.out, a.title)


if __name__ == "__main__":
    main()
