// One run of a program under the recorder (recording.h).
#include "recorder/recording.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <map>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <utility>

#include "recorder/perf_rings.h"
#include "recorder/sys_stream.h"
#include "recorder/untraced_processes.h"
#include "common/config.h"
#include "common/output_claim.h"
#include "common/output_format.h"
#include "format/finalize.h"
#include "format/live_stream.h"
#include "format/resident.h"
#include "format/trace_format.h"
#include "inject/load.h"
#include "inject/remote.h"
#include "inject/sleds.h"
#include "recorder/ctl_socket.h"
#include "recorder/drainer.h"
#include "recorder/query_attach.h"
#include "recorder/record_support.h"
#include "recorder/traced_process.h"
#include "symbolize/data_pointers.h"

namespace callscope::recorder {
namespace {

namespace fmt = callscope::format;

volatile sig_atomic_t g_child = 0;

// What the GOT hooks of a run could not see: calls through pointers to
// hooked functions that its modules keep in data (symbolize/data_pointers.h),
// a line per module. Read from the modules the session lists, before it goes.
void say_data_pointers(const char* who, const std::vector<std::pair<std::string, std::string>>& env,
                       const std::string& session) {
  symbolize::GotHooks hooks;
  for (const auto& [name, value] : env) {
    if (name == "CALLSCOPE_LIBCALLS") hooks.libcalls = value == "1";
    if (name == "CALLSCOPE_PATCH_IMPORTS") config::append_globs(value, hooks.imports);
    if (name == "CALLSCOPE_PATCH_CALLERS") config::append_globs(value, hooks.callers);
  }
  if (!hooks.any()) return;
  auto raw = fmt::read_raw_session(session);
  if (!raw) return;
  std::vector<symbolize::LoadedModule> modules;
  for (const fmt::RawProcess& p : raw->processes)
    for (const fmt::RawModuleEntry& m : p.modules)
      if (!m.path.empty()) modules.push_back({m.path, m.path == p.exe});
  for (const symbolize::DataPointers& d : symbolize::data_pointers(modules, hooks))
    std::fprintf(stderr, "callscope %s: %s\n", who, terminal_safe(symbolize::describe(d)).c_str());
}

void forward_signal(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

// Runs argv with the runtime preloaded and `env` set over the variables it
// inherits: the resolved settings already weighed the user's CALLSCOPE_*
// variables against the flags and the file, so the program must see the
// result, normalized, not the originals. Returns the child's pid.
// The child waits before its exec until `before_exec` has run (the
// kernel's events are opened on it then, to start at the exec).
Result<pid_t> spawn(const std::string& program, const std::vector<std::string>& argv,
                    const std::string& runtime, const std::string& session,
                    const std::vector<std::pair<std::string, std::string>>& env,
                    const std::function<void(pid_t)>& before_exec) {
  int pipefd[2], go[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return system_error("pipe", errno);
  if (::pipe2(go, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return system_error("pipe", e);
  }
  std::string preload = runtime;
  if (const char* old = ::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {pipefd[0], pipefd[1], go[0], go[1]}) ::close(fd);
    return system_error("fork", e);
  }
  if (pid == 0) {
    ::close(pipefd[0]);
    ::close(go[1]);
    char c;
    ssize_t got;
    do got = ::read(go[0], &c, 1);  // 0 (the recorder died): go on all the same
    while (got < 0 && errno == EINTR);
    ::setenv("LD_PRELOAD", preload.c_str(), 1);
    ::setenv("CALLSCOPE_DIR", session.c_str(), 1);
    ::setenv("CALLSCOPE_RECORDER_PID", std::to_string(::getppid()).c_str(), 1);
    // The process record starts, traced whatever --follow says (follow.cpp).
    ::setenv("CALLSCOPE_ROOT_PID", std::to_string(::getpid()).c_str(), 1);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(program.c_str(), args.data());
    const int e = errno;
    ssize_t ignored = ::write(pipefd[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  ::close(pipefd[1]);
  ::close(go[0]);
  if (before_exec) before_exec(pid);
  const char c = 1;
  ssize_t put;
  do put = ::write(go[1], &c, 1);
  while (put < 0 && errno == EINTR);
  ::close(go[1]);
  int child_errno = 0;
  ssize_t n;
  do n = ::read(pipefd[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);
  if (n == sizeof child_errno) {
    ::waitpid(pid, nullptr, 0);
    return system_error("cannot execute '" + program + "'", child_errno);
  }
  return pid;
}

// callscope attach: loads the runtime into `pid` and starts it with the
// settings `record` would give the program in its environment (written to
// <session>/attach.settings, which the runtime reads). A process that
// already has a runtime of ours (an earlier attach, detached since: it
// stays loaded and inert) gets a copy of it from the session directory:
// the dynamic linker would hand back the loaded one.
Result<double> attach_runtime(pid_t pid, const std::string& runtime, const std::string& session,
                              const std::vector<std::pair<std::string, std::string>>& env) {
  std::string library = runtime;
  std::string maps_error;
  if (auto maps = inject::read_maps(pid, &maps_error); maps) {
    bool loaded = false;
    for (const inject::Mapping& m : *maps)
      loaded |= m.path.find("/libcallscope-rt") != std::string::npos;
    if (loaded) {
      library = session + "/libcallscope-rt.attach.so";
      std::ifstream in(runtime, std::ios::binary);
      std::ofstream out(library, std::ios::binary);
      out << in.rdbuf();
      out.close();
      if (!in || !out) return Error("cannot copy the runtime to '" + library + "'");
    }
  }
  const std::string settings_path = session + "/attach.settings";
  // (CALLSCOPE_TEST_INJECT_FAIL=init: a session directory the runtime
  // cannot use, for the test of that failure.)
  const char* test_failure = ::getenv("CALLSCOPE_TEST_INJECT_FAIL");
  const bool fail_init = test_failure && std::strcmp(test_failure, "init") == 0;
  std::string text = "CALLSCOPE_DIR=" + (fail_init ? std::string("/proc/callscope-test-failure") : session) +
                     "\nCALLSCOPE_RECORDER_PID=" + std::to_string(::getpid()) + "\n";
  for (const auto& [name, value] : env) text += name + "=" + value + "\n";
  // Where the control socket goes: where ctl and detach, run by us, look.
  for (const char* name : {"CALLSCOPE_CTL_DIR", "XDG_RUNTIME_DIR", "HOME"})
    if (const char* v = ::getenv(name)) text += std::string(name) + "=" + v + "\n";
  {
    std::ofstream f(settings_path, std::ios::trunc);
    f << text;
    if (!f) return Error("cannot write '" + settings_path + "'");
  }
  // gcc's patchable entries made one instruction each first (all threads
  // stopped for it), so that the runtime can patch them safely.
  const inject::SledResult sleds = inject::join_single_nop_sleds(pid);
  if (!sleds.ok) return Error("cannot attach to process " + std::to_string(pid) + ": " + sleds.error);
  if (sleds.sleds) {
    const std::string entries =
        sleds.sleds == 1 ? "1 of gcc's patchable entries made one instruction"
                         : std::to_string(sleds.sleds) + " of gcc's patchable entries made one instruction each";
    const std::string threads =
        sleds.threads == 1 ? "its one thread was" : "the " + std::to_string(sleds.threads) + " threads were";
    std::fprintf(stderr, "callscope attach: %s; %s stopped %.2f ms for it\n", entries.c_str(), threads.c_str(),
                 sleds.stopped_ms);
  }
  inject::LoadRequest req;
  req.library = library;
  req.entry = "callscope_rt_attach";
  req.arg = settings_path;
  req.thread_name = "callscope-load";
  const inject::LoadResult r = inject::load_library(pid, req);
  // Failed: gcc's sleds as they were (they would run the same, but a failed
  // attach leaves the program as it found it).
  if ((!r.ok || r.entry_result != 0) && !sleds.joined.empty()) (void)inject::part_sleds(pid, sleds.joined);
  if (!r.ok && r.error.find("static TLS") != std::string::npos)
    return Error("cannot attach to process " + std::to_string(pid) + ": " + r.error +
                 " (each attach leaves a copy of the runtime loaded, and glibc's space for the thread-local "
                 "storage of libraries loaded late is used up: restart the program to attach to it again)");
  // The program ended after the runtime had started in it (its process
  // record is in the session) before we read the loader's word: attached,
  // and what it recorded is kept; the recording ends at once.
  if (!r.ok && r.ended && ::access((session + "/" + std::to_string(pid) + ".0/meta").c_str(), F_OK) == 0)
    return r.stopped_ms;
  if (!r.ok) return Error("cannot attach to process " + std::to_string(pid) + ": " + r.error);
  switch (r.entry_result) {
    case 0: return r.stopped_ms;
    case 1: return Error("the runtime in process " + std::to_string(pid) + " could not read '" + settings_path + "'");
    case 2: return Error("process " + std::to_string(pid) + " is being traced by callscope already");
    case 4:
      return Error("the runtime in process " + std::to_string(pid) +
                   " could not serve its control socket, through which it is detached (its own message went to "
                   "the program's stderr; CALLSCOPE_CTL_DIR names another directory): the attach was undone");
    default:
      return Error("the runtime could not start in process " + std::to_string(pid) + ": it could not use '" + session +
                   "' (its own message went to the program's stderr)");
  }
}

fmt::RawChildStatus status_of(pid_t pid, int status, bool is_main) {
  fmt::RawChildStatus cs{};
  cs.pid = static_cast<uint32_t>(pid);
  cs.is_main = is_main;
  if (WIFEXITED(status)) {
    cs.how = static_cast<uint32_t>(fmt::ExitHow::kExited);
    cs.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    cs.how = static_cast<uint32_t>(fmt::ExitHow::kSignaled);
    cs.signal = WTERMSIG(status);
    cs.core_dumped = WCOREDUMP(status) ? 1 : 0;
  }
  cs.mono_ns = fmt::sample_clocks().mono_ns;
  return cs;
}

// --rss-interval: each live process of the session ("<pid>.<n>", the
// highest n of a pid is its running image) gets a resident-set sample.
void sample_resident(const std::string& session) {
  std::map<long, std::pair<long, std::string>> latest;  // pid -> (n, dir name)
  if (DIR* d = ::opendir(session.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end != '.') continue;
      const long n = std::strtol(end + 1, &end, 10);
      if (*end != '\0') continue;
      auto& l = latest[pid];
      if (l.second.empty() || n > l.first) l = {n, e->d_name};
    }
    ::closedir(d);
  }
  for (const auto& [pid, l] : latest)
    if (::kill(static_cast<pid_t>(pid), 0) == 0)
      fmt::append_resident_sample(session + "/" + l.second, static_cast<int>(pid), fmt::ResidentReason::kInterval,
                                  fmt::sample_clocks().mono_ns);
}

}  // namespace

struct Recording::State {
  std::unique_ptr<OutputClaim> claim;
  std::optional<SessionLog> log;
  std::unique_ptr<QueryServer> server;  // before the drainer: it outlives the thread that serves it
  std::unique_ptr<PerfRings> rings;  // until the stream takes them
  std::unique_ptr<SysStream> sys;      // before the drainer: it outlives the thread that reads it
  std::unique_ptr<Drainer> drainer;
  struct sigaction old_int {}, old_quit {}, old_term {}, old_hup {};
  bool handlers = false;
  std::chrono::steady_clock::time_point run_start, run_end;
  int doorbell = -1;  // the drainer's once it starts
  ~State() {
    if (doorbell >= 0) ::close(doorbell);
  }
  void restore() {
    if (!handlers) return;
    handlers = false;
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::sigaction(SIGHUP, &old_hup, nullptr);
  }
};

Result<std::unique_ptr<Recording>> Recording::start(const RecordOptions& o, const char* who, fmt::LiveTap* tap,
                                                    double ticks_per_ns) {
  if (o.command.empty() && !o.attach_pid) return Error("no program given: callscope record [-o FILE] -- PROGRAM [ARGS...]");
  for (const auto& [name, value] : o.runtime_env)
    if (name == "CALLSCOPE_MODE" && value == "profile" && o.sample_hz)
      return Error("--sample needs --mode record: a profile-mode trace keeps the call trees, not the events a "
                   "sample is put among");
  std::unique_ptr<Recording> r(new Recording());
  r->o_ = o;
  r->who_ = who;
  r->s_ = std::make_unique<State>();
  State& s = *r->s_;
  std::string program;
  std::vector<std::string> argv = o.command;
  if (o.attach_pid) {
    // The program as the process runs it, for what it was built with and
    // for the trace's command line.
    program = "/proc/" + std::to_string(o.attach_pid) + "/exe";
    char real[PATH_MAX];
    const ssize_t n = ::readlink(program.c_str(), real, sizeof real - 1);
    if (n > 0) program.assign(real, static_cast<size_t>(n));
    argv = nul_separated(read_proc(o.attach_pid, "cmdline"));
    if (argv.empty()) argv = {program};
  } else {
    CALLSCOPE_TRY(program, find_program(o.command.front()));
  }
  if (!o.scratch_output) {
    CALLSCOPE_TRY(s.claim, OutputClaim::take(o.output, o.force));
  }
  CALLSCOPE_TRY(std::string runtime, find_runtime());
  std::vector<std::string> preload = {runtime};
  if (o.memory) {
    // Beside the runtime, and before it: its allocator wrappers call the runtime.
    const std::string mem = runtime.substr(0, runtime.rfind('/') + 1) + "libcallscope-mem.so";
    if (::access(mem.c_str(), R_OK) != 0)
      return system_error("--memory needs " + mem + " (beside the runtime)", errno);
    preload = {mem, runtime};
    // The runtime's engine (profile mode, filters) writes no memory events yet.
    for (const auto& [name, value] : o.runtime_env) {
      if (name == "CALLSCOPE_MODE" && value != "record")
        return Error("--memory records every allocation among every call: it works with --mode record only");
      const bool filter = name == "CALLSCOPE_INCLUDE" || name == "CALLSCOPE_EXCLUDE" ||
                          name == "CALLSCOPE_INCLUDE_MODULES" || name == "CALLSCOPE_EXCLUDE_MODULES" ||
                          name == "CALLSCOPE_MAX_DEPTH" || name == "CALLSCOPE_MIN_DURATION" || name == "CALLSCOPE_CHRONO";
      if (filter && !value.empty() && value != "0")
        return Error("--memory does not work with filters yet (" + name +
                     " is set): memory events are written with every call, unfiltered");
    }
  }
  // --memory's call paths: the hooks', or unwound at each allocation. auto
  // is decided by each process for its own executable (mem_unwind.cpp): a
  // script's interpreter, a program exec'd later.
  const std::string unwind = o.memory ? o.unwind : "off";
  const bool hooked = instrumentation_of(program) != Instrumentation::kNone;
  // GOT hooks (patch/got.cpp): bound at load, every slot (LD_BIND_NOW), so
  // that no lazy binding writes a slot over our stub.
  std::string got_hooks;
  for (const auto& [name, value] : o.runtime_env) {
    if (name == "CALLSCOPE_LIBCALLS" && value == "1") got_hooks += std::string(got_hooks.empty() ? "" : ", ") + "--libcalls";
    if (name == "CALLSCOPE_PATCH_IMPORTS" && !value.empty())
      got_hooks += std::string(got_hooks.empty() ? "" : ", ") + "--patch-imports " + value;
    if (name == "CALLSCOPE_PATCH_CALLERS" && !value.empty())
      got_hooks += std::string(got_hooks.empty() ? "" : ", ") + "--patch-callers " + value;
  }
  // What will be recorded: say it when it is more than the usual hooks.
  std::string sources = instrumentation_sources(program);
  if (!got_hooks.empty()) sources += (sources.empty() ? "" : ", ") + std::string("library calls through the GOT (") + got_hooks + ")";
  if (!sources.empty() && sources != "-finstrument-functions hooks")
    std::fprintf(stderr, "callscope %s: sources: %s\n", who, sources.c_str());
  if (o.attach_pid && !hooked && got_hooks.empty() && !o.sample_hz) {
    return Error("process " + std::to_string(o.attach_pid) + " runs '" + program +
                 "', which has no -finstrument-functions hooks (nor -pg or patchable entries): nothing to record; "
                 "--libcalls records its calls into libraries, --sample HZ where it runs");
  } else if (!hooked && !got_hooks.empty() && unwind == "off") {
    // The library calls are what is recorded: nothing to warn about.
  } else if (!hooked && unwind == "off" && o.sample_hz) {
    std::fprintf(stderr,
                 "callscope %s: '%s' has no -finstrument-functions hooks (nor -pg or patchable entries): its CPU "
                 "samples say where it runs, each under its call path unwound from the stack (--libcalls records "
                 "its calls into libraries)\n",
                 who, program.c_str());
  } else if (!hooked && unwind == "off")
    std::fprintf(stderr,
                 "callscope %s: warning: '%s' has no -finstrument-functions hooks (nor -pg or patchable "
                 "entries); running it anyway (only instrumented libraries it loads will be recorded; "
                 "--libcalls records its calls into libraries)\n",
                 who, program.c_str());
  else if (!hooked)
    std::fprintf(stderr,
                 "callscope %s: '%s' has no -finstrument-functions hooks: each allocation's call path "
                 "comes from unwinding the stack (%s); the trace's calls are those paths, not counted calls "
                 "(the hooks of instrumented libraries it loads are ignored: --unwind off keeps them)\n",
                 who, program.c_str(), unwind == "fp" ? "frame pointers" : "DWARF CFI");
  else if (hooked && o.memory && (unwind == "dwarf" || unwind == "fp"))
    std::fprintf(stderr,
                 "callscope %s: --unwind %s: each allocation's call path comes from unwinding the stack, and "
                 "the -finstrument-functions hooks are ignored\n",
                 who, unwind.c_str());
  else if (hooked && o.memory && unwind == "auto" && instrumentation_of(program) == Instrumentation::kUnknown)
    std::fprintf(stderr,
                 "callscope %s: '%s' is not an ELF executable: each program it runs has its allocations' "
                 "paths from its hooks, or unwound when it has none\n",
                 who, program.c_str());
  const std::string name_for = o.scratch_output ? std::string("query") : o.output;
  CALLSCOPE_TRY(r->session_, make_session_dir(o.raw_dir.empty() ? default_raw_dir(name_for) : o.raw_dir, name_for));
  const std::string& session = r->session_;
  if (o.scratch_output) {
    r->o_.output = session + "/live.trace";
    CALLSCOPE_TRY(s.claim, OutputClaim::take(r->o_.output, true));
  }
  s.log.emplace(session);
  if (auto st = s.log->open(); !st) {
    remove_tree(session);
    return st.error();
  }
  s.log->write_recorder_info(argv);
  s.log->write_calibration();
  // The doorbell the runtime rings when there is work (drainer.h), before
  // the program can look for it. Without it (a file system without FIFOs)
  // the drainer polls.
  int doorbell = -1;
  if (::mkfifo((session + "/" + fmt::kDoorbellName).c_str(), 0600) == 0)
    doorbell = ::open((session + "/" + fmt::kDoorbellName).c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  s.doorbell = doorbell;

  // The trace is written while the program runs (format/live_stream.h). Its
  // ticks count from now, in the clock the runtime will use: the TSC where
  // it is invariant, unless CALLSCOPE_CLOCK=monotonic says otherwise.
  std::vector<std::pair<std::string, std::string>> env = o.runtime_env;
  const char* clock_env = ::getenv("CALLSCOPE_CLOCK");
  const bool monotonic = (clock_env && std::strcmp(clock_env, "monotonic") == 0) || !fmt::tsc_is_invariant();
  env.emplace_back("CALLSCOPE_CLOCK", monotonic ? "monotonic" : "tsc");
  if (o.drop_when_behind) env.emplace_back("CALLSCOPE_DROP_WHEN_BEHIND", "1");
  // The memory API (callscope_alloc, callscope_tag_push) records then only.
  env.emplace_back("CALLSCOPE_MEMORY", o.memory ? "1" : "0");
  env.emplace_back("CALLSCOPE_UNWIND", unwind);
  if (!got_hooks.empty() && !o.attach_pid) env.emplace_back("LD_BIND_NOW", "1");
  const fmt::ClockPair origin = fmt::sample_clocks();
  auto live = fmt::LiveStream::create(session, r->o_.output, monotonic ? fmt::ClockKind::kMonotonic : fmt::ClockKind::kTsc,
                                      monotonic ? origin.mono_ns : origin.tsc, o.level, s.log->fd(), s.claim.get());
  if (!live) {
    remove_tree(session);
    return live.error().context("cannot start the trace");
  }
  r->live_ = std::move(*live);
  if (tap) r->live_->set_tap(tap, monotonic ? 1.0 : ticks_per_ns, o.scratch_output);

  // Descendants whose parent dies are handed to us, so we learn how they end.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction ignore {}, fwd {};
  ignore.sa_handler = SIG_IGN;
  fwd.sa_handler = forward_signal;
  ::sigaction(SIGINT, &ignore, &s.old_int);
  ::sigaction(SIGQUIT, &ignore, &s.old_quit);
  ::sigaction(SIGTERM, &fwd, &s.old_term);
  ::sigaction(SIGHUP, &fwd, &s.old_hup);
  s.handlers = true;
  // The child must start with default dispositions for the signals we ignore.
  ::sigaction(SIGINT, &s.old_int, nullptr);
  ::sigaction(SIGQUIT, &s.old_quit, nullptr);
  // The kernel's events of the program (context switches, ...): from its
  // exec on, or (attached) from now on in each of its threads; where the
  // kernel refuses, a warning says why and the fix.
  const auto open_rings = [&](pid_t pid, const std::vector<pid_t>& threads) {
    if (!o.sys_events && !o.sys_syscalls && !o.sys_faults && !o.sys_io && !o.sample_hz) return;
    PerfRings::Options po;
    po.enable_on_exec = !o.attach_pid;
    po.threads = threads;
    po.switches = po.sched_detail = o.sys_events;
    po.syscalls = o.sys_syscalls;
    po.faults = o.sys_faults;
    po.io = o.sys_io;
    po.sample_hz = o.sample_hz;
    po.sample_stacks = o.sample_hz != 0;
    // Room for a burst between rounds: two records per system call; with
    // the sched tracepoints (root or CAP_PERFMON, whose rings the locked-
    // memory limit does not bound) three or four per switch.
    if (o.sys_syscalls || o.sys_faults || o.sample_hz) po.ring_bytes = 8 << 20;
    else if (::geteuid() == 0) po.ring_bytes = 1 << 20;
    auto rings = PerfRings::open(pid, po);
    if (!rings) {
      print_warning(who, "the kernel's events are not recorded: " + rings.error().message());
      return;
    }
    s.rings = std::move(*rings);
    for (const std::string& why : s.rings->refused())
      print_warning(who, "not recorded: " + why);
  };
  Result<pid_t> child = o.attach_pid;
  if (o.attach_pid) {
    // (before the runtime: by the time attach says it records, so do they;
    // a descriptor per thread, CPU and event: the hard limit, as the
    // drainer takes it -- the program is not ours to pass limits to)
    if (struct rlimit lim {}; ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
      lim.rlim_cur = lim.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &lim);
    }
    open_rings(o.attach_pid, inject::threads_of(o.attach_pid));
    auto stopped = attach_runtime(o.attach_pid, runtime, session, env);
    if (stopped) r->attach_stopped_ms_ = *stopped;
    else child = stopped.error();
  } else {
    auto value = preload_value(preload, session, r->preload_dir_);
    if (value)
      child = spawn(program, o.command, *value, session, env, [&](pid_t pid) { open_rings(pid, {}); });
    else child = value.error();
  }
  ::sigaction(SIGINT, &ignore, nullptr);
  ::sigaction(SIGQUIT, &ignore, nullptr);
  if (!child) {
    s.restore();
    ::unlink(r->live_->writer().temporary_path().c_str());
    remove_tree(session);
    return child.error();
  }
  r->child_ = *child;
  if (!o.attach_pid) g_child = *child;  // attached: the program's signals are its own
  // record: a query may attach (query -p); query -c has its own tap.
  if (!tap) {
    bool events = true;
    for (const auto& [name, value] : o.runtime_env)
      if (name == "CALLSCOPE_MODE") events = value == "record";
    s.server = QueryServer::open(session, *r->live_, events);
  }
  if (s.rings) s.sys = std::make_unique<SysStream>(std::move(s.rings), r->live_->writer());
  if (s.sys && tap && o.tap_kernel_events) s.sys->set_tap(tap, o.scratch_output);
  s.drainer = std::make_unique<Drainer>(*r->live_, s.server.get(), std::exchange(s.doorbell, -1), s.sys.get());
  if (o.memory && o.rss_interval_ns)
    s.drainer->every(std::chrono::nanoseconds(o.rss_interval_ns), [session] { sample_resident(session); });
  s.run_start = std::chrono::steady_clock::now();
  return r;
}

uint32_t Recording::kernel_events() const {
  const SysStream* sys = s_->sys.get();
  if (!sys) return 0;
  uint32_t flags = fmt::kInfoEventGroups;
  if (!o_.sys_events) flags |= fmt::kInfoNoSwitches;
  if (sys->rings().has_syscalls()) flags |= fmt::kInfoSyscalls;
  if (sys->rings().has_faults()) flags |= fmt::kInfoFaults;
  if (sys->rings().has_io()) flags |= fmt::kInfoIo;
  return flags;
}

bool Recording::samples() const { return s_->sys && s_->sys->rings().has_samples(); }

void Recording::drain_here() {
  s_->drainer->stop();
  drain_here_ = true;
}

void Recording::pump() {
  if (drain_here_ && s_->drainer) s_->drainer->poll();
}

Recording::~Recording() {
  if (s_) {
    s_->drainer.reset();
    s_->server.reset();  // while the stream it taps lives
    s_->restore();
  }
  if (remove_later_) remove_tree(session_);
  if (!preload_dir_.empty()) remove_tree(preload_dir_);
  if (g_child == child_) g_child = 0;
}

bool Recording::reap(bool block) {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, block ? 0 : WNOHANG);
    if (pid == 0) return true;  // some left, none ended
    if (pid < 0) {
      if (errno == EINTR) {
        if (block) continue;
        return true;
      }
      // ECHILD: nobody left.
      if (g_child == child_) g_child = 0;
      s_->run_end = std::chrono::steady_clock::now();
      return false;
    }
    const bool is_main = pid == child_;
    if (is_main) {
      main_status_ = status;
      main_reaped_ = true;
    }
    reaped_.push_back(pid);
    remove_stale_socket(pid);
    s_->log->write_child_status(status_of(pid, status, is_main));
    if (block) return true;
  }
}

std::vector<pid_t> Recording::running() const {
  std::vector<pid_t> out;
  if (auto raw = fmt::read_raw_session(session_); raw) {
    for (const fmt::RawProcess& p : raw->processes) {
      const auto pid = static_cast<pid_t>(p.pid);
      if (std::find(reaped_.begin(), reaped_.end(), pid) == reaped_.end() &&
          std::find(out.begin(), out.end(), pid) == out.end() && ::kill(pid, 0) == 0)
        out.push_back(pid);
    }
  }
  return out;
}

int Recording::finish(bool quiet) {
  State& s = *s_;
  if (s.run_end == std::chrono::steady_clock::time_point{}) s.run_end = std::chrono::steady_clock::now();
  // From here on a signal finishes the trace, or (a second one) stops us
  // with the session and the unfinished trace left for `finish`.
  const std::string unfinished = live_->writer().temporary_path();
  std::optional<WritingSignals> writing;
  if (!o_.scratch_output) writing.emplace(session_, o_.output, unfinished, s.claim.get(), who_, main_reaped_);
  s.drainer->stop();
  // The stream failed while the program ran (a full disk): its threads
  // dropped their events from then on, which no finish brings back.
  if (!s.drainer->failure().empty())
    print_warning(who_, s.drainer->failure() + "; the program's threads dropped their events from then on");
  s.drainer.reset();
  if (s.sys) {
    if (auto st = s.sys->poll(true); !st) print_warning(who_, st.error().message());
    if (const uint64_t lost = s.sys->lost())
      print_warning(who_, std::to_string(lost) + " of the kernel's record" + (lost == 1 ? " was" : "s were") +
                              " dropped by it (its rings were full: the recorder did not keep up): waits and system "
                              "calls near them are uncertain");
  }
  live_->tap_rest();
  s.server.reset();  // an attached query has had the last events: it sees the end
  if (o_.scratch_output) {
    // Nothing to keep: the session goes, and the trace in it. The one
    // thing the trace's summary would have said that matters here.
    if (const auto c = live_->writer_counts(); c.waits && !quiet)
      std::fprintf(stderr, "callscope %s: the program waited %.3f s in all for the query to keep up (%llu time%s)\n",
                   who_, static_cast<double>(c.wait_ns) / 1e9, static_cast<unsigned long long>(c.waits),
                   c.waits == 1 ? "" : "s");
    s.restore();
    remove_session();
    return 0;
  }
  s.log->write_calibration();
  s.log->close();

  fmt::FinalizeOptions fo;
  fo.zstd_level = o_.level;
  fo.claim = s.claim.get();
  fo.info_flags |= kernel_events();
  if (s.sys) fo.block_devices = s.sys->block_devices();
  auto sum = fmt::finalize_session(session_, o_.output, fo, live_.get());
  if (!sum) {
    std::fprintf(stderr, "callscope %s: %s\n", who_, sum.error().context("cannot write the trace").message().c_str());
    if (s.claim->conflict()) {
      // The trace is complete, under its temporary name (the error says where).
      remove_session();
    } else if (const uint64_t dropped = live_->writer_counts().lost; dropped) {
      // Say what happened: the events dropped are gone; what was recorded
      // before is kept.
      std::fprintf(stderr,
                   "callscope %s: %llu event%s %s dropped by the program's threads after the trace could not be "
                   "written (the events before are kept: the raw events in '%s', the unfinished trace in '%s'); "
                   "'callscope finish %s -o %s' makes a trace of them, the dropped ones marked as lost, once there "
                   "is space\n",
                   who_, static_cast<unsigned long long>(dropped), dropped == 1 ? "" : "s", dropped == 1 ? "was" : "were",
                   session_.c_str(), unfinished.c_str(), session_.c_str(), o_.output.c_str());
    } else {
      std::fprintf(stderr,
                   "callscope %s: nothing is lost: the raw events are kept in '%s' and the unfinished trace "
                   "in '%s'; retry with 'callscope finish %s -o %s'\n",
                   who_, session_.c_str(), unfinished.c_str(), session_.c_str(), o_.output.c_str());
    }
    return 1;
  }
  // The trace is complete: until we exit, the run's dispositions again
  // (SIGINT and SIGQUIT ignored, SIGTERM and SIGHUP for a program that has
  // ended: nothing).
  writing.reset();
  if (!quiet) {
    print_summary(who_, *sum, o_.output);
    say_untraced_processes(who_, session_, follow_setting(o_.runtime_env));
    say_data_pointers(who_, o_.runtime_env, session_);
    if (s.sys) {
      std::string what;
      if (o_.sys_events)
        what = std::to_string(s.sys->switches()) + " context switch" + (s.sys->switches() == 1 ? "" : "es") +
               (s.sys->rings().has_sched_detail() ? " with sleep states and wakers" : "");
      if (s.sys->rings().has_syscalls())
        what += (what.empty() ? "" : ", ") + std::to_string(s.sys->syscalls()) + " system call" +
                (s.sys->syscalls() == 1 ? "" : "s");
      if (s.sys->rings().has_faults())
        what += (what.empty() ? "" : ", ") + std::to_string(s.sys->faults()) + " page fault" +
                (s.sys->faults() == 1 ? "" : "s");
      if (s.sys->rings().has_io())
        what += (what.empty() ? "" : ", ") + std::to_string(s.sys->io_requests()) + " block I/O request" +
                (s.sys->io_requests() == 1 ? "" : "s");
      if (s.sys->rings().has_samples()) {
        char every[64];
        std::snprintf(every, sizeof every, " (one per %.3f ms of CPU)",
                      static_cast<double>(s.sys->rings().sample_period_ns()) / 1e6);
        what += (what.empty() ? "" : ", ") + std::to_string(s.sys->samples()) + " CPU sample" +
                (s.sys->samples() == 1 ? "" : "s") + every;
      }
      std::string paths;
      if (s.sys->rings().has_sample_stacks() && s.sys->samples()) {
        paths = ", the samples' call paths unwound from the stack";
        if (s.sys->samples_cut())
          paths += " (" + std::to_string(s.sys->samples_cut()) + " cut short: deeper than the " +
                   std::to_string(SampleUnwinder::kStackBytes / 1024) + " KiB copied, or code without unwinding rules)";
      }
      std::fprintf(stderr, "callscope %s: the kernel's events: %s of the program's threads%s%s\n", who_, what.c_str(),
                   paths.c_str(),
                   o_.sys_events ? " ('callscope info' gives each thread's time running, runnable and blocked)" : "");
    }
    const auto written = std::chrono::steady_clock::now();
    // Our own CPU (the program is a child: not counted), while it ran and since.
    struct rusage ru {};
    ::getrusage(RUSAGE_SELF, &ru);
    const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                       static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    std::string per_call;
    if (sum->calls && !sum->profile)
      per_call = " (" + std::to_string(std::llround(cpu * 1e9 / static_cast<double>(sum->calls))) + " ns per call)";
    std::fprintf(stderr,
                 "callscope %s: the program %s %.3f s; the trace took %.3f s to write; the recorder used %.2f s of "
                 "CPU%s\n",
                 who_, main_reaped_ && !o_.attach_pid ? "ran" : "was traced for",
                 std::chrono::duration<double>(s.run_end - s.run_start).count(),
                 std::chrono::duration<double>(written - s.run_end).count(), cpu, per_call.c_str());
  }
  remove_session();
  s.restore();
  return 0;
}

void Recording::remove_session() {
  if (o_.keep_raw) return;
  if (o_.keep_session_until_destroyed) remove_later_ = true;
  else remove_tree(session_);
}

int Recording::exit_like_program() const {
  if (WIFSIGNALED(main_status_)) {
    const int sig = WTERMSIG(main_status_);
    struct rlimit no_core {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
    return 128 + sig;
  }
  return WIFEXITED(main_status_) ? WEXITSTATUS(main_status_) : 1;
}

}  // namespace callscope::recorder
