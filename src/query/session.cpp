// `callscope query` from request to output (session.h).
#include "query/session.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "common/files.h"
#include "common/output_format.h"
#include "format/finalize.h"
#include "format/live_stream.h"
#include "format/trace_reader.h"
#include "query/driver.h"
#include "query/engine.h"
#include "query/live.h"
#include "query/options.h"
#include "query/probes.h"
#include "symbolize/symbolizer.h"

namespace callscope::query {
namespace {

// Where a -n/-P/-m/-f argument's description ends and its clause begins.
size_t description_end(const std::string& text) {
  const size_t e = text.find_first_of(" \t\n/{");
  return e == std::string::npos ? text.size() : e;
}

bool has_clause(const std::string& text) {
  return text.find_first_not_of(" \t\n", description_end(text)) != std::string::npos;
}

// Fires into the engine and writes what it prints as it comes (text), or
// keeps it with the probe that printed it (JSON).
class EngineConsumer final : public Consumer {
 public:
  EngineConsumer(Engine& engine, std::string& out, const Catalog& catalog, std::FILE* file, std::FILE* err,
                 nlohmann::json* records)
      : engine_(engine), out_(out), catalog_(catalog), file_(file), err_(err), records_(records) {}
  void enable(const ProbeInfo& probe, size_t clause) override {
    engine_.enable(probe, clause);
    enabled_.insert(probe.id);
  }
  // The probes at least one clause fires on.
  size_t probes_enabled() const { return enabled_.size(); }
  void fire(const Firing& f) override {
    engine_.fire(f);
    if (!out_.empty()) flush(&f);
  }
  bool exited() const override { return engine_.exited(); }
  bool tallies(const ProbeInfo& p) const override { return engine_.tallies(p.id); }
  void fire_tally(const Firing& f, uint64_t n) override { engine_.fire_tally(f, n); }

  // Writes what the engine printed (f: the firing that printed it, if any).
  void flush(const Firing* f) {
    std::string messages = engine_.take_messages();
    if (!messages.empty()) std::fputs(messages.c_str(), err_);
    if (out_.empty()) return;
    if (!records_) {
      std::fwrite(out_.data(), 1, out_.size(), file_);
    } else {
      nlohmann::json r;
      if (f) {
        r["probe"] = catalog_.probe(f->probe->id).full_name();
        r["id"] = f->probe->id;
        r["timestamp"] = f->timestamp;
        r["pid"] = f->pid;
        r["tid"] = f->tid;
      } else {
        r["probe"] = nullptr;  // what the end of the run printed (aggregations)
      }
      r["output"] = out_;
      records_->push_back(std::move(r));
    }
    out_.clear();
  }

 private:
  Engine& engine_;
  std::string& out_;
  const Catalog& catalog_;
  std::FILE* file_;
  std::FILE* err_;
  nlohmann::json* records_;
  std::set<uint32_t> enabled_;
};

Result<std::string> read_script(const std::string& path) {
  auto bytes = read_file_bytes(path);
  if (!bytes) return Error("cannot read script " + path + ": " + bytes.error().message());
  return std::string(bytes->begin(), bytes->end());
}

void write_json(std::FILE* out, const nlohmann::json& j) {
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), out);
}

// --format json's document (docs/query.md), at the end of the query.
void write_document(std::FILE* out, nlohmann::json trace, const CompileOptions& co, nlohmann::json records,
                    int status, const Engine& engine, const Driver& driver) {
  nlohmann::json doc;
  doc["trace"] = std::move(trace);
  if (co.target) doc["target"] = *co.target;
  doc["records"] = std::move(records);
  doc["exit_status"] = status;
  doc["errors"] = engine.errors();
  doc["events"] = driver.stats().events;
  doc["firings"] = driver.stats().firings;
  write_json(out, doc);
  std::fflush(out);
}

// The script: -s, or the descriptions as clauses (file: "-n").
Status load_source(const QueryRequest& req, std::string& source, std::string& file) {
  if (!req.script_file.empty()) {
    CALLSCOPE_TRY(source, read_script(req.script_file));
    file = req.script_file;
  } else {
    for (const auto& [flag, text] : req.descriptions) source += description_clause(flag, text) + "\n";
    file = "-n";
  }
  return ok_status();
}

