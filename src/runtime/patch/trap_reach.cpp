// Whether SIGTRAP reaches every thread of a program we attached to, before
// its patchable entries are touched (code.cpp).
//
// A breakpoint byte met with SIGTRAP blocked kills the process. Under
// record our wrappers keep it unblocked from the start; a program we attach
// to set its masks without them. So before its first site is touched: no
// thread may block SIGTRAP (read from /proc/self/task/*/status: else the
// sites are left alone; not counting ours, nor a thread that holds it only
// for a moment, some_thread_blocks_trap), and the handlers installed with
// SIGTRAP in their mask get it taken out (given back at detach, if still
// theirs).
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
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

// The thread found blocking SIGTRAP, for the notice: "tid N (NAME)".
PathBuf g_blocker;
// How many times a thread found blocking SIGTRAP is looked at again, 1 ms
// apart, before it is taken to block it for good.
constexpr int kLooks = 500;

// Whether thread `tid` (its /proc/self/task name) blocks SIGTRAP now: 1 it
// does (its name in `thread_name`), 0 not, -1 it has ended.
CALLSCOPE_NOINSTR int thread_blocks_trap(const char* tid, char (&thread_name)[17]) {
  static char status[4096];  // one check at a time (code.cpp's lock)
  PathBuf path;
  path.add("/proc/self/task/").add(tid).add("/status");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t got = ::read(fd, status, sizeof status - 1);
  ::close(fd);
  if (got <= 0) return -1;
  status[got] = '\0';
  const char* line = strstr(status, "SigBlk:");
  if (!line) return 0;
  const uint64_t mask = strtoull(line + 7, nullptr, 16);
  if (!((mask >> (SIGTRAP - 1)) & 1)) return 0;
  const char* n = strstr(status, "Name:\t");
  for (int i = 0; n && i < 16 && n[6 + i] && n[6 + i] != '\n'; ++i) thread_name[i] = n[6 + i];
  return 1;
}

// Every thread but the one asking (ours: the loader of attach, which runs
// none of the program's code). A thread seen blocking SIGTRAP may hold it
// only for a moment, not to be taken for its mask: glibc blocks every signal
// in a thread's last moments (an earlier attach's control thread ends just
// after its detach; any thread of the program that ends) and around the
// clone of pthread_create, in the new thread until it takes its creator's
// mask. So it is looked at again, kLooks times, before it counts.
CALLSCOPE_NOINSTR bool some_thread_blocks_trap() {
  const int dir = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return true;  // cannot tell
  PathBuf self;
  self.add_uint(static_cast<uint64_t>(::syscall(SYS_gettid)));
  static char entries[8192];
  bool blocked = false;
  for (long n; !blocked && (n = ::syscall(SYS_getdents64, dir, entries, sizeof entries)) > 0;) {
    for (long off = 0; off < n && !blocked;) {
      const char* name = entries + off + 19;  // struct linux_dirent64: ino, off, reclen (u16), type, name
      uint16_t reclen;
      memcpy(&reclen, entries + off + 16, 2);
      off += reclen;
      if (name[0] < '0' || name[0] > '9' || strcmp(name, self.c_str()) == 0) continue;
      char thread_name[17] = {};
      for (int look = 0; !blocked && thread_blocks_trap(name, thread_name) == 1; ++look) {
        if (look == kLooks) {
          blocked = true;
          g_blocker.clear();
          g_blocker.add("tid ").add(name).add(" (").add(thread_name).add(")");
          break;
        }
        timespec ms{0, 1'000'000};
        ::nanosleep(&ms, nullptr);
      }
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
      notice("patchable entries are not recorded: a thread of the program blocks SIGTRAP (", g_blocker.c_str(),
             "), and would die at a site being changed (under callscope record they are)");
    } else {
      g_trap_check = 1;
      strip_trap_from_handlers();
    }
  }
  return g_trap_check == 1;
}

}  // namespace callscope::rt
