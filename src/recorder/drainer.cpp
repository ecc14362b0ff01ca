#include "recorder/drainer.h"

#include "recorder/sys_stream.h"

#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "recorder/query_attach.h"

namespace callscope::recorder {
namespace {

// Without a doorbell: a ring holds 16 x 256 KiB = 4 MiB, about 100 ms of a
// single thread calling at full speed; polling every 200 us leaves it far
// from full.
constexpr auto kPoll = std::chrono::microseconds(200);
// The kernel's events are read at least this often.
constexpr int kSysRoundMs = 250;
// After a ring: one more poll this much later (timeout_ms says why).
constexpr int kRecheckMs = 6;
// A thread gone quiet with segments encoded but held: written after this.
constexpr auto kQuietFlush = std::chrono::seconds(1);

// CALLSCOPE_TEST_DRAIN_INTERVAL_MS=N (tests only): poll every N ms instead,
// deaf to the doorbell, a recorder that cannot keep up, so that the
// program's threads wait for it (tests/e2e/stream_test.cpp counts the waits
// the trace marks).
std::chrono::microseconds test_interval() {
  if (const char* v = std::getenv("CALLSCOPE_TEST_DRAIN_INTERVAL_MS"); v && *v)
    return std::chrono::microseconds(1000 * std::strtoul(v, nullptr, 10));
  return std::chrono::microseconds(0);
}

}  // namespace

Drainer::Drainer(format::LiveStream& live, QueryServer* server, int doorbell, SysStream* sys)
    : live_(live), doorbell_(doorbell), server_(server), sys_(sys), interval_(test_interval()) {
  // One descriptor per live thread of the program: take the hard limit.
  // The program was forked before, and keeps the limits it had.
  struct rlimit r {};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  thread_ = std::thread([this] { run(); });
}

Drainer::~Drainer() {
  stop();
  if (doorbell_ >= 0) ::close(doorbell_);
}

void Drainer::stop() {
  stop_ = true;
  if (doorbell_ >= 0) {
    const char bell = 0;
    (void)::write(doorbell_, &bell, 1);  // wakes the thread (a full FIFO wakes it too)
  }
  if (thread_.joinable()) thread_.join();
}

void Drainer::poll() {
  if (auto st = live_.poll(); !st && failure_.empty()) failure_ = st.error().message();
  if (sys_)
    if (auto st = sys_->poll(); !st && failure_.empty()) failure_ = st.error().message();
  if (server_) server_->poll();
}

void Drainer::every(std::chrono::nanoseconds every, std::function<void()> f) {
  std::lock_guard<std::mutex> lk(periodic_lock_);
  every_ = every;
  periodic_ = std::move(f);
  next_periodic_ = std::chrono::steady_clock::now() + every;
}

void Drainer::empty_doorbell() {
  char buf[4096];
  while (::read(doorbell_, buf, sizeof buf) > 0) {
  }
}

int Drainer::timeout_ms() {
  using namespace std::chrono;
  const auto now = steady_clock::now();
  int64_t ms = -1;
  const auto at_most = [&ms](int64_t t) { ms = ms < 0 ? t : std::min(ms, t); };
  if (live_.tapped()) at_most(static_cast<int64_t>((live_.tap_round_ns() + 999'999) / 1'000'000));
  // Rung lately: once more after the stream's next directory scan is due
  // (it scans at most every 5 ms), so that a thread whose ring was found
  // full before its file was seen is taken then -- its writer rang once,
  // before it began to wait, and rings no more.
  if (recheck_) at_most(kRecheckMs);
  if (server_ && server_->waiting()) at_most(100);  // a hello's deadline
  // The perf rings wake us a quarter full; what is below that is read
  // this often (a quiet program's last switches, for a live view).
  if (sys_) at_most(kSysRoundMs);
  {
    std::lock_guard<std::mutex> lk(periodic_lock_);
    if (periodic_) at_most(std::max<int64_t>(0, duration_cast<milliseconds>(next_periodic_ - now).count() + 1));
  }
  if (live_.holding())
    at_most(std::max<int64_t>(0, duration_cast<milliseconds>(last_work_ + kQuietFlush - now).count() + 1));
  return static_cast<int>(std::min<int64_t>(ms, 60'000));
}

void Drainer::run() {
  last_work_ = std::chrono::steady_clock::now();
  while (!stop_) {
    poll();
    {
      std::lock_guard<std::mutex> lk(periodic_lock_);
      if (periodic_ && std::chrono::steady_clock::now() >= next_periodic_) {
        periodic_();
        next_periodic_ = std::chrono::steady_clock::now() + every_;
      }
    }
    if (doorbell_ < 0 || interval_.count() > 0) {
      // Longer while the program writes little (LiveStream::poll_wait_ns).
      std::this_thread::sleep_for(interval_.count() > 0 ? std::chrono::nanoseconds(interval_)
                                                        : std::max<std::chrono::nanoseconds>(
                                                              kPoll, std::chrono::nanoseconds(live_.poll_wait_ns())));
      continue;
    }
    std::vector<pollfd> fds{{doorbell_, POLLIN, 0}};
    if (server_) server_->add_poll_fds(fds);
    const size_t sys_first = fds.size();
    if (sys_) sys_->add_poll_fds(fds);
    const int n = ::poll(fds.data(), fds.size(), timeout_ms());
    const auto now = std::chrono::steady_clock::now();
    if (n > 0) {
      if (fds[0].revents & POLLIN) empty_doorbell();
      // Every thread followed has ended: the rings stay readable, and would
      // wake us at once from now on.
      for (size_t i = sys_first; i < fds.size(); ++i)
        if (fds[i].revents & (POLLHUP | POLLERR)) sys_->stop_polling();
      last_work_ = now;
      recheck_ = true;
    } else if (n == 0) {
      recheck_ = false;
    }
    if (n == 0 && live_.holding() && now >= last_work_ + kQuietFlush) {
      // Nothing rang for a second: what quiet threads left held goes to
      // the trace (a recorder killed later loses nothing of it).
      if (auto st = live_.flush_held(); !st && failure_.empty()) failure_ = st.error().message();
      last_work_ = now;
    }
  }
}

}  // namespace callscope::recorder
