// Finding, reaching and removing the control socket of a traced process, by
// the rule the runtime follows (src/format/ctl_dir.h): used by `ctl`, and by
// `record` to remove the sockets its children could not remove themselves.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace callscope::recorder {

// An open file descriptor, closed when destroyed.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset();

 private:
  int fd_ = -1;
};

// Where PID's socket is, or would be.
struct SocketSearch {
  bool explicit_dir = false;        // CALLSCOPE_CTL_DIR set: the only directory
  std::vector<std::string> looked;  // <dir>/<pid>.sock for every directory looked in
  // Directories that are not safe (another user could steer what they
  // hold), each with the reason: the runtime does not use them, and we
  // remove nothing in them.
  std::vector<std::string> unsafe;
  // The directory holding PID.sock, when one does.
  bool found = false;
  std::string dir;
  std::string path;  // dir + "/" + name, for messages
  std::string name;  // <pid>.sock
  Fd dir_fd;         // O_PATH
  bool safe = false;  // dir passed the checks: we may remove what is in it
};

// Looks for PID.sock in $CALLSCOPE_CTL_DIR, else in /tmp/callscope-UID,
// $XDG_RUNTIME_DIR/callscope and $HOME/.callscope-ctl, in that order.
SocketSearch find_socket(pid_t pid);

// Connects to the socket found, through its directory's descriptor: the
// connected descriptor, or -1 with errno set (as connect(2)).
int connect_socket(const SocketSearch& s);

// Removes the socket found, when its directory is safe and it is a socket
// of ours; false when it left it alone.
bool remove_socket(const SocketSearch& s);

// Removes the socket of a process that has ended (one killed by a signal
// could not remove its own).
void remove_stale_socket(pid_t pid);

// Whether PID exists (ours or another user's).
bool process_exists(pid_t pid);

// Connects to PID's socket `s` (found by find_socket) once sure that PID,
// running as us, serves it: the connected descriptor, or what is wrong.
Result<int> connect_to(pid_t pid, const SocketSearch& s);
// Sends a request line and reads the reply up to the server's close.
Result<std::string> exchange(int fd, pid_t pid, const std::string& command, double timeout_s);
// A whole request to PID (`ctl`'s, and `query -c` stopping its program's
// tracing): its reply, or the error it answered or met.
Result<std::string> ctl_request(pid_t pid, const std::string& command, double timeout_s);

// A process id given on the command line: "" when valid, else why not (a
// CLI11 validator: a bad value is a usage error, exit 2).
std::string check_pid(const std::string& s);

}  // namespace callscope::recorder
