// Internal declarations of libcallscope-rt, the only callscope code that runs
// inside the traced program.
//
// Rules for everything in src/runtime (see docs/architecture.md, "The hot path"):
//  - the hot path (the two hooks) takes no lock, calls no malloc, no stdio, no
//    function that may set errno; slow paths that make system calls save and
//    restore errno;
//  - thread-local state is one trivially destructible struct in initial-exec
//    TLS: a destructor registration or a dynamic-TLS access could call malloc,
//    which may be interposed and instrumented, and re-enter us;
//  - every function here is hidden and none is instrumented (the runtime is
//    built without -finstrument-functions; CALLSCOPE_NOINSTR protects
//    against a build that adds it anyway).
#pragma once

#include <dlfcn.h>
#include <stdint.h>

#include "format/trace_format.h"

#define CALLSCOPE_EXPORT extern "C" __attribute__((visibility("default"), no_instrument_function))
#define CALLSCOPE_NOINSTR __attribute__((no_instrument_function))
#define CALLSCOPE_LIKELY(x) __builtin_expect(!!(x), 1)
#define CALLSCOPE_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace callscope::rt {

namespace fmt = callscope::format;
struct RetFrame;

// One frame of the shadow stack: what later capabilities (profile mode,
// stack depth) build on.
struct Frame {
  uint64_t fn;    // absolute address of the instrumented function
  uint64_t sp;    // caller's stack pointer at the hook call, absolute
  uint64_t tick;  // entry time, relative to the process base
  uint64_t key;   // frame_key(): which hook call entered it, from which physical frame
};

enum ThreadStatus : uint8_t {
  kUninit = 0,    // no hook has run on this thread yet
  kActive = 1,
  kDisabled = 2,  // initialization failed: hooks do nothing
  kExited = 3,    // the thread's exit handler ran
  kEngine = 4,    // profile mode, or recording with filters: profile.cpp's hooks
  kStopped = 5,   // callscope_stop(): hooks keep the shadow stack, write nothing, look for callscope_start()
};

// All per-thread state. Zero-initialized, trivially destructible.
struct ThreadState {
  uint64_t* pos;            // next free event word in the mapped chunk
  uint64_t* end;            // end of the chunk less the nested reserve
  uint64_t* hard_end;       // one past the last word of the chunk
  Frame* stack;             // shadow stack (anonymous mapping)
  uint32_t depth;           // frames stored in `stack`
  uint32_t overflow;        // frames deeper than the capacity, not stored
  uint64_t sp_base;         // stack pointer that entry sp_rel is relative to
  // The gate of every hook: in_hook, status and poked read as one 32-bit
  // word; the fast path runs only when it is kGateOpen (or kGateEngine).
  union {
    struct {
      volatile uint8_t in_hook;  // a hook of this thread is running (re-entry guard)
      uint8_t status;            // ThreadStatus
      volatile uint8_t poked;    // set by start/stop/clear from any thread: look at g_control
      uint8_t gate_pad;          // 1 when the thread could not be registered (it cannot be poked)
    };
    uint32_t gate;
  };
  uint8_t in_slow;          // chunk switch in progress
  uint8_t dropping;         // events were dropped: a kLost + resync is due
  uint8_t no_space;         // the last chunk allocation failed (disk full)
  uint8_t nested;           // a hook interrupted another hook of this thread
  int32_t fd;               // the thread's event file
  uint32_t tid;
  fmt::RawThreadHeader* header;  // mapped first page of the file
  uint64_t* chunk;          // grow mode: the mapped chunk; ring mode: the whole ring
  uint64_t chunk_bytes;
  uint64_t file_end;        // bytes of the file allocated so far
  uint64_t lost_pending;    // dropped since the last kLost record
  uint64_t lost_since;      // tick of the first of them: where the gap begins
  uint64_t ring_segment;    // ring mode: the segment being written (counted from 0)
  // Ring mode: a wait for the recorder that enter_segment just made, to be
  // written after the event it was made for (reserve_slow): its length and
  // end, in ticks relative to the process base. 0: none.
  uint64_t wait_ticks;
  uint64_t wait_end;
  // Start/stop/clear: the g_control value this thread last acted on.
  uint64_t control_seen;
  // Stops and starts (g_switches) this thread has acted on: odd while it is
  // stopped. A stop is a pause of the thread's stream, from its tick; the
  // shadow stack is kept through it.
  uint64_t switches_seen;
  uint64_t pause_tick;      // the engine: where the current pause began
  // The engine (profile.cpp): profile mode, and recording with filters.
  fmt::RawProfHeader* prof;  // the mapped t<tid>.prof (header, stack, nodes)
  fmt::RawProfNode* nodes;
  fmt::RawProfFrame* pstack;
  uint32_t pdepth;          // frames in pstack
  uint32_t poverflow;       // frames deeper than the stack, not stored
  uint32_t node_count;
  uint32_t node_capacity;
  uint64_t* pkey;           // frame_key() of each frame of pstack (pkey[-1]: the sentinel's)
  uint32_t* hash;           // (parent, fn) -> node, open addressing, 0 = empty
  uint32_t hash_mask;
  uint32_t chrono_depth;    // chrono frames open: events are written while > 0
  int32_t prof_fd;
  uint8_t eslow;            // every call takes the engine's slow path (events, minimum duration)
  uint8_t pause_written;    // the engine wrote a kPause for the current pause
  uint64_t* pbank;          // the engine, while stopped: what each open frame added to its node (profile.cpp)
  // Library calls (patch/libcall.cpp): the calls whose return address is
  // replaced, innermost last; mapped at the thread's first hooked call.
  RetFrame* rstack;
  uint32_t rdepth;
  uint32_t lib_serial;      // counts hooked entries: the call site given to the hooks
};

