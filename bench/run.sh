#!/usr/bin/env bash
# callscope speed benchmark: cost per call against no instrumentation, a
# minimal TSC hook, and uftrace; trace bytes per call; time from the program's
# exit to the trace written; peak raw space while a multi-threaded program
# makes calls as fast as it can. Results: docs/benchmarks.md.
#
# One command, from anywhere (after building callscope and callscope-rt):
#
#     bench/run.sh
#
# It builds the test programs, waits for the machine to be quiet, runs every
# configuration REPS times (interleaved), prints a Markdown report on stdout
# and saves it to bench/results/run-<date>.md. Everything it writes while
# measuring (raw events, traces, uftrace.data) goes to $WORK, on tmpfs. The
# report ends with the targets of the streaming recorder side by side, each
# with its verdict ("Targets of the streaming recorder").
#
# Programs (bench/programs): fib (recursive fib(FIB_N)), methods (small C++
# methods), threads (THREADS_ARGS: calls per thread, threads; every thread
# calls a tiny function in a loop). fib and methods run every configuration;
# threads runs THREADS_CONFIGS, among them callscope-rawpeak: `callscope
# record --raw-dir D` while bench/tools/rawpeak.c samples the space under D
# every RAW_SAMPLE_MS ms (allocated blocks, as `du -sB1`: fresh rings are
# sparse). Run one program alone with e.g. PROGRAMS=threads REPS=1.
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
#   PROGRAMS="fib methods threads"   which programs to run
#   THREADS_ARGS="10000000 4" threads: calls per thread, number of threads
#                             (threads*(calls+1)+1 calls in all)
#   THREADS_CONFIGS="plain floor callscope-record callscope-rawpeak"
#                             configurations run for threads: any of CONFIGS
#                             below, and callscope-rawpeak (add uftrace-cyg to
#                             compare: slow, about 1 us a call with 4 threads
#                             on 2 cores, and 32 bytes a call on tmpfs)
#   THREADS_PIN=""            prefix of threads' timed commands (not pinned by
#                             default: its threads and the recorder need the
#                             cores; PIN applies to fib and methods)
#   RAW_SAMPLE_MS=10          interval of the raw-space sampler
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
PROGRAMS=${PROGRAMS:-"fib methods threads"}
THREADS_ARGS=${THREADS_ARGS:-"10000000 4"}
THREADS_CONFIGS=${THREADS_CONFIGS:-"plain floor callscope-record callscope-rawpeak"}
THREADS_PIN=${THREADS_PIN-""}
RAW_SAMPLE_MS=${RAW_SAMPLE_MS:-10}
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
[[ -z "$THREADS_PIN" ]] || command -v "${THREADS_PIN%% *}" >/dev/null || die "${THREADS_PIN%% *} not found"
for p in $PROGRAMS; do
  case $p in fib | methods | threads) ;; *) die "unknown program '$p' in PROGRAMS (fib, methods, threads)" ;; esac
done

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
$CC -O2 -o "$BIN/rawpeak" "$BENCH/tools/rawpeak.c"
$CC $CFLAGS -fPIC -shared -fvisibility=hidden -o "$BIN/libfloor_hook.so" "$BENCH/floor/floor_hook.c"
$CC $CFLAGS -DFLOOR_STATIC -c -o "$BIN/floor_static.o" "$BENCH/floor/floor_hook.c"
build() {  # name compiler source [extra flags]
  local name=$1 comp=$2 src=$3 extra=${4:-}
  # shellcheck disable=SC2086
  {
    $comp $CFLAGS -o "$BIN/$name.plain" "$src" $extra
    $comp $CFLAGS -finstrument-functions -o "$BIN/$name.cyg" "$src" $extra
    $comp $CFLAGS -pg -o "$BIN/$name.pg" "$src" $extra
    $comp $CFLAGS -finstrument-functions -o "$BIN/$name.floorstatic" "$src" "$BIN/floor_static.o" $extra
  }
}
build fib "$CC" "$BENCH/programs/fib.c"
build methods "$CXX" "$BENCH/programs/methods.cpp"
build threads "$CC" "$BENCH/programs/threads.c" -pthread

