// `callscope replay`: events of each thread → selection (-F, depth, time
// range) → --min → leaf merging → one formatted line each. Every stage keeps
// only the open frames it needs, never a thread's events (see replay_view.h).
#include "views/replay_view.h"

#include "analysis/block_io.h"
#include "analysis/off_cpu.h"
#include "analysis/wakers.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "analysis/off_cpu.h"
#include "common/glob.h"
#include "views/format_util.h"

namespace callscope::views {

namespace fmt = callscope::format;

Result<uint64_t> parse_duration_ns(std::string_view text) {
  const std::string s(text);
  auto bad = [&](const std::string& why) { return Error("bad duration '" + s + "': " + why); };
  if (s == "0") return uint64_t{0};
  size_t num_end = 0, dots = 0, digits = 0;
  for (; num_end < s.size(); ++num_end) {
    const char c = s[num_end];
    if (c == '.')
      ++dots;
    else if (std::isdigit(static_cast<unsigned char>(c)))
      ++digits;
    else
      break;
  }
  if (digits == 0 || dots > 1) return bad("expected a number and a unit (ns, us, ms or s), as in 1.5ms");
  const std::string unit = s.substr(num_end);
  double scale = 0;
  if (unit == "ns")
    scale = 1;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit.empty())
    return bad("missing unit (ns, us, ms or s)");
  else
    return bad("unknown unit '" + unit + "' (use ns, us, ms or s)");
  const double ns = std::strtod(s.substr(0, num_end).c_str(), nullptr) * scale;
  if (!(ns < 9e18)) return bad("too large");
  return static_cast<uint64_t>(std::llround(ns));
}

const char* replay_kind_name(ReplayKind k) {
  switch (k) {
    case ReplayKind::kCall: return "call";
    case ReplayKind::kLeaf: return "leaf";
    case ReplayKind::kReturn: return "return";
    case ReplayKind::kUnwound: return "unwound";
    case ReplayKind::kTruncated: return "truncated";
    case ReplayKind::kInherited: return "inherited";
    case ReplayKind::kStray: return "stray";
    case ReplayKind::kLost: return "lost";
    case ReplayKind::kMark: return "mark";
    case ReplayKind::kPause: return "pause";
    case ReplayKind::kResume: return "resume";
    case ReplayKind::kWait: return "wait";
    case ReplayKind::kOffCpu: return "off-cpu";
    case ReplayKind::kFault: return "fault";
    case ReplayKind::kIo: return "io";
  }
  return "?";
}

namespace {

constexpr const char* kTextColumns = "%12s  %10s  ";

std::string text_body(const ReplayLine& l) {
  const std::string f = terminal_safe(l.function);
  switch (l.kind) {
    case ReplayKind::kCall: return f + "() {";
    case ReplayKind::kLeaf: return f + "();";
    case ReplayKind::kReturn: return "} /* " + f + " */";
    case ReplayKind::kUnwound: return "} /* " + f + ": unwound by longjmp or an exception */";
    case ReplayKind::kTruncated:
      return "} /* " + f +
             (l.arg == 1   ? ": ended while events were lost */"
              : l.arg == 2 ? ": ended while recording was stopped */"
                           : ": still open when the stream ended */");
    case ReplayKind::kInherited:
      return f + (l.arg == 1   ? "() {  /* entered while events were lost */"
                  : l.arg == 2 ? "() {  /* entered while recording was stopped */"
                               : "() {  /* entered before this stream began */");
    case ReplayKind::kStray: return "/* return from " + f + " without a recorded call */";
    case ReplayKind::kLost: return "... " + std::to_string(l.arg) + " events lost ...";
    case ReplayKind::kMark: return "/* mark " + std::to_string(l.arg) + " */";
    case ReplayKind::kPause: return "... recording stopped ...";
    case ReplayKind::kResume: return "... recording goes on ...";
    case ReplayKind::kWait: return "[waited for recorder]";
    case ReplayKind::kOffCpu:
      return "/* off the CPU: " + f + (l.arg ? ", woken by tid " + std::to_string(l.arg) : std::string()) +
             (l.arg && !l.where.empty() ? " in " + terminal_safe(l.where) : std::string()) + " */";
    case ReplayKind::kFault:
      return "/* " + f + " at " + format_hex(l.arg) +
             (l.where.empty() ? std::string() : " in " + terminal_safe(l.where)) + " */";
    case ReplayKind::kIo:
      return "/* " + f + " " + std::to_string(l.arg) + " bytes at sector " + std::to_string(l.sector) +
             (l.error ? ", error " + std::to_string(l.error) : std::string()) +
             (l.duration_ns ? std::string() : ", completion not seen") + " */";
  }
  return f;
}

bool has_function(ReplayKind k) {
  return k != ReplayKind::kLost && k != ReplayKind::kMark && k != ReplayKind::kPause && k != ReplayKind::kResume &&
         k != ReplayKind::kWait;
}

long long rounded(double ns) { return std::llround(ns); }

}  // namespace

