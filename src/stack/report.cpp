// Text, CSV and JSON renderings of frame sizes and worst-case paths.
#include "stack/report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace callscope::stack {
namespace {

constexpr const char* kFrameNote =
    "# frame bytes include the return address and the registers the prologue pushes "
    "(as gcc -fstack-usage);\n# 'dynamic': the frame also grows at run time (alloca, VLA), "
    "only the static part is counted\n";
constexpr const char* kWorstNote =
    "# worst case: the sum of the frames along the deepest static call path (each frame includes\n"
    "# its return address; a tail call replaces its caller's frame). Flags: unbounded = recursion\n"
    "# reachable (each cycle member counted once), dynamic = alloca/VLA frame on the way (static\n"
    "# part only), unknown = unresolved indirect call reachable, external = calls into other\n"
    "# modules (not counted)\n";

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

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

std::string qualified(const StackModel& m, uint32_t i) { return m.module + "!" + m.functions[i].name; }

std::string cycle_text(const StackModel& m, const Cycle& c) {
  std::string s;
  for (uint32_t v : c.nodes) s += m.functions[v].name + " -> ";
  if (!c.nodes.empty()) s += m.functions[c.nodes.front()].name;
  return s;
}

}  // namespace

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
                     {"source", frame_source_name(f.source)}});
    }
    nlohmann::json j = {{"module", m.module}, {"path", m.path},
                        {"frame_bytes_include", "return address and prologue pushes"},
                        {"functions", fns}};
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  if (format == OutputFormat::kCsv) {
    out = "module,function,address,frame_bytes,dynamic,source\n";
    for (uint32_t i : selected) {
      const FunctionInfo& f = m.functions[i];
      out += csv_field(m.module) + "," + csv_field(f.name) + "," + hex(f.address) + "," +
             std::to_string(f.frame_bytes) + "," + (f.dynamic ? "true" : "false") + "," +
             frame_source_name(f.source) + "\n";
    }
    return out;
  }
  out = kFrameNote;
  if (!m.has_symtab) out += "# no .symtab: names from .dynsym, other functions shown by address\n";
  char line[64];
  for (uint32_t i : selected) {
    const FunctionInfo& f = m.functions[i];
    std::snprintf(line, sizeof line, "%8u bytes  %-10s  ", f.frame_bytes, hex(f.address).c_str());
    out += line + terminal_safe(qualified(m, i)) + (f.dynamic ? "  dynamic" : "") + "\n";
  }
  return out;
}

std::string render_worst(const StackModel& m, const WorstCase& w, std::vector<uint32_t> entries,
                         size_t limit, OutputFormat format) {
  std::stable_sort(entries.begin(), entries.end(), [&](uint32_t a, uint32_t b) {
    return w.depths[a].bytes > w.depths[b].bytes;
  });
  if (limit != 0 && entries.size() > limit) entries.resize(limit);
  std::string out;
  nlohmann::json jentries = nlohmann::json::array();
  if (format == OutputFormat::kCsv) {
    out = "module,function,address,worst_bytes,flags,path,recursion,recursion_bytes_per_trip\n";
  } else if (format == OutputFormat::kText) {
    out = kWorstNote;
  }
  char line[96];
  for (uint32_t e : entries) {
    const Depth& d = w.depths[e];
    const std::vector<uint32_t> path = deepest_path(w.depths, e);
    const Cycle cycle = d.recursion != kNoNode ? find_cycle(w.graph, w.components, d.recursion) : Cycle{};
    const FunctionInfo& f = m.functions[e];
    if (format == OutputFormat::kJson) {
      nlohmann::json jp = nlohmann::json::array();
      for (size_t k = 0; k < path.size(); ++k) {
        const FunctionInfo& p = m.functions[path[k]];
        jp.push_back({{"function", p.name}, {"address", hex(p.address)},
                      {"frame_bytes", p.frame_bytes}, {"dynamic", p.dynamic},
                      {"tail_call_to_next", k + 1 < path.size() && w.depths[path[k]].next_is_tail}});
      }
      nlohmann::json jc = nlohmann::json::array();
      for (uint32_t v : cycle.nodes) jc.push_back(m.functions[v].name);
      jentries.push_back({{"function", f.name}, {"address", hex(f.address)},
                          {"worst_bytes", d.bytes}, {"unbounded", d.unbounded},
                          {"dynamic", d.dynamic}, {"unknown", d.unknown},
                          {"external", d.external}, {"path", jp}, {"recursion", jc},
                          {"recursion_bytes_per_trip", cycle.bytes_per_trip}});
      continue;
    }
    std::string path_text;
    for (size_t k = 0; k < path.size(); ++k) {
      if (k > 0) path_text += w.depths[path[k - 1]].next_is_tail ? " => " : " -> ";
      path_text += m.functions[path[k]].name;
    }
    if (format == OutputFormat::kCsv) {
      out += csv_field(m.module) + "," + csv_field(f.name) + "," + hex(f.address) + "," +
             std::to_string(d.bytes) + "," + csv_field(flags_of(d)) + "," + csv_field(path_text) +
             "," + csv_field(cycle_text(m, cycle)) + "," + std::to_string(cycle.bytes_per_trip) + "\n";
      continue;
    }
    std::snprintf(line, sizeof line, "%8llu bytes  %-10s  ", static_cast<unsigned long long>(d.bytes),
                  hex(f.address).c_str());
    const std::string flags = flags_of(d);
    out += line + terminal_safe(qualified(m, e)) + (flags.empty() ? "" : "  [" + flags + "]") + "\n";
    for (size_t k = 0; k < path.size(); ++k) {
      const FunctionInfo& p = m.functions[path[k]];
      std::snprintf(line, sizeof line, "      %8u  ", p.frame_bytes);
      const bool tail = k + 1 < path.size() && w.depths[path[k]].next_is_tail;
      out += line + terminal_safe(p.name) + (p.dynamic ? "  dynamic" : "") + (tail ? "  (tail call to next)" : "") + "\n";
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

}  // namespace callscope::stack
