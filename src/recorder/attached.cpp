// How `callscope attach` waits for the end and lets the program go
// (attached.h).
#include "recorder/attached.h"

#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "common/output_format.h"
#include "recorder/ctl_socket.h"
#include "recorder/recording.h"
#include "recorder/traced_process.h"

namespace callscope::recorder {

bool running(pid_t pid) {
  if (!process_exists(pid)) return false;
  const std::string stat = read_proc(pid, "stat");
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

// A second runtime would find the program's hooks bound to the first (and
// say, wrongly, that the program has none), and its session would stay
// behind. Found by the session files the runtime maps and holds open
// (traced_process.h), which a program that rewrote its argv and environment
// still shows, and which a detached runtime has let go of (a later attach
// is welcome then).
std::optional<std::string> traced_already(pid_t pid) {
  const std::string p = std::to_string(pid);
  const std::string ctl = "'callscope ctl " + p + " ...' controls it";
  if (const std::string session = session_of(pid); !session.empty()) {
    switch (session_kind(session)) {
      case SessionKind::kAttach:
        return "process " + p + " is traced by callscope already (attached): 'callscope detach " + p +
               "' ends that attach";
      case SessionKind::kRecord:
        return "process " + p + " runs under callscope record already: " + ctl;
      case SessionKind::kRuntime:
        return "process " + p + " runs with callscope's runtime already (preloaded or linked in; it writes to " +
               session + "): " + ctl;
      case SessionKind::kNotOurs: {
        struct stat st {};
        const std::string owner =
            ::stat(session.c_str(), &st) == 0 ? "uid " + std::to_string(st.st_uid) : "another user";
        return "process " + p + " is traced by callscope already, into a session of " + owner + " (" + session +
               "; it changed its user since it started): " + ctl + ", as its user or as root";
      }
    }
  }
  // A runtime whose files we cannot see, whose socket answers.
  if (find_socket(pid).found && ctl_request(pid, "status", 2))
    return "process " + p + " is traced by callscope already: " + ctl;
  return std::nullopt;
}

AttachEnd wait_attached(pid_t pid, uint64_t duration_ns, const volatile sig_atomic_t* signal_flag) {
  using Clock = std::chrono::steady_clock;
  constexpr int64_t kDetachCheckMs = 250;
  const auto deadline = Clock::now() + std::chrono::nanoseconds(duration_ns);
  // The program's end wakes us at once (a pidfd is readable when the
  // process has ended, zombie or not); without pidfds (Linux < 5.3) it is
  // looked for with the detach.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  // The signals that end the recording arrive only inside ppoll: a handler
  // run between the flag's check and the wait would otherwise be missed
  // until the next check.
  sigset_t ending, wait_mask;
  sigemptyset(&ending);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&ending, sig);
  ::sigprocmask(SIG_BLOCK, &ending, &wait_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigdelset(&wait_mask, sig);
  AttachEnd end;
  for (;;) {
    if (*signal_flag) {
      end = AttachEnd::kSignal;
      break;
    }
    const auto now = Clock::now();
    if (duration_ns && now >= deadline) {
      end = AttachEnd::kDuration;
      break;
    }
    if (!running(pid)) {
      end = AttachEnd::kExit;
      break;
    }
    if (!find_socket(pid).found) {  // callscope detach: the runtime removed its socket
      end = AttachEnd::kDetached;
      break;
    }
    int64_t wait_ms = kDetachCheckMs;
    if (duration_ns)
      wait_ms = std::min<int64_t>(
          wait_ms, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1);
    struct pollfd p {pidfd, POLLIN, 0};
    const struct timespec ts {static_cast<time_t>(wait_ms / 1000), static_cast<long>(wait_ms % 1000) * 1'000'000};
    (void)::ppoll(&p, pidfd >= 0 ? 1 : 0, &ts, &wait_mask);
  }
  ::sigprocmask(SIG_UNBLOCK, &ending, nullptr);
  if (pidfd >= 0) ::close(pidfd);
  return end;
}

void detach_all(Recording& rec, pid_t pid, AttachEnd end) {
  if (end != AttachEnd::kExit && end != AttachEnd::kDetached) {
    auto reply = ctl_request(pid, "detach", 10);
    if (!reply && running(pid))
      print_warning("attach", "could not detach from process " + std::to_string(pid) + ": " +
                                  reply.error().message() + "; the trace is written from what was recorded");
  }
  for (pid_t child : rec.running())
    if (child != pid && find_socket(child).found) (void)ctl_request(child, "detach", 10);
}

}  // namespace callscope::recorder
