// The pictures in a real browser: headless Chromium (Debian's chromium and
// chromium-driver, driven by python3-selenium through
// tests/browser/browser_check.py) opens what `callscope flame` and
// `callscope html` write, uses them as a person would -- clicks a frame,
// searches, presses Escape -- and checks what shows, with no console
// errors; and speedscope (the npm package pinned in tests/browser/speedscope,
// served locally; tests/browser/speedscope_check.py) opens what `callscope
// export` writes for it. Screenshots are written to build/screenshots/ for a
// person to look at. One compiler variant: what is checked is the page, not
// the recording.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

class BrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    variant_ = variants().back();
    trace_ = dir_.file("views.trace");
    RunResult r = callscope({"record", "-o", trace_, "--", fixture(variant_, "views")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ::mkdir(SCREENSHOT_DIR, 0755);
  }
  // browser_check.py KIND FILE build/screenshots/NAME ARGS...
  RunResult check(const std::string& kind, const std::string& file, const std::string& name,
                  const std::vector<std::string>& args) {
    std::vector<std::string> argv = {BROWSER_PYTHON, BROWSER_CHECK, kind, file, std::string(SCREENSHOT_DIR) + "/" + name};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }
  // speedscope_check.py APP FILE build/screenshots/NAME ARGS...
  RunResult speedscope(const std::string& file, const std::string& name, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {BROWSER_PYTHON, SPEEDSCOPE_CHECK, SPEEDSCOPE_APP, file,
                                     std::string(SCREENSHOT_DIR) + "/" + name};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }
  std::string variant_;
  TempDir dir_;
  std::string trace_;
};

