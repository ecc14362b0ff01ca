// Stop and start (callscope_stop/callscope_start, --start-off, `callscope
// ctl PID stop|start`) in record and profile mode, for every compiler
// variant, on the `stopstart` fixture: main -> outer -> works -> work, work
// called N times before the stop, M times while stopped and K times after,
// with a nap of known length while stopped; a second thread waits in
// idle_wait from before the stop until after the start without making a
// call. Frames open across the stop stay in the tree as one call each, and
// the stopped time counts nowhere: not in outer's, main's or idle_wait's time.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

constexpr uint64_t kN = 1000, kM = 500, kK = 700;
constexpr uint64_t kNapMs = 300;
constexpr uint64_t kNapNs = kNapMs * 1'000'000;
// A function whose time counted the nap would show at least kNapNs; one
// that leaves it out shows its own work, which a loaded machine can stretch
// to a good part of the nap: the line between them is close to the nap.
constexpr uint64_t kCountedNap = kNapNs * 9 / 10;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Rows of a CSV text, each a map from header to value.
std::vector<std::map<std::string, std::string>> csv_rows(const std::string& text) {
  std::vector<std::map<std::string, std::string>> out;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(x);
    if (header.empty()) {
      header = f;
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < f.size() && i < header.size(); ++i) row[header[i]] = f[i];
    out.push_back(row);
  }
  return out;
}

// The call path of every node of `report --tree --format csv` ("main/outer"),
// with its calls summed over threads.
std::map<std::string, uint64_t> tree_calls(const std::string& csv) {
  const auto rows = csv_rows(csv);
  std::map<std::string, const std::map<std::string, std::string>*> by_node;  // "thread:node"
  for (const auto& r : rows) by_node[r.at("thread") + ":" + r.at("node")] = &r;
  std::map<std::string, uint64_t> out;
  for (const auto& r : rows) {
    std::string path = r.at("function");
    const auto* p = &r;
    while (!p->at("parent").empty()) {
      auto it = by_node.find(r.at("thread") + ":" + p->at("parent"));
      if (it == by_node.end()) break;
      p = it->second;
      path = p->at("function") + "/" + path;
    }
    out[path] += num(r, "calls");
  }
  return out;
}

class StopStartTest : public ::testing::TestWithParam<std::string> {
 protected:
  RunResult record(const std::vector<std::string>& env, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {CALLSCOPE_EXE, "record", "-f", "-o", trace_, "--", fixture(GetParam(), "stopstart")});
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }
  std::map<std::string, std::map<std::string, std::string>> flat(std::vector<std::string> extra = {}) {
    return flat_report(trace_, extra);
  }
  std::map<std::string, uint64_t> tree(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"report", trace_, "--tree", "--format", "csv"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = callscope(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return tree_calls(r.out);
  }
  // Every thread of a full trace: balanced, `pauses` pauses and resumes, and
  // no frame closed or opened by the gap (every frame open at the stop was
  // still open at the start) unless `inherited_ok` (--start-off: the frames
  // opened before the start are inherited).
  void expect_one_clean_pause(bool inherited_ok, uint64_t pauses = 1) {
    TraceSummary s = summarize(trace_);
    ASSERT_EQ(s.threads.size(), 2u);
    for (size_t i = 0; i < s.threads.size(); ++i) {
      const ThreadSummary& t = s.threads[i];
      EXPECT_TRUE(t.balanced()) << "thread " << i;
      EXPECT_EQ(t.pauses, pauses) << "thread " << i;
      EXPECT_EQ(t.resumes, pauses) << "thread " << i;
      EXPECT_EQ(t.stray, 0u) << "thread " << i;
      EXPECT_EQ(t.unwound, 0u) << "thread " << i;
      if (!inherited_ok) {
        EXPECT_EQ(t.truncated, 0u) << "thread " << i;
        EXPECT_EQ(t.inherited, 0u) << "thread " << i;
      }
    }
  }
  TempDir dir_;
  const std::string trace_ = dir_.file("s.trace");
};

