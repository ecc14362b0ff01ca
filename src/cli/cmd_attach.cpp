// `callscope attach PID`: load the runtime into a program that is already
// running, record (or keep call trees) as `record` would, then detach and
// leave the program running; `callscope detach PID` ends it from elsewhere.
//
// The recording ends at --duration, at Ctrl-C (or SIGTERM, SIGHUP) of
// attach, at `callscope detach PID`, or when the program ends. Unless the
// program ended or was detached already, attach asks it to detach (the
// control request "detach": every slot and code byte of ours given back,
// tracing stopped) and then writes the trace. The program's signals are
// its own: attach forwards none.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "cli/command.h"
#include "cli/ctl_socket.h"
#include "cli/options.h"
#include "cli/record_flags.h"
#include "cli/record_support.h"
#include "cli/recording.h"
#include "cli/traced_process.h"
#include "common/config.h"
#include "common/output_format.h"
#include "inject/attachable.h"
#include "views/replay_view.h"

namespace callscope::cli {
namespace {

volatile sig_atomic_t g_end_signal = 0;
void on_end_signal(int sig) { g_end_signal = sig; }

struct AttachOptions {
  std::string pid;
  std::string duration;  // "" or 0: until Ctrl-C or detach
};

// Whether `pid` still runs (a zombie has ended: its parent has not reaped it).
bool running(pid_t pid) {
  if (!process_exists(pid)) return false;
  const std::string stat = read_proc(pid, "stat");
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

// Why `pid` cannot take a runtime of ours: one traces it already. A second
// would find the program's hooks bound to the first (and say, wrongly, that
// the program has none), and its session would stay behind. Found by the
// session files the runtime maps and holds open (traced_process.h), which
// a program that rewrote its argv and environment still shows, and which a
// detached runtime has let go of (a later attach is welcome then).
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

Result<int> run_attach(RecordOptions o, const AttachOptions& a) {
  const pid_t pid = static_cast<pid_t>(std::stol(a.pid));  // checked by check_pid
  const inject::ProcessFacts facts = inject::gather_facts(pid);
  if (auto why = inject::refusal(facts)) return Error(*why);
  if (auto why = traced_already(pid)) return Error(*why);
  if (facts.uid != ::geteuid())
    return Error("process " + a.pid + " runs as user " + std::to_string(facts.uid) +
                 ": callscope attach must run as that user (the runtime it loads runs as that user, and must write "
                 "into the session attach makes): "
                 "sudo -u '#" + std::to_string(facts.uid) + "' callscope attach " + a.pid);
  uint64_t duration_ns = 0;
  if (!a.duration.empty()) duration_ns = *views::parse_duration_ns(a.duration);  // checked by duration_check
  o.attach_pid = pid;

  // No signal ends us while a thread of the program is borrowed: it would
  // be left running our code (ptrace lets a tracee go when its tracer
  // dies). Held back until our handlers are in place.
  sigset_t ending, old_mask;
  sigemptyset(&ending);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&ending, sig);
  ::sigprocmask(SIG_BLOCK, &ending, &old_mask);
  const auto t0 = std::chrono::steady_clock::now();
  auto started = Recording::start(o, "attach");
  if (!started) {
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return started.error();
  }
  std::unique_ptr<Recording> rec = std::move(*started);
  const double attach_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Ours now: Ctrl-C of attach ends the recording, not the program.
  struct sigaction end {};
  end.sa_handler = on_end_signal;
  sigemptyset(&end.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::sigaction(sig, &end, nullptr);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  std::fprintf(stderr,
               "callscope attach: attached to process %d (%s) in %.1f ms; its thread was held %.2f ms. "
               "Recording until %s\n",
               pid, facts.name.c_str(), attach_ms, rec->attach_stopped_ms(),
               duration_ns ? ("--duration " + a.duration + ", Ctrl-C or 'callscope detach " + a.pid + "'").c_str()
                           : ("Ctrl-C or 'callscope detach " + a.pid + "'").c_str());

  // What the runtime had to say (the program's stderr is not ours).
  {
    std::ifstream notices(rec->session() + "/" + std::to_string(pid) + ".0/notices");
    for (std::string line; std::getline(notices, line);)
      std::fprintf(stderr, "callscope attach: %s\n", terminal_safe(line).c_str());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(duration_ns);
  const char* ended = nullptr;
  while (!ended) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (g_end_signal) ended = "signal";
    else if (duration_ns && std::chrono::steady_clock::now() >= deadline) ended = "duration";
    else if (!running(pid)) ended = "exit";
    else if (!find_socket(pid).found) ended = "detached";  // callscope detach: the runtime removed its socket
  }
  if (std::string(ended) != "exit" && std::string(ended) != "detached") {
    auto reply = ctl_request(pid, "detach", 10);
    if (!reply && running(pid))
      print_warning("attach", "could not detach from process " + a.pid + ": " + reply.error().message() +
                                  "; the trace is written from what was recorded");
  }
  // Its children forked meanwhile carry the runtime too: detached as well
  // (each serves its own socket).
  for (pid_t child : rec->running())
    if (child != pid && find_socket(child).found) (void)ctl_request(child, "detach", 10);
  if (std::string(ended) == "exit")
    std::fprintf(stderr, "callscope attach: process %d ended\n", pid);
  else
    std::fprintf(stderr, "callscope attach: detached from process %d, which runs on\n", pid);
  return rec->finish(false);
}

}  // namespace

Command attach_command() {
  return {"attach",
          "Attach to a running program: record its calls (or keep call trees, --mode=profile) until --duration, "
          "Ctrl-C or 'callscope detach PID', then detach and leave it running",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<RecordOptions>();
            auto a = std::make_shared<AttachOptions>();
            app.add_option("pid", a->pid, "Process id of the running program")->required()->check(check_pid);
            auto settings = std::make_shared<config::Flags>(app, config::attach_keys());
            app.add_option("--duration", a->duration,
                           "Detach after this long (default: at Ctrl-C, or 'callscope detach PID')")
                ->type_name("DURATION")
                ->check(duration_check());
            add_output_flags(app, *o);
            add_stream_flags(app, *o, "while attached");
            app.footer(
                "Usage: callscope attach PID [-o FILE] [--duration 30s] [--mode profile] [--libcalls]\n"
                "The runtime is loaded into the process by a thread of its own (ptrace holds one\n"
                "thread of the program for about a millisecond, and attach says how long); the\n"
                "program runs on meanwhile. From then on it is recorded as under callscope\n"
                "record: -finstrument-functions hooks, -pg, patchable entries and, with\n"
                "--libcalls/--patch-imports/--patch-callers, its calls into libraries. Calls\n"
                "already in progress at the attach end without their start. callscope ctl PID\n"
                "works as usual while attached.\n"
                "The end: --duration, Ctrl-C (or SIGTERM, SIGHUP) of attach, 'callscope detach\n"
                "PID', or the program's exit. Detaching gives back the GOT slots and code\n"
                "callscope changed; the runtime stays loaded and does nothing (unloading it is\n"
                "unsafe), and a later attach works again (docs/attach.md: what stays). gcc's\n"
                "patchable entries are first made one instruction each with every thread\n"
                "stopped (attach says for how long). The program's signals are its own.\n"
                "Needs: the same user as the program, ptrace allowed (Yama ptrace_scope 0, or 1\n"
                "with CAP_SYS_PTRACE), x86-64, glibc 2.34 or later, a dynamically linked program.\n"
                "Example: callscope attach 1234 -o srv.trace --duration 30s\n"
                "         callscope attach 1234 --libcalls --duration 10s\n" +
                config::Flags::help_footer());
            return [o, a, settings]() -> Result<int> {
              CALLSCOPE_CHECK(resolve_record_settings(*settings, "attach", *o));
              return run_attach(*o, *a);
            };
          }};
}

}  // namespace callscope::cli
