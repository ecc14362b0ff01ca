// Profile mode in the format library: the open-call arithmetic shared with
// the runtime (add_open_time), t<tid>.prof and `dumps` files written by hand
// byte for byte as src/runtime/profile.cpp writes them, a whole profile-mode
// raw session turned into a trace (snapshots, final state, marks), and
// damaged kProfile blocks. Meant to run under ASan/UBSan.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>

#include "format/finalize.h"
#include "format/profile_math.h"
#include "format/raw_session.h"
#include "format/trace_reader.h"
#include "trace_test_util.h"

namespace callscope::format {
namespace {

constexpr uint64_t kNone = ~uint64_t{0};  // min / first_tick of a node without a completed call

// ---- builders -------------------------------------------------------------

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
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

RawProfNode pnode(uint64_t fn, uint32_t parent, const NodeStats& s = {}) {
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
RawProfNode root() { return pnode(0, 0); }

RawProfFrame pframe(uint32_t node, uint64_t tick, uint64_t child, uint32_t flags = 0, uint64_t fn = 0) {
  RawProfFrame f{};
  f.fn = fn;
  f.sp = 0x7fff0000;
  f.tick = tick;
  f.child = child;
  f.node = node;
  f.flags = flags;
  return f;
}

bool same(const RawProfNode& a, const RawProfNode& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

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
std::vector<uint8_t> snapshot_bytes(uint32_t seq, uint32_t reason, uint64_t tick, const std::vector<SnapThread>& ts) {
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
std::vector<uint8_t> thread_file(uint32_t pid, uint32_t tid, const char* name, uint64_t start, uint64_t end) {
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

RawProcessStart start(uint32_t pid, uint32_t ppid, uint64_t base, uint32_t parent_n, uint32_t flags,
                      const std::string& exe, const std::string& cmdline) {
  RawProcessStart ps{};
  ps.pid = pid;
  ps.ppid = ppid;
  ps.clock = static_cast<uint32_t>(ClockKind::kMonotonic);
  ps.parent_n = parent_n;
  ps.base_tick = base;
  ps.calib_tick = base;
  ps.calib_mono_ns = base;
  ps.realtime_ns = 1700000000000000000ull + base;
  ps.exe_len = static_cast<uint32_t>(exe.size());
  ps.cmdline_len = static_cast<uint32_t>(cmdline.size());
  ps.flags = flags;
  return ps;
}

RawMode mode(TraceMode m, uint32_t flags) { return RawMode{static_cast<uint32_t>(m), flags}; }

// ---- add_open_time ----------------------------------------------------------

TEST(format_add_open_time, NestedOpenFramesAddTheirTimeSoFar) {
  // A (2 calls done: 1000 total, 300 self) -> B (none yet), both open at 200:
  // A since 100 with 10 ticks in completed callees, B since 150 with 5.
  std::vector<RawProfNode> nodes = {root(), pnode(0xa, 0, {2, 1000, 300, 400, 600, 1, 400}), pnode(0xb, 1),
                                    pnode(0xc, 1, {1, 5, 5, 5, 5, 2, 5})};
  const std::vector<RawProfNode> before = nodes;
  const RawProfFrame stack[] = {pframe(1, 100, 10), pframe(2, 150, 5)};
  add_open_time(nodes.data(), nodes.size(), stack, 2, 200, 0);
  // B: 50 so far, 5 of them in its callees.
  EXPECT_EQ(nodes[2].total, 50u);
  EXPECT_EQ(nodes[2].self, 45u);
  EXPECT_EQ(nodes[2].flags, kProfNodeOpen);
  // A: 100 so far; its callees: 10 completed + B's 50.
  EXPECT_EQ(nodes[1].total, 1100u);
  EXPECT_EQ(nodes[1].self, 340u);
  EXPECT_EQ(nodes[1].flags, kProfNodeOpen);
  // An open call is not a completed call: counts, extremes, first unchanged.
  EXPECT_EQ(nodes[1].calls, 2u);
  EXPECT_EQ(nodes[1].min, 400u);
  EXPECT_EQ(nodes[1].max, 600u);
  EXPECT_EQ(nodes[2].calls, 0u);
  EXPECT_EQ(nodes[2].min, kNone);
  EXPECT_EQ(nodes[2].first_tick, kNone);
  EXPECT_TRUE(same(nodes[0], before[0]));  // the root
  EXPECT_TRUE(same(nodes[3], before[3]));  // not on the stack
}

TEST(format_add_open_time, ExcludedFrameBetweenCountedOnes) {
  // A [100..] -> X (excluded: keeps A's node) [120..] -> B [160..], now 200.
  // A had 10 ticks of completed callees before X; X's completed counted
  // callees took 30. A's self is its own time plus X's own time: 200-100
  // minus 10, minus X's callees 30, minus B's 40 = 20.
  std::vector<RawProfNode> nodes = {root(), pnode(0xa, 0), pnode(0xb, 1)};
  const RawProfFrame stack[] = {pframe(1, 100, 10), pframe(1, 120, 30, kProfFrameExcluded), pframe(2, 160, 0)};
  add_open_time(nodes.data(), nodes.size(), stack, 3, 200, 0);
  EXPECT_EQ(nodes[2].total, 40u);
  EXPECT_EQ(nodes[2].self, 40u);
  EXPECT_EQ(nodes[1].total, 100u) << "the excluded frame must not count A's time twice";
  EXPECT_EQ(nodes[1].self, 20u);
}

TEST(format_add_open_time, ExcludedFrameOnTop) {
  // A [0..] -> X (excluded) [50..] with 20 ticks in completed counted
  // callees, now 100: X's own 30 ticks are A's self; its callees' 20 are not.
  std::vector<RawProfNode> nodes = {root(), pnode(0xa, 0)};
  const RawProfFrame stack[] = {pframe(1, 0, 0), pframe(1, 50, 20, kProfFrameExcluded)};
  add_open_time(nodes.data(), nodes.size(), stack, 2, 100, 0);
  EXPECT_EQ(nodes[1].total, 100u);
  EXPECT_EQ(nodes[1].self, 80u);
}

TEST(format_add_open_time, FloorOfAPendingClear) {
  // A clear at 250 the thread has not applied: its nodes read as reset (the
  // caller resets them), frames that began before it count from 250 with
  // nothing in their callees.
  {
    std::vector<RawProfNode> nodes = {root(), pnode(0xa, 0), pnode(0xb, 1)};
    const RawProfFrame stack[] = {pframe(1, 100, 50), pframe(2, 300, 7)};
    add_open_time(nodes.data(), nodes.size(), stack, 2, 400, 250);
    EXPECT_EQ(nodes[2].total, 100u);  // began after the clear: all of it, callees too
    EXPECT_EQ(nodes[2].self, 93u);
    EXPECT_EQ(nodes[1].total, 150u);  // from the clear, its 50 before it forgotten
    EXPECT_EQ(nodes[1].self, 50u);
  }
  {
    std::vector<RawProfNode> nodes = {root(), pnode(0xa, 0), pnode(0xb, 1)};
    const RawProfFrame stack[] = {pframe(1, 100, 50), pframe(2, 200, 20)};
    add_open_time(nodes.data(), nodes.size(), stack, 2, 400, 250);
    EXPECT_EQ(nodes[2].total, 150u);
    EXPECT_EQ(nodes[2].self, 150u);
    EXPECT_EQ(nodes[1].total, 150u);
    EXPECT_EQ(nodes[1].self, 0u);
  }
}

TEST(format_add_open_time, NodeZeroAndOutOfRangeNodesAreNeverTouched) {
  // Frames inherited across fork point at node 0 (excluded); a counted frame
  // pointing at node 0 or past the table (damage) must not be written either.
  std::vector<RawProfNode> nodes = {root(), pnode(0xa, 0)};
  nodes[0].total = 12345;  // anything: it must stay as it is
  const std::vector<RawProfNode> before = nodes;
  const RawProfFrame stack[] = {pframe(0, 5, 0, kProfFrameExcluded), pframe(0, 10, 0), pframe(7, 20, 0),
                                pframe(1, 30, 0)};
  add_open_time(nodes.data(), nodes.size(), stack, 4, 100, 0);
  EXPECT_TRUE(same(nodes[0], before[0]));
  EXPECT_EQ(nodes[1].total, 70u);
  EXPECT_EQ(nodes[1].self, 70u);

  // No open frame: nothing changes.
  std::vector<RawProfNode> again = before;
  add_open_time(again.data(), again.size(), stack, 0, 100, 0);
  for (size_t i = 0; i < again.size(); ++i) EXPECT_TRUE(same(again[i], before[i])) << i;
}

TEST(format_add_open_time, NowBeforeTheEntryAddsNothing) {
  // A signal handler's hook may have stored a later tick than the snapshot's.
  std::vector<RawProfNode> nodes = {root(), pnode(0xa, 0, {1, 10, 10, 10, 10, 1, 10})};
  const RawProfFrame stack[] = {pframe(1, 500, 40)};
  add_open_time(nodes.data(), nodes.size(), stack, 1, 400, 0);
  EXPECT_EQ(nodes[1].total, 10u);
  EXPECT_EQ(nodes[1].self, 10u);
  EXPECT_EQ(nodes[1].flags, kProfNodeOpen);
}

// ---- read_prof_file -----------------------------------------------------------

ProfFile good_prof() {
  ProfFile p(300, 300);
  p.header().start_tick = 5;
  p.header().end_tick = 900;
  p.header().dropped_calls = 3;
  std::strncpy(p.header().name, "main-thr", sizeof p.header().name);
  p.node(pnode(0x401000, 0, {1, 800, 100, 800, 800, 10, 800}))
      .node(pnode(0x401100, 1, {4, 700, 700, 100, 250, 20, 100}))
      .node(pnode(0x401200, 1, {0, 0, 0, kNone, 0, kNone, 0, kProfNodeExcluded}))
      .open(pframe(1, 10, 700, 0, 0x401000))
      .open(pframe(2, 850, 0, 0, 0x401100));
  return p;
}

TEST(format_read_prof_file, GoodFile) {
  test::TempDir dir;
  const ProfFile p = good_prof();
  write_bytes(dir.file("t300.prof"), p.bytes());
  auto t = read_prof_file(dir.file("t300.prof"));
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->tid, 300u);
  EXPECT_EQ(t->start_tick, 5u);
  EXPECT_EQ(t->end_tick, 900u);
  EXPECT_EQ(t->dropped_calls, 3u);
  EXPECT_EQ(t->clear_seq, 0u);
  ASSERT_EQ(t->nodes.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(same(t->nodes[i], p.nodes()[i])) << "node " << i;
  ASSERT_EQ(t->open.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(std::memcmp(&t->open[i], &p.frames()[i], sizeof(RawProfFrame)), 0) << "frame " << i;
}

TEST(format_read_prof_file, NodeCountBeyondTheFile) {
  test::TempDir dir;
  ProfFile p = good_prof();
  p.fill_counts = false;
  p.header().node_count = 1000;  // published, but the file holds 4
  p.header().depth = 2;
  write_bytes(dir.file("t.prof"), p.bytes());
  auto t = read_prof_file(dir.file("t.prof"));
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->nodes.size(), 4u);

  // The file cut in the middle of the last node: only whole nodes.
  std::vector<uint8_t> b = p.bytes();
  b.resize(b.size() - sizeof(RawProfNode) / 2);
  write_bytes(dir.file("cut.prof"), b);
  t = read_prof_file(dir.file("cut.prof"));
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->nodes.size(), 3u);
  EXPECT_TRUE(same(t->nodes[2], p.nodes()[2]));

  // A depth beyond the stack's capacity: at most the capacity.
  ProfFile deep = good_prof();
  deep.fill_counts = false;
  deep.header().node_count = 4;
  deep.header().depth = 100000;
  write_bytes(dir.file("deep.prof"), deep.bytes());
  t = read_prof_file(dir.file("deep.prof"));
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->open.size(), 4u);  // stack_capacity
}

TEST(format_read_prof_file, ParentNotEarlierIsReparentedToTheRoot) {
  test::TempDir dir;
  ProfFile p(1, 1);
  p.node(pnode(0x10, 0, {1, 5, 5, 5, 5, 1, 5}))
      .node(pnode(0x20, 2, {1, 5, 5, 5, 5, 1, 5}))         // its own parent
      .node(pnode(0x30, 77, {1, 5, 5, 5, 5, 1, 5}))        // past the table
      .node(pnode(0x40, 0xffffffffu, {1, 5, 5, 5, 5, 1, 5}))
      .node(pnode(0x50, 3, {1, 5, 5, 5, 5, 1, 5}));        // fine: an earlier node
  write_bytes(dir.file("t.prof"), p.bytes());
  auto t = read_prof_file(dir.file("t.prof"));
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->nodes.size(), 6u);
  EXPECT_EQ(t->nodes[1].parent, 0u);
  EXPECT_EQ(t->nodes[2].parent, 0u);
  EXPECT_EQ(t->nodes[3].parent, 0u);
  EXPECT_EQ(t->nodes[4].parent, 0u);
  EXPECT_EQ(t->nodes[5].parent, 3u);
  for (size_t i = 1; i < t->nodes.size(); ++i) EXPECT_LT(t->nodes[i].parent, i);
}

TEST(format_read_prof_file, NotAProfileFile) {
  test::TempDir dir;
  auto expect_error = [&](const std::string& name, const std::string& text) {
    auto t = read_prof_file(dir.file(name));
    ASSERT_FALSE(t.ok()) << name;
    EXPECT_NE(t.error().message().find(text), std::string::npos) << t.error().message();
    EXPECT_NE(t.error().message().find(name), std::string::npos) << t.error().message();
  };
  // A thread event file under a .prof name.
  write_bytes(dir.file("ev.prof"), thread_file(1, 1, "x", 0, 0));
  expect_error("ev.prof", "not a callscope profile file");
  write_bytes(dir.file("short.prof"), std::vector<uint8_t>(40, 0x11));
  expect_error("short.prof", "not a callscope profile file");
  write_bytes(dir.file("empty.prof"), {});
  expect_error("empty.prof", "empty");
  expect_error("missing.prof", "cannot open");
  // A damaged header: its offsets point past the end of the file.
  std::vector<uint8_t> b = good_prof().bytes();
  RawProfHeader h;
  std::memcpy(&h, b.data(), sizeof h);
  h.nodes_offset = 1ull << 40;
  std::memcpy(b.data(), &h, sizeof h);
  write_bytes(dir.file("offsets.prof"), b);
  expect_error("offsets.prof", "not a callscope profile file");
}

// ---- read_dumps -----------------------------------------------------------------

std::vector<SnapThread> snap_threads(uint64_t calls) {
  SnapThread a;
  a.tid = 10;
  a.dropped = 1;
  a.start_tick = 3;
  a.name = "main";
  a.nodes = {root(), pnode(0x401000, 0, {0, 90, 40, kNone, 0, kNone, 0, kProfNodeOpen}),
             pnode(0x401100, 1, {calls, 50, 50, 10, 20, 7, 10})};
  SnapThread b;
  b.tid = 11;
  b.name = "worker";
  b.nodes = {root()};  // a thread that made no call yet
  return {a, b};
}

struct Collected {
  std::vector<RawDumpHeader> headers;
  std::vector<std::vector<RawTree>> threads;
};

Status collect(const std::string& path, std::vector<std::string>& warnings, Collected& c) {
  return read_dumps(path, warnings, [&](RawSnapshot& s) -> Status {
    c.headers.push_back(s.header);
    c.threads.push_back(s.threads);
    return ok_status();
  });
}

TEST(format_read_dumps, TwoCompleteSnapshots) {
  test::TempDir dir;
  std::vector<uint8_t> file = snapshot_bytes(1, 1, 100, snap_threads(2));
  const std::vector<uint8_t> second = snapshot_bytes(2, 3, 250, snap_threads(5));
  file.insert(file.end(), second.begin(), second.end());
  write_bytes(dir.file("dumps"), file);
  std::vector<std::string> warnings;
  Collected c;
  auto st = collect(dir.file("dumps"), warnings, c);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(c.headers.size(), 2u);
  EXPECT_EQ(c.headers[0].seq, 1u);
  EXPECT_EQ(c.headers[0].reason, 1u);
  EXPECT_EQ(c.headers[0].tick, 100u);
  EXPECT_EQ(c.headers[1].seq, 2u);
  EXPECT_EQ(c.headers[1].reason, 3u);
  EXPECT_EQ(c.headers[1].tick, 250u);
  for (size_t s = 0; s < 2; ++s) {
    SCOPED_TRACE("snapshot " + std::to_string(s));
    const auto want = snap_threads(s == 0 ? 2 : 5);
    ASSERT_EQ(c.threads[s].size(), 2u);
    for (size_t t = 0; t < 2; ++t) {
      const RawTree& got = c.threads[s][t];
      EXPECT_EQ(got.tid, want[t].tid);
      EXPECT_EQ(got.dropped_calls, want[t].dropped);
      EXPECT_EQ(got.start_tick, want[t].start_tick);
      EXPECT_TRUE(got.open.empty());
      ASSERT_EQ(got.nodes.size(), want[t].nodes.size());
      for (size_t i = 0; i < got.nodes.size(); ++i) EXPECT_TRUE(same(got.nodes[i], want[t].nodes[i])) << i;
    }
  }

  // An empty file: no snapshot, no complaint.
  write_bytes(dir.file("empty"), {});
  warnings.clear();
  Collected none;
  st = collect(dir.file("empty"), warnings, none);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_TRUE(none.headers.empty());
  EXPECT_TRUE(warnings.empty());
}

TEST(format_read_dumps, ThirdCutShortAnywhere) {
  test::TempDir dir;
  std::vector<uint8_t> two = snapshot_bytes(1, 1, 100, snap_threads(2));
  const std::vector<uint8_t> second = snapshot_bytes(2, 2, 200, snap_threads(3));
  two.insert(two.end(), second.begin(), second.end());
  const std::vector<uint8_t> third = snapshot_bytes(3, 2, 300, snap_threads(4));
  // The process died while writing the third: any prefix of it.
  for (size_t cut = 1; cut < third.size(); ++cut) {
    SCOPED_TRACE("third snapshot cut after " + std::to_string(cut) + " bytes");
    std::vector<uint8_t> file = two;
    file.insert(file.end(), third.begin(), third.begin() + static_cast<std::ptrdiff_t>(cut));
    write_bytes(dir.file("dumps"), file);
    std::vector<std::string> warnings;
    Collected c;
    auto st = collect(dir.file("dumps"), warnings, c);
    ASSERT_TRUE(st.ok()) << st.error().message();
    ASSERT_EQ(c.headers.size(), 2u);
    EXPECT_EQ(c.headers[0].seq, 1u);
    EXPECT_EQ(c.headers[1].seq, 2u);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("offset " + std::to_string(two.size())), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find(dir.file("dumps")), std::string::npos) << warnings[0];
  }
}

TEST(format_read_dumps, GarbageMagic) {
  test::TempDir dir;
  std::vector<uint8_t> garbage(200);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 37 + 11);
  write_bytes(dir.file("dumps"), garbage);
  std::vector<std::string> warnings;
  Collected c;
  auto st = collect(dir.file("dumps"), warnings, c);
  // Nothing delivered, and said so (as a warning or as an error).
  EXPECT_TRUE(c.headers.empty());
  EXPECT_TRUE(!st.ok() || !warnings.empty());
  if (!warnings.empty()) {
    EXPECT_NE(warnings[0].find("offset 0"), std::string::npos) << warnings[0];
  }

