// A protocol-buffer encoder for the few messages callscope writes (pprof's
// profile.proto, Perfetto's TracePacket): no generated code, no library. A
// ProtoWriter appends fields to a byte string; nested messages are written
// in place and their length put in front when they close.
//
// The schemas of the fields used are in src/export/proto/ (tests decode the
// output with protoc against them).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace callscope::exporter {

enum class WireType : uint8_t { kVarint = 0, kLen = 2 };

inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Appends `v` as a varint to `p`; returns the end.
inline char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

class ProtoWriter {
 public:
  explicit ProtoWriter(std::string& out) : out_(out) {}

  void varint(uint32_t field, uint64_t v) {
    raw_varint((uint64_t{field} << 3) | static_cast<uint8_t>(WireType::kVarint));
    raw_varint(v);
  }
  void boolean(uint32_t field, bool v) { varint(field, v ? 1 : 0); }
  void bytes(uint32_t field, std::string_view v) {
    raw_varint((uint64_t{field} << 3) | static_cast<uint8_t>(WireType::kLen));
    raw_varint(v.size());
    out_.append(v.data(), v.size());
  }
  // A repeated scalar field, packed.
  template <class Range>
  void packed(uint32_t field, const Range& values) {
    size_t n = 0;
    for (uint64_t v : values) n += varint_size(v);
    if (n == 0) return;
    raw_varint((uint64_t{field} << 3) | static_cast<uint8_t>(WireType::kLen));
    raw_varint(n);
    for (uint64_t v : values) raw_varint(v);
  }
  // A nested message: body(ProtoWriter&) writes its fields.
  template <class Body>
  void message(uint32_t field, Body&& body) {
    raw_varint((uint64_t{field} << 3) | static_cast<uint8_t>(WireType::kLen));
    const size_t at = out_.size();
    body(*this);
    const size_t len = out_.size() - at;
    char prefix[10];
    const size_t pn = static_cast<size_t>(put_varint(prefix, len) - prefix);
    out_.insert(at, prefix, pn);
  }
  void raw_varint(uint64_t v) {
    char buf[10];
    out_.append(buf, static_cast<size_t>(put_varint(buf, v) - buf));
  }
  std::string& out() { return out_; }

 private:
  std::string& out_;
};

}  // namespace callscope::exporter
