// The calls GOT hooks catch: their entries, and their returns by replacing
// the return address (patch.h).
//
// Each thread keeps the calls whose return address it replaced on a return
// stack of its own (ThreadState::rstack), innermost last. What ends a call
// other than its return:
//  - longjmp, and anything else that abandons frames: an entry or a return
//    at a higher slot finds the entries below it dead and drops them (the
//    shadow stack closes their frames by its own rules, hooks.cpp);
//  - a tail call through a hooked slot: the new call finds our return
//    address, so the call that jumped ends there. Its frame stays, closed,
//    and the new call returns through it: every return then goes where
//    the return-stack buffer of the processor predicts (a patchable entry's
//    stub returns with `ret`). Up to kTailChain calls deep at one slot; past
//    that (tail-call dispatch loops) the new call takes the place of the
//    last;
//  - exceptions: the unwinder reads return addresses to find each frame's
//    rules, and ours has none. _Unwind_RaiseException (a throw),
//    _Unwind_Resume_or_Rethrow (a rethrow) and _Unwind_Resume (unwinding
//    going on after a cleanup, which may have caught an exception of its
//    own meanwhile) put every original return address back first; __cxa_begin_catch (the handler is running) drops the calls
//    the throw ended and replaces the addresses of those still running
//    again. pthread_exit, whose unwinding cannot be intercepted (glibc calls
//    libgcc_s through pointers of its own), puts them back for good.
// Not handled (docs/recording.md, Limits): threads that switch stacks
// (makecontext/swapcontext, fibers) across a hooked call, and unwinding that
// starts elsewhere (thread cancellation at a cancellation point; backtrace()
// stops at the first hooked call).
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/engine_state.h"
#include "runtime/patch/patch.h"
#include "runtime/runtime.h"

extern "C" {
// The hooks of hooks.cpp, as the trampolines call them.
extern void* callscope_rt_enter_target;
extern void* callscope_rt_exit_target;
__attribute__((visibility("hidden"), used)) uint64_t callscope_rt_lib_enter(uint32_t index, uint64_t* slot);
__attribute__((visibility("hidden"), used)) uint64_t callscope_rt_lib_exit(uint64_t cfa);
__attribute__((visibility("hidden"), used)) void callscope_rt_fentry_enter(uint64_t ret, uint64_t* slot);
__attribute__((visibility("hidden"), used)) void callscope_rt_mcount_enter(uint64_t ret, uint64_t* slot);
__attribute__((visibility("hidden"), used)) uint64_t callscope_rt_stub_enter(uint64_t call, uint64_t* slot);
}