  // Garbage after a good snapshot: the good one, then a warning at the garbage.
  std::vector<uint8_t> file = snapshot_bytes(1, 1, 100, snap_threads(2));
  const size_t good = file.size();
  file.insert(file.end(), garbage.begin(), garbage.end());
  write_bytes(dir.file("dumps2"), file);
  warnings.clear();
  Collected c2;
  st = collect(dir.file("dumps2"), warnings, c2);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(c2.headers.size(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("offset " + std::to_string(good)), std::string::npos) << warnings[0];

  EXPECT_FALSE(collect(dir.file("missing"), warnings, c2).ok());
}

TEST(format_read_dumps, ErrorFromTheCallbackStopsAndIsReturned) {
  test::TempDir dir;
  std::vector<uint8_t> file = snapshot_bytes(1, 1, 100, snap_threads(2));
  const std::vector<uint8_t> second = snapshot_bytes(2, 2, 200, snap_threads(3));
  file.insert(file.end(), second.begin(), second.end());
  write_bytes(dir.file("dumps"), file);
  std::vector<std::string> warnings;
  int calls = 0;
  auto st = read_dumps(dir.file("dumps"), warnings, [&](RawSnapshot&) -> Status {
    ++calls;
    return Error("disk full");
  });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message(), "disk full");
  EXPECT_EQ(calls, 1);
}

// A damaged `bytes` field (smaller than the header, or huge) must not make
// read_dumps trust a node count it cannot hold: no wild allocation, no
// exception, a warning.
TEST(format_read_dumps, DamagedSizeFieldDoesNotAllocateWildly) {
  test::TempDir dir;
  for (const uint64_t bytes : {uint64_t{8}, uint64_t{1} << 62}) {
    SCOPED_TRACE("bytes = " + std::to_string(bytes));
    RawDumpHeader h{};
    std::memcpy(h.magic, kRawDumpMagic, sizeof h.magic);
    h.seq = 1;
    h.reason = 1;
    h.threads = 1;
    h.bytes = bytes;
    RawDumpThread dt{};
    dt.tid = 1;
    dt.nodes = uint64_t{1} << 40;  // 80 TiB of nodes, and none follow
    std::vector<uint8_t> file;
    append(file, h);
    append(file, dt);
    append(file, root());
    write_bytes(dir.file("dumps"), file);
    std::vector<std::string> warnings;
    Collected c;
    Status st = ok_status();
    try {
      st = collect(dir.file("dumps"), warnings, c);
    } catch (const std::exception& e) {
      FAIL() << "read_dumps threw " << e.what();
    }
    EXPECT_TRUE(c.headers.empty());
    EXPECT_TRUE(!st.ok() || !warnings.empty());
  }
}

// ---- a profile-mode session, finalized ------------------------------------------
//
//   100.0  pid 100, base tick 1000 (trace offset 0), profile mode, filtered;
//          exited 0 at 600. t100: .ev (header only) and .prof (clean exit at
//          590, no open frame), two snapshots in `dumps` (at 200 and 400);
//          marks at 150 (thread 100) and 450 (tid 999: no thread file).
//   200.0  pid 200, forked by 100.0, base tick 3000 (offset 2000), profile
//          mode; killed by SIGSEGV at 700. t200: .ev and .prof with two frames
//          still open; t201: .prof only (no event file); one snapshot at 50;
//          a mark at 60 on thread 201.

void build_profile_session(const std::string& dir) {
  ASSERT_EQ(::mkdir((dir + "/100.0").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir + "/200.0").c_str(), 0700), 0);
  const std::string cmd("app\0-p\0", 7);

