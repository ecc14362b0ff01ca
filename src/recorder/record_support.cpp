#include "recorder/record_support.h"

#include "common/output_format.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "format/raw_session.h"
#include "symbolize/elf_symbols.h"
#include "views/format_util.h"

namespace callscope::recorder {

namespace fmt = callscope::format;

namespace {

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return dir_of(buf);
}

}  // namespace

Result<std::string> find_program(const std::string& name) {
  auto usable = [](const std::string& p) -> int {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return ENOENT;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    return ::access(p.c_str(), X_OK) == 0 ? 0 : EACCES;
  };
  if (name.find('/') != std::string::npos) {
    const int e = usable(name);
    if (e == ENOENT) return Error("program '" + name + "' not found");
    if (e) return system_error("cannot run '" + name + "'", e);
    return name;
  }
  const char* path = ::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string d = dirs.substr(start, end - start);
    if (d.empty()) d = ".";
    const std::string cand = d + "/" + name;
    if (usable(cand) == 0) return cand;
    start = end + 1;
  }
  return Error("program '" + name + "' not found in PATH");
}

namespace {

// What an ELF file says of __cyg_profile_func_enter: its symbol tables are
// walked once; `elf` false when the file is not ELF (a script, a text file).
struct HookSymbol {
  bool elf = false;
  bool shared_object = false;  // ET_DYN
  bool referenced = false;     // named in a symbol table (called, or defined)
  bool defined = false;        // defined here (the runtime), not just called
  // The other sources of entries (patch/libcall.cpp, patch/code.cpp).
  bool mcount = false;             // -pg: mcount or _mcount referenced
  bool fentry = false;             // -pg -mfentry: __fentry__
  uint64_t patchable = 0;          // entries in __patchable_function_entries
  uint64_t nop_mcount = 0;         // entries in __mcount_loc (-mnop-mcount -mrecord-mcount)
};

HookSymbol hook_symbol(const std::string& path) {
  HookSymbol h;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return h;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  GElf_Ehdr eh;
  if (elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &eh)) {
    h.elf = true;
    h.shared_object = eh.e_type == ET_DYN;
    for (Elf64_Word type : {SHT_DYNSYM, SHT_SYMTAB}) {
      symbolize::for_each_elf_symbol(elf, type, [&](const GElf_Sym& sym, const char* name) {
        if (name && std::strcmp(name, "__cyg_profile_func_enter") == 0) {
          h.referenced = true;
          h.defined = h.defined || sym.st_shndx != SHN_UNDEF;
        }
        if (name && (std::strcmp(name, "mcount") == 0 || std::strcmp(name, "_mcount") == 0) &&
            sym.st_shndx == SHN_UNDEF)
          h.mcount = true;
        if (name && std::strcmp(name, "__fentry__") == 0 && sym.st_shndx == SHN_UNDEF) h.fentry = true;
        return !h.defined;
      });
      if (h.defined) break;
    }
    size_t names = 0;
    if (elf_getshdrstrndx(elf, &names) == 0) {
      for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        const char* name = elf_strptr(elf, names, sh.sh_name);
        if (!name) continue;
        if (std::strcmp(name, "__patchable_function_entries") == 0) h.patchable += sh.sh_size / 8;
        if (std::strcmp(name, "__mcount_loc") == 0) h.nop_mcount += sh.sh_size / 8;
      }
    }
  }
  if (elf) elf_end(elf);
  ::close(fd);
  return h;
}

// "" when `path` can be preloaded as callscope's runtime, else what it is.
// Without this check the dynamic loader ignores a bad preload with a line
// on stderr, and the run looks like one of an uninstrumented program.
std::string runtime_problem(const std::string& path) {
  const HookSymbol h = hook_symbol(path);
  if (!h.elf) return "is not an ELF shared library";
  if (!h.shared_object) return "is an ELF file but not a shared library";
  if (!h.defined) return "is not callscope's runtime (it defines no __cyg_profile_func_enter)";
  return "";
}

}  // namespace

