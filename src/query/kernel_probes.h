// The probes of the kernel's events over a recording (docs/query.md:
// syscall, sched, pf, io, and profile-N where the recording has CPU
// samples): which are enabled, the trace's events they fire
// on (record --events, sys_events.h), every thread's merged in time order,
// and what those events tell of each thread between them -- its last
// system call's error, whether it is on a CPU (profile-N fires only then),
// its block requests under way. The driver (driver.cpp) merges next_key()
// with its other sources and says how a firing in a thread is made (Host).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "format/sys_events.h"
#include "query/engine.h"
#include "query/probes.h"
#include "query/proc_events.h"

namespace callscope::format {
class TraceReader;
}

namespace callscope::query {

class KernelProbes {
 public:
  // What fires the probes: the driver.
  class Host {
   public:
    // A firing of `p` in thread `thread` (an index of the trace's threads)
    // at `tick`, with what the thread knows then (ids, names, call path).
    virtual Firing in_thread(uint32_t thread, const ProbeInfo* p, uint64_t tick) = 0;
    // A firing outside the program's threads.
    virtual Firing outside_threads(const ProbeInfo* p, uint64_t tick) = 0;
    virtual void fire(const Firing& f) = 0;
    // A firing of `p` whose clauses only count by the probe's names
    // (Consumer::tallies) is added up instead: true, and no firing to make.
    virtual bool tally_only(const ProbeInfo* p) = 0;
    // exit() was called: no more firings.
    virtual bool stopped() const = 0;
    // A name from the trace as a D string (terminal-safe when the driver's are).
    virtual uint32_t intern_name(const std::string& s) = 0;

   protected:
    ~Host() = default;
  };

  // Probe `p` of the catalog is enabled (`info` its engine's view): kept
  // when it is one of these providers'.
  void enable(const Probe& p, const ProbeInfo* info);

  // Reads the events of the trace's threads that the enabled probes need;
  // with `profile` (profile-N is enabled) the context switches too, where
  // the trace has them, so that on_cpu() says who runs. An error: a block
  // that could not be read (the rest is read).
  Status load(format::TraceReader& trace, bool profile);
  // Live (query -c): the events come as the recorder reads them, through
  // add_live(); `switches`: the recording has the context switches.
  void begin_live(const format::TraceReader& trace, bool profile, bool switches, bool samples);
  // More events of thread `thread` (an index of the trace's threads, known
  // by now), in time order, after those given before.
  // `tick_of`: an event's time (CLOCK_MONOTONIC) in trace ticks.
  void add_live(uint32_t thread, const std::vector<format::SysEvent>& events,
                const std::function<uint64_t(uint64_t)>& tick_of);

  // The merge key (proc_events.h's event_key) of the next event, or kNever.
  uint64_t next_key() const { return next_ < events_.size() ? events_[next_].key : kNever; }
  // Fires the enabled probes of the next event.
  void fire_next(Host& host);

  // Whether profile-N fires by who is on a CPU (load() read the switches),
  // and whether thread `thread` is on one now.
  bool profile_on_cpu() const { return profile_on_cpu_; }
  // Whether profile-N fires at the recording's CPU samples (record
  // --sample) instead of on the clock, and their rate (0: not known).
  bool profile_from_samples() const { return profile_from_samples_; }
  double samples_hz() const { return samples_hz_; }
  bool on_cpu(uint32_t thread) const { return thread >= state_.size() || state_[thread].on_cpu; }
  // vtimestamp: a script reads the threads' time on a CPU (the switches
  // are then kept; before load or begin_live); thread `thread`'s at `tick`,
  // in ticks (`start`: the thread's start, for a thread no switch has
  // named yet: on a CPU since then).
  void want_vtime() { vtime_ = true; }
  uint64_t vtime_ticks(uint32_t thread, uint64_t tick, uint64_t start) const;

 private:
  struct Item {
    uint64_t key;
    uint32_t thread;
    format::SysEvent e;
  };
  // What the events tell of a thread.
  struct ThreadState {
    int64_t pid = 0;  // its process's (a waker's tid names a thread of the trace only with its pid)
    int32_t last_errno = 0;  // its last system call's error
    bool on_cpu = true;
    // Its time on a CPU (vtimestamp): before its last switch in, and when.
    uint64_t oncpu_ticks = 0, since = 0;
    // Its block requests begun and not done, by (device, sector): their
    // bytes and flags, which the completion does not say.
    std::map<std::pair<uint64_t, uint64_t>, std::pair<uint64_t, int64_t>> io_pending;
  };

  // Which events load() and add_live() keep, from the probes enabled.
  void choose(bool profile, bool switches_recorded);
  bool wanted(format::SysKind kind) const;
  // Thread `thread`'s state, and its process's pid; whether it has it.
  void add_thread(uint32_t thread);
  bool added(uint32_t thread) const { return thread < state_.size() && state_[thread].pid != 0; }

  void fire_all(Host& host, const std::vector<const ProbeInfo*>& probes, uint32_t thread, uint64_t tick,
                const std::function<void(Firing&)>& fill);
  void fire_wakeup(Host& host, const Item& item, uint64_t tick);
  void fire_io(Host& host, const Item& item, uint64_t tick);
  void fire_sample(Host& host, const Item& item, uint64_t tick);

  // Enabled probes: by system call number, SchedEvent, FaultKind, start/done.
  std::vector<std::vector<const ProbeInfo*>> syscall_entry_, syscall_return_;
  std::vector<const ProbeInfo*> sched_[kSchedEvents];
  std::vector<const ProbeInfo*> fault_[3];
  std::vector<const ProbeInfo*> io_[2];
  std::vector<const ProbeInfo*> profile_;
  std::vector<const ProbeInfo*> exec_failure_;
  int64_t execve_ = -1, execveat_ = -1;  // their system call numbers

  const format::TraceReader* trace_ = nullptr;
  std::vector<Item> events_;
  size_t next_ = 0;
  std::vector<ThreadState> state_;                  // by thread index
  std::unordered_map<int64_t, uint32_t> by_tid_;    // a waker's thread
  std::map<uint64_t, uint32_t> device_names_;       // dev_t -> its name's string id
  bool profile_on_cpu_ = false;
  bool profile_from_samples_ = false;
  bool live_ = false;
  bool vtime_ = false;
  double samples_hz_ = 0;
  std::vector<uint64_t> sample_stack_;  // a firing's frames, from a sample's
  bool keep_calls_ = false, keep_switches_ = false, keep_faults_ = false, keep_io_ = false;  // kept (choose)
};

}  // namespace callscope::query
