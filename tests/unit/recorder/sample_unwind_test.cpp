// SampleUnwinder (sample_unwind.h) on a stack of this process: the
// registers and the top of the stack taken at a known point, three calls
// deep, as the kernel gives them with a sample; the frames unwound are
// those calls', innermost first.
#include "recorder/sample_unwind.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace callscope::recorder {
namespace {

#if defined(__x86_64__)

struct Taken {
  uint64_t regs[17] = {};
  std::vector<uint8_t> stack;
};

// Bytes of other frames, as the kernel copies them (their redzones, under
// AddressSanitizer, too).
__attribute__((no_sanitize_address)) void copy_raw(uint8_t* to, const uint8_t* from, size_t n) {
  for (size_t i = 0; i < n; ++i) to[i] = from[i];
}

// The bytes from `sp` to the end of this thread's stack, at most `max`.
std::vector<uint8_t> copy_stack(uint64_t sp, size_t max) {
  pthread_attr_t attr;
  void* base = nullptr;
  size_t size = 0;
  pthread_getattr_np(pthread_self(), &attr);
  pthread_attr_getstack(&attr, &base, &size);
  pthread_attr_destroy(&attr);
  const uint64_t top = reinterpret_cast<uint64_t>(base) + size;
  const size_t n = std::min<uint64_t>(max, top - sp);
  std::vector<uint8_t> out(n);
  copy_raw(out.data(), reinterpret_cast<const uint8_t*>(sp), n);
  return out;
}

extern "C" __attribute__((noinline)) void take_here(Taken* t) {
  uint64_t ip, sp, bp;
  // ip: the instruction after the lea, where the frame is as at the lea
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
  t->regs[6] = bp;
  t->regs[7] = sp;
  t->regs[8] = ip;
  t->stack = copy_stack(sp, SampleUnwinder::kStackBytes);
  asm volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void middle_caller(Taken* t) {
  take_here(t);
  asm volatile("" ::: "memory");  // (a call, not a jump)
}

extern "C" __attribute__((noinline)) void outer_caller(Taken* t) {
  middle_caller(t);
  asm volatile("" ::: "memory");
}

bool within(uint64_t addr, void (*f)(Taken*)) {
  const auto start = reinterpret_cast<uint64_t>(f);
  return addr > start && addr < start + 512;
}

// A stack taken three calls deep, and an unwinder of this process.
class SampleUnwinderTest : public ::testing::Test {
 protected:
  void SetUp() override { outer_caller(&t_); }
  // The stack taken (its first `size` bytes; 0: all of it) as a sample of
  // `pid`/`tid` at `time_ns`.
  uint32_t unwind(pid_t pid, pid_t tid, uint64_t time_ns, size_t size = 0) {
    return u_.unwind(pid, tid, time_ns, false, t_.regs, t_.stack.data(), size ? size : t_.stack.size(), frames_,
                     cut_);
  }
  uint32_t unwind_self(uint64_t time_ns, size_t size = 0) { return unwind(pid_, tid_, time_ns, size); }
  void expect_the_callers(uint32_t n) {
    ASSERT_GE(n, 2u);
    EXPECT_TRUE(within(frames_[0], middle_caller)) << std::hex << frames_[0];
    EXPECT_TRUE(within(frames_[1], outer_caller)) << std::hex << frames_[1];
  }
  const pid_t pid_ = ::getpid();
  const pid_t tid_ = static_cast<pid_t>(::syscall(SYS_gettid));
  Taken t_;
  SampleUnwinder u_;
  uint64_t frames_[SampleUnwinder::kMaxFrames];
  bool cut_ = false;
};

TEST_F(SampleUnwinderTest, UnwindsACopyOfTheStackByTheModulesRules) {
  ASSERT_FALSE(t_.stack.empty());
  expect_the_callers(unwind_self(1));
}

TEST_F(SampleUnwinderTest, AStackPastTheCopyIsSaidToBeCut) {
  // Only the first 16 bytes: the callers' frames are past them.
  const uint32_t n = unwind_self(1, 16);
  EXPECT_TRUE(cut_);
  EXPECT_LE(n, 1u);
}

TEST_F(SampleUnwinderTest, AProcessItCannotReadGivesNoFrames) {
  // No such process (pid_max is at most 2^22): its modules are not known.
  EXPECT_EQ(unwind(1 << 23, 1 << 23, 1), 0u);
  EXPECT_TRUE(cut_);
}

// The modules as the kernel's records tell them (record: an exec, then
// each executable mapping), not read from /proc: the same frames, and a
// sample from before the exec is not unwound against the image after it.
TEST_F(SampleUnwinderTest, ModulesToldByTheKernelsRecords) {
  u_.exec(pid_, 1000);
  std::ifstream maps("/proc/self/maps");
  int told = 0;
  for (std::string line; std::getline(maps, line);) {
    unsigned long lo = 0, hi = 0, off = 0;
    char perms[8] = {};
    int at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &at) < 4 || perms[2] != 'x' ||
        at <= 0 || static_cast<size_t>(at) >= line.size())
      continue;
    u_.mapped(pid_, lo, hi - lo, off, line.substr(static_cast<size_t>(at)));
    ++told;
  }
  ASSERT_GT(told, 2);
  expect_the_callers(unwind_self(2000));
  EXPECT_FALSE(cut_);
  EXPECT_EQ(unwind_self(999), 0u);
  EXPECT_TRUE(cut_);
}

#endif

}  // namespace
}  // namespace callscope::recorder
