// Turning one thread's raw events (as the runtime wrote them) into the final
// stream of a trace: the step that `record` runs while the program runs, on
// each segment the recorder takes from a thread's ring, and that `finish`
// runs over whatever a session left behind.
//
// What it decides, beyond copying:
//  - exits carry no address in the final stream: they close the frame on top
//    of a shadow stack kept here;
//  - gaps (docs/trace-format.md, "Gaps"): a raw kLost or kPause, the resync
//    that follows (every frame open at the end of the gap, with its own entry
//    tick) and kResume are compared with the frames open before the gap, so
//    the final stream closes only the frames that ended inside the gap and
//    opens only those that began inside it;
//  - a stream that ends inside a gap, or whose header counts more lost events
//    than its kLost records, is cut: a kLost marks where, at the last tick
//    recorded, and the frames still open close there -- not at the thread's
//    end, which would lend them time nobody measured;
//  - ticks never go backwards (a signal handler's events can overtake the
//    hook it interrupted).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <span>
#include <utility>
#include <vector>

#include "common/result.h"
#include "format/raw_session.h"
#include "format/trace_format.h"
#include "format/trace_writer.h"

namespace callscope::format {

// A frame open in the stream; `raw_tick` is the runtime's own entry tick
// (what its resync repeats), `sp` absolute.
struct OpenFrame {
  uint64_t addr = 0;
  uint64_t sp = 0;
  uint64_t raw_tick = 0;
};

// The open frames: a vector whose push and pop stay inline (the recorder's
// inner loop pushes and pops once per call).
class FrameStack {
 public:
  void push_back(const OpenFrame& f) { push(f.addr, f.sp, f.raw_tick); }
  // Field by field from scalars: the caller's event was just written field
  // by field, and a copy the compiler merges into 16-byte loads stalls on
  // those stores (store forwarding fails), every event.
  void push(uint64_t addr, uint64_t sp, uint64_t raw_tick) {
    __asm__("" : "+r"(addr), "+r"(sp));
    if (__builtin_expect(n_ == v_.size(), 0)) v_.resize(v_.size() * 2 + 256);
    OpenFrame& f = v_[n_++];
    f.addr = addr;
    f.sp = sp;
    f.raw_tick = raw_tick;
  }
  void pop_back() { --n_; }
  // Room for `n` more frames, written through the pointer returned (the
  // frames from index 0); resize() then says how many there are.
  OpenFrame* room(size_t n) {
    if (__builtin_expect(n_ + n > v_.size(), 0)) v_.resize(std::max<size_t>(v_.size() * 2, n_ + n + 256));
    return v_.data();
  }
  void resize(size_t n) { n_ = n; }
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  const OpenFrame& operator[](size_t i) const { return v_[i]; }
  void assign(std::vector<OpenFrame> frames) {
    n_ = frames.size();
    v_ = std::move(frames);
  }

 private:
  std::vector<OpenFrame> v_;
  size_t n_ = 0;
};

// Final events as columns, decoded: what a consumer in the recorder's own
// process reads while the program runs (query -c, live_stream.h's tap).
// Entries' addresses and losses' counts go to values() (carries_value()).
// Written by index, as the recorder's inner loop writes it; clear() keeps
// the storage (a consumer hands buffers back for reuse).
class EventColumns {
 public:
  EventColumns() = default;
  // A moved-from buffer is empty, with no storage.
  EventColumns(EventColumns&& o) noexcept { *this = std::move(o); }
  EventColumns& operator=(EventColumns&& o) noexcept {
    kinds_ = std::move(o.kinds_);
    ticks_ = std::move(o.ticks_);
    values_ = std::move(o.values_);
    n_ = std::exchange(o.n_, 0);
    nv_ = std::exchange(o.nv_, 0);
    cap_ = std::exchange(o.cap_, 0);
    return *this;
  }
  Status add(EventKind k, uint64_t tick, uint64_t addr, uint64_t, uint64_t arg) {
    room(1);
    kinds_[n_] = k;
    ticks_[n_++] = tick;
    if (carries_value(k)) values_[nv_++] = is_entry(k) ? addr : arg;
    return ok_status();
  }
  bool try_entry(uint64_t tick, uint64_t addr, uint64_t) {
    room(1);
    kinds_[n_] = EventKind::kEntry;
    ticks_[n_++] = tick;
    values_[nv_++] = addr;
    return true;
  }
  bool try_exit(uint64_t tick) {
    room(1);
    kinds_[n_] = EventKind::kExit;
    ticks_[n_++] = tick;
    return true;
  }
  // A memory event, with its values (value_count(): the block | op << 56,
  // and an allocation's size).
  Status memory(EventKind k, uint64_t tick, uint64_t ptr, uint64_t size, uint8_t op) {
    room(1);
    kinds_[n_] = k;
    ticks_[n_++] = tick;
    values_[nv_++] = (ptr & kRawAddrMask) | uint64_t{op} << kMemoryValueOpShift;
    if (k == EventKind::kAlloc) values_[nv_++] = size;
    return ok_status();
  }
  Status flush() { return ok_status(); }
  const EventKind* kinds() const { return kinds_.get(); }
  const uint64_t* ticks() const { return ticks_.get(); }
  const uint64_t* values() const { return values_.get(); }
  size_t size() const { return n_; }
  size_t capacity() const { return cap_; }
  bool empty() const { return n_ == 0; }
  void clear() { n_ = nv_ = 0; }
  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  // n events whose nv values are given, from bytes in no particular
  // alignment (a copy received from elsewhere: live_wire.h). The caller
  // checked that nv matches the kinds.
  void append(const void* kinds, const void* ticks, size_t n, const void* values, size_t nv) {
    if (n == 0) return;
    room(n);
    std::memcpy(kinds_.get() + n_, kinds, n * sizeof(EventKind));
    std::memcpy(ticks_.get() + n_, ticks, n * sizeof(uint64_t));
    std::memcpy(values_.get() + nv_, values, nv * sizeof(uint64_t));
    n_ += static_cast<uint32_t>(n);
    nv_ += static_cast<uint32_t>(nv);
  }

