// Perfetto's protobuf trace, written by hand (field numbers in
// proto/perfetto_trace.proto, from perfetto's protos/perfetto/trace/).
//
// Layout:
//  - sequence 1: a track descriptor per process and per thread;
//  - sequence 2 + i for the i-th thread exported: a first packet that clears
//    the sequence's incremental state, sets its defaults (clock 64, the
//    thread's track) and defines clock 64 as incremental, 0 at BOOTTIME 0;
//    then a packet per begin, end and instant, each timestamped with the ns
//    since the previous one. A begin names its function, module (as the
//    event's category) and file:line (as its source location) by ids
//    interned on the sequence the first time used: trace_processor shows
//    them as the slice's category and its source.* arguments. An end
//    carries nothing but its type: the reader closes the innermost open
//    slice of the track;
//  - with the kernel's events in the trace, per thread the tracks of
//    export/kernel_tracks.h under the thread's (each its own sequence,
//    after the calls'): a "CPU state" track whose slices tile the thread's
//    life -- Running, Runnable, Sleeping, Uninterruptible or Blocked, with
//    the system call it blocked in ("Sleeping: futex") and, as
//    woken_by_tid, the thread that woke it when the trace knows --;
//    "System calls" (slices, the result as an argument); "Block I/O" lanes
//    (a request from its start to its completion, bytes and sector as
//    arguments); "Page faults" and "CPU samples" as instants.
// Packets are gathered into chunks of about 4 MiB, each written as one
// TracePacket whose compressed_packets is the chunk, zlib-compressed by two
// other threads while the next chunks are encoded, and written in order.
#include <zlib.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "analysis/off_cpu.h"
#include "common/files.h"
#include "export/kernel_tracks.h"
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
  kEvName = 23, kEvNameIid = 10, kEvType = 9, kEvAnnotation = 4, kEvCategoryIids = 3, kEvSourceLocationIid = 34,
  // DebugAnnotation
  kAnnName = 10, kAnnUint = 3, kAnnInt = 4,
  // InternedData
  kInEventCategories = 1, kInEventNames = 2, kInSourceLocations = 4,
};
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3;
constexpr uint32_t kClockIncremental = 64, kBoottime = 6;
constexpr size_t kChunk = size_t{4} << 20;

// A field's tag and varint value at `p`.
inline char* put_field(char* p, uint32_t field, uint64_t v) {
  return put_varint(put_varint(p, uint64_t{field} << 3), v);
}

// Chunks of packets to the file: compressed by threads of their own (a
// bounded number waiting), written in order.
class Writer {
 public:
  Writer(FILE* out, bool compress) : out_(out), compress_(compress) {
    fresh_chunk();
    if (compress_)
      for (unsigned i = 0; i < kCompressors; ++i) workers_.emplace_back([this] { compress_chunks(); });
  }
  ~Writer() { stop(); }
  // A packet whose fields are `body`.
  void packet(std::string_view body) {
    if (used_ + body.size() + 16 > chunk_.size()) {
      flush_chunk();
      if (body.size() + 16 > chunk_.size()) chunk_.resize(body.size() + 16);
    }
    char* p = chunk_.data() + used_;
    *p++ = static_cast<char>((kPacket << 3) | 2);
    p = put_varint(p, body.size());
    std::memcpy(p, body.data(), body.size());
    used_ = static_cast<size_t>(p + body.size() - chunk_.data());
    if (used_ >= kChunk) flush_chunk();
  }
  // The hot path: a packet of under 128 bytes (a begin or an end: under 64
  // even with 10-byte varints) encoded in place, in the room past kChunk a
  // chunk always has. The body goes at the pointer returned; end_small(its
  // end) closes it.
  char* begin_small() { return chunk_.data() + used_ + 2; }
  void end_small(char* end) {
    char* head = chunk_.data() + used_;
    head[0] = static_cast<char>((kPacket << 3) | 2);
    head[1] = static_cast<char>(end - head - 2);  // < 128: one byte of length
    used_ = static_cast<size_t>(end - chunk_.data());
    if (used_ >= kChunk) flush_chunk();
  }
  Status finish() {
    flush_chunk();
    stop();
    if (!ok_) return Error("cannot write the Perfetto trace");
    return ok_status();
  }
  uint64_t bytes() const { return bytes_; }

