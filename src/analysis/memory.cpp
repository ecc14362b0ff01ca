// Where the memory goes (memory.h).
#include "analysis/memory.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <unordered_map>

#include "format/module_map.h"

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

bool op_is(uint8_t op, fmt::AllocOp a) { return op == static_cast<uint8_t>(a); }

// The second half of a move (realloc, reallocarray, mremap): its first half
// told the old block freed.
bool is_move(uint8_t op) {
  return op_is(op, fmt::AllocOp::kRealloc) || op_is(op, fmt::AllocOp::kReallocArray) ||
         op_is(op, fmt::AllocOp::kMremap);
}
bool is_move_free(uint8_t op) { return op_is(op, fmt::AllocOp::kReallocFree) || op_is(op, fmt::AllocOp::kMremapFree); }

// An event as kept per thread until the merge: 32 bytes.
constexpr uint64_t kPtrMask = (uint64_t{1} << 48) - 1;
struct Stored {
  uint64_t tick;
  uint64_t ptr_op;  // ptr[0:48) | op << 48 | alloc << 56
  uint64_t size;
  uint32_t path, tag;
};

struct Event {
  uint64_t tick;
  uint32_t thread, process;
  uint32_t path;  // node
  uint32_t tag;
  bool alloc;
  uint8_t op;
  uint64_t ptr, size;
};

// Modules that are not where a program's allocations come from: the C and
// C++ libraries, the loader, callscope's own. A block is counted in the
// nearest module on its path that is none of these.
bool system_module(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  for (const char* p : {"libc.so", "libc-", "libstdc++", "libc++", "libgcc_s", "ld-linux", "ld-musl", "libcallscope"})
    if (base.rfind(p, 0) == 0) return true;
  return false;
}

// The call path tree and its functions, modules, tags.
class Paths {
 public:
  Paths(MemoryModel& m, const fmt::TraceReader& trace) : m_(m), trace_(trace), map_(trace.modules()) {
    m_.modules.push_back("");
    m_.tags.push_back("");
  }
  uint32_t root(uint32_t process) {
    auto [it, fresh] = roots_.try_emplace(process, 0);
    if (fresh) it->second = add(kMemoryNoNode, process, 0, 0);
    return it->second;
  }
  uint32_t child(uint32_t parent, uint64_t fn, uint64_t tick) {
    // A function calls the same callee again and again: the last one found
    // under each node answers most lookups.
    Last& last = last_[parent];
    if (last.fn == fn && last.node != kMemoryNoNode) return last.node;
    auto [it, fresh] = children_.try_emplace(ChildKey{parent, fn}, 0);
    if (fresh) it->second = add(parent, m_.paths[parent].process, fn, tick);
    last_[parent] = {fn, it->second};  // `last` may have moved (add() grows last_)
    return it->second;
  }
  // Tag `id` of `process` (0: none) as an index in m.tags.
  uint32_t tag(uint32_t process, uint64_t id) {
    if (id == 0) return 0;
    auto [it, fresh] = tag_of_.try_emplace({process, id}, 0);
    if (fresh) {
      std::string text = "[tag " + std::to_string(id) + "]";  // its text lost (a damaged trace)
      for (const fmt::MarkInfo& t : trace_.tags())
        if (t.record.process_index == process && t.record.id == id) text = t.text;
      if (text.empty()) return it->second = 0;  // an empty tag is no tag
      auto [named, added] = tag_index_.try_emplace(text, static_cast<uint32_t>(m_.tags.size()));
      if (added) m_.tags.push_back(text);
      it->second = named->second;
    }
    return it->second;
  }

