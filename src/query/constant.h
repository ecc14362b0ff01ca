// Integer constant expressions, evaluated when a script compiles (D folds
// them: a constant zero divisor, lquantize's parameters, the integer
// constants some functions take).
#pragma once

#include <cstdint>
#include <optional>

#include "query/ast.h"

namespace callscope::query {

// The value of an integer constant expression (literals, operators on
// them, casts of them: inlines arrive as casts), or nothing. Arithmetic
// wraps as the DIF would, without C's undefined overflow.
std::optional<int64_t> constant_value(const Expr& e);

}  // namespace callscope::query
