// Profile-mode analyses: snapshot nodes into call trees (add_snapshot), the
// snapshots a report shows by default (final_dumps), trees read back from a
// trace (build_profile_from_dumps), and `report --diff` (flat_ns, diff_flat).
// Traces are written in memory with TraceWriter, the blocks finalize writes.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "analysis/diff.h"
#include "analysis/report_model.h"
#include "events.h"
#include "format/trace_writer.h"

namespace callscope::analysis {
namespace {

namespace fmt = callscope::format;
constexpr uint64_t kNone = ~uint64_t{0};

struct NodeStats {
  uint64_t calls = 0, total = 0, self = 0, min = kNone, max = 0, first_tick = kNone, first = 0;
  uint32_t flags = 0;
};

fmt::ProfileNodeRecord pn(uint64_t fn, uint32_t parent, const NodeStats& s = {}) {
  fmt::ProfileNodeRecord r{};
  r.fn = fn;
  r.parent = parent;
  r.flags = s.flags;
  r.calls = s.calls;
  r.total = s.total;
  r.self = s.self;
  r.min = s.min;
  r.max = s.max;
  r.first_tick = s.first_tick;
  r.first = s.first;
  return r;
}
fmt::ProfileNodeRecord root() { return pn(0, 0); }

// The node with `key` under `parent`, or -1 (without creating it, as
// CallTree::child would).
int find(const CallTree& t, uint32_t parent, uint64_t key) {
  for (uint32_t i = 1; i < t.size(); ++i)
    if (t.node(i).parent == parent && t.node(i).key == key) return static_cast<int>(i);
  return -1;
}
size_t children_of(const CallTree& t, uint32_t parent) {
  size_t n = 0;
  for (uint32_t i = 1; i < t.size(); ++i) n += t.node(i).parent == parent;
  return n;
}

// ---- add_snapshot -------------------------------------------------------------

TEST(analysis_add_snapshot, DropsExcludedAndEmptySubtreesKeepsPathsToCounts) {
  const std::vector<fmt::ProfileNodeRecord> nodes = {
      root(),
      pn(0xa, 0, {1, 100, 40, 100, 100, 5, 100}),                          // 1 A
      pn(0xb, 1, {3, 30, 30, 10, 10, 6, 10, fmt::kProfNodeExcluded}),      // 2 excluded under A
      pn(0xc, 1),                                                          // 3 nothing...
      pn(0xd, 3),                                                          // 4 ...and nothing below
      pn(0xe, 0),                                                          // 5 no call of its own...
      pn(0xf, 5, {2, 60, 60, 20, 40, 50, 20}),                             // 6 ...but a counted callee
      pn(0x10, 1, {1, 25, 25, 25, 25, 30, 25, fmt::kProfNodeOpen}),        // 7 open: a call in progress
  };
  CallTree t;
  EXPECT_EQ(add_snapshot(t, nodes), 4u);  // A 1 + F 2 + the open 1; the excluded node's 3 are not calls of the tree
  EXPECT_EQ(t.size(), 5u);  // root, A, E, F, the open node
  const int a = find(t, kRootNode, 0xa), e = find(t, kRootNode, 0xe);
  ASSERT_GE(a, 0);
  ASSERT_GE(e, 0);
  EXPECT_EQ(children_of(t, kRootNode), 2u);
  EXPECT_EQ(find(t, a, 0xb), -1) << "excluded node kept";
  EXPECT_EQ(find(t, a, 0xc), -1) << "empty subtree kept";
  const int f = find(t, e, 0xf), open = find(t, a, 0x10);
  ASSERT_GE(f, 0);
  ASSERT_GE(open, 0);

  const Stats& sa = t.node(a).stats;
  EXPECT_EQ(sa.calls, 1u);
  EXPECT_EQ(sa.total, 100u);
  EXPECT_EQ(sa.self, 40u);
  EXPECT_EQ(sa.min, 100u);
  EXPECT_EQ(sa.max, 100u);
  EXPECT_EQ(sa.first_tick, 5u);
  EXPECT_EQ(sa.first, 100u);
  EXPECT_EQ(t.node(a).depth, 1u);

  const Stats& se = t.node(e).stats;  // kept as a path, with nothing of its own
  EXPECT_EQ(se.calls, 0u);
  EXPECT_EQ(se.total, 0u);
  EXPECT_EQ(se.min, kNoTick);
  EXPECT_EQ(se.first_tick, kNoTick);

  const Stats& sf = t.node(f).stats;
  EXPECT_EQ(sf.calls, 2u);
  EXPECT_EQ(sf.min, 20u);
  EXPECT_EQ(sf.max, 40u);
  EXPECT_EQ(t.node(f).depth, 2u);

  const Stats& so = t.node(open).stats;
  EXPECT_EQ(so.calls, 1u);
  EXPECT_EQ(so.open, 1u);
  EXPECT_EQ(so.total, 25u);
  EXPECT_EQ(so.self, 25u);
  EXPECT_EQ(so.min, 25u);
  EXPECT_EQ(so.first_tick, 30u);
  EXPECT_EQ(sa.open, 0u);
}

// Traces before 1.2 held an open call's time in its node, not the call:
// reading one adds it.
TEST(analysis_add_snapshot, OpenCallsOfTracesBeforeOneTwo) {
  const std::vector<fmt::ProfileNodeRecord> nodes = {
      root(),
      pn(0xa, 0, {0, 90, 30, kNone, 0, kNone, 0, fmt::kProfNodeOpen}),        // only the open call
      pn(0xb, 1, {3, 60, 60, 10, 30, 5, 20, fmt::kProfNodeOpen}),             // 3 done and one open
  };
  CallTree t;
  EXPECT_EQ(add_snapshot(t, nodes, false), 5u);
  const Stats& a = t.node(static_cast<uint32_t>(find(t, kRootNode, 0xa))).stats;
  EXPECT_EQ(a.calls, 1u);
  EXPECT_EQ(a.open, 1u);
  EXPECT_EQ(a.min, 90u);
  EXPECT_EQ(a.max, 90u);
  EXPECT_EQ(a.first, 90u);
  const Stats& b = t.node(static_cast<uint32_t>(find(t, find(t, kRootNode, 0xa), 0xb))).stats;
  EXPECT_EQ(b.calls, 4u);
  EXPECT_EQ(b.open, 1u);
  EXPECT_EQ(b.min, 10u);  // of the completed calls: the open one's own time is not known
}

TEST(analysis_add_snapshot, RootOnlyAndEmpty) {
  CallTree t;
  EXPECT_EQ(add_snapshot(t, {}), 0u);
  EXPECT_EQ(add_snapshot(t, {root()}), 0u);
  EXPECT_EQ(add_snapshot(t, {root(), pn(0xa, 0), pn(0xb, 1)}), 0u);
  EXPECT_EQ(t.size(), 1u);
}

TEST(analysis_add_snapshot, MergesTwoSnapshotsIntoOneTree) {
  // Two threads' (or processes') snapshots with a shared path main -> work.
  const std::vector<fmt::ProfileNodeRecord> s1 = {
      root(), pn(0xa, 0, {1, 100, 20, 100, 100, 10, 100}), pn(0xb, 1, {4, 80, 80, 10, 30, 20, 10})};
  const std::vector<fmt::ProfileNodeRecord> s2 = {
      root(), pn(0xa, 0, {2, 300, 50, 120, 180, 3, 120}), pn(0xc, 1, {1, 50, 50, 50, 50, 4, 50}),
      pn(0xb, 1, {1, 200, 200, 200, 200, 400, 200})};
  CallTree t;
  EXPECT_EQ(add_snapshot(t, s1), 5u);
  EXPECT_EQ(add_snapshot(t, s2), 4u);
  EXPECT_EQ(t.size(), 4u);  // root, main, work, other
  const int a = find(t, kRootNode, 0xa);
  ASSERT_GE(a, 0);
  const int b = find(t, a, 0xb), c = find(t, a, 0xc);
  ASSERT_GE(b, 0);
  ASSERT_GE(c, 0);
  const Stats& sa = t.node(a).stats;
  EXPECT_EQ(sa.calls, 3u);
  EXPECT_EQ(sa.total, 400u);
  EXPECT_EQ(sa.self, 70u);
  EXPECT_EQ(sa.min, 100u);
  EXPECT_EQ(sa.max, 180u);
  EXPECT_EQ(sa.first_tick, 3u);  // the earlier first call, with its duration
  EXPECT_EQ(sa.first, 120u);
  const Stats& sb = t.node(b).stats;
  EXPECT_EQ(sb.calls, 5u);
  EXPECT_EQ(sb.total, 280u);
  EXPECT_EQ(sb.min, 10u);
  EXPECT_EQ(sb.max, 200u);
  EXPECT_EQ(sb.first_tick, 20u);
  EXPECT_EQ(sb.first, 10u);
  EXPECT_EQ(t.node(c).stats.calls, 1u);
}

// ---- traces with snapshots ------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "callscope-snap-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct Snap {
  uint32_t process, seq, reason;
  uint64_t tick;
  std::map<uint32_t, std::vector<fmt::ProfileNodeRecord>> trees;  // thread index -> nodes
};

// A profile-mode trace as finalize writes it: kProfile blocks, then Info
// (kInfoProfile), Processes, Threads (thread i in process thread_process[i]),
// Dumps, End. ticks_per_ns 2.
std::unique_ptr<fmt::TraceReader> write_trace(const std::string& path, uint32_t processes,
                                              const std::vector<uint32_t>& thread_process,
                                              const std::vector<Snap>& snaps) {
  fmt::FileHeader fh{};
  std::memcpy(fh.magic, fmt::kTraceMagic, sizeof fh.magic);
  fh.version_major = fmt::kTraceVersionMajor;
  fh.version_minor = fmt::kTraceVersionMinor;
  fh.header_size = sizeof fh;
  fh.clock = static_cast<uint32_t>(fmt::ClockKind::kTsc);
  fh.ticks_per_ns = 2.0;
  auto w = fmt::TraceWriter::create(path, fh, 1);
  EXPECT_TRUE(w.ok()) << w.error().message();
  if (!w.ok()) return nullptr;
  fmt::TraceWriter& writer = **w;
  std::vector<fmt::DumpRecord> dumps;
  for (uint32_t d = 0; d < snaps.size(); ++d) {
    for (const auto& [thread, nodes] : snaps[d].trees) {
      std::vector<uint8_t> raw(nodes.size() * sizeof(fmt::ProfileNodeRecord));
      if (!raw.empty()) std::memcpy(raw.data(), nodes.data(), raw.size());
      EXPECT_TRUE(writer.write_block(fmt::BlockType::kProfile, thread, static_cast<uint32_t>(nodes.size()),
                                     snaps[d].tick, raw, d)
                      .ok());
    }
    dumps.push_back({snaps[d].process, snaps[d].seq, snaps[d].reason, static_cast<uint32_t>(snaps[d].trees.size()),
                     snaps[d].tick});
  }
  fmt::InfoRecord info{};
  fmt::StringTable istr, pstr, tstr;
  info.flags = fmt::kInfoProfile;
  std::vector<fmt::ProcessRecord> procs(processes);
  for (uint32_t i = 0; i < processes; ++i) {
    procs[i].pid = 100 + i;
    procs[i].parent_index = -1;
  }
  std::vector<fmt::ThreadRecord> threads;
  for (uint32_t i = 0; i < thread_process.size(); ++i) {
    fmt::ThreadRecord r{};
    r.process_index = thread_process[i];
    r.tid = 1000 + i;
    r.name = tstr.add("t" + std::to_string(i));
    threads.push_back(r);
  }
  EXPECT_TRUE(writer.write_records(fmt::BlockType::kInfo, std::vector<fmt::InfoRecord>{info}, istr).ok());
  EXPECT_TRUE(writer.write_records(fmt::BlockType::kProcesses, procs, pstr).ok());
  EXPECT_TRUE(writer.write_records(fmt::BlockType::kThreads, threads, tstr).ok());
  if (!dumps.empty()) {
    EXPECT_TRUE(writer.write_records(fmt::BlockType::kDumps, dumps, fmt::StringTable()).ok());
  }
  EXPECT_TRUE(writer.finish(fmt::EndRecord{0, writer.blocks_written() + 1}).ok());
  auto r = fmt::TraceReader::open(path);
  EXPECT_TRUE(r.ok()) << r.error().message();
  if (!r.ok()) return nullptr;
  EXPECT_TRUE((*r)->problems().empty());
  return std::move(*r);
}

TEST(analysis_final_dumps, LastSnapshotOfEachProcess) {
  TempDir dir;
  const std::vector<fmt::ProfileNodeRecord> one = {root(), pn(0xa, 0, {1, 10, 10, 10, 10, 1, 10})};
  {  // Each process's snapshots, ending with its final state.
    auto t = write_trace(dir.file("a.trace"), 2, {0, 1},
                         {{0, 1, 1, 10, {{0, one}}}, {0, 2, 4, 20, {{0, one}}}, {1, 1, 2, 15, {{1, one}}},
                          {1, 2, 3, 25, {{1, one}}}, {1, 3, 4, 30, {{1, one}}}});
    ASSERT_TRUE(t);
    EXPECT_TRUE(t->is_profile());
    EXPECT_EQ(final_dumps(*t), (std::vector<uint32_t>{1, 4}));
  }
  {  // Interleaved.
    auto t = write_trace(dir.file("b.trace"), 2, {0, 1},
                         {{1, 1, 1, 10, {{1, one}}}, {0, 1, 1, 11, {{0, one}}}, {1, 2, 4, 20, {{1, one}}},
                          {0, 2, 4, 21, {{0, one}}}});
    ASSERT_TRUE(t);
    EXPECT_EQ(final_dumps(*t), (std::vector<uint32_t>{2, 3}));
  }
  {  // No snapshot at all.
    auto t = write_trace(dir.file("c.trace"), 1, {0}, {});
    ASSERT_TRUE(t);
    EXPECT_TRUE(final_dumps(*t).empty());
  }
}

// The K of `report --dump K` (and of `ctl dump`'s answer): the session's
// numbering, kept in DumpRecord::seq; a trace whose processes numbered their
// snapshots apart is numbered by place, as before.
TEST(analysis_snapshot_numbers, TheSessionsNumbersOrPlaces) {
  TempDir dir;
  const std::vector<fmt::ProfileNodeRecord> one = {root(), pn(0xa, 0, {1, 10, 10, 10, 10, 1, 10})};
  {  // A shell (process 0, its final state only) and the server it started,
     // which took snapshots 1 and 2; the final states after them.
    auto t = write_trace(dir.file("a.trace"), 2, {0, 1},
                         {{0, 3, 4, 10, {{0, one}}}, {1, 1, 2, 15, {{1, one}}}, {1, 2, 2, 25, {{1, one}}},
                          {1, 4, 4, 30, {{1, one}}}});
    ASSERT_TRUE(t);
    EXPECT_EQ(snapshot_numbers(*t), (std::vector<uint32_t>{3, 1, 2, 4}));
    EXPECT_EQ(snapshot_index(*t, 1), 1u);
    EXPECT_EQ(snapshot_index(*t, 3), 0u);
    EXPECT_EQ(snapshot_index(*t, 5), std::nullopt);
    EXPECT_EQ(snapshot_index(*t, 0), std::nullopt);
    EXPECT_EQ(snapshots_by_number(*t), (std::vector<uint32_t>{1, 2, 0, 3}));
  }
  {  // Each process from 1 (older traces): by place.
    auto t = write_trace(dir.file("b.trace"), 2, {0, 1},
                         {{0, 1, 4, 10, {{0, one}}}, {1, 1, 2, 15, {{1, one}}}, {1, 2, 4, 30, {{1, one}}}});
    ASSERT_TRUE(t);
    EXPECT_EQ(snapshot_numbers(*t), (std::vector<uint32_t>{1, 2, 3}));
    EXPECT_EQ(snapshot_index(*t, 2), 1u);
  }
}

TEST(analysis_build_profile_from_dumps, TreesOfChosenSnapshots) {
  TempDir dir;
  const std::vector<fmt::ProfileNodeRecord> s1 = {root(), pn(0xa, 0, {1, 90, 30, 90, 90, 1, 90, fmt::kProfNodeOpen}),
                                                  pn(0xb, 1, {3, 60, 60, 20, 20, 5, 20})};
  const std::vector<fmt::ProfileNodeRecord> fin = {root(), pn(0xa, 0, {1, 200, 40, 200, 200, 1, 200}),
                                                   pn(0xb, 1, {8, 160, 160, 20, 20, 5, 20}),
                                                   pn(0xc, 0, {0, 0, 0, kNone, 0, kNone, 0, fmt::kProfNodeExcluded})};
  const std::vector<fmt::ProfileNodeRecord> other = {root(), pn(0xb, 0, {2, 50, 50, 25, 25, 7, 25})};
  auto t = write_trace(dir.file("p.trace"), 1, {0, 0, 0},
                       {{0, 1, 1, 100, {{0, s1}}}, {0, 2, 4, 300, {{0, fin}, {2, other}}}});
  ASSERT_TRUE(t);
  const Resolver names = test::names({{0xa, "main"}, {0xb, "work"}, {0xc, "skipped"}});

  // The final state: threads 0 and 2 (thread 1 has no tree anywhere).
  auto p = build_profile_from_dumps(*t, final_dumps(*t), {0, 1, 2}, names);
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(p->threads.size(), 2u);
  EXPECT_EQ(p->threads[0].thread, 0u);
  EXPECT_EQ(p->threads[1].thread, 2u);
  const CallTree& t0 = p->threads[0].tree;
  EXPECT_EQ(t0.size(), 3u);  // root, main, work: the excluded node is not shown
  for (const auto& f : p->functions) EXPECT_NE(f.name, "skipped");
  const CallTree merged = merged_tree(*p);
  uint64_t work_calls = 0;
  for (const CallNode& n : merged.nodes())
    if (n.key < p->functions.size() && p->functions[n.key].name == "work") work_calls += n.stats.calls;
  EXPECT_EQ(work_calls, 10u);

  // Snapshot 1 and the final state together: one tree, the paths merged.
  p = build_profile_from_dumps(*t, {0, 1}, {0}, names);
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(p->threads.size(), 1u);
  EXPECT_EQ(p->threads[0].tree.size(), 3u);
  int main_node = -1;  // keys are function ids now
  for (uint32_t i = 1; i < p->threads[0].tree.size(); ++i)
    if (p->functions[p->threads[0].tree.node(i).key].name == "main") main_node = static_cast<int>(i);
  ASSERT_GE(main_node, 0);
  EXPECT_EQ(p->threads[0].tree.node(main_node).stats.total, 290u);
  // main's call open at snapshot 1, and completed in the final state: each counts.
  EXPECT_EQ(p->threads[0].tree.node(main_node).stats.calls, 2u);
  EXPECT_EQ(p->threads[0].tree.node(main_node).stats.open, 1u);
}

TEST(analysis_build_profile_from_dumps, DamagedTreeIsAnError) {
  TempDir dir;
  // Node 1's parent comes after it: read_tree refuses the block.
  const std::vector<fmt::ProfileNodeRecord> bad = {root(), pn(0xa, 2, {1, 10, 10, 10, 10, 1, 10}),
                                                   pn(0xb, 0, {1, 10, 10, 10, 10, 1, 10})};
  auto t = write_trace(dir.file("bad.trace"), 1, {0}, {{0, 1, 4, 10, {{0, bad}}}});
  ASSERT_TRUE(t);
  auto p = build_profile_from_dumps(*t, {0}, {0}, test::names({}));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("thread 0"), std::string::npos) << p.error().message();
  EXPECT_NE(p.error().message().find("parent"), std::string::npos) << p.error().message();
}

