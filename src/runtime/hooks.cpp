// The hot path: the -finstrument-functions hooks.
//
// Each hook reads the clock, keeps the shadow stack, and stores one event
// (16 bytes for an entry, 8 for a normal exit) into the thread's mapped
// chunk. Nothing else happens unless something unusual does: a new thread, a
// full chunk, a frame abandoned by longjmp or an exception, or a signal that
// interrupts a hook.
//
// Frames that vanish without an exit hook (longjmp; exceptions under clang,
// whose instrumentation has no exit on the unwind path) are found by stack
// pointer: the `sp` we keep for a frame is the caller's stack pointer at the
// hook call, and a live caller's sp is never below its callees'. It can be
// equal: GCC and clang inline calls (GCC even recursive ones) and still emit
// their hooks, all from one physical frame. So
//  - at an entry with sp S, every frame on top with sp < S is dead, and so is
//    one level with S unless the entry is of a callee inlined in it: the
//    call site (the physical frame's return address) is the same, the hook
//    call another (frame_key and entry_finds_dead in runtime.h);
//  - at an exit of F with sp S called inside F, the frame closed is the
//    topmost frame of F not deeper than S; frames above it are dead. GCC and
//    clang may call the exit hook as a tail call after F's epilogue, with S
//    its caller's sp; the hook then returns straight to F's caller, which
//    tells the two apart (exit_is_tail in runtime.h), and the frame closed is
//    the lowest frame of F entered below S (exit_frame_index).
// A call whose frame lies deeper than an abandoned frame still passes for
// its callee (docs/recording.md, Limits). Dead frames are closed with
// kExitUnwound before the event that revealed them. Events are emitted before the shadow stack changes, so that a resync
// after lost events (thread.cpp) re-opens exactly the frames the reader has.
#include <stdint.h>

#include "runtime/engine.h"
#include "runtime/filter.h"
#include "runtime/runtime.h"

