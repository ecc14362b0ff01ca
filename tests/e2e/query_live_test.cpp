// `callscope query -c`: D scripts answered while the program runs, for every
// compiler variant -- exact counts over threads, printf output that appears
// while the program still runs (tests/fixtures/record/live.c waits at a gate
// the test opens only once it has seen that output), exit() and Ctrl-C that
// end the query with the program going on untraced, the trace kept with -o;
// and, once, the clock alone and the errors.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

using namespace std::chrono_literals;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

void touch(const std::string& path) { std::ofstream(path) << "open\n"; }

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Polls `ready` every 10 ms for up to `limit`. The limits are generous:
// they only bound a test that would otherwise hang.
bool wait_until(const std::function<bool()>& ready, std::chrono::seconds limit = 60s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return ready();
}

// `callscope ARGS` in the background, its stdout and stderr in files (the
// program it runs shares them, and may outlive it).
class Background {
 public:
  Background(const TempDir& dir, const std::vector<std::string>& args, const std::string& name = "query")
      : out_(dir.file(name + ".out")), err_(dir.file(name + ".err")) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int o = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(o, 1);
      ::dup2(e, 2);
      std::vector<std::string> argv{CALLSCOPE_EXE};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> raw;
      for (auto& a : argv) raw.push_back(const_cast<char*>(a.c_str()));
      raw.push_back(nullptr);
      ::execv(raw[0], raw.data());
      ::_exit(127);
    }
  }
  ~Background() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  std::string out() const { return slurp(out_); }
  std::string err() const { return slurp(err_); }
  pid_t pid() const { return pid_; }
  // The exit status, or -1 if it has not exited within the limit.
  int wait(std::chrono::seconds limit = 60s) {
    int status = 0;
    const bool done = wait_until([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, limit);
    if (!done) return -1;
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

class QueryLiveTest : public ::testing::TestWithParam<std::string> {
 protected:
  // live N GATE DONE, as one -c string.
  std::string live_command(int n) const {
    return plain_path(fixture(GetParam(), "live")) + " " + std::to_string(n) + " " + gate_ + " " + done_;
  }
  // `query -c COMMAND` counting the entries of the executable's `function`:
  // prints "FUNCTION=N" at the end.
  RunResult count_calls(const std::string& function, const std::string& command) const {
    return callscope({"query", "-q", "-n",
                      "pid$target:a.out:" + function + ":entry { @ = count(); } END { printa(\"" + function +
                          "=%@d\\n\", @); }",
                      "-c", command});
  }
  TempDir dir_;
  std::string gate_ = dir_.file("gate"), done_ = dir_.file("done");
};

TEST_P(QueryLiveTest, CountsEveryCallOfEveryThread) {
  RunResult r = count_calls("leaf", plain_path(fixture(GetParam(), "threads")) + " 4 100000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("threads=4 calls=400000"), std::string::npos) << r.out;  // the program's own
  EXPECT_NE(r.out.find("leaf=400000\n"), std::string::npos) << r.out;
}

// -l -c CMD lists the program's probes, pid$target its pid, as dtrace
// does: the program runs until it has listed its modules, then is killed
// (4 threads of a billion calls each would run for minutes: their "threads="
// line never comes).
TEST_P(QueryLiveTest, ListsTheProbesOfAProgramItStarts) {
  RunResult r = callscope({"query", "-l", "-n", "pid$target:a.out:leaf:", "-c",
                           plain_path(fixture(GetParam(), "threads")) + " 4 1000000000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("   ID   PROVIDER"), std::string::npos) << r.out;
  const size_t at = r.out.find(" pid");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NE(r.out[at + 4], '0') << r.out;  // a real pid
  EXPECT_NE(r.out.find("leaf entry\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("leaf return\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("threads="), std::string::npos) << r.out;
  // Every probe of every provider, the kernel's too (those it lets the
  // recorder have: system calls and switches need no root here).
  r = callscope({"query", "-l", "-c", plain_path(fixture(GetParam(), "threads")) + " 1 1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (r.err.find("not recorded") == std::string::npos) {
    EXPECT_NE(r.out.find(" vmlinux "), std::string::npos) << r.err;
    EXPECT_NE(r.out.find(" write entry\n"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find(" on-cpu\n"), std::string::npos) << r.err;
  }
  EXPECT_NE(r.out.find(" main entry\n"), std::string::npos) << r.err;
}

TEST_P(QueryLiveTest, PrintsWhileTheProgramRuns) {
  Background q(dir_, {"query", "-q", "-n", "pid$target:a.out:beat:entry { printf(\"beat\\n\"); }", "-c",
                      live_command(3)});
  // The program waits at the gate until the test has seen its three beats.
  ASSERT_TRUE(wait_until([&] { return count_of(q.out(), "beat\n") >= 3; })) << q.out() << q.err();
  EXPECT_FALSE(exists(done_));
  touch(gate_);
  ASSERT_EQ(q.wait(), 0) << q.err();
  EXPECT_EQ(count_of(q.out(), "beat\n"), 6u) << q.out();
  EXPECT_EQ(slurp(done_), "beats=6\n");
}

TEST_P(QueryLiveTest, ExitEndsTheQueryAndTheProgramGoesOnUntraced) {
  const std::string kept = dir_.file("kept.trace");
  Background q(dir_, {"query", "-n", "pid$target:a.out:beat:entry /++n == 3/ { printf(\"third\\n\"); exit(0); }",
                      "-o", kept, "-c", live_command(3)});
  // The query ends with the program still at its gate.
  ASSERT_EQ(q.wait(), 0) << q.err();
  EXPECT_FALSE(exists(done_));
  EXPECT_NE(q.out().find("third"), std::string::npos) << q.out();
  EXPECT_NE(q.err().find("goes on untraced"), std::string::npos) << q.err();
  touch(gate_);
  ASSERT_TRUE(wait_until([&] { return exists(done_) && !slurp(done_).empty(); })) << q.err();
  EXPECT_EQ(slurp(done_), "beats=6\n");
  // The kept trace holds the run up to the stop: three beats.
  RunResult again = callscope({"query", "-q", "-n", "pid$target:a.out:beat:entry { @ = count(); } END { printa(\"%@d\\n\", @); }", kept});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "3\n\n");
}

// A script whose probes name some functions records only those (the
// runtime's include filter): the kept trace holds them and nothing else,
// and says it is filtered. One that needs every call (a probe of any
// function, or the stack) records every call.
TEST_P(QueryLiveTest, AOneFunctionQueryRecordsOnlyThatFunction) {
  touch(gate_);
  const std::string kept = dir_.file("one.trace");
  RunResult r = callscope({"query", "-n", "pid$target:a.out:beat:entry { @ = count(); } END { printa(\"beat=%@d\\n\", @); }",
                           "-o", kept, "-c", live_command(3)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("beat=6\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("the trace holds only the calls of beat"), std::string::npos) << r.err;
  TraceSummary one = summarize(kept);
  EXPECT_EQ(one.calls_of("beat"), 6u);
  EXPECT_EQ(one.calls_of("main"), 0u);
  uint64_t total = 0;
  for (const auto& [name, n] : one.calls) total += n;
  EXPECT_EQ(total, 6u);
  EXPECT_NE(callscope({"info", kept}).out.find("filtered"), std::string::npos);
  // pid*: the pid providers of every process, the same function in each.
  ASSERT_EQ(::unlink(done_.c_str()), 0);
  RunResult any = callscope({"query", "-n", "pid*:a.out:beat:entry { @ = count(); } END { printa(\"beat=%@d\\n\", @); }",
                             "-o", dir_.file("any.trace"), "-c", live_command(3)});
  ASSERT_EQ(any.exit_code, 0) << any.err;
  EXPECT_NE(any.out.find("beat=6\n"), std::string::npos) << any.out;
  EXPECT_NE(any.err.find("the trace holds only the calls of beat"), std::string::npos) << any.err;
  EXPECT_EQ(summarize(dir_.file("any.trace")).calls_of("main"), 0u);

  ASSERT_EQ(::unlink(done_.c_str()), 0);
  const std::string all = dir_.file("all.trace");
  RunResult a = callscope({"query", "-q", "-n", "pid$target:a.out:beat:entry { @[ustackdepth] = count(); }", "-o", all,
                           "-c", live_command(3)});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.err.find("holds only"), std::string::npos) << a.err;
  TraceSummary every = summarize(all);
  EXPECT_EQ(every.calls_of("beat"), 6u);
  EXPECT_EQ(every.calls_of("main"), 1u);
  // A function's time less its callees' needs the callees.
  ASSERT_EQ(::unlink(done_.c_str()), 0);
  RunResult self = callscope({"query", "-n", "pid$target:a.out:main:return { @ = sum(selfduration); }", "-o",
                              dir_.file("self.trace"), "-c", live_command(3)});
  ASSERT_EQ(self.exit_code, 0) << self.err;
  EXPECT_EQ(self.err.find("holds only"), std::string::npos) << self.err;
  EXPECT_EQ(summarize(dir_.file("self.trace")).calls_of("beat"), 6u);
}

TEST_P(QueryLiveTest, CtrlCPrintsTheAggregations) {
  Background q(dir_, {"query", "-q", "-n", "pid$target:a.out:beat:entry { @calls = count(); printf(\"beat\\n\"); }",
                      "-c", live_command(3)});
  ASSERT_TRUE(wait_until([&] { return count_of(q.out(), "beat\n") >= 3; })) << q.err();
  ::kill(q.pid(), SIGINT);
  ASSERT_EQ(q.wait(), 0) << q.err();
  EXPECT_NE(q.out().find("\n                3\n"), std::string::npos) << q.out();
  EXPECT_NE(q.err().find("goes on untraced"), std::string::npos) << q.err();
  touch(gate_);
  ASSERT_TRUE(wait_until([&] { return exists(done_) && !slurp(done_).empty(); }));
}

TEST_P(QueryLiveTest, MacroArgumentsFollowTheOptions) {
  touch(gate_);
  RunResult r = callscope({"query", "-q", "-n", "pid$target:a.out:$1:entry { @ = count(); } END { printa(\"%@d\\n\", @); }",
                           "-c", live_command(4), "beat"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "8\n\n");
}

TEST_P(QueryLiveTest, FollowsForksAndExecs) {
  RunResult r = callscope({"query", "-q", "-n",
                           "proc:::start,proc:::exec-success,proc:::exit { @p[probename] = count(); } "
                           "pid*:a.out::entry { @[probefunc] = count(); } "
                           "END { printa(\"%s=%@d\\n\", @p); printa(\"%s=%@d\\n\", @); }",
                           "-c", plain_path(fixture(GetParam(), "fork_exec"))});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"start=2\n", "exec-success=1\n", "exit=2\n", "main=2\n", "before_fork=10\n",
                           "in_child=20\n", "after_exec=30\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " in\n" << r.out;
}

// pid$target live over a program that forks: the child's calls (fork.c:
// child_main once, g() 200 times) do not fire, and are said on stderr.
TEST_P(QueryLiveTest, TargetOverAForkSaysWhatTheOtherProcessHad) {
  RunResult r = callscope({"query", "-q", "-n",
                           "pid$target:a.out::entry { @[probefunc] = count(); } END { printa(\"%s=%@d\\n\", @); }",
                           "-c", plain_path(fixture(GetParam(), "fork"))});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("child exit=7\n"), std::string::npos) << r.out;  // the program's own
  EXPECT_NE(r.out.find("f=100\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("h=50\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("g="), std::string::npos) << r.out;
  EXPECT_NE(r.err.find(" only; 1 other process had 201 matching events: use pid* (or pid"), std::string::npos) << r.err;
}

// Threads started one after another, 2,000 of them, each short: every one
// of their calls is seen, and none is said to have no ring (the recorder's
// scan used to come, now and then, between a writer sizing its file for the
// ring and saying it has one: 3 false warnings in 12 such queries).
TEST_P(QueryLiveTest, ShortThreadsAreNeverSaidToHaveNoRing) {
  RunResult r = count_calls("work", plain_path(fixture(GetParam(), "short_threads")) + " 2000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("threads=2000\n"), std::string::npos) << r.out;  // the program's own
  EXPECT_NE(r.out.find("work=20000\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("has no ring"), std::string::npos) << r.err;
}

// Live and over the trace the same run kept (-o), a script's aggregations
// are the same, to the nanosecond: both read the same events. (With the TSC
// the two would convert ticks to nanoseconds with calibrations of their
// own, a few parts per million apart: the monotonic clock counts in ns.)
TEST_P(QueryLiveTest, LiveAndOverTheKeptTraceAgree) {
  const std::string script =
      "pid*:::entry { @calls[execname, probefunc] = count(); @deep[probefunc] = max(ustackdepth); } "
      "pid*:::return { @total[probefunc] = sum(duration); @self[probefunc] = sum(selfduration); "
      "@dist = quantize(duration); } "
      "proc:::exit, proc:::lwp-exit { @ends[probename] = count(); }";
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {"threads", {"4", "20000"}}, {"exceptions", {}}, {"longjmp", {}}, {"recursion", {}},
      {"fork_exec", {}},           {"signals", {"300"}}, {"dlopen_main", {plain_path(fixture(GetParam(), "libplugin.so"))}}};
  for (const auto& [name, args] : runs) {
    SCOPED_TRACE(name);
    const std::string kept = dir_.file(name + ".trace");
    std::string command = plain_path(fixture(GetParam(), name));
    for (const std::string& a : args) command += " " + a;
    RunResult live =
        run({"env", "CALLSCOPE_CLOCK=monotonic", CALLSCOPE_EXE, "query", "-q", "-n", script, "-o", kept, "-c", command});
    ASSERT_EQ(live.exit_code, 0) << live.err;
    RunResult offline = callscope({"query", "-q", "-n", script, kept});
    ASSERT_EQ(offline.exit_code, 0) << offline.err;
    // The program's own output comes first in the live run's stdout.
    ASSERT_GE(live.out.size(), offline.out.size());
    EXPECT_EQ(live.out.substr(live.out.size() - offline.out.size()), offline.out);
    EXPECT_NE(offline.out.find("main"), std::string::npos) << offline.out;
  }
}

// The kernel's providers live (-c): the recorder hands the query the
// kernel's events as it reads them, and they fire in time order with the
// calls -- what a live query prints is what the same script prints over
// the trace it kept, call paths (ustackdepth at a system call) included.
TEST_P(QueryLiveTest, KernelProvidersLiveAgreeWithTheKeptTrace) {
  const std::string script =
      "syscall:::entry /pid == $target/ { @sys[probefunc] = count(); @depth[probefunc, ustackdepth] = count(); } "
      "syscall:::return { @err[probefunc, errno] = count(); } "
      "sched:::off-cpu, sched:::sleep, sched:::preempt, sched:::on-cpu { @sched[probename] = count(); } "
      "sched:::wakeup { @woke[execname] = count(); } pf:::fault { @pf[probename] = count(); }";
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {"waits", {dir_.path()}}, {"threads", {"4", "20000"}}, {"fork_exec", {}}, {"faults", {}}};
  for (const auto& [name, args] : runs) {
    SCOPED_TRACE(name);
    const std::string kept = dir_.file(name + ".trace");
    std::string command = plain_path(fixture(GetParam(), name));
    for (const std::string& a : args) command += " " + a;
    RunResult live = callscope({"query", "-q", "-n", script, "-o", kept, "-c", command});
    if (live.err.find("not recorded") != std::string::npos) GTEST_SKIP() << live.err;
    ASSERT_EQ(live.exit_code, 0) << live.err;
    RunResult offline = callscope({"query", "-q", "-n", script, kept});
    ASSERT_EQ(offline.exit_code, 0) << offline.err;
    ASSERT_GE(live.out.size(), offline.out.size());
    EXPECT_EQ(live.out.substr(live.out.size() - offline.out.size()), offline.out);
    EXPECT_NE(offline.out.find("  close "), std::string::npos) << offline.out;
    EXPECT_NE(offline.out.find("on-cpu"), std::string::npos) << offline.out;
    EXPECT_NE(offline.out.find("fault"), std::string::npos) << offline.out;
  }
}

// Live, against what the program itself did: waits calls getppid() 1000
// times in ask_parent(), writes 3 x 64 KiB with an fsync after each in
// flush() (the file's size says what was written), and its main thread
// wakes its worker. samples spins for a known CPU time: profile-997 fires
// about that often in it, and not in a thread asleep (doze()).
TEST_P(QueryLiveTest, KernelProvidersLiveAgreeWithTheProgram) {
  RunResult q = callscope(
      {"query", "-q", "-n",
       "pid$target::ask_parent:entry, pid$target::flush:entry { self->in = probefunc; } "
       "pid$target::ask_parent:return, pid$target::flush:return { self->in = \"\"; } "
       "pid$target::worker:entry { worker = tid; } pid$target::main:entry { self->main = 1; } "
       "pid$target::doze:entry { self->doze = 1; } pid$target::doze:return { self->doze = 0; } "
       "syscall::getppid:entry /self->in == \"ask_parent\"/ { @n[\"getppid\"] = sum(1); } "
       "syscall::write:entry /self->in == \"flush\"/ { @n[\"written\"] = sum(arg2); } "
       "syscall::openat:return /self->in == \"flush\" && arg0 >= 0 && errno == 0/ { @n[\"opened\"] = sum(1); } "
       "syscall::fsync:return /self->in == \"flush\" && arg0 == 0/ { @n[\"fsync\"] = sum(1); } "
       "sched:::wakeup /self->main && arg0 == worker && arg1 == pid/ { @n[\"woke\"] = sum(1); } "
       "sched:::sleep /self->doze/ { @n[\"slept\"] = sum(1); } "
       "profile-997 /self->doze/ { @n[\"doze\"] = sum(1); } "
       "END { printa(\"%s %@d\\n\", @n); }",
       "-c", plain_path(fixture(GetParam(), "waits")) + " " + dir_.path()});
  if (q.err.find("not recorded") != std::string::npos) GTEST_SKIP() << q.err;
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto n = pairs(q.out.substr(q.out.find('\n') + 1));  // after the program's line
  EXPECT_EQ(n["getppid"], 1000u) << q.out;
  EXPECT_EQ(n["fsync"], 3u) << q.out;
  EXPECT_EQ(n["opened"], 1u) << q.out;
  struct stat st {};
  ASSERT_EQ(::stat(dir_.file("waits.out").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 3 * 65536);
  EXPECT_EQ(n["written"], static_cast<uint64_t>(st.st_size)) << q.out;
  EXPECT_GE(n["woke"], 1u) << q.out;
  EXPECT_GE(n["slept"], 1u) << q.out;
  EXPECT_LE(n["doze"], 1u) << q.out;

  q = callscope({"query", "-q", "-n",
                 "profile-997 /pid == $target/ { @n[\"fired\"] = sum(1); } "
                 "sched:::on-cpu /pid == $target/ { @n[\"ins\"] = sum(1); } "
                 "END { printa(\"%s %@d\\n\", @n); }",
                 "-c", plain_path(fixture(GetParam(), "samples"))});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const std::map<std::string, long> k = parse_counts(q.out);
  ASSERT_TRUE(k.count("cpu_ns")) << q.out;
  n = pairs(q.out.substr(q.out.find('\n') + 1));
  const double expected = static_cast<double>(k.at("cpu_ns")) * 997.0 / 1e9;
  EXPECT_GE(expected, 200.0) << q.out;
  // (a sample's thread is on a CPU at the sample's time, known to within
  // one switch: each switch in may cost or give one)
  EXPECT_LE(std::abs(static_cast<double>(n["fired"]) - expected), static_cast<double>(n["ins"]) + 5.0)
      << q.out << "expected about " << expected;
}

// A clause that only counts by the probe's names is added up in bulk, and
// the tap hands events over in chunks of 65,536: 3 threads of 400,000
// calls fill many. Live, the bulk counts equal the counts, one firing at a
// time (a predicate turns the bulk way off), over the trace kept.
TEST_P(QueryLiveTest, BulkCountsOverManyChunksCountEveryCall) {
  const std::string kept = dir_.file("bulk.trace");
  RunResult live = run({CALLSCOPE_EXE, "query", "-q", "-n", "pid$target:a.out::entry { @[probefunc] = count(); }", "-o",
                        kept, "-c", plain_path(fixture(GetParam(), "threads")) + " 3 400000"});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  EXPECT_NE(live.out.find("leaf                                                        1200000"), std::string::npos)
      << live.out;
  RunResult offline = callscope({"query", "-q", "-n", "pid$target:a.out::entry /1/ { @[probefunc] = count(); }", kept});
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  ASSERT_GE(live.out.size(), offline.out.size());
  EXPECT_EQ(live.out.substr(live.out.size() - offline.out.size()), offline.out);
  // Without -o the query's own thread drains the rings: the same counts.
  RunResult alone = run({CALLSCOPE_EXE, "query", "-q", "-n", "pid$target:a.out::entry { @[probefunc] = count(); }",
                         "-c", plain_path(fixture(GetParam(), "threads")) + " 3 400000"});
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_EQ(alone.out, live.out);
}

// The clock stops with the program: a tick fires while it runs, not on and
// on once every event is in (before, tick-N fired without end after the
// program's exit).
TEST_P(QueryLiveTest, ClocksStopWhenTheProgramEnds) {
  touch(gate_);  // the program does not wait
  Background query(dir_, {"query", "-q", "-n", "tick-10ms { n++; } END { printf(\"ticks %s\\n\", n < 1000 ? \"few\" : \"many\"); }",
                          "-c", live_command(10)});
  ASSERT_EQ(query.wait(30s), 0) << query.err();
  EXPECT_NE(query.out().find("ticks few"), std::string::npos) << query.out();
}

// query -p: a query attached to a program `callscope record` records sees
// what happens from then on; when it ends, the recording goes on.
class QueryAttachTest : public QueryLiveTest {
 protected:
  // `record` of live 1000 GATE DONE in the background, and the program's
  // pid once it waits at the gate (its first 1000 beats done).
  pid_t start_recording(std::unique_ptr<Background>& rec, const std::vector<std::string>& record_flags = {},
                        int beats = 1000, const std::vector<std::string>& program_args = {}) {
    std::vector<std::string> args{"record", "-o", dir_.file("rec.trace")};
    args.insert(args.end(), record_flags.begin(), record_flags.end());
    for (const std::string& a : {std::string("--"), plain_path(fixture(GetParam(), "live")), std::to_string(beats), gate_, done_})
      args.push_back(a);
    args.insert(args.end(), program_args.begin(), program_args.end());
    rec = std::make_unique<Background>(dir_, args, "record");
    EXPECT_TRUE(wait_until([&] { return exists(gate_ + ".ready"); })) << rec->err();
    RunResult ps = run({"pgrep", "-P", std::to_string(rec->pid())});
    return static_cast<pid_t>(std::atol(ps.out.c_str()));
  }
};

TEST_P(QueryAttachTest, SeesTheProgramFromThenOnAndTheRecordingGoesOn) {
  std::unique_ptr<Background> rec;
  const pid_t pid = start_recording(rec);
  ASSERT_GT(pid, 0);
  Background query(dir_, {"query", "-n",
                          "pid$target:a.out:beat:entry { @beats = count(); } "
                          "pid$target:a.out:main:return { printf(\"main returned after %d calls seen\\n\", depth); }",
                          "-p", std::to_string(pid)});
  ASSERT_TRUE(wait_until([&] { return query.err().find("matched") != std::string::npos; })) << query.err();
  RunResult second = callscope({"query", "-n", "BEGIN { exit(0); }", "-p", std::to_string(pid)});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("another query is attached to its recording"), std::string::npos) << second.err;
  touch(gate_);
  ASSERT_EQ(query.wait(), 0) << query.err();
  // The second 1000 beats, not the first; main (entered long before) returns.
  EXPECT_NE(query.out().find("main returned"), std::string::npos) << query.out();
  EXPECT_NE(query.out().find("             1000\n"), std::string::npos) << query.out();
  ASSERT_EQ(rec->wait(), 0) << rec->err();
  // The recording is whole: all 2000 beats.
  RunResult offline =
      callscope({"query", "-q", "-n", "pid$target:a.out:beat:entry { @ = count(); }", dir_.file("rec.trace")});
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  EXPECT_NE(offline.out.find("             2000\n"), std::string::npos) << offline.out;
}

TEST_P(QueryAttachTest, ExitDetachesAndGivenTheRecorderItAttachesToItsProgram) {
  std::unique_ptr<Background> rec;
  const pid_t pid = start_recording(rec);
  ASSERT_GT(pid, 0);
  // The recorder's pid: the query attaches to the program it records.
  RunResult q = callscope({"query", "-n", "tick-50ms { printf(\"t %d\\n\", $target); exit(0); }", "-p",
                           std::to_string(rec->pid())});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("t " + std::to_string(pid)), std::string::npos) << q.out;
  EXPECT_NE(q.err.find("attaching to the program it records, process " + std::to_string(pid)), std::string::npos)
      << q.err;
  // Detached: the program and its recording go on, to the end.
  touch(gate_);
  ASSERT_EQ(rec->wait(), 0) << rec->err();
  EXPECT_EQ(slurp(done_), "beats=2000\n");
  RunResult offline =
      callscope({"query", "-q", "-n", "pid$target:a.out:beat:entry { @ = count(); }", dir_.file("rec.trace")});
  EXPECT_NE(offline.out.find("             2000\n"), std::string::npos) << offline.out;
}

// A program that wrote over its argv and environment (setproctitle, as
// nginx, PostgreSQL and redis do) is found all the same (issue 30, item 4):
// by the session files its runtime maps, not by CALLSCOPE_DIR in
// /proc/PID/environ, which is gone. ctl given the recorder's pid finds it too.
TEST_P(QueryAttachTest, FindsAProgramThatRewroteItsArgvAndEnvironment) {
  std::unique_ptr<Background> rec;
  const pid_t pid = start_recording(rec, {}, 1000, {"retitle"});
  ASSERT_GT(pid, 0);
  const std::string proc = "/proc/" + std::to_string(pid);
  EXPECT_EQ(read_file(proc + "/cmdline").rfind("live: worker process", 0), 0u) << read_file(proc + "/cmdline");
  EXPECT_EQ(read_file(proc + "/environ").find("CALLSCOPE_DIR="), std::string::npos) << "not written over";
  Background query(dir_, {"query", "-n", "pid$target:a.out:beat:entry { @beats = count(); }", "-p",
                          std::to_string(pid)});
  ASSERT_TRUE(wait_until([&] { return query.err().find("matched") != std::string::npos; })) << query.err();
  // A socket nobody listens on at the recorder's pid, as an earlier traced
  // process of that pid leaves it when killed: the recorder serves none, so
  // ctl goes to its program all the same (CI once gave the recorder such a
  // pid, and ctl had answered "does not listen").
  const std::string ctl_dir = "/tmp/callscope-" + std::to_string(::geteuid());
  ASSERT_TRUE(exists(ctl_dir + "/" + std::to_string(pid) + ".sock")) << "the program's socket is in " << ctl_dir;
  const std::string stale = ctl_dir + "/" + std::to_string(rec->pid()) + ".sock";
  const int stale_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, stale.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(stale_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << stale;
  RunResult ctl = callscope({"ctl", std::to_string(rec->pid()), "status"});
  ::close(stale_fd);
  ::unlink(stale.c_str());
  EXPECT_EQ(ctl.exit_code, 0) << ctl.err;
  EXPECT_NE(ctl.err.find("acting on the program it traces, process " + std::to_string(pid)), std::string::npos)
      << ctl.err;
  EXPECT_NE(ctl.out.find("pid: " + std::to_string(pid) + "\n"), std::string::npos) << ctl.out;
  touch(gate_);
  ASSERT_EQ(query.wait(), 0) << query.err();
  EXPECT_NE(query.out().find("             1000\n"), std::string::npos) << query.out();
  ASSERT_EQ(rec->wait(), 0) << rec->err();
  EXPECT_EQ(slurp(done_), "beats=2000\n");
}

TEST_P(QueryAttachTest, ADescriptionThatMatchesNothingDetaches) {
  std::unique_ptr<Background> rec;
  const pid_t pid = start_recording(rec);
  ASSERT_GT(pid, 0);
  RunResult q = callscope({"query", "-n", "pid$target:a.out:nosuch:entry", "-p", std::to_string(pid)});
  EXPECT_EQ(q.exit_code, 1);
  EXPECT_NE(q.err.find("does not match any probes"), std::string::npos) << q.err;
  touch(gate_);
  ASSERT_EQ(rec->wait(), 0) << rec->err();
  EXPECT_EQ(slurp(done_), "beats=2000\n");
}

// A query stopped (SIGSTOP) is let go after CALLSCOPE_QUERY_TIMEOUT seconds
// of the recorder waiting for it; the program and the recording go on.
TEST_P(QueryAttachTest, AStoppedQueryIsLetGo) {
  ::setenv("CALLSCOPE_QUERY_TIMEOUT", "1", 1);
  std::unique_ptr<Background> rec;
  const pid_t pid = start_recording(rec, {}, 2000000);  // 4 M events after the gate: more than a socket holds
  ::unsetenv("CALLSCOPE_QUERY_TIMEOUT");
  ASSERT_GT(pid, 0);
  Background query(dir_, {"query", "-n", "pid$target:a.out:beat:entry { @ = count(); }", "-p", std::to_string(pid)});
  ASSERT_TRUE(wait_until([&] { return query.err().find("matched") != std::string::npos; })) << query.err();
  ::kill(query.pid(), SIGSTOP);
  touch(gate_);
  ASSERT_EQ(rec->wait(), 0) << rec->err();
  EXPECT_EQ(slurp(done_), "beats=4000000\n");
  ::kill(query.pid(), SIGCONT);
  EXPECT_EQ(query.wait(), 0) << query.err();
  EXPECT_NE(query.err().find("the recording of process " + std::to_string(pid) + " stopped sending events"),
            std::string::npos)
      << query.err();
}

TEST_P(QueryAttachTest, RefusalsSaySo) {
  std::unique_ptr<Background> rec;
  const pid_t pid = start_recording(rec, {"--mode", "profile"});
  ASSERT_GT(pid, 0);
  RunResult q = callscope({"query", "-n", "BEGIN { exit(0); }", "-p", std::to_string(pid)});
  EXPECT_EQ(q.exit_code, 1);
  EXPECT_NE(q.err.find("it is recorded in profile mode"), std::string::npos) << q.err;
  touch(gate_);
  ASSERT_EQ(rec->wait(), 0) << rec->err();
}

// Attached (-p), the kernel's events do not reach the query: refused, with
// what to do instead.
TEST_P(QueryAttachTest, KernelProvidersAreRefused) {
  std::unique_ptr<Background> rec;
  const pid_t pid = start_recording(rec);
  ASSERT_GT(pid, 0);
  RunResult q = callscope({"query", "-n", "syscall::write:entry { @ = count(); }", "-p", std::to_string(pid)});
  EXPECT_EQ(q.exit_code, 1);
  EXPECT_NE(q.err.find("a query attached to a recording (-p) does not see the kernel's events"), std::string::npos)
      << q.err;
  touch(gate_);
  ASSERT_EQ(rec->wait(), 0) << rec->err();
}

INSTANTIATE_TEST_SUITE_P(Variants, QueryAttachTest, ::testing::ValuesIn(variants()), VariantName());

INSTANTIATE_TEST_SUITE_P(Variants, QueryLiveTest, ::testing::ValuesIn(variants()), VariantName());

TEST(QueryLiveClockTest, TickProbesFireOnTheClock) {
  const auto start = std::chrono::steady_clock::now();
  RunResult r = callscope({"query", "-q", "-n", "tick-50ms { n++; } tick-50ms /n == 4/ { printf(\"%d\\n\", n); exit(0); }"});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "4\n\n");
  EXPECT_GE(took, 200ms);  // four ticks of 50 ms have passed (a lower bound only)
}

TEST(QueryLiveClockTest, ExitStatusAndJson) {
  RunResult r = callscope({"query", "-q", "--format", "json", "-n", "BEGIN { printf(\"hi\"); exit(3); }"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("\"exit_status\": 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"output\": \"hi\""), std::string::npos) << r.out;
}

// The context switches of every thread of process `pid` so far: each time
// one of them went to sleep or was made to give up its CPU.
uint64_t switches_of(pid_t pid) {
  uint64_t n = 0;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(task.c_str());
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream status(task + "/" + e->d_name + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0 || line.rfind("nonvoluntary_ctxt_switches:", 0) == 0)
        n += std::stoull(line.substr(line.find(':') + 1));
  }
  ::closedir(d);
  return n;
}

// The context switches of all of `pid`'s threads over 2 s: how often it woke.
uint64_t wakeups_in_2s(pid_t pid) {
  const uint64_t before = switches_of(pid);
  std::this_thread::sleep_for(2s);
  return switches_of(pid) - before;
}

// Idle costs nothing: while the traced program waits (here at its gate,
// calling nothing instrumented), the recorder sleeps until the runtime
// rings (a segment complete, a thread's end) -- no polling. Counted, not
// timed: over 2 s, at most 20 wakeups of all its threads (it made ~5,700
// when it polled every 200 us), in record and in profile mode.
TEST(RecorderIdleTest, AnIdleProgramHardlyWakesTheRecorder) {
  for (const char* mode : {"record", "profile"}) {
    SCOPED_TRACE(mode);
    TempDir dir;
    const std::string gate = dir.file("gate"), done = dir.file("done");
    Background rec(dir, {"record", "--mode", mode, "-o", dir.file("idle.trace"), "--",
                         fixture(variants().front(), "live"), "3", gate, done});
    ASSERT_TRUE(wait_until([&] { return exists(gate + ".ready"); })) << rec.err();
    std::this_thread::sleep_for(200ms);  // the recorder's start settles
    const uint64_t woke = wakeups_in_2s(rec.pid());
    EXPECT_LE(woke, 20u) << "the recorder woke " << woke << " times in 2 s";
    touch(gate);
    ASSERT_EQ(rec.wait(), 0) << rec.err();
    EXPECT_EQ(slurp(done), "beats=6\n");
  }
}

// A live query of an idle program checks less and less often (the tap's
// rounds and the query's waits double while they bring nothing, up to 64
// ms): over 2 s of the program waiting at its gate, at most 100 wakeups of
// all the query's threads (it made ~8,500 when it looked every 200 us),
// with and without a trace kept (-o: a recorder thread beside the query's).
// And the events after the quiet spell still come: the END's count.
TEST(RecorderIdleTest, AnIdleProgramHardlyWakesALiveQuery) {
  for (const bool keep : {false, true}) {
    SCOPED_TRACE(keep ? "-o" : "no trace kept");
    TempDir dir;
    const std::string gate = dir.file("gate"), done = dir.file("done");
    std::vector<std::string> args = {"query", "-q", "-n",
                                     "pid$target:a.out:beat:entry { @ = count(); } END { printa(\"beat=%@d\\n\", @); }"};
    if (keep) args.insert(args.end(), {"-o", dir.file("idle.trace")});
    args.insert(args.end(), {"-c", plain_path(fixture(variants().front(), "live")) + " 3 " + gate + " " + done});
    Background q(dir, args);
    ASSERT_TRUE(wait_until([&] { return exists(gate + ".ready"); })) << q.err();
    std::this_thread::sleep_for(500ms);  // the rounds slow down
    const uint64_t woke = wakeups_in_2s(q.pid());
    EXPECT_LE(woke, 100u) << "the query woke " << woke << " times in 2 s";
    touch(gate);
    ASSERT_EQ(q.wait(), 0) << q.err();
    EXPECT_NE(q.out().find("beat=6\n"), std::string::npos) << q.out();
  }
}

TEST(QueryLiveErrorTest, BadRequestsSaySo) {
  TempDir dir;
  RunResult missing = callscope({"query", "-n", "BEGIN { exit(0); }", "-c", dir.file("no-such-program")});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("no-such-program"), std::string::npos) << missing.err;
  // -p: a process not recorded (this test), none at all, a bad pid, -p
  // with -c or -o.
  const std::string self = std::to_string(::getpid());
  RunResult unrecorded = callscope({"query", "-n", "BEGIN { exit(0); }", "-p", self});
  EXPECT_EQ(unrecorded.exit_code, 1);
  EXPECT_NE(unrecorded.err.find("process " + self + " is not recorded by callscope"), std::string::npos)
      << unrecorded.err;
  RunResult gone = callscope({"query", "-n", "BEGIN { exit(0); }", "-p", "2147483646"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.err.find("no process 2147483646"), std::string::npos) << gone.err;
  RunResult bad = callscope({"query", "-n", "BEGIN { exit(0); }", "-p", "12x"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("'12x' is not a process id"), std::string::npos) << bad.err;
  RunResult both = callscope({"query", "-n", "BEGIN { exit(0); }", "-p", self, "-c", "true"});
  EXPECT_NE(both.err.find("give -c CMD or -p PID, not both"), std::string::npos) << both.err;
  RunResult kept = callscope({"query", "-n", "BEGIN { exit(0); }", "-p", self, "-o", dir.file("x.trace")});
  EXPECT_NE(kept.err.find("writes its own trace"), std::string::npos) << kept.err;
  RunResult keep = callscope({"query", "-n", "BEGIN { exit(0); }", "-o", dir.file("x.trace")});
  EXPECT_NE(keep.exit_code, 0);
  EXPECT_NE(keep.err.find("-o keeps the trace of a program run with -c"), std::string::npos) << keep.err;
}

TEST(QueryLiveErrorTest, AScriptThatCannotRunNeverRunsTheProgram) {
  TempDir dir;
  const std::string marker = dir.file("ran");
  RunResult r = callscope({"query", "-n", "BEGIN { x = ; }", "-c", "/usr/bin/touch " + marker});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("failed to compile"), std::string::npos) << r.err;
  EXPECT_FALSE(exists(marker));
}

TEST(QueryLiveErrorTest, AProbeThatMatchesNothingStopsTheProgram) {
  TempDir dir;
  const std::string variant = variants().front();
  // The program would wait at its gate for a minute: the query ends it.
  const auto start = std::chrono::steady_clock::now();
  RunResult r = callscope({"query", "-n", "pid$target:a.out:no_such_function:entry {}", "-c",
                           plain_path(fixture(variant, "live")) + " 1 " + dir.file("gate") + " " + dir.file("done")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("does not match any probes"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50s);
  EXPECT_FALSE(exists(dir.file("done")));
}

// A raw directory too small for a ring (300 KiB: a ring's first segment and
// the meta files' reserve do not fit): the thread writes its events to a
// growing file instead, which the query cannot follow -- and says so. In a
// mount namespace of our own, with a small tmpfs over /dev/shm.
TEST(QueryLiveErrorTest, AThreadWithoutARingIsSaid) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root (unshare -m)";
  if (run({"sh", "-c", "command -v unshare"}).exit_code != 0) GTEST_SKIP() << "unshare(1) is not installed";
  TempDir dir;
  touch(dir.file("gate"));
  const std::string script =
      "mount -t tmpfs -o size=300k tmpfs /dev/shm 2>/dev/null || { echo SKIP: cannot mount a tmpfs; exit 0; }\n'" +
      std::string(CALLSCOPE_EXE) + "' query -q -n 'pid$target:a.out::entry /probefunc == \"beat\"/ { @ = count(); }' -c '" +
      plain_path(fixture(variants().front(), "live")) + " 2 " + dir.file("gate") + " " + dir.file("done") +
      "'\necho \"query exit $?\"\n";
  RunResult r = run({"unshare", "-m", "sh", "-c", script});
  if (r.out.find("SKIP") != std::string::npos || (r.out.empty() && r.err.find("unshare") != std::string::npos))
    GTEST_SKIP() << "no private mount namespace here: " << r.out << r.err;
  EXPECT_NE(r.out.find("query exit 0\n"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("has no ring (one could not be allocated in the raw directory): the query does not see its "
                       "events"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(slurp(dir.file("done")), "beats=4\n");
}

}  // namespace
}  // namespace callscope::e2e
