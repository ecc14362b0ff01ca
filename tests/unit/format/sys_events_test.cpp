// The kernel's events of a thread in a trace (format/sys_events.h,
// kSysEvents blocks of trace 1.9): written and read back through a real
// trace file, put with their thread by pid and tid, times on the trace's
// clock; a payload whose columns do not add up, or with an unknown kind,
// is damage the reader names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "format/sys_events.h"
#include "format/trace_reader.h"
#include "trace_test_util.h"

namespace callscope::format {
namespace {

std::vector<SysEvent> sample() {
  return {{SysKind::kSwitchOutBlocked, 1'000'000'100, 1},
          {SysKind::kSwitchIn, 1'000'050'000, 0},
          {SysKind::kSwitchOutRunnable, 1'000'060'000, 0},
          {SysKind::kLost, 1'000'060'000, 7},
          {SysKind::kSwitchIn, 1'010'000'000, 1}};
}

TEST(format_sys_events, ColumnsRoundTrip) {
  const std::vector<SysEvent> in = sample();
  const std::vector<uint8_t> payload = encode_sys_events(in);
  std::vector<SysEvent> out;
  ASSERT_TRUE(decode_sys_events(payload, static_cast<uint32_t>(in.size()), in.front().mono_ns, out).ok());
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].kind, in[i].kind) << i;
    EXPECT_EQ(out[i].mono_ns, in[i].mono_ns) << i;
    EXPECT_EQ(out[i].arg, in[i].arg) << i;
  }
}

// 1.10's kinds carry more than one value: a system call's number and six
// arguments, its result (negative: an errno), a waker's tid and pid.
TEST(format_sys_events, SyscallsStatesAndWakersRoundTrip) {
  std::vector<SysEvent> in(5);
  in[0] = {SysKind::kSyscallEnter, 1'000'000'000, 202};
  const uint64_t args[6] = {0x7ffd12345678, 0x80, 2, 0, ~uint64_t{0}, 1};
  std::copy(std::begin(args), std::end(args), in[0].args);
  in[1] = {SysKind::kSleepState, 1'000'000'010, 0x2};
  in[2] = {SysKind::kSwitchOutBlocked, 1'000'000'010, 1};
  in[3] = {SysKind::kWakeup, 1'000'900'000, 4321};
  in[3].value = 4300;
  in[4] = {SysKind::kSyscallExit, 1'001'000'000, 202};
  in[4].value = -11;  // -EAGAIN
  const std::vector<uint8_t> payload = encode_sys_events(in);
  std::vector<SysEvent> out;
  ASSERT_TRUE(decode_sys_events(payload, 5, in.front().mono_ns, out).ok());
  ASSERT_EQ(out.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(out[i].kind, in[i].kind) << i;
    EXPECT_EQ(out[i].mono_ns, in[i].mono_ns) << i;
    EXPECT_EQ(out[i].arg, in[i].arg) << i;
    EXPECT_EQ(out[i].value, in[i].value) << i;
    for (int a = 0; a < 6; ++a) EXPECT_EQ(out[i].args[a], in[i].args[a]) << i << " " << a;
  }
  // A system call cut short in its arguments is damage, named.
  std::vector<uint8_t> cut = payload;
  SysColumnsHeader h;
  std::memcpy(&h, cut.data(), sizeof h);
  h.arg_bytes -= 1;
  cut.pop_back();
  std::memcpy(cut.data(), &h, sizeof h);
  out.clear();
  const Status st = decode_sys_events(cut, 5, in.front().mono_ns, out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("ends before event 4"), std::string::npos) << st.error().message();
}

// 1.11: a page fault's address, instruction and flags.
TEST(format_sys_events, PageFaultsRoundTrip) {
  std::vector<SysEvent> in(2);
  in[0] = {SysKind::kPageFault, 2'000'000'000, 0x7f0012345000};
  in[0].args[0] = 0x401136;
  in[1] = {SysKind::kPageFault, 2'000'000'500, 0x55550000};
  in[1].args[0] = 0xffffffff81234567;
  in[1].value = static_cast<int64_t>(kFaultMajor | kFaultInKernel);
  std::vector<SysEvent> out;
  ASSERT_TRUE(decode_sys_events(encode_sys_events(in), 2, in.front().mono_ns, out).ok());
  ASSERT_EQ(out.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(out[i].kind, SysKind::kPageFault) << i;
    EXPECT_EQ(out[i].mono_ns, in[i].mono_ns) << i;
    EXPECT_EQ(out[i].arg, in[i].arg) << i;
    EXPECT_EQ(out[i].args[0], in[i].args[0]) << i;
    EXPECT_EQ(out[i].value, in[i].value) << i;
  }
}

// 1.12: a block request begun (device, sector, bytes, kind) and its
// completion (device, sector, error).
TEST(format_sys_events, BlockIoRoundTrip) {
  std::vector<SysEvent> in(3);
  in[0] = {SysKind::kIoStart, 4'000'000'000, 254u << 20};
  in[0].args[0] = 365183440;
  in[0].args[1] = 4096;
  in[0].value = static_cast<int64_t>(kIoWrite | kIoSync);
  in[1] = {SysKind::kIoDone, 4'000'050'000, 254u << 20};
  in[1].args[0] = 365183440;
  in[1].value = -5;  // EIO
  in[2] = {SysKind::kIoStart, 4'000'060'000, (8u << 20) | 1};
  in[2].args[0] = ~uint64_t{0};
  std::vector<SysEvent> out;
  ASSERT_TRUE(decode_sys_events(encode_sys_events(in), 3, in.front().mono_ns, out).ok());
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].kind, in[i].kind) << i;
    EXPECT_EQ(out[i].mono_ns, in[i].mono_ns) << i;
    EXPECT_EQ(out[i].arg, in[i].arg) << i;
    EXPECT_EQ(out[i].args[0], in[i].args[0]) << i;
    EXPECT_EQ(out[i].value, in[i].value) << i;
  }
  EXPECT_EQ(out[0].args[1], 4096u);
}

// A CPU sample: its instruction, and its period (ns, times two, plus one
// in the kernel).
TEST(format_sys_events, SamplesRoundTrip) {
  std::vector<SysEvent> in(2);
  in[0] = {SysKind::kSample, 3'000'000'000, 0x401136};
  in[0].value = 1'001'001 * 2;
  in[1] = {SysKind::kSample, 3'001'001'001, 0xffffffff81234567};
  in[1].value = 1'001'001 * 2 + 1;
  std::vector<SysEvent> out;
  ASSERT_TRUE(decode_sys_events(encode_sys_events(in), 2, in.front().mono_ns, out).ok());
  ASSERT_EQ(out.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(out[i].kind, SysKind::kSample) << i;
    EXPECT_EQ(out[i].mono_ns, in[i].mono_ns) << i;
    EXPECT_EQ(out[i].arg, in[i].arg) << i;
    EXPECT_EQ(out[i].value, in[i].value) << i;
  }
}

TEST(format_sys_events, DamageIsNamed) {
  const std::vector<SysEvent> in = sample();
  std::vector<uint8_t> payload = encode_sys_events(in);
  std::vector<SysEvent> out;
  // The block says one event more than the columns hold.
  auto st = decode_sys_events(payload, static_cast<uint32_t>(in.size() + 1), 0, out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("columns do not add up"), std::string::npos) << st.error().message();
  // An unknown kind.
  payload[sizeof(SysColumnsHeader) + 2] = 99;
  st = decode_sys_events(payload, static_cast<uint32_t>(in.size()), 0, out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("unknown kind 99"), std::string::npos) << st.error().message();
  // Cut short.
  payload.resize(payload.size() - 1);
  EXPECT_FALSE(decode_sys_events(payload, static_cast<uint32_t>(in.size()), 0, out).ok());
}

// A trace with one thread (pid 4000, tid 4000) and a kSysEvents block of
// it, and one of another thread that is not in the trace.
TEST(format_sys_events, TheReaderPutsThemWithTheirThread) {
  test::TempDir dir;
  const std::string path = dir.file("sys.trace");
  ASSERT_TRUE(test::write_small_trace(path, {test::sample_stream(0, 10)}));
  // Readers index every block, wherever it is.
  std::vector<uint8_t> file = test::read_all(path);
  const std::vector<uint8_t> payload = encode_sys_events(sample());
  const auto n = static_cast<uint32_t>(sample().size());
  test::append_block(file, BlockType::kSysEvents, 4000, n, sample().front().mono_ns, payload, 0, 0, 4000);
  test::append_block(file, BlockType::kSysEvents, 4001, n, sample().front().mono_ns, payload, 0, 0, 4000);
  test::write_all(path, file);
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE((*r)->has_sys_events());
  auto ev = (*r)->sys_events(0);
  ASSERT_TRUE(ev) << ev.error().message();
  EXPECT_EQ(ev->size(), sample().size());  // the tid 2 block is not this thread's
  EXPECT_TRUE((*r)->problems().empty());
}

// A damaged block of them is named among the problems, and the rest read.
TEST(format_sys_events, ADamagedBlockIsAProblemNamed) {
  test::TempDir dir;
  const std::string path = dir.file("sys.trace");
  ASSERT_TRUE(test::write_small_trace(path, {test::sample_stream(0, 10)}));
  std::vector<uint8_t> file = test::read_all(path);
  std::vector<uint8_t> payload = encode_sys_events(sample());
  const auto n = static_cast<uint32_t>(sample().size());
  test::append_block(file, BlockType::kSysEvents, 4000, n, sample().front().mono_ns, payload, 0, 0, 4000);
  payload[sizeof(SysColumnsHeader)] = 42;  // the first kind
  test::append_block(file, BlockType::kSysEvents, 4000, n, sample().back().mono_ns, payload, 0, 0, 4000);
  test::write_all(path, file);
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r) << r.error().message();
  auto ev = (*r)->sys_events(0);
  ASSERT_TRUE(ev) << ev.error().message();
  EXPECT_EQ(ev->size(), sample().size());
  ASSERT_EQ((*r)->problems().size(), 1u);
  EXPECT_NE((*r)->problems()[0].find("unknown kind 42"), std::string::npos) << (*r)->problems()[0];
}

}  // namespace
}  // namespace callscope::format
