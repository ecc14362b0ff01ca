// A CPU-bound program of fixed work for bench/sysevents/sample_cost.py:
// copy() memcpys a 64 KiB buffer 40,000 times, crunch() runs 400 million
// steps of arithmetic: about a second of CPU, whatever samples it.
#include <string.h>

static char src[65536], dst[65536];
static volatile unsigned long sink;

__attribute__((noinline)) void copy(int n) {
  for (int i = 0; i < n; ++i) {
    memcpy(dst, src, sizeof dst);
    src[i & 1023] = dst[(i + 1) & 1023];
  }
}

__attribute__((noinline)) void crunch(long n) {
  unsigned long x = 1;
  for (long i = 0; i < n; ++i) x = x * 6364136223846793005ul + 1442695040888963407ul;
  sink = x;
}

int main(void) {
  copy(40000);
  crunch(400000000L);
  return 0;
}
