// A recording's tap over a socket (format/live_wire.h): what the recorder
// sends is what the query reads, and a damaged message is refused, never
// read past its end.
#include "format/live_wire.h"

#include <gtest/gtest.h>

#include <random>

namespace callscope::format {
namespace {

LiveDelivery sample() {
  LiveDelivery d;
  d.horizon = 123456789;
  d.threads.push_back({0, "100.0", 100, 1000, true});
  d.threads.push_back({1, "100.0", 101, 2000, false});
  EventColumns c;
  (void)c.add(EventKind::kEntryInherited, 900, 0x401000, 0x7f00, 0);
  (void)c.add(EventKind::kEntry, 1100, 0x401100, 0x7e00, 0);
  (void)c.add(EventKind::kExit, 1200, 0, 0, 0);
  (void)c.add(EventKind::kLost, 1300, 0, 0, 42);
  // Memory events carry their values (value_count): an alloc two, a free one.
  (void)c.memory(EventKind::kAlloc, 1400, 0x7f0000001000, 64, static_cast<uint8_t>(AllocOp::kMalloc));
  (void)c.memory(EventKind::kFree, 1500, 0x7f0000001000, 0, static_cast<uint8_t>(AllocOp::kFree));
  d.events.emplace_back(0, std::move(c));
  d.events.emplace_back(1, EventColumns());
  d.ended.emplace_back(1, 5000);
  d.warnings.push_back("a warning");
  d.last = true;
  return d;
}

TEST(LiveWire, WhatIsSentIsWhatIsRead) {
  std::string msg;
  encode_delivery(sample(), msg);
  auto n = wire_payload_bytes(msg);
  ASSERT_TRUE(n) << n.error().message();
  ASSERT_EQ(*n + kWireHeaderBytes, msg.size());
  auto d = decode_delivery(std::string_view(msg).substr(kWireHeaderBytes));
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->horizon, 123456789u);
  EXPECT_TRUE(d->last);
  ASSERT_EQ(d->threads.size(), 2u);
  EXPECT_EQ(d->threads[1].process, "100.0");
  EXPECT_EQ(d->threads[1].tid, 101u);
  EXPECT_EQ(d->threads[0].start_tick, 1000u);
  EXPECT_TRUE(d->threads[0].main);
  ASSERT_EQ(d->events.size(), 2u);
  const EventColumns& c = d->events[0].second;
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c.kinds()[0], EventKind::kEntryInherited);
  EXPECT_EQ(c.kinds()[3], EventKind::kLost);
  EXPECT_EQ(c.ticks()[2], 1200u);
  EXPECT_EQ(c.values()[0], 0x401000u);
  EXPECT_EQ(c.values()[1], 0x401100u);
  EXPECT_EQ(c.values()[2], 42u);
  EXPECT_EQ(c.values()[3], 0x7f0000001000ull | uint64_t{static_cast<uint8_t>(AllocOp::kMalloc)} << kMemoryValueOpShift);
  EXPECT_EQ(c.values()[4], 64u);
  EXPECT_EQ(c.values()[5], 0x7f0000001000ull | uint64_t{static_cast<uint8_t>(AllocOp::kFree)} << kMemoryValueOpShift);
  EXPECT_TRUE(d->events[1].second.empty());
  ASSERT_EQ(d->ended.size(), 1u);
  EXPECT_EQ(d->ended[0], (std::pair<uint32_t, uint64_t>{1, 5000}));
  ASSERT_EQ(d->warnings.size(), 1u);
  EXPECT_EQ(d->warnings[0], "a warning");
}

TEST(LiveWire, DamageIsRefused) {
  std::string msg;
  encode_delivery(sample(), msg);
  EXPECT_FALSE(wire_payload_bytes(std::string(12, 'X')));
  EXPECT_FALSE(wire_payload_bytes(std::string_view(msg).substr(0, 5)));
  std::string huge = msg.substr(0, kWireHeaderBytes);
  huge[11] = '\x7f';
  EXPECT_FALSE(wire_payload_bytes(huge));
  const std::string payload = msg.substr(kWireHeaderBytes);
  // Every cut short, and a byte more.
  for (size_t n = 0; n < payload.size(); ++n) EXPECT_FALSE(decode_delivery(payload.substr(0, n))) << n;
  EXPECT_FALSE(decode_delivery(payload + "x"));
  // A kind no event has; a value count that does not match the kinds.
  const size_t kinds_at = payload.find(std::string("\x07\x01\x02\x06", 4));  // the first batch's kinds
  ASSERT_NE(kinds_at, std::string::npos);
  std::string bad_kind = payload;
  bad_kind[kinds_at] = 77;
  auto r = decode_delivery(bad_kind);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("damaged message"), std::string::npos);
  std::string bad_count = payload;
  bad_count[kinds_at + 2] = static_cast<char>(EventKind::kEntry);  // the exit now claims a value
  EXPECT_FALSE(decode_delivery(bad_count));
  // A thread index no trace has.
  LiveDelivery far;
  far.ended.emplace_back(kWireMaxThread, 1);
  std::string far_msg;
  encode_delivery(far, far_msg);
  EXPECT_FALSE(decode_delivery(std::string_view(far_msg).substr(kWireHeaderBytes)));
  // Random bytes never crash it (ASan/UBSan would say).
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string junk = payload;
    for (int j = 0; j < 4; ++j) junk[rng() % junk.size()] = static_cast<char>(rng());
    (void)decode_delivery(junk);
  }
}

}  // namespace
}  // namespace callscope::format
