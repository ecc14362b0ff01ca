// Call trees: one node per distinct call path, built from a thread's events
// as they stream by (memory grows with the number of distinct paths, not of
// events), then re-keyed and merged.
//
// A node's key is what the caller decided: the function's absolute address
// while building, a function id once symbolized. Node 0 is a virtual root;
// the outermost frames are its children. Nodes are created parent first, so
// a node's id is always greater than its parent's: walking ids in order is a
// walk from the roots down, which the code below relies on.
//
// Time accounting (all in ticks):
//  - a frame's duration runs from its entry to the event that closes it: a
//    normal exit, an unwound exit (longjmp, exception) or a truncated exit
//    (still open when the stream ended; its tick is the thread's end: a
//    call like the others, counted in Stats::open too);
//  - `self` is the duration minus the durations of the frame's direct callees;
//  - an inherited frame (opened before the stream began: a fork child's
//    copy of its parent's frame, one begun inside a gap) is a call of this
//    stream from where it was first seen, counted in Stats::inherited too
//    (see stats.h);
//  - frames still open at the end of the stream (only after damaged blocks:
//    finished traces are balanced) are closed at the last tick seen;
//  - gaps (format/trace_format.h, "Gaps"): the time of a loss goes to a node
//    keyed kLostKey ("[lost events]") under the innermost frame that went on
//    through it, so it is in that frame's total but not in its self time;
//    the time of a pause counts nowhere: it is taken out of the durations of
//    every frame that went on through it;
//  - with the kernel's context switches (trace 1.9; set_wait_clock), each
//    frame's `wait` is the time its thread spent off its CPU between the
//    frame's entry and its end, `self_wait` that less its callees' (at most
//    its duration, and its self time);
//  - waits for the recorder (kWait: the thread found its ring full) are the
//    tracer's time, not the program's: taken out of the durations of every
//    frame open then, as a pause's, and counted in a node keyed kWaitKey
//    ("[waited for recorder]") at the thread's top level, one call per wait,
//    so the thread's observed time still adds up.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "analysis/child_index.h"
#include "analysis/stats.h"
#include "analysis/thread_states.h"
#include "format/trace_reader.h"

namespace callscope::analysis {

inline constexpr uint32_t kRootNode = 0;
// The key of the "[lost events]" node (no function lives at address 0).
inline constexpr uint64_t kLostKey = 0;
// The key of the "[waited for recorder]" node: above every code address
// (user-space, 48 bits: the reader checks) and below the keys report_model
// gives the calls of a reused address (bit 63).
inline constexpr uint64_t kWaitKey = uint64_t{1} << 62;
// The keys of the reasons of build_wait_profile's leaves ("[futex]"):
// kReasonKey | the reason's number.
inline constexpr uint64_t kReasonKey = uint64_t{1} << 61;
inline constexpr uint64_t kReasonMask = (uint64_t{1} << 32) - 1;

struct CallNode {
  uint32_t parent = kRootNode;  // the root's parent is itself
  uint32_t depth = 0;           // 1 = outermost frame; the root is 0
  uint64_t key = 0;             // address or function id
  Stats stats;
};

class CallTree {
 public:
  CallTree();

  // The child of `parent` with `key`, created if new.
  uint32_t child(uint32_t parent, uint64_t key) {
    const Hint h = hints_[parent];
    if (h.id != ChildIndex::kNone && h.key == key) return h.id;
    uint32_t id = index_.find(parent, key);
    if (id == ChildIndex::kNone) id = add(parent, key);  // may reallocate hints_
    hints_[parent] = Hint{key, id};
    return id;
  }

  const std::vector<CallNode>& nodes() const { return nodes_; }
  CallNode& node(uint32_t id) { return nodes_[id]; }
  const CallNode& node(uint32_t id) const { return nodes_[id]; }
  size_t size() const { return nodes_.size(); }
  // Sum of the outermost frames' totals: the thread's observed time, in ticks.
  uint64_t total() const;

  // Children of every node, in id order (their creation order): children(n)
  // spans [offsets[n], offsets[n + 1]) of ids.
  struct Children {
    std::vector<uint32_t> offsets, ids;
    const uint32_t* begin(uint32_t n) const { return ids.data() + offsets[n]; }
    const uint32_t* end(uint32_t n) const { return ids.data() + offsets[n + 1]; }
  };
  Children children() const;

