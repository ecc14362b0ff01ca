// Views of the stack analysis: text (one line per function), CSV and JSON.
// The CLI picks one; the wording of what a figure includes lives here so that
// every view says the same thing.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/output_format.h"
#include "common/result.h"
#include "stack/limits.h"
#include "stack/stack.h"

namespace callscope::stack {

// "unbounded,dynamic,unknown,external": what a worst case leaves out, as
// every view writes it ("" for a complete bound without external calls).
std::string flags_of(const Depth& depth);

// Frame sizes of `selected` functions, largest first, at most `limit` (0: all).
std::string render_frames(const StackModel& model, std::vector<uint32_t> selected, size_t limit,
                          OutputFormat format);

// Worst-case depth from each of `entries`, deepest first, at most `limit`,
// with the verdict of --limit for the entries that have one. Text and CSV
// are written to `sink` as they are made when one is given (what is
// returned is the rest); JSON is returned whole.
std::string render_worst(const StackModel& model, const WorstCase& worst,
                         std::vector<uint32_t> entries, size_t limit, OutputFormat format,
                         const std::vector<LimitVerdict>& verdicts = {}, std::FILE* sink = nullptr);

// The indirect call and jump sites left open (not closed by an edges file),
// as lines to turn into an edges file ("caller -> ?").
std::string render_unresolved(const StackModel& model, OutputFormat format);

}  // namespace callscope::stack
