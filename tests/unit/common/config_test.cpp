// The settings (common/config.h): the TOML file and its error messages, the
// environment, durations, the flags on a CLI11 app, precedence per key, and
// the normalized variables a traced program gets.
#include "common/config.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>

namespace callscope::config {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

using Globs = std::vector<std::string>;

// ---- durations -------------------------------------------------------------------

TEST(Duration, AcceptsEachUnitExactly) {
  EXPECT_EQ(parse_duration("250ns")->ns, 250u);
  EXPECT_EQ(parse_duration("10us")->ns, 10000u);
  EXPECT_EQ(parse_duration("2.5ms")->ns, 2500000u);
  EXPECT_EQ(parse_duration("10s")->ns, 10000000000u);
  EXPECT_EQ(parse_duration("0.1s")->ns, 100000000u);  // exact, not a double's 0.1
  EXPECT_EQ(parse_duration(".5us")->ns, 500u);
  EXPECT_EQ(parse_duration("1.0004us")->ns, 1000u);  // rounded to the ns
  EXPECT_EQ(parse_duration("1.0005us")->ns, 1001u);
  EXPECT_EQ(parse_duration("0")->ns, 0u);
  EXPECT_EQ(parse_duration("0.0")->ns, 0u);
  EXPECT_EQ(parse_duration("0ms")->ns, 0u);
}

TEST(Duration, ABareNumberAsksForAUnit) {
  auto r = parse_duration("10");
  ASSERT_FALSE(r);
  EXPECT_TRUE(contains(r.error().message(), "give a unit: ns, us, ms or s")) << r.error().message();
  EXPECT_TRUE(contains(r.error().message(), "'10'")) << r.error().message();
}

TEST(Duration, RefusesBadValues) {
  for (const char* bad : {"", "ms", "-1ms", "1..5ms", "10 ms", "10m", "10MS", "1e3ns", "99999999999s", "nan", "1.5"}) {
    auto r = parse_duration(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_TRUE(contains(r.error().message(), "bad duration")) << r.error().message();
  }
  EXPECT_TRUE(contains(parse_duration("10m").error().message(), "unknown unit 'm'"));
  EXPECT_TRUE(contains(parse_duration("99999999999s").error().message(), "too large"));
}

TEST(Duration, TextIsShortAndExact) {
  EXPECT_EQ(duration_text({0}), "0");
  EXPECT_EQ(duration_text({250}), "250ns");
  EXPECT_EQ(duration_text({1500}), "1.5us");
  EXPECT_EQ(duration_text({2500000}), "2.5ms");
  EXPECT_EQ(duration_text({10000000000}), "10s");
  EXPECT_EQ(duration_text({1000000001}), "1.000000001s");
  for (uint64_t ns : {1ull, 999ull, 1001ull, 123456789ull, 5000000000ull})
    EXPECT_EQ(parse_duration(duration_text({ns}))->ns, ns) << ns;
}

// ---- the TOML file -----------------------------------------------------------------

TEST(Toml, ReadsEveryKeyWithItsLine) {
  const char* text =
      "# a comment\n"
      "mode = \"profile\"\n"
      "interval = \"10s\"\n"
      "include = [\"main\", \"work*\"]\n"
      "exclude = \"std::*\"\n"
      "include_modules = [\"app\"]\n"
      "exclude_modules = [\"libc.so*\", \"libm.so*\"]\n"
      "max_depth = 12\n"
      "min_duration = \"2.5ms\"\n"
      "start_off = true\n"
      "chrono = [\"parse\"]\n"
      "output = \"out.trace\"\n"
      "name_width = 40\n"
      "libcalls = true\n"
      "patch_imports = [\"app\", \"libfoo.so\"]\n"
      "patch_callers = \"libssl.so*\"\n";
  auto r = parse_toml(text, "cs.toml");
  ASSERT_TRUE(r) << r.error().message();
  const Config& c = *r;
  EXPECT_EQ(c.file, "cs.toml");
  EXPECT_EQ(c.mode.value, Mode::kProfile);
  EXPECT_EQ(c.interval.value->ns, 10000000000u);
  EXPECT_EQ(*c.include.value, (Globs{"main", "work*"}));
  EXPECT_EQ(*c.exclude.value, (Globs{"std::*"}));
  EXPECT_EQ(*c.include_modules.value, (Globs{"app"}));
  EXPECT_EQ(*c.exclude_modules.value, (Globs{"libc.so*", "libm.so*"}));
  EXPECT_EQ(c.max_depth.value, 12u);
  EXPECT_EQ(c.min_duration.value->ns, 2500000u);
  EXPECT_EQ(c.start_off.value, true);
  EXPECT_EQ(*c.chrono.value, (Globs{"parse"}));
  EXPECT_EQ(c.output.value, "out.trace");
  EXPECT_EQ(c.name_width.value, 40u);
  EXPECT_EQ(c.mode.origin.source, Source::kFile);
  EXPECT_EQ(c.mode.origin.line, 2u);
  EXPECT_EQ(c.name_width.origin.line, 13u);
  EXPECT_EQ(describe(c.interval.origin), "file cs.toml:3");
  EXPECT_EQ(c.libcalls.value, true);
  EXPECT_EQ(*c.patch_imports.value, (Globs{"app", "libfoo.so"}));
  EXPECT_EQ(*c.patch_callers.value, (Globs{"libssl.so*"}));
  // As the runtime reads them.
  const auto env = runtime_environment(c);
  auto value = [&](const std::string& name) {
    for (const auto& [k, v] : env)
      if (k == name) return v;
    return std::string("(unset)");
  };
  EXPECT_EQ(value("CALLSCOPE_LIBCALLS"), "1");
  EXPECT_EQ(value("CALLSCOPE_PATCH_IMPORTS"), "app,libfoo.so");
  EXPECT_EQ(value("CALLSCOPE_PATCH_CALLERS"), "libssl.so*");
}

TEST(Toml, AnEmptyFileSetsNothing) {
  auto r = parse_toml("# nothing yet\n", "cs.toml");
  ASSERT_TRUE(r) << r.error().message();
  for (const KeyInfo& k : all_keys()) EXPECT_FALSE(is_set(*r, k.key)) << k.toml;
}

TEST(Toml, AStringIsCommaSeparatedAsInTheEnvironment) {
  auto r = parse_toml("include = \"a, b,c\"\nexclude = [\"x\", \" z \"]\n", "cs.toml");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r->include.value, (Globs{"a", "b", "c"}));
  EXPECT_EQ(*r->exclude.value, (Globs{"x", "z"}));
}

TEST(Toml, AnArrayItemCannotHoldAComma) {
  // The runtime would read two globs, "std::map<int" and "int>::*".
  auto r = parse_toml("exclude = [\"a\", \"std::map<int, int>::*\"]\n", "cs.toml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "cs.toml:1: 'exclude': item 2 'std::map<int, int>::*' holds a comma, which separates globs (the runtime "
            "reads lists comma-separated); write '?' in its place");
}

TEST(Toml, ZeroDurationNeedsNoUnit) {
  auto r = parse_toml("min_duration = 0\n", "cs.toml");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->min_duration.value->ns, 0u);
}

TEST(Toml, MalformedFileGivesLineAndKey) {
  auto r = parse_toml("mode = \"record\"\ninterval = 10s\n", "bad.toml");
  ASSERT_FALSE(r);
  const std::string m = r.error().message();
  EXPECT_TRUE(m.starts_with("bad.toml:2:")) << m;
  EXPECT_TRUE(contains(m, "'interval'")) << m;

  auto r2 = parse_toml("max_depth 3\n", "bad.toml");
  ASSERT_FALSE(r2);
  EXPECT_TRUE(r2.error().message().starts_with("bad.toml:1:")) << r2.error().message();
  EXPECT_TRUE(contains(r2.error().message(), "'max_depth'")) << r2.error().message();

  auto r3 = parse_toml("mode = \"a\"\nmode = \"b\"\n", "bad.toml");
  ASSERT_FALSE(r3);
  EXPECT_TRUE(r3.error().message().starts_with("bad.toml:2:")) << r3.error().message();
}

TEST(Toml, UnknownKeyIsNamedWithTheValidOnes) {
  auto r = parse_toml("mode = \"record\"\nexclud = [\"std::*\"]\n", "cs.toml");
  ASSERT_FALSE(r);
  const std::string m = r.error().message();
  EXPECT_TRUE(m.starts_with("cs.toml:2: unknown key 'exclud'")) << m;
  EXPECT_TRUE(contains(m, "did you mean 'exclude'?")) << m;
  EXPECT_TRUE(contains(m, "valid keys: mode, interval, include, exclude, include_modules, exclude_modules, "
                          "max_depth, min_duration, start_off, chrono, libcalls, patch_imports, patch_callers, follow, output, name_width"))
      << m;

  // A table is not a key either.
  auto t = parse_toml("[record]\nmode = \"profile\"\n", "cs.toml");
  ASSERT_FALSE(t);
  EXPECT_TRUE(contains(t.error().message(), "unknown key 'record'")) << t.error().message();
}

TEST(Toml, WrongTypeNamesKeyAndExpectedType) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {
           Case{"max_depth = \"3\"\n", "cs.toml:1: 'max_depth': must be an integer >= 0, not a string"},
           Case{"max_depth = -1\n", "cs.toml:1: 'max_depth': must be an integer >= 0, not an integer"},
           Case{"name_width = 2.5\n", "cs.toml:1: 'name_width': must be an integer >= 0, not a floating-point number"},
           Case{"start_off = 1\n", "cs.toml:1: 'start_off': must be true or false, not an integer"},
           Case{"start_off = \"yes\"\n", "cs.toml:1: 'start_off': must be true or false, not a string"},
           Case{"mode = 1\n", "cs.toml:1: 'mode': must be a string (\"record\" or \"profile\"), not an integer"},
           Case{"include = [\"a\", 2]\n", "cs.toml:1: 'include': must be an array of strings; item 2 is an integer"},
           Case{"exclude = true\n", "cs.toml:1: 'exclude': must be an array of strings, not a boolean"},
           Case{"output = [\"x\"]\n", "cs.toml:1: 'output': must be a string, not an array"},
           Case{"interval = true\n", "cs.toml:1: 'interval': must be a string with a unit, as in \"10ms\", not a boolean"},
       }) {
    auto r = parse_toml(c.text, "cs.toml");
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().message(), c.message);
  }
}

