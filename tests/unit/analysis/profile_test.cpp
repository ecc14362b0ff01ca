// Flat profile (recursion counted once per outermost activation), callers and
// callees, tree filtering, sort keys, and merging threads by function name.
#include "analysis/profile.h"

#include <gtest/gtest.h>

#include "analysis/report_model.h"
#include "events.h"

namespace callscope::analysis {
namespace {

using test::Events;

const ProfileRow& row(const Profile& p, const std::vector<ProfileRow>& rows, const std::string& name) {
  for (const ProfileRow& r : rows)
    if (p.functions[r.key].name == name) return r;
  ADD_FAILURE() << "no row for " << name;
  static const ProfileRow none;
  return none;
}

const Resolver kNames = test::names({{0x1, "main"}, {0x2, "f"}, {0x3, "g"}, {0x4, "leaf"}});

TEST(FlatProfile, RecursionCountsOncePerOutermostActivation) {
  // main [0,200]: f [0,100] -> f [10,90] -> f [20,50]; then f [120,150] -> g [125,145] -> f [130,140].
  Events ev;
  ev.entry(0, 0x1).entry(0, 0x2).entry(10, 0x2).entry(20, 0x2).exit(50).exit(90).exit(100);
  ev.entry(120, 0x2).entry(125, 0x3).entry(130, 0x2).exit(140).exit(145).exit(150).exit(200);
  Profile p;
  add_thread(p, 0, 0, ev.v, kNames);
  const std::vector<ProfileRow> rows = flat_profile(p.threads[0].tree);
  const Stats& f = row(p, rows, "f").stats;
  EXPECT_EQ(f.calls, 5u);
  EXPECT_EQ(f.total, 100u + 30u);                        // outermost activations only
  EXPECT_EQ(f.self, 20u + 50u + 30u + 10u + 10u);        // every call, callees excluded
  EXPECT_EQ(f.min, 10u);
  EXPECT_EQ(f.max, 100u);
  EXPECT_EQ(f.first, 100u);
  EXPECT_DOUBLE_EQ(f.avg(), 130.0 / 5);
  const Stats& g = row(p, rows, "g").stats;
  EXPECT_EQ(g.total, 20u);
  EXPECT_EQ(g.self, 10u);
  EXPECT_EQ(row(p, rows, "main").stats.self, 200u - 100u - 30u);
}

TEST(Relatives, CallersAndCalleesSumPerEdge) {
  // main -> f -> leaf [10,20]; main -> g -> leaf twice ([40,45], [50,60]); g -> f -> leaf [70,72].
  Events ev;
  ev.entry(0, 0x1).entry(5, 0x2).entry(10, 0x4).exit(20).exit(25);
  ev.entry(30, 0x3).entry(40, 0x4).exit(45).entry(50, 0x4).exit(60).entry(65, 0x2).entry(70, 0x4).exit(72).exit(75);
  ev.exit(80).exit(90);
  Profile p;
  add_thread(p, 0, 0, ev.v, kNames);
  const CallTree& t = p.threads[0].tree;
  auto id = [&](const std::string& n) {
    for (size_t i = 0; i < p.functions.size(); ++i)
      if (p.functions[i].name == n) return static_cast<uint64_t>(i);
    return kNoCaller;
  };
  const Relatives leaf = relatives(t, id("leaf"));
  EXPECT_TRUE(leaf.callees.empty());
  ASSERT_EQ(leaf.callers.size(), 2u);
  const Stats& from_f = row(p, leaf.callers, "f").stats;
  EXPECT_EQ(from_f.calls, 2u);
  EXPECT_EQ(from_f.total, 10u + 2u);
  const Stats& from_g = row(p, leaf.callers, "g").stats;
  EXPECT_EQ(from_g.calls, 2u);
  EXPECT_EQ(from_g.total, 15u);
  EXPECT_EQ(from_g.min, 5u);
  EXPECT_EQ(from_g.first, 5u);

  const Relatives g = relatives(t, id("g"));
  ASSERT_EQ(g.callees.size(), 2u);
  EXPECT_EQ(row(p, g.callees, "leaf").stats.total, 15u);
  EXPECT_EQ(row(p, g.callees, "f").stats.total, 10u);
  const Relatives m = relatives(t, id("main"));
  ASSERT_EQ(m.callers.size(), 1u);
  EXPECT_EQ(m.callers[0].key, kNoCaller);
  EXPECT_EQ(m.callers[0].stats.total, 90u);
}

TEST(MergeThreads, ByFunctionNameAcrossProcesses) {
  // Thread 0 (process 0): main -> work at 0x2. Thread 1 (process 1): worker -> work at 0x7.
  Resolver r = [](uint32_t process, uint64_t addr, uint64_t) {
    std::string n = addr == 0x1 ? "main" : addr == 0x6 ? "worker" : "work";
    return FunctionInfo{n, process == 0 ? "app" : "app", "", 0};
  };
  Events a, b;
  a.entry(0, 0x1).entry(10, 0x2).exit(30).exit(40);
  b.entry(5, 0x6).entry(6, 0x7).exit(16).entry(20, 0x7).exit(50).exit(60);
  Profile p;
  add_thread(p, 0, 0, a.v, r);
  add_thread(p, 1, 1, b.v, r);
  ASSERT_EQ(p.functions.size(), 3u);  // "work" is one function
  const CallTree m = merged_tree(p);
  const std::vector<ProfileRow> rows = flat_profile(m);
  const Stats& w = row(p, rows, "work").stats;
  EXPECT_EQ(w.calls, 3u);
  EXPECT_EQ(w.total, 20u + 10u + 30u);
  EXPECT_EQ(w.min, 10u);
  EXPECT_EQ(w.max, 30u);
  EXPECT_EQ(w.first, 10u);  // thread 1's call at tick 6 came first
  EXPECT_EQ(m.total(), 40u + 55u);
}

TEST(TreeFilter, DepthThresholdAndWanted) {
  Events ev;  // main [0,100] -> f [0,90] -> leaf [0,5]; main -> g [90,99]
  ev.entry(0, 0x1).entry(0, 0x2).entry(0, 0x4).exit(5).exit(90).entry(90, 0x3).exit(99).exit(100);
  Profile p;
  add_thread(p, 0, 0, ev.v, kNames);
  const CallTree& t = p.threads[0].tree;
  auto count = [](const std::vector<bool>& v) { return std::count(v.begin() + 1, v.end(), true); };
  EXPECT_EQ(count(visible_nodes(t, {})), 4);
  EXPECT_EQ(count(visible_nodes(t, {2, 0, {}})), 3);
  EXPECT_EQ(count(visible_nodes(t, {0, 10, {}})), 2);  // main and f
  const uint64_t leaf = p.threads[0].tree.node(3).key;
  EXPECT_EQ(count(visible_nodes(t, {0, 0, [&](uint64_t k) { return k == leaf; }})), 3);  // main, f, leaf
}

TEST(SortKeys, ParseAndOrder) {
  EXPECT_EQ(parse_sort_key("self_avg"), SortKey::kSelfAvg);
  EXPECT_FALSE(parse_sort_key("bogus"));
  EXPECT_EQ(sort_key_names(), "calls, total, self, avg, self_avg, min, max, first, name");
  Stats a, b;
  a.total = 10;
  b.total = 20;
  EXPECT_TRUE(sorts_before(SortKey::kTotal, b, "b", a, "a"));
  EXPECT_TRUE(sorts_before(SortKey::kName, b, "a", a, "b"));
  EXPECT_TRUE(sorts_before(SortKey::kCalls, a, "a", b, "b"));  // tie: by name
}

}  // namespace
}  // namespace callscope::analysis
