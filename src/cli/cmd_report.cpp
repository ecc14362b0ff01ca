// `callscope report TRACE`: where the time went, per function (the flat
// profile), per call path (--tree), or between a function and its callers and
// callees (--callers/--callees), as text, CSV or JSON. The analysis streams
// each thread once and symbolizes each distinct address once, at the end.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analysis/profile.h"
#include "analysis/report_model.h"
#include "cli/command.h"
#include "format/trace_reader.h"
#include "symbolize/symbolizer.h"
#include "analysis/stack_depth.h"
#include "views/profile_view.h"
#include "views/stack_depth_view.h"

namespace callscope::cli {
namespace {

// Source locations when the symbolizer provides them (a newer Symbol has
// `file` and `line`); written as a template so that either version compiles.
template <class S>
void add_location(const S& s, analysis::FunctionInfo& f) {
  if constexpr (requires { s.file; s.line; }) {
    f.file = s.file;
    f.line = s.line > 0 ? static_cast<uint32_t>(s.line) : 0;
  }
}

struct Opts {
  std::string trace;
  std::string sort = "total";
  size_t top = 0;
  std::string function_glob, module_glob;
  std::vector<std::string> threads;
  bool per_thread = false;
  bool tree = false;
  bool merge = false;
  uint32_t depth = 0;
  double threshold = 0;
  std::string callers, callees;
  bool stack = false;
  std::string format = "text";
  bool no_demangle = false;
};

Result<int> run(const Opts& o) {
  views::ReportOptions r;
  const auto sort = analysis::parse_sort_key(o.sort);
  if (!sort) return Error("unknown sort key '" + o.sort + "' (valid: " + analysis::sort_key_names() + ")");
  const auto format = parse_output_format(o.format);
  if (!format) return format.error();
  if (o.threshold < 0 || o.threshold > 100) return Error("--threshold must be between 0 and 100");
  r.sort = *sort;
  r.format = *format;
  r.top = o.top;
  r.function_glob = o.function_glob;
  r.module_glob = o.module_glob;
  r.per_thread = o.per_thread;
  r.merge = o.merge;
  r.max_depth = o.depth;
  r.threshold_pct = o.threshold;

  auto trace = format::TraceReader::open(o.trace);
  if (!trace) return trace.error();
  format::TraceReader& t = **trace;
  CALLSCOPE_TRY(std::vector<uint32_t> threads, analysis::select_threads(t, o.threads));
  symbolize::Symbolizer sym(t, {!o.no_demangle});
  if (o.stack) {
    CALLSCOPE_TRY(analysis::StackDepths depths, analysis::measure_stack(t, threads));
    views::print_stack_depths(t, depths, sym, *format, o.top, stdout);
    for (const std::string& w : sym.warnings()) std::fprintf(stderr, "callscope report: warning: %s\n", w.c_str());
    for (const std::string& p : t.problems()) std::fprintf(stderr, "callscope report: damaged trace: %s\n", p.c_str());
    return t.problems().empty() ? 0 : 1;
  }
  const analysis::Resolver resolve = [&](uint32_t process, uint64_t addr) {
    const symbolize::Symbol& s = sym.lookup(process, addr);
    analysis::FunctionInfo f{s.display(), s.module, "", 0};
    add_location(s, f);
    return f;
  };
  CALLSCOPE_TRY(analysis::Profile profile, analysis::build_profile(t, threads, resolve));

  Status st = ok_status();
  if (!o.callers.empty() || !o.callees.empty())
    st = views::print_relatives(t, profile, r, o.callers, o.callees, stdout);
  else if (o.tree)
    st = views::print_call_trees(t, profile, r, stdout);
  else
    st = views::print_flat_profile(t, profile, r, stdout);
  if (!st) return st.error();

  for (const std::string& w : sym.warnings()) std::fprintf(stderr, "callscope report: warning: %s\n", w.c_str());
  for (const analysis::ThreadProfile& tp : profile.threads) {
    if (tp.lost_events)
      std::fprintf(stderr, "callscope report: warning: thread %u lost %llu events; times around the loss are partial\n",
                   tp.thread, static_cast<unsigned long long>(tp.lost_events));
  }
  for (const std::string& p : t.problems()) std::fprintf(stderr, "callscope report: damaged trace: %s\n", p.c_str());
  return t.problems().empty() ? 0 : 1;
}

}  // namespace

Command report_command() {
  return {"report", "Where the time went: flat profile, call trees, callers and callees",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<Opts>();
            app.add_option("trace", o->trace, "Trace file")->required();
            app.add_option("-s,--sort", o->sort,
                           "Sort rows (and tree siblings) by: " + analysis::sort_key_names() + " (default: total)")
                ->type_name("KEY");
            app.add_option("-n,--top", o->top, "Show at most N rows per table (flat, callers, callees; 0: all)")->type_name("N");
            auto* fn_glob = app.add_option("-F,--function", o->function_glob,
                           "Only functions whose name matches GLOB (flat); with --tree, only the paths through them")
                               ->type_name("GLOB");
            auto* mod_glob = app.add_option("-m,--module", o->module_glob,
                           "Only functions of modules whose file name matches GLOB (flat); with --tree, paths through them")
                                ->type_name("GLOB");
            app.add_option("-t,--thread", o->threads,
                           "Only this thread: its # in 'callscope info', or a glob on thread names (repeatable)")
                ->type_name("N|GLOB");
            auto* per_thread =
                app.add_flag("--threads", o->per_thread, "One table per thread (flat, callers, callees) instead of merged");
            auto* tree = app.add_flag("--tree", o->tree, "Call trees, one per thread");
            app.add_flag("--merge", o->merge, "With --tree: one tree merged across threads by function name")->needs(tree);
            app.add_option("--depth", o->depth, "With --tree: show nodes down to depth N (1 = outermost; 0: all)")
                ->type_name("N")
                ->needs(tree);
            app.add_option("--threshold", o->threshold,
                           "With --tree: hide nodes whose total is below PCT % of the tree's total")
                ->type_name("PCT")
                ->needs(tree);
            auto* callers = app.add_option("--callers", o->callers,
                                           "Callers of the functions matching GLOB, with the time each spends in them")
                               ->type_name("GLOB");
            auto* callees = app.add_option("--callees", o->callees,
                                           "Callees of the functions matching GLOB, with the time they spend in each")
                               ->type_name("GLOB");
            tree->excludes(callers)->excludes(callees)->excludes(per_thread);
            fn_glob->excludes(callers)->excludes(callees);
            mod_glob->excludes(callers)->excludes(callees);
            app.add_flag("--stack", o->stack,
                         "Measured stack use: each thread's peak depth with the call path at the peak, and per "
                         "function the deepest stack seen below it (bytes)");
            app.add_option("--format", o->format, std::string("Output: ") + kOutputFormatNames + " (default: text)")->type_name("FORMAT");
            app.add_flag("--no-demangle", o->no_demangle, "Show C++ names as the linker sees them");
            app.footer(
                "Columns: CALLS (entries), TOTAL (inclusive time; a recursive function's time\n"
                "counts once per outermost activation), SELF (time not in callees), AVG = TOTAL /\n"
                "CALLS, SELF AVG = SELF / CALLS, MIN and MAX (one call, inclusive), FIRST (the\n"
                "first call). Frames inherited from before the trace began (fork, lost events)\n"
                "add time but no call. Text picks a unit per value; CSV and JSON are in whole ns.\n"
                "See docs/report.md.");
            return [o]() -> Result<int> { return run(*o); };
          }};
}

}  // namespace callscope::cli