TEST(Toml, BadValuesNameTheKey) {
  auto r = parse_toml("\n\nmode = \"fast\"\n", "cs.toml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "cs.toml:3: 'mode': unknown mode 'fast' (valid modes: record, profile)");
  auto d = parse_toml("interval = \"10\"\n", "cs.toml");
  ASSERT_FALSE(d);
  EXPECT_TRUE(contains(d.error().message(), "cs.toml:1: 'interval': bad duration '10': give a unit")) << d.error().message();
  auto n = parse_toml("interval = 10\n", "cs.toml");
  ASSERT_FALSE(n);
  EXPECT_TRUE(contains(n.error().message(), "cs.toml:1: 'interval': give a unit: ns, us, ms or s")) << n.error().message();
}

TEST(Toml, MissingFileSaysSo) {
  auto r = load_file("/no/such/dir/callscope.toml");
  ASSERT_FALSE(r);
  EXPECT_TRUE(contains(r.error().message(), "cannot read config file '/no/such/dir/callscope.toml'"))
      << r.error().message();
}

// ---- the environment -----------------------------------------------------------------

std::vector<std::string> some_env() {
  return {"PATH=/usr/bin",
          "CALLSCOPE_MODE=profile",
          "CALLSCOPE_INTERVAL=500ms",
          "CALLSCOPE_INCLUDE=main, work*",
          "CALLSCOPE_EXCLUDE_MODULES=libc.so*",
          "CALLSCOPE_MAX_DEPTH=7",
          "CALLSCOPE_MIN_DURATION=1us",
          "CALLSCOPE_START_OFF=yes",
          "CALLSCOPE_OUTPUT=env.trace",
          "CALLSCOPE_NAME_WIDTH=30",
          "CALLSCOPE_DIR=/dev/shm/x",
          "CALLSCOPE_RECORDER_PID=12"};
}

TEST(Env, ReadsTheVariables) {
  std::vector<std::string> warnings;
  auto r = parse_environment(some_env(), every_key(), &warnings);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(r->mode.value, Mode::kProfile);
  EXPECT_EQ(r->interval.value->ns, 500000000u);
  EXPECT_EQ(*r->include.value, (Globs{"main", "work*"}));
  EXPECT_EQ(*r->exclude_modules.value, (Globs{"libc.so*"}));
  EXPECT_EQ(r->max_depth.value, 7u);
  EXPECT_EQ(r->min_duration.value->ns, 1000u);
  EXPECT_EQ(r->start_off.value, true);
  EXPECT_EQ(r->output.value, "env.trace");
  EXPECT_EQ(r->name_width.value, 30u);
  EXPECT_FALSE(r->exclude.value);
  EXPECT_EQ(describe(r->mode.origin), "env CALLSCOPE_MODE");
}

TEST(Env, BooleansInEveryForm) {
  for (const char* yes : {"1", "true", "yes", "on", "TRUE", "On"}) {
    auto r = parse_environment({std::string("CALLSCOPE_START_OFF=") + yes}, every_key(), nullptr);
    ASSERT_TRUE(r) << yes;
    EXPECT_EQ(r->start_off.value, true) << yes;
  }
  for (const char* no : {"0", "false", "no", "off"}) {
    auto r = parse_environment({std::string("CALLSCOPE_START_OFF=") + no}, every_key(), nullptr);
    ASSERT_TRUE(r) << no;
    EXPECT_EQ(r->start_off.value, false) << no;
  }
}

TEST(Env, BadValueNamesTheVariable) {
  struct Case {
    const char* entry;
    const char* message;
  };
  for (const Case& c : {
           Case{"CALLSCOPE_MAX_DEPTH=deep", "CALLSCOPE_MAX_DEPTH: 'deep' is not a whole number >= 0"},
           Case{"CALLSCOPE_MAX_DEPTH=-1", "CALLSCOPE_MAX_DEPTH: '-1' is not a whole number >= 0"},
           Case{"CALLSCOPE_NAME_WIDTH=99999999999", "CALLSCOPE_NAME_WIDTH: '99999999999' is too large"},
           Case{"CALLSCOPE_START_OFF=maybe",
                "CALLSCOPE_START_OFF: 'maybe' is not a boolean (use 1/0, true/false, yes/no or on/off)"},
           Case{"CALLSCOPE_MODE=fast", "CALLSCOPE_MODE: unknown mode 'fast' (valid modes: record, profile)"},
           Case{"CALLSCOPE_INTERVAL=10",
                "CALLSCOPE_INTERVAL: bad duration '10': give a unit: ns, us, ms or s (as in 10ms)"},
       }) {
    auto r = parse_environment({c.entry}, every_key(), nullptr);
    ASSERT_FALSE(r) << c.entry;
    EXPECT_EQ(r.error().message(), c.message);
  }
}

TEST(Env, EmptyCountsAsUnset) {
  auto r = parse_environment({"CALLSCOPE_MODE=", "CALLSCOPE_INCLUDE="}, every_key(), nullptr);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_FALSE(r->mode.value);
  EXPECT_FALSE(r->include.value);
}

TEST(Env, OnlyTheCommandsKeysAreRead) {
  // report reads name_width only: a bad CALLSCOPE_MODE is not its business.
  auto r = parse_environment({"CALLSCOPE_MODE=fast", "CALLSCOPE_NAME_WIDTH=20"}, report_keys(), nullptr);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_FALSE(r->mode.value);
  EXPECT_EQ(r->name_width.value, 20u);
}

TEST(Env, MisspeltVariableIsWarnedAbout) {
  std::vector<std::string> warnings;
  auto r = parse_environment({"CALLSCOPE_EXCLUD=std::*", "CALLSCOPE_DEPTH=3", "CALLSCOPE_Mode=profile"},
                             every_key(), &warnings);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_TRUE(contains(warnings[0], "unknown variable CALLSCOPE_EXCLUD is ignored (did you mean CALLSCOPE_EXCLUDE?)"))
      << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "CALLSCOPE_MODE, CALLSCOPE_INTERVAL")) << warnings[0];
  EXPECT_TRUE(contains(warnings[1], "did you mean CALLSCOPE_MAX_DEPTH?")) << warnings[1];
  EXPECT_TRUE(contains(warnings[2], "did you mean CALLSCOPE_MODE?")) << warnings[2];
  EXPECT_FALSE(r->exclude.value);
}

