// D's options (options.h).
#include "query/options.h"

#include <cstdlib>
#include <set>

#include "query/compile.h"

namespace callscope::query {
namespace {

// Options dtrace takes that mean something here, and those accepted and
// ignored because callscope has no buffers or CPUs to size them for.
const std::set<std::string>& known_options() {
  static const std::set<std::string> s = {
      "quiet", "aggsortkey", "aggsortrev", "aggsortpos", "aggsortkeypos", "defaultargs", "nspec", "strsize",
      "specsize", "bufsize", "aggsize", "aggrate", "switchrate", "cleanrate", "dynvarsize", "statusrate",
      "bufpolicy", "bufresize", "zdefs", "destructive", "stackframes", "ustackframes", "rawbytes", "cpu",
      "flowindent", "stackindent", "aggpercpu", "aggzoom", "grabanon", "jstackframes", "jstackstrsize", "nolibs",
      "strip", "version", "dynvarrate"};
  return s;
}

// Whether option `name` exists here; dtrace's words otherwise, after
// `what` ("failed to set option NAME").
Status option_exists(const std::string& name, const std::string& what) {
  if (name == "aggpack" || name == "agghist")
    return Error(what + ": callscope query does not draw aggregations " + (name == "aggpack" ? "packed" : "as histograms") +
                 " yet: without it, dtrace's default layout");
  if (!known_options().count(name)) return Error(what + ": Invalid option name");
  return ok_status();
}

Status set_option(CompiledProgram& p, const std::string& name, const std::string& value) {
  CALLSCOPE_CHECK(option_exists(name, "failed to set option " + name));
  p.options_[name] = value;
  return ok_status();
}

}  // namespace

Status check_setopt(const std::string& name) {
  // (dtrace's static options: they size what the script is compiled into)
  static const std::set<std::string> fixed = {"nspec", "strsize", "specsize", "bufsize", "aggsize", "dynvarsize",
                                               "bufpolicy", "bufresize", "zdefs", "destructive", "defaultargs",
                                               "cpu", "grabanon", "nolibs", "version", "stackframes",
                                               "ustackframes", "jstackframes", "jstackstrsize", "strip"};
  CALLSCOPE_CHECK(option_exists(name, "setopt( ) of option " + name));
  if (fixed.count(name))
    return Error("setopt( ) cannot set option " + name +
                 " while the script runs: set it before, with #pragma D option or -x");
  return ok_status();
}

bool option_set(const std::map<std::string, std::string>& options, const std::string& name) {
  auto it = options.find(name);
  return it != options.end() && it->second != "0" && it->second != "false" && it->second != "no";
}

Status read_options(CompiledProgram& p, const std::vector<Lexer::Pragma>& pragmas,
                    const std::map<std::string, std::string>& command_line, const std::string& what) {
  for (const auto& pr : pragmas) {
    auto st = set_option(p, pr.name, pr.value);
    if (!st) return Error("line " + std::to_string(pr.line) + ": " + st.error().message()).context(what);
  }
  for (const auto& [k, v] : command_line) {  // the command line wins
    auto st = set_option(p, k, v);
    if (!st) return st.error();
  }
  p.quiet = option_set(p.options_, "quiet");
  auto number = [&](const char* name, int64_t lo, int64_t hi, int64_t& out) -> Status {
    auto it = p.options_.find(name);
    if (it == p.options_.end()) return ok_status();
    char* end = nullptr;
    const long long v = std::strtoll(it->second.c_str(), &end, 0);
    if (it->second.empty() || *end != '\0' || v < lo || v > hi)
      return Error("failed to set option " + std::string(name) + " to \"" + it->second + "\": Invalid value for specified option");
    out = v;
    return ok_status();
  };
  int64_t nspec = 1, strsize = 256, pos = 0;
  CALLSCOPE_CHECK(number("aggsortpos", 0, INT32_MAX, pos));
  CALLSCOPE_CHECK(number("aggsortkeypos", 0, INT32_MAX, pos));
  CALLSCOPE_CHECK(number("nspec", 1, 1 << 16, nspec));
  CALLSCOPE_CHECK(number("strsize", 2, 1 << 20, strsize));
  p.nspec = static_cast<int>(nspec);
  p.strsize = static_cast<size_t>(strsize);
  return ok_status();
}

}  // namespace callscope::query
