// D's values as the query engine holds them: 64-bit integers (signed or
// unsigned), strings and stacks. Strings and stacks are interned: a value is
// 16 bytes, compared and hashed without touching the text, so that keying an
// aggregation by probefunc costs a hash of two words.
//
// Owner: the output library (aggregate.cpp, printf.cpp implement what is
// declared here). Other parts use it as is; additions only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace callscope::query {

enum class Kind : uint8_t {
  kInt,     // int64_t (D's int, long, int64_t, pid_t ...)
  kUint,    // uint64_t (D's uint64_t, uintptr_t, size_t; timestamp)
  kString,  // bits: a Strings id
  kStack,   // bits: a Stacks id (ustack())
  kSym,     // bits: an address printed as a symbol (ufunc, umod, usym); see Stacks::symbol
};

struct Value {
  Kind kind = Kind::kInt;
  // kSym: 0 ufunc ("mod`func"), 1 umod ("mod"), 2 usym ("mod`func").
  // kInt, kUint: the size in bytes of the value's D type when it is not 8
  // (4: int, pid_t, uint32_t; 2: short; 1: char); 0 means 8 (int64_t,
  // uint64_t, long, and D's integer variables and constants). dtrace prints
  // a 4-byte key or trace() as " %8d", an 8-byte one as " %16lld", and
  // printf's %d of an int as 32 bits.
  uint8_t sym_form = 0;
  uint32_t process = 0;  // kSym, kStack: the process (index in the trace) whose addresses they are
  uint64_t bits = 0;

  static Value of_int(int64_t v) { return {Kind::kInt, 0, 0, static_cast<uint64_t>(v)}; }
  static Value of_uint(uint64_t v) { return {Kind::kUint, 0, 0, v}; }
  static Value of_string(uint32_t id) { return {Kind::kString, 0, 0, id}; }
  static Value of_stack(uint32_t id) { return {Kind::kStack, 0, 0, id}; }
  static Value of_sym(uint32_t process, uint64_t addr, uint8_t form) { return {Kind::kSym, form, process, addr}; }
  // An integer of a D type narrower than 64 bits (bytes 4, 2 or 1): D's
  // int (pid, tid, a cast to int), short, char.
  static Value of_sized(int64_t v, uint8_t bytes, bool is_signed = true) {
    return {is_signed ? Kind::kInt : Kind::kUint, static_cast<uint8_t>(bytes == 8 ? 0 : bytes), 0,
            static_cast<uint64_t>(v)};
  }
  static Value of_int32(int32_t v) { return of_sized(v, 4); }
  // kInt, kUint: the D type's size in bytes.
  int size() const { return is_integer() && sym_form != 0 ? sym_form : 8; }
  bool is_integer() const { return kind == Kind::kInt || kind == Kind::kUint; }
  int64_t as_int() const { return static_cast<int64_t>(bits); }
  uint64_t as_uint() const { return bits; }
  bool operator==(const Value& o) const {
    return kind == o.kind && bits == o.bits && sym_form == o.sym_form && process == o.process;
  }
};
static_assert(sizeof(Value) == 16, "a value is two words: keys hash and compare cheaply");

// Interned strings: equal texts have one id. Id 0 is "".
class Strings {
 public:
  Strings() { intern(""); }
  uint32_t intern(std::string_view s) {
    auto it = ids_.find(std::string(s));
    if (it != ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(texts_.size());
    texts_.emplace_back(s);
    ids_.emplace(texts_.back(), id);
    return id;
  }
  const std::string& text(uint32_t id) const { return texts_[id]; }
  size_t size() const { return texts_.size(); }

 private:
  std::vector<std::string> texts_;
  std::unordered_map<std::string, uint32_t> ids_;
};

// Interned call stacks (ustack()): the functions' entry addresses, innermost
// first, of one process. Printing names them through a symbol function the
// driver provides: "module`function" (callscope sees functions, not return
// addresses, so there is no +offset).
class Stacks {
 public:
  using Symbol = std::function<std::string(uint32_t process, uint64_t addr, uint8_t form)>;
  uint32_t intern(uint32_t process, const uint64_t* frames, size_t n);
  struct Stack {
    uint32_t process;
    std::vector<uint64_t> frames;  // innermost first
  };
  const Stack& stack(uint32_t id) const { return stacks_[id]; }
  // form: 0 "mod`func" (ufunc, usym and stack frames), 1 "mod" (umod).
  std::string symbol(uint32_t process, uint64_t addr, uint8_t form) const {
    return symbol_ ? symbol_(process, addr, form) : fallback(addr);
  }
  void set_symbol(Symbol s) { symbol_ = std::move(s); }

  // What an address stands for as a key, as libdtrace normalizes it before
  // aggregating (dt_aggregate_usym, dt_aggregate_umod): usym/ufunc (forms 0
  // and 2) the start of the function containing it, umod (form 1) the start
  // of its module; so that @[umod(arg0)] has one row per module. The driver
  // sets it (it knows the symbols and the module map); the interpreter
  // builds usym/ufunc/umod values with Value::of_sym(p, normalize(p, a, f), f).
  // Without one, addresses stay as they are.
  using Normalize = std::function<uint64_t(uint32_t process, uint64_t addr, uint8_t form)>;
  uint64_t normalize(uint32_t process, uint64_t addr, uint8_t form) const {
    return normalize_ ? normalize_(process, addr, form) : addr;
  }
  void set_normalize(Normalize n) { normalize_ = std::move(n); }

 private:
  static std::string fallback(uint64_t addr);
  std::vector<Stack> stacks_;
  std::unordered_map<std::string, uint32_t> ids_;  // process + frames as bytes
  Symbol symbol_;
  Normalize normalize_;
};

// An aggregation's key: a tuple of up to kMaxKey values (D allows more, but
// scripts use a few; a longer key is a compile error naming the limit).
inline constexpr size_t kMaxKey = 10;
struct Key {
  uint8_t n = 0;
  Value v[kMaxKey];
  bool operator==(const Key& o) const {
    if (n != o.n) return false;
    for (uint8_t i = 0; i < n; ++i)
      if (!(v[i] == o.v[i])) return false;
    return true;
  }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = k.n;
    for (uint8_t i = 0; i < k.n; ++i)
      h = (h ^ (k.v[i].bits + (uint64_t{static_cast<uint8_t>(k.v[i].kind)} << 56))) * 0x9e3779b97f4a7c15ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

}  // namespace callscope::query
