#!/usr/bin/env bash
# The pictures and exports of a big trace, beside uftrace's own export of
# the same program. One command:   bench/export/run.sh
#   - `callscope export --format perfetto` of fib(36) (~97 M events) and
#     `uftrace dump --chrome` of the same program: time, events/s, bytes per
#     event, max RSS (the export streams: memory must stay bounded);
#   - `callscope export --format chrome`, folded, pprof for reference;
#   - `callscope flame` and `callscope html` of the same trace, and the time
#     headless Chromium takes to draw the page's first view.
# Settings: see bench/fib_traces.sh (FIB_N, REPS, CALLSCOPE_BUILD, WORK).
set -euo pipefail
source "$(dirname "$0")/../fib_traces.sh" export
T=$WORK/fib.trace
row() {  # name, output file, command...
  local name=$1 out=$2; shift 2
  local r; r=$(time_of "$@")
  echo "$name|$(echo "$r" | grep -v rss | median)|$(echo "$r" | grep rss | cut -d' ' -f2)|$(stat -c %s "$out" 2>/dev/null || echo 0)"
}
{
  row "callscope export -f perfetto" "$WORK/fib.pftrace" "$CS" export -f perfetto -o "$WORK/fib.pftrace" "$T"
  row "callscope export -f chrome" "$WORK/fib.json" "$CS" export -f chrome -o "$WORK/fib.json" "$T"
  rm -f "$WORK/fib.json"
  row "uftrace dump --chrome" "$WORK/uftrace.json" sh -c "uftrace dump --chrome -d '$WORK/uftrace.data' > '$WORK/uftrace.json'"
  rm -f "$WORK/uftrace.json"
  row "callscope export -f folded" "$WORK/fib.folded" sh -c "'$CS' export -f folded '$T' > '$WORK/fib.folded'"
  row "callscope export -f pprof" "$WORK/fib.pb.gz" "$CS" export -f pprof -o "$WORK/fib.pb.gz" "$T"
  row "callscope flame" "$WORK/fib.svg" "$CS" flame -o "$WORK/fib.svg" "$T"
  row "callscope html" "$WORK/fib.html" "$CS" html -o "$WORK/fib.html" "$T"
} > "$WORK/rows"
# The page's first view in headless Chromium (Debian's python3: selenium).
first_view=$(/usr/bin/python3 - "$WORK/fib.html" <<'PY' 2>/dev/null || echo "n/a"
import sys
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait
o = webdriver.ChromeOptions()
o.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1300,1000"):
    o.add_argument(a)
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
try:
    times = []
    for _ in range(3):
        d.get("file://" + sys.argv[1])
        WebDriverWait(d, 60).until(lambda x: x.execute_script("return window.callscopeReport && window.callscopeReport.readyMs"))
        times.append(d.execute_script("return window.callscopeReport.readyMs"))
    print("%.0f" % sorted(times)[1])
finally:
    d.quit()
PY
)
python3 - "$events" "$FIB_N" "$first_view" "$WORK/rows" <<'PY'
import sys
events, n, first_view, rows = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
print(f"fib({n}): {events:,} events (callscope trace; uftrace records the same calls)\n")
print("| command | median wall s | events/s | output | bytes/event | max RSS MiB |")
print("|---|---:|---:|---:|---:|---:|")
r = {}
for line in open(rows):
    name, s, rss, size = line.strip().split("|")
    s, rss, size = float(s), int(rss), int(size)
    r[name] = (s, size)
    print(f"| `{name}` | {s:.2f} | {events/s/1e6:.1f} M | {size/2**20:.1f} MiB | {size/events:.2f} | {rss/1024:.0f} |")
p, u = r["callscope export -f perfetto"], r["uftrace dump --chrome"]
print(f"\nperfetto export / uftrace dump --chrome: time {p[0]/u[0]:.3f}, size {p[1]/u[1]:.4f}")
print(f"targets: perfetto >= 20 M events/s ({events/p[0]/1e6:.1f} M), <= 10 bytes/event ({p[1]/events:.2f}); "
      f"flame <= 3 s ({r['callscope flame'][0]:.2f}); html <= 10 s ({r['callscope html'][0]:.2f}) and <= 10 MB "
      f"({r['callscope html'][1]/1e6:.1f} MB); first view <= 2 s ({first_view} ms)")
PY