namespace callscope::rt {

CALLSCOPE_NOINSTR bool slow_gate_enter(ThreadState* t) {
  if (t->status == kUninit) {
    t->in_hook = 1;
    signal_fence();
    const bool ok = thread_init(t);
    signal_fence();
    t->in_hook = 0;
    if (!ok) return false;
  }
  if (t->status != kActive && t->status != kEngine && t->status != kStopped) return false;  // disabled or exited
  t->in_hook = 1;
  signal_fence();
  if (t->poked) {
    // Clear the poke before reading g_control: an operation that changes it
    // after our read pokes again.
    t->poked = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  }
  if (control_word() != t->control_seen) control_changed(t);
  return true;
}

namespace {

using fmt::RawKind;

// Each body comes in two: kEmit, the recording (the fast path), and
// without, while the thread is stopped: the same shadow stack, the same
// matching rules (dead frames, exits of outer activations), no event. The
// pause's end writes the frames open then (control_changed), and the
// reader tells from them which frames went on through the pause.
template <bool kEmit>
CALLSCOPE_NOINSTR void close_top(ThreadState* t, RawKind kind, uint64_t now) {
  if constexpr (kEmit) emit1(t, kind, now);
  --t->depth;
}

// Entry at sp with dead frames on top: close them.
template <bool kEmit>
CALLSCOPE_NOINSTR __attribute__((noinline)) void unwind_dead_frames(ThreadState* t, uint64_t sp, uint64_t key,
                                                                      uint64_t now) {
  while (t->depth != 0 && entry_finds_dead(t->stack[t->depth - 1].sp, t->stack[t->depth - 1].key, sp, key))
    close_top<kEmit>(t, RawKind::kExitUnwound, now);
}

template <bool kEmit>
CALLSCOPE_NOINSTR __attribute__((always_inline)) inline void push(ThreadState* t, uint64_t fn, uint64_t sp,
                                                                   uint64_t key, uint64_t now) {
  if constexpr (kEmit) emit_entry(t, RawKind::kEntry, now, fn, sp);
  // overflow > 0 only with the stack full, so depth alone decides.
  if (CALLSCOPE_LIKELY(t->depth < kStackCapacity)) {
    t->stack[t->depth] = Frame{fn, sp, now, key};
    ++t->depth;
  } else {
    ++t->overflow;
  }
}

// The exit did not match the top frame: find the frame it closes.
template <bool kEmit>
CALLSCOPE_NOINSTR __attribute__((noinline)) void match_exit(ThreadState* t, uint64_t fn, uint64_t site,
                                                              uint64_t sp, uint64_t now) {
  const int64_t match = exit_frame_index(t->stack, t->depth, fn, sp, exit_is_tail(sp, site));
  if (match < 0) {
    // No open frame of this function: its entry was never seen (or was
    // dropped). Keep the fact, with the address, without touching the stack.
    if constexpr (kEmit) emit2(t, RawKind::kExitStray, now, fn);
    return;
  }
  while (static_cast<int64_t>(t->depth) - 1 > match) close_top<kEmit>(t, RawKind::kExitUnwound, now);
  close_top<kEmit>(t, RawKind::kExit, now);
}

template <bool kEmit>
CALLSCOPE_NOINSTR __attribute__((always_inline)) inline void enter_body(ThreadState* t, uint64_t fn, uint64_t site,
                                                                         uint64_t sp) {
  // Stopped, the tick only tells this frame from one that ended at the same
  // place during the pause (the reader compares the frames' entry ticks).
  const uint64_t now = now_tick();
  const uint64_t key = frame_key(sp, site);
  // depth is 0 only at a thread's first call: test the sp first.
  const Frame& top = t->stack[t->depth ? t->depth - 1 : 0];
  if (CALLSCOPE_UNLIKELY(top.sp <= sp) && t->depth != 0 && t->overflow == 0 &&
      entry_finds_dead(top.sp, top.key, sp, key))
    unwind_dead_frames<kEmit>(t, sp, key, now);
  push<kEmit>(t, fn, sp, key, now);
}

template <bool kEmit>
CALLSCOPE_NOINSTR __attribute__((always_inline)) inline void exit_body(ThreadState* t, uint64_t fn, uint64_t site,
                                                                        uint64_t sp) {
  const uint64_t now = kEmit ? now_tick() : 0;
  if (CALLSCOPE_UNLIKELY(t->overflow != 0)) {
    if constexpr (kEmit) emit1(t, RawKind::kExit, now);
    --t->overflow;
    return;
  }
  if (CALLSCOPE_LIKELY(t->depth != 0)) {
    const Frame& top = t->stack[t->depth - 1];
    if (CALLSCOPE_LIKELY(top.fn == fn &&
                         exit_closes(top.sp, t->depth > 1 ? t->stack[t->depth - 2].sp : ~uint64_t{0}, sp, site))) {
      close_top<kEmit>(t, RawKind::kExit, now);
      return;
    }
  }
  match_exit<kEmit>(t, fn, site, sp, now);
}

// A hook found the thread not ready, stopped, or found another hook of its
// thread running: a signal handler interrupted that hook. The interrupted
// hook may be halfway through a shadow-stack update, so a nested hook records
// its event (reserve() is signal-safe) and leaves the stack alone; the
// handler's calls are balanced by the time the interrupted hook resumes. The
// engine (profile.cpp) does not count nested calls.
CALLSCOPE_NOINSTR __attribute__((noinline)) void hook_slow(ThreadState* t, uint64_t fn, uint64_t site,
                                                             uint64_t sp, bool entry) {
  if (t->in_hook) {
    if (t->status != kActive) return;  // interrupted initialization, or the engine: nothing to write to
    // The hook we interrupted holds its own copy of `end`; we may use the
    // chunk's reserve, and put the soft end back before returning to it.
    uint64_t* const soft_end = t->end;
    ++t->nested;
    t->end = t->hard_end;
    signal_fence();
    if (entry)
      emit_entry(t, RawKind::kEntry, now_tick(), fn, sp);
    else
      emit1(t, RawKind::kExit, now_tick());
    signal_fence();
    t->end = soft_end;
    --t->nested;
    return;
  }
  if (!slow_gate_enter(t)) return;
  if (t->status == kActive) {
    if (entry)
      enter_body<true>(t, fn, site, sp);
    else
      exit_body<true>(t, fn, site, sp);
  } else if (t->status == kEngine) {
    if (entry)
      engine_enter_fast(t, fn, site, sp);
    else
      engine_exit_fast(t, fn, site, sp);
  } else if (g_engine) {  // stopped
    if (entry)
      engine_enter_stopped(t, fn, site, sp);
    else
      engine_exit_stopped(t, fn, site, sp);
  } else {
    if (entry)
      enter_body<false>(t, fn, site, sp);
    else
      exit_body<false>(t, fn, site, sp);
  }
  signal_fence();
  t->in_hook = 0;
}

}  // namespace
}  // namespace callscope::rt

