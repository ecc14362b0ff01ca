#!/bin/sh
# Bad input to the commands that read traces gets one clear message and a
# non-zero exit (docs/report.md, docs/replay.md, docs/configuration.md).
# Usage: refusals.sh CALLSCOPE TEXT_TRACE CASES_DIR WORK_DIR
set -u
CS=$1 TT=$2 CASES=$3 WORK=$4
mkdir -p "$WORK" || exit 1
cd "$WORK" || exit 1
"$TT" "$CASES/profile_snapshots.txt" prof.trace || exit 1
"$TT" "$CASES/report_profile.txt" rec.trace || exit 1
"$TT" "$CASES/untraced.txt" untraced.trace || exit 1
failed=0

# expect CODE TEXT ARGS...: callscope ARGS exits with CODE and says TEXT on stderr.
expect() {
  code=$1 text=$2
  shift 2
  "$CS" "$@" > out.txt 2> err.txt
  rc=$?
  if [ "$rc" != "$code" ] || ! grep -qF -- "$text" err.txt; then
    echo "FAILED: callscope $* -> exit $rc (want $code), stderr:"; cat err.txt
    echo "  (want: $text)"
    failed=1
  fi
}

# Numbers: negative, hexadecimal or zero where they make no sense.
expect 2 "--thread: '-1' is not a thread number" replay -t -1 rec.trace
expect 2 "--thread: '-1' is not a thread number" dump -t -1 rec.trace
expect 2 "--top: '-1' is not a count" report -n -1 rec.trace
expect 2 "--limit: '0x10' is not a count" dump -n 0x10 rec.trace
expect 2 "--depth: '-1' is not a count" replay -D -1 rec.trace
expect 2 "--depth: '0x10' is not a count" report --tree --depth 0x10 rec.trace
expect 2 "--dump: '0' is not a snapshot number: snapshots are numbered from 1" report --dump 0 prof.trace
expect 2 "--top: '-3' is not a count" stack -n -3 /bin/true

# A thread that ran without being recorded has no calls to show.
expect 1 "thread 'late-worker' ran without being recorded: it has no calls ('callscope info' says why)" report -t late-worker untraced.trace
expect 1 "thread 1 ran without being recorded: it has no calls" replay -t 1 untraced.trace

# A settings file that is a directory.
mkdir -p conf.d
expect 1 "cannot read config file 'conf.d': 'conf.d' is a directory, not a regular file" config --config conf.d
expect 1 "'conf.d' is a directory, not a regular file" report --config conf.d rec.trace

# A runtime that is not one: said before anything runs.
echo "not a library" > fake-rt.so
CALLSCOPE_RUNTIME=$PWD/fake-rt.so expect 1 "fake-rt.so' is not an ELF shared library: point it at libcallscope-rt.so" \
  record -o never.trace -- /bin/true
CALLSCOPE_RUNTIME=/bin/true expect 1 "'/bin/true' is not callscope's runtime (it defines no __cyg_profile_func_enter)" record -o never.trace -- /bin/true
[ -e never.trace ] && { echo "FAILED: a trace was written with a bad runtime"; failed=1; }

# --diff compares flat profiles: the views it cannot show are refused.
expect 1 "--tree does not go with --diff" report prof.trace --diff 1 2 --tree
expect 1 "--sort, --threads do not go with --diff" report prof.trace --diff 1 2 -s calls --threads
expect 1 "--idle does not go with --diff" report prof.trace --diff 1 2 --idle x
expect 1 "no function matches 'nothing*', 'none' in A or B" report prof.trace --diff 1 2 -F 'nothing*' -F none
expect 1 "no thread matches 'nobody'" report prof.trace --diff 1 2 -t nobody

