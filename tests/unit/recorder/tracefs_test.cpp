// Tracepoint layouts read from tracefs's format files (recorder/tracefs.h):
// fields found by name with their offsets and sizes, values read from a
// raw record at those offsets (sign kept), a short record gives 0, a file
// without an ID is refused; on this machine, the sched and raw_syscalls
// tracepoints the recorder opens are found (when tracefs may be read).
#include "recorder/tracefs.h"

#include "format/trace_format.h"
#include "recorder/perf_rings.h"
#include "recorder/trace_instance.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace callscope::recorder {
namespace {

constexpr const char* kSwitchFormat =
    "name: sched_switch\n"
    "ID: 372\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
    "\n"
    "print fmt: \"prev_comm=%s\", REC->prev_comm\n";

TEST(recorder_tracefs, FieldsByNameAndValuesFromARawRecord) {
  auto t = parse_tracepoint_format(kSwitchFormat);
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->id, 372u);
  ASSERT_EQ(t->fields.count("prev_state"), 1u);
  EXPECT_EQ(t->fields.at("prev_state").offset, 32u);
  EXPECT_EQ(t->fields.at("prev_state").size, 8u);
  EXPECT_EQ(t->fields.at("prev_comm").size, 16u);  // "[16]" is not part of the name
  std::vector<uint8_t> raw(40, 0);
  const int32_t pid = -7;
  const int64_t state = 0x102;
  std::memcpy(raw.data() + 24, &pid, 4);
  std::memcpy(raw.data() + 32, &state, 8);
  EXPECT_EQ(t->get(raw.data(), raw.size(), "prev_pid"), -7);
  EXPECT_EQ(t->get(raw.data(), raw.size(), "prev_state"), 0x102);
  EXPECT_EQ(t->get(raw.data(), 36, "prev_state"), 0);  // the record ends inside the field
  EXPECT_EQ(t->get(raw.data(), raw.size(), "next_pid"), 0);
}

TEST(recorder_tracefs, AFormatWithoutAnIdIsRefused) {
  auto t = parse_tracepoint_format("name: x\nformat:\n");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message().find("no ID"), std::string::npos);
}

TEST(recorder_tracefs, TheRecordersTracepointsAreOnThisKernel) {
  if (!tracefs_dir()) GTEST_SKIP() << tracefs_dir().error().message();
  for (auto [system, name, field] : {std::tuple{"sched", "sched_switch", "prev_state"},
                                     std::tuple{"sched", "sched_waking", "pid"},
                                     std::tuple{"raw_syscalls", "sys_enter", "args"},
                                     std::tuple{"raw_syscalls", "sys_exit", "ret"}}) {
    auto t = read_tracepoint(system, name);
    ASSERT_TRUE(t) << t.error().message();
    EXPECT_GT(t->id, 0u) << name;
    EXPECT_EQ(t->fields.count(field), 1u) << name;
  }
  auto none = read_tracepoint("sched", "no_such_event");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("no tracepoint sched:no_such_event"), std::string::npos);
}

// The kernel's rwbs letters as a request's kind, and a block_rq_complete
// line of trace_pipe as its fields (what follows the count varies by
// kernel; a line that is not one is refused).
TEST(recorder_tracefs, BlockRequestKindsAndCompletionLines) {
  EXPECT_EQ(block_io_kind("WS", 10), format::kIoWrite | format::kIoSync);
  EXPECT_EQ(block_io_kind("FWFS", 10), format::kIoFlush | format::kIoWrite | format::kIoFua | format::kIoSync);
  EXPECT_EQ(block_io_kind("F", 10), format::kIoFlush);
  EXPECT_EQ(block_io_kind("FF", 10), format::kIoFlush);  // a flush first, then the flush itself
  EXPECT_EQ(block_io_kind("RA", 10), 0u);
  EXPECT_EQ(block_io_kind("WSM", 10), format::kIoWrite | format::kIoSync | format::kIoMeta);
  EXPECT_EQ(block_io_kind("DE", 10), format::kIoDiscard);
  EXPECT_EQ(block_io_kind("N", 10), format::kIoOther);  // write-zeroes, zone management
  const char unended[4] = {'W', 'S', 'M', 'S'};  // no NUL within the field: its size bounds it
  EXPECT_EQ(block_io_kind(unended, 2), format::kIoWrite | format::kIoSync);
  BlockCompletion c;
  ASSERT_TRUE(parse_block_completion("254,0 WS () 365183976 + 8 be,0,4 [0]", c));
  EXPECT_EQ(c.dev, (254u << 20) | 0);
  EXPECT_EQ(c.sector, 365183976u);
  EXPECT_EQ(c.error, 0);
  ASSERT_TRUE(parse_block_completion("8,16 R () 2048 + 16 [-5]", c));  // an older kernel's, with an error
  EXPECT_EQ(c.dev, (8u << 20) | 16);
  EXPECT_EQ(c.sector, 2048u);
  EXPECT_EQ(c.error, -5);
  EXPECT_FALSE(parse_block_completion("254,0 WS 365183976", c));
  EXPECT_FALSE(parse_block_completion("garbage", c));
}

}  // namespace
}  // namespace callscope::recorder
