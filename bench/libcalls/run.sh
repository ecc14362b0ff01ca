#!/usr/bin/env bash
# What a hooked library call costs: callscope's GOT hooks beside uftrace's
# PLT hooks, on the same binary, in one run. One command:
#     bench/libcalls/run.sh
# The program (bench/programs/libcall_loop.c) calls a tiny function of a
# shared library N times; it is built without instrumentation. Each
# configuration runs REPS times, interleaved; the median wall time less the
# plain run's, over N, is the cost added per call:
#   plain                      the program alone
#   callscope --libcalls       callscope record --libcalls (every call and return written)
#   callscope --libcalls profile   the same in profile mode (call trees in the process)
#   uftrace                    uftrace record --force (its PLT hooks: the only way it sees this binary)
# Settings: N=10000000, REPS=5, CALLSCOPE_BUILD (default build-bench, else
# build), PIN="taskset -c 1" (prefix of every run; "" to not pin), WORK
# (default /dev/shm/callscope-libcalls-bench.$$).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
N=${N:-10000000}
REPS=${REPS:-5}
BUILD=${CALLSCOPE_BUILD:-$ROOT/build-bench}
[ -x "$BUILD/bin/callscope" ] || BUILD=$ROOT/build
CS=$BUILD/bin/callscope
PIN=${PIN-taskset -c 1}
WORK=${WORK:-/dev/shm/callscope-libcalls-bench.$$}
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
command -v uftrace >/dev/null || { echo "needs uftrace (apt-get install uftrace)" >&2; exit 1; }

gcc -O2 -fPIC -shared "$ROOT/bench/programs/libcall_lib.c" -o "$WORK/libcall_lib.so"
gcc -O2 "$ROOT/bench/programs/libcall_loop.c" -o "$WORK/loop" -L"$WORK" -l:libcall_lib.so -Wl,-rpath,"$WORK"

python3 - "$REPS" "$N" "$WORK" "$CS" "$PIN" <<'PY'
import os, platform, statistics, subprocess, sys, time
reps, n, work, cs, pin = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5].split()
prog = [f"{work}/loop", str(n)]
configs = {
    "plain": prog,
    "callscope --libcalls": [cs, "record", "--libcalls", "-f", "-o", f"{work}/l.trace", "--"] + prog,
    "callscope --libcalls profile": [cs, "record", "--libcalls", "--mode", "profile", "-f", "-o", f"{work}/p.trace", "--"] + prog,
    "uftrace": ["uftrace", "record", "--force", "-d", f"{work}/uftrace.data"] + prog,
}
times = {k: [] for k in configs}
for _ in range(reps):
    for name, cmd in configs.items():
        t0 = time.perf_counter()
        subprocess.run(pin + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times[name].append(time.perf_counter() - t0)
# The calls each tool saw: both must have every one.
out = subprocess.run([cs, "report", "--format", "csv", f"{work}/l.trace"], capture_output=True, text=True, check=True).stdout
cs_calls = next((int(l.split(",")[0]) for l in out.splitlines()[1:] if l.rstrip().endswith("bench_add")), None)
if cs_calls is None:
    hdr = out.splitlines()[0].split(",")
    for l in out.splitlines()[1:]:
        row = dict(zip(hdr, l.split(",")))
        if row.get("function") == "bench_add":
            cs_calls = int(row["calls"])
uf = subprocess.run(["uftrace", "report", "-d", f"{work}/uftrace.data"], capture_output=True, text=True).stdout
uf_calls = next((int(l.split()[-2]) for l in uf.splitlines() if l.strip().endswith("bench_add")), None)
med = {k: statistics.median(v) for k, v in times.items()}
fast = {k: min(v) for k, v in times.items()}
base = med["plain"]
print(f"{n:,} calls of a shared library's function; {reps} runs each, median; "
      f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}\n")
print(f"calls seen: callscope {cs_calls:,}, uftrace {uf_calls:,}\n" if cs_calls and uf_calls else "")
print("| configuration | median wall s | added ns per call | vs uftrace | fastest run s | vs uftrace (fastest) |")
print("|---|---:|---:|---:|---:|---:|")
uft = (med["uftrace"] - base) / n * 1e9
uft_fast = (fast["uftrace"] - fast["plain"]) / n * 1e9
for k, v in med.items():
    added = (v - base) / n * 1e9
    added_fast = (fast[k] - fast["plain"]) / n * 1e9
    ratio = f"{added / uft:.2f}x" if k != "plain" and uft > 0 else ""
    ratio_fast = f"{added_fast / uft_fast:.2f}x" if k != "plain" and uft_fast > 0 else ""
    print(f"| {k} | {v:.3f} | {added:.1f} | {ratio} | {fast[k]:.3f} | {ratio_fast} |")
print(f"\nTarget: a hooked call costs at most 0.35x uftrace's: "
      f"{'met' if (med['callscope --libcalls'] - base) / n * 1e9 <= 0.35 * uft else 'NOT met'} "
      f"({(med['callscope --libcalls'] - base) / n * 1e9 / uft:.2f}x).")
PY
