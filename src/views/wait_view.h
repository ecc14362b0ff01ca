// `report --wait`: where the threads waited and why -- their time off the
// CPU (analysis::build_wait_profile) by the function they left the CPU in
// and the reason ("[futex]", "[runnable]"), largest first, as text, CSV or
// JSON. The call paths are `report --wait --tree` and `flame --wait`.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>

#include "analysis/report_model.h"
#include "common/result.h"
#include "views/profile_view.h"

namespace callscope::views {

Status print_wait_table(const format::TraceReader& trace, const analysis::Profile& waits, const ReportOptions& o,
                        FILE* out);
// `report --faults`: the page faults (analysis::build_fault_profile) by the
// function that took them -- the instruction's function, or the innermost
// traced one -- and their kind, most first.
Status print_fault_table(const analysis::Profile& faults, const ReportOptions& o, FILE* out);
// The block I/O requests (analysis::build_io_profile) by the function that
// began them and their kind and device: how many, and their latency.
Status print_io_table(const format::TraceReader& trace, const analysis::Profile& io, const ReportOptions& o,
                      FILE* out);
// The `limit` longest waits by thread, call path and reason (the html
// page's summary): [{"thread", "path": [names, outermost first], "reason",
// "wait_ns", "count", "max_ns"}], longest first.
nlohmann::json biggest_waits(const format::TraceReader& trace, const analysis::Profile& waits, size_t limit);

}  // namespace callscope::views
