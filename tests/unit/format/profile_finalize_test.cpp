// Profile mode in the format library, finalization: a whole profile-mode raw
// session turned into a trace (snapshots, final state, marks, a reused tid),
// and damaged kProfile blocks. Meant to run under ASan/UBSan.
#include <gtest/gtest.h>

#include <cstring>

#include "format/finalize.h"
#include "format/trace_reader.h"
#include "profile_test_util.h"

namespace callscope::format {
namespace {

using namespace profile_test;

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
  // The session's numbering: process 100 took snapshots 1 and 2, this one 3.
  write_bytes(dir + "/200.0/dumps", snapshot_bytes(3, 3, 50, {c1}));
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
  // Calls: the final states' (1 + 3) + (1 + 6) + 7; process 200 died with
  // a call open in main and in loop: each counts.
  EXPECT_EQ(summary_.calls, 18u);
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
  EXPECT_EQ(t[1].record.calls, 7u);
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
  // Numbers: the snapshots keep the session's, the final states come after
  // them all (what `report --dump K` takes).
  const Want want[] = {
      {0, 1, 1, 1, 200},   {0, 2, 2, 1, 400},
      {0, 4, 4, 1, 600},   // final state: the process's end
      {1, 3, 3, 1, 2050},  // ticks moved by the process's offset
      {1, 5, 4, 2, 2700},
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
  // each open call counts, with its time so far: loop gets a sixth call of
  // 600 (total and self), main its call of 690 with 50 + 600 in callees.
  t = tree(4, 1);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[1].calls, 1u);
  EXPECT_EQ(t[1].total, 690u);
  EXPECT_EQ(t[1].self, 40u);
  EXPECT_EQ(t[1].min, 690u);
  EXPECT_EQ(t[1].first_tick, 2010u);
  EXPECT_EQ(t[1].flags, kProfNodeOpen);
  EXPECT_EQ(t[2].calls, 6u);
  EXPECT_EQ(t[2].total, 650u);
  EXPECT_EQ(t[2].self, 650u);
  EXPECT_EQ(t[2].max, 600u);
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
  Result<std::unique_ptr<TraceReader>> open_bytes(const std::vector<uint8_t>& bytes,
                                                  TraceReader::Damage damage = TraceReader::Damage::kRefuse) {
    const std::string p = dir_.file("bad.cstrace");
    test::write_all(p, bytes);
    return TraceReader::open(p, damage);
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
    // info's check of every block finds it too, without being asked for
    // the tree (it once said nothing about damaged call trees).
    auto listed = open_bytes(rewrite(payload_of(nodes), 3), TraceReader::Damage::kList);
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ((*listed)->verify_payloads(), 1u);
    EXPECT_TRUE(has_problem(**listed, where() + ": node 1 has parent 2, not an earlier node")) << (*listed)->problems().size();
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

// A kProfile block naming a snapshot the table does not list is refused;
// info lists it, and never reads the tree.
TEST_F(DamagedProfile, TreeOfAnUnknownSnapshot) {
  std::vector<uint8_t> bad = good_;
  BlockHeader h = target_.header;
  h.aux1 = 77;
  h.check = header_check(&h, offsetof(BlockHeader, check));
  std::memcpy(bad.data() + target_.offset, &h, sizeof h);
  auto refused = open_bytes(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find(where() + ": a call tree of snapshot 77, but the trace holds"),
            std::string::npos)
      << refused.error().message();
  auto r = open_bytes(bad, TraceReader::Damage::kList);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(has_problem(**r, where() + ": a call tree of snapshot 77"));
  EXPECT_TRUE((*r)->tree_threads(77).empty());
  auto nodes = (*r)->read_tree(77, 1);
  ASSERT_TRUE(nodes.ok());
  EXPECT_TRUE(nodes->empty());
}


}  // namespace
}  // namespace callscope::format
