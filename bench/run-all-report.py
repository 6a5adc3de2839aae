#!/usr/bin/python3
"""bench/run-all-report.py RESULTS_DIR - the tables and plots of bench/run-all.

Reads RESULTS_DIR/raw.csv (round,fs,case,value,unit,load1,time_utc) and
RESULTS_DIR/meta.txt (key=value), writes RESULTS_DIR/results.md and, with
matplotlib, results-abs.png (every case: median with min-max bars),
results-ratio.png (speed against ext4-on-loop and against the FUSE floor)
and results-modes.png (the write orderings).  Medians are of the rounds
that gave a number; min-max is their range.  Ratios are speed ratios of
medians: above 1 is faster than the reference (for times, the reference's
time divided by this one's)."""
import csv
import os
import statistics
import sys

FS_LABEL = {
    "zimg": "zlfs, image on disk",
    "zufs": "zlfs, UFS model",
    "fuse2fs": "fuse2fs, ext4 image",
    "ext4": "kernel ext4, loop",
    "f2fs": "kernel f2fs, loop",
    "floor": "FUSE floor (passthrough_ll, tmpfs)",
    "floorf": "FUSE floor with zlfs's features (passthrough_ll -o writeback,xattr,default_permissions, tmpfs)",
}
FS_SHORT = {"zimg": "zlfs-img", "zufs": "zlfs-ufs", "fuse2fs": "fuse2fs", "ext4": "ext4-loop",
            "f2fs": "f2fs-loop", "floor": "floor", "floorf": "floor+features"}
# case: label, unit, higher is better
CASES = [
    ("seqw", "seq write, buffered 1 MiB + fsync", "MB/s", True),
    ("seqr", "seq read, buffered 1 MiB, cold", "MB/s", True),
    ("dseqw", "seq write, O_DIRECT 1 MiB", "MB/s", True),
    ("dseqr", "seq read, O_DIRECT 1 MiB, cold", "MB/s", True),
    ("randw", "random 4 KiB write + fsync", "IOPS", True),
    ("randr", "random 4 KiB read, O_DIRECT", "IOPS", True),
    ("create", "create small files", "files/s", True),
    ("stat", "stat", "files/s", True),
    ("ls", "ls -l, cold", "files/s", True),
    ("unlink", "delete", "files/s", True),
    ("create4k", "create + write 4 KiB + close", "files/s", True),
    ("unlink4k", "delete 4 KiB files", "files/s", True),
    ("sqlite-delete", "SQLite, a transaction per insert, rollback journal", "inserts/s", True),
    ("sqlite-wal", "SQLite, a transaction per insert, WAL", "inserts/s", True),
    ("git", "git init + add + commit of the tree, cold status", "s", False),
    ("untar", "untar source tree", "s", False),
    ("rebuild", "rebuild zlfs (meson + ninja -j2)", "s", False),
    ("rmtree", "rm -rf both trees", "s", False),
    ("dbench", "dbench (mail/file server mix)", "MB/s", True),
]
MODES = ["zwl", "nolock", "zwp"]


