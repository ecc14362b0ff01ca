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
  EXPECT_EQ(deepest_path(c, d, 0), (std::vector<uint32_t>{0, 1, 2}));
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
  // Every member once, then the deepest exit of any member (3 -> 4), for
  // every member, whichever it is entered by.
  for (uint32_t v : {1u, 2u, 3u}) EXPECT_EQ(d[v].bytes, 32u + 48 + 64 + 1000) << v;
  EXPECT_EQ(d[0].bytes, 16u + 32 + 48 + 64 + 1000);
  EXPECT_EQ(d[1].exit_from, 3u);
  EXPECT_EQ(d[1].next, 4u);
  // The path: entered at 1, the other members, the exiting one, then 4.
  const auto path = worst_path(c, d, 0);
  ASSERT_EQ(path.size(), 5u);
  EXPECT_EQ(path[1].node, 1u);
  EXPECT_EQ(path[3].node, 3u);
  EXPECT_TRUE(path[3].cycle_exit);
  EXPECT_EQ(path[4].node, 4u);
  EXPECT_FALSE(path[4].in_cycle);
}

// The repro of issue 16: main -> a, a <-> b, b -> big. The run measured
// main + a + b + big; the figure of main, a and b must cover it, with the
// flags of b's other callees.
TEST(stack_call_graph, RecursionCountsEveryMembersExits) {
  //                     main  a   b   big   ext
  CallGraph g = make_graph({32, 48, 48, 4160, 16},
                           {{0, 1}, {1, 2}, {2, 1}, {2, 3}, {2, 4}});
  g.nodes[4].external_calls = true;
  const Components c = strongly_connected_components(g);
  const auto d = worst_depths(g, c);
  EXPECT_EQ(d[0].bytes, 32u + 48 + 48 + 4160);
  EXPECT_EQ(d[1].bytes, 48u + 48 + 4160);  // a's own exits: none; b's count
  EXPECT_TRUE(d[1].external);
  EXPECT_TRUE(d[0].external);
  EXPECT_TRUE(d[0].unbounded);
}

TEST(stack_call_graph, TailExitFromARecursionPopsOnlyThatMember) {
  // 0 <-> 1, 1 tail-calls 2: 0's frame stays, 1's is gone.
  CallGraph g = make_graph({40, 24, 100}, {{0, 1}, {1, 0}, {1, 2, true}});
  const auto d = worst_depths(g, strongly_connected_components(g));
  EXPECT_EQ(d[0].bytes, 40u + 100);
  EXPECT_TRUE(d[0].next_is_tail);
}

// Adding an edge never lowers a figure, and each path adds up to its figure:
// checked on random graphs, each grown edge by edge.
TEST(stack_call_graph, AddingEdgesNeverLowersAFigure) {
  uint64_t seed = 88172645463325252ull;
  auto next = [&seed] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  for (int round = 0; round < 200; ++round) {
    const uint32_t n = 2 + next() % 12;
    std::vector<uint32_t> frames;
    for (uint32_t i = 0; i < n; ++i) frames.push_back(8 * (1 + next() % 64));
    CallGraph g = make_graph(frames, {});
    std::vector<Depth> before = worst_depths(g, strongly_connected_components(g));
    for (int k = 0; k < 20; ++k) {
      g.edges.push_back({static_cast<uint32_t>(next() % n), static_cast<uint32_t>(next() % n),
                         next() % 4 == 0});
      const Components c = strongly_connected_components(g);
      const std::vector<Depth> after = worst_depths(g, c);
      for (uint32_t v = 0; v < n; ++v) {
        ASSERT_GE(after[v].bytes, before[v].bytes) << "round " << round << " node " << v;
        uint64_t sum = 0;
        for (const PathStep& s : worst_path(c, after, v)) {
          if (!s.tail_to_next) sum += g.nodes[s.node].frame_bytes;
        }
        // A tail call as the last step is impossible; the path adds up.
        ASSERT_EQ(sum, after[v].bytes) << "round " << round << " node " << v;
      }
      before = after;
    }
  }
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
