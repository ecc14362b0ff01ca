// The D parser (parser.h). One token of lookahead, plus a peek past a '/'
// to tell a predicate's end from a division, as dt_lex.l does with its
// DT_TOK_EPRED.
#include "query/parser.h"

#include <algorithm>
#include <map>
#include <optional>

namespace callscope::query {

namespace {

// Integer type names a cast may use: bits and signedness.
struct IntType {
  uint8_t bits;
  bool is_signed;
};
const std::map<std::string, IntType>& typedefs() {
  static const std::map<std::string, IntType> m = {
      {"int8_t", {8, true}},     {"int16_t", {16, true}},   {"int32_t", {32, true}},   {"int64_t", {64, true}},
      {"uint8_t", {8, false}},   {"uint16_t", {16, false}}, {"uint32_t", {32, false}}, {"uint64_t", {64, false}},
      {"intptr_t", {64, true}},  {"uintptr_t", {64, false}}, {"size_t", {64, false}},  {"ssize_t", {64, true}},
      {"pid_t", {32, true}},     {"tid_t", {32, true}},     {"id_t", {32, true}},      {"uint_t", {32, false}},
      {"uchar_t", {8, false}},   {"ushort_t", {16, false}}, {"ulong_t", {64, false}},  {"off_t", {64, true}},
      {"hrtime_t", {64, true}},  {"u_int", {32, false}},    {"processorid_t", {32, true}}, {"uid_t", {32, false}},
      {"gid_t", {32, false}},
  };
  return m;
}
bool is_type_word(const Token& t) {
  if (t.kind != Tok::kIdent) return false;
  static const char* words[] = {"char", "short", "int", "long", "signed", "unsigned"};
  for (const char* w : words)
    if (t.text == w) return true;
  return typedefs().count(t.text) > 0;
}

// Words that start a declaration at the top of a script, besides the
// integer type words: those callscope declares with, and C's, which it
// refuses by name.
bool starts_declaration(const Token& t) {
  if (t.kind != Tok::kIdent) return false;
  static const char* words[] = {"string", "self",   "this",  "inline", "struct",   "union",     "enum",
                                "typedef", "extern", "static", "register", "auto", "const", "volatile",
                                "void",    "float",  "double", "translator"};
  for (const char* w : words)
    if (t.text == w) return true;
  return is_type_word(t);
}

ExprPtr clone(const Expr& e) {
  auto c = std::make_unique<Expr>();
  c->kind = e.kind, c->line = e.line, c->op = e.op, c->name = e.name, c->value = e.value;
  c->is_unsigned = e.is_unsigned, c->is_long = e.is_long, c->prefix = e.prefix, c->cast_bits = e.cast_bits, c->cast_signed = e.cast_signed;
  for (const auto& a : e.args) c->args.push_back(clone(*a));
  return c;
}

std::string near(const Token& t) {
  switch (t.kind) {
    case Tok::kEof: return "end of input";
    case Tok::kString: return "\"\"" + t.text + "\"\"";
    case Tok::kInt: return "\"" + std::to_string(t.value) + "\"";
    case Tok::kAgg: return "\"@" + t.text + "\"";
    default: return "\"" + t.text + "\"";
  }
}

bool is_assign_op(const std::string& s) {
  return s == "=" || s == "+=" || s == "-=" || s == "*=" || s == "/=" || s == "%=" || s == "&=" || s == "|=" ||
         s == "^=" || s == "<<=" || s == ">>=";
}

bool is_lvalue(const Expr& e) {
  // A translated structure's member (curpsinfo->pr_pid) is read-only.
  return (e.kind == ExprKind::kIdent && e.name.find("->") == std::string::npos) || e.kind == ExprKind::kSelf ||
         e.kind == ExprKind::kThis || e.kind == ExprKind::kIndex;
}

class Parser {
 public:
  Parser(std::string_view src, const MacroArgs& macros) : lex_(src, macros) {}

  Result<Parsed> run() {
    Parsed out;
    while (!err_) {
      if (!lex_.more()) {
        if (lex_.pending_error()) advance();  // reports it
        break;
      }
      if (declaration_ahead()) {
        declaration(out.script);
        continue;
      }
      Clause c;
      if (!clause(c)) break;
      out.script.clauses.push_back(std::move(c));
    }
    if (err_) return *err_;
    out.pragmas = lex_.pragmas();
    return out;
  }

