// Whether SIGTRAP reaches every thread of a program we attached to, before
// its patchable entries are touched (code.cpp).
//
// A breakpoint byte met with SIGTRAP blocked kills the process. Under
// record our wrappers keep it unblocked from the start; a program we attach
// to set its masks without them. So before its first site is touched: no
// thread may block SIGTRAP (read from /proc/self/task/*/status: else the
// sites are left alone), and the handlers installed with SIGTRAP in their
// mask get it taken out (given back at detach, if still theirs).
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/patch/patch.h"
#include "runtime/path_buf.h"
#include "runtime/runtime.h"

namespace callscope::rt {
namespace {

struct Stripped {
  int sig;
  void* handler;
};
Stripped g_stripped[64];
int g_stripped_count = 0;
int g_trap_check = 0;  // 0: not done, 1: sites may be patched, 2: not

CALLSCOPE_NOINSTR bool some_thread_blocks_trap() {
  const int dir = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return true;  // cannot tell
  static char entries[8192], status[4096];
  bool blocked = false;
  for (long n; !blocked && (n = ::syscall(SYS_getdents64, dir, entries, sizeof entries)) > 0;) {
    for (long off = 0; off < n && !blocked;) {
      const char* name = entries + off + 19;  // struct linux_dirent64: ino, off, reclen (u16), type, name
      uint16_t reclen;
      memcpy(&reclen, entries + off + 16, 2);
      off += reclen;
      if (name[0] < '0' || name[0] > '9') continue;
      PathBuf path;
      path.add("/proc/self/task/").add(name).add("/status");
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;  // ended meanwhile
      const ssize_t got = ::read(fd, status, sizeof status - 1);
      ::close(fd);
      if (got <= 0) continue;
      status[got] = '\0';
      const char* line = strstr(status, "SigBlk:");
      if (!line) continue;
      const uint64_t mask = strtoull(line + 7, nullptr, 16);
      blocked = (mask >> (SIGTRAP - 1)) & 1;
    }
  }
  ::close(dir);
  return blocked;
}

CALLSCOPE_NOINSTR void strip_trap_from_handlers() {
  for (int sig = 1; sig < 65 && g_stripped_count < 64; ++sig) {
    if (sig == SIGTRAP || sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction sa {};
    if (real_sigaction()(sig, nullptr, &sa) != 0) continue;
    if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN || !sigismember(&sa.sa_mask, SIGTRAP)) continue;
    sigdelset(&sa.sa_mask, SIGTRAP);
    if (real_sigaction()(sig, &sa, nullptr) == 0)
      g_stripped[g_stripped_count++] = Stripped{sig, reinterpret_cast<void*>(sa.sa_handler)};
  }
}

}  // namespace

void give_handlers_back() {
  for (int i = 0; i < g_stripped_count; ++i) {
    struct sigaction sa {};
    if (real_sigaction()(g_stripped[i].sig, nullptr, &sa) != 0 ||
        reinterpret_cast<void*>(sa.sa_handler) != g_stripped[i].handler || sigismember(&sa.sa_mask, SIGTRAP))
      continue;  // changed since: the program's
    sigaddset(&sa.sa_mask, SIGTRAP);
    real_sigaction()(g_stripped[i].sig, &sa, nullptr);
  }
  g_stripped_count = 0;
}

bool traps_reach_every_thread() {
  if (!g_attached) return true;
  if (g_trap_check == 0) {
    if (some_thread_blocks_trap()) {
      g_trap_check = 2;
      notice("patchable entries are not recorded: a thread of the program blocks SIGTRAP, and would die at a site "
             "being changed (under callscope record they are)");
    } else {
      g_trap_check = 1;
      strip_trap_from_handlers();
    }
  }
  return g_trap_check == 1;
}

}  // namespace callscope::rt
