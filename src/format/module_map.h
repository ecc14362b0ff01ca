// Which module held an address at a given time. A library closed and loaded
// again (or another library loaded where one was closed) covers the same
// addresses as an earlier load: each load is its own ModuleRecord, with the
// ticks it was loaded and unloaded, and an address means the module loaded
// at the time of the event that carries it. Shared by the symbolizer (names)
// and the analyses (which calls are calls of the same function).
#pragma once

#include <cstdint>
#include <vector>

#include "format/trace_reader.h"

namespace callscope::format {

class ModuleMap {
 public:
  static constexpr int64_t kNone = -1;
  static constexpr uint64_t kNoTick = ~uint64_t{0};

  explicit ModuleMap(const std::vector<ModuleInfo>& modules);

  // Indexes into `modules` of the modules of `process` whose range holds
  // `addr`, in the order they were loaded.
  std::vector<uint32_t> covering(uint32_t process, uint64_t addr) const;
  // The one that held `addr` at trace tick `tick`: loaded at or before it
  // and not unloaded yet; else the first loaded after it (a library's
  // constructors run before dlopen returns and its load is recorded); else
  // the last one unloaded before it. kNone when no module holds `addr`.
  int64_t at(uint32_t process, uint64_t addr, uint64_t tick) const;
  // Whether two modules of `process` ever held a same address.
  bool has_reuse(uint32_t process) const;
  // Whether more than one module of `process` held `addr`.
  bool reused(uint32_t process, uint64_t addr) const;

 private:
  struct Span {
    uint64_t low, high;
    uint32_t module;
  };
  const std::vector<ModuleInfo>& modules_;
  std::vector<std::vector<Span>> spans_;                 // per process, sorted by low
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> reused_;  // per process: [low, high) held twice, sorted
};

}  // namespace callscope::format
