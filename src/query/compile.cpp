// The semantic pass (compile.h) and compile() of engine.h: options and
// pragmas, names and types, aggregations' prototypes, actions' places.
#include "query/compile.h"

#include <algorithm>
#include <optional>
#include <set>

#include "query/agg_params.h"
#include "query/constant.h"
#include "query/translators.h"
#include "query/dnames.h"
#include "query/options.h"
#include "query/parser.h"

namespace callscope::query {

namespace {

using Vars = std::vector<VarInfo>;

bool find(const Vars& vars, const std::string& name, uint32_t& slot) {
  for (size_t i = 0; i < vars.size(); ++i)
    if (vars[i].name == name) {
      slot = static_cast<uint32_t>(i);
      return true;
    }
  return false;
}

ArgType arg_type(Type t) {
  switch (t) {
    case Type::kString: return ArgType::kString;
    case Type::kStack: return ArgType::kStack;
    case Type::kSym: return ArgType::kSym;
    default: return ArgType::kInteger;
  }
}

class Checker {
 public:
  Checker(CompiledProgram& p) : p_(p) {}

  std::optional<Error> run() {
    declare();
    if (err_) return err_;
    // Variables take the type of their first assignment, wherever it is in
    // the script (a clause may read self->ts before the clause that sets
    // it): passes that only learn types, then the pass that checks.
    for (int i = 0; i < 3; ++i) {
      infer_ = true;
      pass();
    }
    infer_ = false;
    pass();
    return err_;
  }

 private:
  struct ClauseState {
    bool recorded = false;     // a data-recording action so far
    bool speculated = false;   // speculate() so far
    bool committed = false;    // commit() or discard() so far
    bool aggregated = false;
  };

  // Declared variables exist, with their types, before any clause uses
  // them; a second declaration must say the same as the first, as in D.
  void declare() {
    for (const Decl& d : p_.script.decls) {
      if (err_) return;
      if (d.scope == ExprKind::kIdent &&
          (builtin_type(d.name) || refused_variable(d.name) || find_function(d.name) || refused_function(d.name)))
        return fail(d.line, "built-in identifier redeclared: " + d.name);
      if (d.is_inline) continue;
      Vars* vars = d.scope == ExprKind::kSelf   ? &p_.thread_vars
                   : d.scope == ExprKind::kThis ? &p_.clause_vars
                   : d.is_array                 ? &p_.arrays
                                                : &p_.globals;
      std::string keys_named;
      std::vector<Type> keys;
      std::vector<std::string> key_names;
      for (const auto& k : d.keys) {
        keys.push_back(k.type), key_names.push_back(k.name);
        keys_named += (keys_named.empty() ? "" : ", ") + k.name;
      }
      auto shown = [&](bool array, const std::string& type, const std::string& ks) {
        return (array ? "associative array " : "scalar ") + type + (array ? "[" + ks + "]" : "");
      };
      const std::string current = shown(d.is_array, d.type.name, keys_named);
      if (d.scope == ExprKind::kIdent) {  // the other kind of global of the same name
        uint32_t s;
        const Vars& other = d.is_array ? p_.globals : p_.arrays;
        if (find(other, d.name, s)) {
          std::string ks;
          for (const auto& k : other[s].key_names) ks += (ks.empty() ? "" : ", ") + k;
          return fail(d.line, "identifier redeclared: " + d.name + "\n\t current: " + current +
                                  "\n\tprevious: " + shown(!d.is_array, other[s].decl_name, ks));
        }
      }
      uint32_t slot;
      if (find(*vars, d.name, slot)) {
        const VarInfo& v = (*vars)[slot];
        if (v.decl_name != d.type.name || v.key_names != key_names)
          return fail(d.line, "identifier redeclared: " + d.name + "\n\t current: " + current +
                                  "\n\tprevious: " + shown(d.is_array, v.decl_name, [&] {
                                    std::string ks;
                                    for (const auto& k : v.key_names) ks += (ks.empty() ? "" : ", ") + k;
                                    return ks;
                                  }()));
        continue;
      }
      VarInfo v{d.name, d.type.type, d.type.bytes, keys, d.line};
      v.declared = true, v.decl_name = d.type.name, v.key_names = key_names;
      vars->push_back(std::move(v));
    }
  }

  // An inline's definition must give a value of the inline's type.
  void check_inlines() {
    for (Decl& d : p_.script.decls) {
      if (err_ || !d.is_inline) continue;
      const Type t = expr(*d.value, false);
      if (t == Type::kNone) continue;
      const bool ok = d.type.type == Type::kString ? t == Type::kString : is_integer(t);
      if (!ok)
        fail(d.line, "inline " + d.name + " definition uses incompatible types: \"" + d.type.name + "\" = \"" +
                         (d_type_name(*d.value).empty() ? type_name(t) : d_type_name(*d.value)) + "\"");
    }
  }

