// Damaged traces: truncated anywhere, flipped header and payload bytes, bad
// file headers, hand-made event columns with bad contents. TraceReader must
// refuse with a clear error or read on, naming the block and offset of the
// damage and returning every intact block. Meant to run under ASan/UBSan.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <set>

#include "format/raw_session.h"
#include "format/trace_reader.h"
#include "trace_test_util.h"

#ifdef CALLSCOPE_HAVE_ASAN
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*)(const volatile void*, size_t),
                                                         void (*)(const volatile void*));
#endif

namespace callscope::format {
namespace {

using test::InEvent;

class CorruptTrace : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    streams_ = new std::vector<std::vector<InEvent>>{test::sample_stream(0, 300), test::sample_stream(1, 400),
                                                      test::sample_stream(2, 500)};
    ASSERT_TRUE(test::write_small_trace(dir_->file("good.cstrace"), *streams_));
    good_ = new std::vector<uint8_t>(test::read_all(dir_->file("good.cstrace")));
    auto r = TraceReader::open(dir_->file("good.cstrace"));
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_TRUE((*r)->problems().empty());
    blocks_ = new std::vector<BlockRef>((*r)->blocks());
    ASSERT_EQ(blocks_->size(), 3u + 5u);  // 3 event blocks, Info, Processes, Modules, Threads, End
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete streams_;
    delete good_;
    delete blocks_;
  }

  // Writes `bytes` as a trace file and opens it.
  Result<std::unique_ptr<TraceReader>> open_bytes(const std::vector<uint8_t>& bytes,
                                                  TraceReader::Damage damage = TraceReader::Damage::kRefuse) {
    const std::string p = dir_->file("bad.cstrace");
    test::write_all(p, bytes);
    return TraceReader::open(p, damage);
  }
  static std::vector<TraceEvent> want(uint32_t t) { return test::expected_events((*streams_)[t]); }
  static uint64_t end_of(const BlockRef& b) { return b.offset + sizeof(BlockHeader) + b.header.stored_size; }
  static bool has_problem(const TraceReader& r, const std::string& text) {
    for (const auto& p : r.problems())
      if (p.find(text) != std::string::npos) return true;
    return false;
  }
  static std::string all_problems(const TraceReader& r) {
    std::string s;
    for (const auto& p : r.problems()) s += "\n  " + p;
    return s;
  }
  static std::string where(const BlockRef& b) {
    return "block " + std::to_string(b.number) + " at offset " + std::to_string(b.offset) + ": ";
  }

  static test::TempDir* dir_;
  static std::vector<std::vector<InEvent>>* streams_;
  static std::vector<uint8_t>* good_;
  static std::vector<BlockRef>* blocks_;
};
test::TempDir* CorruptTrace::dir_;
std::vector<std::vector<InEvent>>* CorruptTrace::streams_;
std::vector<uint8_t>* CorruptTrace::good_;
std::vector<BlockRef>* CorruptTrace::blocks_;

