// Entries without -finstrument-functions, for every compiler variant: -pg
// (mcount), -pg -mfentry (__fentry__), -fpatchable-function-entry=5 (with
// and without CET's endbr64), gcc's -mnop-mcount -mrecord-mcount; exits by
// return-address replacement. Exact counts and balance with recursion,
// longjmp out of four frames and threads; C++ exceptions through -mfentry
// frames; tail calls (and exceptions thrown from a function tail-called);
// patchable entries switched into calls and back while four threads call
// them, 1,000 times, and in phases with exact counts; --start-off leaves them
// nops.

#include "variant_recording.h"

namespace callscope::e2e {
namespace {

class EntriesTest : public VariantRecording {
 protected:
  void expect_entries_counts(const std::string& program, const std::string& source) {
    SCOPED_TRACE(program);
    TraceSummary s = record(program, {}, {"300"});
    EXPECT_NE(last_.err.find("sources: " + source), std::string::npos) << last_.err;
    expect_balanced(s);
    for (const char* f : {"main", "mid", "leaf", "rec", "jumper", "worker"})
      EXPECT_EQ(s.calls_of(f), static_cast<uint64_t>(counts_[f])) << f;
    // jumper's four frames left by each longjmp: closed as unwound.
    uint64_t unwound = 0;
    for (const ThreadSummary& t : s.threads) unwound += t.unwound;
    EXPECT_EQ(unwound, 40u);
    EXPECT_EQ(s.threads.size(), 5u);
    // The callees sit under their callers: mid at depth 2 (under main or
    // worker), leaf at 3.
    ASSERT_FALSE(s.entry_depths["leaf"].empty());
    EXPECT_EQ(s.entry_depths["leaf"].size(), 1u);
    EXPECT_EQ(s.entry_depths["leaf"].begin()->first, 3u);
  }
};

TEST_P(EntriesTest, Pg) { expect_entries_counts("entries_pg", "-pg (mcount)"); }
TEST_P(EntriesTest, PgMfentry) { expect_entries_counts("entries_fentry", "-pg -mfentry (__fentry__)"); }
TEST_P(EntriesTest, PatchableEntries) { expect_entries_counts("entries_patchable", "patchable entries"); }
TEST_P(EntriesTest, PatchableEntriesStrippedWithDebuglink) {
  expect_entries_counts("entries_patchable_stripped", "patchable entries");
}
TEST_P(EntriesTest, PatchableEntriesAfterEndbr64) { expect_entries_counts("entries_patchable_cet", "patchable entries"); }

TEST_P(EntriesTest, ProfileModeCountsTheSame) {
  for (const char* program : {"entries_fentry", "entries_patchable"}) {
    SCOPED_TRACE(program);
    record(program, {"--mode", "profile"}, {"300"});
    auto rows = flat_report(trace_);
    for (const char* f : {"main", "mid", "leaf", "rec", "jumper", "worker"})
      EXPECT_EQ(num(rows[f], "calls"), static_cast<uint64_t>(counts_[f])) << f;
  }
}

TEST_P(EntriesTest, NopsBeforeTheEntryAreLeftAlone) {
  // -fpatchable-function-entry=7,2: a call there would straddle the entry.
  TraceSummary s = record("entries_patchable_before", {}, {"300"});
  EXPECT_EQ(counts_["mid"], 1500);
  EXPECT_EQ(s.calls_of("mid"), 0u);
  EXPECT_EQ(s.calls_of("main"), 0u);
}

TEST_P(EntriesTest, NopMcountPatchedAtStart) {
  if (GetParam().rfind("gcc", 0) != 0) GTEST_SKIP() << "-mnop-mcount is gcc's";
  expect_entries_counts("entries_nop_mcount", "-mnop-mcount entries");
}

TEST_P(EntriesTest, ExceptionsThroughMfentryFrames) {
  TraceSummary s = record("exceptions_fentry", {});
  expect_balanced(s);
  EXPECT_EQ(s.calls_of("catcher(int)"), 1000u);
  if (GetParam().find("O0") != std::string::npos) {
    EXPECT_EQ(s.calls_of("thrower(int, int)"), 5000u);
    EXPECT_EQ(s.calls_of("after()"), 1000u);
    // Each throw's frames are gone before the next call: after() right under main.
    ASSERT_FALSE(s.entry_depths["after()"].empty());
    EXPECT_EQ(s.entry_depths["after()"].size(), 1u);
    EXPECT_EQ(s.entry_depths["after()"].begin()->first, 2u);
  } else {
    // Optimized, thrower's recursion is a loop (there are no hooks that
    // force calls, as -finstrument-functions' do) and after() is folded.
    EXPECT_GE(s.calls_of("thrower(int, int)"), 1000u);
  }
  // catcher is entered from main only: the frames of every throw were closed.
  EXPECT_EQ(s.entry_depths["catcher(int)"].size(), 1u);
  EXPECT_EQ(s.entry_depths["catcher(int)"].begin()->first, 2u);
}

// Tail calls between traced functions (patchable entries: stubs that call
// the function; __fentry__: a replaced return address): the call that jumps
// ends where the next begins, also 100 deep (past the calls the runtime keeps
// apart at one return address), with stack arguments and doubles passed
// intact and an exception thrown from a function tail-called.
TEST_P(EntriesTest, TailCallsBetweenEntries) {
  for (const char* program : {"tailcalls_patchable", "tailcalls_fentry"}) {
    SCOPED_TRACE(program);
    TraceSummary s = record(program, {}, {"200"});
    EXPECT_EQ(counts_["ok"], 1) << last_.out;
    expect_balanced(s);
    EXPECT_EQ(s.calls_of("hop(long)"), 200u);
    EXPECT_EQ(s.calls_of("leaf(long)"), 200u);
    EXPECT_EQ(s.calls_of("is_even(unsigned int)") + s.calls_of("is_odd(unsigned int)"), 200u * 101);
    EXPECT_EQ(s.calls_of("catcher(int)"), 200u);
    EXPECT_EQ(s.calls_of("via(int)"), 200u);
    EXPECT_EQ(s.calls_of("thrower(int)"), 200u);
    EXPECT_EQ(s.calls_of("sum8(long, long, long, long, long, long, long, long)"), 200u);
    // leaf, jumped to from hop, and the whole chain run right under main.
    for (const char* f : {"leaf(long)", "is_even(unsigned int)", "is_odd(unsigned int)"}) {
      ASSERT_EQ(s.entry_depths[f].size(), 1u) << f;
      EXPECT_EQ(s.entry_depths[f].begin()->first, 2u) << f;
    }
    // thrower where via was, under catcher; then the next catcher under main.
    EXPECT_EQ(s.entry_depths["thrower(int)"].begin()->first, 3u);
    ASSERT_EQ(s.entry_depths["catcher(int)"].size(), 1u);
    EXPECT_EQ(s.entry_depths["catcher(int)"].begin()->first, 2u);
  }
}

// A library with patchable entries loaded and closed 30 times: each load's
// entries are found in the dlopen wrapper (their stubs placed near that
// load, and unmapped at its dlclose).
// A patchable library's function that ends with a tail call of dlclose on
// its own library: the call returns through its stub after the library is
// gone (the stubs stay mapped).
TEST_P(EntriesTest, PatchableLibraryUnloadedByItsOwnTailCall) {
  TraceSummary s =
      record("tailcalls_patchable", {}, {"10", fixture(GetParam(), "unload_self_patchable.so")});
  EXPECT_EQ(counts_["unloads"], 30);
  EXPECT_EQ(counts_["ok"], 1) << last_.out;
  expect_balanced(s);
  EXPECT_EQ(s.calls_of("plugin_unload"), 30u);
}

TEST_P(EntriesTest, PatchableLibraryLoadedThirtyTimes) {
  TraceSummary s = record("libcalls_plain", {}, {"10", fixture(GetParam(), "libcalls_plugin_patchable.so")});
  EXPECT_EQ(counts_["loads"], 30);
  expect_balanced(s);
  EXPECT_EQ(s.calls_of("plugin_measure"), 30u);
}

TEST_P(EntriesTest, SwitchedInPhasesWithExactCounts) {
  TraceSummary s = record("patchable", {}, {"phases", "20", "5000"});
  expect_balanced(s);
  EXPECT_EQ(counts_["on_calls"], 10 * 4 * 5000);
  EXPECT_EQ(s.calls_of("work"), static_cast<uint64_t>(counts_["on_calls"]));
}

TEST_P(EntriesTest, ThousandSwitchesWhileFourThreadsCall) {
  TraceSummary s = record("patchable", {}, {"race", "1000"});
  expect_balanced(s);
  ASSERT_GT(counts_["calls"], 0);
  EXPECT_LE(s.calls_of("work"), static_cast<uint64_t>(counts_["calls"]));
}

TEST_P(EntriesTest, SwitchesWhileThreadsBlockSignalsAndTheProgramHasItsOwnTrapHandler) {
  TraceSummary s = record("patchable", {}, {"masked", "300"});
  expect_balanced(s);
  EXPECT_EQ(counts_["own_traps"], 1);  // the program's handler got its own trap
  EXPECT_LE(s.calls_of("work"), static_cast<uint64_t>(counts_["calls"]));
}

// Doubles in every argument register (and on the stack) come through the
// entries intact, over many chunks of events (each chunk switch takes the
// entry's slow side), while a profiling timer's handler makes calls of its
// own, also interrupting the runtime's entries.
TEST_P(EntriesTest, ArgumentsIntactWithSignalHandlersCalling) {
  TraceSummary s = record("patchable", {}, {"floats", "1000000"});
  EXPECT_EQ(counts_["ok"], 1) << last_.out;
  expect_balanced(s);
  EXPECT_EQ(s.calls_of("mix"), 1000000u);
  // A handler's call is recorded unless the signal landed inside the
  // runtime (docs/recording.md, Limits).
  EXPECT_GT(counts_["handler"], 0);
  EXPECT_LE(s.calls_of("work"), static_cast<uint64_t>(counts_["handler"]));
}

TEST_P(EntriesTest, StartOffLeavesTheEntriesNops) {
  TraceSummary s = record("patchable", {"--start-off"}, {"plain", "100000"});
  EXPECT_EQ(counts_["calls"], 100000);
  EXPECT_EQ(s.calls_of("work"), 0u);
  EXPECT_EQ(s.calls_of("main"), 0u);
}

INSTANTIATE_TEST_SUITE_P(Variants, EntriesTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