// The exported hooks are two-instruction trampolines: they hand the caller's
// stack pointer (the CFA of the hook: the caller's rsp before its `call`,
// 16-byte aligned by the ABI) to the C++ body as a third argument. Taking it
// with __builtin_frame_address would force a frame pointer and register
// spills on every call.
extern "C" {
__attribute__((visibility("hidden"), used, no_instrument_function)) void callscope_rt_enter(void* fn, void* site,
                                                                                        uint64_t sp);
__attribute__((visibility("hidden"), used, no_instrument_function)) void callscope_rt_exit(void* fn, void* site,
                                                                                       uint64_t sp);
__attribute__((visibility("hidden"), used, no_instrument_function)) void callscope_rt_engine_enter(void* fn,
                                                                                               void* site,
                                                                                               uint64_t sp);
__attribute__((visibility("hidden"), used, no_instrument_function)) void callscope_rt_engine_exit(void* fn,
                                                                                              void* site,
                                                                                              uint64_t sp);
__attribute__((visibility("hidden"), used, no_instrument_function)) void callscope_rt_filter_enter(void* fn,
                                                                                               void* site,
                                                                                               uint64_t sp);
__attribute__((visibility("hidden"), used, no_instrument_function)) void callscope_rt_filter_exit(void* fn,
                                                                                              void* site,
                                                                                              uint64_t sp);
// Where the trampolines jump: the recording hooks, or the engine's once the
// process is set up for it (hooks_use_engine). Either pair handles every
// thread state through hook_slow; the choice only picks the fast path.
__attribute__((visibility("hidden"), used)) void* callscope_rt_enter_target =
    reinterpret_cast<void*>(&callscope_rt_enter);
__attribute__((visibility("hidden"), used)) void* callscope_rt_exit_target = reinterpret_cast<void*>(&callscope_rt_exit);
}

__asm__(R"(
  .text
  .globl __cyg_profile_func_enter
  .type __cyg_profile_func_enter, @function
  .p2align 4
__cyg_profile_func_enter:
  .cfi_startproc
  leaq 8(%rsp), %rdx
  jmp *callscope_rt_enter_target(%rip)
  .cfi_endproc
  .size __cyg_profile_func_enter, .-__cyg_profile_func_enter

  .globl __cyg_profile_func_exit
  .type __cyg_profile_func_exit, @function
  .p2align 4
__cyg_profile_func_exit:
  .cfi_startproc
  leaq 8(%rsp), %rdx
  jmp *callscope_rt_exit_target(%rip)
  .cfi_endproc
  .size __cyg_profile_func_exit, .-__cyg_profile_func_exit
)");

using namespace callscope::rt;

// Each hook: the gate (status, re-entry and start/stop/clear in one compare),
// then the body of the recording path (these two) or of the engine (the two
// after).
void callscope_rt_enter(void* fn, void* site, uint64_t sp) {
  ThreadState* t = current_thread();
  if (CALLSCOPE_LIKELY(t->gate == kGateOpen)) {
    t->in_hook = 1;
    signal_fence();
    enter_body<true>(t, reinterpret_cast<uint64_t>(fn), reinterpret_cast<uint64_t>(site), sp);
    signal_fence();
    t->in_hook = 0;
  } else {
    hook_slow(t, reinterpret_cast<uint64_t>(fn), reinterpret_cast<uint64_t>(site), sp, true);
  }
}