TEST_F(CorruptTrace, TruncatedAnywhere) {
  const uint64_t size = good_->size();
  std::set<uint64_t> cuts;
  for (uint64_t n = 0; n < size; n += 7) cuts.insert(n);
  for (const BlockRef& b : *blocks_) {
    for (uint64_t d : {uint64_t{0}, uint64_t{1}, uint64_t{20}, uint64_t{39}, uint64_t{40}, uint64_t{41}})
      cuts.insert(b.offset + d);
    cuts.insert(b.offset + sizeof(BlockHeader) + b.header.stored_size / 2);  // mid-payload
    cuts.insert(end_of(b) - 1);
  }
  for (uint64_t n : cuts) {
    SCOPED_TRACE("truncated to " + std::to_string(n) + " of " + std::to_string(size) + " bytes");
    std::vector<uint8_t> bytes(good_->begin(), good_->begin() + static_cast<long>(n));
    auto r = open_bytes(bytes);
    if (n < sizeof(FileHeader)) {
      ASSERT_FALSE(r.ok());
      EXPECT_NE(r.error().message().find("not a callscope trace"), std::string::npos) << r.error().message();
      continue;
    }
    ASSERT_TRUE(r.ok()) << r.error().message();
    TraceReader& rd = **r;
    EXPECT_FALSE(rd.complete());
    ASSERT_FALSE(rd.problems().empty());
    EXPECT_TRUE(has_problem(rd, "no end block")) << all_problems(rd);
    // Exactly the blocks that fit, at their offsets.
    std::vector<BlockRef> fit;
    for (const BlockRef& b : *blocks_)
      if (end_of(b) <= n) fit.push_back(b);
    ASSERT_EQ(rd.blocks().size(), fit.size());
    for (size_t i = 0; i < fit.size(); ++i) {
      EXPECT_EQ(rd.blocks()[i].number, fit[i].number);
      EXPECT_EQ(rd.blocks()[i].offset, fit[i].offset);
      EXPECT_EQ(std::memcmp(&rd.blocks()[i].header, &fit[i].header, sizeof(BlockHeader)), 0);
    }
    // The cut block, if any, is named.
    if (fit.size() < blocks_->size()) {
      const BlockRef& cut = (*blocks_)[fit.size()];
      if (n - cut.offset >= sizeof(BlockHeader)) {
        EXPECT_TRUE(has_problem(rd, where(cut) + "payload of ")) << all_problems(rd);
      } else if (n > cut.offset) {
        EXPECT_TRUE(has_problem(rd, "offset " + std::to_string(cut.offset) + ": ")) << all_problems(rd);
      }
    }
    // Threads: from the table when it survived, else from the event blocks.
    const bool table = std::any_of(fit.begin(), fit.end(), [](const BlockRef& b) {
      return b.header.type == static_cast<uint16_t>(BlockType::kThreads);
    });
    uint32_t event_blocks = 0;
    for (const BlockRef& b : fit) event_blocks += b.header.type == static_cast<uint16_t>(BlockType::kEvents);
    ASSERT_EQ(rd.threads().size(), table ? 3u : event_blocks);
    for (uint32_t t = 0; t < rd.threads().size(); ++t) {
      EXPECT_EQ(rd.threads()[t].name, table ? "worker-" + std::to_string(t) : "?");
      std::string err;
      const auto got = test::read_events(rd, t, &err);
      EXPECT_EQ(err, "");
      EXPECT_EQ(got, t < event_blocks ? want(t) : std::vector<TraceEvent>{}) << "thread " << t;
    }
  }
}

TEST_F(CorruptTrace, FlippedBlockHeaderByteSkipsExactlyThatBlock) {
  for (size_t k = 0; k < blocks_->size(); ++k) {
    const BlockRef& bad = (*blocks_)[k];
    for (size_t j = 0; j < sizeof(BlockHeader); ++j) {
      SCOPED_TRACE("block " + std::to_string(k) + " header byte " + std::to_string(j));
      std::vector<uint8_t> bytes = *good_;
      bytes[bad.offset + j] ^= 0xff;
      auto r = open_bytes(bytes);
      ASSERT_TRUE(r.ok()) << r.error().message();
      TraceReader& rd = **r;
      const bool last = k + 1 == blocks_->size();
      const std::string off = "offset " + std::to_string(bad.offset) + ": damaged block header; ";
      EXPECT_TRUE(has_problem(rd, off + (last ? "no valid block follows"
                                               : "skipped " + std::to_string(end_of(bad) - bad.offset) +
                                                     " bytes to the next block")))
          << all_problems(rd);
      EXPECT_EQ(rd.complete(), !last);
      ASSERT_EQ(rd.blocks().size(), blocks_->size() - 1);
      for (size_t i = 0, g = 0; i < rd.blocks().size(); ++i, ++g) {
        if (g == k) ++g;
        EXPECT_EQ(rd.blocks()[i].offset, (*blocks_)[g].offset);
      }
      const bool threads_lost = bad.header.type == static_cast<uint16_t>(BlockType::kThreads);
      ASSERT_EQ(rd.threads().size(), 3u);
      for (uint32_t t = 0; t < 3; ++t) {
        EXPECT_EQ(rd.threads()[t].name, threads_lost ? "?" : "worker-" + std::to_string(t));
        const bool gone = bad.header.type == static_cast<uint16_t>(BlockType::kEvents) && bad.header.aux0 == t;
        EXPECT_EQ(test::read_events(rd, t), gone ? std::vector<TraceEvent>{} : want(t)) << "thread " << t;
      }
      if (bad.header.type == static_cast<uint16_t>(BlockType::kInfo)) {
        EXPECT_EQ(rd.info().record.main_pid, 0u);
      } else {
        EXPECT_EQ(rd.info().record.main_pid, 4000u);
      }
    }
  }
}