std::string replay_text_header() {
  char buf[64];
  std::snprintf(buf, sizeof buf, kTextColumns, "TIME", "DURATION");
  return std::string(buf) + "FUNCTION";
}

// Lines are indented two spaces a level, down to this level; deeper ones
// say their level instead ("[level 12345] f() {"): a 100,000-deep recursion
// would otherwise print 20 GB of spaces (the text quadratic in the depth).
constexpr uint32_t kMaxIndentLevel = 100;

std::string format_replay_text(const ReplayLine& l) {
  char buf[64];
  const std::string dur = l.duration_ns ? format_duration_ns(*l.duration_ns) : "";
  std::snprintf(buf, sizeof buf, kTextColumns, format_timestamp_ns(l.time_ns).c_str(), dur.c_str());
  if (l.level > kMaxIndentLevel)
    return std::string(buf) + std::string(2 * size_t{kMaxIndentLevel}, ' ') + "[level " + std::to_string(l.level) +
           "] " + text_body(l);
  return std::string(buf) + std::string(2 * static_cast<size_t>(l.level), ' ') + text_body(l);
}

std::string replay_csv_header() { return "thread,tick_ns,kind,depth,function,duration_ns,arg"; }

std::string format_replay_csv(const ReplayLine& l) {
  std::string s = std::to_string(l.thread) + "," + std::to_string(rounded(l.time_ns)) + "," +
                  replay_kind_name(l.kind) + "," + std::to_string(l.level + 1) + "," + csv_field(l.function) + ",";
  if (l.duration_ns) s += std::to_string(rounded(*l.duration_ns));
  s += ",";
  if (!has_function(l.kind) || l.kind == ReplayKind::kOffCpu || l.kind == ReplayKind::kFault ||
      l.kind == ReplayKind::kIo)
    s += std::to_string(l.arg);
  return s;
}

