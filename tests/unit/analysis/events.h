// Building event streams in memory for the analysis tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/report_model.h"
#include "format/trace_reader.h"

namespace callscope::analysis::test {

// Appends events with the depth the reader would give them.
class Events {
 public:
  Events& entry(uint64_t tick, uint64_t addr) { return open(format::EventKind::kEntry, tick, addr); }
  Events& inherited(uint64_t tick, uint64_t addr) { return open(format::EventKind::kEntryInherited, tick, addr); }
  Events& exit(uint64_t tick) { return close(format::EventKind::kExit, tick); }
  Events& unwound(uint64_t tick) { return close(format::EventKind::kExitUnwound, tick); }
  Events& truncated(uint64_t tick) { return close(format::EventKind::kExitTruncated, tick); }
  Events& lost(uint64_t tick, uint64_t count) {
    v.push_back({format::EventKind::kLost, depth_, tick, 0, 0, count});
    return *this;
  }
  Events& pause(uint64_t tick) { return gap(format::EventKind::kPause, tick); }
  Events& resume(uint64_t tick) { return gap(format::EventKind::kResume, tick); }
  std::vector<format::TraceEvent> v;

 private:
  Events& open(format::EventKind k, uint64_t tick, uint64_t addr) {
    stack_.push_back(addr);
    v.push_back({k, ++depth_, tick, addr, 0, 0});
    return *this;
  }
  Events& gap(format::EventKind k, uint64_t tick) {
    v.push_back({k, depth_, tick, 0, 0, 0});
    return *this;
  }
  Events& close(format::EventKind k, uint64_t tick) {
    v.push_back({k, depth_--, tick, stack_.back(), 0, 0});
    stack_.pop_back();
    return *this;
  }
  uint32_t depth_ = 0;
  std::vector<uint64_t> stack_;
};

// Names from a table; an address not in it resolves to "0x<hex>".
inline Resolver names(std::map<uint64_t, std::string> table) {
  return [table](uint32_t, uint64_t addr, uint64_t) {
    auto it = table.find(addr);
    return FunctionInfo{it != table.end() ? it->second : "0x" + std::to_string(addr), "app", "", 0};
  };
}

}  // namespace callscope::analysis::test
