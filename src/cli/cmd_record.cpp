// `callscope record`: run a program with the runtime preloaded, wait for it
// and its descendants, and turn the raw session into a trace file.
//
// The program keeps its stdin, stdout and stderr; Ctrl-C and Ctrl-\ reach it
// (not us) through the terminal; SIGTERM and SIGHUP sent to us are passed on.
// Once it has ended, a signal while we write the trace finishes the trace
// (a second one stops us, saying how to finish it: WritingSignals). We exit
// as it did: with its exit code, or by the same signal.
//
// The output path is claimed for the whole run (common/output_claim.h): a
// file created there meanwhile is never replaced, and a second record of
// the same output is refused at its start.
//
// The settings of the runtime (mode, filters, ...) come from flags, CALLSCOPE_*
// variables and a TOML file (common/config.h); the program gets them resolved
// and normalized as CALLSCOPE_* variables.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <climits>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/drainer.h"
#include "cli/record_support.h"
#include "common/config.h"
#include "common/output_claim.h"
#include "format/finalize.h"
#include "format/live_stream.h"
#include "format/trace_format.h"

namespace callscope::cli {
namespace {

namespace fmt = callscope::format;

struct RecordOptions {
  std::string output;  // from the settings (-o, CALLSCOPE_OUTPUT, output)
  std::string raw_dir;
  bool force = false;
  bool keep_raw = false;
  bool drop_when_behind = false;
  int level = 3;
  std::vector<std::string> command;
  // The runtime's settings as it reads them: ("CALLSCOPE_MODE", "profile"), ...
  std::vector<std::pair<std::string, std::string>> runtime_env;
};

volatile sig_atomic_t g_child = 0;

void forward_signal(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

// Runs argv with the runtime preloaded and `env` set over the variables it
// inherits: the resolved settings already weighed the user's CALLSCOPE_*
// variables against the flags and the file, so the program must see the
// result, normalized, not the originals. Returns the child's pid.
Result<pid_t> spawn(const std::string& program, const std::vector<std::string>& argv,
                    const std::string& runtime, const std::string& session,
                    const std::vector<std::pair<std::string, std::string>>& env) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return system_error("pipe", errno);
  std::string preload = runtime;
  if (const char* old = ::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  const pid_t pid = ::fork();
  if (pid < 0) return system_error("fork", errno);
  if (pid == 0) {
    ::close(pipefd[0]);
    ::setenv("LD_PRELOAD", preload.c_str(), 1);
    ::setenv("CALLSCOPE_DIR", session.c_str(), 1);
    ::setenv("CALLSCOPE_RECORDER_PID", std::to_string(::getppid()).c_str(), 1);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(program.c_str(), args.data());
    const int e = errno;
    ssize_t ignored = ::write(pipefd[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  ::close(pipefd[1]);
  int child_errno = 0;
  ssize_t n;
  do n = ::read(pipefd[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);
  if (n == sizeof child_errno) {
    ::waitpid(pid, nullptr, 0);
    return system_error("cannot execute '" + program + "'", child_errno);
  }
  return pid;
}

fmt::RawChildStatus status_of(pid_t pid, int status, bool is_main) {
  fmt::RawChildStatus cs{};
  cs.pid = static_cast<uint32_t>(pid);
  cs.is_main = is_main;
  if (WIFEXITED(status)) {
    cs.how = static_cast<uint32_t>(fmt::ExitHow::kExited);
    cs.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    cs.how = static_cast<uint32_t>(fmt::ExitHow::kSignaled);
    cs.signal = WTERMSIG(status);
    cs.core_dumped = WCOREDUMP(status) ? 1 : 0;
  }
  cs.mono_ns = fmt::sample_clocks().mono_ns;
  return cs;
}

Result<int> run_record(const RecordOptions& o) {
  if (o.command.empty()) return Error("no program given: callscope record [-o FILE] -- PROGRAM [ARGS...]");
  CALLSCOPE_TRY(std::string program, find_program(o.command.front()));
  CALLSCOPE_TRY(std::unique_ptr<OutputClaim> claim, OutputClaim::take(o.output, o.force));
  CALLSCOPE_TRY(std::string runtime, find_runtime());
  if (instrumentation_of(program) == Instrumentation::kNone)
    std::fprintf(stderr,
                 "callscope record: warning: '%s' has no -finstrument-functions hooks; running it anyway "
                 "(only instrumented libraries it loads will be recorded)\n",
                 program.c_str());
  CALLSCOPE_TRY(std::string session,
                make_session_dir(o.raw_dir.empty() ? default_raw_dir(o.output) : o.raw_dir, o.output));
  SessionLog log(session);
  CALLSCOPE_CHECK(log.open());
  log.write_recorder_info(o.command);
  log.write_calibration();

  // The trace is written while the program runs (format/live_stream.h). Its
  // ticks count from now, in the clock the runtime will use: the TSC where
  // it is invariant, unless CALLSCOPE_CLOCK=monotonic says otherwise.
  std::vector<std::pair<std::string, std::string>> env = o.runtime_env;
  const char* clock_env = ::getenv("CALLSCOPE_CLOCK");
  const bool monotonic = (clock_env && std::strcmp(clock_env, "monotonic") == 0) || !fmt::tsc_is_invariant();
  env.emplace_back("CALLSCOPE_CLOCK", monotonic ? "monotonic" : "tsc");
  if (o.drop_when_behind) env.emplace_back("CALLSCOPE_DROP_WHEN_BEHIND", "1");
  const fmt::ClockPair origin = fmt::sample_clocks();
  auto live = fmt::LiveStream::create(session, o.output, monotonic ? fmt::ClockKind::kMonotonic : fmt::ClockKind::kTsc,
                                      monotonic ? origin.mono_ns : origin.tsc, o.level, log.fd(), claim.get());
  if (!live) {
    remove_tree(session);
    return live.error().context("cannot start the trace");
  }

  // Descendants whose parent dies are handed to us, so we learn how they end.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction ignore {}, fwd {}, old_int {}, old_quit {}, old_term {}, old_hup {};
  ignore.sa_handler = SIG_IGN;
  fwd.sa_handler = forward_signal;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  ::sigaction(SIGTERM, &fwd, &old_term);
  ::sigaction(SIGHUP, &fwd, &old_hup);
  auto restore = [&] {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::sigaction(SIGHUP, &old_hup, nullptr);
  };
  // The child must start with default dispositions for the signals we ignore.
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  auto child = spawn(program, o.command, runtime, session, env);
  ::sigaction(SIGINT, &ignore, nullptr);
  ::sigaction(SIGQUIT, &ignore, nullptr);
  if (!child) {
    restore();
    ::unlink((*live)->writer().temporary_path().c_str());
    remove_tree(session);
    return child.error();
  }
  g_child = *child;
  auto drainer = std::make_unique<Drainer>(**live);
  const auto run_start = std::chrono::steady_clock::now();

  int main_status = 0;
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: nobody left
    }
    const bool is_main = pid == *child;
    if (is_main) main_status = status;
    remove_stale_socket(pid);
    log.write_child_status(status_of(pid, status, is_main));
  }
  g_child = 0;
  const auto run_end = std::chrono::steady_clock::now();
  // From here on a signal finishes the trace, or (a second one) stops us
  // with the session and the unfinished trace left for `finish`.
  const std::string unfinished = (*live)->writer().temporary_path();
  std::optional<WritingSignals> writing;
  writing.emplace(session, o.output, unfinished, claim.get());
  drainer->stop();
  if (!drainer->failure().empty())
    print_warning("record", drainer->failure() + "; the program's threads dropped events from then on");
  drainer.reset();
  log.write_calibration();
  log.close();

  fmt::FinalizeOptions fo;
  fo.zstd_level = o.level;
  fo.claim = claim.get();
  auto sum = fmt::finalize_session(session, o.output, fo, live->get());
  if (!sum) {
    std::fprintf(stderr, "callscope record: %s\n", sum.error().context("cannot write the trace").message().c_str());
    if (claim->conflict()) {
      // The trace is complete, under its temporary name (the error says where).
      if (!o.keep_raw) remove_tree(session);
    } else {
      std::fprintf(stderr,
                   "callscope record: nothing is lost: the raw events are kept in '%s' and the unfinished trace "
                   "in '%s'; retry with 'callscope finish %s -o %s'\n",
                   session.c_str(), unfinished.c_str(), session.c_str(), o.output.c_str());
    }
    return 1;
  }
  // The trace is complete: until we exit, the run's dispositions again
  // (SIGINT and SIGQUIT ignored, SIGTERM and SIGHUP for a program that has
  // ended: nothing).
  writing.reset();
  print_summary("record", *sum, o.output);
  const auto written = std::chrono::steady_clock::now();
  std::fprintf(stderr, "callscope record: the program ran %.3f s; the trace took %.3f s to write\n",
               std::chrono::duration<double>(run_end - run_start).count(),
               std::chrono::duration<double>(written - run_end).count());
  if (!o.keep_raw) remove_tree(session);
  restore();

  // Exit as the program did.
  if (WIFSIGNALED(main_status)) {
    const int sig = WTERMSIG(main_status);
    struct rlimit no_core {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
    return 128 + sig;
  }
  return WIFEXITED(main_status) ? WEXITSTATUS(main_status) : 1;
}

}  // namespace

Command record_command() {
  return {"record", "Run a program compiled with -finstrument-functions; record every call, or keep call trees (--mode=profile)",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<RecordOptions>();
            // -o,--output and the runtime's settings, with --config FILE.
            auto settings = std::make_shared<config::Flags>(app, config::record_keys());
            app.add_flag("-f,--force", o->force,
                         "Overwrite the output file if it exists (a regular file, and not one another callscope "
                         "is writing)");
            app.add_flag("--keep-raw", o->keep_raw, "Keep the raw session directory after writing the trace");
            app.add_flag("--drop-when-behind", o->drop_when_behind,
                         "When the recorder cannot keep up, drop events (the trace marks where) instead of "
                         "making the program wait (the default)");
            app.add_option("--raw-dir", o->raw_dir,
                           "Where the runtime writes raw events while the program runs "
                           "(default: /dev/shm, else the output's directory)");
            app.add_option("--level", o->level, "zstd compression level of the trace (1-19)")
                ->check(CLI::Range(1, 19))
                ->default_str("3");
            // Everything from PROGRAM on belongs to the program, options too.
            app.prefix_command();
            app.footer(
                "The program's stdin, stdout, stderr, exit status and signals pass through.\n"
                "Forked children and exec'd programs are recorded too; record waits for\n"
                "every descendant to end. The runtime library is found next to callscope\n"
                "(../lib/libcallscope-rt.so) or at $CALLSCOPE_RUNTIME.\n"
                "The output is claimed at the start (an empty file, locked): a file written\n"
                "there during the run is never replaced, and a second record of the same\n"
                "output is refused. Once the program has ended, a signal finishes the trace;\n"
                "a second one stops record, which says how to finish it (callscope finish).\n"
                "Usage: callscope record [OPTIONS] [--] PROGRAM [ARGS...]\n"
                "Example: callscope record -o app.trace -- ./app arg1 arg2\n"
                "         callscope record --mode profile --exclude 'std::*' -- ./app\n" +
                config::Flags::help_footer());
            return [o, settings, &app]() -> Result<int> {
              // CLI11 hands the arguments after PROGRAM to the parent app.
              o->command = app.remaining();
              if (o->command.empty() && app.get_parent()) o->command = app.get_parent()->remaining();
              if (!o->command.empty() && o->command.front() == "--") {
                o->command.erase(o->command.begin());
              } else if (!o->command.empty() && o->command.front().size() > 1 && o->command.front()[0] == '-') {
                // prefix_command() takes an unknown option for PROGRAM.
                std::fprintf(stderr,
                             "callscope record: unknown option '%s'\nRun 'callscope record --help' for usage "
                             "(put -- before a program whose name starts with '-').\n",
                             o->command.front().c_str());
                return 2;
              }
              std::vector<std::string> warnings;
              CALLSCOPE_TRY(config::Config cfg, settings->resolve(&warnings));
              for (const std::string& w : warnings) print_warning("record", w);
              o->output = cfg.output.value_or(config::key_info(config::Key::kOutput).default_text);
              o->runtime_env = config::runtime_environment(cfg);
              return run_record(*o);
            };
          }};
}

}  // namespace callscope::cli
