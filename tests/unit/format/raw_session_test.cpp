// The raw session the runtime leaves behind (meta files, thread event files)
// built by hand, byte for byte as src/runtime writes it; decoded with
// RawThreadFile and turned into a trace with finalize_session().
#include "format/raw_session.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "format/finalize.h"
#include "format/trace_reader.h"
#include "trace_test_util.h"

namespace callscope::format {
namespace {

using test::start;

// ---- builders -------------------------------------------------------------

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  ASSERT_TRUE(f.good()) << path;
}

// Records as process.cpp write_meta() makes them: header, body, extras, zero
// padding to a multiple of 8.
class MetaFile {
 public:
  MetaFile() {
    RawFileHeader fh{};
    std::memcpy(fh.magic, kRawMetaMagic, sizeof fh.magic);
    fh.version = kRawVersion;
    add(RawMetaType::kFileHeader, fh);
  }
  template <class T>
  MetaFile& add(RawMetaType type, const T& body, const std::string& extra1 = "", const std::string& extra2 = "") {
    const size_t raw = sizeof(RawMetaHeader) + sizeof body + extra1.size() + extra2.size();
    const RawMetaHeader h{static_cast<uint32_t>(type), static_cast<uint32_t>((raw + 7) & ~size_t{7})};
    append(&h, sizeof h);
    append(&body, sizeof body);
    append(extra1.data(), extra1.size());
    append(extra2.data(), extra2.size());
    bytes_.resize(bytes_.size() + (h.size - raw), 0);
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void append(const void* p, size_t n) {
    bytes_.insert(bytes_.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  }
  std::vector<uint8_t> bytes_;
};

// A thread file as thread.cpp makes it: a 4096-byte header page, then words.
class ThreadFile {
 public:
  ThreadFile(uint32_t pid, uint32_t tid, const char* name) {
    std::memcpy(h_.magic, kRawThreadMagic, sizeof h_.magic);
    h_.version = kRawVersion;
    h_.header_size = kRawThreadHeaderSize;
    h_.pid = pid;
    h_.tid = tid;
    h_.flags = pid == tid ? kRawThreadMain : 0;
    std::strncpy(h_.name, name, sizeof h_.name);
  }
  RawThreadHeader& header() { return h_; }
  static uint64_t w0(RawKind k, uint64_t tick) { return (tick << kRawKindBits) | static_cast<uint8_t>(k); }
  ThreadFile& sp_base(uint64_t tick, uint64_t sp) { return words({w0(RawKind::kSpBase, tick), sp}); }
  ThreadFile& entry(RawKind k, uint64_t tick, uint64_t addr, int16_t rel) {
    return words({w0(k, tick), (addr & kRawAddrMask) | (uint64_t{static_cast<uint16_t>(rel)} << 48)});
  }
  ThreadFile& exit(RawKind k, uint64_t tick) { return words({w0(k, tick)}); }
  ThreadFile& two(RawKind k, uint64_t tick, uint64_t w1) { return words({w0(k, tick), w1}); }
  ThreadFile& words(std::initializer_list<uint64_t> ws) {
    w_.insert(w_.end(), ws);
    return *this;
  }
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> b(kRawThreadHeaderSize + 8 * w_.size(), 0);
    std::memcpy(b.data(), &h_, sizeof h_);
    if (!w_.empty()) std::memcpy(b.data() + kRawThreadHeaderSize, w_.data(), 8 * w_.size());
    return b;
  }

 private:
  RawThreadHeader h_{};
  std::vector<uint64_t> w_;
};

constexpr uint64_t kSB = 0x7fff0000;   // first sp base of the main thread of 100.1
constexpr uint64_t kSB2 = 0x7ffe0000;  // its second sp base
constexpr int16_t kSpUnknownRel = -32768;

// The main thread of process 100.1: every raw kind, zero words, two damaged
// words, and a torn entry (w0 stored, w1 not) before a zero tail.
ThreadFile main_thread_100_1() {
  ThreadFile t(100, 100, "main-thr");
  t.header().start_tick = 5;
  t.header().lost_events = 9;  // more dropped after the last kLost record
  t.sp_base(10, kSB)
      .entry(RawKind::kEntry, 10, 0x401000, 1)
      .words({0})
      .entry(RawKind::kEntry, 20, 0x401100, 3)
      .exit(RawKind::kExit, 30)
      .two(RawKind::kMark, 35, 7)
      .words({0, 0})
      .two(RawKind::kLost, 40, 5)
      .entry(RawKind::kEntryInherited, 10, 0x401000, 1)  // original tick: before the kLost
      .exit(RawKind::kResume, 45)
      .words({(41u << 8) | 0x2a, (41u << 8) | 0x00})      // unknown kinds
      .entry(RawKind::kEntry, 50, 0xffff000000401200ull, -2)  // bits above 48 are not the address
      .exit(RawKind::kExitUnwound, 60)
      .two(RawKind::kExitStray, 70, 0x402000)
      .sp_base(75, kSB2)
      .entry(RawKind::kEntry, 80, 0x401300, 5)
      .entry(RawKind::kEntry, 81, 0x401400, kSpUnknownRel)
      .exit(RawKind::kExit, 82)
      .words({ThreadFile::w0(RawKind::kEntry, 90), 0, 0, 0});  // torn, then the chunk's zero tail
  return t;
}

struct Expect {
  RawKind kind;
  uint64_t tick, addr, sp, arg;
};

TEST(format_raw_thread_file, DecodesEveryKindSkipsZerosCountsTornAndBad) {
  test::TempDir dir;
  const std::string path = dir.file("t100.ev");
  write_bytes(path, main_thread_100_1().bytes());
  auto f = RawThreadFile::open(path);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ((*f)->header().tid, 100u);
  EXPECT_EQ((*f)->header().lost_events, 9u);
  const Expect want[] = {
      {RawKind::kEntry, 10, 0x401000, kSB - 16, 0},
      {RawKind::kEntry, 20, 0x401100, kSB - 48, 0},
      {RawKind::kExit, 30, 0, 0, 0},
      {RawKind::kMark, 35, 0, 0, 7},
      {RawKind::kLost, 40, 0, 0, 5},
      {RawKind::kEntryInherited, 10, 0x401000, kSB - 16, 0},
      {RawKind::kResume, 45, 0, 0, 0},
      {RawKind::kEntry, 50, 0x401200, kSB + 32, 0},
      {RawKind::kExitUnwound, 60, 0, 0, 0},
      {RawKind::kExitStray, 70, 0x402000, 0, 0},
      {RawKind::kEntry, 80, 0x401300, kSB2 - 80, 0},
      {RawKind::kEntry, 81, 0x401400, 0, 0},  // sp unknown
      {RawKind::kExit, 82, 0, 0, 0},
  };
  RawEvent e{};
  for (size_t i = 0; i < std::size(want); ++i) {
    SCOPED_TRACE("event " + std::to_string(i));
    ASSERT_TRUE((*f)->next(e));
    EXPECT_EQ(e.kind, want[i].kind);
    EXPECT_EQ(e.tick, want[i].tick);
    EXPECT_EQ(e.addr, want[i].addr);
    EXPECT_EQ(e.sp, want[i].sp);
    EXPECT_EQ(e.arg, want[i].arg);
  }
  EXPECT_FALSE((*f)->next(e));  // the torn entry is not returned
  EXPECT_FALSE((*f)->next(e));
  EXPECT_EQ((*f)->torn_events(), 1u);
  EXPECT_EQ((*f)->bad_words(), 2u);
}

TEST(format_raw_thread_file, TornAsVeryLastWordAndMaxTick) {
  test::TempDir dir;
  ThreadFile t(7, 8, "x");
  t.two(RawKind::kMark, kRawTickMask, 1).exit(RawKind::kExit, kRawTickMask).words({ThreadFile::w0(RawKind::kLost, 3)});
  write_bytes(dir.file("t8.ev"), t.bytes());
  auto f = RawThreadFile::open(dir.file("t8.ev"));
  ASSERT_TRUE(f.ok()) << f.error().message();
  RawEvent e{};
  ASSERT_TRUE((*f)->next(e));
  EXPECT_EQ(e.kind, RawKind::kMark);
  EXPECT_EQ(e.tick, kRawTickMask);
  ASSERT_TRUE((*f)->next(e));
  EXPECT_EQ(e.kind, RawKind::kExit);
  EXPECT_EQ(e.tick, kRawTickMask);
  EXPECT_FALSE((*f)->next(e));
  EXPECT_EQ((*f)->torn_events(), 1u);
}

// Memory events (1.5): kAlloc takes three words, kFree two; an op no
// runtime writes is a bad event, an alloc whose third word is missing torn.
TEST(format_raw_thread_file, MemoryEventsThreeWordsTornAndBadOps) {
  test::TempDir dir;
  ThreadFile t(9, 10, "m");
  const uint64_t malloc_op = uint64_t{static_cast<uint8_t>(AllocOp::kMalloc)} << 56;
  const uint64_t free_op = uint64_t{static_cast<uint8_t>(AllocOp::kFree)} << 56;
  t.words({ThreadFile::w0(RawKind::kAlloc, 5), 0x7f0000001000ull | malloc_op, 64 + 1,
           ThreadFile::w0(RawKind::kAlloc, 6), malloc_op, 0 + 1,  // a failed malloc(0): null, size 0
           ThreadFile::w0(RawKind::kFree, 7), 0x7f0000001000ull | free_op,
           ThreadFile::w0(RawKind::kAlloc, 8), 0x1000 | (uint64_t{99} << 56), 2,  // no op 99
           ThreadFile::w0(RawKind::kAlloc, 9), 0x2000 | malloc_op, 0, 0});        // torn: size not stored
  write_bytes(dir.file("t10.ev"), t.bytes());
  auto f = RawThreadFile::open(dir.file("t10.ev"));
  ASSERT_TRUE(f.ok()) << f.error().message();
  RawEvent e{};
  ASSERT_TRUE((*f)->next(e));
  EXPECT_EQ(e.kind, RawKind::kAlloc);
  EXPECT_EQ(e.tick, 5u);
  EXPECT_EQ(e.addr, 0x7f0000001000ull);
  EXPECT_EQ(e.arg, 64u);
  EXPECT_EQ(e.op, static_cast<uint8_t>(AllocOp::kMalloc));
  ASSERT_TRUE((*f)->next(e));
  EXPECT_EQ(e.kind, RawKind::kAlloc);
  EXPECT_EQ(e.addr, 0u);
  EXPECT_EQ(e.arg, 0u);
  ASSERT_TRUE((*f)->next(e));
  EXPECT_EQ(e.kind, RawKind::kFree);
  EXPECT_EQ(e.tick, 7u);
  EXPECT_EQ(e.addr, 0x7f0000001000ull);
  EXPECT_EQ(e.op, static_cast<uint8_t>(AllocOp::kFree));
  EXPECT_FALSE((*f)->next(e));
  EXPECT_EQ((*f)->bad_words(), 1u);
  EXPECT_EQ((*f)->torn_events(), 1u);
}

// Tags (1.6): a push carries the id, a pop kRawTagPop (never 0: a zero
// second word is a torn event), read as 0.
TEST(format_raw_thread_file, TagsPushAndPop) {
  test::TempDir dir;
  ThreadFile t(9, 11, "t");
  t.words({ThreadFile::w0(RawKind::kTag, 5), 3, ThreadFile::w0(RawKind::kTag, 6), kRawTagPop,
           ThreadFile::w0(RawKind::kTag, 7), 0});  // torn
  write_bytes(dir.file("t11.ev"), t.bytes());
  auto f = RawThreadFile::open(dir.file("t11.ev"));
  ASSERT_TRUE(f.ok()) << f.error().message();
  RawEvent e{};
  ASSERT_TRUE((*f)->next(e));
  EXPECT_EQ(e.kind, RawKind::kTag);
  EXPECT_EQ(e.arg, 3u);
  ASSERT_TRUE((*f)->next(e));
  EXPECT_EQ(e.kind, RawKind::kTag);
  EXPECT_EQ(e.tick, 6u);
  EXPECT_EQ(e.arg, 0u);
  EXPECT_FALSE((*f)->next(e));
  EXPECT_EQ((*f)->torn_events(), 1u);
}

TEST(format_raw_thread_file, OpenErrors) {
  test::TempDir dir;
  write_bytes(dir.file("short.ev"), std::vector<uint8_t>(50, 0));
  auto f = RawThreadFile::open(dir.file("short.ev"));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("too short"), std::string::npos) << f.error().message();