# Several -F and -m globs: any of them; none matching is named.
expect 1 "no function matches 'x', 'y'" report -F x -F y rec.trace
expect 1 "--idle: no function matches 'idle_*'" report --idle 'idle_*' rec.trace
expect 1 "--min-busy must be between 0 and 100" report --min-busy 150 rec.trace
# What --idle and --min-busy left out is said on stderr (the report is on stdout).
expect 0 "6.5 us of idle time left out (the self time of '*0x401300')" report --idle '*0x401300' rec.trace
expect 0 "left out thread 1: busy less than 99.5% of its wall time" report --min-busy 99.5 rec.trace
expect 1 "no thread was busy 100% of its wall time" report --min-busy 100 --idle '*0x401000' -t 0 rec.trace

# A profile-mode trace has no events to list: say what it holds instead.
expect 1 "is a profile-mode trace: it holds call trees (4 snapshots), not the calls in order; run 'callscope report" \
  replay prof.trace
expect 1 "is a profile-mode trace" dump --stats prof.trace
expect 1 "is a profile-mode trace" dump prof.trace

# memory (docs/memory.md): keys, windows and modes that do not make sense.
"$TT" "$CASES/memory.txt" mem.trace || exit 1
expect 1 "--by: unknown key 'size' (function, path, module, tag, thread, process)" memory --by size mem.trace
expect 1 "--by: 'tag' is given twice" memory --by tag,tag mem.trace
expect 1 "--by: 'path' and 'function' together: a path ends in its function already" memory --by path,function mem.trace
expect 1 "--window 'phase2' is not FROM..TO" memory --window phase2 mem.trace
expect 1 "--window: 'phase3' is neither a time (1.5ms, 2s) nor the text of a mark (marks: 'phase2')" memory --window phase3.. mem.trace
expect 1 "--window: 'x' is neither a time (1.5ms, 2s) nor the text of a mark (the trace has no marks)" memory --window ..x rec.trace
expect 1 "--window '2us..1us' ends before it begins" memory --window 2us..1us mem.trace
expect 2 "--peak excludes --leaks" memory --peak --leaks mem.trace
expect 2 "--transient-under" memory --transient-under 5parsecs mem.trace
expect 1 "holds no memory events: record the program with 'callscope record --memory'" memory rec.trace
expect 1 "is a profile-mode trace" memory prof.trace
expect 1 "unknown --metric 'bogus' (valid: time, allocs, alloc_bytes, leaked_bytes)" report --metric bogus mem.trace
expect 1 "--metric leaked_bytes shows the call tree (--tree) or functions by memory: it does not take --thread" report --metric leaked_bytes -t 1 mem.trace
expect 1 "needs a trace of 'callscope record --memory'" report --metric allocs rec.trace
# A trace mixing hooked processes with processes unwound at allocations:
# --stack measures hooked threads only, and says which they are.
"$TT" "$CASES/memory_processes.txt" mixed.trace || exit 1
expect 1 "--stack needs the stack pointer of every call: the calls of 1 thread chosen (#2) were unwound at allocations, without one; the trace's hooked threads are measured with -t 0 -t 1 -t 3 -t 4" report --stack mixed.trace
expect 0 "this trace mixes calls from hooks (3 in 4 processes) with frames unwound at allocations (1 in 1 process, record --memory of programs without -finstrument-functions); the unwound ones: pid 201 cc." report mixed.trace
expect 0 "the calls of 1 process of this trace (the others' are from hooks) were unwound at allocations" export -f chrome -o mixed.json mixed.trace

# One snapshot is "1 snapshot" (info), and a profile-mode trace gives no
# bytes per call (its calls are those of the call trees, not events).
printf 'clock monotonic\nmode profile\nprocess pid=1 ppid=0 exe=x argv=x exit=0\nthread process=0 tid=1 name=x start=0 end=9\nsnapshot process=0 seq=1 reason=4 tick=9\nnode thread=0 fn=0x10 calls=3 total=9 self=9\n' > one.txt
"$TT" one.txt one.trace || exit 1
"$CS" info one.trace > info.txt 2>&1
if ! grep -q "profile: call trees kept in the process, 1 snapshot$" info.txt || grep -q "bytes/call" info.txt; then
  echo "FAILED: info of a one-snapshot profile:"; cat info.txt; failed=1
fi

exit $failed
