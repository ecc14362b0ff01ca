// `callscope flame`: an interactive SVG flame graph of a trace's call paths,
// or a differential one of two traces or two snapshots (--diff A B).
#include <cstdio>

#include "cli/command.h"
#include "cli/view_input.h"
#include "common/files.h"
#include "export/flame.h"
#include "views/format_util.h"

namespace callscope::cli {
namespace {

struct Opts {
  std::string trace;
  std::string output;
  std::string by = "self";
  std::string title;
  bool icicle = false;
  bool merge = false;
  bool wait = false;
  bool samples = false;
  uint32_t width = 1200;
  std::vector<std::string> diff;
  ViewFilters filters;
};

// "app arg1 arg2 · app.trace": what the graph is of.
std::string describe_trace(const format::TraceReader& t, const std::string& label) {
  std::string program;
  if (!t.processes().empty()) {
    const format::ProcessInfo& p = t.processes().front();
    program = base_name(p.exe);
    for (size_t i = 1; i < p.argv.size() && program.size() < 80; ++i) program += " " + p.argv[i];
  }
  return (program.empty() ? "" : program + " · ") + label;
}

exporter::StackOptions stack_options(const ViewInput& in, const analysis::Profile& p, bool merge) {
  exporter::StackOptions so;
  so.merge = merge;
  so.wanted = wanted_functions(in, p);
  return so;
}

Result<int> write(const Opts& o, const std::function<Result<exporter::FlameCounts>(FILE*)>& draw,
                  const ViewInput& in) {
  CALLSCOPE_TRY(std::unique_ptr<OutputFile> out, OutputFile::open(o.output, false));
  CALLSCOPE_TRY(exporter::FlameCounts counts, draw(out->file()));
  CALLSCOPE_CHECK(out->commit());
  if (!out->is_stdout())
    std::fprintf(stderr, "callscope flame: %s: %s, %s\n", terminal_safe(out->path()).c_str(),
                 views::count_of(counts.frames, "frame", "frames").c_str(), views::format_bytes(counts.bytes).c_str());
  if (counts.elided)
    print_warning("flame", views::count_of(counts.elided, "frame was", "frames were") +
                               " too narrow to draw among the widest " + std::to_string(counts.frames) +
                               " (narrow the graph with -F, -t, --from/--to)");
  return finish_view("flame", in);
}

Result<int> run(const Opts& o) {
  CALLSCOPE_TRY(exporter::Weight by, exporter::parse_weight(o.by));
  if (o.width < 200 || o.width > 100000) return Error("--width takes 200 to 100000 pixels");
  exporter::FlameOptions fo;
  fo.icicle = o.icicle;
  fo.by = by;
  fo.width = o.width;
  if (!o.diff.empty()) {
    if (o.wait || o.samples) return Error(std::string(o.wait ? "--wait" : "--samples") + " does not go with --diff");
    if (o.diff.size() != 2) return Error("--diff takes two sides: --diff A B (traces, or snapshot numbers of TRACE)");
    if (o.filters.dump) return Error("--dump does not go with --diff: give the snapshots as --diff A B");
    CALLSCOPE_TRY(DiffSide a, open_diff_side(o.diff[0], o.trace, o.filters));
    CALLSCOPE_TRY(DiffSide b, open_diff_side(o.diff[1], o.trace, o.filters));
    // Threads of two runs do not pair up: the paths are compared merged.
    const exporter::StackTree ta = exporter::build_stacks(*a.in.trace, a.profile, stack_options(a.in, a.profile, true));
    const exporter::StackTree tb = exporter::build_stacks(*b.in.trace, b.profile, stack_options(b.in, b.profile, true));
    fo.title = o.title.empty() ? "Differential flame graph" : o.title;
    fo.subtitle = a.label + " → " + b.label;
    for (const std::string& w : a.in.sym->warnings()) print_warning("flame", w);
    return write(
        o, [&](FILE* f) { return exporter::write_flame_diff(*a.in.trace, ta, *b.in.trace, tb, fo, f); }, b.in);
  }
  if (o.trace.empty()) return Error("a trace is required (or --diff A B)");
  CALLSCOPE_TRY(ViewInput in, open_view(o.trace, o.filters));
  CALLSCOPE_TRY(analysis::Profile p, o.wait      ? load_wait_profile(in, o.filters)
                                      : o.samples ? load_sample_profile(in, o.filters)
                                                  : load_view_profile(in, o.filters));
  const exporter::StackTree t = exporter::build_stacks(*in.trace, p, stack_options(in, p, o.merge));
  fo.title = o.title.empty() ? std::string(o.wait ? "Off-CPU " : o.samples ? "CPU-sampled " : "") +
                                   (o.icicle ? "Icicle graph" : "Flame graph")
                             : o.title;
  if (o.wait && t.nodes.front().ticks == 0) print_warning("flame", "the threads never left their CPUs: the graph is empty");
  std::string label = o.trace;
  if (in.trace->is_profile())
    label += o.filters.dump ? " snapshot " + std::to_string(o.filters.dump) : " (final state)";
  fo.subtitle = describe_trace(*in.trace, label);
  return write(o, [&](FILE* f) { return exporter::write_flame(*in.trace, t, fo, f); }, in);
}

}  // namespace

Command flame_command() {
  return {"flame", "Draw a trace's call paths as an interactive SVG flame graph (or --diff two)",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<Opts>();
            app.add_option("trace", o->trace, "Trace file (with --diff: the trace whose snapshots A and B are)");
            app.add_option("-o,--output", o->output, "Write the SVG to FILE (default: standard output)")
                ->type_name("FILE");
            app.add_flag("--icicle", o->icicle, "Root on top, callees below (default: a flame, root at the bottom)");
            app.add_option("--by", o->by,
                           "What a frame's width is: self (default: the self time of the frame and all above it, "
                           "that is its total time), total (each call path's total time), calls (its calls and "
                           "those above it)")
                ->type_name("WEIGHT");
            app.add_flag("--merge", o->merge, "One graph for all threads (default: a frame per thread at the root)");
            app.add_flag("--wait", o->wait,
                         "Off-CPU graph: the time the threads spent off their CPUs (the kernel's context switches, "
                         "recorded by default), by the call path they left in, the reason on top: [runnable] "
                         "(preempted), the system call ([futex], [fsync D] when it slept uninterruptibly; "
                         "record --events syscalls), else the state ([sleeping], [uninterruptible], [blocked]); "
                         "[fsync: disk vda] while a block request of its own was in flight (record --events io)");
            app.add_flag("--samples", o->samples,
                         "CPU graph from the threads' CPU samples (record --sample HZ): each sample's CPU time under "
                         "the call path it was taken in, in the function of its instruction (memcpy above the traced "
                         "function that called it), [kernel] for the kernel's code")
                ->excludes("--wait");
            app.add_option("--diff", o->diff,
                           "Differential graph of A and B: two traces, or two snapshot numbers of TRACE; drawn as B, "
                           "red where a frame's own weight grew, blue where it shrank (threads merged)")
                ->expected(2)
                ->allow_extra_args(false)
                ->type_name("A B");
            app.add_option("--title", o->title, "The graph's heading")->type_name("TEXT");
            app.add_option("--width", o->width, "Width in pixels (default 1200)")->type_name("PX");
            add_view_filters(app, o->filters);
            app.footer(
                "Open the SVG in a browser: click a frame to zoom into it, 'Reset Zoom' (or Escape) to go back,\n"
                "'Search' (or Ctrl-F) to highlight functions by regular expression and see their share;\n"
                "hover for calls, total and self time. The file is self-contained and the same trace gives the\n"
                "same bytes. Profile-mode traces: the final state, or --dump K. See docs/flame.md.");
            return [o]() -> Result<int> { return run(*o); };
          }};
}

}  // namespace callscope::cli
