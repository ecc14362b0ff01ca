// D's aggregations as libdtrace keeps and prints them: the aggregating
// functions (dtrace's kernel arithmetic, dtrace_aggregate_* in dtrace.c),
// the order of printing (dt_aggregate.c's comparisons, aggsort* options)
// and the default layout of printa and of the end of tracing
// (dt_consume.c: dt_print_aggs). The histograms are quantize.cpp's, the
// formats printf.cpp's.
#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>

#include "query/aggregate.h"
#include "query/aggregate_internal.h"

namespace callscope::query {

using u128 = unsigned __int128;

namespace detail {

int64_t quantize_bucket_value(int b) {
  if (b < kQuantizeZero) return -(int64_t{1} << (kQuantizeZero - 1 - b));
  if (b == kQuantizeZero) return 0;
  return int64_t{1} << (b - kQuantizeZero - 1);
}

void vappendf(std::string& out, const char* fmt, va_list ap) {
  char buf[512];
  va_list copy;
  va_copy(copy, ap);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, copy);
  va_end(copy);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof buf) {
    out.append(buf, static_cast<size_t>(n));
    return;
  }
  const size_t at = out.size();
  out.resize(at + static_cast<size_t>(n) + 1);
  std::vsnprintf(out.data() + at, static_cast<size_t>(n) + 1, fmt, ap);
  out.resize(at + static_cast<size_t>(n));
}

void appendf(std::string& out, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vappendf(out, fmt, ap);
  va_end(ap);
}

namespace {

// Floor of the square root, bit by bit as dt_sqrt_128 does it.
uint64_t sqrt128(u128 square) {
  u128 result = 0, rest = 0;
  int bits = 0;
  for (u128 t = square >> 1; t != 0; t >>= 1) ++bits;  // floor(log2), 0 for 0 and 1
  for (int shift = (bits / 2) * 2; shift >= 0; shift -= 2) {
    rest = (rest << 2) | ((square >> shift) & 3);
    const u128 next_try = (result << 2) | 1;
    result <<= 1;
    if (next_try <= rest) {
      rest -= next_try;
      result |= 1;
    }
  }
  return static_cast<uint64_t>(result);
}

}  // namespace

uint64_t stddev_of(const int64_t* v, uint64_t normal) {
  if (v[0] == 0 || normal == 0) return 0;
  const u128 squares = (u128{static_cast<uint64_t>(v[3])} << 64) | static_cast<uint64_t>(v[2]);
  const u128 avg_of_squares = squares / normal / normal / static_cast<uint64_t>(v[0]);
  int64_t avg = sdiv(sdiv(v[1], static_cast<int64_t>(normal)), v[0]);
  if (avg < 0) avg = -avg;
  const u128 square_of_avg = u128{static_cast<uint64_t>(avg)} * static_cast<uint64_t>(avg);
  return sqrt128(avg_of_squares - square_of_avg);  // wraps as dtrace's does if truncation makes it negative
}

// Saturating arithmetic for llquantize's powers: factor^(high + 1) may not
// fit in 64 bits (llquantize(x, 100, 0, 9, 100)); dtrace's kernel guards
// the same overflow, and C++ must not overflow signed integers at all.
int64_t smul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
int64_t sadd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

// At most 65535 levels: dtrace keeps them in 16 bits (its compiler refuses more).
int64_t lquantize_levels(const AggParams& p) {
  if (p.step <= 0 || p.high <= p.low) return 0;
  const __int128 levels = (static_cast<__int128>(p.high) - p.low) / p.step;
  return levels > 65535 ? 65535 : static_cast<int64_t>(levels);
}

}  // namespace detail

using detail::appendf;
using detail::kQuantizeBuckets;
using detail::kQuantizeZero;
using detail::lquantize_levels;
using detail::quantize_bucket_value;
using detail::sadd;
using detail::smul;
using Entry = Aggregation::Entry;

