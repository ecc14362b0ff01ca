// Running or waiting: each thread's time by state, from the kernel's
// context switches in the trace (trace 1.9, kSysEvents). A thread runs from
// its start; a switch-out makes it blocked (it waited: sleep, I/O, a lock,
// a stop) or runnable (preempted: it waited for a CPU); a switch-in makes
// it run again. Time outside the thread's life in the trace is not counted.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/result.h"
#include "format/sys_events.h"
#include "format/trace_reader.h"

namespace callscope::analysis {

struct ThreadStates {
  bool known = false;       // the trace has this thread's context switches: its states below are known
  bool has_events = false;  // the trace has the kernel's events of this thread (switches, calls, faults)
  uint64_t switches_blocked = 0;   // voluntary: the kernel's voluntary_ctxt_switches
  uint64_t switches_runnable = 0;  // involuntary: nonvoluntary_ctxt_switches
  uint64_t running = 0, runnable = 0, blocked = 0;  // ticks
  uint64_t lost = 0;  // the kernel's records dropped near this thread
  uint64_t syscalls = 0;  // system calls begun (--events syscalls)
  uint64_t sleep_states = 0, wakeups = 0;  // the sched tracepoints' events (root or CAP_PERFMON)
  uint64_t minor_faults = 0, major_faults = 0;  // page faults (--events faults)
  uint64_t kernel_faults = 0;                   // of them, taken by the kernel in a system call
  uint64_t samples = 0;                         // CPU samples (record --sample)
  uint64_t io_requests = 0;                     // block I/O requests begun (--events io)
  uint64_t io_read_bytes = 0, io_write_bytes = 0;
  uint64_t io_done = 0;                         // of them, seen complete
};

// From one thread's events (in time order), over [start, end] (ticks);
// `to_tick` puts an event's CLOCK_MONOTONIC time on the trace's clock.
// Without `switches` (record --events without sched) only the counts.
ThreadStates thread_states(const std::vector<format::SysEvent>& events, uint64_t start, uint64_t end,
                           const std::function<uint64_t(uint64_t)>& to_tick, bool switches = true);
// Every thread of the trace (unknown ones where it has no events of them).
Result<std::vector<ThreadStates>> thread_states(format::TraceReader& trace);

// A thread's time off its CPU, cumulative: waited(t) is the ticks it spent
// blocked or runnable before tick t (from a switch-out to the next
// switch-in). Asked with ticks that do not go backwards -- a stream's --
// each answer costs O(1) amortized; a tick earlier than the last one asked
// is searched for.
class WaitClock {
 public:
  WaitClock() = default;
  WaitClock(const std::vector<format::SysEvent>& events, const std::function<uint64_t(uint64_t)>& to_tick);
  bool empty() const { return starts_.empty(); }
  uint64_t waited(uint64_t tick);

 private:
  // Interval i is [starts_[i], ends_[i]); before_[i] the ticks waited
  // before it; ends_ of the last may be kNoEnd (off the CPU to the end).
  std::vector<uint64_t> starts_, ends_, before_;
  size_t cursor_ = 0;
  uint64_t last_ = 0;
};

}  // namespace callscope::analysis
