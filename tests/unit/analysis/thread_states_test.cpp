// Running or waiting per thread (analysis/thread_states.h), from context
// switches built in memory: time split by state within the thread's life,
// switches counted (also those before its first call), losses kept.
#include "analysis/thread_states.h"

#include <gtest/gtest.h>

namespace callscope::analysis {
namespace {

using format::SysEvent;
using format::SysKind;

TEST(analysis_thread_states, TimeByStateWithinTheThreadsLife) {
  // Ticks = ns here. The thread lives [100, 1000].
  const std::vector<SysEvent> events = {
      {SysKind::kSwitchOutBlocked, 50, 0},    // before its start: counted, no time
      {SysKind::kSwitchIn, 120, 0},           // blocked 100..120
      {SysKind::kSwitchOutRunnable, 300, 0},  // running 120..300
      {SysKind::kSwitchIn, 340, 0},           // runnable 300..340
      {SysKind::kSwitchOutBlocked, 900, 0},   // running 340..900
      {SysKind::kLost, 950, 3},
      {SysKind::kSwitchIn, 1200, 0},          // blocked 900..1000 (its end)
  };
  const ThreadStates s = thread_states(events, 100, 1000, [](uint64_t ns) { return ns; });
  EXPECT_TRUE(s.known);
  EXPECT_EQ(s.switches_blocked, 2u);
  EXPECT_EQ(s.switches_runnable, 1u);
  EXPECT_EQ(s.blocked, 20u + 100u);
  EXPECT_EQ(s.running, 180u + 560u);
  EXPECT_EQ(s.runnable, 40u);
  EXPECT_EQ(s.running + s.runnable + s.blocked, 900u);  // the whole life
  EXPECT_EQ(s.lost, 3u);
}

TEST(analysis_thread_states, NoEventsIsUnknown) {
  const ThreadStates s = thread_states({}, 0, 10, [](uint64_t ns) { return ns; });
  EXPECT_FALSE(s.known);
  EXPECT_EQ(s.running + s.runnable + s.blocked, 0u);
}

}  // namespace
}  // namespace callscope::analysis
