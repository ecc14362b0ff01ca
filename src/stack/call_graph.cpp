// SCCs (iterative Tarjan) and longest paths over the condensation DAG.
#include "stack/call_graph.h"

#include <algorithm>
#include <deque>

namespace callscope::stack {
namespace {

// Compressed adjacency: the edges of node n are edges[begin[n] .. begin[n+1]).
struct Adjacency {
  std::vector<uint32_t> begin;
  std::vector<GraphEdge> edges;
};

Adjacency adjacency(const CallGraph& g) {
  Adjacency a;
  const size_t n = g.nodes.size();
  a.begin.assign(n + 1, 0);
  for (const GraphEdge& e : g.edges) {
    if (e.from < n && e.to < n) ++a.begin[e.from + 1];
  }
  for (size_t i = 0; i < n; ++i) a.begin[i + 1] += a.begin[i];
  a.edges.resize(a.begin[n]);
  std::vector<uint32_t> fill(a.begin.begin(), a.begin.end() - 1);
  for (const GraphEdge& e : g.edges) {
    if (e.from < n && e.to < n) a.edges[fill[e.from]++] = e;
  }
  return a;
}

}  // namespace

Components strongly_connected_components(const CallGraph& graph) {
  const uint32_t n = static_cast<uint32_t>(graph.nodes.size());
  const Adjacency adj = adjacency(graph);
  Components out;
  out.of_node.assign(n, kNoNode);
  std::vector<uint32_t> index(n, kNoNode), low(n, 0), stack;
  std::vector<bool> on_stack(n, false);
  struct Frame {
    uint32_t node;
    uint32_t edge;
  };
  std::vector<Frame> work;  // explicit DFS stack: call graphs are deep
  uint32_t counter = 0;
  for (uint32_t root = 0; root < n; ++root) {
    if (index[root] != kNoNode) continue;
    work.push_back({root, adj.begin[root]});
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!work.empty()) {
      Frame& f = work.back();
      const uint32_t v = f.node;
      if (f.edge < adj.begin[v + 1]) {
        const uint32_t w = adj.edges[f.edge++].to;
        if (index[w] == kNoNode) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = true;
          work.push_back({w, adj.begin[w]});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        const uint32_t id = out.count();
        bool recursive = false;
        uint32_t size = 0;
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          out.of_node[w] = id;
          ++size;
        } while (w != v);
        if (size > 1) recursive = true;
        for (uint32_t e = adj.begin[v]; e < adj.begin[v + 1] && !recursive; ++e) {
          if (adj.edges[e].to == v) recursive = true;
        }
        out.recursive.push_back(recursive);
      }
      work.pop_back();
      if (!work.empty()) {
        const uint32_t parent = work.back().node;
        low[parent] = std::min(low[parent], low[v]);
      }
    }
  }
  return out;
}

std::vector<Depth> worst_depths(const CallGraph& graph, const Components& components) {
  const uint32_t n = static_cast<uint32_t>(graph.nodes.size());
  const Adjacency adj = adjacency(graph);
  std::vector<Depth> depth(n);
  // Nodes grouped by component, components in increasing id: callees first.
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return components.of_node[a] < components.of_node[b];
  });
  for (uint32_t v : order) {
    const GraphNode& node = graph.nodes[v];
    const uint32_t comp = components.of_node[v];
    Depth d;
    d.bytes = node.frame_bytes;
    d.dynamic = node.dynamic;
    d.unknown = node.unknown_calls;
    d.external = node.external_calls;
    if (components.recursive[comp]) {
      d.unbounded = true;
      d.recursion = v;
    }
    for (uint32_t e = adj.begin[v]; e < adj.begin[v + 1]; ++e) {
      const GraphEdge& edge = adj.edges[e];
      // Inside a recursion only the exits are followed; the cycle itself is
      // reported apart (find_cycle).
      if (components.of_node[edge.to] == comp) continue;
      const Depth& c = depth[edge.to];
      d.dynamic |= c.dynamic;
      d.unknown |= c.unknown;
      d.external |= c.external;
      if (c.unbounded) {
        d.unbounded = true;
        if (d.recursion == kNoNode) d.recursion = c.recursion;
      }
      const uint64_t via = edge.tail ? c.bytes : node.frame_bytes + c.bytes;
      if (via > d.bytes || (d.next == kNoNode && via == d.bytes)) {
        d.bytes = via;
        d.next = edge.to;
        d.next_is_tail = edge.tail;
      }
    }
    depth[v] = d;
  }
  return depth;
}

std::vector<uint32_t> deepest_path(const std::vector<Depth>& depths, uint32_t start) {
  std::vector<uint32_t> path;
  for (uint32_t v = start; v != kNoNode && v < depths.size(); v = depths[v].next) {
    path.push_back(v);
    if (path.size() > depths.size()) break;  // cannot happen on a DAG; be safe
  }
  return path;
}

Cycle find_cycle(const CallGraph& graph, const Components& components, uint32_t node) {
  Cycle cycle;
  if (node >= graph.nodes.size() || !components.recursive[components.of_node[node]]) return cycle;
  const uint32_t comp = components.of_node[node];
  const Adjacency adj = adjacency(graph);
  // Breadth-first search inside the component for the shortest way back.
  std::vector<uint32_t> parent(graph.nodes.size(), kNoNode);
  std::vector<bool> parent_tail(graph.nodes.size(), false);
  std::deque<uint32_t> queue{node};
  bool found = false;
  uint32_t last = kNoNode;
  bool last_tail = false;
  while (!queue.empty() && !found) {
    const uint32_t v = queue.front();
    queue.pop_front();
    for (uint32_t e = adj.begin[v]; e < adj.begin[v + 1]; ++e) {
      const uint32_t w = adj.edges[e].to;
      if (components.of_node[w] != comp) continue;
      if (w == node) {
        found = true;
        last = v;
        last_tail = adj.edges[e].tail;
        break;
      }
      if (parent[w] == kNoNode) {
        parent[w] = v;
        parent_tail[w] = adj.edges[e].tail;
        queue.push_back(w);
      }
    }
  }
  if (!found) return cycle;
  // Walk back from `last` to `node`; a tail edge a->b means a's frame is gone
  // by the time b runs, so a adds nothing to the trip.
  std::vector<std::pair<uint32_t, bool>> rev;  // node, its outgoing edge is a tail call
  rev.push_back({last, last_tail});
  for (uint32_t v = last; v != node;) {
    const uint32_t p = parent[v];
    rev.push_back({p, parent_tail[v]});
    v = p;
  }
  std::reverse(rev.begin(), rev.end());
  for (auto [v, tail] : rev) {
    cycle.nodes.push_back(v);
    if (!tail) cycle.bytes_per_trip += graph.nodes[v].frame_bytes;
  }
  return cycle;
}

}  // namespace callscope::stack
