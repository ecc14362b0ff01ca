// The library of bench/programs/libcall_loop.c.
__attribute__((noinline)) int bench_add(int a, int b) { return a + b; }
