// `callscope memory` (and `report --metric alloc_bytes`): where the memory
// went (analysis/memory.h), as text, CSV or JSON.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "analysis/memory.h"
#include "common/output_format.h"
#include "common/result.h"
#include "format/trace_reader.h"
#include "symbolize/symbolizer.h"

namespace callscope::views {

enum class MemoryMode {
  kSummary,   // the summary, then tables by module, tag and function (or --by)
  kPeak,      // what was live at the peak
  kLeaks,     // what was never freed
  kTimeline,  // outstanding bytes over time
  kSizes,     // sizes of the blocks
  kResident,  // each process's resident set by module over time
};

// What the rows are sorted by (report --metric).
enum class MemorySort { kBytes, kAllocs, kLeakedBytes, kPeakBytes };

struct MemoryOptions {
  MemoryMode mode = MemoryMode::kSummary;
  std::vector<analysis::MemoryKey> keys;  // empty: the mode's default
  analysis::MemoryWindow window;
  std::string window_text;       // as given, for the title ("" : the whole trace)
  uint64_t short_ns = 10'000'000;  // --transient-under
  size_t limit = 20;             // rows per table (0: all)
  uint32_t depth = 0;            // path trees: levels shown (0: all)
  double threshold_pct = 0.1;    // path trees: nodes below this share of the total are hidden
  bool table_only = false;       // text: the table alone, no summary (report --metric)
  uint32_t width = 60;           // timeline: columns
  MemorySort sort = MemorySort::kBytes;
  OutputFormat format = OutputFormat::kText;
};

// "1.5s..3s", "1s..", "..mark-name", "start..stop": the window in ticks of
// `trace`. Each side a time since the trace start (1.5ms) or the text of a
// mark (callscope_mark); an empty side is the trace's start or end.
Result<analysis::MemoryWindow> parse_memory_window(const format::TraceReader& trace, const std::string& text);

Status print_memory(format::TraceReader& trace, symbolize::Symbolizer& sym, const analysis::MemoryModel& m,
                    const MemoryOptions& o, std::FILE* out);

}  // namespace callscope::views
