// Views of the stack analysis: text (one line per function), CSV and JSON.
// The CLI picks one; the wording of what a figure includes lives here so that
// every view says the same thing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/output_format.h"
#include "common/result.h"
#include "stack/stack.h"

namespace callscope::stack {




// Frame sizes of `selected` functions, largest first, at most `limit` (0: all).
std::string render_frames(const StackModel& model, std::vector<uint32_t> selected, size_t limit,
                          OutputFormat format);

// Worst-case depth from each of `entries`, deepest first, at most `limit`.
std::string render_worst(const StackModel& model, const WorstCase& worst,
                         std::vector<uint32_t> entries, size_t limit, OutputFormat format);

}  // namespace callscope::stack
