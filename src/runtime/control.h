// The runtime's control operations, and the socket through which
// `callscope ctl` reaches them from outside (control.cpp).
//
// The operations are what the public API (include/callscope/callscope.h)
// and the socket both call; each is safe from any thread, never from a hook.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace callscope::rt {

// Why a snapshot was written (RawDumpHeader::reason).
enum DumpReason : uint32_t {
  kDumpApi = 1,       // callscope_dump()
  kDumpControl = 2,   // callscope ctl PID dump
  kDumpInterval = 3,  // every CALLSCOPE_INTERVAL
  kDumpExit = 4,      // the process exited (written by finalization from the live tables)
};

// ---- operations (profile.cpp) ---------------------------------------------
void op_start();
void op_stop();
void op_clear();
// Writes a snapshot of every thread's call tree; returns its number, 0 when
// none was written (not in profile mode, or an I/O error). Numbers are the
// session's, 1, 2, ... over all its processes: what `report --dump K` takes.
uint32_t op_dump(uint32_t reason);
// Profile mode: the process's snapshots file and the session's snapshot
// counter, opened as the process starts (and in a fork child, after the
// reset): a program that changes its user later (a server's worker that
// becomes nobody) may not make files in the session any more, and
// `ctl dump` must still work for it.
void dumps_prepare();
// "key: value" lines, one per line, NUL-terminated; returns the length.
// Keys: mode, profiling (profile mode) or recording (record mode), pid,
// threads, live_threads, calls, nodes, buffer_bytes, buffer_use, dumps,
// lost_events (docs/ctl.md lists them all).
size_t op_status(char* buf, size_t cap);
// CALLSCOPE_INTERVAL in ns, 0 when not set.
uint64_t dump_interval_ns();

// ---- control socket (control.cpp) -----------------------------------------
// Starts the control thread: called once the process is initialized, and
// again in a fork child (the parent's thread does not exist there).
void control_start();
// Whether the control thread runs and serves a socket (attach needs both:
// detach comes through it).
bool control_serving();
// Removes the socket; called at process exit.
void control_stop();

}  // namespace callscope::rt
