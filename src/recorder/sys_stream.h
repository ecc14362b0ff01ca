// Part of the recorder: the kernel's events of the traced threads (context
// switches, from perf_rings.h) into the trace as it is written: a
// kSysEvents block per thread (trace_format.h) every so often, and the
// rest at the end.
//
// Each CPU's ring is in that CPU's order; a thread that moved between CPUs
// has its events in several rings. A round reads every ring, and what
// happened before the round began, less a margin (a record's time is read
// a little before it is stored), can no longer be overtaken: those events
// are put in order per thread and kept for the thread's next block; the
// others wait for a later round.
#pragma once

#include <poll.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "format/live_stream.h"
#include "format/sys_events.h"
#include "format/trace_writer.h"
#include "recorder/perf_rings.h"

namespace callscope::recorder {

class SysStream {
 public:
  SysStream(std::unique_ptr<PerfRings> rings, format::TraceWriter& writer);
  void add_poll_fds(std::vector<pollfd>& fds) const {
    if (polled_) rings_->add_poll_fds(fds);
  }
  // The rings said POLLHUP (every thread followed has ended): read on a
  // timer and at the end from now on.
  void stop_polling() { polled_ = false; }
  // A round; with `all` (the program has ended): every event goes out.
  Status poll(bool all = false);
  uint64_t switches() const { return switches_; }  // switch-outs recorded
  uint64_t lost() const { return lost_; }          // records the kernel dropped (rings full)
  uint64_t syscalls() const { return syscalls_; }  // system calls begun
  uint64_t faults() const { return faults_; }      // page faults
  uint64_t samples() const { return samples_; }    // CPU samples
  uint64_t samples_cut() const { return samples_cut_; }  // of them, with their outer frames not unwound
  uint64_t io_requests() const { return io_requests_; }  // block requests begun
  // The block devices of the requests recorded, "MAJOR:MINOR NAME" lines
  // (InfoRecord.block_devices), named as /sys/dev/block says.
  std::string block_devices() const;
  const PerfRings& rings() const { return *rings_; }
  // A live query's tap (query -c): each round's events, once in order,
  // are handed to it too, with the time up to which it has them all
  // (format::LiveDelivery::sys); `tap_only`: to it alone, no trace is kept
  // (LiveStream::set_tap's). Set before the first poll.
  void set_tap(format::LiveTap* tap, bool tap_only) {
    tap_ = tap;
    tap_only_ = tap_only;
  }

 private:
  struct Thread {
    std::vector<format::SysEvent> waiting;  // read, not yet safe to order
    size_t sorted = 0;                      // its first ones, left by the last round: in time order
    std::vector<format::SysEvent> ready;    // in order, for the next block
    uint64_t last_wakeup_ns = 0;
  };
  Status write(uint32_t pid, uint32_t tid, Thread& t);
  std::unique_ptr<PerfRings> rings_;
  format::TraceWriter& writer_;
  std::map<std::pair<uint32_t, uint32_t>, Thread> threads_;  // (pid, tid)
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> last_on_cpu_;  // cpu -> the thread that ran there last
  std::map<uint32_t, uint32_t> pid_of_;  // tid -> pid, of the threads seen
  std::vector<std::pair<uint32_t, format::SysEvent>> wakeups_;  // (woken tid, event) not yet put with it
  // The requests the threads began and not yet seen end, by (device,
  // sector), in the order begun; and the completions not yet put with
  // theirs. The kernel's trace buffers give a CPU's completions late at
  // times -- after a later one of another CPU --, so a completion goes with
  // the latest request begun there before it, one read before its start
  // waits for it (a second at most), and a thread's events are held back
  // while a request of its own with data is open (a second at most).
  struct OpenIo {
    uint64_t start_ns;
    std::pair<uint32_t, uint32_t> thread;  // (pid, tid)
    bool data;                             // it moves bytes (a flush alone: not held for)
  };
  std::map<std::pair<uint32_t, uint64_t>, std::vector<OpenIo>> io_open_;
  size_t io_open_size_ = 0;
  std::vector<format::SysEvent> io_done_;
  std::vector<OpenIo> no_starts_;  // (a completion of no request seen)
  std::map<uint32_t, std::string> devices_;  // dev_t -> name
  bool polled_ = true;
  format::LiveTap* tap_ = nullptr;
  bool tap_only_ = false;
  uint64_t last_round_ns_ = 0;
  uint64_t syscalls_ = 0;
  uint64_t faults_ = 0;
  uint64_t samples_ = 0;
  uint64_t samples_cut_ = 0;
  uint64_t io_requests_ = 0;
  uint64_t switches_ = 0;
  uint64_t lost_ = 0;
};

}  // namespace callscope::recorder
