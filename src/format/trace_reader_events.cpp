// The trace reader's event decoding: a thread's event blocks, column by
// column, into TraceEvents (for_each_event*) or into the call columns the
// call trees are built from (for_each_call_event_into). One decoding loop
// (decode_events) serves both outputs. The rest of the reader -- the file,
// its blocks, its tables and their checks -- is trace_reader.cpp.
#include <zstd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "format/trace_reader.h"
#include "format/varint.h"

namespace callscope::format {

Status TraceReader::for_each_event(uint32_t thread, const std::function<bool(const TraceEvent&)>& f) {
  return for_each_event_batch(thread, [&f](const TraceEvent* events, size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (!f(events[i])) return false;
    return true;
  });
}

Status TraceReader::for_each_event_batch(uint32_t thread, const std::function<bool(const TraceEvent*, size_t)>& f) {
  struct Batch final : EventSink {
    explicit Batch(const std::function<bool(const TraceEvent*, size_t)>& fn) : f(fn) {}
    TraceEvent* buffer() override {  // at the thread's first block
      if (!events) events.reset(new TraceEvent[kEventBatch]);
      return events.get();
    }
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
  // The output's buffer and the decompression context are made at the
  // thread's first block: a trace of thousands of threads, most with no
  // events, costs no allocation per thread and view.
  bool started = false;
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(nullptr, ZSTD_freeDCtx);
  std::vector<uint8_t> raw;
  std::vector<uint64_t> fns;
  uint64_t tick = 0;
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kEvents) || b.header.aux0 != thread) continue;
    if (!started) {
      if (!out.start()) return ok_status();
      dctx.reset(ZSTD_createDCtx());
      started = true;
    }
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
      // Code addresses are user-space ones, 48 bits (the runtime stores
      // them so): analyses key their own entries above that.
      if (prev > kRawAddrMask) bad = true;
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
        case EventKind::kMark:
        case EventKind::kWait: {
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
  if (started) out.finish();
  return ok_status();
}

}  // namespace callscope::format
