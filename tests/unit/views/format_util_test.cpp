// The views' shared text helpers (views/format_util.h): byte sizes, and how
// a trace's calls are described when some or all were unwound at
// allocations (record's summary, info's note).
#include "views/format_util.h"

#include <gtest/gtest.h>

namespace callscope::views {
namespace {

TEST(FormatBytes, ThreeOrFourDigitsNeverAnExponent) {
  EXPECT_EQ(format_bytes(812), "812 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(197 * 1024), "197 KiB");
  EXPECT_EQ(format_bytes(1000 * 1024), "1000 KiB");  // %.3g wrote "1e+03 KiB"
  EXPECT_EQ(format_bytes(1023 * 1024 + 1000), "1024 KiB");
  EXPECT_EQ(format_bytes(uint64_t{1} << 20), "1 MiB");
}

TEST(CallsSummary, HookedUnwoundAndMixed) {
  EXPECT_EQ(calls_summary(812, 0, 3, 1, 0), "812 calls in 3 threads of 1 process");
  EXPECT_EQ(calls_summary(812, 812, 1, 1, 1), "812 unwound frames in 1 thread of 1 process");
  EXPECT_EQ(calls_summary(6512345 + 812004, 812004, 2417, 1208, 1205),
            "6512345 calls from hooks in 3 processes, 812004 frames unwound at allocations in 1205 processes "
            "(2417 threads)");
  EXPECT_EQ(calls_summary(3, 1, 5, 5, 1), "2 calls from hooks in 4 processes, 1 frame unwound at allocations in "
                                          "1 process (5 threads)");
}

}  // namespace
}  // namespace callscope::views
