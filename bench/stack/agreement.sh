#!/bin/sh
# Frame sizes of `callscope stack` against gcc -fstack-usage on two real code
# bases, Lua 5.4 (C) and leveldb 1.23 (C++), fetched with `apt-get source`
# from Debian's source registry, each built six ways: -O0 and -O2, each plain,
# with -fstack-clash-protection, and with -g -fno-asynchronous-unwind-tables
# (CFI only in .debug_frame). Every build has -g: the .su lines are matched
# to functions by file and line.
# usage: agreement.sh CALLSCOPE [WORKDIR]
set -eu
callscope=$(realpath "${1:?usage: agreement.sh CALLSCOPE [WORKDIR]}")
work=${2:-/tmp/callscope-stack-agreement}
here=$(dirname "$(realpath "$0")")
mkdir -p "$work"
cd "$work"

if [ ! -d lua-5.4.4 ] || [ ! -d leveldb-1.23 ]; then
  # Debian's source registry, without touching the machine's apt settings.
  mkdir -p apt/lists/partial apt/etc
  cat > apt/etc/src.sources <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  opts="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$work/apt/etc -o Dir::State::Lists=$work/apt/lists"
  apt-get $opts update > /dev/null
  apt-get $opts source --download-only lua5.4 leveldb > /dev/null 2>&1
  tar xzf lua5.4_5.4.4.orig.tar.gz
  tar xzf leveldb_1.23.orig.tar.gz
fi

status=0
for opt in O0 O2; do
  for extra in plain clash nounwind; do
    case $extra in
      plain) flags="-$opt -g" ;;
      clash) flags="-$opt -g -fstack-clash-protection" ;;
      nounwind) flags="-$opt -g -fno-asynchronous-unwind-tables" ;;
    esac
    # Lua: the interpreter, every library file.
    d=lua-$opt-$extra
    if [ ! -x $d/lua ]; then
      rm -rf $d && mkdir -p $d
      for c in lua-5.4.4/src/*.c; do
        case $c in *luac.c) continue ;; esac
        gcc $flags -fstack-usage -DLUA_USE_LINUX -c "$c" -o "$d/$(basename "$c" .c).o" &
        [ "$(jobs -p | wc -l)" -ge 2 ] && wait -n 2>/dev/null || true
      done
      wait
      gcc $d/*.o -o $d/lua -lm -ldl
    fi
    python3 "$here/agreement.py" "$callscope" $d/lua $d || status=1
    # leveldb: the library and db_bench.
    d=leveldb-$opt-$extra
    if [ ! -x $d/db_bench ]; then
      rm -rf $d && mkdir -p $d
      for c in leveldb-1.23/db/*.cc leveldb-1.23/table/*.cc leveldb-1.23/util/*.cc \
               leveldb-1.23/helpers/memenv/memenv.cc leveldb-1.23/benchmarks/db_bench.cc; do
        case $c in *_test.cc|*_bench.cc|*env_windows.cc) [ "$(basename $c)" = db_bench.cc ] || continue ;; esac
        case $c in *leveldbutil.cc) continue ;; esac
        g++ -std=c++17 $flags -fstack-usage -DLEVELDB_PLATFORM_POSIX=1 -DLEVELDB_IS_BIG_ENDIAN=0 \
          -DHAVE_FDATASYNC=1 -Ileveldb-1.23 -Ileveldb-1.23/include \
          -c "$c" -o "$d/$(basename "$c" .cc).o" &
        [ "$(jobs -p | wc -l)" -ge 2 ] && wait -n 2>/dev/null || true
      done
      wait
      g++ $d/*.o -o $d/db_bench -pthread
    fi
    python3 "$here/agreement.py" "$callscope" $d/db_bench $d || status=1
  done
done
exit $status
