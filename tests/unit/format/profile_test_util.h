// Builders for the profile-mode format tests: t<tid>.prof files, `dumps`
// snapshots, meta files and thread files written byte for byte as the runtime
// (src/runtime/profile.cpp, operations.cpp, process.cpp) writes them.
#pragma once

#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "format/raw_session.h"
#include "format/trace_format.h"
#include "trace_test_util.h"

namespace callscope::format::profile_test {

using test::start;

constexpr uint64_t kNone = ~uint64_t{0};  // min / first_tick of a node without a completed call

// ---- builders -------------------------------------------------------------

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  ASSERT_TRUE(f.good()) << path;
}

template <class T>
void append(std::vector<uint8_t>& out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

struct NodeStats {
  uint64_t calls = 0, total = 0, self = 0, min = kNone, max = 0, first_tick = kNone, first = 0;
  uint32_t flags = 0;
};

inline RawProfNode pnode(uint64_t fn, uint32_t parent, const NodeStats& s = {}) {
  RawProfNode n{};
  n.fn = fn;
  n.parent = parent;
  n.calls = s.calls;
  n.total = s.total;
  n.self = s.self;
  n.min = s.min;
  n.max = s.max;
  n.first_tick = s.first_tick;
  n.first = s.first;
  n.flags = s.flags;
  return n;
}

// The root as open_prof_file() makes it: reset stats, fn 0, its own parent.
inline RawProfNode root() { return pnode(0, 0); }

inline RawProfFrame pframe(uint32_t node, uint64_t tick, uint64_t child, uint32_t flags = 0, uint64_t fn = 0) {
  RawProfFrame f{};
  f.fn = fn;
  f.sp = 0x7fff0000;
  f.tick = tick;
  f.child = child;
  f.node = node;
  f.flags = flags;
  return f;
}

inline bool same(const RawProfNode& a, const RawProfNode& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A t<tid>.prof as open_prof_file() lays it out: the header page, the shadow
// stack (stack_capacity frames), then the nodes (node 0 the root).
class ProfFile {
 public:
  ProfFile(uint32_t pid, uint32_t tid, uint32_t stack_capacity = 4) {
    std::memcpy(h_.magic, kRawProfMagic, sizeof h_.magic);
    h_.version = kRawVersion;
    h_.header_size = kRawProfHeaderSize;
    h_.pid = pid;
    h_.tid = tid;
    h_.stack_offset = kRawProfHeaderSize;
    h_.stack_capacity = stack_capacity;
    h_.nodes_offset = kRawProfHeaderSize + uint64_t{stack_capacity} * sizeof(RawProfFrame);
    h_.flags = pid == tid ? kRawThreadMain : 0;
    nodes_.push_back(root());
  }
  RawProfHeader& header() { return h_; }
  ProfFile& node(const RawProfNode& n) {
    nodes_.push_back(n);
    return *this;
  }
  ProfFile& open(const RawProfFrame& f) {
    frames_.push_back(f);
    return *this;
  }
  // node_count, node_capacity and depth from what was added, unless false.
  bool fill_counts = true;
  std::vector<uint8_t> bytes() const {
    RawProfHeader h = h_;
    if (fill_counts) {
      h.node_count = nodes_.size();
      h.node_capacity = nodes_.size();
      h.depth = static_cast<uint32_t>(frames_.size());
    }
    std::vector<uint8_t> b(h_.nodes_offset + nodes_.size() * sizeof(RawProfNode), 0);
    std::memcpy(b.data(), &h, sizeof h);
    for (size_t i = 0; i < frames_.size() && i < h_.stack_capacity; ++i)
      std::memcpy(b.data() + h_.stack_offset + i * sizeof(RawProfFrame), &frames_[i], sizeof(RawProfFrame));
    std::memcpy(b.data() + h_.nodes_offset, nodes_.data(), nodes_.size() * sizeof(RawProfNode));
    return b;
  }
  const std::vector<RawProfNode>& nodes() const { return nodes_; }
  const std::vector<RawProfFrame>& frames() const { return frames_; }

 private:
  RawProfHeader h_{};
  std::vector<RawProfNode> nodes_;
  std::vector<RawProfFrame> frames_;
};

// One thread of a snapshot, as op_dump() writes it.
struct SnapThread {
  uint32_t tid = 0;
  uint64_t dropped = 0;
  uint64_t start_tick = 0;
  std::string name;
  std::vector<RawProfNode> nodes;
};

// One snapshot of a `dumps` file: RawDumpHeader, then per thread a
// RawDumpThread and its nodes; `bytes` covers it all.
inline std::vector<uint8_t> snapshot_bytes(uint32_t seq, uint32_t reason, uint64_t tick, const std::vector<SnapThread>& ts) {
  RawDumpHeader h{};
  std::memcpy(h.magic, kRawDumpMagic, sizeof h.magic);
  h.seq = seq;
  h.reason = reason;
  h.tick = tick;
  h.threads = static_cast<uint32_t>(ts.size());
  h.bytes = sizeof h;
  for (const SnapThread& t : ts) h.bytes += sizeof(RawDumpThread) + t.nodes.size() * sizeof(RawProfNode);
  std::vector<uint8_t> out;
  append(out, h);
  for (const SnapThread& t : ts) {
    RawDumpThread dt{};
    dt.tid = t.tid;
    dt.nodes = t.nodes.size();
    dt.dropped_calls = t.dropped;
    dt.start_tick = t.start_tick;
    std::strncpy(dt.name, t.name.c_str(), sizeof dt.name - 1);
    append(out, dt);
    for (const RawProfNode& n : t.nodes) append(out, n);
  }
  return out;
}

// Meta records as process.cpp write_meta() makes them: header, body, extras,
// zero padding to a multiple of 8.
class MetaFile {
 public:
  MetaFile() {
    RawFileHeader fh{};
    std::memcpy(fh.magic, kRawMetaMagic, sizeof fh.magic);
    fh.version = kRawVersion;
    add(RawMetaType::kFileHeader, fh);
  }
  template <class T>
  MetaFile& add(RawMetaType type, const T& body, const std::string& extra1 = "", const std::string& extra2 = "") {
    const size_t raw = sizeof(RawMetaHeader) + sizeof body + extra1.size() + extra2.size();
    const RawMetaHeader h{static_cast<uint32_t>(type), static_cast<uint32_t>((raw + 7) & ~size_t{7})};
    append(bytes_, h);
    append(bytes_, body);
    bytes_.insert(bytes_.end(), extra1.begin(), extra1.end());
    bytes_.insert(bytes_.end(), extra2.begin(), extra2.end());
    bytes_.resize(bytes_.size() + (h.size - raw), 0);
    return *this;
  }
  MetaFile& mark(uint64_t tick, uint32_t tid, uint32_t id, const std::string& text) {
    return add(RawMetaType::kMark, RawMark{tick, tid, id, static_cast<uint32_t>(text.size()), 0}, text);
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// A thread event file without events: the 4096-byte header page only (in
// profile mode without chrono functions, nothing else is written).
inline std::vector<uint8_t> thread_file(uint32_t pid, uint32_t tid, const char* name, uint64_t start, uint64_t end) {
  RawThreadHeader h{};
  std::memcpy(h.magic, kRawThreadMagic, sizeof h.magic);
  h.version = kRawVersion;
  h.header_size = kRawThreadHeaderSize;
  h.pid = pid;
  h.tid = tid;
  h.start_tick = start;
  h.end_tick = end;
  h.flags = pid == tid ? kRawThreadMain : 0;
  std::strncpy(h.name, name, sizeof h.name - 1);
  std::vector<uint8_t> b(kRawThreadHeaderSize, 0);
  std::memcpy(b.data(), &h, sizeof h);
  return b;
}

inline RawMode mode(TraceMode m, uint32_t flags) { return RawMode{static_cast<uint32_t>(m), flags}; }


}  // namespace callscope::format::profile_test