inline constexpr uint32_t kStackCapacity = 1u << 20;  // frames (32 MiB reserved)
inline constexpr uint32_t kGateOpen = uint32_t{kActive} << 8;  // status active, not in a hook, not poked
inline constexpr uint32_t kGateEngine = uint32_t{kEngine} << 8;

// Start, stop and clear (control.h): (sequence << 1) | on. The operation
// then pokes every live thread (ThreadState::poked), whose next hook takes
// the slow path and acts on a value other than its control_seen first: the
// fast path pays nothing for it.
extern uint64_t g_control;
CALLSCOPE_NOINSTR inline uint64_t control_word() { return __atomic_load_n(&g_control, __ATOMIC_RELAXED); }
// Stops and starts so far (operations.cpp, under its lock): odd while
// stopped. The tick of switch k is g_switch_ticks[k % kSwitchHistory],
// stored before g_switches (release). A thread that made no call meanwhile
// acts on every switch it missed, in order, at its next hook: a thread
// asleep through a stop and a start still pauses from the one to the other.
inline constexpr uint32_t kSwitchHistory = 64;
extern uint64_t g_switches;
extern uint64_t g_switch_ticks[kSwitchHistory];
CALLSCOPE_NOINSTR inline uint64_t switches_now() { return __atomic_load_n(&g_switches, __ATOMIC_ACQUIRE); }
CALLSCOPE_NOINSTR inline uint64_t switch_tick(uint64_t k) { return g_switch_ticks[k % kSwitchHistory]; }
// The first switch a thread that has seen `seen` of `now` still acts on: at
// most kSwitchHistory - 4 behind (the slots of older ones may be reused),
// skipping whole stop-start pairs.
CALLSCOPE_NOINSTR inline uint64_t first_switch_to_act_on(uint64_t seen, uint64_t now) {
  constexpr uint64_t kMaxBehind = kSwitchHistory - 4;
  if (now - seen > kMaxBehind) seen += (now - seen - kMaxBehind + 1) & ~uint64_t{1};
  return seen + 1;
}
// What the thread has acted on, also in its raw headers for the reader.
CALLSCOPE_NOINSTR inline void set_switches_seen(ThreadState* t, uint64_t seen) {
  __atomic_store_n(&t->switches_seen, seen, __ATOMIC_RELAXED);
  if (t->header) t->header->switches_seen = seen;
  if (t->prof) t->prof->switches_seen = seen;
}
// The last words of every chunk are kept for hooks of a signal handler that
// interrupted a hook: those may not switch chunks (see reserve_slow), so they
// need room of their own when the outer hook stopped at a full chunk.
inline constexpr uint64_t kNestedReserveWords = 2048;  // 16 KiB: 1024 entries

// initial-exec: a plain %fs-relative access. The general-dynamic model would
// call __tls_get_addr, which can allocate on a thread's first access.
extern __thread ThreadState tls_thread __attribute__((tls_model("initial-exec")));
CALLSCOPE_NOINSTR inline ThreadState* current_thread() { return &tls_thread; }

