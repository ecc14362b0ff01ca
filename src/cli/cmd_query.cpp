// `callscope query [options] TRACE [ARG...]`: D scripts answered over a
// recorded trace, or (-c) while a program runs under the recorder, or with
// neither, on the clock alone (docs/query.md). Options follow dtrace(1)'s;
// the work is in query/session.h, the program's run in recorder/recording.h.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/command.h"
#include "common/config.h"
#include "format/live_stream.h"
#include "query/session.h"
#include "recorder/ctl_socket.h"
#include "recorder/query_attach.h"
#include "recorder/recording.h"
#include "views/format_util.h"

namespace callscope::cli {
using recorder::Attached;
using recorder::RecordOptions;
using recorder::Recording;
using recorder::attach_to;
using recorder::check_pid;
using recorder::ctl_request;
using recorder::read_delivery;

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_interrupt(int) { g_interrupted = 1; }

// dtrace -c's reading of a command: words split at blanks, no shell.
std::vector<std::string> split_command(const std::string& text) {
  std::vector<std::string> words;
  std::string w;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!w.empty()) words.push_back(std::move(w));
      w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) words.push_back(std::move(w));
  return words;
}

// query -c: the program runs under the recorder (recorder/recording.h), its
// events tapped for the script.
class RecordingHost final : public query::LiveHost {
 public:
  RecordingHost(RecordOptions o, bool quiet) : o_(std::move(o)), quiet_(quiet) {}
  void want_memory() override { o_.memory = true; }
  void want_kernel(uint32_t flags) override {
    o_.tap_kernel_events = true;
    if (flags & format::kInfoEventGroups) o_.sys_events = true;
    if (flags & format::kInfoSyscalls) o_.sys_syscalls = true;
    if (flags & format::kInfoFaults) o_.sys_faults = true;
    if (flags & format::kInfoIo) o_.sys_io = true;
  }
  uint32_t kernel_events() const override { return rec_->kernel_events(); }
  void want_samples(uint32_t hz) override { o_.sample_hz = hz; }
  bool samples() const override { return rec_->samples(); }
  std::string kernel_events_missing() const override {
    return "the kernel did not give the recorder these events (its warning above says why)";
  }
  void want_only(const std::vector<std::string>& functions) override {
    if (functions.empty()) return;
    // Filters the user set are theirs: they say what is recorded.
    for (const auto& [name, value] : o_.runtime_env)
      if (name == "CALLSCOPE_INCLUDE" || (name == "CALLSCOPE_MODE" && value != "record")) return;
    std::string list;
    for (const std::string& f : functions) list += (list.empty() ? "" : ",") + f;
    o_.runtime_env.emplace_back("CALLSCOPE_INCLUDE", list);
    if (!o_.scratch_output && !quiet_)
      std::fprintf(stderr,
                   "callscope query: the trace holds only the calls of %s (what the script's probes name; "
                   "'callscope info' says it is filtered)\n",
                   terminal_safe(list).c_str());
  }
  Status start(format::LiveTap& tap, double ticks_per_ns) override {
    CALLSCOPE_TRY(rec_, Recording::start(o_, "query", &tap, ticks_per_ns));
    // Ctrl-C reaches the program through the terminal, and us: the script
    // ends, as in dtrace, and prints its aggregations.
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    ::sigaction(SIGINT, &sa, nullptr);
    return ok_status();
  }
  int64_t pid() const override { return rec_->pid(); }
  std::string session() const override { return rec_->session(); }
  format::ClockKind clock() const override { return rec_->live().clock(); }
  uint64_t origin() const override { return rec_->live().origin(); }
  bool poll() override {
    rec_->pump();
    return rec_->reap(false);
  }
  // Only when no trace is kept: encoding it too would make one thread do
  // the work of two (the program waited 0.6 s of 1.05 s on fib(34), against
  // 0.5 s of 1.0 s with the recorder's own thread).
  bool can_drain_here() const override { return o_.scratch_output; }
  void drain_here() override { rec_->drain_here(); }
  std::vector<int64_t> stop_tracing(std::vector<std::string>& problems) override {
    std::vector<int64_t> left;
    for (pid_t pid : rec_->running()) {
      left.push_back(pid);
      if (auto r = ctl_request(pid, "stop", 2.0); !r)
        problems.push_back("cannot stop tracing in process " + std::to_string(pid) + ": " + r.error().message() +
                           "; it drops its events from now on");
    }
    return left;
  }
  int finish() override { return rec_->finish(quiet_); }
  void kill_program() override {
    for (pid_t pid : rec_->running()) ::kill(pid, SIGKILL);
    ::kill(rec_->pid(), SIGKILL);
    while (rec_->reap(true)) {
    }
  }

 private:
  RecordOptions o_;
  bool quiet_;
  std::unique_ptr<Recording> rec_;
};

