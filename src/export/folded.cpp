// Folded stacks (Brendan Gregg's flamegraph.pl input, read by inferno,
// speedscope and most flame-graph tools).
#include "common/output_format.h"
#include "export/ns.h"
#include "export/aggregate_exports.h"

#include <cmath>
#include <map>

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
  constexpr uint32_t kElided = ~0u;
  const std::string elided_name = folded_frame(kElidedFramesLabel);
  // Lines of stacks too deep to show whole (stacks.h): alike once elided,
  // summed and written after the others, in order.
  std::map<std::string, uint64_t> elided_lines;
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
    const std::vector<uint32_t> shown = shown_frames(path, kElided);
    for (size_t i = 0; i < shown.size(); ++i) {
      if (i) line += ';';
      line += shown[i] == kElided ? elided_name : names[shown[i]];
    }
    if (shown.size() != path.size()) {
      elided_lines[line] += v;
      return;
    }
    line += ' ';
    line += std::to_string(v);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), out);
  });
  for (const auto& [stack, v] : elided_lines) std::fprintf(out, "%s %llu\n", stack.c_str(), static_cast<unsigned long long>(v));
}

}  // namespace callscope::exporter
