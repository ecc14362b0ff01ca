#include "format/trace_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/files.h"
#include "format/varint.h"

namespace callscope::format {
namespace {

bool valid_header(const BlockHeader& h) {
  return h.magic == kBlockMagic && h.check == header_check(&h, offsetof(BlockHeader, check));
}

// Metadata payload: count, record size, records, strings.
template <class R>
Result<std::vector<std::pair<R, const uint8_t*>>> parse_records(const std::vector<uint8_t>& p,
                                                                 const uint8_t** strings, size_t* strings_size) {
  if (p.size() < 8) return Error("metadata payload too short");
  uint32_t count, rsize;
  std::memcpy(&count, p.data(), 4);
  std::memcpy(&rsize, p.data() + 4, 4);
  if (rsize == 0 || (p.size() - 8) / rsize < count) return Error("record table larger than its block");
  std::vector<std::pair<R, const uint8_t*>> out;
  for (uint32_t i = 0; i < count; ++i) {
    R r{};
    std::memcpy(&r, p.data() + 8 + size_t{i} * rsize, std::min<size_t>(rsize, sizeof r));  // newer minor versions append fields
    out.push_back({r, nullptr});
  }
  *strings = p.data() + 8 + size_t{count} * rsize;
  *strings_size = p.size() - 8 - size_t{count} * rsize;
  return out;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The range of every field of a file header (docs/trace-format.md, "File
// header"); the message says which field is wrong. Magic and major version
// are checked before.
Status check_file_header(const FileHeader& h, uint64_t file_size) {
  const bool known_minor = h.version_minor <= kTraceVersionMinor;
  if (known_minor ? h.header_size != sizeof(FileHeader)
                  : h.header_size < sizeof(FileHeader) || h.header_size > 4096 || h.header_size % 8 != 0)
    return Error("header_size is " + std::to_string(h.header_size) + ", not " + std::to_string(sizeof(FileHeader)));
  if (h.header_size > file_size)
    return Error("header_size " + std::to_string(h.header_size) + " is past the end of the file (" +
                 std::to_string(file_size) + " bytes)");
  if (h.clock != static_cast<uint32_t>(ClockKind::kTsc) && h.clock != static_cast<uint32_t>(ClockKind::kMonotonic))
    return Error("unknown clock kind " + std::to_string(h.clock) + " (1: TSC, 2: CLOCK_MONOTONIC)");
  if (h.clock == static_cast<uint32_t>(ClockKind::kMonotonic) && h.ticks_per_ns != 1.0)
    return Error("ticks_per_ns is " + number(h.ticks_per_ns) + " for CLOCK_MONOTONIC, whose ticks are ns (1)");
  if (!(h.ticks_per_ns >= kMinTicksPerNs && h.ticks_per_ns <= kMaxTicksPerNs))  // NaN and inf too
    return Error("ticks_per_ns is " + number(h.ticks_per_ns) + ", not a TSC rate (" + number(kMinTicksPerNs) +
                 " to " + number(kMaxTicksPerNs) + " ticks per ns)");
  constexpr uint64_t kMaxNs = uint64_t{1} << 63;  // clock_gettime's time_t: no clock reads past it
  if (h.origin_mono_ns >= kMaxNs || h.origin_realtime_ns >= kMaxNs)
    return Error("origin time out of range (" + std::to_string(h.origin_mono_ns) + ", " +
                 std::to_string(h.origin_realtime_ns) + " ns)");
  if (known_minor && h.flags != 0) return Error("unknown flags " + std::to_string(h.flags));
  if (known_minor && (h.reserved != 0 || h.reserved2 != 0)) return Error("reserved bytes are not zero");
  if (h.version_minor < kTraceMinorHeaderCheck) {
    if (h.check != 0) return Error("reserved bytes are not zero");
  } else if (h.check != header_check(&h, offsetof(FileHeader, check))) {
    return Error("its check does not match its bytes");
  }
  return ok_status();
}

std::string str(const uint8_t* strings, size_t size, StrRef r) {
  if (r.offset > size || r.length > size - r.offset) return "";
  return std::string(reinterpret_cast<const char*>(strings) + r.offset, r.length);
}

}  // namespace

std::string hex_string(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\0', start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::unique_ptr<TraceReader> TraceReader::growing(const FileHeader& header, const TraceInfo& info) {
  std::unique_ptr<TraceReader> r(new TraceReader());
  r->header_ = header;
  r->info_ = info;
  r->complete_ = true;
  return r;
}

Result<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path) {
  std::unique_ptr<TraceReader> r(new TraceReader());
  r->path_ = path;
  CALLSCOPE_TRY(const OpenedFile file, open_regular_file(path, "a raw session? try 'callscope finish DIR'"));
  const int fd = file.fd;
  r->size_ = file.size;
  if (r->size_ < sizeof(FileHeader)) {
    ::close(fd);
    return Error("'" + path + "' is not a callscope trace (" + std::to_string(r->size_) +
                 " bytes, shorter than a trace header)");
  }
  void* m = ::mmap(nullptr, r->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);
  if (m == MAP_FAILED) return system_error("cannot map '" + path + "'", e);
  r->data_ = static_cast<const uint8_t*>(m);
  std::memcpy(&r->header_, r->data_, sizeof r->header_);
  if (std::memcmp(r->header_.magic, kTraceMagic, sizeof kTraceMagic) != 0)
    return Error("'" + path + "' is not a callscope trace (bad magic)");
  if (r->header_.version_major != kTraceVersionMajor)
    return Error("'" + path + "' is trace format " + std::to_string(r->header_.version_major) + "." +
                 std::to_string(r->header_.version_minor) + "; this callscope reads " +
                 std::to_string(kTraceVersionMajor) + ".x");
  if (Status st = check_file_header(r->header_, r->size_); !st)
    return Error("'" + path + "': damaged trace header (the first " + std::to_string(sizeof(FileHeader)) +
                 " bytes): " + st.error().message() +
                 "; the file was changed after callscope wrote it: read an intact copy, or record again");
  CALLSCOPE_CHECK(r->index_blocks());
  CALLSCOPE_CHECK(r->read_metadata());
  return r;
}

TraceReader::~TraceReader() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void TraceReader::problem(const BlockRef& b, const std::string& what) {
  // Once each: a damaged block is met again by every pass that reads it
  // (info verifies every block, then reads each thread's events).
  std::string p = "block " + std::to_string(b.number) + " at offset " + std::to_string(b.offset) + ": " + what;
  if (std::find(problems_.begin(), problems_.end(), p) == problems_.end()) problems_.push_back(std::move(p));
}

Status TraceReader::index_blocks() {
  uint64_t off = header_.header_size;
  uint32_t number = 0;
  while (off < size_) {
    BlockHeader h{};
    if (size_ - off < sizeof h) {
      problems_.push_back("offset " + std::to_string(off) + ": " + std::to_string(size_ - off) +
                          " trailing bytes, too few for a block (truncated file)");
      break;
    }
    std::memcpy(&h, data_ + off, sizeof h);
    if (!valid_header(h)) {
      // The damaged block keeps its number; resynchronize at the next offset
      // that holds a valid block header.
      const uint32_t damaged = number++;
      uint64_t next = off + 1;
      for (; next + sizeof h <= size_; ++next) {
        if (std::memcmp(data_ + next, &kBlockMagic, 4) != 0) continue;
        std::memcpy(&h, data_ + next, sizeof h);
        if (valid_header(h)) break;
      }
      problems_.push_back("block " + std::to_string(damaged) + " at offset " + std::to_string(off) +
                          ": damaged block header; " +
                          (next + sizeof h <= size_ ? "skipped " + std::to_string(next - off) + " bytes to the next block"
                                                    : "no valid block follows"));
      if (next + sizeof h > size_) break;
      off = next;
    }
    BlockRef b{number++, off, h};
    if (h.stored_size > size_ - off - sizeof h) {
      problem(b, "payload of " + std::to_string(h.stored_size) + " bytes runs past the end of the file (truncated)");
      break;
    }
    blocks_.push_back(b);
    if (h.type == static_cast<uint16_t>(BlockType::kEnd)) complete_ = true;
    off += sizeof h + h.stored_size;
  }
  if (!complete_) problems_.push_back("the trace has no end block: it is incomplete (the writer was interrupted?)");
  return ok_status();
}

Result<std::vector<uint8_t>> TraceReader::payload(const BlockRef& b) {
  std::vector<uint8_t> out;
  CALLSCOPE_CHECK(payload_into(b, out, nullptr));
  return out;
}

// Decompresses into `out`, reusing its memory (and `dctx` when given): a
// reader of every event goes through hundreds of blocks.
Status TraceReader::payload_into(const BlockRef& b, std::vector<uint8_t>& out, ZSTD_DCtx_s* dctx) {
  const uint8_t* p = data_ + b.offset + sizeof(BlockHeader);
  if (!(b.header.flags & kBlockCompressed)) {
    out.assign(p, p + b.header.stored_size);
    return ok_status();
  }
  // The frame states its own size: trust the header's raw_size (and
  // allocate it) only when both agree.
  if (ZSTD_getFrameContentSize(p, b.header.stored_size) != b.header.raw_size)
    return Error("the compressed frame's size does not match the block header");
  out.resize(b.header.raw_size);
  const size_t n = dctx ? ZSTD_decompressDCtx(dctx, out.data(), out.size(), p, b.header.stored_size)
                        : ZSTD_decompress(out.data(), out.size(), p, b.header.stored_size);
  if (ZSTD_isError(n)) return Error(std::string("cannot decompress: ") + ZSTD_getErrorName(n));
  if (n != b.header.raw_size)
    return Error("decompressed to " + std::to_string(n) + " bytes, expected " + std::to_string(b.header.raw_size));
  return ok_status();
}

size_t TraceReader::verify_payloads() {
  size_t bad = 0;
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kEvents)) continue;  // metadata was read at open
    auto p = payload(b);
    if (!p) {
      problem(b, p.error().message());
      ++bad;
    }
  }
  return bad;
}

