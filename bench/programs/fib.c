/* Recursive Fibonacci: the call-heavy microbenchmark of bench/run.sh.
 *
 * fib(n) makes 2*F(n+1) - 1 calls of fib (F(1) = F(2) = 1), plus one call of
 * main: n = 32 -> 7,049,155 + 1, n = 33 -> 11,405,773 + 1,
 * n = 34 -> 18,454,929 + 1.
 *
 * The empty asm keeps the sum opaque: without it, GCC -O2 turns one of the
 * two recursive calls into a loop (tail recursion with an accumulator) in
 * the plain build but cannot in the -finstrument-functions build (the exit
 * hook follows the call), so the baseline would do half the calls. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long fib(int n) {
  if (n < 2) return n;
  long r = fib(n - 1) + fib(n - 2);
  __asm__ volatile("" : "+r"(r));
  return r;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 30;
  printf("fib(%d) = %ld\n", n, fib(n));
  return 0;
}