  std::vector<uint8_t> bad = ThreadFile(1, 1, "a").bytes();
  bad[0] = 'X';
  write_bytes(dir.file("bad.ev"), bad);
  f = RawThreadFile::open(dir.file("bad.ev"));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("not a callscope thread file"), std::string::npos) << f.error().message();

  f = RawThreadFile::open(dir.file("none.ev"));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("none.ev"), std::string::npos) << f.error().message();

  // A header page and no events at all: opens, yields nothing.
  write_bytes(dir.file("empty.ev"), ThreadFile(1, 1, "a").bytes());
  f = RawThreadFile::open(dir.file("empty.ev"));
  ASSERT_TRUE(f.ok()) << f.error().message();
  RawEvent e{};
  EXPECT_FALSE((*f)->next(e));
  EXPECT_EQ((*f)->torn_events(), 0u);
}

// ---- a whole session --------------------------------------------------------
//
//   100.0  exe /bin/sh, exec'd into 100.1             thread t100 (frame left open)
//   100.1  the program; runtime says exited 0, the    t100 (all kinds), t101 (no events)
//          recorder reaped it killed by signal 9
//   200.0  forked by 100.1 (parent_n 1)               t200 (inherited frame, clean exit)
//   400.0  damaged meta: skipped with a warning
// Clock: kMonotonic, base ticks 1000 / 5000 / 6000, so trace offsets 0 / 4000 / 5000.

