// What the program called to allocate or free a block (record --memory,
// trace format 1.5): the AllocOp of raw and final memory events. Part of the
// layout (trace_format.h includes it); plain C++ only, for the runtime.
#pragma once

#include <stdint.h>

namespace callscope::format {

// Memory events (1.5, record --memory): what the program called. Blocks come
// from an allocating op and go to a freeing op; the pairs that belong
// together (malloc/free, new/delete, new[]/delete[], mmap/munmap) are
// checked by `callscope memory` (a mismatch is reported, never trusted).
enum class AllocOp : uint8_t {
  // allocating
  kMalloc = 1,
  kCalloc = 2,
  kRealloc = 3,         // the new block (the old one: kReallocFree)
  kReallocArray = 4,
  kPosixMemalign = 5,
  kAlignedAlloc = 6,
  kMemalign = 7,
  kValloc = 8,
  kPvalloc = 9,
  kNew = 10,            // operator new, every form but arrays (nothrow, aligned)
  kNewArray = 11,       // operator new[]
  kMmap = 12,           // anonymous mmap
  kMremap = 13,         // the new mapping (the old one: kMremapFree)
  kApi = 14,            // callscope_alloc() of a program's own allocator
  kMoveFailed = 15,     // a realloc, reallocarray or mremap that failed: its old block (just told
                        // freed by the move's first half) stays (trace 1.6; 1.5 told it as the
                        // move's op with size 0)
  // freeing
  kFree = 32,
  kReallocFree = 33,
  kDelete = 34,         // operator delete, every form but arrays (sized, aligned)
  kDeleteArray = 35,    // operator delete[]
  kMunmap = 36,
  kMremapFree = 37,
  kApiFree = 38,        // callscope_free()
};
inline constexpr uint8_t kFirstFreeOp = 32;
constexpr bool alloc_op_valid(uint8_t op) { return (op >= 1 && op <= 15) || (op >= 32 && op <= 38); }
constexpr bool alloc_op_frees(uint8_t op) { return op >= kFirstFreeOp; }
// The name a user knows the op by ("malloc", "operator new[]", ...).
constexpr const char* alloc_op_name(uint8_t op) {
  switch (static_cast<AllocOp>(op)) {
    case AllocOp::kMalloc: return "malloc";
    case AllocOp::kCalloc: return "calloc";
    case AllocOp::kRealloc: return "realloc";
    case AllocOp::kReallocArray: return "reallocarray";
    case AllocOp::kPosixMemalign: return "posix_memalign";
    case AllocOp::kAlignedAlloc: return "aligned_alloc";
    case AllocOp::kMemalign: return "memalign";
    case AllocOp::kValloc: return "valloc";
    case AllocOp::kPvalloc: return "pvalloc";
    case AllocOp::kNew: return "operator new";
    case AllocOp::kNewArray: return "operator new[]";
    case AllocOp::kMmap: return "mmap";
    case AllocOp::kMremap: return "mremap";
    case AllocOp::kApi: return "callscope_alloc";
    case AllocOp::kMoveFailed: return "failed move (old block kept)";
    case AllocOp::kFree: return "free";
    case AllocOp::kReallocFree: return "realloc (old block)";
    case AllocOp::kDelete: return "operator delete";
    case AllocOp::kDeleteArray: return "operator delete[]";
    case AllocOp::kMunmap: return "munmap";
    case AllocOp::kMremapFree: return "mremap (old mapping)";
    case AllocOp::kApiFree: return "callscope_free";
  }
  return "?";
}

}  // namespace callscope::format
