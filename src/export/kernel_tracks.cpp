#include "export/kernel_tracks.h"

#include <algorithm>

#include "analysis/off_cpu.h"

namespace callscope::exporter {
namespace {

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
  // Block I/O, each request in the first lane free at its start.
  std::vector<KernelTrack> lanes;
  std::vector<uint64_t> lane_end;
  std::vector<bool> lane_busy;  // a request in it not yet seen complete
  struct Open {
    uint64_t dev, sector, from;
    size_t lane, slice;
  };
  std::vector<Open> open_io;
  KernelTrack faults, samples;
  faults.kind = KernelTrack::kFaults;
  faults.name = "Page faults";
  samples.kind = KernelTrack::kSamples;
  samples.name = "CPU samples";
  const uint32_t process = r.process_index;
  const auto function = [&](uint64_t ip, uint64_t tick) {
    return functions.functions()[functions.id(process, ip, tick, false)].name;
  };
  // A request whose completion the trace does not have: says so, and
  // frees its lane.
  const auto unseen = [&](const Open& o) {
    std::string& name = lanes[o.lane].slices[o.slice].name;
    name.insert(name.size() - 1, ", completion not seen");
    lane_busy[o.lane] = false;
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
      case format::SysKind::kIoStart: {
        // (completions lost: the oldest stops holding its lane)
        if (open_io.size() >= 256) {
          unseen(open_io.front());
          open_io.erase(open_io.begin());
        }
        size_t lane = 0;
        while (lane < lane_end.size() && (lane_busy[lane] || lane_end[lane] > tick)) ++lane;
        if (lane == lane_end.size()) {
          lane_end.push_back(0);
          lane_busy.push_back(false);
          KernelTrack t;
          t.kind = KernelTrack::kIo;
          t.lane = static_cast<uint32_t>(lane);
          t.name = lane ? "Block I/O " + std::to_string(lane + 1) : "Block I/O";
          lanes.push_back(std::move(t));
        }
        // Until its completion; not seen, a moment (an instant would hide it).
        lane_end[lane] = tick + 1;
        const auto kind = static_cast<uint64_t>(e.value);
        std::vector<KernelArg> args = {{"bytes", e.args[1]}, {"sector", e.args[0]}};
        const size_t before = lanes[lane].slices.size();
        cut(lanes[lane], tick, tick + 1, analysis::io_reason(kind, trace.info().block_device(e.arg)), std::move(args));
        if (lanes[lane].slices.size() > before) {
          open_io.push_back({e.arg, e.args[0], tick, lane, before});
          lane_busy[lane] = true;
        }
        break;
      }
      case format::SysKind::kIoDone:
        for (auto it = open_io.begin(); it != open_io.end(); ++it) {
          if (it->dev != e.arg || it->sector != e.args[0]) continue;
          KernelSlice& s = lanes[it->lane].slices[it->slice];
          s.to = std::clamp(tick, s.from + 1, std::max(hi, s.from + 1));
          lane_end[it->lane] = std::max(lane_end[it->lane], s.to);
          lane_busy[it->lane] = false;
          if (e.value) s.args.push_back({"error", static_cast<uint64_t>(e.value), true});
          open_io.erase(it);
          break;
        }
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
  for (const Open& o : open_io) unseen(o);
  for (KernelTrack* t : {&calls, &faults, &samples})
    if (!t->slices.empty()) out.push_back(std::move(*t));
  for (KernelTrack& t : lanes)
    if (!t.slices.empty()) out.push_back(std::move(t));
  return out;
}

}  // namespace callscope::exporter
