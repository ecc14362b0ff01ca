#include "views/stack_depth_view.h"

#include <algorithm>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "views/format_util.h"

namespace callscope::views {

namespace {

// Bytes of each frame on a peak path as the run used it: the sp of the frame
// that called it less its own (unknown for the outermost, or without sps).
std::vector<std::optional<uint64_t>> frame_bytes(const analysis::ThreadStackPeak& p) {
  std::vector<std::optional<uint64_t>> out(p.path.size());
  for (size_t i = 1; i < p.path_sp.size() && i < out.size(); ++i) {
    if (p.path_sp[i - 1] != 0 && p.path_sp[i] != 0 && p.path_sp[i - 1] >= p.path_sp[i]) {
      out[i] = p.path_sp[i - 1] - p.path_sp[i];
    }
  }
  return out;
}

}  // namespace

void print_stack_depths(const format::TraceReader& trace, const analysis::StackDepths& depths,
                        symbolize::Symbolizer& sym, OutputFormat format, size_t top, FILE* out,
                        const StaticLookup* statics) {
  struct Row {
    std::string module;
    uint64_t calls = 0, deepest = 0;
    std::optional<StaticBound> bound;
    bool looked_up = false;
  };
  std::map<std::string, Row> by_name;
  for (const auto& f : depths.functions) {
    const symbolize::Symbol& s = sym.lookup(f.process, f.addr);
    Row& r = by_name[s.display()];
    r.module = s.module;
    r.calls += f.calls;
    r.deepest = std::max(r.deepest, f.deepest_below);
    if (statics != nullptr && !r.looked_up) {
      r.looked_up = true;
      r.bound = (*statics)(s.module, s.offset);
    }
  }
  std::vector<std::pair<std::string, Row>> rows(by_name.begin(), by_name.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.deepest > b.second.deepest; });
  if (top && rows.size() > top) rows.resize(top);
  auto path_names = [&](const analysis::ThreadStackPeak& p) {
    std::vector<std::string> names;
    for (uint64_t a : p.path) names.push_back(sym.lookup(p.process, a).display());
    return names;
  };
  // A measured depth above a bound that claims to be complete.
  auto above = [](const Row& r) { return r.bound && r.bound->flags.empty() && r.deepest > r.bound->below_bytes; };
  size_t above_count = 0;
  for (const auto& [name, r] : rows) above_count += above(r);

