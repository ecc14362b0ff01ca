// Bad input gets one clear message and a non-zero exit, never a crash:
// wrong arguments, a missing program, an output that exists or cannot be
// written, an uninstrumented program, files that are not traces, and traces
// that are truncated or damaged.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string any_fixture(const std::string& name) {
  const auto vs = variants();
  return vs.empty() ? "" : fixture(vs.front(), name);
}

TEST(CliErrors, NoCommandShowsUsage) {
  RunResult r = callscope({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "record")) << r.err;
}

TEST(CliErrors, UnknownCommand) {
  RunResult r = callscope({"recrod", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "recrod")) << r.err;
}

TEST(CliErrors, UnknownOptionOfRecord) {
  RunResult r = callscope({"record", "--bogus", "-o", "x.trace", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--bogus")) << r.err;
}

TEST(CliErrors, RecordWithoutProgram) {
  RunResult r = callscope({"record", "-o", "/tmp/never-written.trace"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "no program given")) << r.err;
}

TEST(CliErrors, RecordMissingProgram) {
  TempDir dir;
  RunResult r = callscope({"record", "-o", dir.file("x.trace"), "--", "no-such-program-xyz"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "program 'no-such-program-xyz' not found in PATH")) << r.err;
  RunResult r2 = callscope({"record", "-o", dir.file("x.trace"), "--", dir.file("nothing-here")});
  EXPECT_TRUE(contains(r2.err, "not found")) << r2.err;
  EXPECT_EQ(::access(dir.file("x.trace").c_str(), F_OK), -1) << "no trace for a program that never ran";
}

TEST(CliErrors, RecordRefusesToOverwriteWithoutForce) {
  TempDir dir;
  const std::string out = dir.file("x.trace");
  std::ofstream(out) << "precious";
  RunResult r = callscope({"record", "-o", out, "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "exists; use --force")) << r.err;
  std::ifstream in(out);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
  RunResult forced = callscope({"record", "--force", "-o", out, "--", any_fixture("recursion"), "10"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(callscope({"info", out}).exit_code, 0);
}

TEST(CliErrors, RecordToUnwritablePlace) {
  RunResult r = callscope({"record", "-o", "/no/such/dir/x.trace", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "cannot write '/no/such/dir/x.trace'")) << r.err;
}

TEST(CliErrors, UninstrumentedProgramRunsAndGivesAnEmptyTrace) {
  TempDir dir;
  const std::string out = dir.file("plain.trace");
  RunResult r = callscope({"record", "-o", out, "--", plain_fixture(), "a", "b"});
  EXPECT_EQ(r.exit_code, 42) << "the program's exit code passes through";
  EXPECT_TRUE(contains(r.out, "plain argc=3")) << r.out;
  EXPECT_TRUE(contains(r.err, "has no -finstrument-functions hooks")) << r.err;
  EXPECT_TRUE(contains(r.err, "no instrumented function was called")) << r.err;
  TraceSummary s = summarize(out);
  ASSERT_TRUE(s.reader);
  EXPECT_TRUE(s.reader->complete());
  EXPECT_TRUE(s.calls.empty());
  EXPECT_EQ(s.reader->processes().size(), 1u);
  EXPECT_TRUE(s.reader->info().record.flags & format::kInfoNotInstrumented);
  RunResult info = callscope({"info", out});
  EXPECT_EQ(info.exit_code, 0);
  EXPECT_TRUE(contains(info.out, "exit code 42")) << info.out;
  EXPECT_TRUE(contains(info.out, "no instrumented function ran")) << info.out;
}

TEST(CliErrors, StdinPassesThrough) {
  TempDir dir;
  RunResult r = run({CALLSCOPE_EXE, "record", "-o", dir.file("cat.trace"), "--", "/bin/cat"}, "hello through\n");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "hello through\n");
}

TEST(CliErrors, InfoOnFilesThatAreNotTraces) {
  TempDir dir;
  RunResult missing = callscope({"info", dir.file("absent.trace")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.err, "No such file")) << missing.err;
  std::ofstream(dir.file("text.trace")) << "this is not a trace, but it is long enough to hold a header........";
  RunResult text = callscope({"info", dir.file("text.trace")});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_TRUE(contains(text.err, "is not a callscope trace")) << text.err;
  std::ofstream(dir.file("empty.trace")).flush();
  RunResult empty = callscope({"info", dir.file("empty.trace")});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_TRUE(contains(empty.err, "not a callscope trace")) << empty.err;
  RunResult d = callscope({"info", dir.path()});
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_TRUE(contains(d.err, "is a directory")) << d.err;
}

// FIFOs, devices and directories are refused by every command that reads a
// file, at once: a FIFO without a writer blocked them forever, one with data
// was "0 bytes".
TEST(CliErrors, FifosAndDevicesAreRefused) {
  TempDir dir;
  const std::string fifo = dir.file("x.trace");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::vector<std::string>> commands = {
      {"info", fifo},         {"dump", fifo},        {"dump", "--stats", fifo},
      {"report", fifo},       {"replay", fifo},      {"stack", fifo},
      {"config", "--config", fifo}};
  for (const auto& args : commands) {
    RunResult r = callscope(args);  // before the fix: never returned
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "'" + fifo + "' is a FIFO (named pipe), not a regular file")) << args[0] << ": " << r.err;
  }
  // A writer and data waiting in the pipe change nothing.
  const int w = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(w, 0);
  ASSERT_EQ(::write(w, "CALLSCP\x1a", 8), 8);
  RunResult r = callscope({"info", fifo});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "is a FIFO")) << r.err;
  EXPECT_FALSE(contains(r.out + r.err, "0 bytes")) << r.out << r.err;
  ::close(w);
  RunResult dev = callscope({"report", "/dev/zero"});
  EXPECT_EQ(dev.exit_code, 1);
  EXPECT_TRUE(contains(dev.err, "'/dev/zero' is a character device, not a regular file")) << dev.err;
}

// A damaged file header: one clear message naming the field, exit 1.
TEST(CliErrors, DamagedTraceHeaders) {
  TempDir dir;
  const std::string good = dir.file("good.trace");
  ASSERT_EQ(callscope({"record", "-o", good, "--", any_fixture("recursion"), "50"}).exit_code, 0);
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 64u);
  const std::string bad = dir.file("bad.trace");
  auto write_with = [&](size_t at, const void* v, size_t n) {
    std::string b = bytes;
    std::memcpy(b.data() + at, v, n);
    std::ofstream(bad, std::ios::binary | std::ios::trunc).write(b.data(), static_cast<std::streamsize>(b.size()));
  };
  const double inf = 1.0 / 0.0;
  write_with(24, &inf, sizeof inf);  // ticks_per_ns
  for (const char* cmd : {"info", "report", "replay", "dump"}) {
    RunResult r = callscope({cmd, bad});
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.out;
    EXPECT_TRUE(contains(r.err, "bad.trace': damaged trace header (the first 64 bytes): ")) << cmd << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "ticks_per_ns is inf")) << r.err;
    EXPECT_TRUE(r.out.empty()) << cmd << ": " << r.out;
  }
  const uint32_t clock = 9;
  write_with(16, &clock, sizeof clock);
  RunResult r = callscope({"info", bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "unknown clock kind 9")) << r.err;
  // One flipped byte anywhere in the header.
  for (size_t at : {20, 33, 40, 50, 58, 61}) {
    std::string b = bytes;
    b[at] = static_cast<char>(b[at] ^ 0x04);
    std::ofstream(bad, std::ios::binary | std::ios::trunc).write(b.data(), static_cast<std::streamsize>(b.size()));
    RunResult f = callscope({"info", bad});
    EXPECT_EQ(f.exit_code, 1) << "byte " << at;
    EXPECT_TRUE(contains(f.err, "damaged trace header")) << "byte " << at << ": " << f.err;
  }
}

