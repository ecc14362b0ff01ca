// The recorder streams the trace while the program runs (format/live_stream.h).
// What must hold: every event the program made is in the trace or counted
// as lost, where it was lost; a recorder killed mid-run loses nothing it had
// taken; many busy threads on two cores make the program wait, not drop.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>

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
                             // What it had streamed, as it left it.
                             "cp '" + dir_.path() + "'/never.trace.tmp.* '" + dir_.file("streamed.copy") + "'; "
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
  // What the recorder had streamed before it died is there: every call of
  // it (counted in the copy taken right after the kill), and more -- the
  // rings' last segments. (100 KB of trace is several rings' worth at any
  // rate, so a finish that kept only the rings would fall short; the
  // count, not a rate of bytes per call, is the test: that rate varies.)
  const uint64_t streamed = entries_streamed(dir_.file("streamed.copy"));
  EXPECT_GT(streamed, 0u);
  EXPECT_GE(t.entries, streamed);
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

// A recorder that cannot keep up (it drains every 200 ms: a test knob, so
// that the program must wait) makes the program's thread wait inside hooks.
// The trace marks each wait -- as many as the runtime counted, which
// record's summary prints -- and the reports take that time out of the
// calls it happened in: every call of work() lasts its span less the waits
// inside it (worked out here from the events), the waits are a row of
// their own, and the thread's time still adds up. (Unmarked, a 3 ns leaf
// once showed a 1.95 s MAX.)
TEST_P(StreamTest, WaitsForTheRecorderAreMarkedAndTakenOutOfTheCalls) {
  const std::string trace = dir_.file("wait.trace");
  RunResult r = run({"env", "CALLSCOPE_TEST_DRAIN_INTERVAL_MS=200", CALLSCOPE_EXE, "record", "-o", trace, "--",
                     fixture(GetParam(), "steady"), "1", "1000000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string said = "for the recorder to keep up (";
  const size_t at = r.err.find(said);
  ASSERT_NE(at, std::string::npos) << "the program never waited: " << r.err;
  const uint64_t waits = std::stoull(r.err.substr(at + said.size()));
  ASSERT_GT(waits, 0u);
  EXPECT_NE(r.err.find("the trace marks each wait"), std::string::npos) << r.err;

  TraceSummary s = summarize(trace);
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(s.threads[0].waits, waits);
  EXPECT_EQ(s.threads[0].lost, 0u);
  EXPECT_TRUE(s.threads[0].balanced());
  // Each function's longest call, less the waits inside it, from the events.
  struct Open {
    uint64_t addr, entry, waited;
  };
  std::vector<Open> open;
  std::map<uint64_t, uint64_t> max_ticks, entries;
  uint64_t outermost = 0;
  ASSERT_TRUE(s.reader->for_each_event(0, [&](const format::TraceEvent& e) {
                        if (format::is_entry(e.kind)) {
                          if (open.empty()) outermost = e.addr;
                          open.push_back({e.addr, e.tick, 0});
                          ++entries[e.addr];
                        } else if (format::is_exit(e.kind) && !open.empty()) {
                          const Open& o = open.back();
                          uint64_t& m = max_ticks[o.addr];
                          m = std::max(m, e.tick - o.entry - o.waited);
                          open.pop_back();
                        } else if (e.kind == format::EventKind::kWait) {
                          for (Open& o : open) o.waited += e.arg;
                        }
                        return true;
                      }).ok());
  uint64_t work = 0;
  for (const auto& [addr, n] : entries)
    if (n > entries[work]) work = addr;
  ASSERT_EQ(entries[work], 1000000u);

  auto rows = flat_report(trace);
  ASSERT_TRUE(rows.count("[waited for recorder]")) << "no row for the waits";
  EXPECT_EQ(num(rows["[waited for recorder]"], "calls"), waits);
  EXPECT_EQ(num(rows["work"], "calls"), 1000000u);
  const double want_max = s.reader->ticks_to_ns(max_ticks[work]);
  EXPECT_NEAR(static_cast<double>(num(rows["work"], "max_ns")), want_max, 1.0);
  // main, the one outermost call, less every wait: the waits are not its time.
  EXPECT_EQ(entries[outermost], 1u);
  EXPECT_NEAR(static_cast<double>(num(rows["main"], "total_ns")), s.reader->ticks_to_ns(max_ticks[outermost]), 1.0);
  EXPECT_GE(static_cast<double>(num(rows["[waited for recorder]"], "total_ns")) + 1.0,
            s.reader->ticks_to_ns(s.threads[0].wait_ticks));
  RunResult rep = callscope({"report", trace});
  EXPECT_NE(rep.err.find("that time is the tracer's, taken out of the calls it happened in"), std::string::npos)
      << rep.err;
  RunResult replay = callscope({"replay", "--format", "csv", trace});
  size_t lines = 0;
  for (size_t p = replay.out.find(",wait,"); p != std::string::npos; p = replay.out.find(",wait,", p + 1)) ++lines;
  EXPECT_EQ(lines, waits);
}

INSTANTIATE_TEST_SUITE_P(Compilers, StreamTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
