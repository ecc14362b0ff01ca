// Finalization of what a raw session says about the program around the
// calls: how the program ended when no recorder reaped it, the names its
// threads were given while they ran, and modules loaded again at the same
// address. Sessions are built by hand, byte for byte as src/runtime writes them.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "format/finalize.h"
#include "format/module_map.h"
#include "format/thread_names.h"
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

// ---- thread names -----------------------------------------------------------------

ThreadRecord thread(uint32_t process, uint32_t tid, uint64_t start, uint64_t end, bool clean) {
  ThreadRecord t{};
  t.process_index = process;
  t.tid = tid;
  t.start_tick = start;
  t.end_tick = end;
  t.flags = clean ? kThreadExitedCleanly : 0;
  return t;
}

std::string str(const std::vector<NameChange>& h) {
  std::string s;
  for (const NameChange& c : h) s += std::to_string(c.thread_index) + "@" + std::to_string(c.tick) + ":" + c.name + " ";
  return s;
}

// Which thread a rename names: the one of its tid running then; a tid
// reused after a clean exit; a thread named just before its first hook; a
// clean exit's header name wins over the renames before it.
TEST(ThreadNames, EachRenameFindsItsThread) {
  const std::vector<ThreadRecord> threads = {
      thread(0, 10, 100, 500, true),   // 0: exited cleanly; its header has its exit name
      thread(0, 10, 600, 900, false),  // 1: tid 10 again, still running at the end
      thread(0, 11, 50, 900, false),   // 2: named "early" before its first hook
      thread(1, 11, 0, 900, true),     // 3: another process, same tid
  };
  std::vector<std::string> names = {"a-exit", "b-start", "early", "d-exit"};
  const std::vector<Rename> renames = {
      {0, 10, 550, "y", "x"},       // after thread 0 exited: thread 1, named before its first hook
      {0, 10, 200, "x", "a0"},      // thread 0
      {0, 11, 40, "early", "c0"},   // before thread 2 started: the name it starts with
      {0, 11, 60, "later", "early"},
      {1, 11, 300, "w", "d0"},      // thread 3, which then exited cleanly
      {0, 99, 10, "nobody", ""},    // no such thread
  };
  const std::vector<NameChange> h = resolve_thread_names(threads, names, renames);
  EXPECT_EQ(names, (std::vector<std::string>{"a-exit", "y", "later", "d-exit"}));
  // Thread 1 was never renamed while it ran: no history.
  EXPECT_EQ(str(h), "0@100:a0 0@200:x 2@50:early 2@60:later 3@0:d0 3@300:w ") << str(h);
}

// A thread whose rename carries no old name starts with its header's name
// (read when it started, as it never exited cleanly); a rename to the name
// it has already is no change.
TEST(ThreadNames, StartNameFromTheHeaderAndNoDuplicates) {
  const std::vector<ThreadRecord> threads = {thread(0, 5, 10, 100, false), thread(0, 6, 10, 100, false)};
  std::vector<std::string> names = {"app", "app"};
  const std::vector<NameChange> h =
      resolve_thread_names(threads, names, {{0, 5, 20, "app", ""}, {0, 5, 30, "io", ""}, {0, 5, 40, "io", "io"}});
  EXPECT_EQ(names, (std::vector<std::string>{"io", "app"}));
  EXPECT_EQ(str(h), "0@10:app 0@30:io ") << str(h);
}