// Ring mode: `record` drains the thread files while the program runs; its
// pid, to tell a slow drainer from a dead one. 0: no recorder, grow mode.
extern int g_recorder_pid;
// CALLSCOPE_DROP_WHEN_BEHIND=1 (record --drop-when-behind): a writer whose
// ring is full drops events instead of waiting for the recorder.
extern bool g_drop_when_behind;

// What tells apart the frames an entry finds at its own stack pointer.
// GCC and clang inline calls and keep their hooks: an inlined callee is
// entered at the stack pointer of the physical frame it runs in, as a callee
// of the frame on top. A frame left there by a longjmp or an exception is no
// caller, yet the next call of the function that resumed lands exactly there
// when the callee's frame has the abandoned one's size. The call site the
// compiler passes to a hook is the return address of the physical frame (for
// an inlined callee too), and the hook's own return address -- the word below
// `sp`, the hook's CFA -- says which hook call runs. A frame's key is that
// return address, with the low 16 bits of the call site xored above its bits
// (user-space code addresses fit in 47), and at an entry at the top frame's
// stack pointer the top frame is
//  - live when the call site is the same (the same physical frame) and the
//    hook call another (a callee inlined in it);
//  - dead when the call site differs: another physical frame, now gone;
//  - dead when the hook call is the same: the same call made again after the
//    frame it made first was abandoned (a loop around setjmp).
// Undecided, taken as live: call sites that differ by a multiple of 64 KiB,
// and an indirect call made again from the same call site to another
// function whose frame has the same size. Such a dead frame is closed later,
// at its caller's exit or at an entry above it.
CALLSCOPE_NOINSTR inline uint64_t frame_key(uint64_t sp, uint64_t site) {
  return *reinterpret_cast<const uint64_t*>(sp - 8) ^ (site << 48);
}

// Whether an entry at `sp` with key `key` finds the top frame (entered at
// `top_sp` with `top_key`) dead: below sp, or at sp and not the entry's caller
// (frame_key). Every entry computes and stores its key (a load of a word the
// call just wrote, a shift, an xor); only an entry at the top frame's sp
// (every inlined call) pays for this test, with an xor and a compare.
CALLSCOPE_NOINSTR inline bool entry_finds_dead(uint64_t top_sp, uint64_t top_key, uint64_t sp, uint64_t key) {
  // Live: same call site (no bit from 48 up differs), another hook call (a bit below does).
  return top_sp < sp || (top_sp == sp && ((top_key ^ key) - 1) >= fmt::kRawAddrMask);
}

// Whether an exit hook was called as a tail call after its function's
// epilogue (`jmp __cyg_profile_func_exit`: GCC and clang do so when
// optimizing). Such a hook returns straight to the function's caller, so its
// own return address -- the word just below `sp`, the hook's CFA -- is the
// function's return address, which is what the compiler passes as the call
// site. A hook called from inside the function returns into the function.
CALLSCOPE_NOINSTR inline bool exit_is_tail(uint64_t sp, uint64_t site) {
  return *reinterpret_cast<const uint64_t*>(sp - 8) == site;
}

// Whether an exit of the top frame's function with stack pointer `sp` and
// call site `site` closes the top frame (entered at `top_sp`, its caller's
// frame at `parent_sp`; ~0 when there is none). An exit hook called from
// inside the function runs in the function's own frame: sp <= top_sp. One
// called after the epilogue runs at the caller's stack pointer: above top_sp
// but not above parent_sp. Any other exit -- above top_sp and not a tail
// call, or above parent_sp -- is one of an outer activation of the function,
// and the frames above that one are dead (longjmp, exceptions): clang -O0
// exits a function that caught an exception thrown in a recursive call of
// itself from inside its frame, at the sp of the frame under the top one.
// The return address is read only for an exit above top_sp.
CALLSCOPE_NOINSTR inline bool exit_closes(uint64_t top_sp, uint64_t parent_sp, uint64_t sp, uint64_t site) {
  return sp <= top_sp || (sp <= parent_sp && exit_is_tail(sp, site));
}

