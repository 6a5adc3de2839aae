#!/usr/bin/env python3
# bench/wa-model.py [U ...] [--blocks B] [--u U] [--simulate] - write
# amplification (WA) of greedy cleaning in a log-structured store under
# uniform random overwrites of single blocks.
#
# Model.  N sections of b blocks each, U = u*N*b live blocks (u: live data
# over physical capacity, every section counted).  Each user write
# overwrites a block chosen uniformly; the cleaner takes the section with
# the fewest valid blocks, copies its j valid blocks out and frees it, so
# every b - j user writes cost j copies:
#     WA = (user + copies) / user = b / (b - j) = 1 / (1 - v),  v = j / b.
# Mean-field steady state (N -> infinity): a section leaves the log full
# (b valid) and drops from k to k-1 valid at rate k/U per user write; with
# the same flux through every level above j, the section count gives
#     u = (b - j) / (b * (H_b - H_j))            (H_n: harmonic numbers)
# with H linear between integers (the victim mixes levels j and j+1).
# This is the mean-field model of greedy for uniform traffic (Hu, Haas et
# al., "Write amplification analysis in flash-based solid state drives",
# SYSTOR 2009; Van Houdt, "A mean field model for a class of garbage
# collection algorithms in flash-based SSDs", SIGMETRICS 2013).  For large
# sections, H_b - H_j -> ln(b/j) = -ln v and it becomes the classic
#     u = (v - 1) / ln v,   WA = 1 / (1 - v)
# of Bux & Iliadis ("Performance of greedy garbage collection in
# flash-based solid-state drives", Perf. Eval. 2010) and Desnoyers
# ("Analytic modeling of SSD write performance", SYSTOR 2012), who writes
# it with the Lambert W function: WA = a / (a + W0(-a e^-a)), a = 1/u.
# Cross-check: Xiang & Kurkoski (arXiv:1110.4245) quote WA 2.36 (2.35
# simulated) at overprovisioning 0.3, i.e. u = 1/1.3; this gives 2.36.
# A uniform workload is the worst case for greedy only among the simple
# ones: hot/cold skew and multi-block writes change the figures.
#
# Usage:
#   wa-model.py [U ...] [--blocks B]   table for U (default 0.50..0.95)
#   wa-model.py --u 0.8 [--blocks B]   just the WA, for other scripts
#   wa-model.py --simulate [U ...] [--sections N] [--blocks B] [--seed S]
#                                      Monte-Carlo greedy vs the model
# --blocks: section size in blocks, default 16384 (64 MiB of 4 KiB blocks;
# 512 with --simulate); "inf" for the large-section limit.
# From Python (the file name has a dash, so load it by path):
#   spec = importlib.util.spec_from_file_location("wa", "bench/wa-model.py")
#   wa = importlib.util.module_from_spec(spec); spec.loader.exec_module(wa)
#   wa.greedy_wa(0.8, 16384)
# Standard library only.
import argparse
import math
import random
import sys

EULER = 0.5772156649015329


def harmonic(x):
    """H_x for real x >= 0, linear between integers."""
    n = int(x)
    h = (sum(1.0 / k for k in range(1, n + 1)) if n < 64 else
         math.log(n) + EULER + 1 / (2 * n) - 1 / (12 * n * n) + 1 / (120 * n ** 4))
    return h + (x - n) / (n + 1)


def _bisect(f, lo, hi, target):
    """x in [lo, hi] with f(x) = target, f increasing."""
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def victim_valid(u, blocks=None):
    """Valid fraction v of greedy's victim at utilisation u, for sections
    of `blocks` blocks (None or inf: the large-section limit)."""
    if not 0 < u < 1:
        raise ValueError("u must be in (0, 1)")
    if blocks is None or math.isinf(blocks):
        return _bisect(lambda v: (v - 1) / math.log(v), 1e-300, 1 - 1e-15, u)
    b = int(blocks)
    hb = harmonic(b)
    if u <= 1 / hb:                     # the victim is always empty
        return 0.0
    j = _bisect(lambda j: (b - j) / (b * (hb - harmonic(j))), 0.0, b - 1e-9, u)
    return j / b


def greedy_wa(u, blocks=None):
    """Greedy WA at utilisation u (see the model above)."""
    return 1 / (1 - victim_valid(u, blocks))


