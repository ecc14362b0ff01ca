// `callscope memory TRACE`: where the memory went, from a trace that
// `record --memory` wrote (docs/memory.md).
#include <cstdio>

#include "analysis/memory.h"
#include "cli/command.h"
#include "cli/options.h"
#include "format/trace_reader.h"
#include "symbolize/symbolizer.h"
#include "views/format_util.h"
#include "views/memory_view.h"

namespace callscope::cli {

Command memory_command() {
  return {"memory", "Where the memory went: allocations by function, the peak, leaks, mismatched frees (record --memory)",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string trace;
              uint64_t limit = 20;
              bool no_demangle = false;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("trace", o->trace, "Trace file (written by 'callscope record --memory')")->required();
            app.add_option("-n,--limit", o->limit, "Show the N functions that allocated most (0: all)")
                ->type_name("N")
                ->check(count_check());
            app.add_flag("--no-demangle", o->no_demangle, "Show C++ names as the linker sees them");
            app.footer(
                "A block is counted in the innermost instrumented function open in its thread\n"
                "when it was allocated; leaked: still allocated when the trace ends. A free of\n"
                "a block allocated by another family (free of a new'd block, delete of a\n"
                "malloc'd one, delete of new[]) or of a block the trace never saw allocated is\n"
                "listed as mismatched. See docs/memory.md.");
            return [o]() -> Result<int> {
              auto trace = format::TraceReader::open(o->trace);
              if (!trace) return trace.error();
              if (const std::string why = views::no_events_in_profile(**trace); !why.empty()) return Error(why);
              CALLSCOPE_TRY(analysis::MemoryModel m, analysis::build_memory_model(**trace));
              if (!m.has_memory_events)
                return Error("'" + o->trace +
                             "' holds no memory events: record the program with 'callscope record --memory'");
              symbolize::Symbolizer sym(**trace, {!o->no_demangle});
              views::MemoryOptions mo;
              mo.limit = o->limit;
              CALLSCOPE_CHECK(views::print_memory(**trace, sym, m, mo, stdout));
              for (const std::string& w : sym.warnings()) print_warning("memory", w);
              for (const std::string& p : (*trace)->problems())
                std::fprintf(stderr, "callscope memory: damaged trace: %s\n", p.c_str());
              return (*trace)->problems().empty() ? 0 : 1;
            };
          }};
}

}  // namespace callscope::cli
