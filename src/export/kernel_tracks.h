// What the kernel said of a thread (trace 1.9+, kSysEvents) as tracks of
// slices beside its calls, for the timeline exports: its CPU state (tiling
// its life: Running, Runnable, Sleeping: futex, Uninterruptible: fsync
// (disk vda), ...), its system calls (a slice from entry to return, the
// result as an argument), its block I/O requests (from start to the
// device's completion, in lanes: requests in flight together overlap),
// and, as instants, its page faults and CPU samples (named by the function
// of their instruction). Each track's slices are in time order and never
// overlap; all are cut to the export's window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/window.h"
#include "common/result.h"
#include "export/timeline.h"
#include "format/trace_reader.h"

namespace callscope::exporter {

struct KernelArg {
  std::string name;  // "woken_by_tid", "bytes", "result", ...
  uint64_t value = 0;
  bool is_signed = false;  // value is an int64_t (a system call's result, an error)
};

struct KernelSlice {
  uint64_t from = 0, to = 0;  // ticks; an instant's to == from
  std::string name;
  std::vector<KernelArg> args;
  bool instant = false;
};

struct KernelTrack {
  enum Kind : uint32_t { kState = 2, kSyscalls = 3, kIo = 4, kFaults = 5, kSamples = 6 };
  Kind kind = kState;
  uint32_t lane = 0;  // kIo: 0, 1, ... (one track each; at most 256)
  std::string name;   // "CPU state", "System calls", "Block I/O", "Block I/O 2", "Page faults", "CPU samples"
  std::vector<KernelSlice> slices;
};

// The kernel's tracks of `thread` that have something in `window`;
// `functions` names the instructions of faults and samples.
Result<std::vector<KernelTrack>> kernel_tracks(format::TraceReader& trace, uint32_t thread,
                                               analysis::TickWindow window, FunctionIds& functions);

}  // namespace callscope::exporter
