// The semantic pass: what compiles, and every refusal with its message, in
// the shape the CLI prints ("failed to compile script t.d: line N: ...").
#include "query/compile.h"

#include <gtest/gtest.h>

namespace callscope::query {
namespace {

Result<std::shared_ptr<const Program>> build(const std::string& src, CompileOptions o = {}) {
  return compile(src, "t.d", o);
}

std::string error_of(const std::string& src, CompileOptions o = {}) {
  auto r = build(src, o);
  return r ? "(compiled)" : r.error().message();
}

const CompiledProgram& prog(const Result<std::shared_ptr<const Program>>& r) {
  return static_cast<const CompiledProgram&>(*r.value());
}

TEST(Compile, ErrorShape) {
  EXPECT_EQ(error_of("BEGIN {\n  x = 1;\n}\n}"), "failed to compile script t.d: line 4: syntax error near \"}\"");
}

TEST(Compile, ProbesAndOptions) {
  CompileOptions o;
  o.target = 321;
  o.options["aggsortrev"] = "";
  auto r = build("#pragma D option quiet\n#pragma D option bufsize=8m\npid$target::main:entry, END { }", o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const auto& p = **r;
  ASSERT_EQ(p.clause_count(), 1u);
  EXPECT_EQ(p.clause_probes(0)[0].provider, "pid321");
  EXPECT_EQ(p.clause_probes(0)[0].text, "pid321::main:entry");
  EXPECT_EQ(p.clause_probes(0)[1].name, "END");
  EXPECT_EQ(p.options().at("bufsize"), "8m");
  EXPECT_TRUE(option_set(p.options(), "quiet"));
  EXPECT_TRUE(option_set(p.options(), "aggsortrev"));
  EXPECT_EQ(error_of("#pragma D option nosuch=1\nBEGIN {}"),
            "failed to compile script t.d: line 1: failed to set option nosuch: Invalid option name");
  CompileOptions bad;
  bad.options["nspec"] = "x";
  EXPECT_EQ(error_of("BEGIN {}", bad), "failed to set option nspec to \"x\": Invalid value for specified option");
  CompileOptions neg;
  neg.options["aggsortpos"] = "-1";
  EXPECT_EQ(error_of("BEGIN {}", neg), "failed to set option aggsortpos to \"-1\": Invalid value for specified option");
}

TEST(Compile, VariablesTakeTheirFirstAssignmentsType) {
  auto r = build("pid1:::return /self->ts/ { @[probefunc] = quantize(timestamp - self->ts); self->ts = 0; }\n"
                 "pid1:::entry { self->ts = timestamp; name = probefunc; n[name, 1] = 2; this->x = pid; }");
  ASSERT_TRUE(r.ok()) << r.error().message();
  const auto& p = prog(r);
  ASSERT_EQ(p.thread_vars.size(), 1u);
  EXPECT_EQ(p.thread_vars[0].type, Type::kUint);
  EXPECT_EQ(p.globals[0].type, Type::kString);
  EXPECT_EQ(p.arrays[0].keys.size(), 2u);
  EXPECT_EQ(p.clause_vars[0].bytes, 4);
  ASSERT_EQ(p.aggs.size(), 1u);
  EXPECT_EQ(p.aggs[0].fn, AggFn::kQuantize);
}

TEST(Compile, TypeErrors) {
  EXPECT_EQ(error_of("BEGIN { x = y; }"), "failed to compile script t.d: line 1: failed to resolve y: Unknown variable name");
  EXPECT_EQ(error_of("BEGIN { x = 1; }\nEND { x = \"s\"; }"),
            "failed to compile script t.d: line 2: operands have incompatible types: \"int64_t\" = \"string\"");
  EXPECT_EQ(error_of("BEGIN { x = \"a\" + 1; }"),
            "failed to compile script t.d: line 1: operator + requires operands of integral type, not \"string\" and \"int64_t\"");
  EXPECT_EQ(error_of("BEGIN { x = \"a\" == 1; }"),
            "failed to compile script t.d: line 1: operands have incompatible types: \"string\" == \"int64_t\"");
  EXPECT_EQ(error_of("BEGIN { timestamp = 1; }"),
            "failed to compile script t.d: line 1: operator = can only be applied to a writable variable: timestamp is a built-in");
  EXPECT_EQ(error_of("BEGIN { x = strlen(1); }"),
            "failed to compile script t.d: line 1: strlen( ) argument #1 is incompatible with prototype:\n\tprototype: string\n\t argument: int64_t");
  EXPECT_EQ(error_of("BEGIN { x = substr(\"a\"); }"),
            "failed to compile script t.d: line 1: substr( ) prototype mismatch: 1 arg passed, 2 to 3 expected");
  EXPECT_EQ(error_of("BEGIN { x = nosuch(1); }"), "failed to compile script t.d: line 1: failed to resolve nosuch: Unknown function");
  EXPECT_EQ(error_of("BEGIN { x = printf(\"a\"); }"),
            "failed to compile script t.d: line 1: printf( ) is an action: it gives no value and may only be used as a statement");
  EXPECT_EQ(error_of("BEGIN { a[1] = 1; a[\"x\"] = 2; }"),
            "failed to compile script t.d: line 1: a[ ] key #1 is incompatible with prototype:\n\tprototype: int64_t\n\t argument: string");
  EXPECT_EQ(error_of("BEGIN { a[1] = 1; x = a; }"), "failed to compile script t.d: line 1: a is an associative array: index it, a[key]");
  EXPECT_EQ(error_of("BEGIN { a[1,2,3,4,5,6,7,8,9,10,11] = 1; }"),
            "failed to compile script t.d: line 1: a[ ] has 11 keys: callscope query allows at most 10");
  EXPECT_EQ(error_of("BEGIN { x = b[1,2,3,4,5,6,7,8,9,10,11]; }"),
            "failed to compile script t.d: line 1: b[ ] has 11 keys: callscope query allows at most 10");
}

TEST(Compile, AggregationPrototypes) {
  EXPECT_EQ(error_of("BEGIN { @ = count(1); }"),
            "failed to compile script t.d: line 1: count( ) prototype mismatch: 1 arg passed, 0 expected");
  EXPECT_EQ(error_of("BEGIN { @ = quantize(); }"),
            "failed to compile script t.d: line 1: quantize( ) prototype mismatch: 0 args passed, 1 to 2 expected");
  EXPECT_EQ(error_of("BEGIN { @ = lquantize(1, 2); }"),
            "failed to compile script t.d: line 1: lquantize( ) prototype mismatch: 2 args passed, 3 to 5 expected");
  EXPECT_EQ(error_of("BEGIN { @ = llquantize(1, 10, 0, 6); }"),
            "failed to compile script t.d: line 1: llquantize( ) prototype mismatch: 4 args passed, 5 to 6 expected");
  EXPECT_EQ(error_of("BEGIN { @ = lquantize(1, 10, 0); }"),
            "failed to compile script t.d: line 1: lquantize( ) base (argument #2) must be less than limit (argument #3)");
  EXPECT_EQ(error_of("BEGIN { @ = lquantize(1, 0, x); x = 1; }"),
            "failed to compile script t.d: line 1: lquantize( ) argument #3 (limit) must be an integer constant");
  EXPECT_EQ(error_of("BEGIN { @ = llquantize(1, 10, 0, 6, 7); }"),
            "failed to compile script t.d: line 1: llquantize( ) argument #2 (factor) and argument #5 (number of steps) must divide one another evenly");
  EXPECT_EQ(error_of("BEGIN { @ = sum(\"s\"); }"),
            "failed to compile script t.d: line 1: sum( ) argument #1 is incompatible with prototype:\n\tprototype: integer\n\t argument: string");
  EXPECT_EQ(error_of("BEGIN { @a = count(); }\nEND { @a = sum(1); }"),
            "failed to compile script t.d: line 2: aggregation redefined: @a\n\t current: sum( )\n\tprevious: count( ) at line 1");
  EXPECT_EQ(error_of("BEGIN { @a[1] = count(); @a[1, 2] = count(); }"),
            "failed to compile script t.d: line 1: aggregation @a used with 2 key(s); line 1 gives it 1");
  EXPECT_EQ(error_of("BEGIN { @a = strlen(\"x\"); }"),
            "failed to compile script t.d: line 1: strlen( ) is not an aggregating function (count, sum, avg, min, max, stddev, quantize, lquantize, llquantize)");
  EXPECT_EQ(error_of("END { printa(@nope); }"),
            "failed to compile script t.d: line 1: undefined aggregation @nope: no @nope = ...( ) in the script");
  EXPECT_EQ(error_of("BEGIN { x = @a; @a = count(); }"),
            "failed to compile script t.d: line 1: aggregation @a cannot be used in an expression: printa( ), trunc( ), clear( ), normalize( ) and denormalize( ) take it");
  EXPECT_TRUE(build("BEGIN { @a[probefunc, ustack()] = llquantize(timestamp, 10, 0, 6, 20, 2); @b = lquantize(1, -10, 10, 5, 3); trunc(@a, 5); normalize(@b, 2); }").ok());
}

TEST(Compile, PrintfChecks) {
  EXPECT_EQ(error_of("BEGIN { @a[pid] = count(); printa(\"%s %@d\", @a); }"),
            "failed to compile script t.d: line 1: printa( ) argument #2 is incompatible with conversion #1 prototype:\n"
            "\tconversion: %s\n\t prototype: char [] or string (or use stringof)\n\t  argument: pid_t");
  EXPECT_TRUE(build("BEGIN { printf(\"%s %d %u\\n\", probefunc, pid, timestamp); }").ok());
  EXPECT_EQ(error_of("BEGIN { x = \"%d\"; printf(x, 1); }"),
            "failed to compile script t.d: line 1: printf( ) argument #1 must be a format string constant");
  auto r = build("BEGIN { printf(\"%d\\n\", probefunc); }");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("failed to compile script t.d: line 1: printf( ) argument #2 is incompatible"), std::string::npos)
      << r.error().message();
}

TEST(Compile, Refusals) {
  EXPECT_EQ(error_of("BEGIN { x = copyinstr(arg0); }"),
            "failed to compile script t.d: line 1: copyinstr( ) is not supported: callscope query reads a trace, not the program's memory");
  EXPECT_EQ(error_of("BEGIN { stop(); }"),
            "failed to compile script t.d: line 1: stop( ) is not supported: callscope query observes a program, it does not act on it");
  EXPECT_EQ(error_of("BEGIN { system(\"ls\"); }"),
            "failed to compile script t.d: line 1: system( ) is not supported: callscope query observes a program, it does not act on it");
  // D's arg0/arg1 at a pid probe are the function's arguments (issue 33):
  // refused in a clause that can fire there, whatever its other probes;
  // another provider's are its own.
  EXPECT_EQ(error_of("pid1::main:entry, proc:::exit { x = arg0; }"),
            "failed to compile script t.d: line 1: arg0 is not available at pid1::main:entry: D's arg0 there is the "
            "function's first argument, and callscope records no function arguments or return values yet (probefunc "
            "and probemod name the function)");
  EXPECT_NE(error_of(":::return { x = arg1; }").find("D's arg1 there is the function's return value"), std::string::npos);
  EXPECT_NE(error_of("pid*:::entry { x = arg1; }").find("arg1 is not available at pid*:::entry"), std::string::npos);
  EXPECT_TRUE(build("proc:::exit, alloc:::malloc { x = arg0 + arg1; }", CompileOptions{}).ok());
  EXPECT_TRUE(build("pid1::main:entry { x = tid; } proc:::exit { y = arg0; }", CompileOptions{}).ok());
  EXPECT_TRUE(build("BEGIN { trace(1LL << 62); }", CompileOptions{}).ok());
  for (const char* f : {"raise(9)", "chill(1)", "breakpoint()", "panic()", "copyin(arg0, 4)"})
    EXPECT_NE(error_of(std::string("BEGIN { ") + f + "; }").find("is not supported"), std::string::npos) << f;
  EXPECT_EQ(error_of("BEGIN { x = uregs; }"), "failed to compile script t.d: line 1: uregs is not available: callscope records no registers");
  EXPECT_NE(error_of("BEGIN { x = curthread; }").find("curthread is not available"), std::string::npos);
  EXPECT_NE(error_of("pid1::main:entry { x = arg3; }").find("D's arg3 there is its argument 4"), std::string::npos);
  EXPECT_TRUE(build("syscall::write:entry { x = arg2 + arg5 + arg9; }", CompileOptions{}).ok());
  // errno and cpu: where the kernel's events fire (issue 33).
  EXPECT_TRUE(build("syscall::open*:return { x = errno; } sched:::on-cpu { y = cpu; }", CompileOptions{}).ok());
  EXPECT_EQ(error_of("syscall::read:return, proc:::exit { x = errno; }"),
            "failed to compile script t.d: line 1: errno is not available at proc:::exit: callscope knows a thread's "
            "errno at the syscall provider's probes only (record --events syscalls)");
  EXPECT_NE(error_of("BEGIN { x = cpu; }").find("callscope knows a thread's CPU "
                                               "at the sched provider's probes only"),
            std::string::npos);
  EXPECT_TRUE(build("BEGIN { x = vtimestamp; }", CompileOptions{}).ok());  // (the switches are checked at run)
  EXPECT_EQ(error_of("BEGIN { trace(pid); speculate(1); }"),
            "failed to compile script t.d: line 1: speculate( ) may not follow data-recording actions");
  EXPECT_EQ(error_of("BEGIN { speculate(1); @a = count(); }"),
            "failed to compile script t.d: line 1: aggregating actions may not follow speculate( )");
  EXPECT_EQ(error_of("BEGIN { speculate(1); exit(0); }"), "failed to compile script t.d: line 1: exit( ) may not follow speculate( )");
  EXPECT_EQ(error_of("BEGIN { x = $target; }"),
            "failed to compile script t.d: line 1: macro argument $target is not defined: give callscope query -c or -p");
}

TEST(Compile, MacroArguments) {
  CompileOptions o;
  o.macro_args = {"5", "main"};
  auto r = build("pid1::$2:entry /tid == $1/ { printf(\"%s\\n\", $$2); }", o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)->clause_probes(0)[0].function, "main");
  EXPECT_EQ(error_of("BEGIN { x = $3; }", o), "failed to compile script t.d: line 1: macro argument $3 is not defined");
  o.options["defaultargs"] = "";
  EXPECT_TRUE(build("BEGIN { x = $3; y = $$3; }", o).ok());
}

}  // namespace
}  // namespace callscope::query

