// The names of threads over time, at finalization: each thread's header
// holds the name it had when it started (or at its clean exit), and the
// kThreadName meta records the names given while it ran (pthread_setname_np,
// prctl). This decides which thread each record names, each thread's last
// name, and the history kept in the kThreadNames block. Pure: tested on
// records built in memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/trace_format.h"

namespace callscope::format {

// A kThreadName record of process `process_index`, its tick in trace ticks.
struct Rename {
  uint32_t process_index = 0;
  uint32_t tid = 0;
  uint64_t tick = 0;
  std::string name;
  std::string old_name;  // "" when unknown
};

struct NameChange {
  uint32_t thread_index = 0;
  uint64_t tick = 0;  // trace ticks; the thread's start for the name it started with
  std::string name;
};

// `names[i]` is thread i's name from its header: read at its clean exit
// (kThreadExitedCleanly), else at its start. A rename belongs to the thread
// of its process with its tid that had started by then (the latest such; one
// that had exited cleanly before it yields to a later thread of the same
// tid), else to the first one that started after it (named just before its
// first hook: the name it starts with). Updates `names` to each thread's
// last name -- the header's for a thread that exited cleanly, else the last
// rename's -- and returns the history of the threads renamed while they ran:
// the name each started with (at its start tick), then each change, sorted
// by thread and tick.
std::vector<NameChange> resolve_thread_names(const std::vector<ThreadRecord>& threads, std::vector<std::string>& names,
                                             std::vector<Rename> renames);

}  // namespace callscope::format