 private:
  // Room for a whole chunk and one more packet of any small size.
  void fresh_chunk() {
    chunk_ = std::string();
    chunk_.resize(kChunk + 4096);
    used_ = 0;
  }
  void flush_chunk() {
    if (used_ == 0) return;
    chunk_.resize(used_);
    if (!compress_) {
      write(chunk_);
      fresh_chunk();
      return;
    }
    std::unique_lock lock(mu_);
    room_.wait(lock, [&] { return queue_.size() < kCompressors + 1; });
    queue_.push_back({queued_++, std::move(chunk_)});
    ready_.notify_one();
    lock.unlock();
    fresh_chunk();
  }
  void stop() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    ready_.notify_all();
    for (std::thread& w : workers_) w.join();
    workers_.clear();
  }
  void compress_chunks() {
    z_stream z{};
    // Without zlib's state the chunks are dropped (finish() says the write
    // failed), still in turn: the other compressor waits for it.
    const bool usable = deflateInit(&z, 3) == Z_OK;
    if (!usable) ok_ = false;
    std::string zbuf;
    for (;;) {
      std::unique_lock lock(mu_);
      ready_.wait(lock, [&] { return !queue_.empty() || done_; });
      if (queue_.empty()) break;
      auto [seq, chunk] = std::move(queue_.front());
      queue_.pop_front();
      room_.notify_one();
      lock.unlock();
      // Room in front for the packet's head, written when the size is known.
      constexpr size_t kHead = 16;
      size_t n = 0, hn = 0;
      if (usable) {
        deflateReset(&z);
        zbuf.resize(deflateBound(&z, chunk.size()) + 16);
        z.next_in = reinterpret_cast<Bytef*>(chunk.data());
        z.avail_in = static_cast<uInt>(chunk.size());
        z.next_out = reinterpret_cast<Bytef*>(zbuf.data() + kHead);
        z.avail_out = static_cast<uInt>(zbuf.size() - kHead);
        if (deflate(&z, Z_FINISH) != Z_STREAM_END) ok_ = false;
        n = zbuf.size() - kHead - z.avail_out;
        // The packet holds compressed_packets (field 50: a 2-byte tag) only.
        char head[kHead];
        char* p = head;
        *p++ = static_cast<char>((kPacket << 3) | 2);
        p = put_varint(p, n + 2 + varint_size(n));
        p = put_varint(p, (uint64_t{kCompressedPackets} << 3) | 2);
        p = put_varint(p, n);
        hn = static_cast<size_t>(p - head);
        std::memcpy(zbuf.data() + kHead - hn, head, hn);
      }
      // Chunks are written in the order they were filled.
      lock.lock();
      written_.wait(lock, [&, seq = seq] { return next_write_ == seq; });
      lock.unlock();
      if (usable) write(std::string_view(zbuf.data() + kHead - hn, hn + n));
      lock.lock();
      ++next_write_;
      written_.notify_all();
    }
    if (usable) deflateEnd(&z);
  }
  void write(std::string_view s) {
    if (std::fwrite(s.data(), 1, s.size(), out_) != s.size()) ok_ = false;
    bytes_ += s.size();
  }

  FILE* out_;
  bool compress_;
  std::string chunk_;  // sized kChunk + 4096; used_ bytes hold packets
  size_t used_ = 0;
  // Compressors: two, so that compressing (the slower half) uses the other
  // core while the events are encoded, and both when encoding waits.
  static constexpr unsigned kCompressors = 2;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable ready_, room_, written_;
  std::deque<std::pair<uint64_t, std::string>> queue_;  // (its place in the file, the chunk)
  uint64_t queued_ = 0, next_write_ = 0;
  bool done_ = false;
  std::atomic<bool> ok_ = true;
  std::atomic<uint64_t> bytes_ = 0;
};

uint64_t process_uuid(uint32_t process_index) { return (uint64_t{1} << 40) | process_index; }
uint64_t thread_uuid(uint32_t thread) { return uint64_t{thread} + 1; }
// A kernel track's (export/kernel_tracks.h): its kind (2 and up) and lane above the thread's index.
uint64_t kernel_uuid(uint32_t kind, uint32_t lane, uint32_t thread) {
  return (uint64_t{kind} << 48) | (uint64_t{lane & 0xffff} << 32) | thread;
}

