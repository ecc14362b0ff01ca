// The semantic pass: gives every name of a parsed script its meaning (a
// built-in variable, a global, an associative array, a self-> or this->
// variable, a function), every expression its type, every aggregation its
// function and parameters, and refuses what D refuses (or what callscope
// cannot honour) with a located message in D's words. What it returns is
// the Program of engine.h; the engine builds its closures from it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "query/aggregate.h"
#include "query/ast.h"
#include "query/engine.h"
#include "query/options.h"

namespace callscope::query {

// Built-in variables, in the order of builtin_name().
enum class Builtin : uint8_t {
  kProbeprov, kProbemod, kProbefunc, kProbename, kPid, kPpid, kTid, kExecname, kTimestamp, kWalltimestamp,
  kEpid, kId, kArg0, kArg1, kUstackdepth, kUcaller, kDuration, kSelfduration, kDepth, kArg2, kArg3, kArg4,
  kArg5, kArg6, kArg7, kArg8, kArg9, kErrno, kCpu, kVtimestamp,
  kSelfThread,  // the key of self->a[k]'s thread (parser: kSelfThreadBuiltin)
};

// Functions (subroutines and actions).
enum class Func : uint8_t {
  // subroutines: give a value
  kStrlen, kStrjoin, kSubstr, kStrstr, kStrchr, kStrrchr, kIndex, kRindex, kBasename, kDirname, kLltostr,
  kStrtoll, kToupper, kTolower, kUstack, kUfunc, kUmod, kUsym, kSpeculation, kRand, kStringof, kStrtok,
  kCleanpath,
  // actions: statements only
  kPrintf, kTrace, kPrint, kPrinta, kExit, kSpeculate, kCommit, kDiscard, kTrunc, kClear, kNormalize,
  kDenormalize, kSetopt,
};

struct VarInfo {
  std::string name;
  Type type = Type::kNone;
  uint8_t bytes = 8;       // integers: the size of the first assignment's type
  std::vector<Type> keys;  // associative arrays
  int line = 0;            // first assignment (or the declaration)
  bool declared = false;   // by a declaration: its type is fixed, not widened by assignments
  std::string decl_name;   // declared: the D type's name ("int", "uint64_t", "string")
  std::vector<std::string> key_names;  // declared arrays: the keys' D type names
};

struct AggInfo {
  std::string name;
  AggFn fn = AggFn::kCount;
  AggParams params;
  std::vector<Type> keys;
  std::vector<std::string> key_names;  // the keys' D types, for messages
  int line = 0;
  bool defined = false;  // an @name = fn( ) statement was seen
};

class CompiledProgram final : public Program {
 public:
  size_t clause_count() const override { return script.clauses.size(); }
  const std::vector<ProbeSpec>& clause_probes(size_t clause) const override { return script.clauses[clause].probes; }
  const std::map<std::string, std::string>& options() const override { return options_; }
  bool reads_stack() const override { return stack; }
  bool reads_other_calls() const override { return other_calls; }
  bool reads_vtimestamp() const override { return vtimestamp; }

  Script script;
  std::vector<VarInfo> globals, arrays, thread_vars, clause_vars;
  std::vector<AggInfo> aggs;  // in order of first appearance: D prints them in this order at the end
  std::map<std::string, std::string> options_;
  bool quiet = false;
  bool stack = false;      // reads_stack()
  bool other_calls = false;  // reads_other_calls()
  bool vtimestamp = false;   // reads_vtimestamp()
  int nspec = 1;           // speculation buffers (D's nspec)
  size_t strsize = 256;    // D's strsize: strings are cut to strsize - 1 bytes
};

}  // namespace callscope::query
