// `callscope memory` as text, CSV or JSON (memory_view.h).
#include "views/memory_view.h"

#include <algorithm>
#include <functional>
#include <map>

#include "views/format_util.h"
#include "views/resident_view.h"
#include "views/sparkline.h"
#include "views/replay_view.h"

namespace callscope::views {
namespace {

namespace fmt = callscope::format;
namespace an = callscope::analysis;
using Json = nlohmann::ordered_json;

constexpr const char* kOutside = "[outside every instrumented function]";

// Names of the keys' values.
class Names {
 public:
  Names(format::TraceReader& trace, symbolize::Symbolizer& sym, const an::MemoryModel& m)
      : trace_(trace), sym_(sym), m_(m) {}
  std::string function(uint32_t f) {
    const an::MemoryFunction& fn = m_.functions[f];
    if (fn.fn == 0) return kOutside;
    return sym_.lookup(fn.process, fn.fn, fn.tick).display();
  }
  std::string node(uint32_t n) { return function(m_.paths[n].function); }
  // The functions of a path, outermost first; a root alone is kOutside.
  std::vector<std::string> path(uint32_t n) {
    std::vector<std::string> names;
    for (uint32_t p : an::memory_path(m_, n))
      if (m_.paths[p].fn != 0) names.push_back(node(p));
    if (names.empty()) names.push_back(kOutside);
    return names;
  }
  std::string path_text(uint32_t n) {
    std::string s;
    for (const std::string& f : path(n)) s += (s.empty() ? "" : " > ") + f;
    return s;
  }
  std::string value(an::MemoryKey k, uint32_t v) {
    switch (k) {
      case an::MemoryKey::kFunction: return function(v);
      case an::MemoryKey::kPath: return path_text(v);
      case an::MemoryKey::kModule: return m_.modules[v].empty() ? "[no instrumented function]" : m_.modules[v];
      case an::MemoryKey::kTag: return m_.tags[v].empty() ? "[untagged]" : m_.tags[v];
      case an::MemoryKey::kThread: {
        const auto& t = trace_.threads()[v];
        return "#" + std::to_string(v) + " " + t.name + " (" + std::to_string(t.record.tid) + ")";
      }
      case an::MemoryKey::kProcess: {
        if (v >= trace_.processes().size()) return "#" + std::to_string(v);  // a damaged thread record's
        const auto& p = trace_.processes()[v];
        return "#" + std::to_string(v) + " " + p.exe.substr(p.exe.rfind('/') + 1) + " (" +
               std::to_string(p.record.pid) + ")";
      }
    }
    return "?";
  }
  Json json_value(an::MemoryKey k, uint32_t v) {
    if (k == an::MemoryKey::kPath) return path(v);
    if (k == an::MemoryKey::kThread) return v;
    if (k == an::MemoryKey::kProcess) {
      Json j{{"index", v}};
      if (v < trace_.processes().size()) {
        j["pid"] = trace_.processes()[v].record.pid;
        j["exe"] = trace_.processes()[v].exe;
      }
      return j;
    }
    return value(k, v);
  }

 private:
  format::TraceReader& trace_;
  symbolize::Symbolizer& sym_;
  const an::MemoryModel& m_;
};

std::string ull(uint64_t v) { return std::to_string(v); }

// The columns of a table of totals, for CSV and JSON (text picks its own).
struct Column {
  const char* name;
  uint64_t an::MemoryTotals::*field;
};
constexpr Column kColumns[] = {
    {"allocs", &an::MemoryTotals::allocs},
    {"bytes", &an::MemoryTotals::bytes},
    {"peak_bytes", &an::MemoryTotals::peak_bytes},
    {"impacting", &an::MemoryTotals::impacting},
    {"impacting_bytes", &an::MemoryTotals::impacting_bytes},
    {"transient", &an::MemoryTotals::transient},
    {"transient_bytes", &an::MemoryTotals::transient_bytes},
    {"short_lived", &an::MemoryTotals::short_lived},
    {"short_lived_bytes", &an::MemoryTotals::short_lived_bytes},
    {"before_freed", &an::MemoryTotals::before_freed},
    {"before_freed_bytes", &an::MemoryTotals::before_freed_bytes},
    {"before_kept", &an::MemoryTotals::before_kept},
    {"before_kept_bytes", &an::MemoryTotals::before_kept_bytes},
    {"leaked", &an::MemoryTotals::leaked},
    {"leaked_bytes", &an::MemoryTotals::leaked_bytes},
};

class Printer {
 public:
  Printer(format::TraceReader& trace, symbolize::Symbolizer& sym, const an::MemoryModel& m, const MemoryOptions& o,
          std::FILE* out)
      : trace_(trace), m_(m), o_(o), out_(out), names_(trace, sym, m) {
    query_.window = o.window;
    query_.short_ticks = static_cast<uint64_t>(static_cast<double>(o.short_ns) * trace.header().ticks_per_ns);
  }

