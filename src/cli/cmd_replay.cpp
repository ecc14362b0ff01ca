// `callscope replay TRACE`: the chronological listing of calls and returns of
// each thread, with filters (-F, depth, --min, time range, thread) and text,
// CSV or JSON output. The work is in views/replay_view.
#include <cstdio>

#include "cli/command.h"
#include "cli/options.h"
#include "format/trace_reader.h"
#include "symbolize/symbolizer.h"
#include "views/format_util.h"
#include "views/replay_view.h"

namespace callscope::cli {
Command replay_command() {
  return {"replay", "List calls and returns in time order, per thread, with durations",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string trace;
              int64_t thread = -1;
              std::vector<std::string> functions;
              uint32_t depth = 0;
              std::string min, from, to;
              std::string format = "text";
              bool no_symbols = false;
              bool no_off_cpu = false;
              bool no_faults = false;
              bool no_io = false;
              bool no_demangle = false;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("trace", o->trace, "Trace file")->required();
            app.add_option("-t,--thread", o->thread, "Only this thread (its # in 'callscope info')")
                ->type_name("N")
                ->check(thread_index_check());
            app.add_option("-F,--function", o->functions,
                           "Only inside calls of functions matching this glob (or address), repeatable")
                ->allow_extra_args(false);
            app.add_option("-D,--depth", o->depth, "At most N levels of calls (counted from the -F function; 0: all)")
                ->type_name("N")
                ->check(count_check());
            app.add_option("--min", o->min, "Hide calls shorter than this (10us, 1.5ms)")->check(duration_check());
            app.add_option("--from", o->from, "Start at this time since the trace start (1.5ms)")
                ->check(duration_check());
            app.add_option("--to", o->to, "Stop at this time since the trace start")->check(duration_check());
            app.add_option("--format", o->format, "Output: text, csv or json")->check(format_check());
            app.add_flag("--no-symbols", o->no_symbols, "Show addresses, not function names");
            app.add_flag("--no-off-cpu", o->no_off_cpu,
                         "Leave out the lines of time off the CPU (the kernel's context switches, recorded by "
                         "default: '/* off the CPU: [futex], woken by tid 123 */', its duration, inside the frames "
                         "it happened in)");
            app.add_flag("--no-faults", o->no_faults,
                         "Leave out the page faults (record --events faults: '/* [minor fault] at 0x7f2a10 in "
                         "memset */', inside the frames they happened in)");
            app.add_flag("--no-io", o->no_io,
                         "Leave out the block I/O requests (record --events io: '/* [write vda] 4096 bytes at "
                         "sector 123 */' with the time until the device completed it, inside the frames that "
                         "began them)");
            app.add_flag("--no-demangle", o->no_demangle, "Show C++ names as the linker sees them");
            app.footer(
                "Lines: 'f() {' a call, '} /* f */' its return with the duration, 'f();' a call\n"
                "that returned with nothing shown inside it. --min holds a call until it has\n"
                "lasted that long, so lines may come late by up to that much. See docs/replay.md.");
            return [o]() -> Result<int> {
              views::ReplayOptions r;
              if (o->thread >= 0) r.thread = static_cast<uint32_t>(o->thread);
              r.functions = o->functions;
              r.max_depth = o->depth;
              // Validated by the checks above.
              if (!o->min.empty()) r.min_ns = *views::parse_duration_ns(o->min);
              if (!o->from.empty()) r.from_ns = *views::parse_duration_ns(o->from);
              if (!o->to.empty()) r.to_ns = *views::parse_duration_ns(o->to);
              r.format = *parse_output_format(o->format);
              r.symbols = !o->no_symbols;
              r.off_cpu = !o->no_off_cpu;
              r.faults = !o->no_faults;
              r.io = !o->no_io;
              if (r.from_ns && r.to_ns && *r.from_ns > *r.to_ns)
                return Error("--from " + o->from + " is after --to " + o->to);

              auto trace = format::TraceReader::open(o->trace);
              if (!trace) return trace.error();
              if (const std::string why = views::no_events_in_profile(**trace); !why.empty()) return Error(why);
              symbolize::Symbolizer sym(**trace, {!o->no_demangle});
              auto st = views::print_replay(**trace, sym, r, stdout);
              std::fflush(stdout);
              for (const std::string& w : sym.warnings())
                print_warning("replay", w);
              if (const std::string w = views::loss_warning(**trace); !w.empty())
                print_warning("replay", w);
              if (!st) return st.error();
              for (const std::string& p : (*trace)->problems())
                std::fprintf(stderr, "callscope replay: damaged trace: %s\n", p.c_str());
              return (*trace)->problems().empty() ? 0 : 1;
            };
          }};
}

}  // namespace callscope::cli
