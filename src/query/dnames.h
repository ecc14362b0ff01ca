// D's names: built-in variables and functions callscope query knows, with
// their types and prototypes, and the ones it refuses, with why.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include "query/ast.h"
#include "query/compile.h"

namespace callscope::query {

std::optional<std::pair<Builtin, Type>> builtin_type(const std::string& name);
// The size of a built-in's D type: 4 for pid_t, id_t, uint_t, int; else 8.
uint8_t builtin_bytes(Builtin b);
// The name of an expression's D type, as print() and messages give it:
// a built-in's own (pid_t, id_t, uint_t), a cast's, else by kind and size
// (int, int64_t, uint64_t, string); "" for stacks and symbols.
std::string d_type_name(const Expr& e);
// Why a D variable is not available ("uregs is not available: ..."), or
// nothing when callscope does not know the name at all.
std::optional<std::string> refused_variable(const std::string& name);
// Why built-in `b` (named `name`) may not be read in a clause that fires at
// `probe`, or nothing: D's arg0/arg1 at a pid probe are the function's
// arguments (at return, the return's offset and value), which callscope
// does not record -- a stand-in would be a silent wrong answer.
std::optional<std::string> refused_at_probe(Builtin b, const std::string& name, const ProbeSpec& probe);

struct FunctionSig {
  size_t min_args, max_args;  // SIZE_MAX: any number
  Type ret;                   // kVoid: an action
  // One letter per argument, the last repeating: i integer, s string,
  // c integer constant, a any value, z a string or NULL (0). Aggregation
  // arguments are not listed.
  std::string args;
};
std::optional<Func> find_function(const std::string& name);
const FunctionSig& function_sig(Func f);
std::optional<std::string> refused_function(const std::string& name);

}  // namespace callscope::query
