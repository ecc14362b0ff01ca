// Process lifecycle of the runtime: the session directory, the metadata file
// (process start, module map, exit), fork and exit handlers, the dlopen /
// dlclose wrappers that keep the module map current, and the _exit / _Exit
// wrappers (a process that ends that way runs no on_exit handler).
//
// Initialization runs once per process image, from our constructor or from
// the first hook, whichever comes first (an instrumented library's
// constructor may run before ours). It may allocate nothing: the program's
// malloc could be instrumented or interposed.
#include <cpuid.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "format/ctl_dir.h"
#include "runtime/control.h"
#include "runtime/module_bounds.h"
#include "runtime/patch/patch.h"
#include "runtime/path_buf.h"
#include "runtime/runtime.h"

namespace callscope::rt {

bool g_use_tsc = false;
int g_recorder_pid = 0;
bool g_drop_when_behind = false;
uint64_t g_base_tick = 0;
unsigned long g_thread_key = 0;

namespace {

// kNotStarted also while dormant (follow.cpp: a process with nothing to
// record, set up at its first hook if one comes); kFailed also for a
// process --follow leaves out, and a fork child made inert.
enum InitState : int { kNotStarted = 0, kInProgress = 1, kReady = 2, kFailed = 3 };
int g_init_state = kNotStarted;
// The constructor's decision (follow_decision), made once per image.
bool g_decided = false;
FollowDecision g_decision = FollowDecision::kTrace;

// The session directory and this process's directory in it: their paths
// (for messages, and to find them again), descriptors and identities. Files
// are made relative to the descriptors, never by path: after the checks of
// open_session_dir, nobody else can redirect them.
struct KnownDir {
  PathBuf path;
  int fd = -1;
  dev_t dev = 0;
  ino_t ino = 0;
};
KnownDir g_session;
KnownDir g_process;
int g_meta_fd = -1;
// The meta file's reserve (write_meta): bytes appended so far, and the end
// of the space allocated for it; 0 reserved: none could be made (a file
// system without fallocate), records are then written at our risk.
uint64_t g_meta_bytes = 0;
uint64_t g_meta_reserved = 0;
constexpr uint64_t kMetaReserveBytes = 64 << 10;
uint32_t g_incarnation = 0;
int g_meta_pid = 0;  // the process g_meta_fd describes (a vfork child shares our memory, not our record)
using ExitFn = void (*)(int);
ExitFn g_real_exit = nullptr;  // _exit of the next object (libc), resolved at initialization
bool g_default_dir = false;  // no CALLSCOPE_DIR: the program runs without `callscope record`

// Modules already written to meta. Fixed size: no allocation.
struct KnownModule {
  uint64_t load_bias;
  uint64_t low;
  bool seen;  // found by the current scan
};
constexpr int kMaxModules = 4096;
KnownModule g_modules[kMaxModules];
int g_module_count = 0;
pthread_mutex_t g_module_lock = PTHREAD_MUTEX_INITIALIZER;

CALLSCOPE_NOINSTR uint64_t round8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

CALLSCOPE_NOINSTR size_t read_small_file(const char* path, char* buf, size_t cap) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t n = 0;
  while (n < cap) {
    ssize_t r = ::read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += static_cast<size_t>(r);
  }
  ::close(fd);
  return n;
}

// ---- module map ------------------------------------------------------------

struct ModuleScan {
  uint64_t tick;
};

CALLSCOPE_NOINSTR void find_build_id(const dl_phdr_info* info, fmt::RawModule* m) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const uint8_t* name = p + sizeof(ElfW(Nhdr));
      const uint8_t* desc = name + ((nh->n_namesz + 3) & ~3u);
      const uint8_t* next = desc + ((nh->n_descsz + 3) & ~3u);
      if (next > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        uint32_t len = nh->n_descsz > sizeof m->build_id ? sizeof m->build_id : nh->n_descsz;
        memcpy(m->build_id, desc, len);
        m->build_id_len = len;
        return;
      }
      p = next;
    }
  }
}

