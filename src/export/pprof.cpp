// pprof's profile.proto (github.com/google/pprof, proto/profile.proto),
// written by hand with ProtoWriter; field numbers in proto/pprof_profile.proto.
#include <zlib.h>

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

Result<std::string> pprof_profile(const format::TraceReader& trace, const StackTree& t) {
  const analysis::Profile& p = *t.profile;
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

  // Functions used, each with a location of its own (ids from 1, in order of
  // first use on the walk: deterministic).
  std::map<int64_t, uint64_t> loc_of;
  std::vector<int64_t> used;
  const uint64_t thread_key = str.id("thread");
  walk_stacks(t, [&](uint32_t id, const std::vector<uint32_t>& path) {
    const StackNode& n = t.nodes[id];
    if (n.function < 0) return;
    if (loc_of.try_emplace(n.function, loc_of.size() + 1).second) used.push_back(n.function);
    if (!n.counted || (n.stats.calls == 0 && n.own_ticks == 0 && n.stats.total == 0)) return;
    std::vector<uint64_t> locs;
    for (size_t i = path.size(); i-- > 0;) {
      const StackNode& f = t.nodes[path[i]];
      if (f.function >= 0) locs.push_back(loc_of.at(f.function));
    }
    const uint64_t values[3] = {n.stats.calls, ns_of(trace, n.stats.total), ns_of(trace, n.own_ticks)};
    int64_t thread = -1;
    if (t.per_thread) thread = t.nodes[path.front()].thread;
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
  });

  // Mappings, one per module (pprof groups by them), then locations and
  // functions.
  std::map<std::string, uint64_t> mapping_of;
  for (int64_t fn : used) mapping_of.try_emplace(p.functions[static_cast<size_t>(fn)].module, 0);
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
  for (int64_t fn : used) {
    const analysis::FunctionInfo& f = p.functions[static_cast<size_t>(fn)];
    const uint64_t id = loc_of.at(fn);
    w.message(kLocation, [&](ProtoWriter& m) {
      m.varint(1, id);
      m.varint(2, mapping_of.at(f.module));
      m.message(4, [&](ProtoWriter& l) {
        l.varint(1, id);  // the function of the same id
        if (f.line) l.varint(2, f.line);
      });
    });
  }
  for (int64_t fn : used) {
    const analysis::FunctionInfo& f = p.functions[static_cast<size_t>(fn)];
    const uint64_t name = str.id(f.name), file = str.id(f.file);
    w.message(kFunction, [&](ProtoWriter& m) {
      m.varint(1, loc_of.at(fn));
      m.varint(2, name);
      m.varint(3, name);
      if (file) m.varint(4, file);
      if (f.line) m.varint(5, f.line);
    });
  }
  const uint64_t comment = str.id("callscope export of " + trace.path());
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