// ---- flat_ns and diff_flat --------------------------------------------------------

TEST(analysis_flat_ns, TicksToNsAcrossThreads) {
  Profile p;
  p.functions = {{"main", "app", "", 0}, {"work", "app", "", 0}};
  {
    ThreadProfile tp;
    tp.thread = 0;
    const uint32_t m = tp.tree.child(kRootNode, 0);
    tp.tree.node(m).stats = Stats{1, 1000, 200, 1000, 1000, 1000, 0};
    const uint32_t w = tp.tree.child(m, 1);
    tp.tree.node(w).stats = Stats{4, 800, 600, 100, 300, 100, 5};
    // work -> work (recursion): its time is already in the outer work's total.
    const uint32_t ww = tp.tree.child(w, 1);
    tp.tree.node(ww).stats = Stats{1, 200, 200, 200, 200, 200, 7};
    p.threads.push_back(std::move(tp));
  }
  {
    ThreadProfile tp;
    tp.thread = 1;
    const uint32_t w = tp.tree.child(kRootNode, 1);
    tp.tree.node(w).stats = Stats{2, 100, 100, 50, 50, 50, 3};
    p.threads.push_back(std::move(tp));
  }
  const auto flat = flat_ns(p, 0.5);  // 2 ticks per ns
  ASSERT_EQ(flat.size(), 2u);
  std::map<std::string, FlatNs> by_name;
  for (const NamedFlat& f : flat) {
    EXPECT_EQ(f.module, "app");
    by_name[f.name] = f.v;
  }
  EXPECT_EQ(by_name["main"].calls, 1u);
  EXPECT_DOUBLE_EQ(by_name["main"].total_ns, 500.0);
  EXPECT_DOUBLE_EQ(by_name["main"].self_ns, 100.0);
  EXPECT_EQ(by_name["work"].calls, 7u);
  EXPECT_DOUBLE_EQ(by_name["work"].total_ns, 450.0);  // (800 + 100) / 2: the nested call not again
  EXPECT_DOUBLE_EQ(by_name["work"].self_ns, 450.0);   // (600 + 200 + 100) / 2
}

