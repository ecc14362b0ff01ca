/* rawpeak: run a command and sample the space a directory tree holds every
 * INTERVAL milliseconds while it runs; write the peak to OUT.
 *
 *   rawpeak [-i MS] [-s SERIES] -d DIR -o OUT -- COMMAND [ARGS...]
 *
 * Space is counted two ways, over every file and directory under DIR (DIR
 * itself included, symbolic links not followed):
 *   allocated: st_blocks * 512, what `du -sB1` says: the pages a sparse ring
 *              file really holds on tmpfs (a fresh ring is a hole until
 *              written);
 *   apparent:  st_size, what `du -sb` says.
 * OUT gets one line: "PEAK_ALLOCATED PEAK_APPARENT SAMPLES MAX_GAP_MS"
 * (bytes, bytes, number of samples, longest time between two samples).
 * With -s, every sample is also written to SERIES as "MS ALLOCATED APPARENT".
 * A DIR that does not exist (yet, or any more) counts as empty. The command's
 * stdin, stdout and stderr are rawpeak's; rawpeak exits with its status.
 *
 * The sampler itself (not the command) asks for nice -10 where it may: with
 * more busy threads than cores it would otherwise wake up late; it spends
 * microseconds per sample. The longest gap between samples says how well
 * that worked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long g_alloc, g_apparent;

static int add(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
  (void)path;
  (void)ftw;
  if (flag == FTW_NS) return 0; /* vanished between readdir and stat */
  g_alloc += (unsigned long long)st->st_blocks * 512ull;
  g_apparent += (unsigned long long)st->st_size;
  return 0;
}

static void sample(const char* dir) {
  g_alloc = g_apparent = 0;
  /* Files come and go while we walk (record removes the session at the end):
   * errors only mean a smaller sample. */
  nftw(dir, add, 16, FTW_PHYS);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  const char* dir = NULL;
  const char* out_path = NULL;
  const char* series_path = NULL;
  long interval_ms = 10;
  int i = 1;
  for (; i < argc; ++i) {
    if (strcmp(argv[i], "--") == 0) { ++i; break; }
    if (i + 1 < argc && strcmp(argv[i], "-d") == 0) { dir = argv[++i]; continue; }
    if (i + 1 < argc && strcmp(argv[i], "-o") == 0) { out_path = argv[++i]; continue; }
    if (i + 1 < argc && strcmp(argv[i], "-s") == 0) { series_path = argv[++i]; continue; }
    if (i + 1 < argc && strcmp(argv[i], "-i") == 0) { interval_ms = atol(argv[++i]); continue; }
    i = argc + 1;
    break;
  }
  if (i >= argc || !dir || !out_path || interval_ms <= 0) {
    fprintf(stderr, "usage: rawpeak [-i MS] [-s SERIES] -d DIR -o OUT -- COMMAND [ARGS...]\n");
    return 2;
  }
  FILE* series = NULL;
  if (series_path && !(series = fopen(series_path, "w"))) { perror(series_path); return 2; }

  double t0 = now_ms();
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return 2; }
  if (pid == 0) {
    execvp(argv[i], argv + i);
    fprintf(stderr, "rawpeak: %s: %s\n", argv[i], strerror(errno));
    _exit(127);
  }
  (void)setpriority(PRIO_PROCESS, 0, -10); /* the sampler only; failure is fine */

  unsigned long long peak_alloc = 0, peak_apparent = 0, samples = 0;
  double last = -1, max_gap = 0;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    int done = w == pid || (w < 0 && errno != EINTR);
    sample(dir);
    double t = now_ms();
    if (last >= 0 && t - last > max_gap) max_gap = t - last;
    last = t;
    ++samples;
    if (g_alloc > peak_alloc) peak_alloc = g_alloc;
    if (g_apparent > peak_apparent) peak_apparent = g_apparent;
    if (series) fprintf(series, "%.1f %llu %llu\n", t - t0, g_alloc, g_apparent);
    if (done) break;
    /* Fixed ticks: a slow sample does not shift the ones after it. */
    next.tv_nsec += interval_ms * 1000000L;
    while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; ++next.tv_sec; }
    struct timespec cur;
    clock_gettime(CLOCK_MONOTONIC, &cur);
    if (cur.tv_sec > next.tv_sec || (cur.tv_sec == next.tv_sec && cur.tv_nsec > next.tv_nsec)) next = cur;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {}
  }
  if (series) fclose(series);
  FILE* out = fopen(out_path, "w");
  if (!out) { perror(out_path); return 2; }
  fprintf(out, "%llu %llu %llu %.1f\n", peak_alloc, peak_apparent, samples, max_gap);
  fclose(out);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
