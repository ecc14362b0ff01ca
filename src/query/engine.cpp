// The interpreter (engine.h): builds the closures of lang_exec.h from the
// compiled script once, then runs the enabled clauses of each firing:
// predicates, variables of every scope, operators with C's rules on 64-bit
// integers, aggregations, the probe line, runtime faults and ERROR.
#include <algorithm>
#include <cstring>

#include "query/dnames.h"
#include "query/lang_exec.h"
#include "query/translators.h"

namespace callscope::query {

namespace {

// --- leaves -----------------------------------------------------------

Value n_const(const Node& n, Ctx&) { return n.k; }

Value uint32(uint32_t v) { return Value::of_sized(v, 4, false); }

// An integer of `bytes` bytes: narrower results wrap as C's would.
Value make_int(Kind kind, uint8_t bytes, uint64_t v) {
  if (bytes && bytes < 8) {
    const unsigned bits = bytes * 8u;
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    v &= mask;
    if (kind == Kind::kInt && (v >> (bits - 1)) & 1) v |= ~mask;
  }
  Value r = Value::of_sized(static_cast<int64_t>(v), bytes ? bytes : 8, kind == Kind::kInt);
  return r;
}

Value b_probeprov(const Node&, Ctx& c) { return Value::of_string(c.f->probe->provider); }
Value b_probemod(const Node&, Ctx& c) { return Value::of_string(c.f->probe->module); }
Value b_probefunc(const Node&, Ctx& c) { return Value::of_string(c.f->probe->function); }
Value b_probename(const Node&, Ctx& c) { return Value::of_string(c.f->probe->name); }
Value b_pid(const Node&, Ctx& c) { return Value::of_int32(static_cast<int32_t>(c.f->pid)); }
Value b_ppid(const Node&, Ctx& c) { return Value::of_int32(static_cast<int32_t>(c.f->ppid)); }
Value b_tid(const Node&, Ctx& c) { return Value::of_int32(static_cast<int32_t>(c.f->tid)); }
Value b_execname(const Node&, Ctx& c) { return Value::of_string(c.f->execname); }
Value b_timestamp(const Node&, Ctx& c) { return Value::of_uint(c.f->timestamp); }
Value b_walltimestamp(const Node&, Ctx& c) { return Value::of_uint(c.f->walltimestamp); }
Value b_epid(const Node&, Ctx& c) { return uint32(c.epid); }
Value b_id(const Node&, Ctx& c) { return uint32(c.f->probe->id); }
template <int N>
Value b_arg(const Node&, Ctx& c) {
  return Value::of_int(c.f->arg[N]);
}
Value b_errno(const Node&, Ctx& c) { return Value::of_int32(c.f->errno_value); }
Value b_cpu(const Node&, Ctx& c) { return Value::of_int32(c.f->cpu); }
Value b_vtimestamp(const Node&, Ctx& c) { return Value::of_uint(c.f->vtimestamp); }
// self->a[k]'s thread: whose self-> variables the firing has.
Value b_self_thread(const Node&, Ctx& c) {
  return Value::of_uint(c.f->self_thread != Firing::kNoSelf ? c.f->self_thread : c.f->thread);
}
Value b_ustackdepth(const Node&, Ctx& c) { return uint32(c.f->nframes); }
// The caller of the function the probe is in: the frame below it.
Value b_ucaller(const Node&, Ctx& c) {
  return Value::of_uint(c.f->nframes >= 2 ? c.f->frames[c.f->nframes - 2] : 0);
}
Value b_duration(const Node&, Ctx& c) { return Value::of_uint(c.f->duration); }
Value b_selfduration(const Node&, Ctx& c) { return Value::of_uint(c.f->selfduration); }
// Calls between the thread's outermost function and this one (0 for it).
Value b_depth(const Node&, Ctx& c) { return Value::of_int32(c.f->nframes ? static_cast<int32_t>(c.f->nframes - 1) : 0); }

// A translated structure's member (translators.h).
Value n_member(const Node& n, Ctx& c) {
  return member_value(static_cast<Member>(n.slot), static_cast<MemberOf>(n.bits), *c.f);
}

constexpr NodeFn kBuiltins[] = {
    b_probeprov, b_probemod, b_probefunc, b_probename, b_pid, b_ppid, b_tid, b_execname, b_timestamp,
    b_walltimestamp, b_epid, b_id, b_arg<0>, b_arg<1>, b_ustackdepth, b_ucaller, b_duration, b_selfduration,
    b_depth, b_arg<2>, b_arg<3>, b_arg<4>, b_arg<5>, b_arg<6>, b_arg<7>, b_arg<8>, b_arg<9>, b_errno, b_cpu, b_vtimestamp, b_self_thread,
};

// --- variables ----------------------------------------------------------

std::vector<Value>& thread_vars(Ctx& c) {
  auto& th = c.s->threads;
  const uint32_t who = c.f->self_thread != Firing::kNoSelf ? c.f->self_thread : c.f->thread;
  if (who >= th.size()) th.resize(who + 1);
  auto& v = th[who];
  if (v.empty()) v = c.s->thread_defaults;
  return v;
}

void eval_key(const Node& n, Ctx& c, Key& k) {
  k.n = static_cast<uint8_t>(n.args.size());
  for (size_t i = 0; i < n.args.size(); ++i) k.v[i] = n.args[i]->fn(*n.args[i], c);
}

Value v_global(const Node& n, Ctx& c) { return c.s->globals[n.slot]; }
Value v_thread(const Node& n, Ctx& c) { return thread_vars(c)[n.slot]; }
Value v_clause(const Node& n, Ctx& c) { return c.s->clause_vars[n.slot]; }
Value v_array(const Node& n, Ctx& c) {
  Key k;
  eval_key(n, c, k);
  const auto& m = c.s->arrays[n.slot];
  auto it = m.find(k);
  return it == m.end() ? n.k : it->second;
}

// Where a variable lives; for an array element, `key` receives its key
// (evaluated once) and the element is created.
Value* ref(const Node& lv, Ctx& c, Key& key) {
  switch (static_cast<VarKind>(lv.lkind)) {
    case VarKind::kGlobal: return &c.s->globals[lv.slot];
    case VarKind::kThread: return &thread_vars(c)[lv.slot];
    case VarKind::kClause: return &c.s->clause_vars[lv.slot];
    default: {
      auto& m = c.s->arrays[lv.slot];
      auto it = m.find(key);
      if (it == m.end()) it = m.emplace(key, lv.k).first;
      return &it->second;
    }
  }
}

// --- operators ----------------------------------------------------------

Value arith(BinOp o, uint64_t x, uint64_t y, Kind kind, uint8_t bytes, Ctx& c) {
  const bool u = kind == Kind::kUint;
  uint64_t r = 0;
  switch (o) {
    case BinOp::kAdd: r = x + y; break;
    case BinOp::kSub: r = x - y; break;
    case BinOp::kMul: r = x * y; break;
    case BinOp::kDiv:
    case BinOp::kMod:
      if (y == 0) {
        c.fault = "divide-by-zero";
        break;
      }
      if (u) r = o == BinOp::kDiv ? x / y : x % y;
      else if (static_cast<int64_t>(y) == -1) r = o == BinOp::kDiv ? 0 - x : 0;  // INT64_MIN / -1 wraps, as the hardware would not
      else r = static_cast<uint64_t>(o == BinOp::kDiv ? static_cast<int64_t>(x) / static_cast<int64_t>(y)
                                                      : static_cast<int64_t>(x) % static_cast<int64_t>(y));
      break;
    case BinOp::kAnd: r = x & y; break;
    case BinOp::kOr: r = x | y; break;
    case BinOp::kXor: r = x ^ y; break;
    case BinOp::kShl: r = x << (y & 63); break;
    case BinOp::kShr: r = u ? x >> (y & 63) : static_cast<uint64_t>(static_cast<int64_t>(x) >> (y & 63)); break;
  }
  return make_int(kind, bytes, r);
}

template <BinOp O>
Value n_bin(const Node& n, Ctx& c) {
  const Value a = n.a->fn(*n.a, c);
  const Value b = n.b->fn(*n.b, c);
  return arith(O, a.bits, b.bits, n.k.kind, static_cast<uint8_t>(n.k.size()), c);
}

// Comparisons: strings by content, integers signed unless either operand
// is unsigned (C's usual conversions on 64-bit operands).
enum class Cmp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
template <Cmp C>
Value n_cmp(const Node& n, Ctx& c) {
  const Value a = n.a->fn(*n.a, c);
  const Value b = n.b->fn(*n.b, c);
  int r;
  if (n.prefix) {  // strings
    r = a.bits == b.bits ? 0 : std::strcmp(text_of(c, a).c_str(), text_of(c, b).c_str());
  } else if (!n.sign) {
    r = a.bits < b.bits ? -1 : a.bits > b.bits;
  } else {
    r = a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int();
  }
  bool v = false;
  switch (C) {
    case Cmp::kEq: v = r == 0; break;
    case Cmp::kNe: v = r != 0; break;
    case Cmp::kLt: v = r < 0; break;
    case Cmp::kLe: v = r <= 0; break;
    case Cmp::kGt: v = r > 0; break;
    case Cmp::kGe: v = r >= 0; break;
  }
  return Value::of_int32(v);
}

// A string is true when not empty: id 0 is "", so bits works for both.
inline bool truthy(const Value& v) { return v.bits != 0; }

Value n_and(const Node& n, Ctx& c) { return Value::of_int32(truthy(n.a->fn(*n.a, c)) && truthy(n.b->fn(*n.b, c))); }
Value n_or(const Node& n, Ctx& c) { return Value::of_int32(truthy(n.a->fn(*n.a, c)) || truthy(n.b->fn(*n.b, c))); }
Value n_xor(const Node& n, Ctx& c) { return Value::of_int32(truthy(n.a->fn(*n.a, c)) != truthy(n.b->fn(*n.b, c))); }
Value n_not(const Node& n, Ctx& c) { return Value::of_int32(!truthy(n.a->fn(*n.a, c))); }
Value n_neg(const Node& n, Ctx& c) { return make_int(n.k.kind, static_cast<uint8_t>(n.k.size()), 0 - n.a->fn(*n.a, c).bits); }
Value n_bitnot(const Node& n, Ctx& c) { return make_int(n.k.kind, static_cast<uint8_t>(n.k.size()), ~n.a->fn(*n.a, c).bits); }
Value n_ternary(const Node& n, Ctx& c) {
  return truthy(n.a->fn(*n.a, c)) ? n.b->fn(*n.b, c) : n.c->fn(*n.c, c);
}

Value n_cast(const Node& n, Ctx& c) {
  return make_int(n.sign ? Kind::kInt : Kind::kUint, static_cast<uint8_t>(n.bits / 8), n.a->fn(*n.a, c).bits);
}

bool is_zero(const Value& v) { return v.bits == 0; }

// After a store: an array element set to zero (or "") is deleted, as D
// frees a dynamic variable assigned zero.
void settle(const Node& lv, Ctx& c, const Key& key, const Value& v) {
  if (static_cast<VarKind>(lv.lkind) == VarKind::kArray && is_zero(v)) c.s->arrays[lv.slot].erase(key);
}

// A stored integer takes the variable's type (its first assignment's).
Value convert(Value v, const Node& lv) {
  if (v.is_integer() && lv.k.is_integer()) return make_int(lv.k.kind, static_cast<uint8_t>(lv.k.size()), v.bits);
  return v;
}

Value n_assign(const Node& n, Ctx& c) {
  Key key;
  if (static_cast<VarKind>(n.a->lkind) == VarKind::kArray) eval_key(*n.a, c, key);
  Value r = n.b->fn(*n.b, c);
  if (c.fault) return r;
  Value* p = ref(*n.a, c, key);
  if (n.prefix) r = arith(static_cast<BinOp>(n.op), p->bits, r.bits, n.a->k.kind, static_cast<uint8_t>(n.a->k.size()), c);  // compound
  r = convert(r, *n.a);
  *p = r;
  settle(*n.a, c, key, r);
  return r;
}

Value n_incdec(const Node& n, Ctx& c) {
  Key key;
  if (static_cast<VarKind>(n.a->lkind) == VarKind::kArray) eval_key(*n.a, c, key);
  Value* p = ref(*n.a, c, key);
  const Value old = *p;
  const Value now = convert(make_int(old.kind, static_cast<uint8_t>(old.size()), n.op ? old.bits - 1 : old.bits + 1), *n.a);
  *p = now;
  settle(*n.a, c, key, now);
  return n.prefix ? now : old;
}

// --- statements ---------------------------------------------------------

Value n_agg(const Node& n, Ctx& c) {
  Key& k = n.key;
  eval_key(n, c, k);
  const int64_t v = n.a ? n.a->fn(*n.a, c).as_int() : 0;
  const int64_t incr = n.b ? n.b->fn(*n.b, c).as_int() : 1;
  if (!c.fault) c.s->aggs[n.slot]->add(k, v, incr);
  return Value{};
}

// An aggregation statement keyed by the probe's names alone: the key is
// made and looked up once per probe.
Aggregation::Entry* probe_entry(const Node& n, Ctx& c, Aggregation& agg) {
  const uint32_t id = c.f->probe->id;
  if (n.by_probe.size() <= id) n.by_probe.resize(id + 1, {0, nullptr});
  auto& [generation, entry] = n.by_probe[id];
  if (!entry || generation != agg.generation()) {
    eval_key(n, c, n.key);
    entry = agg.entry(n.key);
    generation = agg.generation();
  }
  return entry;
}

Value n_agg_by_probe(const Node& n, Ctx& c) {
  Aggregation& agg = *c.s->aggs[n.slot];
  Aggregation::Entry* entry = probe_entry(n, c, agg);
  const int64_t v = n.a ? n.a->fn(*n.a, c).as_int() : 0;
  const int64_t incr = n.b ? n.b->fn(*n.b, c).as_int() : 1;
  if (!c.fault) agg.add_to(entry, v, incr);
  return Value{};
}

Value n_if(const Node& n, Ctx& c) {
  const bool t = truthy(n.a->fn(*n.a, c));
  if (c.fault) return Value{};
  for (const Node* s : t ? n.args : n.b->args) {
    s->fn(*s, c);
    if (c.fault) break;
  }
  return Value{};
}

Value default_of(Type t, uint8_t bytes = 8) {
  switch (t) {
    case Type::kString: return Value::of_string(0);
    case Type::kUint: return make_int(Kind::kUint, bytes, 0);
    default: return make_int(Kind::kInt, bytes, 0);
  }
}

Kind kind_of(Type t) { return t == Type::kUint ? Kind::kUint : Kind::kInt; }

// --- building -------------------------------------------------------------

class Builder {
 public:
  explicit Builder(EngineState& s) : s_(s) {}

