#include "views/format_util.h"

#include <signal.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace callscope::views {

namespace {

// ns below 1 us as an integer; above, scaled to us, ms or s with `format`
// applied to the number (precision differs between durations and times).
std::string scaled_ns(double ns, const char* format) {
  char buf[48];
  if (ns < 1e3) {
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
    return buf;
  }
  const char* unit = ns < 1e6 ? "us" : ns < 1e9 ? "ms" : "s";
  const double value = ns < 1e6 ? ns / 1e3 : ns < 1e9 ? ns / 1e6 : ns / 1e9;
  std::snprintf(buf, sizeof buf, format, value, unit);
  return buf;
}

}  // namespace

std::string format_duration_ns(double ns) { return ns >= 1e9 ? scaled_ns(ns, "%.3f %s") : scaled_ns(ns, "%.3g %s"); }

std::string format_timestamp_ns(double ns) { return scaled_ns(ns, "%.3f %s"); }

std::string format_bytes(uint64_t bytes) {
  char buf[32];
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else if (v >= 100)  // three digits or four ("1000 KiB": %.3g would write 1e+03)
    std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.3g %s", v, units[u]);
  return buf;
}

std::string format_hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string signal_name(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
}

std::string describe_exit(format::ExitHow how, int code, int signal, bool core_dumped) {
  switch (how) {
    case format::ExitHow::kExited:
      return "exit code " + std::to_string(code);
    case format::ExitHow::kSignaled:
      return "killed by " + signal_name(signal) + (core_dumped ? " (core dumped)" : "");
    case format::ExitHow::kExec:
      return "replaced by exec";
    case format::ExitHow::kDetached:
      return "running (detached)";
    case format::ExitHow::kUnknown:
      break;
  }
  return "unknown (no exit was recorded)";
}

