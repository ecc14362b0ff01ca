// `callscope report --stack`: each thread's peak stack depth with the call
// path at the peak, and for each function the deepest stack seen below it.
#pragma once

#include <cstdio>

#include "analysis/stack_depth.h"
#include "common/output_format.h"
#include "symbolize/symbolizer.h"

namespace callscope::views {

// Functions merged across threads by name, deepest first; `top` rows (0: all).
void print_stack_depths(const format::TraceReader& trace, const analysis::StackDepths& depths,
                        symbolize::Symbolizer& sym, OutputFormat format, size_t top, FILE* out);

}  // namespace callscope::views