NamedFlat nf(const std::string& name, double total, uint64_t calls = 1, const std::string& module = "app") {
  return {name, module, {calls, total, total / 2}};
}

TEST(analysis_diff_flat, OrderedByAbsoluteChangeBothSides) {
  const std::vector<NamedFlat> a = {nf("f", 100), nf("g", 50), nf("h", 10), nf("k", 30), nf("f", 5, 1, "lib")};
  const std::vector<NamedFlat> b = {nf("f", 150, 3), nf("g", 50), nf("i", 70, 2), nf("j", 20), nf("k", 10),
                                    nf("f", 5, 1, "lib")};
  const auto rows = diff_flat(a, b);
  std::vector<std::string> order;
  for (const DiffRow& r : rows) order.push_back(r.name + "@" + r.module);
  // |change|: i 70 (new), f 50, j 20 and k -20 (a tie: by name), h -10 (gone),
  // g 0, f@lib 0 (another function: same name, another module).
  EXPECT_EQ(order, (std::vector<std::string>{"i@app", "f@app", "j@app", "k@app", "h@app", "f@lib", "g@app"}));
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_DOUBLE_EQ(rows[0].delta_total(), 70.0);
  EXPECT_EQ(rows[0].a.calls, 0u);  // absent on side A: zeros
  EXPECT_DOUBLE_EQ(rows[0].a.total_ns, 0.0);
  EXPECT_EQ(rows[0].b.calls, 2u);
  EXPECT_DOUBLE_EQ(rows[1].delta_total(), 50.0);
  EXPECT_EQ(rows[1].a.calls, 1u);
  EXPECT_EQ(rows[1].b.calls, 3u);
  EXPECT_DOUBLE_EQ(rows[1].b.self_ns, 75.0);
  EXPECT_DOUBLE_EQ(rows[3].delta_total(), -20.0);
  EXPECT_DOUBLE_EQ(rows[4].delta_total(), -10.0);
  EXPECT_EQ(rows[4].b.calls, 0u);  // gone on side B
  EXPECT_DOUBLE_EQ(rows[4].b.total_ns, 0.0);
  EXPECT_DOUBLE_EQ(rows[4].a.total_ns, 10.0);

  EXPECT_TRUE(diff_flat({}, {}).empty());
  EXPECT_EQ(diff_flat({}, b).size(), 6u);
}

}  // namespace
}  // namespace callscope::analysis
