// TraceReader: the kernel's events of a thread (kSysEvents, trace 1.9).
#include <algorithm>

#include "format/trace_reader.h"

namespace callscope::format {

bool TraceReader::has_sys_events() const {
  return std::any_of(blocks_.begin(), blocks_.end(),
                     [](const BlockRef& b) { return b.header.type == static_cast<uint16_t>(BlockType::kSysEvents); });
}

bool TraceReader::has_switches() const {
  return has_sys_events() && !(info_.record.flags & kInfoNoSwitches);
}

Result<std::vector<SysEvent>> TraceReader::sys_events(uint32_t thread) {
  std::vector<SysEvent> out;
  if (thread >= threads_.size()) return out;
  const ThreadRecord& t = threads_[thread].record;
  const uint32_t pid = process(t.process_index).record.pid;
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kSysEvents) || b.header.aux0 != t.tid ||
        b.header.aux1 != pid)
      continue;
    auto p = payload(b);
    if (!p) {
      problem(b, p.error().message());
      continue;
    }
    if (auto st = decode_sys_events(*p, b.header.count, b.header.first_tick, out); !st)
      problem(b, st.error().message());
  }
  std::stable_sort(out.begin(), out.end(), [](const SysEvent& a, const SysEvent& b) { return a.mono_ns < b.mono_ns; });
  return out;
}

uint64_t TraceReader::mono_to_tick(uint64_t mono_ns) const {
  if (mono_ns <= header_.origin_mono_ns) return 0;
  return static_cast<uint64_t>(static_cast<double>(mono_ns - header_.origin_mono_ns) * header_.ticks_per_ns);
}

}  // namespace callscope::format
