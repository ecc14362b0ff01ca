// The views of `callscope report`. Each view walks "sections" -- one per
// thread, or one for all selected threads merged by function name -- and
// writes them in the chosen format. Times stay in ticks until printed.
#include "views/profile_view.h"

#include <algorithm>
#include <cctype>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/glob.h"
#include "views/format_util.h"

namespace callscope::views {
namespace {

namespace an = callscope::analysis;
namespace fmt = callscope::format;
// Keys in the order written: easier to read than sorted.
using json = nlohmann::ordered_json;

// One table or tree of the output: a thread, or all threads merged.
struct Section {
  std::optional<uint32_t> thread;
  const an::CallTree* tree;
};

std::vector<Section> sections(const an::Profile& p, bool split, an::CallTree& merged) {
  std::vector<Section> out;
  if (split || p.threads.size() == 1) {  // one thread: nothing to merge
    for (const an::ThreadProfile& t : p.threads) out.push_back({t.thread, &t.tree});
  } else {
    merged = an::merged_tree(p);
    out.push_back({std::nullopt, &merged});
  }
  return out;
}

std::string thread_title(const fmt::TraceReader& t, const an::Profile& p, const Section& s) {
  if (!s.thread) {
    std::string list;
    for (const an::ThreadProfile& tp : p.threads) list += (list.empty() ? "" : ", ") + std::to_string(tp.thread);
    return "threads " + list + " (merged by function name)";
  }
  const fmt::ThreadInfo& th = t.threads()[*s.thread];
  const uint32_t proc = th.record.process_index;
  const uint32_t pid = t.process(proc).record.pid;
  return "thread " + std::to_string(*s.thread) + ": pid " + std::to_string(pid) + " tid " +
         std::to_string(th.record.tid) + " \"" + terminal_safe(th.name) + "\"";
}

// "8.9 us observed, 97% of its 9.2 us wall time": how much of the
// threads' lifetimes (their wall time) was spent inside traced functions.
uint64_t section_wall(const fmt::TraceReader& t, const an::Profile& p, const Section& s) {
  if (s.thread) return an::wall_ticks(t, *s.thread);
  uint64_t wall = 0;
  for (const an::ThreadProfile& tp : p.threads) wall += an::wall_ticks(t, tp.thread);
  return wall;
}

std::string observed_text(const fmt::TraceReader& t, const an::Profile& p, const Section& s) {
  const double observed = static_cast<double>(s.tree->total());
  std::string text = format_duration_ns(observed / t.header().ticks_per_ns) + " observed";
  const uint64_t wall = section_wall(t, p, s);
  if (wall == 0) return text;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.0f%%", observed / static_cast<double>(wall) * 100.0);
  return text + ", " + pct + " of " + (s.thread ? "its " : "their ") +
         format_duration_ns(static_cast<double>(wall) / t.header().ticks_per_ns) + " wall time";
}

// TOTAL as a share of the section's observed time: "45.2".
std::string share_text(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(part) / static_cast<double>(whole) * 100.0);
  return buf;
}

json thread_json(const fmt::TraceReader& t, const Section& s) {
  if (!s.thread) return "all";
  const fmt::ThreadInfo& th = t.threads()[*s.thread];
  const uint32_t proc = th.record.process_index;
  return json{{"index", *s.thread},
              {"pid", t.process(proc).record.pid},
              {"tid", th.record.tid},
              {"name", th.name}};
}

// Whole nanoseconds, for CSV and JSON.
uint64_t ns(const fmt::TraceReader& t, double ticks) {
  return static_cast<uint64_t>(std::llround(ticks / t.header().ticks_per_ns));
}

std::string text_time(const fmt::TraceReader& t, double ticks) { return format_duration_ns(ticks / t.header().ticks_per_ns); }

// The eight numbers of a row, in the order of kStatHeaders; CSV and JSON add
// open_calls: of the calls, those still in progress at the end (counted with
// their time so far), which text marks with a '*' after CALLS.
constexpr const char* kStatHeaders[] = {"CALLS", "TOTAL", "SELF", "AVG", "SELF AVG", "MIN", "MAX", "FIRST"};
constexpr const char* kStatCsv[] = {"calls", "total_ns", "self_ns", "avg_ns", "self_avg_ns", "min_ns", "max_ns", "first_ns",
                                    "open_calls", "inherited_calls"};
// With the kernel's context switches (Profile::has_waits): of total and
// self, the time on the CPU and off it (blocked or runnable).
constexpr const char* kWaitCsv[] = {"cpu_ns", "wait_ns", "self_cpu_ns", "self_wait_ns"};

// A tree's names are indented two spaces a level, down to this level: a
// 100,000-deep recursion would otherwise print 10 GB of spaces (the text
// quadratic in the depth).
constexpr uint32_t kMaxIndentLevel = 100;

// What a text table's marks mean, said under it: '*' calls whose end was
// not recorded, '^' calls whose start was not (analysis/stats.h).
struct CallNotes {
  bool open = false, inherited = false;
  uint32_t indent_capped = 0;  // the deepest level indented as kMaxIndentLevel
  void add(const an::Stats& s) {
    open = open || s.open;
    inherited = inherited || s.inherited;
  }
  void print(FILE* out) const {
    if (open)
      std::fprintf(out,
                   "* includes calls whose end was not recorded (in progress when their thread or process ended or "
                   "the snapshot was taken, or ended while events were lost), with the time recorded\n");
    if (indent_capped)
      std::fprintf(out,
                   "levels deeper than %u (down to %u) are indented as level %u: DEPTH says which they are\n",
                   kMaxIndentLevel, indent_capped, kMaxIndentLevel);
    if (inherited)
      std::fprintf(out,
                   "^ includes calls already in progress where their thread's recording began (a forked child's "
                   "copies of the frames open in its parent, counted from the fork; frames begun while events were "
                   "lost or recording was stopped, or before --from), with the time recorded\n");
  }
};

std::string tree_indent(uint32_t depth, CallNotes& notes) {
  if (depth > kMaxIndentLevel) notes.indent_capped = std::max(notes.indent_capped, depth);
  return std::string(2 * (std::min(depth, kMaxIndentLevel) - 1), ' ');
}

std::vector<std::string> stat_text(const fmt::TraceReader& t, const an::Stats& s) {
  const bool c = s.calls != 0;
  return {std::to_string(s.calls) + (s.open ? "*" : "") + (s.inherited ? "^" : ""),
          text_time(t, static_cast<double>(s.total)),
          text_time(t, static_cast<double>(s.self)),
          c ? text_time(t, s.avg()) : "-",
          c ? text_time(t, s.self_avg()) : "-",
          c ? text_time(t, static_cast<double>(s.min)) : "-",
          c ? text_time(t, static_cast<double>(s.max)) : "-",
          c ? text_time(t, static_cast<double>(s.first)) : "-"};
}

std::vector<std::string> stat_csv(const fmt::TraceReader& t, const an::Stats& s) {
  const bool c = s.calls != 0;
  auto n = [&](double v) { return std::to_string(ns(t, v)); };
  return {std::to_string(s.calls),
          n(static_cast<double>(s.total)),
          n(static_cast<double>(s.self)),
          c ? n(s.avg()) : "",
          c ? n(s.self_avg()) : "",
          c ? n(static_cast<double>(s.min)) : "",
          c ? n(static_cast<double>(s.max)) : "",
          c ? n(static_cast<double>(s.first)) : "",
          std::to_string(s.open),
          std::to_string(s.inherited)};
}

// The four numbers of kWaitCsv, in ns.
std::array<uint64_t, 4> wait_ns(const fmt::TraceReader& t, const an::Stats& s) {
  auto n = [&](uint64_t v) { return ns(t, static_cast<double>(v)); };
  return {n(s.total - std::min(s.total, s.wait)), n(s.wait), n(s.self - std::min(s.self, s.self_wait)), n(s.self_wait)};
}

std::vector<std::string> wait_csv(const fmt::TraceReader& t, const an::Stats& s) {
  std::vector<std::string> out;
  for (uint64_t v : wait_ns(t, s)) out.push_back(std::to_string(v));
  return out;
}

void wait_json(const fmt::TraceReader& t, const an::Stats& s, json& j) {
  const std::array<uint64_t, 4> v = wait_ns(t, s);
  for (size_t i = 0; i < v.size(); ++i) j[kWaitCsv[i]] = v[i];
}

void stat_json(const fmt::TraceReader& t, const an::Stats& s, json& j) {
  const bool c = s.calls != 0;
  j["calls"] = s.calls;
  j["total_ns"] = ns(t, static_cast<double>(s.total));
  j["self_ns"] = ns(t, static_cast<double>(s.self));
  j["avg_ns"] = c ? json(ns(t, s.avg())) : json(nullptr);
  j["self_avg_ns"] = c ? json(ns(t, s.self_avg())) : json(nullptr);
  j["min_ns"] = c ? json(ns(t, static_cast<double>(s.min))) : json(nullptr);
  j["max_ns"] = c ? json(ns(t, static_cast<double>(s.max))) : json(nullptr);
  j["first_ns"] = c ? json(ns(t, static_cast<double>(s.first))) : json(nullptr);
  j["open_calls"] = s.open;
  j["inherited_calls"] = s.inherited;
}

void function_json(const an::FunctionInfo& f, json& j) {
  j["function"] = f.name;
  j["module"] = f.module;
  if (!f.file.empty()) {
    j["file"] = f.file;
    j["line"] = f.line;
  }
}

void csv_row(FILE* out, const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + csv_field(cells[i]);
  std::fprintf(out, "%s\n", line.c_str());
}

std::string csv_thread(const Section& s) { return s.thread ? std::to_string(*s.thread) : "all"; }

// Functions kept by -F/-m (a name matching one of the -F globs, in a module
// matching one of the -m globs); an error when nothing is kept.
Result<std::vector<bool>> wanted_functions(const an::Profile& p, const ReportOptions& o) {
  std::vector<bool> want(p.functions.size(), true);
  if (o.function_globs.empty() && o.module_globs.empty()) return want;
  bool any = false;
  for (size_t i = 0; i < p.functions.size(); ++i) {
    const an::FunctionInfo& f = p.functions[i];
    want[i] = (o.function_globs.empty() || glob_match_any(o.function_globs, f.name)) &&
              (o.module_globs.empty() || glob_match_any(o.module_globs, f.module));
    any = any || want[i];
  }
  if (any) return want;
  if (o.module_globs.empty()) return Error("no function matches " + quoted_list(o.function_globs));
  if (o.function_globs.empty()) return Error("no module matches " + quoted_list(o.module_globs));
  return Error("no function matches " + quoted_list(o.function_globs) + " in a module matching " +
               quoted_list(o.module_globs));
}

void sort_rows(std::vector<an::ProfileRow>& rows, const ReportOptions& o, const std::function<const std::string&(uint64_t)>& name) {
  std::stable_sort(rows.begin(), rows.end(), [&](const an::ProfileRow& a, const an::ProfileRow& b) {
    return an::sorts_before(o.sort, a.stats, name(a.key), b.stats, name(b.key));
  });
  if (o.top && rows.size() > o.top) rows.resize(o.top);
}

}  // namespace