TEST_F(BrowserTest, FlameGraphZoomsAndSearches) {
  const std::string svg = dir_.file("flame.svg");
  RunResult f = callscope({"flame", trace_, "--by", "calls", "-o", svg});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  // parse: 3 calls of its own and 30 of token above it, of 637.
  RunResult r = check("flame", svg, "flame", {"--zoom", "parse", "--search", "^parse$", "--share", "5.2",
                                              "--min-frames", "14"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("zoom: parse"), std::string::npos) << r.out;
  // Everything but the root matches ".": the whole graph.
  RunResult all = check("flame", svg, "flame-all", {"--search", ".", "--share", "100"});
  EXPECT_EQ(all.exit_code, 0) << all.err << all.out;
}

TEST_F(BrowserTest, IcicleAndDifferentialGraphs) {
  const std::string icicle = dir_.file("icicle.svg");
  ASSERT_EQ(callscope({"flame", trace_, "--icicle", "--merge", "-o", icicle}).exit_code, 0);
  RunResult r = check("flame", icicle, "icicle", {"--zoom", "work", "--search", "leaf"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::string again = dir_.file("again.trace");
  ASSERT_EQ(callscope({"record", "-o", again, "--", fixture(variant_, "views")}).exit_code, 0);
  const std::string diff = dir_.file("diff.svg");
  ASSERT_EQ(callscope({"flame", "--diff", trace_, again, "-o", diff}).exit_code, 0);
  RunResult d = check("flame", diff, "flame-diff", {"--zoom", "worker", "--search", "work"});
  EXPECT_EQ(d.exit_code, 0) << d.err << d.out;
}

TEST_F(BrowserTest, HtmlReportViews) {
  const std::string page = dir_.file("views.html");
  RunResult h = callscope({"html", trace_, "-o", page});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  // Every tab opened: the flat profile sorted and filtered, callers of
  // parse from a click on its name, the tree, a flame frame zoomed, the
  // timeline zoomed by the wheel and dragged.
  RunResult r = check("html", page, "html", {"--function", "parse", "--min-rows", "7"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("callers: Callers of parse | caller calls total | main 3"), std::string::npos) << r.out;
}

// Running or waiting (issue 32): the summary gives each thread's time
// running, runnable and blocked, and the longest waits with their call
// paths and reasons (the kernel's events: root or CAP_PERFMON for the
// system calls; skipped without).
TEST_F(BrowserTest, HtmlReportShowsWhereThreadsWaited) {
  const std::string trace = dir_.file("waits.trace");
  RunResult rec = callscope({"record", "--events", "sched,syscalls", "-o", trace, "--", fixture(variant_, "waits"),
                             dir_.path()});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  if (rec.err.find("not recorded") != std::string::npos) GTEST_SKIP() << rec.err;
  const std::string page = dir_.file("waits.html");
  ASSERT_EQ(callscope({"html", trace, "-o", page}).exit_code, 0);
  RunResult r = check("html", page, "html-waits", {"--waits", "[futex]", "--waits", "take_lock"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
}

TEST_F(BrowserTest, HtmlReportOfProfileModeAndMemory) {
  const std::string prof = dir_.file("server.trace");
  RunResult rec = run({"env", "CALLSCOPE_MODE=profile", CALLSCOPE_EXE, "record", "-o", prof, "--",
                       fixture(variant_, "server")},
                      "work 10\ndump\nwork 5\ndump\nquit\n");
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  const std::string page = dir_.file("server.html");
  ASSERT_EQ(callscope({"html", prof, "-o", page}).exit_code, 0);
  RunResult r = check("html", page, "html-profile", {"--function", "handle_request"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("sections: summary functions tree callers flame snapshots"), std::string::npos) << r.out;
  const std::string mem = dir_.file("memory.trace");
  ASSERT_EQ(callscope({"record", "--memory", "-o", mem, "--", fixture(variant_, "memory")}).exit_code, 0);
  const std::string mpage = dir_.file("memory.html");
  ASSERT_EQ(callscope({"html", mem, "-o", mpage}).exit_code, 0);
  RunResult m = check("html", mpage, "html-memory", {});
  EXPECT_EQ(m.exit_code, 0) << m.err << m.out;
  EXPECT_NE(m.out.find("memory"), std::string::npos) << m.out;
}

// speedscope picks its importer by the file's name: NAME.speedscope.json for
// its own format, any other .json sniffed (NAME.chrome.json excepted: that
// is DevTools' timeline to it). The names docs/export.md gives.
std::string speedscope_name(const std::string& base, const std::string& format) {
  return base + (format == "chrome" ? "-chrome.json" : ".speedscope.json");
}

TEST_F(BrowserTest, SpeedscopeOpensTheChromeAndSpeedscopeExports) {
  // Three threads, each a profile of its own with its functions; no warning
  // of speedscope's importers.
  for (const char* format : {"chrome", "speedscope"}) {
    const std::string file = dir_.file(speedscope_name("views", format));
    RunResult e = callscope({"export", "-f", format, "-o", file, trace_});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    RunResult r = speedscope(file, std::string("speedscope-") + format,
                             {"--threads", "3", "--expect", "0=main,parse,report,token", "--expect",
                              "1=leaf,work,worker", "--expect", "2=leaf,work,worker"});
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err << r.out;
    EXPECT_NE(r.out.find("thread 1: leaf work worker"), std::string::npos) << format << ": " << r.out;
  }
  // The Chrome export named NAME.chrome.json is refused (docs/export.md
  // says so): speedscope reads it as DevTools' array of events.
  const std::string devtools = dir_.file("views.chrome.json");
  ASSERT_EQ(callscope({"export", "-f", "chrome", "-o", devtools, trace_}).exit_code, 0);
  RunResult r = speedscope(devtools, "speedscope-devtools-name", {"--threads", "3"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("Failed to load format"), std::string::npos) << r.err;
}

TEST_F(BrowserTest, SpeedscopeNestsFramesLeftTogether) {
  // longjmp leaves runner and 50 deep frames at one tick, 1,000 times.
  // Written as Chrome's complete events (ts + dur, added in doubles by the
  // reader), most of those ends came out of order: speedscope warned
  // "Tried to end runner when deep was on top" hundreds of times and drew a
  // staircase of runners. Begins and ends written once each nest exactly.
  const std::string trace = dir_.file("longjmp.trace");
  RunResult rec = callscope({"record", "-o", trace, "--", fixture(variant_, "longjmp")});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  for (const char* format : {"chrome", "speedscope"}) {
    const std::string file = dir_.file(speedscope_name("longjmp", format));
    RunResult e = callscope({"export", "-f", format, "-o", file, trace});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    RunResult r = speedscope(file, std::string("speedscope-longjmp-") + format,
                             {"--threads", "1", "--expect", "0=after,deep,main,runner"});
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err << r.out;
  }
}

}  // namespace
}  // namespace callscope::e2e