namespace {

// llquantize's buckets: one below factor^low, then per order of magnitude
// from low to high, nsteps buckets (fewer while factor^(order+1) < nsteps),
// the first factor-th of which overlap the previous order and are skipped;
// one at and above factor^(high+1). Returns the index of the top bucket.
int64_t llquantize_top(const AggParams& p) {
  int64_t base = 1, power = 1;
  for (int64_t order = 0; order < p.magnitude_low; ++order) power = smul(power, p.factor);
  power = smul(power, p.factor);
  for (int64_t order = p.magnitude_low; order <= p.magnitude_high; ++order) {
    const int64_t nbuckets = power > p.nsteps ? p.nsteps : power;
    base = sadd(base, nbuckets - nbuckets / p.factor);
    power = smul(power, p.factor);
  }
  return base;
}

// The parameters dtrace's compiler accepts (factor >= 2, nsteps a multiple
// of factor, 0 <= low <= high); anything else gets one bucket.
bool llquantize_valid(const AggParams& p) {
  return p.factor >= 2 && p.nsteps >= p.factor && p.nsteps % p.factor == 0 && p.magnitude_low >= 0 &&
         p.magnitude_high >= p.magnitude_low && p.magnitude_high < 64 && llquantize_top(p) < (int64_t{1} << 20);
}

// dtrace_aggregate_llquantize_bucket.
size_t llquantize_bucket(const AggParams& p, int64_t value) {
  int64_t power = 1, last, next;
  int64_t base = 1, order;
  for (order = 0; order < p.magnitude_low; ++order) power = smul(power, p.factor);
  if (value < (last = power)) return 0;
  for (power = smul(power, p.factor); order <= p.magnitude_high; ++order) {
    const int64_t nbuckets = power > p.nsteps ? p.nsteps : power;
    if (__builtin_mul_overflow(power, p.factor, &next)) {
      next = INT64_MAX;
      if (value >= power) value = power - 1;  // overflow: clamped into this order, as dtrace does
    }
    if (value < power) return static_cast<size_t>(base + (value - last) / (power / nbuckets));
    base += nbuckets - nbuckets / p.factor;
    last = power;
    power = next;
  }
  return static_cast<size_t>(base);
}

// dtrace_aggregate_quantize's bucket, by the value's highest bit: a
// negative value goes to the bucket of the largest power of two its
// magnitude reaches (-3 to "-2"), a positive one to that of the largest
// power of two not above it.
size_t quantize_bucket(int64_t value) {
  if (value < 0) {
    const uint64_t magnitude = 0 - static_cast<uint64_t>(value);
    const int k = std::min(63 - __builtin_clzll(magnitude), kQuantizeZero - 1);
    return static_cast<size_t>(kQuantizeZero - 1 - k);
  }
  if (value == 0) return kQuantizeZero;
  return static_cast<size_t>(kQuantizeZero + 1 + (63 - __builtin_clzll(static_cast<uint64_t>(value))));
}

size_t lquantize_bucket(const AggParams& p, int64_t value) {
  const int64_t levels = lquantize_levels(p);
  if (value < p.low) return 0;
  if (p.step <= 0) return static_cast<size_t>(levels + 1);  // the compiler refuses it; never divide by it
  const __int128 level = (static_cast<__int128>(value) - p.low) / p.step;
  if (level < levels) return static_cast<size_t>(level + 1);
  return static_cast<size_t>(levels + 1);
}

}  // namespace

Aggregation::Aggregation(std::string name, AggFn fn, AggParams params)
    : name_(std::move(name)), fn_(fn), params_(params) {
  switch (fn_) {
    case AggFn::kQuantize: nbins_ = kQuantizeBuckets; break;
    case AggFn::kLquantize: nbins_ = static_cast<size_t>(lquantize_levels(params_) + 2); break;
    case AggFn::kLlquantize: nbins_ = llquantize_valid(params_) ? static_cast<size_t>(llquantize_top(params_) + 1) : 1; break;
    default: break;
  }
}

Aggregation::~Aggregation() = default;
Aggregation::Aggregation(Aggregation&&) noexcept = default;
Aggregation& Aggregation::operator=(Aggregation&&) noexcept = default;