// The contract in trace_reader.h: damage is reported "with the block number
// and file offset"; and BlockRef::number is the "position among the blocks of
// the file", so a damaged header must not renumber the blocks after it.
TEST_F(CorruptTrace, DamagedHeaderProblemNamesBlockNumber) {
  const BlockRef& bad = (*blocks_)[1];
  std::vector<uint8_t> bytes = *good_;
  bytes[bad.offset + 8] ^= 0x01;  // stored_size
  auto r = open_bytes(bytes);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(has_problem(**r, "block 1 at offset " + std::to_string(bad.offset))) << all_problems(**r);
  ASSERT_GE((*r)->blocks().size(), 2u);
  EXPECT_EQ((*r)->blocks()[1].offset, (*blocks_)[2].offset);
  EXPECT_EQ((*r)->blocks()[1].number, 2u) << "the block after the damaged one was renumbered";
}

TEST_F(CorruptTrace, FlippedPayloadByteLosesOnlyThatBlock) {
  for (size_t k : {size_t{1}, size_t{6}}) {  // thread 1's events; the thread table
    const BlockRef& bad = (*blocks_)[k];
    size_t undetected = 0;
    for (uint32_t j = 0; j < bad.header.stored_size; ++j) {
      SCOPED_TRACE("block " + std::to_string(k) + " payload byte " + std::to_string(j));
      std::vector<uint8_t> bytes = *good_;
      bytes[bad.offset + sizeof(BlockHeader) + j] ^= 0xff;
      auto r = open_bytes(bytes);
      ASSERT_TRUE(r.ok()) << r.error().message();
      TraceReader& rd = **r;
      EXPECT_TRUE(rd.complete());
      EXPECT_EQ(rd.blocks().size(), blocks_->size());
      ASSERT_EQ(rd.threads().size(), 3u);
      std::vector<std::vector<TraceEvent>> got;
      for (uint32_t t = 0; t < 3; ++t) got.push_back(test::read_events(rd, t));
      EXPECT_EQ(got[0], want(0));
      EXPECT_EQ(got[2], want(2));
      if (rd.problems().empty()) {  // zstd did not notice: then nothing may differ
        ++undetected;
        EXPECT_EQ(got[1], want(1));
        EXPECT_EQ(rd.threads()[1].name, "worker-1");
        continue;
      }
      EXPECT_TRUE(has_problem(rd, where(bad))) << all_problems(rd);
      if (k == 1) {
        EXPECT_EQ(got[1], std::vector<TraceEvent>{});
      } else {
        EXPECT_EQ(rd.threads()[1].name, "?");
        EXPECT_EQ(got[1], want(1));
      }
    }
    EXPECT_LE(undetected, 2u) << "zstd's checksum should catch payload damage";
  }
}

