// Call paths by unwinding, for record --memory on a program built without
// -finstrument-functions (libcallscope-mem.so; mem_unwind.cpp).
#pragma once

#include <stdint.h>

namespace callscope::rt {

enum class UnwindMode : int { kOff = 0, kDwarf = 1, kFramePointers = 2 };

inline constexpr uint32_t kMaxUnwoundFrames = 128;

// From CALLSCOPE_UNWIND (dwarf, fp; auto: dwarf when the executable has no
// -finstrument-functions hooks; anything else: off), once: at load, or at
// the runtime's first question (callscope_mem_unwind_mode), whichever
// comes first.
void unwind_configure();
UnwindMode unwind_mode();

// The calling thread's frames outside this library, innermost first: for
// each, the function's start (fns) and where in it the thread is (sites: the
// return address into it). At most kMaxUnwoundFrames: a deeper stack loses
// its outermost frames. 0 when the stack cannot be walked.
uint32_t unwind_here(uint64_t* fns, uint64_t* sites);

}  // namespace callscope::rt