namespace callscope::query {
namespace {

// Every prefix of a script that uses most of the language compiles or
// fails with a located message; none crashes (the sanitizer build runs it).
TEST(Compile, EveryPrefixFailsCleanly) {
  const std::string script =
      "#pragma D option quiet\n"
      "pid$target:a.out:f*:entry, pid$target::g:entry /self->ts == 0 && tid != 0x10/ {\n"
      "  self->ts = timestamp; this->s = strjoin(probefunc, \"/x\"); a[this->s, 1] = 'c';\n"
      "  if (substr(this->s, 1) == \"\") { x = (uint8_t)-1 ? 1 : 2; } else { x ^= ~3 >> 1; }\n"
      "}\n"
      "pid$target:::return /self->ts/ { @q[ustack(2), probefunc] = quantize(duration); @l = lquantize(depth, 0, 10, 2);\n"
      "  printf(\"%s %d\\n\", basename(\"/a/b\"), x++); self->ts = 0; }\n"
      "END { printa(\"%@d\\n\", @l); trunc(@q, 3); exit(0); }\n";
  CompileOptions o;
  o.target = 1;
  ASSERT_TRUE(compile(script, "all.d", o).ok()) << compile(script, "all.d", o).error().message();
  for (size_t n = 0; n < script.size(); ++n) {
    auto r = compile(script.substr(0, n), "all.d", o);
    if (!r) {
      EXPECT_EQ(r.error().message().rfind("failed to compile script all.d: line ", 0), 0u) << r.error().message();
    }
  }
}

}  // namespace
}  // namespace callscope::query

