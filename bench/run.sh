#!/usr/bin/env bash
# callscope speed benchmark: cost per call against no instrumentation, a
# minimal TSC hook, and uftrace; trace bytes per call. Results: docs/benchmarks.md.
#
# One command, from anywhere (after building callscope and callscope-rt):
#
#     bench/run.sh
#
# It builds the test programs, waits for the machine to be quiet, runs every
# configuration REPS times (interleaved), prints a Markdown report on stdout
# and saves it to bench/results/run-<date>.md. Everything it writes while
# measuring (raw events, traces, uftrace.data) goes to $WORK, on tmpfs.
#
# Settings (environment variables):
#   CALLSCOPE_BUILD  build dir holding bin/callscope and lib/libcallscope-rt.so
#                    (default: build-bench if it has both, else build)
#   REPS=5           repetitions of every configuration (median reported)
#   FIB_N=34         fib argument (2*F(n+1)-1 calls of fib)
#   METHODS_ARGS="7000 300"   methods iterations and number of shapes
#   PIN="taskset -c 1"        prefix of every timed command ("" to not pin)
#   WAIT_LOAD=0.5    wait until the 1-minute load average is below this ...
#   WAIT_MAX=600     ... for at most this many seconds (0: do not wait)
#   LEVELS="1 3 6 19"         zstd levels tried for bytes/call (callscope finish)
#   PROGRAMS="fib methods"    which programs to run
#   CC=gcc CXX=g++ CFLAGS=-O2 WORK=/dev/shm/callscope-bench.$$ KEEP_WORK=0
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)

REPS=${REPS:-5}
FIB_N=${FIB_N:-34}
METHODS_ARGS=${METHODS_ARGS:-"7000 300"}
PIN=${PIN-"taskset -c 1"}
WAIT_LOAD=${WAIT_LOAD:-0.5}
WAIT_MAX=${WAIT_MAX:-600}
LEVELS=${LEVELS:-"1 3 6 19"}
PROGRAMS=${PROGRAMS:-"fib methods"}
CC=${CC:-gcc}
CXX=${CXX:-g++}
CFLAGS=${CFLAGS:--O2}
WORK=${WORK:-/dev/shm/callscope-bench.$$}
KEEP_WORK=${KEEP_WORK:-0}

log() { echo "[bench] $*" >&2; }
die() { echo "bench/run.sh: $*" >&2; exit 1; }

# --- tools --------------------------------------------------------------------
if [[ -z "${CALLSCOPE_BUILD:-}" ]]; then
  for d in "$ROOT/build-bench" "$ROOT/build"; do
    if [[ -x "$d/bin/callscope" && -f "$d/lib/libcallscope-rt.so" ]]; then CALLSCOPE_BUILD=$d; break; fi
  done
fi
[[ -n "${CALLSCOPE_BUILD:-}" ]] || die "no callscope build found; build it first:
  cmake -S $ROOT -B $ROOT/build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DCALLSCOPE_TESTS=OFF
  ninja -C $ROOT/build-bench callscope callscope-rt"
for t in "$CC" "$CXX" uftrace python3; do command -v "$t" >/dev/null || die "$t not found (uftrace: apt-get install uftrace)"; done
[[ -z "$PIN" ]] || command -v "${PIN%% *}" >/dev/null || die "${PIN%% *} not found"

mkdir -p "$WORK"
[[ "$KEEP_WORK" == 1 ]] || trap 'rm -rf "$WORK"' EXIT
BIN=$WORK/bin
mkdir -p "$BIN" "$WORK/cs/bin" "$WORK/cs/lib"

# Snapshot callscope: the tree may be rebuilt by someone else while we measure.
cp "$CALLSCOPE_BUILD/bin/callscope" "$WORK/cs/bin/callscope"
cp "$CALLSCOPE_BUILD/lib/libcallscope-rt.so" "$WORK/cs/lib/libcallscope-rt.so"
CS=$WORK/cs/bin/callscope
RT=$WORK/cs/lib/libcallscope-rt.so
BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$CALLSCOPE_BUILD/CMakeCache.txt" 2>/dev/null || true)
log "callscope from $CALLSCOPE_BUILD (${BUILD_TYPE:-unknown build type}), work dir $WORK"

