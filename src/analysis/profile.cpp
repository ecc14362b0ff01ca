// Flat profile, callers/callees, tree filtering and sort orders over a keyed
// call tree.
#include "analysis/profile.h"

#include <array>
#include <unordered_map>

namespace callscope::analysis {
namespace {

void add_to(std::unordered_map<uint64_t, size_t>& where, std::vector<ProfileRow>& rows, uint64_t key,
            const Stats& s) {
  auto [it, fresh] = where.try_emplace(key, rows.size());
  if (fresh) rows.push_back(ProfileRow{key, Stats{}});
  rows[it->second].stats.merge(s);
}

struct SortKeyName {
  SortKey key;
  const char* name;
};
constexpr std::array<SortKeyName, 9> kSortKeys = {{{SortKey::kCalls, "calls"},
                                                   {SortKey::kTotal, "total"},
                                                   {SortKey::kSelf, "self"},
                                                   {SortKey::kAvg, "avg"},
                                                   {SortKey::kSelfAvg, "self_avg"},
                                                   {SortKey::kMin, "min"},
                                                   {SortKey::kMax, "max"},
                                                   {SortKey::kFirst, "first"},
                                                   {SortKey::kName, "name"}}};

double value(SortKey k, const Stats& s) {
  switch (k) {
    case SortKey::kCalls: return static_cast<double>(s.calls);
    case SortKey::kTotal: return static_cast<double>(s.total);
    case SortKey::kSelf: return static_cast<double>(s.self);
    case SortKey::kAvg: return s.avg();
    case SortKey::kSelfAvg: return s.self_avg();
    case SortKey::kMin: return s.calls ? static_cast<double>(s.min) : -1.0;
    case SortKey::kMax: return static_cast<double>(s.max);
    case SortKey::kFirst: return s.calls ? static_cast<double>(s.first) : -1.0;
    case SortKey::kName: return 0;
  }
  return 0;
}

}  // namespace

std::vector<ProfileRow> flat_profile(const CallTree& tree) {
  std::vector<ProfileRow> rows;
  std::unordered_map<uint64_t, size_t> where;
  // Depth-first walk keeping, per key, how many frames of it are on the path:
  // a node adds its total only when it is the outermost one.
  const CallTree::Children kids = tree.children();
  std::unordered_map<uint64_t, uint32_t> active;
  struct Step {
    uint32_t node;
    bool leaving;
  };
  std::vector<Step> todo;
  for (const uint32_t* c = kids.begin(kRootNode); c != kids.end(kRootNode); ++c) todo.push_back({*c, false});
  while (!todo.empty()) {
    const Step s = todo.back();
    todo.pop_back();
    const CallNode& n = tree.node(s.node);
    if (s.leaving) {
      --active[n.key];
      continue;
    }
    Stats st = n.stats;
    uint32_t& a = active[n.key];
    if (a > 0) st.total = st.wait = 0;
    ++a;
    add_to(where, rows, n.key, st);
    todo.push_back({s.node, true});
    for (const uint32_t* c = kids.begin(s.node); c != kids.end(s.node); ++c) todo.push_back({*c, false});
  }
  return rows;
}

Relatives relatives(const CallTree& tree, uint64_t key) {
  Relatives r;
  std::unordered_map<uint64_t, size_t> callers, callees;
  for (size_t i = 1; i < tree.size(); ++i) {
    const CallNode& n = tree.node(static_cast<uint32_t>(i));
    if (n.key == key) {
      const uint64_t caller = n.parent == kRootNode ? kNoCaller : tree.node(n.parent).key;
      add_to(callers, r.callers, caller, n.stats);
    }
    if (n.parent != kRootNode && tree.node(n.parent).key == key) add_to(callees, r.callees, n.key, n.stats);
  }
  return r;
}

std::vector<bool> visible_nodes(const CallTree& tree, const TreeFilter& f) {
  const size_t n = tree.size();
  std::vector<bool> show(n, false);
  // Paths through a wanted node: the node and below (ids ascend from parent to
  // child), then its ancestors (walking ids down).
  std::vector<bool> on_path(n, !f.wanted);
  if (f.wanted) {
    std::vector<bool> below(n, false);  // in the subtree of a wanted node
    for (size_t i = 1; i < n; ++i) {
      const CallNode& c = tree.node(static_cast<uint32_t>(i));
      below[i] = f.wanted(c.key) || (c.parent != kRootNode && below[c.parent]);
      on_path[i] = below[i];
    }
    for (size_t i = n - 1; i >= 1; --i)
      if (on_path[i] && tree.node(static_cast<uint32_t>(i)).parent != kRootNode)
        on_path[tree.node(static_cast<uint32_t>(i)).parent] = true;
  }
  show[kRootNode] = true;
  for (size_t i = 1; i < n; ++i) {
    const CallNode& c = tree.node(static_cast<uint32_t>(i));
    show[i] = show[c.parent] && on_path[i] && (f.max_depth == 0 || c.depth <= f.max_depth) &&
              c.stats.total >= f.min_total;
  }
  return show;
}

std::optional<SortKey> parse_sort_key(std::string_view name) {
  for (const SortKeyName& k : kSortKeys)
    if (name == k.name) return k.key;
  return std::nullopt;
}

std::string sort_key_names() {
  std::string s;
  for (const SortKeyName& k : kSortKeys) s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

bool sorts_before(SortKey k, const Stats& a, std::string_view a_name, const Stats& b, std::string_view b_name) {
  if (k != SortKey::kName) {
    const double va = value(k, a), vb = value(k, b);
    if (va != vb) return va > vb;
  }
  return a_name < b_name;
}

}  // namespace callscope::analysis
