// Frames left without an exit hook, for every compiler variant, in the three
// ways the runtime keeps a shadow stack: recording, recording with a filter
// (the engine, writing events) and profile mode (the engine, keeping trees).
//  - nested_catch: C++ exceptions caught inside a recursion. clang runs no
//    exit hook while unwinding, and calls the catching function's exit hook
//    after its epilogue, at its caller's stack pointer: that exit must close
//    the catching frame, not an outer activation of the same function.
//  - self_catch: a function catches what a recursive call of itself throws;
//    clang -O0 calls its exit hook inside its frame, with the abandoned
//    frame of the inner call above it on the shadow stack. Then it calls a
//    function whose frame lands where the abandoned one was (clang -O2).
//  - longjmp_sibling: after a longjmp, the function that called setjmp calls
//    functions whose frames land exactly where the abandoned frame was: they
//    are its callees, and the abandoned frame is closed before them; the
//    same call made again too.
//  - inlined: calls inlined with their hooks run at the stack pointer of the
//    frame they are inlined in, and are its callees: nothing is unwound.
// Each case checks the exact call tree, and where events are written their
// exact sequence: every frame is closed by its own exit, or as unwound when
// (and only when) it was abandoned, by the first hook after that; no exit is
// stray.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

using Edges = std::map<std::pair<std::string, std::string>, uint64_t>;  // (caller, callee) -> calls

