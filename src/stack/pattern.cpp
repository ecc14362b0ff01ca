// Module-qualified function patterns and the user edges file.
#include "stack/pattern.h"

#include "common/glob.h"

namespace callscope::stack {
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

namespace {

bool looks_like_module(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c == ':' || c == '(' || c == '<' || c == ' ' || c == '!' || c == ',') return false;
  }
  return s != "operator";
}

}  // namespace

bool FunctionPattern::matches(std::string_view module_name, std::string_view function_name) const {
  if (!module.empty() && !glob_match(module, module_name)) {
    // "libfoo.so" also selects "libfoo.so.1.2".
    const size_t so = module_name.find(".so.");
    if (so == std::string_view::npos || !glob_match(module, module_name.substr(0, so + 3))) {
      return false;
    }
  }
  // An exact name matches even when it holds glob characters: C++ names
  // such as "f[abi:cxx11]()" are not meant as character classes.
  return function == function_name || glob_match(function, function_name);
}

FunctionPattern parse_pattern(std::string_view text) {
  text = trim(text);
  const size_t bang = text.find('!');
  if (bang != std::string_view::npos && bang + 1 < text.size() &&
      looks_like_module(text.substr(0, bang))) {
    return {std::string(text.substr(0, bang)), std::string(text.substr(bang + 1))};
  }
  return {"", std::string(text)};
}

std::string module_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

Result<std::vector<UserEdge>> parse_user_edges(std::string_view text, const std::string& source) {
  std::vector<UserEdge> edges;
  int line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    const size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    // " -> " with spaces, so that "operator->" in a C++ name is not a split.
    size_t arrow = line.find(" -> ");
    size_t arrow_len = 4;
    if (arrow == std::string_view::npos) {
      arrow = line.find("->");
      arrow_len = 2;
      if (arrow != std::string_view::npos && line.find("->", arrow + 2) != std::string_view::npos) {
        arrow = std::string_view::npos;  // ambiguous without spaces
      }
    }
    const std::string where = source + ":" + std::to_string(line_no);
    if (arrow == std::string_view::npos) {
      return Error(where + ": expected 'caller -> callee', got '" + std::string(line) + "'");
    }
    const std::string_view caller = trim(line.substr(0, arrow));
    const std::string_view callee = trim(line.substr(arrow + arrow_len));
    if (caller.empty() || callee.empty()) {
      return Error(where + ": expected 'caller -> callee', got '" + std::string(line) + "'");
    }
    if (callee == "?") {
      return Error(where + ": replace '?' by the function called from '" + std::string(caller) +
                   "' (lines from --unresolved are a template)");
    }
    edges.push_back({parse_pattern(caller), parse_pattern(callee), line_no});
  }
  return edges;
}

}  // namespace callscope::stack