RawModule module(uint64_t tick, uint64_t bias, uint64_t low, uint64_t high, uint32_t bid_len, uint32_t flags,
                 const std::string& path) {
  RawModule m{};
  m.tick = tick;
  m.load_bias = bias;
  m.low = low;
  m.high = high;
  for (uint32_t i = 0; i < bid_len; ++i) m.build_id[i] = static_cast<uint8_t>(0x10 + i);
  m.build_id_len = bid_len;
  m.flags = flags;
  m.path_len = static_cast<uint32_t>(path.size());
  return m;
}

void build_session(const std::string& dir) {
  auto mk = [&](const std::string& name) { ASSERT_EQ(::mkdir((dir + "/" + name).c_str(), 0700), 0) << name; };
  mk("100.0");
  mk("100.1");
  mk("200.0");
  mk("300.0x");  // not a process directory name
  mk("400.0");

  const std::string sh_cmd("sh\0-c\0./app\0", 12), app_cmd("./app\0", 6);
  MetaFile m0;
  m0.add(RawMetaType::kProcessStart, start(100, 1, 1000, ~0u, 0, "/bin/sh", sh_cmd), "/bin/sh", sh_cmd);
  write_bytes(dir + "/100.0/meta", m0.bytes());
  ThreadFile t0(100, 100, "sh");
  t0.header().start_tick = 1;
  t0.sp_base(5, 0x7ff00000).entry(RawKind::kEntry, 5, 0x500000, 0);
  write_bytes(dir + "/100.0/t100.ev", t0.bytes());

  MetaFile m1;
  m1.add(RawMetaType::kProcessStart, start(100, 1, 5000, ~0u, 0, "/home/u/app", app_cmd), "/home/u/app", app_cmd)
      .add(RawMetaType::kModule, module(3, 0x555555554000ull, 0x555555554000ull, 0x555555600000ull, 20, 0, "/home/u/app"),
           "/home/u/app")
      .add(RawMetaType::kModule, module(50, 0x7f0000000000ull, 0x7f0000001000ull, 0x7f0000005000ull, 4, 0, "/usr/lib/p.so"),
           "/usr/lib/p.so")
      .add(RawMetaType::kModule, module(70, 0x7f0000000000ull, 0x7f0000001000ull, 0, 0, kRawModuleUnload, ""))
      .add(RawMetaType::kProcessExit, RawProcessExit{200, static_cast<uint32_t>(ExitHow::kExited), 0, 0, 0})
      .add(RawMetaType::kCalibration, RawCalibration{5300, 5300});
  write_bytes(dir + "/100.1/meta", m1.bytes());
  write_bytes(dir + "/100.1/t100.ev", main_thread_100_1().bytes());
  ThreadFile idle(100, 101, "idle");
  idle.header().start_tick = 7;
  idle.header().end_tick = 9;
  write_bytes(dir + "/100.1/t101.ev", idle.bytes());

  MetaFile m2;
  m2.add(RawMetaType::kProcessStart, start(200, 100, 6000, 1, kRawProcessForked, "/home/u/app", app_cmd),
         "/home/u/app", app_cmd);
  write_bytes(dir + "/200.0/meta", m2.bytes());
  ThreadFile t2(200, 200, "child");
  t2.header().start_tick = 1;
  t2.header().end_tick = 100;
  t2.sp_base(1, kSB)
      .entry(RawKind::kEntryInherited, 1, 0x401000, 1)
      .entry(RawKind::kEntry, 5, 0x405000, 4)
      .exit(RawKind::kExit, 6)
      .exit(RawKind::kExit, 7);
  write_bytes(dir + "/200.0/t200.ev", t2.bytes());

  write_bytes(dir + "/400.0/meta", std::vector<uint8_t>(64, 0x5a));

  const std::string cwd = "/home/u", rec_cmd("callscope\0record\0./app", 23);
  MetaFile rec;
  rec.add(RawMetaType::kRecorderInfo,
          RawRecorderInfo{1600000000000000000ull, static_cast<uint32_t>(cwd.size()), static_cast<uint32_t>(rec_cmd.size())},
          cwd, rec_cmd)
      .add(RawMetaType::kChildStatus,
           RawChildStatus{100, static_cast<uint32_t>(ExitHow::kSignaled), 0, 9, 0, 1, 9000});
  write_bytes(dir + "/recorder.meta", rec.bytes());
}