 private:
  void room(size_t n) {
    if (__builtin_expect(n_ + n > cap_, 0)) grow(n_ + n);
  }
  // Left uninitialised (new[] of trivial types): written before read.
  __attribute__((noinline)) void grow(size_t need) {
    const size_t cap = std::min<size_t>(std::max<size_t>({need, size_t{cap_} * 2, size_t{1} << 16}), UINT32_MAX / 2);
    auto move_to = [&](auto& p, size_t used, size_t room) {
      using T = std::remove_reference_t<decltype(p[0])>;
      std::unique_ptr<T[]> q(new T[room]);
      if (used) std::memcpy(q.get(), p.get(), used * sizeof(T));
      p = std::move(q);
    };
    move_to(kinds_, n_, cap);
    move_to(ticks_, n_, cap);
    move_to(values_, nv_, 2 * cap);  // up to two per event (an allocation's)
    cap_ = static_cast<uint32_t>(cap);
  }
  std::unique_ptr<EventKind[]> kinds_;
  std::unique_ptr<uint64_t[]> ticks_, values_;
  // 32-bit counts: a store into ticks_ or values_ (64-bit) cannot alias
  // them, so the compiler keeps them in registers across an event's stores.
  uint32_t n_ = 0, nv_ = 0, cap_ = 0;
};

// Out: EventEncoder (the trace) or EventColumns (a consumer in memory).
template <class Out>
class BasicRawStreamEncoder {
 public:
  // `offset` moves raw ticks (relative to the process base) to trace ticks;
  // `record` collects the thread's counts (events, calls, lost, ticks).
  BasicRawStreamEncoder(Out& out, uint64_t offset, ThreadRecord& record)
      : out_(out), offset_(offset), rec_(record) {}