  Node& make(NodeFn fn) {
    s_.nodes.emplace_back();
    s_.nodes.back().fn = fn;
    return s_.nodes.back();
  }

  const Node* expr(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kInt: {
        Node& n = make(n_const);
        n.k = make_int(e.type == Type::kUint ? Kind::kUint : Kind::kInt, e.bytes, e.value);
        return &n;
      }
      case ExprKind::kString: {
        Node& n = make(n_const);
        n.k = Value::of_string(s_.strings.intern(e.name));
        return &n;
      }
      case ExprKind::kIdent:
        if (e.var == VarKind::kBuiltin) return &make(kBuiltins[e.slot]);
        if (e.var == VarKind::kMember) {
          Node& n = make(n_member);
          n.slot = e.slot;
          n.bits = static_cast<uint8_t>(e.value);
          return &n;
        }
        return var(e);
      case ExprKind::kSelf:
      case ExprKind::kThis:
      case ExprKind::kIndex:
        return var(e);
      case ExprKind::kAggRef: {
        Node& n = make(nullptr);
        n.slot = e.slot;
        return &n;
      }
      case ExprKind::kCast: {
        Node& n = make(n_cast);
        n.a = expr(*e.args[0]);
        n.bits = e.cast_bits;
        n.sign = e.cast_signed;
        return &n;
      }
      case ExprKind::kUnary: {
        if (e.op == "+") return expr(*e.args[0]);
        Node& n = make(e.op == "-" ? n_neg : e.op == "~" ? n_bitnot : n_not);
        n.a = expr(*e.args[0]);
        n.k = make_int(kind_of(e.type), e.bytes, 0);
        return &n;
      }
      case ExprKind::kIncDec: {
        Node& n = make(n_incdec);
        n.a = lvalue(*e.args[0]);
        n.op = e.op == "--";
        n.prefix = e.prefix;
        return &n;
      }
      case ExprKind::kBinary: return binary(e);
      case ExprKind::kTernary: {
        Node& n = make(n_ternary);
        n.a = expr(*e.args[0]);
        n.b = expr(*e.args[1]);
        n.c = expr(*e.args[2]);
        return &n;
      }
      case ExprKind::kAssign: {
        Node& n = make(n_assign);
        n.a = lvalue(*e.args[0]);
        n.b = expr(*e.args[1]);
        if (e.op != "=") {
          n.prefix = true;
          n.op = static_cast<uint8_t>(binop(e.op.substr(0, e.op.size() - 1)));
        }
        return &n;
      }
      case ExprKind::kCall: return call(e, false);
    }
    return &make(n_const);
  }