args_of() { case $1 in fib) echo "$FIB_N" ;; methods) echo "$METHODS_ARGS" ;; threads) echo "$THREADS_ARGS" ;; esac; }
pin_of() { if [[ $1 == threads ]]; then echo "$THREADS_PIN"; else echo "$PIN"; fi; }

# --- calls and bytes per call -------------------------------------------------
RES=$WORK/results.tsv   # prog config rep wall user sys
: >"$RES"
SIZES=$WORK/sizes.tsv   # prog what calls bytes seconds
: >"$SIZES"
calls_of_trace() { "$CS" info "$1" | sed -n 's/^calls: *\([0-9]*\).*/\1/p'; }

for p in $PROGRAMS; do
  read -r -a A <<<"$(args_of "$p")"
  if [[ $p == threads ]]; then
    # No zstd level sweep here: it needs the whole raw stream (24 bytes a
    # call) on tmpfs. The calls are counted from one `callscope record` trace.
    log "$p ${A[*]}: counting calls"
    "$CS" record --raw-dir "$WORK" -f -o "$WORK/$p.count.trace" -- "$BIN/$p.cyg" "${A[@]}" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; die "$p: record failed"; }
    calls_of_trace "$WORK/$p.count.trace" >"$WORK/$p.calls"
    rm -f "$WORK/$p.count.trace"
    log "$p: $(cat "$WORK/$p.calls") calls"
    continue
  fi
  log "$p ${A[*]}: counting calls, trace sizes at zstd levels $LEVELS"
  raw=$WORK/raw.$p
  rm -rf "$raw" && mkdir -m 0700 -p "$raw"
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
configs_of() { if [[ $1 == threads ]]; then echo "$THREADS_CONFIGS"; else echo "${CONFIGS[*]}"; fi; }
RAWPEAK=$WORK/rawpeak.tsv  # prog rep peak_allocated peak_apparent samples max_gap_ms calls ran waited waits write lost
: >"$RAWPEAK"
# What `callscope record` says on stderr ($1), as
# "CALLS RAN WAITED WAITS WRITE LOST" (seconds; WAITED, WAITS, LOST 0 if not said).
record_says() {
  local calls ran write waited=0 waits=0 lost=0 w l
  calls=$(sed -n 's/^callscope record: \([0-9]*\) calls in .*/\1/p' "$1" | tail -1)
  ran=$(sed -n 's/.*the program ran \([0-9.]*\) s.*/\1/p' "$1" | tail -1)
  write=$(sed -n 's/.*the trace took \([0-9.]*\) s to write.*/\1/p' "$1" | tail -1)
  w=$(sed -n 's/.*the program waited \([0-9.]*\) s in all .*(\([0-9]*\) time.*/\1 \2/p' "$1" | tail -1)
  [[ -z $w ]] || read -r waited waits <<<"$w"
  l=$(sed -n 's/.*warning: \([0-9]*\) events were lost.*/\1/p' "$1" | tail -1)
  [[ -z $l ]] || lost=$l
  echo "${calls:-nan} ${ran:-nan} $waited $waits ${write:-nan} $lost"
}
run_config() {  # prog config rep
  local p=$1 c=$2 r=$3
  local out=$WORK/out.$p
  local -a A
  read -r -a A <<<"$(args_of "$p")"
  rm -rf "$out" && mkdir -p "$out"
  local -a cmd
  case $c in
    plain) cmd=("$BIN/$p.plain" "${A[@]}") ;;
    floor) cmd=(env LD_PRELOAD="$BIN/libfloor_hook.so" "$BIN/$p.cyg" "${A[@]}") ;;
    floor-static) cmd=("$BIN/$p.floorstatic" "${A[@]}") ;;
    callscope-run) cmd=(env LD_PRELOAD="$RT" CALLSCOPE_DIR="$out/raw" "$BIN/$p.cyg" "${A[@]}"); mkdir -m 0700 -p "$out/raw" ;;
    callscope-record) cmd=("$CS" record --raw-dir "$out" -f -o "$out/t.trace" -- "$BIN/$p.cyg" "${A[@]}") ;;
    callscope-profile) cmd=("$CS" record --mode=profile --raw-dir "$out" -f -o "$out/t.trace" -- "$BIN/$p.cyg" "${A[@]}") ;;
    # The trace goes beside the sampled directory, not into it.
    callscope-rawpeak) mkdir -m 0700 -p "$out/raw"; cmd=("$BIN/rawpeak" -i "$RAW_SAMPLE_MS" -d "$out/raw" -o "$WORK/peak" -- "$CS" record --raw-dir "$out/raw" -f -o "$out/t.trace" -- "$BIN/$p.cyg" "${A[@]}") ;;
    gprof) cmd=(sh -c 'cd "$1" && shift && exec "$@"' sh "$out" "$BIN/$p.pg" "${A[@]}") ;;  # gmon.out in $out
    uftrace-cyg) cmd=(uftrace record --no-libcall -d "$out/uftrace.data" "$BIN/$p.cyg" "${A[@]}") ;;
    uftrace-pg) cmd=(uftrace record --no-libcall -d "$out/uftrace.data" "$BIN/$p.pg" "${A[@]}") ;;
  esac
  local pin
  pin=$(pin_of "$p")
  # shellcheck disable=SC2086
  $pin "$BIN/timeit" -- "${cmd[@]}" 3>"$WORK/t" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; die "$p $c failed"; }
  printf '%s\t%s\t%s\t%s\n' "$p" "$c" "$r" "$(tr ' ' '\t' <"$WORK/t")" >>"$RES"
  if [[ $c == callscope-record || $c == callscope-profile || $c == callscope-rawpeak ]]; then
    # record reports how long the program itself ran (the recorder's draining
    # thread runs meanwhile), how long it waited for the recorder, and how
    # long the trace took to write after the program ended; CPU time of those
    # phases alone is not known. Pseudo-configurations <config>-run, -waited
    # and -write hold them as wall seconds.
    local calls ran waited waits write lost
    read -r calls ran waited waits write lost <<<"$(record_says "$WORK/err")"
    [[ $ran == nan ]] || printf '%s\t%s\t%s\t%s\tnan\tnan\n' "$p" "$c-run" "$r" "$ran" >>"$RES"
    [[ $ran == nan ]] || printf '%s\t%s\t%s\t%s\tnan\tnan\n' "$p" "$c-waited" "$r" "$waited" >>"$RES"
    [[ $write == nan ]] || printf '%s\t%s\t%s\t%s\tnan\tnan\n' "$p" "$c-write" "$r" "$write" >>"$RES"
    if [[ $c == callscope-rawpeak ]]; then
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$p" "$r" "$(tr ' ' '\t' <"$WORK/peak")" \
        "$calls" "$ran" "$waited" "$waits" "$write" "$lost" >>"$RAWPEAK"
      log "$p rawpeak: $(cut -d' ' -f1 "$WORK/peak") bytes at most under --raw-dir, $calls calls in $ran s (waited $waited s)"
    fi
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

for r in $(seq 1 "$REPS"); do
  for p in $PROGRAMS; do
    read -r -a PC <<<"$(configs_of "$p")"
    n=${#PC[@]}
    # Rotate the order every repetition so that drifting noise hits all alike.
    order=()
    for i in $(seq 0 $((n - 1))); do order+=("${PC[$(((i + r - 1) % n))]}"); done
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
  echo "- pinning: \`${PIN:-none}\` (threads: \`${THREADS_PIN:-none}\`); repetitions: $REPS, interleaved, median of wall time; data on tmpfs ($WORK)"
  echo "- programs: $PROGRAMS; fib($FIB_N), methods $METHODS_ARGS, threads $THREADS_ARGS (calls per thread, threads); raw space sampled every $RAW_SAMPLE_MS ms"
  echo
  python3 "$BENCH/tools/summarize.py" "$RES" "$SIZES" "$WORK" "$RAWPEAK" "$FIB_N"
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
[[ ! -s "$RAWPEAK" ]] || cp "$RAWPEAK" "${REPORT%.md}.rawpeak.tsv"
