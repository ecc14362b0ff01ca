// Finalization of what a raw session says about the program around the
// calls: how the program ended when no recorder reaped it, the names its
// threads were given while they ran, and modules loaded again at the same
// address. Sessions are built by hand, byte for byte as src/runtime writes them.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "format/finalize.h"
#include "format/trace_reader.h"
#include "profile_test_util.h"

namespace callscope::format {
namespace {

using namespace profile_test;

class MetadataFinalize : public ::testing::Test {
 protected:
  void mkdir(const std::string& name) { ASSERT_EQ(::mkdir(dir_.file(name).c_str(), 0700), 0) << name; }
  std::unique_ptr<TraceReader> finalize() {
    auto sum = finalize_session(dir_.path(), dir_.file("out.trace"), FinalizeOptions{});
    EXPECT_TRUE(sum.ok()) << sum.error().message();
    if (!sum.ok()) return nullptr;
    auto r = TraceReader::open(dir_.file("out.trace"));
    EXPECT_TRUE(r.ok()) << r.error().message();
    if (!r.ok()) return nullptr;
    EXPECT_TRUE((*r)->problems().empty());
    return std::move(*r);
  }
  test::TempDir dir_;
};

// ---- how the program ended ------------------------------------------------------
//
// `record` was killed before it could reap anything: recorder.meta has no
// child status. 100.0 (sh) exec'd into 100.1, which exited 3; 50.0, forked
// by 100.1 (a smaller pid, started later), exited 7.
TEST_F(MetadataFinalize, ProgramExitWithoutTheRecordersStatus) {
  mkdir("100.0");
  mkdir("100.1");
  mkdir("50.0");
  const std::string cmd("./app\0", 6);
  write_bytes(dir_.file("100.0/meta"),
              MetaFile().add(RawMetaType::kProcessStart, test::start(100, 1, 1000, ~0u, 0, "/bin/sh", cmd), "/bin/sh", cmd).bytes());
  write_bytes(dir_.file("100.1/meta"),
              MetaFile()
                  .add(RawMetaType::kProcessStart, test::start(100, 1, 2000, ~0u, 0, "/app", cmd), "/app", cmd)
                  .add(RawMetaType::kProcessExit, RawProcessExit{500, static_cast<uint32_t>(ExitHow::kExited), 3, 0, 0})
                  .bytes());
  write_bytes(dir_.file("50.0/meta"),
              MetaFile()
                  .add(RawMetaType::kProcessStart, test::start(50, 100, 2100, 1, kRawProcessForked, "/app", cmd), "/app", cmd)
                  .add(RawMetaType::kProcessExit, RawProcessExit{50, static_cast<uint32_t>(ExitHow::kExited), 7, 0, 0})
                  .bytes());
  const std::string cwd = "/home/u", rec_cmd("callscope\0record\0./app", 23);
  write_bytes(dir_.file("recorder.meta"),
              MetaFile()
                  .add(RawMetaType::kRecorderInfo,
                       RawRecorderInfo{1, static_cast<uint32_t>(cwd.size()), static_cast<uint32_t>(rec_cmd.size())}, cwd,
                       rec_cmd)
                  .bytes());
  auto r = finalize();
  ASSERT_TRUE(r);
  const InfoRecord& info = r->info().record;
  EXPECT_EQ(info.main_pid, 100u);
  EXPECT_EQ(info.main_how, static_cast<uint32_t>(ExitHow::kExited));
  EXPECT_EQ(info.main_code, 3);
  ASSERT_EQ(r->processes().size(), 3u);
  EXPECT_EQ(r->processes()[0].record.pid, 50u);
  EXPECT_EQ(r->processes()[0].record.code, 7);
}

}  // namespace
}  // namespace callscope::format
