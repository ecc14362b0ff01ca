// Ring mode of the raw thread files (src/runtime/thread.cpp): the stream is
// the whole segments found in t<tid>.spill, then the segments after them that
// are still in the ring, up to the one being written. Built by hand, byte for
// byte; each segment holds one call whose address names the segment.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "format/raw_session.h"
#include "trace_test_util.h"

namespace callscope::format {
namespace {

constexpr uint64_t kSeg = kSegmentBytes;

// A segment's image: the entry and exit of function 0x1000 + i at tick 100 + i.
std::vector<uint8_t> segment(uint64_t i) {
  std::vector<uint8_t> b(kSeg, 0);
  const uint64_t words[3] = {((100 + i) << kRawKindBits) | static_cast<uint8_t>(RawKind::kEntry), 0x1000 + i,
                             ((100 + i) << kRawKindBits) | static_cast<uint8_t>(RawKind::kExit)};
  std::memcpy(b.data(), words, sizeof words);
  return b;
}

void write(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// Writes t1.ev with segments committed-15 .. committed in the ring, and
// t1.spill with segments 0 .. spilled-1 plus `partial_bytes` of the next.
void make_ring(const std::string& dir, uint64_t committed, uint64_t spilled, uint64_t partial_bytes) {
  RawThreadHeader h{};
  std::memcpy(h.magic, kRawThreadMagic, sizeof h.magic);
  h.version = kRawVersion;
  h.header_size = kRawThreadHeaderSize;
  h.pid = h.tid = 1;
  h.ring_segments = kRingSegments;
  h.segment_bytes = kSegmentBytes;
  h.committed = committed;
  h.drained = spilled;
  std::vector<uint8_t> file(kRawThreadHeaderSize + kRingSegments * kSeg, 0);
  std::memcpy(file.data(), &h, sizeof h);
  const uint64_t first = committed + 1 > kRingSegments ? committed + 1 - kRingSegments : 0;
  for (uint64_t i = first; i <= committed; ++i) {
    auto s = segment(i);
    std::memcpy(file.data() + kRawThreadHeaderSize + (i % kRingSegments) * kSeg, s.data(), kSeg);
  }
  write(dir + "/t1.ev", file);
  if (spilled == 0 && partial_bytes == 0) return;
  std::vector<uint8_t> spill;
  for (uint64_t i = 0; i < spilled; ++i) {
    auto s = segment(i);
    spill.insert(spill.end(), s.begin(), s.end());
  }
  auto next = segment(spilled);
  spill.insert(spill.end(), next.begin(), next.begin() + static_cast<std::ptrdiff_t>(partial_bytes));
  write(dir + "/t1.spill", spill);
}

// The segments, in order, whose calls the reader returns.
std::vector<uint64_t> read_segments(const std::string& dir, uint64_t* missing = nullptr) {
  auto f = RawThreadFile::open(dir + "/t1.ev");
  EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message());
  std::vector<uint64_t> out;
  if (!f) return out;
  RawEvent e;
  uint64_t exits = 0;
  while ((*f)->next(e)) {
    if (e.kind == RawKind::kEntry) out.push_back(e.addr - 0x1000);
    if (e.kind == RawKind::kExit) ++exits;
  }
  EXPECT_EQ(exits, out.size());
  EXPECT_EQ((*f)->torn_events(), 0u);
  if (missing) *missing = (*f)->missing_segments();
  return out;
}

std::vector<uint64_t> range(uint64_t from, uint64_t to) {  // [from, to]
  std::vector<uint64_t> v;
  for (uint64_t i = from; i <= to; ++i) v.push_back(i);
  return v;
}

TEST(format_raw_ring, RingOnlyBeforeTheFirstDrain) {
  test::TempDir dir;
  make_ring(dir.path(), 5, 0, 0);
  EXPECT_EQ(read_segments(dir.path()), range(0, 5));
}

// Segments 4..7 are both in the spill and still in the ring: each once.
TEST(format_raw_ring, SpillThenRingWithoutDuplicates) {
  test::TempDir dir;
  make_ring(dir.path(), 19, 8, 0);
  EXPECT_EQ(read_segments(dir.path()), range(0, 19));
}

// A recorder killed while appending: the cut segment is taken from the ring.
TEST(format_raw_ring, SpillCutMidSegmentFallsBackToTheRing) {
  test::TempDir dir;
  make_ring(dir.path(), 19, 7, kSeg / 2);
  EXPECT_EQ(read_segments(dir.path()), range(0, 19));
}

// Segment 3 is in neither place: reported, and the rest is read.
TEST(format_raw_ring, MissingSegmentsAreCountedAndSkipped) {
  test::TempDir dir;
  make_ring(dir.path(), 19, 3, 0);
  uint64_t missing = 0;
  std::vector<uint64_t> expected = range(0, 2);
  for (uint64_t i : range(4, 19)) expected.push_back(i);
  EXPECT_EQ(read_segments(dir.path(), &missing), expected);
  EXPECT_EQ(missing, 1u);
}

TEST(format_raw_ring, DamagedRingDescriptionIsAnError) {
  test::TempDir dir;
  make_ring(dir.path(), 2, 0, 0);
  std::fstream f(dir.path() + "/t1.ev", std::ios::in | std::ios::out | std::ios::binary);
  const uint32_t bad = 12;  // not a multiple of 8
  f.seekp(offsetof(RawThreadHeader, segment_bytes));
  f.write(reinterpret_cast<const char*>(&bad), sizeof bad);
  f.close();
  auto r = RawThreadFile::open(dir.path() + "/t1.ev");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("damaged ring description"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace callscope::format
