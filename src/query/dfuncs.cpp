// D's subroutines and actions as node functions (lang_exec.h): the string
// functions with D's edge cases (dtrace.c's DIF_SUBR_*), stacks and
// symbols, speculations, printing and the aggregation actions.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "query/lang_exec.h"
#include "query/options.h"

namespace callscope::query {

namespace {

Value arg(const Node& n, Ctx& c, size_t i) { return n.args[i]->fn(*n.args[i], c); }
const std::string& sarg(const Node& n, Ctx& c, size_t i) { return text_of(c, arg(n, c, i)); }

Value fn_strlen(const Node& n, Ctx& c) { return Value::of_uint(sarg(n, c, 0).size()); }

Value fn_strjoin(const Node& n, Ctx& c) {
  std::string s = sarg(n, c, 0);
  s += sarg(n, c, 1);
  return make_string(c, s);
}

// substr(s, index [, length]): negative index counts from the end, a
// negative length leaves that many off the end; out of range gives "".
Value fn_substr(const Node& n, Ctx& c) {
  const std::string s = sarg(n, c, 0);
  const int64_t len = static_cast<int64_t>(s.size());
  int64_t index = arg(n, c, 1).as_int();
  int64_t remaining = n.args.size() > 2 ? arg(n, c, 2).as_int() : len;
  if (index < 0) {
    index += len;
    if (index < 0 && index + remaining > 0) {
      remaining += index;
      index = 0;
    }
  }
  if (index >= len || index < 0) remaining = 0;
  else if (remaining < 0) remaining += len - index;
  else if (index + remaining > len) remaining = len - index;
  if (remaining <= 0) return make_string(c, "");
  return make_string(c, std::string_view(s).substr(static_cast<size_t>(index), static_cast<size_t>(remaining)));
}

Value fn_strstr(const Node& n, Ctx& c) {
  const std::string s = sarg(n, c, 0);
  const size_t at = s.find(sarg(n, c, 1));
  return at == std::string::npos ? make_string(c, "") : make_string(c, std::string_view(s).substr(at));
}

Value fn_strchr(const Node& n, Ctx& c) {
  const std::string s = sarg(n, c, 0);
  const char ch = static_cast<char>(arg(n, c, 1).as_int());
  const size_t at = n.slot == static_cast<uint32_t>(Func::kStrchr) ? s.find(ch) : s.rfind(ch);
  return at == std::string::npos ? make_string(c, "") : make_string(c, std::string_view(s).substr(at));
}

// index(s, sub [, start]) and rindex: -1 when not found, as D.
Value fn_index(const Node& n, Ctx& c) {
  const std::string s = sarg(n, c, 0);
  const std::string sub = sarg(n, c, 1);
  const bool reverse = n.slot == static_cast<uint32_t>(Func::kRindex);
  const int64_t len = static_cast<int64_t>(s.size());
  int64_t start = n.args.size() > 2 ? arg(n, c, 2).as_int() : (reverse ? len : 0);
  size_t at;
  if (!reverse) {
    if (start < 0) start = 0;
    if (start > len) return Value::of_int32(-1);
    at = s.find(sub, static_cast<size_t>(start));
  } else {
    if (start < 0) return Value::of_int32(-1);
    at = s.rfind(sub, static_cast<size_t>(std::min(start, len)));
  }
  return Value::of_int32(at == std::string::npos ? -1 : static_cast<int32_t>(at));
}

// basename and dirname as dtrace.c computes them ("/" -> "/", "" -> ".").
Value fn_basedir(const Node& n, Ctx& c) {
  std::string s = sarg(n, c, 0);
  const bool base = n.slot == static_cast<uint32_t>(Func::kBasename);
  if (s.empty()) return make_string(c, ".");
  size_t end = s.size();
  while (end > 1 && s[end - 1] == '/') --end;  // trailing slashes
  if (end == 1 && s[0] == '/') return make_string(c, "/");
  const size_t slash = s.rfind('/', end - 1);
  if (base) return make_string(c, slash == std::string::npos ? s.substr(0, end) : s.substr(slash + 1, end - slash - 1));
  if (slash == std::string::npos) return make_string(c, ".");
  size_t d = slash;
  while (d > 0 && s[d - 1] == '/') --d;
  return make_string(c, d == 0 ? "/" : s.substr(0, d));
}

// cleanpath(s): "//", "/./" and "/NAME/../" out, as dtrace.c does it (a
// "/." at the end stays; "/.." at the end leaves the "/" before it).
Value fn_cleanpath(const Node& n, Ctx& c) {
  const std::string s = sarg(n, c, 0);
  const auto at = [&s](size_t k) { return k < s.size() ? s[k] : '\0'; };
  std::string d;
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '/') {
      d += s[i++];
      continue;
    }
    const char c1 = at(i + 1), c2 = at(i + 2), c3 = at(i + 3);
    if (c1 == '/' || (c1 == '.' && c2 == '/')) {  // "//", "/./": the first slash (and dot) go
      i += c1 == '/' ? 1 : 2;
    } else if (c1 != '.' || c2 != '.' || (c3 != '/' && c3 != '\0')) {
      d += '/';  // a name (".x", "..x" too): copied
      ++i;
    } else {  // "/../" or a final "/..": back over the name before it
      const size_t slash = d.rfind('/');
      d.resize(slash == std::string::npos ? 0 : slash);
      i += 3;
      if (c3 == '\0') d += '/';
    }
  }
  return make_string(c, d);
}