// query -p: a program that `callscope record` is recording. The recorder
// sends its tap's deliveries over a socket (query_attach.h); a thread of
// ours reads them and hands them to the query's tap. The program is not
// ours: ending the query (or a description that matches nothing) only
// detaches, and the recording goes on.
class AttachHost final : public query::LiveHost {
 public:
  explicit AttachHost(pid_t pid) : asked_(pid) {}
  ~AttachHost() { detach(); }
  Status start(format::LiveTap& tap, double ticks_per_ns) override {
    CALLSCOPE_TRY(a_, attach_to(asked_, ticks_per_ns));
    // Ctrl-C ends the query (the program, in another terminal, goes on).
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    ::sigaction(SIGINT, &sa, nullptr);
    reader_ = std::thread([this, &tap] {
      std::string buffer;
      for (;;) {
        auto d = read_delivery(a_.fd.get(), buffer, &tap);
        if (!d) {
          // We detached; or the recorder ended without its last delivery
          // (killed), or let us go (30 s behind).
          if (closing_) break;
          format::LiveDelivery end;
          end.last = true;
          end.warnings.push_back("the recording of process " + std::to_string(a_.pid) + " stopped sending events (" +
                                 d.error().message() + "); the query ends there");
          tap.deliver(std::move(end));
          break;
        }
        const bool last = d->last;
        tap.deliver(std::move(*d));
        if (last) break;
      }
      done_ = true;
    });
    return ok_status();
  }
  int64_t pid() const override { return a_.pid; }
  std::string session() const override { return a_.session; }
  format::ClockKind clock() const override { return a_.clock; }
  uint64_t origin() const override { return a_.origin; }
  uint64_t since() const override { return a_.now_tick; }
  bool poll() override { return !done_; }
  std::vector<int64_t> stop_tracing(std::vector<std::string>&) override {
    detach();
    return {};
  }
  int finish() override {
    detach();
    return 0;
  }
  void kill_program() override { detach(); }

 private:
  void detach() {
    closing_ = true;
    if (a_.fd.get() >= 0) ::shutdown(a_.fd.get(), SHUT_RDWR);
    if (reader_.joinable()) reader_.join();
  }
  pid_t asked_;
  Attached a_;
  std::thread reader_;
  std::atomic<bool> done_{false}, closing_{false};
};

// The runtime's settings for query -c: the environment's and the config
// file's (as record reads them), in record mode (a query needs the events).
Result<std::vector<std::pair<std::string, std::string>>> runtime_settings() {
  std::vector<std::string> warnings;
  const std::string file = std::filesystem::exists("callscope.toml") ? "callscope.toml" : "";
  CALLSCOPE_TRY(config::Config cfg, config::resolve_layers(config::Config{}, config::current_environment(),
                                                            config::record_keys(), file, &warnings));
  for (const std::string& w : warnings) print_warning("query", w);
  auto env = config::runtime_environment(cfg);
  for (auto& [name, value] : env)
    if (name == "CALLSCOPE_MODE" && value != "record") {
      print_warning("query", "the settings ask for --mode " + value + "; query -c records every call (mode record)");
      value = "record";
    }
  return env;
}

std::string check_format(const std::string& s) {
  if (s == "text" || s == "json") return "";
  return "'" + s + "' is not an output format of query: give text or json";
}

}  // namespace