Status TraceReader::read_metadata() {
  bool have_threads = false;
  std::vector<std::pair<ThreadNameRecord, std::string>> names;  // attached once the thread table is read
  for (const BlockRef& b : blocks_) {
    const auto type = static_cast<BlockType>(b.header.type);
    if (type == BlockType::kEvents || type == BlockType::kEnd || type == BlockType::kProfile) continue;
    auto p = payload(b);
    if (!p) {
      problem(b, p.error().message());
      continue;
    }
    const uint8_t* strings = nullptr;
    size_t ssize = 0;
    auto fail = [&](const Error& e) { problem(b, e.message()); };
    switch (type) {
      case BlockType::kInfo: {
        auto recs = parse_records<InfoRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        if (recs->empty()) break;
        info_.record = recs->front().first;
        info_.argv = split_nul(str(strings, ssize, info_.record.cmdline));
        info_.cwd = str(strings, ssize, info_.record.cwd);
        info_.tool_version = str(strings, ssize, info_.record.tool_version);
        break;
      }
      case BlockType::kProcesses: {
        auto recs = parse_records<ProcessRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        for (auto& [r, unused] : *recs)
          processes_.push_back({r, str(strings, ssize, r.exe), split_nul(str(strings, ssize, r.cmdline))});
        break;
      }
      case BlockType::kModules: {
        auto recs = parse_records<ModuleRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        for (auto& [r, unused] : *recs)
          modules_.push_back({r, str(strings, ssize, r.path), hex_string(r.build_id, std::min<uint32_t>(r.build_id_len, 20))});
        break;
      }
      case BlockType::kThreads: {
        auto recs = parse_records<ThreadRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        have_threads = true;
        for (auto& [r, unused] : *recs) threads_.push_back({r, str(strings, ssize, r.name)});
        break;
      }
      case BlockType::kDumps: {
        auto recs = parse_records<DumpRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        for (auto& [r, unused] : *recs) dumps_.push_back(r);
        break;
      }
      case BlockType::kResident: {
        auto recs = parse_records<ResidentRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        for (auto& [r, unused] : *recs) resident_.push_back({r, str(strings, ssize, r.path)});
        break;
      }
      case BlockType::kMarks: {
        auto recs = parse_records<MarkRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        for (auto& [r, unused] : *recs)
          (r.kind == kMarkKindTag ? tags_ : marks_).push_back({r, str(strings, ssize, r.text)});
        break;
      }
      case BlockType::kThreadNames: {
        auto recs = parse_records<ThreadNameRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        for (auto& [r, unused] : *recs) names.emplace_back(r, str(strings, ssize, r.name));
        break;
      }
      default:
        break;  // a block type of a later minor version
    }
  }
  for (auto& [r, name] : names)
    if (r.thread_index < threads_.size()) threads_[r.thread_index].names.push_back({r.tick, std::move(name)});
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kProfile)) continue;
    if (b.header.aux1 >= dumps_.size()) {
      problem(b, "a call tree of snapshot " + std::to_string(b.header.aux1) + ", which the snapshot table does not list");
      continue;
    }
    profile_blocks_.push_back(b);
  }
  // Without the thread table, the event blocks still say which thread they
  // belong to: keep their events readable.
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kEvents)) continue;
    if (b.header.aux0 >= threads_.size()) {
      if (have_threads) {
        problem(b, "events of thread " + std::to_string(b.header.aux0) + ", which the thread table does not list");
        continue;
      }
      // Placeholders cost memory: a thread index far beyond what the
      // blocks could hold is damage, not a thread.
      if (b.header.aux0 > 16 * blocks_.size() + 4096) {
        problem(b, "thread index " + std::to_string(b.header.aux0) + " is out of range");
        continue;
      }
      while (threads_.size() <= b.header.aux0) {
        ThreadInfo t;
        t.name = "?";
        threads_.push_back(t);
      }
    }
  }
  return ok_status();
}