CALLSCOPE_NOINSTR int on_module(dl_phdr_info* info, size_t, void* arg) {
  const auto* scan = static_cast<ModuleScan*>(arg);
  fmt::RawModule m{};
  m.tick = scan->tick;
  m.load_bias = info->dlpi_addr;
  const ModuleBounds bounds = module_bounds(info);
  const uint64_t low = bounds.low, high = bounds.high;
  if (high == 0) return 0;
  m.low = low;
  m.high = high;
  for (int i = 0; i < g_module_count; ++i) {
    if (g_modules[i].load_bias == m.load_bias && g_modules[i].low == low) {
      g_modules[i].seen = true;
      return 0;
    }
  }
  if (g_module_count == kMaxModules) return 0;
  g_modules[g_module_count++] = KnownModule{m.load_bias, low, true};
  find_build_id(info, &m);
  // The main program has an empty name: take /proc/self/exe.
  static char exe[4096];
  const char* path = info->dlpi_name;
  if (path == nullptr || path[0] == '\0') {
    ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    path = exe;
  }
  m.path_len = static_cast<uint32_t>(strlen(path));
  write_meta(fmt::RawMetaType::kModule, &m, sizeof m, path, m.path_len, nullptr, 0);
  return 0;
}

// Writes modules that appeared since the last scan, and unload records for
// those that disappeared. Callers hold g_module_lock.
CALLSCOPE_NOINSTR void scan_modules_locked() {
  ModuleScan scan{now_tick()};
  for (int i = 0; i < g_module_count; ++i) g_modules[i].seen = false;
  ::dl_iterate_phdr(on_module, &scan);
  int kept = 0;
  for (int i = 0; i < g_module_count; ++i) {
    if (g_modules[i].seen) {
      g_modules[kept++] = g_modules[i];
      continue;
    }
    fmt::RawModule m{};
    m.tick = scan.tick;
    m.load_bias = g_modules[i].load_bias;
    m.low = g_modules[i].low;
    m.flags = fmt::kRawModuleUnload;
    write_meta(fmt::RawMetaType::kModule, &m, sizeof m, nullptr, 0, nullptr, 0);
  }
  g_module_count = kept;
}

CALLSCOPE_NOINSTR void rescan_modules() {
  if (__atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) != kReady) return;
  const int saved_errno = errno;
  ::pthread_mutex_lock(&g_module_lock);
  scan_modules_locked();
  ::pthread_mutex_unlock(&g_module_lock);
  errno = saved_errno;
}

// ---- process directory and start record ----------------------------------

// ---- the session directory -------------------------------------------------

// Notes the identity of d.fd; false (d.fd closed) when there is none.
CALLSCOPE_NOINSTR bool remember(KnownDir& d) {
  struct stat st;
  if (d.fd >= 0 && ::fstat(d.fd, &st) == 0) {
    d.dev = st.st_dev;
    d.ino = st.st_ino;
    return true;
  }
  if (d.fd >= 0) ::close(d.fd);
  d.fd = -1;
  return false;
}

