#!/usr/bin/env bash
# How fast `callscope report` reads a trace, beside `uftrace report` on the
# same program's uftrace data. One command:   bench/report/run.sh
# Settings: FIB_N=36 (2*F(n+1)-1 calls, two events each: fib(36) gives about
# 97 M events), REPS=3, CALLSCOPE_BUILD (default build-bench, else build),
# WORK (default /dev/shm/callscope-report-bench.$$).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FIB_N=${FIB_N:-36}
REPS=${REPS:-3}
BUILD=${CALLSCOPE_BUILD:-$ROOT/build-bench}
[ -x "$BUILD/bin/callscope" ] || BUILD=$ROOT/build
CS=$BUILD/bin/callscope
WORK=${WORK:-/dev/shm/callscope-report-bench.$$}
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
command -v uftrace >/dev/null || { echo "needs uftrace (apt-get install uftrace)" >&2; exit 1; }

gcc -O2 -g -finstrument-functions "$ROOT/bench/programs/fib.c" -o "$WORK/fib"
"$CS" record -f -o "$WORK/fib.trace" -- "$WORK/fib" "$FIB_N" >/dev/null
uftrace record --no-libcall -d "$WORK/uftrace.data" "$WORK/fib" "$FIB_N" >/dev/null
events=$("$CS" info --format json "$WORK/fib.trace" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_of() {  # command... -> per run: wall seconds (the command alone: /usr/bin/time's %e has 10 ms steps
            # and its own start would be timed too), then max RSS (KiB) from one more run under /usr/bin/time
  python3 - "$REPS" "$@" <<'PY'
import subprocess, sys, time
reps, cmd = int(sys.argv[1]), sys.argv[2:]
for _ in range(reps):
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"{time.perf_counter() - t0:.6f}")
PY
  /usr/bin/time -f "rss %M" -o "$WORK/time" "$@" >/dev/null 2>&1
  cat "$WORK/time"
}
cs=$(time_of "$CS" report "$WORK/fib.trace")
uf=$(time_of uftrace report -d "$WORK/uftrace.data")
cs_s=$(echo "$cs" | grep -v rss | median); cs_m=$(echo "$cs" | grep rss | cut -d' ' -f2)
uf_s=$(echo "$uf" | grep -v rss | median); uf_m=$(echo "$uf" | grep rss | cut -d' ' -f2)
python3 - "$events" "$cs_s" "$cs_m" "$uf_s" "$uf_m" "$FIB_N" <<'PY'
import sys
events, cs_s, cs_m, uf_s, uf_m, n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
print(f"fib({n}): {events:,} events (callscope trace)\n")
print("| tool | median wall s | events/s | max RSS MiB |")
print("|---|---:|---:|---:|")
print(f"| `callscope report` | {cs_s:.3f} | {events/cs_s/1e6:.1f} M | {cs_m/1024:.0f} |")
print(f"| `uftrace report` | {uf_s:.3f} | {events/uf_s/1e6:.1f} M | {uf_m/1024:.0f} |")
print(f"\ncallscope / uftrace time: {cs_s/uf_s:.3f} (target < 0.1)")
PY
