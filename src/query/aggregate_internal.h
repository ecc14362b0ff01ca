// What aggregate.cpp (the aggregations, their order, the default layout)
// and printf.cpp (the format engine, printa with a format) share: an
// entry's data, dtrace's comparisons and the printers of single values.
// Private to the output library.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "query/aggregate.h"

namespace callscope::query {

// One key's data, laid out as libdtrace keeps it so that the arithmetic
// (and its overflow) is dtrace's: count, sum, min, max: v[0]; avg: v[0]
// the count, v[1] the sum; stddev: v[0] count, v[1] sum, v[2] and v[3] the
// 128-bit sum of squares (low word first); the quantizations: bins.
struct Aggregation::Entry {
  Key key;
  size_t hash = 0;  // KeyHash of key
  int64_t v[4] = {0, 0, 0, 0};
  std::vector<int64_t> bins;
};

namespace detail {

inline constexpr int kQuantizeBuckets = 127;  // DTRACE_QUANTIZE_NBUCKETS
inline constexpr int kQuantizeZero = 63;      // DTRACE_QUANTIZE_ZEROBUCKET

// The lower bound of quantize bucket `b`: ..., -2, -1, 0, 1, 2, 4, ...
int64_t quantize_bucket_value(int b);

// Saturating int64_t product and sum (llquantize's powers of the factor).
int64_t smul(int64_t a, int64_t b);
int64_t sadd(int64_t a, int64_t b);
// lquantize's levels: (high - low) / step, at most 65535.
int64_t lquantize_levels(const AggParams& p);

void appendf(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void vappendf(std::string& out, const char* fmt, va_list ap) __attribute__((format(printf, 2, 0)));

// a / b in int64_t without C's traps: 0 for b == 0, INT64_MIN / -1 wraps.
inline int64_t sdiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  return a / b;
}

// dtrace's dt_stddev: integer arithmetic on the 128-bit sum of squares.
uint64_t stddev_of(const int64_t* v, uint64_t normal);

// libdtrace's comparisons (dt_aggregate.c): < 0, 0, > 0, before aggsortrev.
int compare_values(const Aggregation& agg, const Aggregation::Entry& a, const Aggregation::Entry& b);
int compare_keys(const Key& a, const Key& b, const PrintContext& ctx);

// The entries of one aggregation in the order dtrace prints them.
std::vector<const Aggregation::Entry*> sorted_entries(const Aggregation& agg, const PrintContext& ctx);

// Rows of several aggregations joined by key (printa(@a, @b)): each row
// has one entry per aggregation, a zero entry where one lacks the key, in
// dtrace's order (aggsortpos picks the aggregation sorted on first).
std::vector<std::vector<const Aggregation::Entry*>> joined_rows(const std::vector<const Aggregation*>& aggs,
                                                                const PrintContext& ctx,
                                                                std::vector<std::unique_ptr<Aggregation::Entry>>& zeros);

// printa(@a, @b) without a format: keys, then each value in the order written.
void print_joined(std::string& out, const std::vector<const Aggregation*>& aggs, const PrintContext& ctx);

// The text a kSym value or an address prints as.
std::string symbol_text(const Value& v, const PrintContext& ctx);
// dt_print_ustack: a newline, then each frame as `format` (a printf format
// taking one string) indented by `indent` spaces, one per line.
void print_ustack(std::string& out, const Value& v, const PrintContext& ctx, const char* format, int indent);
// The histogram of a quantize, lquantize or llquantize entry.
// (zoom: the aggzoom option, the largest bucket's bar nearly full)
void print_histogram(std::string& out, const Aggregation& agg, const Aggregation::Entry& e, uint64_t normal,
                     bool zoom);

}  // namespace detail
}  // namespace callscope::query
