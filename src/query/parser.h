// The D parser: clauses (probe descriptions, an optional /predicate/, an
// optional { body }) into the tree of ast.h. Recursive descent with C's
// (and D's) precedence; the first error stops it with D's message shape,
// "line 3: syntax error near "}"".
#pragma once

#include <string_view>
#include <vector>

#include "common/result.h"
#include "query/ast.h"
#include "query/lexer.h"

namespace callscope::query {

struct Parsed {
  Script script;
  std::vector<Lexer::Pragma> pragmas;
};

// Errors carry "line N: ..." (compile() puts the script's name in front).
Result<Parsed> parse(std::string_view source, const MacroArgs& macros);

// A probe description's text into its four fields, read from the right as
// D reads a partial one ("entry" is ":::entry").
Result<ProbeSpec> split_probe_description(const std::string& text, int line);

}  // namespace callscope::query
