// Part of the recorder: while the program runs, a thread of `record`
// streams every traced thread's complete ring segments into the trace
// (format/live_stream.h says how, and why nothing is lost if the recorder
// dies). It sleeps until the runtime rings the session's doorbell (a
// segment complete, a writer about to wait, a thread's end: raw_layout.h,
// kDoorbellName) or a query knocks; timers only where something is due: a
// tap's rounds while a query reads (every 2 ms, up to 64 ms while they find
// nothing: LiveStream::tap_round_ns), a periodic task (--memory's
// resident-set samples), and a quiet thread's held segments written after
// a second. An idle program costs it no wakeup.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "format/live_stream.h"

namespace callscope::recorder {

class QueryServer;
class SysStream;

class Drainer {
 public:
  // `server`: a recording that queries may attach to (query -p): served
  // after each poll. `doorbell`: the read end of the session's doorbell
  // (owned; -1: none, then it polls every few hundred microseconds).
  // `sys`: the kernel's events of the program's threads (context
  // switches), read beside the rings (null: none).
  Drainer(format::LiveStream& live, QueryServer* server, int doorbell, SysStream* sys = nullptr);
  ~Drainer();  // stops the thread
  Drainer(const Drainer&) = delete;
  Drainer& operator=(const Drainer&) = delete;
  // Stops polling; the stream is the caller's again.
  void stop();
  // One poll, on the caller's thread (once stopped: a caller that drains
  // the stream itself, between its own work).
  void poll();
  // The error that stopped the stream (empty while it goes on).
  const std::string& failure() const { return failure_; }
  // Also runs `f` on the drainer's thread every `every` (before the thread
  // starts polling: call it right after construction).
  void every(std::chrono::nanoseconds every, std::function<void()> f);

 private:
  void run();
  // How long the thread may sleep now: -1 for as long as nothing rings.
  int timeout_ms();
  // Reads every byte the doorbell holds.
  void empty_doorbell();
  format::LiveStream& live_;
  int doorbell_;
  std::chrono::steady_clock::time_point last_work_{};
  bool recheck_ = false;  // rung lately (timeout_ms)
  QueryServer* server_;
  SysStream* sys_;
  const std::chrono::microseconds interval_;  // between two polls
  std::atomic<bool> stop_{false};
  std::mutex periodic_lock_;
  std::chrono::nanoseconds every_{0};
  std::function<void()> periodic_;
  std::chrono::steady_clock::time_point next_periodic_{};
  std::string failure_;
  std::thread thread_;
};

}  // namespace callscope::recorder
