// The call paths the aggregated pictures show (flame graphs, folded stacks,
// pprof, speedscope's sampled profiles): the call trees of a Profile, per
// thread under a frame of its own or merged by function, with the -F/-m
// filter of `report --tree` applied (only the paths through a wanted
// function) and siblings in name order, so that the same trace always gives
// the same bytes.
//
// Each node keeps the stats measured at it, and two weights a picture can
// use, counted so that a parent's weight is its own plus its children's:
//  - own_ticks: the node's self time when it is a wanted function or below
//    one; 0 for the ancestors kept only as the path to a wanted function
//    (their time elsewhere is not "through" it). Unfiltered, every node's.
//  - ticks, calls: own_ticks, or the calls of such a node, plus those of its
//    children: what a flame graph's widths are.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analysis/report_model.h"
#include "format/trace_reader.h"

namespace callscope::exporter {

struct StackNode {
  uint32_t parent = 0;
  uint32_t depth = 0;    // 0: the root; a thread's frame (unmerged) is 1
  int64_t function = -1; // index into Profile::functions; -1 for the root and thread frames
  uint32_t thread = 0;   // the thread frame's thread (index in TraceReader::threads())
  analysis::Stats stats; // as measured; a thread frame has the sum of its outermost frames
  bool counted = false;  // a wanted function or below one (own_ticks counts)
  uint64_t own_ticks = 0;
  uint64_t ticks = 0;    // inclusive weights (see above)
  uint64_t calls = 0;
};

struct StackTree {
  std::vector<StackNode> nodes;                 // node 0 is the root ("all")
  std::vector<std::vector<uint32_t>> children;  // per node, in name order
  std::vector<std::string> labels;              // per node: the frame's name as shown
  const analysis::Profile* profile = nullptr;
  bool per_thread = false;
};

struct StackOptions {
  bool merge = false;  // one tree for all threads, else a frame per thread
  // Wanted functions (by index into Profile::functions); null: every one.
  std::function<bool(uint64_t function)> wanted;
};

// "[thread 2: worker]": a thread's frame, "[thread 0]" when unnamed.
std::string thread_frame_label(const format::TraceReader& trace, uint32_t thread);

StackTree build_stacks(const format::TraceReader& trace, const analysis::Profile& p, const StackOptions& o);

// Calls f(node id, path of node ids from the first level below the root to
// the node) for every node but the root, parents before children, siblings
// in order.
void walk_stacks(const StackTree& t, const std::function<void(uint32_t, const std::vector<uint32_t>&)>& f);

// Deep stacks, bounded. The pictures that write a whole path per node
// (folded stacks, pprof samples) show at most kOuterFrames + 1 +
// kInnerFrames frames of it: its outermost ones, one "[frames elided]",
// its innermost ones -- as perf caps its stacks (127 frames by default).
// Unbounded, a 100,000-deep recursion made 10 GB of folded lines and
// minutes of pprof: the work was quadratic in the depth. The stacks of such
// a recursion's deep frames then read alike, and the pictures merge them.
inline constexpr size_t kOuterFrames = 64;
inline constexpr size_t kInnerFrames = 63;
inline constexpr const char* kElidedFramesLabel = "[frames elided]";

// The frames of `path` to show, outermost first, `elided` standing for the
// frames left out of a deeper one.
template <class T>
std::vector<T> shown_frames(const std::vector<T>& path, const T& elided) {
  if (path.size() <= kOuterFrames + 1 + kInnerFrames) return path;
  std::vector<T> out(path.begin(), path.begin() + kOuterFrames);
  out.push_back(elided);
  out.insert(out.end(), path.end() - kInnerFrames, path.end());
  return out;
}

}  // namespace callscope::exporter