  const Node* stmt(const Stmt& st) {
    switch (st.kind) {
      case StmtKind::kExpr:
        if (st.expr->kind == ExprKind::kCall) return call(*st.expr, true);
        return expr(*st.expr);
      case StmtKind::kIf: {
        Node& n = make(n_if);
        n.a = expr(*st.expr);
        for (const auto& s : st.then_body) n.args.push_back(stmt(s));
        Node& other = make(nullptr);
        for (const auto& s : st.else_body) other.args.push_back(stmt(s));
        n.b = &other;
        return &n;
      }
      case StmtKind::kAgg: {
        Node& n = make(n_agg);
        n.slot = st.agg_slot;
        for (const auto& k : st.keys) n.args.push_back(expr(*k));
        const auto fn = s_.prog->aggs[st.agg_slot].fn;
        if (fn != AggFn::kCount) n.a = expr(*st.fn_args[0]);
        size_t incr = 0;
        if (fn == AggFn::kQuantize) incr = 1;
        if (fn == AggFn::kLquantize) incr = 4;
        if (fn == AggFn::kLlquantize) incr = 5;
        if (incr && st.fn_args.size() > incr) n.b = expr(*st.fn_args[incr]);
        const bool by_probe = std::all_of(n.args.begin(), n.args.end(), [](const Node* k) {
          return k->fn == b_probeprov || k->fn == b_probemod || k->fn == b_probefunc || k->fn == b_probename;
        });
        if (by_probe) n.fn = n_agg_by_probe;
        return &n;
      }
    }
    return &make(n_const);
  }

