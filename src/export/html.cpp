#include "export/html.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <queue>

#include "analysis/profile.h"
#include "export/flame.h"
#include "export/kernel_tracks.h"
#include "export/ns.h"
#include "export/stacks.h"

namespace callscope::exporter {

extern const char kFlameJs[];
extern const char kReportJs[];
extern const char kReportCss[];

namespace {

using nlohmann::json;

// Run-length pairs: [value, run, value, run, ...].
template <class T>
json rle(const std::vector<T>& v) {
  json out = json::array();
  for (size_t i = 0; i < v.size();) {
    size_t j = i + 1;
    while (j < v.size() && v[j] == v[i]) ++j;
    out.push_back(v[i]);
    out.push_back(j - i);
    i = j;
  }
  return out;
}

// The timeline's two levels of detail (html.h), from one pass over the
// events.
class TimelineSink final : public SliceSink {
 public:
  TimelineSink(const format::TraceReader& trace, uint64_t from, uint64_t to, uint32_t buckets, const HtmlLimits& lim,
               std::function<int64_t(uint32_t)> fn_index)
      : trace_(trace), from_(from), to_(std::max(to, from + 1)), buckets_(buckets), lim_(lim),
        fn_index_(std::move(fn_index)) {}

  void begin_thread(uint32_t thread) override {
    threads_.push_back({thread, {}});
    stack_.clear();
  }
  void begin(uint64_t tick, uint32_t fn) override { stack_.push_back({tick, fn}); }
  void end(uint64_t tick) override {
    const auto [start, fn] = stack_.back();
    stack_.pop_back();
    ++calls_;
    const uint32_t depth = static_cast<uint32_t>(stack_.size());
    const uint64_t dur = tick - start;
    const int64_t index = fn_index_(fn);
    if (depth >= lim_.max_depth) {
      ++too_deep_;
      return;
    }
    raster(threads_.back(), depth, start, tick, index);
    if (lim_.detail_calls == 0) return;
    Call c{dur, start, static_cast<uint32_t>(threads_.size() - 1), depth, index};
    if (longest_.size() < lim_.detail_calls) {
      longest_.push(c);
    } else if (dur > longest_.top().dur) {
      longest_.pop();
      longest_.push(c);
    }
  }
  void instant(uint64_t tick, Instant what, uint64_t arg) override {
    if (instants_.size() >= 2000) return;
    static const char* const kinds[] = {"lost", "stop", "resume", "mark"};
    instants_.push_back({threads_.size() - 1, ns_of(trace_, tick), kinds[static_cast<int>(what)], arg});
  }
  void end_thread(uint64_t) override {}

  json to_json(const std::vector<std::string>& labels) {
    json out;
    out["from_ns"] = ns_of(trace_, from_);
    out["to_ns"] = ns_of(trace_, to_);
    out["buckets"] = buckets_;
    out["calls"] = calls_;
    out["too_deep"] = too_deep_;
    out["max_depth"] = lim_.max_depth;
    json threads = json::array();
    for (size_t i = 0; i < threads_.size(); ++i) {
      json lanes = json::array();
      for (const Lane& l : threads_[i].lanes) {
        std::vector<uint32_t> busy(l.busy.size());
        const double bucket_ticks = static_cast<double>(to_ - from_) / buckets_;
        for (size_t b = 0; b < busy.size(); ++b)
          busy[b] = static_cast<uint32_t>(std::lround(std::min(100.0, 100.0 * l.busy[b] / bucket_ticks)));
        lanes.push_back({{"fn", rle(l.fn)}, {"busy", rle(busy)}});
      }
      threads.push_back({{"thread", threads_[i].thread}, {"label", labels[i]}, {"lanes", lanes}});
    }
    out["threads"] = threads;
    // The longest calls, by thread and start; starts as deltas within a thread.
    std::vector<Call> calls;
    calls.reserve(longest_.size());
    out["detail_min_ns"] = longest_.size() >= lim_.detail_calls && !longest_.empty() ? ns_of(trace_, longest_.top().dur) : 0;
    while (!longest_.empty()) {
      calls.push_back(longest_.top());
      longest_.pop();
    }
    std::sort(calls.begin(), calls.end(), [](const Call& a, const Call& b) {
      return a.slot != b.slot ? a.slot < b.slot : a.start != b.start ? a.start < b.start : a.depth < b.depth;
    });
    json detail = json::array();
    uint32_t slot = ~0u;
    uint64_t prev = 0;
    for (const Call& c : calls) {
      if (c.slot != slot) {
        slot = c.slot;
        prev = 0;
      }
      const uint64_t start = ns_of(trace_, c.start), end = ns_of(trace_, c.start + c.dur);
      detail.push_back({c.slot, start - prev, end - start, c.depth, c.fn});
      prev = start;
    }
    out["detail"] = detail;
    json instants = json::array();
    for (const auto& i : instants_) instants.push_back({i.slot, i.ns, i.kind, i.arg});
    out["instants"] = instants;
    return out;
  }
  uint64_t detail_calls() const { return longest_.size(); }
  uint64_t calls() const { return calls_; }