// strtok(s, delimiters), and strtok(NULL, delimiters) going on in the
// string the firing gave last: the next token, "" when none is left
// (dtrace's NULL).
Value fn_strtok(const Node& n, Ctx& c) {
  const Value first = arg(n, c, 0);
  const std::string delims = sarg(n, c, 1);
  std::optional<std::string>& rest = c.s->strtok_rest;
  if (first.kind == Kind::kString) rest = text_of(c, first);
  if (!rest) return make_string(c, "");
  const std::string& s = *rest;
  const size_t begin = s.find_first_not_of(delims);
  if (begin == std::string::npos) {
    rest.reset();
    return make_string(c, "");
  }
  const size_t end = s.find_first_of(delims, begin);
  const std::string token = s.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  if (end == std::string::npos)
    rest = "";
  else
    rest = s.substr(end + 1);
  return make_string(c, token);
}

Value fn_lltostr(const Node& n, Ctx& c) {
  const int64_t v = arg(n, c, 0).as_int();
  const int64_t base = n.args.size() > 1 ? arg(n, c, 1).as_int() : 10;
  if (base < 2 || base > 36) {
    c.fault = "illegal operation";
    return make_string(c, "");
  }
  // Base 10 prints the sign; other bases print the two's complement bits.
  uint64_t u = base == 10 && v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits;
  do {
    const int d = static_cast<int>(u % static_cast<uint64_t>(base));
    digits += static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
    u /= static_cast<uint64_t>(base);
  } while (u);
  if (base == 10 && v < 0) digits += '-';
  else if (base == 16) digits += "x0";
  else if (base == 8) digits += '0';
  std::reverse(digits.begin(), digits.end());
  return make_string(c, digits);
}

Value fn_strtoll(const Node& n, Ctx& c) {
  const std::string s = sarg(n, c, 0);
  const int64_t base = n.args.size() > 1 ? arg(n, c, 1).as_int() : 10;
  if (base != 0 && (base < 2 || base > 36)) {
    c.fault = "illegal operation";
    return Value::of_int(0);
  }
  return Value::of_int(static_cast<int64_t>(std::strtoll(s.c_str(), nullptr, static_cast<int>(base))));
}

// D's stringof of a string: the string.
Value fn_stringof(const Node& n, Ctx& c) { return arg(n, c, 0); }

Value fn_case(const Node& n, Ctx& c) {
  std::string s = sarg(n, c, 0);
  const bool upper = n.slot == static_cast<uint32_t>(Func::kToupper);
  for (char& ch : s) ch = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(ch)) : std::tolower(static_cast<unsigned char>(ch)));
  return make_string(c, s);
}