// Names from the program (its thread names, its command line, the name of
// its binary) and lines of an --edges file never reach the terminal raw: a
// thread named "\e]0;PWN\a\e[2J" retitled and cleared the terminal of
// whoever ran `info`.
TEST(CliErrors, TerminalEscapesInNamesAreShownEscaped) {
  TempDir dir;
  const std::string evil = "x\x1b]0;PWN\x07\x1b[2J";  // 12 bytes: the main thread's whole name
  const std::string shown = "x\\x1b]0;PWN\\x07\\x1b[2J";
  const std::string link = dir.file(evil);
  ASSERT_EQ(::symlink(any_fixture("recursion").c_str(), link.c_str()), 0);
  const std::string trace = dir.file("t.trace");
  RunResult rec = callscope({"record", "-o", trace, "--", link, "20", "arg\x1b[31m\x9b"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  auto raw_control = [](const std::string& s) {
    for (unsigned char c : s)
      if ((c < 0x20 && c != '\n') || c == 0x7f || c == 0x9b) return true;
    return false;
  };
  // export: folded stacks are text (the thread's frame is named after it);
  // the JSON formats escape.
  const std::vector<std::vector<std::string>> views = {
      {"info", trace},   {"report", trace},          {"report", "--tree", trace}, {"report", "--threads", trace},
      {"replay", trace}, {"dump", "--stats", trace}, {"dump", "-n", "5", trace},
      {"export", "-f", "folded", "-o", "-", trace},   {"export", "-f", "folded", "--by", "calls", trace},
      {"export", "-f", "chrome", trace},              {"export", "-f", "speedscope", trace}};
  for (const auto& v : views) {
    RunResult r = callscope(v);
    EXPECT_EQ(r.exit_code, 0) << v[0] << ": " << r.err;
    EXPECT_FALSE(raw_control(r.out)) << v[0] << " " << v[1] << " printed a control character:\n" << r.out;
    EXPECT_FALSE(raw_control(r.err)) << v[0] << ": " << r.err;
  }
  RunResult info = callscope({"info", trace});
  EXPECT_TRUE(contains(info.out, "program:    " + dir.path() + "/" + shown + " 20 arg\\x1b[31m\\x9b")) << info.out;
  EXPECT_TRUE(contains(info.out, " " + shown + " ")) << "the thread name\n" << info.out;
  RunResult replay = callscope({"replay", trace});
  EXPECT_TRUE(contains(replay.out, "\"" + shown + "\"")) << replay.out;
  // In folded stacks, as in the text views (';' is a frame separator there:
  // ':' instead).
  RunResult folded = callscope({"export", "-f", "folded", "--by", "calls", trace});
  EXPECT_TRUE(contains(folded.out, "[thread 0: x\\x1b]0:PWN\\x07\\x1b[2J];main;recurse 1\n")) << folded.out;

  // JSON stays valid JSON, with the name as JSON escapes it; CSV is quoted.
  RunResult json = callscope({"report", "--threads", "--format", "json", trace});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_TRUE(contains(json.out, "x\\u001b]0;PWN\\u0007\\u001b[2J")) << json.out;
  RunResult ijson = callscope({"info", "--format", "json", trace});
  EXPECT_EQ(ijson.exit_code, 0) << "a byte that is not UTF-8 made the JSON writer throw\n" << ijson.err;
  EXPECT_TRUE(contains(ijson.out, "arg\\u001b[31m\xef\xbf\xbd")) << ijson.out;  // U+FFFD for the lone 0x9b

  // stack: the module is named after the binary; an --edges line quoted in an error.
  RunResult st = callscope({"stack", link, "recurse"});
  EXPECT_EQ(st.exit_code, 0) << st.err;
  EXPECT_FALSE(raw_control(st.out)) << st.out;
  EXPECT_TRUE(contains(st.out, shown + "!recurse")) << st.out;
  std::ofstream(dir.file("edges.txt")) << "main -> recurse\n\x1b]0;PWN\x07\x1b[2J\n";
  RunResult edges = callscope({"stack", "--worst", link, "--edges", dir.file("edges.txt")});
  EXPECT_EQ(edges.exit_code, 1);
  EXPECT_TRUE(contains(edges.err, "edges.txt:2: expected 'caller -> callee', got '\\x1b]0;PWN\\x07\\x1b[2J'")) << edges.err;
  EXPECT_FALSE(raw_control(edges.err)) << edges.err;
}

// A trace cut short or damaged: info and dump say what is wrong and where,
// show what is intact, and exit 1.
TEST(CliErrors, TruncatedAndDamagedTraces) {
  TempDir dir;
  const std::string good = dir.file("good.trace");
  ASSERT_EQ(callscope({"record", "-o", good, "--", any_fixture("threads"), "4", "300000"}).exit_code, 0);
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 2000u);

  // The last blocks (metadata, end) lost: the events are still there.
  const std::string cut = dir.file("cut.trace");
  std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 100));
  RunResult info = callscope({"info", cut});
  EXPECT_EQ(info.exit_code, 1);
  EXPECT_TRUE(contains(info.out, "INCOMPLETE")) << info.out;
  EXPECT_TRUE(contains(info.out, "truncated")) << info.out;
  RunResult dump = callscope({"dump", "--stats", cut});
  EXPECT_EQ(dump.exit_code, 1);
  EXPECT_TRUE(contains(dump.out, "leaf")) << "events before the cut are still read";

  // Damage in the middle of the file (the first block is a tiny one, the
  // main thread's): named by offset, reading resumes at the next block.
  std::string damaged = bytes;
  for (size_t i = 64 + 40; i < 64 + 40 + 200 && i < damaged.size(); ++i) damaged[i] = static_cast<char>(~damaged[i]);
  const std::string bad = dir.file("bad.trace");
  std::ofstream(bad, std::ios::binary).write(damaged.data(), static_cast<std::streamsize>(damaged.size()));
  RunResult binfo = callscope({"info", bad});
  EXPECT_EQ(binfo.exit_code, 1);
  EXPECT_TRUE(contains(binfo.out, "problems:\n  ")) << binfo.out;
  EXPECT_TRUE(contains(binfo.out, "block 0 at offset 64")) << binfo.out;
  RunResult bdump = callscope({"dump", "--stats", bad});
  EXPECT_EQ(bdump.exit_code, 1);
  EXPECT_TRUE(contains(bdump.err, "damaged trace: block 0 at offset 64")) << bdump.err;
  EXPECT_TRUE(contains(bdump.out, "leaf")) << bdump.out;
}

TEST(CliErrors, FinishOnSomethingThatIsNotASession) {
  TempDir dir;
  RunResult r = callscope({"finish", dir.path(), "-o", dir.file("x.trace")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "holds no callscope session")) << r.err;
}

// The runtime linked or preloaded without `record`: events land in
// callscope-<pid>.raw in the current directory, and `finish` makes a trace.
TEST(CliErrors, FinishMakesATraceFromARunWithoutRecord) {
  TempDir dir;
  const std::string script = "cd '" + dir.path() + "' && LD_PRELOAD='" + plain_path(RUNTIME_PATH) + "' '" +
                             any_fixture("recursion") + "' 100 && '" + CALLSCOPE_EXE + "' finish callscope-*.raw";
  RunResult r = run({"/bin/sh", "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "run 'callscope finish")) << r.err;
  EXPECT_TRUE(contains(r.err, "102 calls")) << r.err;
}

}  // namespace
}  // namespace callscope::e2e