 private:
  void fail(int line, const std::string& msg) {
    if (!err_) err_ = Error("line " + std::to_string(line) + ": " + msg);
  }
  void syntax_error() { fail(tok_.line, "syntax error near " + near(tok_)); }
  void advance() {
    tok_ = lex_.next();
    if (tok_.kind == Tok::kError) fail(tok_.line, tok_.text);
  }
  bool is(const char* p) const { return tok_.kind == Tok::kPunct && tok_.text == p; }
  bool accept(const char* p) {
    if (!is(p)) return false;
    advance();
    return true;
  }
  bool expect(const char* p) {
    if (accept(p)) return true;
    syntax_error();
    return false;
  }
  ExprPtr node(ExprKind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }

  // A declaration is a declaration word followed by a name or another
  // word ("int x", "self int x", "unsigned long x", "struct foo x"); a
  // probe description never lexes that way ("int:::entry" is one).
  bool declaration_ahead() {
    const auto p = lex_.pos();
    const Token a = lex_.next();
    bool decl = false;
    if (starts_declaration(a)) {
      const Token b = lex_.next();
      decl = b.kind == Tok::kIdent || (b.kind == Tok::kPunct && b.text == "*");
    }
    lex_.reset(p);
    return decl;
  }

  // [self|this] [inline] type declarator {, declarator} ;
  void declaration(Script& script) {
    advance();
    const int line = tok_.line;
    ExprKind scope = ExprKind::kIdent;
    if (tok_.text == "self" || tok_.text == "this") {
      scope = tok_.text == "self" ? ExprKind::kSelf : ExprKind::kThis;
      advance();
    }
    bool is_inline = false;
    if (tok_.kind == Tok::kIdent && tok_.text == "inline") {
      if (scope != ExprKind::kIdent) return fail(line, "inline may not be declared self or this: an inline is a named constant");
      is_inline = true;
      advance();
    }
    DeclType type;
    if (!type_spec(type, line)) return;
    for (;;) {
      if (is("*"))
        return fail(line, "pointer declarations (" + type.name +
                              " *) are not supported: callscope query does not read the program's memory");
      if (tok_.kind != Tok::kIdent || starts_declaration(tok_)) return syntax_error();
      Decl d;
      d.scope = scope, d.name = tok_.text, d.type = type, d.line = tok_.line, d.is_inline = is_inline;
      advance();
      if (err_) return;
      if (is_inline) {
        if (!expect("=")) return;
        d.value = assignment();
        if (err_) return;
        inlines_[d.name] = {type, d.value.get()};
      } else if (accept("[")) {
        if (scope == ExprKind::kThis)
          return fail(line, "associative arrays may not be declared as local variables: " + d.name);
        if (scope == ExprKind::kSelf)
          return fail(line, "self->" + d.name + "[...]: associative arrays of self-> variables are not supported; "
                                                "use a global array keyed by tid");
        if (tok_.kind == Tok::kInt)
          return fail(line, d.name + "[" + std::to_string(tok_.value) +
                                "]: arrays of fixed size are not supported; declare an associative array, " + d.name +
                                "[int]");
        if (is("]")) return fail(line, "array declaration requires array dimension or tuple signature: " + d.name);
        for (;;) {
          DeclType k;
          if (!type_spec(k, line)) return;
          d.keys.push_back(k);
          if (accept("]")) break;
          if (!expect(",")) return;
        }
        d.is_array = true;
      }
      script.decls.push_back(std::move(d));
      if (accept(",")) continue;
      if (!is(";")) return syntax_error();
      return;  // tok_ is the ';': the next clause or declaration starts after it
    }
  }

