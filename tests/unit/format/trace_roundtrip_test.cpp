// TraceWriter + EventEncoder -> TraceReader: every metadata block type and
// every event kind come back exactly, including a thread whose events span
// two blocks with frames open across the block boundary.
#include <gtest/gtest.h>

#include <cstring>

#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "trace_test_util.h"

namespace callscope::format {
namespace {

using test::InEvent;

// Thread 0: more than kEventsPerBlock events; frames A, B, C are open when
// block 1 ends (C is its last event) and are closed in block 2.
std::vector<InEvent> big_stream() {
  std::vector<InEvent> ev;
  ev.reserve(kEventsPerBlock + 4096);
  uint64_t tick = 1000;
  const uint64_t spA = 0x7ffe12340000ull;
  ev.push_back({EventKind::kEntry, tick, 0x401000, spA, 0});  // A: outermost, open throughout
  uint64_t i = 0;
  while (ev.size() < kEventsPerBlock - 3) {
    ++i;
    tick += (i % 1000 == 0) ? (uint64_t{1} << 40) : 1 + i % 17;
    // Child frames below A (negative sp delta), sometimes above it (positive
    // delta: a signal stack), sometimes with an unknown sp (0).
    uint64_t sp = spA - 16 * (1 + i % 300);
    if (i % 97 == 0) sp = spA + 16 * (1 + i % 5000);
    if (i % 1013 == 0) sp = 0;
    uint64_t addr = 0x401000 + 16 * ((i * 7919) % 5000);  // many functions, deltas of both signs
    if (i % 4099 == 0) addr = 0x7f3a5c000000ull + i;      // a shared library far away
    ev.push_back({EventKind::kEntry, tick, addr, sp, 0});
    if (i % 11 == 0) {  // a grandchild
      ev.push_back({EventKind::kEntry, tick + 1, addr + 0x20, sp == 0 ? 0x7ffe00000000ull : sp - 32, 0});
      ev.push_back({EventKind::kExit, tick + 2, 0, 0, 0});
      tick += 2;
    }
    tick += 1;
    ev.push_back({i % 13 == 0 ? EventKind::kExitUnwound : EventKind::kExit, tick, 0, 0, 0});
  }
  while (ev.size() < kEventsPerBlock - 2) ev.push_back({EventKind::kMark, tick, 0, 0, ev.size()});
  ev.push_back({EventKind::kEntry, tick + 5, 0x402000, spA - 64, 0});       // B
  ev.push_back({EventKind::kEntry, tick + 6, 0x403000, spA - 64 - 4096, 0});  // C: last of block 1
  tick += 6 + (uint64_t{1} << 45);  // a large delta across the boundary
  ev.push_back({EventKind::kExit, tick, 0, 0, 0});                          // closes C: first of block 2
  ev.push_back({EventKind::kExitUnwound, tick + 1, 0, 0, 0});               // closes B
  tick += 1;
  for (uint64_t j = 0; j < 2000; ++j) {
    tick += 3;
    ev.push_back({EventKind::kEntry, tick, 0x404000 + 16 * (j % 9), spA - 16 * (j % 3 + 1), 0});
    ev.push_back({EventKind::kExit, tick + 1, 0, 0, 0});
  }
  ev.push_back({EventKind::kExitTruncated, tick + 10, 0, 0, 0});  // closes A
  return ev;
}

// Thread 1: every kind, in a short stream.
std::vector<InEvent> all_kinds_stream() {
  const uint64_t T = uint64_t{1} << 61;  // ticks far from 0
  return {
      {EventKind::kEntryInherited, T, 0x7f0000001000ull, 0x7ffc00001000ull, 0},
      {EventKind::kEntryInherited, T, 0x7f0000002000ull, 0x7ffc00000f00ull, 0},
      {EventKind::kEntry, T + 5, 0x400100, 0x7ffc00000e00ull, 0},
      {EventKind::kExit, T + 9, 0, 0, 0},
      {EventKind::kExitStray, T + 10, 0x400abc, 0, 0},
      {EventKind::kMark, T + 11, 0, 0, 42},
      {EventKind::kLost, T + 12, 0, 0, 123456789012ull},
      {EventKind::kEntry, T + (uint64_t{1} << 50), 0xffffff600000ull, 0x7ffc00001100ull, 0},  // sp above parent; the vsyscall page, masked to 48 bits as the runtime stores it
      {EventKind::kExitUnwound, T + (uint64_t{1} << 50) + 1, 0, 0, 0},
      {EventKind::kExitStray, T + (uint64_t{1} << 50) + 1, 0, 0, 0},  // address unknown
      {EventKind::kMark, T + (uint64_t{1} << 50) + 2, 0, 0, UINT64_MAX},
      {EventKind::kExitTruncated, T + (uint64_t{1} << 51), 0, 0, 0},
      {EventKind::kExitTruncated, T + (uint64_t{1} << 51), 0, 0, 0},
      {EventKind::kLost, T + (uint64_t{1} << 51), 0, 0, 0},
      // Memory events (1.5): pointers as deltas, up and down; a failed
      // allocation (null, huge size); every op's number.
      {EventKind::kAlloc, T + (uint64_t{1} << 51) + 1, 0x7f0012345670ull, 0, 4096, static_cast<uint8_t>(AllocOp::kMalloc)},
      {EventKind::kAlloc, T + (uint64_t{1} << 51) + 2, 0x1000, 0, 0, static_cast<uint8_t>(AllocOp::kNewArray)},
      {EventKind::kFree, T + (uint64_t{1} << 51) + 2, 0x7f0012345670ull, 0, 0, static_cast<uint8_t>(AllocOp::kFree)},
      {EventKind::kAlloc, T + (uint64_t{1} << 51) + 3, 0, 0, UINT64_MAX - 1, static_cast<uint8_t>(AllocOp::kMmap)},
      {EventKind::kFree, T + (uint64_t{1} << 51) + 4, 0x1000, 0, 0, static_cast<uint8_t>(AllocOp::kApiFree)},
      // Tags (1.6): a push (its id), a pop (0).
      {EventKind::kTag, T + (uint64_t{1} << 51) + 5, 0, 0, 7},
      {EventKind::kAlloc, T + (uint64_t{1} << 51) + 6, 0x2000, 0, 16, static_cast<uint8_t>(AllocOp::kApi)},
      {EventKind::kTag, T + (uint64_t{1} << 51) + 7, 0, 0, 0},
      // A wait for the recorder (1.8): its ticks in the arg column.
      {EventKind::kWait, T + (uint64_t{1} << 51) + 1000007, 0, 0, 1000000},
  };
}

struct Written {
  InfoRecord info{};
  std::vector<ProcessRecord> procs;
  std::vector<ModuleRecord> mods;
  std::vector<ThreadRecord> threads;
  std::vector<std::vector<InEvent>> events;
  std::vector<uint32_t> blocks_per_thread;
};

Written write_trace(const std::string& path) {
  Written w;
  auto created = TraceWriter::create(path, test::make_file_header(), 1);
  EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error().message());
  TraceWriter& writer = **created;

