// pprof's profile.proto (github.com/google/pprof, proto/profile.proto),
// written by hand with ProtoWriter; field numbers in proto/pprof_profile.proto.
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "export/ns.h"
#include "export/aggregate_exports.h"
#include "export/protobuf.h"

namespace callscope::exporter {
namespace {

// Profile's fields.
enum : uint32_t {
  kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5, kStringTable = 6,
  kTimeNanos = 9, kDurationNanos = 10, kPeriodType = 11, kPeriod = 12, kComment = 13, kDefaultSampleType = 14,
};

class Strings {
 public:
  Strings() { id(""); }
  uint64_t id(const std::string& s) {
    auto [it, fresh] = ids_.try_emplace(s, list_.size());
    if (fresh) list_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& list() const { return list_; }

 private:
  std::map<std::string, uint64_t> ids_;
  std::vector<std::string> list_;
};

}  // namespace

std::vector<MemorySample> memory_samples(const analysis::MemoryModel& m, const analysis::Resolver& resolve,
                                         const std::vector<uint32_t>& threads, const analysis::TickWindow& window,
                                         bool merge, const std::function<bool(const analysis::FunctionInfo&)>& wanted) {
  std::vector<bool> chosen;
  for (uint32_t t : threads) {
    if (chosen.size() <= t) chosen.resize(t + 1, false);
    chosen[t] = true;
  }
  // Per (path node, thread): allocs, bytes, bytes never freed.
  std::map<std::pair<uint32_t, int64_t>, MemorySample> by_path;
  for (uint64_t i = 0; i < m.blocks.size(); ++i) {
    const analysis::MemoryBlock& b = m.blocks[i];
    if (b.thread >= chosen.size() || !chosen[b.thread]) continue;
    if (b.alloc_tick < window.from || b.alloc_tick > window.to) continue;
    MemorySample& s = by_path[{b.path, merge ? -1 : static_cast<int64_t>(b.thread)}];
    ++s.allocs;
    s.bytes += b.size;
    if (b.leaked()) s.leaked_bytes += b.size;
  }
  std::map<uint32_t, analysis::FunctionInfo> names;  // MemoryModel function -> its name
  std::vector<MemorySample> out;
  for (auto& [key, s] : by_path) {
    for (uint32_t node : analysis::memory_path(m, key.first)) {
      const uint32_t fi = m.paths[node].function;
      const analysis::MemoryFunction& f = m.functions[fi];
      if (f.fn == 0) continue;  // outside every instrumented function: the path's root
      auto it = names.find(fi);
      if (it == names.end()) it = names.emplace(fi, resolve(f.process, f.fn, f.tick)).first;
      s.path.push_back(it->second);
    }
    if (s.path.empty()) s.path.push_back({"[outside traced functions]", "", "", 0});
    if (wanted && std::none_of(s.path.begin(), s.path.end(), wanted)) continue;
    s.thread = key.second;
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::string> pprof_profile(const format::TraceReader& trace, const StackTree& t,
                                  const std::vector<MemorySample>& memory) {
  const analysis::Profile& p = *t.profile;
  const bool with_memory = !memory.empty();
  Strings str;
  std::string out;
  ProtoWriter w(out);
  auto value_type = [&](uint32_t field, const char* type, const char* unit) {
    const uint64_t ty = str.id(type), un = str.id(unit);
    w.message(field, [&](ProtoWriter& m) {
      m.varint(1, ty);
      m.varint(2, un);
    });
  };
  value_type(kSampleType, "calls", "count");
  value_type(kSampleType, "total", "nanoseconds");
  value_type(kSampleType, "self", "nanoseconds");
  // With the kernel's context switches: self time split into time on the
  // CPU and off it (analysis/call_tree.h, self_wait).
  const bool with_waits = p.has_waits;
  if (with_waits) {
    value_type(kSampleType, "cpu", "nanoseconds");
    value_type(kSampleType, "wait", "nanoseconds");
  }
  if (with_memory) {
    value_type(kSampleType, "alloc_objects", "count");
    value_type(kSampleType, "alloc_space", "bytes");
    value_type(kSampleType, "inuse_space", "bytes");
  }

  // Functions used by (name, module), each with a location of its own (ids
  // from 1, in order of first use: deterministic).
  std::map<std::pair<std::string, std::string>, uint64_t> loc_of;
  std::vector<const analysis::FunctionInfo*> used;
  auto location = [&](const analysis::FunctionInfo& f) {
    auto [it, fresh] = loc_of.try_emplace({f.name, f.module}, loc_of.size() + 1);
    if (fresh) used.push_back(&f);
    return it->second;
  };
  const uint64_t thread_key = str.id("thread");
  auto sample = [&](const std::vector<uint64_t>& locs, const std::vector<uint64_t>& values, int64_t thread) {
    const uint64_t thread_str = thread >= 0 ? str.id(thread_frame_label(trace, static_cast<uint32_t>(thread))) : 0;
    w.message(kSample, [&](ProtoWriter& m) {
      m.packed(1, locs);
      m.packed(2, values);
      if (thread >= 0)
        m.message(3, [&](ProtoWriter& l) {
          l.varint(1, thread_key);
          l.varint(2, thread_str);
        });
    });
  };
  // Stacks too deep to show whole (stacks.h) read alike once elided: their
  // samples are summed, and written after the others, in order.
  const analysis::FunctionInfo elided_frame{kElidedFramesLabel, "", "", 0};
  std::map<std::pair<std::vector<uint64_t>, int64_t>, std::vector<uint64_t>> elided;
  auto add_sample = [&](const std::vector<uint64_t>& locs, const std::vector<uint64_t>& values, int64_t thread,
                        bool was_elided) {
    if (!was_elided) return sample(locs, values, thread);
    auto [it, fresh] = elided.try_emplace({locs, thread}, values.size(), 0);
    for (size_t i = 0; i < values.size(); ++i) it->second[i] += values[i];
  };
  constexpr uint32_t kElided = ~0u;
  walk_stacks(t, [&](uint32_t id, const std::vector<uint32_t>& path) {
    const StackNode& n = t.nodes[id];
    if (n.function < 0) return;
    location(p.functions[static_cast<size_t>(n.function)]);
    if (!n.counted || (n.stats.calls == 0 && n.own_ticks == 0 && n.stats.total == 0)) return;
    const std::vector<uint32_t> shown = shown_frames(path, kElided);
    std::vector<uint64_t> locs;
    for (size_t i = shown.size(); i-- > 0;) {
      if (shown[i] == kElided) {
        locs.push_back(location(elided_frame));
        continue;
      }
      const StackNode& f = t.nodes[shown[i]];
      if (f.function >= 0) locs.push_back(location(p.functions[static_cast<size_t>(f.function)]));
    }
    std::vector<uint64_t> values = {n.stats.calls, ns_of(trace, n.stats.total), ns_of(trace, n.own_ticks)};
    if (with_waits) {
      // (own_ticks is the node's self time as counted for the wanted frames)
      const uint64_t wait = ns_of(trace, std::min(n.stats.self_wait, n.own_ticks));
      values.insert(values.end(), {values[2] - std::min(values[2], wait), wait});
    }
    if (with_memory) values.insert(values.end(), {0, 0, 0});
    add_sample(locs, values, t.per_thread ? static_cast<int64_t>(t.nodes[path.front()].thread) : -1,
               shown.size() != path.size());
  });
  for (const MemorySample& s : memory) {
    std::vector<const analysis::FunctionInfo*> frames;
    for (const analysis::FunctionInfo& f : s.path) frames.push_back(&f);
    const std::vector<const analysis::FunctionInfo*> shown = shown_frames(frames, &elided_frame);
    std::vector<uint64_t> locs;
    for (size_t i = shown.size(); i-- > 0;) locs.push_back(location(*shown[i]));
    std::vector<uint64_t> values = {0, 0, 0};
    if (with_waits) values.insert(values.end(), {0, 0});
    values.insert(values.end(), {s.allocs, s.bytes, s.leaked_bytes});
    add_sample(locs, values, s.thread, shown.size() != s.path.size());
  }
  for (const auto& [key, values] : elided) sample(key.first, values, key.second);

  // Mappings, one per module (pprof groups by them), then locations and
  // functions.
  std::map<std::string, uint64_t> mapping_of;
  for (const analysis::FunctionInfo* f : used) mapping_of.try_emplace(f->module, 0);
  uint64_t next_mapping = 1;
  for (auto& [module, id] : mapping_of) {
    id = next_mapping++;
    const uint64_t file = str.id(module);
    w.message(kMapping, [&](ProtoWriter& m) {
      m.varint(1, id);
      if (file) m.varint(5, file);
      m.boolean(7, true);   // has_functions
      m.boolean(8, true);   // has_filenames
      m.boolean(9, true);   // has_line_numbers
    });
  }
  for (const analysis::FunctionInfo* f : used) {
    const uint64_t id = loc_of.at({f->name, f->module});
    w.message(kLocation, [&](ProtoWriter& m) {
      m.varint(1, id);
      m.varint(2, mapping_of.at(f->module));
      m.message(4, [&](ProtoWriter& l) {
        l.varint(1, id);  // the function of the same id
        if (f->line) l.varint(2, f->line);
      });
    });
  }
  for (const analysis::FunctionInfo* f : used) {
    const uint64_t name = str.id(f->name), file = str.id(f->file);
    w.message(kFunction, [&](ProtoWriter& m) {
      m.varint(1, loc_of.at({f->name, f->module}));
      m.varint(2, name);
      m.varint(3, name);
      if (file) m.varint(4, file);
      if (f->line) m.varint(5, f->line);
    });
  }
  const uint64_t comment = str.id("callscope export of " + trace.path() +
                                  (with_memory ? "; inuse_space: allocated and never freed by the end of the trace" : ""));
  const uint64_t self_type = str.id("self");
  const uint64_t calls_type = str.id("calls"), count = str.id("count");
  for (const std::string& s : str.list()) w.bytes(kStringTable, s);
  w.varint(kTimeNanos, trace.info().record.start_realtime_ns);
  w.varint(kDurationNanos, ns_of(trace, trace.info().record.duration_ticks));
  w.message(kPeriodType, [&](ProtoWriter& m) {
    m.varint(1, calls_type);
    m.varint(2, count);
  });
  w.varint(kPeriod, 1);
  w.varint(kComment, comment);
  w.varint(kDefaultSampleType, self_type);
  return gzip(out);
}

Result<std::string> gzip(const std::string& data) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return Error("zlib: cannot start compressing");
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return Error("zlib: compression failed");
  return out;
}

}  // namespace callscope::exporter
