// The interpreter on hand-made firings: variables of every scope, operators,
// built-ins, string functions, actions, aggregations, speculations, faults
// and the default output, checked as text.
#include <gtest/gtest.h>

#include "common/glob.h"
#include "query/engine.h"

namespace callscope::query {
namespace {

class Script {
 public:
  explicit Script(const std::string& src, CompileOptions opts = {}) {
    auto r = compile(src, "t.d", opts);
    if (!r) {
      ADD_FAILURE() << r.error().message();
      return;
    }
    prog_ = *r;
    eng_ = std::make_unique<Engine>(prog_, strings, stacks, out);
  }
  bool ok() const { return eng_ != nullptr; }

  // A probe; enabled for every clause whose descriptions match it.
  const ProbeInfo& probe(const std::string& prov, const std::string& mod, const std::string& func,
                         const std::string& name) {
    auto p = std::make_unique<ProbeInfo>();
    p->id = static_cast<uint32_t>(probes_.size() + 1);
    p->provider = strings.intern(prov), p->module = strings.intern(mod);
    p->function = strings.intern(func), p->name = strings.intern(name);
    for (size_t c = 0; c < prog_->clause_count(); ++c)
      for (const auto& s : prog_->clause_probes(c))
        if (glob_match(s.provider.empty() ? "*" : s.provider, prov) && glob_match(s.module.empty() ? "*" : s.module, mod) &&
            glob_match(s.function.empty() ? "*" : s.function, func) && glob_match(s.name.empty() ? "*" : s.name, name)) {
          eng_->enable(*p, c);
          break;
        }
    if (prov == "dtrace" && name == "ERROR") eng_->set_error_probe(*p);
    probes_.push_back(std::move(p));
    return *probes_.back();
  }

  Firing at(const ProbeInfo& p, uint64_t ts = 0, uint32_t thread = 0) {
    Firing f;
    f.probe = &p;
    f.thread = thread;
    f.pid = 100, f.ppid = 1, f.tid = 100 + thread;
    f.execname = strings.intern("app");
    f.timestamp = ts;
    f.frames = frames.data();
    f.nframes = static_cast<uint32_t>(frames.size());
    return f;
  }
  void fire(const Firing& f) { eng_->fire(f); }
  Engine& engine() { return *eng_; }
  std::string finish() {
    eng_->finish();
    return out;
  }

  Strings strings;
  Stacks stacks;
  std::string out;
  std::vector<uint64_t> frames{0x1000, 0x2000};