// ---- flat profile ----------------------------------------------------------

Status print_flat_profile(const fmt::TraceReader& t, const an::Profile& p, const ReportOptions& o, FILE* out) {
  CALLSCOPE_TRY(std::vector<bool> want, wanted_functions(p, o));
  auto name = [&](uint64_t k) -> const std::string& { return p.functions[k].name; };
  an::CallTree merged;
  json sections_json = json::array();
  if (o.format == OutputFormat::kCsv) {
    std::vector<std::string> h = {"thread", "function", "module"};
    h.insert(h.end(), std::begin(kStatCsv), std::end(kStatCsv));
    if (p.has_waits) h.insert(h.end(), std::begin(kWaitCsv), std::end(kWaitCsv));
    csv_row(out, h);
  }
  bool first_section = true;
  for (const Section& s : sections(p, o.per_thread, merged)) {
    std::vector<an::ProfileRow> rows = an::flat_profile(*s.tree);
    std::erase_if(rows, [&](const an::ProfileRow& r) { return !want[r.key]; });
    sort_rows(rows, o, name);
    if (o.format == OutputFormat::kText) {
      std::fprintf(out, "%s%s: %s\n", first_section ? "" : "\n", thread_title(t, p, s).c_str(),
                   observed_text(t, p, s).c_str());
      std::vector<std::string> h(std::begin(kStatHeaders), std::end(kStatHeaders));
      h.insert(h.begin() + 2, "TOTAL%");
      if (p.has_waits) h.insert(h.begin() + 3, {"CPU", "WAIT"});
      h.push_back("MODULE");
      h.push_back("FUNCTION");
      TextTable table(h, h.size() - 2);
      CallNotes notes;
      for (const an::ProfileRow& r : rows) {
        std::vector<std::string> cells = stat_text(t, r.stats);
        cells.insert(cells.begin() + 2, share_text(r.stats.total, s.tree->total()));
        if (p.has_waits)
          cells.insert(cells.begin() + 3, {text_time(t, static_cast<double>(r.stats.total - std::min(r.stats.total, r.stats.wait))),
                                           text_time(t, static_cast<double>(r.stats.wait))});
        cells.push_back(p.functions[r.key].module);
        cells.push_back(fit_name(terminal_safe(p.functions[r.key].name), o.name_width));
        table.add(std::move(cells));
        notes.add(r.stats);
      }
      table.print(out);
      notes.print(out);
    } else if (o.format == OutputFormat::kCsv) {
      for (const an::ProfileRow& r : rows) {
        std::vector<std::string> cells = {csv_thread(s), p.functions[r.key].name, p.functions[r.key].module};
        for (std::string& c : stat_csv(t, r.stats)) cells.push_back(std::move(c));
        if (p.has_waits)
          for (std::string& c : wait_csv(t, r.stats)) cells.push_back(std::move(c));
        csv_row(out, cells);
      }
    } else {
      json fns = json::array();
      for (const an::ProfileRow& r : rows) {
        json j;
        function_json(p.functions[r.key], j);
        stat_json(t, r.stats, j);
        if (p.has_waits) wait_json(t, r.stats, j);
        fns.push_back(std::move(j));
      }
      sections_json.push_back({{"thread", thread_json(t, s)},
                               {"observed_ns", ns(t, static_cast<double>(s.tree->total()))},
                               {"wall_ns", ns(t, static_cast<double>(section_wall(t, p, s)))},
                               {"functions", std::move(fns)}});
    }
    first_section = false;
  }
  if (o.format == OutputFormat::kJson)
    std::fprintf(out, "%s\n", json_text(json{{"view", "flat"}, {"sections", std::move(sections_json)}}).c_str());
  return ok_status();
}