  Status run() {
    switch (o_.mode) {
      case MemoryMode::kSummary: return summary();
      case MemoryMode::kPeak: return peak();
      case MemoryMode::kLeaks: return leaks();
      case MemoryMode::kTimeline: return timeline();
      case MemoryMode::kSizes: return sizes();
      case MemoryMode::kResident: return print_resident(trace_, o_, out_);
    }
    return ok_status();
  }

 private:
  std::string when(uint64_t tick) { return format_timestamp_ns(trace_.ticks_to_ns(tick)); }
  double ns(uint64_t tick) { return trace_.ticks_to_ns(tick); }
  std::string window_title() {
    return o_.window_text.empty() ? "" : " (window " + o_.window_text + ": " + when(o_.window.from) + " to " +
                                             (o_.window.to == an::kMemoryNever ? "the end" : when(o_.window.to)) + ")";
  }
  bool windowed() const { return !o_.window.whole(); }
  uint64_t sort_value(const an::MemoryTotals& t) const {
    switch (o_.sort) {
      case MemorySort::kBytes: return t.bytes;
      case MemorySort::kAllocs: return t.allocs;
      case MemorySort::kLeakedBytes: return t.leaked_bytes;
      case MemorySort::kPeakBytes: return t.peak_bytes;
    }
    return t.bytes;
  }
  void sort(std::vector<an::MemoryGroup>& groups) const {
    if (o_.sort == MemorySort::kBytes) return;  // the analysis's order
    std::stable_sort(groups.begin(), groups.end(), [&](const an::MemoryGroup& a, const an::MemoryGroup& b) {
      return sort_value(a.totals) > sort_value(b.totals);
    });
  }

  bool several_processes() const { return trace_.processes().size() > 1; }
  // A function, path or thread is one process's: in a trace of several
  // processes its rows say which (a PROCESS column), unless the keys name
  // it already. (A path tree in text says it at each process's root.)
  std::vector<an::MemoryKey> with_process(std::vector<an::MemoryKey> keys) const {
    if (!several_processes() || keys.size() >= 5 ||
        std::find(keys.begin(), keys.end(), an::MemoryKey::kProcess) != keys.end() ||
        std::none_of(keys.begin(), keys.end(), an::memory_key_per_process))
      return keys;
    keys.push_back(an::MemoryKey::kProcess);
    return keys;
  }
  bool text_tree(const std::vector<an::MemoryKey>& keys) const {
    return o_.format == OutputFormat::kText && keys.size() == 1 && keys[0] == an::MemoryKey::kPath;
  }

  // ---- the summary and tables of totals ----

