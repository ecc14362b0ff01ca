// N malloc/free pairs of 16..271 bytes, each in its own call of pair():
// bench/memory/run.sh measures what recording every allocation costs.
#include <stdio.h>
#include <stdlib.h>

void* volatile sink;

__attribute__((noinline)) void pair(size_t n) {
  void* p = malloc(n);
  sink = p;
  free(p);
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000000;
  for (long i = 0; i < n; ++i) pair(16 + (size_t)(i & 255));
  printf("%ld\n", n);
  return 0;
}
