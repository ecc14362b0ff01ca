// `callscope ctl PID COMMAND`: start, stop, clear or dump profiling in a
// running program, or ask for its status, through the control socket that
// the runtime serves (src/runtime/control.cpp).
//
// Protocol: one request line ("status\n"), one reply that ends where the
// server closes the connection: "ok..." or the status text on success,
// "error: ..." on failure. Both ends check the other's credentials: the
// runtime serves only its own uid, and we talk only to the process we were
// asked about (the socket's listener must be PID, running as our uid).
#include <dirent.h>
#include <fcntl.h>
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
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "recorder/ctl_socket.h"
#include "recorder/traced_process.h"

namespace callscope::cli {
using recorder::Fd;
using recorder::SessionKind;
using recorder::SocketSearch;
using recorder::check_pid;
using recorder::connect_to;
using recorder::exchange;
using recorder::find_socket;
using recorder::is_recorder;
using recorder::process_exists;
using recorder::remove_socket;
using recorder::session_kind;
using recorder::session_of;
using recorder::traced_children;

namespace {

constexpr const char* kCommands[] = {"start", "stop", "clear", "dump", "status"};
constexpr const char* kValidList = "start, stop, clear, dump, status";

// A CLI11 validator: a bad value is a usage error (exit 2).
std::string check_command(const std::string& s) {
  for (const char* c : kCommands)
    if (s == c) return {};
  return "unknown command '" + s + "' (valid: " + kValidList + ")";
}




std::string join(const std::vector<std::string>& items, const char* last_sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += i + 1 == items.size() ? last_sep : ", ";
    out += items[i];
  }
  return out;
}

// "no control socket at A or B" (one or several places looked at).
std::string where_looked(const SocketSearch& s) {
  std::string out = "no control socket at " + join(s.looked, " or ");
  for (const std::string& u : s.unsafe) out += "; not used: " + u;
  return out;
}

// The process to talk to, and its socket: PID itself, or, when PID is
// `callscope record`, the program it traces (said on stderr).
struct Target {
  pid_t pid;
  SocketSearch socket;
};

Result<Target> find_target(pid_t pid) {
  const std::string p = std::to_string(pid);
  SocketSearch s = find_socket(pid);
  // `callscope record` serves no socket of its own: one at its pid was left
  // by an earlier process that had that pid (killed, or crashed), and the
  // program it records is the one meant. (Seen on a busy machine: the
  // recorder had the pid of a traced program of an earlier test.)
  const bool recorder = is_recorder(pid);
  if (s.found && !recorder) return Target{pid, std::move(s)};
  const std::vector<pid_t> children = traced_children(pid);
  if (children.empty() && !recorder)
    return Error("process " + p + " is not traced by callscope (" + where_looked(s) +
                 (s.explicit_dir ? "; if the program was started with another CALLSCOPE_CTL_DIR, set that one here"
                                 : "; if the program was started with CALLSCOPE_CTL_DIR, set it here too") +
                 ")");
  const std::string who = "process " + p + " is `callscope record`";
  if (children.empty())
    return Error(who + ", and the program it traces has ended (record is writing the trace); nothing to control");
  std::vector<Target> served;
  std::vector<std::string> names;
  for (pid_t c : children) {
    names.push_back(std::to_string(c));
    SocketSearch cs = find_socket(c);
    if (cs.found) served.push_back(Target{c, std::move(cs)});
  }
  if (served.size() == 1) {
    std::fprintf(stderr, "callscope ctl: %s; acting on the program it traces, process %d\n", who.c_str(),
                 static_cast<int>(served.front().pid));
    return std::move(served.front());
  }
  if (served.empty())
    return Error(who + "; the program it traces (process " + join(names, " and ") +
                 ") has no control socket: its socket is disabled (its stderr says why) or it uses another "
                 "CALLSCOPE_CTL_DIR");
  std::vector<std::string> served_names;
  for (const Target& t : served) served_names.push_back(std::to_string(t.pid));
  return Error(who + ", tracing processes " + join(served_names, " and ") + ": give one of those pids");
}

// `detach` of a program that callscope attach did not enter: its runtime
// has been there from the start, and stays to the end.
Status attached_at_all(pid_t pid) {
  const std::string p = std::to_string(pid);
  const std::string session = session_of(pid);
  const std::string meanwhile = "; 'callscope ctl " + p + " stop' stops its tracing meanwhile";
  if (session.empty()) return ok_status();  // the runtime's own answer says
  switch (session_kind(session)) {
    case SessionKind::kRecord:
      return Error("process " + p + " is not attached: it runs under callscope record, whose recording ends with "
                   "the program (or at Ctrl-C of record)" + meanwhile);
    case SessionKind::kRuntime:
      return Error("process " + p + " is not attached: it runs with callscope's runtime from its start (preloaded "
                   "or linked in), which ends with it" + meanwhile);
    case SessionKind::kAttach:
    case SessionKind::kNotOurs:
      break;
  }
  return ok_status();
}

struct CtlOptions {
  std::string pid;
  std::string command;
  double timeout_s = 10;
};

Result<int> run_ctl(const CtlOptions& o) {
  const pid_t pid = static_cast<pid_t>(std::stol(o.pid));  // checked by check_pid
  if (!process_exists(pid)) {
    const SocketSearch s = find_socket(pid);
    if (s.found) {
      if (remove_socket(s)) return Error("no process " + o.pid + " (it is gone; removing stale socket " + s.path + ")");
      return Error("no process " + o.pid + " (it is gone, and left " + s.path + ", which we do not remove: " +
                   (s.unsafe.empty() ? std::string("not a socket of ours") : s.unsafe.back()) + ")");
    }
    return Error("no process " + o.pid);
  }
  if (::kill(pid, 0) != 0 && errno == EPERM && !find_socket(pid).found)
    return Error("process " + o.pid + " belongs to another user: only its user (or root) can control it");
  if (o.command == "detach") CALLSCOPE_CHECK(attached_at_all(pid));
  CALLSCOPE_TRY(Target target, find_target(pid));
  // A socket in a directory another user could steer: the program made it
  // before the directory was opened up, or someone else planted it (the
  // peer check in connect_to refuses that).
  if (!target.socket.safe)
    for (const std::string& u : target.socket.unsafe)
      std::fprintf(stderr, "callscope ctl: warning: %s\n", u.c_str());
  CALLSCOPE_TRY(const int fd, connect_to(target.pid, target.socket));
  Fd guard(fd);
  CALLSCOPE_TRY(std::string reply, exchange(fd, target.pid, o.command, o.timeout_s));
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

// PID and --timeout, for ctl and detach.
void add_target_options(CLI::App& app, CtlOptions& o, const char* pid_help) {
  app.add_option("pid", o.pid, pid_help)->required()->check(check_pid);
  app.add_option("--timeout", o.timeout_s, "Seconds to wait for the reply")->check(CLI::PositiveNumber)->default_str("10");
}

}  // namespace

Command ctl_command() {
  return {"ctl", "Start, stop, clear or dump profiling in a running program, or show its status",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<CtlOptions>();
            add_target_options(app, *o, "Process id of the traced program");
            app.add_option("command", o->command, "start, stop, clear, dump or status")
                ->required()
                ->check(check_command);
            app.footer(
                "Commands:\n"
                "  start   turn profiling (or recording) on in every thread\n"
                "  stop    turn it off: hooks do nothing until the next start\n"
                "  clear   profile mode: zero every count and time (call paths are kept)\n"
                "  dump    profile mode: write a snapshot of every thread's call tree into\n"
                "          the trace; prints 'ok dump K' ('callscope report --dump K' shows it)\n"
                "  status  mode, profiling (or recording) on/off, threads, calls, nodes,\n"
                "          buffer use, dumps\n"
                "PID is the traced program's; given the pid of `callscope record`, ctl acts\n"
                "on the program it traces and says so.\n"
                "The program serves the socket $CALLSCOPE_CTL_DIR/PID.sock, by default\n"
                "/tmp/callscope-UID/PID.sock (UID: your effective uid), or, when another\n"
                "user took that directory, $XDG_RUNTIME_DIR/callscope or $HOME/.callscope-ctl\n"
                "(the program says so). The directory is yours alone (0700), every parent of\n"
                "it belongs to root or you and is not writable by others, and only the\n"
                "program's user and root are served. A program that changed its user (a\n"
                "server's worker that became nobody) serves root from its first directory and\n"
                "its new user from that user's. Run ctl with the same CALLSCOPE_CTL_DIR as the\n"
                "program.\n"
                "Exit status: 0 ok, 1 error. See docs/ctl.md.\n"
                "Example: callscope ctl 4242 dump --timeout 60");
            return [o]() -> Result<int> { return run_ctl(*o); };
          }};
}

Command detach_command() {
  return {"detach",
          "End a 'callscope attach': the program gets back the GOT slots and code callscope changed and runs on; "
          "attach writes the trace",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<CtlOptions>();
            o->command = "detach";
            add_target_options(app, *o, "Process id of the program attached to");
            app.footer(
                "Prints 'ok detached' once the program's slots and code are given back and\n"
                "tracing has stopped (the runtime stays loaded, inert; docs/attach.md lists\n"
                "what stays). A program started under callscope record cannot be detached from.\n"
                "Example: callscope detach 4242");
            return [o]() -> Result<int> { return run_ctl(*o); };
          }};
}

}  // namespace callscope::cli
