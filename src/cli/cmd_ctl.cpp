// `callscope ctl PID COMMAND`: start, stop, clear or dump profiling in a
// running program, or ask for its status, through the control socket that
// the runtime serves (src/runtime/control.cpp).
//
// Protocol: one request line ("status\n"), one reply that ends where the
// server closes the connection: "ok..." or the status text on success,
// "error: ..." on failure. Both ends check the other's credentials: the
// runtime serves only its own uid, and we talk only to the process we were
// asked about (the socket's listener must be PID, running as our uid).
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "cli/command.h"
#include "cli/record_support.h"

namespace callscope::cli {
namespace {

constexpr const char* kCommands[] = {"start", "stop", "clear", "dump", "status"};
constexpr const char* kValidList = "start, stop, clear, dump, status";

// CLI11 validators: a bad value is a usage error (exit 2).
std::string check_pid(const std::string& s) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0])) || *end != '\0' || errno != 0 || v <= 0 ||
      v > INT32_MAX)
    return "'" + s + "' is not a process id (a positive integer)";
  return {};
}

std::string check_command(const std::string& s) {
  for (const char* c : kCommands)
    if (s == c) return {};
  return "unknown command '" + s + "' (valid: " + kValidList + ")";
}


bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Connects to PID's control socket, having made sure it is PID's.
Result<int> connect_to(pid_t pid, const std::string& path) {
  const std::string p = std::to_string(pid);
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return Error("process " + p + " is not traced by callscope (no control socket at " + path +
                   "; if the program was started with CALLSCOPE_CTL_DIR, set it here too)");
    return system_error("cannot use " + path, errno);
  }
  if (!S_ISSOCK(st.st_mode)) return Error(path + " is not a socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path)
    return Error("socket path " + path + " is too long (at most " + std::to_string(sizeof addr.sun_path - 1) +
                 " bytes)");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return system_error("socket", errno);
  Fd guard(fd);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    if (e == ECONNREFUSED) {
      // Nobody listens: the socket outlived its process (killed, crashed,
      // or exec'd into a program without the runtime).
      if (!process_exists(pid)) {
        ::unlink(path.c_str());
        return Error("process " + p + " is gone; removing stale socket " + path);
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
  // The listener must be PID itself, running as us: a socket planted under
  // PID's name by someone else gets no request from us.
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return system_error("cannot identify the server of " + path, errno);
  if (cred.uid != ::geteuid())
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

struct CtlOptions {
  std::string pid;
  std::string command;
  double timeout_s = 10;
};

Result<int> run_ctl(const CtlOptions& o) {
  const pid_t pid = static_cast<pid_t>(std::stol(o.pid));  // checked by check_pid
  const std::string path = socket_dir() + "/" + o.pid + ".sock";
  struct stat st;
  if (!process_exists(pid)) {
    if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      ::unlink(path.c_str());
      return Error("no process " + o.pid + " (it is gone; removing stale socket " + path + ")");
    }
    return Error("no process " + o.pid);
  }
  if (::kill(pid, 0) != 0 && errno == EPERM && ::lstat(path.c_str(), &st) != 0)
    return Error("process " + o.pid + " belongs to another user: only its owner can control it");
  CALLSCOPE_TRY(const int fd, connect_to(pid, path));
  Fd guard(fd);
  CALLSCOPE_TRY(std::string reply, exchange(fd, pid, o.command, o.timeout_s));
  static constexpr std::string_view kError = "error: ";
  if (reply.compare(0, kError.size(), kError) == 0) {
    std::string msg = reply.substr(kError.size());
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return Error(msg);
  }
  std::fwrite(reply.data(), 1, reply.size(), stdout);
  if (reply.back() != '\n') std::fputc('\n', stdout);
  return 0;
}

}  // namespace

Command ctl_command() {
  return {"ctl", "Start, stop, clear or dump profiling in a running program, or show its status",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<CtlOptions>();
            app.add_option("pid", o->pid, "Process id of the traced program")->required()->check(check_pid);
            app.add_option("command", o->command, "start, stop, clear, dump or status")
                ->required()
                ->check(check_command);
            app.add_option("--timeout", o->timeout_s, "Seconds to wait for the reply")
                ->check(CLI::PositiveNumber)
                ->default_str("10");
            app.footer(
                "Commands:\n"
                "  start   turn profiling (or recording) on in every thread\n"
                "  stop    turn it off: hooks do nothing until the next start\n"
                "  clear   profile mode: zero every count and time (call paths are kept)\n"
                "  dump    profile mode: write a snapshot of every thread's call tree into\n"
                "          the trace; prints 'ok dump K' ('callscope report --dump K' shows it)\n"
                "  status  mode, profiling on/off, threads, calls, nodes, buffer use, dumps\n"
                "The program serves the socket $CALLSCOPE_CTL_DIR/PID.sock, by default\n"
                "/tmp/callscope-UID/PID.sock (UID: your effective uid); the directory is\n"
                "yours alone (0700) and only your uid is served. Run ctl with the same\n"
                "CALLSCOPE_CTL_DIR as the program. Exit status: 0 ok, 1 error. See docs/ctl.md.\n"
                "Example: callscope ctl 4242 dump --timeout 60");
            return [o]() -> Result<int> { return run_ctl(*o); };
          }};
}

}  // namespace callscope::cli
