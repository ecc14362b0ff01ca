// `callscope attach` and `detach`, the runtime's side.
//
// Attach: src/inject loads a copy of this library into a running process,
// from a thread of its own named "callscope-load", with RTLD_LOCAL (its
// wrappers of dlopen, _exit, ... must not become the program's by symbol
// lookup), then calls callscope_rt_attach with the settings `record` would
// have put in the environment: the path of a file of NAME=value lines in
// the session directory. Our constructor
// sees the thread's name and leaves initialization to that call. Then:
//  - the slots of every module's GOT bound to a function the runtime
//    exports (glibc's empty __cyg_profile_func_enter/exit, mcount,
//    __fentry__, dlopen, _exit, sigaction, _Unwind_*, ...) are bound to
//    ours (got.cpp bind_exports), now and in each library loaded later;
//  - the rest is initialization as at a program's start: patchable entries
//    and -mnop-mcount nops are patched, --libcalls hooks are installed,
//    the control socket is served. Frames open at the attach are those of
//    a recording started mid-program (an exit without its entry).
//
// Detach (the control request "detach"): tracing stops in every thread
// (as `ctl stop`), the slots are given back what they held, code sites
// become nops, the --libcalls hooks are removed, and the process's record
// ends (ExitHow kDetached) before the control thread ends. The library
// stays loaded and inert: unloading it is unsafe (a thread may be inside
// it, and calls whose return address was replaced return through it). A
// later attach loads another copy.
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/control.h"
#include "runtime/engine_state.h"
#include "runtime/patch/patch.h"
#include "runtime/runtime.h"

namespace callscope::rt {

bool g_attached = false;

namespace {

// NAME=value strings, each NUL-terminated, an empty one last.
char g_settings[16 << 10];
int g_detached = 0;

}  // namespace

const char* setting(const char* name) {
  if (!g_attached) return ::getenv(name);
  const size_t n = strlen(name);
  for (const char* p = g_settings; *p; p += strlen(p) + 1)
    if (strncmp(p, name, n) == 0 && p[n] == '=') return p + n + 1;
  return nullptr;
}

bool detached() { return __atomic_load_n(&g_detached, __ATOMIC_ACQUIRE) != 0; }

bool loaded_for_attach() {
  char name[17] = {};
  return ::syscall(SYS_prctl, PR_GET_NAME, name, 0, 0, 0) == 0 && strcmp(name, "callscope-load") == 0;
}

namespace {
// Module paths, for definition_in_any_module (the names are the dynamic
// linker's, valid while the module is loaded).
const char* g_paths[1024];
int g_path_count = 0;
CALLSCOPE_NOINSTR int list_path(dl_phdr_info* info, size_t, void*) {
  if (info->dlpi_name && info->dlpi_name[0] && g_path_count < 1024) g_paths[g_path_count++] = info->dlpi_name;
  return 0;
}
}  // namespace

void* definition_in_any_module(const char* name) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  ::pthread_mutex_lock(&lock);
  g_path_count = 0;
  ::dl_iterate_phdr(list_path, nullptr);
  void* found = nullptr;
  for (int i = 0; i < g_path_count && !found; ++i) {
    if (strstr(g_paths[i], "/libcallscope-")) continue;  // ours, and earlier copies of ours
    if (void* h = ::dlopen(g_paths[i], RTLD_NOW | RTLD_NOLOAD)) {
      found = ::dlsym(h, name);
      ::dlclose(h);
    }
  }
  ::pthread_mutex_unlock(&lock);
  return found;
}

const char* op_detach() {
  if (!g_attached) return "error: not attached (the program was started under callscope)\n";
  if (__atomic_exchange_n(&g_detached, 1, __ATOMIC_ACQ_REL)) return "error: detached already\n";
  op_stop();           // every thread pauses at its next hook; patchable sites become nops
  code_patch_detach();  // and stay so, in libraries loaded from now on too
  got_detach();          // every slot bound or hooked gets back what it held
  record_detach();
  release_files_at_detach();
  return nullptr;
}

}  // namespace callscope::rt

using namespace callscope::rt;

// 0: attached; 1: the settings file cannot be read or is too long;
// 2: attached already (this copy); 3: initialization failed (the session
// directory could not be used); 4: no control socket could be served (the
// attach was undone).
CALLSCOPE_EXPORT int callscope_rt_attach(const char* settings_file) {
  if (__atomic_load_n(&g_attached, __ATOMIC_ACQUIRE)) return 2;
  static char text[sizeof g_settings];
  const int fd = ::open(settings_file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  size_t got = 0;
  for (;;) {
    const ssize_t n = ::read(fd, text + got, sizeof text - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got == sizeof text - 1) return 1;
  text[got] = '\0';
  size_t used = 0;
  for (const char* line = text; *line;) {
    const char* end = strchr(line, '\n');
    const size_t len = end ? static_cast<size_t>(end - line) : strlen(line);
    if (len > 0) {
      if (used + len + 2 > sizeof g_settings) return 1;
      memcpy(g_settings + used, line, len);
      g_settings[used + len] = '\0';
      used += len + 1;
    }
    if (!end) break;
    line = end + 1;
  }
  g_settings[used] = '\0';
  __atomic_store_n(&g_attached, true, __ATOMIC_RELEASE);
  if (!process_ensure_init()) return 3;
  // Ready: now the ways in. Our hooks and wrappers bound into the program's
  // slots first (the library-call hooks, installed in the same pass, never
  // take one of those for a library call), then the patchable entries.
  bind_exports();
  code_patch_init((control_word() & 1) != 0);
  // Last: its socket tells `ctl` and `detach` that the attach is complete.
  // Without one nobody could detach: undone at once.
  control_start();
  if (!control_serving()) {
    op_detach();
    return 4;
  }
  return 0;
}