namespace callscope::rt {

bool g_returns_replaced = false;

namespace {

using HookFn = void (*)(void*, void*, uint64_t);

CALLSCOPE_NOINSTR inline void call_hook(void* const* target, uint64_t fn, uint64_t site, uint64_t sp) {
  reinterpret_cast<HookFn>(__atomic_load_n(target, __ATOMIC_ACQUIRE))(reinterpret_cast<void*>(fn),
                                                                       reinterpret_cast<void*>(site), sp);
}

// An exit at `slot`: the call site given makes exit_is_tail() false (the
// word below the slot is not it), so the frame closed is the topmost frame
// of fn not deeper than the slot: this call's.
CALLSCOPE_NOINSTR void hook_exit(uint64_t fn, uint64_t slot) {
  const uint64_t below = *reinterpret_cast<const uint64_t*>(slot - 8);
  call_hook(&callscope_rt_exit_target, fn, ~below, slot);
}

// What a replaced return address becomes for the GOT stubs, __fentry__ and
// mcount.
CALLSCOPE_NOINSTR inline uint64_t return_trampoline() { return reinterpret_cast<uint64_t>(&callscope_rt_lib_return); }

// Tail calls kept at one slot (see the top of this file): about the depth
// of a processor's return-stack buffer.
constexpr uint32_t kTailChain = 16;

CALLSCOPE_NOINSTR inline uint64_t& slot_at(uint64_t slot) { return *reinterpret_cast<uint64_t*>(slot); }

// Drops the calls whose return address lies below `limit` (deeper on the
// stack): abandoned (longjmp), or ended by an exception.
CALLSCOPE_NOINSTR inline void drop_calls_below(ThreadState* t, uint64_t limit) {
  while (t->rdepth && t->rstack[t->rdepth - 1].slot < limit) --t->rdepth;
}

CALLSCOPE_NOINSTR __attribute__((noinline)) bool map_rstack(ThreadState* t) {
  const int saved_errno = errno;
  t->in_hook = 1;
  signal_fence();
  t->rstack = static_cast<RetFrame*>(map_anon(uint64_t{kRetCapacity} * sizeof(RetFrame)));
  if (t->rstack) __atomic_store_n(&g_returns_replaced, true, __ATOMIC_RELAXED);
  signal_fence();
  t->in_hook = 0;
  errno = saved_errno;
  return t->rstack != nullptr;
}

CALLSCOPE_NOINSTR inline bool ensure_rstack(ThreadState* t) { return CALLSCOPE_LIKELY(t->rstack != nullptr) || map_rstack(t); }

// Puts back every original return address of the calling thread (an
// exception or the thread's end is unwinding the stack), innermost first:
// calls at one slot (tail calls) each put back the one before.
CALLSCOPE_NOINSTR void restore_current() {
  ThreadState* t = current_thread();
  for (uint32_t i = t->rdepth; i-- > 0;) {
    RetFrame& r = t->rstack[i];
    if (!r.restored && slot_at(r.slot) == r.ours) slot_at(r.slot) = r.orig;
    r.restored = 1;
  }
}

// A handler whose frame is at `cfa` caught an exception: the calls below it
// ended, the others go on (outermost first).
CALLSCOPE_NOINSTR void caught_at(ThreadState* t, uint64_t cfa) {
  drop_calls_below(t, cfa);
  for (uint32_t i = 0; i < t->rdepth; ++i) {
    RetFrame& r = t->rstack[i];
    if (r.restored && slot_at(r.slot) == r.orig) {
      slot_at(r.slot) = r.ours;
      r.restored = 0;
    }
  }
}

// Records an entry of `fn` whose return address is at `slot`, and replaces
// that address with `ours`: the return trampoline's for the GOT stubs,
// __fentry__ and mcount; the return point of a patchable entry's stub, which
// calls the function itself (code.cpp). False when the call goes through
// unrecorded (its return address left as it was). errno is the hooks' to
// keep: their fast paths leave it alone, their slow paths put it back.
__attribute__((always_inline)) inline bool hijack_enter(uint64_t fn, uint64_t* slot, uint64_t ours) {
  ThreadState* t = current_thread();
  // Inside a hook (the runtime's own calls, a signal handler interrupting a
  // hook), or no room: the call goes through unrecorded.
  if (t->in_hook || !ensure_rstack(t) || t->rdepth >= kRetCapacity) return false;
  const uint64_t s = reinterpret_cast<uint64_t>(slot);
  uint64_t orig = *slot;
  // Calls below this slot were abandoned (longjmp): theirs is gone.
  drop_calls_below(t, s);
  if (t->rdepth && t->rstack[t->rdepth - 1].slot == s) {
    RetFrame& jumped = t->rstack[t->rdepth - 1];
    if (orig == jumped.ours) {
      // A call of ours jumped here (a tail call): it ends (it may have ended
      // already: a tail call that went through unrecorded left it there).
      // This call returns through its frame, or in its place when
      // kTailChain calls are at this slot already.
      if (jumped.fn) hook_exit(jumped.fn, s);
      jumped.fn = 0;
      uint32_t chain = 1;
      while (chain < kTailChain && chain < t->rdepth && t->rstack[t->rdepth - 1 - chain].slot == s) ++chain;
      if (chain >= kTailChain) orig = t->rstack[--t->rdepth].orig;
    } else {
      drop_calls_below(t, s + 1);  // abandoned too, and the slot reused
    }
  }
  call_hook(&callscope_rt_enter_target, fn, ++t->lib_serial, s);
  // Replace the return address only if the entry was taken: a thread whose
  // recording failed or ended keeps no frames.
  if (t->status == kActive || t->status == kEngine || t->status == kStopped) {
    t->in_hook = 1;
    signal_fence();
    t->rstack[t->rdepth] = RetFrame{s, orig, fn, ours, 0};
    ++t->rdepth;
    *slot = ours;
    signal_fence();
    t->in_hook = 0;
    return true;
  }
  *slot = orig;  // unrecorded: returns where the call that jumped here returns
  return false;
}

// -pg and -pg -mfentry (gcc and clang): the entries come from mcount and
// __fentry__ (trampolines.S), the exits from replacing the function's return
// address, as for library calls. The trace records each function by its
// first byte where the call's place tells it: __fentry__ is called by the
// function's first instruction (after endbr64), mcount after gcc's
// `push %rbp; mov %rsp,%rbp`; elsewhere (a prologue that saves more
// first) by the mcount call's own address, inside the function: one address
// per function all the same, symbolized to its name.
//
// The address of the call that returns to `ret`: `call rel32` (5 bytes) or
// `call *rel32(%rip)` (6 bytes, gcc's -pg in PIE code).
CALLSCOPE_NOINSTR inline uint64_t call_site(uint64_t ret) {
  const auto* p = reinterpret_cast<const uint8_t*>(ret);
  if (p[-6] == 0xff && p[-5] == 0x15) return ret - 6;
  return ret - 5;
}

}  // namespace

void libcalls_thread_exit(ThreadState* t) {
  if (t->rstack && t->rdepth == 0) {
    ::munmap(t->rstack, uint64_t{kRetCapacity} * sizeof(RetFrame));
    t->rstack = nullptr;
  }
}

}  // namespace callscope::rt