// The call path innermost first, at most `n.k.bits` frames (0: all).
Value fn_ustack(const Node& n, Ctx& c) {
  const Firing& f = *c.f;
  size_t count = f.nframes;
  if (n.k.bits && n.k.bits < count) count = n.k.bits;
  auto& fr = c.s->frames;
  fr.clear();
  for (size_t i = 0; i < count; ++i) fr.push_back(f.frames[f.nframes - 1 - i]);
  Value v = Value::of_stack(c.s->stacks.intern(f.process, fr.data(), fr.size()));
  v.process = f.process;
  return v;
}

Value fn_sym(const Node& n, Ctx& c) {
  const uint8_t form = n.slot == static_cast<uint32_t>(Func::kUfunc) ? 0 : n.slot == static_cast<uint32_t>(Func::kUmod) ? 1 : 2;
  // Keyed as libdtrace keys them: by the function (or module) that holds
  // the address, not the address (Stacks::normalize).
  return Value::of_sym(c.f->process, c.s->stacks.normalize(c.f->process, arg(n, c, 0).as_uint(), form), form);
}

Value fn_speculation(const Node&, Ctx& c) {
  auto& specs = c.s->specs;
  for (size_t i = 1; i < specs.size(); ++i)
    if (!specs[i].busy) {
      specs[i].busy = true;
      specs[i].buf.clear();
      return Value::of_int32(static_cast<int32_t>(i));
    }
  ++c.s->spec_drops;  // all buffers busy: D gives 0, and what is speculated on 0 is dropped
  return Value::of_int32(0);
}

Value fn_rand(const Node&, Ctx& c) {
  uint64_t& x = c.s->rand_state;  // xorshift64: D's rand() promises no quality either
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  return Value::of_int32(static_cast<int32_t>(x & 0x7fffffff));
}

Value none() { return Value::of_int(0); }

Value fn_printf(const Node& n, Ctx& c) {
  Value vals[64];
  const size_t count = std::min<size_t>(n.args.size() - 1, 64);
  for (size_t i = 0; i < count; ++i) vals[i] = arg(n, c, i + 1);
  if (c.fault) return none();
  record(c);
  c.s->pctx.process = c.f->process;
  auto st = format_printf(*c.out, n.text, vals, count, c.s->pctx);
  if (!st) c.fault = "illegal operation";
  return none();
}

Value fn_trace(const Node& n, Ctx& c) {
  const Value v = arg(n, c, 0);
  if (c.fault) return none();
  record(c);
  c.s->pctx.process = c.f->process;
  format_trace(*c.out, v, c.s->pctx);
  return none();
}

Value fn_print(const Node& n, Ctx& c) {
  const Value v = arg(n, c, 0);
  if (c.fault) return none();
  record(c);
  c.s->pctx.process = c.f->process;
  format_print(*c.out, v, n.text, c.s->pctx);
  return none();
}

// ustack() as a statement: the stack is printed, as trace(ustack()).
Value fn_ustack_action(const Node& n, Ctx& c) {
  const Value v = fn_ustack(n, c);
  record(c);
  format_trace(*c.out, v, c.s->pctx);
  return none();
}

Value fn_printa(const Node& n, Ctx& c) {
  record(c);
  std::vector<const Aggregation*> aggs;
  for (const Node* a : n.args) aggs.push_back(c.s->aggs[a->slot].get());
  c.s->pctx.process = c.f->process;
  // Without a format, several aggregations are one table of their joined
  // keys, a column each (dtrace's layout), not one table after another.
  auto st = printa(*c.out, n.prefix ? n.text : std::string(), aggs, c.s->pctx);
  if (!st) c.fault = "illegal operation";
  return none();
}

Value fn_exit(const Node& n, Ctx& c) {
  const Value v = arg(n, c, 0);
  if (c.fault) return none();
  record(c);
  // The last exit() says the status: END's overrides a clause's, as in dtrace.
  c.s->exited = true;
  c.s->exit_status = static_cast<int>(v.as_int());
  return none();
}

