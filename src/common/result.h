// Errors as values for all offline code (never the runtime).
//
// A failing function returns Error with a message; each layer that passes it
// on adds context in front ("cannot read trace 'x': block 3 at offset 812:
// bad checksum"). `main` prints the message once and exits non-zero.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace callscope {

class Error {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const std::string& message() const { return message_; }
  // Returns a copy with "what: " put in front of the message.
  Error context(const std::string& what) const { return Error(what + ": " + message_); }

 private:
  std::string message_;
};

// errno-based error: "what: strerror(errno)".
Error system_error(const std::string& what, int errnum);

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT: implicit on purpose
  Result(Error error) : v_(std::move(error)) {}       // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace callscope

// Propagate an error with added context: TRY_CTX(var, expr, "reading x").
#define CALLSCOPE_CONCAT2(a, b) a##b
#define CALLSCOPE_CONCAT(a, b) CALLSCOPE_CONCAT2(a, b)
#define CALLSCOPE_TRY(decl, expr)                                  \
  auto CALLSCOPE_CONCAT(try_, __LINE__) = (expr);                  \
  if (!CALLSCOPE_CONCAT(try_, __LINE__)) return CALLSCOPE_CONCAT(try_, __LINE__).error(); \
  decl = std::move(CALLSCOPE_CONCAT(try_, __LINE__)).value()
#define CALLSCOPE_CHECK(expr)                                      \
  do {                                                             \
    auto r_ = (expr);                                              \
    if (!r_) return r_.error();                                    \
  } while (0)
