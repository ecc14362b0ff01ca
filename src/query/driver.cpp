// Firing probes from a trace in time order (driver.h).
#include "query/driver.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <mutex>
#include <set>

#include "common/glob.h"
#include "common/output_format.h"
#include "format/raw_encoder.h"
#include "format/trace_reader.h"
#include "query/address_names.h"
#include "query/kernel_probes.h"
#include "query/other_processes.h"
#include "query/proc_events.h"
#include "query/thread_stream.h"
#include "symbolize/symbolizer.h"

namespace callscope::query {
namespace {

using format::EventKind;
using format::TraceReader;

// What an entry's function fires: its enabled probes (nullptr: none).
struct FnSlot {
  const ProbeInfo* entry = nullptr;
  const ProbeInfo* ret = nullptr;
  bool tally = false;  // entry only counts (Consumer::tallies)
};

struct Frame {
  uint64_t entry_tick;
  uint64_t child_ticks;   // callees' durations and losses while innermost
  uint64_t paused_before; // the thread's paused ticks when it began
  const ProbeInfo* ret;
};

}  // namespace

struct Driver::Impl final : KernelProbes::Host {
  TraceReader& trace;
  Catalog& catalog;
  symbolize::Symbolizer& sym;
  Strings& strings;
  Consumer* consumer = nullptr;
  bool allow_zero = false;
  std::array<std::vector<const ProbeInfo*>, 256> alloc_probes;  // by format::AllocOp
  bool memory_wanted = false;  // an alloc probe is enabled: memory events are read
  bool frames_needed = true;  // call paths kept (enable())
  double ns_per_tick = 1.0;
  uint64_t wall_origin_ns = 0;
  uint32_t no_thread = 0;  // the thread index of firings outside any thread

  std::vector<std::unique_ptr<ProbeInfo>> info_by_id;  // index: probe id; nullptr: not enabled
  std::vector<std::pair<ProbeSpec, size_t>> specs;     // every clause's descriptions
  // pid$target's twins (other_processes.h): probes no clause enabled that
  // only count, by id.
  OtherProcesses others;
  std::vector<char> count_only;
  // Per process: entry address -> enabled probes, filled as addresses are met.
  std::vector<std::unordered_map<uint64_t, FnSlot>> fn_slots;
  AddressNames names;  // Driver::symbol(), normalize()
  std::vector<const ProbeInfo*> proc_probes[kProcEvents];
  struct Clock {
    const ProbeInfo* info;
    bool profile;
    uint64_t interval_ns;
    uint64_t next_ns;
  };
  std::vector<Clock> clocks;
  // The syscall, sched, pf and io providers' probes and the kernel's events
  // they fire on (and profile-N's knowledge of who is on a CPU).
  KernelProbes kernel;

  struct Thread {
    uint32_t index = 0, process = 0;
    uint32_t self_of = 0;  // whose self-> variables it has: its own index, or (an image exec'd) the caller's
    int64_t pid = 0, ppid = 0, tid = 0;
    uint32_t execname = 0;
    std::vector<Frame> frames;
    std::vector<uint64_t> addrs;  // the frames' functions, outermost first
    uint64_t paused = 0;
    // A gap (format/trace_format.h, "Gaps") under way.
    bool in_gap = false, gap_loss = false, gap_depth_known = false;
    uint64_t gap_start = 0;
    size_t gap_depth = 0;
    std::unique_ptr<ThreadStream> stream;
    BatchView batch;
    bool has_batch = false;  // false: finished, or (live) waiting for events
    size_t pos = 0, vpos = 0;
    // Live: the deliveries not read yet (the front one is `batch`).
    std::deque<format::EventColumns> queue;
    bool front_in_use = false, live_ended = false;
    bool started = false, finished = false;
    uint64_t last_addr = 0;
    FnSlot last_slot;
    bool has_last = false;
    uint32_t psargs = 0;     // its process's arguments (curpsinfo->pr_psargs)
  };
  std::vector<Thread> threads;
  std::vector<uint32_t> active;  // threads whose stream is being merged (and, live, has events)
  // Live (query -c): the trace grows while the driver runs.
  bool live = false;
  bool live_switches = false;  // live: the recording has the context switches
  bool live_samples = false;   // and CPU samples
  uint64_t since = 0;  // live: the view begins here (trace ticks; live_begin)
  uint64_t clock_limit = kNever;  // clocks fire below this key (live: the end, once known)
  uint32_t thread_base = 0;  // live: firings' thread numbers are index + 1 (0: outside any thread)
  size_t modules_known = 0;
  std::vector<std::string> warnings;
  std::vector<Meta> meta;
  size_t next_meta = 0;
  std::set<std::pair<int, uint32_t>> meta_seen;  // (what, ident): each fires once
  std::vector<format::EventColumns> spent;       // read, for reuse
  std::mutex decode_lock;
  uint64_t last_tick = 0;
  Status damage = ok_status();

