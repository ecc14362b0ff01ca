// A text form of a trace, for hand-written golden tests:
//
//   clock monotonic | tsc TICKS_PER_NS
//   process pid=100 ppid=1 exe=/bin/app argv=app,-v exit=0|signal=11|exec|unknown [parent=K]
//           [start=TICK] [end=TICK]
//   module process=0 path=/bin/app low=0x400000 high=0x401000 bias=0 [build_id=HEX] [unloaded=TICK]
//   thread process=0 tid=100 name=main [start=TICK end=TICK] [untraced=ENOSPC] [unwound]
//   THREAD KIND TICK [ADDR] [sp=ADDR] [count=N]
//   THREAD alloc TICK PTR size=N op=OP  |  THREAD free TICK PTR op=OP
//   sys THREAD KIND NS [cpu=N] [state=MASK] [nr=N] [args=A,B,..] [ret=N] [waker=TID] [waker_pid=PID] [count=N]
//   events [syscalls] [faults] [io] [noswitches]
//   device MAJOR:MINOR NAME
//
// `sys` lines are the kernel's events of a thread (kSysEvents; NS is on
// the trace's clock: the header's origin is 0): KIND out (blocked),
// preempt (still runnable), in, lost (count=), state (sched_switch's
// prev_state mask: 1 S, 2 D), wakeup (waker=, waker_pid=), enter (nr=,
// args=), exit (nr=, ret=); `events` says which of the kernel's event
// groups were recorded (a trace without the line says nothing, as those
// written before record said it);
// KIND is entry, exit, unwound, truncated, stray, lost, inherited, mark or
// wait (ticks=N: the thread waited N ticks for the recorder, up to TICK);
// alloc and free are memory events (record --memory), OP the AllocOp's
// short name (malloc, calloc, realloc, new, new[], mmap, api, free,
// realloc-free, delete, delete[], munmap, api-free, ...: text_trace.cpp) or
// its number;
// blank lines and '#' comments are ignored. Errors name the line. A line
// `unchecked` lets snapshots, nodes and marks name processes and threads
// that were not declared (crafted damage: tests/golden/damaged.sh); module
// and thread records take any process index anyway. A thread's
// start and end are those of its events; start= and end= give them to a
// thread without events (profile mode). untraced=ERRNO (a name -- ENOSPC,
// EMFILE, ENFILE, EDQUOT, EFBIG, EACCES, EROFS, ENOMEM, EIO -- or a number)
// makes a thread that ran without being recorded (kThreadUntraced): it has
// no events, start= is when it was found untraced, and its end is its start.
// A process's start is 0 and its end the trace's last tick unless start=
// and end= say otherwise. `unwound` marks a thread whose calls were unwound
// at allocations (record --memory --unwind: kThreadUnwound, and the trace's
// kInfoUnwound).
//
// Profile mode (what finalize writes for CALLSCOPE_MODE=profile: kProfile
// blocks, kDumps, kMarks, InfoRecord flag kInfoProfile):
//
//   mode profile|record [filtered]
//   snapshot process=0 seq=1 reason=1|2|3|4 tick=TICK
//   node thread=0 fn=ADDR [parent=K] [calls=N total=T self=S min=T max=T
//        first=T first_tick=TICK] [excluded] [open]
//   mark process=0 [thread=N] tick=TICK id=N text=TEXT TO THE END OF THE LINE
//
// `snapshot` starts the next snapshot, written in the order given (each
// process's own, its final state -- reason 4 -- last); `seq` is its number,
// the K of `report --dump K`, when no two snapshots share one (the
// session's numbering), else K counts them in that order (older traces,
// whose processes numbered apart). Each `node` line adds a node to the tree of `thread` in the current
// snapshot; a tree's nodes are numbered 1, 2, ... in order, `parent` names
// an earlier one (0, the default, is the root). Unset statistics are those
// of a node without a completed call (min and first_tick none). A snapshot
// makes the trace a profile-mode trace; `mode profile` does without one. A
// thread's calls are those of its trees in final states (as finalize counts
// them). A mark without `thread` has no thread record.
#pragma once

#include <string>

#include "common/result.h"

namespace callscope::golden {

// Parses `text` and writes the trace to `out_path`.
Status text_to_trace(const std::string& text, const std::string& out_path);

}  // namespace callscope::golden