std::string format_replay_json(const ReplayLine& l) {
  nlohmann::ordered_json j;
  j["thread"] = l.thread;
  j["tick_ns"] = rounded(l.time_ns);
  j["kind"] = replay_kind_name(l.kind);
  j["depth"] = l.level + 1;
  if (has_function(l.kind)) j["function"] = l.function;
  if (l.duration_ns) j["duration_ns"] = rounded(*l.duration_ns);
  if (l.kind == ReplayKind::kLost) j["count"] = l.arg;
  if ((l.kind == ReplayKind::kTruncated || l.kind == ReplayKind::kInherited) && l.arg)
    j["in_gap"] = l.arg == 1 ? "lost" : "stopped";
  if (l.kind == ReplayKind::kMark) j["id"] = l.arg;
  if (l.kind == ReplayKind::kOffCpu && l.arg) {
    j["woken_by_tid"] = l.arg;
    if (!l.where.empty()) j["waker_in"] = l.where;
  }
  if (l.kind == ReplayKind::kFault) {
    j["address"] = format_hex(l.arg);
    if (!l.where.empty()) j["at"] = l.where;
  }
  if (l.kind == ReplayKind::kIo) {
    j["bytes"] = l.arg;
    j["sector"] = l.sector;
    if (l.error) j["error"] = l.error;
  }
  // Names come from binaries; replace invalid UTF-8 rather than throw.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

namespace {

// Writes lines in the chosen format; JSON is one array, streamed.
class Sink {
 public:
  Sink(OutputFormat f, FILE* out) : format_(f), out_(out) {}

  void begin() {
    if (format_ == OutputFormat::kCsv) std::fprintf(out_, "%s\n", replay_csv_header().c_str());
    if (format_ == OutputFormat::kJson) std::fputs("[", out_);
  }
  void thread_header(const std::string& title) {
    if (format_ != OutputFormat::kText) return;
    std::fprintf(out_, "%s# %s\n%s\n", threads_++ ? "\n" : "", terminal_safe(title).c_str(),
                 replay_text_header().c_str());
  }
  void line(const ReplayLine& l) {
    switch (format_) {
      case OutputFormat::kText: std::fprintf(out_, "%s\n", format_replay_text(l).c_str()); break;
      case OutputFormat::kCsv: std::fprintf(out_, "%s\n", format_replay_csv(l).c_str()); break;
      case OutputFormat::kJson:
        std::fprintf(out_, "%s\n%s", lines_ ? "," : "", format_replay_json(l).c_str());
        break;
    }
    ++lines_;
  }
  void end() {
    if (format_ == OutputFormat::kJson) std::fputs(lines_ ? "\n]\n" : "]\n", out_);
  }

 private:
  OutputFormat format_;
  FILE* out_;
  uint64_t lines_ = 0;
  unsigned threads_ = 0;
};

// An event that passed the selection. kCall stands for every plain entry
// until the leaf stage decides between kCall and kLeaf.
struct Ev {
  ReplayKind kind;
  uint64_t tick;
  uint32_t level;
  uint64_t addr;
  std::optional<uint64_t> dur_ticks;
  uint64_t arg;
};

bool opens(ReplayKind k) { return k == ReplayKind::kCall || k == ReplayKind::kInherited; }
// The kernel's lines (off the CPU, faults): shown with the frame they are in.
bool kernel_line(ReplayKind k) { return k == ReplayKind::kOffCpu || k == ReplayKind::kFault || k == ReplayKind::kIo; }
bool closes(ReplayKind k) {
  return k == ReplayKind::kReturn || k == ReplayKind::kUnwound || k == ReplayKind::kTruncated;
}

class Replayer {
 public:
  Replayer(fmt::TraceReader& t, symbolize::Symbolizer& sym, const ReplayOptions& o, Sink& sink)
      : trace_(t), sym_(sym), o_(o), sink_(sink), matched_(o.functions.size(), false) {}

  Status run_thread(uint32_t ti) {
    thread_ = ti;
    process_ = trace_.threads()[ti].record.process_index;
    entry_ticks_.clear();
    entry_waits_.clear();
    gap_ = 0;
    act_depth_ = 0;
    pending_.clear();
    held_.reset();
    match_cache_.clear();
    kernel_.clear();
    next_kernel_ = 0;
    if ((o_.off_cpu || o_.faults || o_.io) && trace_.has_sys_events()) {
      auto sys = trace_.sys_events(ti);
      if (!sys) return sys.error();
      CALLSCOPE_CHECK(collect_kernel_lines(*sys));
    }
    Status st = trace_.for_each_event(ti, [&](const fmt::TraceEvent& e) {
      if (o_.to_ns && trace_.ticks_to_ns(e.tick) > static_cast<double>(*o_.to_ns)) return false;
      off_cpu_before(e.tick);
      if (auto ev = select(e)) min_filter(*ev);
      return true;
    });
    if (st) off_cpu_before(trace_.threads()[ti].record.end_tick + 1);
    // Frames still held by --min were not seen to last long enough: dropped.
    flush_leaf();
    return st;
  }

  // The -F globs that matched no function of the threads run.
  std::vector<std::string> unmatched() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < matched_.size(); ++i)
      if (!matched_[i]) out.push_back(o_.functions[i]);
    return out;
  }

 private:
  // Stage 1: -F activations, depth, time range. Keeps the entry tick of
  // every open frame for the durations, whether shown or not.
  std::optional<Ev> select(const fmt::TraceEvent& e) {
    if (fmt::is_memory(e.kind) || e.kind == fmt::EventKind::kTag) return std::nullopt;  // calls only (memory has its own command)
    Ev ev{ReplayKind::kCall, e.tick, 0, e.addr, std::nullopt, e.arg};
    const bool frame_open = fmt::is_entry(e.kind);
    bool frame_close = false;
    switch (e.kind) {
      case fmt::EventKind::kEntry: break;
      case fmt::EventKind::kEntryInherited: ev.kind = ReplayKind::kInherited; break;
      case fmt::EventKind::kExit: ev.kind = ReplayKind::kReturn; frame_close = true; break;
      case fmt::EventKind::kExitUnwound: ev.kind = ReplayKind::kUnwound; frame_close = true; break;
      case fmt::EventKind::kExitTruncated: ev.kind = ReplayKind::kTruncated; frame_close = true; break;
      case fmt::EventKind::kExitStray: ev.kind = ReplayKind::kStray; break;
      case fmt::EventKind::kLost: ev.kind = ReplayKind::kLost; break;
      case fmt::EventKind::kMark: ev.kind = ReplayKind::kMark; break;
      case fmt::EventKind::kPause: ev.kind = ReplayKind::kPause; break;
      case fmt::EventKind::kResume: ev.kind = ReplayKind::kResume; break;
      case fmt::EventKind::kWait:
        // Shown where it happened, with its length; the frames open then
        // do not count it (analysis/call_tree.h).
        ev.kind = ReplayKind::kWait;
        ev.dur_ticks = e.arg;
        for (uint64_t& w : entry_waits_) w += e.arg;
        break;
      case fmt::EventKind::kAlloc:
      case fmt::EventKind::kFree:
      case fmt::EventKind::kTag: break;
    }
    // Frames closed or opened inside a gap say so (trace_format.h, "Gaps").
    if (e.kind == fmt::EventKind::kLost) gap_ = 1;
    if (e.kind == fmt::EventKind::kPause) gap_ = 2;
    if (e.kind == fmt::EventKind::kResume) gap_ = 0;
    // A trace of 1.1 marks no kResume: its gap ends at the first event that
    // is not part of the resync.
    if (gap_ && (fmt::is_exit(e.kind) || e.kind == fmt::EventKind::kEntry) && e.kind != fmt::EventKind::kExitTruncated)
      gap_ = 0;
    if (e.kind == fmt::EventKind::kExitTruncated || e.kind == fmt::EventKind::kEntryInherited) ev.arg = gap_;
    const bool frame = frame_open || frame_close;
    if (frame && e.depth == 0) return std::nullopt;  // not produced by the reader; be safe
    if (frame_open) {
      entry_ticks_.resize(e.depth - 1);
      entry_ticks_.push_back(e.tick);
      entry_waits_.resize(e.depth - 1);
      entry_waits_.push_back(0);
      if (!o_.functions.empty() && act_depth_ == 0 && matches(e.addr, e.tick)) act_depth_ = e.depth;
    } else if (frame_close) {
      if (e.depth <= entry_ticks_.size()) {
        const uint64_t span = e.tick - entry_ticks_[e.depth - 1], waited = entry_waits_[e.depth - 1];
        ev.dur_ticks = span > waited ? span - waited : 0;
      }
      entry_ticks_.resize(e.depth - 1);
      entry_waits_.resize(e.depth - 1);
    }
    const bool filtered = !o_.functions.empty();
    const bool inside = !filtered || act_depth_ != 0;
    const uint32_t base = filtered && act_depth_ ? act_depth_ - 1 : 0;
    if (frame_close && act_depth_ == e.depth) act_depth_ = 0;  // the activation's own exit is still shown
    if (!inside) return std::nullopt;

    // Frames sit at their depth; other events one level inside the open frame.
    ev.level = (frame ? e.depth - 1 : e.depth) - base;
    if (o_.max_depth && ev.level >= o_.max_depth && has_function(ev.kind)) return std::nullopt;
    const double ns = trace_.ticks_to_ns(e.tick);
    if (o_.from_ns && ns < static_cast<double>(*o_.from_ns)) return std::nullopt;
    return ev;
  }

  // The kernel's lines of the thread, in time order: its stretches off
  // the CPU, its page faults, its block requests (each with the time until
  // its completion, when seen).
  Status collect_kernel_lines(const std::vector<fmt::SysEvent>& sys) {
    const auto tick_of = [this](uint64_t ns) { return trace_.mono_to_tick(ns); };
    for (const fmt::SysEvent& e : sys) {
      const uint64_t at = tick_of(e.mono_ns);
      if (e.kind == fmt::SysKind::kPageFault && o_.faults) {
        const auto flags = static_cast<uint64_t>(e.value);
        kernel_.push_back(Ev{ReplayKind::kFault, at, 0,
                              line_reason(analysis::fault_reason(flags), flags & fmt::kFaultInKernel ? 0 : e.args[0]),
                              std::nullopt, e.arg});
      }
    }
    if (o_.io)
      for (const analysis::IoRequest& q : analysis::block_io_requests(sys)) {
        const uint64_t at = tick_of(q.start->mono_ns);
        // (one without its completion says so after its bytes: text_body)
        const uint64_t i = line_reason(
            analysis::io_reason(static_cast<uint64_t>(q.start->value), trace_.info().block_device(q.start->arg)), 0);
        info_[i].sector = q.start->args[0];
        info_[i].error = q.error;
        std::optional<uint64_t> dur;
        if (q.done()) dur = std::max(tick_of(q.done_ns), at) - at;
        kernel_.push_back(Ev{ReplayKind::kIo, at, 0, i, dur, q.start->args[1]});
      }
    // (at one tick, a fault before the stretch it began)
    if (o_.off_cpu) {
      const auto stretches = analysis::off_cpu_stretches(sys, trace_.threads()[thread_].record.end_tick, tick_of);
      // Where each waker was, when it is a traced thread.
      std::vector<analysis::WakerQuery> asked;
      for (const analysis::OffCpu& o : stretches)
        if (o.woken && o.waker_tid) asked.push_back({o.waker_pid, o.waker_tid, o.woken_at});
      CALLSCOPE_TRY(analysis::WakerPaths wakers, analysis::WakerPaths::find(trace_, asked));
      for (const analysis::OffCpu& o : stretches) {
        const uint64_t i = line_reason(analysis::off_cpu_reason(o, device_name()), 0);
        if (o.woken && o.waker_tid)
          if (const auto* path = wakers.at({o.waker_pid, o.waker_tid, o.woken_at}))
            info_[i].waker = waker_path(*path, o.woken_at);
        kernel_.push_back(Ev{ReplayKind::kOffCpu, o.start, 0, i, o.end - o.start, o.woken ? o.waker_tid : 0});
      }
    }
    std::stable_sort(kernel_.begin(), kernel_.end(),
                     [](const Ev& a, const Ev& b) { return a.tick < b.tick; });
    return ok_status();
  }
  // A waker's frames as "main > release" (innermost last; the outermost
  // elided past a few).
  std::string waker_path(const analysis::WakerPaths::Path& p, uint64_t tick) {
    const uint32_t process = trace_.threads()[p.thread].record.process_index;
    std::string s;
    const size_t first = p.frames.size() > 4 ? p.frames.size() - 4 : 0;
    if (first) s = "... > ";
    for (size_t k = first; k < p.frames.size(); ++k) {
      if (k > first) s += " > ";
      s += o_.symbols ? sym_.lookup(process, p.frames[k], tick).display() : format_hex(p.frames[k]);
    }
    return s.empty() ? "[outside every frame]" : s;
  }
  std::function<std::string(uint64_t)> device_name() {
    return [this](uint64_t dev) { return trace_.info().block_device(dev); };
  }
  // A kernel line's label (and the instruction a fault took, 0: none): its index.
  uint64_t line_reason(std::string reason, uint64_t ip) {
    info_.push_back({std::move(reason), ip});
    return info_.size() - 1;
  }

  // The kernel's lines that began before `tick`, inside the frames open
  // now (one level in, like a loss), where the selection shows them.
  void off_cpu_before(uint64_t tick) {
    const bool filtered = !o_.functions.empty();
    const uint32_t level = static_cast<uint32_t>(entry_ticks_.size()) - (filtered && act_depth_ ? act_depth_ - 1 : 0);
    for (; next_kernel_ < kernel_.size() && kernel_[next_kernel_].tick < tick; ++next_kernel_) {
      const double ns = trace_.ticks_to_ns(kernel_[next_kernel_].tick);
      if ((filtered && act_depth_ == 0) || (o_.from_ns && ns < static_cast<double>(*o_.from_ns)) ||
          (o_.to_ns && ns > static_cast<double>(*o_.to_ns)))
        continue;
      Ev ev = kernel_[next_kernel_];
      ev.level = level;
      min_filter(ev);
    }
  }

  bool matches(uint64_t addr, uint64_t tick) {
    // An address several modules held over time names what was loaded then.
    const bool reused = sym_.modules().reused(process_, addr);
    if (!reused) {
      auto it = match_cache_.find(addr);
      if (it != match_cache_.end()) return it->second;
    }
    const std::string name = name_of(addr, tick), hex = format_hex(addr);
    bool match = false;
    for (size_t i = 0; i < o_.functions.size(); ++i) {
      if (glob_match(o_.functions[i], name) || glob_match(o_.functions[i], hex)) {
        matched_[i] = true;
        match = true;
      }
    }
    if (!reused) match_cache_.emplace(addr, match);
    return match;
  }

  // Stage 2, --min: an entry is held until it has lasted min_ns (then it and
  // the held entries around it are passed on) or returns sooner (then it is
  // dropped with its exit). Its children cannot outlast it, so while it is
  // held they are dropped too: only the chain of open held frames is kept.
  // The kernel's lines inside a held frame are held with it, and go as it
  // goes.
  void min_filter(const Ev& ev) {
    if (o_.min_ns == 0) return merge_leaf(ev);
    // Held frames that have lasted min_ns by now, outermost first (and the
    // kernel's lines held after them).
    size_t confirmed = 0;
    while (confirmed < pending_.size() &&
           (kernel_line(pending_[confirmed].kind) ||
            trace_.ticks_to_ns(ev.tick - pending_[confirmed].tick) >= static_cast<double>(o_.min_ns)))
      ++confirmed;
    const bool hold = kernel_line(ev.kind) && confirmed < pending_.size();
    // Lost events, marks and strays are always shown, inside their frames.
    if (!hold && !opens(ev.kind) && !closes(ev.kind)) confirmed = pending_.size();
    for (size_t i = 0; i < confirmed; ++i) merge_leaf(pending_[i]);
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(confirmed));
    if (hold || opens(ev.kind)) {
      pending_.push_back(ev);
      return;
    }
    size_t frame = pending_.size();  // past the innermost held frame (the kernel's lines after it are its)
    while (frame && kernel_line(pending_[frame - 1].kind)) --frame;
    if (closes(ev.kind) && frame && pending_[frame - 1].level == ev.level)
      pending_.resize(frame - 1);  // returned before min_ns, with what happened inside it
    else
      merge_leaf(ev);
  }

  // Stage 3: an entry directly followed by its return is one "f();" line.
  void merge_leaf(const Ev& ev) {
    if (held_) {
      if (ev.kind == ReplayKind::kReturn && ev.level == held_->level) {
        Ev leaf = *held_;
        leaf.dur_ticks = ev.dur_ticks;
        held_.reset();
        return emit(leaf, ReplayKind::kLeaf);
      }
      flush_leaf();
    }
    if (ev.kind == ReplayKind::kCall)
      held_ = ev;
    else
      emit(ev, ev.kind);
  }

  void flush_leaf() {
    if (!held_) return;
    Ev call = *held_;
    held_.reset();
    emit(call, ReplayKind::kCall);
  }

  // Stage 4.
  void emit(const Ev& ev, ReplayKind kind) {
    ReplayLine l;
    l.kind = kind;
    l.thread = thread_;
    l.time_ns = trace_.ticks_to_ns(ev.tick);
    l.level = ev.level;
    if (kernel_line(kind)) {
      const LineInfo& info = info_[ev.addr];
      l.function = info.reason;
      if (info.ip) l.where = name_of(info.ip, ev.tick);
      if (!info.waker.empty()) l.where = info.waker;
      l.sector = info.sector;
      l.error = info.error;
    } else if (has_function(kind))
      l.function = name_of(ev.addr, ev.tick);
    if (ev.dur_ticks) l.duration_ns = trace_.ticks_to_ns(*ev.dur_ticks);
    l.arg = ev.arg;
    sink_.line(l);
  }

  std::string name_of(uint64_t addr, uint64_t tick) {
    if (addr == 0) return "?";
    if (!o_.symbols) return format_hex(addr);
    return sym_.lookup(process_, addr, tick).display();
  }

  fmt::TraceReader& trace_;
  symbolize::Symbolizer& sym_;
  const ReplayOptions& o_;
  Sink& sink_;
  std::vector<bool> matched_;

  uint32_t thread_ = 0;
  uint32_t process_ = 0;
  std::vector<uint64_t> entry_ticks_;  // [depth - 1]: entry tick of each open frame
  std::vector<uint64_t> entry_waits_;  // [depth - 1]: ticks each open frame waited for the recorder so far
  uint32_t act_depth_ = 0;             // depth of the open -F activation, 0 = none
  uint64_t gap_ = 0;                   // inside a gap: 1 a loss, 2 a stop
  std::vector<Ev> pending_;            // --min: open entries not yet shown
  std::optional<Ev> held_;             // leaf lookahead
  std::unordered_map<uint64_t, bool> match_cache_;  // addr → matches a -F glob (per thread, so per process)
  // The thread's kernel lines (Ev::addr: their index in reasons_), in time order.
  std::vector<Ev> kernel_;
  size_t next_kernel_ = 0;

  // Of the kernel's lines (Ev::addr indexes it): the label; a fault's
  // instruction (0: none, or in the kernel); a request's device, sector and error.
  struct LineInfo {
    std::string reason;
    uint64_t ip = 0, sector = 0;
    int64_t error = 0;
    std::string waker;  // off-cpu: where the waker was
  };
  std::vector<LineInfo> info_;
};

