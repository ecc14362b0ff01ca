#include "format/raw_encoder.h"

#include <algorithm>
#include <utility>

namespace callscope::format {

template <class Out>
Status BasicRawStreamEncoder<Out>::emit(EventKind k, uint64_t tick, uint64_t addr, uint64_t sp, uint64_t arg) {
  ++rec_.events;
  return out_.add(k, tick, addr, sp, arg);
}

template <class Out>
uint64_t BasicRawStreamEncoder<Out>::clamp(uint64_t raw_tick) {
  uint64_t tick = raw_tick + offset_;
  if (!started_) {
    started_ = true;
    rec_.start_tick = tick;
  }
  if (tick < last_) tick = last_;
  last_ = tick;
  return tick;
}

template <class Out>
Status BasicRawStreamEncoder<Out>::close_all(uint64_t tick) {
  while (!stack_.empty()) {
    stack_.pop_back();
    CALLSCOPE_CHECK(emit(EventKind::kExitTruncated, tick, 0, 0, 0));
  }
  return ok_status();
}

// The gap that began at gap_tick_ ends at `tick`: frames below the first
// difference between the stack before the gap and the resync went on
// through it; those above it on the old stack ended inside the gap, those
// above it in the resync began inside it.
template <class Out>
Status BasicRawStreamEncoder<Out>::end_gap(uint64_t tick) {
  in_gap_ = false;
  size_t common = 0;
  while (common < stack_.size() && common < resync_.size() && stack_[common].addr == resync_[common].addr &&
         stack_[common].sp == resync_[common].sp && stack_[common].raw_tick == resync_[common].raw_tick)
    ++common;
  CALLSCOPE_CHECK(emit(gap_kind_, gap_tick_, 0, 0, gap_kind_ == EventKind::kLost ? gap_lost_ : 0));
  while (stack_.size() > common) {
    stack_.pop_back();
    CALLSCOPE_CHECK(emit(EventKind::kExitTruncated, gap_tick_, 0, 0, 0));
  }
  for (size_t i = common; i < resync_.size(); ++i) {
    stack_.push_back(resync_[i]);
    CALLSCOPE_CHECK(emit(EventKind::kEntryInherited, tick, resync_[i].addr, resync_[i].sp, 0));
  }
  resync_.clear();
  return emit(EventKind::kResume, tick, 0, 0, 0);
}

template <class Out>
Status BasicRawStreamEncoder<Out>::add(const RawEvent& e) {
  if (pending_loss_ && e.kind != RawKind::kSpBase) {
    // The loss began after the last event read (at the next one when it
    // begins the stream) and ends here; the frames go on through it.
    const bool mid_stream = started_;
    const uint64_t from = last_;
    const uint64_t tick = clamp(e.tick);
    const uint64_t n = pending_loss_;
    pending_loss_ = 0;
    stream_lost_ += n;
    rec_.lost_events += n;
    CALLSCOPE_CHECK(emit(EventKind::kLost, mid_stream ? from : tick, 0, 0, n));
    CALLSCOPE_CHECK(emit(EventKind::kResume, tick, 0, 0, 0));
  }
  if (in_gap_) {
    switch (e.kind) {
      case RawKind::kEntryInherited:
        resync_.push_back({e.addr, e.sp, e.tick});
        return ok_status();
      case RawKind::kResume:
        return end_gap(clamp(e.tick));
      case RawKind::kLost:  // a second loss before the first one's resync: one gap
        gap_lost_ += e.arg;
        stream_lost_ += e.arg;
        rec_.lost_events += e.arg;
        return ok_status();
      case RawKind::kPause:
        return ok_status();
      case RawKind::kSpBase:
        return ok_status();
      default:
        // A runtime that wrote no kResume: the gap ends at the first event
        // that is not part of its resync.
        CALLSCOPE_CHECK(end_gap(clamp(e.tick)));
        break;
    }
  }
  switch (e.kind) {
    case RawKind::kEntry:
    case RawKind::kEntryInherited: {
      const uint64_t tick = clamp(e.tick);
      stack_.push(e.addr, e.sp, e.tick);
      if (e.kind == RawKind::kEntry) ++rec_.calls;
      return emit(e.kind == RawKind::kEntry ? EventKind::kEntry : EventKind::kEntryInherited, tick, e.addr, e.sp, 0);
    }
    case RawKind::kExit:
    case RawKind::kExitUnwound:
    case RawKind::kExitTruncated: {
      const uint64_t tick = clamp(e.tick);
      if (stack_.empty()) {
        if (e.kind == RawKind::kExitTruncated) return ok_status();
        return emit(EventKind::kExitStray, tick, 0, 0, 0);
      }
      stack_.pop_back();
      return emit(e.kind == RawKind::kExit         ? EventKind::kExit
                  : e.kind == RawKind::kExitUnwound ? EventKind::kExitUnwound
                                                    : EventKind::kExitTruncated,
                  tick, 0, 0, 0);
    }
    case RawKind::kExitStray:
      return emit(EventKind::kExitStray, clamp(e.tick), e.addr, 0, 0);
    case RawKind::kLost:
    case RawKind::kPause:
      in_gap_ = true;
      gap_kind_ = e.kind == RawKind::kLost ? EventKind::kLost : EventKind::kPause;
      gap_tick_ = clamp(e.tick);
      gap_lost_ = e.kind == RawKind::kLost ? e.arg : 0;
      stream_lost_ += gap_lost_;
      rec_.lost_events += gap_lost_;
      resync_.clear();
      return ok_status();
    case RawKind::kResume:  // no gap open: nothing to end
      clamp(e.tick);
      return ok_status();
    case RawKind::kMark:
      return emit(EventKind::kMark, clamp(e.tick), 0, 0, e.arg);
    case RawKind::kTag:
      return emit(EventKind::kTag, clamp(e.tick), 0, 0, e.arg);
    case RawKind::kWait:
      return emit(EventKind::kWait, clamp(e.tick), 0, 0, e.arg);
    case RawKind::kAlloc:
    case RawKind::kFree:
      ++rec_.events;
      return out_.memory(e.kind == RawKind::kAlloc ? EventKind::kAlloc : EventKind::kFree, clamp(e.tick), e.addr,
                         e.arg, e.op);
    case RawKind::kSpBase:
      return ok_status();
  }
  return ok_status();
}

template <class Out>
Status BasicRawStreamEncoder<Out>::add_file(RawThreadFile& file) {
  if (file.missing_before()) begin_with_loss(file.events_estimate(file.missing_before()));
  RawEvent e;
  uint64_t gap = 0;
  do {
    if (gap) lose_here(gap);
    while (file.next(e))
      if (!add_fast(e)) CALLSCOPE_CHECK(add(e));
  } while (file.take_gap(gap));
  const uint64_t cut_short = file.events_estimate(file.missing_after()) + file.missing_bytes_events();
  if (cut_short) CALLSCOPE_CHECK(cut(cut_short));
  return ok_status();
}

template <class Out>
void BasicRawStreamEncoder<Out>::lose_here(uint64_t lost_events) {
  if (in_gap_) {  // inside a gap of the runtime's: one gap
    gap_lost_ += lost_events;
    stream_lost_ += lost_events;
    rec_.lost_events += lost_events;
    return;
  }
  pending_loss_ += lost_events;
}

template <class Out>
Status BasicRawStreamEncoder<Out>::cut(uint64_t lost_events) {
  if (in_gap_) {
    gap_lost_ += lost_events;
  } else {
    in_gap_ = true;
    gap_kind_ = EventKind::kLost;
    gap_tick_ = last_;
    gap_lost_ = lost_events;
  }
  stream_lost_ += lost_events;
  rec_.lost_events += lost_events;
  // Nothing after the cut can be matched with the frames before it.
  CALLSCOPE_CHECK(emit(gap_kind_, gap_tick_, 0, 0, gap_kind_ == EventKind::kLost ? gap_lost_ : 0));
  in_gap_ = false;
  resync_.clear();
  return close_all(gap_tick_);
}

template <class Out>
Status BasicRawStreamEncoder<Out>::finish(uint64_t end_tick, uint64_t header_lost) {
  if (pending_loss_) {
    // Lost after the last event, and nothing read after: a stream cut short.
    const uint64_t n = pending_loss_;
    pending_loss_ = 0;
    CALLSCOPE_CHECK(cut(n));
  }
  if (in_gap_) {
    // Cut inside a gap: a pause ends with the thread (its frames close at
    // the stop); a loss stays a loss, with the dropped events the header
    // counted beyond the stream's records.
    in_gap_ = false;
    if (gap_kind_ == EventKind::kLost) {
      const uint64_t more = header_lost > stream_lost_ ? header_lost - stream_lost_ : 0;
      gap_lost_ += more;
      stream_lost_ += more;
      rec_.lost_events += more;
    }
    CALLSCOPE_CHECK(emit(gap_kind_, gap_tick_, 0, 0, gap_kind_ == EventKind::kLost ? gap_lost_ : 0));
    resync_.clear();
    CALLSCOPE_CHECK(close_all(gap_tick_));
  } else if (header_lost > stream_lost_) {
    // Events dropped after the last one stored, never resynced: the stream
    // ends in a loss that began after its last event.
    const uint64_t more = header_lost - stream_lost_;
    stream_lost_ += more;
    rec_.lost_events += more;
    CALLSCOPE_CHECK(emit(EventKind::kLost, last_, 0, 0, more));
    CALLSCOPE_CHECK(close_all(last_));
  }
  uint64_t end = std::max(last_, end_tick);
  CALLSCOPE_CHECK(close_all(end));
  rec_.end_tick = std::max(end, rec_.start_tick);
  return out_.flush();
}

// A thread that had acted on every switch up to h.switches_seen, while
// running, made no call since (else it would have acted on the next): its
// frames are exactly those of its last event, asleep through each stop and
// start that followed. One that last acted on a stop may have returned from
// calls while stopped, unrecorded: its stream stays ending in that pause.
// A thread that exited acted on every switch before it ended.
template <class Out>
Status BasicRawStreamEncoder<Out>::apply_unseen(const RawThreadHeader& h, std::span<const RawSwitch> switches) {
  if ((h.flags & kRawThreadClosed) || (h.switches_seen & 1) || !started_) return ok_status();
  for (const RawSwitch& w : switches) {
    if (w.seq <= h.switches_seen) continue;
    if (w.seq & 1) {
      if (in_gap_) continue;  // inside a loss: its resync never came
      CALLSCOPE_CHECK(add(RawEvent{RawKind::kPause, w.tick, 0, 0, 0}));
    } else if (in_gap_ && gap_kind_ == EventKind::kPause) {
      for (size_t i = 0; i < stack_.size(); ++i)
        CALLSCOPE_CHECK(add(RawEvent{RawKind::kEntryInherited, stack_[i].raw_tick, stack_[i].addr, stack_[i].sp, 0}));
      CALLSCOPE_CHECK(add(RawEvent{RawKind::kResume, w.tick, 0, 0, 0}));
    }
  }
  return ok_status();
}

template <class Out>
Status BasicRawStreamEncoder<Out>::finish_thread(const RawThreadHeader& h, uint64_t end_hint,
                                       std::span<const RawSwitch> switches) {
  CALLSCOPE_CHECK(apply_unseen(h, switches));
  uint64_t end = 0;
  if (h.end_tick)
    end = h.end_tick + offset_;
  else if (!stack_.empty() || in_gap_ || !started_)
    end = end_hint;
  const uint64_t start = h.start_tick + offset_;
  if (!started_) rec_.start_tick = start;
  rec_.start_tick = std::min(rec_.start_tick, start);
  return finish(end, h.lost_events);
}

template <class Out>
void BasicRawStreamEncoder<Out>::resume_from(std::vector<OpenFrame> stack, uint64_t last_tick, bool started,
                                   uint64_t lost_events) {
  stack_.assign(std::move(stack));
  last_ = last_tick;
  started_ = started;
  stream_lost_ = lost_events;
}

// The recorder's inner loop: runs of kEntry, kExit (a frame open) and
// kSpBase words, decoded and encoded with every position and count in
// locals; anything else (another kind, a torn or damaged word, a gap, a
// block's first or last event) goes through RawDecoder::next and add(), one
// event at a time, and the loop goes on after it. What it writes is what
// add_fast() would.
template <>
Status BasicRawStreamEncoder<EventEncoder>::add_segment(RawDecoder& dec, const uint64_t* words, size_t n) {
  // Events per run: the room made for them in the columns and stacks.
  constexpr size_t kRunWords = 4096;
  constexpr uint64_t kEntryKind = static_cast<uint8_t>(RawKind::kEntry);
  constexpr uint64_t kExitKind = static_cast<uint8_t>(RawKind::kExit);
  constexpr uint64_t kSpBaseKind = static_cast<uint8_t>(RawKind::kSpBase);
  size_t i = 0;
  while (i < n) {
    const size_t end = std::min(n, i + kRunWords);
    EventEncoder::Run r;
    if (!in_gap_ && !pending_loss_ && started_ && out_.open_run(static_cast<uint32_t>(end - i), r)) {
      OpenFrame* frames = stack_.room(end - i);
      size_t depth = stack_.size();
      uint64_t last = last_, sp_base = dec.sp_base, calls = 0;
      const uint64_t offset = offset_;
      const uint32_t n0 = r.n;
      while (i < end) {
        const uint64_t w0 = words[i];
        const uint64_t k = w0 & 0xff;
        const uint64_t raw_tick = w0 >> kRawKindBits;
        uint64_t tick = raw_tick + offset;
        if (k == kExitKind) {
          if (depth == 0 || r.depth == 0) break;  // a stray exit: add()
          tick = std::max(tick, last);
          *r.kinds++ = static_cast<uint8_t>(EventKind::kExit);
          r.dt = EventEncoder::write_varint_short(r.dt, tick - r.prev_tick);
          r.prev_tick = last = tick;
          --depth;
          --r.depth;
          ++r.n;
          ++i;
          continue;
        }
        if (w0 == 0) {  // the unused tail of the segment
          ++i;
          continue;
        }
        if ((k != kEntryKind && k != kSpBaseKind) || i + 1 >= n) break;
        const uint64_t w1 = words[i + 1];
        if (w1 == 0) break;  // torn: the decoder counts it
        i += 2;
        if (k == kSpBaseKind) {
          sp_base = w1;
          continue;
        }
        tick = std::max(tick, last);
        const uint64_t addr = w1 & kRawAddrMask;
        const auto rel = static_cast<int16_t>(static_cast<uint16_t>(w1 >> 48));
        const uint64_t sp = rel == -32768 ? 0 : sp_base - static_cast<int64_t>(rel) * static_cast<int64_t>(kSpUnit);
        *r.kinds++ = static_cast<uint8_t>(EventKind::kEntry);
        r.dt = EventEncoder::write_varint_short(r.dt, tick - r.prev_tick);
        r.prev_tick = last = tick;
        r.fn = EventEncoder::write_varint(r.fn, out_.fn_index(addr));
        const uint64_t parent = r.depth ? r.sp_stack[r.depth - 1] : 0;
        r.sp = EventEncoder::write_varint(r.sp, EventEncoder::zigzag_sp(parent, sp));
        r.sp_stack[r.depth++] = sp;
        OpenFrame& f = frames[depth++];
        f.addr = addr;
        f.sp = sp;
        f.raw_tick = raw_tick;
        ++r.n;
        ++calls;
      }
      rec_.events += r.n - n0;
      rec_.calls += calls;
      last_ = last;
      dec.sp_base = sp_base;
      stack_.resize(depth);
      out_.close_run(r);
      if (i == end) continue;
      // Stopped at an event the loop does not take: add() has it.
    }
    // One event the slow way (or, at a block's first event, a few).
    RawEvent e;
    if (!dec.next(words, n, i, e)) break;
    if (!add_fast(e)) CALLSCOPE_CHECK(add(e));
  }
  return ok_status();
}

template class BasicRawStreamEncoder<EventEncoder>;
template class BasicRawStreamEncoder<EventColumns>;

}  // namespace callscope::format