// The frame an exit of `fn` at `sp` closes when it is not the top one, -1
// when no open frame of fn is; frames above it are dead. For the recording's
// and the engine's stacks alike (their stack pointers never increase towards
// the top).
//  - An exit called after the epilogue (`tail`, exit_is_tail) runs at the
//    stack pointer its function's caller had at the call: the function was
//    entered below sp, and its caller is not below sp. So the frame closed is
//    the lowest frame of fn among those on top entered below sp; the frames of
//    fn above it are inner activations left by a throw (clang runs no exit
//    hook while unwinding), and the frames of fn below sp are outer ones,
//    still running.
//  - An exit called inside the function runs at or below the function's
//    entry sp: the topmost frame of fn not deeper than sp, else the topmost
//    frame of fn.
template <class F>
CALLSCOPE_NOINSTR int64_t exit_frame_index(const F* stack, uint32_t depth, uint64_t fn, uint64_t sp, bool tail) {
  int64_t found = -1;
  if (tail) {
    for (int64_t i = static_cast<int64_t>(depth) - 1; i >= 0 && stack[i].sp < sp; --i)
      if (stack[i].fn == fn) found = i;
    return found;
  }
  for (int64_t i = static_cast<int64_t>(depth) - 1; i >= 0; --i) {
    if (stack[i].fn != fn) continue;
    if (found < 0) found = i;
    if (stack[i].sp >= sp) return i;
  }
  return found;
}

// `callscope attach` (attach.cpp): the runtime was loaded into a running
// process, with RTLD_LOCAL, and its settings come from the attach request,
// not the environment. Set before initialization, never cleared.
extern bool g_attached;
// A setting of the runtime (CALLSCOPE_MODE, ...): the environment's, or
// under attach the request's; nullptr when unset.
const char* setting(const char* name);
// Detached (attach.cpp): hooks, patches and wrappers are gone from the
// program; what still reaches the runtime (a return through a replaced
// return address, a thread's end) records nothing.
bool detached();
// Whether our constructor runs on the thread `callscope attach` started to
// load us (which then calls callscope_rt_attach): initialization waits.
bool loaded_for_attach();
// The control request "detach": nullptr when done, else the error reply.
const char* op_detach();
// The end of the process's record at a detach (process.cpp).
void record_detach();
// At a detach, after record_detach: every file of the session let go of
// (operations.cpp), each thread's (thread.cpp, profile.cpp) and the
// process's (process.cpp); /dev/null takes the place of each.
void release_files_at_detach();
void thread_release_file(ThreadState* t, int devnull);
void engine_release_prof(fmt::RawProfHeader* prof);
void process_release_files(int devnull);
void replace_session_fd(int fd, int devnull);
// After a dlopen or dlclose (`opened`: a dlopen; `by_our_dlopen`: in our
// wrapper, right after the dynamic linker): the module map, the GOT hooks
// and the patchable entries brought up to date (process.cpp).
void modules_changed(bool opened, bool by_our_dlopen);
// Something the user should know: on stderr, as "callscope: ..."; attached,
// in the process directory's `notices` file, which attach prints (the
// program's stderr is not the user's).
void notice(const char* a, const char* b = "", const char* c = "", const char* d = "");  // /dev/null over fd if it is still one of the session's

// Attached: `name` as some loaded module other than ours defines it, for a
// definition the global scope does not have (libgcc_s brought in with
// RTLD_LOCAL by a plugin); nullptr if none does (attach.cpp).
void* definition_in_any_module(const char* name);

// The next definition of `name` after ours (dlsym RTLD_NEXT), looked up
// once into *cache: for the wrappers the runtime exports over libc's and
// libgcc's functions. Loaded by attach, the runtime is in no scope of the
// program's: the program's own definition is the global scope's, else any
// module's.
template <class Fn>
CALLSCOPE_NOINSTR Fn next_symbol(Fn* cache, const char* name) {
  Fn f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (!f) {
    f = reinterpret_cast<Fn>(::dlsym(g_attached ? RTLD_DEFAULT : RTLD_NEXT, name));
    if (!f && g_attached) f = reinterpret_cast<Fn>(definition_in_any_module(name));
    __atomic_store_n(cache, f, __ATOMIC_RELEASE);
  }
  return f;
}

// Clock: ticks relative to the process base.
extern bool g_use_tsc;
extern uint64_t g_base_tick;

CALLSCOPE_NOINSTR inline uint64_t read_tsc() {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t{hi} << 32) | lo;
}
uint64_t mono_ns();
uint64_t realtime_ns();
CALLSCOPE_NOINSTR inline uint64_t absolute_tick() { return CALLSCOPE_LIKELY(g_use_tsc) ? read_tsc() : mono_ns(); }
CALLSCOPE_NOINSTR inline uint64_t now_tick() { return absolute_tick() - g_base_tick; }
bool tsc_is_invariant();

