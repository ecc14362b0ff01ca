// Call-tree storage, children lists and merging; the per-event code is inline
// in call_tree.h.
#include "analysis/call_tree.h"

namespace callscope::analysis {

CallTree::CallTree() {
  nodes_.push_back(CallNode{});
  hints_.push_back(Hint{});
}

uint32_t CallTree::add(uint32_t parent, uint64_t key) {
  const auto id = static_cast<uint32_t>(nodes_.size());
  CallNode n;
  n.parent = parent;
  n.depth = nodes_[parent].depth + 1;
  n.key = key;
  nodes_.push_back(n);
  hints_.push_back(Hint{});
  index_.insert(parent, key, id);
  return id;
}

uint64_t CallTree::total() const {
  uint64_t t = 0;
  for (size_t i = 1; i < nodes_.size(); ++i)
    if (nodes_[i].parent == kRootNode) t += nodes_[i].stats.total;
  return t;
}

CallTree::Children CallTree::children() const {
  Children c;
  c.offsets.assign(nodes_.size() + 1, 0);
  for (size_t i = 1; i < nodes_.size(); ++i) ++c.offsets[nodes_[i].parent + 1];
  for (size_t i = 1; i < c.offsets.size(); ++i) c.offsets[i] += c.offsets[i - 1];
  c.ids.resize(nodes_.size() > 0 ? nodes_.size() - 1 : 0);
  std::vector<uint32_t> fill(c.offsets.begin(), c.offsets.end() - 1);
  for (size_t i = 1; i < nodes_.size(); ++i) c.ids[fill[nodes_[i].parent]++] = static_cast<uint32_t>(i);
  return c;
}

void merge_tree(CallTree& dst, const CallTree& src, const std::function<uint64_t(uint64_t)>& map) {
  std::vector<uint32_t> to(src.size(), kRootNode);
  for (size_t i = 1; i < src.size(); ++i) {
    const CallNode& n = src.node(static_cast<uint32_t>(i));
    to[i] = dst.child(to[n.parent], map(n.key));  // parent ids are smaller: already mapped
    dst.node(to[i]).stats.merge(n.stats);
  }
}

}  // namespace callscope::analysis
