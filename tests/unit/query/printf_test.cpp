// printf's conversions as dtrace prints them, and the compile errors of a
// format that does not fit its arguments, in dtrace's words
// (dt_printf.c: dt_printf_create, dt_printf_validate).
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "query/aggregate.h"

namespace callscope::query {
namespace {

class PrintfTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx.strings = &strings;
    ctx.stacks = &stacks;
  }
  Value str(const std::string& s) { return Value::of_string(strings.intern(s)); }
  std::string fmt(const std::string& format, std::vector<Value> args) {
    std::string out;
    auto st = format_printf(out, format, args.data(), args.size(), ctx);
    EXPECT_TRUE(st) << (st ? "" : st.error().message());
    return out;
  }
  std::string check(const std::string& format, std::vector<ArgType> args, std::vector<std::string> names = {}) {
    auto st = check_printf(format, args, names);
    return st ? "ok" : st.error().message();
  }
  Strings strings;
  Stacks stacks;
  PrintContext ctx;
};

TEST_F(PrintfTest, SignedAndUnsignedIntegers) {
  EXPECT_EQ(fmt("%d %i|%u", {Value::of_int(-5), Value::of_int(7), Value::of_int(-1)}), "-5 7|18446744073709551615");
  // %d of an unsigned type prints unsigned, as pfcheck_dint rewrites it.
  EXPECT_EQ(fmt("%d", {Value::of_uint(~uint64_t{0})}), "18446744073709551615");
  // A 32-bit int prints as 32 bits.
  EXPECT_EQ(fmt("%d %u %x", {Value::of_int32(-1), Value::of_int32(-1), Value::of_int32(-1)}), "-1 4294967295 ffffffff");
  EXPECT_EQ(fmt("%x %X %o %#x %#o", {Value::of_int(255), Value::of_int(255), Value::of_int(8), Value::of_int(255),
                                      Value::of_int(8)}),
            "ff FF 10 0xff 010");
  EXPECT_EQ(fmt("%ld %lld %hd %lu %llx", {Value::of_int(1), Value::of_int(2), Value::of_int(3), Value::of_int(4),
                                          Value::of_int(255)}),
            "1 2 3 4 ff");
}

TEST_F(PrintfTest, FlagsWidthsPrecisions) {
  EXPECT_EQ(fmt("[%5d][%-5d][%05d][%+d][% d][%.3d]", {Value::of_int(42), Value::of_int(42), Value::of_int(42),
                                                      Value::of_int(42), Value::of_int(42), Value::of_int(7)}),
            "[   42][42   ][00042][+42][ 42][007]");
  // '*' takes the width, '.*' the precision, from the arguments; a
  // negative width left-aligns.
  EXPECT_EQ(fmt("[%*d][%*d][%.*s]", {Value::of_int(4), Value::of_int(1), Value::of_int(-4), Value::of_int(2),
                                     Value::of_int(2), str("abcdef")}),
            "[   1][2   ][ab]");
  EXPECT_EQ(fmt("[%-8s][%8s][%.2s]", {str("ab"), str("ab"), str("abc")}), "[ab      ][      ab][ab]");
  EXPECT_EQ(fmt("%*d", {Value::of_int(INT64_MIN), Value::of_int(1)}).size(), 65536u) << "widths are bounded";
  // %? is a pointer's width: 16 columns.
  EXPECT_EQ(fmt("[%?d]", {Value::of_int(1)}), "[               1]");
}

TEST_F(PrintfTest, CharactersPointersPercent) {
  EXPECT_EQ(fmt("%c%c|%p|100%%", {Value::of_int(72), Value::of_int(105), Value::of_int(0x1234)}), "Hi|1234|100%");
  EXPECT_EQ(fmt("%S|%C", {str("a\nb\t\"c\""), Value::of_int(7)}), "a\\nb\\t\\\"c\\\"|\\a");
  EXPECT_EQ(fmt("no conversions\n", {}), "no conversions\n");
}

TEST_F(PrintfTest, FloatConversionsOfIntegers) {
  EXPECT_EQ(fmt("%.1f %e %g", {Value::of_int(3), Value::of_int(-2), Value::of_int(100)}), "3.0 -2.000000e+00 100");
}