  // A D type: the integer type words (in C's combinations) or string;
  // anything else is refused by name.
  bool type_spec(DeclType& out, int line) {
    IntWords t;
    std::string& written = t.written;
    bool str = false;
    while (!err_ && tok_.kind == Tok::kIdent) {
      const std::string w = tok_.text;
      if (w == "struct" || w == "union" || w == "enum") {
        advance();
        const std::string tag = tok_.kind == Tok::kIdent ? " " + tok_.text : "";
        fail(line, w + tag + ": " + w +
                       " types are not supported: callscope query declares integer and string variables only");
        return false;
      }
      if (w == "typedef" || w == "extern" || w == "static" || w == "register" || w == "auto" || w == "const" ||
          w == "volatile" || w == "translator") {
        fail(line, w + " is not supported in declarations: callscope query declares integer and string variables only");
        return false;
      }
      if (w == "void" || w == "float" || w == "double") {
        fail(line, w + " variables are not supported: callscope query declares integer and string variables only");
        return false;
      }
      if (w == "string") {
        if (!written.empty()) {
          fail(line, "invalid type combination: " + written + " string");
          return false;
        }
        str = true;
        written = w;
        advance();
        break;
      }
      if (!is_type_word(tok_)) break;
      if (!int_word(t, line)) return false;
    }
    if (err_) return false;
    if (written.empty()) {
      syntax_error();
      return false;
    }
    if (str) {
      out.type = Type::kString, out.bytes = 8, out.name = "string";
      return true;
    }
    uint8_t bits;
    bool is_signed;
    if (!int_type(t, line, bits, is_signed, out.name)) return false;
    out.type = is_signed ? Type::kInt : Type::kUint;
    out.bytes = static_cast<uint8_t>(bits / 8);
    return true;
  }

  // The integer type words of a declaration or a cast, read one at a time
  // (int_word), then what they name (int_type).
  struct IntWords {
    int longs = 0, sign = 0, base_bits = 0;
    bool saw_int = false;
    std::optional<IntType> named;
    std::string named_word, written;
  };
  // The type word at tok_, in C's combinations: one sign, one base word
  // ("short int" and "long int" are the base word and int), a typedef
  // alone; false (and the error) for any other.
  bool int_word(IntWords& t, int line) {
    const std::string w = tok_.text;
    const bool twice = (t.named && !t.written.empty()) || (!t.written.empty() && typedefs().count(w)) ||
                       ((w == "unsigned" || w == "signed") && t.sign) || (w == "int" && t.saw_int) ||
                       ((w == "char" || w == "short") && t.base_bits && t.base_bits != 32);
    if (twice) {
      fail(line, "invalid type combination: " + t.written + " " + w);
      return false;
    }
    t.written += (t.written.empty() ? "" : " ") + w;
    if (w == "unsigned") t.sign = -1;
    else if (w == "signed") t.sign = 1;
    else if (w == "long") ++t.longs;
    else if (w == "char") t.base_bits = 8;
    else if (w == "short") t.base_bits = 16;
    else if (w == "int") t.base_bits = t.base_bits ? t.base_bits : 32, t.saw_int = true;
    else t.named = typedefs().at(w), t.named_word = w;
    advance();
    return true;
  }
  // What the words name: its size, sign and the name D gives it ("unsigned
  // long", "char", "long long", a typedef's own); false (and the error)
  // for more than two longs or a long char/short.
  bool int_type(const IntWords& t, int line, uint8_t& bits, bool& is_signed, std::string& name) {
    if ((t.longs && t.base_bits && t.base_bits != 32) || t.longs > 2) {
      fail(line, "invalid type combination: " + t.written);
      return false;
    }
    if (t.named) {
      bits = t.named->bits, is_signed = t.named->is_signed;
      name = t.named_word;
      return true;
    }
    bits = static_cast<uint8_t>(t.longs ? 64 : t.base_bits ? t.base_bits : 32);
    is_signed = t.sign >= 0;
    const std::string base = t.longs == 2 ? "long long" : t.longs ? "long" : bits == 8 ? "char" : bits == 16 ? "short" : "int";
    name = (t.sign < 0 ? "unsigned " : t.sign > 0 && bits == 8 ? "signed " : "") + base;
    return true;
  }

