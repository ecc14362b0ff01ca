// `callscope report --stack`: each thread's peak stack depth with the call
// path at the peak, and for each function the deepest stack seen below it.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "analysis/stack_depth.h"
#include "common/output_format.h"
#include "symbolize/symbolizer.h"

namespace callscope::views {

// The static bound of one function (`callscope stack --worst`), set beside
// the measured figure: the bytes its worst case allows below its own frame.
struct StaticBound {
  uint64_t below_bytes = 0;  // worst case less the function's own frame
  std::string flags;         // "unbounded,unknown", or "" for a complete bound
};
// Looks up a function by module file name and ELF virtual address.
using StaticLookup = std::function<std::optional<StaticBound>(const std::string& module, uint64_t elf_addr)>;

// Functions merged across threads by name, deepest first; `top` rows (0: all).
// With `statics`, each function of an analysed module gets its static bound,
// and a measured depth above a complete bound is marked (a bug in one of
// the two).
void print_stack_depths(const format::TraceReader& trace, const analysis::StackDepths& depths,
                        symbolize::Symbolizer& sym, OutputFormat format, size_t top, FILE* out,
                        const StaticLookup* statics = nullptr);

}  // namespace callscope::views
