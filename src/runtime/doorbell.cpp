// The recorder's doorbell (raw_layout.h, kDoorbellName): one byte into
// the session's FIFO when the recorder has work, so that it can sleep
// otherwise. Off the hot path: a ring segment's end (every 256 KiB of
// events), a wait for the recorder, a thread's end.
//
// The descriptor is opened on the first ring and kept (O_CLOEXEC: an exec's
// new runtime opens its own; a fork child shares it, as it shares the
// session). A program may close or reuse descriptors it did not open
// (daemons close everything at start): each ring first checks that the
// descriptor is still our FIFO, so a byte never lands in a file of the
// program's; a lost descriptor is opened again.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"

namespace callscope::rt {
namespace {

// -2: not opened yet; -1: no doorbell in this session (no recorder).
int g_bell_fd = -2;
dev_t g_bell_dev = 0;
ino_t g_bell_ino = 0;

CALLSCOPE_NOINSTR bool ours(int fd) {
  struct stat st {};
  return fd >= 0 && ::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && st.st_dev == g_bell_dev &&
         st.st_ino == g_bell_ino;
}

CALLSCOPE_NOINSTR int open_bell() {
  const int fd = session_dir_open(fmt::kDoorbellName, O_RDWR | O_NONBLOCK | O_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    ::close(fd);
    return -1;
  }
  g_bell_dev = st.st_dev;
  g_bell_ino = st.st_ino;
  return fd;
}

}  // namespace

CALLSCOPE_NOINSTR void doorbell_ring() {
  const int saved_errno = errno;
  int fd = __atomic_load_n(&g_bell_fd, __ATOMIC_ACQUIRE);
  if (fd == -2 || (fd >= 0 && !ours(fd))) {
    // Two threads may open it at once: one descriptor is kept, the other
    // closed. One lost to the program is not closed (it is not ours now).
    const int opened = open_bell();
    if (__atomic_compare_exchange_n(&g_bell_fd, &fd, opened, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      fd = opened;
    } else if (opened >= 0) {
      ::close(opened);
    }
  }
  if (fd >= 0) {
    const char bell = 1;
    (void)::write(fd, &bell, 1);  // EAGAIN: the FIFO is full, the recorder has been rung enough
  }
  errno = saved_errno;
}

}  // namespace callscope::rt