  bool clause(Clause& c) {
    for (;;) {
      Token d = lex_.probe_desc();
      if (d.kind == Tok::kError) {
        fail(d.line, d.text);
        return false;
      }
      if (d.text.empty()) {
        advance();
        if (!err_) syntax_error();
        return false;
      }
      if (c.probes.empty()) c.line = d.line;
      auto spec = split_probe_description(d.text, d.line);
      if (!spec) {
        fail(d.line, spec.error().message());
        return false;
      }
      // The first field is the provider when all four are given.
      spec->target = d.target_in_first && std::count(d.text.begin(), d.text.end(), ':') == 3;
      c.probes.push_back(std::move(*spec));
      const auto after = lex_.pos();
      advance();
      if (err_) return false;
      if (tok_.kind == Tok::kIdent || tok_.kind == Tok::kInt) {
        lex_.reset(after);  // a clause of descriptions alone; another clause follows
        return true;
      }
      if (!is(",")) break;
    }
    if (is("/")) {
      in_predicate_ = true;
      advance();
      c.predicate = expression();
      in_predicate_ = false;
      if (err_) return false;
      if (!is("/")) {
        syntax_error();
        return false;
      }
      const auto after = lex_.pos();
      advance();
      if (err_) return false;
      if (!is("{")) {
        lex_.reset(after);  // a clause without a body; the next description follows
        return true;
      }
    }
    if (is("{")) {
      advance();
      statements(c.body);
      return !err_;  // tok_ is the closing '}'
    }
    if (tok_.kind == Tok::kEof) return true;
    syntax_error();
    return false;
  }

  // Statements up to the closing '}' (left as the current token).
  void statements(std::vector<Stmt>& out) {
    while (!err_ && !is("}")) {
      if (tok_.kind == Tok::kEof) {
        syntax_error();
        return;
      }
      if (accept(";")) continue;
      const bool block_like = tok_.kind == Tok::kIdent && tok_.text == "if";
      out.push_back(statement());
      if (err_) return;
      if (!block_like && !is("}") && !accept(";")) {
        syntax_error();
        return;
      }
    }
  }

  // A statement or a { block } (the arms of if/else).
  std::vector<Stmt> arm() {
    std::vector<Stmt> body;
    if (accept("{")) {
      statements(body);
      if (!err_) advance();  // past '}'
      return body;
    }
    const bool nested_if = tok_.kind == Tok::kIdent && tok_.text == "if";
    body.push_back(statement());
    if (!err_ && !nested_if && !accept(";") && !is("}")) syntax_error();
    return body;
  }

  Stmt statement() {
    Stmt s;
    s.line = tok_.line;
    struct Guard {
      int& n;
      ~Guard() { --n; }
    } guard{++stmt_nesting_};
    if (stmt_nesting_ > kMaxNesting) {
      fail(tok_.line, "statements nested more than " + std::to_string(kMaxNesting) + " deep");
      return s;
    }
    if (tok_.kind == Tok::kIdent && tok_.text == "if") {
      s.kind = StmtKind::kIf;
      advance();
      if (!expect("(")) return s;
      s.expr = expression();
      if (err_ || !expect(")")) return s;
      s.then_body = arm();
      if (err_) return s;
      if (tok_.kind == Tok::kIdent && tok_.text == "else") {
        advance();
        s.else_body = arm();
      }
      return s;
    }
    if (tok_.kind == Tok::kAgg) {
      s.kind = StmtKind::kAgg;
      s.agg = tok_.text;
      advance();
      if (accept("[")) {
        s.keys = arguments("]");
        if (err_) return s;
      }
      if (!is("=")) {
        fail(tok_.line, "aggregation @" + s.agg + " must be assigned an aggregating function: @" + s.agg +
                            " = count() and the like");
        return s;
      }
      advance();
      if (tok_.kind != Tok::kIdent) {
        syntax_error();
        return s;
      }
      s.fn = tok_.text;
      advance();
      if (!is("(")) {
        fail(s.line, "aggregation @" + s.agg + " must be assigned an aggregating function, not " + s.fn);
        return s;
      }
      advance();
      s.fn_args = arguments(")");
      return s;
    }
    s.kind = StmtKind::kExpr;
    s.expr = expression();
    return s;
  }

