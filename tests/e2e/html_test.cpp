// `callscope html` on real programs, for every compiler variant: the data
// the page carries (read back from the page itself) has the exact counts of
// tests/fixtures/record/views.c in every view, the timeline keeps its bounds
// on a program with more calls than it draws one by one, profile-mode and
// memory traces get their sections, and nothing in the page is fetched.
// browser_test.cpp opens the pages in Chromium.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

using nlohmann::json;

// The JSON inside the page's <script id="callscope-data">.
json page_data(const std::string& page) {
  const std::string open = "id=\"callscope-data\">";
  const size_t a = page.find(open);
  if (a == std::string::npos) return json();
  const size_t b = page.find("</script>", a);
  return json::parse(page.substr(a + open.size(), b - a - open.size()), nullptr, false);
}

// Calls per function name in the flat profile.
std::map<std::string, uint64_t> flat_calls(const json& d) {
  std::map<std::string, uint64_t> out;
  for (const json& r : d["flat"]) out[d["functions"][r[0].get<size_t>()][0].get<std::string>()] += r[1].get<uint64_t>();
  return out;
}

class HtmlTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    trace_ = dir_.file("views.trace");
    RunResult r = callscope({"record", "-o", trace_, "--", fixture(GetParam(), "views")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  json html(std::vector<std::string> args, std::string* page = nullptr) {
    const std::string out = dir_.file("page.html");
    args.insert(args.begin(), {"html", "-o", out});
    RunResult r = callscope(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string text = read_file(out);
    if (page) *page = text;
    return page_data(text);
  }
  TempDir dir_;
  std::string trace_;
};

TEST_P(HtmlTest, EveryViewHasTheExactCounts) {
  std::string page;
  const json d = html({trace_}, &page);
  ASSERT_TRUE(d.is_object()) << page.substr(0, 500);
  const auto calls = flat_calls(d);
  EXPECT_EQ(calls.at("main"), 1u);
  EXPECT_EQ(calls.at("parse"), 3u);
  EXPECT_EQ(calls.at("token"), 30u);
  EXPECT_EQ(calls.at("worker"), 2u);
  EXPECT_EQ(calls.at("work"), 200u);
  EXPECT_EQ(calls.at("leaf"), 400u);
  // The summary: the run as `callscope info` sees it.
  EXPECT_EQ(d["info"]["calls"], 637);
  EXPECT_EQ(d["info"]["threads"].size(), 3u);
  EXPECT_EQ(d["threads"].size(), 3u);
  // Trees: per thread (a frame per thread, then main...) and merged.
  auto tree_calls = [&](const json& nodes, const std::string& name) {
    uint64_t n = 0;
    for (const json& node : nodes)
      if (node[1].get<int64_t>() >= 0 && d["functions"][node[1].get<size_t>()][0] == name) n += node[3].get<uint64_t>();
    return n;
  };
  EXPECT_EQ(tree_calls(d["tree"], "token"), 30u);
  EXPECT_EQ(tree_calls(d["merged_tree"], "leaf"), 400u);
  size_t thread_frames = 0;
  for (const json& node : d["tree"]) thread_frames += node[0] == 0 && node[1] == -1;
  EXPECT_EQ(thread_frames, 3u);
  // Callers and callees: main calls parse 3 times, parse calls token 30.
  std::map<std::pair<std::string, std::string>, uint64_t> edges;
  for (const json& e : d["edges"]) {
    const std::string caller = e[0].get<int64_t>() < 0 ? "" : d["functions"][e[0].get<size_t>()][0].get<std::string>();
    edges[{caller, d["functions"][e[1].get<size_t>()][0].get<std::string>()}] += e[2].get<uint64_t>();
  }
  EXPECT_EQ((edges[{"main", "parse"}]), 3u);
  EXPECT_EQ((edges[{"parse", "token"}]), 30u);
  EXPECT_EQ((edges[{"", "worker"}]), 2u);
  // The timeline: every call drawn one by one (fewer than the bound), at
  // the right depths; the stack measured.
  const json& t = d["timeline"];
  EXPECT_EQ(t["calls"], 637);
  EXPECT_EQ(t["detail"].size(), 637u);
  EXPECT_EQ(t["threads"].size(), 3u);
  std::map<std::string, std::set<int>> depths;
  for (const json& c : t["detail"]) depths[d["functions"][c[4].get<size_t>()][0]].insert(c[3].get<int>());
  EXPECT_EQ(depths["token"], (std::set<int>{2}));
  EXPECT_EQ(depths["leaf"], (std::set<int>{2}));
  EXPECT_TRUE(d.contains("stack"));
  // The flame graph is in the page, and the page fetches nothing.
  EXPECT_NE(page.find("class=\"callscope-flame\""), std::string::npos);
  EXPECT_NE(page.find("Content-Security-Policy"), std::string::npos);
  for (const char* ref : {"src=\"http", "href=\"http", "src='http", "url(http", "@import"})
    EXPECT_EQ(page.find(ref), std::string::npos) << ref;
}

TEST_P(HtmlTest, FiltersAndWindows) {
  const json only = html({trace_, "-t", "1"});
  EXPECT_EQ(only["threads"].size(), 1u);
  EXPECT_EQ(flat_calls(only).count("parse"), 0u);
  EXPECT_EQ(only["timeline"]["calls"], 301);
  const json through = html({trace_, "-F", "token"});
  EXPECT_EQ(flat_calls(through).at("token"), 30u);
  EXPECT_NE(through["filters"].get<std::string>().find("paths through token"), std::string::npos);
  for (const json& c : through["timeline"]["detail"]) {
    const std::string name = through["functions"][c[4].get<size_t>()][0];
    EXPECT_TRUE(name == "main" || name == "parse" || name == "token") << name;
  }
  const json whole = html({trace_, "--from", "0", "--to", "3600s"});
  EXPECT_EQ(whole["timeline"]["calls"], 637);
}

TEST_P(HtmlTest, TimelineStaysBoundedOnManyCalls) {
  // fib(24): 150,049 calls of fib, more than the 60,000 drawn one by one.
  const std::string trace = dir_.file("fib.trace");
  ASSERT_EQ(callscope({"record", "-o", trace, "--", fixture(GetParam(), "fib"), "24"}).exit_code, 0);
  std::string page;
  const json d = html({trace}, &page);
  const json& t = d["timeline"];
  uint64_t all = 0;  // fib's, main's (and atoi's, an inline wrapper clang -O2 instruments)
  for (const auto& [name, n] : flat_calls(d)) all += n;
  EXPECT_EQ(t["calls"], all);
  EXPECT_EQ(t["detail"].size(), 60000u);
  EXPECT_GT(t["detail_min_ns"].get<uint64_t>(), 0u);
  // The drawn calls are the longest: every one at least detail_min_ns.
  for (const json& c : t["detail"]) EXPECT_GE(c[2].get<uint64_t>() + 1, t["detail_min_ns"].get<uint64_t>());
  // The raster covers every depth of fib's recursion (25 levels under main).
  EXPECT_GE(t["threads"][0]["lanes"].size(), 25u);
  EXPECT_LT(page.size(), 10u << 20);
  EXPECT_EQ(flat_calls(d).at("fib"), 150049u);
}

TEST_P(HtmlTest, DeepRecursionIsCutAtTheLaneLimit) {
  const std::string trace = dir_.file("deep.trace");
  ASSERT_EQ(callscope({"record", "-o", trace, "--", fixture(GetParam(), "recursion"), "200"}).exit_code, 0);
  const json d = html({trace});
  EXPECT_EQ(d["timeline"]["threads"][0]["lanes"].size(), 64u);
  EXPECT_EQ(d["timeline"]["too_deep"], 202 - 64);
}

TEST_P(HtmlTest, ProfileModeAndMemoryTraces) {
  const std::string prof = dir_.file("server.trace");
  RunResult r = run({"env", "CALLSCOPE_MODE=profile", CALLSCOPE_EXE, "record", "-o", prof, "--",
                     fixture(GetParam(), "server")},
                    "work 10\ndump\nwork 5\ndump\nquit\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json p = html({prof});
  EXPECT_FALSE(p.contains("timeline"));
  ASSERT_TRUE(p.contains("snapshots"));
  ASSERT_GE(p["snapshots"].size(), 2u);
  std::map<std::string, uint64_t> first;
  for (const json& f : p["snapshots"][0]["flat"]) first[f[0]] += f[2].get<uint64_t>();
  EXPECT_EQ(first["handle_request"], 80u);
  EXPECT_EQ(flat_calls(p).at("handle_request"), 120u);

  const std::string mem = dir_.file("memory.trace");
  ASSERT_EQ(callscope({"record", "--memory", "-o", mem, "--", fixture(GetParam(), "memory")}).exit_code, 0);
  const json m = html({mem});
  ASSERT_TRUE(m.contains("memory"));
  EXPECT_GT(m["memory"]["summary"]["allocs"].get<uint64_t>(), 0u);
  EXPECT_FALSE(html({trace_}).contains("memory"));
}

TEST_P(HtmlTest, DefaultOutputAndErrors) {
  RunResult r = run({"sh", "-c", "cd '" + dir_.path() + "' && '" + CALLSCOPE_EXE + "' html views.trace"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("views.html"), std::string::npos) << r.err;
  EXPECT_TRUE(page_data(read_file(dir_.file("views.html"))).is_object());
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"html"}, "trace is required"},
      {{"html", trace_, "-o", trace_}, "is a callscope trace: not overwritten"},
      {{"html", trace_, "-o", dir_.path()}, "is a directory"},
      {{"html", dir_.file("missing.trace")}, "missing.trace"},
      {{"html", trace_, "-F", "no_such_function"}, "no function matches"},
      {{"html", trace_, "-t", "7"}, "7"},
      {{"html", trace_, "--dump", "2"}, "--dump needs a profile-mode trace"},
  };
  for (const Case& c : cases) {
    RunResult e = callscope(c.args);
    EXPECT_NE(e.exit_code, 0) << c.message;
    EXPECT_NE(e.err.find(c.message), std::string::npos) << c.message << "\n" << e.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, HtmlTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