  Impl(TraceReader& t, Catalog& c, symbolize::Symbolizer& s, Strings& st)
      : trace(t), catalog(c), sym(s), strings(st), names(s) {}

  uint64_t ns(uint64_t tick) const { return static_cast<uint64_t>(static_cast<double>(tick) * ns_per_tick); }

  // Names from the trace (symbols, module and executable file names) as D
  // strings: made terminal-safe for text output (set_terminal_safe), as the
  // other views print them, so that a name holding an escape sequence
  // cannot drive the terminal through printf, trace() or printa.
  bool safe_names = true;
  uint32_t intern_name(const std::string& s) override { return strings.intern(safe_names ? terminal_safe(s) : s); }

  const ProbeInfo* info(uint32_t id) const { return id < info_by_id.size() ? info_by_id[id].get() : nullptr; }
  bool counts_only(const ProbeInfo* p) const { return p->id < count_only.size() && count_only[p->id]; }

  // Probe `id`, enabled by no clause, fires nowhere but is counted if a
  // twin of pid$target matches it.
  void maybe_count(uint32_t id) {
    if (info(id) || others.empty() || !others.matches(catalog, id)) return;
    count_only_probe(id);
  }
  void count_only_probe(uint32_t id) {
    if (info(id)) return;
    make_info(id);
    if (count_only.size() <= id) count_only.resize(id + 1);
    count_only[id] = 1;
  }

  void enable_probe(uint32_t id, size_t clause) {
    make_info(id);
    consumer->enable(*info_by_id[id], clause);
  }

  const ProbeInfo& make_info(uint32_t id) {
    if (info_by_id.size() <= id) info_by_id.resize(id + 1);
    if (!info_by_id[id]) {
      const Probe& p = catalog.probe(id);
      auto pi = std::make_unique<ProbeInfo>();
      pi->id = id;
      pi->provider = intern_name(p.provider);
      pi->module = intern_name(p.module);
      pi->function = intern_name(p.function);
      pi->name = intern_name(p.name);
      info_by_id[id] = std::move(pi);
      if (p.kind == ProbeKind::kProc) proc_probes[static_cast<int>(p.proc)].push_back(info_by_id[id].get());
      if (p.kind == ProbeKind::kAlloc) {
        alloc_probes[p.op].push_back(info_by_id[id].get());
        memory_wanted = true;
      }
      kernel.enable(p, info_by_id[id].get());
      if (p.kind == ProbeKind::kTick || p.kind == ProbeKind::kProfile)
        clocks.push_back({info_by_id[id].get(), p.kind == ProbeKind::kProfile, p.interval_ns, p.interval_ns});
    }
    return *info_by_id[id];
  }

  // The probes an entry address fires; the first time, the function is
  // found (or made, for one no symbol table listed) and matched.
  FnSlot lookup(uint32_t process, uint64_t addr, uint64_t tick) {
    auto& table = fn_slots[process];
    auto it = table.find(addr);
    if (it != table.end()) return it->second;
    auto fn = catalog.function_at(process, addr);
    // Aliases at one address: the name every view shows (the one the
    // program imports, for a library call; symbolizer.h).
    if (fn && catalog.has_aliases(process, addr))
      fn = catalog.function_at(process, addr, sym.lookup(process, addr, tick).function);
    if (!fn) {
      const symbolize::Symbol& s = sym.lookup(process, addr, tick);
      const std::string name = s.function.empty() ? s.display() : s.function;
      bool main = false;
      const std::string& exe = trace.process(process).exe;
      if (!s.module.empty() && !exe.empty()) main = exe.substr(exe.rfind('/') + 1) == s.module;
      fn = catalog.add_function(process, addr, s.module, name, main);
      const PidFunction& f = catalog.functions()[*fn];
      for (const auto& [spec, clause] : specs)
        for (uint32_t id : {f.entry_probe, f.return_probe})
          if (catalog.matches(spec, id)) enable_probe(id, clause);
      for (uint32_t id : {f.entry_probe, f.return_probe}) maybe_count(id);
    }
    const PidFunction& f = catalog.functions()[*fn];
    FnSlot slot{info(f.entry_probe), info(f.return_probe), false};
    slot.tally = slot.entry && !counts_only(slot.entry) && consumer->tallies(*slot.entry);
    table.emplace(addr, slot);
    return slot;
  }

