#!/usr/bin/env bash
# What a live D query (`callscope query -c`) costs the traced program --
# issue 11's live targets: a count() query adds at most 0.3x of `record`'s
# own cost per call, and costs at least 100x less per probe hit than
# bpftrace's uprobes (`uprobe:BIN:fib { @[func] = count(); }`, the same
# binary and function, side by side in one run).
#
# One command:   bench/query/live.sh        (bpftrace's rows need root and bpftrace)
# Settings:
#   FIB_N=34     fib argument for the record-vs-query rows (2*F(n+1)-1 calls)
#   BPF_N=30     fib argument for the rows beside bpftrace (its uprobes take
#                microseconds per hit: fib(30) makes 2,692,537 calls; a
#                shorter run measures start-up more than calls)
#   REPS=3       runs of each command (median)
#   CALLSCOPE_BUILD (default build-bench, else build)
# Each cost per call is (wall time - the same program's wall time without
# instrumentation) / calls; the bpftrace comparison also takes out each
# tool's fixed start and end cost, measured with fib(1) (one call).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FIB_N=${FIB_N:-34}
BPF_N=${BPF_N:-30}
REPS=${REPS:-3}
BUILD=${CALLSCOPE_BUILD:-$ROOT/build-bench}
[ -x "$BUILD/bin/callscope" ] || BUILD=$ROOT/build
CS=$BUILD/bin/callscope
WORK=${WORK:-/dev/shm/callscope-live-bench.$$}
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

gcc -O2 -g "$ROOT/bench/programs/fib.c" -o "$WORK/fib-plain"
gcc -O2 -g -finstrument-functions "$ROOT/bench/programs/fib.c" -o "$WORK/fib"
BPF=""
if command -v bpftrace >/dev/null && [ "$(id -u)" = 0 ]; then BPF=bpftrace; fi

python3 - "$CS" "$WORK" "$FIB_N" "$BPF_N" "$REPS" "$BPF" <<'PY'
import statistics, subprocess, sys, time
cs, work, fib_n, bpf_n, reps, bpf = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]

def calls(n):  # fib(n) calls of fib, plus main
    a, b = 1, 1
    for _ in range(n - 1):
        a, b = b, a + b
    return 2 * b - 1 + 1

def wall(cmd):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        t.append(time.perf_counter() - t0)
    return statistics.median(t)

count = 'pid$target:a.out:fib:entry { @[probefunc] = count(); }'
def plain(n): return [f"{work}/fib-plain", str(n)]
def record(n): return [cs, "record", "-f", "-o", f"{work}/fib.trace", "--", f"{work}/fib", str(n)]
def query(n): return [cs, "query", "-q", "-n", count, "-c", f"{work}/fib {n}"]
# Beyond the targets: scripts the bulk count cannot serve (every firing
# runs the clause), for what they cost.
others = (
    ("count() with a predicate", 'pid$target:a.out:fib:entry /tid != 0/ { @[probefunc] = count(); }'),
    ("quantize(duration) at return", 'pid$target:a.out:fib:return { @[probefunc] = quantize(duration); }'),
)
def bpftrace(n): return ["bpftrace", "-e", f"uprobe:{work}/fib-plain:fib {{ @[func] = count(); }}", "-c", f"{work}/fib-plain {n}"]

n = calls(fib_n)
base, rec, qry = wall(plain(fib_n)), wall(record(fib_n)), wall(query(fib_n))
per = lambda t: (t - base) / n * 1e9
print(f"fib({fib_n}): {n:,} calls; median of {reps}")
print()
print("| command | wall s | ns per call over the plain program |")
print("|---|---:|---:|")
print(f"| plain (no instrumentation) | {base:.3f} | - |")
print(f"| `callscope record` | {rec:.3f} | {per(rec):.1f} |")
print(f"| `callscope query -c` count() by function | {qry:.3f} | {per(qry):.1f} |")
# query -p: the same count() attached to `record` of the same run (as soon
# as the program has started), the recorder sending its events over a socket.
def attached():
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        rec = subprocess.Popen(record(fib_n), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pid = ""
        while not pid and rec.poll() is None:
            pid = subprocess.run(["pgrep", "-P", str(rec.pid)], capture_output=True, text=True).stdout.strip()
        if pid:
            subprocess.run([cs, "query", "-q", "-n", count, "-p", pid], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        rec.wait()
        t.append(time.perf_counter() - t0)
    return statistics.median(t)
ta = attached()
print(f"| `callscope record`, `query -p` count() attached | {ta:.3f} | {per(ta):.1f} |")
for label, script in others:
    t = wall([cs, "query", "-q", "-n", script, "-c", f"{work}/fib {fib_n}"])
    print(f"| `callscope query -c` {label} | {t:.3f} | {per(t):.1f} |")
added = (per(qry) - per(rec)) / per(rec)
print()
print(f"the live count() query adds {added:.2f}x of record's own cost per call (target <= 0.3x)")

if not bpf:
    print()
    print("(bpftrace rows skipped: they need root and bpftrace)")
    sys.exit(0)
m = calls(bpf_n)
rows = {}
for name, cmd in (("plain", plain), ("callscope query -c", query), ("bpftrace uprobe", bpftrace)):
    rows[name] = (wall(cmd(1)), wall(cmd(bpf_n)))
p1, pn = rows["plain"]
def hit(name):
    t1, tn = rows[name]
    return ((tn - t1) - (pn - p1)) / m * 1e9
print()
print(f"fib({bpf_n}): {m:,} calls, every one a probe hit; fixed costs taken out with fib(1)")
print()
print("| command | wall s, fib(1) | wall s, fib(%d) | ns per probe hit |" % bpf_n)
print("|---|---:|---:|---:|")
for name in rows:
    t1, tn = rows[name]
    print(f"| {name} | {t1:.3f} | {tn:.3f} | {'-' if name == 'plain' else f'{hit(name):.1f}'} |")
print()
print(f"bpftrace costs {hit('bpftrace uprobe') / hit('callscope query -c'):.0f}x callscope's per probe hit (target >= 100x)")
PY
