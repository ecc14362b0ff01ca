#!/usr/bin/env bash
# What the kernel's events cost in trace size (docs/benchmarks.md, "What the
# kernel's events cost in trace size"): two small programs recorded with and
# without them; the difference in trace bytes over the events recorded.
#   bench/sysevents/run.sh [--callscope PATH]
#  - pingpong: two threads pass a byte back and forth 20,000 times over
#    pipes (about 40,000 context switches);
#  - syscalls: 100,000 getppid and 100,000 read of /dev/zero (200,000
#    system calls);
#  - faults: 200,000 fresh pages touched (200,000 minor page faults);
#  - directio: 20,000 O_DIRECT reads and writes of 4 KiB (20,000 block
#    requests, each with its completion; root), in the work directory.
# Switches are measured as the user running it (run it as root and as a
# user: root adds the sched tracepoints' states and wakers); system calls
# need root or CAP_PERFMON.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
callscope="${here}/../../build/bin/callscope"
[ "${1:-}" = "--callscope" ] && callscope="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cc -O2 -finstrument-functions -pthread "$here/pingpong.c" -o "$work/pingpong"
cc -O2 -finstrument-functions "$here/syscalls.c" -o "$work/syscalls"
cc -O2 -finstrument-functions "$here/faults.c" -o "$work/faults"
cc -O2 -finstrument-functions "$here/directio.c" -o "$work/directio"
size() { stat -c %s "$1"; }
count() { sed -n "s/.*the kernel's events: \([0-9]*\) context switch.*/\1/p" "$1"; }
syscalls() { sed -n "s/.* \([0-9]*\) system calls.*/\1/p" "$1"; }
faults() { sed -n "s/.* \([0-9]*\) page faults.*/\1/p" "$1"; }
requests() { sed -n "s/.* \([0-9]*\) block I\/O requests.*/\1/p" "$1"; }
cpu() { sed -n "s/.*the recorder used \([0-9.]*\) s of CPU.*/\1/p" "$1"; }

"$callscope" record -f -o "$work/pp-none.trace" --events none -- "$work/pingpong" 2>"$work/pp-none.err"
"$callscope" record -f -o "$work/pp-sched.trace" --events sched -- "$work/pingpong" 2>"$work/pp-sched.err"
grep -h "warning" "$work/pp-sched.err" || true
n=$(count "$work/pp-sched.err")
extra=$(( $(size "$work/pp-sched.trace") - $(size "$work/pp-none.trace") ))
echo "pingpong: $n context switches, $extra bytes more: $(awk "BEGIN{printf \"%.2f\", $extra/$n}") bytes per switch"

"$callscope" record -f -o "$work/sc-none.trace" --events none -- "$work/syscalls" 2>"$work/sc-none.err"
if "$callscope" record -f -o "$work/sc-sys.trace" --events syscalls -- "$work/syscalls" 2>"$work/sc-sys.err" &&
   ! grep -q "not recorded" "$work/sc-sys.err"; then
  n=$(syscalls "$work/sc-sys.err")
  extra=$(( $(size "$work/sc-sys.trace") - $(size "$work/sc-none.trace") ))
  echo "syscalls: $n system calls, $extra bytes more: $(awk "BEGIN{printf \"%.2f\", $extra/$n}") bytes per system call (enter and exit)"
else
  echo "syscalls: not recorded here: $(grep -h "not recorded" "$work/sc-sys.err" | head -1)"
fi

"$callscope" record -f -o "$work/pf-none.trace" --events none -- "$work/faults" 2>"$work/pf-none.err"
"$callscope" record -f -o "$work/pf.trace" --events faults -- "$work/faults" 2>"$work/pf.err"
grep -h "warning" "$work/pf.err" || true
n=$(faults "$work/pf.err")
extra=$(( $(size "$work/pf.trace") - $(size "$work/pf-none.trace") ))
echo "faults: $n page faults, $extra bytes more: $(awk "BEGIN{printf \"%.2f\", $extra/$n}") bytes per fault;" \
  "the recorder's CPU $(cpu "$work/pf-none.err") s without, $(cpu "$work/pf.err") s with them"

"$callscope" record -f -o "$work/io-none.trace" --events none -- "$work/directio" "$work" 2>"$work/io-none.err"
if "$callscope" record -f -o "$work/io.trace" --events io -- "$work/directio" "$work" 2>"$work/io.err" &&
   ! grep -q "not recorded" "$work/io.err"; then
  n=$(requests "$work/io.err")
  extra=$(( $(size "$work/io.trace") - $(size "$work/io-none.trace") ))
  echo "directio: $n block I/O requests, $extra bytes more: $(awk "BEGIN{printf \"%.2f\", $extra/$n}") bytes per request" \
    "(start and completion); the recorder's CPU $(cpu "$work/io-none.err") s without, $(cpu "$work/io.err") s with them"
else
  echo "directio: not recorded here: $(grep -h "not recorded" "$work/io.err" | head -1)"
fi