def fmt(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def main():
    out = sys.argv[1]
    meta = {}
    with open(os.path.join(out, "meta.txt")) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    vals, fails, loads = {}, {}, []
    with open(os.path.join(out, "raw.csv")) as f:
        for row in csv.DictReader(f):
            key = (row["fs"], row["case"])
            try:
                loads.append(float(row["load1"]))
            except ValueError:
                pass
            if row["value"] == "FAIL":
                fails[key] = fails.get(key, 0) + 1
            else:
                try:
                    vals.setdefault(key, []).append(float(row["value"]))
                except ValueError:
                    fails[key] = fails.get(key, 0) + 1
    fslist = [f for f in meta.get("filesystems", "").split() if f in FS_LABEL]
    rounds = int(meta.get("rounds", "0") or 0)

    def med(fs, case):
        v = vals.get((fs, case))
        return statistics.median(v) if v else None

    def cell(fs, case):
        v = vals.get((fs, case))
        nf = fails.get((fs, case), 0)
        if not v:
            return "FAIL" if nf else "-"
        s = fmt(statistics.median(v))
        if len(v) > 1:
            s += f" ({fmt(min(v))}–{fmt(max(v))})"
        if nf:
            s += f" [{nf} failed]"
        return s

    def ratio(fs, ref, case, higher):
        a, b = med(fs, case), med(ref, case)
        if a is None or b is None or a == 0 or b == 0:
            return None
        return a / b if higher else b / a

    cases = [c for c in CASES if any((fs, c[0]) in vals or (fs, c[0]) in fails for fs in fslist)]
    L = []
    L.append("# zlfs against its peers: bench/run-all")
    L.append("")
    L.append(f"`{meta.get('command', 'bench/run-all')}` — {meta.get('date_start', '?')} to "
             f"{meta.get('date_end', '?')} ({meta.get('minutes', '?')} min), checkout at commit {meta.get('commit', '?')}, "
             f"zlfs built in {meta.get('build', '?')} from {meta.get('build_source', '?')}, "
             f"kernel {meta.get('kernel', '?')}, {meta.get('cpus', '?')} cores, {meta.get('mem_gib', '?')} GiB, "
             f"libfuse {meta.get('libfuse', '?')}, fuse2fs {meta.get('fuse2fs', '?')}, images on "
             f"{meta.get('disk', '?')}.")
    L.append("")
    lo = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "?"
    L.append(f"**Load average** (1/5/15 min) at the start {meta.get('load_start', '?')}, at the end "
             f"{meta.get('load_end', '?')}; the 1-minute load when the figures were taken ranged {lo} "
             "(a shared machine: other work ran beside this one). **The absolute figures are noise; only "
             "ratios measured side by side in this one run mean something.**")
    L.append("")
    scaled = []
    if meta.get("quick") == "1":
        scaled.append("a QUICK smoke run (tiny sizes): not a measurement")
    if meta.get("seq_mb") != "1024":
        scaled.append(f"sequential size {meta.get('seq_mb')} MiB (not 1 GiB)")
    if meta.get("files") != "100000":
        scaled.append(f"{meta.get('files')} small files (not 100,000)")
    if rounds < 3:
        scaled.append(f"{rounds} round(s) (fewer than 3: no real spread)")
    if scaled:
        L.append("Scaled down: " + "; ".join(scaled) + ".")
        L.append("")
    L.append(f"Settings: {rounds} interleaved rounds (every filesystem in turn, case group by case group, "
             f"then the next round; a fresh filesystem per group), sequential {meta.get('seq_mb')} MiB, random "
             f"cases {meta.get('rand_secs')} s each (writes on a laid-out {meta.get('rand_mb')} MiB file, reads "
             f"over the {meta.get('seq_mb')} MiB one), {int(meta.get('files', '0')):,} small files, "
             f"{int(meta.get('small_files', '0') or 0):,} files of 4 KiB, "
             f"{int(meta.get('sqlite_inserts', '0') or 0):,} SQLite inserts, dbench "
             f"{meta.get('dbench_secs')} s with {meta.get('dbench_clients')} clients, source tree "
             f"{meta.get('tree', '-')}; rebuild targets: {meta.get('build_targets')}. Caches dropped "
             "(sync + drop_caches) before every case.")
    L.append("")
    gib = int(meta.get("image_mb", "4096")) // 1024
    L.append("Filesystems: " + "; ".join(f"**{FS_SHORT[f]}** = {FS_LABEL[f]}" for f in fslist) +
             f". UFS model: `IMAGE?{meta.get('ufs_model', '')}` on a {gib} GiB image (64 MiB zones) in /dev/shm, "
             f"mode=nolock (the default); the disk images are {gib} GiB files in the same directory, written in "
             "full before the runs (zlfs-zdev --thick, 64 MiB zones; dd for ext4's).")
    if meta.get("f2fs_note"):
        L.append("")
        L.append(f"**Kernel f2fs is not in the table**: {meta['f2fs_note']}.")
    L.append("")
    L.append("## Results: median (min–max) over the rounds")
    L.append("")
    L.append("| case | unit | " + " | ".join(FS_SHORT[f] for f in fslist) + " |")
    L.append("| --- | --- | " + " | ".join("---:" for _ in fslist) + " |")
    for c, label, unit, hi in cases:
        u = unit + ("" if hi else ", lower is better")
        L.append(f"| {label} | {u} | " + " | ".join(cell(f, c) for f in fslist) + " |")
    for ref, name in (("ext4", "ext4-on-loop"), ("fuse2fs", "fuse2fs"), ("floor", "the FUSE floor"),
                      ("floorf", "the FUSE floor with zlfs's features")):
        if ref not in fslist:
            continue
        L.append("")
        L.append(f"## Speed relative to {name} (ratio of medians; above 1 = faster)")
        L.append("")
        others = [f for f in fslist if f != ref]
        L.append("| case | " + " | ".join(FS_SHORT[f] for f in others) + " |")
        L.append("| --- | " + " | ".join("---:" for _ in others) + " |")
        for c, label, unit, hi in cases:
            cells = []
            for f in others:
                x = ratio(f, ref, c, hi)
                cells.append("-" if x is None else f"{x:.2f}x")
            L.append(f"| {label} | " + " | ".join(cells) + " |")
    have_modes = any((f"zufs-{m}", k) in vals for m in MODES for k in ("modefs", "moderaw"))
    if have_modes:
        L.append("")
        L.append("## Write orderings on the UFS-like device: median (min–max) IOPS")
        L.append("")
        L.append("4 KiB random writes with dispatcher merging off. Through the mount: fio O_DIRECT psync, "
                 f"8 jobs x 32 MiB, {meta.get('mode_secs')} s, mode=… on the zlfs-ufs device. Raw device: "
                 "zlfs-bench, `mem:size=4G,zone_size=256M,conv_zones=4,queues=1,qd=32,lat_us=100,"
                 "hibernate_ms=2`, 1 zone, QD 32 (as bench/ufs-modes.sh).")
        L.append("")
        L.append("| mode | through the mount | raw device |")
        L.append("| --- | ---: | ---: |")
        for m in MODES:
            L.append(f"| {m} | {cell('zufs-' + m, 'modefs')} | {cell('zufs-' + m, 'moderaw')} |")
        L.append("")
        for k, what in (("modefs", "through the mount"), ("moderaw", "raw device")):
            n = med("zufs-nolock", k)
            parts = []
            for m in ("zwl", "zwp"):
                d = med("zufs-" + m, k)
                if n and d:
                    parts.append(f"nolock/{m} = {n / d:.2f}x")
            if parts:
                L.append(f"- {what}: " + ", ".join(parts))
    nf = sum(fails.values())
    if nf:
        L.append("")
        L.append(f"## Failures ({nf})")
        L.append("")
        fp = os.path.join(out, "failures.txt")
        if os.path.exists(fp):
            with open(fp) as f:
                for line in f:
                    L.append("- " + line.strip())
    L.append("")
    L.append("Every figure of every round, with the 1-minute load average when it was taken, is in raw.csv.")
    pngs = plots(out, fslist, cases, vals, med, ratio, have_modes)
    if pngs:
        L.append("")
        for p, alt in pngs:
            L.append(f"![{alt}]({p})")
            L.append("")
    else:
        L.append("")
        L.append("(No plots: python3-matplotlib is not installed.)")
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(L).rstrip() + "\n")