 private:
  struct Lane {
    std::vector<int64_t> fn;    // the function at each bucket's middle (-1: none)
    std::vector<double> busy;   // ticks covered in each bucket
  };
  struct Thread {
    uint32_t thread;
    std::vector<Lane> lanes;
  };
  struct Call {
    uint64_t dur, start;
    uint32_t slot, depth;
    int64_t fn;
    bool operator<(const Call& o) const { return dur > o.dur; }  // a min-heap on duration
  };

  void raster(Thread& t, uint32_t depth, uint64_t start, uint64_t end, int64_t fn) {
    if (end <= from_ || start >= to_) return;
    start = std::max(start, from_);
    end = std::min(end, to_);
    while (t.lanes.size() <= depth) t.lanes.push_back({std::vector<int64_t>(buckets_, -1), std::vector<double>(buckets_, 0)});
    Lane& l = t.lanes[depth];
    const double span = static_cast<double>(to_ - from_);
    const double s = static_cast<double>(start - from_) * buckets_ / span;
    const double e = static_cast<double>(end - from_) * buckets_ / span;
    const uint32_t b0 = std::min<uint32_t>(buckets_ - 1, static_cast<uint32_t>(s));
    const uint32_t b1 = std::min<uint32_t>(buckets_ - 1, static_cast<uint32_t>(e));
    const double per_bucket = span / buckets_;
    for (uint32_t b = b0; b <= b1; ++b) {
      const double lo = std::max(s, static_cast<double>(b)), hi = std::min(e, static_cast<double>(b) + 1);
      if (hi > lo) l.busy[b] += (hi - lo) * per_bucket;
      const double mid = b + 0.5;
      if (s <= mid && mid < e) l.fn[b] = fn;
    }
  }

  struct InstantRec {
    size_t slot;
    uint64_t ns;
    const char* kind;
    uint64_t arg;
  };

  const format::TraceReader& trace_;
  uint64_t from_, to_;
  uint32_t buckets_;
  const HtmlLimits& lim_;
  std::function<int64_t(uint32_t)> fn_index_;
  std::vector<Thread> threads_;
  std::vector<std::pair<uint64_t, uint32_t>> stack_;
  std::priority_queue<Call> longest_;
  std::vector<InstantRec> instants_;
  uint64_t calls_ = 0, too_deep_ = 0;
};

// A call tree's nodes, parents first: [parent, function (-1: a thread's
// frame), thread, calls, total ns, self ns]; past `limit` nodes, those with
// the least total time are left out (a parent has at least its children's).
json tree_json(const format::TraceReader& trace, const StackTree& t, uint32_t limit, uint64_t& left_out) {
  uint64_t threshold = 0;
  const bool limited = t.nodes.size() > limit + 1;
  if (limited) {
    std::vector<uint64_t> totals;
    totals.reserve(t.nodes.size());
    for (size_t i = 1; i < t.nodes.size(); ++i) totals.push_back(t.nodes[i].stats.total);
    std::nth_element(totals.begin(), totals.begin() + limit, totals.end(), std::greater<>());
    threshold = totals[limit];
  }
  std::vector<int64_t> out_id(t.nodes.size(), -1);
  out_id[0] = 0;
  json nodes = json::array();
  nodes.push_back({-1, -1, 0, 0, 0, 0});
  walk_stacks(t, [&](uint32_t id, const std::vector<uint32_t>&) {
    const StackNode& n = t.nodes[id];
    if (out_id[n.parent] < 0 || (limited && n.stats.total <= threshold)) {
      ++left_out;
      return;
    }
    out_id[id] = static_cast<int64_t>(nodes.size());
    nodes.push_back({out_id[n.parent], n.function, n.thread, n.stats.calls, ns_of(trace, n.stats.total),
                     ns_of(trace, n.stats.self)});
  });
  return nodes;
}

std::string thread_label(const format::TraceReader& t, uint32_t i) {
  const auto& th = t.threads()[i];
  return "#" + std::to_string(i) + " " + (th.name.empty() ? "thread" : th.name) + " (tid " + std::to_string(th.record.tid) + ")";
}

// JSON inside <script>: no '<' at all ("</script", "<!--" would change how
// the HTML parser reads the element); '<' only occurs inside JSON strings,
// where \u003c is the same character.
std::string script_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 64);
  for (char c : s) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

// Only the functions something refers to, renumbered in order of first use
// (a program's functions can outnumber what the bounded views show).
void keep_referenced_functions(json& d) {
  const json all = std::move(d["functions"]);
  std::vector<int64_t> to(all.size(), -1);
  json kept = json::array();
  auto use = [&](json& v) {
    const int64_t i = v.get<int64_t>();
    if (i < 0) return;
    if (to[static_cast<size_t>(i)] < 0) {
      to[static_cast<size_t>(i)] = static_cast<int64_t>(kept.size());
      kept.push_back(all[static_cast<size_t>(i)]);
    }
    v = to[static_cast<size_t>(i)];
  };
  for (json& r : d["flat"]) use(r[0]);
  for (json& e : d["edges"]) {
    use(e[0]);
    use(e[1]);
  }
  for (const char* tree : {"tree", "merged_tree"})
    for (json& n : d[tree]) use(n[1]);
  if (d.contains("timeline")) {
    for (json& th : d["timeline"]["threads"])
      for (json& lane : th["lanes"])
        for (size_t i = 0; i < lane["fn"].size(); i += 2) use(lane["fn"][i]);
    for (json& c : d["timeline"]["detail"]) use(c[4]);
  }
  d["functions"] = std::move(kept);
}

}  // namespace

