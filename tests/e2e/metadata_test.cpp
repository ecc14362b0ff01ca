// What a trace says about the program around the calls, for every compiler
// variant: how each process ended (also by _exit, also when the recorder was
// killed), the names threads were given while they ran, modules loaded again
// at the same address, and calls still open when the program ended.
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

using format::ExitHow;

// Files in `dir` whose names end with `suffix`.
std::vector<std::string> files_ending(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        out.push_back(name);
    }
    ::closedir(d);
  }
  return out;
}

bool wait_until(const std::function<bool()>& ready, int ms = 10000) {
  for (int i = 0; i < ms / 10; ++i) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ready();
}

class MetadataTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ctl_dir_ = dir_.file("ctl");
    ASSERT_EQ(::mkdir(ctl_dir_.c_str(), 0700), 0);
  }
  // `callscope ARGS...` with CALLSCOPE_CTL_DIR set to our own directory.
  RunResult callscope_env(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv{"env", "CALLSCOPE_CTL_DIR=" + ctl_dir_};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(CALLSCOPE_EXE);
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }
  TempDir dir_;
  std::string ctl_dir_;
};

// ---- how processes end ---------------------------------------------------------

TEST_P(MetadataTest, ForkChildrenEndingWithUnderscoreExitRecordTheirExit) {
  const std::string trace = dir_.file("exits.trace");
  RunResult r = callscope_env({"record", "-o", trace, "--", fixture(GetParam(), "exits"), "fork", "3"});
  ASSERT_EQ(r.exit_code, 4) << r.err;
  TraceSummary s = summarize(trace);
  ASSERT_TRUE(s.reader);
  const auto& procs = s.reader->processes();
  ASSERT_EQ(procs.size(), 4u);
  EXPECT_EQ(procs[0].record.how, static_cast<uint32_t>(ExitHow::kExited));
  EXPECT_EQ(procs[0].record.code, 4);
  for (uint32_t i = 1; i < 4; ++i) {
    // The children are reaped by the program, not by record: only the runtime
    // can say how they ended (_exit for even children, _Exit for odd ones).
    EXPECT_EQ(procs[i].record.parent_index, 0);
    EXPECT_EQ(procs[i].record.how, static_cast<uint32_t>(ExitHow::kExited)) << "child " << i;
    EXPECT_EQ(procs[i].record.code, static_cast<int32_t>(9 + i)) << "child " << i;
    EXPECT_GT(procs[i].record.end_tick, procs[i].record.start_tick);
  }
  EXPECT_EQ(s.calls_of("work"), 3u);
  EXPECT_TRUE(files_ending(ctl_dir_, ".sock").empty()) << "control sockets left behind";
}