  MetaFile m0;
  m0.add(RawMetaType::kProcessStart, start(100, 1, 1000, ~0u, 0, "/bin/app", cmd), "/bin/app", cmd)
      .add(RawMetaType::kMode, mode(TraceMode::kProfile, kRawModeFiltered))
      .mark(150, 100, 1, "phase one")
      .mark(450, 999, 2, "no thread")
      .add(RawMetaType::kProcessExit, RawProcessExit{600, static_cast<uint32_t>(ExitHow::kExited), 0, 0, 0});
  write_bytes(dir + "/100.0/meta", m0.bytes());
  write_bytes(dir + "/100.0/t100.ev", thread_file(100, 100, "main", 1, 590));
  ProfFile p100(100, 100);
  p100.header().start_tick = 1;
  p100.header().end_tick = 590;
  p100.node(pnode(0x401000, 0, {1, 580, 100, 580, 580, 5, 580}))
      .node(pnode(0x401100, 1, {3, 480, 480, 100, 200, 20, 100}))
      .node(pnode(0x401200, 1, {0, 0, 0, kNone, 0, kNone, 0, kProfNodeExcluded}));
  write_bytes(dir + "/100.0/t100.prof", p100.bytes());
  SnapThread s1;
  s1.tid = 100;
  s1.start_tick = 1;  // as the .prof header says: names the tree's thread
  s1.nodes = {root(), pnode(0x401000, 0, {0, 195, 95, kNone, 0, kNone, 0, kProfNodeOpen}),
              pnode(0x401100, 1, {1, 100, 100, 100, 100, 20, 100})};
  SnapThread s2 = s1;
  s2.nodes[1].total = 395;
  s2.nodes[2] = pnode(0x401100, 1, {2, 300, 300, 100, 200, 20, 100});
  std::vector<uint8_t> dumps = snapshot_bytes(1, 1, 200, {s1});
  const std::vector<uint8_t> d2 = snapshot_bytes(2, 2, 400, {s2});
  dumps.insert(dumps.end(), d2.begin(), d2.end());
  write_bytes(dir + "/100.0/dumps", dumps);