  void pass() {
    if (!infer_) check_inlines();
    for (auto& c : p_.script.clauses) {
      if (err_) return;
      clause_ = &c;
      if (c.predicate) {
        const Type t = expr(*c.predicate, false);
        if (!err_ && !infer_ && t != Type::kNone && !is_integer(t) && t != Type::kString)
          fail(c.predicate->line, "predicate result must be of scalar type, not " + std::string(type_name(t)));
      }
      ClauseState cs;
      body(c.body, cs);
    }
  }

  void fail(int line, const std::string& msg) {
    if (!infer_ && !err_) err_ = Error("line " + std::to_string(line) + ": " + msg);
  }

  void body(std::vector<Stmt>& stmts, ClauseState& cs) {
    for (auto& s : stmts) {
      if (err_) return;
      switch (s.kind) {
        case StmtKind::kIf: {
          const Type t = expr(*s.expr, false);
          if (!infer_ && t != Type::kNone && !is_integer(t) && t != Type::kString)
            fail(s.line, "if condition must be of scalar type, not " + std::string(type_name(t)));
          body(s.then_body, cs);
          body(s.else_body, cs);
          break;
        }
        case StmtKind::kAgg:
          if (cs.speculated) fail(s.line, "aggregating actions may not follow speculate( )");
          cs.aggregated = true;
          aggregation(s);
          break;
        case StmtKind::kExpr:
          if (s.expr->kind == ExprKind::kCall) action_order(*s.expr, cs);
          expr(*s.expr, true);
          break;
      }
    }
  }

  // D's rules for speculations within a clause.
  void action_order(const Expr& call, ClauseState& cs) {
    const auto f = find_function(call.name);
    if (!f) return;
    const int line = call.line;
    switch (*f) {
      case Func::kSpeculate:
        if (cs.speculated) fail(line, "only one speculate( ) may be used in a clause");
        else if (cs.recorded) fail(line, "speculate( ) may not follow data-recording actions");
        else if (cs.aggregated) fail(line, "speculate( ) may not follow aggregating actions");
        else if (cs.committed) fail(line, "speculate( ) may not follow commit( ) or discard( )");
        cs.speculated = true;
        return;
      case Func::kCommit:
      case Func::kDiscard:
        if (cs.speculated) fail(line, call.name + "( ) may not follow speculate( )");
        else if (cs.recorded && call.name == "commit") fail(line, "commit( ) may not follow data-recording actions");
        cs.committed = true;
        return;
      case Func::kExit:
        if (cs.speculated) fail(line, "exit( ) may not follow speculate( )");
        cs.recorded = true;
        return;
      case Func::kPrintf: case Func::kTrace: case Func::kPrint: case Func::kPrinta: case Func::kUstack:
      case Func::kTrunc: case Func::kClear: case Func::kNormalize: case Func::kDenormalize:
        if (cs.committed && call.name != "printa") fail(line, "data-recording actions may not follow commit( )");
        cs.recorded = true;
        return;
      default:
        return;
    }
  }

  uint32_t agg_slot(const std::string& name, int line, bool define) {
    for (size_t i = 0; i < p_.aggs.size(); ++i)
      if (p_.aggs[i].name == name) return static_cast<uint32_t>(i);
    if (!define) {
      fail(line, "undefined aggregation @" + name + ": no @" + name + " = ...( ) in the script");
      return 0;
    }
    p_.aggs.push_back(AggInfo{name, AggFn::kCount, {}, {}, {}, line, false});
    return static_cast<uint32_t>(p_.aggs.size() - 1);
  }

