// SCCs and worst-case depths on hand-built graphs.
#include "stack/call_graph.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace callscope::stack {
namespace {

CallGraph make_graph(std::vector<uint32_t> frames, std::vector<GraphEdge> edges) {
  CallGraph g;
  for (uint32_t f : frames) {
    GraphNode n;
    n.frame_bytes = f;
    g.nodes.push_back(n);
  }
  g.edges = std::move(edges);
  return g;
}

TEST(stack_call_graph, ChainSumsFrames) {
  // 0 -> 1 -> 2, 0 -> 3
  CallGraph g = make_graph({48, 1040, 8, 200}, {{0, 1}, {1, 2}, {0, 3}});
  const Components c = strongly_connected_components(g);
  EXPECT_EQ(c.count(), 4u);
  for (bool r : c.recursive) EXPECT_FALSE(r);
  const auto d = worst_depths(g, c);
  EXPECT_EQ(d[0].bytes, 48u + 1040 + 8);
  EXPECT_EQ(deepest_path(d, 0), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(d[3].bytes, 200u);
  EXPECT_FALSE(d[0].unbounded);
}

TEST(stack_call_graph, TailCallReplacesCallerFrame) {
  // 0 calls 1; 1 tail-calls 2 (1's frame is gone when 2 runs).
  CallGraph g = make_graph({16, 64, 100}, {{0, 1, false}, {1, 2, true}});
  const auto d = worst_depths(g, strongly_connected_components(g));
  EXPECT_EQ(d[1].bytes, 100u);
  EXPECT_TRUE(d[1].next_is_tail);
  EXPECT_EQ(d[0].bytes, 16u + 100);
  // A tail callee smaller than the caller's own frame: the frame wins.
  CallGraph h = make_graph({64, 8}, {{0, 1, true}});
  EXPECT_EQ(worst_depths(h, strongly_connected_components(h))[0].bytes, 64u);
}

TEST(stack_call_graph, SelfRecursionIsUnboundedAndNamed) {
  // 0 -> 1, 1 -> 1, 1 -> 2
  CallGraph g = make_graph({32, 64, 8}, {{0, 1}, {1, 1}, {1, 2}});
  const Components c = strongly_connected_components(g);
  EXPECT_TRUE(c.recursive[c.of_node[1]]);
  EXPECT_FALSE(c.recursive[c.of_node[0]]);
  const auto d = worst_depths(g, c);
  EXPECT_TRUE(d[0].unbounded);
  EXPECT_EQ(d[0].recursion, 1u);
  EXPECT_EQ(d[0].bytes, 32u + 64 + 8);  // each cycle member once
  const Cycle cy = find_cycle(g, c, 1);
  EXPECT_EQ(cy.nodes, (std::vector<uint32_t>{1}));
  EXPECT_EQ(cy.bytes_per_trip, 64u);
  EXPECT_FALSE(d[2].unbounded);
}

TEST(stack_call_graph, MutualRecursionFindsTheCycle) {
  // 0 -> 1 -> 2 -> 3 -> 1 (cycle 1,2,3), 3 -> 4
  CallGraph g = make_graph({16, 32, 48, 64, 1000},
                           {{0, 1}, {1, 2}, {2, 3}, {3, 1}, {3, 4}});
  const Components c = strongly_connected_components(g);
  EXPECT_EQ(c.of_node[1], c.of_node[2]);
  EXPECT_EQ(c.of_node[2], c.of_node[3]);
  EXPECT_NE(c.of_node[0], c.of_node[1]);
  EXPECT_TRUE(c.recursive[c.of_node[1]]);
  // Reverse topological numbering: callees get smaller ids.
  EXPECT_LT(c.of_node[4], c.of_node[3]);
  EXPECT_LT(c.of_node[1], c.of_node[0]);
  const Cycle cy = find_cycle(g, c, 2);
  EXPECT_EQ(cy.nodes, (std::vector<uint32_t>{2, 3, 1}));
  EXPECT_EQ(cy.bytes_per_trip, 32u + 48 + 64);
  const auto d = worst_depths(g, c);
  EXPECT_TRUE(d[0].unbounded);
  EXPECT_EQ(d[3].bytes, 64u + 1000);
  EXPECT_EQ(d[0].bytes, 16u + 32);  // 1's exits: none outside the cycle
}

TEST(stack_call_graph, TailOnlyCycleCostsNothingPerTrip) {
  CallGraph g = make_graph({8, 8}, {{0, 1, true}, {1, 0, true}});
  const Components c = strongly_connected_components(g);
  EXPECT_EQ(find_cycle(g, c, 0).bytes_per_trip, 0u);
}

TEST(stack_call_graph, FlagsPropagateFromAnyCallee) {
  CallGraph g = make_graph({16, 8, 8, 500}, {{0, 1}, {0, 2}, {0, 3}});
  g.nodes[1].unknown_calls = true;
  g.nodes[2].dynamic = true;
  const auto d = worst_depths(g, strongly_connected_components(g));
  EXPECT_TRUE(d[0].unknown);
  EXPECT_TRUE(d[0].dynamic);
  EXPECT_FALSE(d[0].external);
  EXPECT_EQ(d[0].next, 3u);
}

TEST(stack_call_graph, DeepChainDoesNotOverflow) {
  // The DFS is iterative: a 200000-deep chain must not blow the C++ stack.
  const uint32_t n = 200000;
  CallGraph g;
  g.nodes.resize(n);
  for (uint32_t i = 0; i + 1 < n; ++i) g.edges.push_back({i, i + 1, false});
  const auto d = worst_depths(g, strongly_connected_components(g));
  EXPECT_EQ(d[0].bytes, uint64_t{8} * n);
}

}  // namespace
}  // namespace callscope::stack
