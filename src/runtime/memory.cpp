// Memory events (record --memory, issue 12): libcallscope-mem.so's wrappers
// of malloc, free, operator new and the rest call callscope_rt_memory, which
// writes the event into the thread's stream beside its calls. The block is
// attributed later, by the frames open in the stream at that moment: no
// unwinding here.
//
// Not recorded: allocations before the runtime has started (the dynamic
// loader's, early constructors'), the runtime's own (a hook, or thread set-up,
// is running: in_hook), and those of a thread that is stopped, disabled,
// exited, or run by the engine (profile mode, filters).
#include <errno.h>

#include "runtime/runtime.h"

namespace callscope::rt {
namespace {

CALLSCOPE_NOINSTR inline void emit_memory(ThreadState* t, uint8_t op, uint64_t ptr, uint64_t size) {
  const uint64_t tick = now_tick();
  const uint64_t w1 = (ptr & fmt::kRawAddrMask) | (uint64_t{op} << 56);
  if (fmt::alloc_op_frees(op)) {
    emit2(t, fmt::RawKind::kFree, tick, w1);
    return;
  }
  uint64_t* p = reserve(t, 3);
  if (!p) return;
  // w0 first, then the rest: a crash between leaves a zero word (torn).
  store_word(p, word0(fmt::RawKind::kAlloc, tick));
  signal_fence();
  store_word(p + 1, w1);
  store_word(p + 2, size + 1);
}

CALLSCOPE_NOINSTR __attribute__((noinline)) void memory_slow(ThreadState* t, uint8_t op, uint64_t ptr,
                                                             uint64_t size) {
  if (t->in_hook) return;  // the runtime's own, or a signal handler's inside a hook
  if (!process_ready()) return;
  if (!slow_gate_enter(t)) return;
  if (t->status == kActive) emit_memory(t, op, ptr, size);
  signal_fence();
  t->in_hook = 0;
}

}  // namespace
}  // namespace callscope::rt

using namespace callscope::rt;

// op: a format::AllocOp; size: the block's (allocations only).
CALLSCOPE_EXPORT void callscope_rt_memory(unsigned op, const void* ptr, unsigned long size) {
  ThreadState* t = current_thread();
  if (CALLSCOPE_LIKELY(t->gate == kGateOpen)) {
    t->in_hook = 1;
    signal_fence();
    emit_memory(t, static_cast<uint8_t>(op), reinterpret_cast<uint64_t>(ptr), size);
    signal_fence();
    t->in_hook = 0;
  } else {
    // Thread set-up and chunk switches may set errno; malloc's callers may
    // look at it after.
    const int saved_errno = errno;
    memory_slow(t, static_cast<uint8_t>(op), reinterpret_cast<uint64_t>(ptr), size);
    errno = saved_errno;
  }
}
