// A thread's block I/O requests (trace 1.12, record --events io), each with
// its completion: the pairing every view uses, as the recorder makes it --
// a completion goes with the latest request begun at its device and
// sector before it and not completed yet (a sector written and then read
// back has two; a request whose completion was lost does not take the next
// one's).
#pragma once

#include <cstdint>
#include <vector>

#include "format/sys_events.h"

namespace callscope::analysis {

struct IoRequest {
  const format::SysEvent* start = nullptr;  // its kIoStart: arg the device, args[0] the sector, args[1] the bytes
  uint64_t done_ns = 0;                     // its completion (CLOCK_MONOTONIC); 0: not in the trace
  int64_t error = 0;                        // the kernel's, at completion
  bool done() const { return done_ns != 0; }
};

// The requests of `events` (a thread's, in time order), in the order begun;
// they point into `events`. At most 4096 wait for their completions at
// once (more: the completions were lost; the oldest are left without).
std::vector<IoRequest> block_io_requests(const std::vector<format::SysEvent>& events);

}  // namespace callscope::analysis
