// The program bench/attach/run.sh attaches to: THREADS threads (default
// 50) that each wake every millisecond and note how late they woke (the
// longest stall any of them saw), with LIBS libraries (default 100, the
// paths given on the command line) loaded. Built with
// -finstrument-functions: tick() is what an attach binds.
//   SIGUSR1: prints "stall_us=N" (the longest lateness since the last
//   SIGUSR1, over every thread, in microseconds) on stdout and starts over.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long g_max_late_ns;
static volatile long g_sink;

static long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

__attribute__((noinline)) void tick(long i) { g_sink += i; }

static void* beat(void* arg) {
  (void)arg;
  for (long i = 0;; ++i) {
    const long before = now_ns();
    struct timespec d = {0, 1000000};
    nanosleep(&d, NULL);
    const long late = now_ns() - before - 1000000;
    long seen = __atomic_load_n(&g_max_late_ns, __ATOMIC_RELAXED);
    while (late > seen && !__atomic_compare_exchange_n(&g_max_late_ns, &seen, late, 0, __ATOMIC_RELAXED,
                                                       __ATOMIC_RELAXED)) {
    }
    tick(i);
  }
  return NULL;
}

int main(int argc, char** argv) {
  const int threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 50;
  for (int i = 1; i < argc; ++i)
    if (!dlopen(argv[i], RTLD_NOW)) {
      fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
  // SIGUSR1 blocked everywhere (the threads inherit the mask), taken by
  // the main thread alone.
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, NULL);
  for (int i = 0; i < threads; ++i) {
    pthread_t t;
    pthread_create(&t, NULL, beat, NULL);
  }
  printf("ready\n");
  fflush(stdout);
  for (;;) {
    int sig = 0;
    if (sigwait(&usr1, &sig) != 0) continue;
    printf("stall_us=%ld\n", __atomic_exchange_n(&g_max_late_ns, 0, __ATOMIC_RELAXED) / 1000);
    fflush(stdout);
  }
}
