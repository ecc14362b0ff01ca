// Building a Profile: streaming each thread once, symbolizing once per
// distinct address, re-keying by function.
#include "analysis/report_model.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "analysis/block_io.h"
#include "analysis/off_cpu.h"
#include "common/glob.h"
#include "format/module_map.h"

namespace callscope::analysis {
namespace {

// Decodes one thread's events on a second thread while this one consumes
// them: decoding and building the call tree cost about the same, so on two
// cores the wall time nearly halves. Batches, in TraceReader::CallColumns
// form (a third of TraceEvent's bytes), pass through a few slots.
struct CallBatch {
  // Left uninitialised (new[] of trivial types): zeroing them would cost a
  // small trace more than reading it.
  std::unique_ptr<format::EventKind[]> kinds{new format::EventKind[format::TraceReader::kEventBatch]};
  std::unique_ptr<uint64_t[]> ticks{new uint64_t[format::TraceReader::kEventBatch]};
  std::unique_ptr<uint64_t[]> values{new uint64_t[format::TraceReader::kEventBatch]};
  size_t n = 0, n_values = 0;
};

Status pipelined_events(format::TraceReader& trace, uint32_t thread, const std::function<void(CallBatch&)>& consume) {
  struct Slot {
    CallBatch batch;
    bool full = false;
  };
  constexpr size_t kSlots = 4;
  Slot slots[kSlots];
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  Status result = ok_status();
  // The decoder writes into a batch of its own, each then copied into a
  // slot. Decoding straight into the slots is 2.5x slower (measured on
  // fib(31), 2026-11-22): every line the decoder writes was last read by
  // the consumer's core, where the copy's string stores avoid that.
  struct Sink final : format::TraceReader::CallSink {
    Slot* slots;
    std::mutex& m;
    std::condition_variable& cv;
    size_t w = 0;
    CallBatch local;
    Sink(Slot* s, std::mutex& mutex, std::condition_variable& c) : slots(s), m(mutex), cv(c) {}
    format::TraceReader::CallColumns buffer() override {
      return {local.kinds.get(), local.ticks.get(), local.values.get()};
    }
    bool commit(size_t n, size_t n_values) override {
      std::unique_lock<std::mutex> lk(m);
      cv.wait(lk, [&] { return !slots[w].full; });
      CallBatch& to = slots[w].batch;
      std::memcpy(to.kinds.get(), local.kinds.get(), n * sizeof(format::EventKind));
      std::memcpy(to.ticks.get(), local.ticks.get(), n * sizeof(uint64_t));
      std::memcpy(to.values.get(), local.values.get(), n_values * sizeof(uint64_t));
      to.n = n;
      to.n_values = n_values;
      slots[w].full = true;
      cv.notify_all();
      w = (w + 1) % kSlots;
      return true;
    }
  };
  std::thread producer([&] {
    Sink sink(slots, m, cv);
    auto st = trace.for_each_call_event_into(thread, sink);
    std::lock_guard<std::mutex> lk(m);
    result = st;
    done = true;
    cv.notify_all();
  });
  for (size_t r = 0;; r = (r + 1) % kSlots) {
    std::unique_lock<std::mutex> lk(m);
    cv.wait(lk, [&] { return slots[r].full || done; });
    if (!slots[r].full) break;  // done, and every batch consumed
    lk.unlock();
    consume(slots[r].batch);
    lk.lock();
    slots[r].full = false;
    cv.notify_all();
  }
  producer.join();
  return result;
}

// Keys of the calls at addresses that several modules held over time: one
// per (address, module loaded at the call), with bit 63 set (addresses never
// have it) and the index of its (address, tick of its first call) below.
class ReloadKeys {
 public:
  static constexpr uint64_t kBit = uint64_t{1} << 63;
  ReloadKeys(const format::ModuleMap& map, uint32_t process) : map_(map), process_(process) {}
  uint64_t key(uint64_t addr, uint64_t tick) {
    const int64_t module = map_.at(process_, addr, tick);
    auto [it, fresh] = index_.try_emplace({addr, module}, kBit | keys_.size());
    if (fresh) keys_.push_back({addr, tick});
    return it->second;
  }
  // (address, tick) of a key of ours.
  std::pair<uint64_t, uint64_t> of(uint64_t key) const { return keys_[key & ~kBit]; }

