// The pure parts of `callscope replay`: the duration and format parsers and
// the text, CSV and JSON line formatters. The streaming itself is covered by
// the golden cases (tests/golden/cases/replay_*.txt).
#include "views/replay_view.h"

#include <gtest/gtest.h>

namespace callscope::views {
namespace {

TEST(ParseDuration, AcceptsEachUnit) {
  EXPECT_EQ(*parse_duration_ns("250ns"), 250u);
  EXPECT_EQ(*parse_duration_ns("10us"), 10000u);
  EXPECT_EQ(*parse_duration_ns("1.5ms"), 1500000u);
  EXPECT_EQ(*parse_duration_ns("2s"), 2000000000u);
  EXPECT_EQ(*parse_duration_ns(".5us"), 500u);
  EXPECT_EQ(*parse_duration_ns("0"), 0u);
  EXPECT_EQ(*parse_duration_ns("0.0004us"), 0u);  // rounded to the ns
}

TEST(ParseDuration, RefusesBadValuesWithAReason) {
  for (const char* bad : {"", "ms", "10", "1.5", "-1ms", "1..5ms", "1.5.2ms", "10 ms", "10m", "10MS", "1e3ns",
                          "99999999999s", "nan", "inf"}) {
    auto r = parse_duration_ns(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find("bad duration"), std::string::npos) << r.error().message();
  }
  EXPECT_NE(parse_duration_ns("10").error().message().find("missing unit"), std::string::npos);
  EXPECT_NE(parse_duration_ns("10m").error().message().find("unknown unit 'm'"), std::string::npos);
}

TEST(ParseOutputFormat, ListsTheValidOnes) {
  EXPECT_EQ(*parse_output_format("text"), OutputFormat::kText);
  EXPECT_EQ(*parse_output_format("csv"), OutputFormat::kCsv);
  EXPECT_EQ(*parse_output_format("json"), OutputFormat::kJson);
  auto r = parse_output_format("yaml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "unknown format 'yaml' (valid formats: text, csv, json)");
}

TEST(FormatTimestamp, ChoosesTheUnitPerValue) {
  EXPECT_EQ(format_timestamp_ns(0), "0 ns");
  EXPECT_EQ(format_timestamp_ns(812), "812 ns");
  EXPECT_EQ(format_timestamp_ns(12345), "12.345 us");
  EXPECT_EQ(format_timestamp_ns(4.5e6), "4.500 ms");
  EXPECT_EQ(format_timestamp_ns(1.2345e9), "1.234 s");
}

ReplayLine line(ReplayKind k, uint32_t level, std::string fn, std::optional<double> dur = std::nullopt) {
  ReplayLine l;
  l.kind = k;
  l.thread = 1;
  l.time_ns = 12345;
  l.level = level;
  l.function = std::move(fn);
  l.duration_ns = dur;
  return l;
}

TEST(FormatReplayText, IndentsAndAlignsColumns) {
  EXPECT_EQ(replay_text_header(), "        TIME    DURATION  FUNCTION");
  EXPECT_EQ(format_replay_text(line(ReplayKind::kCall, 0, "main")), "   12.345 us              main() {");
  EXPECT_EQ(format_replay_text(line(ReplayKind::kLeaf, 2, "f", 250.0)), "   12.345 us      250 ns      f();");
  EXPECT_EQ(format_replay_text(line(ReplayKind::kReturn, 1, "g", 1.5e6)),
            "   12.345 us      1.5 ms    } /* g */");
  EXPECT_EQ(format_replay_text(line(ReplayKind::kUnwound, 0, "h", 40.0)),
            "   12.345 us       40 ns  } /* h: unwound by longjmp or an exception */");
  EXPECT_EQ(format_replay_text(line(ReplayKind::kTruncated, 0, "h", 40.0)),
            "   12.345 us       40 ns  } /* h: still open when the stream ended */");
  EXPECT_EQ(format_replay_text(line(ReplayKind::kInherited, 1, "w")),
            "   12.345 us                w() {  /* entered before this stream began */");
  EXPECT_EQ(format_replay_text(line(ReplayKind::kStray, 1, "s")),
            "   12.345 us                /* return from s without a recorded call */");
  ReplayLine lost = line(ReplayKind::kLost, 0, "");
  lost.arg = 42;
  EXPECT_EQ(format_replay_text(lost), "   12.345 us              ... 42 events lost ...");
}

// A name with terminal escapes: text shows them escaped, CSV and JSON keep
// the name in their own quoting.
TEST(FormatReplay, ControlCharactersInNames) {
  const std::string evil = "f\x1b]0;PWN\a\x1b[2J";
  EXPECT_EQ(format_replay_text(line(ReplayKind::kCall, 0, evil)), "   12.345 us              f\\x1b]0;PWN\\x07\\x1b[2J() {");
  EXPECT_EQ(format_replay_csv(line(ReplayKind::kCall, 0, "a\nb")), "1,12345,call,1,\"a\nb\",,");
  EXPECT_EQ(format_replay_json(line(ReplayKind::kCall, 0, evil)),
            R"({"thread":1,"tick_ns":12345,"kind":"call","depth":1,"function":"f\u001b]0;PWN\u0007\u001b[2J"})");
}

TEST(FormatReplayCsv, RawNanosecondsAndQuotedNames) {
  EXPECT_EQ(replay_csv_header(), "thread,tick_ns,kind,depth,function,duration_ns,arg");
  EXPECT_EQ(format_replay_csv(line(ReplayKind::kLeaf, 2, "f", 250.4)), "1,12345,leaf,3,f,250,");
  EXPECT_EQ(format_replay_csv(line(ReplayKind::kCall, 0, "f<a, \"b\">")), "1,12345,call,1,\"f<a, \"\"b\"\">\",,");
  ReplayLine lost = line(ReplayKind::kLost, 0, "");
  lost.arg = 42;
  EXPECT_EQ(format_replay_csv(lost), "1,12345,lost,1,,,42");
}

TEST(FormatReplayJson, OneObjectWithOnlyTheFieldsThatApply) {
  EXPECT_EQ(format_replay_json(line(ReplayKind::kReturn, 0, "g", 1.5e6)),
            R"({"thread":1,"tick_ns":12345,"kind":"return","depth":1,"function":"g","duration_ns":1500000})");
  EXPECT_EQ(format_replay_json(line(ReplayKind::kCall, 1, "a\"b")),
            R"({"thread":1,"tick_ns":12345,"kind":"call","depth":2,"function":"a\"b"})");
  ReplayLine lost = line(ReplayKind::kLost, 0, "");
  lost.arg = 42;
  EXPECT_EQ(format_replay_json(lost), R"({"thread":1,"tick_ns":12345,"kind":"lost","depth":1,"count":42})");
}

}  // namespace
}  // namespace callscope::views
