// The D lexer: literals, operators, macros, comments and pragmas.
#include "query/lexer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <utility>

namespace callscope::query {
namespace {

std::vector<Token> lex(const std::string& src, const MacroArgs& m = {}) {
  Lexer l(src, m);
  std::vector<Token> out;
  for (;;) {
    Token t = l.next();
    if (t.kind == Tok::kEof) break;
    out.push_back(t);
    if (t.kind == Tok::kError) break;
  }
  return out;
}

TEST(Lexer, IntegerLiterals) {
  auto t = lex("10 0x1F 017 42u 7UL 0 'a' '\\n' 'ab' 18446744073709551615");
  ASSERT_EQ(t.size(), 10u);
  EXPECT_EQ(t[0].value, 10u);
  EXPECT_EQ(t[1].value, 31u);
  EXPECT_EQ(t[2].value, 15u);
  EXPECT_TRUE(t[3].is_unsigned);
  EXPECT_EQ(t[4].value, 7u);
  EXPECT_EQ(t[5].value, 0u);
  EXPECT_EQ(t[6].value, 97u);
  EXPECT_EQ(t[7].value, 10u);
  EXPECT_EQ(t[8].value, 0x6162u);
  EXPECT_TRUE(t[9].is_unsigned);
}

TEST(Lexer, BadIntegers) {
  EXPECT_EQ(lex("09").back().text, "invalid digit '9' in octal constant 09");
  EXPECT_EQ(lex("12abc").back().text, "invalid integer constant 12abc");
  EXPECT_EQ(lex("99999999999999999999").back().text, "integer constant 99999999999999999999 is too large to be represented");
}

TEST(Lexer, StringsAndEscapes) {
  auto t = lex("\"a\\tb\\x41\\101\\\"\"");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, Tok::kString);
  EXPECT_EQ(t[0].text, "a\tbAA\"");
  EXPECT_EQ(lex("\"abc").back().text, "newline encountered in string literal");
}

TEST(Lexer, OperatorsLongestFirst) {
  auto t = lex("a<<=b->c ^^ d++ >= @agg @ $1");
  std::vector<std::string> texts;
  for (auto& x : t) texts.push_back(x.kind == Tok::kAgg ? "@" + x.text : x.text);
  MacroArgs m;
  EXPECT_EQ(texts, (std::vector<std::string>{"a", "<<=", "b", "->", "c", "^^", "d", "++", ">=", "@agg", "@", "macro argument $1 is not defined"}));
}

TEST(Lexer, Macros) {
  MacroArgs m{{"12", "foo", "x y"}, 4242, false};
  auto t = lex("$1 $2 $$3 $target $$1", m);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].kind, Tok::kInt);
  EXPECT_EQ(t[0].value, 12u);
  EXPECT_EQ(t[1].kind, Tok::kIdent);
  EXPECT_EQ(t[1].text, "foo");
  EXPECT_EQ(t[2].kind, Tok::kString);
  EXPECT_EQ(t[2].text, "x y");
  EXPECT_EQ(t[3].value, 4242u);
  EXPECT_EQ(t[4].text, "12");
  EXPECT_EQ(lex("$3", m).back().text, "macro argument $3 (\"x y\") is not an integer or an identifier; use $$3 for a string");
  EXPECT_EQ(lex("$target").back().text, "macro argument $target is not defined: give callscope query -c or -p");
  MacroArgs d{{}, std::nullopt, true};
  auto z = lex("$4 $$4", d);
  EXPECT_EQ(z[0].kind, Tok::kInt);
  EXPECT_EQ(z[1].kind, Tok::kString);
}

// $pid and the like are the query's own process's ids, as the kernel gives
// them (a group or session led from outside the pid namespace is 0).
TEST(Lexer, ProcessMacrosAreTheKernels) {
  const std::pair<const char*, uint64_t> ids[] = {
      {"$pid", static_cast<uint64_t>(::getpid())},     {"$ppid", static_cast<uint64_t>(::getppid())},
      {"$pgid", static_cast<uint64_t>(::getpgrp())},   {"$sid", static_cast<uint64_t>(::getsid(0))},
      {"$uid", static_cast<uint64_t>(::getuid())},     {"$gid", static_cast<uint64_t>(::getgid())},
      {"$euid", static_cast<uint64_t>(::geteuid())},   {"$egid", static_cast<uint64_t>(::getegid())},
  };
  for (const auto& [name, id] : ids) {
    auto t = lex(name);
    ASSERT_EQ(t.size(), 1u) << name;
    EXPECT_EQ(t[0].kind, Tok::kInt) << name;
    EXPECT_EQ(t[0].value, id) << name;
    auto s = lex(std::string("$") + name);
    ASSERT_EQ(s.size(), 1u) << name;
    EXPECT_EQ(s[0].kind, Tok::kString) << name;
    EXPECT_EQ(s[0].text, std::to_string(id)) << name;
  }
}

TEST(Lexer, CommentsLinesAndPragmas) {
  MacroArgs m;
  Lexer l("#!/usr/sbin/dtrace -s\n/* a\ncomment */ x // rest\n#pragma D option quiet\n#pragma D option bufsize=4m\ny", m);
  Token a = l.next();
  EXPECT_EQ(a.text, "x");
  EXPECT_EQ(a.line, 3);
  Token b = l.next();
  EXPECT_EQ(b.text, "y");
  EXPECT_EQ(b.line, 6);
  ASSERT_EQ(l.pragmas().size(), 2u);
  EXPECT_EQ(l.pragmas()[0].name, "quiet");
  EXPECT_EQ(l.pragmas()[1].value, "4m");
  EXPECT_EQ(lex("#define X 1\nx").back().text,
            "preprocessor directive #define needs the C preprocessor (dtrace -C), which callscope query does not run");
}

TEST(Lexer, ProbeDescriptionsExpandMacros) {
  MacroArgs m{{"main"}, 77, false};
  Lexer l("pid$target:a.out:$1:entry, tick-1s{", m);
  EXPECT_EQ(l.probe_desc().text, "pid77:a.out:main:entry");
  EXPECT_EQ(l.next().text, ",");
  EXPECT_EQ(l.probe_desc().text, "tick-1s");
  EXPECT_EQ(l.next().text, "{");
}

}  // namespace
}  // namespace callscope::query
