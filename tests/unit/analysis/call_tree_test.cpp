// CallTree and CallTreeBuilder: node stats from event streams, including
// recursion, unwound and truncated exits, inherited frames, and merging.
#include "analysis/call_tree.h"

#include <gtest/gtest.h>

#include "events.h"

namespace callscope::analysis {
namespace {

using test::Events;

// The same events in TraceReader::CallColumns form, through on_columns.
CallTree build_from_columns(const Events& ev) {
  std::vector<format::EventKind> kinds;
  std::vector<uint64_t> ticks, values;
  for (const auto& e : ev.v) {
    kinds.push_back(e.kind);
    ticks.push_back(e.tick);
    if (format::carries_value(e.kind)) values.push_back(format::is_entry(e.kind) ? e.addr : e.arg);
  }
  CallTree t;
  CallTreeBuilder b(t);
  b.on_columns(kinds.data(), ticks.data(), values.data(), kinds.size());
  b.finish();
  return t;
}

// Built event by event; checked to be what on_columns builds too.
CallTree build(const Events& ev) {
  CallTree t;
  CallTreeBuilder b(t);
  for (const auto& e : ev.v) b.on_event(e);
  b.finish();
  const CallTree c = build_from_columns(ev);
  EXPECT_EQ(c.size(), t.size());
  for (uint32_t i = 0; i < std::min(c.size(), t.size()); ++i) {
    const CallNode &a = t.node(i), &b2 = c.node(i);
    EXPECT_TRUE(a.parent == b2.parent && a.key == b2.key && a.stats.calls == b2.stats.calls &&
                a.stats.total == b2.stats.total && a.stats.self == b2.stats.self && a.stats.min == b2.stats.min &&
                a.stats.max == b2.stats.max && a.stats.first == b2.stats.first && a.stats.open == b2.stats.open)
        << "node " << i << " differs when built from columns";
  }
  return t;
}

// The node reached from the root by the keys in `path`.
const CallNode* find(const CallTree& t, std::vector<uint64_t> path) {
  uint32_t at = kRootNode;
  for (uint64_t k : path) {
    bool found = false;
    for (size_t i = 1; i < t.size() && !found; ++i)
      if (t.node(static_cast<uint32_t>(i)).parent == at && t.node(static_cast<uint32_t>(i)).key == k) {
        at = static_cast<uint32_t>(i);
        found = true;
      }
    if (!found) return nullptr;
  }
  return &t.node(at);
}

TEST(CallTree, TotalSelfMinMaxFirst) {
  // main [0,100] calls a [10,30] (which calls b [15,25]) and a [40,70].
  Events ev;
  ev.entry(0, 0x10).entry(10, 0x20).entry(15, 0x30).exit(25).exit(30).entry(40, 0x20).exit(70).exit(100);
  const CallTree t = build(ev);
  ASSERT_EQ(t.size(), 4u);  // root, main, main/a, main/a/b
  const Stats& m = find(t, {0x10})->stats;
  EXPECT_EQ(m.calls, 1u);
  EXPECT_EQ(m.total, 100u);
  EXPECT_EQ(m.self, 50u);
  const Stats& a = find(t, {0x10, 0x20})->stats;
  EXPECT_EQ(a.calls, 2u);
  EXPECT_EQ(a.total, 50u);
  EXPECT_EQ(a.self, 40u);
  EXPECT_EQ(a.min, 20u);
  EXPECT_EQ(a.max, 30u);
  EXPECT_EQ(a.first, 20u);
  EXPECT_EQ(a.first_tick, 10u);
  EXPECT_EQ(find(t, {0x10, 0x20, 0x30})->depth, 3u);
  EXPECT_EQ(t.total(), 100u);
}

TEST(CallTree, UnwoundAndTruncatedCloseFramesAtTheirTick) {
  // f [0,60]; g [10,40] and h [20,40] left by longjmp at 40; then k [45,...]
  // still open when the stream ends at 80, with f.
  Events ev;
  ev.entry(0, 0xf).entry(10, 0x9).entry(20, 0x8).unwound(40).unwound(40).entry(45, 0x7).truncated(80).truncated(80);
  const CallTree t = build(ev);
  const Stats& f = find(t, {0xf})->stats;
  EXPECT_EQ(f.calls, 1u);
  EXPECT_EQ(f.total, 80u);
  EXPECT_EQ(f.self, 80u - 30u - 35u);
  const Stats& g = find(t, {0xf, 0x9})->stats;
  EXPECT_EQ(g.total, 30u);
  EXPECT_EQ(g.self, 10u);
  EXPECT_EQ(find(t, {0xf, 0x9, 0x8})->stats.total, 20u);
  const Stats& k = find(t, {0xf, 0x7})->stats;
  EXPECT_EQ(k.calls, 1u);
  EXPECT_EQ(k.total, 35u);
  EXPECT_EQ(k.max, 35u);
  // Truncated calls are calls, flagged open; unwound ones are not open.
  EXPECT_EQ(k.open, 1u);
  EXPECT_EQ(f.open, 1u);
  EXPECT_EQ(g.open, 0u);
}

// An inherited frame (a fork child's copy of its parent's frame, one begun
// inside a gap) is a call of this stream from where it was first seen: its
// time is the call's, so avg <= max holds (a report once gave a fork child's
// spawn() CALLS 1, AVG 303 ms, MAX 154 us).
TEST(CallTree, InheritedFramesAreCallsFromWhereTheyWereSeen) {
  Events ev;
  ev.lost(100, 42).inherited(100, 0xf).entry(110, 0x9).exit(130).exit(150);
  CallTree t;
  CallTreeBuilder b(t);
  for (const auto& e : ev.v) b.on_event(e);
  b.finish();
  EXPECT_EQ(b.lost_events(), 42u);
  const Stats& f = find(t, {0xf})->stats;
  EXPECT_EQ(f.calls, 1u);
  EXPECT_EQ(f.inherited, 1u);
  EXPECT_EQ(f.total, 50u);
  EXPECT_EQ(f.self, 30u);
  EXPECT_EQ(f.min, 50u);
  EXPECT_EQ(f.max, 50u);
  EXPECT_EQ(f.first_tick, 100u);
  EXPECT_LE(f.avg(), static_cast<double>(f.max));
  EXPECT_EQ(find(t, {0xf, 0x9})->stats.calls, 1u);
  EXPECT_EQ(find(t, {0xf, 0x9})->stats.inherited, 0u);
}

// The parent's call and the child's copy, merged as a report merges the
// threads of two processes: two calls, the total their sum, avg <= max.
TEST(CallTree, AForkedChildsCopyIsASecondCallNotALongerOne) {
  Events parent, child;
  parent.entry(0, 0x10).entry(10, 0x20).exit(12).exit(400);    // main [0,400] -> spawn [10,12]
  child.inherited(11, 0x10).inherited(11, 0x20).truncated(311).truncated(311);  // the child, in spawn for 300
  CallTree merged;
  for (const Events* e : {&parent, &child}) {
    CallTree t = build(*e);
    merge_tree(merged, t, [](uint64_t k) { return k; });
  }
  const Stats& spawn = find(merged, {0x10, 0x20})->stats;
  EXPECT_EQ(spawn.calls, 2u);
  EXPECT_EQ(spawn.inherited, 1u);
  EXPECT_EQ(spawn.total, 302u);
  EXPECT_EQ(spawn.max, 300u);
  EXPECT_EQ(spawn.min, 2u);
  EXPECT_LE(spawn.avg(), static_cast<double>(spawn.max));
  const Stats& main = find(merged, {0x10})->stats;
  EXPECT_EQ(main.calls, 2u);
  EXPECT_EQ(main.max, 400u);
}

TEST(CallTree, FramesLeftOpenCloseAtTheLastTick) {
  Events ev;
  ev.entry(0, 0xf).entry(10, 0x9);
  ev.v.push_back({format::EventKind::kMark, 2, 50, 0, 0, 1});
  const CallTree t = build(ev);
  EXPECT_EQ(find(t, {0xf})->stats.total, 50u);
  EXPECT_EQ(find(t, {0xf, 0x9})->stats.total, 40u);
  EXPECT_EQ(find(t, {0xf, 0x9})->stats.open, 1u);
}

TEST(CallTree, GapsTakeTheirTimeOutOfFramesThatWentOnThrough) {
  // main [0,100] calls a [10,60]; a gap from 20 to 50 inside a.
  Events paused;
  paused.entry(0, 0x10).entry(10, 0x20).pause(20).resume(50).exit(60).exit(100);
  CallTree t = build(paused);  // a pause counts nowhere
  EXPECT_EQ(find(t, {0x10})->stats.total, 70u);
  EXPECT_EQ(find(t, {0x10})->stats.self, 50u);
  EXPECT_EQ(find(t, {0x10, 0x20})->stats.total, 20u);
  EXPECT_EQ(find(t, {0x10, 0x20, kLostKey}), nullptr);

  Events lost;
  lost.entry(0, 0x10).entry(10, 0x20).lost(20, 7).resume(50).exit(60).exit(100);
  t = build(lost);  // a loss's time goes to "[lost events]" under a
  EXPECT_EQ(find(t, {0x10})->stats.total, 100u);
  EXPECT_EQ(find(t, {0x10, 0x20})->stats.total, 50u);
  EXPECT_EQ(find(t, {0x10, 0x20})->stats.self, 20u);
  EXPECT_EQ(find(t, {0x10, 0x20, kLostKey})->stats.total, 30u);
}

TEST(CallTree, MemoryGrowsWithPathsNotEvents) {
  Events ev;
  ev.entry(0, 0x1);
  for (uint64_t i = 0; i < 10000; ++i) ev.entry(1 + 4 * i, 0x2 + i % 3).entry(2 + 4 * i, 0x9).exit(3 + 4 * i).exit(4 + 4 * i);
  ev.exit(50000);
  const CallTree t = build(ev);
  EXPECT_EQ(t.size(), 1u + 1u + 3u + 3u);
  EXPECT_EQ(find(t, {0x1, 0x3, 0x9})->stats.calls, 3333u);
}

TEST(CallTree, MergeMapsKeysAndMergesSiblings) {
  Events ev;  // two addresses of the same function, then another
  ev.entry(0, 0x1).entry(1, 0x2).exit(3).entry(4, 0x3).exit(10).entry(11, 0x4).exit(12).exit(20);
  const CallTree src = build(ev);
  CallTree dst;
  merge_tree(dst, src, [](uint64_t k) { return k == 0x3 ? 0x2 : k; });
  merge_tree(dst, src, [](uint64_t k) { return k == 0x3 ? 0x2 : k; });  // a second thread, the same
  ASSERT_EQ(dst.size(), 4u);
  const Stats& s = find(dst, {0x1, 0x2})->stats;
  EXPECT_EQ(s.calls, 4u);
  EXPECT_EQ(s.total, 16u);
  EXPECT_EQ(s.min, 2u);
  EXPECT_EQ(s.max, 6u);
  EXPECT_EQ(s.first, 2u);
  EXPECT_EQ(find(dst, {0x1})->stats.total, 40u);
}

}  // namespace
}  // namespace callscope::analysis