 private:
  uint32_t add(uint32_t parent, uint32_t process, uint64_t fn, uint64_t tick) {
    MemoryPathNode n;
    n.parent = parent;
    n.process = process;
    n.fn = fn;
    n.tick = tick;
    n.depth = parent == kMemoryNoNode ? 0 : m_.paths[parent].depth + 1;
    auto [f, fresh] = function_of_.try_emplace({process, fn}, static_cast<uint32_t>(m_.functions.size()));
    if (fresh) m_.functions.push_back({process, fn, tick});
    n.function = f->second;
    n.module = parent == kMemoryNoNode ? 0 : m_.paths[parent].module;
    if (fn != 0) {
      const int64_t mod = map_.at(process, fn, tick);
      if (mod >= 0 && !system_module(trace_.modules()[mod].path)) {
        const std::string& path = trace_.modules()[mod].path;
        const std::string base = path.substr(path.rfind('/') + 1);
        auto [it, added] = module_index_.try_emplace(base, static_cast<uint32_t>(m_.modules.size()));
        if (added) m_.modules.push_back(base);
        n.module = it->second;
      }
    }
    m_.paths.push_back(n);
    last_.push_back({});
    return static_cast<uint32_t>(m_.paths.size() - 1);
  }
  struct ChildKey {
    uint32_t parent;
    uint64_t fn;
    bool operator==(const ChildKey&) const = default;
  };
  struct ChildHash {
    size_t operator()(const ChildKey& k) const { return std::hash<uint64_t>()(k.fn * 0x9e3779b97f4a7c15ull ^ k.parent); }
  };
  struct Last {
    uint64_t fn = 0;
    uint32_t node = kMemoryNoNode;
  };
  std::vector<Last> last_;
  MemoryModel& m_;
  const fmt::TraceReader& trace_;
  fmt::ModuleMap map_;
  std::map<uint32_t, uint32_t> roots_;
  std::unordered_map<ChildKey, uint32_t, ChildHash> children_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> function_of_;
  std::map<std::string, uint32_t> module_index_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> tag_of_;
  std::map<std::string, uint32_t> tag_index_;
};

}  // namespace

