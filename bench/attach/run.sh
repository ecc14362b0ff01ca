#!/usr/bin/env bash
# How long attaching stops a running program: callscope attach beside
# heaptrack -p (which injects through gdb) and gdb's own attach and detach,
# on the same program, in one run. One command:
#     bench/attach/run.sh
# The program (bench/programs/attach_target.c, -finstrument-functions) runs
# THREADS threads (50) that wake every millisecond and note the longest
# they were late, with LIBS libraries (100) loaded. For each tool, REPS
# times, the program's longest stall over the attach (and detach) is read
# from it (SIGUSR1), beside a baseline of the same length with no tool:
#   baseline        nothing attaches (the machine's own noise)
#   callscope       callscope attach PID --duration 100ms: attach, 100 ms of
#                   recording, detach; also the time attach held the one
#                   thread it borrows (it prints it), and its wall time
#   callscope, gcc patchable   the same program built with gcc's
#                   -fpatchable-function-entry=5 (its libraries too): attach
#                   first stops every thread to make gcc's one-byte-nop
#                   entries one instruction each (it prints for how long)
#   gdb             gdb -p PID -batch -ex detach: every thread stopped while
#                   gdb reads the program and its libraries
#   heaptrack -p    heaptrack's attach (gdb, then its library loaded), on a
#                   fresh program each time (it cannot detach)
# Settings: THREADS=50, LIBS=100, REPS=5, CALLSCOPE_BUILD (default
# build-bench, else build), WORK (default /dev/shm/callscope-attach-bench.$$).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
THREADS=${THREADS:-50}
LIBS=${LIBS:-100}
REPS=${REPS:-5}
BUILD=${CALLSCOPE_BUILD:-$ROOT/build-bench}
[ -x "$BUILD/bin/callscope" ] || BUILD=$ROOT/build
CS=$BUILD/bin/callscope
WORK=${WORK:-/dev/shm/callscope-attach-bench.$$}
mkdir -p "$WORK"
trap 'pkill -KILL -f "$WORK/target" 2>/dev/null || true; rm -rf "$WORK"' EXIT
command -v gdb >/dev/null || { echo "needs gdb (apt-get install gdb)" >&2; exit 1; }

gcc -O2 -g -finstrument-functions -pthread "$ROOT/bench/programs/attach_target.c" -o "$WORK/target" -ldl
gcc -O2 -g -fpatchable-function-entry=5 -pthread "$ROOT/bench/programs/attach_target.c" -o "$WORK/target_patchable" -ldl
echo 'int bench_lib_function(int x) { return x + 1; }' > "$WORK/lib.c"
gcc -O2 -fPIC -shared -fpatchable-function-entry=5 "$WORK/lib.c" -o "$WORK/lib.so"
for i in $(seq 1 "$LIBS"); do cp "$WORK/lib.so" "$WORK/lib$i.so"; done

python3 - "$REPS" "$THREADS" "$LIBS" "$WORK" "$CS" <<'PY'
import os, platform, re, shutil, signal, statistics, subprocess, sys, time
reps, threads, libs, work, cs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
env = dict(os.environ, THREADS=str(threads))

def start(program="target"):
    p = subprocess.Popen([f"{work}/{program}"] + [f"{work}/lib{i}.so" for i in range(1, libs + 1)],
                         stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    return p

def stall(p):  # the longest lateness since the last call, in ms
    p.send_signal(signal.SIGUSR1)
    line = p.stdout.readline()
    return int(re.search(r"stall_us=(\d+)", line).group(1)) / 1000.0

res = {k: [] for k in ("baseline", "callscope", "callscope, gcc patchable", "gdb", "heaptrack -p")}
held, wall, joined = [], [], []
p = start()
for _ in range(reps):
    stall(p)
    time.sleep(0.25)
    res["baseline"].append(stall(p))

    stall(p)
    t0 = time.perf_counter()
    r = subprocess.run([cs, "attach", str(p.pid), "--duration", "100ms", "-f", "-o", f"{work}/a.trace"],
                       capture_output=True, text=True)
    wall.append((time.perf_counter() - t0) * 1000 - 100)
    res["callscope"].append(stall(p))
    m = re.search(r"held ([0-9.]+) ms", r.stderr)
    if r.returncode != 0 or not m:
        sys.exit("callscope attach failed: " + r.stderr)
    held.append(float(m.group(1)))

    stall(p)
    subprocess.run(["gdb", "-p", str(p.pid), "-batch", "-ex", "detach"], capture_output=True)
    res["gdb"].append(stall(p))
p.kill()
p.wait()

q = start("target_patchable")
for _ in range(reps):
    stall(q)
    r = subprocess.run([cs, "attach", str(q.pid), "--duration", "100ms", "-f", "-o", f"{work}/p.trace"],
                       capture_output=True, text=True)
    res["callscope, gcc patchable"].append(stall(q))
    m = re.search(r"were stopped ([0-9.]+) ms", r.stderr)
    if r.returncode != 0 or not m:
        sys.exit("callscope attach (patchable) failed: " + r.stderr)
    joined.append(float(m.group(1)))
q.kill()
q.wait()

heaptrack = shutil.which("heaptrack")
for _ in range(reps if heaptrack else 0):
    q = start()
    stall(q)
    h = subprocess.Popen([heaptrack, "-p", str(q.pid), "-o", f"{work}/heaptrack"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    for line in h.stdout:
        if "injection finished" in line or time.time() > deadline:
            break
    time.sleep(0.1)
    res["heaptrack -p"].append(stall(q))
    q.kill()
    q.wait()
    h.kill()
    h.wait()

print(f"# {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}, "
      f"{threads} threads, {libs} libraries, {reps} runs each")
print(f"{'tool':<26} {'longest stall ms (median / max)':>34}")
for k, v in res.items():
    if v:
        print(f"{k:<26} {statistics.median(v):>22.1f} / {max(v):.1f}")
print(f"gcc patchable build: every thread stopped {statistics.median(joined):.2f} ms (median; max {max(joined):.2f}) "
      "to join its entries")
print(f"callscope attach held one thread {statistics.median(held):.2f} ms (median; max {max(held):.2f}); "
      f"attach + detach took {statistics.median(wall):.0f} ms of wall time besides the 100 ms recorded")
base = statistics.median(res["baseline"])
for k in ("gdb", "heaptrack -p"):
    if res[k]:
        print(f"{k}: the program stalled {statistics.median(res[k]):.1f} ms, "
              f"{statistics.median(res[k]) / max(statistics.median(res['callscope']), base, 0.001):.0f}x callscope's")
PY
