// The D parser: clause shapes, precedence, statements and syntax errors.
#include "query/parser.h"

#include <gtest/gtest.h>

namespace callscope::query {
namespace {

// The tree of an expression as a Lisp-like string, to check precedence.
std::string show(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kInt: return std::to_string(e.value);
    case ExprKind::kString: return "\"" + e.name + "\"";
    case ExprKind::kIdent: return e.name;
    case ExprKind::kSelf: return "self->" + e.name;
    case ExprKind::kThis: return "this->" + e.name;
    case ExprKind::kAggRef: return "@" + e.name;
    case ExprKind::kCast: return "(" + e.name + ")" + show(*e.args[0]);
    case ExprKind::kIncDec: return e.prefix ? e.op + show(*e.args[0]) : show(*e.args[0]) + e.op;
    default: break;
  }
  std::string s = "(" + (e.kind == ExprKind::kIndex || e.kind == ExprKind::kCall ? e.name + (e.kind == ExprKind::kIndex ? "[]" : "()")
                         : e.kind == ExprKind::kTernary ? std::string("?:")
                                                        : e.op);
  for (const auto& a : e.args) s += " " + show(*a);
  return s + ")";
}

Parsed must_parse(const std::string& src, const MacroArgs& m = {}) {
  auto r = parse(src, m);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r ? std::move(*r) : Parsed{};
}

std::string expr_of(const std::string& e) {
  auto p = must_parse("BEGIN { " + e + "; }");
  if (p.script.clauses.empty() || p.script.clauses[0].body.empty()) return "?";
  return show(*p.script.clauses[0].body[0].expr);
}

std::string error_of(const std::string& src) {
  auto r = parse(src, MacroArgs{});
  return r ? "(parsed)" : r.error().message();
}

TEST(Parser, Precedence) {
  EXPECT_EQ(expr_of("a = 1 + 2 * 3"), "(= a (+ 1 (* 2 3)))");
  EXPECT_EQ(expr_of("a || b ^^ c && d"), "(|| a (^^ b (&& c d)))");
  EXPECT_EQ(expr_of("a | b ^ c & d == e < f << g + h"), "(| a (^ b (& c (== d (< e (<< f (+ g h)))))))");
  EXPECT_EQ(expr_of("x = a ? b : c ? d : e"), "(= x (?: a b (?: c d e)))");
  EXPECT_EQ(expr_of("x += y -= 2"), "(+= x (-= y 2))");
  EXPECT_EQ(expr_of("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(expr_of("-!~x"), "(- (! (~ x)))");
  EXPECT_EQ(expr_of("(unsigned long)x + (int8_t)y"), "(+ (unsigned long)x (int8_t)y)");
  EXPECT_EQ(expr_of("self->x++"), "self->x++");
  EXPECT_EQ(expr_of("--this->y"), "--this->y");
  EXPECT_EQ(expr_of("a[1, \"k\"] = strlen(s)"), "(= (a[] 1 \"k\") (strlen() s))");
  EXPECT_EQ(expr_of("printa(\"%@d\", @a, @)"), "(printa() \"%@d\" @a @)");
}

TEST(Parser, ClauseShapes) {
  auto p = must_parse("BEGIN\n/* c */ syscall::read:entry, pid$target:a.out:main:return /x/\n{ a = 1 }\ntick-1s { } END /y / 2 == 1/",
                      MacroArgs{{}, 9, false});
  ASSERT_EQ(p.script.clauses.size(), 4u);
  EXPECT_EQ(p.script.clauses[0].probes[0].name, "BEGIN");
  EXPECT_TRUE(p.script.clauses[0].body.empty());
  const auto& c1 = p.script.clauses[1];
  ASSERT_EQ(c1.probes.size(), 2u);
  EXPECT_EQ(c1.probes[0].provider, "syscall");
  EXPECT_EQ(c1.probes[1].provider, "pid9");
  EXPECT_EQ(c1.probes[1].function, "main");
  EXPECT_EQ(c1.line, 2);
  ASSERT_TRUE(c1.predicate);
  EXPECT_EQ(c1.body.size(), 1u);
  // A predicate with a division, and a clause without a body after it.
  EXPECT_EQ(p.script.clauses[2].probes[0].name, "tick-1s");
  EXPECT_EQ(show(*p.script.clauses[3].predicate), "(== (/ y 2) 1)");
}

// Which descriptions name their provider with $target (what a query over
// several processes says it left out): only $target itself, in the
// provider's field.
TEST(Parser, DescriptionsWrittenWithTargetAreMarked) {
  auto p = must_parse("pid$target:a.out::entry, fpid$target:::return, pid9:::entry, pid*:::entry, "
                      "pid$1:::entry, $target:::entry, ::$target:entry, pid$target::entry {}",
                      MacroArgs{{"9"}, 9, false});
  std::vector<bool> target;
  std::vector<std::string> providers;
  for (const ProbeSpec& s : p.script.clauses[0].probes) {
    target.push_back(s.target);
    providers.push_back(s.provider);
  }
  EXPECT_EQ(target, (std::vector<bool>{true, true, false, false, false, true, false, false}));
  EXPECT_EQ(providers[0], "pid9");
  EXPECT_EQ(providers[7], "");  // three fields: "pid9" is the module
}

TEST(Parser, PartialDescriptionsReadFromTheRight) {
  auto a = split_probe_description("entry", 1);
  EXPECT_EQ(a->name, "entry");
  EXPECT_EQ(a->provider, "");
  auto b = split_probe_description("foo:entry", 1);
  EXPECT_EQ(b->function, "foo");
  auto c = split_probe_description("m:f:n", 1);
  EXPECT_EQ(c->module, "m");
  EXPECT_EQ(split_probe_description("a:b:c:d:e", 1).error().message(),
            "invalid probe description \"a:b:c:d:e\": Overspecified probe description");
}

TEST(Parser, IfElseAndAggregations) {
  auto p = must_parse("BEGIN { if (x) { a = 1; } else if (y) b = 2; else { c = 3 } @n[probefunc, 1] = lquantize(x, 0, 10, 2); @ = count() }");
  const auto& body = p.script.clauses[0].body;
  ASSERT_EQ(body.size(), 3u);
  EXPECT_EQ(body[0].kind, StmtKind::kIf);
  EXPECT_EQ(body[0].else_body[0].kind, StmtKind::kIf);
  EXPECT_EQ(body[1].kind, StmtKind::kAgg);
  EXPECT_EQ(body[1].agg, "n");
  EXPECT_EQ(body[1].keys.size(), 2u);
  EXPECT_EQ(body[1].fn, "lquantize");
  EXPECT_EQ(body[1].fn_args.size(), 4u);
  EXPECT_EQ(body[2].agg, "");
}

TEST(Parser, DeepNestingIsAnErrorNotACrash) {
  const std::string deep = "BEGIN { x = " + std::string(100000, '(') + "1" + std::string(100000, ')') + "; }";
  EXPECT_EQ(error_of(deep), "line 1: expression nested more than 256 deep");
  const std::string minus = "BEGIN { x = " + std::string(100000, '-') + "1; }";
  EXPECT_EQ(error_of(minus), "line 1: expression nested more than 256 deep");
  std::string chain = "BEGIN { x = 1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  EXPECT_EQ(error_of(chain + "; }"), "line 1: expression longer than 1024 operators");
  std::string ifs = "BEGIN { x = 1; if (x) x = 2;";
  for (int i = 0; i < 100000; ++i) ifs += " else if (x) x = 2;";
  EXPECT_EQ(error_of(ifs + " }"), "line 1: statements nested more than 256 deep");
  EXPECT_EQ(error_of("BEGIN { x = " + std::string(100, '(') + "1" + std::string(100, ')') + "; }"), "(parsed)");
}

TEST(Parser, SyntaxErrors) {
  EXPECT_EQ(error_of("BEGIN {\n x = 1\n y = 2;\n}"), "line 3: syntax error near \"y\"");
  EXPECT_EQ(error_of("BEGIN { x = ; }"), "line 1: syntax error near \";\"");
  EXPECT_EQ(error_of("BEGIN {\n x = 1;\n"), "line 3: syntax error near end of input");
  EXPECT_EQ(error_of("}"), "line 1: syntax error near \"}\"");
  EXPECT_EQ(error_of("BEGIN { 1 = x; }"), "line 1: operator = can only be applied to a writable variable");
  EXPECT_EQ(error_of("BEGIN { @a; }"), "line 1: aggregation @a must be assigned an aggregating function: @a = count() and the like");
  EXPECT_EQ(error_of("BEGIN { x = *p; }"), "line 1: operator * (pointers) is not supported: callscope query does not read the program's memory");
  EXPECT_EQ(error_of("BEGIN { x = 1 # 2; }"), "line 1: invalid character '#'");
  EXPECT_EQ(error_of("BEGIN { x = a.b; }"), "line 1: operator . is not supported here: only self->, this->, curpsinfo->, curlwpsinfo-> and a "
            "provider's args[N]-> name members");
  // Members of translated structures are read-only (issue 33).
  EXPECT_EQ(error_of("sched:::on-cpu { curpsinfo->pr_pid = 1; }"),
            "line 1: operator = can only be applied to a writable variable");
  EXPECT_EQ(error_of("sched:::on-cpu { x = args[0]->; }"), "line 1: syntax error near \";\"");
}

}  // namespace
}  // namespace callscope::query

