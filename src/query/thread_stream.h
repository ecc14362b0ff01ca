// One thread's events for the driver's merge (driver.cpp): decoded from a
// recorded trace on a thread of its own, a few batches ahead (ThreadStream),
// and read through a view that a live delivery fills as well (BatchView).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "common/result.h"
#include "format/trace_reader.h"

namespace callscope::query {

struct CallBatch {
  // Left uninitialised (new[] of trivial types), as report_model.cpp's.
  std::unique_ptr<format::EventKind[]> kinds{new format::EventKind[format::TraceReader::kEventBatch]};
  std::unique_ptr<uint64_t[]> ticks{new uint64_t[format::TraceReader::kEventBatch]};
  // Up to two values an event (an allocation's: CallSink::wants_memory).
  std::unique_ptr<uint64_t[]> values{new uint64_t[2 * format::TraceReader::kEventBatch]};
  size_t n = 0, n_values = 0;
};

// The batch a thread's merge reads: a CallBatch, or a live delivery.
struct BatchView {
  const format::EventKind* kinds = nullptr;
  const uint64_t* ticks = nullptr;
  const uint64_t* values = nullptr;
  size_t n = 0;
};

// One thread's events, decoded on a thread of their own into a few slots.
// Decoders of several streams take turns (decode_lock): TraceReader
// records damage in a list of its own, which two decoders must not
// append to at once; a decoder lets the next one in while it waits for
// room, so every stream moves.
class ThreadStream {
 public:
  // memory: memory events too (the alloc provider's probes are enabled).
  ThreadStream(format::TraceReader& trace, uint32_t thread, std::mutex& decode_lock, bool memory = false) {
    producer_ = std::thread([this, &trace, thread, &decode_lock, memory] {
      std::unique_lock<std::mutex> decoding(decode_lock);
      Sink sink(*this, decoding, memory);
      auto st = trace.for_each_call_event_into(thread, sink);
      decoding.unlock();
      std::lock_guard<std::mutex> lk(m_);
      result_ = st;
      done_ = true;
      cv_.notify_all();
    });
  }
  ~ThreadStream() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
      cv_.notify_all();
    }
    producer_.join();
  }
  ThreadStream(const ThreadStream&) = delete;
  ThreadStream& operator=(const ThreadStream&) = delete;

  // The next batch (the previous one is given back), nullptr at the end.
  const CallBatch* next() {
    std::unique_lock<std::mutex> lk(m_);
    if (holding_) {
      slots_[r_].full = false;
      r_ = (r_ + 1) % kSlots;
      holding_ = false;
      cv_.notify_all();
    }
    cv_.wait(lk, [&] { return slots_[r_].full || done_; });
    if (!slots_[r_].full) return nullptr;
    holding_ = true;
    return &slots_[r_].batch;
  }
  Status status() {
    std::lock_guard<std::mutex> lk(m_);
    return result_;
  }

 private:
  static constexpr size_t kSlots = 3;
  struct Slot {
    CallBatch batch;
    bool full = false;
  };
  struct Sink final : format::TraceReader::CallSink {
    ThreadStream& s;
    std::unique_lock<std::mutex>& decoding;
    size_t w = 0;
    CallBatch local;
    const bool memory;
    Sink(ThreadStream& stream, std::unique_lock<std::mutex>& d, bool m) : s(stream), decoding(d), memory(m) {}
    bool wants_memory() const override { return memory; }
    format::TraceReader::CallColumns buffer() override { return {local.kinds.get(), local.ticks.get(), local.values.get()}; }
    bool commit(size_t n, size_t n_values) override {
      std::unique_lock<std::mutex> lk(s.m_);
      if (s.slots_[w].full && !s.stop_) {
        lk.unlock();
        decoding.unlock();  // others decode while this one waits
        lk.lock();
        s.cv_.wait(lk, [&] { return !s.slots_[w].full || s.stop_; });
        lk.unlock();
        decoding.lock();
        lk.lock();
      }
      if (s.stop_) return false;
      CallBatch& to = s.slots_[w].batch;
      std::memcpy(to.kinds.get(), local.kinds.get(), n * sizeof(format::EventKind));
      std::memcpy(to.ticks.get(), local.ticks.get(), n * sizeof(uint64_t));
      std::memcpy(to.values.get(), local.values.get(), n_values * sizeof(uint64_t));
      to.n = n;
      to.n_values = n_values;
      s.slots_[w].full = true;
      s.cv_.notify_all();
      w = (w + 1) % kSlots;
      return true;
    }
  };

  Slot slots_[kSlots];
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false, stop_ = false, holding_ = false;
  size_t r_ = 0;
  Status result_ = ok_status();
  std::thread producer_;
};

}  // namespace callscope::query
