// Function patterns as the user writes them: a glob on demangled names,
// optionally qualified by a module glob, "libfoo.so!ns::*". Also the file of
// user-supplied call edges ("caller -> callee") that closes indirect calls.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace callscope::stack {

struct FunctionPattern {
  std::string module;    // glob on the file name; empty matches any module
  std::string function;  // glob on the demangled name

  // True when the pattern selects `function` of module `module` (a file base
  // name). A module glob also matches the name without its version suffix:
  // "libfoo.so" selects "libfoo.so.1.2". A function name given exactly
  // matches itself whatever glob characters it holds ("f[abi:cxx11]()").
  bool matches(std::string_view module_name, std::string_view function_name) const;
};

// Splits "module!function". The '!' counts as a module separator only when
// what precedes it looks like a file name (no "::", '(', '<', space), so C++
// operators such as "ns::operator!=" stay whole.
FunctionPattern parse_pattern(std::string_view text);

// `s` without the blanks (space, tab, CR) around it.
std::string_view trim(std::string_view s);

// The module name of a path: its base name.
std::string module_name(std::string_view path);

struct UserEdge {
  FunctionPattern caller;
  FunctionPattern callee;
  int line = 0;
};

// Parses an edges file: one "caller -> callee" per line, '#' starts a
// comment, blank lines are skipped. Both sides are patterns (globs allowed).
// `source` names the file in error messages.
Result<std::vector<UserEdge>> parse_user_edges(std::string_view text, const std::string& source);

}  // namespace callscope::stack