TEST_P(MetadataTest, UnderscoreExitWithoutRecorder) {
  const std::string script = "cd '" + dir_.path() + "' && CALLSCOPE_CTL_DIR='" + ctl_dir_ + "' LD_PRELOAD='" +
                             plain_path(RUNTIME_PATH) + "' '" + fixture(GetParam(), "exits") + "' fork 2; '" +
                             CALLSCOPE_EXE + "' finish -o exits.trace callscope-*.raw";
  RunResult r = run({"/bin/sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceSummary s = summarize(dir_.file("exits.trace"));
  ASSERT_TRUE(s.reader);
  const auto& info = s.reader->info().record;
  EXPECT_EQ(info.main_how, static_cast<uint32_t>(ExitHow::kExited));
  EXPECT_EQ(info.main_code, 4);
  ASSERT_EQ(s.reader->processes().size(), 3u);
  for (const auto& p : s.reader->processes()) EXPECT_EQ(p.record.how, static_cast<uint32_t>(ExitHow::kExited));
  EXPECT_EQ(s.reader->processes()[2].record.code, 11);
  EXPECT_TRUE(files_ending(ctl_dir_, ".sock").empty()) << "control sockets left behind";
}

// `record` is killed while the program runs on; `finish` makes the trace
// from what is left, and knows how the program ended.
TEST_P(MetadataTest, FinishAfterTheRecorderWasKilled) {
  // The program outlives record: as a subreaper we get it, and can wait.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const std::string raw = dir_.file("raw"), go = dir_.file("go"), trace = dir_.file("k.trace");
  ASSERT_EQ(::mkdir(raw.c_str(), 0700), 0);
  const pid_t rec = ::fork();
  ASSERT_GE(rec, 0);
  if (rec == 0) {
    const std::string out = dir_.file("out");
    std::FILE* f = std::freopen(out.c_str(), "w", stdout);
    std::FILE* g = std::freopen(out.c_str(), "a", stderr);
    (void)f;
    (void)g;
    ::setenv("CALLSCOPE_CTL_DIR", ctl_dir_.c_str(), 1);
    ::execl(CALLSCOPE_EXE, CALLSCOPE_EXE, "record", "--raw-dir", raw.c_str(), "-o", trace.c_str(), "--",
            fixture(GetParam(), "exits").c_str(), "wait", go.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // The session directory, and the program's process directory in it.
  std::string session;
  pid_t program = 0;
  ASSERT_TRUE(wait_until([&] {
    for (const std::string& d : files_ending(raw, "")) {
      if (d == "." || d == "..") continue;
      for (const std::string& p : files_ending(raw + "/" + d, ".0")) {
        session = raw + "/" + d;
        program = static_cast<pid_t>(std::atol(p.c_str()));
      }
    }
    return program > 0;
  }));
  ASSERT_EQ(::kill(rec, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(rec, &status, 0), rec);
  ASSERT_TRUE(WIFSIGNALED(status));
  const std::string touch = "touch '" + go + "'";
  ASSERT_EQ(std::system(touch.c_str()), 0);
  ASSERT_EQ(::waitpid(program, &status, 0), program);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 3);

  RunResult r = callscope({"finish", "-o", trace, session});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceSummary s = summarize(trace);
  ASSERT_TRUE(s.reader);
  const auto& info = s.reader->info().record;
  EXPECT_EQ(info.main_pid, static_cast<uint32_t>(program));
  EXPECT_EQ(info.main_how, static_cast<uint32_t>(ExitHow::kExited));
  EXPECT_EQ(info.main_code, 3);
  ASSERT_EQ(s.reader->processes().size(), 1u);
  EXPECT_EQ(s.reader->processes()[0].record.how, static_cast<uint32_t>(ExitHow::kExited));
  EXPECT_EQ(s.reader->processes()[0].record.code, 3);
  RunResult i = callscope({"info", trace});
  EXPECT_NE(i.out.find("ended:      exit code 3"), std::string::npos) << i.out;
  EXPECT_GE(s.calls_of("tick"), 1u);
}

// ---- thread names -----------------------------------------------------------------

// The workers are named after they started (by themselves, by main through
// their handle, by prctl) and never exit: the process ends with exit() while
// they run, or is killed. Each keeps the name it had last, and the names it
// had before, with when.
TEST_P(MetadataTest, ThreadsNamedWhileTheyRunKeepTheirLastName) {
  for (const std::string how : {"exit", "kill"}) {
    SCOPED_TRACE(how);
    const std::string trace = dir_.file("names-" + how + ".trace");
    RunResult r = callscope_env({"record", "-o", trace, "--", fixture(GetParam(), "names"), how});
    if (how == "kill")
      EXPECT_EQ(r.term_signal, SIGKILL) << r.err;
    else
      EXPECT_EQ(r.exit_code, 0) << r.err;
    TraceSummary s = summarize(trace);
    ASSERT_TRUE(s.reader);
    const auto& threads = s.reader->threads();
    ASSERT_EQ(threads.size(), 4u);
    std::map<std::string, const format::ThreadInfo*> by_name;
    for (const auto& t : threads) by_name[t.name] = &t;
    ASSERT_EQ(by_name.size(), 4u) << threads[0].name << " " << threads[1].name << " " << threads[2].name << " "
                                  << threads[3].name;
    ASSERT_TRUE(by_name.count("names"));
    EXPECT_TRUE(by_name["names"]->names.empty());
    EXPECT_EQ(by_name["names"]->record.flags & format::kThreadMain, format::kThreadMain);
    // Names, with the tick each was given: the start name at the thread's start.
    auto history = [&](const std::string& last) {
      std::vector<std::string> out;
      const format::ThreadInfo* t = by_name[last];
      if (!t) return out;
      uint64_t tick = 0;
      for (const auto& n : t->names) {
        out.push_back(n.name);
        EXPECT_GE(n.tick, tick) << n.name;
        EXPECT_LE(n.tick, t->record.end_tick) << n.name;
        tick = n.tick;
      }
      if (!t->names.empty()) {
        EXPECT_EQ(t->names.front().tick, t->record.start_tick);
      }
      EXPECT_EQ(t->record.flags & format::kThreadExitedCleanly, 0u) << "the worker never exits";
      return out;
    };
    EXPECT_EQ(history("bio_close_file"), (std::vector<std::string>{"names", "bio_first", "bio_close_file"}));
    EXPECT_EQ(history("bio_aof"), (std::vector<std::string>{"names", "bio_aof"}));
    EXPECT_EQ(history("bio_lazy_free"), (std::vector<std::string>{"names", "bio_lazy_free"}));

    RunResult rep = callscope({"report", trace, "-t", "bio*", "--threads"});
    ASSERT_EQ(rep.exit_code, 0) << rep.err;
    for (const char* n : {"bio_close_file", "bio_aof", "bio_lazy_free"})
      EXPECT_NE(rep.out.find(n), std::string::npos) << rep.out;
    // An earlier name finds the thread too.
    rep = callscope({"report", trace, "-t", "bio_first", "--format", "csv"});
    EXPECT_EQ(rep.exit_code, 0) << rep.err;
    RunResult info = callscope({"info", trace});
    EXPECT_NE(info.out.find("thread names"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("bio_first"), std::string::npos) << info.out;
  }
}

// ---- modules loaded again at the same address --------------------------------------

// libplugin.so is loaded, called and closed twice, then libplugin2.so (other
// names, the same size) where it was, then libplugin.so once more: each load
// is a module of its own, and every call gets the name of the library loaded
// at its time.
TEST_P(MetadataTest, LibrariesLoadedAgainAtTheSameAddressKeepTheirNames) {
  const std::string lib = fixture(GetParam(), "libplugin.so"), lib2 = fixture(GetParam(), "libplugin2.so");
  const std::string trace = dir_.file("reload.trace");
  RunResult r = callscope_env({"record", "-o", trace, "--", fixture(GetParam(), "reload"), lib + ":plugin_entry",
                               lib + ":plugin_entry", lib2 + ":other_entry", lib + ":plugin_entry"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceSummary s = summarize(trace);
  ASSERT_TRUE(s.reader);
  // Four loads, each unloaded, one after the other at one address.
  std::vector<format::ModuleRecord> loads;
  for (const auto& m : s.reader->modules())
    if (m.path == lib || m.path == lib2) loads.push_back(m.record);
  ASSERT_EQ(loads.size(), 4u);
  for (size_t i = 0; i < loads.size(); ++i) {
    EXPECT_TRUE(loads[i].flags & format::kModuleUnloaded) << i;
    EXPECT_LE(loads[i].load_tick, loads[i].unload_tick) << i;
    if (i) {
      EXPECT_EQ(loads[i].low, loads[0].low) << "load " << i << " is elsewhere: nothing is tested\n" << r.out;
      EXPECT_LE(loads[i - 1].unload_tick, loads[i].load_tick) << i;
    }
  }
  EXPECT_EQ(s.calls_of("plugin_entry"), 9u);
  EXPECT_EQ(s.calls_of("plugin_square"), 90u);
  EXPECT_EQ(s.calls_of("other_entry"), 3u);
  EXPECT_EQ(s.calls_of("other_cube"), 30u);
  EXPECT_EQ(s.calls_of("between"), 4u);
  for (const auto& [name, n] : s.calls) EXPECT_EQ(name.find('+'), std::string::npos) << name << " has no name";

  RunResult rep = callscope({"report", trace, "--format", "csv"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_EQ(rep.err.find("overlaps"), std::string::npos) << rep.err;
  auto rows = csv_by(rep.out, "function");
  EXPECT_EQ(num(rows["plugin_square"], "calls"), 90u) << rep.out;
  EXPECT_EQ(rows["plugin_square"]["module"], "libplugin.so");
  EXPECT_EQ(num(rows["other_cube"], "calls"), 30u) << rep.out;
  EXPECT_EQ(rows["other_cube"]["module"], "libplugin2.so");
  EXPECT_EQ(num(rows["other_entry"], "calls"), 3u) << rep.out;
  // The chronological views name each call by its time too.
  RunResult rp = callscope({"replay", trace, "-F", "other_entry"});
  ASSERT_EQ(rp.exit_code, 0) << rp.err;
  EXPECT_NE(rp.out.find("other_cube"), std::string::npos) << rp.out;
  EXPECT_EQ(rp.out.find("plugin_square"), std::string::npos) << rp.out;
  RunResult st = callscope({"dump", "--stats", trace});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("30  other_cube"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("90  plugin_square"), std::string::npos) << st.out;
}

// A library whose first segment is linked at 0x400000, not 0 (a prelinked
// library, or one linked at a fixed base): the runtime records its load
// bias, and the symbolizer had taken that for its start, so both of its
// functions were named as one wrong symbol (_fini). Each has its name and
// its count.
TEST_P(MetadataTest, ALibraryLinkedAtAFixedAddressHasItsNames) {
  const std::string lib = fixture(GetParam(), "libplugin_high.so");
  const std::string trace = dir_.file("high.trace");
  RunResult r = callscope_env({"record", "-o", trace, "--", fixture(GetParam(), "dlopen_main"), lib});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceSummary s = summarize(trace);
  ASSERT_TRUE(s.reader);
  bool high = false;
  for (const auto& m : s.reader->modules())
    if (m.path == lib) high = m.record.low != m.record.load_bias;
  EXPECT_TRUE(high) << "the library's start is its load bias: nothing is tested";
  RunResult rep = callscope({"report", trace, "--format", "csv"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  auto rows = csv_by(rep.out, "function");
  EXPECT_EQ(num(rows["plugin_entry"], "calls"), 3u) << rep.out;
  EXPECT_EQ(num(rows["plugin_square"], "calls"), 30u) << rep.out;
  EXPECT_EQ(rows["plugin_square"]["module"], "libplugin_high.so") << rep.out;
}

// ---- calls open at the end ----------------------------------------------------------

// A call in progress when its thread or process ended, or when a snapshot
// was taken, counts as one call with its time so far, flagged open: the same
// in a recording and in profile mode.
TEST_P(MetadataTest, CallsOpenAtTheEndCountOnceInBothModes) {
  for (const std::string mode : {"record", "profile"}) {
    SCOPED_TRACE(mode);
    const std::string trace = dir_.file("open-" + mode + ".trace");
    RunResult r = callscope_env({"record", "--mode=" + mode, "-o", trace, "--", fixture(GetParam(), "open_calls")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(mode == "profile" ? "dump=1" : "dump=0"), std::string::npos) << r.out;
    RunResult rep = callscope({"report", trace, "--format", "csv"});
    ASSERT_EQ(rep.exit_code, 0) << rep.err;
    auto rows = csv_by(rep.out, "function");
    struct Want {
      const char* fn;
      uint64_t calls, open;
    };
    for (const Want& w : {Want{"main", 1, 1}, Want{"finish", 1, 1}, Want{"blocked", 1, 1}, Want{"snapshot_inside", 1, 0},
                          Want{"leaf", 3, 0}}) {
      EXPECT_EQ(num(rows[w.fn], "calls"), w.calls) << w.fn << "\n" << rep.out;
      EXPECT_EQ(num(rows[w.fn], "open_calls"), w.open) << w.fn << "\n" << rep.out;
      EXPECT_GT(num(rows[w.fn], "total_ns"), 0u) << w.fn;
    }
    // The open calls' time so far is their time, in the extremes too.
    EXPECT_EQ(num(rows["blocked"], "max_ns"), num(rows["blocked"], "total_ns"));
    RunResult text = callscope({"report", trace});
    EXPECT_NE(text.out.find("1*"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("* includes calls whose end was not recorded"), std::string::npos) << text.out;
    if (mode != "profile") continue;
    // The snapshot taken inside snapshot_inside(): it, main and blocked were open.
    rep = callscope({"report", trace, "--dump", "1", "--format", "csv"});
    ASSERT_EQ(rep.exit_code, 0) << rep.err;
    rows = csv_by(rep.out, "function");
    for (const Want& w : {Want{"main", 1, 1}, Want{"snapshot_inside", 1, 1}, Want{"blocked", 1, 1}, Want{"leaf", 2, 0}}) {
      EXPECT_EQ(num(rows[w.fn], "calls"), w.calls) << w.fn << "\n" << rep.out;
      EXPECT_EQ(num(rows[w.fn], "open_calls"), w.open) << w.fn << "\n" << rep.out;
    }
    EXPECT_EQ(rows.count("finish"), 0u) << rep.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Compilers, MetadataTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
