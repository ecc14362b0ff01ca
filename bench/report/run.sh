#!/usr/bin/env bash
# How fast `callscope report` reads a trace, beside `uftrace report` on the
# same program's uftrace data. One command:   bench/report/run.sh
# Settings: see bench/fib_traces.sh (FIB_N, REPS, CALLSCOPE_BUILD, WORK).
set -euo pipefail
source "$(dirname "$0")/../fib_traces.sh" report
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