// Thread lifecycle and the slow path of event emission (thread.cpp).
bool thread_init(ThreadState* t);
void thread_exit(void* arg);
void thread_reset_after_fork(ThreadState* t);
void thread_drop_after_fork(ThreadState* t);  // a fork child not traced
uint64_t* reserve_slow(ThreadState* t, unsigned words);
// Stop and start in record mode (control_changed): the pause from `tick`,
// and its end at `tick`, the resync first (format/trace_format.h, "Gaps").
void record_pause(ThreadState* t, uint64_t tick);
void record_resume(ThreadState* t, uint64_t tick);
// The end of a pause, for the recording's and the engine's stacks alike:
// `frame(t, i, &f)` gives frame i of `n` (false: not in the stream), each
// written as kEntryInherited with its own entry tick, then kResume at
// `tick`; the whole of it or nothing (thread.cpp).
void emit_resume(ThreadState* t, uint64_t tick, uint32_t n, bool (*frame)(const ThreadState*, uint32_t, Frame*));

// The engine (profile.cpp): profile mode and filtered recording.
extern bool g_engine;          // threads run the engine's hooks
extern bool g_profile_mode;    // CALLSCOPE_MODE=profile
void engine_configure();       // reads CALLSCOPE_*; once, at process init
void engine_write_mode();      // the kMode meta record of this process
void hooks_use_engine();       // hooks.cpp: the trampolines jump to the engine's hooks
void hooks_ignore();           // hooks.cpp: ... to nothing (record --unwind)
bool engine_thread_init(ThreadState* t);
void engine_thread_exit(ThreadState* t);
void engine_reset_after_fork(ThreadState* t);
void engine_drop_after_fork(ThreadState* t);
// A hook saw g_control change: stop, start or clear. The thread acts on
// them (its status is then kStopped while stopped); the hook goes on after.
void control_changed(ThreadState* t);
// The slow side of every hook's gate (hooks.cpp), the thread not inside a
// hook: sets the thread up on its first event, acts on start/stop/clear;
// true (in_hook set, the caller clears it) when the thread records or is
// stopped, false when it cannot (disabled, exited).
bool slow_gate_enter(ThreadState* t);
// The same at a thread's end (thread exit, process exit): a pause, or the
// end of one, that the thread has not written yet.
void control_catch_up(ThreadState* t);

// Which processes are traced (follow.cpp; record --follow).
enum class FollowMode { kHooked, kAll, kNone };
enum class FollowDecision {
  kTrace,  // set the process up now
  kLater,  // dormant: at its first hook, or a dlopen that brings hooks
  kNever,  // --follow none, not the process record started
};
// At the constructor: reads the settings, and the loaded modules if needed.
FollowDecision follow_decision();
// Whether something loaded calls the runtime (hooks, the API, patchable
// entries, -mnop-mcount sites) or the settings hook every process; looks
// at the modules not looked at yet. Sticky once true.
bool process_has_hooks();
// A fork child of a traced process is traced too (else made inert).
bool follow_fork_child();
// In the dlopen wrapper of a dormant process: the new modules bring hooks.
bool follow_dormant_dlopen();
// A line for record's count of processes not traced (session file
// untraced-processes); `taken_back`: a dormant process set up after all.
void note_untraced_process(bool taken_back);

// Process lifecycle (process.cpp).
bool process_ensure_init();
// Ids of marks and tags, unique in the process: 1, 2, ...
uint32_t next_mark_id();
// record --memory: the memory API records (memory.cpp).
extern bool g_memory;
void tags_after_fork();
// record --memory: /proc/self/smaps into the process directory ("start",
// "dlopen", "exit"), for the resident set by module.
void snapshot_smaps(const char* reason);
// Whether it has run and succeeded (never starts it).
bool process_ready();
// Opens NAME (as openat) in the current process's directory of the session,
// relative to the directory the runtime made and checked, never through a
// path another user could change; -1 with errno on failure.
int process_dir_open(const char* name, int flags, unsigned mode);
// The same in the session's directory (files all its processes share).
int session_dir_open(const char* name, int flags, unsigned mode);
// Rings the recorder's doorbell (doorbell.cpp): it has work. Async-signal-
// safe, keeps errno; does nothing in a session without a recorder.
void doorbell_ring();
// Removes NAME from the current process's directory (a file we made and
// could not set up); errno is kept.
void process_dir_unlink(const char* name);
// Appends one record to the process's meta file. It lands even when the
// raw session's file system is full, within the meta file's reserve
// (process.cpp says how much).
void write_meta(fmt::RawMetaType type, const void* body, uint32_t body_size, const void* extra1,
                uint32_t extra1_size, const void* extra2, uint32_t extra2_size);
