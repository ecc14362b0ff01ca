// What `record` and `finish` guarantee about the files they write and read
// (issue 10, "Files and signals"):
//  - the output path is claimed for the whole run: a file written there
//    meanwhile is never replaced, and a second writer is refused at once;
//  - a signal while record writes the trace finishes it; a second one stops
//    record, which says how to finish, and `finish` then loses nothing;
//  - `finish` refuses a session still being written;
//  - a raw thread file cut short is reported and marked lost in the trace.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "e2e_support.h"
#include "format/raw_session.h"

namespace callscope::e2e {
namespace {

const std::string kExe = CALLSCOPE_EXE;

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The entries of `dir` whose name starts with `prefix`, as full paths.
std::vector<std::string> entries(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) out.push_back(dir + "/" + e->d_name);
    ::closedir(d);
  }
  return out;
}

// ---- 1. the output path is claimed for the whole run -----------------------

TEST(OutputClaim, AFileWrittenAtTheOutputDuringTheRunIsNotReplaced) {
  TempDir dir;
  const std::string out = dir.file("x.trace");
  const std::string script = "'" + kExe + "' record -o '" + out + "' -- /bin/sleep 1 2>'" + dir.file("err") +
                             "' & rec=$!; n=0; while [ ! -e '" + out + "' ] && [ $n -lt 500 ]; do sleep 0.01; n=$((n+1)); done; "
                             "echo precious > '" + out + "'; wait $rec; echo rc=$?";
  RunResult r = run({"/bin/sh", "-c", script});
  const std::string err = slurp(dir.file("err"));
  EXPECT_NE(r.out.find("rc=1"), std::string::npos) << r.out << err;
  EXPECT_EQ(slurp(out), "precious\n") << err;
  EXPECT_NE(err.find("'" + out + "' was changed by another program"), std::string::npos) << err;
  // The trace is complete, where the message says.
  const auto kept = entries(dir.path(), "x.trace.tmp.");
  ASSERT_EQ(kept.size(), 1u) << err;
  EXPECT_NE(err.find("the complete trace is in '" + kept[0] + "'"), std::string::npos) << err;
  RunResult info = callscope({"info", kept[0]});
  EXPECT_EQ(info.exit_code, 0) << info.err;
}

TEST(OutputClaim, ASecondWriterOfTheSameOutputIsRefusedAtOnce) {
  TempDir dir;
  const std::string out = dir.file("x.trace");
  const std::string prog = fixture(one_variant(), "steady");
  const std::string second = "'" + kExe + "' record -o '" + out + "' -- '" + prog + "' 1 10 2>&1; echo rc2=$?; '" + kExe +
                             "' record --force -o '" + out + "' -- '" + prog + "' 1 10 2>&1; echo rc3=$?; '" + kExe +
                             "' finish --force -o '" + out + "' callscope-*.raw 2>&1; echo rc4=$?; ";
  // A raw session for finish to make a trace of: the runtime without record
  // (CALLSCOPE_FOLLOW=all: /bin/true has nothing to record).
  const std::string script = "cd '" + dir.path() + "' && CALLSCOPE_FOLLOW=all LD_PRELOAD='" + plain_path(RUNTIME_PATH) +
                             "' /bin/true 2>/dev/null; '" + kExe + "' record -o '" + out +
                             "' -- /bin/sleep 1 2>/dev/null & rec=$!; n=0; "
                             "while [ ! -e '" + out + "' ] && [ $n -lt 500 ]; do sleep 0.01; n=$((n+1)); done; " +
                             second + "wait $rec; echo rc1=$?";
  RunResult r = run({"/bin/sh", "-c", script});
  const std::string busy = "'" + out + "' is being written by another callscope";
  for (const char* rc : {"rc2=1", "rc3=1", "rc4=1"}) EXPECT_NE(r.out.find(rc), std::string::npos) << rc << "\n" << r.out;
  size_t n = 0;
  for (size_t at = r.out.find(busy); at != std::string::npos; at = r.out.find(busy, at + 1)) ++n;
  EXPECT_EQ(n, 3u) << r.out;
  EXPECT_NE(r.out.find("rc1=0"), std::string::npos) << r.out;
  RunResult info = callscope({"info", out});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_TRUE(entries(dir.path(), "x.trace.tmp.").empty());
}