// A script of no clause (empty, or declarations and pragmas alone) would
// wait for nothing: refused, as dtrace refuses it.
Status has_probes(const Program& program, const std::string& file) {
  if (program.clause_count() > 0) return ok_status();
  return Error("no probes specified: " + (file == "-n" ? std::string("the descriptions") : "script " + file) +
               " has no clause");
}

// As dtrace says it, unless quiet: what the probe descriptions matched.
void say_matched(const QueryRequest& req, const Program& program, size_t n, std::FILE* err) {
  if (option_set(program.options(), "quiet")) return;
  const std::string what =
      req.script_file.empty()
          ? (req.descriptions.size() == 1
                 ? "description '" + req.descriptions[0].second.substr(0, description_end(req.descriptions[0].second)) + "'"
                 : std::string("descriptions"))
          : "script '" + req.script_file + "'";
  std::fprintf(err, "callscope query: %s matched %zu probe%s\n", terminal_safe(what).c_str(), n, n == 1 ? "" : "s");
}

// A warning: its paths and names come from the trace, made terminal-safe.
void warn(std::FILE* err, const std::string& w) {
  std::fprintf(err, "callscope query: warning: %s\n", terminal_safe(w).c_str());
}

// Said even when quiet, on stderr (scripts parse stdout): what pid$target
// left out of a trace of several processes.
void say_other_processes(const Driver& driver, std::FILE* err) {
  if (const std::string note = driver.other_processes_note(); !note.empty())
    std::fprintf(err, "callscope query: note: %s\n", note.c_str());
}

std::vector<std::vector<ProbeSpec>> clauses_of(const Program& program) {
  std::vector<std::vector<ProbeSpec>> clauses;
  for (size_t c = 0; c < program.clause_count(); ++c) clauses.push_back(program.clause_probes(c));
  return clauses;
}

Result<int> run_live(const QueryRequest& req, std::FILE* out, std::FILE* err);

// vtimestamp is a thread's time on a CPU: from its context switches.
constexpr const char* kVtimestampNeeds = "vtimestamp needs the threads' context switches";

// The probes the program's descriptions name that need no program's
// symbols: BEGIN, the clocks, proc, alloc, the kernel's.
std::vector<Probe> probes_named(const Program& program) {
  CatalogInput every;
  every.all_kernel_providers();
  Catalog fixed{every};
  std::vector<Probe> probes;
  for (const auto& clause : clauses_of(program))
    for (const ProbeSpec& spec : clause) {
      auto ids = fixed.match(spec);
      if (!ids) continue;
      for (uint32_t id : *ids) probes.push_back(fixed.probe(id));
    }
  return probes;
}

std::set<ProbeKind> kinds_named(const Program& program) {
  std::set<ProbeKind> kinds;
  for (const Probe& p : probes_named(program)) kinds.insert(p.kind);
  return kinds;
}

// The CPU samples a second profile-N asks for (the highest N of the
// program's), 0 without profile probes.
uint32_t profile_hz_named(const Program& program) {
  uint32_t hz = 0;
  for (const Probe& p : probes_named(program))
    if (p.kind == ProbeKind::kProfile && p.interval_ns)
      hz = std::max(hz, static_cast<uint32_t>(std::lround(1e9 / static_cast<double>(p.interval_ns))));
  return hz;
}

// Whether a description of the program names a probe of the alloc provider
// (a program run with -c is then recorded with --memory).
bool uses_alloc_provider(const Program& program) { return kinds_named(program).count(ProbeKind::kAlloc) != 0; }

