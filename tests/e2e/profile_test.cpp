// Profile mode end to end (`callscope record` with CALLSCOPE_MODE=profile,
// as --mode=profile sets it), for every compiler variant: exact counts from
// the in-process call trees, snapshots taken through the public API, clear
// and stop/start, filters (exclude, include, depth, minimum duration, chrono
// functions) in both modes, a crash, flat memory over a long run, and
// report --dump / --diff.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

class ProfileTest : public ::testing::TestWithParam<std::string> {
 protected:
  // `callscope record` with the runtime's environment `env` ("K=V").
  RunResult record(const std::vector<std::string>& env, const std::string& program,
                   const std::vector<std::string>& args = {}, const std::string& input = "",
                   const std::string& name = "p.trace") {
    trace_ = dir_.file(name);
    std::vector<std::string> argv = {"env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {CALLSCOPE_EXE, "record", "-f", "-o", trace_, "--", fixture(GetParam(), program)});
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, input);
  }
  std::map<std::string, std::map<std::string, std::string>> flat(std::vector<std::string> extra = {}) {
    return flat_report(trace_, extra);
  }
  TempDir dir_;
  std::string trace_;
};

TEST_P(ProfileTest, CountsAndTimesMatchTheProgram) {
  const auto t0 = std::chrono::steady_clock::now();
  RunResult r = record({"CALLSCOPE_MODE=profile"}, "profile");
  // Every call of the program lies within this.
  const auto wall_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The summary counts snapshots; bytes per call mean nothing for call trees.
  EXPECT_NE(r.err.find(", 1 snapshot)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("bytes/call"), std::string::npos) << r.err;
  auto rows = flat();
  EXPECT_EQ(num(rows["main"], "calls"), 1u);
  EXPECT_EQ(num(rows["caller_a"], "calls"), 1u);
  EXPECT_EQ(num(rows["caller_b"], "calls"), 2u);
  EXPECT_EQ(num(rows["middle"], "calls"), 5u);
  EXPECT_EQ(num(rows["leaf"], "calls"), 500u);
  EXPECT_EQ(num(rows["sleeper"], "calls"), 1u);
  // Bounds that hold however slow the machine is: the nap lasts at least
  // its 10 ms (nanosleep), and nothing lasts longer than the run.
  EXPECT_GE(num(rows["sleeper"], "self_ns"), 10'000'000u);
  EXPECT_GE(num(rows["caller_a"], "total_ns"), 10'000'000u);
  EXPECT_LE(num(rows["main"], "total_ns"), wall_ns);
  for (const auto& [name, row] : rows) EXPECT_LE(num(row, "self_ns"), num(row, "total_ns")) << name;
  // Callers: middle is called once from caller_a and 4 times from caller_b.
  RunResult c = callscope({"report", trace_, "--callers", "middle", "--format", "csv"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("caller_a"), std::string::npos) << c.out;
  RunResult tree = callscope({"report", trace_, "--tree", "--format", "csv"});
  ASSERT_EQ(tree.exit_code, 0) << tree.err;
  auto nodes = csv_by(tree.out, "node");
  uint64_t middle_under_b = 0;
  for (auto& [id, row] : nodes)
    if (row["function"] == "middle" && nodes[row["parent"]]["function"] == "caller_b") middle_under_b += num(row, "calls");
  EXPECT_EQ(middle_under_b, 4u) << tree.out;
  // The nap is the sleeper's own time, not caller_a's: caller_a's self time
  // leaves out all of its callees' time. (Not a fixed ceiling on caller_a's
  // self time: on a loaded machine a preemption between its entry and its
  // first call, or after its last, lands there and is rightly counted.)
  uint64_t under_a = 0, figures = 1;  // total time of caller_a's callees; figures summed
  for (auto& [id, row] : nodes)
    if (nodes[row["parent"]]["function"] == "caller_a") {
      under_a += num(row, "total_ns");
      ++figures;
    }
  EXPECT_GE(under_a, num(rows["sleeper"], "total_ns")) << tree.out;
  // Each figure is rounded to the nearest ns: up to 1 ns each.
  EXPECT_LE(num(rows["caller_a"], "self_ns") + under_a, num(rows["caller_a"], "total_ns") + figures) << tree.out;
  // The trace is small: the tree, not the calls.
  RunResult info = callscope({"info", trace_});
  EXPECT_NE(info.out.find("mode:       profile: call trees kept in the process, 1 snapshot\n"), std::string::npos)
      << info.out;
  // No events to list: replay and dump say what to run instead.
  for (const std::vector<std::string>& args : {std::vector<std::string>{"replay", trace_},
                                              std::vector<std::string>{"dump", "--stats", trace_}}) {
    RunResult none = callscope(args);
    EXPECT_EQ(none.exit_code, 1) << args[0];
    EXPECT_NE(none.err.find("is a profile-mode trace: it holds call trees (1 snapshot)"), std::string::npos)
        << none.err;
    EXPECT_NE(none.err.find("run 'callscope report"), std::string::npos) << none.err;
  }
}

// The server fixture drives 8 worker threads; the public API turns
// profiling on and off, clears and takes snapshots. Per request a worker
// calls handle_request, parse_request and compute once, checksum 4 times.
TEST_P(ProfileTest, ApiStartStopClearAndDumpsWithEightThreads) {
  const std::string script =
      "work 5\nstart\nwork 100\ndump\nstop\nwork 50\nstart\nwork 10\ndump\nclear\nwork 7\nmark after clear\nquit\n";
  RunResult r = record({"CALLSCOPE_MODE=profile", "CALLSCOPE_START_OFF=1"}, "server", {}, script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dump 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dump 2\n"), std::string::npos) << r.out;
  auto d1 = flat({"--dump", "1"});
  EXPECT_EQ(num(d1["handle_request"], "calls"), 800u);
  EXPECT_EQ(num(d1["parse_request"], "calls"), 800u);
  EXPECT_EQ(num(d1["checksum"], "calls"), 3200u);
  auto d2 = flat({"--dump", "2"});
  EXPECT_EQ(num(d2["handle_request"], "calls"), 880u);
  EXPECT_EQ(num(d2["compute"], "calls"), 880u);
  auto last = flat();
  EXPECT_EQ(num(last["handle_request"], "calls"), 56u);
  EXPECT_EQ(num(last["checksum"], "calls"), 224u);
  // Every worker thread has its own tree.
  RunResult t = callscope({"report", trace_, "--threads", "--format", "csv", "-F", "handle_request"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(std::count(t.out.begin(), t.out.end(), '\n'), 1 + 8) << t.out;
  RunResult info = callscope({"info", trace_});
  EXPECT_NE(info.out.find("after clear"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("callscope_dump()"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("final state"), std::string::npos) << info.out;
  // --diff of the two snapshots: 80 more requests between them.
  RunResult diff = callscope({"report", trace_, "--diff", "1", "2", "--format", "csv"});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  auto rows = csv_by(diff.out, "function");
  EXPECT_EQ(num(rows["handle_request"], "calls_a"), 800u);
  EXPECT_EQ(num(rows["handle_request"], "calls_b"), 880u);
  // Out of range, and on a trace of every call.
  RunResult bad = callscope({"report", trace_, "--dump", "9"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("no snapshot 9"), std::string::npos) << bad.err;
}

// Workers that sleep through a clear never apply it themselves: the final
// state must still show nothing from before it.
TEST_P(ProfileTest, ClearReachesIdleThreads) {
  RunResult r = record({"CALLSCOPE_MODE=profile"}, "server", {}, "work 100\nclear\ndump\nquit\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(flat({"--dump", "1"}).count("handle_request"), 0u);
  EXPECT_EQ(flat().count("handle_request"), 0u);
}

TEST_P(ProfileTest, MemoryStaysFlatOverALongRun) {
  RunResult r = record({"CALLSCOPE_MODE=profile"}, "server", {}, "work 2000\nrss\nwork 200000\nrss\nquit\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::string word;
  std::vector<long> rss;
  while (in >> word)
    if (word == "rss") {
      long kib = 0;
      in >> kib;
      rss.push_back(kib);
    }
  ASSERT_EQ(rss.size(), 2u) << r.out;
  // 100x the calls (11 million more): the trees do not grow, nor does anything else.
  EXPECT_LT(rss[1] - rss[0], 512) << "RSS " << rss[0] << " KiB -> " << rss[1] << " KiB";
  EXPECT_EQ(num(flat()["checksum"], "calls"), 8u * 4 * 202000);
}

TEST_P(ProfileTest, ExcludedFunctionTimeGoesToItsCallerAndItsCalleesStay) {
  RunResult r = record({"CALLSCOPE_MODE=profile", "CALLSCOPE_EXCLUDE=middle"}, "profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = flat();
  EXPECT_EQ(rows.count("middle"), 0u);
  EXPECT_EQ(num(rows["leaf"], "calls"), 500u);
  RunResult c = callscope({"report", trace_, "--callers", "leaf", "--format", "csv"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("caller_b"), std::string::npos) << c.out;  // leaf now hangs under caller_b
  // Include: only these are counted.
  r = record({"CALLSCOPE_MODE=profile", "CALLSCOPE_INCLUDE=caller_*,leaf"}, "profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  rows = flat();
  EXPECT_EQ(rows.count("main"), 0u);
  EXPECT_EQ(rows.count("middle"), 0u);
  EXPECT_EQ(num(rows["caller_b"], "calls"), 2u);
  EXPECT_EQ(num(rows["leaf"], "calls"), 500u);
  // Depth: main and its callees only; their time includes everything below.
  r = record({"CALLSCOPE_MODE=profile", "CALLSCOPE_MAX_DEPTH=2"}, "profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  rows = flat();
  EXPECT_EQ(rows.count("middle"), 0u);
  EXPECT_EQ(num(rows["caller_b"], "calls"), 2u);
  EXPECT_GE(num(rows["caller_a"], "self_ns"), 10'000'000u);
  // Minimum duration: only calls of 5 ms or more count.
  r = record({"CALLSCOPE_MODE=profile", "CALLSCOPE_MIN_DURATION=5ms"}, "profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  rows = flat();
  EXPECT_EQ(num(rows["sleeper"], "calls"), 1u);
  EXPECT_EQ(num(rows["caller_a"], "calls"), 1u);
  EXPECT_EQ(rows.count("leaf"), 0u);
  EXPECT_EQ(rows.count("caller_b"), 0u);
}

// A function the filters leave out is decided at its first call (which
// leaves an excluded node, where the engine looked for it, and no frame);
// its later calls return from the hooks at once (hooks.cpp,
// callscope_rt_filter_enter). So middle, excluded and called from caller_a
// and then caller_b, has one excluded node, not one under each caller as
// when every call went through the engine; leaf, now called straight from
// caller_a and caller_b, has one node under each; the counts above hold.
TEST_P(ProfileTest, ExcludedFunctionsAreDecidedOnceAndThenSkipped) {
  RunResult r = record({"CALLSCOPE_MODE=profile", "CALLSCOPE_EXCLUDE=middle"}, "profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto reader = format::TraceReader::open(trace_);
  ASSERT_TRUE(reader) << reader.error().message();
  ASSERT_FALSE((*reader)->dumps().empty());
  const uint32_t last = static_cast<uint32_t>((*reader)->dumps().size() - 1);
  auto tree = (*reader)->read_tree(last, 0);
  ASSERT_TRUE(tree) << tree.error().message();
  size_t excluded = 0, counted = 0;
  for (const format::ProfileNodeRecord& n : *tree) {
    if (n.fn == 0) continue;  // the root
    if (n.flags & format::kProfNodeExcluded)
      ++excluded;
    else
      ++counted;
  }
  EXPECT_EQ(excluded, 1u);
  EXPECT_EQ(counted, 6u);  // main, caller_a, sleeper, leaf (under caller_a), caller_b, leaf (under caller_b)
  EXPECT_EQ(num(flat()["leaf"], "calls"), 500u);
}

TEST_P(ProfileTest, ChronoFunctionsListTheirSubtreeInBothModes) {
  for (const char* mode : {"CALLSCOPE_MODE=profile", "CALLSCOPE_MODE=record"}) {
    RunResult r = record({mode, "CALLSCOPE_CHRONO=caller_a"}, "profile");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    RunResult replay = callscope({"replay", trace_, "--format", "csv"});
    ASSERT_EQ(replay.exit_code, 0) << replay.err;
    EXPECT_NE(replay.out.find("caller_a"), std::string::npos) << mode;
    EXPECT_NE(replay.out.find("sleeper"), std::string::npos) << mode;
    EXPECT_EQ(replay.out.find("caller_b"), std::string::npos) << mode;
    EXPECT_EQ(replay.out.find(",main"), std::string::npos) << mode << replay.out;
  }
  // Record mode keeps only those events: caller_a, middle, sleeper, 100 leaf.
  TraceSummary s = summarize(trace_);
  EXPECT_EQ(s.calls_of("leaf"), 100u);
  EXPECT_EQ(s.calls_of("caller_a"), 1u);
  EXPECT_EQ(s.calls_of("caller_b"), 0u);
  EXPECT_TRUE(s.threads.at(0).balanced());
}

TEST_P(ProfileTest, RecordModeFiltersKeepTheTraceBalanced) {
  RunResult r = record({"CALLSCOPE_EXCLUDE=middle", "CALLSCOPE_MIN_DURATION=5ms"}, "profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceSummary s = summarize(trace_);
  EXPECT_EQ(s.calls_of("middle"), 0u);
  EXPECT_EQ(s.calls_of("leaf"), 0u);  // shorter than 5 ms: taken back
  EXPECT_EQ(s.calls_of("sleeper"), 1u);
  EXPECT_EQ(s.calls_of("main"), 1u);
  for (const ThreadSummary& t : s.threads) EXPECT_TRUE(t.balanced());
}

TEST_P(ProfileTest, ACrashKeepsTheTrees) {
  for (const char* how : {"segv", "sigkill"}) {
    RunResult r = record({"CALLSCOPE_MODE=profile"}, "crash", {how});
    EXPECT_NE(r.exit_code, 0) << how;
    auto rows = flat();
    EXPECT_EQ(num(rows["work"], "calls"), 12345u) << how;
    EXPECT_GE(num(rows["main"], "total_ns"), num(rows["work"], "total_ns")) << how << ": main was open at the crash";
  }
}

INSTANTIATE_TEST_SUITE_P(Compilers, ProfileTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
