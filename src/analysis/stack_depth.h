// Measured stack use, from the stack pointer the runtime records at every
// entry (the caller's sp at the hook call: the function's own sp once its
// prologue has run). Depths are in bytes and count instrumented frames only:
// what an uninstrumented callee (libc, say) pushes below is not seen.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "format/trace_reader.h"

namespace callscope::analysis {

struct ThreadStackPeak {
  uint32_t thread = 0;
  uint32_t process = 0;
  uint64_t top_sp = 0;      // highest sp of the thread's entries: its outermost frame
  uint64_t peak_bytes = 0;  // top_sp - the lowest sp seen
  std::vector<uint64_t> path;  // function addresses at the peak, outermost first
  // The sp of each frame of `path` (0: not recorded). The bytes between two
  // neighbours are the inner one's frame as the run used it: its return
  // address, saved registers and locals (and arguments the outer one pushed).
  std::vector<uint64_t> path_sp;
};

struct FunctionStackDepth {
  uint32_t process = 0;
  uint64_t addr = 0;
  uint64_t calls = 0;
  // The most bytes seen between this function's sp and the sp of any
  // function it called, directly or not, during one of its activations:
  // what static analysis bounds (less this function's own frame).
  uint64_t deepest_below = 0;
};

struct StackDepths {
  std::vector<ThreadStackPeak> threads;
  std::vector<FunctionStackDepth> functions;  // per (process, address)
};

// One pass over the events of each of `threads`.
Result<StackDepths> measure_stack(format::TraceReader& trace, const std::vector<uint32_t>& threads);

}  // namespace callscope::analysis
