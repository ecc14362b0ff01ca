// LEB128 varints and zigzag encoding for the event columns of the trace.
#pragma once

#include <cstdint>
#include <vector>

namespace callscope::format {

inline void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

// The general case of get_varint, kept out of line so that the one-byte
// case inlines into the decoding loops.
[[gnu::noinline]] inline bool get_long_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const uint8_t b = *p++;
    if (shift == 63 && b > 1) return false;  // the 10th byte holds bit 63 only
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Reads one varint at p, advancing it; false when the bytes run out or the
// value does not fit 64 bits.
inline bool get_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  if (__builtin_expect(p != end && *p < 0x80, 1)) {  // most values fit in one byte
    v = *p++;
    return true;
  }
  return get_long_varint(p, end, v);
}

inline uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t unzigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

}  // namespace callscope::format
