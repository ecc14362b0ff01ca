// The names threads are given while they run. A thread's file header holds
// the name read from /proc when its first hook ran, and again at its clean
// exit; a thread still running when the process ends (exit() from another
// thread, a crash, SIGKILL) would keep the name it started with. So the
// runtime wraps pthread_setname_np and prctl(PR_SET_NAME), and appends a
// kThreadName meta record (tick, the tid named, new and old name) for each
// name given to a thread that has a thread file. A thread named before its
// first hook needs none: its header reads the name when it starts.
//
// pthread_setname_np may name another thread. glibc's pthread_t is the
// address of that thread's control block, and initial-exec TLS sits at the
// same distance from it in every thread (x86-64: TLS variant II), so the
// target's ThreadState is found without a lock or a table. glibc's own
// pthread_setname_np reads the target's control block (its tid) too, so a
// handle it accepts is one we may read through; the record is written only
// if the real call succeeded. A thread in the middle of its first hook when
// another names it may keep its old name until it exits.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <dlfcn.h>
#include <unistd.h>

#include "runtime/path_buf.h"
#include "runtime/runtime.h"

namespace callscope::rt {
namespace {

using SetNameFn = int (*)(pthread_t, const char*);
using PrctlFn = int (*)(int, unsigned long, unsigned long, unsigned long, unsigned long);

CALLSCOPE_NOINSTR bool has_thread_file(const ThreadState* t) {
  const uint8_t s = __atomic_load_n(&t->status, __ATOMIC_ACQUIRE);
  return s == kActive || s == kEngine || s == kStopped;
}

// The ThreadState of `thread` (see the top of the file).
CALLSCOPE_NOINSTR ThreadState* state_of(pthread_t thread) {
  const uintptr_t self = static_cast<uintptr_t>(::pthread_self());
  const uintptr_t mine = reinterpret_cast<uintptr_t>(current_thread());
  return reinterpret_cast<ThreadState*>(static_cast<uintptr_t>(thread) + (mine - self));
}

// The name of thread `tid` from /proc ("" when it cannot be read), at most 15 bytes.
CALLSCOPE_NOINSTR void read_comm(uint32_t tid, char (&name)[16]) {
  memset(name, 0, sizeof name);
  PathBuf path;
  path.add("/proc/self/task/").add_uint(tid).add("/comm");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[32];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0')) --n;
  if (n > 15) n = 15;
  if (n > 0) memcpy(name, buf, static_cast<size_t>(n));
}

CALLSCOPE_NOINSTR void copy_name(char (&dst)[16], const char* src) {
  memset(dst, 0, sizeof dst);
  if (!src) return;
  size_t n = strnlen(src, 15);  // the kernel keeps 15 bytes of a longer name
  memcpy(dst, src, n);
}

CALLSCOPE_NOINSTR void write_name(uint32_t tid, const char (&old_name)[16], const char* name) {
  fmt::RawThreadName r{};
  r.tick = now_tick();
  r.tid = tid;
  copy_name(r.name, name);
  memcpy(r.old_name, old_name, sizeof r.old_name);
  write_meta(fmt::RawMetaType::kThreadName, &r, sizeof r, nullptr, 0, nullptr, 0);
}

}  // namespace
}  // namespace callscope::rt

using namespace callscope::rt;

CALLSCOPE_EXPORT int pthread_setname_np(pthread_t thread, const char* name) {
  static SetNameFn real = nullptr;
  if (!real) real = reinterpret_cast<SetNameFn>(::dlsym(RTLD_NEXT, "pthread_setname_np"));
  if (!real) return ENOSYS;
  const int saved_errno = errno;
  ThreadState* t = state_of(thread);
  char old_name[16] = {};
  const bool traced = has_thread_file(t);
  if (traced) read_comm(t->tid, old_name);
  const int rc = real(thread, name);
  // Checked again: the target may have exited meanwhile (its status is then kExited).
  if (rc == 0 && traced && has_thread_file(t)) write_name(t->tid, old_name, name);
  errno = saved_errno;
  return rc;
}

// glibc's prctl reads four more arguments whatever the option; so do we.
CALLSCOPE_EXPORT int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  const unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long),
                      a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
  va_end(ap);
  static PrctlFn real = nullptr;
  if (!real) real = reinterpret_cast<PrctlFn>(::dlsym(RTLD_NEXT, "prctl"));
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  if (option != PR_SET_NAME) return real(option, a2, a3, a4, a5);
  ThreadState* t = current_thread();
  char old_name[16] = {};
  const bool traced = has_thread_file(t);
  if (traced) {
    const int saved_errno = errno;
    read_comm(t->tid, old_name);
    errno = saved_errno;
  }
  const int rc = real(option, a2, a3, a4, a5);
  if (rc == 0 && traced) {
    const int saved_errno = errno;
    write_name(t->tid, old_name, reinterpret_cast<const char*>(a2));
    errno = saved_errno;
  }
  return rc;
}
