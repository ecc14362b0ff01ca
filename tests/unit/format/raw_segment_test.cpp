// RawStreamEncoder::add_segment (src/format/raw_encoder.h): the recorder's
// inner loop, which decodes and encodes plain entries and exits in one pass
// and hands everything else to RawDecoder::next and add(). It must write
// exactly what the event-at-a-time path writes: the same trace bytes, the
// same counts, the same decoder state, whatever the segments hold.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "format/raw_encoder.h"
#include "format/trace_reader.h"
#include "trace_test_util.h"

namespace callscope::format {
namespace {

using R = RawKind;

uint64_t w0(R k, uint64_t tick) { return tick << kRawKindBits | static_cast<uint8_t>(k); }
uint64_t entry_w1(uint64_t addr, int16_t rel) { return addr | uint64_t{static_cast<uint16_t>(rel)} << 48; }

// Segments of raw words as a runtime writes them: mostly calls and returns,
// and now and then everything else a stream may hold -- a new sp base,
// stray exits, losses and pauses with their resync, marks, tags, waits,
// memory events, ticks that go back, zero words, torn events, unknown words.
std::vector<std::vector<uint64_t>> make_segments(uint32_t seed, size_t segments, size_t words, bool rare) {
  std::mt19937_64 rng(seed);
  auto chance = [&](unsigned per_mille) { return rare && rng() % 1000 < per_mille; };
  const uint64_t fns[] = {0x401000, 0x401040, 0x401100, 0x402000, 0x7f0000001230, 0x401000 + 64 * 200};
  std::vector<std::vector<uint64_t>> out;
  std::vector<std::pair<uint64_t, int16_t>> stack;  // (addr, sp rel) of open frames
  std::vector<uint64_t> ticks;                       // their entry ticks
  uint64_t tick = 100;
  for (size_t s = 0; s < segments; ++s) {
    std::vector<uint64_t> seg(words, 0);
    size_t i = 0;
    auto put = [&](uint64_t a) {
      if (i < words) seg[i++] = a;
    };
    if (s > 0 || chance(500)) {
      put(w0(R::kSpBase, 0));
      put(0x7ffc00000000 + (rng() % 64) * 16);
    }
    // Leave a tail of zero words now and then (a segment the writer left
    // early), else fill it.
    const size_t fill = chance(300) ? words - rng() % (words / 2) : words;
    while (i + 3 <= fill) {
      tick += rng() % 300 < 290 ? rng() % 200 : rng() % 100000;
      const uint64_t t = chance(5) && tick > 50 ? tick - 50 : tick;  // a signal handler's event overtaking
      const unsigned r = static_cast<unsigned>(rng() % 1000);
      if (chance(4)) {
        put(0);  // a slot never filled
      } else if (chance(3)) {
        put(w0(R::kEntry, t));  // torn: its second word missing
        put(0);
      } else if (chance(3)) {
        put(0x11);  // an unknown kind
      } else if (chance(3)) {
        put(w0(R::kExitStray, t));
        put(fns[rng() % 6]);
      } else if (chance(4)) {
        // A gap: lost or pause, the resync, then the resume.
        const bool lost = rng() % 2;
        put(w0(lost ? R::kLost : R::kPause, t));
        if (lost) put(1 + rng() % 1000);
        while (!stack.empty() && rng() % 3 == 0) {
          stack.pop_back();
          ticks.pop_back();
        }
        for (size_t f = 0; f < stack.size() && i + 4 <= fill; ++f) {
          put(w0(R::kEntryInherited, ticks[f]));
          put(entry_w1(stack[f].first, stack[f].second));
        }
        if (rng() % 10) put(w0(R::kResume, tick));
      } else if (chance(6)) {
        const R k = rng() % 3 == 0 ? R::kMark : rng() % 2 ? R::kTag : R::kWait;
        put(w0(k, t));
        put(1 + rng() % 5);
      } else if (chance(4)) {
        put(w0(R::kAlloc, t));
        put((0x5000000 + rng() % 4096 * 16) | uint64_t{1} << 56);
        put(1 + rng() % 100);
      } else if (chance(3)) {
        put(w0(R::kExitUnwound, t));
        if (!stack.empty()) {
          stack.pop_back();
          ticks.pop_back();
        }
      } else if (chance(3) && stack.empty()) {
        put(w0(R::kExit, t));  // an exit with no frame open
      } else if (r < 500 || stack.empty()) {
        const uint64_t addr = fns[rng() % 6];
        const int16_t rel = chance(5) ? int16_t{-32768} : static_cast<int16_t>(stack.size() * 2 + rng() % 3);
        put(w0(R::kEntry, t));
        put(entry_w1(addr, rel));
        stack.push_back({addr, rel});
        ticks.push_back(t);
      } else {
        put(w0(R::kExit, t));
        stack.pop_back();
        ticks.pop_back();
      }
    }
    out.push_back(std::move(seg));
  }
  return out;
}

struct Result {
  std::string bytes;
  ThreadRecord record{};
  RawDecoder decoder;
  std::vector<TraceEvent> events;
};

// The segments through one encoder, a block every `per_block` segments (as
// the live stream writes them), the thread finished, the file read back
// whole.
Result run(const std::vector<std::vector<uint64_t>>& segments, size_t per_block, bool whole_segments) {
  test::TempDir dir;
  const std::string path = dir.file("t.trace");
  Result res;
  {
    auto w = TraceWriter::create(path, test::make_file_header(), 1);
    EXPECT_TRUE(w.ok());
    EventEncoder enc(**w, 0);
    RawStreamEncoder s(enc, 5000, res.record);
    for (size_t n = 0; n < segments.size(); ++n) {
      const std::vector<uint64_t>& seg = segments[n];
      if (whole_segments) {
        EXPECT_TRUE(s.add_segment(res.decoder, seg.data(), seg.size()).ok());
      } else {
        size_t i = 0;
        RawEvent e;
        while (res.decoder.next(seg.data(), seg.size(), i, e)) {
          if (!s.add_fast(e)) {
            EXPECT_TRUE(s.add(e).ok());
          }
        }
      }
      if ((n + 1) % per_block == 0) {
        EXPECT_TRUE(enc.flush().ok());
      }
    }
    RawThreadHeader h{};
    h.end_tick = 1;
    EXPECT_TRUE(s.finish_thread(h, 0).ok());
    test::finish_one_thread_trace(**w, res.record);
  }
  std::ifstream f(path, std::ios::binary);
  res.bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  auto rd = TraceReader::open(path);
  EXPECT_TRUE(rd.ok());
  if (rd) res.events = test::read_events(**rd, 0);
  EXPECT_FALSE(res.events.empty());
  return res;
}

void expect_same(const std::vector<std::vector<uint64_t>>& segments, size_t per_block) {
  const Result a = run(segments, per_block, true);
  const Result b = run(segments, per_block, false);
  EXPECT_EQ(a.bytes.size(), b.bytes.size());
  EXPECT_TRUE(a.bytes == b.bytes) << "the traces differ";
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) ASSERT_EQ(a.events[i], b.events[i]) << "event " << i;
  EXPECT_EQ(a.record.events, b.record.events);
  EXPECT_EQ(a.record.calls, b.record.calls);
  EXPECT_EQ(a.record.lost_events, b.record.lost_events);
  EXPECT_EQ(a.record.start_tick, b.record.start_tick);
  EXPECT_EQ(a.record.end_tick, b.record.end_tick);
  EXPECT_EQ(a.decoder.sp_base, b.decoder.sp_base);
  EXPECT_EQ(a.decoder.torn, b.decoder.torn);
  EXPECT_EQ(a.decoder.bad_words, b.decoder.bad_words);
}

TEST(format_raw_segment, PlainCallsEncodeAsEventByEvent) {
  expect_same(make_segments(1, 12, 4096, false), 4);
  // A run longer than the loop's room, blocks of one segment.
  expect_same(make_segments(2, 3, 32768, false), 1);
}

TEST(format_raw_segment, EverythingElseInTheStreamEncodesAsEventByEvent) {
  for (uint32_t seed = 10; seed < 40; ++seed) {
    SCOPED_TRACE(seed);
    expect_same(make_segments(seed, 6, 2048 + seed * 7, true), 1 + seed % 4);
  }
}

TEST(format_raw_segment, ASegmentEndingInsideAnEventCountsItTorn) {
  // An entry's first word the last of its segment: torn, as the decoder says.
  std::vector<std::vector<uint64_t>> segs(2, std::vector<uint64_t>(8, 0));
  segs[0] = {w0(R::kEntry, 10), entry_w1(0x401000, 2), w0(R::kExit, 20), w0(R::kEntry, 30),
             entry_w1(0x401040, 2), w0(R::kExit, 40), 0, w0(R::kEntry, 50)};
  segs[1] = {w0(R::kEntry, 60), entry_w1(0x401000, 2), w0(R::kExit, 70), 0, 0, 0, 0, 0};
  expect_same(segs, 1);
  EXPECT_EQ(run(segs, 1, true).decoder.torn, 1u);
}

}  // namespace
}  // namespace callscope::format
