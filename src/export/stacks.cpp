#include "export/stacks.h"

#include <algorithm>

#include "analysis/profile.h"

namespace callscope::exporter {

std::string thread_frame_label(const format::TraceReader& trace, uint32_t thread) {
  const std::string& name = trace.threads()[thread].name;
  return "[thread " + std::to_string(thread) + (name.empty() ? "" : ": " + name) + "]";
}

namespace {

// Adds the visible nodes of `tree` under `under` of `out`.
void add_tree(StackTree& out, uint32_t under, const analysis::CallTree& tree, const std::vector<bool>& visible,
              const std::function<bool(uint64_t)>& wanted) {
  std::vector<uint32_t> to(tree.size(), under);
  for (uint32_t i = 1; i < tree.size(); ++i) {
    if (!visible[i]) continue;
    const analysis::CallNode& n = tree.node(i);
    StackNode s;
    s.parent = to[n.parent];
    s.depth = out.nodes[s.parent].depth + 1;
    s.function = static_cast<int64_t>(n.key);
    s.stats = n.stats;
    const StackNode& parent = out.nodes[s.parent];
    s.counted = !wanted || wanted(n.key) || (parent.function >= 0 && parent.counted);
    s.own_ticks = s.counted ? n.stats.self : 0;
    to[i] = static_cast<uint32_t>(out.nodes.size());
    out.nodes.push_back(s);
  }
}

}  // namespace

StackTree build_stacks(const format::TraceReader& trace, const analysis::Profile& p, const StackOptions& o) {
  StackTree out;
  out.profile = &p;
  out.per_thread = !o.merge;
  out.nodes.push_back({});
  analysis::TreeFilter f;
  if (o.wanted) f.wanted = o.wanted;
  if (o.merge) {
    const analysis::CallTree merged = analysis::merged_tree(p);
    add_tree(out, 0, merged, analysis::visible_nodes(merged, f), o.wanted);
  } else {
    for (const analysis::ThreadProfile& tp : p.threads) {
      const std::vector<bool> visible = analysis::visible_nodes(tp.tree, f);
      if (std::count(visible.begin() + 1, visible.end(), true) == 0) continue;
      StackNode thread;
      thread.depth = 1;
      thread.thread = tp.thread;
      thread.counted = !o.wanted;
      thread.stats.total = tp.tree.total();
      const uint32_t id = static_cast<uint32_t>(out.nodes.size());
      out.nodes.push_back(thread);
      add_tree(out, id, tp.tree, visible, o.wanted);
    }
  }
  // Labels, children in name order, inclusive weights (children come after
  // their parents: sum from the end).
  out.labels.resize(out.nodes.size());
  out.children.resize(out.nodes.size());
  out.labels[0] = "all";
  for (uint32_t i = 1; i < out.nodes.size(); ++i) {
    const StackNode& n = out.nodes[i];
    out.labels[i] = n.function >= 0 ? p.functions[static_cast<size_t>(n.function)].name : thread_frame_label(trace, n.thread);
    out.children[n.parent].push_back(i);
  }
  for (uint32_t i = static_cast<uint32_t>(out.nodes.size()); i-- > 0;) {
    StackNode& n = out.nodes[i];
    n.ticks += n.own_ticks;
    if (n.counted && n.function >= 0) n.calls += n.stats.calls;
    if (i) {
      out.nodes[n.parent].ticks += n.ticks;
      out.nodes[n.parent].calls += n.calls;
    }
  }
  if (!o.merge) {  // a thread frame's stats: its outermost frames'
    for (uint32_t c : out.children[0]) {
      StackNode& t = out.nodes[c];
      for (uint32_t g : out.children[c]) t.stats.calls += out.nodes[g].stats.calls;
    }
  }
  auto module = [&](uint32_t id) -> const std::string& {
    static const std::string none;
    const StackNode& n = out.nodes[id];
    return n.function >= 0 ? p.functions[static_cast<size_t>(n.function)].module : none;
  };
  for (auto& kids : out.children)
    std::sort(kids.begin(), kids.end(), [&](uint32_t a, uint32_t b) {
      if (out.labels[a] != out.labels[b]) return out.labels[a] < out.labels[b];
      if (module(a) != module(b)) return module(a) < module(b);
      return out.nodes[a].thread < out.nodes[b].thread;
    });
  return out;
}

void walk_stacks(const StackTree& t, const std::function<void(uint32_t, const std::vector<uint32_t>&)>& f) {
  std::vector<uint32_t> path;
  std::vector<std::pair<uint32_t, size_t>> todo;  // node, next child
  todo.push_back({0, 0});
  while (!todo.empty()) {
    auto& [node, next] = todo.back();
    if (next == t.children[node].size()) {
      todo.pop_back();
      if (!path.empty()) path.pop_back();
      continue;
    }
    const uint32_t c = t.children[node][next++];
    path.push_back(c);
    f(c, path);
    todo.push_back({c, 0});
  }
}

}  // namespace callscope::exporter