  void aggregation(Stmt& s) {
    const AggFnInfo* it = find_agg_fn(s.fn);
    const std::string at = "@" + s.agg;
    if (!it) {
      fail(s.line, s.fn + "( ) is not an aggregating function (count, sum, avg, min, max, stddev, quantize, lquantize, llquantize)");
      return;
    }
    const size_t n = s.fn_args.size();
    if (n < it->min_args || n > it->max_args) {
      std::string expected = it->min_args == it->max_args
                                 ? std::to_string(it->min_args)
                                 : std::to_string(it->min_args) + " to " + std::to_string(it->max_args);
      fail(s.line, s.fn + "( ) prototype mismatch: " + std::to_string(n) + " arg" + (n == 1 ? "" : "s") +
                       " passed, " + expected + " expected");
      return;
    }
    if (s.keys.size() > kMaxKey) {
      fail(s.line, "aggregation " + at + " has " + std::to_string(s.keys.size()) + " keys: callscope query allows at most " +
                       std::to_string(kMaxKey));
      return;
    }
    std::vector<Type> keys;
    for (size_t i = 0; i < s.keys.size(); ++i) {
      const Type t = expr(*s.keys[i], false);
      if (!infer_ && t == Type::kVoid) fail(s.keys[i]->line, at + " key #" + std::to_string(i + 1) + " has no value");
      keys.push_back(t);
    }
    for (size_t i = 0; i < n; ++i) {
      const Type t = expr(*s.fn_args[i], false);
      if (!infer_ && t != Type::kNone && !is_integer(t))
        fail(s.line, s.fn + "( ) argument #" + std::to_string(i + 1) + " is incompatible with prototype:\n\tprototype: integer\n\t argument: " +
                         type_name(t));
    }
    if (err_) return;
    std::vector<std::optional<int64_t>> constants;
    for (const auto& e : s.fn_args) constants.push_back(constant_value(*e));
    auto checked = agg_params(it->fn, constants);
    if (!checked) return fail(s.line, checked.error().message());
    const AggParams params = *checked;
    const uint32_t slot = agg_slot(s.agg, s.line, true);
    s.agg_slot = slot;
    AggInfo& a = p_.aggs[slot];
    if (!a.defined) {
      a.fn = it->fn, a.params = params, a.keys = keys, a.line = s.line, a.defined = true;
      for (const auto& k : s.keys) a.key_names.push_back(d_type_name(*k));
      return;
    }
    if (a.fn != it->fn || (a.fn == AggFn::kLquantize || a.fn == AggFn::kLlquantize
                               ? std::tie(a.params.low, a.params.high, a.params.step, a.params.factor, a.params.magnitude_low, a.params.magnitude_high, a.params.nsteps) !=
                                     std::tie(params.low, params.high, params.step, params.factor, params.magnitude_low, params.magnitude_high, params.nsteps)
                               : false)) {
      return fail(s.line, "aggregation redefined: " + at + "\n\t current: " + s.fn + "( )\n\tprevious: " +
                              agg_fn_name(a.fn) + "( ) at line " + std::to_string(a.line));
    }
    if (a.keys.size() != keys.size())
      return fail(s.line, "aggregation " + at + " used with " + std::to_string(keys.size()) + " key(s); line " +
                              std::to_string(a.line) + " gives it " + std::to_string(a.keys.size()));
    for (size_t i = 0; i < keys.size(); ++i) {
      if (a.keys[i] == Type::kNone) a.keys[i] = keys[i];
      if (!infer_ && keys[i] != Type::kNone && !compatible(a.keys[i], keys[i]))
        return fail(s.line, "aggregation " + at + " key #" + std::to_string(i + 1) + " is " + type_name(keys[i]) +
                                "; line " + std::to_string(a.line) + " makes it " + type_name(a.keys[i]));
    }
  }

  static bool compatible(Type a, Type b) {
    return a == b || (is_integer(a) && is_integer(b)) || a == Type::kNone || b == Type::kNone;
  }

  static std::string agg_fn_name(AggFn f) {
    static const char* names[] = {"count", "sum", "avg", "min", "max", "stddev", "quantize", "lquantize", "llquantize"};
    return names[static_cast<size_t>(f)];
  }

  // A variable gets `t` (an assignment): defined on first sight.
  void assign_var(Expr& lhs, Type t, int line) {
    Vars* vars = nullptr;
    VarKind kind = VarKind::kGlobal;
    switch (lhs.kind) {
      case ExprKind::kIdent: vars = &p_.globals; break;
      case ExprKind::kSelf: vars = &p_.thread_vars, kind = VarKind::kThread; break;
      case ExprKind::kThis: vars = &p_.clause_vars, kind = VarKind::kClause; break;
      case ExprKind::kIndex: vars = &p_.arrays, kind = VarKind::kArray; break;
      default: return;
    }
    if (lhs.kind == ExprKind::kIdent) {
      if (builtin_type(lhs.name) || refused_variable(lhs.name)) return fail(line, "operator = can only be applied to a writable variable: " + lhs.name + " is a built-in");
      uint32_t s;
      if (find(p_.arrays, lhs.name, s)) return fail(line, lhs.name + " is an associative array: assign " + lhs.name + "[key]");
    } else if (lhs.kind == ExprKind::kIndex) {
      uint32_t s;
      if (find(p_.globals, lhs.name, s)) return fail(line, lhs.name + " is a scalar, not an associative array");
    }
    uint32_t slot;
    if (!find(*vars, lhs.name, slot)) {
      vars->push_back(VarInfo{lhs.name, t, rhs_bytes_, {}, line});
      slot = static_cast<uint32_t>(vars->size() - 1);
    }
    VarInfo& v = (*vars)[slot];
    if (v.type == Type::kNone) v.type = t, v.bytes = rhs_bytes_;
    // An integer variable is as wide as the widest value stored in it
    // (self->ts = 0 before self->ts = timestamp must not cut timestamps),
    // unless it was declared: then stores convert to its type, as in C.
    if (!v.declared && is_integer(v.type) && is_integer(t) && rhs_bytes_ > v.bytes) v.type = t, v.bytes = rhs_bytes_;
    if (t == Type::kVoid || t == Type::kStack) {
      if (!infer_) fail(line, std::string(t == Type::kVoid ? "void" : "stack") + " values cannot be stored in variables");
    } else if (!infer_ && !compatible(v.type, t)) {
      if (v.declared)  // in D's words, with D's type names
        fail(line, "operands have incompatible types: \"" + v.decl_name + "\" = \"" + (rhs_name_.empty() ? type_name(t) : rhs_name_) + "\"");
      else
        fail(line, std::string("operands have incompatible types: \"") + type_name(v.type) + "\" = \"" + type_name(t) + "\"");
    }
    lhs.var = kind;
    lhs.slot = slot;
    lhs.type = v.type;
    lhs.decl_type = v.decl_name;
  }