// The figures every mode must give after `stopstart api`: the frames open
// across the stop are one call each, work is N+K calls under them, and the
// nap counts nowhere.
void expect_api_figures(const std::map<std::string, std::map<std::string, std::string>>& rows,
                        const std::map<std::string, uint64_t>& paths, const std::string& how) {
  EXPECT_EQ(num(rows.at("main"), "calls"), 1u) << how;
  EXPECT_EQ(num(rows.at("outer"), "calls"), 1u) << how;
  EXPECT_EQ(num(rows.at("work"), "calls"), kN + kK) << how;
  EXPECT_EQ(num(rows.at("idle_wait"), "calls"), 1u) << how;
  EXPECT_EQ(rows.count("nap"), 0u) << how << ": called only while stopped";
  // The nap is inside outer and main, and inside idle_wait's wait: none of
  // them may count it.
  for (const char* f : {"main", "outer", "idle_wait"}) {
    EXPECT_LT(num(rows.at(f), "total_ns"), kCountedNap) << how << ": " << f;
    EXPECT_LE(num(rows.at(f), "self_ns"), num(rows.at(f), "total_ns")) << how << ": " << f;
  }
  auto at = [&](const std::string& path) {
    auto it = paths.find(path);
    return it == paths.end() ? 0 : it->second;
  };
  EXPECT_EQ(at("main"), 1u) << how;
  EXPECT_EQ(at("main/outer"), 1u) << how;
  EXPECT_EQ(at("main/outer/works"), 2u) << how;
  EXPECT_EQ(at("main/outer/works/work"), kN + kK) << how;
  EXPECT_EQ(at("work"), 0u) << how << ": no call may lose its callers";
  EXPECT_EQ(at("works"), 0u) << how;
  EXPECT_EQ(at("idle_thread/idle_wait"), 1u) << how;
}

std::vector<std::string> api_args() {
  return {"api", std::to_string(kN), std::to_string(kM), std::to_string(kK), std::to_string(kNapMs)};
}

