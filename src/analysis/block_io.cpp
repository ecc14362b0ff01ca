#include "analysis/block_io.h"

#include <algorithm>
#include <map>
#include <utility>

namespace callscope::analysis {

std::vector<IoRequest> block_io_requests(const std::vector<format::SysEvent>& events) {
  constexpr size_t kMaxOpen = 4096;
  std::vector<IoRequest> out;
  std::map<std::pair<uint64_t, uint64_t>, std::vector<size_t>> open;  // (device, sector) -> requests, oldest first
  size_t n_open = 0;
  for (const format::SysEvent& e : events) {
    if (e.kind == format::SysKind::kIoStart) {
      if (n_open >= kMaxOpen) {
        open.clear();
        n_open = 0;
      }
      open[{e.arg, e.args[0]}].push_back(out.size());
      ++n_open;
      out.push_back({&e, 0, 0});
    } else if (e.kind == format::SysKind::kIoDone) {
      auto it = open.find({e.arg, e.args[0]});
      if (it == open.end()) continue;
      std::vector<size_t>& waiting = it->second;
      for (size_t k = waiting.size(); k-- > 0;) {
        IoRequest& r = out[waiting[k]];
        if (r.start->mono_ns > e.mono_ns) continue;
        r.done_ns = std::max<uint64_t>(e.mono_ns, 1);
        r.error = e.value;
        waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(k));
        --n_open;
        break;
      }
      if (waiting.empty()) open.erase(it);
    }
  }
  return out;
}

}  // namespace callscope::analysis