void Aggregation::rebuild_index() {
  size_t capacity = 16;
  while (capacity < entries_.size() * 2) capacity *= 2;
  slots_.assign(capacity, 0);
  const size_t mask = capacity - 1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    size_t at = entries_[i]->hash & mask;
    while (slots_[at] != 0) at = (at + 1) & mask;
    slots_[at] = static_cast<uint32_t>(i + 1);
  }
}

Aggregation::Entry* Aggregation::find_or_add(const Key& key) {
  if (slots_.empty()) rebuild_index();
  const size_t hash = KeyHash{}(key);
  const size_t mask = slots_.size() - 1;
  size_t at = hash & mask;
  for (uint32_t slot; (slot = slots_[at]) != 0; at = (at + 1) & mask) {
    Entry* e = entries_[slot - 1].get();
    if (e->hash == hash && e->key == key) return e;
  }
  auto fresh = std::make_unique<Entry>();
  fresh->key = key;
  fresh->hash = hash;
  if (fn_ == AggFn::kMin) fresh->v[0] = INT64_MAX;
  if (fn_ == AggFn::kMax) fresh->v[0] = INT64_MIN;
  fresh->bins.assign(nbins_, 0);
  Entry* e = fresh.get();
  entries_.push_back(std::move(fresh));
  if (entries_.size() * 2 > slots_.size()) rebuild_index();
  else slots_[at] = static_cast<uint32_t>(entries_.size());
  return e;
}

void Aggregation::add(const Key& key, int64_t value, int64_t incr) { add_to(find_or_add(key), value, incr); }

void Aggregation::add_count(Entry* e, uint64_t n) {
  e->v[0] = static_cast<int64_t>(static_cast<uint64_t>(e->v[0]) + n);
}

void Aggregation::add_to(Entry* e, int64_t value, int64_t incr) {
  // Unsigned arithmetic: D's sums wrap, they do not trap.
  auto wrap_add = [](int64_t& a, int64_t b) {
    a = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  };
  switch (fn_) {
    case AggFn::kCount: wrap_add(e->v[0], 1); break;
    case AggFn::kSum: wrap_add(e->v[0], value); break;
    case AggFn::kMin: e->v[0] = std::min(e->v[0], value); break;
    case AggFn::kMax: e->v[0] = std::max(e->v[0], value); break;
    case AggFn::kAvg:
      wrap_add(e->v[0], 1);
      wrap_add(e->v[1], value);
      break;
    case AggFn::kStddev: {
      wrap_add(e->v[0], 1);
      wrap_add(e->v[1], value);
      const uint64_t magnitude = value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
      u128 squares = (u128{static_cast<uint64_t>(e->v[3])} << 64) | static_cast<uint64_t>(e->v[2]);
      squares += u128{magnitude} * magnitude;
      e->v[2] = static_cast<int64_t>(static_cast<uint64_t>(squares));
      e->v[3] = static_cast<int64_t>(static_cast<uint64_t>(squares >> 64));
      break;
    }
    case AggFn::kQuantize: wrap_add(e->bins[quantize_bucket(value)], incr); break;
    case AggFn::kLquantize: wrap_add(e->bins[lquantize_bucket(params_, value)], incr); break;
    case AggFn::kLlquantize: {
      const size_t b = llquantize_bucket(params_, value);
      wrap_add(e->bins[std::min(b, e->bins.size() - 1)], incr);
      break;
    }
  }
}

// As libdtrace's DTRACE_AGGWALK_CLEAR: the data zeroed, a min() or max()
// included (a later value then competes with 0, as in dtrace).
void Aggregation::clear() {
  for (auto& e : entries_) {
    std::fill(std::begin(e->v), std::end(e->v), 0);
    std::fill(e->bins.begin(), e->bins.end(), 0);
  }
}

void Aggregation::trunc() {
  ++generation_;
  entries_.clear();
  slots_.clear();
}

