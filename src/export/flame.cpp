#include "export/flame.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>

#include "common/files.h"
#include "export/ns.h"
#include "views/format_util.h"

namespace callscope::exporter {

extern const char kFlameJs[];  // export/web/flame.js, embedded at build time

namespace {

constexpr uint32_t kPad = 10, kFrameHeight = 16, kTop = 56, kBottom = 30;

}  // namespace

std::string xml_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A well-formed sequence (RFC 3629's table), not U+FFFE or U+FFFF:
    // anything else is not allowed in XML.
    const size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = n != 0 && i + n <= s.size();
    if (ok) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      const unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
      const unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
      ok = c1 >= lo && c1 <= hi;
      for (size_t k = 2; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      if (ok && c == 0xef && c1 == 0xbf) ok = static_cast<unsigned char>(s[i + 2]) < 0xbe;  // U+FFFE, U+FFFF
    }
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

namespace {

std::string xml(std::string_view s) { return xml_text(s); }

uint64_t fnv(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// Flame colours: warm, decided by the name alone (the same function has the
// same colour in every graph).
std::string warm(std::string_view name) {
  const uint64_t h = fnv(name);
  const double v1 = static_cast<double>(h & 0xff) / 255, v2 = static_cast<double>((h >> 8) & 0xff) / 255,
               v3 = static_cast<double>((h >> 16) & 0xff) / 255;
  char b[48];
  std::snprintf(b, sizeof b, "rgb(%d,%d,%d)", 205 + static_cast<int>(50 * v3), static_cast<int>(230 * v1),
                static_cast<int>(55 * v2));
  return b;
}

// Differential colours: red grew, blue shrank, by `t` in [-1, 1].
std::string diff_colour(double t) {
  const int fade = static_cast<int>(std::lround(220 * (1 - std::min(1.0, std::fabs(t)))));
  char b[48];
  if (t >= 0)
    std::snprintf(b, sizeof b, "rgb(255,%d,%d)", 35 + fade, 35 + fade);
  else
    std::snprintf(b, sizeof b, "rgb(%d,%d,255)", 35 + fade, 35 + fade);
  return b;
}

const char* weight_words(Weight w) {
  switch (w) {
    case Weight::kSelf: return "widths: total time (the self time of each frame and everything above it)";
    case Weight::kTotal: return "widths: total time of each call path";
    case Weight::kCalls: return "widths: calls (each frame's own and those above it)";
  }
  return "";
}

// A frame's width per the weight, for every node; a parent is never
// narrower than its children together.
std::vector<uint64_t> widths(const StackTree& t, Weight by) {
  std::vector<uint64_t> w(t.nodes.size(), 0);
  for (size_t i = t.nodes.size(); i-- > 0;) {
    const StackNode& n = t.nodes[i];
    uint64_t kids = 0;
    for (uint32_t c : t.children[i]) kids += w[c];
    switch (by) {
      case Weight::kSelf: w[i] = n.ticks; break;
      case Weight::kCalls: w[i] = n.calls; break;
      case Weight::kTotal: w[i] = std::max(i == 0 ? 0 : n.stats.total, kids); break;
    }
    w[i] = std::max(w[i], kids);
  }
  return w;
}

struct Frame {
  uint32_t node;
  uint64_t s, w;
  std::string fill, title;
};

struct Layout {
  std::vector<Frame> frames;  // the root first, then parents before children
  uint32_t depth = 0;         // the deepest frame's
  uint64_t elided = 0;
};

Layout lay_out(const StackTree& t, const std::vector<uint64_t>& w, uint32_t max_frames) {
  Layout l;
  uint64_t threshold = 0;  // frames must be wider than this
  std::vector<uint64_t> nonzero;
  for (uint64_t x : w)
    if (x) nonzero.push_back(x);
  if (nonzero.size() > max_frames) {
    std::nth_element(nonzero.begin(), nonzero.begin() + max_frames, nonzero.end(), std::greater<>());
    threshold = nonzero[max_frames];
  }
  std::vector<uint64_t> start(t.nodes.size(), 0), next(t.nodes.size(), 0);
  l.frames.push_back({0, 0, w[0], "", ""});
  walk_stacks(t, [&](uint32_t id, const std::vector<uint32_t>&) {
    const uint32_t parent = t.nodes[id].parent;
    start[id] = start[parent] + next[parent];
    next[parent] += w[id];
    if (w[id] == 0) return;
    if (w[id] <= threshold) {
      ++l.elided;
      return;
    }
    l.frames.push_back({id, start[id], w[id], "", ""});
    l.depth = std::max(l.depth, t.nodes[id].depth);
  });
  return l;
}

std::string percent(uint64_t part, uint64_t whole) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return b;
}

std::string ns_text(const format::TraceReader& trace, uint64_t ticks) {
  return views::format_duration_ns(static_cast<double>(ns_of(trace, ticks)));
}

// "parse (app, parse.c:12): 3 calls, total 1.86 us, self 230 ns; 12.30% of all"
std::string describe(const format::TraceReader& trace, const StackTree& t, uint32_t id, uint64_t width,
                     uint64_t root_width) {
  const StackNode& n = t.nodes[id];
  std::string s = t.labels[id];
  if (n.function >= 0) {
    const analysis::FunctionInfo& f = t.profile->functions[static_cast<size_t>(n.function)];
    std::string where = f.module;
    if (!f.file.empty()) {
      where += (where.empty() ? "" : ", ") + base_name(f.file) +
               (f.line ? ":" + std::to_string(f.line) : "");
    }
    if (!where.empty()) s += " (" + where + ")";
  }
  if (id == 0) {
    s += ": total " + ns_text(trace, n.ticks) + ", " + views::count_of(n.calls, "call", "calls");
    return s;
  }
  s += ": " + views::count_of(n.stats.calls, "call", "calls") + ", total " + ns_text(trace, n.stats.total);
  if (n.function >= 0) s += ", self " + ns_text(trace, n.stats.self);
  s += "; " + percent(width, root_width) + " of the graph";
  return s;
}

// `standalone`: a file of its own (the XML prolog and the script), or the
// SVG alone for a page that brings the script once.
std::string render(const StackTree& t, const Layout& l, const FlameOptions& o, bool standalone,
                   const std::string& heading_extra) {
  const uint32_t W = o.width;
  const uint32_t height = kTop + (l.depth + 1) * kFrameHeight + kBottom;
  const double scale = l.frames[0].w ? static_cast<double>(W - 2 * kPad) / static_cast<double>(l.frames[0].w) : 0;
  std::string b;
  b.reserve(256 * l.frames.size() + 8192);
  char tmp[512];
  if (standalone) b += "<?xml version=\"1.0\" standalone=\"no\"?>\n";
  std::snprintf(tmp, sizeof tmp,
                "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
                "xmlns=\"http://www.w3.org/2000/svg\" class=\"callscope-flame\" data-width=\"%u\" data-icicle=\"%d\">\n",
                W, height, W, height, W, o.icicle ? 1 : 0);
  b += tmp;
  b += "<style>\n"
       ".callscope-flame text { font-family: Verdana, Arial, sans-serif; font-size: 12px; fill: #000; }\n"
       ".callscope-flame .title { font-size: 17px; }\n"
       ".callscope-flame .subtitle { fill: #555; }\n"
       ".callscope-flame .unzoom, .callscope-flame .search, .callscope-flame .unsearch { cursor: pointer; }\n"
       ".callscope-flame g.f { cursor: pointer; }\n"
       ".callscope-flame g.f text { font-size: 11px; pointer-events: none; }\n"
       ".callscope-flame g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
       ".callscope-flame g.parent rect { opacity: 0.5; }\n"
       "</style>\n";
  std::snprintf(tmp, sizeof tmp, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#f6f6f0\"/>\n", W, height);
  b += tmp;
  std::snprintf(tmp, sizeof tmp, "<text class=\"title\" x=\"%u\" y=\"24\" text-anchor=\"middle\">", W / 2);
  b += tmp + xml(o.title) + "</text>\n";
  std::snprintf(tmp, sizeof tmp, "<text class=\"subtitle\" x=\"%u\" y=\"42\" text-anchor=\"middle\">", W / 2);
  b += tmp + xml(o.subtitle + heading_extra) + "</text>\n";
  std::snprintf(tmp, sizeof tmp,
                "<text class=\"unzoom\" x=\"%u\" y=\"24\" style=\"opacity:0\">Reset Zoom</text>\n"
                "<text class=\"search\" x=\"%u\" y=\"24\" text-anchor=\"end\">Search</text>\n"
                "<text class=\"unsearch\" x=\"%u\" y=\"42\" text-anchor=\"end\" style=\"opacity:0\">Reset Search</text>\n"
                "<text class=\"details\" x=\"%u\" y=\"%u\"> </text>\n"
                "<text class=\"matched\" x=\"%u\" y=\"%u\" text-anchor=\"end\"></text>\n",
                kPad, W - kPad, W - kPad, kPad, height - 10, W - kPad, height - 10);
  b += tmp;
  b += "<g class=\"frames\">\n";
  for (const Frame& f : l.frames) {
    const uint32_t d = t.nodes[f.node].depth;
    const uint32_t y = o.icicle ? kTop + d * kFrameHeight : kTop + (l.depth - d) * kFrameHeight;
    const double x = kPad + static_cast<double>(f.s) * scale, w = static_cast<double>(f.w) * scale;
    const std::string& label = t.labels[f.node];
    const size_t fit = w > 6 ? static_cast<size_t>((w - 6) / 7) : 0;
    const std::string shown = fit < 3 ? "" : label.size() <= fit ? label : label.substr(0, fit - 2) + "..";
    std::snprintf(tmp, sizeof tmp, "<g class=\"f\" data-s=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\" data-d=\"%u\" data-n=\"",
                  f.s, f.w, d);
    b += tmp;
    b += xml(label);
    b += "\"><title>";
    b += xml(f.title);
    std::snprintf(tmp, sizeof tmp,
                  "</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" rx=\"2\" fill=\"%s\"/>"
                  "<text x=\"%.2f\" y=\"%u\">",
                  x, y, w, kFrameHeight - 1, f.fill.c_str(), x + 3, y + 11);
    b += tmp;
    b += xml(shown);
    b += "</text></g>\n";
  }
  b += "</g>\n";
  if (standalone) {
    b += "<script type=\"text/ecmascript\"><![CDATA[\n";
    b += kFlameJs;
    b += "]]></script>\n";
  }
  b += "</svg>\n";
  return b;
}

Result<FlameCounts> write_all(const std::string& svg, FlameCounts counts, FILE* out) {
  if (std::fwrite(svg.data(), 1, svg.size(), out) != svg.size()) return Error("cannot write the flame graph");
  counts.bytes = svg.size();
  return counts;
}

std::string elided_note(const Layout& l) {
  return l.elided ? " · " + views::count_of(l.elided, "narrow frame", "narrow frames") + " left out" : "";
}

}  // namespace

std::string flame_svg(const format::TraceReader& trace, const StackTree& t, const FlameOptions& o, bool with_script,
                      FlameCounts* counts) {
  const std::vector<uint64_t> w = widths(t, o.by);
  Layout l = lay_out(t, w, o.max_frames);
  for (Frame& f : l.frames) {
    const StackNode& n = t.nodes[f.node];
    f.fill = f.node == 0 ? "rgb(210,210,210)" : n.function < 0 ? "rgb(190,200,220)" : warm(t.labels[f.node]);
    f.title = describe(trace, t, f.node, f.w, w[0]);
  }
  if (counts) {
    counts->frames = l.frames.size();
    counts->elided = l.elided;
  }
  return render(t, l, o, with_script, " · " + std::string(weight_words(o.by)) + elided_note(l));
}

Result<FlameCounts> write_flame(const format::TraceReader& trace, const StackTree& t, const FlameOptions& o, FILE* out) {
  FlameCounts counts;
  const std::string svg = flame_svg(trace, t, o, true, &counts);
  return write_all(svg, counts, out);
}

Result<FlameCounts> write_flame_diff(const format::TraceReader& base_trace, const StackTree& base,
                                     const format::TraceReader& trace, const StackTree& t, const FlameOptions& o,
                                     FILE* out) {
  // A frame's own weight, comparable across traces: ns or calls.
  auto own = [&](const format::TraceReader& tr, const StackTree& tree, uint32_t id) -> double {
    const StackNode& n = tree.nodes[id];
    switch (o.by) {
      case Weight::kSelf: return static_cast<double>(ns_of(tr, n.own_ticks));
      case Weight::kTotal: return static_cast<double>(ns_of(tr, n.stats.total));
      case Weight::kCalls: return n.counted && n.function >= 0 ? static_cast<double>(n.stats.calls) : 0.0;
    }
    return 0;
  };
  auto text = [&](double v) {
    return o.by == Weight::kCalls ? std::to_string(static_cast<uint64_t>(v)) : views::format_duration_ns(v);
  };
  // B's frames matched to A's along the paths: the same name and module
  // under the matched parent.
  auto module_of = [](const StackTree& tree, uint32_t id) -> const std::string& {
    static const std::string none;
    const StackNode& n = tree.nodes[id];
    return n.function >= 0 ? tree.profile->functions[static_cast<size_t>(n.function)].module : none;
  };
  std::map<std::tuple<uint32_t, std::string_view, std::string_view>, uint32_t> base_child;
  for (uint32_t i = 1; i < base.nodes.size(); ++i)
    base_child.emplace(std::tuple{base.nodes[i].parent, std::string_view(base.labels[i]), std::string_view(module_of(base, i))}, i);
  constexpr uint32_t kNone = ~0u;
  std::vector<uint32_t> match(t.nodes.size(), kNone);
  match[0] = 0;
  std::vector<double> delta(t.nodes.size(), 0), before(t.nodes.size(), 0);
  std::vector<bool> matched(base.nodes.size(), false);
  double max_delta = 0;
  walk_stacks(t, [&](uint32_t id, const std::vector<uint32_t>&) {
    const uint32_t parent = match[t.nodes[id].parent];
    if (parent != kNone) {
      auto it = base_child.find({parent, std::string_view(t.labels[id]), std::string_view(module_of(t, id))});
      if (it != base_child.end()) {
        match[id] = it->second;
        matched[it->second] = true;
        before[id] = own(base_trace, base, it->second);
      }
    }
    delta[id] = own(trace, t, id) - before[id];
    max_delta = std::max(max_delta, std::fabs(delta[id]));
  });
  uint64_t gone = 0;
  double gone_weight = 0;
  for (uint32_t i = 1; i < base.nodes.size(); ++i)
    if (!matched[i] && own(base_trace, base, i) > 0) {
      ++gone;
      gone_weight += own(base_trace, base, i);
    }

  const std::vector<uint64_t> w = widths(t, o.by);
  Layout l = lay_out(t, w, o.max_frames);
  for (Frame& f : l.frames) {
    f.fill = f.node == 0 ? "rgb(210,210,210)" : diff_colour(max_delta > 0 ? delta[f.node] / max_delta : 0);
    f.title = describe(trace, t, f.node, f.w, w[0]);
    if (f.node != 0) {
      const double after = before[f.node] + delta[f.node];
      std::string change = (delta[f.node] >= 0 ? "+" : "-") + text(std::fabs(delta[f.node]));
      if (before[f.node] > 0) {
        char pct[32];
        std::snprintf(pct, sizeof pct, " (%+.1f%%)", 100 * delta[f.node] / before[f.node]);
        change += pct;
      } else if (after > 0) {
        change += " (new)";
      }
      f.title += o.by == Weight::kCalls ? " · own calls " : o.by == Weight::kSelf ? " · self " : " · total ";
      f.title += text(before[f.node]) + " → " + text(after) + ": " + change;
    }
  }
  std::string extra = " · red grew, blue shrank (" + std::string(o.by == Weight::kCalls ? "own calls" : o.by == Weight::kSelf ? "self time" : "total time") + ")";
  if (gone) extra += " · " + views::count_of(gone, "call path", "call paths") + " of the first gone (" + text(gone_weight) + ")";
  extra += elided_note(l);
  FlameCounts counts{l.frames.size(), l.elided, 0};
  return write_all(render(t, l, o, true, extra), counts, out);
}

}  // namespace callscope::exporter
