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
  bool quiet = false;    // -q / quiet: trace() prints bare values
  bool aggzoom = false;  // quantizations' bars scaled to the largest bucket
  uint32_t process = 0;  // the firing's process: whose symbols printf's %a and %A name for an integer
};

class Aggregation {
 public:
  Aggregation(std::string name, AggFn fn, AggParams params = {});
  // Out of line: Entry is complete only in the output library.
  ~Aggregation();
  Aggregation(Aggregation&&) noexcept;
  Aggregation& operator=(Aggregation&&) noexcept;
  const std::string& name() const { return name_; }  // without '@'; "" for the anonymous @
  AggFn fn() const { return fn_; }
  const AggParams& params() const { return params_; }

  // One call of the aggregating function: count() ignores value; incr is
  // the weight of quantize(v, incr) and friends (1 otherwise).
  void add(const Key& key, int64_t value, int64_t incr = 1);
  // The same in two steps, for a caller that finds a key's entry once and
  // adds to it many times (the engine, per probe, for keys made of the
  // probe's names alone): the entry stays valid while generation() does
  // not change (trunc() removes entries).
  struct Entry;
  Entry* entry(const Key& key) { return find_or_add(key); }
  void add_to(Entry* e, int64_t value, int64_t incr = 1);
  // n calls of count() at once (fn() must be kCount).
  void add_count(Entry* e, uint64_t n);
  uint64_t generation() const { return generation_; }
  // clear(@): every value to zero, keys kept. trunc(@): all keys removed;
  // trunc(@, n): only the n largest kept (n < 0: the -n smallest).
  void clear();
  void trunc();
  // `ctx` (its strings and stacks) breaks ties between equal values by key
  // as dtrace does; without it keys tie-break by their interned ids.
  void trunc(int64_t n, const PrintContext* ctx = nullptr);
  // normalize(@, n): printed values divided by n; denormalize(@) undoes it.
  // n == 0 is refused (false, the normal unchanged): dtrace aborts on it,
  // the caller reports the fault.
  bool normalize(int64_t n);
  void denormalize();
  bool empty() const;
  int64_t normal() const { return normal_; }
  // Set by printa: END prints only the aggregations no printa printed (as dtrace).
  bool printed() const { return printed_; }
  void mark_printed() const { printed_ = true; }

  // Implementation data (the output library's).
  const std::vector<std::unique_ptr<Entry>>& entries() const { return entries_; }

 private:
  std::string name_;
  AggFn fn_;
  AggParams params_;
  int64_t normal_ = 1;
  mutable bool printed_ = false;
  size_t nbins_ = 0;  // quantize, lquantize, llquantize: buckets per key
  uint64_t generation_ = 0;
  std::vector<std::unique_ptr<Entry>> entries_;  // in order of first add
  // Open addressing over entries_ (index + 1; 0 empty), a power of two at
  // most half full: a probe costs a hash and, mostly, one key comparison.
  std::vector<uint32_t> slots_;
  Entry* find_or_add(const Key& key);
  void rebuild_index();
};

// printa(@a): dtrace's default layout (keys, then the value right-aligned;
// a histogram for the quantizations), a blank line before. Marks @a printed.
void print_aggregation(std::string& out, const Aggregation& agg, const PrintContext& ctx);

// What dtrace prints when tracing ends (after END, on exit() or Ctrl-C): a
// newline (always, even quiet and with no aggregation), then the rows of
// every aggregation that no printa printed, without blank lines between
// them. `aggs` in the order the program first named them (dtrace's
// variable ids): that is the order they print in (reversed by aggsortrev).
void print_aggregations_at_end(std::string& out, const std::vector<const Aggregation*>& aggs,
                               const PrintContext& ctx);

// printa("format", @a, @b, ...): the format's conversions take the keys in
// order, %@ the value of each aggregation in turn (several aggregations
// with the same keys print as one row, as D joins them; an aggregation
// without the key prints as zero). An empty format means none:
// printa(@a, @b) in dtrace's default layout, keys then each value.
// Marks every aggregation printed.
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
// `type_names` (optional, one per argument) name the arguments' D types in
// the message ("int", "uint64_t", "string"); without them the message says
// int64_t, string, stack or _usymaddr.
enum class ArgType : uint8_t { kInteger, kString, kStack, kSym, kAny };
Status check_printf(const std::string& format, const std::vector<ArgType>& args,
                    const std::vector<std::string>& type_names = {});
// printa("format", @a...): `keys` are the aggregation's key types; %@
// conversions take the value of an aggregation whose function is `fn`
// (count's is unsigned, the others' signed). Keys left over are allowed.
Status check_printa(const std::string& format, const std::vector<ArgType>& keys, AggFn fn,
                    const std::vector<std::string>& type_names = {});

// printa(fmt, @a, @b): the aggregations must have keys of one signature
// (dt_printa_validate): "printa( ): @a and @b do not have matching key
// signatures: @a has 1 key, @b has 2 keys" or "printa( ): @b[ ] key #1 is
// incompatible with @a: ...". Names without '@'; `*_names` the keys' D
// type names (optional, as for check_printf).
Status check_printa_keys(const std::string& first, const std::vector<ArgType>& first_keys,
                         const std::vector<std::string>& first_names, const std::string& other,
                         const std::vector<ArgType>& other_keys, const std::vector<std::string>& other_names);

// trace(value): how D prints a traced value after the probe line (" %16lld"
// for 8 bytes, " %8d" for 4, "  %-33s" for a string; bare when ctx.quiet).
// A kStack value prints as the ustack() action does, a kSym as usym/ufunc/umod.
void format_trace(std::string& out, const Value& v, const PrintContext& ctx);

// print(value): dtrace's typed printing (dt_print.c) of a scalar: the type
// name, a space, the value (integers in hex as "%#llx", a char as 'c',
// a string quoted), a newline: "int 0xa", "string \"foo\"". `type_name` is
// the D type the compiler gave the expression; empty: int64_t, uint64_t,
// string by the value's kind.
void format_print(std::string& out, const Value& v, const std::string& type_name, const PrintContext& ctx);

// The default output of a probe firing when not quiet: the header before
// the first firing ("CPU     ID                    FUNCTION:NAME") and, per
// firing, "%3d %6d %32s " (cpu, id, "function:name"), then whatever the
// clause's actions print, then a newline (format_probe_end): dtrace prints
// a clause's output on the probe's line. callscope has no CPU number and
// prints its thread's index there.
void format_probe_header(std::string& out);
void format_probe_line(std::string& out, uint32_t cpu_column, uint32_t probe_id, const std::string& function,
                       const std::string& name);
void format_probe_end(std::string& out);

}  // namespace callscope::query