namespace callscope::query {
namespace {

TEST(CompileDecl, DeclaredTypesAreFixed) {
  auto r = build("int x;\nself uint64_t ts;\nthis int n;\nint counts[string];\nunsigned char c;\n"
                 "BEGIN { x = timestamp; self->ts = 0; this->n = 1; counts[\"a\"] = 1; c = 1; }");
  ASSERT_TRUE(r.ok()) << r.error().message();
  const auto& p = prog(r);
  ASSERT_EQ(p.globals.size(), 2u);
  EXPECT_EQ(p.globals[0].type, Type::kInt);
  EXPECT_EQ(p.globals[0].bytes, 4);  // not widened by the uint64_t stored in it
  EXPECT_EQ(p.globals[1].type, Type::kUint);
  EXPECT_EQ(p.globals[1].bytes, 1);
  ASSERT_EQ(p.thread_vars.size(), 1u);
  EXPECT_EQ(p.thread_vars[0].type, Type::kUint);
  EXPECT_EQ(p.thread_vars[0].bytes, 8);  // not narrowed by the int 0
  ASSERT_EQ(p.arrays.size(), 1u);
  ASSERT_EQ(p.arrays[0].keys.size(), 1u);
  EXPECT_EQ(p.arrays[0].keys[0], Type::kString);
  ASSERT_EQ(p.clause_vars.size(), 1u);
}

TEST(CompileDecl, DeclaredVariablesReadBeforeAnyAssignment) {
  EXPECT_EQ(error_of("int x;\nstring s;\nself int d;\nBEGIN { trace(x); trace(s); trace(self->d); }"), "(compiled)");
  EXPECT_EQ(error_of("BEGIN { trace(x); }"), "failed to compile script t.d: line 1: failed to resolve x: Unknown variable name");
}

TEST(CompileDecl, AssignmentsOfAnotherTypeAreErrors) {
  EXPECT_EQ(error_of("int x;\nBEGIN { x = \"s\"; }"),
            "failed to compile script t.d: line 2: operands have incompatible types: \"int\" = \"string\"");
  EXPECT_EQ(error_of("string s;\nBEGIN {\n s = 1;\n}"),
            "failed to compile script t.d: line 3: operands have incompatible types: \"string\" = \"int\"");
  EXPECT_EQ(error_of("self uint64_t ts;\nBEGIN { self->ts = probefunc; }"),
            "failed to compile script t.d: line 2: operands have incompatible types: \"uint64_t\" = \"string\"");
  EXPECT_EQ(error_of("string s;\nBEGIN { s++; }"),
            "failed to compile script t.d: line 2: operator ++ requires an operand of integral type, not \"string\"");
  EXPECT_EQ(error_of("int counts[string];\nBEGIN { counts[1] = 1; }"),
            "failed to compile script t.d: line 2: counts[ ] key #1 is incompatible with prototype:\n\tprototype: string\n\t argument: int64_t");
  EXPECT_EQ(error_of("int m[int, string];\nBEGIN { m[1] = 1; }"),
            "failed to compile script t.d: line 2: m[ ] prototype mismatch: 1 key passed, 2 expected");
  EXPECT_EQ(error_of("int x;\nBEGIN { x[1] = 1; }"),
            "failed to compile script t.d: line 2: x is a scalar, not an associative array");
}

TEST(CompileDecl, Redeclarations) {
  EXPECT_EQ(error_of("int x;\nint x;\nBEGIN { x = 1; }"), "(compiled)");  // the same again is fine, as in D
  EXPECT_EQ(error_of("int x;\nstring x;"),
            "failed to compile script t.d: line 2: identifier redeclared: x\n\t current: scalar string\n\tprevious: scalar int");
  EXPECT_EQ(error_of("int x;\nint x[string];"),
            "failed to compile script t.d: line 2: identifier redeclared: x\n\t current: associative array int[string]\n"
            "\tprevious: scalar int");
  EXPECT_EQ(error_of("int a[string];\nint a[int];"),
            "failed to compile script t.d: line 2: identifier redeclared: a\n\t current: associative array int[int]\n"
            "\tprevious: associative array int[string]");
  EXPECT_EQ(error_of("int pid;"), "failed to compile script t.d: line 1: built-in identifier redeclared: pid");
  EXPECT_EQ(error_of("inline int timestamp = 1;"), "failed to compile script t.d: line 1: built-in identifier redeclared: timestamp");
  EXPECT_EQ(error_of("string printf;"), "failed to compile script t.d: line 1: built-in identifier redeclared: printf");
}

TEST(CompileDecl, Inlines) {
  EXPECT_EQ(error_of("inline int LIMIT = 100;\ninline string NAME = \"x\";\n"
                     "BEGIN { @ = lquantize(1, 0, LIMIT, LIMIT / 10); s = NAME; exit(0); }"),
            "(compiled)");
  EXPECT_EQ(error_of("inline int X = \"s\";"),
            "failed to compile script t.d: line 1: inline X definition uses incompatible types: \"int\" = \"string\"");
  EXPECT_EQ(error_of("inline string S = 1;"),
            "failed to compile script t.d: line 1: inline S definition uses incompatible types: \"string\" = \"int\"");
  EXPECT_EQ(error_of("inline int X = 1;\nBEGIN { X = 2; }"),
            "failed to compile script t.d: line 2: operator = can only be applied to a writable variable");
}

TEST(CompileDecl, ConstantDivisorsOfZeroAreCompileErrors) {
  const std::string e = "failed to compile script t.d: line 1: expression contains division by zero";
  EXPECT_EQ(error_of("BEGIN { x = 1 / 0; }"), e);
  EXPECT_EQ(error_of("BEGIN { x = 1 % 0; }"), e);
  EXPECT_EQ(error_of("BEGIN { x = timestamp / (2 - 2); }"), e);  // folded, as D folds it
  EXPECT_EQ(error_of("BEGIN { x = 5; x /= 0; }"), e);
  EXPECT_EQ(error_of("BEGIN { x = 5; x %= 0; }"), e);
  EXPECT_EQ(error_of("inline int ZERO = 0;\nBEGIN { x = 1 / ZERO; }"),
            "failed to compile script t.d: line 2: expression contains division by zero");
  EXPECT_EQ(error_of("BEGIN /1 / 0/ { }"), e);
  EXPECT_EQ(error_of("BEGIN { x = (uint8_t)256; y = 1 / x; }"), "(compiled)");  // x is a variable: a runtime fault
  EXPECT_EQ(error_of("BEGIN { y = 1 / (uint8_t)256; }"), e);                   // the cast folds to 0
  EXPECT_EQ(error_of("BEGIN { y = 1 / 1; z = 1 % 3; }"), "(compiled)");
}

}  // namespace
}  // namespace callscope::query