# --- build --------------------------------------------------------------------
log "building programs with $CC/$CXX $CFLAGS"
$CC -O2 -o "$BIN/timeit" "$BENCH/tools/timeit.c"
$CC $CFLAGS -fPIC -shared -fvisibility=hidden -o "$BIN/libfloor_hook.so" "$BENCH/floor/floor_hook.c"
$CC $CFLAGS -DFLOOR_STATIC -c -o "$BIN/floor_static.o" "$BENCH/floor/floor_hook.c"
build() {  # name compiler source
  local name=$1 comp=$2 src=$3
  $comp $CFLAGS -o "$BIN/$name.plain" "$src"
  $comp $CFLAGS -finstrument-functions -o "$BIN/$name.cyg" "$src"
  $comp $CFLAGS -pg -o "$BIN/$name.pg" "$src"
  $comp $CFLAGS -finstrument-functions -o "$BIN/$name.floorstatic" "$src" "$BIN/floor_static.o"
}
build fib "$CC" "$BENCH/programs/fib.c"
build methods "$CXX" "$BENCH/programs/methods.cpp"

args_of() { case $1 in fib) echo "$FIB_N" ;; methods) echo "$METHODS_ARGS" ;; esac; }

# --- calls and bytes per call -------------------------------------------------
RES=$WORK/results.tsv   # prog config rep wall user sys
: >"$RES"
SIZES=$WORK/sizes.tsv   # prog what calls bytes seconds
: >"$SIZES"
calls_of_trace() { "$CS" info "$1" | sed -n 's/^calls: *\([0-9]*\).*/\1/p'; }

for p in $PROGRAMS; do
  read -r -a A <<<"$(args_of "$p")"
  log "$p ${A[*]}: counting calls, trace sizes at zstd levels $LEVELS"
  raw=$WORK/raw.$p
  rm -rf "$raw" && mkdir -p "$raw"
  env LD_PRELOAD="$RT" CALLSCOPE_DIR="$raw" "$BIN/$p.cyg" "${A[@]}" >/dev/null
  rawbytes=$(du -sb "$raw" | cut -f1)
  calls=
  for lv in $LEVELS; do
    "$BIN/timeit" -- "$CS" finish --keep-raw --level "$lv" -f -o "$WORK/$p.l$lv.trace" "$raw" 3>"$WORK/t" 2>/dev/null >/dev/null
    [[ -n "$calls" ]] || calls=$(calls_of_trace "$WORK/$p.l$lv.trace")
    printf '%s\tcallscope-level-%s\t%s\t%s\t%s\n' "$p" "$lv" "$calls" "$(stat -c %s "$WORK/$p.l$lv.trace")" "$(cut -d' ' -f1 "$WORK/t")" >>"$SIZES"
    rm -f "$WORK/$p.l$lv.trace"
  done
  printf '%s\tcallscope-raw\t%s\t%s\t\n' "$p" "$calls" "$rawbytes" >>"$SIZES"
  rm -rf "$raw"
  echo "$calls" >"$WORK/$p.calls"
  log "$p: $calls calls"
done

# --- wait for a quiet machine ------------------------------------------------
load1() { cut -d' ' -f1 /proc/loadavg; }
waited=0
while [[ "$WAIT_MAX" -gt 0 ]] && awk -v l="$(load1)" -v m="$WAIT_LOAD" 'BEGIN{exit !(l>=m)}'; do
  if [[ $waited -ge $WAIT_MAX ]]; then log "load $(load1) still >= $WAIT_LOAD after ${waited}s: measuring anyway"; break; fi
  log "load $(load1) >= $WAIT_LOAD, waiting (${waited}s of ${WAIT_MAX}s)"
  sleep 15
  waited=$((waited + 15))
done
LOAD_BEFORE=$(cat /proc/loadavg)
TOP_BEFORE=$(top -bn1 | sed -n '1,3p;7,12p')

