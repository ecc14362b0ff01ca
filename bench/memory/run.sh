#!/usr/bin/env bash
# What recording every allocation costs (issue 12): N malloc/free pairs, each
# in an instrumented call, under `record` (calls only), `record --memory`
# (calls and every allocation event), and heaptrack (its recording alone) on
# the uninstrumented build -- side by side in one run.
#
# One command:   bench/memory/run.sh
# Settings:      PAIRS=4000000  REPS=3  CALLSCOPE_BUILD (default build-bench, else build)
# The cost per allocation event is (wall with --memory - wall of record) /
# (2 * PAIRS); the trace bytes per event likewise from the two traces.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PAIRS=${PAIRS:-4000000}
REPS=${REPS:-3}
BUILD=${CALLSCOPE_BUILD:-$ROOT/build-bench}
[ -x "$BUILD/bin/callscope" ] || BUILD=$ROOT/build
CS=$(cd "$BUILD" && pwd)/bin/callscope
WORK=${WORK:-/dev/shm/callscope-memory-bench.$$}
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

gcc -O2 -g "$ROOT/bench/programs/alloc_pairs.c" -o "$WORK/plain"
gcc -O2 "$ROOT/bench/programs/tsc_cost.c" -o "$WORK/tsc_cost"
gcc -O2 -g -finstrument-functions "$ROOT/bench/programs/alloc_pairs.c" -o "$WORK/instr"

python3 - "$CS" "$WORK" "$PAIRS" "$REPS" <<'PY'
import os, shutil, statistics, subprocess, sys, time
cs, work, pairs, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

def wall(cmd):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=work)
        t.append(time.perf_counter() - t0)
    return statistics.median(t)

rows = [("plain", [f"{work}/plain", str(pairs)]),
        ("`callscope record`", [cs, "record", "-f", "-o", f"{work}/calls.trace", "--", f"{work}/instr", str(pairs)]),
        ("`callscope record --memory`", [cs, "record", "--memory", "-f", "-o", f"{work}/memory.trace", "--",
                                          f"{work}/instr", str(pairs)])]
if shutil.which("heaptrack"):
    rows.append(("heaptrack (recording only)", ["heaptrack", "-o", f"{work}/ht", f"{work}/plain", str(pairs)]))
times = {name: wall(cmd) for name, cmd in rows}
events = 2 * pairs
print(f"{pairs:,} malloc/free pairs ({events:,} allocation events); median of {reps}")
print()
print("| command | wall s | x plain |")
print("|---|---:|---:|")
for name, _ in rows:
    print(f"| {name} | {times[name]:.3f} | {times[name] / times['plain']:.1f} |")
added = (times["`callscope record --memory`"] - times["`callscope record`"]) / events * 1e9
extra = os.path.getsize(f"{work}/memory.trace") - os.path.getsize(f"{work}/calls.trace")
print()
print(f"--memory adds {added:.1f} ns per allocation event over record (target <= 10 ns)")
print(f"and {extra / events:.2f} trace bytes per allocation event (target <= 4)")
tsc = subprocess.run([f"{work}/tsc_cost"], capture_output=True, text=True, check=True).stdout.strip()
print(f"one clock read (rdtsc) costs {tsc} ns on this machine: every event pays one")
if "heaptrack (recording only)" in times:
    print(f"heaptrack's recording takes {times['heaptrack (recording only)'] / times['`callscope record --memory`']:.1f}x "
          f"the time of record --memory")
PY