TEST_P(StopStartTest, ApiStopStartInRecordModeKeepsTheFramesAndCountsNoStoppedTime) {
  RunResult r = record({}, api_args());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_one_clean_pause(false);
  TraceSummary s = summarize(trace_);
  EXPECT_EQ(s.calls_of("work"), kN + kK);
  EXPECT_EQ(s.calls_of("main"), 1u);
  EXPECT_EQ(s.calls_of("outer"), 1u);
  EXPECT_EQ(s.calls_of("nap"), 0u);
  expect_api_figures(flat(), tree(), "record");
  // The pre-stop subtree is no longer below any threshold.
  RunResult t = callscope({"report", trace_, "--tree", "--threshold", "1"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_TRUE(contains(t.out, "outer")) << t.out;
}

// Recording with a filter runs through the engine, which writes the events.
TEST_P(StopStartTest, ApiStopStartInFilteredRecording) {
  RunResult r = record({"CALLSCOPE_EXCLUDE=idle_thread"}, api_args());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_one_clean_pause(false);
  auto rows = flat();
  auto paths = tree();
  EXPECT_EQ(num(rows["main"], "calls"), 1u);
  EXPECT_EQ(num(rows["outer"], "calls"), 1u);
  EXPECT_EQ(num(rows["work"], "calls"), kN + kK);
  EXPECT_EQ(paths["main/outer/works/work"], kN + kK);
  EXPECT_EQ(paths["idle_wait"], 1u);
  for (const char* f : {"main", "outer", "idle_wait"}) EXPECT_LT(num(rows[f], "total_ns"), kCountedNap) << f;
}

TEST_P(StopStartTest, ApiStopStartInProfileMode) {
  RunResult r = record({"CALLSCOPE_MODE=profile"}, api_args());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(contains(r.out, "dump 1\n")) << r.out;
  expect_api_figures(flat(), tree(), "profile");
  // The snapshot taken while stopped, at the end of the nap: outer and main
  // are open and count their time up to the stop; idle_wait's thread has
  // not seen the stop (it made no call since), and counts no more.
  auto d1 = flat({"--dump", "1"});
  EXPECT_EQ(num(d1["work"], "calls"), kN);
  // A call in progress at a snapshot counts as one call, flagged open --
  // except one its thread has stopped: its time up to the stop is banked in
  // its node, not yet as a call (docs/profile.md names this exception).
  EXPECT_EQ(num(d1["idle_wait"], "calls"), 1u);
  EXPECT_EQ(num(d1["idle_wait"], "open_calls"), 1u);
  for (const char* f : {"main", "outer"}) EXPECT_EQ(num(d1[f], "calls"), 0u) << f << " is stopped";
  for (const char* f : {"main", "outer", "idle_wait"}) {
    EXPECT_LT(num(d1[f], "total_ns"), kCountedNap) << f;
  }
  EXPECT_GT(num(d1["outer"], "total_ns"), 0u);
  auto p1 = tree({"--dump", "1"});
  EXPECT_EQ(p1["main/outer/works/work"], kN);
}

TEST_P(StopStartTest, StartOffThenStartFromTheProgram) {
  const std::vector<std::string> args = {"startoff", std::to_string(kN), std::to_string(kK), std::to_string(kNapMs)};
  for (const std::string mode : {"record", "profile"}) {
    RunResult r = record({"CALLSCOPE_START_OFF=1", "CALLSCOPE_MODE=" + mode}, args);
    ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    if (mode == "record") {
      expect_one_clean_pause(true);
      TraceSummary s = summarize(trace_);
      EXPECT_EQ(s.calls_of("work"), kK);
      EXPECT_EQ(s.calls_of("nap"), 0u);
    }
    // main and outer began while stopped: each is a call from the start on,
    // inherited, in either mode (AVG never exceeds MAX); the calls made
    // after it are under them.
    auto rows = flat();
    auto paths = tree();
    EXPECT_EQ(num(rows["work"], "calls"), kK) << mode;
    EXPECT_EQ(num(rows["works"], "calls"), 1u) << mode;
    EXPECT_EQ(num(rows["works"], "inherited_calls"), 0u) << mode;
    for (const char* f : {"main", "outer"}) {
      EXPECT_EQ(num(rows[f], "calls"), 1u) << mode << ": " << f;
      EXPECT_EQ(num(rows[f], "inherited_calls"), 1u) << mode << ": " << f;
      EXPECT_LE(num(rows[f], "avg_ns"), num(rows[f], "max_ns")) << mode << ": " << f;
    }
    EXPECT_EQ(paths["main/outer/works/work"], kK) << mode;
    EXPECT_EQ(paths["main/outer/works"], 1u) << mode;
    EXPECT_EQ(paths["work"], 0u) << mode;
    EXPECT_EQ(rows.count("nap"), 0u) << mode;
    for (const char* f : {"main", "outer", "idle_wait"}) {
      EXPECT_GT(num(rows[f], "total_ns"), 0u) << mode << ": " << f;
      EXPECT_LT(num(rows[f], "total_ns"), kCountedNap) << mode << ": " << f;
    }
  }
}

// The value of `name=` in the fixture's "clock ..." line (0 if absent).
uint64_t clock_reading(const std::string& out, const std::string& name) {
  const size_t line = out.find("clock ");
  if (line == std::string::npos) return 0;
  const size_t at = out.find(" " + name + "=", line);
  if (at == std::string::npos || at > out.find('\n', line)) return 0;
  return std::stoull(out.substr(at + name.size() + 2));
}

uint64_t steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// The second thread waits in idle_wait from before the stop until the
// process exits: it never acts on the stop (nor on the start), yet its call
// leaves the stopped time out -- the reader applies the stops and starts it
// slept through. With "off" the program ends stopped: idle_wait's time is
// up to the stop.
TEST_P(StopStartTest, ThreadAsleepFromTheStopToTheEndCountsNoStoppedTime) {
  for (const std::string on : {"on", "off"}) {
    for (const std::string mode : {"record", "profile"}) {
      const std::string how = mode + ", start " + on;
      RunResult r = record({"CALLSCOPE_MODE=" + mode}, {"asleep", std::to_string(kN), std::to_string(kNapMs), on});
      // The program's exit, and with it the end of idle_wait's open call,
      // lies before this (steady_clock is CLOCK_MONOTONIC, as the fixture's).
      const uint64_t ended_ns = steady_ns();
      ASSERT_EQ(r.exit_code, 0) << how << ": " << r.err;
      // The fixture's own readings: before it created the thread, after the
      // stop, before the start (none with "off").
      const uint64_t thread_ns = clock_reading(r.out, "thread"), stopped_ns = clock_reading(r.out, "stopped"),
                     started_ns = clock_reading(r.out, "started");
      ASSERT_GT(thread_ns, 0u) << r.out;
      ASSERT_GE(stopped_ns, thread_ns) << r.out;
      ASSERT_EQ(started_ns == 0, on == "off") << r.out;
      if (on == "on") {
        ASSERT_GE(started_ns - stopped_ns, kNapNs) << r.out;  // the nap lies between
      }
      ASSERT_GE(ended_ns, std::max(stopped_ns, started_ns)) << r.out;
      if (mode == "record") {
        TraceSummary s = summarize(trace_);
        ASSERT_EQ(s.threads.size(), 2u) << how;
        for (const ThreadSummary& t : s.threads) {
          EXPECT_EQ(t.pauses, 1u) << how;
          EXPECT_EQ(t.resumes, on == "on" ? 1u : 0u) << how;
          EXPECT_EQ(t.stray, 0u) << how;
        }
      }
      auto rows = flat();
      EXPECT_EQ(num(rows["work"], "calls"), kN) << how;
      EXPECT_EQ(num(rows["idle_wait"], "calls"), 1u) << how;
      EXPECT_EQ(num(rows["idle_wait"], "open_calls"), 1u) << how;
      EXPECT_GT(num(rows["idle_wait"], "total_ns"), 0u) << how;
      // idle_wait began after thread_ns; what it may count is its time up to
      // the stop, which came before stopped_ns, and with "on" the time from
      // the start, which came after started_ns, to the end. However slow the
      // machine, a right count stays within that; one that took in the
      // stopped time (the nap, from stopped_ns to started_ns, and with "off"
      // up to the end) exceeds it by about the nap.
      const uint64_t may_count = (stopped_ns - thread_ns) + (on == "on" ? ended_ns - started_ns : 0);
      EXPECT_LE(num(rows["idle_wait"], "total_ns"), may_count) << how << ": " << r.out;
    }
  }
}

TEST_P(StopStartTest, CtlStopStartFromOutside) {
  for (const std::string mode : {"record", "profile"}) {
    TempDir ctl_dir;
    const auto t0 = std::chrono::steady_clock::now();  // the program's frames all lie after it
    // The fixture in ctl mode: it takes commands on stdin.
    TracedProgram program({fixture(GetParam(), "stopstart"), "ctl"}, ctl_dir.path(), {"CALLSCOPE_MODE=" + mode},
                          trace_);
    const pid_t program_pid = program.wait_for_socket();
    ASSERT_GT(program_pid, 0) << mode;
    const std::string pid = std::to_string(program_pid);
    auto ctl = [&](const std::string& command) {
      RunResult r = run({"env", "CALLSCOPE_CTL_DIR=" + ctl_dir.path(), CALLSCOPE_EXE, "ctl", pid, command});
      EXPECT_EQ(r.exit_code, 0) << mode << " " << command << ": " << r.err;
      EXPECT_EQ(r.out, "ok\n") << mode << " " << command;
    };
    EXPECT_EQ(program.command("work " + std::to_string(kN)), "done " + std::to_string(kN));
    ctl("stop");
    EXPECT_EQ(program.command("work " + std::to_string(kM)), "done " + std::to_string(kM));
    EXPECT_EQ(program.command("nap " + std::to_string(kNapMs)), "slept " + std::to_string(kNapMs));
    ctl("start");
    EXPECT_EQ(program.command("work " + std::to_string(kK)), "done " + std::to_string(kK));
    // A second stop and start, with nothing in between: the waiting thread
    // has slept through both when it wakes.
    ctl("stop");
    EXPECT_EQ(program.command("nap " + std::to_string(kNapMs)), "slept " + std::to_string(kNapMs));
    ctl("start");
    program.command("quit");
    ASSERT_EQ(program.finish(), 0) << mode;
    const uint64_t wall_ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());

    if (mode == "record") expect_one_clean_pause(false, 2);
    auto rows = flat();
    auto paths = tree();
    EXPECT_EQ(num(rows["main"], "calls"), 1u) << mode;
    EXPECT_EQ(num(rows["outer"], "calls"), 1u) << mode;
    EXPECT_EQ(num(rows["work"], "calls"), kN + kK) << mode;
    EXPECT_EQ(num(rows["idle_wait"], "calls"), 1u) << mode;
    EXPECT_EQ(paths["main/outer/works/work"], kN + kK) << mode;
    EXPECT_EQ(paths["idle_thread/idle_wait"], 1u) << mode;
    EXPECT_EQ(paths["work"], 0u) << mode;
    // Everything from a stop to its start (a nap among it) counts nowhere:
    // the frames that went on through both ran for less than the whole run
    // less the naps.
    for (const char* f : {"main", "outer", "idle_wait"}) {
      EXPECT_GT(num(rows[f], "total_ns"), 0u) << mode << ": " << f;
      EXPECT_LE(num(rows[f], "total_ns") + 2 * kNapNs, wall_ns) << mode << ": " << f;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Compilers, StopStartTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