 private:
  static BinOp binop(const std::string& op) {
    if (op == "+") return BinOp::kAdd;
    if (op == "-") return BinOp::kSub;
    if (op == "*") return BinOp::kMul;
    if (op == "/") return BinOp::kDiv;
    if (op == "%") return BinOp::kMod;
    if (op == "&") return BinOp::kAnd;
    if (op == "|") return BinOp::kOr;
    if (op == "^") return BinOp::kXor;
    if (op == "<<") return BinOp::kShl;
    return BinOp::kShr;
  }

  Value default_for(const Expr& e) const {
    const auto& p = *s_.prog;
    switch (e.var) {
      case VarKind::kGlobal: return default_of(p.globals[e.slot].type, p.globals[e.slot].bytes);
      case VarKind::kArray: return default_of(p.arrays[e.slot].type, p.arrays[e.slot].bytes);
      case VarKind::kThread: return default_of(p.thread_vars[e.slot].type, p.thread_vars[e.slot].bytes);
      default: return default_of(p.clause_vars[e.slot].type, p.clause_vars[e.slot].bytes);
    }
  }

  const Node* var(const Expr& e) {
    NodeFn fn = e.var == VarKind::kGlobal ? v_global
                : e.var == VarKind::kThread ? v_thread
                : e.var == VarKind::kClause ? v_clause
                                            : v_array;
    Node& n = make(fn);
    n.slot = e.slot;
    n.lkind = static_cast<uint8_t>(e.var);
    n.k = default_for(e);
    for (const auto& k : e.args) n.args.push_back(expr(*k));
    return &n;
  }
  const Node* lvalue(const Expr& e) { return var(e); }

