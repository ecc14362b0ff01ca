#!/usr/bin/env python3
"""Turns the measurements of bench/run.sh into Markdown tables.

usage: summarize.py RESULTS.tsv SIZES.tsv WORKDIR [RAWPEAK.tsv [FIB_N]]
  RESULTS.tsv: prog config rep wall user sys   (seconds)
               pseudo-configurations <config>-run, -waited, -write: what
               `callscope record` said (program ran, waited for the recorder,
               trace took to write), as wall seconds
  SIZES.tsv:   prog what calls bytes [seconds]
  WORKDIR/<prog>.calls: calls counted from a callscope trace
  RAWPEAK.tsv: prog rep peak_allocated peak_apparent samples max_gap_ms
               calls ran waited waits write lost   (bytes, seconds)
  FIB_N:       fib's argument, to say whether the run is the one the
               time-to-write target is set for (fib(34))

The report ends with "Targets of the streaming recorder": the targets of the
issue side by side for every program, each with its verdict.
"""
import math
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
    ("callscope-rawpeak", "`callscope record` end to end, raw space sampled (rawpeak)"),
    ("callscope-profile-run", "`callscope record --mode=profile`, while the program runs"),
    ("callscope-profile", "`callscope record --mode=profile` end to end"),
    ("gprof", "gprof: -pg build run directly (call graph kept in the process, gmon.out)"),
    ("uftrace-cyg", "`uftrace record`, -finstrument-functions"),
    ("uftrace-pg", "`uftrace record`, -pg"),
]
# Targets of the earlier issue: while the program runs (and profile mode).
TARGET_FLOOR = 1.3
TARGET_UFTRACE = 0.35
# Targets of the streaming recorder (trace written while the program runs).
TARGET_E2E_FLOOR = 1.5      # `callscope record` end to end / floor, added cost per call
TARGET_E2E_UFTRACE = 0.3    # ... / `uftrace record` -finstrument-functions end to end
TARGET_WRITE_S = 0.2        # program exit to trace written, fib(34)
TARGET_WRITE_FIB_N = 34
TARGET_BYTES = 0.5          # trace bytes per call
TARGET_RAW_MB = 64          # peak raw space (10^6 bytes) ...
TARGET_RATE = 10e6          # ... while the program makes this many calls per second
E2E_PROGRAMS = ("fib", "methods")  # the end-to-end ratio targets are set for these
RAW_PROGRAMS = ("threads",)        # the raw-space target is read on these
NAN = float("nan")


def ratio(a, b):
    return a / b if b > 0 else NAN


def fmt(x, spec, suffix=""):
    return "—" if x is None or x != x else f"{x:{spec}}{suffix}"


def verdict(ok):
    return "met" if ok else "**missed**"


def verdicts_cell(items):
    """[(prog, ok)] -> one cell: "met", or per program when more than one."""
    if not items:
        return ""
    if len(items) == 1:
        return verdict(items[0][1])
    if all(ok for _, ok in items):
        return "met (" + ", ".join(p for p, _ in items) + ")"
    return "; ".join(f"{verdict(ok)} ({p})" for p, ok in items)


