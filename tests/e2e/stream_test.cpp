// The recorder streams the trace while the program runs (format/live_stream.h).
// What must hold: every event the program made is in the trace or counted
// as lost, where it was lost; a recorder killed mid-run loses nothing it had
// taken; many busy threads on two cores make the program wait, not drop.
#include <gtest/gtest.h>
#include <unistd.h>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

class StreamTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
};

// Entries and exits the trace holds plus the events it counts as lost: all
// the program made. Besides work(), each function (main, loop; clang -O2
// also instruments the inline atoi/atol of glibc's headers) is entered once
// per thread before anything can be dropped, and returns once.
void expect_every_event_accounted(const TraceSummary& s, uint64_t work_calls) {
  uint64_t recorded = 0, lost = 0, entries = 0;
  for (const ThreadSummary& t : s.threads) {
    recorded += t.entries + t.exits;
    entries += t.entries;
    lost += t.lost;
  }
  const uint64_t others = entries - s.calls_of("work");
  EXPECT_EQ(recorded + lost, 2 * work_calls + 2 * others);
}

TEST_P(StreamTest, ARecorderKilledMidRunLosesNothingItHadTaken) {
  // A copy under a name of its own, to wait for it by name.
  const std::string prog = dir_.file("stdy" + std::to_string(::getpid() % 100000));
  ASSERT_EQ(run({"cp", fixture(GetParam(), "steady"), prog}).exit_code, 0);
  const std::string raw = dir_.file("raw");
  ASSERT_EQ(run({"mkdir", raw}).exit_code, 0);
  const std::string name = prog.substr(prog.rfind('/') + 1);
  const std::string script = "'" + std::string(CALLSCOPE_EXE) + "' record --raw-dir '" + raw + "' -o '" +
                             dir_.file("never.trace") + "' -- '" + prog +
                             "' 1 20000000 >/dev/null & rec=$!; "
                             // Kill it once it has streamed 100 KB of trace (about half a million calls).
                             "n=0; while [ $(cat '" + dir_.path() + "'/never.trace.tmp.* 2>/dev/null | wc -c) -lt 100000 ] "
                             "&& [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done; kill -9 $rec; wait $rec; "
                             "while pgrep -x '" + name + "' >/dev/null; do sleep 0.05; done; '" +
                             std::string(CALLSCOPE_EXE) + "' finish -o '" + dir_.file("t.trace") + "' '" + raw +
                             "'/callscope-*";
  RunResult r = run({"/bin/sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("events were lost"), std::string::npos) << r.err;
  TraceSummary s = summarize(dir_.file("t.trace"));
  ASSERT_EQ(s.threads.size(), 1u);
  const ThreadSummary& t = s.threads[0];
  EXPECT_TRUE(t.balanced());
  // The writer dropped once the recorder was gone: the stream ends in a loss.
  EXPECT_GT(t.lost, 0u);
  EXPECT_EQ(t.lost, s.reader->threads()[0].record.lost_events);
  EXPECT_EQ(t.inherited, 0u);
  // More than a ring holds (about 170,000 calls): what the recorder had
  // streamed before it died is there.
  EXPECT_GT(s.calls_of("work"), 400000u);
  expect_every_event_accounted(s, 20000000);
  // The dead recorder's unfinished trace went into this one, and is gone.
  EXPECT_NE(run({"/bin/sh", "-c", "ls '" + dir_.path() + "'/never.trace.tmp.*"}).exit_code, 0);
  // Every reader says so.
  RunResult rep = callscope({"report", dir_.file("t.trace")});
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.err.find("lost"), std::string::npos) << rep.err;
}

// The same, but the dead recorder's trace file is gone too: finish says
// so, keeps what the rings hold, and marks what it cannot have as lost.
TEST_P(StreamTest, WithoutTheDeadRecordersTraceTheRingsAreKeptAndTheRestMarkedLost) {
  const std::string prog = dir_.file("stdz" + std::to_string(::getpid() % 100000));
  ASSERT_EQ(run({"cp", fixture(GetParam(), "steady"), prog}).exit_code, 0);
  const std::string raw = dir_.file("raw");
  ASSERT_EQ(run({"mkdir", raw}).exit_code, 0);
  const std::string name = prog.substr(prog.rfind('/') + 1);
  const std::string script = "'" + std::string(CALLSCOPE_EXE) + "' record --raw-dir '" + raw + "' -o '" +
                             dir_.file("never.trace") + "' -- '" + prog + "' 1 5000000 >/dev/null & rec=$!; " +
                             "n=0; while [ $(cat '" + dir_.path() + "'/never.trace.tmp.* 2>/dev/null | wc -c) -lt 20000 ] "
                             "&& [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done; kill -9 $rec; wait $rec; "
                             "while pgrep -x '" + name + "' >/dev/null; do sleep 0.05; done; rm -f '" + dir_.path() +
                             "'/never.trace.tmp.*; '" + std::string(CALLSCOPE_EXE) + "' finish -o '" +
                             dir_.file("t.trace") + "' '" + raw + "'/callscope-*";
  RunResult r = run({"/bin/sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;
  TraceSummary s = summarize(dir_.file("t.trace"));
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_GT(s.threads[0].lost, 0u);
  EXPECT_GT(s.calls_of("work"), 0u);
}

// 64 threads busy on two cores: the recorder falls behind, the program
// waits, and nothing is lost (it used to give up after 10 s of waiting).
// The recorder's side does not depend on the compiler: one variant.
std::string one_variant() {
  const auto vs = variants();
  for (const std::string& v : vs)
    if (v == "gcc-O2") return v;
  return vs.empty() ? "" : vs.front();
}

TEST(StreamRecorder, ManyBusyThreadsWaitInsteadOfLosingEvents) {
  TempDir dir;
  const std::string trace = dir.file("t.trace");
  RunResult r = callscope({"record", "-o", trace, "--", fixture(one_variant(), "steady"), "64", "200000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("lost"), std::string::npos) << r.err;
  TraceSummary s = summarize(trace);
  ASSERT_EQ(s.threads.size(), 64u);
  for (const ThreadSummary& t : s.threads) {
    EXPECT_TRUE(t.balanced());
    EXPECT_EQ(t.lost, 0u);
  }
  EXPECT_EQ(s.calls_of("work"), 64u * 200000u);
  EXPECT_EQ(s.calls_of("loop"), 64u);
}

// --drop-when-behind: whatever is dropped is counted where it happened, and
// every event is in the trace or in a count.
TEST(StreamRecorder, DropWhenBehindMarksEveryLoss) {
  TempDir dir;
  const std::string trace = dir.file("t.trace");
  RunResult r =
      callscope({"record", "--drop-when-behind", "-o", trace, "--", fixture(one_variant(), "steady"), "16", "500000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceSummary s = summarize(trace);
  ASSERT_EQ(s.threads.size(), 16u);
  for (size_t i = 0; i < s.threads.size(); ++i) {
    EXPECT_TRUE(s.threads[i].balanced()) << i;
    EXPECT_EQ(s.threads[i].lost, s.reader->threads()[i].record.lost_events) << i;
  }
  expect_every_event_accounted(s, 16u * 500000u);
}

INSTANTIATE_TEST_SUITE_P(Compilers, StreamTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
