#include "e2e_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <tuple>

#include "symbolize/symbolizer.h"

namespace callscope::e2e {

RunResult run(const std::vector<std::string>& argv, const std::string& stdin_text,
              const std::function<void()>& in_child) {
  int out[2], err[2], in[2];
  if (::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC) || ::pipe2(in, O_CLOEXEC)) std::abort();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    if (in_child) in_child();
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  ::close(in[0]);
  if (!stdin_text.empty()) {
    ssize_t ignored = ::write(in[1], stdin_text.data(), stdin_text.size());
    (void)ignored;
  }
  ::close(in[1]);
  RunResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  return r;
}

RunResult callscope(const std::vector<std::string>& args) {
  std::vector<std::string> argv{CALLSCOPE_EXE};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

RunResult ctl(const std::string& ctl_dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"env", "CALLSCOPE_CTL_DIR=" + ctl_dir, CALLSCOPE_EXE, "ctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

std::string variant_test_name(std::string variant) {
  for (char& c : variant)
    if (c == '-') c = '_';
  return variant;
}

std::vector<std::string> variants() {
  std::vector<std::string> out;
  std::stringstream ss(FIXTURE_VARIANTS);
  std::string v;
  while (std::getline(ss, v, ',')) if (!v.empty()) out.push_back(v);
  return out;
}

std::string one_variant() {
  const auto vs = variants();
  for (const std::string& v : vs)
    if (v == "gcc-O2") return v;
  return vs.empty() ? "" : vs.front();
}

std::string fixture(const std::string& variant, const std::string& name) {
  return std::string(FIXTURE_DIR) + "/" + variant + "/" + name;
}

std::string plain_path(const std::string& path) {
  if (path.find_first_of(" \t:") == std::string::npos) return path;
  const std::string dir = "/tmp/callscope-e2e-links/" + std::to_string(std::hash<std::string>{}(path));
  const std::string link = dir + path.substr(path.rfind('/'));
  ::mkdir("/tmp/callscope-e2e-links", 0755);
  ::mkdir(dir.c_str(), 0755);
  if (::symlink(path.c_str(), link.c_str()) != 0 && errno != EEXIST) ADD_FAILURE() << "cannot link " << link;
  return link;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string plain_fixture() { return std::string(FIXTURE_DIR) + "/plain"; }

std::vector<std::string> private_tmp_shell(const std::string& script, const std::vector<std::string>& env) {
  // The build tree is kept by a descriptor opened before the new /tmp hides
  // it, and bound back at its path (through the descriptor: mount(8) is
  // told not to resolve that path, which would now lead into the new /tmp).
  static const char kPrelude[] = R"SH(
    exec 9<"$CALLSCOPE_BUILD_DIR" || { echo "SKIP: cannot open the build tree"; exit 0; }
    mount -t tmpfs tmpfs /tmp 2>/dev/null || { echo "SKIP: cannot mount a private /tmp"; exit 0; }
    case "$CALLSCOPE_BUILD_DIR" in
      /tmp/*)
        { mkdir -p "$CALLSCOPE_BUILD_DIR" &&
          mount --no-canonicalize --bind /proc/self/fd/9 "$CALLSCOPE_BUILD_DIR"; } 2>/dev/null ||
          { echo "SKIP: cannot keep the build tree in the private /tmp"; exit 0; } ;;
    esac
    exec 9<&-
  )SH";
  std::vector<std::string> argv{"env", std::string("CALLSCOPE_BUILD_DIR=") + BUILD_DIR};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.insert(argv.end(), {"unshare", "-m", "sh", "-c", kPrelude + script});
  return argv;
}

TempDir::TempDir() {
  std::string tmpl = (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) +
                     "/callscope-e2e.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) std::abort();
  path_ = buf.data();
}

TempDir::~TempDir() {
  ::nftw(
      path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p), 0; }, 16,
      FTW_DEPTH | FTW_PHYS);
}

namespace {

std::string normalize(std::string name) {
  for (const char* suffix : {".constprop", ".isra", ".part", ".cold", ".lto_priv"}) {
    auto pos = name.find(suffix);
    if (pos != std::string::npos) name.erase(pos);
  }
  return name;
}

}  // namespace

TracedProgram::TracedProgram(const std::vector<std::string>& command, const std::string& ctl_dir,
                             const std::vector<std::string>& env, const std::string& trace)
    : trace_(trace.empty() ? dir_.file("program.trace") : trace), ctl_dir_(ctl_dir) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC)) std::abort();
  const std::string err = dir_.file("stderr");
  std::vector<std::string> args{CALLSCOPE_EXE, "record", "-f", "-o", trace_, "--"};
  args.insert(args.end(), command.begin(), command.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  record_pid_ = ::fork();
  if (record_pid_ == 0) {
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err_fd, 2);
    ::setenv("CALLSCOPE_CTL_DIR", ctl_dir.c_str(), 1);
    for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
    ::execv(CALLSCOPE_EXE, argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  in_ = in[1];
  out_ = out[0];
}

TracedProgram::~TracedProgram() { finish(); }

pid_t TracedProgram::wait_for_socket() {
  for (int i = 0; i < 1000; ++i) {
    if (DIR* d = ::opendir(ctl_dir_.c_str())) {
      pid_t pid = 0;
      while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".sock") == 0)
          pid = static_cast<pid_t>(std::atol(name.c_str()));
      }
      ::closedir(d);
      if (pid > 0) return pid;
    }
    ::usleep(10000);
  }
  return 0;
}

std::string TracedProgram::command(const std::string& line) {
  const std::string text = line + "\n";
  if (::write(in_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return "";
  std::string answer;
  char c;
  pollfd p{out_, POLLIN, 0};
  while (::poll(&p, 1, 30000) > 0 && ::read(out_, &c, 1) == 1 && c != '\n') answer += c;
  return answer;
}

int TracedProgram::finish() {
  if (record_pid_ <= 0) return exit_code_;
  ::close(in_);
  int status = 0;
  ::waitpid(record_pid_, &status, 0);
  ::close(out_);
  record_pid_ = 0;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return exit_code_;
}

std::string TracedProgram::err() const {
  std::ifstream f(dir_.file("stderr"));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

uint64_t entries_streamed(const std::string& partial_trace_path) {
  auto reader = format::TraceReader::open(partial_trace_path);
  if (!reader) {
    ADD_FAILURE() << reader.error().message();
    return 0;
  }
  (*reader)->allow_unlisted_threads();
  uint64_t n = 0;
  for (uint32_t t = 0; t < (*reader)->threads().size(); ++t) {
    Status st = (*reader)->for_each_event(t, [&](const format::TraceEvent& e) {
      n += e.kind == format::EventKind::kEntry;
      return true;
    });
    EXPECT_TRUE(st.ok()) << st.error().message();
  }
  return n;
}

TraceSummary summarize(const std::string& trace_path) {
  TraceSummary s;
  auto reader = format::TraceReader::open(trace_path);
  if (!reader) {
    ADD_FAILURE() << reader.error().message();
    return s;
  }
  s.reader = std::move(*reader);
  symbolize::Symbolizer sym(*s.reader);
  // (process, address, module): the module only for an address several
  // modules held over time (named as the one loaded at the call), else -1.
  using Key = std::tuple<uint32_t, uint64_t, int64_t>;
  std::map<Key, uint64_t> by_addr;
  std::map<Key, uint64_t> tick_of;
  std::map<Key, std::map<uint32_t, uint64_t>> depth_by_addr;
  const format::ModuleMap& modules = sym.modules();
  for (uint32_t t = 0; t < s.reader->threads().size(); ++t) {
    ThreadSummary ts;
    const uint32_t proc = s.reader->threads()[t].record.process_index;
    auto st = s.reader->for_each_event(t, [&](const format::TraceEvent& e) {
      using K = format::EventKind;
      switch (e.kind) {
        case K::kEntry: {
          ++ts.entries;
          const Key key{proc, e.addr, modules.reused(proc, e.addr) ? modules.at(proc, e.addr, e.tick) : -1};
          if (by_addr[key]++ == 0) tick_of[key] = e.tick;
          ++depth_by_addr[key][e.depth];
          break;
        }
        case K::kEntryInherited: ++ts.inherited; break;
        case K::kExit: ++ts.exits; break;
        case K::kExitUnwound: ++ts.unwound; break;
        case K::kExitTruncated: ++ts.truncated; break;
        case K::kExitStray: ++ts.stray; break;
        case K::kLost: ts.lost += e.arg; ++ts.gaps; break;
        case K::kPause: ++ts.pauses; ++ts.gaps; break;
        case K::kResume: ++ts.resumes; break;
        case K::kMark:
        case K::kTag: break;
        case K::kWait:
          ++ts.waits;
          ts.wait_ticks += e.arg;
          break;
        case K::kAlloc: ++ts.allocs; break;
        case K::kFree: ++ts.frees; break;
      }
      ts.max_depth = std::max(ts.max_depth, e.depth);
      ts.final_depth = format::is_exit(e.kind) ? e.depth - 1 : format::is_entry(e.kind) ? e.depth : ts.final_depth;
      return true;
    });
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
    s.threads.push_back(ts);
  }
  for (const auto& [key, n] : by_addr) {
    const uint32_t proc = std::get<0>(key);
    const std::string name = normalize(sym.lookup(proc, std::get<1>(key), tick_of[key]).display());
    s.calls[name] += n;
    s.calls_in_process[{proc, name}] += n;
    for (const auto& [d, c] : depth_by_addr[key]) s.entry_depths[name][d] += c;
  }
  EXPECT_TRUE(s.reader->problems().empty()) << s.reader->problems().front();
  return s;
}

std::vector<std::string> call_events(const std::string& trace_path, uint32_t thread) {
  std::vector<std::string> out;
  auto reader = format::TraceReader::open(trace_path);
  if (!reader) {
    ADD_FAILURE() << reader.error().message();
    return out;
  }
  symbolize::Symbolizer sym(**reader);
  if (thread >= (*reader)->threads().size()) {
    ADD_FAILURE() << "no thread " << thread;
    return out;
  }
  const uint32_t proc = (*reader)->threads()[thread].record.process_index;
  auto st = (*reader)->for_each_event(thread, [&](const format::TraceEvent& e) {
    using K = format::EventKind;
    const char* mark = nullptr;
    switch (e.kind) {
      case K::kEntry: mark = "+"; break;
      case K::kExit: mark = "-"; break;
      case K::kExitUnwound: mark = "~"; break;
      case K::kExitTruncated: mark = "!"; break;
      case K::kExitStray: mark = "?"; break;
      default: return true;
    }
    out.push_back(mark + (e.addr ? normalize(sym.lookup(proc, e.addr).display()) : std::string()));
    return true;
  });
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
  return out;
}

std::map<std::string, long> parse_counts(const std::string& text) {
  std::map<std::string, long> out;
  std::stringstream ss(text);
  std::string word;
  while (ss >> word) {
    auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    out[word.substr(0, eq)] = std::strtol(word.c_str() + eq + 1, nullptr, 10);
  }
  return out;
}

std::map<std::string, uint64_t> pairs(const std::string& text) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(text);
  std::string name;
  uint64_t value = 0;
  while (in >> name >> value) out[name] = value;
  return out;
}

std::map<std::string, std::map<std::string, std::string>> flat_report(const std::string& trace,
                                                                       const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"report", trace, "--format", "csv"};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult r = callscope(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return csv_by(r.out, "function");
}

std::map<std::string, std::map<std::string, std::string>> csv_by(const std::string& text, const std::string& key) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  auto split = [](const std::string& l) {
    std::vector<std::string> f;
    std::stringstream ss(l);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(x);
    return f;
  };
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto f = split(line);
    if (header.empty()) {
      header = f;
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < f.size() && i < header.size(); ++i) row[header[i]] = f[i];
    out[row[key]] = row;
  }
  return out;
}

uint64_t num(const std::map<std::string, std::string>& row, const std::string& col) {
  auto it = row.find(col);
  return it == row.end() || it->second.empty() ? 0 : std::stoull(it->second);
}

}  // namespace callscope::e2e

namespace callscope::e2e {

void expect_balanced(const TraceSummary& s) {
  for (size_t i = 0; i < s.threads.size(); ++i)
    EXPECT_TRUE(s.threads[i].balanced()) << "thread " << i << ": entries " << s.threads[i].entries << " inherited "
                                         << s.threads[i].inherited << " exits " << s.threads[i].exits << " unwound "
                                         << s.threads[i].unwound << " truncated " << s.threads[i].truncated
                                         << " stray " << s.threads[i].stray << " final depth "
                                         << s.threads[i].final_depth;
}

}  // namespace callscope::e2e
