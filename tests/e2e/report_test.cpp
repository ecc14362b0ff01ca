// `report` on a real program whose numbers are known (tests/fixtures/record/
// profile.c), for every compiler variant: exact call counts, the right
// callers and callees, and a 10 ms sleep that shows in its own total but
// adds almost nothing to its caller's self time. Also `replay` on it.
#include <gtest/gtest.h>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

class ReportTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    trace_ = dir_.file("profile.trace");
    RunResult r = callscope({"record", "-o", trace_, "--", fixture(GetParam(), "profile")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  RunResult report(std::vector<std::string> args) {
    args.insert(args.begin(), {"report", trace_});
    return callscope(args);
  }
  TempDir dir_;
  std::string trace_;
};

TEST_P(ReportTest, FlatProfileHasExactCountsAndTimes) {
  RunResult r = report({"--format", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = csv_by(r.out, "function");
  EXPECT_EQ(num(rows["main"], "calls"), 1u);
  EXPECT_EQ(num(rows["caller_a"], "calls"), 1u);
  EXPECT_EQ(num(rows["caller_b"], "calls"), 2u);
  EXPECT_EQ(num(rows["middle"], "calls"), 5u);
  EXPECT_EQ(num(rows["leaf"], "calls"), 500u);
  EXPECT_EQ(num(rows["sleeper"], "calls"), 1u);
  // The sleep is the sleeper's own time, and its caller's total...
  EXPECT_GE(num(rows["sleeper"], "total_ns"), 10'000'000u);
  EXPECT_GE(num(rows["sleeper"], "self_ns"), 10'000'000u);
  EXPECT_GE(num(rows["caller_a"], "total_ns"), 10'000'000u);
  // ...but almost nothing of the caller's self time.
  EXPECT_LT(num(rows["caller_a"], "self_ns"), 1'000'000u);
  // Self never exceeds total; totals nest.
  for (const auto& [name, row] : rows) EXPECT_LE(num(row, "self_ns"), num(row, "total_ns")) << name;
  EXPECT_GE(num(rows["main"], "total_ns"), num(rows["caller_a"], "total_ns") + num(rows["caller_b"], "total_ns"));
}

TEST_P(ReportTest, CallersAndCallees) {
  RunResult callers = report({"--callers", "middle", "--format", "csv"});
  ASSERT_EQ(callers.exit_code, 0) << callers.err;
  auto c = csv_by(callers.out, "other");
  ASSERT_EQ(c.size(), 2u) << callers.out;
  EXPECT_EQ(num(c["caller_a"], "calls"), 1u);
  EXPECT_EQ(num(c["caller_b"], "calls"), 4u);
  RunResult callees = report({"--callees", "caller_a", "--format", "csv"});
  ASSERT_EQ(callees.exit_code, 0) << callees.err;
  auto e = csv_by(callees.out, "other");
  ASSERT_EQ(e.size(), 2u) << callees.out;
  EXPECT_EQ(num(e["middle"], "calls"), 1u);
  EXPECT_EQ(num(e["sleeper"], "calls"), 1u);
  EXPECT_GE(num(e["sleeper"], "total_ns"), 10'000'000u);
}

TEST_P(ReportTest, TreeAndReplayShowTheCallPaths) {
  RunResult tree = report({"--tree"});
  ASSERT_EQ(tree.exit_code, 0) << tree.err;
  EXPECT_NE(tree.out.find("sleeper"), std::string::npos) << tree.out;
  RunResult replay = callscope({"replay", trace_, "-F", "caller_a"});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  // caller_a's subtree only: middle's 100 leaf calls and the sleeper.
  size_t leaves = 0;
  for (size_t pos = 0; (pos = replay.out.find("leaf()", pos)) != std::string::npos; ++pos) ++leaves;
  EXPECT_EQ(leaves, 100u) << replay.out.substr(0, 2000);
  EXPECT_NE(replay.out.find("sleeper()"), std::string::npos);
  EXPECT_EQ(replay.out.find("caller_b"), std::string::npos);
}

TEST_P(ReportTest, BadArgumentsGetClearErrors) {
  RunResult glob = report({"-F", "no_such_function*"});
  EXPECT_EQ(glob.exit_code, 1);
  EXPECT_NE(glob.err.find("no_such_function*"), std::string::npos) << glob.err;
  RunResult sort = report({"-s", "bogus"});
  EXPECT_NE(sort.exit_code, 0);
  EXPECT_NE(sort.err.find("calls"), std::string::npos) << "lists the valid sort keys: " << sort.err;
  RunResult format = report({"--format", "xml"});
  EXPECT_NE(format.exit_code, 0);
  EXPECT_NE(format.err.find("text, csv, json"), std::string::npos) << format.err;
}

// The binary changed (or was removed) after the recording: say so, and show
// addresses rather than wrong names.
TEST(ReportChangedBinary, BuildIdMismatchAndMissingFile) {
  const auto vs = variants();
  ASSERT_FALSE(vs.empty());
  TempDir dir;
  const std::string bin = dir.file("victim");
  ASSERT_EQ(run({"cp", fixture(vs.front(), "profile"), bin}).exit_code, 0);
  ASSERT_EQ(callscope({"record", "-o", dir.file("v.trace"), "--", bin}).exit_code, 0);
  ASSERT_EQ(run({"cp", fixture(vs.front(), "recursion"), bin}).exit_code, 0);  // another program, same path
  RunResult changed = callscope({"report", dir.file("v.trace")});
  EXPECT_EQ(changed.exit_code, 0);
  EXPECT_NE(changed.err.find("has changed since the recording (build-id"), std::string::npos) << changed.err;
  EXPECT_EQ(changed.out.find("caller_a"), std::string::npos) << "no names from the wrong binary";
  EXPECT_EQ(changed.out.find("recurse"), std::string::npos) << "no names from the wrong binary";
  EXPECT_NE(changed.out.find("victim+0x"), std::string::npos) << changed.out;
  ASSERT_EQ(run({"rm", bin}).exit_code, 0);
  RunResult gone = callscope({"report", dir.file("v.trace")});
  EXPECT_NE(gone.err.find("is gone"), std::string::npos) << gone.err;
  EXPECT_NE(gone.out.find("victim+0x"), std::string::npos) << gone.out;
}

// Measured stack use against the static analysis of the same binary: each
// recursion level of recurse() moves the stack pointer by exactly its frame,
// as `callscope stack` reads it from the CFI.
class StackMeasureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StackMeasureTest, MeasuredDepthMatchesStaticFrames) {
  TempDir dir;
  const std::string bin = fixture(GetParam(), "recursion");
  ASSERT_EQ(callscope({"record", "-o", dir.file("r.trace"), "--", bin, "10000"}).exit_code, 0);
  RunResult measured = callscope({"report", "--stack", "--format", "csv", dir.file("r.trace")});
  ASSERT_EQ(measured.exit_code, 0) << measured.err;
  RunResult frames = callscope({"stack", bin, "recurse", "--format", "csv"});
  ASSERT_EQ(frames.exit_code, 0) << frames.err;
  const uint64_t frame = num(csv_by(frames.out, "function")["recurse"], "frame_bytes");
  ASSERT_GT(frame, 0u) << frames.out;
  // kind,thread,function,module,calls,bytes,path
  uint64_t deepest_recurse = 0, peak = 0, calls = 0;
  std::istringstream in(measured.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("function,,recurse,", 0) == 0) {
      std::stringstream ss(line);
      std::string f[6];
      for (auto& x : f) std::getline(ss, x, ',');
      calls = std::stoull(f[4]);
      deepest_recurse = std::stoull(f[5]);
    }
    if (line.rfind("peak,0,,,,", 0) == 0) peak = std::stoull(line.substr(10, line.find(',', 10) - 10));
  }
  EXPECT_EQ(calls, 10001u);
  EXPECT_EQ(deepest_recurse, 10000 * frame) << measured.out;
  EXPECT_GE(peak, deepest_recurse);
  RunResult text = callscope({"report", "--stack", dir.file("r.trace")});
  EXPECT_NE(text.out.find("at the peak (10002 frames): main > recurse"), std::string::npos) << text.out;
}

// A fork child's copies of the frames open in its parent (main, spawn) are
// the child's calls, from the fork: the merged report counts two calls of
// each, one inherited, and no figure is impossible -- avg <= max, and no
// function's total past the time of the thread it ran in (a report once
// gave spawn CALLS 1, AVG 303 ms, MAX 154 us).
TEST_P(ReportTest, AForkChildsInheritedFramesAreItsOwnCalls) {
  const std::string trace = dir_.file("fork.trace");
  RunResult r = callscope({"record", "-o", trace, "--", fixture(GetParam(), "fork_spawn")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out, "child=0\n");
  auto rows = flat_report(trace);
  EXPECT_EQ(num(rows["work"], "calls"), 101u);
  EXPECT_EQ(num(rows["work"], "inherited_calls"), 0u);
  for (const char* f : {"main", "spawn"}) {
    EXPECT_EQ(num(rows[f], "calls"), 2u) << f;
    EXPECT_EQ(num(rows[f], "inherited_calls"), 1u) << f;
  }
  for (const auto& [name, row] : rows) {
    EXPECT_LE(num(row, "avg_ns"), num(row, "max_ns")) << name;
    EXPECT_LE(num(row, "min_ns"), num(row, "avg_ns")) << name;
  }
  TraceSummary s = summarize(trace);
  ASSERT_EQ(s.reader->threads().size(), 2u);
  for (uint32_t t = 0; t < 2; ++t) {
    const auto& th = s.reader->threads()[t].record;
    const double wall_ns = s.reader->ticks_to_ns(th.end_tick - th.start_tick);
    auto mine = flat_report(trace, {"-t", std::to_string(t)});
    EXPECT_EQ(num(mine["spawn"], "calls"), 1u) << "thread " << t;
    EXPECT_EQ(num(mine["spawn"], "inherited_calls"), t == 1 ? 1u : 0u) << "thread " << t;
    for (const auto& [name, row] : mine)
      EXPECT_LE(static_cast<double>(num(row, "total_ns")), wall_ns + 1) << name << " in thread " << t;
  }
  // The text marks the child's inherited calls and says what they are.
  RunResult text = callscope({"report", trace});
  EXPECT_NE(text.out.find("^ includes calls already in progress where their thread's recording began (a forked "
                          "child's copies of the frames open in its parent, counted from the fork"),
            std::string::npos)
      << text.out;
}

INSTANTIATE_TEST_SUITE_P(Compilers, StackMeasureTest, ::testing::ValuesIn(variants()), VariantName());

INSTANTIATE_TEST_SUITE_P(Compilers, ReportTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