// ---- call trees -------------------------------------------------------------

namespace {

// The shown nodes of a tree in display order (depth first, siblings sorted).
std::vector<uint32_t> tree_order(const an::CallTree& tree, const std::vector<bool>& show, const ReportOptions& o,
                                 const std::function<const std::string&(uint64_t)>& name) {
  const an::CallTree::Children kids = tree.children();
  std::vector<uint32_t> order, todo;
  auto push_children = [&](uint32_t n) {
    std::vector<uint32_t> c;
    for (const uint32_t* k = kids.begin(n); k != kids.end(n); ++k)
      if (show[*k]) c.push_back(*k);
    std::stable_sort(c.begin(), c.end(), [&](uint32_t a, uint32_t b) {
      const an::CallNode &x = tree.node(a), &y = tree.node(b);
      return an::sorts_before(o.sort, x.stats, name(x.key), y.stats, name(y.key));
    });
    todo.insert(todo.end(), c.rbegin(), c.rend());  // the first sorted child is popped first
  };
  push_children(an::kRootNode);
  while (!todo.empty()) {
    const uint32_t n = todo.back();
    todo.pop_back();
    order.push_back(n);
    push_children(n);
  }
  return order;
}

// JSON trees nest at most this deep: a node at this level holds, instead of
// its children, how many nodes lie below it ("elided_nodes"; CSV lists every
// node with its parent). Deeper, the document would be unreadable to most
// parsers (Python's stops at about 1,000 levels), and its pretty-printed
// indentation quadratic in the depth: 10 GB for a 100,000-deep recursion.
constexpr uint32_t kMaxJsonDepth = 256;

json tree_json(const fmt::TraceReader& t, const an::Profile& p, const an::CallTree& tree,
               const std::vector<uint32_t>& order) {
  // `order` is depth first: a node's children follow it. Build bottom-up with
  // an explicit stack of open json nodes (no recursion on deep trees).
  json roots = json::array();
  std::vector<std::pair<uint32_t, json>> open;  // (depth, node)
  auto close_to = [&](uint32_t depth) {
    while (!open.empty() && open.back().first >= depth) {
      json done = std::move(open.back().second);
      open.pop_back();
      (open.empty() ? roots : open.back().second["children"]).push_back(std::move(done));
    }
  };
  for (uint32_t id : order) {
    const an::CallNode& n = tree.node(id);
    if (n.depth > kMaxJsonDepth) {
      json& at_limit = open.back().second;  // depth first: the node at the limit above this one is open
      at_limit["elided_nodes"] = at_limit.value("elided_nodes", uint64_t{0}) + 1;
      continue;
    }
    close_to(n.depth);
    json j;
    j["depth"] = n.depth;
    function_json(p.functions[n.key], j);
    stat_json(t, n.stats, j);
    j["children"] = json::array();
    open.emplace_back(n.depth, std::move(j));
  }
  close_to(0);
  return roots;
}

}  // namespace