  // Threads 0, 1, 3 have events; thread 2 has none (no block at all).
  w.events = {big_stream(), all_kinds_stream(), {}, test::sample_stream(3, 500)};
  for (uint32_t t = 0; t < w.events.size(); ++t) {
    EventEncoder enc(writer, t);
    for (const InEvent& e : w.events[t]) {
      auto st = test::add_event(enc, e);
      EXPECT_TRUE(st.ok()) << st.error().message();
    }
    EXPECT_TRUE(enc.flush().ok());
    EXPECT_EQ(enc.depth(), 0u);
    EXPECT_EQ(enc.events(), w.events[t].size());
    w.blocks_per_thread.push_back(enc.blocks());
  }

  StringTable istr;
  w.info.start_realtime_ns = 1712345678901234567ull;
  w.info.duration_ticks = uint64_t{1} << 52;
  w.info.main_pid = 4242;
  w.info.main_how = static_cast<uint32_t>(ExitHow::kSignaled);
  w.info.main_code = -1;
  w.info.main_signal = 11;
  w.info.main_core_dumped = 1;
  w.info.flags = 0;
  w.info.cmdline = istr.add(std::string("./app\0--flag\0\0last arg", 23));
  w.info.cwd = istr.add("/home/u/proj");
  w.info.tool_version = istr.add("callscope 9.9.9");
  EXPECT_TRUE(writer.write_records(BlockType::kInfo, std::vector<InfoRecord>{w.info}, istr).ok());

