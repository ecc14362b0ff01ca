// `callscope export`: a trace in the formats of the viewers people already
// use -- Perfetto, Chrome's trace events, speedscope, folded stacks, pprof.
// The writers are in export/; this reads the options and says what a format
// cannot carry.
#include <cstdio>

#include "cli/command.h"
#include "cli/view_input.h"
#include "export/aggregate_exports.h"
#include "export/stacks.h"
#include "export/timeline_exports.h"
#include "views/format_util.h"

namespace callscope::cli {
namespace {

struct Opts {
  std::string trace;
  std::string format;
  std::string output;
  std::string by = "self";
  bool merge = false;
  bool no_compress = false;
  ViewFilters filters;
};

constexpr const char* kFormats = "perfetto, chrome, speedscope, folded, pprof";

// The formats of calls in time.
Result<int> export_timeline(const Opts& o, ViewInput& in) {
  format::TraceReader& t = *in.trace;
  if (t.is_profile())
    return Error("'" + o.trace + "' holds call trees (profile mode), not calls in time: --format " + o.format +
                 " draws a timeline and cannot show them; use --format speedscope, folded or pprof, or "
                 "'callscope flame'");
  if (const views::CallSources c = views::call_sources(t); c.any_unwound())
    print_warning("export", (c.mixed() ? "the calls of " + views::count_of(c.unwound_processes, "process", "processes") +
                                             " of this trace (the others' are from hooks)"
                                       : std::string("the calls of this trace")) +
                                " were unwound at allocations: a slice is a frame seen between two allocations, not "
                                "a call's real duration");
  exporter::FunctionIds fns(in.resolve);
  exporter::TimelineInput ti{t, in.threads, fns, {in.window, in.wanted}};
  CALLSCOPE_TRY(std::unique_ptr<OutputFile> out, OutputFile::open(o.output, o.format != "chrome" && o.format != "speedscope"));
  exporter::ExportCounts counts;
  if (o.format == "perfetto") {
    CALLSCOPE_TRY(counts, exporter::write_perfetto(ti, out->file(), !o.no_compress));
  } else if (o.format == "chrome") {
    CALLSCOPE_TRY(counts, exporter::write_chrome(ti, out->file()));
  } else {
    CALLSCOPE_TRY(counts, exporter::write_speedscope_evented(ti, out->file()));
  }
  if (in.wanted && !counts.timeline.matched) return nothing_wanted(o.filters);
  CALLSCOPE_CHECK(out->commit());
  if (!out->is_stdout())
    std::fprintf(stderr, "callscope export: %s: %s, %s\n", terminal_safe(out->path()).c_str(),
                 views::count_of(counts.timeline.slices, "call", "calls").c_str(), views::format_bytes(counts.bytes).c_str());
  if (o.format != "perfetto" && t.has_sys_events())
    print_warning("export", "the kernel's events in this trace (its threads' CPU states and waits, system calls, page "
                            "faults, block I/O, CPU samples) have no place in " + o.format +
                            "'s format and are left out: --format perfetto shows them on tracks beside each "
                            "thread's calls");
  if (o.format == "chrome" && counts.bytes > exporter::kChromeJsonLarge)
    print_warning("export", views::format_bytes(counts.bytes) +
                                " of JSON: Chrome's viewer and most JSON readers slow down or fail on files this "
                                "large; --format perfetto holds the same in a fraction of the size (open it in "
                                "ui.perfetto.dev), or narrow with --from/--to, -t, -F");
  return finish_view("export", in);
}

Result<int> run(const Opts& o) {
  if (o.format.empty()) return Error(std::string("--format is required: ") + kFormats);
  const bool timeline = o.format == "perfetto" || o.format == "chrome" || o.format == "speedscope";
  const bool aggregated = o.format == "folded" || o.format == "pprof";
  if (!timeline && !aggregated) return Error("unknown --format '" + o.format + "' (valid: " + kFormats + ")");
  CALLSCOPE_TRY(exporter::Weight weight, exporter::parse_weight(o.by));
  if (o.by != "self" && o.format != "folded")
    return Error("--by weighs the lines of --format folded; " + o.format + " carries calls, total and self together");
  if (o.no_compress && o.format != "perfetto") return Error("--no-compress is for --format perfetto");
  if (o.merge && timeline && o.format != "speedscope")
    return Error("--merge is for the aggregated formats (folded, pprof, speedscope of a profile-mode trace): "
                 "a timeline keeps each thread on its own track");
  CALLSCOPE_TRY(ViewInput in, open_view(o.trace, o.filters));
  if (timeline && !(o.format == "speedscope" && in.trace->is_profile())) {
    if (o.merge) return Error("--merge: a timeline keeps each thread on its own track");
    return export_timeline(o, in);
  }
  CALLSCOPE_TRY(analysis::Profile p, load_view_profile(in, o.filters));
  exporter::StackOptions so;
  so.merge = o.merge;
  so.wanted = wanted_functions(in, p);
  const exporter::StackTree stacks = exporter::build_stacks(*in.trace, p, so);
  CALLSCOPE_TRY(std::unique_ptr<OutputFile> out, OutputFile::open(o.output, o.format == "pprof"));
  if (o.format == "folded") {
    exporter::write_folded(*in.trace, stacks, weight, out->file());
  } else if (o.format == "pprof") {
    // With record --memory: the allocation paths too (alloc_objects,
    // alloc_space, inuse_space).
    CALLSCOPE_TRY(std::optional<analysis::MemoryModel> m, memory_model(*in.trace));
    std::vector<exporter::MemorySample> memory;
    if (m) memory = exporter::memory_samples(*m, in.resolve, in.threads, in.window, o.merge, in.wanted);
    CALLSCOPE_TRY(std::string bytes, exporter::pprof_profile(*in.trace, stacks, memory));
    std::fwrite(bytes.data(), 1, bytes.size(), out->file());
  } else {
    CALLSCOPE_CHECK(exporter::write_speedscope_sampled(*in.trace, stacks, out->file()));
  }
  CALLSCOPE_CHECK(out->commit());
  return finish_view("export", in);
}

}  // namespace

Command export_command() {
  return {"export", "Write a trace for other viewers: Perfetto, Chrome, speedscope, folded stacks, pprof",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<Opts>();
            app.add_option("trace", o->trace, "Trace file")->required();
            app.add_option("-f,--format", o->format, std::string("Output format: ") + kFormats)
                ->type_name("FORMAT");
            app.add_option("-o,--output", o->output, "Write to FILE (default: standard output; a binary format "
                                                     "needs a file or a redirection)")
                ->type_name("FILE");
            app.add_option("--by", o->by,
                           "folded: what a line weighs: self (default: self time in ns, so that widths are total "
                           "time), total (the path's total time), calls")
                ->type_name("WEIGHT");
            app.add_flag("--merge", o->merge,
                         "folded, pprof, speedscope of a profile-mode trace: one tree for all threads (default: "
                         "each thread under a frame of its own, or a pprof label)");
            app.add_flag("--no-compress", o->no_compress, "perfetto: packets not compressed (for protoc --decode)");
            add_view_filters(app, o->filters);
            app.footer(
                "Formats:\n"
                "  perfetto    calls in time, a track per thread (ui.perfetto.dev, trace_processor)\n"
                "  chrome      Chrome trace-event JSON, a begin and an end event per call (chrome://tracing;\n"
                "              speedscope reads it unless its name ends in .chrome.json)\n"
                "  speedscope  speedscope.app: an evented profile per thread; of a profile-mode trace, a\n"
                "              sampled profile per thread weighted by self time\n"
                "  folded      'a;b;c N' lines (flamegraph.pl, inferno), N per --by\n"
                "  pprof       gzipped profile.proto (go tool pprof, Pyroscope, Grafana): calls, total, self;\n"
                "              with the kernel's context switches also cpu and wait (self time on and off\n"
                "              the CPU); with record --memory also alloc_objects, alloc_space, inuse_space\n"
                "The kernel's events (record --events, --sample) go to perfetto only: per thread, tracks\n"
                "of its CPU state, system calls, block I/O, page faults and CPU samples.\n"
                "Profile-mode traces hold call trees, not calls in time: folded, pprof and speedscope\n"
                "only. -F/-m keep the call paths through the functions matched, as 'report --tree'.\n"
                "See docs/export.md.");
            return [o]() -> Result<int> { return run(*o); };
          }};
}

}  // namespace callscope::cli
