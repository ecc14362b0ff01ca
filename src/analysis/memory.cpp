// Where the memory goes (memory.h).
#include "analysis/memory.h"

#include <algorithm>
#include <unordered_map>

namespace callscope::analysis {
namespace {

namespace fmt = callscope::format;

// Which frees belong to which allocations.
enum class Family : uint8_t { kC, kNew, kNewArray, kMmap, kApi };

Family family(uint8_t op) {
  switch (static_cast<fmt::AllocOp>(op)) {
    case fmt::AllocOp::kNew:
    case fmt::AllocOp::kDelete: return Family::kNew;
    case fmt::AllocOp::kNewArray:
    case fmt::AllocOp::kDeleteArray: return Family::kNewArray;
    case fmt::AllocOp::kMmap:
    case fmt::AllocOp::kMremap:
    case fmt::AllocOp::kMunmap:
    case fmt::AllocOp::kMremapFree: return Family::kMmap;
    case fmt::AllocOp::kApi:
    case fmt::AllocOp::kApiFree: return Family::kApi;
    default: return Family::kC;  // malloc's family, realloc's both sides
  }
}

struct Event {
  uint64_t tick;
  uint32_t thread, process;
  bool alloc;
  uint8_t op;
  uint64_t ptr, size, fn;
};

}  // namespace

Result<MemoryModel> build_memory_model(format::TraceReader& trace) {
  MemoryModel m;
  std::vector<Event> events;
  for (uint32_t ti = 0; ti < trace.threads().size(); ++ti) {
    const uint32_t process = trace.threads()[ti].record.process_index;
    std::vector<uint64_t> stack;
    CALLSCOPE_CHECK(trace.for_each_event(ti, [&](const fmt::TraceEvent& e) {
      if (fmt::is_entry(e.kind)) {
        stack.push_back(e.addr);
      } else if (fmt::is_exit(e.kind)) {
        if (!stack.empty()) stack.pop_back();
      } else if (fmt::is_memory(e.kind)) {
        events.push_back({e.tick, ti, process, e.kind == fmt::EventKind::kAlloc, e.op, e.addr, e.arg,
                          stack.empty() ? 0 : stack.back()});
      }
      return true;
    }));
  }
  m.has_memory_events = !events.empty();
  // Time order across threads; within a thread the order is kept.
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.tick < b.tick; });

  struct Live {
    uint64_t size;
    uint8_t op;
    size_t site;
  };
  std::unordered_map<uint64_t, Live> live;  // by block (pointers are per process: keyed with it below)
  std::map<std::pair<uint32_t, uint64_t>, size_t> site_of;
  auto key = [](uint32_t process, uint64_t ptr) { return (uint64_t{process} << 48) ^ ptr; };
  uint64_t outstanding = 0;
  // A realloc that fails is told as its old block freed, then that block
  // again with size 0: the block was never freed. Per thread, the last
  // realloc free, to take back.
  struct Undo {
    uint64_t ptr = 0;
    Live live{};
    bool set = false;
  };
  std::unordered_map<uint32_t, Undo> last_realloc_free;
  auto is_realloc = [](uint8_t op) {
    return op == static_cast<uint8_t>(fmt::AllocOp::kRealloc) || op == static_cast<uint8_t>(fmt::AllocOp::kReallocArray);
  };
  for (const Event& e : events) {
    if (e.alloc && e.size == 0 && is_realloc(e.op)) {
      Undo& u = last_realloc_free[e.thread];
      if (u.set && u.ptr == e.ptr) {
        MemorySite& s = m.sites[u.live.site];
        --s.freed;
        s.freed_bytes -= u.live.size;
        --m.frees;
        outstanding += u.live.size;
        live.emplace(key(e.process, e.ptr), u.live);
        u.set = false;
        continue;
      }
    }
    if (e.alloc) {
      if (e.ptr == 0) continue;  // an allocation that failed: no block
      ++m.allocs;
      m.bytes += e.size;
      auto [it, fresh] = site_of.try_emplace({e.process, e.fn}, m.sites.size());
      if (fresh) {
        MemorySite s;
        s.process = e.process;
        s.fn = e.fn;
        s.tick = e.tick;
        m.sites.push_back(s);
      }
      MemorySite& s = m.sites[it->second];
      ++s.allocs;
      s.bytes += e.size;
      // A block allocated again without a free between: the first was freed
      // where the trace could not see (before it began, or by a path not
      // recorded); it is not counted twice.
      auto [l, added] = live.try_emplace(key(e.process, e.ptr), Live{e.size, e.op, it->second});
      if (!added) {
        outstanding -= l->second.size;
        l->second = Live{e.size, e.op, it->second};
      }
      outstanding += e.size;
      if (outstanding > m.peak_bytes) {
        m.peak_bytes = outstanding;
        m.peak_tick = e.tick;
      }
      continue;
    }
    ++m.frees;
    auto l = live.find(key(e.process, e.ptr));
    auto mismatch = [&](uint8_t allocated_by, uint64_t alloc_fn) {
      ++m.mismatch_count;
      if (m.mismatches.size() < 1000)
        m.mismatches.push_back({e.thread, e.tick, e.ptr, e.op, allocated_by, e.fn, alloc_fn, e.process});
    };
    if (l == live.end()) {
      ++m.unknown_frees;
      mismatch(0, 0);
      continue;
    }
    MemorySite& s = m.sites[l->second.site];
    if (e.op == static_cast<uint8_t>(fmt::AllocOp::kReallocFree)) last_realloc_free[e.thread] = {e.ptr, l->second, true};
    if (family(l->second.op) != family(e.op)) mismatch(l->second.op, s.fn);
    ++s.freed;
    s.freed_bytes += l->second.size;
    outstanding -= l->second.size;
    live.erase(l);
  }
  for (const auto& [k, l] : live) {
    MemorySite& s = m.sites[l.site];
    ++s.leaked;
    s.leaked_bytes += l.size;
    ++m.leaked;
    m.leaked_bytes += l.size;
  }
  std::stable_sort(m.sites.begin(), m.sites.end(),
                   [](const MemorySite& a, const MemorySite& b) { return a.bytes > b.bytes; });
  return m;
}

}  // namespace callscope::analysis