// A descriptor of `d`: its own, or, when the program has closed that one
// (daemons close every file at start) and the number may name something
// else now, a new one found again by path (*fresh: the caller closes it),
// taken only if it is the very directory we made; -1 otherwise.
CALLSCOPE_NOINSTR int known_dir_fd(const KnownDir& d, bool* fresh) {
  *fresh = false;
  struct stat st;
  if (d.fd >= 0 && ::fstat(d.fd, &st) == 0 && st.st_dev == d.dev && st.st_ino == d.ino) return d.fd;
  const int fd = ::open(d.path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  if (::fstat(fd, &st) == 0 && st.st_dev == d.dev && st.st_ino == d.ino) {
    *fresh = true;
    return fd;
  }
  ::close(fd);
  errno = ENOENT;
  return -1;
}

// Messages of the session directory's checks: with their error names
// (strerror may allocate).
char g_msg[3 * 4096];
char g_why[2 * 4096];

CALLSCOPE_NOINSTR void say(const ctldir::Text& msg) {
  ssize_t ignored = ::write(2, msg.c_str(), msg.size());
  (void)ignored;
}

// Opens `dir` (made already) as a session directory: a real directory, not
// a symbolic link, owned by our euid, with no access for others. The checks
// are made on the descriptor, so what was checked is what we use. -1 with
// the reason in `why` otherwise.
CALLSCOPE_NOINSTR int open_session_dir(const char* dir, ctldir::Text& why) {
  const int fd = ::open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    const int e = errno;
    struct stat lst;
    if (::lstat(dir, &lst) == 0 && S_ISLNK(lst.st_mode))
      why.add("it is a symbolic link");
    else if (e == ENOTDIR)
      why.add("it is not a directory");
    else
      why.add("cannot open it: ").add_error(e);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  if (st.st_uid != ::geteuid()) {
    why.add("it is owned by uid ").add_uint(st.st_uid).add(", not by us (uid ").add_uint(::geteuid()).add(")");
  } else if (st.st_mode & 077) {
    why.add("it is open to other users (mode ").add_mode(st.st_mode & 0777).add("; it must be 0700)");
  } else {
    return fd;
  }
  ::close(fd);
  return -1;
}

// Without `record`: callscope-<pid>.raw in the working directory (absolute,
// so the message at exit holds wherever the program goes). Made with mkdir,
// which never follows a symbolic link; one that exists is taken only when it
// passes open_session_dir (our own image before an exec left it), else we
// say why and make callscope-<pid>.<n>.raw instead.
CALLSCOPE_NOINSTR bool make_default_session_dir() {
  static char cwd[4096];
  const bool have_cwd = ::getcwd(cwd, sizeof cwd) != nullptr;
  ctldir::Text refused(g_why, sizeof g_why);
  for (uint32_t n = 0; n < 1000; ++n) {
    g_session.path.clear();
    if (have_cwd) g_session.path.add(cwd).add(cwd[1] ? "/" : "");
    g_session.path.add("callscope-").add_uint(static_cast<uint64_t>(::getpid()));
    if (n) g_session.path.add(".").add_uint(n);
    g_session.path.add(".raw");
    ctldir::Text msg(g_msg, sizeof g_msg);
    if (::mkdir(g_session.path.c_str(), 0700) != 0 && errno != EEXIST) {
      msg.add("callscope: not recording: cannot create ").add(g_session.path.c_str()).add(": ").add_error(errno);
      msg.add("; run the program in a directory you can write to\n");
      say(msg);
      return false;
    }
    msg.add(g_session.path.c_str()).add(": ");
    g_session.fd = open_session_dir(g_session.path.c_str(), msg);
    if (remember(g_session)) {
      if (n) {
        msg.clear();
        msg.add("callscope: not using ").add(g_why).add("; writing to ").add(g_session.path.c_str()).add(" instead\n");
        say(msg);
      }
      return true;
    }
    if (n < 3) refused.add(n ? "; " : "").add(g_msg);  // the first ones say enough
  }
  ctldir::Text msg(g_msg, sizeof g_msg);
  msg.add("callscope: not recording: no session directory of our own could be made (").add(g_why).add(")\n");
  say(msg);
  return false;
}

// With `record` (CALLSCOPE_DIR): the directory record made for us.
CALLSCOPE_NOINSTR bool open_given_session_dir(const char* dir) {
  g_session.path.add(dir);
  ::mkdir(g_session.path.c_str(), 0700);  // usually made by `record` already
  ctldir::Text why(g_why, sizeof g_why);
  g_session.fd = open_session_dir(g_session.path.c_str(), why);
  if (remember(g_session)) return true;
  ctldir::Text msg(g_msg, sizeof g_msg);
  msg.add("callscope: not recording: CALLSCOPE_DIR ").add(dir).add(": ").add(g_why).add("\n");
  say(msg);
  return false;
}

CALLSCOPE_NOINSTR bool make_process_dir(uint32_t pid) {
  if (g_process.fd >= 0) ::close(g_process.fd);  // a fork child's copy of its parent's
  g_process.fd = -1;
  bool fresh = false;
  const int session = known_dir_fd(g_session, &fresh);
  if (session < 0) return false;
  PathBuf name;
  bool made = false;
  for (uint32_t n = 0; n < 100000 && !made; ++n) {
    name.clear();
    name.add_uint(pid).add(".").add_uint(n);
    if (::mkdirat(session, name.c_str(), 0700) == 0) {
      made = true;
      g_incarnation = n;
      g_process.path.clear();
      g_process.path.add(g_session.path.c_str()).add("/").add(name.c_str());
      g_process.fd = ::openat(session, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } else if (errno != EEXIST) {
      break;
    }
  }
  if (fresh) ::close(session);
  return remember(g_process);
}

CALLSCOPE_NOINSTR bool start_process_record(uint32_t parent_n, uint32_t flags) {
  const uint32_t pid = static_cast<uint32_t>(::getpid());
  if (!make_process_dir(pid)) return false;
  g_meta_pid = static_cast<int>(pid);
  g_meta_fd = process_dir_open("meta", O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
  if (g_meta_fd < 0) return false;
  g_meta_bytes = 0;
  g_meta_reserved = 0;
  if (::fallocate(g_meta_fd, FALLOC_FL_KEEP_SIZE, 0, kMetaReserveBytes) == 0) g_meta_reserved = kMetaReserveBytes;
  fmt::RawFileHeader fh{};
  memcpy(fh.magic, fmt::kRawMetaMagic, sizeof fh.magic);
  fh.version = fmt::kRawVersion;
  write_meta(fmt::RawMetaType::kFileHeader, &fh, sizeof fh, nullptr, 0, nullptr, 0);

  static char exe[4096];
  static char cmdline[65536];
  ssize_t exe_len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (exe_len < 0) exe_len = 0;
  size_t cmd_len = read_small_file("/proc/self/cmdline", cmdline, sizeof cmdline);
  fmt::RawProcessStart ps{};
  ps.pid = pid;
  ps.ppid = static_cast<uint32_t>(::getppid());
  ps.clock = static_cast<uint32_t>(g_use_tsc ? fmt::ClockKind::kTsc : fmt::ClockKind::kMonotonic);
  ps.parent_n = parent_n;
  ps.base_tick = g_base_tick;
  ps.calib_mono_ns = mono_ns();
  ps.calib_tick = absolute_tick();
  ps.realtime_ns = realtime_ns();
  ps.exe_len = static_cast<uint32_t>(exe_len);
  ps.cmdline_len = static_cast<uint32_t>(cmd_len);
  ps.flags = flags;
  write_meta(fmt::RawMetaType::kProcessStart, &ps, sizeof ps, exe, ps.exe_len, cmdline, ps.cmdline_len);
  engine_write_mode();
  ::pthread_mutex_lock(&g_module_lock);
  g_module_count = 0;
  scan_modules_locked();
  ::pthread_mutex_unlock(&g_module_lock);
  return true;
}

CALLSCOPE_NOINSTR void write_calibration() {
  fmt::RawCalibration c{};
  c.mono_ns = mono_ns();
  c.tick = absolute_tick();
  write_meta(fmt::RawMetaType::kCalibration, &c, sizeof c, nullptr, 0, nullptr, 0);
}

// ---- handlers --------------------------------------------------------------

// What every way out of the process records: no control request is served
// any more (the socket is removed), then the exit record and a calibration
// pair, and the calling thread's end. `code` is what the parent sees (the
// low 8 bits of the status given to exit or _exit).
CALLSCOPE_NOINSTR void record_exit(int status) {
  control_stop();  // first: no request is served while the process ends
  fmt::RawProcessExit e{};
  e.tick = now_tick();
  e.how = static_cast<uint32_t>(fmt::ExitHow::kExited);
  e.code = status & 0xff;
  write_meta(fmt::RawMetaType::kProcessExit, &e, sizeof e, nullptr, 0, nullptr, 0);
  write_calibration();
  ThreadState* t = current_thread();
  control_catch_up(t);  // a start (or stop) it has made no call since
  if ((t->status == kActive || (t->status == kStopped && !g_engine)) && t->header) t->header->end_tick = e.tick;
}

}  // namespace

// The process runs on; its record ends here. The meta file stays open (a
// thread inside the runtime may still write a record; nothing reads them).
void record_detach() {
  fmt::RawProcessExit e{};
  e.tick = now_tick();
  e.how = static_cast<uint32_t>(fmt::ExitHow::kDetached);
  write_meta(fmt::RawMetaType::kProcessExit, &e, sizeof e, nullptr, 0, nullptr, 0);
  write_calibration();
}

// The meta file and the session's directories: /dev/null in their place
// (a thread inside the runtime may still use them; see thread_release_file).
void process_release_files(int devnull) {
  const int fds[3] = {g_meta_fd, g_session.fd, g_process.fd};
  for (int fd : fds)
    if (fd >= 0) replace_session_fd(fd, devnull);
  // Nothing is made by path any more either (known_dir_fd).
  g_session.path.clear();
  g_process.path.clear();
}

// Only a descriptor that still names the session or a file in it: a
// program may have closed ours and got the number back for a file of its own.
void replace_session_fd(int fd, int devnull) {
  static char target[4096];  // one detach at a time (the control thread's)
  PathBuf name;
  name.add("/proc/self/fd/").add_uint(static_cast<uint64_t>(fd));
  const ssize_t n = ::readlink(name.c_str(), target, sizeof target - 1);
  if (n <= 0 || g_session.path.size() == 0) return;
  target[n] = '\0';
  const size_t len = g_session.path.size();
  if (strncmp(target, g_session.path.c_str(), len) == 0 && (target[len] == '\0' || target[len] == '/'))
    ::dup3(devnull, fd, O_CLOEXEC);
}

namespace {

CALLSCOPE_NOINSTR void on_process_exit(int status, void*) {
  if (detached() || !process_ready()) return;  // not ready: a fork child made inert (on_fork_child)
  const int saved_errno = errno;
  record_exit(status);
  snapshot_smaps("exit");
  if (g_default_dir) {
    PathBuf msg;
    msg.add("callscope: events written to ").add(g_session.path.c_str());
    msg.add("; run 'callscope finish ").add(g_session.path.c_str()).add("' to make a trace\n");
    ssize_t ignored = ::write(2, msg.c_str(), msg.size());
    (void)ignored;
  }
  errno = saved_errno;
}

CALLSCOPE_NOINSTR void on_fork_child() {
  if (__atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) != kReady || detached()) return;
  // The runtime's own work, as in a hook: the mmap, munmap and malloc it
  // calls here are not the program's (under record --memory they would be
  // told into the parent's ring, unmapped halfway through).
  ThreadState* t = current_thread();
  const uint8_t was_in_hook = t->in_hook;
  t->in_hook = 1;
  signal_fence();
  // The lock may have been held by a thread that does not exist here.
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_module_lock = fresh;
  code_patch_after_fork();
  libcalls_after_fork();
  if (g_meta_fd >= 0) ::close(g_meta_fd);
  g_meta_fd = -1;
  if (!follow_fork_child()) {
    // Not traced (record --follow): the parent's files are not its own, and
    // nothing of it is recorded from now on.
    thread_drop_after_fork(t);
    __atomic_store_n(&g_init_state, kFailed, __ATOMIC_RELEASE);
  } else if (start_process_record(g_incarnation, fmt::kRawProcessForked)) {
    thread_reset_after_fork(t);
    dumps_prepare();  // its own snapshots file (the engine's reset forgot the parent's)
    tags_after_fork();
    control_start();  // the parent's control thread does not exist here
    snapshot_smaps("start");
  }
  signal_fence();
  t->in_hook = was_in_hook;
}

CALLSCOPE_NOINSTR bool do_init() {
  const char* clock = setting("CALLSCOPE_CLOCK");
  if (clock && strcmp(clock, "monotonic") == 0)
    g_use_tsc = false;
  else
    g_use_tsc = tsc_is_invariant();
  g_base_tick = absolute_tick();

  if (const char* rec = setting("CALLSCOPE_RECORDER_PID"); rec && setting("CALLSCOPE_DIR"))
    g_recorder_pid = ::atoi(rec);
  if (const char* drop = setting("CALLSCOPE_DROP_WHEN_BEHIND"); drop && strcmp(drop, "1") == 0)
    g_drop_when_behind = true;
  if (const char* mem = setting("CALLSCOPE_MEMORY"); mem && strcmp(mem, "1") == 0) g_memory = true;
  const char* dir = setting("CALLSCOPE_DIR");
  if (dir && dir[0]) {
    if (!open_given_session_dir(dir)) return false;
  } else {
    g_default_dir = true;
    if (!make_default_session_dir()) return false;
  }
  engine_configure();
  const bool libcalls = libcalls_configure();
  // Now, not in the wrapper: a vfork child must not resolve symbols (dlsym
  // may allocate, in memory it shares with its parent).
  g_real_exit = reinterpret_cast<ExitFn>(::dlsym(RTLD_NEXT, "_exit"));
  pthread_key_t key;
  if (::pthread_key_create(&key, thread_exit) != 0) return false;
  g_thread_key = key;
  if (!start_process_record(~0u, g_attached ? fmt::kRawProcessAttached : 0)) return false;
  dumps_prepare();
  // Attached, the program's threads run meanwhile: the ways in are opened
  // once we are ready (callscope_rt_attach), so that none of them waits
  // here for the rest of initialization.
  if (!g_attached) {
    if (libcalls) libcalls_patch_new_modules();
    code_patch_init((control_word() & 1) != 0);
  }
  ::pthread_atfork(nullptr, nullptr, on_fork_child);
  ::on_exit(on_process_exit, nullptr);
  if (!g_attached) control_start();  // attached: once the ways in are open
  snapshot_smaps("start");
  return true;
}

// `wanted`: something calls the runtime (a hook, the API, attach): a
// dormant process is set up now. From the constructor, the process's
// decision stands (follow.cpp).
CALLSCOPE_NOINSTR bool ensure_init(bool wanted) {
  int s = __atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE);
  if (CALLSCOPE_LIKELY(s == kReady)) return true;
  if (s == kNotStarted) {
    int expected = kNotStarted;
    if (__atomic_compare_exchange_n(&g_init_state, &expected, kInProgress, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      const int saved_errno = errno;
      if (!g_decided) {
        g_decision = g_attached ? FollowDecision::kTrace : follow_decision();
        g_decided = true;
        if (g_decision != FollowDecision::kTrace) note_untraced_process(false);
      }
      int next = kFailed;
      if (g_decision == FollowDecision::kLater && !wanted) {
        next = kNotStarted;  // dormant
      } else if (g_decision != FollowDecision::kNever) {
        if (g_decision == FollowDecision::kLater) note_untraced_process(true);  // traced after all
        g_decision = FollowDecision::kTrace;
        next = do_init() ? kReady : kFailed;
      }
      errno = saved_errno;
      __atomic_store_n(&g_init_state, next, __ATOMIC_RELEASE);
      return next == kReady;
    }
  }
  while ((s = __atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE)) == kInProgress) ::sched_yield();
  return s == kReady;
}

__attribute__((constructor)) CALLSCOPE_NOINSTR void runtime_constructor() {
  if (loaded_for_attach()) return;  // callscope_rt_attach initializes, with its settings
  ensure_init(false);
}

}  // namespace

