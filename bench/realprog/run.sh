#!/usr/bin/env bash
# The recorder's own CPU on real programs (issue 31, items 3 and 7): nginx
# under a bounded loopback load, then idle, and sqlite's speedtest1, each
#   plain            built without instrumentation
#   cyg              built with -finstrument-functions, not traced
#   callscope-record `callscope record -o X.trace -- PROGRAM`
#   callscope-record-noevents  the same with --events none (no context switches)
#   callscope-profile `callscope record --mode=profile ...` (nginx only)
#   callscope-query  `callscope query -n "pid$target::ngx_http_process_request:entry
#                    { @ = count(); }" -o X.trace -c "PROGRAM"` (nginx only)
#   callscope-libcalls `callscope record --libcalls ...` of the plain build
#                    (its calls into shared libraries)
#   callscope-memory `callscope record --memory ...` (calls, allocations, frees)
#   uftrace          `uftrace record --no-libcall -d DIR PROGRAM` (same build)
# Measures requests, the program's CPU, the recorder process's own CPU
# (utime+stime of the recorder itself, not its children) under load and idle,
# its wakeups while the program is idle, calls recorded, trace bytes; writes
# a Markdown report and the raw TSV to bench/results/ (see docs/benchmarks.md,
# "Real programs").
#
#     bench/realprog/run.sh [--callscope PATH] [--out DIR]
#
# Sources come from `apt-get source nginx sqlite3` (needs deb-src lines and
# dpkg-dev) and are built once, cached under $CACHE. Needs gcc, make, tclsh
# (sqlite's amalgamation), wrk, uftrace, python3; strace for the idle
# breakdown.
#
# Settings (environment variables):
#   CACHE=bench/realprog/.cache   sources and builds (gitignored)
#   WORK=/dev/shm/callscope-realprog.$$   traces (tmpfs for both tools)
#   LOAD_S=10 IDLE_S=10     nginx: seconds of wrk load (1 thread, 4
#                           connections), then of idle
#   STRACE_S=5              after the measured idle, strace -f -c the recorder
#                           this long (0: not)
#   SQLITE_SIZE=5           speedtest1 --size (about 4.3 M calls per unit)
#   REPS=1                  repetitions (order rotated; medians reported)
#   PROGRAMS="nginx sqlite" CONFIGS="plain cyg callscope-record callscope-profile callscope-query callscope-libcalls callscope-memory uftrace"
#   JOBS=2                  make -j
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

CALLSCOPE=""
OUT="$ROOT/bench/results"
while [[ $# -gt 0 ]]; do
  case $1 in
    --callscope) CALLSCOPE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--callscope PATH] [--out DIR]" >&2; exit 2 ;;
  esac
done

CACHE=${CACHE:-$HERE/.cache}
WORK=${WORK:-/dev/shm/callscope-realprog.$$}
LOAD_S=${LOAD_S:-10}
IDLE_S=${IDLE_S:-10}
STRACE_S=${STRACE_S:-5}
SQLITE_SIZE=${SQLITE_SIZE:-5}
REPS=${REPS:-1}
PROGRAMS=${PROGRAMS:-"nginx sqlite"}
CONFIGS=${CONFIGS:-"plain cyg callscope-record callscope-profile callscope-query callscope-libcalls callscope-memory uftrace"}
JOBS=${JOBS:-2}
CFLAGS_BASE="-O2 -g"
CYG_FLAGS="-finstrument-functions"

log() { echo "[realprog] $*" >&2; }
die() { echo "bench/realprog/run.sh: $*" >&2; exit 1; }

if [[ -z $CALLSCOPE ]]; then
  for d in "$ROOT/build" "$ROOT/build-bench"; do
    if [[ -x $d/bin/callscope ]]; then CALLSCOPE=$d/bin/callscope; break; fi
  done
fi
[[ -n $CALLSCOPE && -x $CALLSCOPE ]] || die "no callscope binary (build it, or pass --callscope PATH)"
CALLSCOPE=$(cd "$(dirname "$CALLSCOPE")" && pwd)/$(basename "$CALLSCOPE")
for t in gcc make python3 wrk uftrace apt-get dpkg-source tclsh; do
  command -v "$t" >/dev/null || die "needs $t (apt-get install wrk uftrace dpkg-dev tcl gcc make python3)"
done

