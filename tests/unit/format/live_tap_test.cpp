// The live tap's word on threads it cannot follow (format/live_stream.h):
// a thread file in grow mode (its ring could not be allocated) is said to
// have no ring, once; a file whose ring is still being set up -- sized for
// the ring, ring_segments not stored yet, the moment the runtime's
// open_ring() is in -- is not, and its events come once it is. Before, a
// scan that came in that moment said "no ring" of a thread whose events
// then came all the same (3 in 12 live queries with threads). A session
// built by hand, byte for byte, polled as the recorder does.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "format/live_stream.h"
#include "format/raw_session.h"
#include "trace_test_util.h"

namespace callscope::format {
namespace {

constexpr uint64_t kRingFileBytes = kRawThreadHeaderSize + uint64_t{kRingSegments} * kSegmentBytes;

class Tap final : public LiveTap {
 public:
  void deliver(LiveDelivery&& d) override {
    for (std::string& w : d.warnings) warnings.push_back(std::move(w));
    for (const auto& [index, columns] : d.events) events += columns.size();
  }
  std::vector<std::string> warnings;
  uint64_t events = 0;
};

// A session with process 1 (its meta file) and a recorder meta file.
class Session {
 public:
  Session() {
    test::make_process_dir(dir_, "1.0");
    meta_fd_ = ::open(dir_.file("recorder.meta").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  }
  ~Session() { ::close(meta_fd_); }
  std::unique_ptr<LiveStream> stream(Tap& tap) {
    auto s = LiveStream::create(dir_.path(), dir_.file("out.trace"), ClockKind::kMonotonic, 0, 1, meta_fd_);
    EXPECT_TRUE(s.ok()) << s.error().message();
    if (!s) return nullptr;
    (*s)->set_tap(&tap, 1.0, true);
    return std::move(*s);
  }
  // t<tid>.ev of `bytes` bytes, its header as given.
  std::string thread_file(uint32_t tid, const RawThreadHeader& h, uint64_t bytes) {
    const std::string path = dir_.file("1.0/t" + std::to_string(tid) + ".ev");
    std::vector<uint8_t> file(bytes, 0);
    std::memcpy(file.data(), &h, sizeof h);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
    return path;
  }

 private:
  test::TempDir dir_;
  int meta_fd_ = -1;
};

// A thread's header as open_thread_file() writes it, before open_ring().
RawThreadHeader header(uint32_t tid) {
  RawThreadHeader h{};
  std::memcpy(h.magic, kRawThreadMagic, sizeof h.magic);
  h.version = kRawVersion;
  h.header_size = kRawThreadHeaderSize;
  h.pid = 1;
  h.tid = tid;
  return h;
}

// Writes over the file at `offset`.
void poke(const std::string& path, uint64_t offset, const void* data, size_t size) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}

TEST(format_live_tap, AThreadWhoseRingIsBeingSetUpIsNotSaidToHaveNone) {
  Session s;
  Tap tap;
  auto live = s.stream(tap);
  ASSERT_TRUE(live);
  // Sized for the ring (the recorder takes it up), ring_segments not yet stored.
  const std::string path = s.thread_file(7, header(7), kRingFileBytes);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(live->poll().ok());
  EXPECT_TRUE(tap.warnings.empty()) << ::testing::PrintToString(tap.warnings);
  // The writer is done: its ring, a call in segment 0.
  const uint64_t words[3] = {(uint64_t{100} << kRawKindBits) | static_cast<uint8_t>(RawKind::kEntry), 0x1000,
                             (uint64_t{101} << kRawKindBits) | static_cast<uint8_t>(RawKind::kExit)};
  poke(path, kRawThreadHeaderSize, words, sizeof words);
  RawThreadHeader h = header(7);
  h.ring_segments = kRingSegments;
  h.segment_bytes = kSegmentBytes;
  h.flags = kRawThreadClosed;
  poke(path, 0, &h, sizeof h);
  ASSERT_TRUE(live->poll().ok());
  live->tap_rest();
  EXPECT_TRUE(tap.warnings.empty()) << ::testing::PrintToString(tap.warnings);
  EXPECT_EQ(tap.events, 2u);  // the entry and the exit
}

TEST(format_live_tap, AThreadInGrowModeIsSaidToHaveNoRingOnce) {
  Session s;
  Tap tap;
  auto live = s.stream(tap);
  ASSERT_TRUE(live);
  // Grown past a ring's size: taken up, then seen to be in grow mode.
  RawThreadHeader grown = header(8);
  grown.file_bytes = kRingFileBytes;
  s.thread_file(8, grown, kRingFileBytes);
  // Smaller than a ring: in grow mode (file_bytes set), and one being set up.
  RawThreadHeader small = header(9);
  small.file_bytes = kRawThreadHeaderSize + (64 << 10);
  s.thread_file(9, small, small.file_bytes);
  s.thread_file(10, header(10), kRawThreadHeaderSize);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(live->poll().ok());
  live->tap_rest();
  ASSERT_EQ(tap.warnings.size(), 2u) << ::testing::PrintToString(tap.warnings);
  EXPECT_EQ(tap.warnings[0], "thread 8 of process 1 has no ring (one could not be allocated in the raw directory): "
                             "the query does not see its events");
  EXPECT_EQ(tap.warnings[1], "thread 9 of process 1 has no ring (one could not be allocated in the raw directory): "
                             "the query does not see its events");
}

}  // namespace
}  // namespace callscope::format
