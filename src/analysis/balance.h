// Whether a thread's stream of events is balanced: every frame entered (or
// inherited) is closed once -- by an exit, an unwind or as truncated at the
// stream's end -- and no exit comes without its entry. `dump --stats` shows
// it per thread and `info` names the threads where it does not hold.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "format/trace_reader.h"

namespace callscope::analysis {

struct StreamBalance {
  uint64_t entries = 0, inherited = 0, exits = 0, unwound = 0, truncated = 0, stray = 0, lost = 0;
  uint32_t max_depth = 0;

  void add(const format::TraceEvent& e) {
    switch (e.kind) {
      case format::EventKind::kEntry: ++entries; break;
      case format::EventKind::kEntryInherited: ++inherited; break;
      case format::EventKind::kExit: ++exits; break;
      case format::EventKind::kExitUnwound: ++unwound; break;
      case format::EventKind::kExitTruncated: ++truncated; break;
      case format::EventKind::kExitStray: ++stray; break;
      case format::EventKind::kLost: lost += e.arg; break;
      case format::EventKind::kMark:
      case format::EventKind::kPause:
      case format::EventKind::kResume:
      case format::EventKind::kAlloc:
      case format::EventKind::kFree:
      case format::EventKind::kTag:
      case format::EventKind::kWait: break;
    }
    if (e.depth > max_depth) max_depth = e.depth;
  }
  // Frames opened and not closed (negative: closed more often than opened).
  int64_t unclosed() const {
    return static_cast<int64_t>(entries + inherited) - static_cast<int64_t>(exits + unwound + truncated);
  }
  bool balanced() const { return unclosed() == 0 && stray == 0; }
};

// Reads every event of `thread` (damaged blocks are skipped and added to the
// reader's problems()).
Result<StreamBalance> stream_balance(format::TraceReader& trace, uint32_t thread);

}  // namespace callscope::analysis
