// Writing a final trace file (v1): metadata blocks of fixed-width records,
// and event blocks of delta-encoded, zstd-compressed columns.
//
// The file is written as <path>.tmp.<pid> and renamed into place by finish():
// a reader never sees half a trace under the final name. With an
// OutputClaim (record, finish), only over the file claimed at the start.
#pragma once

#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/output_claim.h"
#include "common/result.h"
#include "format/trace_format.h"

struct ZSTD_CCtx_s;

namespace callscope::format {

class StringTable {
 public:
  StrRef add(std::string_view s);
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class TraceWriter {
 public:
  // The header is written with its check set (seal_file_header), here and
  // by rewrite_header.
  // `claim`, when given, outlives the writer and decides the rename.
  static Result<std::unique_ptr<TraceWriter>> create(const std::string& path, const FileHeader& header,
                                                     int zstd_level, OutputClaim* claim = nullptr);
  // (Level 1 is zstd's with a minimum match of 7 bytes: trace_writer.cpp.)
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // A metadata block: count, record size, records, strings.
  template <class R>
  Status write_records(BlockType type, const std::vector<R>& records, const StringTable& strings) {
    std::vector<uint8_t> raw(8 + sizeof(R) * records.size());
    const uint32_t head[2] = {static_cast<uint32_t>(records.size()), static_cast<uint32_t>(sizeof(R))};
    std::memcpy(raw.data(), head, 8);
    if (!records.empty()) std::memcpy(raw.data() + 8, records.data(), sizeof(R) * records.size());
    raw.insert(raw.end(), strings.bytes().begin(), strings.bytes().end());
    return write_block(type, 0, static_cast<uint32_t>(records.size()), 0, raw);
  }
  Status write_block(BlockType type, uint32_t aux0, uint32_t count, uint64_t first_tick,
                     const std::vector<uint8_t>& raw, uint32_t aux1 = 0);
  // Writes the end block, flushes, and renames the file into place. When the
  // claim refuses the rename, the complete file stays at temporary_path().
  Status finish(const EndRecord& end);
  // The temporary file is not removed when the writer is destroyed
  // unfinished: record's raw session names it, and `finish` reads it back.
  void keep_temporary() { keep_temporary_ = true; }
  // Hands what was written so far to the kernel: it then outlives this
  // process (record streams blocks while the program runs, and gives the
  // raw segments back only once their block is flushed).
  Status flush();
  // Writes `header` over the file header (its calibration is known last).
  Status rewrite_header(const FileHeader& header);
  const std::string& temporary_path() const { return tmp_path_; }
  // A buffer for a block's payload, kept for the next one (EventEncoder).
  std::vector<uint8_t>& scratch() { return scratch_; }
  uint64_t bytes_written() const { return offset_; }
  uint64_t blocks_written() const { return blocks_; }

 private:
  TraceWriter() = default;
  Status write_bytes(const void* p, size_t n);
  std::string path_;
  std::string tmp_path_;
  FILE* file_ = nullptr;
  OutputClaim* claim_ = nullptr;
  bool keep_temporary_ = false;
  ZSTD_CCtx_s* cctx_ = nullptr;
  std::vector<uint8_t> compressed_;
  std::vector<uint8_t> scratch_;
  uint64_t offset_ = 0;
  uint64_t blocks_ = 0;
  bool finished_ = false;
};

// Encodes one thread's events into kEvents blocks. The caller gives events in
// order, with non-decreasing ticks, and never an exit on an empty stack.
class EventEncoder {
 public:
  EventEncoder(TraceWriter& writer, uint32_t thread_index) : writer_(writer), thread_(thread_index) {}
  Status add(EventKind kind, uint64_t tick, uint64_t addr, uint64_t sp, uint64_t arg);
  // kAlloc (size: the block's) or kFree, of block `ptr`, by `op` (AllocOp).
  Status memory(EventKind kind, uint64_t tick, uint64_t ptr, uint64_t size, uint8_t op);
  // The two events of nearly every call, inline (record encodes while the
  // program runs, so this is the recorder's inner loop): false when add()
  // must do it (a block's first or last event, an exit on an empty stack).
  bool try_entry(uint64_t tick, uint64_t addr, uint64_t sp) {
    if (n_ == 0 || n_ + 1 >= kEventsPerBlock) return false;
    kinds_.byte(static_cast<uint8_t>(EventKind::kEntry));
    dt_.varint(tick - prev_tick_);
    prev_tick_ = tick;
    fn_.varint(addr == last_fn_ && !fn_table_.empty() ? last_fn_index_ : fn_lookup(addr));
    const uint64_t parent = stack_sp_.empty() ? 0 : stack_sp_.back();
    sp_.varint(zigzag_sp(parent, sp));
    stack_sp_.push_back(sp);
    ++events_;
    ++n_;
    return true;
  }
  bool try_exit(uint64_t tick) {
    if (n_ == 0 || n_ + 1 >= kEventsPerBlock || stack_sp_.empty()) return false;
    kinds_.byte(static_cast<uint8_t>(EventKind::kExit));
    dt_.varint(tick - prev_tick_);
    prev_tick_ = tick;
    stack_sp_.pop_back();
    ++events_;
    ++n_;
    return true;
  }
  // The recorder's inner loop (RawStreamEncoder::add_segment) writes plain
  // entries and exits straight into the columns through a Run: the write
  // positions and counts as locals, which stay in registers (through the
  // members, every byte stored would make the compiler reload them all).
  // open_run makes room for `events` entries or exits; false when they must
  // go through add() (a block's first event; a block about to fill).
  // close_run takes the positions back.
  struct Run {
    uint8_t *kinds, *dt, *fn, *sp;
    uint64_t* sp_stack;  // sp of each open frame; room for `events` more
    size_t depth;
    uint64_t prev_tick;
    uint32_t n;  // events in the block
  };
  // Bytes an entry takes at most in each column (a varint: 10).
  static constexpr size_t kRunEventBytes = 10;
  bool open_run(uint32_t events, Run& r) {
    if (n_ == 0 || n_ + events + 1 >= kEventsPerBlock) return false;
    r.kinds = kinds_.room(events);
    r.dt = dt_.room(events * kRunEventBytes);
    r.fn = fn_.room(events * kRunEventBytes);
    r.sp = sp_.room(events * kRunEventBytes);
    r.sp_stack = stack_sp_.room(events);
    r.depth = stack_sp_.size();
    r.prev_tick = prev_tick_;
    r.n = n_;
    return true;
  }
  void close_run(const Run& r) {
    kinds_.size = static_cast<size_t>(r.kinds - kinds_.buf.data());
    dt_.size = static_cast<size_t>(r.dt - dt_.buf.data());
    fn_.size = static_cast<size_t>(r.fn - fn_.buf.data());
    sp_.size = static_cast<size_t>(r.sp - sp_.buf.data());
    stack_sp_.resize(r.depth);
    prev_tick_ = r.prev_tick;
    events_ += r.n - n_;
    n_ = r.n;
  }
  // The index of function `addr` in the block's table (added if new): from
  // a small direct-mapped cache in front of fn_lookup's table, inline.
  uint32_t fn_index(uint64_t addr) {
    FnSlot& s = fn_cache_[(addr >> 4 ^ addr >> 12) & (kFnCacheSlots - 1)];
    if (s.addr == addr && s.index_plus_1) return s.index_plus_1 - 1;
    const uint32_t i = fn_lookup(addr);
    s.addr = addr;
    s.index_plus_1 = i + 1;
    return i;
  }
  static uint8_t* write_varint(uint8_t* p, uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
    return p;
  }
  // write_varint for a value most often below 2^14 (a tick delta): one or
  // two bytes with no branch on which -- a delta's length is what a branch
  // predictor cannot guess (half the deltas of real code sit either side of
  // 128 ticks). Writes two bytes either way: the room must have them.
  static uint8_t* write_varint_short(uint8_t* p, uint64_t v) {
    if (__builtin_expect(v >= (uint64_t{1} << 14), 0)) return write_varint(p, v);
    const uint32_t one = v < 0x80;
    const uint32_t two = (v & 0x7f) | 0x80 | (v >> 7) << 8;
    const uint32_t pick = 0u - one;  // all ones for one byte
    const auto w = static_cast<uint16_t>((static_cast<uint32_t>(v) & pick) | (two & ~pick));
    std::memcpy(p, &w, 2);
    return p + 2 - one;
  }
  // The sp column: zigzag of (parent_sp - sp) / kSpUnit.
  static uint64_t zigzag_sp(uint64_t parent, uint64_t sp) {
    const int64_t d = static_cast<int64_t>(parent - sp) / static_cast<int64_t>(kSpUnit);
    return (static_cast<uint64_t>(d) << 1) ^ static_cast<uint64_t>(d >> 63);
  }
  Status flush();
  // What the blocks flushed from now on carry in aux1: the raw segments of
  // the thread they cover (record's live stream).
  void set_covered(uint32_t segments) { covered_ = segments; }
  uint32_t pending() const { return n_; }
  uint32_t blocks() const { return blocks_; }
  uint64_t events() const { return events_; }
  size_t depth() const { return stack_sp_.size(); }