// ---- shared with the rest of the runtime ----------------------------------

uint64_t mono_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t realtime_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// CPUID 0x80000007 EDX bit 8: the TSC ticks at a constant rate in every
// P-, C- and T-state, and is synchronized across cores.
bool tsc_is_invariant() {
  unsigned a, b, c, d;
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) return false;
  __cpuid(0x80000007u, a, b, c, d);
  return (d >> 8) & 1u;
}

bool process_ready() { return __atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) == kReady; }

bool process_ensure_init() { return ensure_init(true); }

void modules_changed(bool opened, bool by_our_dlopen) {
  rescan_modules();
  if (__atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) == kReady) {
    libcalls_patch_new_modules();
    code_patch_new_modules(by_our_dlopen);
    if (opened) snapshot_smaps("dlopen");
  }
}

void notice(const char* a, const char* b, const char* c, const char* d) {
  const int saved_errno = errno;
  int fd = 2;
  if (g_attached) fd = process_dir_open("notices", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) {
    const char* prefix = g_attached ? "" : "callscope: ";
    iovec iov[6] = {{const_cast<char*>(prefix), strlen(prefix)}, {const_cast<char*>(a), strlen(a)},
                    {const_cast<char*>(b), strlen(b)},           {const_cast<char*>(c), strlen(c)},
                    {const_cast<char*>(d), strlen(d)},           {const_cast<char*>("\n"), 1}};
    ssize_t ignored = ::writev(fd, iov, 6);
    (void)ignored;
    if (fd != 2) ::close(fd);
  }
  errno = saved_errno;
}