// The kernel's events the program's probes fire on, as a trace's info
// flags (a program run with -c records them): the context switches for
// sched and profile-N (which fires in the threads on a CPU).
uint32_t kernel_events_named(const Program& program) {
  uint32_t flags = program.reads_vtimestamp() ? format::kInfoEventGroups : 0;
  for (const Probe& p : probes_named(program)) {
    const ProbeKind k = p.kind;
    if (k == ProbeKind::kSyscallEntry || k == ProbeKind::kSyscallReturn) flags |= format::kInfoSyscalls;
    if (k == ProbeKind::kProc && p.proc == ProcEvent::kExecFailure) flags |= format::kInfoSyscalls;
    if (k == ProbeKind::kSched || k == ProbeKind::kProfile) flags |= format::kInfoEventGroups;
    if (k == ProbeKind::kFault) flags |= format::kInfoFaults;
    if (k == ProbeKind::kIo) flags |= format::kInfoIo;
  }
  return flags;
}

// The functions whose calls a script needs, when it needs only some: each
// of its descriptions either fires without calls (BEGIN, END, ERROR,
// tick-N) or names the entry or return of some functions of the pid
// provider, and nothing reads the stack (ustack, stackdepth, ucaller need
// every frame) or the callees' time (selfduration). Empty: every call is needed -- a pid probe of any function,
// profile-N (it fires in the threads the calls show), proc and alloc
// probes, a provider or probe name given as a glob (a provider glob
// that starts with pid matches pid providers only, whose functions are
// the same).
std::vector<std::string> functions_needed(const Program& program) {
  if (program.reads_stack() || program.reads_other_calls()) return {};
  Catalog fixed{CatalogInput{}};  // the probes every trace has
  std::vector<std::string> functions;
  for (const auto& clause : clauses_of(program))
    for (const ProbeSpec& spec : clause) {
      if (auto ids = fixed.match(spec); ids && !ids->empty()) {
        for (uint32_t id : *ids) {
          const ProbeKind k = fixed.probe(id).kind;
          if (k != ProbeKind::kBegin && k != ProbeKind::kEnd && k != ProbeKind::kError && k != ProbeKind::kTick)
            return {};
        }
        if (spec.provider.rfind("pid", 0) != 0) continue;
      }
      // pid* and the like: the same functions in every process traced.
      const bool pid = spec.provider.rfind("pid", 0) == 0;
      const bool entry_or_return = spec.name.empty() || spec.name == "entry" || spec.name == "return";
      // A comma would split the runtime's list (CALLSCOPE_INCLUDE).
      if (!pid || !entry_or_return || spec.function.empty() || spec.function.find(',') != std::string::npos ||
          spec.function.find_first_not_of('*') == std::string::npos)
        return {};
      if (std::find(functions.begin(), functions.end(), spec.function) == functions.end())
        functions.push_back(spec.function);
    }
  return functions;
}

}  // namespace