std::string thread_title(const fmt::TraceReader& t, uint32_t ti) {
  const auto& th = t.threads()[ti];
  const uint32_t proc = th.record.process_index;
  const uint32_t pid = t.process(proc).record.pid;
  return "thread " + std::to_string(ti) + ": pid " + std::to_string(pid) + " tid " + std::to_string(th.record.tid) +
         " \"" + th.name + "\"";
}

}  // namespace

Status print_replay(fmt::TraceReader& t, symbolize::Symbolizer& sym, const ReplayOptions& o, FILE* out) {
  if (o.thread && *o.thread >= t.threads().size())
    return Error("no thread " + std::to_string(*o.thread) + " in the trace (it has " +
                 std::to_string(t.threads().size()) + "; see 'callscope info')");
  auto untraced = [&](uint32_t ti) { return (t.threads()[ti].record.flags & fmt::kThreadUntraced) != 0; };
  if (o.thread && untraced(*o.thread))
    return Error("thread " + std::to_string(*o.thread) +
                 " ran without being recorded: it has no calls ('callscope info' says why)");
  Sink sink(o.format, out);
  Replayer replayer(t, sym, o, sink);
  sink.begin();
  for (uint32_t ti = 0; ti < t.threads().size(); ++ti) {
    if (o.thread && *o.thread != ti) continue;
    if (untraced(ti)) continue;  // no calls; the loss warning names it
    sink.thread_header(thread_title(t, ti));
    Status st = replayer.run_thread(ti);
    if (!st) {
      sink.end();
      return st.error().context("thread " + std::to_string(ti));
    }
  }
  sink.end();
  const std::vector<std::string> missing = replayer.unmatched();
  if (!missing.empty()) {
    std::string list;
    for (const std::string& g : missing) list += (list.empty() ? "'" : ", '") + g + "'";
    return Error("no function " + std::string(o.thread ? "of thread " + std::to_string(*o.thread) + " " : "") +
                 "matches -F " + list + " (names as 'callscope dump --stats' shows them, or addresses as 0x401a20)");
  }
  return ok_status();
}

}  // namespace callscope::views
