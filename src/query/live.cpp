// The trace of a query while the program runs (live.h).
#include "query/live.h"

#include <time.h>

#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "format/finalize.h"
#include "format/raw_session.h"

namespace callscope::query {
namespace {

std::string dir_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

uint64_t clock_ns(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

void LiveTrace::begin(std::string session, format::ClockKind clock, uint64_t origin, double ticks_per_ns) {
  session_ = std::move(session);
  clock_ = clock;
  origin_ = origin;
  ticks_per_ns_ = ticks_per_ns;
  format::FileHeader h{};
  std::memcpy(h.magic, format::kTraceMagic, sizeof h.magic);
  h.version_major = format::kTraceVersionMajor;
  h.version_minor = format::kTraceVersionMinor;
  h.header_size = sizeof h;
  h.clock = static_cast<uint32_t>(clock);
  h.ticks_per_ns = ticks_per_ns;
  format::TraceInfo info;
  // walltimestamp: the wall clock at the origin, as near as two reads get;
  // and the monotonic clock's, which the kernel's events are on.
  const uint64_t since = static_cast<uint64_t>(static_cast<double>(now_tick()) / ticks_per_ns);
  info.record.start_realtime_ns = clock_ns(CLOCK_REALTIME) - since;
  h.origin_realtime_ns = info.record.start_realtime_ns;
  h.origin_mono_ns = clock_ns(CLOCK_MONOTONIC) - since;
  trace_ = format::TraceReader::growing(h, info);
}

uint64_t LiveTrace::now_tick() const { return format::ticks_since(clock_, origin_); }

void LiveTrace::resync_mono() {
  const uint64_t mono = clock_ns(CLOCK_MONOTONIC);
  const ClockPair now{mono, now_tick()};
  if (mono_rate_ == 0) mono_first_ = now;
  mono_last_ = now;
  // (50 ms at least between the two: a rate from less is no better than
  // the start's)
  mono_rate_ = now.mono > mono_first_.mono + 50'000'000 && now.tick > mono_first_.tick
                   ? static_cast<double>(now.tick - mono_first_.tick) / static_cast<double>(now.mono - mono_first_.mono)
                   : ticks_per_ns_;
}

uint64_t LiveTrace::mono_tick(uint64_t mono_ns) const {
  if (mono_rate_ == 0) return trace_->mono_to_tick(mono_ns);
  const double t = static_cast<double>(mono_last_.tick) +
                   static_cast<double>(static_cast<int64_t>(mono_ns - mono_last_.mono)) * mono_rate_;
  if (!(t > 0)) return 0;
  if (!(t < 18446744073709551616.0)) return UINT64_MAX;
  return static_cast<uint64_t>(t);
}

void LiveTrace::deliver(format::LiveDelivery&& d) {
  size_t n = 0;
  for (const auto& [index, events] : d.events) n += events.size();
  std::unique_lock<std::mutex> lk(m_);
  if (std::this_thread::get_id() != consumer_)
    cv_.wait(lk, [&] { return released_ || queued_events_ < kMaxQueued || consumer_ != std::thread::id(); });
  queued_events_ += n;
  queue_.push_back(std::move(d));
  cv_.notify_all();
}

bool LiveTrace::reuse(format::EventColumns& into) {
  std::lock_guard<std::mutex> lk(m_);
  if (pool_.empty()) return false;
  into = std::move(pool_.back());
  pool_.pop_back();
  return true;
}

void LiveTrace::give_back(std::vector<format::EventColumns>&& spent) {
  std::lock_guard<std::mutex> lk(m_);
  for (format::EventColumns& c : spent) {
    if (pool_.size() >= 256) break;  // more than are ever in flight but for thousands of threads
    c.clear();
    pool_.push_back(std::move(c));
  }
  spent.clear();
}

void LiveTrace::consume_here() {
  std::lock_guard<std::mutex> lk(m_);
  consumer_ = std::this_thread::get_id();
  cv_.notify_all();
}

void LiveTrace::release() {
  std::lock_guard<std::mutex> lk(m_);
  released_ = true;
  cv_.notify_all();
}

std::vector<format::LiveDelivery> LiveTrace::take(std::chrono::nanoseconds timeout) {
  std::unique_lock<std::mutex> lk(m_);
  cv_.wait_for(lk, timeout, [&] { return !queue_.empty(); });
  queued_events_ = 0;
  cv_.notify_all();
  return std::exchange(queue_, {});
}

bool LiveTrace::has_process(int64_t pid) const {
  for (const format::ProcessInfo& p : trace_->processes())
    if (p.record.pid == pid) return true;
  return false;
}

// Processes and modules of the raw session the trace does not list yet,
// and processes that have ended since.
bool LiveTrace::read_session() {
  if (session_.empty()) return false;
  auto s = format::read_raw_session(session_);
  if (!s) return false;
  auto& procs = trace_->mutable_processes();
  auto& mods = trace_->mutable_modules();
  bool grew = false;
  auto to_trace = [&](const format::RawProcess& p, uint64_t raw_tick) {
    return raw_tick + (p.start.base_tick > origin_ ? p.start.base_tick - origin_ : 0);
  };
  for (const format::RawProcess& p : s->processes) {
    if (!p.has_start) continue;  // not started yet
    const std::string name = dir_name(p.dir);
    auto [it, fresh] = process_of_dir_.try_emplace(name, static_cast<uint32_t>(procs.size()));
    const uint32_t pi = it->second;
    if (fresh) {
      grew = true;
      format::ProcessInfo info;
      info.record.pid = p.pid;
      info.record.ppid = p.start.ppid;
      info.record.incarnation = p.incarnation;
      info.record.parent_index = -1;
      if (p.start.flags & format::kRawProcessForked) {
        auto parent = process_of_dir_.find(std::to_string(p.start.ppid) + "." + std::to_string(p.start.parent_n));
        if (parent != process_of_dir_.end()) info.record.parent_index = static_cast<int32_t>(parent->second);
      }
      info.record.start_tick = to_trace(p, 0);
      info.exe = p.exe;
      info.argv = format::split_nul(p.cmdline);
      procs.push_back(std::move(info));
      // The incarnation before it ended by exec.
      if (p.incarnation > 0) {
        auto before = process_of_dir_.find(std::to_string(p.pid) + "." + std::to_string(p.incarnation - 1));
        if (before != process_of_dir_.end() && procs[before->second].record.how == 0) {
          procs[before->second].record.how = static_cast<uint32_t>(format::ExitHow::kExec);
          procs[before->second].record.end_tick = to_trace(p, 0);
        }
      }
    }
    // Modules loaded and unloaded since the last reading.
    size_t& taken = modules_read_[pi];
    for (; taken < p.modules.size(); ++taken) {
      const format::RawModuleEntry& m = p.modules[taken];
      grew = true;
      if (m.record.flags & format::kRawModuleUnload) {
        for (format::ModuleInfo& mi : mods) {
          if (mi.record.process_index == pi && mi.record.load_bias == m.record.load_bias &&
              mi.record.low == m.record.low && !(mi.record.flags & format::kModuleUnloaded)) {
            mi.record.flags |= format::kModuleUnloaded;
            mi.record.unload_tick = to_trace(p, m.record.tick);
          }
        }
        continue;
      }
      format::ModuleInfo mi;
      mi.record.process_index = pi;
      mi.record.load_bias = m.record.load_bias;
      mi.record.low = m.record.low;
      mi.record.high = m.record.high;
      mi.record.load_tick = to_trace(p, m.record.tick);
      mi.path = m.path;
      mi.build_id = format::hex_string(m.record.build_id, std::min<size_t>(m.record.build_id_len, sizeof m.record.build_id));
      mods.push_back(std::move(mi));
    }
    // An exit: once every thread of the process has ended (its events are
    // all in), so that proc:::exit comes after them.
    format::ProcessRecord& pr = procs[pi].record;
    if (pr.how != 0) continue;
    // How it ended: as the recorder reaped it (a process killed by a signal
    // wrote no exit of its own), else as the runtime saw it.
    const format::RawChildStatus* reaped = nullptr;
    for (const format::RawChildStatus& cs : s->child_statuses)
      if (cs.pid == p.pid) reaped = &cs;
    const bool later = std::any_of(s->processes.begin(), s->processes.end(), [&](const format::RawProcess& q) {
      return q.pid == p.pid && q.incarnation > p.incarnation;
    });
    if (later || (!reaped && !p.exit)) continue;
    // Every thread file of the process delivered, and ended.
    size_t known = 0;
    bool all_ended = true;
    uint64_t last = p.exit ? to_trace(p, p.exit->tick) : 0;
    const auto& threads = trace_->threads();
    for (uint32_t t = 0; t < threads.size(); ++t) {
      if (threads[t].record.process_index != pi) continue;
      ++known;
      all_ended = all_ended && t < thread_ended_.size() && thread_ended_[t];
      last = std::max(last, threads[t].record.end_tick);
    }
    if (!all_ended || known < p.thread_files.size()) continue;
    if (reaped) {
      pr.how = reaped->how;
      pr.code = reaped->code;
      pr.signal = reaped->signal;
      pr.core_dumped = reaped->core_dumped;
    } else {
      pr.how = p.exit->how;
      pr.code = p.exit->code;
      pr.signal = p.exit->signal;
      pr.core_dumped = p.exit->core_dumped;
    }
    pr.end_tick = last;
    grew = true;
  }
  return grew;
}

bool LiveTrace::meta_grew() {
  if (session_.empty()) return false;
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(session_, ec)) {
    std::error_code ec2;
    const auto size = std::filesystem::file_size(e.path() / "meta", ec2);
    if (!ec2) bytes += size;
  }
  if (bytes == meta_bytes_) return false;
  meta_bytes_ = bytes;
  return true;
}

bool LiveTrace::update(const std::vector<format::LiveDelivery>& deliveries, bool reread) {
  bool unknown = false;
  for (const format::LiveDelivery& d : deliveries)
    for (const format::LiveThreadStart& t : d.threads) unknown = unknown || !process_of_dir_.count(t.process);
  // A module's record is written before any of its code runs: events that
  // came with the meta files grown may call into it, and are named only
  // once it is read (without this, a library loaded since the last periodic
  // reading was shown as raw addresses).
  const bool events = std::any_of(deliveries.begin(), deliveries.end(),
                                  [](const format::LiveDelivery& d) { return !d.threads.empty() || !d.events.empty(); });
  bool grew = (reread || unknown || (events && meta_grew())) && read_session();
  auto& threads = trace_->mutable_threads();
  for (const format::LiveDelivery& d : deliveries) {
    for (const format::LiveThreadStart& t : d.threads) {
      if (threads.size() <= t.index) {
        threads.resize(t.index + 1);
        thread_ended_.resize(t.index + 1, false);
      }
      format::ThreadInfo& ti = threads[t.index];
      auto p = process_of_dir_.find(t.process);
      ti.record.process_index = p == process_of_dir_.end() ? 0 : p->second;
      ti.record.tid = t.tid;
      ti.record.start_tick = t.start_tick;
      if (t.main) ti.record.flags |= format::kThreadMain;
      // (the directory is "<pid>.<n>": the pid, whether its process is read yet or not)
      const auto pid = static_cast<uint32_t>(std::strtoul(t.process.c_str(), nullptr, 10));
      auto& same = by_tid_[{pid, t.tid}];
      same.emplace_back(t.start_tick, t.index);
      grew = true;
    }
    for (const auto& [index, end] : d.ended) {
      if (index >= threads.size()) continue;
      threads[index].record.end_tick = std::max(end, threads[index].record.start_tick);
      thread_ended_[index] = true;
      grew = true;
    }
  }
  // A process whose last thread has just ended may have exited.
  bool ended = false;
  for (const format::LiveDelivery& d : deliveries) ended = ended || !d.ended.empty() || d.last;
  if (ended) grew = read_session() || grew;
  return grew;
}

std::optional<uint32_t> LiveTrace::thread_of(uint32_t pid, uint32_t tid, uint64_t tick) const {
  auto it = by_tid_.find({pid, tid});
  if (it == by_tid_.end()) return std::nullopt;
  // (the image that had begun by then, of a pid that exec'd)
  const auto& same = it->second;
  for (auto t = same.rbegin(); t != same.rend(); ++t)
    if (t->first <= tick) return t->second;
  return same.front().second;
}

std::optional<uint32_t> LiveTrace::kernel_only_thread(uint32_t pid, uint32_t tid, uint64_t tick) {
  const auto& procs = trace_->processes();
  // (the image of that pid whose life holds the tick: the last begun by then)
  int64_t process = -1;
  for (size_t i = 0; i < procs.size(); ++i)
    if (procs[i].record.pid == pid && (process < 0 || procs[i].record.start_tick <= tick)) process = static_cast<int64_t>(i);
  if (process < 0) return std::nullopt;
  auto& threads = trace_->mutable_threads();
  for (const format::ThreadInfo& t : threads)
    if (t.record.process_index == static_cast<uint32_t>(process) && !(t.record.flags & format::kThreadKernelOnly))
      return std::nullopt;
  const auto index = static_cast<uint32_t>(threads.size());
  format::ThreadInfo t;
  t.record.tid = tid;
  t.record.process_index = static_cast<uint32_t>(process);
  t.record.start_tick = t.record.end_tick = tick;
  t.record.flags = format::kThreadKernelOnly | (tid == pid ? format::kThreadMain : 0);
  const std::string& exe = procs[static_cast<size_t>(process)].exe;
  t.name = exe.substr(exe.find_last_of('/') == std::string::npos ? 0 : exe.find_last_of('/') + 1);
  threads.push_back(std::move(t));
  thread_ended_.push_back(false);
  by_tid_[{pid, tid}].emplace_back(tick, index);
  return index;
}

}  // namespace callscope::query
