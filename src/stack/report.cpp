// Text, CSV and JSON renderings of frame sizes and worst-case paths.
#include "stack/report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "common/files.h"

namespace callscope::stack {
namespace {

constexpr const char* kFrameNote =
    "# frame bytes include the return address and the registers the prologue pushes "
    "(as gcc -fstack-usage);\n# 'dynamic': the frame also grows at run time (alloca, VLA), "
    "only the static part is counted\n";
constexpr const char* kArmFrameNote =
    "# frame bytes: what the prologue pushes (the link register among it, in a function that "
    "calls)\n# and reserves, as gcc -fstack-usage counts them; 'dynamic': the frame also grows "
    "at run time\n# (alloca, VLA), only the static part is counted\n";
constexpr const char* kWorstNote =
    "# worst case: the sum of the frames along the deepest static call path (each frame includes\n"
    "# its return address; a tail call replaces its caller's frame), plus the red zone the last\n"
    "# one uses below rsp. Flags: unbounded = recursion reachable (each function of a recursion\n"
    "# counted once), dynamic = alloca/VLA frame on the way (static part only), unknown =\n"
    "# unresolved indirect call or jump reachable, external = calls into other modules (not counted)\n";

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}


std::string qualified(const StackModel& m, uint32_t i) { return m.module + "!" + m.functions[i].name; }

// "  (lparser.c:175)" when the debug information says where it is declared.
std::string where(const FunctionInfo& f) {
  if (f.file.empty()) return "";
  return "  (" + base_name(f.file) + (f.line ? ":" + std::to_string(f.line) : "") + ")";
}

std::string frame_note(const FunctionInfo& f) {
  switch (f.source) {
    case FrameSource::kPrologue: return "  [no CFI: prologue]";
    case FrameSource::kPrologueCfiUnreadable: return "  [CFI unreadable: prologue]";
    default: return "";
  }
}

const Cycle kNoCycle;
constexpr size_t kFlushBytes = size_t{1} << 20;
constexpr size_t kCycleMembersShown = 6;

// "main -> [a, b] -> big": a recursion's members in brackets (each counted
// once), "=>" after a tail call; long recursions shortened.
std::string path_text(const StackModel& m, const std::vector<PathStep>& path) {
  std::string s;
  for (size_t k = 0; k < path.size();) {
    if (k > 0) s += path[k - 1].tail_to_next ? " => " : " -> ";
    if (!path[k].in_cycle) {
      s += m.functions[path[k++].node].name;
      continue;
    }
    size_t j = k;
    while (!path[j].cycle_exit && j + 1 < path.size()) ++j;
    s += "[";
    for (size_t i = k; i <= j; ++i) {
      if (i - k < kCycleMembersShown || i == j) {
        if (i > k) s += ", ";
        s += m.functions[path[i].node].name;
      } else if (i - k == kCycleMembersShown) {
        s += ", +" + std::to_string(j - k - kCycleMembersShown) + " more";
      }
    }
    s += "]";
    k = j + 1;
  }
  return s;
}

std::string cycle_text(const StackModel& m, const Cycle& c) {
  std::string s;
  for (uint32_t v : c.nodes) s += m.functions[v].name + " -> ";
  if (!c.nodes.empty()) s += m.functions[c.nodes.front()].name;
  return s;
}

}  // namespace

std::string flags_of(const Depth& d) {
  std::string out;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ',';
    out += name;
  };
  add(d.unbounded, "unbounded");
  add(d.dynamic, "dynamic");
  add(d.unknown, "unknown");
  add(d.external, "external");
  return out;
}