 private:
  const format::ModuleMap& map_;
  uint32_t process_;
  std::map<std::pair<uint64_t, int64_t>, uint64_t> index_;
  std::vector<std::pair<uint64_t, uint64_t>> keys_;
};

// Interns functions by (name, module) and caches (process, key) -> id; a key
// is an address, or one of `reload`'s.
class FunctionTable {
 public:
  FunctionTable(Profile& p, const Resolver& resolve, const ReloadKeys* reload,
                const std::vector<std::string>* reasons = nullptr)
      : p_(p), resolve_(resolve), reload_(reload), reasons_(reasons) {
    for (size_t i = 0; i < p.functions.size(); ++i) by_name_[{p.functions[i].name, p.functions[i].module}] = i;
  }
  uint64_t id(uint32_t process, uint64_t key) {
    auto [it, fresh] = by_addr_.try_emplace({process, key}, 0);
    if (!fresh) return it->second;
    FunctionInfo f = key == kLostKey   ? FunctionInfo{"[lost events]", "", "", 0}
                     : key == kWaitKey ? FunctionInfo{"[waited for recorder]", "", "", 0}
                     : reasons_ && (key & ~kReasonMask) == kReasonKey
                         ? FunctionInfo{(*reasons_)[key & kReasonMask], "", "", 0}
                     : reload_ && (key & ReloadKeys::kBit)
                         ? resolve_(process, reload_->of(key).first, reload_->of(key).second)
                         : resolve_(process, key, kNoTick);
    auto [nit, nfresh] = by_name_.try_emplace({f.name, f.module}, p_.functions.size());
    if (nfresh) p_.functions.push_back(std::move(f));
    it->second = nit->second;
    return it->second;
  }