class UnwindTest : public ::testing::TestWithParam<std::string> {
 protected:
  // `callscope record` of the fixture with extra record flags; the trace's path.
  std::string record(const std::string& name, const std::vector<std::string>& flags) {
    const std::string trace = dir_.file(name + std::to_string(++count_) + ".trace");
    std::vector<std::string> args{"record", "-o", trace};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", fixture(GetParam(), name)});
    RunResult r = callscope(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return trace;
  }
  // Every edge of the call tree (`report --tree`), the root's children under "".
  static Edges tree_edges(const std::string& trace) {
    RunResult r = callscope({"report", trace, "--tree", "--format", "csv"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto nodes = csv_by(r.out, "node");
    Edges edges;
    for (auto& [id, row] : nodes) {
      const std::string parent = row["parent"].empty() ? "" : nodes[row["parent"]]["function"];
      edges[{parent, row["function"]}] += num(row, "calls");
    }
    return edges;
  }
  // `report --callers FN`: caller -> calls.
  static std::map<std::string, uint64_t> callers(const std::string& trace, const std::string& fn) {
    RunResult r = callscope({"report", trace, "--callers", fn, "--format", "csv"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, uint64_t> out;
    for (auto& [other, row] : csv_by(r.out, "other")) out[other] = num(row, "calls");
    return out;
  }
  bool gcc() const { return GetParam().rfind("gcc", 0) == 0; }
  static std::string summary(const ThreadSummary& t) {
    return "entries " + std::to_string(t.entries) + " exits " + std::to_string(t.exits) + " unwound " +
           std::to_string(t.unwound) + " stray " + std::to_string(t.stray) + " final depth " +
           std::to_string(t.final_depth);
  }

  TempDir dir_;
  int count_ = 0;
};

// The tree of nested_catch: main -> guard(2) -> body(2) -> guard(1) -> body(1)
// -> guard(0) -> body(0), each body(n) calling thrower(3) (-> thrower(2..0))
// once guard(n - 1) has returned.
const Edges kNestedCatchTree = {
    {{"", "main"}, 1},
    {{"main", "guard(int)"}, 1},
    {{"guard(int)", "body(int)"}, 3},
    {{"body(int)", "guard(int)"}, 2},
    {{"body(int)", "thrower(int)"}, 3},
    {{"thrower(int)", "thrower(int)"}, 9},
};

// The events of nested_catch: body(n) and the throwers it calls are left by
// the exception guard(n) catches. `left`: how such a frame is closed ("-",
// its exit: GCC runs exit hooks while unwinding; "~" unwound: clang).
std::vector<std::string> nested_catch_events(const std::string& left) {
  std::vector<std::string> v{"+main"};
  for (int n = 2; n >= 0; --n) v.insert(v.end(), {"+guard(int)", "+body(int)"});
  for (int n = 0; n <= 2; ++n) {
    for (int i = 0; i < 4; ++i) v.push_back("+thrower(int)");
    for (int i = 0; i < 4; ++i) v.push_back(left + "thrower(int)");
    v.push_back(left + "body(int)");
    v.push_back("-guard(int)");
  }
  v.push_back("-main");
  return v;
}

void expect_nested_catch_callers(const std::map<std::string, uint64_t>& thrower,
                                 const std::map<std::string, uint64_t>& guard) {
  EXPECT_EQ(thrower, (std::map<std::string, uint64_t>{{"body(int)", 3}, {"thrower(int)", 9}}));
  EXPECT_EQ(guard, (std::map<std::string, uint64_t>{{"main", 1}, {"body(int)", 2}}));
}

TEST_P(UnwindTest, ExceptionCaughtInsideARecursion) {
  const std::string trace = record("nested_catch", {});
  TraceSummary s = summarize(trace);
  ASSERT_EQ(s.threads.size(), 1u);
  const ThreadSummary& t = s.threads[0];
  EXPECT_TRUE(t.balanced()) << summary(t);
  EXPECT_EQ(t.entries, 19u);
  EXPECT_EQ(t.stray, 0u);
  // Exceptions leave every body and thrower frame. GCC runs their exit hooks
  // while unwinding; under clang they are closed as unwound, and every guard
  // and main by its own exit.
  EXPECT_EQ(t.exits, gcc() ? 19u : 4u) << summary(t);
  EXPECT_EQ(t.unwound, gcc() ? 0u : 15u) << summary(t);
  EXPECT_EQ(s.entry_depths["guard(int)"], (std::map<uint32_t, uint64_t>{{2, 1}, {4, 1}, {6, 1}}));
  EXPECT_EQ(s.entry_depths["body(int)"], (std::map<uint32_t, uint64_t>{{3, 1}, {5, 1}, {7, 1}}));
  EXPECT_EQ(s.entry_depths["thrower(int)"],
            (std::map<uint32_t, uint64_t>{{4, 1}, {5, 1}, {6, 2}, {7, 2}, {8, 2}, {9, 2}, {10, 1}, {11, 1}}));
  EXPECT_EQ(call_events(trace), nested_catch_events(gcc() ? "-" : "~"));
  EXPECT_EQ(tree_edges(trace), kNestedCatchTree);
  expect_nested_catch_callers(callers(trace, "thrower(int)"), callers(trace, "guard(int)"));
}

// The engine: profile mode and a filtered recording.
TEST_P(UnwindTest, ExceptionCaughtInsideARecursionProfileMode) {
  const std::string trace = record("nested_catch", {"--mode=profile"});
  EXPECT_EQ(tree_edges(trace), kNestedCatchTree);
  expect_nested_catch_callers(callers(trace, "thrower(int)"), callers(trace, "guard(int)"));
}

TEST_P(UnwindTest, ExceptionCaughtInsideARecursionFiltered) {
  // main excluded: guard(2) hangs under the root; the events are written by the engine.
  const std::string trace = record("nested_catch", {"--exclude", "main"});
  TraceSummary s = summarize(trace);
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_TRUE(s.threads[0].balanced()) << summary(s.threads[0]);
  EXPECT_EQ(s.threads[0].entries, 18u);
  EXPECT_EQ(s.threads[0].unwound, gcc() ? 0u : 15u) << summary(s.threads[0]);
  std::vector<std::string> events = nested_catch_events(gcc() ? "-" : "~");
  events.erase(events.begin());
  events.pop_back();
  EXPECT_EQ(call_events(trace), events);
  Edges expected = kNestedCatchTree;
  expected.erase({"", "main"});
  expected.erase({"main", "guard(int)"});
  expected[{"", "guard(int)"}] = 1;
  EXPECT_EQ(tree_edges(trace), expected);
  EXPECT_EQ(callers(trace, "thrower(int)"),
            (std::map<std::string, uint64_t>{{"body(int)", 3}, {"thrower(int)", 9}}));
}

// rec(0) and rec_leaf(0) are left by the exception their callers catch.
std::vector<std::string> self_catch_events(const std::string& left) {
  return {"+main",          "+rec(int)",      "+rec(int)",      "+rec(int)",      "+rec(int)",
          left + "rec(int)", "-rec(int)",     "-rec(int)",      "-rec(int)",      "+rec_leaf(int)",
          "+rec_leaf(int)", "+rec_leaf(int)", left + "rec_leaf(int)", "+leaf()", "-leaf()",
          "-rec_leaf(int)", "+leaf()",        "-leaf()",        "-rec_leaf(int)", "-main"};
}

TEST_P(UnwindTest, ExceptionCaughtByTheCallerOfTheSameFunction) {
  const std::string trace = record("self_catch", {});
  TraceSummary s = summarize(trace);
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_TRUE(s.threads[0].balanced()) << summary(s.threads[0]);
  EXPECT_EQ(call_events(trace), self_catch_events(gcc() ? "-" : "~"));
  EXPECT_EQ(callers(trace, "leaf()"), (std::map<std::string, uint64_t>{{"rec_leaf(int)", 2}}));
}

TEST_P(UnwindTest, ExceptionCaughtByTheCallerOfTheSameFunctionProfileMode) {
  const std::string trace = record("self_catch", {"--mode=profile"});
  EXPECT_EQ(tree_edges(trace), (Edges{{{"", "main"}, 1},
                                      {{"main", "rec(int)"}, 1},
                                      {{"rec(int)", "rec(int)"}, 3},
                                      {{"main", "rec_leaf(int)"}, 1},
                                      {{"rec_leaf(int)", "rec_leaf(int)"}, 2},
                                      {{"rec_leaf(int)", "leaf()"}, 2}}));
}

TEST_P(UnwindTest, ExceptionCaughtByTheCallerOfTheSameFunctionFiltered) {
  const std::string trace = record("self_catch", {"--exclude", "main"});
  TraceSummary s = summarize(trace);
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_TRUE(s.threads[0].balanced()) << summary(s.threads[0]);
  std::vector<std::string> events = self_catch_events(gcc() ? "-" : "~");
  events.erase(events.begin());
  events.pop_back();
  EXPECT_EQ(call_events(trace), events);
}

// The tree of longjmp_sibling: every work frame is left by a longjmp to f;
// handle and the later works are f's callees, at the stack pointer of the
// work frame abandoned just before.
const Edges kSiblingTree = {
    {{"", "main"}, 1},   {{"main", "f"}, 1},    {{"f", "work"}, 3},
    {{"f", "handle"}, 1}, {{"work", "leaf"}, 3}, {{"handle", "leaf"}, 1},
};

// The events of longjmp_sibling: each work frame is closed as unwound by the
// next call f makes, or by f's exit.
std::vector<std::string> longjmp_sibling_events(bool with_leaf) {
  std::vector<std::string> v{"+main", "+f"};
  auto enter = [&](const std::string& fn) {
    v.push_back("+" + fn);
    if (with_leaf) v.insert(v.end(), {"+leaf", "-leaf"});
  };
  enter("work");
  v.push_back("~work");
  enter("handle");
  v.push_back("-handle");
  enter("work");
  v.push_back("~work");
  enter("work");
  v.insert(v.end(), {"~work", "-f", "-main"});
  return v;
}

TEST_P(UnwindTest, CallAtTheStackPointerOfALongjmpedFrame) {
  const std::string trace = record("longjmp_sibling", {});
  TraceSummary s = summarize(trace);
  ASSERT_EQ(s.threads.size(), 1u);
  const ThreadSummary& t = s.threads[0];
  EXPECT_TRUE(t.balanced()) << summary(t);
  EXPECT_EQ(t.entries, 10u);
  EXPECT_EQ(t.exits, 7u) << summary(t);
  EXPECT_EQ(t.unwound, 3u) << summary(t);  // the three work frames
  EXPECT_EQ(s.entry_depths["work"], (std::map<uint32_t, uint64_t>{{3, 3}}));
  EXPECT_EQ(s.entry_depths["handle"], (std::map<uint32_t, uint64_t>{{3, 1}}));
  EXPECT_EQ(s.entry_depths["leaf"], (std::map<uint32_t, uint64_t>{{4, 4}}));
  EXPECT_EQ(call_events(trace), longjmp_sibling_events(true));
  EXPECT_EQ(tree_edges(trace), kSiblingTree);
  EXPECT_EQ(callers(trace, "handle"), (std::map<std::string, uint64_t>{{"f", 1}}));
  EXPECT_EQ(callers(trace, "work"), (std::map<std::string, uint64_t>{{"f", 3}}));
}

TEST_P(UnwindTest, CallAtTheStackPointerOfALongjmpedFrameProfileMode) {
  const std::string trace = record("longjmp_sibling", {"--mode=profile"});
  EXPECT_EQ(tree_edges(trace), kSiblingTree);
  EXPECT_EQ(callers(trace, "handle"), (std::map<std::string, uint64_t>{{"f", 1}}));
}

TEST_P(UnwindTest, CallAtTheStackPointerOfALongjmpedFrameFiltered) {
  // leaf excluded: the engine writes the events of the others.
  const std::string trace = record("longjmp_sibling", {"--exclude", "leaf"});
  TraceSummary s = summarize(trace);
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_TRUE(s.threads[0].balanced()) << summary(s.threads[0]);
  EXPECT_EQ(s.threads[0].entries, 6u);
  EXPECT_EQ(s.threads[0].unwound, 3u) << summary(s.threads[0]);
  EXPECT_EQ(call_events(trace), longjmp_sibling_events(false));
  EXPECT_EQ(tree_edges(trace), (Edges{{{"", "main"}, 1}, {{"main", "f"}, 1}, {{"f", "work"}, 3}, {{"f", "handle"}, 1}}));
  EXPECT_EQ(callers(trace, "handle"), (std::map<std::string, uint64_t>{{"f", 1}}));
}

std::vector<std::string> inlined_events() {
  std::vector<std::string> v{"+main"};
  for (int i = 0; i < 2; ++i) {
    v.insert(v.end(), {"+outer", "+mid", "+inner", "-inner", "+inner", "-inner", "-mid", "-outer", "+top"});
    for (int n = 4; n >= 0; --n) v.push_back("+rec");
    for (int n = 4; n >= 0; --n) v.push_back("-rec");
    v.push_back("-top");
  }
  v.push_back("-main");
  return v;
}

TEST_P(UnwindTest, InlinedCallsStayNested) {
  const std::string trace = record("inlined", {});
  TraceSummary s = summarize(trace);
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_TRUE(s.threads[0].balanced()) << summary(s.threads[0]);
  EXPECT_EQ(s.threads[0].unwound, 0u);
  EXPECT_EQ(call_events(trace), inlined_events());
}

TEST_P(UnwindTest, InlinedCallsStayNestedProfileMode) {
  const std::string trace = record("inlined", {"--mode=profile"});
  EXPECT_EQ(tree_edges(trace), (Edges{{{"", "main"}, 1},
                                      {{"main", "outer"}, 2},
                                      {{"outer", "mid"}, 2},
                                      {{"mid", "inner"}, 4},
                                      {{"main", "top"}, 2},
                                      {{"top", "rec"}, 2},
                                      {{"rec", "rec"}, 8}}));
}

INSTANTIATE_TEST_SUITE_P(Compilers, UnwindTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
