#include "analysis/wakers.h"

#include <algorithm>

namespace callscope::analysis {

Result<WakerPaths> WakerPaths::find(format::TraceReader& trace, const std::vector<WakerQuery>& queries) {
  WakerPaths out;
  // The thread of each waker: its pid's and tid's whose life holds the
  // wakeup (a tid reused by another thread later is another thread).
  std::map<uint32_t, std::vector<WakerQuery>> by_thread;
  for (const WakerQuery& q : queries) {
    if (!q.tid) continue;
    for (uint32_t i = 0; i < trace.threads().size(); ++i) {
      const format::ThreadRecord& r = trace.threads()[i].record;
      if (r.tid != q.tid || (q.pid && trace.process(r.process_index).record.pid != q.pid)) continue;
      if (q.tick + 1 < r.start_tick || q.tick > r.end_tick + 1) continue;
      by_thread[i].push_back(q);
      break;
    }
  }
  for (auto& entry : by_thread) {
    // (named, not bound: a lambda below uses them)
    const uint32_t thread = entry.first;
    std::vector<WakerQuery>& asked = entry.second;
    std::sort(asked.begin(), asked.end(), [](const WakerQuery& a, const WakerQuery& b) { return a.tick < b.tick; });
    std::vector<uint64_t> stack;
    size_t next = 0;
    // (a frame that ends at the wakeup's tick was open at it: asked before the exit)
    const auto answer = [&](uint64_t before, bool exit = false) {
      for (; next < asked.size() && (asked[next].tick < before || (exit && asked[next].tick == before)); ++next)
        out.paths_[{asked[next].pid, asked[next].tid, asked[next].tick}] = Path{thread, stack};
    };
    auto st = trace.for_each_event(thread, [&](const format::TraceEvent& e) {
      answer(e.tick, format::is_exit(e.kind));
      if (format::is_entry(e.kind)) {
        stack.resize(e.depth ? e.depth - 1 : 0);
        stack.push_back(e.addr);
      } else if (format::is_exit(e.kind) && e.kind != format::EventKind::kExitStray) {
        stack.resize(e.depth ? e.depth - 1 : 0);
      }
      return next < asked.size();
    });
    if (!st) return st.error().context("the waker's thread " + std::to_string(thread));
    answer(~uint64_t{0});
  }
  return out;
}

const WakerPaths::Path* WakerPaths::at(const WakerQuery& q) const {
  auto it = paths_.find({q.pid, q.tid, q.tick});
  return it == paths_.end() ? nullptr : &it->second;
}

}  // namespace callscope::analysis
