// Turning a raw session directory into a final trace file: what `record`
// does once the program has ended, and what `finish` does for a session
// whose recorder did not (the program ran without `record`, or `record` was
// killed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/output_claim.h"
#include "common/result.h"
#include "format/trace_format.h"

namespace callscope::format {

struct FinalizeOptions {
  int zstd_level = 3;
  // The output path, claimed by the caller for the whole run (it outlives
  // the call); null: the file is renamed over whatever is there.
  OutputClaim* claim = nullptr;
  // Leave the session as it is: the unfinished trace of a dead recorder is
  // not removed once read (`finish --force` of a session still written).
  bool keep_inputs = false;
  // InfoRecord flags the recorder knows of (kInfoNoSwitches).
  uint32_t info_flags = 0;
  // InfoRecord.block_devices: "MAJOR:MINOR NAME" lines.
  std::string block_devices;
};

struct FinalizeSummary {
  uint32_t processes = 0;
  uint32_t threads = 0;
  uint64_t events = 0;
  uint64_t calls = 0;
  uint64_t lost = 0;
  uint64_t torn = 0;
  // Threads that ran without being recorded (no event file: a full file
  // system, no descriptor left, ...).
  struct Untraced {
    uint32_t pid;
    uint32_t tid;
    int error;  // errno
    std::string name;
  };
  std::vector<Untraced> untraced_threads;
  uint64_t wait_ns = 0;  // the program's threads waited this long for the recorder (ring full)
  uint64_t waits = 0;
  uint64_t file_bytes = 0;
  bool profile = false;    // profile mode: `calls` are those of the snapshots' call trees
  uint32_t snapshots = 0;  // profile mode
  bool unwound = false;    // record --unwind: some of `calls` are frames found at allocations
  uint64_t unwound_calls = 0;      // those frames (the rest of `calls` are hooked calls)
  uint32_t unwound_processes = 0;  // processes whose calls were unwound (of `processes`)
  std::vector<std::string> warnings;
};

class LiveStream;
// With `live` (record): the trace it has been writing while the program ran
// is completed, with what is left in the rings. Without, a session that
// `record` was streaming when it died is continued from its trace (the
// temporary file it names), so nothing it had taken from the rings is lost.
Result<FinalizeSummary> finalize_session(const std::string& raw_dir, const std::string& out_path,
                                         const FinalizeOptions& options, LiveStream* live = nullptr);

// Samples the clock pair (TSC, CLOCK_MONOTONIC) the way the runtime does;
// used by the recorder and by finalization for calibration.
struct ClockPair {
  uint64_t tsc;
  uint64_t mono_ns;
};
ClockPair sample_clocks();
// The clock `clock` now, in ticks from `origin` (a value of that clock).
uint64_t ticks_since(ClockKind clock, uint64_t origin);
// Whether the TSC is invariant here (as the runtime decides its clock).
bool tsc_is_invariant();

}  // namespace callscope::format
