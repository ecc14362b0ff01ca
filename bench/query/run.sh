#!/usr/bin/env bash
# How fast `callscope query` answers D over a recorded trace (issue 11's
# targets: >= 50 M events/s for a count() by probefunc, >= 30 M events/s for
# a quantize of durations), beside `callscope report` on the same trace and
# the nearest offline answer a user has today: `uftrace report` (calls and
# times per function, no histograms, no D) on the same program's uftrace data.
# One command:   bench/query/run.sh
# Settings: FIB_N=36 (about 97 M events), REPS=3, CALLSCOPE_BUILD (default
# build-bench, else build), WORK (default /dev/shm/callscope-query-bench.$$).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FIB_N=${FIB_N:-36}
REPS=${REPS:-3}
BUILD=${CALLSCOPE_BUILD:-$ROOT/build-bench}
[ -x "$BUILD/bin/callscope" ] || BUILD=$ROOT/build
CS=$BUILD/bin/callscope
WORK=${WORK:-/dev/shm/callscope-query-bench.$$}
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

gcc -O2 -g -finstrument-functions "$ROOT/bench/programs/fib.c" -o "$WORK/fib"
"$CS" record -f -o "$WORK/fib.trace" -- "$WORK/fib" "$FIB_N" >/dev/null 2>&1
command -v uftrace >/dev/null || { echo "needs uftrace (apt-get install uftrace)" >&2; exit 1; }
uftrace record --no-libcall -d "$WORK/uftrace.data" "$WORK/fib" "$FIB_N" >/dev/null
events=$("$CS" info --format json "$WORK/fib.trace" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')

# Per run: wall seconds of the command alone; then max RSS (KiB) of one more run.
time_of() {
  python3 - "$REPS" "$@" <<'PY'
import subprocess, sys, time
reps, cmd = int(sys.argv[1]), sys.argv[2:]
for _ in range(reps):
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    print(f"{time.perf_counter() - t0:.6f}")
PY
  /usr/bin/time -f "rss %M" -o "$WORK/time" "$@" >/dev/null 2>&1
  cat "$WORK/time"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
row() {  # label command...
  local label=$1; shift
  local t; t=$(time_of "$@")
  local s m; s=$(echo "$t" | grep -v rss | median); m=$(echo "$t" | grep rss | cut -d' ' -f2)
  python3 -c "import sys; e,s,m=int(sys.argv[1]),float(sys.argv[2]),int(sys.argv[3]); print(f'| {sys.argv[4]} | {s:.3f} | {e/s/1e6:.1f} M | {m/1024:.0f} |')" \
    "$events" "$s" "$m" "$label"
}
echo "fib($FIB_N): $events events"
echo
echo "| command | median wall s | events/s | max RSS MiB |"
echo "|---|---:|---:|---:|"
row '`query pid$target:::entry { @[probefunc] = count(); }`' \
  "$CS" query -q -n 'pid$target:::entry { @[probefunc] = count(); }' "$WORK/fib.trace"
row '`query pid$target:::return { @[probefunc] = quantize(duration); }`' \
  "$CS" query -q -n 'pid$target:::return { @[probefunc] = quantize(duration); }' "$WORK/fib.trace"
row '`query pid$target::nosuch*:entry` (no probe fires)' \
  "$CS" query -q -Z -n 'pid$target::nosuch*:entry { @ = count(); }' "$WORK/fib.trace"
row '`report` (same trace)' "$CS" report "$WORK/fib.trace"
row '`uftrace report` (its own recording of the same run)' uftrace report -d "$WORK/uftrace.data"
