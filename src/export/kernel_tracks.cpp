#include "export/kernel_tracks.h"

#include <algorithm>

#include "analysis/block_io.h"
#include "analysis/off_cpu.h"

namespace callscope::exporter {
namespace {

constexpr size_t kMaxLanes = 256;  // Block I/O tracks of one thread

std::string state_name(const analysis::OffCpu& o, const format::TraceReader& trace) {
  if (o.runnable) return "Runnable";
  std::string s = o.state == 'S' ? "Sleeping" : o.state == 'D' ? "Uninterruptible" : o.state == 'T' ? "Stopped" : "Blocked";
  if (o.fault) return s + ": major fault";
  if (o.syscall >= 0) s += ": " + analysis::syscall_name(o.syscall);
  if (o.disk) s += (o.syscall >= 0 ? " (disk " : ": disk ") + trace.info().block_device(o.disk_dev) + (o.syscall >= 0 ? ")" : "");
  return s;
}

}  // namespace

Result<std::vector<KernelTrack>> kernel_tracks(format::TraceReader& trace, uint32_t thread,
                                               analysis::TickWindow window, FunctionIds& functions) {
  std::vector<KernelTrack> out;
  if (!trace.has_sys_events()) return out;
  CALLSCOPE_TRY(auto events, trace.sys_events(thread));
  if (events.empty()) return out;
  const format::ThreadRecord& r = trace.threads()[thread].record;
  const uint64_t lo = std::max(r.start_tick, window.from), hi = std::min(r.end_tick, window.to);
  if (hi < lo) return out;
  const auto tick_of = [&trace](uint64_t ns) { return trace.mono_to_tick(ns); };
  const auto cut = [&](KernelTrack& t, uint64_t from, uint64_t to, std::string name,
                       std::vector<KernelArg> args = {}) {
    from = std::max(from, lo);
    to = std::min(to, hi);
    if (to <= from) return;
    t.slices.push_back({from, to, std::move(name), std::move(args), false});
  };
  const auto instant = [&](KernelTrack& t, uint64_t at, std::string name, std::vector<KernelArg> args) {
    if (at < lo || at > hi) return;
    t.slices.push_back({at, at, std::move(name), std::move(args), true});
  };

  // The CPU state: running between the stretches off the CPU.
  if (trace.has_switches()) {
    KernelTrack t;
    t.kind = KernelTrack::kState;
    t.name = "CPU state";
    uint64_t at = lo;
    for (const analysis::OffCpu& o : analysis::off_cpu_stretches(events, r.end_tick, tick_of)) {
      cut(t, std::max(at, lo), o.start, "Running");
      at = std::max(at, o.start);
      std::vector<KernelArg> args;
      if (o.woken && o.waker_tid) args.push_back({"woken_by_tid", o.waker_tid});
      cut(t, at, o.end, state_name(o, trace), std::move(args));
      at = std::max(at, o.end);
    }
    cut(t, at, hi, "Running");
    if (!t.slices.empty()) out.push_back(std::move(t));
  }

  // System calls, from entry to return (one still open at the end: to the thread's end).
  KernelTrack calls;
  calls.kind = KernelTrack::kSyscalls;
  calls.name = "System calls";
  KernelTrack faults, samples;
  faults.kind = KernelTrack::kFaults;
  faults.name = "Page faults";
  samples.kind = KernelTrack::kSamples;
  samples.name = "CPU samples";
  const uint32_t process = r.process_index;
  const auto function = [&](uint64_t ip, uint64_t tick) {
    return functions.functions()[functions.id(process, ip, tick, false)].name;
  };
  int64_t in_call = -1;
  uint64_t call_from = 0;
  for (const format::SysEvent& e : events) {
    const uint64_t tick = tick_of(e.mono_ns);
    switch (e.kind) {
      case format::SysKind::kSyscallEnter:
        in_call = static_cast<int64_t>(e.arg);
        call_from = tick;
        break;
      case format::SysKind::kSyscallExit:
        if (in_call >= 0)
          cut(calls, call_from, std::max(tick, call_from + 1), analysis::syscall_name(in_call),
              {{"result", static_cast<uint64_t>(e.value), true}});
        in_call = -1;
        break;
      case format::SysKind::kPageFault: {
        const auto flags = static_cast<uint64_t>(e.value);
        std::string name = analysis::fault_reason(flags);
        if (!(flags & format::kFaultInKernel)) name += " in " + function(e.args[0], tick);
        instant(faults, tick, std::move(name), {{"address", e.arg}});
        break;
      }
      case format::SysKind::kSample: {
        const bool kernel = static_cast<uint64_t>(e.value) & 1;
        instant(samples, tick, kernel ? "[kernel]" : function(e.arg, tick), {});
        break;
      }
      default:
        break;
    }
  }
  if (in_call >= 0) cut(calls, call_from, r.end_tick, analysis::syscall_name(in_call));
  // Block I/O: each request (analysis/block_io.h) from its start to its
  // completion -- a moment when the trace has none (an instant would hide
  // it) --, in the first lane free at its start (one that began before the
  // window and ends in it starts at the window's edge).
  std::vector<KernelTrack> lanes;
  std::vector<uint64_t> lane_end;
  for (const analysis::IoRequest& q : analysis::block_io_requests(events)) {
    const uint64_t start = tick_of(q.start->mono_ns);
    const uint64_t end = q.done() ? std::max(tick_of(q.done_ns), start + 1) : start + 1;
    if (end <= lo || start > hi) continue;
    const uint64_t from = std::max(start, lo);
    size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > from) ++lane;
    if (lane == kMaxLanes) continue;  // (so many in flight at once: past the tracks shown)
    if (lane == lane_end.size()) {
      lane_end.push_back(0);
      KernelTrack t;
      t.kind = KernelTrack::kIo;
      t.lane = static_cast<uint32_t>(lane);
      t.name = lane ? "Block I/O " + std::to_string(lane + 1) : "Block I/O";
      lanes.push_back(std::move(t));
    }
    const size_t before = lanes[lane].slices.size();
    std::string device = trace.info().block_device(q.start->arg);
    if (!q.done()) device += ", completion not seen";
    std::vector<KernelArg> args = {{"bytes", q.start->args[1]}, {"sector", q.start->args[0]}};
    if (q.error) args.push_back({"error", static_cast<uint64_t>(q.error), true});
    cut(lanes[lane], from, end, analysis::io_reason(static_cast<uint64_t>(q.start->value), device), std::move(args));
    if (lanes[lane].slices.size() > before) lane_end[lane] = lanes[lane].slices.back().to;
  }
  for (KernelTrack* t : {&calls, &faults, &samples})
    if (!t->slices.empty()) out.push_back(std::move(*t));
  for (KernelTrack& t : lanes)
    if (!t.slices.empty()) out.push_back(std::move(t));
  return out;
}

}  // namespace callscope::exporter
