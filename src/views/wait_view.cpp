#include "views/wait_view.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "common/glob.h"
#include "views/format_util.h"

namespace callscope::views {
namespace {

struct Row {
  uint64_t function = 0;  // where the thread left the CPU (Profile::functions); ~0: outside every frame
  uint64_t reason = 0;    // Profile::functions of the reason leaf
  uint64_t ticks = 0, count = 0, max = 0;
};

constexpr uint64_t kOutside = ~uint64_t{0};

// f(thread profile, node) for each leaf of the wait trees: the reasons.
template <class F>
void for_each_reason(const analysis::Profile& p, F&& f) {
  for (const analysis::ThreadProfile& tp : p.threads) {
    const analysis::CallTree::Children kids = tp.tree.children();
    for (uint32_t id = 1; id < tp.tree.size(); ++id)
      if (kids.begin(id) == kids.end(id)) f(tp, id);
  }
}

bool wanted(const analysis::FunctionInfo& f, const ReportOptions& o) {
  return (o.function_globs.empty() || glob_match_any(o.function_globs, f.name)) &&
         (o.module_globs.empty() || glob_match_any(o.module_globs, f.module));
}

// The leaves by the function above them and reason, those -F/-m want,
// largest first (by time, or by count); `all` gets the sum of them all.
std::vector<Row> leaf_rows(const analysis::Profile& p, const ReportOptions& o, bool by_count, Row& all) {
  std::map<std::pair<uint64_t, uint64_t>, Row> rows;
  for_each_reason(p, [&](const analysis::ThreadProfile& tp, uint32_t id) {
    const analysis::CallNode& n = tp.tree.node(id);
    const uint64_t fn = n.parent == analysis::kRootNode ? kOutside : tp.tree.node(n.parent).key;
    if ((o.function_globs.size() || o.module_globs.size()) && (fn == kOutside || !wanted(p.functions[fn], o))) return;
    Row& r = rows[{fn, n.key}];
    r.function = fn;
    r.reason = n.key;
    r.ticks += n.stats.self;
    r.count += n.stats.calls;
    r.max = std::max(r.max, n.stats.max);
    all.ticks += n.stats.self;
    all.count += n.stats.calls;
  });
  std::vector<Row> sorted;
  for (auto& [k, r] : rows) sorted.push_back(r);
  std::stable_sort(sorted.begin(), sorted.end(), [by_count](const Row& a, const Row& b) {
    return by_count ? a.count > b.count : a.ticks > b.ticks;
  });
  if (o.top && sorted.size() > o.top) sorted.resize(o.top);
  return sorted;
}

std::string function_name(const analysis::Profile& p, uint64_t fn) {
  return fn == kOutside ? std::string("[outside every frame]") : p.functions[fn].name;
}
std::string module_name(const analysis::Profile& p, uint64_t fn) {
  return fn == kOutside ? std::string() : p.functions[fn].module;
}

}  // namespace

Status print_wait_table(const format::TraceReader& trace, const analysis::Profile& p, const ReportOptions& o,
                        FILE* out) {
  Row total;
  const std::vector<Row> sorted = leaf_rows(p, o, false, total);
  const uint64_t all = total.ticks;
  if (sorted.empty() && (o.function_globs.size() || o.module_globs.size()))
    return Error("no function matching -F/-m left its CPU");
  const auto ns = [&](uint64_t ticks) { return trace.ticks_to_ns(ticks); };
  const auto name = [&](uint64_t fn) { return function_name(p, fn); };
  const auto module = [&](uint64_t fn) { return module_name(p, fn); };
  switch (o.format) {
    case OutputFormat::kJson: {
      nlohmann::json j;
      j["wait_ns"] = static_cast<uint64_t>(ns(all));
      j["waits"] = nlohmann::json::array();
      for (const Row& r : sorted)
        j["waits"].push_back({{"function", name(r.function)},
                              {"module", module(r.function)},
                              {"reason", p.functions[r.reason].name},
                              {"wait_ns", static_cast<uint64_t>(ns(r.ticks))},
                              {"count", r.count},
                              {"max_ns", static_cast<uint64_t>(ns(r.max))}});
      std::fprintf(out, "%s\n", json_text(j).c_str());
      break;
    }
    case OutputFormat::kCsv:
      std::fprintf(out, "function,module,reason,wait_ns,count,max_ns\n");
      for (const Row& r : sorted)
        std::fprintf(out, "%s,%s,%s,%llu,%llu,%llu\n", csv_field(name(r.function)).c_str(),
                     csv_field(module(r.function)).c_str(), csv_field(p.functions[r.reason].name).c_str(),
                     static_cast<unsigned long long>(ns(r.ticks)), static_cast<unsigned long long>(r.count),
                     static_cast<unsigned long long>(ns(r.max)));
      break;
    case OutputFormat::kText: {
      std::fprintf(out, "Time off the CPU: %s in all, by the function the thread left it in and why\n\n",
                   format_duration_ns(ns(all)).c_str());
      TextTable t({"WAIT", "%", "WAITS", "AVG", "MAX", "REASON", "FUNCTION"}, 5);
      for (const Row& r : sorted) {
        char pct[16];
        std::snprintf(pct, sizeof pct, "%.1f", all ? 100.0 * static_cast<double>(r.ticks) / static_cast<double>(all) : 0.0);
        t.add({format_duration_ns(ns(r.ticks)), pct, std::to_string(r.count),
               format_duration_ns(ns(r.ticks) / static_cast<double>(std::max<uint64_t>(r.count, 1))),
               format_duration_ns(ns(r.max)), p.functions[r.reason].name, fit_name(name(r.function), o.name_width)});
      }
      t.print(out);
      break;
    }
  }
  return ok_status();
}

Status print_fault_table(const analysis::Profile& p, const ReportOptions& o, FILE* out) {
  Row total;
  const std::vector<Row> sorted = leaf_rows(p, o, true, total);
  if (sorted.empty() && (o.function_globs.size() || o.module_globs.size()))
    return Error("no function matching -F/-m took a page fault");
  switch (o.format) {
    case OutputFormat::kJson: {
      nlohmann::json j;
      j["faults"] = total.count;
      j["rows"] = nlohmann::json::array();
      for (const Row& r : sorted)
        j["rows"].push_back({{"function", function_name(p, r.function)},
                             {"module", module_name(p, r.function)},
                             {"kind", p.functions[r.reason].name},
                             {"count", r.count}});
      std::fprintf(out, "%s\n", json_text(j).c_str());
      break;
    }
    case OutputFormat::kCsv:
      std::fprintf(out, "function,module,kind,count\n");
      for (const Row& r : sorted)
        std::fprintf(out, "%s,%s,%s,%llu\n", csv_field(function_name(p, r.function)).c_str(),
                     csv_field(module_name(p, r.function)).c_str(), csv_field(p.functions[r.reason].name).c_str(),
                     static_cast<unsigned long long>(r.count));
      break;
    case OutputFormat::kText: {
      std::fprintf(out, "Page faults: %llu in all, by the function that took them and their kind\n\n",
                   static_cast<unsigned long long>(total.count));
      TextTable t({"FAULTS", "%", "KIND", "FUNCTION"}, 3);
      for (const Row& r : sorted) {
        char pct[16];
        std::snprintf(pct, sizeof pct, "%.1f",
                      total.count ? 100.0 * static_cast<double>(r.count) / static_cast<double>(total.count) : 0.0);
        t.add({std::to_string(r.count), pct, p.functions[r.reason].name, fit_name(function_name(p, r.function), o.name_width)});
      }
      t.print(out);
      break;
    }
  }
  return ok_status();
}

Status print_io_table(const format::TraceReader& trace, const analysis::Profile& p, const ReportOptions& o,
                      FILE* out) {
  Row total;
  const std::vector<Row> sorted = leaf_rows(p, o, true, total);
  if (sorted.empty() && (o.function_globs.size() || o.module_globs.size()))
    return Error("no function matching -F/-m began a block I/O request");
  const auto ns = [&](uint64_t ticks) { return trace.ticks_to_ns(ticks); };
  switch (o.format) {
    case OutputFormat::kJson: {
      nlohmann::json j;
      j["requests"] = total.count;
      j["rows"] = nlohmann::json::array();
      for (const Row& r : sorted)
        j["rows"].push_back({{"function", function_name(p, r.function)},
                             {"module", module_name(p, r.function)},
                             {"kind", p.functions[r.reason].name},
                             {"count", r.count},
                             {"latency_ns", static_cast<uint64_t>(ns(r.ticks))},
                             {"max_ns", static_cast<uint64_t>(ns(r.max))}});
      std::fprintf(out, "%s\n", json_text(j).c_str());
      break;
    }
    case OutputFormat::kCsv:
      std::fprintf(out, "function,module,kind,count,latency_ns,max_ns\n");
      for (const Row& r : sorted)
        std::fprintf(out, "%s,%s,%s,%llu,%llu,%llu\n", csv_field(function_name(p, r.function)).c_str(),
                     csv_field(module_name(p, r.function)).c_str(), csv_field(p.functions[r.reason].name).c_str(),
                     static_cast<unsigned long long>(r.count), static_cast<unsigned long long>(ns(r.ticks)),
                     static_cast<unsigned long long>(ns(r.max)));
      break;
    case OutputFormat::kText: {
      std::fprintf(out,
                   "Block I/O: %llu request%s in all, by the function that began them, their kind and device; "
                   "LATENCY from the start to the device's completion\n\n",
                   static_cast<unsigned long long>(total.count), total.count == 1 ? "" : "s");
      TextTable t({"REQUESTS", "%", "LATENCY", "AVG", "MAX", "KIND", "FUNCTION"}, 5);
      for (const Row& r : sorted) {
        char pct[16];
        std::snprintf(pct, sizeof pct, "%.1f",
                      total.count ? 100.0 * static_cast<double>(r.count) / static_cast<double>(total.count) : 0.0);
        t.add({std::to_string(r.count), pct, format_duration_ns(ns(r.ticks)),
               format_duration_ns(ns(r.ticks) / static_cast<double>(std::max<uint64_t>(r.count, 1))),
               format_duration_ns(ns(r.max)), p.functions[r.reason].name,
               fit_name(function_name(p, r.function), o.name_width)});
      }
      t.print(out);
      break;
    }
  }
  return ok_status();
}

nlohmann::json biggest_waits(const format::TraceReader& trace, const analysis::Profile& p, size_t limit) {
  struct Leaf {
    uint32_t thread;
    const analysis::CallTree* tree;
    uint32_t node;
  };
  std::vector<Leaf> leaves;
  for_each_reason(p, [&](const analysis::ThreadProfile& tp, uint32_t id) { leaves.push_back({tp.thread, &tp.tree, id}); });
  std::stable_sort(leaves.begin(), leaves.end(), [](const Leaf& a, const Leaf& b) {
    return a.tree->node(a.node).stats.self > b.tree->node(b.node).stats.self;
  });
  if (leaves.size() > limit) leaves.resize(limit);
  nlohmann::json out = nlohmann::json::array();
  for (const Leaf& l : leaves) {
    std::vector<std::string> path;
    for (uint32_t n = l.tree->node(l.node).parent; n != analysis::kRootNode; n = l.tree->node(n).parent)
      path.push_back(p.functions[l.tree->node(n).key].name);
    std::reverse(path.begin(), path.end());
    const analysis::Stats& s = l.tree->node(l.node).stats;
    out.push_back({{"thread", l.thread},
                   {"path", path},
                   {"reason", p.functions[l.tree->node(l.node).key].name},
                   {"wait_ns", static_cast<uint64_t>(trace.ticks_to_ns(s.self))},
                   {"count", s.calls},
                   {"max_ns", static_cast<uint64_t>(trace.ticks_to_ns(s.max))}});
  }
  return out;
}

}  // namespace callscope::views