std::string description_clause(char flag, const std::string& text) {
  const size_t end = description_end(text);
  std::string descr = text.substr(0, end);
  std::string rest = text.substr(end);
  if (flag != 'n') {
    // Each of a comma-separated list completed to four fields from the left.
    const size_t fields = flag == 'P' ? 1 : flag == 'm' ? 2 : 3;
    std::string completed;
    size_t start = 0;
    for (;;) {
      const size_t comma = descr.find(',', start);
      std::string one = descr.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const auto colons = static_cast<size_t>(std::count(one.begin(), one.end(), ':'));
      if (colons + 1 < fields) one = std::string(fields - 1 - colons, ':') + one;
      one += std::string(4 - fields, ':');
      completed += (completed.empty() ? "" : ",") + one;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    descr = completed;
  }
  if (rest.find_first_not_of(" \t\n") == std::string::npos) rest = " {}";
  return descr + rest;
}

// -l: the probes the descriptions (or the script's clauses) match, or
// every probe of the catalog, as dtrace -l lists them.
static Result<int> list_probes(const QueryRequest& req, const std::string& source, const std::string& file,
                               const CompileOptions& co, Catalog& catalog, std::FILE* out) {
  std::vector<ProbeSpec> specs;
  bool bodies = !req.script_file.empty();
  for (const auto& d : req.descriptions) bodies = bodies || has_clause(d.second);
  if (bodies) {
    CALLSCOPE_TRY(auto program, compile(source, file, co));
    for (size_t c = 0; c < program->clause_count(); ++c)
      for (const ProbeSpec& s : program->clause_probes(c)) specs.push_back(s);
  } else {
    for (const auto& [flag, text] : req.descriptions) {
      const std::string clause = description_clause(flag, text);
      const std::string descr = clause.substr(0, description_end(clause));
      size_t start = 0;
      for (;;) {
        const size_t comma = descr.find(',', start);
        CALLSCOPE_TRY(ProbeSpec s, parse_probe_description(
                                       descr.substr(start, comma == std::string::npos ? std::string::npos : comma - start), co));
        specs.push_back(std::move(s));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
  }
  std::set<uint32_t> ids;
  if (specs.empty())
    for (const Probe& p : catalog.probes()) ids.insert(p.id);
  for (const ProbeSpec& s : specs) {
    CALLSCOPE_TRY(std::vector<uint32_t> m, catalog.match(s));
    if (m.empty() && !req.allow_zero && !catalog.may_match_later(s)) return Error(no_match_message(s));
    ids.insert(m.begin(), m.end());
  }
  if (req.json) {
    nlohmann::json probes = nlohmann::json::array();
    for (uint32_t id : ids) {
      const Probe& p = catalog.probe(id);
      probes.push_back({{"id", p.id}, {"provider", p.provider}, {"module", p.module}, {"function", p.function},
                        {"name", p.name}});
    }
    write_json(out, {{"probes", probes}});
  } else {
    std::fputs(list_header().c_str(), out);
    for (uint32_t id : ids) std::fputs(list_line(catalog.probe(id)).c_str(), out);
  }
  return 0;
}

Result<int> run_query(const QueryRequest& req, std::FILE* out, std::FILE* err) {
  if (!req.script_file.empty() && !req.descriptions.empty())
    return Error("give a script (-s) or probe descriptions (-n, -P, -m, -f), not both");
  if (req.live) return run_live(req, out, err);
  if (req.trace.empty() && !req.list)
    return Error("no trace given: query reads a trace written by 'callscope record' (callscope query -s x.d app.trace)");
  if (!req.list && req.script_file.empty() && req.descriptions.empty())
    return Error("nothing to run: give a script (-s FILE) or a probe description and its clause (-n)");

  std::unique_ptr<format::TraceReader> trace;
  if (!req.trace.empty()) {
    CALLSCOPE_TRY(trace, format::TraceReader::open(req.trace));
    if (req.refuse)
      if (const std::string why = req.refuse(*trace); !why.empty()) return Error(why);
  }
  CompileOptions co;
  co.macro_args = req.macro_args;
  if (trace) co.target = Driver::target_pid(*trace);
  co.options = req.options;

  std::vector<std::string> warnings;
  // -l alone lists what a trace can offer: the kernel's events' probes too.
  CatalogInput none;
  none.all_kernel_providers();
  Catalog catalog(trace ? catalog_input(*trace, warnings) : none);
  for (const std::string& w : warnings) warn(err, w);

  std::string source, file;
  CALLSCOPE_CHECK(load_source(req, source, file));

  if (req.list) return list_probes(req, source, file, co, catalog, out);

  auto compiled = compile(source, file, co);
  if (!compiled) {
    // A trace cut short may lack what the script needs ($target: its
    // processes): say what is wrong with it too.
    for (const std::string& p : trace->problems()) std::fprintf(err, "callscope query: damaged trace: %s\n", p.c_str());
    return compiled.error();
  }
  std::shared_ptr<const Program> program = std::move(*compiled);
  CALLSCOPE_CHECK(has_probes(*program, file));
  symbolize::Symbolizer sym(*trace);
  Strings strings;
  Stacks stacks;
  std::string text;
  Driver driver(*trace, catalog, sym, strings);
  driver.set_terminal_safe(!req.json);
  if (program->reads_vtimestamp()) {
    if (!trace->has_switches()) return Error(std::string(kVtimestampNeeds) + ": record the program with --events sched");
    driver.want_vtimestamp();
  }
  stacks.set_symbol([&driver](uint32_t process, uint64_t addr, uint8_t form) { return driver.symbol(process, addr, form); });
  stacks.set_normalize(
      [&driver](uint32_t process, uint64_t addr, uint8_t form) { return driver.normalize(process, addr, form); });
  Engine engine(program, strings, stacks, text);
  nlohmann::json records = nlohmann::json::array();
  EngineConsumer consumer(engine, text, catalog, out, err, req.json ? &records : nullptr);
  if (auto enabled = driver.enable(clauses_of(*program), req.allow_zero, consumer, program->reads_stack()); !enabled) {
    for (const std::string& p : trace->problems()) std::fprintf(err, "callscope query: damaged trace: %s\n", p.c_str());
    return enabled.error();
  }
  say_matched(req, *program, consumer.probes_enabled(), err);
  engine.set_error_probe(driver.probe_info(3));  // dtrace:::ERROR
  const Status ran = driver.run(consumer);
  engine.finish();
  consumer.flush(nullptr);
  std::fflush(out);

  say_other_processes(driver, err);
  for (const std::string& w : driver.take_warnings()) warn(err, w);
  for (const std::string& w : sym.warnings()) warn(err, w);
  if (req.warnings)
    for (const std::string& w : req.warnings(*trace)) warn(err, w);
  const int status = engine.exited() ? engine.exit_status() : 0;
  if (req.json) write_document(out, nlohmann::json(req.trace), co, std::move(records), status, engine, driver);
  if (!ran) return ran.error();
  for (const std::string& p : trace->problems()) std::fprintf(err, "callscope query: damaged trace: %s\n", p.c_str());
  return trace->problems().empty() ? status : 1;
}

namespace {

// The kernel's events of a live query (LiveDelivery::sys) to the driver,
// each thread's to its thread of the trace, and how far the driver may
// fire: not past the recorder's horizon for them (it orders them a couple
// of milliseconds behind the clock), so that they fire in time order with
// the calls. A thread the calls have not named yet has its events wait
// for it (and the horizon with them), a second at most, or to the end:
// then, in a process of no thread of its own (a program without hooks),
// it is a thread of the kernel's events alone, as over a recording
// (format's kThreadKernelOnly); otherwise its events are dropped, as a
// recording's are (the runtime's own thread, a process not the program's).
class KernelFeed {
 public:
  KernelFeed(LiveTrace& live, Driver& driver, bool on) : live_(live), driver_(driver), on_(on) {}
  void add(std::vector<format::LiveDelivery>& ds) {
    if (!on_) return;
    live_.resync_mono();
    bool last = false;
    for (format::LiveDelivery& d : ds) {
      if (d.sys_horizon_ns != 0)
        horizon_ = std::max(horizon_, d.sys_horizon_ns == ~uint64_t{0} ? kNever : live_.mono_tick(d.sys_horizon_ns));
      for (format::LiveDelivery::SysEvents& e : d.sys)
        if (!e.events.empty()) waiting_.push_back(std::move(e));
      last = last || d.last;
    }
    std::vector<format::LiveDelivery::SysEvents> still;
    std::set<std::pair<uint32_t, uint32_t>> held;  // threads with events waiting: their later ones wait too
    for (format::LiveDelivery::SysEvents& e : waiting_) {
      const uint64_t first = live_.mono_tick(e.events.front().mono_ns);
      const auto key = std::pair{e.pid, e.tid};
      const auto thread = held.count(key) ? std::nullopt : live_.thread_of(e.pid, e.tid, first);
      if (thread) {
        driver_.live_kernel_events(*thread, e.events, to_tick_);
      } else if (!last && first + second_ticks() > std::min(horizon_, calls_)) {
        held.insert(key);
        still.push_back(std::move(e));
      } else if (const auto made = live_.kernel_only_thread(e.pid, e.tid, first)) {
        driver_.live_grew();
        driver_.live_kernel_events(*made, e.events, to_tick_);
      }
    }
    waiting_ = std::move(still);
  }
  // How far the driver may fire, given the calls' horizon.
  uint64_t bound(uint64_t calls) {
    calls_ = calls;
    if (!on_) return calls;
    uint64_t b = std::min(calls, horizon_);
    for (const auto& e : waiting_) {
      const uint64_t first = live_.mono_tick(e.events.front().mono_ns);
      b = std::min(b, first == 0 ? 0 : first - 1);
    }
    return b;
  }

 private:
  static constexpr uint64_t kNever = ~uint64_t{0};
  uint64_t second_ticks() const {
    return static_cast<uint64_t>(1e9 * live_.trace().header().ticks_per_ns);
  }
  LiveTrace& live_;
  Driver& driver_;
  const std::function<uint64_t(uint64_t)> to_tick_ = [this](uint64_t ns) { return live_.mono_tick(ns); };
  bool on_;
  uint64_t horizon_ = 0;  // trace ticks
  uint64_t calls_ = 0;
  std::vector<format::LiveDelivery::SysEvents> waiting_;  // of threads not known yet, in the order delivered
};

// The TSC's rate, measured against CLOCK_MONOTONIC over 20 ms (a live
// query needs nanoseconds before any calibration record exists).
double measure_ticks_per_ns(format::ClockKind clock) {
  if (clock != format::ClockKind::kTsc) return 1.0;
  const format::ClockPair a = format::sample_clocks();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const format::ClockPair b = format::sample_clocks();
  return b.mono_ns > a.mono_ns ? static_cast<double>(b.tsc - a.tsc) / static_cast<double>(b.mono_ns - a.mono_ns) : 1.0;
}

Result<int> run_live(const QueryRequest& req, std::FILE* out, std::FILE* err) {
  if (!req.trace.empty()) return Error("give a trace or a program to run (-c), not both");
  if (req.script_file.empty() && req.descriptions.empty() && !req.list)
    return Error("nothing to run: give a script (-s FILE) or a probe description and its clause (-n)");
  std::string source, file;
  CALLSCOPE_CHECK(load_source(req, source, file));
  // -l -c CMD (-l -p PID): the program's probes, $target its pid, as dtrace
  // lists them: the program runs until it has listed its modules, and is
  // killed then (one attached to goes on).
  if (req.list && source.find_first_not_of(" \t\n") == std::string::npos) source = "BEGIN {}";
  CompileOptions co;
  co.macro_args = req.macro_args;
  co.options = req.options;
  // Compiled once before the program starts (its errors must not run it),
  // and again with $target once its pid is known.
  if (req.host) co.target = 0;
  CALLSCOPE_TRY(auto checked, compile(source, file, co));
  std::shared_ptr<const Program> program = std::move(checked);
  CALLSCOPE_CHECK(has_probes(*program, file));

  const bool tsc = format::tsc_is_invariant();
  const double tsc_rate = req.host && tsc ? measure_ticks_per_ns(format::ClockKind::kTsc) : 1.0;
  // The tap exists before the program starts. Every way out after start()
  // goes through the host's finish(), which stops the recorder's thread.
  auto live = std::make_unique<LiveTrace>();
  std::vector<format::LiveDelivery> backlog;
  bool program_done = req.host == nullptr;
  int finish_status = 0;
  // (-l: every probe the kernel lets the recorder have)
  const uint32_t kernel_named =
      req.list ? format::kInfoEventGroups | format::kInfoSyscalls | format::kInfoFaults | format::kInfoIo
               : kernel_events_named(*program);
  if (req.host) {
    if (uses_alloc_provider(*program)) req.host->want_memory();
    if (kernel_named) req.host->want_kernel(kernel_named);
    if (const uint32_t hz = req.list ? 0 : profile_hz_named(*program)) req.host->want_samples(hz);
    if (!req.list) req.host->want_only(functions_needed(*program));
    CALLSCOPE_CHECK(req.host->start(*live, tsc_rate));
    const format::ClockKind clock = req.host->clock();
    live->begin(req.host->session(), clock, req.host->origin(), clock == format::ClockKind::kTsc ? tsc_rate : 1.0);
    co.target = static_cast<uint64_t>(req.host->pid());
    auto again = compile(source, file, co);
    if (!again) {
      live->release();  // first: a delivery waiting for room must not hold the host up
      req.host->kill_program();
      req.host->finish();
      return again.error();
    }
    program = std::move(*again);
    // The program's probes are those of its modules: wait until it has
    // listed them (the runtime does as it starts), or has ended.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      auto ds = live->take(std::chrono::milliseconds(2));
      live->update(ds, true);
      bool last = false;
      for (auto& d : ds) {
        last = last || d.last;
        backlog.push_back(std::move(d));
      }
      if (last || (live->has_process(req.host->pid()) && !live->trace().modules().empty())) break;
      if (!program_done && !req.host->poll()) {
        // Over before it began: the tap gets the rest (`last`) now.
        program_done = true;
        live->release();
        finish_status = req.host->finish();
        continue;
      }
      if (std::chrono::steady_clock::now() > give_up) {
        std::fprintf(err, "callscope query: warning: process %lld has not listed its modules after 10 s; "
                          "its functions get probes as they are called\n",
                     static_cast<long long>(req.host->pid()));
        break;
      }
    }
  } else {
    live->begin("", format::ClockKind::kMonotonic, format::sample_clocks().mono_ns, 1.0);
  }

  std::vector<std::string> warnings;
  CatalogInput input = catalog_input(live->trace(), warnings);
  const uint32_t kernel = req.host ? req.host->kernel_events() : 0;
  live_kernel_providers(input, kernel,
                        req.host ? req.host->kernel_events_missing()
                                 : "no program runs: the kernel's events are a program's (-c CMD) or a trace's");
  Catalog catalog(input);
  for (const std::string& w : warnings) warn(err, w);
  // The query ends before it runs (-l, or no probe matched): a program it
  // started must not go on.
  auto end_program = [&] {
    if (program_done) return;
    live->release();  // first: a delivery waiting for room must not hold the host up
    req.host->kill_program();
    while (req.host->poll()) {
    }
    req.host->finish();
  };
  if (req.list) {
    auto listed = list_probes(req, source, file, co, catalog, out);
    end_program();
    return listed;
  }
  symbolize::Symbolizer sym(live->trace());
  Strings strings;
  Stacks stacks;
  std::string text;
  Driver driver(live->trace(), catalog, sym, strings);
  driver.set_terminal_safe(!req.json);
  if (program->reads_vtimestamp()) {
    if (!input.sched) {
      end_program();
      return Error(std::string(kVtimestampNeeds) + ": " + (req.host ? req.host->kernel_events_missing() : "no program runs"));
    }
    driver.want_vtimestamp();
  }
  stacks.set_symbol([&driver](uint32_t process, uint64_t addr, uint8_t form) { return driver.symbol(process, addr, form); });
  stacks.set_normalize(
      [&driver](uint32_t process, uint64_t addr, uint8_t form) { return driver.normalize(process, addr, form); });
  Engine engine(program, strings, stacks, text);
  nlohmann::json records = nlohmann::json::array();
  EngineConsumer consumer(engine, text, catalog, out, err, req.json ? &records : nullptr);
  bool last_seen = false;
  if (auto enabled = driver.enable(clauses_of(*program), req.allow_zero, consumer, program->reads_stack());
      !enabled) {
    end_program();
    return enabled.error();
  }
  say_matched(req, *program, consumer.probes_enabled(), err);
  engine.set_error_probe(driver.probe_info(3));  // dtrace:::ERROR
  driver.live_begin(consumer, req.host ? req.host->since() : 0, input.sched, req.host && req.host->samples());

  uint64_t horizon = 0;
  KernelFeed kernel_feed(*live, driver, kernel_named != 0 && kernel != 0);
  auto feed = [&](std::vector<format::LiveDelivery>& ds) {
    for (format::LiveDelivery& d : ds) {
      for (auto& [index, events] : d.events) driver.live_events(index, std::move(events));
      for (const auto& [index, end] : d.ended) driver.live_ended(index);
      horizon = std::max(horizon, d.horizon);
      last_seen = last_seen || d.last;
      for (const std::string& w : d.warnings) warn(err, w);
    }
    kernel_feed.add(ds);
  };
  feed(backlog);
  backlog.clear();
  // From here the query's thread drains the rings between its rounds: two
  // threads busy (the program's and ours), not three taking turns on the
  // cores, and each delivery read while it is still in the cache.
  if (req.host && !program_done && req.host->can_drain_here()) {
    // Nothing may wait for us to take deliveries once we deliver to
    // ourselves: first the recorder's thread (blocked while we set up?),
    // then it is stopped.
    live->consume_here();
    req.host->drain_here();
  }
  // How long to wait for a delivery: short while they come, twice as long
  // after each wait that brought none, up to 64 ms (the tap's rounds slow
  // down alike while the program is idle: LiveStream::tap_round_ns).
  const auto first_wait = req.host ? std::chrono::microseconds(200) : std::chrono::microseconds(1000);
  constexpr auto kLongestWait = std::chrono::microseconds(64'000);
  auto wait = first_wait;
  auto next_reread = std::chrono::steady_clock::now();
  while (!driver.exited()) {
    if (!req.host) horizon = live->now_tick();
    // Every event in: all of them fire, the clocks up to now (not forever).
    driver.live_advance(last_seen ? ~uint64_t{0} : kernel_feed.bound(horizon),
                        last_seen ? live->now_tick() : ~uint64_t{0});
    live->give_back(driver.take_spent());
    std::fflush(out);
    for (const std::string& w : driver.take_warnings()) warn(err, w);
    if (driver.exited() || last_seen || (req.interrupted && *req.interrupted)) break;
    if (!program_done && !req.host->poll()) {
      // Everything has ended: the trace is written, the tap gets the rest.
      program_done = true;
      live->release();
      finish_status = req.host->finish();
    }
    auto ds = live->take(wait);
    // A delivery of a round that found nothing carries only its horizon.
    const bool news = std::any_of(ds.begin(), ds.end(), [](const format::LiveDelivery& d) {
      return d.last || !d.events.empty() || !d.threads.empty() || !d.ended.empty() || !d.warnings.empty() ||
             !d.sys.empty();
    });
    wait = news ? first_wait : std::min<std::chrono::microseconds>(wait * 2, kLongestWait);
    const auto now = std::chrono::steady_clock::now();
    const bool reread = now >= next_reread;
    if (reread) next_reread = now + std::chrono::milliseconds(50);
    if (live->update(ds, reread)) driver.live_grew();
    feed(ds);
    // Threads that ended: their lwp-exit is known now.
    if (std::any_of(ds.begin(), ds.end(), [](const format::LiveDelivery& d) { return !d.ended.empty(); }))
      driver.live_grew();
  }
  if (!program_done) {
    // exit() or Ctrl-C while the program runs: it goes on, untraced.
    std::vector<std::string> problems;
    live->release();  // first: a delivery waiting for room must not hold the host up
    const std::vector<int64_t> left = req.host->stop_tracing(problems);
    for (const std::string& w : problems) warn(err, w);
    finish_status = req.host->finish();
    // Said even when quiet: those processes are no longer traced.
    if (!left.empty()) {
      std::string pids;
      for (int64_t p : left) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
      std::fprintf(err, "callscope query: tracing stopped; process%s %s go%s on untraced\n", left.size() > 1 ? "es" : "",
                   pids.c_str(), left.size() > 1 ? "" : "es");
    }
  }
  driver.live_end(live->now_tick());  // when the query ends
  engine.finish();
  consumer.flush(nullptr);
  std::fflush(out);
  say_other_processes(driver, err);
  for (const std::string& w : sym.warnings()) warn(err, w);
  const int status = engine.exited() ? engine.exit_status() : 0;
  if (req.json)
    write_document(out, req.keep_trace.empty() ? nlohmann::json(nullptr) : nlohmann::json(req.keep_trace), co,
                   std::move(records), status, engine, driver);
  return finish_status ? finish_status : status;
}

}  // namespace

}  // namespace callscope::query
