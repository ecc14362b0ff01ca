// The trace, written while the program runs.
//
// Under `record`, each traced thread writes raw events into a ring of
// kRingSegments segments of its file (src/runtime/thread.cpp). A thread of
// the recorder calls LiveStream::poll() every few hundred microseconds:
// every complete segment is decoded and encoded into the thread's final
// stream (raw_encoder.h); every kHoldSegments segments, or sooner when the
// writer is about to wait, the pending events become one compressed kEvents
// block of the trace, the block is handed to the kernel, and only then are
// the segments zeroed and given back (`drained`). So the raw space in use is
// the rings and nothing more, and when the program ends little is left to do:
// finalize_session() takes the LiveStream, encodes what remains in the
// rings, and writes the metadata.
//
// Nothing is lost if the recorder dies: a segment is given back only once
// the block holding its events is in the trace file, and each block says in
// aux1 how many of its thread's segments it covers. `finish` rebuilds the
// streams from that file and the rings (LiveStream::recover).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "format/raw_encoder.h"
#include "format/raw_session.h"
#include "format/sys_events.h"
#include "format/trace_format.h"
#include "format/trace_writer.h"

namespace callscope::format {

// What a tap (LiveStream::set_tap) is handed: the final events of each
// thread as the recorder reads them, and when threads start and end.
struct LiveThreadStart {
  uint32_t index = 0;   // the thread's index in the trace
  std::string process;  // its process's directory in the session: "<pid>.<n>"
  uint32_t tid = 0;
  uint64_t start_tick = 0;  // trace ticks
  bool main = false;        // its process's first thread
};
struct LiveDelivery {
  // Every event with a tick up to the horizon (trace ticks) was visible in
  // its thread's ring when read, and is in this delivery or an earlier one
  // -- but for a writer preempted between reading the clock and storing the
  // event: that event comes later, behind the horizon.
  uint64_t horizon = 0;
  std::vector<LiveThreadStart> threads;                   // new threads
  std::vector<std::pair<uint32_t, EventColumns>> events;  // per thread index, in order
  std::vector<std::pair<uint32_t, uint64_t>> ended;       // threads that exited, and when (trace ticks)
  std::vector<std::string> warnings;                      // what the tap cannot see, a line each
  bool last = false;  // the program has ended: nothing follows
  // The kernel's events of the program's threads (recorder/sys_stream.h's
  // tap), each thread's in time order, named by pid and tid (the trace's
  // thread may not be known yet); and the time (CLOCK_MONOTONIC) up to
  // which every one of them has been delivered, 0 when this delivery does
  // not say. A few come later than that (a wakeup or a completion of a
  // thread not seen yet): they fire when they come.
  struct SysEvents {
    uint32_t pid = 0, tid = 0;
    std::vector<SysEvent> events;
  };
  std::vector<SysEvents> sys;
  uint64_t sys_horizon_ns = 0;
};
class LiveTap {
 public:
  // On the recorder's thread (Drainer): must not block for long.
  virtual void deliver(LiveDelivery&& d) = 0;
  // A buffer the consumer is done with, cleared, its memory kept (fresh
  // memory costs page faults for every delivery); false when none.
  virtual bool reuse(EventColumns& into) {
    (void)into;
    return false;
  }

 protected:
  ~LiveTap() = default;
};

class LiveStream {
 public:
  // Segments encoded before their block is written and they are given back:
  // at most 4 x 256 KiB of raw events (about 130,000 events) per block.
  static constexpr uint64_t kHoldSegments = 4;