extern unsigned long g_thread_key;  // pthread_key_t

// Event emission. Reserve first, then fill: a signal handler that interrupts
// us between the two writes its events after our slot, never over it.
CALLSCOPE_NOINSTR inline void signal_fence() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

// Returns the old pos and advances it by `words`, in one instruction.
CALLSCOPE_NOINSTR inline uint64_t* advance_pos(ThreadState* t, unsigned words) {
  uintptr_t p = uintptr_t{words} * 8;
  __asm__ __volatile__("xaddq %0, %1" : "+r"(p), "+m"(t->pos) : : "memory");
  return reinterpret_cast<uint64_t*>(p);
}

CALLSCOPE_NOINSTR inline uint64_t* reserve(ThreadState* t, unsigned words) {
  // `end` is read first, then `pos` is advanced by one unlocked xadd: a
  // signal handler on this thread sees pos either before or after, never half
  // an update, and it cannot switch chunks under us (reserve_slow refuses to
  // while t->nested), so `end` stays valid for the slot we got.
  uint64_t* const end = t->end;
  uint64_t* slot = advance_pos(t, words);
  if (CALLSCOPE_UNLIKELY(slot + words > end)) return reserve_slow(t, words);
  return slot;
}

CALLSCOPE_NOINSTR inline uint64_t word0(fmt::RawKind kind, uint64_t tick) {
  return (tick << fmt::kRawKindBits) | static_cast<uint8_t>(kind);
}

// Event words are written with non-temporal stores: the runtime never reads
// them back, and a normal store to a fresh cache line would first fetch the
// line from memory (a read for ownership) every few calls. The stores drain
// from the write-combining buffers on their own, also when the process dies
// (the buffers belong to the CPU, not to the process).
// (movnti in asm, not the SSE2 builtin: the same store from a general
// register, also where vector registers are off, patch/stub_fast.cpp.)
CALLSCOPE_NOINSTR inline void store_word(uint64_t* p, uint64_t v) {
  __asm__("movnti %1, %0" : "=m"(*p) : "r"(v));
}

CALLSCOPE_NOINSTR inline void emit1(ThreadState* t, fmt::RawKind kind, uint64_t tick) {
  uint64_t* p = reserve(t, 1);
  if (p) store_word(p, word0(kind, tick));
}

// w0 is stored before w1: a crash between leaves w1 == 0, which the reader
// recognizes as a torn event (no two-word event has a zero second word).
CALLSCOPE_NOINSTR inline void emit2(ThreadState* t, fmt::RawKind kind, uint64_t tick, uint64_t w1) {
  uint64_t* p = reserve(t, 2);
  if (!p) return;
  store_word(p, word0(kind, tick));
  signal_fence();
  store_word(p + 1, w1);
}

// An entry (or inherited entry) with its stack pointer, rebasing when the
// distance to the base does not fit the 16 bits of sp_rel. A nested hook
// (signal handler inside a hook) must not move the base under the hook it
// interrupted, so it stores kSpUnknown instead.
inline constexpr int64_t kSpUnknown = -32768;
CALLSCOPE_NOINSTR inline void emit_entry(ThreadState* t, fmt::RawKind kind, uint64_t tick, uint64_t fn,
                                         uint64_t sp) {
  // Arithmetic shift, not division: sp is a multiple of kSpUnit (16).
  int64_t rel = static_cast<int64_t>(t->sp_base - sp) >> 4;
  if (CALLSCOPE_UNLIKELY(static_cast<uint64_t>(rel + 32767) > 65534)) {
    if (t->nested || sp == 0) {  // 0: not known (frames from unwinding)
      rel = kSpUnknown;
    } else {
      emit2(t, fmt::RawKind::kSpBase, tick, sp);
      t->sp_base = sp;
      rel = 0;
    }
  }
  emit2(t, kind, tick, (fn & fmt::kRawAddrMask) | (static_cast<uint64_t>(static_cast<uint16_t>(rel)) << 48));
}

}  // namespace callscope::rt
