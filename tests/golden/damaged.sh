#!/bin/sh
# Crafted traces: records whose checksums hold but whose indexes name what
# the trace does not have (a module of process 4294967295, a call tree of a
# thread that is not listed, ...). Every command that reads a trace refuses
# each with one clear message ("damaged trace: ...") and exit 1 -- never a
# crash, a hang or gigabytes of memory -- and `info` lists the damage with
# what can still be read (docs/trace-format.md, "Damage").
# Usage: damaged.sh CALLSCOPE TEXT_TRACE WORK_DIR
set -u -f  # -f: the commands below hold globs for callscope, not the shell
CS=$1 TT=$2 WORK=$3
mkdir -p "$WORK" || exit 1
cd "$WORK" || exit 1
failed=0
# A command that takes more than 4 GB of memory fails rather than swap. An
# AddressSanitizer build reserves terabytes of address space for its shadow,
# so there the sanitizer's own limits stand in for ulimit -v.
if grep -q -a __asan_init "$CS"; then
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=4096:max_allocation_size_mb=4096"
  export ASAN_OPTIONS
else
  ulimit -v 4194304 2>/dev/null
fi

# record_case NAME: the text trace on stdin becomes NAME.trace.
record_case() {
  cat > "$1.txt"
  if ! "$TT" "$1.txt" "$1.trace" 2> tt.err; then
    echo "FAILED: text_trace $1: $(cat tt.err)"; failed=1
  fi
}

recording() {  # the head of a recording: one process, its module, a thread with calls
  cat <<T
unchecked
clock monotonic
process pid=100 ppid=1 exe=/golden/app argv=app exit=0 $1
module process=${2:-0} path=/golden/app low=0x400000 high=0x402000 bias=0
thread process=${3:-0} tid=100 name=app
0 entry 1000 0x401000 sp=0x7ffff000
0 entry 1100 0x401100 sp=0x7fffefc0
0 exit 1400
0 exit 3000
T
}
profile() {  # a profile-mode trace: one snapshot of one thread
  cat <<T
unchecked
clock monotonic
mode profile
process pid=500 ppid=1 exe=/golden/svc argv=svc exit=0
module process=0 path=/golden/svc low=0x400000 high=0x410000 bias=0
thread process=0 tid=500 name=svc start=0 end=8000000
snapshot process=${1:-0} seq=1 reason=4 tick=8000000
node thread=${2:-0} fn=0x401000 calls=1 total=10 self=10 min=10 max=10 first=10 first_tick=5
T
}

recording "" 4294967295 | record_case module_ffffffff
recording "" 2147483647 | record_case module_7fffffff
recording "" 268435456 | record_case module_10000000
recording "" 0 4294967295 | record_case thread_process
recording "parent=7" | record_case parent
{ recording ""; echo "mark process=0 thread=9 tick=1200 id=1 text=x"; } | record_case mark_thread
{ recording ""; echo "mark process=268435456 tick=1200 id=1 text=x"; } | record_case mark_process
profile 268435456 | record_case snapshot_process
profile 0 5 | record_case tree_thread

# The message info gives for each, as a fixed string.
want_info() {
  case $1 in
    module_ffffffff) echo "module record 0 names process 4294967295, but the trace holds 1 process" ;;
    module_7fffffff) echo "module record 0 names process 2147483647, but the trace holds 1 process" ;;
    module_10000000) echo "module record 0 names process 268435456, but the trace holds 1 process" ;;
    thread_process) echo "thread record 0 names process 4294967295, but the trace holds 1 process" ;;
    parent) echo "process record 0 names parent process 7, but the trace holds 1 process" ;;
    mark_thread) echo "mark record 0 names thread 9, but the trace holds 1 thread" ;;
    mark_process) echo "mark record 0 names process 268435456, but the trace holds 1 process" ;;
    snapshot_process) echo "snapshot record 0 names process 268435456, but the trace holds 1 process" ;;
    tree_thread) echo "block 0 at offset 64: a call tree of thread 5, but the trace holds 1 thread" ;;
  esac
}

for t in module_ffffffff module_7fffffff module_10000000 thread_process parent mark_thread mark_process \
         snapshot_process tree_thread; do
  want=$(want_info $t)
  # Each reader: exit 1 and the one message.
  while read -r cmd; do
    # shellcheck disable=SC2086
    timeout 120 "$CS" $cmd "$t.trace" > out.txt 2> err.txt
    rc=$?
    if [ "$rc" != 1 ] || ! grep -qF "damaged trace '$t.trace': $want" err.txt; then
      echo "FAILED: callscope $cmd $t.trace -> exit $rc (want 1 and: damaged trace '$t.trace': $want), stderr:"
      head -c 2000 err.txt; echo; failed=1
    fi
  done <<CMDS
report
report --tree
report --callers *
report --stack
replay
dump
dump --stats
memory
export -f perfetto -o x.pftrace
export -f chrome -o x.json
export -f speedscope -o x.speedscope.json
export -f folded -o x.folded
export -f pprof -o x.pb.gz
flame -o x.svg
html -o x.html
query -n pid\$target:::entry{@=count()}
CMDS
  # info describes what it can, lists the damage, and exits 1.
  timeout 120 "$CS" info "$t.trace" > out.txt 2> err.txt
  rc=$?
  if [ "$rc" != 1 ] || ! grep -qF "$want" out.txt || ! grep -q "^problems:" out.txt; then
    echo "FAILED: callscope info $t.trace -> exit $rc (want 1, and the problem: $want), stdout:"
    cat out.txt; cat err.txt; failed=1
  fi
  timeout 120 "$CS" info --format json "$t.trace" > out.txt 2> err.txt
  rc=$?
  if [ "$rc" != 1 ] || ! grep -qF "$want" out.txt; then
    echo "FAILED: callscope info --format json $t.trace -> exit $rc, stdout:"; cat out.txt; cat err.txt; failed=1
  fi
done
[ $failed = 0 ] && echo "ok: every reader refuses every crafted trace"
exit $failed
