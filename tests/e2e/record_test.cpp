// Recording correctness on real programs, for every compiler variant:
// threads, recursion, exceptions, longjmp, signal handlers, fork, exec,
// dlopen. Each case checks that entries and exits balance per thread and
// that per-function call counts are exact.
#include <gtest/gtest.h>

#include "variant_recording.h"

namespace callscope::e2e {
namespace {

using format::ExitHow;

class RecordTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Records `program args` and returns the summary; checks record's exit code.
  TraceSummary record(const std::string& name, const std::vector<std::string>& args, int expected_exit = 0) {
    std::vector<std::string> cmd{"record", "-o", dir_.file(name + ".trace"), "--", fixture(GetParam(), name)};
    cmd.insert(cmd.end(), args.begin(), args.end());
    last_ = callscope(cmd);
    EXPECT_EQ(last_.exit_code, expected_exit) << last_.err;
    return summarize(dir_.file(name + ".trace"));
  }
  TempDir dir_;
  RunResult last_;
};

TEST_P(RecordTest, SixteenThreadsOfAMillionCalls) {
  TraceSummary s = record("threads", {"16", "1000000"});
  EXPECT_NE(last_.out.find("threads=16 calls=16000000"), std::string::npos) << last_.out;
  ASSERT_EQ(s.threads.size(), 17u);
  expect_balanced(s);
  EXPECT_EQ(s.calls_of("leaf"), 16000000u);
  EXPECT_EQ(s.calls_of("worker"), 16u);
  EXPECT_EQ(s.calls_of("main"), 1u);
  for (const auto& t : s.threads) EXPECT_EQ(t.lost, 0u);
}

TEST_P(RecordTest, TwoThousandShortLivedThreads) {
  TraceSummary s = record("short_threads", {"2000"});
  ASSERT_EQ(s.threads.size(), 2001u);
  expect_balanced(s);
  EXPECT_EQ(s.calls_of("body"), 2000u);
  EXPECT_EQ(s.calls_of("work"), 20000u);
  // Every thread is known to have ended cleanly (main through exit()).
  size_t clean = 0;
  for (const auto& t : s.reader->threads()) clean += (t.record.flags & format::kThreadExitedCleanly) ? 1 : 0;
  EXPECT_EQ(clean, 2001u);
}

TEST_P(RecordTest, RecursionTenThousandDeep) {
  TraceSummary s = record("recursion", {"10000"});
  ASSERT_EQ(s.threads.size(), 1u);
  expect_balanced(s);
  EXPECT_EQ(s.calls_of("recurse"), 10001u);
  EXPECT_EQ(s.threads[0].max_depth, 10002u);
}

TEST_P(RecordTest, ExceptionsThroughInstrumentedFrames) {
  TraceSummary s = record("exceptions", {});
  expect_balanced(s);
  EXPECT_EQ(s.calls_of("thrower(int, int)"), 5000u);
  EXPECT_EQ(s.calls_of("catcher(int)"), 1000u);
  EXPECT_EQ(s.calls_of("after()"), 1000u);
  // Frames the exception left are closed before the catcher returns: the
  // calls after it sit right under main.
  EXPECT_EQ(s.entry_depths["after()"].size(), 1u);
  EXPECT_EQ(s.entry_depths["after()"].begin()->first, 2u);
  EXPECT_EQ(s.entry_depths["catcher(int)"].begin()->first, 2u);
  // GCC runs exit hooks while unwinding; clang does not, and we close them.
  EXPECT_EQ(s.threads[0].exits + s.threads[0].unwound, 7001u);
}

TEST_P(RecordTest, LongjmpAcrossInstrumentedFrames) {
  TraceSummary s = record("longjmp", {});
  expect_balanced(s);
  EXPECT_EQ(s.calls_of("deep"), 51000u);
  EXPECT_EQ(s.calls_of("runner"), 1000u);
  EXPECT_EQ(s.calls_of("after"), 1000u);
  // The 51 deep() frames of each jump are closed and marked as unwound.
  EXPECT_EQ(s.threads[0].unwound, 51000u);
  ASSERT_EQ(s.entry_depths["after"].size(), 1u);
  EXPECT_EQ(s.entry_depths["after"].begin()->first, 2u);
  ASSERT_EQ(s.entry_depths["runner"].size(), 1u);
  EXPECT_EQ(s.entry_depths["runner"].begin()->first, 2u);
}

TEST_P(RecordTest, InstrumentedSignalHandlers) {
  TraceSummary s = record("signals", {"3000"});
  expect_balanced(s);
  auto counts = parse_counts(last_.out);
  ASSERT_EQ(counts["on_signal"], 3000) << last_.out;
  EXPECT_EQ(s.calls_of("on_signal"), 3000u);
  EXPECT_EQ(s.calls_of("handler_helper"), 3000u);
  EXPECT_EQ(s.calls_of("busy"), static_cast<uint64_t>(counts["busy"]));
  for (const auto& t : s.threads) EXPECT_EQ(t.lost, 0u);
}

TEST_P(RecordTest, ForkGivesTheChildItsOwnStreams) {
  TraceSummary s = record("fork", {});
  ASSERT_EQ(s.reader->processes().size(), 2u);
  ASSERT_EQ(s.threads.size(), 2u);
  expect_balanced(s);
  const auto& parent = s.reader->processes()[0];
  const auto& child = s.reader->processes()[1];
  EXPECT_EQ(child.record.parent_index, 0);
  EXPECT_EQ(child.record.ppid, parent.record.pid);
  EXPECT_EQ(child.record.how, static_cast<uint32_t>(ExitHow::kExited));
  EXPECT_EQ(child.record.code, 7);
  EXPECT_EQ(parent.record.how, static_cast<uint32_t>(ExitHow::kExited));
  EXPECT_EQ(parent.record.code, 0);
  // The parent's calls are not duplicated in the child, nor the reverse.
  EXPECT_EQ((s.calls_in_process[{0, "f"}]), 100u);
  EXPECT_EQ((s.calls_in_process[{0, "h"}]), 50u);
  EXPECT_EQ((s.calls_in_process[{0, "g"}]), 0u);
  EXPECT_EQ((s.calls_in_process[{1, "g"}]), 200u);
  EXPECT_EQ((s.calls_in_process[{1, "f"}]), 0u);
  EXPECT_EQ(s.calls_of("main"), 1u);
  // The child starts inside main, inherited from the parent.
  EXPECT_EQ(s.threads[1].inherited, 1u);
}

// LD_PRELOAD splits at spaces and colons with no way to quote one: a
// runtime (and --memory's wrappers) in a directory whose name holds both --
// a clone in "/home/u/my projects:2" -- is preloaded all the same, through
// links of plain names (in the session's directory, or here, where the
// trace's name puts a space in that too, in one made in /tmp).
TEST_P(RecordTest, ARuntimeInADirectoryWithSpacesIsPreloaded) {
  TempDir dir;
  const std::string spaced = dir.file("my build: 2");
  const std::string rt_dir = std::string(RUNTIME_PATH).substr(0, std::string(RUNTIME_PATH).rfind('/'));
  ASSERT_EQ(run({"mkdir", spaced}).exit_code, 0);
  ASSERT_EQ(run({"cp", RUNTIME_PATH, rt_dir + "/libcallscope-mem.so", spaced + "/"}).exit_code, 0);
  const std::string trace = dir.file("a trace.trace");
  for (const bool memory : {false, true}) {
    std::vector<std::string> argv = {"env", "CALLSCOPE_RUNTIME=" + spaced + "/libcallscope-rt.so", CALLSCOPE_EXE,
                                     "record", "--force", "-o", trace};
    if (memory) argv.push_back("--memory");
    argv.insert(argv.end(), {"--", fixture(GetParam(), "fork")});
    RunResult r = run(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("cannot be preloaded"), std::string::npos) << r.err;
    TraceSummary s = summarize(trace);
    EXPECT_EQ((s.calls_in_process[{0, "f"}]), 100u) << "memory " << memory;
    EXPECT_EQ((s.calls_in_process[{1, "g"}]), 200u) << "memory " << memory;
  }
}

TEST_P(RecordTest, ForkThenExecTracesTheNewImage) {
  TraceSummary s = record("fork_exec", {});
  ASSERT_EQ(s.reader->processes().size(), 3u);
  expect_balanced(s);
  const auto& before_exec = s.reader->processes()[1];
  const auto& after_exec = s.reader->processes()[2];
  EXPECT_EQ(before_exec.record.pid, after_exec.record.pid);
  EXPECT_EQ(before_exec.record.how, static_cast<uint32_t>(ExitHow::kExec));
  EXPECT_EQ(after_exec.record.incarnation, 1u);
  EXPECT_EQ(after_exec.record.how, static_cast<uint32_t>(ExitHow::kExited));
  EXPECT_EQ(after_exec.record.code, 5);
  EXPECT_EQ(s.calls_of("before_fork"), 10u);
  EXPECT_EQ(s.calls_of("in_child"), 20u);
  EXPECT_EQ(s.calls_of("after_exec"), 30u);
  EXPECT_EQ((s.calls_in_process[{2, "after_exec"}]), 30u);
  EXPECT_EQ(s.calls_of("main"), 2u);  // the parent's and the new image's
}

TEST_P(RecordTest, DlopenedLibraryIsMappedAndNamed) {
  const std::string lib = fixture(GetParam(), "libplugin.so");
  TraceSummary s = record("dlopen_main", {lib});
  expect_balanced(s);
  EXPECT_EQ(s.calls_of("plugin_square"), 30u);
  EXPECT_EQ(s.calls_of("plugin_entry"), 3u);
  EXPECT_EQ(s.calls_of("local_fn"), 1u);
  bool found = false;
  for (const auto& m : s.reader->modules())
    if (m.path == lib) {
      found = true;
      EXPECT_TRUE(m.record.flags & format::kModuleUnloaded) << "dlclose was not seen";
      EXPECT_FALSE(m.build_id.empty());
    }
  EXPECT_TRUE(found) << "libplugin.so missing from the module map";
}

// No space for events (the fixture lowers its own file-size limit, then
// raises it): they are counted as lost, the stream says where, and every
// event is either in the trace or in the count. This runs the program
// without `record`: the runtime then grows its files itself (under record
// the recorder's drainer writes the data, and the program's limit does not
// apply to it).
TEST_P(RecordTest, EventsWithoutSpaceAreCountedAsLost) {
  const std::string script = "cd '" + dir_.path() + "' && LD_PRELOAD='" + plain_path(RUNTIME_PATH) + "' '" +
                             fixture(GetParam(), "lost") + "' && '" + CALLSCOPE_EXE +
                             "' finish -o lost.trace callscope-*.raw";
  last_ = run({"/bin/sh", "-c", script});
  ASSERT_EQ(last_.exit_code, 0) << last_.err;
  TraceSummary s = summarize(dir_.file("lost.trace"));
  ASSERT_EQ(s.threads.size(), 1u);
  expect_balanced(s);
  const ThreadSummary& t = s.threads[0];
  EXPECT_NE(last_.err.find("events were lost"), std::string::npos) << last_.err;
  EXPECT_GT(t.lost, 100000u);
  EXPECT_EQ(t.lost, s.reader->threads()[0].record.lost_events);
  EXPECT_EQ(s.calls_of("a"), 1000u);
  EXPECT_EQ(s.calls_of("c"), 1000u);
  EXPECT_LT(s.calls_of("b"), 100000u);
  // main went on through the gap: it is neither closed nor reopened there;
  // at most the b() or d() the first lost event belonged to ended inside it.
  EXPECT_LE(t.inherited, 1u);
  EXPECT_LE(t.truncated, 1u);
  EXPECT_EQ(s.calls_of("main"), 1u);
  // b() and d() made 220,000 events; those recorded plus those lost.
  const uint64_t bd_entries = s.calls_of("b") + s.calls_of("d");
  const uint64_t bd_exits = t.exits - 2001;  // all exits but a's, c's and main's
  EXPECT_EQ(bd_entries + bd_exits + t.lost, 220000u);
}

INSTANTIATE_TEST_SUITE_P(Compilers, RecordTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
