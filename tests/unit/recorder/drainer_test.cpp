// The recorder's drain loop (recorder/drainer.h over format/live_stream.h)
// against fake ring producers: threads of this test that write a thread
// file's ring the way the runtime does (runtime/thread.cpp, enter_segment:
// a kSpBase at each segment's start, `committed` published after a fence,
// the doorbell rung at each complete segment and before a wait, the slot
// reused only once `drained` has passed it) -- no program runs. What must
// hold: every call written is in the trace, exactly, also when the ring
// wraps many times and the writer has to wait; the recorder drains when
// rung, with no timer (a writer stuck on a full ring would hang this test:
// it fails after a minute instead); a quiet thread's held segments are
// given back after a while; two writers at once keep their own streams.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "format/finalize.h"
#include "format/live_stream.h"
#include "format/raw_session.h"
#include "format/trace_reader.h"
#include "recorder/drainer.h"
#include "../format/trace_test_util.h"

namespace callscope::recorder {
namespace {

using format::RawKind;
using format::RawThreadHeader;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kSegmentWords = format::kSegmentBytes / 8;
constexpr uint64_t kRingBytes = uint64_t{format::kRingSegments} * format::kSegmentBytes;
constexpr uint64_t kSpBase = 0x7ffff0000000;
constexpr auto kPatience = std::chrono::seconds(60);  // a hang fails the test instead

uint64_t word0(RawKind k, uint64_t tick) { return tick << format::kRawKindBits | static_cast<uint8_t>(k); }

// A session by hand: process 1 (its meta file), recorder.meta, the doorbell.
class Session {
 public:
  Session() {
    format::test::make_process_dir(dir_, "1.0");
    meta_fd_ = ::open(dir_.file("recorder.meta").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    EXPECT_EQ(::mkfifo(dir_.file(format::kDoorbellName).c_str(), 0600), 0);
    bell_read_ = ::open(dir_.file(format::kDoorbellName).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    bell_write_ = ::open(dir_.file(format::kDoorbellName).c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    EXPECT_GE(bell_read_, 0);
    EXPECT_GE(bell_write_, 0);
    auto s = format::LiveStream::create(dir_.path(), out(), format::ClockKind::kMonotonic, 0, 1, meta_fd_);
    EXPECT_TRUE(s.ok()) << s.error().message();
    if (s) live_ = std::move(*s);
  }
  ~Session() {
    ::close(meta_fd_);
    ::close(bell_write_);
    if (bell_read_ >= 0) ::close(bell_read_);
  }
  const std::string& dir() const { return dir_.path(); }
  std::string out() const { return dir_.file("out.trace"); }
  format::LiveStream& live() { return *live_; }
  // The read end, for the Drainer (which owns it from then on).
  int take_bell() { return std::exchange(bell_read_, -1); }
  int bell() const { return bell_write_; }
  // Once the drainer has stopped: what is left, and the metadata.
  Result<format::FinalizeSummary> finish() {
    format::FinalizeOptions o;
    o.zstd_level = 1;
    return format::finalize_session(dir_.path(), out(), o, live_.get());
  }

 private:
  format::test::TempDir dir_;
  int meta_fd_ = -1;
  int bell_read_ = -1;
  int bell_write_ = -1;
  std::unique_ptr<format::LiveStream> live_;
};

// One thread's ring, written as the runtime writes it.
class FakeRing {
 public:
  FakeRing(const Session& s, uint32_t tid) : bell_(s.bell()) {
    const std::string path = s.dir() + "/1.0/t" + std::to_string(tid) + ".ev";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(format::kRawThreadHeaderSize + kRingBytes)), 0);
    void* m = ::mmap(nullptr, format::kRawThreadHeaderSize + kRingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    EXPECT_NE(m, MAP_FAILED);
    h_ = static_cast<RawThreadHeader*>(m);
    ring_ = reinterpret_cast<uint64_t*>(static_cast<char*>(m) + format::kRawThreadHeaderSize);
    std::memcpy(h_->magic, format::kRawThreadMagic, sizeof h_->magic);
    h_->version = format::kRawVersion;
    h_->header_size = format::kRawThreadHeaderSize;
    h_->pid = 1;
    h_->tid = tid;
    h_->start_tick = tick_;
    h_->flags = tid == 1 ? format::kRawThreadMain : 0;
    h_->segment_bytes = format::kSegmentBytes;
    h_->ring_segments = format::kRingSegments;
    begin_segment(0);
  }
  ~FakeRing() { ::munmap(h_, format::kRawThreadHeaderSize + kRingBytes); }

  // A call of `outer` that calls `inner` twice: six events, nine words.
  bool call_pair(uint64_t outer, uint64_t inner) {
    return entry(outer, 1) && entry(inner, 2) && exit() && entry(inner, 2) && exit() && exit();
  }
  // Writes until `segments` segments are complete.
  bool fill(uint64_t segments, uint64_t outer, uint64_t inner) {
    while (segment_ < segments)
      if (!call_pair(outer, inner)) return false;
    return true;
  }
  // The thread's end, as thread_exit() writes it.
  void close() {
    h_->end_tick = ++tick_;
    __atomic_fetch_or(&h_->flags, format::kRawThreadClosed, __ATOMIC_RELEASE);
    ring();
  }
  uint64_t drained() const { return __atomic_load_n(&h_->drained, __ATOMIC_ACQUIRE); }
  uint64_t segment() const { return segment_; }
  uint64_t waits() const { return waits_; }

 private:
  bool entry(uint64_t addr, int16_t sp_rel) {
    if (!room(2)) return false;
    put(word0(RawKind::kEntry, ++tick_));
    put(addr | uint64_t{static_cast<uint16_t>(sp_rel)} << 48);
    return true;
  }
  bool exit() {
    if (!room(1)) return false;
    put(word0(RawKind::kExit, ++tick_));
    return true;
  }
  void put(uint64_t w) { __atomic_store_n(&ring_[pos_++], w, __ATOMIC_RELAXED); }
  bool room(uint64_t words) {
    if (pos_ + words <= seg_end_) return true;
    return begin_segment(segment_ + 1);
  }
  bool begin_segment(uint64_t n) {
    if (n >= format::kRingSegments) {
      const uint64_t needed = n - format::kRingSegments + 1;
      if (drained() < needed) {
        ring();  // the recorder gives back what it holds when a writer waits
        ++waits_;
        const auto give_up = Clock::now() + kPatience;
        while (drained() < needed) {
          if (Clock::now() > give_up) return false;
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      }
    }
    std::atomic_thread_fence(std::memory_order_release);
    __atomic_store_n(&h_->committed, n, __ATOMIC_RELEASE);
    if (n > 0) ring();
    segment_ = n;
    pos_ = (n % format::kRingSegments) * kSegmentWords;
    seg_end_ = pos_ + kSegmentWords;
    put(word0(RawKind::kSpBase, 0));
    put(kSpBase);
    return true;
  }
  void ring() {
    const char b = 1;
    (void)::write(bell_, &b, 1);
  }

  int bell_;
  RawThreadHeader* h_ = nullptr;
  uint64_t* ring_ = nullptr;
  uint64_t tick_ = 1000;
  uint64_t segment_ = 0;
  uint64_t pos_ = 0, seg_end_ = 0;
  uint64_t waits_ = 0;
};

// Calls per function address in thread `index` of the trace at `path`, and
// whether its stream is balanced.
struct Counted {
  std::map<uint64_t, uint64_t> calls;
  int64_t depth = 0;
  uint64_t lost = 0;
};
Counted count(const std::string& path, uint32_t index) {
  Counted c;
  auto r = format::TraceReader::open(path);
  EXPECT_TRUE(r) << r.error().message();
  if (!r) return c;
  auto st = (*r)->for_each_event(index, [&](const format::TraceEvent& e) {
    if (format::is_entry(e.kind)) {
      ++c.calls[e.addr];
      ++c.depth;
    } else if (e.kind == format::EventKind::kExit || e.kind == format::EventKind::kExitUnwound ||
               e.kind == format::EventKind::kExitTruncated) {
      --c.depth;
    } else if (e.kind == format::EventKind::kLost) {
      c.lost += e.arg;
    }
    return true;
  });
  EXPECT_TRUE(st.ok()) << st.error().message();
  return c;
}

bool wait_for(const std::function<bool()>& done) {
  const auto give_up = Clock::now() + kPatience;
  while (!done()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// The ring wraps 3 times over: the writer can only go on because the
// drainer, woken by the doorbell alone, gives segments back.
TEST(recorder_drainer, EveryCallOfAWrappingRingIsInTheTrace) {
  Session s;
  constexpr uint64_t kSegments = 3 * format::kRingSegments + 5;
  uint64_t pairs = 0;
  {
    Drainer d(s.live(), nullptr, s.take_bell());
    FakeRing ring(s, 1);
    while (ring.segment() < kSegments) {
      ASSERT_TRUE(ring.call_pair(0x401000, 0x402000)) << "the writer waited a minute for the recorder";
      ++pairs;
    }
    ring.close();
    d.stop();
    EXPECT_EQ(d.failure(), "");
    EXPECT_GE(ring.drained(), kSegments - format::kRingSegments + 1);
  }
  auto sum = s.finish();
  ASSERT_TRUE(sum) << sum.error().message();
  EXPECT_EQ(sum->lost, 0u);
  Counted c = count(s.out(), 0);
  EXPECT_EQ(c.calls[0x401000], pairs);
  EXPECT_EQ(c.calls[0x402000], 2 * pairs);
  EXPECT_EQ(c.calls.size(), 2u);
  EXPECT_EQ(c.depth, 0);
  EXPECT_EQ(c.lost, 0u);
  EXPECT_EQ(sum->calls, 3 * pairs);
}

// Complete segments are held (LiveStream::kHoldSegments) and given back
// together once a block's worth is there; a thread that then goes quiet
// has what is held given back after a while, with nothing ringing.
TEST(recorder_drainer, HeldSegmentsOfAQuietThreadAreGivenBack) {
  Session s;
  Drainer d(s.live(), nullptr, s.take_bell());
  FakeRing ring(s, 1);
  constexpr uint64_t kHold = format::LiveStream::kHoldSegments;
  ASSERT_TRUE(ring.fill(kHold + 1, 0x401000, 0x402000));  // segments 0 .. kHold complete
  ASSERT_TRUE(wait_for([&] { return ring.drained() >= kHold; })) << "drained " << ring.drained();
  // Segment kHold is held alone; the thread writes nothing more.
  ASSERT_TRUE(wait_for([&] { return ring.drained() == kHold + 1; })) << "drained " << ring.drained();
  EXPECT_EQ(ring.waits(), 0u);
  ring.close();
  d.stop();
  EXPECT_EQ(d.failure(), "");
}

// Two writers at once, each its own ring and stream.
TEST(recorder_drainer, TwoWritersKeepTheirOwnStreams) {
  Session s;
  constexpr uint64_t kSegments = format::kRingSegments + 8;
  uint64_t pairs[2] = {0, 0};
  bool ok[2] = {true, true};
  {
    Drainer d(s.live(), nullptr, s.take_bell());
    std::vector<std::thread> writers;
    for (uint32_t i = 0; i < 2; ++i)
      writers.emplace_back([&, i] {
        FakeRing ring(s, 1 + i);
        const uint64_t outer = 0x401000 + i * 0x10000, inner = outer + 0x100;
        while (ring.segment() < kSegments && ok[i]) {
          ok[i] = ring.call_pair(outer, inner);
          pairs[i] += ok[i];
        }
        ring.close();
      });
    for (std::thread& w : writers) w.join();
    d.stop();
    EXPECT_EQ(d.failure(), "");
  }
  ASSERT_TRUE(ok[0] && ok[1]) << "a writer waited a minute for the recorder";
  auto sum = s.finish();
  ASSERT_TRUE(sum) << sum.error().message();
  EXPECT_EQ(sum->threads, 2u);
  EXPECT_EQ(sum->calls, 3 * (pairs[0] + pairs[1]));
  auto r = format::TraceReader::open(s.out());
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ((*r)->threads().size(), 2u);
  for (uint32_t t = 0; t < 2; ++t) {
    const uint32_t i = (*r)->threads()[t].record.tid - 1;  // which writer
    ASSERT_LT(i, 2u);
    Counted c = count(s.out(), t);
    const uint64_t outer = 0x401000 + i * 0x10000;
    EXPECT_EQ(c.calls[outer], pairs[i]) << "writer " << i;
    EXPECT_EQ(c.calls[outer + 0x100], 2 * pairs[i]) << "writer " << i;
    EXPECT_EQ(c.calls.size(), 2u);
    EXPECT_EQ(c.depth, 0);
  }
}

}  // namespace
}  // namespace callscope::recorder
