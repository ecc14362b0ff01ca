// The recorder's perf rings (recorder/perf_rings.h) on a real child
// process, checked against the kernel's own counters: the context switches
// recorded for a thread are exactly its voluntary and involuntary switches
// as /proc counts them (both move in the same place of the scheduler), a
// fork and an exit of a grandchild are seen (inherited events), times are
// CLOCK_MONOTONIC. Counted, never timed.
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "recorder/perf_rings.h"

namespace callscope::recorder {
namespace {

uint64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// voluntary_ctxt_switches, nonvoluntary_ctxt_switches of a thread.
std::pair<uint64_t, uint64_t> switches(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/status");
  std::string key;
  uint64_t v = 0, nv = 0;
  while (f >> key) {
    if (key == "voluntary_ctxt_switches:") f >> v;
    if (key == "nonvoluntary_ctxt_switches:") f >> nv;
  }
  return {v, nv};
}

TEST(recorder_perf_rings, SwitchesForksAndExitsOfAChildMatchTheKernelsCounts) {
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(1);
    for (int i = 0; i < 20; ++i) {
      timespec ts{0, 1000000};
      ::nanosleep(&ts, nullptr);
    }
    const pid_t g = ::fork();  // a grandchild: followed by inheritance
    if (g == 0) ::_exit(0);
    ::waitpid(g, nullptr, 0);
    ::raise(SIGSTOP);  // stays off the CPU while the test reads its counts
    ::_exit(0);
  }
  // Blocked in read: its counts stand still. Watched from now on.
  ::usleep(20000);
  const auto before = switches(child);
  auto rings = PerfRings::open(child, PerfRings::Options{});
  if (!rings && ::geteuid() != 0) GTEST_SKIP() << rings.error().message();
  ASSERT_TRUE(rings) << rings.error().message();
  EXPECT_EQ((*rings)->cpus(), online_cpus().size());
  const uint64_t t0 = mono_ns();
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  const auto after = switches(child);
  const uint64_t t1 = mono_ns();

  std::map<SysRecord::Kind, uint64_t> of_child;
  uint64_t lost = 0, outside = 0;
  pid_t grandchild = 0;
  std::vector<uint32_t> exits;  // rings are drained CPU by CPU: an exit may come before its fork
  (*rings)->drain([&](const SysRecord& r) {
    if (r.kind == SysRecord::Kind::kLost) lost += r.lost;
    if (r.kind == SysRecord::Kind::kFork && r.parent_pid == static_cast<uint32_t>(child) &&
        r.pid != static_cast<uint32_t>(child))
      grandchild = static_cast<pid_t>(r.pid);
    if (r.kind == SysRecord::Kind::kExit) exits.push_back(r.pid);
    if (r.tid == static_cast<uint32_t>(child) && r.pid == static_cast<uint32_t>(child)) {
      ++of_child[r.kind];
      if (r.time_ns < t0 || r.time_ns > t1) ++outside;
    }
  });
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(outside, 0u);
  const uint64_t outs = of_child[SysRecord::Kind::kSwitchOut] + of_child[SysRecord::Kind::kSwitchOutPreempt];
  EXPECT_EQ(outs, (after.first - before.first) + (after.second - before.second))
      << "voluntary " << before.first << " -> " << after.first << ", involuntary " << before.second << " -> "
      << after.second;
  EXPECT_GE(of_child[SysRecord::Kind::kSwitchOut], 21u);  // 20 sleeps and the stop, at least
  EXPECT_GE(of_child[SysRecord::Kind::kSwitchIn], outs - 1);
  EXPECT_NE(grandchild, 0);
  EXPECT_NE(std::find(exits.begin(), exits.end(), static_cast<uint32_t>(grandchild)), exits.end());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(go[0]);
  ::close(go[1]);
}

TEST(recorder_perf_rings, AProcessThatIsGoneIsSaidToBe) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  auto rings = PerfRings::open(child, PerfRings::Options{});
  ASSERT_FALSE(rings);
  EXPECT_NE(rings.error().message().find("the process has ended"), std::string::npos) << rings.error().message();
}

// What a refusal says: the setting and its fix, or the limit to raise.
TEST(recorder_perf_rings, RefusalsSayWhyAndTheFix) {
  EXPECT_NE(perf_open_advice(EACCES).find("kernel.perf_event_paranoid="), std::string::npos);
  EXPECT_NE(perf_open_advice(EMFILE).find("ulimit -n"), std::string::npos);
  EXPECT_NE(perf_open_advice(ENOENT).find("no perf events"), std::string::npos);
}

}  // namespace
}  // namespace callscope::recorder
