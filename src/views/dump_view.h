// `callscope dump`: raw events as text, one per line, for debugging and
// golden tests; and `--stats`, the balance of each thread and the calls of
// each function.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>

#include "common/result.h"
#include "format/trace_reader.h"
#include "symbolize/symbolizer.h"

namespace callscope::views {

struct DumpOptions {
  std::optional<uint32_t> thread;  // one thread (index in `info`), else all
  uint64_t limit = 0;              // events per thread, 0 = all
  bool symbols = true;
};

Status print_dump(format::TraceReader& trace, symbolize::Symbolizer& sym, const DumpOptions& o, FILE* out);
Status print_stats(format::TraceReader& trace, symbolize::Symbolizer& sym, const DumpOptions& o, FILE* out);

const char* event_kind_name(format::EventKind k);

}  // namespace callscope::views
