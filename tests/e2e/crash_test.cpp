// Nothing recorded is lost: a program that segfaults, aborts, calls _exit or
// is killed with SIGKILL leaves every call it made in the trace, and the trace
// says how it ended. record itself ends as the program did.
#include <signal.h>

#include <gtest/gtest.h>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

using format::ExitHow;

struct CrashCase {
  const char* how;
  ExitHow exit_how;
  int code_or_signal;
};

class CrashTest : public ::testing::TestWithParam<std::tuple<std::string, CrashCase>> {};

TEST_P(CrashTest, EveryCallBeforeTheEndIsInTheTrace) {
  const auto& [variant, c] = GetParam();
  TempDir dir;
  const std::string trace = dir.file("crash.trace");
  RunResult r = callscope({"record", "-o", trace, "--", fixture(variant, "crash"), c.how});
  if (c.exit_how == ExitHow::kSignaled) {
    EXPECT_EQ(r.term_signal, c.code_or_signal) << "record must end as the program did; stderr: " << r.err;
  } else {
    EXPECT_EQ(r.exit_code, c.code_or_signal) << r.err;
  }
  TraceSummary s = summarize(trace);
  ASSERT_TRUE(s.reader);
  EXPECT_EQ(s.calls_of("work"), 12345u);
  EXPECT_EQ(s.calls_of("nest"), 4u);
  EXPECT_EQ(s.calls_of("die"), 1u);
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_TRUE(s.threads[0].balanced());
  const auto& info = s.reader->info().record;
  EXPECT_EQ(info.main_how, static_cast<uint32_t>(c.exit_how));
  if (c.exit_how == ExitHow::kSignaled) {
    EXPECT_EQ(info.main_signal, c.code_or_signal);
    // main, 4 x nest and die were open when the process died.
    EXPECT_EQ(s.threads[0].truncated, 6u);
  } else {
    EXPECT_EQ(info.main_code, c.code_or_signal);
  }
  RunResult shown = callscope({"info", trace});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  const std::string expected = c.exit_how == ExitHow::kSignaled
                                   ? "killed by SIG" + std::string(sigabbrev_np(c.code_or_signal))
                                   : "exit code " + std::to_string(c.code_or_signal);
  EXPECT_NE(shown.out.find("ended:      " + expected), std::string::npos) << shown.out;
}

const CrashCase kCases[] = {
    {"segv", ExitHow::kSignaled, SIGSEGV},
    {"abort", ExitHow::kSignaled, SIGABRT},
    {"sigkill", ExitHow::kSignaled, SIGKILL},
    {"_exit", ExitHow::kExited, 3},
    {"exit3", ExitHow::kExited, 3},
};

INSTANTIATE_TEST_SUITE_P(Endings, CrashTest,
                         ::testing::Combine(::testing::ValuesIn(variants()), ::testing::ValuesIn(kCases)),
                         [](const auto& param_info) {
                           return variant_test_name(std::get<0>(param_info.param) + "_" +
                                                    std::get<1>(param_info.param).how);
                         });

// SIGKILL from outside, while the program is busy: record itself stays
// alive, sees the death, and writes the trace.
TEST(CrashFromOutside, KilledWhileRunning) {
  const auto vs = variants();
  ASSERT_FALSE(vs.empty());
  TempDir dir;
  const std::string trace = dir.file("killed.trace");
  // A copy under a name of its own, so that pkill hits nothing else; with
  // a huge count it runs for minutes unless killed.
  const std::string victim = dir.file("cs_victim");
  ASSERT_EQ(run({"cp", fixture(vs.front(), "threads"), victim}).exit_code, 0);
  const std::string script = "'" + std::string(CALLSCOPE_EXE) + "' record -o '" + trace + "' -- '" + victim +
                             "' 2 2000000000 & rec=$!; sleep 1; pkill -KILL -x cs_victim; wait $rec; echo rc=$?";
  RunResult r = run({"/bin/sh", "-c", script});
  EXPECT_NE(r.out.find("rc=137"), std::string::npos) << r.out << r.err;
  TraceSummary s = summarize(trace);
  ASSERT_TRUE(s.reader);
  EXPECT_EQ(s.reader->info().record.main_signal, SIGKILL);
  EXPECT_GT(s.calls_of("leaf"), 100000u);
  for (const auto& t : s.threads) EXPECT_TRUE(t.balanced());
}

// The recorder itself killed while the program runs: the program goes on
// (once its ring is full and nobody drains it, its events are counted as
// lost, it does not wait), and `finish` recovers everything written before,
// from the spill files and the rings.
TEST(CrashFromOutside, RecorderKilledWhileRunning) {
  const auto vs = variants();
  ASSERT_FALSE(vs.empty());
  TempDir dir;
  const std::string victim = dir.file("cs_victim2");
  ASSERT_EQ(run({"cp", fixture(vs.front(), "threads"), victim}).exit_code, 0);
  const std::string script = "'" + std::string(CALLSCOPE_EXE) + "' record --raw-dir '" + dir.path() + "' -o '" +
                             dir.file("never.trace") + "' -- '" + victim +
                             "' 1 2000000000 & rec=$!; "
                             // Once it has streamed 200 KB of trace (about a million calls; the trace is
                             // written while the program runs), or after 10 s on a very busy machine.
                             "n=0; while [ $(cat '" + dir.path() + "'/never.trace.tmp.* 2>/dev/null | wc -c) -lt 200000 ] "
                             "&& [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done; "
                             "kill -KILL $rec; wait $rec; cp '" + dir.path() + "'/never.trace.tmp.* '" + dir.file("streamed.copy") + "'; "
                             "sleep 1; "
                             "pkill -KILL -x cs_victim2; sleep 0.2; '" +
                             std::string(CALLSCOPE_EXE) + "' finish -o '" + dir.file("recovered.trace") + "' '" +
                             dir.path() + "'/callscope-never.trace.*";
  RunResult r = run({"/bin/sh", "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  TraceSummary s = summarize(dir.file("recovered.trace"));
  ASSERT_TRUE(s.reader);
  ASSERT_EQ(s.threads.size(), 2u);
  for (const auto& t : s.threads) EXPECT_TRUE(t.balanced());
  // The calls streamed before the recorder died, all of them kept: as many
  // entries as the copy of its trace taken right after the kill holds, at
  // least (a count, not a rate of bytes per call: under load it varies).
  const uint64_t streamed = entries_streamed(dir.file("streamed.copy"));
  EXPECT_GT(streamed, 0u);
  uint64_t entries = 0;
  for (const auto& t : s.threads) entries += t.entries;
  EXPECT_GE(entries, streamed);
  EXPECT_GT(s.reader->threads()[1].record.lost_events, 0u) << "events after the recorder died are counted";
}

}  // namespace
}  // namespace callscope::e2e