  const Node* binary(const Expr& e) {
    const std::string& op = e.op;
    NodeFn fn = nullptr;
    if (op == "&&") fn = n_and;
    else if (op == "||") fn = n_or;
    else if (op == "^^") fn = n_xor;
    else if (op == "==") fn = n_cmp<Cmp::kEq>;
    else if (op == "!=") fn = n_cmp<Cmp::kNe>;
    else if (op == "<") fn = n_cmp<Cmp::kLt>;
    else if (op == "<=") fn = n_cmp<Cmp::kLe>;
    else if (op == ">") fn = n_cmp<Cmp::kGt>;
    else if (op == ">=") fn = n_cmp<Cmp::kGe>;
    else {
      switch (binop(op)) {
        case BinOp::kAdd: fn = n_bin<BinOp::kAdd>; break;
        case BinOp::kSub: fn = n_bin<BinOp::kSub>; break;
        case BinOp::kMul: fn = n_bin<BinOp::kMul>; break;
        case BinOp::kDiv: fn = n_bin<BinOp::kDiv>; break;
        case BinOp::kMod: fn = n_bin<BinOp::kMod>; break;
        case BinOp::kAnd: fn = n_bin<BinOp::kAnd>; break;
        case BinOp::kOr: fn = n_bin<BinOp::kOr>; break;
        case BinOp::kXor: fn = n_bin<BinOp::kXor>; break;
        case BinOp::kShl: fn = n_bin<BinOp::kShl>; break;
        case BinOp::kShr: fn = n_bin<BinOp::kShr>; break;
      }
    }
    Node& n = make(fn);
    n.a = expr(*e.args[0]);
    n.b = expr(*e.args[1]);
    n.k = make_int(kind_of(e.type), e.bytes, 0);
    const Type ta = e.args[0]->type, tb = e.args[1]->type;
    // A string against NULL (compile.cpp lets only == and != through): against "".
    if ((ta == Type::kString) != (tb == Type::kString) && (op == "==" || op == "!=")) {
      Node& empty = make(n_const);
      empty.k = Value::of_string(s_.strings.intern(""));
      (ta == Type::kString ? n.b : n.a) = &empty;
    }
    n.prefix = ta == Type::kString || tb == Type::kString;  // comparisons: by content
    n.sign = !(ta == Type::kUint || tb == Type::kUint || ta == Type::kSym);
    return &n;
  }

