// report --idle: the self time of waiting functions is left out of them and
// of every frame above them (report_model.h, leave_out_self_time); and the
// balance of a stream (balance.h) that info and dump --stats show.
#include <gtest/gtest.h>

#include "analysis/balance.h"
#include "analysis/profile.h"
#include "analysis/report_model.h"
#include "events.h"

namespace callscope::analysis {
namespace {

using test::Events;

const Resolver kNames = test::names({{0x1, "main"}, {0x2, "wait_for_work"}, {0x3, "work"}});

const Stats& stats_of(const Profile& p, const std::vector<ProfileRow>& rows, const std::string& name) {
  for (const ProfileRow& r : rows)
    if (p.functions[r.key].name == name) return r.stats;
  ADD_FAILURE() << "no row for " << name;
  static const Stats none;
  return none;
}

TEST(LeaveOutSelfTime, FromTheWaiterAndEveryFrameAboveIt) {
  // main [0,1000]: wait_for_work [0,900] (self 850) -> work [100,150];
  // then work [900,1000].
  Events ev;
  ev.entry(0, 0x1).entry(0, 0x2).entry(100, 0x3).exit(150).exit(900).entry(900, 0x3).exit(1000).exit(1000);
  Profile p;
  add_thread(p, 0, 0, ev.v, kNames);
  ASSERT_EQ(p.threads[0].tree.total(), 1000u);
  const std::vector<uint64_t> left = leave_out_self_time(p, {"wait_*"});
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], 850u);
  EXPECT_EQ(p.threads[0].tree.total(), 150u);  // work twice: 50 + 100
  const auto rows = flat_profile(p.threads[0].tree);
  EXPECT_EQ(stats_of(p, rows, "main").total, 150u);
  EXPECT_EQ(stats_of(p, rows, "main").self, 0u);
  EXPECT_EQ(stats_of(p, rows, "wait_for_work").total, 50u);
  EXPECT_EQ(stats_of(p, rows, "wait_for_work").self, 0u);
  EXPECT_EQ(stats_of(p, rows, "wait_for_work").calls, 1u);  // calls stay
  EXPECT_EQ(stats_of(p, rows, "work").total, 150u);
}

TEST(LeaveOutSelfTime, RecursiveWaiterAndNoGlobs) {
  // wait_for_work [0,100] (self 60) -> wait_for_work [20,60] (self 40).
  Events ev;
  ev.entry(0, 0x2).entry(20, 0x2).exit(60).exit(100);
  Profile p;
  add_thread(p, 0, 0, ev.v, kNames);
  Profile untouched;
  add_thread(untouched, 0, 0, ev.v, kNames);
  EXPECT_EQ(leave_out_self_time(untouched, {}), std::vector<uint64_t>{0});
  EXPECT_EQ(untouched.threads[0].tree.total(), 100u);
  EXPECT_EQ(leave_out_self_time(p, {"main", "wait_for_work"}), std::vector<uint64_t>{100});
  EXPECT_EQ(p.threads[0].tree.total(), 0u);
}

TEST(StreamBalance, StrayExitsAndUnclosedFrames) {
  StreamBalance b;
  EXPECT_TRUE(b.balanced());
  b.add({format::EventKind::kEntry, 1, 0, 0x1, 0, 0});
  EXPECT_EQ(b.unclosed(), 1);
  EXPECT_FALSE(b.balanced());
  b.add({format::EventKind::kExitTruncated, 1, 5, 0x1, 0, 0});
  EXPECT_TRUE(b.balanced());
  b.add({format::EventKind::kExitStray, 1, 6, 0x2, 0, 0});
  EXPECT_EQ(b.stray, 1u);
  EXPECT_EQ(b.unclosed(), 0);
  EXPECT_FALSE(b.balanced());
  b.add({format::EventKind::kLost, 1, 7, 0, 0, 42});
  EXPECT_EQ(b.lost, 42u);
}

}  // namespace
}  // namespace callscope::analysis
