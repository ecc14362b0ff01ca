// `report --samples`: where the threads ran, from their CPU samples
// (analysis::build_sample_profile): per function the samples taken in it
// (SELF) and under it (TOTAL, each sample counted once per function however
// often the function is on its path), with the CPU time they stand for,
// most first, as text, CSV or JSON. The call paths are `report --samples
// --tree` and `flame --samples`.
#pragma once

#include <cstdio>

#include "analysis/report_model.h"
#include "common/result.h"
#include "views/profile_view.h"

namespace callscope::views {

Status print_sample_table(const format::TraceReader& trace, const analysis::Profile& samples, const ReportOptions& o,
                          FILE* out);

}  // namespace callscope::views
