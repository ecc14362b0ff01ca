// Helpers for the end-to-end tests: run a command and capture its output,
// find fixtures, and summarize a trace (balance per thread, calls per
// function name) through the reader library.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "format/trace_reader.h"

namespace callscope::e2e {

struct RunResult {
  int exit_code = -1;    // when the command exited
  int term_signal = 0;   // when a signal killed it
  std::string out;
  std::string err;
};

// `in_child`, when given, runs in the child just before exec (to set up what
// only the child's pid can name).
RunResult run(const std::vector<std::string>& argv, const std::string& stdin_text = "",
              const std::function<void()>& in_child = {});
RunResult callscope(const std::vector<std::string>& args);

// `callscope ctl ARGS...` with CALLSCOPE_CTL_DIR=ctl_dir.
RunResult ctl(const std::string& ctl_dir, const std::vector<std::string>& args);

// The argv that runs `sh -c script` in a mount namespace of its own
// (`unshare -m`: root only; in a user namespace, `unshare -rm`, '/' belongs
// to an unmapped uid, which the runtime's directory checks rightly refuse)
// whose /tmp is a fresh tmpfs: a test can use the default places
// (/tmp/callscope-UID) without touching anyone's. The build tree stays
// reachable where it was, also when it is under /tmp (a clone in /tmp/x
// builds in /tmp/x/build). `env`: NAME=value settings for the script. Where
// no such namespace can be made, the script does not run and "SKIP: why"
// is printed instead.
std::vector<std::string> private_tmp_shell(const std::string& script, const std::vector<std::string>& env = {});

std::vector<std::string> variants();                  // "gcc-O0", ...
// One variant, for tests whose subject does not depend on the compiler (the
// recorder's side): gcc-O2 when built, else the first; "" when none.
std::string one_variant();
// A variant as a test name: "gcc-O0" -> "gcc_O0" (gtest allows no '-').
std::string variant_test_name(std::string variant);
// For INSTANTIATE_TEST_SUITE_P over variants().
struct VariantName {
  template <class Info>
  std::string operator()(const Info& info) const {
    return variant_test_name(info.param);
  }
};
std::string fixture(const std::string& variant, const std::string& name);
// `path` itself, or, when it holds a blank or a colon, a symbolic link to it
// of a plain path (/tmp/callscope-e2e-links/HASH/NAME): for what splits
// there -- LD_PRELOAD, query -c's command, the attach server's commands --
// when the checkout's path holds one.
std::string plain_path(const std::string& path);
// A file's bytes ("" if it cannot be read).
std::string read_file(const std::string& path);
std::string plain_fixture();

// A fresh temporary directory, removed with its contents when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A program under `callscope record` (its trace at `trace`, or in a
// directory of its own), with CALLSCOPE_CTL_DIR=ctl_dir and `env`
// ("NAME=value") set: its stdin and stdout are ours (one command per line,
// one answer per line), record's and its stderr go to a file.
class TracedProgram {
 public:
  TracedProgram(const std::vector<std::string>& command, const std::string& ctl_dir,
                const std::vector<std::string>& env = {}, const std::string& trace = "");
  ~TracedProgram();
  TracedProgram(const TracedProgram&) = delete;
  TracedProgram& operator=(const TracedProgram&) = delete;
  // The traced program's pid, from the name of its socket; 0 if none came.
  pid_t wait_for_socket();
  // Sends one command on stdin and returns the program's one-line answer.
  std::string command(const std::string& line);
  // Closes the program's stdin (it exits) and returns record's exit code.
  int finish();
  const std::string& trace() const { return trace_; }
  pid_t record_pid() const { return record_pid_; }  // `callscope record`'s, not the program's
  std::string err() const;  // what record and the program wrote on stderr

 private:
  TempDir dir_;
  std::string trace_;
  std::string ctl_dir_;
  pid_t record_pid_ = 0;
  int in_ = -1, out_ = -1;
  int exit_code_ = -1;
};

struct ThreadSummary {
  uint64_t entries = 0, inherited = 0, exits = 0, unwound = 0, truncated = 0, stray = 0, lost = 0;
  uint64_t gaps = 0, pauses = 0, resumes = 0;  // gaps: lost and pause events
  uint64_t allocs = 0, frees = 0;              // memory events (record --memory)
  uint64_t waits = 0, wait_ticks = 0;          // waits for the recorder (kWait), and their ticks
  uint32_t max_depth = 0;
  uint32_t final_depth = 0;
  bool balanced() const {
    return entries + inherited == exits + unwound + truncated && stray == 0 && final_depth == 0;
  }
};

struct TraceSummary {
  std::unique_ptr<format::TraceReader> reader;
  std::vector<ThreadSummary> threads;
  // Entries per function name, all threads; names lose GCC clone suffixes
  // (".constprop.0", ".isra.0", ".part.0").
  std::map<std::string, uint64_t> calls;
  // Entries per (process index, name).
  std::map<std::pair<uint32_t, std::string>, uint64_t> calls_in_process;
  // Depths at which each function was entered.
  std::map<std::string, std::map<uint32_t, uint64_t>> entry_depths;
  uint64_t calls_of(const std::string& name) const {
    auto it = calls.find(name);
    return it == calls.end() ? 0 : it->second;
  }
};

// Reads the whole trace; fails the current test on a damaged trace.
TraceSummary summarize(const std::string& trace_path);

// The function entries of every thread of a trace a recorder was still
// streaming when it died (a copy of its NAME.tmp.* file: no thread records
// yet, no end block); 0 when it cannot be read (the test then fails).
uint64_t entries_streamed(const std::string& partial_trace_path);

// The calls of one thread of a trace in order, one word per event: "+f" an
// entry of f, "-f" its exit, "~f" closed as unwound, "!f" as truncated, "?f"
// a stray exit (names as in TraceSummary::calls); fails the current test on
// a damaged trace.
std::vector<std::string> call_events(const std::string& trace_path, uint32_t thread = 0);

// CSV rows (as `report --format csv` prints them) keyed by column `key`,
// each row a map from header to value; and one value of a row as a number
// (0 when absent).
std::map<std::string, std::map<std::string, std::string>> csv_by(const std::string& text, const std::string& key);
uint64_t num(const std::map<std::string, std::string>& row, const std::string& col);
// `report TRACE EXTRA... --format csv` keyed by function; fails the current
// test if report fails.
std::map<std::string, std::map<std::string, std::string>> flat_report(const std::string& trace,
                                                                       const std::vector<std::string>& extra = {});

// "key=value" pairs printed by a fixture.
std::map<std::string, long> parse_counts(const std::string& text);
// "name value" lines (a query's printa("%s %@d\n", ...)) into a map, up
// to the first line that is not one.
std::map<std::string, uint64_t> pairs(const std::string& text);

}  // namespace callscope::e2e