TEST(format_raw_session, ReadRawSession) {
  test::TempDir dir;
  build_session(dir.path());
  auto s = read_raw_session(dir.path());
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_EQ(s->processes.size(), 3u);
  EXPECT_EQ(s->processes[0].pid, 100u);
  EXPECT_EQ(s->processes[0].incarnation, 0u);
  EXPECT_EQ(s->processes[1].incarnation, 1u);
  EXPECT_EQ(s->processes[2].pid, 200u);
  EXPECT_EQ(s->processes[0].exe, "/bin/sh");
  EXPECT_EQ(s->processes[0].cmdline, std::string("sh\0-c\0./app\0", 12));
  EXPECT_FALSE(s->processes[0].exit.has_value());
  ASSERT_TRUE(s->processes[1].exit.has_value());
  EXPECT_EQ(s->processes[1].exit->tick, 200u);
  ASSERT_EQ(s->processes[1].modules.size(), 3u);
  EXPECT_EQ(s->processes[1].modules[1].path, "/usr/lib/p.so");
  EXPECT_EQ(s->processes[1].modules[2].path, "");
  ASSERT_EQ(s->processes[1].calibrations.size(), 1u);
  ASSERT_EQ(s->processes[1].thread_files.size(), 2u);
  EXPECT_EQ(s->processes[1].thread_files[0], dir.path() + "/100.1/t100.ev");
  EXPECT_EQ(s->processes[1].thread_files[1], dir.path() + "/100.1/t101.ev");
  ASSERT_TRUE(s->recorder.has_value());
  EXPECT_EQ(s->recorder_cwd, "/home/u");
  EXPECT_EQ(s->recorder_cmdline, std::string("callscope\0record\0./app", 23));
  ASSERT_EQ(s->child_statuses.size(), 1u);
  ASSERT_FALSE(s->warnings.empty());
  for (const auto& w : s->warnings) EXPECT_NE(w.find("400.0/meta"), std::string::npos) << w;
}

