// `callscope memory` as text (memory_view.h).
#include "views/memory_view.h"

#include "views/format_util.h"

namespace callscope::views {
namespace {

namespace fmt = callscope::format;

std::string function_name(symbolize::Symbolizer& sym, uint32_t process, uint64_t fn, uint64_t tick) {
  if (fn == 0) return "[outside every instrumented function]";
  return terminal_safe(sym.lookup(process, fn, tick).display());
}

}  // namespace

Status print_memory(format::TraceReader& trace, symbolize::Symbolizer& sym, const analysis::MemoryModel& m,
                    const MemoryOptions& o, std::FILE* out) {
  std::fprintf(out, "allocations: %llu (%s), frees: %llu\n", static_cast<unsigned long long>(m.allocs),
               format_bytes(m.bytes).c_str(), static_cast<unsigned long long>(m.frees));
  std::fprintf(out, "peak:        %s outstanding, first at %s\n", format_bytes(m.peak_bytes).c_str(),
               format_timestamp_ns(trace.ticks_to_ns(m.peak_tick)).c_str());
  std::fprintf(out, "leaked:      %s (%s) still allocated at the end\n",
               count_of(m.leaked, "block", "blocks").c_str(), format_bytes(m.leaked_bytes).c_str());
  if (m.mismatch_count)
    std::fprintf(out, "mismatched:  %s (listed below)\n", count_of(m.mismatch_count, "free", "frees").c_str());
  std::fprintf(out, "\n%8s %12s %8s %8s %12s  %s\n", "ALLOCS", "BYTES", "FREED", "LEAKED", "LEAKED BYTES",
               "FUNCTION (innermost instrumented, at the allocation)");
  size_t shown = 0;
  for (const analysis::MemorySite& s : m.sites) {
    if (o.limit && shown++ >= o.limit) break;
    std::fprintf(out, "%8llu %12llu %8llu %8llu %12llu  %s\n", static_cast<unsigned long long>(s.allocs),
                 static_cast<unsigned long long>(s.bytes), static_cast<unsigned long long>(s.freed),
                 static_cast<unsigned long long>(s.leaked), static_cast<unsigned long long>(s.leaked_bytes),
                 function_name(sym, s.process, s.fn, s.tick).c_str());
  }
  if (o.limit && m.sites.size() > o.limit)
    std::fprintf(out, "(%zu more functions: -n 0 shows all)\n", m.sites.size() - o.limit);
  if (!m.mismatches.empty()) {
    std::fprintf(out, "\nmismatched frees:\n");
    for (const analysis::MemoryMismatch& x : m.mismatches) {
      const std::string where = function_name(sym, x.process, x.free_fn, x.tick);
      if (x.allocated_by == 0) {
        std::fprintf(out, "  %s  thread %u: %s of %s, a block the trace never saw allocated, in %s\n",
                     format_timestamp_ns(trace.ticks_to_ns(x.tick)).c_str(), x.thread, fmt::alloc_op_name(x.freed_by),
                     format_hex(x.ptr).c_str(), where.c_str());
      } else {
        std::fprintf(out, "  %s  thread %u: %s of %s, allocated by %s in %s, in %s\n",
                     format_timestamp_ns(trace.ticks_to_ns(x.tick)).c_str(), x.thread, fmt::alloc_op_name(x.freed_by),
                     format_hex(x.ptr).c_str(), fmt::alloc_op_name(x.allocated_by),
                     function_name(sym, x.process, x.alloc_fn, x.tick).c_str(), where.c_str());
      }
    }
    if (m.mismatch_count > m.mismatches.size())
      std::fprintf(out, "  (%llu more)\n", static_cast<unsigned long long>(m.mismatch_count - m.mismatches.size()));
  }
  return ok_status();
}

}  // namespace callscope::views