mkdir -p "$CACHE" "$OUT" "$WORK"
chmod 700 "$WORK"
cleanup() {
  local rc=$?
  # the Python side kills what it started; this catches anything left in WORK
  [[ ${KEEP_WORK:-0} == 1 ]] || rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- sources -------------------------------------------------------------------
# fetch_src PKG: `apt-get source PKG` into $CACHE/src/PKG (once); if the
# newest version cannot be fetched (a security suite's index may name a file
# its pool no longer has), the older versions the index lists, newest first.
fetch_src() {
  local pkg=$1 dir=$CACHE/src/$1
  if [[ ! -f $dir/.fetched ]]; then
    rm -rf "$dir"; mkdir -p "$dir"
    log "apt-get source $pkg"
    if ! (cd "$dir" && apt-get source -qq "$pkg" >/dev/null 2>"$dir/apt.log"); then
      local ok=0 v
      for v in $(apt-cache showsrc "$pkg" | awk '/^Version:/ {print $2}' | sort -rV -u); do
        log "apt-get source $pkg=$v"
        rm -rf "${dir:?}"/*
        if (cd "$dir" && apt-get source -qq "$pkg=$v" >/dev/null 2>>"$dir/apt.log"); then ok=1; break; fi
      done
      [[ $ok == 1 ]] || die "apt-get source $pkg failed (deb-src lines in /etc/apt/sources.list.d? see $dir/apt.log)"
    fi
    touch "$dir/.fetched"
  fi
  # the unpacked tree: the one directory
  local tree
  tree=$(find "$dir" -mindepth 1 -maxdepth 1 -type d | head -1)
  [[ -n $tree ]] || die "no unpacked source under $dir"
  echo "$tree"
}

# --- nginx ---------------------------------------------------------------------
build_nginx() {  # build_nginx FLAVOUR EXTRA_CFLAGS -> path of the binary
  local flavour=$1 extra=$2 src bdir
  src=$(fetch_src nginx)
  bdir=$CACHE/nginx-$flavour
  local stamp="$CFLAGS_BASE $extra $(basename "$src")"
  if [[ ! -x $bdir/objs/nginx || "$(cat "$bdir/.stamp" 2>/dev/null)" != "$stamp" ]]; then
    log "building nginx ($flavour: $CFLAGS_BASE $extra)"
    rm -rf "$bdir"; cp -r "$src" "$bdir"
    (cd "$bdir" && ./configure --with-cc-opt="$CFLAGS_BASE $extra" \
        --without-http_rewrite_module --without-http_gzip_module --without-pcre \
        --without-http_ssi_module >"$bdir/configure.log" 2>&1 \
      && make -j"$JOBS" >"$bdir/make.log" 2>&1) || die "nginx build failed: see $bdir/*.log"
    echo "$stamp" >"$bdir/.stamp"
  fi
  echo "$bdir/objs/nginx"
}

# --- sqlite --------------------------------------------------------------------
build_sqlite() {  # build_sqlite FLAVOUR EXTRA_CFLAGS -> path of speedtest1
  local flavour=$1 extra=$2 src amal bdir
  src=$(fetch_src sqlite3)
  amal=$CACHE/sqlite-amalgamation
  if [[ ! -f $amal/sqlite3.c || "$(cat "$amal/.stamp" 2>/dev/null)" != "$(basename "$src")" ]]; then
    log "making sqlite's amalgamation"
    rm -rf "$amal"; mkdir -p "$amal"
    (cd "$amal" && "$src/configure" --disable-tcl >configure.log 2>&1 \
      && make sqlite3.c >make.log 2>&1) || die "sqlite amalgamation failed: see $amal/*.log"
    basename "$src" >"$amal/.stamp"
  fi
  bdir=$CACHE/sqlite-$flavour
  local stamp="$CFLAGS_BASE $extra $(basename "$src")"
  if [[ ! -x $bdir/speedtest1 || "$(cat "$bdir/.stamp" 2>/dev/null)" != "$stamp" ]]; then
    log "building sqlite speedtest1 ($flavour: $CFLAGS_BASE $extra)"
    rm -rf "$bdir"; mkdir -p "$bdir"
    # shellcheck disable=SC2086
    gcc $CFLAGS_BASE $extra -I"$amal" -DSQLITE_THREADSAFE=0 \
      "$src/test/speedtest1.c" "$amal/sqlite3.c" -o "$bdir/speedtest1" -lm -ldl -lpthread \
      2>"$bdir/build.log" || die "speedtest1 build failed: see $bdir/build.log"
    echo "$stamp" >"$bdir/.stamp"
  fi
  echo "$bdir/speedtest1"
}

args=()
nginx_version="" sqlite_version=""
if [[ " $PROGRAMS " == *" nginx "* ]]; then
  args+=(--nginx-plain "$(build_nginx plain "")" --nginx-cyg "$(build_nginx cyg "$CYG_FLAGS")")
  nginx_version=$(basename "$(fetch_src nginx)")
fi
if [[ " $PROGRAMS " == *" sqlite "* ]]; then
  args+=(--sqlite-plain "$(build_sqlite plain "")" --sqlite-cyg "$(build_sqlite cyg "$CYG_FLAGS")")
  sqlite_version=$(basename "$(fetch_src sqlite3)")
fi

# --- run -----------------------------------------------------------------------
stamp=$(date -u +%Y%m%d-%H%M%S)
commit=$(git -C "$(dirname "$CALLSCOPE")" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -z $(git -C "$(dirname "$CALLSCOPE")" status --porcelain --untracked-files=no 2>/dev/null) ]] || commit="$commit+dirty"
# the last commit that changed what the binary is built from (bench/ and
# docs/ commits do not change callscope)
src_commit=$(git -C "$(dirname "$CALLSCOPE")" log -1 --format=%h -- ':/src' ':/include' ':/cmake' ':/CMakeLists.txt' 2>/dev/null || echo unknown)
raw=$OUT/realprog-$stamp
mkdir -p "$raw"
strace_on=1; [[ $STRACE_S != 0 ]] || strace_on=0
log "running; report: $OUT/realprog-$stamp.md"
python3 "$HERE/realprog.py" --callscope "$CALLSCOPE" --work "$WORK" --out-raw "$raw" \
  --report "$OUT/realprog-$stamp.md" --tsv "$raw/runs.tsv" \
  --load-s "$LOAD_S" --idle-s "$IDLE_S" --strace-s "$STRACE_S" --strace "$strace_on" \
  --sqlite-size "$SQLITE_SIZE" --reps "$REPS" --configs "$CONFIGS" --programs "$PROGRAMS" \
  "${args[@]}" \
  --meta "date=$(date -u '+%Y-%m-%d %H:%M UTC')" \
         "cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)" \
         "ncpu=$(nproc)" "load=$(cut -d' ' -f1-3 /proc/loadavg)" \
         "commit=$commit" "src_commit=$src_commit" "uftrace=$(uftrace --version | head -1)" \
         "command=LOAD_S=$LOAD_S IDLE_S=$IDLE_S SQLITE_SIZE=$SQLITE_SIZE REPS=$REPS bench/realprog/run.sh" \
         "nginx_version=$nginx_version" "sqlite_version=$sqlite_version"
