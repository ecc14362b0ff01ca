// Who woke a thread, and where it was: the call path a traced waker had at
// the moment of a wakeup (trace 1.10: record's sched tracepoints name the
// waker's pid and tid). "Woken by tid 123" becomes "woken by tid 123 in
// main > release": the frames open in the waker's own stream then.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "common/result.h"
#include "format/trace_reader.h"

namespace callscope::analysis {

struct WakerQuery {
  uint32_t pid = 0, tid = 0;  // the waker
  uint64_t tick = 0;          // the wakeup
};

class WakerPaths {
 public:
  // The call paths of the wakers asked for, each from one pass over its
  // thread's events. A waker that is not a thread of the trace (another
  // program, an untraced thread) has none.
  static Result<WakerPaths> find(format::TraceReader& trace, const std::vector<WakerQuery>& queries);
  // The frames open in the waker at the wakeup (addresses, outermost
  // first), and its thread (index in TraceReader::threads()); null when
  // it was not asked or is not known.
  struct Path {
    uint32_t thread = 0;
    std::vector<uint64_t> frames;
  };
  const Path* at(const WakerQuery& q) const;

 private:
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, Path> paths_;
};

}  // namespace callscope::analysis