def simulate(u, sections=256, blocks=512, seed=1, rounds=6):
    """Monte-Carlo WA of greedy: `sections` sections of `blocks` blocks,
    u*sections*blocks live blocks, uniform random single-block overwrites.
    The victim is read, erased and its valid blocks written back at its
    start; it is then the open section (as a cleaner with a one-section
    buffer).  Warm-up of 2 device capacities of user writes, then WA
    measured over `rounds` capacities."""
    rng = random.Random(seed)
    cap = sections * blocks
    live = int(u * cap)
    where = list(range(live))           # logical -> physical block
    owner = list(range(live)) + [-1] * (cap - live)  # physical -> logical
    valid = [blocks] * (live // blocks) + [live % blocks] + \
        [0] * (sections - live // blocks - 1)
    cur = live // blocks                # open section and its next slot
    pos = live % blocks
    free = list(range(cur + 1, sections))
    copies = 0

    def next_section():
        nonlocal cur, pos, copies
        if free:
            cur, pos = free.pop(), 0
            return
        vic = min(range(sections), key=valid.__getitem__)
        base = vic * blocks
        keep = [lba for lba in owner[base:base + blocks] if lba >= 0]
        owner[base:base + blocks] = keep + [-1] * (blocks - len(keep))
        for i, lba in enumerate(keep):
            where[lba] = base + i
        copies += len(keep)
        cur, pos = vic, len(keep)

    def run(n):
        nonlocal pos
        rand = rng.random
        for _ in range(n):
            lba = int(rand() * live)
            old = where[lba]
            owner[old] = -1
            valid[old // blocks] -= 1
            while pos == blocks:
                next_section()
            new = cur * blocks + pos
            pos += 1
            owner[new] = lba
            where[lba] = new
            valid[cur] += 1

    run(2 * cap)
    copies = 0
    run(rounds * cap)
    return (rounds * cap + copies) / (rounds * cap)


def blocks_arg(s):
    return math.inf if s.lower() in ("inf", "infinity") else int(s)


def fmt_blocks(b):
    return "inf" if math.isinf(b) else str(b)


def main():
    p = argparse.ArgumentParser(description="Greedy-cleaning write amplification "
                                "under uniform random single-block overwrites.")
    p.add_argument("us", nargs="*", type=float, metavar="U",
                   help="utilisations (live / physical), default 0.50..0.95")
    p.add_argument("--u", type=float, help="print only the WA at this u")
    p.add_argument("--blocks", type=blocks_arg,
                   help="blocks per section (default 16384; 512 with --simulate; inf)")
    p.add_argument("--simulate", action="store_true",
                   help="compare a Monte-Carlo simulation with the model")
    p.add_argument("--sections", type=int, default=256, help="sections simulated (256)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    for u in a.us + ([a.u] if a.u is not None else []):
        if not 0 < u < 1:
            p.error("u must be in (0, 1)")
    if a.u is not None:
        print("%.4f" % greedy_wa(a.u, a.blocks if a.blocks is not None else 16384))
        return
    us = a.us or [0.50 + 0.05 * i for i in range(10)]

    if a.simulate:
        b = a.blocks if a.blocks is not None else 512
        if math.isinf(b):
            p.error("--simulate needs a finite --blocks")
        print("greedy, uniform random overwrites: %d sections x %d blocks simulated"
              % (a.sections, b))
        print("%5s %8s %8s %8s %7s" % ("u", "sim", "model", "limit", "diff"))
        for u in us:
            s = simulate(u, a.sections, b, a.seed)
            m = greedy_wa(u, b)
            print("%5.2f %8.3f %8.3f %8.3f %+6.1f%%"
                  % (u, s, m, greedy_wa(u), 100 * (s - m) / m))
        print("diff: simulation against the model for %d-block sections" % b)
        return

    b = a.blocks if a.blocks is not None else 16384
    print("greedy WA, uniform random overwrites, sections of %s blocks"
          % fmt_blocks(b))
    print("%5s %8s %8s %8s" % ("u", "victim v", "WA", "WA limit"))
    for u in us:
        print("%5.2f %8.4f %8.3f %8.3f"
              % (u, victim_valid(u, b), greedy_wa(u, b), greedy_wa(u)))


if __name__ == "__main__":
    sys.exit(main())