 private:
  TraceWriter& writer_;
  uint32_t thread_;
  // The sp of each open frame, across blocks: a vector whose room a Run
  // writes into.
  class SpStack {
   public:
    bool empty() const { return n_ == 0; }
    size_t size() const { return n_; }
    uint64_t back() const { return v_[n_ - 1]; }
    void push_back(uint64_t sp) { room(1)[n_++] = sp; }
    void pop_back() { --n_; }
    uint64_t* room(size_t n) {
      if (__builtin_expect(n_ + n > v_.size(), 0)) v_.resize(std::max<size_t>(v_.size() * 2, n_ + n + 256));
      return v_.data();
    }
    void resize(size_t n) { n_ = n; }  // within the room made

   private:
    std::vector<uint64_t> v_;
    size_t n_ = 0;
  };
  SpStack stack_sp_;
  uint64_t prev_tick_ = 0;
  uint64_t first_tick_ = 0;
  uint32_t n_ = 0;
  std::vector<uint64_t> fn_table_;
  std::vector<std::pair<uint64_t, uint32_t>> fn_index_;  // small open-addressing map
  uint64_t last_fn_ = 0;                                 // the last lookup, the common case
  uint64_t prev_ptr_ = 0;                                // the block's last memory event's ptr
  uint32_t last_fn_index_ = 0;
  struct FnSlot {
    uint64_t addr;
    uint32_t index_plus_1;  // 0: empty
  };
  static constexpr size_t kFnCacheSlots = 256;
  std::array<FnSlot, kFnCacheSlots> fn_cache_{};  // emptied with the table, each block
  // A column: bytes written through a raw pointer; room for one event's
  // worth (at most 10 bytes) is made before each write.
  struct Column {
    std::vector<uint8_t> buf;
    size_t size = 0;
    uint8_t* room(size_t n) {
      if (__builtin_expect(size + n > buf.size(), 0)) grow(n);
      return buf.data() + size;
    }
    __attribute__((noinline)) void grow(size_t n) { buf.resize(std::max<size_t>(buf.size() * 2, size + n + 4096)); }
    void byte(uint8_t b) { *room(1) = b, ++size; }
    void varint(uint64_t v) {
      uint8_t* p = room(10);
      uint8_t* const start = p;
      while (v >= 0x80) {
        *p++ = static_cast<uint8_t>(v | 0x80);
        v >>= 7;
      }
      *p++ = static_cast<uint8_t>(v);
      size += static_cast<size_t>(p - start);
    }
    const uint8_t* data() const { return buf.data(); }
  };
  Column kinds_, dt_, fn_, sp_, arg_;
  uint32_t blocks_ = 0;
  uint64_t events_ = 0;
  uint32_t covered_ = 0;
  uint32_t fn_lookup(uint64_t addr);
  void begin_event(EventKind kind, uint64_t tick);  // its kind and tick delta
};

}  // namespace callscope::format