using namespace callscope::rt;

// The entry of stub `index`, whose return address is at `slot`: returns
// where the call goes on.
uint64_t callscope_rt_lib_enter(uint32_t index, uint64_t* slot) {
  const Hook& h = g_hooks[index];
  hijack_enter(h.fn, slot, return_trampoline());
  return h.target;
}

void callscope_rt_fentry_enter(uint64_t ret, uint64_t* slot) {
  hijack_enter(before_endbr(call_site(ret)), slot, return_trampoline());
}

void callscope_rt_mcount_enter(uint64_t ret, uint64_t* slot) {
  uint64_t fn = call_site(ret);
  static const uint8_t kFramePrologue[4] = {0x55, 0x48, 0x89, 0xe5};  // push %rbp; mov %rsp,%rbp
  if (memcmp(reinterpret_cast<const void*>(fn - 4), kFramePrologue, 4) == 0) fn = before_endbr(fn - 4);
  hijack_enter(fn, slot, return_trampoline());
}

// A patchable entry's stub (code.cpp) called us from `call`, its `call` of
// the function next: records the entry of the function whose caller's return
// address is at `slot`. Returns 0 when the stub goes on (it calls the
// function, which returns into the stub), else the function's body, for a
// call that goes through unrecorded with its return address in place.
uint64_t callscope_rt_stub_enter(uint64_t call, uint64_t* slot) {
  return hijack_enter(stub_function(call), slot, call + 5) ? 0 : stub_body(call);
}

// The return of a hooked call, with the stack pointer it returned with:
// returns where the call would have returned.
uint64_t callscope_rt_lib_exit(uint64_t cfa) {
  ThreadState* t = current_thread();
  const uint64_t s = cfa - 8;
  drop_calls_below(t, s);  // abandoned (longjmp)
  if (CALLSCOPE_UNLIKELY(t->rdepth == 0 || t->rstack[t->rdepth - 1].slot != s)) {
    static const char kMsg[] =
        "callscope: a hooked library call returned to a stack we do not know (a stack switch: "
        "makecontext, fibers?); its return address is lost. A program that switches stacks across calls "
        "is recorded with -finstrument-functions, not by catching returns (--libcalls, --patch-*, -pg, "
        "patchable entries).\n";
    ssize_t ignored = ::write(2, kMsg, sizeof kMsg - 1);
    (void)ignored;
    ::abort();
  }
  const RetFrame r = t->rstack[t->rdepth - 1];
  --t->rdepth;
  if (r.fn) hook_exit(r.fn, s);  // else a tail call ended it
  return r.orig;
}

// ---- unwinding through hooked calls --------------------------------------------

// int, not the enum: the runtime does not include unwind.h. The return
// only comes when no handler was found (or on an error): the addresses stay
// put back; the program then ends (std::terminate).
CALLSCOPE_EXPORT int _Unwind_RaiseException(void* exception) {
  using Fn = int (*)(void*);
  static Fn real = nullptr;
  restore_current();
  Fn f = next_symbol(&real, "_Unwind_RaiseException");
  return f ? f(exception) : 9;  // _URC_FAILURE
}

CALLSCOPE_EXPORT int _Unwind_Resume_or_Rethrow(void* exception) {
  using Fn = int (*)(void*);
  static Fn real = nullptr;
  restore_current();
  Fn f = next_symbol(&real, "_Unwind_Resume_or_Rethrow");
  return f ? f(exception) : 9;
}

// A cleanup (a destructor) ran on the way and unwinding goes on: a handler
// inside that cleanup (a try/catch of its own that caught another exception)
// put addresses back on frames this exception has still to unwind.
CALLSCOPE_EXPORT __attribute__((noreturn)) void _Unwind_Resume(void* exception) {
  using Fn = void (*)(void*);
  static Fn real = nullptr;
  restore_current();
  Fn f = next_symbol(&real, "_Unwind_Resume");
  if (f) f(exception);
  __builtin_trap();
}

CALLSCOPE_EXPORT void* __cxa_begin_catch(void* exception) {
  using Fn = void* (*)(void*);
  static Fn real = nullptr;
  ThreadState* t = current_thread();
  // Our CFA: the handler's stack pointer at the call.
  if (t->rdepth) caught_at(t, reinterpret_cast<uint64_t>(__builtin_frame_address(0)) + 16);
  Fn f = next_symbol(&real, "__cxa_begin_catch");
  return f ? f(exception) : exception;
}

CALLSCOPE_EXPORT __attribute__((noreturn)) void pthread_exit(void* value) {
  using Fn = void (*)(void*);
  static Fn real = nullptr;
  restore_current();
  Fn f = next_symbol(&real, "pthread_exit");
  if (f) f(value);
  __builtin_trap();
}
