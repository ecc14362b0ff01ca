// The D lexer: turns a script into tokens on demand. D has two lexical
// worlds, as dt_lex.l does with its start states: probe descriptions
// ("pid$target:a.out:foo*:entry", read as raw text up to a blank, ',', '/'
// or '{') and the C-like expressions of predicates and actions. The parser
// knows which one comes next and asks for it (probe_desc() or next()).
//
// Macro arguments ($1..$9, $target, $$1) are expanded here, as D's lexer
// does: "$1" becomes an integer token when the argument reads as one, else
// an identifier; "$$1" always a string. #pragma D option lines are
// collected while skipping blanks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace callscope::query {

enum class Tok : uint8_t {
  kEof,
  kError,   // text: the message ("line N: " is added by the parser)
  kIdent,
  kInt,     // value, is_unsigned (a 'u' suffix or too big for int64), is_long (an 'l' or 'll' suffix)
  kString,  // text: the decoded string
  kAgg,     // text: the name after '@' ("" for the anonymous @)
  kPunct,   // text: the operator or punctuation
};

struct Token {
  Tok kind = Tok::kEof;
  std::string text;
  uint64_t value = 0;
  bool is_unsigned = false;
  bool is_long = false;
  int line = 1;
  // probe_desc(): $target was expanded in the first field (pid$target:...),
  // so that a query can say what such a provider left out (driver.h).
  bool target_in_first = false;
};

struct MacroArgs {
  std::vector<std::string> args;  // $1 is args[0]
  std::optional<uint64_t> target;
  bool defaultargs = false;  // an unset $N reads 0 / "" instead of an error
};

// dtrace's macro variables of the query's own process: $pid, $ppid, $pgid,
// $sid, $uid, $gid, $euid, $egid (nullopt: not one of them).
std::optional<uint64_t> process_macro(std::string_view name);

class Lexer {
 public:
  Lexer(std::string_view src, const MacroArgs& macros);

  struct Pos {
    size_t off = 0;
    int line = 1;
  };
  Pos pos() const { return {off_, line_}; }
  void reset(Pos p) { off_ = p.off, line_ = p.line; }
  int line() const { return line_; }

  // The next token of an expression.
  Token next();
  // A probe description, macros expanded. An empty text means none is
  // there (the parser says what it found instead); kError on a bad macro.
  Token probe_desc();
  // Skips blanks, comments and # lines; false at the end of the input.
  bool more();

  // #pragma D option name[=value], in order (line, name, value).
  struct Pragma {
    int line;
    std::string name, value;
  };
  const std::vector<Pragma>& pragmas() const { return pragmas_; }
  // An error found while skipping (a bad # line), reported by next().
  const std::optional<Token>& pending_error() const { return pending_; }

 private:
  void skip_space();
  void directive();
  Token number();
  Token quoted(char quote);
  Token macro();
  bool escape(std::string& out, Token& err);
  Token error(std::string msg) const;

  std::string_view src_;
  const MacroArgs& macros_;
  size_t off_ = 0;
  int line_ = 1;
  bool line_start_ = true;
  std::vector<Pragma> pragmas_;
  std::optional<Token> pending_;
};

}  // namespace callscope::query
