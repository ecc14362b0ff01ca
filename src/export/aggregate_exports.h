// Exports of the aggregated call paths (export/stacks.h): folded stacks,
// pprof's profile.proto, speedscope's sampled profiles.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "analysis/memory.h"
#include "analysis/window.h"
#include "export/stacks.h"
#include "format/trace_reader.h"

namespace callscope::exporter {

// What a line or a sample weighs.
enum class Weight { kSelf, kTotal, kCalls };
// "self", "total", "calls"; an error naming them for anything else.
Result<Weight> parse_weight(const std::string& by);

// "a;b;c N" per node whose weight is not 0, in name order. kSelf: the node's
// own self time in ns (flamegraph.pl's widths are then total time); kTotal:
// the node's total time; kCalls: its calls. ';' in a name becomes ':' (it
// would split the frame); newlines become spaces; other control bytes and
// bytes that are not UTF-8 are written \xNN, as the text views write them
// (terminal_safe): a thread's name cannot drive the terminal.
std::string folded_frame(const std::string& name);
void write_folded(const format::TraceReader& trace, const StackTree& t, Weight w, FILE* out);

// An allocation path of record --memory, for pprof: what was allocated
// there (by one thread, or all when merged) and not freed by the end.
struct MemorySample {
  std::vector<analysis::FunctionInfo> path;  // outermost first
  int64_t thread = -1;                       // -1: all threads
  uint64_t allocs = 0, bytes = 0, leaked_bytes = 0;
};

// The allocation paths of `m` (analysis/memory.h) allocated by `threads`
// inside `window`, per thread unless `merge`; only the paths through a
// wanted function when `wanted` is given.
std::vector<MemorySample> memory_samples(const analysis::MemoryModel& m, const analysis::Resolver& resolve,
                                         const std::vector<uint32_t>& threads, const analysis::TickWindow& window,
                                         bool merge, const std::function<bool(const analysis::FunctionInfo&)>& wanted);

// A gzipped profile.proto: sample types calls (count), total and self
// (nanoseconds), one sample per node with calls or time (its path leaf
// first); functions with their source file and line, one location each, a
// mapping per module; per-thread trees carry the thread as a label
// ("thread"), not a frame. Default sample type: self. With memory samples,
// three more types -- alloc_objects (count), alloc_space and inuse_space
// (bytes; in use: never freed by the end of the trace) -- and a sample per
// allocation path (0 in the time types, as the call paths have 0 in these).
Result<std::string> pprof_profile(const format::TraceReader& trace, const StackTree& t,
                                  const std::vector<MemorySample>& memory = {});

// gzip of `data` (RFC 1952), for pprof.
Result<std::string> gzip(const std::string& data);

}  // namespace callscope::exporter
