// A time window over one thread's events (--from/--to of the views): what a
// stream would hold had recording begun at `from` and ended at `to`.
//
//  - events before `from` are dropped, but the frames they leave open come
//    back at `from` as inherited entries (kEntryInherited: their time in the
//    window counts, they are not calls), and a gap open then (a loss or a
//    stop) is reopened there, so that its kResume still closes it;
//  - events in [from, to] pass unchanged;
//  - at the first event after `to`, every frame still open closes at `to` as
//    kExitTruncated (a call still in progress, as at the end of a stream),
//    and the window is over: feed() returns false.
//
// Memory events, marks and tags pass when inside the window; the frames
// they belong to are the ones the window shows.
#pragma once

#include <cstdint>
#include <vector>

#include "format/trace_reader.h"

namespace callscope::analysis {

struct TickWindow {
  uint64_t from = 0;
  uint64_t to = ~uint64_t{0};
  bool all() const { return from == 0 && to == ~uint64_t{0}; }
};

class EventWindow {
 public:
  explicit EventWindow(TickWindow w) : w_(w) {}

  // Passes `e`, or what stands for it, to out(const TraceEvent&). Returns
  // false once the window is over (nothing more will pass).
  template <class Out>
  bool feed(const format::TraceEvent& e, Out&& out) {
    if (over_) return false;
    if (e.tick > w_.to) {
      if (!inside_) open_at_start(out);  // frames that span the whole window
      close_at_end(out);
      return false;
    }
    if (!inside_ && e.tick >= w_.from) open_at_start(out);
    track(e);
    if (inside_) out(e);
    return true;
  }

  // After the last event: a stream that ended before `from` shows nothing.
  bool over() const { return over_; }

 private:
  void track(const format::TraceEvent& e) {
    using K = format::EventKind;
    switch (e.kind) {
      case K::kEntry:
      case K::kEntryInherited: open_.push_back(e); break;
      case K::kExit:
      case K::kExitUnwound:
      case K::kExitTruncated:
        if (!open_.empty()) open_.pop_back();
        break;
      case K::kLost:
      case K::kPause:
        gap_ = e;
        in_gap_ = true;
        break;
      case K::kResume: in_gap_ = false; break;
      default: break;
    }
  }

  template <class Out>
  void open_at_start(Out& out) {
    inside_ = true;
    for (format::TraceEvent f : open_) {
      f.kind = format::EventKind::kEntryInherited;
      f.tick = w_.from;
      out(f);
    }
    if (in_gap_) {
      format::TraceEvent g = gap_;
      g.tick = w_.from;
      if (g.kind == format::EventKind::kLost) g.arg = 0;  // its count was before the window
      out(g);
    }
  }

  template <class Out>
  void close_at_end(Out& out) {
    over_ = true;
    if (!inside_) return;
    while (!open_.empty()) {
      format::TraceEvent f = open_.back();
      open_.pop_back();
      f.kind = format::EventKind::kExitTruncated;
      f.tick = w_.to;
      f.depth = static_cast<uint32_t>(open_.size() + 1);
      out(f);
    }
  }

  TickWindow w_;
  std::vector<format::TraceEvent> open_;  // the entries of the frames open now
  format::TraceEvent gap_{};
  bool in_gap_ = false;
  bool inside_ = false;
  bool over_ = false;
};

}  // namespace callscope::analysis