// dt_trunc: walk by value, largest first (n > 0) or smallest first (n < 0),
// keep |n| entries. The aggsort options play no part.
void Aggregation::trunc(int64_t n, const PrintContext* ctx) {
  if (n == 0) return trunc();
  const bool smallest = n < 0;
  const uint64_t keep = smallest ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  if (keep >= entries_.size()) return;
  PrintContext plain;
  if (ctx != nullptr) {
    plain.strings = ctx->strings;
    plain.stacks = ctx->stacks;
  }
  std::vector<size_t> order(entries_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    int c = detail::compare_values(*this, *entries_[a], *entries_[b]);
    if (c == 0) c = detail::compare_keys(entries_[a]->key, entries_[b]->key, plain);
    return smallest ? c < 0 : c > 0;
  });
  std::vector<bool> kept(entries_.size(), false);
  for (size_t i = 0; i < keep; ++i) kept[order[i]] = true;
  std::vector<std::unique_ptr<Entry>> rest;
  for (size_t i = 0; i < entries_.size(); ++i)
    if (kept[i]) rest.push_back(std::move(entries_[i]));
  entries_ = std::move(rest);
  ++generation_;
  rebuild_index();
}

bool Aggregation::normalize(int64_t n) {
  if (n == 0) return false;
  normal_ = n;
  return true;
}
void Aggregation::denormalize() { normal_ = 1; }
bool Aggregation::empty() const { return entries_.empty(); }

