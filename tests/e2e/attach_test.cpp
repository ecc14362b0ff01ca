// callscope attach and detach, end to end: attach_server (threads waiting
// for work, a fork, a dlopen) is started without callscope; attach records
// exactly the calls its commands ran between the attach and the detach, in
// every build (-finstrument-functions, patchable entries, neither with
// --libcalls) and mode; the program runs on and answers after the detach,
// with its GOT slots and code as they were, and can be attached to again.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "e2e_support.h"
#include "analysis/off_cpu.h"
#include "format/trace_reader.h"

namespace callscope::e2e {
namespace {

// attach_server started as any program is, its stdin and stdout ours.
class Server {
 public:
  explicit Server(const std::string& path, const char* arg = nullptr) {
    int in[2], out[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::execl(path.c_str(), path.c_str(), arg, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    in_ = in[1];
    out_ = ::fdopen(out[0], "r");
    EXPECT_NE(line().find("ready pid="), std::string::npos) << path;
  }
  ~Server() {
    if (in_ >= 0) ::close(in_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_) ::fclose(out_);
  }
  pid_t pid() const { return pid_; }
  std::string line() {
    char buf[4096];
    return std::fgets(buf, sizeof buf, out_) ? std::string(buf) : std::string();
  }
  std::string command(const std::string& c) {
    send(c);
    return line();
  }
  // A line, its answer to be read later.
  void send(const std::string& c) {
    const std::string l = c + "\n";
    EXPECT_EQ(::write(in_, l.data(), l.size()), static_cast<ssize_t>(l.size()));
  }
  // quit, and how it ended.
  int quit() {
    command("quit");
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  FILE* out_ = nullptr;
};

// `callscope attach PID ARGS...` running until detached; returns once the
// runtime serves its socket in `ctl_dir` (or attach ended).
std::future<RunResult> attach_in_background(pid_t pid, const std::vector<std::string>& args,
                                            const std::string& ctl_dir) {
  std::vector<std::string> argv = {"attach", std::to_string(pid)};
  argv.insert(argv.end(), args.begin(), args.end());
  auto f = std::async(std::launch::async, [argv] { return callscope(argv); });
  const std::string sock = ctl_dir + "/" + std::to_string(pid) + ".sock";
  for (int i = 0; i < 1000 && ::access(sock.c_str(), F_OK) != 0; ++i) {
    if (f.wait_for(std::chrono::milliseconds(10)) == std::future_status::ready) break;
  }
  return f;
}

class AttachTest : public ::testing::TestWithParam<std::string> {
 public:
  void SetUp() override {
    // The control socket where attach, detach and the runtime all look.
    ::mkdir(ctl_.file("ctl").c_str(), 0700);
    ::setenv("CALLSCOPE_CTL_DIR", ctl_.file("ctl").c_str(), 1);
  }
  void TearDown() override { ::unsetenv("CALLSCOPE_CTL_DIR"); }

  std::string program(const std::string& name) { return fixture(GetParam(), name); }

  std::future<RunResult> attach(pid_t pid, const std::vector<std::string>& args) {
    return attach_in_background(pid, args, ctl_.file("ctl"));
  }
  RunResult detach(pid_t pid) { return callscope({"detach", std::to_string(pid)}); }

  TempDir ctl_;
  TempDir dir_;
};

// The whole cycle for a build: attach, exact counts in the window (threads,
// a fork, a library loaded meanwhile), detach, the program as it was, and a
// second attach.
void attach_cycle(AttachTest& t, Server& s, const std::string& plugin, const std::vector<std::string>& extra,
                  const std::string& counted, uint64_t per_step, const std::string& trace1, const std::string& trace2) {
  s.command("run 3");  // every function has been called once before: no first-call effect
  const std::string before = s.command("check");
  int fds0 = 0, null0 = 0;
  ASSERT_EQ(std::sscanf(s.command("fds").c_str(), "fds %d null %d", &fds0, &null0), 2);
  ASSERT_NE(before.find("check got="), std::string::npos);

  std::vector<std::string> args = {"-o", trace1};
  args.insert(args.end(), extra.begin(), extra.end());
  auto a = t.attach(s.pid(), args);
  EXPECT_EQ(s.command("run 1000"), "ran 1000\n");
  EXPECT_EQ(s.command("fork 100"), "forked 100 status=0\n");
  EXPECT_EQ(s.command("dlopen " + plain_path(plugin) + " 50"), "plugin 50\n");
  RunResult d = t.detach(s.pid());
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, "ok detached\n");
  RunResult r = a.get();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("detached from process " + std::to_string(s.pid()) + ", which runs on"), std::string::npos)
      << r.err;

  TraceSummary sum = summarize(trace1);
  ASSERT_EQ(sum.reader->processes().size(), 2u);
  // Processes are in pid order: the fork child comes first when its pid
  // wrapped around (pid_max 32768 on a machine that ran many tests).
  const uint32_t prog = sum.reader->processes()[0].record.pid == static_cast<uint32_t>(s.pid()) ? 0 : 1;
  const uint32_t child = 1 - prog;
  // 4 workers x 1000 steps in the program, 100 in the fork child.
  EXPECT_EQ((sum.calls_in_process[{prog, counted}]), 4000 * per_step);
  EXPECT_EQ((sum.calls_in_process[{child, counted}]), 100 * per_step);
  if (counted == "step") {
    EXPECT_EQ(sum.calls_of("leaf"), 2 * 4100u);
    EXPECT_EQ(sum.calls_of("plugin_leaf"), 50u);
  }
  EXPECT_EQ(sum.reader->processes()[prog].record.how, static_cast<uint32_t>(format::ExitHow::kDetached));
  EXPECT_EQ(sum.reader->processes()[child].record.how, static_cast<uint32_t>(format::ExitHow::kExited));
  RunResult info = callscope({"info", trace1});
  EXPECT_NE(info.out.find("attached to the running program"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("running (detached)"), std::string::npos) << info.out;

  // Left as it was found: the executable's slots and code; it runs on. Of
  // the descriptors, only /dev/null ones stay: one per thread traced (the
  // main thread and 4 workers), and 3 (docs/attach.md).
  EXPECT_EQ(s.command("check"), before);
  int fds1 = 0, null1 = 0;
  ASSERT_EQ(std::sscanf(s.command("fds").c_str(), "fds %d null %d", &fds1, &null1), 2);
  EXPECT_EQ(fds1 - fds0, null1 - null0);
  EXPECT_LE(fds1 - fds0, 5 + 3);
  EXPECT_EQ(s.command("run 10"), "ran 10\n");

  // Again: another copy of the runtime, the same exact counts.
  std::vector<std::string> args2 = {"-o", trace2};
  args2.insert(args2.end(), extra.begin(), extra.end());
  auto a2 = t.attach(s.pid(), args2);
  EXPECT_EQ(s.command("run 500"), "ran 500\n");
  const RunResult d2 = t.detach(s.pid());
  EXPECT_EQ(d2.exit_code, 0) << d2.err;
  RunResult r2 = a2.get();
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  // On a mismatch: what attach printed (the runtime's notices) and what the
  // trace holds by name, to tell unpatched sites from unnamed calls.
  const TraceSummary sum2 = summarize(trace2);
  EXPECT_EQ(sum2.calls_of(counted), 2000 * per_step)
      << "attach said: " << r2.err << "\n" << callscope({"report", trace2, "-n", "8"}).out;
  EXPECT_EQ(s.command("check"), before);
  EXPECT_EQ(s.quit(), 0);
}

TEST_P(AttachTest, HooksOfAProgramStartedWithoutCallscope) {
  Server s(program("attach_server"));
  attach_cycle(*this, s, program("attach_plugin.so"), {}, "step", 1, dir_.file("a.trace"), dir_.file("b.trace"));
}

TEST_P(AttachTest, PatchableEntries) {
  Server s(program("attach_server_patchable"));
  if (GetParam().rfind("gcc", 0) == 0) {
    // gcc's entries are five one-byte nops, which a running thread may be
    // between: attach makes them one instruction each with every thread
    // stopped first, and says so (the detach gives the nops back).
    RunResult r = callscope({"attach", std::to_string(s.pid()), "-o", dir_.file("g.trace"), "--duration", "50ms"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("of gcc's patchable entries made one instruction each; the 5 threads were stopped"),
              std::string::npos)
        << r.err;
  }
  attach_cycle(*this, s, program("attach_plugin_patchable.so"), {}, "step", 1, dir_.file("a.trace"),
               dir_.file("b.trace"));
}

// Threads that start and end while attach looks whether one blocks SIGTRAP
// (issue 30): glibc blocks every signal in a thread's first and last
// moments and in pthread_create around the clone, and the main thread,
// borrowed to start the loader, may be inside pthread_create then (the
// loader would take that mask for its own). None of those is a thread that
// blocks SIGTRAP: each attach patches, and records exactly.
TEST_P(AttachTest, ThreadsStartingAndEndingDoNotStopThePatching) {
  Server s(program("attach_server_patchable"));
  s.command("run 3");
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("attach " + std::to_string(round + 1));
    const std::string trace = dir_.file("churn" + std::to_string(round) + ".trace");
    s.send("churn");
    auto a = attach(s.pid(), {"-o", trace});
    EXPECT_EQ(s.command("stop").rfind("churned ", 0), 0u);
    EXPECT_EQ(s.command("run 100"), "ran 100\n");
    EXPECT_EQ(detach(s.pid()).exit_code, 0);
    RunResult r = a.get();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("blocks SIGTRAP"), std::string::npos) << r.err;
    EXPECT_EQ(summarize(trace).calls_of("step"), 400u) << r.err;
  }
  EXPECT_EQ(s.quit(), 0);
}

// What attach says counts right: a program of one thread (issue 30, item 7).
TEST_P(AttachTest, AProgramOfOneThreadIsSaidSo) {
  if (GetParam().rfind("gcc", 0) != 0) GTEST_SKIP() << "only gcc's entries are joined with the threads stopped";
  Server s(program("attach_server_patchable"), "0");
  RunResult r = callscope({"attach", std::to_string(s.pid()), "-o", dir_.file("one.trace"), "--duration", "50ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("made one instruction each; its one thread was stopped "), std::string::npos) << r.err;
  EXPECT_EQ(s.command("run 2"), "ran 2\n");
  EXPECT_EQ(s.quit(), 0);
}

TEST_P(AttachTest, PatchingWaitsForSigtrapToReachEveryThread) {
  Server s(program("attach_server_patchable"));
  s.command("run 3");
  const std::string before = s.command("check");
  // A thread that blocks SIGTRAP: the sites are left alone, and attach says why.
  EXPECT_EQ(s.command("blocktrap 1"), "trap 1\n");
  auto a = attach(s.pid(), {"-o", dir_.file("b.trace")});
  EXPECT_EQ(s.command("run 100"), "ran 100\n");
  const std::string attached = s.command("check");  // its slots are bound, its code untouched
  EXPECT_EQ(attached.substr(attached.find(" text=")), before.substr(before.find(" text=")));
  EXPECT_EQ(detach(s.pid()).exit_code, 0);
  RunResult r = a.get();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("a thread of the program blocks SIGTRAP (tid " + std::to_string(s.pid()) + " ("),
            std::string::npos)
      << r.err;
  EXPECT_EQ(summarize(dir_.file("b.trace")).calls_of("step"), 0u);
  // Its mask as it was (the kernel's word): attach's call in the thread it
  // borrowed (the main thread) must not unblock it.
  const std::string status = read_file("/proc/" + std::to_string(s.pid()) + "/status");
  const size_t blk = status.find("SigBlk:");
  ASSERT_NE(blk, std::string::npos);
  EXPECT_EQ((std::stoull(status.substr(blk + 7), nullptr, 16) >> (SIGTRAP - 1)) & 1, 1u) << status;
  // Unblocked, with a handler that blocks every signal: SIGTRAP is taken out
  // of its mask while attached, and put back at the detach.
  EXPECT_EQ(s.command("blocktrap 0"), "trap 0\n");
  EXPECT_EQ(s.command("handler"), "handler\n");
  EXPECT_EQ(s.command("handlermask"), "mask trap=1\n");
  auto a2 = attach(s.pid(), {"-o", dir_.file("h.trace")});
  EXPECT_EQ(s.command("handlermask"), "mask trap=0\n");
  EXPECT_EQ(s.command("run 100"), "ran 100\n");
  EXPECT_EQ(detach(s.pid()).exit_code, 0);
  ASSERT_EQ(a2.get().exit_code, 0);
  EXPECT_EQ(summarize(dir_.file("h.trace")).calls_of("step"), 400u);
  EXPECT_EQ(s.command("handlermask"), "mask trap=1\n");
  EXPECT_EQ(s.command("check"), before);
  EXPECT_EQ(s.quit(), 0);
}

TEST_P(AttachTest, McountAndFentryCalls) {
  {
    Server s(program("attach_server_pg"));
    attach_cycle(*this, s, program("attach_plugin.so"), {}, "step", 1, dir_.file("pg_a.trace"), dir_.file("pg_b.trace"));
  }
  Server s(program("attach_server_fentry"));
  attach_cycle(*this, s, program("attach_plugin.so"), {}, "step", 1, dir_.file("fe_a.trace"), dir_.file("fe_b.trace"));
}

TEST_P(AttachTest, NopMcountEntries) {
  if (GetParam().rfind("gcc", 0) != 0) GTEST_SKIP() << "-mnop-mcount is gcc's";
  Server s(program("attach_server_nop_mcount"));
  attach_cycle(*this, s, program("attach_plugin.so"), {}, "step", 1, dir_.file("n_a.trace"), dir_.file("n_b.trace"));
}

TEST_P(AttachTest, LibraryCallsOfAPlainProgram) {
  Server s(program("attach_server_plain"));
  attach_cycle(*this, s, program("attach_plugin.so"), {"--libcalls"}, "strtol", 1, dir_.file("a.trace"),
               dir_.file("b.trace"));
}

// CPU samples of a running program without hooks (attach --sample, as
// perf record -p): each under its call path, unwound from the stack -- the
// workers' samples in leaf are under worker > step > work, as the code
// calls them (1.13). (10 million steps a worker: leaf, beside strtol, gets
// a tenth of them or less; 2 million gave 12-19 of its samples on a busy
// machine, short of the 20 the check wants.)
TEST_P(AttachTest, SamplesOfAPlainProgramHaveTheirCallPaths) {
  Server s(program("attach_server_plain"));
  s.command("run 3");
  const std::string trace = dir_.file("s.trace");
  auto a = attach(s.pid(), {"-o", trace, "--sample", "999", "--events", "none"});
  EXPECT_EQ(s.command("run 10000000"), "ran 10000000\n");
  EXPECT_EQ(detach(s.pid()).exit_code, 0);
  RunResult r = a.get();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (r.err.find("the kernel's events are not recorded") != std::string::npos) GTEST_SKIP() << r.err;
  EXPECT_NE(r.err.find("the samples' call paths unwound from the stack"), std::string::npos) << r.err;
  RunResult tr = callscope({"report", "--samples", "--tree", "--format", "csv", trace});
  ASSERT_EQ(tr.exit_code, 0) << tr.err;
  // node -> (parent, function); the samples (CALLS) of each leaf node
  std::map<std::string, std::pair<std::string, std::string>> node;
  std::istringstream lines(tr.out);
  std::string line;
  std::getline(lines, line);  // the header
  uint64_t in_leaf = 0, in_leaf_under_step = 0;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(lines, line)) {
    std::vector<std::string> c;
    std::stringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) c.push_back(cell);
    ASSERT_GE(c.size(), 7u) << line;
    node[c[0] + "/" + c[1]] = {c[0] + "/" + c[2], c[4]};
    rows.push_back(c);
  }
  for (const auto& c : rows) {
    if (c[4] != "leaf") continue;
    const uint64_t n = std::stoull(c[6]);
    in_leaf += n;
    // leaf < work < step < worker
    std::vector<std::string> up;
    for (std::string at = node[c[0] + "/" + c[2]].second, key = c[0] + "/" + c[2]; !at.empty() && up.size() < 3;
         key = node[key].first, at = node[key].second)
      up.push_back(at);
    if (up == std::vector<std::string>{"work", "step", "worker"}) in_leaf_under_step += n;
  }
  EXPECT_GE(in_leaf, 20u) << tr.out;
  // A sample whose stack the unwinder cannot follow to the end is marked
  // "[outer frames not unwound]", not guessed: their share varies from run
  // to run (up to 8 % of leaf's seen with the whole suite running beside
  // it); the rest must have the whole path.
  EXPECT_GE(static_cast<double>(in_leaf_under_step), 0.85 * static_cast<double>(in_leaf)) << tr.out;
  EXPECT_EQ(s.command("run 5"), "ran 5\n");
}

TEST_P(AttachTest, ProfileModeKeepsTheTreesUntilTheDetach) {
  Server s(program("attach_server"));
  s.command("run 3");
  const std::string trace = dir_.file("p.trace");
  auto a = attach(s.pid(), {"-o", trace, "--mode", "profile"});
  EXPECT_EQ(s.command("run 700"), "ran 700\n");
  // ctl works as under record.
  RunResult dump = callscope({"ctl", std::to_string(s.pid()), "dump"});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  EXPECT_EQ(detach(s.pid()).exit_code, 0);
  RunResult r = a.get();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunResult rep = callscope({"report", trace, "--format", "csv"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  auto rows = csv_by(rep.out, "function");
  EXPECT_EQ(num(rows["step"], "calls"), 2800u) << rep.out;
  EXPECT_EQ(num(rows["leaf"], "calls"), 5600u) << rep.out;
  EXPECT_EQ(s.command("run 5"), "ran 5\n");
}

// The kernel's events of a running program: each of its threads that was
// running before the attach is followed from then on -- the workers, woken
// for their steps, go back to their condition variable's futex.
TEST_P(AttachTest, KernelEventsOfTheThreadsAlreadyRunning) {
  Server s(program("attach_server"));
  s.command("run 3");
  const std::string trace = dir_.file("k.trace");
  auto a = attach(s.pid(), {"-o", trace, "--events", "sched,syscalls"});
  EXPECT_EQ(s.command("run 300"), "ran 300\n");
  EXPECT_EQ(s.command("run 300"), "ran 300\n");
  EXPECT_EQ(detach(s.pid()).exit_code, 0);
  RunResult r = a.get();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (r.err.find("the kernel's events are not recorded") != std::string::npos ||
      r.err.find("not recorded: system calls") != std::string::npos)
    GTEST_SKIP() << r.err;
  EXPECT_NE(r.err.find(" context switches with sleep states and wakers, "), std::string::npos) << r.err;
  auto reader = format::TraceReader::open(trace);
  ASSERT_TRUE(reader) << reader.error().message();
  format::TraceReader& t = **reader;
  int waited_in_futex = 0;
  for (uint32_t i = 0; i < t.threads().size(); ++i) {
    if (t.process(t.threads()[i].record.process_index).record.pid != static_cast<uint32_t>(s.pid())) continue;
    auto events = t.sys_events(i);
    ASSERT_TRUE(events) << events.error().message();
    bool futex = false;
    for (const analysis::OffCpu& o : analysis::off_cpu_stretches(*events, t.threads()[i].record.end_tick,
                                                                  [&t](uint64_t ns) { return t.mono_to_tick(ns); }))
      futex = futex || analysis::off_cpu_reason(o) == "[futex]";
    waited_in_futex += futex;
  }
  EXPECT_GE(waited_in_futex, 4) << callscope({"info", trace}).out;  // the 4 workers (and main, waiting for them)
  RunResult info = callscope({"info", "--format", "json", trace});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("\"context switches\""), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("\"system calls\""), std::string::npos) << info.out;
  EXPECT_EQ(s.command("run 5"), "ran 5\n");
}

TEST_P(AttachTest, DurationAndInterruptEndTheRecording) {
  Server s(program("attach_server"));
  // --duration: attach returns by itself.
  RunResult r = callscope({"attach", std::to_string(s.pid()), "-o", dir_.file("d.trace"), "--duration", "200ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(s.command("run 5"), "ran 5\n");
  // Ctrl-C of attach: it detaches and writes what it recorded.
  auto a = attach(s.pid(), {"-o", dir_.file("i.trace")});
  EXPECT_EQ(s.command("run 250"), "ran 250\n");
  // The attach process is the child of the async's callscope(): find it by
  // its socket's owner is not possible, so interrupt every attach of ours.
  run({"pkill", "-INT", "-f", "callscope attach " + std::to_string(s.pid())});
  RunResult ri = a.get();
  ASSERT_EQ(ri.exit_code, 0) << ri.err;
  EXPECT_EQ(summarize(dir_.file("i.trace")).calls_of("step"), 1000u);
  EXPECT_EQ(s.command("run 5"), "ran 5\n");
  EXPECT_EQ(s.quit(), 0);
}

TEST_P(AttachTest, WhatAProgramKilledWhileAttachedRecordedIsKept) {
  Server s(program("attach_server"));
  auto a = attach(s.pid(), {"-o", dir_.file("c.trace")});
  EXPECT_EQ(s.command("run 300"), "ran 300\n");
  s.command("die");  // no answer: it is gone
  RunResult r = a.get();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("process " + std::to_string(s.pid()) + " ended"), std::string::npos) << r.err;
  EXPECT_EQ(summarize(dir_.file("c.trace")).calls_of("step"), 1200u);
}

TEST_P(AttachTest, FiltersApplyAsUnderRecord) {
  Server s(program("attach_server"));
  auto a = attach(s.pid(), {"-o", dir_.file("f.trace"), "--exclude", "work"});
  EXPECT_EQ(s.command("run 200"), "ran 200\n");
  EXPECT_EQ(detach(s.pid()).exit_code, 0);
  ASSERT_EQ(a.get().exit_code, 0);
  TraceSummary sum = summarize(dir_.file("f.trace"));
  EXPECT_EQ(sum.calls_of("step"), 800u);
  EXPECT_EQ(sum.calls_of("work"), 0u);
  EXPECT_EQ(sum.calls_of("leaf"), 1600u);
  EXPECT_EQ(s.quit(), 0);
}

TEST_P(AttachTest, AKilledAttachLeavesTheProgramAsItWas) {
  Server s(program("attach_server"));
  s.command("run 3");
  const std::string before = s.command("check");
  auto a = attach(s.pid(), {"-o", dir_.file("k.trace"), "--raw-dir", dir_.path()});
  EXPECT_EQ(s.command("run 100"), "ran 100\n");
  EXPECT_NE(s.command("check"), before);  // bound
  run({"pkill", "-KILL", "-f", "callscope attach " + std::to_string(s.pid())});
  a.get();
  // The runtime sees its recorder gone and detaches by itself.
  std::string now;
  for (int i = 0; i < 200 && (now = s.command("check")) != before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(now, before);
  EXPECT_EQ(s.command("run 100"), "ran 100\n");
  EXPECT_EQ(s.quit(), 0);
}

TEST_P(AttachTest, AttachedAgainAndAgain) {
  // Each attach loads another copy of the runtime (the one before stays,
  // inert), until glibc's static TLS space for late libraries runs out:
  // then attach says so and the program runs on.
  Server s(program("attach_server"));
  int attached = 0;
  for (int i = 0; i < 8; ++i) {
    RunResult r = callscope({"attach", std::to_string(s.pid()), "-o", dir_.file("r.trace"), "-f", "--duration", "50ms"});
    if (r.exit_code != 0) {
      EXPECT_NE(r.err.find("static TLS"), std::string::npos) << r.err;
      break;
    }
    ++attached;
    EXPECT_EQ(s.command("run 5"), "ran 5\n");
  }
  EXPECT_GE(attached, 3);
  EXPECT_EQ(s.command("run 5"), "ran 5\n");
  EXPECT_EQ(s.quit(), 0);
}

INSTANTIATE_TEST_SUITE_P(Variants, AttachTest, ::testing::ValuesIn(variants()), VariantName());

// ---- refusals: each with its reason, the target untouched -------------------

TEST(AttachErrors, RefusalsNameTheReason) {
  TempDir dir;
  // No such process.
  RunResult none = callscope({"attach", "999999999", "-o", dir.file("x.trace")});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("999999999"), std::string::npos) << none.err;
  // Not a pid at all: a usage error.
  EXPECT_EQ(callscope({"attach", "abc"}).exit_code, 2);
  EXPECT_EQ(callscope({"attach", std::to_string(::getpid()), "--duration", "soon"}).exit_code, 2);
  // A statically linked program.
  const pid_t st = ::fork();
  if (st == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    const std::string path = std::string(FIXTURE_DIR) + "/inject_target_static";
    ::execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  RunResult stat = callscope({"attach", std::to_string(st), "-o", dir.file("s.trace")});
  EXPECT_NE(stat.exit_code, 0);
  EXPECT_NE(stat.err.find("statically linked"), std::string::npos) << stat.err;
  ::kill(st, SIGKILL);
  ::waitpid(st, nullptr, 0);
  // A program without hooks, attached to without --libcalls.
  Server plain(fixture(variants().front(), "attach_server_plain"));
  RunResult nohooks = callscope({"attach", std::to_string(plain.pid()), "-o", dir.file("p.trace")});
  EXPECT_NE(nohooks.exit_code, 0);
  EXPECT_NE(nohooks.err.find("--libcalls"), std::string::npos) << nohooks.err;
  EXPECT_EQ(plain.command("run 2"), "ran 2\n");
  EXPECT_FALSE(std::filesystem::exists(dir.file("p.trace")));
  // detach of a process nobody attached to.
  RunResult d = callscope({"detach", std::to_string(plain.pid())});
  EXPECT_NE(d.exit_code, 0);
  EXPECT_EQ(plain.quit(), 0);
}

TEST(AttachErrors, EachStepFailingLeavesTheProgramAsItWas) {
  // Each step of the attach made to fail (CALLSCOPE_TEST_INJECT_FAIL): a
  // clear error, no trace, no session left, and the program runs on with
  // its slots and code as they were. Then a real attach still works.
  TempDir dir;
  const std::string ctl_dir = dir.file("ctl"), raw = dir.file("raw");
  ::mkdir(ctl_dir.c_str(), 0700);
  ::mkdir(raw.c_str(), 0700);
  ::setenv("CALLSCOPE_CTL_DIR", ctl_dir.c_str(), 1);
  // gcc's patchable entries: attach joins them before loading anything, and
  // must part them again when a later step fails.
  Server s(fixture("gcc-O0", "attach_server_patchable"));
  s.command("run 3");
  const std::string before = s.command("check");
  const std::pair<const char*, const char*> steps[] = {
      {"hold", "cannot hold a thread"},
      {"mmap", "cannot map memory in the process"},
      {"write", "cannot write to the process's memory"},
      {"mprotect", "cannot make our code in the process executable"},
      {"thread", "pthread_create in the process failed"},
      {"dlopen", "dlopen in the process failed"},
      {"entry", "has no function callscope_rt_attach"},
      {"init", "the runtime could not start in process"},
  };
  for (const auto& [step, message] : steps) {
    ::setenv("CALLSCOPE_TEST_INJECT_FAIL", step, 1);
    const std::string trace = dir.file(std::string(step) + ".trace");
    RunResult r = callscope({"attach", std::to_string(s.pid()), "-o", trace, "--raw-dir", raw, "--duration", "2s"});
    ::unsetenv("CALLSCOPE_TEST_INJECT_FAIL");
    EXPECT_EQ(r.exit_code, 1) << step;
    EXPECT_NE(r.err.find(message), std::string::npos) << step << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(trace)) << step;
    EXPECT_TRUE(std::filesystem::is_empty(raw)) << step;
    EXPECT_EQ(s.command("run 5"), "ran 5\n") << step;
    EXPECT_EQ(s.command("check"), before) << step;
  }
  auto a = attach_in_background(s.pid(), {"-o", dir.file("ok.trace"), "--raw-dir", raw}, ctl_dir);
  EXPECT_EQ(s.command("run 100"), "ran 100\n");
  EXPECT_EQ(callscope({"detach", std::to_string(s.pid())}).exit_code, 0);
  RunResult ok = a.get();
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(summarize(dir.file("ok.trace")).calls_of("step"), 400u);
  EXPECT_EQ(s.command("check"), before);
  EXPECT_EQ(s.quit(), 0);
  ::unsetenv("CALLSCOPE_CTL_DIR");
}

TEST(AttachErrors, AProcessTracedAlreadyIsRefused) {
  TempDir dir;
  const std::string ctl_dir = dir.file("ctl");
  ::mkdir(ctl_dir.c_str(), 0700);
  ::setenv("CALLSCOPE_CTL_DIR", ctl_dir.c_str(), 1);
  {
    // Under record.
    TracedProgram rec({fixture(variants().front(), "attach_server")}, ctl_dir);
    const pid_t pid = rec.wait_for_socket();
    ASSERT_GT(pid, 0);
    RunResult r = callscope({"attach", std::to_string(pid), "-o", dir.file("r.trace")});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("runs under callscope record already"), std::string::npos) << r.err;
    // And detach is not for it.
    RunResult d = callscope({"detach", std::to_string(pid)});
    EXPECT_NE(d.exit_code, 0);
    EXPECT_NE(d.err.find("not attached"), std::string::npos) << d.err;
    EXPECT_NE(rec.command("run 2").find("ready pid="), std::string::npos);  // its first line
    EXPECT_EQ(rec.command("run 2"), "ran 2");
    EXPECT_EQ(rec.finish(), 0);
  }
  {
    // Under record, having written over its argv and environment as
    // setproctitle does (issue 30, items 4 and 7): still found as under
    // record, and told to use ctl, not detach (which would answer "not
    // attached").
    TracedProgram rec({fixture(variants().front(), "attach_server")}, ctl_dir);
    const pid_t pid = rec.wait_for_socket();
    ASSERT_GT(pid, 0);
    EXPECT_NE(rec.command("retitle").find("ready pid="), std::string::npos);  // its first line
    EXPECT_EQ(rec.command("run 1"), "retitled");
    EXPECT_EQ(read_file("/proc/" + std::to_string(pid) + "/environ").find("CALLSCOPE_DIR="), std::string::npos);
    const std::string p = std::to_string(pid);
    RunResult r = callscope({"attach", p, "-o", dir.file("t.trace")});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "callscope attach: process " + p + " runs under callscope record already: 'callscope ctl " + p +
                         " ...' controls it\n");
    RunResult d = callscope({"detach", p});
    EXPECT_EQ(d.exit_code, 1);
    EXPECT_EQ(d.err, "callscope detach: process " + p + " is not attached: it runs under callscope record, whose "
                     "recording ends with the program (or at Ctrl-C of record); 'callscope ctl " + p +
                     " stop' stops its tracing meanwhile\n");
    EXPECT_EQ(rec.command("run 2"), "ran 1");
    EXPECT_EQ(rec.finish(), 0);
    EXPECT_FALSE(std::filesystem::exists(dir.file("t.trace")));
  }
  // Attached: a second attach meanwhile.
  Server s(fixture(variants().front(), "attach_server"));
  auto first = attach_in_background(s.pid(), {"-o", dir.file("a.trace")}, ctl_dir);
  RunResult second = callscope({"attach", std::to_string(s.pid()), "-o", dir.file("b.trace")});
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("traced by callscope already"), std::string::npos) << second.err;
  EXPECT_EQ(callscope({"detach", std::to_string(s.pid())}).exit_code, 0);
  EXPECT_EQ(first.get().exit_code, 0);
  EXPECT_EQ(s.command("run 2"), "ran 2\n");
  ::unsetenv("CALLSCOPE_CTL_DIR");
}

}  // namespace
}  // namespace callscope::e2e