  Status summary() {
    std::vector<std::vector<an::MemoryKey>> tables;
    if (!o_.keys.empty()) {
      tables.push_back(o_.keys);
    } else {
      if (several_processes() && !o_.table_only) tables.push_back({an::MemoryKey::kProcess});
      tables.push_back({an::MemoryKey::kModule});
      if (m_.tags.size() > 1) tables.push_back({an::MemoryKey::kTag});
      tables.push_back({an::MemoryKey::kFunction});
    }
    std::vector<an::MemoryTable> results;
    for (const auto& keys : tables) {
      query_.keys = text_tree(keys) ? keys : with_process(keys);
      results.push_back(an::memory_table(m_, query_));
      sort(results.back().groups);
    }
    const an::MemoryTotals& t = results.front().total;
    if (o_.format == OutputFormat::kJson) {
      Json j;
      j["summary"] = totals_json(t);
      j["summary"]["peak_ns"] = ns(t.peak_tick);
      j["summary"]["frees"] = m_.frees;
      j["summary"]["unknown_frees"] = m_.unknown_frees;
      j["summary"]["mismatched_frees"] = m_.mismatch_count;
      j["summary"]["inherited_frees"] = m_.inherited_frees;
      j["window"] = window_json();
      j["short_lived_under_ns"] = o_.short_ns;
      Json tabs = Json::array();
      for (const an::MemoryTable& r : results) tabs.push_back(table_json(r));
      j["tables"] = tabs;
      j["mismatches"] = mismatches_json();
      std::fprintf(out_, "%s\n", json_text(j).c_str());
      return ok_status();
    }
    if (o_.format == OutputFormat::kCsv) {
      table_csv(results.back());
      return ok_status();
    }
    if (o_.table_only) return table_text_or_tree(results.front());
    std::fprintf(out_, "allocations: %llu (%s)%s, frees: %llu%s\n", static_cast<unsigned long long>(t.allocs),
                 format_bytes(t.bytes).c_str(), window_title().c_str(), static_cast<unsigned long long>(m_.frees),
                 windowed() ? " (in the whole trace)" : "");
    std::string peak_where;  // several processes: how many held blocks then
    if (several_processes() && t.peak_bytes)
      peak_where = " (in " +
                   count_of(an::memory_live_at(m_, {an::MemoryKey::kProcess}, results.front().peak_seq).groups.size(),
                            "process", "processes") +
                   ")";
    std::fprintf(out_, "peak:        %s outstanding%s, first at %s\n", format_bytes(t.peak_bytes).c_str(),
                 peak_where.c_str(), when(t.peak_tick).c_str());
    std::fprintf(out_, "impacting:   %s (%s) allocated%s\n", count_of(t.impacting, "block", "blocks").c_str(),
                 format_bytes(t.impacting_bytes).c_str(),
                 windowed() ? " in the window and not freed in it" : " and not freed by the end");
    std::fprintf(out_, "transient:   %s (%s) allocated and freed%s; %llu (%s) of them within %s\n",
                 count_of(t.transient, "block", "blocks").c_str(), format_bytes(t.transient_bytes).c_str(),
                 windowed() ? " in the window" : "", static_cast<unsigned long long>(t.short_lived),
                 format_bytes(t.short_lived_bytes).c_str(), format_duration_ns(static_cast<double>(o_.short_ns)).c_str());
    if (windowed())
      std::fprintf(out_, "from before: %s (%s) freed in the window, %s (%s) outstanding through it\n",
                   count_of(t.before_freed, "block", "blocks").c_str(), format_bytes(t.before_freed_bytes).c_str(),
                   count_of(t.before_kept, "block", "blocks").c_str(), format_bytes(t.before_kept_bytes).c_str());
    std::fprintf(out_, "leaked:      %s (%s) still allocated when %s%s\n", count_of(t.leaked, "block", "blocks").c_str(),
                 format_bytes(t.leaked_bytes).c_str(), leak_end().c_str(),
                 windowed() ? " (of those allocated in the window)" : "");
    if (m_.inherited_frees)
      std::fprintf(out_,
                   "inherited:   %s in fork children of blocks their parent had allocated before the fork (paired "
                   "with them; the blocks stay the parent's)\n",
                   count_of(m_.inherited_frees, "free", "frees").c_str());
    if (m_.mismatch_count)
      std::fprintf(out_, "mismatched:  %s (listed below)\n", count_of(m_.mismatch_count, "free", "frees").c_str());
    for (const an::MemoryTable& r : results) {
      std::string title;
      for (an::MemoryKey k : r.keys) title += (title.empty() ? "" : ", ") + std::string(an::memory_key_name(k));
      std::fprintf(out_, "\nby %s:\n", title.c_str());
      CALLSCOPE_CHECK(table_text_or_tree(r));
    }
    mismatches_text();
    return ok_status();
  }

  // When leaks are counted: each process's blocks end with it.
  std::string leak_end() {
    if (!several_processes()) return "the process ended";
    uint32_t with = 0;
    query_.keys = {an::MemoryKey::kProcess};
    for (const an::MemoryGroup& g : an::memory_table(m_, query_).groups) with += g.totals.leaked != 0;
    return "their process ended, in " + std::to_string(with) + " of " +
           count_of(trace_.processes().size(), "process", "processes");
  }

  Status table_text_or_tree(const an::MemoryTable& r) {
    if (text_tree(r.keys)) tree_text(r);
    else table_text(r);
    return ok_status();
  }

  std::vector<std::string> key_headers(const std::vector<an::MemoryKey>& keys) {
    std::vector<std::string> h;
    for (size_t i = 0; i < keys.size(); ++i) {
      std::string name = an::memory_key_name(keys[i]);
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      h.push_back(name);
    }
    return h;
  }

  std::vector<std::string> number_cells(const an::MemoryTotals& t) {
    std::vector<std::string> row{ull(t.allocs), format_bytes(t.bytes), format_bytes(t.peak_bytes),
                                 format_bytes(t.impacting_bytes), format_bytes(t.transient_bytes),
                                 format_bytes(t.short_lived_bytes)};
    if (windowed()) {
      row.push_back(format_bytes(t.before_freed_bytes));
      row.push_back(format_bytes(t.before_kept_bytes));
    }
    row.push_back(ull(t.leaked));
    row.push_back(format_bytes(t.leaked_bytes));
    return row;
  }
  std::vector<std::string> number_headers() {
    std::vector<std::string> h{"ALLOCS", "BYTES", "PEAK", "IMPACTING", "TRANSIENT", "SHORT-LIVED"};
    if (windowed()) {
      h.push_back("OLD FREED");
      h.push_back("OLD KEPT");
    }
    h.push_back("LEAKS");
    h.push_back("LEAKED");
    return h;
  }

