#!/bin/sh
# `callscope stack` on a real Linux kernel module: bench/stack/kmod/csdemo.c
# built against Debian's kernel headers (apt-get install linux-headers-amd64)
# with gcc's -fstack-usage, then the frames compared with the .su file and
# the worst cases of the module's entry points printed. The module is never
# loaded. usage: kmod.sh CALLSCOPE [HEADERS_DIR]
set -eu
callscope=$(realpath "${1:?usage: kmod.sh CALLSCOPE [HEADERS_DIR]}")
headers=${2:-$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1)}
[ -d "$headers" ] || { echo "no kernel headers: apt-get install linux-headers-amd64" >&2; exit 1; }
here=$(dirname "$(realpath "$0")")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/kmod/csdemo.c" "$tmp/"
echo 'obj-m := csdemo.o' > "$tmp/Makefile"
make -s -C "$headers" M="$tmp" KCFLAGS=-fstack-usage modules > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
echo "module: csdemo.ko built against $(basename "$headers")"
python3 "$here/agreement.py" "$callscope" "$tmp/csdemo.ko" "$tmp" || true
echo
"$callscope" stack "$tmp/csdemo.ko" --worst
echo
"$callscope" stack "$tmp/csdemo.ko" --unresolved
if [ -f /usr/lib/linux-kbuild-6.1/scripts/checkstack.pl ]; then
  echo
  echo "checkstack.pl (the kernel's own tool) on the same module:"
  objdump -d "$tmp/csdemo.ko" | perl /usr/lib/linux-kbuild-6.1/scripts/checkstack.pl x86_64 0
fi