TEST_F(CorruptTrace, FileHeaderDamage) {
  std::vector<uint8_t> bytes = *good_;
  std::fill(bytes.begin(), bytes.begin() + 8, 0);
  auto r = open_bytes(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("not a callscope trace"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("bad.cstrace"), std::string::npos) << r.error().message();

  bytes = *good_;
  FileHeader fh;
  std::memcpy(&fh, bytes.data(), sizeof fh);
  fh.version_major = 2;
  fh.version_minor = 3;
  std::memcpy(bytes.data(), &fh, sizeof fh);
  r = open_bytes(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("2.3"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("1."), std::string::npos) << r.error().message();

  fh.version_major = 1;  // a later minor version: readable
  fh.version_minor = 9;
  seal_file_header(fh);
  std::memcpy(bytes.data(), &fh, sizeof fh);
  r = open_bytes(bytes);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(test::read_events(**r, 2), want(2));

  for (int what = 0; what < 3; ++what) {
    std::memcpy(&fh, good_->data(), sizeof fh);
    if (what == 0) fh.ticks_per_ns = 0;
    if (what == 1) fh.header_size = 12;
    if (what == 2) fh.header_size = static_cast<uint32_t>(good_->size() + 1);
    bytes = *good_;
    std::memcpy(bytes.data(), &fh, sizeof fh);
    r = open_bytes(bytes);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_NE(r.error().message().find("damaged trace header"), std::string::npos) << r.error().message();
  }
}

// A header whose fields are out of range is refused, naming the field,
// even with a check that matches (a writer's bug, or a forged header).
TEST_F(CorruptTrace, FileHeaderFieldRanges) {
  struct Case {
    const char* what;
    void (*change)(FileHeader&);
    const char* expect;
  };
  const Case cases[] = {
      {"tsc inf", [](FileHeader& h) { h.clock = 1; h.ticks_per_ns = std::numeric_limits<double>::infinity(); },
       "ticks_per_ns is inf"},
      {"tsc 1e-300", [](FileHeader& h) { h.clock = 1; h.ticks_per_ns = 1e-300; }, "ticks_per_ns is 1e-300"},
      {"tsc 5e-324", [](FileHeader& h) { h.clock = 1; h.ticks_per_ns = 5e-324; }, "ticks_per_ns is 4.94066e-324"},
      {"tsc nan", [](FileHeader& h) { h.clock = 1; h.ticks_per_ns = std::nan(""); }, "ticks_per_ns is nan"},
      {"tsc negative", [](FileHeader& h) { h.clock = 1; h.ticks_per_ns = -2.5; }, "ticks_per_ns is -2.5"},
      {"tsc 1e9", [](FileHeader& h) { h.clock = 1; h.ticks_per_ns = 1e9; }, "not a TSC rate"},
      {"monotonic 2.5", [](FileHeader& h) { h.ticks_per_ns = 2.5; }, "for CLOCK_MONOTONIC"},
      {"clock 0", [](FileHeader& h) { h.clock = 0; }, "unknown clock kind 0"},
      {"clock 7", [](FileHeader& h) { h.clock = 7; }, "unknown clock kind 7"},
      {"flags", [](FileHeader& h) { h.flags = 4; }, "unknown flags 4"},
      {"reserved", [](FileHeader& h) { h.reserved = 1; }, "reserved bytes"},
      {"reserved2", [](FileHeader& h) { h.reserved2 = 1; }, "reserved bytes"},
      {"header_size", [](FileHeader& h) { h.header_size = 72; }, "header_size is 72"},
      {"origin", [](FileHeader& h) { h.origin_realtime_ns = ~uint64_t{0}; }, "origin time out of range"},
  };
  for (const Case& c : cases) {
    FileHeader fh;
    std::memcpy(&fh, good_->data(), sizeof fh);
    c.change(fh);
    seal_file_header(fh);
    std::vector<uint8_t> bytes = *good_;
    std::memcpy(bytes.data(), &fh, sizeof fh);
    auto r = open_bytes(bytes);
    ASSERT_FALSE(r.ok()) << c.what;
    const std::string& m = r.error().message();
    EXPECT_NE(m.find("bad.cstrace': damaged trace header"), std::string::npos) << c.what << ": " << m;
    EXPECT_NE(m.find(c.expect), std::string::npos) << c.what << ": " << m;
    EXPECT_NE(m.find("intact copy"), std::string::npos) << c.what << ": " << m;  // says what to do
  }
  // A sane TSC rate reads.
  FileHeader fh;
  std::memcpy(&fh, good_->data(), sizeof fh);
  fh.clock = 1;
  fh.ticks_per_ns = 2.5;
  seal_file_header(fh);
  std::vector<uint8_t> bytes = *good_;
  std::memcpy(bytes.data(), &fh, sizeof fh);
  auto r = open_bytes(bytes);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)->header().ticks_per_ns, 2.5);
}

// Every single damaged byte of the 64 is noticed: the check (1.3) covers
// bytes 0-59, the check's own bytes do not match any more, and a version
// byte turned to an older minor leaves a nonzero check where 1.2 had zeros.
TEST_F(CorruptTrace, FileHeaderEveryByteFlipped) {
  size_t unnoticed = 0;
  std::string which;
  for (size_t at = 0; at < sizeof(FileHeader); ++at) {
    for (const uint8_t x : {0x01, 0x02, 0x10, 0x80, 0xff}) {
      std::vector<uint8_t> bytes = *good_;
      bytes[at] ^= x;
      auto r = open_bytes(bytes);
      if (r.ok()) {
        ++unnoticed;
        which += " " + std::to_string(at) + "^" + std::to_string(x);
      }
    }
  }
  EXPECT_EQ(unnoticed, 0u) << "flips read as a good trace:" << which;
}

// Traces of 1.0-1.2 have no check: they still read, with every range
// checked; their check bytes were reserved, and zero.
TEST_F(CorruptTrace, OlderTraceWithoutCheckReads) {
  FileHeader fh;
  std::memcpy(&fh, good_->data(), sizeof fh);
  ASSERT_EQ(fh.version_minor, kTraceVersionMinor);
  ASSERT_NE(fh.check, 0u);
  fh.version_minor = 2;
  fh.check = 0;
  std::vector<uint8_t> bytes = *good_;
  std::memcpy(bytes.data(), &fh, sizeof fh);
  auto r = open_bytes(bytes);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)->header().version_minor, 2u);
  EXPECT_EQ(test::read_events(**r, 1), want(1));

  fh.ticks_per_ns = 0.5;  // CLOCK_MONOTONIC at 0.5: out of range in a 1.2 trace too
  std::memcpy(bytes.data(), &fh, sizeof fh);
  r = open_bytes(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("for CLOCK_MONOTONIC"), std::string::npos) << r.error().message();
}