  // Starts the trace for `out_path` (written as a temporary file beside it)
  // for the raw session `session`; ticks count from `origin` of `clock`
  // (sampled before the program started). Writes a kStream record to the
  // session's recorder.meta through `meta_fd`. The temporary file is part of
  // the session from then on: it is never removed unfinished (`finish` reads
  // it back). `claim` (outliving the stream) decides the final rename.
  static Result<std::unique_ptr<LiveStream>> create(const std::string& session, const std::string& out_path,
                                                    ClockKind clock, uint64_t origin, int zstd_level, int meta_fd,
                                                    OutputClaim* claim = nullptr);
  // For `finish`: the trace a dead recorder was writing (`s.stream_path`) is
  // read back into a new trace at `out_path`, and its threads go on from the
  // segments its blocks did not cover.
  static Result<std::unique_ptr<LiveStream>> recover(const RawSession& s, const std::string& out_path,
                                                     int zstd_level, OutputClaim* claim = nullptr);
  ~LiveStream();
  LiveStream(const LiveStream&) = delete;
  LiveStream& operator=(const LiveStream&) = delete;

  // One pass over the session: new thread files, complete segments encoded,
  // blocks written, segments given back. An error (the trace cannot be
  // written) stops the stream: writers are told to drop instead of waiting.
  Status poll();

  // How long the recorder may sleep before its next poll, in ns: longer
  // after polls that found no segment complete, shorter after polls that
  // found several -- about one segment of the busiest thread per poll, from
  // kPollWaitMinNs to kPollWaitMaxNs (always the least with a tap, whose
  // rounds are every 2 ms). A wakeup costs the recorder a few microseconds
  // of CPU: at a fixed 200 us, about 5 % of a core for a program that calls
  // nothing. At most, a ring (16 segments) is still far from full: one
  // thread writing 700 MB/s fills it in 6 ms.
  static constexpr uint64_t kPollWaitMinNs = 200'000;
  static constexpr uint64_t kPollWaitMaxNs = 2'000'000;
  uint64_t poll_wait_ns() const { return tap_ ? kPollWaitMinNs : poll_wait_ns_; }
  // A tap's rounds: every 2 ms while they find something (events, a thread
  // new or ended, a segment complete), twice as far apart after each that
  // finds nothing, up to 64 ms -- a live query of an idle program wakes its
  // recorder about 16 times a second, not 500 -- and back to 2 ms with
  // the first news. So while idle, the first events after a pause and the
  // clock probes reach a query up to 64 ms late.
  static constexpr uint64_t kTapRoundMinNs = 2'000'000;
  static constexpr uint64_t kTapRoundMaxNs = 64'000'000;
  uint64_t tap_round_ns() const { return tap_round_ns_; }

  // A consumer of the events while the program runs, beside the trace
  // (query -c: before the first poll; query -p: between two polls, on the
  // polling thread). From then on each thread's ring is read twice -- by the
  // tap as far as its writer has got (the segment being written too, up to
  // its first event not yet stored whole), and by the trace as segments
  // complete -- and the tap is handed what is new every few milliseconds.
  // Set while threads stream, the tap starts at the first segment the trace
  // has not taken, each thread's open frames first (kEntryInherited); threads
  // over by then are said to have started and ended. `ticks_per_ns` sets the
  // horizon's margin. `tap_only`: no trace is kept (query -c without -o):
  // segments go back as soon as the tap has read them, encoded into nothing
  // -- half the recorder's work.
  void set_tap(LiveTap* tap, double ticks_per_ns, bool tap_only = false);
  // No tap from now on (the query that attached has gone).
  void clear_tap();
  bool tapped() const { return tap_ != nullptr; }
  // Whether a thread's segments are encoded but held, waiting for more to
  // make a block (kHoldSegments): a thread gone quiet keeps them until
  // flush_held(), which the recorder calls when nothing has rung for a while.
  bool holding() const;
  Status flush_held();
  // Once the program has ended, before finalize_session: what is left in
  // every ring goes to the tap, with `last` set.
  void tap_rest();

