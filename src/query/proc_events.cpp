// The process and thread events of a trace (proc_events.h).
#include "query/proc_events.h"

#include <algorithm>

#include "format/trace_reader.h"

namespace callscope::query {

std::vector<Meta> process_events(const format::TraceReader& trace, size_t threads, bool live,
                                 const std::function<bool(uint32_t)>& ended) {
  std::vector<Meta> out;
  const auto& procs = trace.processes();
  // A process's events happen in its first (main) thread.
  std::vector<uint32_t> main_thread(procs.size(), kNoIndex);
  for (uint32_t i = 0; i < threads; ++i) {
    const auto& r = trace.threads()[i].record;
    if (r.process_index >= procs.size()) continue;
    uint32_t& m = main_thread[r.process_index];
    if (m == kNoIndex || (r.flags & format::kThreadMain)) m = i;
  }
  // A process's span is its threads' (a record's own may be coarser: a
  // trace written by hand, a recorder that saw the process late), so that
  // start comes before its threads' events and exit after them.
  std::vector<uint64_t> first(procs.size(), kNever), last(procs.size(), 0);
  for (uint32_t i = 0; i < threads; ++i) {
    const auto& r = trace.threads()[i].record;
    if (r.process_index >= procs.size()) continue;
    first[r.process_index] = std::min(first[r.process_index], r.start_tick);
    last[r.process_index] = std::max(last[r.process_index], r.end_tick);
  }
  // Live, a process's events wait for its first thread (they fire in
  // it), unless it has ended without one.
  auto waiting = [&](uint32_t pi) {
    return live && main_thread[pi] == kNoIndex && procs[pi].record.how == 0;
  };
  for (uint32_t pi = 0; pi < procs.size(); ++pi) {
    if (waiting(pi)) continue;
    const auto& r = procs[pi].record;
    const uint32_t mt = main_thread[pi];
    const uint64_t start = first[pi] == kNever ? r.start_tick : std::max(r.start_tick, first[pi]);
    const uint64_t end = first[pi] == kNever ? r.end_tick : std::min(r.end_tick, last[pi]);
    if (r.incarnation > 0) {
      // exec fires in the image that called it, as it ends (the image
      // before: the same pid, one incarnation less); exec-success in the new.
      for (uint32_t pp = 0; pp < procs.size(); ++pp) {
        const auto& before = procs[pp].record;
        if (before.pid != r.pid || before.incarnation + 1 != r.incarnation || waiting(pp)) continue;
        const uint64_t at = std::min(start, std::max(before.end_tick, before.start_tick));
        out.push_back({start_key(at), 0, ProcEvent::kExec, pp, main_thread[pp], 0, pp});
      }
      out.push_back({start_key(start), 1, ProcEvent::kExecSuccess, pi, mt, 0, pi});
    } else {
      out.push_back({start_key(start), 1, ProcEvent::kStart, pi, mt, 0, pi});
      // D fires create in the parent as it forks, before the child runs.
      if (r.parent_index >= 0 && static_cast<size_t>(r.parent_index) < procs.size())
        out.push_back({start_key(start), 0, ProcEvent::kCreate, static_cast<uint32_t>(r.parent_index),
                       main_thread[static_cast<size_t>(r.parent_index)], static_cast<int64_t>(r.pid), pi});
    }
    const auto how = static_cast<format::ExitHow>(r.how);
    if (how == format::ExitHow::kExited || how == format::ExitHow::kSignaled) {
      // D's arg0 of proc:::exit: CLD_EXITED 1, CLD_KILLED 2, CLD_DUMPED 3.
      const int64_t reason = how == format::ExitHow::kExited ? 1 : r.core_dumped ? 3 : 2;
      out.push_back({end_key(end), 2, ProcEvent::kExit, pi, mt, reason, pi});
    }
  }
  for (uint32_t i = 0; i < threads; ++i) {
    const auto& r = trace.threads()[i].record;
    out.push_back({start_key(r.start_tick), 3, ProcEvent::kLwpStart, r.process_index, i, 0, i});
    if (!live || ended(i))
      out.push_back({end_key(r.end_tick), 1, ProcEvent::kLwpExit, r.process_index, i, 0, i});
  }
  for (uint32_t mi = 0; mi < trace.modules().size(); ++mi) {
    const auto& m = trace.modules()[mi];
    if (m.record.process_index >= procs.size() || waiting(m.record.process_index)) continue;
    const uint32_t mt = main_thread[m.record.process_index];
    out.push_back({start_key(m.record.load_tick), 2, ProcEvent::kModuleLoad, m.record.process_index, mt,
                   static_cast<int64_t>(m.record.low), mi});
    if (m.record.flags & format::kModuleUnloaded)
      out.push_back({end_key(m.record.unload_tick), 0, ProcEvent::kModuleUnload, m.record.process_index, mt,
                     static_cast<int64_t>(m.record.low), mi});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Meta& a, const Meta& b) { return a.key != b.key ? a.key < b.key : a.rank < b.rank; });
  return out;
}

}  // namespace callscope::query
