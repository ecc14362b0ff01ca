#!/bin/sh
# The timeline exports of a golden case (perfetto, chrome, speedscope) read
# back by the independent reader of the end-to-end tests
# (tests/e2e/export_reader.py): each must nest exactly as its readers see it
# (Chrome's times as doubles, with no tolerance) and give the slices per
# call path of CASE.paths.expected. (A frame resynced after lost events is
# a slice of its own there, not a call as folded and pprof count them.)
#   export_paths.sh CALLSCOPE TEXT_TRACE PYTHON READER PROTO_DIR CASE WORK
set -u
callscope=$1 text_trace=$2 python=$3 reader=$4 proto=$5 case=$6 work=$7
mkdir -p "$work" || exit 1
name=$(basename "$case")
"$text_trace" "$case.txt" "$work/$name.trace" || exit 1
failed=0
for f in perfetto chrome speedscope; do
  if ! "$callscope" export -f "$f" -o "$work/$name.$f" "$work/$name.trace" 2> "$work/$name.$f.err"; then
    echo "$name: export -f $f failed:"; cat "$work/$name.$f.err"; failed=1; continue
  fi
  if ! "$python" "$reader" "$f" "$work/$name.$f" "$proto" > "$work/$name.$f.paths"; then
    echo "$name: the reader refuses the $f export"; failed=1; continue
  fi
  if ! diff -u "$case.paths.expected" "$work/$name.$f.paths"; then
    echo "$name: the call paths of the $f export differ from $case.paths.expected"; failed=1
  fi
done
exit $failed
