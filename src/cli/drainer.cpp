#include "cli/drainer.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "cli/query_attach.h"

namespace callscope::cli {
namespace {

// A ring holds 16 x 256 KiB = 4 MiB, about 100 ms of a single thread calling
// at full speed; polling every 200 us leaves it far from full.
constexpr auto kPoll = std::chrono::microseconds(200);

// CALLSCOPE_TEST_DRAIN_INTERVAL_MS=N (tests only): poll every N ms instead,
// a recorder that cannot keep up, so that the program's threads wait for it
// (tests/e2e/stream_test.cpp counts the waits the trace marks).
std::chrono::microseconds poll_interval() {
  if (const char* v = std::getenv("CALLSCOPE_TEST_DRAIN_INTERVAL_MS"); v && *v)
    return std::chrono::microseconds(1000 * std::strtoul(v, nullptr, 10));
  return kPoll;
}

}  // namespace

Drainer::Drainer(format::LiveStream& live, QueryServer* server)
    : live_(live), server_(server), interval_(poll_interval()) {
  // One descriptor per live thread of the program: take the hard limit.
  // The program was forked before, and keeps the limits it had.
  struct rlimit r {};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  thread_ = std::thread([this] { run(); });
}

Drainer::~Drainer() { stop(); }

void Drainer::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Drainer::poll() {
  if (auto st = live_.poll(); !st && failure_.empty()) failure_ = st.error().message();
  if (server_) server_->poll();
}

void Drainer::every(std::chrono::nanoseconds every, std::function<void()> f) {
  std::lock_guard<std::mutex> lk(periodic_lock_);
  every_ = every;
  periodic_ = std::move(f);
  next_periodic_ = std::chrono::steady_clock::now() + every;
}

void Drainer::run() {
  while (!stop_) {
    poll();
    {
      std::lock_guard<std::mutex> lk(periodic_lock_);
      if (periodic_ && std::chrono::steady_clock::now() >= next_periodic_) {
        periodic_();
        next_periodic_ = std::chrono::steady_clock::now() + every_;
      }
    }
    // Longer while the program writes little (LiveStream::poll_wait_ns).
    std::this_thread::sleep_for(
        std::max<std::chrono::nanoseconds>(interval_, std::chrono::nanoseconds(live_.poll_wait_ns())));
  }
}

}  // namespace callscope::cli
