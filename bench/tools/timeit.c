/* timeit: run a command, print "WALL USER SYS" in seconds (microsecond
 * resolution) on fd 3 (or stdout if fd 3 is not open). WALL is
 * CLOCK_MONOTONIC around fork..wait4; USER and SYS are the rusage of the
 * command and of all its descendants that it waited for (uftrace's recorder,
 * callscope record's conversion included). Exits with the command's status.
 *
 *   timeit [-e VAR=VALUE]... -- COMMAND [ARGS...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double tv(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

int main(int argc, char** argv) {
  int i = 1;
  for (; i < argc; ++i) {
    if (strcmp(argv[i], "--") == 0) { ++i; break; }
    if (strcmp(argv[i], "-e") == 0 && i + 1 < argc) { putenv(argv[++i]); continue; }
    fprintf(stderr, "usage: timeit [-e VAR=VALUE]... -- COMMAND [ARGS...]\n");
    return 2;
  }
  if (i >= argc) { fprintf(stderr, "timeit: no command\n"); return 2; }
  FILE* out = fdopen(3, "w");
  if (!out) out = stdout;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return 2; }
  if (pid == 0) {
    if (out != stdout) close(3);
    execvp(argv[i], argv + i);
    fprintf(stderr, "timeit: %s: %s\n", argv[i], strerror(errno));
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
  clock_gettime(CLOCK_MONOTONIC, &t1);
  struct rusage ch;
  getrusage(RUSAGE_CHILDREN, &ch); /* includes grandchildren reaped by the child */
  double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  fprintf(out, "%.6f %.6f %.6f\n", wall, tv(ch.ru_utime), tv(ch.ru_stime));
  fflush(out);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