std::string format_realtime(uint64_t ns) {
  if (ns == 0) return "unknown";
  time_t secs = static_cast<time_t>(ns / 1000000000ull);
  struct tm tm {};
  ::gmtime_r(&secs, &tm);
  char buf[64];
  ::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string fit_name(const std::string& name, size_t width) {
  // Byte offset of the n-th UTF-8 character (continuation bytes are 10xxxxxx).
  auto offset_of = [&](size_t n) {
    size_t i = 0;
    for (size_t chars = 0; i < name.size(); ++i) {
      if ((static_cast<unsigned char>(name[i]) & 0xC0) == 0x80) continue;
      if (chars++ == n) return i;
    }
    return name.size();
  };
  if (width == 0 || offset_of(width) == name.size()) return name;  // fits
  constexpr std::string_view kEllipsis = "...";
  if (width <= kEllipsis.size()) return name.substr(0, offset_of(width));
  return name.substr(0, offset_of(width - kEllipsis.size())) + std::string(kEllipsis);
}

CallSources call_sources(const format::TraceReader& trace) {
  CallSources c;
  const bool any = (trace.info().record.flags & format::kInfoUnwound) != 0;
  bool flagged = false;  // else written before kThreadUnwound: every thread was unwound
  for (const format::ThreadInfo& t : trace.threads()) flagged = flagged || (t.record.flags & format::kThreadUnwound);
  std::vector<uint8_t> kinds(trace.processes().size());  // bit 0: hooked threads, bit 1: unwound threads
  for (uint32_t i = 0; i < trace.threads().size(); ++i) {
    const format::ThreadRecord& r = trace.threads()[i].record;
    if (r.flags & format::kThreadUntraced) continue;
    const bool unwound = any && (!flagged || (r.flags & format::kThreadUnwound));
    (unwound ? c.unwound_calls : c.hooked_calls) += r.calls;
    (unwound ? c.unwound_threads : c.hooked_threads).push_back(i);
    if (r.process_index < kinds.size()) kinds[r.process_index] |= unwound ? 2 : 1;
  }
  for (uint8_t k : kinds) {
    c.hooked_processes += k & 1;
    c.unwound_processes += k >> 1;
  }
  return c;
}

std::string calls_summary(uint64_t calls, uint64_t unwound_calls, uint32_t threads, uint32_t processes,
                          uint32_t unwound_processes) {
  const std::string where = count_of(threads, "thread", "threads") + " of " + count_of(processes, "process", "processes");
  if (unwound_processes == 0 || unwound_calls == 0) return count_of(calls, "call", "calls") + " in " + where;
  if (unwound_calls == calls) return count_of(calls, "unwound frame", "unwound frames") + " in " + where;
  return std::to_string(calls - unwound_calls) + " calls from hooks in " +
         count_of(processes - std::min(processes, unwound_processes), "process", "processes") + ", " +
         count_of(unwound_calls, "frame", "frames") + " unwound at allocations in " +
         count_of(unwound_processes, "process", "processes") + " (" + count_of(threads, "thread", "threads") + ")";
}

std::string unwound_warning(const format::TraceReader& trace) {
  const CallSources c = call_sources(trace);
  if (!c.any_unwound()) return "";
  if (!c.mixed())
    return "the calls of this trace were unwound at allocations (record --memory of a program without "
           "-finstrument-functions): their counts and times are not the program's; 'callscope memory' and "
           "'report --metric alloc_bytes' read them right";
  // Which is which: the processes of the smaller part by pid and program.
  const bool name_hooked = c.hooked_processes <= c.unwound_processes;
  std::vector<uint32_t> named;
  for (uint32_t t : name_hooked ? c.hooked_threads : c.unwound_threads) {
    const uint32_t p = trace.threads()[t].record.process_index;
    if (std::find(named.begin(), named.end(), p) == named.end()) named.push_back(p);
  }
  std::string which;
  for (size_t i = 0; i < named.size() && i < 3; ++i) {
    const auto& p = trace.processes()[named[i]];
    which += (i ? ", " : "") + std::string("pid ") + std::to_string(p.record.pid) + " " +
             terminal_safe(p.exe.substr(p.exe.rfind('/') + 1));
  }
  if (named.size() > 3) which += ", ...";
  return "this trace mixes calls from hooks (" + std::to_string(c.hooked_calls) + " in " +
         count_of(c.hooked_processes, "process", "processes") + ") with frames unwound at allocations (" +
         std::to_string(c.unwound_calls) + " in " + count_of(c.unwound_processes, "process", "processes") +
         ", record --memory of programs without -finstrument-functions); the " + (name_hooked ? "hooked" : "unwound") +
         " ones: " + which + ". The unwound frames' counts and times are not the programs' calls; 'callscope memory' "
         "and 'report --metric alloc_bytes' read both right";
}

std::string loss_warning(const format::TraceReader& trace) {
  uint64_t lost = 0, threads = 0;
  std::vector<std::string> untraced;
  for (const format::ThreadInfo& t : trace.threads()) {
    lost += t.record.lost_events;
    threads += t.record.lost_events ? 1 : 0;
    if (t.record.flags & format::kThreadUntraced)
      untraced.push_back("'" + terminal_safe(t.name) + "' (tid " + std::to_string(t.record.tid) +
                         "): " + describe_errno(t.record.untraced_error));
  }
  std::string w;
  if (lost)
    w = std::to_string(lost) + " events were lost in " + std::to_string(threads) + " of " +
        std::to_string(trace.threads().size()) +
        " threads; the trace marks where ('callscope replay' shows them), and the time of each gap belongs "
        "to '[lost events]', not to the frames around it (docs/recording.md)";
  if (!untraced.empty()) {
    if (!w.empty()) w += "; and ";
    w += count_of(untraced.size(), "thread", "threads") + " ran without being recorded (" +
         (untraced.size() == 1 ? "its event file" : "their event files") + " could not be made: ";
    const size_t shown = std::min<size_t>(untraced.size(), 3);
    for (size_t i = 0; i < shown; ++i) w += (i ? ", " : "") + untraced[i];
    if (shown < untraced.size()) w += ", ...";
    w += "): the figures leave " + std::string(untraced.size() == 1 ? "it" : "them") +
         " out ('callscope info' lists them)";
  }
  return w;
}

std::string describe_errno(int error) {
  const char* name = error > 0 ? ::strerrorname_np(error) : nullptr;
  std::string s = error > 0 ? std::strerror(error) : "unknown reason";
  if (name) s += std::string(" (") + name + ")";
  return s;
}

std::string format_percent(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", pct);
  return buf;
}

std::string count_of(uint64_t n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

std::string no_events_in_profile(const format::TraceReader& trace) {
  if (!trace.is_profile()) return "";
  for (const auto& th : trace.threads())
    if (th.record.events) return "";
  return "'" + trace.path() + "' is a profile-mode trace: it holds call trees (" +
         count_of(trace.dumps().size(), "snapshot", "snapshots") +
         "), not the calls in order; run 'callscope report " + trace.path() +
         "' instead (--tree for the call paths, --dump K for snapshot K), or record with --chrono GLOB to keep "
         "the calls of chosen functions in order (docs/profile.md)";
}

TextTable::TextTable(std::vector<std::string> headers, size_t left_from) : left_from_(left_from) {
  rows_.push_back(std::move(headers));
}

void TextTable::print(FILE* out) const {
  std::vector<size_t> w(rows_[0].size(), 0);
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  for (const auto& r : rows_) {
    std::string line;
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) {
      const size_t pad = w[i] - r[i].size();
      if (i) line += "  ";
      if (i < left_from_) line.append(pad, ' ');
      line += r[i];
      if (i >= left_from_ && i + 1 < r.size()) line.append(pad, ' ');
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
}

}  // namespace callscope::views
