// `callscope dump TRACE`: every event as a line of text, or (--stats) the
// balance of each thread and the calls of each function.
#include <cstdio>

#include "cli/command.h"
#include "cli/options.h"
#include "format/trace_reader.h"
#include "symbolize/symbolizer.h"
#include "views/dump_view.h"
#include "views/format_util.h"

namespace callscope::cli {

Command dump_command() {
  return {"dump", "Print the raw events of a trace as text (for debugging and tests)",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string trace;
              int64_t thread = -1;
              uint64_t limit = 0;
              bool stats = false;
              bool no_symbols = false;
              bool no_demangle = false;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("trace", o->trace, "Trace file")->required();
            app.add_option("-t,--thread", o->thread, "Only this thread (its # in 'callscope info')")
                ->type_name("N")
                ->check(thread_index_check());
            app.add_option("-n,--limit", o->limit, "At most N events per thread (0: all)")->type_name("N")->check(count_check());
            app.add_flag("--stats", o->stats, "Per-thread balance of entries and exits, and calls per function");
            app.add_flag("--no-symbols", o->no_symbols, "Show addresses, not function names");
            app.add_flag("--no-demangle", o->no_demangle, "Show C++ names as the linker sees them");
            app.footer(
                "Event kinds: entry, exit, unwound (frame left by longjmp or an exception),\n"
                "truncated (frame open when the thread's stream ended), inherited (frame\n"
                "opened before the stream began: fork), stray-exit, lost (events dropped).");
            return [o]() -> Result<int> {
              auto trace = format::TraceReader::open(o->trace);
              if (!trace) return trace.error();
              if (const std::string why = views::no_events_in_profile(**trace); !why.empty()) return Error(why);
              views::DumpOptions d;
              if (o->thread >= 0) d.thread = static_cast<uint32_t>(o->thread);
              d.limit = o->limit;
              d.symbols = !o->no_symbols;
              symbolize::Symbolizer sym(**trace, {!o->no_demangle});
              auto st = o->stats ? views::print_stats(**trace, sym, d, stdout) : views::print_dump(**trace, sym, d, stdout);
              if (!st) return st.error();
              for (const std::string& w : sym.warnings()) print_warning("dump", w);
              for (const std::string& p : (*trace)->problems())
                std::fprintf(stderr, "callscope dump: damaged trace: %s\n", p.c_str());
              return (*trace)->problems().empty() ? 0 : 1;
            };
          }};
}

}  // namespace callscope::cli
