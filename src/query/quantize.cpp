// The histograms of quantize, lquantize and llquantize as dtrace draws
// them (dt_consume.c: dt_print_quantize, dt_print_lquantize,
// dt_print_llquantize, dt_print_quantline): the rows from the bucket before
// the first non-zero one to the bucket after the last, bars of '@' scaled
// to 40 columns, half-length bars either side of a centre line when some
// counts are negative.
#include <algorithm>
#include <cstdio>

#include "query/aggregate.h"
#include "query/aggregate_internal.h"

namespace callscope::query {
namespace detail {

using Entry = Aggregation::Entry;

namespace {

constexpr const char kAts[] = "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@";
constexpr const char kSpaces[] = "                                        ";
constexpr unsigned kBar = 40;

long double magnitude(int64_t v) {
  const auto d = static_cast<long double>(v);
  return d < 0 ? -d : d;
}

// dt_print_quantline: the bar and the count. (long long)val / normal in
// dtrace divides as unsigned: the same bits for normal 1.
void quantline(std::string& out, int64_t val, uint64_t normal, long double total, bool positives,
               bool negatives) {
  const long long shown = static_cast<long long>(static_cast<uint64_t>(val) / normal);
  unsigned len = kBar;
  const char* ats = kAts;
  const char* spaces = kSpaces;
  if (!negatives) {
    unsigned depth = 0;
    if (positives) depth = static_cast<unsigned>(magnitude(val) * len / total + 0.5L);
    appendf(out, "|%s%s %-9lld\n", ats + len - depth, spaces + depth, shown);
    return;
  }
  if (!positives) {
    const auto depth = static_cast<unsigned>(magnitude(val) * len / total + 0.5L);
    appendf(out, "%s%s| %-9lld\n", spaces + depth, ats + len - depth, shown);
    return;
  }
  // Both signs: half-length bars either side of a centre line.
  len /= 2;
  ats += len;
  spaces += len;
  const auto depth = static_cast<unsigned>(magnitude(val) * len / total + 0.5L);
  if (val <= 0)
    appendf(out, "%s%s|%*s %-9lld\n", spaces + depth, ats + len - depth, static_cast<int>(len), "", shown);
  else
    appendf(out, "%20s|%s%s %-9lld\n", "", ats + len - depth, spaces + depth, shown);
}

void histogram_header(std::string& out) {
  appendf(out, "\n%16s %41s %-9s\n", "value", "------------- Distribution -------------", "count");
}

// The rows printed: from the bucket before the first non-zero one to the
// bucket after the last; `empty_first`/`empty_last` when all are zero.
void trim(const std::vector<int64_t>& data, int empty_first, int empty_last, int& first, int& last) {
  const int n = static_cast<int>(data.size());
  first = 0;
  while (first < n && data[static_cast<size_t>(first)] == 0) ++first;
  if (first == n) {
    first = empty_first;
    last = empty_last;
    return;
  }
  if (first > 0) --first;
  last = n - 1;
  while (last > 0 && data[static_cast<size_t>(last)] == 0) --last;
  if (last < n - 1) ++last;
}

// What a full bar stands for: the buckets' sum; with aggzoom, the
// largest bucket over 0.95 (its bar about 95 % of the width), as
// dt_quantize_total has it.
void totals(const std::vector<int64_t>& data, int first, int last, bool zoom, long double& total, bool& positives,
            bool& negatives) {
  total = 0;
  positives = negatives = false;
  for (int i = first; i <= last; ++i) {
    const int64_t v = data[static_cast<size_t>(i)];
    positives |= v > 0;
    negatives |= v < 0;
    if (zoom)
      total = std::max(total, magnitude(v) / 0.95L);
    else
      total += magnitude(v);
  }
}

void print_quantize(std::string& out, const std::vector<int64_t>& data, uint64_t normal, bool zoom) {
  int first, last;
  // dt_print_quantize scans to the next-to-last bucket only: all zero
  // there prints the buckets around zero.
  first = 0;
  while (first < kQuantizeBuckets - 1 && data[static_cast<size_t>(first)] == 0) ++first;
  if (first == kQuantizeBuckets - 1) {
    first = kQuantizeZero - 1;
    last = kQuantizeZero + 1;
  } else {
    if (first > 0) --first;
    last = kQuantizeBuckets - 1;
    while (last > 0 && data[static_cast<size_t>(last)] == 0) --last;
    if (last < kQuantizeBuckets - 1) ++last;
  }
  long double total;
  bool positives, negatives;
  totals(data, first, last, zoom, total, positives, negatives);
  histogram_header(out);
  for (int i = first; i <= last; ++i) {
    appendf(out, "%16lld ", static_cast<long long>(quantize_bucket_value(i)));
    quantline(out, data[static_cast<size_t>(i)], normal, total, positives, negatives);
  }
}

void print_lquantize(std::string& out, const AggParams& p, const std::vector<int64_t>& data, uint64_t normal, bool zoom) {
  const int levels = static_cast<int>(lquantize_levels(p));
  int first, last;
  trim(data, 0, 2, first, last);
  long double total;
  bool positives, negatives;
  totals(data, first, last, zoom, total, positives, negatives);
  histogram_header(out);
  for (int i = first; i <= last; ++i) {
    char c[32];
    if (i == 0) {
      std::snprintf(c, sizeof c, "< %lld", static_cast<long long>(p.low));
      appendf(out, "%16s ", c);
    } else if (i == levels + 1) {
      std::snprintf(c, sizeof c, ">= %lld", static_cast<long long>(static_cast<__int128>(p.low) + static_cast<__int128>(levels) * p.step));
      appendf(out, "%16s ", c);
    } else {
      appendf(out, "%16lld ", static_cast<long long>(static_cast<__int128>(p.low) + static_cast<__int128>(i - 1) * p.step));
    }
    quantline(out, data[static_cast<size_t>(i)], normal, total, positives, negatives);
  }
}

void print_llquantize(std::string& out, const AggParams& p, const std::vector<int64_t>& data, uint64_t normal,
                      bool zoom) {
  const int levels = static_cast<int>(data.size());
  int first, last;
  trim(data, 0, 1, first, last);
  long double total;
  bool positives, negatives;
  totals(data, first, last, zoom, total, positives, negatives);
  histogram_header(out);
  if (levels < 2) {  // parameters dtrace refuses: the one bucket, unlabelled
    appendf(out, "%16s ", "?");
    quantline(out, data[0], normal, total, positives, negatives);
    return;
  }
  int64_t value = 1, order;
  for (order = 0; order < p.magnitude_low; ++order) value = smul(value, p.factor);
  int64_t next = smul(value, p.factor);
  int64_t step = next > p.nsteps ? next / p.nsteps : 1;
  char c[32];
  if (first == 0) {
    std::snprintf(c, sizeof c, "< %lld", static_cast<long long>(value));
    appendf(out, "%16s ", c);
    quantline(out, data[0], normal, total, positives, negatives);
  }
  int bin = 1;
  while (order <= p.magnitude_high && bin < levels - 1) {
    if (bin >= first && bin <= last) {
      appendf(out, "%16lld ", static_cast<long long>(value));
      quantline(out, data[static_cast<size_t>(bin)], normal, total, positives, negatives);
    }
    ++bin;
    if ((value = sadd(value, step)) < next) continue;
    value = next;
    next = smul(value, p.factor);
    step = next > p.nsteps ? next / p.nsteps : 1;
    ++order;
  }
  if (last < bin || bin >= levels) return;
  std::snprintf(c, sizeof c, ">= %lld", static_cast<long long>(value));
  appendf(out, "%16s ", c);
  quantline(out, data[static_cast<size_t>(bin)], normal, total, positives, negatives);
}

}  // namespace

void print_histogram(std::string& out, const Aggregation& agg, const Entry& e, uint64_t normal, bool zoom) {
  switch (agg.fn()) {
    case AggFn::kQuantize: print_quantize(out, e.bins, normal, zoom); break;
    case AggFn::kLquantize: print_lquantize(out, agg.params(), e.bins, normal, zoom); break;
    case AggFn::kLlquantize: print_llquantize(out, agg.params(), e.bins, normal, zoom); break;
    default: break;
  }
}

}  // namespace detail
}  // namespace callscope::query
