#include "cli/drainer.h"

#include <sys/resource.h>

#include <chrono>

#include "cli/query_attach.h"

namespace callscope::cli {
namespace {

// A ring holds 16 x 256 KiB = 4 MiB, about 100 ms of a single thread calling
// at full speed; polling every 200 us leaves it far from full.
constexpr auto kPoll = std::chrono::microseconds(200);

}  // namespace

Drainer::Drainer(format::LiveStream& live, QueryServer* server) : live_(live), server_(server) {
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
    std::this_thread::sleep_for(kPoll);
  }
}

}  // namespace callscope::cli