Result<std::string> find_runtime() {
  if (const char* env = ::getenv("CALLSCOPE_RUNTIME"); env && *env) {
    if (::access(env, R_OK) != 0) return system_error("CALLSCOPE_RUNTIME='" + std::string(env) + "'", errno);
    char real[PATH_MAX];
    std::string path = ::realpath(env, real) ? real : env;
    if (const std::string why = runtime_problem(path); !why.empty())
      return Error("CALLSCOPE_RUNTIME='" + std::string(env) + "' " + why +
                   ": point it at libcallscope-rt.so, or unset it to use the runtime next to callscope");
    return path;
  }
  const std::string dir = self_dir();
  for (const std::string& cand : {dir + "/../lib/libcallscope-rt.so", dir + "/libcallscope-rt.so",
                                 dir + "/../lib/callscope/libcallscope-rt.so"}) {
    char real[PATH_MAX];
    if (::access(cand.c_str(), R_OK) != 0 || !::realpath(cand.c_str(), real)) continue;
    if (const std::string why = runtime_problem(real); !why.empty())
      return Error("the runtime '" + std::string(real) + "' " + why +
                   " (a broken installation?); rebuild callscope, or set CALLSCOPE_RUNTIME to libcallscope-rt.so");
    return std::string(real);
  }
  return Error("cannot find the runtime libcallscope-rt.so next to callscope (" + dir +
               "/../lib); set CALLSCOPE_RUNTIME to its path");
}

Instrumentation instrumentation_of(const std::string& path) {
  const HookSymbol h = hook_symbol(path);
  if (!h.elf) return Instrumentation::kUnknown;
  return h.referenced || h.mcount || h.fentry || h.patchable || h.nop_mcount ? Instrumentation::kCygProfile
                                                                             : Instrumentation::kNone;
}

std::string instrumentation_sources(const std::string& path) {
  const HookSymbol h = hook_symbol(path);
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (h.referenced) add("-finstrument-functions hooks");
  if (h.fentry) add("-pg -mfentry (__fentry__)");
  if (h.mcount) add("-pg (mcount)");
  if (h.nop_mcount) add("-mnop-mcount entries (" + std::to_string(h.nop_mcount) + ", patched at start)");
  if (h.patchable)
    add("patchable entries (" + std::to_string(h.patchable) +
        ", patched into calls while tracing is on; those of fewer than 5 bytes are not recorded)");
  return out;
}

std::string default_raw_dir(const std::string& output) {
  // tmpfs: the events stay in memory that outlives the program, and thread
  // files cost no disk I/O (a thread-heavy program runs about twice as fast).
  struct stat st {};
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK | X_OK) == 0)
    return "/dev/shm";
  return dir_of(output);
}

Result<std::string> make_session_dir(const std::string& raw_dir, const std::string& output) {
  auto slash = output.rfind('/');
  std::string tmpl = raw_dir + "/callscope-" + (slash == std::string::npos ? output : output.substr(slash + 1)) + ".XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) return system_error("cannot create a session directory '" + tmpl + "'", errno);
  char real[PATH_MAX];
  if (!::realpath(buf.data(), real)) return system_error("realpath", errno);
  return std::string(real);
}

namespace {

bool preloadable(const std::string& path) { return path.find_first_of(" \t\n:") == std::string::npos; }

}  // namespace

Result<std::string> preload_value(const std::vector<std::string>& libs, const std::string& session,
                                  std::string& made_dir) {
  std::string value;
  for (const std::string& lib : libs) {
    std::string path = lib;
    if (!preloadable(path)) {
      std::string dir = session;
      if (!preloadable(dir)) {
        if (made_dir.empty()) {
          char tmpl[] = "/tmp/callscope-preload.XXXXXX";
          if (!::mkdtemp(tmpl)) return system_error("cannot create a directory in /tmp for the runtime's link", errno);
          made_dir = tmpl;
        }
        dir = made_dir;
      }
      path = dir + "/" + lib.substr(lib.rfind('/') + 1);
      if (!preloadable(path))
        return Error("cannot preload '" + lib + "': its file name holds a space or a colon, which LD_PRELOAD cannot carry");
      if (::symlink(lib.c_str(), path.c_str()) != 0 && errno != EEXIST)
        return system_error("cannot link '" + path + "' to '" + lib + "'", errno);
    }
    value += (value.empty() ? "" : ":") + path;
  }
  return value;
}

void remove_tree(const std::string& dir) {
  ::nftw(
      dir.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p) == 0 ? 0 : 0; }, 16,
      FTW_DEPTH | FTW_PHYS);
}