// A sequence's first packet: incremental state cleared, clock 64 defined
// as incremental from BOOTTIME 0, events on `track` by default.
std::string sequence_start(uint32_t seq, uint64_t track) {
  std::string b;
  ProtoWriter p(b);
  p.varint(kSequenceId, seq);
  p.varint(kSequenceFlags, 1);  // SEQ_INCREMENTAL_STATE_CLEARED
  p.message(kDefaults, [&](ProtoWriter& d) {
    d.varint(58, kClockIncremental);  // timestamp_clock_id
    d.message(11, [&](ProtoWriter& t) { t.varint(11, track); });  // track_event_defaults.track_uuid
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
  return b;
}

class PerfettoSink final : public SliceSink {
 public:
  PerfettoSink(TimelineInput& in, Writer& w) : in_(in), w_(w) {}

  void begin_thread(uint32_t thread) override {
    seq_ = 2 + sequences_++;
    last_ns_ = 0;
    fn_category_.assign(in_.functions.functions().size(), 0);
    categories_.clear();
    w_.packet(sequence_start(seq_, thread_uuid(thread)));
  }

  // The hot paths, begin and end, encode into a buffer on the stack.
  void begin(uint64_t tick, uint32_t fn) override {
    if (fn >= fn_category_.size()) fn_category_.resize(fn + 1, 0);
    if (fn_category_[fn] == 0) return begin_first(tick, fn);
    char* p = timestamp(w_.begin_small(), tick);
    *p++ = static_cast<char>((kTrackEvent << 3) | 2);
    char* len = p++;  // the event's length: well under 128
    char* e = put_field(p, kEvType, kSliceBegin);
    e = put_field(e, kEvCategoryIids, fn_category_[fn]);
    e = put_field(e, kEvNameIid, fn + 1);
    if (fn_has_location_[fn]) e = put_field(e, kEvSourceLocationIid, fn + 1);
    *len = static_cast<char>(e - p);
    w_.end_small(put_field(e, kSequenceId, seq_));
  }

  void end(uint64_t tick) override {
    char* p = timestamp(w_.begin_small(), tick);
    *p++ = static_cast<char>((kTrackEvent << 3) | 2);
    *p++ = 2;
    *p++ = static_cast<char>(kEvType << 3);
    *p++ = static_cast<char>(kSliceEnd);
    w_.end_small(put_field(p, kSequenceId, seq_));
  }

  void instant(uint64_t tick, Instant what, uint64_t arg) override {
    std::string b;
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
    w_.packet(b);
  }

  void end_thread(uint64_t) override {}

 private:
  // A function's first begin on this sequence: its name, module and
  // location interned in the same packet.
  void begin_first(uint64_t tick, uint32_t fn) {
    const analysis::FunctionInfo& f = in_.functions.functions()[fn];
    auto [it, new_category] = categories_.try_emplace(f.module.empty() ? "?" : f.module, categories_.size() + 1);
    fn_category_[fn] = it->second;
    if (fn >= fn_has_location_.size()) fn_has_location_.resize(fn + 1, false);
    fn_has_location_[fn] = !f.file.empty();
    std::string b;
    ProtoWriter p(b);
    p.message(kInternedData, [&](ProtoWriter& d) {
      if (new_category)
        d.message(kInEventCategories, [&](ProtoWriter& e) {
          e.varint(1, it->second);
          e.bytes(2, it->first);
        });
      d.message(kInEventNames, [&](ProtoWriter& e) {
        e.varint(1, fn + 1);
        e.bytes(2, f.name);
      });
      if (!f.file.empty())
        d.message(kInSourceLocations, [&](ProtoWriter& e) {
          e.varint(1, fn + 1);
          e.bytes(2, f.file);
          e.bytes(3, f.name);
          if (f.line) e.varint(4, f.line);
        });
    });
    timestamp(p, tick);
    p.message(kTrackEvent, [&](ProtoWriter& e) {
      e.varint(kEvType, kSliceBegin);
      e.varint(kEvCategoryIids, fn_category_[fn]);
      e.varint(kEvNameIid, fn + 1);
      if (!f.file.empty()) e.varint(kEvSourceLocationIid, fn + 1);
    });
    p.varint(kSequenceId, seq_);
    w_.packet(b);
  }
  char* timestamp(char* p, uint64_t tick) {
    const uint64_t ns = ns_of(in_.trace, tick);
    p = put_field(p, kTimestamp, ns - last_ns_);
    last_ns_ = ns;
    return p;
  }
  void timestamp(ProtoWriter& p, uint64_t tick) {
    char b[16];
    p.out().append(b, static_cast<size_t>(timestamp(b, tick) - b));
  }

  TimelineInput& in_;
  Writer& w_;
  uint32_t seq_ = 0, sequences_ = 0;
  uint64_t last_ns_ = 0;
  // Per function (FunctionIds numbering), on this sequence: its category's
  // iid (0: not interned yet), whether it has a source location.
  std::vector<uint64_t> fn_category_;
  std::vector<bool> fn_has_location_;
  std::map<std::string, uint64_t> categories_;
};

// The kernel's tracks of each thread (export/kernel_tracks.h), under its
// thread's: each a sequence of its own, after the calls'.
Status write_kernel_tracks(TimelineInput& in, Writer& w, uint32_t first_seq) {
  uint32_t seq = first_seq;
  for (uint32_t ti : in.threads) {
    CALLSCOPE_TRY(std::vector<KernelTrack> tracks, kernel_tracks(in.trace, ti, in.options.window, in.functions));
    for (const KernelTrack& t : tracks) {
      const uint64_t uuid = kernel_uuid(t.kind, t.lane, ti);
      std::string b;
      ProtoWriter p(b);
      p.varint(kSequenceId, 1);
      p.message(kTrackDescriptor, [&](ProtoWriter& d) {
        d.varint(1, uuid);
        d.bytes(2, t.name);
        d.varint(5, thread_uuid(ti));
      });
      w.packet(b);
      w.packet(sequence_start(seq, uuid));
      uint64_t last = 0;
      const auto event = [&](uint64_t tick, auto&& body) {
        std::string e;
        ProtoWriter q(e);
        const uint64_t ns = ns_of(in.trace, tick);
        q.varint(kTimestamp, ns - std::min(ns, last));
        last = std::max(last, ns);
        q.message(kTrackEvent, body);
        q.varint(kSequenceId, seq);
        w.packet(e);
      };
      for (const KernelSlice& s : t.slices) {
        event(s.from, [&](ProtoWriter& ev) {
          ev.varint(kEvType, s.instant ? kInstant : kSliceBegin);
          ev.bytes(kEvName, s.name);
          for (const KernelArg& arg : s.args)
            ev.message(kEvAnnotation, [&](ProtoWriter& a) {
              a.bytes(kAnnName, arg.name);
              a.varint(arg.is_signed ? kAnnInt : kAnnUint, arg.value);  // (int64 as two's complement)
            });
        });
        if (!s.instant) event(s.to, [&](ProtoWriter& ev) { ev.varint(kEvType, kSliceEnd); });
      }
      ++seq;
    }
  }
  return ok_status();
}

void describe_tracks(TimelineInput& in, Writer& w) {
  // Processes by their index in the trace, not their pid: an exec keeps
  // the pid and starts another process of the trace.
  std::map<uint32_t, bool> described;
  for (uint32_t ti : in.threads) {
    const auto& tr = in.trace.threads()[ti];
    const uint32_t proc = tr.record.process_index;
    const auto& pr = in.trace.process(proc);
    const uint32_t pid = pr.record.pid;
    if (!described[proc]) {
      described[proc] = true;
      std::string b;
      ProtoWriter p(b);
      p.varint(kSequenceId, 1);
      p.message(kTrackDescriptor, [&](ProtoWriter& d) {
        d.varint(1, process_uuid(proc));
        d.message(3, [&](ProtoWriter& pd) {
          pd.varint(1, pid);
          for (const std::string& a : pr.argv) pd.bytes(2, a);
          pd.bytes(6, base_name(pr.exe));
        });
      });
      w.packet(b);
    }
    std::string b;
    ProtoWriter p(b);
    p.varint(kSequenceId, 1);
    p.message(kTrackDescriptor, [&](ProtoWriter& d) {
      d.varint(1, thread_uuid(ti));
      d.varint(5, process_uuid(proc));
      d.message(4, [&](ProtoWriter& td) {
        td.varint(1, pid);
        td.varint(2, tr.record.tid);
        td.bytes(5, tr.name.empty() ? "thread " + std::to_string(ti) : tr.name + " (" + std::to_string(ti) + ")");
      });
    });
    w.packet(b);
  }
}

}  // namespace

Result<ExportCounts> write_perfetto(TimelineInput& in, FILE* out, bool compress) {
  Writer w(out, compress);
  describe_tracks(in, w);
  PerfettoSink sink(in, w);
  CALLSCOPE_TRY(TimelineCounts counts, stream_timeline(in.trace, in.threads, in.functions, in.options, sink));
  CALLSCOPE_CHECK(write_kernel_tracks(in, w, 2 + static_cast<uint32_t>(in.threads.size())));
  CALLSCOPE_CHECK(w.finish());
  return ExportCounts{counts, w.bytes()};
}

}  // namespace callscope::exporter
