#include "analysis/diff.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/profile.h"

namespace callscope::analysis {

std::vector<NamedFlat> flat_ns(const Profile& p, double ns_per_tick) {
  const CallTree merged = merged_tree(p);
  std::vector<NamedFlat> out;
  for (const ProfileRow& r : flat_profile(merged)) {
    const FunctionInfo& f = p.functions[r.key];
    out.push_back({f.name, f.module,
                   {r.stats.calls, static_cast<double>(r.stats.total) * ns_per_tick,
                    static_cast<double>(r.stats.self) * ns_per_tick}});
  }
  return out;
}

std::vector<DiffRow> diff_flat(const std::vector<NamedFlat>& a, const std::vector<NamedFlat>& b) {
  std::map<std::pair<std::string, std::string>, DiffRow> rows;
  for (const NamedFlat& f : a) {
    DiffRow& r = rows[{f.name, f.module}];
    r.name = f.name;
    r.module = f.module;
    r.a = f.v;
  }
  for (const NamedFlat& f : b) {
    DiffRow& r = rows[{f.name, f.module}];
    r.name = f.name;
    r.module = f.module;
    r.b = f.v;
  }
  std::vector<DiffRow> out;
  for (auto& [key, r] : rows) out.push_back(std::move(r));
  std::stable_sort(out.begin(), out.end(), [](const DiffRow& x, const DiffRow& y) {
    const double dx = std::fabs(x.delta_total()), dy = std::fabs(y.delta_total());
    if (dx != dy) return dx > dy;
    return x.name < y.name;
  });
  return out;
}

}  // namespace callscope::analysis
