/* The functions the query tests' text traces call: built without PIE so
 * that each has a fixed address, which run_query_test.cmake puts into the
 * traces (@name@) before writing them. Never run. */
#include <stdlib.h>

#define FN(name) __attribute__((noinline, used)) void name(void)
FN(leaf) {}
FN(lex) { leaf(); }
FN(parse) { lex(); }
FN(work) { parse(); }
FN(worker) { work(); }
__attribute__((noinline, used)) long fib(long n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int main(int argc, char** argv) {
  (void)argv;
  if (argc > 5) work();
  return (int)fib(argc) & 0;
}
