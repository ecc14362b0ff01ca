#!/usr/bin/env bash
# Issue 12's benchmark, side by side in one run: bench/programs/memory_mix.c
# (2,000,000 mallocs and frees of 16 B..264 KiB from three call paths, a
# 44 MB burst freed again, 1,001 blocks never freed), built plain and with
# -finstrument-functions, under:
#   plain; callscope record (calls only); callscope record --memory;
#   callscope record --memory on the plain build (paths unwound: DWARF CFI,
#   and frame pointers on a -fno-omit-frame-pointer build);
#   heaptrack (recording, then heaptrack_print); valgrind --tool=massif.
# Then the answers: peak and leaked bytes from `callscope memory`, heaptrack
# and massif (massif's last snapshot is not taken at exit: peak only), and
# how far apart they are.
#
# One command:   bench/memory/compare.sh
# Settings:      ALLOCS=2000000  REPS=3  CALLSCOPE_BUILD (default build-bench, else build)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ALLOCS=${ALLOCS:-2000000}
REPS=${REPS:-3}
BUILD=${CALLSCOPE_BUILD:-$ROOT/build-bench}
[ -x "$BUILD/bin/callscope" ] || BUILD=$ROOT/build
CS=$(cd "$BUILD" && pwd)/bin/callscope
WORK=${WORK:-/dev/shm/callscope-memory-compare.$$}
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

gcc -O2 -g "$ROOT/bench/programs/memory_mix.c" -o "$WORK/plain"
gcc -O2 -g -finstrument-functions "$ROOT/bench/programs/memory_mix.c" -o "$WORK/instr"
gcc -O2 -g -fno-omit-frame-pointer "$ROOT/bench/programs/memory_mix.c" -o "$WORK/plainfp"

python3 - "$CS" "$WORK" "$ALLOCS" "$REPS" <<'PY'
import json, os, re, shutil, statistics, subprocess, sys, time
cs, work, allocs, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def wall(cmd, out=subprocess.DEVNULL):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=out, stderr=subprocess.DEVNULL, check=True, cwd=work)
        t.append(time.perf_counter() - t0)
    return statistics.median(t)

rows = []  # (name, seconds, note)
plain = wall([f"{work}/plain", allocs])
rows.append(("plain (`-O2`)", plain, ""))
rows.append(("`callscope record` (calls only, instrumented build)",
             wall([cs, "record", "-f", "-o", f"{work}/calls.trace", "--", f"{work}/instr", allocs]), ""))
mem = wall([cs, "record", "--memory", "-f", "-o", f"{work}/m.trace", "--", f"{work}/instr", allocs])
rows.append(("`callscope record --memory` (instrumented build)", mem, ""))
unw = wall([cs, "record", "--memory", "-f", "-o", f"{work}/u.trace", "--", f"{work}/plain", allocs])
rows.append(("`callscope record --memory` on the plain build (paths unwound, DWARF CFI)", unw, ""))
plainfp = wall([f"{work}/plainfp", allocs])
rows.append(("plain, `-fno-omit-frame-pointer`", plainfp, ""))
unwfp = wall([cs, "record", "--memory", "--unwind", "fp", "-f", "-o", f"{work}/ufp.trace", "--", f"{work}/plainfp",
              allocs])
rows.append(("`callscope record --memory --unwind fp` on that build", unwfp, ""))
report = wall([cs, "memory", f"{work}/m.trace"])
rows.append(("`callscope memory` (the report)", report, ""))
have_ht = shutil.which("heaptrack") and shutil.which("heaptrack_print")
if have_ht:
    ht = wall(["heaptrack", "-o", f"{work}/ht", f"{work}/plain", allocs])
    rows.append(("heaptrack (recording, plain build)", ht, ""))
    htp = wall(["heaptrack_print", f"{work}/ht.zst"])
    rows.append(("heaptrack_print (the report)", htp, ""))
have_ms = shutil.which("valgrind")
if have_ms:
    ms = wall(["valgrind", "--tool=massif", f"--massif-out-file={work}/ms.out", f"{work}/plain", allocs])
    rows.append(("valgrind --tool=massif (plain build)", ms, ""))

print(f"memory_mix {allocs}: {int(allocs):,} mallocs of 16 B..264 KiB, a 44 MB burst, 1,001 leaks; median of {reps}")
print()
print("| command | wall s | x plain |")
print("|---|---:|---:|")
for name, s, _ in rows:
    print(f"| {name} | {s:.3f} | {s / plain:.1f} |")

# The answers.
j = json.loads(subprocess.run([cs, "memory", f"{work}/m.trace", "--format", "json"], capture_output=True,
                              text=True, check=True).stdout)["summary"]
answers = {"callscope": (j["peak_bytes"], j["leaked_bytes"], j["allocs"])}
for name, trace in (("callscope, unwound", "u.trace"), ("callscope, --unwind fp", "ufp.trace")):
    u = json.loads(subprocess.run([cs, "memory", f"{work}/{trace}", "--format", "json"], capture_output=True,
                                  text=True, check=True).stdout)["summary"]
    answers[name] = (u["peak_bytes"], u["leaked_bytes"], u["allocs"])
def si(v):  # heaptrack_print's 1000-based units
    m = re.match(r"([0-9.]+)([KMGT]?)", v)
    return float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2)]
if have_ht:
    out = subprocess.run(["heaptrack_print", f"{work}/ht.zst"], capture_output=True, text=True).stdout
    peak = si(re.search(r"peak heap memory consumption: (\S+)", out).group(1))
    leaked = si(re.search(r"total memory leaked: (\S+)", out).group(1))
    calls = int(re.search(r"calls to allocation functions: (\d+)", out).group(1))
    answers["heaptrack"] = (peak, leaked, calls)
if have_ms:
    text = open(f"{work}/ms.out").read()
    snaps = text.split("#-----------\nsnapshot=")
    peak = max(int(re.search(r"mem_heap_B=(\d+)", s).group(1)) for s in snaps if "mem_heap_B=" in s)
    answers["massif"] = (peak, None, None)
print()
print("| tool | peak bytes | leaked bytes | allocations |")
print("|---|---:|---:|---:|")
for tool, (p, l, a) in answers.items():
    fmt = lambda v: "—" if v is None else f"{int(v):,}"
    print(f"| {tool} | {fmt(p)} | {fmt(l)} | {fmt(a)} |")
print()
c = answers["callscope"]
for tool, (p, l, _) in answers.items():
    if tool.startswith("callscope"):
        continue
    parts = [f"peak {abs(c[0] - p) / p * 100:.2f}%"]
    if l is not None:
        parts.append(f"leaked {abs(c[1] - l) / l * 100:.2f}%")
    print(f"callscope vs {tool}: " + ", ".join(parts) + " apart (target <= 1%)")
events = 2 * int(allocs)
calls_t = os.path.getsize(f"{work}/calls.trace")
mem_t = os.path.getsize(f"{work}/m.trace")
print(f"trace bytes per allocation event: {(mem_t - calls_t) / events:.2f} (target <= 4)")
print(f"unwound trace bytes per allocation event (its frames included): "
      f"{os.path.getsize(f'{work}/u.trace') / events:.2f}")
PY
