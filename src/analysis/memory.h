// Where the memory goes (issue 12): the memory events of a trace (record
// --memory) replayed in time order across threads and processes
// (memory_model.cpp). Every block is kept with the call path open in its
// thread when it was allocated (the shadow stack: nothing is unwound), the
// tag pushed then (callscope_tag_push), when it was allocated and freed, or
// when its process ended with it (a leak of that process). The tables -- by
// function, call path, module, tag, thread or process, for a window of time
// -- are made from the blocks (memory.cpp): WPA's classes (allocated inside
// or outside the window x freed inside or outside it), the peak of
// outstanding bytes and what was live then, leaks, the outstanding bytes
// over time, sizes, and the frees that do not match.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/big_vector.h"
#include "common/result.h"
#include "format/trace_reader.h"

namespace callscope::analysis {

inline constexpr uint64_t kMemoryNever = ~uint64_t{0};
inline constexpr uint32_t kMemoryNoNode = ~0u;

// A call path that allocated: a node of a per-process tree of the functions
// open at an allocation. A process's root (fn 0) holds the allocations made
// outside every instrumented function.
struct MemoryPathNode {
  uint32_t parent = kMemoryNoNode;  // kMemoryNoNode: a root
  uint32_t process = 0;
  uint32_t depth = 0;               // 0 at a root
  uint32_t function = 0;            // index in MemoryModel::functions
  uint32_t module = 0;              // index in MemoryModel::modules: nearest module on the path outside the system's
  uint64_t fn = 0;
  uint64_t tick = 0;                // of its first allocation (the module then held fn)
};

struct MemoryFunction {
  uint32_t process = 0;
  uint64_t fn = 0;  // 0: outside every instrumented function
  uint64_t tick = 0;
};

// A block's end is its free, or its process's end when the program never
// freed it (`ended`: a leak of that process). Either way it is no longer
// outstanding from then on.
struct MemoryBlock {
  uint64_t alloc_tick = 0, free_tick = kMemoryNever;  // kMemoryNever: no end (a model built by hand)
  uint64_t alloc_seq = 0, free_seq = kMemoryNever;    // places in the time order of all memory events
  uint64_t size = 0;
  uint32_t path = 0;  // MemoryPathNode
  uint32_t tag = 0;   // index in MemoryModel::tags (0: none)
  uint32_t thread = 0;
  uint8_t op = 0;     // format::AllocOp
  uint8_t free_op = 0;
  bool ended = false;  // never freed: still allocated when its process exited, exec'd or stopped being recorded
  bool leaked() const { return ended || free_seq == kMemoryNever; }
};

// A free that does not match: of a block never allocated (or allocated
// before recording began, or freed already), or by the wrong family (free
// of a new'd block). A fork child's free of a block its parent had live at
// the fork is not one (MemoryModel::inherited_frees).
struct MemoryMismatch {
  uint32_t thread = 0;
  uint64_t tick = 0;
  uint64_t ptr = 0;
  uint8_t freed_by = 0;      // format::AllocOp
  uint8_t allocated_by = 0;  // 0: unknown block
  uint32_t free_path = 0, alloc_path = kMemoryNoNode;
  uint64_t alloc_tick = 0;
};

// A process of the trace as the memory sees it (index: the trace's).
struct MemoryProcess {
  uint64_t start_tick = 0;  // a fork child's: the fork (its process record's start)
  uint64_t end_tick = 0;    // its exit, exec or the end of its recording: its blocks still allocated end here
  int32_t parent = -1;      // a fork child: the process it was forked from, whose live blocks it inherited
  uint64_t inherited_frees = 0;  // its frees of blocks inherited at the fork
};

struct MemoryModel {
  std::vector<MemoryPathNode> paths;
  std::vector<MemoryProcess> processes;  // every process of the trace (and any a damaged thread record names)
  std::vector<MemoryFunction> functions;
  std::vector<std::string> modules;  // file names; [0]: "" (no module: outside every instrumented function)
  std::vector<std::string> tags;     // [0]: "" (untagged)
  BigVector<MemoryBlock> blocks;     // in the order they were allocated
  // Every allocation and free in time order: block index << 1, | 1 for its free.
  BigVector<uint64_t> order;
  uint64_t frees = 0;               // every free, known block or not
  uint64_t unknown_frees = 0;       // of blocks the trace never saw allocated
  uint64_t inherited_frees = 0;     // by fork children, of blocks their parent had live at the fork (among `frees`)
  std::vector<MemoryMismatch> mismatches;  // in time order (at most 1000 kept)
  uint64_t mismatch_count = 0;
  uint64_t first_tick = 0, last_tick = 0;  // of the memory events
  bool has_memory_events = false;
  // The ticks of each event of `order`.
  uint64_t tick_of(uint64_t entry) const {
    const MemoryBlock& b = blocks[entry >> 1];
    return entry & 1 ? b.free_tick : b.alloc_tick;
  }
};

// Reads every thread of `trace`.
Result<MemoryModel> build_memory_model(format::TraceReader& trace);

// What the rows of a table are keyed by. Function, path and thread values
// belong to one process; module and tag values are shared by all.
enum class MemoryKey : uint8_t { kFunction, kPath, kModule, kTag, kThread, kProcess };
inline bool memory_key_per_process(MemoryKey k) {
  return k == MemoryKey::kFunction || k == MemoryKey::kPath || k == MemoryKey::kThread;
}
// "function", "path", ... and back; an unknown name is an error naming the valid ones.
const char* memory_key_name(MemoryKey k);
Result<std::vector<MemoryKey>> parse_memory_keys(const std::string& list);

// [from, to) in trace ticks.
struct MemoryWindow {
  uint64_t from = 0, to = kMemoryNever;
  bool whole() const { return from == 0 && to == kMemoryNever; }
  bool holds(uint64_t tick) const { return tick >= from && tick < to; }
};

struct MemoryTotals {
  uint64_t allocs = 0, bytes = 0;                  // allocated inside the window
  uint64_t impacting = 0, impacting_bytes = 0;     // allocated inside, not freed inside (WPA's AIFO)
  uint64_t transient = 0, transient_bytes = 0;     // allocated and freed inside (AIFI)
  uint64_t short_lived = 0, short_lived_bytes = 0; // of those: freed less than the threshold after
  uint64_t before_freed = 0, before_freed_bytes = 0;  // allocated before, freed inside (AOFI)
  uint64_t before_kept = 0, before_kept_bytes = 0;    // allocated before, not freed inside (AOFO; or leaked by a
                                                      // process that ended inside)
  uint64_t leaked = 0, leaked_bytes = 0;           // allocated inside, never freed before their process ended
  uint64_t peak_bytes = 0;                         // outstanding at the highest inside the window
  uint64_t peak_tick = 0;                          // when first reached
  void add_block(const MemoryBlock& b, const MemoryWindow& w, uint64_t short_ticks);
};

// At most 5 keys make a row: path and function do not go together.
struct MemoryGroup {
  std::array<uint32_t, 5> key{};  // one value per key of the table, in its order
  MemoryTotals totals;
};

struct MemoryTable {
  std::vector<MemoryKey> keys;
  std::vector<MemoryGroup> groups;  // by bytes allocated, then bytes outstanding at the peak, largest first
  MemoryTotals total;
  uint64_t peak_seq = kMemoryNever;  // place in `order` of the total's peak
};

struct MemoryQuery {
  std::vector<MemoryKey> keys{MemoryKey::kFunction};
  MemoryWindow window;
  uint64_t short_ticks = 0;  // transient blocks freed within this are short-lived (0: none counted)
};

// Every block allocated or outstanding inside the window, by the keys.
MemoryTable memory_table(const MemoryModel& m, const MemoryQuery& q);
// The blocks live just after event `seq` of `order` (the peak), by the keys:
// their count in allocs and bytes (the other totals stay 0).
MemoryTable memory_live_at(const MemoryModel& m, const std::vector<MemoryKey>& keys, uint64_t seq);
// The value of key k for block b.
uint32_t memory_key_value(const MemoryModel& m, const MemoryBlock& b, MemoryKey k);

// Outstanding bytes over time: the window cut in `buckets` equal spans, the
// highest value of each group inside each (the first key only).
struct MemoryTimeline {
  uint64_t from = 0, to = 0;  // ticks
  std::vector<uint32_t> keys;                // group key values, by their peak, highest first
  std::vector<std::vector<uint64_t>> bytes;  // [group][bucket]
  std::vector<uint64_t> total;               // [bucket]
};
MemoryTimeline memory_timeline(const MemoryModel& m, MemoryKey key, MemoryWindow w, uint32_t buckets);

// Sizes of the blocks allocated inside the window, per group: bucket k holds
// sizes in [2^k, 2^(k+1)) (bucket 0 also size 0).
struct MemorySizes {
  std::array<uint32_t, 5> key{};
  std::array<uint64_t, 64> count{}, bytes{};
  uint64_t total_bytes = 0;
};
std::vector<MemorySizes> memory_sizes(const MemoryModel& m, const std::vector<MemoryKey>& keys, MemoryWindow w);

// The call path of a node, outermost first.
std::vector<uint32_t> memory_path(const MemoryModel& m, uint32_t node);

}  // namespace callscope::analysis