namespace detail {

namespace {

int sign(long double a, long double b) { return a < b ? -1 : a > b ? 1 : 0; }
template <class T>
int sign_of(T a, T b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

// dt_aggregate_lquantizedsum/zero: each bucket weighted by its value.
void lquantize_weights(const AggParams& p, const Entry& e, long double& total, int64_t& zero) {
  const int64_t levels = lquantize_levels(p);
  __int128 base = p.low;
  total = static_cast<long double>(e.bins[0]) * static_cast<long double>(base - 1);
  zero = base - 1 == 0 ? e.bins[0] : 0;
  for (int64_t i = 0; i < levels; base += p.step, ++i) {
    total += static_cast<long double>(e.bins[static_cast<size_t>(i + 1)]) * static_cast<long double>(base);
    if (base == 0) zero = e.bins[static_cast<size_t>(i + 1)];
  }
  total += static_cast<long double>(e.bins[static_cast<size_t>(levels + 1)]) * static_cast<long double>(base + 1);
  if (base + 1 == 0 && zero == 0) zero = e.bins[static_cast<size_t>(levels + 1)];
}

// The lower bound of each llquantize bucket, as dt_print_llquantize labels them.
std::vector<int64_t> llquantize_labels(const AggParams& p, size_t nbins) {
  std::vector<int64_t> labels(nbins, 0);
  if (nbins < 2) return labels;
  int64_t value = 1;
  int64_t order;
  for (order = 0; order < p.magnitude_low; ++order) value = smul(value, p.factor);
  int64_t next = smul(value, p.factor);
  int64_t step = next > p.nsteps ? next / p.nsteps : 1;
  labels[0] = value - 1;
  size_t bin = 1;
  while (order <= p.magnitude_high && bin < nbins) {
    labels[bin++] = value;
    if ((value = sadd(value, step)) < next) continue;
    value = next;
    next = smul(value, p.factor);
    step = next > p.nsteps ? next / p.nsteps : 1;
    ++order;
  }
  if (bin < nbins) labels[bin] = value;
  return labels;
}

}  // namespace

int compare_values(const Aggregation& agg, const Entry& a, const Entry& b) {
  switch (agg.fn()) {
    case AggFn::kCount:
    case AggFn::kSum:
    case AggFn::kMin:
    case AggFn::kMax: return sign_of(a.v[0], b.v[0]);
    case AggFn::kAvg: {
      const int64_t la = sdiv(a.v[1], a.v[0]), ra = sdiv(b.v[1], b.v[0]);
      return sign_of(la, ra);
    }
    case AggFn::kStddev: return sign_of(stddev_of(a.v, 1), stddev_of(b.v, 1));
    case AggFn::kQuantize: {
      long double lt = 0, rt = 0;
      for (int i = 0; i < kQuantizeBuckets; ++i) {
        const auto w = static_cast<long double>(quantize_bucket_value(i));
        lt += w * static_cast<long double>(a.bins[static_cast<size_t>(i)]);
        rt += w * static_cast<long double>(b.bins[static_cast<size_t>(i)]);
      }
      if (int c = sign(lt, rt)) return c;
      return sign_of(a.bins[kQuantizeZero], b.bins[kQuantizeZero]);
    }
    case AggFn::kLquantize: {
      long double lt, rt;
      int64_t lz, rz;
      lquantize_weights(agg.params(), a, lt, lz);
      lquantize_weights(agg.params(), b, rt, rz);
      if (int c = sign(lt, rt)) return c;
      return sign_of(lz, rz);
    }
    case AggFn::kLlquantize: {
      const auto labels = llquantize_labels(agg.params(), a.bins.size());
      long double lt = 0, rt = 0;
      for (size_t i = 0; i < labels.size(); ++i) {
        lt += static_cast<long double>(labels[i]) * static_cast<long double>(a.bins[i]);
        rt += static_cast<long double>(labels[i]) * static_cast<long double>(b.bins[i]);
      }
      return sign(lt, rt);
    }
  }
  return 0;
}

namespace {

// One key member, as dt_aggregate_keycmp compares the bytes of its record.
int compare_member(const Value& a, const Value& b, const PrintContext& ctx) {
  if (a.kind != b.kind) return sign_of(static_cast<int>(a.kind), static_cast<int>(b.kind));
  switch (a.kind) {
    case Kind::kInt:
    case Kind::kUint: {
      // Record size first, then the value as an unsigned number of that
      // size: a negative key sorts after the positive ones, as in dtrace.
      if (a.size() != b.size()) return sign_of(a.size(), b.size());
      const uint64_t mask = a.size() >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * a.size())) - 1;
      return sign_of(a.bits & mask, b.bits & mask);
    }
    case Kind::kString: {
      if (ctx.strings == nullptr) return sign_of(a.bits, b.bits);
      const int c = ctx.strings->text(static_cast<uint32_t>(a.bits)).compare(ctx.strings->text(static_cast<uint32_t>(b.bits)));
      return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    case Kind::kSym:
      if (a.process != b.process) return sign_of(a.process, b.process);
      return sign_of(a.bits, b.bits);
    case Kind::kStack: {
      if (ctx.stacks == nullptr) return sign_of(a.bits, b.bits);
      // The ustack record: the pid then the frames, zero-filled to the
      // depth, compared byte by byte (little-endian words, as dtrace on x86).
      const auto& sa = ctx.stacks->stack(static_cast<uint32_t>(a.bits));
      const auto& sb = ctx.stacks->stack(static_cast<uint32_t>(b.bits));
      auto word_cmp = [](uint64_t x, uint64_t y) {
        const int c = std::memcmp(&x, &y, sizeof x);
        return c < 0 ? -1 : c > 0 ? 1 : 0;
      };
      if (int c = word_cmp(sa.process, sb.process)) return c;
      const size_t n = std::max(sa.frames.size(), sb.frames.size());
      for (size_t i = 0; i < n; ++i) {
        const uint64_t x = i < sa.frames.size() ? sa.frames[i] : 0, y = i < sb.frames.size() ? sb.frames[i] : 0;
        if (int c = word_cmp(x, y)) return c;
      }
      return 0;
    }
  }
  return 0;
}

}  // namespace

// aggsortkeypos: the comparison starts at that key member and wraps around.
int compare_keys(const Key& a, const Key& b, const PrintContext& ctx) {
  if (a.n != b.n) return sign_of(a.n, b.n);
  const int n = a.n;
  const int keypos = ctx.aggsortkeypos < 0 || ctx.aggsortkeypos >= n ? 0 : ctx.aggsortkeypos;
  for (int i = 0; i < n; ++i) {
    const int at = (i + keypos) % n;
    if (int c = compare_member(a.v[at], b.v[at], ctx)) return c;
  }
  return 0;
}

std::vector<const Entry*> sorted_entries(const Aggregation& agg, const PrintContext& ctx) {
  std::vector<const Entry*> out;
  out.reserve(agg.entries().size());
  for (const auto& e : agg.entries()) out.push_back(e.get());
  std::sort(out.begin(), out.end(), [&](const Entry* a, const Entry* b) {
    int c = 0;
    if (!ctx.aggsortkey) c = compare_values(agg, *a, *b);
    if (c == 0) c = compare_keys(a->key, b->key, ctx);
    return ctx.aggsortrev ? c > 0 : c < 0;
  });
  return out;
}

std::vector<std::vector<const Entry*>> joined_rows(const std::vector<const Aggregation*>& aggs,
                                                   const PrintContext& ctx,
                                                   std::vector<std::unique_ptr<Entry>>& zeros) {
  const size_t n = aggs.size();
  zeros.clear();
  for (const Aggregation* agg : aggs) {
    auto z = std::make_unique<Entry>();
    // A zero-filled record, as dtrace fills one for a missing key: 0 for
    // min and max too, empty histograms.
    if (!agg->entries().empty()) z->bins.assign(agg->entries().front()->bins.size(), 0);
    else {
      Aggregation probe("", agg->fn(), agg->params());
      probe.add(Key{}, 0);
      z->bins.assign(probe.entries().front()->bins.size(), 0);
    }
    zeros.push_back(std::move(z));
  }
  std::unordered_map<Key, size_t, KeyHash> index;
  std::vector<std::vector<const Entry*>> rows;
  for (size_t a = 0; a < n; ++a) {
    for (const auto& e : aggs[a]->entries()) {
      auto [it, fresh] = index.emplace(e->key, rows.size());
      if (fresh) rows.emplace_back(n, nullptr);
      rows[it->second][a] = e.get();
    }
  }
  for (auto& row : rows)
    for (size_t a = 0; a < n; ++a)
      if (row[a] == nullptr) row[a] = zeros[a].get();
  const size_t sortpos = ctx.aggsortpos < 0 || static_cast<size_t>(ctx.aggsortpos) >= n ? 0 : static_cast<size_t>(ctx.aggsortpos);
  auto key_of = [&](const std::vector<const Entry*>& row) -> const Key& {
    for (size_t a = 0; a < n; ++a)
      if (row[a] != zeros[a].get()) return row[a]->key;
    return row[0]->key;
  };
  std::sort(rows.begin(), rows.end(), [&](const auto& l, const auto& r) {
    int c = 0;
    if (ctx.aggsortkey) c = compare_keys(key_of(l), key_of(r), ctx);
    for (size_t i = 0; c == 0 && i < n; ++i) {
      const size_t a = (i + sortpos) % n;
      c = compare_values(*aggs[a], *l[a], *r[a]);
    }
    if (c == 0 && !ctx.aggsortkey) c = compare_keys(key_of(l), key_of(r), ctx);
    return ctx.aggsortrev ? c > 0 : c < 0;
  });
  // Zero entries carry no key: give every row's members the row's key.
  for (auto& row : rows) {
    const Key& key = key_of(row);
    for (size_t a = 0; a < n; ++a)
      if (row[a] == zeros[a].get()) {
        auto z = std::make_unique<Entry>(*zeros[a]);
        z->key = key;
        row[a] = z.get();
        zeros.push_back(std::move(z));
      }
  }
  return rows;
}

std::string symbol_text(const Value& v, const PrintContext& ctx) {
  const uint32_t process = v.kind == Kind::kSym ? v.process : ctx.process;
  const uint8_t form = v.kind == Kind::kSym && v.sym_form == 1 ? 1 : 0;
  if (ctx.stacks != nullptr) return ctx.stacks->symbol(process, v.bits, form);
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v.bits);
  return buf;
}