// Not a regular file: refused at once, never waited on (a FIFO with no
// writer blocked open(2) forever; one with data was read as "0 bytes").
TEST_F(CorruptTrace, FifoAndDevicesRefused) {
  const std::string fifo = dir_->file("trace.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ::alarm(20);  // a reader that blocks fails the test instead of hanging it
  auto r = TraceReader::open(fifo);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("trace.fifo' is a FIFO (named pipe), not a regular file"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("save what it carries to a file first"), std::string::npos) << r.error().message();

  // With a writer and data in the pipe.
  const int w = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(w, 0);
  const ssize_t n = static_cast<ssize_t>(std::min<size_t>(good_->size(), 4096));  // fits the pipe's buffer
  ASSERT_EQ(::write(w, good_->data(), static_cast<size_t>(n)), n);
  r = TraceReader::open(fifo);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("is a FIFO"), std::string::npos) << r.error().message();
  ::close(w);

  r = TraceReader::open("/dev/null");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'/dev/null' is a character device, not a regular file"), std::string::npos)
      << r.error().message();

  // The raw session readers too: a thread file that is a FIFO.
  auto f = RawThreadFile::open(fifo);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("is a FIFO"), std::string::npos) << f.error().message();
  ::alarm(0);
  ::unlink(fifo.c_str());
}