  const Node* call(const Expr& e, bool statement) {
    const auto f = static_cast<Func>(e.slot);
    Node& n = make(f == Func::kUstack && statement ? ustack_action_fn() : function_fn(f));
    n.slot = e.slot;
    size_t first = 0;
    if ((f == Func::kPrintf || f == Func::kPrinta) && !e.args.empty() && e.args[0]->kind == ExprKind::kString) {
      n.text = e.args[0]->name;
      n.prefix = true;
      first = 1;
      if (f == Func::kPrintf) n.args.push_back(nullptr);  // printf's arguments start at 1
    }
    if (f == Func::kUstack) {
      n.k.bits = 0;
      if (!e.args.empty()) n.k.bits = e.args[0]->value;  // the compiler made it a constant
      return &n;
    }
    for (size_t i = first; i < e.args.size(); ++i) n.args.push_back(expr(*e.args[i]));
    if (f == Func::kPrint) n.text = d_type_name(*e.args[0]);
    return &n;
  }

  EngineState& s_;
};

std::string probe_name(const EngineState& s, const ProbeInfo& p) {
  return s.strings.text(p.provider) + ":" + s.strings.text(p.module) + ":" + s.strings.text(p.function) + ":" +
         s.strings.text(p.name);
}

}  // namespace

void record(Ctx& c) {
  if (c.line_printed || c.s->quiet) return;
  c.line_printed = true;
  if (!c.s->header_printed) {
    c.s->header_printed = true;
    format_probe_header(*c.out);
  }
  const ProbeInfo& p = *c.f->probe;
  format_probe_line(*c.out, c.f->thread, p.id, c.s->strings.text(p.function), c.s->strings.text(p.name));
}