  void table_text(const an::MemoryTable& r) {
    std::vector<std::string> headers = number_headers();
    const size_t numbers = headers.size();
    for (std::string& k : key_headers(r.keys)) headers.push_back(k);
    TextTable table(headers, numbers);
    size_t shown = 0;
    for (const an::MemoryGroup& g : r.groups) {
      if (o_.limit && shown >= o_.limit) break;
      ++shown;
      std::vector<std::string> row = number_cells(g.totals);
      for (size_t i = 0; i < r.keys.size(); ++i) row.push_back(names_.value(r.keys[i], g.key[i]));
      table.add(row);
    }
    table.print(out_);
    if (o_.limit && r.groups.size() > o_.limit)
      std::fprintf(out_, "(%zu more rows: -n 0 shows all)\n", r.groups.size() - o_.limit);
  }

  // A path tree: each node's values with everything allocated below it.
  void tree_text(const an::MemoryTable& r) {
    std::vector<an::MemoryTotals> incl(m_.paths.size());
    for (const an::MemoryGroup& g : r.groups)
      for (uint32_t n = g.key[0]; n != an::kMemoryNoNode; n = m_.paths[n].parent) add_totals(incl[n], g.totals);
    std::vector<std::vector<uint32_t>> children(m_.paths.size());
    std::vector<uint32_t> roots;
    for (uint32_t n = 0; n < m_.paths.size(); ++n) {
      if (incl[n].allocs == 0 && incl[n].before_kept == 0 && incl[n].before_freed == 0) continue;
      (m_.paths[n].parent == an::kMemoryNoNode ? roots : children[m_.paths[n].parent]).push_back(n);
    }
    auto by = [&](std::vector<uint32_t>& v) {
      std::stable_sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) { return sort_value(incl[a]) > sort_value(incl[b]); });
    };
    std::vector<std::string> headers = number_headers();
    const size_t numbers = headers.size();
    headers.push_back("CALL PATH (values include the calls below)");
    TextTable table(headers, numbers);
    const double total = static_cast<double>(sort_value(r.total));
    size_t hidden = 0;
    std::function<void(uint32_t, uint32_t)> visit = [&](uint32_t n, uint32_t level) {
      // Below the threshold (of the sort's value): hidden, counted.
      if (level > 0 && static_cast<double>(sort_value(incl[n])) * 100.0 < total * o_.threshold_pct) {
        ++hidden;
        return;
      }
      const bool root = m_.paths[n].parent == an::kMemoryNoNode;
      std::vector<std::string> row = number_cells(incl[n]);
      std::string name = names_.node(n);
      if (root) {
        const uint32_t p = m_.paths[n].process;
        name = several_processes() ? "[process " + names_.value(an::MemoryKey::kProcess, p) + "]" : "[all]";
      }
      row.push_back(std::string(2 * level, ' ') + name);
      table.add(row);
      if (o_.depth && level >= o_.depth) return;
      by(children[n]);
      for (uint32_t c : children[n]) visit(c, level + 1);
    };
    by(roots);
    for (uint32_t root : roots) visit(root, 0);
    table.print(out_);
    if (hidden)
      std::fprintf(out_, "(%s under %s of the total not shown: --threshold 0 shows all)\n",
                   count_of(hidden, "call path", "call paths").c_str(), format_percent(o_.threshold_pct).c_str());
  }

  static void add_totals(an::MemoryTotals& to, const an::MemoryTotals& t) {
    for (const Column& c : kColumns)
      if (c.field != &an::MemoryTotals::peak_bytes) to.*(c.field) += t.*(c.field);
    // A path's peak is its own (its groups' peaks need not coincide): the
    // largest of them, a lower bound.
    to.peak_bytes = std::max(to.peak_bytes, t.peak_bytes);
  }

