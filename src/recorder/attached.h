// `callscope attach`'s side of the recorder, beside recording.h (which loads
// the runtime and streams the trace): whether a process may take a runtime
// of ours, waiting for the recording's end without waking the machine, and
// detaching from the program and the children it forked meanwhile.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace callscope::recorder {

class Recording;

// Whether `pid` still runs (a zombie has ended: its parent has not reaped it).
bool running(pid_t pid);

// Why `pid` cannot take a runtime of ours: one traces it already (said
// with what controls it), or nothing.
std::optional<std::string> traced_already(pid_t pid);

enum class AttachEnd { kSignal, kDuration, kExit, kDetached };
// Blocks until the attached recording ends: `*signal_flag` set by a handler
// of the caller's (the signals that end it are delivered only while we
// wait), `duration_ns` (0: none) passed, the program ended, or `callscope
// detach` (the runtime removed its control socket). Event-driven: the
// program's exit through a pidfd; a detach is looked for 4 times a second
// (the recorder's thread drains the rings on its own).
AttachEnd wait_attached(pid_t pid, uint64_t duration_ns, const volatile sig_atomic_t* signal_flag);

// Unless the program ended or detached already: asks it to detach, then
// every child it forked meanwhile (each serves its own socket). A failure
// is said as a warning; the trace is written from what was recorded.
void detach_all(Recording& rec, pid_t pid, AttachEnd end);

}  // namespace callscope::recorder
