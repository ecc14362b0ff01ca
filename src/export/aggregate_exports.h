// Exports of the aggregated call paths (export/stacks.h): folded stacks,
// pprof's profile.proto, speedscope's sampled profiles.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/result.h"
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
// would split the frame); newlines become spaces.
std::string folded_frame(const std::string& name);
void write_folded(const format::TraceReader& trace, const StackTree& t, Weight w, FILE* out);

// A gzipped profile.proto: sample types calls (count), total and self
// (nanoseconds), one sample per node with calls or time (its path leaf
// first); functions with their source file and line, one location each, a
// mapping per module; per-thread trees carry the thread as a label
// ("thread"), not a frame. Default sample type: self.
Result<std::string> pprof_profile(const format::TraceReader& trace, const StackTree& t);

// gzip of `data` (RFC 1952), for pprof.
Result<std::string> gzip(const std::string& data);

}  // namespace callscope::exporter
