// One `callscope query` over a recorded trace, from the command line's
// request to the output: probe descriptions from -n/-P/-m/-f turned into a
// program, the script compiled (engine.h), its probes enabled and fired
// (driver.h), and what the program prints written out as it comes (text)
// or gathered into one JSON document (--format json, docs/query.md).
// The CLI (src/cli/cmd_query.cpp) parses options and prints errors.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <csignal>

#include "common/result.h"
#include "format/trace_format.h"

namespace callscope::format {
class TraceReader;
class LiveTap;
}

namespace callscope::query {

// What runs the program under the recorder for a live query: the CLI's
// (cmd_query.cpp, over recorder/recording.h).
class LiveHost {
 public:
  // The script has alloc provider probes: before start(), a program run
  // here is recorded with --memory (a recording attached to records what
  // it records).
  virtual void want_memory() {}
  // The script needs the calls of these functions only (globs, as its pid
  // probes name them): before start(), a program run here records only
  // them (the runtime's include filter) and says so. A recording attached
  // to records what it records.
  virtual void want_only(const std::vector<std::string>& functions) { (void)functions; }
  // The script names probes of the kernel's providers (syscall, sched, pf,
  // io): before start(), a program run here records those events
  // (format::kInfoSyscalls, ... flags; kInfoEventGroups for the context
  // switches, which sched and profile-N need).
  virtual void want_kernel(uint32_t info_flags) { (void)info_flags; }
  // The kernel's events the recording hands the tap (LiveDelivery::sys),
  // as the trace's info flags say them; 0 for none.
  virtual uint32_t kernel_events() const { return 0; }
  // Why the kernel's events a script names are missing, for its error.
  virtual std::string kernel_events_missing() const {
    return "a query attached to a recording (-p) does not see the kernel's events: query the trace once it is "
           "written, or run the program under the query (-c)";
  }
  // The script has profile-N probes: before start(), a program run here
  // is sampled `hz` times a second of CPU (record --sample), and
  // profile-N fires at the samples (samples() once started: whether the
  // kernel allowed them).
  virtual void want_samples(uint32_t hz) { (void)hz; }
  virtual bool samples() const { return false; }
  // Starts the program; `tap` gets its events as they come.
  virtual Status start(format::LiveTap& tap, double ticks_per_ns) = 0;
  virtual int64_t pid() const = 0;
  virtual std::string session() const = 0;
  virtual format::ClockKind clock() const = 0;
  virtual uint64_t origin() const = 0;  // trace ticks count from this clock value
  // When the query's view begins (trace ticks): 0 for a program it started;
  // attached to a recording, the moment it attached (process and thread
  // events before it do not fire, clocks count from it).
  virtual uint64_t since() const { return 0; }
  // Reaps the processes that have ended; false once none is left. Once
  // drain_here() was called, drains the rings first (the tap delivers on
  // the caller's thread).
  virtual bool poll() = 0;
  // Whether the caller's thread may drain the rings (drain_here) instead of
  // the recorder's: not when the recorder also writes a trace (one thread
  // would do the work of two), nor when the recording is not ours.
  virtual bool can_drain_here() const { return false; }
  virtual void drain_here() {}
  // exit() or Ctrl-C while processes run: tracing stops in them, and they
  // go on untraced. Returns their pids; `problems` gets what could not be
  // done, a line each.
  virtual std::vector<int64_t> stop_tracing(std::vector<std::string>& problems) = 0;
  // Writes the trace (-o) or drops it; the tap gets what is left. 0, or 1
  // when the trace could not be written (said on stderr).
  virtual int finish() = 0;
  // The script cannot run (no probe matched): a program the query started
  // must not go on (one it attached to goes on, left alone).
  virtual void kill_program() = 0;
  virtual ~LiveHost() = default;
};

struct QueryRequest {
  // -n/-P/-m/-f in the order given: the flag ('n', 'P', 'm', 'f') and its
  // text (a description, optionally followed by a predicate and actions).
  std::vector<std::pair<char, std::string>> descriptions;
  std::string script_file;  // -s
  std::string trace;        // "" for -l alone: the probes of no trace
  std::vector<std::string> macro_args;
  std::map<std::string, std::string> options;  // -x, and quiet from -q
  bool list = false;        // -l
  bool allow_zero = false;  // -Z
  bool json = false;        // --format json
  // What every command that reads events checks and says (views' helpers,
  // given by the CLI): a refusal of the trace ("" if none), and warnings
  // after the run (losses).
  std::function<std::string(const format::TraceReader&)> refuse;
  std::function<std::vector<std::string>(const format::TraceReader&)> warnings;
  // Live: -c (a host runs the program), or no trace and no program (clock
  // probes only, on the clock). Ctrl-C sets *interrupted.
  bool live = false;
  LiveHost* host = nullptr;
  std::string keep_trace;  // -o with -c: where the trace goes ("" for none)
  const volatile std::sig_atomic_t* interrupted = nullptr;
};

// A -P/-m/-f/-n argument as a clause of D: the description completed to
// four fields as the flag means it ("-P pid1" is "pid1:::", "-f main" is
// "::main:"), then what follows it; a description alone gets an empty
// clause ("{}": dtrace's default action).
std::string description_clause(char flag, const std::string& text);

// Runs the request. Returns the exit status (exit(n)'s, 1 for a damaged
// trace) or the error to print as "callscope query: ...". Warnings go to
// `err` as "callscope query: warning: ...".
Result<int> run_query(const QueryRequest& request, std::FILE* out, std::FILE* err);

}  // namespace callscope::query
