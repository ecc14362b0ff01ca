#include "views/stack_depth_view.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "views/format_util.h"

namespace callscope::views {

void print_stack_depths(const format::TraceReader& trace, const analysis::StackDepths& depths,
                        symbolize::Symbolizer& sym, OutputFormat format, size_t top, FILE* out) {
  struct Row {
    std::string module;
    uint64_t calls = 0, deepest = 0;
  };
  std::map<std::string, Row> by_name;
  for (const auto& f : depths.functions) {
    const symbolize::Symbol& s = sym.lookup(f.process, f.addr);
    Row& r = by_name[s.display()];
    r.module = s.module;
    r.calls += f.calls;
    r.deepest = std::max(r.deepest, f.deepest_below);
  }
  std::vector<std::pair<std::string, Row>> rows(by_name.begin(), by_name.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.deepest > b.second.deepest; });
  if (top && rows.size() > top) rows.resize(top);
  auto path_names = [&](const analysis::ThreadStackPeak& p) {
    std::vector<std::string> names;
    for (uint64_t a : p.path) names.push_back(sym.lookup(p.process, a).display());
    return names;
  };

  if (format == OutputFormat::kJson) {
    nlohmann::json j;
    j["threads"] = nlohmann::json::array();
    for (const auto& p : depths.threads)
      j["threads"].push_back({{"thread", p.thread}, {"tid", trace.threads()[p.thread].record.tid},
                              {"peak_bytes", p.peak_bytes}, {"path", path_names(p)}});
    j["functions"] = nlohmann::json::array();
    for (const auto& [name, r] : rows)
      j["functions"].push_back({{"function", name}, {"module", r.module}, {"calls", r.calls}, {"deepest_below_bytes", r.deepest}});
    std::fprintf(out, "%s\n", json_text(j).c_str());
    return;
  }
  if (format == OutputFormat::kCsv) {
    std::fprintf(out, "kind,thread,function,module,calls,bytes,path\n");
    for (const auto& p : depths.threads) {
      std::string path;
      for (const auto& n : path_names(p)) path += (path.empty() ? "" : " > ") + n;
      std::fprintf(out, "peak,%u,,,,%llu,%s\n", p.thread, static_cast<unsigned long long>(p.peak_bytes),
                   csv_field(path).c_str());
    }
    for (const auto& [name, r] : rows)
      std::fprintf(out, "function,,%s,%s,%llu,%llu,\n", csv_field(name).c_str(), csv_field(r.module).c_str(),
                   static_cast<unsigned long long>(r.calls), static_cast<unsigned long long>(r.deepest));
    return;
  }
  for (const auto& p : depths.threads) {
    const auto& th = trace.threads()[p.thread];
    std::fprintf(out, "thread %u: tid %u \"%s\": peak stack %llu bytes below its outermost instrumented frame\n",
                 p.thread, th.record.tid, terminal_safe(th.name).c_str(), static_cast<unsigned long long>(p.peak_bytes));
    const auto names = path_names(p);
    if (names.empty()) continue;
    std::string path;
    const size_t n = names.size();
    for (size_t i = 0; i < n; ++i) {
      if (n > 12 && i == 5) {  // a deep path: its ends
        path += " > ... (" + std::to_string(n - 10) + " more)";
        i = n - 6;
        continue;
      }
      path += (i ? " > " : "") + names[i];
    }
    std::fprintf(out, "  at the peak (%zu frames): %s\n", n, terminal_safe(path).c_str());
  }
  std::fprintf(out, "\n%16s %10s  %-10s %s\n", "DEEPEST BELOW", "CALLS", "MODULE", "FUNCTION");
  for (const auto& [name, r] : rows)
    std::fprintf(out, "%10llu bytes %10llu  %-10s %s\n", static_cast<unsigned long long>(r.deepest),
                 static_cast<unsigned long long>(r.calls), terminal_safe(r.module).c_str(),
                 terminal_safe(name).c_str());
  std::fprintf(out,
               "\nDepths run from a function's stack pointer (after its prologue) to the lowest one\n"
               "seen below it; frames of uninstrumented callees are not seen.\n");
}

}  // namespace callscope::views
