# Sourced by bench/report/run.sh and bench/query/run.sh: the settings they
# share, fib(FIB_N) recorded by callscope ($WORK/fib.trace, $events events)
# and by uftrace ($WORK/uftrace.data), and how a command is timed.
# Settings: FIB_N=36 (2*F(n+1)-1 calls, two events each: fib(36) gives about
# 97 M events), REPS=3, CALLSCOPE_BUILD (default build-bench, else build),
# WORK (default /dev/shm/callscope-$1-bench.$$).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIB_N=${FIB_N:-36}
REPS=${REPS:-3}
BUILD=${CALLSCOPE_BUILD:-$ROOT/build-bench}
[ -x "$BUILD/bin/callscope" ] || BUILD=$ROOT/build
CS=$BUILD/bin/callscope
WORK=${WORK:-/dev/shm/callscope-$1-bench.$$}
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
command -v uftrace >/dev/null || { echo "needs uftrace (apt-get install uftrace)" >&2; exit 1; }

gcc -O2 -g -finstrument-functions "$ROOT/bench/programs/fib.c" -o "$WORK/fib"
"$CS" record -f -o "$WORK/fib.trace" -- "$WORK/fib" "$FIB_N" >/dev/null 2>&1
uftrace record --no-libcall -d "$WORK/uftrace.data" "$WORK/fib" "$FIB_N" >/dev/null
events=$("$CS" info --format json "$WORK/fib.trace" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# command... -> per run: wall seconds of the command alone (/usr/bin/time's
# %e has 10 ms steps, and its own start would be timed too), then max RSS
# (KiB) from one more run under /usr/bin/time.
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
