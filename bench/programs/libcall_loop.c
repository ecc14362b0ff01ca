// bench/libcalls: N calls of a tiny function of a shared library
// (libcall_lib.c), from an executable built without any instrumentation:
// what a library-call hook adds per call is the difference to the plain run.
#include <stdio.h>
#include <stdlib.h>

int bench_add(int a, int b);

int main(int argc, char** argv) {
  const long n = argc > 1 ? atol(argv[1]) : 10000000;
  int acc = 0;
  for (long i = 0; i < n; ++i) acc = bench_add(acc, (int)i);
  printf("%d\n", acc);
  return 0;
}