 private:
  Profile& p_;
  const Resolver& resolve_;
  const ReloadKeys* reload_;
  const std::vector<std::string>* reasons_;
  std::map<std::pair<std::string, std::string>, uint64_t> by_name_;
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> by_addr_;
};

void keep(Profile& p, uint32_t thread, uint32_t process, const CallTree& raw, const CallTreeBuilder& b,
          uint64_t events, const Resolver& resolve, const ReloadKeys* reload = nullptr) {
  FunctionTable table(p, resolve, reload);
  ThreadProfile t;
  t.thread = thread;
  t.events = events;
  t.lost_events = b.lost_events();
  t.stray_exits = b.stray_exits();
  t.waits = b.waits();
  t.wait_ticks = b.wait_ticks();
  merge_tree(t.tree, raw, [&](uint64_t addr) { return table.id(process, addr); });
  p.threads.push_back(std::move(t));
}

// A thread's time off its CPU, from the trace's context switches (empty
// without them).
Result<WaitClock> wait_clock(format::TraceReader& trace, uint32_t thread) {
  if (!trace.has_switches()) return WaitClock{};
  CALLSCOPE_TRY(auto events, trace.sys_events(thread));
  return WaitClock(events, [&trace](uint64_t ns) { return trace.mono_to_tick(ns); });
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// build_profile inside a window: event by event through an EventWindow (the
// fast column path has no stack pointers or depths to rebuild frames from).
Result<Profile> build_profile_in(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                 const Resolver& resolve, TickWindow window) {
  Profile p;
  const format::ModuleMap modules(trace.modules());
  for (uint32_t ti : threads) {
    CallTree raw;
    CallTreeBuilder b(raw);
    CALLSCOPE_TRY(WaitClock clock, wait_clock(trace, ti));
    b.set_wait_clock(&clock);
    p.has_waits = p.has_waits || !clock.empty();
    EventWindow w(window);
    uint64_t events = 0;
    const uint32_t process = trace.threads()[ti].record.process_index;
    ReloadKeys reload(modules, process);
    const bool reused = modules.has_reuse(process);
    auto st = trace.for_each_event_batch(ti, [&](const format::TraceEvent* ev, size_t n) {
      for (size_t i = 0; i < n; ++i) {
        format::TraceEvent e = ev[i];  // keyed at the time of the call, before the window moves it
        if (reused && format::is_entry(e.kind) && modules.reused(process, e.addr)) e.addr = reload.key(e.addr, e.tick);
        const bool more = w.feed(e, [&](const format::TraceEvent& in) {
          ++events;
          b.on_event(in);
        });
        if (!more) return false;
      }
      return true;
    });
    if (!st) return st.error().context("thread " + std::to_string(ti));
    b.finish();
    keep(p, ti, process, raw, b, events, resolve, &reload);
  }
  return p;
}

}  // namespace

Result<std::vector<uint32_t>> select_threads(const format::TraceReader& trace, const std::vector<std::string>& specs) {
  const auto& threads = trace.threads();
  std::vector<bool> chosen(threads.size(), specs.empty());
  // Threads that ran without being recorded have no calls: never in a
  // table (the commands' loss warning names them), and asked for alone, an
  // error that says so.
  auto untraced = [&](uint32_t i) { return (threads[i].record.flags & format::kThreadUntraced) != 0; };
  for (const std::string& spec : specs) {
    bool any = false, only_untraced = false;
    for (uint32_t i = 0; i < threads.size(); ++i) {
      bool match = all_digits(spec) ? std::to_string(i) == spec : glob_match(spec, threads[i].name);
      for (const auto& n : threads[i].names) match = match || (!all_digits(spec) && glob_match(spec, n.name));
      if (match && untraced(i)) only_untraced = true;
      else if (match) chosen[i] = any = true;
    }
    if (!any && only_untraced)
      return Error("thread '" + spec + "' ran without being recorded: it has no calls ('callscope info' says why)");
    if (!any)
      return Error("no thread matches '" + spec + "' (the trace has " + std::to_string(threads.size()) +
                   " threads; see 'callscope info')");
  }
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < threads.size(); ++i)
    if (chosen[i] && !untraced(i)) out.push_back(i);
  return out;
}

Result<Profile> build_profile(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                              const Resolver& resolve, TickWindow window) {
  if (!window.all()) return build_profile_in(trace, threads, resolve, window);
  Profile p;
  const format::ModuleMap modules(trace.modules());
  for (uint32_t ti : threads) {
    CallTree raw;
    CallTreeBuilder b(raw);
    CALLSCOPE_TRY(WaitClock clock, wait_clock(trace, ti));
    b.set_wait_clock(&clock);
    p.has_waits = p.has_waits || !clock.empty();
    uint64_t events = 0;
    const uint32_t process = trace.threads()[ti].record.process_index;
    ReloadKeys reload(modules, process);
    const bool reused = modules.has_reuse(process);
    auto st = pipelined_events(trace, ti, [&](CallBatch& batch) {
      events += batch.n;
      if (reused) {  // entries of reloaded modules get keys of their own
        for (size_t i = 0, v = 0; i < batch.n; ++i) {
          if (!format::carries_value(batch.kinds[i])) continue;
          uint64_t& value = batch.values[v++];
          if (format::is_entry(batch.kinds[i]) && modules.reused(process, value)) value = reload.key(value, batch.ticks[i]);
        }
      }
      b.on_columns(batch.kinds.get(), batch.ticks.get(), batch.values.get(), batch.n);
    });
    if (!st) return st.error().context("thread " + std::to_string(ti));
    b.finish();
    keep(p, ti, process, raw, b, events, resolve, &reload);
  }
  return p;
}

uint64_t add_snapshot(CallTree& tree, const std::vector<format::ProfileNodeRecord>& nodes, bool open_counted) {
  const size_t n = nodes.size();
  std::vector<bool> live(n, false);
  for (size_t i = n; i-- > 1;) {
    const auto& r = nodes[i];
    if (r.flags & format::kProfNodeExcluded) continue;
    if (r.calls || r.total) live[i] = true;
    if (live[i] && r.parent < i) live[r.parent] = true;
  }
  std::vector<uint32_t> id(n, kRootNode);
  uint64_t calls = 0;
  for (size_t i = 1; i < n; ++i) {
    const auto& r = nodes[i];
    if (!live[i] || !(r.parent == 0 || live[r.parent])) continue;
    id[i] = tree.child(id[r.parent], r.fn);
    Stats s;
    s.calls = r.calls;
    s.total = r.total;
    s.self = r.self;
    s.min = r.calls ? r.min : kNoTick;
    s.max = r.max;
    s.first = r.first;
    s.first_tick = r.calls ? r.first_tick : kNoTick;
    s.open = (r.flags & format::kProfNodeOpen) ? 1 : 0;
    s.inherited = r.flags >> format::kProfNodeInheritedShift;
    if (s.open && !open_counted) {  // trace 1.1: the open call's time is there, not the call
      if (s.calls == 0) {  // its time alone; when it began is not known
        s.min = s.max = s.first = s.total;
        s.first_tick = 0;
      }
      ++s.calls;
    }
    tree.node(id[i]).stats.merge(s);
    calls += s.calls;
  }
  return calls;
}

std::vector<uint32_t> final_dumps(const format::TraceReader& trace) {
  // Each process's snapshots end with its final state: the last of each.
  std::map<uint32_t, uint32_t> last;
  for (uint32_t i = 0; i < trace.dumps().size(); ++i) last[trace.dumps()[i].process_index] = i;
  std::vector<uint32_t> out;
  for (auto& [process, index] : last) out.push_back(index);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint32_t> snapshot_numbers(const format::TraceReader& trace) {
  std::vector<uint32_t> out;
  std::set<uint32_t> seen;
  bool unique = true;
  for (const format::DumpRecord& d : trace.dumps()) {
    out.push_back(d.seq);
    unique = unique && d.seq != 0 && seen.insert(d.seq).second;
  }
  if (!unique)
    for (uint32_t i = 0; i < out.size(); ++i) out[i] = i + 1;
  return out;
}

std::optional<uint32_t> snapshot_index(const format::TraceReader& trace, uint32_t k) {
  const std::vector<uint32_t> numbers = snapshot_numbers(trace);
  for (uint32_t i = 0; i < numbers.size(); ++i)
    if (numbers[i] == k) return i;
  return std::nullopt;
}

std::vector<uint32_t> snapshots_by_number(const format::TraceReader& trace) {
  const std::vector<uint32_t> numbers = snapshot_numbers(trace);
  std::vector<uint32_t> order(numbers.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return numbers[a] < numbers[b]; });
  return order;
}

Result<Profile> build_profile_from_dumps(format::TraceReader& trace, const std::vector<uint32_t>& dumps,
                                         const std::vector<uint32_t>& threads, const Resolver& resolve) {
  Profile p;
  for (uint32_t ti : threads) {
    CallTree raw;
    uint64_t calls = 0;
    bool found = false;
    for (uint32_t d : dumps) {
      auto nodes = trace.read_tree(d, ti);
      if (!nodes) return nodes.error().context("thread " + std::to_string(ti));
      if (nodes->empty()) continue;
      found = true;
      // Trace 1.2 counts the calls open at a snapshot; 1.1 only added their time.
      const bool open_counted = trace.header().version_major > 1 || trace.header().version_minor >= 2;
      calls += add_snapshot(raw, *nodes, open_counted);
    }
    if (!found) continue;
    CallTreeBuilder unused(raw);
    keep(p, ti, trace.threads()[ti].record.process_index, raw, unused, calls * 2, resolve);
  }
  return p;
}

void add_thread(Profile& p, uint32_t thread, uint32_t process, const std::vector<format::TraceEvent>& events,
                const Resolver& resolve) {
  CallTree raw;
  CallTreeBuilder b(raw);
  for (const format::TraceEvent& e : events) b.on_event(e);
  b.finish();
  keep(p, thread, process, raw, b, events.size(), resolve);
}

std::vector<uint64_t> leave_out_self_time(Profile& p, const std::vector<std::string>& globs) {
  std::vector<uint64_t> left_out(p.threads.size(), 0);
  if (globs.empty()) return left_out;
  std::vector<bool> idle(p.functions.size());
  for (size_t i = 0; i < p.functions.size(); ++i) idle[i] = glob_match_any(globs, p.functions[i].name);
  for (size_t ti = 0; ti < p.threads.size(); ++ti) {
    CallTree& tree = p.threads[ti].tree;
    // A node's id is greater than its parent's: walking down from the last
    // id, every node sees what its subtree gave up before passing it up.
    std::vector<uint64_t> cut(tree.size(), 0);
    for (size_t id = tree.size(); id-- > 1;) {
      CallNode& n = tree.node(static_cast<uint32_t>(id));
      if (n.key < idle.size() && idle[n.key]) {
        cut[id] += n.stats.self;
        n.stats.self = 0;
      }
      n.stats.total -= std::min(n.stats.total, cut[id]);
      cut[n.parent] += cut[id];
    }
    left_out[ti] = cut[kRootNode];
  }
  return left_out;
}

uint64_t wall_ticks(const format::TraceReader& trace, uint32_t thread) {
  const format::ThreadRecord& r = trace.threads()[thread].record;
  return r.end_tick > r.start_tick ? r.end_tick - r.start_tick : 0;
}

CallTree merged_tree(const Profile& p) {
  CallTree t;
  for (const ThreadProfile& tp : p.threads) merge_tree(t, tp.tree, [](uint64_t k) { return k; });
  return t;
}


namespace {

// What goes under a thread's call path at a time: a stretch off the CPU
// (start to end), a page fault (start == end) or a CPU sample (the CPU time
// it stands for: `ticks`), as a leaf named by its reason; `frame`, when not
// 0, the address of the instruction that took it, a frame under the
// innermost traced one when its function is another (memset, called by the
// traced function). Without a reason the frame itself (or the innermost
// traced one) holds it.
struct PathLeaf {
  uint64_t start = 0, end = 0;  // ticks
  std::string reason;
  uint64_t frame = 0;
  bool off_cpu = true;  // its time is time off the CPU (Stats::wait)
  uint64_t ticks = 0;   // a sample's: its time is `ticks` of CPU (end == start)
  // A sample's unwound frames above `frame`, innermost first (format's
  // kSampleCaller: 0 for "the frames further out are not known").
  std::vector<uint64_t> callers;
};

// One thread's leaves under the call paths they happened in, each named by
// its reason (keyed kReasonKey | reason).
class LeafPathBuilder {
 public:
  // `same(key, addr)`: the frame keyed `key` is of the function holding `addr`.
  LeafPathBuilder(CallTree& tree, std::vector<PathLeaf> leaves, std::vector<std::string>& reasons,
                  std::map<std::string, uint64_t>& reason_ids, std::function<bool(uint64_t, uint64_t)> same = {})
      : tree_(tree), leaves_(std::move(leaves)), reasons_(reasons), reason_ids_(reason_ids), same_(std::move(same)) {}
  void on_event(const format::TraceEvent& e) {
    flush(e.tick);
    switch (e.kind) {
      case format::EventKind::kEntry:
      case format::EventKind::kEntryInherited:
        stack_.push_back(e.addr);
        break;
      case format::EventKind::kExit:
      case format::EventKind::kExitUnwound:
      case format::EventKind::kExitTruncated:
        if (!stack_.empty()) stack_.pop_back();
        nodes_.resize(std::min(nodes_.size(), stack_.size()));
        break;
      default:
        break;
    }
  }
  // The leaves after the last event, then each path's totals.
  void finish() {
    flush(kNoTick);
    for (uint32_t id = static_cast<uint32_t>(tree_.size()); id-- > 1;) {
      const CallNode& n = tree_.node(id);
      Stats& up = tree_.node(n.parent).stats;
      up.total += n.stats.total;
      up.wait += n.stats.wait;
      up.calls += n.stats.calls;
      up.min = std::min(up.min, n.stats.min);  // a frame's shortest and longest stretch below it
      up.max = std::max(up.max, n.stats.max);
      if (n.stats.first_tick < up.first_tick) {
        up.first_tick = n.stats.first_tick;
        up.first = n.stats.first;
      }
    }
  }