void print_ustack(std::string& out, const Value& v, const PrintContext& ctx, const char* format, int indent) {
  out += '\n';
  if (ctx.stacks == nullptr) return;
  const auto& stack = ctx.stacks->stack(static_cast<uint32_t>(v.bits));
  for (uint64_t pc : stack.frames) {
    if (pc == 0) break;
    out.append(static_cast<size_t>(std::max(indent, 0)), ' ');
    const std::string name = ctx.stacks->symbol(stack.process, pc, 0);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    appendf(out, format, name.c_str());
#pragma GCC diagnostic pop
    out += '\n';
  }
}


}  // namespace detail

namespace {

// dt_print_datum for a key member.
void print_key_member(std::string& out, const Value& v, const PrintContext& ctx) {
  switch (v.kind) {
    case Kind::kInt:
    case Kind::kUint:
      switch (v.size()) {
        case 4: appendf(out, " %8d", static_cast<int32_t>(static_cast<uint32_t>(v.bits))); break;
        case 2: appendf(out, " %5d", static_cast<int>(static_cast<uint16_t>(v.bits))); break;
        case 1: appendf(out, " %3d", static_cast<int>(static_cast<uint8_t>(v.bits))); break;
        default: appendf(out, " %16lld", static_cast<long long>(v.bits)); break;
      }
      break;
    case Kind::kString:
      appendf(out, "  %-50s", ctx.strings != nullptr ? ctx.strings->text(static_cast<uint32_t>(v.bits)).c_str() : "");
      break;
    case Kind::kSym: appendf(out, "  %-50s", detail::symbol_text(v, ctx).c_str()); break;
    case Kind::kStack: detail::print_ustack(out, v, ctx, "%s", 14); break;
  }
}

// dt_print_datum for the aggregation's value, divided by `normal` as
// dtrace divides it (count, sum, min, max: unsigned; avg: signed).
void print_value(std::string& out, const Aggregation& agg, const Entry& e, const PrintContext& ctx) {
  const auto normal = static_cast<uint64_t>(agg.normal());
  switch (agg.fn()) {
    case AggFn::kCount:
    case AggFn::kSum:
    case AggFn::kMin:
    case AggFn::kMax:
      appendf(out, " %16lld", static_cast<long long>(static_cast<uint64_t>(e.v[0]) / normal));
      break;
    case AggFn::kAvg:
      appendf(out, " %16lld", static_cast<long long>(detail::sdiv(detail::sdiv(e.v[1], agg.normal()), e.v[0])));
      break;
    case AggFn::kStddev:
      appendf(out, " %16llu", e.v[0] != 0 ? static_cast<unsigned long long>(detail::stddev_of(e.v, normal)) : 0ULL);
      break;
    case AggFn::kQuantize:
    case AggFn::kLquantize:
    case AggFn::kLlquantize: detail::print_histogram(out, agg, e, normal, ctx.aggzoom); break;
  }
}

void print_rows(std::string& out, const Aggregation& agg, const PrintContext& ctx) {
  for (const Entry* e : detail::sorted_entries(agg, ctx)) {
    for (uint8_t i = 0; i < e->key.n; ++i) print_key_member(out, e->key.v[i], ctx);
    print_value(out, agg, *e, ctx);
    out += '\n';
  }
}

}  // namespace