  Firing context(const Thread& t, const ProbeInfo* p, uint64_t tick) const {
    Firing f;
    f.probe = p;
    f.thread = t.index + thread_base;
    f.self_thread = t.self_of + thread_base;
    f.process = t.process;
    f.pid = t.pid;
    f.ppid = t.ppid;
    f.tid = t.tid;
    f.execname = t.execname;
    f.psargs = t.psargs;
    f.timestamp = ns(tick);
    f.walltimestamp = wall_origin_ns + f.timestamp;
    f.frames = t.addrs.data();
    f.nframes = static_cast<uint32_t>(t.addrs.size());
    if (vtime) f.vtimestamp = ns(kernel.vtime_ticks(t.index, tick, trace.threads()[t.index].record.start_tick));
    return f;
  }
  bool vtime = false;  // a script reads vtimestamp

  // profile-N in thread t: arg1 the innermost function under way (its
  // entry, which ufunc(arg1) and usym(arg1) name; 0 for none), where
  // dtrace's is the instruction sampled; arg0, the kernel's instruction,
  // 0: a recording does not say.
  Firing sample(const Thread& t, const ProbeInfo* p, uint64_t tick) const {
    Firing f = context(t, p, tick);
    f.arg[1] = t.addrs.empty() ? 0 : static_cast<int64_t>(t.addrs.back());
    return f;
  }

  // Firings outside any thread: BEGIN, END, tick-N.
  Firing outside(const ProbeInfo* p, uint64_t tick) const {
    Firing f;
    f.probe = p;
    f.thread = no_thread;
    f.execname = strings_callscope;
    f.timestamp = ns(tick);
    f.walltimestamp = wall_origin_ns + f.timestamp;
    return f;
  }
  uint32_t strings_callscope = 0;

  // KernelProbes::Host.
  Firing in_thread(uint32_t thread, const ProbeInfo* p, uint64_t tick) override {
    return context(threads[thread], p, tick);
  }
  Firing outside_threads(const ProbeInfo* p, uint64_t tick) override { return outside(p, tick); }
  bool stopped() const override { return stop; }

  bool tally_only(const ProbeInfo* p) override {
    if (kernel_tallies.size() <= p->id) kernel_tallies.resize(p->id + 1, -1);
    int8_t& t = kernel_tallies[p->id];
    if (t < 0) t = consumer->tallies(*p) ? 1 : 0;
    if (t) tally(p);
    return t != 0;
  }
  std::vector<int8_t> kernel_tallies;  // by probe id: -1 not asked yet, else Consumer::tallies
  void fire(const Firing& f) override {
    if (!tallied.empty()) flush_tallies();
    consumer->fire(f);
    ++fired;
    stop = consumer->exited();
  }
  bool stop = false;  // exit() was called: asked after each firing only
  uint64_t fired = 0;

  // Entries of probes that only count are added up, by probe, and passed
  // on before any other firing (which might read the aggregations) and at
  // the end of each merge: what the script sees is the same.
  std::vector<uint64_t> pending;  // by probe id
  std::vector<const ProbeInfo*> tallied;
  void tally(const ProbeInfo* p) {
    if (pending.size() <= p->id) pending.resize(p->id + 1);
    if (pending[p->id]++ == 0) tallied.push_back(p);
  }
  void flush_tallies() {
    for (const ProbeInfo* p : tallied) {
      const uint64_t n = std::exchange(pending[p->id], 0);
      consumer->fire_tally(outside(p, last_tick), n);
      fired += n;
    }
    tallied.clear();
  }
  void entered(const Thread& t, const FnSlot& slot, uint64_t tick, uint64_t addr) {
    if (slot.tally) {
      tally(slot.entry);
    } else {
      fire_entry(t, slot.entry, tick, addr);
    }
  }

  // One event of thread t. Entries and returns, nearly every event, take
  // the short way: no jump table, and the firing's context (a Firing on
  // the stack) built out of line only when a probe fires.
  void event(Thread& t, EventKind kind, uint64_t tick, uint64_t value) {
    if (!frames_needed) {
      // Nobody reads call paths or durations: an entry fires, the rest is
      // skipped but losses.
      if (kind == EventKind::kEntry) {
        if (const FnSlot& slot = slot_of(t, value, tick); slot.entry) entered(t, slot, tick, value);
      } else if (kind == EventKind::kLost) {
        other(t, kind, tick, value);
      }
      return;
    }
    if (kind == EventKind::kEntry || kind == EventKind::kEntryInherited) {
      enter(t, kind, tick, value);
    } else if (kind == EventKind::kExit || kind == EventKind::kExitUnwound || kind == EventKind::kExitTruncated) {
      leave(t, kind, tick);
    } else {
      other(t, kind, tick, value);
    }
  }