  Json totals_json(const an::MemoryTotals& t) {
    Json j;
    for (const Column& c : kColumns) j[c.name] = t.*(c.field);
    j["peak_ns"] = ns(t.peak_tick);
    return j;
  }
  Json window_json() {
    Json w;
    w["from_ns"] = ns(o_.window.from);
    w["to_ns"] = o_.window.to == an::kMemoryNever ? Json(nullptr) : Json(ns(o_.window.to));
    return w;
  }
  Json table_json(const an::MemoryTable& r) {
    Json t;
    Json keys = Json::array();
    for (an::MemoryKey k : r.keys) keys.push_back(an::memory_key_name(k));
    t["by"] = keys;
    Json rows = Json::array();
    for (const an::MemoryGroup& g : r.groups) {
      Json row;
      for (size_t i = 0; i < r.keys.size(); ++i) row[an::memory_key_name(r.keys[i])] = names_.json_value(r.keys[i], g.key[i]);
      for (const Column& c : kColumns) row[c.name] = g.totals.*(c.field);
      row["peak_ns"] = ns(g.totals.peak_tick);
      rows.push_back(row);
    }
    t["rows"] = rows;
    return t;
  }
  void table_csv(const an::MemoryTable& r) {
    std::string line;
    for (an::MemoryKey k : r.keys) line += std::string(an::memory_key_name(k)) + ",";
    for (const Column& c : kColumns) line += std::string(c.name) + ",";
    line += "peak_ns";
    std::fprintf(out_, "%s\n", line.c_str());
    for (const an::MemoryGroup& g : r.groups) {
      line.clear();
      for (size_t i = 0; i < r.keys.size(); ++i) line += csv_field(names_.value(r.keys[i], g.key[i])) + ",";
      for (const Column& c : kColumns) line += ull(g.totals.*(c.field)) + ",";
      line += ull(static_cast<uint64_t>(ns(g.totals.peak_tick)));
      std::fprintf(out_, "%s\n", line.c_str());
    }
  }

  // ---- mismatched frees ----

  void mismatches_text() {
    if (m_.mismatches.empty()) return;
    std::fprintf(out_, "\nmismatched frees:\n");
    for (const an::MemoryMismatch& x : m_.mismatches) {
      const std::string at = terminal_safe(names_.path_text(x.free_path));
      if (x.allocated_by == 0) {
        std::fprintf(out_, "  %s  thread %u: %s of %s, a block the trace never saw allocated (or freed already)\n",
                     when(x.tick).c_str(), x.thread, fmt::alloc_op_name(x.freed_by), format_hex(x.ptr).c_str());
        std::fprintf(out_, "      freed at      %s\n", at.c_str());
      } else {
        std::fprintf(out_, "  %s  thread %u: %s of %s, a block allocated by %s at %s\n", when(x.tick).c_str(), x.thread,
                     fmt::alloc_op_name(x.freed_by), format_hex(x.ptr).c_str(), fmt::alloc_op_name(x.allocated_by),
                     when(x.alloc_tick).c_str());
        std::fprintf(out_, "      freed at      %s\n", at.c_str());
        std::fprintf(out_, "      allocated at  %s\n", terminal_safe(names_.path_text(x.alloc_path)).c_str());
      }
    }
    if (m_.mismatch_count > m_.mismatches.size())
      std::fprintf(out_, "  (%llu more)\n", static_cast<unsigned long long>(m_.mismatch_count - m_.mismatches.size()));
  }
  Json mismatches_json() {
    Json a = Json::array();
    for (const an::MemoryMismatch& x : m_.mismatches) {
      Json j;
      j["ns"] = ns(x.tick);
      j["thread"] = x.thread;
      j["ptr"] = x.ptr;
      j["freed_by"] = fmt::alloc_op_name(x.freed_by);
      j["free_path"] = names_.path(x.free_path);
      if (x.allocated_by) {
        j["allocated_by"] = fmt::alloc_op_name(x.allocated_by);
        j["alloc_path"] = names_.path(x.alloc_path);
        j["alloc_ns"] = ns(x.alloc_tick);
      } else {
        j["allocated_by"] = nullptr;
      }
      a.push_back(j);
    }
    return a;
  }

  // ---- the peak, leaks: blocks by path (or --by) ----

  std::vector<an::MemoryKey> keys_or(an::MemoryKey k) const {
    return with_process(o_.keys.empty() ? std::vector<an::MemoryKey>{k} : o_.keys);
  }

