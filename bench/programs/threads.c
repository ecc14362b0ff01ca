/* A multi-threaded call-heavy program for bench/run.sh: THREADS threads
 * each call a tiny function CALLS times in a loop, all at once.
 *
 *   threads [CALLS [THREADS]]      (defaults: 10,000,000 calls, 4 threads)
 *
 * Calls made: THREADS * (CALLS + 1) + 1 (leaf CALLS times and worker once per
 * thread, plus main): 40,000,005 with the defaults. Used to measure the raw
 * space `callscope record` holds while several threads make calls as fast as
 * they can (bench/run.sh, configuration callscope-rawpeak).
 *
 * leaf is noinline and its result opaque (empty asm), so that the plain -O2
 * build makes the same calls as the instrumented builds. The threads wait
 * for each other at a barrier before calling, so that they run together. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long g_calls = 10000000;
static pthread_barrier_t g_start;

__attribute__((noinline)) long leaf(long x) {
  long r = x * 3 + 1;
  __asm__ volatile("" : "+r"(r));
  return r;
}

__attribute__((noinline)) void* worker(void* arg) {
  long sum = (long)(size_t)arg;
  pthread_barrier_wait(&g_start);
  for (long i = 0; i < g_calls; ++i) sum += leaf(i);
  return (void*)(size_t)sum;
}

int main(int argc, char** argv) {
  if (argc > 1) g_calls = atol(argv[1]);
  int nthreads = argc > 2 ? atoi(argv[2]) : 4;
  if (g_calls < 0 || nthreads < 1 || nthreads > 1024) {
    fprintf(stderr, "usage: threads [CALLS [THREADS]]\n");
    return 2;
  }
  pthread_t* t = malloc(sizeof(pthread_t) * (size_t)nthreads);
  if (!t) return 1;
  pthread_barrier_init(&g_start, NULL, (unsigned)nthreads);
  for (int i = 0; i < nthreads; ++i)
    if (pthread_create(&t[i], NULL, worker, (void*)(size_t)i) != 0) {
      perror("pthread_create");
      return 1;
    }
  unsigned long check = 0;
  for (int i = 0; i < nthreads; ++i) {
    void* r;
    pthread_join(t[i], &r);
    check += (unsigned long)(size_t)r;
  }
  printf("threads: %d x %ld calls, checksum %lu\n", nthreads, g_calls, check);
  free(t);
  return 0;
}
