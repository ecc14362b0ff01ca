// `callscope query` over real recordings, for every compiler variant: D's
// one-liners give the exact call counts of tests/fixtures/record/profile.c,
// durations that hold its 10 ms sleep, its call paths by name; over the
// threads fixture, every thread's calls, merged in time order; over a fork,
// what pid$target leaves out, said.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <map>
#include <sstream>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

class QueryTest : public ::testing::TestWithParam<std::string> {
 protected:
  void record(const std::string& fixture_name, std::vector<std::string> args = {}) {
    RunResult r = record_events(fixture_name, "", std::move(args));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // `record --events EVENTS` ("": the default) of a fixture into trace_.
  RunResult record_events(const std::string& fixture_name, const std::string& events,
                          std::vector<std::string> args = {}) {
    trace_ = dir_.file(fixture_name + ".trace");
    std::vector<std::string> cmd = {"record"};
    if (!events.empty()) cmd.insert(cmd.end(), {"--events", events});
    cmd.insert(cmd.end(), {"-o", trace_, "--", fixture(GetParam(), fixture_name)});
    cmd.insert(cmd.end(), args.begin(), args.end());
    return callscope(cmd);
  }
  // Where the kernel did not let record have the events (the test skips).
  static bool not_recorded(const RunResult& r) { return r.err.find("not recorded") != std::string::npos; }
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

// pid$target over a program that forks (tests/fixtures/record/fork.c: the
// parent calls f() 100 times and h() 50 times, the child child_main() once
// and g() 200 times): the first process's calls only, as before, and a note
// on stderr -- not stdout -- of the child's 201 and how to see them, which
// pid* then does.
TEST_P(QueryTest, TargetOverAForkSaysWhatTheOtherProcessHad) {
  record("fork");
  const std::string script = "pid$target:a.out::entry { @[probefunc] = count(); } END { printa(\"%s %@d\\n\", @); }";
  RunResult r = query(script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto n = pairs(r.out);
  EXPECT_EQ(n["f"], 100u) << r.out;
  EXPECT_EQ(n["h"], 50u) << r.out;
  EXPECT_EQ(n.count("g") + n.count("child_main"), 0u) << r.out;
  EXPECT_EQ(r.out.find("note"), std::string::npos) << r.out;
  const std::string note = "callscope query: note: pid$target matched process ";
  const size_t at = r.err.find(note);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string tail = " only; 1 other process had 201 matching events: use pid* (or pid";
  ASSERT_NE(r.err.find(tail, at), std::string::npos) << r.err;
  // The child's pid, as the note names it, is the one pid* shows.
  const size_t pid_at = r.err.find(tail, at) + tail.size();
  const std::string child = r.err.substr(pid_at, r.err.find(')', pid_at) - pid_at);
  RunResult all = query("pid" + child + ":a.out::entry { @[probefunc] = count(); } END { printa(\"%s %@d\\n\", @); }");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  auto c = pairs(all.out);
  EXPECT_EQ(c["g"], 200u) << all.out;
  EXPECT_EQ(c["child_main"], 1u) << all.out;
  EXPECT_EQ(all.err.find("note:"), std::string::npos) << all.err;
  // A description that names its processes is taken as written: no note.
  RunResult star = query("pid*:a.out::entry { @[probefunc] = count(); }");
  ASSERT_EQ(star.exit_code, 0) << star.err;
  EXPECT_EQ(star.err.find("note:"), std::string::npos) << star.err;
}

// The syscall and sched providers over a recording with --events
// sched,syscalls (issue 33), mixed with pid probes as dtrace scripts mix
// them (self-> set in a function, read at its system calls), checked
// against independent sources: the waits fixture's own counts (1000
// getppid in ask_parent, 3 writes of 64 KiB and 3 fsyncs in flush), the
// size of the file it wrote, and main's unlock that woke the worker, which
// slept at least twice (the lock, a 5 ms nap). Skipped where the kernel
// does not let us record those events.
TEST_P(QueryTest, SystemCallsAndSwitchesOfTheKernel) {
  RunResult r = record_events("waits", "sched,syscalls", {dir_.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (not_recorded(r)) GTEST_SKIP() << r.err;
  const std::map<std::string, long> printed = parse_counts(r.out);
  ASSERT_TRUE(printed.count("main") && printed.count("worker")) << r.out;
  const std::string main_tid = std::to_string(printed.at("main")), worker = std::to_string(printed.at("worker"));
  RunResult q = callscope(
      {"query", "-q", "-n",
       "pid$target::ask_parent:entry, pid$target::flush:entry { self->in = probefunc; } "
       "pid$target::ask_parent:return, pid$target::flush:return { self->in = \"\"; } "
       "syscall::getppid:entry /self->in == \"ask_parent\"/ { @n[\"getppid\"] = sum(1); } "
       "syscall::write:entry /self->in == \"flush\"/ { @n[\"written\"] = sum(arg2); } "
       "syscall::openat:return /self->in == \"flush\" && arg0 >= 0 && errno == 0/ { @n[\"opened\"] = sum(1); } "
       "syscall::fsync:return /self->in == \"flush\" && arg0 == 0/ { @n[\"fsync\"] = sum(1); } "
       "sched:::wakeup /tid == " + main_tid + " && arg0 == " + worker + " && arg1 == pid/ { @n[\"woke\"] = sum(1); } "
       "sched:::sleep /tid == " + worker + "/ { @n[\"slept\"] = sum(1); } "
       "sched:::off-cpu /tid == " + worker + " && cpu >= 0/ { @n[\"off\"] = sum(1); } "
       "END { printa(\"%s %@d\\n\", @n); }",
       trace_});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto n = pairs(q.out);
  EXPECT_EQ(n["getppid"], 1000u) << q.out;
  EXPECT_EQ(n["fsync"], 3u) << q.out;
  EXPECT_EQ(n["opened"], 1u) << q.out;
  struct stat st {};
  ASSERT_EQ(::stat(dir_.file("waits.out").c_str(), &st), 0);
  EXPECT_EQ(n["written"], static_cast<uint64_t>(st.st_size)) << q.out;
  EXPECT_EQ(st.st_size, 3 * 65536);
  EXPECT_GE(n["woke"], 1u) << q.out;
  EXPECT_GE(n["slept"], 2u) << q.out;
  EXPECT_GE(n["off"], n["slept"]) << q.out;
}

// The pf provider (record --events faults) against the kernel's own
// counts: the faults fixture reads getrusage(RUSAGE_THREAD) around touch()
// (300 fresh pages in main). The faults the query sees inside touch() are
// those, less at most the hooks' own (a fault of the runtime's ring while
// it writes touch()'s entry is in the kernel's window, before the call's
// time); each at an instruction of touch(), none in the kernel.
TEST_P(QueryTest, PageFaultsAgreeWithGetrusage) {
  RunResult r = record_events("faults", "sched,faults", {dir_.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (not_recorded(r)) GTEST_SKIP() << r.err;
  const std::map<std::string, long> k = parse_counts(r.out);
  ASSERT_TRUE(k.count("main") && k.count("touch_min")) << r.out;
  const std::string main_tid = std::to_string(k.at("main"));
  RunResult q = query("pid$target::touch:entry /tid == " + main_tid + "/ { self->in = 1; } "
                      "pid$target::touch:return { self->in = 0; } "
                      "pf:::minor /self->in/ { @n[\"minor\"] = sum(1); @at[ufunc(arg1), arg2] = count(); } "
                      "pf:::major /self->in/ { @n[\"major\"] = sum(1); } "
                      "pf:::fault /self->in/ { @n[\"all\"] = sum(1); } "
                      "END { printa(\"%s %@d\\n\", @n); printa(\"at %A %d %@d\\n\", @at); }");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto n = pairs(q.out);
  const auto kernel = static_cast<uint64_t>(k.at("touch_min"));
  EXPECT_LE(n["minor"], kernel) << q.out;
  EXPECT_GE(n["minor"] + 2, kernel) << q.out;
  EXPECT_GE(n["minor"], 1u) << q.out;
  EXPECT_EQ(n["all"], n["minor"] + n["major"]) << q.out;
  EXPECT_EQ(n["major"], static_cast<uint64_t>(k.at("touch_maj"))) << q.out;
  // Every minor fault in touch() was at its instruction, in user space.
  EXPECT_NE(q.out.find("`touch 0 " + std::to_string(n["minor"]) + "\n"), std::string::npos) << q.out;
}

// The io provider (record --events io, root) against /proc/thread-self/io:
// the bytes read by the O_DIRECT reads of the io fixture's direct(), from
// bufinfo_t; every request it began completed (done fires in it, with
// B_DONE), on a device with a name. Skipped where O_DIRECT or the events
// are refused.
TEST_P(QueryTest, BlockIoAgreesWithTheThreadsIoCounters) {
  RunResult r = record_events("io", "sched,io", {dir_.path()});
  if (r.exit_code == 3) GTEST_SKIP() << "O_DIRECT refused where the test writes: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (not_recorded(r)) GTEST_SKIP() << r.err;
  const std::map<std::string, long> k = parse_counts(r.out);
  ASSERT_TRUE(k.count("read")) << r.out;
  const std::string script =
      "pid$target::direct:entry { self->in = 1; } pid$target::direct:return { self->in = 0; } "
      "io:::start /self->in && (args[0]->b_flags & B_READ)/ { @n[\"read\"] = sum(args[0]->b_bcount); } "
      "io:::start /self->in/ { @n[\"begun\"] = sum(1); } "
      "io:::done /self->in && (args[0]->b_flags & B_DONE)/ { @n[\"done\"] = sum(1); } "
      "io:::start /self->in && args[1]->dev_statname != \"\" && args[2]->fi_pathname == "
      "\"<unknown>\"/ { @n[\"named\"] = sum(1); } "
      "END { printa(\"%s %@d\\n\", @n); }";
  auto check = [](const std::string& out, const std::map<std::string, long>& counters) {
    auto n = pairs(out);
    EXPECT_EQ(n["read"], static_cast<uint64_t>(counters.at("read"))) << out;
    EXPECT_GE(n["begun"], 32u) << out;
    EXPECT_EQ(n["done"], n["begun"]) << out;
    EXPECT_EQ(n["named"], n["begun"]) << out;
  };
  RunResult q = query(script);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  check(q.out, k);
  // Live (-c): the program's line first, then the script's.
  q = callscope({"query", "-q", "-n", script, "-c", plain_path(fixture(GetParam(), "io")) + " " + dir_.path()});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const std::map<std::string, long> live = parse_counts(q.out);
  ASSERT_TRUE(live.count("read")) << q.out;
  check(q.out.substr(q.out.find('\n') + 1), live);
}

// profile-N over a recording with context switches fires in the threads
// on a CPU (issue 33: it used to fire in every live thread). The samples
// fixture burns about 300 ms of one thread's CPU and prints the kernel's
// count of it (CLOCK_THREAD_CPUTIME_ID): profile-997's firings in that
// thread are that time's ticks, give or take one at each end of each
// stretch on a CPU (its switches in, counted by sched:::on-cpu), and a few
// for the thread's start and exit outside its calls. The waits fixture's
// worker sleeps 5 ms in doze(): no firing there, where every-thread
// firing gave about 5.
TEST_P(QueryTest, ProfileFiresInTheThreadsThatRun) {
  RunResult r = record_events("samples", "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (not_recorded(r)) GTEST_SKIP() << r.err;
  const std::map<std::string, long> k = parse_counts(r.out);
  ASSERT_TRUE(k.count("tid") && k.count("cpu_ns")) << r.out;
  const std::string tid = std::to_string(k.at("tid"));
  RunResult q = query("profile-997 /tid == " + tid + "/ { @n[\"fired\"] = sum(1); } "
                      "sched:::on-cpu /tid == " + tid + "/ { @n[\"ins\"] = sum(1); } "
                      "END { printa(\"%s %@d\\n\", @n); }");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto n = pairs(q.out);
  const double expected = static_cast<double>(k.at("cpu_ns")) * 997.0 / 1e9;
  EXPECT_GE(expected, 200.0) << r.out;
  EXPECT_LE(std::abs(static_cast<double>(n["fired"]) - expected), static_cast<double>(n["ins"]) + 5.0)
      << q.out << "expected about " << expected;

  r = record_events("waits", "", {dir_.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::map<std::string, long> w = parse_counts(r.out);
  ASSERT_TRUE(w.count("worker")) << r.out;
  q = query("pid$target::doze:entry { self->in = 1; } pid$target::doze:return { self->in = 0; } "
            "profile-997 /self->in/ { @n[\"doze\"] = sum(1); } "
            "sched:::sleep /self->in/ { @n[\"slept\"] = sum(1); } "
            "END { printa(\"%s %@d\\n\", @n); }");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  n = pairs(q.out);
  EXPECT_GE(n["slept"], 1u) << q.out;
  EXPECT_LE(n["doze"], 1u) << q.out;
}

// profile-N over a trace recorded with --sample fires at the samples, and
// arg1 is the instruction sampled: ufunc(arg1) names the function that
// ran, hooks or none. The samples fixture spends about 150 ms of its CPU
// in copy() -- in libc's memcpy, which has no hooks -- and 150 ms in
// crunch(), and prints its CPU time (CLOCK_THREAD_CPUTIME_ID): the
// samples are that time at 997 a second, crunch() about half of them, and
// libc's a good part of the rest. Live (-c), the query has the recorder
// sample the program at profile-N's rate: the same.
TEST_P(QueryTest, ProfileFiresAtTheRecordedSamples) {
  trace_ = dir_.file("sampled.trace");
  RunResult r = callscope({"record", "--sample", "997", "-o", trace_, "--", fixture(GetParam(), "samples")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (not_recorded(r)) GTEST_SKIP() << r.err;
  const std::string script =
      "profile-997 /pid == $target/ { @n[\"all\"] = sum(1); @n[arg1 ? \"user\" : \"kernel\"] = sum(1); "
      "@f[ufunc(arg1)] = count(); } "
      "END { printa(\"%s %@d\\n\", @n); printa(\"f %@d %A\\n\", @f); }";
  auto check = [](const std::string& out, const std::map<std::string, long>& program) {
    ASSERT_TRUE(program.count("cpu_ns")) << out;
    auto n = pairs(out);
    const double expected = static_cast<double>(program.at("cpu_ns")) * 997.0 / 1e9;
    EXPECT_GE(expected, 200.0) << out;
    EXPECT_NEAR(static_cast<double>(n["all"]), expected, 0.15 * expected) << out;
    EXPECT_EQ(n["all"], n["user"] + n["kernel"]) << out;
    // "f COUNT FUNCTION" (a C++ name may hold blanks: the runtime's own,
    // sampled now and then)
    uint64_t crunch = 0, libc = 0;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("f ", 0) != 0) continue;
      std::istringstream in(line.substr(2));
      uint64_t count = 0;
      std::string name;
      in >> count >> name;
      if (name.find("`crunch") != std::string::npos) crunch += count;
      if (name.find("libc") != std::string::npos) libc += count;
    }
    EXPECT_NEAR(static_cast<double>(crunch), 0.5 * static_cast<double>(n["all"]), 0.15 * static_cast<double>(n["all"]))
        << out;
    EXPECT_GE(static_cast<double>(libc), 0.1 * static_cast<double>(n["all"])) << out;
  };
  RunResult q = query(script);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  check(q.out, parse_counts(r.out));
  q = callscope({"query", "-q", "-n", script, "-c", plain_path(fixture(GetParam(), "samples"))});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  check(q.out.substr(q.out.find('\n') + 1), parse_counts(q.out));
}

// vtimestamp, the thread's time on a CPU, against the kernel's own count
// (CLOCK_THREAD_CPUTIME_ID, which the samples fixture prints at the end of
// main(): main's vtimestamp is that, less what ran before main); and the
// waits fixture's doze() sleeps 5 ms: on a CPU for a small part of it.
// Over a recording and live.
TEST_P(QueryTest, VtimestampIsTheThreadsTimeOnACpu) {
  RunResult r = record_events("samples", "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (not_recorded(r)) GTEST_SKIP() << r.err;
  const std::string script =
      "pid$target::$1:entry { self->v = vtimestamp; self->t = timestamp; } "
      "pid$target::$1:return { @n[\"cpu\"] = sum(vtimestamp - self->v); @n[\"wall\"] = sum(timestamp - self->t); } "
      "END { printa(\"%s %@d\\n\", @n); }";
  auto check_main = [](const std::string& out, const std::map<std::string, long>& program) {
    ASSERT_TRUE(program.count("cpu_ns")) << out;
    auto n = pairs(out);
    const auto cpu = static_cast<double>(program.at("cpu_ns"));
    EXPECT_GE(cpu, 2e8) << out;
    EXPECT_NEAR(static_cast<double>(n["cpu"]), cpu, 0.1 * cpu) << out;
    EXPECT_LE(n["cpu"], n["wall"]) << out;
  };
  RunResult q = callscope({"query", "-q", "-n", script, trace_, "main"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  check_main(q.out, parse_counts(r.out));
  q = callscope({"query", "-q", "-n", script, "-c", plain_path(fixture(GetParam(), "samples")), "main"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  check_main(q.out.substr(q.out.find('\n') + 1), parse_counts(q.out));

  r = record_events("waits", "", {dir_.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  q = callscope({"query", "-q", "-n", script, trace_, "doze"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto n = pairs(q.out);
  EXPECT_GE(n["wall"], 5'000'000u) << q.out;
  EXPECT_LT(n["cpu"], 1'000'000u) << q.out;
}

// The same providers over a trace without those events: refused, with
// what to do -- an empty answer would read as "none happened".
TEST_P(QueryTest, KernelProvidersOfATraceWithoutThemAreRefused) {
  // The default events (sched): the trace says it has no system calls,
  // though it holds the kernel's events.
  record("profile");
  RunResult q = query("syscall::write:entry { @ = count(); }");
  EXPECT_EQ(q.exit_code, 1);
  EXPECT_NE(q.err.find("the trace has no system calls: record the program with --events syscalls"), std::string::npos)
      << q.err;
  trace_ = dir_.file("none.trace");
  RunResult r = callscope({"record", "--events", "none", "-o", trace_, "--", fixture(GetParam(), "profile")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  q = query("sched:::on-cpu { @ = count(); }");
  EXPECT_EQ(q.exit_code, 1);
  EXPECT_NE(q.err.find("the trace has no context switches"), std::string::npos) << q.err;
}

// exec keeps the thread, and its self-> variables, as in dtrace: the
// Guide's progtime.d (proc:::start sets self->start, proc:::exit reads
// it) counts the fork_exec fixture's two processes -- the parent, and the
// child that exec'd -- and its whoexec.d (proc:::exec sets self->parent,
// exec-success reads and unsets it) sees the one exec.
TEST_P(QueryTest, ExecKeepsTheThreadsVariables) {
  record("fork_exec");
  RunResult q = query(
      "proc:::start { self->start = timestamp; } proc:::exit /self->start/ { @n[\"exits\"] = sum(1); } "
      "proc:::exec { self->parent = execname; } "
      "proc:::exec-success /self->parent != NULL/ { @n[\"execs\"] = sum(1); self->parent = NULL; } "
      "proc:::exec-success /self->parent == NULL/ { @n[\"unset\"] = sum(1); } "
      "END { printa(\"%s %@d\\n\", @n); }");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto n = pairs(q.out);
  EXPECT_EQ(n["exits"], 2u) << q.out;
  EXPECT_EQ(n["execs"], 1u) << q.out;
  EXPECT_EQ(n["unset"], 1u) << q.out;
}

INSTANTIATE_TEST_SUITE_P(Variants, QueryTest, ::testing::ValuesIn(variants()), VariantName());

// A program without hooks: the kernel's providers fire in its threads all
// the same, over a recording and live (they used to fire nothing, and say
// nothing). The plain fixture writes "plain argc=1\n" (13 bytes) to its
// stdout in one write(2) and exits 42.
TEST(QueryUnhookedTest, SystemCallsOfAProgramWithoutHooks) {
  TempDir dir;
  const std::string trace = dir.file("plain.trace");
  RunResult r = callscope({"record", "--events", "sched,syscalls", "-o", trace, "--", plain_fixture()});
  ASSERT_EQ(r.exit_code, 42) << r.err;
  if (r.err.find("not recorded") != std::string::npos) GTEST_SKIP() << r.err;
  const std::string script =
      "syscall::write:entry /arg0 == 1/ { @n[\"writes\"] = sum(1); @n[\"bytes\"] = sum(arg2); "
      "@n[tid == pid ? \"main\" : \"other\"] = sum(1); } "
      "sched:::on-cpu { @n[\"on\"] = sum(1); } END { printa(\"%s %@d\\n\", @n); }";
  RunResult q = callscope({"query", "-q", "-n", script, trace});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto n = pairs(q.out);
  EXPECT_EQ(n["writes"], 1u) << q.out;
  EXPECT_EQ(n["bytes"], 13u) << q.out;
  EXPECT_EQ(n["main"], 1u) << q.out;
  EXPECT_GE(n["on"], 1u) << q.out;
  // Live: the program's line first.
  q = callscope({"query", "-q", "-n", script, "-c", plain_path(plain_fixture())});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  ASSERT_EQ(q.out.rfind("plain argc=1\n", 0), 0u) << q.out;
  n = pairs(q.out.substr(q.out.find('\n') + 1));
  EXPECT_EQ(n["writes"], 1u) << q.out;
  EXPECT_EQ(n["bytes"], 13u) << q.out;
  EXPECT_EQ(n["main"], 1u) << q.out;
}

// Names from the trace reach the terminal escaped, as in every view: an
// executable (probemod, execname) and a function (probefunc, ustack(), -l)
// named with an escape sequence that would clear the screen. A copy of the
// profile fixture under such a name, its leaf() renamed by objcopy. With
// --format json, the names are as they are (JSON quotes them); what the
// script itself writes is printed as written.
TEST(QueryTerminal, NamesFromTheTraceAreEscaped) {
  TempDir dir;
  const std::string program = dir.file("app\x1b[2J");
  RunResult copy =
      run({"objcopy", "--redefine-sym", "leaf=le\x1b[2Jaf", fixture(variants().front(), "profile"), program});
  ASSERT_EQ(copy.exit_code, 0) << copy.err;
  ASSERT_EQ(run({"chmod", "+x", program}).exit_code, 0);
  const std::string trace = dir.file("t.trace");
  RunResult rec = callscope({"record", "-o", trace, "--", program});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  RunResult r = callscope({"query", "-q", "-n",
                           "pid$target::*af:entry /n++ == 0/ { "
                           "printf(\"%s|%s|%s|\x1b[0m\\n\", execname, probemod, probefunc); ustack(); } "
                           "pid$target::*af:entry { @[probefunc, umod(ucaller)] = count(); }",
                           trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("app\\x1b[2J|app\\x1b[2J|le\\x1b[2Jaf|\x1b[0m\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("app\\x1b[2J`le\\x1b[2Jaf"), std::string::npos) << r.out;  // ustack()
  EXPECT_NE(r.out.find("le\\x1b[2Jaf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("500"), std::string::npos) << r.out;  // printa's key, 500 calls
  // The one escape is the script's own.
  EXPECT_EQ(r.out.find('\x1b'), r.out.rfind('\x1b')) << r.out;
  RunResult listed = callscope({"query", "-l", "-n", "pid$target::*af:entry", trace});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("app\\x1b[2J"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("le\\x1b[2Jaf entry"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find('\x1b'), std::string::npos) << listed.out;
  RunResult json = callscope(
      {"query", "-q", "--format", "json", "-n", "pid$target::*af:entry /n++ == 0/ { trace(probefunc); }", trace});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("le\\u001b[2Jaf"), std::string::npos) << json.out;
  EXPECT_EQ(json.out.find('\x1b'), std::string::npos) << json.out;
}

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
