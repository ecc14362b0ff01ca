// The bundled example: four threads count primes with a few small
// functions, and the main thread sorts with a recursive quicksort.
// Build: gcc -O2 -g -finstrument-functions -pthread examples/demo.c -o demo
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int is_prime(int n) {
  if (n < 2) return 0;
  for (int d = 2; d * d <= n; ++d)
    if (n % d == 0) return 0;
  return 1;
}

static int count_primes(int from, int to) {
  int count = 0;
  for (int n = from; n < to; ++n) count += is_prime(n);
  return count;
}

struct job {
  int from, to, result;
};

static void* worker(void* arg) {
  struct job* j = arg;
  j->result = count_primes(j->from, j->to);
  return NULL;
}

static void swap(int* a, int* b) {
  int t = *a;
  *a = *b;
  *b = t;
}

static void quicksort(int* v, int lo, int hi) {
  if (lo >= hi) return;
  int pivot = v[(lo + hi) / 2], i = lo, j = hi;
  while (i <= j) {
    while (v[i] < pivot) ++i;
    while (v[j] > pivot) --j;
    if (i <= j) swap(&v[i++], &v[j--]);
  }
  quicksort(v, lo, j);
  quicksort(v, i, hi);
}

int main(void) {
  pthread_t threads[4];
  struct job jobs[4];
  for (int i = 0; i < 4; ++i) {
    jobs[i] = (struct job){i * 25000, (i + 1) * 25000, 0};
    pthread_create(&threads[i], NULL, worker, &jobs[i]);
  }
  int values[20000];
  srand(42);
  for (int i = 0; i < 20000; ++i) values[i] = rand();
  quicksort(values, 0, 19999);
  int total = 0;
  for (int i = 0; i < 4; ++i) {
    pthread_join(threads[i], NULL);
    total += jobs[i].result;
  }
  printf("%d primes below 100000; smallest value %d\n", total, values[0]);
  return 0;
}