  // The probes of the function entered at `addr` (the thread's last one kept).
  FnSlot slot_of(Thread& t, uint64_t addr, uint64_t tick) {
    if (t.has_last && t.last_addr == addr) return t.last_slot;
    t.last_slot = lookup(t.process, addr, tick);
    t.last_addr = addr;
    t.has_last = true;
    return t.last_slot;
  }

  void enter(Thread& t, EventKind kind, uint64_t tick, uint64_t value) {
    const FnSlot slot = slot_of(t, value, tick);
    if (t.in_gap && !t.gap_depth_known) {
      t.gap_depth = t.frames.size();
      t.gap_depth_known = true;
    }
    Frame& fr = t.frames.emplace_back();
    fr.entry_tick = tick;
    fr.child_ticks = 0;
    fr.paused_before = t.paused;
    fr.ret = slot.ret;
    t.addrs.push_back(value);
    // An inherited frame began before the stream did, or in a gap:
    // callscope did not see it enter.
    if (slot.entry && kind == EventKind::kEntry) entered(t, slot, tick, value);
  }

  void leave(Thread& t, EventKind kind, uint64_t tick) {
    if (t.frames.empty()) return;
    // Field by field, not a copy of the frame: the frame was written a
    // few events ago, and a whole-struct load stalls on those stores.
    const Frame& fr = t.frames.back();
    const uint64_t entry_tick = fr.entry_tick;
    const uint64_t span = tick >= entry_tick ? tick - entry_tick : 0;
    const uint64_t paused = t.paused - fr.paused_before;
    const uint64_t dur = span > paused ? span - paused : 0;
    // Only a return fires return: a frame unwound by longjmp or an
    // exception, or cut short, did not return.
    if (const ProbeInfo* ret = fr.ret; ret && kind == EventKind::kExit) fire_return(t, ret, tick, dur, fr.child_ticks);
    t.frames.pop_back();
    t.addrs.pop_back();
    if (!t.frames.empty()) t.frames.back().child_ticks += dur;
  }

  [[gnu::noinline]] void fire_entry(const Thread& t, const ProbeInfo* p, uint64_t tick, uint64_t addr) {
    if (counts_only(p)) return others.count(t.process);
    Firing f = context(t, p, tick);
    f.arg[0] = static_cast<int64_t>(addr);
    fire(f);
  }

  [[gnu::noinline]] void fire_return(const Thread& t, const ProbeInfo* p, uint64_t tick, uint64_t dur,
                                     uint64_t child) {
    if (counts_only(p)) return others.count(t.process);
    Firing f = context(t, p, tick);
    f.duration = ns(dur);
    f.selfduration = ns(dur > child ? dur - child : 0);
    fire(f);
  }

  // Losses, pauses and the rest.
  // An allocation or free (values: the block | op << 56, an allocation's
  // size): the alloc provider's probe of its op, arg0 the block, arg1 the
  // size (0 for a free).
  [[gnu::noinline]] void memory(Thread& t, EventKind kind, uint64_t tick, const uint64_t* values) {
    const auto op = static_cast<uint8_t>(values[0] >> format::kMemoryValueOpShift);
    const auto& probes = alloc_probes[op];
    for (const ProbeInfo* p : probes) {
      Firing f = context(t, p, tick);
      f.arg[0] = static_cast<int64_t>(values[0] & format::kRawAddrMask);
      f.arg[1] = kind == EventKind::kAlloc ? static_cast<int64_t>(values[1]) : 0;
      fire(f);
      if (stop) return;
    }
  }

  [[gnu::noinline]] void other(Thread& t, EventKind kind, uint64_t tick, uint64_t value) {
    switch (kind) {
      case EventKind::kLost:
        for (const ProbeInfo* p : proc_probes[static_cast<int>(ProcEvent::kLost)]) {
          Firing f = context(t, p, tick);
          f.arg[0] = static_cast<int64_t>(value);
          fire(f);
        }
        [[fallthrough]];
      case EventKind::kPause:
        t.in_gap = true;
        t.gap_loss = kind == EventKind::kLost;
        t.gap_start = tick;
        t.gap_depth_known = false;
        break;
      case EventKind::kResume: {
        if (!t.in_gap) break;
        const size_t depth = t.gap_depth_known ? t.gap_depth : t.frames.size();
        const uint64_t gap = tick > t.gap_start ? tick - t.gap_start : 0;
        if (t.gap_loss) {
          // The loss's time is the dropped calls', under the innermost
          // frame that went on through it: not its self time.
          if (depth > 0) t.frames[depth - 1].child_ticks += gap;
        } else {
          // A pause counts nowhere: out of every frame that went through.
          t.paused += gap;
          for (size_t i = depth; i < t.frames.size(); ++i) t.frames[i].paused_before += gap;
        }
        t.in_gap = false;
        break;
      }
      case EventKind::kWait:
        // The thread waited for the recorder inside every frame open now:
        // the tracer's time, out of their durations (as a pause's).
        t.paused += value;
        break;
      default:  // stray exits, marks
        break;
    }
  }

