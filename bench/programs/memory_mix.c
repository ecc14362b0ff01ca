// The benchmark program of issue 12 (bench/memory/compare.sh): N mallocs
// (default 2,000,000), each freed again, of 16 B to 264 KiB from three call
// paths; a 44 MB burst allocated and freed again; 1,001 blocks never freed.
// Deterministic: the same sizes in the same order on every run.
//   small():  16..271 B, freed at once                      (path main > small)
//   medium(): 1..16 KiB, kept in a ring of 64, freed on reuse (main > medium > place)
//   large():  64..264 KiB, kept in a ring of 8, freed on reuse (main > large > place)
//   burst():  44 blocks of 1,000,000 B, then all freed      (main > burst)
//   leak():   1,001 blocks of 64..1063 B, never freed       (main > leak)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void* volatile sink;
static unsigned long long state = 0x9e3779b97f4a7c15ull;

static unsigned long next(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (unsigned long)state;
}

__attribute__((noinline)) void touch(void* p) {
  sink = p;
  if (p) *(volatile char*)p = 1;
}

__attribute__((noinline)) void small(void) {
  void* p = malloc(16 + next() % 256);
  touch(p);
  free(p);
}

__attribute__((noinline)) void place(void** ring, unsigned slots, unsigned long i, size_t size) {
  void** slot = &ring[i % slots];
  free(*slot);
  *slot = malloc(size);
  touch(*slot);
}

static void* g_medium[64];
static void* g_large[8];

__attribute__((noinline)) void medium(unsigned long i) { place(g_medium, 64, i, 1024 + next() % (15 * 1024 + 1)); }

__attribute__((noinline)) void large(unsigned long i) {
  place(g_large, 8, i, 64 * 1024 + next() % (200 * 1024 + 1));
}

__attribute__((noinline)) void burst(void) {
  void* blocks[44];
  for (int i = 0; i < 44; ++i) {
    blocks[i] = malloc(1000000);
    memset(blocks[i], 1, 4096);
  }
  for (int i = 0; i < 44; ++i) free(blocks[i]);
}

__attribute__((noinline)) void leak(void) {
  for (int i = 0; i < 1001; ++i) touch(malloc(64 + next() % 1000));
}

int main(int argc, char** argv) {
  const unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000;
  leak();
  for (unsigned long i = 0; i < n; ++i) {
    // 90% small, 9% medium, 1% large
    const unsigned long r = next() % 100;
    if (r < 90) small();
    else if (r < 99) medium(i);
    else large(i);
    if (i == n / 2) burst();
  }
  for (int i = 0; i < 64; ++i) free(g_medium[i]);
  for (int i = 0; i < 8; ++i) free(g_large[i]);
  printf("%lu\n", n);
  return 0;
}