  // Comma-separated expressions up to `close` (consumed).
  std::vector<ExprPtr> arguments(const char* close) {
    std::vector<ExprPtr> out;
    if (accept(close)) return out;
    for (;;) {
      out.push_back(assignment());
      if (err_) return out;
      if (accept(close)) return out;
      if (!expect(",")) return out;
    }
  }

  ExprPtr expression() { return assignment(); }

  ExprPtr assignment() {
    ExprPtr lhs = ternary();
    if (err_ || tok_.kind != Tok::kPunct || !is_assign_op(tok_.text)) return lhs;
    const std::string op = tok_.text;
    const int line = tok_.line;
    if (!is_lvalue(*lhs)) {
      fail(line, "operator " + op + " can only be applied to a writable variable");
      return lhs;
    }
    advance();
    auto e = node(ExprKind::kAssign, line);
    e->op = op;
    e->args.push_back(std::move(lhs));
    e->args.push_back(assignment());
    return e;
  }

  ExprPtr ternary() {
    ExprPtr c = binary(0);
    if (err_ || !is("?")) return c;
    const int line = tok_.line;
    advance();
    auto e = node(ExprKind::kTernary, line);
    e->args.push_back(std::move(c));
    e->args.push_back(assignment());
    if (err_ || !expect(":")) return e;
    e->args.push_back(ternary());
    return e;
  }

  // Binary operators by precedence level, lowest first (D's: || ^^ && |
  // ^ & equality relational shift additive multiplicative).
  static int level(const std::string& op) {
    static const std::map<std::string, int> m = {
        {"||", 0}, {"^^", 1}, {"&&", 2}, {"|", 3},  {"^", 4},  {"&", 5},  {"==", 6}, {"!=", 6}, {"<", 7},
        {"<=", 7}, {">", 7},  {">=", 7}, {"<<", 8}, {">>", 8}, {"+", 9},  {"-", 9},  {"*", 10}, {"/", 10},
        {"%", 10},
    };
    auto it = m.find(op);
    return it == m.end() ? -1 : it->second;
  }

  // A '/' in a predicate ends it when what follows starts the body or
  // ends the input.
  bool ends_predicate() {
    if (!in_predicate_ || depth_ > 0 || !is("/")) return false;
    const auto p = lex_.pos();
    Token t = lex_.next();
    lex_.reset(p);
    return t.kind == Tok::kEof || (t.kind == Tok::kPunct && t.text == "{");
  }

  ExprPtr binary(int min_level) {
    ExprPtr lhs = unary();
    int chain = 0;  // a left-leaning chain (a + b + c ...) is as deep as it is long
    while (!err_ && tok_.kind == Tok::kPunct) {
      if (++chain > kMaxChain) {
        fail(tok_.line, "expression longer than " + std::to_string(kMaxChain) + " operators");
        break;
      }
      const int l = level(tok_.text);
      if (l < min_level || l < 0 || ends_predicate()) break;
      auto e = node(ExprKind::kBinary, tok_.line);
      e->op = tok_.text;
      advance();
      e->args.push_back(std::move(lhs));
      e->args.push_back(binary(l + 1));
      lhs = std::move(e);
    }
    return lhs;
  }

  // Every nested expression passes here: a bound on the nesting keeps a
  // hostile script from exhausting the stack.
  ExprPtr unary() {
    struct Guard {
      int& n;
      ~Guard() { --n; }
    } guard{++nesting_};
    if (nesting_ > kMaxNesting) {
      fail(tok_.line, "expression nested more than " + std::to_string(kMaxNesting) + " deep");
      return node(ExprKind::kInt, tok_.line);
    }
    return unary_inner();
  }

  ExprPtr unary_inner() {
    const int line = tok_.line;
    if (tok_.kind == Tok::kPunct) {
      const std::string op = tok_.text;
      if (op == "-" || op == "+" || op == "!" || op == "~") {
        advance();
        auto e = node(ExprKind::kUnary, line);
        e->op = op;
        e->args.push_back(unary());
        return e;
      }
      if (op == "++" || op == "--") {
        advance();
        auto e = node(ExprKind::kIncDec, line);
        e->op = op;
        e->prefix = true;
        e->args.push_back(unary());
        if (!err_ && !is_lvalue(*e->args[0])) fail(line, "operator " + op + " can only be applied to a writable variable");
        return e;
      }
      if (op == "*" || op == "&") {
        fail(line, "operator " + op + " (pointers) is not supported: callscope query does not read the program's memory");
        return node(ExprKind::kInt, line);
      }
      if (op == "(") {
        const auto p = lex_.pos();
        Token t = lex_.next();
        lex_.reset(p);
        if (is_type_word(t)) return cast(line);
      }
    }
    return postfix();
  }