// setopt(name [, value]): options that change while the script runs
// (compile.cpp lets no other through); those that mean nothing here
// (switchrate, ...) are accepted and change nothing.
Value fn_setopt(const Node& n, Ctx& c) {
  const std::string name = sarg(n, c, 0);
  const std::string value = n.args.size() > 1 ? sarg(n, c, 1) : "";
  if (c.fault) return none();
  PrintContext& p = c.s->pctx;
  const bool on = option_set({{name, value}}, name);
  if (name == "quiet") c.s->quiet = p.quiet = on;
  else if (name == "aggsortkey") p.aggsortkey = on;
  else if (name == "aggsortrev") p.aggsortrev = on;
  else if (name == "aggzoom") p.aggzoom = on;
  else if (name == "aggsortpos") p.aggsortpos = std::atoi(value.c_str());
  else if (name == "aggsortkeypos") p.aggsortkeypos = std::atoi(value.c_str());
  return none();
}

Value fn_speculate(const Node& n, Ctx& c) {
  const int64_t id = arg(n, c, 0).as_int();
  auto& specs = c.s->specs;
  if (id > 0 && static_cast<size_t>(id) < specs.size() && specs[static_cast<size_t>(id)].busy) {
    c.out = &specs[static_cast<size_t>(id)].buf;
    c.out_mark = c.out->size();
  } else {
    c.discard_rest = true;  // an inactive speculation: the rest of the clause is dropped
    if (id != 0) ++c.s->spec_drops;
  }
  return none();
}

Value fn_commit(const Node& n, Ctx& c) {
  const int64_t id = arg(n, c, 0).as_int();
  auto& specs = c.s->specs;
  record(c);
  if (id > 0 && static_cast<size_t>(id) < specs.size() && specs[static_cast<size_t>(id)].busy) {
    auto& sp = specs[static_cast<size_t>(id)];
    if (n.slot == static_cast<uint32_t>(Func::kCommit)) c.s->committed += sp.buf;
    sp.buf.clear();
    sp.busy = false;
  }
  return none();
}

Value fn_aggact(const Node& n, Ctx& c) {
  Aggregation& a = *c.s->aggs[n.args[0]->slot];
  const auto f = static_cast<Func>(n.slot);
  const int64_t v = n.args.size() > 1 ? arg(n, c, 1).as_int() : 0;
  if (c.fault) return none();
  record(c);
  switch (f) {
    case Func::kTrunc:
      if (n.args.size() > 1) a.trunc(v, &c.s->pctx);
      else a.trunc();
      break;
    case Func::kClear: a.clear(); break;
    case Func::kNormalize:
      if (v == 0) {
        c.fault = "divide-by-zero";
        break;
      }
      if (!a.normalize(v)) c.fault = "divide-by-zero";
      break;
    default: a.denormalize(); break;
  }
  return none();
}

}  // namespace

NodeFn function_fn(Func f) {
  switch (f) {
    case Func::kStrlen: return fn_strlen;
    case Func::kStrjoin: return fn_strjoin;
    case Func::kSubstr: return fn_substr;
    case Func::kStrstr: return fn_strstr;
    case Func::kStrchr: case Func::kStrrchr: return fn_strchr;
    case Func::kIndex: case Func::kRindex: return fn_index;
    case Func::kBasename: case Func::kDirname: return fn_basedir;
    case Func::kLltostr: return fn_lltostr;
    case Func::kStrtoll: return fn_strtoll;
    case Func::kToupper: case Func::kTolower: return fn_case;
    case Func::kUstack: return fn_ustack;
    case Func::kUfunc: case Func::kUmod: case Func::kUsym: return fn_sym;
    case Func::kSpeculation: return fn_speculation;
    case Func::kRand: return fn_rand;
    case Func::kStringof: return fn_stringof;
    case Func::kStrtok: return fn_strtok;
    case Func::kCleanpath: return fn_cleanpath;
    case Func::kSetopt: return fn_setopt;
    case Func::kPrintf: return fn_printf;
    case Func::kTrace: return fn_trace;
    case Func::kPrint: return fn_print;
    case Func::kPrinta: return fn_printa;
    case Func::kExit: return fn_exit;
    case Func::kSpeculate: return fn_speculate;
    case Func::kCommit: case Func::kDiscard: return fn_commit;
    case Func::kTrunc: case Func::kClear: case Func::kNormalize: case Func::kDenormalize: return fn_aggact;
  }
  return nullptr;
}

// Statement form of ustack().
NodeFn ustack_action_fn() { return fn_ustack_action; }

}  // namespace callscope::query
