// A recording's tap over a socket (live_wire.h).
#include "format/live_wire.h"

#include <cstring>

namespace callscope::format {
namespace {

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_str(std::string& out, const std::string& s) {
  put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out += s;
}

// Reads the payload front to back; any read past its end fails the whole.
class Reader {
 public:
  explicit Reader(std::string_view p) : p_(p) {}
  template <class T>
  bool get(T& v) {
    if (p_.size() - pos_ < sizeof v) return false;
    std::memcpy(&v, p_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return true;
  }
  bool get_str(std::string& s) {
    uint32_t n = 0;
    if (!get(n) || p_.size() - pos_ < n) return false;
    s.assign(p_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  // n items of T, in place.
  template <class T>
  const char* take(uint64_t n) {
    if (n > (p_.size() - pos_) / sizeof(T)) return nullptr;
    const char* at = p_.data() + pos_;
    pos_ += n * sizeof(T);
    return at;
  }
  bool at_end() const { return pos_ == p_.size(); }

 private:
  std::string_view p_;
  size_t pos_ = 0;
};

}  // namespace

void encode_delivery(const LiveDelivery& d, std::string& out) {
  const size_t start = out.size();
  out.append(kWireMagic, sizeof kWireMagic);
  put<uint64_t>(out, 0);  // the payload's size, below
  put<uint64_t>(out, d.horizon);
  put<uint8_t>(out, d.last ? 1 : 0);
  put<uint32_t>(out, static_cast<uint32_t>(d.threads.size()));
  for (const LiveThreadStart& t : d.threads) {
    put<uint32_t>(out, t.index);
    put_str(out, t.process);
    put<uint32_t>(out, t.tid);
    put<uint64_t>(out, t.start_tick);
    put<uint8_t>(out, t.main ? 1 : 0);
  }
  put<uint32_t>(out, static_cast<uint32_t>(d.events.size()));
  for (const auto& [index, c] : d.events) {
    size_t nv = 0;
    for (size_t i = 0; i < c.size(); ++i) nv += value_count(c.kinds()[i]);
    put<uint32_t>(out, index);
    put<uint32_t>(out, static_cast<uint32_t>(c.size()));
    put<uint32_t>(out, static_cast<uint32_t>(nv));
    out.append(reinterpret_cast<const char*>(c.kinds()), c.size() * sizeof(EventKind));
    out.append(reinterpret_cast<const char*>(c.ticks()), c.size() * sizeof(uint64_t));
    out.append(reinterpret_cast<const char*>(c.values()), nv * sizeof(uint64_t));
  }
  put<uint32_t>(out, static_cast<uint32_t>(d.ended.size()));
  for (const auto& [index, tick] : d.ended) {
    put<uint32_t>(out, index);
    put<uint64_t>(out, tick);
  }
  put<uint32_t>(out, static_cast<uint32_t>(d.warnings.size()));
  for (const std::string& w : d.warnings) put_str(out, w);
  const uint64_t payload = out.size() - start - kWireHeaderBytes;
  std::memcpy(out.data() + start + sizeof kWireMagic, &payload, sizeof payload);
}

Result<uint64_t> wire_payload_bytes(std::string_view header) {
  if (header.size() < kWireHeaderBytes || std::memcmp(header.data(), kWireMagic, sizeof kWireMagic) != 0)
    return Error("not a message of the recorder's tap");
  uint64_t n = 0;
  std::memcpy(&n, header.data() + sizeof kWireMagic, sizeof n);
  if (n > kWireMaxPayload) return Error("a message of the recorder's tap claims " + std::to_string(n) + " bytes");
  return n;
}

Result<LiveDelivery> decode_delivery(std::string_view payload, LiveTap* pool) {
  const Error bad("a damaged message from the recorder's tap");
  Reader r(payload);
  LiveDelivery d;
  uint8_t last = 0;
  uint32_t n = 0;
  if (!r.get(d.horizon) || !r.get(last) || !r.get(n)) return bad;
  d.last = last != 0;
  for (uint32_t i = 0; i < n; ++i) {
    LiveThreadStart t;
    uint8_t main = 0;
    if (!r.get(t.index) || !r.get_str(t.process) || !r.get(t.tid) || !r.get(t.start_tick) || !r.get(main) ||
        t.index >= kWireMaxThread)
      return bad;
    t.main = main != 0;
    d.threads.push_back(std::move(t));
  }
  if (!r.get(n)) return bad;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t index = 0, events = 0, values = 0;
    if (!r.get(index) || !r.get(events) || !r.get(values) || index >= kWireMaxThread) return bad;
    const char* kinds = r.take<EventKind>(events);
    const char* ticks = r.take<uint64_t>(events);
    const char* vals = r.take<uint64_t>(values);
    if (!kinds || !ticks || !vals) return bad;
    size_t carried = 0;
    for (uint32_t j = 0; j < events; ++j) {
      const auto kind = static_cast<uint8_t>(kinds[j]);
      if (kind == 0 || kind > kMaxEventKind) return bad;
      carried += value_count(static_cast<EventKind>(kind));
    }
    if (carried != values) return bad;
    EventColumns c;
    if (pool) pool->reuse(c);
    c.append(kinds, ticks, events, vals, values);
    d.events.emplace_back(index, std::move(c));
  }
  if (!r.get(n)) return bad;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t index = 0;
    uint64_t tick = 0;
    if (!r.get(index) || !r.get(tick) || index >= kWireMaxThread) return bad;
    d.ended.emplace_back(index, tick);
  }
  if (!r.get(n)) return bad;
  for (uint32_t i = 0; i < n; ++i) {
    std::string w;
    if (!r.get_str(w)) return bad;
    d.warnings.push_back(std::move(w));
  }
  if (!r.at_end()) return bad;
  return d;
}

}  // namespace callscope::format
