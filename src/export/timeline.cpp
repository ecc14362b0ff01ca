#include "export/timeline.h"

#include <algorithm>

namespace callscope::exporter {

uint32_t FunctionIds::id(uint32_t process, uint64_t addr, uint64_t tick, bool reused) {
  Hit& h = recent_[(addr >> 4) & (recent_.size() - 1)];
  if (!reused && h.addr == addr && h.process == process) return h.id;
  uint32_t id;
  auto it = reused ? by_addr_.end() : by_addr_.find({process, addr});
  if (it != by_addr_.end()) {
    id = it->second;
  } else {
    analysis::FunctionInfo f = resolve_(process, addr, reused ? tick : analysis::kNoTick);
    auto [nit, fresh] = by_name_.try_emplace({f.name, f.module}, static_cast<uint32_t>(functions_.size()));
    if (fresh) functions_.push_back(std::move(f));
    id = nit->second;
    if (!reused) by_addr_[{process, addr}] = id;
  }
  if (!reused) h = {addr, process, id};
  return id;
}

uint32_t FunctionIds::named(const std::string& name) {
  auto [it, fresh] = by_name_.try_emplace({name, ""}, static_cast<uint32_t>(functions_.size()));
  if (fresh) functions_.push_back({name, "", "", 0});
  return it->second;
}

namespace {

class ThreadSlices {
 public:
  ThreadSlices(SliceSink& sink, const TimelineOptions& o, FunctionIds& fns, std::vector<int8_t>& wanted_cache,
               TimelineCounts& counts)
      : sink_(sink), o_(o), fns_(fns), wanted_(wanted_cache), counts_(counts) {}

  void on(const format::TraceEvent& e, uint32_t process, const format::ModuleMap& modules) {
    using K = format::EventKind;
    const uint64_t prev = last_;
    last_ = e.tick;
    switch (e.kind) {
      case K::kEntry:
      case K::kEntryInherited: {
        const bool reused = modules.has_reuse(process) && modules.reused(process, e.addr);
        const uint32_t fn = fns_.id(process, e.addr, e.tick, reused);
        const bool inside = !o_.wanted || (!stack_.empty() && stack_.back().inside) || wanted(fn);
        stack_.push_back({fn, e.tick, inside, false});
        if (inside) {
          counts_.matched = true;
          send_open();
        }
        break;
      }
      case K::kExit:
      case K::kExitUnwound:
      case K::kExitTruncated:
        if (stack_.empty()) break;
        if (stack_.back().sent) {
          sink_.end(e.tick);
          ++counts_.slices;
        }
        stack_.pop_back();
        break;
      case K::kLost: instant(e.tick, Instant::kLost, e.arg); break;
      case K::kPause: instant(e.tick, Instant::kPause, 0); break;
      case K::kResume: instant(e.tick, Instant::kResume, 0); break;
      case K::kMark: instant(e.tick, Instant::kMark, e.arg); break;
      case K::kWait: {
        // The thread waited for the recorder inside the frames open now: a
        // slice of its own under the innermost, from the wait's start (not
        // before the event it was made for) to its end.
        if (o_.wanted && (stack_.empty() || !stack_.back().inside)) break;
        send_open();
        sink_.begin(e.tick >= e.arg ? std::max(e.tick - e.arg, prev) : prev, fns_.named("[waited for recorder]"));
        sink_.end(e.tick);
        ++counts_.slices;
        break;
      }
      default: break;
    }
  }

  void finish() {
    while (!stack_.empty()) {
      if (stack_.back().sent) {
        sink_.end(last_);
        ++counts_.slices;
      }
      stack_.pop_back();
    }
    sink_.end_thread(last_);
  }

 private:
  struct Frame {
    uint32_t fn;
    uint64_t tick;
    bool inside;  // a wanted function or below one
    bool sent;
  };
  bool wanted(uint32_t fn) {
    if (fn >= wanted_.size()) wanted_.resize(fn + 1, -1);
    if (wanted_[fn] < 0) wanted_[fn] = o_.wanted(fns_.functions()[fn]) ? 1 : 0;
    return wanted_[fn] == 1;
  }
  // Sends the begins of the frames not sent yet, outermost first.
  void send_open() {
    size_t i = stack_.size();
    while (i > 0 && !stack_[i - 1].sent) --i;
    for (; i < stack_.size(); ++i) {
      sink_.begin(stack_[i].tick, stack_[i].fn);
      stack_[i].sent = true;
    }
  }
  void instant(uint64_t tick, Instant what, uint64_t arg) {
    if (o_.wanted && (stack_.empty() || !stack_.back().inside)) return;
    sink_.instant(tick, what, arg);
    ++counts_.instants;
  }

  SliceSink& sink_;
  const TimelineOptions& o_;
  FunctionIds& fns_;
  std::vector<int8_t>& wanted_;
  TimelineCounts& counts_;
  std::vector<Frame> stack_;
  uint64_t last_ = 0;
};

}  // namespace

Result<TimelineCounts> stream_timeline(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                       FunctionIds& functions, const TimelineOptions& o, SliceSink& sink) {
  TimelineCounts counts;
  const format::ModuleMap modules(trace.modules());
  std::vector<int8_t> wanted_cache;
  for (uint32_t ti : threads) {
    const uint32_t process = trace.threads()[ti].record.process_index;
    sink.begin_thread(ti);
    ThreadSlices slices(sink, o, functions, wanted_cache, counts);
    analysis::EventWindow window(o.window);
    const bool windowed = !o.window.all();
    auto st = trace.for_each_event_batch(ti, [&](const format::TraceEvent* ev, size_t n) {
      if (!windowed) {
        for (size_t i = 0; i < n; ++i) slices.on(ev[i], process, modules);
        return true;
      }
      for (size_t i = 0; i < n; ++i)
        if (!window.feed(ev[i], [&](const format::TraceEvent& e) { slices.on(e, process, modules); })) return false;
      return true;
    });
    if (!st) return st.error().context("thread " + std::to_string(ti));
    slices.finish();
  }
  return counts;
}

}  // namespace callscope::exporter
