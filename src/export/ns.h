// Trace ticks as whole nanoseconds, rounded the same way by every exporter
// (a callee's end, converted alone, never passes its caller's).
#pragma once

#include <cstdint>

#include "format/trace_reader.h"

namespace callscope::exporter {

inline uint64_t ns_of(const format::TraceReader& t, uint64_t ticks) {
  return static_cast<uint64_t>(t.ticks_to_ns(ticks) + 0.5);  // ticks_to_ns is never negative
}

}  // namespace callscope::exporter
