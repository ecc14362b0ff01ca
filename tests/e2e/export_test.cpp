// `callscope export` on real programs, for every compiler variant: each of
// the five formats is read back by tests/e2e/export_reader.py -- an
// independent reader (protoc --decode against our schemas, Python's json),
// sharing no code with the writers -- which checks the format's rules and
// prints the calls per call path. Every format must give the exact counts of
// tests/fixtures/record/views.c, and all of them the same.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

using Paths = std::map<std::string, uint64_t>;

const char* const kFormats[] = {"perfetto", "chrome", "speedscope", "folded", "pprof"};

// views.c's call paths, per thread # (0 main, 1 and 2 the workers).
Paths views_paths() {
  Paths p = {{"0;main", 1}, {"0;main;parse", 3}, {"0;main;parse;token", 30}, {"0;main;report", 1}};
  for (const char* t : {"1", "2"}) {
    p[std::string(t) + ";worker"] = 1;
    p[std::string(t) + ";worker;work"] = 100;
    p[std::string(t) + ";worker;work;leaf"] = 200;
  }
  return p;
}

// The reader's "PATH CALLS" lines; fails the test if the reader refuses the
// file. Perfetto's slices must have source locations: the fixtures are
// built with -g (clang's too, without .debug_aranges).
Paths read_export(const std::string& format, const std::string& file) {
  RunResult r = run({EXPORT_PYTHON, EXPORT_READER, format, file, EXPORT_PROTO_DIR, "--located"});
  EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err;
  Paths paths;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    paths[line.substr(0, sp)] += std::stoull(line.substr(sp + 1));
  }
  return paths;
}

class ExportTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    trace_ = dir_.file("views.trace");
    RunResult r = callscope({"record", "-o", trace_, "--", fixture(GetParam(), "views")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // `export -f FORMAT -o FILE TRACE EXTRA...` read back; folded weighed by
  // calls, so that its numbers are counts.
  Paths exported(const std::string& format, const std::vector<std::string>& extra = {},
                 const std::string& trace = "") {
    const std::string out = dir_.file("out." + format);
    std::vector<std::string> args = {"export", "-f", format, "-o", out, trace.empty() ? trace_ : trace};
    if (format == "folded") args.insert(args.end(), {"--by", "calls"});
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = callscope(args);
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err;
    return read_export(format, out);
  }
  TempDir dir_;
  std::string trace_;
};

TEST_P(ExportTest, EveryFormatHasTheExactCallPaths) {
  for (const char* f : kFormats) EXPECT_EQ(exported(f), views_paths()) << f;
}

TEST_P(ExportTest, PerfettoUncompressedIsTheSame) {
  EXPECT_EQ(exported("perfetto", {"--no-compress"}), views_paths());
  // Compressed packets make the file smaller than the raw one.
  const std::string raw = read_file(dir_.file("out.perfetto"));
  exported("perfetto");
  EXPECT_LT(read_file(dir_.file("out.perfetto")).size(), raw.size());
}

TEST_P(ExportTest, FunctionFilterKeepsThePathsThroughIt) {
  const Paths want = {{"0;main", 1}, {"0;main;parse", 3}, {"0;main;parse;token", 30}};
  // The timelines show the ancestors of each call kept; the aggregated
  // formats weigh only the paths through it.
  for (const char* f : {"perfetto", "chrome", "speedscope"}) EXPECT_EQ(exported(f, {"-F", "token"}), want) << f;
  for (const char* f : {"folded", "pprof"})
    EXPECT_EQ(exported(f, {"-F", "token"}), (Paths{{"0;main;parse;token", 30}})) << f;
  for (const char* f : {"perfetto", "folded"})
    EXPECT_EQ(exported(f, {"-F", "leaf", "-t", "1"}), (f == std::string("folded") ? Paths{{"1;worker;work;leaf", 200}}
                                                                                   : Paths{{"1;worker", 1},
                                                                                           {"1;worker;work", 100},
                                                                                           {"1;worker;work;leaf", 200}}))
        << f;
}

TEST_P(ExportTest, WindowKeepsTheCallsInIt) {
  // The whole run as a window is the whole trace.
  for (const char* f : kFormats) EXPECT_EQ(exported(f, {"--from", "0", "--to", "3600s"}), views_paths()) << f;
  // From the second parse's start to the third's end (times from the
  // Chrome export, in microseconds since the trace start): two parses, the
  // main thread open around them, nothing of the workers.
  RunResult chrome = callscope({"export", "-f", "chrome", trace_, "-F", "parse"});
  ASSERT_EQ(chrome.exit_code, 0) << chrome.err;
  std::vector<std::pair<std::string, std::string>> parses;  // (begin, end) as printed
  for (size_t pos = 0; (pos = chrome.out.find("\"name\":\"parse\"", pos)) != std::string::npos; ++pos) {
    const size_t ph = chrome.out.rfind("\"ph\":\"", pos) + 6, ts = chrome.out.find("\"ts\":", pos) + 5;
    const std::string at = chrome.out.substr(ts, chrome.out.find(',', ts) - ts);
    if (chrome.out[ph] == 'B') parses.emplace_back(at, "");
    else if (chrome.out[ph] == 'E' && !parses.empty()) parses.back().second = at;
  }
  ASSERT_EQ(parses.size(), 3u) << chrome.out;
  // From halfway between the first parse's end and the second's start (a
  // time printed to the ns, converted back to ticks, may fall a tick after
  // the entry it was taken from), to the third's end.
  const double from = (std::stod(parses[0].second) + std::stod(parses[1].first)) / 2;
  char from_arg[64];
  std::snprintf(from_arg, sizeof from_arg, "%.4fus", from);
  const std::string to_arg = parses[2].second + "us";
  const Paths want = {{"0;main", 1}, {"0;main;parse", 2}, {"0;main;parse;token", 20}};
  for (const char* f : {"perfetto", "chrome", "speedscope"})
    EXPECT_EQ(exported(f, {"--from", from_arg, "--to", to_arg}), want) << f << " " << from_arg << ".." << to_arg;
  // Aggregated, the window counts the calls that began in it.
  for (const char* f : {"folded", "pprof"}) {
    const Paths got = exported(f, {"--from", from_arg, "--to", to_arg});
    EXPECT_EQ(got.at("0;main;parse"), 2u) << f;
    EXPECT_EQ(got.at("0;main;parse;token"), 20u) << f;
    EXPECT_EQ(got.count("1;worker"), 0u) << f;
  }
}

TEST_P(ExportTest, MergedTreesAddTheThreads) {
  const Paths want = {{"all;main", 1},        {"all;main;parse", 3},   {"all;main;parse;token", 30},
                      {"all;main;report", 1}, {"all;worker", 2},       {"all;worker;work", 200},
                      {"all;worker;work;leaf", 400}};
  for (const char* f : {"folded", "pprof"}) EXPECT_EQ(exported(f, {"--merge"}), want) << f;
}

TEST_P(ExportTest, ProfileModeTracesExportTheirCallTrees) {
  const std::string prof = dir_.file("profile.trace");
  RunResult r = callscope({"record", "--mode", "profile", "-o", prof, "--", fixture(GetParam(), "views")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"folded", "pprof"}) EXPECT_EQ(exported(f, {}, prof), views_paths()) << f;
  // speedscope: a sampled profile, one sample per path with self time.
  const Paths sampled = exported("speedscope", {}, prof);
  EXPECT_EQ(sampled.size(), views_paths().size());
  for (const auto& [path, n] : views_paths()) EXPECT_EQ(sampled.count(path), 1u) << path;
  EXPECT_EQ(exported("folded", {"--dump", "1"}, prof), views_paths());
  // The timelines cannot show call trees: a clear refusal, no file.
  for (const char* f : {"perfetto", "chrome"}) {
    RunResult e = callscope({"export", "-f", f, "-o", dir_.file("no.out"), prof});
    EXPECT_EQ(e.exit_code, 1);
    EXPECT_NE(e.err.find("holds call trees (profile mode), not calls in time"), std::string::npos) << e.err;
    struct stat st;
    EXPECT_NE(::stat(dir_.file("no.out").c_str(), &st), 0);
  }
  RunResult w = callscope({"export", "-f", "folded", prof, "--from", "1ms"});
  EXPECT_EQ(w.exit_code, 1);
  EXPECT_NE(w.err.find("--from/--to need a trace of every call"), std::string::npos) << w.err;
}

TEST_P(ExportTest, CppNamesAndExceptionsAgreeAcrossFormats) {
  // Frames left by exceptions are closed where they were unwound; names are
  // demangled.
  const std::string trace = dir_.file("exceptions.trace");
  RunResult r = callscope({"record", "-o", trace, "--", fixture(GetParam(), "exceptions")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Paths folded = exported("folded", {}, trace);
  EXPECT_EQ(folded.at("0;main;catcher(int)"), 1000u);
  EXPECT_EQ(folded.at("0;main;catcher(int);thrower(int, int)"), 1000u);
  for (const char* f : {"perfetto", "chrome", "speedscope", "pprof"}) EXPECT_EQ(exported(f, {}, trace), folded) << f;
}

TEST_P(ExportTest, FramesLeftTogetherNestExactly) {
  // longjmp leaves 51 deep() frames at the tick runner() ends, 1,000 times
  // (tests/fixtures/record/longjmp.c). The reader takes Chrome's times as
  // doubles, as viewers do, with no tolerance: ends written as ts + dur had
  // put most callees' ends after their callers'.
  const std::string trace = dir_.file("longjmp.trace");
  RunResult r = callscope({"record", "-o", trace, "--", fixture(GetParam(), "longjmp")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Paths want = {{"0;main", 1}, {"0;main;after", 1000}};
  std::string path = "0;main;runner";
  want[path] = 1000;
  for (int depth = 1; depth <= 51; ++depth) want[path += ";deep"] = 1000;
  for (const char* f : kFormats) EXPECT_EQ(exported(f, {}, trace), want) << f;
}

TEST_P(ExportTest, PprofCarriesAllocationsOfMemoryTraces) {
  // record --memory: the allocation paths as three more sample types, the
  // numbers of `callscope memory` (tests/fixtures/record/memory.c).
  const std::string trace = dir_.file("memory.trace");
  ASSERT_EQ(callscope({"record", "--memory", "-o", trace, "--", fixture(GetParam(), "memory")}).exit_code, 0);
  const std::string out = dir_.file("memory.pb.gz");
  RunResult r = callscope({"export", "-f", "pprof", "-o", out, trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_export("pprof:alloc_objects", out),
            (Paths{{"0;main", 8}, {"0;main;make", 1}, {"1;worker;churn", 1000}, {"2;worker;churn", 1000}}));
  const Paths bytes = read_export("pprof:alloc_space", out);
  EXPECT_EQ(bytes.at("1;worker;churn"), 32000u);
  EXPECT_EQ(bytes.at("0;main;make"), 100u);
  EXPECT_EQ(read_export("pprof:inuse_space", out), (Paths{{"0;main", 4864}}));  // as `callscope memory` counts the leaks
  // The calls are still there; a trace without allocations has no such types.
  EXPECT_EQ(read_export("pprof", out).at("1;worker;churn;use"), 1000u);
  exported("pprof");
  RunResult none = run({EXPORT_PYTHON, EXPORT_READER, "pprof:alloc_space", dir_.file("out.pprof"), EXPORT_PROTO_DIR});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("no 'alloc_space' sample type"), std::string::npos) << none.err;
}

TEST_P(ExportTest, FoldedWeights) {
  for (const char* by : {"self", "total"}) {
    RunResult r = callscope({"export", "-f", "folded", "--by", by, trace_});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Lines 'a;b N', one per path, every weight a number; total weighs a
    // caller at least as much as its callee.
    std::map<std::string, uint64_t> w;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      const size_t sp = line.rfind(' ');
      ASSERT_NE(sp, std::string::npos) << line;
      w[line.substr(0, sp)] = std::stoull(line.substr(sp + 1));
    }
    EXPECT_EQ(w.count("[thread 1: views];worker;work;leaf"), 1u) << r.out;
    if (std::string(by) == "total") {
      EXPECT_GE(w["[thread 1: views];worker"], w["[thread 1: views];worker;work"]) << r.out;
    }
  }
}

TEST_P(ExportTest, BadArgumentsGetClearErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"export", trace_}, "--format is required"},
      {{"export", "-f", "svg", trace_}, "unknown --format 'svg'"},
      {{"export", "-f", "pprof", "--by", "calls", trace_}, "--by weighs the lines of --format folded"},
      {{"export", "-f", "folded", "--by", "bytes", trace_}, "unknown --by 'bytes'"},
      {{"export", "-f", "chrome", "--merge", trace_}, "--merge"},
      {{"export", "-f", "chrome", "--no-compress", trace_}, "--no-compress is for --format perfetto"},
      {{"export", "-f", "perfetto", "-o", trace_, trace_}, "is a callscope trace: not overwritten"},
      {{"export", "-f", "perfetto", "-o", dir_.path(), trace_}, "is a directory"},
      {{"export", "-f", "chrome", "--from", "2ms", "--to", "1ms", trace_}, "--from 2ms is after --to 1ms"},
      {{"export", "-f", "chrome", "--from", "soon", trace_}, "bad duration 'soon'"},
      {{"export", "-f", "folded", "--dump", "1", trace_}, "--dump"},
      {{"export", "-f", "folded", "-F", "no_such_function", trace_}, "no_such_function"},
      {{"export", "-f", "perfetto", "-F", "no_such_function", "-o", dir_.file("x.pf"), trace_}, "no_such_function"},
      {{"export", "-f", "folded", "-t", "9", trace_}, "9"},
      {{"export", "-f", "folded", dir_.file("missing.trace")}, "missing.trace"},
  };
  for (const Case& c : cases) {
    RunResult r = callscope(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args.back() << " " << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.message << "\n" << r.err;
  }
  // No partial file is left by a refused export.
  struct stat st;
  EXPECT_NE(::stat(dir_.file("x.pf").c_str(), &st), 0);
  // The trace given as -o is intact.
  EXPECT_EQ(callscope({"info", trace_}).exit_code, 0);
}

TEST_P(ExportTest, DevicesAndPipesAreWrittenInPlace) {
  // -o to a FIFO (as to /dev/null): written through, not replaced by a
  // regular file renamed over it.
  const std::string fifo = dir_.file("pipe");
  RunResult r = run({"sh", "-c",
                     "mkfifo '" + fifo + "' && { cat '" + fifo + "' > '" + dir_.file("got") + "' & } && '" +
                         CALLSCOPE_EXE + "' export -f folded --by calls -o '" + fifo + "' '" + trace_ +
                         "' && wait && test -p '" + fifo + "'"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_file(dir_.file("got")).find("[thread 1: views];worker;work;leaf 200"), std::string::npos);
  RunResult null = callscope({"export", "-f", "perfetto", "-o", "/dev/null", trace_});
  EXPECT_EQ(null.exit_code, 0) << null.err;
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is no longer a device";
}

TEST_P(ExportTest, DamagedTracesExportWhatSurvivesAndSaySo) {
  // A trace cut short (its process records and end block gone): what can be
  // read is written, the damage is reported, the exit code is 1.
  const std::string whole = read_file(trace_);
  const std::string cut = dir_.file("cut.trace");
  std::ofstream(cut, std::ios::binary) << whole.substr(0, whole.size() * 2 / 3);
  for (const char* f : kFormats) {
    const std::string out = dir_.file(std::string("cut.") + f);
    RunResult r = callscope({"export", "-f", f, "-o", out, cut});
    EXPECT_EQ(r.exit_code, 1) << f << ": " << r.err;
    EXPECT_NE(r.err.find("damaged trace"), std::string::npos) << f << ": " << r.err;
    RunResult read = run({EXPORT_PYTHON, EXPORT_READER, f, out, EXPORT_PROTO_DIR});
    EXPECT_EQ(read.exit_code, 0) << f << ": " << read.err;
  }
  const std::string junk = dir_.file("junk.trace");
  std::ofstream(junk, std::ios::binary) << std::string(300, 'x');
  RunResult r = callscope({"export", "-f", "perfetto", "-o", dir_.file("junk.pf"), junk});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is not a callscope trace"), std::string::npos) << r.err;
}

// A 100,000-deep recursion: every picture and listing stays linear in the
// depth. Folded stacks and pprof samples show the 64 outermost and 63
// innermost frames of a deeper path with "[frames elided]" between (and
// merge what then reads alike), report --tree and replay stop indenting at
// level 100 and say so, JSON trees stop nesting at 256 levels and count the
// nodes below. Unbounded, report --tree wrote 10 GB, replay 20 GB, pprof
// ran for minutes. The bounds are checked as counts: bytes, lines, frames,
// and every call still counted.
TEST(DeepRecursion, EveryViewStaysLinearInTheDepth) {
  TempDir dir;
  const std::string trace = dir.file("deep.trace");
  RunResult r = run({"sh", "-c", "ulimit -s unlimited; exec \"$0\" record -o \"$1\" -- \"$2\" 100000", CALLSCOPE_EXE,
                     trace, fixture(variants().front(), "recursion")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out, "100000\n");
  for (const char* format : {"folded", "pprof"}) {
    const std::string out = dir.file(std::string("deep.") + format);
    std::vector<std::string> args = {"export", "-f", format, "-o", out, trace};
    if (std::string(format) == "folded") args.insert(args.end(), {"--by", "calls"});
    RunResult e = callscope(args);
    ASSERT_EQ(e.exit_code, 0) << format << ": " << e.err;
    const Paths paths = read_export(format, out);
    uint64_t calls = 0;
    size_t deepest = 0;
    for (const auto& [path, n] : paths) {
      calls += n;
      deepest = std::max<size_t>(deepest, std::count(path.begin(), path.end(), ';'));
      if (std::count(path.begin(), path.end(), ';') > 127) ADD_FAILURE() << format << ": " << path.substr(0, 200);
    }
    EXPECT_EQ(calls, 100002u) << format << ": main and 100,001 calls of recurse, every one";
    EXPECT_LE(paths.size(), 130u) << format;
    EXPECT_EQ(deepest, 127u) << format;  // 128 fields: 64 frames (the thread's first), the elision, 63
    EXPECT_EQ(paths.count("0;main;recurse"), 1u) << format;
  }
  RunResult tree = callscope({"report", "--tree", trace});
  ASSERT_EQ(tree.exit_code, 0) << tree.err;
  EXPECT_LT(tree.out.size(), 64u << 20);
  EXPECT_NE(tree.out.find("levels deeper than 100 (down to 100002) are indented as level 100"), std::string::npos);
  RunResult json_tree = callscope({"report", "--tree", "--format", "json", trace});
  ASSERT_EQ(json_tree.exit_code, 0) << json_tree.err;
  EXPECT_LT(json_tree.out.size(), 16u << 20);
  EXPECT_NE(json_tree.out.find("\"elided_nodes\": 99746"), std::string::npos);  // 100,002 levels, 256 shown
  RunResult replay = callscope({"replay", trace});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_LT(replay.out.size(), 128u << 20);
  EXPECT_NE(replay.out.find("[level 100001] recurse();"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Variants, ExportTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
