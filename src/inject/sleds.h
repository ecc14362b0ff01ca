// gcc's patchable entries in a running process (callscope attach): gcc
// emits -fpatchable-function-entry=5 as five one-byte nops, and a thread
// preempted between two of them would resume inside whatever replaced them.
// The runtime only changes a site whose five bytes are one instruction; so
// before it is loaded, every such sled of the process is made one five-byte
// nop while all of its threads are stopped, and any thread found inside a
// sled is moved past it (the nops it skips do nothing). The runtime gives
// the original bytes back at the detach (from the file: that direction is
// safe with the threads running).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace callscope::inject {

struct SledResult {
  bool ok = true;
  std::string error;       // why not (the process is left as it was)
  uint64_t sleds = 0;      // sites made one five-byte nop
  uint64_t moved = 0;      // threads found inside a sled and moved past it
  uint64_t threads = 0;    // threads stopped
  double stopped_ms = 0;   // how long they were (0 when there was nothing to do)
  std::vector<uint64_t> joined;  // the sites made one nop (for part_sleds)
};

// For process `pid`: nothing to do (no stop) when no module it has mapped
// lists one-byte-nop sleds in __patchable_function_entries; nothing done
// when a thread blocks SIGTRAP (the runtime patches no site then).
SledResult join_single_nop_sleds(pid_t pid);

// Undoes it (an attach that failed after it): the five one-byte nops back,
// every thread stopped again meanwhile.
SledResult part_sleds(pid_t pid, const std::vector<uint64_t>& sites);

}  // namespace callscope::inject
