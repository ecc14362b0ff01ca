#!/usr/bin/env bash
# The whole suite on a busy machine: a CPU hog on every core, and
# scripts/test.sh run RUNS times in a row (default 3) -- every tier, the
# sanitizer and fuzz steps too. A test that depends on timing fails here
# sooner or later; none may (docs/testing.md, "A suite that passes under
# load").
#
#   scripts/stress-tests.sh [--runs N] [--hogs N] [--clone DIR]
#
#   --runs N    how many full runs (default 3)
#   --hogs N    busy loops beside them (default: one per core, nproc)
#   --clone DIR run in a fresh clone of this repository's HEAD made at DIR
#               (which must not exist): what a newcomer's checkout sees,
#               anywhere -- under /tmp, in a path with spaces
#
# Each run's output goes to stress-run-K.log in the directory it runs in;
# the summary says which runs failed and which tests. Exit status: 0 when
# every run passed.
set -uo pipefail
runs=3
hogs=$(nproc)
clone=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --hogs) hogs=$2; shift 2 ;;
    --clone) clone=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "stress-tests: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.." || exit 2
if [ -n "$clone" ]; then
  if [ -e "$clone" ]; then echo "stress-tests: '$clone' exists: name a new directory" >&2; exit 2; fi
  git clone -q . "$clone" || exit 2
  cd "$clone" || exit 2
  # What the newcomer would have after setup.sh: the speedscope package
  # for the browser tests (npm ci, pinned; no network beyond the registry).
  (cd tests/browser/speedscope && npm ci --ignore-scripts --no-audit --no-fund >/dev/null) || exit 2
fi

pids=()
stop_hogs() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
}
trap stop_hogs EXIT INT TERM
for _ in $(seq 1 "$hogs"); do
  (while :; do :; done) &
  pids+=($!)
done
echo "stress-tests: $hogs CPU hog(s) running; $runs full run(s) of scripts/test.sh in $(pwd)"

failed=0
for k in $(seq 1 "$runs"); do
  start=$(date +%s)
  if scripts/test.sh > "stress-run-$k.log" 2>&1; then
    echo "stress-tests: run $k passed ($(( $(date +%s) - start )) s)"
  else
    failed=$((failed + 1))
    echo "stress-tests: run $k FAILED ($(( $(date +%s) - start )) s); see $(pwd)/stress-run-$k.log:"
    grep -E '^\s+[0-9]+ - .*\((Failed|SEGFAULT|Timeout|Subprocess aborted|Exception)' "stress-run-$k.log" | sed 's/^/    /'
  fi
done
echo "stress-tests: $((runs - failed)) of $runs run(s) passed under $hogs hog(s)"
[ "$failed" -eq 0 ]
