// `callscope query` over real recordings, for every compiler variant: D's
// one-liners give the exact call counts of tests/fixtures/record/profile.c,
// durations that hold its 10 ms sleep, its call paths by name; and over the
// threads fixture, every thread's calls, merged in time order.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

// "name value" lines into a map.
std::map<std::string, uint64_t> pairs(const std::string& text) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(text);
  std::string name;
  uint64_t value = 0;
  while (in >> name >> value) out[name] = value;
  return out;
}

class QueryTest : public ::testing::TestWithParam<std::string> {
 protected:
  void record(const std::string& fixture_name, std::vector<std::string> args = {}) {
    trace_ = dir_.file(fixture_name + ".trace");
    std::vector<std::string> cmd = {"record", "-o", trace_, "--", fixture(GetParam(), fixture_name)};
    cmd.insert(cmd.end(), args.begin(), args.end());
    RunResult r = callscope(cmd);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  RunResult query(const std::string& program) { return callscope({"query", "-q", "-n", program, trace_}); }
  TempDir dir_;
  std::string trace_;
};

TEST_P(QueryTest, CountsEveryCallOfTheExecutable) {
  record("profile");
  RunResult r = query("pid$target:a.out::entry { @[probefunc] = count(); } END { printa(\"%s %@d\\n\", @); }");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto n = pairs(r.out);
  EXPECT_EQ(n["main"], 1u) << r.out;
  EXPECT_EQ(n["caller_a"], 1u);
  EXPECT_EQ(n["caller_b"], 2u);
  EXPECT_EQ(n["middle"], 5u);
  EXPECT_EQ(n["leaf"], 500u);
  EXPECT_EQ(n["sleeper"], 1u);
}

TEST_P(QueryTest, DurationsAndSelfTimes) {
  record("profile");
  RunResult r = query(
      "pid$target::sleeper:return { printf(\"sleeper %d\\n\", duration); }"
      "pid$target::caller_a:return { printf(\"caller_a %d\\nself %d\\n\", duration, selfduration); }");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto n = pairs(r.out);
  EXPECT_GE(n["sleeper"], 10'000'000u) << r.out;
  EXPECT_GE(n["caller_a"], n["sleeper"]);
  EXPECT_LT(n["self"], 1'000'000u);  // the sleep is the sleeper's own time
}

TEST_P(QueryTest, StacksNameTheCallPath) {
  record("profile");
  RunResult r = query("BEGIN { seen = 0; } pid$target::leaf:entry /seen++ == 0/ { ustack(); }");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string top = "profile`leaf";
  ASSERT_NE(r.out.find(top), std::string::npos) << r.out;
  EXPECT_LT(r.out.find(top), r.out.find("profile`middle")) << r.out;
  EXPECT_LT(r.out.find("profile`middle"), r.out.find("profile`caller_a")) << r.out;
  EXPECT_LT(r.out.find("profile`caller_a"), r.out.find("profile`main")) << r.out;
}

TEST_P(QueryTest, ThreadsMergedInTimeOrder) {
  record("threads", {"4", "2000"});
  RunResult r = query(
      "BEGIN { last = 0; bad = 0; threads = 0; }"
      "pid$target::leaf:entry { @[tid] = count(); bad += timestamp < last; last = timestamp; }"
      "proc:::lwp-start { threads++; }"
      "END { printf(\"threads %d\\nbad %d\\n\", threads, bad); printa(\"tid%d %@d\\n\", @); }");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto n = pairs(r.out);
  EXPECT_EQ(n["threads"], 5u) << r.out;
  EXPECT_EQ(n["bad"], 0u) << r.out;
  size_t counted = 0;
  for (const auto& [name, value] : n) {
    if (name.rfind("tid", 0) != 0) continue;
    EXPECT_EQ(value, 2000u) << name;
    ++counted;
  }
  EXPECT_EQ(counted, 4u) << r.out;
}

TEST_P(QueryTest, ExitStopsWithItsStatus) {
  record("profile");
  RunResult r = query("pid$target::middle:entry { printf(\"middle\\n\"); exit(7); } END { printf(\"end\\n\"); }");
  EXPECT_EQ(r.exit_code, 7) << r.err;
  // (dtrace ends its output with a blank line, as the engine does)
  EXPECT_EQ(r.out, "middle\nend\n\n");
}

INSTANTIATE_TEST_SUITE_P(Variants, QueryTest, ::testing::ValuesIn(variants()), VariantName());

TEST(QueryErrors, MissingTraceAndBadScript) {
  RunResult r = callscope({"query", "-n", "BEGIN { exit(0); }", "/nonexistent/x.trace"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "callscope query: cannot open '/nonexistent/x.trace': No such file or directory\n");
  TempDir dir;
  RunResult rec = callscope({"record", "-o", dir.file("p.trace"), "--", fixture(variants().front(), "profile")});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  r = callscope({"query", "-n", "BEGIN { x = ; }", dir.file("p.trace")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("callscope query: failed to compile script"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 1: syntax error near \";\""), std::string::npos) << r.err;
}

}  // namespace
}  // namespace callscope::e2e
