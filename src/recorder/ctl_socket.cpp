// Finding, reaching and removing the control socket of a traced process
// (ctl_socket.h).
#include "recorder/ctl_socket.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <vector>
#include <sstream>
#include <fstream>
#include <cstdlib>
#include <climits>
#include <cctype>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string_view>
#include <cstring>
#include <memory>
#include <optional>

#include "format/ctl_dir.h"

namespace callscope::recorder {

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

// The effective uid of process PID (/proc/PID/status), nullopt if unknown.
std::optional<uid_t> euid_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    unsigned long real = 0, effective = 0;
    if (fields >> real >> effective) return static_cast<uid_t>(effective);
  }
  return std::nullopt;
}

}  // namespace

SocketSearch find_socket(pid_t pid) {
  SocketSearch s;
  s.name = std::to_string(pid) + ".sock";
  const uid_t euid = ::geteuid();
  auto cands = std::make_unique<ctldir::Candidates>();
  ctldir::candidates(*cands, euid, [](const char* name) -> const char* { return ::getenv(name); });
  s.explicit_dir = cands->explicit_dir;
  // Root looks in the directory of the program's user too: a program that
  // became that user (a worker of a server root started) made its socket
  // there, and one of that user's programs serves root as well.
  std::vector<std::pair<std::string, uid_t>> dirs;  // and the uid that must own it
  for (int i = 0; i < cands->count; ++i) dirs.emplace_back(cands->path[i], euid);
  if (const auto theirs = euid_of(pid); euid == 0 && !s.explicit_dir && theirs && *theirs != 0)
    dirs.emplace_back("/tmp/callscope-" + std::to_string(*theirs), *theirs);
  auto scratch = std::make_unique<ctldir::Scratch>();
  std::string why_buf(3 * ctldir::kPathMax, '\0');
  for (size_t i = 0; i < dirs.size() && !s.found; ++i) {
    const auto& [dir, owner] = dirs[i];
    s.looked.push_back(dir + "/" + s.name);
    ctldir::Text why(why_buf.data(), why_buf.size());
    Fd fd(ctldir::open_private_dir(dir.c_str(), false, owner, *scratch, why));
    const bool safe = fd.get() >= 0;
    if (!safe) {
      // Not a directory we may act in; still one the program may have made
      // its socket in before it was opened up (ctl only talks to the
      // process asked about, as our uid, so connecting stays safe).
      struct stat st;
      if (::stat(dir.c_str(), &st) != 0) continue;  // absent: nothing to say
      s.unsafe.push_back(why.c_str());
      fd = Fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (fd.get() < 0) continue;
    }
    struct stat st;
    if (::fstatat(fd.get(), s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    s.found = true;
    s.dir = dir;
    s.path = dir + "/" + s.name;
    s.dir_fd = std::move(fd);
    s.safe = safe;
  }
  return s;
}

int connect_socket(const SocketSearch& s) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ctldir::Text path(addr.sun_path, sizeof addr.sun_path);
  ctldir::fd_path(path, s.dir_fd.get(), s.name.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

bool remove_socket(const SocketSearch& s) {
  if (!s.found || !s.safe) return false;
  struct stat st;
  // Root removes a socket of the program's user too (found in that user's
  // directory, checked safe for that user).
  if (::fstatat(s.dir_fd.get(), s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode) ||
      (st.st_uid != ::geteuid() && ::geteuid() != 0))
    return false;
  return ::unlinkat(s.dir_fd.get(), s.name.c_str(), 0) == 0;
}

void remove_stale_socket(pid_t pid) { remove_socket(find_socket(pid)); }

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// Connects to PID's socket, having made sure it is PID's.
Result<int> connect_to(pid_t pid, const SocketSearch& socket) {
  const std::string p = std::to_string(pid);
  const std::string& path = socket.path;
  struct stat st;
  if (::fstatat(socket.dir_fd.get(), socket.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return system_error("cannot use " + path, errno);
  if (!S_ISSOCK(st.st_mode)) return Error(path + " is not a socket");
  const int fd = connect_socket(socket);
  if (fd < 0) {
    const int e = errno;
    if (e == ECONNREFUSED) {
      // Nobody listens: the socket outlived its process (killed, crashed,
      // or exec'd into a program without the runtime).
      if (!process_exists(pid)) {
        if (remove_socket(socket)) return Error("process " + p + " is gone; removing stale socket " + path);
        return Error("process " + p + " is gone; it left a stale socket at " + path);
      }
      return Error("process " + p + " does not listen on " + path +
                   " (a stale socket left by an earlier process " + p +
                   ", or one that exec'd a program without callscope)");
    }
    if (e == EACCES)
      return Error("cannot connect to " + path + ": permission denied (is process " + p +
                   " running as another user?)");
    if (e == EAGAIN) return Error("process " + p + " is busy (its control socket's queue is full); try again");
    return system_error("cannot connect to " + path, e);
  }
  Fd guard(fd);
  // The listener must be the target itself, running as us: a socket planted
  // under its name by someone else gets no request from us. (Root talks to
  // the process it was asked about, whatever its user: a worker that became
  // nobody serves a socket it made as nobody.)
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return system_error("cannot identify the server of " + path, errno);
  if (cred.uid != ::geteuid() && ::geteuid() != 0)
    return Error("refusing to talk to " + path + ": it is served by uid " + std::to_string(cred.uid) +
                 ", not by us (uid " + std::to_string(::geteuid()) + ")");
  if (cred.pid != pid)
    return Error("refusing to talk to " + path + ": it is served by process " + std::to_string(cred.pid) +
                 ", not by process " + p);
  return guard.release();
}

// Sends the request line and reads the reply up to the server's close.
Result<std::string> exchange(int fd, pid_t pid, const std::string& command, double timeout_s) {
  const std::string p = std::to_string(pid);
  const std::string line = command + "\n";
  // A server that refuses us answers and closes without reading: the send
  // may then fail (EPIPE), and its answer is still there to read.
  if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size()) && errno != EPIPE &&
      errno != ECONNRESET)
    return system_error("cannot send the request to process " + p, errno);
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  std::string reply;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd pfd{fd, POLLIN, 0};
    const int n = left > 0 ? ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, INT32_MAX))) : 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return system_error("poll", errno);
    if (n == 0) {
      char shown[32];
      std::snprintf(shown, sizeof shown, "%g", timeout_s);
      return Error("no reply from process " + p + " within " + shown +
                   " s (a dump of a big call tree takes a while: try a longer --timeout)");
    }
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == ECONNRESET && !reply.empty()) break;  // it closed with our request unread
    if (r < 0) return system_error("cannot read the reply of process " + p, errno);
    if (r == 0) break;
    reply.append(buf, static_cast<size_t>(r));
  }
  if (reply.empty()) return Error("process " + p + " closed the connection without a reply (is it exiting?)");
  return reply;
}

Result<std::string> ctl_request(pid_t pid, const std::string& command, double timeout_s) {
  const SocketSearch s = find_socket(pid);
  if (!s.found) return Error("process " + std::to_string(pid) + " has no control socket");
  CALLSCOPE_TRY(const int fd, connect_to(pid, s));
  Fd guard(fd);
  CALLSCOPE_TRY(std::string reply, exchange(fd, pid, command, timeout_s));
  static constexpr std::string_view kError = "error: ";
  if (reply.compare(0, kError.size(), kError) == 0) {
    std::string msg = reply.substr(kError.size());
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return Error(msg);
  }
  return reply;
}

std::string check_pid(const std::string& s) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0])) || *end != '\0' || errno != 0 || v <= 0 ||
      v > INT32_MAX)
    return "'" + s + "' is not a process id (a positive integer)";
  return {};
}

}  // namespace callscope::recorder