 private:
  // The last child looked up under each node: loops and recursion ask for the
  // same child again and again, and this answers without hashing.
  struct Hint {
    uint64_t key = 0;
    uint32_t id = ChildIndex::kNone;
  };
  uint32_t add(uint32_t parent, uint64_t key);

  std::vector<CallNode> nodes_;
  std::vector<Hint> hints_;
  ChildIndex index_;
};

// Feeds one thread's events into a CallTree keyed by function address.
class CallTreeBuilder {
 public:
  explicit CallTreeBuilder(CallTree& tree) : tree_(tree) {}
  // The thread's time off its CPU (outlives the builder; null: unknown).
  void set_wait_clock(WaitClock* clock) { clock_ = clock && !clock->empty() ? clock : nullptr; }

  // A batch: the loop the report spends its time in, with step inlined.
  void on_events(const format::TraceEvent* events, size_t n) {
    for (size_t i = 0; i < n; ++i) on_event(events[i]);
  }
  // A batch in TraceReader::CallColumns form. Two loops: with a wait clock,
  // and without (the report's inner loop pays nothing for it).
  void on_columns(const format::EventKind* kinds, const uint64_t* ticks, const uint64_t* values, size_t n) {
    if (clock_) [[unlikely]] {
      for (size_t i = 0; i < n; ++i) step<true>(kinds[i], ticks[i], [&] { return *values++; });
    } else {
      for (size_t i = 0; i < n; ++i) step<false>(kinds[i], ticks[i], [&] { return *values++; });
    }
  }

  void on_event(const format::TraceEvent& e) {
    const auto value = [&] { return format::is_entry(e.kind) ? e.addr : e.arg; };
    if (clock_) [[unlikely]]
      step<true>(e.kind, e.tick, value);
    else
      step<false>(e.kind, e.tick, value);
  }

  // Closes frames left open (a damaged block lost their exits) at the last
  // tick seen. Call once, after the last event.
  void finish() {
    while (!stack_.empty()) clock_ ? close_top<true>(last_tick_, true) : close_top<false>(last_tick_, true);
  }

  uint64_t lost_events() const { return lost_; }
  uint64_t stray_exits() const { return stray_; }
  // Waits for the recorder, and their ticks in all.
  uint64_t waits() const { return waits_; }
  uint64_t wait_ticks() const { return wait_ticks_; }

 private:
  // One event; value() gives its value, called once for the kinds that
  // carries_value().
  // Inlined into the loops above (two of them now: not by itself).
  template <bool kWait, class Value>
  [[gnu::always_inline]] void step(format::EventKind kind, uint64_t tick, Value&& value) {
    last_tick_ = tick;
    switch (kind) {
      case format::EventKind::kEntry:
      case format::EventKind::kEntryInherited: {
        const uint32_t parent = stack_.empty() ? kRootNode : stack_.back().node;
        stack_.push_back({tree_.child(parent, value()), kind == format::EventKind::kEntryInherited, tick, 0, 0});
        if constexpr (kWait) waits_stack_.push_back({clock_->waited(tick), 0});
        break;
      }
      case format::EventKind::kExit:
      case format::EventKind::kExitUnwound:
        if (!stack_.empty()) close_top<kWait>(tick, false);
        break;
      case format::EventKind::kExitTruncated:
        if (!stack_.empty()) close_top<kWait>(tick, true);
        break;
      case format::EventKind::kLost:
        lost_ += value();
        gap_start_ = tick;
        gap_lost_ = true;
        break;
      case format::EventKind::kPause:
        gap_start_ = tick;
        gap_lost_ = false;
        break;
      case format::EventKind::kResume:
        if (gap_start_ != kNoTick) end_gap(tick);
        break;
      case format::EventKind::kWait: wait(tick, value()); break;
      case format::EventKind::kExitStray: ++stray_; break;
      case format::EventKind::kMark:
      case format::EventKind::kAlloc:
      case format::EventKind::kFree:
      case format::EventKind::kTag: break;
    }
  }

  struct Frame {
    uint32_t node;
    bool inherited;     // opened before its stream began (Stats::inherited)
    uint64_t start;     // entry tick
    uint64_t children;  // ticks spent in direct callees so far
    uint64_t paused;    // ticks of pauses and waits for the recorder it went on through (not its time)
  };
  // Beside each frame, with a wait clock only (the frames stay small
  // without one: the report's inner loop).
  struct FrameWait {
    uint64_t waited;         // the wait clock at its entry
    uint64_t children_wait;  // ticks its direct callees spent off the CPU so far
  };