def main():
    res_path, sizes_path, work = sys.argv[1:4]
    rawpeak_path = sys.argv[4] if len(sys.argv) > 4 else None
    fib_n = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] else None
    runs = defaultdict(list)  # (prog, config) -> [(wall, cpu)]
    progs = []
    with open(res_path) as f:
        for line in f:
            p, c, _r, wall, user, sys_ = line.split("\t")
            if p not in progs:
                progs.append(p)
            runs[(p, c)].append((float(wall), float(user) + float(sys_), float(sys_)))
    rawpeak = defaultdict(list)  # prog -> [dict]
    if rawpeak_path:
        keys = ("alloc", "apparent", "samples", "gap", "calls", "ran", "waited", "waits", "write", "lost")
        with open(rawpeak_path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 2 + len(keys):
                    continue
                rawpeak[parts[0]].append(dict(zip(keys, (float(x) for x in parts[2:2 + len(keys)]))))
                if parts[0] not in progs:
                    progs.append(parts[0])
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
        if (p, c) not in m or (p, "plain") not in m:
            return NAN
        return (m[(p, c)] - m[(p, "plain")]) / calls[p] * 1e9

    def bpc(p, what):
        if (p, what) not in sizes:
            return None
        n, b, _ = sizes[(p, what)]
        return b / n

    verdicts = []
    summary = {}  # (prog, key) -> value, for the targets of the streaming recorder
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

        # What record said about its phases (pseudo-configurations).
        phase_rows = []
        for c, clabel in (("callscope-record", "`callscope record`"), ("callscope-profile", "`record --mode=profile`"),
                          ("callscope-rawpeak", "`callscope record` (rawpeak)")):
            for suffix, what in (("-run", "the program ran"), ("-waited", "the program waited for the recorder (in all)"),
                                 ("-write", "program exit to trace written")):
                k = (p, c + suffix)
                if k not in runs:
                    continue
                v = [x[0] for x in runs[k]]
                phase_rows.append(f"| {clabel}: {what} | {statistics.median(v):.3f} | {min(v):.3f}–{max(v):.3f} |")
        if phase_rows:
            print(f"What `callscope record` said ({p}; seconds; median of the runs):")
            print()
            print("| phase | median s | min–max s |")
            print("|---|---:|---:|")
            print("\n".join(phase_rows))
            print()
        if (p, "callscope-record-write") in runs:
            summary[(p, "write")] = statistics.median(x[0] for x in runs[(p, "callscope-record-write")])
        summary[(p, "e2e")] = added(p, "callscope-record")
        summary[(p, "uftrace")] = added(p, "uftrace-cyg")
        summary[(p, "floor")] = added(p, "floor")
        for den in ("uftrace", "floor"):
            summary[(p, "e2e/" + den)] = ratio(added(p, "callscope-record"), added(p, {"uftrace": "uftrace-cyg", "floor": "floor"}[den]))
            summary[(p, "e2e/" + den + "/fastest")] = ratio(
                added(p, "callscope-record", fastest=True),
                added(p, {"uftrace": "uftrace-cyg", "floor": "floor"}[den], fastest=True))

        if rawpeak.get(p):
            rp = rawpeak[p]
            rows = []

            def stat_row(label, vals, spec, scale=1.0):
                vals = [v * scale for v in vals if v == v]
                if not vals:
                    return
                rows.append(f"| {label} | {statistics.median(vals):{spec}} | {min(vals):{spec}}–{max(vals):{spec}} |")

            rates = [r["calls"] / r["ran"] if r["ran"] > 0 else NAN for r in rp]
            stat_row("peak raw space under `--raw-dir`, allocated (`du -sB1`), MB", [r["alloc"] for r in rp], ".1f", 1e-6)
            stat_row("peak raw space under `--raw-dir`, apparent size (`du -sb`), MB", [r["apparent"] for r in rp], ".1f", 1e-6)
            stat_row("calls (as record counts them)", [r["calls"] for r in rp], ",.0f")
            stat_row("the program ran, s", [r["ran"] for r in rp], ".3f")
            stat_row("calls per second (calls / time the program ran), M", rates, ".1f", 1e-6)
            stat_row("the program waited for the recorder (all threads together), s", [r["waited"] for r in rp], ".3f")
            stat_row("… that many times", [r["waits"] for r in rp], ",.0f")
            stat_row("program exit to trace written, s", [r["write"] for r in rp], ".3f")
            stat_row("events lost", [r["lost"] for r in rp], ",.0f")
            stat_row("samples of the raw space", [r["samples"] for r in rp], ",.0f")
            stat_row("longest time between two samples, ms", [r["gap"] for r in rp], ".1f")
            print(f"Raw space while {p} runs under `callscope record` (sampled by bench/tools/rawpeak.c; runs: {len(rp)}):")
            print()
            print("| measure | median | min–max |")
            print("|---|---:|---:|")
            print("\n".join(rows))
            print()
            summary[(p, "raw_peak")] = max(r["alloc"] for r in rp) / 1e6
            summary[(p, "rate")] = statistics.median(rates)
            summary[(p, "waited")] = statistics.median(r["waited"] for r in rp)
            summary[(p, "waits")] = statistics.median(r["waits"] for r in rp)
            summary[(p, "raw_write")] = statistics.median(r["write"] for r in rp)
            summary[(p, "lost")] = max(r["lost"] for r in rp)
            summary[(p, "raw_runs")] = len(rp)

        run = added(p, "callscope-run")
        rec = added(p, "callscope-record")
        rows = []
        for num, numlabel in (("callscope-record-run", "callscope record (program run)"), ("callscope-run", "callscope runtime alone (run)"),
                              ("callscope-record", "callscope record (end to end)"),
                              ("callscope-profile-run", "callscope profile mode (program run)"),
                              ("callscope-profile", "callscope profile mode (end to end)")):
            e2e = num == "callscope-record"  # the streaming recorder's targets; the others keep the earlier ones
            for den, denlabel, target in (("floor", "floor (LD_PRELOAD)", TARGET_E2E_FLOOR if e2e else TARGET_FLOOR),
                                          ("floor-static", "floor (linked in)", None),
                                          ("gprof", "gprof (-pg)", None),
                                          ("uftrace-cyg", "uftrace -finstrument-functions", TARGET_E2E_UFTRACE if e2e else TARGET_UFTRACE),
                                          ("uftrace-pg", "uftrace -pg", None if e2e else TARGET_UFTRACE)):
                if (p, num) not in med or (p, den) not in med:
                    continue
                r = ratio(added(p, num), added(p, den))
                rf = ratio(added(p, num, fastest=True), added(p, den, fastest=True))
                rc = ratio(added(p, num, True), added(p, den, True))
                rc_s = "—" if rc != rc else f"{rc:.2f}"
                t = f"≤ {target}" if target else ""
                ok = ""
                if target:
                    ok = "met" if r <= target else "**missed**"
                    verdicts.append((p, f"{numlabel} / {denlabel}", r, target, ok))
                rows.append(f"| {numlabel} / {denlabel} | {r:.2f} | {rf:.2f} | {rc_s} | {t} | {ok} |")
        if rows:
            print(f"Ratios of added cost per call ({p}; wall: of the medians; fastest: of the fastest runs, which a")
            print("busy neighbour on the host can only slow down):")
            print()
            print("| ratio | wall | fastest | CPU | target | verdict (wall) |")
            print("|---|---:|---:|---:|---|---|")
            print("\n".join(rows))
            print()

        keys = sorted((k for k in sizes if k[0] == p), key=lambda k: k[1])
        if keys:
            print(f"Trace size ({p}):")
            print()
            print("| trace | bytes | bytes/call | time to write s |")
            print("|---|---:|---:|---:|")
            for k in keys:
                n, b, s = sizes[k]
                print(f"| {k[1]} | {b:,} | {b / n:.3f} | {'' if s is None else f'{s:.2f}'} |")
            print()
        b = bpc(p, "callscope-record")
        if b is not None:
            verdicts.append((p, "callscope trace bytes/call (record, default level)", b, TARGET_BYTES,
                             "met" if b <= TARGET_BYTES else "**missed**"))

    if verdicts:
        print("### Targets, ratio by ratio")
        print()
        print("| program | measure | value | target | verdict |")
        print("|---|---|---:|---:|---|")
        for p, what, v, t, ok in verdicts:
            print(f"| {p} | {what} | {v:.2f} | ≤ {t} | {ok} |")
        print()
    print_targets(progs, summary, calls, bpc, fib_n)


def print_targets(progs, summary, calls, bpc, fib_n):
    """The targets of the streaming recorder, side by side for every program."""
    def get(p, k):
        v = summary.get((p, k))
        return NAN if v is None else v

    rows = []

    def row(label, key, spec, suffix="", target="", applies=(), ok=None, bold=False, cell=None):
        cells, items = [], []
        for p in progs:
            v = get(p, key)
            c = cell(p, v) if cell else fmt(v, spec, suffix)
            if bold and p in applies and c != "—":
                c = f"**{c}**"
            cells.append(c)
            if p in applies and v == v and ok is not None:
                items.append((p, ok(v)))
        v_cell = verdicts_cell(items)
        if ok is not None and not items:
            v_cell = "not measured" + ("" if any(p in progs for p in applies) else " (needs " + " or ".join(applies) + ")")
        rows.append(f"| {label} | " + " | ".join(cells) + f" | {target} | {v_cell} |")

    def ratio_cell(den):
        def cell(p, v):
            if v != v:
                return "—"
            f = get(p, f"e2e/{den}/fastest")
            return f"{v:.2f}× (fastest {f:.2f}×)" if f == f else f"{v:.2f}×"
        return cell

    row("`callscope record` end to end, added ns/call", "e2e", ".1f")
    row("`uftrace record` -finstrument-functions end to end, added ns/call", "uftrace", ".1f")
    row("minimal hook (floor, LD_PRELOAD), added ns/call", "floor", ".1f")
    row("— callscope end to end / uftrace end to end", "e2e/uftrace", ".2f", target=f"≤ {TARGET_E2E_UFTRACE}×",
        applies=E2E_PROGRAMS, ok=lambda v: v <= TARGET_E2E_UFTRACE, bold=True, cell=ratio_cell("uftrace"))
    row("— callscope end to end / floor", "e2e/floor", ".2f", target=f"≤ {TARGET_E2E_FLOOR}×",
        applies=E2E_PROGRAMS, ok=lambda v: v <= TARGET_E2E_FLOOR, bold=True, cell=ratio_cell("floor"))
    write_target = f"≤ {TARGET_WRITE_S} s on fib({TARGET_WRITE_FIB_N})"
    if fib_n is not None and fib_n != TARGET_WRITE_FIB_N and "fib" in progs:
        write_target += f" (this run: fib({fib_n}))"
    row("program exit to trace written (`record`, median), s", "write", ".3f", target=write_target,
        applies=("fib",), ok=lambda v: v <= TARGET_WRITE_S, bold=True)
    for p in progs:
        b = bpc(p, "callscope-record")
        if b is not None:
            summary[(p, "bytes")] = b
    row("trace bytes per call (`record`, default level)", "bytes", ".3f", target=f"≤ {TARGET_BYTES}",
        applies=tuple(progs), ok=lambda v: v <= TARGET_BYTES, bold=True)
    row("peak raw space under `--raw-dir` (allocated; most of all runs), MB", "raw_peak", ".1f",
        target=f"≤ {TARGET_RAW_MB} MB", applies=RAW_PROGRAMS, ok=lambda v: v <= TARGET_RAW_MB, bold=True)
    row("— while making calls per second (median, as record times the program), M", "rate", ".1f",
        target=f"≥ {TARGET_RATE / 1e6:.0f} M (the target's condition)", applies=RAW_PROGRAMS,
        ok=lambda v: v >= TARGET_RATE, cell=lambda p, v: fmt(v / 1e6 if v == v else v, ".1f"))
    row("— the program waited for the recorder (median; times)", "waited", ".3f",
        cell=lambda p, v: "—" if v != v else f"{v:.3f} s ({get(p, 'waits'):,.0f} times)")
    row("— events lost (most of all runs)", "lost", ",.0f")

    print("### Targets of the streaming recorder")
    print()
    print("Added cost per call = (median wall time − median wall time of the uninstrumented program) / calls;")
    print("\"fastest\": the same of the fastest runs. Ratio targets are read on fib and methods, the time to write on")
    print("fib(34), the raw space on threads; a value without a verdict is shown for comparison.")
    print()
    print("| measure | " + " | ".join(f"{p} ({calls[p]:,} calls)" if p in calls else p for p in progs) + " | target | verdict |")
    print("|---|" + "---:|" * len(progs) + "---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
