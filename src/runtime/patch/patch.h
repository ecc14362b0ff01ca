// Library calls without recompiling: GOT slots rewritten to trampolines of
// ours (got.cpp), and the returns of the calls they hook caught by replacing
// the return address (libcall.cpp). One mechanism for record, profile mode
// and, later, attach; -pg and -mfentry return through the same trampoline,
// patchable entries through stubs that call the function (code.cpp).
//
// A hooked call goes
//   caller -> PLT/GOT -> stub i (16 bytes: hook index in r11) -> lib_entry
//   (saves the argument registers, records the entry, replaces the return
//   address) -> the library function -> lib_return (records the exit,
//   returns to the original address).
// Entries and exits go through the same hooks as -finstrument-functions'
// (callscope_rt_enter_target / _exit_target): the same per-thread streams,
// shadow stack, engine and crash safety. The frame's stack pointer is the
// slot of the return address (8 mod 16, never a compiler hook's, which is a
// multiple of 16), and the call site passed with it a per-thread serial: an
// entry at the slot of a frame that is still open (abandoned by longjmp)
// finds it dead (runtime.h, frame_key).
#pragma once

#include <signal.h>
#include <stdint.h>

#include "runtime/runtime.h"

namespace callscope::rt {

// One entry of a thread's return stack: a call whose return address we
// replaced.
struct RetFrame {
  uint64_t slot;  // where the return address is (the callee's CFA - 8)
  uint64_t orig;  // the return address we replaced
  uint64_t fn;    // the function recorded for the call
  uint64_t ours;  // what we put in the slot: where the call returns to us
  uint64_t restored;  // 1: the original is back in the slot (an exception is unwinding)
};
inline constexpr uint32_t kRetCapacity = 1u << 16;  // calls deep (2.5 MiB reserved per thread that makes one)

// What got.cpp hands each stub's index to.
struct Hook {
  uint64_t target;  // where the call goes on
  uint64_t fn;      // what is recorded: the symbol's address in its module (an IFUNC's resolver)
};

// got.cpp: reads CALLSCOPE_LIBCALLS, CALLSCOPE_PATCH_IMPORTS and
// CALLSCOPE_PATCH_CALLERS; true when any is set. Once, at process init.
bool libcalls_configure();
// Hooks the chosen slots of modules not seen before (at init and after every
// dlopen). Takes its own lock.
void libcalls_patch_new_modules();
// The hook of each stub, by index (kept for the life of the process).
extern Hook* g_hooks;

// code.cpp: the nops of -fpatchable-function-entry and -mnop-mcount.
// Finds the sites of the modules loaded (made calls when `on`); once, at
// process init.
void code_patch_init(bool on);
// The same for modules loaded since (the dlopen and dlclose wrappers).
// `just_loaded`: from our dlopen wrapper, the new modules' code has run on
// the loading thread alone (their constructors), as at a program's start.
void code_patch_new_modules(bool just_loaded = false);
// Calls while tracing is on, nops while off (g_control, read under the
// patching's lock: a stop and a start racing leave the sites as the last
// one left tracing), while the program runs.
void code_patch_sync();
// attach (got.cpp): binds the slots of every module of the program (now,
// and in libraries loaded later) named after a function the runtime
// exports to ours; from then on every slot written, hooks included, is
// remembered. got_detach gives every one of them back what it held, and
// neither binds nor hooks any more.
// Detached, the slots of the unwinder's entries (_Unwind_*, __cxa_begin_catch,
// pthread_exit) stay ours if any return address was ever replaced
// (g_returns_replaced): a frame that returns through us may still be on a
// stack, and an exception or a thread's end must put its address back.
// Our wrappers then only pass the call on.
void bind_exports();
void got_detach();
extern bool g_returns_replaced;  // libcall.cpp: some thread made a return stack
// detach (code.cpp): every site a nop, in libraries loaded later too.
void code_patch_detach();
// libc's sigaction, past our wrapper (code.cpp).
using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
SigactionFn real_sigaction();
// trap_reach.cpp. Whether sites may be patched now: always under record;
// attached, checked once (no thread blocks SIGTRAP; then handlers lose it
// from their masks), and said when not. give_handlers_back undoes the
// masks' change at the detach.
bool traps_reach_every_thread();
void give_handlers_back();
// In a fork child: locks start afresh (code.cpp and got.cpp).
void code_patch_after_fork();
void libcalls_after_fork();

// libcall.cpp
void libcalls_thread_exit(ThreadState* t);
// The return trampoline: a replaced return address points here.
extern "C" void callscope_rt_lib_return();
// The common entry every stub jumps to, with the hook index in r11d.
extern "C" void callscope_rt_lib_entry();
// CET's endbr64, which may begin a function before its entry's nops or call.
inline constexpr uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

// `a`, or the endbr64 right before it.
CALLSCOPE_NOINSTR __attribute__((always_inline)) inline uint64_t before_endbr(uint64_t a) {
  return __builtin_memcmp(reinterpret_cast<const void*>(a - 4), kEndbr64, 4) == 0 ? a - 4 : a;
}

// Where the `call rel32` at `call` goes: in a patchable entry's stub
// (code.cpp), the function's body (its entry's 5 bytes on).
CALLSCOPE_NOINSTR __attribute__((always_inline)) inline uint64_t stub_body(uint64_t call) {
  int32_t rel;
  __builtin_memcpy(&rel, reinterpret_cast<const void*>(call + 1), 4);
  return call + 5 + static_cast<int64_t>(rel);
}

// The function whose body that call enters: its first byte.
CALLSCOPE_NOINSTR __attribute__((always_inline)) inline uint64_t stub_function(uint64_t call) {
  return before_endbr(stub_body(call) - 5);
}
// A patchable entry's stub calls these before and after the function
// (code.cpp).
extern "C" void callscope_rt_stub_pre();
extern "C" void callscope_rt_stub_post();

}  // namespace callscope::rt
