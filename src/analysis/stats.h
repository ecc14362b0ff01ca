// The numbers kept for a function, a call-tree node or a caller/callee edge.
//
// Everything is in trace ticks (convert with TraceReader::ticks_to_ns at
// output). `calls` counts real entries only: a frame inherited from before the
// stream began (fork, resync after lost events) adds its observed time to
// `total` and `self` but is not a call, so it never sets min, max or first.
// A call still in progress when its thread or process ended, or when the
// snapshot was taken, is a call like any other, with the time observed so
// far; `open` counts those (a truncated exit in a recording, a node flagged
// open in a snapshot).
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
    total += o.total;
    self += o.self;
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
