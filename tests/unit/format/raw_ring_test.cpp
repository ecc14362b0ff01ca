// Ring mode of the raw thread files (src/runtime/thread.cpp): the reader
// takes the segments from the first one not yet streamed into the trace to
// the one being written; segments whose slot was reused, or that a file cut
// short lost, are counted as missing. Built by hand, byte for byte; each
// segment holds one call whose address names the segment.
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

// Writes t1.ev with segments committed-15 .. committed in the ring, the
// file cut to `keep_bytes` when nonzero.
void make_ring(const std::string& dir, uint64_t committed, uint64_t keep_bytes = 0) {
  RawThreadHeader h{};
  std::memcpy(h.magic, kRawThreadMagic, sizeof h.magic);
  h.version = kRawVersion;
  h.header_size = kRawThreadHeaderSize;
  h.pid = h.tid = 1;
  h.ring_segments = kRingSegments;
  h.segment_bytes = kSegmentBytes;
  h.committed = committed;
  std::vector<uint8_t> file(kRawThreadHeaderSize + kRingSegments * kSeg, 0);
  std::memcpy(file.data(), &h, sizeof h);
  const uint64_t first = committed + 1 > kRingSegments ? committed + 1 - kRingSegments : 0;
  for (uint64_t i = first; i <= committed; ++i) {
    auto s = segment(i);
    std::memcpy(file.data() + kRawThreadHeaderSize + (i % kRingSegments) * kSeg, s.data(), kSeg);
  }
  if (keep_bytes) file.resize(keep_bytes);
  write(dir + "/t1.ev", file);
}

struct Read {
  std::vector<uint64_t> segments;  // in order, whose calls the reader returned
  uint64_t missing_before = 0, missing_after = 0;
};

Read read_segments(const std::string& dir, uint64_t first = 0) {
  Read out;
  auto f = RawThreadFile::open(dir + "/t1.ev", first);
  EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message());
  if (!f) return out;
  RawEvent e;
  uint64_t exits = 0;
  while ((*f)->next(e)) {
    if (e.kind == RawKind::kEntry) out.segments.push_back(e.addr - 0x1000);
    if (e.kind == RawKind::kExit) ++exits;
  }
  EXPECT_EQ(exits, out.segments.size());
  EXPECT_EQ((*f)->torn_events(), 0u);
  out.missing_before = (*f)->missing_before();
  out.missing_after = (*f)->missing_after();
  return out;
}

std::vector<uint64_t> range(uint64_t from, uint64_t to) {  // [from, to]
  std::vector<uint64_t> v;
  for (uint64_t i = from; i <= to; ++i) v.push_back(i);
  return v;
}

TEST(format_raw_ring, TheWholeRingBeforeItWraps) {
  test::TempDir dir;
  make_ring(dir.path(), 5);
  const Read r = read_segments(dir.path());
  EXPECT_EQ(r.segments, range(0, 5));
  EXPECT_EQ(r.missing_before + r.missing_after, 0u);
}

// Segments 0..11 were streamed into the trace: the rest comes from the ring.
TEST(format_raw_ring, FromTheFirstSegmentNotStreamed) {
  test::TempDir dir;
  make_ring(dir.path(), 19);
  const Read r = read_segments(dir.path(), 12);
  EXPECT_EQ(r.segments, range(12, 19));
  EXPECT_EQ(r.missing_before, 0u);
}

// Asked from segment 2, but slots of 2 and 3 hold 18 and 19 now.
TEST(format_raw_ring, SegmentsWhoseSlotWasReusedAreMissing) {
  test::TempDir dir;
  make_ring(dir.path(), 19);
  const Read r = read_segments(dir.path(), 2);
  EXPECT_EQ(r.segments, range(4, 19));
  EXPECT_EQ(r.missing_before, 2u);
}

// A file cut in the middle of slot 3: segments 3, 4, 5 are missing at the end.
TEST(format_raw_ring, AFileCutShortKeepsWhatItHolds) {
  test::TempDir dir;
  make_ring(dir.path(), 5, kRawThreadHeaderSize + 3 * kSeg + kSeg / 2);
  const Read r = read_segments(dir.path());
  EXPECT_EQ(r.segments, range(0, 2));
  EXPECT_EQ(r.missing_after, 3u);
}

TEST(format_raw_ring, DamagedRingDescriptionIsAnError) {
  test::TempDir dir;
  make_ring(dir.path(), 2);
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
