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
#include <unordered_map>
#include <vector>

namespace callscope::stack {

constexpr uint32_t kNoNode = UINT32_MAX;

struct GraphNode {
  uint32_t frame_bytes = 8;     // includes the return address
  uint32_t red_zone_bytes = 0;  // used below rsp without a call (leaf code): adds to this node only
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

// Compressed adjacency: the edges of node n are edges[begin[n] .. begin[n+1]).
// Built once per graph and shared by every pass over it.
struct Adjacency {
  std::vector<uint32_t> begin;
  std::vector<GraphEdge> edges;
};
Adjacency adjacency(const CallGraph& graph);

struct Components {
  // Component of each node. Components are numbered in reverse topological
  // order: every edge goes from a component to one with a smaller or equal id.
  std::vector<uint32_t> of_node;
  // Per component: it holds a cycle (several nodes, or a node calling itself).
  std::vector<bool> recursive;
  // The nodes of component c: members[member_begin[c] .. member_begin[c+1]),
  // in increasing node order.
  std::vector<uint32_t> member_begin;
  std::vector<uint32_t> members;
  uint32_t count() const { return static_cast<uint32_t>(recursive.size()); }
  uint32_t size_of(uint32_t c) const { return member_begin[c + 1] - member_begin[c]; }
};

Components strongly_connected_components(const CallGraph& graph, const Adjacency& adj);
Components strongly_connected_components(const CallGraph& graph);

// The deepest path starting at one node, and what the figure leaves out.
// Inside a recursion (a component with a cycle) every member gets the same
// figure: the frames of all members, each once, plus the deepest exit from
// any member; `exit_from` is the member whose call leaves the cycle for `next`.
struct Depth {
  uint64_t bytes = 0;       // sum along the path given by worst_path(), plus the last
                            // function's red zone (red_zone_bytes)
  uint32_t red_zone_bytes = 0;  // red zone counted at the end of the path
  uint32_t next = kNoNode;  // next function on that path outside this node's component
  uint32_t exit_from = kNoNode;  // in a recursion: the member calling `next`
  bool next_is_tail = false;
  bool unbounded = false;   // a recursion is reachable: the true worst case has no bound
  bool dynamic = false;     // a dynamic frame is reachable: bytes count only its static part
  bool unknown = false;     // an unresolved indirect call is reachable
  bool external = false;    // a call into another module is reachable (not counted)
  uint32_t recursion = kNoNode;  // a node of a reachable recursion (see find_cycle)
};

// Deepest path from every node. A recursion counts every member's frame once
// (one trip through the cycle, whatever its order) and leaves by the deepest
// exit of any member, with the flags of all members and all their exits: so a
// figure never drops when edges are added. Where a recursion is reachable,
// `unbounded` is set and `recursion` names one node of it, which need not be
// on the path.
std::vector<Depth> worst_depths(const CallGraph& graph, const Adjacency& adj,
                                const Components& components);
std::vector<Depth> worst_depths(const CallGraph& graph, const Components& components);

// One step of a worst path. The members of a recursion appear one after the
// other (`in_cycle`), each counted once, the exiting member last.
struct PathStep {
  uint32_t node = kNoNode;
  bool tail_to_next = false;  // this frame is gone when the next one runs
  bool in_cycle = false;
  bool cycle_exit = false;    // the last member of its recursion on the path
};
std::vector<PathStep> worst_path(const Components& components, const std::vector<Depth>& depths,
                                 uint32_t start);
// The nodes of worst_path(), for tests and simple callers.
std::vector<uint32_t> deepest_path(const Components& components, const std::vector<Depth>& depths,
                                   uint32_t start);

// A shortest cycle through `node` inside its component: node, ..., (back to
// node, not repeated). Empty when the node is not recursive.
struct Cycle {
  std::vector<uint32_t> nodes;
  uint64_t bytes_per_trip = 0;  // stack added by one more trip around the cycle
};
Cycle find_cycle(const CallGraph& graph, const Components& components, uint32_t node);

// find_cycle for many nodes of one graph: the search's scratch space is
// allocated once and each node's cycle is kept, so naming the recursion of
// every entry of a large library costs time in the cycles, not in the graph.
class CycleFinder {
 public:
  CycleFinder(const CallGraph& graph, const Adjacency& adj, const Components& components);
  const Cycle& find(uint32_t node);

 private:
  const CallGraph& graph_;
  const Adjacency& adj_;
  const Components& components_;
  std::vector<uint32_t> parent_;
  std::vector<uint8_t> parent_tail_;
  std::unordered_map<uint32_t, Cycle> cache_;
};

}  // namespace callscope::stack
