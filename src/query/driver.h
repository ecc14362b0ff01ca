// The driver of a query over a recorded trace: enables the probes a
// program's clauses describe (probes.h), then fires them in time order
// across every thread of every process, with what each firing knows
// (engine.h's Firing), and stops at exit() or at the end of the trace,
// firing END.
//
// Time order: each thread's events are decoded on a thread of their own
// (as report_model.cpp does) and merged by tick with the process and
// thread events of the trace's metadata (proc:::start, lwp-exit, ...) and
// the clock probes' ticks. A trace of one thread goes straight through.
//
// Only probes with clauses fire: an entry whose function has no enabled
// probe costs a table lookup (the last address looked up is kept, so a
// recursion costs less).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "format/sys_events.h"
#include "query/engine.h"
#include "query/probes.h"

namespace callscope::format {
class TraceReader;
struct EventColumns;
}
namespace callscope::symbolize {
class Symbolizer;
}

namespace callscope::query {

// What the driver fires into: the Engine (EngineConsumer), or a test's
// recorder.
class Consumer {
 public:
  virtual void enable(const ProbeInfo& probe, size_t clause) = 0;
  virtual void fire(const Firing& f) = 0;
  // Firings of `probe` only count (Engine::tallies): the driver may add
  // them up and pass them on as one fire_tally, before any other firing.
  virtual bool tallies(const ProbeInfo&) const { return false; }
  virtual void fire_tally(const Firing& f, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) fire(f);
  }
  // exit() was called: no more firings but END.
  virtual bool exited() const = 0;

 protected:
  ~Consumer() = default;
};

struct DriverStats {
  uint64_t events = 0;    // trace events read
  uint64_t firings = 0;   // probes fired
};

class Driver {
 public:
  // `sym` names functions the symbol tables did not list and the frames of
  // stacks; it must outlive the driver.
  Driver(format::TraceReader& trace, Catalog& catalog, symbolize::Symbolizer& sym, Strings& strings);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Enables, for each clause, the probes its descriptions match. A
  // description that matches nothing is an error unless allow_zero (-Z).
  // Without `reads_stack` (Program::reads_stack) and without return probes
  // the threads' call paths are not kept: entries fire, exits cost nothing.
  Status enable(const std::vector<std::vector<ProbeSpec>>& clauses, bool allow_zero, Consumer& consumer,
                bool reads_stack = true);
  // Whether names from the trace become terminal-safe D strings (text
  // output, the default) or stay as they are (JSON quotes them itself).
  // Before enable().
  void set_terminal_safe(bool on);
  // The engine's view of probe `id` (dtrace:::ERROR for set_error_probe),
  // valid as long as the driver.
  const ProbeInfo& probe_info(uint32_t id);
  // Fires BEGIN, the trace's probes in time order, then END.
  Status run(Consumer& consumer);
  // The script reads vtimestamp (Program::reads_vtimestamp): the threads'
  // time on a CPU, from the context switches. Before run() or live_begin().
  void want_vtimestamp();
  // Live (query -c): the trace (TraceReader::growing) grows while the
  // program runs, and the caller hands the driver the events the recorder
  // reads (live.h). live_begin() in place of enable()'s run(): BEGIN.
  // `since` (trace ticks): attached to a recording then (query -p): process
  // and thread events before it do not fire, BEGIN fires then and clocks
  // count from it. `switches`: the recording has the context switches
  // (profile-N fires in the threads on a CPU); `samples`: CPU samples
  // (profile-N fires at them).
  void live_begin(Consumer& consumer, uint64_t since = 0, bool switches = false, bool samples = false);
  // The trace lists more processes, modules or threads than before.
  void live_grew();
  // Thread `thread`'s next events; then, once it has ended, live_ended().
  void live_events(uint32_t thread, format::EventColumns&& events);
  void live_ended(uint32_t thread);
  // The kernel's events of thread `thread` (syscall, sched, pf, io probes),
  // in time order, after those given before: they fire in time order with
  // the calls as long as the horizon given to live_advance() is no later
  // than the recorder's for them (LiveDelivery::sys_horizon_ns).
  // `tick_of`: an event's CLOCK_MONOTONIC time in trace ticks.
  void live_kernel_events(uint32_t thread, const std::vector<format::SysEvent>& events,
                          const std::function<uint64_t(uint64_t)>& tick_of);
  // Fires, in time order, what happened up to `horizon` (trace ticks):
  // events, process and thread events, clock ticks.
  // `clocks_until`: clocks fire up to this tick only (the end: every event
  // has come, horizon ~0, and the clock must not run on without bound).
  void live_advance(uint64_t horizon, uint64_t clocks_until = ~uint64_t{0});
  // END, at `tick` or at the last event fired, whichever is later.
  void live_end(uint64_t tick);
  // exit() was called.
  bool exited() const;
  // The buffers of live_events() read since the last call, for reuse.
  std::vector<format::EventColumns> take_spent();
  // What matching new modules' functions met (unreadable symbols).
  std::vector<std::string> take_warnings();

  // What pid$target left out of a trace of several processes (a line to
  // say on stderr: other_processes.h), or "".
  std::string other_processes_note() const;

  // The name Stacks print for an address: "module`function" (form 0) or
  // "module" (form 1), cached.
  std::string symbol(uint32_t process, uint64_t addr, uint8_t form);
  // The address that stands for `addr` as an aggregation key
  // (Stacks::normalize): the first one met of the same function (forms 0
  // and 2) or module (form 1), so that ufunc() of two instructions of one
  // function is one row. An address of no known function stays itself.
  uint64_t normalize(uint32_t process, uint64_t addr, uint8_t form);

  // The process $target stands for offline: the one `record` started.
  static std::optional<uint64_t> target_pid(const format::TraceReader& trace);

  const DriverStats& stats() const { return stats_; }

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  DriverStats stats_;
};

}  // namespace callscope::query
