// The probes of the kernel's events over a recording (kernel_probes.h).
#include "query/kernel_probes.h"

#include <algorithm>

#include "analysis/off_cpu.h"
#include "format/trace_reader.h"
#include "query/proc_events.h"
#include "query/translators.h"

namespace callscope::query {

namespace {

using format::SysKind;

template <size_t N>
bool any_enabled(const std::vector<const ProbeInfo*> (&probes)[N]) {
  return std::any_of(std::begin(probes), std::end(probes), [](const auto& v) { return !v.empty(); });
}

bool is_switch(SysKind k) {
  return k == SysKind::kSwitchIn || k == SysKind::kSwitchOutBlocked || k == SysKind::kSwitchOutRunnable;
}

// A system call's return value as D's syscall provider gives it: the C
// library's (-1 on failure), and the error in errno.
std::pair<int64_t, int32_t> syscall_result(int64_t raw) {
  if (raw < 0 && raw >= -4095) return {-1, static_cast<int32_t>(-raw)};
  return {raw, 0};
}

}  // namespace

void KernelProbes::enable(const Probe& p, const ProbeInfo* info) {
  switch (p.kind) {
    case ProbeKind::kSyscallEntry:
    case ProbeKind::kSyscallReturn: {
      auto& by_nr = p.kind == ProbeKind::kSyscallEntry ? syscall_entry_ : syscall_return_;
      const auto nr = static_cast<size_t>(p.syscall);
      if (by_nr.size() <= nr) by_nr.resize(nr + 1);
      by_nr[nr].push_back(info);
      break;
    }
    case ProbeKind::kSched: sched_[static_cast<int>(p.sched)].push_back(info); break;
    case ProbeKind::kFault: fault_[static_cast<int>(p.fault)].push_back(info); break;
    case ProbeKind::kIo: io_[p.io_done ? 1 : 0].push_back(info); break;
    case ProbeKind::kProfile: profile_.push_back(info); break;
    case ProbeKind::kProc:
      if (p.proc == ProcEvent::kExecFailure) {
        exec_failure_.push_back(info);
        execve_ = analysis::syscall_number("execve");
        execveat_ = analysis::syscall_number("execveat");
      }
      break;
    default: break;
  }
}

void KernelProbes::choose(bool profile, bool switches_recorded) {
  keep_calls_ = !syscall_entry_.empty() || !syscall_return_.empty() || !exec_failure_.empty();
  keep_faults_ = any_enabled(fault_);
  keep_io_ = any_enabled(io_);
  profile_on_cpu_ = profile && switches_recorded;
  keep_switches_ = any_enabled(sched_) || profile_on_cpu_ || vtime_;
}

bool KernelProbes::wanted(SysKind k) const {
  // errno at a syscall probe is the thread's last call's: every exit counts.
  switch (k) {
    case SysKind::kSyscallEnter:
    case SysKind::kSyscallExit: return keep_calls_;
    case SysKind::kWakeup: return keep_switches_;
    case SysKind::kPageFault: return keep_faults_;
    case SysKind::kIoStart:
    case SysKind::kIoDone: return keep_io_;
    case SysKind::kSample:
    case SysKind::kSampleCaller: return !profile_.empty();
    default: return is_switch(k) && keep_switches_;
  }
}

void KernelProbes::add_thread(uint32_t i) {
  if (state_.size() <= i) state_.resize(i + 1);
  const auto& r = trace_->threads()[i].record;
  state_[i].pid = r.process_index < trace_->processes().size() ? trace_->process(r.process_index).record.pid : 0;
  state_[i].since = r.start_tick;
  by_tid_[r.tid] = i;
}

Status KernelProbes::load(format::TraceReader& trace, bool profile) {
  trace_ = &trace;
  choose(profile, trace.has_switches());
  if (!keep_calls_ && !keep_switches_ && !keep_faults_ && !keep_io_) return ok_status();
  Status status = ok_status();
  for (uint32_t i = 0; i < trace.threads().size(); ++i) {
    add_thread(i);
    auto kernel = trace.sys_events(i);
    if (!kernel) {
      if (status) status = kernel.error();
      continue;
    }
    // Off a CPU until its first switch in, if that comes before any switch out.
    for (const format::SysEvent& e : *kernel)
      if (is_switch(e.kind)) {
        state_[i].on_cpu = e.kind != SysKind::kSwitchIn;
        break;
      }
    for (const format::SysEvent& e : *kernel)
      if (wanted(e.kind)) events_.push_back({event_key(trace.mono_to_tick(e.mono_ns)), i, e});
  }
  std::stable_sort(events_.begin(), events_.end(), [](const Item& a, const Item& b) { return a.key < b.key; });
  // profile-N at the samples, where the trace has them.
  for (const Item& item : events_)
    if (item.e.kind == SysKind::kSample) {
      profile_from_samples_ = true;
      const auto period = static_cast<double>(static_cast<uint64_t>(item.e.value) >> 1);
      if (period > 0) samples_hz_ = 1e9 / period;
      break;
    }
  return status;
}

uint64_t KernelProbes::vtime_ticks(uint32_t thread, uint64_t tick, uint64_t start) const {
  if (!added(thread)) return tick > start ? tick - start : 0;
  const ThreadState& t = state_[thread];
  return t.oncpu_ticks + (t.on_cpu && tick > t.since ? tick - t.since : 0);
}

void KernelProbes::begin_live(const format::TraceReader& trace, bool profile, bool switches, bool samples) {
  trace_ = &trace;
  live_ = true;
  choose(profile, switches);
  profile_from_samples_ = profile && samples;
}

void KernelProbes::add_live(uint32_t thread, const std::vector<format::SysEvent>& events,
                            const std::function<uint64_t(uint64_t)>& tick_of) {
  if (!added(thread)) add_thread(thread);
  // What has fired goes, once it is most of the vector (moving the rest
  // down each time cost more than firing them); the rest, and these, in
  // time order: each thread's come in order, so they merge in (stable: a
  // tick's events keep the order they came in).
  if (next_ > events_.size() / 2) {
    events_.erase(events_.begin(), events_.begin() + static_cast<std::ptrdiff_t>(next_));
    next_ = 0;
  }
  const size_t before = events_.size();
  for (const format::SysEvent& e : events)
    if (wanted(e.kind)) events_.push_back({event_key(tick_of(e.mono_ns)), thread, e});
  if (events_.size() == before) return;
  const auto by_key = [](const Item& a, const Item& b) { return a.key < b.key; };
  const auto mid = events_.begin() + static_cast<std::ptrdiff_t>(before);
  if (!std::is_sorted(mid, events_.end(), by_key)) std::stable_sort(mid, events_.end(), by_key);
  std::inplace_merge(events_.begin() + static_cast<std::ptrdiff_t>(next_), mid, events_.end(), by_key);
}

void KernelProbes::fire_all(Host& host, const std::vector<const ProbeInfo*>& probes, uint32_t thread, uint64_t tick,
                            const std::function<void(Firing&)>& fill) {
  for (const ProbeInfo* p : probes) {
    if (host.tally_only(p)) continue;
    Firing f = host.in_thread(thread, p, tick);
    fill(f);
    host.fire(f);
    if (host.stopped()) return;
  }
}

void KernelProbes::fire_next(Host& host) {
  const Item& item = events_[next_++];
  ThreadState& t = state_[item.thread];
  const format::SysEvent& e = item.e;
  const uint64_t tick = item.key / 3;
  switch (e.kind) {
    case SysKind::kSyscallEnter:
      if (e.arg < syscall_entry_.size())
        fire_all(host, syscall_entry_[e.arg], item.thread, tick, [&](Firing& f) {
          for (int a = 0; a < 6; ++a) f.arg[a] = static_cast<int64_t>(e.args[a]);
          f.errno_value = t.last_errno;
        });
      break;
    case SysKind::kSyscallExit: {
      const auto [ret, err] = syscall_result(e.value);
      t.last_errno = err;
      // proc:::exec-failure, in the thread whose exec failed: arg0 the error.
      if (err && !exec_failure_.empty() && (static_cast<int64_t>(e.arg) == execve_ || static_cast<int64_t>(e.arg) == execveat_))
        fire_all(host, exec_failure_, item.thread, tick, [err = err](Firing& f) { f.arg[0] = err; });
      if (host.stopped()) break;
      if (e.arg < syscall_return_.size())
        fire_all(host, syscall_return_[e.arg], item.thread, tick, [&, ret = ret](Firing& f) {
          f.arg[0] = f.arg[1] = ret;
          f.errno_value = t.last_errno;
        });
      break;
    }
    case SysKind::kSwitchIn:
    case SysKind::kSwitchOutBlocked:
    case SysKind::kSwitchOutRunnable: {
      const auto cpu = static_cast<int32_t>(e.arg);
      // The state lwpsinfo_t's pr_sname gives: on the CPU, or the one it leaves it in.
      const char state = e.kind == SysKind::kSwitchIn ? 'O' : e.kind == SysKind::kSwitchOutBlocked ? 'S' : 'R';
      if (t.on_cpu && e.kind != SysKind::kSwitchIn) t.oncpu_ticks += tick > t.since ? tick - t.since : 0;
      if (!t.on_cpu && e.kind == SysKind::kSwitchIn) t.since = tick;
      t.on_cpu = e.kind == SysKind::kSwitchIn;
      auto on = [&](SchedEvent what) {
        fire_all(host, sched_[static_cast<int>(what)], item.thread, tick, [&](Firing& f) {
          f.cpu = cpu;
          f.sname = state;
        });
      };
      if (e.kind == SysKind::kSwitchIn) {
        on(SchedEvent::kOnCpu);
        break;
      }
      on(e.kind == SysKind::kSwitchOutBlocked ? SchedEvent::kSleep : SchedEvent::kPreempt);
      if (!host.stopped()) on(SchedEvent::kOffCpu);
      break;
    }
    case SysKind::kWakeup: fire_wakeup(host, item, tick); break;
    case SysKind::kPageFault: {
      // arg0 the address, arg1 the instruction, arg2 1 when taken in the
      // kernel (a system call touching the program's memory).
      const bool major = (e.value & format::kFaultMajor) != 0;
      auto fill = [&](Firing& f) {
        f.arg[0] = static_cast<int64_t>(e.arg);
        f.arg[1] = static_cast<int64_t>(e.args[0]);
        f.arg[2] = (e.value & format::kFaultInKernel) ? 1 : 0;
      };
      fire_all(host, fault_[static_cast<int>(FaultKind::kAny)], item.thread, tick, fill);
      if (!host.stopped())
        fire_all(host, fault_[static_cast<int>(major ? FaultKind::kMajor : FaultKind::kMinor)], item.thread, tick, fill);
      break;
    }
    case SysKind::kIoStart:
    case SysKind::kIoDone: fire_io(host, item, tick); break;
    case SysKind::kSample: fire_sample(host, item, tick); break;
    default: break;  // (a sample's caller alone: its sample's firing took it)
  }
}

// profile-N at a CPU sample of the thread: arg0 the instruction if the
// kernel's, arg1 if the program's (0 otherwise), as dtrace's; ustack() the
// thread's calls under way, or, in a thread with none (code without
// hooks), the sample's unwound frames.
void KernelProbes::fire_sample(Host& host, const Item& item, uint64_t tick) {
  std::vector<uint64_t> callers;  // innermost first
  while (next_ < events_.size() && events_[next_].thread == item.thread &&
         events_[next_].e.kind == SysKind::kSampleCaller)
    callers.push_back(events_[next_++].e.arg);
  if (!profile_from_samples_) return;
  const bool in_kernel = (static_cast<uint64_t>(item.e.value) & 1) != 0;
  sample_stack_.clear();  // outermost first
  for (auto c = callers.rbegin(); c != callers.rend(); ++c)
    if (*c) sample_stack_.push_back(*c);
  if (!in_kernel) sample_stack_.push_back(item.e.arg);
  fire_all(host, profile_, item.thread, tick, [&](Firing& f) {
    f.arg[0] = in_kernel ? static_cast<int64_t>(item.e.arg) : 0;
    f.arg[1] = in_kernel ? 0 : static_cast<int64_t>(item.e.arg);
    if (f.nframes == 0) {
      f.frames = sample_stack_.data();
      f.nframes = static_cast<uint32_t>(sample_stack_.size());
    }
  });
}

// It fires in the waker, as dtrace's; arg0 and arg1 name the woken thread
// and its process, args[0]/args[1] describe them. A waker outside the
// trace (the kernel, another program) has its pid and tid, no name.
void KernelProbes::fire_wakeup(Host& host, const Item& item, uint64_t tick) {
  const auto& probes = sched_[static_cast<int>(SchedEvent::kWakeup)];
  if (probes.empty()) return;
  const format::SysEvent& e = item.e;
  const Firing woken_thread = host.in_thread(item.thread, nullptr, tick);
  FiringArgs woken;
  woken.woken = {woken_thread.pid, woken_thread.ppid, woken_thread.tid, woken_thread.execname, woken_thread.psargs};
  auto waker = by_tid_.find(static_cast<int64_t>(e.arg));
  const bool traced = waker != by_tid_.end() && state_[waker->second].pid == e.value;
  for (const ProbeInfo* p : probes) {
    Firing f;
    if (traced) {
      f = host.in_thread(waker->second, p, tick);
    } else {
      f = host.outside_threads(p, tick);
      f.pid = e.value;
      f.tid = static_cast<int64_t>(e.arg);
      f.execname = host.intern_name("");
    }
    f.arg[0] = woken_thread.tid;
    f.arg[1] = woken_thread.pid;
    f.structs = &woken;
    host.fire(f);
    if (host.stopped()) return;
  }
}

// io:::start and done, with bufinfo_t and devinfo_t (translators.h); done
// fires in the thread that began the request, with its bytes and flags.
void KernelProbes::fire_io(Host& host, const Item& item, uint64_t tick) {
  const format::SysEvent& e = item.e;
  ThreadState& t = state_[item.thread];
  FiringArgs request;
  FiringArgs::Io& io = request.io;
  io.dev = e.arg;
  io.sector = e.args[0];
  io.unknown = host.intern_name("<unknown>");
  auto [name, fresh] = device_names_.try_emplace(e.arg, 0);
  if (fresh) {
    // Live, this machine's name for it (a trace's info names its devices
    // once written).
    const std::string here = live_ && e.arg <= 0xffffffffu ? format::block_device_name(static_cast<uint32_t>(e.arg)) : "";
    name->second = host.intern_name(here.empty() ? trace_->info().block_device(e.arg) : here);
  }
  io.dev_name = name->second;
  const auto key = std::pair{e.arg, e.args[0]};
  if (e.kind == SysKind::kIoStart) {
    io.bytes = e.args[1];
    // A flush alone, a discard: neither a read nor a write (a discard's
    // b_bcount is what it discards).
    const format::IoData data = format::io_data(static_cast<uint64_t>(e.value));
    io.flags = data == format::IoData::kWrite ? kBufWrite : data == format::IoData::kRead ? kBufRead : 0;
    t.io_pending[key] = {io.bytes, io.flags};
  } else {
    if (auto it = t.io_pending.find(key); it != t.io_pending.end()) {
      io.bytes = it->second.first;
      io.flags = it->second.second;
      t.io_pending.erase(it);
    }
    io.error = e.value < 0 ? -e.value : e.value;  // bufinfo_t's b_error is an errno
    io.flags |= kBufDone | (e.value ? kBufError : 0);
  }
  fire_all(host, io_[e.kind == SysKind::kIoDone ? 1 : 0], item.thread, tick,
           [&request](Firing& f) { f.structs = &request; });
}

}  // namespace callscope::query