namespace callscope::query {
namespace {

TEST(ParserDecl, DeclarationsOfEveryScopeAndShape) {
  auto p = must_parse("int x;\nself uint64_t ts;\nthis int n;\nint a, b;\nint counts[string];\nint m[int, string];\n"
                      "unsigned long long u;\nsigned char c;\nstring s;\nBEGIN { x = 1; }\nshort t;\nEND { }");
  const auto& d = p.script.decls;
  ASSERT_EQ(d.size(), 11u);
  EXPECT_EQ(d[0].name, "x");
  EXPECT_EQ(d[0].scope, ExprKind::kIdent);
  EXPECT_EQ(d[0].type.name, "int");
  EXPECT_EQ(d[0].type.bytes, 4);
  EXPECT_EQ(d[0].type.type, Type::kInt);
  EXPECT_EQ(d[1].scope, ExprKind::kSelf);
  EXPECT_EQ(d[1].type.name, "uint64_t");
  EXPECT_EQ(d[1].type.type, Type::kUint);
  EXPECT_EQ(d[1].type.bytes, 8);
  EXPECT_EQ(d[2].scope, ExprKind::kThis);
  EXPECT_EQ(d[3].name, "a");
  EXPECT_EQ(d[4].name, "b");
  EXPECT_TRUE(d[5].is_array);
  ASSERT_EQ(d[5].keys.size(), 1u);
  EXPECT_EQ(d[5].keys[0].type, Type::kString);
  ASSERT_EQ(d[6].keys.size(), 2u);
  EXPECT_EQ(d[6].keys[0].name, "int");
  EXPECT_EQ(d[6].keys[1].name, "string");
  EXPECT_EQ(d[7].type.name, "unsigned long long");
  EXPECT_EQ(d[7].type.type, Type::kUint);
  EXPECT_EQ(d[8].type.name, "signed char");
  EXPECT_EQ(d[8].type.bytes, 1);
  EXPECT_EQ(d[9].type.type, Type::kString);
  EXPECT_EQ(d[10].type.bytes, 2);  // between clauses
  auto u = must_parse("uid_t u;\nsize_t z;\nlong l;\nunsigned u2;\nshort int si;\nint short is;\nunsigned long int uli;");
  ASSERT_EQ(u.script.decls.size(), 7u);
  EXPECT_EQ(u.script.decls[4].type.bytes, 2);
  EXPECT_EQ(u.script.decls[5].type.bytes, 2);
  EXPECT_EQ(u.script.decls[6].type.bytes, 8);
  EXPECT_EQ(u.script.decls[6].type.name, "unsigned long");
  EXPECT_EQ(u.script.decls[0].type.type, Type::kUint);
  EXPECT_EQ(u.script.decls[0].type.bytes, 4);
  EXPECT_EQ(u.script.decls[1].type.bytes, 8);
  EXPECT_EQ(u.script.decls[2].type.bytes, 8);
  EXPECT_EQ(u.script.decls[2].type.type, Type::kInt);
  EXPECT_EQ(u.script.decls[3].type.name, "unsigned int");
  EXPECT_EQ(u.script.decls[3].type.type, Type::kUint);
  EXPECT_EQ(p.script.clauses.size(), 2u);
}

TEST(ParserDecl, ProbeDescriptionsAreNotDeclarations) {
  // A provider named like a type, and a clause of descriptions alone
  // before a declaration.
  auto p = must_parse("int:::entry { }\nBEGIN\nint x;\nEND { }");
  ASSERT_EQ(p.script.clauses.size(), 3u);
  EXPECT_EQ(p.script.clauses[0].probes[0].provider, "int");
  ASSERT_EQ(p.script.decls.size(), 1u);
}

TEST(ParserDecl, InlinesAreSubstitutedAsCastsOfTheirExpression) {
  auto p = must_parse("inline int LIMIT = 10 * 10;\ninline string NAME = \"x\";\nBEGIN { y = LIMIT + 1; s = NAME; }");
  ASSERT_EQ(p.script.decls.size(), 2u);
  EXPECT_TRUE(p.script.decls[0].is_inline);
  const auto& body = p.script.clauses[0].body;
  EXPECT_EQ(show(*body[0].expr), "(= y (+ (int)(* 10 10) 1))");
  EXPECT_EQ(show(*body[1].expr), "(= s \"x\")");
}

TEST(ParserDecl, RefusedDeclarations) {
  EXPECT_EQ(error_of("struct timespec ts;"),
            "line 1: struct timespec: struct types are not supported: callscope query declares integer and string variables only");
  EXPECT_EQ(error_of("typedef int foo_t;"),
            "line 1: typedef is not supported in declarations: callscope query declares integer and string variables only");
  EXPECT_EQ(error_of("int *p;"),
            "line 1: pointer declarations (int *) are not supported: callscope query does not read the program's memory");
  EXPECT_EQ(error_of("double d;"), "line 1: double variables are not supported: callscope query declares integer and string variables only");
  EXPECT_EQ(error_of("this int a[int];"), "line 1: associative arrays may not be declared as local variables: a");
  EXPECT_EQ(error_of("int a[];"), "line 1: array declaration requires array dimension or tuple signature: a");
  EXPECT_EQ(error_of("int a[4];"), "line 1: a[4]: arrays of fixed size are not supported; declare an associative array, a[int]");
  EXPECT_EQ(error_of("unsigned string s;"), "line 1: invalid type combination: unsigned string");
  EXPECT_EQ(error_of("short long x;"), "line 1: invalid type combination: short long");
  EXPECT_EQ(error_of("int int x;"), "line 1: invalid type combination: int int");
  EXPECT_EQ(error_of("unsigned signed x;"), "line 1: invalid type combination: unsigned signed");
  EXPECT_EQ(error_of("char short x;"), "line 1: invalid type combination: char short");
  EXPECT_EQ(error_of("int uint64_t x;"), "line 1: invalid type combination: int uint64_t");
  EXPECT_EQ(error_of("long long long x;"), "line 1: invalid type combination: long long long");
  EXPECT_EQ(error_of("self inline int X = 1;"), "line 1: inline may not be declared self or this: an inline is a named constant");
  EXPECT_EQ(error_of("int x\nBEGIN { }"), "line 2: syntax error near \"BEGIN\"");
  EXPECT_EQ(error_of("inline int X;"), "line 1: syntax error near \";\"");
}

}  // namespace
}  // namespace callscope::query
