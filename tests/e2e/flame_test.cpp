// `callscope flame` on real programs, for every compiler variant: the
// frames and their widths (weighted by calls, the widths are exact), the
// filters, profile-mode traces, differential graphs of two traces and of
// two snapshots, determinism, well-formed XML, and the errors. The browser
// tests open the SVG in Chromium (browser_test.cpp).
#include <gtest/gtest.h>

#include <set>

#include <fstream>
#include <regex>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

struct SvgFrame {
  uint64_t s, w;
  uint32_t d;
  std::string title, fill;
};

// The frames of a flame graph by name (data-n), in document order.
std::multimap<std::string, SvgFrame> frames_of(const std::string& svg) {
  static const std::regex frame(
      "<g class=\"f\" data-s=\"(\\d+)\" data-w=\"(\\d+)\" data-d=\"(\\d+)\" data-n=\"([^\"]*)\"><title>([^<]*)</title>"
      "<rect [^>]*fill=\"([^\"]+)\"");
  std::multimap<std::string, SvgFrame> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), frame); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    out.emplace(m[4].str(), SvgFrame{std::stoull(m[1].str()), std::stoull(m[2].str()),
                                     static_cast<uint32_t>(std::stoul(m[3].str())), m[5].str(), m[6].str()});
  }
  return out;
}

uint64_t width_of(const std::multimap<std::string, SvgFrame>& f, const std::string& name) {
  uint64_t w = 0;
  auto [a, b] = f.equal_range(name);
  for (auto it = a; it != b; ++it) w += it->second.w;
  return w;
}

// Whether `file` is well-formed XML (Python's parser: independent of ours).
bool well_formed(const std::string& file) {
  RunResult r = run({EXPORT_PYTHON, "-c", "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])", file});
  return r.exit_code == 0;
}

class FlameTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    trace_ = dir_.file("views.trace");
    RunResult r = callscope({"record", "-o", trace_, "--", fixture(GetParam(), "views")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::string flame(std::vector<std::string> args, const std::string& name = "flame.svg") {
    const std::string out = dir_.file(name);
    args.insert(args.begin(), {"flame", "-o", out});
    RunResult r = callscope(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(well_formed(out)) << out;
    return read_file(out);
  }
  TempDir dir_;
  std::string trace_;
};

TEST_P(FlameTest, FramesAreAsWideAsTheirCalls) {
  const auto f = frames_of(flame({trace_, "--by", "calls"}));
  // Per thread: [thread 0] > main > parse > token, [thread 1|2] > worker > work > leaf.
  EXPECT_EQ(width_of(f, "all"), 637u);
  EXPECT_EQ(width_of(f, "token"), 30u);
  EXPECT_EQ(width_of(f, "parse"), 33u);
  EXPECT_EQ(width_of(f, "report"), 1u);
  EXPECT_EQ(width_of(f, "main"), 35u);
  EXPECT_EQ(f.count("worker"), 2u);
  EXPECT_EQ(width_of(f, "worker"), 2u * 301);
  EXPECT_EQ(width_of(f, "leaf"), 400u);
  // The threads' frames: main's 35 calls, each worker's 301 (which thread
  // gets index 0 follows the order the trace has them in, not the program's).
  std::multiset<uint64_t> thread_widths;
  for (const auto& [name, frame] : f)
    if (name.rfind("[thread ", 0) == 0) thread_widths.insert(frame.w);
  EXPECT_EQ(thread_widths, (std::multiset<uint64_t>{35, 301, 301}));
  EXPECT_EQ(f.find("token")->second.d, 4u);
  EXPECT_NE(f.find("parse")->second.title.find("parse (views, views.c:"), std::string::npos) << f.find("parse")->second.title;
  EXPECT_NE(f.find("parse")->second.title.find(": 3 calls, total "), std::string::npos);
  // A callee lies inside its caller.
  const SvgFrame& parse = f.find("parse")->second;
  const SvgFrame& token = f.find("token")->second;
  EXPECT_GE(token.s, parse.s);
  EXPECT_LE(token.s + token.w, parse.s + parse.w);
}

TEST_P(FlameTest, TimeWidthsNest) {
  const auto f = frames_of(flame({trace_}));
  const SvgFrame& all = f.find("all")->second;
  uint64_t threads = 0;
  for (const char* t : {"[thread 0: views]", "[thread 1: views]", "[thread 2: views]"}) threads += width_of(f, t);
  EXPECT_EQ(threads, all.w);
  EXPECT_GE(width_of(f, "parse"), width_of(f, "token"));
  EXPECT_GT(width_of(f, "token"), 0u);
  // --by total: each path's total time, still nested.
  const auto t = frames_of(flame({trace_, "--by", "total"}, "total.svg"));
  EXPECT_GE(width_of(t, "main"), width_of(t, "parse"));
  EXPECT_GE(width_of(t, "parse"), width_of(t, "token"));
}

TEST_P(FlameTest, FiltersMergeAndIcicle) {
  const auto only = frames_of(flame({trace_, "--by", "calls", "-F", "token"}));
  EXPECT_EQ(only.size(), 5u);  // all, the thread, main, parse, token
  EXPECT_EQ(width_of(only, "token"), 30u);
  EXPECT_EQ(width_of(only, "parse"), 30u);  // the path to token weighs only token
  const auto one = frames_of(flame({trace_, "--by", "calls", "-t", "1"}, "t1.svg"));
  EXPECT_EQ(one.count("[thread 1: views]"), 1u);
  EXPECT_EQ(one.count("[thread 2: views]"), 0u);
  EXPECT_EQ(width_of(one, "all"), 301u);
  const auto merged = frames_of(flame({trace_, "--by", "calls", "--merge"}, "merged.svg"));
  EXPECT_EQ(merged.count("worker"), 1u);
  EXPECT_EQ(width_of(merged, "worker"), 602u);
  for (const auto& [name, fr] : merged) EXPECT_EQ(name.find("[thread"), std::string::npos) << name;
  // Icicle: the same frames, the root on top.
  const std::string flame_svg = flame({trace_, "--by", "calls"}, "a.svg");
  const std::string icicle_svg = flame({trace_, "--by", "calls", "--icicle"}, "b.svg");
  static const std::regex root_y("data-n=\"all\"><title>[^<]*</title><rect x=\"[0-9.]+\" y=\"(\\d+)\"");
  std::smatch a, b;
  ASSERT_TRUE(std::regex_search(flame_svg, a, root_y));
  ASSERT_TRUE(std::regex_search(icicle_svg, b, root_y));
  EXPECT_GT(std::stoi(a[1].str()), std::stoi(b[1].str()));
}

TEST_P(FlameTest, SameTraceSameBytes) {
  EXPECT_EQ(flame({trace_}, "1.svg"), flame({trace_}, "2.svg"));
  // And a self-contained file: no external references.
  const std::string svg = read_file(dir_.file("1.svg"));
  EXPECT_EQ(svg.find("http://", svg.find("xmlns=\"http://www.w3.org/2000/svg\"") + 40), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_NE(svg.find("<script"), std::string::npos);
}

TEST_P(FlameTest, ProfileModeTraces) {
  const std::string prof = dir_.file("profile.trace");
  RunResult r = callscope({"record", "--mode", "profile", "-o", prof, "--", fixture(GetParam(), "views")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = frames_of(flame({prof, "--by", "calls"}));
  EXPECT_EQ(width_of(f, "all"), 637u);
  EXPECT_EQ(width_of(f, "parse"), 33u);
  const auto d = frames_of(flame({prof, "--by", "calls", "--dump", "1"}, "dump.svg"));
  EXPECT_EQ(width_of(d, "all"), 637u);
}

TEST_P(FlameTest, DifferenceOfTwoTraces) {
  // The same program twice: every frame's calls unchanged, all white.
  const std::string second = dir_.file("again.trace");
  ASSERT_EQ(callscope({"record", "-o", second, "--", fixture(GetParam(), "views")}).exit_code, 0);
  const auto f = frames_of(flame({"--diff", trace_, second, "--by", "calls"}));
  EXPECT_EQ(width_of(f, "token"), 30u);
  for (const auto& [name, fr] : f) {
    if (name == "all") continue;
    EXPECT_EQ(fr.fill, "rgb(255,255,255)") << name << " " << fr.title;
    EXPECT_NE(fr.title.find(": +0 "), std::string::npos) << fr.title;
  }
  // Against the main thread alone: the workers are new (red).
  const auto g = frames_of(flame({"--diff", trace_, second, "--by", "calls", "-t", "0"}, "t0.svg"));
  EXPECT_EQ(g.count("worker"), 0u);
}

TEST_P(FlameTest, DifferenceOfTwoSnapshots) {
  // The server fixture: 100 requests per worker before snapshot 1, 10 more
  // before snapshot 2.
  const std::string prof = dir_.file("server.trace");
  RunResult r = run({"env", "CALLSCOPE_MODE=profile", CALLSCOPE_EXE, "record", "-o", prof, "--",
                     fixture(GetParam(), "server")},
                    "work 100\ndump\nwork 10\ndump\nquit\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = frames_of(flame({"--diff", "1", "2", prof, "--by", "calls"}));
  ASSERT_GE(f.count("handle_request"), 1u);
  const SvgFrame& h = f.find("handle_request")->second;
  EXPECT_NE(h.title.find("own calls 800 → 880: +80 (+10.0%)"), std::string::npos) << h.title;
  EXPECT_EQ(h.fill.rfind("rgb(255,", 0), 0u) << h.fill;  // grew: red
  const std::string svg = read_file(dir_.file("flame.svg"));
  EXPECT_NE(svg.find("snapshot 1"), std::string::npos);
}

TEST_P(FlameTest, BadArgumentsGetClearErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"flame"}, "a trace is required"},
      {{"flame", trace_, "--by", "bytes"}, "unknown --by 'bytes'"},
      {{"flame", "--diff", "1", "2"}, "a snapshot number needs the trace"},
      {{"flame", "--diff", "1", "2", trace_}, "holds every call, not snapshots"},
      {{"flame", "--diff", trace_, dir_.file("missing.trace")}, "missing.trace"},
      {{"flame", trace_, "--width", "10"}, "--width takes 200 to 100000"},
      {{"flame", trace_, "-o", trace_}, "is a callscope trace: not overwritten"},
      {{"flame", trace_, "-F", "no_such_function"}, "no function matches"},
      {{"flame", trace_, "--dump", "1"}, "--dump needs a profile-mode trace"},
      {{"flame", trace_, "--from", "soon"}, "bad duration 'soon'"},
  };
  for (const Case& c : cases) {
    RunResult r = callscope(c.args);
    EXPECT_NE(r.exit_code, 0) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.message << "\n" << r.err;
  }
  EXPECT_EQ(callscope({"info", trace_}).exit_code, 0);
}

INSTANTIATE_TEST_SUITE_P(Variants, FlameTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