TEST_F(CorruptTrace, NotAFile) {
  auto r = open_bytes({});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("not a callscope trace"), std::string::npos) << r.error().message();

  r = TraceReader::open(dir_->path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("is a directory"), std::string::npos) << r.error().message();

  r = TraceReader::open(dir_->file("does-not-exist.cstrace"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("cannot open"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("does-not-exist.cstrace"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("No such file"), std::string::npos) << r.error().message();
}

// ---- hand-made (uncompressed) event columns -----------------------------------

// One thread; its events in `blocks`; a thread table listing `threads` threads.
std::vector<uint8_t> columns_trace(const std::vector<test::Columns>& blocks, uint32_t thread = 0, uint32_t threads = 1) {
  std::vector<uint8_t> f = test::file_header_bytes();
  for (const auto& c : blocks) test::append_block(f, BlockType::kEvents, thread, 0, 100, c.payload());
  std::vector<uint8_t> tt(8 + threads * sizeof(ThreadRecord), 0);
  const uint32_t head[2] = {threads, sizeof(ThreadRecord)};
  std::memcpy(tt.data(), head, 8);
  test::append_block(f, BlockType::kThreads, 0, threads, 0, tt);
  test::append_block(f, BlockType::kEnd, 0, 1, 0, std::vector<uint8_t>(16, 0));
  return f;
}

// entry f0 (sp 0x1000), mark 5, exit
test::Columns three_events() {
  test::Columns c;
  c.h.n_functions = 1;
  put_varint(c.table, zigzag(0x401000));
  c.kinds = {uint8_t(EventKind::kEntry), uint8_t(EventKind::kMark), uint8_t(EventKind::kExit)};
  c.dt = {0, 1, 2};
  c.fn = {0};
  put_varint(c.sp, zigzag(-0x100));  // parent 0 - sp 0x1000, in 16-byte units
  c.arg = {5};
  return c;
}

TEST_F(CorruptTrace, HandMadeColumnsDecode) {
  auto r = open_bytes(columns_trace({three_events()}));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE((*r)->problems().empty()) << all_problems(**r);
  const std::vector<TraceEvent> want = {{EventKind::kEntry, 1, 100, 0x401000, 0x1000, 0},
                                        {EventKind::kMark, 1, 101, 0, 0, 5},
                                        {EventKind::kExit, 1, 103, 0x401000, 0x1000, 0}};
  EXPECT_EQ(test::read_events(**r, 0), want);
  EXPECT_EQ(test::read_call_events(**r, 0), test::call_events_of(want));
}

TEST_F(CorruptTrace, BadColumnsAreReportedAndEarlierEventsKept) {
  struct Case {
    const char* name;
    void (*damage)(test::Columns&);
    size_t events_before;  // events returned before the damage
    const char* problem;
  };
  const Case cases[] = {
      {"kind 0", [](test::Columns& c) { c.kinds[1] = 0; }, 1, "damaged event columns"},
      {"kind 11", [](test::Columns& c) { c.kinds[2] = 11; }, 2, "damaged event columns"},
      {"fn index out of range", [](test::Columns& c) { c.fn = {1}; }, 0, "damaged event columns"},
      {"dt runs out", [](test::Columns& c) { c.dt = {0, 0x80}; }, 1, "damaged event columns"},
      {"arg runs out", [](test::Columns& c) { c.arg = {0x85}; }, 1, "damaged event columns"},
      {"table runs out", [](test::Columns& c) { c.table = {0x80}; }, 0, "damaged function table"},
      {"sizes do not add up", [](test::Columns& c) { c.keep_header = true; c.h = {3, 1, 3, 3, 3, 1, 2, 1}; c.arg.push_back(0); },
       0, "event columns do not add up"},
      {"kinds != n_events", [](test::Columns& c) { c.keep_header = true; c.h = {4, 1, 3, 3, 3, 1, 2, 1}; }, 0,
       "event columns do not add up"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    test::Columns c = three_events();
    k.damage(c);
    auto r = open_bytes(columns_trace({c}));
    ASSERT_TRUE(r.ok()) << r.error().message();
    const auto got = test::read_events(**r, 0);
    EXPECT_EQ(got.size(), k.events_before);
    EXPECT_EQ(test::read_call_events(**r, 0), test::call_events_of(got));
    EXPECT_TRUE(has_problem(**r, "block 0 at offset 64: " + std::string(k.problem))) << all_problems(**r);
  }
}

TEST_F(CorruptTrace, ExitAfterDamagedBlockBecomesStray) {
  test::Columns first = three_events();
  first.kinds = {uint8_t(EventKind::kEntry), uint8_t(EventKind::kMark), uint8_t(EventKind::kEntry)};
  first.fn = {0, 0};
  first.sp.push_back(2);
  test::Columns second;
  second.kinds = {uint8_t(EventKind::kExit), uint8_t(EventKind::kExit)};
  second.dt = {0, 4};
  std::vector<uint8_t> f = columns_trace({first, second});
  auto r = open_bytes(f);
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto got = test::read_events(**r, 0);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[3].kind, EventKind::kExit);  // stack carried across blocks
  EXPECT_EQ(got[3].depth, 2u);
  EXPECT_EQ(got[4].addr, 0x401000u);

  // Damage the first block's payload (uncompressed: the kinds column).
  f[64 + sizeof(BlockHeader) + sizeof(EventColumnsHeader) + first.table.size()] = 0x77;
  r = open_bytes(f);
  ASSERT_TRUE(r.ok()) << r.error().message();
  got = test::read_events(**r, 0);
  ASSERT_EQ(got.size(), 2u);
  for (const TraceEvent& e : got) {
    EXPECT_EQ(e.kind, EventKind::kExitStray);
    EXPECT_EQ(e.depth, 0u);
    EXPECT_EQ(e.addr, 0u);
  }
  EXPECT_EQ(got[1].tick, 104u);
  EXPECT_EQ(test::read_call_events(**r, 0), test::call_events_of(got));
}

// An event block of a thread the (intact) thread table does not list: its
// checksum holds, so this is a crafted file or a writer's bug. Refused with
// one message; info (Damage::kList) lists it and reads the rest.
TEST_F(CorruptTrace, EventsOfAnUnlistedThread) {
  const auto bytes = columns_trace({three_events()}, /*thread=*/5, /*threads=*/2);
  auto refused = open_bytes(bytes);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("damaged trace '"), std::string::npos) << refused.error().message();
  EXPECT_NE(refused.error().message().find("block 0 at offset 64: events of thread 5, but the trace holds 2 threads"),
            std::string::npos)
      << refused.error().message();
  auto r = open_bytes(bytes, TraceReader::Damage::kList);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)->threads().size(), 2u);
  EXPECT_TRUE(has_problem(**r, "block 0 at offset 64: events of thread 5")) << all_problems(**r);
}