namespace {

CALLSCOPE_NOINSTR int open_in(const KnownDir& d, const char* name, int flags, unsigned mode) {
  bool fresh = false;
  const int dir = known_dir_fd(d, &fresh);
  if (dir < 0) return -1;
  const int fd = ::openat(dir, name, flags, mode);
  if (fresh) {
    const int e = errno;
    ::close(dir);
    errno = e;
  }
  return fd;
}

}  // namespace

int process_dir_open(const char* name, int flags, unsigned mode) { return open_in(g_process, name, flags, mode); }

int session_dir_open(const char* name, int flags, unsigned mode) { return open_in(g_session, name, flags, mode); }

void process_dir_unlink(const char* name) {
  const int e = errno;
  bool fresh = false;
  const int dir = known_dir_fd(g_process, &fresh);
  if (dir >= 0) {
    ::unlinkat(dir, name, 0);
    if (fresh) ::close(dir);
  }
  errno = e;
}

// One record, one write(2) on an O_APPEND descriptor: records of different
// threads never interleave.
//
// The reserve. Meta records say what the event files cannot: a thread that
// could not be traced (its file found no space), a library loaded, a name
// given, the process's exit. They must land when the raw session's file
// system is full, which is exactly when threads lose events and cannot get
// files. So the meta file keeps kMetaReserveBytes allocated past its end
// (fallocate FALLOC_FL_KEEP_SIZE: blocks, not size; readers see only the
// records), and a record that takes it below half is the moment to extend
// it by as much again. What it guarantees: once the file system is full, at
// least kMetaReserveBytes / 2 bytes of records still land (hundreds of
// thread records, dozens of module loads with their paths, the exit); the
// limit: past that, while the file system stays full, a record that does
// not fit is dropped whole -- never half-written, which would hide every
// record after it -- and on a file system without fallocate, or one already
// full when the process starts, there is no reserve at all. Counted
// without a lock (a signal handler may write the exit record while a
// thread of the process is here): each writer claims its bytes with one
// atomic add, so the sum of claims bounds the file's end.
void write_meta(fmt::RawMetaType type, const void* body, uint32_t body_size, const void* extra1,
                uint32_t extra1_size, const void* extra2, uint32_t extra2_size) {
  if (g_meta_fd < 0) return;
  static const uint8_t kZeros[8] = {0};
  const uint64_t raw = sizeof(fmt::RawMetaHeader) + body_size + extra1_size + extra2_size;
  const uint64_t size = round8(raw);
  if (__atomic_load_n(&g_meta_reserved, __ATOMIC_RELAXED) != 0) {
    const uint64_t end = __atomic_add_fetch(&g_meta_bytes, size, __ATOMIC_RELAXED);
    uint64_t reserved = __atomic_load_n(&g_meta_reserved, __ATOMIC_RELAXED);
    if (end + kMetaReserveBytes / 2 > reserved) {
      const uint64_t want = end + kMetaReserveBytes;
      if (::fallocate(g_meta_fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(reserved),
                      static_cast<off_t>(want - reserved)) == 0) {
        while (reserved < want &&
               !__atomic_compare_exchange_n(&g_meta_reserved, &reserved, want, false, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED)) {
        }
        reserved = want;
      }
      if (end > reserved) {  // no space left, not even in the reserve: drop it whole
        __atomic_sub_fetch(&g_meta_bytes, size, __ATOMIC_RELAXED);
        return;
      }
    }
  }
  fmt::RawMetaHeader h{static_cast<uint32_t>(type), static_cast<uint32_t>(size)};
  iovec iov[5] = {{&h, sizeof h},
                  {const_cast<void*>(body), body_size},
                  {const_cast<void*>(extra1), extra1_size},
                  {const_cast<void*>(extra2), extra2_size},
                  {const_cast<uint8_t*>(kZeros), static_cast<size_t>(size - raw)}};
  ssize_t ignored = ::writev(g_meta_fd, iov, 5);
  (void)ignored;
}

}  // namespace callscope::rt

