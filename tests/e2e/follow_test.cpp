// record --follow: which of the program's descendants are traced. The
// runtime is preloaded into all of them; by default (hooked) a process with
// nothing to record -- no hooks, no patchable entries, no --libcalls or
// --memory -- stays dormant: no session files, not in the trace, counted in
// record's summary; one with hooks under it is traced, also below an
// uninstrumented shell; one that loads a library with hooks is set up then.
// --follow none traces the program only, --follow all every process (the
// behaviour before --follow). Counted, never timed: the system calls an
// uninstrumented child makes under record.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string q(const std::string& s) { return "'" + s + "'"; }

// The base names of the executables of a trace's processes, in trace order.
std::vector<std::string> process_names(const TraceSummary& s) {
  std::vector<std::string> out;
  for (const format::ProcessInfo& p : s.reader->processes()) out.push_back(p.exe.substr(p.exe.rfind('/') + 1));
  return out;
}

size_t count_of(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<size_t>(std::count(names.begin(), names.end(), name));
}

class FollowTest : public ::testing::Test {
 protected:
  // `record ARGS -o TRACE -- sh -c SCRIPT`; the trace's summary.
  TraceSummary record_sh(const std::vector<std::string>& args, const std::string& script) {
    std::vector<std::string> argv = {"record", "-o", trace_};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    last_ = callscope(argv);
    EXPECT_EQ(last_.exit_code, 0) << last_.err;
    return summarize(trace_);
  }
  std::string fx(const std::string& name) const { return q(fixture(one_variant(), name)); }

  TempDir dir_;
  std::string trace_ = dir_.file("t.trace");
  RunResult last_;
};

