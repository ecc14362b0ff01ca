#include "analysis/thread_states.h"

#include <algorithm>

namespace callscope::analysis {

ThreadStates thread_states(const std::vector<format::SysEvent>& events, uint64_t start, uint64_t end,
                           const std::function<uint64_t(uint64_t)>& to_tick, bool switches) {
  ThreadStates s;
  if (events.empty()) return s;
  s.known = switches;
  s.has_events = true;
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
      case format::SysKind::kSyscallEnter:
        ++s.syscalls;
        break;
      case format::SysKind::kSleepState:
        ++s.sleep_states;
        break;
      case format::SysKind::kWakeup:
        ++s.wakeups;
        break;
      case format::SysKind::kSyscallExit:
        break;
      case format::SysKind::kSample:
        ++s.samples;
        break;
      case format::SysKind::kIoStart:
        ++s.io_requests;
        // (a flush, a discard or another operation moves no data read)
        switch (format::io_data(static_cast<uint64_t>(e.value))) {
          case format::IoData::kWrite: s.io_write_bytes += e.args[1]; break;
          case format::IoData::kRead: s.io_read_bytes += e.args[1]; break;
          case format::IoData::kNone: break;
        }
        break;
      case format::SysKind::kIoDone:
        ++s.io_done;
        break;
      case format::SysKind::kPageFault:
        ++(static_cast<uint64_t>(e.value) & format::kFaultMajor ? s.major_faults : s.minor_faults);
        s.kernel_faults += (static_cast<uint64_t>(e.value) & format::kFaultInKernel) != 0;
        break;
      case format::SysKind::kSampleCaller:
        break;
    }
  }
  spend(end);
  if (!switches) s.running = s.runnable = s.blocked = 0;
  return s;
}

WaitClock::WaitClock(const std::vector<format::SysEvent>& events, const std::function<uint64_t(uint64_t)>& to_tick) {
  bool off = false;
  uint64_t since = 0, total = 0;
  for (const format::SysEvent& e : events) {
    const uint64_t tick = to_tick(e.mono_ns);
    if (e.kind == format::SysKind::kSwitchOutBlocked || e.kind == format::SysKind::kSwitchOutRunnable) {
      if (!off) since = tick;
      off = true;
    } else if (e.kind == format::SysKind::kSwitchIn && off) {
      off = false;
      if (tick <= since) continue;
      starts_.push_back(since);
      ends_.push_back(tick);
      before_.push_back(total);
      total += tick - since;
    }
  }
  if (off) {
    starts_.push_back(since);
    ends_.push_back(~uint64_t{0});
    before_.push_back(total);
  }
}

uint64_t WaitClock::waited(uint64_t tick) {
  if (tick < last_)  // back in time: find the first interval not over by then
    cursor_ = static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), tick) - ends_.begin());
  last_ = tick;
  while (cursor_ < ends_.size() && ends_[cursor_] <= tick) ++cursor_;
  if (cursor_ == ends_.size())
    return ends_.empty() ? 0 : before_.back() + (ends_.back() - starts_.back());
  const uint64_t in = tick > starts_[cursor_] ? tick - starts_[cursor_] : 0;
  return before_[cursor_] + in;
}

Result<std::vector<ThreadStates>> thread_states(format::TraceReader& trace) {
  std::vector<ThreadStates> out(trace.threads().size());
  if (!trace.has_sys_events()) return out;
  const auto to_tick = [&trace](uint64_t ns) { return trace.mono_to_tick(ns); };
  const bool switches = trace.has_switches();
  for (uint32_t i = 0; i < trace.threads().size(); ++i) {
    CALLSCOPE_TRY(auto events, trace.sys_events(i));
    const format::ThreadRecord& r = trace.threads()[i].record;
    out[i] = thread_states(events, r.start_tick, r.end_tick, to_tick, switches);
  }
  return out;
}

}  // namespace callscope::analysis