Command query_command() {
  return {"query", "Answer D (DTrace) scripts over a recorded trace, or while a program runs (-c)",
          [](CLI::App& app) -> Runner {
            struct Opts {
              query::QueryRequest req;
              std::vector<std::string> n, P, m, f, x;
              std::vector<std::string> positionals;
              bool quiet = false;
              std::string format = "text";
              std::string command, output, pid;
              bool force = false;
            };
            auto o = std::make_shared<Opts>();
            // -n, -P, -m, -f keep their order (dtrace compiles them in order).
            auto describe = [o](char flag) {
              return [o, flag](const std::vector<std::string>& values) {
                o->req.descriptions.emplace_back(flag, values.back());
              };
            };
            app.add_option_function<std::vector<std::string>>("-n", describe('n'),
                                                              "Probe description (name read from the right) and "
                                                              "its optional clause: 'pid$target:a.out::entry { ... }'")
                ->type_name("DESCR")
                ->allow_extra_args(false)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
            app.add_option_function<std::vector<std::string>>("-P", describe('P'), "Probes of this provider (and clause)")
                ->type_name("PROVIDER")
                ->allow_extra_args(false)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
            app.add_option_function<std::vector<std::string>>("-m", describe('m'),
                                                              "Probes of this module ([provider:]module)")
                ->type_name("MODULE")
                ->allow_extra_args(false)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
            app.add_option_function<std::vector<std::string>>("-f", describe('f'),
                                                              "Probes of this function ([[provider:]module:]function)")
                ->type_name("FUNCTION")
                ->allow_extra_args(false)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
            app.add_option("-s", o->req.script_file, "The D script to run")->type_name("FILE");
            app.add_flag("-l", o->req.list, "List the probes that match (all of them without -n/-P/-m/-f/-s)");
            app.add_flag("-q", o->quiet, "Quiet: only what the script prints (-x quiet)");
            app.add_flag("-Z", o->req.allow_zero, "Allow probe descriptions that match no probe");
            app.add_option("-x", o->x, "Set a D option: -x name=value (aggsortkey, quiet, ...), repeatable")
                ->type_name("OPT[=VAL]")
                ->allow_extra_args(false);
            app.add_option("-c", o->command,
                           "Run this program under the recorder and answer the script while it runs "
                           "($target is its pid); words split at blanks, no shell")
                ->type_name("CMD");
            app.add_option("-p", o->pid,
                           "Attach to a program that 'callscope record' is recording ($target is PID); "
                           "the query sees its events from then on")
                ->type_name("PID")
                ->check(check_pid);
            app.add_option("-o,--output", o->output,
                           "With -c: keep the trace of the run there, to ask again later (dtrace's -E)")
                ->type_name("FILE");
            app.add_flag("--force", o->force, "With -o: overwrite the output file if it exists");
            app.add_option("--format", o->format, "Output: text, or json (one document: see docs/query.md)")
                ->check(check_format);
            app.add_option("trace", o->positionals,
                           "The trace file (none with -c), then the script's macro arguments $1 ... $9");
            app.footer(
                "Over a recorded trace: clock probes (tick-1s, profile-997) fire on the trace's\n"
                "time, and $target is the pid of the program 'callscope record' started; where\n"
                "other processes (its children) had events pid$target left out, a note on\n"
                "stderr says how many, and pid* (or pidPID) shows them.\n"
                "With -c CMD: the program runs under the recorder (as 'callscope record' runs it)\n"
                "and the script sees its events a few milliseconds after they happen (up to\n"
                "64 ms after a quiet spell); printf prints as it goes, clock probes fire on\n"
                "time (as late, while the program is idle). exit() or Ctrl-C ends the query:\n"
                "END fires, aggregations print, and a program still running goes on untraced.\n"
                "With -p PID: attached to a program 'callscope record' is recording, the script\n"
                "sees what happens from then on; at its end the recording goes on.\n"
                "With neither a trace nor -c: BEGIN, END and clock probes only, until exit().\n"
                "Probes: dtrace:::BEGIN/END/ERROR, proc:::start/exit/..., pid<PID>:<module>:\n"
                "<function>:entry/return for every function symbol, profile:::tick-N/profile-N.\n"
                "See docs/query.md.");
            return [o]() -> Result<int> {
              auto& req = o->req;
              if (!o->positionals.empty()) {
                req.trace = o->positionals.front();
                req.macro_args.assign(o->positionals.begin() + 1, o->positionals.end());
              }
              if (req.macro_args.size() > 9)
                return Error("at most 9 macro arguments ($1 ... $9) follow the trace; " +
                             std::to_string(req.macro_args.size()) + " were given");
              for (const std::string& opt : o->x) {
                const size_t eq = opt.find('=');
                req.options[opt.substr(0, eq)] = eq == std::string::npos ? "" : opt.substr(eq + 1);
              }
              if (o->quiet) req.options["quiet"] = "";
              req.json = o->format == "json";
              if (!o->pid.empty() && !o->command.empty()) return Error("give -c CMD or -p PID, not both");
              if (!o->pid.empty() && !o->output.empty())
                return Error("-o: the recording of process " + o->pid + " writes its own trace (record's -o)");
              if (!o->output.empty() && o->command.empty())
                return Error("-o keeps the trace of a program run with -c; give -c CMD (over a trace, the trace "
                             "is already kept)");
              std::unique_ptr<query::LiveHost> host;
              if (!o->pid.empty() || !o->command.empty()) {
                // No trace: what follows the options is the macro arguments.
                req.trace.clear();
                req.macro_args = o->positionals;
                if (req.macro_args.size() > 9)
                  return Error("at most 9 macro arguments ($1 ... $9) follow the options; " +
                               std::to_string(req.macro_args.size()) + " were given");
                req.live = true;
              }
              if (!o->pid.empty()) {
                host = std::make_unique<AttachHost>(static_cast<pid_t>(std::stol(o->pid)));
                req.host = host.get();
              } else if (!o->command.empty()) {
                RecordOptions ro;
                ro.command = split_command(o->command);
                if (ro.command.empty()) return Error("-c: no program given");
                ro.output = o->output;
                ro.scratch_output = o->output.empty();
                ro.force = o->force;
                ro.keep_session_until_destroyed = true;
                CALLSCOPE_TRY(ro.runtime_env, runtime_settings());
                // -q or -x quiet (a script's #pragma is read later).
                host = std::make_unique<RecordingHost>(std::move(ro), req.options.count("quiet") > 0);
                req.host = host.get();
                req.keep_trace = o->output;
              } else if (req.trace.empty() && !req.list) {
                req.live = true;  // the clock alone
              }
              if (req.live) req.interrupted = &g_interrupted;
              if (req.live && !req.host) {
                struct sigaction sa {};
                sa.sa_handler = on_interrupt;
                ::sigaction(SIGINT, &sa, nullptr);
              }
              req.refuse = [](const format::TraceReader& t) { return views::no_events_in_profile(t); };
              req.warnings = [](const format::TraceReader& t) {
                std::vector<std::string> w;
                if (std::string loss = views::loss_warning(t); !loss.empty()) w.push_back(std::move(loss));
                return w;
              };
              return query::run_query(req, stdout, stderr);
            };
          }};
}

}  // namespace callscope::cli