# --- measure ------------------------------------------------------------------
CONFIGS=(plain floor floor-static callscope-run callscope-record callscope-profile gprof uftrace-cyg uftrace-pg)
run_config() {  # prog config rep
  local p=$1 c=$2 r=$3 out=$WORK/out.$p
  local -a A
  read -r -a A <<<"$(args_of "$p")"
  rm -rf "$out" && mkdir -p "$out"
  local -a cmd
  case $c in
    plain) cmd=("$BIN/$p.plain" "${A[@]}") ;;
    floor) cmd=(env LD_PRELOAD="$BIN/libfloor_hook.so" "$BIN/$p.cyg" "${A[@]}") ;;
    floor-static) cmd=("$BIN/$p.floorstatic" "${A[@]}") ;;
    callscope-run) cmd=(env LD_PRELOAD="$RT" CALLSCOPE_DIR="$out/raw" "$BIN/$p.cyg" "${A[@]}"); mkdir -p "$out/raw" ;;
    callscope-record) cmd=("$CS" record --raw-dir "$out" -f -o "$out/t.trace" -- "$BIN/$p.cyg" "${A[@]}") ;;
    callscope-profile) cmd=("$CS" record --mode=profile --raw-dir "$out" -f -o "$out/t.trace" -- "$BIN/$p.cyg" "${A[@]}") ;;
    gprof) cmd=(sh -c 'cd "$1" && shift && exec "$@"' sh "$out" "$BIN/$p.pg" "${A[@]}") ;;  # gmon.out in $out
    uftrace-cyg) cmd=(uftrace record --no-libcall -d "$out/uftrace.data" "$BIN/$p.cyg" "${A[@]}") ;;
    uftrace-pg) cmd=(uftrace record --no-libcall -d "$out/uftrace.data" "$BIN/$p.pg" "${A[@]}") ;;
  esac
  # shellcheck disable=SC2086
  $PIN "$BIN/timeit" -- "${cmd[@]}" 3>"$WORK/t" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; die "$p $c failed"; }
  printf '%s\t%s\t%s\t%s\n' "$p" "$c" "$r" "$(tr ' ' '\t' <"$WORK/t")" >>"$RES"
  if [[ $c == callscope-record || $c == callscope-profile ]]; then
    # record reports how long the program itself ran (its pre-allocating
    # thread included); CPU time of that phase alone is not known.
    local ran
    ran=$(sed -n 's/.*the program ran \([0-9.]*\) s.*/\1/p' "$WORK/err")
    [[ -n $ran ]] && printf '%s\t%s\t%s\t%s\tnan\tnan\n' "$p" "$c-run" "$r" "$ran" >>"$RES"
  fi
  if [[ $r == 1 ]]; then  # sizes, once
    local calls
    calls=$(cat "$WORK/$p.calls")
    case $c in
      callscope-run)
        printf '%s\tcallscope-raw-run\t%s\t%s\t\n' "$p" "$calls" "$(du -sb "$out/raw" | cut -f1)" >>"$SIZES"
        "$BIN/timeit" -- "$CS" finish -f -o "$out/t.trace" "$out/raw" 3>"$WORK/t" >/dev/null 2>&1
        printf '%s\tcallscope-finish\t%s\t%s\t%s\n' "$p" "$calls" "$(stat -c %s "$out/t.trace")" "$(cut -d' ' -f1 "$WORK/t")" >>"$SIZES" ;;
      callscope-profile)
        printf '%s\tcallscope-profile\t%s\t%s\t\n' "$p" "$(cat "$WORK/$p.calls")" "$(stat -c %s "$out/t.trace")" >>"$SIZES" ;;
      callscope-record)
        printf '%s\tcallscope-record\t%s\t%s\t\n' "$p" "$(calls_of_trace "$out/t.trace")" "$(stat -c %s "$out/t.trace")" >>"$SIZES" ;;
      uftrace-*)
        printf '%s\t%s\t%s\t%s\t\n' "$p" "$c" "$calls" "$(du -sb "$out/uftrace.data" | cut -f1)" >>"$SIZES" ;;
    esac
  fi
  rm -rf "$out"
}

n=${#CONFIGS[@]}
for r in $(seq 1 "$REPS"); do
  for p in $PROGRAMS; do
    # Rotate the order every repetition so that drifting noise hits all alike.
    order=()
    for i in $(seq 0 $((n - 1))); do order+=("${CONFIGS[$(((i + r - 1) % n))]}"); done
    log "rep $r/$REPS $p: ${order[*]} (load $(load1))"
    for c in "${order[@]}"; do run_config "$p" "$c" "$r"; done
  done
done
LOAD_AFTER=$(cat /proc/loadavg)

# --- report -------------------------------------------------------------------
mkdir -p "$BENCH/results"
REPORT=$BENCH/results/run-$(date +%Y%m%d-%H%M%S).md
{
  echo "## Run of $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs$(lscpu | sed -n 's/^Hypervisor vendor: *\(.*\)/ (\1 guest)/p'), kernel $(uname -r)"
  echo "- compilers: $($CC --version | head -1); $($CXX --version | head -1); flags \`$CFLAGS\`"
  echo "- callscope: $CALLSCOPE_BUILD (${BUILD_TYPE:-?}), git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet -- src 2>/dev/null || echo ' + uncommitted changes in src/'); $(uftrace --version | head -1)"
  echo "- load average before / after measuring: \`$LOAD_BEFORE\` / \`$LOAD_AFTER\` (waited ${waited}s)"
  echo "- pinning: \`${PIN:-none}\`; repetitions: $REPS, interleaved, median of wall time; data on tmpfs ($WORK)"
  echo
  python3 "$BENCH/tools/summarize.py" "$RES" "$SIZES" "$WORK"
  echo
  echo "<details><summary>load at start of measurement</summary>"
  echo
  echo '```'
  echo "$TOP_BEFORE"
  echo '```'
  echo "</details>"
} | tee "$REPORT"
log "report saved to $REPORT"
cp "$RES" "${REPORT%.md}.tsv"
cp "$SIZES" "${REPORT%.md}.sizes.tsv"
