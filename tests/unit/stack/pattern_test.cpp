// Module-qualified patterns and the user edges file.
#include "stack/pattern.h"

#include <gtest/gtest.h>

namespace callscope::stack {
namespace {

TEST(stack_pattern, PlainGlobMatchesAnyModule) {
  const FunctionPattern p = parse_pattern("ns::*");
  EXPECT_EQ(p.module, "");
  EXPECT_EQ(p.function, "ns::*");
  EXPECT_TRUE(p.matches("app", "ns::a::b(int)"));
  EXPECT_FALSE(p.matches("app", "other::f()"));
}

TEST(stack_pattern, ModuleQualified) {
  const FunctionPattern p = parse_pattern("libfoo.so!ns::*");
  EXPECT_EQ(p.module, "libfoo.so");
  EXPECT_EQ(p.function, "ns::*");
  EXPECT_TRUE(p.matches("libfoo.so", "ns::parse()"));
  EXPECT_TRUE(p.matches("libfoo.so.1.2", "ns::parse()"));  // version suffix
  EXPECT_FALSE(p.matches("libbar.so", "ns::parse()"));
  EXPECT_FALSE(p.matches("libfoo.so", "parse()"));
}

TEST(stack_pattern, ModuleGlob) {
  const FunctionPattern p = parse_pattern("lib*!main");
  EXPECT_TRUE(p.matches("libx.so", "main"));
  EXPECT_FALSE(p.matches("app", "main"));
}

TEST(stack_pattern, OperatorBangIsNotAModule) {
  EXPECT_EQ(parse_pattern("ns::operator!=(A const&)").module, "");
  EXPECT_EQ(parse_pattern("operator!").module, "");
  EXPECT_EQ(parse_pattern("Vec<int>::operator!()").module, "");
  EXPECT_EQ(parse_pattern("app!ns::operator!=*").module, "app");
  EXPECT_EQ(parse_pattern("app!ns::operator!=*").function, "ns::operator!=*");
}

TEST(stack_pattern, ModuleName) {
  EXPECT_EQ(module_name("/usr/lib/libz.so.1"), "libz.so.1");
  EXPECT_EQ(module_name("app"), "app");
}

TEST(stack_user_edges, ParsesLinesCommentsAndGlobs) {
  auto edges = parse_user_edges(
      "# callbacks\n\nmain -> handler_*\n  app!dispatch  ->  lib.so!ns::on_event(int)  # why\n"
      "Ptr::operator->() -> target\n",
      "edges.txt");
  ASSERT_TRUE(edges) << edges.error().message();
  ASSERT_EQ(edges->size(), 3u);
  EXPECT_EQ((*edges)[0].caller.function, "main");
  EXPECT_EQ((*edges)[0].callee.function, "handler_*");
  EXPECT_EQ((*edges)[0].line, 3);
  EXPECT_EQ((*edges)[1].caller.module, "app");
  EXPECT_EQ((*edges)[1].callee.module, "lib.so");
  EXPECT_EQ((*edges)[1].callee.function, "ns::on_event(int)");
  EXPECT_EQ((*edges)[2].caller.function, "Ptr::operator->()");
  EXPECT_EQ((*edges)[2].callee.function, "target");
}

TEST(stack_user_edges, BadLineNamesFileAndLine) {
  auto edges = parse_user_edges("a -> b\njust a name\n", "my.edges");
  ASSERT_FALSE(edges);
  EXPECT_NE(edges.error().message().find("my.edges:2"), std::string::npos);
  EXPECT_NE(edges.error().message().find("caller -> callee"), std::string::npos);
  EXPECT_FALSE(parse_user_edges("a -> \n", "e"));
}

TEST(stack_pattern, ExactNamesWithGlobCharacters) {
  // "[abi:cxx11]" would be a character class as a glob; given exactly, the
  // name matches itself.
  const std::string name = "Foo::name[abi:cxx11]() const";
  EXPECT_TRUE(parse_pattern(name).matches("app", name));
}

TEST(stack_user_edges, TemplateQuestionMarkIsExplained) {
  auto r = parse_user_edges("dispatch -> ?\n", "e.txt");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("replace '?'"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("e.txt:1"), std::string::npos);
}

}  // namespace
}  // namespace callscope::stack
