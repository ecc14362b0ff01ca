// The kernel's context switches in the trace (issue 32; recorder/
// perf_rings.h), checked against the kernel's own counters: the fixture
// `sched` reads a blocked worker's voluntary and involuntary switches from
// /proc with the CLOCK_MONOTONIC time; the trace's switch-outs of that
// thread up to that time are exactly those, the blocked ones the voluntary
// ones. gcc and clang, -O0 and -O2. Counted, never timed.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "e2e_support.h"
#include "format/trace_reader.h"

namespace callscope::e2e {
namespace {

class SchedTest : public ::testing::TestWithParam<std::string> {
 protected:
  // `record` of the fixture into `trace`; false (the test skipped) where
  // the kernel does not let us follow context switches.
  bool record(const std::string& trace, RunResult& r) {
    r = callscope({"record", "-o", trace, "--", fixture(GetParam(), "sched")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 && r.err.find("context switches are not recorded") == std::string::npos;
  }
};

TEST_P(SchedTest, ContextSwitchesAreTheKernelsCounts) {
  TempDir dir;
  const std::string trace = dir.file("s.trace");
  RunResult r;
  if (!record(trace, r)) GTEST_SKIP() << "not recorded: " << r.err;
  std::istringstream in(r.out);
  uint32_t tid = 0;
  uint64_t voluntary = 0, involuntary = 0, at_ns = 0;
  ASSERT_TRUE(in >> tid >> voluntary >> involuntary >> at_ns) << r.out;
  auto reader = format::TraceReader::open(trace);
  ASSERT_TRUE(reader) << reader.error().message();
  ASSERT_TRUE((*reader)->has_sys_events());
  int index = -1;
  for (size_t i = 0; i < (*reader)->threads().size(); ++i)
    if ((*reader)->threads()[i].record.tid == tid) index = static_cast<int>(i);
  ASSERT_GE(index, 0) << "no thread " << tid << " in the trace";
  auto events = (*reader)->sys_events(static_cast<uint32_t>(index));
  ASSERT_TRUE(events) << events.error().message();
  uint64_t blocked = 0, preempted = 0, lost = 0;
  for (const format::SysEvent& e : *events) {
    if (e.kind == format::SysKind::kLost) lost += e.arg;
    if (e.mono_ns > at_ns) continue;
    blocked += e.kind == format::SysKind::kSwitchOutBlocked;
    preempted += e.kind == format::SysKind::kSwitchOutRunnable;
  }
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(blocked + preempted, voluntary + involuntary)
      << "trace: " << blocked << " blocked + " << preempted << " preempted; /proc: " << voluntary << " + "
      << involuntary;
  EXPECT_EQ(blocked, voluntary);
  EXPECT_GE(voluntary, 21u);  // 20 naps and the wait on the pipe
  // info says it, per thread.
  RunResult info = callscope({"info", "--format", "json", trace});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("\"context_switches\""), std::string::npos);
}

// Running or waiting, per function: nap sleeps (all but its system call is
// off the CPU), main waits for the worker; CPU and WAIT add up to TOTAL.
TEST_P(SchedTest, ReportSplitsTimeIntoCpuAndWait) {
  TempDir dir;
  const std::string trace = dir.file("s.trace");
  RunResult r;
  if (!record(trace, r)) GTEST_SKIP() << "not recorded: " << r.err;
  auto rows = flat_report(trace);
  for (const char* f : {"nap", "main", "spin", "worker"}) {
    ASSERT_TRUE(rows.count(f)) << f;
    auto& row = rows[f];
    // Each converted from ticks on its own: within a nanosecond.
    EXPECT_LE(std::max(num(row, "cpu_ns") + num(row, "wait_ns"), num(row, "total_ns")) -
                  std::min(num(row, "cpu_ns") + num(row, "wait_ns"), num(row, "total_ns")),
              1u)
        << f;
    EXPECT_LE(num(row, "self_wait_ns"), num(row, "self_ns")) << f;
  }
  EXPECT_GE(num(rows["nap"], "wait_ns") * 10, num(rows["nap"], "total_ns") * 9);
  EXPECT_GE(num(rows["main"], "wait_ns") * 2, num(rows["main"], "total_ns"));
  // Without the kernel's events, the columns are not there.
  RunResult none = callscope({"record", "--events", "none", "-f", "-o", trace, "--", fixture(GetParam(), "sched")});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(flat_report(trace)["nap"].count("wait_ns"), 0u);
}

TEST_P(SchedTest, EventsNoneRecordsNoSwitches) {
  TempDir dir;
  const std::string trace = dir.file("s.trace");
  RunResult r = callscope({"record", "--events", "none", "-o", trace, "--", fixture(GetParam(), "sched")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto reader = format::TraceReader::open(trace);
  ASSERT_TRUE(reader) << reader.error().message();
  EXPECT_FALSE((*reader)->has_sys_events());
}

INSTANTIATE_TEST_SUITE_P(Compilers, SchedTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
