#include "query/constant.h"

#include <cstdint>

namespace callscope::query {

std::optional<int64_t> constant_value(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kInt: return static_cast<int64_t>(e.value);
    case ExprKind::kCast: {
      auto v = constant_value(*e.args[0]);
      if (!v || e.cast_bits >= 64) return v;
      const unsigned shift = 64u - e.cast_bits;
      const uint64_t up = static_cast<uint64_t>(*v) << shift;
      return e.cast_signed ? static_cast<int64_t>(up) >> shift : static_cast<int64_t>(up >> shift);
    }
    case ExprKind::kUnary: {
      auto v = constant_value(*e.args[0]);
      if (!v) return v;
      if (e.op == "-") return static_cast<int64_t>(0 - static_cast<uint64_t>(*v));
      if (e.op == "~") return ~*v;
      if (e.op == "+") return v;
      return !*v;
    }
    case ExprKind::kBinary: {
      auto a = constant_value(*e.args[0]), b = constant_value(*e.args[1]);
      if (!a || !b) return std::nullopt;
      const uint64_t ua = static_cast<uint64_t>(*a), ub = static_cast<uint64_t>(*b);
      if (e.op == "+") return static_cast<int64_t>(ua + ub);
      if (e.op == "-") return static_cast<int64_t>(ua - ub);
      if (e.op == "*") return static_cast<int64_t>(ua * ub);
      if ((e.op == "/" || e.op == "%") && *b != 0 && !(*a == INT64_MIN && *b == -1))
        return e.op == "/" ? *a / *b : *a % *b;
      if (e.op == "&") return *a & *b;
      if (e.op == "|") return *a | *b;
      if (e.op == "^") return *a ^ *b;
      if (e.op == "<<" && *b >= 0 && *b < 64) return static_cast<int64_t>(ua << *b);
      if (e.op == ">>" && *b >= 0 && *b < 64) return *a >> *b;
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

}  // namespace callscope::query
