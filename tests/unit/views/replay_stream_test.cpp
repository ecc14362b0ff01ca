// `print_replay` on small traces written from their text form
// (tests/golden/text_trace.h): the -F error, combined filters and --min
// holding calls, checked on CSV output with addresses for names.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "text_trace.h"
#include "views/replay_view.h"

namespace callscope::views {
namespace {

// main 0x401000 > parse 0x401100 > (helper 0x401200 leaf 100 ns, lexer
// 0x401300 > helper 5 us); then parse again, 40 ns. 1 tick = 1 ns.
constexpr const char* kTrace = R"(clock monotonic
process pid=1 ppid=0 exe=/nonexistent/app argv=app exit=0
thread process=0 tid=1 name=app
0 entry 0 0x401000 sp=0x8000
0 entry 1000 0x401100 sp=0x7f00
0 entry 1100 0x401200 sp=0x7e00
0 exit 1200
0 entry 2000 0x401300 sp=0x7e00
0 entry 2100 0x401200 sp=0x7d00
0 exit 7100
0 exit 8000
0 exit 9000
0 entry 9500 0x401100 sp=0x7f00
0 exit 9540
0 exit 10000
)";

class ReplayStream : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/callscope-replay-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/t.trace";
    auto st = golden::text_to_trace(kTrace, path_);
    ASSERT_TRUE(st) << st.error().message();
    auto t = format::TraceReader::open(path_);
    ASSERT_TRUE(t) << t.error().message();
    trace_ = std::move(*t);
    sym_ = std::make_unique<symbolize::Symbolizer>(*trace_);
  }
  void TearDown() override {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }

  // The CSV rows without the header, or "error: ..." appended.
  std::string run(ReplayOptions o) {
    o.format = OutputFormat::kCsv;
    o.symbols = false;
    char* buf = nullptr;
    size_t len = 0;
    FILE* out = ::open_memstream(&buf, &len);
    Status st = print_replay(*trace_, *sym_, o, out);
    std::fclose(out);
    std::string s(buf, len);
    std::free(buf);
    s.erase(0, s.find('\n') + 1);
    if (!st) s += "error: " + st.error().message();
    return s;
  }

  std::string dir_, path_;
  std::unique_ptr<format::TraceReader> trace_;
  std::unique_ptr<symbolize::Symbolizer> sym_;
};

TEST_F(ReplayStream, AllEventsWithLeafLines) {
  EXPECT_EQ(run({}),
            "0,0,call,1,0x401000,,\n"
            "0,1000,call,2,0x401100,,\n"
            "0,1100,leaf,3,0x401200,100,\n"
            "0,2000,call,3,0x401300,,\n"
            "0,2100,leaf,4,0x401200,5000,\n"
            "0,8000,return,3,0x401300,6000,\n"
            "0,9000,return,2,0x401100,8000,\n"
            "0,9500,leaf,2,0x401100,40,\n"
            "0,10000,return,1,0x401000,10000,\n");
}

TEST_F(ReplayStream, FunctionFilterWithRelativeDepth) {
  ReplayOptions o;
  o.functions = {"0x4011*"};
  o.max_depth = 2;
  // lexer, at depth 2 below parse, becomes a leaf: its child is hidden.
  EXPECT_EQ(run(o),
            "0,1000,call,1,0x401100,,\n"
            "0,1100,leaf,2,0x401200,100,\n"
            "0,2000,leaf,2,0x401300,6000,\n"
            "0,9000,return,1,0x401100,8000,\n"
            "0,9500,leaf,1,0x401100,40,\n");
}

TEST_F(ReplayStream, UnknownFunctionGlobIsAnError) {
  ReplayOptions o;
  o.functions = {"no_such_*"};
  EXPECT_EQ(run(o), "error: no function matches -F 'no_such_*' (names as 'callscope dump --stats' shows them, "
                    "or addresses as 0x401a20)");
  // One glob matching is not enough: the other is named.
  o.functions = {"0x401300", "typo"};
  const std::string out = run(o);
  EXPECT_NE(out.find("0,2000,call,1,0x401300,,\n"), std::string::npos) << out;
  EXPECT_NE(out.find("error: no function matches -F 'typo' ("), std::string::npos) << out;
}

TEST_F(ReplayStream, MinDropsShortCallsWithTheirSubtrees) {
  ReplayOptions o;
  o.min_ns = 1000;
  // helper (100 ns) and the second parse (40 ns) go; lexer's 5 us helper stays.
  EXPECT_EQ(run(o),
            "0,0,call,1,0x401000,,\n"
            "0,1000,call,2,0x401100,,\n"
            "0,2000,call,3,0x401300,,\n"
            "0,2100,leaf,4,0x401200,5000,\n"
            "0,8000,return,3,0x401300,6000,\n"
            "0,9000,return,2,0x401100,8000,\n"
            "0,10000,return,1,0x401000,10000,\n");
  o.min_ns = 7000;  // only main and the first parse last that long
  EXPECT_EQ(run(o),
            "0,0,call,1,0x401000,,\n"
            "0,1000,leaf,2,0x401100,8000,\n"
            "0,10000,return,1,0x401000,10000,\n");
}

TEST_F(ReplayStream, TimeRangeAndThread) {
  ReplayOptions o;
  o.from_ns = 2000;
  o.to_ns = 8500;
  EXPECT_EQ(run(o),
            "0,2000,call,3,0x401300,,\n"
            "0,2100,leaf,4,0x401200,5000,\n"
            "0,8000,return,3,0x401300,6000,\n");
  ReplayOptions bad;
  bad.thread = 3;
  EXPECT_EQ(run(bad), "error: no thread 3 in the trace (it has 1; see 'callscope info')");
}

}  // namespace
}  // namespace callscope::views
