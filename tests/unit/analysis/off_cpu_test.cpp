// Why a thread was off its CPU (analysis/off_cpu.h): stretches from a
// switch-out to the next switch-in, with the state it slept in, the system
// call it was in and who woke it; reasons as labels; the kernel's state
// masks as letters; system call names of this machine.
#include "analysis/off_cpu.h"

#include <gtest/gtest.h>

#include <sys/syscall.h>

#include "analysis/block_io.h"

namespace callscope::analysis {
namespace {

using format::SysEvent;
using format::SysKind;

SysEvent ev(SysKind k, uint64_t ns, uint64_t arg = 0, int64_t value = 0) {
  SysEvent e{k, ns, arg};
  e.value = value;
  return e;
}

TEST(analysis_off_cpu, StretchesWithStateCallAndWaker) {
  const std::vector<SysEvent> events = {
      ev(SysKind::kSyscallEnter, 100, SYS_fsync),
      ev(SysKind::kSleepState, 110, 0x2),
      ev(SysKind::kSwitchOutBlocked, 110),
      ev(SysKind::kSwitchIn, 400),  // [fsync D] 110..400, no waker seen
      ev(SysKind::kSyscallExit, 410, SYS_fsync),
      ev(SysKind::kSleepState, 500, 0x100),  // preempted in the kernel: R+
      ev(SysKind::kSwitchOutRunnable, 500),
      ev(SysKind::kSwitchIn, 520),  // [runnable] even inside a system call
      ev(SysKind::kSyscallEnter, 600, SYS_futex),
      ev(SysKind::kSleepState, 610, 0x1),
      ev(SysKind::kSwitchOutBlocked, 610),
      ev(SysKind::kWakeup, 900, 77, 70),
      ev(SysKind::kWakeup, 905, 78, 70),  // the first waker stands
      ev(SysKind::kSwitchIn, 950),
      ev(SysKind::kSyscallExit, 960, SYS_futex),
      ev(SysKind::kSwitchOutBlocked, 1000),  // no state, no call: [blocked]; open at the end
  };
  const auto s = off_cpu_stretches(events, 2000, [](uint64_t ns) { return ns; });
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].start, 110u);
  EXPECT_EQ(s[0].end, 400u);
  EXPECT_EQ(s[0].state, 'D');
  EXPECT_EQ(s[0].syscall, SYS_fsync);
  EXPECT_FALSE(s[0].woken);
  EXPECT_EQ(off_cpu_reason(s[0]), "[fsync D]");
  EXPECT_TRUE(s[1].runnable);
  EXPECT_EQ(off_cpu_reason(s[1]), "[runnable]");
  EXPECT_EQ(off_cpu_reason(s[2]), "[futex]");
  EXPECT_TRUE(s[2].woken);
  EXPECT_EQ(s[2].waker_tid, 77u);
  EXPECT_EQ(s[2].waker_pid, 70u);
  EXPECT_EQ(s[3].start, 1000u);
  EXPECT_EQ(s[3].end, 2000u);
  EXPECT_EQ(off_cpu_reason(s[3]), "[blocked]");
}

TEST(analysis_off_cpu, ReasonsWithoutASystemCall) {
  OffCpu o;
  o.state = 'S';
  EXPECT_EQ(off_cpu_reason(o), "[sleeping]");
  o.state = 'D';
  EXPECT_EQ(off_cpu_reason(o), "[uninterruptible]");
  o.state = 'T';
  EXPECT_EQ(off_cpu_reason(o), "[stopped]");
}

TEST(analysis_off_cpu, StateLettersAndSyscallNames) {
  EXPECT_EQ(sleep_state_letter(0), 'R');
  EXPECT_EQ(sleep_state_letter(0x100), 'R');
  EXPECT_EQ(sleep_state_letter(0x1), 'S');
  EXPECT_EQ(sleep_state_letter(0x2), 'D');
  EXPECT_EQ(sleep_state_letter(0x80), 'I');
  EXPECT_EQ(syscall_name(SYS_futex), "futex");
  EXPECT_EQ(syscall_name(SYS_read), "read");
  EXPECT_EQ(syscall_number("fsync"), SYS_fsync);
  EXPECT_EQ(syscall_name(99999), "syscall 99999");
  EXPECT_EQ(syscall_number("no_such_call"), -1);
}

