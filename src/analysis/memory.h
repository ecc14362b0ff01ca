// Where the memory goes (issue 12): the memory events of a trace (record
// --memory) replayed in time order across threads -- which blocks were
// allocated where (the innermost function open in the allocating thread),
// which were freed, which stayed, how high the outstanding bytes went and
// when, and the frees that do not match their allocation.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common/result.h"
#include "format/trace_reader.h"

namespace callscope::analysis {

// Allocations by the function they were made in: (process, function
// address; 0 outside every instrumented function).
struct MemorySite {
  uint32_t process = 0;
  uint64_t fn = 0;
  uint64_t tick = 0;  // of its first allocation (the module then held the address)
  uint64_t allocs = 0, bytes = 0;
  uint64_t freed = 0, freed_bytes = 0;
  uint64_t leaked = 0, leaked_bytes = 0;  // still allocated at the end of the trace
};

// A free that does not match: of a block never allocated (or allocated
// before recording began), or by the wrong family (free of a new'd block).
struct MemoryMismatch {
  uint32_t thread = 0;
  uint64_t tick = 0;
  uint64_t ptr = 0;
  uint8_t freed_by = 0;      // format::AllocOp
  uint8_t allocated_by = 0;  // 0: unknown block
  uint64_t free_fn = 0, alloc_fn = 0;
  uint32_t process = 0;
};

struct MemoryModel {
  uint64_t allocs = 0, frees = 0;
  uint64_t bytes = 0;           // allocated in all
  uint64_t peak_bytes = 0;      // outstanding at the highest
  uint64_t peak_tick = 0;       // when it was first reached
  uint64_t leaked = 0, leaked_bytes = 0;
  uint64_t unknown_frees = 0;   // of blocks the trace never saw allocated
  std::vector<MemorySite> sites;               // by bytes, largest first
  std::vector<MemoryMismatch> mismatches;      // in time order (at most 1000 kept)
  uint64_t mismatch_count = 0;
  bool has_memory_events = false;
};

// Reads every thread of `trace`.
Result<MemoryModel> build_memory_model(format::TraceReader& trace);

}  // namespace callscope::analysis
