// `callscope html`: the whole trace in one self-contained page to open in
// any browser (export/html.h).
#include <algorithm>
#include <cstdio>

#include "analysis/diff.h"
#include "analysis/memory.h"
#include "analysis/stack_depth.h"
#include "cli/command.h"
#include "cli/view_input.h"
#include "common/files.h"
#include "analysis/thread_states.h"
#include "export/html.h"
#include "views/wait_view.h"
#include "views/format_util.h"
#include "views/info_view.h"
#include "views/memory_view.h"

namespace callscope::cli {
namespace {

struct Opts {
  std::string trace;
  std::string output;
  std::string title;
  ViewFilters filters;
};

// "app.trace" -> "app.html"; anything else -> "NAME.html".
std::string default_output(const std::string& trace) {
  std::string base = base_name(trace);
  if (base.size() > 6 && base.compare(base.size() - 6, 6, ".trace") == 0) base.resize(base.size() - 6);
  return base + ".html";
}

std::string describe_filters(const ViewFilters& f) {
  std::string s;
  auto add = [&](const std::string& what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    s += (s.empty() ? "" : ", ") + what;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : " ") + v[i];
  };
  add("threads", f.threads);
  add("paths through", f.function_globs);
  add("modules", f.module_globs);
  if (!f.from.empty() || !f.to.empty())
    s += (s.empty() ? "" : ", ") + std::string("from ") + (f.from.empty() ? "the start" : f.from) + " to " +
         (f.to.empty() ? "the end" : f.to);
  if (f.dump) s += (s.empty() ? "" : ", ") + std::string("snapshot ") + std::to_string(f.dump);
  return s;
}

// `callscope memory --format json` of the whole trace, or null.
Result<nlohmann::json> memory_json(format::TraceReader& t, symbolize::Symbolizer& sym) {
  CALLSCOPE_TRY(std::optional<analysis::MemoryModel> model, memory_model(t));
  if (!model) return nlohmann::json();
  const analysis::MemoryModel& m = *model;
  char* buf = nullptr;
  size_t len = 0;
  FILE* mem = open_memstream(&buf, &len);
  if (!mem) return Error("out of memory");
  views::MemoryOptions mo;
  mo.format = OutputFormat::kJson;
  mo.limit = 200;
  const Status st = views::print_memory(t, sym, m, mo, mem);
  std::fclose(mem);
  std::string text(buf, len);
  std::free(buf);
  CALLSCOPE_CHECK(st);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Error("the memory view wrote JSON that does not parse (a bug: please report it)");
  return j;
}

Result<int> run(const Opts& o) {
  CALLSCOPE_TRY(ViewInput in, open_view(o.trace, o.filters));
  CALLSCOPE_TRY(analysis::Profile p, load_view_profile(in, o.filters));
  format::TraceReader& t = *in.trace;
  exporter::FunctionIds fns(in.resolve);
  exporter::HtmlInput hi{t, p, in.threads, fns, {in.window, in.wanted}};
  hi.wanted = wanted_functions(in, p);
  const std::string program = t.processes().empty() ? "" : base_name(t.processes().front().exe);
  hi.title = o.title.empty() ? "callscope: " + (program.empty() ? o.trace : program) : o.title;
  hi.filters = describe_filters(o.filters);
  // The kernel's context switches give each thread's time running,
  // runnable and blocked (the summary's Threads table).
  CALLSCOPE_TRY(std::vector<analysis::ThreadStates> states, analysis::thread_states(t));
  hi.info = views::info_json(t, {}, states);
  hi.resolve = &in.resolve;
  if (!t.is_profile() && !(t.info().record.flags & format::kInfoUnwound)) {
    CALLSCOPE_TRY(analysis::StackDepths depths, analysis::measure_stack(t, in.threads));
    hi.stack = std::move(depths);
  }
  if (t.is_profile()) {
    // The last 100 by number (the order they were taken in, every
    // process's together), labelled with the K that --dump takes.
    const std::vector<uint32_t> numbers = analysis::snapshot_numbers(t);
    const std::vector<uint32_t> order = analysis::snapshots_by_number(t);
    const size_t n = order.size(), first = n > 100 ? n - 100 : 0;
    for (size_t j = first; j < n; ++j) {
      const uint32_t k = order[j];
      CALLSCOPE_TRY(analysis::Profile sp, analysis::build_profile_from_dumps(t, {k}, in.threads, in.resolve));
      // Each snapshot's heaviest functions: all of them fit in the page.
      std::vector<analysis::NamedFlat> rows = analysis::flat_ns(sp, 1.0 / t.header().ticks_per_ns);
      std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.v.total_ns > b.v.total_ns; });
      rows.resize(std::min(rows.size(), std::max<size_t>(200, 200000 / (n - first))));
      nlohmann::json flat = nlohmann::json::array();
      for (const analysis::NamedFlat& f : rows)
        flat.push_back({f.name, f.module, f.v.calls, std::llround(f.v.total_ns), std::llround(f.v.self_ns)});
      const auto& d = t.dumps()[k];
      char when[64];
      std::snprintf(when, sizeof when, "%.6f s", t.ticks_to_ns(d.tick) / 1e9);
      hi.snapshot_labels.push_back("snapshot " + std::to_string(numbers[k]) + " (pid " +
                                   std::to_string(t.process(d.process_index).record.pid) + ", at " + when + ")");
      hi.snapshot_flats.push_back(std::move(flat));
    }
  }
  CALLSCOPE_TRY(hi.memory, memory_json(t, *in.sym));
  // Where the threads waited: the longest waits with their call paths.
  if (!t.is_profile() && t.has_switches()) {
    CALLSCOPE_TRY(analysis::Profile waits, analysis::build_wait_profile(t, in.threads, in.resolve));
    hi.waits = views::biggest_waits(t, waits, 30);
  }
  const std::string path = o.output.empty() ? default_output(o.trace) : o.output;
  CALLSCOPE_TRY(std::unique_ptr<OutputFile> out, OutputFile::open(path, false));
  CALLSCOPE_TRY(exporter::HtmlCounts counts, exporter::write_html(hi, out->file()));
  CALLSCOPE_CHECK(out->commit());
  if (!out->is_stdout()) {
    std::string detail;
    if (counts.calls > counts.detail_calls)
      detail = "; timeline: the " + views::count_of(counts.detail_calls, "longest call", "longest calls") + " of " +
               std::to_string(counts.calls) + " drawn one by one, the others aggregated";
    std::fprintf(stderr, "callscope html: %s: %s%s\n", terminal_safe(out->path()).c_str(),
                 views::format_bytes(counts.bytes).c_str(), detail.c_str());
  }
  if (counts.bytes > (10u << 20))
    print_warning("html", "the page is " + views::format_bytes(counts.bytes) +
                              ", more than the 10 MB it is meant to stay under: browsers may be slow to open it "
                              "(narrow it with -t, -F, --from/--to; and please report the trace's shape)");
  return finish_view("html", in);
}

}  // namespace

Command html_command() {
  return {"html", "Write one self-contained HTML page with every view of a trace",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<Opts>();
            app.add_option("trace", o->trace, "Trace file")->required();
            app.add_option("-o,--output", o->output,
                           "Write the page to FILE (default: the trace's name with .html, in the current directory; "
                           "- for standard output)")
                ->type_name("FILE");
            app.add_option("--title", o->title, "The page's title")->type_name("TEXT");
            add_view_filters(app, o->filters);
            app.footer(
                "The page opens offline in any browser (its scripts, styles and data are inline): a summary of\n"
                "the run, the flat profile (sortable, filterable), the call trees per thread and merged, callers\n"
                "and callees, the flame graph, a zoomable timeline per thread, the measured stack, the\n"
                "snapshots of a profile-mode trace and their differences, and memory (record --memory).\n"
                "It stays under 10 MB whatever the trace's size: the timeline holds every call among the\n"
                "longest ones and draws the shorter ones aggregated; --from/--to give every call of a\n"
                "window. See docs/html.md.");
            return [o]() -> Result<int> { return run(*o); };
          }};
}

}  // namespace callscope::cli