Result<HtmlCounts> write_html(HtmlInput& in, FILE* out) {
  format::TraceReader& t = in.trace;
  const analysis::Profile& p = in.profile;
  HtmlCounts counts;
  json d;
  d["title"] = in.title;
  d["filters"] = in.filters;
  d["info"] = in.info;
  d["mode"] = t.is_profile() ? "profile" : "record";
  json fns = json::array();
  for (const analysis::FunctionInfo& f : p.functions) fns.push_back({f.name, f.module, f.file, f.line});
  d["functions"] = fns;
  json threads = json::array();
  for (const analysis::ThreadProfile& tp : p.threads)
    threads.push_back({{"thread", tp.thread}, {"label", thread_label(t, tp.thread)},
                       {"total_ns", ns_of(t, tp.tree.total())}});
  d["threads"] = threads;

  // The flat profile and the callers/callees edges, from the merged tree.
  const analysis::CallTree merged = analysis::merged_tree(p);
  std::vector<analysis::ProfileRow> flat = analysis::flat_profile(merged);
  std::sort(flat.begin(), flat.end(), [](const auto& a, const auto& b) {
    return a.stats.total != b.stats.total ? a.stats.total > b.stats.total : a.key < b.key;
  });
  json rows = json::array();
  for (size_t i = 0; i < flat.size() && i < in.limits.table_rows; ++i) {
    const analysis::Stats& s = flat[i].stats;
    rows.push_back({flat[i].key, s.calls, ns_of(t, s.total), ns_of(t, s.self), ns_of(t, s.min), ns_of(t, s.max)});
  }
  d["flat"] = rows;
  d["flat_left_out"] = flat.size() > in.limits.table_rows ? flat.size() - in.limits.table_rows : 0;
  d["observed_ns"] = ns_of(t, merged.total());
  std::map<std::pair<int64_t, int64_t>, std::pair<uint64_t, uint64_t>> edges;  // (caller, callee) -> calls, total
  for (uint32_t i = 1; i < merged.size(); ++i) {
    const analysis::CallNode& n = merged.node(i);
    const int64_t caller = n.parent == 0 ? -1 : static_cast<int64_t>(merged.node(n.parent).key);
    auto& e = edges[{caller, static_cast<int64_t>(n.key)}];
    e.first += n.stats.calls;
    e.second += n.stats.total;
  }
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::pair<uint64_t, uint64_t>>> edge_list(edges.begin(), edges.end());
  std::stable_sort(edge_list.begin(), edge_list.end(),
                   [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  json ej = json::array();
  for (size_t i = 0; i < edge_list.size() && i < in.limits.table_rows; ++i) {
    const auto& [k, v] = edge_list[i];
    ej.push_back({k.first, k.second, v.first, ns_of(t, v.second)});
  }
  d["edges"] = ej;
  d["edges_left_out"] = edge_list.size() > in.limits.table_rows ? edge_list.size() - in.limits.table_rows : 0;

  // Trees, per thread and merged, and the flame graph.
  StackOptions so;
  so.wanted = in.wanted;
  const StackTree per_thread = build_stacks(t, p, so);
  so.merge = true;
  const StackTree merged_stacks = build_stacks(t, p, so);
  d["tree"] = tree_json(t, per_thread, in.limits.tree_nodes, counts.tree_nodes_left_out);
  d["merged_tree"] = tree_json(t, merged_stacks, in.limits.tree_nodes, counts.tree_nodes_left_out);
  d["tree_left_out"] = counts.tree_nodes_left_out;
  FlameOptions fo;
  fo.title = "Flame graph";
  fo.subtitle = in.title;
  fo.max_frames = in.limits.flame_frames;
  FlameCounts fc;
  const std::string flame = flame_svg(t, per_thread, fo, false, &fc);
  d["flame_left_out"] = fc.elided;

  // The timeline (recordings only: snapshots have no time).
  if (!t.is_profile()) {
    // The run's end: its recorded duration, or (a trace that was never
    // finished) the last tick any thread reached.
    uint64_t duration = t.info().record.duration_ticks;
    if (duration == 0)
      for (const format::ThreadInfo& th : t.threads()) duration = std::max(duration, th.record.end_tick);
    const uint64_t from = in.timeline.window.from;
    uint64_t to = std::min(in.timeline.window.to, duration ? duration : in.timeline.window.to);
    if (to == analysis::TickWindow{}.to || to <= from) to = from + 1;
    // At most kTimelineThreads threads, each with up to max_depth lanes of
    // `buckets` cells: the raster stays within raster_cells for threads that
    // use half their lanes, and within a few MB at worst.
    std::vector<uint32_t> shown = in.threads;
    if (shown.size() > in.limits.timeline_threads) shown.resize(in.limits.timeline_threads);
    const uint32_t nthreads = std::max<uint32_t>(1, static_cast<uint32_t>(shown.size()));
    const uint32_t buckets = std::clamp<uint32_t>(in.limits.raster_cells / (nthreads * (in.limits.max_depth / 2)), 16, 2000);
    std::map<std::pair<std::string, std::string>, int64_t> by_name;
    for (size_t i = 0; i < p.functions.size(); ++i) by_name.emplace(std::pair{p.functions[i].name, p.functions[i].module}, i);
    std::vector<int64_t> index_of;  // FunctionIds id -> index in "functions"
    auto fn_index = [&](uint32_t id) -> int64_t {
      while (index_of.size() <= id) {
        const analysis::FunctionInfo& f = in.functions.functions()[index_of.size()];
        auto it = by_name.find({f.name, f.module});
        if (it == by_name.end()) {  // outside the profile (a window edge): added
          it = by_name.emplace(std::pair{f.name, f.module}, static_cast<int64_t>(d["functions"].size())).first;
          d["functions"].push_back({f.name, f.module, f.file, f.line});
        }
        index_of.push_back(it->second);
      }
      return index_of[id];
    };
    TimelineSink sink(t, from, to, buckets, in.limits, fn_index);
    CALLSCOPE_TRY(TimelineCounts tc, stream_timeline(t, shown, in.functions, in.timeline, sink));
    (void)tc;
    std::vector<std::string> labels;
    for (uint32_t ti : shown) labels.push_back(thread_label(t, ti));
    counts.detail_calls = sink.detail_calls();
    counts.calls = sink.calls();
    d["timeline"] = sink.to_json(labels);
    d["timeline"]["threads_left_out"] = in.threads.size() - shown.size();
    // Each thread's state under its calls, per bucket (the kernel's context
    // switches): the state it spent most of the bucket in -- 1 running, 2
    // runnable, 3 sleeping or blocked, 4 uninterruptible (the disk) --, and
    // the share of the bucket it spent off the CPU.
    for (json& th : d["timeline"]["threads"]) {
      const uint32_t ti = th["thread"].get<uint32_t>();
      CALLSCOPE_TRY(std::vector<KernelTrack> tracks, kernel_tracks(t, ti, {from, to}, in.functions));
      const KernelTrack* states = nullptr;
      for (const KernelTrack& k : tracks)
        if (k.kind == KernelTrack::kState) states = &k;
      if (!states) continue;
      std::vector<std::array<double, 5>> in_state(buckets, std::array<double, 5>{});
      const double bucket_ticks = static_cast<double>(to - from) / buckets;
      for (const KernelSlice& sl : states->slices) {
        const int code = sl.name == "Running" ? 1 : sl.name == "Runnable" ? 2 : sl.name.rfind("Uninterruptible", 0) == 0 ? 4 : 3;
        const double a = static_cast<double>(sl.from - from), b = static_cast<double>(sl.to - from);
        for (auto k = static_cast<uint32_t>(a / bucket_ticks); k < buckets && k * bucket_ticks < b; ++k)
          in_state[k][code] += std::min(b, (k + 1) * bucket_ticks) - std::max(a, k * bucket_ticks);
      }
      std::vector<uint32_t> code(buckets), off(buckets);
      for (uint32_t k = 0; k < buckets; ++k) {
        const auto& c = in_state[k];
        code[k] = static_cast<uint32_t>(std::max_element(c.begin(), c.end()) - c.begin());
        if (c[code[k]] <= 0) code[k] = 0;
        off[k] = static_cast<uint32_t>(std::lround(std::min(100.0, 100.0 * (c[2] + c[3] + c[4]) / bucket_ticks)));
      }
      th["state"] = rle(code);
      th["off_cpu"] = rle(off);
    }
  }

  if (in.stack) {
    json st;
    json peaks = json::array();
    for (const analysis::ThreadStackPeak& pk : in.stack->threads) {
      json path = json::array();  // the outermost 100 frames and the innermost 100
      for (size_t i = 0; i < pk.path.size(); ++i) {
        if (pk.path.size() > 200 && i == 100) {
          path.push_back("... " + std::to_string(pk.path.size() - 200) + " frames ...");
          i = pk.path.size() - 100;
        }
        path.push_back(in.resolve ? (*in.resolve)(pk.process, pk.path[i], analysis::kNoTick).name : "?");
      }
      peaks.push_back({{"thread", pk.thread}, {"label", thread_label(t, pk.thread)}, {"peak_bytes", pk.peak_bytes},
                       {"path", path}});
    }
    st["threads"] = peaks;
    std::vector<analysis::FunctionStackDepth> fs = in.stack->functions;
    std::sort(fs.begin(), fs.end(), [](const auto& a, const auto& b) {
      return a.deepest_below != b.deepest_below ? a.deepest_below > b.deepest_below : a.addr < b.addr;
    });
    json funcs = json::array();
    for (size_t i = 0; i < fs.size() && i < 500; ++i) {
      const analysis::FunctionInfo f =
          in.resolve ? (*in.resolve)(fs[i].process, fs[i].addr, analysis::kNoTick) : analysis::FunctionInfo{"?", "", "", 0};
      funcs.push_back({f.name, f.module, fs[i].calls, fs[i].deepest_below});
    }
    st["functions"] = funcs;
    d["stack"] = st;
  }
  if (!in.snapshot_flats.empty()) {
    json snaps = json::array();
    for (size_t i = 0; i < in.snapshot_flats.size(); ++i)
      snaps.push_back({{"label", in.snapshot_labels[i]}, {"flat", in.snapshot_flats[i]}});
    d["snapshots"] = snaps;
  }
  if (!in.memory.is_null()) d["memory"] = in.memory;
  if (!in.waits.is_null()) d["waits"] = in.waits;
  keep_referenced_functions(d);

  std::string page;
  page.reserve(1 << 20);
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
          "style-src 'unsafe-inline'; img-src data:\">\n<title>";
  page += xml_text(in.title);
  page += "</title>\n<style>\n";
  page += kReportCss;
  page += "</style>\n</head>\n<body>\n<noscript>This report draws its views with JavaScript: allow scripts for this "
          "file.</noscript>\n<div id=\"flame-svg\" hidden>\n";
  page += flame;
  page += "</div>\n<script type=\"application/json\" id=\"callscope-data\">";
  page += script_safe(d.dump(-1, ' ', false, json::error_handler_t::replace));
  page += "</script>\n<script>\n";
  page += kFlameJs;
  page += "</script>\n<script>\n";
  page += kReportJs;
  page += "</script>\n</body>\n</html>\n";
  if (std::fwrite(page.data(), 1, page.size(), out) != page.size()) return Error("cannot write the page");
  counts.bytes = page.size();
  return counts;
}

}  // namespace callscope::exporter