void print_aggregation(std::string& out, const Aggregation& agg, const PrintContext& ctx) {
  out += '\n';
  print_rows(out, agg, ctx);
  agg.mark_printed();
}

void print_aggregations_at_end(std::string& out, const std::vector<const Aggregation*>& aggs,
                               const PrintContext& ctx) {
  out += '\n';
  // dtrace sorts every entry of every aggregation at once, the
  // aggregation's id first: aggsortrev reverses the aggregations' order too.
  std::vector<const Aggregation*> order(aggs);
  if (ctx.aggsortrev) std::reverse(order.begin(), order.end());
  for (const Aggregation* agg : order)
    if (!agg->printed()) print_rows(out, *agg, ctx);
}

namespace detail {

void print_joined(std::string& out, const std::vector<const Aggregation*>& aggs, const PrintContext& ctx) {
  out += '\n';
  std::vector<std::unique_ptr<Entry>> zeros;
  for (const auto& row : detail::joined_rows(aggs, ctx, zeros)) {
    const Key& key = row[0]->key;
    for (uint8_t i = 0; i < key.n; ++i) print_key_member(out, key.v[i], ctx);
    for (size_t a = 0; a < aggs.size(); ++a) print_value(out, *aggs[a], *row[a], ctx);
    out += '\n';
  }
  for (const Aggregation* agg : aggs) agg->mark_printed();
}

}  // namespace detail
}  // namespace callscope::query
