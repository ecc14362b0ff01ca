// Part of the recorder: while the program runs, a thread of `record` polls
// the session every few hundred microseconds and streams every traced
// thread's complete ring segments into the trace (format/live_stream.h says
// how, and why nothing is lost if the recorder dies).
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

class Drainer {
 public:
  // `server`: a recording that queries may attach to (query -p): served
  // after each poll.
  explicit Drainer(format::LiveStream& live, QueryServer* server = nullptr);
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
  format::LiveStream& live_;
  QueryServer* server_;
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