  MetaFile m1;
  m1.add(RawMetaType::kProcessStart, start(200, 100, 3000, 0, kRawProcessForked, "/bin/app", cmd), "/bin/app", cmd)
      .add(RawMetaType::kMode, mode(TraceMode::kProfile, 0))
      .mark(60, 201, 1, "child mark")
      .add(RawMetaType::kProcessExit, RawProcessExit{700, static_cast<uint32_t>(ExitHow::kSignaled), 0, 11, 0});
  write_bytes(dir + "/200.0/meta", m1.bytes());
  write_bytes(dir + "/200.0/t200.ev", thread_file(200, 200, "child", 2, 0));
  ProfFile p200(200, 200);
  p200.header().start_tick = 2;
  p200.node(pnode(0x401000, 0))
      .node(pnode(0x401300, 1, {5, 50, 50, 10, 10, 40, 10}))
      .open(pframe(1, 10, 50, 0, 0x401000))
      .open(pframe(2, 100, 0, 0, 0x401300));
  write_bytes(dir + "/200.0/t200.prof", p200.bytes());
  ProfFile p201(200, 201);
  p201.header().start_tick = 30;
  p201.header().end_tick = 300;
  p201.node(pnode(0x401400, 0, {7, 70, 70, 10, 10, 35, 10}));
  write_bytes(dir + "/200.0/t201.prof", p201.bytes());
  SnapThread c1;
  c1.tid = 200;
  c1.nodes = {root(), pnode(0x401000, 0, {0, 40, 30, kNone, 0, kNone, 0, kProfNodeOpen}),
              pnode(0x401300, 1, {1, 10, 10, 10, 10, 40, 10})};
  write_bytes(dir + "/200.0/dumps", snapshot_bytes(1, 3, 50, {c1}));
}

class FinalizedProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    build_profile_session(dir_.path());
    auto sum = finalize_session(dir_.path(), dir_.file("out.cstrace"), FinalizeOptions{});
    ASSERT_TRUE(sum.ok()) << sum.error().message();
    summary_ = *sum;
    auto r = TraceReader::open(dir_.file("out.cstrace"));
    ASSERT_TRUE(r.ok()) << r.error().message();
    reader_ = std::move(*r);
  }
  std::vector<ProfileNodeRecord> tree(uint32_t dump, uint32_t thread) {
    auto t = reader_->read_tree(dump, thread);
    EXPECT_TRUE(t.ok()) << t.error().message();
    return t.ok() ? *t : std::vector<ProfileNodeRecord>{};
  }
  test::TempDir dir_;
  FinalizeSummary summary_;
  std::unique_ptr<TraceReader> reader_;
};

TEST_F(FinalizedProfile, InfoAndThreads) {
  EXPECT_TRUE(reader_->complete());
  EXPECT_TRUE(reader_->problems().empty());
  EXPECT_TRUE(reader_->is_profile());
  const InfoRecord& info = reader_->info().record;
  EXPECT_EQ(info.flags & kInfoProfile, kInfoProfile);
  EXPECT_EQ(info.flags & kInfoFiltered, kInfoFiltered);
  EXPECT_EQ(info.flags & kInfoNotInstrumented, 0u);
  // Calls: the final states' (1 + 3) + (0 + 5) + 7.
  EXPECT_EQ(summary_.calls, 16u);
  EXPECT_EQ(summary_.events, 0u);

  const auto& p = reader_->processes();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].record.end_tick, 600u);
  EXPECT_EQ(p[1].record.start_tick, 2000u);
  EXPECT_EQ(p[1].record.end_tick, 2700u);
  EXPECT_EQ(p[1].record.parent_index, 0);

  // The event files first, then a record for the tree without one.
  const auto& t = reader_->threads();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].record.tid, 100u);
  EXPECT_EQ(t[0].record.process_index, 0u);
  EXPECT_EQ(t[0].record.calls, 4u);
  EXPECT_EQ(t[0].name, "main");
  EXPECT_EQ(t[1].record.tid, 200u);
  EXPECT_EQ(t[1].record.process_index, 1u);
  EXPECT_EQ(t[1].record.calls, 5u);
  EXPECT_EQ(t[2].record.tid, 201u);
  EXPECT_EQ(t[2].record.process_index, 1u);
  EXPECT_EQ(t[2].record.calls, 7u);
  EXPECT_EQ(t[2].record.events, 0u);
}

// In profile mode a thread writes no events: its event file holds only the
// header. A thread still running when its process ended (the main thread
// calling exit(), any thread at a crash) has no end tick there; its tree was
// live until the process ended, and the final state counts its open calls
// until then. Its record must not end before it starts (`info` would show a
// duration of 0 ns for every such thread).
TEST_F(FinalizedProfile, ThreadsWithoutEventsEndWithTheirProcess) {
  const auto& t = reader_->threads();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].record.start_tick, 1u);
  EXPECT_EQ(t[0].record.end_tick, 590u);  // exited cleanly: the header says when
  EXPECT_EQ(t[1].record.start_tick, 2002u);
  EXPECT_EQ(t[1].record.end_tick, 2700u) << "a thread alive when its process died ends with the process";
  EXPECT_GE(t[1].record.end_tick, t[1].record.start_tick);
}

