// SCCs (iterative Tarjan) and longest paths over the condensation DAG.
#include "stack/call_graph.h"

#include <algorithm>
#include <deque>

namespace callscope::stack {

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

Components strongly_connected_components(const CallGraph& graph) {
  return strongly_connected_components(graph, adjacency(graph));
}

Components strongly_connected_components(const CallGraph& graph, const Adjacency& adj) {
  const uint32_t n = static_cast<uint32_t>(graph.nodes.size());
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
  // Members of each component, by counting.
  out.member_begin.assign(out.count() + 1, 0);
  for (uint32_t v = 0; v < n; ++v) ++out.member_begin[out.of_node[v] + 1];
  for (uint32_t c = 0; c < out.count(); ++c) out.member_begin[c + 1] += out.member_begin[c];
  out.members.resize(n);
  std::vector<uint32_t> fill(out.member_begin.begin(), out.member_begin.end() - 1);
  for (uint32_t v = 0; v < n; ++v) out.members[fill[out.of_node[v]]++] = v;
  return out;
}

std::vector<Depth> worst_depths(const CallGraph& graph, const Components& components) {
  return worst_depths(graph, adjacency(graph), components);
}

std::vector<Depth> worst_depths(const CallGraph& graph, const Adjacency& adj,
                                const Components& components) {
  std::vector<Depth> depth(graph.nodes.size());
  // Components in increasing id are callees first.
  for (uint32_t comp = 0; comp < components.count(); ++comp) {
    const uint32_t* first = components.members.data() + components.member_begin[comp];
    const uint32_t* last = components.members.data() + components.member_begin[comp + 1];
    const bool recursive = components.recursive[comp];
    // Every member's frame once; a single node outside any cycle is the
    // same rule with one member.
    Depth d;
    for (const uint32_t* m = first; m != last; ++m) {
      const GraphNode& node = graph.nodes[*m];
      d.bytes += node.frame_bytes;
      d.dynamic |= node.dynamic;
      d.unknown |= node.unknown_calls;
      d.external |= node.external_calls;
    }
    const uint64_t frames = d.bytes;
    // Code that calls nothing may use the red zone below its frame: the path
    // can end there with it.
    for (const uint32_t* m = first; m != last; ++m) {
      d.red_zone_bytes = std::max(d.red_zone_bytes, graph.nodes[*m].red_zone_bytes);
    }
    d.bytes += d.red_zone_bytes;
    if (recursive) d.unbounded = true;
    for (const uint32_t* m = first; m != last; ++m) {
      const uint32_t u = *m;
      for (uint32_t e = adj.begin[u]; e < adj.begin[u + 1]; ++e) {
        const GraphEdge& edge = adj.edges[e];
        if (components.of_node[edge.to] == comp) continue;  // inside the cycle
        const Depth& c = depth[edge.to];
        d.dynamic |= c.dynamic;
        d.unknown |= c.unknown;
        d.external |= c.external;
        if (c.unbounded) {
          d.unbounded = true;
          if (!recursive && d.recursion == kNoNode) d.recursion = c.recursion;
        }
        // A tail call pops the caller's frame before the callee's is built.
        const uint64_t via = (edge.tail ? frames - graph.nodes[u].frame_bytes : frames) + c.bytes;
        if (via > d.bytes || (d.next == kNoNode && via == d.bytes)) {
          d.bytes = via;
          d.next = edge.to;
          d.exit_from = u;
          d.next_is_tail = edge.tail;
          d.red_zone_bytes = c.red_zone_bytes;
        }
      }
    }
    for (const uint32_t* m = first; m != last; ++m) {
      depth[*m] = d;
      if (recursive) depth[*m].recursion = *m;
    }
  }
  return depth;
}

std::vector<PathStep> worst_path(const Components& components, const std::vector<Depth>& depths,
                                 uint32_t start) {
  std::vector<PathStep> path;
  for (uint32_t v = start; v != kNoNode && v < depths.size(); v = depths[v].next) {
    const Depth& d = depths[v];
    const uint32_t comp = components.of_node[v];
    if (!components.recursive[comp]) {
      path.push_back({v, d.next_is_tail, false});
    } else {
      // The member we came in by, the others, then the one that leaves
      // (last, since its call is the one that goes on).
      const uint32_t exit = d.exit_from == kNoNode ? v : d.exit_from;
      if (exit != v) path.push_back({v, false, true});
      for (uint32_t k = components.member_begin[comp]; k < components.member_begin[comp + 1]; ++k) {
        const uint32_t m = components.members[k];
        if (m != v && m != exit) path.push_back({m, false, true});
      }
      path.push_back({exit, false, true});
      path.back().tail_to_next = d.next_is_tail;
      path.back().cycle_exit = true;
    }
    if (path.size() > depths.size()) break;  // cannot happen on a DAG; be safe
  }
  return path;
}

std::vector<uint32_t> deepest_path(const Components& components, const std::vector<Depth>& depths,
                                   uint32_t start) {
  std::vector<uint32_t> nodes;
  for (const PathStep& s : worst_path(components, depths, start)) nodes.push_back(s.node);
  return nodes;
}

Cycle find_cycle(const CallGraph& graph, const Components& components, uint32_t node) {
  const Adjacency adj = adjacency(graph);
  CycleFinder finder(graph, adj, components);
  return finder.find(node);
}

CycleFinder::CycleFinder(const CallGraph& graph, const Adjacency& adj, const Components& components)
    : graph_(graph), adj_(adj), components_(components),
      parent_(graph.nodes.size(), kNoNode), parent_tail_(graph.nodes.size(), 0) {}

const Cycle& CycleFinder::find(uint32_t node) {
  auto cached = cache_.find(node);
  if (cached != cache_.end()) return cached->second;
  Cycle& cycle = cache_[node];
  if (node >= graph_.nodes.size() || !components_.recursive[components_.of_node[node]]) return cycle;
  const uint32_t comp = components_.of_node[node];
  // Breadth-first search inside the component for the shortest way back;
  // parent_ is reset for the nodes touched, so a search costs its component.
  std::vector<uint32_t> touched;
  std::deque<uint32_t> queue{node};
  bool found = false;
  uint32_t last = kNoNode;
  bool last_tail = false;
  while (!queue.empty() && !found) {
    const uint32_t v = queue.front();
    queue.pop_front();
    for (uint32_t e = adj_.begin[v]; e < adj_.begin[v + 1]; ++e) {
      const uint32_t w = adj_.edges[e].to;
      if (components_.of_node[w] != comp) continue;
      if (w == node) {
        found = true;
        last = v;
        last_tail = adj_.edges[e].tail;
        break;
      }
      if (parent_[w] == kNoNode) {
        parent_[w] = v;
        parent_tail_[w] = adj_.edges[e].tail;
        touched.push_back(w);
        queue.push_back(w);
      }
    }
  }
  if (found) {
    // Walk back from `last` to `node`; a tail edge a->b means a's frame is
    // gone by the time b runs, so a adds nothing to the trip.
    std::vector<std::pair<uint32_t, bool>> rev;  // node, its outgoing edge is a tail call
    rev.push_back({last, last_tail});
    for (uint32_t v = last; v != node;) {
      const uint32_t p = parent_[v];
      rev.push_back({p, parent_tail_[v] != 0});
      v = p;
    }
    std::reverse(rev.begin(), rev.end());
    for (auto [v, tail] : rev) {
      cycle.nodes.push_back(v);
      if (!tail) cycle.bytes_per_trip += graph_.nodes[v].frame_bytes;
    }
  }
  for (uint32_t w : touched) parent_[w] = kNoNode;
  return cycle;
}

}  // namespace callscope::stack
