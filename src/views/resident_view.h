// `callscope memory --resident`: each process's resident set by module over
// the run (format/resident.h), as text, CSV or JSON.
#pragma once

#include <cstdio>

#include "common/result.h"
#include "format/trace_reader.h"
#include "views/memory_view.h"

namespace callscope::views {

Status print_resident(format::TraceReader& trace, const MemoryOptions& o, std::FILE* out);

}  // namespace callscope::views
