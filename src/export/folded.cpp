// Folded stacks (Brendan Gregg's flamegraph.pl input, read by inferno,
// speedscope and most flame-graph tools).
#include "common/output_format.h"
#include "export/ns.h"
#include "export/aggregate_exports.h"

#include <cmath>

namespace callscope::exporter {

Result<Weight> parse_weight(const std::string& by) {
  if (by == "self") return Weight::kSelf;
  if (by == "total") return Weight::kTotal;
  if (by == "calls") return Weight::kCalls;
  return Error("unknown --by '" + by + "' (valid: self, total, calls)");
}

std::string folded_frame(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    if (c == ';') c = ':';
    else if (c == '\n' || c == '\r') c = ' ';
  }
  // Text, often read on a terminal (-o -): names as the text views show
  // them, whatever the output (a file is cat'ed too).
  return terminal_safe(s);
}

void write_folded(const format::TraceReader& trace, const StackTree& t, Weight w, FILE* out) {
  std::vector<std::string> names(t.labels.size());
  for (size_t i = 0; i < names.size(); ++i) names[i] = folded_frame(t.labels[i]);
  std::string line;
  walk_stacks(t, [&](uint32_t id, const std::vector<uint32_t>& path) {
    const StackNode& n = t.nodes[id];
    if (n.function < 0 || !n.counted) return;
    uint64_t v = 0;
    switch (w) {
      case Weight::kSelf: v = ns_of(trace, n.own_ticks); break;
      case Weight::kTotal: v = ns_of(trace, n.stats.total); break;
      case Weight::kCalls: v = n.stats.calls; break;
    }
    if (v == 0) return;
    line.clear();
    for (size_t i = 0; i < path.size(); ++i) {
      if (i) line += ';';
      line += names[path[i]];
    }
    line += ' ';
    line += std::to_string(v);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), out);
  });
}

}  // namespace callscope::exporter
