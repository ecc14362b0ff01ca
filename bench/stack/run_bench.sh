#!/bin/sh
# Times `callscope stack` on a large shared library beside Linux's
# checkstack.pl fed by objdump, the usual way to get frame sizes from a
# binary. Usage: run_bench.sh CALLSCOPE [LIBRARY] [RUNS]
# Needs: linux-kbuild-6.1 (checkstack.pl), binutils (objdump), llvm-14 for
# the default library. Prints wall seconds (best of RUNS) for each tool.
set -eu
callscope=${1:?usage: run_bench.sh CALLSCOPE [LIBRARY] [RUNS]}
lib=${2:-/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1}
runs=${3:-3}
checkstack=${CHECKSTACK:-/usr/lib/linux-kbuild-6.1/scripts/checkstack.pl}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

best() {  # best wall time of $runs runs of "$@" (stdout discarded), in seconds
  b=""
  i=0
  while [ "$i" -lt "$runs" ]; do
    s=$(date +%s.%N)
    "$@" > /dev/null
    e=$(date +%s.%N)
    t=$(echo "$e - $s" | bc)
    if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi
    i=$((i + 1))
  done
  printf '%.2f' "$b"
}

echo "library: $lib ($(du -m "$lib" | cut -f1) MB, .text $(size -A "$lib" | awk '$1==".text"{printf "%d MB", $2/1048576}'))"
echo "cores: $(nproc)"
printf 'callscope stack (frames, all functions):      %s s\n' "$(best "$callscope" stack "$lib")"
printf 'callscope stack --worst (call graph, paths):  %s s\n' "$(best "$callscope" stack "$lib" --worst -n 20)"
printf 'callscope stack --worst -n 0 (every function): %s s\n' "$(best "$callscope" stack "$lib" --worst -n 0)"
printf 'callscope stack --unresolved (every site):    %s s\n' "$(best "$callscope" stack "$lib" --unresolved)"
if [ -x "$checkstack" ] || [ -f "$checkstack" ]; then
  run_checkstack() { objdump -d "$lib" | perl "$checkstack" x86_64; }
  printf 'objdump -d | checkstack.pl x86_64:           %s s\n' "$(best run_checkstack)"
else
  echo "checkstack.pl not found (apt-get install linux-kbuild-6.1)"
fi
"$callscope" stack "$lib" | grep -vc '^#' | xargs printf 'functions listed by callscope: %s\n'
