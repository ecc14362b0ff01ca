#!/usr/bin/env bash
# Quick start, step 2: build everything and run every test.
#   scripts/test.sh
# 1. the full suite (unit, golden, end-to-end) in build/;
# 2. the unit and golden tests again under AddressSanitizer and
#    UndefinedBehaviorSanitizer in build-asan/ (the runtime itself is never
#    sanitized: it is preloaded into programs that are not).
# 3. the trace reader's libFuzzer target, built with clang in build-fuzz/,
#    for a fixed number of runs (ctest label fuzz, under a minute).
# Set CALLSCOPE_NO_ASAN=1 to skip step 2, CALLSCOPE_NO_FUZZ=1 to skip step 3.
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2
ctest --test-dir build -j2 --output-on-failure

if [ "${CALLSCOPE_NO_ASAN:-0}" != 1 ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCALLSCOPE_SANITIZE=ON -DCALLSCOPE_E2E=OFF >/dev/null
  cmake --build build-asan -j2
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan -j2 -L 'unit|golden' --output-on-failure
fi

if [ "${CALLSCOPE_NO_FUZZ:-0}" != 1 ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCALLSCOPE_FUZZ=ON -DCALLSCOPE_TESTS=OFF >/dev/null
  cmake --build build-fuzz -j2 --target trace_reader_fuzz
  ctest --test-dir build-fuzz -L fuzz --output-on-failure
fi