 private:
  std::shared_ptr<const Program> prog_;
  std::unique_ptr<Engine> eng_;
  std::vector<std::unique_ptr<ProbeInfo>> probes_;
};

TEST(Engine, BeginPrintfQuiet) {
  Script s("#pragma D option quiet\nBEGIN { printf(\"%d %s\\n\", 1 + 2 * 3, \"x\"); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  EXPECT_EQ(s.out, "7 x\n");
}

TEST(Engine, DefaultProbeLineWhenNotQuiet) {
  Script s("BEGIN { printf(\"hi\"); } END {}");
  ASSERT_TRUE(s.ok());
  const auto& b = s.probe("dtrace", "", "", "BEGIN");
  const auto& e = s.probe("dtrace", "", "", "END");
  s.fire(s.at(b));
  s.fire(s.at(e));
  EXPECT_EQ(s.finish(),
            "CPU     ID                    FUNCTION:NAME\n"
            "  0      1                           :BEGIN hi\n"
            "  0      2                             :END \n\n");
}

TEST(Engine, AssignmentsAloneRecordNothing) {
  Script s("BEGIN { x = 1; self->y = 2; @a = count(); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  EXPECT_EQ(s.out, "");
}

TEST(Engine, CountByProbefunc) {
  Script s("pid$target:::entry { @[probefunc] = count(); }", CompileOptions{{}, 42, {}});
  ASSERT_TRUE(s.ok());
  const auto& a = s.probe("pid42", "a.out", "alpha", "entry");
  const auto& b = s.probe("pid42", "a.out", "beta", "entry");
  const auto& r = s.probe("pid42", "a.out", "beta", "return");
  for (int i = 0; i < 3; ++i) s.fire(s.at(a));
  s.fire(s.at(b));
  s.fire(s.at(r));
  EXPECT_EQ(s.finish(), "\n  beta                                                              1\n"
                        "  alpha                                                             3\n");
}

// Which probes only count (the driver may add their firings up), and a
// tally of n is n firings.
TEST(Engine, TalliesAreProbesThatOnlyCountByTheirNames) {
  const char* src =
      "pid$target:a.out:alpha:entry { @[probefunc] = count(); @n = count(); }\n"
      "pid$target:a.out:alpha:entry { @m[probemod, probename] = count(); }\n"
      "pid$target:a.out:beta:entry /tid == 1/ { @[probefunc] = count(); }\n"
      "pid$target:a.out:gamma:entry { @s[probefunc] = sum(2); }\n"
      "pid$target:a.out:delta:entry { @t[tid] = count(); }\n"
      "pid$target:a.out:eps:entry { @[probefunc] = count(); }\n"
      "pid$target:a.out:eps:entry { printf(\"e\\n\"); }\n"
      "pid$target:a.out:zeta:entry {}\n";
  Script s(src, CompileOptions{{}, 42, {}});
  ASSERT_TRUE(s.ok());
  const auto& alpha = s.probe("pid42", "a.out", "alpha", "entry");
  EXPECT_TRUE(s.engine().tallies(alpha.id));
  EXPECT_FALSE(s.engine().tallies(s.probe("pid42", "a.out", "beta", "entry").id));   // a predicate
  EXPECT_FALSE(s.engine().tallies(s.probe("pid42", "a.out", "gamma", "entry").id));  // not count()
  EXPECT_FALSE(s.engine().tallies(s.probe("pid42", "a.out", "delta", "entry").id));  // keyed by tid
  EXPECT_FALSE(s.engine().tallies(s.probe("pid42", "a.out", "eps", "entry").id));    // a clause prints
  EXPECT_FALSE(s.engine().tallies(s.probe("pid42", "a.out", "zeta", "entry").id));   // the default action
  EXPECT_FALSE(s.engine().tallies(s.probe("pid42", "a.out", "none", "entry").id));   // nothing enabled

  Script one_by_one(src, CompileOptions{{}, 42, {}});
  const auto& alpha1 = one_by_one.probe("pid42", "a.out", "alpha", "entry");
  for (int i = 0; i < 5; ++i) one_by_one.fire(one_by_one.at(alpha1));
  s.engine().fire_tally(s.at(alpha), 3);
  s.engine().fire_tally(s.at(alpha), 2);
  const std::string printed = s.finish();
  EXPECT_EQ(printed, one_by_one.finish());
  EXPECT_NE(printed.find("alpha                                                             5"), std::string::npos)
      << printed;
}

TEST(Engine, ThreadLocalsArePerThreadAndDurationsWork) {
  Script s("#pragma D option quiet\n"
           "pid1:::entry { self->ts = timestamp; }\n"
           "pid1:::return /self->ts/ { printf(\"%s %d %d\\n\", probefunc, timestamp - self->ts, tid); self->ts = 0; }");
  ASSERT_TRUE(s.ok());
  const auto& en = s.probe("pid1", "a.out", "f", "entry");
  const auto& ret = s.probe("pid1", "a.out", "f", "return");
  s.fire(s.at(en, 100, 0));
  s.fire(s.at(en, 150, 1));
  s.fire(s.at(ret, 400, 1));
  s.fire(s.at(ret, 500, 0));
  s.fire(s.at(ret, 600, 0));  // self->ts was cleared: the predicate is false
  EXPECT_EQ(s.out, "f 250 101\nf 400 100\n");
}

TEST(Engine, OperatorsFollowC) {
  Script s("#pragma D option quiet\nBEGIN { x = 7; y = -2; printf(\"%d %d %d %d %d %d %d %d %d\\n\", x / y, x % y, x << 2, -16 >> 2,"
           " x & 3, x | 8, x ^ 1, !x, ~0);"
           " printf(\"%d %d %d %d %d\\n\", x > y, 1 ^^ 1, 0 || 2, x == 7 ? 10 : 20, (uint8_t)257);"
           " z = 5; z += 2; z *= 3; z--; ++z; printf(\"%d %d\\n\", z, z++); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  EXPECT_EQ(s.out, "-3 1 28 -4 3 15 6 0 -1\n1 0 1 10 1\n21 21\n");
}

TEST(Engine, StringsCompareByContent) {
  Script s("#pragma D option quiet\nBEGIN { a = \"abc\"; b = strjoin(\"ab\", \"c\");"
           " printf(\"%d %d %d %d\\n\", a == b, a < \"abd\", a != b, \"b\" > a); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  EXPECT_EQ(s.out, "1 1 0 1\n");
}

TEST(Engine, StringFunctions) {
  Script s("#pragma D option quiet\nBEGIN {"
           " printf(\"%d|%s|%s|%s|%s\\n\", strlen(\"hello\"), substr(\"hello\", 1, 3), substr(\"hello\", -3), substr(\"hello\", 9), strstr(\"hello\", \"ll\"));"
           " printf(\"%s|%d|%d|%s|%s\\n\", strchr(\"a/b/c\", '/'), index(\"hello\", \"l\"), rindex(\"hello\", \"l\"), basename(\"/usr/lib/libc.so\"), dirname(\"/usr/lib/libc.so\"));"
           " printf(\"%s|%s|%s|%s|%d\\n\", basename(\"/\"), dirname(\"x\"), lltostr(-42), lltostr(255, 16), strtoll(\"0x10\", 16));"
           " printf(\"%s|%s|%s\\n\", toupper(\"aB1\"), tolower(\"AbC\"), strrchr(\"a/b/c\", '/')); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  EXPECT_EQ(s.out, "5|ell|llo||llo\n/b/c|2|3|libc.so|/usr/lib\n/|.|-42|0xff|16\nAB1|abc|/c\n");
}

TEST(Engine, AssociativeArraysMultiKeyAndDefaults) {
  Script s("#pragma D option quiet\n"
           "BEGIN { a[\"x\", 1] = 5; a[\"x\", 2] = 7; a[\"x\", 1] += 1; printf(\"%d %d %d\\n\", a[\"x\", 1], a[\"x\", 2], a[\"y\", 1]);"
           " n[1] = \"one\"; printf(\"[%s][%s]\\n\", n[1], n[2]); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  EXPECT_EQ(s.out, "6 7 0\n[one][]\n");
}

TEST(Engine, ClauseLocalsAndIfElse) {
  Script s("#pragma D option quiet\n"
           "BEGIN { this->n = 3; if (this->n > 2) { printf(\"big\\n\"); } else printf(\"small\\n\"); }\n"
           "BEGIN { printf(\"%d\\n\", this->n); if (0) printf(\"no\\n\"); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  EXPECT_EQ(s.out, "big\n3\n");
}

TEST(Engine, DivideByZeroFiresErrorAndGoesOn) {
  Script s("#pragma D option quiet\n"
           "BEGIN { printf(\"before\\n\"); x = 1 / (timestamp - timestamp); printf(\"after\\n\"); }\n"
           "BEGIN { printf(\"next clause\\n\"); }\n"
           "ERROR { printf(\"ERROR fired for %d\\n\", arg1); }");
  ASSERT_TRUE(s.ok());
  const auto& b = s.probe("dtrace", "", "", "BEGIN");
  s.probe("dtrace", "", "", "ERROR");
  s.fire(s.at(b));
  EXPECT_EQ(s.out, "ERROR fired for 1\nnext clause\n");
  EXPECT_EQ(s.engine().errors(), 1u);
  EXPECT_EQ(s.engine().take_messages(),
            "callscope query: error on enabled probe ID 1 (ID 1: dtrace:::BEGIN): divide-by-zero in action #2\n");
}

TEST(Engine, ExitStops) {
  Script s("#pragma D option quiet\nBEGIN { exit(3); }");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s.engine().exited());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  EXPECT_TRUE(s.engine().exited());
  EXPECT_EQ(s.engine().exit_status(), 3);
}

TEST(Engine, SpeculationsCommitAndDiscard) {
  Script s("#pragma D option quiet\n"
           "pid1:::entry { self->spec = speculation(); }\n"
           "pid1:::entry /self->spec/ { speculate(self->spec); printf(\"kept? %s\\n\", probefunc); }\n"
           "pid1:::return /self->spec && probefunc == \"keep\"/ { commit(self->spec); self->spec = 0; }\n"
           "pid1:::return /self->spec/ { discard(self->spec); self->spec = 0; }");
  ASSERT_TRUE(s.ok());
  const auto& ke = s.probe("pid1", "a.out", "keep", "entry");
  const auto& kr = s.probe("pid1", "a.out", "keep", "return");
  const auto& de = s.probe("pid1", "a.out", "drop", "entry");
  const auto& dr = s.probe("pid1", "a.out", "drop", "return");
  s.fire(s.at(de));
  s.fire(s.at(dr));
  s.fire(s.at(ke));
  s.fire(s.at(kr));
  EXPECT_EQ(s.out, "kept? keep\n");
}

TEST(Engine, UstackAndSymbols) {
  Script s("#pragma D option quiet\npid1:::entry { @[ustack()] = count(); printf(\"%d %d\\n\", ustackdepth, depth); }");
  ASSERT_TRUE(s.ok());
  s.stacks.set_symbol([](uint32_t, uint64_t addr, uint8_t) { return addr == 0x1000 ? "a.out`main" : "a.out`work"; });
  s.fire(s.at(s.probe("pid1", "a.out", "work", "entry")));
  EXPECT_EQ(s.finish(), "2 1\n\n\n              a.out`work\n              a.out`main\n                1\n");
}

TEST(Engine, PrintaMarksPrinted) {
  Script s("#pragma D option quiet\nBEGIN { @a[\"k\"] = sum(5); @b = max(3); }\nEND { printa(\"%s %@d\\n\", @a); }");
  ASSERT_TRUE(s.ok());
  const auto& b = s.probe("dtrace", "", "", "BEGIN");
  const auto& e = s.probe("dtrace", "", "", "END");
  s.fire(s.at(b));
  s.fire(s.at(e));
  EXPECT_EQ(s.finish(), "k 5\n\n                3\n");
}

TEST(Engine, NoClauseIsCheap) {
  Script s("pid1::f:entry { @ = count(); }");
  ASSERT_TRUE(s.ok());
  const auto& other = s.probe("pid1", "a.out", "g", "entry");
  s.fire(s.at(other));
  EXPECT_EQ(s.finish(), "\n");
}

}  // namespace
}  // namespace callscope::query

namespace callscope::query {
namespace {

TEST(EngineMore, PrintTraceAndSizes) {
  Script s("#pragma D option quiet\nBEGIN { print(pid); print(\"s\"); x = 10; print(x); trace(pid); trace(timestamp); printf(\"\\n%d\\n\", (int8_t)300 + 1); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN"), 7));
  EXPECT_EQ(s.out, "pid_t 0x64\nstring \"s\"\nint 0xa\n1007\n45\n");
}

TEST(EngineMore, TraceAfterProbeLine) {
  Script s("BEGIN { trace(pid); trace(\"str\"); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  EXPECT_EQ(s.out, "CPU     ID                    FUNCTION:NAME\n"
                   "  0      1                           :BEGIN       100  str                              \n");
}

TEST(EngineMore, FaultDropsTheClausesOutputAndNamesThePredicate) {
  Script s("#pragma D option quiet\nBEGIN /1 % (pid - pid)/ { printf(\"no\"); }\nBEGIN { printf(\"a\"); x = lltostr(1, 99); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  EXPECT_EQ(s.out, "");
  EXPECT_EQ(s.engine().take_messages(),
            "callscope query: error on enabled probe ID 1 (ID 1: dtrace:::BEGIN): divide-by-zero in predicate\n"
            "callscope query: error on enabled probe ID 2 (ID 1: dtrace:::BEGIN): illegal operation in action #2\n");
  EXPECT_EQ(s.engine().errors(), 2u);
}

TEST(EngineMore, ArrayElementsAssignedZeroAreDeleted) {
  Script s("#pragma D option quiet\nBEGIN { a[1] = 2; a[1] = 0; a[2]++; a[2]++; printf(\"%d %d\\n\", a[1], a[2]); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  EXPECT_EQ(s.out, "0 2\n");
}

TEST(EngineMore, AggregationFunctionsAndActions) {
  Script s("#pragma D option quiet\n"
           "BEGIN { @c[\"a\"] = count(); @c[\"b\"] = count(); @c[\"b\"] = count(); @s = sum(10); @s = sum(-3);"
           " @mn = min(5); @mn = min(2); @mx = max(5); @av = avg(4); @av = avg(6); }\n"
           "END { trunc(@c, 1); printa(\"%s %@d\\n\", @c); printa(@s); clear(@mx); normalize(@av, 5); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  s.fire(s.at(s.probe("dtrace", "", "", "END")));
  EXPECT_EQ(s.finish(), "b 2\n\n                7\n\n                2\n                0\n                1\n");
}

TEST(EngineMore, UnknownSpeculationDropsQuietly) {
  Script s("#pragma D option quiet\n#pragma D option nspec=1\n"
           "BEGIN { a = speculation(); b = speculation(); printf(\"%d %d\\n\", a, b); }\n"
           "BEGIN { speculate(b); printf(\"lost\\n\"); }\nBEGIN { speculate(a); printf(\"kept\\n\"); }\nBEGIN { commit(a); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN")));
  s.finish();
  EXPECT_EQ(s.out, "1 0\nkept\n\n");
  EXPECT_EQ(s.engine().take_messages(), "callscope query: 1 speculative drop\n");
}

}  // namespace
}  // namespace callscope::query

namespace callscope::query {
namespace {

TEST(EngineMore, IncrementDeclaresAnInt) {
  Script s("#pragma D option quiet\npid1:::entry { self->depth++; n[probefunc] += 2; total += 1; }\n"
           "pid1:::return { printf(\"%d %d %d\\n\", self->depth, n[probefunc], total); self->depth--; }");
  ASSERT_TRUE(s.ok());
  const auto& e = s.probe("pid1", "a.out", "f", "entry");
  const auto& r = s.probe("pid1", "a.out", "f", "return");
  s.fire(s.at(e));
  s.fire(s.at(e));
  s.fire(s.at(r));
  EXPECT_EQ(s.out, "2 4 2\n");
}

}  // namespace
}  // namespace callscope::query

namespace callscope::query {
namespace {

TEST(EngineDecl, StoresConvertToTheDeclaredType) {
  Script s("#pragma D option quiet\nint x;\nunsigned char c;\nself uint64_t ts;\nint counts[string];\n"
           "inline int LIMIT = 0x1ffffffff;\n"
           "BEGIN { x = 0x1ffffffff; c = 300; self->ts = 0; self->ts += timestamp; counts[\"a\"]++;\n"
           "printf(\"%d %d %d %d %d %d\\n\", x, c, self->ts, counts[\"a\"], counts[\"b\"], LIMIT); }");
  ASSERT_TRUE(s.ok());
  s.fire(s.at(s.probe("dtrace", "", "", "BEGIN"), 0x100000000ull));
  EXPECT_EQ(s.out, "-1 44 4294967296 1 0 -1\n");
}

}  // namespace
}  // namespace callscope::query
