#include "analysis/off_cpu.h"

#include <algorithm>
#include <utility>

#include "analysis/block_io.h"

namespace callscope::analysis {

extern const std::pair<int, const char*> kSyscallNames[];
extern const unsigned kSyscallNameCount;

char sleep_state_letter(uint64_t mask) {
  // include/trace/events/sched.h: 1 << (state index - 1); 0x100 (or, before
  // 4.14, a higher bit) is "preempted", which is still R.
  static constexpr char kLetters[] = "SDTtXZPI";
  for (unsigned i = 0; i < 8; ++i)
    if (mask & (uint64_t{1} << i)) return kLetters[i];
  return 'R';
}

std::string syscall_name(int64_t nr) {
  for (unsigned i = 0; i < kSyscallNameCount; ++i)
    if (kSyscallNames[i].first == nr) return kSyscallNames[i].second;
  return "syscall " + std::to_string(nr);
}

std::vector<std::pair<int64_t, std::string>> syscall_table() {
  std::vector<std::pair<int64_t, std::string>> out;
  for (unsigned i = 0; i < kSyscallNameCount; ++i) out.emplace_back(kSyscallNames[i].first, kSyscallNames[i].second);
  std::sort(out.begin(), out.end());
  return out;
}

int64_t syscall_number(const std::string& name) {
  for (unsigned i = 0; i < kSyscallNameCount; ++i)
    if (name == kSyscallNames[i].second) return kSyscallNames[i].first;
  return -1;
}

std::vector<OffCpu> off_cpu_stretches(const std::vector<format::SysEvent>& events, uint64_t end_tick,
                                      const std::function<uint64_t(uint64_t)>& to_tick) {
  std::vector<OffCpu> out;
  bool off = false;
  char state = 0;       // from the last sched_switch seen while on the CPU
  int64_t in_call = -1;  // the system call begun and not returned
  // The stretches since the last fault or system call: a major fault's
  // event comes once the page is in, after the waits it made. Those are
  // known to be outside any system call only where the trace has the
  // system calls, and to be the kernel's wait for a page where the thread
  // slept uninterruptibly (D).
  size_t since = 0;
  const bool calls_known = std::any_of(events.begin(), events.end(), [](const format::SysEvent& e) {
    return e.kind == format::SysKind::kSyscallEnter || e.kind == format::SysKind::kSyscallExit;
  });
  OffCpu cur;
  // The block requests the thread began, with their completions: one in
  // flight at a switch-out (begun before it, completed after) is what a
  // D wait waited for. One never seen complete is not taken to be.
  const std::vector<IoRequest> requests = block_io_requests(events);
  size_t next_request = 0;
  std::vector<const IoRequest*> in_flight;
  for (const format::SysEvent& e : events) {
    const uint64_t tick = to_tick(e.mono_ns);
    switch (e.kind) {
      case format::SysKind::kSleepState:
        state = sleep_state_letter(e.arg);
        break;
      case format::SysKind::kSyscallEnter:
        in_call = static_cast<int64_t>(e.arg);
        since = out.size();
        break;
      case format::SysKind::kSyscallExit:
        in_call = -1;
        since = out.size();
        break;
      case format::SysKind::kPageFault:
        if (calls_known && (static_cast<uint64_t>(e.value) & format::kFaultMajor) &&
            !(static_cast<uint64_t>(e.value) & format::kFaultInKernel))
          for (size_t i = since; i < out.size(); ++i)
            out[i].fault = !out[i].runnable && out[i].syscall < 0 && out[i].state == 'D';
        since = out.size();
        break;
      case format::SysKind::kSwitchOutBlocked:
      case format::SysKind::kSwitchOutRunnable:
        if (off) break;  // a second switch-out (records lost between): the first stands
        off = true;
        cur = OffCpu{};
        cur.start = tick;
        cur.runnable = e.kind == format::SysKind::kSwitchOutRunnable;
        cur.state = cur.runnable ? 0 : state == 'R' ? 0 : state;
        cur.syscall = cur.runnable ? -1 : in_call;
        for (; next_request < requests.size() && requests[next_request].start->mono_ns <= e.mono_ns; ++next_request)
          if (requests[next_request].done()) in_flight.push_back(&requests[next_request]);
        std::erase_if(in_flight, [&e](const IoRequest* r) { return r->done_ns <= e.mono_ns; });
        if (cur.state == 'D' && !in_flight.empty()) {
          cur.disk = true;
          cur.disk_dev = in_flight.back()->start->arg;
        }
        state = 0;
        break;
      case format::SysKind::kIoStart:
      case format::SysKind::kIoDone:
        break;
      case format::SysKind::kWakeup:
        if (off && !cur.woken) {
          cur.woken = true;
          cur.waker_tid = static_cast<uint32_t>(e.arg);
          cur.waker_pid = static_cast<uint32_t>(e.value);
          cur.woken_at = tick;
        }
        break;
      case format::SysKind::kSwitchIn:
        if (!off) break;
        off = false;
        cur.end = std::max(tick, cur.start);
        out.push_back(cur);
        break;
      case format::SysKind::kLost:
      case format::SysKind::kSample:
      case format::SysKind::kSampleCaller:
        break;
    }
  }
  if (off) {
    cur.end = std::max(end_tick, cur.start);
    out.push_back(cur);
  }
  return out;
}

std::string off_cpu_reason(const OffCpu& o, const std::function<std::string(uint64_t)>& device) {
  if (o.runnable) return "[runnable]";
  if (o.fault) return "[major fault]";
  if (o.disk) {
    const std::string disk = "disk " + (device ? device(o.disk_dev)
                                               : std::to_string(o.disk_dev >> 20) + ":" +
                                                     std::to_string(o.disk_dev & 0xfffff));
    return o.syscall >= 0 ? "[" + syscall_name(o.syscall) + ": " + disk + "]" : "[" + disk + "]";
  }
  if (o.syscall >= 0) return "[" + syscall_name(o.syscall) + (o.state == 'D' ? " D" : "") + "]";
  switch (o.state) {
    case 0: return "[blocked]";
    case 'S': return "[sleeping]";
    case 'D': return "[uninterruptible]";
    case 'T':
    case 't': return "[stopped]";
    default: return std::string("[blocked ") + o.state + "]";
  }
}

namespace {

// The operation of a request's kind.
const char* io_operation(uint64_t kind) {
  return kind & format::kIoWrite     ? "write"
         : kind & format::kIoDiscard ? "discard"
         : kind & format::kIoOther   ? "other"
         : kind & format::kIoFlush   ? "flush"
                                     : "read";
}

}  // namespace

std::string io_kind_name(uint64_t kind) {
  std::string s = io_operation(kind);
  if ((kind & format::kIoFlush) && (kind & (format::kIoWrite | format::kIoDiscard))) s += " flush";
  if (kind & format::kIoSync) s += " sync";
  if (kind & format::kIoMeta) s += " meta";
  if (kind & format::kIoFua) s += " fua";
  return s;
}

std::string io_reason(uint64_t kind, const std::string& device) {
  return std::string("[") + io_operation(kind) + " " + device + "]";
}

std::string fault_reason(uint64_t flags) {
  return std::string(flags & format::kFaultMajor ? "[major fault" : "[minor fault") +
         (flags & format::kFaultInKernel ? " in the kernel]" : "]");
}

}  // namespace callscope::analysis
