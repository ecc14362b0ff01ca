// `report --diff`: the rows of analysis/diff.h as an aligned table, CSV or
// JSON.
#include "views/diff_view.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "views/format_util.h"

namespace callscope::views {
namespace {

std::string signed_duration(double ns) {
  if (ns == 0) return "0";
  return (ns > 0 ? "+" : "-") + format_duration_ns(std::fabs(ns));
}

std::string signed_count(double n) {
  if (n == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.0f", n);
  return buf;
}

std::string percent(double a, double b) {
  if (a == 0) return b == 0 ? "" : "new";
  if (b == 0) return "gone";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", (b - a) / a * 100.0);
  return buf;
}

bool changed(const analysis::DiffRow& r) {
  return r.a.calls != r.b.calls || r.a.total_ns != r.b.total_ns || r.a.self_ns != r.b.self_ns;
}

}  // namespace

void print_diff(const std::vector<analysis::DiffRow>& all, const std::string& label_a, const std::string& label_b,
                const DiffOptions& o, FILE* out) {
  std::vector<const analysis::DiffRow*> rows;
  for (const auto& r : all)
    if (!o.changed_only || changed(r)) rows.push_back(&r);
  if (o.top && rows.size() > o.top) rows.resize(o.top);
  switch (o.format) {
    case OutputFormat::kCsv:
      std::fprintf(out, "function,module,calls_a,calls_b,total_a_ns,total_b_ns,self_a_ns,self_b_ns\n");
      for (const auto* r : rows)
        std::fprintf(out, "%s,%s,%llu,%llu,%.0f,%.0f,%.0f,%.0f\n", csv_field(r->name).c_str(),
                     csv_field(r->module).c_str(), static_cast<unsigned long long>(r->a.calls),
                     static_cast<unsigned long long>(r->b.calls), r->a.total_ns, r->b.total_ns, r->a.self_ns,
                     r->b.self_ns);
      return;
    case OutputFormat::kJson: {
      nlohmann::json j;
      j["a"] = label_a;
      j["b"] = label_b;
      j["functions"] = nlohmann::json::array();
      for (const auto* r : rows)
        j["functions"].push_back({{"function", r->name},
                                  {"module", r->module},
                                  {"calls_a", r->a.calls},
                                  {"calls_b", r->b.calls},
                                  {"total_a_ns", std::llround(r->a.total_ns)},
                                  {"total_b_ns", std::llround(r->b.total_ns)},
                                  {"self_a_ns", std::llround(r->a.self_ns)},
                                  {"self_b_ns", std::llround(r->b.self_ns)}});
      std::fprintf(out, "%s\n", json_text(j).c_str());
      return;
    }
    case OutputFormat::kText:
      break;
  }
  std::fprintf(out, "A: %s\nB: %s\n", terminal_safe(label_a).c_str(), terminal_safe(label_b).c_str());
  TextTable table({"CALLS A", "CALLS B", "CHANGE", "TOTAL A", "TOTAL B", "CHANGE", "%", "SELF A", "SELF B", "CHANGE",
                   "MODULE", "FUNCTION"},
                  10);
  for (const auto* r : rows)
    table.add({std::to_string(r->a.calls), std::to_string(r->b.calls),
               signed_count(static_cast<double>(r->b.calls) - static_cast<double>(r->a.calls)),
               format_duration_ns(r->a.total_ns), format_duration_ns(r->b.total_ns),
               signed_duration(r->b.total_ns - r->a.total_ns), percent(r->a.total_ns, r->b.total_ns),
               format_duration_ns(r->a.self_ns), format_duration_ns(r->b.self_ns),
               signed_duration(r->b.self_ns - r->a.self_ns), r->module, fit_name(r->name, o.name_width)});
  table.print(out);
  if (rows.empty()) std::fprintf(out, "(no function changed)\n");
}

}  // namespace callscope::views
