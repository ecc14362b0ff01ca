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

// The hidden builtin a self->a[k] access is keyed by first (the parser
// makes it the array "self->a" keyed by the thread, then k): a name no
// script can write.
inline constexpr const char* kSelfThreadBuiltin = "self-thread";

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
// kMember: a translated structure's member (translators.h: curpsinfo->pr_pid,
// args[0]->b_bcount); slot the Member, value its MemberOf.
enum class VarKind : uint8_t { kNone, kBuiltin, kGlobal, kArray, kThread, kClause, kMember };

struct Expr {
  ExprKind kind = ExprKind::kInt;
  int line = 0;
  std::string op;
  std::string name;
  uint64_t value = 0;
  bool is_unsigned = false;
  bool is_long = false;  // kInt: an 'l' or 'll' suffix, 64 bits however small
  bool prefix = false;
  uint8_t cast_bits = 64;
  bool cast_signed = true;
  std::vector<std::unique_ptr<Expr>> args;

  // Set by the compiler.
  Type type = Type::kNone;
  uint8_t bytes = 8;  // integers: the size of the D type (4: int, pid_t; 8: int64_t, uint64_t)
  VarKind var = VarKind::kNone;
  std::string decl_type;  // a declared variable's D type name ("unsigned long"), for print() and messages
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

// A declared D type: an integer type (its size and signedness, and the
// name D gives it in messages) or string.
struct DeclType {
  Type type = Type::kInt;
  uint8_t bytes = 4;
  std::string name;  // "int", "uint64_t", "unsigned long", "string"
};

// A top-level declaration: `int x;`, `self uint64_t ts;`, `this int n;`,
// `int counts[string];`, `inline int LIMIT = 100;`. The parser puts a copy
// of an inline's expression (cast to its type) where its name is used; the
// definition stays here so that the compiler checks it even when unused.
struct Decl {
  ExprKind scope = ExprKind::kIdent;  // kIdent: global (kIndex: an array), kSelf, kThis
  std::string name;
  DeclType type;
  std::vector<DeclType> keys;  // an associative array's key types
  bool is_array = false;
  bool is_inline = false;
  ExprPtr value;  // an inline's definition (its uses are copies of it)
  int line = 0;
};

struct Script {
  std::vector<Decl> decls;
  std::vector<Clause> clauses;
};

}  // namespace callscope::query
