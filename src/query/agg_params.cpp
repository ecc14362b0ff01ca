// D's aggregating functions' prototypes and parameters (agg_params.h).
#include "query/agg_params.h"

#include <algorithm>
#include <climits>

namespace callscope::query {

const AggFnInfo* find_agg_fn(const std::string& name) {
  static const AggFnInfo fns[] = {{"count", AggFn::kCount, 0, 0},        {"sum", AggFn::kSum, 1, 1},
                                  {"avg", AggFn::kAvg, 1, 1},            {"min", AggFn::kMin, 1, 1},
                                  {"max", AggFn::kMax, 1, 1},            {"stddev", AggFn::kStddev, 1, 1},
                                  {"quantize", AggFn::kQuantize, 1, 2},  {"lquantize", AggFn::kLquantize, 3, 5},
                                  {"llquantize", AggFn::kLlquantize, 5, 6}};
  const auto* it = std::find_if(std::begin(fns), std::end(fns), [&](const AggFnInfo& f) { return name == f.name; });
  return it == std::end(fns) ? nullptr : it;
}

Result<AggParams> agg_params(AggFn fn, const std::vector<std::optional<int64_t>>& constants) {
  AggParams params;
  if (fn != AggFn::kLquantize && fn != AggFn::kLlquantize) return params;
  const char* name = fn == AggFn::kLquantize ? "lquantize" : "llquantize";
  // The arguments that must be constants, each named in the error.
  const std::vector<const char*> what = fn == AggFn::kLquantize
                                            ? std::vector<const char*>{"base", "limit", "step"}
                                            : std::vector<const char*>{"factor", "low magnitude", "high magnitude",
                                                                       "number of steps"};
  std::vector<int64_t> v;
  for (size_t i = 0; i < what.size(); ++i) {
    if (i + 1 >= constants.size()) {
      v.push_back(1);  // (lquantize's step, when not given)
      continue;
    }
    if (!constants[i + 1])
      return Error(std::string(name) + "( ) argument #" + std::to_string(i + 2) + " (" + what[i] +
                   ") must be an integer constant");
    v.push_back(*constants[i + 1]);
  }
  if (fn == AggFn::kLquantize) {
    const int64_t low = v[0], high = v[1], step = v[2];
    if (low < INT32_MIN || low > INT32_MAX) return Error("lquantize( ) argument #2 must be a 32-bit quantity");
    if (high < INT32_MIN || high > INT32_MAX) return Error("lquantize( ) argument #3 must be a 32-bit quantity");
    if (low >= high) return Error("lquantize( ) base (argument #2) must be less than limit (argument #3)");
    if (step <= 0 || step > UINT16_MAX)
      return Error("lquantize( ) step (argument #4) must be a 16-bit quantity greater than 0");
    if ((high - low) / step > UINT16_MAX)
      return Error("lquantize( ) has too many levels: (limit - base) / step must fit in 16 bits");
    params.low = low, params.high = high, params.step = step;
    return params;
  }
  const int64_t factor = v[0], lo = v[1], hi = v[2], steps = v[3];
  if (factor < 2 || factor > UINT16_MAX)
    return Error("llquantize( ) argument #2 (factor) must be a 16-bit quantity greater than 1");
  if (lo < 0 || lo > INT32_MAX) return Error("llquantize( ) argument #3 (low magnitude) must be a 32-bit quantity >= 0");
  if (hi < lo || hi > INT32_MAX)
    return Error("llquantize( ) argument #4 (high magnitude) must be a 32-bit quantity >= argument #3 (low magnitude)");
  if (steps < 1 || steps > UINT16_MAX)
    return Error("llquantize( ) argument #5 (number of steps) must be a 16-bit quantity greater than 0");
  if (steps < factor ? factor % steps != 0 : steps % factor != 0)
    return Error("llquantize( ) argument #2 (factor) and argument #5 (number of steps) must divide one another evenly");
  // factor^(high+1) must fit in 64 bits (the top bucket's limit).
  unsigned __int128 p = 1;
  for (int64_t i = 0; i <= hi; ++i) {
    p *= static_cast<unsigned __int128>(factor);
    if (p > UINT64_MAX)
      return Error("llquantize( ) argument #2 (factor) raised to the power of argument #4 (high magnitude) plus one "
                   "must fit in 64 bits");
  }
  params.factor = factor, params.magnitude_low = lo, params.magnitude_high = hi, params.nsteps = steps;
  return params;
}

}  // namespace callscope::query
