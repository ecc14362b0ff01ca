// A query while the program runs (query -c): the trace as far as the
// recorder has got. The recorder's thread hands over, every few
// milliseconds, each thread's new events (format/live_stream.h's tap);
// the query's thread takes them here and keeps the trace's metadata --
// processes, modules, threads -- up to date from the raw session, so that
// the driver (driver.h) matches the functions of every module as it is
// loaded and fires process and thread events as they happen.
//
// Time order: the driver fires what happened up to the horizon of the
// last delivery, a couple of milliseconds behind the clock. An event that
// a thread stored later than that (preempted between reading the clock
// and storing the event) fires when it comes, out of order by that much.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "format/live_stream.h"
#include "format/trace_reader.h"

namespace callscope::query {

class LiveTrace final : public format::LiveTap {
 public:
  // The tap exists before the program starts (deliveries wait here); the
  // trace begins once the recorder has chosen its clock. `session`: the raw
  // session directory ("" for none: no program, clock probes only). Ticks
  // count from `origin` of `clock`.
  void begin(std::string session, format::ClockKind clock, uint64_t origin, double ticks_per_ns);

  format::TraceReader& trace() { return *trace_; }
  // The clock now, in trace ticks.
  uint64_t now_tick() const;
  // The kernel's events are on CLOCK_MONOTONIC: their time in trace ticks,
  // by the last resync_mono() -- the rate measured over the run so far,
  // from the moment it was last read (the rate measured over 20 ms at the
  // start is off by enough to misplace an event by tens of microseconds
  // after a second, and put a system call on the wrong side of a call).
  void resync_mono();
  uint64_t mono_tick(uint64_t mono_ns) const;

  // On the recorder's thread. While the query is more than kMaxQueued
  // events behind, the recorder waits here (and the program's threads wait
  // for the recorder, as under record: nothing is dropped), until release().
  // The thread that called consume_here() (the query's, when it drains the
  // rings itself: LiveHost::drain_here) never waits: it takes what it
  // delivered before it drains again.
  void deliver(format::LiveDelivery&& d) override;
  static constexpr size_t kMaxQueued = size_t{1} << 21;
  bool reuse(format::EventColumns& into) override;
  // Buffers the driver has read (Driver::take_spent), for reuse().
  void give_back(std::vector<format::EventColumns>&& spent);
  // The recorder no longer waits for the query (it is about to be stopped
  // and joined by the query's own thread).
  void release();
  // From now on the calling thread delivers too, and never waits; a
  // delivery waiting for room goes on.
  void consume_here();
  // Waits up to `timeout` for a delivery, then takes every one waiting.
  std::vector<format::LiveDelivery> take(std::chrono::nanoseconds timeout);

  // Brings the metadata up to date: the threads the deliveries name, and
  // (reread, or a thread of a process not known yet) the processes and
  // modules of the raw session. True when the trace lists more than
  // before, or something has ended.
  bool update(const std::vector<format::LiveDelivery>& deliveries, bool reread);
  // Whether process `pid` has started and listed its modules.
  bool has_process(int64_t pid) const;
  // The trace's thread `tid` of process `pid` at `tick` (the kernel's
  // events name threads so), once a delivery has started it.
  std::optional<uint32_t> thread_of(uint32_t pid, uint32_t tid, uint64_t tick) const;
  // A thread of the kernel's events alone (format::kThreadKernelOnly), made
  // for `tid` of process `pid` at `tick` where that process has no thread
  // of its own (a program without hooks); none otherwise.
  std::optional<uint32_t> kernel_only_thread(uint32_t pid, uint32_t tid, uint64_t tick);

 private:
  bool read_session();
  // Whether the processes' meta files grew since the last look (a module
  // loaded, a process started or ended): cheap, a stat per process.
  bool meta_grew();
  std::string session_;
  uint64_t meta_bytes_ = 0;
  format::ClockKind clock_ = format::ClockKind::kMonotonic;
  uint64_t origin_ = 0;
  double ticks_per_ns_ = 1.0;
  std::unique_ptr<format::TraceReader> trace_;
  struct ClockPair {
    uint64_t mono = 0, tick = 0;
  };
  ClockPair mono_first_, mono_last_;
  double mono_rate_ = 0;  // ticks per ns; 0: not synced yet
  std::map<std::string, uint32_t> process_of_dir_;  // "<pid>.<n>" -> process index
  std::map<uint32_t, size_t> modules_read_;         // process index -> raw module records taken
  std::vector<bool> thread_ended_;
  // (pid, tid) -> (start tick, thread index) of each thread so named, in the order started
  std::map<std::pair<uint32_t, uint32_t>, std::vector<std::pair<uint64_t, uint32_t>>> by_tid_;

  std::mutex m_;
  std::condition_variable cv_;
  std::vector<format::LiveDelivery> queue_;
  size_t queued_events_ = 0;
  std::vector<format::EventColumns> pool_;
  bool released_ = false;
  std::thread::id consumer_;
};

}  // namespace callscope::query
