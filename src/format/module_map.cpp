#include "format/module_map.h"

#include <algorithm>

namespace callscope::format {

ModuleMap::ModuleMap(const std::vector<ModuleInfo>& modules) : modules_(modules) {
  for (uint32_t i = 0; i < modules.size(); ++i) {
    const ModuleRecord& r = modules[i].record;
    if (r.high <= r.low) continue;
    if (r.process_index >= spans_.size()) spans_.resize(r.process_index + 1);
    spans_[r.process_index].push_back({r.low, r.high, i});
  }
  reused_.resize(spans_.size());
  for (size_t p = 0; p < spans_.size(); ++p) {
    auto& s = spans_[p];
    std::stable_sort(s.begin(), s.end(), [](const Span& a, const Span& b) { return a.low < b.low; });
    // Overlaps of consecutive spans (by start), merged.
    uint64_t reach = 0;
    for (const Span& x : s) {
      if (x.low < reach) {
        const uint64_t lo = x.low, hi = std::min(reach, x.high);
        auto& r = reused_[p];
        if (!r.empty() && lo <= r.back().second)
          r.back().second = std::max(r.back().second, hi);
        else
          r.push_back({lo, hi});
      }
      reach = std::max(reach, x.high);
    }
  }
}

std::vector<uint32_t> ModuleMap::covering(uint32_t process, uint64_t addr) const {
  std::vector<uint32_t> out;
  if (process >= spans_.size()) return out;
  for (const Span& s : spans_[process]) {
    if (s.low > addr) break;
    if (addr < s.high) out.push_back(s.module);
  }
  std::sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) {
    const auto& ra = modules_[a].record;
    const auto& rb = modules_[b].record;
    return ra.load_tick != rb.load_tick ? ra.load_tick < rb.load_tick : a < b;
  });
  return out;
}

int64_t ModuleMap::at(uint32_t process, uint64_t addr, uint64_t tick) const {
  const std::vector<uint32_t> c = covering(process, addr);
  if (c.empty()) return kNone;
  if (c.size() == 1) return c.front();
  auto unload = [&](uint32_t m) {
    const ModuleRecord& r = modules_[m].record;
    return (r.flags & kModuleUnloaded) ? r.unload_tick : kNoTick;
  };
  int64_t loaded = kNone, next = kNone, last_gone = kNone;
  for (uint32_t m : c) {  // in load order
    const uint64_t load = modules_[m].record.load_tick;
    if (load <= tick && tick < unload(m)) loaded = m;  // the latest such
    if (load > tick && next == kNone) next = m;
    if (unload(m) <= tick) last_gone = m;
  }
  if (loaded != kNone) return loaded;
  if (next != kNone) return next;
  return last_gone;
}

bool ModuleMap::has_reuse(uint32_t process) const { return process < reused_.size() && !reused_[process].empty(); }

bool ModuleMap::reused(uint32_t process, uint64_t addr) const {
  if (process >= reused_.size()) return false;
  const auto& r = reused_[process];
  auto it = std::upper_bound(r.begin(), r.end(), addr,
                             [](uint64_t a, const std::pair<uint64_t, uint64_t>& x) { return a < x.first; });
  return it != r.begin() && addr < std::prev(it)->second;
}

}  // namespace callscope::format