 private:
  // Every leaf that began before `tick` went under the frames open now.
  // Their nodes are made then: the tree holds the paths that have leaves.
  void flush(uint64_t tick) {
    for (; next_ < leaves_.size() && leaves_[next_].start < tick; ++next_) {
      while (nodes_.size() < stack_.size())
        nodes_.push_back(tree_.child(nodes_.empty() ? kRootNode : nodes_.back(), stack_[nodes_.size()]));
      const PathLeaf& l = leaves_[next_];
      uint32_t under = nodes_.empty() ? kRootNode : nodes_.back();
      bool in_open_frame = same_ && !stack_.empty() && l.frame && same_(stack_.back(), l.frame);
      if (!l.callers.empty() && !in_open_frame) {
        // The unwound frames between the innermost call the hooks saw and
        // the sampled instruction (all of them, outermost first, in a
        // thread without hooks): code without hooks, a library's.
        size_t outer = l.callers.size();
        if (!stack_.empty()) {
          outer = 0;
          while (same_ && outer < l.callers.size() && !(l.callers[outer] && same_(stack_.back(), l.callers[outer])))
            ++outer;
          if (outer == l.callers.size()) outer = 0;  // the hooked frame not among them: none taken
        } else if (l.callers.back() == 0) {
          under = reason_node(under, "[outer frames not unwound]");
          --outer;
        }
        for (size_t i = outer; i-- > 0;)
          if (l.callers[i]) under = tree_.child(under, l.callers[i]);
      }
      if (l.frame && !in_open_frame) under = tree_.child(under, l.frame);
      const uint32_t at = l.reason.empty() ? under : reason_node(under, l.reason);
      if (at == kRootNode) continue;  // (a leaf has a reason or a frame)
      const uint64_t ticks = l.ticks ? l.ticks : l.end - l.start;
      Stats& s = tree_.node(at).stats;
      s.add_call(l.start, ticks);
      s.total += ticks;
      s.self += ticks;
      if (l.off_cpu) {
        s.wait += ticks;
        s.self_wait += ticks;
      }
    }
  }
  uint32_t reason_node(uint32_t under, const std::string& reason) {
    auto [it, fresh] = reason_ids_.try_emplace(reason, reasons_.size());
    if (fresh) reasons_.push_back(reason);
    return tree_.child(under, kReasonKey | it->second);
  }
  CallTree& tree_;
  std::vector<PathLeaf> leaves_;
  size_t next_ = 0;
  std::vector<uint64_t> stack_;  // the open frames' keys
  std::vector<uint32_t> nodes_;  // the nodes of the first of them (made as a leaf needs them)
  std::vector<std::string>& reasons_;
  std::map<std::string, uint64_t>& reason_ids_;
  std::function<bool(uint64_t, uint64_t)> same_;
};

// A thread's leaves, from its kernel's events.
using LeavesOf = std::function<std::vector<PathLeaf>(const std::vector<format::SysEvent>&, const format::ThreadRecord&)>;

// The trees of `threads`, each of its leaves under its call path.
Result<Profile> build_leaf_profile(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                   const Resolver& resolve, const LeavesOf& leaves_of) {
  Profile p;
  p.has_waits = trace.has_switches();
  const format::ModuleMap modules(trace.modules());
  std::vector<std::string> reasons;
  std::map<std::string, uint64_t> reason_ids;
  for (uint32_t ti : threads) {
    CALLSCOPE_TRY(auto events, trace.sys_events(ti));
    const format::ThreadRecord& r = trace.threads()[ti].record;
    const uint32_t process = r.process_index;
    ReloadKeys reload(modules, process);
    FunctionTable table(p, resolve, &reload, &reasons);
    const bool reused = modules.has_reuse(process);
    std::vector<PathLeaf> leaves = leaves_of(events, r);
    // An instruction where several modules were loaded over time is of the
    // one loaded then, as a call's address is.
    for (PathLeaf& l : leaves) {
      if (!reused) break;
      if (l.frame && modules.reused(process, l.frame)) l.frame = reload.key(l.frame, l.start);
      for (uint64_t& c : l.callers)
        if (c && modules.reused(process, c)) c = reload.key(c, l.start);
    }
    CallTree raw;
    LeafPathBuilder b(raw, std::move(leaves), reasons, reason_ids,
                      [&](uint64_t key, uint64_t addr) { return table.id(process, key) == table.id(process, addr); });
    uint64_t n = 0;
    auto st = trace.for_each_event_batch(ti, [&](const format::TraceEvent* ev, size_t count) {
      for (size_t i = 0; i < count; ++i) {
        format::TraceEvent e = ev[i];
        if (reused && format::is_entry(e.kind) && modules.reused(process, e.addr)) e.addr = reload.key(e.addr, e.tick);
        b.on_event(e);
      }
      n += count;
      return true;
    });
    if (!st) return st.error().context("thread " + std::to_string(ti));
    b.finish();
    ThreadProfile t;
    t.thread = ti;
    t.events = n;
    merge_tree(t.tree, raw, [&](uint64_t key) { return table.id(process, key); });
    p.threads.push_back(std::move(t));
  }
  return p;
}

}  // namespace

Result<Profile> build_wait_profile(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                   const Resolver& resolve) {
  if (!trace.has_switches())
    return build_leaf_profile(trace, threads, resolve,
                              [](const std::vector<format::SysEvent>&, const format::ThreadRecord&) {
                                return std::vector<PathLeaf>{};
                              });
  return build_leaf_profile(trace, threads, resolve,
                            [&trace](const std::vector<format::SysEvent>& events, const format::ThreadRecord& r) {
                              std::vector<PathLeaf> leaves;
                              for (const OffCpu& o : off_cpu_stretches(
                                       events, r.end_tick, [&trace](uint64_t ns) { return trace.mono_to_tick(ns); }))
                                leaves.push_back({o.start, o.end,
                                                  off_cpu_reason(o, [&trace](uint64_t dev) {
                                                    return trace.info().block_device(dev);
                                                  }),
                                                  0});
                              return leaves;
                            });
}

Result<Profile> build_fault_profile(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                    const Resolver& resolve) {
  return build_leaf_profile(trace, threads, resolve,
                            [&trace](const std::vector<format::SysEvent>& events, const format::ThreadRecord&) {
                              std::vector<PathLeaf> leaves;
                              for (const format::SysEvent& e : events) {
                                if (e.kind != format::SysKind::kPageFault) continue;
                                const uint64_t tick = trace.mono_to_tick(e.mono_ns);
                                const bool kernel = static_cast<uint64_t>(e.value) & format::kFaultInKernel;
                                leaves.push_back({tick, tick, fault_reason(static_cast<uint64_t>(e.value)),
                                                  kernel ? 0 : e.args[0]});
                              }
                              return leaves;
                            });
}

Result<Profile> build_sample_profile(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                     const Resolver& resolve) {
  const double ns_per_tick = trace.ticks_to_ns(1);
  return build_leaf_profile(
      trace, threads, resolve, [&trace, ns_per_tick](const std::vector<format::SysEvent>& events, const format::ThreadRecord&) {
        std::vector<PathLeaf> leaves;
        for (const format::SysEvent& e : events) {
          if (e.kind == format::SysKind::kSampleCaller) {
            if (!leaves.empty()) leaves.back().callers.push_back(e.arg);
            continue;
          }
          if (e.kind != format::SysKind::kSample) continue;
          const uint64_t tick = trace.mono_to_tick(e.mono_ns);
          const auto v = static_cast<uint64_t>(e.value);
          PathLeaf l{tick, tick, (v & 1) ? "[kernel]" : "", (v & 1) ? 0 : e.arg, false, 0};
          // (a period past 10 s is damage: no rate the recorder takes makes one)
          const double period = std::min(static_cast<double>(v >> 1), 1e10);
          l.ticks = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(period / ns_per_tick)));
          leaves.push_back(std::move(l));
        }
        return leaves;
      });
}

Result<Profile> build_io_profile(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                 const Resolver& resolve) {
  return build_leaf_profile(
      trace, threads, resolve, [&trace](const std::vector<format::SysEvent>& events, const format::ThreadRecord&) {
        std::vector<PathLeaf> leaves;
        for (const IoRequest& r : block_io_requests(events)) {
          const uint64_t start = trace.mono_to_tick(r.start->mono_ns);
          std::string device = trace.info().block_device(r.start->arg);
          if (!r.done()) device += ", completion not seen";
          PathLeaf l{start, r.done() ? std::max(start, trace.mono_to_tick(r.done_ns)) : start,
                     io_reason(static_cast<uint64_t>(r.start->value), device), 0};
          l.off_cpu = false;
          leaves.push_back(std::move(l));
        }
        return leaves;
      });
}

}  // namespace callscope::analysis
