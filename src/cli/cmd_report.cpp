// `callscope report TRACE`: where the time went, per function (the flat
// profile), per call path (--tree), or between a function and its callers and
// callees (--callers/--callees), as text, CSV or JSON. The analysis streams
// each thread once and symbolizes each distinct address once, at the end.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analysis/diff.h"
#include "analysis/memory.h"
#include "analysis/profile.h"
#include "analysis/report_model.h"
#include "analysis/stack_depth.h"
#include "cli/command.h"
#include "cli/options.h"
#include "cli/view_input.h"
#include "common/config.h"
#include "common/glob.h"
#include "format/trace_reader.h"
#include "stack/report.h"
#include "stack/stack.h"
#include "symbolize/symbolizer.h"
#include "views/diff_view.h"
#include "views/format_util.h"
#include "views/memory_view.h"
#include "views/profile_view.h"
#include "views/stack_depth_view.h"
#include "views/sample_view.h"
#include "views/wait_view.h"

namespace callscope::cli {
namespace {

struct Opts {
  std::string trace;
  std::string sort = "total";
  size_t top = 0;
  std::vector<std::string> function_globs, module_globs;
  std::vector<std::string> threads;
  std::vector<std::string> idle_globs;  // --idle: their self time is left out
  double min_busy = 0;                  // --min-busy PCT
  bool by_busy = false;
  bool per_thread = false;
  bool tree = false;
  bool wait = false;
  bool faults = false;
  bool samples = false;
  bool io = false;
  bool merge = false;
  uint32_t depth = 0;
  double threshold = 0;
  std::string callers, callees;
  bool stack = false;
  std::vector<std::string> static_binaries;  // --static: set stack bounds beside --stack
  std::string format = "text";
  bool no_demangle = false;
  size_t name_width = 0;  // from the settings (--name-width, CALLSCOPE_NAME_WIDTH, name_width)
  uint32_t dump = 0;  // 1-based; 0: the final state of each process
  std::vector<std::string> diff;
  std::string metric = "time";
  bool threshold_given = false;  // --threshold (a memory metric's default is 0.1, time's 0)
  // Options given that a memory --metric does not take, for its message.
  std::vector<std::string> not_for_memory;
  // Options given that --diff does not take ("--tree"), for its message.
  std::vector<std::string> not_for_diff;
};

Result<analysis::Profile> load_profile(format::TraceReader& t, const std::vector<uint32_t>& threads, uint32_t dump,
                                       const analysis::Resolver& resolve) {
  CALLSCOPE_TRY(std::vector<uint32_t> dumps, pick_dumps(t, dump));
  if (t.is_profile()) return analysis::build_profile_from_dumps(t, dumps, threads, resolve);
  return analysis::build_profile(t, threads, resolve);
}

// One side of --diff, as a flat profile per function (-F/-m choose rows
// afterwards, not call paths).
struct DiffFlat {
  std::string label;
  std::vector<analysis::NamedFlat> flat;
};

Result<DiffFlat> diff_side(const std::string& spec, const Opts& o) {
  ViewFilters f;
  f.threads = o.threads;
  f.no_demangle = o.no_demangle;
  CALLSCOPE_TRY(DiffSide side, open_diff_side(spec, o.trace, f));
  for (const std::string& w : side.in.sym->warnings()) print_warning("report", w);
  return DiffFlat{side.label, analysis::flat_ns(side.profile, 1.0 / side.in.trace->header().ticks_per_ns)};
}

Result<int> run_diff(const Opts& o) {
  if (!o.not_for_diff.empty()) {
    std::string list;
    for (const std::string& n : o.not_for_diff) list += (list.empty() ? "" : ", ") + n;
    return Error(list + (o.not_for_diff.size() == 1 ? " does" : " do") +
                 " not go with --diff, which compares the flat profiles of A and B function by function (it takes "
                 "-F, -m, -t, -n and --format); run 'callscope report' on each side for the other views");
  }
  const auto format = parse_output_format(o.format);
  if (!format) return format.error();
  CALLSCOPE_TRY(DiffFlat a, diff_side(o.diff[0], o));
  CALLSCOPE_TRY(DiffFlat b, diff_side(o.diff[1], o));
  std::vector<analysis::DiffRow> rows = analysis::diff_flat(a.flat, b.flat);
  if (!o.function_globs.empty() || !o.module_globs.empty()) {
    std::erase_if(rows, [&](const analysis::DiffRow& r) {
      return !(o.function_globs.empty() || glob_match_any(o.function_globs, r.name)) ||
             !(o.module_globs.empty() || glob_match_any(o.module_globs, r.module));
    });
    if (rows.empty()) {
      std::string what = o.function_globs.empty() ? "" : "no function matches " + quoted_list(o.function_globs);
      if (!o.module_globs.empty())
        what += (what.empty() ? "no function of a module matching " : " in a module matching ") +
                quoted_list(o.module_globs);
      return Error(what + " in A or B");
    }
  }
  views::DiffOptions d;
  d.format = *format;
  d.top = o.top;
  d.name_width = o.name_width;
  views::print_diff(rows, a.label, b.label, d, stdout);
  return 0;
}

// A thread's busy share: its observed time (after --idle) over its wall time.
double busy_share(const format::TraceReader& t, const analysis::ThreadProfile& tp) {
  const uint64_t wall = analysis::wall_ticks(t, tp.thread);
  return wall ? static_cast<double>(tp.tree.total()) / static_cast<double>(wall) * 100.0 : 100.0;
}

// --idle, --min-busy and --by-busy on the threads of `p`.
Status apply_busy_options(const format::TraceReader& t, analysis::Profile& p, const Opts& o) {
  if (!o.idle_globs.empty()) {
    bool any = false;
    for (const analysis::FunctionInfo& f : p.functions) any = any || glob_match_any(o.idle_globs, f.name);
    if (!any) return Error("--idle: no function matches " + quoted_list(o.idle_globs));
    uint64_t idle = 0;
    for (uint64_t ticks : analysis::leave_out_self_time(p, o.idle_globs)) idle += ticks;
    std::fprintf(stderr, "callscope report: %s of idle time left out (the self time of %s)\n",
                 views::format_duration_ns(t.ticks_to_ns(idle)).c_str(), quoted_list(o.idle_globs).c_str());
  }
  if (o.min_busy > 0) {
    std::string dropped;
    std::erase_if(p.threads, [&](const analysis::ThreadProfile& tp) {
      const bool idle = busy_share(t, tp) < o.min_busy;
      if (idle) dropped += (dropped.empty() ? "" : ", ") + std::to_string(tp.thread);
      return idle;
    });
    if (p.threads.empty())
      return Error("no thread was busy " + views::format_percent(o.min_busy) +
                   " of its wall time (lower --min-busy; 'report --threads' shows each thread's share)");
    if (!dropped.empty()) {
      const bool one = dropped.find(',') == std::string::npos;
      std::fprintf(stderr, "callscope report: left out thread%s %s: busy less than %s of %s wall time\n",
                   one ? "" : "s", dropped.c_str(), views::format_percent(o.min_busy).c_str(), one ? "its" : "their");
    }
  }
  if (o.by_busy)
    std::stable_sort(p.threads.begin(), p.threads.end(),
                     [&](const analysis::ThreadProfile& a, const analysis::ThreadProfile& b) {
                       return busy_share(t, a) > busy_share(t, b);
                     });
  return ok_status();
}

// --metric allocs, alloc_bytes, leaked_bytes: the call tree (or the flat
// table) of `callscope memory`, weighted by it.
Result<int> run_memory_metric(const Opts& o) {
  views::MemoryOptions mo;
  if (o.metric == "allocs") mo.sort = views::MemorySort::kAllocs;
  else if (o.metric == "alloc_bytes") mo.sort = views::MemorySort::kBytes;
  else if (o.metric == "leaked_bytes") mo.sort = views::MemorySort::kLeakedBytes;
  else return Error("unknown --metric '" + o.metric + "' (valid: time, allocs, alloc_bytes, leaked_bytes)");
  if (!o.not_for_memory.empty()) {
    std::string names;
    for (const std::string& n : o.not_for_memory) names += (names.empty() ? "" : ", ") + n;
    return Error("--metric " + o.metric + " shows the call tree (--tree) or functions by memory: it does not take " +
                 names + " ('callscope memory' has more: --by, --window, --peak, --leaks)");
  }
  if (o.trace.empty()) return Error("no trace given: callscope report TRACE --metric " + o.metric);
  CALLSCOPE_TRY(OutputFormat format, parse_output_format(o.format));
  mo.format = format;
  mo.table_only = true;
  mo.keys = {o.tree ? analysis::MemoryKey::kPath : analysis::MemoryKey::kFunction};
  mo.limit = o.top ? o.top : (o.tree ? 0 : 20);
  mo.depth = o.depth;
  if (o.threshold < 0 || o.threshold > 100) return Error("--threshold must be between 0 and 100");
  mo.threshold_pct = o.threshold_given ? o.threshold : 0.1;
  auto trace = format::TraceReader::open(o.trace);
  if (!trace) return trace.error();
  format::TraceReader& t = **trace;
  if (const std::string why = views::no_events_in_profile(t); !why.empty()) return Error(why);
  CALLSCOPE_TRY(analysis::MemoryModel m, analysis::build_memory_model(t));
  if (!m.has_memory_events)
    return Error("'" + o.trace + "' holds no memory events: --metric " + o.metric +
                 " needs a trace of 'callscope record --memory'");
  symbolize::Symbolizer sym(t, {!o.no_demangle});
  CALLSCOPE_CHECK(views::print_memory(t, sym, m, mo, stdout));
  std::fflush(stdout);
  for (const std::string& w : sym.warnings()) print_warning("report", w);
  if (const std::string w = views::loss_warning(t); !w.empty()) print_warning("report", w);
  for (const std::string& p : t.problems()) std::fprintf(stderr, "callscope report: damaged trace: %s\n", p.c_str());
  return t.problems().empty() ? 0 : 1;
}

Result<int> run(const Opts& o) {
  if (o.metric != "time") return run_memory_metric(o);
  if (!o.diff.empty()) return run_diff(o);
  if (o.trace.empty()) return Error("no trace given: callscope report TRACE (or --diff A B)");
  views::ReportOptions r;
  const auto sort = analysis::parse_sort_key(o.sort);
  if (!sort) return Error("unknown sort key '" + o.sort + "' (valid: " + analysis::sort_key_names() + ")");
  const auto format = parse_output_format(o.format);
  if (!format) return format.error();
  if (o.threshold < 0 || o.threshold > 100) return Error("--threshold must be between 0 and 100");
  if (o.min_busy < 0 || o.min_busy > 100) return Error("--min-busy must be between 0 and 100 (a percentage)");
  r.sort = *sort;
  r.format = *format;
  r.top = o.top;
  r.function_globs = o.function_globs;
  r.module_globs = o.module_globs;
  r.per_thread = o.per_thread;
  r.merge = o.merge;
  r.max_depth = o.depth;
  r.threshold_pct = o.threshold;
  r.name_width = o.name_width;

  auto trace = format::TraceReader::open(o.trace);
  if (!trace) return trace.error();
  format::TraceReader& t = **trace;
  CALLSCOPE_TRY(std::vector<uint32_t> threads, analysis::select_threads(t, o.threads));
  if (const std::string w = views::unwound_warning(t); !w.empty()) print_warning("report", w);
  symbolize::Symbolizer sym(t, {!o.no_demangle});
  if (o.stack && t.is_profile())
    return Error("--stack needs a trace of every call ('callscope record' without --mode=profile)");
  if (o.stack) {
    // Unwound frames carry no stack pointer: measured only where every
    // selected thread's calls came from hooks (a mixed trace: `-t` picks them).
    const views::CallSources c = views::call_sources(t);
    std::vector<uint32_t> unwound;
    for (uint32_t ti : threads)
      if (std::find(c.unwound_threads.begin(), c.unwound_threads.end(), ti) != c.unwound_threads.end())
        unwound.push_back(ti);
    if (!unwound.empty() && (c.hooked_threads.empty() || c.hooked_calls == 0))
      return Error("--stack needs the stack pointer of every call: the calls of this trace were unwound at "
                   "allocations (record --memory of a program without -finstrument-functions), without one");
    if (!unwound.empty()) {
      std::string hooked;
      for (size_t i = 0; i < c.hooked_threads.size() && i < 8; ++i)
        hooked += " -t " + std::to_string(c.hooked_threads[i]);
      return Error("--stack needs the stack pointer of every call: the calls of " +
                   views::count_of(unwound.size(), "thread", "threads") + " chosen (#" + std::to_string(unwound[0]) +
                   (unwound.size() > 1 ? ", ..." : "") +
                   ") were unwound at allocations, without one; the trace's hooked threads are measured with" +
                   hooked + (c.hooked_threads.size() > 8 ? " ..." : ""));
    }
  }
  if (o.stack) {
    CALLSCOPE_TRY(analysis::StackDepths depths, analysis::measure_stack(t, threads));
    // --static: each binary's worst cases, looked up by module name.
    struct Analysed {
      stack::StackModel model;
      stack::WorstCase worst;
    };
    std::vector<Analysed> analysed;
    for (const std::string& path : o.static_binaries) {
      CALLSCOPE_TRY(stack::StackModel model, stack::analyze_binary(path));
      stack::WorstCase worst = stack::compute_worst_case(model, /*hooks_are_internal=*/true);
      analysed.push_back({std::move(model), std::move(worst)});
    }
    const views::StaticLookup lookup = [&analysed](const std::string& module, uint64_t addr)
        -> std::optional<views::StaticBound> {
      for (const Analysed& a : analysed) {
        if (a.model.module != module) continue;
        const auto f = a.model.function_at(addr);
        if (!f || a.model.functions[*f].address != addr) continue;
        const stack::Depth& d = a.worst.depths[*f];
        views::StaticBound b;
        // A recording sees a function's sp at its first call (the hook):
        // what the function pushes later counts below it.
        b.below_bytes = d.bytes - std::min<uint64_t>(d.bytes, a.model.functions[*f].sp_at_first_call);
        // `external` counts here: a callback called back through another
        // module (qsort's comparator) is measured below frames the bound
        // does not count.
        b.flags = stack::flags_of(d);
        return b;
      }
      return std::nullopt;
    };
    views::print_stack_depths(t, depths, sym, *format, o.top, stdout, analysed.empty() ? nullptr : &lookup);
    for (const std::string& w : sym.warnings()) print_warning("report", w);
    for (const std::string& p : t.problems()) std::fprintf(stderr, "callscope report: damaged trace: %s\n", p.c_str());
    return t.problems().empty() ? 0 : 1;
  }
  const analysis::Resolver resolve = symbol_resolver(sym);
  // The kernel's events under the call paths (--wait, --samples, --faults):
  // the symbolizer's warnings and the damage found, then the exit status.
  const auto done = [&]() -> Result<int> {
    for (const std::string& w : sym.warnings()) print_warning("report", w);
    for (const std::string& p : t.problems()) std::fprintf(stderr, "callscope report: damaged trace: %s\n", p.c_str());
    return t.problems().empty() ? 0 : 1;
  };
  if (o.wait) {
    CALLSCOPE_CHECK(wait_view_possible(t));
    CALLSCOPE_TRY(analysis::Profile waits, analysis::build_wait_profile(t, threads, resolve));
    if (o.tree && r.format == OutputFormat::kText)
      std::printf("Time off the CPU by call path: a frame's TOTAL is the time its thread spent off the CPU under it, "
                  "CALLS the times it left; the leaves are the reasons\n\n");
    CALLSCOPE_CHECK(o.tree ? views::print_call_trees(t, waits, r, stdout) : views::print_wait_table(t, waits, r, stdout));
    return done();
  }
  if (o.samples) {
    CALLSCOPE_CHECK(kernel_view_possible(t, "--samples"));
    CALLSCOPE_TRY(analysis::Profile samples, analysis::build_sample_profile(t, threads, resolve));
    CALLSCOPE_CHECK(events_present(samples, "CPU samples", "--sample HZ (e.g. --sample 999) to see where they ran"));
    if (o.tree && r.format == OutputFormat::kText)
      std::printf("CPU samples by call path: a frame's CALLS are the samples taken under it, TOTAL and SELF the CPU "
                  "time they stand for (a sample per period of the thread's CPU time)\n\n");
    CALLSCOPE_CHECK(o.tree ? views::print_call_trees(t, samples, r, stdout)
                           : views::print_sample_table(t, samples, r, stdout));
    return done();
  }
  if (o.faults) {
    CALLSCOPE_CHECK(kernel_view_possible(t, "--faults"));
    CALLSCOPE_TRY(analysis::Profile faults, analysis::build_fault_profile(t, threads, resolve));
    CALLSCOPE_CHECK(events_present(faults, "page faults",
                                   "--events faults (e.g. --events sched,faults) to see where they were taken"));
    if (o.tree && r.format == OutputFormat::kText)
      std::printf("Page faults by call path: a frame's FAULTS are those taken under it; the leaves are their "
                  "kinds (the time a major fault waited is in report --wait)\n\n");
    r.count_label = "FAULTS";
    if (r.sort != analysis::SortKey::kName) r.sort = analysis::SortKey::kCalls;  // they have no times
    CALLSCOPE_CHECK(o.tree ? views::print_call_trees(t, faults, r, stdout) : views::print_fault_table(faults, r, stdout));
    return done();
  }
  if (o.io) {
    CALLSCOPE_CHECK(kernel_view_possible(t, "--io"));
    CALLSCOPE_TRY(analysis::Profile io, analysis::build_io_profile(t, threads, resolve));
    CALLSCOPE_CHECK(events_present(io, "block I/O requests",
                                   "--events io (e.g. --events sched,io; as root) to see who began them"));
    if (o.tree && r.format == OutputFormat::kText)
      std::printf("Block I/O by call path: a frame's REQUESTS are those begun under it; the leaves are their kinds "
                  "and devices (their latency: report --io)\n\n");
    r.count_label = "REQUESTS";
    CALLSCOPE_CHECK(o.tree ? views::print_call_trees(t, io, r, stdout) : views::print_io_table(t, io, r, stdout));
    return done();
  }
  CALLSCOPE_TRY(analysis::Profile profile, load_profile(t, threads, o.dump, resolve));
  CALLSCOPE_CHECK(apply_busy_options(t, profile, o));

  Status st = ok_status();
  if (!o.callers.empty() || !o.callees.empty())
    st = views::print_relatives(t, profile, r, o.callers, o.callees, stdout);
  else if (o.tree)
    st = views::print_call_trees(t, profile, r, stdout);
  else
    st = views::print_flat_profile(t, profile, r, stdout);
  if (!st) return st.error();

  for (const std::string& w : sym.warnings()) print_warning("report", w);
  if (const std::string w = views::loss_warning(t); !w.empty())
    print_warning("report", w);
  if (const std::string w = views::wait_warning(t, profile); !w.empty()) print_warning("report", w);
  for (const std::string& p : t.problems()) std::fprintf(stderr, "callscope report: damaged trace: %s\n", p.c_str());
  return t.problems().empty() ? 0 : 1;
}

}  // namespace

Command report_command() {
  return {"report", "Where the time went: flat profile, call trees, callers and callees",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<Opts>();
            app.add_option("trace", o->trace, "Trace file (optional with --diff of two traces)");
            app.add_option("-s,--sort", o->sort,
                           "Sort rows (and tree siblings) by: " + analysis::sort_key_names() + " (default: total)")
                ->type_name("KEY");
            app.add_option("-n,--top", o->top, "Show at most N rows per table (flat, callers, callees; 0: all)")
                ->type_name("N")
                ->check(count_check());
            // One value per occurrence (repeat the option for more), so that
            // `-t 1 TRACE` leaves TRACE to the positional argument.
            auto* fn_glob = app.add_option("-F,--function", o->function_globs,
                           "Only functions whose name matches GLOB (flat); with --tree, only the paths through them "
                           "(repeatable: any of them)")
                               ->type_name("GLOB")
                               ->allow_extra_args(false);
            auto* mod_glob = app.add_option("-m,--module", o->module_globs,
                           "Only functions of modules whose file name matches GLOB (flat); with --tree, paths through "
                           "them (repeatable: any of them)")
                                ->type_name("GLOB")
                                ->allow_extra_args(false);
            app.add_option("-t,--thread", o->threads,
                           "Only this thread: its # in 'callscope info', or a glob on thread names (repeatable)")
                ->type_name("N|GLOB")
                ->allow_extra_args(false);
            auto* per_thread =
                app.add_flag("--threads", o->per_thread, "One table per thread (flat, callers, callees) instead of merged");
            app.add_option("--idle", o->idle_globs,
                           "Leave out the self time of functions matching GLOB (time they wait: blocked in "
                           "uninstrumented code such as sleep, poll or a lock), from them and their callers "
                           "(repeatable)")
                ->type_name("GLOB")
                ->allow_extra_args(false);
            app.add_option("--min-busy", o->min_busy,
                           "Only threads whose observed time (after --idle) is at least PCT % of their wall time")
                ->type_name("PCT");
            app.add_flag("--by-busy", o->by_busy,
                         "With --threads or --tree: threads in order of their busy share (observed / wall time), "
                         "busiest first");
            auto* tree = app.add_flag("--tree", o->tree, "Call trees, one per thread");
            auto* wait = app.add_flag("--wait", o->wait,
                         "Where the threads waited and why: their time off the CPU (the kernel's context switches, "
                         "recorded by default) by the function they left it in and the reason -- [runnable] "
                         "(preempted), the system call ([futex]; [fsync D] when it slept uninterruptibly; record "
                         "--events syscalls), else the state ([sleeping], [uninterruptible], [blocked]); the disk "
                         "([fsync: disk vda]) when it slept uninterruptibly while a block request of its own was in "
                         "flight (record --events io); [major fault]; with --tree, by call path, the reasons as leaves");
            auto* faults = app.add_flag("--faults", o->faults,
                                        "Where the threads took their page faults (record --events faults): by the "
                                        "function of the instruction that took them and their kind ([minor fault], "
                                        "[major fault]; '... in the kernel]' for one taken in a system call); with "
                                        "--tree, by call path, the kinds as leaves");
            faults->excludes(wait);
            auto* samples = app.add_flag("--samples", o->samples,
                                         "Where the threads ran, from their CPU samples (record --sample HZ): per "
                                         "function the samples taken in it (SELF: the function of the sampled "
                                         "instruction -- memcpy, called by a traced function -- or [kernel]) and "
                                         "under it (TOTAL), with the CPU time they stand for; with --tree, by call "
                                         "path");
            samples->excludes(wait)->excludes(faults);
            app.add_flag("--io", o->io,
                         "The block I/O requests the threads began (record --events io): by the function that began "
                         "them, their kind and device ([write vda], [read vda], [flush vda]), with their count and "
                         "latency (start to the device's completion); with --tree, by call path")
                ->excludes(wait)
                ->excludes(faults)
                ->excludes(samples);
            app.add_flag("--merge", o->merge, "With --tree: one tree merged across threads by function name")->needs(tree);
            app.add_option("--depth", o->depth, "With --tree: show nodes down to depth N (1 = outermost; 0: all)")
                ->type_name("N")
                ->check(count_check())
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
            wait->excludes(callers)->excludes(callees)->excludes(per_thread);
            faults->excludes(callers)->excludes(callees)->excludes(per_thread);
            samples->excludes(callers)->excludes(callees)->excludes(per_thread);
            fn_glob->excludes(callers)->excludes(callees);
            mod_glob->excludes(callers)->excludes(callees);
            app.add_flag("--stack", o->stack,
                         "Measured stack use: each thread's peak depth with the call path at the peak and the "
                         "bytes of each frame on it, and per function the deepest stack seen below it (bytes)");
            app.add_option("--static", o->static_binaries,
                           "With --stack: analyse this binary (the program or a library of the trace; "
                           "repeatable) and set its static bound beside each measured figure")
                ->type_name("BINARY")
                ->needs("--stack");
            app.add_option("--format", o->format, std::string("Output: ") + kOutputFormatNames + " (default: text)")->type_name("FORMAT");
            app.add_option("--metric", o->metric,
                           "What the rows weigh: time (default), or from a 'record --memory' trace allocs, "
                           "alloc_bytes, leaked_bytes (with --tree: the call paths that allocated)")
                ->type_name("METRIC");
            app.add_flag("--no-demangle", o->no_demangle, "Show C++ names as the linker sees them");
            app.add_option("--dump", o->dump,
                           "Profile mode: show snapshot K (1, 2, ...; 'callscope info' lists them) instead of the "
                           "final state")
                ->type_name("K")
                ->check(snapshot_check());
            app.add_option("--diff", o->diff,
                           "Compare A and B function by function: each a snapshot number of TRACE or another "
                           "trace file (its final state); B - A, biggest change first; with -F, -m, -t, -n, --format")
                ->expected(2)
                ->allow_extra_args(false)
                ->type_name("A B");
            app.footer(
                "Columns: CALLS (entries), TOTAL (inclusive time; a recursive function's time\n"
                "counts once per outermost activation), SELF (time not in callees), AVG = TOTAL /\n"
                "CALLS, SELF AVG = SELF / CALLS, MIN and MAX (one call, inclusive), FIRST (the\n"
                "first call), TOTAL% (flat, text: TOTAL as a share of the table's observed time).\n"
                "Frames inherited from before the trace began (fork, lost events) add time but no\n"
                "call. Text picks a unit per value; CSV and JSON are in whole ns.\n"
                "Each table's title gives the time observed in traced functions and its share of\n"
                "the threads' wall time (their lifetime). Time a function spends blocked in\n"
                "uninstrumented code (sleep, poll, a lock) is its SELF time: --idle GLOB leaves it\n"
                "out, --min-busy PCT leaves out the threads that mostly waited.\n"
                "Profile-mode traces (docs/profile.md) show the final state of each process,\n"
                "or snapshot K with --dump K; --diff compares two snapshots or two traces.\n"
                "See docs/report.md.\n" +
                config::Flags::help_footer());
            // --config FILE and --name-width N, also from CALLSCOPE_NAME_WIDTH
            // or callscope.toml (docs/configuration.md).
            auto settings = std::make_shared<config::Flags>(app, config::report_keys());
            // What --diff refuses rather than ignore (run_diff names them).
            std::vector<CLI::Option*> not_for_diff;
            for (const char* name : {"--sort", "--threads", "--tree", "--callers", "--callees", "--stack", "--dump", "--idle",
                                     "--min-busy", "--by-busy", "--wait", "--faults", "--samples", "--io"})
              not_for_diff.push_back(app.get_option(name));
            std::vector<CLI::Option*> not_for_memory;
            for (const char* name : {"--sort", "--threads", "--callers", "--callees", "--stack", "--dump", "--idle",
                                     "--min-busy", "--by-busy", "--diff", "--merge", "--function", "--module", "--thread",
                                     "--wait", "--faults", "--samples", "--io"})
              not_for_memory.push_back(app.get_option(name));
            const CLI::Option* threshold_opt = app.get_option("--threshold");
            return [o, settings, not_for_diff, not_for_memory, threshold_opt]() -> Result<int> {
              for (const CLI::Option* opt : not_for_diff)
                if (opt->count() && !o->diff.empty()) o->not_for_diff.push_back(opt->get_name());
              for (const CLI::Option* opt : not_for_memory)
                if (opt->count() && o->metric != "time") o->not_for_memory.push_back(opt->get_name());
              o->threshold_given = threshold_opt->count() > 0;
              std::vector<std::string> warnings;
              CALLSCOPE_TRY(config::Config c, settings->resolve(&warnings));
              for (const auto& w : warnings) print_warning("report", w);
              o->name_width = c.name_width.value_or(0);
              return run(*o);
            };
          }};
}

}  // namespace callscope::cli
