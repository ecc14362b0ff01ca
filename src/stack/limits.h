// `callscope stack --limit`: a gate for CI. Each entry point's worst case
// must be a complete bound (no recursion, no dynamic frame, no unresolved
// indirect call on the way) and at most its limit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "stack/pattern.h"
#include "stack/stack.h"

namespace callscope::stack {

// "4096", "8K", "8KiB", "1M": bytes (K and M are 1024 and 1024 * 1024).
Result<uint64_t> parse_byte_size(std::string_view text);

struct StackLimit {
  bool every_entry = false;  // "--limit 8K": for every entry point checked
  FunctionPattern entry;     // "--limit main=8K": for the functions it matches
  uint64_t bytes = 0;
  std::string text;          // as written, for messages
};

// "8K" or "main=8K,worker=64K" (the two forms may be mixed; a named limit
// wins over the general one).
Result<std::vector<StackLimit>> parse_limits(std::string_view text);

// The entry points named by the limits (in the model's order), or nothing
// when every limit is general. A name matching no function is an error.
Result<std::vector<uint32_t>> limited_entries(const StackModel& model,
                                              const std::vector<StackLimit>& limits);

struct LimitVerdict {
  uint32_t entry = 0;
  uint64_t limit = 0;
  bool ok = true;
  std::string why;  // "9312 bytes, over the limit of 8K"; "unbounded: recursion ..."
};

// One verdict per entry that has a limit.
std::vector<LimitVerdict> check_limits(const StackModel& model, const WorstCase& worst,
                                       const std::vector<uint32_t>& entries,
                                       const std::vector<StackLimit>& limits);

}  // namespace callscope::stack