  StringTable pstr;
  ProcessRecord p0{4242, 1, 0, -1, 0, 5000, static_cast<uint32_t>(ExitHow::kExec), 0, 0, 0, {}, {}};
  p0.exe = pstr.add("/bin/sh");
  p0.cmdline = pstr.add(std::string("sh\0-c\0./app", 11));
  ProcessRecord p1{4242, 1, 1, -1, 5000, 90000, static_cast<uint32_t>(ExitHow::kSignaled), -1, 11, 1, {}, {}};
  p1.exe = pstr.add("/home/u/proj/app");
  p1.cmdline = pstr.add(std::string("./app\0--flag", 12));
  ProcessRecord p2{4300, 4242, 0, 1, 6000, 7000, static_cast<uint32_t>(ExitHow::kExited), 3, 0, 0, {}, {}};
  p2.exe = pstr.add("/home/u/proj/app");
  p2.cmdline = pstr.add("");
  w.procs = {p0, p1, p2};
  EXPECT_TRUE(writer.write_records(BlockType::kProcesses, w.procs, pstr).ok());

  StringTable mstr;
  ModuleRecord m0{};
  m0.process_index = 1;
  m0.load_bias = 0x555555554000ull;
  m0.low = 0x555555554000ull;
  m0.high = 0x555555600000ull;
  m0.load_tick = 5001;
  for (int i = 0; i < 20; ++i) m0.build_id[i] = static_cast<uint8_t>(0xa0 + i * 3);
  m0.build_id_len = 20;
  m0.path = mstr.add("/home/u/proj/app");
  ModuleRecord m1{};
  m1.process_index = 1;
  m1.flags = kModuleUnloaded;
  m1.load_bias = 0x7f0000000000ull;
  m1.low = 0x7f0000001000ull;
  m1.high = 0x7f0000009000ull;
  m1.load_tick = 6000;
  m1.unload_tick = 8000;
  const uint8_t bid[8] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
  std::memcpy(m1.build_id, bid, 8);
  m1.build_id_len = 8;
  m1.path = mstr.add("/usr/lib/plugin.so");
  ModuleRecord m2{};
  m2.process_index = 2;
  m2.path = mstr.add("[vdso]");
  w.mods = {m0, m1, m2};
  EXPECT_TRUE(writer.write_records(BlockType::kModules, w.mods, mstr).ok());

  StringTable tstr;
  for (uint32_t t = 0; t < w.events.size(); ++t) {
    ThreadRecord r{};
    r.process_index = t == 3 ? 2 : 1;
    r.tid = 4242 + t;
    r.start_tick = 100 * t;
    r.end_tick = 1000000 + t;
    r.events = w.events[t].size();
    r.calls = 7 * t;
    r.lost_events = t == 1 ? 123456789012ull : 0;
    r.torn_events = t;
    r.flags = t == 0 ? (kThreadMain | kThreadExitedCleanly) : 0;
    r.blocks = w.blocks_per_thread[t];
    r.name = tstr.add(t == 2 ? "" : "thr-" + std::to_string(t));
    w.threads.push_back(r);
  }
  EXPECT_TRUE(writer.write_records(BlockType::kThreads, w.threads, tstr).ok());
  uint64_t total = 0;
  for (auto& e : w.events) total += e.size();
  EXPECT_TRUE(writer.finish(EndRecord{total, writer.blocks_written() + 1}).ok());
  return w;
}

void expect_same_events(const std::vector<TraceEvent>& got, const std::vector<TraceEvent>& want, uint32_t thread) {
  ASSERT_EQ(got.size(), want.size()) << "thread " << thread;
  size_t mismatches = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (++mismatches <= 5) ADD_FAILURE() << "thread " << thread << " event " << i << ": got " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(mismatches, 0u) << "thread " << thread;
}

class TraceRoundTrip : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    path_ = dir_->file("t.cstrace");
    written_ = new Written(write_trace(path_));
  }
  static void TearDownTestSuite() {
    delete written_;
    delete dir_;
  }
  static test::TempDir* dir_;
  static std::string path_;
  static Written* written_;
};
test::TempDir* TraceRoundTrip::dir_ = nullptr;
std::string TraceRoundTrip::path_;
Written* TraceRoundTrip::written_ = nullptr;

TEST_F(TraceRoundTrip, WriterLeavesNoTempFile) {
  size_t n = 0;
  for (auto& e : std::filesystem::directory_iterator(dir_->path())) {
    ++n;
    EXPECT_EQ(e.path().filename(), "t.cstrace");
  }
  EXPECT_EQ(n, 1u);
}