  // For finalize_session, once the program has ended.
  struct Thread {
    std::string path;  // of t<tid>.ev, absolute
    uint32_t index = 0;
    ThreadRecord record{};
    std::unique_ptr<EventEncoder> events;
    std::unique_ptr<RawStreamEncoder> stream;
    uint64_t consumed = 0;  // segments encoded
    uint64_t released = 0;  // segments given back
    // The live mapping of the thread file (header page and ring).
    int fd = -1;
    uint8_t* map = nullptr;
    uint64_t map_bytes = 0;
    RawDecoder decoder;
    bool done = false;  // the thread ended and every complete segment was taken (map released)
    RawThreadHeader header{};  // its raw header as last seen (finish_thread)
    uint64_t offset = 0;       // raw ticks to trace ticks
    // The tap's reading of the ring, ahead of the trace's.
    struct Tap {
      RawDecoder decoder;
      ThreadRecord record{};
      EventColumns out;
      std::vector<EventColumns> full;  // chunks filled since the last delivery
      std::unique_ptr<BasicRawStreamEncoder<EventColumns>> stream;
      uint64_t segment = 0;  // the segment it reads
      size_t word = 0;       // and where in it
      bool start_sent = false, ended = false, end_sent = false, unseen_said = false;
      uint64_t end_tick = 0;
    };
    std::unique_ptr<Tap> tap;
  };
  TraceWriter& writer() { return *writer_; }
  std::unique_ptr<TraceWriter> take_writer() { return std::move(writer_); }
  uint64_t origin() const { return origin_; }
  ClockKind clock() const { return clock_; }
  // The thread that streams `path`, or null.
  Thread* thread_of(const std::string& path);
  uint32_t thread_count() const { return static_cast<uint32_t>(threads_.size()); }
  Thread* thread(uint32_t index) { return threads_[index].get(); }
  // What recover() found damaged or missing.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Encodes what is left in a thread's ring (the segments from `consumed` to
  // the one being written), then finishes its stream (raw_encoder.h).
  Status finish_thread(Thread& t, uint64_t end_hint, std::span<const RawSwitch> switches = {});
  uint64_t blocks_written() const { return blocks_; }
  uint64_t segments_taken() const { return segments_; }
  // The stream stopped (a write failed): the threads drop their events.
  bool failed() const { return failed_; }
  // What the program's threads said of themselves in their raw headers:
  // how long, and how many times, they waited for a free segment (their
  // rings full: the recorder, or its tap, behind), and the events they
  // dropped (a stream that failed, a full disk).
  struct WriterCounts {
    uint64_t wait_ns = 0, waits = 0, lost = 0;
  };
  WriterCounts writer_counts() const;

 private:
  LiveStream() = default;
  Status scan();
  Status add_thread(const std::string& path, const std::string& rel, uint64_t offset);
  Status drain(Thread& t, bool peek);
  void tap_read(Thread& t, uint64_t committed, bool closed, bool partial);
  void tap_deliver(uint64_t horizon, bool last);
  Status flush_thread(Thread& t);
  Status encode_segment(Thread& t, uint64_t n);
  void give_up();
  // `st`, or its failure after give_up(): the stream stops.
  Status stop_on_failure(Status st);
  Result<uint64_t> offset_of(const std::string& process_dir);

  std::string session_;
  std::unique_ptr<TraceWriter> writer_;
  ClockKind clock_ = ClockKind::kTsc;
  uint64_t origin_ = 0;
  int meta_fd_ = -1;
  std::vector<std::unique_ptr<Thread>> threads_;
  std::map<std::string, Thread*> by_path_;
  std::map<std::string, uint64_t> process_offsets_;  // process dir -> raw-to-trace tick offset
  bool failed_ = false;
  std::vector<std::string> warnings_;
  uint64_t blocks_ = 0;
  uint64_t segments_ = 0;
  int polls_ = 0;
  uint64_t poll_wait_ns_ = kPollWaitMinNs;
  LiveTap* tap_ = nullptr;
  bool tap_only_ = false;
  double ticks_per_ns_ = 1.0;
  uint64_t tap_round_ns_ = kTapRoundMinNs;
  uint64_t last_peek_ = 0;    // trace ticks of the last tap round
  uint64_t last_scan_ = 0;    // trace ticks of the last directory scan
  uint64_t tap_horizon_ = 0;
  size_t tap_pending_ = 0;    // events read by the tap, not handed over yet
  std::vector<std::string> tap_warnings_;
  std::set<std::string> not_ringed_;  // thread files seen smaller than a ring
};

}  // namespace callscope::format