Result<MemoryModel> build_memory_model(format::TraceReader& trace) {
  MemoryModel m;
  Paths paths(m, trace);
  // Each thread's memory events, in its order.
  std::vector<BigVector<Stored>> per_thread(trace.threads().size());
  size_t total = 0, allocs = 0;
  for (uint32_t ti = 0; ti < trace.threads().size(); ++ti) {
    const uint32_t process = trace.threads()[ti].record.process_index;
    const uint32_t root = paths.root(process);
    std::vector<uint32_t> stack{root};  // nodes
    std::vector<uint32_t> tags;
    BigVector<Stored>& events = per_thread[ti];
    // Room for every event of the thread but its entries (a bound on its
    // memory events), up to 64 M (2 GiB of address space): pages never
    // written cost nothing, and the array is never copied.
    const auto& rec = trace.threads()[ti].record;
    events.reserve(std::min<uint64_t>(rec.events - std::min(rec.events, rec.calls), uint64_t{64} << 20));
    CALLSCOPE_CHECK(trace.for_each_event_batch(ti, [&](const fmt::TraceEvent* batch, size_t n) {
      for (const fmt::TraceEvent* e = batch; e != batch + n; ++e) {
        if (fmt::is_entry(e->kind)) {
          stack.push_back(paths.child(stack.back(), e->addr, e->tick));
        } else if (fmt::is_exit(e->kind)) {
          if (stack.size() > 1) stack.pop_back();
        } else if (e->kind == fmt::EventKind::kTag) {
          if (e->arg) tags.push_back(paths.tag(process, e->arg));
          else if (!tags.empty()) tags.pop_back();
        } else if (fmt::is_memory(e->kind)) {
          const bool alloc = e->kind == fmt::EventKind::kAlloc;
          allocs += alloc;
          events.push_back({e->tick, (e->addr & kPtrMask) | uint64_t{e->op} << 48 | uint64_t{alloc} << 56, e->arg,
                            stack.back(), tags.empty() ? 0u : tags.back()});
        }
      }
      return true;
    }));
    total += events.size();
  }
  m.has_memory_events = total != 0;
  m.first_tick = ~uint64_t{0};
  for (const auto& v : per_thread)
    if (!v.empty()) {
      m.first_tick = std::min(m.first_tick, v.front().tick);
      m.last_tick = std::max(m.last_tick, v.back().tick);
    }
  if (total == 0) m.first_tick = 0;

  // The blocks allocated and not freed yet, by process and address.
  // callscope_alloc's blocks are an address space of their own: a pool's
  // first block may start where the malloc'd (or mmap'd) pool does.
  std::unordered_map<uint64_t, uint32_t> live;
  auto key = [](uint32_t process, uint64_t ptr, uint8_t op) {
    const bool api = family(op) == Family::kApi;
    return (uint64_t{process} << 48) ^ ptr ^ (uint64_t{api} << 63);
  };
  // A realloc or mremap that fails is told as its old block freed, then
  // that block again with size 0: it was never freed. Per thread, the last
  // such free, to take back; and an mremap of a mapping the trace never saw
  // made (a file's) is no block.
  struct Move {
    uint64_t ptr = 0;
    uint32_t block = 0;
    bool set = false;
    bool known = false;       // the old block was one the trace knew (its free ended it)
    bool counted = false;     // its free was counted (frees; unknown_frees and a mismatch when not known)
    bool mismatched = false;  // its free was listed as a mismatch
  };
  std::unordered_map<uint32_t, Move> last_move;
  const bool legacy_moves = trace.header().version_minor < 6;
  m.blocks.reserve(allocs);
  m.order.reserve(total);
  // Takes back the first half of a move that failed: the old block stays.
  auto undo = [&](const Move& mv, const Event& e) {
    if (mv.known) {
      MemoryBlock& b = m.blocks[mv.block];
      const uint64_t entry = uint64_t{mv.block} << 1 | 1;
      for (size_t i = m.order.size(); i-- > 0;)
        if (m.order[i] == entry) {
          m.order.erase(m.order.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      b.free_tick = b.free_seq = kMemoryNever;
      b.free_op = 0;
      live.emplace(key(e.process, e.ptr, b.op), mv.block);
      // Later events' places moved down by one: renumbered at the end.
    } else if (mv.counted) {
      --m.unknown_frees;
    }
    if (mv.counted) --m.frees;
    if (mv.mismatched) {
      --m.mismatch_count;
      for (size_t i = m.mismatches.size(); i-- > 0;)
        if (m.mismatches[i].thread == e.thread && m.mismatches[i].ptr == e.ptr) {
          m.mismatches.erase(m.mismatches.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
    }
  };
  auto step = [&](const Event& e) {
    // A move's two halves are adjacent in their thread's stream.
    Move& slot = last_move[e.thread];
    const Move pending = slot;
    slot.set = false;
    if (e.alloc && pending.set && (is_move(e.op) || op_is(e.op, fmt::AllocOp::kMoveFailed))) {
      // 1.5 told a failure as the move's op with size 0, at the old block
      // (1.6: kMoveFailed; a size 0 is a block of size 0).
      const bool failed =
          op_is(e.op, fmt::AllocOp::kMoveFailed) || (legacy_moves && e.size == 0 && pending.ptr == e.ptr);
      if (failed) {
        if (pending.ptr == e.ptr) undo(pending, e);
        return;
      }
      if (!pending.known && op_is(e.op, fmt::AllocOp::kMremap)) return;  // not a mapping we know
    }
    if (e.alloc && op_is(e.op, fmt::AllocOp::kMoveFailed)) return;  // no first half: nothing to take back
    if (e.alloc) {
      if (e.ptr == 0) return;  // an allocation that failed: no block
      MemoryBlock b;
      b.alloc_tick = e.tick;
      b.size = e.size;
      b.path = e.path;
      b.tag = e.tag;
      b.thread = e.thread;
      b.op = e.op;
      const auto index = static_cast<uint32_t>(m.blocks.size());
      // A block allocated again without a free between: the first was freed
      // where the trace could not see (before it began, or by a path not
      // recorded); it is not counted twice.
      auto [l, added] = live.try_emplace(key(e.process, e.ptr, e.op), index);
      if (!added) {
        MemoryBlock& old = m.blocks[l->second];
        old.free_tick = e.tick;
        m.order.push_back(uint64_t{l->second} << 1 | 1);
        l->second = index;
      }
      m.blocks.push_back(b);
      m.order.push_back(uint64_t{index} << 1);
      return;
    }
    ++m.frees;
    auto l = live.find(key(e.process, e.ptr, e.op));
    Move* move = nullptr;
    if (is_move_free(e.op)) {
      slot = {e.ptr, l == live.end() ? 0 : l->second, true, l != live.end(), true, false};
      move = &slot;
    }
    auto mismatch = [&](uint8_t allocated_by, uint32_t alloc_path, uint64_t alloc_tick) {
      ++m.mismatch_count;
      if (move) move->mismatched = true;
      if (m.mismatches.size() < 1000)
        m.mismatches.push_back({e.thread, e.tick, e.ptr, e.op, allocated_by, e.path, alloc_path, alloc_tick});
    };
    if (l == live.end()) {
      // munmap and mremap of what was never an anonymous mapping we saw
      // made (files, the loader's, thread stacks) are not the program's
      // blocks.
      if (family(e.op) == Family::kMmap) {
        --m.frees;
        if (move) move->counted = false;
        return;
      }
      ++m.unknown_frees;
      mismatch(0, kMemoryNoNode, 0);
      return;
    }
    MemoryBlock& b = m.blocks[l->second];
    if (family(b.op) != family(e.op)) mismatch(b.op, b.path, b.alloc_tick);
    b.free_tick = e.tick;
    b.free_op = e.op;
    m.order.push_back(uint64_t{l->second} << 1 | 1);
    live.erase(l);
  };
  {
    using Cursor = std::pair<uint64_t, uint32_t>;  // tick, thread
    std::priority_queue<Cursor, std::vector<Cursor>, std::greater<Cursor>> next;
    std::vector<size_t> at(per_thread.size(), 0);
    for (uint32_t ti = 0; ti < per_thread.size(); ++ti)
      if (!per_thread[ti].empty()) next.push({per_thread[ti][0].tick, ti});
    while (!next.empty()) {
      const uint32_t ti = next.top().second;
      next.pop();
      const BigVector<Stored>& v = per_thread[ti];
      // This thread's run up to the next thread's tick.
      const uint64_t limit = next.empty() ? ~uint64_t{0} : next.top().first;
      const uint32_t other = next.empty() ? ~0u : next.top().second;
      const uint32_t process = trace.threads()[ti].record.process_index;
      size_t& i = at[ti];
      for (; i < v.size() && (v[i].tick < limit || (v[i].tick == limit && ti < other)); ++i) {
        const Stored& x = v[i];
        step({x.tick, ti, process, x.path, x.tag, (x.ptr_op >> 56) != 0, static_cast<uint8_t>(x.ptr_op >> 48),
              x.ptr_op & kPtrMask, x.size});
      }
      if (i < v.size()) next.push({v[i].tick, ti});
      else BigVector<Stored>().swap(per_thread[ti]);
    }
  }
  // Places in the order (a failed move took one out).
  for (uint64_t i = 0; i < m.order.size(); ++i) {
    MemoryBlock& b = m.blocks[m.order[i] >> 1];
    (m.order[i] & 1 ? b.free_seq : b.alloc_seq) = i;
  }
  return m;
}

// ---- keys ---------------------------------------------------------------------

const char* memory_key_name(MemoryKey k) {
  switch (k) {
    case MemoryKey::kFunction: return "function";
    case MemoryKey::kPath: return "path";
    case MemoryKey::kModule: return "module";
    case MemoryKey::kTag: return "tag";
    case MemoryKey::kThread: return "thread";
  }
  return "?";
}

Result<std::vector<MemoryKey>> parse_memory_keys(const std::string& list) {
  std::vector<MemoryKey> keys;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string word = list.substr(at, comma - at);
    bool found = false;
    for (MemoryKey k : {MemoryKey::kFunction, MemoryKey::kPath, MemoryKey::kModule, MemoryKey::kTag, MemoryKey::kThread})
      if (word == memory_key_name(k)) {
        if (std::find(keys.begin(), keys.end(), k) != keys.end()) return Error("'" + word + "' is given twice");
        keys.push_back(k);
        found = true;
      }
    if (!found) return Error("unknown key '" + word + "' (function, path, module, tag, thread)");
    at = comma + 1;
  }
  if (std::find(keys.begin(), keys.end(), MemoryKey::kPath) != keys.end() &&
      std::find(keys.begin(), keys.end(), MemoryKey::kFunction) != keys.end())
    return Error("'path' and 'function' together: a path ends in its function already");
  return keys;
}

uint32_t memory_key_value(const MemoryModel& m, const MemoryBlock& b, MemoryKey k) {
  switch (k) {
    case MemoryKey::kFunction: return m.paths[b.path].function;
    case MemoryKey::kPath: return b.path;
    case MemoryKey::kModule: return m.paths[b.path].module;
    case MemoryKey::kTag: return b.tag;
    case MemoryKey::kThread: return b.thread;
  }
  return 0;
}

std::vector<uint32_t> memory_path(const MemoryModel& m, uint32_t node) {
  std::vector<uint32_t> path;
  for (uint32_t n = node; n != kMemoryNoNode; n = m.paths[n].parent) path.push_back(n);
  std::reverse(path.begin(), path.end());
  return path;
}

namespace {

using Key = std::array<uint32_t, 5>;

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 0;
    for (uint32_t v : k) h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

Key key_of(const MemoryModel& m, const MemoryBlock& b, const std::vector<MemoryKey>& keys) {
  Key k{};
  for (size_t i = 0; i < keys.size() && i < k.size(); ++i) k[i] = memory_key_value(m, b, keys[i]);
  return k;
}

// Groups keyed by the blocks' keys, in the order first seen.
class Grouper {
 public:
  Grouper(const MemoryModel& m, const std::vector<MemoryKey>& keys) : m_(m), keys_(keys) {}
  uint32_t of(const MemoryBlock& b) {
    const Key k = key_of(m_, b, keys_);
    auto [it, fresh] = index_.try_emplace(k, static_cast<uint32_t>(groups.size()));
    if (fresh) groups.push_back({k, {}});
    return it->second;
  }
  std::vector<MemoryGroup> groups;

 private:
  const MemoryModel& m_;
  const std::vector<MemoryKey>& keys_;
  std::unordered_map<Key, uint32_t, KeyHash> index_;
};

void sort_groups(std::vector<MemoryGroup>& groups) {
  std::stable_sort(groups.begin(), groups.end(), [](const MemoryGroup& a, const MemoryGroup& b) {
    if (a.totals.bytes != b.totals.bytes) return a.totals.bytes > b.totals.bytes;
    return a.totals.peak_bytes > b.totals.peak_bytes;
  });
}

// Outstanding bytes in time order, per group: calls at(tick, group,
// outstanding of the group, outstanding in all) after every event, with
// the group's index from `group_of`.
template <class GroupOf, class At>
void sweep(const MemoryModel& m, GroupOf&& group_of, size_t groups, At&& at) {
  std::vector<uint64_t> out(groups, 0);
  uint64_t total = 0;
  for (uint64_t seq = 0; seq < m.order.size(); ++seq) {
    const uint64_t entry = m.order[seq];
    const MemoryBlock& b = m.blocks[entry >> 1];
    const uint32_t g = group_of(entry >> 1);
    if (entry & 1) {
      out[g] -= b.size;
      total -= b.size;
    } else {
      out[g] += b.size;
      total += b.size;
    }
    at(seq, entry & 1 ? b.free_tick : b.alloc_tick, g, out[g], total, out);
  }
}

}  // namespace

void MemoryTotals::add_block(const MemoryBlock& b, const MemoryWindow& w, uint64_t short_ticks) {
  const bool alloc_in = w.holds(b.alloc_tick);
  const bool freed_in = !b.leaked() && w.holds(b.free_tick);
  const bool freed_before = !b.leaked() && b.free_tick < w.from;
  if (alloc_in) {
    ++allocs;
    bytes += b.size;
    if (freed_in) {
      ++transient;
      transient_bytes += b.size;
      if (short_ticks && b.free_tick - b.alloc_tick < short_ticks) {
        ++short_lived;
        short_lived_bytes += b.size;
      }
    } else {
      ++impacting;
      impacting_bytes += b.size;
    }
    if (b.leaked()) {
      ++leaked;
      leaked_bytes += b.size;
    }
  } else if (b.alloc_tick < w.from && !freed_before) {
    if (freed_in) {
      ++before_freed;
      before_freed_bytes += b.size;
    } else {
      ++before_kept;
      before_kept_bytes += b.size;
    }
  }
}

MemoryTable memory_table(const MemoryModel& m, const MemoryQuery& q) {
  MemoryTable t;
  t.keys = q.keys;
  Grouper g(m, q.keys);
  std::vector<uint32_t> group_of(m.blocks.size());
  for (uint32_t i = 0; i < m.blocks.size(); ++i) {
    const MemoryBlock& b = m.blocks[i];
    group_of[i] = g.of(b);
    g.groups[group_of[i]].totals.add_block(b, q.window, q.short_ticks);
    t.total.add_block(b, q.window, q.short_ticks);
  }
  // Peaks inside the window: the outstanding bytes when it opens (blocks
  // allocated before and still there), then after every event inside.
  std::vector<uint64_t> before(g.groups.size(), 0);
  uint64_t total_before = 0, seq_before = kMemoryNever;
  bool opened = false;
  auto open = [&](const std::vector<uint64_t>& out, uint64_t total) {
    opened = true;
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i] > g.groups[i].totals.peak_bytes) {
        g.groups[i].totals.peak_bytes = out[i];
        g.groups[i].totals.peak_tick = q.window.from;
      }
    if (total > t.total.peak_bytes) {
      t.total.peak_bytes = total;
      t.total.peak_tick = q.window.from;
      t.peak_seq = seq_before;
    }
  };

  sweep(
      m, [&](uint64_t block) { return group_of[block]; }, g.groups.size(),
      [&](uint64_t seq, uint64_t tick, uint32_t gi, uint64_t out, uint64_t total, const std::vector<uint64_t>&) {
        if (tick < q.window.from) {
          before[gi] = out;
          total_before = total;
          seq_before = seq;
          return;
        }
        if (tick >= q.window.to) return;
        if (!opened) open(before, total_before);
        MemoryTotals& gt = g.groups[gi].totals;
        if (out > gt.peak_bytes) {
          gt.peak_bytes = out;
          gt.peak_tick = tick;
        }
        if (total > t.total.peak_bytes) {
          t.total.peak_bytes = total;
          t.total.peak_tick = tick;
          t.peak_seq = seq;
        }
      });
  if (!opened) open(before, total_before);
  t.groups = std::move(g.groups);
  sort_groups(t.groups);
  return t;
}

MemoryTable memory_live_at(const MemoryModel& m, const std::vector<MemoryKey>& keys, uint64_t seq) {
  MemoryTable t;
  t.keys = keys;
  t.peak_seq = seq;
  Grouper g(m, keys);
  for (const MemoryBlock& b : m.blocks) {
    if (seq == kMemoryNever || b.alloc_seq > seq || (!b.leaked() && b.free_seq <= seq)) continue;
    MemoryTotals& gt = g.groups[g.of(b)].totals;
    ++gt.allocs;
    gt.bytes += b.size;
    ++t.total.allocs;
    t.total.bytes += b.size;
  }
  t.groups = std::move(g.groups);
  sort_groups(t.groups);
  return t;
}

MemoryTimeline memory_timeline(const MemoryModel& m, MemoryKey key, MemoryWindow w, uint32_t buckets) {
  MemoryTimeline tl;
  tl.from = w.from;
  tl.to = w.to == kMemoryNever ? m.last_tick + 1 : w.to;
  if (tl.to <= tl.from) tl.to = tl.from + 1;
  if (buckets == 0) buckets = 1;
  std::vector<uint32_t> group_of(m.blocks.size());
  std::vector<uint32_t> values;
  std::unordered_map<uint32_t, uint32_t> index;
  for (uint32_t i = 0; i < m.blocks.size(); ++i) {
    const uint32_t v = memory_key_value(m, m.blocks[i], key);
    auto [it, fresh] = index.try_emplace(v, static_cast<uint32_t>(values.size()));
    if (fresh) values.push_back(v);
    group_of[i] = it->second;
  }
  std::vector<std::vector<uint64_t>> bytes(values.size(), std::vector<uint64_t>(buckets, 0));
  std::vector<uint64_t> total(buckets, 0);
  const double span = static_cast<double>(tl.to - tl.from);
  auto bucket_of = [&](uint64_t tick) {
    return std::min<uint32_t>(buckets - 1, static_cast<uint32_t>(static_cast<double>(tick - tl.from) / span * buckets));
  };
  // Each bucket starts at the value the one before ended with.
  std::vector<uint64_t> now(values.size(), 0);
  uint64_t now_total = 0;
  uint32_t filled = 0;  // buckets before this one have their start values
  auto fill_to = [&](uint32_t b) {
    for (; filled <= b && filled < buckets; ++filled) {
      for (size_t gi = 0; gi < values.size(); ++gi) bytes[gi][filled] = std::max(bytes[gi][filled], now[gi]);
      total[filled] = std::max(total[filled], now_total);
    }
  };
  sweep(
      m, [&](uint64_t block) { return group_of[block]; }, values.size(),
      [&](uint64_t, uint64_t tick, uint32_t gi, uint64_t out, uint64_t all, const std::vector<uint64_t>&) {
        if (tick < tl.from) {
          now[gi] = out;
          now_total = all;
          return;
        }
        if (tick >= tl.to) return;
        const uint32_t b = bucket_of(tick);
        fill_to(b);
        now[gi] = out;
        now_total = all;
        bytes[gi][b] = std::max(bytes[gi][b], out);
        total[b] = std::max(total[b], all);
      });
  fill_to(buckets - 1);
  // Highest peak first.
  std::vector<size_t> by(values.size());
  for (size_t i = 0; i < by.size(); ++i) by[i] = i;
  std::vector<uint64_t> peak(values.size(), 0);
  for (size_t i = 0; i < values.size(); ++i) peak[i] = *std::max_element(bytes[i].begin(), bytes[i].end());
  std::stable_sort(by.begin(), by.end(), [&](size_t a, size_t b) { return peak[a] > peak[b]; });
  for (size_t i : by) {
    tl.keys.push_back(values[i]);
    tl.bytes.push_back(std::move(bytes[i]));
  }
  tl.total = std::move(total);
  return tl;
}

std::vector<MemorySizes> memory_sizes(const MemoryModel& m, const std::vector<MemoryKey>& keys, MemoryWindow w) {
  std::vector<MemorySizes> out;
  std::unordered_map<Key, size_t, KeyHash> index;
  for (const MemoryBlock& b : m.blocks) {
    if (!w.holds(b.alloc_tick)) continue;
    const Key k = key_of(m, b, keys);
    auto [it, fresh] = index.try_emplace(k, out.size());
    if (fresh) {
      out.emplace_back();
      out.back().key = k;
    }
    MemorySizes& s = out[it->second];
    const unsigned bucket = b.size ? 63 - static_cast<unsigned>(__builtin_clzll(b.size)) : 0;
    ++s.count[bucket];
    s.bytes[bucket] += b.size;
    s.total_bytes += b.size;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const MemorySizes& a, const MemorySizes& b) { return a.total_bytes > b.total_bytes; });
  return out;
}

}  // namespace callscope::analysis
