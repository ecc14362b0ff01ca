// Running or waiting per thread (analysis/thread_states.h), from context
// switches built in memory: time split by state within the thread's life,
// switches counted (also those before its first call), losses kept.
#include "analysis/thread_states.h"

#include "analysis/call_tree.h"

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

namespace callscope::analysis {
namespace {

// The wait clock: cumulative time off the CPU, asked forwards and back.
TEST(analysis_wait_clock, CumulativeTimeOffTheCpu) {
  const std::vector<SysEvent> events = {{SysKind::kSwitchOutBlocked, 100, 0},
                                        {SysKind::kSwitchIn, 150, 0},
                                        {SysKind::kSwitchOutRunnable, 300, 0},
                                        {SysKind::kSwitchIn, 320, 0},
                                        {SysKind::kSwitchOutBlocked, 500, 0}};  // off to the end
  WaitClock c(events, [](uint64_t ns) { return ns; });
  EXPECT_EQ(c.waited(50), 0u);
  EXPECT_EQ(c.waited(120), 20u);
  EXPECT_EQ(c.waited(200), 50u);
  EXPECT_EQ(c.waited(310), 60u);
  EXPECT_EQ(c.waited(400), 70u);
  EXPECT_EQ(c.waited(600), 170u);
  EXPECT_EQ(c.waited(120), 20u);  // back in time
}

// A call tree with the clock: a frame's wait is the time off the CPU inside
// it, its self wait less its callees'.
TEST(analysis_wait_clock, FramesGetTheirWaits) {
  const std::vector<SysEvent> events = {{SysKind::kSwitchOutBlocked, 20, 0},  // in callee
                                        {SysKind::kSwitchIn, 30, 0},
                                        {SysKind::kSwitchOutRunnable, 60, 0},  // in caller, after the callee
                                        {SysKind::kSwitchIn, 65, 0}};
  WaitClock clock(events, [](uint64_t ns) { return ns; });
  CallTree tree;
  CallTreeBuilder b(tree);
  b.set_wait_clock(&clock);
  using format::EventKind;
  auto ev = [](EventKind k, uint64_t tick, uint64_t addr = 0) {
    format::TraceEvent e{};
    e.kind = k;
    e.tick = tick;
    e.addr = addr;
    return e;
  };
  for (const auto& e : {ev(EventKind::kEntry, 0, 0x10), ev(EventKind::kEntry, 10, 0x20), ev(EventKind::kExit, 40),
                        ev(EventKind::kExit, 100)})
    b.on_event(e);
  b.finish();
  const uint32_t caller = tree.child(kRootNode, 0x10), callee = tree.child(caller, 0x20);
  EXPECT_EQ(tree.node(caller).stats.total, 100u);
  EXPECT_EQ(tree.node(caller).stats.wait, 15u);
  EXPECT_EQ(tree.node(caller).stats.self_wait, 5u);
  EXPECT_EQ(tree.node(callee).stats.wait, 10u);
  EXPECT_EQ(tree.node(callee).stats.self_wait, 10u);
}

}  // namespace
}  // namespace callscope::analysis
