// The tree of a D script as the parser builds it (parser.h) and the
// compiler annotates it (compile.h: types, what each name is, its slot).
// The engine turns the annotated tree into closures once; it never walks
// this tree while probes fire.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "query/aggregate.h"
#include "query/engine.h"

namespace callscope::query {

// D types as callscope holds them: 64-bit integers (signed or not; casts
// narrow the value, not the type), strings, stacks and symbols.
enum class Type : uint8_t { kNone, kInt, kUint, kString, kStack, kSym, kVoid };

const char* type_name(Type t);
inline bool is_integer(Type t) { return t == Type::kInt || t == Type::kUint; }

enum class ExprKind : uint8_t {
  kInt,      // value, is_unsigned
  kString,   // name: the text
  kIdent,    // name: a built-in variable, a global scalar, or a function used without ()
  kSelf,     // self->name
  kThis,     // this->name
  kIndex,    // name[args]: an associative array
  kCall,     // name(args)
  kAggRef,   // @name (printa, trunc, clear, normalize, denormalize)
  kUnary,    // op args[0]: - + ! ~
  kBinary,   // args[0] op args[1], including && || ^^
  kTernary,  // args[0] ? args[1] : args[2]
  kAssign,   // args[0] op args[1]; op "=", "+=", ...
  kIncDec,   // op "++"/"--" on args[0]; prefix or not
  kCast,     // (type)args[0]: cast_bits, cast_signed
};

// What an identifier turned out to be (set by the compiler).
enum class VarKind : uint8_t { kNone, kBuiltin, kGlobal, kArray, kThread, kClause };

struct Expr {
  ExprKind kind = ExprKind::kInt;
  int line = 0;
  std::string op;
  std::string name;
  uint64_t value = 0;
  bool is_unsigned = false;
  bool prefix = false;
  uint8_t cast_bits = 64;
  bool cast_signed = true;
  std::vector<std::unique_ptr<Expr>> args;

  // Set by the compiler.
  Type type = Type::kNone;
  uint8_t bytes = 8;  // integers: the size of the D type (4: int, pid_t; 8: int64_t, uint64_t)
  VarKind var = VarKind::kNone;
  uint32_t slot = 0;  // the variable's, the built-in's or the aggregation's index
};
using ExprPtr = std::unique_ptr<Expr>;

enum class StmtKind : uint8_t { kExpr, kAgg, kIf };

struct Stmt {
  StmtKind kind = StmtKind::kExpr;
  int line = 0;
  ExprPtr expr;                // kExpr: the expression; kIf: the condition
  std::string agg;             // kAgg: the aggregation's name ("" for @)
  std::vector<ExprPtr> keys;   // kAgg: @name[keys]
  std::string fn;              // kAgg: count, sum, ...
  std::vector<ExprPtr> fn_args;
  std::vector<Stmt> then_body, else_body;  // kIf

  // Set by the compiler (kAgg).
  uint32_t agg_slot = 0;
};

struct Clause {
  std::vector<ProbeSpec> probes;
  ExprPtr predicate;
  std::vector<Stmt> body;
  int line = 0;
};

struct Script {
  std::vector<Clause> clauses;
};

}  // namespace callscope::query
