#!/bin/sh
# The patchable entries' fast entry (src/runtime/patch/stub_fast.cpp) runs
# with only the general registers saved: its machine code must call nothing,
# jump nowhere outside itself and name no vector register. Reads it from the
# built runtime with objdump. The check is first run on the full entry,
# which calls the hooks: it must be refused there (the check can fail).
#   stub_fast_code_test.sh OBJDUMP LIBCALLSCOPE-RT.SO
set -eu
objdump=$1
lib=$2

# Prints what breaks the rule in function $1, nothing when it holds.
violations() {
  "$objdump" -d --no-show-raw-insn "$lib" | awk -v fn="$1" '
    $0 ~ "^[0-9a-f]+ <" fn ">:$" { inside = 1; next }
    inside && /^$/ { exit }
    inside {
      if ($0 ~ /\tcall/ || $0 ~ /%[xyz]?mm[0-9]/ || $0 ~ /%st/ || $0 ~ /\tjmp +\*/) { print; next }
      if ($0 ~ /\tj[a-z]+ +[0-9a-f]+ </ && $0 !~ ("<" fn "(\\+0x[0-9a-f]+)?>")) print
      seen = 1
    }
    END { if (!seen) print "function " fn " not found" }'
}

bad=$(violations callscope_rt_stub_enter)
if [ -z "$bad" ]; then
  echo "FAIL: the check finds nothing in callscope_rt_stub_enter, which calls the hooks" >&2
  exit 1
fi
bad=$(violations callscope_rt_stub_enter_fast)
if [ -n "$bad" ]; then
  echo "FAIL: callscope_rt_stub_enter_fast calls out, jumps out or uses a vector register:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "ok: callscope_rt_stub_enter_fast calls nothing and uses no vector register"