  // Whether a variable has been given a type by an assignment.
  bool known(const Expr& e) const {
    const Vars* vars = e.kind == ExprKind::kSelf ? &p_.thread_vars : e.kind == ExprKind::kThis ? &p_.clause_vars : e.kind == ExprKind::kIndex ? &p_.arrays : &p_.globals;
    uint32_t slot;
    return find(*vars, e.name, slot) && (*vars)[slot].type != Type::kNone;
  }

  // Reads a variable; kNone while the type is still unknown.
  Type read_var(Expr& e) {
    Vars* vars = e.kind == ExprKind::kSelf ? &p_.thread_vars : e.kind == ExprKind::kThis ? &p_.clause_vars : e.kind == ExprKind::kIndex ? &p_.arrays : &p_.globals;
    uint32_t slot;
    if (!find(*vars, e.name, slot) || (*vars)[slot].type == Type::kNone) {
      const std::string shown = e.kind == ExprKind::kSelf ? "self->" + e.name : e.kind == ExprKind::kThis ? "this->" + e.name : e.name;
      fail(e.line, "failed to resolve " + shown + ": Unknown variable name");
      return Type::kNone;
    }
    e.var = e.kind == ExprKind::kSelf ? VarKind::kThread : e.kind == ExprKind::kThis ? VarKind::kClause : e.kind == ExprKind::kIndex ? VarKind::kArray : VarKind::kGlobal;
    e.slot = slot;
    e.type = (*vars)[slot].type;
    e.decl_type = (*vars)[slot].decl_name;
    return e.type;
  }

  void index_keys(Expr& e) {
    if (e.args.size() > kMaxKey) {
      fail(e.line, e.name + "[ ] has " + std::to_string(e.args.size()) + " keys: callscope query allows at most " +
                       std::to_string(kMaxKey));
      return;
    }
    uint32_t slot;
    std::vector<Type> keys;
    for (auto& k : e.args) keys.push_back(expr(*k, false));
    if (!find(p_.arrays, e.name, slot)) return;
    VarInfo& v = p_.arrays[slot];
    if (v.keys.empty()) {
      v.keys = keys;
      return;
    }
    if (infer_) return;
    if (v.keys.size() != keys.size())
      return fail(e.line, e.name + "[ ] prototype mismatch: " + std::to_string(keys.size()) + " key" +
                              (keys.size() == 1 ? "" : "s") + " passed, " + std::to_string(v.keys.size()) + " expected");
    for (size_t i = 0; i < keys.size(); ++i)
      if (!compatible(v.keys[i], keys[i]))
        return fail(e.line, e.name + "[ ] key #" + std::to_string(i + 1) + " is incompatible with prototype:\n\tprototype: " +
                                type_name(v.keys[i]) + "\n\t argument: " + type_name(keys[i]));
  }

  // A translated structure's member (translators.h).
  Type member(Expr& e) {
    if (!clause_) {
      fail(e.line, e.name + " is read in a clause only");
      return Type::kNone;
    }
    auto info = find_member(e.name, clause_->probes);
    if (!info) {
      fail(e.line, info.error().message());
      return Type::kNone;
    }
    e.var = VarKind::kMember;
    e.slot = static_cast<uint32_t>(info->member);
    e.value = static_cast<uint64_t>(info->of);
    e.bytes = info->bytes;
    e.decl_type = info->d_type;
    return info->type;
  }

  Type expr(Expr& e, bool statement) {
    if (err_) return Type::kNone;
    e.type = compute(e, statement);
    e.bytes = size_of(e);
    return e.type;
  }

