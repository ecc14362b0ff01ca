// What /proc says of a process callscope traces (traced_process.h).
#include "recorder/traced_process.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string_view>

#include "format/raw_session.h"
#include "inject/remote.h"

namespace callscope::recorder {
namespace {

// Where each descriptor of PID leads (readlink of /proc/PID/fd/N).
std::vector<std::string> fd_targets(pid_t pid) {
  std::vector<std::string> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return out;
  while (dirent* e = ::readdir(d.get())) {
    if (e->d_name[0] == '.') continue;
    std::string target(4096, '\0');
    const ssize_t n = ::readlinkat(::dirfd(d.get()), e->d_name, target.data(), target.size());
    if (n <= 0 || static_cast<size_t>(n) >= target.size()) continue;
    target.resize(static_cast<size_t>(n));
    out.push_back(std::move(target));
  }
  return out;
}

bool exists(const std::string& path, int* error = nullptr) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return true;
  if (error) *error = errno;
  return false;
}

}  // namespace

std::string read_proc(pid_t pid, const char* what) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/" + what, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> nul_separated(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, '\0')) out.push_back(item);
  return out;
}

std::string session_of(pid_t pid, std::string* unreadable) {
  std::string why;
  const auto maps = inject::read_maps(pid, &why);
  if (!maps) {
    if (unreadable) *unreadable = why;
    return "";
  }
  // The mapped files first (each thread's ring or tree: a program that
  // closes every descriptor it did not open keeps those), then the
  // descriptors (the session's directories and meta, there before any
  // thread ran a hook). A fork child maps its parent's files too, and a
  // process directory of its own is in the same session.
  std::vector<std::string> paths;
  for (const inject::Mapping& m : *maps)
    if (!m.path.empty() && m.path[0] == '/') paths.push_back(m.path);
  for (std::string& t : fd_targets(pid)) paths.push_back(std::move(t));
  for (const std::string& p : paths)
    if (auto s = format::session_of_path(p)) return *s;
  return "";
}

SessionKind session_kind(const std::string& session) {
  int error = 0;
  if (exists(session + "/attach.settings", &error)) return SessionKind::kAttach;
  if (error == EACCES) return SessionKind::kNotOurs;
  if (exists(session + "/recorder.meta")) return SessionKind::kRecord;
  return SessionKind::kRuntime;
}

bool is_recorder(pid_t pid) {
  const auto args = nul_separated(read_proc(pid, "cmdline"));
  if (args.size() < 2) return false;
  const std::string exe = args[0].substr(args[0].rfind('/') + 1);
  return exe.rfind("callscope", 0) == 0 && std::find(args.begin() + 1, args.end(), "record") != args.end();
}

std::vector<pid_t> traced_children(pid_t recorder) {
  std::vector<pid_t> out;
  std::string session;
  for (const std::string& t : fd_targets(recorder)) {
    static constexpr std::string_view kMeta = "/recorder.meta";
    if (t.size() > kMeta.size() && t.compare(t.size() - kMeta.size(), kMeta.size(), kMeta) == 0)
      session = t.substr(0, t.size() - kMeta.size());
  }
  if (session.empty()) return out;  // not recording (ended, or not a recorder)
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir("/proc"), ::closedir);
  if (!d) return out;
  while (dirent* e = ::readdir(d.get())) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    const pid_t child = static_cast<pid_t>(std::atol(e->d_name));
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const std::string stat = read_proc(child, "stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    long ppid = 0;
    if (!(rest >> state >> ppid) || ppid != recorder) continue;
    if (session_of(child) == session) out.push_back(child);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace callscope::recorder
