// What the engine runs: the compiled script as a tree of closures. Each
// Node holds a plain function pointer that evaluates it from its children,
// so a firing costs a few indirect calls, never a look-up by name or a walk
// of the syntax tree. Internal to the engine (engine.cpp, dfuncs.cpp).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "query/aggregate.h"
#include "query/compile.h"
#include "query/engine.h"
#include "query/value.h"

namespace callscope::query {

struct Ctx;
struct Node;
using NodeFn = Value (*)(const Node&, Ctx&);

struct Node {
  NodeFn fn = nullptr;
  const Node* a = nullptr;
  const Node* b = nullptr;
  const Node* c = nullptr;
  std::vector<const Node*> args;
  Value k;             // a constant, or the default value of a variable (its kind)
  uint32_t slot = 0;   // variable, aggregation, built-in or function
  uint8_t bits = 64;   // casts
  bool sign = true;
  uint8_t op = 0;      // compound assignments: the BinOp
  bool prefix = false;
  uint8_t lkind = 0;   // assignments: the VarKind of the target
  std::string text;    // printf and printa formats
  // Aggregation statements: the key is built here, not in a fresh Key per
  // firing (zeroing 10 values cost more than the count itself). A key
  // cannot hold another aggregation statement, so nothing re-enters it.
  mutable Key key;
  // Aggregation statements whose key is the probe's names alone (or empty):
  // the entry each probe adds to, by probe id, and the aggregation's
  // generation when it was found.
  mutable std::vector<std::pair<uint64_t, Aggregation::Entry*>> by_probe;
};

enum class BinOp : uint8_t { kAdd, kSub, kMul, kDiv, kMod, kAnd, kOr, kXor, kShl, kShr };

struct EngineState {
  EngineState(std::shared_ptr<const CompiledProgram> p, Strings& st, Stacks& sk, std::string& o)
      : prog(std::move(p)), strings(st), stacks(sk), out(o) {}

  std::shared_ptr<const CompiledProgram> prog;
  Strings& strings;
  Stacks& stacks;
  std::string& out;
  PrintContext pctx;
  bool quiet = false;

  std::deque<Node> nodes;  // stable addresses: nodes point at each other
  struct Clause {
    const Node* predicate = nullptr;
    std::vector<const Node*> stmts;  // top-level statements ("actions", numbered from 1 in messages)
    bool empty = false;              // no statements: D's default action, the probe line
  };
  std::vector<Clause> clauses;
  struct Enabled {
    uint32_t clause;
    uint32_t epid;
  };
  std::vector<std::vector<Enabled>> by_probe;  // by ProbeInfo::id
  std::vector<ProbeInfo> probe_info;          // by ProbeInfo::id, for messages
  uint32_t next_epid = 1;
  std::optional<ProbeInfo> error_probe;
  bool in_error = false;  // a fault while running ERROR's clauses fires nothing more

  std::vector<Value> globals;
  std::vector<std::unordered_map<Key, Value, KeyHash>> arrays;
  std::vector<Value> array_defaults;
  std::vector<std::vector<Value>> threads;  // by Firing::thread
  std::vector<Value> thread_defaults;
  std::vector<Value> clause_vars, clause_defaults;

  std::vector<std::unique_ptr<Aggregation>> aggs;  // in the program's order

  struct Speculation {
    bool busy = false;
    std::string buf;
  };
  std::vector<Speculation> specs;  // [0] unused: speculation ids start at 1
  std::string committed;           // commit()'s data: printed after the committing clause's own
  uint64_t spec_drops = 0;

  bool header_printed = false;
  bool exited = false;
  int exit_status = 0;
  uint64_t errors = 0;
  std::string messages;
  uint64_t rand_state = 0x2545f4914f6cdd1dull;
  std::vector<uint64_t> frames;  // ustack()'s scratch
  // strtok(NULL, ...)'s rest of the string: as dtrace's, kept for the
  // firing (its clauses), none at its start.
  std::optional<std::string> strtok_rest;
};

// One clause's run on one firing.
struct Ctx {
  EngineState* s;
  const Firing* f;
  std::string* out;            // the principal output or a speculation's buffer
  size_t out_mark = 0;         // *out's size when the clause began writing to it (a fault cuts back to it)
  uint32_t epid = 0;
  const char* fault = nullptr;  // set by a faulting node; the clause stops
  bool line_printed = false;
  // speculate() of a speculation not active: the rest of the clause is
  // discarded, as dtrace discards it (no fault).
  bool discard_rest = false;
};

// The probe line before the first data a clause records (not when quiet).
void record(Ctx& c);

// A string result, cut to strsize - 1 bytes as D cuts it, interned.
Value make_string(Ctx& c, std::string_view s);
inline const std::string& text_of(Ctx& c, const Value& v) { return c.s->strings.text(static_cast<uint32_t>(v.bits)); }

// The node function of a subroutine or an action (dfuncs.cpp).
NodeFn function_fn(Func f);
NodeFn ustack_action_fn();  // ustack() as a statement: prints the stack

}  // namespace callscope::query