  // The size of an integer expression's D type, as C's conversions give it
  // (at least an int's 4 bytes for arithmetic).
  uint8_t size_of(Expr& e) {
    auto wider = [](uint8_t a, uint8_t b) { return std::max<uint8_t>({a, b, 4}); };
    switch (e.kind) {
      case ExprKind::kInt:
        return !e.is_unsigned && !e.is_long && e.value <= static_cast<uint64_t>(INT32_MAX) ? 4 : 8;
      case ExprKind::kIdent:
        if (e.var == VarKind::kBuiltin) return builtin_bytes(static_cast<Builtin>(e.slot));
        if (e.var == VarKind::kMember) return e.bytes;
        [[fallthrough]];
      case ExprKind::kSelf:
      case ExprKind::kThis:
      case ExprKind::kIndex: {
        const Vars* vars = e.var == VarKind::kThread ? &p_.thread_vars : e.var == VarKind::kClause ? &p_.clause_vars : e.var == VarKind::kArray ? &p_.arrays : &p_.globals;
        return e.slot < vars->size() ? (*vars)[e.slot].bytes : 8;
      }
      case ExprKind::kCast: return static_cast<uint8_t>(std::max(1, e.cast_bits / 8));
      case ExprKind::kUnary: return e.op == "!" ? 4 : wider(e.args[0]->bytes, 4);
      case ExprKind::kIncDec: return e.args[0]->bytes;
      case ExprKind::kBinary:
        if (e.op == "&&" || e.op == "||" || e.op == "^^" || e.op == "==" || e.op == "!=" || e.op == "<" ||
            e.op == "<=" || e.op == ">" || e.op == ">=")
          return 4;
        if (e.op == "<<" || e.op == ">>") return wider(e.args[0]->bytes, 4);
        return wider(e.args[0]->bytes, e.args[1]->bytes);
      case ExprKind::kTernary: return wider(e.args[1]->bytes, e.args[2]->bytes);
      case ExprKind::kAssign: return e.args[0]->bytes;
      case ExprKind::kCall: {
        const auto f = static_cast<Func>(e.slot);
        return f == Func::kIndex || f == Func::kRindex || f == Func::kSpeculation || f == Func::kRand ? 4 : 8;
      }
      default: return 8;
    }
  }

  Type arith(const Expr& e, Type a, Type b) {
    if (a == Type::kNone || b == Type::kNone) return Type::kNone;
    if (!is_integer(a) || !is_integer(b)) {
      fail(e.line, "operator " + e.op + " requires operands of integral type, not \"" + type_name(a) + "\" and \"" + type_name(b) + "\"");
      return Type::kNone;
    }
    const uint8_t ba = std::max<uint8_t>(e.args[0]->bytes, 4), bb = std::max<uint8_t>(e.args[1]->bytes, 4);
    if (ba != bb) return ba > bb ? a : b;  // the wider type wins
    return a == Type::kUint || b == Type::kUint ? Type::kUint : Type::kInt;
  }

  // A constant zero divisor is a compile error in D, not a fault when the
  // clause runs (dt_node_op2: "expression contains division by zero").
  void divisor(const Expr& e) {
    const auto z = constant_value(*e.args[1]);
    if (z && *z == 0) fail(e.line, "expression contains division by zero");
  }

