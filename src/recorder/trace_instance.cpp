#include "recorder/trace_instance.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "recorder/tracefs.h"

namespace callscope::recorder {
namespace {

constexpr const char* kPrefix = "callscope-";

bool write_file(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  f << value;
  f.flush();
  return static_cast<bool>(f);
}

// Instances of recorders that are gone.
void remove_stale(const std::string& instances) {
  DIR* d = ::opendir(instances.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, kPrefix, std::strlen(kPrefix)) != 0) continue;
    const long pid = std::strtol(e->d_name + std::strlen(kPrefix), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      ::rmdir((instances + "/" + e->d_name).c_str());
  }
  ::closedir(d);
}

}  // namespace

Result<std::unique_ptr<TraceInstance>> TraceInstance::open(const std::string& system, const std::string& name) {
  auto root = tracefs_dir();
  if (!root) return root.error();
  const std::string instances = *root + "/instances";
  remove_stale(instances);
  std::unique_ptr<TraceInstance> t(new TraceInstance());
  // (one per recorder: two at once in one process -- a test -- take turns)
  t->dir_ = instances + "/" + kPrefix + std::to_string(::getpid());
  if (::mkdir(t->dir_.c_str(), 0700) != 0) {
    const int e = errno;
    t->dir_.clear();
    return Error("cannot make a tracefs instance in " + instances + ": " +
                 (e == EACCES || e == EPERM ? std::string("it needs root") : std::string(std::strerror(e))));
  }
  t->event_ = t->dir_ + "/events/" + system + "/" + name + "/enable";
  t->marker_ = ": " + name + ": ";
  if (::access(t->event_.c_str(), F_OK) != 0) return Error("this kernel has no tracepoint " + system + ":" + name);
  if (!write_file(t->dir_ + "/trace_clock", "mono") || !write_file(t->event_, "1"))
    return Error("cannot enable " + system + ":" + name + " in " + t->dir_ + ": " + std::strerror(errno));
  t->pipe_ = ::open((t->dir_ + "/trace_pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (t->pipe_ < 0) return Error("cannot read " + t->dir_ + "/trace_pipe: " + std::strerror(errno));
  return t;
}

TraceInstance::~TraceInstance() {
  if (!event_.empty()) write_file(event_, "0");
  if (pipe_ >= 0) ::close(pipe_);
  if (!dir_.empty()) ::rmdir(dir_.c_str());
}

size_t TraceInstance::drain(const std::function<void(uint64_t, const std::string&)>& f) {
  size_t n = 0;
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(pipe_, buf, sizeof buf);
    if (got <= 0) break;
    partial_.append(buf, static_cast<size_t>(got));
    size_t start = 0;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
      // "<idle>-0  [001] ..s1. 59002.892722: block_rq_complete: 254,0 WS ...":
      // found by the event's name (a thread's own name may hold ": "), the
      // timestamp the word before it.
      const std::string line = partial_.substr(start, nl - start);
      const size_t at = line.find(marker_);
      if (at == std::string::npos) continue;
      const size_t stamp = line.rfind(' ', at);
      if (stamp == std::string::npos) continue;
      unsigned long long sec = 0, usec = 0;
      char end = 0;
      if (std::sscanf(line.c_str() + stamp + 1, "%llu.%6llu%c", &sec, &usec, &end) != 3 || end != ':') continue;
      f(sec * 1'000'000'000ull + usec * 1000ull, line.substr(at + marker_.size()));
      ++n;
    }
    partial_.erase(0, start);
  }
  return n;
}

bool parse_block_completion(const std::string& text, BlockCompletion& out) {
  // "MAJOR,MINOR RWBS (CMD) SECTOR + NR ... [ERROR]": the command may hold
  // anything but its parenthesis; what follows the count varies by kernel.
  unsigned major = 0, minor = 0;
  if (std::sscanf(text.c_str(), "%u,%u ", &major, &minor) != 2 || major >= 4096 || minor >= (1u << 20)) return false;
  const size_t close = text.find(") ");
  if (close == std::string::npos) return false;
  unsigned long long sector = 0;
  unsigned nr = 0;
  if (std::sscanf(text.c_str() + close + 2, "%llu + %u", &sector, &nr) != 2) return false;
  int error = 0;
  const size_t open = text.rfind('[');
  if (open != std::string::npos) std::sscanf(text.c_str() + open + 1, "%d", &error);
  out.dev = major << 20 | minor;
  out.sector = sector;
  out.error = error;
  return true;
}

}  // namespace callscope::recorder
