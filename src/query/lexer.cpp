// The D lexer (lexer.h): tokens, literals as C and D write them, macro
// arguments, comments and #pragma lines.
#include "query/lexer.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace callscope::query {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Operators, longest first so that "<<=" wins over "<<" and "<".
constexpr const char* kPuncts[] = {
    "<<=", ">>=", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "^^", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "+", "-", "*", "/", "%", "<", ">", "=", "!", "~", "&", "|", "^", "?", ":", ";", ",",
    "(", ")", "[", "]", "{", "}", ".",
};

// Characters of a probe description besides letters and digits (dt_lex.l's
// RGX_PSPEC: globs, '$' for macros, '-' and '+' of "tick-1s" and C++ names).
bool probe_char(char c) {
  return ident_char(c) || std::strchr("$`*?.[]!:-+~&<>()", c) != nullptr;
}

}  // namespace

Lexer::Lexer(std::string_view src, const MacroArgs& macros) : src_(src), macros_(macros) {}

Token Lexer::error(std::string msg) const {
  Token t;
  t.kind = Tok::kError;
  t.text = std::move(msg);
  t.line = line_;
  return t;
}

bool Lexer::more() {
  skip_space();
  return off_ < src_.size();
}

void Lexer::skip_space() {
  while (off_ < src_.size()) {
    const char c = src_[off_];
    if (c == '\n') {
      ++line_, ++off_;
      line_start_ = true;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++off_;
    } else if (c == '/' && off_ + 1 < src_.size() && src_[off_ + 1] == '*') {
      const size_t end = src_.find("*/", off_ + 2);
      const size_t stop = end == std::string_view::npos ? src_.size() : end + 2;
      for (size_t i = off_; i < stop; ++i) line_ += src_[i] == '\n';
      if (end == std::string_view::npos && !pending_) pending_ = error("end-of-file encountered before matching */");
      off_ = stop;
    } else if (c == '/' && off_ + 1 < src_.size() && src_[off_ + 1] == '/') {
      while (off_ < src_.size() && src_[off_] != '\n') ++off_;
    } else if (c == '#' && line_start_) {
      directive();
    } else {
      line_start_ = false;
      return;
    }
  }
}

// A line starting with '#': "#!" on the first line (an interpreter line),
// "#pragma D option", and the other pragmas dtrace ignores. The C
// preprocessor's directives need dtrace -C, which callscope does not run.
void Lexer::directive() {
  const size_t end = std::min(src_.find('\n', off_), src_.size());
  std::string_view text = src_.substr(off_, end - off_);
  off_ = end;
  if (line_ == 1 && text.starts_with("#!")) return;
  auto words = [](std::string_view s) {
    std::vector<std::string> out;
    size_t i = 1;  // past '#'
    while (i < s.size()) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      const size_t b = i;
      while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i > b) out.emplace_back(s.substr(b, i - b));
    }
    return out;
  };
  const auto w = words(text);
  if (w.empty()) return;  // a lone '#' is a null directive
  if (w[0] != "pragma") {
    if (!pending_)
      pending_ = error("preprocessor directive #" + w[0] + " needs the C preprocessor (dtrace -C), which callscope query does not run");
    return;
  }
  if (w.size() < 2 || w[1] != "D") return;  // #pragma ident and friends: ignored as dtrace does
  if (w.size() >= 3 && w[2] == "option") {
    if (w.size() != 4) {
      if (!pending_) pending_ = error("#pragma D option requires one name[=value]");
      return;
    }
    const auto eq = w[3].find('=');
    Pragma p{line_, w[3].substr(0, eq), eq == std::string::npos ? "" : w[3].substr(eq + 1)};
    // The parser may read a stretch twice (it looks ahead): keep each line once.
    if (pragmas_.empty() || pragmas_.back().line < line_) pragmas_.push_back(std::move(p));
    return;
  }
  if (!pending_) pending_ = error("unsupported #pragma D " + (w.size() > 2 ? w[2] : std::string()) + ": only #pragma D option is");
}