TEST(Env, CallscopesOwnVariablesAreNotWarnedAbout) {
  std::vector<std::string> warnings;
  auto r = parse_environment({"CALLSCOPE_DIR=/x", "CALLSCOPE_RECORDER_PID=1", "CALLSCOPE_CLOCK=monotonic",
                              "CALLSCOPE_RUNTIME=/lib/rt.so", "CALLSCOPE_CTL_DIR=/run", "CALLSCOPE_BUILD=build",
                              "CALLSCOPE_SOMETHING_ELSE_ENTIRELY=1"},
                             every_key(), &warnings);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(warnings.empty()) << warnings.front();
}

// ---- flags ------------------------------------------------------------------------------

// Parses `args` as `record`'s flags would be.
struct Parsed {
  CLI::App app{"t"};
  std::unique_ptr<Flags> flags;
  explicit Parsed(std::vector<std::string> args, std::span<const Key> keys = every_key()) {
    flags = std::make_unique<Flags>(app, keys);
    args.insert(args.begin(), "t");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    app.parse(static_cast<int>(argv.size()), argv.data());
  }
};

TEST(FlagsTest, ReadsEveryFlag) {
  Parsed p({"--mode", "profile", "--interval", "10s", "--include", "a", "--include", "b,c", "--exclude", "x",
            "--include-module", "app", "--exclude-module", "libc*", "--max-depth", "4", "--min-duration", "3us",
            "--start-off", "--chrono", "parse", "-o", "f.trace", "--name-width", "20", "--config", "my.toml"});
  auto r = p.flags->layer();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->mode.value, Mode::kProfile);
  EXPECT_EQ(r->interval.value->ns, 10000000000u);
  EXPECT_EQ(*r->include.value, (Globs{"a", "b", "c"}));
  EXPECT_EQ(*r->exclude.value, (Globs{"x"}));
  EXPECT_EQ(*r->include_modules.value, (Globs{"app"}));
  EXPECT_EQ(*r->exclude_modules.value, (Globs{"libc*"}));
  EXPECT_EQ(r->max_depth.value, 4u);
  EXPECT_EQ(r->min_duration.value->ns, 3000u);
  EXPECT_EQ(r->start_off.value, true);
  EXPECT_EQ(*r->chrono.value, (Globs{"parse"}));
  EXPECT_EQ(r->output.value, "f.trace");
  EXPECT_EQ(r->name_width.value, 20u);
  EXPECT_EQ(describe(r->output.origin), "flag --output");
  EXPECT_EQ(p.flags->file_to_read(), "my.toml");
}

