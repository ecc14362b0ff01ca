// `callscope report`: the flat profile, the call trees and the callers and
// callees of functions, as aligned text (a unit chosen per value), CSV (one
// header row, whole nanoseconds) or JSON (whole nanoseconds).
#pragma once

#include "views/format_util.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/profile.h"
#include "analysis/report_model.h"
#include "common/result.h"
#include "format/trace_reader.h"

namespace callscope::views {


struct ReportOptions {
  analysis::SortKey sort = analysis::SortKey::kTotal;
  size_t top = 0;             // rows per table (flat, callers, callees); 0 = all
  std::vector<std::string> function_globs;  // flat and tree: only functions whose name matches one (none = all)
  std::vector<std::string> module_globs;    // flat and tree: only functions of a module matching one (none = all)
  bool per_thread = false;    // flat, callers/callees: one table per thread instead of merged
  bool merge = false;         // tree: one tree merged across threads instead of one per thread
  uint32_t max_depth = 0;     // tree: deepest level shown, 0 = all
  double threshold_pct = 0;   // tree: hide nodes whose total is below this % of the tree's total
  size_t name_width = 0;      // text: function names longer than this are cut with "..." (0 = whole
                              // names); the tree's indentation is not counted
  OutputFormat format = OutputFormat::kText;
  // tree: the nodes are counted, not timed (page faults): text and CSV give
  // their calls under this name ("FAULTS") and no times.
  std::string count_label;
};

// When threads waited for the recorder (trace 1.8): how long in all, and
// that the time is out of the frames it happened in; "" otherwise.
std::string wait_warning(const format::TraceReader& trace, const analysis::Profile& p);

// Each fails (nothing printed) when a glob matches no function.
Status print_flat_profile(const format::TraceReader& trace, const analysis::Profile& p, const ReportOptions& o,
                          FILE* out);
Status print_call_trees(const format::TraceReader& trace, const analysis::Profile& p, const ReportOptions& o,
                        FILE* out);
// Callers of the functions matching `callers_glob` and callees of those
// matching `callees_glob` (either may be empty, not both).
Status print_relatives(const format::TraceReader& trace, const analysis::Profile& p, const ReportOptions& o,
                       const std::string& callers_glob, const std::string& callees_glob, FILE* out);

}  // namespace callscope::views