void callscope_rt_exit(void* fn, void* site, uint64_t sp) {
  ThreadState* t = current_thread();
  if (CALLSCOPE_LIKELY(t->gate == kGateOpen)) {
    t->in_hook = 1;
    signal_fence();
    exit_body<true>(t, reinterpret_cast<uint64_t>(fn), reinterpret_cast<uint64_t>(site), sp);
    signal_fence();
    t->in_hook = 0;
  } else {
    hook_slow(t, reinterpret_cast<uint64_t>(fn), reinterpret_cast<uint64_t>(site), sp, false);
  }
}

void callscope_rt_engine_enter(void* fn, void* site, uint64_t sp) {
  ThreadState* t = current_thread();
  if (CALLSCOPE_UNLIKELY(t->gate != kGateEngine)) {
    hook_slow(t, reinterpret_cast<uint64_t>(fn), reinterpret_cast<uint64_t>(site), sp, true);
    return;
  }
  t->in_hook = 1;
  signal_fence();
  engine_enter_fast(t, reinterpret_cast<uint64_t>(fn), reinterpret_cast<uint64_t>(site), sp);
  signal_fence();
  t->in_hook = 0;
}

void callscope_rt_engine_exit(void* fn, void* site, uint64_t sp) {
  ThreadState* t = current_thread();
  if (CALLSCOPE_UNLIKELY(t->gate != kGateEngine)) {
    hook_slow(t, reinterpret_cast<uint64_t>(fn), reinterpret_cast<uint64_t>(site), sp, false);
    return;
  }
  t->in_hook = 1;
  signal_fence();
  engine_exit_fast(t, reinterpret_cast<uint64_t>(fn), reinterpret_cast<uint64_t>(site), sp);
  signal_fence();
  t->in_hook = 0;
}

// With filters (CALLSCOPE_INCLUDE and the like; query -c records only what
// its probes name), a function they leave out costs one lookup: in the
// engine it would only be an excluded frame, whose callees hang under its
// caller and whose time is its caller's (profile.cpp) -- as if it had not
// been called. The decision is taken once, at the function's first call,
// before the engine keeps a frame for it (filter_decide_skip), so entry and
// exit agree. A function whose decision sits past its first slot goes
// through the engine as before.
void callscope_rt_filter_enter(void* fn, void* site, uint64_t sp) {
  if (filter_skips(reinterpret_cast<uint64_t>(fn))) return;
  callscope_rt_engine_enter(fn, site, sp);
}

void callscope_rt_filter_exit(void* fn, void* site, uint64_t sp) {
  if (filter_skips(reinterpret_cast<uint64_t>(fn))) return;
  callscope_rt_engine_exit(fn, site, sp);
}

// record --unwind: the frames come from unwinding at allocations, and hooks
// (an instrumented library's) would mix their own into the same stacks.
extern "C" __attribute__((visibility("hidden"), no_instrument_function)) void callscope_rt_ignore(void*, void*,
                                                                                                  uint64_t) {}

namespace callscope::rt {
void hooks_ignore() {
  __atomic_store_n(&callscope_rt_enter_target, reinterpret_cast<void*>(&callscope_rt_ignore), __ATOMIC_RELEASE);
  __atomic_store_n(&callscope_rt_exit_target, reinterpret_cast<void*>(&callscope_rt_ignore), __ATOMIC_RELEASE);
}

void hooks_use_engine() {
  const bool skip = g_filter_skipping;
  __atomic_store_n(&callscope_rt_enter_target,
                   reinterpret_cast<void*>(skip ? &callscope_rt_filter_enter : &callscope_rt_engine_enter),
                   __ATOMIC_RELEASE);
  __atomic_store_n(&callscope_rt_exit_target,
                   reinterpret_cast<void*>(skip ? &callscope_rt_filter_exit : &callscope_rt_engine_exit),
                   __ATOMIC_RELEASE);
}
}  // namespace callscope::rt
