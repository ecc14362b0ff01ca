// D's aggregations and everything D prints: the aggregating functions, the
// printing of an aggregation (default at END, and printa with a format), and
// the default line of a probe firing that has no printing action.
//
// Output matches dtrace(1)'s byte for byte (illumos sources: dt_aggregate.c,
// dt_printf.c, dt_consume.c): column widths, the quantize histograms, the
// blank lines between aggregations.
//
// Owner: the output library. Interface used by the interpreter (engine.cpp)
// and the driver; additions only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "query/value.h"

namespace callscope::query {

enum class AggFn : uint8_t { kCount, kSum, kAvg, kMin, kMax, kStddev, kQuantize, kLquantize, kLlquantize };

// lquantize(value, low, high [, step = 1]); llquantize(value, factor, low,
// high, nsteps). The compiler checks the arguments as D does.
struct AggParams {
  int64_t low = 0, high = 0, step = 1;  // lquantize
  int64_t factor = 0, magnitude_low = 0, magnitude_high = 0, nsteps = 0;  // llquantize
};

// The options of printing (D's aggsortkey, aggsortrev, aggsortpos,
// aggsortkeypos, and what symbols and strings are named with).
struct PrintContext {
  const Strings* strings = nullptr;
  const Stacks* stacks = nullptr;
  bool aggsortkey = false;
  bool aggsortrev = false;
  int aggsortpos = 0;
  int aggsortkeypos = 0;
};

class Aggregation {
 public:
  Aggregation(std::string name, AggFn fn, AggParams params = {});
  const std::string& name() const { return name_; }  // without '@'; "" for the anonymous @
  AggFn fn() const { return fn_; }
  const AggParams& params() const { return params_; }

  // One call of the aggregating function: count() ignores value; incr is
  // the weight of quantize(v, incr) and friends (1 otherwise).
  void add(const Key& key, int64_t value, int64_t incr = 1);
  // clear(@): every value to zero, keys kept. trunc(@): all keys removed;
  // trunc(@, n): only the n largest kept (n < 0: the -n smallest).
  void clear();
  void trunc();
  void trunc(int64_t n);
  // normalize(@, n): printed values divided by n; denormalize(@) undoes it.
  void normalize(int64_t n);
  void denormalize();
  bool empty() const;

  // Implementation data (the output library's).
  struct Entry;
  const std::vector<std::unique_ptr<Entry>>& entries() const { return entries_; }

 private:
  std::string name_;
  AggFn fn_;
  AggParams params_;
  int64_t normal_ = 1;
  std::vector<std::unique_ptr<Entry>> entries_;  // in order of first add
  std::unordered_map<Key, size_t, KeyHash> index_;
};

// printa(@a) and what END prints for every aggregation not yet printed:
// dtrace's default layout (keys, then the value right-aligned; a histogram
// for the quantizations), a blank line before.
void print_aggregation(std::string& out, const Aggregation& agg, const PrintContext& ctx);

// printa("format", @a, @b, ...): the format's conversions take the keys in
// order, %@ the value of each aggregation in turn (several aggregations
// with the same keys print as one row, as D joins them).
Status printa(std::string& out, const std::string& format, const std::vector<const Aggregation*>& aggs,
              const PrintContext& ctx);

// printf(format, args...) with D's conversions (%d %i %u %x %X %o %s %c
// %p %a %A %k %Y %e %f %g, %%, flags -, +, #, 0, space, widths and
// precisions, * taken from an argument, size prefixes hh h l ll accepted).
// A runtime problem (a value of the wrong kind) is an error; the
// compiler should have refused it (check_printf).
Status format_printf(std::string& out, const std::string& format, const Value* args, size_t n,
                     const PrintContext& ctx);

// The kinds printf's arguments must have, for the compiler: an error names
// the conversion and the argument ("printf( ) argument #2 is incompatible
// with conversion #2 prototype: ...", as dtrace says it).
enum class ArgType : uint8_t { kInteger, kString, kStack, kSym, kAny };
Status check_printf(const std::string& format, const std::vector<ArgType>& args);

// trace(value): how D prints a traced value after the probe line.
void format_trace(std::string& out, const Value& v, const PrintContext& ctx);

// The default output of a probe firing when not quiet: the header once
// ("CPU     ID                    FUNCTION:NAME") and a line per firing;
// callscope has no CPU number and prints its thread's index there.
void format_probe_header(std::string& out);
void format_probe_line(std::string& out, uint32_t cpu_column, uint32_t probe_id, const std::string& function,
                       const std::string& name);

}  // namespace callscope::query