Value make_string(Ctx& c, std::string_view s) {
  const size_t max = c.s->prog->strsize - 1;
  return Value::of_string(c.s->strings.intern(s.size() > max ? s.substr(0, max) : s));
}

struct Engine::State : EngineState {
  using EngineState::EngineState;

  void run(const Firing& f, const std::vector<Enabled>& enabled) {
    if (!clause_vars.empty()) clause_vars = clause_defaults;
    strtok_rest.reset();
    for (const Enabled& en : enabled) {
      // After exit() only END's clauses run (dtrace drains): not the
      // firing's clauses after the one that called it.
      if (exited && !is_end(*f.probe)) break;
      run_clause(f, clauses[en.clause], en.epid);
    }
  }

  bool is_end(const ProbeInfo& p) const {
    return strings.text(p.name) == "END" && strings.text(p.provider) == "dtrace";
  }

  void run_clause(const Firing& f, const Clause& cl, uint32_t epid) {
    Ctx c{this, &f, &out};
    c.epid = epid;
    c.out_mark = out.size();
    const bool had_header = header_printed;
    int action = 0;
    if (cl.predicate) {
      const Value v = cl.predicate->fn(*cl.predicate, c);
      if (!c.fault && !v.bits) return;
    }
    if (!c.fault) {
      if (cl.empty) record(c);
      for (const Node* st : cl.stmts) {
        ++action;
        st->fn(*st, c);
        if (c.fault || c.discard_rest) break;
      }
    }
    if (c.fault) {
      // D drops what the faulting clause recorded; its stores stay.
      c.out->resize(c.out_mark);
      committed.clear();
      if (!had_header) header_printed = false;
      fault(f, epid, c.fault, action);
      return;
    }
    if (c.line_printed) format_probe_end(*c.out);
    if (!committed.empty()) {
      out += committed;
      committed.clear();
    }
  }

  void fault(const Firing& f, uint32_t epid, const char* what, int action) {
    ++errors;
    messages += "callscope query: error on enabled probe ID " + std::to_string(epid) + " (ID " +
                std::to_string(f.probe->id) + ": " + probe_name(*this, *f.probe) + "): " + what +
                (action ? " in action #" + std::to_string(action) : std::string(" in predicate")) + "\n";
    if (!error_probe || in_error) return;
    const ProbeInfo& ep = *error_probe;
    if (ep.id >= by_probe.size() || by_probe[ep.id].empty()) return;
    Firing ef = f;
    ef.probe = &ep;
    ef.arg[0] = 0;  // D's ERROR: arg1 is the faulting enabled probe's ID
    ef.arg[1] = epid;
    in_error = true;
    run(ef, by_probe[ep.id]);
    in_error = false;
  }
};