  ExprPtr cast(int line) {
    advance();  // past '('
    IntWords t;
    while (!err_ && tok_.kind == Tok::kIdent && is_type_word(tok_))
      if (!int_word(t, line)) return node(ExprKind::kInt, line);
    if (err_) return node(ExprKind::kInt, line);
    if (is("*")) {
      fail(line, "cast to (" + t.written + " *) is not supported: callscope query does not read the program's memory");
      return node(ExprKind::kInt, line);
    }
    uint8_t bits;
    bool is_signed;
    std::string name;
    if (!int_type(t, line, bits, is_signed, name) || !expect(")")) return node(ExprKind::kInt, line);
    auto e = node(ExprKind::kCast, line);
    e->cast_bits = bits;
    e->cast_signed = is_signed;
    e->name = t.written;
    e->args.push_back(unary());
    return e;
  }

  ExprPtr postfix() {
    ExprPtr e = primary();
    while (!err_ && tok_.kind == Tok::kPunct) {
      const int line = tok_.line;
      if (is("[") || is("(")) {
        const bool call = is("(");
        if (e->kind != ExprKind::kIdent) {
          syntax_error();
          return e;
        }
        advance();
        ++depth_;
        auto n = node(call ? ExprKind::kCall : ExprKind::kIndex, e->line);
        n->name = e->name;
        n->args = arguments(call ? ")" : "]");
        --depth_;
        e = std::move(n);
      } else if (is("++") || is("--")) {
        if (!is_lvalue(*e)) {
          fail(line, "operator " + tok_.text + " can only be applied to a writable variable");
          return e;
        }
        auto n = node(ExprKind::kIncDec, line);
        n->op = tok_.text;
        advance();
        n->args.push_back(std::move(e));
        e = std::move(n);
      } else if (is("->") && translated(*e)) {
        // curpsinfo->pr_pid, args[0]->b_bcount: a member of a translated
        // structure (translators.h), one name for the compiler.
        std::string base = e->name;
        if (e->kind == ExprKind::kIndex) base += "[" + std::to_string(e->args[0]->value) + "]";
        advance();
        if (tok_.kind != Tok::kIdent) {
          syntax_error();
          return e;
        }
        auto n = node(ExprKind::kIdent, line);
        n->name = base + "->" + tok_.text;
        advance();
        e = std::move(n);
      } else if (is(".") || is("->")) {
        fail(line, "operator " + tok_.text + " is not supported here: only self->, this->, curpsinfo->, "
                   "curlwpsinfo-> and a provider's args[N]-> name members");
        return e;
      } else {
        break;
      }
    }
    return e;
  }

  // What -> may follow: curpsinfo, curlwpsinfo, args[N].
  static bool translated(const Expr& e) {
    if (e.kind == ExprKind::kIdent) return e.name == "curpsinfo" || e.name == "curlwpsinfo";
    return e.kind == ExprKind::kIndex && e.name == "args" && e.args.size() == 1 && e.args[0]->kind == ExprKind::kInt;
  }

