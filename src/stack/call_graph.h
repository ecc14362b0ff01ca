// Worst-case stack depth on a call graph: strongly connected components
// (recursion) and the deepest path from each function. Pure functions on a
// plain graph, with no ELF in sight, so they can be tested on hand-built
// graphs.
//
// Units: every figure is bytes of stack below the caller's stack pointer at
// the call, i.e. a function's frame counts its own return address. The depth
// of a path is the sum of its frames, except across a tail call, where the
// caller's frame is gone before the callee's is built.
#pragma once

#include <cstdint>
#include <vector>

namespace callscope::stack {

constexpr uint32_t kNoNode = UINT32_MAX;

struct GraphNode {
  uint32_t frame_bytes = 8;     // includes the return address
  bool dynamic = false;         // frame grows at run time (alloca, VLA)
  bool unknown_calls = false;   // calls the graph cannot follow (function pointers)
  bool external_calls = false;  // calls into other modules (not counted)
};

struct GraphEdge {
  uint32_t from = 0;
  uint32_t to = 0;
  bool tail = false;  // a tail call: `from`'s frame is popped before `to` runs
};

struct CallGraph {
  std::vector<GraphNode> nodes;
  std::vector<GraphEdge> edges;
};

struct Components {
  // Component of each node. Components are numbered in reverse topological
  // order: every edge goes from a component to one with a smaller or equal id.
  std::vector<uint32_t> of_node;
  // Per component: it holds a cycle (several nodes, or a node calling itself).
  std::vector<bool> recursive;
  uint32_t count() const { return static_cast<uint32_t>(recursive.size()); }
};

Components strongly_connected_components(const CallGraph& graph);

// The deepest path starting at one node, and what the figure leaves out.
struct Depth {
  uint64_t bytes = 0;       // sum along the path given by `next`
  uint32_t next = kNoNode;  // next function on that path
  bool next_is_tail = false;
  bool unbounded = false;   // a recursion is reachable: the true worst case has no bound
  bool dynamic = false;     // a dynamic frame is reachable: bytes count only its static part
  bool unknown = false;     // an unresolved indirect call is reachable
  bool external = false;    // a call into another module is reachable (not counted)
  uint32_t recursion = kNoNode;  // a node of a reachable recursion (see find_cycle)
};

// Deepest path from every node, counting each function of a recursion once
// (the path leaves a recursive component by its deepest exit). Where a
// recursion is reachable, `unbounded` is set and `recursion` names one node
// of it, which need not be on the path.
std::vector<Depth> worst_depths(const CallGraph& graph, const Components& components);

// The nodes of the path from `start` following Depth::next.
std::vector<uint32_t> deepest_path(const std::vector<Depth>& depths, uint32_t start);

// A shortest cycle through `node` inside its component: node, ..., (back to
// node, not repeated). Empty when the node is not recursive.
struct Cycle {
  std::vector<uint32_t> nodes;
  uint64_t bytes_per_trip = 0;  // stack added by one more trip around the cycle
};
Cycle find_cycle(const CallGraph& graph, const Components& components, uint32_t node);

}  // namespace callscope::stack