// Through finalization: kThreadName meta records of a process killed while
// its threads ran give ThreadRecord::name and the kThreadNames block.
TEST_F(MetadataFinalize, RenamedThreadsOfAKilledProcess) {
  mkdir("100.0");
  const std::string cmd("./srv\0", 6);
  auto rename = [](uint64_t tick, uint32_t tid, const char* name, const char* old) {
    RawThreadName r{};
    r.tick = tick;
    r.tid = tid;
    std::strncpy(r.name, name, sizeof r.name - 1);
    std::strncpy(r.old_name, old, sizeof r.old_name - 1);
    return r;
  };
  write_bytes(dir_.file("100.0/meta"),
              MetaFile()
                  .add(RawMetaType::kProcessStart, test::start(100, 1, 1000, ~0u, 0, "/srv", cmd), "/srv", cmd)
                  .add(RawMetaType::kThreadName, rename(30, 101, "bio_first", "srv"))
                  .add(RawMetaType::kThreadName, rename(40, 102, "bio_aof", "srv"))
                  .add(RawMetaType::kThreadName, rename(50, 101, "bio_close_file", "bio_first"))
                  .bytes());
  write_bytes(dir_.file("100.0/t100.ev"), thread_file(100, 100, "srv", 1, 0));
  write_bytes(dir_.file("100.0/t101.ev"), thread_file(100, 101, "srv", 10, 0));
  write_bytes(dir_.file("100.0/t102.ev"), thread_file(100, 102, "srv", 20, 0));
  auto r = finalize();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header().version_minor, kTraceVersionMinor);
  const auto& t = r->threads();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].name, "srv");
  EXPECT_TRUE(t[0].names.empty());
  EXPECT_EQ(t[1].name, "bio_close_file");
  ASSERT_EQ(t[1].names.size(), 3u);
  EXPECT_EQ(t[1].names[0].name, "srv");
  EXPECT_EQ(t[1].names[0].tick, t[1].record.start_tick);
  EXPECT_EQ(t[1].names[1].name, "bio_first");
  EXPECT_EQ(t[1].names[1].tick, 30u);
  EXPECT_EQ(t[1].names[2].name, "bio_close_file");
  EXPECT_EQ(t[1].names[2].tick, 50u);
  EXPECT_EQ(t[2].name, "bio_aof");
  ASSERT_EQ(t[2].names.size(), 2u);
  EXPECT_EQ(t[2].names[1].tick, 40u);
}

// ---- modules over time -----------------------------------------------------------

ModuleInfo module(uint32_t process, uint64_t low, uint64_t high, uint64_t load, uint64_t unload) {
  ModuleInfo m;
  m.record.process_index = process;
  m.record.low = low;
  m.record.high = high;
  m.record.load_bias = low;
  m.record.load_tick = load;
  if (unload) {
    m.record.unload_tick = unload;
    m.record.flags = kModuleUnloaded;
  }
  return m;
}

// Process 0: the program, and a library loaded three times at 0x7000 (the
// second time a bigger one, reaching 0x9800); process 1 uses the same
// addresses once.
TEST(ModuleMap, TheModuleLoadedAtTheTime) {
  const std::vector<ModuleInfo> mods = {
      module(0, 0x1000, 0x2000, 0, 0),       // 0: the program
      module(0, 0x7000, 0x8000, 100, 200),   // 1
      module(0, 0x7000, 0x9800, 300, 400),   // 2
      module(1, 0x7000, 0x8000, 0, 0),       // 3: another process
      module(0, 0x7000, 0x8000, 500, 0),     // 4: still loaded at the end
  };
  const ModuleMap map(mods);
  EXPECT_TRUE(map.has_reuse(0));
  EXPECT_FALSE(map.has_reuse(1));
  EXPECT_FALSE(map.has_reuse(7));
  EXPECT_TRUE(map.reused(0, 0x7000));
  EXPECT_TRUE(map.reused(0, 0x7fff));
  EXPECT_FALSE(map.reused(0, 0x8800));  // only the bigger load held it
  EXPECT_FALSE(map.reused(0, 0x1000));
  EXPECT_FALSE(map.reused(1, 0x7000));
  EXPECT_EQ(map.covering(0, 0x7100), (std::vector<uint32_t>{1, 2, 4}));
  EXPECT_EQ(map.at(0, 0x7100, 150), 1);
  EXPECT_EQ(map.at(0, 0x7100, 350), 2);
  EXPECT_EQ(map.at(0, 0x7100, 900), 4);
  EXPECT_EQ(map.at(0, 0x7100, 50), 1);    // before any load: the first (its constructors ran before the record)
  EXPECT_EQ(map.at(0, 0x7100, 250), 2);   // between loads: the next one
  EXPECT_EQ(map.at(0, 0x8800, 150), 2);   // only one ever held it
  EXPECT_EQ(map.at(0, 0x1100, 150), 0);
  EXPECT_EQ(map.at(0, 0x5000, 150), ModuleMap::kNone);
  EXPECT_EQ(map.at(1, 0x7100, 150), 3);
}

}  // namespace
}  // namespace callscope::format
