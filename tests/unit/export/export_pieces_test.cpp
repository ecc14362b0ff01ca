#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "export/aggregate_exports.h"
#include "export/flame.h"
#include "export/protobuf.h"

namespace callscope::exporter {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TEST(ProtoWriter, VarintsAndFields) {
  std::string out;
  ProtoWriter w(out);
  w.varint(1, 150);  // the protobuf documentation's example: 08 96 01
  EXPECT_EQ(out, bytes({0x08, 0x96, 0x01}));
  out.clear();
  w.bytes(2, "testing");
  EXPECT_EQ(out, bytes({0x12, 0x07}) + "testing");
  out.clear();
  w.varint(50, 1);  // a field number past 15 takes a two-byte tag
  EXPECT_EQ(out, bytes({0x90, 0x03, 0x01}));
  EXPECT_EQ(varint_size(0), 1u);
  EXPECT_EQ(varint_size(127), 1u);
  EXPECT_EQ(varint_size(128), 2u);
  EXPECT_EQ(varint_size(~uint64_t{0}), 10u);
}

TEST(ProtoWriter, NestedMessagesGetTheirLengthInFront) {
  std::string out;
  ProtoWriter w(out);
  w.message(3, [](ProtoWriter& m) { m.varint(1, 150); });
  EXPECT_EQ(out, bytes({0x1a, 0x03, 0x08, 0x96, 0x01}));
  // A body of 200 bytes: a two-byte length.
  out.clear();
  w.message(1, [](ProtoWriter& m) { m.bytes(2, std::string(197, 'x')); });
  ASSERT_EQ(out.size(), 1u + 2 + 200);
  EXPECT_EQ(out.substr(0, 3), bytes({0x0a, 0xc8, 0x01}));
  out.clear();
  w.packed(4, std::vector<uint64_t>{3, 270, 86942});  // the documentation's packed example
  EXPECT_EQ(out, bytes({0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05}));
  out.clear();
  w.packed(4, std::vector<uint64_t>{});  // empty: nothing at all
  EXPECT_TRUE(out.empty());
}

TEST(XmlText, EscapesAndReplacesWhatXmlRefuses) {
  EXPECT_EQ(xml_text("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(xml_text("std::vector<int>::push_back(int&&)"), "std::vector&lt;int&gt;::push_back(int&amp;&amp;)");
  EXPECT_EQ(xml_text("tab\there\x01"), "tab?here?");
  EXPECT_EQ(xml_text("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x94\xa5"), "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x94\xa5");
  // Not UTF-8: a lone continuation byte, a truncated sequence, overlongs,
  // a surrogate, past U+10FFFF, F5-FF, U+FFFE and U+FFFF.
  EXPECT_EQ(xml_text("\x80x"), "?x");
  EXPECT_EQ(xml_text("\xe2\x86"), "??");
  EXPECT_EQ(xml_text("\xc0\xaf"), "??");
  EXPECT_EQ(xml_text("\xe0\x80\xaf"), "???");
  EXPECT_EQ(xml_text("\xf0\x80\x80\xaf"), "????");
  EXPECT_EQ(xml_text("\xed\xa0\x80"), "???");
  EXPECT_EQ(xml_text("\xf4\x90\x80\x80"), "????");
  EXPECT_EQ(xml_text("\xf5\x80\x80\x80"), "????");
  EXPECT_EQ(xml_text("\xff"), "?");
  EXPECT_EQ(xml_text("\xef\xbf\xbe\xef\xbf\xbf"), "??????");
  EXPECT_EQ(xml_text("\xef\xbf\xbd"), "\xef\xbf\xbd");  // U+FFFD is fine
}

TEST(Folded, FramesCannotSplitALine) {
  EXPECT_EQ(folded_frame("a;b"), "a:b");
  EXPECT_EQ(folded_frame("two\nlines"), "two lines");
  EXPECT_EQ(folded_frame("operator()(int)"), "operator()(int)");
}

TEST(Folded, FramesAreSafeOnATerminal) {
  // Folded stacks are text, often read on a terminal (export -o -): a thread
  // named "\e]0;PWN\a\e[2J" must not retitle and clear it. As the text
  // views show names (terminal_safe): control bytes, C1 controls and bytes
  // that are not UTF-8 as \xNN; valid UTF-8 kept.
  EXPECT_EQ(folded_frame("[thread 0: x\x1b]0;PWN\x07\x1b[2J]"), "[thread 0: x\\x1b]0:PWN\\x07\\x1b[2J]");
  EXPECT_EQ(folded_frame("tab\there"), "tab\\there");
  EXPECT_EQ(folded_frame("csi\xc2\x9b"), "csi\\xc2\\x9b");
  EXPECT_EQ(folded_frame("bad\xff"), "bad\\xff");
  EXPECT_EQ(folded_frame("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x94\xa5"), "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x94\xa5");
}

TEST(Weight, ParsedOrRefusedByName) {
  EXPECT_EQ(*parse_weight("self"), Weight::kSelf);
  EXPECT_EQ(*parse_weight("total"), Weight::kTotal);
  EXPECT_EQ(*parse_weight("calls"), Weight::kCalls);
  auto bad = parse_weight("bytes");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("valid: self, total, calls"), std::string::npos);
}

TEST(Gzip, RoundTripsThroughZlib) {
  std::string data;
  for (int i = 0; i < 10000; ++i) data += std::to_string(i * 7919 % 1000) + ";";
  auto gz = gzip(data);
  ASSERT_TRUE(gz.ok());
  EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);  // the gzip magic
  EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string back(data.size() + 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(gz->data());
  z.avail_in = static_cast<uInt>(gz->size());
  z.next_out = reinterpret_cast<Bytef*>(back.data());
  z.avail_out = static_cast<uInt>(back.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  back.resize(z.total_out);
  inflateEnd(&z);
  EXPECT_EQ(back, data);
}

}  // namespace
}  // namespace callscope::exporter
