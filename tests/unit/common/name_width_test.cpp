// Names cut to a column's width (views/format_util.h fit_name), as
// `report --name-width N` shows them: the settings' name_width key at work.
#include <gtest/gtest.h>

#include "views/format_util.h"

namespace callscope::views {
namespace {

TEST(FitName, ZeroKeepsTheWholeName) {
  EXPECT_EQ(fit_name("std::vector<int>::push_back(int const&)", 0), "std::vector<int>::push_back(int const&)");
}

TEST(FitName, ShortNamesAreKept) {
  EXPECT_EQ(fit_name("main", 4), "main");
  EXPECT_EQ(fit_name("main", 10), "main");
  EXPECT_EQ(fit_name("", 3), "");
}

TEST(FitName, LongNamesEndWithAnEllipsis) {
  EXPECT_EQ(fit_name("compute_checksum", 10), "compute...");
  EXPECT_EQ(fit_name("compute_checksum", 10).size(), 10u);
  EXPECT_EQ(fit_name("abcde", 4), "a...");
}

TEST(FitName, TinyWidthsCutWithoutEllipsis) {
  EXPECT_EQ(fit_name("compute", 3), "com");
  EXPECT_EQ(fit_name("compute", 1), "c");
}

TEST(FitName, CountsUtf8Characters) {
  // "größe_berechnen": 15 characters, 17 bytes.
  const std::string name = "gr\xC3\xB6\xC3\x9F" "e_berechnen";
  EXPECT_EQ(fit_name(name, 15), name);
  EXPECT_EQ(fit_name(name, 7), "gr\xC3\xB6\xC3\x9F...");
  EXPECT_EQ(fit_name(name, 3), "gr\xC3\xB6");
}

}  // namespace
}  // namespace callscope::views
