// What the engine (profile.cpp) and the operations on it (operations.cpp)
// share: the state a start, stop or clear leaves for each thread to act on,
// the settings both read, and the thread registry.
#pragma once

#include <stdint.h>

#include "runtime/runtime.h"

namespace callscope::rt {

inline constexpr uint32_t kMaxNodes = 1u << 21;  // per thread: 176 MiB of address space, used as needed

// operations.cpp, under its lock; threads read them when g_control changed.
extern uint64_t g_clear_seq;   // callscope_clear() calls so far
extern uint64_t g_clear_tick;  // the last one's tick

// profile.cpp, set once by engine_configure().
extern uint32_t g_mode_flags;   // fmt::kRawMode*
extern uint64_t g_interval_ns;  // CALLSCOPE_INTERVAL, 0: none

// Whether this thread writes events for a frame that is not excluded.
bool engine_emitting(const ThreadState* t);
// Whether variable `name` says yes (1, true, yes, on).
bool env_true(const char* name);
// Anonymous, unreserved memory; nullptr on failure.
void* map_anon(uint64_t bytes);

// The registry of threads (operations.cpp): every thread registers at its
// first hook and unregisters before its TLS goes away, so that operations
// can poke it and snapshots find its tree (kept after it ended).
void register_thread(ThreadState* t);
void unregister_thread(ThreadState* t);
// In a fork child: only the forking thread exists; locks start afresh.
void operations_reset_after_fork();

}  // namespace callscope::rt