// (a) An uninstrumented child leaves no process in the trace, and record
// counts it by name; the instrumented one beside it is traced.
TEST_F(FollowTest, AnUninstrumentedChildIsCountedNotTraced) {
  if (one_variant().empty()) GTEST_SKIP() << "no compiler";
  TraceSummary s = record_sh({}, q(plain_fixture()) + " >/dev/null; " + fx("recursion") + " 10 >/dev/null; true");
  const auto names = process_names(s);
  EXPECT_EQ(count_of(names, "plain"), 0u) << testing::PrintToString(names);
  EXPECT_EQ(count_of(names, "recursion"), 1u) << testing::PrintToString(names);
  EXPECT_EQ(names.size(), 2u) << "the shell record started, and recursion: " << testing::PrintToString(names);
  EXPECT_EQ(s.calls_of("recurse"), 11u);
  EXPECT_TRUE(contains(last_.err, "callscope record: 1 process without hooks was not traced (plain 1); --follow all "
                                  "traces every process\n"))
      << last_.err;
  // `finish` of the same session says it too.
  const std::string keep = dir_.file("k.trace");
  ASSERT_EQ(::mkdir(dir_.file("raw").c_str(), 0700), 0);
  RunResult r = callscope({"record", "--keep-raw", "--raw-dir", dir_.file("raw"), "-o", keep, "--", "/bin/sh", "-c",
                           q(plain_fixture()) + " >/dev/null; true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunResult ls = run({"/bin/sh", "-c", "ls -d " + q(dir_.file("raw")) + "/*"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  const std::string raw = ls.out.substr(0, ls.out.find('\n'));
  RunResult fin = callscope({"finish", raw, "-o", dir_.file("f.trace")});
  EXPECT_EQ(fin.exit_code, 0) << fin.err;
  EXPECT_TRUE(contains(fin.err, "callscope finish: 1 process was not traced (--follow): plain 1\n")) << fin.err;
}

// (b) An instrumented grandchild under an uninstrumented shell: the runtime
// stays preloaded in the shell, doing nothing, and the grandchild is traced.
TEST_F(FollowTest, AnInstrumentedGrandchildUnderAnUninstrumentedShellIsTraced) {
  if (one_variant().empty()) GTEST_SKIP() << "no compiler";
  TraceSummary s = record_sh({}, "/bin/sh -c \"" + fx("recursion") + " 10 >/dev/null; true\"; true");
  const auto names = process_names(s);
  EXPECT_EQ(count_of(names, "recursion"), 1u) << testing::PrintToString(names);
  EXPECT_EQ(names.size(), 2u) << testing::PrintToString(names);
  EXPECT_EQ(s.calls_of("recurse"), 11u);
  EXPECT_TRUE(contains(last_.err, "1 process without hooks was not traced (sh 1)")) << last_.err;
}

// A dormant process that loads a library with hooks (patchable entries) is
// set up at that dlopen: the library's calls are recorded.
TEST_F(FollowTest, ADormantProcessIsSetUpWhenItLoadsALibraryWithHooks) {
  if (one_variant().empty()) GTEST_SKIP() << "no compiler";
  TraceSummary s = record_sh({}, fx("libcalls_plain") + " 10 " + fx("libcalls_plugin_patchable.so") + " >/dev/null; true");
  const auto names = process_names(s);
  EXPECT_EQ(count_of(names, "libcalls_plain"), 1u) << testing::PrintToString(names);
  EXPECT_EQ(s.calls_of("plugin_measure"), 30u);
  // Its line in the count was taken back; its fork child, before the
  // dlopen, was not counted (a fork is its parent's image).
  EXPECT_FALSE(contains(last_.err, "not traced")) << last_.err;
}

// (c) --follow none: the program only (its fork children neither); the
// processes it started are counted.
TEST_F(FollowTest, FollowNoneTracesOnlyTheFirstProcess) {
  if (one_variant().empty()) GTEST_SKIP() << "no compiler";
  TraceSummary s = record_sh({"--follow", "none"}, fx("recursion") + " 10 >/dev/null; true");
  EXPECT_EQ(process_names(s).size(), 1u) << "only the shell: " << testing::PrintToString(process_names(s));
  EXPECT_EQ(s.calls_of("recurse"), 0u);
  EXPECT_TRUE(contains(last_.err, "1 process the program started was not traced (--follow none): recursion 1"))
      << last_.err;

  // The program itself is instrumented and forks: only it is traced.
  RunResult r = callscope({"record", "--follow", "none", "-f", "-o", trace_, "--", fixture(one_variant(), "fork")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceSummary f = summarize(trace_);
  EXPECT_EQ(f.reader->processes().size(), 1u);
  EXPECT_GT(f.calls.size(), 0u);
  for (const ThreadSummary& t : f.threads) EXPECT_TRUE(t.balanced());

  // The same from the environment.
  RunResult e = run({"/bin/sh", "-c",
                     "CALLSCOPE_FOLLOW=none " + q(CALLSCOPE_EXE) + " record -f -o " + q(trace_) + " -- /bin/sh -c \"" +
                         fx("recursion") + " 10 >/dev/null; true\""});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(summarize(trace_).reader->processes().size(), 1u);
}

// (c) --follow all: every process is in the trace, as before --follow.
TEST_F(FollowTest, FollowAllTracesEveryProcess) {
  if (one_variant().empty()) GTEST_SKIP() << "no compiler";
  TraceSummary s = record_sh({"--follow", "all"}, q(plain_fixture()) + " >/dev/null; /bin/sh -c \"" + fx("recursion") +
                                                      " 10 >/dev/null; true\"; true");
  const auto names = process_names(s);
  EXPECT_EQ(count_of(names, "plain"), 1u) << testing::PrintToString(names);
  EXPECT_EQ(count_of(names, "recursion"), 1u) << testing::PrintToString(names);
  EXPECT_EQ(names.size(), 4u) << "sh, plain, sh, recursion: " << testing::PrintToString(names);
  EXPECT_EQ(s.calls_of("recurse"), 11u);
  EXPECT_FALSE(contains(last_.err, "not traced")) << last_.err;
}

// The system calls of /bin/true under record, counted by strace: beyond
// what it makes alone, only loading the runtime and deciding (its modules'
// section headers, a line of the count). Before --follow it made ~100 more
// (session files, module map, ELF checks, control socket).
TEST_F(FollowTest, AnUninstrumentedChildMakesFewSystemCalls) {
  if (run({"/bin/sh", "-c", "command -v strace"}).exit_code != 0) GTEST_SKIP() << "strace is not installed";
  // strace's own tracees are record's descendants: strace is the program
  // record starts, sh and /bin/true under it.
  auto calls_of_true = [&](const std::vector<std::string>& prefix, const std::string& log) -> long {
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {"strace", "-f", "-qq", "-o", log, "/bin/sh", "-c", "/bin/true; true"});
    RunResult r = run(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(log);
    std::map<std::string, long> lines;
    std::string pid_of_true, line;
    while (std::getline(in, line)) {
      const std::string pid = line.substr(0, line.find(' '));
      ++lines[pid];
      if (contains(line, "execve(\"/bin/true\"")) pid_of_true = pid;
    }
    EXPECT_FALSE(pid_of_true.empty()) << read_file(log);
    return lines[pid_of_true];
  };
  const long alone = calls_of_true({}, dir_.file("alone.log"));
  const long under = calls_of_true({CALLSCOPE_EXE, "record", "-o", trace_, "--"}, dir_.file("under.log"));
  EXPECT_GT(alone, 10);
  // Loading the runtime (~13: open, read, stat, mmaps, mprotect, close),
  // deciding (/proc/self/exe and libc: open, 2 preads, close each; our
  // name, getpid), the count's line (open, write, close).
  EXPECT_LE(under - alone, 32) << "alone " << alone << ", under record " << under << "\n" << read_file(dir_.file("under.log"));
  const auto names = process_names(summarize(trace_));
  EXPECT_EQ(count_of(names, "true"), 0u) << testing::PrintToString(names);
}

}  // namespace
}  // namespace callscope::e2e