TEST_F(PrintfTest, SymbolsAndStacks) {
  stacks.set_symbol([](uint32_t process, uint64_t addr, uint8_t form) {
    if (form == 1) return std::string("libc.so.6");
    return "p" + std::to_string(process) + "`f" + std::to_string(addr);
  });
  ctx.process = 3;
  EXPECT_EQ(fmt("[%a][%A][%-12A]", {Value::of_int(10), Value::of_sym(1, 20, 0), Value::of_sym(1, 20, 1)}),
            "[p3`f10][p1`f20][libc.so.6   ]");
  const uint64_t frames[] = {2, 1};
  const Value stack = Value::of_stack(stacks.intern(5, frames, 2));
  // %k: a newline, then a frame per line; a left-aligned width indents.
  EXPECT_EQ(fmt("%k|", {stack}), "\np5`f2\np5`f1\n|");
  EXPECT_EQ(fmt("%-4k|", {stack}), "\n    p5`f2\n    p5`f1\n|");
  EXPECT_EQ(fmt("%8k|", {stack}), "\n   p5`f2\n   p5`f1\n|");
}

TEST_F(PrintfTest, WalltimestampAsDtracePrintsIt) {
  const char* old = std::getenv("TZ");
  const std::string saved = old != nullptr ? old : "";
  setenv("TZ", "UTC", 1);
  tzset();
  // 2009-02-13 23:31:30 UTC, in ns.
  const auto ns = Value::of_uint(1234567890ull * 1000000000ull + 999);
  EXPECT_EQ(fmt("%Y|%T|%25Y", {ns, ns, ns}), "2009 Feb 13 23:31:30|Fri, 13 Feb 2009 23:31:30 UTC|     2009 Feb 13 23:31:30");
  EXPECT_EQ(fmt("%Y", {Value::of_uint(5 * 1000000000ull)}), "1970 Jan  1 00:00:05");
  if (old != nullptr) setenv("TZ", saved.c_str(), 1);
  else unsetenv("TZ");
  tzset();
}

TEST_F(PrintfTest, PrintActionTypedAsDtrace) {
  std::string out;
  format_print(out, Value::of_int(10), "int", ctx);
  format_print(out, Value::of_int32(-1), "", ctx);
  format_print(out, Value::of_uint(0), "", ctx);
  format_print(out, str("foo"), "", ctx);
  format_print(out, Value::of_sized('A', 1), "char", ctx);
  format_print(out, Value::of_sized(0, 1), "char", ctx);
  EXPECT_EQ(out, "int 0xa\nint32_t 0xffffffff\nuint64_t 0\nstring \"foo\"\nchar 'A'\nchar '\\0'\n");
}

TEST_F(PrintfTest, RuntimeKindMismatchIsAnError) {
  std::string out;
  const Value s = str("x");
  auto st = format_printf(out, "%d", &s, 1, ctx);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message(), "printf( ) conversion #1 (%d) cannot print a string or a stack");
  st = format_printf(out, "%d %d", &s, 0, ctx);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message(), "printf( ) has too few arguments for its format");
}

TEST_F(PrintfTest, CheckAcceptsWhatFits) {
  using T = ArgType;
  EXPECT_EQ(check("%d %s %k %a %A %Y %x %c %%\n", {T::kInteger, T::kString, T::kStack, T::kSym, T::kSym, T::kInteger,
                                                   T::kInteger, T::kInteger}),
            "ok");
  EXPECT_EQ(check("%*.*d", {T::kInteger, T::kInteger, T::kInteger}), "ok");
  EXPECT_EQ(check("%d", {T::kAny}), "ok");
}