std::vector<SessionWriter> session_writers(const fmt::RawSession& session) {
  std::vector<SessionWriter> out;
  char real[PATH_MAX];
  if (!::realpath(session.dir.c_str(), real)) return out;
  const std::string prefix = std::string(real) + "/";
  // The processes of the session, and their parents: the recorder (or
  // whoever started the program) may be streaming it.
  std::vector<std::pair<pid_t, bool>> pids;  // (pid, a process of the session)
  for (const fmt::RawProcess& p : session.processes) {
    pids.emplace_back(static_cast<pid_t>(p.pid), true);
    if (p.has_start && p.start.ppid > 1) pids.emplace_back(static_cast<pid_t>(p.start.ppid), false);
  }
  std::sort(pids.begin(), pids.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  pid_t last = 0;
  for (const auto& [pid, own] : pids) {
    if (pid == last || pid == ::getpid()) continue;
    last = pid;
    if (::kill(pid, 0) != 0 && errno == ESRCH) continue;
    const std::string proc = "/proc/" + std::to_string(pid);
    SessionWriter w;
    w.pid = pid;
    if (FILE* f = std::fopen((proc + "/comm").c_str(), "re")) {
      char name[64] = {};
      if (std::fgets(name, sizeof name, f)) w.name = name;
      std::fclose(f);
      while (!w.name.empty() && w.name.back() == '\n') w.name.pop_back();
    }
    // A zombie holds no file; its /proc/PID/fd is root's whoever it was (a
    // program killed with its recorder waits there until a parent reaps it).
    if (FILE* f = std::fopen((proc + "/stat").c_str(), "re")) {
      char stat[512] = {};
      const size_t n = std::fread(stat, 1, sizeof stat - 1, f);
      std::fclose(f);
      const char* close = std::strrchr(stat, ')');
      if (n > 0 && close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X')) continue;
    }
    DIR* d = ::opendir((proc + "/fd").c_str());
    if (!d) {
      if (errno == ENOENT) continue;  // ended meanwhile
      if (own) {
        w.certain = false;
        out.push_back(w);
      }
      continue;
    }
    bool writes = false;
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[PATH_MAX];
      const ssize_t n = ::readlinkat(::dirfd(d), e->d_name, target, sizeof target - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      if (std::strncmp(target, prefix.c_str(), prefix.size()) == 0) {
        writes = true;
        break;
      }
    }
    ::closedir(d);
    if (writes) out.push_back(w);
  }
  return out;
}

Status SessionLog::open() {
  const std::string path = session_ + "/recorder.meta";
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) return system_error("cannot create '" + path + "'", errno);
  fmt::RawFileHeader fh{};
  std::memcpy(fh.magic, fmt::kRawMetaMagic, sizeof fh.magic);
  fh.version = fmt::kRawVersion;
  write(fmt::RawMetaType::kFileHeader, &fh, sizeof fh);
  return ok_status();
}

void SessionLog::write(fmt::RawMetaType type, const void* body, size_t size, const std::string& extra) {
  fmt::append_meta_record(fd_, type, body, size, extra);
}

void SessionLog::write_recorder_info(const std::vector<std::string>& argv) {
  char cwd[PATH_MAX];
  std::string c = ::getcwd(cwd, sizeof cwd) ? cwd : "";
  std::string cmdline;
  for (const std::string& a : argv) cmdline += a + '\0';
  fmt::RawRecorderInfo ri{};
  timespec ts{};
  if (::clock_gettime(CLOCK_REALTIME, &ts) == 0)
    ri.start_realtime_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  ri.cwd_len = static_cast<uint32_t>(c.size());
  ri.cmdline_len = static_cast<uint32_t>(cmdline.size());
  write(fmt::RawMetaType::kRecorderInfo, &ri, sizeof ri, c + cmdline);
}

void SessionLog::write_calibration() {
  const fmt::ClockPair p = fmt::sample_clocks();
  fmt::RawCalibration c{p.tsc, p.mono_ns};
  write(fmt::RawMetaType::kCalibration, &c, sizeof c);
}

void SessionLog::write_child_status(const fmt::RawChildStatus& status) {
  write(fmt::RawMetaType::kChildStatus, &status, sizeof status);
}

void SessionLog::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

// What the handler says and does: set up before it is installed, read only
// by it (async-signal-safe calls only).
std::string g_first_before, g_first_after;  // the first signal's note, around its name
std::string g_stop_note;
const OutputClaim* g_claim = nullptr;
volatile sig_atomic_t g_writing_signals = 0;
constexpr int kWritingSignals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
struct sigaction g_old_actions[4];

void say(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

void on_writing_signal(int sig) {
  const int saved_errno = errno;
  const char* name = sigabbrev_np(sig);
  const sig_atomic_t seen = g_writing_signals;
  g_writing_signals = seen + 1;
  if (seen == 0) {
    say(g_first_before.c_str());
    say(name ? name : "?");
    say(g_first_after.c_str());
    errno = saved_errno;
    return;
  }
  say(g_stop_note.c_str());
  if (g_claim) g_claim->release_from_signal();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);
}

}  // namespace