TEST_F(TraceRoundTrip, HeaderAndBlockIndex) {
  auto r = TraceReader::open(path_);
  ASSERT_TRUE(r.ok()) << r.error().message();
  FileHeader want = test::make_file_header();
  EXPECT_EQ(want.check, 0u);
  seal_file_header(want);  // the writer sets the check (1.3)
  EXPECT_NE(want.check, 0u);
  EXPECT_EQ(std::memcmp(&(*r)->header(), &want, sizeof want), 0);
  EXPECT_TRUE((*r)->complete());
  EXPECT_TRUE((*r)->problems().empty()) << (*r)->problems().front();
  EXPECT_EQ((*r)->file_size(), std::filesystem::file_size(path_));

  const Written& w = *written_;
  ASSERT_EQ(w.blocks_per_thread, (std::vector<uint32_t>{2, 1, 0, 1}));
  const auto& blocks = (*r)->blocks();
  ASSERT_EQ(blocks.size(), 4u + 5u);
  struct Want {
    BlockType type;
    uint32_t aux0, count;
    uint64_t first_tick;
  };
  const Want wants[] = {
      {BlockType::kEvents, 0, kEventsPerBlock, w.events[0][0].tick},
      {BlockType::kEvents, 0, static_cast<uint32_t>(w.events[0].size() - kEventsPerBlock),
       w.events[0][kEventsPerBlock].tick},
      {BlockType::kEvents, 1, static_cast<uint32_t>(w.events[1].size()), w.events[1][0].tick},
      {BlockType::kEvents, 3, static_cast<uint32_t>(w.events[3].size()), w.events[3][0].tick},
      {BlockType::kInfo, 0, 1, 0},
      {BlockType::kProcesses, 0, 3, 0},
      {BlockType::kModules, 0, 3, 0},
      {BlockType::kThreads, 0, 4, 0},
      {BlockType::kEnd, 0, 1, 0},
  };
  uint64_t off = sizeof(FileHeader);
  for (size_t i = 0; i < blocks.size(); ++i) {
    SCOPED_TRACE("block " + std::to_string(i));
    EXPECT_EQ(blocks[i].number, i);
    EXPECT_EQ(blocks[i].offset, off);
    EXPECT_EQ(blocks[i].header.magic, kBlockMagic);
    EXPECT_EQ(blocks[i].header.type, static_cast<uint16_t>(wants[i].type));
    EXPECT_EQ(blocks[i].header.flags, kBlockCompressed);
    EXPECT_EQ(blocks[i].header.aux0, wants[i].aux0);
    EXPECT_EQ(blocks[i].header.count, wants[i].count);
    EXPECT_EQ(blocks[i].header.first_tick, wants[i].first_tick);
    off += sizeof(BlockHeader) + blocks[i].header.stored_size;
  }
  EXPECT_EQ(off, (*r)->file_size());
}