TEST(FlagsTest, UnsetFlagsSetNothing) {
  Parsed p({});
  auto r = p.flags->layer();
  ASSERT_TRUE(r) << r.error().message();
  for (const KeyInfo& k : all_keys()) EXPECT_FALSE(is_set(*r, k.key)) << k.toml;
}

TEST(FlagsTest, StartOffCanBeTurnedOffExplicitly) {
  Parsed p({"--start-off=false"});
  auto r = p.flags->layer();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->start_off.value, false);
}

TEST(FlagsTest, BadValueIsAUsageErrorNamingTheFlag) {
  try {
    Parsed p({"--interval", "10"});
    FAIL() << "no error";
  } catch (const CLI::ParseError& e) {
    EXPECT_TRUE(contains(e.what(), "--interval")) << e.what();
    EXPECT_TRUE(contains(e.what(), "give a unit: ns, us, ms or s")) << e.what();
  }
  EXPECT_THROW(Parsed({"--mode", "fast"}), CLI::ParseError);
  EXPECT_THROW(Parsed({"--max-depth", "-2"}), CLI::ParseError);
}

TEST(FlagsTest, OnlyTheCommandsFlagsExist) {
  EXPECT_THROW(Parsed({"--mode", "profile"}, report_keys()), CLI::ParseError);
  Parsed p({"--name-width", "12"}, report_keys());
  EXPECT_EQ(p.flags->layer()->name_width.value, 12u);
  EXPECT_THROW(Parsed({"--name-width", "12"}, record_keys()), CLI::ParseError);
}

