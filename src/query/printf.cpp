// D's printf and printa formats, as libdtrace's dt_printf.c reads, checks
// and prints them: the dictionary of conversions (with the prototypes its
// compile errors name), the flags, widths and precisions, '*' taken from an
// argument, %@ taking an aggregation's value; and trace(), the default
// probe line. The C library's snprintf does the final formatting of each
// conversion, as dtrace's does.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>

#include "query/aggregate.h"
#include "query/aggregate_internal.h"

namespace callscope::query {

using detail::appendf;
using Entry = Aggregation::Entry;

namespace {

// What an argument must be (pfcheck_*) and how it prints (pfprint_*).
enum class Check : uint8_t { kAddr, kUaddr, kStack, kTime, kStr, kWstr, kCsi, kFp, kInt, kPct };
enum class Print : uint8_t { kSint, kUint, kDint, kFp, kAddr, kUaddr, kStack, kTime, kTime822, kCstr, kWstr, kEstr, kEchr, kPct };

struct Conversion {
  const char* name;
  char ofmt;          // the C conversion it becomes
  const char* proto;  // the prototype compile errors name
  Check check;
  Print print;
};

constexpr const char kXint[] = "char, short, int, long, or long long";
constexpr const char kCsi[] = "char, short, or int";
constexpr const char kFp[] = "float, double, or long double";
constexpr const char kAddrProto[] = "pointer or integer";
constexpr const char kUaddrProto[] = "pointer or integer (with -p/-c) or _usymaddr (without -p/-c)";
constexpr const char kCstr[] = "char [] or string (or use stringof)";
constexpr const char kWstrProto[] = "wchar_t []";

// dt_printf.c's _dtrace_conversions.
constexpr Conversion kConversions[] = {
    {"a", 's', kAddrProto, Check::kAddr, Print::kAddr},
    {"A", 's', kUaddrProto, Check::kUaddr, Print::kUaddr},
    {"c", 'c', kCsi, Check::kCsi, Print::kSint},
    {"C", 's', kCsi, Check::kCsi, Print::kEchr},
    {"d", 'd', kXint, Check::kInt, Print::kDint},
    {"e", 'e', kFp, Check::kFp, Print::kFp},
    {"E", 'E', kFp, Check::kFp, Print::kFp},
    {"f", 'f', kFp, Check::kFp, Print::kFp},
    {"g", 'g', kFp, Check::kFp, Print::kFp},
    {"G", 'G', kFp, Check::kFp, Print::kFp},
    {"hd", 'd', "short", Check::kInt, Print::kSint},
    {"hi", 'i', "short", Check::kInt, Print::kSint},
    {"ho", 'o', "unsigned short", Check::kInt, Print::kUint},
    {"hu", 'u', "unsigned short", Check::kInt, Print::kUint},
    {"hx", 'x', "short", Check::kInt, Print::kUint},
    {"hX", 'X', "short", Check::kInt, Print::kUint},
    {"i", 'i', kXint, Check::kInt, Print::kDint},
    {"k", 's', "stack", Check::kStack, Print::kStack},
    {"lc", 'c', "int", Check::kInt, Print::kSint},
    {"ld", 'd', "long", Check::kInt, Print::kSint},
    {"li", 'i', "long", Check::kInt, Print::kSint},
    {"lo", 'o', "unsigned long", Check::kInt, Print::kUint},
    {"lu", 'u', "unsigned long", Check::kInt, Print::kUint},
    {"ls", 's', kWstrProto, Check::kWstr, Print::kWstr},
    {"lx", 'x', "long", Check::kInt, Print::kUint},
    {"lX", 'X', "long", Check::kInt, Print::kUint},
    {"lld", 'd', "long long", Check::kInt, Print::kSint},
    {"lli", 'i', "long long", Check::kInt, Print::kSint},
    {"llo", 'o', "unsigned long long", Check::kInt, Print::kUint},
    {"llu", 'u', "unsigned long long", Check::kInt, Print::kUint},
    {"llx", 'x', "long long", Check::kInt, Print::kUint},
    {"llX", 'X', "long long", Check::kInt, Print::kUint},
    {"Le", 'e', "long double", Check::kFp, Print::kFp},
    {"LE", 'E', "long double", Check::kFp, Print::kFp},
    {"Lf", 'f', "long double", Check::kFp, Print::kFp},
    {"Lg", 'g', "long double", Check::kFp, Print::kFp},
    {"LG", 'G', "long double", Check::kFp, Print::kFp},
    {"o", 'o', kXint, Check::kInt, Print::kUint},
    {"p", 'x', kAddrProto, Check::kAddr, Print::kUint},
    {"s", 's', kCstr, Check::kStr, Print::kCstr},
    {"S", 's', kCstr, Check::kStr, Print::kEstr},
    {"T", 's', "int64_t", Check::kTime, Print::kTime822},
    {"u", 'u', kXint, Check::kInt, Print::kUint},
    {"wc", 'c', "int", Check::kInt, Print::kSint},
    {"ws", 's', kWstrProto, Check::kWstr, Print::kWstr},
    {"x", 'x', kXint, Check::kInt, Print::kUint},
    {"X", 'X', kXint, Check::kInt, Print::kUint},
    {"Y", 's', "int64_t", Check::kTime, Print::kTime},
    {"%", '%', "void", Check::kPct, Print::kPct},
};

const Conversion* lookup(const std::string& name) {
  for (const auto& c : kConversions)
    if (name == c.name) return &c;
  return nullptr;
}

// One piece of a format: literal text, then (unless it is the tail) a
// conversion with its flags.
struct Piece {
  std::string prefix;
  const Conversion* conv = nullptr;
  bool alt = false, zpad = false, left = false, spos = false, group = false, space = false;
  bool agg = false, dynwidth = false, dynprec = false;
  int width = 0, prec = 0;
};

// dt_printf_create: split the format, look the conversions up. Errors are
// dtrace's words (they number conversions from 1).
Result<std::vector<Piece>> parse(const std::string& format) {
  std::vector<Piece> pieces;
  size_t q = 0;
  while (true) {
    const size_t p0 = format.find('%', q);
    if (p0 == std::string::npos) break;
    Piece pd;
    pd.prefix = format.substr(q, p0 - q);
    const auto number = static_cast<unsigned>(pieces.size() + 1);
    size_t p = p0;
    std::string name;
    int digits = 0, dot = 0;
    while (true) {
      const char c = ++p < format.size() ? format[p] : '\0';
      if (c >= '0' && c <= '9') {
        if (dot == 0 && digits == 0 && c == '0') {
          pd.zpad = true;
          pd.left = false;
          continue;
        }
        int n = 0;
        while (p < format.size() && format[p] >= '0' && format[p] <= '9') n = n * 10 + (format[p++] - '0');
        (dot ? pd.prec : pd.width) = n;
        --p;
        ++digits;
        continue;
      }
      switch (c) {
        case '#': pd.alt = true; continue;
        case '*': {
          bool& flag = dot ? pd.dynprec : pd.dynwidth;
          if (flag)
            return Error("format conversion #" + std::to_string(number) +
                         " has more than one '*' specified for the output " + (dot ? "precision" : "width"));
          flag = true;
          continue;
        }
        case '+': pd.spos = true; continue;
        case '-':
          pd.left = true;
          pd.zpad = false;
          continue;
        case '.':
          if (dot++ != 0) return Error("format conversion #" + std::to_string(number) + " has more than one '.' specified");
          digits = 0;
          continue;
        case '?': pd.width = 16; continue;  // the width of a 64-bit pointer
        case '@': pd.agg = true; continue;
        case '\'': pd.group = true; continue;
        case ' ': pd.space = true; continue;
        case '$':
          return Error("format conversion #" + std::to_string(number) + " uses unsupported positional format (%n$)");
        case '%':
          if (format[p - 1] == '%') break;  // %% is the "%" conversion
          return Error("format conversion #" + std::to_string(number) +
                       " cannot be combined with other format flags: %%");
        case '\0':
          return Error("format conversion #" + std::to_string(number) + " name expected before end of format string");
        case 'h':
        case 'l':
        case 'L':
        case 'w':
          if (name.size() < 6) name += c;
          continue;
        default: break;
      }
      name += c;
      break;
    }
    pd.conv = lookup(name);
    if (pd.conv == nullptr)
      return Error("format conversion #" + std::to_string(number) + " is undefined: %" + name);
    pieces.push_back(std::move(pd));
    q = p + 1;
  }
  if (q < format.size() || format.empty()) {
    Piece tail;
    tail.prefix = format.substr(q);
    pieces.push_back(std::move(tail));
  }
  return pieces;
}

const char* default_type_name(ArgType t) {
  switch (t) {
    case ArgType::kInteger: return "int64_t";
    case ArgType::kString: return "string";
    case ArgType::kStack: return "stack";
    case ArgType::kSym: return "_usymaddr";
    case ArgType::kAny: return "any";
  }
  return "?";
}

bool accepts(Check check, ArgType t) {
  if (t == ArgType::kAny) return true;
  const bool integer = t == ArgType::kInteger || t == ArgType::kSym;  // _usymaddr is an integer type
  switch (check) {
    case Check::kAddr:
    case Check::kUaddr:
    case Check::kCsi:
    case Check::kInt:
    case Check::kTime: return integer;
    case Check::kStack: return t == ArgType::kStack;
    case Check::kStr: return t == ArgType::kString;
    case Check::kWstr:
    case Check::kFp: return false;  // D has no floats nor wide strings here
    case Check::kPct: return true;
  }
  return false;
}

// dt_printf_validate. `foff` counts the arguments before the first value
// (printf's format is argument #1).
Status validate(const std::string& format, const char* func, const std::vector<ArgType>& args,
                const std::vector<std::string>& names, bool aggregation, const char* agg_type, bool exact) {
  if (format.empty()) return Error(std::string(func) + "( ) format string is empty");
  auto pieces = parse(format);
  if (!pieces) return pieces.error();
  constexpr int foff = 1;
  size_t next = 0;  // the next argument
  auto name_of = [&](size_t i) {
    return i < names.size() && !names[i].empty() ? names[i] : std::string(default_type_name(args[i]));
  };
  int index = 0;
  for (const Piece& pd : *pieces) {
    ++index;
    if (pd.conv == nullptr || pd.conv->check == Check::kPct) continue;
    const char* dyns[2];
    int dync = 0;
    if (pd.dynprec) dyns[dync++] = ".*";
    if (pd.dynwidth) dyns[dync++] = "*";
    for (; dync != 0; --dync) {
      if (next >= args.size())
        return Error(std::string(func) + "( ) prototype mismatch: conversion #" + std::to_string(index) + " (%" +
                     pd.conv->name + ") is missing a corresponding \"" + dyns[dync - 1] + "\" argument");
      if (args[next] != ArgType::kInteger && args[next] != ArgType::kAny)
        return Error(std::string(func) + "( ) argument #" + std::to_string(next + foff + 1) +
                     " is incompatible with conversion #" + std::to_string(index) + " prototype:\n\tconversion: % " +
                     dyns[dync - 1] + " " + pd.conv->name + "\n\t prototype: int\n\t  argument: " + name_of(next));
      ++next;
    }
    std::string what, type_name;
    ArgType type;
    if (pd.agg) {
      if (!aggregation)
        return Error(std::string("%@ conversion requires an aggregation and is not for use with ") + func + "( )");
      what = "aggregating action";
      type = ArgType::kInteger;
      type_name = agg_type;
    } else if (next >= args.size()) {
      return Error(std::string(func) + "( ) prototype mismatch: conversion #" + std::to_string(index) + " (%" +
                   pd.conv->name + ") is missing a corresponding value argument");
    } else {
      what = "argument #" + std::to_string(next + foff + 1);
      type = args[next];
      type_name = name_of(next);
      ++next;
    }
    if (!accepts(pd.conv->check, type))
      return Error(std::string(func) + "( ) " + what + " is incompatible with conversion #" + std::to_string(index) +
                   " prototype:\n\tconversion: %" + pd.conv->name + "\n\t prototype: " + pd.conv->proto +
                   "\n\t  argument: " + type_name);
  }
  if (exact && next < args.size())
    return Error(std::string(func) + "( ) prototype mismatch: only " + std::to_string(next) +
                 " arguments required by this format string");
  return ok_status();
}

// The C format of one conversion: "%" flags width .precision length conv.
std::string c_format(const Piece& pd, int width, int prec, const char* length, char conv, bool stack) {
  std::string f = "%";
  if (pd.alt) f += '#';
  if (pd.zpad) f += '0';
  if (width < 0 || pd.left) f += '-';
  if (pd.spos) f += '+';
  if (pd.group) f += '\'';
  if (pd.space) f += ' ';
  // A left-aligned stack takes its width as the indentation, not a field.
  if (stack && pd.left) width = 0;
  if (width != 0) f += std::to_string(width < 0 ? -width : width);
  if (prec > 0) f += "." + std::to_string(prec);
  f += length;
  f += conv;
  return f;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
template <class T>
void emit(std::string& out, const std::string& fmt, T value) {
  appendf(out, fmt.c_str(), value);
}
#pragma GCC diagnostic pop

// strchr2esc: C escapes for what does not print.
std::string escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\v': out += "\\v"; break;
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char b[8];
          std::snprintf(b, sizeof b, "\\%03o", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

// pfprint_time: ctime's fields rearranged as mdb's /Y: "1973 Dec  3 17:20:00"
// (local time, as dtrace prints it).
std::string time_text(uint64_t ns) {
  const auto sec = static_cast<time_t>(ns / 1000000000);
  char src[32];
  struct tm tm;
  if (localtime_r(&sec, &tm) == nullptr || asctime_r(&tm, src) == nullptr) return "?";
  std::string buf(src + 20, 4);
  buf.append(src + 3, 16);
  return buf;
}

std::string time822_text(uint64_t ns) {
  const auto sec = static_cast<time_t>(ns / 1000000000);
  struct tm tm;
  char buf[64];
  if (localtime_r(&sec, &tm) == nullptr || std::strftime(buf, sizeof buf, "%a, %d %b %G %T %Z", &tm) == 0) return "?";
  return buf;
}

// An integer conversion of a plain value: the value's size picks "ll" or
// 32 bits; %d and %i of an unsigned type print unsigned (pfcheck_dint).
void print_integer(std::string& out, const Piece& pd, int width, int prec, const Value& v) {
  const Print print = pd.conv->print;
  char conv = pd.conv->ofmt;
  bool is_signed = print == Print::kSint || (print == Print::kDint && v.kind == Kind::kInt);
  if (print == Print::kDint && !is_signed) conv = 'u';
  if (conv == 'c') {  // a character: int-sized whatever the argument
    emit(out, c_format(pd, width, prec, "", 'c', false), static_cast<int>(static_cast<int32_t>(v.bits)));
    return;
  }
  const int size = v.kind == Kind::kSym ? 8 : v.size();
  if (size == 8) {
    const std::string f = c_format(pd, width, prec, "ll", conv, false);
    if (is_signed) emit(out, f, static_cast<long long>(v.bits));
    else emit(out, f, static_cast<unsigned long long>(v.bits));
    return;
  }
  const std::string f = c_format(pd, width, prec, "", conv, false);
  if (is_signed) {
    int32_t x = static_cast<int32_t>(static_cast<uint32_t>(v.bits));
    if (size == 2) x = static_cast<int16_t>(static_cast<uint16_t>(v.bits));
    if (size == 1) x = static_cast<int8_t>(static_cast<uint8_t>(v.bits));
    emit(out, f, x);
  } else {
    uint32_t x = static_cast<uint32_t>(v.bits);
    if (size == 2) x = static_cast<uint16_t>(v.bits);
    if (size == 1) x = static_cast<uint8_t>(v.bits);
    emit(out, f, x);
  }
}

Status mismatch(const Piece& pd, int index, const char* what) {
  return Error(std::string("printf( ) conversion #") + std::to_string(index) + " (%" + pd.conv->name + ") cannot print " +
               what);
}

// One conversion of a plain value (an argument, or a key in printa).
Status print_value(std::string& out, const Piece& pd, int index, int width, int prec, const Value& v,
                   const PrintContext& ctx) {
  const bool integer = v.kind == Kind::kInt || v.kind == Kind::kUint || v.kind == Kind::kSym;
  switch (pd.conv->print) {
    case Print::kSint:
    case Print::kUint:
    case Print::kDint:
      if (!integer) return mismatch(pd, index, "a string or a stack");
      print_integer(out, pd, width, prec, v);
      return ok_status();
    case Print::kFp:
      if (!integer) return mismatch(pd, index, "a string or a stack");
      emit(out, c_format(pd, width, prec, "", pd.conv->ofmt, false),
           v.kind == Kind::kInt ? static_cast<double>(v.as_int()) : static_cast<double>(v.bits));
      return ok_status();
    case Print::kAddr:
    case Print::kUaddr:
      if (!integer) return mismatch(pd, index, "a string or a stack");
      emit(out, c_format(pd, width, prec, "", 's', false), detail::symbol_text(v, ctx).c_str());
      return ok_status();
    case Print::kStack: {
      if (v.kind != Kind::kStack) return mismatch(pd, index, "what is not a stack");
      int indent = 0;
      if (pd.dynwidth && width < 0) indent = -width;
      else if (pd.left) indent = width;
      detail::print_ustack(out, v, ctx, c_format(pd, width, prec, "", 's', true).c_str(), indent);
      return ok_status();
    }
    case Print::kTime:
    case Print::kTime822:
      if (!integer) return mismatch(pd, index, "a string or a stack");
      emit(out, c_format(pd, width, prec, "", 's', false),
           (pd.conv->print == Print::kTime ? time_text(v.bits) : time822_text(v.bits)).c_str());
      return ok_status();
    case Print::kCstr:
    case Print::kEstr: {
      if (v.kind != Kind::kString || ctx.strings == nullptr) return mismatch(pd, index, "what is not a string");
      const std::string& s = ctx.strings->text(static_cast<uint32_t>(v.bits));
      emit(out, c_format(pd, width, prec, "", 's', false),
           (pd.conv->print == Print::kEstr ? escape(s) : s).c_str());
      return ok_status();
    }
    case Print::kEchr: {
      if (!integer) return mismatch(pd, index, "a string or a stack");
      const std::string c(1, static_cast<char>(v.bits));
      emit(out, c_format(pd, width, prec, "", 's', false), escape(c).c_str());
      return ok_status();
    }
    case Print::kWstr: return mismatch(pd, index, "a wide string");
    case Print::kPct: out += '%'; return ok_status();
  }
  return ok_status();
}

// %@: the value of an aggregation entry, as dt_printf_format hands the
// aggregation's record to pfprint_average, pfprint_stddev, the quantize
// printers or the integer printers (count's value unsigned, the others
// signed).
Status print_agg_value(std::string& out, const Piece& pd, int index, int width, int prec, const Aggregation& agg,
                       const Entry& e, bool zoom) {
  const auto normal = static_cast<uint64_t>(agg.normal());
  const Print print = pd.conv->print;
  switch (agg.fn()) {
    case AggFn::kQuantize:
    case AggFn::kLquantize:
    case AggFn::kLlquantize: detail::print_histogram(out, agg, e, normal, zoom); return ok_status();
    default: break;
  }
  if (print != Print::kSint && print != Print::kUint && print != Print::kDint)
    return mismatch(pd, index, "an aggregation's value");
  char conv = pd.conv->ofmt;
  const bool count = agg.fn() == AggFn::kCount;
  uint64_t bits;
  switch (agg.fn()) {
    case AggFn::kAvg:  // pfprint_average divides unsigned
      bits = e.v[0] != 0 ? static_cast<uint64_t>(e.v[1]) / normal / static_cast<uint64_t>(e.v[0]) : 0;
      break;
    case AggFn::kStddev: bits = e.v[0] != 0 ? detail::stddev_of(e.v, normal) : 0; break;
    default:
      if (print == Print::kUint || (print == Print::kDint && count))
        bits = static_cast<uint64_t>(e.v[0]) / normal;
      else
        bits = static_cast<uint64_t>(detail::sdiv(e.v[0], static_cast<int64_t>(normal)));
      break;
  }
  if (print == Print::kDint && count) conv = 'u';
  if (conv == 'c') {
    emit(out, c_format(pd, width, prec, "", 'c', false), static_cast<int>(bits));
    return ok_status();
  }
  const std::string f = c_format(pd, width, prec, "ll", conv, false);
  if (conv == 'd' || conv == 'i') emit(out, f, static_cast<long long>(bits));
  else emit(out, f, static_cast<unsigned long long>(bits));
  return ok_status();
}

constexpr int64_t kMaxWidth = 65536;

// The engine of printf and printa (dt_printf_format): `args` the values
// (printa: the keys), `aggs`/`row` the aggregations whose values %@ takes.
Status run(std::string& out, const std::vector<Piece>& pieces, const Value* args, size_t n, const PrintContext& ctx,
           const std::vector<const Aggregation*>* aggs, const std::vector<const Entry*>* row) {
  size_t next = 0, curagg = 0;
  int index = 0;
  auto take_int = [&](int& into) -> Status {
    if (next >= n) return Error("printf( ) has too few arguments for its format");
    // Bounded: a width of 2^31 from a script would build a 2 GB string (and
    // negating INT_MIN overflows); no terminal line is 64k columns wide.
    into = static_cast<int>(std::clamp<int64_t>(args[next++].as_int(), -kMaxWidth, kMaxWidth));
    return ok_status();
  };
  for (const Piece& pd : pieces) {
    ++index;
    out += pd.prefix;
    if (pd.conv == nullptr) continue;
    if (pd.conv->print == Print::kPct) {
      out += '%';
      continue;
    }
    int width = pd.width, prec = pd.prec;
    if (pd.dynwidth) CALLSCOPE_CHECK(take_int(width));
    if (pd.dynprec) CALLSCOPE_CHECK(take_int(prec));
    if (pd.agg) {
      if (aggs == nullptr || row == nullptr || aggs->empty())
        return Error("%@ conversion requires an aggregation and is not for use with printf( )");
      CALLSCOPE_CHECK(print_agg_value(out, pd, index, width, prec, *(*aggs)[curagg], *(*row)[curagg], ctx.aggzoom));
      // Past the last aggregation, %@ repeats the last one (as dtrace).
      if (curagg + 1 < aggs->size()) ++curagg;
      continue;
    }
    if (next >= n) return Error("printf( ) has too few arguments for its format");
    CALLSCOPE_CHECK(print_value(out, pd, index, width, prec, args[next++], ctx));
  }
  return ok_status();
}

}  // namespace

Status format_printf(std::string& out, const std::string& format, const Value* args, size_t n,
                     const PrintContext& ctx) {
  auto pieces = parse(format);
  if (!pieces) return pieces.error();
  return run(out, *pieces, args, n, ctx, nullptr, nullptr);
}

Status check_printf(const std::string& format, const std::vector<ArgType>& args,
                    const std::vector<std::string>& type_names) {
  return validate(format, "printf", args, type_names, false, "int64_t", true);
}

Status check_printa(const std::string& format, const std::vector<ArgType>& keys, AggFn fn,
                    const std::vector<std::string>& type_names) {
  return validate(format, "printa", keys, type_names, true, fn == AggFn::kCount ? "uint64_t" : "int64_t", false);
}

Status check_printa_keys(const std::string& first, const std::vector<ArgType>& first_keys,
                         const std::vector<std::string>& first_names, const std::string& other,
                         const std::vector<ArgType>& other_keys, const std::vector<std::string>& other_names) {
  const size_t n = first_keys.size(), m = other_keys.size();
  if (n != m) {
    return Error("printa( ): @" + first + " and @" + other + " do not have matching key signatures: @" + first +
                 " has " + std::to_string(n) + " key" + (n == 1 ? "" : "s") + ", @" + other + " has " +
                 std::to_string(m) + " key" + (m == 1 ? "" : "s"));
  }
  auto name = [](const std::vector<ArgType>& t, const std::vector<std::string>& names, size_t i) {
    return i < names.size() && !names[i].empty() ? names[i] : std::string(default_type_name(t[i]));
  };
  auto integer = [](ArgType t) { return t == ArgType::kInteger || t == ArgType::kSym; };
  for (size_t i = 0; i < n; ++i) {
    const ArgType a = first_keys[i], b = other_keys[i];
    if (a == b || a == ArgType::kAny || b == ArgType::kAny || (integer(a) && integer(b))) continue;
    char line1[512], line2[512];
    std::snprintf(line1, sizeof line1, "%9s key #%zu: %s", first.c_str(), i + 1, name(first_keys, first_names, i).c_str());
    std::snprintf(line2, sizeof line2, "%9s key #%zu: %s", other.c_str(), i + 1, name(other_keys, other_names, i).c_str());
    return Error("printa( ): @" + other + "[ ] key #" + std::to_string(i + 1) + " is incompatible with @" + first +
                 ":\n" + line1 + "\n" + line2);
  }
  return ok_status();
}

Status printa(std::string& out, const std::string& format, const std::vector<const Aggregation*>& aggs,
              const PrintContext& ctx) {
  if (aggs.empty()) return Error("printa( ) needs an aggregation");
  if (format.empty()) {
    if (aggs.size() == 1) print_aggregation(out, *aggs[0], ctx);
    else detail::print_joined(out, aggs, ctx);
    return ok_status();
  }
  auto pieces = parse(format);
  if (!pieces) return pieces.error();
  if (aggs.size() == 1) {
    for (const Entry* e : detail::sorted_entries(*aggs[0], ctx)) {
      const std::vector<const Entry*> row{e};
      CALLSCOPE_CHECK(run(out, *pieces, e->key.v, e->key.n, ctx, &aggs, &row));
    }
  } else {
    std::vector<std::unique_ptr<Entry>> zeros;
    for (const auto& row : detail::joined_rows(aggs, ctx, zeros))
      CALLSCOPE_CHECK(run(out, *pieces, row[0]->key.v, row[0]->key.n, ctx, &aggs, &row));
  }
  for (const Aggregation* agg : aggs) agg->mark_printed();
  return ok_status();
}

// dt_consume_cpu's printing of a traced record.
void format_trace(std::string& out, const Value& v, const PrintContext& ctx) {
  switch (v.kind) {
    case Kind::kInt:
    case Kind::kUint:
      switch (v.size()) {
        case 4: appendf(out, ctx.quiet ? "%d" : " %8d", static_cast<int32_t>(static_cast<uint32_t>(v.bits))); break;
        case 2: appendf(out, ctx.quiet ? "%d" : " %5d", static_cast<int>(static_cast<uint16_t>(v.bits))); break;
        case 1: appendf(out, ctx.quiet ? "%d" : " %3d", static_cast<int>(static_cast<uint8_t>(v.bits))); break;
        default: appendf(out, ctx.quiet ? "%lld" : " %16lld", static_cast<long long>(v.bits)); break;
      }
      break;
    case Kind::kString: {
      const char* s = ctx.strings != nullptr ? ctx.strings->text(static_cast<uint32_t>(v.bits)).c_str() : "";
      if (ctx.quiet) out += s;
      else appendf(out, "  %-33s", s);
      break;
    }
    case Kind::kSym: appendf(out, "  %-50s", detail::symbol_text(v, ctx).c_str()); break;
    case Kind::kStack: detail::print_ustack(out, v, ctx, "%s", 14); break;
  }
}

void format_print(std::string& out, const Value& v, const std::string& type_name, const PrintContext& ctx) {
  std::string type = type_name;
  if (type.empty()) {
    switch (v.kind) {
      case Kind::kInt: type = v.size() == 8 ? "int64_t" : v.size() == 4 ? "int32_t" : v.size() == 2 ? "int16_t" : "char"; break;
      case Kind::kUint: type = v.size() == 8 ? "uint64_t" : v.size() == 4 ? "uint32_t" : v.size() == 2 ? "uint16_t" : "uint8_t"; break;
      case Kind::kString: type = "string"; break;
      case Kind::kStack: type = "stack"; break;
      case Kind::kSym: type = "_usymaddr"; break;
    }
  }
  out += type;
  out += ' ';
  switch (v.kind) {
    case Kind::kString:
      out += '"';
      if (ctx.strings != nullptr) out += ctx.strings->text(static_cast<uint32_t>(v.bits));
      out += '"';
      break;
    case Kind::kStack: detail::print_ustack(out, v, ctx, "%s", 14); return;
    default: {
      const int size = v.kind == Kind::kSym ? 8 : v.size();
      if (size == 1 && (type == "char" || type == "signed char" || type == "unsigned char")) {
        const auto c = static_cast<char>(v.bits);  // dt_print_int's characters
        if (c >= 0x20 && c < 0x7f) appendf(out, "'%c'", c);
        else if (c == 0) out += "'\\0'";
        else appendf(out, "'\\%03o'", static_cast<unsigned char>(c));
        break;
      }
      const uint64_t mask = size >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * size)) - 1;
      appendf(out, "%#llx", static_cast<unsigned long long>(v.bits & mask));
      break;
    }
  }
  out += '\n';
}

void format_probe_header(std::string& out) { appendf(out, "%3s %6s %32s\n", "CPU", "ID", "FUNCTION:NAME"); }

void format_probe_line(std::string& out, uint32_t cpu_column, uint32_t probe_id, const std::string& function,
                       const std::string& name) {
  const std::string both = function + ":" + name;
  appendf(out, "%3u %6u %32s ", cpu_column, probe_id, both.c_str());
}

void format_probe_end(std::string& out) { out += '\n'; }

}  // namespace callscope::query