Engine::Engine(std::shared_ptr<const Program> program, Strings& strings, Stacks& stacks, std::string& out) {
  auto prog = std::dynamic_pointer_cast<const CompiledProgram>(program);
  s_ = std::make_unique<State>(prog, strings, stacks, out);
  State& s = *s_;
  const auto& opts = prog->options();
  s.quiet = prog->quiet;
  s.pctx.strings = &strings;
  s.pctx.stacks = &stacks;
  s.pctx.aggsortkey = option_set(opts, "aggsortkey");
  s.pctx.aggsortrev = option_set(opts, "aggsortrev");
  s.pctx.aggzoom = option_set(opts, "aggzoom");
  auto num = [&](const char* name) {
    auto it = opts.find(name);
    return it == opts.end() ? 0 : std::atoi(it->second.c_str());
  };
  s.pctx.quiet = s.quiet;
  s.pctx.aggsortpos = num("aggsortpos");
  s.pctx.aggsortkeypos = num("aggsortkeypos");
  for (const auto& v : prog->globals) s.globals.push_back(default_of(v.type, v.bytes));
  for (const auto& v : prog->arrays) {
    s.arrays.emplace_back();
    s.array_defaults.push_back(default_of(v.type, v.bytes));
  }
  for (const auto& v : prog->thread_vars) s.thread_defaults.push_back(default_of(v.type, v.bytes));
  for (const auto& v : prog->clause_vars) s.clause_defaults.push_back(default_of(v.type, v.bytes));
  s.clause_vars = s.clause_defaults;
  for (const auto& a : prog->aggs) s.aggs.push_back(std::make_unique<Aggregation>(a.name, a.fn, a.params));
  s.specs.resize(static_cast<size_t>(prog->nspec) + 1);
  Builder b(s);
  for (const auto& cl : prog->script.clauses) {
    EngineState::Clause c;
    if (cl.predicate) c.predicate = b.expr(*cl.predicate);
    for (const auto& st : cl.body) c.stmts.push_back(b.stmt(st));
    c.empty = cl.body.empty();
    s.clauses.push_back(std::move(c));
  }
}

Engine::~Engine() = default;

void Engine::enable(const ProbeInfo& probe, size_t clause) {
  auto& s = *s_;
  if (probe.id >= s.by_probe.size()) {
    s.by_probe.resize(probe.id + 1);
    s.probe_info.resize(probe.id + 1);
  }
  s.by_probe[probe.id].push_back({static_cast<uint32_t>(clause), s.next_epid++});
  s.probe_info[probe.id] = probe;
}

void Engine::set_error_probe(const ProbeInfo& probe) { s_->error_probe = probe; }

void Engine::fire(const Firing& f) {
  const uint32_t id = f.probe->id;
  auto& bp = s_->by_probe;
  if (id >= bp.size() || bp[id].empty()) return;
  s_->run(f, bp[id]);
}

bool Engine::tallies(uint32_t probe) const {
  const auto& s = *s_;
  if (probe >= s.by_probe.size() || s.by_probe[probe].empty()) return false;
  for (const EngineState::Enabled& en : s.by_probe[probe]) {
    const EngineState::Clause& cl = s.clauses[en.clause];
    if (cl.predicate || cl.empty) return false;
    for (const Node* st : cl.stmts)
      if (st->fn != n_agg_by_probe || s.aggs[st->slot]->fn() != AggFn::kCount) return false;
  }
  return true;
}

void Engine::fire_tally(const Firing& f, uint64_t n) {
  auto& s = *s_;
  for (const EngineState::Enabled& en : s.by_probe[f.probe->id]) {
    for (const Node* st : s.clauses[en.clause].stmts) {
      Ctx c{&s, &f, &s.out};
      Aggregation& agg = *s.aggs[st->slot];
      agg.add_count(probe_entry(*st, c, agg), n);
    }
  }
}

bool Engine::exited() const { return s_->exited; }
int Engine::exit_status() const { return s_->exit_status; }

void Engine::finish() {
  auto& s = *s_;
  std::vector<const Aggregation*> aggs;
  for (const auto& a : s.aggs) aggs.push_back(a.get());
  print_aggregations_at_end(s.out, aggs, s.pctx);
  // Speculations never committed are dropped, as at dtrace's exit.
  for (auto& sp : s.specs) sp = {};
  if (s.spec_drops) {
    s.messages += "callscope query: " + std::to_string(s.spec_drops) + " speculative drop" + (s.spec_drops == 1 ? "" : "s") + "\n";
    s.spec_drops = 0;
  }
}

uint64_t Engine::errors() const { return s_->errors; }

std::string Engine::take_messages() {
  std::string m;
  m.swap(s_->messages);
  return m;
}

}  // namespace callscope::query