  // The gap that began at gap_start_ ends at `tick`. Frames that began
  // before it went on through it (those that ended inside it are closed
  // already; those that began inside it start at `tick`).
  void end_gap(uint64_t tick) {
    const uint64_t gap = tick > gap_start_ ? tick - gap_start_ : 0;
    size_t through = 0;
    while (through < stack_.size() && stack_[through].start <= gap_start_) ++through;
    if (gap_lost_) {
      const uint32_t parent = through ? stack_[through - 1].node : kRootNode;
      Stats& s = tree_.node(tree_.child(parent, kLostKey)).stats;
      s.total += gap;
      s.self += gap;
      if (through) stack_[through - 1].children += gap;
    } else {
      for (size_t i = 0; i < through; ++i) stack_[i].paused += gap;
    }
    gap_start_ = kNoTick;
  }

  // The thread waited `ticks` for the recorder, up to `tick`: inside every
  // frame open now (each began before the event the wait was for).
  void wait(uint64_t tick, uint64_t ticks) {
    for (size_t i = 0; i < stack_.size(); ++i) stack_[i].paused += ticks;
    Stats& s = tree_.node(tree_.child(kRootNode, kWaitKey)).stats;
    s.total += ticks;
    s.self += ticks;
    s.add_call(tick >= ticks ? tick - ticks : 0, ticks);
    ++waits_;
    wait_ticks_ += ticks;
  }

  // open: the frame's end was not seen (truncated): its time is what was observed.
  template <bool kWait>
  [[gnu::always_inline]] void close_top(uint64_t tick, bool open) {
    // Field by field, not a copy: a 16-byte load of `children` just
    // updated by an 8-byte store stalls store forwarding (20% of a
    // report's time on fib(31)).
    const Frame& f = stack_.back();
    stack_.pop_back();  // f stays valid: popping only moves the top
    const uint64_t span = tick > f.start ? tick - f.start : 0;
    const uint64_t dur = span > f.paused ? span - f.paused : 0;
    Stats& s = tree_.node(f.node).stats;
    s.total += dur;
    s.self += dur > f.children ? dur - f.children : 0;
    s.add_call(f.start, dur);
    s.open += open;
    s.inherited += f.inherited;
    if constexpr (kWait) {
      const FrameWait fw = waits_stack_.back();
      waits_stack_.pop_back();
      const uint64_t now = clock_->waited(tick);
      const uint64_t w = std::min(dur, now > fw.waited ? now - fw.waited : 0);
      s.wait += w;
      s.self_wait += std::min(dur > f.children ? dur - f.children : 0, w > fw.children_wait ? w - fw.children_wait : 0);
      if (!waits_stack_.empty()) waits_stack_.back().children_wait += w;
    }
    if (!stack_.empty()) stack_.back().children += dur;
  }

  // A vector whose push inlines: growing is out of line.
  class Frames {
   public:
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    Frame& back() { return frames_[size_ - 1]; }
    Frame& operator[](size_t i) { return frames_[i]; }
    void pop_back() { --size_; }
    void push_back(const Frame& f) {
      if (size_ == frames_.size()) [[unlikely]]
        grow();
      frames_[size_++] = f;
    }

   private:
    [[gnu::noinline]] void grow() { frames_.resize(frames_.empty() ? 256 : 2 * frames_.size()); }
    std::vector<Frame> frames_;
    size_t size_ = 0;
  };

  CallTree& tree_;
  WaitClock* clock_ = nullptr;
  Frames stack_;
  std::vector<FrameWait> waits_stack_;  // with clock_ only: one per frame of stack_
  uint64_t last_tick_ = 0;
  uint64_t lost_ = 0;
  uint64_t stray_ = 0;
  uint64_t waits_ = 0, wait_ticks_ = 0;
  uint64_t gap_start_ = kNoTick;  // a gap is open since this tick
  bool gap_lost_ = false;         // a loss (else a pause)
};

// Adds every node of `src` into `dst`, its key replaced by map(key): siblings
// whose keys map to the same value become one node (their stats merged, their
// children merged in turn). Used to key a tree by function instead of address,
// and to merge the trees of several threads.
void merge_tree(CallTree& dst, const CallTree& src, const std::function<uint64_t(uint64_t)>& map);

}  // namespace callscope::analysis