TEST(FlagsTest, HelpNamesTheVariableAndTheKey) {
  CLI::App app{"t"};
  Flags f(app, every_key());
  const std::string help = app.help();
  for (const KeyInfo& k : all_keys()) {
    EXPECT_TRUE(contains(help, k.env)) << k.env;
    EXPECT_TRUE(contains(help, std::string("toml ") + k.toml)) << k.toml;
  }
  EXPECT_TRUE(contains(Flags::help_footer(), "callscope.toml")) << Flags::help_footer();
}

// ---- precedence -------------------------------------------------------------------------

TEST(Precedence, FlagOverEnvOverFilePerKey) {
  Config file = *parse_toml(
      "mode = \"profile\"\ninclude = [\"f1\", \"f2\"]\nexclude = [\"fx\"]\nmax_depth = 5\nchrono = [\"c\"]\n",
      "cs.toml");
  Config env = *parse_environment({"CALLSCOPE_INCLUDE=e1", "CALLSCOPE_MAX_DEPTH=6", "CALLSCOPE_EXCLUDE=ex"},
                                  every_key(), nullptr);
  Config flags;
  flags.exclude.value = Globs{"gx"};
  flags.exclude.origin = {Source::kFlag, "--exclude", 0};
  const Config c = resolve(flags, env, file);
  EXPECT_EQ(c.file, "cs.toml");
  EXPECT_EQ(c.mode.value, Mode::kProfile);  // file only
  EXPECT_EQ(describe(c.mode.origin), "file cs.toml:1");
  EXPECT_EQ(*c.include.value, (Globs{"e1"}));  // env replaces the file's list, no merge
  EXPECT_EQ(describe(c.include.origin), "env CALLSCOPE_INCLUDE");
  EXPECT_EQ(*c.exclude.value, (Globs{"gx"}));  // flag over env over file
  EXPECT_EQ(describe(c.exclude.origin), "flag --exclude");
  EXPECT_EQ(c.max_depth.value, 6u);
  EXPECT_EQ(*c.chrono.value, (Globs{"c"}));
  EXPECT_FALSE(c.interval.value);
  EXPECT_EQ(describe(c.interval.origin), "default");
}

