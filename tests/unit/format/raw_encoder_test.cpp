// RawStreamEncoder (src/format/raw_encoder.h): raw events in, the final
// stream out, read back through the trace reader. Above all the gaps: which
// frames go on through a loss or a stop, which end or begin inside it, and
// where a stream cut short closes its frames.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "format/raw_encoder.h"
#include "format/trace_reader.h"
#include "trace_test_util.h"

namespace callscope::format {
namespace {

using K = EventKind;
using R = RawKind;

RawEvent raw(R k, uint64_t tick, uint64_t addr = 0, uint64_t sp = 0, uint64_t arg = 0) {
  return RawEvent{k, tick, addr, sp, arg};
}

struct Out {
  std::vector<TraceEvent> events;
  ThreadRecord record{};
  EventColumns columns;  // the same raw events through the encoder into memory (query -c's tap)
};

// Feeds `in` (through add_fast where it applies, as the recorder does), then
// finishes the thread with `header` (end tick, lost total) and reads back.
Out encode(const std::vector<RawEvent>& in, RawThreadHeader header = {}, uint64_t end_hint = 0,
           uint64_t lost_before = 0, uint64_t offset = 1000, std::vector<RawSwitch> switches = {}) {
  test::TempDir dir;
  const std::string path = dir.file("t.trace");
  Out out;
  {
    auto w = TraceWriter::create(path, test::make_file_header(), 3);
    EXPECT_TRUE(w.ok());
    EventEncoder enc(**w, 0);
    RawStreamEncoder s(enc, offset, out.record);
    if (lost_before) s.begin_with_loss(lost_before);
    for (const RawEvent& e : in) {
      if (!s.add_fast(e)) {
        EXPECT_TRUE(s.add(e).ok());
      }
    }
    // The tap's encoder: the same events, into columns; it never finishes
    // (the driver leaves the frames of a thread open at its end).
    ThreadRecord tap_record{};
    BasicRawStreamEncoder<EventColumns> tap(out.columns, offset, tap_record);
    if (lost_before) tap.begin_with_loss(lost_before);
    for (const RawEvent& e : in) {
      if (!tap.add_fast(e)) {
        EXPECT_TRUE(tap.add(e).ok());
      }
    }
    EXPECT_TRUE(s.finish_thread(header, end_hint, switches).ok());
    test::finish_one_thread_trace(**w, out.record);
  }
  auto rd = TraceReader::open(path);
  EXPECT_TRUE(rd.ok());
  if (rd) out.events = test::read_events(**rd, 0);
  // What the tap saw is what the trace holds, up to what finishing added.
  EXPECT_LE(out.columns.size(), out.events.size());
  size_t v = 0;
  for (size_t i = 0; i < std::min(out.columns.size(), out.events.size()); ++i) {
    const TraceEvent& e = out.events[i];
    EXPECT_EQ(out.columns.kinds()[i], e.kind) << "event " << i;
    EXPECT_EQ(out.columns.ticks()[i], e.tick) << "event " << i;
    if (carries_value(e.kind)) {
      EXPECT_EQ(out.columns.values()[v], is_entry(e.kind) ? e.addr : e.arg) << "event " << i;
      ++v;
    } else if (is_memory(e.kind)) {
      // The block | op << 56, then an allocation's size.
      EXPECT_EQ(out.columns.values()[v], e.addr | uint64_t{e.op} << kMemoryValueOpShift) << "event " << i;
      if (e.kind == EventKind::kAlloc) {
        EXPECT_EQ(out.columns.values()[v + 1], e.arg) << "event " << i;
      }
      v += value_count(e.kind);
    }
  }
  return out;
}

std::vector<K> kinds(const Out& o) {
  std::vector<K> k;
  for (const TraceEvent& e : o.events) k.push_back(e.kind);
  return k;
}

constexpr uint64_t A = 0x401000, B = 0x401100, C = 0x401200;
constexpr uint64_t SA = 0x7000, SB = 0x6fe0, SC = 0x6fe0;

// Before the loss A and B are open; after it A and C: A went on, B ended
// inside the gap (closed at its start), C began inside it (opened at its end).
TEST(format_raw_encoder, ALossKeepsTheFramesThatWentOnThroughIt) {
  const Out o = encode({raw(R::kEntry, 10, A, SA), raw(R::kEntry, 20, B, SB), raw(R::kLost, 30, 0, 0, 7),
                        raw(R::kEntryInherited, 10, A, SA), raw(R::kEntryInherited, 35, C, SC), raw(R::kResume, 40),
                        raw(R::kExit, 50), raw(R::kExit, 60)});
  EXPECT_EQ(kinds(o), (std::vector<K>{K::kEntry, K::kEntry, K::kLost, K::kExitTruncated, K::kEntryInherited,
                                      K::kResume, K::kExit, K::kExit}));
  EXPECT_EQ(o.events[2].tick, 1030u);  // the gap's start
  EXPECT_EQ(o.events[2].arg, 7u);
  EXPECT_EQ(o.events[3].tick, 1030u);  // B ended inside the gap: closed where it began
  EXPECT_EQ(o.events[3].addr, B);
  EXPECT_EQ(o.events[4].tick, 1040u);  // C began inside it: opened where it ended
  EXPECT_EQ(o.events[4].addr, C);
  EXPECT_EQ(o.events[6].addr, C);
  EXPECT_EQ(o.events[7].addr, A);  // A's own exit closes it: one call
  EXPECT_EQ(o.record.calls, 2u);
  EXPECT_EQ(o.record.lost_events, 7u);
}

// Memory events (1.5) go into the stream where they happened, inside the
// frames open then, with their block, size and op; the tap keeps their
// kind and tick.
TEST(format_raw_encoder, MemoryEventsKeepTheirPlaceBlockSizeAndOp) {
  RawEvent alloc = raw(R::kAlloc, 15, 0x7f0000001000ull, 0, 48);
  alloc.op = static_cast<uint8_t>(AllocOp::kNew);
  RawEvent freed = raw(R::kFree, 25, 0x7f0000001000ull);
  freed.op = static_cast<uint8_t>(AllocOp::kDelete);
  const Out o = encode({raw(R::kEntry, 10, A, SA), alloc, raw(R::kEntry, 20, B, SB), freed, raw(R::kExit, 30),
                        raw(R::kExit, 40)});
  EXPECT_EQ(kinds(o), (std::vector<K>{K::kEntry, K::kAlloc, K::kEntry, K::kFree, K::kExit, K::kExit}));
  EXPECT_EQ(o.events[1].tick, 1015u);
  EXPECT_EQ(o.events[1].addr, 0x7f0000001000ull);
  EXPECT_EQ(o.events[1].arg, 48u);
  EXPECT_EQ(o.events[1].op, static_cast<uint8_t>(AllocOp::kNew));
  EXPECT_EQ(o.events[1].depth, 1u);  // inside A
  EXPECT_EQ(o.events[3].addr, 0x7f0000001000ull);
  EXPECT_EQ(o.events[3].op, static_cast<uint8_t>(AllocOp::kDelete));
  EXPECT_EQ(o.events[3].depth, 2u);  // inside A and B
  EXPECT_EQ(o.record.calls, 2u);
  EXPECT_EQ(o.record.events, 6u);
}

// A frame re-entered inside the gap at the same place is another call: the
// resync's entry tick tells them apart.
TEST(format_raw_encoder, AFrameReenteredInsideTheGapIsNotTheSameFrame) {
  const Out o = encode({raw(R::kEntry, 10, A, SA), raw(R::kEntry, 20, B, SB), raw(R::kLost, 30, 0, 0, 4),
                        raw(R::kEntryInherited, 10, A, SA), raw(R::kEntryInherited, 33, B, SB), raw(R::kResume, 40),
                        raw(R::kExit, 50), raw(R::kExit, 60)});
  EXPECT_EQ(kinds(o), (std::vector<K>{K::kEntry, K::kEntry, K::kLost, K::kExitTruncated, K::kEntryInherited,
                                      K::kResume, K::kExit, K::kExit}));
}

TEST(format_raw_encoder, APauseIsAGapOfItsOwnKind) {
  const Out o = encode({raw(R::kEntry, 10, A, SA), raw(R::kPause, 20), raw(R::kEntryInherited, 10, A, SA),
                        raw(R::kResume, 90), raw(R::kExit, 100)});
  EXPECT_EQ(kinds(o), (std::vector<K>{K::kEntry, K::kPause, K::kResume, K::kExit}));
  EXPECT_EQ(o.record.lost_events, 0u);
}

// A stream that ends in a pause: its frames close at the stop.
TEST(format_raw_encoder, AStreamEndingInAPauseClosesItsFramesAtTheStop) {
  RawThreadHeader h{};
  h.end_tick = 500;
  const Out o = encode({raw(R::kEntry, 10, A, SA), raw(R::kPause, 20)}, h);
  EXPECT_EQ(kinds(o), (std::vector<K>{K::kEntry, K::kPause, K::kExitTruncated}));
  EXPECT_EQ(o.events[2].tick, 1020u);
  EXPECT_EQ(o.record.end_tick, 1500u);
}

// The header counts dropped events that no kLost marks (the stream ended
// while dropping): a loss at the last event, where the frames close -- not
// at the process's end seconds later.
// A thread asleep in B from before switch 3 (a stop) to its process's end:
// it acted on switches 1 and 2 only. The stop and start it slept through
// pause its stream; the frames go on through the pause and end with the
// process.
TEST(format_raw_encoder, SwitchesAThreadSleptThroughPauseItsStream) {
  RawThreadHeader h{};
  h.switches_seen = 2;
  const std::vector<RawSwitch> sw = {{1, 5}, {2, 8}, {3, 30}, {4, 50}};
  const Out o = encode({raw(R::kEntry, 10, A, SA), raw(R::kEntry, 20, B, SB)}, h, 1100, 0, 1000, sw);
  EXPECT_EQ(kinds(o), (std::vector<K>{K::kEntry, K::kEntry, K::kPause, K::kResume, K::kExitTruncated,
                                      K::kExitTruncated}));
  EXPECT_EQ(o.events[2].tick, 1030u);
  EXPECT_EQ(o.events[3].tick, 1050u);
  EXPECT_EQ(o.events[4].tick, 1100u);
  // The program ended stopped: the frames close at the stop.
  const Out stopped = encode({raw(R::kEntry, 10, A, SA), raw(R::kEntry, 20, B, SB)}, h, 1100, 0, 1000,
                             {{1, 5}, {2, 8}, {3, 30}});
  EXPECT_EQ(kinds(stopped), (std::vector<K>{K::kEntry, K::kEntry, K::kPause, K::kExitTruncated, K::kExitTruncated}));
  EXPECT_EQ(stopped.events[3].tick, 1030u);
  // A thread that exited acted on every switch before it ended; one whose
  // stream ends in its own pause may have returned from calls while stopped:
  // neither is touched.
  RawThreadHeader closed = h;
  closed.flags = kRawThreadClosed;
  EXPECT_EQ(kinds(encode({raw(R::kEntry, 10, A, SA)}, closed, 1100, 0, 1000, sw)),
            (std::vector<K>{K::kEntry, K::kExitTruncated}));
  RawThreadHeader paused{};
  paused.switches_seen = 3;
  EXPECT_EQ(kinds(encode({raw(R::kEntry, 10, A, SA), raw(R::kPause, 30)}, paused, 1100, 0, 1000, sw)),
            (std::vector<K>{K::kEntry, K::kPause, K::kExitTruncated}));
}

TEST(format_raw_encoder, LossesOnlyTheHeaderCountsCutTheStreamAtItsLastEvent) {
  RawThreadHeader h{};
  h.lost_events = 9;
  const Out o = encode({raw(R::kEntry, 10, A, SA), raw(R::kEntry, 20, B, SB)}, h, /*end_hint=*/900000);
  EXPECT_EQ(kinds(o), (std::vector<K>{K::kEntry, K::kEntry, K::kLost, K::kExitTruncated, K::kExitTruncated}));
  EXPECT_EQ(o.events[2].arg, 9u);
  EXPECT_EQ(o.events[3].tick, 1020u);
  EXPECT_EQ(o.events[4].tick, 1020u);
  EXPECT_EQ(o.record.lost_events, 9u);
}

// A loss with no resync (the stream ends inside it), and more dropped after.
TEST(format_raw_encoder, AStreamEndingInALossCountsEverythingDropped) {
  RawThreadHeader h{};
  h.lost_events = 12;
  const Out o = encode({raw(R::kEntry, 10, A, SA), raw(R::kLost, 15, 0, 0, 5)}, h, 900000);
  EXPECT_EQ(kinds(o), (std::vector<K>{K::kEntry, K::kLost, K::kExitTruncated}));
  EXPECT_EQ(o.events[1].arg, 12u);
  EXPECT_EQ(o.events[2].tick, 1015u);
  EXPECT_EQ(o.record.lost_events, 12u);
}

// Segments missing before the first one read: a loss at the first event.
TEST(format_raw_encoder, ALossBeforeTheStreamIsMarkedAtItsFirstEvent) {
  const Out o = encode({raw(R::kEntry, 10, A, SA), raw(R::kExit, 20)}, {}, 0, /*lost_before=*/300);
  EXPECT_EQ(kinds(o), (std::vector<K>{K::kLost, K::kResume, K::kEntry, K::kExit}));
  EXPECT_EQ(o.events[0].arg, 300u);
  EXPECT_EQ(o.record.lost_events, 300u);
}

// A runtime that wrote no kResume (raw 1): the gap ends at the first event
// after the resync.
TEST(format_raw_encoder, WithoutAResumeTheGapEndsAtTheNextEvent) {
  const Out o = encode({raw(R::kEntry, 10, A, SA), raw(R::kLost, 30, 0, 0, 2), raw(R::kEntryInherited, 10, A, SA),
                        raw(R::kExit, 50)});
  EXPECT_EQ(kinds(o), (std::vector<K>{K::kEntry, K::kLost, K::kResume, K::kExit}));
  EXPECT_EQ(o.events[2].tick, 1050u);
}

// A signal handler's events can overtake the hook it interrupted: ticks
// never go backwards in the final stream.
TEST(format_raw_encoder, TicksNeverGoBackwards) {
  const Out o = encode({raw(R::kEntry, 10, A, SA), raw(R::kEntry, 8, B, SB), raw(R::kExit, 9), raw(R::kExit, 20)});
  for (size_t i = 1; i < o.events.size(); ++i) EXPECT_GE(o.events[i].tick, o.events[i - 1].tick);
}

}  // namespace
}  // namespace callscope::format