  Type compute(Expr& e, bool statement) {
    switch (e.kind) {
      case ExprKind::kInt: return e.is_unsigned ? Type::kUint : Type::kInt;
      case ExprKind::kString: return Type::kString;
      case ExprKind::kIdent: {
        if (e.name.find("->") != std::string::npos) return member(e);
        if (auto c = d_constant(e.name)) {
          // SSLEEP, B_READ, ...: an int constant, as dtrace's translators' inlines.
          e.kind = ExprKind::kInt;
          e.value = static_cast<uint64_t>(*c);
          e.is_unsigned = e.is_long = false;
          return Type::kInt;
        }
        if (auto b = builtin_type(e.name)) {
          if (clause_)
            for (const ProbeSpec& ps : clause_->probes)
              if (auto why = refused_at_probe(b->first, e.name, ps)) {
                fail(e.line, *why);
                return Type::kNone;
              }
          e.var = VarKind::kBuiltin;
          e.slot = static_cast<uint32_t>(b->first);
          if (b->first == Builtin::kUstackdepth || b->first == Builtin::kUcaller || b->first == Builtin::kDepth)
            p_.stack = true;
          if (b->first == Builtin::kSelfduration) p_.other_calls = true;
          if (b->first == Builtin::kVtimestamp) p_.vtimestamp = true;
          return b->second;
        }
        if (auto why = refused_variable(e.name)) {
          fail(e.line, *why);
          return Type::kNone;
        }
        uint32_t s;
        if (find(p_.arrays, e.name, s)) {
          fail(e.line, e.name + " is an associative array: index it, " + e.name + "[key]");
          return Type::kNone;
        }
        if (find_function(e.name) || refused_function(e.name)) {
          fail(e.line, e.name + " is a function: call it, " + e.name + "( )");
          return Type::kNone;
        }
        return read_var(e);
      }
      case ExprKind::kSelf:
      case ExprKind::kThis:
        return read_var(e);
      case ExprKind::kIndex:
        index_keys(e);
        return read_var(e);
      case ExprKind::kAggRef:
        fail(e.line, "aggregation @" + e.name + " cannot be used in an expression: printa( ), trunc( ), clear( ), normalize( ) and denormalize( ) take it");
        return Type::kNone;
      case ExprKind::kCast: {
        const Type t = expr(*e.args[0], false);
        if (t != Type::kNone && !is_integer(t)) fail(e.line, "invalid cast expression: \"" + std::string(type_name(t)) + "\" to \"" + e.name + "\"");
        return e.cast_signed ? Type::kInt : Type::kUint;
      }
      case ExprKind::kUnary: {
        const Type t = expr(*e.args[0], false);
        if (t == Type::kNone) return Type::kNone;
        if (!is_integer(t)) {
          fail(e.line, "operator " + e.op + " requires an operand of integral type, not \"" + type_name(t) + "\"");
          return Type::kNone;
        }
        return e.op == "!" ? Type::kInt : t;
      }
      case ExprKind::kIncDec: {
        Expr& v = *e.args[0];
        // x++ and self->depth++ declare an int when nothing assigned the
        // variable before, as D does.
        if (v.kind != ExprKind::kIdent || !builtin_type(v.name)) {
          if (!known(v)) {
            if (v.kind == ExprKind::kIndex)
              for (auto& k : v.args) expr(*k, false);
            rhs_bytes_ = 4;
            rhs_name_ = "int";
            assign_var(v, Type::kInt, e.line);
            if (v.kind == ExprKind::kIndex) index_keys(v);
          }
        }
        const Type t = expr(v, false);
        if (t != Type::kNone && !is_integer(t)) fail(e.line, "operator " + e.op + " requires an operand of integral type, not \"" + type_name(t) + "\"");
        if (v.kind == ExprKind::kIdent && v.var == VarKind::kBuiltin) fail(e.line, "operator " + e.op + " can only be applied to a writable variable");
        return t;
      }
      case ExprKind::kBinary: {
        const Type a = expr(*e.args[0], false), b = expr(*e.args[1], false);
        const std::string& op = e.op;
        if (op == "/" || op == "%") divisor(e);
        if (op == "&&" || op == "||" || op == "^^") {
          for (Type t : {a, b})
            if (t != Type::kNone && !is_integer(t) && t != Type::kString) fail(e.line, "operator " + op + " requires operands of scalar type, not \"" + type_name(t) + "\"");
          return Type::kInt;
        }
        if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") {
          // A string against NULL (0): whether it is "" (dtrace's unset string, NULL).
          const auto null = [&](const Expr& x, Type t) {
            const auto k = is_integer(t) ? constant_value(x) : std::nullopt;
            return k && *k == 0;
          };
          if ((op == "==" || op == "!=") && ((a == Type::kString && null(*e.args[1], b)) ||
                                             (b == Type::kString && null(*e.args[0], a))))
            return Type::kInt;
          if (a != Type::kNone && b != Type::kNone && !(is_integer(a) && is_integer(b)) && !(a == b && (a == Type::kString || a == Type::kSym)))
            fail(e.line, std::string("operands have incompatible types: \"") + type_name(a) + "\" " + op + " \"" + type_name(b) + "\"");
          return Type::kInt;
        }
        if (op == "<<" || op == ">>") {
          const Type t = arith(e, a, b);
          return t == Type::kNone ? t : a;
        }
        return arith(e, a, b);
      }
      case ExprKind::kTernary: {
        const Type c = expr(*e.args[0], false), a = expr(*e.args[1], false), b = expr(*e.args[2], false);
        if (c != Type::kNone && !is_integer(c) && c != Type::kString) fail(e.line, "operator ?: requires a condition of scalar type");
        if (a == Type::kNone || b == Type::kNone) return a == Type::kNone ? b : a;
        if (is_integer(a) && is_integer(b)) return a == Type::kUint || b == Type::kUint ? Type::kUint : Type::kInt;
        if (a != b) fail(e.line, std::string("operator ?: operands must have compatible types: \"") + type_name(a) + "\" and \"" + type_name(b) + "\"");
        return a;
      }
      case ExprKind::kAssign: {
        Expr& lhs = *e.args[0];
        // NULL (0) stored in a string variable: "", dtrace's unset string.
        if (e.op == "=" && e.args[1]->kind != ExprKind::kString && known(lhs) && read_var(lhs) == Type::kString)
          if (const auto k = constant_value(*e.args[1]); k && *k == 0) {
            e.args[1]->kind = ExprKind::kString;
            e.args[1]->name.clear();
            e.args[1]->args.clear();
          }
        const Type r = expr(*e.args[1], false);
        if (e.op == "/=" || e.op == "%=") divisor(e);
        if (e.op != "=" && !(lhs.kind != ExprKind::kIdent || !builtin_type(lhs.name) ? !known(lhs) : false)) {
          const Type l = lhs.kind == ExprKind::kIdent && builtin_type(lhs.name) ? Type::kInt : read_var(lhs);
          if (l != Type::kNone && r != Type::kNone && (!is_integer(l) || !is_integer(r)))
            fail(e.line, "operator " + e.op + " requires operands of integral type, not \"" + type_name(l) + "\" and \"" + type_name(r) + "\"");
        }
        if (r == Type::kNone) {
          // Type unknown yet: resolve the target if it is known.
          Vars* vars = lhs.kind == ExprKind::kSelf ? &p_.thread_vars : lhs.kind == ExprKind::kThis ? &p_.clause_vars : lhs.kind == ExprKind::kIndex ? &p_.arrays : &p_.globals;
          uint32_t s;
          if (!find(*vars, lhs.name, s)) return Type::kNone;
        }
        rhs_bytes_ = e.args[1]->bytes;
        rhs_name_ = d_type_name(*e.args[1]);
        assign_var(lhs, r == Type::kNone ? Type::kNone : r, e.line);
        if (lhs.kind == ExprKind::kIndex) index_keys(lhs);
        return lhs.type;
      }
      case ExprKind::kCall:
        return call(e, statement);
    }
    return Type::kNone;
  }