// A major fault's event comes once the page is in: the stretches the thread
// blocked in uninterruptibly since the last fault or system call were that
// fault's. Not those inside a system call, nor preemptions, nor a sleep,
// nor a minor fault's; and only where the trace has the system calls.
TEST(analysis_off_cpu, AMajorFaultNamesTheWaitsBeforeIt) {
  const std::vector<SysEvent> events = {
      ev(SysKind::kSyscallEnter, 10, SYS_getpid),
      ev(SysKind::kSyscallExit, 20, SYS_getpid),
      ev(SysKind::kPageFault, 50, 0x1000, 0),  // minor: nothing before it
      ev(SysKind::kSleepState, 100, 0x2),
      ev(SysKind::kSwitchOutBlocked, 100),
      ev(SysKind::kSwitchIn, 200),
      ev(SysKind::kSwitchOutRunnable, 250),
      ev(SysKind::kSwitchIn, 260),
      ev(SysKind::kSleepState, 270, 0x2),
      ev(SysKind::kSwitchOutBlocked, 270),
      ev(SysKind::kSwitchIn, 300),
      ev(SysKind::kPageFault, 310, 0x2000, static_cast<int64_t>(format::kFaultMajor)),  // 100..200 and 270..300
      ev(SysKind::kSyscallEnter, 400, SYS_read),
      ev(SysKind::kSleepState, 410, 0x2),
      ev(SysKind::kSwitchOutBlocked, 410),
      ev(SysKind::kSwitchIn, 500),
      ev(SysKind::kPageFault, 505, 0x3000, static_cast<int64_t>(format::kFaultMajor | format::kFaultInKernel)),
      ev(SysKind::kSyscallExit, 510, SYS_read),
      ev(SysKind::kSleepState, 600, 0x2),
      ev(SysKind::kSwitchOutBlocked, 600),
      ev(SysKind::kSwitchIn, 700),
      ev(SysKind::kPageFault, 710, 0x4000, 0),  // minor: 600..700 stays [uninterruptible]
      ev(SysKind::kSleepState, 800, 0x1),
      ev(SysKind::kSwitchOutBlocked, 800),
      ev(SysKind::kSwitchIn, 850),
      ev(SysKind::kPageFault, 860, 0x5000, static_cast<int64_t>(format::kFaultMajor)),  // 800..850 slept (S): not it
  };
  const auto s = off_cpu_stretches(events, 1000, [](uint64_t ns) { return ns; });
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(off_cpu_reason(s[0]), "[major fault]");
  EXPECT_EQ(off_cpu_reason(s[1]), "[runnable]");
  EXPECT_EQ(off_cpu_reason(s[2]), "[major fault]");
  EXPECT_EQ(off_cpu_reason(s[3]), "[read D]");
  EXPECT_EQ(off_cpu_reason(s[4]), "[uninterruptible]");
  EXPECT_EQ(off_cpu_reason(s[5]), "[sleeping]");
  // Without the system calls in the trace, a D wait might have been in one.
  std::vector<SysEvent> no_calls;
  for (const SysEvent& e : events)
    if (e.kind != SysKind::kSyscallEnter && e.kind != SysKind::kSyscallExit) no_calls.push_back(e);
  for (const OffCpu& o : off_cpu_stretches(no_calls, 1000, [](uint64_t ns) { return ns; }))
    EXPECT_NE(off_cpu_reason(o), "[major fault]");
  EXPECT_EQ(fault_reason(0), "[minor fault]");
  EXPECT_EQ(fault_reason(format::kFaultMajor), "[major fault]");
  EXPECT_EQ(fault_reason(format::kFaultInKernel), "[minor fault in the kernel]");
}

