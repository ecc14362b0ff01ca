// Profile mode in the format library, the readers: the open-call arithmetic
// shared with the runtime (add_open_time), and t<tid>.prof and `dumps` files
// written by hand, intact, cut short and damaged. Meant to run under ASan/UBSan.
#include <gtest/gtest.h>

#include <cstring>

#include "format/profile_math.h"
#include "format/raw_session.h"
#include "profile_test_util.h"

namespace callscope::format {
namespace {

using namespace profile_test;

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
  // An open call counts as a call that lasted its time so far (as a
  // truncated frame of a recording does): in calls, min, max and first.
  EXPECT_EQ(nodes[1].calls, 3u);
  EXPECT_EQ(nodes[1].min, 100u);
  EXPECT_EQ(nodes[1].max, 600u);
  EXPECT_EQ(nodes[1].first_tick, 1u);  // its first call began before
  EXPECT_EQ(nodes[1].first, 400u);
  EXPECT_EQ(nodes[2].calls, 1u);
  EXPECT_EQ(nodes[2].min, 50u);
  EXPECT_EQ(nodes[2].max, 50u);
  EXPECT_EQ(nodes[2].first_tick, 150u);
  EXPECT_EQ(nodes[2].first, 50u);
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


}  // namespace
}  // namespace callscope::format