  // Rows of blocks: count and bytes per group.
  void blocks_out(const char* what, const std::vector<an::MemoryKey>& keys,
                  const std::vector<std::pair<std::array<uint32_t, 5>, std::pair<uint64_t, uint64_t>>>& rows,
                  Json head) {
    if (o_.format == OutputFormat::kJson) {
      Json a = Json::array();
      for (const auto& [key, v] : rows) {
        Json row;
        for (size_t i = 0; i < keys.size(); ++i) row[an::memory_key_name(keys[i])] = names_.json_value(keys[i], key[i]);
        row["blocks"] = v.first;
        row["bytes"] = v.second;
        a.push_back(row);
      }
      head[what] = a;
      std::fprintf(out_, "%s\n", json_text(head).c_str());
      return;
    }
    if (o_.format == OutputFormat::kCsv) {
      std::string line;
      for (an::MemoryKey k : keys) line += std::string(an::memory_key_name(k)) + ",";
      std::fprintf(out_, "%sblocks,bytes\n", line.c_str());
      for (const auto& [key, v] : rows) {
        line.clear();
        for (size_t i = 0; i < keys.size(); ++i) line += csv_field(names_.value(keys[i], key[i])) + ",";
        std::fprintf(out_, "%s%llu,%llu\n", line.c_str(), static_cast<unsigned long long>(v.first),
                     static_cast<unsigned long long>(v.second));
      }
      return;
    }
    std::vector<std::string> headers{"BLOCKS", "BYTES"};
    for (std::string& k : key_headers(keys)) headers.push_back(k);
    TextTable table(headers, 2);
    size_t shown = 0;
    for (const auto& [key, v] : rows) {
      if (o_.limit && shown >= o_.limit) break;
      ++shown;
      std::vector<std::string> row{ull(v.first), format_bytes(v.second)};
      for (size_t i = 0; i < keys.size(); ++i) row.push_back(names_.value(keys[i], key[i]));
      table.add(row);
    }
    table.print(out_);
    if (o_.limit && rows.size() > o_.limit) std::fprintf(out_, "(%zu more rows: -n 0 shows all)\n", rows.size() - o_.limit);
  }

  Status peak() {
    query_.keys = {an::MemoryKey::kThread};
    const an::MemoryTable whole = an::memory_table(m_, query_);
    const std::vector<an::MemoryKey> keys = keys_or(an::MemoryKey::kPath);
    const an::MemoryTable live = an::memory_live_at(m_, keys, whole.peak_seq);
    std::vector<std::pair<std::array<uint32_t, 5>, std::pair<uint64_t, uint64_t>>> rows;
    for (const an::MemoryGroup& g : live.groups) rows.push_back({g.key, {g.totals.allocs, g.totals.bytes}});
    Json head;
    head["peak_bytes"] = whole.total.peak_bytes;
    head["peak_ns"] = ns(whole.total.peak_tick);
    head["window"] = window_json();
    if (o_.format == OutputFormat::kText) {
      std::fprintf(out_, "peak: %s outstanding in %s, first at %s%s; live then:\n",
                   format_bytes(whole.total.peak_bytes).c_str(), count_of(live.total.allocs, "block", "blocks").c_str(),
                   when(whole.total.peak_tick).c_str(), window_title().c_str());
    }
    blocks_out("live", keys, rows, head);
    return ok_status();
  }

  Status leaks() {
    const std::vector<an::MemoryKey> keys = keys_or(an::MemoryKey::kPath);
    query_.keys = keys;
    an::MemoryTable t = an::memory_table(m_, query_);
    std::vector<an::MemoryGroup> groups;
    for (const an::MemoryGroup& g : t.groups)
      if (g.totals.leaked) groups.push_back(g);
    std::stable_sort(groups.begin(), groups.end(), [](const an::MemoryGroup& a, const an::MemoryGroup& b) {
      return a.totals.leaked_bytes > b.totals.leaked_bytes;
    });
    std::vector<std::pair<std::array<uint32_t, 5>, std::pair<uint64_t, uint64_t>>> rows;
    for (const an::MemoryGroup& g : groups) rows.push_back({g.key, {g.totals.leaked, g.totals.leaked_bytes}});
    Json head;
    head["leaked"] = t.total.leaked;
    head["leaked_bytes"] = t.total.leaked_bytes;
    head["window"] = window_json();
    if (o_.format == OutputFormat::kText)
      std::fprintf(out_, "leaked: %s (%s) allocated%s and still allocated when %s\n",
                   count_of(t.total.leaked, "block", "blocks").c_str(), format_bytes(t.total.leaked_bytes).c_str(),
                   windowed() ? " in the window" : "", leak_end().c_str());
    blocks_out("leaks", keys, rows, head);
    return ok_status();
  }

  // ---- outstanding bytes over time ----

  // A row's name; a function's, path's or thread's with its process when
  // there are several (one key: no PROCESS column).
  bool named_with_process(an::MemoryKey k) const { return several_processes() && an::memory_key_per_process(k); }
  uint32_t process_of(an::MemoryKey k, uint32_t v) const {
    return k == an::MemoryKey::kFunction ? m_.functions[v].process
           : k == an::MemoryKey::kPath   ? m_.paths[v].process
                                         : trace_.threads()[v].record.process_index;
  }
  std::string timeline_name(an::MemoryKey k, uint32_t v) {
    std::string name = names_.value(k, v);
    if (!named_with_process(k)) return name;
    return name + "  [process " + names_.value(an::MemoryKey::kProcess, process_of(k, v)) + "]";
  }

