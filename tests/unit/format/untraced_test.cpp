// Threads that ran without being recorded (trace 1.4): the runtime's
// kUntracedThread meta record, read from a raw session, finalized into a
// ThreadRecord flagged kThreadUntraced with its errno; and a 1.3 trace,
// whose thread records are 8 bytes shorter, still reads (with no thread
// untraced). Sessions are built by hand, byte for byte as src/runtime
// writes them.
#include <errno.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "format/finalize.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "profile_test_util.h"

namespace callscope::format {
namespace {

using namespace profile_test;

RawUntracedThread untraced(uint64_t tick, uint32_t tid, int32_t error, const char* name) {
  RawUntracedThread u{};
  u.tick = tick;
  u.tid = tid;
  u.error = error;
  std::strncpy(u.name, name, sizeof u.name - 1);
  return u;
}

RawThreadName rename(uint64_t tick, uint32_t tid, const char* name, const char* old) {
  RawThreadName r{};
  r.tick = tick;
  r.tid = tid;
  std::strncpy(r.name, name, sizeof r.name - 1);
  std::strncpy(r.old_name, old, sizeof r.old_name - 1);
  return r;
}

class Untraced : public ::testing::Test {
 protected:
  void mkdir(const std::string& name) { ASSERT_EQ(::mkdir(dir_.file(name).c_str(), 0700), 0) << name; }
  // Process 100 (base tick 1000, so trace ticks are raw + 0: the origin is
  // its base) with its main thread traced, two threads untraced (101: no
  // space, renamed afterwards; 102: no descriptor) and a record cut short.
  void build() {
    mkdir("100.0");
    const std::string cmd("./app\0", 6);
    MetaFile meta;
    meta.add(RawMetaType::kProcessStart, test::start(100, 1, 1000, ~0u, 0, "/app", cmd), "/app", cmd)
        .add(RawMetaType::kUntracedThread, untraced(40, 101, ENOSPC, "late-worker"))
        .add(RawMetaType::kThreadName, rename(50, 101, "renamed", "late-worker"))
        .add(RawMetaType::kUntracedThread, untraced(60, 102, EMFILE, "io"))
        .add(RawMetaType::kProcessExit, RawProcessExit{90, static_cast<uint32_t>(ExitHow::kExited), 0, 0, 0});
    std::vector<uint8_t> bytes = meta.bytes();
    // A kUntracedThread record too short for its body (a later runtime
    // would not write one; a damaged one must not be taken): skipped.
    const RawMetaHeader cut{static_cast<uint32_t>(RawMetaType::kUntracedThread), 16};
    const auto* p = reinterpret_cast<const uint8_t*>(&cut);
    bytes.insert(bytes.end(), p, p + sizeof cut);
    bytes.insert(bytes.end(), 8, 0);
    write_bytes(dir_.file("100.0/meta"), bytes);
    write_bytes(dir_.file("100.0/t100.ev"), thread_file(100, 100, "app", 1, 80));
  }
  test::TempDir dir_;
};

TEST_F(Untraced, TheRawSessionReadsTheRecords) {
  build();
  auto s = read_raw_session(dir_.path());
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_EQ(s->processes.size(), 1u);
  const auto& u = s->processes[0].untraced;
  ASSERT_EQ(u.size(), 2u);  // the short one is not taken
  EXPECT_EQ(u[0].tick, 40u);
  EXPECT_EQ(u[0].tid, 101u);
  EXPECT_EQ(u[0].error, ENOSPC);
  EXPECT_STREQ(u[0].name, "late-worker");
  EXPECT_EQ(u[1].tid, 102u);
  EXPECT_EQ(u[1].error, EMFILE);
  EXPECT_TRUE(s->warnings.empty());
}

TEST_F(Untraced, FinalizeGivesEachAThreadRecordWithoutEvents) {
  build();
  auto sum = finalize_session(dir_.path(), dir_.file("out.trace"), FinalizeOptions{});
  ASSERT_TRUE(sum.ok()) << sum.error().message();
  ASSERT_EQ(sum->untraced_threads.size(), 2u);
  EXPECT_EQ(sum->untraced_threads[0].pid, 100u);
  EXPECT_EQ(sum->untraced_threads[0].tid, 101u);
  EXPECT_EQ(sum->untraced_threads[0].error, ENOSPC);
  EXPECT_EQ(sum->untraced_threads[0].name, "late-worker");
  EXPECT_EQ(sum->threads, 3u);

  auto r = TraceReader::open(dir_.file("out.trace"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE((*r)->problems().empty());
  EXPECT_EQ((*r)->header().version_minor, kTraceVersionMinor);
  const auto& t = (*r)->threads();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].record.flags & kThreadUntraced, 0u);
  EXPECT_EQ(t[0].record.untraced_error, 0);

  const ThreadRecord& a = t[1].record;
  EXPECT_EQ(a.flags, kThreadUntraced);
  EXPECT_EQ(a.tid, 101u);
  EXPECT_EQ(a.untraced_error, ENOSPC);
  EXPECT_EQ(a.start_tick, 40u);
  EXPECT_EQ(a.end_tick, 40u);
  EXPECT_EQ(a.events, 0u);
  EXPECT_EQ(a.calls, 0u);
  EXPECT_EQ(a.blocks, 0u);
  // The rename after it could not be traced is its, as for any thread.
  EXPECT_EQ(t[1].name, "renamed");
  ASSERT_EQ(t[1].names.size(), 2u);
  EXPECT_EQ(t[1].names[0].name, "late-worker");
  EXPECT_EQ(t[1].names[1].name, "renamed");
  EXPECT_EQ(t[1].names[1].tick, 50u);

  EXPECT_EQ(t[2].record.flags, kThreadUntraced);
  EXPECT_EQ(t[2].record.untraced_error, EMFILE);
  EXPECT_EQ(t[2].name, "io");

  // Its stream reads as empty: no block, no event.
  std::vector<TraceEvent> none = test::read_events(**r, 1);
  EXPECT_TRUE(none.empty());
}

// A 1.3 trace: ThreadRecord was 72 bytes; read with the fields 1.4 added
// as 0, so no thread is untraced.
TEST(UntracedOldTrace, A13TraceReadsWithNoThreadUntraced) {
  test::TempDir dir;
  std::vector<uint8_t> file = test::file_header_bytes();
  FileHeader fh;
  std::memcpy(&fh, file.data(), sizeof fh);
  fh.version_minor = 3;
  seal_file_header(fh);
  std::memcpy(file.data(), &fh, sizeof fh);

  constexpr uint32_t kOldSize = 72;  // sizeof(ThreadRecord) in 1.0 to 1.3
  ThreadRecord old{};
  old.tid = 7;
  old.flags = kThreadMain;
  old.name = {0, 4};
  std::vector<uint8_t> payload(8);
  const uint32_t count = 1;
  std::memcpy(payload.data(), &count, 4);
  std::memcpy(payload.data() + 4, &kOldSize, 4);
  const auto* p = reinterpret_cast<const uint8_t*>(&old);
  payload.insert(payload.end(), p, p + kOldSize);
  const std::string name = "main";
  payload.insert(payload.end(), name.begin(), name.end());
  // What follows the record in the payload (the strings) must not be taken
  // for the new fields.
  test::append_block(file, BlockType::kThreads, 0, 1, 0, payload);
  EndRecord end{0, 2};
  std::vector<uint8_t> end_payload(sizeof end);
  std::memcpy(end_payload.data(), &end, sizeof end);
  test::append_block(file, BlockType::kEnd, 0, 1, 0, end_payload);
  test::write_all(dir.file("old.trace"), file);

  auto r = TraceReader::open(dir.file("old.trace"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)->threads().size(), 1u);
  const ThreadInfo& t = (*r)->threads()[0];
  EXPECT_EQ(t.record.tid, 7u);
  EXPECT_EQ(t.name, "main");
  EXPECT_EQ(t.record.flags & kThreadUntraced, 0u);
  EXPECT_EQ(t.record.untraced_error, 0);
}

}  // namespace
}  // namespace callscope::format
