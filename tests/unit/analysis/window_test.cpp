// EventWindow: what a view shows between --from and --to.
#include "analysis/window.h"

#include <gtest/gtest.h>

#include "analysis/call_tree.h"
#include "events.h"

namespace callscope::analysis {
namespace {

using format::EventKind;
using test::Events;

std::vector<format::TraceEvent> windowed(const std::vector<format::TraceEvent>& in, TickWindow w) {
  std::vector<format::TraceEvent> out;
  EventWindow win(w);
  for (const auto& e : in)
    if (!win.feed(e, [&](const format::TraceEvent& x) { out.push_back(x); })) break;
  return out;
}

// main [0, 100] > a [10, 30], b [40, 90] > c [50, 60]
Events sample() {
  Events e;
  e.entry(0, 1).entry(10, 2).exit(30).entry(40, 3).entry(50, 4).exit(60).exit(90).exit(100);
  return e;
}

TEST(WindowTest, AllPassesEverything) {
  const Events e = sample();
  EXPECT_EQ(windowed(e.v, {}).size(), e.v.size());
}

TEST(WindowTest, OpenFramesComeBackInheritedAtFromAndCloseTruncatedAtTo) {
  const auto out = windowed(sample().v, {45, 55});
  // main and b inherited at 45, c entered at 50, then at 55: c, b, main truncated
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0].kind, EventKind::kEntryInherited);
  EXPECT_EQ(out[0].addr, 1u);
  EXPECT_EQ(out[0].tick, 45u);
  EXPECT_EQ(out[1].kind, EventKind::kEntryInherited);
  EXPECT_EQ(out[1].addr, 3u);
  EXPECT_EQ(out[2].kind, EventKind::kEntry);
  EXPECT_EQ(out[2].addr, 4u);
  for (int i = 3; i < 6; ++i) {
    EXPECT_EQ(out[i].kind, EventKind::kExitTruncated);
    EXPECT_EQ(out[i].tick, 55u);
  }
  EXPECT_EQ(out[3].addr, 4u);
  EXPECT_EQ(out[3].depth, 3u);
  EXPECT_EQ(out[5].addr, 1u);
  EXPECT_EQ(out[5].depth, 1u);
}

TEST(WindowTest, AFrameSpanningTheWholeWindowIsShown) {
  const auto out = windowed(sample().v, {70, 80});  // inside b, no event in [70, 80]
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].kind, EventKind::kEntryInherited);
  EXPECT_EQ(out[1].kind, EventKind::kEntryInherited);
  EXPECT_EQ(out[1].addr, 3u);
  EXPECT_EQ(out[2].kind, EventKind::kExitTruncated);
  EXPECT_EQ(out[2].tick, 80u);
}

TEST(WindowTest, TreeOfAWindowCountsOnlyItsTime) {
  CallTree tree;
  CallTreeBuilder b(tree);
  EventWindow w({20, 55});
  for (const auto& e : sample().v)
    if (!w.feed(e, [&](const format::TraceEvent& x) { b.on_event(x); })) break;
  b.finish();
  // main: 35 ticks of a call in progress at `from` (inherited); a: 10
  // ticks of one seen ending; b: entered at 40, truncated at 55 (a call, open)
  uint32_t main = 0, a = 0, bn = 0, c = 0;
  for (uint32_t i = 1; i < tree.size(); ++i) {
    const uint64_t k = tree.node(i).key;
    (k == 1 ? main : k == 2 ? a : k == 3 ? bn : c) = i;
  }
  EXPECT_EQ(tree.node(main).stats.total, 35u);
  EXPECT_EQ(tree.node(main).stats.calls, 1u);
  EXPECT_EQ(tree.node(main).stats.inherited, 1u);
  EXPECT_EQ(tree.node(a).stats.total, 10u);
  EXPECT_EQ(tree.node(a).stats.calls, 1u);  // a began before the window: inherited
  EXPECT_EQ(tree.node(a).stats.inherited, 1u);
  EXPECT_EQ(tree.node(bn).stats.total, 15u);
  EXPECT_EQ(tree.node(bn).stats.calls, 1u);
  EXPECT_EQ(tree.node(bn).stats.open, 1u);
  EXPECT_EQ(tree.node(c).stats.total, 5u);
  EXPECT_EQ(tree.node(main).stats.self, 35u - 10u - 15u);
}

TEST(WindowTest, AGapOpenAtFromIsReopenedThere) {
  Events e;
  e.entry(0, 1).pause(10).resume(50).exit(100);
  const auto out = windowed(e.v, {20, 200});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].kind, EventKind::kEntryInherited);
  EXPECT_EQ(out[1].kind, EventKind::kPause);
  EXPECT_EQ(out[1].tick, 20u);
  EXPECT_EQ(out[2].kind, EventKind::kResume);
  EXPECT_EQ(out[3].kind, EventKind::kExit);
}

TEST(WindowTest, AStreamThatEndsBeforeFromShowsNothing) {
  EXPECT_TRUE(windowed(sample().v, {200, 300}).empty());
}

}  // namespace
}  // namespace callscope::analysis