  ExprPtr primary() {
    const Token t = tok_;
    switch (t.kind) {
      case Tok::kInt: {
        advance();
        auto e = node(ExprKind::kInt, t.line);
        e->value = t.value;
        e->is_unsigned = t.is_unsigned;
        e->is_long = t.is_long;
        return e;
      }
      case Tok::kString: {
        advance();
        auto e = node(ExprKind::kString, t.line);
        e->name = t.text;
        return e;
      }
      case Tok::kAgg: {
        advance();
        auto e = node(ExprKind::kAggRef, t.line);
        e->name = t.text;
        if (is("[")) fail(t.line, "aggregation @" + t.text + "[...] cannot be read in an expression: print it with printa()");
        return e;
      }
      case Tok::kIdent: {
        advance();
        if (t.text == "self" || t.text == "this") {
          if (!expect("->")) return node(ExprKind::kInt, t.line);
          if (tok_.kind != Tok::kIdent) {
            syntax_error();
            return node(ExprKind::kInt, t.line);
          }
          auto e = node(t.text == "self" ? ExprKind::kSelf : ExprKind::kThis, t.line);
          e->name = tok_.text;
          advance();
          if (is("[") && t.text == "this") {
            fail(tok_.line, "this->" + e->name + "[...]: associative arrays may not be clause-local variables");
          } else if (is("[")) {
            // self->a[k...]: an array of the thread's, as the array
            // "self->a" keyed by the thread (a hidden builtin) and k...
            const int line = tok_.line;
            advance();
            ++depth_;
            auto n = node(ExprKind::kIndex, line);
            n->name = "self->" + e->name;
            auto thread = node(ExprKind::kIdent, line);
            thread->name = kSelfThreadBuiltin;
            n->args.push_back(std::move(thread));
            for (auto& k : arguments("]")) n->args.push_back(std::move(k));
            --depth_;
            return n;
          }
          return e;
        }
        if (t.text == "stringof") {
          // D's operator: stringof expr (a string already: itself).
          auto e = node(ExprKind::kCall, t.line);
          e->name = "stringof";
          e->args.push_back(unary());
          return e;
        }
        if (t.text == "sizeof" || t.text == "offsetof" || t.text == "xlate") {
          fail(t.line, t.text + " is not supported by callscope query");
          return node(ExprKind::kInt, t.line);
        }
        if (auto in = inlines_.find(t.text); in != inlines_.end()) return inline_use(in->second, t.line);
        auto e = node(ExprKind::kIdent, t.line);
        e->name = t.text;
        return e;
      }
      case Tok::kPunct:
        if (t.text == "(") {
          advance();
          ++depth_;
          ExprPtr e = expression();
          --depth_;
          if (!err_) expect(")");
          return e;
        }
        break;
      default:
        break;
    }
    syntax_error();
    return node(ExprKind::kInt, t.line);
  }

  struct Inline {
    DeclType type;
    const Expr* value;  // owned by the Script's Decl
  };

  // An inline's name stands for a copy of its expression, converted to
  // the inline's type as an assignment would convert it.
  ExprPtr inline_use(const Inline& in, int line) {
    ExprPtr v = clone(*in.value);
    if (in.type.type == Type::kString) return v;
    auto e = node(ExprKind::kCast, line);
    e->cast_bits = static_cast<uint8_t>(in.type.bytes * 8);
    e->cast_signed = in.type.type == Type::kInt;
    e->name = in.type.name;
    e->args.push_back(std::move(v));
    return e;
  }

  Lexer lex_;
  Token tok_;
  std::map<std::string, Inline> inlines_;
  std::optional<Error> err_;
  bool in_predicate_ = false;
  int depth_ = 0;  // parentheses and brackets open (a '/' inside never ends a predicate)
  int nesting_ = 0;       // expressions within expressions
  int stmt_nesting_ = 0;  // statements within if/else
  static constexpr int kMaxNesting = 256;
  static constexpr int kMaxChain = 1024;
};

}  // namespace

Result<ProbeSpec> split_probe_description(const std::string& text, int line) {
  std::vector<std::string> fields;
  size_t b = 0;
  for (;;) {
    const size_t c = text.find(':', b);
    fields.push_back(text.substr(b, c == std::string::npos ? std::string::npos : c - b));
    if (c == std::string::npos) break;
    b = c + 1;
  }
  if (fields.size() > 4)
    return Error("invalid probe description \"" + text + "\": Overspecified probe description");
  while (fields.size() < 4) fields.insert(fields.begin(), "");
  ProbeSpec s;
  s.provider = fields[0];
  s.module = fields[1];
  s.function = fields[2];
  s.name = fields[3];
  s.text = text;
  s.line = line;
  return s;
}

Result<Parsed> parse(std::string_view source, const MacroArgs& macros) {
  Parser p(source, macros);
  return p.run();
}

}  // namespace callscope::query