  Status timeline() {
    const an::MemoryKey key = o_.keys.empty() ? an::MemoryKey::kModule : o_.keys.front();
    const an::MemoryTimeline tl = an::memory_timeline(m_, key, o_.window, o_.width);
    const double span = ns(tl.to) - ns(tl.from);
    const size_t buckets = tl.total.size();
    if (o_.format == OutputFormat::kJson) {
      Json j;
      j["by"] = an::memory_key_name(key);
      j["from_ns"] = ns(tl.from);
      j["to_ns"] = ns(tl.to);
      j["bucket_ns"] = span / static_cast<double>(buckets);
      j["total"] = tl.total;
      Json series = Json::array();
      for (size_t i = 0; i < tl.keys.size(); ++i) {
        Json s;
        s["key"] = names_.json_value(key, tl.keys[i]);
        if (named_with_process(key)) s["process"] = names_.json_value(an::MemoryKey::kProcess, process_of(key, tl.keys[i]));
        s["bytes"] = tl.bytes[i];
        series.push_back(s);
      }
      j["series"] = series;
      std::fprintf(out_, "%s\n", json_text(j).c_str());
      return ok_status();
    }
    if (o_.format == OutputFormat::kCsv) {
      std::fprintf(out_, "%s,from_ns,bytes\n", an::memory_key_name(key));
      for (size_t b = 0; b < buckets; ++b)
        std::fprintf(out_, "[all],%.0f,%llu\n", ns(tl.from) + span * static_cast<double>(b) / static_cast<double>(buckets),
                     static_cast<unsigned long long>(tl.total[b]));
      for (size_t i = 0; i < tl.keys.size(); ++i)
        for (size_t b = 0; b < buckets; ++b)
          std::fprintf(out_, "%s,%.0f,%llu\n", csv_field(timeline_name(key, tl.keys[i])).c_str(),
                       ns(tl.from) + span * static_cast<double>(b) / static_cast<double>(buckets),
                       static_cast<unsigned long long>(tl.bytes[i][b]));
      return ok_status();
    }
    std::fprintf(out_,
                 "outstanding bytes from %s to %s, by %s, %zu columns of %s (each the highest in it; a row is "
                 "scaled to its own peak)%s:\n\n",
                 format_timestamp_ns(ns(tl.from)).c_str(), format_timestamp_ns(ns(tl.to)).c_str(),
                 an::memory_key_name(key), buckets, format_duration_ns(span / static_cast<double>(buckets)).c_str(),
                 window_title().c_str());
    // By hand, not a TextTable: the bars are several bytes each, one column wide.
    auto row = [&](const std::string& peak, const std::string& bars, const std::string& name) {
      std::fprintf(out_, "%10s  %s  %s\n", peak.c_str(), bars.c_str(), terminal_safe(name).c_str());
    };
    row("PEAK", std::string("OVER TIME").substr(0, buckets) + std::string(buckets > 9 ? buckets - 9 : 0, ' '),
        key_headers({key}).front());
    row(format_bytes(peak_of(tl.total)), sparkline(tl.total), "[all]");
    size_t shown = 0;
    for (size_t i = 0; i < tl.keys.size(); ++i) {
      if (o_.limit && shown >= o_.limit) break;
      ++shown;
      row(format_bytes(peak_of(tl.bytes[i])), sparkline(tl.bytes[i]), timeline_name(key, tl.keys[i]));
    }
    if (o_.limit && tl.keys.size() > o_.limit)
      std::fprintf(out_, "(%zu more rows: -n 0 shows all)\n", tl.keys.size() - o_.limit);
    return ok_status();
  }
  // ---- sizes ----