// A D wait while a request the thread began is in flight is for the disk
// (named by its device); once the request is done, a D wait is not.
TEST(analysis_off_cpu, ADWaitWithTheThreadsRequestInFlightIsForTheDisk) {
  const uint64_t vda = 254u << 20;
  std::vector<SysEvent> events = {
      ev(SysKind::kSyscallEnter, 10, SYS_fsync),
      ev(SysKind::kIoStart, 20, vda, static_cast<int64_t>(format::kIoWrite)),
      ev(SysKind::kSleepState, 30, 0x2),
      ev(SysKind::kSwitchOutBlocked, 30),
      ev(SysKind::kIoDone, 90, vda),
      ev(SysKind::kSwitchIn, 100),
      ev(SysKind::kSleepState, 110, 0x2),
      ev(SysKind::kSwitchOutBlocked, 110),  // nothing in flight now: the journal, say
      ev(SysKind::kSwitchIn, 150),
      ev(SysKind::kSyscallExit, 160, SYS_fsync),
      ev(SysKind::kIoStart, 200, vda),
      ev(SysKind::kSleepState, 210, 0x2),
      ev(SysKind::kSwitchOutBlocked, 210),  // outside a system call: "[disk ...]"
      ev(SysKind::kIoDone, 255, vda),
      ev(SysKind::kSwitchIn, 260),
      ev(SysKind::kSleepState, 270, 0x1),
      ev(SysKind::kSwitchOutBlocked, 270),  // asleep (S): not the disk's
      ev(SysKind::kSwitchIn, 280),
  };
  events[1].args[0] = 2048;
  events[4].args[0] = 2048;
  events[10].args[0] = 4096;
  events[13].args[0] = 4096;
  const auto s = off_cpu_stretches(events, 1000, [](uint64_t ns) { return ns; });
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(off_cpu_reason(s[0], [](uint64_t dev) { return dev == (254u << 20) ? std::string("vda") : std::string("?"); }),
            "[fsync: disk vda]");
  EXPECT_EQ(off_cpu_reason(s[0]), "[fsync: disk 254:0]");
  EXPECT_EQ(off_cpu_reason(s[1]), "[fsync D]");
  EXPECT_EQ(off_cpu_reason(s[2]), "[disk 254:0]");
  EXPECT_EQ(off_cpu_reason(s[3]), "[sleeping]");
  EXPECT_EQ(io_reason(format::kIoWrite | format::kIoSync, "vda"), "[write vda]");
  EXPECT_EQ(io_reason(format::kIoFlush, "vda"), "[flush vda]");
  EXPECT_EQ(io_reason(0, "sdb"), "[read sdb]");
  EXPECT_EQ(io_kind_name(format::kIoFlush | format::kIoWrite | format::kIoSync | format::kIoFua), "write flush sync fua");
}

// Requests and completions are paired as the recorder pairs them: a
// completion goes with the latest request begun at its sector before it
// (one whose completion was lost does not take the next one's); a request
// never completed holds no D wait for the disk.
TEST(analysis_off_cpu, BlockRequestsArePairedLatestFirst) {
  const uint64_t vda = 254u << 20;
  std::vector<SysEvent> events = {
      ev(SysKind::kIoStart, 100, vda, static_cast<int64_t>(format::kIoWrite)),  // its completion lost
      ev(SysKind::kIoStart, 200, vda),                                           // a read of the same sector
      ev(SysKind::kIoDone, 250, vda),
      ev(SysKind::kIoStart, 300, vda),  // never completed either
      ev(SysKind::kSleepState, 310, 0x2),
      ev(SysKind::kSwitchOutBlocked, 310),
      ev(SysKind::kSwitchIn, 400),
      ev(SysKind::kIoDone, 50, vda),  // (out of order: before every start, it goes with none)
  };
  for (SysEvent& e : events) e.args[0] = 4096;
  const std::vector<IoRequest> r = block_io_requests(events);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_FALSE(r[0].done());
  EXPECT_TRUE(r[1].done());
  EXPECT_EQ(r[1].done_ns, 250u);
  EXPECT_FALSE(r[2].done());
  const auto s = off_cpu_stretches(events, 1000, [](uint64_t ns) { return ns; });
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(off_cpu_reason(s[0]), "[uninterruptible]");
  EXPECT_EQ(io_reason(format::kIoOther, "vda"), "[other vda]");
}

}  // namespace
}  // namespace callscope::analysis
