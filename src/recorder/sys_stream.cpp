#include "recorder/sys_stream.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>

namespace callscope::recorder {
namespace {

// How far before a round's start its events are safe (a record's time is
// taken a little before it is stored); and a thread's block size.
constexpr uint64_t kMarginNs = 2'000'000;
constexpr size_t kBlockEvents = 1 << 16;
// A live query's rounds: at most one a millisecond.
constexpr uint64_t kTapRoundNs = 1'000'000;
// A wakeup of a thread not seen within this long is of a thread not traced.
constexpr uint64_t kUnknownWakeupNs = 1'000'000'000;

// More requests open than this: their completions were lost (a full ring).
constexpr size_t kMaxOpenIo = 1 << 16;
// A request open this long lost its completion.
constexpr uint64_t kStaleIoNs = 30'000'000'000;

uint64_t mono_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

SysStream::SysStream(std::unique_ptr<PerfRings> rings, format::TraceWriter& writer)
    : rings_(std::move(rings)), writer_(writer) {}

Status SysStream::poll(bool all) {
  const uint64_t start = mono_now();
  // A live query drains on every round of its own, every few hundred
  // microseconds while busy; what a round orders is what happened 2 ms
  // before: a round a millisecond is as fresh, for a fraction of the work.
  if (tap_ && !all && start < last_round_ns_ + kTapRoundNs) return ok_status();
  last_round_ns_ = start;
  const auto on_record = [&](const SysRecord& r) {
    format::SysEvent e;
    e.mono_ns = r.time_ns;
    e.arg = r.cpu;
    switch (r.kind) {
      case SysRecord::Kind::kSwitchOut:
        e.kind = format::SysKind::kSwitchOutBlocked;
        ++switches_;
        break;
      case SysRecord::Kind::kSwitchOutPreempt:
        e.kind = format::SysKind::kSwitchOutRunnable;
        ++switches_;
        break;
      case SysRecord::Kind::kSwitchIn:
        e.kind = format::SysKind::kSwitchIn;
        break;
      case SysRecord::Kind::kSleepState:
        e.kind = format::SysKind::kSleepState;
        e.arg = r.state;
        break;
      case SysRecord::Kind::kSyscallEnter:
        e.kind = format::SysKind::kSyscallEnter;
        e.arg = static_cast<uint64_t>(r.nr);
        std::copy(std::begin(r.args), std::end(r.args), e.args);
        ++syscalls_;
        break;
      case SysRecord::Kind::kSyscallExit:
        e.kind = format::SysKind::kSyscallExit;
        e.arg = static_cast<uint64_t>(r.nr);
        e.value = r.ret;
        break;
      case SysRecord::Kind::kPageFault:
        e.kind = format::SysKind::kPageFault;
        e.arg = r.addr;
        e.args[0] = r.ip;
        e.value = static_cast<int64_t>((r.major ? format::kFaultMajor : 0) | (r.in_kernel ? format::kFaultInKernel : 0));
        ++faults_;
        break;
      case SysRecord::Kind::kSample:
        e.kind = format::SysKind::kSample;
        e.arg = r.ip;
        e.value = static_cast<int64_t>(r.period * 2 + (r.in_kernel ? 1 : 0));
        ++samples_;
        break;
      case SysRecord::Kind::kIoStart:
        e.kind = format::SysKind::kIoStart;
        e.arg = r.dev;
        e.args[0] = r.sector;
        e.args[1] = r.bytes;
        e.value = static_cast<int64_t>(r.io_kind);
        ++io_requests_;
        if (io_open_size_ >= kMaxOpenIo) io_open_.clear(), io_open_size_ = 0;
        {
          auto& starts = io_open_[{r.dev, r.sector}];
          const OpenIo o{r.time_ns, {r.pid, r.tid}, r.bytes != 0};
          starts.insert(std::upper_bound(starts.begin(), starts.end(), o,
                                         [](const OpenIo& a, const OpenIo& b) { return a.start_ns < b.start_ns; }),
                        o);
          ++io_open_size_;
        }
        if (!devices_.count(r.dev)) devices_[r.dev] = format::block_device_name(r.dev);
        break;
      case SysRecord::Kind::kIoDone:
        // Of whichever thread ran when the device answered: put with the
        // thread that began it, once this round has shown who that was.
        e.kind = format::SysKind::kIoDone;
        e.arg = r.dev;
        e.args[0] = r.sector;
        e.value = r.error;
        io_done_.push_back(e);
        return;
      case SysRecord::Kind::kWakeup:
        // Told to the woken thread, which the kernel names by tid alone:
        // put with it once this round's records have made it known.
        e.kind = format::SysKind::kWakeup;
        e.arg = r.parent_tid;
        e.value = r.parent_pid;
        wakeups_.emplace_back(r.tid, e);
        return;
      case SysRecord::Kind::kLost: {
        // Whose records were dropped is not known: the thread that last ran
        // on that CPU is told (the reader stops trusting its waits there).
        lost_ += r.lost;
        auto it = last_on_cpu_.find(r.cpu);
        if (it == last_on_cpu_.end()) return;
        e.kind = format::SysKind::kLost;
        e.arg = r.lost;
        threads_[it->second].waiting.push_back(e);
        return;
      }
      default:
        return;  // forks, exits and names: the runtime's records say them
    }
    last_on_cpu_[r.cpu] = {r.pid, r.tid};
    pid_of_[r.tid] = r.pid;
    std::vector<format::SysEvent>& waiting = threads_[{r.pid, r.tid}].waiting;
    waiting.push_back(e);
    // A sample's frames follow it, at its time (the sorts are stable).
    format::SysEvent caller;
    caller.kind = format::SysKind::kSampleCaller;
    caller.mono_ns = e.mono_ns;
    for (uint32_t i = 0; i < r.n_frames; ++i) {
      caller.arg = r.frames[i];
      waiting.push_back(caller);
    }
    if (r.frames_cut && r.kind == SysRecord::Kind::kSample) {
      caller.arg = 0;
      waiting.push_back(caller);
      ++samples_cut_;
    }
  };
  rings_->drain(on_record);
  // At the end, the kernel's trace buffers a moment more: a CPU's last
  // completions come late at times.
  if (all && rings_->has_io()) {
    ::usleep(20'000);
    rings_->drain(on_record);
  }
  // Wakeups of the threads seen (one not seen yet may be in a later
  // round; at the end, one never seen is not ours). A wakeup that reaches
  // both the waker's events and the woken thread's comes twice: kept once.
  std::vector<std::pair<uint32_t, format::SysEvent>> later;
  for (auto& [tid, e] : wakeups_) {
    auto pid = pid_of_.find(tid);
    if (pid == pid_of_.end()) {
      if (!all && e.mono_ns + kUnknownWakeupNs > start) later.emplace_back(tid, e);
      continue;
    }
    Thread& t = threads_[{pid->second, tid}];
    if (t.last_wakeup_ns == e.mono_ns) continue;
    t.last_wakeup_ns = e.mono_ns;
    t.waiting.push_back(e);
  }
  wakeups_ = std::move(later);
  // Completions of the requests the threads began (the others are of
  // other programs, or the kernel's own writeback).
  std::vector<format::SysEvent> again;
  for (const format::SysEvent& e : io_done_) {
    auto it = io_open_.find({static_cast<uint32_t>(e.arg), e.args[0]});
    auto& starts = it == io_open_.end() ? no_starts_ : it->second;
    auto latest = std::upper_bound(starts.begin(), starts.end(), e.mono_ns,
                                   [](uint64_t t, const OpenIo& o) { return t < o.start_ns; });
    if (latest == starts.begin()) {
      if (!all && e.mono_ns + kUnknownWakeupNs > start) again.push_back(e);
      continue;
    }
    --latest;
    threads_[latest->thread].waiting.push_back(e);
    starts.erase(latest);
    --io_open_size_;
    if (starts.empty()) io_open_.erase(it);
  }
  io_done_ = std::move(again);
  // A request open for long never had its completion seen (merged into
  // another's, or dropped): it must not take a later one at its sector.
  if (!all)
    for (auto it = io_open_.begin(); it != io_open_.end();) {
      std::vector<OpenIo>& starts = it->second;
      const auto stale = std::find_if(starts.begin(), starts.end(),
                                      [&](const OpenIo& o) { return o.start_ns + kStaleIoNs > start; });
      io_open_size_ -= static_cast<size_t>(stale - starts.begin());
      starts.erase(starts.begin(), stale);
      it = starts.empty() ? io_open_.erase(it) : std::next(it);
    }
  // A thread's events wait for the completions of its open requests (but
  // not past a second: one may never come).
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> held;
  for (const auto& [key, starts] : io_open_)
    for (const OpenIo& o : starts)
      if (o.data && o.start_ns + kUnknownWakeupNs > start) {
        auto [h, fresh] = held.try_emplace(o.thread, o.start_ns);
        if (!fresh) h->second = std::min(h->second, o.start_ns);
      }
  const uint64_t safe = all ? ~uint64_t{0} : start - std::min(start, kMarginNs);
  format::LiveDelivery d;
  // (a thread held back holds the tap's horizon back with it)
  d.sys_horizon_ns = safe;
  for (const auto& [thread, since] : held) d.sys_horizon_ns = std::min(d.sys_horizon_ns, since);
  for (auto& [key, t] : threads_) {
    if (t.waiting.empty() && (t.ready.empty() || !all)) continue;
    // What the last round left is in order: the new ones are put in order
    // and merged in (a live query's rounds come every few milliseconds:
    // sorting it all each time was most of the recorder's work).
    const auto by_time = [](const format::SysEvent& a, const format::SysEvent& b) { return a.mono_ns < b.mono_ns; };
    const auto fresh = t.waiting.begin() + static_cast<std::ptrdiff_t>(std::min(t.sorted, t.waiting.size()));
    if (!std::is_sorted(fresh, t.waiting.end(), by_time)) std::stable_sort(fresh, t.waiting.end(), by_time);
    std::inplace_merge(t.waiting.begin(), fresh, t.waiting.end(), by_time);
    auto h = all ? held.end() : held.find(key);
    const uint64_t until = h == held.end() ? safe : std::min(safe, h->second);
    const auto cut = std::find_if(t.waiting.begin(), t.waiting.end(),
                                  [until](const format::SysEvent& e) { return e.mono_ns > until; });
    if (tap_ && cut != t.waiting.begin()) d.sys.push_back({key.first, key.second, {t.waiting.begin(), cut}});
    if (!tap_only_) t.ready.insert(t.ready.end(), t.waiting.begin(), cut);
    t.waiting.erase(t.waiting.begin(), cut);
    t.sorted = t.waiting.size();
    if (t.ready.size() >= kBlockEvents || (all && !t.ready.empty()))
      CALLSCOPE_CHECK(write(key.first, key.second, t));
  }
  if (tap_) tap_->deliver(std::move(d));
  return ok_status();
}

std::string SysStream::block_devices() const {
  std::string out;
  for (const auto& [dev, name] : devices_)
    if (!name.empty()) out += std::to_string(dev >> 20) + ":" + std::to_string(dev & 0xfffff) + " " + name + "\n";
  return out;
}

Status SysStream::write(uint32_t pid, uint32_t tid, Thread& t) {
  // (a completion put with its thread late -- the kernel's trace buffers
  // gave it after the thread's later events were ready -- goes in its place)
  std::stable_sort(t.ready.begin(), t.ready.end(),
                   [](const format::SysEvent& a, const format::SysEvent& b) { return a.mono_ns < b.mono_ns; });
  const std::vector<uint8_t> payload = format::encode_sys_events(t.ready);
  CALLSCOPE_CHECK(writer_.write_block(format::BlockType::kSysEvents, tid, static_cast<uint32_t>(t.ready.size()),
                                      t.ready.front().mono_ns, payload, pid));
  t.ready.clear();
  return ok_status();
}

}  // namespace callscope::recorder