  Status add(const RawEvent& e);
  // add() for an entry or a normal exit outside a gap, inline: false when
  // add() must do it. The recorder's inner loop.
  bool add_fast(const RawEvent& e) {
    if (in_gap_ || pending_loss_ || !started_) return false;
    uint64_t tick = e.tick + offset_;
    if (tick < last_) tick = last_;
    if (e.kind == RawKind::kEntry) {
      if (!out_.try_entry(tick, e.addr, e.sp)) return false;
      stack_.push(e.addr, e.sp, e.tick);
      ++rec_.calls;
    } else if (e.kind == RawKind::kExit && !stack_.empty()) {
      if (!out_.try_exit(tick)) return false;
      stack_.pop_back();
    } else {
      return false;
    }
    last_ = tick;
    ++rec_.events;
    return true;
  }
  // Every event of the raw words [0, n) (a ring segment), decoded by `dec`:
  // add_fast() or add() for each, but for the trace (Out = EventEncoder)
  // plain entries and exits are decoded and encoded in one loop.
  Status add_segment(RawDecoder& dec, const uint64_t* words, size_t n);
  // Every event `file` still holds, its missing segments marked lost where
  // they are missing (before its first event, between two segments, or at
  // its end).
  Status add_file(RawThreadFile& file);
  // The stream goes on after about `lost_events` events no one can read: a
  // loss is marked from the last event read (at the first one when nothing
  // was read yet) to the next, and the frames open go on through it.
  void begin_with_loss(uint64_t lost_events) { lose_here(lost_events); }
  void lose_here(uint64_t lost_events);
  // Events of the thread went missing here (a stretch of its raw file that
  // no one can read): the stream is cut at the last tick recorded.
  Status cut(uint64_t lost_events);
  // The stream is complete. `end_tick` (trace ticks) is when the thread ended
  // (0: unknown) and `header_lost` the runtime's running total of dropped
  // events: more than the stream's kLost records said means the stream ended
  // inside a gap. Frames still open close as truncated.
  Status finish(uint64_t end_tick, uint64_t header_lost);
  // finish() for a thread whose raw header is `h`: it ends when the thread
  // exited, else (frames open, or no event at all) at `end_hint`, when its
  // process ended. `switches` are its process's stops and starts: those the
  // thread never acted on (it made no call from the first of them to its
  // end, e.g. asleep until the process exited) pause its stream all the same.
  Status finish_thread(const RawThreadHeader& h, uint64_t end_hint, std::span<const RawSwitch> switches = {});

  // For `finish` of a session whose recorder died after writing part of the
  // stream: continue from the frames open at the end of what was written.
  // `lost_events`: what the kLost events of that part account for.
  void resume_from(std::vector<OpenFrame> stack, uint64_t last_tick, bool started, uint64_t lost_events = 0);

  uint64_t last_tick() const { return last_; }
  bool started() const { return started_; }
  size_t depth() const { return stack_.size(); }
  // Where `other` is (its frames, its gap, its last tick): a second reader
  // of the same raw stream starting where `other` has got (a tap attached
  // mid-run).
  template <class Other>
  void copy_state_from(const BasicRawStreamEncoder<Other>& other) {
    stack_.assign(other.open_frames());
    last_ = other.last_;
    started_ = other.started_;
    in_gap_ = other.in_gap_;
    gap_kind_ = other.gap_kind_;
    gap_tick_ = other.gap_tick_;
    gap_lost_ = other.gap_lost_;
    resync_ = other.resync_;
    stream_lost_ = other.stream_lost_;
    pending_loss_ = other.pending_loss_;
  }
  // The frames open now, outermost first.
  std::vector<OpenFrame> open_frames() const {
    std::vector<OpenFrame> v;
    for (size_t i = 0; i < stack_.size(); ++i) v.push_back(stack_[i]);
    return v;
  }

 private:
  Status emit(EventKind k, uint64_t tick, uint64_t addr, uint64_t sp, uint64_t arg);
  uint64_t clamp(uint64_t raw_tick);
  Status end_gap(uint64_t tick);
  Status close_all(uint64_t tick);
  Status apply_unseen(const RawThreadHeader& h, std::span<const RawSwitch> switches);

  template <class>
  friend class BasicRawStreamEncoder;
  Out& out_;
  uint64_t offset_;
  ThreadRecord& rec_;
  FrameStack stack_;
  uint64_t last_ = 0;
  bool started_ = false;
  // The gap being read: its kind (kLost or kPause), start, events dropped,
  // and the resync seen so far.
  bool in_gap_ = false;
  EventKind gap_kind_ = EventKind::kLost;
  uint64_t gap_tick_ = 0;
  uint64_t gap_lost_ = 0;
  std::vector<OpenFrame> resync_;
  uint64_t stream_lost_ = 0;  // events the kLost records of the stream account for
  uint64_t pending_loss_ = 0;  // lose_here: marked before the next event
};

template <class Out>
Status BasicRawStreamEncoder<Out>::add_segment(RawDecoder& dec, const uint64_t* words, size_t n) {
  size_t i = 0;
  RawEvent e;
  while (dec.next(words, n, i, e))
    if (!add_fast(e)) CALLSCOPE_CHECK(add(e));
  return ok_status();
}
template <>
Status BasicRawStreamEncoder<EventEncoder>::add_segment(RawDecoder& dec, const uint64_t* words, size_t n);

using RawStreamEncoder = BasicRawStreamEncoder<EventEncoder>;
extern template class BasicRawStreamEncoder<EventEncoder>;
extern template class BasicRawStreamEncoder<EventColumns>;

}  // namespace callscope::format