// A function address past the 48 bits of user space (the runtime stores no
// other): damage, not a function -- analyses key entries of their own
// above it (a report once took one for an index, and read past a table).
TEST_F(CorruptTrace, AnAddressPastUserSpaceIsDamage) {
  test::Columns c = three_events();
  c.table.clear();
  put_varint(c.table, zigzag(static_cast<int64_t>(0x8000000000401000ull)));
  auto r = open_bytes(columns_trace({c}));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(test::read_events(**r, 0).empty());
  EXPECT_TRUE(has_problem(**r, "block 0 at offset 64: damaged function table")) << all_problems(**r);
}

// A block whose header (its check holding) claims more bytes once
// decompressed than any block callscope writes, or an uncompressed block
// whose two sizes differ: skipped before anything is allocated for it.
TEST_F(CorruptTrace, ABlockLargerThanAnyWrittenIsSkipped) {
  for (const auto& [flags, raw] : {std::pair<uint16_t, uint32_t>{kBlockCompressed, kMaxBlockRawBytes + 1},
                                   std::pair<uint16_t, uint32_t>{0, 7}}) {
    std::vector<uint8_t> f = test::file_header_bytes();
    test::append_block(f, BlockType::kEvents, 0, 3, 100, three_events().payload(), flags, raw);
    std::vector<uint8_t> tt(8 + sizeof(ThreadRecord), 0);
    const uint32_t head[2] = {1, sizeof(ThreadRecord)};
    std::memcpy(tt.data(), head, 8);
    test::append_block(f, BlockType::kThreads, 0, 1, 0, tt);
    test::append_block(f, BlockType::kEnd, 0, 1, 0, std::vector<uint8_t>(16, 0));
    auto r = open_bytes(f);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_TRUE(has_problem(**r, "block 0 at offset 64: payload of " + std::to_string(raw) + " bytes once decompressed"))
        << all_problems(**r);
    EXPECT_TRUE(test::read_events(**r, 0).empty());
    EXPECT_TRUE((*r)->complete());  // the blocks after it are read
  }
}

// Records that name a process when the process table is lost to a damaged
// block (already a problem) are not refused: each index gets a placeholder
// process of its own, so nothing indexes past the table.
TEST_F(CorruptTrace, ReferencesIntoALostTableGetPlaceholders) {
  std::vector<uint8_t> f = test::file_header_bytes();
  test::append_block(f, BlockType::kEvents, 0, 3, 100, three_events().payload());
  std::vector<uint8_t> procs(8 + sizeof(ProcessRecord), 0);
  test::append_block(f, BlockType::kProcesses, 0, 1, 0, procs, kBlockCompressed);  // not a zstd frame
  std::vector<uint8_t> tt(8 + 2 * sizeof(ThreadRecord), 0);
  const uint32_t head[2] = {2, sizeof(ThreadRecord)};
  std::memcpy(tt.data(), head, 8);
  ThreadRecord t1{};
  t1.process_index = 0xffffffffu;
  std::memcpy(tt.data() + 8 + sizeof(ThreadRecord), &t1, sizeof t1);
  test::append_block(f, BlockType::kThreads, 0, 2, 0, tt);
  test::append_block(f, BlockType::kEnd, 0, 1, 0, std::vector<uint8_t>(16, 0));
  auto r = open_bytes(f);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const TraceReader& t = **r;
  ASSERT_EQ(t.threads().size(), 2u);
  ASSERT_EQ(t.processes().size(), 2u);  // one placeholder per index named: 0 and 0xffffffff
  EXPECT_NE(t.threads()[0].record.process_index, t.threads()[1].record.process_index);
  for (const auto& th : t.threads()) EXPECT_LT(th.record.process_index, t.processes().size());
  EXPECT_EQ(t.processes()[1].exe, "?");
  EXPECT_TRUE(has_problem(t, "block 1 at offset")) << all_problems(t);
}

// A huge sp delta in a damaged (or hostile) file: the reader multiplies it by
// kSpUnit in int64_t; must not be undefined behaviour (UBSan aborts here).
TEST_F(CorruptTrace, HugeSpDeltaIsNotUndefinedBehaviour) {
  test::Columns c = three_events();
  c.sp.clear();
  put_varint(c.sp, zigzag(INT64_MIN / 4));
  auto r = open_bytes(columns_trace({c}));
  ASSERT_TRUE(r.ok()) << r.error().message();
  const auto got = test::read_events(**r, 0);
  EXPECT_LE(got.size(), 3u);
}

#ifdef CALLSCOPE_HAVE_ASAN
std::atomic<size_t> g_max_alloc{0};
void on_malloc(const volatile void*, size_t n) {
  size_t m = g_max_alloc.load(std::memory_order_relaxed);
  while (n > m && !g_max_alloc.compare_exchange_weak(m, n)) {
  }
}
void on_free(const volatile void*) {}

