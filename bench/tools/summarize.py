#!/usr/bin/env python3
"""Turns the measurements of bench/run.sh into Markdown tables.

usage: summarize.py RESULTS.tsv SIZES.tsv WORKDIR
  RESULTS.tsv: prog config rep wall user sys   (seconds)
  SIZES.tsv:   prog what calls bytes [seconds]
  WORKDIR/<prog>.calls: calls counted from a callscope trace
"""
import statistics
import sys
from collections import defaultdict

CONFIGS = [
    ("plain", "no instrumentation (baseline)"),
    ("floor", "minimal hook, LD_PRELOAD (floor)"),
    ("floor-static", "minimal hook linked in (no PLT)"),
    ("callscope-run", "callscope runtime preloaded by hand, program run only"),
    ("callscope-record-run", "`callscope record`, while the program runs (as record reports it)"),
    ("callscope-record", "`callscope record` end to end"),
    ("callscope-profile-run", "`callscope record --mode=profile`, while the program runs"),
    ("callscope-profile", "`callscope record --mode=profile` end to end"),
    ("gprof", "gprof: -pg build run directly (call graph kept in the process, gmon.out)"),
    ("uftrace-cyg", "`uftrace record`, -finstrument-functions"),
    ("uftrace-pg", "`uftrace record`, -pg"),
]
TARGET_FLOOR = 1.3
TARGET_UFTRACE = 0.35
TARGET_BYTES = 4.0


def main():
    res_path, sizes_path, work = sys.argv[1:4]
    runs = defaultdict(list)  # (prog, config) -> [(wall, cpu)]
    progs = []
    with open(res_path) as f:
        for line in f:
            p, c, _r, wall, user, sys_ = line.split("\t")
            if p not in progs:
                progs.append(p)
            runs[(p, c)].append((float(wall), float(user) + float(sys_), float(sys_)))
    sizes = {}
    with open(sizes_path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            p, what, calls, nbytes = parts[:4]
            secs = parts[4] if len(parts) > 4 else ""
            sizes[(p, what)] = (int(calls), int(nbytes), float(secs) if secs else None)
    calls = {p: int(open(f"{work}/{p}.calls").read()) for p in progs}

    med = {k: statistics.median(x[0] for x in v) for k, v in runs.items()}
    medcpu = {k: statistics.median(x[1] for x in v) for k, v in runs.items()}
    medsys = {k: statistics.median(x[2] for x in v) for k, v in runs.items()}

    mins = {k: min(x[0] for x in v) for k, v in runs.items()}

    def added(p, c, cpu=False, fastest=False):
        m = mins if fastest else (medcpu if cpu else med)
        return (m[(p, c)] - m[(p, "plain")]) / calls[p] * 1e9

    def bpc(p, what):
        if (p, what) not in sizes:
            return None
        n, b, _ = sizes[(p, what)]
        return b / n

    verdicts = []
    for p in progs:
        print(f"### {p}: {calls[p]:,} calls (counted by callscope)")
        print()
        print("| configuration | median wall s | min–max wall s | median CPU s (of which sys) | added ns/call (wall) | added ns/call (CPU) | trace bytes/call |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for c, label in CONFIGS:
            if (p, c) not in runs:
                continue
            walls = [x[0] for x in runs[(p, c)]]
            b = {"callscope-record": bpc(p, "callscope-record"), "callscope-run": bpc(p, "callscope-raw-run"),
                 "uftrace-cyg": bpc(p, "uftrace-cyg"), "uftrace-pg": bpc(p, "uftrace-pg")}.get(c)
            bs = "" if b is None else (f"{b:.2f}" + (" (raw, before `finish`)" if c == "callscope-run" else ""))
            a = "—" if c == "plain" else f"{added(p, c):.1f}"
            ac = "—" if c == "plain" or medcpu[(p, c)] != medcpu[(p, c)] else f"{added(p, c, True):.1f}"
            print(f"| {label} | {med[(p, c)]:.3f} | {min(walls):.3f}–{max(walls):.3f} | {medcpu[(p, c)]:.3f} ({medsys[(p, c)]:.3f}) | {a} | {ac} | {bs} |")
        if (p, "callscope-finish") in sizes:
            _, _, s = sizes[(p, "callscope-finish")]
            print(f"| `callscope finish` of the run's raw files (once) | {s:.3f} | | | | | |")
        print()

        run = added(p, "callscope-run")
        rec = added(p, "callscope-record")
        rows = []
        for num, numlabel in (("callscope-record-run", "callscope record (program run)"), ("callscope-run", "callscope runtime alone (run)"),
                              ("callscope-record", "callscope record (end to end)"),
                              ("callscope-profile-run", "callscope profile mode (program run)"),
                              ("callscope-profile", "callscope profile mode (end to end)")):
            for den, denlabel, target in (("floor", "floor (LD_PRELOAD)", TARGET_FLOOR), ("floor-static", "floor (linked in)", None),
                                          ("gprof", "gprof (-pg)", None),
                                          ("uftrace-cyg", "uftrace -finstrument-functions", TARGET_UFTRACE),
                                          ("uftrace-pg", "uftrace -pg", TARGET_UFTRACE)):
                if (p, num) not in med or (p, den) not in med:
                    continue
                r = added(p, num) / added(p, den)
                rf = added(p, num, fastest=True) / added(p, den, fastest=True)
                rc = added(p, num, True) / added(p, den, True)
                rc_s = "—" if rc != rc else f"{rc:.2f}"
                t = f"≤ {target}" if target else ""
                ok = ""
                if target:
                    ok = "met" if r <= target else "**missed**"
                    verdicts.append((p, f"{numlabel} / {denlabel}", r, target, ok))
                rows.append(f"| {numlabel} / {denlabel} | {r:.2f} | {rf:.2f} | {rc_s} | {t} | {ok} |")
        print(f"Ratios of added cost per call ({p}; wall: of the medians; fastest: of the fastest runs, which a")
        print("busy neighbour on the host can only slow down):")
        print()
        print("| ratio | wall | fastest | CPU | target | verdict (wall) |")
        print("|---|---:|---:|---:|---|---|")
        print("\n".join(rows))
        print()

        print(f"Trace size ({p}):")
        print()
        print("| trace | bytes | bytes/call | time to write s |")
        print("|---|---:|---:|---:|")
        keys = sorted((k for k in sizes if k[0] == p), key=lambda k: k[1])
        for k in keys:
            n, b, s = sizes[k]
            print(f"| {k[1]} | {b:,} | {b / n:.3f} | {'' if s is None else f'{s:.2f}'} |")
        b = bpc(p, "callscope-record")
        if b is not None:
            verdicts.append((p, "callscope trace bytes/call (record, default level)", b, TARGET_BYTES,
                             "met" if b <= TARGET_BYTES else "**missed**"))
        print()

    print("### Targets")
    print()
    print("| program | measure | value | target | verdict |")
    print("|---|---|---:|---:|---|")
    for p, what, v, t, ok in verdicts:
        print(f"| {p} | {what} | {v:.2f} | ≤ {t} | {ok} |")


if __name__ == "__main__":
    main()
