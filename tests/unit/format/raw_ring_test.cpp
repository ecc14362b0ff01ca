// Ring mode of the raw thread files (src/runtime/thread.cpp): the reader
// takes the segments from the first one not yet streamed into the trace to
// the one being written; segments whose slot was reused, or that a file cut
// short lost, or that hold nothing though complete (given back by a recorder
// whose block of them is gone) are counted as missing, and finalize marks
// each loss in the stream and says so. Built by hand, byte for byte; each
// segment holds one call whose address names the segment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "format/finalize.h"
#include "format/raw_session.h"
#include "format/trace_reader.h"
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
// file cut to `keep_bytes` when nonzero, the segments `zeroed` left empty.
void make_ring(const std::string& dir, uint64_t committed, uint64_t keep_bytes = 0,
               const std::vector<uint64_t>& zeroed = {}) {
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
    if (std::find(zeroed.begin(), zeroed.end(), i) != zeroed.end()) continue;
    auto s = segment(i);
    std::memcpy(file.data() + kRawThreadHeaderSize + (i % kRingSegments) * kSeg, s.data(), kSeg);
  }
  if (keep_bytes) file.resize(keep_bytes);
  write(dir + "/t1.ev", file);
}

struct Read {
  std::vector<uint64_t> segments;  // in order, whose calls the reader returned
  uint64_t missing_before = 0, missing_inside = 0, missing_after = 0;
  std::vector<uint64_t> gaps;  // events estimated lost at each gap inside
};

Read read_segments(const std::string& dir, uint64_t first = 0) {
  Read out;
  auto f = RawThreadFile::open(dir + "/t1.ev", first);
  EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message());
  if (!f) return out;
  RawEvent e;
  uint64_t exits = 0, gap = 0;
  do {
    if (gap) out.gaps.push_back(gap);
    while ((*f)->next(e)) {
      if (e.kind == RawKind::kEntry) out.segments.push_back(e.addr - 0x1000);
      if (e.kind == RawKind::kExit) ++exits;
    }
  } while ((*f)->take_gap(gap));
  EXPECT_EQ(exits, out.segments.size());
  EXPECT_EQ((*f)->torn_events(), 0u);
  out.missing_before = (*f)->missing_before();
  out.missing_inside = (*f)->missing_inside();
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

// Segments 7 and 8 hold nothing though complete (a recorder gave them back
// and the block holding them is gone): missing in the middle, one gap.
TEST(format_raw_ring, CompleteSegmentsHoldingNothingAreMissingInTheMiddle) {
  test::TempDir dir;
  make_ring(dir.path(), 12, 0, {7, 8});
  const Read r = read_segments(dir.path());
  std::vector<uint64_t> want = range(0, 6);
  for (uint64_t i : range(9, 12)) want.push_back(i);
  EXPECT_EQ(r.segments, want);
  EXPECT_EQ(r.missing_before + r.missing_after, 0u);
  EXPECT_EQ(r.missing_inside, 2u);
  EXPECT_EQ(r.gaps, (std::vector<uint64_t>{ring_events_estimate(2, kSeg)}));
}

// Read from segment 4 (the trace had 0..3), but 4 and 5 were given back:
// missing before the first one read. The segment being written may be empty.
TEST(format_raw_ring, GivenBackSegmentsBeforeTheFirstReadAreMissingBefore) {
  test::TempDir dir;
  make_ring(dir.path(), 9, 0, {4, 5, 9});
  const Read r = read_segments(dir.path(), 4);
  EXPECT_EQ(r.segments, range(6, 8));
  EXPECT_EQ(r.missing_before, 2u);
  EXPECT_EQ(r.missing_inside + r.missing_after, 0u);
}

// Grow mode (no recorder): the header says how far the chunks reach; a file
// cut short of that lost its last events.
TEST(format_raw_ring, AGrowModeFileCutShortIsNoticed) {
  test::TempDir dir;
  RawThreadHeader h{};
  std::memcpy(h.magic, kRawThreadMagic, sizeof h.magic);
  h.version = kRawVersion;
  h.header_size = kRawThreadHeaderSize;
  h.pid = h.tid = 1;
  h.file_bytes = kRawThreadHeaderSize + (64 << 10) + (256 << 10);
  std::vector<uint8_t> file = segment(0);  // one call, then zeros
  file.resize(64 << 10);
  file.insert(file.begin(), kRawThreadHeaderSize, 0);
  std::memcpy(file.data(), &h, sizeof h);
  write(dir.path() + "/t1.ev", file);
  auto f = RawThreadFile::open(dir.path() + "/t1.ev");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ((*f)->missing_bytes(), uint64_t{256} << 10);
  EXPECT_NE((*f)->damage().find("262144 bytes of events at the end"), std::string::npos) << (*f)->damage();
}

// finalize: a session (no recorder) whose thread lost two segments in the
// middle: the warning says so, and the stream marks the loss where it was:
// `lost` at the last event before, `resume` at the first after, the counts
// in the thread's record. Before, they vanished without a word.
TEST(format_raw_ring, FinalizeMarksAMissingSegmentInTheStreamAndSaysSo) {
  test::TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("1.0").c_str(), 0700), 0);
  std::vector<uint8_t> meta;
  auto add = [&](RawMetaType type, const void* body, size_t size) {
    const RawMetaHeader mh{static_cast<uint32_t>(type), static_cast<uint32_t>((sizeof mh + size + 7) & ~size_t{7})};
    const size_t at = meta.size();
    meta.resize(at + mh.size, 0);
    std::memcpy(meta.data() + at, &mh, sizeof mh);
    std::memcpy(meta.data() + at + sizeof mh, body, size);
  };
  RawFileHeader fh{};
  std::memcpy(fh.magic, kRawMetaMagic, sizeof fh.magic);
  fh.version = kRawVersion;
  add(RawMetaType::kFileHeader, &fh, sizeof fh);
  RawProcessStart ps = test::start(1, 0, 0, ~0u, 0, "", "");
  add(RawMetaType::kProcessStart, &ps, sizeof ps);
  write(dir.file("1.0/meta"), meta);
  make_ring(dir.file("1.0"), 5, 0, {2, 3});
  auto sum = finalize_session(dir.path(), dir.file("out.trace"), FinalizeOptions{});
  ASSERT_TRUE(sum.ok()) << sum.error().message();
  bool said = false;
  for (const std::string& w : sum->warnings) said |= w.find("2 ring segments in the middle") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(sum->warnings);
  EXPECT_EQ(sum->lost, ring_events_estimate(2, kSeg));
  auto rd = TraceReader::open(dir.file("out.trace"));
  ASSERT_TRUE(rd.ok()) << rd.error().message();
  EXPECT_EQ((*rd)->threads()[0].record.lost_events, ring_events_estimate(2, kSeg));
  std::vector<EventKind> kinds;
  std::vector<uint64_t> ticks;
  for (const TraceEvent& e : test::read_events(**rd, 0)) {
    kinds.push_back(e.kind);
    ticks.push_back(e.tick);
  }
  using K = EventKind;
  EXPECT_EQ(kinds, (std::vector<K>{K::kEntry, K::kExit, K::kEntry, K::kExit, K::kLost, K::kResume, K::kEntry, K::kExit,
                                    K::kEntry, K::kExit}));
  ASSERT_EQ(ticks.size(), 10u);
  EXPECT_EQ(ticks[4], 101u);  // after segment 1's call
  EXPECT_EQ(ticks[5], 104u);  // at segment 4's
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