TEST(format_raw_session, ThreadFilesInTidOrderNotTextOrder) {
  // Thread indexes follow this order: the main thread (tid = pid) first
  // even when its workers' tids have one more digit.
  std::vector<std::string> files = {"/s/1.0/t100001.ev", "/s/1.0/t99998.ev", "/s/1.0/t99998.1.ev",
                                    "/s/1.0/t100000.ev", "/s/1.0/t9.ev", "/s/1.0/tx.ev"};
  sort_thread_files(files);
  EXPECT_EQ(files, (std::vector<std::string>{"/s/1.0/t9.ev", "/s/1.0/t99998.ev", "/s/1.0/t99998.1.ev",
                                             "/s/1.0/t100000.ev", "/s/1.0/t100001.ev", "/s/1.0/tx.ev"}));
  std::vector<std::string> prof = {"t100000.prof", "t99999.prof"};
  sort_thread_files(prof);
  EXPECT_EQ(prof, (std::vector<std::string>{"t99999.prof", "t100000.prof"}));
}

TEST(format_raw_session, EmptyDirectoryIsNotASession) {
  test::TempDir dir;
  auto s = read_raw_session(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("no callscope session"), std::string::npos) << s.error().message();
}

class Finalized : public ::testing::Test {
 protected:
  void SetUp() override {
    build_session(dir_.path());
    auto sum = finalize_session(dir_.path(), dir_.file("out.cstrace"), FinalizeOptions{});
    ASSERT_TRUE(sum.ok()) << sum.error().message();
    summary_ = *sum;
    auto r = TraceReader::open(dir_.file("out.cstrace"));
    ASSERT_TRUE(r.ok()) << r.error().message();
    reader_ = std::move(*r);
  }
  test::TempDir dir_;
  FinalizeSummary summary_;
  std::unique_ptr<TraceReader> reader_;
};

