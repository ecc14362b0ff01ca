// LEB128 varints and zigzag encoding (src/format/varint.h).
#include "format/varint.h"

#include "format/trace_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace callscope::format {
namespace {

std::vector<uint8_t> encode(uint64_t v) {
  std::vector<uint8_t> out;
  put_varint(out, v);
  return out;
}

// Decodes exactly one varint from `bytes`; checks that it used all of them.
bool decode_all(const std::vector<uint8_t>& bytes, uint64_t& v) {
  const uint8_t* p = bytes.data();
  const uint8_t* end = p + bytes.size();
  if (!get_varint(p, end, v)) return false;
  return p == end;
}

TEST(format_varint, KnownEncodings) {
  EXPECT_EQ(encode(0), (std::vector<uint8_t>{0x00}));
  EXPECT_EQ(encode(1), (std::vector<uint8_t>{0x01}));
  EXPECT_EQ(encode(127), (std::vector<uint8_t>{0x7f}));
  EXPECT_EQ(encode(128), (std::vector<uint8_t>{0x80, 0x01}));
  EXPECT_EQ(encode(300), (std::vector<uint8_t>{0xac, 0x02}));
  EXPECT_EQ(encode(16383), (std::vector<uint8_t>{0xff, 0x7f}));
  EXPECT_EQ(encode(16384), (std::vector<uint8_t>{0x80, 0x80, 0x01}));
  EXPECT_EQ(encode(uint64_t{1} << 63),
            (std::vector<uint8_t>{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}));
  EXPECT_EQ(encode(UINT64_MAX),
            (std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
}

TEST(format_varint, RoundTripEdgeValues) {
  const uint64_t values[] = {0,
                             1,
                             127,
                             128,
                             255,
                             256,
                             16383,
                             16384,
                             (uint64_t{1} << 32) - 1,
                             uint64_t{1} << 32,
                             (uint64_t{1} << 56) - 1,
                             uint64_t{1} << 56,
                             (uint64_t{1} << 63) - 1,
                             uint64_t{1} << 63,
                             (uint64_t{1} << 63) + 1,
                             UINT64_MAX - 1,
                             UINT64_MAX};
  for (uint64_t v : values) {
    const auto bytes = encode(v);
    // Length: ceil(bits / 7), at least 1, at most 10.
    size_t bits = 0;
    for (uint64_t x = v; x; x >>= 1) ++bits;
    EXPECT_EQ(bytes.size(), bits == 0 ? 1u : (bits + 6) / 7) << v;
    uint64_t got = 12345;
    ASSERT_TRUE(decode_all(bytes, got)) << v;
    EXPECT_EQ(got, v);
  }
}

TEST(format_varint, SequenceDecodesInOrder) {
  std::vector<uint8_t> bytes;
  const uint64_t values[] = {5, 0, UINT64_MAX, 128, 1ull << 40, 127};
  for (uint64_t v : values) put_varint(bytes, v);
  const uint8_t* p = bytes.data();
  const uint8_t* end = p + bytes.size();
  for (uint64_t v : values) {
    uint64_t got;
    ASSERT_TRUE(get_varint(p, end, got));
    EXPECT_EQ(got, v);
  }
  EXPECT_EQ(p, end);
  uint64_t got;
  EXPECT_FALSE(get_varint(p, end, got));  // nothing left
}

TEST(format_varint, TruncatedInputFails) {
  for (uint64_t v : {uint64_t{128}, uint64_t{16384}, uint64_t{1} << 63, UINT64_MAX}) {
    const auto bytes = encode(v);
    for (size_t n = 0; n < bytes.size(); ++n) {
      const uint8_t* p = bytes.data();
      uint64_t got;
      EXPECT_FALSE(get_varint(p, bytes.data() + n, got)) << "value " << v << " cut to " << n << " bytes";
      EXPECT_LE(p, bytes.data() + n);  // never reads past the end
    }
  }
  const uint8_t* p = nullptr;
  uint64_t got;
  EXPECT_FALSE(get_varint(p, p, got));  // empty input
}

TEST(format_varint, OverlongFails) {
  // 11 bytes with continuation bits: more than any 64-bit value needs.
  std::vector<uint8_t> eleven(10, 0x80);
  eleven.push_back(0x00);
  uint64_t got;
  const uint8_t* p = eleven.data();
  EXPECT_FALSE(get_varint(p, eleven.data() + eleven.size(), got));
  EXPECT_LE(p - eleven.data(), 10);  // stops after at most 10 bytes

  std::vector<uint8_t> many(64, 0xff);
  p = many.data();
  EXPECT_FALSE(get_varint(p, many.data() + many.size(), got));
  EXPECT_LE(p - many.data(), 10);
}

TEST(format_varint, TenthByteBeyond64BitsFails) {
  // varint.h: "false when ... the value does not fit 64 bits". The tenth byte
  // holds bit 63 only; any higher bit set there does not fit.
  for (uint8_t last : {uint8_t{0x02}, uint8_t{0x03}, uint8_t{0x7f}}) {
    std::vector<uint8_t> bytes(9, 0xff);
    bytes.push_back(last);
    uint64_t got = 0;
    EXPECT_FALSE(decode_all(bytes, got)) << "tenth byte 0x" << std::hex << int{last} << " decoded to 0x" << got;
  }
}

TEST(format_varint, NonCanonicalButInRangeDecodes) {
  // Padding with 0x80 continuation bytes is legal LEB128 up to 10 bytes.
  const std::vector<uint8_t> padded{0x81, 0x80, 0x80, 0x00};
  uint64_t got;
  ASSERT_TRUE(decode_all(padded, got));
  EXPECT_EQ(got, 1u);
}

// The recorder's branch-free writer of tick deltas (EventEncoder::
// write_varint_short) writes what put_varint does, for every value up to
// 2^16 (one, two and three bytes) and for large ones.
TEST(format_varint, TheShortWriterWritesTheSameBytes) {
  std::vector<uint64_t> values;
  for (uint64_t v = 0; v <= (uint64_t{1} << 16); ++v) values.push_back(v);
  for (uint64_t v : {uint64_t{1} << 21, (uint64_t{1} << 28) + 5, uint64_t{1} << 56, ~uint64_t{0}}) values.push_back(v);
  for (uint64_t v : values) {
    uint8_t buf[16] = {};
    const uint8_t* end = EventEncoder::write_varint_short(buf, v);
    ASSERT_EQ(std::vector<uint8_t>(static_cast<const uint8_t*>(buf), end), encode(v)) << v;
  }
}

TEST(format_varint, ZigzagKnownValues) {
  EXPECT_EQ(zigzag(0), 0u);
  EXPECT_EQ(zigzag(-1), 1u);
  EXPECT_EQ(zigzag(1), 2u);
  EXPECT_EQ(zigzag(-2), 3u);
  EXPECT_EQ(zigzag(2), 4u);
  EXPECT_EQ(zigzag(std::numeric_limits<int64_t>::max()), UINT64_MAX - 1);
  EXPECT_EQ(zigzag(std::numeric_limits<int64_t>::min()), UINT64_MAX);
}

TEST(format_varint, ZigzagRoundTripThroughVarint) {
  const int64_t values[] = {0,
                            1,
                            -1,
                            63,
                            -64,
                            64,
                            -65,
                            1000000,
                            -1000000,
                            int64_t{1} << 40,
                            -(int64_t{1} << 40),
                            std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::min() + 1};
  for (int64_t v : values) {
    EXPECT_EQ(unzigzag(zigzag(v)), v);
    uint64_t got;
    ASSERT_TRUE(decode_all(encode(zigzag(v)), got)) << v;
    EXPECT_EQ(unzigzag(got), v);
  }
  // Small magnitudes stay small: one byte for [-64, 63].
  EXPECT_EQ(encode(zigzag(-64)).size(), 1u);
  EXPECT_EQ(encode(zigzag(63)).size(), 1u);
  EXPECT_EQ(encode(zigzag(64)).size(), 2u);
}

}  // namespace
}  // namespace callscope::format
