#include "analysis/thread_states.h"

#include <algorithm>

namespace callscope::analysis {

ThreadStates thread_states(const std::vector<format::SysEvent>& events, uint64_t start, uint64_t end,
                           const std::function<uint64_t(uint64_t)>& to_tick) {
  ThreadStates s;
  if (events.empty()) return s;
  s.known = true;
  enum { kRunning, kRunnable, kBlocked } state = kRunning;
  uint64_t since = start;
  const auto spend = [&](uint64_t until) {
    until = std::clamp(until, start, std::max(start, end));
    if (until <= since) return;
    (state == kRunning ? s.running : state == kRunnable ? s.runnable : s.blocked) += until - since;
    since = until;
  };
  for (const format::SysEvent& e : events) {
    const uint64_t tick = to_tick(e.mono_ns);
    switch (e.kind) {
      case format::SysKind::kSwitchOutBlocked:
        spend(tick);
        state = kBlocked;
        ++s.switches_blocked;
        break;
      case format::SysKind::kSwitchOutRunnable:
        spend(tick);
        state = kRunnable;
        ++s.switches_runnable;
        break;
      case format::SysKind::kSwitchIn:
        spend(tick);
        state = kRunning;
        break;
      case format::SysKind::kLost:
        s.lost += e.arg;
        break;
    }
  }
  spend(end);
  return s;
}

Result<std::vector<ThreadStates>> thread_states(format::TraceReader& trace) {
  std::vector<ThreadStates> out(trace.threads().size());
  if (!trace.has_sys_events()) return out;
  const auto to_tick = [&trace](uint64_t ns) { return trace.mono_to_tick(ns); };
  for (uint32_t i = 0; i < trace.threads().size(); ++i) {
    CALLSCOPE_TRY(auto events, trace.sys_events(i));
    const format::ThreadRecord& r = trace.threads()[i].record;
    out[i] = thread_states(events, r.start_tick, r.end_tick, to_tick);
  }
  return out;
}

}  // namespace callscope::analysis
