#include "analysis/stack_depth.h"

#include <algorithm>
#include <map>

namespace callscope::analysis {

Result<StackDepths> measure_stack(format::TraceReader& trace, const std::vector<uint32_t>& threads) {
  StackDepths out;
  std::map<std::pair<uint32_t, uint64_t>, FunctionStackDepth> functions;
  for (uint32_t ti : threads) {
    const uint32_t process = trace.threads()[ti].record.process_index;
    struct Open {
      uint64_t addr, sp, lowest;  // lowest: the lowest sp in this activation so far
      bool is_call;
    };
    std::vector<Open> stack;
    ThreadStackPeak peak;
    peak.thread = ti;
    peak.process = process;
    uint64_t lowest = ~uint64_t{0};
    // peak.path's first `same` frames are the stack's first ones still: a
    // new deepest point copies only the frames after them. (Copying the
    // whole stack at each one made a deepening recursion quadratic: 16 s
    // for 100,000 levels.) Each frame is copied at most once while open.
    size_t same = 0;
    auto st = trace.for_each_event(ti, [&](const format::TraceEvent& e) {
      if (format::is_entry(e.kind)) {
        const uint64_t sp = e.sp ? e.sp : (stack.empty() ? 0 : stack.back().sp);  // 0: unknown
        stack.push_back({e.addr, sp, sp, e.kind == format::EventKind::kEntry});
        if (sp) {
          peak.top_sp = std::max(peak.top_sp, sp);
          if (sp < lowest) {  // a new deepest point: remember how we got there
            lowest = sp;
            peak.path.resize(same);
            peak.path_sp.resize(same);
            for (size_t i = same; i < stack.size(); ++i) {
              peak.path.push_back(stack[i].addr);
              peak.path_sp.push_back(stack[i].sp);
            }
            same = stack.size();
          }
        }
      } else if (format::is_exit(e.kind) && !stack.empty()) {
        const Open f = stack.back();
        stack.pop_back();
        same = std::min(same, stack.size());
        FunctionStackDepth& d = functions[{process, f.addr}];
        d.process = process;
        d.addr = f.addr;
        if (f.is_call) ++d.calls;
        if (f.sp) d.deepest_below = std::max(d.deepest_below, f.sp - f.lowest);
        if (!stack.empty() && f.lowest) stack.back().lowest = std::min(stack.back().lowest, f.lowest);
      }
      return true;
    });
    if (!st) return st.error().context("thread " + std::to_string(ti));
    peak.peak_bytes = lowest == ~uint64_t{0} ? 0 : peak.top_sp - lowest;
    out.threads.push_back(std::move(peak));
  }
  for (auto& [key, d] : functions) out.functions.push_back(d);
  return out;
}

}  // namespace callscope::analysis