TEST_F(PrintfTest, CheckErrorsInDtracesWords) {
  using T = ArgType;
  EXPECT_EQ(check("%d\n", {T::kString}),
            "printf( ) argument #2 is incompatible with conversion #1 prototype:\n"
            "\tconversion: %d\n"
            "\t prototype: char, short, int, long, or long long\n"
            "\t  argument: string");
  EXPECT_EQ(check("%d %s", {T::kInteger, T::kInteger}, {"int", "int"}),
            "printf( ) argument #3 is incompatible with conversion #2 prototype:\n"
            "\tconversion: %s\n"
            "\t prototype: char [] or string (or use stringof)\n"
            "\t  argument: int");
  EXPECT_EQ(check("%k", {T::kInteger}),
            "printf( ) argument #2 is incompatible with conversion #1 prototype:\n"
            "\tconversion: %k\n"
            "\t prototype: stack\n"
            "\t  argument: int64_t");
  EXPECT_EQ(check("%f", {T::kInteger}),
            "printf( ) argument #2 is incompatible with conversion #1 prototype:\n"
            "\tconversion: %f\n"
            "\t prototype: float, double, or long double\n"
            "\t  argument: int64_t");
  EXPECT_EQ(check("%*d", {T::kString, T::kInteger}),
            "printf( ) argument #2 is incompatible with conversion #1 prototype:\n"
            "\tconversion: % * d\n"
            "\t prototype: int\n"
            "\t  argument: string");
  EXPECT_EQ(check("%d %d\n", {T::kInteger}),
            "printf( ) prototype mismatch: conversion #2 (%d) is missing a corresponding value argument");
  EXPECT_EQ(check("%*d", {}), "printf( ) prototype mismatch: conversion #1 (%d) is missing a corresponding \"*\" argument");
  EXPECT_EQ(check("%d\n", {T::kInteger, T::kInteger}),
            "printf( ) prototype mismatch: only 1 arguments required by this format string");
  EXPECT_EQ(check("", {}), "printf( ) format string is empty");
  EXPECT_EQ(check("%@d", {}), "%@ conversion requires an aggregation and is not for use with printf( )");
}

TEST_F(PrintfTest, MalformedFormats) {
  using T = ArgType;
  EXPECT_EQ(check("%z", {T::kInteger}), "format conversion #1 is undefined: %z");
  EXPECT_EQ(check("%d %hs", {T::kInteger, T::kString}), "format conversion #2 is undefined: %hs");
  EXPECT_EQ(check("abc %", {}), "format conversion #1 name expected before end of format string");
  EXPECT_EQ(check("%5%", {}), "format conversion #1 cannot be combined with other format flags: %%");
  EXPECT_EQ(check("%1$d", {T::kInteger}), "format conversion #1 uses unsupported positional format (%n$)");
  EXPECT_EQ(check("%.1.2d", {T::kInteger}), "format conversion #1 has more than one '.' specified");
  EXPECT_EQ(check("%**d", {T::kInteger, T::kInteger}),
            "format conversion #1 has more than one '*' specified for the output width");
  std::string out;
  auto st = format_printf(out, "%q", nullptr, 0, ctx);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message(), "format conversion #1 is undefined: %q");
}

TEST_F(PrintfTest, PrintaChecks) {
  using T = ArgType;
  EXPECT_EQ(check_printa("%s %@d\n", {T::kString}, AggFn::kCount).ok(), true);
  EXPECT_EQ(check_printa("%@d\n", {T::kString, T::kInteger}, AggFn::kSum).ok(), true) << "keys may be left over";
  auto st = check_printa("%s %s %@d", {T::kString}, AggFn::kCount);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message(),
            "printa( ) prototype mismatch: conversion #2 (%s) is missing a corresponding value argument");
  st = check_printa("%@s", {}, AggFn::kCount);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message(),
            "printa( ) aggregating action is incompatible with conversion #1 prototype:\n"
            "\tconversion: %s\n"
            "\t prototype: char [] or string (or use stringof)\n"
            "\t  argument: uint64_t");
}

TEST_F(PrintfTest, PrintaKeySignatures) {
  using T = ArgType;
  EXPECT_TRUE(check_printa_keys("a", {T::kString, T::kInteger}, {}, "b", {T::kString, T::kInteger}, {}).ok());
  auto st = check_printa_keys("a", {T::kString}, {}, "b", {T::kString, T::kInteger}, {});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message(),
            "printa( ): @a and @b do not have matching key signatures: @a has 1 key, @b has 2 keys");
  st = check_printa_keys("a", {T::kString}, {"string"}, "bb", {T::kInteger}, {"int"});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message(),
            "printa( ): @bb[ ] key #1 is incompatible with @a:\n"
            "        a key #1: string\n"
            "       bb key #1: int");
}

}  // namespace
}  // namespace callscope::query
