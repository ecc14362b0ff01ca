// `report --diff A B`: what changed between two snapshots, or two traces,
// function by function. Profiles are compared in nanoseconds (two traces
// may tick at different rates) and by (name, module).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/report_model.h"

namespace callscope::analysis {

struct FlatNs {
  uint64_t calls = 0;
  double total_ns = 0;  // each outermost activation once, as in the flat profile
  double self_ns = 0;
};

struct DiffRow {
  std::string name, module;
  FlatNs a, b;  // zero where the function is absent
  double delta_total() const { return b.total_ns - a.total_ns; }
};

// The flat profile of every thread of `p` merged, in ns.
struct NamedFlat {
  std::string name, module;
  FlatNs v;
};
std::vector<NamedFlat> flat_ns(const Profile& p, double ns_per_tick);

// One row per function of either side, the biggest change of total time
// first (ties: by name).
std::vector<DiffRow> diff_flat(const std::vector<NamedFlat>& a, const std::vector<NamedFlat>& b);

}  // namespace callscope::analysis
