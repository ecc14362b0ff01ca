#!/usr/bin/env bash
# How fast `callscope query` answers D over a recorded trace (issue 11's
# targets: >= 50 M events/s for a count() by probefunc, >= 30 M events/s for
# a quantize of durations), beside `callscope report` on the same trace and
# the nearest offline answer a user has today: `uftrace report` (calls and
# times per function, no histograms, no D) on the same program's uftrace data.
# One command:   bench/query/run.sh
# Settings: see bench/fib_traces.sh (FIB_N, REPS, CALLSCOPE_BUILD, WORK).
set -euo pipefail
source "$(dirname "$0")/../fib_traces.sh" query

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