// ---- exported wrappers -------------------------------------------------------

using namespace callscope::rt;

CALLSCOPE_EXPORT void* dlopen(const char* file, int mode) {
  using Fn = void* (*)(const char*, int);
  static Fn cache = nullptr;
  Fn real = next_symbol(&cache, "dlopen");
  if (!real) return nullptr;
  void* handle = real(file, mode);
  if (handle && !detached()) {
    // A dormant process (follow.cpp) whose new library has hooks: set up
    // now, before the program can call into it.
    if (__atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) == kNotStarted && g_decided && follow_dormant_dlopen())
      process_ensure_init();
    else if (process_ready())
      process_has_hooks();  // its fork children are traced if it has hooks (follow_fork_child)
    modules_changed(true, true);
  }
  return handle;
}

CALLSCOPE_EXPORT int dlclose(void* handle) {
  using Fn = int (*)(void*);
  static Fn cache = nullptr;
  Fn real = next_symbol(&cache, "dlclose");
  if (!real) return -1;
  const int rc = real(handle);
  if (rc == 0 && !detached()) modules_changed(false, true);
  return rc;
}

// _exit and _Exit (one function in glibc; a program may call either) run no
// on_exit handler: every fork child of a server that ends with _exit would
// otherwise show no exit and leave its control socket behind. exit() itself
// calls libc's _exit directly, never through here, after on_process_exit.
namespace {

[[noreturn]] CALLSCOPE_NOINSTR void end_process(int status) {
  if (__atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) == kReady && ::getpid() == g_meta_pid && !detached()) {
    record_exit(status);
    snapshot_smaps("exit");
  }
  if (g_real_exit) g_real_exit(status);
  for (;;) ::syscall(SYS_exit_group, status);
}

}  // namespace

CALLSCOPE_EXPORT void _exit(int status) { end_process(status); }
CALLSCOPE_EXPORT void _Exit(int status) { end_process(status); }