  // Loads the next batch of a thread's stream; false at its end.
  bool refill(Thread& t) {
    t.pos = t.vpos = 0;
    if (live) {
      if (t.front_in_use) {
        spent.push_back(std::move(t.queue.front()));
        t.queue.pop_front();
      }
      t.front_in_use = false;
      while (!t.queue.empty() && t.queue.front().empty()) t.queue.pop_front();
      t.has_batch = !t.queue.empty();
      if (t.has_batch) {
        const format::EventColumns& c = t.queue.front();
        t.batch = {c.kinds(), c.ticks(), c.values(), c.size()};
        t.front_in_use = true;
        return true;
      }
      t.finished = t.live_ended;
      return false;
    }
    const CallBatch* b = t.stream->next();
    while (b && b->n == 0) b = t.stream->next();
    t.has_batch = b != nullptr;
    if (b) {
      t.batch = {b->kinds.get(), b->ticks.get(), b->values.get(), b->n};
      return true;
    }
    auto st = t.stream->status();
    if (!st && damage) damage = st;
    t.stream.reset();
    t.finished = true;
    return false;
  }

  uint64_t head_key(const Thread& t) const { return event_key(t.batch.ticks[t.pos]); }

  // Events of t while their key is below `bound` (at least one).
  void run_thread(Thread& t, uint64_t bound) {
    do {
      const BatchView& b = t.batch;
      const size_t n = b.n;
      size_t pos = t.pos, vpos = t.vpos;
      bool first = true;
      const size_t from = pos;
      while (pos < n && (first || event_key(b.ticks[pos]) < bound)) {
        first = false;
        const EventKind k = b.kinds[pos];
        if (__builtin_expect(k == EventKind::kAlloc || k == EventKind::kFree, 0)) {
          memory(t, k, b.ticks[pos], b.values + vpos);
          vpos += format::value_count(k);
        } else {
          const uint64_t v = format::carries_value(k) ? b.values[vpos++] : 0;
          event(t, k, b.ticks[pos], v);
        }
        ++pos;
        if (stop) break;
      }
      events += pos - from;
      if (pos > from) last_tick = std::max(last_tick, b.ticks[pos - 1]);
      t.pos = pos;
      t.vpos = vpos;
      if (stop) return;
      if (pos < n) return;
      if (!refill(t)) return;
      // A run goes on into the next batch, but stops at the bound there.
      if (head_key(t) >= bound) return;
    } while (true);
  }
  uint64_t events = 0;

  void start_thread(uint32_t index) {
    Thread& t = threads[index];
    if (t.started) return;
    t.started = true;
    if (!live) t.stream = std::make_unique<ThreadStream>(trace, index, decode_lock, memory_wanted);
    if (refill(t)) active.push_back(index);
  }

  void fire_meta(const Meta& m) {
    const auto& probes = proc_probes[static_cast<int>(m.what)];
    if (probes.empty()) return;
    const uint64_t tick = m.key / 3;
    for (const ProbeInfo* p : probes) {
      Firing f;
      if (m.thread < threads.size()) {
        f = context(threads[m.thread], p, tick);
      } else {
        f = outside(p, tick);
        const auto& proc = trace.process(m.process);
        f.process = m.process;
        f.pid = proc.record.pid;
        f.ppid = proc.record.ppid;
        if (live) f.execname = intern_name(proc.exe.substr(proc.exe.rfind('/') + 1));
      }
      f.arg[0] = m.arg0;
      fire(f);
      if (stop) return;
    }
  }

  std::vector<Meta> metadata() const {
    return process_events(trace, threads.size(), live, [this](uint32_t i) { return threads[i].live_ended; });
  }

  // tick-N fires once per interval outside any thread; profile-N in every
  // thread alive then, with its call path (a sample of what it was doing).
  void fire_clock(Clock& c) {
    const uint64_t tick = ticks_of(c.next_ns);
    if (c.profile && kernel.profile_from_samples()) {
      // (it fires at the recording's CPU samples: KernelProbes)
    } else if (c.profile && live) {
      // Every thread alive, with events waiting or not; where the
      // recording has the context switches, only those on a CPU then.
      for (uint32_t i = 0; i < threads.size() && !stop; ++i)
        if (threads[i].started && !threads[i].finished && (!kernel.profile_on_cpu() || kernel.on_cpu(i)))
          fire(sample(threads[i], c.info, tick));
    } else if (c.profile) {
      // Where the trace has the context switches, only the threads on a
      // CPU then: a sample of what ran, as dtrace's profile-N is.
      for (uint32_t i : active) {
        if (kernel.profile_on_cpu() && !kernel.on_cpu(i)) continue;
        fire(sample(threads[i], c.info, tick));
        if (stop) break;
      }
    } else {
      fire(outside(c.info, tick));
    }
    c.next_ns += c.interval_ns;
  }
  uint64_t ticks_of(uint64_t ns_value) const {
    return static_cast<uint64_t>(static_cast<double>(ns_value) / ns_per_tick);
  }