TEST(OutputClaim, NotARegularFileIsRefusedEvenWithForce) {
  TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  RunResult r = callscope({"record", "--force", "-o", dir.file("fifo"), "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("is not a regular file"), std::string::npos) << r.err;
  r = callscope({"record", "--force", "-o", dir.path(), "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
}

// ---- 2. signals while the trace is written ---------------------------------

// Runs `record` on steady (slow to write: level 19) with its raw session in
// `raw`; once the program has ended and record writes the trace (its second
// calibration record is in recorder.meta), sends `signals`. Returns record's
// wait status; its stderr goes to `err`.
int record_and_signal(const std::string& raw, const std::string& out, const std::string& err,
                      const std::vector<int>& signals, uint64_t calls) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 2);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    const std::string prog = fixture(one_variant(), "steady"), n = std::to_string(calls);
    ::execl(CALLSCOPE_EXE, CALLSCOPE_EXE, "record", "--level", "19", "--raw-dir", raw.c_str(), "-o", out.c_str(), "--",
            prog.c_str(), "2", n.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  bool sent = false;
  for (int i = 0; i < 60000 && !sent; ++i) {
    for (const std::string& session : entries(raw, "callscope-")) {
      auto s = format::read_raw_session(session);
      if (s && !s->child_statuses.empty() && s->calibrations.size() >= 2) {
        for (size_t k = 0; k < signals.size(); ++k) {
          // A signal sent while the same one is pending is merged with it:
          // the next once record has answered this one.
          if (k > 0)
            for (int j = 0; j < 10000 && slurp(err).find("while writing the trace") == std::string::npos; ++j)
              ::usleep(200);
          ::kill(pid, signals[k]);
        }
        sent = true;
      }
    }
    if (!sent) ::usleep(1000);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(sent) << "record never began writing the trace";
  return status;
}

class WritingSignal : public ::testing::TestWithParam<int> {};

// One signal: the trace is finished all the same, record says so, and exits
// as the program did; nothing temporary is left.
TEST_P(WritingSignal, OneSignalWhileWritingFinishesTheTrace) {
  TempDir dir;
  const std::string raw = dir.file("raw"), out = dir.file("x.trace");
  ASSERT_EQ(::mkdir(raw.c_str(), 0700), 0);
  const int status = record_and_signal(raw, out, dir.file("err"), {GetParam()}, 1000000);
  const std::string err = slurp(dir.file("err"));
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << "\n" << err;
  EXPECT_EQ(WEXITSTATUS(status), 0) << err;
  EXPECT_NE(err.find("SIG" + std::string(sigabbrev_np(GetParam())) + " while writing the trace"), std::string::npos)
      << err;
  TraceSummary s = summarize(out);
  EXPECT_EQ(s.calls_of("work"), 2000000u);
  for (const ThreadSummary& t : s.threads) EXPECT_TRUE(t.balanced());
  EXPECT_TRUE(entries(dir.path(), "x.trace.tmp.").empty());
  EXPECT_TRUE(entries(raw, "callscope-").empty());
}

INSTANTIATE_TEST_SUITE_P(Signals, WritingSignal, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const auto& param_info) { return std::string(sigabbrev_np(param_info.param)); });

// Two: record stops at once, by that signal, after saying what to run; the
// raw session and the unfinished trace are there, and `finish` as told
// makes the whole trace: no call lost, none twice.
TEST(WritingSignals, ASecondSignalStopsAndSaysHowToFinishWithNothingLost) {
  TempDir dir;
  const std::string raw = dir.file("raw"), out = dir.file("x.trace");
  ASSERT_EQ(::mkdir(raw.c_str(), 0700), 0);
  const int status = record_and_signal(raw, out, dir.file("err"), {SIGTERM, SIGTERM}, 1000000);
  const std::string err = slurp(dir.file("err"));
  ASSERT_TRUE(WIFSIGNALED(status)) << err;
  EXPECT_EQ(WTERMSIG(status), SIGTERM) << err;
  const auto sessions = entries(raw, "callscope-");
  ASSERT_EQ(sessions.size(), 1u) << err;
  const std::string told = "run 'callscope finish " + sessions[0] + " -o " + out + "'";
  EXPECT_NE(err.find(told), std::string::npos) << err;
  const auto unfinished = entries(dir.path(), "x.trace.tmp.");
  ASSERT_EQ(unfinished.size(), 1u) << err;
  EXPECT_NE(err.find(unfinished[0]), std::string::npos) << err;
  EXPECT_FALSE(exists(out)) << "the empty file that claimed the output stays behind";

  RunResult f = callscope({"finish", sessions[0], "-o", out});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  TraceSummary s = summarize(out);
  EXPECT_EQ(s.calls_of("work"), 2000000u);
  for (const ThreadSummary& t : s.threads) {
    EXPECT_TRUE(t.balanced());
    EXPECT_EQ(t.lost, 0u);
  }
  EXPECT_TRUE(entries(dir.path(), "x.trace.tmp.").empty());
}

// ---- the output's disk fills while the program runs ------------------------

// The trace's file system (a 256 KiB tmpfs, in a mount namespace of its own)
// fills while the program runs: the stream stops, the program's threads drop
// their events from then on. record says so -- how many were dropped, where
// what was recorded before is kept, and the finish that makes a trace of it
// (it once said "nothing is lost") -- and that finish's trace agrees: the
// same count lost, and every event the program made recorded or counted
// lost, exactly.
TEST(DiskFull, RecordSaysWhatWasDroppedAndFinishAgrees) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a small tmpfs needs a mount namespace (private_tmp_shell)";
  const std::string script = R"SH(
    mkdir /tmp/small /tmp/raw && mount -t tmpfs -o size=256k tmpfs /tmp/small || { echo SKIP: no tmpfs; exit 0; }
    "$EXE" record --raw-dir /tmp/raw -o /tmp/small/x.trace -- "$PROG" 2 2000000 > /dev/null 2> /tmp/rec.err
    echo "record exit $?"
    "$EXE" finish -o /tmp/out.trace /tmp/raw/callscope-x.trace.* > /dev/null 2> /tmp/fin.err
    echo "finish exit $?"
    echo "== record"; cat /tmp/rec.err
    echo "== finish"; cat /tmp/fin.err
    echo "== stats"; "$EXE" dump --stats /tmp/out.trace
  )SH";
  RunResult r = run(private_tmp_shell(script, {std::string("EXE=") + CALLSCOPE_EXE, "PROG=" + fixture(one_variant(), "steady")}));
  if (r.out.find("SKIP") != std::string::npos) GTEST_SKIP() << r.out;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("record exit 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("finish exit 0\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nothing is lost"), std::string::npos) << r.out;
  const std::string said = " events were dropped by the program's threads after the trace could not be written";
  const size_t at = r.out.find(said);
  ASSERT_NE(at, std::string::npos) << r.out;
  const size_t from = r.out.rfind(' ', at - 1) + 1;
  const uint64_t dropped = std::stoull(r.out.substr(from, at - from));
  EXPECT_GT(dropped, 0u);
  EXPECT_NE(r.out.find("'callscope finish /tmp/raw/callscope-x.trace."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning: " + std::to_string(dropped) + " events were lost"), std::string::npos) << r.out;
  // dump --stats: "#  ENTRIES  EXITS  UNWOUND  TRUNCATED  STRAY  LOST ..." per thread. Each thread made
  // 2,000,000 calls of work and one of loop (the first also main): entries
  // and exits recorded plus the events counted lost are all of them.
  std::istringstream stats(r.out.substr(r.out.find("== stats\n") + 9));
  std::string line;
  std::getline(stats, line);  // the header
  uint64_t lost_sum = 0;
  for (int t = 0; t < 2 && std::getline(stats, line); ++t) {
    std::istringstream row(line);
    uint64_t index, entries, exits, unwound, truncated, stray, lost;
    ASSERT_TRUE(static_cast<bool>(row >> index >> entries >> exits >> unwound >> truncated >> stray >> lost)) << line;
    const uint64_t made = 2 * (2000000 + 1 + (index == 0 ? 1 : 0));
    EXPECT_EQ(entries + exits + lost, made) << "thread " << index << ": " << line;
    lost_sum += lost;
  }
  EXPECT_EQ(lost_sum, dropped);
}

// ---- 3. finish on a session still being written ----------------------------

// record is killed while the program runs: finish refuses the session while
// the program writes it, --force makes a trace of what is there and keeps
// the session, and once the program has ended finish makes the whole trace
// -- into the empty file the dead record claimed, without --force.
TEST(FinishLive, ASessionStillWrittenIsRefusedUnlessForced) {
  TempDir dir;
  const std::string prog = dir.file("stdl" + std::to_string(::getpid() % 100000));
  ASSERT_EQ(run({"cp", fixture(one_variant(), "steady"), prog}).exit_code, 0);
  const std::string raw = dir.file("raw"), out = dir.file("x.trace");
  ASSERT_EQ(::mkdir(raw.c_str(), 0700), 0);
  const std::string name = prog.substr(prog.rfind('/') + 1);
  const std::string script =
      "'" + kExe + "' record --raw-dir '" + raw + "' -o '" + out + "' -- '" + prog + "' 1 4000000000 >/dev/null 2>&1 & rec=$!; " +
      "n=0; while [ $(cat '" + out + "'.tmp.* 2>/dev/null | wc -c) -lt 100000 ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done; "
      "kill -9 $rec; wait $rec 2>/dev/null; cp '" + out + "'.tmp.* '" + dir.file("streamed.copy") + "'; "
      "s=$(ls -d '" + raw + "'/callscope-*); "
      "'" + kExe + "' finish -o '" + dir.file("early.trace") + "' $s; echo rc1=$?; [ -d $s ] && echo kept1; "
      "'" + kExe + "' finish --force -o '" + dir.file("forced.trace") + "' $s; echo rc2=$?; [ -d $s ] && echo kept2; "
      "ls '" + out + "'.tmp.* >/dev/null 2>&1 && echo tmp2; "
      "pkill -x '" + name + "'; while pgrep -x '" + name + "' >/dev/null; do sleep 0.05; done; "
      "'" + kExe + "' finish -o '" + out + "' $s; echo rc3=$?; [ -d $s ] || echo gone3";
  RunResult r = run({"/bin/sh", "-c", script});
  EXPECT_NE(r.out.find("rc1=1"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("kept1"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("is still being written: process "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(" + name.substr(0, 15) + ") has it open"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("use --force"), std::string::npos) << r.err;
  EXPECT_FALSE(exists(dir.file("early.trace")));
  EXPECT_NE(r.out.find("rc2=0"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("kept2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tmp2"), std::string::npos) << "--force must not remove the dead recorder's trace\n" << r.out;
  EXPECT_NE(r.err.find("the session is kept"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("rc3=0"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("gone3"), std::string::npos) << r.out;
  const TraceSummary forced = summarize(dir.file("forced.trace"));
  const TraceSummary whole = summarize(out);
  ASSERT_EQ(whole.threads.size(), 1u);
  EXPECT_TRUE(whole.threads[0].balanced());
  // The forced trace holds what the dead recorder had streamed (counted in
  // the copy taken right after the kill), not only the rings' last
  // segments; the count is the test, not a rate of bytes per call.
  const uint64_t streamed = entries_streamed(dir.file("streamed.copy"));
  EXPECT_GT(streamed, 0u);
  EXPECT_GE(forced.threads.empty() ? 0 : forced.threads[0].entries, streamed);
  EXPECT_GE(whole.calls_of("work"), forced.calls_of("work"));
}

// ---- 4. a raw thread file cut short ----------------------------------------

// The runtime without record (grow mode); the thread file is cut in half
// before finish: finish says so, marks the loss, and report warns.
TEST(FinishDamage, AThreadFileCutShortIsReportedAndMarkedLost) {
  TempDir dir;
  const std::string script = "cd '" + dir.path() + "' && LD_PRELOAD='" + plain_path(RUNTIME_PATH) + "' '" +
                             fixture(one_variant(), "steady") + "' 1 3000000 >/dev/null 2>&1; "
                             "f=$(ls callscope-*.raw/*/t*.ev); truncate -s $(( $(stat -c %s $f) / 2 )) $f; "
                             "'" + kExe + "' finish -o t.trace callscope-*.raw";
  RunResult r = run({"/bin/sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("bytes of events at the end (the file was cut short)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("events were lost"), std::string::npos) << r.err;
  TraceSummary s = summarize(dir.file("t.trace"));
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_GT(s.threads[0].lost, 0u);
  EXPECT_EQ(s.threads[0].stray, 0u);
  EXPECT_TRUE(s.threads[0].balanced());
  EXPECT_LT(s.calls_of("work"), 3000000u);
  RunResult rep = callscope({"report", dir.file("t.trace")});
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.err.find("lost"), std::string::npos) << rep.err;
}

}  // namespace
}  // namespace callscope::e2e
