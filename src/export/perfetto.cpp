// Perfetto's protobuf trace, written by hand (field numbers in
// proto/perfetto_trace.proto, from perfetto's protos/perfetto/trace/).
//
// Layout:
//  - sequence 1: a track descriptor per process and per thread;
//  - sequence 2 + i for the i-th thread exported: a first packet that clears
//    the sequence's incremental state, sets its defaults (clock 64, the
//    thread's track) and defines clock 64 as incremental, 0 at BOOTTIME 0;
//    then a packet per begin (name, module and file:line interned on the
//    sequence the first time used), end and instant, each timestamped with
//    the ns since the previous one. An end carries nothing but its type: the
//    reader closes the innermost open slice of the track.
// Packets are gathered into chunks of about 1 MiB, each written as one
// TracePacket whose compressed_packets is the chunk, zlib-compressed.
#include <zlib.h>

#include <cmath>

#include "export/ns.h"
#include "export/protobuf.h"
#include "export/timeline_exports.h"

namespace callscope::exporter {
namespace {

enum : uint32_t {
  // TracePacket
  kPacket = 1, kTimestamp = 8, kClockSnapshot = 6, kTrackEvent = 11, kTrackDescriptor = 60,
  kCompressedPackets = 50, kSequenceId = 10, kInternedData = 12, kSequenceFlags = 13, kDefaults = 59,
  // TrackEvent
  kEvName = 23, kEvNameIid = 10, kEvType = 9, kEvAnnotation = 4,
  // DebugAnnotation
  kAnnNameIid = 1, kAnnName = 10, kAnnUint = 3, kAnnStringIid = 17,
  // InternedData
  kInEventNames = 2, kInAnnotationNames = 3, kInAnnotationStrings = 29,
};
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3;
constexpr uint32_t kClockIncremental = 64, kBoottime = 6;
constexpr uint64_t kAnnModule = 1, kAnnLocation = 2;  // interned annotation names

class Writer {
 public:
  Writer(FILE* out, bool compress) : out_(out), compress_(compress) {
    if (compress_) deflateInit(&z_, 1);
  }
  ~Writer() {
    if (compress_) deflateEnd(&z_);
  }
  // The packet being built: its fields go into body().
  std::string& body() { return body_; }
  void end_packet() {
    char tag[11];
    char* p = tag;
    *p++ = static_cast<char>((kPacket << 3) | 2);
    p = put_varint(p, body_.size());
    chunk_.append(tag, static_cast<size_t>(p - tag));
    chunk_ += body_;
    body_.clear();
    if (chunk_.size() >= (1u << 20)) flush_chunk();
  }
  Status finish() {
    flush_chunk();
    if (!ok_) return Error("cannot write the Perfetto trace");
    return ok_status();
  }
  uint64_t bytes() const { return bytes_; }

 private:
  void flush_chunk() {
    if (chunk_.empty()) return;
    if (!compress_) {
      write(chunk_);
      chunk_.clear();
      return;
    }
    deflateReset(&z_);
    zbuf_.resize(deflateBound(&z_, chunk_.size()));
    z_.next_in = reinterpret_cast<Bytef*>(chunk_.data());
    z_.avail_in = static_cast<uInt>(chunk_.size());
    z_.next_out = reinterpret_cast<Bytef*>(zbuf_.data());
    z_.avail_out = static_cast<uInt>(zbuf_.size());
    if (deflate(&z_, Z_FINISH) != Z_STREAM_END) ok_ = false;
    const size_t n = zbuf_.size() - z_.avail_out;
    std::string head;
    ProtoWriter w(head);
    head.push_back(static_cast<char>((kPacket << 3) | 2));
    w.raw_varint(n + 2 + varint_size(n));  // the packet: compressed_packets (field 50: a 2-byte tag) only
    w.raw_varint((uint64_t{kCompressedPackets} << 3) | 2);
    w.raw_varint(n);
    write(head);
    write(std::string_view(zbuf_.data(), n));
    chunk_.clear();
  }
  void write(std::string_view s) {
    if (std::fwrite(s.data(), 1, s.size(), out_) != s.size()) ok_ = false;
    bytes_ += s.size();
  }