TEST(Precedence, ThroughFlagsEnvAndAFile) {
  char dir[] = "/tmp/callscope-config-test.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/callscope.toml";
  std::ofstream(path) << "mode = \"profile\"\ninterval = \"1s\"\nmin_duration = \"1us\"\n";
  Parsed p({"--min-duration", "3us"});
  std::vector<std::string> warnings;
  auto r = resolve_layers(*p.flags->layer(), {"CALLSCOPE_INTERVAL=2s", "CALLSCOPE_MIN_DURATION=2us"}, every_key(),
                          path, &warnings);
  ::unlink(path.c_str());
  ::rmdir(dir);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->mode.value, Mode::kProfile);
  EXPECT_EQ(r->interval.value->ns, 2000000000u);
  EXPECT_EQ(r->min_duration.value->ns, 3000u);
  EXPECT_EQ(describe(r->mode.origin), "file " + path + ":1");
}

// ---- what a traced program gets -----------------------------------------------------------

TEST(RuntimeEnv, NormalizedAndOnlyWhatIsSet) {
  Config c = *parse_toml(
      "mode = \"profile\"\ninterval = \"2.5ms\"\ninclude = [\"a\", \"b*\"]\nstart_off = false\nmax_depth = 3\n"
      "output = \"x.trace\"\nname_width = 9\nmin_duration = 0\n",
      "cs.toml");
  const std::vector<std::pair<std::string, std::string>> want = {
      {"CALLSCOPE_MODE", "profile"},     {"CALLSCOPE_INTERVAL", "2500000ns"}, {"CALLSCOPE_INCLUDE", "a,b*"},
      {"CALLSCOPE_MAX_DEPTH", "3"},      {"CALLSCOPE_MIN_DURATION", "0ns"},   {"CALLSCOPE_START_OFF", "0"},
  };
  EXPECT_EQ(runtime_environment(c), want);
  c.start_off.value = true;
  EXPECT_EQ(env_value(c, Key::kStartOff), "1");
  EXPECT_TRUE(runtime_environment(Config{}).empty());
}

TEST(RuntimeEnv, ValuesForPeople) {
  Config c = *parse_toml("interval = \"2500us\"\nexclude = [\"a\", \"b\"]\nstart_off = true\n", "cs.toml");
  EXPECT_EQ(value_text(c, Key::kInterval), "2.5ms");
  EXPECT_EQ(value_text(c, Key::kExclude), "a,b");
  EXPECT_EQ(value_text(c, Key::kStartOff), "true");
  EXPECT_EQ(value_text(c, Key::kMode), "");
}

}  // namespace
}  // namespace callscope::config
