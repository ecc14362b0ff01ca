// What `callscope report` derives from a call tree keyed by function: the
// flat profile, the callers and callees of a function, the nodes a tree view
// shows, and the sort orders. Pure functions over CallTree (ticks in, ticks
// out), so each is tested on trees built in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/call_tree.h"
#include "analysis/stats.h"

namespace callscope::analysis {

// The key of a caller row for calls made from outside any traced function (a
// thread's outermost frames).
inline constexpr uint64_t kNoCaller = ~uint64_t{0};

struct ProfileRow {
  uint64_t key = 0;
  Stats stats;
};

// One row per key. `total` counts each outermost activation of a function on
// the stack once (time in f called from f is not added again); calls, self,
// min, max and first count every call. Rows are in no particular order.
std::vector<ProfileRow> flat_profile(const CallTree& tree);

// The callers of `key` (the time each spends in it: the totals of `key`'s
// nodes grouped by their parent's key, kNoCaller for outermost frames) and its
// callees (the time `key` spends in each: the totals of the children of its
// nodes, grouped by key). When `key` is recursive each edge counts on its own,
// so a caller's time may include that of nested calls counted under another.
struct Relatives {
  std::vector<ProfileRow> callers, callees;
};
Relatives relatives(const CallTree& tree, uint64_t key);

// Which nodes a tree view shows: those at depth <= max_depth (0: no limit)
// whose total is at least min_total ticks, whose parent is shown, and -- when
// `wanted` is given -- that are on a path through a node it accepts (the
// node, its ancestors, its descendants).
struct TreeFilter {
  uint32_t max_depth = 0;
  uint64_t min_total = 0;
  std::function<bool(uint64_t key)> wanted;
};
std::vector<bool> visible_nodes(const CallTree& tree, const TreeFilter& filter);

enum class SortKey { kCalls, kTotal, kSelf, kAvg, kSelfAvg, kMin, kMax, kFirst, kName };
std::optional<SortKey> parse_sort_key(std::string_view name);
// "calls, total, self, avg, self_avg, min, max, first, name"
std::string sort_key_names();
// True when `a` goes before `b`: numbers biggest first, names A to Z; ties
// are broken by name so that output does not depend on hash order.
bool sorts_before(SortKey k, const Stats& a, std::string_view a_name, const Stats& b, std::string_view b_name);

}  // namespace callscope::analysis
