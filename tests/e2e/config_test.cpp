// Settings through the real CLI: `callscope config` in a directory holding a
// callscope.toml, with CALLSCOPE_* variables and with flags, shows that
// precedence holds per key (flag > env > file); broken files and unknown keys
// fail clearly; `record` refuses a bad file before running anything and
// gives the program the resolved, normalized variables.
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// callscope run in `dir` with nothing but `env` in its environment (`env -i`):
// variables of the test's own environment cannot leak into the results.
RunResult callscope_in(const std::string& dir, const std::vector<std::string>& env,
                       const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env", "-i", "-C", dir};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(CALLSCOPE_EXE);
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

struct Row {
  std::string value, source;
};

// The rows of `callscope config`'s table: KEY  VALUE  SOURCE.
std::map<std::string, Row> table(const std::string& out) {
  std::map<std::string, Row> rows;
  std::istringstream in(out);
  std::string line;
  std::getline(in, line);  // config file: ...
  std::getline(in, line);  // header
  while (std::getline(in, line) && !line.empty()) {
    std::vector<std::string> cols;
    size_t i = 0;
    while (i < line.size()) {
      const size_t gap = line.find("  ", i);
      cols.push_back(line.substr(i, gap == std::string::npos ? std::string::npos : gap - i));
      if (gap == std::string::npos) break;
      i = line.find_first_not_of(' ', gap);
    }
    if (cols.size() == 3) rows[cols[0]] = {cols[1], cols[2]};
  }
  return rows;
}

constexpr const char* kFile =
    "# settings of the test\n"
    "mode = \"profile\"\n"
    "include = [\"f_inc\"]\n"
    "exclude = [\"f_exc1\", \"f_exc2\"]\n"
    "max_depth = 5\n"
    "min_duration = \"1us\"\n"
    "output = \"file.trace\"\n";

TEST(Config, DefaultsWithoutAnyFile) {
  TempDir dir;
  RunResult r = callscope_in(dir.path(), {}, {"config"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "config file: none")) << r.out;
  auto rows = table(r.out);
  ASSERT_EQ(rows.size(), 16u) << r.out;
  for (const auto& [key, row] : rows) EXPECT_EQ(row.source, "default") << key;
  EXPECT_EQ(rows["mode"].value, "record");
  EXPECT_EQ(rows["output"].value, "callscope.trace");
  EXPECT_EQ(rows["follow"].value, "hooked");
  EXPECT_TRUE(contains(r.out, "A traced program gets: no settings")) << r.out;
}

TEST(Config, FileInTheCurrentDirectory) {
  TempDir dir;
  write(dir.file("callscope.toml"), kFile);
  RunResult r = callscope_in(dir.path(), {}, {"config"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "config file: callscope.toml")) << r.out;
  auto rows = table(r.out);
  EXPECT_EQ(rows["mode"].value, "profile");
  EXPECT_EQ(rows["mode"].source, "file callscope.toml:2");
  EXPECT_EQ(rows["exclude"].value, "f_exc1,f_exc2");
  EXPECT_EQ(rows["max_depth"].source, "file callscope.toml:5");
  EXPECT_EQ(rows["interval"].source, "default");
  EXPECT_TRUE(contains(r.out, "CALLSCOPE_MIN_DURATION=1000ns")) << r.out;
  EXPECT_TRUE(contains(r.out, "CALLSCOPE_EXCLUDE=f_exc1,f_exc2")) << r.out;
  EXPECT_FALSE(contains(r.out, "CALLSCOPE_OUTPUT=")) << "output is callscope's, not the runtime's";
}

TEST(Config, PrecedenceHoldsPerKey) {
  TempDir dir;
  write(dir.file("callscope.toml"), kFile);
  const std::vector<std::string> env = {"CALLSCOPE_INCLUDE=e_inc1,e_inc2", "CALLSCOPE_MAX_DEPTH=6",
                                        "CALLSCOPE_EXCLUDE=e_exc", "CALLSCOPE_INTERVAL=2s"};
  RunResult r = callscope_in(dir.path(), env,
                             {"config", "--max-depth", "7", "--exclude", "g_exc1", "--exclude", "g_exc2,g_exc3",
                              "-o", "flag.trace"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = table(r.out);
  // file only
  EXPECT_EQ(rows["mode"].value, "profile");
  EXPECT_EQ(rows["mode"].source, "file callscope.toml:2");
  EXPECT_EQ(rows["min_duration"].value, "1us");
  // env over file; the env's list replaces the file's
  EXPECT_EQ(rows["include"].value, "e_inc1,e_inc2");
  EXPECT_EQ(rows["include"].source, "env CALLSCOPE_INCLUDE");
  // env only
  EXPECT_EQ(rows["interval"].value, "2s");
  EXPECT_EQ(rows["interval"].source, "env CALLSCOPE_INTERVAL");
  // flag over env over file
  EXPECT_EQ(rows["max_depth"].value, "7");
  EXPECT_EQ(rows["max_depth"].source, "flag --max-depth");
  EXPECT_EQ(rows["exclude"].value, "g_exc1,g_exc2,g_exc3");
  EXPECT_EQ(rows["exclude"].source, "flag --exclude");
  EXPECT_EQ(rows["output"].value, "flag.trace");
  EXPECT_EQ(rows["output"].source, "flag --output");
  // what the program would get, normalized
  EXPECT_TRUE(contains(r.out, "CALLSCOPE_INTERVAL=2000000000ns")) << r.out;
  EXPECT_TRUE(contains(r.out, "CALLSCOPE_EXCLUDE=g_exc1,g_exc2,g_exc3")) << r.out;
}

TEST(Config, JsonAndAFileGivenByFlag) {
  TempDir dir;
  write(dir.file("other.toml"), "start_off = true\ninterval = \"2.5ms\"\n");
  write(dir.file("callscope.toml"), "this file = is not read");
  RunResult r =
      callscope_in(dir.path(), {"CALLSCOPE_START_OFF=no"}, {"config", "--config", "other.toml", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["file"], "other.toml");
  std::map<std::string, nlohmann::json> by_key;
  for (const auto& s : j["settings"]) by_key[s["key"]] = s;
  EXPECT_EQ(by_key["interval"]["value"], 2500000);
  EXPECT_EQ(by_key["interval"]["source"], "file");
  EXPECT_EQ(by_key["interval"]["line"], 2);
  EXPECT_EQ(by_key["start_off"]["value"], false);
  EXPECT_EQ(by_key["start_off"]["source"], "env");
  EXPECT_EQ(by_key["mode"]["value"], nullptr);
  EXPECT_EQ(j["runtime_env"]["CALLSCOPE_START_OFF"], "0");
  EXPECT_EQ(j["runtime_env"]["CALLSCOPE_INTERVAL"], "2500000ns");
}

TEST(Config, MalformedFileGivesItsLineAndKey) {
  TempDir dir;
  write(dir.file("callscope.toml"), "mode = \"record\"\ninterval = 10s\n");
  RunResult r = callscope_in(dir.path(), {}, {"config"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "callscope config: callscope.toml:2:")) << r.err;
  EXPECT_TRUE(contains(r.err, "'interval'")) << r.err;
  EXPECT_TRUE(contains(r.err, "interval = \"10s\"")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(Config, UnknownKeyIsNamedWithTheValidOnes) {
  TempDir dir;
  write(dir.file("callscope.toml"), "mode = \"record\"\n\nexclud = [\"std::*\"]\n");
  RunResult r = callscope_in(dir.path(), {}, {"config"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "callscope.toml:3: unknown key 'exclud' (did you mean 'exclude'?)")) << r.err;
  EXPECT_TRUE(contains(r.err, "valid keys: mode, interval, include, exclude")) << r.err;
}

TEST(Config, WrongTypeNamesKeyAndType) {
  TempDir dir;
  write(dir.file("callscope.toml"), "max_depth = \"deep\"\n");
  RunResult r = callscope_in(dir.path(), {}, {"config"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "callscope.toml:1: 'max_depth': must be an integer >= 0, not a string")) << r.err;
}

TEST(Config, BadVariableAndBadFlag) {
  TempDir dir;
  RunResult r = callscope_in(dir.path(), {"CALLSCOPE_MIN_DURATION=5"}, {"config"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "CALLSCOPE_MIN_DURATION: bad duration '5': give a unit: ns, us, ms or s")) << r.err;
  RunResult f = callscope_in(dir.path(), {}, {"config", "--mode", "fast"});
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_TRUE(contains(f.err, "--mode")) << f.err;
  EXPECT_TRUE(contains(f.err, "unknown mode 'fast'")) << f.err;
}

TEST(Config, MisspeltVariableIsWarnedAbout) {
  TempDir dir;
  RunResult r = callscope_in(dir.path(), {"CALLSCOPE_EXCLUD=x", "CALLSCOPE_DIR=/tmp"}, {"config"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "warning: unknown variable CALLSCOPE_EXCLUD is ignored (did you mean CALLSCOPE_EXCLUDE?)"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "CALLSCOPE_DIR")) << r.err;
}

TEST(Config, MissingConfigFile) {
  TempDir dir;
  RunResult r = callscope_in(dir.path(), {}, {"config", "--config", "nowhere.toml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "cannot read config file 'nowhere.toml'")) << r.err;
}

TEST(ConfigRecord, BadFileFailsBeforeRunning) {
  TempDir dir;
  write(dir.file("bad.toml"), "output = \"x.trace\"\nmax_depth = 3.5\n");
  RunResult r = callscope_in(dir.path(), {}, {"record", "--config", "bad.toml", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "callscope record: bad.toml:2: 'max_depth': must be an integer >= 0")) << r.err;
  EXPECT_EQ(::access(dir.file("x.trace").c_str(), F_OK), -1);

  write(dir.file("bad2.toml"), "mode = \"profile\"\nmode = \"record\"\n");
  RunResult r2 = callscope_in(dir.path(), {}, {"record", "--config", "bad2.toml", "--", "/bin/true"});
  EXPECT_EQ(r2.exit_code, 1);
  EXPECT_TRUE(contains(r2.err, "callscope record: bad2.toml:2:")) << r2.err;
  EXPECT_TRUE(contains(r2.err, "'mode'")) << r2.err;
}

// The program sees the resolved settings, normalized, with flags and the file
// winning over the variables it inherited. /usr/bin/env is not instrumented:
// it runs, prints its environment, and leaves an empty trace.
TEST(ConfigRecord, ProgramGetsTheResolvedVariables) {
  TempDir dir;
  write(dir.file("callscope.toml"),
        "output = \"from-file.trace\"\ninclude = [\"a\", \"b*\"]\nmin_duration = \"2.5ms\"\n");
  RunResult r = callscope_in(dir.path(),
                             {"CALLSCOPE_RUNTIME=" RUNTIME_PATH, "CALLSCOPE_INCLUDE=user", "CALLSCOPE_MAX_DEPTH=4",
                              "CALLSCOPE_INTERVAL=1s"},
                             {"record", "--interval", "500us", "--exclude", "x,y", "--", "/usr/bin/env"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> seen;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (line.starts_with("CALLSCOPE_") && eq != std::string::npos) seen[line.substr(0, eq)] = line.substr(eq + 1);
  }
  EXPECT_EQ(seen["CALLSCOPE_INCLUDE"], "user");               // env over file
  EXPECT_EQ(seen["CALLSCOPE_MIN_DURATION"], "2500000ns");     // file, normalized
  EXPECT_EQ(seen["CALLSCOPE_MAX_DEPTH"], "4");                // env
  EXPECT_EQ(seen["CALLSCOPE_INTERVAL"], "500000ns");          // flag over env
  EXPECT_EQ(seen["CALLSCOPE_EXCLUDE"], "x,y");                // flag
  EXPECT_EQ(seen.count("CALLSCOPE_MODE"), 0u) << "unset keys are left out";
  EXPECT_EQ(::access(dir.file("from-file.trace").c_str(), F_OK), 0) << "output from the file: " << r.err;
}

}  // namespace
}  // namespace callscope::e2e