Token Lexer::next() {
  skip_space();
  if (pending_) {
    Token t = *pending_;
    pending_.reset();
    return t;
  }
  Token t;
  t.line = line_;
  if (off_ >= src_.size()) return t;  // kEof
  const char c = src_[off_];
  if (ident_start(c)) {
    const size_t b = off_;
    while (off_ < src_.size() && ident_char(src_[off_])) ++off_;
    t.kind = Tok::kIdent;
    t.text = std::string(src_.substr(b, off_ - b));
    return t;
  }
  if (std::isdigit(static_cast<unsigned char>(c))) return number();
  if (c == '"' || c == '\'') return quoted(c);
  if (c == '$') return macro();
  if (c == '@') {
    const size_t b = ++off_;
    while (off_ < src_.size() && ident_char(src_[off_])) ++off_;
    t.kind = Tok::kAgg;
    t.text = std::string(src_.substr(b, off_ - b));
    return t;
  }
  for (const char* p : kPuncts) {
    const size_t n = std::strlen(p);
    if (src_.substr(off_, n) == p) {
      off_ += n;
      t.kind = Tok::kPunct;
      t.text = p;
      return t;
    }
  }
  ++off_;
  std::string shown = std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c) : "\\x" + [&] {
    static const char* hex = "0123456789abcdef";
    return std::string{hex[(c >> 4) & 15], hex[c & 15]};
  }();
  return error("invalid character '" + shown + "'");
}

// Integer constants as C writes them: decimal, 0x hex, 0 octal, with u/l
// suffixes in any mix. Too big for 64 bits is an error, as in D.
Token Lexer::number() {
  Token t;
  t.line = line_;
  t.kind = Tok::kInt;
  const size_t b = off_;
  int base = 10;
  if (src_[off_] == '0' && off_ + 1 < src_.size() && (src_[off_ + 1] == 'x' || src_[off_ + 1] == 'X')) {
    base = 16;
    off_ += 2;
  } else if (src_[off_] == '0') {
    base = 8;
  }
  const size_t digits = off_;
  while (off_ < src_.size() && std::isalnum(static_cast<unsigned char>(src_[off_]))) ++off_;
  std::string_view all = src_.substr(digits, off_ - digits);
  size_t n = 0;
  while (n < all.size() && std::isxdigit(static_cast<unsigned char>(all[n])) && (base == 16 || std::isdigit(static_cast<unsigned char>(all[n])))) ++n;
  std::string_view suffix = all.substr(n);
  std::string_view num = all.substr(0, n);
  const std::string whole(src_.substr(b, off_ - b));
  bool bad = num.empty() && base == 16;
  int us = 0, ls = 0;
  for (char s : suffix) {
    if (s == 'u' || s == 'U') ++us;
    else if (s == 'l' || s == 'L') ++ls;
    else bad = true;
  }
  if (bad || us > 1 || ls > 2) return error("invalid integer constant " + whole);
  uint64_t v = 0;
  for (char d : num) {
    const int dv = std::isdigit(static_cast<unsigned char>(d)) ? d - '0' : (std::tolower(d) - 'a' + 10);
    if (dv >= base) return error("invalid digit '" + std::string(1, d) + "' in octal constant " + whole);
    if (v > (UINT64_MAX - static_cast<uint64_t>(dv)) / static_cast<uint64_t>(base))
      return error("integer constant " + whole + " is too large to be represented");
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(dv);
  }
  t.value = v;
  t.is_unsigned = us > 0 || v > static_cast<uint64_t>(INT64_MAX);
  t.is_long = ls > 0;
  return t;
}

bool Lexer::escape(std::string& out, Token& err) {
  // off_ is past the backslash.
  if (off_ >= src_.size()) return false;
  const char c = src_[off_++];
  switch (c) {
    case 'n': out += '\n'; return true;
    case 't': out += '\t'; return true;
    case 'r': out += '\r'; return true;
    case 'a': out += '\a'; return true;
    case 'b': out += '\b'; return true;
    case 'f': out += '\f'; return true;
    case 'v': out += '\v'; return true;
    case '\\': case '\'': case '"': case '?': out += c; return true;
    case 'x': {
      int v = 0, n = 0;
      while (off_ < src_.size() && std::isxdigit(static_cast<unsigned char>(src_[off_])) && n < 2) {
        const char d = src_[off_++];
        v = v * 16 + (std::isdigit(static_cast<unsigned char>(d)) ? d - '0' : std::tolower(d) - 'a' + 10);
        ++n;
      }
      if (n == 0) {
        err = error("\\x used with no following hex digits");
        return false;
      }
      out += static_cast<char>(v);
      return true;
    }
    default:
      if (c >= '0' && c <= '7') {
        int v = c - '0', n = 1;
        while (off_ < src_.size() && src_[off_] >= '0' && src_[off_] <= '7' && n < 3) v = v * 8 + (src_[off_++] - '0'), ++n;
        out += static_cast<char>(v);
        return true;
      }
      err = error(std::string("invalid escape sequence '\\") + c + "'");
      return false;
  }
}

