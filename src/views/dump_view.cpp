#include "views/dump_view.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "analysis/balance.h"
#include "views/format_util.h"

namespace callscope::views {
namespace {

namespace fmt = callscope::format;

// The name of `addr` as the module loaded at trace tick `tick` has it.
std::string name_of(symbolize::Symbolizer& sym, const DumpOptions& o, uint32_t process, uint64_t addr, uint64_t tick) {
  if (addr == 0) return "?";
  if (!o.symbols) return format_hex(addr);
  return sym.lookup(process, addr, tick).display();
}

std::vector<uint32_t> selected(const fmt::TraceReader& t, const DumpOptions& o) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < t.threads().size(); ++i)
    if (!o.thread || *o.thread == i) out.push_back(i);
  return out;
}

Status check_thread(const fmt::TraceReader& t, const DumpOptions& o) {
  if (o.thread && *o.thread >= t.threads().size())
    return Error("no thread " + std::to_string(*o.thread) + " in the trace (it has " +
                 std::to_string(t.threads().size()) + "; see 'callscope info')");
  return ok_status();
}

}  // namespace

const char* event_kind_name(fmt::EventKind k) {
  switch (k) {
    case fmt::EventKind::kEntry: return "entry";
    case fmt::EventKind::kExit: return "exit";
    case fmt::EventKind::kExitUnwound: return "unwound";
    case fmt::EventKind::kExitTruncated: return "truncated";
    case fmt::EventKind::kExitStray: return "stray-exit";
    case fmt::EventKind::kLost: return "lost";
    case fmt::EventKind::kEntryInherited: return "inherited";
    case fmt::EventKind::kMark: return "mark";
    case fmt::EventKind::kPause: return "pause";
    case fmt::EventKind::kResume: return "resume";
    case fmt::EventKind::kAlloc: return "alloc";
    case fmt::EventKind::kFree: return "free";
    case fmt::EventKind::kTag: return "tag";
    case fmt::EventKind::kWait: return "wait";
  }
  return "?";
}

Status print_dump(fmt::TraceReader& t, symbolize::Symbolizer& sym, const DumpOptions& o, FILE* out) {
  CALLSCOPE_CHECK(check_thread(t, o));
  for (uint32_t ti : selected(t, o)) {
    const auto& th = t.threads()[ti];
    const uint32_t proc = th.record.process_index;
    const uint32_t pid = t.process(proc).record.pid;
    std::fprintf(out, "thread %u: pid %u tid %u \"%s\", %llu events\n", ti, pid, th.record.tid,
                 terminal_safe(th.name).c_str(),
                 static_cast<unsigned long long>(th.record.events));
    uint64_t n = 0;
    CALLSCOPE_CHECK(t.for_each_event(ti, [&](const fmt::TraceEvent& e) {
      if (o.limit && n >= o.limit) return false;
      std::fprintf(out, "T%u #%llu t=%.0fns %s d=%u", ti, static_cast<unsigned long long>(n++), t.ticks_to_ns(e.tick),
                   event_kind_name(e.kind), e.depth);
      switch (e.kind) {
        case fmt::EventKind::kLost:
          std::fprintf(out, " count=%llu", static_cast<unsigned long long>(e.arg));
          break;
        case fmt::EventKind::kMark:
          std::fprintf(out, " id=%llu", static_cast<unsigned long long>(e.arg));
          break;
        case fmt::EventKind::kWait:
          std::fprintf(out, " waited=%.0fns", t.ticks_to_ns(e.arg));
          break;
        case fmt::EventKind::kTag:
          if (e.arg) std::fprintf(out, " push id=%llu", static_cast<unsigned long long>(e.arg));
          else std::fprintf(out, " pop");
          break;
        case fmt::EventKind::kPause:
        case fmt::EventKind::kResume:
          break;
        case fmt::EventKind::kAlloc:
          std::fprintf(out, " %s size=%llu by %s", format_hex(e.addr).c_str(), static_cast<unsigned long long>(e.arg),
                       fmt::alloc_op_name(e.op));
          break;
        case fmt::EventKind::kFree:
          std::fprintf(out, " %s by %s", format_hex(e.addr).c_str(), fmt::alloc_op_name(e.op));
          break;
        default:
          std::fprintf(out, " %s", terminal_safe(name_of(sym, o, proc, e.addr, e.tick)).c_str());
          if (fmt::is_entry(e.kind)) std::fprintf(out, " sp=%s", e.sp ? format_hex(e.sp).c_str() : "?");
      }
      std::fputc('\n', out);
      return true;
    }));
  }
  return ok_status();
}

Status print_stats(fmt::TraceReader& t, symbolize::Symbolizer& sym, const DumpOptions& o, FILE* out) {
  CALLSCOPE_CHECK(check_thread(t, o));
  struct PerFn {
    uint64_t calls = 0;
    uint64_t tick = 0;  // of a call: which module held the address then
  };
  // (process, addr, module): the module only where several held the address
  // over time (a library loaded where another was), else -1.
  std::map<std::tuple<uint32_t, uint64_t, int64_t>, PerFn> fns;
  const fmt::ModuleMap& modules = sym.modules();
  std::fprintf(out, "%5s %12s %12s %10s %10s %8s %8s %9s  %s\n", "#", "ENTRIES", "EXITS", "UNWOUND", "TRUNCATED",
               "STRAY", "LOST", "MAXDEPTH", "BALANCED");
  for (uint32_t ti : selected(t, o)) {
    const uint32_t proc = t.threads()[ti].record.process_index;
    analysis::StreamBalance b;
    CALLSCOPE_CHECK(t.for_each_event(ti, [&](const fmt::TraceEvent& e) {
      if (e.kind == fmt::EventKind::kEntry) {
        const bool reused = modules.reused(proc, e.addr);
        PerFn& f = fns[{proc, e.addr, reused ? modules.at(proc, e.addr, e.tick) : -1}];
        if (f.calls++ == 0) f.tick = e.tick;
      }
      b.add(e);
      return true;
    }));
    std::fprintf(out, "%5u %12llu %12llu %10llu %10llu %8llu %8llu %9u  %s\n", ti,
                 static_cast<unsigned long long>(b.entries), static_cast<unsigned long long>(b.exits),
                 static_cast<unsigned long long>(b.unwound), static_cast<unsigned long long>(b.truncated),
                 static_cast<unsigned long long>(b.stray), static_cast<unsigned long long>(b.lost), b.max_depth,
                 b.balanced() ? "yes" : "NO");
  }
  // Calls per function name (a name may cover several addresses or processes).
  std::map<std::string, uint64_t> by_name;
  for (const auto& [key, v] : fns) by_name[name_of(sym, o, std::get<0>(key), std::get<1>(key), v.tick)] += v.calls;
  std::vector<std::pair<std::string, uint64_t>> rows(by_name.begin(), by_name.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::fprintf(out, "\n%12s  %s\n", "CALLS", "FUNCTION");
  for (const auto& [name, calls] : rows)
    std::fprintf(out, "%12llu  %s\n", static_cast<unsigned long long>(calls), terminal_safe(name).c_str());
  return ok_status();
}

}  // namespace callscope::views
