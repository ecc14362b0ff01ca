// TraceReader: the kernel's events of a thread (kSysEvents, trace 1.9).
#include <algorithm>
#include <map>

#include "format/trace_reader.h"

namespace callscope::format {

bool TraceReader::has_sys_events() const {
  return std::any_of(blocks_.begin(), blocks_.end(),
                     [](const BlockRef& b) { return b.header.type == static_cast<uint16_t>(BlockType::kSysEvents); });
}

bool TraceReader::has_switches() const {
  return has_sys_events() && !(info_.record.flags & kInfoNoSwitches);
}

bool TraceReader::has_event_group(uint32_t group) {
  if (info_.record.flags & kInfoEventGroups) return (info_.record.flags & group) != 0;
  auto of_group = [group](SysKind k) {
    switch (k) {
      case SysKind::kSyscallEnter: case SysKind::kSyscallExit: return group == kInfoSyscalls;
      case SysKind::kPageFault: return group == kInfoFaults;
      case SysKind::kIoStart: case SysKind::kIoDone: return group == kInfoIo;
      default: return false;
    }
  };
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kSysEvents)) continue;
    auto p = payload(b);
    if (!p) continue;  // sys_events() says what is wrong with it
    std::vector<SysEvent> events;
    (void)decode_sys_events(*p, b.header.count, b.header.first_tick, events);
    if (std::any_of(events.begin(), events.end(), [&](const SysEvent& e) { return of_group(e.kind); })) return true;
  }
  return false;
}

Result<std::vector<SysEvent>> TraceReader::sys_events(uint32_t thread) {
  std::vector<SysEvent> out;
  if (thread >= threads_.size()) return out;
  const ThreadRecord& t = threads_[thread].record;
  const uint32_t pid = process(t.process_index).record.pid;
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kSysEvents) || b.header.aux0 != t.tid ||
        b.header.aux1 != pid)
      continue;
    auto p = payload(b);
    if (!p) {
      problem(b, p.error().message());
      continue;
    }
    if (auto st = decode_sys_events(*p, b.header.count, b.header.first_tick, out); !st)
      problem(b, st.error().message());
  }
  std::stable_sort(out.begin(), out.end(), [](const SysEvent& a, const SysEvent& b) { return a.mono_ns < b.mono_ns; });
  // A pid that exec'd is several images, each its own process record: the
  // kernel's events of the tid go to the image whose life holds them.
  const ProcessRecord& mine = process(t.process_index).record;
  uint64_t from = 0, to = ~uint64_t{0};
  for (const ProcessInfo& other : processes_) {
    if (&other.record == &mine || other.record.pid != pid) continue;
    if (other.record.start_tick > mine.start_tick) to = std::min(to, other.record.start_tick);
    else from = mine.start_tick;  // an earlier image: ours begins at our start
  }
  if (from != 0 || to != ~uint64_t{0})
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](const SysEvent& e) {
                               const uint64_t tick = mono_to_tick(e.mono_ns);
                               return tick < from || tick >= to;
                             }),
              out.end());
  return out;
}

void TraceReader::add_kernel_only_threads() {
  // Only a process without a thread record -- a program without hooks --
  // gets threads from its kernel's events (samples, system calls,
  // switches...): a hooked process's threads are those it recorded (the
  // runtime's own control thread is not the program's).
  std::vector<bool> has_threads(processes_.size(), false);
  for (ThreadInfo& t : threads_) {
    t.record.flags &= ~kThreadKernelOnly;  // the reader's alone: never taken from a file
    if (t.record.process_index < processes_.size()) has_threads[t.record.process_index] = true;
  }
  std::map<std::pair<size_t, uint32_t>, size_t> made;  // (process, tid) -> thread
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kSysEvents)) continue;
    const uint32_t tid = b.header.aux0, pid = b.header.aux1;
    bool wanted = false;
    for (size_t i = 0; i < processes_.size() && !wanted; ++i)
      wanted = processes_[i].record.pid == pid && !has_threads[i];
    if (!wanted) continue;
    auto p = payload(b);
    std::vector<SysEvent> events;
    if (!p || !decode_sys_events(*p, b.header.count, b.header.first_tick, events)) continue;  // named by sys_events()
    for (const SysEvent& e : events) {
      // The image of that pid whose life holds the event (an exec makes
      // another): the last begun before it.
      const uint64_t at = mono_to_tick(e.mono_ns);
      int64_t process = -1;
      for (size_t i = 0; i < processes_.size(); ++i)
        if (processes_[i].record.pid == pid && (process < 0 || processes_[i].record.start_tick <= at))
          process = static_cast<int64_t>(i);
      if (process < 0 || has_threads[static_cast<size_t>(process)]) continue;
      auto [it, fresh] = made.try_emplace({static_cast<size_t>(process), tid}, threads_.size());
      if (!fresh) {
        ThreadRecord& r = threads_[it->second].record;
        r.start_tick = std::min(r.start_tick, at);
        r.end_tick = std::max(r.end_tick, at);
        continue;
      }
      ThreadInfo t;
      t.record.tid = tid;
      t.record.process_index = static_cast<uint32_t>(process);
      t.record.start_tick = t.record.end_tick = at;
      t.record.flags = kThreadKernelOnly | (tid == pid ? kThreadMain : 0);
      const std::string& exe = processes_[static_cast<size_t>(process)].exe;
      t.name = exe.substr(exe.find_last_of('/') == std::string::npos ? 0 : exe.find_last_of('/') + 1);
      threads_.push_back(std::move(t));
    }
  }
}

uint64_t TraceReader::mono_to_tick(uint64_t mono_ns) const {
  if (mono_ns <= header_.origin_mono_ns) return 0;
  const double t = static_cast<double>(mono_ns - header_.origin_mono_ns) * header_.ticks_per_ns;
  // (a damaged time, past what a tick holds: the end of time, not undefined behaviour)
  if (!(t >= 0)) return 0;
  if (!(t < 18446744073709551616.0)) return UINT64_MAX;
  return static_cast<uint64_t>(t);
}

}  // namespace callscope::format