  if (format == OutputFormat::kJson) {
    nlohmann::json j;
    j["threads"] = nlohmann::json::array();
    for (const auto& p : depths.threads) {
      const auto names = path_names(p);
      const auto bytes = frame_bytes(p);
      nlohmann::json frames = nlohmann::json::array();
      for (size_t i = 0; i < names.size(); ++i) {
        frames.push_back({{"function", names[i]}, {"bytes", bytes[i] ? nlohmann::json(*bytes[i]) : nlohmann::json()}});
      }
      j["threads"].push_back({{"thread", p.thread}, {"tid", trace.threads()[p.thread].record.tid},
                              {"peak_bytes", p.peak_bytes}, {"path", names}, {"frames", frames}});
    }
    j["functions"] = nlohmann::json::array();
    for (const auto& [name, r] : rows) {
      nlohmann::json f = {{"function", name}, {"module", r.module}, {"calls", r.calls}, {"deepest_below_bytes", r.deepest}};
      if (r.bound) {
        f["static_below_bytes"] = r.bound->below_bytes;
        f["static_flags"] = r.bound->flags;
        f["above_complete_bound"] = above(r);
      }
      j["functions"].push_back(std::move(f));
    }
    std::fprintf(out, "%s\n", json_text(j).c_str());
    return;
  }
  if (format == OutputFormat::kCsv) {
    std::fprintf(out, "kind,thread,function,module,calls,bytes,path,static_below_bytes,static_flags,above_complete_bound\n");
    for (const auto& p : depths.threads) {
      const auto names = path_names(p);
      std::string path;
      for (const auto& n : names) path += (path.empty() ? "" : " > ") + n;
      std::fprintf(out, "peak,%u,,,,%llu,%s,,,\n", p.thread, static_cast<unsigned long long>(p.peak_bytes),
                   csv_field(path).c_str());
      const auto bytes = frame_bytes(p);
      for (size_t i = 0; i < names.size(); ++i) {
        std::fprintf(out, "frame,%u,%s,,,%s,,,,\n", p.thread, csv_field(names[i]).c_str(),
                     bytes[i] ? std::to_string(*bytes[i]).c_str() : "");
      }
    }
    for (const auto& [name, r] : rows) {
      std::fprintf(out, "function,,%s,%s,%llu,%llu,,%s,%s,%s\n", csv_field(name).c_str(), csv_field(r.module).c_str(),
                   static_cast<unsigned long long>(r.calls), static_cast<unsigned long long>(r.deepest),
                   r.bound ? std::to_string(r.bound->below_bytes).c_str() : "",
                   r.bound ? csv_field(r.bound->flags).c_str() : "", r.bound ? (above(r) ? "true" : "false") : "");
    }
    return;
  }
  for (const auto& p : depths.threads) {
    const auto& th = trace.threads()[p.thread];
    std::fprintf(out, "thread %u: tid %u \"%s\": peak stack %llu bytes below its outermost instrumented frame\n",
                 p.thread, th.record.tid, terminal_safe(th.name).c_str(), static_cast<unsigned long long>(p.peak_bytes));
    const auto names = path_names(p);
    if (names.empty()) continue;
    const auto bytes = frame_bytes(p);
    const size_t n = names.size();
    std::string path;
    for (size_t i = 0; i < n; ++i) {
      if (n > 12 && i == 5) {  // a deep path: its ends
        path += " > ... (" + std::to_string(n - 10) + " more)";
        i = n - 6;
        continue;
      }
      path += (i ? " > " : "") + names[i];
    }
    std::fprintf(out, "  at the peak (%zu frames): %s\n", n, terminal_safe(path).c_str());
    std::fprintf(out, "  bytes each frame used there (return address, saved registers, locals):\n");
    for (size_t i = 0; i < n; ++i) {
      if (n > 12 && i == 5) {  // a deep path: its ends
        uint64_t hidden = 0;
        for (size_t k = 5; k < n - 5; ++k) hidden += bytes[k].value_or(0);
        std::fprintf(out, "    %10llu  ... (%zu more frames)\n", static_cast<unsigned long long>(hidden), n - 10);
        i = n - 6;
        continue;
      }
      if (bytes[i]) {
        std::fprintf(out, "    %10llu  %s\n", static_cast<unsigned long long>(*bytes[i]), terminal_safe(names[i]).c_str());
      } else {
        std::fprintf(out, "    %10s  %s\n", "-", terminal_safe(names[i]).c_str());
      }
    }
  }
  if (statics != nullptr) {
    std::fprintf(out, "\n%16s %18s %10s  %-10s %s\n", "DEEPEST BELOW", "STATIC BOUND", "CALLS", "MODULE", "FUNCTION");
  } else {
    std::fprintf(out, "\n%16s %10s  %-10s %s\n", "DEEPEST BELOW", "CALLS", "MODULE", "FUNCTION");
  }
  for (const auto& [name, r] : rows) {
    std::string bound;
    if (statics != nullptr) {
      char b[64] = "";
      if (r.bound) {
        std::snprintf(b, sizeof b, "%10llu bytes%s", static_cast<unsigned long long>(r.bound->below_bytes),
                      r.bound->flags.empty() ? "  " : " +");
      } else {
        std::snprintf(b, sizeof b, "%18s", "-");
      }
      bound = std::string(" ") + b;
    }
    std::string note;
    if (r.bound && !r.bound->flags.empty()) note = "  [" + r.bound->flags + "]";
    if (above(r)) note += "  MEASURED ABOVE A COMPLETE STATIC BOUND";
    std::fprintf(out, "%10llu bytes%s %10llu  %-10s %s%s\n", static_cast<unsigned long long>(r.deepest), bound.c_str(),
                 static_cast<unsigned long long>(r.calls), terminal_safe(r.module).c_str(),
                 terminal_safe(name).c_str(), note.c_str());
  }
  std::fprintf(out,
               "\nDepths run from a function's stack pointer (after its prologue) to the lowest one\n"
               "seen below it; frames of uninstrumented callees are not seen.\n");
  if (statics != nullptr) {
    std::fprintf(out,
                 "A static bound is `callscope stack --worst` less what the function has pushed when a\n"
                 "recording sees it; '+' and the flags mark a figure that is not a bound (recursion,\n"
                 "dynamic frame, unresolved call, a call into another module other than the hooks).\n");
    if (above_count > 0) {
      std::fprintf(out, "%zu function%s measured above a complete static bound: a bug in callscope's\n"
                        "recording or in its static analysis; please report it.\n",
                   above_count, above_count == 1 ? "" : "s");
    }
  }
}

}  // namespace callscope::views
