// The process and thread events of a trace's metadata, as the driver fires
// them (proc:::start, exec-success, create, exit, lwp-start, lwp-exit,
// module-load, module-unload), in time order, and the keys that order them
// among the threads' events and the clocks' ticks at one tick.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "query/probes.h"

namespace callscope::format {
class TraceReader;
}

namespace callscope::query {

inline constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
inline constexpr uint32_t kNoIndex = std::numeric_limits<uint32_t>::max();  // a process event of no thread

// Keys order everything that happens at one tick: what starts (a process,
// a thread, a clock tick) before the events of that tick, what ends after.
inline uint64_t start_key(uint64_t tick) { return tick * 3; }
inline uint64_t event_key(uint64_t tick) { return tick * 3 + 1; }
inline uint64_t end_key(uint64_t tick) { return tick * 3 + 2; }

// A process or thread event of the metadata, in time order.
struct Meta {
  uint64_t key;
  int rank;  // order at one key: create, start, module-load, lwp-start; module-unload, lwp-exit, exit
  ProcEvent what;
  uint32_t process, thread;  // thread: kNoIndex for process events without one
  int64_t arg0;
  uint32_t ident = 0;  // what it is about: the process (the child, for create), thread or module index
};

// The events of the trace's first `threads` threads, its processes and
// modules, sorted by key then rank. `live`: the trace is being recorded;
// a process's events wait for its first thread (they fire in it) unless it
// has ended without one, and a thread's lwp-exit comes once ended(thread).
std::vector<Meta> process_events(const format::TraceReader& trace, size_t threads, bool live,
                                 const std::function<bool(uint32_t)>& ended);

}  // namespace callscope::query