std::string wait_warning(const fmt::TraceReader& t, const an::Profile& p) {
  uint64_t waits = 0, ticks = 0, threads = 0;
  for (const an::ThreadProfile& tp : p.threads) {
    waits += tp.waits;
    ticks += tp.wait_ticks;
    threads += tp.waits ? 1 : 0;
  }
  if (!waits) return "";
  return "the program waited " + format_duration_ns(t.ticks_to_ns(ticks)) + " for the recorder to keep up (" +
         count_of(waits, "wait", "waits") + " in " + std::to_string(threads) + " of " +
         count_of(p.threads.size(), "thread", "threads") +
         "): that time is the tracer's, taken out of the calls it happened in and shown as '[waited for recorder]' "
         "(docs/recording.md)";
}

Status print_call_trees(const fmt::TraceReader& t, const an::Profile& p, const ReportOptions& o, FILE* out) {
  CALLSCOPE_TRY(std::vector<bool> want, wanted_functions(p, o));
  const bool filtered = !o.function_globs.empty() || !o.module_globs.empty();
  auto name = [&](uint64_t k) -> const std::string& { return p.functions[k].name; };
  an::CallTree merged;
  json trees = json::array();
  const bool counted = !o.count_label.empty();
  std::string count_column = o.count_label;
  for (char& c : count_column) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (o.format == OutputFormat::kCsv && counted)
    csv_row(out, {"thread", "node", "parent", "depth", "function", "module", count_column});
  else if (o.format == OutputFormat::kCsv)
    csv_row(out, {"thread", "node", "parent", "depth", "function", "module", "calls", "total_ns", "total_per_call_ns",
                  "self_ns", "self_per_call_ns", "first_ns", "min_ns", "max_ns", "open_calls", "inherited_calls"});
  bool first_section = true;
  for (const Section& s : sections(p, !o.merge, merged)) {
    const an::CallTree& tree = *s.tree;
    an::TreeFilter f;
    f.max_depth = o.max_depth;
    f.min_total = static_cast<uint64_t>(std::ceil(static_cast<double>(tree.total()) * o.threshold_pct / 100.0));
    if (filtered) f.wanted = [&](uint64_t k) { return static_cast<bool>(want[k]); };
    const std::vector<uint32_t> order = tree_order(tree, an::visible_nodes(tree, f), o, name);
    if (o.format == OutputFormat::kText && counted) {
      uint64_t all = 0;
      for (uint32_t id = 1; id < tree.size(); ++id)
        if (tree.node(id).parent == an::kRootNode) all += tree.node(id).stats.calls;
      std::fprintf(out, "%s%s: %llu\n", first_section ? "" : "\n", thread_title(t, p, s).c_str(),
                   static_cast<unsigned long long>(all));
      TextTable table({"DEPTH", o.count_label, "FUNCTION"}, 2);
      CallNotes notes;
      for (uint32_t id : order) {
        const an::CallNode& n = tree.node(id);
        table.add({std::to_string(n.depth), std::to_string(n.stats.calls),
                   tree_indent(n.depth, notes) + fit_name(terminal_safe(p.functions[n.key].name), o.name_width)});
      }
      table.print(out);
    } else if (o.format == OutputFormat::kCsv && counted) {
      for (uint32_t id : order) {
        const an::CallNode& n = tree.node(id);
        csv_row(out, {csv_thread(s), std::to_string(id), n.parent == an::kRootNode ? "" : std::to_string(n.parent),
                      std::to_string(n.depth), p.functions[n.key].name, p.functions[n.key].module,
                      std::to_string(n.stats.calls)});
      }
    } else if (o.format == OutputFormat::kText) {
      std::fprintf(out, "%s%s: %s\n", first_section ? "" : "\n", thread_title(t, p, s).c_str(),
                   observed_text(t, p, s).c_str());
      TextTable table({"DEPTH", "CALLS", "TOTAL", "TOTAL/CALL", "SELF", "SELF/CALL", "FIRST", "MIN", "MAX", "FUNCTION"}, 9);
      CallNotes notes;
      for (uint32_t id : order) {
        const an::CallNode& n = tree.node(id);
        const std::vector<std::string> st = stat_text(t, n.stats);  // calls total self avg self_avg min max first
        table.add({std::to_string(n.depth), st[0], st[1], st[3], st[2], st[4], st[7], st[5], st[6],
                   tree_indent(n.depth, notes) + fit_name(terminal_safe(p.functions[n.key].name), o.name_width)});
        notes.add(n.stats);
      }
      table.print(out);
      notes.print(out);
    } else if (o.format == OutputFormat::kCsv) {
      for (uint32_t id : order) {
        const an::CallNode& n = tree.node(id);
        const std::vector<std::string> st = stat_csv(t, n.stats);
        csv_row(out, {csv_thread(s), std::to_string(id), n.parent == an::kRootNode ? "" : std::to_string(n.parent),
                      std::to_string(n.depth), p.functions[n.key].name, p.functions[n.key].module, st[0], st[1],
                      st[3], st[2], st[4], st[7], st[5], st[6], st[8], st[9]});
      }
    } else {
      trees.push_back({{"thread", thread_json(t, s)},
                       {"observed_ns", ns(t, static_cast<double>(tree.total()))},
                       {"wall_ns", ns(t, static_cast<double>(section_wall(t, p, s)))},
                       {"roots", tree_json(t, p, tree, order)}});
    }
    first_section = false;
  }
  if (o.format == OutputFormat::kJson)
    std::fprintf(out, "%s\n", json_text(json{{"view", "tree"}, {"trees", std::move(trees)}}).c_str());
  return ok_status();
}

