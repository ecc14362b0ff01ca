// D's names (dnames.h): the tables of built-in variables and functions.
#include "query/dnames.h"

#include <fnmatch.h>

#include <cstdint>
#include <map>

namespace callscope::query {

namespace {

const std::map<std::string, std::pair<Builtin, Type>>& builtins() {
  static const std::map<std::string, std::pair<Builtin, Type>> m = {
      {"probeprov", {Builtin::kProbeprov, Type::kString}},
      {"probemod", {Builtin::kProbemod, Type::kString}},
      {"probefunc", {Builtin::kProbefunc, Type::kString}},
      {"probename", {Builtin::kProbename, Type::kString}},
      {"pid", {Builtin::kPid, Type::kInt}},
      {"ppid", {Builtin::kPpid, Type::kInt}},
      {"tid", {Builtin::kTid, Type::kInt}},
      {"execname", {Builtin::kExecname, Type::kString}},
      {"timestamp", {Builtin::kTimestamp, Type::kUint}},
      {"walltimestamp", {Builtin::kWalltimestamp, Type::kUint}},
      {"epid", {Builtin::kEpid, Type::kUint}},
      {"id", {Builtin::kId, Type::kUint}},
      {"arg0", {Builtin::kArg0, Type::kInt}},
      {"arg1", {Builtin::kArg1, Type::kInt}},
      {"ustackdepth", {Builtin::kUstackdepth, Type::kUint}},
      {"ucaller", {Builtin::kUcaller, Type::kUint}},
      {"duration", {Builtin::kDuration, Type::kUint}},
      {"selfduration", {Builtin::kSelfduration, Type::kUint}},
      {"depth", {Builtin::kDepth, Type::kInt}},
      {"arg2", {Builtin::kArg2, Type::kInt}},
      {"arg3", {Builtin::kArg3, Type::kInt}},
      {"arg4", {Builtin::kArg4, Type::kInt}},
      {"arg5", {Builtin::kArg5, Type::kInt}},
      {"arg6", {Builtin::kArg6, Type::kInt}},
      {"arg7", {Builtin::kArg7, Type::kInt}},
      {"arg8", {Builtin::kArg8, Type::kInt}},
      {"arg9", {Builtin::kArg9, Type::kInt}},
      {"errno", {Builtin::kErrno, Type::kInt}},
      {"cpu", {Builtin::kCpu, Type::kInt}},
      {"vtimestamp", {Builtin::kVtimestamp, Type::kUint}},
      {kSelfThreadBuiltin, {Builtin::kSelfThread, Type::kUint}},
  };
  return m;
}

const std::map<std::string, Func>& functions() {
  static const std::map<std::string, Func> m = {
      {"strlen", Func::kStrlen},       {"strjoin", Func::kStrjoin},   {"substr", Func::kSubstr},
      {"strstr", Func::kStrstr},       {"strchr", Func::kStrchr},     {"strrchr", Func::kStrrchr},
      {"index", Func::kIndex},         {"rindex", Func::kRindex},     {"basename", Func::kBasename},
      {"dirname", Func::kDirname},     {"lltostr", Func::kLltostr},   {"strtoll", Func::kStrtoll},
      {"toupper", Func::kToupper},     {"tolower", Func::kTolower},   {"ustack", Func::kUstack},
      {"ufunc", Func::kUfunc},         {"umod", Func::kUmod},         {"usym", Func::kUsym},
      {"speculation", Func::kSpeculation}, {"rand", Func::kRand},     {"printf", Func::kPrintf},
      {"trace", Func::kTrace},         {"print", Func::kPrint},       {"printa", Func::kPrinta},
      {"exit", Func::kExit},           {"speculate", Func::kSpeculate}, {"commit", Func::kCommit},
      {"discard", Func::kDiscard},     {"trunc", Func::kTrunc},       {"clear", Func::kClear},
      {"normalize", Func::kNormalize}, {"denormalize", Func::kDenormalize}, {"stringof", Func::kStringof},
      {"strtok", Func::kStrtok},       {"cleanpath", Func::kCleanpath}, {"setopt", Func::kSetopt},
  };
  return m;
}

}  // namespace

std::optional<std::pair<Builtin, Type>> builtin_type(const std::string& name) {
  auto it = builtins().find(name);
  if (it == builtins().end()) return std::nullopt;
  return it->second;
}

uint8_t builtin_bytes(Builtin b) {
  switch (b) {
    case Builtin::kPid: case Builtin::kPpid: case Builtin::kTid: case Builtin::kEpid: case Builtin::kId:
    case Builtin::kUstackdepth: case Builtin::kDepth: case Builtin::kErrno: case Builtin::kCpu:
      return 4;
    default:
      return 8;
  }
}

std::string d_type_name(const Expr& e) {
  if (e.kind == ExprKind::kIdent && e.var == VarKind::kBuiltin) {
    switch (static_cast<Builtin>(e.slot)) {
      case Builtin::kPid: case Builtin::kPpid: return "pid_t";
      case Builtin::kTid: return "id_t";
      case Builtin::kEpid: case Builtin::kId: return "uint_t";
      default: break;
    }
  }
  if (e.kind == ExprKind::kCast) return e.name;
  if (!e.decl_type.empty()) return e.decl_type;
  if (e.type == Type::kString) return "string";
  if (!is_integer(e.type)) return "";
  const bool u = e.type == Type::kUint;
  switch (e.bytes) {
    case 1: return u ? "uint8_t" : "char";
    case 2: return u ? "uint16_t" : "short";
    case 4: return u ? "uint32_t" : "int";
    default: return u ? "uint64_t" : "int64_t";
  }
}

std::optional<std::string> refused_variable(const std::string& name) {
  static const char* kernel = ": callscope query sees the functions of a traced program, not the kernel's view of it";
  static const std::map<std::string, std::string> m = {
      {"uregs", "uregs is not available: callscope records no registers"},
      {"curthread", std::string("curthread is not available") + kernel},
      {"curpsinfo", "curpsinfo is a structure: read its members (curpsinfo->pr_psargs, docs/query.md)"},
      {"curlwpsinfo", "curlwpsinfo is a structure: read its members (curlwpsinfo->pr_state, docs/query.md)"},
      {"curcpu", std::string("curcpu is not available") + kernel},
      {"caller", "caller is a kernel address: use ucaller"},
      {"stackdepth", "stackdepth is the kernel stack's depth: use ustackdepth"},
      {"cwd", std::string("cwd is not available") + kernel},
      {"root", std::string("root is not available") + kernel},
      {"uid", std::string("uid is not available") + kernel},
      {"gid", std::string("gid is not available") + kernel},
      {"zonename", std::string("zonename is not available") + kernel},
      {"args", "args[] is not available: callscope records no function arguments yet (probefunc and probemod name "
               "the function); sched:::wakeup's and the io provider's are structures: read their members "
               "(args[0]->b_bcount, docs/query.md)"},
  };
  auto it = m.find(name);
  if (it != m.end()) return it->second;
  return std::nullopt;
}

namespace {

// Whether a probe description can name a pid (or fpid) probe: the provider
// pid..., fpid or a pattern that matches them, and a name that can be entry
// or return.
bool function_probe(const ProbeSpec& ps) {
  const auto matches = [](const std::string& pattern, const char* what) {
    return pattern.empty() || ::fnmatch(pattern.c_str(), what, 0) == 0;
  };
  const bool provider =
      ps.provider.rfind("pid", 0) == 0 || matches(ps.provider, "pid1") || matches(ps.provider, "fpid");
  return provider && (matches(ps.name, "entry") || matches(ps.name, "return"));
}

}  // namespace

std::optional<std::string> refused_at_probe(Builtin b, const std::string& name, const ProbeSpec& ps) {
  const std::string at =
      (ps.target ? std::string("pid$target") : ps.provider) + ":" + ps.module + ":" + ps.function + ":" + ps.name;
  // errno and cpu are known where the kernel's events fire, not between.
  if (b == Builtin::kErrno && ps.provider != "syscall")
    return "errno is not available at " + at + ": callscope knows a thread's errno at the syscall provider's "
           "probes only (record --events syscalls)";
  if (b == Builtin::kCpu && ps.provider != "sched")
    return "cpu is not available at " + at + ": callscope knows a thread's CPU at the sched provider's probes only";
  int n = -1;
  if (b == Builtin::kArg0) n = 0;
  else if (b == Builtin::kArg1) n = 1;
  else if (b >= Builtin::kArg2 && b <= Builtin::kArg9) n = 2 + (static_cast<int>(b) - static_cast<int>(Builtin::kArg2));
  if (n < 0 || !function_probe(ps)) return std::nullopt;
  const bool ret = ps.name == "return";
  const std::string what = ret ? (n == 0 ? "the return's offset in the function"
                                  : n == 1 ? "the function's return value"
                                           : "nothing (a return has two)")
                               : n == 0 ? "the function's first argument"
                               : n == 1 ? "its second argument"
                                        : "its argument " + std::to_string(n + 1);
  return name + " is not available at " + at + ": D's " + name + " there is " + what +
         ", and callscope records no function arguments or return values yet (probefunc and probemod name the "
         "function)";
}

std::optional<Func> find_function(const std::string& name) {
  auto it = functions().find(name);
  if (it == functions().end()) return std::nullopt;
  return it->second;
}

const FunctionSig& function_sig(Func f) {
  static const std::map<Func, FunctionSig> m = {
      {Func::kStrlen, {1, 1, Type::kUint, "s"}},       {Func::kStrjoin, {2, 2, Type::kString, "ss"}},
      {Func::kSubstr, {2, 3, Type::kString, "sii"}},   {Func::kStrstr, {2, 2, Type::kString, "ss"}},
      {Func::kStrchr, {2, 2, Type::kString, "si"}},    {Func::kStrrchr, {2, 2, Type::kString, "si"}},
      {Func::kIndex, {2, 3, Type::kInt, "ssi"}},       {Func::kRindex, {2, 3, Type::kInt, "ssi"}},
      {Func::kBasename, {1, 1, Type::kString, "s"}},   {Func::kDirname, {1, 1, Type::kString, "s"}},
      {Func::kLltostr, {1, 2, Type::kString, "ii"}},   {Func::kStrtoll, {1, 2, Type::kInt, "si"}},
      {Func::kToupper, {1, 1, Type::kString, "s"}},    {Func::kTolower, {1, 1, Type::kString, "s"}},
      {Func::kUstack, {0, 2, Type::kStack, "c"}},      {Func::kUfunc, {1, 1, Type::kSym, "i"}},
      {Func::kUmod, {1, 1, Type::kSym, "i"}},          {Func::kUsym, {1, 1, Type::kSym, "i"}},
      {Func::kSpeculation, {0, 0, Type::kInt, ""}},    {Func::kRand, {0, 0, Type::kInt, ""}},
      {Func::kStringof, {1, 1, Type::kString, "s"}},   {Func::kStrtok, {2, 2, Type::kString, "zs"}},
      {Func::kCleanpath, {1, 1, Type::kString, "s"}},  {Func::kSetopt, {1, 2, Type::kVoid, "ss"}},
      {Func::kPrintf, {1, SIZE_MAX, Type::kVoid, "sa"}}, {Func::kTrace, {1, 1, Type::kVoid, "a"}},
      {Func::kPrint, {1, 1, Type::kVoid, "a"}},        {Func::kPrinta, {1, SIZE_MAX, Type::kVoid, ""}},
      {Func::kExit, {1, 1, Type::kVoid, "i"}},         {Func::kSpeculate, {1, 1, Type::kVoid, "i"}},
      {Func::kCommit, {1, 1, Type::kVoid, "i"}},       {Func::kDiscard, {1, 1, Type::kVoid, "i"}},
      {Func::kTrunc, {1, 2, Type::kVoid, "i"}},        {Func::kClear, {1, 1, Type::kVoid, ""}},
      {Func::kNormalize, {2, 2, Type::kVoid, "i"}},    {Func::kDenormalize, {1, 1, Type::kVoid, ""}},
  };
  return m.at(f);
}

std::optional<std::string> refused_function(const std::string& name) {
  static const std::string memory = "( ) is not supported: callscope query reads a trace, not the program's memory";
  static const std::string destructive = "( ) is not supported: callscope query observes a program, it does not act on it";
  static const std::map<std::string, std::string> m = {
      {"copyin", memory}, {"copyinstr", memory}, {"copyinto", memory}, {"copyout", memory},
      {"copyoutstr", memory}, {"tracemem", memory}, {"alloca", memory}, {"bcopy", memory},
      {"stop", destructive}, {"system", destructive}, {"raise", destructive}, {"chill", destructive},
      {"breakpoint", destructive}, {"panic", destructive}, {"freopen", destructive}, {"ftruncate", destructive},
      {"stack", "( ) records the kernel's stack, which callscope does not see: use ustack( )"},
      {"jstack", "( ) is not supported: callscope sees native functions only; use ustack( )"},
      {"uaddr", "( ) is not supported: callscope records function entry addresses, not return addresses; use ufunc( )"},
      {"mod", "( ) is a kernel symbol: use umod( )"}, {"func", "( ) is a kernel symbol: use ufunc( )"},
      {"sym", "( ) is a kernel symbol: use usym( )"},
      {"getmajor", "( ) is a kernel function, not available in callscope query"},
      {"getminor", "( ) is a kernel function, not available in callscope query"},
      {"progenyof", "( ) is not supported: callscope query does not know the process tree"},
  };
  auto it = m.find(name);
  if (it == m.end()) return std::nullopt;
  return name + it->second;
}

}  // namespace callscope::query
