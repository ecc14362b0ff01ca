// Block I/O for bench/sysevents/run.sh: 10,000 O_DIRECT writes of 4 KiB and
// 10,000 reads of them back (20,000 block requests of the thread's own) in
// a file of the directory given.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kBlock = 4096, kBlocks = 10000 };

__attribute__((noinline)) void put(int fd, void* buf, int i) {
  if (pwrite(fd, buf, kBlock, (off_t)i * kBlock) != kBlock) exit(4);
}

__attribute__((noinline)) void get(int fd, void* buf, int i) {
  if (pread(fd, buf, kBlock, (off_t)i * kBlock) != kBlock) exit(5);
}

int main(int argc, char** argv) {
  char path[4096];
  snprintf(path, sizeof path, "%s/directio.%d", argc > 1 ? argv[1] : ".", getpid());
  void* buf;
  if (posix_memalign(&buf, kBlock, kBlock)) return 2;
  memset(buf, 'x', kBlock);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
  if (fd < 0) {
    perror("open O_DIRECT");
    return 3;
  }
  if (fallocate(fd, 0, 0, (off_t)kBlocks * kBlock) != 0) return 6;  // no allocation on the way
  fsync(fd);
  for (int i = 0; i < kBlocks; ++i) put(fd, buf, i);
  for (int i = 0; i < kBlocks; ++i) get(fd, buf, i);
  close(fd);
  unlink(path);
  free(buf);
  return 0;
}
