// The memory analysis (analysis/memory.h) on small traces written in memory:
// WPA's window classes, the peak inside a window and what was live then,
// failed moves (realloc, mremap) taken back, mappings the trace never saw
// made, blocks allocated twice, tags, the timeline and the sizes.
#include "analysis/memory.h"

#include <gtest/gtest.h>

#include "../format/trace_test_util.h"

namespace callscope::analysis {
namespace {

using format::AllocOp;
using format::EventKind;
using format::test::InEvent;

InEvent alloc(uint64_t tick, uint64_t ptr, uint64_t size, AllocOp op = AllocOp::kMalloc) {
  return {EventKind::kAlloc, tick, ptr, 0, size, static_cast<uint8_t>(op)};
}
InEvent release(uint64_t tick, uint64_t ptr, AllocOp op = AllocOp::kFree) {
  return {EventKind::kFree, tick, ptr, 0, 0, static_cast<uint8_t>(op)};
}
InEvent entry(uint64_t tick, uint64_t fn) { return {EventKind::kEntry, tick, fn, 0x7fff0000, 0}; }
InEvent exit_(uint64_t tick) { return {EventKind::kExit, tick, 0, 0, 0}; }
InEvent tag(uint64_t tick, uint64_t id) { return {EventKind::kTag, tick, 0, 0, id}; }

class MemoryModelTest : public ::testing::Test {
 protected:
  MemoryModel build(const std::vector<std::vector<InEvent>>& threads, uint16_t minor = format::kTraceVersionMinor) {
    const std::string path = dir_.path() + "/m.trace";
    EXPECT_TRUE(format::test::write_small_trace(path, threads, 3, minor));
    auto r = format::TraceReader::open(path);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    reader_ = std::move(*r);
    auto m = build_memory_model(*reader_);
    EXPECT_TRUE(m.ok());
    return std::move(*m);
  }
  format::test::TempDir dir_;
  std::unique_ptr<format::TraceReader> reader_;
};

// Blocks of sizes 1, 2, 4, 8, 16 around the window [25, 55):
//   A 10..20 (before, freed before: not counted), B 10..50 (before, freed
//   inside), C 30..40 (transient), D 30.. (impacting, leaked), E 60..70 (after).
TEST_F(MemoryModelTest, WindowClassesAndThePeakInside) {
  const MemoryModel m = build({{entry(5, 0x401000), alloc(10, 0xa0, 1), alloc(10, 0xb0, 2), release(20, 0xa0),
                                alloc(30, 0xc0, 4), alloc(30, 0xd0, 8), release(40, 0xc0), release(50, 0xb0),
                                alloc(60, 0xe0, 16), release(70, 0xe0), exit_(80)}});
  ASSERT_EQ(m.blocks.size(), 5u);
  MemoryQuery q;
  q.window = {25, 55};
  const MemoryTable t = memory_table(m, q);
  EXPECT_EQ(t.total.allocs, 2u);  // C, D
  EXPECT_EQ(t.total.bytes, 12u);
  EXPECT_EQ(t.total.transient_bytes, 4u);
  EXPECT_EQ(t.total.impacting_bytes, 8u);
  EXPECT_EQ(t.total.leaked_bytes, 8u);
  EXPECT_EQ(t.total.before_freed_bytes, 2u);
  EXPECT_EQ(t.total.before_kept, 0u);
  EXPECT_EQ(t.total.peak_bytes, 14u);  // B + C + D at 30
  EXPECT_EQ(t.total.peak_tick, 30u);
  // What was live at that peak.
  const MemoryTable live = memory_live_at(m, {MemoryKey::kFunction}, t.peak_seq);
  EXPECT_EQ(live.total.allocs, 3u);
  EXPECT_EQ(live.total.bytes, 14u);
  // The whole trace: every block counted; the peak D + E at 60.
  const MemoryTable whole = memory_table(m, MemoryQuery{});
  EXPECT_EQ(whole.total.allocs, 5u);
  EXPECT_EQ(whole.total.peak_bytes, 24u);
  EXPECT_EQ(whole.total.peak_tick, 60u);
  EXPECT_EQ(whole.total.impacting_bytes, whole.total.leaked_bytes);
  // A window that opens on outstanding blocks: its peak is there at the start.
  MemoryQuery late;
  late.window = {45, 55};
  const MemoryTable l = memory_table(m, late);
  EXPECT_EQ(l.total.peak_bytes, 10u);  // B + D when it opens
  EXPECT_EQ(l.total.peak_tick, 45u);
  EXPECT_EQ(memory_live_at(m, {MemoryKey::kFunction}, l.peak_seq).total.bytes, 10u);
}

// A realloc that fails is its block freed and then a failed move:
// taken back. An mremap of a mapping never seen made (a file's) is no
// block, and its munmap no mismatch. An address allocated again without a
// free: the first block ends there, counted once.
TEST_F(MemoryModelTest, FailedMovesUnknownMappingsAndReuse) {
  const MemoryModel m = build({{alloc(10, 0x100, 16), release(20, 0x100, AllocOp::kReallocFree),
                                alloc(20, 0x100, 0, AllocOp::kMoveFailed), release(30, 0x7000, AllocOp::kMremapFree),
                                alloc(30, 0x8000, 4096, AllocOp::kMremap), release(40, 0x8000, AllocOp::kMunmap),
                                alloc(50, 0x200, 8), alloc(60, 0x200, 32)}});
  const MemoryTable t = memory_table(m, MemoryQuery{});
  EXPECT_EQ(t.total.allocs, 3u);  // 0x100, 0x200 twice
  EXPECT_EQ(t.total.leaked, 2u);  // 0x100 (the realloc failed), the second 0x200
  EXPECT_EQ(t.total.leaked_bytes, 48u);
  EXPECT_EQ(t.total.peak_bytes, 48u);  // 16 + 32: the first 0x200 block ended when it came again
  EXPECT_EQ(m.frees, 0u);
  EXPECT_EQ(m.mismatch_count, 0u);
}

// A pool's first block where the pool's malloc'd memory starts: two blocks,
// each ended by its own family's free. A move's halves are adjacent in their
// thread: glibc's realloc(p, 0) frees p and tells nothing more, so a later
// realloc(NULL, 0) that gets p back is a new block, not a failure. A failed
// move of a block the trace never saw takes its free back, mismatch and all.
TEST_F(MemoryModelTest, PoolsAdjacentMovesAndFailedMovesOfUnknownBlocks) {
  const MemoryModel m = build({{alloc(10, 0x1000, 4096), alloc(20, 0x1000, 64, AllocOp::kApi),
                                release(30, 0x1000, AllocOp::kApiFree), release(40, 0x1000),
                                alloc(50, 0x2000, 16), release(60, 0x2000, AllocOp::kReallocFree),
                                alloc(70, 0x2000, 0, AllocOp::kRealloc), release(80, 0x9000, AllocOp::kReallocFree),
                                alloc(80, 0x9000, 0, AllocOp::kMoveFailed)}});
  const MemoryTable t = memory_table(m, MemoryQuery{});
  EXPECT_EQ(t.total.peak_bytes, 4160u);
  EXPECT_EQ(t.total.allocs, 4u);  // the pool, its block, 0x2000 twice
  EXPECT_EQ(t.total.leaked, 1u);  // the second 0x2000 (size 0)
  EXPECT_EQ(m.frees, 3u);
  EXPECT_EQ(m.unknown_frees, 0u);
  EXPECT_EQ(m.mismatch_count, 0u);
  EXPECT_TRUE(m.mismatches.empty());
}

// Trace 1.5 told a failed realloc as the move's op with size 0 at the old
// block, right after its free: still read as a failure, the block kept. In
// 1.6 the same events are a free and a new block of size 0.
TEST_F(MemoryModelTest, FailedReallocOfTrace15) {
  const std::vector<std::vector<InEvent>> events{{alloc(10, 0x100, 16), release(20, 0x100, AllocOp::kReallocFree),
                                                  alloc(20, 0x100, 0, AllocOp::kRealloc)}};
  const MemoryModel old = build(events, 5);
  EXPECT_EQ(old.frees, 0u);
  EXPECT_EQ(memory_table(old, MemoryQuery{}).total.leaked_bytes, 16u);
  const MemoryModel now = build(events);
  EXPECT_EQ(now.frees, 1u);
  EXPECT_EQ(memory_table(now, MemoryQuery{}).total.allocs, 2u);
}

// Frees by the wrong family, and of blocks never seen, are mismatches with
// both call paths; a free by another thread is none.
TEST_F(MemoryModelTest, MismatchesKeepBothPaths) {
  const MemoryModel m = build({{entry(1, 0x401000), alloc(10, 0x100, 8, AllocOp::kNew), entry(11, 0x401100),
                                release(20, 0x100, AllocOp::kFree), release(21, 0x999), exit_(22), exit_(23)},
                               {alloc(30, 0x300, 4), release(40, 0x500)},
                               {release(35, 0x300)}});
  ASSERT_EQ(m.mismatch_count, 3u);
  const MemoryMismatch& wrong = m.mismatches[0];
  EXPECT_EQ(wrong.allocated_by, static_cast<uint8_t>(AllocOp::kNew));
  EXPECT_EQ(memory_path(m, wrong.alloc_path).size(), 2u);  // root, main
  EXPECT_EQ(memory_path(m, wrong.free_path).size(), 3u);   // root, main, its callee
  EXPECT_EQ(m.mismatches[1].allocated_by, 0);
  EXPECT_EQ(m.unknown_frees, 2u);
  EXPECT_EQ(memory_table(m, MemoryQuery{}).total.leaked, 0u);  // 0x300 freed by thread 2
}

// Tags nest per thread; a block takes the innermost. A tag whose text the
// trace lost is named by its id.
TEST_F(MemoryModelTest, TagsNestPerThread) {
  const MemoryModel m = build({{tag(1, 7), alloc(2, 0x10, 1), tag(3, 9), alloc(4, 0x20, 2), tag(5, 0),
                                alloc(6, 0x30, 4), tag(7, 0), alloc(8, 0x40, 8)},
                               {alloc(9, 0x50, 16)}});
  MemoryQuery q;
  q.keys = {MemoryKey::kTag};
  const MemoryTable t = memory_table(m, q);
  std::map<std::string, uint64_t> bytes;
  for (const MemoryGroup& g : t.groups) bytes[m.tags[g.key[0]]] = g.totals.bytes;
  EXPECT_EQ(bytes["[tag 7]"], 5u);
  EXPECT_EQ(bytes["[tag 9]"], 2u);
  EXPECT_EQ(bytes[""], 24u);  // untagged: after the pops, and the other thread
}

TEST_F(MemoryModelTest, TimelineAndSizes) {
  const MemoryModel m = build({{alloc(0, 0x10, 100), alloc(10, 0x20, 0), alloc(50, 0x30, 64), release(60, 0x10),
                                release(99, 0x30)}});
  const MemoryTimeline tl = memory_timeline(m, MemoryKey::kFunction, MemoryWindow{0, 100}, 4);
  ASSERT_EQ(tl.total.size(), 4u);
  EXPECT_EQ(tl.total[0], 100u);  // [0, 25)
  EXPECT_EQ(tl.total[1], 100u);  // [25, 50): carried over
  EXPECT_EQ(tl.total[2], 164u);  // [50, 75): both, then 64
  EXPECT_EQ(tl.total[3], 64u);   // [75, 100)
  const auto sizes = memory_sizes(m, {MemoryKey::kFunction}, MemoryWindow{});
  ASSERT_EQ(sizes.size(), 1u);
  EXPECT_EQ(sizes[0].count[0], 1u);  // size 0
  EXPECT_EQ(sizes[0].count[6], 2u);  // 64 and 100: [64, 128)
  EXPECT_EQ(sizes[0].bytes[6], 164u);
}

TEST(MemoryKeys, ParsedAndRefused) {
  auto keys = parse_memory_keys("module,tag");
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::vector<MemoryKey>{MemoryKey::kModule, MemoryKey::kTag}));
  EXPECT_FALSE(parse_memory_keys("").ok());
  EXPECT_FALSE(parse_memory_keys("tag,").ok());
  EXPECT_FALSE(parse_memory_keys("tag,tag").ok());
  EXPECT_FALSE(parse_memory_keys("path,function").ok());
  EXPECT_NE(parse_memory_keys("size").error().message().find("function, path, module, tag, thread, process"),
            std::string::npos);
  keys = parse_memory_keys("process,function");
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::vector<MemoryKey>{MemoryKey::kProcess, MemoryKey::kFunction}));
  EXPECT_FALSE(parse_memory_keys("process,process").ok());
}

}  // namespace
}  // namespace callscope::analysis