TEST_F(Finalized, SummaryAndInfo) {
  EXPECT_TRUE(reader_->complete());
  EXPECT_TRUE(reader_->problems().empty());
  EXPECT_EQ(summary_.processes, 3u);
  EXPECT_EQ(summary_.threads, 4u);
  EXPECT_EQ(summary_.events, 2u + 15u + 0u + 4u);
  EXPECT_EQ(summary_.calls, 1u + 5u + 0u + 1u);
  EXPECT_EQ(summary_.lost, 9u);
  EXPECT_EQ(summary_.torn, 1u);
  bool damaged_words = false;
  for (const auto& w : summary_.warnings) damaged_words |= w.find("2 damaged words skipped") != std::string::npos;
  EXPECT_TRUE(damaged_words);

  EXPECT_EQ(reader_->header().clock, static_cast<uint32_t>(ClockKind::kMonotonic));
  EXPECT_EQ(reader_->header().ticks_per_ns, 1.0);
  EXPECT_EQ(reader_->header().origin_mono_ns, 1000u);
  EXPECT_EQ(reader_->header().origin_realtime_ns, 1600000000000000000ull);
  const InfoRecord& info = reader_->info().record;
  EXPECT_EQ(info.main_pid, 100u);
  EXPECT_EQ(info.main_how, static_cast<uint32_t>(ExitHow::kSignaled));
  EXPECT_EQ(info.main_signal, 9);
  EXPECT_EQ(info.duration_ticks, 8000u);
  EXPECT_EQ(info.flags & kInfoNotInstrumented, 0u);
  EXPECT_EQ(reader_->info().argv, (std::vector<std::string>{"callscope", "record", "./app"}));
  EXPECT_EQ(reader_->info().cwd, "/home/u");
  EXPECT_EQ(reader_->info().tool_version.rfind("callscope ", 0), 0u);
}

