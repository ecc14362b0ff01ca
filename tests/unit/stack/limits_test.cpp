// --limit: sizes, the two forms, and the verdicts on a hand-built model.
#include "stack/limits.h"

#include <gtest/gtest.h>

namespace callscope::stack {
namespace {

TEST(stack_limits, ByteSizes) {
  EXPECT_EQ(*parse_byte_size("4096"), 4096u);
  EXPECT_EQ(*parse_byte_size("8K"), 8192u);
  EXPECT_EQ(*parse_byte_size("8kib"), 8192u);
  EXPECT_EQ(*parse_byte_size("1M"), 1048576u);
  EXPECT_FALSE(parse_byte_size("8Q"));
  EXPECT_FALSE(parse_byte_size(""));
  EXPECT_FALSE(parse_byte_size("K"));
  EXPECT_FALSE(parse_byte_size("-8"));
  EXPECT_FALSE(parse_byte_size("99999999999999999999"));
}

TEST(stack_limits, GeneralAndNamedForms) {
  auto l = parse_limits("8K");
  ASSERT_TRUE(l);
  ASSERT_EQ(l->size(), 1u);
  EXPECT_TRUE((*l)[0].every_entry);
  l = parse_limits("main=8K, worker=64K");
  ASSERT_TRUE(l);
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[1].entry.function, "worker");
  EXPECT_EQ((*l)[1].bytes, 65536u);
  l = parse_limits("ns::operator==(A const&)=1K");  // the size follows the last '='
  ASSERT_TRUE(l);
  EXPECT_EQ((*l)[0].entry.function, "ns::operator==(A const&)");
  EXPECT_FALSE(parse_limits("main=8K,"));
  EXPECT_FALSE(parse_limits("=8K"));
}

StackModel model_of(std::vector<std::pair<std::string, uint32_t>> fns) {
  StackModel m;
  m.module = "app";
  uint64_t address = 0x1000;
  for (auto& [name, frame] : fns) {
    FunctionInfo f;
    f.address = address;
    f.size = 16;
    address += 16;
    f.name = name;
    f.frame_bytes = frame;
    m.functions.push_back(f);
  }
  return m;
}

TEST(stack_limits, VerdictsNamedWinOverGeneral) {
  StackModel m = model_of({{"main", 64}, {"worker", 9000}, {"rec", 32}});
  m.edges.push_back({2, 2, EdgeKind::kCall, 0x1020});
  const WorstCase w = compute_worst_case(m);
  auto limits = parse_limits("8K,worker=16K");
  ASSERT_TRUE(limits);
  const auto v = check_limits(m, w, {0, 1, 2}, *limits);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_TRUE(v[0].ok);
  EXPECT_TRUE(v[1].ok) << v[1].why;  // 9000 <= 16K, its own limit
  EXPECT_EQ(v[1].limit, 16384u);
  EXPECT_FALSE(v[2].ok);  // a recursion: not a bound
  EXPECT_NE(v[2].why.find("not a bound"), std::string::npos);
  const auto over = check_limits(m, w, {1}, *parse_limits("worker=8K"));
  ASSERT_EQ(over.size(), 1u);
  EXPECT_FALSE(over[0].ok);
  EXPECT_NE(over[0].why.find("over the limit"), std::string::npos);
}

TEST(stack_limits, NamedEntriesMustExist) {
  const StackModel m = model_of({{"main", 64}});
  EXPECT_FALSE(limited_entries(m, *parse_limits("nope=8K")));
  auto e = limited_entries(m, *parse_limits("main=8K"));
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, (std::vector<uint32_t>{0}));
  EXPECT_TRUE(limited_entries(m, *parse_limits("8K"))->empty());
}

// An exact name selects that function only, although as a glob it would
// match others too ("[abi:cxx11]" is a character class).
TEST(stack_select, ExactNameWinsOverItsGlobReading) {
  const StackModel m = model_of({{"Foo::name[abi:cxx11]()", 32}, {"Foo::namea()", 16}});
  EXPECT_EQ(select_functions(m, {parse_pattern("Foo::name[abi:cxx11]()")}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(select_functions(m, {parse_pattern("Foo::name[a]()")}), (std::vector<uint32_t>{1}));
}

}  // namespace
}  // namespace callscope::stack