  Type call(Expr& e, bool statement) {
    if (auto why = refused_function(e.name)) {
      fail(e.line, *why);
      return Type::kNone;
    }
    const auto f = find_function(e.name);
    if (!f) {
      fail(e.line, "failed to resolve " + e.name + ": Unknown function");
      return Type::kNone;
    }
    e.slot = static_cast<uint32_t>(*f);
    if (*f == Func::kUstack) p_.stack = true;
    const FunctionSig& sig = function_sig(*f);
    const size_t n = e.args.size();
    const std::string fname = e.name + "( )";
    if (n < sig.min_args || n > sig.max_args) {
      std::string expected = sig.min_args == sig.max_args ? std::to_string(sig.min_args)
                             : sig.max_args == SIZE_MAX    ? "at least " + std::to_string(sig.min_args)
                                                           : std::to_string(sig.min_args) + " to " + std::to_string(sig.max_args);
      fail(e.line, fname + " prototype mismatch: " + std::to_string(n) + " arg" + (n == 1 ? "" : "s") + " passed, " + expected + " expected");
      return Type::kNone;
    }
    if (sig.ret == Type::kVoid && !statement) {
      fail(e.line, fname + " is an action: it gives no value and may only be used as a statement");
      return Type::kNone;
    }
    auto mismatch = [&](size_t i, const char* proto, Type got) {
      fail(e.line, fname + " argument #" + std::to_string(i + 1) + " is incompatible with prototype:\n\tprototype: " + proto +
                       "\n\t argument: " + type_name(got));
    };
    // Aggregation arguments first (they are not expressions).
    size_t first_expr = 0;
    if (*f == Func::kPrinta) {
      size_t i = 0;
      if (n > 0 && e.args[0]->kind == ExprKind::kString) i = 1;
      else if (n > 0 && e.args[0]->kind != ExprKind::kAggRef) {
        fail(e.line, fname + " argument #1 must be a format string constant or an aggregation");
        return Type::kVoid;
      }
      if (i == n) {
        fail(e.line, fname + " prototype mismatch: no aggregation passed");
        return Type::kVoid;
      }
      for (; i < n; ++i) {
        if (e.args[i]->kind != ExprKind::kAggRef) {
          fail(e.line, fname + " argument #" + std::to_string(i + 1) + " must be an aggregation");
          return Type::kVoid;
        }
        if (!infer_) e.args[i]->slot = agg_slot(e.args[i]->name, e.line, false);
      }
      const auto signature = [&](const AggInfo& a, std::vector<ArgType>& keys, std::vector<std::string>& names) {
        for (size_t k = 0; k < a.keys.size(); ++k)
          keys.push_back(arg_type(a.keys[k])), names.push_back(k < a.key_names.size() ? a.key_names[k] : type_name(a.keys[k]));
      };
      if (!infer_ && !err_ && e.args[0]->kind == ExprKind::kString) {
        const AggInfo& a = p_.aggs[e.args[1]->slot];
        std::vector<ArgType> keys;
        std::vector<std::string> names;
        signature(a, keys, names);
        auto st = check_printa(e.args[0]->name, keys, a.fn, names);
        if (!st) fail(e.line, st.error().message());
      }
      // Several aggregations print as one table, row by row of their keys:
      // their keys must match, as D requires (else the rows mean nothing).
      const size_t first = e.args[0]->kind == ExprKind::kString ? 1 : 0;
      for (size_t j = first + 1; !infer_ && !err_ && j < n; ++j) {
        const AggInfo& a = p_.aggs[e.args[first]->slot];
        const AggInfo& b = p_.aggs[e.args[j]->slot];
        std::vector<ArgType> ka, kb;
        std::vector<std::string> na, nb;
        signature(a, ka, na);
        signature(b, kb, nb);
        auto st = check_printa_keys(a.name, ka, na, b.name, kb, nb);
        if (!st) fail(e.line, st.error().message());
      }
      return Type::kVoid;
    }
    if (*f == Func::kTrunc || *f == Func::kClear || *f == Func::kNormalize || *f == Func::kDenormalize) {
      if (e.args[0]->kind != ExprKind::kAggRef) {
        fail(e.line, fname + " argument #1 must be an aggregation");
        return Type::kVoid;
      }
      if (!infer_) e.args[0]->slot = agg_slot(e.args[0]->name, e.line, false);
      first_expr = 1;
    }
    std::vector<Type> types;
    for (size_t i = first_expr; i < n; ++i) {
      if (e.args[i]->kind == ExprKind::kAggRef) {
        fail(e.line, fname + " argument #" + std::to_string(i + 1) + ": an aggregation cannot be used here");
        return Type::kNone;
      }
      types.push_back(expr(*e.args[i], false));
    }
    if (err_ || infer_) return sig.ret;
    for (size_t i = first_expr; i < n; ++i) {
      const Type got = types[i - first_expr];
      if (got == Type::kNone) return sig.ret;
      const char want = i - first_expr < sig.args.size() ? sig.args[i - first_expr] : sig.args.empty() ? 'a' : sig.args.back();
      if (got == Type::kVoid) {
        fail(e.line, fname + " argument #" + std::to_string(i + 1) + " has no value");
        return sig.ret;
      }
      if (want == 'i' && !is_integer(got)) return mismatch(i, "integer", got), sig.ret;
      if (want == 's' && got != Type::kString) return mismatch(i, "string", got), sig.ret;
      if (want == 'z' && got != Type::kString) {
        const auto k = is_integer(got) ? constant_value(*e.args[i]) : std::nullopt;
        if (!k || *k != 0) return mismatch(i, "string or NULL", got), sig.ret;
      }
      if (want == 'c' && !constant_value(*e.args[i])) {
        fail(e.line, fname + " argument #" + std::to_string(i + 1) + " must be an integer constant");
        return sig.ret;
      }
    }
    if (*f == Func::kSetopt) {
      // What it sets must exist and may change while the script runs.
      if (e.args[0]->kind != ExprKind::kString) {
        fail(e.line, "setopt( ) argument #1 must be an option's name, a string constant");
        return sig.ret;
      }
      if (auto st = check_setopt(e.args[0]->name); !st) fail(e.line, st.error().message());
      return sig.ret;
    }
    if (*f == Func::kPrintf) {
      if (n > 65) {
        fail(e.line, "printf( ) has " + std::to_string(n - 1) + " value arguments: callscope query allows at most 64");
        return sig.ret;
      }
      if (e.args[0]->kind != ExprKind::kString) {
        fail(e.line, "printf( ) argument #1 must be a format string constant");
        return sig.ret;
      }
      std::vector<ArgType> at;
      std::vector<std::string> names;
      for (size_t i = 1; i < n; ++i) at.push_back(arg_type(types[i])), names.push_back(d_type_name(*e.args[i]));
      auto st = check_printf(e.args[0]->name, at, names);
      if (!st) fail(e.line, st.error().message());
    }
    return sig.ret;
  }