// "strings" and 'c' character constants (up to 8 characters, packed big
// end first as D does for multi-character constants).
Token Lexer::quoted(char quote) {
  Token t;
  t.line = line_;
  ++off_;
  std::string text;
  for (;;) {
    if (off_ >= src_.size() || src_[off_] == '\n')
      return error(quote == '"' ? "newline encountered in string literal" : "newline encountered in character constant");
    const char c = src_[off_++];
    if (c == quote) break;
    if (c == '\\') {
      Token err;
      if (!escape(text, err)) return err.kind == Tok::kError ? err : error("unterminated escape");
      continue;
    }
    text += c;
  }
  if (quote == '"') {
    t.kind = Tok::kString;
    t.text = std::move(text);
    return t;
  }
  if (text.empty()) return error("empty character constant");
  if (text.size() > 8) return error("character constant is too long");
  t.kind = Tok::kInt;
  for (char c : text) t.value = (t.value << 8) | static_cast<unsigned char>(c);
  if (text.size() == 1) t.value = static_cast<uint64_t>(static_cast<int64_t>(static_cast<signed char>(text[0])));
  return t;
}

std::optional<uint64_t> process_macro(std::string_view name) {
  if (name == "pid") return static_cast<uint64_t>(::getpid());
  if (name == "ppid") return static_cast<uint64_t>(::getppid());
  if (name == "pgid") return static_cast<uint64_t>(::getpgrp());
  if (name == "sid") return static_cast<uint64_t>(::getsid(0));
  if (name == "uid") return static_cast<uint64_t>(::getuid());
  if (name == "gid") return static_cast<uint64_t>(::getgid());
  if (name == "euid") return static_cast<uint64_t>(::geteuid());
  if (name == "egid") return static_cast<uint64_t>(::getegid());
  return std::nullopt;
}

// $1..$9 (and more), $target, $pid and the like, $$1: expanded to tokens.
Token Lexer::macro() {
  Token t;
  t.line = line_;
  const size_t b = off_;
  ++off_;
  bool as_string = false;
  if (off_ < src_.size() && src_[off_] == '$') as_string = true, ++off_;
  const size_t nb = off_;
  while (off_ < src_.size() && ident_char(src_[off_])) ++off_;
  const std::string name(src_.substr(nb, off_ - nb));
  const std::string whole(src_.substr(b, off_ - b));
  if (name == "target" || process_macro(name)) {
    if (name == "target" && !macros_.target)
      return error("macro argument $target is not defined: give callscope query -c or -p");
    const uint64_t v = name == "target" ? *macros_.target : *process_macro(name);
    if (as_string) {
      t.kind = Tok::kString;
      t.text = std::to_string(v);
    } else {
      t.kind = Tok::kInt;
      t.value = v;
    }
    return t;
  }
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return error("invalid macro " + whole);
  const size_t n = std::stoul(name);
  std::optional<std::string> arg;
  if (n == 0) arg = "callscope";  // $0: the script's name in dtrace
  else if (n <= macros_.args.size()) arg = macros_.args[n - 1];
  if (!arg) {
    if (!macros_.defaultargs) return error("macro argument " + whole + " is not defined");
    if (as_string) t.kind = Tok::kString;
    else t.kind = Tok::kInt;
    return t;
  }
  if (as_string) {
    t.kind = Tok::kString;
    t.text = *arg;
    return t;
  }
  // As D: an argument that reads as an integer is one, else an identifier.
  Lexer sub(*arg, macros_);
  Token num = sub.next();
  if (num.kind == Tok::kInt && !sub.more()) {
    num.line = line_;
    return num;
  }
  Lexer sub2(*arg, macros_);
  Token word = sub2.next();
  if (word.kind == Tok::kIdent && !sub2.more()) {
    word.line = line_;
    return word;
  }
  return error("macro argument " + whole + " (\"" + *arg + "\") is not an integer or an identifier; use $" + whole +
               " for a string");
}

Token Lexer::probe_desc() {
  skip_space();
  Token t;
  t.line = line_;
  if (pending_) {
    t = *pending_;
    pending_.reset();
    return t;
  }
  t.kind = Tok::kString;
  while (off_ < src_.size() && probe_char(src_[off_])) {
    if (src_[off_] == '$') {
      const size_t b = off_++;
      bool as_string = off_ < src_.size() && src_[off_] == '$';
      if (as_string) ++off_;
      while (off_ < src_.size() && ident_char(src_[off_])) ++off_;
      const std::string whole(src_.substr(b, off_ - b));
      Lexer sub(whole, macros_);
      Token m = sub.next();
      if (m.kind == Tok::kError) {
        m.line = line_;
        return m;
      }
      if (whole == "$target" && t.text.find(':') == std::string::npos) t.target_in_first = true;
      if (m.kind == Tok::kInt) t.text += std::to_string(m.value);
      else t.text += m.text;
      continue;
    }
    t.text += src_[off_++];
  }
  return t;
}

}  // namespace callscope::query
