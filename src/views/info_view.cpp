#include "views/info_view.h"

#include <algorithm>

#include "analysis/report_model.h"
#include "views/format_util.h"

namespace callscope::views {
namespace {

namespace fmt = callscope::format;

// The sets of the kernel's events the trace has, by what its threads' events
// hold (record says which it asked for and which the kernel refused).
std::vector<std::string> sys_event_set_names(const std::vector<analysis::ThreadStates>& states) {
  const auto any = [&](auto f) { return std::any_of(states.begin(), states.end(), f); };
  std::vector<std::string> out;
  if (any([](const analysis::ThreadStates& s) { return s.switches_blocked + s.switches_runnable != 0; }))
    out.push_back("context switches");
  if (any([](const analysis::ThreadStates& s) { return s.sleep_states != 0; })) out.push_back("sleep states");
  if (any([](const analysis::ThreadStates& s) { return s.wakeups != 0; })) out.push_back("wakers");
  if (any([](const analysis::ThreadStates& s) { return s.syscalls != 0; })) out.push_back("system calls");
  if (any([](const analysis::ThreadStates& s) { return s.minor_faults + s.major_faults != 0; }))
    out.push_back("page faults");
  if (any([](const analysis::ThreadStates& s) { return s.samples != 0; })) out.push_back("CPU samples");
  if (any([](const analysis::ThreadStates& s) { return s.io_requests != 0; })) out.push_back("block I/O");
  return out;
}

std::string sys_event_sets(const std::vector<analysis::ThreadStates>& states) {
  std::string s;
  for (const std::string& n : sys_event_set_names(states)) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

std::string join(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    if (!s.empty()) s += ' ';
    const bool quote = a.empty() || a.find_first_of(" \t'\"\\$") != std::string::npos;
    const std::string shown = terminal_safe(a);
    s += quote ? "'" + shown + "'" : shown;
  }
  return s;
}

struct Totals {
  uint64_t events = 0, calls = 0, lost = 0, torn = 0;
  uint64_t untraced = 0;  // threads that ran without being recorded
};

Totals totals(const fmt::TraceReader& t) {
  Totals x;
  for (const auto& th : t.threads()) {
    x.events += th.record.events;
    x.calls += th.record.calls;
    x.lost += th.record.lost_events;
    x.torn += th.record.torn_events;
    x.untraced += (th.record.flags & fmt::kThreadUntraced) ? 1 : 0;
  }
  return x;
}

std::string program_exit(const fmt::TraceReader& t) {
  const auto& r = t.info().record;
  return describe_exit(static_cast<fmt::ExitHow>(r.main_how), r.main_code, r.main_signal, r.main_core_dumped);
}

const char* dump_reason(uint32_t r) {
  switch (r) {
    case 1: return "callscope_dump()";
    case 2: return "callscope ctl dump";
    case 3: return "interval";
    case 4: return "final state";
    default: return "?";
  }
}

uint32_t pid_of(const fmt::TraceReader& t, uint32_t process_index) {
  return t.process(process_index).record.pid;
}

}  // namespace

void print_info_text(const fmt::TraceReader& t, const std::vector<analysis::StreamBalance>& balance, FILE* out,
                     const std::vector<analysis::ThreadStates>& states) {
  const auto& h = t.header();
  const auto& info = t.info();
  const Totals x = totals(t);
  std::fprintf(out, "trace:      %s (%s, format %u.%u%s)\n", terminal_safe(t.path()).c_str(), format_bytes(t.file_size()).c_str(),
               h.version_major, h.version_minor, t.complete() ? "" : ", INCOMPLETE");
  std::fprintf(out, "program:    %s\n", join(info.argv).c_str());
  if (!info.cwd.empty()) std::fprintf(out, "directory:  %s\n", terminal_safe(info.cwd).c_str());
  std::fprintf(out, "recorded:   %s by %s%s\n", format_realtime(h.origin_realtime_ns).c_str(),
               info.tool_version.empty() ? "callscope" : terminal_safe(info.tool_version).c_str(),
               (info.record.flags & fmt::kInfoAttached) ? ", attached to the running program" : "");
  std::fprintf(out, "duration:   %s\n", format_duration_ns(t.ticks_to_ns(info.record.duration_ticks)).c_str());
  if (h.clock == static_cast<uint32_t>(fmt::ClockKind::kTsc))
    std::fprintf(out, "clock:      TSC at %.4f GHz (calibrated against CLOCK_MONOTONIC)\n", h.ticks_per_ns);
  else
    std::fprintf(out, "clock:      CLOCK_MONOTONIC (ns)\n");
  std::fprintf(out, "ended:      %s\n", program_exit(t).c_str());
  std::fprintf(out, "calls:      %llu (%llu events)", static_cast<unsigned long long>(x.calls),
               static_cast<unsigned long long>(x.events));
  // Not for profile mode: its calls are those of the call trees, not events on disk.
  if (x.events && x.calls && !t.is_profile())
    std::fprintf(out, ", %.2f bytes/call on disk", double(t.file_size()) / double(x.calls));
  std::fprintf(out, "\n");
  if (t.is_profile())
    std::fprintf(out, "mode:       profile: call trees kept in the process, %s%s\n",
                 count_of(t.dumps().size(), "snapshot", "snapshots").c_str(),
                 (info.record.flags & fmt::kInfoFiltered) ? ", filtered" : "");
  else if (info.record.flags & fmt::kInfoFiltered)
    std::fprintf(out, "mode:       record, filtered\n");
  std::fprintf(out, "lost:       %llu events", static_cast<unsigned long long>(x.lost));
  if (x.torn) std::fprintf(out, "; %llu half-written at a crash point", static_cast<unsigned long long>(x.torn));
  std::fprintf(out, "\n");
  if (x.untraced)
    std::fprintf(out, "untraced:   %s ran without being recorded (listed below)\n",
                 count_of(x.untraced, "thread", "threads").c_str());
  if (info.record.flags & fmt::kInfoNotInstrumented)
    std::fprintf(out, "note:       no instrumented function ran (compile with -finstrument-functions)\n");
  if (const CallSources c = call_sources(t); c.mixed())
    std::fprintf(out,
                 "note:       %s: the frames say where memory was allocated, not how often functions ran or for how "
                 "long\n",
                 calls_summary(c.hooked_calls + c.unwound_calls, c.unwound_calls, static_cast<uint32_t>(t.threads().size()),
                               static_cast<uint32_t>(t.processes().size()), c.unwound_processes).c_str());
  else if (info.record.flags & fmt::kInfoUnwound)
    std::fprintf(out,
                 "note:       calls unwound at allocations (record --memory --unwind): they say where memory "
                 "was allocated, not how often functions ran or for how long\n");

  std::fprintf(out, "\nprocesses:\n  %7s %7s %-28s %8s %12s  %s\n", "PID", "PPID", "ENDED", "THREADS", "CALLS", "EXECUTABLE");
  for (size_t i = 0; i < t.processes().size(); ++i) {
    const auto& p = t.processes()[i];
    uint64_t calls = 0, threads = 0;
    for (const auto& th : t.threads())
      if (th.record.process_index == i) {
        calls += th.record.calls;
        ++threads;
      }
    std::string ended = describe_exit(static_cast<fmt::ExitHow>(p.record.how), p.record.code, p.record.signal,
                                      p.record.core_dumped);
    std::string exe = terminal_safe(p.exe);
    if (p.record.parent_index >= 0) exe += "  (forked from " + std::to_string(p.record.ppid) + ")";
    std::fprintf(out, "  %7u %7u %-28s %8llu %12llu  %s\n", p.record.pid, p.record.ppid, ended.c_str(),
                 static_cast<unsigned long long>(threads), static_cast<unsigned long long>(calls), exe.c_str());
  }

  std::fprintf(out, "\nthreads:\n  %5s %7s %7s %-16s %12s %12s %8s %12s\n", "#", "PID", "TID", "NAME", "CALLS", "EVENTS",
               "LOST", "DURATION");
  for (size_t i = 0; i < t.threads().size(); ++i) {
    const auto& th = t.threads()[i];
    const uint32_t pid = t.process(th.record.process_index).record.pid;
    const uint64_t dur = th.record.end_tick > th.record.start_tick ? th.record.end_tick - th.record.start_tick : 0;
    std::fprintf(out, "  %5zu %7u %7u %-16s %12llu %12llu %8llu %12s\n", i, pid, th.record.tid,
                 terminal_safe(th.name).c_str(),
                 static_cast<unsigned long long>(th.record.calls), static_cast<unsigned long long>(th.record.events),
                 static_cast<unsigned long long>(th.record.lost_events), format_duration_ns(t.ticks_to_ns(dur)).c_str());
  }

  const auto any_state = [&](auto f) { return std::any_of(states.begin(), states.end(), f); };
  if (any_state([](const analysis::ThreadStates& s) { return s.has_events; })) {
    // The columns of the sets recorded: switches and time by state,
    // system calls, page faults.
    const bool switches = any_state([](const analysis::ThreadStates& s) { return s.known; });
    const bool syscalls = any_state([](const analysis::ThreadStates& s) { return s.syscalls != 0; });
    const bool faults = any_state([](const analysis::ThreadStates& s) { return s.minor_faults + s.major_faults != 0; });
    const bool samples = any_state([](const analysis::ThreadStates& s) { return s.samples != 0; });
    const bool io = any_state([](const analysis::ThreadStates& s) { return s.io_requests != 0; });
    std::fprintf(out, "\nthe kernel's events recorded: %s\n", sys_event_sets(states).c_str());
    std::string what = switches ? "context switches (the kernel's) and time by state" : "";
    if (syscalls) what += std::string(what.empty() ? "" : "; ") + "system calls begun";
    if (faults) what += std::string(what.empty() ? "" : "; ") + "page faults (IN KERNEL: those taken in system calls)";
    if (samples) what += std::string(what.empty() ? "" : "; ") + "CPU samples";
    if (io) what += std::string(what.empty() ? "" : "; ") + "block I/O requests begun and bytes";
    std::fprintf(out, "\n%s, from each thread's start to its end:\n  %5s %7s", what.c_str(), "#", "TID");
    if (switches)
      std::fprintf(out, " %10s %10s %12s %12s %12s", "BLOCKED", "PREEMPTED", "RUNNING", "RUNNABLE", "BLOCKED");
    if (syscalls) std::fprintf(out, " %12s", "SYSCALLS");
    if (faults) std::fprintf(out, " %12s %12s %10s", "MINOR FAULTS", "MAJOR FAULTS", "IN KERNEL");
    if (samples) std::fprintf(out, " %10s", "SAMPLES");
    if (io) std::fprintf(out, " %10s %12s %12s", "I/O", "READ", "WRITTEN");
    std::fprintf(out, "\n");
    for (size_t i = 0; i < t.threads().size() && i < states.size(); ++i) {
      const analysis::ThreadStates& s = states[i];
      if (!s.has_events) continue;
      std::fprintf(out, "  %5zu %7u", i, t.threads()[i].record.tid);
      if (switches)
        std::fprintf(out, " %10llu %10llu %12s %12s %12s", static_cast<unsigned long long>(s.switches_blocked),
                     static_cast<unsigned long long>(s.switches_runnable),
                     format_duration_ns(t.ticks_to_ns(s.running)).c_str(),
                     format_duration_ns(t.ticks_to_ns(s.runnable)).c_str(),
                     format_duration_ns(t.ticks_to_ns(s.blocked)).c_str());
      if (syscalls) std::fprintf(out, " %12llu", static_cast<unsigned long long>(s.syscalls));
      if (faults)
        std::fprintf(out, " %12llu %12llu %10llu", static_cast<unsigned long long>(s.minor_faults),
                     static_cast<unsigned long long>(s.major_faults), static_cast<unsigned long long>(s.kernel_faults));
      if (samples) std::fprintf(out, " %10llu", static_cast<unsigned long long>(s.samples));
      if (io)
        std::fprintf(out, " %10llu %12s %12s", static_cast<unsigned long long>(s.io_requests),
                     format_bytes(s.io_read_bytes).c_str(), format_bytes(s.io_write_bytes).c_str());
      std::fprintf(out, "%s\n", s.lost ? "  (records lost near it)" : "");
    }
  }

  if (x.untraced) {
    std::fprintf(out, "\nuntraced threads (they ran, but no event file could be made for them; the figures leave "
                      "them out):\n  %5s %7s %7s %-16s %12s  %s\n",
                 "#", "PID", "TID", "NAME", "SINCE", "WHY");
    for (size_t i = 0; i < t.threads().size(); ++i) {
      const auto& th = t.threads()[i];
      if (!(th.record.flags & fmt::kThreadUntraced)) continue;
      std::fprintf(out, "  %5zu %7u %7u %-16s %12s  %s\n", i, pid_of(t, th.record.process_index), th.record.tid,
                   terminal_safe(th.name).c_str(), format_timestamp_ns(t.ticks_to_ns(th.record.start_tick)).c_str(),
                   describe_errno(th.record.untraced_error).c_str());
    }
  }

  bool renamed = false;
  for (const auto& th : t.threads()) renamed |= !th.names.empty();
  if (renamed) {
    std::fprintf(out, "\nthread names (given while the thread ran; report -t matches any of them):\n  %5s %12s  %s\n",
                 "#", "SINCE", "NAME");
    for (size_t i = 0; i < t.threads().size(); ++i)
      for (const auto& n : t.threads()[i].names)
        std::fprintf(out, "  %5zu %12s  %s\n", i, format_timestamp_ns(t.ticks_to_ns(n.tick)).c_str(),
                     terminal_safe(n.name).c_str());
  }

  bool unbalanced = false;
  for (const analysis::StreamBalance& b : balance) unbalanced |= !b.balanced();
  if (unbalanced) {
    std::fprintf(out, "\nunbalanced threads (their exits and entries do not match; 'callscope dump -t N' lists the "
                      "events):\n");
    for (size_t i = 0; i < balance.size(); ++i) {
      const analysis::StreamBalance& b = balance[i];
      if (b.balanced()) continue;
      std::string what;
      if (b.stray)
        what = count_of(b.stray, "stray exit", "stray exits") +
               " (returns without a recorded entry: events before them were lost, or the stream is damaged)";
      if (b.unclosed() > 0)
        what += (what.empty() ? "" : "; ") + count_of(static_cast<uint64_t>(b.unclosed()), "frame", "frames") +
                " entered and never closed";
      else if (b.unclosed() < 0)
        what += (what.empty() ? "" : "; ") + count_of(static_cast<uint64_t>(-b.unclosed()), "frame", "frames") +
                " closed more often than entered";
      std::fprintf(out, "  thread %zu: %s\n", i, what.c_str());
    }
  }

  std::fprintf(out, "\nmodules:\n  %7s %-33s %-40s %s\n", "PID", "ADDRESSES", "BUILD-ID", "PATH");
  for (const auto& m : t.modules()) {
    const uint32_t pid = t.process(m.record.process_index).record.pid;
    std::string range = format_hex(m.record.low) + "-" + format_hex(m.record.high);
    std::string path = terminal_safe(m.path);
    if (m.record.flags & fmt::kModuleUnloaded) path += "  (unloaded)";
    std::fprintf(out, "  %7u %-33s %-40s %s\n", pid, range.c_str(), m.build_id.empty() ? "-" : m.build_id.c_str(),
                 path.c_str());
  }
  if (!t.dumps().empty()) {
    std::fprintf(out, "\nsnapshots (report --dump K):\n  %5s %7s %12s %8s  %s\n", "K", "PID", "TIME", "THREADS", "TAKEN BY");
    const std::vector<uint32_t> numbers = analysis::snapshot_numbers(t);
    for (uint32_t i : analysis::snapshots_by_number(t)) {
      const auto& d = t.dumps()[i];
      std::fprintf(out, "  %5u %7u %12s %8u  %s\n", numbers[i], pid_of(t, d.process_index),
                   format_timestamp_ns(t.ticks_to_ns(d.tick)).c_str(), d.threads, dump_reason(d.reason));
    }
  }
  if (!t.marks().empty()) {
    std::fprintf(out, "\nmarks:\n  %12s %7s %7s  %s\n", "TIME", "PID", "THREAD", "TEXT");
    for (const auto& m : t.marks()) {
      const std::string th = m.record.thread_index == ~0u ? "-" : std::to_string(m.record.thread_index);
      std::fprintf(out, "  %12s %7u %7s  %s\n", format_timestamp_ns(t.ticks_to_ns(m.record.tick)).c_str(),
                   pid_of(t, m.record.process_index), th.c_str(), terminal_safe(m.text).c_str());
    }
  }
  if (!t.problems().empty()) {
    std::fprintf(out, "\nproblems:\n");
    for (const std::string& p : t.problems()) std::fprintf(out, "  %s\n", terminal_safe(p).c_str());
  }
}

nlohmann::json info_json(const fmt::TraceReader& t, const std::vector<analysis::StreamBalance>& balance,
                         const std::vector<analysis::ThreadStates>& states) {
  using nlohmann::json;
  const auto& h = t.header();
  const auto& info = t.info();
  const Totals x = totals(t);
  json j;
  j["trace"] = t.path();
  j["file_bytes"] = t.file_size();
  j["format_version"] = std::to_string(h.version_major) + "." + std::to_string(h.version_minor);
  j["complete"] = t.complete();
  j["argv"] = info.argv;
  j["cwd"] = info.cwd;
  j["tool_version"] = info.tool_version;
  j["start_realtime_ns"] = h.origin_realtime_ns;
  j["attached"] = (info.record.flags & fmt::kInfoAttached) != 0;
  j["sys_events"] = sys_event_set_names(states);
  j["duration_ns"] = t.ticks_to_ns(info.record.duration_ticks);
  j["clock"] = h.clock == static_cast<uint32_t>(fmt::ClockKind::kTsc) ? "tsc" : "monotonic";
  j["ticks_per_ns"] = h.ticks_per_ns;
  j["ended"] = program_exit(t);
  j["exit"] = {{"how", info.record.main_how}, {"code", info.record.main_code}, {"signal", info.record.main_signal}};
  j["calls"] = x.calls;
  j["events"] = x.events;
  j["lost_events"] = x.lost;
  j["torn_events"] = x.torn;
  j["untraced_threads"] = x.untraced;
  j["processes"] = json::array();
  for (const auto& p : t.processes())
    j["processes"].push_back({{"pid", p.record.pid},
                              {"ppid", p.record.ppid},
                              {"incarnation", p.record.incarnation},
                              {"parent_index", p.record.parent_index},
                              {"exe", p.exe},
                              {"argv", p.argv},
                              {"ended", describe_exit(static_cast<fmt::ExitHow>(p.record.how), p.record.code,
                                                      p.record.signal, p.record.core_dumped)},
                              {"exit", {{"how", p.record.how}, {"code", p.record.code}, {"signal", p.record.signal}}}});
  j["threads"] = json::array();
  for (const auto& th : t.threads()) {
    json tj = {{"process_index", th.record.process_index},
               {"tid", th.record.tid},
               {"name", th.name},
               {"calls", th.record.calls},
               {"events", th.record.events},
               {"lost_events", th.record.lost_events},
               {"torn_events", th.record.torn_events},
               {"duration_ns", t.ticks_to_ns(th.record.end_tick - std::min(th.record.end_tick, th.record.start_tick))}};
    if (&th - t.threads().data() < static_cast<std::ptrdiff_t>(balance.size())) {
      const analysis::StreamBalance& b = balance[&th - t.threads().data()];
      tj["stray_exits"] = b.stray;
      tj["unclosed_frames"] = b.unclosed();  // negative: closed more often than entered
      tj["balanced"] = b.balanced();
    }
    if (const size_t i = static_cast<size_t>(&th - t.threads().data()); i < states.size() && states[i].has_events) {
      const analysis::ThreadStates& s = states[i];
      if (s.known) {
        tj["context_switches"] = {{"blocked", s.switches_blocked}, {"preempted", s.switches_runnable}};
        tj["running_ns"] = t.ticks_to_ns(s.running);
        tj["runnable_ns"] = t.ticks_to_ns(s.runnable);
        tj["blocked_ns"] = t.ticks_to_ns(s.blocked);
      }
      if (s.lost) tj["sys_records_lost"] = s.lost;
      if (s.syscalls) tj["syscalls"] = s.syscalls;
      if (s.wakeups) tj["wakeups"] = s.wakeups;
      if (s.minor_faults + s.major_faults)
        tj["page_faults"] = {{"minor", s.minor_faults}, {"major", s.major_faults}, {"in_kernel", s.kernel_faults}};
      if (s.samples) tj["cpu_samples"] = s.samples;
      if (s.io_requests)
        tj["block_io"] = {{"requests", s.io_requests},
                          {"completed", s.io_done},
                          {"read_bytes", s.io_read_bytes},
                          {"written_bytes", s.io_write_bytes}};
    }
    if (th.record.flags & fmt::kThreadUntraced)  // ran without being recorded, and why
      tj["untraced"] = {{"errno", th.record.untraced_error}, {"reason", describe_errno(th.record.untraced_error)}};
    if (!th.names.empty()) {  // renamed while it ran: every name, from when
      tj["names"] = json::array();
      for (const auto& n : th.names) tj["names"].push_back({{"time_ns", t.ticks_to_ns(n.tick)}, {"name", n.name}});
    }
    j["threads"].push_back(std::move(tj));
  }
  j["modules"] = json::array();
  for (const auto& m : t.modules())
    j["modules"].push_back({{"process_index", m.record.process_index},
                            {"path", m.path},
                            {"build_id", m.build_id},
                            {"low", m.record.low},
                            {"high", m.record.high},
                            {"load_bias", m.record.load_bias},
                            {"unloaded", (m.record.flags & fmt::kModuleUnloaded) != 0}});
  j["mode"] = t.is_profile() ? "profile" : "record";
  j["filtered"] = (info.record.flags & fmt::kInfoFiltered) != 0;
  j["unwound"] = (info.record.flags & fmt::kInfoUnwound) != 0;
  if (const CallSources c = call_sources(t); c.any_unwound()) {  // all, or some processes' (a mixed trace)
    j["hooked_calls"] = c.hooked_calls;
    j["unwound_calls"] = c.unwound_calls;
    j["unwound_processes"] = c.unwound_processes;
  }
  j["snapshots"] = json::array();
  const std::vector<uint32_t> numbers = analysis::snapshot_numbers(t);
  for (size_t i = 0; i < t.dumps().size(); ++i) {
    const auto& d = t.dumps()[i];
    j["snapshots"].push_back({{"process_index", d.process_index},
                              {"seq", numbers[i]},  // the K of report --dump K
                              {"reason", dump_reason(d.reason)},
                              {"threads", d.threads},
                              {"time_ns", t.ticks_to_ns(d.tick)}});
  }
  j["marks"] = json::array();
  for (const auto& m : t.marks())
    j["marks"].push_back({{"process_index", m.record.process_index},
                          {"thread_index", m.record.thread_index == ~0u ? json(nullptr) : json(m.record.thread_index)},
                          {"time_ns", t.ticks_to_ns(m.record.tick)},
                          {"text", m.text}});
  j["problems"] = t.problems();
  return j;
}

}  // namespace callscope::views