def plots(out, fslist, cases, vals, med, ratio, have_modes):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    colors = {"zimg": "#1f77b4", "zufs": "#6baed6", "fuse2fs": "#ff7f0e", "ext4": "#2ca02c",
              "f2fs": "#9467bd", "floor": "#7f7f7f", "floorf": "#bcbd22"}
    res = []
    # every case: median with min-max
    n = len(cases)
    cols = 4
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.5 * rows), squeeze=False)
    for i, (c, label, unit, hi) in enumerate(cases):
        ax = axes[i // cols][i % cols]
        xs, ms, lo, up, cs = [], [], [], [], []
        for j, f in enumerate(fslist):
            v = vals.get((f, c))
            if not v:
                continue
            m = statistics.median(v)
            xs.append(j)
            ms.append(m)
            lo.append(m - min(v))
            up.append(max(v) - m)
            cs.append(colors[f])
        ax.bar(xs, ms, color=cs, yerr=[lo, up], capsize=3, ecolor="black", linewidth=0)
        ax.set_xticks(range(len(fslist)))
        ax.set_xticklabels([FS_SHORT[f] for f in fslist], rotation=45, ha="right", fontsize=7)
        ax.set_title(f"{label}\n({unit}{'' if hi else ', lower is better'})", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    for i in range(n, rows * cols):
        axes[i // cols][i % cols].axis("off")
    fig.suptitle("bench/run-all: median, bars = min-max over the rounds", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "results-abs.png"), dpi=72)
    plt.close(fig)
    res.append(("results-abs.png", "every case, median and min-max"))
    # speed ratios
    refs = [r for r in ("ext4", "floor") if r in fslist]
    if refs:
        fig, axes = plt.subplots(1, len(refs), figsize=(6.5 * len(refs), 0.32 * len(cases) * 1.2 + 1.5),
                                 squeeze=False)
        for k, ref in enumerate(refs):
            ax = axes[0][k]
            others = [f for f in fslist if f != ref]
            h = 0.8 / max(1, len(others))
            for j, f in enumerate(others):
                ys, xs = [], []
                for i, (c, label, unit, hi) in enumerate(cases):
                    x = ratio(f, ref, c, hi)
                    if x is not None:
                        ys.append(i + (j - (len(others) - 1) / 2) * h)
                        xs.append(x)
                ax.barh(ys, xs, height=h, color=colors[f], label=FS_SHORT[f])
            ax.axvline(1, color="black", linewidth=0.8)
            ax.set_xscale("log")
            ax.set_yticks(range(len(cases)))
            ax.set_yticklabels([c[1] for c in cases], fontsize=7)
            ax.invert_yaxis()
            ax.set_title(f"speed relative to {FS_SHORT[ref]} (log; >1 faster)", fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
            ax.legend(fontsize=7, loc="lower right")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "results-ratio.png"), dpi=72)
        plt.close(fig)
        res.append(("results-ratio.png", "speed relative to ext4-on-loop and to the FUSE floor"))
    if have_modes:
        fig, axes = plt.subplots(1, 2, figsize=(7, 2.6), squeeze=False)
        for k, (case, title) in enumerate((("modefs", "through the mount (fio 8 jobs)"),
                                           ("moderaw", "raw device (zlfs-bench QD 32)"))):
            ax = axes[0][k]
            ms, lo, up = [], [], []
            for m in MODES:
                v = vals.get(("zufs-" + m, case)) or [0]
                md = statistics.median(v)
                ms.append(md)
                lo.append(md - min(v))
                up.append(max(v) - md)
            ax.bar(range(3), ms, yerr=[lo, up], capsize=3, color=["#d62728", "#1f77b4", "#ff9896"])
            ax.set_xticks(range(3))
            ax.set_xticklabels(MODES, fontsize=8)
            ax.set_title(f"4 KiB random write IOPS, {title}", fontsize=8)
            ax.tick_params(axis="y", labelsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "results-modes.png"), dpi=72)
        plt.close(fig)
        res.append(("results-modes.png", "write orderings on the UFS-like device"))
    return res


if __name__ == "__main__":
    main()