std::string render_frames(const StackModel& m, std::vector<uint32_t> selected, size_t limit,
                          OutputFormat format) {
  std::stable_sort(selected.begin(), selected.end(), [&](uint32_t a, uint32_t b) {
    return m.functions[a].frame_bytes > m.functions[b].frame_bytes;
  });
  if (limit != 0 && selected.size() > limit) selected.resize(limit);
  std::string out;
  if (format == OutputFormat::kJson) {
    nlohmann::json fns = nlohmann::json::array();
    for (uint32_t i : selected) {
      const FunctionInfo& f = m.functions[i];
      fns.push_back({{"function", f.name}, {"symbol", f.symbol}, {"address", hex(f.address)},
                     {"size", f.size}, {"frame_bytes", f.frame_bytes}, {"dynamic", f.dynamic},
                     {"source", frame_source_name(f.source)}, {"red_zone_bytes", f.red_zone_bytes},
                     {"file", f.file}, {"line", f.line}});
    }
    nlohmann::json j = {{"module", m.module}, {"path", m.path}, {"isa", m.isa},
                        {"frame_bytes_include", m.isa == "x86-64" ? "return address and prologue pushes"
                                                                   : "prologue pushes (link register included)"},
                        {"cfi_problem", m.cfi_problem}, {"functions", fns}};
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  if (format == OutputFormat::kCsv) {
    out = "module,function,address,frame_bytes,dynamic,source,file,line,red_zone_bytes\n";
    for (uint32_t i : selected) {
      const FunctionInfo& f = m.functions[i];
      out += csv_field(m.module) + "," + csv_field(f.name) + "," + hex(f.address) + "," +
             std::to_string(f.frame_bytes) + "," + (f.dynamic ? "true" : "false") + "," +
             frame_source_name(f.source) + "," + csv_field(f.file) + "," +
             (f.line ? std::to_string(f.line) : "") + "," + std::to_string(f.red_zone_bytes) + "\n";
    }
    return out;
  }
  out = m.isa == "x86-64" ? kFrameNote : kArmFrameNote;
  if (!m.has_symtab) out += "# no .symtab: names from .dynsym, other functions shown by address\n";
  if (!m.cfi_problem.empty()) {
    out += "# " + terminal_safe(m.cfi_problem) +
           ": functions marked [CFI unreadable] are read from their prologue\n";
  }
  char line[64];
  for (uint32_t i : selected) {
    const FunctionInfo& f = m.functions[i];
    std::snprintf(line, sizeof line, "%8u bytes  %-10s  ", f.frame_bytes, hex(f.address).c_str());
    out += line + terminal_safe(qualified(m, i)) + (f.dynamic ? "  dynamic" : "") +
           (m.has_cfi ? frame_note(f) : "") + terminal_safe(where(f)) + "\n";
  }
  return out;
}

std::string render_worst(const StackModel& m, const WorstCase& w, std::vector<uint32_t> entries,
                         size_t limit, OutputFormat format, const std::vector<LimitVerdict>& verdicts,
                         std::FILE* sink) {
  std::unordered_map<uint32_t, const LimitVerdict*> verdict_index;
  for (const LimitVerdict& v : verdicts) verdict_index.emplace(v.entry, &v);
  auto verdict_of = [&verdict_index](uint32_t e) -> const LimitVerdict* {
    auto it = verdict_index.find(e);
    return it == verdict_index.end() ? nullptr : it->second;
  };
  std::stable_sort(entries.begin(), entries.end(), [&](uint32_t a, uint32_t b) {
    return w.depths[a].bytes > w.depths[b].bytes;
  });
  if (limit != 0 && entries.size() > limit) entries.resize(limit);
  std::string out;
  nlohmann::json jentries = nlohmann::json::array();
  if (format == OutputFormat::kCsv) {
    out = "module,function,address,worst_bytes,flags,path,recursion,recursion_bytes_per_trip,"
          "limit_bytes,within_limit\n";
  } else if (format == OutputFormat::kText) {
    out = kWorstNote;
  }
  char line[96];
  CycleFinder cycles(w.graph, w.adjacency, w.components);
  for (uint32_t e : entries) {
    // The full listing of a large library is ~100 MB of text: written as it
    // goes rather than held (and copied as it grows).
    if (sink != nullptr && out.size() >= kFlushBytes) {
      std::fwrite(out.data(), 1, out.size(), sink);
      out.clear();
    }
    const Depth& d = w.depths[e];
    const std::vector<PathStep> path = worst_path(w.components, w.depths, e);
    const Cycle& cycle = d.recursion != kNoNode ? cycles.find(d.recursion) : kNoCycle;
    const FunctionInfo& f = m.functions[e];
    const LimitVerdict* verdict = verdict_of(e);
    if (format == OutputFormat::kJson) {
      nlohmann::json jp = nlohmann::json::array();
      for (const PathStep& step : path) {
        const FunctionInfo& p = m.functions[step.node];
        jp.push_back({{"function", p.name}, {"address", hex(p.address)},
                      {"frame_bytes", p.frame_bytes}, {"dynamic", p.dynamic},
                      {"tail_call_to_next", step.tail_to_next}, {"in_recursion", step.in_cycle}});
      }
      nlohmann::json jc = nlohmann::json::array();
      for (uint32_t v : cycle.nodes) jc.push_back(m.functions[v].name);
      nlohmann::json je = {{"function", f.name}, {"address", hex(f.address)},
                           {"file", f.file}, {"line", f.line},
                           {"worst_bytes", d.bytes}, {"red_zone_bytes", d.red_zone_bytes},
                           {"unbounded", d.unbounded},
                           {"dynamic", d.dynamic}, {"unknown", d.unknown},
                           {"external", d.external}, {"path", jp}, {"recursion", jc},
                           {"recursion_bytes_per_trip", cycle.bytes_per_trip}};
      if (verdict != nullptr) {
        je["limit"] = {{"bytes", verdict->limit}, {"ok", verdict->ok}, {"why", verdict->why}};
      }
      jentries.push_back(std::move(je));
      continue;
    }
    if (format == OutputFormat::kCsv) {
      out += csv_field(m.module) + "," + csv_field(f.name) + "," + hex(f.address) + "," +
             std::to_string(d.bytes) + "," + csv_field(flags_of(d)) + "," +
             csv_field(path_text(m, path)) + "," + csv_field(cycle_text(m, cycle)) + "," +
             std::to_string(cycle.bytes_per_trip) + "," +
             (verdict ? std::to_string(verdict->limit) + "," + (verdict->ok ? "true" : "false") : ",") +
             "\n";
      continue;
    }
    std::snprintf(line, sizeof line, "%8llu bytes  %-10s  ", static_cast<unsigned long long>(d.bytes),
                  hex(f.address).c_str());
    const std::string flags = flags_of(d);
    out += line + terminal_safe(qualified(m, e)) + (flags.empty() ? "" : "  [" + flags + "]") +
           terminal_safe(where(f)) + "\n";
    if (verdict != nullptr) {
      out += std::string(verdict->ok ? "      limit ok: " : "      OVER LIMIT: ") + verdict->why + "\n";
    }
    size_t cycle_start = 0;
    for (size_t k = 0; k < path.size(); ++k) {
      const PathStep& step = path[k];
      const FunctionInfo& p = m.functions[step.node];
      if (step.in_cycle && (k == 0 || !path[k - 1].in_cycle || path[k - 1].cycle_exit)) cycle_start = k;
      if (step.in_cycle && !step.cycle_exit && k - cycle_start == kCycleMembersShown) {
        // A large recursion (thousands of functions in a big library) is
        // summed in one line after its first members, before its exit.
        size_t j = k;
        uint64_t bytes = 0;
        while (!path[j].cycle_exit && j + 1 < path.size()) bytes += m.functions[path[j++].node].frame_bytes;
        std::snprintf(line, sizeof line, "      %8llu  ", static_cast<unsigned long long>(bytes));
        out += line + std::string("... ") + std::to_string(j - k) +
               " more functions of the recursion, each counted once\n";
        k = j - 1;
        continue;
      }
      std::snprintf(line, sizeof line, "      %8u  ", p.frame_bytes);
      out += line + terminal_safe(p.name) + (p.dynamic ? "  dynamic" : "") +
             (step.in_cycle ? "  (recursion, counted once)" : "") +
             (step.tail_to_next ? "  (tail call to next)" : "") + "\n";
    }
    if (d.red_zone_bytes > 0) {
      std::snprintf(line, sizeof line, "      %8u  ", d.red_zone_bytes);
      out += line + std::string("(red zone: used below rsp by the last function)\n");
    }
    if (!cycle.nodes.empty()) {
      out += "      recursion: " + terminal_safe(cycle_text(m, cycle)) + "  (" + std::to_string(cycle.bytes_per_trip) +
             " bytes per trip)\n";
    }
  }
  if (format == OutputFormat::kJson) {
    nlohmann::json j = {{"module", m.module}, {"path", m.path},
                        {"worst_bytes_is", "sum of frames along the deepest static call path; each frame includes its return address"},
                        {"entries", jentries}};
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return out;
}

std::string render_unresolved(const StackModel& m, OutputFormat format) {
  std::vector<const IndirectSite*> open;
  for (const IndirectSite& s : m.indirect_sites) {
    if (!m.functions[s.function].indirect_closed) open.push_back(&s);
  }
  if (format == OutputFormat::kJson) {
    nlohmann::json sites = nlohmann::json::array();
    for (const IndirectSite* s : open) {
      const FunctionInfo& f = m.functions[s->function];
      sites.push_back({{"function", f.name}, {"address", hex(f.address)}, {"site", hex(s->site)},
                       {"kind", s->jump ? "jump" : "call"}, {"instruction", s->instruction},
                       {"file", s->file}, {"line", s->line}});
    }
    nlohmann::json j = {{"module", m.module}, {"path", m.path}, {"sites", sites}};
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string out;
  if (format == OutputFormat::kCsv) {
    out = "module,function,address,site,kind,instruction,file,line\n";
    for (const IndirectSite* s : open) {
      const FunctionInfo& f = m.functions[s->function];
      out += csv_field(m.module) + "," + csv_field(f.name) + "," + hex(f.address) + "," + hex(s->site) +
             "," + (s->jump ? "jump" : "call") + "," + csv_field(s->instruction) + "," +
             csv_field(s->file) + "," + (s->line ? std::to_string(s->line) : "") + "\n";
    }
    return out;
  }
  out = "# calls and tail jumps through a pointer: the callee is not in the code. To close\n"
        "# them, copy these lines into an edges file, replace each '?' by the function(s)\n"
        "# called there (globs allowed; one line per callee) and pass it with --edges.\n";
  if (open.empty()) out += "# (none left open)\n";
  for (const IndirectSite* s : open) {
    const FunctionInfo& f = m.functions[s->function];
    std::string where_text;
    if (!s->file.empty()) where_text = "  (" + base_name(s->file) + ":" + std::to_string(s->line) + ")";
    out += terminal_safe(f.name) + " -> ?    # " + hex(s->site) + "  " + (s->jump ? "tail jump: " : "") +
           terminal_safe(s->instruction) + terminal_safe(where_text) + "\n";
  }
  return out;
}

}  // namespace callscope::stack
