#include "format/thread_names.h"

#include <algorithm>

namespace callscope::format {

std::vector<NameChange> resolve_thread_names(const std::vector<ThreadRecord>& threads, std::vector<std::string>& names,
                                             std::vector<Rename> renames) {
  std::stable_sort(renames.begin(), renames.end(), [](const Rename& a, const Rename& b) { return a.tick < b.tick; });
  // Per thread, the renames that name it, in time order.
  std::vector<std::vector<const Rename*>> of(threads.size());
  for (const Rename& r : renames) {
    constexpr size_t kNone = ~size_t{0};
    size_t started = kNone, after = kNone;  // the latest started by then; the first started after
    for (size_t i = 0; i < threads.size(); ++i) {
      const ThreadRecord& t = threads[i];
      if (t.process_index != r.process_index || t.tid != r.tid) continue;
      if (t.start_tick <= r.tick) {
        if (started == kNone || t.start_tick >= threads[started].start_tick) started = i;
      } else if (after == kNone || t.start_tick < threads[after].start_tick) {
        after = i;
      }
    }
    const bool gone = started != kNone && (threads[started].flags & kThreadExitedCleanly) &&
                      threads[started].end_tick < r.tick;
    const size_t index = started != kNone && !(gone && after != kNone) ? started : after;
    if (index == kNone) continue;  // no thread of that tid: it never made an instrumented call
    of[index].push_back(&r);
  }
  std::vector<NameChange> out;
  for (size_t i = 0; i < threads.size(); ++i) {
    if (of[i].empty()) continue;
    const auto index = static_cast<uint32_t>(i);
    const ThreadRecord& t = threads[i];
    const bool clean = t.flags & kThreadExitedCleanly;
    // The name it started with: given before its first hook, else the one
    // the first rename replaced (a header read at a clean exit holds the
    // last name, not the first).
    std::vector<NameChange> h;
    std::string first = of[i].front()->old_name;
    if (first.empty() && !clean) first = names[i];
    for (const Rename* r : of[i])
      if (r->tick <= t.start_tick) first = r->name;
    h.push_back({index, t.start_tick, first});
    for (const Rename* r : of[i]) {
      if (r->tick <= t.start_tick || r->name == h.back().name) continue;  // before it ran, or no change
      h.push_back({index, r->tick, r->name});
    }
    if (h.front().name.empty()) h.erase(h.begin());
    if (!clean) names[i] = of[i].back()->name;
    if (h.size() > 1 || (h.size() == 1 && h.front().tick > t.start_tick)) out.insert(out.end(), h.begin(), h.end());
  }
  return out;
}

}  // namespace callscope::format