  Status sizes() {
    const std::vector<an::MemoryKey> keys = keys_or(an::MemoryKey::kFunction);
    const std::vector<an::MemorySizes> all = an::memory_sizes(m_, keys, o_.window);
    auto bucket_lo = [](size_t b) { return b == 0 ? uint64_t{0} : uint64_t{1} << b; };
    auto bucket_hi = [](size_t b) { return b >= 63 ? ~uint64_t{0} : uint64_t{1} << (b + 1); };  // below it
    if (o_.format == OutputFormat::kJson || o_.format == OutputFormat::kCsv) {
      Json rows = Json::array();
      std::string line;
      for (an::MemoryKey k : keys) line += std::string(an::memory_key_name(k)) + ",";
      if (o_.format == OutputFormat::kCsv) std::fprintf(out_, "%ssize_from,size_below,blocks,bytes\n", line.c_str());
      for (const an::MemorySizes& s : all) {
        Json row;
        line.clear();
        for (size_t i = 0; i < keys.size(); ++i) {
          row[an::memory_key_name(keys[i])] = names_.json_value(keys[i], s.key[i]);
          line += csv_field(names_.value(keys[i], s.key[i])) + ",";
        }
        Json hist = Json::array();
        for (size_t b = 0; b < 64; ++b) {
          if (!s.count[b]) continue;
          hist.push_back({{"size_from", bucket_lo(b)}, {"size_below", bucket_hi(b)}, {"blocks", s.count[b]}, {"bytes", s.bytes[b]}});
          if (o_.format == OutputFormat::kCsv)
            std::fprintf(out_, "%s%llu,%llu,%llu,%llu\n", line.c_str(), static_cast<unsigned long long>(bucket_lo(b)),
                         static_cast<unsigned long long>(bucket_hi(b)), static_cast<unsigned long long>(s.count[b]),
                         static_cast<unsigned long long>(s.bytes[b]));
        }
        row["sizes"] = hist;
        rows.push_back(row);
      }
      if (o_.format == OutputFormat::kJson) {
        Json j;
        j["window"] = window_json();
        j["groups"] = rows;
        std::fprintf(out_, "%s\n", json_text(j).c_str());
      }
      return ok_status();
    }
    std::fprintf(out_, "sizes of the blocks allocated%s, by %s:\n", window_title().c_str(),
                 an::memory_key_name(keys.front()));
    size_t shown = 0;
    for (const an::MemorySizes& s : all) {
      if (o_.limit && shown >= o_.limit) break;
      ++shown;
      std::string name;
      for (size_t i = 0; i < keys.size(); ++i) name += (i ? ", " : "") + names_.value(keys[i], s.key[i]);
      std::fprintf(out_, "\n%s (%s)\n", terminal_safe(name).c_str(), format_bytes(s.total_bytes).c_str());
      uint64_t top = 0;
      for (uint64_t c : s.count) top = std::max(top, c);
      TextTable table({"SIZE FROM", "BELOW", "BLOCKS", "BYTES", "HISTOGRAM"}, 4);
      for (size_t b = 0; b < 64; ++b) {
        if (!s.count[b]) continue;
        const size_t bar = top ? static_cast<size_t>((s.count[b] * 40 + top - 1) / top) : 0;
        std::string hashes(bar, '#');
        table.add({format_bytes(bucket_lo(b)), format_bytes(bucket_hi(b)), ull(s.count[b]), format_bytes(s.bytes[b]), hashes});
      }
      table.print(out_);
    }
    if (o_.limit && all.size() > o_.limit) std::fprintf(out_, "(%zu more: -n 0 shows all)\n", all.size() - o_.limit);
    return ok_status();
  }

  format::TraceReader& trace_;
  const an::MemoryModel& m_;
  const MemoryOptions& o_;
  std::FILE* out_;
  Names names_;
  an::MemoryQuery query_;
};

}  // namespace

Result<analysis::MemoryWindow> parse_memory_window(const format::TraceReader& trace, const std::string& text) {
  const size_t dots = text.find("..");
  if (dots == std::string::npos)
    return Error("--window '" + text + "' is not FROM..TO (1s..3s, 1s.., ..500ms, or the text of marks: start..stop)");
  analysis::MemoryWindow w;
  auto side = [&](const std::string& s, bool from) -> Result<uint64_t> {
    if (s.empty()) return from ? uint64_t{0} : analysis::kMemoryNever;
    if (auto d = parse_duration_ns(s)) return static_cast<uint64_t>(static_cast<double>(*d) * trace.header().ticks_per_ns);
    for (const format::MarkInfo& m : trace.marks())
      if (m.text == s) return m.record.tick;
    std::string known;
    for (const format::MarkInfo& m : trace.marks())
      if (known.find("'" + m.text + "'") == std::string::npos) known += (known.empty() ? "" : ", ") + ("'" + m.text + "'");
    return Error("--window: '" + s + "' is neither a time (1.5ms, 2s) nor the text of a mark" +
                 (known.empty() ? std::string(" (the trace has no marks)") : " (marks: " + known + ")"));
  };
  CALLSCOPE_TRY(w.from, side(text.substr(0, dots), true));
  CALLSCOPE_TRY(w.to, side(text.substr(dots + 2), false));
  if (w.to <= w.from) return Error("--window '" + text + "' ends before it begins");
  return w;
}

Status print_memory(format::TraceReader& trace, symbolize::Symbolizer& sym, const analysis::MemoryModel& m,
                    const MemoryOptions& o, std::FILE* out) {
  return Printer(trace, sym, m, o, out).run();
}

}  // namespace callscope::views