WritingSignals::WritingSignals(const std::string& session, const std::string& output, const std::string& unfinished,
                               const OutputClaim* claim, const char* who, bool program_ended) {
  g_first_before = std::string("callscope ") + who + ": SIG";
  g_first_after = std::string(" while writing the trace (") +
                  (program_ended ? "the program has ended" : "tracing has stopped") +
                  "): finishing it, a moment; send it again to stop at once (nothing is lost: 'callscope finish' "
                  "makes the trace later)\n";
  g_stop_note = std::string("callscope ") + who +
                ": stopped before the trace was complete; nothing is lost: run 'callscope finish " +
                session + " -o " + output + "' to make it (it reads the raw session " + session +
                " and the unfinished trace " + unfinished + ")\n";
  g_claim = claim;
  g_writing_signals = 0;
  struct sigaction sa {};
  sa.sa_handler = on_writing_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : kWritingSignals) sigaddset(&sa.sa_mask, s);  // one handler at a time
  for (size_t i = 0; i < std::size(kWritingSignals); ++i) ::sigaction(kWritingSignals[i], &sa, &g_old_actions[i]);
}

WritingSignals::~WritingSignals() {
  for (size_t i = 0; i < std::size(kWritingSignals); ++i) ::sigaction(kWritingSignals[i], &g_old_actions[i], nullptr);
  g_claim = nullptr;
}

int WritingSignals::received() const { return g_writing_signals; }

void print_summary(const char* command, const fmt::FinalizeSummary& sum, const std::string& output) {
  for (const std::string& w : sum.warnings) print_warning(command, w);  // paths and names from the session
  if (sum.calls == 0 && sum.untraced_threads.empty())  // else the warning below says why
    std::fprintf(stderr,
                 "callscope %s: no instrumented function was called: compile the program with "
                 "-finstrument-functions, -pg, or -fpatchable-function-entry=5, or record its library calls "
                 "with --libcalls (the trace holds no calls)\n",
                 command);
  // A trace may mix hooked processes with processes unwound at allocations.
  std::fprintf(stderr, "callscope %s: %s -> %s (%llu bytes", command,
               views::calls_summary(sum.calls, sum.unwound_calls, sum.threads, sum.processes, sum.unwound_processes).c_str(),
               output.c_str(), static_cast<unsigned long long>(sum.file_bytes));
  // Bytes per call say what recording every call costs; a profile-mode
  // trace holds call trees, whose size does not follow the calls.
  if (sum.profile)
    std::fprintf(stderr, ", %u snapshot%s", sum.snapshots, sum.snapshots == 1 ? "" : "s");
  else if (sum.calls && !sum.unwound)
    std::fprintf(stderr, ", %.2f bytes/call", static_cast<double>(sum.file_bytes) / static_cast<double>(sum.calls));
  std::fprintf(stderr, ")\n");
  if (sum.lost)
    std::fprintf(stderr,
                 "callscope %s: warning: %llu %s lost (dropped by the program's threads: no space for them, a "
                 "recorder that died or could not write the trace, or --drop-when-behind); the trace marks where\n",
                 command, static_cast<unsigned long long>(sum.lost), sum.lost == 1 ? "event was" : "events were");
  if (!sum.untraced_threads.empty()) {
    std::string which;
    for (size_t i = 0; i < sum.untraced_threads.size() && i < 3; ++i) {
      const auto& u = sum.untraced_threads[i];
      which += (i ? ", " : "") + std::string("'") + terminal_safe(u.name) + "' (pid " + std::to_string(u.pid) +
               ", tid " + std::to_string(u.tid) + "): " + views::describe_errno(u.error);
    }
    if (sum.untraced_threads.size() > 3) which += ", ...";
    const size_t n = sum.untraced_threads.size();
    std::fprintf(stderr,
                 "callscope %s: warning: %zu thread%s ran without being recorded (no event file could be made "
                 "for %s: %s); 'callscope info' lists %s\n",
                 command, n, n == 1 ? "" : "s", n == 1 ? "it" : "them", which.c_str(), n == 1 ? "it" : "them");
  }
  if (sum.waits)
    std::fprintf(stderr,
                 "callscope %s: the program waited %.3f s in all for the recorder to keep up (%llu time%s); the "
                 "trace marks each wait, and the reports take that time out of the calls it happened in "
                 "('[waited for recorder]')\n",
                 command, static_cast<double>(sum.wait_ns) / 1e9, static_cast<unsigned long long>(sum.waits),
                 sum.waits == 1 ? "" : "s");
  if (sum.torn)
    std::fprintf(stderr, "callscope %s: %llu event%s half-written when a process died were left out\n", command,
                 static_cast<unsigned long long>(sum.torn), sum.torn == 1 ? "" : "s");
}

}  // namespace callscope::recorder