TEST_F(Finalized, ProcessesExecForkAndExitStatus) {
  const auto& p = reader_->processes();
  ASSERT_EQ(p.size(), 3u);
  // 100.0 was replaced by exec: it ends where 100.1 starts.
  EXPECT_EQ(p[0].record.pid, 100u);
  EXPECT_EQ(p[0].record.incarnation, 0u);
  EXPECT_EQ(p[0].record.how, static_cast<uint32_t>(ExitHow::kExec));
  EXPECT_EQ(p[0].record.start_tick, 0u);
  EXPECT_EQ(p[0].record.end_tick, 4000u);
  EXPECT_EQ(p[0].record.parent_index, -1);
  EXPECT_EQ(p[0].exe, "/bin/sh");
  EXPECT_EQ(p[0].argv, (std::vector<std::string>{"sh", "-c", "./app"}));
  // 100.1: the recorder's status (signal 9, reaped at mono 9000) wins over the
  // runtime's own "exited 0" at tick 200.
  EXPECT_EQ(p[1].record.incarnation, 1u);
  EXPECT_EQ(p[1].record.how, static_cast<uint32_t>(ExitHow::kSignaled));
  EXPECT_EQ(p[1].record.signal, 9);
  EXPECT_EQ(p[1].record.code, 0);
  EXPECT_EQ(p[1].record.start_tick, 4000u);
  EXPECT_EQ(p[1].record.end_tick, 8000u);
  EXPECT_EQ(p[1].record.parent_index, -1);
  // 200.0: forked by 100.1.
  EXPECT_EQ(p[2].record.pid, 200u);
  EXPECT_EQ(p[2].record.ppid, 100u);
  EXPECT_EQ(p[2].record.parent_index, 1);
  EXPECT_EQ(p[2].record.how, static_cast<uint32_t>(ExitHow::kUnknown));
  EXPECT_EQ(p[2].record.start_tick, 5000u);
  EXPECT_EQ(p[2].record.end_tick, 5100u);  // its thread's clean end

  const auto& m = reader_->modules();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].record.process_index, 1u);
  EXPECT_EQ(m[0].path, "/home/u/app");
  EXPECT_EQ(m[0].build_id, "101112131415161718191a1b1c1d1e1f20212223");
  EXPECT_EQ(m[0].record.load_tick, 4003u);
  EXPECT_EQ(m[0].record.flags & kModuleUnloaded, 0u);
  EXPECT_EQ(m[1].path, "/usr/lib/p.so");
  EXPECT_EQ(m[1].build_id, "10111213");
  EXPECT_EQ(m[1].record.flags & kModuleUnloaded, kModuleUnloaded);
  EXPECT_EQ(m[1].record.load_tick, 4050u);
  EXPECT_EQ(m[1].record.unload_tick, 4070u);
}

TEST_F(Finalized, ThreadRecords) {
  const auto& t = reader_->threads();
  ASSERT_EQ(t.size(), 4u);
  struct Want {
    uint32_t process, tid;
    uint64_t start, end, events, calls, lost, torn;
    uint32_t flags;
    const char* name;
  };
  const Want want[] = {
      {0, 100, 1, 4000, 2, 1, 0, 0, kThreadMain, "sh"},
      {1, 100, 4005, 8000, 15, 5, 9, 1, kThreadMain, "main-thr"},
      {1, 101, 4007, 4009, 0, 0, 0, 0, kThreadExitedCleanly, "idle"},
      {2, 200, 5001, 5100, 4, 1, 0, 0, kThreadMain | kThreadExitedCleanly, "child"},
  };
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE("thread " + std::to_string(i));
    const ThreadRecord& r = t[i].record;
    EXPECT_EQ(r.process_index, want[i].process);
    EXPECT_EQ(r.tid, want[i].tid);
    EXPECT_EQ(r.start_tick, want[i].start);
    EXPECT_EQ(r.end_tick, want[i].end);
    EXPECT_EQ(r.events, want[i].events);
    EXPECT_EQ(r.calls, want[i].calls);
    EXPECT_EQ(r.lost_events, want[i].lost);
    EXPECT_EQ(r.torn_events, want[i].torn);
    EXPECT_EQ(r.flags, want[i].flags);
    EXPECT_EQ(r.blocks, want[i].events ? 1u : 0u);
    EXPECT_EQ(t[i].name, want[i].name);
  }
}

