// A text form of a trace, for hand-written golden tests:
//
//   clock monotonic | tsc TICKS_PER_NS
//   process pid=100 ppid=1 exe=/bin/app argv=app,-v exit=0|signal=11|exec|unknown [parent=K]
//   module process=0 path=/bin/app low=0x400000 high=0x401000 bias=0 [build_id=HEX] [unloaded=TICK]
//   thread process=0 tid=100 name=main
//   THREAD KIND TICK [ADDR] [sp=ADDR] [count=N]
//
// KIND is entry, exit, unwound, truncated, stray, lost, inherited or mark;
// blank lines and '#' comments are ignored. Errors name the line.
#pragma once

#include <string>

#include "common/result.h"

namespace callscope::golden {

// Parses `text` and writes the trace to `out_path`.
Status text_to_trace(const std::string& text, const std::string& out_path);

}  // namespace callscope::golden
