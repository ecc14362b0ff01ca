// `callscope replay`: the chronological listing of calls and returns, per
// thread, indented by depth, with timestamps and durations (like `uftrace
// replay`), as aligned text, CSV or JSON.
//
// It streams: a line is printed as soon as the events that decide it are read,
// so output starts at once on any trace. A call is shown when it is entered
// ("f() {") and its return when it returns ("} /* f */", with the duration);
// a call whose exit comes right after its entry (after filtering) is one line,
// "f();", found with a one-event lookahead. Only --min delays lines: a call is
// held until it has lasted --min (then it is shown) or returned sooner (then
// it is dropped with everything under it), so the delay is bounded by --min
// and the memory by the call depth. See docs/replay.md.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "views/format_util.h"
#include "format/trace_reader.h"
#include "symbolize/symbolizer.h"

namespace callscope::views {




// A duration or a time since the trace start: a number with a unit, ns, us, ms
// or s ("250ns", "1.5ms", "2s"); "0" needs none. Returns ns, rounded.
Result<uint64_t> parse_duration_ns(std::string_view text);

struct ReplayOptions {
  std::optional<uint32_t> thread;      // one thread (its # in `info`), else all, one after the other
  std::vector<std::string> functions;  // -F globs: only inside activations of these functions
  uint32_t max_depth = 0;              // 0 = any; counted from the -F function when given (it is 1)
  uint64_t min_ns = 0;                 // hide calls shorter than this
  std::optional<uint64_t> from_ns;     // time range since the trace's tick 0, inclusive
  std::optional<uint64_t> to_ns;
  OutputFormat format = OutputFormat::kText;
  bool symbols = true;                 // false: addresses instead of names
  bool off_cpu = true;                 // the kernel's context switches, where the trace has them
  bool faults = true;                  // page faults, where the trace has them (record --events faults)
  bool io = true;                      // block I/O requests, where the trace has them (record --events io)
};

enum class ReplayKind {
  kCall,       // entered, returns later: "f() {"
  kLeaf,       // entered and returned with nothing shown between: "f();"
  kReturn,     // "} /* f */"
  kUnwound,    // frame left by longjmp or an exception
  kTruncated,  // frame still open when the thread's stream ended
  kInherited,  // frame entered before this stream began (fork, after lost events)
  kStray,      // a return without a recorded call
  kLost,       // events dropped by the runtime (arg = count)
  kMark,       // arg = id
  kPause,      // recording stopped (callscope_stop, ctl stop)
  kResume,     // recording goes on after lost events or a stop
  kWait,       // the thread waited for the recorder (duration: how long), not counted in its frames
  kOffCpu,     // the thread was off its CPU (the kernel's context switches): function = the reason
               // ("[futex]", "[runnable]"), duration: how long, arg: the waker's tid (0: not known)
  kFault,      // a page fault: function = its kind ("[minor fault]"), arg: the address,
               // where: the function of the instruction that took it (empty: in the kernel)
  kIo,         // a block I/O request the thread began: function = its kind and device ("[write vda]"),
               // arg: the bytes, sector, duration: until the device completed it, error
};

const char* replay_kind_name(ReplayKind k);  // "call", "leaf", "return", ...

// One line of the listing, before it is formatted.
struct ReplayLine {
  ReplayKind kind = ReplayKind::kCall;
  uint32_t thread = 0;
  double time_ns = 0;                  // since the trace's tick 0
  uint32_t level = 0;                  // indentation: 0 = outermost shown frame
  std::string function;                // empty for lost and mark
  std::optional<double> duration_ns;   // leaf, return, unwound, truncated
  uint64_t arg = 0;                    // lost: events dropped; mark: id; truncated and
                                       // inherited: 1 inside a loss, 2 inside a stop, else 0
  std::string where;                   // fault: the function that took it; off-cpu: where its waker was
                                       // ("main > release", the waker's frames then), when traced
  // io: arg the bytes, duration_ns the latency (begun to completed; none
  // when the completion was not seen), and these:
  uint64_t sector = 0;
  int64_t error = 0;                   // the kernel's error (0: none)
};


// The pure formatters, one line each without the newline.
std::string replay_text_header();
std::string format_replay_text(const ReplayLine& line);
std::string replay_csv_header();  // thread,tick_ns,kind,depth,function,duration_ns,arg
std::string format_replay_csv(const ReplayLine& line);
std::string format_replay_json(const ReplayLine& line);

// Prints the listing. Fails when an -F glob matched no function of the
// threads shown (after printing what there was: nothing of the glob's).
Status print_replay(format::TraceReader& trace, symbolize::Symbolizer& sym, const ReplayOptions& o, FILE* out);

}  // namespace callscope::views