TEST_F(Finalized, EventsBalancedGapsKeepFramesThatWentOnAndCutsAreMarked) {
  using K = EventKind;
  auto ev = [](K k, uint32_t depth, uint64_t tick, uint64_t addr, uint64_t sp, uint64_t arg) {
    return TraceEvent{k, depth, tick, addr, sp, arg};
  };
  const std::vector<std::vector<TraceEvent>> want = {
      {ev(K::kEntry, 1, 5, 0x500000, 0x7ff00000, 0), ev(K::kExitTruncated, 1, 4000, 0x500000, 0x7ff00000, 0)},
      {
          ev(K::kEntry, 1, 4010, 0x401000, kSB - 16, 0),
          ev(K::kEntry, 2, 4020, 0x401100, kSB - 48, 0),
          ev(K::kExit, 2, 4030, 0x401100, kSB - 48, 0),
          ev(K::kMark, 1, 4035, 0, 0, 7),
          ev(K::kLost, 1, 4040, 0, 0, 5),  // the frame open before the loss goes on through it
          ev(K::kResume, 1, 4045, 0, 0, 0),
          ev(K::kEntry, 2, 4050, 0x401200, kSB + 32, 0),
          ev(K::kExitUnwound, 2, 4060, 0x401200, kSB + 32, 0),
          ev(K::kExitStray, 1, 4070, 0x402000, 0, 0),
          ev(K::kEntry, 2, 4080, 0x401300, kSB2 - 80, 0),
          ev(K::kEntry, 3, 4081, 0x401400, 0, 0),
          ev(K::kExit, 3, 4082, 0x401400, 0, 0),
          // The header counts 4 dropped events the stream never marked: the
          // stream ends in a loss after its last event, where the frames close.
          ev(K::kLost, 2, 4082, 0, 0, 4),
          ev(K::kExitTruncated, 2, 4082, 0x401300, kSB2 - 80, 0),
          ev(K::kExitTruncated, 1, 4082, 0x401000, kSB - 16, 0),
      },
      {},
      {ev(K::kEntryInherited, 1, 5001, 0x401000, kSB - 16, 0), ev(K::kEntry, 2, 5005, 0x405000, kSB - 64, 0),
       ev(K::kExit, 2, 5006, 0x405000, kSB - 64, 0), ev(K::kExit, 1, 5007, 0x401000, kSB - 16, 0)},
  };
  for (uint32_t t = 0; t < want.size(); ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    const auto got = test::read_events(*reader_, t);
    ASSERT_EQ(got.size(), want[t].size());
    int depth = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], want[t][i]) << "event " << i;
      if (is_entry(got[i].kind)) ++depth;
      if (is_exit(got[i].kind)) --depth;
      EXPECT_GE(depth, 0);
    }
    EXPECT_EQ(depth, 0) << "stack not balanced";
  }
}

// The session of a process, from the paths /proc shows of the files its
// runtime maps and holds open (ctl, query -p and attach look there: the
// environment may have been written over).
TEST(SessionOfPath, FilesAndDirectoriesOfAProcess) {
  const std::string s = "/dev/shm/callscope-x.trace.Ab12Cd";
  for (const char* tail : {"/4242.0", "/4242.0/meta", "/4242.0/dumps", "/4242.0/t4242.ev", "/4242.1/t4250.3.ev",
                           "/4242.0/t4250.spill", "/4242.0/t4250.prof"})
    EXPECT_EQ(session_of_path(s + tail), s) << tail;
  // Spaces and dots in the session's own path are its own.
  EXPECT_EQ(session_of_path("/tmp/a b/c.1/callscope-4.raw/17.0/t17.ev"), "/tmp/a b/c.1/callscope-4.raw");
}

TEST(SessionOfPath, OtherPathsAreNot) {
  for (const char* path : {"", "relative/4242.0/meta", "/4242.0/meta", "/lib/x86_64-linux-gnu/libc.so.6",
                           "/s/4242.0/notes", "/s/4242.0/t.ev", "/s/4242.0/tx1.ev", "/s/4242/t1.ev", "/s/42.4.2/meta",
                           "/s/4242.0/meta (deleted)", "/s/4242.0 (deleted)", "/s/recorder.meta", "/s/.0/meta",
                           "/s/4242./meta", "socket:[123]", "/dev/null"})
    EXPECT_EQ(session_of_path(path), std::nullopt) << path;
}

}  // namespace
}  // namespace callscope::format
