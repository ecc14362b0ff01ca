// Page faults for bench/sysevents/run.sh: touches a byte of each of 200,000
// fresh anonymous pages (800 MB, mapped and unmapped 20,000 pages at a
// time), each a minor fault taken in touch().
#include <stdlib.h>
#include <sys/mman.h>

#define PAGE 4096
#define CHUNK 20000

__attribute__((noinline)) void touch(char* p, int pages) {
  for (int i = 0; i < pages; ++i) p[(size_t)i * PAGE] = 1;
}

int main(void) {
  for (int round = 0; round < 10; ++round) {
    char* p = mmap(NULL, (size_t)CHUNK * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) abort();
    touch(p, CHUNK);
    munmap(p, (size_t)CHUNK * PAGE);
  }
  return 0;
}
