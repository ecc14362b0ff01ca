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
#include "cli/options.h"
#include "cli/record_flags.h"
#include "common/config.h"
#include "common/output_format.h"
#include "inject/attachable.h"
#include "recorder/attached.h"
#include "recorder/record_support.h"
#include "recorder/recording.h"
#include "views/replay_view.h"

namespace callscope::cli {
using recorder::RecordOptions;
using recorder::AttachEnd;
using recorder::check_pid;
using recorder::Recording;
using recorder::detach_all;
using recorder::traced_already;
using recorder::wait_attached;

namespace {

volatile sig_atomic_t g_end_signal = 0;
void on_end_signal(int sig) { g_end_signal = sig; }

struct AttachOptions {
  std::string pid;
  std::string duration;  // "" or 0: until Ctrl-C or detach
};

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
  const AttachEnd ended = wait_attached(pid, duration_ns, &g_end_signal);
  detach_all(*rec, pid, ended);
  if (ended == AttachEnd::kExit)
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
            add_kernel_event_flags(app, *o);
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