  FILE* out_;
  bool compress_;
  z_stream z_{};
  std::string body_, chunk_, zbuf_;
  uint64_t bytes_ = 0;
  bool ok_ = true;
};

uint64_t process_uuid(uint32_t pid) { return (uint64_t{1} << 40) | pid; }
uint64_t thread_uuid(uint32_t thread) { return uint64_t{thread} + 1; }

class PerfettoSink final : public SliceSink {
 public:
  PerfettoSink(TimelineInput& in, Writer& w) : in_(in), w_(w) {}

  void begin_thread(uint32_t thread) override {
    seq_ = 2 + sequences_++;
    last_ns_ = 0;
    interned_fn_.assign(in_.functions.functions().size(), false);
    interned_str_.clear();
    next_str_iid_ = 1;
    std::string& b = w_.body();
    ProtoWriter p(b);
    p.varint(kSequenceId, seq_);
    p.varint(kSequenceFlags, 1);  // SEQ_INCREMENTAL_STATE_CLEARED
    p.message(kDefaults, [&](ProtoWriter& d) {
      d.varint(58, kClockIncremental);  // timestamp_clock_id
      d.message(11, [&](ProtoWriter& t) { t.varint(11, thread_uuid(thread)); });  // track_event_defaults.track_uuid
    });
    p.message(kClockSnapshot, [&](ProtoWriter& s) {
      s.message(1, [&](ProtoWriter& c) {
        c.varint(1, kBoottime);
        c.varint(2, 0);
      });
      s.message(1, [&](ProtoWriter& c) {
        c.varint(1, kClockIncremental);
        c.varint(2, 0);
        c.boolean(3, true);
      });
    });
    w_.end_packet();
  }

  void begin(uint64_t tick, uint32_t fn) override {
    std::string& b = w_.body();
    ProtoWriter p(b);
    if (fn >= interned_fn_.size()) interned_fn_.resize(fn + 1, false);
    const analysis::FunctionInfo& f = in_.functions.functions()[fn];
    uint64_t module_iid = 0, location_iid = 0;
    if (!interned_fn_[fn]) {
      interned_fn_[fn] = true;
      const bool first = interned_str_.empty() && next_str_iid_ == 1;
      std::string location = f.file.empty() ? "" : f.file + (f.line ? ":" + std::to_string(f.line) : "");
      std::vector<std::pair<uint64_t, const std::string*>> fresh;
      module_iid = string_iid(f.module, fresh);
      if (!location.empty()) location_iid = string_iid(location, fresh);
      p.message(kInternedData, [&](ProtoWriter& d) {
        d.message(kInEventNames, [&](ProtoWriter& e) {
          e.varint(1, fn + 1);
          e.bytes(2, f.name);
        });
        if (first) {
          for (auto [iid, name] : {std::pair{kAnnModule, "module"}, std::pair{kAnnLocation, "location"}})
            d.message(kInAnnotationNames, [&](ProtoWriter& e) {
              e.varint(1, iid);
              e.bytes(2, name);
            });
        }
        for (const auto& [iid, s] : fresh)
          d.message(kInAnnotationStrings, [&](ProtoWriter& e) {
            e.varint(1, iid);
            e.bytes(2, *s);
          });
      });
    } else {
      module_iid = fn_module_[fn];
      location_iid = fn_location_[fn];
    }
    if (fn >= fn_module_.size()) {
      fn_module_.resize(fn + 1, 0);
      fn_location_.resize(fn + 1, 0);
    }
    fn_module_[fn] = module_iid;
    fn_location_[fn] = location_iid;
    timestamp(p, tick);
    p.message(kTrackEvent, [&](ProtoWriter& e) {
      e.varint(kEvType, kSliceBegin);
      e.varint(kEvNameIid, fn + 1);
      annotation(e, kAnnModule, module_iid);
      if (location_iid) annotation(e, kAnnLocation, location_iid);
    });
    p.varint(kSequenceId, seq_);
    w_.end_packet();
    ++depth_;
  }

  void end(uint64_t tick) override {
    // The hot path: timestamp, track_event { type: END }, sequence id.
    std::string& b = w_.body();
    ProtoWriter p(b);
    timestamp(p, tick);
    b.push_back(static_cast<char>((kTrackEvent << 3) | 2));
    b.push_back(2);
    b.push_back(static_cast<char>(kEvType << 3));
    b.push_back(static_cast<char>(kSliceEnd));
    p.varint(kSequenceId, seq_);
    w_.end_packet();
    --depth_;
  }