TEST_F(FinalizedProfile, DumpsInOrderFinalStateLast) {
  const auto& d = reader_->dumps();
  ASSERT_EQ(d.size(), 5u);
  struct Want {
    uint32_t process, seq, reason, threads;
    uint64_t tick;
  };
  const Want want[] = {
      {0, 1, 1, 1, 200},   {0, 2, 2, 1, 400},
      {0, 3, 4, 1, 600},   // final state: the process's end
      {1, 1, 3, 1, 2050},  // ticks moved by the process's offset
      {1, 2, 4, 2, 2700},
  };
  for (size_t i = 0; i < std::size(want); ++i) {
    SCOPED_TRACE("dump " + std::to_string(i));
    EXPECT_EQ(d[i].process_index, want[i].process);
    EXPECT_EQ(d[i].seq, want[i].seq);
    EXPECT_EQ(d[i].reason, want[i].reason);
    EXPECT_EQ(d[i].threads, want[i].threads);
    EXPECT_EQ(d[i].tick, want[i].tick);
  }
  EXPECT_EQ(reader_->tree_threads(0), std::vector<uint32_t>{0});
  EXPECT_EQ(reader_->tree_threads(2), std::vector<uint32_t>{0});
  EXPECT_EQ(reader_->tree_threads(3), std::vector<uint32_t>{1});
  EXPECT_EQ(reader_->tree_threads(4), (std::vector<uint32_t>{1, 2}));
  EXPECT_TRUE(reader_->tree_threads(5).empty());
}

TEST_F(FinalizedProfile, TreesOfSnapshots) {
  // Snapshot 1 of process 100 (offset 0): as written, node for node.
  auto t = tree(0, 0);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].fn, 0u);
  EXPECT_EQ(t[0].parent, 0u);
  EXPECT_EQ(t[1].fn, 0x401000u);
  EXPECT_EQ(t[1].parent, 0u);
  EXPECT_EQ(t[1].calls, 0u);
  EXPECT_EQ(t[1].total, 195u);
  EXPECT_EQ(t[1].self, 95u);
  EXPECT_EQ(t[1].flags, kProfNodeOpen);
  EXPECT_EQ(t[1].first_tick, kNone);
  EXPECT_EQ(t[2].fn, 0x401100u);
  EXPECT_EQ(t[2].parent, 1u);
  EXPECT_EQ(t[2].calls, 1u);
  EXPECT_EQ(t[2].first_tick, 20u);
  EXPECT_EQ(tree(1, 0)[2].calls, 2u);
  // A thread not in a snapshot: no tree, no error.
  EXPECT_TRUE(tree(0, 1).empty());
  EXPECT_TRUE(tree(0, 2).empty());

  // Process 200's snapshot: first_tick moved to trace ticks (+2000), durations not.
  t = tree(3, 1);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[1].first_tick, kNone);
  EXPECT_EQ(t[2].fn, 0x401300u);
  EXPECT_EQ(t[2].first_tick, 2040u);
  EXPECT_EQ(t[2].first, 10u);
  EXPECT_EQ(t[2].min, 10u);
  EXPECT_EQ(t[2].total, 10u);
}

TEST_F(FinalizedProfile, FinalStates) {
  // Process 100 exited cleanly: its tree as the .prof holds it; the excluded
  // node is kept with its flag.
  auto t = tree(2, 0);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[1].calls, 1u);
  EXPECT_EQ(t[1].total, 580u);
  EXPECT_EQ(t[1].first_tick, 5u);
  EXPECT_EQ(t[1].flags, 0u);
  EXPECT_EQ(t[2].calls, 3u);
  EXPECT_EQ(t[3].flags, kProfNodeExcluded);

  // Process 200 died at raw tick 700 with main [10..] -> loop [100..] open:
  // loop gets 600 more (total and self), main 690 with 50 + 600 in callees.
  t = tree(4, 1);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[1].calls, 0u);
  EXPECT_EQ(t[1].total, 690u);
  EXPECT_EQ(t[1].self, 40u);
  EXPECT_EQ(t[1].flags, kProfNodeOpen);
  EXPECT_EQ(t[2].calls, 5u);
  EXPECT_EQ(t[2].total, 650u);
  EXPECT_EQ(t[2].self, 650u);
  EXPECT_EQ(t[2].first_tick, 2040u);
  EXPECT_EQ(t[2].flags, kProfNodeOpen);

  t = tree(4, 2);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1].fn, 0x401400u);
  EXPECT_EQ(t[1].calls, 7u);
  EXPECT_EQ(t[1].first_tick, 2035u);
}

TEST_F(FinalizedProfile, Marks) {
  const auto& m = reader_->marks();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].record.tick, 150u);
  EXPECT_EQ(m[0].text, "phase one");
  EXPECT_EQ(m[0].record.thread_index, 0u);
  EXPECT_EQ(m[0].record.process_index, 0u);
  EXPECT_EQ(m[0].record.id, 1u);
  EXPECT_EQ(m[1].record.tick, 450u);
  EXPECT_EQ(m[1].text, "no thread");
  EXPECT_EQ(m[1].record.thread_index, ~0u);  // tid 999 has no thread file
  EXPECT_EQ(m[1].record.id, 2u);
  EXPECT_EQ(m[2].record.tick, 2060u);
  EXPECT_EQ(m[2].text, "child mark");
  EXPECT_EQ(m[2].record.thread_index, 2u);  // the thread known only by its tree
  EXPECT_EQ(m[2].record.process_index, 1u);
}