  // Thread i of the trace, as the merge knows it.
  void setup_thread(uint32_t i) {
    const auto& procs = trace.processes();
    const auto& r = trace.threads()[i].record;
    Thread& t = threads[i];
    t.index = i;
    t.self_of = i;
    t.process = r.process_index;
    t.tid = r.tid;
    // exec keeps the thread, and its self-> variables (dtrace's whoexec.d
    // sets one at proc:::exec and reads it at exec-success): an image's
    // thread has those of the thread of the same tid in the image before.
    if (r.process_index < procs.size() && procs[r.process_index].record.incarnation > 0) {
      const auto& mine = procs[r.process_index].record;
      for (uint32_t j = 0; j < i; ++j) {
        const auto& o = trace.threads()[j].record;
        if (o.tid != r.tid || o.process_index >= procs.size()) continue;
        const auto& before = procs[o.process_index].record;
        if (before.pid == mine.pid && before.incarnation + 1 == mine.incarnation) t.self_of = threads[j].self_of;
      }
    }
    if (r.process_index < procs.size()) {
      const auto& p = procs[r.process_index];
      t.pid = p.record.pid;
      t.ppid = p.record.ppid;
      // D's execname: the executable's file name.
      t.execname = intern_name(p.exe.substr(p.exe.rfind('/') + 1));
      std::string args;
      for (const std::string& a : p.argv) args += (args.empty() ? "" : " ") + a;
      t.psargs = intern_name(args);
    }
  }

  void setup() {
    ns_per_tick = 1.0 / trace.header().ticks_per_ns;
    wall_origin_ns = trace.info().record.start_realtime_ns;
    strings_callscope = strings.intern("callscope");
    threads.resize(trace.threads().size());
    fn_slots.resize(trace.processes().size());
    for (uint32_t i = 0; i < threads.size(); ++i) setup_thread(i);
    meta = metadata();
    const bool profile = std::any_of(clocks.begin(), clocks.end(), [](const Clock& c) { return c.profile; });
    if (live)
      kernel.begin_live(trace, profile, live_switches, live_samples);
    else if (auto st = kernel.load(trace, profile); !st && damage)
      damage = st;
    // profile-N at the samples: at their rate, whatever N says.
    if (kernel.samples_hz() > 0)
      for (const Clock& c : clocks) {
        const double hz = 1e9 / static_cast<double>(c.interval_ns);
        if (c.profile && std::abs(hz - kernel.samples_hz()) > 0.05 * hz) {
          warnings.push_back("profile probes fire at the trace's CPU samples, " +
                             std::to_string(std::lround(kernel.samples_hz())) + " a second of CPU (record --sample), "
                             "not " + std::to_string(std::lround(hz)));
          break;
        }
      }
    stop = consumer->exited();
  }

  // Fires, in time order, what happens before `bound` (a key): the
  // metadata's process and thread events, the threads' events, the
  // clocks' ticks. Over a recorded trace (bound kNever) the clocks stop
  // with the trace.
  void merge(uint64_t bound) {
    while (!stop) {
      const uint64_t mk = next_meta < meta.size() ? meta[next_meta].key : kNever;
      // The stream with the earliest event, and the one after it.
      uint64_t best_key = kNever, second_key = kNever;
      size_t best = 0;
      for (size_t i = 0; i < active.size(); ++i) {
        const uint64_t k = head_key(threads[active[i]]);
        if (k < best_key) {
          second_key = best_key;
          best_key = k;
          best = i;
        } else if (k < second_key) {
          second_key = k;
        }
      }
      const uint64_t sk = kernel.next_key();
      if (!live && best_key == kNever && mk == kNever && sk == kNever) break;  // the end: clocks stop with the trace
      Clock* clock = nullptr;
      for (Clock& c : clocks)
        if (!clock || c.next_ns < clock->next_ns) clock = &c;
      uint64_t ck = clock ? start_key(ticks_of(clock->next_ns)) : kNever;
      if (ck >= clock_limit) ck = kNever;
      if (std::min({ck, mk, sk, best_key}) >= bound) break;
      if (ck <= mk && ck <= best_key && ck <= sk) {
        fire_clock(*clock);
        continue;
      }
      if (mk <= best_key && mk <= sk) {
        const Meta& m = meta[next_meta++];
        last_tick = std::max(last_tick, m.key / 3);
        // A thread's stream joins the merge when the thread starts.
        if (m.what == ProcEvent::kLwpStart) start_thread(m.thread);
        fire_meta(m);
        continue;
      }
      // The kernel's event of a tick after the calls of that tick.
      if (sk < best_key) {
        last_tick = std::max(last_tick, sk / 3);
        kernel.fire_next(*this);
        continue;
      }
      Thread& t = threads[active[best]];
      run_thread(t, std::min({second_key, mk, ck, sk == kNever ? kNever : sk + 1, bound}));
      if (!t.has_batch) active.erase(active.begin() + static_cast<std::ptrdiff_t>(best));
    }
    if (!tallied.empty()) flush_tallies();
  }

