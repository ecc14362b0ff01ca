// `callscope report --diff A B`: one row per function, A's and B's calls,
// total and self time and the change, as text, CSV (ns) or JSON (ns).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "analysis/diff.h"
#include "common/output_format.h"

namespace callscope::views {

struct DiffOptions {
  OutputFormat format = OutputFormat::kText;
  size_t top = 0;         // rows; 0 = all
  size_t name_width = 0;  // text: names cut to this width (0 = whole)
  bool changed_only = true;  // leave out functions whose calls and times did not change
};

void print_diff(const std::vector<analysis::DiffRow>& rows, const std::string& label_a, const std::string& label_b,
                const DiffOptions& o, FILE* out);

}  // namespace callscope::views