// Size fields of a few-KB file must not make the reader allocate hundreds of
// MB: the damage shows in the columns, the allocation should be bounded by
// the bytes actually present.
TEST_F(CorruptTrace, SizeFieldsDoNotDriveHugeAllocations) {
  __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
  // n_functions: 32M entries announced, 1 byte of table present.
  test::Columns c = three_events();
  c.keep_header = true;
  c.h = {3, 1u << 25, static_cast<uint32_t>(c.table.size()), 3, 3, 1, static_cast<uint32_t>(c.sp.size()), 1};
  g_max_alloc = 0;
  auto r = open_bytes(columns_trace({c}));
  ASSERT_TRUE(r.ok()) << r.error().message();
  test::read_events(**r, 0);
  EXPECT_TRUE(has_problem(**r, "block 0 at offset 64: damaged function table")) << all_problems(**r);
  EXPECT_LT(g_max_alloc.load(), size_t{16} << 20) << "EventColumnsHeader::n_functions drove the allocation";

  // raw_size of a compressed block: 256 MiB announced for a tiny zstd frame.
  std::vector<uint8_t> f = test::file_header_bytes();
  const auto payload = three_events().payload();
  std::vector<uint8_t> z(ZSTD_compressBound(payload.size()));
  z.resize(ZSTD_compress(z.data(), z.size(), payload.data(), payload.size(), 1));
  test::append_block(f, BlockType::kEvents, 0, 3, 100, z, kBlockCompressed, 256u << 20);
  g_max_alloc = 0;
  r = open_bytes(f);
  ASSERT_TRUE(r.ok()) << r.error().message();
  test::read_events(**r, 0);
  EXPECT_TRUE(has_problem(**r, "block 0 at offset 64: ")) << all_problems(**r);
  EXPECT_LT(g_max_alloc.load(), size_t{16} << 20) << "BlockHeader::raw_size drove the allocation";

  // aux0 (thread index) of an event block in a trace without a thread table:
  // a thread past what the file could hold is refused, and listing what can
  // still be read (info) adds no placeholder threads up to it.
  f = test::file_header_bytes();
  test::append_block(f, BlockType::kEvents, 1u << 20, 3, 100, three_events().payload());
  g_max_alloc = 0;
  r = open_bytes(f);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("events of thread 1048576, more threads than the file could hold"),
            std::string::npos)
      << r.error().message();
  EXPECT_LT(g_max_alloc.load(), size_t{16} << 20) << "BlockHeader::aux0 drove the allocation";
  g_max_alloc = 0;
  r = open_bytes(f, TraceReader::Damage::kList);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_LT(g_max_alloc.load(), size_t{16} << 20) << "BlockHeader::aux0 drove the allocation ("
                                                   << (*r)->threads().size() << " threads)";
  __sanitizer_install_malloc_and_free_hooks(nullptr, nullptr);
}

// A thread without event blocks (here the placeholders below a damaged
// trace's thread 4000) is read without an allocation for its events: a
// trace of thousands of such threads took 34 s under the fuzzer, each view
// making and clearing a batch of 8,192 events per thread.
TEST_F(CorruptTrace, AThreadWithoutEventsCostsNoBatch) {
  std::vector<uint8_t> f = test::file_header_bytes();
  test::append_block(f, BlockType::kEvents, 4000, 3, 100, three_events().payload());
  auto r = open_bytes(f, TraceReader::Damage::kList);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)->threads().size(), 4001u);
  __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
  g_max_alloc = 0;
  size_t n = 0;
  ASSERT_TRUE((*r)->for_each_event(7, [&](const TraceEvent&) { return ++n > 0; }).ok());
  const size_t empty_thread = g_max_alloc.load();
  g_max_alloc = 0;
  ASSERT_TRUE((*r)->for_each_event(4000, [&](const TraceEvent&) { return ++n > 0; }).ok());
  const size_t thread_with_events = g_max_alloc.load();
  __sanitizer_install_malloc_and_free_hooks(nullptr, nullptr);
  EXPECT_EQ(n, 3u);
  EXPECT_LT(empty_thread, size_t{4096}) << "a thread without events allocated a batch";
  EXPECT_GE(thread_with_events, TraceReader::kEventBatch * sizeof(TraceEvent));
}
#endif

}  // namespace
}  // namespace callscope::format