TEST(format_finalize_profile, RecordModeTraceIsNotProfile) {
  test::TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("100.0").c_str(), 0700), 0);
  MetaFile m;
  m.add(RawMetaType::kProcessStart, start(100, 1, 1000, ~0u, 0, "/bin/app", "app"), "/bin/app", "app")
      .add(RawMetaType::kMode, mode(TraceMode::kRecord, kRawModeFiltered))
      .mark(5, 100, 1, "m");
  write_bytes(dir.file("100.0/meta"), m.bytes());
  write_bytes(dir.file("100.0/t100.ev"), thread_file(100, 100, "main", 1, 9));
  auto sum = finalize_session(dir.path(), dir.file("out.cstrace"), FinalizeOptions{});
  ASSERT_TRUE(sum.ok()) << sum.error().message();
  auto r = TraceReader::open(dir.file("out.cstrace"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_FALSE((*r)->is_profile());
  EXPECT_TRUE((*r)->dumps().empty());
  EXPECT_EQ((*r)->info().record.flags & kInfoFiltered, kInfoFiltered);
  ASSERT_EQ((*r)->marks().size(), 1u);
  EXPECT_EQ((*r)->marks()[0].record.thread_index, 0u);
}

// A tid used twice in one process (the first thread exited, the kernel gave
// its tid to a later one): the runtime names the second files t<tid>.1.ev and
// t<tid>.1.prof, and a snapshot holds both trees under the same tid (told
// apart by their start ticks). Each tree must stay with its own thread
// record, in snapshots and in the final state: read_tree finds one tree per
// (snapshot, thread).
TEST(format_finalize_profile, ReusedTidKeepsBothTrees) {
  test::TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("100.0").c_str(), 0700), 0);
  MetaFile m;
  m.add(RawMetaType::kProcessStart, start(100, 1, 1000, ~0u, 0, "/bin/app", "app"), "/bin/app", "app")
      .add(RawMetaType::kMode, mode(TraceMode::kProfile, 0))
      .add(RawMetaType::kProcessExit, RawProcessExit{900, static_cast<uint32_t>(ExitHow::kExited), 0, 0, 0});
  write_bytes(dir.file("100.0/meta"), m.bytes());
  write_bytes(dir.file("100.0/t100.ev"), thread_file(100, 100, "main", 1, 800));
  write_bytes(dir.file("100.0/t101.ev"), thread_file(100, 101, "first", 10, 20));
  write_bytes(dir.file("100.0/t101.1.ev"), thread_file(100, 101, "second", 30, 40));
  ProfFile main(100, 100), first(100, 101), second(100, 101);
  main.header().start_tick = 1;
  main.header().end_tick = 800;
  main.node(pnode(0x401000, 0, {1, 700, 700, 700, 700, 5, 700}));
  first.header().start_tick = 10;
  first.header().end_tick = 20;
  first.node(pnode(0x401100, 0, {3, 9, 9, 3, 3, 11, 3}));
  second.header().start_tick = 30;
  second.header().end_tick = 40;
  second.node(pnode(0x401200, 0, {4, 8, 8, 2, 2, 31, 2}));
  write_bytes(dir.file("100.0/t100.prof"), main.bytes());
  write_bytes(dir.file("100.0/t101.prof"), first.bytes());
  write_bytes(dir.file("100.0/t101.1.prof"), second.bytes());
  // A snapshot taken after both ran: trees are named by tid and start tick.
  SnapThread s0, s1, s2;
  s0.tid = 100;
  s0.start_tick = 1;
  s0.nodes = {root(), pnode(0x401000, 0, {0, 40, 40, kNone, 0, kNone, 0, kProfNodeOpen})};
  s1.tid = 101;
  s1.start_tick = 10;
  s1.nodes = first.nodes();
  s2.tid = 101;
  s2.start_tick = 30;
  s2.nodes = second.nodes();
  write_bytes(dir.file("100.0/dumps"), snapshot_bytes(1, 1, 41, {s0, s1, s2}));

  auto sum = finalize_session(dir.path(), dir.file("out.cstrace"), FinalizeOptions{});
  ASSERT_TRUE(sum.ok()) << sum.error().message();
  EXPECT_EQ(sum->calls, 8u);
  auto r = TraceReader::open(dir.file("out.cstrace"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  TraceReader& t = **r;
  ASSERT_EQ(t.threads().size(), 3u);
  ASSERT_EQ(t.dumps().size(), 2u);
  EXPECT_EQ(t.dumps()[1].threads, 3u);
  // Each tree under its own thread record, in the snapshot and the final state.
  for (uint32_t d = 0; d < 2; ++d) {
    SCOPED_TRACE("dump " + std::to_string(d));
    EXPECT_EQ(t.tree_threads(d).size(), 3u);
    uint64_t calls = 0;
    for (uint32_t ti : t.tree_threads(d)) {
      auto nodes = t.read_tree(d, ti);
      ASSERT_TRUE(nodes.ok()) << nodes.error().message();
      ASSERT_EQ(nodes->size(), 2u);
      const std::string& name = t.threads()[ti].name;
      const uint64_t want = name == "main" ? 0x401000 : name == "first" ? 0x401100 : 0x401200;
      EXPECT_EQ((*nodes)[1].fn, want) << "thread " << ti << " " << name;
      calls += (*nodes)[1].calls;
    }
    EXPECT_EQ(calls, d == 0 ? 7u : 8u);
  }
}

// ---- damaged kProfile blocks ---------------------------------------------------

class DamagedProfile : public FinalizedProfile {
 protected:
  void SetUp() override {
    FinalizedProfile::SetUp();
    if (HasFatalFailure()) return;
    good_ = test::read_all(dir_.file("out.cstrace"));
    for (const BlockRef& b : reader_->blocks())
      if (b.header.type == static_cast<uint16_t>(BlockType::kProfile) && b.header.aux1 == 4 && b.header.aux0 == 1)
        target_ = b;
    ASSERT_EQ(target_.header.type, static_cast<uint16_t>(BlockType::kProfile));
  }
  Result<std::unique_ptr<TraceReader>> open_bytes(const std::vector<uint8_t>& bytes) {
    const std::string p = dir_.file("bad.cstrace");
    test::write_all(p, bytes);
    return TraceReader::open(p);
  }
  static bool has_problem(const TraceReader& r, const std::string& text) {
    for (const auto& p : r.problems())
      if (p.find(text) != std::string::npos) return true;
    return false;
  }
  std::string where() const {
    return "block " + std::to_string(target_.number) + " at offset " + std::to_string(target_.offset);
  }
  // The others are intact: the snapshot table and the other trees.
  void expect_rest_intact(TraceReader& r) {
    EXPECT_EQ(r.dumps().size(), 5u);
    auto a = r.read_tree(4, 2);
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_EQ(a->size(), 2u);
    auto b = r.read_tree(0, 0);
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_EQ(b->size(), 3u);
  }
  std::vector<uint8_t> good_;
  BlockRef target_{};
};

TEST_F(DamagedProfile, FlippedPayloadBytes) {
  const uint64_t payload = target_.offset + sizeof(BlockHeader);
  const uint32_t n = target_.header.stored_size;
  for (const uint64_t at : {payload, payload + n / 2, payload + n - 1}) {
    SCOPED_TRACE("byte flipped at " + std::to_string(at));
    std::vector<uint8_t> bad = good_;
    bad[at] ^= 0x5a;
    auto r = open_bytes(bad);
    ASSERT_TRUE(r.ok()) << r.error().message();
    TraceReader& t = **r;
    EXPECT_TRUE(t.is_profile());
    auto nodes = t.read_tree(4, 1);
    ASSERT_FALSE(nodes.ok()) << "a damaged tree was read as good";
    EXPECT_NE(nodes.error().message().find("block " + std::to_string(target_.number)), std::string::npos)
        << nodes.error().message();
    EXPECT_TRUE(has_problem(t, where())) << (t.problems().empty() ? "no problem listed" : t.problems()[0]);
    expect_rest_intact(t);
  }
}

TEST_F(DamagedProfile, FlippedHeaderByteSkipsTheBlock) {
  std::vector<uint8_t> bad = good_;
  bad[target_.offset + offsetof(BlockHeader, count)] ^= 0x01;
  auto r = open_bytes(bad);
  ASSERT_TRUE(r.ok()) << r.error().message();
  TraceReader& t = **r;
  EXPECT_TRUE(has_problem(t, where() + ": damaged block header")) << (t.problems().empty() ? "" : t.problems()[0]);
  auto nodes = t.read_tree(4, 1);  // the block is gone: nothing to read, and problems() says why
  ASSERT_TRUE(nodes.ok()) << nodes.error().message();
  EXPECT_TRUE(nodes->empty());
  expect_rest_intact(t);
}

// The same block stored uncompressed (no checksum to catch damage) with
// contents that do not hold together: read_tree refuses them.
TEST_F(DamagedProfile, BadContentsOfAnUncompressedBlock) {
  auto good_tree = reader_->read_tree(4, 1);
  ASSERT_TRUE(good_tree.ok());
  auto rewrite = [&](const std::vector<uint8_t>& payload, uint32_t count) {
    std::vector<uint8_t> out(good_.begin(), good_.begin() + static_cast<std::ptrdiff_t>(target_.offset));
    BlockHeader h = target_.header;
    h.flags = 0;
    h.stored_size = h.raw_size = static_cast<uint32_t>(payload.size());
    h.count = count;
    h.check = header_check(&h, offsetof(BlockHeader, check));
    append(out, h);
    out.insert(out.end(), payload.begin(), payload.end());
    const uint64_t end = target_.offset + sizeof(BlockHeader) + target_.header.stored_size;
    out.insert(out.end(), good_.begin() + static_cast<std::ptrdiff_t>(end), good_.end());
    return out;
  };
  auto payload_of = [](const std::vector<ProfileNodeRecord>& nodes) {
    std::vector<uint8_t> p(nodes.size() * sizeof(ProfileNodeRecord));
    std::memcpy(p.data(), nodes.data(), p.size());
    return p;
  };
  {  // Intact contents, uncompressed: read as they are.
    auto r = open_bytes(rewrite(payload_of(*good_tree), 3));
    ASSERT_TRUE(r.ok()) << r.error().message();
    auto nodes = (*r)->read_tree(4, 1);
    ASSERT_TRUE(nodes.ok()) << nodes.error().message();
    EXPECT_EQ(nodes->size(), 3u);
    EXPECT_TRUE((*r)->problems().empty());
  }
  {  // A node whose parent comes after it.
    auto nodes = *good_tree;
    nodes[1].parent = 2;
    auto r = open_bytes(rewrite(payload_of(nodes), 3));
    ASSERT_TRUE(r.ok()) << r.error().message();
    auto got = (*r)->read_tree(4, 1);
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.error().message().find("block " + std::to_string(target_.number)), std::string::npos)
        << got.error().message();
    EXPECT_NE(got.error().message().find("parent"), std::string::npos) << got.error().message();
    expect_rest_intact(**r);
  }
  {  // A count that does not match the payload.
    auto r = open_bytes(rewrite(payload_of(*good_tree), 1000));
    ASSERT_TRUE(r.ok()) << r.error().message();
    auto got = (*r)->read_tree(4, 1);
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.error().message().find("block " + std::to_string(target_.number)), std::string::npos)
        << got.error().message();
  }
  {  // A payload that is not a whole number of records.
    std::vector<uint8_t> p = payload_of(*good_tree);
    p.resize(p.size() - 5);
    auto r = open_bytes(rewrite(p, 3));
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_FALSE((*r)->read_tree(4, 1).ok());
  }
}

// A kProfile block naming a snapshot the table does not list is reported and
// never read.
TEST_F(DamagedProfile, TreeOfAnUnknownSnapshot) {
  std::vector<uint8_t> bad = good_;
  BlockHeader h = target_.header;
  h.aux1 = 77;
  h.check = header_check(&h, offsetof(BlockHeader, check));
  std::memcpy(bad.data() + target_.offset, &h, sizeof h);
  auto r = open_bytes(bad);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(has_problem(**r, where() + ": a call tree of snapshot 77"));
  EXPECT_TRUE((*r)->tree_threads(77).empty());
  auto nodes = (*r)->read_tree(77, 1);
  ASSERT_TRUE(nodes.ok());
  EXPECT_TRUE(nodes->empty());
}

}  // namespace
}  // namespace callscope::format