  CompiledProgram& p_;
  uint8_t rhs_bytes_ = 8;  // the size of the value assign_var() stores
  std::string rhs_name_;   // and its D type's name, for messages
  bool infer_ = false;
  std::optional<Error> err_;
  const Clause* clause_ = nullptr;  // the clause being compiled
};

}  // namespace

const char* type_name(Type t) {
  switch (t) {
    case Type::kNone: return "unknown";
    case Type::kInt: return "int64_t";
    case Type::kUint: return "uint64_t";
    case Type::kString: return "string";
    case Type::kStack: return "stack";
    case Type::kSym: return "symbol";
    case Type::kVoid: return "void";
  }
  return "?";
}

Result<std::shared_ptr<const Program>> compile(std::string_view source, const std::string& file,
                                               const CompileOptions& options) {
  const std::string what = "failed to compile script " + file;
  auto prog = std::make_shared<CompiledProgram>();
  MacroArgs macros{options.macro_args, options.target, option_set(options.options, "defaultargs")};
  auto parsed = parse(source, macros);
  if (!parsed) return parsed.error().context(what);
  prog->script = std::move(parsed->script);
  CALLSCOPE_CHECK(read_options(*prog, parsed->pragmas, options.options, what));
  Checker checker(*prog);
  if (auto err = checker.run()) return err->context(what);
  return std::shared_ptr<const Program>(std::move(prog));
}

}  // namespace callscope::query