  void instant(uint64_t tick, Instant what, uint64_t arg) override {
    std::string& b = w_.body();
    ProtoWriter p(b);
    timestamp(p, tick);
    p.message(kTrackEvent, [&](ProtoWriter& e) {
      e.varint(kEvType, kInstant);
      e.bytes(kEvName, what == Instant::kLost    ? "[lost events]"
                       : what == Instant::kPause ? "[recording stopped]"
                       : what == Instant::kResume ? "[recording goes on]"
                                                  : "[mark]");
      if (what == Instant::kLost || what == Instant::kMark)
        e.message(kEvAnnotation, [&](ProtoWriter& a) {
          a.bytes(kAnnName, what == Instant::kLost ? "events" : "id");
          a.varint(kAnnUint, arg);
        });
    });
    p.varint(kSequenceId, seq_);
    w_.end_packet();
  }

  void end_thread(uint64_t) override {}

 private:
  void timestamp(ProtoWriter& p, uint64_t tick) {
    const uint64_t ns = ns_of(in_.trace, tick);
    p.varint(kTimestamp, ns - last_ns_);
    last_ns_ = ns;
  }
  static void annotation(ProtoWriter& e, uint64_t name_iid, uint64_t value_iid) {
    e.message(kEvAnnotation, [&](ProtoWriter& a) {
      a.varint(kAnnNameIid, name_iid);
      a.varint(kAnnStringIid, value_iid);
    });
  }
  uint64_t string_iid(const std::string& s, std::vector<std::pair<uint64_t, const std::string*>>& fresh) {
    auto [it, is_new] = interned_str_.try_emplace(s, next_str_iid_);
    if (is_new) {
      ++next_str_iid_;
      fresh.push_back({it->second, &it->first});
    }
    return it->second;
  }

  TimelineInput& in_;
  Writer& w_;
  uint32_t seq_ = 0, sequences_ = 0;
  uint64_t last_ns_ = 0;
  int64_t depth_ = 0;
  std::vector<bool> interned_fn_;
  std::vector<uint64_t> fn_module_, fn_location_;
  std::map<std::string, uint64_t> interned_str_;
  uint64_t next_str_iid_ = 1;
};

void describe_tracks(TimelineInput& in, Writer& w) {
  std::vector<bool> seen_pid;
  std::map<uint32_t, bool> described;
  for (uint32_t ti : in.threads) {
    const auto& tr = in.trace.threads()[ti];
    const auto& pr = in.trace.process(tr.record.process_index);
    const uint32_t pid = pr.record.pid;
    if (!described[pid]) {
      described[pid] = true;
      ProtoWriter p(w.body());
      p.varint(kSequenceId, 1);
      p.message(kTrackDescriptor, [&](ProtoWriter& d) {
        d.varint(1, process_uuid(pid));
        d.message(3, [&](ProtoWriter& pd) {
          pd.varint(1, pid);
          for (const std::string& a : pr.argv) pd.bytes(2, a);
          std::string exe = pr.exe;
          if (const size_t slash = exe.rfind('/'); slash != std::string::npos) exe = exe.substr(slash + 1);
          pd.bytes(6, exe);
        });
      });
      w.end_packet();
    }
    ProtoWriter p(w.body());
    p.varint(kSequenceId, 1);
    p.message(kTrackDescriptor, [&](ProtoWriter& d) {
      d.varint(1, thread_uuid(ti));
      d.varint(5, process_uuid(pid));
      d.message(4, [&](ProtoWriter& td) {
        td.varint(1, pid);
        td.varint(2, tr.record.tid);
        td.bytes(5, tr.name.empty() ? "thread " + std::to_string(ti) : tr.name + " (" + std::to_string(ti) + ")");
      });
    });
    w.end_packet();
  }
}

}  // namespace

Result<ExportCounts> write_perfetto(TimelineInput& in, FILE* out, bool compress) {
  Writer w(out, compress);
  describe_tracks(in, w);
  PerfettoSink sink(in, w);
  CALLSCOPE_TRY(TimelineCounts counts, stream_timeline(in.trace, in.threads, in.functions, in.options, sink));
  CALLSCOPE_CHECK(w.finish());
  return ExportCounts{counts, w.bytes()};
}

}  // namespace callscope::exporter
