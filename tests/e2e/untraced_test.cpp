// A thread that cannot be traced is never silent. When the runtime cannot
// make a thread's event file -- the raw session's file system is full
// (ENOSPC), no descriptor is left (EMFILE) -- the thread runs untraced, and
// the trace still names it, with the reason: `info` lists it, `report`,
// `replay` and `info` warn, `record` and `finish` warn at the end. The meta
// records written once the file system is full (names, the thread, a
// module, the exit) land in the meta file's reserve.
#include <errno.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The untraced threads of a trace.
std::vector<const format::ThreadInfo*> untraced(const TraceSummary& s) {
  std::vector<const format::ThreadInfo*> out;
  for (const format::ThreadInfo& t : s.reader->threads())
    if (t.record.flags & format::kThreadUntraced) out.push_back(&t);
  return out;
}

// What every view must say about the one untraced thread "late-worker".
void expect_views_name_it(const std::string& trace, const std::string& reason) {
  RunResult info = callscope({"info", trace});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_TRUE(contains(info.out, "untraced:   1 thread ran without being recorded")) << info.out;
  EXPECT_TRUE(contains(info.out, "\nuntraced threads (they ran, but no event file could be made for them")) << info.out;
  EXPECT_TRUE(contains(info.out, " late-worker ")) << info.out;
  EXPECT_TRUE(contains(info.out, reason)) << info.out;
  const std::string warning = "warning: 1 thread ran without being recorded (its event file could not be made: "
                              "'late-worker' (tid ";
  EXPECT_TRUE(contains(info.err, "callscope info: " + warning)) << info.err;
  RunResult report = callscope({"report", trace});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(contains(report.err, "callscope report: " + warning)) << report.err;
  EXPECT_TRUE(contains(report.err, reason)) << report.err;
  RunResult replay = callscope({"replay", trace});
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_TRUE(contains(replay.err, "callscope replay: " + warning)) << replay.err;
  RunResult json = callscope({"info", "--format", "json", trace});
  EXPECT_TRUE(contains(json.out, "\"untraced_threads\": 1")) << json.out;
}

class UntracedTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
};

// A real full file system: a 2 MiB tmpfs, mounted as --raw-dir in a mount
// namespace of our own (so nothing outside sees it), filled by the program
// once its main thread is traced.
TEST_P(UntracedTest, AThreadThatFindsTheFileSystemFullIsNamed) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root (unshare -m)";
  if (run({"sh", "-c", "command -v unshare"}).exit_code != 0) GTEST_SKIP() << "unshare(1) is not installed";
  const std::string mnt = dir_.file("mnt");
  const std::string trace = dir_.file("full.trace");
  const std::string script =
      "mkdir '" + mnt + "' && mount -t tmpfs -o size=2m tmpfs '" + mnt +
      "' 2>/dev/null || { echo SKIP: cannot mount a tmpfs; exit 0; }\n'" + CALLSCOPE_EXE + "' record --raw-dir '" +
      mnt + "' -o '" + trace + "' -- '" + fixture(GetParam(), "untraced") + "' full '" + mnt + "/filler' '" +
      fixture(GetParam(), "libplugin.so") + "'\necho \"record exit $?\"\n";
  RunResult r = run({"unshare", "-m", "sh", "-c", script});
  if (contains(r.out, "SKIP") || (r.out.empty() && contains(r.err, "unshare")))
    GTEST_SKIP() << "no private mount namespace here: " << r.out << r.err;
  ASSERT_TRUE(contains(r.out, "record exit 0\n")) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "worker=200 main=")) << r.out;
  EXPECT_TRUE(contains(r.err, "callscope record: warning: 1 thread ran without being recorded (no event file could "
                              "be made for it: 'late-worker' (pid "))
      << r.err;
  EXPECT_TRUE(contains(r.err, "): No space left on device (ENOSPC)); 'callscope info' lists it\n")) << r.err;
  // The file the thread began (a header page, no segment) was removed: no
  // thread file found damaged, no second record of the thread.
  EXPECT_FALSE(contains(r.err, ".ev")) << r.err;

  TraceSummary s = summarize(trace);
  auto u = untraced(s);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(s.reader->threads().size(), 2u);
  EXPECT_EQ(u[0]->name, "late-worker");
  EXPECT_EQ(u[0]->record.untraced_error, ENOSPC);
  EXPECT_EQ(u[0]->record.events, 0u);
  EXPECT_EQ(s.calls_of("worker_work"), 0u);
  EXPECT_EQ(s.calls_of("main_work"), 10u);
  // Written after the file system filled, so only through the reserve: 100
  // renames (5.6 KB, more than a page), the module and its calls, the exit.
  const format::ThreadInfo& main_thread = s.reader->threads()[0];
  ASSERT_EQ(main_thread.names.size(), 101u);  // the name it started with, then each of the 100
  EXPECT_EQ(main_thread.names.back().name, "main-99");
  EXPECT_EQ(s.calls_of("plugin_square"), 4u);
  ASSERT_EQ(s.reader->processes().size(), 1u);
  EXPECT_EQ(s.reader->processes()[0].record.how, static_cast<uint32_t>(format::ExitHow::kExited));
  EXPECT_EQ(s.reader->processes()[0].record.code, 0);
  expect_views_name_it(trace, "No space left on device (ENOSPC)");
}

// No descriptor left: needs no root (the program lowers its own limit).
TEST_P(UntracedTest, AThreadWithNoDescriptorLeftIsNamed) {
  const std::string trace = dir_.file("nofile.trace");
  RunResult r = callscope({"record", "--raw-dir", dir_.path(), "-o", trace, "--", fixture(GetParam(), "untraced"), "nofile"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "callscope record: warning: 1 thread ran without being recorded")) << r.err;
  EXPECT_TRUE(contains(r.err, "'late-worker' (pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, "Too many open files (EMFILE)")) << r.err;
  TraceSummary s = summarize(trace);
  auto u = untraced(s);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0]->name, "late-worker");
  EXPECT_EQ(u[0]->record.untraced_error, EMFILE);
  EXPECT_EQ(s.calls_of("main_work"), 10u);
  expect_views_name_it(trace, "Too many open files (EMFILE)");
}

// Without `record` (the runtime preloaded, events in a raw session):
// `finish` finds the record in the meta file and warns the same way.
TEST_P(UntracedTest, FinishNamesIt) {
  const std::string raw = dir_.file("raw");
  const std::string trace = dir_.file("finished.trace");
  ASSERT_EQ(run({"mkdir", "-m", "0700", raw}).exit_code, 0);
  RunResult p = run({"env", "LD_PRELOAD=" + plain_path(RUNTIME_PATH), "CALLSCOPE_DIR=" + raw,
                     fixture(GetParam(), "untraced"), "nofile"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  RunResult f = callscope({"finish", "-o", trace, raw});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_TRUE(contains(f.err, "callscope finish: warning: 1 thread ran without being recorded")) << f.err;
  EXPECT_TRUE(contains(f.err, "Too many open files (EMFILE)")) << f.err;
  expect_views_name_it(trace, "Too many open files (EMFILE)");
}

INSTANTIATE_TEST_SUITE_P(Compilers, UntracedTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
