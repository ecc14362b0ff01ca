// Exports of calls in time (export/timeline.h): Perfetto's protobuf trace,
// Chrome's trace-event JSON, speedscope's evented profiles; and speedscope's
// sampled profiles of the aggregated paths, for profile-mode traces.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/result.h"
#include "export/stacks.h"
#include "export/timeline.h"
#include "format/trace_reader.h"

namespace callscope::exporter {

struct TimelineInput {
  format::TraceReader& trace;
  std::vector<uint32_t> threads;
  FunctionIds& functions;
  TimelineOptions options;
};

struct ExportCounts {
  TimelineCounts timeline;
  uint64_t bytes = 0;  // written
};

// Chrome's trace-event format (JSON object form): a begin ("B") and an end
// ("E") event per call, in time order, its module as the category; process
// and thread names as metadata; losses, stops and marks as instant events.
// Times in microseconds with ns precision, each written once (chrome.cpp:
// why not complete "X" events).
Result<ExportCounts> write_chrome(TimelineInput& in, FILE* out);
// Chrome viewers slow down, then fail, past this size (a few hundred MB).
inline constexpr uint64_t kChromeJsonLarge = 256ull << 20;

// speedscope's file format: one evented profile per thread (open and close
// events, ns since the trace start), frames with file and line.
Result<ExportCounts> write_speedscope_evented(TimelineInput& in, FILE* out);
// The same format with one sampled profile per tree of `t` (a thread, or all
// merged): a sample per path, weighted by its own self time (ns).
Status write_speedscope_sampled(const format::TraceReader& trace, const StackTree& t, FILE* out);

// Perfetto's trace (protos/perfetto/trace/trace.proto; the fields used are
// in src/export/proto/perfetto_trace.proto): a track per process and thread,
// one packet sequence per thread with interned function names, module and
// file:line annotations, and timestamps as deltas of a clock of its own; the
// packets in zlib-compressed chunks (TracePacket.compressed_packets) unless
// `compress` is false.
Result<ExportCounts> write_perfetto(TimelineInput& in, FILE* out, bool compress = true);

// A JSON string literal (quotes included); bytes that are not UTF-8 become
// U+FFFD.
std::string json_string(const std::string& s);

}  // namespace callscope::exporter
