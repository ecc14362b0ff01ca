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
#include "views/replay_view.h"

namespace callscope::cli {

Command memory_command() {
  return {"memory",
          "Where the memory went: by function, call path, module, tag; impacting and transient, peak, leaks, "
          "timeline, sizes, mismatched frees (record --memory)",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string trace;
              std::string by, window, transient_under = "10ms";
              std::string format = "text";
              uint64_t limit = 20;
              uint32_t depth = 0, width = 60;
              double threshold = 0.1;
              bool peak = false, leaks = false, timeline = false, sizes = false, resident = false;
              bool no_demangle = false;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("trace", o->trace, "Trace file (written by 'callscope record --memory')")->required();
            app.add_option("--by", o->by,
                           "Rows keyed by KEYS, comma-separated: function, path (a call tree), module, tag, thread, "
                           "process (default: a table by process when there are several, one by module, one by tag "
                           "when there are tags, one by function)")
                ->type_name("KEYS");
            app.add_option("--window", o->window,
                           "Count what happens between FROM and TO: times since the trace start (1.5s) or the text of "
                           "marks (callscope_mark); either side may be left empty")
                ->type_name("FROM..TO");
            app.add_option("--transient-under", o->transient_under,
                           "Transient blocks freed within this long of their allocation are counted short-lived")
                ->type_name("DURATION")
                ->check(duration_check());
            auto* peak = app.add_flag("--peak", o->peak, "What was live at the peak of outstanding bytes, by call path (or --by)");
            auto* leaks = app.add_flag("--leaks", o->leaks, "What was never freed, by call path (or --by)");
            auto* timeline =
                app.add_flag("--timeline", o->timeline, "Outstanding bytes over time, by module (or the first --by key)");
            auto* sizes = app.add_flag("--sizes", o->sizes, "Sizes of the blocks allocated, by function (or --by)");
            auto* resident = app.add_flag("--resident", o->resident,
                                          "Each process's resident set by module (code, data), anonymous memory, "
                                          "heap and stack: at its start, its highest and its end (Rss, Pss)");
            peak->excludes(leaks)->excludes(timeline)->excludes(sizes)->excludes(resident);
            leaks->excludes(timeline)->excludes(sizes)->excludes(resident);
            timeline->excludes(sizes)->excludes(resident);
            sizes->excludes(resident);
            app.add_option("-n,--limit", o->limit, "Rows per table (0: all)")->type_name("N")->check(count_check());
            app.add_option("--depth", o->depth, "Call path trees: levels shown (0: all)")->type_name("N")->check(count_check());
            app.add_option("--threshold", o->threshold,
                           "Call path trees: hide paths below PCT % of the total (default 0.1; 0: show all)")
                ->type_name("PCT")
                ->check(CLI::Range(0.0, 100.0));
            app.add_option("--width", o->width, "--timeline: columns (time spans)")->type_name("N")->check(count_check());
            app.add_option("--format", o->format, std::string("Output: ") + kOutputFormatNames + " (default: text)")
                ->type_name("FORMAT")
                ->check(format_check());
            app.add_flag("--no-demangle", o->no_demangle, "Show C++ names as the linker sees them");
            app.footer(
                "A block is counted under the call path open in its thread when it was\n"
                "allocated (function: the innermost instrumented function on it; module: the\n"
                "nearest module on it that is not the C or C++ library's), and under the tag\n"
                "pushed then (callscope_tag_push). In a window: impacting blocks were allocated\n"
                "in it and not freed in it, transient ones allocated and freed in it; OLD FREED\n"
                "and OLD KEPT were allocated before it and freed in it, or not. Without a window\n"
                "the window is the whole trace: impacting is what leaked. PEAK: the highest\n"
                "outstanding bytes (of the row's blocks) in the window. A free of a block of\n"
                "another family (free of a new'd block, delete of a malloc'd one) or of a block\n"
                "the trace never saw allocated is listed as mismatched. A process's blocks end\n"
                "with it: those it never freed are its leaks, no longer outstanding after its\n"
                "exit or exec. A fork child's frees of blocks its parent had at the fork pair\n"
                "with them (they stay the parent's). In a trace of several processes, rows of\n"
                "functions, paths and threads say their process. See docs/memory.md.");
            return [o]() -> Result<int> {
              auto trace = format::TraceReader::open(o->trace);
              if (!trace) return trace.error();
              if (const std::string why = views::no_events_in_profile(**trace); !why.empty()) return Error(why);
              views::MemoryOptions mo;
              if (!o->by.empty()) {
                auto keys = analysis::parse_memory_keys(o->by);
                if (!keys) return Error("--by: " + keys.error().message());
                mo.keys = *keys;
              }
              if (!o->window.empty()) {
                CALLSCOPE_TRY(mo.window, views::parse_memory_window(**trace, o->window));
                mo.window_text = o->window;
              }
              mo.short_ns = *views::parse_duration_ns(o->transient_under);
              mo.mode = o->peak       ? views::MemoryMode::kPeak
                        : o->leaks    ? views::MemoryMode::kLeaks
                        : o->timeline ? views::MemoryMode::kTimeline
                        : o->sizes    ? views::MemoryMode::kSizes
                        : o->resident ? views::MemoryMode::kResident
                                      : views::MemoryMode::kSummary;
              mo.limit = o->limit;
              mo.depth = o->depth;
              mo.threshold_pct = o->threshold;
              mo.width = o->width ? o->width : 60;
              mo.format = *parse_output_format(o->format);
              CALLSCOPE_TRY(analysis::MemoryModel m, analysis::build_memory_model(**trace));
              if (!m.has_memory_events && !(o->resident && !(*trace)->resident().empty()))
                return Error("'" + o->trace +
                             "' holds no memory events: record the program with 'callscope record --memory'");
              symbolize::Symbolizer sym(**trace, {!o->no_demangle});
              CALLSCOPE_CHECK(views::print_memory(**trace, sym, m, mo, stdout));
              std::fflush(stdout);
              for (const std::string& w : sym.warnings()) print_warning("memory", w);
              if (const std::string w = views::loss_warning(**trace); !w.empty()) print_warning("memory", w);
              for (const std::string& p : (*trace)->problems())
                std::fprintf(stderr, "callscope memory: damaged trace: %s\n", p.c_str());
              return (*trace)->problems().empty() ? 0 : 1;
            };
          }};
}

}  // namespace callscope::cli
