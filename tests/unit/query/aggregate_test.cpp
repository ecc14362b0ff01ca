// The aggregations and their printing against dtrace's own outputs. Files
// named tst.*.d.out under golden/ are the expected outputs of the dtrace
// test suite (usr/src/cmd/dtrace/test/tst/common/aggs/ and, for tst.many,
// multiaggs/) for the script of the same name, which each test replays
// call by call; the other golden files were worked out by hand from
// libdtrace's printing code (dt_consume.c) and checked line by line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "query/aggregate.h"
#include "query/aggregate_internal.h"

namespace callscope::query {
namespace {

std::string golden(const std::string& name) {
  const auto path = std::filesystem::path(CALLSCOPE_QUERY_GOLDEN_DIR) / name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Key key(std::initializer_list<Value> values) {
  Key k;
  for (const Value& v : values) k.v[k.n++] = v;
  return k;
}

Value i64(int64_t v) { return Value::of_int(v); }
Value sized(int64_t v, uint8_t bytes) { return Value::of_sized(v, bytes); }

class AggregateTest : public ::testing::Test {
 protected:
  Value str(const std::string& s) { return Value::of_string(strings.intern(s)); }
  PrintContext ctx() {
    PrintContext c;
    c.strings = &strings;
    c.stacks = &stacks;
    return c;
  }
  Strings strings;
  Stacks stacks;
};

// tst.quantize.d: @a[i] = quantize(i) for i = 0, 100, ..., 900; quiet.
TEST_F(AggregateTest, QuantizeMatchesDtraceSuite) {
  Aggregation a("a", AggFn::kQuantize);
  for (int64_t i = 0; i < 1000; i += 100) a.add(key({i64(i)}), i);
  std::string out;
  print_aggregations_at_end(out, {&a}, ctx());
  EXPECT_EQ(out, golden("tst.quantize.d.out"));
}

// tst.lquantize.d: @a[i] = lquantize(i, -100, 1100, 100).
TEST_F(AggregateTest, LquantizeMatchesDtraceSuite) {
  AggParams p;
  p.low = -100;
  p.high = 1100;
  p.step = 100;
  Aggregation a("a", AggFn::kLquantize, p);
  for (int64_t i = 0; i < 1000; i += 100) a.add(key({i64(i)}), i);
  std::string out;
  print_aggregations_at_end(out, {&a}, ctx());
  EXPECT_EQ(out, golden("tst.lquantize.d.out"));
}

// tst.signedkeys.d: char, short, int and long long keys sort as unsigned
// and print at their size; trace() of the same values, quiet.
TEST_F(AggregateTest, SignedKeysMatchDtraceSuite) {
  PrintContext c = ctx();
  c.quiet = true;
  c.aggsortkey = true;
  std::string out;
  const uint8_t trace_sizes[] = {1, 2, 4, 8};
  for (size_t s = 0; s < 4; ++s) {
    for (int64_t v = -2; v <= 2; ++v) {
      format_trace(out, sized(v, trace_sizes[s]), c);
      format_trace(out, str("\n"), c);
    }
    if (s != 3) format_trace(out, str("\n"), c);
  }
  // D's integer constants as keys are 64-bit records (only the casts to
  // char and short make smaller ones).
  Aggregation i8("i8", AggFn::kSum), i16("i16", AggFn::kSum), i32("i32", AggFn::kSum), i64a("i64", AggFn::kSum);
  for (int64_t v = -2; v <= 2; ++v) {
    i8.add(key({sized(v, 1)}), v);
    i16.add(key({sized(v, 2)}), v);
    i32.add(key({i64(v)}), v);
    i64a.add(key({i64(v)}), v);
  }
  print_aggregations_at_end(out, {&i8, &i16, &i32, &i64a}, c);
  EXPECT_EQ(out, golden("tst.signedkeys.d.out"));
}

// tst.sizedkeys.d: printa(@) of (int) and (uint64_t) keys, then exit.
TEST_F(AggregateTest, SizedKeysMatchDtraceSuite) {
  Aggregation a("", AggFn::kSum);
  a.add(key({sized(1, 4), i64(0)}), 10);
  a.add(key({Value::of_uint(2), i64(0)}), 20);
  a.add(key({sized(3, 4), i64(0)}), 30);
  a.add(key({Value::of_uint(4), i64(0)}), 40);
  std::string out;
  ASSERT_TRUE(printa(out, "", {&a}, ctx()));
  print_aggregations_at_end(out, {&a}, ctx());
  EXPECT_EQ(out, golden("tst.sizedkeys.d.out"));
}

// tst.valsortkeypos.d: equal values, the tie broken from key #2 on.
TEST_F(AggregateTest, KeyPositionBreaksTiesAsDtraceSuite) {
  Aggregation a("", AggFn::kSum);
  a.add(key({i64(1), i64(3)}), 0);
  a.add(key({i64(2), i64(2)}), 0);
  a.add(key({i64(3), i64(1)}), 0);
  PrintContext c = ctx();
  c.aggsortkeypos = 1;
  std::string out;
  print_aggregations_at_end(out, {&a}, c);
  EXPECT_EQ(out, golden("tst.valsortkeypos.d.out"));
}

// tst.normalize.d: @func[i % 5] = sum(i * 100) for i < 20; normalize by 5.
TEST_F(AggregateTest, NormalizeMatchesDtraceSuite) {
  Aggregation a("func", AggFn::kSum);
  for (int64_t i = 0; i < 20; ++i) a.add(key({i64(i % 5)}), i * 100);
  std::string out;
  PrintContext c = ctx();
  c.quiet = true;
  ASSERT_TRUE(format_printf(out, "normalized data:\n", nullptr, 0, c));
  ASSERT_TRUE(a.normalize(5));
  print_aggregations_at_end(out, {&a}, c);
  EXPECT_EQ(out, golden("tst.normalize.d.out"));
  EXPECT_FALSE(a.normalize(0)) << "dtrace refuses a zero normal";
  EXPECT_EQ(a.normal(), 5);
  a.denormalize();
  out.clear();
  print_aggregation(out, a, c);
  EXPECT_NE(out.find("             3000"), std::string::npos) << out;
}

// tst.multinormalize.d: printa of one normalized aggregation; the other,
// normalized, printed at the end.
TEST_F(AggregateTest, MultiNormalizeMatchesDtraceSuite) {
  Aggregation f1("func1", AggFn::kSum), f2("func2", AggFn::kSum);
  for (int64_t i = 0; i < 20; ++i) {
    f1.add(key({i64(i % 5)}), i * 100);
    f2.add(key({i64(i % 5 + 1)}), i * 200);
  }
  PrintContext c = ctx();
  c.quiet = true;
  std::string out;
  ASSERT_TRUE(format_printf(out, "normalized data #1:\n", nullptr, 0, c));
  ASSERT_TRUE(f1.normalize(5));
  ASSERT_TRUE(printa(out, "", {&f1}, c));
  ASSERT_TRUE(format_printf(out, "\nnormalized data #2:\n", nullptr, 0, c));
  ASSERT_TRUE(f2.normalize(5));
  print_aggregations_at_end(out, {&f1, &f2}, c);
  EXPECT_EQ(out, golden("tst.multinormalize.d.out"));
}

// tst.signedkeyspos.d: aggsortkey, aggsortkeypos=1 and aggsortrev together:
// the aggregations in reverse, keys from the second member on, unsigned.
TEST_F(AggregateTest, SignedKeysPositionMatchesDtraceSuite) {
  Aggregation i8("i8", AggFn::kSum), i16("i16", AggFn::kSum), i32("i32", AggFn::kSum), i64a("i64", AggFn::kSum);
  const int64_t scale[] = {1, 11, 111};
  const char* i8_names[] = {"cat", "dog", "mouse"};
  const char* i16_names[] = {"mouse", "dog", "cat"};
  const char* i32_names[] = {"mouse", "bear", "cat"};
  const char* i64_names[] = {"cat", "bear", "dog"};
  for (int64_t v = -2; v <= 2; ++v)
    for (int n = 0; n < 3; ++n) {
      // The script's sums: v, v * 11, v * 111 by name; 0, 10, 100 for v = 0.
      const int64_t zero_sums[] = {0, 10, 100};
      const int64_t digits = v == 0 ? zero_sums[n] : v * scale[n];
      i8.add(key({str(i8_names[n]), sized(v, 1)}), digits);
      i16.add(key({str(i16_names[n]), sized(v, 2)}), digits);
      i32.add(key({str(i32_names[n]), i64(v)}), digits);
      i64a.add(key({str(i64_names[n]), i64(v)}), digits);
    }
  PrintContext c = ctx();
  c.quiet = true;
  c.aggsortkey = true;
  c.aggsortkeypos = 1;
  c.aggsortrev = true;
  std::string out;
  print_aggregations_at_end(out, {&i8, &i16, &i32, &i64a}, c);
  EXPECT_EQ(out, golden("tst.signedkeyspos.d.out"));
}

// tst.clear.d: the script's ticks replayed: sums for i = 0..9, printa,
// clear, printa, sums for i = 11..19 (the tick that cleared also skipped
// i = 10), printa, exit.
TEST_F(AggregateTest, ClearMatchesDtraceSuite) {
  Aggregation f("func", AggFn::kSum);
  PrintContext c = ctx();
  c.quiet = true;
  std::string out;
  for (int64_t i = 0; i < 10; ++i) f.add(key({i64(i % 5)}), i * 100);
  out += "Aggregation data before clear():\n";
  ASSERT_TRUE(printa(out, "", {&f}, c));
  f.clear();
  out += "Aggregation data after clear():\n";
  ASSERT_TRUE(printa(out, "", {&f}, c));
  for (int64_t i = 11; i < 20; ++i) f.add(key({i64(i % 5)}), i * 100);
  out += "Final aggregation data:\n";
  ASSERT_TRUE(printa(out, "", {&f}, c));
  print_aggregations_at_end(out, {&f}, c);
  EXPECT_EQ(out, golden("tst.clear.d.out"));
}

TEST_F(AggregateTest, ScalarFunctionsPrintAsDtrace) {
  Aggregation count("c", AggFn::kCount), sum("s", AggFn::kSum), avg("a", AggFn::kAvg), mn("mn", AggFn::kMin),
      mx("mx", AggFn::kMax), sd("sd", AggFn::kStddev);
  for (int64_t v : {1, 2, 3, 4}) {
    count.add(key({str("read")}), v);
    sum.add(key({str("read")}), v);
    avg.add(key({str("read")}), v);
    mn.add(key({str("read")}), v);
    mx.add(key({str("read")}), v);
    sd.add(key({str("read")}), v);
  }
  count.add(key({str("write")}), 0);
  std::string out;
  print_aggregations_at_end(out, {&count, &sum, &avg, &mn, &mx, &sd}, ctx());
  const std::string pad = std::string(46, ' ');
  // Strings: two spaces and 50 columns left-aligned; values " %16lld".
  // stddev as dtrace's integer arithmetic: sqrt(30/4 - (10/4)^2) = sqrt(7 - 4) -> 1.
  EXPECT_EQ(out, "\n"
                 "  write" + std::string(45, ' ') + "                1\n"
                 "  read" + pad + "                4\n"
                 "  read" + pad + "               10\n"
                 "  read" + pad + "                2\n"
                 "  read" + pad + "                1\n"
                 "  read" + pad + "                4\n"
                 "  read" + pad + "                1\n");
}

TEST_F(AggregateTest, AnonymousScalarAndAvgOfNegatives) {
  Aggregation a("", AggFn::kAvg);
  a.add(Key{}, -10);
  a.add(Key{}, -5);
  std::string out;
  print_aggregation(out, a, ctx());
  EXPECT_EQ(out, "\n               -7\n");  // -15 / 2, C's truncation toward zero
  EXPECT_TRUE(a.printed());
  out.clear();
  print_aggregations_at_end(out, {&a}, ctx());
  EXPECT_EQ(out, "\n") << "printa printed it: END does not again";
}

TEST_F(AggregateTest, StddevOfSpreadValues) {
  Aggregation a("", AggFn::kStddev);
  for (int64_t v : {2, 4, 4, 4, 5, 5, 7, 9}) a.add(Key{}, v);  // the textbook set: sigma 2
  std::string out;
  print_aggregation(out, a, ctx());
  EXPECT_EQ(out, "\n                2\n");
  Aggregation big("", AggFn::kStddev);
  big.add(Key{}, INT64_MIN + 1);  // the square needs 128 bits
  big.add(Key{}, INT64_MAX);
  out.clear();
  print_aggregation(out, big, ctx());
  EXPECT_EQ(out, "\n 9223372036854775807\n");
}

TEST_F(AggregateTest, NoTrapOnExtremeDivisions) {
  Aggregation avg("", AggFn::kAvg), sum("", AggFn::kSum);
  avg.add(Key{}, INT64_MIN);
  sum.add(Key{}, INT64_MIN);
  ASSERT_TRUE(avg.normalize(-1));
  ASSERT_TRUE(sum.normalize(-1));
  std::string out;
  print_aggregation(out, avg, ctx());
  ASSERT_TRUE(printa(out, "%@d\n", {&sum}, ctx()));
  EXPECT_EQ(out, "\n -9223372036854775808\n-9223372036854775808\n");
}

TEST_F(AggregateTest, MinAndMaxKeepExtremes) {
  Aggregation mn("", AggFn::kMin), mx("", AggFn::kMax);
  for (int64_t v : {5, -3, 8}) {
    mn.add(Key{}, v);
    mx.add(Key{}, v);
  }
  std::string out;
  print_aggregation(out, mn, ctx());
  print_aggregation(out, mx, ctx());
  EXPECT_EQ(out, "\n               -3\n\n                8\n");
}

// Values ascending, ties by key; aggsortrev reverses all, aggsortkey sorts
// by key (strings byte-wise).
TEST_F(AggregateTest, OrderFollowsAggsortOptions) {
  Aggregation a("", AggFn::kCount);
  for (int i = 0; i < 3; ++i) a.add(key({str("b")}), 0);
  a.add(key({str("c")}), 0);
  a.add(key({str("a")}), 0);
  a.add(key({str("ab")}), 0);
  auto rows = [&](PrintContext c) {
    std::string out;
    print_aggregation(out, a, c);
    std::string names;
    std::istringstream in(out);
    std::string word;
    while (in >> word)
      if (word[0] >= 'a') names += word + " ";
    return names;
  };
  EXPECT_EQ(rows(ctx()), "a ab c b ");
  PrintContext rev = ctx();
  rev.aggsortrev = true;
  EXPECT_EQ(rows(rev), "b c ab a ");
  PrintContext bykey = ctx();
  bykey.aggsortkey = true;
  EXPECT_EQ(rows(bykey), "a ab b c ");
  bykey.aggsortrev = true;
  EXPECT_EQ(rows(bykey), "c b ab a ");
}

TEST_F(AggregateTest, AggsortrevReversesTheAggregationsAtEnd) {
  Aggregation a("a", AggFn::kSum), b("b", AggFn::kSum);
  a.add(Key{}, 1);
  b.add(Key{}, 2);
  PrintContext c = ctx();
  c.aggsortrev = true;
  std::string out;
  print_aggregations_at_end(out, {&a, &b}, c);
  EXPECT_EQ(out, "\n                2\n                1\n");
}

TEST_F(AggregateTest, TruncKeepsLargestOrSmallest) {
  Aggregation a("", AggFn::kSum);
  for (int64_t v = 1; v <= 5; ++v) a.add(key({i64(v)}), v * 10);
  a.trunc(2);
  std::string out;
  print_aggregation(out, a, ctx());
  EXPECT_EQ(out, "\n                4               40\n                5               50\n");
  Aggregation b("", AggFn::kSum);
  for (int64_t v = 1; v <= 5; ++v) b.add(key({i64(v)}), v * 10);
  b.trunc(-2);
  out.clear();
  print_aggregation(out, b, ctx());
  EXPECT_EQ(out, "\n                1               10\n                2               20\n");
  // Ties keep the keys that sort last (largest first), by content.
  Aggregation t("", AggFn::kCount);
  for (const char* k : {"b", "a", "c"}) t.add(key({str(k)}), 0);
  const PrintContext c = ctx();
  t.trunc(2, &c);
  out.clear();
  print_aggregation(out, t, ctx());
  EXPECT_EQ(out, "\n  b" + std::string(49, ' ') + "                1\n  c" + std::string(49, ' ') + "                1\n");
  b.trunc(10);
  EXPECT_EQ(b.entries().size(), 2u);
  b.trunc();
  EXPECT_TRUE(b.empty());
  b.add(key({i64(9)}), 1);  // usable after a trunc
  EXPECT_EQ(b.entries().size(), 1u);
}

// clear() zeroes values and keeps keys; a later min() competes with the
// zero, as dtrace's zeroed record does.
TEST_F(AggregateTest, ClearZeroesValuesKeepsKeys) {
  Aggregation a("", AggFn::kCount), m("", AggFn::kMin);
  a.add(key({str("x")}), 0);
  a.add(key({str("x")}), 0);
  m.add(Key{}, 7);
  a.clear();
  m.clear();
  m.add(Key{}, 9);
  std::string out;
  print_aggregation(out, a, ctx());
  print_aggregation(out, m, ctx());
  EXPECT_EQ(out, "\n  x" + std::string(49, ' ') + "                0\n\n                0\n");
}

TEST_F(AggregateTest, QuantizeNegativeAndMixedSigns) {
  Aggregation neg("", AggFn::kQuantize);
  neg.add(Key{}, -1);
  neg.add(Key{}, -3);
  neg.add(Key{}, -3);
  neg.add(Key{}, -100);
  std::string out;
  print_aggregation(out, neg, ctx());
  EXPECT_EQ(out, golden("quantize_negative.out"));
  Aggregation mixed("", AggFn::kQuantize);
  mixed.add(Key{}, -2);
  mixed.add(Key{}, 0);
  mixed.add(Key{}, 5, 3);  // quantize(5, 3): weight 3
  out.clear();
  print_aggregation(out, mixed, ctx());
  EXPECT_EQ(out, golden("quantize_mixed.out"));
}

// Negative increments make negative counts: dtrace draws half-length bars
// either side of a centre line.
TEST_F(AggregateTest, QuantizeNegativeCountsDrawBothSides) {
  Aggregation a("", AggFn::kQuantize);
  a.add(Key{}, 1, 2);
  a.add(Key{}, 4, -2);
  std::string out;
  print_aggregation(out, a, ctx());
  const std::string s20(20, ' '), s10(10, ' '), at10(10, '@');
  EXPECT_EQ(out, "\n\n           value  ------------- Distribution ------------- count    \n"
                 "               0 " + s20 + "|" + s20 + " 0        \n"
                 "               1 " + s20 + "|" + at10 + s10 + " 2        \n"
                 "               2 " + s20 + "|" + s20 + " 0        \n"
                 "               4 " + s10 + at10 + "|" + s20 + " -2       \n"
                 "               8 " + s20 + "|" + s20 + " 0        \n\n");
}

// The bucket of every power of two and its neighbours, against
// dtrace_aggregate_quantize's linear search written out.
TEST_F(AggregateTest, QuantizeBucketsAsDtraceSearchesThem) {
  auto bucket_value = [](int b) -> int64_t {
    if (b < 63) return -(int64_t{1} << (62 - b));
    if (b == 63) return 0;
    return int64_t{1} << (b - 64);
  };
  auto reference = [&](int64_t v) {
    if (v < 0) {
      for (int i = 0; i < 63; ++i)
        if (v <= bucket_value(i)) return i;
      return -1;
    }
    for (int i = 64; i < 127; ++i)
      if (v < bucket_value(i)) return i - 1;
    return 126;
  };
  std::vector<int64_t> values{0, INT64_MIN, INT64_MAX, INT64_MIN + 1};
  for (int b = 0; b < 63; ++b)
    for (int64_t d : {-1, 0, 1}) {
      values.push_back((int64_t{1} << b) + d);
      values.push_back(-(int64_t{1} << b) + d);
    }
  for (int64_t v : values) {
    Aggregation a("", AggFn::kQuantize);
    a.add(Key{}, v);
    int got = -1;
    for (size_t i = 0; i < a.entries()[0]->bins.size(); ++i)
      if (a.entries()[0]->bins[i] != 0) got = static_cast<int>(i);
    EXPECT_EQ(got, reference(v)) << v;
  }
}

TEST_F(AggregateTest, ManyKeysStayDistinct) {
  Aggregation a("", AggFn::kSum);
  for (int round = 0; round < 3; ++round)
    for (int64_t k = 0; k < 5000; ++k) a.add(key({i64(k), str(k % 2 ? "odd" : "even")}), k);
  ASSERT_EQ(a.entries().size(), 5000u);
  for (const auto& e : a.entries()) EXPECT_EQ(e->v[0], 3 * e->key.v[0].as_int());
  a.trunc(-10);
  a.add(key({i64(0), str("even")}), 1);
  a.add(key({i64(4999), str("odd")}), 1);
  EXPECT_EQ(a.entries().size(), 11u);
}

TEST_F(AggregateTest, QuantizeAfterClearPrintsTheBucketsAroundZero) {
  Aggregation a("", AggFn::kQuantize);
  a.add(Key{}, 1000);
  a.clear();
  std::string out;
  print_aggregation(out, a, ctx());
  EXPECT_EQ(out,
            "\n\n"
            "           value  ------------- Distribution ------------- count    \n"
            "              -1 |                                         0        \n"
            "               0 |                                         0        \n"
            "               1 |                                         0        \n"
            "\n");
}

TEST_F(AggregateTest, LquantizeUnderflowAndOverflowBuckets) {
  AggParams p;
  p.low = 0;
  p.high = 10;
  p.step = 5;
  Aggregation a("", AggFn::kLquantize, p);
  a.add(key({str("k")}), -1);
  a.add(key({str("k")}), 3);
  a.add(key({str("k")}), 3);
  a.add(key({str("k")}), 10);
  a.add(key({str("k")}), 99);
  std::string out;
  print_aggregation(out, a, ctx());
  EXPECT_EQ(out, golden("lquantize_bounds.out"));
}

TEST_F(AggregateTest, LlquantizeLogLinearBuckets) {
  AggParams p;
  p.factor = 10;
  p.magnitude_low = 0;
  p.magnitude_high = 2;
  p.nsteps = 10;
  Aggregation a("", AggFn::kLlquantize, p);
  for (int64_t v : {5, 5, 50, 55, 450, 999}) a.add(Key{}, v);
  std::string out;
  print_aggregation(out, a, ctx());
  EXPECT_EQ(out, golden("llquantize.out"));
  Aggregation edges("", AggFn::kLlquantize, p);
  edges.add(Key{}, 0);
  edges.add(Key{}, 1000);
  out.clear();
  print_aggregation(out, edges, ctx());
  EXPECT_EQ(out, golden("llquantize_edges.out"));
}

// FreeBSD r322773's case: 100^10 does not fit in 64 bits. And parameters
// the compiler refuses still never crash the printing.
TEST_F(AggregateTest, LlquantizeExtremeParameters) {
  AggParams p;
  p.factor = 100;
  p.magnitude_low = 0;
  p.magnitude_high = 9;
  p.nsteps = 100;
  Aggregation a("", AggFn::kLlquantize, p);
  a.add(Key{}, 0);
  a.add(Key{}, INT64_MAX);
  std::string out;
  print_aggregation(out, a, ctx());
  EXPECT_NE(out.find("             < 1 |@@@@@@@@@@@@@@@@@@@@"), std::string::npos) << out;
  EXPECT_NE(out.find(" |@@@@@@@@@@@@@@@@@@@@                     1"), std::string::npos);
  AggParams bad;
  bad.factor = 1;
  Aggregation b("", AggFn::kLlquantize, bad);
  b.add(Key{}, 5);
  out.clear();
  print_aggregation(out, b, ctx());
  EXPECT_NE(out.find("|@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@ 1"), std::string::npos) << out;
  AggParams wide;
  wide.low = INT64_MIN;
  wide.high = INT64_MAX;
  wide.step = 1;
  Aggregation c("", AggFn::kLquantize, wide);
  c.add(Key{}, INT64_MAX);
  c.add(Key{}, INT64_MIN);
  out.clear();
  print_aggregation(out, c, ctx());
  EXPECT_NE(out.find(">= -9223372036854710273"), std::string::npos) << out;  // 65535 levels at most
}

TEST_F(AggregateTest, StackKeysPrintOneFramePerLine) {
  stacks.set_symbol([](uint32_t, uint64_t addr, uint8_t) { return "a.out`f" + std::to_string(addr); });
  const uint64_t frames[] = {3, 2, 1};
  const uint64_t other[] = {4, 1};
  Aggregation a("", AggFn::kCount);
  a.add(key({Value::of_stack(stacks.intern(0, frames, 3))}), 0);
  a.add(key({Value::of_stack(stacks.intern(0, frames, 3))}), 0);
  a.add(key({Value::of_stack(stacks.intern(0, other, 2))}), 0);
  EXPECT_EQ(stacks.intern(0, frames, 3), stacks.intern(0, frames, 3));
  std::string out;
  print_aggregation(out, a, ctx());
  const std::string indent(14, ' ');
  EXPECT_EQ(out, "\n\n" + indent + "a.out`f4\n" + indent + "a.out`f1\n                1\n\n" + indent + "a.out`f3\n" +
                     indent + "a.out`f2\n" + indent + "a.out`f1\n                2\n");
}

TEST_F(AggregateTest, SymbolKeysAndUnnamedStackFrames) {
  Aggregation a("", AggFn::kCount);
  a.add(key({Value::of_sym(0, 0x401000, 0)}), 0);
  std::string out;
  print_aggregation(out, a, ctx());  // no symbol function: dtrace's raw address
  EXPECT_EQ(out, "\n  0x401000" + std::string(42, ' ') + "                1\n");
}

TEST_F(AggregateTest, PrintaJoinsAggregationsByKey) {
  Aggregation c("c", AggFn::kCount), s("s", AggFn::kSum);
  c.add(key({str("f")}), 0);
  c.add(key({str("f")}), 0);
  c.add(key({str("g")}), 0);
  s.add(key({str("f")}), 100);
  s.add(key({str("h")}), 5);
  std::string out;
  ASSERT_TRUE(printa(out, "%-4s %@8d %@8d\n", {&c, &s}, ctx()));
  // Sorted by the first aggregation's value, then the second's, then key.
  EXPECT_EQ(out,
            "h           0        5\n"
            "g           1        0\n"
            "f           2      100\n");
  EXPECT_TRUE(c.printed() && s.printed());
  PrintContext pos = ctx();
  pos.aggsortpos = 1;  // sort on @s first
  out.clear();
  ASSERT_TRUE(printa(out, "%s:%@d:%@d ", {&c, &s}, pos));
  EXPECT_EQ(out, "g:1:0 h:0:5 f:2:100 ");
  out.clear();
  ASSERT_TRUE(printa(out, "", {&c, &s}, ctx()));
  const std::string pad(49, ' ');
  EXPECT_EQ(out, "\n  h" + pad + "                0                5\n  g" + pad +
                     "                1                0\n  f" + pad + "                2              100\n");
}

// multiaggs/tst.many.d: printa joining aggregations, some of which never
// aggregated anything (a quantize, an lquantize, a count, a min: they print
// as zero-filled records), one named twice; then END prints the rest.
TEST_F(AggregateTest, ManyJoinedAggregationsMatchDtraceSuite) {
  // In the order the script names them: the never-run clause comes first.
  AggParams lq;
  lq.low = -10;
  lq.high = 10;
  lq.step = 1;
  Aggregation a996("agg996", AggFn::kQuantize), a997("agg997", AggFn::kCount), a998("agg998", AggFn::kMin),
      a999("agg999", AggFn::kLquantize, lq);
  std::vector<std::unique_ptr<Aggregation>> sums;
  for (int64_t i = 0; i <= 246; ++i) {
    sums.push_back(std::make_unique<Aggregation>("agg" + std::to_string(i), AggFn::kSum));
    sums.back()->add(key({i64(i)}), i);
  }
  auto agg = [&](int i) -> const Aggregation* { return sums[static_cast<size_t>(i)].get(); };
  PrintContext c = ctx();
  c.quiet = true;
  std::string out;
  ASSERT_TRUE(printa(out, "%8d %8@d %8@d\n", {agg(0), agg(1)}, c));
  out += "\n";
  ASSERT_TRUE(printa(out, "%8d %8@d %8@d\n", {agg(0), &a996}, c));
  out += "\n";
  ASSERT_TRUE(printa(out, "%4d %4@d %4@d %4@d %4@d %4@d %4@d %4@d %4@d %4@d %4@d %4@d\n",
                     {agg(12), agg(3), agg(73), &a997, agg(9), agg(9), agg(4), &a998, agg(11), agg(23), agg(69)}, c));
  out += "\n";
  ASSERT_TRUE(printa(out, "%8d %8@d %8@d\n", {agg(245), agg(246)}, c));
  out += "\n";
  ASSERT_TRUE(printa(out, "%8d %8@d %8@d\n", {&a999, agg(246)}, c));
  out += "\n";
  std::vector<const Aggregation*> all{&a996, &a997, &a998, &a999};
  for (const auto& a : sums) all.push_back(a.get());
  print_aggregations_at_end(out, all, c);
  EXPECT_EQ(out, golden("tst.many.d.out"));
}

TEST_F(AggregateTest, PrintaWithFormatAndHistograms) {
  Aggregation q("", AggFn::kQuantize);
  q.add(key({str("x")}), 1);
  std::string out;
  ASSERT_TRUE(printa(out, "%s%@d\n", {&q}, ctx()));
  EXPECT_EQ(out,
            "x\n"
            "           value  ------------- Distribution ------------- count    \n"
            "               0 |                                         0        \n"
            "               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@ 1        \n"
            "               2 |                                         0        \n"
            "\n");
  Aggregation avg("", AggFn::kAvg);
  avg.add(key({i64(7)}), 10);
  avg.add(key({i64(7)}), 21);
  ASSERT_TRUE(avg.normalize(3));
  out.clear();
  ASSERT_TRUE(printa(out, "%d=%@x %@d\n", {&avg}, ctx()));  // %@ past the last aggregation repeats it
  EXPECT_EQ(out, "7=5 5\n");
}

TEST_F(AggregateTest, PrintaFormatNeedsEnoughKeys) {
  Aggregation a("", AggFn::kCount);
  a.add(key({str("x")}), 0);
  std::string out;
  auto st = printa(out, "%s %s %@d\n", {&a}, ctx());
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("too few arguments"), std::string::npos) << st.error().message();
}

TEST_F(AggregateTest, ProbeLineAndHeader) {
  std::string out;
  format_probe_header(out);
  format_probe_line(out, 0, 1, "", "BEGIN");
  PrintContext c = ctx();
  format_trace(out, i64(42), c);
  format_trace(out, str("hi"), c);
  format_trace(out, sized(7, 4), c);
  format_probe_end(out);
  EXPECT_EQ(out, "CPU     ID                    FUNCTION:NAME\n"
                 "  0      1" + std::string(27, ' ') + ":BEGIN " + std::string(15, ' ') + "42" + "  hi" +
                     std::string(31, ' ') + std::string(8, ' ') + "7\n");
}

}  // namespace
}  // namespace callscope::query
