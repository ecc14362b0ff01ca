// The entry of a patchable entry's stub without saving the vector registers
// (trampolines.S, callscope_rt_stub_pre). A function's arguments may be in
// xmm0-7; saving and restoring all eight costs more than the rest of an
// entry's bookkeeping. This file is compiled with -mgeneral-regs-only: no
// code of it touches a vector register, and the fast function calls
// nothing (tests/unit/stub_fast_code_test.sh reads its machine code). Whatever
// needs more -- a thread not recording, profile mode, a tail call, frames
// to close, a new chunk of events -- goes to the full entry
// (libcall.cpp, callscope_rt_stub_enter) with every register saved.
#include <stdint.h>

#include "runtime/patch/patch.h"
#include "runtime/runtime.h"

extern "C" {
extern void* callscope_rt_enter_target;
void callscope_rt_enter(void* fn, void* site, uint64_t sp);
__attribute__((visibility("hidden"), used)) uint64_t callscope_rt_stub_enter_fast(uint64_t call, uint64_t* slot);
__attribute__((visibility("hidden"), used)) void callscope_rt_stub_enter_resume(uint64_t call, uint64_t* slot);
}

namespace callscope::rt {
namespace {

// What the entry leaves: the event at `p` (if any), the shadow-stack frame,
// the return-stack frame, and the stub's return point in the slot; the same
// as hijack_enter and the recording hook's enter_body do (libcall.cpp,
// hooks.cpp) for this case.
CALLSCOPE_NOINSTR __attribute__((always_inline)) inline void finish(ThreadState* t, uint64_t* p, uint64_t call,
                                                                    uint64_t* slot, uint64_t fn, uint64_t now,
                                                                    uint64_t rel) {
  const uint64_t s = reinterpret_cast<uint64_t>(slot);
  if (p) {
    store_word(p, word0(fmt::RawKind::kEntry, now));
    signal_fence();
    store_word(p + 1, (fn & fmt::kRawAddrMask) | (rel << 48));
  }
  t->stack[t->depth] = Frame{fn, s, now, frame_key(s, t->lib_serial)};
  ++t->depth;
  t->rstack[t->rdepth] = RetFrame{s, *slot, fn, call + 5, 0};
  ++t->rdepth;
  *slot = call + 5;
  signal_fence();
  t->in_hook = 0;
}

}  // namespace
}  // namespace callscope::rt

using namespace callscope::rt;

// 0: recorded; 1: nothing done, the full entry's turn; 2: the thread is in
// the hook and its chunk is full: callscope_rt_stub_enter_resume goes on.
uint64_t callscope_rt_stub_enter_fast(uint64_t call, uint64_t* slot) {
  ThreadState* t = current_thread();
  const uint64_t s = reinterpret_cast<uint64_t>(slot);
  if (CALLSCOPE_UNLIKELY(t->gate != kGateOpen || !g_use_tsc ||
                         __atomic_load_n(&callscope_rt_enter_target, __ATOMIC_RELAXED) !=
                             reinterpret_cast<void*>(&callscope_rt_enter)))
    return 1;
  // No frame of ours at or below the slot (a tail call, a longjmp's
  // leftovers), none of the shadow stack's (frames to close), room in both.
  if (CALLSCOPE_UNLIKELY(!t->rstack || t->rdepth >= kRetCapacity ||
                         (t->rdepth != 0 && t->rstack[t->rdepth - 1].slot <= s)))
    return 1;
  if (CALLSCOPE_UNLIKELY(t->depth == 0 || t->overflow != 0 || t->depth >= kStackCapacity ||
                         t->stack[t->depth - 1].sp <= s))
    return 1;
  t->in_hook = 1;
  signal_fence();
  // Read inside the hook: a signal handler's calls before it may have moved
  // the base.
  const int64_t rel = static_cast<int64_t>(t->sp_base - s) >> 4;
  if (CALLSCOPE_UNLIKELY(static_cast<uint64_t>(rel + 32767) > 65534)) {  // a new sp base: the full entry
    signal_fence();
    t->in_hook = 0;
    return 1;
  }
  ++t->lib_serial;
  const uint64_t now = read_tsc() - g_base_tick;  // g_use_tsc: now_tick() without its call
  uint64_t* const end = t->end;
  uint64_t* const p = advance_pos(t, 2);
  if (CALLSCOPE_UNLIKELY(p + 2 > end)) return 2;
  finish(t, p, call, slot, stub_function(call), now, static_cast<uint64_t>(rel) & 0xffff);
  return 0;
}

// The fast entry found the chunk full after taking its two words (a signal
// handler's calls may have filled it since the look): the chunk switch, then
// the rest, with every register saved by the stub.
void callscope_rt_stub_enter_resume(uint64_t call, uint64_t* slot) {
  ThreadState* t = current_thread();
  const uint64_t s = reinterpret_cast<uint64_t>(slot);
  // As the recording hook does it: the distance and the tick, then the room.
  const int64_t rel = static_cast<int64_t>(t->sp_base - s) >> 4;  // fits: the fast entry looked
  const uint64_t now = now_tick();
  uint64_t* const p = reserve_slow(t, 2);
  finish(t, p, call, slot, stub_function(call), now, static_cast<uint64_t>(rel) & 0xffff);
}
