#include "views/sample_view.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/glob.h"
#include "views/format_util.h"

namespace callscope::views {
namespace {

struct Row {
  uint64_t function = 0;  // Profile::functions
  uint64_t self = 0, self_ticks = 0, total = 0, total_ticks = 0;
};

}  // namespace

Status print_sample_table(const format::TraceReader& trace, const analysis::Profile& p, const ReportOptions& o,
                          FILE* out) {
  std::map<uint64_t, Row> rows;
  uint64_t samples = 0, ticks = 0;
  for (const analysis::ThreadProfile& tp : p.threads) {
    const analysis::CallTree& tree = tp.tree;
    for (uint32_t id = 1; id < tree.size(); ++id) {
      const analysis::Stats& s = tree.node(id).stats;
      if (s.calls == 0 || s.self == 0) continue;  // a frame with no sample of its own
      // (a node's calls are the samples under it; its own are those its self time holds)
      uint64_t own = 0;
      {
        uint64_t below = 0;
        const analysis::CallTree::Children kids = tree.children();
        for (auto k = kids.begin(id); k != kids.end(id); ++k) below += tree.node(*k).stats.calls;
        own = s.calls - std::min(s.calls, below);
      }
      samples += own;
      ticks += s.self;
      Row& r = rows[tree.node(id).key];
      r.function = tree.node(id).key;
      r.self += own;
      r.self_ticks += s.self;
      std::set<uint64_t> seen;  // a function on the path twice (recursion) counts once
      for (uint32_t n = id; n != analysis::kRootNode; n = tree.node(n).parent) {
        const uint64_t fn = tree.node(n).key;
        if (!seen.insert(fn).second) continue;
        Row& up = rows[fn];
        up.function = fn;
        up.total += own;
        up.total_ticks += s.self;
      }
    }
  }
  std::vector<Row> sorted;
  for (auto& [fn, r] : rows)
    if ((o.function_globs.empty() || glob_match_any(o.function_globs, p.functions[fn].name)) &&
        (o.module_globs.empty() || glob_match_any(o.module_globs, p.functions[fn].module)))
      sorted.push_back(r);
  if (sorted.empty() && (o.function_globs.size() || o.module_globs.size()))
    return Error("no function matching -F/-m was sampled");
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Row& a, const Row& b) { return a.self != b.self ? a.self > b.self : a.total > b.total; });
  if (o.top && sorted.size() > o.top) sorted.resize(o.top);
  const auto ns = [&](uint64_t t) { return static_cast<uint64_t>(trace.ticks_to_ns(t)); };
  const auto pct = [&](uint64_t n) {
    char b[16];
    std::snprintf(b, sizeof b, "%.1f", samples ? 100.0 * static_cast<double>(n) / static_cast<double>(samples) : 0.0);
    return std::string(b);
  };
  switch (o.format) {
    case OutputFormat::kJson: {
      nlohmann::json j;
      j["samples"] = samples;
      j["cpu_ns"] = ns(ticks);
      j["functions"] = nlohmann::json::array();
      for (const Row& r : sorted)
        j["functions"].push_back({{"function", p.functions[r.function].name},
                                  {"module", p.functions[r.function].module},
                                  {"self_samples", r.self},
                                  {"self_cpu_ns", ns(r.self_ticks)},
                                  {"total_samples", r.total},
                                  {"total_cpu_ns", ns(r.total_ticks)}});
      std::fprintf(out, "%s\n", json_text(j).c_str());
      break;
    }
    case OutputFormat::kCsv:
      std::fprintf(out, "function,module,self_samples,self_cpu_ns,total_samples,total_cpu_ns\n");
      for (const Row& r : sorted)
        std::fprintf(out, "%s,%s,%llu,%llu,%llu,%llu\n", csv_field(p.functions[r.function].name).c_str(),
                     csv_field(p.functions[r.function].module).c_str(), static_cast<unsigned long long>(r.self),
                     static_cast<unsigned long long>(ns(r.self_ticks)), static_cast<unsigned long long>(r.total),
                     static_cast<unsigned long long>(ns(r.total_ticks)));
      break;
    case OutputFormat::kText: {
      std::fprintf(out, "CPU samples: %llu, %s of CPU, by the function they were taken in (SELF) and under (TOTAL)\n\n",
                   static_cast<unsigned long long>(samples), format_duration_ns(static_cast<double>(ns(ticks))).c_str());
      TextTable t({"SELF", "SELF%", "SELF CPU", "TOTAL", "TOTAL%", "TOTAL CPU", "MODULE", "FUNCTION"}, 6);
      for (const Row& r : sorted)
        t.add({std::to_string(r.self), pct(r.self), format_duration_ns(static_cast<double>(ns(r.self_ticks))),
               std::to_string(r.total), pct(r.total), format_duration_ns(static_cast<double>(ns(r.total_ticks))),
               p.functions[r.function].module, fit_name(p.functions[r.function].name, o.name_width)});
      t.print(out);
      break;
    }
  }
  return ok_status();
}

}  // namespace callscope::views