  Status run() {
    setup();
    if (const ProbeInfo* begin = info(1)) fire(outside(begin, 0));
    merge(kNever);
    // Threads whose start the metadata missed (a trace cut short).
    if (!stop) {
      for (uint32_t i = 0; i < threads.size() && !stop; ++i) {
        if (threads[i].started) continue;
        start_thread(i);
        while (!threads[i].finished && !stop) run_thread(threads[i], kNever);
      }
    }
    // Stop the decoders still running (exit()).
    for (Thread& t : threads) t.stream.reset();
    if (!tallied.empty()) flush_tallies();
    if (const ProbeInfo* end = info(2)) fire(outside(end, last_tick));
    return damage;
  }

  // Live: the trace lists more than it did: functions of new modules
  // matched, new threads set up, new process and thread events queued.
  void grew() {
    const size_t probes_before = catalog.probes().size();
    if (trace.modules().size() > modules_known) {
      catalog.extend(catalog_input(trace, warnings, modules_known));
      modules_known = trace.modules().size();
      sym.refresh();
    }
    for (uint32_t id = static_cast<uint32_t>(probes_before) + 1; id <= catalog.probes().size(); ++id) {
      for (const auto& [spec, clause] : specs)
        if (catalog.matches(spec, id)) enable_probe(id, clause);
      maybe_count(id);
    }
    fn_slots.resize(trace.processes().size());
    const size_t known = threads.size();
    threads.resize(trace.threads().size());
    for (size_t i = known; i < threads.size(); ++i) setup_thread(static_cast<uint32_t>(i));
    // Process and thread events not queued yet, in time order behind those
    // fired (one that comes late fires next).
    std::vector<Meta> fresh;
    for (const Meta& m : metadata()) {
      if (!meta_seen.insert({static_cast<int>(m.what), m.ident}).second) continue;
      if (m.key / 3 < since) {
        // Before the query attached: nothing fires, but a thread running
        // then has its events to come.
        if (m.what == ProcEvent::kLwpStart) start_thread(m.thread);
        continue;
      }
      fresh.push_back(m);
    }
    if (fresh.empty()) return;
    meta.erase(meta.begin(), meta.begin() + static_cast<std::ptrdiff_t>(next_meta));
    next_meta = 0;
    meta.insert(meta.end(), fresh.begin(), fresh.end());
    std::stable_sort(meta.begin(), meta.end(),
                     [](const Meta& a, const Meta& b) { return a.key != b.key ? a.key < b.key : a.rank < b.rank; });
  }

  void add_events(uint32_t index, format::EventColumns&& more) {
    if (index >= threads.size() || more.empty()) return;
    Thread& t = threads[index];
    t.queue.push_back(std::move(more));
    if (t.started && !t.has_batch && refill(t)) active.push_back(index);
  }

