// `callscope memory`: where the memory went (analysis/memory.h), as text.
#pragma once

#include <cstdio>

#include "analysis/memory.h"
#include "common/result.h"
#include "format/trace_reader.h"
#include "symbolize/symbolizer.h"

namespace callscope::views {

struct MemoryOptions {
  size_t limit = 20;  // functions shown (0: all)
};

// The summary (allocations, peak and when, leaks, mismatched frees), the
// functions that allocated most, and the mismatched frees.
Status print_memory(format::TraceReader& trace, symbolize::Symbolizer& sym, const analysis::MemoryModel& m,
                    const MemoryOptions& o, std::FILE* out);

}  // namespace callscope::views
