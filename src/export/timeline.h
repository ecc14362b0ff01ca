// Calls in time, for the exports that draw a timeline (Perfetto, Chrome's
// trace events, speedscope's evented profiles, the HTML report): each
// thread's events read once, in order, turned into slices -- a begin and an
// end per call -- with the function of each resolved once per address.
//
// What a slice sink sees, per thread, between begin_thread and end_thread:
//  - begin(tick, fn) / end(tick), properly nested, ticks never decreasing;
//  - instant(tick, what, arg) for losses (arg: events dropped), stops and
//    their ends, and marks (arg: the mark's id).
// Frames open when the window or the thread's stream begins come as begins
// at its first tick; frames still open at its end end at its last tick.
//
// Filtered by -F/-m (`wanted`), only the paths through a wanted function are
// kept, as in `report --tree`: its calls, what they call, and the frames
// above them. Those frames are known only when a wanted call begins: their
// begins are sent then, with their own ticks, which never go before what
// the sink has seen (a frame seen already would have been sent already).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analysis/report_model.h"
#include "analysis/window.h"
#include "common/result.h"
#include "format/module_map.h"
#include "format/trace_reader.h"

namespace callscope::exporter {

enum class Instant { kLost, kPause, kResume, kMark };

class SliceSink {
 public:
  virtual ~SliceSink() = default;
  virtual void begin_thread(uint32_t thread) = 0;
  virtual void begin(uint64_t tick, uint32_t function) = 0;
  virtual void end(uint64_t tick) = 0;
  virtual void instant(uint64_t tick, Instant what, uint64_t arg) = 0;
  // `last_tick`: the thread's last event (or the window's end).
  virtual void end_thread(uint64_t last_tick) = 0;
};

// Functions by (name, module), numbered from 0 in order of first use.
class FunctionIds {
 public:
  explicit FunctionIds(const analysis::Resolver& resolve) : resolve_(resolve) {}
  uint32_t id(uint32_t process, uint64_t addr, uint64_t tick, bool reused);
  // A name of the trace's own, not a function: "[waited for recorder]".
  uint32_t named(const std::string& name);
  const std::vector<analysis::FunctionInfo>& functions() const { return functions_; }

 private:
  const analysis::Resolver& resolve_;
  std::vector<analysis::FunctionInfo> functions_;
  std::map<std::pair<std::string, std::string>, uint32_t> by_name_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> by_addr_;
  // The last lookups, direct-mapped by address: most entries hit here.
  struct Hit {
    uint64_t addr = 0;
    uint32_t process = ~0u;
    uint32_t id = 0;
  };
  std::vector<Hit> recent_ = std::vector<Hit>(4096);
};

struct TimelineOptions {
  analysis::TickWindow window;
  // Wanted functions (FunctionIds numbering); null: every one.
  std::function<bool(const analysis::FunctionInfo&)> wanted;
};

// Streams `threads` (in that order) into `sink`. Counts what was sent.
struct TimelineCounts {
  uint64_t slices = 0;
  uint64_t instants = 0;
  bool matched = false;  // with `wanted`: some call was wanted
};
Result<TimelineCounts> stream_timeline(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                       FunctionIds& functions, const TimelineOptions& o, SliceSink& sink);

}  // namespace callscope::exporter
