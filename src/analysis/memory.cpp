// Where the memory goes (memory.h): keys, the tables of totals, the peak and
// what was live then, the timeline and the sizes, all from the blocks that
// memory_model.cpp replayed.
#include "analysis/memory.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace callscope::analysis {
// ---- keys ---------------------------------------------------------------------

const char* memory_key_name(MemoryKey k) {
  switch (k) {
    case MemoryKey::kFunction: return "function";
    case MemoryKey::kPath: return "path";
    case MemoryKey::kModule: return "module";
    case MemoryKey::kTag: return "tag";
    case MemoryKey::kThread: return "thread";
    case MemoryKey::kProcess: return "process";
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
    for (MemoryKey k : {MemoryKey::kFunction, MemoryKey::kPath, MemoryKey::kModule, MemoryKey::kTag, MemoryKey::kThread,
                        MemoryKey::kProcess})
      if (word == memory_key_name(k)) {
        if (std::find(keys.begin(), keys.end(), k) != keys.end()) return Error("'" + word + "' is given twice");
        keys.push_back(k);
        found = true;
      }
    if (!found) return Error("unknown key '" + word + "' (function, path, module, tag, thread, process)");
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
    case MemoryKey::kProcess: return m.paths[b.path].process;
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
  // A block's end: its free, or its process's end when it leaked. A leak
  // is never freed: kept (impacting, OLD KEPT) while its process lives.
  const bool freed_in = !b.leaked() && w.holds(b.free_tick);
  const bool ended_before = b.free_tick != kMemoryNever && b.free_tick < w.from;
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
  } else if (b.alloc_tick < w.from && !ended_before) {
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
    if (seq == kMemoryNever || b.alloc_seq > seq || b.free_seq <= seq) continue;
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