Result<std::vector<ProfileNodeRecord>> TraceReader::read_tree(uint32_t dump, uint32_t thread) {
  std::vector<ProfileNodeRecord> out;
  for (const BlockRef& b : profile_blocks_) {
    if (b.header.aux1 != dump || b.header.aux0 != thread) continue;
    auto p = payload(b);
    if (!p) {
      problem(b, p.error().message());
      return Error("block " + std::to_string(b.number) + ": " + p.error().message());
    }
    if (p->size() != uint64_t{b.header.count} * sizeof(ProfileNodeRecord))
      return Error("block " + std::to_string(b.number) + ": a call tree of " + std::to_string(b.header.count) +
                   " nodes in " + std::to_string(p->size()) + " bytes");
    out.resize(b.header.count);
    if (!out.empty()) std::memcpy(out.data(), p->data(), p->size());
    for (size_t i = 1; i < out.size(); ++i)  // parents come first; anything else is damage
      if (out[i].parent >= i) return Error("block " + std::to_string(b.number) + ": node " + std::to_string(i) +
                                           " has parent " + std::to_string(out[i].parent) + ", not an earlier node");
    break;
  }
  return out;
}

std::vector<uint32_t> TraceReader::tree_threads(uint32_t dump) const {
  std::vector<uint32_t> out;
  for (const BlockRef& b : profile_blocks_)
    if (b.header.aux1 == dump) out.push_back(b.header.aux0);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status TraceReader::for_each_event(uint32_t thread, const std::function<bool(const TraceEvent&)>& f) {
  return for_each_event_batch(thread, [&f](const TraceEvent* events, size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (!f(events[i])) return false;
    return true;
  });
}

Status TraceReader::for_each_event_batch(uint32_t thread, const std::function<bool(const TraceEvent*, size_t)>& f) {
  struct Batch final : EventSink {
    explicit Batch(const std::function<bool(const TraceEvent*, size_t)>& fn)
        : f(fn), events(new TraceEvent[kEventBatch]) {}  // uninitialised: the decoder fills what it hands over
    TraceEvent* buffer() override { return events.get(); }
    bool commit(size_t n) override { return f(events.get(), n); }
    const std::function<bool(const TraceEvent*, size_t)>& f;
    std::unique_ptr<TraceEvent[]> events;
  } sink(f);
  return for_each_event_into(thread, sink);
}

namespace {

// Where the decoder's events go. The decoding loop (decode_events) is one
// for both; an output says what an event becomes.
//
// Every event, as TraceEvent: stack pointers rebuilt, depths, exits naming
// the frame they close.
class FullEvents {
 public:
  explicit FullEvents(TraceReader::EventSink& sink) : sink_(sink) {}
  bool start() { return (batch_ = sink_.buffer()) != nullptr; }
  bool entry(EventKind k, uint64_t tick, uint64_t addr, const uint8_t*& sp, const uint8_t* sp_end) {
    uint64_t d;
    if (!get_varint(sp, sp_end, d)) return false;
    TraceEvent& e = next(k, tick);
    e.addr = addr;
    const uint64_t parent = stack_.empty() ? 0 : stack_.back().sp;
    e.sp = parent - static_cast<uint64_t>(unzigzag(d)) * kSpUnit;  // modulo 2^64, as written
    stack_.push_back({e.addr, e.sp});
    e.depth = static_cast<uint32_t>(stack_.size());
    return true;
  }
  void exit(EventKind k, uint64_t tick) {
    TraceEvent& e = next(k, tick);
    if (stack_.empty()) {  // only after a damaged block: the frame's entry was in it
      e.kind = EventKind::kExitStray;
      return;
    }
    e.addr = stack_.back().addr;
    e.sp = stack_.back().sp;
    e.depth = static_cast<uint32_t>(stack_.size());
    stack_.pop_back();
  }
  void stray(uint64_t tick, uint64_t addr) { next(EventKind::kExitStray, tick).addr = addr; }
  void other(EventKind k, uint64_t tick, uint64_t arg) { next(k, tick).arg = arg; }
  bool tag(uint64_t tick, uint64_t id) {
    other(EventKind::kTag, tick, id);
    return true;
  }
  // True: the event is kept (commit() follows).
  bool memory(EventKind k, uint64_t tick, uint64_t ptr, uint64_t size, uint8_t op) {
    TraceEvent& e = next(k, tick);
    e.addr = ptr;
    e.arg = size;
    e.op = op;
    return true;
  }
  bool commit() {
    if (++filled_ < TraceReader::kEventBatch) return true;
    filled_ = 0;
    return sink_.commit(TraceReader::kEventBatch) && start();
  }
  void finish() {
    if (filled_) sink_.commit(filled_);
  }

 private:
  TraceEvent& next(EventKind k, uint64_t tick) {
    TraceEvent& e = batch_[filled_];
    e = TraceEvent{};
    e.kind = k;
    e.tick = tick;
    e.depth = static_cast<uint32_t>(stack_.size());
    return e;
  }
  struct Open {
    uint64_t addr, sp;
  };
  TraceReader::EventSink& sink_;
  TraceEvent* batch_ = nullptr;
  size_t filled_ = 0;
  std::vector<Open> stack_;
};

// What a call tree needs, column by column: no stack pointers, no depths.
class CallEvents {
 public:
  explicit CallEvents(TraceReader::CallSink& sink) : sink_(sink), memory_(sink.wants_memory()) {}
  bool start() {
    c_ = sink_.buffer();
    return c_.kinds != nullptr;
  }
  bool entry(EventKind k, uint64_t tick, uint64_t addr, const uint8_t*&, const uint8_t*) {
    ++depth_;
    put(k, tick);
    c_.values[values_++] = addr;
    return true;
  }
  void exit(EventKind k, uint64_t tick) {
    if (depth_ == 0) k = EventKind::kExitStray;  // as FullEvents
    else --depth_;
    put(k, tick);
  }
  void stray(uint64_t tick, uint64_t) { put(EventKind::kExitStray, tick); }
  void other(EventKind k, uint64_t tick, uint64_t arg) {
    put(k, tick);
    if (carries_value(k)) c_.values[values_++] = arg;
  }
  // Calls only, unless the sink wants memory events; tags are left out.
  bool memory(EventKind k, uint64_t tick, uint64_t ptr, uint64_t size, uint8_t op) {
    if (!memory_) return false;
    put(k, tick);
    c_.values[values_++] = (ptr & kRawAddrMask) | uint64_t{op} << kMemoryValueOpShift;
    if (k == EventKind::kAlloc) c_.values[values_++] = size;
    return true;
  }
  bool tag(uint64_t, uint64_t) { return false; }
  bool commit() {
    if (++filled_ < TraceReader::kEventBatch) return true;
    const size_t values = values_;
    filled_ = values_ = 0;
    return sink_.commit(TraceReader::kEventBatch, values) && start();
  }
  void finish() {
    if (filled_) sink_.commit(filled_, values_);
  }

 private:
  void put(EventKind k, uint64_t tick) {
    c_.kinds[filled_] = k;
    c_.ticks[filled_] = tick;
  }
  TraceReader::CallSink& sink_;
  const bool memory_;
  TraceReader::CallColumns c_{};
  size_t filled_ = 0, values_ = 0;
  uint64_t depth_ = 0;
};

}  // namespace

Status TraceReader::for_each_event_into(uint32_t thread, EventSink& sink) {
  FullEvents out(sink);
  return decode_events(thread, out);
}

Status TraceReader::for_each_call_event_into(uint32_t thread, CallSink& sink) {
  CallEvents out(sink);
  return decode_events(thread, out);
}

template <class Out>
Status TraceReader::decode_events(uint32_t thread, Out& out) {
  // A trace cut short (a recorder that died while streaming) has event
  // blocks but no thread records yet: its threads are read by index.
  if (thread >= threads_.size() && !unlisted_threads_) return Error("no thread " + std::to_string(thread) + " in the trace");
  if (!out.start()) return ok_status();
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::vector<uint8_t> raw;
  std::vector<uint64_t> fns;
  uint64_t tick = 0;
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kEvents) || b.header.aux0 != thread) continue;
    if (auto p = payload_into(b, raw, dctx.get()); !p) {
      problem(b, p.error().message());
      continue;
    }
    EventColumnsHeader h{};
    if (raw.size() < sizeof h) {
      problem(b, "event block too short");
      continue;
    }
    std::memcpy(&h, raw.data(), sizeof h);
    const uint64_t cols = uint64_t{h.fn_table_bytes} + h.kinds_bytes + h.dt_bytes + h.fn_bytes + h.sp_bytes + h.arg_bytes;
    if (cols != raw.size() - sizeof h || h.kinds_bytes != h.n_events) {
      problem(b, "event columns do not add up to the block size");
      continue;
    }
    const uint8_t* q = raw.data() + sizeof h;
    const uint8_t* table = q;
    const uint8_t* kinds = table + h.fn_table_bytes;
    const uint8_t* dt = kinds + h.kinds_bytes;
    const uint8_t* fn = dt + h.dt_bytes;
    const uint8_t* sp = fn + h.fn_bytes;
    const uint8_t* arg = sp + h.sp_bytes;
    const uint8_t* const dt_end = fn;
    const uint8_t* const fn_end = sp;
    const uint8_t* const sp_end = arg;
    const uint8_t* const arg_end = raw.data() + raw.size();
    if (h.n_functions > h.fn_table_bytes) {  // each entry takes at least one byte
      problem(b, "damaged function table");
      continue;
    }
    fns.resize(h.n_functions);
    uint64_t prev = 0;
    bool bad = false;
    for (uint32_t i = 0; i < h.n_functions && !bad; ++i) {
      uint64_t v;
      if (!get_varint(table, kinds, v)) bad = true;
      prev += static_cast<uint64_t>(unzigzag(v));
      fns[i] = prev;
    }
    if (bad) {
      problem(b, "damaged function table");
      continue;
    }
    tick = b.header.first_tick;
    uint64_t ptr = 0;  // memory events' blocks are deltas, from 0 at the block's start
    for (uint32_t i = 0; i < h.n_events; ++i) {
      const auto kind = static_cast<EventKind>(kinds[i]);
      uint64_t v;
      if (!get_varint(dt, dt_end, v)) { bad = true; break; }
      tick += v;
      switch (kind) {
        case EventKind::kEntry:
        case EventKind::kEntryInherited: {
          uint64_t idx;
          if (!get_varint(fn, fn_end, idx) || idx >= fns.size() || !out.entry(kind, tick, fns[idx], sp, sp_end))
            bad = true;
          break;
        }
        case EventKind::kExit:
        case EventKind::kExitUnwound:
        case EventKind::kExitTruncated:
          out.exit(kind, tick);
          break;
        case EventKind::kExitStray: {
          uint64_t idx;
          if (!get_varint(fn, fn_end, idx) || idx >= fns.size()) bad = true;
          else out.stray(tick, fns[idx]);
          break;
        }
        case EventKind::kTag: {
          uint64_t a;
          if (!get_varint(arg, arg_end, a)) bad = true;
          else if (!out.tag(tick, a)) continue;
          break;
        }
        case EventKind::kLost:
        case EventKind::kMark: {
          uint64_t a;
          if (!get_varint(arg, arg_end, a)) bad = true;
          else out.other(kind, tick, a);
          break;
        }
        case EventKind::kPause:
        case EventKind::kResume:
          out.other(kind, tick, 0);
          break;
        case EventKind::kAlloc:
        case EventKind::kFree: {
          uint64_t d, size = 0, op;
          if (!get_varint(arg, arg_end, d) || (kind == EventKind::kAlloc && !get_varint(arg, arg_end, size)) ||
              !get_varint(arg, arg_end, op) || op > 0xff || !alloc_op_valid(static_cast<uint8_t>(op))) {
            bad = true;
            break;
          }
          ptr += static_cast<uint64_t>(unzigzag(d));
          if (!out.memory(kind, tick, ptr, size, static_cast<uint8_t>(op))) continue;
          break;
        }
        default:
          bad = true;
      }
      if (bad) break;
      if (!out.commit()) return ok_status();
    }
    if (bad) problem(b, "damaged event columns; the rest of the block is skipped");
  }
  out.finish();
  return ok_status();
}

}  // namespace callscope::format
