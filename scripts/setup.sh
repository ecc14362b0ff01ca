#!/usr/bin/env bash
# Quick start, step 1: install what this Debian machine lacks, build callscope,
# then record the bundled example and show what the trace holds.
#   scripts/setup.sh            (as root, or with sudo available)
# Set CALLSCOPE_SKIP_APT=1 to skip the package step.
set -euo pipefail
cd "$(dirname "$0")/.."

# libclang-rt-14-dev: clang's sanitizer and libFuzzer runtimes (only
# recommended by clang, so not installed with --no-install-recommends);
# the fuzz test of scripts/test.sh links libFuzzer from it. protoc decodes
# the Perfetto and pprof exports in the tests; chromium, its driver and
# selenium open the HTML report and flame graphs in the browser tests. The
# cross compilers build the Cortex-M and AArch64 fixtures of `callscope stack`.
# nginx-light: a real forking server for `record --memory` (docs/memory.md,
# "Processes": its workers free what the master allocated).
packages=(build-essential cmake ninja-build pkg-config ccache gcc g++ clang libclang-rt-14-dev
  libdw-dev libelf-dev libunwind-dev libcapstone-dev libzstd-dev libcli11-dev nlohmann-json3-dev
  libtomlplusplus-dev libgtest-dev libgmock-dev libbenchmark-dev elfutils binutils
  procps python3 zlib1g-dev
  protobuf-compiler chromium chromium-driver python3-selenium
  gcc-arm-none-eabi gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  nginx-light linux-perf strace)
# node and npm install speedscope (below) for the browser tests that open
# the exports in it; a node from elsewhere (nodesource, nvm) will do.
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

if [ "${CALLSCOPE_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# speedscope, the version pinned by tests/browser/speedscope/package-lock.json
# (its built app is served to Chromium by tests/browser/speedscope_check.py):
# installed when missing or not the version pinned.
speedscope=tests/browser/speedscope
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  pinned=$(node -p "require('./$speedscope/package.json').dependencies.speedscope")
  installed=$(node -p "require('./$speedscope/node_modules/speedscope/package.json').version" 2>/dev/null || true)
  if [ "$installed" != "$pinned" ]; then
    echo "setup: installing speedscope $pinned in $speedscope (npm ci)"
    (cd "$speedscope" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
  fi
else
  echo "setup: no node or npm (CALLSCOPE_SKIP_APT?): the speedscope browser tests will fail until" \
    "'npm ci' runs in $speedscope"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target callscope callscope-rt

echo "setup: recording the bundled example (examples/demo.c)"
mkdir -p build/examples
gcc -O2 -g -finstrument-functions -pthread examples/demo.c -o build/examples/demo
build/bin/callscope record --force -o build/examples/demo.trace -- build/examples/demo
build/bin/callscope info build/examples/demo.trace
build/bin/callscope report build/examples/demo.trace
build/bin/callscope report --tree --depth 3 build/examples/demo.trace
build/bin/callscope html -o build/examples/demo.html build/examples/demo.trace
build/bin/callscope flame -o build/examples/demo.svg build/examples/demo.trace
echo
echo "setup: done. callscope is build/bin/callscope; try: build/bin/callscope --help"
echo "setup: open build/examples/demo.html (every view) or build/examples/demo.svg (a flame graph) in a browser"