  void ended(uint32_t index) {
    if (index >= threads.size()) return;
    Thread& t = threads[index];
    t.live_ended = true;
    if (t.started && !t.has_batch) t.finished = true;
  }
};

Driver::Driver(TraceReader& trace, Catalog& catalog, symbolize::Symbolizer& sym, Strings& strings)
    : impl_(std::make_unique<Impl>(trace, catalog, sym, strings)) {
  impl_->no_thread = static_cast<uint32_t>(trace.threads().size());
}

Driver::~Driver() = default;

Status Driver::enable(const std::vector<std::vector<ProbeSpec>>& clauses, bool allow_zero, Consumer& consumer,
                      bool reads_stack) {
  impl_->consumer = &consumer;
  impl_->allow_zero = allow_zero;
  // Return probes need the frames for their durations.
  bool returns = false;
  for (const auto& clause : clauses)
    for (const ProbeSpec& spec : clause) returns = returns || spec.name.empty() || glob_match(spec.name, "return");
  impl_->frames_needed = reads_stack || returns;
  for (size_t c = 0; c < clauses.size(); ++c) {
    for (const ProbeSpec& spec : clauses[c]) {
      CALLSCOPE_TRY(const std::vector<uint32_t> ids, impl_->catalog.match(spec));
      // pid probes of functions met later (no symbol listed them) are
      // matched against every description then.
      impl_->specs.emplace_back(spec, c);
      if (ids.empty() && !allow_zero && !impl_->catalog.may_match_later(spec)) return Error(no_match_message(spec));
      for (uint32_t id : ids) {
        // (profile-N's arg1 is the innermost function under way)
        if (impl_->catalog.probe(id).kind == ProbeKind::kProfile) impl_->frames_needed = true;
        impl_->enable_probe(id, c);
      }
      impl_->others.add(spec);
    }
  }
  // Last: a probe some clause enables fires, whatever a twin matches.
  if (!impl_->others.empty())
    for (uint32_t id : impl_->others.match(impl_->catalog)) impl_->count_only_probe(id);
  return ok_status();
}

Status Driver::run(Consumer& consumer) {
  impl_->consumer = &consumer;
  auto st = impl_->run();
  stats_.events = impl_->events;
  stats_.firings = impl_->fired;
  return st;
}

std::string Driver::symbol(uint32_t process, uint64_t addr, uint8_t form) {
  return impl_->names.symbol(process, addr, form);
}

uint64_t Driver::normalize(uint32_t process, uint64_t addr, uint8_t form) {
  return impl_->names.normalize(process, addr, form);
}

const ProbeInfo& Driver::probe_info(uint32_t id) { return impl_->make_info(id); }

void Driver::want_vtimestamp() {
  impl_->vtime = true;
  impl_->kernel.want_vtime();
}

void Driver::set_terminal_safe(bool on) {
  impl_->safe_names = on;
  impl_->names.set_terminal_safe(on);
}

void Driver::live_begin(Consumer& consumer, uint64_t since, bool switches, bool samples) {
  Impl& d = *impl_;
  d.consumer = &consumer;
  d.live = true;
  d.live_switches = switches;
  d.live_samples = samples;
  d.thread_base = 1;
  d.no_thread = 0;
  d.modules_known = d.trace.modules().size();
  d.setup();
  d.since = since;
  d.last_tick = since;
  for (Impl::Clock& c : d.clocks) c.next_ns = d.ns(since) + c.interval_ns;
  d.meta.clear();
  d.grew();
  if (const ProbeInfo* begin = d.info(1)) d.fire(d.outside(begin, since));
}

void Driver::live_grew() { impl_->grew(); }

void Driver::live_events(uint32_t thread, format::EventColumns&& events) {
  impl_->add_events(thread, std::move(events));
}

void Driver::live_ended(uint32_t thread) { impl_->ended(thread); }

void Driver::live_kernel_events(uint32_t thread, const std::vector<format::SysEvent>& events,
                                const std::function<uint64_t(uint64_t)>& tick_of) {
  impl_->kernel.add_live(thread, events, tick_of);
}

void Driver::live_advance(uint64_t horizon, uint64_t clocks_until) {
  Impl& d = *impl_;
  if (clocks_until != ~uint64_t{0}) d.clock_limit = start_key(clocks_until + 1);
  d.merge(horizon >= kNever / 3 - 1 ? kNever : start_key(horizon + 1));
  stats_.events = d.events;
  stats_.firings = d.fired;
}

void Driver::live_end(uint64_t tick) {
  Impl& d = *impl_;
  if (!d.tallied.empty()) d.flush_tallies();
  if (const ProbeInfo* end = d.info(2)) d.fire(d.outside(end, std::max(d.last_tick, tick)));
  stats_.events = d.events;
  stats_.firings = d.fired;
}

bool Driver::exited() const { return impl_->stop; }

std::vector<format::EventColumns> Driver::take_spent() { return std::exchange(impl_->spent, {}); }

std::vector<std::string> Driver::take_warnings() { return std::exchange(impl_->warnings, {}); }

std::string Driver::other_processes_note() const {
  const TraceReader& trace = impl_->trace;
  return impl_->others.note([&trace](uint32_t process) { return trace.process(process).record.pid; });
}

std::optional<uint64_t> Driver::target_pid(const TraceReader& trace) {
  if (trace.info().record.main_pid != 0) return trace.info().record.main_pid;
  if (!trace.processes().empty()) return trace.processes().front().record.pid;
  return std::nullopt;
}

}  // namespace callscope::query
