// Calls still in progress at a snapshot, counted in their nodes:
// shared by the runtime (snapshots on demand) and by finalization (the last
// snapshot, read from t<tid>.prof after the process ended). Plain C++ on the
// raw structs, so the runtime may include it.
#pragma once

#include <stdint.h>

#include "format/trace_format.h"

namespace callscope::format {

// A node with no call: what a new node starts with and a clear leaves.
__attribute__((no_instrument_function)) inline void reset_node_stats(RawProfNode& n) {
  n.calls = n.total = n.self = n.max = n.first = 0;
  n.inherited = 0;
  n.min = ~uint64_t{0};
  n.first_tick = ~uint64_t{0};
}

// Counts each open frame of `stack` (depth frames, outermost first) in its
// node of `nodes` (count of them) as one call that lasted until `now`, as a
// recording counts a frame still open at the end (closed as truncated): one
// more call, its time so far in total, self, min, max and first. Frames that
// began before `floor` count from `floor` with nothing in their callees (a
// clear the thread had not applied). Marks those nodes kProfNodeOpen (a node
// has at most one open frame: recursion makes deeper nodes).
__attribute__((no_instrument_function)) inline void add_open_time(RawProfNode* nodes, uint64_t count,
                                                                  const RawProfFrame* stack, uint32_t depth,
                                                                  uint64_t now, uint64_t floor) {
  uint64_t above = 0;  // open callee's time so far, plus completed callees of excluded frames between
  for (uint32_t i = depth; i-- > 0;) {
    const RawProfFrame f = stack[i];
    uint64_t start = f.tick, child = f.child;
    if (start < floor) {
      start = floor;
      child = 0;
    }
    const uint64_t el = now > start ? now - start : 0;
    if (f.flags & kProfFrameExcluded) {
      above += child;
      continue;
    }
    if (f.node < count && f.node != 0) {
      RawProfNode& n = nodes[f.node];
      ++n.calls;
      if (f.flags & kProfFrameInherited) ++n.inherited;
      n.total += el;
      const uint64_t below = child + above;
      n.self += el > below ? el - below : 0;
      if (el < n.min) n.min = el;
      if (el > n.max) n.max = el;
      if (n.first_tick == ~uint64_t{0} || start < n.first_tick) {
        n.first_tick = start;
        n.first = el;
      }
      n.flags |= kProfNodeOpen;
    }
    above = el;
  }
}

// Where a snapshot at `now` ends the open calls of a thread that has not
// acted on the stops and starts `first` (a stop) to `last`: it made no call
// since the first, so its frames are those from before it, paused from each
// stop to the next start (or to now) -- that time is taken out. `tick_of(k)`
// is the tick of switch k. Shared by the runtime's snapshots and by the
// last snapshot that finalization makes of a thread alive at the end.
template <class TickOf>
__attribute__((no_instrument_function)) inline uint64_t running_end(uint64_t first, uint64_t last, uint64_t now,
                                                                    TickOf tick_of) {
  uint64_t paused = 0;
  for (uint64_t k = first; k <= last; k += 2) {
    const uint64_t stop = tick_of(k), start = k + 1 <= last ? tick_of(k + 1) : now;
    paused += start > stop ? start - stop : 0;
  }
  return now > paused ? now - paused : 0;
}

}  // namespace callscope::format
