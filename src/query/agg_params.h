// D's aggregating functions as the compiler checks them (compile.cpp):
// their names and numbers of arguments, and the parameters of lquantize
// and llquantize, with D's rules and words.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "query/aggregate.h"

namespace callscope::query {

struct AggFnInfo {
  const char* name;
  AggFn fn;
  size_t min_args, max_args;
};
// The aggregating function named `name`, or null.
const AggFnInfo* find_agg_fn(const std::string& name);

// The parameters of a call of `fn` (lquantize, llquantize; the others
// have none): `constants[i]` is argument i's value where it is an integer
// constant. An error in D's words, without the line.
Result<AggParams> agg_params(AggFn fn, const std::vector<std::optional<int64_t>>& constants);

}  // namespace callscope::query