// ---- callers and callees ------------------------------------------------------

Status print_relatives(const fmt::TraceReader& t, const an::Profile& p, const ReportOptions& o,
                       const std::string& callers_glob, const std::string& callees_glob, FILE* out) {
  static const std::string kOutside = "[outside]";  // caller of a thread's outermost frames
  auto name = [&](uint64_t k) -> const std::string& { return k == an::kNoCaller ? kOutside : p.functions[k].name; };
  auto module = [&](uint64_t k) -> const std::string& {
    static const std::string none;
    return k == an::kNoCaller ? none : p.functions[k].module;
  };
  struct Ask {
    bool callers;  // else callees
    std::vector<uint64_t> functions;
  };
  std::vector<Ask> asks;
  for (const auto& [glob, callers] : {std::pair{callers_glob, true}, std::pair{callees_glob, false}}) {
    if (glob.empty()) continue;
    Ask a{callers, {}};
    for (size_t i = 0; i < p.functions.size(); ++i)
      if (glob_match(glob, p.functions[i].name)) a.functions.push_back(i);
    if (a.functions.empty()) return Error("no function matches '" + glob + "'");
    std::sort(a.functions.begin(), a.functions.end(), [&](uint64_t x, uint64_t y) { return name(x) < name(y); });
    asks.push_back(std::move(a));
  }
  an::CallTree merged;
  json sections_json = json::array();
  if (o.format == OutputFormat::kCsv) {
    std::vector<std::string> h = {"thread", "function", "module", "relation", "other", "other_module"};
    h.insert(h.end(), std::begin(kStatCsv), std::end(kStatCsv));
    csv_row(out, h);
  }
  bool first_block = true;
  for (const Section& s : sections(p, o.per_thread, merged)) {
    std::vector<an::ProfileRow> flat = an::flat_profile(*s.tree);
    json fns = json::array();
    for (const Ask& a : asks) {
      for (uint64_t fn : a.functions) {
        auto self_row = std::find_if(flat.begin(), flat.end(), [&](const an::ProfileRow& r) { return r.key == fn; });
        if (self_row == flat.end()) continue;  // not called in this thread
        const an::Relatives rel = an::relatives(*s.tree, fn);
        const bool callers = a.callers;
        std::vector<an::ProfileRow> rows = callers ? rel.callers : rel.callees;
        sort_rows(rows, o, name);
        if (o.format == OutputFormat::kText) {
          const an::Stats& st = self_row->stats;
          std::fprintf(out, "%s%s: %s of %s: %llu call%s, total %s, self %s\n", first_block ? "" : "\n",
                       thread_title(t, p, s).c_str(), callers ? "callers" : "callees", terminal_safe(name(fn)).c_str(),
                       static_cast<unsigned long long>(st.calls), st.calls == 1 ? "" : "s", text_time(t, static_cast<double>(st.total)).c_str(),
                       text_time(t, static_cast<double>(st.self)).c_str());
          std::vector<std::string> h(std::begin(kStatHeaders), std::end(kStatHeaders));
          h.push_back("MODULE");
          h.push_back(callers ? "CALLER" : "CALLEE");
          TextTable table(h, h.size() - 2);
          CallNotes notes;
          for (const an::ProfileRow& r : rows) {
            std::vector<std::string> cells = stat_text(t, r.stats);
            cells.push_back(module(r.key));
            cells.push_back(fit_name(terminal_safe(name(r.key)), o.name_width));
            table.add(std::move(cells));
            notes.add(r.stats);
          }
          table.print(out);
          notes.print(out);
        } else if (o.format == OutputFormat::kCsv) {
          for (const an::ProfileRow& r : rows) {
            std::vector<std::string> cells = {csv_thread(s), name(fn), module(fn), callers ? "caller" : "callee",
                                              name(r.key), module(r.key)};
            for (std::string& c : stat_csv(t, r.stats)) cells.push_back(std::move(c));
            csv_row(out, cells);
          }
        } else {
          json j;
          function_json(p.functions[fn], j);
          stat_json(t, self_row->stats, j);
          json list = json::array();
          for (const an::ProfileRow& r : rows) {
            json e;
            e["function"] = name(r.key);
            e["module"] = module(r.key);
            stat_json(t, r.stats, e);
            list.push_back(std::move(e));
          }
          j[callers ? "callers" : "callees"] = std::move(list);
          fns.push_back(std::move(j));
        }
        first_block = false;
      }
    }
    if (o.format == OutputFormat::kJson)
      sections_json.push_back({{"thread", thread_json(t, s)}, {"functions", std::move(fns)}});
  }
  if (o.format == OutputFormat::kJson)
    std::fprintf(out, "%s\n", json_text(json{{"view", "relatives"}, {"sections", std::move(sections_json)}}).c_str());
  return ok_status();
}

}  // namespace callscope::views
