// The numbers kept for a function, a call-tree node or a caller/callee edge.
//
// Everything is in trace ticks (convert with TraceReader::ticks_to_ns at
// output). Every frame a stream holds is a call, with the time observed:
//  - a call already in progress when its stream began -- a fork child's copy
//    of a frame open in its parent (the child's own, from the fork on; the
//    parent's call goes on in the parent), a frame begun while events were
//    lost or recording was stopped, a frame open at the start of a time
//    window -- is counted from where it was first seen; `inherited` counts
//    those;
//  - a call still in progress when its thread or process ended, or when the
//    snapshot was taken, is counted up to there; `open` counts those (a
//    truncated exit in a recording, a node flagged open in a snapshot).
// So `total` is always the sum of the calls' durations: avg <= max, and a
// thread's figures never exceed the time it was observed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace callscope::analysis {

inline constexpr uint64_t kNoTick = std::numeric_limits<uint64_t>::max();

struct Stats {
  uint64_t calls = 0;
  uint64_t total = 0;               // ticks, inclusive of callees
  uint64_t self = 0;                // ticks, excluding callees
  uint64_t min = kNoTick;           // ticks, shortest call (kNoTick: no call)
  uint64_t max = 0;                 // ticks, longest call
  uint64_t first = 0;               // ticks, duration of the earliest call
  uint64_t first_tick = kNoTick;    // entry tick of that call (to pick it when merging)
  uint64_t open = 0;                // of `calls`, those still in progress at the end
  uint64_t inherited = 0;           // of `calls`, those already in progress at the start
  // Of `total` and `self`, the ticks the thread spent off its CPU (blocked
  // or runnable: the kernel's context switches, trace 1.9); 0 without them.
  uint64_t wait = 0;
  uint64_t self_wait = 0;

  // One completed call that began at `entry_tick` and lasted `ticks`.
  void add_call(uint64_t entry_tick, uint64_t ticks) {
    ++calls;
    min = std::min(min, ticks);
    max = std::max(max, ticks);
    if (entry_tick < first_tick) {
      first_tick = entry_tick;
      first = ticks;
    }
  }

  // Adds `o` as more calls of the same thing (sums, extremes, earliest first).
  void merge(const Stats& o) {
    calls += o.calls;
    open += o.open;
    inherited += o.inherited;
    total += o.total;
    self += o.self;
    wait += o.wait;
    self_wait += o.self_wait;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    if (o.first_tick < first_tick) {
      first_tick = o.first_tick;
      first = o.first;
    }
  }

  // Averages per call (0 when there was no call), in ticks.
  double avg() const { return calls ? static_cast<double>(total) / static_cast<double>(calls) : 0.0; }
  double self_avg() const { return calls ? static_cast<double>(self) / static_cast<double>(calls) : 0.0; }
};

}  // namespace callscope::analysis