TEST_F(TraceRoundTrip, MetadataRecords) {
  auto r = TraceReader::open(path_);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const Written& w = *written_;

  const TraceInfo& info = (*r)->info();
  EXPECT_EQ(std::memcmp(&info.record, &w.info, sizeof w.info), 0);
  EXPECT_EQ(info.record.main_signal, 11);
  EXPECT_EQ(info.record.main_core_dumped, 1u);
  EXPECT_EQ(info.argv, (std::vector<std::string>{"./app", "--flag", "", "last arg"}));
  EXPECT_EQ(info.cwd, "/home/u/proj");
  EXPECT_EQ(info.tool_version, "callscope 9.9.9");

  const auto& procs = (*r)->processes();
  ASSERT_EQ(procs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(std::memcmp(&procs[i].record, &w.procs[i], sizeof(ProcessRecord)), 0) << i;
  EXPECT_EQ(procs[0].record.how, static_cast<uint32_t>(ExitHow::kExec));
  EXPECT_EQ(procs[1].record.incarnation, 1u);
  EXPECT_EQ(procs[2].record.parent_index, 1);
  EXPECT_EQ(procs[2].record.code, 3);
  EXPECT_EQ(procs[0].exe, "/bin/sh");
  EXPECT_EQ(procs[0].argv, (std::vector<std::string>{"sh", "-c", "./app"}));
  EXPECT_EQ(procs[1].exe, "/home/u/proj/app");
  EXPECT_EQ(procs[1].argv, (std::vector<std::string>{"./app", "--flag"}));
  EXPECT_TRUE(procs[2].argv.empty());

  const auto& mods = (*r)->modules();
  ASSERT_EQ(mods.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(std::memcmp(&mods[i].record, &w.mods[i], sizeof(ModuleRecord)), 0) << i;
  EXPECT_EQ(mods[0].path, "/home/u/proj/app");
  EXPECT_EQ(mods[0].build_id, "a0a3a6a9acafb2b5b8bbbec1c4c7cacdd0d3d6d9");
  EXPECT_EQ(mods[1].path, "/usr/lib/plugin.so");
  EXPECT_EQ(mods[1].build_id, "0123456789abcdef");
  EXPECT_EQ(mods[1].record.unload_tick, 8000u);
  EXPECT_EQ(mods[2].path, "[vdso]");
  EXPECT_EQ(mods[2].build_id, "");

  const auto& threads = (*r)->threads();
  ASSERT_EQ(threads.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(std::memcmp(&threads[i].record, &w.threads[i], sizeof(ThreadRecord)), 0) << i;
    EXPECT_EQ(threads[i].name, i == 2 ? "" : "thr-" + std::to_string(i));
    EXPECT_EQ(threads[i].record.events, w.events[i].size());
  }
  EXPECT_EQ(threads[0].record.blocks, 2u);
}

TEST_F(TraceRoundTrip, EveryEventOfEveryThread) {
  auto r = TraceReader::open(path_);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const Written& w = *written_;
  for (uint32_t t = 0; t < w.events.size(); ++t) {
    std::string err;
    const auto got = test::read_events(**r, t, &err);
    EXPECT_EQ(err, "");
    expect_same_events(got, test::expected_events(w.events[t]), t);
    EXPECT_TRUE(test::read_call_events(**r, t) == test::call_events_of(got)) << "thread " << t;
  }
  EXPECT_TRUE((*r)->problems().empty());
  std::string err;
  test::read_events(**r, 4, &err);  // one past the last thread
  EXPECT_NE(err.find("no thread 4"), std::string::npos) << err;
}

TEST_F(TraceRoundTrip, StackCarriedAcrossBlocks) {
  auto r = TraceReader::open(path_);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const auto got = test::read_events(**r, 0);
  ASSERT_GT(got.size(), kEventsPerBlock + 2);
  const TraceEvent& c_entry = got[kEventsPerBlock - 1];  // last event of block 1
  const TraceEvent& c_exit = got[kEventsPerBlock];       // first event of block 2
  EXPECT_EQ(c_entry.kind, EventKind::kEntry);
  EXPECT_EQ(c_entry.addr, 0x403000u);
  EXPECT_EQ(c_entry.depth, 3u);
  EXPECT_EQ(c_exit.kind, EventKind::kExit);
  EXPECT_EQ(c_exit.addr, 0x403000u);
  EXPECT_EQ(c_exit.sp, 0x7ffe12340000ull - 64 - 4096);
  EXPECT_EQ(c_exit.depth, 3u);
  EXPECT_EQ(c_exit.tick, c_entry.tick + (uint64_t{1} << 45));
  const TraceEvent& b_exit = got[kEventsPerBlock + 1];
  EXPECT_EQ(b_exit.kind, EventKind::kExitUnwound);
  EXPECT_EQ(b_exit.addr, 0x402000u);
  EXPECT_EQ(b_exit.depth, 2u);
  EXPECT_EQ(got.back().kind, EventKind::kExitTruncated);
  EXPECT_EQ(got.back().addr, 0x401000u);
  EXPECT_EQ(got.back().depth, 1u);
}

TEST_F(TraceRoundTrip, CallbackStopsEarly) {
  auto r = TraceReader::open(path_);
  ASSERT_TRUE(r.ok()) << r.error().message();
  size_t n = 0;
  auto st = (*r)->for_each_event(0, [&](const TraceEvent&) { return ++n < 10; });
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(n, 10u);
}

TEST(format_trace_writer, CreateReportsTempPathOnFailure) {
  test::TempDir dir;
  auto w = TraceWriter::create(dir.file("missing-dir/t.cstrace"), test::make_file_header(), 1);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message().find("missing-dir/t.cstrace.tmp."), std::string::npos) << w.error().message();
}

TEST(format_trace_writer, UnfinishedWriterRemovesItsTempFile) {
  test::TempDir dir;
  {
    auto w = TraceWriter::create(dir.file("t.cstrace"), test::make_file_header(), 1);
    ASSERT_TRUE(w.ok());
    EventEncoder enc(**w, 0);
    ASSERT_TRUE(enc.add(EventKind::kEntry, 1, 0x1000, 0x7000, 0).ok());
    ASSERT_TRUE(enc.flush().ok());
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(format_trace_writer, ExitOnEmptyStackIsAnError) {
  test::TempDir dir;
  auto w = TraceWriter::create(dir.file("t.cstrace"), test::make_file_header(), 1);
  ASSERT_TRUE(w.ok());
  EventEncoder enc(**w, 0);
  auto st = enc.add(EventKind::kExit, 1, 0, 0, 0);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("empty stack"), std::string::npos);
}

}  // namespace
}  // namespace callscope::format
