// Small text helpers shared by the views: durations with a unit chosen per
// value, byte sizes, exit descriptions, address formatting, and names cut to
// a column's width.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/output_format.h"

#include "format/trace_format.h"
#include "format/trace_reader.h"

namespace callscope::views {

std::string format_duration_ns(double ns);   // "812 ns", "12.3 us", "4.56 ms", "1.230 s"
std::string format_timestamp_ns(double ns);  // "812 ns", "12.345 us": three decimals, for time columns
std::string format_bytes(uint64_t bytes);    // "812 B", "12.3 KiB", ...
std::string format_hex(uint64_t v);          // "0x401a20"
std::string describe_exit(format::ExitHow how, int code, int signal, bool core_dumped);
std::string signal_name(int signal);         // "SIGSEGV"
std::string format_realtime(uint64_t ns_since_epoch);  // "2026-11-20 23:40:01 UTC"
// When events of the trace were lost, or threads ran without being
// recorded (kThreadUntraced): one line naming how many, in how many
// threads, and what that means for the figures; "" otherwise. Every command
// that reads events prints it ("callscope CMD: warning: ...").
std::string loss_warning(const format::TraceReader& trace);
// Where the calls of a trace come from: the hooks, or unwinding the stack
// at allocations (record --memory --unwind, per process: a build's
// compilers may be unwound while a tool built with hooks is not). A thread
// flagged kThreadUnwound was unwound; in a trace with kInfoUnwound and no
// flagged thread (written before the flag), every thread was.
struct CallSources {
  uint64_t hooked_calls = 0, unwound_calls = 0;
  uint32_t hooked_processes = 0, unwound_processes = 0;  // a process with a thread of each counts in both
  std::vector<uint32_t> hooked_threads, unwound_threads;  // thread indices, traced threads only
  bool any_unwound() const { return !unwound_threads.empty(); }
  bool mixed() const { return any_unwound() && hooked_calls != 0; }
};
CallSources call_sources(const format::TraceReader& trace);
// "812 calls in 3 threads of 1 process"; "812 unwound frames in ..." when
// every call was unwound; and a mixed trace as what it is: "6512345 calls
// from hooks in 3 processes, 812004 frames unwound at allocations in 1205
// processes (2417 threads)".
std::string calls_summary(uint64_t calls, uint64_t unwound_calls, uint32_t threads, uint32_t processes,
                          uint32_t unwound_processes);
// For a trace whose calls were unwound at allocations, all or some (then
// which processes): that the views of calls count and time those frames,
// not the program's calls; "" otherwise.
std::string unwound_warning(const format::TraceReader& trace);
// Why a thread could not be traced, from its errno: "No space left on
// device (ENOSPC)".
std::string describe_errno(int error);

// A name cut to at most `width` characters, the last three "..." when cut
// (width 0: the whole name). Counts UTF-8 characters, never splits one.

std::string fit_name(const std::string& name, size_t width);

// A JSON document as text. Names come from traces and binaries and need not
// be UTF-8: such bytes become U+FFFD, where nlohmann::json would throw.
// (Text views use terminal_safe(), CSV csv_field().)
template <class Json>
std::string json_text(const Json& j, int indent = 2) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}
// For the commands that show events (replay, dump): a profile-mode trace
// without chronological events (no --chrono) holds call trees only; then
// the error naming what it holds and what to run instead, else "".
std::string no_events_in_profile(const format::TraceReader& trace);

// "12%", "12.5%": a percentage given by a user, as few digits as it needs.
std::string format_percent(double pct);

// "1 snapshot", "2 snapshots".
std::string count_of(uint64_t n, const char* singular, const char* plural);

// Aligned text columns: numbers right-aligned, the columns from `left_from`
// on left-aligned, the last one not padded (names can be long). Widths are
// those of the widest cell (bytes), so no value overflows its column.
// Cells are printed terminal_safe (names come from traces and binaries).
class TextTable {
 public:
  TextTable(std::vector<std::string> headers, size_t left_from);
  void add(std::vector<std::string> row) {
    for (std::string& cell : row) cell = terminal_safe(cell);
    rows_.push_back(std::move(row));
  }
  void print(FILE* out) const;

 private:
  size_t left_from_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace callscope::views
